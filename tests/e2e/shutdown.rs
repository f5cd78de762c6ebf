//! Shutdown windows against a real daemon (EPCC, DJM): with the machine
//! going down in an hour, a 30-minute job runs and a 2-hour one waits with
//! the reason `Shutdown`, expected when the window ends.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

use crate::harness::{Daemon, stderr};

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("bad JSON ({e}):\n{out}"))
}

/// Whole seconds from now, as the daemon will plan them.
fn from_now(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(Utc::now().timestamp() + secs, 0).expect("a time")
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[test]
fn a_long_job_waits_for_the_window_and_a_short_one_runs_before_it() {
    let d = Daemon::start();
    let (start, end) = (from_now(3600), from_now(7200));
    d.ok(
        "qmgr",
        &[
            "-c",
            &format!(
                "create shutdown maint start = {}, end = {}",
                rfc3339(start),
                rfc3339(end)
            ),
        ],
    );
    let listed = d.ok("qmgr", &["-c", "list shutdown maint"]);
    assert!(
        listed.starts_with("Shutdown maint\n") && listed.contains("    duration = 01:00:00\n"),
        "{listed}"
    );

    // The long job first: the pass that starts the short one has seen it.
    d.script("long.sh", "echo ran anyway\n");
    let long = d.qsub(&["-l", "walltime=2:00:00", "long.sh"]);
    let started = d.fifo("started-short");
    d.script(
        "short.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > started-short\nexec sleep 86400\n",
    );
    let short = d.qsub(&["-l", "walltime=30:00", "short.sh"]);
    d.read_fifo(&started);
    assert_eq!(d.job_json(&short)["job_state"], "R");

    let job = d.job_json(&long);
    assert_eq!(job["job_state"], "Q", "{job:#}");
    assert_eq!(job["reason"], "Shutdown", "{job:#}");
    let comment = job["comment"].as_str().unwrap_or_default();
    assert!(
        comment.starts_with("Not Running: would cross shutdown \"maint\" ("),
        "{comment}"
    );

    let spq = json(&d.ok("spq", &["--json"]));
    let entry = spq["queued"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["job_id"] == long.as_str()))
        .unwrap_or_else(|| panic!("{long} is not queued in spq: {spq:#}"));
    assert_eq!(entry["reason"], "Shutdown", "{entry:#}");

    let when = json(&d.ok("spwhen", &["--json", &long]));
    assert_eq!(when["reason"], "Shutdown", "{when:#}");
    assert_eq!(
        when["expected_start"].as_i64(),
        Some(end.timestamp()),
        "the window's end: {when:#}"
    );
    let text = d.ok("spwhen", &[&long]);
    assert!(
        text.contains("why not now: would cross shutdown \"maint\""),
        "{text}"
    );
}

#[test]
fn windows_take_the_calendars_time_zone_survive_a_restart_and_print_back() {
    let mut d = Daemon::start();
    // The daemon reads times without an offset in the calendar's time
    // zone (India has no summer time: always UTC+05:30).
    d.ok("qmgr", &["-c", "set calendar time_zone = Asia/Kolkata"]);
    let offset = chrono::FixedOffset::east_opt(5 * 3600 + 1800).expect("an offset");
    let now = Utc::now().timestamp();
    let start = DateTime::from_timestamp(now - now % 60 + 24 * 3600, 0).expect("a time");
    let local = start.with_timezone(&offset).format("%Y-%m-%d %H:%M");
    let end = start + chrono::Duration::hours(12);
    d.ok(
        "qmgr",
        &[
            "-c",
            &format!(
                "create shutdown later start = \"{local}\", end = {}, node_sets = local, \
                 comment = \"new switch\"",
                rfc3339(end)
            ),
        ],
    );
    let printed = d.ok("qmgr", &["-c", "print server"]);
    let line = printed
        .lines()
        .find(|l| l.starts_with("create shutdown later "))
        .unwrap_or_else(|| panic!("no shutdown in print server:\n{printed}"));
    let expected_start = start
        .with_timezone(&offset)
        .to_rfc3339_opts(SecondsFormat::Secs, true);
    assert!(
        line.contains(&format!("start = {expected_start},")),
        "{line}"
    );
    assert!(
        line.ends_with("node_sets = local, comment = \"new switch\""),
        "{line}"
    );

    // Errors name the window and change nothing.
    let out = d.run(
        "qmgr",
        &[
            "-c",
            &format!(
                "create shutdown bad start = {}, end = {}, node_sets = mars",
                rfc3339(start),
                rfc3339(end)
            ),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let msg = stderr(&out);
    assert!(
        msg.contains("node set \"mars\" does not exist") && msg.contains("nothing was changed"),
        "{msg}"
    );
    let out = d.run("qmgr", &["-c", "set shutdown later end = yesterday"]);
    assert!(
        stderr(&out).contains("YYYY-MM-DD HH:MM"),
        "{}",
        stderr(&out)
    );
    assert_eq!(d.ok("qmgr", &["-c", "print server"]), printed);

    // Kept with the configuration, and a fresh server reads the backup back.
    d.stop();
    d.spawn();
    assert_eq!(d.ok("qmgr", &["-c", "print server"]), printed);
    // (From the same configuration, the embedded default, which makes batch.)
    let fresh = Daemon::start();
    let file = fresh.work.join("backup.qmgr");
    std::fs::write(&file, &printed).expect("write the backup");
    fresh.ok("qmgr", &[file.to_str().expect("a UTF-8 path")]);
    assert_eq!(fresh.ok("qmgr", &["-c", "print server"]), printed);

    d.ok("qmgr", &["-c", "delete shutdown later"]);
    assert!(!d.ok("qmgr", &["-c", "print server"]).contains("shutdown"));
}
