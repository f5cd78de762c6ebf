//! Routing against the EPCC T3D set-up (the seed's Table 3): the DAY and
//! NIGHT pipe queues, their batch queues, COMPILE and the holding queue.

use super::*;
use crate::access::Role;
use crate::job::JobState;
use crate::node::{NodeDef, NodeSet, Topology};
use crate::queue::QueueType;
use crate::scheduler::{Reason, Scheduler};
use crate::state::State;
use crate::state::tests::{caller, t};
use crate::submit::Submission;

const H: u64 = 3600;
const M: u64 = 60;

/// A batch queue of Table 3: at most `pes` PEs for `time`. The 128 and
/// 256 PE queues start above the next size down, so a small job does not
/// take the big machine's short queue at night.
fn batch(name: &str, pes: u32, time: u64) -> Queue {
    let mut q = Queue::open(name);
    q.max_nodes = Some(pes);
    q.min_nodes = match pes {
        128 => Some(65),
        256 => Some(129),
        _ => None,
    };
    q.max_walltime = Some(time);
    q
}

fn pipe(name: &str, dests: &[&str], default: &str, hold: Option<&str>) -> Queue {
    let mut q = Queue::open(name);
    q.queue_type = QueueType::Route;
    q.route_destinations = dests.iter().map(|d| d.to_string()).collect();
    q.default_destination = Some(default.to_string());
    q.holding_queue = hold.map(str::to_string);
    q
}

/// The seed's queues, all enabled (whatever the period: the calendar
/// decides which run). HOLD accepts but never starts.
pub(crate) fn epcc() -> Config {
    let mut config = Config::default();
    let mut add = |q: Queue| {
        config.queues.insert(q.name.clone(), q);
    };
    add(batch("MPP_S64", 64, 20 * M));
    add(batch("MPP_S128", 128, 20 * M));
    add(batch("MPP_S256", 256, 20 * M));
    add(batch("MPP_64", 64, H));
    add(batch("MPP_128", 128, H));
    add(batch("MPP_256", 256, 6 * H));
    add(batch("N_MPP_64", 64, 6 * H));
    add(batch("N_MPP_128", 128, 6 * H));
    add(batch("W_MPP_64", 64, 12 * H));
    add(batch("W_MPP_128", 128, 12 * H));
    add(batch("W_MPP_256", 256, 12 * H));
    add(batch("COMPILE", 1, H));
    add(batch("COMPILE_NIGHT", 1, 6 * H));
    let mut hold = Queue::new("HOLD");
    hold.enabled = true;
    add(hold);
    add(pipe(
        "DAY",
        &["MPP_S64", "MPP_S128", "MPP_64", "MPP_128"],
        "COMPILE",
        None,
    ));
    add(pipe(
        "NIGHT",
        &[
            "MPP_S256",
            "MPP_256",
            "N_MPP_64",
            "N_MPP_128",
            "W_MPP_64",
            "W_MPP_128",
            "W_MPP_256",
        ],
        "COMPILE_NIGHT",
        Some("HOLD"),
    ));
    config
}

/// The T3D's batch pool: 256 PEs.
fn pool(_queue: &str) -> u32 {
    256
}

fn ask(pes: u32, time: u64) -> Ask {
    Ask {
        nodes: Some(pes),
        walltime: Some(time),
    }
}

fn lands(config: &Config, queue: &str, ask: Ask) -> String {
    route(config, queue, ask, &pool).unwrap().queue
}

#[test]
fn table_3_by_pes_and_time() {
    let c = epcc();
    assert_eq!(lands(&c, "DAY", ask(64, 15 * M)), "MPP_S64");
    assert_eq!(lands(&c, "DAY", ask(32, 10 * M)), "MPP_S64");
    assert_eq!(lands(&c, "DAY", ask(128, 20 * M)), "MPP_S128");
    assert_eq!(lands(&c, "DAY", ask(64, 45 * M)), "MPP_64");
    assert_eq!(lands(&c, "DAY", ask(100, 45 * M)), "MPP_128");
    assert_eq!(lands(&c, "NIGHT", ask(256, 10 * M)), "MPP_S256");
    assert_eq!(lands(&c, "NIGHT", ask(256, 5 * H)), "MPP_256");
    assert_eq!(lands(&c, "NIGHT", ask(32, 10 * M)), "N_MPP_64");
    assert_eq!(lands(&c, "NIGHT", ask(128, 6 * H)), "N_MPP_128");
    assert_eq!(lands(&c, "NIGHT", ask(64, 11 * H)), "W_MPP_64");
    assert_eq!(lands(&c, "NIGHT", ask(100, 7 * H)), "W_MPP_128");
    assert_eq!(lands(&c, "NIGHT", ask(256, 12 * H)), "W_MPP_256");
}

