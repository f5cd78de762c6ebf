//! PBS's limits on how many jobs a queue or the server holds and runs, in
//! both styles admin guides write them:
//!
//! - old (PBS Pro and Torque): `max_running`, `max_user_run`,
//!   `max_group_run`, `max_queuable`, `max_user_queuable`;
//! - new (PBS Pro): `max_run` and `max_queued`, each a list of entries
//!   `[o:PBS_ALL=100]` (all jobs), `[u:PBS_GENERIC=5]` (each user),
//!   `[u:alice=10]` (one user, in place of the generic figure), and the
//!   same for groups (`g:`) and projects (`p:`).
//!
//! A run limit holds jobs back in the scheduler (reasons UserLimit,
//! GroupLimit, QueueLimit); a queued limit refuses a submission or a move
//! at once. "Queued" counts, as in PBS, every job not finished: queued,
//! held, waiting, running. Groups are Unix groups (the job's owner's
//! group); both styles may be set together, and every limit that applies
//! is enforced. The counters are kept by [`crate::account::Tally`]
//! (`limits/count.rs`); the checks, which need the state, are in `state/limits.rs`.

mod count;

pub use count::{EntityCounts, RunCounts};

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::job::Job;

/// Who an entry of a new-style limit counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Entity {
    /// `o:PBS_ALL`: every job.
    Overall,
    User,
    Group,
    Project,
}

impl Entity {
    fn letter(self) -> char {
        match self {
            Entity::Overall => 'o',
            Entity::User => 'u',
            Entity::Group => 'g',
            Entity::Project => 'p',
        }
    }

    /// "user", "group", "project", for messages.
    pub fn word(self) -> &'static str {
        match self {
            Entity::Overall => "all",
            Entity::User => "user",
            Entity::Group => "group",
            Entity::Project => "project",
        }
    }

    fn of(letter: &str) -> Option<Entity> {
        match letter {
            "o" => Some(Entity::Overall),
            "u" => Some(Entity::User),
            "g" => Some(Entity::Group),
            "p" => Some(Entity::Project),
            _ => None,
        }
    }
}

/// `PBS_GENERIC`: the figure for each user (group, project) not named.
pub const GENERIC: &str = "PBS_GENERIC";
/// `PBS_ALL`: the overall entry's only name.
pub const ALL: &str = "PBS_ALL";

/// A new-style limit (`max_run`, `max_queued`): entries by entity and
/// name. Kept as text keys (`u:alice`) so that the stored form reads as
/// PBS writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LimitSet(BTreeMap<String, u32>);

