//! Licences and other resources consumed per queue and server: qmgr's
//! `resources_available`, the pass's check, the sentences, the refusal.

use proptest::prelude::*;

use crate::access::Role;
use crate::job::{ExitCause, JobExit};
use crate::qmgr::{parse_script, run};
use crate::queue::Queue;
use crate::scheduler::{Reason, Scheduler};
use crate::state::State;
use crate::state::tests::{caller, state, t};
use crate::submit::Submission;
use crate::{CoreError, JobId};

/// Runs a qmgr script as a manager and applies it.
fn qmgr(s: &mut State, script: &str) -> String {
    let mut config = s.config().clone();
    let commands = parse_script(script).unwrap();
    let out = run(&commands, &mut config, s, &caller(0, Role::Manager)).unwrap();
    s.set_config(config);
    out.output
}

fn submit_in(s: &mut State, queue: &str, resources: &[(&str, &str)]) -> Result<JobId, CoreError> {
    let sub = Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        queue: Some(queue.into()),
        resources: resources
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        ..Submission::default()
    };
    s.submit(sub, &caller(1000, Role::User), t(0)).map(|j| j.id)
}

fn matlab(s: &mut State, amount: u32) -> JobId {
    submit_in(s, "batch", &[("matlab", &amount.to_string())]).unwrap()
}

