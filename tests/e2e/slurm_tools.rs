//! The workflow tools that write Slurm scripts for their users, run for
//! real against the daemon through qmesh's Slurm commands: dask-jobqueue's
//! `SLURMCluster`, Parsl's `SlurmProvider`, submitit's Slurm executor and
//! Snakemake's Slurm executor plugin. Each finds sbatch, squeue, sacct,
//! scancel, srun, sinfo and scontrol of this build first on PATH, as it
//! would find Slurm's, and parses what they print with its own code. The
//! tools come from the package index, pinned, into the virtual
//! environment `workflow_tools.rs` makes (one for both).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::{Daemon, bin};
use crate::workflow_tools::{lines_of, run_driver, skipped, succeeded, venv};

/// A daemon with Slurm's usual partition name.
fn daemon() -> Daemon {
    let d = Daemon::start();
    d.ok(
        "qmgr",
        &[
            "-c",
            "create queue debug queue_type = e, enabled = t, started = t",
        ],
    );
    d
}

#[test]
fn dask_jobqueue_slurmcluster_starts_workers_computes_and_scancels_them() {
    if skipped() {
        return;
    }
    let d = daemon();
    let logs = d.work.join("dask-logs");
    let out = run_driver(
        &d,
        "dask_slurm.py",
        &[logs.to_str().expect("a UTF-8 path")],
        Duration::from_secs(420),
    );
    let stdout = succeeded(&d, "dask_slurm.py", &out);
    assert_eq!(lines_of(&stdout, "RESULT"), vec!["328350"], "{stdout}");
    assert_eq!(lines_of(&stdout, "CLOSED").len(), 1, "{stdout}");
    let jobs = lines_of(&stdout, "JOB");
    assert_eq!(jobs.len(), 2, "{stdout}");
    for id in jobs {
        // The id dask-jobqueue read from "Submitted batch job N".
        assert!(id.bytes().all(|b| b.is_ascii_digit()), "{id}");
        let info = d.wait_job(&d.full_id(id));
        let job = d.job_json(&info.id);
        // What its own script asked for: -n 1 --cpus-per-task=1 --mem=954M.
        assert_eq!(
            job["Resource_List"]["select"], "1:ncpus=1:mpiprocs=1:mem=954mb",
            "{job}"
        );
        assert_eq!(job["Job_Name"], "dask-worker", "{job}");
        assert_eq!(job["queue"], "debug", "{job}");
        // Ended by the cluster's close: scancel.
        let comment = job["comment"].as_str().unwrap_or_default();
        assert!(comment.contains("deleted"), "{job}");
        // -e DIR/dask-worker-%J.err: the file, named by Slurm's pattern.
        assert!(
            logs.join(format!("dask-worker-{id}.err")).exists(),
            "no dask-worker-{id}.err in {}",
            logs.display()
        );
    }
}

#[test]
fn parsl_slurm_provider_submits_polls_cancels_and_runs_a_workflow() {
    if skipped() {
        return;
    }
    let d = daemon();
    let work = d.work.join("parsl-slurm");
    std::fs::create_dir_all(&work).expect("the driver's directory");
    let out = run_driver(
        &d,
        "parsl_providers.py",
        &["slurm", work.to_str().expect("a UTF-8 path")],
        Duration::from_secs(420),
    );
    let stdout = succeeded(&d, "parsl_providers.py", &out);
    // The states Parsl read with its own sacct parsing.
    let states = lines_of(&stdout, "STATES");
    assert!(states.contains(&"done RUNNING COMPLETED"), "{stdout}");
    assert!(states.contains(&"cancelled RUNNING CANCELLED"), "{stdout}");
    assert_eq!(lines_of(&stdout, "CANCEL"), vec!["[True]"], "{stdout}");
    assert_eq!(lines_of(&stdout, "RESULT"), vec!["2470"], "{stdout}");
    assert_eq!(lines_of(&stdout, "CLEANED").len(), 1, "{stdout}");
    let jobs = lines_of(&stdout, "JOB");
    let id_of = |name: &str| {
        jobs.iter()
            .find_map(|l| l.strip_prefix(name).map(str::trim))
            .unwrap_or_else(|| panic!("no JOB {name} in {stdout}"))
            .to_string()
    };
    let done = d.wait_job(&d.full_id(&id_of("done")));
    assert_eq!(done.exit_status, Some(0), "{done:?}");
    assert_eq!(done.queue, "debug", "{done:?}");
    let cancelled = d.wait_job(&d.full_id(&id_of("cancelled")));
    assert!(cancelled.comment.contains("deleted"), "{cancelled:?}");
    for block in lines_of(&stdout, "BLOCKS")
        .iter()
        .flat_map(|l| l.split_whitespace())
    {
        let info = d.wait_job(&d.full_id(block));
        assert!(info.comment.contains("deleted"), "{info:?}");
    }
}