impl LimitSet {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Reads `[u:PBS_GENERIC=5],[u:alice=10]` (spaces and a missing outer
    /// comma between brackets are forgiven). `attr` names the attribute in
    /// messages.
    pub fn parse(attr: &str, text: &str) -> Result<LimitSet, String> {
        let text = text.trim();
        let example = format!(
            "write e.g. {attr} = \"[u:PBS_GENERIC=5]\" (5 per user), \"[u:alice=10]\", \
             \"[g:staff=20]\", \"[o:PBS_ALL=100]\" (all jobs), several separated by commas"
        );
        if text.is_empty() {
            return Err(format!("{attr} is empty; {example}"));
        }
        if !text.starts_with('[') {
            return Err(format!(
                "\"{text}\" is not a limit for {attr}: PBS writes these limits per entity in \
                 brackets; {example} (or the old style: max_running, max_user_run, max_queuable)"
            ));
        }
        let mut set = LimitSet::default();
        let mut rest = text;
        while !rest.is_empty() {
            let inner_start = rest
                .strip_prefix('[')
                .ok_or_else(|| format!("{attr}: expected '[' at \"{rest}\"; {example}"))?;
            let (entry, after) = inner_start
                .split_once(']')
                .ok_or_else(|| format!("{attr}: the bracket in \"{rest}\" is never closed"))?;
            let (key, max) = parse_entry(attr, entry.trim(), &example)?;
            set.0.insert(key, max);
            rest = after.trim_start().trim_start_matches(',').trim_start();
        }
        Ok(set)
    }

    /// `+=`: adds or replaces entries.
    pub fn add(&mut self, other: LimitSet) {
        self.0.extend(other.0);
    }

    /// `-=`: removes the entries named (their figures are not compared).
    pub fn remove(&mut self, attr: &str, other: &LimitSet) -> Result<(), String> {
        for key in other.0.keys() {
            if self.0.remove(key).is_none() {
                return Err(format!("{attr} has no entry [{key}=...]"));
            }
        }
        Ok(())
    }

    /// The figure for an entity: its own entry, else the generic one.
    /// `name` is ignored for [`Entity::Overall`].
    pub fn limit_for(&self, entity: Entity, name: &str) -> Option<(u32, String)> {
        if entity == Entity::Overall {
            let key = format!("o:{ALL}");
            return self.0.get(&key).map(|&m| (m, key));
        }
        let own = format!("{}:{name}", entity.letter());
        if let Some(&max) = self.0.get(&own) {
            return Some((max, own));
        }
        let generic = format!("{}:{GENERIC}", entity.letter());
        self.0.get(&generic).map(|&m| (m, generic))
    }

    /// Whether any entry counts this kind of entity.
    pub fn counts(&self, entity: Entity) -> bool {
        let prefix = format!("{}:", entity.letter());
        self.0.keys().any(|k| k.starts_with(&prefix))
    }
}

fn parse_entry(attr: &str, entry: &str, example: &str) -> Result<(String, u32), String> {
    let bad = |why: String| format!("{attr}: bad entry [{entry}]: {why}; {example}");
    let (who, max) = entry
        .split_once('=')
        .ok_or_else(|| bad("it has no \"=N\"".into()))?;
    let (letter, name) = who
        .split_once(':')
        .ok_or_else(|| bad("write ENTITY:NAME before the '='".into()))?;
    let (letter, name) = (letter.trim(), name.trim());
    let entity =
        Entity::of(letter).ok_or_else(|| bad(format!("\"{letter}\" is not o, u, g or p")))?;
    if entity == Entity::Overall && name != ALL {
        return Err(bad(format!("the overall entry is o:{ALL}, not o:{name}")));
    }
    if entity != Entity::Overall && name == ALL {
        return Err(bad(format!(
            "{ALL} goes with o:; for each {} write {letter}:{GENERIC}",
            entity.word()
        )));
    }
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(bad(format!("\"{name}\" is not a name")));
    }
    let max: u32 = max
        .trim()
        .parse()
        .map_err(|_| bad(format!("\"{}\" is not a whole number", max.trim())))?;
    Ok((format!("{}:{name}", entity.letter()), max))
}

impl fmt::Display for LimitSet {
    /// PBS's form: overall, then users, groups and projects, the generic
    /// entry before the named ones.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut keys: Vec<&String> = self.0.keys().collect();
        keys.sort_by_key(|k| {
            let (letter, name) = k.split_once(':').unwrap_or((k.as_str(), ""));
            let rank = Entity::of(letter).map_or(9, |e| e as u8);
            (rank, name != GENERIC && name != ALL, name.to_string())
        });
        let entries: Vec<String> = keys
            .iter()
            .map(|k| format!("[{k}={}]", self.0[*k]))
            .collect();
        f.write_str(&entries.join(","))
    }
}

