//! Advance reservations (pbs_rsub) in the pass: confirmed around running
//! jobs, other reservations and shutdown windows; their nodes kept from
//! every job that would still run then, on every topology; their queue's
//! jobs run only inside them. The property runs queues to their end, pass
//! after pass, and checks both rules on every start.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::tests_placed::machine;
use super::*;
use crate::job::{ExitCause, JobExit};
use crate::node::{Topology, TorusConversion, TorusPartition};
use crate::reservation::ResvError;
use crate::rsub::{self, ResvRequest};
use crate::server::Backfill;
use crate::shutdown::Shutdown;
use crate::state::tests::{caller, t};
use crate::submit::Submission;
use crate::{Role, Time};

/// One flat set of `n` nodes (`n0`...), queue `batch`.
fn flat(n: u32) -> State {
    crate::state::tests::state(n as usize)
}

fn submit_to(s: &mut State, queue: &str, uid: u32, nodes: u32, secs: u64, at: Time) -> JobId {
    let sub = Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        queue: Some(queue.into()),
        resources: vec![
            ("nodes".into(), nodes.to_string()),
            ("walltime".into(), secs.to_string()),
        ],
        ..Submission::default()
    };
    s.submit(sub, &caller(uid, Role::User), at).unwrap().id
}

/// Reserves `n` nodes over `[from, to)` (seconds after `t(0)`) for user
/// 1000; the reservation's number.
fn reserve(s: &mut State, n: u32, from: i64, to: i64, now: i64) -> Result<u64, ResvError> {
    let req = ResvRequest {
        nodes: n,
        start: Some(t(from)),
        end: Some(t(to)),
        ..ResvRequest::default()
    };
    let (config, r) = rsub::submit(s, &caller(1000, Role::User), "login", &req, t(now))?;
    s.set_config(config);
    Ok(r.id)
}

fn resv_nodes(s: &State, id: u64) -> Vec<usize> {
    let r = &s.config().reservations[&id];
    s.nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| r.occurrences[0].nodes.iter().any(|m| **m == *n.name))
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn a_start_that_would_overlap_a_reservation_keeps_off_its_nodes() {
    let mut s = flat(4);
    let r = reserve(&mut s, 2, 100, 200, 0).unwrap();
    let held = resv_nodes(&s, r);
    assert_eq!(held.len(), 2);
    let short = submit_to(&mut s, "batch", 1, 4, 100, t(0));
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(
        plan.starts.len(),
        1,
        "four nodes end as the reservation begins"
    );
    assert_eq!(plan.starts[0].job, short);

    let mut s = flat(4);
    let r = reserve(&mut s, 2, 100, 200, 0).unwrap();
    let held = resv_nodes(&s, r);
    let long2 = submit_to(&mut s, "batch", 2, 2, 300, t(0));
    let long3 = submit_to(&mut s, "batch", 1, 3, 300, t(0));
    let plan = Scheduler.pass(&s, t(0));
    assert_ne!(plan.entry(long3).unwrap().status, Status::Startable);
    assert_eq!(
        why(&plan, &s, long3),
        Reason::Resources,
        "two nodes are free"
    );

    let start = plan
        .starts
        .iter()
        .find(|st| st.job == long2)
        .expect("two nodes are clear");
    assert!(
        start.nodes.iter().all(|i| !held.contains(i)),
        "{:?} against the reservation's {held:?}",
        start.nodes
    );

    // Four free, but three for 300 s would run into the reservation.
    let mut s = flat(4);
    reserve(&mut s, 2, 100, 200, 0).unwrap();
    let long3 = submit_to(&mut s, "batch", 1, 3, 300, t(0));
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(why(&plan, &s, long3), Reason::ReservedNodes);
    assert_eq!(plan.entry(long3).unwrap().expected_start, Some(t(200)));
    let crossed = Scheduler
        .closedown_crossed(&s, s.job(long3).unwrap(), t(0))
        .expect("the reservation");
    assert_eq!(
        crossed.describe(&chrono::Utc),
        format!(
            "would cross reservation R1 ({} until {})",
            crate::shutdown::format_local(t(100), &chrono::Utc),
            crate::shutdown::format_local(t(200), &chrono::Utc)
        )
    );
}

