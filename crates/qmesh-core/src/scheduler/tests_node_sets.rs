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
        gpus: None,
        resources: Default::default(),
    };
    let fat = NodeAttrs {
        mem: Some(64 << 30),
        cpus: Some(16),
        features: vec!["fat".into()],
        jobs_per_node: None,
        gpus: None,
        resources: Default::default(),
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

/// Two flat sets that say nothing of their nodes: `a` on hosts a1 and a2,
/// `b` on host b1; every host up.
fn unsaid() -> State {
    let set = |name: &str, hosts: &[&str]| NodeSet {
        name: name.into(),
        topology: Topology::Flat,
        nodes: hosts
            .iter()
            .map(|h| NodeDef {
                name: format!("{h}n"),
                host: h.to_string(),
            })
            .collect(),
        attrs: NodeAttrs::default(),
    };
    let mut config = Config::default();
    config.queues.insert("batch".into(), Queue::open("batch"));
    let sets = vec![set("a", &["a1", "a2"]), set("b", &["b1"])];
    let mut s = State::new("srv", config, sets).unwrap();
    for host in ["a1", "a2", "b1"] {
        s.set_host_up(host, true);
    }
    s
}

fn facts(mem_gb: u64, cpus: u32, features: &[&str]) -> crate::state::HostFacts {
    crate::state::HostFacts {
        load: 0.0,
        cpus,
        mem: mem_gb << 30,
        features: features.iter().map(|f| f.to_string()).collect(),
        gpus: 0,
    }
}

#[test]
fn what_agents_report_fills_in_what_the_configuration_does_not_say() {
    let mut s = unsaid();
    // Nothing said nor reported: any memory may be asked; no feature.
    assert!(submit(&mut s, 1, &[("mem", "64gb")]).is_ok());
    let e = submit(&mut s, 1, &[("feature", "imsl")]).unwrap_err();
    assert!(e.contains("imsl"), "{e}");

    // a's hosts: the smaller memory and CPUs, and the features both have.
    s.set_host_facts("a1", facts(8, 16, &["imsl", "nag"]));
    s.set_host_facts("a2", facts(4, 8, &["imsl"]));
    s.set_host_facts("b1", facts(2, 4, &[]));
    let a = s.effective_attrs(0);
    assert_eq!((a.mem, a.cpus), (Some(4 << 30), Some(8)));
    assert_eq!(a.features, ["imsl"]);
    assert!(
        s.node_sets()[0].attrs.features.is_empty(),
        "the configuration is unchanged"
    );

    let imsl = submit(&mut s, 2, &[("feature", "imsl")]).unwrap();
    let e = submit(&mut s, 1, &[("feature", "nag")]).unwrap_err();
    assert!(e.contains("nag"), "only a1 has it, so set a has not: {e}");
    let e = submit(&mut s, 1, &[("mem", "8gb")]).unwrap_err();
    assert!(e.contains("mem") || e.contains("8gb"), "{e}");
    let three = submit(&mut s, 1, &[("mem", "3gb")]).unwrap();
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(sets_of(&s, &plan, imsl), ["a"]);
    assert!(
        plan.starts.iter().all(|st| st.job != three),
        "b has 2 GB and a is taken: the 3 GB job waits for a"
    );

    // A new report changes the set: a2 gets nag too.
    s.set_host_facts("a2", facts(4, 8, &["imsl", "nag"]));
    assert_eq!(s.effective_attrs(0).features, ["imsl", "nag"]);
    assert!(submit(&mut s, 1, &[("feature", "nag")]).is_ok());
}

#[test]
fn what_the_configuration_says_wins_over_the_reports() {
    let mut s = thin_and_fat();
    s.set_host_facts("h", facts(256, 64, &["imsl"]));
    let thin = s.effective_attrs(0);
    assert_eq!((thin.mem, thin.cpus), (Some(16 << 30), Some(4)));
    assert_eq!(thin.features, ["imsl"], "a reported feature is added");
    assert_eq!(s.effective_attrs(1).features, ["fat", "imsl"]);
    assert!(
        submit(&mut s, 1, &[("mem", "32gb")]).is_ok(),
        "fat has 64 GB"
    );
    assert!(
        submit(&mut s, 1, &[("mem", "128gb")]).is_err(),
        "none says 128"
    );
}

/// Flat sets `s8`, `s3` and `s5` (by their sizes), alike, under one queue.
fn three_flat_sets() -> State {
    let set = |size: usize| NodeSet {
        name: format!("s{size}"),
        topology: Topology::Flat,
        nodes: (0..size)
            .map(|i| NodeDef {
                name: format!("n{size}-{i}"),
                host: "h".into(),
            })
            .collect(),
        attrs: NodeAttrs::default(),
    };
    let mut config = Config::default();
    config.queues.insert("batch".into(), Queue::open("batch"));
    let mut state = State::new("srv", config, vec![set(8), set(3), set(5)]).unwrap();
    state.set_host_up("h", true);
    state
}

#[test]
fn a_job_takes_the_fullest_set_that_holds_it_and_spreads_when_none_does() {
    // SDSC's rule: the set with the fewest free nodes that holds the whole
    // job, keeping big holes for big jobs; else the flat sets in order.
    let mut s = three_flat_sets();
    let three = submit(&mut s, 3, &[]).unwrap();
    let four = submit(&mut s, 4, &[]).unwrap();
    let nine = submit(&mut s, 9, &[]).unwrap();
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(sets_of(&s, &plan, three), ["s3"]);
    assert_eq!(sets_of(&s, &plan, four), ["s5"]);
    assert_eq!(
        sets_of(&s, &plan, nine),
        ["s8", "s5"],
        "eight, then the one left"
    );
}
