//! The hook's document and answers: echoing the job back changes
//! nothing, each attribute a hook may set lands where qsub's option
//! would, and what it may not set is refused by name.

use serde_json::json;

use super::*;

fn sub() -> (Submission, JobPayload) {
    let sub = Submission {
        name: Some("sim".into()),
        script_name: "sim.sh".into(),
        resources: vec![
            ("select".into(), "2:ncpus=4".into()),
            ("walltime".into(), "1:00:00".into()),
        ],
        workdir: "/home/alice".into(),
        submit_host: "login1".into(),
        priority: Some(5),
        ..Submission::default()
    };
    let payload = JobPayload {
        script: b"#!/bin/sh\necho hi\n".to_vec(),
        env: vec![("PBS_O_HOME".into(), "/home/alice".into())],
    };
    (sub, payload)
}

#[test]
fn echoing_the_whole_job_back_changes_nothing() {
    let (mut s, mut p) = sub();
    let (s0, p0) = (s.clone(), p.clone());
    let whole = json!({"event": "queuejob", "job": submission(&s, &p)});
    apply_to_submission(whole, &mut s, &mut p).unwrap();
    assert_eq!((s, p), (s0, p0));
}

#[test]
fn a_hook_moves_the_job_merges_resources_and_variables() {
    let (mut s, mut p) = sub();
    let answer = json!({
        "queue": "debug",
        "Resource_List": {"walltime": "0:30:00", "mem": "4gb", "select": null},
        "Variable_List": {"SITE": "x"},
        "Priority": "7",
        "Rerunable": "n",
        "Join_Path": "oe",
        "Hold_Types": "u",
        "Execution_Time": 1_800_000_000,
        "Account_Name": null,
    });
    apply_to_submission(answer, &mut s, &mut p).unwrap();
    assert_eq!(s.queue.as_deref(), Some("debug"));
    assert_eq!(
        s.resources,
        [
            ("walltime".to_string(), "0:30:00".to_string()),
            ("mem".to_string(), "4gb".to_string())
        ]
    );
    assert_eq!(
        p.env.last().unwrap(),
        &("SITE".to_string(), "x".to_string())
    );
    assert_eq!((s.priority, s.rerunnable), (Some(7), Some(false)));
    assert!(s.join_output && !s.join_to_error && s.hold);
    assert_eq!(s.start_after.unwrap().timestamp(), 1_800_000_000);
}

#[test]
fn what_a_hook_may_not_set_is_refused_by_name() {
    for (answer, want) in [
        (
            json!({"colour": "red"}),
            "\"colour\", which is no attribute of a job",
        ),
        (
            json!({"interactive": true}),
            "changed interactive, which a hook may read",
        ),
        (json!({"PBS_O_WORKDIR": "/tmp"}), "changed PBS_O_WORKDIR"),
        (json!({"Priority": 5_000_000_000u64}), "-1024 to 1023"),
        (json!({"Join_Path": "x"}), "write oe, eo or n"),
        (json!({"Resource_List": "walltime=1"}), "not an object"),
        (json!({"Job_Name": ["a"]}), "not a string"),
        (json!({"job": 3}), "\"job\" that is not an object"),
        (json!([1, 2]), "not an object"),
    ] {
        let (mut s, mut p) = sub();
        let err = apply_to_submission(answer.clone(), &mut s, &mut p).unwrap_err();
        assert!(err.contains(want), "{answer}: {err}");
    }
}

#[test]
fn a_modifyjob_hook_reads_only_what_is_altered_and_may_drop_it() {
    let mut alt = Alteration {
        resources: vec![("walltime".into(), "10:00:00".into())],
        name: Some("renamed".into()),
        ..Alteration::default()
    };
    let shown = alteration(&alt);
    assert_eq!(
        shown,
        json!({"Resource_List": {"walltime": "10:00:00"}, "Job_Name": "renamed"})
    );
    apply_to_alteration(
        json!({"job": {"Resource_List": {"walltime": "2:00:00"}, "Job_Name": null}}),
        &mut alt,
    )
    .unwrap();
    assert_eq!(
        alt.resources,
        [("walltime".to_string(), "2:00:00".to_string())]
    );
    assert_eq!(alt.name, None);
    let err = apply_to_alteration(json!({"queue": "x"}), &mut alt).unwrap_err();
    assert!(err.contains("\"queue\", which is no attribute"), "{err}");
}
