//! The sweep's figures, as the torus seed draws them: mean bounded
//! slowdown against utilization (log scale), and utilization against
//! offered load, one line per policy/allocator pair. The points become
//! lines here; `qmesh_charts` draws them, as it draws qreport's.

use std::path::Path;

use qmesh_charts::{ChartError, Line, YAxis, chart};

use crate::sweep::Point;

/// One line of a figure: its label and its points in load order.
fn lines(points: &[Point], xy: impl Fn(&Point) -> (f64, f64)) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    for p in points {
        let label = p.pair.to_string();
        match out.iter_mut().find(|(l, _)| *l == label) {
            Some((_, line)) => line.push(xy(p)),
            None => out.push((label, vec![xy(p)])),
        }
    }
    out
}

/// Writes `PREFIX-slowdown.{svg,png}` and `PREFIX-utilization.{svg,png}`;
/// returns the files written.
pub fn figures(points: &[Point], prefix: &Path, title: &str) -> Result<Vec<String>, ChartError> {
    let slowdown = lines(points, |p| {
        (
            p.metrics.utilization,
            p.metrics.mean_bounded_slowdown.max(1.0),
        )
    });
    let utilization = lines(points, |p| (p.metrics.offered_load, p.metrics.utilization));
    let mut written = Vec::new();
    for (name, series, x_desc, y_desc, y) in [
        (
            "slowdown",
            &slowdown,
            "utilization",
            "mean bounded slowdown",
            YAxis::Log,
        ),
        (
            "utilization",
            &utilization,
            "offered load",
            "utilization",
            YAxis::Fraction,
        ),
    ] {
        let base = format!("{}-{name}", prefix.display());
        written.extend(chart(&base, series, title, x_desc, y_desc, y)?);
    }
    Ok(written)
}
