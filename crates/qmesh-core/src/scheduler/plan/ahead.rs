//! Looking ahead in a conservative pass that only looks for starts.
//!
//! Under conservative backfilling every job that cannot start gets a
//! reservation, and in a pass that only looks for starts (the simulator's,
//! `Stop::NothingStarts`) those reservations matter only for the jobs
//! behind them that might still start now. Replaying real logs, most of
//! the jobs such a pass reserved came after its last start (SDSC-BLUE:
//! 59 %): too wide or too long for the nodes left. So before it reserves
//! a job, the pass makes sure some job from there on might still start,
//! and stops when none can.
//!
//! "Might start" is a necessary condition, never a guess: a job starts
//! now only on nodes free now that stay free for its planned run, so it
//! needs `n <= sum over sets of min(free now, fewest free over
//! [now, now + run))` (a topology or a shared set's slots only ask more,
//! and a set the job may not use only adds room). Planning a job only
//! takes nodes away, so a job that fails it now fails it for the rest of
//! the pass: a job found that might start is planned after every job
//! ahead of it (their reservations bound it), and the jobs looked at on
//! the way are not tested again. The starts are those of the whole pass;
//! only jobs that could not start are left without a reservation, as
//! when the pass stops for want of free nodes.
//!
//! Only where every start goes through that test: no express queue or
//! lent job (a preempting job starts on nodes that are not free), no
//! advance reservation on now (its jobs start on its own nodes), no
//! shared set, and not EASY++ (which sorts the jobs it takes).

use std::collections::VecDeque;

use super::{Planner, Stop};
use crate::scheduler::order::Ranked;
use crate::server::Backfill;
use crate::state::PendingView;

/// The jobs read ahead of the pass, and how many of them it plans before
/// it looks again.
#[derive(Default)]
pub(super) struct Ahead {
    /// Taken from the order, not yet planned: jobs that cannot start,
    /// then the one that might.
    read: VecDeque<Ranked>,
    /// How many of `read` the pass plans before it looks again: up to
    /// and with the job that might start.
    planned_before_looking: usize,
}

impl Ahead {
    /// Reading ahead into `buffer` (emptied first): a kept plan's passes
    /// hand the same one on, and none grows it again from nothing.
    pub(super) fn in_buffer(mut buffer: VecDeque<Ranked>) -> Ahead {
        buffer.clear();
        Ahead {
            read: buffer,
            planned_before_looking: 0,
        }
    }

    /// The buffer, for the next pass.
    pub(super) fn into_buffer(self) -> VecDeque<Ranked> {
        self.read
    }
}

impl Planner<'_> {
    /// Whether a pass stopping at `stop` may leave out the jobs behind
    /// the last that might start (see the module comment).
    pub(super) fn looks_ahead(&self, stop: Stop) -> bool {
        stop == Stop::NothingStarts
            && self.mode == Backfill::Conservative
            && self.guard.is_none()
            && self.preempt.is_none()
            && self.advance.iter().all(|on| on.free.is_empty())
            && self.sets.iter().all(|set| !set.shared())
    }

    /// The next job to plan from `order`, or `None` when none from there
    /// on might start now: the pass ends.
    pub(super) fn next_ahead(
        &mut self,
        order: &mut dyn Iterator<Item = Ranked>,
        ahead: &mut Ahead,
    ) -> Option<Ranked> {
        if ahead.planned_before_looking == 0 {
            // Every job read was planned: read on to the next that might
            // start.
            loop {
                let ranked = order.next()?;
                let might = self.might_start(&ranked.view);
                ahead.read.push_back(ranked);
                if might {
                    break;
                }
            }
            ahead.planned_before_looking = ahead.read.len();
        }
        ahead.planned_before_looking -= 1;
        ahead.read.pop_front()
    }

    /// The necessary condition for a start now (see the module comment).
    fn might_start(&mut self, view: &PendingView) -> bool {
        let n = view.nodes as usize;
        let free: usize = self.sets.iter().map(|set| set.free).sum();
        if free < n {
            return false;
        }
        let now = self.now_s;
        let end = now.saturating_add(self.planned_secs(view));
        let mut room = 0;
        for set in self.sets.iter_mut().filter(|set| set.free > 0) {
            let window = set.profile.min_over(now, end).max(0) as usize;
            room += window.min(set.free);
            if room >= n {
                return true;
            }
        }
        false
    }
}
