//! qreport's own table and CSV: a row per group, then the total.

use std::path::Path;

use chrono::Local;
use qmesh_core::report::{Context, Report, Row};

const HEADERS: [&str; 10] = [
    "jobs",
    "users",
    "node_hours",
    "share",
    "utilization",
    "mean_wait_min",
    "median_wait_min",
    "mean_run_min",
    "expansion",
    "bounded_slowdown",
];

fn cells(row: &Row) -> [String; 10] {
    [
        row.jobs.to_string(),
        row.users.to_string(),
        format!("{:.1}", row.node_hours),
        format!("{:.1}%", row.share * 100.0),
        row.utilization
            .map_or_else(|| "-".to_string(), |u| format!("{:.1}%", u * 100.0)),
        format!("{:.1}", row.mean_wait / 60.0),
        format!("{:.1}", row.median_wait / 60.0),
        format!("{:.1}", row.mean_run / 60.0),
        format!("{:.2}", row.expansion),
        format!("{:.2}", row.bounded_slowdown),
    ]
}

pub fn csv(r: &Report) -> String {
    let by = r.by.map_or("group", |b| b.name());
    let mut out = format!("{by},{}\n", HEADERS.join(","));
    for row in r.rows.iter().chain(std::iter::once(&r.total)) {
        let mut c = cells(row);
        c[3] = format!("{:.4}", row.share);
        c[4] = row
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

/// The width of the key column: the longest key, at least `at_least`.
pub fn key_width(r: &Report, at_least: usize) -> usize {
    r.rows
        .iter()
        .map(|row| row.key.len())
        .max()
        .unwrap_or(0)
        .max(at_least)
}

/// The time measured, in the machine's zone.
pub fn measured(r: &Report, machine: &Context) -> String {
    let zone = machine.calendar.zone().ok();
    let show = |t: chrono::DateTime<chrono::Utc>| match zone {
        Some(z) => t.with_timezone(&z).format("%Y-%m-%d %H:%M %Z").to_string(),
        None => t.with_timezone(&Local).format("%Y-%m-%d %H:%M").to_string(),
    };
    match (r.from, r.to) {
        (Some(f), Some(t)) => format!("{} to {}", show(f), show(t)),
        _ => "no job ended in these days".to_string(),
    }
}

pub fn text(r: &Report, dir: &Path, files: usize, machine: &Context) -> String {
    let mut out = String::new();
    let days = if files == 1 { "day" } else { "days" };
    out.push_str(&format!(
        "{} jobs, {} ({files} {days} of {})\n",
        r.total.jobs,
        measured(r, machine),
        dir.display()
    ));
    if let Some(n) = machine.nodes {
        out.push_str(&format!(
            "{n} nodes; {:.1} jobs running on average\n",
            r.mean_running
        ));
    }
    out.push('\n');
    let width = key_width(r, 8);
    out.push_str(&format!(
        "{:<width$} {:>7} {:>5} {:>11} {:>6} {:>6} {:>10} {:>10} {:>10} {:>9} {:>8}\n",
        "",
        "JOBS",
        "USERS",
        "NODE-HOURS",
        "SHARE",
        "UTIL",
        "MEAN WAIT",
        "MED WAIT",
        "MEAN RUN",
        "EXPANSION",
        "BSLD"
    ));
    for row in r.rows.iter().chain(std::iter::once(&r.total)) {
        let c = cells(row);
        out.push_str(&format!(
            "{:<width$} {:>7} {:>5} {:>11} {:>6} {:>6} {:>9}m {:>9}m {:>9}m {:>9} {:>8}\n",
            row.key, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]
        ));
    }
    out
}
