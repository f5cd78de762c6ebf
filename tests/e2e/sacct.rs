//! sacct against a real daemon and agent: jobs that end in each way read
//! back in Slurm's states and exit codes (a job that exits 0, one that
//! exits 3, one deleted while running, one past its wall time), from the
//! daemon's jobs and, once it has forgotten one, from its accounting log;
//! the exact invocations of submitit, Snakemake and Parsl; who sees whose
//! jobs.

use crate::harness::{Daemon, NOBODY, is_root, stderr};

/// `sbatch --parsable ARGS`: the job's number.
fn sbatch(d: &Daemon, args: &[&str]) -> String {
    let mut all = vec!["--parsable"];
    all.extend_from_slice(args);
    d.ok("sbatch", &all).trim().to_string()
}

/// The rows of `sacct -P -o JobID,State,ExitCode -j IDS` (header left out).
fn states(d: &Daemon, ids: &str) -> Vec<String> {
    d.ok(
        "sacct",
        &["-P", "-n", "-o", "JobID,State,ExitCode", "-j", ids],
    )
    .lines()
    .map(String::from)
    .collect()
}

#[test]
fn jobs_read_back_in_slurms_states_from_the_state_and_from_the_log() {
    let d = Daemon::start();
    let ok = sbatch(&d, &["-J", "snake", "--wrap", "true"]);
    let three = sbatch(&d, &["-J", "snake", "--wrap", "exit 3"]);
    let started = d.fifo("started");
    d.script("waits.sh", "#!/bin/sh\necho up > started\nexec sleep 60\n");
    let deleted = sbatch(&d, &["waits.sh"]);
    let slow = sbatch(&d, &["-t", "0:2", "--wrap", "exec sleep 60"]);
    let held = sbatch(&d, &["-H", "--wrap", "true"]);
    for id in [&ok, &three, &slow] {
        d.wait_job(&d.full_id(id));
    }
    d.read_fifo(&started);
    d.ok("scancel", &[&deleted]);
    d.wait_job(&d.full_id(&deleted));

    let ids = format!("{ok},{three},{deleted},{slow},{held}");
    let rows = states(&d, &ids);
    let expect = |prefix: &str| {
        assert!(
            rows.iter().any(|r| r.starts_with(prefix)),
            "no row {prefix}...:\n{}\n{}",
            rows.join("\n"),
            d.log()
        );
    };
    expect(&format!("{ok}|COMPLETED|0:0"));
    expect(&format!("{ok}.batch|COMPLETED|0:0"));
    expect(&format!("{three}|FAILED|3:0"));
    expect(&format!("{three}.batch|FAILED|3:0"));
    expect(&format!("{deleted}|CANCELLED by 0|0:0"));
    expect(&format!("{deleted}.batch|CANCELLED|0:"));
    expect(&format!("{slow}|TIMEOUT|0:0"));
    expect(&format!("{slow}.batch|CANCELLED|0:"));
    expect(&format!("{held}|PENDING|0:0"));
    assert!(
        !rows.iter().any(|r| r.starts_with(&format!("{held}.batch"))),
        "a job that never ran has no step: {rows:?}"
    );

    // submitit: sacct -o JobID,State,NodeList --parsable2 -j ID,ID
    let submitit = d.ok(
        "sacct",
        &[
            "-o",
            "JobID,State,NodeList",
            "--parsable2",
            "-j",
            &format!("{ok},{three}"),
        ],
    );
    let lines: Vec<&str> = submitit.lines().collect();
    assert_eq!(lines[0], "JobID|State|NodeList");
    let node = d.exec_nodes(&d.full_id(&ok)).remove(0);
    assert_eq!(lines[1], format!("{ok}|COMPLETED|{node}"), "{submitit}");
    assert_eq!(lines.len(), 5, "two jobs and their steps:\n{submitit}");

    // Snakemake: by name, over a window that ends now.
    let since = (chrono::Local::now() - chrono::Duration::minutes(10))
        .format("%Y-%m-%dT%H:%M")
        .to_string();
    let snakemake = d.ok(
        "sacct",
        &[
            "-X",
            "--parsable2",
            "--noheader",
            "--format=JobIdRaw,State",
            "--starttime",
            &since,
            "--endtime",
            "now",
            "--name",
            "snake",
        ],
    );
    assert_eq!(
        snakemake,
        format!("{ok}|COMPLETED\n{three}|FAILED\n"),
        "{}",
        d.log()
    );

    // Parsl: the table, no header, one line per job.
    let parsl = d.ok(
        "sacct",
        &[
            "-X",
            "--noheader",
            "--format=jobid,state",
            "--job",
            &format!("{ok},{three}"),
        ],
    );
    assert_eq!(
        parsl,
        format!("{ok:<12}  COMPLETED \n{three:<12}     FAILED \n")
    );

    // Without -j: today's jobs, with Slurm's header.
    let today = d.ok("sacct", &[]);
    assert!(
        today.starts_with(
            "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode \n\
             ------------ ---------- ---------- ---------- ---------- ---------- -------- \n"
        ),
        "{today}"
    );
    assert!(today.contains(&format!("\n{three:<12}")), "{today}");

    // Forgotten by the daemon (qdel -x): its records still say how it ended.
    d.ok("qdel", &["-x", &d.full_id(&three)]);
    assert_eq!(
        states(&d, &three),
        [
            format!("{three}|FAILED|3:0"),
            format!("{three}.batch|FAILED|3:0")
        ],
        "{}",
        d.log()
    );
    // ... and today's window reads it from the log too.
    let window = d.ok("sacct", &["-X", "-P", "-n", "-o", "JobID,State"]);
    assert!(
        window.lines().any(|l| l == format!("{three}|FAILED")),
        "{window}"
    );
    let json = d.ok("sacct", &["--json", "-j", &three]);
    let doc: serde_json::Value = serde_json::from_str(&json).expect("sacct --json");
    let job = &doc["jobs"][0];
    assert_eq!(job["job_id"], three.parse::<u64>().unwrap());
    assert_eq!(job["name"], "snake");
    assert_eq!(job["state"]["current"], "FAILED");
    assert_eq!(job["exit_code"]["return_code"], 3);
    assert_eq!(job["steps"][0]["step"]["id"], "batch");
    d.ok("qdel", &[&d.full_id(&held)]);
}

