//! Counters of what queued and running jobs ask for, per user and per
//! group, so the limits and the allocation check at submit cost a lookup
//! (qsub takes thousands of jobs a second) and never a scan of the queue.
//!
//! [`State`](crate::state::State) updates them wherever a job enters or
//! leaves the pending or the active set; `check_invariants` recounts them.

use rustc_hash::FxHashMap as HashMap;

use super::group_of;
use crate::job::Job;
use crate::limits::EntityCounts;

/// What a job asks for: nodes × wall time, in node-seconds.
pub fn node_seconds(job: &Job) -> u64 {
    // Saturating: a wall time parse_duration accepted (up to u64's end)
    // times the nodes overflowed the tally (a panic in debug builds).
    u64::from(job.nodes).saturating_mul(job.walltime)
}

/// One user's or group's jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    /// Pending jobs (queued, held, waiting).
    pub queued: u32,
    pub queued_node_secs: u64,
    /// Running and exiting jobs.
    pub running: u32,
    pub running_node_secs: u64,
}

impl Count {
    fn is_zero(&self) -> bool {
        *self == Count::default()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    users: HashMap<String, Count>,
    groups: HashMap<String, Count>,
    /// Jobs not finished per queue and per user, Unix group and project,
    /// for PBS's queued limits (`max_queued`, `max_queuable`). Kept only
    /// while some such limit is set (`counting_entities`): they cost two
    /// scopes of four hashed names at every step of every job, a third of
    /// a trace replay, and a site without PBS limits never reads them.
    pub(crate) entities: EntityCounts,
    pub(crate) counting_entities: bool,
}

#[derive(Clone, Copy)]
enum Set {
    Pending,
    Active,
}

impl Tally {
    pub fn user(&self, user: &str) -> Count {
        self.users.get(user).copied().unwrap_or_default()
    }

    pub fn group(&self, group: &str) -> Count {
        self.groups.get(group).copied().unwrap_or_default()
    }

    pub(crate) fn enter_pending(&mut self, job: &Job) {
        self.change(job, Set::Pending, true);
    }

    pub(crate) fn leave_pending(&mut self, job: &Job) {
        self.change(job, Set::Pending, false);
    }

    pub(crate) fn enter_active(&mut self, job: &Job) {
        self.change(job, Set::Active, true);
    }

    pub(crate) fn leave_active(&mut self, job: &Job) {
        self.change(job, Set::Active, false);
    }

    fn change(&mut self, job: &Job, set: Set, enter: bool) {
        let secs = node_seconds(job);
        bump(&mut self.users, &job.owner.user, set, enter, secs);
        if let Some(account) = &job.account {
            bump(&mut self.groups, group_of(account), set, enter, secs);
        }
        if self.counting_entities {
            self.entities.change(job, enter, matches!(set, Set::Active));
        }
    }

    /// Starts or stops keeping the per-queue counters; started, they are
    /// made from the jobs not finished.
    pub(crate) fn count_entities<'a>(
        &mut self,
        on: bool,
        pending: impl Iterator<Item = &'a Job>,
        active: impl Iterator<Item = &'a Job>,
    ) {
        if on == self.counting_entities {
            return;
        }
        self.counting_entities = on;
        self.entities = EntityCounts::default();
        if on {
            for job in pending {
                self.entities.change(job, true, false);
            }
            for job in active {
                self.entities.change(job, true, true);
            }
        }
    }

    /// The counters made from scratch, for the invariant check.
    pub(crate) fn recount<'a>(
        pending: impl Iterator<Item = &'a Job>,
        active: impl Iterator<Item = &'a Job>,
        counting_entities: bool,
    ) -> Tally {
        let mut tally = Tally {
            counting_entities,
            ..Tally::default()
        };
        for job in pending {
            tally.enter_pending(job);
        }
        for job in active {
            tally.enter_active(job);
        }
        tally
    }
}

fn bump(map: &mut HashMap<String, Count>, key: &str, set: Set, enter: bool, secs: u64) {
    let count = match map.get_mut(key) {
        Some(count) => count,
        None if enter => map.entry(key.to_string()).or_default(),
        None => return,
    };
    let (jobs, node_secs) = match set {
        Set::Pending => (&mut count.queued, &mut count.queued_node_secs),
        Set::Active => (&mut count.running, &mut count.running_node_secs),
    };
    if enter {
        *jobs += 1;
        *node_secs = node_secs.saturating_add(secs);
    } else {
        *jobs = jobs.saturating_sub(1);
        *node_secs = node_secs.saturating_sub(secs);
    }
    if count.is_zero() {
        map.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use crate::Submission;
    use crate::access::Role;
    use crate::state::tests::{caller, state, t};

    // Found by the swf fuzz target (fuzz/), through the simulator: a wall
    // time near u64's end (parse_duration takes it) times the nodes, and
    // two such jobs added up, overflowed the users' node-seconds.
    #[test]
    fn fuzz_a_wall_time_near_u64s_end_saturates_the_node_seconds() {
        let mut st = state(4);
        let sub = Submission {
            script_name: "job.sh".into(),
            workdir: "/tmp".into(),
            resources: vec![
                ("nodes".into(), "2".into()),
                ("walltime".into(), u64::MAX.to_string()),
            ],
            ..Submission::default()
        };
        let who = caller(1, Role::User);
        let id = st.submit(sub.clone(), &who, t(0)).unwrap().id;
        st.submit(sub, &who, t(0)).unwrap();
        assert_eq!(super::node_seconds(st.job(id).unwrap()), u64::MAX);
    }
}
