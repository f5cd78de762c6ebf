//! The seeds' tables in their own form, from the accounting log: SDSC
//! Paragon's Tables 1-5 (overall utilization and usage by node set, by
//! month, by request size, by execution time, and per queue throughput
//! with the expansion factor), ANL's node-hours by project (the SP's
//! wall-clock charge), EPCC's usage by month and by group. Each table is
//! one of `qmesh_core::report`'s groupings; `--json` gives them whole.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use qmesh_core::report::{By, Context, Ended, Report, Row, report};
use serde::Serialize;

use super::Seed;
use super::table::{key_width, measured};
use crate::client::CliError;

/// A seed's tables: each a title and a report.
#[derive(Debug, Serialize)]
pub struct Tables {
    pub seed: &'static str,
    pub nodes: Option<u32>,
    pub tables: Vec<Table>,
    #[serde(skip)]
    machine: Context,
}

#[derive(Debug, Serialize)]
pub struct Table {
    pub title: &'static str,
    pub report: Report,
}

pub fn tables(seed: Seed, jobs: &[Ended], machine: &Context) -> Tables {
    let table = |title, by| Table {
        title,
        report: report(jobs, by, machine),
    };
    let (name, tables) = match seed {
        Seed::Sdsc => (
            "sdsc",
            vec![
                table(
                    "Table 1 - Overall system performance and node utilization",
                    By::NodeSet,
                ),
                table("Table 2 - Monthly node utilization", By::Month),
                table("Table 3 - Usage distribution by request size", By::Size),
                table("Table 4 - Execution time distribution", By::Runtime),
                table(
                    "Table 5 - Scheduling throughput and Expansion factor",
                    By::Queue,
                ),
            ],
        ),
        Seed::Anl => (
            "anl",
            vec![table(
                "Node-hours by project (wall-clock time scheduled, as charged)",
                By::Account,
            )],
        ),
        Seed::Epcc => (
            "epcc",
            vec![
                table("Table 1 - Utilisation by month", By::Month),
                table("Usage by user group", By::Group),
            ],
        ),
    };
    Tables {
        seed: name,
        nodes: machine.nodes,
        tables,
        machine: machine.clone(),
    }
}

pub fn json(t: &Tables) -> Result<String, CliError> {
    let mut doc = serde_json::to_string_pretty(t)
        .map_err(|e| CliError::msg(format!("cannot write JSON: {e}")))?;
    doc.push('\n');
    Ok(doc)
}

fn pct(x: f64) -> String {
    format!("{:.1}", x * 100.0)
}

fn util(row: &Row) -> String {
    row.utilization.map_or_else(|| "-".into(), pct)
}

