//! Site hooks through the real commands: qmgr imports an executable from
//! a file where qmgr runs, qsub's submissions and qalter's changes pass
//! through it (rejected with the site's words, rewritten to another
//! queue), a hook that hangs is killed at its alarm while the daemon goes
//! on answering others, one that prints garbage is a clear error, and a
//! periodic hook runs on its own.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::harness::{Daemon, stderr};

/// Routes jobs named dbg* to the queue "debug"; refuses jobs named
/// reject* in the site's words; others pass as they are.
const FILTER: &str = r#"#!/bin/sh
doc=$(cat)
case "$doc" in
  *'"Job_Name":"reject'*) echo "jobs named reject* are not welcome here" >&2; exit 1 ;;
  *'"Job_Name":"dbg'*) echo '{"job": {"queue": "debug", "Resource_List": {"walltime": "00:05:00"}}}' ;;
esac
exit 0
"#;

fn make_debug_queue(d: &Daemon) {
    d.ok(
        "qmgr",
        &[
            "-c",
            "create queue debug queue_type = execution, enabled = true, started = true",
        ],
    );
}

fn import(d: &Daemon, hook: &str, file: &str) {
    let path = d.work.join(file);
    d.ok(
        "qmgr",
        &[
            "-c",
            &format!(
                "import hook {hook} application/x-executable default {}",
                path.display()
            ),
        ],
    );
}

fn count_jobs(d: &Daemon) -> usize {
    d.ok("qselect", &[]).lines().count()
}

