//! Host-level site resources: reading what jobs ask, matching nodes,
//! consuming per node on shared sets, the first node, the refusals.

use super::*;
use crate::JobId;
use crate::access::Role;
use crate::job::{ExitCause, JobExit};
use crate::node::{NodeAttrs, NodeDef, NodeSet, Topology};
use crate::node_group::NodeGroup;
use crate::queue::Queue;
use crate::scheduler::{Reason, Scheduler};
use crate::site_resources::{ResourceDef, parse_flags};
use crate::state::State;
use crate::state::tests::{caller, t};
use crate::submit::Submission;

fn def(name: &str, kind: ResourceType, flags: &str) -> ResourceDef {
    ResourceDef {
        name: name.into(),
        kind,
        flags: parse_flags(flags, kind).unwrap(),
    }
}

/// The site's resources: scratch (size, nh), model (string, h), nmics
/// (long, nh), bigmem (boolean, h), lic (long, fh), matlab (long, q),
/// os (string_array, h).
fn site() -> Config {
    let mut config = Config::default();
    for d in [
        def("scratch", ResourceType::Size, "nh"),
        def("model", ResourceType::String, "h"),
        def("nmics", ResourceType::Long, "nh"),
        def("bigmem", ResourceType::Boolean, "h"),
        def("lic", ResourceType::Long, "fh"),
        def("matlab", ResourceType::Long, "q"),
        def("os", ResourceType::StringArray, "h"),
    ] {
        config.resources.insert(d.name.clone(), d);
    }
    config
}

fn host(name: &str, value: &str, kind: ResourceType) -> HostResource {
    HostResource {
        name: name.into(),
        value: value.into(),
        kind,
        consumed: Consumed::No,
    }
}

/// A flat set of nodes `PREFIX0..` on one host each (`PREFIX0` on host
/// `PREFIXh0`), with these resources and job slots.
fn set(name: &str, nodes: usize, resources: &[(&str, &str)], slots: Option<u32>) -> NodeSet {
    NodeSet {
        name: name.into(),
        topology: Topology::Flat,
        nodes: (0..nodes)
            .map(|i| NodeDef {
                name: format!("{name}{i}"),
                host: format!("{name}h{i}"),
            })
            .collect(),
        attrs: NodeAttrs {
            jobs_per_node: slots,
            resources: resources
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            ..NodeAttrs::default()
        },
    }
}

/// One open queue `batch` over `sets` (in order), the site's resources,
/// every host up.
fn state_of(sets: Vec<NodeSet>) -> State {
    let mut config = site();
    let mut group = NodeGroup::new("all");
    group.sets = sets.iter().map(|s| s.name.clone()).collect();
    config.node_groups.insert("all".into(), group);
    let mut queue = Queue::open("batch");
    queue.node_group = Some("all".into());
    config.queues.insert("batch".into(), queue);
    let hosts: Vec<String> = sets
        .iter()
        .flat_map(|s| s.nodes.iter().map(|d| d.host.clone()))
        .collect();
    let mut state = State::new("srv", config, sets).unwrap();
    for h in hosts {
        state.set_host_up(&h, true);
    }
    state
}

fn submit(s: &mut State, resources: &[(&str, &str)]) -> Result<JobId, CoreError> {
    let sub = Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        resources: resources
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        ..Submission::default()
    };
    s.submit(sub, &caller(1000, Role::User), t(0)).map(|j| j.id)
}

/// Runs a pass and starts what it says: each start's node names.
fn pass(s: &mut State, now: i64) -> Vec<(JobId, Vec<String>)> {
    let plan = Scheduler.pass(s, t(now));
    let mut out = Vec::new();
    for start in &plan.starts {
        s.start(start.job, &start.nodes, t(now)).unwrap();
        let names = start
            .nodes
            .iter()
            .map(|&i| s.nodes()[i].name.to_string())
            .collect();
        out.push((start.job, names));
    }
    s.check_invariants().unwrap();
    out
}

