//! sinfo: qmesh's queues and nodes as Slurm's sinfo shows partitions and
//! nodes. The default table is Slurm 22.05's to the character (`%#P %.5a
//! %.10l %.6D %.6t %N`, checked against the real one's fixtures), and so
//! are `-N`, `-l`, `-s` and `-R`; `-o` takes Slurm's letters with their
//! widths. What a partition and a node are in qmesh's terms, and their
//! states, is decided once in `sinfo/view.rs` (scontrol's node and
//! partition views read it too).

pub mod format;
pub mod json;
pub mod rows;
pub mod view;

use std::process::ExitCode;

use clap::Parser;

use crate::client::{self, CliError};
use format::Piece;
use rows::{Filter, Matching, Row, StateWord};
use view::{Cluster, SlurmNode};

/// Slurm 22.05's formats, as its sinfo sets them up (`%#`: as wide as the
/// longest value, 9 at least).
pub const DEFAULT: &str = "%#P %.5a %.10l %.6D %.6t %N";
pub const LONG: &str = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";
pub const SUMMARIZE: &str = "%#P %.5a %.10l %.16F %N";
pub const NODE: &str = "%#N %.6D %.#P %6t";
pub const NODE_LONG: &str = "%#N %.6D %.#P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E";
pub const REASONS: &str = "%20E %9u %19H %N";
pub const REASONS_LONG: &str = "%20E %12U %19H %6t %N";

/// View the partitions (queues) and nodes (Slurm's sinfo, to qmesh).
#[derive(Parser, Debug, Default)]
#[command(name = "sinfo", disable_help_flag = true, disable_version_flag = true)]
pub struct Args {
    /// Every partition (the default: qmesh hides none).
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Only the nodes whose agent is not connected.
    #[arg(short = 'd', long = "dead")]
    pub dead: bool,
    /// Group only nodes alike in CPUs, memory and load too.
    #[arg(short = 'e', long = "exact")]
    pub exact: bool,
    /// No header line.
    #[arg(short = 'h', long = "noheader")]
    pub noheader: bool,
    /// The long table (with the date first).
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// Only these nodes (a hostlist: n[1-4],m2).
    #[arg(short = 'n', long = "nodes", value_name = "NODES")]
    pub nodes: Option<String>,
    /// One line per node and partition.
    #[arg(short = 'N', long = "Node")]
    pub node: bool,
    /// Slurm's format letters, e.g. "%P %a %D %t %N".
    #[arg(short = 'o', long = "format", value_name = "FORMAT")]
    pub format: Option<String>,
    /// Slurm's long format names (not in qmesh: use -o).
    #[arg(short = 'O', long = "Format", value_name = "FORMAT")]
    pub format_long: Option<String>,
    /// Only these partitions (queues), a comma list.
    #[arg(
        short = 'p',
        long = "partition",
        value_name = "PARTITIONS",
        env = "SINFO_PARTITION"
    )]
    pub partitions: Option<String>,
    /// Only the nodes whose agent answers.
    #[arg(short = 'r', long = "responding")]
    pub responding: bool,
    /// Why nodes are out of service.
    #[arg(short = 'R', long = "list-reasons")]
    pub reasons: bool,
    /// One line per partition: NODES(A/I/O/T).
    #[arg(short = 's', long = "summarize")]
    pub summarize: bool,
    /// Only nodes in these states (comma list): idle, alloc, mix, down,
    /// drain, drained, draining, resv, no_respond, all.
    #[arg(short = 't', long = "states", value_name = "STATES")]
    pub states: Option<String>,
    /// Slurm's sort keys (not in qmesh: rows come in Slurm's default order).
    #[arg(short = 'S', long = "sort", value_name = "SORT")]
    pub sort: Option<String>,
    /// Repeat every N seconds (not in qmesh: use `watch -n N sinfo`).
    #[arg(short = 'i', long = "iterate", value_name = "SECONDS")]
    pub iterate: Option<String>,
    /// Reservations (not in sinfo here: pbs_rstat lists qmesh's).
    #[arg(short = 'T', long = "reservation")]
    pub reservation: bool,
    /// Accepted.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// Accepted (qmesh hides no partition).
    #[arg(long = "hide")]
    pub hide: bool,
    /// Accepted (one cluster).
    #[arg(long = "local")]
    pub local: bool,
    /// The nodes as Slurm 22.05's `sinfo --json` gives them.
    #[arg(long = "json")]
    pub json: bool,
    /// Print the version of Slurm whose sinfo this follows.
    #[arg(short = 'V', long = "version")]
    pub version: bool,
    #[arg(long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    if args.version {
        println!("slurm {}", view::SLURM_VERSION);
        return ExitCode::SUCCESS;
    }
    if args.format.is_some() && args.long {
        eprintln!(
            "sinfo: fatal: Options -o(--format) and -l(--long) are mutually exclusive. \
             Please remove one and retry."
        );
        return ExitCode::from(1);
    }
    match plan(&args).and_then(|plan| {
        let cluster = client::block_on(view::fetch())?;
        Ok(plan.print(&cluster, &chrono::Local::now()))
    }) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("sinfo: error: {err}");
            ExitCode::from(1)
        }
    }
}

