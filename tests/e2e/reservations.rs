//! Advance and standing reservations through the real commands (pbs_rsub,
//! pbs_rstat, pbs_ralter, pbs_rdel) on the embedded 4x4 mesh: one
//! confirmed and one refused; its queue's job runs only inside it, on its
//! nodes, checked from inside the job; an outsider's job keeps off its
//! nodes; at its end it is gone with its queue's jobs. A weekly standing
//! one keeps its local hour across the change to summer time, and a restart
//! keeps it.

use std::process::Output;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::harness::{Daemon, stderr};

/// PBS's `-R`/`-E` form, in UTC: `CCYYMMDDhhmm.SS`.
fn pbs_time(t: DateTime<Utc>) -> String {
    t.format("%Y%m%d%H%M.%S").to_string()
}

fn rsub(d: &Daemon, zone: &str, args: &[&str]) -> Output {
    d.cmd("pbs_rsub")
        .env("PBS_TZID", zone)
        .args(args)
        .output()
        .expect("run pbs_rsub")
}

fn rstat_json(d: &Daemon) -> Value {
    let out = d.ok("pbs_rstat", &["--json"]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("bad JSON ({e}):\n{out}"))
}

#[test]
fn a_reservation_runs_its_jobs_inside_it_keeps_others_off_and_ends_with_them() {
    let d = Daemon::start();
    let now = Utc::now();
    let start = DateTime::from_timestamp(now.timestamp() + 8, 0).expect("a time");
    let end = start + chrono::Duration::seconds(16);
    let made = rsub(
        &d,
        "UTC",
        &[
            "-R",
            &pbs_time(start),
            "-E",
            &pbs_time(end),
            "-lP",
            "4",
            "-N",
            "course",
        ],
    );
    assert!(made.status.success(), "{}\n{}", stderr(&made), d.log());
    let line = String::from_utf8_lossy(&made.stdout).trim().to_string();
    let id = line
        .strip_suffix(" CONFIRMED")
        .unwrap_or_else(|| panic!("pbs_rsub said {line:?}"))
        .to_string();
    assert!(id.starts_with("R1."), "{id}");

    // The whole machine over the same time: refused, with the reason.
    let refused = rsub(
        &d,
        "UTC",
        &["-R", &pbs_time(start), "-E", &pbs_time(end), "-lP", "16"],
    );
    assert!(!refused.status.success());
    let why = stderr(&refused);
    assert!(
        why.starts_with("pbs_rsub: reservation request denied: 16 nodes are not free together"),
        "{why}"
    );

    let doc = rstat_json(&d);
    let resv = &doc["Reservations"][&id];
    assert_eq!(resv["state"], "RESV_CONFIRMED", "{doc:#}");
    assert_eq!(resv["queue"], "R1");
    let held: Vec<String> = resv["resv_nodes"]
        .as_array()
        .expect("resv_nodes")
        .iter()
        .map(|n| n.as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(held.len(), 4, "{resv:#}");
    let brief = d.ok("pbs_rstat", &[]);
    assert!(brief.contains(" R1 ") && brief.contains(" CO "), "{brief}");

    // Its queue's job waits for it, then runs on its nodes.
    let inside = d.fifo("inside");
    d.script(
        "inside.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\n{ date +%s; sort -u \"$PBS_NODEFILE\"; } > inside\n",
    );
    let job = d.qsub(&["-q", "R1", "-l", "nodes=2,walltime=5", "inside.sh"]);
    let waiting = d.job_json(&job);
    assert_eq!(waiting["job_state"], "Q", "{waiting:#}");
    assert_eq!(waiting["reason"], "ReservationNotRunning", "{waiting:#}");
    let comment = waiting["comment"].as_str().unwrap_or_default();
    assert!(comment.contains("reservation R1 begins"), "{comment}");
    // Too long for it: waits, and is deleted when it ends.
    let too_long = d.qsub(&["-q", "R1", "-l", "nodes=1,walltime=1:00:00", "inside.sh"]);

    // Twelve nodes for an hour from now: only the others than its four.
    d.script("outside.sh", "#!/bin/sh\nexec sleep 86400\n");
    let outsider = d.qsub(&["-l", "nodes=12,walltime=1:00:00", "outside.sh"]);

    // Somebody else may not use it.
    let stranger = d.run_as(crate::harness::NOBODY, "qsub", &["-q", "R1", "/bin/true"]);
    assert!(!stranger.status.success());
    assert!(
        stderr(&stranger).contains("reservation R1 is for"),
        "{}",
        stderr(&stranger)
    );

    let said = d.read_fifo(&inside);
    let mut lines = said.lines();
    let began: i64 = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .expect("a time");
    assert!(began >= start.timestamp(), "ran at {began}, before {start}");
    let ran_on: Vec<&str> = lines.collect();
    assert_eq!(ran_on.len(), 2, "{said}");
    assert!(
        ran_on.iter().all(|n| held.iter().any(|h| h == n)),
        "ran on {ran_on:?}, the reservation holds {held:?}"
    );
    let other = d.exec_nodes(&outsider);
    assert_eq!(other.len(), 12, "the outsider started at once: {other:?}");
    assert!(
        other.iter().all(|n| !held.contains(n)),
        "the outsider is on {other:?}, into {held:?}"
    );

    // Its end: the job too long for it is deleted, and it is gone.
    let gone = d.wait_job(&too_long);
    assert_eq!(gone.state_letter, "F");
    assert_eq!(d.wait_job(&job).exit_status, Some(0));
    let doc = rstat_json(&d);
    assert!(
        doc["Reservations"]
            .as_object()
            .is_none_or(|all| all.is_empty()),
        "{doc:#}"
    );

    // ASAP: a queued job's nodes and wall time at the earliest (now, on
    // the four nodes the outsider leaves), and the job moved into it.
    let asap_job = d.qsub(&["-h", "-l", "nodes=4,walltime=5", "inside.sh"]);
    let asap = rsub(&d, "UTC", &["-W", &format!("qmove={asap_job}")]);
    assert!(asap.status.success(), "{}\n{}", stderr(&asap), d.log());
    assert!(String::from_utf8_lossy(&asap.stdout).starts_with("R2."));
    assert_eq!(d.job_json(&asap_job)["queue"], "R2");
    d.ok("qrls", &[&asap_job]);
    let said = d.read_fifo(&inside);
    assert_eq!(said.lines().count(), 5, "a time and four nodes: {said}");
    d.ok("qdel", &[&outsider]);
}

#[test]
fn a_weekly_reservation_keeps_its_local_hour_across_summer_time_and_a_restart() {
    let mut d = Daemon::start();
    d.ok("qmgr", &["-c", "set calendar time_zone = Europe/London"]);
    // Mondays 10:00 in London from 22 March 2027: summer time begins on
    // the 28th, so 10:00 local is 10:00 UTC, then 09:00 UTC.
    let made = rsub(
        &d,
        "Europe/London",
        &[
            "-R",
            "202703221000",
            "-D",
            "2:00:00",
            "-r",
            "FREQ=WEEKLY;BYDAY=MO;COUNT=3",
            "-lP",
            "2",
        ],
    );
    assert!(made.status.success(), "{}\n{}", stderr(&made), d.log());
    let never = rsub(
        &d,
        "Europe/London",
        &[
            "-R",
            "202703231000",
            "-D",
            "60",
            "-r",
            "FREQ=DAILY",
            "-lP",
            "1",
        ],
    );
    assert!(!never.status.success());
    assert!(stderr(&never).contains("add COUNT=N"), "{}", stderr(&never));

    let check = |d: &Daemon| {
        let doc = rstat_json(d);
        let resv = doc["Reservations"]
            .as_object()
            .and_then(|all| all.values().next())
            .unwrap_or_else(|| panic!("no reservation: {doc:#}"))
            .clone();
        let starts: Vec<i64> = resv["occurrences"]
            .as_array()
            .expect("occurrences")
            .iter()
            .map(|o| o["start"].as_i64().expect("a start"))
            .collect();
        let utc = |s: &str| DateTime::parse_from_rfc3339(s).expect("a time").timestamp();
        assert_eq!(
            starts,
            [
                utc("2027-03-22T10:00:00Z"),
                utc("2027-03-29T09:00:00Z"),
                utc("2027-04-05T09:00:00Z"),
            ],
            "{resv:#}"
        );
        let full = d.ok("pbs_rstat", &["-f"]);
        assert!(
            full.contains("reserve_rrule = FREQ=WEEKLY;BYDAY=MO;COUNT=3"),
            "{full}"
        );
        assert!(full.contains("reserve_count = 3"), "{full}");
        assert_eq!(
            full.matches(" 10:00:00 2027 .. ").count(),
            3,
            "10:00 local each week:\n{full}"
        );
    };
    check(&d);

    // Its queue is the reservation's: not in print server, not deleted
    // by qmgr.
    let printed = d.ok("qmgr", &["-c", "print server"]);
    assert!(!printed.contains("create queue R1"), "{printed}");
    let out = d.run("qmgr", &["-c", "delete queue R1"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("pbs_rdel R1"), "{}", stderr(&out));

    d.stop();
    d.spawn();
    check(&d);
    // pbs_ralter moves it a week on; pbs_rdel removes it and its queue.
    let altered = d
        .cmd("pbs_ralter")
        .env("PBS_TZID", "Europe/London")
        .args(["-R", "202703291000", "R1"])
        .output()
        .expect("run pbs_ralter");
    assert!(altered.status.success(), "{}", stderr(&altered));
    let doc = rstat_json(&d);
    let first = doc["Reservations"]
        .as_object()
        .and_then(|all| all.values().next())
        .map(|r| r["occurrences"][0]["start"].clone());
    assert_eq!(
        first.and_then(|s| s.as_i64()),
        Some(
            DateTime::parse_from_rfc3339("2027-03-29T09:00:00Z")
                .expect("a time")
                .timestamp()
        )
    );
    d.ok("pbs_rdel", &["R1"]);
    let queues = d.ok("qstat", &["-Q"]);
    assert!(!queues.contains("R1 "), "{queues}");
}