#[test]
fn its_queue_runs_only_inside_it_and_its_nodes_only_for_it() {
    let mut s = flat(4);
    let r = reserve(&mut s, 2, 100, 200, 0).unwrap();
    let held = resv_nodes(&s, r);
    let inside = submit_to(&mut s, "R1", 1000, 2, 50, t(0));
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(why(&plan, &s, inside), Reason::ReservationNotRunning);
    // Its occurrence is on: its job runs there, an outsider elsewhere.
    let outsider = submit_to(&mut s, "batch", 1, 4, 50, t(100));
    let too_long = submit_to(&mut s, "R1", 1000, 1, 500, t(100));
    let plan = Scheduler.pass(&s, t(100));
    let start = plan
        .starts
        .iter()
        .find(|st| st.job == inside)
        .expect("the reservation is on");
    let mut nodes = start.nodes.clone();
    nodes.sort_unstable();
    assert_eq!(nodes, held);
    assert_ne!(plan.entry(outsider).unwrap().status, Status::Startable);
    assert_eq!(why(&plan, &s, too_long), Reason::ReservationEnd);
    assert_eq!(r, 1);
}

#[test]
fn on_a_mesh_a_big_job_is_promised_the_end_of_the_reservation_and_nothing_delays_it() {
    let mesh = Topology::Mesh2d {
        width: 4,
        height: 4,
        contiguous: false,
    };
    let mut s = machine(mesh, Backfill::Easy);
    reserve(&mut s, 4, 0, 600, 0).unwrap();
    let inside = submit_to(&mut s, "R1", 1000, 2, 60, t(0));
    let big = submit_to(&mut s, "batch", 1, 16, 3600, t(0));
    let long = submit_to(&mut s, "batch", 2, 12, 3600, t(0));
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(started(&plan), [inside]);
    assert_eq!(plan.entry(big).unwrap().expected_start, Some(t(600)));
    assert_ne!(
        plan.entry(long).unwrap().status,
        Status::Startable,
        "an hour on twelve nodes would delay the big job"
    );
}

#[test]
fn an_asap_reservation_takes_the_first_time_the_jobs_nodes_are_free_and_its_owner() {
    let mut s = flat(4);
    let running = submit_to(&mut s, "batch", 1, 3, 1000, t(0));
    let plan = Scheduler.pass(&s, t(0));
    s.start(running, &plan.starts[0].nodes, t(0)).unwrap();
    let waiting = submit_to(&mut s, "batch", 7, 2, 100, t(0));
    let req = ResvRequest {
        qmove_job: Some(waiting.to_string()),
        ..ResvRequest::default()
    };
    let err = rsub::submit_asap(&s, &caller(8, Role::User), "h", &req, t(10)).unwrap_err();
    assert!(
        matches!(err, ResvError::NotAllowed(_)),
        "not its owner: {err}"
    );
    let (config, r, job) = rsub::submit_asap(&s, &caller(7, Role::User), "h", &req, t(10)).unwrap();
    assert_eq!(job, waiting);
    assert_eq!(
        r.occurrences[0].start,
        t(1000),
        "when the running job's wall time ends"
    );
    assert_eq!(r.occurrences[0].end, t(1100));
    assert_eq!(r.nodes, 2);
    s.set_config(config);
    s.move_job(waiting, "R1", &caller(7, Role::User), t(10))
        .unwrap();
    assert_eq!(s.job(waiting).unwrap().queue, "R1");
}

#[test]
fn first_come_first_served_blocking_does_not_hold_back_a_reservations_jobs() {
    let mut s = flat(4);
    let mut config = s.config().clone();
    // qmesh-sim's fcfs: no backfill, every job above block_priority.
    config.server.backfill = Backfill::None;
    config.server.block_priority = 0.5;
    for q in config.queues.values_mut() {
        q.priority = 1;
    }
    s.set_config(config);
    reserve(&mut s, 2, 0, 600, 0).unwrap();
    let head = submit_to(&mut s, "batch", 1, 4, 60, t(0));
    let inside = submit_to(&mut s, "R1", 1000, 2, 60, t(0));
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(plan.entry(head).unwrap().status, Status::Blocked);
    assert_eq!(started(&plan), [inside]);
}

fn started(plan: &Plan) -> Vec<JobId> {
    plan.starts.iter().map(|s| s.job).collect()
}

fn why(plan: &Plan, state: &State, id: JobId) -> Reason {
    plan.reason_of(&Scheduler, state, state.job(id).unwrap())
}