fn end(s: &mut State, id: JobId, now: i64) {
    let exit = JobExit {
        code: Some(0),
        signal: None,
        cause: ExitCause::Exited,
        message: String::new(),
        cput: None,
        max_rss: None,
        vmem: None,
    };
    s.finish(id, exit, t(now)).unwrap();
}

#[test]
fn values_are_served_by_as_much_or_the_same() {
    let scratch = host("scratch", "100gb", ResourceType::Size);
    assert!(scratch.served_by(Some("400gb")));
    assert!(scratch.served_by(Some("102400mb")));
    assert!(!scratch.served_by(Some("50gb")));
    assert!(!scratch.served_by(None), "a set that does not name it");
    assert!(!scratch.served_by(Some("lots")));
    let model = host("model", "skylake", ResourceType::String);
    assert!(model.served_by(Some("skylake")));
    assert!(!model.served_by(Some("icelake")));
    let off = host("bigmem", "False", ResourceType::Boolean);
    assert!(off.served_by(None), "an unset boolean is false");
    assert!(off.served_by(Some("false")));
    assert!(!off.served_by(Some("True")));
    assert!(host("bigmem", "true", ResourceType::Boolean).served_by(Some("True")));
    let os = host("os", "rhel8", ResourceType::StringArray);
    assert!(os.served_by(Some("rhel7,rhel8")));
    assert!(!os.served_by(Some("rhel7")));
}