/// What to print, decided from the options before asking the daemon.
#[derive(Debug)]
pub struct Plan {
    pieces: Vec<Piece>,
    node_oriented: bool,
    filter: Filter,
    matching: Matching,
    header: bool,
    date: bool,
    json: bool,
    /// `-R`: one line per reason, whatever the partitions.
    reasons: bool,
}

/// Reads the options into a [`Plan`]; what qmesh cannot do is refused with
/// what to write instead.
pub fn plan(args: &Args) -> Result<Plan, CliError> {
    if args.format_long.is_some() {
        return Err(CliError::msg(
            "-O/--Format is not supported; write -o with Slurm's letters, e.g. -o \"%P %a %D %t %N\"",
        ));
    }
    if args.iterate.is_some() {
        return Err(CliError::msg(
            "-i/--iterate is not supported; run `watch -n SECONDS sinfo`",
        ));
    }
    if args.reservation {
        return Err(CliError::msg(
            "-T/--reservation is not supported; pbs_rstat lists qmesh's reservations",
        ));
    }
    if args.sort.is_some() {
        return Err(CliError::msg(
            "-S/--sort is not supported; rows come in Slurm's default order (partitions, then \
             states; -N: node names)",
        ));
    }
    let env_format = std::env::var("SINFO_FORMAT").ok().filter(|f| !f.is_empty());
    let (format, node_oriented) = match &args.format {
        Some(f) => (f.clone(), args.node),
        None if args.summarize => (SUMMARIZE.to_string(), false),
        None if args.node => (if args.long { NODE_LONG } else { NODE }.to_string(), true),
        None if args.reasons => (
            if args.long { REASONS_LONG } else { REASONS }.to_string(),
            false,
        ),
        None => match env_format {
            Some(f) => (f, false),
            None => (if args.long { LONG } else { DEFAULT }.to_string(), false),
        },
    };
    let pieces = format::parse(&format).map_err(CliError::Msg)?;
    let letters = format::letters(&pieces);
    let mut states = Vec::new();
    if let Some(text) = &args.states {
        for word in text.split(',').filter(|w| !w.trim().is_empty()) {
            states.push(StateWord::parse(word).ok_or_else(|| {
                CliError::msg(format!(
                    "Bad state string: \"{}\"; valid states: {}",
                    word.trim(),
                    StateWord::NAMES
                ))
            })?);
        }
    } else if args.reasons {
        states = vec![StateWord::Down, StateWord::Drain];
    }
    if args.dead {
        states.push(StateWord::NoRespond);
    }
    let nodes = match &args.nodes {
        Some(list) => qmesh_core::job::slurm::hostlist::expand(list)
            .map_err(|why| CliError::msg(format!("--nodes: {why}; write e.g. n[1-4,7]")))?,
        None => Vec::new(),
    };
    let filter = Filter {
        partitions: split(args.partitions.as_deref()),
        nodes,
        states,
        responding: args.responding,
    };
    let has = |set: &str| letters.iter().any(|l| set.contains(*l));
    let matching = Matching {
        state: has("tT"),
        features: has("fb"),
        gres: has("G"),
        reason: has("EHuU"),
        exact: args.exact,
    };
    Ok(Plan {
        pieces,
        node_oriented,
        filter,
        matching,
        header: !args.noheader,
        date: args.long && !args.noheader && args.format.is_none(),
        json: args.json,
        reasons: args.reasons && args.format.is_none(),
    })
}

