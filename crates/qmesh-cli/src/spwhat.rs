//! spwhat: what kind of job could start right now, as the ANL users asked
//! it before submitting: pairs of nodes × minutes ("8 nodes for 60
//! minutes", "4 nodes without limit"), widest first. A job within one of
//! them starts at the next pass without delaying anyone's reservation.

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::{PlanReply, WhatPair};

use crate::client;
use crate::output::{Output, Tree};
use crate::spview;

/// Show the largest jobs that would start right now, as nodes × minutes.
///
/// A job of at most that many nodes and that many minutes of wall time
/// would start at once, without delaying any job the scheduler has
/// reserved nodes for.
#[derive(Parser, Debug)]
#[command(name = "spwhat", version)]
pub struct Args {
    /// Print the pairs as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let reply = match spview::fetch_plan("spwhat") {
        Ok(reply) => reply,
        Err(code) => return code,
    };
    spview::print("spwhat", &What(reply), args.json)
}

/// Whole minutes a job may ask for within `secs`: rounded down, so it fits.
fn fitting_minutes(secs: u64) -> u64 {
    secs / 60
}

/// One pair in words: "8 nodes for 60 minutes", "1 node without limit".
pub fn describe(pair: &WhatPair) -> String {
    let nodes = if pair.nodes == 1 {
        "1 node".to_string()
    } else {
        format!("{} nodes", pair.nodes)
    };
    match pair.seconds {
        None => format!("{nodes} without limit"),
        Some(secs) => match fitting_minutes(secs) {
            1 => format!("{nodes} for 1 minute"),
            m => format!("{nodes} for {m} minutes"),
        },
    }
}

/// The pairs of one plan.
pub struct What(pub PlanReply);

impl Output for What {
    fn text(&self) -> String {
        let pairs: Vec<&WhatPair> = self
            .0
            .what
            .iter()
            .filter(|p| p.nodes > 0 && p.seconds.is_none_or(|s| fitting_minutes(s) > 0))
            .collect();
        if pairs.is_empty() {
            return "no job could start now\n".to_string();
        }
        pairs.iter().map(|p| format!("{}\n", describe(p))).collect()
    }

    fn json(&self) -> Tree {
        let pairs = self
            .0
            .what
            .iter()
            .map(|p| {
                let minutes = p.seconds.map_or(Tree::Null, |s| {
                    Tree::int(i64::try_from(fitting_minutes(s)).unwrap_or(i64::MAX))
                });
                let seconds = p.seconds.map_or(Tree::Null, |s| {
                    Tree::int(i64::try_from(s).unwrap_or(i64::MAX))
                });
                Tree::Map(vec![
                    ("nodes".into(), Tree::int(i64::from(p.nodes))),
                    ("minutes".into(), minutes),
                    ("seconds".into(), seconds),
                ])
            })
            .collect();
        Tree::Map(vec![
            ("timestamp".into(), Tree::int(self.0.server_time)),
            ("server".into(), Tree::text(&self.0.server)),
            ("jobs".into(), Tree::List(pairs)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(nodes: u32, seconds: Option<u64>) -> WhatPair {
        WhatPair { nodes, seconds }
    }

    #[test]
    fn pairs_read_as_the_paper_writes_them() {
        let what = What(PlanReply {
            what: vec![pair(8, Some(3600)), pair(4, None)],
            ..Default::default()
        });
        assert_eq!(
            what.text(),
            "8 nodes for 60 minutes\n4 nodes without limit\n"
        );
        assert_eq!(describe(&pair(1, Some(119))), "1 node for 1 minute");
    }

    #[test]
    fn nothing_fits_says_so() {
        let what = What(PlanReply {
            what: vec![pair(2, Some(30))],
            ..Default::default()
        });
        assert_eq!(what.text(), "no job could start now\n");
        assert_eq!(
            What(PlanReply::default()).text(),
            "no job could start now\n"
        );
    }

    #[test]
    fn json_minutes_fit_within_the_seconds() {
        let what = What(PlanReply {
            what: vec![pair(8, Some(3599)), pair(4, None)],
            ..Default::default()
        });
        let doc: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&what.json()).unwrap()).unwrap();
        assert_eq!(doc["jobs"][0]["minutes"], 59);
        assert_eq!(doc["jobs"][0]["seconds"], 3599);
        assert!(doc["jobs"][1]["minutes"].is_null());
    }
}
