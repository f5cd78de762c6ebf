//! What the calendar means for a queue at a given time: whether it may
//! start jobs, which node sets it draws on, its priority, and when the
//! jobs it runs must end.
//!
//! EPCC ran a DAY configuration and a NIGHT one, and batch jobs still
//! running when theirs ended were aborted while interactive work flowed
//! through; SDSC lent a node set to short jobs in prime time and took it
//! back at night. Here a queue runs in its `periods` (none: always), draws
//! on its node group's sets for the periods on, and with `period_end` kill
//! or requeue its jobs end at the first *cut*: the instant none of its
//! periods is on any more, or the instant the node set they run on leaves
//! its group. The planner starts no job that would cross a cut; the daemon
//! warns and then ends the jobs that reach one.
//!
//! Cuts are looked for up to [`LOOKAHEAD_DAYS`] ahead: a job whose wall
//! time reaches further is rare, and is treated as crossing none.

use crate::job::Job;
use crate::queue::Queue;
use crate::state::State;
use crate::time::Time;

/// How far ahead cuts are looked for.
pub const LOOKAHEAD_DAYS: i64 = 14;

/// Calendar changes followed before giving up (a week of DAY/NIGHT/WEEKEND
/// changes is about twenty).
const MAX_STEPS: usize = 64;

/// An instant at which a queue's jobs on some node set are ended, and what
/// happens then, as a noun phrase for messages: `the end of period "DAY"`,
/// `the start of period "prime" (node set "s3" leaves node group "pool")`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    pub at: Time,
    pub what: String,
}

/// A queue as the calendar has it at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueWindow {
    /// One of its periods is on (or it names none).
    pub open: bool,
    /// The node sets (indices, in selection order) it draws on now.
    pub sets: Vec<usize>,
    /// Parallel to `sets`: when jobs on that set are ended; always `None`
    /// when the queue's `period_end` is continue.
    pub cuts: Vec<Option<Cut>>,
}

impl QueueWindow {
    /// The earliest cut of the sets `on` (indices into `State::node_sets`)
    /// among this window's sets; a set the queue no longer draws on is cut
    /// already (at `now`).
    pub fn cut_of(&self, state: &State, on: &[usize], now: Time) -> Option<Cut> {
        on.iter()
            .filter_map(|&s| match self.sets.iter().position(|&x| x == s) {
                Some(i) => self.cuts[i].clone(),
                None => Some(Cut {
                    at: now,
                    what: format!(
                        "a change of its node group (node set \"{}\" left it)",
                        state.node_sets()[s].name
                    ),
                }),
            })
            .min_by_key(|c| c.at)
    }
}

impl Queue {
    /// Whether it may start jobs when `active` says which periods are on.
    pub fn open_in(&self, active: impl Fn(&str) -> bool) -> bool {
        self.periods.is_empty() || self.periods.iter().any(|p| active(p))
    }

    /// Its priority when `active` says which periods are on: the highest
    /// `period_priority` of those on, else `priority`.
    pub fn priority_in(&self, active: impl Fn(&str) -> bool) -> i32 {
        self.period_priority
            .iter()
            .filter(|(p, _)| active(p))
            .map(|(_, &v)| v)
            .max()
            .unwrap_or(self.priority)
    }

    /// Whether the calendar matters to it at all (the planner's fast path).
    pub fn follows_calendar(&self) -> bool {
        !self.periods.is_empty() || !self.period_priority.is_empty() || self.node_group.is_some()
    }
}

/// `queue` at `now`.
pub fn window(state: &State, queue: &Queue, now: Time) -> QueueWindow {
    let active = |p: &str| state.period_active(p, now);
    let sets = state.sets_now(queue, active);
    let open = queue.open_in(active);
    let mut cuts = vec![None; sets.len()];
    if queue.period_end.ends_jobs() && open {
        let close = queue_close(state, queue, now);
        let leaves = set_leaves(state, queue, &sets, now);
        for (cut, leave) in cuts.iter_mut().zip(leaves) {
            *cut = [close.clone(), leave]
                .into_iter()
                .flatten()
                .min_by_key(|c| c.at);
        }
    }
    QueueWindow { open, sets, cuts }
}