/// The node sets jobs ran on, for per-set job columns (SDSC's batch and
/// interactive partitions).
fn set_columns(r: &Report) -> Vec<String> {
    r.total
        .jobs_by_set
        .keys()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

pub fn text(t: &Tables, dir: &Path, files: usize) -> String {
    let mut out = String::new();
    let first = t.tables.first().map(|x| &x.report);
    let days = if files == 1 { "day" } else { "days" };
    let _ = writeln!(
        out,
        "{} jobs, {} ({files} {days} of {})",
        first.map_or(0, |r| r.total.jobs),
        first.map_or_else(String::new, |r| measured(r, &t.machine)),
        dir.display()
    );
    if t.nodes.is_none() {
        out.push_str("(no utilization: give --config or --nodes)\n");
    }
    for table in &t.tables {
        out.push('\n');
        let _ = writeln!(out, "{}", table.title);
        let r = &table.report;
        match (t.seed, r.by) {
            ("sdsc", Some(By::NodeSet)) => sdsc_overall(&mut out, r),
            ("sdsc", Some(By::Month)) => sdsc_monthly(&mut out, r),
            ("sdsc", Some(By::Size)) => sdsc_sizes(&mut out, r),
            ("sdsc", Some(By::Runtime)) => sdsc_runtimes(&mut out, r),
            ("sdsc", Some(By::Queue)) => sdsc_queues(&mut out, r),
            ("anl", _) => anl_projects(&mut out, r),
            ("epcc", Some(By::Month)) => epcc_months(&mut out, r),
            _ => epcc_groups(&mut out, r),
        }
    }
    out
}

fn sdsc_overall(out: &mut String, r: &Report) {
    let line = |out: &mut String, what: String, value: String| {
        let _ = writeln!(out, "{what:<58}{value:>10}");
    };
    line(
        out,
        "System down time as percent of wall clock time".into(),
        "(not logged)".into(),
    );
    for row in &r.rows {
        line(
            out,
            format!("Total number of jobs on {}", row.key),
            row.jobs.to_string(),
        );
    }
    line(out, "Total number of jobs".into(), r.total.jobs.to_string());
    line(
        out,
        "Average number of jobs running at any given time".into(),
        format!("{:.1}", r.mean_running),
    );
    for row in &r.rows {
        line(
            out,
            format!("{} usage as percent of total usage", row.key),
            format!("{} %", pct(row.share)),
        );
    }
    for row in r.rows.iter().filter(|row| row.utilization.is_some()) {
        line(
            out,
            format!("{} utilization", row.key),
            format!("{} %", util(row)),
        );
    }
    line(
        out,
        "Overall utilization".into(),
        r.total
            .utilization
            .map_or_else(|| "-".into(), |u| format!("{} %", pct(u))),
    );
}

fn sdsc_monthly(out: &mut String, r: &Report) {
    let _ = writeln!(out, "{:<8} {:>11}", "Month", "Utilization");
    for row in &r.rows {
        let _ = writeln!(out, "{:<8} {:>11}", row.key, util(row));
    }
    let months: Vec<f64> = r.rows.iter().filter_map(|row| row.utilization).collect();
    if !months.is_empty() {
        let mean = months.iter().sum::<f64>() / months.len() as f64;
        let _ = writeln!(out, "{:<8} {:>11}", "AVE", pct(mean));
    }
}

/// `Number of jobs on SET` columns after `lead`.
fn jobs_by_set_header(out: &mut String, lead: &str, sets: &[String]) {
    out.push_str(lead);
    if sets.is_empty() {
        let _ = write!(out, " {:>14}", "Number of jobs");
    }
    for s in sets {
        let _ = write!(out, " {:>14}", format!("jobs on {s}"));
    }
    out.push('\n');
}

fn jobs_by_set_cells(out: &mut String, row: &Row, sets: &[String]) {
    if sets.is_empty() {
        let _ = write!(out, " {:>14}", row.jobs);
    }
    for s in sets {
        let _ = write!(out, " {:>14}", row.jobs_by_set.get(s).copied().unwrap_or(0));
    }
    out.push('\n');
}

fn sdsc_sizes(out: &mut String, r: &Report) {
    let sets = set_columns(r);
    jobs_by_set_header(
        out,
        &format!("{:>12} {:>19}", "Request size", "Usage (% of total)"),
        &sets,
    );
    for row in &r.rows {
        // The class's top: SDSC's sizes were powers of two.
        let top = row.key.trim().rsplit('-').next().unwrap_or("").to_string();
        let _ = write!(out, "{top:>12} {:>19}", pct(row.share));
        jobs_by_set_cells(out, row, &sets);
    }
}

fn sdsc_runtimes(out: &mut String, r: &Report) {
    let sets = set_columns(r);
    jobs_by_set_header(out, &format!("{:>19}", "Execution time (hr)"), &sets);
    for row in &r.rows {
        let _ = write!(out, "{:>19}", format!("{}.0", row.key.trim()));
        jobs_by_set_cells(out, row, &sets);
    }
}

fn sdsc_queues(out: &mut String, r: &Report) {
    let width = key_width(r, 5);
    let _ = writeln!(
        out,
        "{:<width$} {:>14} {:>16} {:>16} {:>21} {:>16}",
        "Queue",
        "Number of jobs",
        "Usage % of total",
        "av. wait (hours)",
        "av. execution (hours)",
        "expansion factor"
    );
    for row in r.rows.iter().chain(std::iter::once(&r.total)) {
        let _ = writeln!(
            out,
            "{:<width$} {:>14} {:>16} {:>16.1} {:>21.1} {:>16.1}",
            row.key,
            row.jobs,
            pct(row.share),
            row.mean_wait / 3600.0,
            row.mean_run / 3600.0,
            row.expansion
        );
    }
}

fn anl_projects(out: &mut String, r: &Report) {
    let width = key_width(r, 7);
    let _ = writeln!(
        out,
        "{:<width$} {:>8} {:>6} {:>12} {:>11}",
        "Project", "Jobs", "Users", "Node-hours", "% of total"
    );
    for row in r.rows.iter().chain(std::iter::once(&r.total)) {
        let _ = writeln!(
            out,
            "{:<width$} {:>8} {:>6} {:>12.1} {:>11}",
            row.key,
            row.jobs,
            row.users,
            row.node_hours,
            pct(row.share)
        );
    }
}

fn epcc_months(out: &mut String, r: &Report) {
    let _ = writeln!(
        out,
        "{:<8} {:>12} {:>8} {:>6}",
        "Month", "Node hours", "Util.", "Users"
    );
    for row in &r.rows {
        let _ = writeln!(
            out,
            "{:<8} {:>12.0} {:>7}% {:>6}",
            row.key,
            row.node_hours,
            util(row),
            row.users
        );
    }
}

fn epcc_groups(out: &mut String, r: &Report) {
    let width = key_width(r, 5);
    let _ = writeln!(
        out,
        "{:<width$} {:>6} {:>12} {:>11}",
        "Group", "Users", "Node hours", "% of total"
    );
    for row in &r.rows {
        let _ = writeln!(
            out,
            "{:<width$} {:>6} {:>12.0} {:>11}",
            row.key,
            row.users,
            row.node_hours,
            pct(row.share)
        );
    }
}
