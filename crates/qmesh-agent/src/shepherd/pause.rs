//! A suspended job (`qsig -s suspend`), as its shepherd holds it: every
//! process of the job stopped, and its wall-time alarm paused, so that
//! the time suspended is not wall time (PBS).
//!
//! How the job is stopped: its cgroup is frozen where the host has a
//! freezer (v2's `cgroup.freeze`, v1's freezer hierarchy), which no
//! process of the job can see or undo; otherwise its process group is sent
//! SIGSTOP, and SIGCONT to resume. A frozen or stopped job can still be
//! killed: the kill thaws it after its SIGTERM (`Watch::start_kill`).

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::{Pid, alarm};
use tracing::{info, warn};

use super::signal_group;
use crate::cgroup::job::JobCgroup;

/// How long a freeze may take before the shepherd stops the job with
/// SIGSTOP instead.
const FREEZE_WITHIN: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum How {
    Frozen,
    Stopped,
}

/// A suspension under way.
#[derive(Debug)]
pub struct Suspended {
    how: How,
    /// Seconds its wall-time alarm had left; `None`: no alarm was set.
    wall_left: Option<u32>,
    since: Instant,
}

/// Stops the job `pgrp` (in `cgroup`, if it has one) and pauses the
/// wall-time alarm.
pub fn suspend(pgrp: Pid, cgroup: Option<&JobCgroup>, reason: &str) -> Suspended {
    let wall_left = alarm::cancel();
    let frozen = match cgroup.map(|c| (c, c.freeze(FREEZE_WITHIN))) {
        Some((_, Ok(()))) => true,
        Some((c, Err(e))) => {
            warn!("cannot freeze the job's cgroup ({e}); stopping it with SIGSTOP");
            let _ = c.thaw();
            false
        }
        None => false,
    };
    let how = if frozen {
        How::Frozen
    } else {
        signal_group(pgrp, Signal::SIGSTOP);
        How::Stopped
    };
    info!(
        ?how,
        wall_left, reason, "job suspended; its wall time is paused"
    );
    Suspended {
        how,
        wall_left,
        since: Instant::now(),
    }
}

/// Lets the job run again; with `rearm`, its wall-time alarm goes on
/// from where it stopped (a job resumed to be killed needs none). Returns
/// how long it was suspended.
pub fn resume(
    pgrp: Pid,
    cgroup: Option<&JobCgroup>,
    suspended: Suspended,
    rearm: bool,
    reason: &str,
) -> Duration {
    match (suspended.how, cgroup) {
        (How::Frozen, Some(c)) => {
            if let Err(e) = c.thaw() {
                warn!("cannot thaw the job's cgroup ({e})");
            }
        }
        _ => signal_group(pgrp, Signal::SIGCONT),
    }
    if rearm && let Some(left) = suspended.wall_left {
        alarm::set(left.max(1));
    }
    let span = suspended.since.elapsed();
    info!(secs = span.as_secs(), reason, "job resumed");
    span
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;

    use super::*;

    /// The state letter of `pid` in /proc (R, S, T...).
    fn state_of(pid: i32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.chars().next().unwrap()
    }

    fn await_state(pid: i32, wanted: impl Fn(char) -> bool) -> char {
        let began = Instant::now();
        loop {
            let now = state_of(pid);
            if wanted(now) || began.elapsed() > Duration::from_secs(5) {
                return now;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn without_a_cgroup_the_job_s_process_group_is_stopped_and_continued() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let suspended = suspend(Pid::from_raw(pid), None, "test");
        assert_eq!(suspended.how, How::Stopped);
        assert_eq!(suspended.wall_left, None, "no alarm was set");
        assert_eq!(await_state(pid, |s| s == 'T'), 'T', "stopped");
        resume(Pid::from_raw(pid), None, suspended, true, "test");
        assert_ne!(await_state(pid, |s| s != 'T'), 'T', "continued");
        let _ = child.kill();
        let _ = child.wait();
    }
}