#[test]
fn submitit_runs_a_function_through_sbatch_and_srun_and_reads_sacct() {
    if skipped() {
        return;
    }
    let d = daemon();
    let folder = d.work.join("submitit");
    let out = run_driver(
        &d,
        "submitit_slurm.py",
        &[folder.to_str().expect("a UTF-8 path")],
        Duration::from_secs(420),
    );
    let stdout = succeeded(&d, "submitit_slurm.py", &out);
    // add(2, 3) on rank 0 of one task: the pickled result came back.
    assert_eq!(lines_of(&stdout, "RESULT"), vec!["5"], "{stdout}");
    assert_eq!(lines_of(&stdout, "STATE"), vec!["COMPLETED"], "{stdout}");
    let id = lines_of(&stdout, "JOB")[0].to_string();
    let job = d.job_json(&d.wait_job(&d.full_id(&id)).id);
    assert_eq!(job["Job_Name"], "submitit-add", "{job}");
    // Its log, named by submitit's %j pattern.
    assert!(folder.join(format!("{id}_0_log.out")).exists(), "{stdout}");
    let cancelled = lines_of(&stdout, "CANCELLED");
    assert_eq!(cancelled.len(), 1, "{stdout}");
    // sacct's word, as Slurm writes it: "CANCELLED by UID".
    let long = cancelled[0].split_whitespace().next().unwrap_or_default();
    assert!(
        cancelled[0].contains(" CANCELLED by "),
        "{stdout}\n{}\n{}",
        d.ok("sacct", &["-j", long]),
        d.ok("qstat", &["-x", "-f", &d.full_id(long)])
    );
}

#[test]
fn snakemake_slurm_executor_runs_a_workflow() {
    if skipped() {
        return;
    }
    let d = daemon();
    let work = d.work.join("snakemake");
    std::fs::create_dir_all(&work).expect("the workflow's directory");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tools/Snakefile.slurm"),
        work.join("Snakefile"),
    )
    .expect("the Snakefile");
    let venv = venv();
    let commands = Path::new(bin("sbatch")).parent().expect("the commands");
    let path = format!(
        "{}:{}:{}",
        commands.display(),
        venv.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // Its output to files, read even when it has to be killed.
    let said_out = work.join("snakemake.out");
    let said_err = work.join("snakemake.err");
    let child = Command::new(venv.join("bin/snakemake"))
        .args([
            "--executor",
            "slurm",
            "--jobs",
            "2",
            "--default-resources",
            "slurm_partition=debug",
            "runtime=5",
            "mem_mb=2000",
            "--latency-wait",
            "5",
            "--seconds-between-status-checks",
            "1",
        ])
        .current_dir(&work)
        .env("PATH", path)
        .env("QMESH_SOCKET", &d.socket)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&said_out).expect("snakemake.out"))
        .stderr(std::fs::File::create(&said_err).expect("snakemake.err"))
        .spawn()
        .expect("start snakemake");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let said = || {
        format!(
            "--- stdout\n{}\n--- stderr\n{}\n--- qstat -x\n{}",
            std::fs::read_to_string(&said_out).unwrap_or_default(),
            std::fs::read_to_string(&said_err).unwrap_or_default(),
            d.ok("qstat", &["-x"])
        )
    };
    let out = match rx.recv_timeout(Duration::from_secs(420)) {
        Ok(out) => out.expect("snakemake's status"),
        Err(_) => {
            crate::harness::signal(pid, nix::sys::signal::Signal::SIGKILL);
            panic!("snakemake did not finish:\n{}\n{}", said(), d.log());
        }
    };
    let said = said();
    assert!(out.status.success(), "snakemake failed:\n{said}");
    // Each rule ran as its own job, on a node, and wrote its output.
    let hello = std::fs::read_to_string(work.join("hello.txt")).expect("hello.txt");
    assert!(hello.starts_with("hello from job "), "{hello}");
    let total = std::fs::read_to_string(work.join("total.txt")).expect("total.txt");
    assert_eq!(total.trim(), "2", "{said}");
    let finished = d.ok("qstat", &["-x", "-f", "-F", "json"]);
    let v: serde_json::Value = serde_json::from_str(&finished).expect("qstat's JSON");
    let jobs = v["Jobs"].as_object().expect("jobs");
    assert_eq!(jobs.len(), 2, "one job per rule:\n{said}");
    for job in jobs.values() {
        assert_eq!(job["queue"], "debug", "{job}");
        assert_eq!(job["Exit_status"], 0, "{job}");
    }
}
