//! spfree: how many nodes are free now, per node set, and until when they
//! stay free (a reservation of the scheduler's plan may claim them later).
//! A job that fits in them and ends before then starts at once.

use std::process::ExitCode;

use chrono::{Local, TimeZone};
use clap::Parser;
use qmesh_proto::PlanReply;

use crate::client;
use crate::output::{self, Column, Output, Tree};
use crate::spview;

/// Show the free nodes of each node set, and until when they stay free.
///
/// UNTIL is when the scheduler's plan gives some of them to a waiting job;
/// "-" means no planned job claims them.
#[derive(Parser, Debug)]
#[command(name = "spfree", version)]
pub struct Args {
    /// Print the node sets as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let reply = match spview::fetch_plan("spfree") {
        Ok(reply) => reply,
        Err(code) => return code,
    };
    spview::print("spfree", &Free { reply, tz: Local }, args.json)
}

/// The free nodes of a plan, ready to print; times in zone `tz`.
pub struct Free<Tz: TimeZone> {
    pub reply: PlanReply,
    pub tz: Tz,
}

const COLUMNS: [Column; 5] = [
    Column::left("NODE SET"),
    Column::right("FREE"),
    Column::right("UP"),
    Column::right("TOTAL"),
    Column::left("UNTIL"),
];

impl<Tz: TimeZone> Output for Free<Tz>
where
    Tz::Offset: std::fmt::Display,
{
    fn text(&self) -> String {
        let now = self.reply.server_time;
        let rows: Vec<Vec<String>> = self
            .reply
            .free
            .iter()
            .map(|f| {
                vec![
                    f.node_set.clone(),
                    f.free.to_string(),
                    f.up.to_string(),
                    f.total.to_string(),
                    if f.until > 0 && f.free > 0 {
                        spview::at(f.until, now, &self.tz)
                    } else {
                        "-".to_string()
                    },
                ]
            })
            .collect();
        if rows.is_empty() {
            return String::new();
        }
        output::table(&COLUMNS, &rows)
    }

    fn json(&self) -> Tree {
        let sets = self
            .reply
            .free
            .iter()
            .map(|f| {
                Tree::Map(vec![
                    ("node_set".into(), Tree::text(&f.node_set)),
                    ("free".into(), Tree::int(i64::from(f.free))),
                    ("up".into(), Tree::int(i64::from(f.up))),
                    ("total".into(), Tree::int(i64::from(f.total))),
                    ("until".into(), Tree::time(f.until)),
                ])
            })
            .collect();
        Tree::Map(vec![
            ("timestamp".into(), Tree::int(self.reply.server_time)),
            ("server".into(), Tree::text(&self.reply.server)),
            ("node_sets".into(), Tree::List(sets)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use qmesh_proto::SetFree;

    const T0: i64 = 1_795_341_600;

    fn reply() -> PlanReply {
        PlanReply {
            server_time: T0,
            free: vec![
                SetFree {
                    node_set: "sp".into(),
                    free: 8,
                    until: T0 + 3600,
                    up: 128,
                    total: 128,
                },
                SetFree {
                    node_set: "small".into(),
                    free: 2,
                    until: 0,
                    up: 3,
                    total: 4,
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn free_nodes_and_how_long() {
        assert_eq!(
            Free {
                reply: reply(),
                tz: Utc
            }
            .text(),
            "\
NODE SET FREE  UP TOTAL UNTIL
-------- ---- --- ----- -----------------
sp          8 128   128 11:00 (in 60 min)
small       2   3     4 -
"
        );
    }

    #[test]
    fn json_has_null_for_no_limit() {
        let doc: serde_json::Value = serde_json::from_str(
            &serde_json::to_string(
                &Free {
                    reply: reply(),
                    tz: Utc,
                }
                .json(),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(doc["node_sets"][0]["until"], T0 + 3600);
        assert!(doc["node_sets"][1]["until"].is_null());
        assert_eq!(doc["node_sets"][1]["up"], 3);
    }
}