#[test]
fn it_is_confirmed_around_running_jobs_reservations_and_shutdowns() {
    let mut s = flat(4);
    let running = submit_to(&mut s, "batch", 1, 3, 1000, t(0));
    let plan = Scheduler.pass(&s, t(0));
    s.start(running, &plan.starts[0].nodes, t(0)).unwrap();
    let err = reserve(&mut s, 2, 100, 200, 0).unwrap_err();
    assert!(matches!(err, ResvError::Denied(_)), "{err}");
    assert!(err.to_string().contains("has 1 free"), "{err}");
    reserve(&mut s, 2, 1000, 1100, 0).expect("the job has ended by then");
    let err = reserve(&mut s, 3, 1050, 1150, 0).unwrap_err();
    assert!(
        err.to_string().contains("not free"),
        "another reservation holds two: {err}"
    );
    reserve(&mut s, 2, 1050, 1150, 0).expect("two more are free");
    let mut config = s.config().clone();
    config
        .shutdowns
        .insert("maint".into(), Shutdown::new("maint", t(5000), t(6000)));
    s.set_config(config);
    assert!(reserve(&mut s, 1, 5500, 5600, 0).is_err());
    let err = reserve(&mut s, 5, 9000, 9100, 0).unwrap_err();
    assert!(err.to_string().contains("has 4"), "{err}");
}

#[test]
fn resv_enable_and_acl_resv_users_decide_who_may_reserve() {
    let mut s = flat(4);
    let mut config = s.config().clone();
    config.server.acl_resv_user_enable = true;
    config.server.acl_resv_users = vec!["u7".into()];
    s.set_config(config);
    assert!(matches!(
        reserve(&mut s, 1, 100, 200, 0),
        Err(ResvError::NotAllowed(_))
    ));
    let req = ResvRequest {
        nodes: 1,
        start: Some(t(100)),
        duration: Some(60),
        ..ResvRequest::default()
    };
    assert!(rsub::submit(&s, &caller(7, Role::User), "h", &req, t(0)).is_ok());
    assert!(rsub::submit(&s, &caller(8, Role::Operator), "h", &req, t(0)).is_ok());
    let mut config = s.config().clone();
    config.server.resv_enable = false;
    s.set_config(config);
    let err = rsub::submit(&s, &caller(7, Role::User), "h", &req, t(0)).unwrap_err();
    assert!(err.to_string().contains("resv_enable"), "{err}");
}

#[test]
fn deleting_a_reservation_takes_its_queue_and_altering_reconfirms() {
    let mut s = flat(4);
    let r = reserve(&mut s, 4, 100, 200, 0).unwrap();
    assert!(s.config().queues.contains_key("R1"));
    let later = ResvRequest {
        start: Some(t(300)),
        end: Some(t(400)),
        ..ResvRequest::default()
    };
    let (config, altered) = rsub::alter(&s, &caller(1000, Role::User), r, &later, t(0)).unwrap();
    assert_eq!(altered.occurrences[0].start, t(300));
    s.set_config(config);
    let err = rsub::delete(&s, &caller(5, Role::User), r).unwrap_err();
    assert!(matches!(err, ResvError::NotAllowed(_)), "only its owner");
    let (config, _) = rsub::delete(&s, &caller(1000, Role::User), r).unwrap();
    assert!(!config.queues.contains_key("R1"));
    assert!(config.reservations.is_empty());
}

fn exit() -> JobExit {
    JobExit {
        code: Some(0),
        signal: None,
        cause: ExitCause::Exited,
        message: String::new(),
        cput: None,
        max_rss: None,
        vmem: None,
    }
}

/// What ran where and when.
struct Run {
    job: JobId,
    queue: String,
    from: Time,
    to: Time,
    nodes: Vec<usize>,
}

/// Runs every job to its end (each runs its wall time), with a pass at
/// each job's end and each occurrence's start and end.
fn run_all(s: &mut State) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut ends: BTreeMap<(Time, JobId), ()> = BTreeMap::new();
    let mut turns: Vec<Time> = s
        .config()
        .reservations
        .values()
        .flat_map(|r| r.occurrences.iter().flat_map(|o| [o.start, o.end]))
        .collect();
    turns.sort();
    let mut now = t(0);
    for _ in 0..2000 {
        let plan = Scheduler.pass(s, now);
        for start in &plan.starts {
            let job = s
                .start_placed(start.job, &start.nodes, &start.parts, now)
                .unwrap();
            let to = now + chrono::Duration::seconds(job.walltime as i64);
            runs.push(Run {
                job: start.job,
                queue: job.queue.clone(),
                from: now,
                to,
                nodes: start.nodes.clone(),
            });
            ends.insert((to, start.job), ());
        }
        s.check_invariants().unwrap();
        let next_end = ends.first_key_value().map(|(&(end, _), _)| end);
        let next_turn = turns.iter().copied().find(|&x| x > now);
        let Some(next) = [next_end, next_turn].into_iter().flatten().min() else {
            break;
        };
        now = next;
        while let Some((&(end, id), _)) = ends.first_key_value() {
            if end > now {
                break;
            }
            ends.pop_first();
            s.finish(id, exit(), now).unwrap();
        }
    }
    runs
}

