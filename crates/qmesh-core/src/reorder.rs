//! EPCC's group cascade: a queue's jobs reordered so that no group's jobs
//! crowd the head of the list. Groups take turns in order of their first
//! job (round robin); within a group the order is kept, since one job
//! often produces the input of the next. A job's group is its account's
//! (sub-accounts `c1-prod`, `c1-dev` resolve to `c1`), else its owner's
//! Unix group.
//!
//! The new order is kept as a rank on each pending job (the state orders a
//! queue by rank, then id), so it survives restarts and later submissions
//! queue behind it. The reordering runs on command (`qmgr -c "reorder
//! queue NAME"`) and at the queue's `reorder_times` (EPCC did it at each
//! day and night period start).

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;

use chrono::{Duration, FixedOffset};

use crate::account::group_of;
use crate::error::CoreError;
use crate::job::{Job, JobId};
use crate::state::State;
use crate::time::{Time, TimeOfDay};

/// The order in which to take the items whose groups are `groups`: round
/// robin over the groups in order of first appearance, each group's items
/// in their own order. Returns indices into `groups`. O(n log n).
pub fn cascade<G: Eq + Hash>(groups: &[G]) -> Vec<usize> {
    let mut first_seen: HashMap<&G, usize> = HashMap::new();
    let mut taken: Vec<usize> = Vec::new();
    // (round, group's place, index): round = how many of its group came before.
    let mut keys: Vec<(usize, usize, usize)> = Vec::with_capacity(groups.len());
    for (index, group) in groups.iter().enumerate() {
        let next = first_seen.len();
        let place = *first_seen.entry(group).or_insert(next);
        if place == taken.len() {
            taken.push(0);
        }
        keys.push((taken[place], place, index));
        taken[place] += 1;
    }
    keys.sort_unstable();
    keys.into_iter().map(|(_, _, index)| index).collect()
}

/// The group a job is reordered by.
pub fn job_group(job: &Job) -> &str {
    match job.account.as_deref() {
        Some(account) if !account.is_empty() => group_of(account),
        _ => &job.owner.group,
    }
}

/// What a reordering did (or would do).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reordered {
    /// The queue's pending jobs, in their new order.
    pub order: Vec<JobId>,
    /// How many groups they belong to.
    pub groups: usize,
}

impl fmt::Display for Reordered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        write!(
            f,
            "{} reordered across {}",
            plural(self.order.len(), "job"),
            plural(self.groups, "group")
        )
    }
}

impl State {
    /// The cascade order of a queue's pending jobs, without changing them.
    pub fn cascade_order(&self, queue: &str) -> Reordered {
        let jobs: Vec<&Job> = self.pending_in(queue).collect();
        let groups: Vec<&str> = jobs.iter().map(|j| job_group(j)).collect();
        let distinct = groups
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len();
        Reordered {
            order: cascade(&groups).into_iter().map(|i| jobs[i].id).collect(),
            groups: distinct,
        }
    }

    /// Reorders a queue's pending jobs in cascade order: they take the
    /// ranks they had, sorted, in the new order, so jobs submitted later
    /// still queue behind them. Returns the jobs whose place changed (to
    /// store).
    pub fn reorder_queue(&mut self, name: &str, now: Time) -> Result<Vec<JobId>, CoreError> {
        if self.config().queue(name).is_none() {
            return Err(CoreError::NoSuchQueue {
                queue: name.to_string(),
            });
        }
        let places: Vec<u64> = self
            .pending_in(name)
            .map(|j| j.rank.unwrap_or(j.id.0))
            .collect();
        let order = self.cascade_order(name).order;
        let mut ranks = Vec::with_capacity(order.len());
        let mut last: Option<u64> = None;
        for (id, place) in order.into_iter().zip(places) {
            // Strictly increasing, even where two jobs shared a rank.
            let rank = match last {
                Some(prev) if place <= prev => prev + 1,
                _ => place,
            };
            last = Some(rank);
            ranks.push((id, (rank != id.0).then_some(rank)));
        }
        Ok(self.rerank(name, &ranks, now))
    }
}

