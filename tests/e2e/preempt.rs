//! Preemption through the real commands, on the embedded 4x4 mesh: a job
//! of an express queue (priority 200, at or above preempt_queue_prio)
//! submitted while a low job holds the whole machine starts at once by
//! preempting it. With `preempt_order = S` the low job is frozen while the
//! express job runs (the express job watches it not move) and goes on
//! where it stopped once the express job ends; with R it is killed,
//! queued again and run a second time after the express job; with D it
//! is killed for good; with C the agent runs the site's checkpoint
//! program (`qmesh-agent --checkpoint`) before the kill and the job is
//! queued again. Each express job checks from inside that the low job's
//! process is stopped or gone.

use crate::cluster::Cluster;
use crate::harness::Daemon;
use crate::tracejob::records;

/// A low job over the whole mesh: writes its pid and a line per start to
/// `runs`, then ticks into `ticks` (30 ticks a tenth of a second apart),
/// telling the test through the fifo `started` where there is one.
const LOW: &str = "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho $$ > lowpid\necho start >> runs\n\
if [ -p started ]; then echo go > started; rm -f started; fi\n\
i=0\nwhile [ $i -lt 30 ]; do i=$((i+1)); echo $i >> ticks; sleep 0.1; done\n";

/// The express job: the low job's ticks now and 1.5 s later, and whether
/// its process is still there (`kill -0`), into `express`.
const EXPRESS: &str = "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\n\
a=$(wc -l < ticks)\nif [ -p xstarted ]; then echo go > xstarted; fi\nsleep 1.5\nb=$(wc -l < ticks)\n\
if kill -0 $(cat lowpid) 2>/dev/null; then alive=yes; else alive=no; fi\n\
echo \"$a $b $alive\" > express\n";

fn setup(d: &Daemon, order: &str) {
    d.ok(
        "qmgr",
        &[
            "-c",
            "create queue express queue_type = e, priority = 200, enabled = t, started = t",
        ],
    );
    d.ok(
        "qmgr",
        &["-c", &format!("set sched preempt_order = {order}")],
    );
    d.script("low.sh", LOW);
    d.script("express.sh", EXPRESS);
}

/// A low job over `low` nodes, then, once it runs, an express job of
/// `express` nodes: their ids.
fn low_then_express(d: &Daemon, low: u32, express: u32) -> (String, String) {
    let started = d.fifo("started");
    let low = d.qsub(&["-l", &format!("nodes={low},walltime=00:01:00"), "low.sh"]);
    d.read_fifo(&started);
    let express = d.qsub(&[
        "-q",
        "express",
        "-l",
        &format!("nodes={express},walltime=00:00:30"),
        "express.sh",
    ]);
    (low, express)
}

/// (It tells the test it runs through the fifo `xstarted` where there is
/// one.)
///
/// What the express job saw: ticks before and after, and whether the low
/// job's process was there.
fn seen(d: &Daemon) -> (usize, usize, String) {
    let text = std::fs::read_to_string(d.work.join("express")).expect("the express job wrote");
    let words: Vec<&str> = text.split_whitespace().collect();
    (
        words[0].parse().expect("a count"),
        words[1].parse().expect("a count"),
        words[2].to_string(),
    )
}

