//! The order a pass takes pending jobs in: the server's `job_order`.
//!
//! - `fifo`: submission order (a queue's own order, which `reorder queue`
//!   may have changed).
//! - `priority_aging` (SDSC): `queue_priority + age_factor × hours waited`,
//!   so a job in a low queue overtakes a high queue once it has waited long
//!   enough.
//! - `hrn` (NCAR): highest response ratio next, `(wait + wall time) / wall
//!   time`: short jobs first, long ones never starve.
//! - `fairshare` (NCAR, Kay and Lauder): the account's fair-share factor.
//!
//! With `by_queue` (the default), queue priority sorts first and the order
//! applies within each priority; `priority_aging` has the queue priority in
//! its formula and ignores `by_queue`. Before all of it, as PBS Pro sorts
//! by preemption level first, the jobs of express queues (`preempt.rs`)
//! come before the others.

use std::cmp::Ordering;

use crate::server::JobOrder;
use crate::state::{PendingView, State};
use crate::time::Time;

/// A pending job with its place in the order. The pass reads the state's
/// compact [`PendingView`]s, not the job records, for every job.
pub(super) struct Ranked {
    pub view: PendingView,
    /// The job order's measure (higher first); for fifo, the queue priority.
    pub priority: f64,
    queue_priority: i32,
    /// Its queue is express: it may preempt, and goes first.
    express: bool,
    /// Its queue, as an index into the configuration's queues (in name
    /// order).
    pub queue: usize,
    /// Its position in its queue's own order.
    position: usize,
}

/// Every pending job of the configured queues, in the order a pass takes
/// them. With `fifo` by queue nothing needs sorting, and the jobs come as
/// the pass asks for them: a pass that stops early (nothing more can
/// start) reads no further.
pub(super) fn ranked(state: &State, now: Time) -> Box<dyn Iterator<Item = Ranked> + '_> {
    let config = state.config();
    let attrs = &config.server;
    let by_queue = attrs.by_queue && attrs.job_order != JobOrder::PriorityAging;
    let fifo = attrs.job_order == JobOrder::Fifo;
    // A queue's priority is the one of the periods on (EPCC: the order
    // reversed on Monday nights).
    let policy = crate::preempt::Policy::of(config);
    // Only the queues with pending jobs (a configuration may have dozens,
    // each looked up by name once per pass before): both maps are in name
    // order, so one walk pairs each such queue with its index.
    let mut configured = config.queues.iter().enumerate().peekable();
    let mut queues = Vec::new();
    for (name, views) in state.pending_queues() {
        while configured
            .next_if(|(_, (key, _))| key.as_str() < name)
            .is_some()
        {}
        let Some((i, (_, q))) = configured.next_if(|(_, (key, _))| key.as_str() == name) else {
            continue;
        };
        let priority = if q.period_priority.is_empty() {
            q.priority
        } else {
            q.priority_in(|p| state.period_active(p, now))
        };
        let express = policy.as_ref().is_some_and(|p| p.is_express(q));
        queues.push((i, priority, express, views));
    }
    if fifo && by_queue {
        // Each queue is already in order: take the queues by priority (then
        // name, as NQS walked them) and nothing needs sorting.
        queues.sort_by(|a, b| b.2.cmp(&a.2).then(b.1.cmp(&a.1)).then(a.0.cmp(&b.0)));
    }
    if fifo && by_queue {
        return Box::new(ByQueue {
            queues: queues.into_iter(),
            current: None,
            position: 0,
        });
    }
    let age_factor = attrs.age_factor;
    let order = attrs.job_order;
    let all = queues
        .into_iter()
        .flat_map(move |(index, queue_priority, express, views)| {
            views.enumerate().map(move |(position, view)| {
                let waited = || (now - view.qtime).num_seconds().max(0) as f64;
                let priority = match order {
                    JobOrder::Fifo => f64::from(queue_priority),
                    JobOrder::PriorityAging => {
                        f64::from(queue_priority) + age_factor * waited() / 3600.0
                    }
                    JobOrder::Hrn => {
                        let wall = view.walltime.max(1) as f64;
                        (waited() + wall) / wall
                    }
                    JobOrder::Fairshare => match state.job(view.id) {
                        Some(job) if view.has_account => state.fair_share(job, now),
                        _ => 1.0,
                    },
                };
                Ranked {
                    view: *view,
                    priority,
                    queue_priority,
                    express,
                    queue: index,
                    position,
                }
            })
        });
    let mut out: Vec<Ranked> = all.collect();
    out.sort_unstable_by(|a, b| compare(a, b, by_queue, fifo));
    Box::new(out.into_iter())
}

