//! Job dependencies (`qsub -W depend=afterok:12`) and start-after times
//! (`qsub -a`): what keeps an otherwise ready job from starting.
//!
//! A dependency names a job and how it must end: `afterok` (exit status 0),
//! `afternotok` (anything else, deletion included) or `afterany`. While a
//! named job has not ended, the dependent waits (reason `Dependency`). When
//! it ends so that the dependency can never be met, PBS deletes the
//! dependent, and so do we, down the chain (`State::resolve_dependents`, in
//! `state/depend.rs`, with the rest of what the state does with them).
//! A named job that has left the history was necessarily met: had it not
//! been, its dependents would have been deleted when it ended.
//!
//! Slurm's forms are read here too, so that one job's dependencies read the
//! same from both dialects: `?` between items (any of them, not all),
//! `after:ID+MINUTES` (so long after the named job started), `aftercorr`
//! (each sub-job of an array after the same sub-job of another ended well)
//! and `singleton` (after every other job of the same owner and name).

use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::ids::JobId;

/// How the named job must end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DependKind {
    /// It has started (`after`).
    After,
    /// It ended with exit status 0.
    AfterOk,
    /// It ended, however.
    AfterAny,
    /// It ended with a non-zero status, was killed or deleted.
    AfterNotOk,
    /// Slurm's `aftercorr`: each sub-job of this array after the sub-job
    /// of the named array with the same index ended with status 0; for a
    /// job that is not an array, `afterok`.
    AfterCorr,
}

impl DependKind {
    pub const ALL: [DependKind; 4] = [
        DependKind::After,
        DependKind::AfterOk,
        DependKind::AfterAny,
        DependKind::AfterNotOk,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DependKind::After => "after",
            DependKind::AfterOk => "afterok",
            DependKind::AfterAny => "afterany",
            DependKind::AfterNotOk => "afternotok",
            DependKind::AfterCorr => "aftercorr",
        }
    }

    /// The kind a word names (`afterok`, `aftercorr`...), and whether it is
    /// a `before` form.
    fn from_word(word: &str) -> Option<(DependKind, bool)> {
        if word == DependKind::AfterCorr.as_str() {
            return Some((DependKind::AfterCorr, false));
        }
        DependKind::ALL.into_iter().find_map(|k| {
            if k.as_str() == word {
                Some((k, false))
            } else if k.before_str() == word {
                Some((k, true))
            } else {
                None
            }
        })
    }

    /// Whether a job that ended with this PBS exit status meets it.
    pub fn met_by(self, exit_status: i32) -> bool {
        match self {
            DependKind::After => true,
            DependKind::AfterOk | DependKind::AfterCorr => exit_status == 0,
            DependKind::AfterAny => true,
            DependKind::AfterNotOk => exit_status != 0,
        }
    }
    /// The `before` form of this kind (`beforeok` for `afterok`); `aftercorr`
    /// has none.
    pub fn before_str(self) -> &'static str {
        match self {
            DependKind::After => "before",
            DependKind::AfterOk => "beforeok",
            DependKind::AfterAny => "beforeany",
            DependKind::AfterNotOk => "beforenotok",
            DependKind::AfterCorr => "",
        }
    }
}

/// One job waited for, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Dependency {
    pub kind: DependKind,
    pub job: JobId,
    /// Minutes to wait past the named job's start (Slurm's
    /// `after:ID+MINUTES`); only with `after`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_minutes: u32,
    /// The named job is an array: written `12[].srv`, as PBS Pro does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub array: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Dependency {
    pub fn new(kind: DependKind, job: JobId) -> Dependency {
        Dependency {
            kind,
            job,
            delay_minutes: 0,
            array: false,
        }
    }
}

/// How a job's dependencies combine, beyond the jobs they name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DependHow {
    /// Any one met dependency lets it start (Slurm's `?`); otherwise all
    /// must be.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub any: bool,
    /// Slurm's `singleton`: it waits while another job of its owner with
    /// its name runs, or waits and was submitted before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub singleton: bool,
}

impl DependHow {
    pub fn is_plain(&self) -> bool {
        !self.any && !self.singleton
    }
}

/// All that `-W depend=` says: the jobs this one waits for (`after*`),
/// the jobs that are to wait for it (`before*`, each kept as the `after*`
/// dependency the named job gains), and how many such `before*` jobs it
/// waits to be named by (`on:N`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DependText {
    pub after: Vec<Dependency>,
    pub before: Vec<Dependency>,
    pub on: u32,
    pub how: DependHow,
}

/// Reads `afterok:12[:13...][,afterany:14...][,afternotok:15...]` (a leading
/// `depend=` is allowed). Ids are `12` or `12.server`. Empty text: none.
/// A repeated dependency is kept once.
pub fn parse(text: &str, server: &str) -> Result<Vec<Dependency>, CoreError> {
    Ok(parse_text(text, server)?.after)
}

