//! Shared node sets (`jobs_per_node` over 1, NCAR's time-shared machines):
//! a node runs jobs while it has room, a job's nodes are distinct, and
//! among the nodes with room the least busy one wins.

use proptest::prelude::*;

use super::*;
use crate::Role;
use crate::job::{ExitCause, JobExit};
use crate::node::{NodeAttrs, NodeDef, NodeSet, Topology};
use crate::node_group::NodeGroup;
use crate::queue::Queue;
use crate::server::Config;
use crate::state::tests::{caller, t};
use crate::submit::Submission;

/// A flat set of `hosts` nodes, node i on host `h<i>`.
fn set(name: &str, hosts: &[&str], cpus: u32, jobs_per_node: Option<u32>) -> NodeSet {
    NodeSet {
        name: name.into(),
        topology: Topology::Flat,
        nodes: hosts
            .iter()
            .map(|h| NodeDef {
                name: h.to_string(),
                host: h.to_string(),
            })
            .collect(),
        attrs: NodeAttrs {
            cpus: Some(cpus),
            jobs_per_node,
            ..NodeAttrs::default()
        },
    }
}

/// One open queue `batch` over `sets`, in their order, every host up.
fn state_of(sets: Vec<NodeSet>) -> State {
    let mut config = Config::default();
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
    for host in hosts {
        state.set_host_up(&host, true);
    }
    state
}

fn submit(s: &mut State, nodes: u32) -> JobId {
    let sub = Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        resources: vec![("nodes".into(), nodes.to_string())],
        ..Submission::default()
    };
    s.submit(sub, &caller(1000, Role::User), t(0)).unwrap().id
}

/// Runs a pass and starts what it says; the hosts of each start.
fn pass_and_start(s: &mut State, now: i64) -> Vec<(JobId, Vec<String>)> {
    pass_and_start_by(s, now, |node| node.host.clone())
}

/// Runs a pass and starts what it says; each start's nodes, as `label`
/// names them.
pub(super) fn pass_and_start_by(
    s: &mut State,
    now: i64,
    label: impl Fn(&crate::node::Node) -> String,
) -> Vec<(JobId, Vec<String>)> {
    let plan = Scheduler.pass(s, t(now));
    let mut started = Vec::new();
    for start in &plan.starts {
        let names = start.nodes.iter().map(|&i| label(&s.nodes()[i])).collect();
        s.start(start.job, &start.nodes, t(now)).unwrap();
        started.push((start.job, names));
    }
    s.check_invariants().unwrap();
    started
}

/// Ends running job `id` with exit status 0.
pub(super) fn end(s: &mut State, id: JobId, now: i64) {
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
    s.check_invariants().unwrap();
}

#[test]
fn a_shared_node_runs_jobs_while_it_has_room() {
    let mut s = state_of(vec![set("pool", &["a", "b"], 8, Some(3))]);
    let ids: Vec<JobId> = (0..7).map(|_| submit(&mut s, 1)).collect();
    let started = pass_and_start(&mut s, 1);
    assert_eq!(started.len(), 6, "two nodes of three slots: six jobs");
    let on_a = started.iter().filter(|(_, h)| h == &["a"]).count();
    assert_eq!(on_a, 3, "spread evenly: {started:?}");
    assert_eq!(s.nodes()[0].jobs.len(), 3);
    assert_eq!(s.nodes()[0].state_name(), "job-busy");
    let plan = Scheduler.pass(&s, t(2));
    assert_eq!(plan.entry(ids[6]).unwrap().reason, Some(Reason::Resources));

    // One ends on b: the seventh goes there.
    let (on_b, _) = started.iter().find(|(_, h)| h == &["b"]).unwrap().clone();
    end(&mut s, on_b, 3);
    assert_eq!(
        s.nodes()[1].state_name(),
        "free",
        "room again, two jobs on it"
    );
    let started = pass_and_start(&mut s, 4);
    assert_eq!(started, vec![(ids[6], vec!["b".to_string()])]);
}

