//! qmgr's shutdown windows: the round trip through print server, and each
//! error naming what is wrong and what to write.

use super::super::{Action, Outcome, QmgrError, parse_script, print_server, run};
use super::*;
use crate::access::Role;
use crate::node::{NodeDef, NodeSet, Topology};
use crate::state::tests::caller;
use chrono::DateTime;
use proptest::prelude::*;

/// A zone an hour ahead of UTC all year (tz names the sign the other way).
const PLUS1: &str = "Etc/GMT-1";

/// Two flat node sets, `batch` and `interactive`.
fn two_sets() -> State {
    let set = |name: &str| NodeSet {
        name: name.into(),
        topology: Topology::Flat,
        nodes: vec![NodeDef {
            name: format!("{name}0"),
            host: "h".into(),
        }],
        attrs: Default::default(),
    };
    State::new(
        "srv",
        Config::default(),
        vec![set("batch"), set("interactive")],
    )
    .unwrap()
}

fn run_as(role: Role, script: &str, config: &mut Config) -> Result<Outcome, QmgrError> {
    let cmds = parse_script(script)?;
    if config.calendar.time_zone == "UTC" {
        config.calendar.time_zone = PLUS1.into();
    }
    run(&cmds, config, &two_sets(), &caller(7, role))
}

fn at(text: &str) -> crate::time::Time {
    DateTime::parse_from_rfc3339(text).unwrap().to_utc()
}

#[test]
fn create_list_set_print_and_delete() {
    let mut config = Config::default();
    let out = run_as(
        Role::Manager,
        "create shutdown maint start = \"2026-12-01 08:00\", end = \"2026-12-01 20:00\", \
         node_sets = \"batch,interactive\"\n\
         set shutdown maint node_sets -= interactive, comment = \"new switch\"\n\
         create shutdown xmas start = 2026-12-24T18:00:00+01:00, end = 2026-12-27T08:00:00Z",
        &mut config,
    )
    .unwrap();
    assert_eq!(out.applied, 3);
    let maint = &config.shutdowns["maint"];
    assert_eq!(maint.start, at("2026-12-01T07:00:00Z"), "08:00 at UTC+1");
    assert_eq!(maint.end, at("2026-12-01T19:00:00Z"));
    assert_eq!(maint.node_sets, ["batch"]);
    assert_eq!(maint.comment.as_deref(), Some("new switch"));
    assert!(config.shutdowns["xmas"].node_sets.is_empty(), "every set");

    let listed = run_as(Role::User, "list shutdown maint", &mut config).unwrap();
    assert_eq!(
        listed.output,
        "Shutdown maint\n    start = 2026-12-01 08:00\n    end = 2026-12-01 20:00\n    \
         duration = 12:00:00\n    node_sets = batch\n    comment = new switch\n\n"
    );
    let all = run_as(Role::User, "l shutdown", &mut config)
        .unwrap()
        .output;
    assert!(
        all.contains("Shutdown xmas\n") && all.contains("(every node set)"),
        "{all}"
    );

    let printed = print_server(&config);
    assert!(
        printed.contains(
            "create shutdown maint start = 2026-12-01T08:00:00+01:00, end = \
             2026-12-01T20:00:00+01:00, node_sets = batch, comment = \"new switch\"\n"
        ),
        "{printed}"
    );
    // Read back: the same instants.
    let mut rebuilt = Config::default();
    let cmds = parse_script(&printed).unwrap();
    run(&cmds, &mut rebuilt, &two_sets(), &caller(0, Role::Manager)).unwrap();
    assert_eq!(rebuilt, config);

    run_as(
        Role::Manager,
        "unset shutdown maint comment, node_sets",
        &mut config,
    )
    .unwrap();
    assert_eq!(config.shutdowns["maint"].comment, None);
    assert!(config.shutdowns["maint"].node_sets.is_empty());
    run_as(Role::Manager, "delete shutdown maint, xmas", &mut config).unwrap();
    assert!(config.shutdowns.is_empty());
    assert!(!print_server(&config).contains("shutdown"));
}

