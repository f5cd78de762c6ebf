//! Accounts against the state: resolution, refusals with their figures,
//! charging at the end of a job, and the fair-share factor.

use super::*;
use crate::access::Role;
use crate::error::CoreError;
use crate::job::{ExitCause, JobExit, JobId};
use crate::state::State;
use crate::state::tests::{caller, state, t};
use crate::submit::Submission;

fn with_accounts(nodes: usize, accounts: &[Account]) -> State {
    let mut st = state(nodes);
    let mut config = st.config().clone();
    for a in accounts {
        config.accounts.insert(a.name.clone(), a.clone());
    }
    st.set_config(config);
    st
}

fn account(name: &str, allocation: Option<u64>, shares: u32, users: &[&str]) -> Account {
    Account {
        allocation,
        shares,
        users: users.iter().map(|u| u.to_string()).collect(),
        ..Account::new(name)
    }
}

/// A job of user `u{uid}` for `nodes` × `walltime` seconds, charging `account`.
fn submit(
    st: &mut State,
    uid: u32,
    account: Option<&str>,
    nodes: u32,
    walltime: u64,
) -> Result<JobId, CoreError> {
    let sub = Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        resources: vec![
            ("nodes".into(), nodes.to_string()),
            ("walltime".into(), walltime.to_string()),
        ],
        account: account.map(str::to_string),
        ..Submission::default()
    };
    st.submit(sub, &caller(uid, Role::User), t(0)).map(|j| j.id)
}

