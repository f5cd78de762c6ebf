//! qmgr's hooks: what an OpenPBS recipe writes, the round trip through
//! print server, and the refusals naming what to write instead.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::super::{Outcome, QmgrError, parse_script, print_server, run};
use super::*;
use crate::access::Role;
use crate::hook::HookEvent;
use crate::node::{NodeDef, NodeSet, Topology};
use crate::state::State;
use crate::state::tests::caller;

fn state() -> State {
    let set = NodeSet {
        name: "batch".into(),
        topology: Topology::Flat,
        nodes: vec![NodeDef {
            name: "n0".into(),
            host: "h".into(),
        }],
        attrs: Default::default(),
    };
    State::new("srv", Config::default(), vec![set]).unwrap()
}

fn run_as(role: Role, script: &str, config: &mut Config) -> Result<Outcome, QmgrError> {
    let cmds = parse_script(script)?;
    run(&cmds, config, &state(), &caller(7, role))
}

const FILTER: &[u8] = b"#!/bin/sh\ncat >/dev/null\nexit 0\n";

/// The line qmgr's client sends for `import hook h1 ... FILE`.
fn import_line(name: &str, content: &[u8]) -> String {
    format!(
        "import hook {name} application/x-executable base64 \"{}\"",
        STANDARD.encode(content)
    )
}

#[test]
fn an_openpbs_recipe_creates_sets_imports_and_lists_a_hook() {
    let mut config = Config::default();
    let script = format!(
        "create hook site_filter\n\
         set hook site_filter event = queuejob\n\
         set hook site_filter event += modifyjob, alarm = 10, order = 5\n\
         {}\n",
        import_line("site_filter", FILTER)
    );
    let out = run_as(Role::Manager, &script, &mut config).unwrap();
    assert_eq!(out.applied, 4);
    let h = &config.hooks["site_filter"];
    assert_eq!(h.events, ["queuejob", "modifyjob"]);
    assert_eq!((h.alarm, h.order, h.enabled), (10, 5, true));
    assert_eq!(h.content, FILTER);
    assert!(h.runs_at(HookEvent::QueueJob) && h.runs_at(HookEvent::ModifyJob));
    assert!(!h.runs_at(HookEvent::RunJob));

    let listed = run_as(Role::Manager, "list hook site_filter", &mut config)
        .unwrap()
        .output;
    for line in [
        "Hook site_filter",
        "    type = site",
        "    enabled = true",
        "    event = queuejob,modifyjob",
        "    alarm = 10",
        "    order = 5",
        "    fail_action = none",
        "    content = 32 bytes (application/x-executable)",
    ] {
        assert!(listed.contains(line), "{line:?} in\n{listed}");
    }
    let exported = run_as(
        Role::Manager,
        "export hook site_filter application/x-executable default",
        &mut config,
    )
    .unwrap()
    .output;
    assert_eq!(exported.as_bytes(), FILTER);
}

#[test]
fn print_server_restores_every_hook_with_its_content() {
    let mut config = Config::default();
    let binary: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    let script = format!(
        "create hook a event = \"queuejob,runjob\", alarm = 3\n\
         {}\n\
         create hook b event = periodic, freq = 60, enabled = false\n\
         {}\n\
         create hook c\n",
        import_line("a", FILTER),
        import_line("b", &binary)
    );
    run_as(Role::Manager, &script, &mut config).unwrap();
    let printed = print_server(&config);
    assert!(
        printed.contains("import hook a application/x-executable base64 -\n"),
        "{printed}"
    );
    let mut restored = Config::default();
    run_as(Role::Manager, &printed, &mut restored).unwrap();
    assert_eq!(restored.hooks, config.hooks);
}

