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
        }
    }

    /// Whether a job that ended with this PBS exit status meets it.
    pub fn met_by(self, exit_status: i32) -> bool {
        match self {
            DependKind::After => true,
            DependKind::AfterOk => exit_status == 0,
            DependKind::AfterAny => true,
            DependKind::AfterNotOk => exit_status != 0,
        }
    }
    /// The `before` form of this kind (`beforeok` for `afterok`).
    pub fn before_str(self) -> &'static str {
        match self {
            DependKind::After => "before",
            DependKind::AfterOk => "beforeok",
            DependKind::AfterAny => "beforeany",
            DependKind::AfterNotOk => "beforenotok",
        }
    }
}

/// One job waited for, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Dependency {
    pub kind: DependKind,
    pub job: JobId,
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
}

/// Reads `afterok:12[:13...][,afterany:14...][,afternotok:15...]` (a leading
/// `depend=` is allowed). Ids are `12` or `12.server`. Empty text: none.
/// A repeated dependency is kept once.
pub fn parse(text: &str, server: &str) -> Result<Vec<Dependency>, CoreError> {
    Ok(parse_text(text, server)?.after)
}

/// Reads every PBS dependency type: `after`, `afterok`, `afternotok`,
/// `afterany`, their `before` forms and `on:N`.
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
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(bad(text, "it has an empty entry between commas"));
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
        if matches!(kind_word.as_str(), "synccount" | "syncwith") {
            return Err(bad(
                &kind_word,
                "(Torque) is not supported: qmesh starts a job when its nodes are free; after:ID starts one once another has started",
            ));
        }
        let before = kind_word.starts_with("before");
        let kind = DependKind::ALL
            .into_iter()
            .find(|k| k.as_str() == kind_word || k.before_str() == kind_word)
            .ok_or_else(|| {
                bad(
                    &kind_word,
                    "is not a dependency type we know (after, afterok, afterany, afternotok, their before forms, on)",
                )
            })?;
        let out = if before {
            &mut parsed.before
        } else {
            &mut parsed.after
        };
        let mut named = 0;
        for word in words {
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
            let dep = Dependency { kind, job: id };
            if !out.contains(&dep) {
                out.push(dep);
            }
            named += 1;
        }
        if named == 0 {
            return Err(bad(item, "names no job"));
        }
    }
    Ok(parsed)
}

/// The `-W depend=` form with full ids, kinds in first-use order:
/// `afterok:12.srv:13.srv,afterany:14.srv`.
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
                part.push_str(&dep.job.full(server));
            }
            part
        })
        .collect::<Vec<_>>()
        .join(",")
}
