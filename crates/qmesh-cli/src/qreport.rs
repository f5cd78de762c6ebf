//! qreport: how the machine did, from the accounting log, over days:
//! jobs, node-hours, utilization, waits, expansion factor and bounded
//! slowdown, by queue, user, group, account, request size, run time, node
//! set, day, month or calendar period (`qmesh_core::report` does the
//! figures); the seeds' own tables (`--tables sdsc|anl|epcc`); charts
//! (`--plot`, drawn by `qmesh_charts`). Read on the daemon's host, from its state
//! directory, as PBS's accounting tools read `server_priv/accounting`;
//! `--dir` names another (a copy, another PBS server's log, a replay's).

mod plot;
mod seeds;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{NaiveDate, TimeZone};
use clap::{Parser, ValueEnum};
use qmesh_core::calendar::Calendar;
use qmesh_core::report::{By, Context, Ended};

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
    /// two), runtime (hours), node_set, day, month or period (prime,
    /// non-prime, holidays, the calendar's named periods). Days, months
    /// and periods hold the jobs submitted in them and the node-hours
    /// used in them.
    #[arg(long, value_name = "WHAT", default_value = "queue", value_parser = By::parse)]
    pub by: By,
    /// The site's qmeshd configuration file: its node sets (node_set, the
    /// machine's size) and calendar (zone, prime time, holidays, named
    /// periods). Without it days are the machine's local ones and prime
    /// time is qmeshd's default, Monday to Friday 09:00-17:00.
    #[arg(long, value_name = "FILE.toml")]
    pub config: Option<PathBuf>,
    /// The machine's nodes, for utilization [default: the node sets' of
    /// --config].
    #[arg(long, value_name = "N")]
    pub nodes: Option<u32>,
    /// The seeds' tables in their own form: sdsc (SDSC Paragon's Tables
    /// 1-5), anl (node-hours by project) or epcc (usage by month).
    #[arg(long, value_enum, value_name = "SEED", conflicts_with = "csv")]
    pub tables: Option<Seed>,
    /// Draw PREFIX-utilization.svg/.png (utilization by day) and
    /// PREFIX-wait.svg/.png (mean and median wait by request size).
    #[arg(long, value_name = "PREFIX")]
    pub plot: Option<PathBuf>,
    /// As JSON.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// As CSV, one row per group then the total.
    #[arg(long)]
    pub csv: bool,
}

/// The seeds whose tables qreport can print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Seed {
    Sdsc,
    Anl,
    Epcc,
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

/// The jobs that ended in the chosen days' files, and how many files.
fn read_log(args: &Args, dir: &std::path::Path) -> Result<(Vec<Ended>, usize), CliError> {
    let listed = std::fs::read_dir(dir).map_err(|e| {
        CliError::msg(format!(
            "cannot read the accounting directory {}: {e}; give --dir (qmeshd writes STATE/server_priv/accounting)",
            dir.display()
        ))
    })?;
    let days =
        qmesh_core::joblog::day_files(listed.flatten().map(|e| e.path()), args.from, args.to);
    let mut jobs = Vec::new();
    for (_, path) in &days {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::msg(format!("cannot read {}: {e}", path.display())))?;
        jobs.extend(text.lines().filter_map(Ended::from_line));
    }
    Ok((jobs, days.len()))
}

/// The time measured when days are asked for: from the first day's local
/// midnight to the one after the last day (else the log's first
/// submission or last end).
fn window(args: &Args, jobs: &[Ended], context: &Context) -> Option<(i64, i64)> {
    if args.from.is_none() && args.to.is_none() {
        return None;
    }
    let zone = context.calendar.zone().unwrap_or(chrono_tz::Tz::UTC);
    let midnight = |day: NaiveDate| {
        zone.from_local_datetime(&day.and_time(chrono::NaiveTime::MIN))
            .earliest()
            .map(|t| t.timestamp())
    };
    let from = args
        .from
        .and_then(midnight)
        .or_else(|| jobs.iter().map(|j| j.qtime).min())?;
    let to = args
        .to
        .and_then(|d| d.succ_opt())
        .and_then(midnight)
        .or_else(|| jobs.iter().map(|j| j.end).max())?;
    Some((from, to.max(from)))
}

/// The machine as the configuration file (or the machine qreport runs
/// on) says it is.
fn context(args: &Args) -> Result<Context, CliError> {
    let Some(path) = &args.config else {
        let zone = iana_time_zone::get_timezone()
            .ok()
            .filter(|z| z.parse::<chrono_tz::Tz>().is_ok())
            .unwrap_or_else(|| "UTC".into());
        return Ok(Context {
            nodes: args.nodes,
            sets: Vec::new(),
            calendar: Calendar {
                time_zone: zone,
                ..Calendar::default()
            },
            window: None,
        });
    };
    let settings = qmesh_config::Settings::from_file(path)
        .map_err(|e| CliError::msg(format!("{e}; give --config a qmeshd configuration file")))?;
    let sets: Vec<(String, Vec<String>)> = settings
        .node_sets
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.nodes.iter().map(|n| n.name.clone()).collect(),
            )
        })
        .collect();
    let all = sets.iter().map(|(_, n)| n.len() as u32).sum::<u32>();
    Ok(Context {
        nodes: args.nodes.or((all > 0).then_some(all)),
        sets,
        calendar: settings.initial.calendar.clone(),
        window: None,
    })
}

fn run(args: &Args) -> Result<String, CliError> {
    let dir = args.dir.clone().unwrap_or_else(default_dir);
    let (jobs, files) = read_log(args, &dir)?;
    let mut machine = context(args)?;
    machine.window = window(args, &jobs, &machine);
    let mut out = String::new();
    if let Some(prefix) = &args.plot {
        for file in plot::figures(&jobs, &machine, prefix, &dir)? {
            // The files go to standard error: the report may be piped.
            eprintln!("qreport: wrote {file}");
        }
    }
    if let Some(seed) = args.tables {
        let tables = seeds::tables(seed, &jobs, &machine);
        if args.json {
            out.push_str(&seeds::json(&tables)?);
        } else {
            out.push_str(&seeds::text(&tables, &dir, files));
        }
        return Ok(out);
    }
    let r = qmesh_core::report::report(&jobs, args.by, &machine);
    if args.json {
        let mut doc = serde_json::to_string_pretty(&r)
            .map_err(|e| CliError::msg(format!("cannot write JSON: {e}")))?;
        doc.push('\n');
        out.push_str(&doc);
    } else if args.csv {
        out.push_str(&table::csv(&r));
    } else {
        out.push_str(&table::text(&r, &dir, files, &machine));
    }
    Ok(out)
}
