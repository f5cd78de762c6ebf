use super::*;
use crate::access::Role;
use crate::error::CoreError;
use crate::queue::Queue;
use crate::scheduler::{Reason, Scheduler};
use crate::state::State;
use crate::state::tests::{caller, state, t};
use crate::submit::Submission;

#[test]
fn limit_sets_read_and_print_as_pbs_writes_them() {
    let set = LimitSet::parse(
        "max_run",
        "[u:alice=10], [g:PBS_GENERIC=3],[u:PBS_GENERIC=5][o:PBS_ALL=100]",
    )
    .unwrap();
    assert_eq!(
        set.to_string(),
        "[o:PBS_ALL=100],[u:PBS_GENERIC=5],[u:alice=10],[g:PBS_GENERIC=3]"
    );
    assert_eq!(
        set.limit_for(Entity::User, "alice"),
        Some((10, "u:alice".into()))
    );
    assert_eq!(
        set.limit_for(Entity::User, "bob"),
        Some((5, "u:PBS_GENERIC".into()))
    );
    assert_eq!(
        set.limit_for(Entity::Overall, ""),
        Some((100, "o:PBS_ALL".into()))
    );
    assert_eq!(set.limit_for(Entity::Project, "p1"), None);
    assert_eq!(LimitSet::parse("max_run", &set.to_string()).unwrap(), set);
}

/// Queue `workq` (open) beside `batch`, four nodes.
fn with_workq(limits: JobLimits) -> State {
    let mut s = state(4);
    let mut config = s.config().clone();
    let mut q = Queue::open("workq");
    q.limits = limits;
    config.queues.insert("workq".into(), q);
    s.set_config(config);
    s
}

fn submit_to(s: &mut State, queue: &str, uid: u32) -> Result<crate::JobId, CoreError> {
    submit_as(s, queue, &caller(uid, Role::User))
}

fn submit_as(s: &mut State, queue: &str, who: &crate::Caller) -> Result<crate::JobId, CoreError> {
    let sub = Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        queue: Some(queue.into()),
        resources: vec![("nodes".into(), "1".into())],
        ..Submission::default()
    };
    s.submit(sub, who, t(0)).map(|j| j.id)
}

/// User `u{uid}` in the group `physics`.
fn physicist(uid: u32) -> crate::Caller {
    crate::Caller {
        group: "physics".into(),
        ..caller(uid, Role::User)
    }
}

#[test]
fn queued_limits_refuse_with_the_figures() {
    let mut s = with_workq(JobLimits {
        max_user_queuable: Some(2),
        max_queuable: Some(3),
        ..JobLimits::default()
    });
    submit_to(&mut s, "workq", 1).unwrap();
    let second = submit_to(&mut s, "workq", 1).unwrap();
    let err = submit_to(&mut s, "workq", 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Maximum number of jobs for user u1 already in queue \"workq\": 2 queued or running, \
         and max_user_queuable = 2 allows no more; wait until some end or delete some (qdel), \
         or ask an administrator to raise it (qmgr -c \"set queue workq max_user_queuable\" = ...)"
    );
    // Other queues and other users are not counted against it.
    submit_to(&mut s, "batch", 1).unwrap();
    submit_to(&mut s, "workq", 2).unwrap();
    let err = submit_to(&mut s, "workq", 3).unwrap_err().to_string();
    assert!(
        err.starts_with("Maximum number of jobs already in queue \"workq\": 3 queued or running")
            && err.contains("max_queuable = 3"),
        "{err}"
    );
    // A running job still counts; a finished one does not.
    s.start(second, &[0], t(1)).unwrap();
    assert!(submit_to(&mut s, "workq", 3).is_err());
    let exit = crate::JobExit {
        code: Some(0),
        signal: None,
        cause: crate::ExitCause::Exited,
        message: String::new(),
        cput: None,
        max_rss: None,
        vmem: None,
    };
    s.finish(second, exit, t(2)).unwrap();
    submit_to(&mut s, "workq", 3).unwrap();
    s.check_invariants().unwrap();
}