/// Runs a pass, starts what it says; the jobs started.
fn pass(s: &mut State, now: i64) -> Vec<JobId> {
    let plan = Scheduler.pass(s, t(now));
    for start in &plan.starts {
        s.start(start.job, &start.nodes, t(now)).unwrap();
    }
    plan.starts.iter().map(|st| st.job).collect()
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

fn reason(s: &State, id: JobId, now: i64) -> Option<Reason> {
    Scheduler.pass(s, t(now)).entry(id).and_then(|e| e.reason)
}

#[test]
fn qmgr_bounds_q_resources_and_keeps_the_others_inert() {
    let mut s = state(4);
    let out = qmgr(
        &mut s,
        "create resource matlab type = long, flag = q\n\
         create resource scratch type = size, flag = q\n\
         set server resources_available.matlab = 4, resources_available.scratch = 1tb\n\
         set queue batch resources_available.matlab = 2\n\
         set queue batch resources_available.ncpus = 8",
    );
    let config = s.config();
    assert_eq!(config.server.resources_available["matlab"], "4");
    assert_eq!(config.server.resources_available["scratch"], "1tb");
    assert_eq!(config.queues["batch"].resources_available["matlab"], "2");
    assert!(
        out.contains("resources_available.ncpus is accepted and kept, but has no effect")
            && out.contains("flag = q"),
        "a resource without flag q is inert, and the warning says what counts: {out}"
    );
    assert!(
        !out.contains("resources_available.matlab is accepted"),
        "{out}"
    );
    let printed = crate::qmgr::print_server(s.config());
    assert!(
        printed.contains("set queue batch resources_available.matlab = 2\n")
            && printed.contains("set server resources_available.matlab = 4\n"),
        "{printed}"
    );
    // print server restores: resources first, then the bounds.
    let mut fresh = state(4);
    let over = crate::qmgr::print_server_over(s.config(), fresh.config());
    qmgr(&mut fresh, &over);
    assert_eq!(
        fresh.config().server.resources_available,
        config.server.resources_available
    );

    let mut copy = s.config().clone();
    for (script, says) in [
        (
            "set server resources_available.matlab = lots",
            "\"lots\" is not a whole number",
        ),
        ("set server resources_available.matlab = -1", "0 or more"),
        (
            "delete resource matlab",
            "named by the server's resources_available.matlab",
        ),
    ] {
        let err = run(
            &parse_script(script).unwrap(),
            &mut copy,
            &s,
            &caller(0, Role::Manager),
        )
        .unwrap_err();
        assert!(err.message.contains(says), "{script}: {err}");
    }
    qmgr(
        &mut s,
        "unset queue batch resources_available.matlab\nunset server resources_available.matlab",
    );
    assert!(!s.config().server.resources_available.contains_key("matlab"));
    assert!(s.config().queues["batch"].resources_available.is_empty());
}

#[test]
fn a_bound_set_before_its_resource_had_flag_q_takes_effect_once_set_again() {
    let mut s = state(2);
    let out = qmgr(
        &mut s,
        "create resource matlab type = long
set server resources_available.matlab = 4",
    );
    assert!(
        out.contains("resources_available.matlab is accepted and kept"),
        "{out}"
    );
    assert!(
        super::Consumables::of(s.config(), s.active_jobs()).is_none(),
        "no flag q: no bound"
    );
    qmgr(
        &mut s,
        "set resource matlab flag = q
set server resources_available.matlab = 4",
    );
    let server = &s.config().server;
    assert_eq!(server.resources_available["matlab"], "4");
    assert!(server.inert.is_empty(), "{:?}", server.inert);
    assert!(super::Consumables::of(s.config(), s.active_jobs()).is_some());
}

#[test]
fn a_job_waits_while_its_licences_are_in_use_and_starts_when_they_come_back() {
    let mut s = state(4);
    qmgr(
        &mut s,
        "create resource matlab type = long, flag = q\nset server resources_available.matlab = 3",
    );
    let first = matlab(&mut s, 2);
    let second = matlab(&mut s, 2);
    // One pass, both pending: the first start is counted for the second.
    assert_eq!(pass(&mut s, 1), vec![first]);
    assert_eq!(reason(&s, second, 2), Some(Reason::Consumable));
    let job = s.job(second).unwrap();
    assert_eq!(Scheduler.reason(&s, job), Reason::Consumable);
    assert_eq!(
        super::describe(s.config(), s.active_jobs(), job).unwrap(),
        "waits for matlab: 2 of 3 in use (resources_available.matlab = 3); it asks for 2"
    );
    assert_eq!(
        super::assigned(s.config(), s.active_jobs()),
        vec![("matlab".to_string(), "2".to_string())]
    );
    // Nothing is reserved: a job asking what is left starts meanwhile.
    let small = matlab(&mut s, 1);
    let plain = submit_in(&mut s, "batch", &[("nodes", "1")]).unwrap();
    let started = pass(&mut s, 3);
    assert_eq!(started, vec![small, plain]);
    assert_eq!(reason(&s, second, 4), Some(Reason::Consumable));

    end(&mut s, first, 5);
    assert_eq!(pass(&mut s, 6), vec![second]);
    assert_eq!(
        super::assigned(s.config(), s.active_jobs()),
        vec![("matlab".to_string(), "3".to_string())]
    );
}

#[test]
fn a_queue_bounds_its_own_jobs_and_the_server_all() {
    let mut s = state(8);
    let mut config = s.config().clone();
    config.queues.insert("short".into(), Queue::open("short"));
    s.set_config(config);
    qmgr(
        &mut s,
        "create resource lic type = float, flag = q\n\
         set server resources_available.lic = 5\n\
         set queue short resources_available.lic = 1.5",
    );
    // Queues by name: batch's jobs first.
    let a = submit_in(&mut s, "short", &[("lic", "1")]).unwrap();
    let b = submit_in(&mut s, "short", &[("lic", "1")]).unwrap();
    let c = submit_in(&mut s, "batch", &[("lic", "2")]).unwrap();
    let d = submit_in(&mut s, "batch", &[("lic", "1")]).unwrap();
    let started = pass(&mut s, 1);
    assert_eq!(started, vec![c, d, a], "b would pass short's 1.5");
    assert_eq!(
        super::describe(s.config(), s.active_jobs(), s.job(b).unwrap()).unwrap(),
        "waits for lic: 1 of 1.5 in use in queue short (resources_available.lic = 1.5); \
         it asks for 1"
    );
    // A queue default counts as asked.
    qmgr(&mut s, "set queue batch resources_default.lic = 0.5");
    let e = submit_in(&mut s, "batch", &[]).unwrap();
    let f = submit_in(&mut s, "batch", &[("lic", "1")]).unwrap();
    assert_eq!(s.job(e).unwrap().resource_list["lic"], "0.5");
    assert_eq!(
        pass(&mut s, 2),
        vec![e],
        "4 + 0.5 fits 5, and 1 more does not"
    );
    assert_eq!(
        super::describe(s.config(), s.active_jobs(), s.job(f).unwrap()).unwrap(),
        "waits for lic: 4.5 of 5 in use (resources_available.lic = 5); it asks for 1"
    );
}

#[test]
fn a_job_asking_more_than_there_is_is_refused_with_the_figures() {
    let mut s = state(2);
    qmgr(
        &mut s,
        "create resource matlab type = long, flag = q\n\
         set server resources_available.matlab = 4\n\
         set queue batch resources_available.matlab = 3",
    );
    let err = submit_in(&mut s, "batch", &[("matlab", "5")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("resource matlab")
            && err.contains("\"5\"")
            && err.contains("the server has resources_available.matlab = 4"),
        "{err}"
    );
    let err = submit_in(&mut s, "batch", &[("matlab", "4")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("queue \"batch\" has resources_available.matlab = 3")
            && err.contains("ask for at most 3"),
        "{err}"
    );
    assert!(submit_in(&mut s, "batch", &[("matlab", "3")]).is_ok());
    // Lowered after submission: the job waits and says why.
    let id = submit_in(&mut s, "batch", &[("matlab", "3")]).unwrap();
    qmgr(&mut s, "set queue batch resources_available.matlab = 2");
    let why = super::describe(s.config(), s.active_jobs(), s.job(id).unwrap()).unwrap();
    assert!(
        why.contains(
            "asks for 3 of matlab, more than resources_available.matlab = 2 in queue batch"
        ),
        "{why}"
    );
}

#[test]
fn resources_without_a_bound_or_flag_q_bound_nothing() {
    let mut s = state(3);
    qmgr(
        &mut s,
        "create resource matlab type = long, flag = q\n\
         create resource seats type = long\n\
         set server resources_available.seats = 1",
    );
    assert!(super::Consumables::of(s.config(), s.active_jobs()).is_none());
    let ids: Vec<JobId> = (0..3)
        .map(|_| submit_in(&mut s, "batch", &[("matlab", "9"), ("seats", "5")]).unwrap())
        .collect();
    assert_eq!(pass(&mut s, 1), ids);
}

proptest! {
    /// Whatever jobs come and go, the jobs running never use more of a
    /// resource than the server's or their queue's bound, and a job
    /// waits for it only when starting it would pass one.
    #[test]
    fn running_jobs_never_use_more_than_the_bounds(
        server in 0u32..8,
        queue_bound in proptest::option::of(0u32..6),
        steps in proptest::collection::vec((0u32..4, any::<bool>(), 0usize..8), 1..40),
    ) {
        let mut s = state(6);
        let mut script = format!(
            "create resource matlab type = long, flag = q\n\
             set server resources_available.matlab = {server}"
        );
        if let Some(q) = queue_bound {
            script.push_str(&format!("\nset queue batch resources_available.matlab = {q}"));
        }
        qmgr(&mut s, &script);
        let bound = queue_bound.map_or(server, |q| q.min(server));
        for (now, (amount, ends, which)) in steps.into_iter().enumerate() {
            let now = now as i64 * 10;
            // Refused when it asks more than a bound: nothing to check.
            let _ = matlab_or_refused(&mut s, amount);
            if ends {
                let active: Vec<JobId> = s.active_jobs().map(|j| j.id).collect();
                if !active.is_empty() {
                    end(&mut s, active[which % active.len()], now);
                }
            }
            let plan = Scheduler.pass(&s, t(now + 1));
            for start in &plan.starts {
                s.start(start.job, &start.nodes, t(now + 1)).unwrap();
            }
            let used: u32 = s
                .active_jobs()
                .map(|j| j.resource_list["matlab"].parse::<u32>().unwrap())
                .sum();
            prop_assert!(used <= bound, "{used} in use, bound {bound}");
            for entry in &plan.queue {
                if entry.reason == Some(Reason::Consumable) {
                    let job = s.job(entry.job).unwrap();
                    let asked: u32 = job.resource_list["matlab"].parse().unwrap();
                    prop_assert!(used + asked > bound);
                    prop_assert!(super::describe(s.config(), s.active_jobs(), job).is_some());
                }
            }
        }
    }
}

fn matlab_or_refused(s: &mut State, amount: u32) -> Result<JobId, CoreError> {
    submit_in(s, "batch", &[("matlab", &amount.to_string())])
}
