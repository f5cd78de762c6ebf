//! Jobs whose chunks say where they run: host and node pins, `place=pack`
//! and `scatter`, `place=excl` on a shared set, GPUs on a shared set; and
//! `qsub -p`, a job's priority within its queue.

use proptest::prelude::*;

use super::tests_shared::{end, pass_and_start_by};
use super::*;
use crate::Role;
use crate::node::{NodeAttrs, NodeDef, NodeSet, Topology};
use crate::queue::Queue;
use crate::server::Config;
use crate::state::tests::{caller, t};
use crate::submit::Submission;

/// A flat set; `nodes` are (name, host).
fn set(name: &str, nodes: &[(&str, &str)], attrs: NodeAttrs) -> NodeSet {
    NodeSet {
        name: name.into(),
        topology: Topology::Flat,
        nodes: nodes
            .iter()
            .map(|(n, h)| NodeDef {
                name: n.to_string(),
                host: h.to_string(),
            })
            .collect(),
        attrs,
    }
}

fn state_of(sets: Vec<NodeSet>) -> State {
    let mut config = Config::default();
    config.queues.insert("batch".into(), Queue::open("batch"));
    let hosts: Vec<String> = sets
        .iter()
        .flat_map(|s| s.nodes.iter().map(|d| d.host.clone()))
        .collect();
    let mut state = State::new("srv", config, sets).unwrap();
    for host in hosts {
        state.set_host_up(&host, true);
    }
    state
}

/// Two hosts of two nodes and one of one, exclusive.
fn cluster() -> State {
    state_of(vec![set(
        "c",
        &[
            ("a0", "ha"),
            ("a1", "ha"),
            ("b0", "hb"),
            ("b1", "hb"),
            ("c0", "hc"),
        ],
        NodeAttrs::default(),
    )])
}

