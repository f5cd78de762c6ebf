//! Hooks run as real processes: accepted, changed, rejected, and each
//! fault (a hang, a crash, garbage, a missing interpreter) a clear refusal
//! while the caller goes on.

use std::collections::BTreeMap;

use qmesh_core::hook::Hook;

use super::*;

fn peer() -> Peer {
    Peer {
        uid: 1000,
        gid: 1000,
        user: "alice".into(),
        group: "users".into(),
        host: None,
    }
}

fn hooks_with(list: &[(&str, &str)], dir: &Path) -> SiteHooks {
    let (hooks, publisher) = SiteHooks::new(dir.join("hooks"));
    let mut map = BTreeMap::new();
    for (i, (name, content)) in list.iter().enumerate() {
        let mut h = Hook::new(name);
        h.events = vec!["queuejob".into(), "modifyjob".into(), "runjob".into()];
        h.content = content.as_bytes().to_vec();
        h.content_type = "application/x-executable".into();
        h.order = i as u32 + 1;
        h.alarm = 2;
        map.insert(name.to_string(), h);
    }
    publish(&publisher, "srv", &map);
    std::mem::forget(publisher);
    hooks
}

fn job() -> (Submission, JobPayload) {
    let sub = Submission {
        name: Some("sim".into()),
        resources: vec![("walltime".into(), "1:00:00".into())],
        ..Submission::default()
    };
    (sub, JobPayload::default())
}

async fn submit(hooks: &SiteHooks) -> Result<Submission, Refusal> {
    let (mut s, mut p) = job();
    hooks.queuejob(&peer(), &mut s, &mut p).await.map(|()| s)
}

#[tokio::test]
async fn hooks_chain_each_seeing_the_change_before() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = hooks_with(
        &[
            // No #!: run by sh. Moves every job to "debug".
            ("a_route", "cat >/dev/null; echo '{\"queue\": \"debug\"}'"),
            // Reads the queue the first set and records it in the name.
            (
                "b_name",
                "#!/bin/sh\nq=$(grep -o '\"queue\":\"[a-z]*\"' | cut -d'\"' -f4)\n\
                 printf '{\"job\": {\"Job_Name\": \"in_%s\"}}' \"$q\"\n",
            ),
        ],
        dir.path(),
    );
    let s = submit(&hooks).await.unwrap();
    assert_eq!(s.queue.as_deref(), Some("debug"));
    assert_eq!(s.name.as_deref(), Some("in_debug"));
}

#[tokio::test]
async fn a_rejection_carries_the_sites_message() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = hooks_with(
        &[(
            "quota",
            "#!/bin/sh\necho 'project p1 is over its allocation' >&2\nexit 3\n",
        )],
        dir.path(),
    );
    let refusal = submit(&hooks).await.unwrap_err();
    assert_eq!(
        refusal.failure,
        HookFailure::Rejected {
            message: "project p1 is over its allocation".into(),
            status: 3
        }
    );
    let status = refusal.status();
    assert_eq!(status.code(), tonic::Code::PermissionDenied);
    assert_eq!(status.message(), "project p1 is over its allocation");
}

#[tokio::test]
async fn faults_are_refusals_that_name_the_hook() {
    let dir = tempfile::tempdir().unwrap();
    for (content, want) in [
        // Hangs, with a child holding its output open: killed at the alarm.
        (
            "#!/bin/sh\nsleep 60 &\nsleep 60\n",
            "did not answer within its alarm (2 s)",
        ),
        ("#!/bin/sh\nkill -SEGV $$\n", "killed by signal 11"),
        ("#!/bin/sh\necho 'all good!'\n", "printed what is not JSON"),
        ("#!/bin/sh\necho '[1]'\n", "JSON that is not an object"),
        ("#!/no/such/interpreter\n", "could not be started"),
        (
            "#!/bin/sh\necho '{\"colour\": 1}'\n",
            "no attribute of a job",
        ),
    ] {
        let hooks = hooks_with(&[("broken", content)], dir.path());
        let began = std::time::Instant::now();
        let refusal = submit(&hooks).await.unwrap_err();
        let status = refusal.status();
        assert_eq!(status.code(), tonic::Code::FailedPrecondition, "{content}");
        assert!(
            status.message().contains(want) && status.message().contains("hook \"broken\""),
            "{content}: {}",
            status.message()
        );
        assert!(began.elapsed() < std::time::Duration::from_secs(30));
    }
}

