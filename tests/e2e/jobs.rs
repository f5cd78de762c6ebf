//! A job's life: it runs, writes its output, reports its exit; qdel, the
//! wall clock, holds and ownership act on it.

use crate::harness::{Daemon, NOBODY, alive, is_root, stderr};

#[test]
fn a_job_runs_on_its_nodes_and_writes_its_output() {
    let d = Daemon::start();
    d.script(
        "hello.sh",
        "#!/bin/sh\n#PBS -N hello\necho \"hello from $QMESH_JOBID\"\necho \"nodes $QMESH_NNODES $(wc -l < $PBS_NODEFILE)\"\necho \"queue $QMESH_QUEUE dir $PBS_O_WORKDIR\"\necho oops >&2\n",
    );
    let id = d.qsub(&["-lP", "3", "hello.sh"]);
    assert!(id.starts_with("1."), "job ids count from 1: {id}");
    let info = d.wait_job(&id);
    assert_eq!(info.state_letter, "F");
    assert_eq!(info.exit_status, Some(0));
    let seq = id.split('.').next().unwrap();
    let out = std::fs::read_to_string(d.work.join(format!("hello.o{seq}"))).unwrap();
    assert_eq!(
        out,
        format!(
            "hello from {id}\nnodes 3 3\nqueue batch dir {}\n",
            d.work.display()
        )
    );
    let err = std::fs::read_to_string(d.work.join(format!("hello.e{seq}"))).unwrap();
    assert_eq!(err, "oops\n");

    let full = d.ok("qstat", &["-x", "-f", &id]);
    for line in [
        "    job_state = F\n",
        "    queue = batch\n",
        "    Resource_List.nodes = 3\n",
        "    Resource_List.walltime = 01:00:00\n",
        "    exit_status = 0\n",
    ] {
        assert!(full.contains(line), "missing {line:?} in:\n{full}");
    }
    let exec_host = full
        .lines()
        .find_map(|l| l.strip_prefix("    exec_host = "))
        .expect("exec_host");
    assert_eq!(exec_host.split('+').count(), 3, "{exec_host}");
    for attr in ["qtime", "stime"] {
        assert!(
            full.contains(&format!("    {attr} = ")),
            "no {attr} in:\n{full}"
        );
    }
}

#[test]
fn the_exit_status_is_reported() {
    let d = Daemon::start();
    d.script("fail.sh", "exit 3\n");
    let id = d.qsub(&["fail.sh"]);
    assert_eq!(d.wait_job(&id).exit_status, Some(3));
    let job = d.job_json(&id);
    assert_eq!(job["exit_status"], 3, "{job}");
    assert_eq!(job["job_state"], "F");
    // A finished job is history: qstat without -x does not list it.
    assert!(!d.ok("qstat", &[]).contains(&id));
}

#[test]
fn qdel_kills_the_whole_process_group_of_a_running_job() {
    let d = Daemon::start();
    let started = d.fifo("started");
    d.script(
        "sleeper.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\nsleep 300 &\necho $! > started\nsleep 300\n",
    );
    let id = d.qsub(&["sleeper.sh"]);
    let background: i32 = d.read_fifo(&started).trim().parse().unwrap();
    assert!(alive(background));
    assert_eq!(d.job_json(&id)["job_state"], "R");
    d.ok("qdel", &[&id]);
    let info = d.wait_job(&id);
    assert_eq!(info.state_letter, "F");
    assert_eq!(info.exit_signal, Some(15), "{info:?}");
    assert!(info.comment.contains("deleted"), "{}", info.comment);
    assert!(!alive(background), "the background sleep survived qdel");
}

#[test]
fn a_job_over_its_wall_time_is_killed_and_says_so() {
    let d = Daemon::start();
    d.ok("qmgr", &["-c", "set server kill_delay = 1"]);
    let started = d.fifo("started");
    // Ignores SIGTERM: only the SIGKILL after the grace ends it.
    d.script(
        "stubborn.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\ntrap '' TERM\necho go > started\nsleep 120\nsleep 120\n",
    );
    let id = d.qsub(&["-l", "walltime=2", "stubborn.sh"]);
    d.read_fifo(&started);
    let info = d.wait_job(&id);
    assert_eq!(info.exit_signal, Some(9), "{info:?}");
    assert_eq!(info.exit_status, Some(265));
    assert!(
        info.comment.contains("exceeded its wall time 00:00:02"),
        "{}",
        info.comment
    );
    // As PBS's MOM, in the job's error file, where users look.
    let seq = id.split('.').next().unwrap();
    let err = std::fs::read_to_string(d.work.join(format!("stubborn.sh.e{seq}"))).unwrap();
    assert!(
        err.lines()
            .any(|l| l.starts_with("=>> PBS: job killed: walltime ")
                && l.ends_with(" exceeded limit 2")),
        "{err}"
    );
    assert!(
        info.end_time - info.stime < 60,
        "killed after {} s",
        info.end_time - info.stime
    );
}

