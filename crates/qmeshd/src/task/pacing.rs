//! Pacing: when the scheduler task runs a pass, and the other things it
//! does on time rather than on request.
//!
//! Passes are not run per event. A change marks the state dirty; a dirty
//! state gets a pass once `pass_interval` has passed since the last one,
//! so a burst of submissions shares one pass. Some passes are due with no
//! change at all: a `qsub -a` time comes (`next_begin`), or
//! `scheduler_iteration` seconds pass with time-dependent orders. A pass's
//! cost is kept for the log and the metrics.
//!
//! Everything here takes the time it is given (`Now`, read once per event
//! by the task's loop), so the rules are tested with a clock in hand; the
//! one clock read, at a pass's end, measures what the pass cost.

use std::time::{Duration, Instant};

use qmesh_core::Time;

use crate::dispatch::Now;

/// How often finished jobs that left the history are looked for.
const PURGE_EVERY: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub(super) struct Pacing {
    /// The least time between two passes (`pass_interval_ms`).
    interval: Duration,
    /// Something changed since the last pass.
    dirty: bool,
    passes: u64,
    last_pass: Instant,
    last_cost: Duration,
    /// The earliest `qsub -a` time still ahead: a pass is due when it comes.
    next_begin: Option<Time>,
    /// When the queues' `reorder_times` were last looked at.
    last_reorder_check: Time,
    last_purge: Instant,
}

impl Pacing {
    /// Pacing from `now` on, with a pass due at once.
    pub(super) fn new(interval: Duration, now: Now) -> Pacing {
        Pacing {
            interval,
            dirty: true,
            passes: 0,
            last_pass: now.mono,
            last_cost: Duration::ZERO,
            next_begin: None,
            last_reorder_check: now.wall,
            last_purge: now.mono,
        }
    }

    /// Something changed: a pass is due.
    pub(super) fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// When the next pass is due, if one is.
    pub(super) fn pass_due_at(&self) -> Option<Instant> {
        self.dirty.then(|| self.last_pass + self.interval)
    }

    /// A pass begins at `now` (or is skipped, read-only): the state is
    /// clean again. Its number.
    pub(super) fn pass_begins(&mut self, now: Now) -> u64 {
        self.dirty = false;
        self.last_pass = now.mono;
        self.passes += 1;
        self.passes
    }

    /// A pass that will not run (the daemon is read-only): nothing is due.
    pub(super) fn skip_pass(&mut self) {
        self.dirty = false;
    }

    /// The pass that began last has ended; how long it took.
    pub(super) fn pass_ended(&mut self) -> Duration {
        self.last_cost = self.last_pass.elapsed();
        self.last_cost
    }

    /// The earliest `qsub -a` time after `now` of `times`, kept.
    pub(super) fn set_next_begin(&mut self, times: impl Iterator<Item = Time>, now: Time) {
        self.next_begin = times.filter(|t| *t > now).min();
    }

    /// A job may start at `at` (qsub -a, qalter -a): a pass comes then.
    pub(super) fn wake_at(&mut self, at: Time) {
        self.next_begin = Some(self.next_begin.map_or(at, |t| t.min(at)));
    }

    /// Whether a job's start-after time has come; once it has, the
    /// caller sets the next one ([`Pacing::set_next_begin`]).
    pub(super) fn begin_time_came(&self, now: Time) -> bool {
        self.next_begin.is_some_and(|t| t <= now)
    }

    /// The last time `reorder_times` were looked at, now replaced by `now`.
    pub(super) fn reorder_checked(&mut self, now: Time) -> Time {
        std::mem::replace(&mut self.last_reorder_check, now)
    }

    /// Whether the history is due a look for jobs to expire (once a
    /// minute); the look counts as done.
    pub(super) fn purge_due(&mut self, now: Instant) -> bool {
        if now.duration_since(self.last_purge) < PURGE_EVERY {
            return false;
        }
        self.last_purge = now;
        true
    }

    /// With time-dependent orders a pass is due every `iteration`
    /// (`scheduler_iteration`), changed or not.
    pub(super) fn iterate(&mut self, now: Instant, iteration: Duration) {
        if now.duration_since(self.last_pass) >= iteration {
            self.dirty = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: Now, secs: f64) -> Now {
        let d = Duration::from_secs_f64(secs);
        Now {
            wall: start.wall + chrono::Duration::from_std(d).unwrap(),
            mono: start.mono + d,
        }
    }

    fn start() -> Now {
        Now {
            wall: chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
            mono: Instant::now(),
        }
    }

    #[test]
    fn a_pass_is_due_an_interval_after_the_last_and_only_when_dirty() {
        let t0 = start();
        let mut p = Pacing::new(Duration::from_millis(20), t0);
        assert_eq!(p.pass_due_at(), Some(t0.mono + Duration::from_millis(20)));
        assert_eq!(p.pass_begins(at(t0, 0.02)), 1);
        assert_eq!(p.pass_due_at(), None, "clean after the pass");
        p.mark_dirty();
        assert_eq!(
            p.pass_due_at(),
            Some(t0.mono + Duration::from_millis(40)),
            "an interval after the last pass began"
        );
        p.skip_pass();
        assert_eq!(p.pass_due_at(), None);
    }

    #[test]
    fn a_begin_time_wakes_a_pass_at_the_earliest() {
        let t0 = start();
        let mut p = Pacing::new(Duration::from_millis(20), t0);
        let later = |s: i64| t0.wall + chrono::Duration::seconds(s);
        p.set_next_begin([later(-5), later(30), later(10)].into_iter(), t0.wall);
        assert!(!p.begin_time_came(later(9)), "past times do not count");
        assert!(p.begin_time_came(later(10)));
        p.wake_at(later(5));
        assert!(p.begin_time_came(later(5)), "an earlier wake wins");
        p.wake_at(later(50));
        assert!(p.begin_time_came(later(5)), "a later one does not");
        p.set_next_begin(std::iter::empty(), later(6));
        assert!(!p.begin_time_came(later(1000)));
    }

    #[test]
    fn history_is_looked_at_once_a_minute_and_iterations_make_passes_due() {
        let t0 = start();
        let mut p = Pacing::new(Duration::from_millis(20), t0);
        assert!(!p.purge_due(at(t0, 59.0).mono));
        assert!(p.purge_due(at(t0, 60.0).mono));
        assert!(
            !p.purge_due(at(t0, 61.0).mono),
            "counted from the last look"
        );
        p.pass_begins(t0);
        p.iterate(at(t0, 9.0).mono, Duration::from_secs(10));
        assert_eq!(p.pass_due_at(), None);
        p.iterate(at(t0, 10.0).mono, Duration::from_secs(10));
        assert!(p.pass_due_at().is_some());
    }

    #[test]
    fn the_reorder_check_hands_back_the_last_time() {
        let t0 = start();
        let mut p = Pacing::new(Duration::from_millis(20), t0);
        assert_eq!(p.reorder_checked(at(t0, 1.0).wall), t0.wall);
        assert_eq!(p.reorder_checked(at(t0, 2.0).wall), at(t0, 1.0).wall);
    }
}
