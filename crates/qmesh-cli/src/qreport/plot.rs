//! qreport's charts, drawn by `qmesh_charts` as the simulator's sweeps
//! are: utilization day by day, and the wait by request size.

use std::path::Path;

use qmesh_charts::{YAxis, chart};
use qmesh_core::report::{By, Context, Ended, report};

use crate::client::CliError;

/// Writes `PREFIX-utilization` and `PREFIX-wait` (SVG and PNG); returns
/// the files written.
pub fn figures(
    jobs: &[Ended],
    machine: &Context,
    prefix: &Path,
    dir: &Path,
) -> Result<Vec<String>, CliError> {
    if jobs.is_empty() {
        return Err(CliError::msg(format!(
            "no job ended in the days read from {}: nothing to draw",
            dir.display()
        )));
    }
    if machine.nodes.is_none() {
        return Err(CliError::msg(
            "--plot draws utilization: give the machine's size (--nodes N or --config FILE)",
        ));
    }
    let title = |what: &str| format!("{what}: {}", dir.display());
    let days = report(jobs, By::Day, machine);
    let first = days
        .rows
        .first()
        .map_or_else(String::new, |r| r.key.clone());
    let utilization = vec![(
        "utilization".to_string(),
        days.rows
            .iter()
            .enumerate()
            .map(|(i, r)| (i as f64, r.utilization.unwrap_or(0.0)))
            .collect(),
    )];
    let mut written = chart(
        &format!("{}-utilization", prefix.display()),
        &utilization,
        &title("utilization by day"),
        &format!("days from {first}"),
        "utilization",
        YAxis::Fraction,
    )
    .map_err(|e| CliError::msg(e.to_string()))?;
    let sizes = report(jobs, By::Size, machine);
    let at = |key: &str| {
        let top: f64 = key
            .trim()
            .rsplit('-')
            .next()
            .and_then(|t| t.parse().ok())
            .unwrap_or(1.0);
        top.log2()
    };
    let wait = vec![
        (
            "mean wait".to_string(),
            sizes
                .rows
                .iter()
                .map(|r| (at(&r.key), r.mean_wait / 3600.0))
                .collect(),
        ),
        (
            "median wait".to_string(),
            sizes
                .rows
                .iter()
                .map(|r| (at(&r.key), r.median_wait / 3600.0))
                .collect(),
        ),
    ];
    written.extend(
        chart(
            &format!("{}-wait", prefix.display()),
            &wait,
            &title("wait by request size"),
            "nodes asked (log2: 0 is 1 node, 6 is 64)",
            "wait (hours)",
            YAxis::Linear,
        )
        .map_err(|e| CliError::msg(e.to_string()))?,
    );
    Ok(written)
}
