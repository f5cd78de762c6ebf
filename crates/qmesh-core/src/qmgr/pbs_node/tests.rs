//! What OpenPBS and Torque installs write: hosts added with create node,
//! the sched object, Torque's leftovers, and resources named the same way
//! everywhere.

use super::super::{Outcome, QmgrError, parse_script, print_server, run};
use crate::access::Role;
use crate::server::Config;
use crate::state::State;
use crate::state::tests::caller;

fn run_as(role: Role, script: &str, config: &mut Config) -> Result<Outcome, QmgrError> {
    let cmds = parse_script(script)?;
    let state = State::new("srv", Config::default(), vec![]).unwrap();
    run(&cmds, config, &state, &caller(7, role))
}

#[test]
fn create_node_makes_a_node_set_per_host_with_its_attributes() {
    let mut config = Config::default();
    let out = run_as(
        Role::Manager,
        "create node cn01 resources_available.ncpus = 16, resources_available.mem = 64gb, \
         Mom = cn01.cluster, properties = \"fat,ib\"\n\
         create node cn02\n",
        &mut config,
    )
    .unwrap();
    assert!(
        out.output
            .contains("create node cn01: node set \"cn01\" made, one node on host cn01"),
        "{}",
        out.output
    );
    assert!(
        out.output.contains("Mom = cn01.cluster: not kept"),
        "{}",
        out.output
    );
    let set = &config.node_sets["cn01"];
    assert_eq!(set.nodes.len(), 1);
    assert_eq!(
        (set.nodes[0].name.as_str(), set.nodes[0].host.as_str()),
        ("cn01", "cn01")
    );
    assert_eq!(set.attrs.cpus, Some(16));
    assert_eq!(set.attrs.mem, Some(64 << 30));
    assert_eq!(set.attrs.features, ["fat", "ib"]);
    assert!(config.node_sets.contains_key("cn02"));
    // A restore needs no create node: print server makes the sets.
    let mut restored = Config::default();
    run_as(Role::Manager, &print_server(&config), &mut restored).unwrap();
    assert_eq!(restored.node_sets, config.node_sets);

    run_as(Role::Manager, "delete node cn02", &mut config).unwrap();
    assert!(!config.node_sets.contains_key("cn02"));
    let err = run_as(Role::Manager, "delete node nosuch", &mut config).unwrap_err();
    assert!(
        err.message.contains("no node set was made for host nosuch"),
        "{err}"
    );
    let err = run_as(Role::Operator, "create node cn03", &mut config).unwrap_err();
    assert!(err.message.contains("manager"), "{err}");
}

#[test]
fn the_sched_object_sets_scheduling_and_says_what_the_rest_is() {
    let mut config = Config::default();
    let out = run_as(
        Role::Manager,
        "set sched scheduling = False\nset sched scheduler_iteration = 600\n\
         set sched default opt_backfill_fuzzy = high",
        &mut config,
    )
    .unwrap();
    assert!(!config.server.scheduling);
    assert!(
        out.output
            .contains("sched scheduler_iteration = 600: not kept"),
        "{}",
        out.output
    );
    assert!(out.output.contains("set server backfill"), "{}", out.output);
    let listed = run_as(Role::Manager, "list sched", &mut config)
        .unwrap()
        .output;
    assert!(listed.contains("scheduling = False"), "{listed}");
    let err = run_as(Role::Manager, "set sched colour = red", &mut config).unwrap_err();
    assert!(
        err.message
            .contains("unknown attribute \"colour\" for the scheduler"),
        "{err}"
    );
    let err = run_as(Role::Manager, "create sched s2", &mut config).unwrap_err();
    assert!(err.message.contains("one scheduler"), "{err}");
}

#[test]
fn torque_leftovers_are_kept_with_a_warning_and_unknown_resources_refused_alike() {
    let mut config = Config::default();
    let out = run_as(
        Role::Manager,
        "create queue batch queue_type = execution\n\
         set queue batch resources_default.neednodes = 1\n\
         set server timeout_for_job_delete = 120, timeout_for_job_requeue = 120\n\
         set server default_chunk.ncpus = 1",
        &mut config,
    )
    .unwrap();
    for said in [
        "resources_default.neednodes",
        "timeout_for_job_delete",
        "timeout_for_job_requeue",
    ] {
        assert!(out.output.contains(said), "{said} in {}", out.output);
    }
    for script in [
        "set server resources_default.frob = 1",
        "set server default_chunk.frob = 1",
        "set queue batch default_chunk.frob = 1",
    ] {
        let err = run_as(Role::Manager, script, &mut config).unwrap_err();
        assert!(
            err.message.contains("unknown resource \"frob\""),
            "{script}: {err}"
        );
    }
    let mut restored = Config::default();
    run_as(Role::Manager, &print_server(&config), &mut restored).unwrap();
    assert_eq!(restored, config);
}

#[test]
fn preemption_is_set_on_the_sched_or_the_server_and_targets_on_a_queue() {
    let mut config = Config::default();
    run_as(
        Role::Manager,
        "set sched preempt_queue_prio = 170\n\
         set sched preempt_order = \"SR 50 S\"\n\
         set server preempt_prio = \"express_queue, normal_jobs\"\n\
         create queue expressq queue_type = e, priority = 200, enabled = t, started = t\n\
         set queue expressq resources_default.preempt_targets = \"queue=workq,queue=long\"",
        &mut config,
    )
    .unwrap();
    assert_eq!(config.server.preempt_queue_prio, 170);
    assert_eq!(config.server.preempt_order, "SR 50 S");
    assert_eq!(
        config.queues["expressq"].resources_default["preempt_targets"],
        "queue=workq,queue=long"
    );
    let printed = print_server(&config);
    assert!(
        printed.contains("set server preempt_queue_prio = 170"),
        "{printed}"
    );
    assert!(printed.contains("preempt_order = \"SR 50 S\""), "{printed}");
    assert!(
        printed.contains("resources_default.preempt_targets"),
        "{printed}"
    );
    // Printed, it reads back the same.
    let mut again = Config::default();
    run_as(Role::Manager, &printed, &mut again).unwrap();
    assert_eq!(again.server, config.server);
    assert_eq!(again.queues, config.queues);
    for (bad, says) in [
        ("set sched preempt_order = SX", "'X' is not a method"),
        ("set server preempt_prio = vip", "not a preemption level"),
        ("set server preempt_queue_prio = high", "not a priority"),
        (
            "set queue expressq resources_default.preempt_targets = \"ncpus=4\"",
            "queue=NAME",
        ),
    ] {
        let err = run_as(Role::Manager, bad, &mut config).unwrap_err();
        assert!(err.message.contains(says), "{bad}: {err}");
    }
}