#[test]
fn a_queuejob_hook_rejects_rewrites_and_its_faults_are_clear() {
    let d = Daemon::start();
    make_debug_queue(&d);
    d.script("filter.sh", FILTER);
    d.script("job.sh", "#!/bin/sh\necho ran\n");
    d.ok("qmgr", &["-c", "create hook filter event = queuejob"]);
    import(&d, "filter", "filter.sh");

    // Rejected, in the site's words, and nothing queued.
    let out = d.run("qsub", &["-N", "reject_me", "job.sh"]);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(
        stderr(&out),
        "qsub: jobs named reject* are not welcome here\n"
    );
    assert_eq!(count_jobs(&d), 0);

    // Rewritten: sent to debug with the site's wall time; it runs there.
    let id = d.qsub(&["-N", "dbg1", "-l", "walltime=1:00:00", "job.sh"]);
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}");
    let job = d.job_json(&id);
    assert_eq!(job["queue"], "debug", "{job}");
    assert_eq!(job["Resource_List"]["walltime"], "00:05:00", "{job}");
    // Others pass as they are.
    let plain = d.qsub(&["-N", "plain", "job.sh"]);
    assert_eq!(d.job_json(&plain)["queue"], "batch");

    // A hook that hangs is killed at its alarm; meanwhile the daemon
    // answers everyone else.
    let hook_began = d.work.join("hook_began");
    d.script(
        "hang.sh",
        &format!(
            "#!/bin/sh\necho began >> {}\nsleep 30 &\nsleep 30\n",
            hook_began.display()
        ),
    );
    d.ok("qmgr", &["-c", "set hook filter alarm = 3"]);
    import(&d, "filter", "hang.sh");
    let began = Instant::now();
    let mut hung = d
        .cmd("qsub")
        .args(["-N", "waits", "job.sh"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("qsub");
    d.await_in_log(&hook_began, "began", 1);
    let listed = d.ok("qstat", &["-B"]);
    assert!(listed.contains("Server"), "{listed}");
    assert!(
        hung.try_wait().expect("qsub's state").is_none(),
        "qstat answered while qsub's hook still ran"
    );
    let out = hung.wait_with_output().expect("qsub's end");
    assert!(
        began.elapsed() >= Duration::from_secs(3),
        "killed at its alarm, not before"
    );
    assert_ne!(out.status.code(), Some(0));
    let said = stderr(&out);
    assert!(
        said.contains("hook \"filter\" did not answer within its alarm (3 s) and was killed"),
        "{said}"
    );

    // Garbage on its output: a clear error naming the hook.
    d.script(
        "garbage.sh",
        "#!/bin/sh\ncat >/dev/null\necho 'OK, fine by me'\n",
    );
    import(&d, "filter", "garbage.sh");
    let out = d.run("qsub", &["job.sh"]);
    assert_ne!(out.status.code(), Some(0));
    let said = stderr(&out);
    assert!(
        said.contains("hook \"filter\" printed what is not JSON")
            && said.contains("tell the administrator"),
        "{said}"
    );
    // Disabled, it is out of the way.
    d.ok("qmgr", &["-c", "set hook filter enabled = false"]);
    let last = d.qsub(&["job.sh"]);
    let number = |id: &str| id.split('.').next().unwrap().parse::<u64>().unwrap();
    assert_eq!(
        number(&last),
        number(&plain) + 1,
        "the refused submissions made no job"
    );
    let log = d.log();
    assert!(log.contains("did not answer within its alarm"), "{log}");
}

#[test]
fn a_modifyjob_hook_judges_qalter_and_hooks_print_and_export() {
    let d = Daemon::start();
    d.script(
        "cap.sh",
        "#!/bin/sh\nif grep -q '\"walltime\":\"[1-9][0-9]:'; then\n  \
         echo 'walltime above 9 hours needs the long queue' >&2; exit 2\nfi\n",
    );
    d.script("job.sh", "#!/bin/sh\ntrue\n");
    d.ok(
        "qmgr",
        &["-c", "create hook cap event = modifyjob, order = 2"],
    );
    import(&d, "cap", "cap.sh");
    let id = d.qsub(&["-h", "job.sh"]);
    let out = d.run("qalter", &["-l", "walltime=10:00:00", &id]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("walltime above 9 hours needs the long queue"),
        "{}",
        stderr(&out)
    );
    d.ok("qalter", &["-l", "walltime=02:00:00", &id]);
    assert_eq!(d.job_json(&id)["Resource_List"]["walltime"], "02:00:00");

    // print hook writes what restores it; export writes the file back.
    let printed = d.ok("qmgr", &["-c", "print hook cap"]);
    for line in [
        "create hook cap",
        "set hook cap event = modifyjob",
        "set hook cap order = 2",
        "import hook cap application/x-executable base64 -",
        "set hook cap enabled = true",
    ] {
        assert!(printed.contains(line), "{line:?} in\n{printed}");
    }
    assert!(
        d.ok("qmgr", &["-c", "print server"])
            .contains("create hook cap")
    );
    let copy = d.work.join("cap.copy");
    d.ok(
        "qmgr",
        &[
            "-c",
            &format!(
                "export hook cap application/x-executable default {}",
                copy.display()
            ),
        ],
    );
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(d.work.join("cap.sh")).unwrap()
    );

    // A PBS Python hook is kept, disabled, with what to do instead.
    d.script("pbs_hook.py", "import pbs\npbs.event().accept()\n");
    d.ok("qmgr", &["-c", "create hook pyhook event = queuejob"]);
    let out = d.run(
        "qmgr",
        &[
            "-c",
            &format!(
                "import hook pyhook application/x-python default {}",
                d.work.join("pbs_hook.py").display()
            ),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("imports PBS's Python module pbs"), "{said}");
    d.qsub(&["job.sh"]);
}

#[test]
fn a_periodic_hook_runs_on_its_own() {
    let d = Daemon::start();
    let ticks = d.work.join("ticks");
    d.script(
        "tick.sh",
        &format!(
            "#!/bin/sh\nread -r doc\ncase \"$doc\" in *'\"event\":\"periodic\"'*) echo tick >> {} ;; esac\n",
            ticks.display()
        ),
    );
    d.ok(
        "qmgr",
        &["-c", "create hook tick event = periodic, freq = 1"],
    );
    import(&d, "tick", "tick.sh");
    d.await_in_log(&ticks, "tick", 2);
    let listed = d.ok("qmgr", &["-c", "list hook tick"]);
    assert!(listed.contains("    freq = 1"), "{listed}");
}

#[test]
fn a_runjob_hook_refuses_a_start_and_the_job_is_held_not_lost() {
    let d = Daemon::start();
    d.script(
        "gate.sh",
        "#!/bin/sh\nif grep -q '\"Job_Name\":\"norun\"'; then\n  \
         echo 'the licence server is down' >&2; exit 1\nfi\n",
    );
    d.script(
        "job.sh",
        "#!/bin/sh\necho ran > \"$PBS_O_WORKDIR/$PBS_JOBNAME.ran\"\n",
    );
    d.ok("qmgr", &["-c", "create hook gate event = runjob"]);
    import(&d, "gate", "gate.sh");
    let refused = d.qsub(&["-N", "norun", "job.sh"]);
    let fine = d.qsub(&["-N", "fine", "job.sh"]);
    assert_eq!(d.wait_job(&fine).exit_status, Some(0));
    assert!(d.work.join("fine.ran").exists());
    // The refused one is queued again with a system hold, never ran.
    let mut job = d.job_json(&refused);
    for _ in 0..300 {
        if job["job_state"] == "H" {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        job = d.job_json(&refused);
    }
    assert_eq!(job["job_state"], "H", "{job}");
    assert_eq!(job["Hold_Types"], "s", "{job}");
    let comment = job["comment"].as_str().unwrap_or_default();
    assert!(
        comment.contains("runjob hook \"gate\" refused it: the licence server is down"),
        "{job}"
    );
    assert!(!d.work.join("norun.ran").exists());
    // Released once the cause is gone, it runs.
    d.ok("qmgr", &["-c", "set hook gate enabled = false"]);
    d.ok("qrls", &["-h", "s", &refused]);
    assert_eq!(d.wait_job(&refused).exit_status, Some(0));
    assert!(d.work.join("norun.ran").exists());
}
