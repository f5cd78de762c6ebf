//! Period ends against a real daemon and agent: a running job whose
//! queue's period ends gets its warning signal, then its queue's action.
//!
//! The calendar is set relative to the test's clock: the period the queue
//! runs in is redefined to a day two days off, so it is over now.

use std::path::PathBuf;

use chrono::{Datelike, Utc};

use crate::harness::Daemon;

/// First run: says it started, writes `warned` on USR1 and `ended` on
/// TERM (each a FIFO the test reads). A later run ends at once.
const CHECKPOINTER: &str = "#!/bin/sh
cd \"$PBS_O_WORKDIR\"
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

/// A checkpointing job running in `pq`; its warning and end FIFOs.
fn running_checkpointer(d: &Daemon) -> (String, PathBuf, PathBuf) {
    let started = d.fifo("started");
    let warned = d.fifo("warned");
    let ended = d.fifo("ended");
    d.script("ckpt.sh", CHECKPOINTER);
    let id = d.qsub(&["-q", "pq", "-l", "walltime=1:00:00", "ckpt.sh"]);
    d.read_fifo(&started);
    (id, warned, ended)
}

#[test]
fn a_job_at_its_period_end_is_warned_then_requeued_and_runs_in_the_next() {
    let d = daemon_with_period_queue("requeue");
    let (id, warned, ended) = running_checkpointer(&d);

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
    let (id, warned, ended) = running_checkpointer(&d);
    // The queue is moved to a period that is not on now.
    let day = day_after_tomorrow();
    d.ok("qmgr", &["-c", &format!("set calendar period.N = {day}")]);
    d.ok("qmgr", &["-c", "set queue pq periods = N"]);
    d.read_fifo(&warned);
    d.read_fifo(&ended);
    let info = d.wait_job(&id);
    assert_eq!(
        info.comment, "killed at the end of period \"N\"",
        "{info:?}"
    );
    assert_ne!(info.exit_status, Some(0), "{info:?}");

    // A new job waits for N, and says when it begins. (A later job in
    // batch starts: the pass that saw the first is done.)
    let waiting = d.qsub(&["-q", "pq", "ckpt.sh"]);
    let later = d.fifo("later");
    d.script(
        "later.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > later\n",
    );
    d.qsub(&["-q", "batch", "later.sh"]);
    d.read_fifo(&later);
    let job = d.job_json(&waiting);
    assert_eq!(job["reason"], "OutsidePeriod", "{job}");
    let comment = job["comment"].as_str().unwrap_or_default();
    assert!(
        comment.contains("its queue runs only in N; the next begins 20"),
        "{comment}"
    );
}

/// Two flat sets of two nodes on the local agent: `s1` (a0, a1) and `s2`
/// (b0, b1); queue `long`.
const TWO_SETS: &str = r#"
[agents]
local = true
local_host = "localhost"

[server]
default_queue = "long"
scheduler_iteration = "1:00:00"

[[queue]]
name = "long"
max_walltime = "24:00:00"

[[node_set]]
name = "s1"
nodes = [{ name = "a0", host = "localhost" }, { name = "a1", host = "localhost" }]

[[node_set]]
name = "s2"
nodes = [{ name = "b0", host = "localhost" }, { name = "b1", host = "localhost" }]
"#;

/// Prime time as one span relative to the test's clock: from `from`
/// minutes from now to `to` minutes from now (either may be negative).
fn prime_span(from: i64, to: i64) -> String {
    let now = Utc::now();
    let a = now + chrono::Duration::minutes(from);
    let b = now + chrono::Duration::minutes(to);
    format!(
        "{} {}-{}",
        a.weekday(),
        a.format("%H:%M"),
        b.format("%H:%M")
    )
}

/// SDSC's split: the pool is s1 and s2, but only s1 in prime time, when
/// s2 serves the short queue alone.
fn sdsc_daemon(prime: &str) -> Daemon {
    let d = Daemon::start_with(Some(TWO_SETS));
    for cmd in [
        format!("set calendar prime_time = \"{prime}\""),
        "create node_group pool sets = \"s1,s2\"".to_string(),
        "set node_group pool sets.prime = s1".to_string(),
        "create node_group shortg sets.prime = s2".to_string(),
        "set queue long node_group = pool, period_end = kill".to_string(),
        "create queue short queue_type = execution, enabled = true, started = true, \
         node_group = shortg"
            .to_string(),
    ] {
        d.ok("qmgr", &["-c", &cmd]);
    }
    d
}

fn exec_host(d: &Daemon, id: &str) -> String {
    d.job_json(id)["exec_host"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn prime_time_that_began_an_hour_ago_keeps_the_short_set_out_of_the_pool_until_it_ends() {
    let d = sdsc_daemon(&prime_span(-60, 60));
    let wide_started = d.fifo("wide");
    let short_started = d.fifo("short");
    d.script(
        "wide.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > wide\n",
    );
    d.script(
        "short.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > short\n",
    );
    let wide = d.qsub(&["-q", "long", "-l", "nodes=4,walltime=0:30:00", "wide.sh"]);
    let short = d.qsub(&["-q", "short", "-l", "nodes=2,walltime=0:10:00", "short.sh"]);
    d.read_fifo(&short_started);
    assert!(
        exec_host(&d, &short).contains("b0"),
        "the short job runs on s2"
    );
    let job = d.job_json(&wide);
    assert_eq!(job["reason"], "NodesDown", "the pool is s1 alone: {job}");
    d.wait_job(&short);

    // Prime time ended a minute ago: s2 is back in the pool.
    let span = prime_span(-120, -1);
    d.ok(
        "qmgr",
        &["-c", &format!("set calendar prime_time = \"{span}\"")],
    );
    d.read_fifo(&wide_started);
    let hosts = exec_host(&d, &wide);
    for node in ["a0", "a1", "b0", "b1"] {
        assert!(hosts.contains(node), "{hosts}");
    }
}

#[test]
fn a_long_job_does_not_get_the_set_that_goes_to_short_jobs_when_prime_time_begins() {
    // Prime time begins in an hour; s2 then leaves the pool, and the long
    // queue's jobs are killed at its period ends.
    let d = sdsc_daemon(&prime_span(60, 180));
    let a_started = d.fifo("a");
    let c_started = d.fifo("c");
    d.script(
        "a.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > a\nexec sleep 600\n",
    );
    d.script("b.sh", "#!/bin/sh\nexit 0\n");
    d.script(
        "c.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > c\nexec sleep 600\n",
    );
    let a = d.qsub(&["-q", "long", "-l", "nodes=2,walltime=3:00:00", "a.sh"]);
    d.read_fifo(&a_started);
    assert!(exec_host(&d, &a).contains("a0"), "three hours: not on s2");
    let b = d.qsub(&["-q", "long", "-l", "nodes=2,walltime=2:00:00", "b.sh"]);
    let c = d.qsub(&["-q", "long", "-l", "nodes=2,walltime=0:30:00", "c.sh"]);
    d.read_fifo(&c_started);
    assert!(
        exec_host(&d, &c).contains("b0"),
        "30 minutes fit before prime"
    );
    let job = d.job_json(&b);
    assert_eq!(job["reason"], "PeriodEnd", "{job}");
    let comment = job["comment"].as_str().unwrap_or_default();
    assert!(
        comment
            .contains("the start of period \"prime\" (node set \"s2\" leaves node group \"pool\")"),
        "{comment}"
    );
}
