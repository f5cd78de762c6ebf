//! Jobs in each state, shared by the tests of the listings.

use qmesh_proto::{JobInfo, JobState};

/// 2026-11-22 10:00:00 UTC, a Sunday.
pub const T0: i64 = 1_795_341_600;

pub fn running() -> JobInfo {
    JobInfo {
        id: "17.server".into(),
        name: "solver".into(),
        owner: "alice".into(),
        group: "users".into(),
        queue: "batch".into(),
        state: JobState::Running as i32,
        state_letter: "R".into(),
        nodes: 3,
        walltime: 3600,
        qtime: T0,
        stime: T0 + 60,
        mtime: T0 + 60,
        exec_nodes: vec!["n1".into(), "n2".into(), "n3".into()],
        stdout_path: "/home/alice/solver.o17".into(),
        stderr_path: "/home/alice/solver.e17".into(),
        rerunnable: true,
        run_count: 1,
        hold_types: "n".into(),
        submit_host: "login1".into(),
        server_time: T0 + 60 + 754,
        exit_status: None,
        ..Default::default()
    }
}

pub fn queued() -> JobInfo {
    JobInfo {
        id: "18.server".into(),
        name: "a_rather_long_job_name_indeed".into(),
        owner: "bob".into(),
        queue: "batch".into(),
        state: JobState::Queued as i32,
        state_letter: "Q".into(),
        nodes: 64,
        walltime: 48 * 3600,
        qtime: T0,
        reason: "Resources".into(),
        comment: "Not enough free nodes".into(),
        ..Default::default()
    }
}

pub fn finished() -> JobInfo {
    JobInfo {
        id: "16.server".into(),
        state: JobState::Finished as i32,
        state_letter: "F".into(),
        end_time: T0 + 60 + 100,
        exit_status: Some(271),
        exit_signal: Some(15),
        ..running()
    }
}