#[test]
fn new_style_queued_limits_and_the_server() {
    let mut s = with_workq(JobLimits {
        max_queued: LimitSet::parse("max_queued", "[u:PBS_GENERIC=1],[u:u7=3]").unwrap(),
        ..JobLimits::default()
    });
    submit_to(&mut s, "workq", 1).unwrap();
    let err = submit_to(&mut s, "workq", 1).unwrap_err().to_string();
    assert!(err.contains("max_queued [u:PBS_GENERIC=1]"), "{err}");
    for _ in 0..3 {
        submit_to(&mut s, "workq", 7).unwrap();
    }
    let err = submit_to(&mut s, "workq", 7).unwrap_err().to_string();
    assert!(err.contains("max_queued [u:u7=3]"), "{err}");

    let mut config = s.config().clone();
    config.server.limits.max_queued = LimitSet::parse("max_queued", "[o:PBS_ALL=5]").unwrap();
    s.set_config(config);
    submit_to(&mut s, "batch", 9).unwrap();
    let err = submit_to(&mut s, "batch", 9).unwrap_err().to_string();
    assert!(
        err.starts_with("Maximum number of jobs already in the server: 5 queued or running"),
        "{err}"
    );
}

#[test]
fn counters_kept_only_with_limits_are_made_when_a_limit_is_set() {
    let mut s = state(4);
    assert!(
        !s.accounting().tally.counting_entities,
        "no limit: no counters"
    );
    for _ in 0..3 {
        submit_to(&mut s, "batch", 1).unwrap();
    }
    let mut config = s.config().clone();
    config.queues.get_mut("batch").unwrap().limits.max_queued =
        LimitSet::parse("max_queued", "[o:PBS_ALL=3]").unwrap();
    s.set_config(config);
    s.check_invariants().unwrap();
    let err = submit_to(&mut s, "batch", 2).unwrap_err().to_string();
    assert!(err.contains("3 queued or running"), "{err}");
    let mut config = s.config().clone();
    config.queues.get_mut("batch").unwrap().limits = JobLimits::default();
    s.set_config(config);
    assert!(!s.accounting().tally.counting_entities);
    submit_to(&mut s, "batch", 2).unwrap();
    s.check_invariants().unwrap();
}

#[test]
fn project_limits_count_the_jobs_of_qsub_p() {
    let mut s = with_workq(JobLimits {
        max_queued: LimitSet::parse("max_queued", "[p:climate=1]").unwrap(),
        ..JobLimits::default()
    });
    let submit = |s: &mut State, project: Option<&str>| {
        let sub = Submission {
            script_name: "job.sh".into(),
            workdir: "/tmp".into(),
            queue: Some("workq".into()),
            project: project.map(String::from),
            ..Submission::default()
        };
        s.submit(sub, &caller(1, Role::User), t(0)).map(|j| j.id)
    };
    submit(&mut s, Some("climate")).unwrap();
    submit(&mut s, Some("ocean")).unwrap();
    submit(&mut s, None).unwrap();
    let err = submit(&mut s, Some("climate")).unwrap_err().to_string();
    assert!(err.contains("[p:climate=1]"), "{err}");
}

#[test]
fn qmove_counts_the_destination_only() {
    let mut s = with_workq(JobLimits {
        max_user_queuable: Some(1),
        ..JobLimits::default()
    });
    let a = submit_to(&mut s, "batch", 1).unwrap();
    let b = submit_to(&mut s, "batch", 1).unwrap();
    s.move_job(a, "workq", &caller(1, Role::User), t(1))
        .unwrap();
    let err = s
        .move_job(b, "workq", &caller(1, Role::User), t(1))
        .unwrap_err();
    assert!(matches!(err, CoreError::MaxJobsQueued { .. }), "{err}");
    // Moving the job back out frees its place.
    s.move_job(a, "batch", &caller(1, Role::User), t(2))
        .unwrap();
    s.move_job(b, "workq", &caller(1, Role::User), t(2))
        .unwrap();
    s.check_invariants().unwrap();
}

