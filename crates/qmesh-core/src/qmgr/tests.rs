//! qmgr's tests of whole scripts (queues, the server, rights, reorder),
//! and `run_as`, which the object modules' tests share.

use super::*;
use crate::access::Role;
use crate::server::Config;
use crate::state::State;
use crate::state::tests::{caller, state, submit};

pub(super) fn run_as(
    role: Role,
    script: &str,
    config: &mut Config,
    st: &State,
) -> Result<Outcome, QmgrError> {
    let cmds = parse_script(script)?;
    run(&cmds, config, st, &caller(7, role))
}

#[test]
fn max_array_size_bounds_arrays_in_both_names() {
    let st = state(4);
    let mut config = st.config().clone();
    assert_eq!(config.server.max_array_size, 100_000);
    run_as(
        Role::Manager,
        "set server max_job_array_size = 500",
        &mut config,
        &st,
    )
    .unwrap();
    assert_eq!(config.server.max_array_size, 500);
    let printed = run_as(Role::Manager, "print server", &mut config, &st).unwrap();
    assert!(
        printed.output.contains("set server max_array_size = 500"),
        "{}",
        printed.output
    );
    assert!(
        run_as(
            Role::Manager,
            "set server max_array_size = 0",
            &mut config,
            &st
        )
        .is_err()
    );
    run_as(
        Role::Manager,
        "unset server max_array_size",
        &mut config,
        &st,
    )
    .unwrap();
    assert_eq!(config.server.max_array_size, 100_000);
}

#[test]
fn creates_and_sets_a_queue() {
    let st = state(4);
    let mut config = st.config().clone();
    let out = run_as(
        Role::Manager,
        "create queue fast priority=10\nset queue fast enabled=true, started = t\nset per_request ncpus = 2 fast\nset queue fast max_walltime = 1:00:00",
        &mut config,
        &st,
    )
    .unwrap();
    assert_eq!(out.applied, 4);
    let q = &config.queues["fast"];
    assert_eq!((q.priority, q.enabled, q.started), (10, true, true));
    assert_eq!(q.default_nodes, Some(2));
    assert_eq!(q.max_walltime, Some(3600));
}

#[test]
fn an_error_names_the_line_and_the_word() {
    let st = state(4);
    let mut config = st.config().clone();
    let err = run_as(
        Role::Manager,
        "create queue a\nset queue a prioirty = 3",
        &mut config,
        &st,
    )
    .unwrap_err();
    assert_eq!(err.line, 2);
    assert!(err.message.contains("\"prioirty\""), "{err}");
    let err = run_as(
        Role::Manager,
        "set queue nosuch priority = 1",
        &mut config,
        &st,
    )
    .unwrap_err();
    assert!(
        err.message.contains("queue \"nosuch\" does not exist"),
        "{err}"
    );
    let err = run_as(
        Role::Manager,
        "set queue batch node_sets = mars",
        &mut config,
        &st,
    )
    .unwrap_err();
    assert!(err.message.contains("node set \"mars\""), "{err}");
    let err = run_as(
        Role::Manager,
        "set server default_queue = nosuch",
        &mut config,
        &st,
    )
    .unwrap_err();
    assert!(err.message.contains("nosuch"), "{err}");
}

#[test]
fn rights_are_checked() {
    let st = state(4);
    let mut config = st.config().clone();
    let err = run_as(Role::User, "set queue batch priority = 1", &mut config, &st).unwrap_err();
    assert!(err.message.contains("operator rights"), "{err}");
    run_as(
        Role::Operator,
        "set queue batch priority = 1",
        &mut config,
        &st,
    )
    .unwrap();
    let err = run_as(Role::Operator, "create queue x", &mut config, &st).unwrap_err();
    assert!(err.message.contains("manager rights"), "{err}");
    let err = run_as(
        Role::Operator,
        "set server managers += eve",
        &mut config,
        &st,
    )
    .unwrap_err();
    assert!(err.message.contains("manager rights"), "{err}");
    run_as(Role::User, "list queue\nprint server", &mut config, &st).unwrap();
}

