//! qmesh's scontrol beside the real one: the same host lists through both
//! (`show hostnames`, `hostlist`, `hostlistsorted`, the job's
//! `SLURM_NODELIST`), and the same scripts submitted to both, a completed,
//! a running and a pending job, whose `show job` must have Slurm's keys on
//! Slurm's lines in Slurm's order (values that depend on the run are not
//! compared).

use std::time::Duration;

use crate::harness::{self, Daemon};
use crate::rig::{Slurm, skipped, slurm};

/// Lists job scripts write, and the forms the oracle showed to matter:
/// zero padding, order, duplicates, several brackets, white space.
const LISTS: &[&str] = &[
    "n[1-3,7],m2",
    "a[01-10]",
    "a[01-09],a10",
    "n[1-2]-ib[3-4]",
    "rack[1-2]n[01-02]",
    "b[9-11]",
    "n2,n1,n1",
    "c01,c2,c003",
    "n[001-3]",
    "n1,n2,m,n3",
    "n[1-2] m1",
    "x",
    "b10,a1,b9,x,a01",
];

/// Runs our scontrol with `args` and `env`; status, stdout, stderr.
fn ours(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut cmd = std::process::Command::new(harness::bin("scontrol"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("SLURM_")) {
        cmd.env_remove(k);
    }
    let out = cmd
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run scontrol");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn theirs(s: &Slurm, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = s
        .cmd("scontrol")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run Slurm's scontrol");
    assert!(
        out.status.success(),
        "scontrol {args:?}: {}",
        crate::rig::output_text(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn host_lists_come_out_as_the_real_scontrols() {
    if skipped() {
        return;
    }
    let s = slurm();
    for list in LISTS {
        for entity in ["hostnames", "hostlist", "hostlistsorted"] {
            let (code, out, err) = ours(&["show", entity, list], &[]);
            assert_eq!(code, Some(0), "{entity} {list}: {err}");
            assert_eq!(
                out,
                theirs(s, &["show", entity, list], &[]),
                "show {entity} {list}"
            );
        }
    }
    // Inside a job: the job's list, from its environment.
    let env = [("SLURM_NODELIST", "q[1-2],r7")];
    assert_eq!(
        ours(&["show", "hostnames"], &env).1,
        theirs(s, &["show", "hostnames"], &env)
    );
    assert_eq!(ours(&["sho", "hostn"], &env).1, "q1\nq2\nr7\n");
    // Slurm says "Invalid hostlist" (and exits 0); qmesh's exits 1.
    let (code, out, err) = ours(&["show", "hostnames", "n[3-1]"], &[]);
    assert_eq!((code, out.as_str()), (Some(1), ""));
    assert!(err.contains("Invalid hostlist: n[3-1]"), "{err}");
}

/// Keys whose values do not depend on the run or the machine: qmesh's
/// must be Slurm's. (`Scheduler=` does: Slurm writes `Backfill` when its
/// backfill scheduler started the job, `Main` when its main loop did,
/// which depends on what else its queue holds at that instant.)
const SAME_VALUES: &[&str] = &[
    "JobName",
    "MCS_label",
    "Nice",
    "JobState",
    "Reason",
    "Dependency",
    "Requeue",
    "Restarts",
    "BatchFlag",
    "Reboot",
    "ExitCode",
    "TimeLimit",
    "TimeMin",
    "Deadline",
    "SuspendTime",
    "SecsPreSuspend",
    "Partition",
    "ReqNodeList",
    "ExcNodeList",
    "NumNodes",
    "NumCPUs",
    "NumTasks",
    "CPUs/Task",
    "ReqB:S:C:T",
    "Socks/Node",
    "NtasksPerN:B:S:C",
    "CoreSpec",
    "MinCPUsNode",
    "MinTmpDiskNode",
    "Features",
    "DelayBoot",
    "OverSubscribe",
    "Contiguous",
    "Licenses",
    "Network",
    "StdIn",
    "Power",
];

/// The value of `key` in a record.
fn value(text: &str, key: &str) -> Option<String> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .map(String::from)
}

/// Keeps what Slurm printed in `target/tmp/slurm-oracle/NAME`.
fn record(name: &str, text: &str) {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("slurm-oracle");
    std::fs::create_dir_all(&dir).expect("the record's directory");
    std::fs::write(dir.join(name), text).expect("write the record");
}

/// Each line's keys, in order.
fn line_keys(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| {
            l.split(' ')
                .filter_map(|w| w.split_once('=').map(|(k, _)| k.to_string()))
                .collect()
        })
        .collect()
}

const DONE: &str =
    "#!/bin/sh\n#SBATCH -J twin-done\n#SBATCH -t 5\n#SBATCH -o %x-%j.out\necho done\n";
const WAITER: &str =
    "#!/bin/sh\n#SBATCH -J twin-wait\n#SBATCH -t 5\necho running > started\nsleep 60\n";

/// Submits in `dir` through Slurm's sbatch; the id.
fn slurm_submit(s: &Slurm, dir: &std::path::Path, args: &[&str]) -> String {
    let out = s
        .cmd("sbatch")
        .arg("--parsable")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run sbatch");
    assert!(out.status.success(), "{}", crate::rig::output_text(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn show_job_has_slurms_keys_for_a_completed_a_running_and_a_pending_job() {
    if skipped() {
        return;
    }
    // Slurm.
    let s = slurm();
    let dir = s.workdir("scontrol-twin");
    std::fs::write(dir.join("done.sh"), DONE).unwrap();
    std::fs::write(dir.join("wait.sh"), WAITER).unwrap();
    let done = slurm_submit(s, &dir, &["done.sh"]);
    s.await_state(&done, "COMPLETED", Duration::from_secs(60));
    let running = slurm_submit(s, &dir, &["wait.sh"]);
    s.await_state(&running, "RUNNING", Duration::from_secs(60));
    let pending = slurm_submit(s, &dir, &["-H", "-n", "2", "done.sh"]);
    let slurm_shows = |id: &str| theirs(s, &["show", "job", id], &[]);
    let slurm_records = [
        slurm_shows(&done),
        slurm_shows(&running),
        slurm_shows(&pending),
    ];
    let slurm_one_line = theirs(s, &["-o", "show", "job", &done], &[]);
    s.run("scancel", &[&running, &pending]);
    for (name, text) in ["done", "running", "pending"].iter().zip(&slurm_records) {
        record(&format!("scontrol-twin-{name}.txt"), text);
    }

    // qmesh.
    let d = Daemon::start();
    d.ok(
        "qmgr",
        &[
            "-c",
            "create queue debug queue_type = e, enabled = t, started = t",
        ],
    );
    d.script("done.sh", DONE);
    let started = d.fifo("started");
    d.script("wait.sh", &WAITER.replace("sleep 60", "sleep 30"));
    let q_done = d
        .ok("sbatch", &["--parsable", "-p", "debug", "done.sh"])
        .trim()
        .to_string();
    d.wait_job(&d.full_id(&q_done));
    let q_running = d
        .ok("sbatch", &["--parsable", "-p", "debug", "wait.sh"])
        .trim()
        .to_string();
    d.read_fifo(&started);
    let q_pending = d
        .ok(
            "sbatch",
            &["--parsable", "-p", "debug", "-H", "-n", "2", "done.sh"],
        )
        .trim()
        .to_string();
    let ours = [&q_done, &q_running, &q_pending].map(|id| d.ok("scontrol", &["show", "job", id]));

    for ((what, theirs), ours) in ["completed", "running", "pending"]
        .iter()
        .zip(&slurm_records)
        .zip(&ours)
    {
        assert_eq!(
            line_keys(ours),
            line_keys(theirs),
            "the {what} job's keys, line by line:\nqmesh:\n{ours}\nSlurm:\n{theirs}"
        );
        assert!(ours.ends_with("   Power=\n   \n\n"), "{ours:?}");
        for key in SAME_VALUES {
            assert_eq!(
                value(ours, key),
                value(theirs, key),
                "the {what} job's {key}:\nqmesh:\n{ours}\nSlurm:\n{theirs}"
            );
        }
    }
    assert!(ours[0].contains(" JobState=COMPLETED ") && ours[0].contains("ExitCode=0:0"));
    assert!(
        ours[0].contains(" Scheduler=Main\n"),
        "qmesh's pass is its one scheduler"
    );
    assert!(ours[0].contains(&format!(
        "StdOut={}/twin-done-{q_done}.out",
        d.work.display()
    )));
    assert!(ours[1].contains(" JobState=RUNNING ") && ours[1].contains("BatchHost="));
    assert!(
        ours[2].contains("JobState=PENDING Reason=JobHeldUser"),
        "{}",
        ours[2]
    );
    let one = d.ok("scontrol", &["-o", "show", "job", &q_done]);
    assert_eq!(line_keys(&one), line_keys(&slurm_one_line));
    d.ok("qdel", &[&d.full_id(&q_running), &d.full_id(&q_pending)]);
}