/// What the pass says of each job: started, or the reason it waits.
fn reasons(s: &State) -> Vec<(u64, Option<Reason>)> {
    let plan = Scheduler.pass(s, t(10));
    plan.queue.iter().map(|e| (e.job.0, e.reason)).collect()
}

#[test]
fn run_limits_hold_jobs_back_per_queue() {
    // max_user_run = 1 and max_running = 2 in workq; batch has none.
    let mut s = with_workq(JobLimits {
        max_user_run: Some(1),
        max_running: Some(2),
        ..JobLimits::default()
    });
    let a1 = submit_to(&mut s, "workq", 1).unwrap();
    let a2 = submit_to(&mut s, "workq", 1).unwrap();
    let b1 = submit_to(&mut s, "workq", 2).unwrap();
    let c1 = submit_to(&mut s, "workq", 3).unwrap();
    let elsewhere = submit_to(&mut s, "batch", 1).unwrap();
    let r = reasons(&s);
    let of = |id: crate::JobId| r.iter().find(|(j, _)| *j == id.0).map(|(_, why)| *why);
    assert_eq!(of(a1), Some(None), "starts");
    assert_eq!(of(a2), Some(Some(Reason::UserLimit)));
    assert_eq!(of(b1), Some(None), "another user starts");
    assert_eq!(of(c1), Some(Some(Reason::QueueLimit)), "two run in workq");
    assert_eq!(of(elsewhere), Some(None), "batch has no limit");

    // Once running, the describing sentence names the limit and the count.
    let plan = Scheduler.pass(&s, t(10));
    for start in &plan.starts {
        s.start(start.job, &start.nodes, t(10)).unwrap();
    }
    let job = s.job(a2).unwrap().clone();
    assert_eq!(
        crate::state::limits::describe_run_limit(&s, &job).unwrap(),
        "user u1 already runs 1 job in queue workq, as many as max_user_run = 1 allows; \
         it starts when one ends"
    );
    let job = s.job(c1).unwrap().clone();
    assert!(
        crate::state::limits::describe_run_limit(&s, &job)
            .unwrap()
            .starts_with("queue \"workq\" already runs 2 jobs, as many as max_running = 2"),
    );
}

#[test]
fn new_style_run_limits_group_and_named_users() {
    let mut s = with_workq(JobLimits {
        max_run: LimitSet::parse("max_run", "[u:PBS_GENERIC=1],[u:u5=2],[g:PBS_GENERIC=3]")
            .unwrap(),
        ..JobLimits::default()
    });
    let ids: Vec<_> = [5, 5, 5, 6]
        .iter()
        .map(|&u| submit_as(&mut s, "workq", &physicist(u)).unwrap())
        .collect();
    let r = reasons(&s);
    let why: Vec<Option<Reason>> = ids
        .iter()
        .map(|id| r.iter().find(|(j, _)| *j == id.0).unwrap().1)
        .collect();
    assert_eq!(
        why,
        vec![None, None, Some(Reason::UserLimit), None],
        "u5 may run two, the group three"
    );
    let more = submit_as(&mut s, "workq", &physicist(7)).unwrap();
    let r = reasons(&s);
    assert_eq!(
        r.iter().find(|(j, _)| *j == more.0).unwrap().1,
        Some(Reason::GroupLimit)
    );
}

#[test]
fn server_run_limits_count_every_queue() {
    let mut s = with_workq(JobLimits::default());
    let mut config = s.config().clone();
    config.server.limits.max_run = LimitSet::parse("max_run", "[u:PBS_GENERIC=1]").unwrap();
    s.set_config(config);
    let a = submit_to(&mut s, "workq", 1).unwrap();
    let b = submit_to(&mut s, "batch", 1).unwrap();
    let r = reasons(&s);
    let mut why: Vec<Option<Reason>> = [a, b]
        .iter()
        .map(|id| r.iter().find(|(j, _)| *j == id.0).unwrap().1)
        .collect();
    why.sort_by_key(Option::is_some);
    assert_eq!(
        why,
        vec![None, Some(Reason::UserLimit)],
        "one of the two runs"
    );
}

