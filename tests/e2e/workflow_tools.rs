//! The workflow tools that write PBS scripts for their users, run for
//! real against the daemon: dask-jobqueue's `PBSCluster` (workers start,
//! compute, and are ended with qdel) and Parsl's `PBSProProvider` and
//! `TorqueProvider` (submit, status through running to completed, cancel,
//! and a HighThroughputExecutor whose block is a PBS job). The tools come
//! from the Python package index, pinned, into a virtual environment this
//! test makes once per build directory; the drivers are
//! `tests/tools/*.py`. They find qsub, qstat and qdel of this build first
//! on PATH, as they would find PBS's.
//!
//! A machine without python3 or without the package index fails these
//! tests with a message; `QMESH_SKIP_PYTHON_TOOLS=1` skips them there.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::harness::{Daemon, bin};

/// The tools and versions the tests were written against (these and
/// `slurm_tools.rs`'s: one environment for both).
const REQUIREMENTS: [&str; 8] = [
    "dask-jobqueue==0.9.0",
    "distributed==2026.8.0",
    "dask==2026.8.0",
    "parsl==2026.10.26",
    "submitit==1.5.4",
    "snakemake==9.27.1",
    "snakemake-executor-plugin-slurm==2.8.0",
    "snakemake-executor-plugin-slurm-jobstep==0.6.1",
];

pub fn skipped() -> bool {
    if std::env::var_os("QMESH_SKIP_PYTHON_TOOLS").is_some_and(|v| v == "1") {
        eprintln!("skipped: QMESH_SKIP_PYTHON_TOOLS=1");
        return true;
    }
    false
}

/// The virtual environment with the tools, made once per build directory
/// and test run (a marker file says it is complete).
pub fn venv() -> &'static Path {
    static VENV: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match VENV.get_or_init(make_venv) {
        Ok(path) => path,
        Err(why) => panic!("{why}\n(set QMESH_SKIP_PYTHON_TOOLS=1 to skip these tests)"),
    }
}

fn make_venv() -> Result<PathBuf, String> {
    let tag: String = REQUIREMENTS
        .join("-")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("pbs-tools-{tag}"));
    let done = dir.join("installed");
    if done.exists() {
        return Ok(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&dir)
        .output()
        .map_err(|e| format!("cannot run python3 to make a virtual environment: {e}"))?;
    if !made.status.success() {
        return Err(format!(
            "python3 -m venv {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&made.stderr)
        ));
    }
    let pip = dir.join("bin/pip");
    let installed = Command::new(&pip)
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .args(REQUIREMENTS)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", pip.display()))?;
    if !installed.status.success() {
        return Err(format!(
            "pip install {} failed (is the package index reachable?): {}",
            REQUIREMENTS.join(" "),
            String::from_utf8_lossy(&installed.stderr)
        ));
    }
    std::fs::write(&done, REQUIREMENTS.join("\n")).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// Runs a driver in `tests/tools` with the venv's python, qsub & co. of
/// this build first on PATH, against `d`; gives up after `limit`.
pub fn run_driver(d: &Daemon, script: &str, args: &[&str], limit: Duration) -> Output {
    let venv = venv();
    let commands = Path::new(bin("qsub"))
        .parent()
        .expect("the commands' directory");
    let path = format!(
        "{}:{}:{}",
        commands.display(),
        venv.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let driver = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/tools")
        .join(script);
    let child = Command::new(venv.join("bin/python"))
        .arg(&driver)
        .args(args)
        .current_dir(&d.work)
        .env("PATH", path)
        .env("QMESH_SOCKET", &d.socket)
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the driver");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("the driver's output"),
        Err(_) => {
            crate::harness::signal(pid, nix::sys::signal::Signal::SIGKILL);
            panic!(
                "{script} {args:?} did not finish in {limit:?}:\n{}",
                d.log()
            );
        }
    }
}

/// The driver's stdout, or a panic with everything that explains a failure.
pub fn succeeded(d: &Daemon, script: &str, out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{script} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}\n--- qstat -x\n{}\n--- daemon\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        d.ok("qstat", &["-x"]),
        d.log()
    );
    stdout
}