/// The message of the error `script` gives, applied to a configuration
/// holding window `w` (10:00 to 12:00 on 2026-12-01, UTC+1).
fn error(script: &str) -> String {
    let mut config = Config::default();
    run_as(
        Role::Manager,
        "create shutdown w start = \"2026-12-01 10:00\", end = \"2026-12-01 12:00\"",
        &mut config,
    )
    .unwrap();
    run_as(Role::Manager, script, &mut config)
        .unwrap_err()
        .message
}

#[test]
fn errors_name_the_window_and_say_what_to_do() {
    let e = error("set shutdown w end = \"2026-12-01 09:00\"");
    assert!(
        e.contains("shutdown \"w\": end") && e.contains("give an end later"),
        "{e}"
    );
    let e = error("create shutdown v start = 2026-12-01T10:00:00Z, end = 2026-12-01T10:00:00Z");
    assert!(e.contains("not after start"), "{e}");
    let e = error(
        "create shutdown v start = \"2026-12-01 10:00\", end = \"2026-12-01 11:00\", node_sets = mars",
    );
    assert!(
        e.contains(
            "node set \"mars\" does not exist; node sets: batch, interactive (spfree lists them)"
        ),
        "{e}"
    );
    let e = error("set shutdown w start = \"next tuesday\"");
    assert!(
        e.starts_with("start: \"next tuesday\" is not a time")
            && e.contains("\"YYYY-MM-DD HH:MM\" in the calendar's time zone")
            && e.ends_with("(the calendar's time zone is Etc/GMT-1)")
            && e.contains("RFC 3339"),
        "{e}"
    );
    let e = error("create shutdown v start = \"2026-12-01 10:00\"");
    assert!(
        e.contains("needs a start and an end: create shutdown v start ="),
        "{e}"
    );
    let e = error("create shutdown w start = \"2026-12-02 10:00\", end = \"2026-12-02 11:00\"");
    assert!(
        e.contains("\"w\" already exists; set shutdown w changes it"),
        "{e}"
    );
    let e = error("delete shutdown nosuch");
    assert!(
        e.contains("shutdown \"nosuch\" does not exist; see qmgr -c \"list shutdown\""),
        "{e}"
    );
    let e = error("unset shutdown w end");
    assert!(
        e.contains("shutdown \"w\" must keep its end; set a new one, or delete shutdown w"),
        "{e}"
    );
    let e = error("set shutdown w nodes = 4");
    assert!(
        e.contains("unknown attribute \"nodes\" for a shutdown; known: start, end"),
        "{e}"
    );
    let e = error("set shutdown w start += \"2026-12-01 10:00\"");
    assert!(e.contains("takes a single value"), "{e}");
    let e = error("create shutdown 9am start = \"2026-12-01 10:00\", end = \"2026-12-01 11:00\"");
    assert!(e.contains("bad shutdown name \"9am\""), "{e}");
    let e = error("set shutdown w node_sets = batch\nset shutdown w node_sets -= batch");
    assert!(
        e.contains("take down every set; to mean that, unset shutdown w node_sets"),
        "{e}"
    );
}

#[test]
fn the_grammar_and_the_rights() {
    let action = |line: &str| parse_script(line).unwrap().remove(0).action;
    assert_eq!(
        action("l shutdown"),
        Action::Shutdown(ShutdownAction::List(vec![]))
    );
    assert_eq!(
        action("d shutdown a,b"),
        Action::Shutdown(ShutdownAction::Delete(vec!["a".into(), "b".into()]))
    );
    assert!(!action("list shutdown a").changes());
    assert!(action("unset shutdown a comment").changes());
    for bad in ["create shutdown", "set shutdown w", "print shutdown w"] {
        assert!(parse_script(bad).is_err(), "{bad}");
    }

    let mut config = Config::default();
    let create = "create shutdown w start = \"2026-12-01 10:00\", end = \"2026-12-01 12:00\"";
    let e = run_as(Role::Operator, create, &mut config).unwrap_err();
    assert!(e.message.contains("manager rights"), "{e}");
    run_as(Role::Manager, create, &mut config).unwrap();
    run_as(
        Role::Operator,
        "set shutdown w comment = 'the \"big\" one'",
        &mut config,
    )
    .unwrap();
    assert_eq!(
        config.shutdowns["w"].comment.as_deref(),
        Some("the \"big\" one")
    );
    let e = run_as(Role::User, "set shutdown w comment = x", &mut config).unwrap_err();
    assert!(e.message.contains("operator rights"), "{e}");
    let e = run_as(Role::Operator, "delete shutdown w", &mut config).unwrap_err();
    assert!(e.message.contains("manager rights"), "{e}");
    let help = run_as(Role::User, "help shutdown", &mut config)
        .unwrap()
        .output;
    assert!(
        help.starts_with("Shutdown attributes: start, end, node_sets, comment."),
        "{help}"
    );
}