mod props {
    use super::*;
    use proptest::prelude::*;

    /// A job: its queue (workq or batch), its user (1..=3) and group
    /// (`physics` or the user's own).
    fn arb_jobs() -> impl Strategy<Value = Vec<(bool, u32, bool)>> {
        proptest::collection::vec((any::<bool>(), 1u32..4, any::<bool>()), 1..14)
    }

    fn arb_limits() -> impl Strategy<Value = (JobLimits, JobLimits)> {
        let one = (
            proptest::option::of(0u32..4),
            proptest::option::of(0u32..3),
            proptest::option::of(0u32..3),
            proptest::option::of(0u32..3),
        )
            .prop_map(|(running, user, group, named)| {
                let mut run = LimitSet::default();
                if let Some(n) = named {
                    run.add(LimitSet::parse("max_run", &format!("[u:u2={n}]")).unwrap());
                }
                JobLimits {
                    max_running: running,
                    max_user_run: user,
                    max_group_run: group,
                    max_run: run,
                    ..JobLimits::default()
                }
            });
        (one.clone(), one)
    }

    proptest! {
        /// Whatever the limits, a pass starts no job that takes a queue,
        /// a user or a group past one of them (counting the jobs it starts
        /// itself), and a job held back by one names a limit really reached.
        #[test]
        fn a_pass_never_starts_past_a_run_limit(
            jobs in arb_jobs(),
            (queue_limits, server_limits) in arb_limits(),
        ) {
            let mut s = with_workq(queue_limits.clone());
            let mut config = s.config().clone();
            // The server's side: max_running and max_run only.
            config.server.limits = JobLimits {
                max_running: server_limits.max_running,
                max_run: server_limits.max_run.clone(),
                ..JobLimits::default()
            };
            s.set_config(config);
            for &(in_workq, uid, physics) in &jobs {
                let who = if physics { physicist(uid) } else { caller(uid, Role::User) };
                submit_as(&mut s, if in_workq { "workq" } else { "batch" }, &who).unwrap();
            }
            let plan = Scheduler.pass(&s, t(10));
            for start in &plan.starts {
                s.start(start.job, &start.nodes, t(10)).unwrap();
            }
            let running: Vec<&crate::Job> = s.active_jobs().collect();
            let count = |f: &dyn Fn(&crate::Job) -> bool| running.iter().filter(|j| f(j)).count() as u32;
            let config = s.config().clone();
            let workq = &config.queues["workq"];
            for job in &running {
                for (limits, in_scope) in [
                    (&workq.limits, &(|j: &crate::Job| j.queue == "workq") as &dyn Fn(&crate::Job) -> bool),
                    (&config.server.limits, &|_: &crate::Job| true),
                ] {
                    if !in_scope(job) {
                        continue;
                    }
                    for a in limits.run_limits_for(job) {
                        let n = count(&|j| {
                            in_scope(j) && entity_name(j, a.entity) == Some(a.name.as_str())
                        });
                        prop_assert!(n <= a.max, "{} runs {n} past {}", a.name, a.written);
                    }
                }
            }
            // Four nodes: whoever is held back by a limit faces one reached.
            for e in &plan.queue {
                if matches!(e.reason, Some(Reason::UserLimit | Reason::GroupLimit | Reason::QueueLimit)) {
                    let job = s.job(e.job).unwrap().clone();
                    prop_assert!(crate::state::limits::describe_run_limit(&s, &job).is_some()
                        || config.server.max_user_run.is_some());
                }
            }
            s.check_invariants().unwrap();
        }
    }
}
