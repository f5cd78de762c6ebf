//! Route queues through qmgr: made, listed, printed, checked.

use crate::access::Role;
use crate::qmgr::{Outcome, QmgrError, parse_script, print_server, run};
use crate::queue::QueueType;
use crate::server::Config;
use crate::state::State;
use crate::state::tests::{caller, state, submit};

fn qmgr(script: &str, config: &mut Config, st: &State) -> Result<Outcome, QmgrError> {
    run(
        &parse_script(script)?,
        config,
        st,
        &caller(0, Role::Manager),
    )
}

/// The EPCC NIGHT pipe, as an administrator types it.
const NIGHT: &str = "\
create queue MPP_256 resources_max.nodes = 4, resources_min.nodes = 3, resources_max.walltime = 6:00:00, enabled = true, started = true
create queue N_MPP_64 resources_max.nodes = 2, resources_max.walltime = 6:00:00, enabled = true, started = true
create queue COMPILE_NIGHT resources_max.nodes = 1, enabled = true, started = true
create queue HOLD enabled = true
create queue NIGHT queue_type = pipe, enabled = true
set queue NIGHT route_destinations = MPP_256
set queue NIGHT route_destinations += N_MPP_64
set queue NIGHT default_destination = COMPILE_NIGHT
set queue NIGHT holding_queue = HOLD
";

#[test]
fn a_pipe_queue_is_made_listed_and_printed() {
    let st = state(4);
    let mut config = st.config().clone();
    let out = qmgr(NIGHT, &mut config, &st).unwrap();
    assert_eq!(out.output, "", "no warnings");
    let night = &config.queues["NIGHT"];
    assert_eq!(night.queue_type, QueueType::Route);
    assert_eq!(night.route_destinations, ["MPP_256", "N_MPP_64"]);
    assert_eq!(night.default_destination.as_deref(), Some("COMPILE_NIGHT"));
    assert_eq!(night.holding_queue.as_deref(), Some("HOLD"));

    let listed = qmgr("list queue NIGHT", &mut config, &st).unwrap().output;
    for line in [
        "Queue NIGHT\n",
        "    queue_type = Route\n",
        "    route_destinations = MPP_256,N_MPP_64\n",
        "    default_destination = COMPILE_NIGHT\n",
        "    holding_queue = HOLD\n",
    ] {
        assert!(listed.contains(line), "no {line:?} in\n{listed}");
    }

    // print server loads back to the same configuration, and prints the
    // same again.
    let printed = print_server(&config);
    assert!(
        printed.contains("set queue NIGHT route_destinations = \"MPP_256,N_MPP_64\"\n"),
        "{printed}"
    );
    let mut rebuilt = Config::default();
    qmgr(&printed, &mut rebuilt, &st).unwrap();
    assert_eq!(rebuilt.queues, config.queues);
    assert_eq!(print_server(&rebuilt), printed);
}

#[test]
fn route_attributes_are_checked_and_errors_name_the_line() {
    let st = state(4);
    let mut config = st.config().clone();
    qmgr(NIGHT, &mut config, &st).unwrap();
    let cases = [
        (
            "set queue NIGHT route_destinations += MPP_512",
            "route_destinations names queue \"MPP_512\", which does not exist",
        ),
        (
            "set queue NIGHT holding_queue = NIGHT",
            "names itself in holding_queue",
        ),
        (
            "set queue batch route_destinations = MPP_256",
            "\"batch\" is an execution queue",
        ),
        (
            "set queue NIGHT queue_type = batch",
            "\"batch\" is not a queue type; write Execution, or Route (pipe)",
        ),
        (
            "delete queue N_MPP_64",
            "queue \"N_MPP_64\" is in the route_destinations of route queue \"NIGHT\"",
        ),
        (
            "set queue NIGHT route_destinations = \"MPP 256\"",
            "is not a queue name",
        ),
        (
            "create queue DAY queue_type = route, route_destinations = NIGHT\nset queue NIGHT route_destinations += DAY",
            "route queues send jobs round in a loop: DAY -> NIGHT -> DAY",
        ),
    ];
    for (script, expected) in cases {
        let before = config.clone();
        let err = qmgr(script, &mut config.clone(), &st).unwrap_err();
        assert!(err.message.contains(expected), "{script}: {err}");
        assert_eq!(config, before);
    }
    let err = qmgr(
        "create queue X\nset queue X queue_type = r, route_destinations = nope",
        &mut config.clone(),
        &st,
    )
    .unwrap_err();
    assert_eq!(err.line, 2, "{err}");
}

#[test]
fn a_started_holding_queue_is_warned_about_once() {
    let st = state(4);
    let mut config = st.config().clone();
    qmgr(NIGHT, &mut config, &st).unwrap();
    let out = qmgr("set queue HOLD started = true", &mut config, &st).unwrap();
    assert_eq!(out.applied, 1, "a warning, not an error");
    assert!(
        out.output.starts_with(
            "warning: \"HOLD\", the holding queue of route queue \"NIGHT\", is started"
        ),
        "{}",
        out.output
    );
    let again = qmgr("set queue HOLD priority = 1", &mut config, &st).unwrap();
    assert_eq!(again.output, "", "not repeated for an unrelated change");
}

#[test]
fn a_queue_with_jobs_does_not_become_a_route_queue() {
    let mut st = state(4);
    submit(&mut st, 1, 1);
    let mut config = st.config().clone();
    let err = qmgr("set queue batch queue_type = route", &mut config, &st).unwrap_err();
    assert!(
        err.message
            .contains("queue \"batch\" has 1 job(s) and a route queue keeps none"),
        "{err}"
    );
}
