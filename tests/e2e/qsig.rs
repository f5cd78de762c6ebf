//! qsig: a signal reaches a running job's processes and nothing else
//! happens to the job; queued jobs and other users' jobs are refused.

use crate::harness::{Daemon, NOBODY, is_root, stderr};

/// Traps USR1: writes `got-usr1` and exits 0. Says it is ready (trap set)
/// through the FIFO `started`.
const TRAPPER: &str = "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\ntrap 'echo usr1 > got.tmp && mv got.tmp got-usr1; exit 0' USR1\necho go > started\nwhile :; do sleep 1; done\n";

#[test]
fn a_job_that_traps_usr1_gets_it_and_ends_normally() {
    let d = Daemon::start();
    let started = d.fifo("started");
    d.script("trapper.sh", TRAPPER);
    let id = d.qsub(&["trapper.sh"]);
    d.read_fifo(&started);
    assert_eq!(d.job_json(&id)["job_state"], "R");
    let out = d.ok("qsig", &["-s", "USR1", &id]);
    assert_eq!(out, "", "qsig prints nothing when it worked");
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}");
    assert_eq!(info.exit_signal, None, "the job was not killed: {info:?}");
    let got = std::fs::read_to_string(d.work.join("got-usr1")).expect("the trap ran");
    assert_eq!(got, "usr1\n");
    // Once it has ended, a signal is refused with the job's state.
    let out = d.run("qsig", &["-s", "10", &id]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!("qsig: job {id} is not running (state F); only running jobs can be signalled\n")
    );
}

#[test]
fn queued_jobs_and_unknown_signals_are_refused() {
    let d = Daemon::start();
    d.ok("qmgr", &["-c", "set server scheduling = false"]);
    d.script("quick.sh", "echo ran\n");
    let id = d.qsub(&["quick.sh"]);
    let out = d.run("qsig", &["-s", "SIGUSR1", &id]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!("qsig: job {id} is not running (state Q); only running jobs can be signalled\n")
    );
    let out = d.run("qsig", &["-s", "FOO", &id]);
    assert_eq!(out.status.code(), Some(1));
    let msg = stderr(&out);
    assert!(
        msg.starts_with("qsig: bad signal \"FOO\": not a signal name;"),
        "{msg}"
    );
    // The queued job is untouched.
    assert_eq!(d.job_json(&id)["job_state"], "Q");
}

#[test]
fn another_users_job_is_refused_and_the_owners_sigterm_ends_it() {
    if !is_root() {
        // The access rule is covered by qmesh-core's signal tests.
        eprintln!("not root: cannot run commands as two users");
        return;
    }
    let d = Daemon::start();
    let started = d.fifo("started");
    d.script(
        "sleeper.sh",
        "#!/bin/sh\necho go > started\nwhile :; do sleep 1; done\n",
    );
    // nobody's home does not exist: Torque's -d names where to start.
    let work = d.work.display().to_string();
    let out = d.run_as(NOBODY, "qsub", &["-d", &work, "sleeper.sh"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    d.read_fifo(&started);
    let refused = d.run_as(1, "qsig", &["-s", "USR1", &id]);
    assert_eq!(refused.status.code(), Some(1));
    let msg = stderr(&refused);
    assert_eq!(
        msg,
        format!(
            "qsig: job {id} belongs to nobody; only its owner, an operator or a manager may signal it\n"
        )
    );
    assert_eq!(d.job_json(&id)["job_state"], "R");
    // The owner's qsig, with PBS's default signal SIGTERM, ends it.
    let out = d.run_as(NOBODY, "qsig", &[&id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let info = d.wait_job(&id);
    assert_eq!(info.exit_signal, Some(15), "{info:?}");
}

/// qmsg: a line lands in the running job's error file by default, in its
/// output file with -O, once in a joined file with both; the job's own
/// lines are kept around it. A queued job and another user are refused.
#[test]
fn qmsg_writes_into_the_files_the_running_job_has_open() {
    let d = Daemon::start();
    let started = d.fifo("started");
    let go = d.fifo("go");
    d.script(
        "talker.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho out-before\necho err-before >&2\necho go > started\nread x < go\necho out-after\n",
    );
    let id = d.qsub(&["-N", "talker", "talker.sh"]);
    d.read_fifo(&started);
    // qmsg answers once the job's agent has the line (as qsig does); the
    // job goes on once the agent has written it.
    let seq = id.split('.').next().unwrap();
    let (out_file, err_file) = (
        d.work.join(format!("talker.o{seq}")),
        d.work.join(format!("talker.e{seq}")),
    );
    assert_eq!(d.ok("qmsg", &["to the error file", &id]), "");
    d.await_in_log(&err_file, "to the error file", 1);
    assert_eq!(d.ok("qmsg", &["-O", "to the output file", &id]), "");
    d.await_in_log(&out_file, "to the output file", 1);
    d.write_fifo(&go, "x\n");
    assert_eq!(d.wait_job(&id).exit_status, Some(0));
    let out = std::fs::read_to_string(&out_file).unwrap();
    let err = std::fs::read_to_string(&err_file).unwrap();
    assert_eq!(out, "out-before\nto the output file\nout-after\n");
    assert_eq!(err, "err-before\nto the error file\n");

    // Joined (-j oe): -O -E writes the line once.
    let id = d.qsub(&["-N", "joined", "-j", "oe", "talker.sh"]);
    d.read_fifo(&started);
    let seq = id.split('.').next().unwrap();
    let joined_file = d.work.join(format!("joined.o{seq}"));
    assert_eq!(d.ok("qmsg", &["-O", "-E", "once", &id]), "");
    d.await_in_log(&joined_file, "once", 1);
    d.write_fifo(&go, "x\n");
    assert_eq!(d.wait_job(&id).exit_status, Some(0));
    let joined = std::fs::read_to_string(&joined_file).unwrap();
    assert_eq!(joined.matches("once\n").count(), 1, "{joined}");

    // Refused: a finished job, and (as root) another user.
    let out = d.run("qmsg", &["late", &id]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!("qmsg: job {id} is not running (state F); only running jobs take messages\n")
    );
    if is_root() {
        let id = d.qsub(&["-N", "talker", "talker.sh"]);
        d.read_fifo(&started);
        let out = d.run_as(NOBODY, "qmsg", &["not mine", &id]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains("only its owner, an operator or a manager"),
            "{}",
            stderr(&out)
        );
        d.write_fifo(&go, "x\n");
        assert_eq!(d.wait_job(&id).exit_status, Some(0));
    }
}
