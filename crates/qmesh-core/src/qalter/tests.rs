use super::*;
use crate::JobState;
use crate::state::tests::{caller, state, submit, t};
use crate::submit::Submission;

fn resources(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn submit_with(s: &mut State, pairs: &[(&str, &str)]) -> JobId {
    s.submit(
        Submission {
            script_name: "job.sh".into(),
            workdir: "/home/u".into(),
            resources: resources(pairs),
            ..Submission::default()
        },
        &caller(1000, Role::User),
        t(0),
    )
    .unwrap()
    .id
}

#[test]
fn a_queued_job_s_resources_are_merged_read_and_checked() {
    let mut s = state(4);
    let id = submit(&mut s, 1000, 2);
    let owner = caller(1000, Role::User);
    let alt = Alteration {
        resources: resources(&[("walltime", "02:00:00")]),
        ..Alteration::default()
    };
    let (changes, job) = s.alter(id, &owner, &alt, t(1)).unwrap();
    assert_eq!(changes, ["Resource_List.walltime=02:00:00"]);
    assert_eq!((job.nodes, job.walltime), (2, 7200), "nodes kept");
    assert_eq!(job.resource_list["walltime"], "02:00:00");
    s.check_invariants().unwrap();
    // Torque's nodes form replaces the select made from the old nodes.
    let alt = Alteration {
        resources: resources(&[("nodes", "3:ppn=2")]),
        ..Alteration::default()
    };
    let (_, job) = s.alter(id, &owner, &alt, t(2)).unwrap();
    assert_eq!((job.nodes, job.ncpus, job.walltime), (3, Some(2), 7200));
    assert_eq!(job.resource_list["select"], "3:ncpus=2:mpiprocs=2");
    s.check_invariants().unwrap();
    // And PBS Pro's select replaces nodes.
    let alt = Alteration {
        resources: resources(&[("select", "1:ncpus=4:mem=2gb")]),
        ..Alteration::default()
    };
    let (_, job) = s.alter(id, &owner, &alt, t(3)).unwrap();
    assert_eq!((job.nodes, job.ncpus, job.mem), (1, Some(4), Some(2 << 30)));
    assert!(!job.resource_list.contains_key("nodes"));
    // A node-level resource of a select job belongs in select (PBS).
    let alt = Alteration {
        resources: resources(&[("mem", "4gb")]),
        ..Alteration::default()
    };
    let err = s.alter(id, &owner, &alt, t(4)).unwrap_err();
    assert!(err.to_string().contains("put it in the chunk"), "{err}");
    s.check_invariants().unwrap();
}

#[test]
fn all_or_nothing_the_queue_s_limits_hold() {
    let mut s = state(4);
    let mut config = s.config().clone();
    config.queues.get_mut("batch").unwrap().max_walltime = Some(3600);
    s.set_config(config);
    let id = submit(&mut s, 1000, 1);
    let alt = Alteration {
        name: Some("renamed".into()),
        resources: resources(&[("walltime", "02:00:00")]),
        ..Alteration::default()
    };
    let err = s
        .alter(id, &caller(1000, Role::User), &alt, t(1))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("queue \"batch\" allows at most 01:00:00"),
        "{err}"
    );
    let job = s.job(id).unwrap();
    assert_eq!(job.name, "job.sh", "nothing changed");
    assert_eq!(job.walltime, 3600);
    let err = s
        .alter(
            id,
            &caller(1000, Role::User),
            &Alteration {
                resources: resources(&[("nodes", "9")]),
                ..Alteration::default()
            },
            t(1),
        )
        .unwrap_err();
    assert!(err.to_string().contains("could never run"), "{err}");
    s.check_invariants().unwrap();
}

#[test]
fn a_running_job_keeps_its_resources_and_account_but_takes_names_and_paths() {
    let mut s = state(2);
    let id = submit(&mut s, 1000, 1);
    s.start(id, &[0], t(1)).unwrap();
    let owner = caller(1000, Role::User);
    let err = s
        .alter(
            id,
            &owner,
            &Alteration {
                resources: resources(&[("walltime", "10")]),
                ..Alteration::default()
            },
            t(2),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("-l: the resources (its agent enforces the wall time it started with) of job 1.srv cannot change while it runs"),
        "{err}"
    );
    let alt = Alteration {
        name: Some("renamed".into()),
        stdout_path: Some("out/log".into()),
        workdir: "/scratch".into(),
        join: Some("oe".into()),
        priority: Some(5),
        ..Alteration::default()
    };
    let (changes, job) = s.alter(id, &owner, &alt, t(2)).unwrap();
    assert_eq!(job.name, "renamed");
    assert_eq!(
        job.stdout_path, "/scratch/out/log",
        "relative to qalter's directory"
    );
    assert!(job.join_output);
    assert_eq!(job.priority, 5);
    assert_eq!(job.state, JobState::Running);
    assert!(changes.contains(&"Output_Path=/scratch/out/log".to_string()));
    s.check_invariants().unwrap();
}

#[test]
fn rights_holds_and_run_count() {
    let mut s = state(2);
    let id = submit_with(&mut s, &[("nodes", "1")]);
    let other = caller(1001, Role::User);
    let err = s
        .alter(id, &other, &Alteration::default(), t(1))
        .unwrap_err();
    assert!(matches!(err, CoreError::NotYourJob { .. }), "{err}");
    let owner = caller(1000, Role::User);
    let hold = |list: &str| Alteration {
        hold_list: Some(list.into()),
        ..Alteration::default()
    };
    let (_, job) = s.alter(id, &owner, &hold("u"), t(1)).unwrap();
    assert_eq!(job.state, JobState::Held);
    let err = s.alter(id, &owner, &hold("o"), t(1)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("setting an operator hold needs operator rights"),
        "{err}"
    );
    s.alter(id, &caller(5, Role::Operator), &hold("o"), t(1))
        .unwrap();
    let (_, job) = s.alter(id, &owner, &hold("n"), t(2)).unwrap();
    assert_eq!(job.holds.types(), "o", "a user releases only the user hold");
    assert_eq!(job.state, JobState::Held);
    assert!(s.alter(id, &owner, &hold("nu"), t(2)).is_err());
    s.check_invariants().unwrap();
    let count = |n| Alteration {
        run_count: Some(n),
        ..Alteration::default()
    };
    let err = s.alter(id, &owner, &count(3), t(3)).unwrap_err();
    assert!(err.to_string().contains("raising the run_count"), "{err}");
    s.alter(id, &caller(5, Role::Operator), &count(3), t(3))
        .unwrap();
    s.alter(id, &owner, &count(1), t(3)).unwrap();
    assert_eq!(s.job(id).unwrap().run_count, 1, "users may lower it");
    let err = s
        .alter(
            id,
            &owner,
            &Alteration {
                join: Some("xy".into()),
                ..Alteration::default()
            },
            t(4),
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "-j xy: write oe, eo or n");
}