fn split(text: Option<&str>) -> Vec<String> {
    text.map(|t| {
        t.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    })
    .unwrap_or_default()
}

impl Plan {
    /// The text sinfo prints for `cluster`; `now` for `-l`'s date line.
    pub fn print<Tz: chrono::TimeZone>(
        &self,
        cluster: &Cluster,
        now: &chrono::DateTime<Tz>,
    ) -> String
    where
        Tz::Offset: std::fmt::Display,
    {
        let mut rows = rows::rows(cluster, &self.filter, self.matching, self.node_oriented);
        if self.json {
            let shown = |n: &SlurmNode| {
                rows.iter()
                    .any(|r| r.nodes.iter().any(|m| m.name == n.name))
            };
            let nodes: Vec<&SlurmNode> = cluster.nodes.iter().filter(|n| shown(n)).collect();
            let tree = json::document(&nodes);
            return serde_json::to_string_pretty(&tree).unwrap_or_default() + "\n";
        }
        if self.reasons {
            rows = across_partitions(rows, self.matching);
        }
        let mut out = String::new();
        if self.date {
            out.push_str(&now.format("%a %b %e %H:%M:%S %Y\n").to_string());
        }
        out.push_str(&format::table(&self.pieces, &rows, self.header));
        out
    }
}

/// `-R`'s rows: a node once, with the others out of service for the same
/// reason, whichever partitions hold them.
fn across_partitions<'a>(rows: Vec<Row<'a>>, matching: Matching) -> Vec<Row<'a>> {
    let mut merged: Vec<Row<'a>> = Vec::new();
    for row in rows.into_iter().filter(|r| !r.nodes.is_empty()) {
        for node in row.nodes {
            let alike = merged.iter_mut().find(|m| {
                m.nodes[0].reason == node.reason
                    && (!matching.state || m.nodes[0].state.long() == node.state.long())
            });
            match alike {
                Some(m) if m.nodes.iter().any(|n| n.name == node.name) => {}
                Some(m) => m.nodes.push(node),
                None => merged.push(Row {
                    partition: row.partition,
                    nodes: vec![node],
                }),
            }
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use qmesh_proto::{NodeInfo, QueueInfo};

    fn cluster() -> Cluster {
        let node = |name: &str, state: &str, up: bool, job: &str, comment: &str| NodeInfo {
            name: name.into(),
            node_set: "s".into(),
            host: "h1".into(),
            up,
            state: state.into(),
            job_id: job.into(),
            comment: comment.into(),
            jobs_per_node: 1,
            cpus: 2,
            node_cpus: 2,
            cpus_alloc: if job.is_empty() { 0 } else { 2 },
            mem: 24105 * 1024 * 1024,
            ..NodeInfo::default()
        };
        let queue = |name: &str| QueueInfo {
            name: name.into(),
            queue_type: "execution".into(),
            enabled: true,
            started: true,
            open_now: true,
            sets_now: vec!["s".into()],
            ..QueueInfo::default()
        };
        Cluster::new(
            &[
                node("n1", "free", true, "", ""),
                node("n2", "job-busy", true, "1.srv", ""),
                node("n3", "offline", true, "", "fan"),
                node("n4", "down", false, "", ""),
                node("n5", "free", true, "", ""),
            ],
            &[queue("batch"), queue("debug")],
            "batch",
        )
    }

    fn run(argv: &[&str]) -> String {
        let mut all = vec!["sinfo"];
        all.extend_from_slice(argv);
        let args = Args::try_parse_from(all).unwrap();
        let now = chrono::Utc.with_ymd_and_hms(2026, 11, 7, 9, 5, 3).unwrap();
        plan(&args).unwrap().print(&cluster(), &now)
    }

    #[test]
    fn the_default_table_groups_each_partitions_nodes_by_state() {
        assert_eq!(
            run(&[]),
            "\
PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
batch*       up   infinite      1  down* n4
batch*       up   infinite      1  drain n3
batch*       up   infinite      1  alloc n2
batch*       up   infinite      2   idle n[1,5]
debug        up   infinite      1  down* n4
debug        up   infinite      1  drain n3
debug        up   infinite      1  alloc n2
debug        up   infinite      2   idle n[1,5]
"
        );
    }

    #[test]
    fn long_summary_node_and_reasons() {
        let long = run(&["-l", "-p", "debug"]);
        assert!(
            long.starts_with("Sat Nov  7 09:05:03 2026\nPARTITION AVAIL"),
            "{long}"
        );
        assert!(long.contains(" JOB_SIZE ROOT OVERSUBS     GROUPS  NODES       STATE NODELIST\n"));
        assert!(long.contains("debug        up   infinite 1-infinite   no EXCLUSIV        all      2        idle n[1,5]\n"), "{long}");
        assert_eq!(
            run(&["-s", "-p", "batch"]),
            "PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST\n\
             batch*       up   infinite          1/2/2/5 n[1-5]\n"
        );
        let nodes = run(&["-N", "-p", "batch"]);
        assert_eq!(
            nodes.lines().nth(4),
            Some("n4             1    batch* down* ")
        );
        let reasons = run(&["-R"]);
        assert_eq!(
            reasons,
            "REASON               USER      TIMESTAMP           NODELIST\n\
             Not responding       Unknown   Unknown             n4\n\
             fan                  Unknown   Unknown             n3\n"
        );
        assert_eq!(
            run(&["-h", "-t", "idle", "-o", "%P %D"]),
            "batch* 3\ndebug 3\n"
        );
        assert_eq!(run(&["-h", "-r", "-n", "n[3-4]", "-o", "%N"]), "n3\nn3\n");
    }

    #[test]
    fn json_has_22_05s_shape() {
        let text = run(&["--json"]);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["meta"]["Slurm"]["release"], "22.05.8");
        let nodes = doc["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 5);
        assert_eq!(nodes[2]["name"], "n3");
        assert_eq!(nodes[2]["state"], "idle");
        assert_eq!(nodes[2]["state_flags"][0], "DRAIN");
        assert_eq!(nodes[2]["reason"], "fan");
        assert_eq!(nodes[1]["alloc_cpus"], 2);
        assert_eq!(nodes[0]["partitions"][1], "debug");
    }

    #[test]
    fn refusals_name_what_to_write() {
        let refused = |argv: &[&str]| {
            let mut all = vec!["sinfo"];
            all.extend_from_slice(argv);
            plan(&Args::try_parse_from(all).unwrap())
                .unwrap_err()
                .to_string()
        };
        assert!(refused(&["-t", "zz"]).contains("Bad state string: \"zz\""));
        assert!(refused(&["-o", "%y"]).contains("%y is not a field"));
        assert!(refused(&["-i", "5"]).contains("watch -n"));
        assert!(refused(&["-n", "n[1-"]).contains("--nodes"));
    }
}
