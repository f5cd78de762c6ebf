//! Charts as SVG and PNG, with an embedded font. The sweep's figures, as
//! the torus seed draws them: mean bounded slowdown against utilization
//! (log scale), and utilization against offered load, one line per
//! policy/allocator pair; and qreport's (utilization over time, wait by
//! request size) through [`chart`].

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::sweep::Point;

/// The embedded font, registered once for every drawing.
fn register_font() -> Result<(), String> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        )
        .map_err(|_| "the embedded font could not be read".to_string());
    });
    result
}

/// One line of a figure: its label and its points in load order.
fn lines(points: &[Point], xy: impl Fn(&Point) -> (f64, f64)) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut out: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
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
pub fn figures(points: &[Point], prefix: &Path, title: &str) -> Result<Vec<String>, String> {
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

/// How a chart's y axis runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YAxis {
    /// From 1, logarithmic (slowdowns).
    Log,
    /// From 0 to 1 (utilization).
    Fraction,
    /// From 0 to the largest value.
    Linear,
}

/// One chart of labelled lines with their points, as `BASE.svg` and
/// `BASE.png`; returns the files written. The sweep's figures and
/// qreport's are drawn by it.
pub fn chart(
    base: &str,
    series: &[(String, Vec<(f64, f64)>)],
    title: &str,
    x_desc: &str,
    y_desc: &str,
    y: YAxis,
) -> Result<Vec<String>, String> {
    register_font()?;
    let svg = format!("{base}.svg");
    draw(
        &SVGBackend::new(&svg, (900, 600)).into_drawing_area(),
        series,
        title,
        x_desc,
        y_desc,
        y,
    )?;
    let png = format!("{base}.png");
    draw(
        &BitMapBackend::new(&png, (900, 600)).into_drawing_area(),
        series,
        title,
        x_desc,
        y_desc,
        y,
    )?;
    Ok(vec![svg, png])
}

fn draw<B: DrawingBackend>(
    root: &DrawingArea<B, Shift>,
    series: &[(String, Vec<(f64, f64)>)],
    title: &str,
    x_desc: &str,
    y_desc: &str,
    y: YAxis,
) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("drawing the {y_desc} figure: {e}");
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let all = series.iter().flat_map(|(_, s)| s.iter());
    let x_max = all.clone().map(|p| p.0).fold(1.0f64, f64::max) * 1.05;
    let y_max = all.map(|p| p.1).fold(1.0f64, f64::max);
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70);
    macro_rules! plot {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(y_desc)
                .label_style(("sans-serif", 14))
                .draw()
                .map_err(|e| fail(&e))?;
            for (i, (label, points)) in series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                chart
                    .draw_series(LineSeries::new(
                        points.iter().copied(),
                        color.stroke_width(2),
                    ))
                    .map_err(|e| fail(&e))?
                    .label(label.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                chart
                    .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                    .map_err(|e| fail(&e))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 14))
                .draw()
                .map_err(|e| fail(&e))?;
        }};
    }
    match y {
        YAxis::Log => plot!(
            builder
                .build_cartesian_2d(0f64..x_max.min(1.05), (1f64..y_max * 2.0).log_scale())
                .map_err(|e| fail(&e))?
        ),
        YAxis::Fraction => plot!(
            builder
                .build_cartesian_2d(0f64..x_max, 0f64..y_max.min(1.0) * 1.05)
                .map_err(|e| fail(&e))?
        ),
        YAxis::Linear => plot!(
            builder
                .build_cartesian_2d(0f64..x_max, 0f64..y_max * 1.05)
                .map_err(|e| fail(&e))?
        ),
    }
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}