fn topology() -> impl Strategy<Value = Topology> {
    prop_oneof![
        Just(Topology::Flat),
        prop::sample::select(vec![vec![8], vec![4, 4], vec![2, 2, 4]]).prop_flat_map(|dims| {
            prop::sample::select(vec![TorusPartition::Ep, TorusPartition::Nep]).prop_map(
                move |partition| Topology::Torus {
                    dims: dims.clone(),
                    partition,
                    conversion: TorusConversion::Merge,
                },
            )
        }),
        (2u32..5, 2u32..5).prop_map(|(width, height)| Topology::Mesh2d {
            width,
            height,
            contiguous: false,
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// No job runs on a reservation's nodes during an occurrence but its
    /// own jobs, and those run only inside an occurrence, on its nodes.
    #[test]
    fn no_job_overlaps_a_reservation_on_its_nodes(
        topology in topology(),
        conservative in any::<bool>(),
        jobs in prop::collection::vec((1u32..6, 1u64..40, any::<bool>()), 1..25),
        resvs in prop::collection::vec((1u32..5, 0i64..60, 5i64..40, 1u32..3), 1..4),
    ) {
        let mode = if conservative { Backfill::Conservative } else { Backfill::Easy };
        let topology_is_flat = topology == Topology::Flat;
        let size = topology.size().unwrap_or(8);
        let mut s = if topology_is_flat {
            let mut s = flat(8);
            let mut config = s.config().clone();
            config.server.backfill = mode;
            s.set_config(config);
            s
        } else {
            machine(topology, mode)
        };
        let mut ids = Vec::new();
        for (n, from, len, count) in resvs {
            let req = ResvRequest {
                nodes: n.min(size),
                start: Some(t(from * 60)),
                duration: Some(len as u64 * 60),
                rrule: (count > 1).then(|| format!("FREQ=HOURLY;INTERVAL=2;COUNT={count}")),
                ..ResvRequest::default()
            };
            if let Ok((config, r)) = rsub::submit(&s, &caller(1000, Role::User), "h", &req, t(0)) {
                s.set_config(config);
                ids.push(r.id);
            }
        }
        for (i, &(n, minutes, in_resv)) in jobs.iter().enumerate() {
            let queue = match ids.get(i % ids.len().max(1)) {
                Some(id) if in_resv => format!("R{id}"),
                _ => "batch".to_string(),
            };
            let sub = Submission {
                script_name: "job.sh".into(),
                workdir: "/tmp".into(),
                queue: Some(queue),
                resources: vec![
                    ("nodes".into(), n.min(size).to_string()),
                    ("walltime".into(), (minutes * 60).to_string()),
                ],
                ..Submission::default()
            };
            let _ = s.submit(sub, &caller(1000, Role::User), t(0));
        }
        let reservations = s.config().reservations.clone();
        let index: BTreeMap<String, usize> = s
            .nodes()
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.to_string(), i))
            .collect();
        let runs = run_all(&mut s);
        for run in &runs {
            for r in reservations.values() {
                let own = run.queue == r.queue_name();
                for o in &r.occurrences {
                    let held: Vec<usize> = o.nodes.iter().map(|n| index[n]).collect();
                    if !own && o.start < run.to && run.from < o.end {
                        prop_assert!(
                            run.nodes.iter().all(|i| !held.contains(i)),
                            "job {} ran {:?} on {:?}, into R{}'s {:?}..{:?} on {held:?}",
                            run.job, (run.from, run.to), run.nodes, r.id, o.start, o.end
                        );
                    }
                }
                if own {
                    let inside = r.occurrences.iter().any(|o| {
                        let held: Vec<usize> = o.nodes.iter().map(|n| index[n]).collect();
                        o.start <= run.from
                            && run.to <= o.end
                            && run.nodes.iter().all(|i| held.contains(i))
                    });
                    prop_assert!(inside, "job {} of R{} ran outside it", run.job, r.id);
                }
            }
        }
    }
}