/// When a running job of a queue that ends jobs must end: the earliest cut
/// of the sets its nodes are in. `None` for a queue whose jobs continue.
pub fn job_cut(state: &State, job: &Job, now: Time) -> Option<Cut> {
    let queue = state.config().queue(&job.queue)?;
    if !queue.period_end.ends_jobs() {
        return None;
    }
    job_cut_in(state, job, &window(state, queue, now), now)
}

/// [`job_cut`] with its queue's window at `now` already worked out (the
/// daemon checks every running job of a queue against one window).
pub fn job_cut_in(state: &State, job: &Job, w: &QueueWindow, now: Time) -> Option<Cut> {
    let queue = state.config().queue(&job.queue)?;
    if !queue.period_end.ends_jobs() {
        return None;
    }
    if !w.open {
        // Its periods are over: it is past its cut.
        return Some(Cut {
            at: now,
            what: format!("the end of period \"{}\"", queue.periods.join(",")),
        });
    }
    let mut on: Vec<usize> = job
        .exec_nodes
        .iter()
        .filter_map(|n| state.node_by_name(n).map(|node| node.set))
        .collect();
    on.sort_unstable();
    on.dedup();
    w.cut_of(state, &on, now)
}

/// When a queue outside its periods next opens: the earliest next start
/// of its periods, within the calendar's horizon.
pub fn next_open(state: &State, queue: &Queue, now: Time) -> Option<Time> {
    let calendar = &state.config().calendar;
    queue
        .periods
        .iter()
        .filter_map(|p| calendar.next_start(p, now).ok().flatten())
        .min()
}

/// The next instant after `t` at which one of `periods` turns on or off.
fn next_change<'a>(
    state: &State,
    periods: impl Iterator<Item = &'a String>,
    t: Time,
) -> Option<(Time, &'a str)> {
    let calendar = &state.config().calendar;
    periods
        .filter_map(|p| {
            calendar
                .next_change(p, t)
                .ok()
                .flatten()
                .map(|c| (c, p.as_str()))
        })
        .min_by_key(|&(c, _)| c)
}

/// The first instant after `now` at which none of the queue's periods is
/// on (the queue being open now), within the lookahead.
fn queue_close(state: &State, queue: &Queue, now: Time) -> Option<Cut> {
    if queue.periods.is_empty() {
        return None;
    }
    let limit = now + chrono::Duration::days(LOOKAHEAD_DAYS);
    let mut t = now;
    for _ in 0..MAX_STEPS {
        let (next, period) = next_change(state, queue.periods.iter(), t)?;
        if next > limit {
            return None;
        }
        if !queue.open_in(|p| state.period_active(p, next)) {
            return Some(Cut {
                at: next,
                what: format!("the end of period \"{period}\""),
            });
        }
        t = next;
    }
    None
}

/// For each of `sets` (the queue's sets now), the first instant after
/// `now` at which its node group no longer holds it, within the lookahead.
fn set_leaves(state: &State, queue: &Queue, sets: &[usize], now: Time) -> Vec<Option<Cut>> {
    let mut leaves = vec![None; sets.len()];
    let Some(group) = queue
        .node_group
        .as_ref()
        .and_then(|g| state.config().node_groups.get(g))
    else {
        return leaves;
    };
    if group.periods.is_empty() {
        return leaves;
    }
    let limit = now + chrono::Duration::days(LOOKAHEAD_DAYS);
    let mut t = now;
    for _ in 0..MAX_STEPS {
        let Some((next, period)) = next_change(state, group.periods.iter().map(|p| &p.period), t)
        else {
            break;
        };
        if next > limit {
            break;
        }
        let held = state.sets_now(queue, |p| state.period_active(p, next));
        let edge = if state.period_active(period, next) {
            "start"
        } else {
            "end"
        };
        for (leave, &s) in leaves.iter_mut().zip(sets) {
            if leave.is_none() && !held.contains(&s) {
                *leave = Some(Cut {
                    at: next,
                    what: format!(
                        "the {edge} of period \"{period}\" (node set \"{}\" leaves node group \"{}\")",
                        state.node_sets()[s].name,
                        group.name
                    ),
                });
            }
        }
        if leaves.iter().all(Option::is_some) {
            break;
        }
        t = next;
    }
    leaves
}

#[cfg(test)]
mod tests;
