//! Job scripts written as PBS Pro's and Torque's users write them
//! (`tests/scripts/pbspro`, `torque`, `mixed`), submitted unchanged with a
//! plain `qsub SCRIPT`: each prints what it sees (node file, variables,
//! directory, threads), and the test checks that against what its
//! directives asked. The machine is one flat set of eight 16-CPU nodes
//! with the `ib` property, all on the local host.

use std::path::{Path, PathBuf};

use crate::harness::{Daemon, stderr};

const MACHINE: &str = r#"
[agents]
local = true
local_host = "localhost"

[server]
default_queue = "batch"

[[queue]]
name = "batch"
max_walltime = "24:00:00"
default_walltime = "1:00:00"

[[node_set]]
name = "cpu"
topology = "flat"
count = 8
prefix = "cpu"
host = "localhost"
cpus = 16
mem = "64gb"
features = ["ib"]
"#;

fn source(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scripts")
        .join(path)
}

/// Copies the script into the work directory and submits it unchanged;
/// returns the job id.
fn submit(d: &Daemon, path: &str) -> String {
    let name = path.replace('/', "_");
    std::fs::copy(source(path), d.work.join(&name)).expect("copy the script");
    d.qsub(&[&name])
}

/// The `KEY=VALUE` lines the job printed to its standard output file.
fn what_it_saw(d: &Daemon, id: &str) -> Vec<String> {
    let info = d.wait_job(id);
    assert_eq!(info.exit_status, Some(0), "{info:?}\n{}", d.log());
    let seq = id.split('.').next().unwrap_or(id);
    let path = if info.stdout_path.ends_with('/') {
        PathBuf::from(&info.stdout_path).join(format!("{}.o{seq}", info.name))
    } else if info.join_path == "eo" {
        PathBuf::from(&info.stderr_path)
    } else {
        PathBuf::from(&info.stdout_path)
    };
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}\n{info:?}", path.display()));
    text.lines()
        .filter(|l| l.contains('='))
        .map(str::to_string)
        .collect()
}

fn check(d: &Daemon, path: &str, expected: &[&str]) -> String {
    let id = submit(d, path);
    let saw = what_it_saw(d, &id);
    for line in expected {
        assert!(
            saw.iter().any(|l| l == line),
            "{path}: expected {line:?} among {saw:?}"
        );
    }
    id
}

#[test]
fn pbs_pro_scripts_run_unchanged() {
    let d = Daemon::start_with(Some(MACHINE));
    check(
        &d,
        "pbspro/mpi_select.sh",
        &[
            "HOSTS=2",
            "LINES=8",
            "NCPUS=4",
            "OMP=1",
            "PWD_IS_SUBMIT=yes",
        ],
    );
    check(
        &d,
        "pbspro/openmp.sh",
        &["LINES=1", "NCPUS=8", "OMP=8", "START=home"],
    );
    check(&d, "pbspro/hybrid.sh", &["LINES=4", "NP=4", "OMP=4"]);
    check(&d, "pbspro/old_style.sh", &["LINES=1", "NCPUS=4"]);
    check(
        &d,
        "pbspro/no_shebang.sh",
        &["BASH_ARRAY=3", "SHELL_RUN=bash"],
    );
    check(&d, "pbspro/pack_host.sh", &["LINES=3"]);
    let id = check(
        &d,
        "pbspro/nodes_resources.sh",
        &["NCPUS=16", "WALLTIME=7200"],
    );
    let comment = d.wait_job(&id).comment;
    assert!(
        comment.contains("software=abaqus/2023.1 is recorded"),
        "{comment}"
    );
    let id = check(
        &d,
        "pbspro/options.sh",
        &[
            "MODE=640",
            "GREETING=hello",
            "JOBNAME=options",
            "QUEUE=batch",
            "O_QUEUE=batch",
            "ENVIRONMENT=PBS_BATCH",
            "TMPDIR_OK=yes",
        ],
    );
    let info = d.wait_job(&id);
    assert_eq!((info.job_priority, info.project.as_str()), (10, "climate"));
    assert!(!info.rerunnable);
    assert_eq!(info.mail_users, vec!["someone@example.org".to_string()]);
    assert!(info.comment.contains("no sendmail"), "{}", info.comment);
}

#[test]
fn torque_scripts_run_unchanged() {
    let d = Daemon::start_with(Some(MACHINE));
    check(
        &d,
        "torque/mpi_ppn.sh",
        &[
            "LINES=8",
            "NUM_NODES=2",
            "NUM_PPN=4",
            "NP=8",
            "FIRST_TWICE=1",
        ],
    );
    check(
        &d,
        "torque/named_nodes.sh",
        &["NODEFILE=cpu03 cpu05 cpu05 "],
    );
    check(&d, "torque/property.sh", &["LINES=2", "PPN=2"]);
    check(&d, "torque/workdir.sh", &["PWD_IS_SUBMIT=yes"]);
    check(&d, "torque/procs.sh", &["LINES=4"]);
    check(&d, "torque/singlejob.sh", &["RAN=yes"]);
}

#[test]
fn mixed_and_tool_written_scripts_run_unchanged() {
    let d = Daemon::start_with(Some(MACHINE));
    check(&d, "mixed/nqs_and_pbs.sh", &["LINES=4", "JOBNAME=nqs_mix"]);
    std::fs::create_dir(d.work.join("dask-logs")).expect("the log directory");
    check(&d, "mixed/dask_style.sh", &["RAN=yes"]);
    check(
        &d,
        "mixed/parsl_torque_style.sh",
        &["RAN=yes parsl.torque.block-0"],
    );
    // PBS Pro's `qsub -- program args`: a program, no script.
    let id = d.qsub(&[
        "-l",
        "select=1:ncpus=2",
        "--",
        "/bin/sh",
        "-c",
        "echo PROG=$NCPUS",
    ]);
    assert_eq!(what_it_saw(&d, &id), vec!["PROG=2".to_string()]);
    assert_eq!(d.wait_job(&id).name, "sh");
    // -W block=true in the script: qsub exits with the job's status.
    std::fs::copy(source("mixed/block.sh"), d.work.join("block.sh")).unwrap();
    let out = d.run("qsub", &["block.sh"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
}

#[test]
fn array_scripts_run_each_index_once() {
    let d = Daemon::start_with(Some(MACHINE));
    // PBS Pro: -J 1-4, NAME.oSEQ.INDEX.
    let id = submit(&d, "pbspro/array.sh");
    assert!(id.contains("[]."), "{id}");
    assert_eq!(d.wait_job(&id).exit_status, Some(0), "{}", d.log());
    let seq = id.split('[').next().unwrap();
    for i in 1..=4 {
        let out = d.work.join(format!("pbspro_array.sh.o{seq}.{i}"));
        let text =
            std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
        assert_eq!(text.trim(), format!("INDEX={i}"));
    }
    // Torque: -t 1-10%2, NAME.oSEQ-INDEX.
    let id = submit(&d, "torque/array.sh");
    assert_eq!(d.wait_job(&id).exit_status, Some(0), "{}", d.log());
    let seq = id.split('[').next().unwrap();
    for i in 1..=10 {
        let out = d.work.join(format!("torque_array.sh.o{seq}-{i}"));
        let text =
            std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
        assert_eq!(text.trim(), format!("INDEX={i}"));
    }
}