#[test]
fn a_request_asks_the_largest_of_its_chunks_and_its_job_wide_values() {
    let config = site();
    let read = |list: &[(&str, &str)]| {
        let site: Vec<&str> = config.requestable_site_resources();
        let mut req = ResourceRequest::parse_with(list.iter().copied(), &site)?;
        check_chunks(&config, &mut req)?;
        of_request(&config, &req).map(|host| (host, req.notes))
    };
    let (host, notes) = read(&[
        (
            "select",
            "1:scratch=100gb:model=skylake+2:scratch=200gb:ncpus=2",
        ),
        ("nmics", "2"),
        ("matlab", "1"),
    ])
    .unwrap();
    let got: Vec<(&str, &str, Consumed)> = host
        .iter()
        .map(|r| (r.name.as_str(), r.value.as_str(), r.consumed))
        .collect();
    assert_eq!(
        got,
        [
            ("scratch", "200gb", Consumed::PerNode),
            ("model", "skylake", Consumed::No),
            ("nmics", "2", Consumed::PerNode),
        ],
        "matlab is consumed per queue and server, not by nodes"
    );
    assert!(notes.is_empty(), "everything is matched: {notes:?}");

    let (_, notes) = read(&[("select", "1:arch=linux:model=skylake")]).unwrap();
    assert_eq!(
        notes,
        ["chunk resources arch are recorded, not matched to nodes"]
    );
    let err = read(&[("select", "1:model=skylake+1:model=icelake")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("model") && err.contains("another chunk asks for model=skylake"),
        "{err}"
    );
    let err = read(&[("select", "1:scratch=lots")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("scratch") && err.contains("size value"),
        "{err}"
    );
    let err = read(&[("select", "1:frobs=2")]).unwrap_err().to_string();
    assert!(
        err.contains("unknown resource \"frobs\"") && err.contains("defined here: bigmem"),
        "{err}"
    );
}

#[test]
fn jobs_run_only_on_nodes_that_have_what_they_ask() {
    let mut s = state_of(vec![
        set(
            "small",
            2,
            &[("scratch", "100gb"), ("model", "icelake")],
            None,
        ),
        set(
            "big",
            2,
            &[("scratch", "400gb"), ("model", "skylake")],
            None,
        ),
    ]);
    let a = submit(&mut s, &[("select", "1:scratch=200gb")]).unwrap();
    let b = submit(&mut s, &[("model", "skylake"), ("nodes", "1")]).unwrap();
    let c = submit(&mut s, &[("select", "1:scratch=50gb")]).unwrap();
    let d = submit(&mut s, &[("select", "1:model=skylake")]).unwrap();
    let started = pass(&mut s, 1);
    assert_eq!(
        started,
        [
            (a, vec!["big0".to_string()]),
            (b, vec!["big1".to_string()]),
            (c, vec!["small0".to_string()]),
        ]
    );
    assert_eq!(
        Scheduler.pass(&s, t(2)).entry(d).unwrap().reason,
        Some(Reason::Resources),
        "big is full; small's icelake will not do"
    );
    // An exclusive set: a node's value is a requirement, not shared out.
    end(&mut s, a, 3);
    assert_eq!(pass(&mut s, 4), [(d, vec!["big0".to_string()])]);
}

#[test]
fn a_job_no_node_could_serve_is_refused_with_the_figures() {
    let mut s = state_of(vec![set(
        "big",
        2,
        &[("scratch", "400gb"), ("model", "skylake")],
        None,
    )]);
    let err = submit(&mut s, &[("select", "1:scratch=500gb")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("scratch=500gb") && err.contains("scratch=400gb") && err.contains("never run"),
        "{err}"
    );
    let err = submit(&mut s, &[("model", "icelake")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("model=icelake") && err.contains("model=skylake"),
        "{err}"
    );
    let err = submit(&mut s, &[("select", "1:lic=1")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("its first node must have lic=1") && err.contains("big:"),
        "{err}"
    );
    assert!(submit(&mut s, &[("select", "2:scratch=400gb")]).is_ok());
}

#[test]
fn on_a_shared_set_the_jobs_of_a_node_share_what_it_has() {
    let mut s = state_of(vec![set("pool", 1, &[("nmics", "2")], Some(4))]);
    let ids: Vec<JobId> = (0..3)
        .map(|_| submit(&mut s, &[("select", "1:nmics=1")]).unwrap())
        .collect();
    let plain = submit(&mut s, &[("nodes", "1")]).unwrap();
    let started: Vec<JobId> = pass(&mut s, 1).into_iter().map(|(id, _)| id).collect();
    assert_eq!(
        started,
        [ids[0], ids[1], plain],
        "two MICs: two jobs use them"
    );
    let reason = Scheduler.pass(&s, t(2)).entry(ids[2]).unwrap().reason;
    assert_eq!(reason, Some(Reason::Placement));
    let why = placement_note(s.job(ids[2]).unwrap()).unwrap();
    assert!(why.contains("not with nmics=1 left"), "{why}");
    end(&mut s, ids[0], 3);
    let started: Vec<JobId> = pass(&mut s, 4).into_iter().map(|(id, _)| id).collect();
    assert_eq!(started, [ids[2]]);
}

#[test]
fn flag_f_uses_a_resource_up_on_the_first_node_only() {
    let mut s = state_of(vec![set("pool", 2, &[("lic", "1")], Some(4))]);
    let a = submit(&mut s, &[("select", "2:lic=1")]).unwrap();
    let b = submit(&mut s, &[("select", "2:lic=1")]).unwrap();
    let c = submit(&mut s, &[("select", "1:lic=1")]).unwrap();
    let started = pass(&mut s, 1);
    assert_eq!(started.len(), 2, "{started:?}");
    let first = |id: JobId| {
        started
            .iter()
            .find(|(j, _)| *j == id)
            .map(|(_, n)| n[0].clone())
            .unwrap()
    };
    assert_ne!(first(a), first(b), "each first node has one licence");
    assert_eq!(
        Scheduler.pass(&s, t(2)).entry(c).unwrap().reason,
        Some(Reason::Placement)
    );
}

#[test]
fn a_boolean_resource_of_a_set_serves_a_chunk_that_asks_it_as_a_feature() {
    let mut s = state_of(vec![
        set("thin", 1, &[], None),
        set("fat", 1, &[("bigmem", "True")], None),
    ]);
    let fat = submit(&mut s, &[("select", "1:bigmem=True")]).unwrap();
    let thin = submit(&mut s, &[("select", "1:bigmem=false")]).unwrap();
    assert_eq!(
        pass(&mut s, 1),
        [
            (fat, vec!["fat0".to_string()]),
            (thin, vec!["thin0".to_string()])
        ]
    );
}
