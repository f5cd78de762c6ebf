//! Bad input gets one clear line, a non-zero exit, and changes nothing.

use crate::harness::{Daemon, stderr};

fn refused(d: &Daemon, name: &str, args: &[&str], expect: &str) {
    let out = d.run(name, args);
    let msg = stderr(&out);
    assert!(!out.status.success(), "{name} {args:?} succeeded");
    assert_eq!(msg.trim_end().lines().count(), 1, "not one line: {msg}");
    assert!(
        msg.contains(expect),
        "{name} {args:?}: expected {expect:?} in {msg:?}"
    );
    assert!(
        out.stdout.is_empty(),
        "printed {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn bad_submissions_are_refused_and_queue_nothing() {
    let d = Daemon::start();
    d.script("ok.sh", "echo ok\n");
    let before = d.ok("qmgr", &["-c", "print server"]);
    let out = d.run("qsub", &["--frobnicate", "ok.sh"]);
    assert_eq!(out.status.code(), Some(2), "usage errors exit 2");
    assert!(stderr(&out).contains("--frobnicate"), "{}", stderr(&out));
    refused(
        &d,
        "qsub",
        &["-l", "walltime=1:99", "ok.sh"],
        "bad wall time \"1:99\"",
    );
    refused(&d, "qsub", &["nosuch.sh"], "nosuch.sh");
    refused(
        &d,
        "qsub",
        &["-q", "nosuch", "ok.sh"],
        "queue \"nosuch\" does not exist",
    );
    refused(&d, "qsub", &["-lP", "64", "ok.sh"], "64 nodes");
    refused(
        &d,
        "qsub",
        &["-l", "walltime=48:00:00", "ok.sh"],
        "resources_max.walltime",
    );
    refused(
        &d,
        "qsub",
        &["-l", "gpu=2", "ok.sh"],
        "unknown resource \"gpu\"",
    );
    // The machine has no GPUs: a job asking for some could never run.
    refused(&d, "qsub", &["-l", "gpus=2", "ok.sh"], "ngpus=2");
    refused(
        &d,
        "qsub",
        &["-l", "select=1:ncpus=1", "-l", "ncpus=2", "ok.sh"],
        "put it in the chunk",
    );
    refused(
        &d,
        "qsub",
        &["-u", "someone_else", "ok.sh"],
        "submit as someone_else",
    );
    refused(
        &d,
        "qsub",
        &["-J", "10-1", "ok.sh"],
        "-J 10-1: the first index 10 is above the last 1",
    );
    refused(&d, "qsub", &["-t", "1-200000", "ok.sh"], "max_array_size");
    d.script("bad_directive.sh", "#!/bin/sh\n#PBS -Z\necho\n");
    refused(&d, "qsub", &["bad_directive.sh"], "line 2");
    assert!(d.all_job_ids().is_empty(), "a refused job was queued");
    assert_eq!(d.ok("qmgr", &["-c", "print server"]), before);
}

#[test]
fn bad_qmgr_commands_name_the_word_and_change_nothing() {
    let d = Daemon::start();
    let before = d.ok("qmgr", &["-c", "print server"]);
    refused(&d, "qmgr", &["-c", "crate queue fast"], "\"crate\"");
    refused(
        &d,
        "qmgr",
        &["-c", "set queue batch prioirty = 5"],
        "\"prioirty\"",
    );
    refused(
        &d,
        "qmgr",
        &["-c", "set queue nosuch priority = 5"],
        "queue \"nosuch\" does not exist",
    );
    refused(
        &d,
        "qmgr",
        &["-c", "set queue batch priority = high"],
        "\"high\"",
    );
    assert_eq!(d.ok("qmgr", &["-c", "print server"]), before);
}

#[test]
fn job_commands_refuse_unknown_and_malformed_ids() {
    let d = Daemon::start();
    refused(&d, "qdel", &["99"], "job 99.");
    refused(&d, "qhold", &["abc"], "bad job id \"abc\"");
    refused(&d, "qstat", &["77"], "77");
}

#[test]
fn a_client_without_a_daemon_says_where_it_looked() {
    let d = Daemon::start();
    let out = d
        .cmd("qstat")
        .env("QMESH_SOCKET", d.root.path().join("nowhere.sock"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let msg = stderr(&out);
    assert!(
        msg.contains("nowhere.sock") && msg.contains("is the daemon running"),
        "{msg}"
    );
}

/// What one submission may carry is bounded, each limit refused in its own
/// words and nothing queued: a 5 MiB script, a 300-character name, a 5 kB
/// resource value; a 20 MiB script (past what the daemon decodes at all)
/// is refused too, and the daemon goes on.
#[test]
fn oversized_submissions_are_refused_with_the_limit() {
    let d = Daemon::start();
    d.script("ok.sh", "echo ok\n");
    let mut big = String::from("#!/bin/sh\n");
    while big.len() < 5 << 20 {
        big.push_str("# padding padding padding padding padding padding padding\n");
    }
    d.script("big.sh", &big);
    refused(&d, "qsub", &["big.sh"], "a script may be at most 4 MiB");
    let name = "n".repeat(300);
    refused(&d, "qsub", &["-N", &name, "ok.sh"], "-N takes at most 236");
    let value = format!("software={}", "x".repeat(5000));
    refused(
        &d,
        "qsub",
        &["-l", &value, "ok.sh"],
        "a value may be at most 4096",
    );
    let mut huge = big.clone();
    while huge.len() < 20 << 20 {
        huge.push_str(&big);
    }
    d.script("huge.sh", &huge);
    let out = d.run("qsub", &["huge.sh"]);
    assert!(!out.status.success(), "a 20 MiB script was queued");
    assert!(
        d.ok("qstat", &[]).trim().is_empty(),
        "nothing queued: {}",
        d.ok("qstat", &[])
    );
    let id = d.qsub(&["ok.sh"]);
    assert!(!id.is_empty(), "the daemon goes on");
}
