//! spq: the jobs on the machine and in the queue, as the ANL scheduler's
//! users watched them: running jobs first, then the queue in the order the
//! last scheduling pass took it, each with its status (Running, Startable,
//! Blocked, Cannot Backfill, Waiting, Held, Paused) and when it starts.

use std::process::ExitCode;

use chrono::{Local, TimeZone};
use clap::Parser;
use qmesh_proto::{PlanEntry, PlanReply};

use crate::client;
use crate::output::{self, Column, Output, Tree};
use crate::spview;

/// Show running jobs, then queued jobs in the order the scheduler takes
/// them, with their status and expected start.
///
/// STATUS: Running; Startable (starts in this pass); Blocked (nodes are
/// held for it); Cannot Backfill (would delay a blocked job); Waiting;
/// Held; Paused (held by its owner: sppause). START: for a running job how
/// long it has run and when its wall time ends; for a queued job when the
/// plan expects it to start, or "-" when no start can be foreseen.
#[derive(Parser, Debug)]
#[command(name = "spq", version)]
pub struct Args {
    /// Only the jobs of USER.
    #[arg(short = 'u', value_name = "USER")]
    pub user: Option<String>,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
    /// Draw the occupancy of node set SET instead: one cell per node, a
    /// letter per job, `.` free, `x` down, `o` offline, `b` busy.
    #[arg(long, value_name = "SET")]
    pub map: Option<String>,
    /// Keep the view up to date in place, every SECS seconds (default 2),
    /// with a map of each node set (or of --map SET) below the queue,
    /// until Ctrl-C.
    #[arg(long, value_name = "SECS", num_args = 0..=1, default_missing_value = "2", conflicts_with = "json")]
    pub watch: Option<f64>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    if let Some(secs) = args.watch {
        if !(secs.is_finite() && secs >= 0.1) {
            return client::fail(
                "spq",
                &client::CliError::msg(format!(
                    "--watch {secs}: give the seconds between frames, at least 0.1"
                )),
            );
        }
        return crate::spwatch::run(&args, std::time::Duration::from_secs_f64(secs));
    }
    if let Some(set) = &args.map {
        return crate::spmap::run(set);
    }
    let mut reply = match spview::fetch_plan("spq") {
        Ok(reply) => reply,
        Err(code) => return code,
    };
    if let Some(user) = &args.user {
        reply.running.retain(|e| &e.owner == user);
        reply.queued.retain(|e| &e.owner == user);
    }
    let listing = Listing { reply, tz: Local };
    spview::print("spq", &listing, args.json)
}

/// The plan, ready to print; times in zone `tz`.
pub struct Listing<Tz: TimeZone> {
    pub reply: PlanReply,
    pub tz: Tz,
}

const COLUMNS: [Column; 6] = [
    Column::left("JOBID"),
    Column::left("USER").at_most(12),
    Column::right("NODES"),
    Column::right("MINUTES"),
    Column::left("STATUS"),
    Column::left("START"),
];

impl<Tz: TimeZone> Listing<Tz>
where
    Tz::Offset: std::fmt::Display,
{
    fn row(&self, e: &PlanEntry, running: bool) -> Vec<String> {
        let now = self.reply.server_time;
        let start = if running {
            let ran = spview::span(now - e.start);
            if e.expected_end > 0 {
                format!(
                    "ran {ran}, ends {}",
                    spview::clock(e.expected_end, now, &self.tz)
                )
            } else {
                format!("ran {ran}")
            }
        } else if e.expected_start > 0 {
            spview::at(e.expected_start, now, &self.tz)
        } else {
            "-".to_string()
        };
        vec![
            e.job_id.clone(),
            e.owner.clone(),
            e.nodes.to_string(),
            spview::minutes_up(e.walltime).to_string(),
            if e.array.is_empty() {
                e.status_text.clone()
            } else {
                format!("{} (array: {})", e.status_text, e.array)
            },
            start,
        ]
    }
}