/// The words after `key` on the lines that start with it.
pub fn lines_of<'a>(stdout: &'a str, key: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(key).map(str::trim))
        .collect()
}

#[test]
fn dask_jobqueue_pbscluster_starts_workers_computes_and_qdels_them() {
    if skipped() {
        return;
    }
    let d = Daemon::start();
    let logs = d.work.join("dask-logs");
    let out = run_driver(
        &d,
        "dask_pbs.py",
        &[logs.to_str().expect("a UTF-8 path")],
        Duration::from_secs(420),
    );
    let stdout = succeeded(&d, "dask_pbs.py", &out);
    assert_eq!(lines_of(&stdout, "RESULT"), vec!["328350"], "{stdout}");
    assert_eq!(lines_of(&stdout, "CLOSED").len(), 1, "{stdout}");
    let jobs = lines_of(&stdout, "JOB");
    assert_eq!(jobs.len(), 2, "{stdout}");
    for id in jobs {
        // What dask-jobqueue's own script asked for, as PBS Pro reads it.
        let job = d.job_json(&d.wait_job(id).id);
        assert_eq!(
            job["Resource_List"]["select"], "1:ncpus=1:mem=954mb",
            "{job}"
        );
        assert_eq!(job["Job_Name"], "dask-worker", "{job}");
        // Ended by the cluster's close: qdel.
        let comment = job["comment"].as_str().unwrap_or_default();
        assert!(comment.contains("deleted"), "{job}");
        // -e DIR/ and -o DIR/: the files are inside the directory.
        let seq = id.split('.').next().unwrap_or(id);
        assert!(logs.join(format!("dask-worker.e{seq}")).exists());
    }
}

/// One Parsl provider's run: the provider alone, then a workflow.
fn parsl_runs(kind: &str) {
    if skipped() {
        return;
    }
    let d = Daemon::start();
    let work = d.work.join(format!("parsl-{kind}"));
    std::fs::create_dir_all(&work).expect("the driver's directory");
    let out = run_driver(
        &d,
        "parsl_providers.py",
        &[kind, work.to_str().expect("a UTF-8 path")],
        Duration::from_secs(420),
    );
    let stdout = succeeded(&d, "parsl_providers.py", &out);
    // The states Parsl read with its own qstat parsing.
    let states = lines_of(&stdout, "STATES");
    assert!(states.contains(&"done RUNNING COMPLETED"), "{stdout}");
    assert!(states.contains(&"cancelled RUNNING COMPLETED"), "{stdout}");
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
    let done = d.wait_job(&id_of("done"));
    assert_eq!(done.exit_status, Some(0), "{done:?}");
    let cancelled = d.wait_job(&id_of("cancelled"));
    assert!(cancelled.comment.contains("deleted"), "{cancelled:?}");
    // The workflow's block: a PBS job, cancelled by Parsl's cleanup.
    for block in lines_of(&stdout, "BLOCKS")
        .iter()
        .flat_map(|l| l.split_whitespace())
    {
        let info = d.wait_job(block);
        assert!(info.comment.contains("deleted"), "{info:?}");
        let expected = if kind == "pbspro" {
            "1:ncpus=1"
        } else {
            "1:ncpus=1:mpiprocs=1"
        };
        assert_eq!(info.resource_list["select"], expected, "{info:?}");
        assert_eq!(info.shell_path, vec!["/bin/bash".to_string()]);
        assert_eq!(info.mail_points, "n");
    }
}

#[test]
fn parsl_pbspro_provider_submits_polls_cancels_and_runs_a_workflow() {
    parsl_runs("pbspro");
}

#[test]
fn parsl_torque_provider_submits_polls_cancels_and_runs_a_workflow() {
    parsl_runs("torque");
}