#[test]
fn a_queue_with_jobs_is_not_deleted() {
    let mut st = state(4);
    submit(&mut st, 1, 1);
    let mut config = st.config().clone();
    let err = run_as(Role::Manager, "delete queue batch", &mut config, &st).unwrap_err();
    assert!(err.message.contains("still has 1 job"), "{err}");
}

#[test]
fn reorder_says_what_it_does_and_needs_operator_rights() {
    let mut st = state(4);
    for uid in [1, 1, 2] {
        submit(&mut st, uid, 1);
    }
    let mut config = st.config().clone();
    let err = run_as(Role::User, "reorder queue batch", &mut config, &st).unwrap_err();
    assert!(err.message.contains("operator rights"), "{err}");
    let out = run_as(Role::Operator, "reorder queue batch", &mut config, &st).unwrap();
    assert_eq!(
        out.output,
        "queue batch: 3 jobs reordered across 2 groups\n"
    );
    assert_eq!(out.reorder, vec!["batch"]);
    assert_eq!(out.applied, 0, "the configuration is unchanged");
    let err = run_as(Role::Operator, "reorder queue nosuch", &mut config, &st).unwrap_err();
    assert!(err.message.contains("\"nosuch\" does not exist"), "{err}");
}

#[test]
fn reorder_times_are_set_sorted_and_checked() {
    let st = state(1);
    let mut config = st.config().clone();
    run_as(
        Role::Operator,
        "set queue batch reorder_times = \"20:00,8:00\"\nset queue batch reorder_times += 12:30",
        &mut config,
        &st,
    )
    .unwrap();
    let times: Vec<String> = config.queues["batch"]
        .reorder_times
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(times, vec!["08:00", "12:30", "20:00"]);
    let printed = print_server(&config);
    assert!(
        printed.contains("set queue batch reorder_times = \"08:00,12:30,20:00\"\n"),
        "{printed}"
    );
    let err = run_as(
        Role::Operator,
        "set queue batch reorder_times = 25:00",
        &mut config,
        &st,
    )
    .unwrap_err();
    assert!(
        err.message.contains("\"25:00\" is not a time of day"),
        "{err}"
    );
    run_as(
        Role::Operator,
        "unset queue batch reorder_times",
        &mut config,
        &st,
    )
    .unwrap();
    assert!(config.queues["batch"].reorder_times.is_empty());
}

#[test]
fn lists_add_and_remove() {
    let st = state(1);
    let mut config = st.config().clone();
    run_as(
        Role::Manager,
        "set server managers = \"a@*,b@*\"\nset server managers += c\nset server managers -= a@*",
        &mut config,
        &st,
    )
    .unwrap();
    assert_eq!(config.server.managers, vec!["b@*", "c"]);
    let err = run_as(
        Role::Manager,
        "set server managers -= zed",
        &mut config,
        &st,
    )
    .unwrap_err();
    assert!(err.message.contains("\"zed\" is not in managers"), "{err}");
    let err = run_as(
        Role::Manager,
        "set queue batch priority += 1",
        &mut config,
        &st,
    )
    .unwrap_err();
    assert!(err.message.contains("works on lists"), "{err}");
}

#[test]
fn list_shows_attributes_and_counts() {
    let mut st = state(4);
    submit(&mut st, 1, 1);
    let mut config = st.config().clone();
    let out = run_as(Role::User, "list queue batch", &mut config, &st).unwrap();
    assert!(out.output.starts_with("Queue batch\n"), "{}", out.output);
    assert!(
        out.output.contains("    total_jobs = 1\n"),
        "{}",
        out.output
    );
    assert!(
        out.output.contains("    enabled = True\n"),
        "{}",
        out.output
    );
}
