use super::*;
use crate::node::{NodeDef, NodeMark, NodeSet};
use crate::queue::Queue;
use crate::server::Config;
use crate::state::tests::{caller, state, submit, t};
use crate::submit::Submission;

fn manager() -> Caller {
    caller(0, Role::Manager)
}

#[test]
fn past_a_stopped_queue_on_free_nodes_the_server_chooses() {
    let mut s = state(4);
    let mut config = s.config().clone();
    config.queues.get_mut("batch").unwrap().started = false;
    s.set_config(config);
    let busy = submit(&mut s, 1000, 1);
    let id = submit(&mut s, 1000, 2);
    s.start(busy, &[0], t(1)).unwrap();
    let on = s.qrun_nodes(id, &manager(), None, t(2)).unwrap();
    assert_eq!(on.nodes, [1, 2]);
    s.start_placed(id, &on.nodes, &on.parts, t(2)).unwrap();
    s.check_invariants().unwrap();
    // `-H -` lets the server choose too.
    let third = submit(&mut s, 1000, 1);
    assert_eq!(
        s.qrun_nodes(third, &manager(), Some("-"), t(3))
            .unwrap()
            .nodes,
        [3]
    );
    let fourth = submit(&mut s, 1000, 1);
    s.start(third, &[3], t(3)).unwrap();
    let err = s.qrun_nodes(fourth, &manager(), None, t(4)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot run job 4.srv: it asks for 1 nodes but only 0 node(s) of queue batch's node sets \
         are free; free some, or name them with qrun -H"
    );
}

#[test]
fn named_nodes_and_hosts_in_pbs_and_torque_forms() {
    let mut s = state(4);
    let id = submit(&mut s, 1000, 2);
    let m = manager();
    let on = s.qrun_nodes(id, &m, Some("n3+n1"), t(1)).unwrap();
    assert_eq!(on.nodes, [3, 1], "in the order named");
    let on = s
        .qrun_nodes(id, &m, Some("(n2:ncpus=4)+(n0:ncpus=4)"), t(1))
        .unwrap();
    assert_eq!(on.nodes, [2, 0]);
    // A host alone: all the job's nodes there (Torque).
    assert_eq!(s.qrun_nodes(id, &m, Some("h"), t(1)).unwrap().nodes, [0, 1]);
    // A host per node: one free node each.
    assert_eq!(
        s.qrun_nodes(id, &m, Some("h+h"), t(1)).unwrap().nodes,
        [0, 1]
    );
    let err = s.qrun_nodes(id, &m, Some("n1"), t(1)).unwrap_err();
    assert!(
        matches!(err, CommandError::NodeCount { named: 1, .. }),
        "{err}"
    );
    let err = s.qrun_nodes(id, &m, Some("n1+n1"), t(1)).unwrap_err();
    assert!(err.to_string().contains("names node n1 twice"), "{err}");
    let err = s.qrun_nodes(id, &m, Some("n1+nope"), t(1)).unwrap_err();
    assert!(
        matches!(err, CommandError::Core(CoreError::NoSuchNode { .. })),
        "{err}"
    );
    let err = s.qrun_nodes(id, &m, Some("n1+()"), t(1)).unwrap_err();
    assert!(matches!(err, CommandError::BadNodeSpec { .. }), "{err}");
}

#[test]
fn nodes_that_are_not_free_are_named_with_the_reason() {
    let mut s = state(4);
    let other = submit(&mut s, 1000, 1);
    s.start(other, &[1], t(1)).unwrap();
    let mut config = s.config().clone();
    config.node_marks.insert(
        "n2".into(),
        NodeMark {
            state: AdminState::Offline,
            comment: "fan".into(),
        },
    );
    s.set_config(config);
    let id = submit(&mut s, 1000, 2);
    let m = manager();
    let err = s.qrun_nodes(id, &m, Some("n0+n1"), t(2)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot run job 2.srv on node n1: it runs job 1.srv; name free nodes \
         (pbsnodes -l shows the others)"
    );
    let err = s.qrun_nodes(id, &m, Some("n0+n2"), t(2)).unwrap_err();
    assert!(err.to_string().contains("n2: it is offline"), "{err}");
    s.set_host_up("h", false);
    let err = s.qrun_nodes(id, &m, Some("n0+n3"), t(2)).unwrap_err();
    assert!(
        err.to_string()
            .contains("n0: it is down (the agent of host h is not connected)"),
        "{err}"
    );
}

#[test]
fn only_operators_and_only_ready_queued_jobs() {
    let mut s = state(2);
    let id = submit(&mut s, 1000, 1);
    let err = s
        .qrun_nodes(id, &caller(1000, Role::User), None, t(1))
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("running job 1.srv at once (qrun) needs operator rights"),
        "{err}"
    );
    assert!(
        s.qrun_nodes(id, &caller(5, Role::Operator), None, t(1))
            .is_ok()
    );
    s.hold(id, &manager(), t(1)).unwrap();
    let err = s.qrun_nodes(id, &manager(), None, t(1)).unwrap_err();
    assert_eq!(err.to_string(), "cannot run job 1.srv: it is held");
    let dependent = s
        .submit(
            Submission {
                script_name: "after.sh".into(),
                workdir: "/tmp".into(),
                depend: "afterok:1".into(),
                ..Submission::default()
            },
            &caller(1000, Role::User),
            t(2),
        )
        .unwrap()
        .id;
    let err = s.qrun_nodes(dependent, &manager(), None, t(2)).unwrap_err();
    assert!(
        err.to_string()
            .contains("it waits for the jobs it depends on (afterok:1.srv)"),
        "{err}"
    );
}

#[test]
fn a_mesh_places_the_job_in_its_shape() {
    let mut config = Config::default();
    config.queues.insert("batch".into(), Queue::open("batch"));
    let mesh = NodeSet {
        name: "m".into(),
        topology: Topology::Mesh2d {
            width: 2,
            height: 2,
            contiguous: false,
        },
        nodes: (0..4)
            .map(|i| NodeDef {
                name: format!("m{i}"),
                host: "h".into(),
            })
            .collect(),
        attrs: Default::default(),
    };
    let mut s = State::new("srv", config, vec![mesh]).unwrap();
    s.set_host_up("h", true);
    let id = submit(&mut s, 1000, 2);
    let on = s.qrun_nodes(id, &manager(), None, t(1)).unwrap();
    assert_eq!(on.nodes.len(), 2);
    assert!(!on.parts.is_empty(), "the mesh says how it placed the job");
    s.start_placed(id, &on.nodes, &on.parts, t(1)).unwrap();
    s.check_invariants().unwrap();
}

#[test]
fn chunks_that_say_where_they_run_get_the_scheduler_s_choice() {
    let mut s = state(4);
    let sub = |resources: Vec<(&str, &str)>| Submission {
        script_name: "pinned.sh".into(),
        workdir: "/tmp".into(),
        resources: resources
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Submission::default()
    };
    let pinned = s
        .submit(
            sub(vec![("nodes", "n2+n0")]),
            &caller(1000, Role::User),
            t(0),
        )
        .unwrap()
        .id;
    let on = s.qrun_nodes(pinned, &manager(), None, t(1)).unwrap();
    assert_eq!(on.nodes, [2, 0], "each chunk on its node, in chunk order");
    let busy = submit(&mut s, 1000, 1);
    s.start(busy, &[2], t(1)).unwrap();
    let err = s.qrun_nodes(pinned, &manager(), None, t(2)).unwrap_err();
    assert!(
        err.to_string()
            .contains("do not give it where its chunks must run"),
        "{err}"
    );
}