#[test]
fn a_job_naming_nothing_falls_through_to_compile() {
    let c = epcc();
    assert_eq!(lands(&c, "DAY", Ask::default()), "COMPILE");
    assert_eq!(lands(&c, "NIGHT", Ask::default()), "COMPILE_NIGHT");
    // Naming one of the two is enough to be routed by it; the landing
    // queue's defaults fill in the other.
    let time_only = Ask {
        walltime: Some(10 * M),
        ..Ask::default()
    };
    assert_eq!(lands(&c, "DAY", time_only), "MPP_S64");
    let pes_only = Ask {
        nodes: Some(128),
        ..Ask::default()
    };
    assert_eq!(lands(&c, "DAY", pes_only), "MPP_S128");
}

#[test]
fn a_job_no_queue_takes_goes_to_the_holding_queue_with_the_reason() {
    let c = epcc();
    let routed = route(&c, "NIGHT", ask(256, 13 * H), &pool).unwrap();
    assert_eq!(routed.queue, "HOLD");
    assert_eq!(
        routed.held.as_deref(),
        Some(
            "routed to HOLD by pipe queue NIGHT: no destination takes 256 nodes for 13:00:00 (largest wall time 12:00:00)"
        )
    );
    let routed = route(&c, "NIGHT", ask(300, H), &pool).unwrap();
    assert_eq!(
        routed.held.as_deref(),
        Some(
            "routed to HOLD by pipe queue NIGHT: no destination takes 300 nodes for 01:00:00 (largest node count 256)"
        )
    );
}

#[test]
fn without_a_holding_queue_the_job_is_refused_with_the_limits() {
    let c = epcc();
    let err = route(&c, "DAY", ask(256, 5 * H), &pool).unwrap_err();
    assert_eq!(
        err.to_string(),
        "route queue \"DAY\" has no destination for 256 nodes for 05:00:00 and no holding_queue: \
         MPP_S64 takes 1-64 nodes for up to 00:20:00; MPP_S128 takes 65-128 nodes for up to 00:20:00; \
         MPP_64 takes 1-64 nodes for up to 01:00:00; MPP_128 takes 65-128 nodes for up to 01:00:00; \
         COMPILE takes 1 nodes for up to 01:00:00; \
         ask for what one of them takes, or see qstat -Q -f DAY"
    );
}

#[test]
fn disabled_and_too_small_destinations_are_passed_over() {
    let mut c = epcc();
    c.queues.get_mut("MPP_S64").unwrap().enabled = false;
    assert_eq!(lands(&c, "DAY", ask(64, 15 * M)), "MPP_64");
    // A queue whose node sets hold 64 PEs cannot take 128.
    let small = |q: &str| if q == "MPP_S128" { 64 } else { 256 };
    let routed = route(&c, "DAY", ask(128, 15 * M), &small).unwrap();
    assert_eq!(routed.queue, "MPP_128");
}

#[test]
fn a_route_queue_checks_its_own_limits_and_defaults() {
    let mut c = epcc();
    let day = c.queues.get_mut("DAY").unwrap();
    day.max_nodes = Some(128);
    day.default_walltime = Some(30 * M);
    let err = route(&c, "DAY", ask(256, 10 * M), &pool).unwrap_err();
    assert!(
        matches!(err, CoreError::TooManyNodes { max: 128, .. }),
        "{err}"
    );
    // The pipe's default time routes a job naming only its PEs.
    let pes_only = Ask {
        nodes: Some(64),
        ..Ask::default()
    };
    let routed = route(&c, "DAY", pes_only, &pool).unwrap();
    assert_eq!(routed.queue, "MPP_64");
    assert_eq!(routed.ask.walltime, Some(30 * M));
}

#[test]
fn route_chains_are_followed_and_loops_refused() {
    let mut c = epcc();
    // FRONT sends to DAY (no holding queue) and then NIGHT.
    let front = pipe("FRONT", &["DAY", "NIGHT"], "COMPILE", None);
    c.queues.insert("FRONT".into(), front);
    assert_eq!(lands(&c, "FRONT", ask(64, 15 * M)), "MPP_S64");
    // DAY has nowhere for 5 hours: NIGHT takes it.
    assert_eq!(lands(&c, "FRONT", ask(256, 5 * H)), "MPP_256");
    assert_eq!(check(&c), Ok(vec![]));

    c.queues
        .get_mut("NIGHT")
        .unwrap()
        .route_destinations
        .insert(0, "FRONT".into());
    let err = route(&c, "FRONT", ask(256, 5 * H), &pool).unwrap_err();
    assert_eq!(
        err.to_string(),
        "route queues send jobs round in a loop: FRONT -> NIGHT -> FRONT; \
         remove one of them from the other's route_destinations (qmgr)"
    );
    let err = check(&c).unwrap_err();
    assert!(err.contains("FRONT -> NIGHT -> FRONT"), "{err}");
}