#[test]
fn a_pbs_python_hook_is_kept_disabled_with_the_reason() {
    let mut config = Config::default();
    let pbs = b"import pbs\ne = pbs.event()\ne.accept()\n";
    let script = format!(
        "create hook h1\nset hook h1 event = queuejob\n{}\n",
        import_line("h1", pbs).replace("x-executable", "x-python")
    );
    let out = run_as(Role::Manager, &script, &mut config).unwrap();
    assert!(
        out.output.contains("imports PBS's Python module pbs") && out.output.contains("disabled"),
        "{}",
        out.output
    );
    assert!(!config.hooks["h1"].enabled);
    let err = run_as(Role::Manager, "set hook h1 enabled = true", &mut config).unwrap_err();
    assert!(err.message.contains("docs/PBS.md"), "{err}");
    // A restore keeps it as it was.
    let mut restored = Config::default();
    run_as(Role::Manager, &print_server(&config), &mut restored).unwrap();
    assert_eq!(restored.hooks, config.hooks);
}

#[test]
fn refusals_name_what_to_write() {
    let mut config = Config::default();
    run_as(Role::Manager, "create hook h1", &mut config).unwrap();
    let cases = [
        ("create hook h1", "already exists"),
        ("create hook PBS_x", "PBS's own"),
        (
            "set hook h1 event = sometimes",
            "qmesh runs hooks at queuejob",
        ),
        ("set hook h1 alarm = 0", "from 1 to 86400"),
        ("set hook h1 order = 2000", "from 1 to 1000"),
        ("set hook h1 type = pbs", "type = site"),
        ("set hook h2 alarm = 5", "hook \"h2\" does not exist"),
        (
            "set hook h1 colour = red",
            "unknown attribute \"colour\" for a hook",
        ),
        (
            "import hook h1 application/x-python default /tmp/h1.py",
            "read by qmgr's client",
        ),
        (
            "import hook h1 text/plain base64 \"YQ==\"",
            "unknown content type",
        ),
        (
            "import hook h1 application/x-python base64 \"!!\"",
            "not base64",
        ),
        ("import queue q1 a b c", "qmgr imports and exports hooks"),
    ];
    for (script, want) in cases {
        let err = run_as(Role::Manager, script, &mut config).unwrap_err();
        assert!(err.message.contains(want), "{script}: {err}");
    }
    let err = run_as(Role::Operator, "set hook h1 alarm = 5", &mut config).unwrap_err();
    assert!(err.message.contains("manager"), "{err}");
    let err = run_as(
        Role::Operator,
        "export hook h1 application/x-python default",
        &mut config,
    )
    .unwrap_err();
    assert!(err.message.contains("manager"), "{err}");
}

#[test]
fn pbs_events_qmesh_does_not_run_are_kept_with_a_warning() {
    let mut config = Config::default();
    let out = run_as(
        Role::Manager,
        "create hook cg event = \"execjob_begin,queuejob\"\nset hook cg fail_action = offline_vnodes",
        &mut config,
    )
    .unwrap();
    assert!(
        out.output.contains("event execjob_begin is PBS's"),
        "{}",
        out.output
    );
    assert!(
        out.output.contains("fail_action = offline_vnodes is kept"),
        "{}",
        out.output
    );
    let printed = print_server(&config);
    assert!(
        printed.contains("set hook cg fail_action = offline_vnodes"),
        "{printed}"
    );
    let mut restored = Config::default();
    run_as(Role::Manager, &printed, &mut restored).unwrap();
    assert_eq!(restored.hooks, config.hooks);
}

#[test]
fn only_managers_read_a_hooks_content() {
    let mut config = Config::default();
    let script = format!(
        "create hook h1 event = queuejob\n{}\n",
        import_line("h1", FILTER)
    );
    run_as(Role::Manager, &script, &mut config).unwrap();
    let err = run_as(Role::Operator, "print hook h1", &mut config).unwrap_err();
    assert!(err.message.contains("manager"), "{err}");
    let printed = run_as(Role::Operator, "print server", &mut config)
        .unwrap()
        .output;
    assert!(!printed.contains("import hook"), "{printed}");
    assert!(printed.contains("printed for managers only"), "{printed}");
    let listed = run_as(Role::Operator, "list hook h1", &mut config)
        .unwrap()
        .output;
    assert!(listed.contains("event = queuejob"), "{listed}");
    let printed = run_as(Role::Manager, "print server", &mut config)
        .unwrap()
        .output;
    assert!(printed.contains("import hook h1"), "{printed}");
}