fn runs(d: &Daemon) -> usize {
    std::fs::read_to_string(d.work.join("runs"))
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn an_express_job_suspends_a_low_job_which_resumes_where_it_stopped() {
    let mut d = Daemon::start();
    setup(&d, "S");
    let xstarted = d.fifo("xstarted");
    let (low, express) = low_then_express(&d, 16, 4);
    d.read_fifo(&xstarted);
    let job = d.job_json(&low);
    assert_eq!(job["job_state"], "S", "{job:#}");
    let comment = job["comment"].as_str().unwrap_or_default();
    assert!(
        comment.contains(&format!("preempted by job {express}")),
        "{comment}"
    );
    // A restart while it is lent: it stays suspended, holding no node,
    // and still resumes once the express job is gone.
    d.kill9();
    d.spawn();
    assert_eq!(d.job_json(&low)["job_state"], "S");
    let info = d.wait_job(&express);
    assert_eq!(info.exit_status, Some(0), "{info:?}\n{}", d.log());
    let (before, after, alive) = seen(&d);
    assert_eq!(before, after, "the low job did not move while suspended");
    assert_eq!(alive, "yes", "suspended, not killed");
    assert!(before < 30, "it was stopped before its end ({before})");
    // It resumes on its nodes and ends normally, once.
    let info = d.wait_job(&low);
    assert_eq!(info.exit_status, Some(0), "{info:?}\n{}", d.log());
    assert_eq!(runs(&d), 1);
    let ticks = std::fs::read_to_string(d.work.join("ticks")).unwrap();
    assert_eq!(ticks.lines().count(), 30, "it went on where it stopped");
    let kinds: Vec<String> = records(&d, &low).into_iter().map(|(k, _)| k).collect();
    assert_eq!(kinds, ["Q", "S", "z", "r", "E"], "{}", d.log());
    let trace = d.ok("tracejob", &["-n", "2", &low]);
    assert!(trace.contains("preempted by job"), "{trace}");
}

#[test]
fn an_express_job_requeues_then_deletes_a_low_job_and_runs_when_it_is_gone() {
    let d = Daemon::start();
    setup(&d, "R");
    let (low, express) = low_then_express(&d, 16, 4);
    let info = d.wait_job(&express);
    assert_eq!(info.exit_status, Some(0), "{info:?}\n{}", d.log());
    let (_, _, alive) = seen(&d);
    assert_eq!(
        alive, "no",
        "the low job was gone before the express job ran"
    );
    // Requeued, it runs again from the start after the express job.
    let info = d.wait_job(&low);
    assert_eq!(info.exit_status, Some(0), "{info:?}\n{}", d.log());
    assert_eq!(runs(&d), 2, "it ran twice");
    let job = d.job_json(&low);
    assert_eq!(job["run_count"], 2, "{job:#}");

    // D: the low job is killed for good.
    d.ok("qmgr", &["-c", "set server preempt_order = D"]);
    std::fs::remove_file(d.work.join("express")).unwrap();
    let (low, express) = low_then_express(&d, 16, 4);
    assert_eq!(d.wait_job(&express).exit_status, Some(0), "{}", d.log());
    let (_, _, alive) = seen(&d);
    assert_eq!(alive, "no");
    let info = d.wait_job(&low);
    assert_ne!(info.exit_status, Some(0), "killed: {info:?}");
    assert_eq!(runs(&d), 3, "it did not run again");
    let comment = d.job_json(&low)["comment"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(comment.contains("preemption by job"), "{comment}");
}

#[test]
fn a_checkpointed_job_runs_the_sites_program_then_is_requeued() {
    let hooks = |d: &Daemon| {
        let log = d.work.join("checkpointed");
        d.script(
            "checkpoint",
            &format!(
                "#!/bin/sh\nkill -0 \"$PBS_SID\" && up=alive\necho \"$1 $2 sid=$PBS_SID $up\" >> {}\n",
                log.display()
            ),
        );
        (
            "#!/bin/sh\nexit 0\n".to_string(),
            "#!/bin/sh\nexit 0\n".to_string(),
        )
    };
    let c = Cluster::start(1, 4, 30, Some(&hooks));
    let d = &c.d;
    setup(d, "C");
    let (low, express) = low_then_express(d, 4, 2);
    let pid = std::fs::read_to_string(d.work.join("lowpid")).unwrap();
    assert_eq!(d.wait_job(&express).exit_status, Some(0), "{}", d.log());
    let (_, _, alive) = seen(d);
    assert_eq!(alive, "no", "checkpointed, then killed");
    let said = std::fs::read_to_string(d.work.join("checkpointed")).unwrap();
    let words: Vec<&str> = said.split_whitespace().collect();
    assert_eq!(words[0], low, "{said}");
    assert_eq!(
        words[2],
        format!("sid={}", pid.trim()),
        "its session: {said}"
    );
    assert_eq!(
        words.get(3),
        Some(&"alive"),
        "it ran before the kill: {said}"
    );
    // Queued again, it runs a second time after the express job.
    assert_eq!(d.wait_job(&low).exit_status, Some(0), "{}", d.log());
    assert_eq!(runs(d), 2);
}