#[test]
fn the_configuration_is_checked() {
    let c = epcc();
    assert_eq!(check(&c), Ok(vec![]));

    let mut bad = c.clone();
    bad.queues
        .get_mut("DAY")
        .unwrap()
        .route_destinations
        .push("MPP_512".into());
    let err = check(&bad).unwrap_err();
    assert!(
        err.contains("route_destinations names queue \"MPP_512\", which does not exist"),
        "{err}"
    );

    let mut bad = c.clone();
    bad.queues.get_mut("DAY").unwrap().default_destination = Some("DAY".into());
    let err = check(&bad).unwrap_err();
    assert!(err.contains("names itself in default_destination"), "{err}");

    let mut bad = c.clone();
    bad.queues.get_mut("NIGHT").unwrap().holding_queue = Some("DAY".into());
    let err = check(&bad).unwrap_err();
    assert!(
        err.contains("is a route queue, which keeps no jobs"),
        "{err}"
    );

    let mut bad = c.clone();
    bad.queues.get_mut("COMPILE").unwrap().holding_queue = Some("HOLD".into());
    let err = check(&bad).unwrap_err();
    assert!(err.contains("\"COMPILE\" is an execution queue"), "{err}");

    let mut started = c.clone();
    started.queues.get_mut("HOLD").unwrap().started = true;
    let warnings = check(&started).unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("is started"), "{warnings:?}");
}

#[test]
fn print_order_puts_route_queues_after_what_they_name() {
    let mut c = epcc();
    c.queues
        .insert("AFRONT".into(), pipe("AFRONT", &["NIGHT"], "DAY", None));
    let order: Vec<&str> = print_order(&c).iter().map(|q| q.name.as_str()).collect();
    let at = |name: &str| order.iter().position(|n| *n == name).unwrap();
    assert!(at("NIGHT") > at("W_MPP_256") && at("NIGHT") > at("HOLD"));
    assert!(at("AFRONT") > at("NIGHT") && at("AFRONT") > at("DAY"));
    assert_eq!(order.len(), c.queues.len());
}

/// The EPCC queues over one 256-node pool.
fn t3d() -> State {
    let set = NodeSet {
        name: "pool".into(),
        topology: Topology::Flat,
        nodes: (0..256)
            .map(|i| NodeDef {
                name: format!("pe{i}"),
                host: "h".into(),
            })
            .collect(),
        attrs: Default::default(),
    };
    let mut state = State::new("t3d", epcc(), vec![set]).unwrap();
    state.set_host_up("h", true);
    state
}

fn qsub(state: &mut State, queue: &str, resources: &[(&str, &str)]) -> Result<JobId, CoreError> {
    let sub = Submission {
        script_name: "job.sh".into(),
        queue: Some(queue.into()),
        workdir: "/tmp".into(),
        resources: resources
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        ..Submission::default()
    };
    state
        .submit(sub, &caller(1000, Role::User), t(0))
        .map(|job| job.id)
}

use crate::job::JobId;

#[test]
fn a_submission_to_a_pipe_queue_lands_where_routing_says() {
    let mut s = t3d();
    let mpp = qsub(
        &mut s,
        "NIGHT",
        &[("nodes", "256"), ("walltime", "5:00:00")],
    )
    .unwrap();
    let job = s.job(mpp).unwrap();
    assert_eq!(
        (job.queue.as_str(), job.nodes, job.walltime),
        ("MPP_256", 256, 5 * H)
    );
    assert!(job.comment.is_empty(), "{}", job.comment);

    let compile = qsub(&mut s, "NIGHT", &[]).unwrap();
    let job = s.job(compile).unwrap();
    assert_eq!(job.queue, "COMPILE_NIGHT");
    assert_eq!(
        (job.nodes, job.walltime),
        (1, 6 * H),
        "COMPILE_NIGHT's own defaults"
    );

    let long = qsub(
        &mut s,
        "NIGHT",
        &[("nodes", "256"), ("walltime", "13:00:00")],
    )
    .unwrap();
    let job = s.job(long).unwrap();
    assert_eq!(job.queue, "HOLD");
    assert_eq!(job.state, JobState::Queued);
    assert_eq!((job.nodes, job.walltime), (256, 13 * H));
    assert_eq!(
        job.comment,
        "routed to HOLD by pipe queue NIGHT: no destination takes 256 nodes for 13:00:00 (largest wall time 12:00:00)"
    );
    assert_eq!(holding_note(s.config(), job), Some(job.comment.as_str()));
    assert_eq!(holding_note(s.config(), s.job(mpp).unwrap()), None);

    let refused = qsub(&mut s, "DAY", &[("nodes", "256")]).unwrap_err();
    assert!(matches!(refused, CoreError::NoRoute { .. }), "{refused}");
    s.check_invariants().unwrap();

    // The holding queue never starts: the pass starts the others only.
    let plan = Scheduler.pass(&s, t(1));
    let starts: Vec<JobId> = plan.starts.iter().map(|st| st.job).collect();
    assert!(!starts.contains(&long), "{starts:?}");
    assert!(starts.contains(&compile), "{starts:?}");
    assert_eq!(
        plan.reason_of(&Scheduler, &s, s.job(long).unwrap()),
        Reason::QueueStopped
    );

    // An operator moves it to a queue that takes it; then it can run.
    let op = caller(5, Role::Operator);
    let err = s.move_job(long, "W_MPP_256", &op, t(2)).unwrap_err();
    assert!(err.to_string().contains("allows at most 12:00:00"), "{err}");
    s.check_invariants().unwrap();
}