#[test]
fn an_exclusive_set_still_gives_a_job_its_node_alone() {
    let mut s = state_of(vec![set("solo", &["a", "b"], 8, None)]);
    for _ in 0..3 {
        submit(&mut s, 1);
    }
    assert_eq!(pass_and_start(&mut s, 1).len(), 2);
    assert_eq!(s.nodes()[0].state_name(), "job-busy");
}

#[test]
fn a_job_takes_distinct_nodes_however_many_slots_are_free() {
    let mut s = state_of(vec![set("pool", &["a", "b", "c"], 8, Some(3))]);
    // Node a is full.
    for _ in 0..3 {
        let id = submit(&mut s, 1);
        s.start(id, &[0], t(0)).unwrap();
    }
    s.check_invariants().unwrap();
    let three = submit(&mut s, 3);
    let two = submit(&mut s, 2);
    // Six slots are free, on two nodes: the three-node job waits.
    let started = pass_and_start(&mut s, 1);
    assert_eq!(started, vec![(two, vec!["b".to_string(), "c".to_string()])]);
    let plan = Scheduler.pass(&s, t(2));
    assert_eq!(plan.entry(three).unwrap().reason, Some(Reason::Resources));
}

#[test]
fn the_least_busy_host_wins_and_a_pass_counts_what_it_starts() {
    let mut s = state_of(vec![set("pool", &["h0", "h1", "h2"], 8, Some(8))]);
    s.set_host_load("h0", 6.0, 8);
    s.set_host_load("h1", 1.0, 8);
    s.set_host_load("h2", 3.0, 8);
    for _ in 0..3 {
        submit(&mut s, 1);
    }
    let hosts: Vec<String> = pass_and_start(&mut s, 1)
        .into_iter()
        .flat_map(|(_, h)| h)
        .collect();
    // h1 (1/8), then h1 again (2/8 with the first counted), then h1 and
    // h2 tie at 3/8 and h2, with no job, wins.
    assert_eq!(hosts, ["h1", "h1", "h2"]);
}

#[test]
fn jobs_started_since_the_last_load_report_count_as_load() {
    // NCAR: an EL 92 (2 CPUs) and an EL 98 (8 CPUs), each its own set,
    // the small one listed first.
    let mut s = state_of(vec![
        set("el4", &["el4"], 2, Some(2)),
        set("el1", &["el1"], 8, Some(8)),
    ]);
    s.set_host_load("el4", 1.0, 2);
    s.set_host_load("el1", 2.0, 8);
    let mut hosts = Vec::new();
    for now in 1..=4 {
        submit(&mut s, 1);
        hosts.extend(pass_and_start(&mut s, now).into_iter().flat_map(|(_, h)| h));
    }
    // el1 at 2/8, then 3/8; then el1 at 4/8 ties el4 at 1/2 and el4,
    // listed first, wins; then el1 at 4/8 against el4 at 2/2.
    assert_eq!(hosts, ["el1", "el1", "el4", "el1"]);
    // A fresh report replaces the count.
    s.set_host_load("el4", 0.0, 2);
    submit(&mut s, 1);
    let hosts: Vec<String> = pass_and_start(&mut s, 5)
        .into_iter()
        .flat_map(|(_, h)| h)
        .collect();
    assert_eq!(hosts, ["el4"]);
}

#[test]
fn only_a_flat_set_is_shared_and_it_runs_at_least_one_job() {
    let mut mesh = set("m", &["a", "b", "c", "d"], 8, Some(2));
    mesh.topology = Topology::Mesh2d {
        width: 2,
        height: 2,
        contiguous: false,
    };
    let err = State::new("srv", Config::default(), vec![mesh])
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("only a flat set may be shared"), "{err}");
    let zero = set("z", &["a"], 8, Some(0));
    let err = State::new("srv", Config::default(), vec![zero])
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("jobs_per_node = 0"), "{err}");
}

