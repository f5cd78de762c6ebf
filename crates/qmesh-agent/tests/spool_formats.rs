//! Spools written by older agents still read the same. An agent upgraded
//! while shepherds run adopts them from the spool, and their shepherds
//! (of the old binary) go on writing the old formats; so each version of
//! a spool file is kept here as its agent wrote it, and read.
//!
//! `fixtures/spool-vN` holds what the agent of launch.json version N
//! wrote (`Spool::prepare`, `JobDir::write_result`, `signals::post`, a
//! join) from the orders, additions and ends built below: job 17 runs
//! (every field of its launch set, a signal request waiting), 18 ended
//! at its wall time, 19's end is unknown; 21 is a job joined from host h1.
//! Version 1 was written by the agent before launch.json held the wire's
//! order (its files were all of version 1); the others by
//! [`write_a_fixture`], which a new version runs once:
//! `QMESH_WRITE_FIXTURE=DIR cargo test -p qmesh-agent --test spool_formats
//! -- --ignored`.

use std::path::{Path, PathBuf};

use nix::sys::signal::Signal;
use qmesh_agent::joined::Joined;
use qmesh_agent::record::{self, Additions, Cgroups, LAUNCH_VERSION, Launch};
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
        sandbox_private: false,
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
            freezer: None,
        }),
        ..Additions::default()
    }
}

fn order_19() -> v1::LaunchJob {
    v1::LaunchJob {
        job: 19,
        job_id: "19.srv".into(),
        script: b"true\n".to_vec(),
        user: "bob".into(),
        uid: 1001,
        gid: 1001,
        nodes: vec!["n1".into()],
        ..Default::default()
    }
}

fn end_18() -> v1::JobFinished {
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
}

fn end_19() -> v1::JobFinished {
    v1::JobFinished {
        start_time: 1_700_000_050,
        ..record::finish(
            19,
            v1::FinishCause::Lost,
            "the shepherd ended while the job (pid 4300) ran; its exit status is unknown".into(),
            1_700_000_100,
        )
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

/// A spool of launch.json `version` reads into the same launches and
/// ends, and the files made from them are what this agent would make.
fn reads_the_same(version: u32) {
    let root = fixture(&format!("spool-v{version}"));
    let spool = Spool::open(&root).unwrap();
    let seqs: Vec<u64> = spool.scan().unwrap().iter().map(|d| d.seq).collect();
    assert_eq!(seqs, vec![17, 18, 19]);

    let running = spool.job(17);
    let launch = running.read_launch().unwrap();
    assert_eq!(launch, as_kept(version, order_17(), added_17()));
    let file = |name: &str| std::fs::read_to_string(running.file(name)).unwrap();
    assert_eq!(file(record::NODE_FILE), record::node_file_text(&launch));
    assert_eq!(
        file(record::GPU_FILE),
        record::gpu_file_text(&launch.added.host, &launch.added.gpus)
    );
    assert_eq!(file(record::SCRIPT_FILE).as_bytes(), order_17().script);
    assert_eq!(running.read_result().unwrap(), None);
    assert_eq!(running.read_pid(record::SHEPHERD_PID_FILE), Some(4100));
    assert_eq!(running.read_pid(record::JOB_PID_FILE), Some(4101));
    assert_eq!(file(record::KILL_REASON_FILE), "qdel by alice");
    assert!(qmesh_agent::signals::pending(&running));

    let ended = spool.job(18);
    assert_eq!(
        ended.read_launch().unwrap(),
        as_kept(version, order_18(), added_18())
    );
    assert_eq!(ended.read_result().unwrap(), Some(end_18()));
    let lost = spool.job(19);
    assert_eq!(
        lost.read_launch().unwrap(),
        as_kept(version, order_19(), Additions::default())
    );
    assert_eq!(lost.read_result().unwrap(), Some(end_19()));
}

#[test]
fn a_version_1_spool_reads_into_the_same_launches_and_ends() {
    reads_the_same(1);
}

#[test]
fn a_version_2_spool_reads_into_the_same_launches_and_ends() {
    reads_the_same(2);
}

#[tokio::test]
async fn a_joined_record_still_holds_its_nodes() {
    for version in [1, 2] {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let root = fixture(&format!("spool-v{version}"));
        let joined = Joined::open(&root, Default::default(), None, tx).unwrap();
        assert_eq!(joined.jobs(), vec![21]);
        assert_eq!(
            joined.held_nodes(),
            vec!["n4".to_string(), "n5".to_string()]
        );
    }
}

/// Writes the spool above, as this agent writes it, into
/// `$QMESH_WRITE_FIXTURE` (to be committed as `fixtures/spool-vN` when N
/// is a new launch.json version).
#[tokio::test]
#[ignore = "writes a fixture for a new version of the spool's formats"]
async fn write_a_fixture() {
    let Some(root) = std::env::var_os("QMESH_WRITE_FIXTURE") else {
        return;
    };
    let root = PathBuf::from(root);
    let spool = Spool::open(&root).unwrap();
    let prepare = |mut order: v1::LaunchJob, added: Additions| {
        let script = std::mem::take(&mut order.script);
        let launch = Launch::new(order, added);
        spool.prepare(&launch, &script).unwrap().unwrap()
    };
    let running = prepare(order_17(), added_17());
    running.write_pid(record::SHEPHERD_PID_FILE, 4100).unwrap();
    running.write_pid(record::JOB_PID_FILE, 4101).unwrap();
    let reason = running.file(record::KILL_REASON_FILE);
    record::write_atomic(&reason, b"qdel by alice", 0o644).unwrap();
    qmesh_agent::signals::post(
        &running,
        qmesh_agent::signals::Order::Signal(Signal::SIGUSR1),
        "qsig by alice",
    )
    .unwrap();
    prepare(order_18(), added_18())
        .write_result(&end_18())
        .unwrap();
    prepare(order_19(), Additions::default())
        .write_result(&end_19())
        .unwrap();

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let joined = Joined::open(&root, Default::default(), None, tx).unwrap();
    joined.join(v1::JoinJob {
        job: 21,
        job_id: "21.srv".into(),
        user: "alice".into(),
        group: "users".into(),
        nodes: vec!["n4".into(), "n5".into()],
        launched_on: "h1".into(),
        ..Default::default()
    });
    rx.recv().await.unwrap();
    eprintln!("written: commit it as fixtures/spool-v{LAUNCH_VERSION}");
}