impl<Tz: TimeZone> Output for Listing<Tz>
where
    Tz::Offset: std::fmt::Display,
{
    fn text(&self) -> String {
        let r = &self.reply;
        if r.running.is_empty() && r.queued.is_empty() {
            return String::new();
        }
        let rows: Vec<Vec<String>> = r
            .running
            .iter()
            .map(|e| self.row(e, true))
            .chain(r.queued.iter().map(|e| self.row(e, false)))
            .collect();
        output::table(&COLUMNS, &rows)
    }

    fn json(&self) -> Tree {
        let r = &self.reply;
        Tree::Map(vec![
            ("timestamp".into(), Tree::int(r.server_time)),
            ("server".into(), Tree::text(&r.server)),
            ("plan_time".into(), Tree::time(r.plan_time)),
            ("job_order".into(), Tree::text(&r.job_order)),
            ("backfill".into(), Tree::text(&r.backfill)),
            (
                "running".into(),
                Tree::List(r.running.iter().map(spview::entry_json).collect()),
            ),
            (
                "queued".into(),
                Tree::List(r.queued.iter().map(spview::entry_json).collect()),
            ),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    /// 2026-11-22 10:00:00 UTC.
    const T0: i64 = 1_795_341_600;

    fn entry(id: &str, user: &str, nodes: u32, mins: u64, status: &str) -> PlanEntry {
        PlanEntry {
            job_id: id.into(),
            owner: user.into(),
            nodes,
            walltime: mins * 60,
            status_text: status.into(),
            ..Default::default()
        }
    }

    /// Step 4 of the ANL paper's example, ten minutes after the starts.
    fn step4() -> PlanReply {
        let running = |id, user, nodes, mins| PlanEntry {
            start: T0,
            expected_end: T0 + 60 * mins as i64,
            ..entry(id, user, nodes, mins, "Running")
        };
        PlanReply {
            server: "srv".into(),
            server_time: T0 + 600,
            plan_time: T0,
            job_order: "fifo".into(),
            backfill: "easy".into(),
            running: vec![
                running("1.srv", "a", 32, 120),
                running("2.srv", "b", 64, 60),
                running("3.srv", "c", 24, 180),
                running("7.srv", "g", 4, 30),
            ],
            queued: vec![
                PlanEntry {
                    expected_start: T0 + 3600,
                    reason: "Resources".into(),
                    ..entry("4.srv", "d", 32, 120, "Blocked")
                },
                entry("5.srv", "e", 16, 120, "Cannot Backfill"),
                entry("6.srv", "f", 10, 480, "Cannot Backfill"),
                entry("8.srv", "h", 32, 120, "Waiting"),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn the_table_reads_like_the_papers() {
        let listing = Listing {
            reply: step4(),
            tz: Utc,
        };
        assert_eq!(
            listing.text(),
            "\
JOBID USER NODES MINUTES STATUS          START
----- ---- ----- ------- --------------- ----------------------
1.srv a       32     120 Running         ran 10 min, ends 12:00
2.srv b       64      60 Running         ran 10 min, ends 11:00
3.srv c       24     180 Running         ran 10 min, ends 13:00
7.srv g        4      30 Running         ran 10 min, ends 10:30
4.srv d       32     120 Blocked         11:00 (in 50 min)
5.srv e       16     120 Cannot Backfill -
6.srv f       10     480 Cannot Backfill -
8.srv h       32     120 Waiting         -
"
        );
    }

    #[test]
    fn json_keeps_the_plan_order() {
        let listing = Listing {
            reply: step4(),
            tz: Utc,
        };
        let doc: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&listing.json()).unwrap()).unwrap();
        assert_eq!(doc["backfill"], "easy");
        assert_eq!(doc["plan_time"], T0);
        let queued: Vec<&str> = doc["queued"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["job_id"].as_str().unwrap())
            .collect();
        assert_eq!(queued, ["4.srv", "5.srv", "6.srv", "8.srv"]);
        assert_eq!(doc["queued"][0]["expected_start"], T0 + 3600);
        assert_eq!(doc["running"][1]["expected_end"], T0 + 3600);
    }

    #[test]
    fn an_empty_machine_prints_nothing() {
        let listing = Listing {
            reply: PlanReply::default(),
            tz: Utc,
        };
        assert_eq!(listing.text(), "");
    }
}
