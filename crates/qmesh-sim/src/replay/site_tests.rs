//! Replays on a site's configuration: jobs go to their trace's queues,
//! fall back on the default queue, are refused with the reason, wait for
//! their period, and stay in their partition.

use super::*;
use crate::machine::Machine;
use crate::swf;

/// Monday 5 January 2026, 00:00 UTC: second 0 of the traces below.
const MONDAY: i64 = 1_767_571_200;

/// Four thin nodes for small jobs, four fat ones for the night queue, a
/// standby queue on either.
const SITE: &str = r#"
[server]
default_queue = "standby"

[calendar]
time_zone = "UTC"
[calendar.periods]
NIGHT = ["Mon-Sun 20:00-08:00"]

[[node_set]]
name = "thin"
count = 4
host = "h1"

[[node_set]]
name = "fat"
count = 4
host = "h2"

[[queue]]
name = "small"
priority = 10
max_nodes = 2
max_walltime = "1:00:00"
node_sets = ["thin"]

[[queue]]
name = "night"
priority = 5
periods = ["NIGHT"]
node_sets = ["fat"]

[[queue]]
name = "standby"
max_walltime = "2:00:00"
"#;

/// An SWF line: number, submit, run, procs, requested time, queue,
/// partition.
fn line(n: u64, submit: i64, run: i64, procs: i64, req: i64, queue: i64, part: i64) -> String {
    format!("{n} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 {queue} {part} -1 -1\n")
}

fn header() -> String {
    format!(
        "; UnixStartTime: {MONDAY}\n; MaxProcs: 8\n; Queue: 1 small\n; Queue: 2 night\n\
         ; Partition: 1 interactive\n; Partition: 2 batch\n"
    )
}

fn site_options() -> Options {
    Options {
        policy: Policy::Config,
        machine: Machine::site(SITE, "site.toml").unwrap(),
        ..Options::default()
    }
}

/// (job, queue, start, end) of each job replayed.
fn schedule(r: &Replay) -> Vec<(u64, &str, i64, i64)> {
    r.records
        .iter()
        .map(|r| (r.number, &*r.queue, r.start, r.end))
        .collect()
}

#[test]
fn jobs_go_to_their_queues_else_the_default_and_wait_for_their_period() {
    let mut t = header();
    t += &line(1, 0, 600, 2, 600, 1, 2); // small
    t += &line(2, 0, 600, 4, 600, 1, 2); // too big for small: standby
    t += &line(3, 100, 900, 1, 900, 9, 2); // queue 9 is not the site's: standby
    t += &line(4, 12 * 3600, 600, 1, 600, 2, 2); // night: at 20:00
    t += &line(5, 22 * 3600, 600, 1, 600, 1, 2); // after the turn
    let trace = swf::read(t.as_bytes(), "t.swf").unwrap();
    let r = replay(&trace, &site_options()).unwrap();
    assert_eq!(
        schedule(&r),
        [
            (1, "small", 0, 600),
            (2, "standby", 0, 600),
            (3, "standby", 100, 1000),
            // Nothing happens between noon and 22:00 but the calendar.
            (4, "night", 20 * 3600, 20 * 3600 + 600),
            (5, "small", 22 * 3600, 22 * 3600 + 600),
        ]
    );
    assert_eq!(r.nodes, 8);
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
}

#[test]
fn a_job_no_queue_takes_is_counted_with_the_reason_unless_capped() {
    let mut t = header();
    // Three hours: small allows one, standby two.
    t += &line(1, 0, 3 * 3600, 1, 3 * 3600, 1, 2);
    let trace = swf::read(t.as_bytes(), "t.swf").unwrap();
    let r = replay(&trace, &site_options()).unwrap();
    assert!(r.records.is_empty());
    assert_eq!(r.skipped.len(), 1);
    assert_eq!(r.skipped[0].kind, "refused by the queues");
    assert!(
        r.skipped[0].why.starts_with("queue \"small\" refuses it:")
            && r.skipped[0].why.contains("1:00:00"),
        "{}",
        r.skipped[0].why
    );

    // Capped: it asks for small's hour and is killed at its end.
    let options = Options {
        cap_walltime: true,
        ..site_options()
    };
    let r = replay(&trace, &options).unwrap();
    assert_eq!(schedule(&r), [(1, "small", 0, 3600)]);
}

#[test]
fn a_partition_is_replayed_alone_and_the_others_counted() {
    let mut t = header();
    t += &line(1, 0, 600, 2, 600, 1, 1);
    t += &line(2, 0, 600, 2, 600, 1, 2);
    let trace = swf::read(t.as_bytes(), "t.swf").unwrap();
    for given in ["batch", "2"] {
        let options = Options {
            partition: Some(given.into()),
            ..site_options()
        };
        let r = replay(&trace, &options).unwrap();
        assert_eq!(schedule(&r), [(2, "small", 0, 600)]);
        assert_eq!(r.skipped[0].number, 1);
        assert_eq!(
            r.skipped[0].why,
            "in partition 1 interactive, not the one replayed"
        );
    }
    let options = Options {
        partition: Some("nightly".into()),
        ..site_options()
    };
    let err = replay(&trace, &options).unwrap_err().to_string();
    assert_eq!(
        err,
        "--partition nightly: the trace has no such partition (it names: 1 interactive, 2 batch)"
    );
}

#[test]
fn qmgr_commands_shape_the_policy_and_bad_ones_are_named() {
    // Two small jobs wait behind a big one; with backfill none and the
    // big one above block_priority, they wait for it (SDSC blocking).
    let mut t = header();
    t += &line(1, 0, 1000, 4, 1000, 2, 2); // night (on at midnight): the fat set
    t += &line(2, 10, 500, 8, 500, 0, 2); // the whole machine: blocks
    t += &line(3, 20, 100, 1, 100, 1, 2); // small, would backfill
    let trace = swf::read(t.as_bytes(), "t.swf").unwrap();
    let start_of = |r: &Replay, n: u64| r.records.iter().find(|r| r.number == n).unwrap().start;

    let easy = replay(&trace, &site_options()).unwrap();
    assert_eq!(start_of(&easy, 3), 20, "EASY backfills it");

    let options = Options {
        qmgr: vec![
            "set server backfill = none".into(),
            "set server block_priority = 0.5".into(),
            "set queue standby priority = 1".into(),
            "set queue small priority = 1".into(),
            "set server by_queue = false".into(),
        ],
        ..site_options()
    };
    let blocked = replay(&trace, &options).unwrap();
    assert_eq!(start_of(&blocked, 2), 1000);
    assert_eq!(start_of(&blocked, 3), 1500, "it waits behind the big job");

    let options = Options {
        qmgr: vec!["set server backfil = none".into()],
        ..site_options()
    };
    let err = replay(&trace, &options).unwrap_err().to_string();
    assert!(
        err.starts_with("--qmgr, line 1:") && err.contains("backfil"),
        "{err}"
    );
}

#[test]
fn the_config_policy_needs_a_configuration() {
    let trace = swf::read(header().as_bytes(), "t.swf").unwrap();
    let options = Options {
        policy: Policy::Config,
        ..Options::default()
    };
    assert_eq!(
        replay(&trace, &options).unwrap_err().to_string(),
        "--policy config needs --config (the server attributes of a configuration file)"
    );
}