/// Whether one of `times` (local times of day, at UTC offset `offset`)
/// passed in `(last, now]`: the daemon asks this on each tick with the time
/// of its previous check, and reorders the queue when it is true.
pub fn reorder_due(times: &[TimeOfDay], last: Time, now: Time, offset: FixedOffset) -> bool {
    if times.is_empty() || now <= last {
        return false;
    }
    if now - last >= Duration::days(1) {
        return true;
    }
    let from = last.with_timezone(&offset).naive_local();
    let to = now.with_timezone(&offset).naive_local();
    let mut day = from.date();
    while day <= to.date() {
        for t in times {
            let at = day.and_time(t.naive());
            if from < at && at <= to {
                return true;
            }
        }
        match day.succ_opt() {
            Some(next) => day = next,
            None => break,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Role;
    use crate::state::tests::{caller, state, t};
    use crate::submit::Submission;
    use chrono::TimeZone;

    /// The EPCC seed's queue: NQS ids and the group of each job's ACID.
    const SEED: [(u64, &str); 7] = [
        (18796, "a2"),
        (18798, "a2"),
        (18799, "c1"),
        (19377, "c1"),
        (19378, "e5"),
        (19384, "f1"),
        (19392, "h1"),
    ];

    const SEED_RESULT: [u64; 7] = [18796, 18799, 19378, 19384, 19392, 18798, 19377];

    #[test]
    fn the_epcc_example_reorders_to_the_seeds_result() {
        let groups: Vec<&str> = SEED.iter().map(|(_, g)| *g).collect();
        let order: Vec<u64> = cascade(&groups).into_iter().map(|i| SEED[i].0).collect();
        assert_eq!(order, SEED_RESULT);
    }

    #[test]
    fn each_group_keeps_its_order() {
        let groups = ["x", "x", "x", "y", "z", "z"];
        assert_eq!(cascade(&groups), vec![0, 3, 4, 1, 5, 2]);
        assert_eq!(cascade::<&str>(&[]), Vec::<usize>::new());
    }

    fn submit_as(s: &mut State, uid: u32, account: Option<&str>) -> JobId {
        let sub = Submission {
            script_name: "job.sh".into(),
            workdir: "/tmp".into(),
            account: account.map(String::from),
            ..Submission::default()
        };
        s.submit(sub, &caller(uid, Role::User), t(0)).unwrap().id
    }

    fn order(s: &State) -> Vec<JobId> {
        s.pending_in("batch").map(|j| j.id).collect()
    }

    #[test]
    fn sub_accounts_resolve_and_the_owners_group_stands_in() {
        let mut s = state(1);
        let a = submit_as(&mut s, 1, Some("c1-prod"));
        let b = submit_as(&mut s, 2, Some("c1-dev"));
        let c = submit_as(&mut s, 3, None); // group g3
        let d = submit_as(&mut s, 4, Some("e5"));
        let reordered = s.cascade_order("batch");
        assert_eq!(reordered.order, vec![a, c, d, b]);
        assert_eq!(
            format!("queue batch: {reordered}"),
            "queue batch: 4 jobs reordered across 3 groups"
        );
    }

    #[test]
    fn the_seed_through_the_state_and_a_restore() {
        let mut s = state(1);
        let mut ids = Vec::new();
        for (_, group) in SEED {
            ids.push(submit_as(&mut s, 1, Some(&format!("{group}-prod"))));
        }
        let changed = s.reorder_queue("batch", t(5)).unwrap();
        let want: Vec<JobId> = SEED_RESULT
            .iter()
            .map(|seq| ids[SEED.iter().position(|(id, _)| id == seq).unwrap()])
            .collect();
        assert_eq!(order(&s), want);
        // The first job keeps its place; the others moved.
        assert_eq!(changed.len(), 6);
        s.check_invariants().unwrap();
        // A later job queues behind the reordered ones.
        let late = submit_as(&mut s, 1, Some("a2"));
        let mut with_late = want.clone();
        with_late.push(late);
        assert_eq!(order(&s), with_late);
        // The ranks are stored with the jobs: a restore keeps the order.
        let jobs: Vec<Job> = s
            .jobs()
            .map(|j| serde_json::from_str(&serde_json::to_string(j).unwrap()).unwrap())
            .collect();
        let mut fresh = state(1);
        fresh.restore(jobs, 0);
        assert_eq!(order(&fresh), with_late);
        fresh.check_invariants().unwrap();
        // A cascade reordered again stays as it is.
        assert!(fresh.reorder_queue("batch", t(6)).unwrap().is_empty());
        assert_eq!(order(&fresh), with_late);
        fresh.check_invariants().unwrap();
    }

    #[test]
    fn a_started_job_leaves_and_the_rest_keep_their_order() {
        let mut s = state(1);
        let a = submit_as(&mut s, 1, Some("a"));
        let b = submit_as(&mut s, 1, Some("a"));
        let c = submit_as(&mut s, 1, Some("b"));
        s.reorder_queue("batch", t(1)).unwrap();
        assert_eq!(order(&s), vec![a, c, b]);
        s.start(c, &[0], t(2)).unwrap();
        assert_eq!(order(&s), vec![a, b]);
        s.check_invariants().unwrap();
        assert!(matches!(
            s.reorder_queue("nosuch", t(3)),
            Err(CoreError::NoSuchQueue { .. })
        ));
    }

    #[test]
    fn times_of_day_parse_and_print() {
        assert_eq!(TimeOfDay::parse("08:00").unwrap().to_string(), "08:00");
        assert_eq!(TimeOfDay::parse("8:05").unwrap().to_string(), "08:05");
        assert_eq!(TimeOfDay::parse("2030").unwrap().to_string(), "20:30");
        for bad in ["24:00", "12:60", "12:5", "noon", "", "1:2:3"] {
            let err = TimeOfDay::parse(bad).unwrap_err();
            assert!(err.contains("write HH:MM"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_reorder_is_due_when_a_time_passes() {
        let times = [
            TimeOfDay::new(8, 0).unwrap(),
            TimeOfDay::new(20, 0).unwrap(),
        ];
        let utc = FixedOffset::east_opt(0).unwrap();
        let at =
            |h: u32, m: u32, s: u32| chrono::Utc.with_ymd_and_hms(2026, 3, 2, h, m, s).unwrap();
        assert!(reorder_due(&times, at(7, 59, 59), at(8, 0, 0), utc));
        assert!(!reorder_due(&times, at(8, 0, 0), at(8, 0, 1), utc));
        assert!(!reorder_due(&times, at(9, 0, 0), at(19, 0, 0), utc));
        assert!(!reorder_due(&[], at(0, 0, 0), at(23, 0, 0), utc));
        // Local time: 08:00 at UTC+2 is 06:00 UTC.
        let plus2 = FixedOffset::east_opt(2 * 3600).unwrap();
        assert!(reorder_due(&times, at(5, 59, 0), at(6, 0, 30), plus2));
        assert!(!reorder_due(&times, at(7, 59, 0), at(8, 0, 30), plus2));
        // Across midnight: 20:00 local at UTC-5 is 01:00 UTC the next day.
        let minus5 = FixedOffset::west_opt(5 * 3600).unwrap();
        let next = |h| chrono::Utc.with_ymd_and_hms(2026, 3, 3, h, 0, 0).unwrap();
        assert!(reorder_due(&times, at(23, 0, 0), next(2), minus5));
    }
}