#[tokio::test]
async fn a_hook_that_does_not_read_its_input_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = hooks_with(&[("lazy", "#!/bin/sh\nexit 0\n")], dir.path());
    let s = submit(&hooks).await.unwrap();
    assert_eq!(s, job().0);
}

#[tokio::test]
async fn a_modifyjob_hook_judges_the_alteration() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = hooks_with(
        &[(
            "cap",
            "#!/bin/sh\nif grep -q '\"walltime\":\"99:00:00\"'; then echo 'walltime too long' >&2; exit 1; fi\n",
        )],
        dir.path(),
    );
    let mut ok = Alteration {
        resources: vec![("walltime".into(), "2:00:00".into())],
        ..Alteration::default()
    };
    hooks.modifyjob(&peer(), "12", &mut ok).await.unwrap();
    let mut long = Alteration {
        resources: vec![("walltime".into(), "99:00:00".into())],
        ..Alteration::default()
    };
    let refusal = hooks.modifyjob(&peer(), "12", &mut long).await.unwrap_err();
    assert_eq!(refusal.status().message(), "walltime too long");
}

#[tokio::test]
async fn a_new_content_gets_a_new_file_and_the_old_one_goes() {
    let dir = tempfile::tempdir().unwrap();
    let (hooks, publisher) = SiteHooks::new(dir.path().join("hooks"));
    let mut h = Hook::new("h");
    h.events = vec!["queuejob".into()];
    h.content = b"#!/bin/sh\necho '{\"queue\":\"a\"}'\n".to_vec();
    let mut map = BTreeMap::from([("h".to_string(), h.clone())]);
    publish(&publisher, "srv", &map);
    assert_eq!(submit(&hooks).await.unwrap().queue.as_deref(), Some("a"));
    h.content = b"#!/bin/sh\necho '{\"queue\":\"b\"}'\n".to_vec();
    map.insert("h".into(), h);
    publish(&publisher, "srv", &map);
    assert_eq!(submit(&hooks).await.unwrap().queue.as_deref(), Some("b"));
    let files: Vec<_> = std::fs::read_dir(dir.path().join("hooks"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
}

/// A persistent hook in Python: names each job after its own pid,
/// refuses jobs named "no", and hangs on jobs named "hang".
const RESIDENT: &str = r#"#!/usr/bin/env python3
import json, os, sys, time
for line in sys.stdin:
    job = json.loads(line)["job"]
    if job["Job_Name"] == "no":
        print(json.dumps({"reject": "not this one"}), flush=True)
    elif job["Job_Name"] == "hang":
        time.sleep(60)
    else:
        print(json.dumps({"Job_Name": "pid%d" % os.getpid()}), flush=True)
"#;

#[tokio::test]
async fn a_persistent_hook_answers_many_from_one_process_and_restarts_after_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let (hooks, publisher) = SiteHooks::new(dir.path().join("hooks"));
    let mut h = Hook::new("resident");
    h.events = vec!["queuejob".into()];
    h.content = RESIDENT.as_bytes().to_vec();
    h.persistent = true;
    h.alarm = 3;
    publish(
        &publisher,
        "srv",
        &BTreeMap::from([("resident".to_string(), h)]),
    );
    let named = |name: &str| {
        let hooks = hooks.clone();
        let name = name.to_string();
        async move {
            let (mut s, mut p) = job();
            s.name = Some(name);
            hooks
                .queuejob(&peer(), &mut s, &mut p)
                .await
                .map(|()| s.name.unwrap())
        }
    };
    let first = named("a").await.unwrap();
    assert!(first.starts_with("pid"), "{first}");
    assert_eq!(
        named("b").await.unwrap(),
        first,
        "the same process answered"
    );
    let refusal = named("no").await.unwrap_err();
    assert_eq!(refusal.status().message(), "not this one");
    let refusal = named("hang").await.unwrap_err();
    assert!(
        refusal
            .status()
            .message()
            .contains("did not answer within its alarm (3 s)"),
        "{}",
        refusal.status().message()
    );
    let again = named("c").await.unwrap();
    assert!(
        again.starts_with("pid") && again != first,
        "a new process: {again}"
    );
}