/// The job-count limits of a queue or of the server. On the server,
/// `max_user_run` and `max_group_run` are [`crate::ServerAttrs`]' own
/// fields (the latter counts accounts, EPCC's groups), so only the rest
/// of this is used there.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobLimits {
    /// New style: running jobs per entity.
    #[serde(skip_serializing_if = "LimitSet::is_empty")]
    pub max_run: LimitSet,
    /// New style: jobs not finished per entity.
    #[serde(skip_serializing_if = "LimitSet::is_empty")]
    pub max_queued: LimitSet,
    /// Old style: running jobs in all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_running: Option<u32>,
    /// Old style: running jobs per user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_user_run: Option<u32>,
    /// Old style: running jobs per Unix group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_group_run: Option<u32>,
    /// Old style (`max_queuable`): jobs not finished in all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_queuable: Option<u32>,
    /// Old style (Torque's `max_user_queuable`): jobs not finished per user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_user_queuable: Option<u32>,
}

/// One limit that applies to a job: what it counts, the figure, and how
/// the admin wrote it (`max_user_run = 2`, `max_run [u:PBS_GENERIC=2]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applies {
    pub entity: Entity,
    /// The user, group or project counted; empty for [`Entity::Overall`].
    pub name: String,
    pub max: u32,
    pub written: String,
}

impl JobLimits {
    pub fn is_empty(&self) -> bool {
        *self == JobLimits::default()
    }

    /// Whether any limit on running jobs is set.
    pub fn limits_running(&self) -> bool {
        !self.max_run.is_empty()
            || self.max_running.is_some()
            || self.max_user_run.is_some()
            || self.max_group_run.is_some()
    }

    /// Whether any limit on jobs held (queued or running) is set.
    pub fn limits_queued(&self) -> bool {
        !self.max_queued.is_empty()
            || self.max_queuable.is_some()
            || self.max_user_queuable.is_some()
    }

    /// The run limits that apply to `job`, tightest first for each entity.
    pub fn run_limits_for(&self, job: &Job) -> Vec<Applies> {
        let old = [
            (Entity::Overall, self.max_running, "max_running"),
            (Entity::User, self.max_user_run, "max_user_run"),
            (Entity::Group, self.max_group_run, "max_group_run"),
        ];
        applies(job, &old, &self.max_run, "max_run")
    }

    /// The queued limits that apply to `job`.
    pub fn queued_limits_for(&self, job: &Job) -> Vec<Applies> {
        let old = [
            (Entity::Overall, self.max_queuable, "max_queuable"),
            (Entity::User, self.max_user_queuable, "max_user_queuable"),
        ];
        applies(job, &old, &self.max_queued, "max_queued")
    }
}

/// The name a job is counted under for an entity.
pub fn entity_name(job: &Job, entity: Entity) -> Option<&str> {
    match entity {
        Entity::Overall => Some(""),
        Entity::User => Some(job.owner.user.as_str()),
        Entity::Group => Some(job.owner.group.as_str()),
        Entity::Project => project_of(job),
    }
}

/// The project a job charges (`qsub -P`): what `[p:...]` limits count.
pub fn project_of(job: &Job) -> Option<&str> {
    job.project.as_deref()
}

fn applies(
    job: &Job,
    old: &[(Entity, Option<u32>, &str)],
    new: &LimitSet,
    new_name: &str,
) -> Vec<Applies> {
    let mut out = Vec::new();
    for &(entity, max, attr) in old {
        if let (Some(max), Some(name)) = (max, entity_name(job, entity)) {
            out.push(Applies {
                entity,
                name: name.to_string(),
                max,
                written: format!("{attr} = {max}"),
            });
        }
    }
    if !new.is_empty() {
        for entity in [
            Entity::User,
            Entity::Group,
            Entity::Project,
            Entity::Overall,
        ] {
            let Some(name) = entity_name(job, entity) else {
                continue;
            };
            if let Some((max, key)) = new.limit_for(entity, name) {
                out.push(Applies {
                    entity,
                    name: name.to_string(),
                    max,
                    written: format!("{new_name} [{key}={max}]"),
                });
            }
        }
    }
    // A user's own limit first: it is what they can act on.
    out.sort_by_key(|a| match a.entity {
        Entity::User => 0,
        Entity::Group => 1,
        Entity::Project => 2,
        Entity::Overall => 3,
    });
    out
}

#[cfg(test)]
mod tests;
