//! qmesh's srun beside the real one: the same step outside a job through
//! both (an allocation and a run). The `SLURM_*` names a task sees must
//! be Slurm's (the fixture `srun-env-names.txt` keeps what Slurm 22.05
//! gave), less those of Slurm's own daemons and srun's own sockets, and a
//! failing step must say what Slurm says and exit with what it exits.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::harness::Daemon;
use crate::rig::{output_text, skipped, slurm};

/// Variables of Slurm's daemons (`SLURM_CONF`, `SLURM_TASK_PID`,
/// `SLURM_WORKING_CLUSTER`) and of srun's own listening port, which
/// qmesh's srun does not have (its tasks talk to nothing but their
/// agent).
const NOT_PROVIDED: &[&str] = &[
    "SLURM_CONF",
    "SLURM_TASK_PID",
    "SLURM_WORKING_CLUSTER",
    "SLURM_SRUN_COMM_PORT",
    "SLURM_STEP_LAUNCHER_PORT",
];

/// Each task prints its Slurm variables, labelled.
const ENV_STEP: &[&str] = &["-n", "2", "-l", "sh", "-c", "env | grep ^SLURM | sort"];
/// Rank 0 exits 2, rank 1 exits 3.
const FAILING_STEP: &[&str] = &["-n", "2", "sh", "-c", "exit $((SLURM_PROCID + 2))"];

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/slurm/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Keeps what Slurm printed in `target/tmp/slurm-oracle/NAME`.
fn record(name: &str, text: &str) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("slurm-oracle");
    std::fs::create_dir_all(&dir).expect("the record's directory");
    std::fs::write(dir.join(name), text).expect("write the record");
}

/// Rank 0's variable names in `srun -l ... env` output.
fn rank0_names(stdout: &str) -> BTreeSet<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("0: "))
        .filter_map(|l| l.split_once('=').map(|(n, _)| n.to_string()))
        .collect()
}

/// srun's error lines with the node's name made `NODE`, sorted.
fn error_lines(out: &Output) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("srun: error: "))
        .map(|l| match l.split_once(": ") {
            Some((_, rest)) => format!("srun: error: NODE: {rest}"),
            None => l.to_string(),
        })
        .collect();
    lines.sort();
    lines
}

#[test]
fn a_step_outside_a_job_sees_slurms_variables_and_fails_as_slurms_does() {
    if skipped() {
        return;
    }
    let s = slurm();
    let dir = s.workdir("srun");
    let theirs = s
        .cmd("srun")
        .args(ENV_STEP)
        .current_dir(&dir)
        .output()
        .expect("run srun");
    assert!(theirs.status.success(), "{}", output_text(&theirs));
    let slurm_names = rank0_names(&String::from_utf8_lossy(&theirs.stdout));
    let listed: String = slurm_names.iter().map(|n| format!("{n}\n")).collect();
    record("srun-env-names.txt", &listed);
    let expected: BTreeSet<String> = fixture("srun-env-names.txt")
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(
        slurm_names, expected,
        "Slurm's own names differ from fixtures/srun-env-names.txt"
    );
    let slurm_failing = s
        .cmd("srun")
        .args(FAILING_STEP)
        .current_dir(&dir)
        .output()
        .expect("run srun");

    let d = Daemon::start();
    let ours = d.run("srun", ENV_STEP);
    assert!(ours.status.success(), "{}", output_text(&ours));
    let our_names = rank0_names(&String::from_utf8_lossy(&ours.stdout));
    let wanted: BTreeSet<String> = expected
        .into_iter()
        .filter(|n| !NOT_PROVIDED.contains(&n.as_str()))
        .collect();
    assert_eq!(
        our_names,
        wanted,
        "a task's SLURM_* names: qmesh has {:?} more, lacks {:?}",
        our_names.difference(&wanted).collect::<Vec<_>>(),
        wanted.difference(&our_names).collect::<Vec<_>>()
    );
    // The same values where they do not depend on the machine.
    let value = |out: &Output, name: &str| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix(&format!("1: {name}=")).map(String::from))
    };
    for name in [
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "SLURM_NODEID",
        "SLURM_NTASKS",
        "SLURM_STEP_ID",
        "SLURM_STEP_NUM_TASKS",
        "SLURM_STEP_NUM_NODES",
        "SLURM_STEP_TASKS_PER_NODE",
        "SLURM_GTIDS",
        "SLURM_JOB_NAME",
        "SLURM_LABELIO",
        "SLURM_TOPOLOGY_ADDR_PATTERN",
        "SLURM_UMASK",
    ] {
        assert_eq!(value(&ours, name), value(&theirs, name), "{name}");
    }

    let our_failing = d.run("srun", FAILING_STEP);
    assert_eq!(
        our_failing.status.code(),
        slurm_failing.status.code(),
        "the highest task status"
    );
    assert_eq!(
        error_lines(&our_failing),
        error_lines(&slurm_failing),
        "one line per task status, as Slurm writes them"
    );
}
