//! What the sp commands (spq, spwhen, spfree, spwhat) share: fetching the
//! plan and printing an answer, a plan entry as JSON, and times and
//! durations as people read them at a terminal ("15:05 (in 60 min)"), in
//! the ANL commands' plain style.
//!
//! Times are computed against the server's clock (`now` from its reply),
//! so "in N minutes" does not depend on the client's clock being right.

use std::process::ExitCode;

use chrono::{Datelike, TimeZone};
use qmesh_proto::{PlanEntry, PlanReply, PlanRequest};

use crate::client::{self, CliError};
use crate::output::{self, Output, Tree};

/// The daemon's last plan; on failure, the command's error exit.
pub fn fetch_plan(cmd: &str) -> Result<PlanReply, ExitCode> {
    client::block_on(async {
        let mut jobs = client::jobs().await?;
        Ok(jobs.plan(PlanRequest {}).await?.into_inner())
    })
    .map_err(|err| client::fail(cmd, &err))
}

/// Prints an answer as text or JSON; a failed write is the command's error.
pub fn print(cmd: &str, out: &dyn Output, json: bool) -> ExitCode {
    match output::emit(out, json) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => client::fail(cmd, &CliError::msg(format!("cannot write the answer: {e}"))),
    }
}

/// Whole minutes of a wall time, rounded up: a job of 61 s needs 2 minutes.
pub fn minutes_up(secs: u64) -> u64 {
    secs.div_ceil(60)
}

/// A duration in minutes, rounded to the nearest ("60 min", "1 min").
pub fn span(secs: i64) -> String {
    let mins = (secs.max(0) + 30) / 60;
    format!("{mins} min")
}

/// A time of day: `15:05` on the same day as `now`, `Mon 15:05` within a
/// week, else `2026-11-22 15:05`; in zone `tz`.
pub fn clock<Tz: TimeZone>(secs: i64, now: i64, tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    let (Some(t), Some(n)) = (
        tz.timestamp_opt(secs, 0).earliest(),
        tz.timestamp_opt(now, 0).earliest(),
    ) else {
        return secs.to_string();
    };
    let days = (t.date_naive() - n.date_naive()).num_days();
    if days == 0 {
        t.format("%H:%M").to_string()
    } else if (-6..=6).contains(&days) {
        t.format("%a %H:%M").to_string()
    } else {
        t.format("%Y-%m-%d %H:%M").to_string()
    }
}

/// When something happens, relative to now: `15:05 (in 60 min)`, or
/// `now` once the time has come.
pub fn at<Tz: TimeZone>(secs: i64, now: i64, tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    if secs <= now {
        "now".to_string()
    } else {
        format!("{} (in {})", clock(secs, now, tz), span(secs - now))
    }
}

/// The full date, for spwhen: `Sun Nov 22 15:05:00 2026`.
pub fn date<Tz: TimeZone>(secs: i64, tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    match tz.timestamp_opt(secs, 0).earliest() {
        Some(t) => format!(
            "{} {:>2} {}",
            t.format("%a %b"),
            t.day(),
            t.format("%H:%M:%S %Y")
        ),
        None => secs.to_string(),
    }
}

/// One job of the plan as JSON; times are Unix seconds or null.
pub fn entry_json(e: &PlanEntry) -> Tree {
    let mut items = vec![
        ("job_id".to_string(), Tree::text(&e.job_id)),
        ("name".into(), Tree::text(&e.name)),
        ("owner".into(), Tree::text(&e.owner)),
        ("account".into(), Tree::text(&e.account)),
        ("queue".into(), Tree::text(&e.queue)),
        ("nodes".into(), Tree::int(i64::from(e.nodes))),
        (
            "walltime".into(),
            Tree::int(i64::try_from(e.walltime).unwrap_or(i64::MAX)),
        ),
        (
            "minutes".into(),
            Tree::int(i64::try_from(minutes_up(e.walltime)).unwrap_or(i64::MAX)),
        ),
        ("status".into(), Tree::text(&e.status_text)),
    ];
    if !e.array.is_empty() {
        items.push(("array".into(), Tree::text(&e.array)));
    }
    if !e.reason.is_empty() {
        items.push(("reason".into(), Tree::text(&e.reason)));
        items.push(("reason_text".into(), Tree::text(&e.reason_text)));
    }
    items.push(("expected_start".into(), Tree::time(e.expected_start)));
    items.push(("start".into(), Tree::time(e.start)));
    items.push(("expected_end".into(), Tree::time(e.expected_end)));
    items.push(("priority".into(), Tree::Float(e.priority)));
    Tree::Map(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    /// 2026-11-22 10:00:00 UTC, a Sunday.
    const T0: i64 = 1_795_341_600;

    #[test]
    fn clock_says_as_little_as_is_needed() {
        assert_eq!(clock(T0 + 3600, T0, &Utc), "11:00");
        assert_eq!(clock(T0 + 86_400, T0, &Utc), "Mon 10:00");
        assert_eq!(clock(T0 + 30 * 86_400, T0, &Utc), "2026-12-22 10:00");
    }

    #[test]
    fn at_counts_minutes_from_the_servers_now() {
        assert_eq!(at(T0 + 3600, T0, &Utc), "11:00 (in 60 min)");
        // A few seconds off still reads as the hour the plan means.
        assert_eq!(at(T0 + 3600, T0 + 5, &Utc), "11:00 (in 60 min)");
        assert_eq!(at(T0, T0 + 1, &Utc), "now");
    }

    #[test]
    fn wall_times_round_up_to_minutes() {
        assert_eq!(minutes_up(7200), 120);
        assert_eq!(minutes_up(61), 2);
        assert_eq!(minutes_up(0), 0);
    }

    #[test]
    fn dates_pad_the_day_as_ctime_does() {
        assert_eq!(date(T0, &Utc), "Sun Nov 22 10:00:00 2026");
        assert_eq!(date(T0 + 10 * 86_400, &Utc), "Wed Dec  2 10:00:00 2026");
    }

    #[test]
    fn entries_in_json_say_null_for_unknown_times() {
        let e = PlanEntry {
            job_id: "4.srv".into(),
            nodes: 32,
            walltime: 7200,
            status_text: "Blocked".into(),
            reason: "Resources".into(),
            reason_text: "waiting".into(),
            expected_start: T0,
            ..Default::default()
        };
        let doc: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&entry_json(&e)).unwrap()).unwrap();
        assert_eq!(doc["minutes"], 120);
        assert_eq!(doc["status"], "Blocked");
        assert_eq!(doc["expected_start"], T0);
        assert!(doc["start"].is_null());
        assert_eq!(doc["priority"], 0.0);
    }
}
