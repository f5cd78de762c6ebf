//! Spools written by older agents still read the same. An agent upgraded
//! while shepherds run adopts them from the spool, and their shepherds
//! (of the old binary) go on writing the old formats; so each version of
//! a spool file is kept here as its agent wrote it, and read.
//!
//! `fixtures/spool-v1` was written by the agent of format version 1 (all
//! its files had that one; `Spool::prepare`, `JobDir::write_result`,
//! `signals::post`, the joined record) from the orders and additions
//! built below: job 17 runs (every field of its launch set, a signal
//! request waiting), 18 ended at its wall time, 19's end is unknown; 21
//! is a job joined from host h1.

use std::path::{Path, PathBuf};

use qmesh_agent::record::{self, Additions, Cgroups, Launch};
use qmesh_agent::spool::Spool;
use qmesh_proto::v1;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn share(
    procs: u32,
    cpus: u32,
    threads: u32,
    gpus: u32,
    mem: Option<u64>,
    shared: bool,
) -> v1::NodeShare {
    v1::NodeShare {
        procs,
        cpus,
        threads,
        gpus,
        mem,
        shared,
    }
}

/// Job 17's order: every field of a launch set.
fn order_17() -> v1::LaunchJob {
    let env = |name: &str, value: &str| v1::EnvVar {
        name: name.into(),
        value: value.into(),
    };
    v1::LaunchJob {
        job: 17,
        job_id: "17[3].srv".into(),
        name: "run.sh".into(),
        script: b"#!/bin/sh\necho hi\n".to_vec(),
        user: "alice".into(),
        uid: 1000,
        gid: 100,
        group: "users".into(),
        workdir: "/home/alice/w".into(),
        stdout_path: "/home/alice/w/out".into(),
        stderr_path: String::new(),
        join_output: false,
        env: vec![env("A", "1"), env("PBS_O_HOST", "login1")],
        nodes: vec!["n1".into(), "n2".into(), "n3".into()],
        walltime: 600,
        kill_grace: 5,
        queue: "batch".into(),
        account: "c1".into(),
        submit_host: "login1".into(),
        local_nodes: vec!["n1".into(), "n3".into()],
        shares: vec![
            share(2, 4, 2, 1, Some(1 << 30), true),
            share(3, 6, 2, 0, None, false),
            share(1, 4, 4, 1, Some(2 << 30), true),
        ],
        shell: "/bin/bash".into(),
        umask: Some(0o27),
        start_dir: "/scratch/alice".into(),
        join_to_error: true,
        limits: Some(v1::ProcessLimits {
            cpu_secs: Some(30),
            address_space: Some(1 << 30),
            file_size: Some(1 << 20),
            nice: Some(5),
            job_cpu_secs: Some(3600),
        }),
        project: "p1".into(),
        submit_queue: "route".into(),
        array_index: Some(3),
        array_id: "17[].srv".into(),
        array_torque: true,
        interactive: false,
    }
}

fn added_17() -> Additions {
    Additions {
        prologue: Some("/etc/qmesh/prologue".into()),
        epilogue: Some("/etc/qmesh/epilogue".into()),
        tmpdir_base: Some("/var/tmp".into()),
        commands_socket: Some("/run/qmesh/qmeshd.sock".into()),
        host: "h1".into(),
        gpus: vec![0, 2],
        cgroups: Some(Cgroups::V2 {
            base: "/sys/fs/cgroup/qmesh/var-spool-qmesh".into(),
            cpu: true,
        }),
    }
}

fn order_18() -> v1::LaunchJob {
    v1::LaunchJob {
        job: 18,
        job_id: "18.srv".into(),
        name: "plain".into(),
        script: b"echo plain\n".to_vec(),
        user: "bob".into(),
        uid: 1001,
        gid: 1001,
        nodes: vec!["n2".into()],
        walltime: 60,
        kill_grace: 10,
        queue: "batch".into(),
        ..Default::default()
    }
}

fn added_18() -> Additions {
    Additions {
        host: "h1".into(),
        tmpdir_base: Some("/var/tmp".into()),
        cgroups: Some(Cgroups::V1 {
            memory: "/sys/fs/cgroup/memory/qmesh/a".into(),
            cpu: Some("/sys/fs/cgroup/cpu/qmesh/a".into()),
            cpuacct: None,
        }),
        ..Additions::default()
    }
}

/// What an agent of any version keeps of an order (but its script) and
/// its additions, as read back from a file of `version`.
fn as_kept(version: u32, order: v1::LaunchJob, added: Additions) -> Launch {
    let order = v1::LaunchJob {
        script: Vec::new(),
        ..order
    };
    Launch {
        version,
        order,
        added,
    }
}

#[test]
fn a_version_1_spool_reads_into_the_same_launches_and_ends() {
    let spool = Spool::open(&fixture("spool-v1")).unwrap();
    let dirs = spool.scan().unwrap();
    let seqs: Vec<u64> = dirs.iter().map(|d| d.seq).collect();
    assert_eq!(seqs, vec![17, 18, 19]);

    let running = spool.job(17);
    let launch = running.read_launch().unwrap();
    assert_eq!(launch, as_kept(1, order_17(), added_17()));
    // The files made from it are what the new agent would make.
    let file = |name: &str| std::fs::read_to_string(running.file(name)).unwrap();
    assert_eq!(file(record::NODE_FILE), record::node_file_text(&launch));
    assert_eq!(
        file(record::GPU_FILE),
        record::gpu_file_text(&launch.added.host, &launch.added.gpus)
    );
    assert_eq!(running.read_result().unwrap(), None);
    assert_eq!(running.read_pid("shepherd.pid"), Some(4100));
    assert_eq!(running.read_pid("job.pid"), Some(4101));
    assert!(qmesh_agent::signals::pending(&running));

    let ended = spool.job(18);
    assert_eq!(
        ended.read_launch().unwrap(),
        as_kept(1, order_18(), added_18())
    );
    let result = ended.read_result().unwrap().unwrap();
    assert_eq!(
        result,
        v1::JobFinished {
            job: 18,
            exit_code: None,
            signal: Some(15),
            cause: v1::FinishCause::Walltime as i32,
            message: "still running 10 s after SIGTERM, killed with SIGKILL".into(),
            start_time: 1_700_000_000,
            end_time: 1_700_000_075,
            cput: Some(42),
            max_rss: Some(5 << 20),
            vmem: Some(9 << 20),
        }
    );

    let lost = spool.job(19).read_result().unwrap().unwrap();
    assert_eq!(lost.cause(), v1::FinishCause::Lost, "version 1's UNKNOWN");
    assert_eq!(
        (lost.start_time, lost.end_time),
        (1_700_000_050, 1_700_000_100)
    );
}

#[tokio::test]
async fn a_version_1_joined_record_still_holds_its_nodes() {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let joined =
        qmesh_agent::joined::Joined::open(&fixture("spool-v1"), Default::default(), None, tx)
            .unwrap();
    assert_eq!(joined.jobs(), vec![21]);
    assert_eq!(
        joined.held_nodes(),
        vec!["n4".to_string(), "n5".to_string()]
    );
}