/// Fifo by queue: each queue's jobs in its own order, the queues by
/// priority. What `ranked` gives then, read as the pass asks, without a
/// generic `flat_map` per job read (a pass reads dozens: it looks ahead
/// for one that might start).
struct ByQueue<I> {
    /// The queues still to read: index, priority, express, views.
    queues: std::vec::IntoIter<(usize, i32, bool, I)>,
    current: Option<(usize, i32, bool, I)>,
    /// The next job's position in the current queue.
    position: usize,
}

impl<'a, I: Iterator<Item = &'a PendingView>> Iterator for ByQueue<I> {
    type Item = Ranked;

    #[inline]
    fn next(&mut self) -> Option<Ranked> {
        loop {
            if let Some((index, queue_priority, express, views)) = &mut self.current
                && let Some(view) = views.next()
            {
                let position = self.position;
                self.position += 1;
                return Some(Ranked {
                    view: *view,
                    priority: f64::from(*queue_priority),
                    queue_priority: *queue_priority,
                    express: *express,
                    queue: *index,
                    position,
                });
            }
            self.current = Some(self.queues.next()?);
            self.position = 0;
        }
    }
}

fn compare(a: &Ranked, b: &Ranked, by_queue: bool, fifo: bool) -> Ordering {
    let queue = if by_queue {
        b.queue_priority.cmp(&a.queue_priority)
    } else {
        Ordering::Equal
    };
    let measure = if fifo && !by_queue {
        Ordering::Equal
    } else {
        b.priority.total_cmp(&a.priority)
    };
    // Within a queue its own order (queues of one priority by name, as
    // NQS walked them); without by_queue, submission order.
    let within = if by_queue {
        a.queue.cmp(&b.queue).then(a.position.cmp(&b.position))
    } else {
        Ordering::Equal
    };
    b.express
        .cmp(&a.express)
        .then(queue)
        .then(measure)
        .then(within)
        .then(a.view.id.cmp(&b.view.id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Role;
    use crate::queue::Queue;
    use crate::state::tests::{caller, state, t};
    use crate::submit::Submission;

    fn submit_to(s: &mut State, queue: &str) -> crate::job::JobId {
        let sub = Submission {
            script_name: "job.sh".into(),
            queue: Some(queue.into()),
            workdir: "/tmp".into(),
            resources: vec![("nodes".into(), "1".into())],
            ..Submission::default()
        };
        s.submit(sub, &caller(1000, Role::User), t(0)).unwrap().id
    }

    /// Fifo by queue reads only the queues with jobs, yet each job keeps
    /// its queue's index among all the configuration's queues, and the
    /// queues come by priority, then name.
    #[test]
    fn queues_without_jobs_are_passed_over_and_the_others_keep_their_index() {
        let mut s = state(4);
        let mut config = s.config().clone();
        for (name, priority) in [("a", 1), ("b", 5), ("c", 5), ("d", 0), ("e", 9)] {
            let mut q = Queue::open(name);
            q.priority = priority;
            config.queues.insert(name.into(), q);
        }
        s.set_config(config);
        let names: Vec<String> = s.config().queues.keys().cloned().collect();
        let (d, a, c1, c2, batch) = (
            submit_to(&mut s, "d"),
            submit_to(&mut s, "a"),
            submit_to(&mut s, "c"),
            submit_to(&mut s, "c"),
            submit_to(&mut s, "batch"),
        );
        let read: Vec<(crate::job::JobId, &str, usize)> = ranked(&s, t(1))
            .map(|r| (r.view.id, names[r.queue].as_str(), r.position))
            .collect();
        assert_eq!(
            read,
            [
                (c1, "c", 0),
                (c2, "c", 1),
                (a, "a", 0),
                (batch, "batch", 0),
                (d, "d", 0)
            ],
            "b and e have no jobs; batch (priority 0) comes before d by name"
        );
    }
}
