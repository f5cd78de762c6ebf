//! Counters for the job-count limits: per scope (the server, each queue)
//! and per entity (all, each user, group, project), how many jobs are not
//! finished ([`EntityCounts`], kept by the state as jobs come and go, so a
//! submission's check is a few lookups), and how many run
//! ([`RunCounts`], made by each scheduling pass that has run limits,
//! counting the jobs it starts as it goes).

use rustc_hash::FxHashMap as HashMap;

use super::{Entity, entity_name};
use crate::job::Job;

/// Per entity kind, per name, a count. `Overall` has the one name "".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Scope {
    by: HashMap<Entity, HashMap<String, u32>>,
}

impl Scope {
    fn get(&self, entity: Entity, name: &str) -> u32 {
        self.by
            .get(&entity)
            .and_then(|names| names.get(name))
            .copied()
            .unwrap_or(0)
    }

    fn bump(&mut self, job: &Job, enter: bool) {
        for entity in [
            Entity::Overall,
            Entity::User,
            Entity::Group,
            Entity::Project,
        ] {
            let Some(name) = entity_name(job, entity) else {
                continue;
            };
            let names = self.by.entry(entity).or_default();
            match names.get_mut(name) {
                Some(n) if enter => *n += 1,
                Some(n) => {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        names.remove(name);
                    }
                }
                None if enter => {
                    names.insert(name.to_string(), 1);
                }
                None => {}
            }
            if names.is_empty() {
                self.by.remove(&entity);
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.by.is_empty()
    }
}

/// A count per scope (the server, each queue), entity and name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunCounts {
    server: Scope,
    queues: HashMap<String, Scope>,
}

impl RunCounts {
    fn change(&mut self, job: &Job, enter: bool) {
        self.server.bump(job, enter);
        let scope = match self.queues.get_mut(job.queue.as_str()) {
            Some(scope) => scope,
            None if enter => self.queues.entry(job.queue.clone()).or_default(),
            None => return,
        };
        scope.bump(job, enter);
        if scope.is_empty() {
            self.queues.remove(job.queue.as_str());
        }
    }

    /// Counts a running job (or one a pass starts).
    pub fn add(&mut self, job: &Job) {
        self.change(job, true);
    }

    /// The count of `name` (a user, group or project; "" for all) in
    /// `queue`, or on the server when `queue` is `None`.
    pub fn running(&self, queue: Option<&str>, entity: Entity, name: &str) -> u32 {
        match queue {
            None => self.server.get(entity, name),
            Some(q) => self.queues.get(q).map_or(0, |s| s.get(entity, name)),
        }
    }
}

/// What the state keeps, per scope and entity: jobs not finished
/// (queued, held, waiting, running, exiting: what `max_queued` and
/// `max_queuable` count), and jobs running (what qstat's comment quotes
/// for a run limit).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntityCounts {
    jobs: RunCounts,
    running: RunCounts,
}

impl EntityCounts {
    /// A job joins (`enter`) or leaves the pending (`active` false) or the
    /// active jobs, in its queue.
    pub(crate) fn change(&mut self, job: &Job, enter: bool, active: bool) {
        self.jobs.change(job, enter);
        if active {
            self.running.change(job, enter);
        }
    }

    /// Jobs not finished of `name` in `queue` (or on the server).
    pub fn jobs(&self, queue: Option<&str>, entity: Entity, name: &str) -> u32 {
        self.jobs.running(queue, entity, name)
    }

    /// Jobs running of `name` in `queue` (or on the server).
    pub fn running(&self) -> &RunCounts {
        &self.running
    }
}