fn submit(s: &mut State, resources: &[(&str, &str)]) -> Result<JobId, crate::CoreError> {
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

/// A pass, its starts applied; each start's node names.
fn pass_and_start(s: &mut State, now: i64) -> Vec<(JobId, Vec<String>)> {
    pass_and_start_by(s, now, |node| node.name.to_string())
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn pinned_chunks_get_their_nodes_in_chunk_order() {
    let mut s = cluster();
    let job = submit(&mut s, &[("nodes", "c0+hb:ppn=2")]).unwrap();
    let started = pass_and_start(&mut s, 1);
    assert_eq!(started, vec![(job, names(&["c0", "b0"]))]);
    let shares = s.job(job).unwrap().node_shares();
    assert_eq!(
        (shares[0].procs, shares[1].procs),
        (1, 2),
        "node i serves chunk i"
    );
}

#[test]
fn a_pinned_job_waits_for_its_node_with_placement() {
    let mut s = cluster();
    let first = submit(&mut s, &[("nodes", "c0")]).unwrap();
    pass_and_start(&mut s, 1);
    let second = submit(&mut s, &[("host", "hc")]).unwrap();
    let plan = Scheduler.pass(&s, t(2));
    assert!(
        plan.starts.is_empty(),
        "c0 is busy although four nodes are free"
    );
    assert_eq!(plan.entry(second).unwrap().reason, Some(Reason::Placement));
    end(&mut s, first, 3);
    assert_eq!(pass_and_start(&mut s, 4), vec![(second, names(&["c0"]))]);
}

#[test]
fn excluded_nodes_and_hosts_are_passed_over() {
    let mut s = cluster();
    // a0 by name, all of hb by its host: a1 and c0 are left.
    let job = submit(&mut s, &[("nodes", "2"), ("excludenodes", "a0:hb")]).unwrap();
    assert_eq!(s.job(job).unwrap().resource_list["excludenodes"], "a0:hb");
    assert_eq!(pass_and_start(&mut s, 1), vec![(job, names(&["a1", "c0"]))]);
    // Only excluded nodes are free: it waits for a placement.
    let other = submit(&mut s, &[("nodes", "1"), ("excludenodes", "a0+b0+b1")]).unwrap();
    let plan = Scheduler.pass(&s, t(2));
    assert!(
        plan.starts.is_empty(),
        "a0, b0 and b1 are free but excluded"
    );
    assert_eq!(plan.entry(other).unwrap().reason, Some(Reason::Placement));
    end(&mut s, job, 3);
    assert_eq!(pass_and_start(&mut s, 4), vec![(other, names(&["a1"]))]);
    let err = submit(&mut s, &[("excludenodes", "a0:b 1")]).unwrap_err();
    assert!(err.to_string().contains("excludenodes=n1:n2"), "{err}");
}

#[test]
fn pack_keeps_a_job_on_one_host_and_scatter_spreads_it() {
    let mut s = cluster();
    let packed = submit(&mut s, &[("select", "2"), ("place", "pack")]).unwrap();
    let scattered = submit(&mut s, &[("select", "2"), ("place", "scatter")]).unwrap();
    let started = pass_and_start(&mut s, 1);
    assert_eq!(started[0], (packed, names(&["a0", "a1"])));
    // ha is full: one chunk on each of hb and hc.
    assert_eq!(started[1], (scattered, names(&["b0", "c0"])));
    // With a1 and b1 free, two nodes are free but on two hosts: a packed
    // pair waits for a placement, not for nodes.
    end(&mut s, packed, 2);
    let lone = submit(&mut s, &[("nodes", "a0")]).unwrap();
    assert_eq!(pass_and_start(&mut s, 3), vec![(lone, names(&["a0"]))]);
    let pair = submit(&mut s, &[("select", "2"), ("place", "pack")]).unwrap();
    let plan = Scheduler.pass(&s, t(4));
    assert_eq!(plan.entry(pair).unwrap().reason, Some(Reason::Placement));
}

#[test]
fn layouts_no_host_allows_are_refused_at_submit() {
    let mut s = cluster();
    let err = submit(&mut s, &[("select", "3"), ("place", "pack")]).unwrap_err();
    assert!(err.to_string().contains("place=pack"), "{err}");
    let err = submit(&mut s, &[("select", "4"), ("place", "scatter")]).unwrap_err();
    assert!(err.to_string().contains("on 3 host(s)"), "{err}");
    let err = submit(&mut s, &[("nodes", "zz9")]).unwrap_err();
    assert!(err.to_string().contains("\"zz9\""), "{err}");
    let err = submit(&mut s, &[("select", "3:host=ha")]).unwrap_err();
    assert!(err.to_string().contains("only 2 node"), "{err}");
    assert!(s.pending_jobs().next().is_none());
}

#[test]
fn an_exclusive_job_has_its_shared_nodes_to_itself() {
    let shared = NodeAttrs {
        jobs_per_node: Some(4),
        ..NodeAttrs::default()
    };
    let mut s = state_of(vec![set("pool", &[("p0", "p0"), ("p1", "p1")], shared)]);
    let small = submit(&mut s, &[("nodes", "1")]).unwrap();
    pass_and_start(&mut s, 1);
    let alone = submit(&mut s, &[("select", "1"), ("place", "excl")]).unwrap();
    let started = pass_and_start(&mut s, 2);
    let small_node = s.job(small).unwrap().exec_nodes[0].to_string();
    let alone_node = &started[0].1[0];
    assert_ne!(&small_node, alone_node, "not beside the running job");
    // Nothing joins the exclusive job's node; the other node takes more.
    let more: Vec<JobId> = (0..4)
        .map(|_| submit(&mut s, &[("nodes", "1")]).unwrap())
        .collect();
    let started = pass_and_start(&mut s, 3);
    assert!(
        started.iter().all(|(_, n)| n[0] == small_node),
        "{started:?}"
    );
    assert_eq!(started.len(), 3, "the other node had three slots left");
    assert_eq!(
        Scheduler.pass(&s, t(4)).entry(more[3]).unwrap().reason,
        Some(Reason::Resources)
    );
    // Once the exclusive job ends, its node takes jobs again.
    end(&mut s, alone, 5);
    assert_eq!(pass_and_start(&mut s, 6).len(), 1);
}

#[test]
fn gpus_on_a_shared_node_are_not_given_twice() {
    let attrs = NodeAttrs {
        jobs_per_node: Some(8),
        gpus: Some(2),
        ..NodeAttrs::default()
    };
    let mut s = state_of(vec![set("gpu", &[("g0", "g0")], attrs)]);
    let jobs: Vec<JobId> = (0..3)
        .map(|_| submit(&mut s, &[("select", "1:ngpus=1")]).unwrap())
        .collect();
    let cpu_only = submit(&mut s, &[("nodes", "1")]).unwrap();
    let started = pass_and_start(&mut s, 1);
    let ids: Vec<JobId> = started.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        ids,
        vec![jobs[0], jobs[1], cpu_only],
        "two GPUs, two GPU jobs"
    );
    let plan = Scheduler.pass(&s, t(2));
    assert_eq!(plan.entry(jobs[2]).unwrap().reason, Some(Reason::Placement));
    end(&mut s, jobs[0], 3);
    assert_eq!(pass_and_start(&mut s, 4), vec![(jobs[2], names(&["g0"]))]);
    let err = submit(&mut s, &[("select", "1:ngpus=3")]).unwrap_err();
    assert!(err.to_string().contains("ngpus=3"), "{err}");
}

#[test]
fn named_nodes_of_a_mesh_are_given_and_host_pins_use_its_allocator() {
    let names: Vec<String> = (0..16).map(|i| format!("m{i:02}")).collect();
    let nodes: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "h")).collect();
    let mut mesh = set("mesh", &nodes, NodeAttrs::default());
    mesh.topology = Topology::Mesh2d {
        width: 4,
        height: 4,
        contiguous: false,
    };
    let mut s = state_of(vec![mesh]);
    let named = submit(&mut s, &[("nodes", "m05+m10:ppn=2")]).unwrap();
    let on_host = submit(&mut s, &[("select", "2"), ("place", "pack"), ("host", "h")]).unwrap();
    let started = pass_and_start(&mut s, 1);
    assert_eq!(started[0], (named, names_of(&["m05", "m10"])));
    assert_eq!(started[1].0, on_host);
    assert!(
        started[1].1.iter().all(|n| n != "m05" && n != "m10"),
        "the allocator knows m05 and m10 are taken: {started:?}"
    );
    // A later pass rebuilds the allocator from the state: still no overlap.
    let more = submit(&mut s, &[("nodes", "12")]).unwrap();
    let started = pass_and_start(&mut s, 2);
    assert_eq!(started[0].0, more);
}