fn arb_window() -> impl Strategy<Value = Shutdown> {
    (
        "[a-z][a-z0-9_-]{0,7}",
        0i64..2_000_000_000,
        1i64..1_000_000,
        prop::sample::subsequence(vec!["batch", "interactive"], 0..=2),
        prop::option::of("[a-z \"#,]{1,12}"),
    )
        .prop_map(|(name, start, len, sets, comment)| {
            let t = |s| DateTime::from_timestamp(s, 0).unwrap();
            let mut w = Shutdown::new(&name, t(start), t(start + len));
            w.node_sets = sets.into_iter().map(String::from).collect();
            w.comment = comment.filter(|c| !c.is_empty());
            w
        })
}

proptest! {
    /// `print server` backs windows up exactly, whatever the zone it
    /// prints in and the one it is read back in.
    #[test]
    fn print_server_recreates_the_windows(
        windows in prop::collection::vec(arb_window(), 0..4),
        print_at in -12i32..14,
        read_at in -12i32..14,
    ) {
        let mut config = Config::default();
        for w in windows {
            config.shutdowns.insert(w.name.clone(), w);
        }
        let zone = |h: i32| if h == 0 { "UTC".to_string() } else { format!("Etc/GMT{:+}", -h) };
        config.calendar.time_zone = zone(print_at);
        let script = print_server(&config);
        let cmds = parse_script(&script).map_err(|e| TestCaseError::fail(format!("{e}\n{script}")))?;
        let mut rebuilt = Config::default();
        rebuilt.calendar.time_zone = zone(read_at);
        run(&cmds, &mut rebuilt, &two_sets(), &caller(0, Role::Manager))
            .map_err(|e| TestCaseError::fail(format!("{e}\n{script}")))?;
        prop_assert_eq!(rebuilt.shutdowns, config.shutdowns);
    }
}

#[test]
fn local_times_are_read_with_the_summer_time_of_their_date() {
    let mut config = Config::default();
    config.calendar.time_zone = "Europe/London".into();
    // Written in winter, for a summer morning: 08:00 BST is 07:00 UTC.
    run_as(
        Role::Manager,
        "create shutdown july start = \"2027-07-01 08:00\", end = \"2027-07-01 20:00\"\n\
         create shutdown jan start = \"2027-01-04 08:00\", end = \"2027-01-04 20:00\"",
        &mut config,
    )
    .unwrap();
    assert_eq!(config.shutdowns["july"].start, at("2027-07-01T07:00:00Z"));
    assert_eq!(config.shutdowns["jan"].start, at("2027-01-04T08:00:00Z"));
    let printed = print_server(&config);
    assert!(
        printed.contains("start = 2027-07-01T08:00:00+01:00")
            && printed.contains("start = 2027-01-04T08:00:00Z"),
        "{printed}"
    );
    // 01:30 on the last Sunday of March does not exist in London.
    let e = run_as(
        Role::Manager,
        "create shutdown gap start = \"2027-03-28 01:30\", end = \"2027-03-28 04:00\"",
        &mut config,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("does not exist in the calendar's time zone: the clocks go forward")
            && e.contains("Europe/London"),
        "{e}"
    );
}
