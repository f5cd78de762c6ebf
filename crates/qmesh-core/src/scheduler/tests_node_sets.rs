//! Which node sets a job may use: what its nodes must have (`-l mem`,
//! `-l ncpus`, `-l feature`) and its queue's node group.

use super::*;
use crate::Role;
use crate::node::{NodeAttrs, NodeDef, NodeSet, Topology};
use crate::node_group::NodeGroup;
use crate::queue::Queue;
use crate::server::Config;
use crate::state::tests::{caller, t};
use crate::submit::Submission;

/// Two flat sets of four nodes: `thin` (16 GB, 4 CPUs) and `fat` (64 GB,
/// 16 CPUs, feature fat), and one open queue `batch` over both.
fn thin_and_fat() -> State {
    let set = |name: &str, attrs: NodeAttrs| NodeSet {
        name: name.into(),
        topology: Topology::Flat,
        nodes: (0..4)
            .map(|i| NodeDef {
                name: format!("{name}{i}"),
                host: "h".into(),
            })
            .collect(),
        attrs,
    };
    let thin = NodeAttrs {
        mem: Some(16 << 30),
        cpus: Some(4),
        features: Vec::new(),
        jobs_per_node: None,
    };
    let fat = NodeAttrs {
        mem: Some(64 << 30),
        cpus: Some(16),
        features: vec!["fat".into()],
        jobs_per_node: None,
    };
    let mut config = Config::default();
    config.queues.insert("batch".into(), Queue::open("batch"));
    let mut state = State::new("srv", config, vec![set("thin", thin), set("fat", fat)]).unwrap();
    state.set_host_up("h", true);
    state
}

fn submit(s: &mut State, nodes: u32, resources: &[(&str, &str)]) -> Result<JobId, String> {
    let mut list = vec![("nodes".to_string(), nodes.to_string())];
    list.extend(
        resources
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string())),
    );
    let sub = Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        resources: list,
        ..Submission::default()
    };
    s.submit(sub, &caller(1000, Role::User), t(0))
        .map(|job| job.id)
        .map_err(|e| e.to_string())
}

/// The sets a started job's nodes are in.
fn sets_of(s: &State, plan: &Plan, id: JobId) -> Vec<String> {
    let start = plan.starts.iter().find(|st| st.job == id).unwrap();
    let mut sets: Vec<String> = start
        .nodes
        .iter()
        .map(|&n| s.node_sets()[s.nodes()[n].set].name.clone())
        .collect();
    sets.dedup();
    sets
}

#[test]
fn a_job_runs_only_on_sets_that_have_what_its_nodes_need() {
    let mut s = thin_and_fat();
    let big_memory = submit(&mut s, 2, &[("mem", "32gb")]).unwrap();
    let feature = submit(&mut s, 2, &[("feature", "fat")]).unwrap();
    let cpus = submit(&mut s, 1, &[("ncpus", "8")]).unwrap();
    let plain = submit(&mut s, 3, &[]).unwrap();
    let plan = Scheduler.pass(&s, t(1));
    assert_eq!(sets_of(&s, &plan, big_memory), ["fat"]);
    assert_eq!(sets_of(&s, &plan, feature), ["fat"]);
    // The fat set is full: the 8-CPU job waits although thin nodes are free.
    assert!(plan.starts.iter().all(|st| st.job != cpus));
    assert_eq!(sets_of(&s, &plan, plain), ["thin"]);
    assert_eq!(plan.entry(cpus).unwrap().reason, Some(Reason::Resources));
}

#[test]
fn a_job_no_set_can_serve_is_refused_with_the_sets() {
    let mut s = thin_and_fat();
    let err = submit(&mut s, 5, &[("mem", "32gb")]).unwrap_err();
    assert!(err.contains("reaches only 4 such nodes"), "{err}");
    assert!(
        err.contains("thin: 4 nodes, mem=16gb, ncpus=4, not enough"),
        "{err}"
    );
    let err = submit(&mut s, 1, &[("feature", "gpu")]).unwrap_err();
    assert!(err.contains("feature=gpu"), "{err}");
    assert!(submit(&mut s, 8, &[]).is_ok());
}

#[test]
fn a_queue_with_a_node_group_uses_its_sets_in_their_order() {
    let mut s = thin_and_fat();
    let mut config = s.config().clone();
    let mut group = NodeGroup::new("fat_first");
    group.set_sets(None, vec!["fat".into()]);
    config.node_groups.insert("fat_first".into(), group);
    config.queues.get_mut("batch").unwrap().node_group = Some("fat_first".into());
    s.set_config(config);
    // Only the fat set: 5 nodes can never run, 4 can.
    assert!(
        submit(&mut s, 5, &[])
            .unwrap_err()
            .contains("could never run")
    );
    let id = submit(&mut s, 4, &[]).unwrap();
    let plan = Scheduler.pass(&s, t(1));
    assert_eq!(sets_of(&s, &plan, id), ["fat"]);
}

#[test]
fn equally_free_sets_are_tried_in_the_queues_order_not_the_files() {
    for (order, first) in [(["fat", "thin"], "fat"), (["thin", "fat"], "thin")] {
        let mut s = thin_and_fat();
        let mut config = s.config().clone();
        config.queues.get_mut("batch").unwrap().node_sets =
            order.iter().map(|n| n.to_string()).collect();
        s.set_config(config);
        let id = submit(&mut s, 2, &[]).unwrap();
        let plan = Scheduler.pass(&s, t(0));
        assert_eq!(sets_of(&s, &plan, id), [first], "{order:?}");
    }
    // Through a node group, its order.
    let mut s = thin_and_fat();
    let mut config = s.config().clone();
    let mut group = NodeGroup::new("g");
    group.set_sets(None, vec!["fat".into(), "thin".into()]);
    config.node_groups.insert("g".into(), group);
    config.queues.get_mut("batch").unwrap().node_group = Some("g".into());
    s.set_config(config);
    let id = submit(&mut s, 2, &[]).unwrap();
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(sets_of(&s, &plan, id), ["fat"]);
}

#[test]
fn a_job_larger_than_any_one_mesh_is_refused_though_the_meshes_add_up() {
    let mesh = |name: &str| NodeSet {
        name: name.into(),
        topology: Topology::Mesh2d {
            width: 2,
            height: 2,
            contiguous: false,
        },
        nodes: (0..4)
            .map(|i| NodeDef {
                name: format!("{name}{i}"),
                host: "h".into(),
            })
            .collect(),
        attrs: NodeAttrs::default(),
    };
    let mut config = Config::default();
    config.queues.insert("batch".into(), Queue::open("batch"));
    let mut s = State::new("srv", config, vec![mesh("m1"), mesh("m2")]).unwrap();
    s.set_host_up("h", true);
    let e = submit(&mut s, 6, &[]).unwrap_err();
    assert!(e.contains("6") && e.contains("4"), "{e}");
    assert!(submit(&mut s, 4, &[]).is_ok());
}
