//! Period ends against a real daemon and agent: a running job whose
//! queue's period ends gets its warning signal, then its queue's action.
//!
//! The calendar is set relative to the test's clock: the period the queue
//! runs in is redefined to a day two days off, so it is over now.

use chrono::{Datelike, Utc};

use crate::harness::Daemon;

/// First run: says it started, writes `warned` on USR1 and `ended` on
/// TERM (each a FIFO the test reads). A later run ends at once.
const CHECKPOINTER: &str = "#!/bin/sh
if [ -e first-run-done ]; then exit 0; fi
trap 'touch first-run-done; echo usr1 > warned' USR1
trap 'echo term > ended; exit 143' TERM
echo go > started
while :; do sleep 1; done
";

/// A weekday two days from now, when no test is still running.
fn day_after_tomorrow() -> String {
    (Utc::now() + chrono::Duration::days(2))
        .weekday()
        .to_string()
}

/// Queue `pq` runs in period `P` (the whole week, to begin with).
fn daemon_with_period_queue(period_end: &str) -> Daemon {
    let d = Daemon::start();
    d.ok("qmgr", &["-c", "set calendar period.P = Mon-Sun"]);
    d.ok(
        "qmgr",
        &[
            "-c",
            &format!(
                "create queue pq queue_type = execution, enabled = true, started = true, \
                 periods = P, period_end = {period_end}, period_end_warning = 3, \
                 warning_signal = SIGUSR1"
            ),
        ],
    );
    d
}

#[test]
fn a_job_at_its_period_end_is_warned_then_requeued_and_runs_in_the_next() {
    let d = daemon_with_period_queue("requeue");
    let started = d.fifo("started");
    let warned = d.fifo("warned");
    let ended = d.fifo("ended");
    d.script("ckpt.sh", CHECKPOINTER);
    let id = d.qsub(&["-q", "pq", "-l", "walltime=1:00:00", "ckpt.sh"]);
    d.read_fifo(&started);

    // The period is over: P now means a day two days off.
    let day = day_after_tomorrow();
    d.ok("qmgr", &["-c", &format!("set calendar period.P = {day}")]);
    assert_eq!(d.read_fifo(&warned), "usr1\n", "the warning comes first");
    let job = d.job_json(&id);
    assert_eq!(
        job["job_state"], "R",
        "still running after the warning: {job}"
    );
    assert_eq!(d.read_fifo(&ended), "term\n", "then the requeue kills it");

    // Queued again; it runs once its queue's period is on again.
    let out = d.ok("qstat", &["-f", &id]);
    assert!(
        out.contains("job_state = Q") || out.contains("job_state = E"),
        "{out}"
    );
    d.ok("qmgr", &["-c", "set calendar period.P = Mon-Sun"]);
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}");
    assert_eq!(info.run_count, 2, "{info:?}");
    assert!(d.work.join("first-run-done").exists());
    let log = d.log();
    assert!(log.contains("ending a job at its period's end"), "{log}");
}

#[test]
fn a_job_at_its_period_end_is_warned_then_killed() {
    let d = daemon_with_period_queue("kill");
    let started = d.fifo("started");
    let warned = d.fifo("warned");
    let ended = d.fifo("ended");
    d.script("ckpt.sh", CHECKPOINTER);
    let id = d.qsub(&["-q", "pq", "-l", "walltime=1:00:00", "ckpt.sh"]);
    d.read_fifo(&started);
    // The queue is moved to a period that is not on now.
    let day = day_after_tomorrow();
    d.ok("qmgr", &["-c", &format!("set calendar period.N = {day}")]);
    d.ok("qmgr", &["-c", "set queue pq periods = N"]);
    d.read_fifo(&warned);
    d.read_fifo(&ended);
    let info = d.wait_job(&id);
    assert_eq!(info.comment, "killed: period \"N\" ended", "{info:?}");
    assert_ne!(info.exit_status, Some(0), "{info:?}");
}
