//! A full disk under the state directory (a small tmpfs mounted there):
//! the daemon refuses changes with the reason and the store's directory,
//! keeps answering queries, starts nothing, lets running jobs run; once
//! the disk has room it writes its state back and takes changes again by
//! itself, and nothing acknowledged is lost, through a kill -9 too.

use std::path::{Path, PathBuf};

use crate::harness::{Daemon, is_root, stderr};

/// A tmpfs mounted for the test, unmounted (lazily) after.
struct Mounted(Option<PathBuf>);

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&path)
                .status();
        }
    }
}

/// Writes zeros into `path` until the disk is full.
fn fill(path: &Path) {
    use std::io::Write;
    let mut file = std::fs::File::create(path).expect("create the filler");
    let block = vec![0u8; 1 << 16];
    while file.write_all(&block).is_ok() {}
    let _ = file.sync_all();
}

#[test]
fn a_full_disk_makes_the_daemon_refuse_changes_and_lose_nothing() {
    if !is_root() {
        eprintln!("not root: no file system to fill; skipped");
        return;
    }
    let mut mounted = Mounted(None);
    let mut d = Daemon::start_prepared(None, |state| {
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64m", "tmpfs"])
            .arg(state)
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            mounted.0 = Some(state.to_path_buf());
        }
    });
    if mounted.0.is_none() {
        eprintln!("cannot mount a tmpfs here: skipped");
        return;
    }
    let started = d.fifo("started");
    let go = d.fifo("go");
    d.script(
        "held.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho run >> runs\necho up > started\nread x < go\nexit 0\n",
    );
    let running = d.qsub(&["held.sh"]);
    assert_eq!(d.read_fifo(&started).trim(), "up");
    let kept = d.qsub(&["-h", "held.sh"]);

    let filler = d.state_dir.join("filler");
    fill(&filler);
    // A change that meets the full disk is not confirmed. (The first few
    // may still land: sled can write into space its files already hold,
    // and such a write is as durable as any, so it is acknowledged and
    // must be kept.)
    let mut acknowledged = Vec::new();
    loop {
        let out = d.run("qsub", &["-h", "held.sh"]);
        if !out.status.success() {
            break;
        }
        acknowledged.push(String::from_utf8_lossy(&out.stdout).trim().to_string());
        assert!(
            acknowledged.len() < 500,
            "500 submissions acknowledged on a full disk"
        );
    }
    // From then on changes are refused, with the reason and where.
    let store = d.state_dir.join("store");
    for (cmd, args) in [
        ("qsub", vec!["held.sh"]),
        ("qdel", vec![running.as_str()]),
        ("qrls", vec![kept.as_str()]),
    ] {
        let out = d.run(cmd, &args);
        assert!(!out.status.success(), "{cmd} accepted on a full disk");
        let err = stderr(&out);
        assert!(
            err.contains("cannot write its store in") && err.contains(&store.display().to_string()),
            "{cmd}: {err}"
        );
    }
    // Queries still answer, and the running job runs on.
    let qstat = d.ok("qstat", &[]);
    assert!(
        qstat.contains(running.split('.').next().unwrap()),
        "{qstat}"
    );
    assert!(d.log().contains("the store cannot write"), "{}", d.log());
    assert_eq!(
        d.log().matches("the store cannot write").count(),
        1,
        "said once"
    );

    // The running job ends while the disk is full (its agent's spool is
    // on it too): its shepherd cannot write the result, and keeps it until
    // there is room rather than let the job be taken as lost.
    d.write_fifo(&go, "done\n");
    let seq = running.split('.').next().unwrap();
    let job_dir = d.state_dir.join("agent-spool/jobs").join(seq);
    let mut tries = 0;
    while !std::fs::read_dir(&job_dir)
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(".result.json."))
        })
        .unwrap_or(false)
    {
        tries += 1;
        assert!(tries < 300, "the shepherd never tried to write its result");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!job_dir.join("result.json").exists(), "no room for it yet");

    // Room again: the daemon reopens its store, writes its state back and
    // takes changes again, by itself. (It tries every 2 s; there is no
    // event to await from outside.)
    std::fs::remove_file(&filler).unwrap();
    let mut tries = 0;
    let after = loop {
        let out = d.run("qsub", &["-h", "held.sh"]);
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).trim().to_string();
        }
        tries += 1;
        assert!(tries < 150, "not writing again after 30 s:\n{}", d.log());
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert!(d.log().contains("the store writes again"), "{}", d.log());
    // Its end, kept by its shepherd, comes now: it ran once, and ended well.
    d.wait_job(&running);
    assert_eq!(d.job_json(&running)["Exit_status"], 0);
    // All of it durable: a kill -9 and a start find it (the end from the
    // store, or again from the agent's spool if the kill came first).
    d.kill9();
    d.spawn();
    d.wait_job(&running);
    let job = d.job_json(&running);
    assert_eq!(job["Exit_status"], 0, "{job}");
    assert_eq!(
        std::fs::read_to_string(d.work.join("runs")).unwrap(),
        "run\n",
        "it ran once"
    );
    assert_eq!(
        d.job_json(&kept)["job_state"],
        "H",
        "acknowledged before: kept"
    );
    assert_eq!(
        d.job_json(&after)["job_state"],
        "H",
        "acknowledged after: kept"
    );
    for id in &acknowledged {
        assert_eq!(
            d.job_json(id)["job_state"],
            "H",
            "{id}, acknowledged as the disk filled: kept"
        );
    }
    // The submission that met the full disk was told so: it is not
    // queued to fail later for want of its script.
    let mut known: Vec<&str> = vec![running.as_str(), kept.as_str(), after.as_str()];
    known.extend(acknowledged.iter().map(String::as_str));
    for id in d.all_job_ids() {
        if known.contains(&id.as_str()) {
            continue;
        }
        let job = d.job_json(&id);
        assert_eq!(job["job_state"], "F", "{id} unconfirmed but kept: {job}");
        assert!(
            job["comment"]
                .as_str()
                .is_some_and(|c| c.contains("submission met a full disk")),
            "{job}"
        );
    }
    d.allowed_errors.push("ERROR".into());
    drop(d);
}
