//! Slurm's dependency forms through both sbatch commands: `?` (any of),
//! `after:ID+MINUTES`, `singleton` and `aftercorr` on an array. The same
//! jobs go to both; `scontrol show job` must write each `Dependency=` as
//! Slurm does (ids replaced by names), and the jobs must run, or not, as
//! Slurm's do. One difference is by design (docs/SLURM.md): a sub-job whose
//! `aftercorr` counterpart failed is deleted here, where Slurm leaves it
//! pending for ever (DependencyNeverSatisfied).

use std::time::Duration;

use crate::harness::Daemon;
use crate::rig::{Slurm, skipped, slurm};

const OK: &str = "#!/bin/sh\nexit 0\n";
const FAIL: &str = "#!/bin/sh\nexit 1\n";
/// Sub-job 2 fails, the others succeed.
const SWEEP: &str = "#!/bin/sh\nexit $(( SLURM_ARRAY_TASK_ID == 2 ))\n";

/// What one submission needs: its name in the comparison, its script and
/// sbatch's options (`{NAME}` stands for the id of an earlier one).
const JOBS: &[(&str, &str, &[&str])] = &[
    ("good", "ok.sh", &["-H"]),
    ("bad", "fail.sh", &["-H"]),
    ("either", "ok.sh", &["-d", "afterok:{bad}?afterok:{good}"]),
    ("both", "ok.sh", &["-d", "afterok:{bad},afterok:{good}"]),
    ("delayed", "ok.sh", &["-d", "after:{good}+1"]),
    ("first", "ok.sh", &["-H", "-J", "chain"]),
    ("second", "ok.sh", &["-J", "chain", "-d", "singleton"]),
    ("sweep", "sweep.sh", &["-H", "--array=1-3"]),
    (
        "matched",
        "ok.sh",
        &["--array=1-3", "-d", "aftercorr:{sweep}"],
    ),
];

/// Jobs released once every Dependency= has been read.
const RELEASED: &[&str] = &["good", "bad", "first", "sweep"];

/// Submits `JOBS` through `sbatch` (given as a command maker); the ids.
fn submit_all(mut sbatch: impl FnMut(&[String]) -> String) -> Vec<(String, String)> {
    let mut ids: Vec<(String, String)> = Vec::new();
    for (name, script, args) in JOBS {
        let mut argv = vec!["--parsable".to_string()];
        for arg in *args {
            let mut arg = arg.to_string();
            for (n, id) in &ids {
                arg = arg.replace(&format!("{{{n}}}"), id);
            }
            argv.push(arg);
        }
        argv.push(script.to_string());
        let id = sbatch(&argv);
        ids.push((name.to_string(), id.trim().to_string()));
    }
    ids
}

fn id_of<'a>(ids: &'a [(String, String)], name: &str) -> &'a str {
    &ids.iter().find(|(n, _)| n == name).expect("a job").1
}

/// `Dependency=` of `show job`'s text, each id replaced by its name.
fn dependency(text: &str, ids: &[(String, String)]) -> String {
    let mut value = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("Dependency="))
        .unwrap_or("(missing)")
        .to_string();
    // Longest ids first, so that 12 does not eat into 123.
    let mut by_length: Vec<&(String, String)> = ids.iter().collect();
    by_length.sort_by_key(|(_, id)| std::cmp::Reverse(id.len()));
    for (name, id) in by_length {
        value = value.replace(&format!(":{id}"), &format!(":{{{name}}}"));
    }
    value
}

/// squeue's `%i` rows, each id replaced by its name.
fn array_rows(text: &str, ids: &[(String, String)]) -> String {
    let mut rows = text.trim().to_string();
    for (name, id) in ids {
        rows = rows.replace(&format!("{id}_"), &format!("{{{name}}}_"));
    }
    rows
}

