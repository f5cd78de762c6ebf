//! qreport: how the machine did, from the accounting log, over days:
//! jobs, node-hours, utilization, waits, expansion factor and bounded
//! slowdown, by queue, user, group, account, request size or day
//! (`qmesh_core::report` does the figures). Read on the daemon's host,
//! from its state directory, as PBS's accounting tools read
//! `server_priv/accounting`; `--dir` names another (a copy, another PBS
//! server's log).

use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{Local, NaiveDate, Offset};
use clap::Parser;
use qmesh_core::report::{By, Ended, Report, Row, report};

use crate::client::{self, CliError};

/// Reports from the accounting log over a range of days.
#[derive(Debug, Parser)]
#[command(name = "qreport", version)]
pub struct Args {
    /// The accounting directory [default: the daemon's,
    /// STATE/server_priv/accounting, with STATE as qmeshd's default].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The first day (YYYY-MM-DD) [default: the log's first].
    #[arg(long, value_name = "DATE")]
    pub from: Option<NaiveDate>,
    /// The last day (YYYY-MM-DD) [default: the log's last].
    #[arg(long, value_name = "DATE")]
    pub to: Option<NaiveDate>,
    /// Group by queue, user, group, account, size (nodes, in powers of
    /// two) or day.
    #[arg(long, value_name = "WHAT", default_value = "queue", value_parser = By::parse)]
    pub by: By,
    /// The machine's nodes, for utilization (node-hours used over the
    /// node-hours there were).
    #[arg(long, value_name = "N")]
    pub nodes: Option<u32>,
    /// As JSON.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// As CSV, one row per group then the total.
    #[arg(long)]
    pub csv: bool,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    match run(&args) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => client::fail("qreport", &err),
    }
}

fn default_dir() -> PathBuf {
    qmesh_proto::endpoint::default_state_dir(nix::unistd::getuid().as_raw())
        .join("server_priv")
        .join("accounting")
}

fn run(args: &Args) -> Result<String, CliError> {
    let dir = args.dir.clone().unwrap_or_else(default_dir);
    let entries = std::fs::read_dir(&dir).map_err(|e| {
        CliError::msg(format!(
            "cannot read the accounting directory {}: {e}; give --dir (qmeshd writes STATE/server_priv/accounting)",
            dir.display()
        ))
    })?;
    let mut days: Vec<(NaiveDate, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let day = NaiveDate::parse_from_str(path.file_name()?.to_str()?, "%Y%m%d").ok()?;
            Some((day, path))
        })
        .filter(|(d, _)| args.from.is_none_or(|f| *d >= f) && args.to.is_none_or(|t| *d <= t))
        .collect();
    days.sort();
    let mut jobs = Vec::new();
    for (_, path) in &days {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::msg(format!("cannot read {}: {e}", path.display())))?;
        jobs.extend(text.lines().filter_map(Ended::from_line));
    }
    let zone = Local::now().offset().fix();
    let r = report(&jobs, args.by, args.nodes, zone);
    if args.json {
        let mut doc = serde_json::to_string_pretty(&r)
            .map_err(|e| CliError::msg(format!("cannot write JSON: {e}")))?;
        doc.push('\n');
        return Ok(doc);
    }
    if args.csv {
        return Ok(csv(&r));
    }
    Ok(table(&r, &dir, days.len()))
}

const HEADERS: [&str; 7] = [
    "jobs",
    "node_hours",
    "utilization",
    "mean_wait_min",
    "median_wait_min",
    "expansion",
    "bounded_slowdown",
];

fn cells(row: &Row) -> [String; 7] {
    [
        row.jobs.to_string(),
        format!("{:.1}", row.node_hours),
        row.utilization
            .map_or_else(|| "-".to_string(), |u| format!("{:.1}%", u * 100.0)),
        format!("{:.1}", row.mean_wait / 60.0),
        format!("{:.1}", row.median_wait / 60.0),
        format!("{:.2}", row.expansion),
        format!("{:.2}", row.bounded_slowdown),
    ]
}

fn csv(r: &Report) -> String {
    let by = r.by.map_or("group", |b| match b {
        By::Queue => "queue",
        By::User => "user",
        By::Group => "group",
        By::Account => "account",
        By::Size => "size",
        By::Day => "day",
    });
    let mut out = format!("{by},{}\n", HEADERS.join(","));
    for row in r.rows.iter().chain(std::iter::once(&r.total)) {
        let mut c = cells(row);
        c[2] = row
            .utilization
            .map_or_else(String::new, |u| format!("{u:.4}"));
        out.push_str(&format!(
            "{},{}\n",
            row.key.trim().replace(',', " "),
            c.join(",")
        ));
    }
    out
}

fn table(r: &Report, dir: &std::path::Path, files: usize) -> String {
    let mut out = String::new();
    let period = match (r.from, r.to) {
        (Some(f), Some(t)) => format!(
            "{} to {}",
            f.with_timezone(&Local).format("%Y-%m-%d %H:%M"),
            t.with_timezone(&Local).format("%Y-%m-%d %H:%M")
        ),
        _ => "no job ended in these days".to_string(),
    };
    let days = if files == 1 { "day" } else { "days" };
    out.push_str(&format!(
        "{} jobs, {period} ({files} {days} of {})\n\n",
        r.total.jobs,
        dir.display()
    ));
    let width = r
        .rows
        .iter()
        .map(|row| row.key.len())
        .max()
        .unwrap_or(0)
        .max(8);
    out.push_str(&format!(
        "{:<width$} {:>7} {:>11} {:>8} {:>10} {:>10} {:>9} {:>8}\n",
        "", "JOBS", "NODE-HOURS", "UTIL", "MEAN WAIT", "MED WAIT", "EXPANSION", "BSLD"
    ));
    for row in r.rows.iter().chain(std::iter::once(&r.total)) {
        let c = cells(row);
        out.push_str(&format!(
            "{:<width$} {:>7} {:>11} {:>8} {:>8}{} {:>8}{} {:>9} {:>8}\n",
            row.key, c[0], c[1], c[2], c[3], "m", c[4], "m", c[5], c[6]
        ));
    }
    out
}