/// Reads every PBS dependency type: `after`, `afterok`, `afternotok`,
/// `afterany`, their `before` forms and `on:N`; and Slurm's: items joined
/// by `?` (any of them), `after:ID+MINUTES`, `aftercorr:ID`, `singleton`.
pub fn parse_text(text: &str, server: &str) -> Result<DependText, CoreError> {
    let text = text.trim();
    let text = text.strip_prefix("depend=").unwrap_or(text);
    let mut parsed = DependText::default();
    if text.is_empty() {
        return Ok(parsed);
    }
    let bad = |word: &str, why: &str| CoreError::BadDependency {
        word: word.to_string(),
        why: why.to_string(),
    };
    let separator = if text.contains('?') {
        if text.contains(',') {
            return Err(bad(
                text,
                "joins items with both , (all of) and ? (any of); use one of them",
            ));
        }
        parsed.how.any = true;
        '?'
    } else {
        ','
    };
    for item in text.split(separator) {
        let item = item.trim();
        if item.is_empty() {
            return Err(bad(text, "it has an empty entry between separators"));
        }
        let mut words = item.split(':');
        let kind_word = words.next().unwrap_or_default().to_ascii_lowercase();
        if kind_word == "on" {
            let count = words.next().unwrap_or_default();
            parsed.on = match count.trim().parse::<u32>() {
                Ok(n) if words.next().is_none() => n,
                _ => return Err(bad(item, "on takes one count of jobs, e.g. on:2")),
            };
            continue;
        }
        if kind_word == "singleton" {
            if words.next().is_some() {
                return Err(bad(item, "singleton names no job"));
            }
            parsed.how.singleton = true;
            continue;
        }
        if matches!(kind_word.as_str(), "synccount" | "syncwith") {
            return Err(bad(
                &kind_word,
                "(Torque) is not supported: qmesh starts a job when its nodes are free; after:ID starts one once another has started",
            ));
        }
        let (kind, before) = DependKind::from_word(&kind_word).ok_or_else(|| {
            bad(
                &kind_word,
                "is not a dependency type we know (after, afterok, afterany, afternotok, \
                 aftercorr, their before forms, on, singleton)",
            )
        })?;
        let out = if before {
            &mut parsed.before
        } else {
            &mut parsed.after
        };
        let mut named = 0;
        for word in words {
            let (word, delay_minutes) = split_delay(word, kind).map_err(|why| bad(word, &why))?;
            let parsed_id = crate::array::Named::parse(word, server).map_err(|e| match e {
                CoreError::NoSuchJob { .. } => bad(word, "names a job of another server"),
                _ => bad(
                    word,
                    "is not a job id (SEQ, SEQ.SERVER or an array's SEQ[])",
                ),
            })?;
            // As PBS Pro: on a whole array, not on its sub-jobs.
            let id = match parsed_id {
                crate::array::Named::One(id) if id.array_parent().is_none() => id,
                _ => {
                    return Err(bad(
                        word,
                        "names sub-jobs of an array; depend on the whole array (SEQ[]), \
                         which is met when all its sub-jobs have ended",
                    ));
                }
            };
            let dep = Dependency {
                delay_minutes,
                ..Dependency::new(kind, id)
            };
            if !out.contains(&dep) {
                out.push(dep);
            }
            named += 1;
        }
        if named == 0 {
            return Err(bad(item, "names no job"));
        }
    }
    if parsed.how.any && (!parsed.before.is_empty() || parsed.on > 0 || parsed.how.singleton) {
        return Err(bad(
            text,
            "joins before, on or singleton with ? (any of); ? only joins after-type dependencies",
        ));
    }
    Ok(parsed)
}

/// `12+5` as the id and the minutes after its start (`after` only).
fn split_delay(word: &str, kind: DependKind) -> Result<(&str, u32), String> {
    let Some((id, minutes)) = word.split_once('+') else {
        return Ok((word, 0));
    };
    if kind != DependKind::After {
        return Err(format!(
            "a delay (+MINUTES) goes only with after; {} takes none",
            kind.as_str()
        ));
    }
    match minutes.trim().parse::<u32>() {
        Ok(m) => Ok((id, m)),
        Err(_) => Err("the delay after + is a whole number of minutes, e.g. after:12+10".into()),
    }
}

/// The `-W depend=` form with full ids, kinds in first-use order:
/// `afterok:12.srv:13.srv,afterany:14.srv`; an `after` delay as `+MINUTES`.
pub fn format(deps: &[Dependency], server: &str) -> String {
    let mut kinds: Vec<DependKind> = Vec::new();
    for dep in deps {
        if !kinds.contains(&dep.kind) {
            kinds.push(dep.kind);
        }
    }
    kinds
        .iter()
        .map(|kind| {
            let mut part = kind.as_str().to_string();
            for dep in deps.iter().filter(|d| d.kind == *kind) {
                part.push(':');
                part.push_str(&one_job(dep, server));
            }
            part
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// [`format`] for dependencies any one of which will do: each its own
/// item, joined by `?` (`afterok:12.srv?afternotok:13.srv`).
pub fn format_any(deps: &[Dependency], server: &str) -> String {
    deps.iter()
        .map(|dep| format!("{}:{}", dep.kind.as_str(), one_job(dep, server)))
        .collect::<Vec<_>>()
        .join("?")
}

fn one_job(dep: &Dependency, server: &str) -> String {
    let id = if dep.array {
        format!("{}[].{server}", dep.job)
    } else {
        dep.job.full(server)
    };
    if dep.delay_minutes > 0 {
        format!("{id}+{}", dep.delay_minutes)
    } else {
        id
    }
}