fn slurm_side(s: &Slurm) -> (Vec<(String, String)>, Vec<String>) {
    let dir = s.workdir("depend");
    for (name, text) in [("ok.sh", OK), ("fail.sh", FAIL), ("sweep.sh", SWEEP)] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let ids = submit_all(|argv| {
        let out = s
            .cmd("sbatch")
            .args(argv)
            .current_dir(&dir)
            .output()
            .expect("run sbatch");
        assert!(out.status.success(), "{}", crate::rig::output_text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    });
    let mut shown: Vec<String> = ["either", "both", "delayed", "second", "matched"]
        .iter()
        .map(|name| {
            let text = s.ok("scontrol", &["show", "job", id_of(&ids, name)]);
            dependency(&text, &ids)
        })
        .collect();
    shown.push(array_rows(
        &s.ok("squeue", &["-h", "-o", "%i", "-j", id_of(&ids, "matched")]),
        &ids,
    ));
    (ids, shown)
}

#[test]
fn dependencies_read_and_run_as_slurms_do() {
    if skipped() {
        return;
    }
    let s = slurm();
    let (slurm_ids, slurm_shown) = slurm_side(s);
    let release = |ids: &[(String, String)]| -> Vec<String> {
        RELEASED.iter().map(|n| id_of(ids, n).to_string()).collect()
    };
    let to_release = release(&slurm_ids);
    let mut args = vec!["release"];
    args.extend(to_release.iter().map(String::as_str));
    s.ok("scontrol", &args);
    let long = Duration::from_secs(120);
    s.await_state(id_of(&slurm_ids, "either"), "COMPLETED", long);
    s.await_state(id_of(&slurm_ids, "second"), "COMPLETED", long);
    let matched = id_of(&slurm_ids, "matched");
    s.await_state(&format!("{matched}_1"), "COMPLETED", long);
    s.await_state(&format!("{matched}_3"), "COMPLETED", long);
    let slurm_both = s.job_state(id_of(&slurm_ids, "both"));
    let slurm_matched_2 = s.job_state(&format!("{matched}_2"));
    s.run(
        "scancel",
        &[
            id_of(&slurm_ids, "both"),
            id_of(&slurm_ids, "delayed"),
            matched,
        ],
    );

    // qmesh.
    let d = Daemon::start();
    d.script("ok.sh", OK);
    d.script("fail.sh", FAIL);
    d.script("sweep.sh", SWEEP);
    let ids = submit_all(|argv| {
        let args: Vec<&str> = argv.iter().map(String::as_str).collect();
        d.ok("sbatch", &args)
    });
    let mut shown: Vec<String> = ["either", "both", "delayed", "second", "matched"]
        .iter()
        .map(|name| dependency(&d.ok("scontrol", &["show", "job", id_of(&ids, name)]), &ids))
        .collect();
    shown.push(array_rows(
        &d.ok("squeue", &["-h", "-o", "%i", "-j", id_of(&ids, "matched")]),
        &ids,
    ));
    assert_eq!(
        shown, slurm_shown,
        "Dependency= of either, both, delayed, second, matched; squeue's rows of matched"
    );
    for name in ["either", "both", "delayed", "second", "matched"] {
        let reason = d.ok("squeue", &["-h", "-o", "%r", "-j", id_of(&ids, name)]);
        assert_eq!(reason.trim(), "Dependency", "{name}'s reason");
    }
    let to_release = release(&ids);
    let mut args = vec!["release"];
    args.extend(to_release.iter().map(String::as_str));
    d.ok("scontrol", &args);
    let status = |name: &str| d.wait_job(&d.full_id(id_of(&ids, name))).exit_status;
    assert_eq!(status("either"), Some(0), "one of either's is met");
    assert_eq!(status("second"), Some(0), "second ran after first");
    let first = d.wait_job(&d.full_id(id_of(&ids, "first")));
    let second = d.wait_job(&d.full_id(id_of(&ids, "second")));
    assert!(
        second.stime >= first.end_time,
        "singleton: second started ({}) after first ended ({})",
        second.stime,
        first.end_time
    );
    let matched = d.full_id(id_of(&ids, "matched"));
    for index in [1, 3] {
        let sub = d.wait_job(&matched.replace("[]", &format!("[{index}]")));
        assert_eq!(sub.exit_status, Some(0), "matched[{index}]");
    }
    // `both` can never start: Slurm leaves it pending (DependencyNeverSatisfied);
    // qmesh deletes it, as PBS does. So with matched[2].
    assert_eq!(slurm_both, "PENDING");
    assert_eq!(slurm_matched_2, "PENDING");
    let both = d.wait_job(&d.full_id(id_of(&ids, "both")));
    assert!(
        both.comment.contains("can never be satisfied"),
        "{}",
        both.comment
    );
    // The array ends, its sub-job 2 removed, rather than wait for ever.
    d.wait_job(&matched);
    assert!(d.log().contains("sub-jobs can never start"), "{}", d.log());
    d.ok("scancel", &[id_of(&ids, "delayed")]);
}