#[test]
fn qhold_keeps_a_job_from_starting_and_qrls_lets_it() {
    let d = Daemon::start();
    d.script("quick.sh", "echo ran\n");
    // With scheduling off nothing starts, so qhold meets a queued job.
    d.ok("qmgr", &["-c", "set server scheduling = false"]);
    let submitted_held = d.qsub(&["-h", "quick.sh"]);
    let held_later = d.qsub(&["quick.sh"]);
    d.ok("qhold", &[&held_later]);
    d.ok("qmgr", &["-c", "set server scheduling = true"]);
    // A later job runs to its end, so passes have run past the held ones.
    let later = d.qsub(&["quick.sh"]);
    d.wait_job(&later);
    for id in [&submitted_held, &held_later] {
        let job = d.job_json(id);
        assert_eq!(job["job_state"], "H", "{job}");
        assert_eq!(job["run_count"], 0, "{job}");
        assert_eq!(job["Hold_Types"], "u", "{job}");
        assert_eq!(job["reason"], "Held", "{job}");
    }
    d.ok("qrls", &[&submitted_held, &held_later]);
    assert_eq!(d.wait_job(&submitted_held).exit_status, Some(0));
    assert_eq!(d.wait_job(&held_later).exit_status, Some(0));
}

#[test]
fn a_user_may_not_delete_another_users_job() {
    if !is_root() {
        eprintln!("not root: the access rule is covered by qmesh-core's unit tests");
        return;
    }
    let d = Daemon::start();
    d.script("mine.sh", "echo mine\n");
    let out = d.run_as(NOBODY, "qsub", &["-h", "mine.sh"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let refused = d.run_as(1, "qdel", &[&id]);
    assert_eq!(refused.status.code(), Some(1));
    let msg = stderr(&refused);
    assert_eq!(msg.lines().count(), 1, "{msg}");
    assert!(
        msg.contains(&format!("job {id} belongs to nobody")),
        "{msg}"
    );
    let refused = d.run_as(1, "qrls", &[&id]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(d.job_json(&id)["job_state"], "H");
    let out = d.run_as(NOBODY, "qdel", &[&id]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(d.job_json(&id)["job_state"], "F");
}

#[test]
fn a_job_runs_as_the_user_who_submitted_it() {
    if !is_root() {
        eprintln!("not root: the agent runs jobs as itself");
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let d = Daemon::start();
    d.script("who.sh", "id -u\necho $USER $HOME\n");
    // nobody's home does not exist: Torque's -d names where to start.
    let work = d.work.display().to_string();
    let out = d.run_as(NOBODY, "qsub", &["-N", "who", "-d", &work, "who.sh"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(d.wait_job(&id).exit_status, Some(0));
    let seq = id.split('.').next().unwrap();
    let path = d.work.join(format!("who.o{seq}"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().next(), Some("65534"), "{text}");
    assert!(text.contains("nobody"), "{text}");
    assert_eq!(std::fs::metadata(&path).unwrap().uid(), NOBODY);
}

#[test]
fn options_on_the_command_line_beat_directives() {
    let d = Daemon::start();
    d.script(
        "dir.sh",
        "#!/bin/sh\n#PBS -N fromdirective\n#QSUB -l walltime=10:00\n#PBS -j oe\necho out\necho err >&2\n",
    );
    let id = d.qsub(&["-N", "fromline", "-o", "custom.log", "dir.sh"]);
    d.wait_job(&id);
    let job = d.job_json(&id);
    assert_eq!(job["Job_Name"], "fromline");
    assert_eq!(job["Resource_List"]["walltime"], "00:10:00");
    let log = std::fs::read_to_string(d.work.join("custom.log")).unwrap();
    assert_eq!(log, "out\nerr\n", "-j oe joins stderr into -o");
}

#[test]
fn qhold_and_qrls_take_pbs_hold_lists() {
    let d = Daemon::start();
    d.script("wait.sh", "echo ran\n");
    let id = d.qsub(&["-h", "wait.sh"]);
    let types = |d: &Daemon| d.job_json(&id)["Hold_Types"].as_str().unwrap().to_string();
    // A manager (root) sets an operator and a system hold beside the user's.
    d.ok("qhold", &["-h", "os", &id]);
    assert_eq!(types(&d), "uos");
    let records = crate::tracejob::records(&d, &id);
    assert!(
        records
            .iter()
            .any(|(kind, text)| kind == "H" && text.ends_with("holdtype=os")),
        "the H record names the holds: {records:?}"
    );
    // qrls without -h is qrls -h u, as PBS's.
    d.ok("qrls", &[&id]);
    assert_eq!(types(&d), "os");
    let again = d.run("qrls", &[&id]);
    assert!(!again.status.success(), "no user hold left to release");
    assert!(
        stderr(&again).contains("release from a u hold"),
        "{}",
        stderr(&again)
    );
    d.ok("qrls", &["-h", "o", &id]);
    assert_eq!(d.job_json(&id)["job_state"], "H", "still held (s)");
    let bad = d.run("qhold", &["-h", "x", &id]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("write some of u (user), o (operator), s (system)"),
        "{}",
        stderr(&bad)
    );
    let help = d.ok("qhold", &["--help"]);
    assert!(help.contains("-h <LIST>"), "{help}");
    d.ok("qrls", &["-h", "s", &id]);
    assert_eq!(d.wait_job(&id).exit_status, Some(0));
    if is_root() {
        // A user may not set an operator hold, even on their own job.
        let out = d.run_as(NOBODY, "qsub", &["-h", "wait.sh"]);
        let mine = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let refused = d.run_as(NOBODY, "qhold", &["-h", "o", &mine]);
        assert!(!refused.status.success());
        assert!(
            stderr(&refused).contains("operator"),
            "{}",
            stderr(&refused)
        );
    }
}