/// Fewer slots than a node runs jobs (qmgr lowered jobs_per_node, or the
/// file did before a restart): the running jobs keep their node, which
/// takes no new job until it is under the new count.
#[test]
fn running_jobs_keep_a_node_whose_slots_were_lowered() {
    let mut s = state_of(vec![set("pool", &["a"], 8, Some(2))]);
    let mut config = s.config().clone();
    let cmds = crate::qmgr::parse_script(
        "create node_set extra nodes = x1, host = hx, jobs_per_node = 2\n\
         unset queue batch node_group\n\
         set queue batch node_sets = extra",
    )
    .unwrap();
    crate::qmgr::run(&cmds, &mut config, &s, &caller(0, Role::Manager)).unwrap();
    assert!(s.set_config(config).is_empty());
    s.set_host_up("hx", true);
    let (j1, j2, j3) = (submit(&mut s, 1), submit(&mut s, 1), submit(&mut s, 1));
    let started = pass_and_start(&mut s, 1);
    let x1 = vec!["hx".to_string()];
    assert_eq!(started, [(j1, x1.clone()), (j2, x1)]);

    let mut config = s.config().clone();
    let cmds = crate::qmgr::parse_script("set node_set extra jobs_per_node = 1").unwrap();
    crate::qmgr::run(&cmds, &mut config, &s, &caller(0, Role::Manager)).unwrap();
    s.set_config(config);
    s.check_invariants().unwrap();
    let x1 = s.node_by_name("x1").unwrap();
    assert_eq!((x1.jobs.to_vec(), x1.slots), (vec![j1, j2], 1));
    assert_eq!(x1.state_name(), "job-busy");
    assert!(pass_and_start(&mut s, 2).is_empty(), "over its slots");
    end(&mut s, j1, 3);
    assert!(pass_and_start(&mut s, 4).is_empty(), "at its one slot");
    end(&mut s, j2, 5);
    let started: Vec<JobId> = pass_and_start(&mut s, 6)
        .into_iter()
        .map(|(j, _)| j)
        .collect();
    assert_eq!(started, [j3]);

    // The same after a restart into a file that shares less: both jobs
    // are still held, with a warning naming the node.
    let mut s = state_of(vec![set("pool", &["a"], 8, Some(2))]);
    let (k1, k2) = (submit(&mut s, 1), submit(&mut s, 1));
    pass_and_start(&mut s, 1);
    let jobs: Vec<crate::job::Job> = s.jobs().cloned().collect();
    let mut fresh = state_of(vec![set("pool", &["a"], 8, Some(1))]);
    let warnings = fresh.restore(jobs, 0);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("node a runs jobs"), "{warnings:?}");
    assert_eq!(fresh.nodes()[0].jobs.to_vec(), [k1, k2]);
    fresh.check_invariants().unwrap();
    assert_eq!(fresh.nodes()[0].state_name(), "job-busy");
}

proptest! {
    /// Whatever starts and ends, no node runs more jobs than its slots, a
    /// job's nodes are distinct, and the counts the pass reads match the
    /// nodes (`check_invariants`).
    #[test]
    fn shared_nodes_never_run_more_jobs_than_their_slots(
        slots in 1u32..4,
        sizes in proptest::collection::vec(1u32..4, 1..30),
        ends in proptest::collection::vec(any::<prop::sample::Index>(), 0..30),
        loads in proptest::collection::vec(0u32..16, 3),
    ) {
        let mut s = state_of(vec![set("pool", &["a", "b", "c"], 4, Some(slots))]);
        for (host, load) in ["a", "b", "c"].iter().zip(&loads) {
            s.set_host_load(host, f64::from(*load), 4);
        }
        let mut ends = ends.into_iter();
        for (now, &size) in sizes.iter().enumerate() {
            submit(&mut s, size);
            let now = now as i64 * 2 + 1;
            for (id, hosts) in pass_and_start(&mut s, now) {
                let mut distinct = hosts.clone();
                distinct.dedup();
                prop_assert_eq!(distinct.len(), hosts.len(), "job {} doubled a node", id);
            }
            for node in s.nodes() {
                prop_assert!(node.jobs.len() as u32 <= slots, "{} runs {:?}", node.name, node.jobs);
            }
            let running: Vec<JobId> = s.active_jobs().map(|j| j.id).collect();
            if let Some(pick) = ends.next()
                && !running.is_empty()
            {
                end(&mut s, running[pick.index(running.len())], now + 1);
            }
        }
    }
}