#[test]
fn users_see_their_own_jobs_and_others_with_all_users() {
    if !is_root() {
        eprintln!("skipped: needs root to run a command as nobody");
        return;
    }
    let d = Daemon::start();
    let id = sbatch(&d, &["--wrap", "true"]);
    d.wait_job(&d.full_id(&id));
    let own = d.run_as(NOBODY, "sacct", &["-X", "-P", "-n", "-o", "JobID"]);
    assert!(own.status.success(), "{}", stderr(&own));
    assert_eq!(
        String::from_utf8_lossy(&own.stdout),
        "",
        "root's job is not nobody's"
    );
    for args in [
        vec!["-a", "-X", "-P", "-n", "-o", "JobID,User"],
        vec!["-j", id.as_str(), "-X", "-P", "-n", "-o", "JobID,User"],
    ] {
        let out = d.run_as(NOBODY, "sacct", &args);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{id}|root\n"),
            "sacct {args:?} as nobody: {}",
            stderr(&out)
        );
    }
    // Bad input: Slurm's error line, status 1.
    let out = d.run("sacct", &["-o", "JobID,Foo"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "sacct: error: Invalid field requested: \"Foo\"; sacct --helpformat lists the fields\n"
    );
    let out = d.run("sacct", &["-S", "now-2h"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("sacct: error: Invalid time specification \"now-2h\"; write now["),
        "{}",
        stderr(&out)
    );
}

#[test]
fn arrays_filters_and_separators() {
    let d = Daemon::start();
    let ran = sbatch(&d, &["--array=1-2", "-J", "pair", "--wrap", "true"]);
    let waits = sbatch(&d, &["--array=1-3", "-H", "--wrap", "true"]);
    // The array ends when its tasks have.
    d.wait_job(&d.full_id(&ran));
    // A task's end reaches the accounting log once the store has it, a
    // moment after the array's waiters are answered (as Slurm's database
    // follows its controller): sacct shows it within seconds.
    let both = format!("{ran},{waits}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while states(&d, &both).iter().any(|l| l.contains("RUNNING"))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // An array's tasks, each with its step; those not started on one line.
    assert_eq!(
        states(&d, &both),
        [
            format!("{ran}_1|COMPLETED|0:0"),
            format!("{ran}_1.batch|COMPLETED|0:0"),
            format!("{ran}_2|COMPLETED|0:0"),
            format!("{ran}_2.batch|COMPLETED|0:0"),
            format!("{waits}_[1-3]|PENDING|0:0"),
        ]
    );
    assert_eq!(
        states(&d, &format!("{ran}_2.batch")),
        [format!("{ran}_2.batch|COMPLETED|0:0")],
        "a step alone"
    );
    // -s with a window: the completed ones; --name; -p's trailing |.
    let completed = d.ok(
        "sacct",
        &[
            "-X",
            "-n",
            "-p",
            "-s",
            "CD",
            "-S",
            "today",
            "-o",
            "JobID,JobName",
        ],
    );
    assert_eq!(completed, format!("{ran}_1|pair|\n{ran}_2|pair|\n"));
    let named = d.ok(
        "sacct",
        &[
            "-X",
            "-n",
            "-P",
            "--delimiter=,",
            "--name",
            "pair",
            "-o",
            "JobID,State",
        ],
    );
    assert_eq!(named, format!("{ran}_1,COMPLETED\n{ran}_2,COMPLETED\n"));
    // -s without -S: the jobs in that state now (Slurm's window is now);
    // a held job is not eligible, so in no window (only -j shows it).
    d.ok(
        "qmgr",
        &[
            "-c",
            "create queue parked queue_type = e, enabled = t, started = f",
        ],
    );
    let parked = sbatch(&d, &["-p", "parked", "--wrap", "true"]);
    assert_eq!(
        d.ok(
            "sacct",
            &["-X", "-n", "-P", "-s", "PD", "-o", "JobID,Partition,Reason"]
        ),
        format!("{parked}|parked|PartitionDown\n")
    );
    let out = d.run("sacct", &["-s", "bogus"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("sacct: error: unrecognized job state value 'bogus'"),
        "{}",
        stderr(&out)
    );
    d.ok("qdel", &[&d.full_id(&waits), &d.full_id(&parked)]);
}

#[test]
fn a_requeued_job_s_earlier_run_with_duplicates() {
    let d = Daemon::start();
    let started = d.fifo("started");
    d.script("again.sh", "#!/bin/sh\necho up > started\nexec sleep 60\n");
    let id = sbatch(&d, &["again.sh"]);
    d.read_fifo(&started);
    d.ok("qrerun", &[&d.full_id(&id)]);
    // It runs again: its first run has ended, queued again.
    d.read_fifo(&started);
    let rows = d.ok(
        "sacct",
        &["-D", "-P", "-n", "-o", "JobID,State,ExitCode", "-j", &id],
    );
    let rows: Vec<&str> = rows.lines().collect();
    assert_eq!(rows.len(), 4, "{rows:?}\n{}", d.log());
    assert_eq!(rows[0], format!("{id}|REQUEUED|0:0"));
    assert!(
        rows[1].starts_with(&format!("{id}.batch|CANCELLED|0:")),
        "{rows:?}"
    );
    assert_eq!(
        rows[2..],
        [
            format!("{id}|RUNNING|0:0"),
            format!("{id}.batch|RUNNING|0:0")
        ]
    );
    // Without -D, the job as it is now.
    assert_eq!(
        states(&d, &id),
        [
            format!("{id}|RUNNING|0:0"),
            format!("{id}.batch|RUNNING|0:0")
        ]
    );
    d.ok("scancel", &[&id]);
}