fn exited() -> JobExit {
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

/// Starts a job on the first free nodes and ends it `secs` later.
fn run_for(st: &mut State, id: JobId, start: i64, secs: i64) {
    let n = st.job(id).unwrap().nodes as usize;
    let free: Vec<usize> = (0..st.nodes().len())
        .filter(|&i| st.nodes()[i].is_free())
        .take(n)
        .collect();
    st.start(id, &free, t(start)).unwrap();
    st.finish(id, exited(), t(start + secs)).unwrap();
}

#[test]
fn sub_accounts_resolve_to_their_group() {
    assert_eq!(group_of("c1-prod"), "c1");
    assert_eq!(group_of("c1-dev-x"), "c1");
    assert_eq!(group_of("c1"), "c1");
    let mut st = with_accounts(4, &[account("c1", None, 1, &[])]);
    let id = submit(&mut st, 1, Some("c1-prod"), 1, 60).unwrap();
    assert_eq!(st.job(id).unwrap().account.as_deref(), Some("c1-prod"));
    assert_eq!(st.accounting().tally().group("c1").queued, 1);
    let err = submit(&mut st, 1, Some("c2-prod"), 1, 60).unwrap_err();
    assert_eq!(
        err.to_string(),
        "account \"c2-prod\" does not exist; see qmgr list account"
    );
    assert!(
        valid_account_name("c1-prod")
            .unwrap_err()
            .contains("sub-accounts charge their group")
    );
    assert!(valid_account_name("c1").is_ok());
}

#[test]
fn the_users_list_decides_who_charges_and_the_default() {
    let mut st = with_accounts(
        4,
        &[
            account("c1", None, 1, &["u1", "u2"]),
            account("c2", None, 1, &["u2"]),
            account("open", None, 1, &[]),
        ],
    );
    // u1 is listed once: that account is used.
    let id = submit(&mut st, 1, None, 1, 60).unwrap();
    assert_eq!(st.job(id).unwrap().account.as_deref(), Some("c1"));
    // u2 is listed twice: it must choose, and is told its accounts.
    let err = submit(&mut st, 2, None, 1, 60).unwrap_err();
    assert!(matches!(err, CoreError::AccountRequired { .. }));
    assert!(err.to_string().contains("u2 may charge c1, c2"), "{err}");
    // u3 is listed nowhere.
    let err = submit(&mut st, 3, None, 1, 60).unwrap_err();
    assert!(err.to_string().contains("no account lists u3"), "{err}");
    // ... may charge an open account, but not another group's.
    submit(&mut st, 3, Some("open"), 1, 60).unwrap();
    let err = submit(&mut st, 3, Some("c1-dev"), 1, 60).unwrap_err();
    assert!(matches!(err, CoreError::NotAccountUser { .. }), "{err}");
    assert!(err.to_string().contains("\"c1-dev\""), "{err}");
}

#[test]
fn without_accounts_any_account_name_is_taken() {
    let mut st = state(2);
    let id = submit(&mut st, 1, Some("whatever"), 1, 60).unwrap();
    assert_eq!(st.job(id).unwrap().account.as_deref(), Some("whatever"));
    let id = submit(&mut st, 1, None, 1, 60).unwrap();
    assert_eq!(st.job(id).unwrap().account, None);
}

#[test]
fn a_job_the_allocation_cannot_cover_is_refused_with_the_figures() {
    let mut st = with_accounts(128, &[account("c1", Some(5000), 1, &[])]);
    st.restore_usage({
        let mut u = Usage::default();
        u.charge("c1", 4800.0, t(-10), 3600);
        u
    });
    // 99.5 node-hours committed: a queued job 1 node × 99:30:00.
    submit(&mut st, 1, Some("c1"), 1, 99 * 3600 + 1800).unwrap();
    let before = st.pending_count();
    let err = submit(&mut st, 1, Some("c1-prod"), 64, 7200).unwrap_err();
    assert_eq!(
        err.to_string(),
        "account c1: job needs 128.0 node-hours (64 nodes × 02:00:00) but only 100.5 of 5000 \
         remain (4800.0 used, 99.5 committed to queued and running jobs); see spusage"
    );
    assert!(matches!(err, CoreError::AllocationExceeded { .. }));
    assert_eq!(err.kind(), crate::error::ErrorKind::Exhausted);
    assert_eq!(st.pending_count(), before, "nothing is queued");
    // What fits is taken.
    submit(&mut st, 1, Some("c1"), 50, 7200).unwrap();
}

#[test]
fn a_running_job_stays_committed_until_it_is_charged() {
    let mut st = with_accounts(4, &[account("c1", Some(10), 1, &[])]);
    let id = submit(&mut st, 1, Some("c1"), 4, 7200).unwrap(); // 8 node-hours
    st.start(id, &[0, 1, 2, 3], t(0)).unwrap();
    assert!(
        submit(&mut st, 1, Some("c1"), 1, 3 * 3600).is_err(),
        "8 + 3 > 10"
    );
    st.finish(id, exited(), t(1800)).unwrap(); // ran half an hour: 2 node-hours
    let report = st.account_report("c1", t(1800));
    assert_eq!((report.used, report.committed), (2.0, 0.0));
    assert_eq!(report.remaining, Some(8.0));
    submit(&mut st, 1, Some("c1"), 1, 3 * 3600).unwrap();
    st.check_invariants().unwrap();
}

#[test]
fn a_finished_job_charges_nodes_times_wall_clock() {
    let mut st = with_accounts(8, &[account("c1", Some(100), 1, &[])]);
    let id = submit(&mut st, 1, Some("c1-dev"), 4, 7200).unwrap();
    run_for(&mut st, id, 10, 900);
    assert_eq!(st.accounting().usage().used("c1"), 1.0, "4 nodes × 900 s");
    let (group, hours) = charge_of(st.job(id).unwrap()).unwrap();
    assert_eq!((group, hours), ("c1", 1.0));
    st.check_invariants().unwrap();
}

#[test]
fn the_time_a_job_was_suspended_is_not_charged() {
    use crate::suspend::Pause;
    let mut st = with_accounts(8, &[account("c1", Some(100), 1, &[])]);
    let id = submit(&mut st, 1, Some("c1"), 4, 7200).unwrap();
    st.start(id, &[0, 1, 2, 3], t(0)).unwrap();
    let op = crate::state::tests::caller(5, crate::Role::Operator);
    st.pause(id, &op, Pause::Suspend, t(600)).unwrap();
    st.pause(id, &op, Pause::Resume, t(2400)).unwrap();
    st.finish(id, exited(), t(2700)).unwrap();
    // 2,700 s of wall clock, 1,800 of them suspended: 4 nodes × 900 s.
    assert_eq!(st.accounting().usage().used("c1"), 1.0);
    assert_eq!(charge_of(st.job(id).unwrap()), Some(("c1", 1.0)));
}

#[test]
fn a_requeued_or_never_launched_job_charges_nothing() {
    let mut st = with_accounts(2, &[account("c1", None, 1, &[])]);
    let id = submit(&mut st, 1, Some("c1"), 1, 600).unwrap();
    st.start(id, &[0], t(0)).unwrap();
    let lost = JobExit {
        code: None,
        signal: None,
        cause: ExitCause::Lost,
        message: String::new(),
        cput: None,
        max_rss: None,
        vmem: None,
    };
    st.finish(id, lost, t(300)).unwrap();
    assert_eq!(st.accounting().usage().used("c1"), 0.0, "requeued");
    st.start(id, &[0], t(400)).unwrap();
    let unlaunched = JobExit {
        code: None,
        signal: None,
        cause: ExitCause::Deleted,
        message: String::new(),
        cput: None,
        max_rss: None,
        vmem: None,
    };
    st.finish(id, unlaunched, t(401)).unwrap();
    assert_eq!(st.accounting().usage().used("c1"), 0.0, "never launched");
    st.check_invariants().unwrap();
}

#[test]
fn fair_share_puts_light_users_first() {
    let mut st = with_accounts(
        8,
        &[
            account("heavy", None, 1, &[]),
            account("light", None, 1, &[]),
            account("big", None, 2, &[]),
        ],
    );
    let heavy = submit(&mut st, 1, Some("heavy"), 4, 7200).unwrap();
    let light = submit(&mut st, 2, Some("light"), 1, 7200).unwrap();
    let big = submit(&mut st, 3, Some("big"), 4, 7200).unwrap();
    let none = submit(&mut st, 1, Some("heavy"), 1, 60).unwrap();
    let job = |st: &State, id| st.job(id).unwrap().clone();
    let f = |st: &State, id| st.fair_share(&job(st, id), t(0));
    assert_eq!(f(&st, heavy), 1.0, "no usage yet: all equal");
    run_for(&mut st, heavy, 0, 3600); // 4 node-hours
    run_for(&mut st, light, 0, 3600); // 1
    run_for(&mut st, big, 0, 3600); // 4, with twice the shares
    let next = submit(&mut st, 1, Some("heavy"), 1, 60).unwrap();
    let (h, l, b) = (f(&st, next), f(&st, light), f(&st, big));
    assert!(l > b && b > h, "light {l} > big {b} > heavy {h}");
    // heavy used 4/9 of the machine against a 1/4 share: 2^(-16/9).
    assert!((h - (-16.0f64 / 9.0).exp2()).abs() < 1e-12, "{h}");
    // A job without an account is not ranked.
    let mut other = job(&st, none);
    other.account = None;
    assert_eq!(st.fair_share(&other, t(0)), 1.0);
}

#[test]
fn limits_refuse_and_name_the_limit() {
    let mut st = with_accounts(4, &[account("c1", None, 1, &[])]);
    let mut config = st.config().clone();
    config.server.max_user_queued = Some(2);
    config.server.max_user_node_hours = Some(10);
    st.set_config(config);
    submit(&mut st, 1, Some("c1"), 1, 3600).unwrap();
    submit(&mut st, 1, Some("c1"), 1, 3600).unwrap();
    let err = submit(&mut st, 1, Some("c1"), 1, 3600).unwrap_err();
    assert_eq!(
        err.to_string(),
        "user u1 already has 2 queued jobs and this would be one more, above the limit \
         max_user_queued = 2; wait until some of the queued jobs start, or delete some"
    );
    assert_eq!(err.kind(), crate::error::ErrorKind::Exhausted);
    let err = submit(&mut st, 2, Some("c1"), 4, 3 * 3600).unwrap_err();
    assert!(
        err.to_string().contains("max_user_node_hours = 10"),
        "{err}"
    );
    assert!(err.to_string().contains("12.0 more"), "{err}");
    // Deleting one makes room again.
    let first = st.pending_jobs().next().unwrap().id;
    st.delete(first, &caller(1, Role::User), t(1)).unwrap();
    submit(&mut st, 1, Some("c1"), 1, 3600).unwrap();
    st.check_invariants().unwrap();
}

#[test]
fn group_limits_and_the_accounts_own_override() {
    let mut limited = account("c1", None, 1, &[]);
    limited.max_queued = Some(1);
    let mut st = with_accounts(4, &[limited, account("c2", None, 1, &[])]);
    let mut config = st.config().clone();
    config.server.max_group_queued = Some(2);
    config.server.max_group_node_hours = Some(3);
    st.set_config(config);
    submit(&mut st, 1, Some("c1-a"), 1, 60).unwrap();
    let err = submit(&mut st, 2, Some("c1-b"), 1, 60).unwrap_err();
    assert!(
        err.to_string()
            .contains("account c1 already has 1 queued jobs")
            && err.to_string().contains("max_queued of account c1 = 1"),
        "{err}"
    );
    submit(&mut st, 1, Some("c2"), 1, 3600).unwrap();
    submit(&mut st, 2, Some("c2"), 1, 3600).unwrap();
    let err = submit(&mut st, 3, Some("c2"), 1, 60).unwrap_err();
    assert!(err.to_string().contains("max_group_queued = 2"), "{err}");
    let mut st = with_accounts(4, &[account("c3", None, 1, &[])]);
    let mut config = st.config().clone();
    config.server.max_group_node_hours = Some(3);
    st.set_config(config);
    let err = submit(&mut st, 1, Some("c3"), 2, 7200).unwrap_err();
    assert!(
        err.to_string().contains("max_group_node_hours = 3"),
        "{err}"
    );
}

#[test]
fn run_limits_take_the_accounts_max_run() {
    let mut own = account("c1", None, 1, &[]);
    own.max_run = Some(3);
    let mut st = with_accounts(4, &[own, account("c2", None, 1, &[])]);
    let mut config = st.config().clone();
    config.server.max_group_run = Some(5);
    config.server.max_user_run = Some(7);
    st.set_config(config);
    let a = submit(&mut st, 1, Some("c1-x"), 1, 60).unwrap();
    let b = submit(&mut st, 1, Some("c2"), 1, 60).unwrap();
    let limits = |id| st.config().run_limits(st.job(id).unwrap());
    assert_eq!(
        limits(a),
        RunLimits {
            user: Some(7),
            group: Some(("c1".into(), 3))
        }
    );
    assert_eq!(limits(b).group, Some(("c2".into(), 5)));
}

#[test]
fn allocation_short_counts_running_jobs() {
    let mut st = with_accounts(4, &[account("c1", Some(4), 1, &[])]);
    let a = submit(&mut st, 1, Some("c1"), 2, 3600).unwrap();
    let b = submit(&mut st, 1, Some("c1"), 2, 3600).unwrap();
    let job_b = st.job(b).unwrap().clone();
    assert!(!st.allocation_short(&job_b));
    st.start(a, &[0, 1], t(0)).unwrap();
    assert!(!st.allocation_short(&job_b), "2 running + 2 = 4");
    st.restore_usage({
        let mut u = Usage::default();
        u.charge("c1", 0.5, t(0), 3600);
        u
    });
    assert!(st.allocation_short(&job_b), "0.5 used + 2 + 2 > 4");
}