fn names_of(list: &[&str]) -> Vec<String> {
    names(list)
}

#[test]
fn a_higher_qsub_p_goes_first_in_its_queue() {
    let mut s = state_of(vec![set("one", &[("n0", "h0")], NodeAttrs::default())]);
    let first = submit(&mut s, &[("nodes", "1")]).unwrap();
    let sub = Submission {
        script_name: "urgent.sh".into(),
        workdir: "/tmp".into(),
        priority: Some(10),
        ..Submission::default()
    };
    let urgent = s.submit(sub, &caller(1000, Role::User), t(0)).unwrap().id;
    let started = pass_and_start(&mut s, 1);
    assert_eq!(started[0].0, urgent);
    end(&mut s, urgent, 2);
    assert_eq!(pass_and_start(&mut s, 3)[0].0, first);
    let bad = Submission {
        script_name: "x.sh".into(),
        workdir: "/tmp".into(),
        priority: Some(2000),
        ..Submission::default()
    };
    let err = s.submit(bad, &caller(1000, Role::User), t(0)).unwrap_err();
    assert!(err.to_string().contains("-1024 to 1023"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever mix of pinned, packed, scattered and plain jobs arrives,
    /// no node runs two jobs, every start honours its layout, and pinned
    /// chunks sit on their nodes.
    #[test]
    fn layouts_hold_in_every_start(kinds in proptest::collection::vec(0u8..6, 1..12)) {
        let mut s = cluster();
        for (k, kind) in kinds.iter().enumerate() {
            let resources: Vec<(&str, &str)> = match kind {
                0 => vec![("nodes", "1")],
                1 => vec![("select", "2"), ("place", "pack")],
                2 => vec![("select", "2"), ("place", "scatter")],
                3 => vec![("nodes", "hb")],
                4 => vec![("nodes", "c0+1")],
                _ => vec![("select", "1:host=ha")],
            };
            submit(&mut s, &resources).unwrap();
            let now = k as i64 + 1;
            for (id, nodes) in pass_and_start(&mut s, now) {
                let job = s.job(id).unwrap().clone();
                let hosts: Vec<String> = nodes
                    .iter()
                    .map(|n| s.node_by_name(n).unwrap().host.clone())
                    .collect();
                let layout = job.layout.clone().unwrap_or_default();
                match layout.place.arrangement {
                    crate::resources::Arrangement::Pack => {
                        prop_assert!(hosts.iter().all(|h| *h == hosts[0]), "{hosts:?}")
                    }
                    crate::resources::Arrangement::Scatter => {
                        let mut distinct = hosts.clone();
                        distinct.dedup();
                        prop_assert_eq!(distinct.len(), hosts.len())
                    }
                    _ => {}
                }
                for (chunk, (node, host)) in layout.per_node().zip(nodes.iter().zip(&hosts)) {
                    if let Some(pin) = &chunk.pin {
                        prop_assert!(pin.admits(node, host), "{pin:?} on {node}");
                    }
                }
            }
            // Jobs end now and then, so later ones find room.
            if k % 3 == 2 {
                let running: Vec<JobId> = s.active_jobs().map(|j| j.id).collect();
                for id in running.into_iter().take(2) {
                    end(&mut s, id, now);
                }
            }
        }
    }
}
