//! Charts as SVG and PNG, with an embedded font: labelled lines of points
//! in, `BASE.svg` and `BASE.png` out. The simulator's sweeps and qreport
//! draw with it; it is a crate of its own so that drawing (plotters, the
//! font) is linked only where a chart is drawn, and so that qreport draws
//! without the simulator. It knows nothing of jobs or traces: callers turn
//! their figures into [`Line`]s.

mod draw;

use std::sync::Once;

use plotters::prelude::*;

/// One line of a chart: its label and its points, drawn in order.
pub type Line = (String, Vec<(f64, f64)>);

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

/// Why a chart was not drawn.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("the embedded font could not be read")]
    Font,
    /// The backend's error, for the figure named by its y axis.
    #[error("drawing the {figure} figure: {why}")]
    Draw { figure: String, why: String },
}

/// The embedded font, registered once for every drawing.
fn register_font() -> Result<(), ChartError> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        )
        .map_err(|_| ChartError::Font);
    });
    result
}

/// One chart of labelled lines with their points, as `BASE.svg` and
/// `BASE.png` (900×600); returns the files written.
pub fn chart(
    base: &str,
    series: &[Line],
    title: &str,
    x_desc: &str,
    y_desc: &str,
    y: YAxis,
) -> Result<Vec<String>, ChartError> {
    register_font()?;
    let svg = format!("{base}.svg");
    draw::draw(
        &SVGBackend::new(&svg, (900, 600)).into_drawing_area(),
        series,
        title,
        x_desc,
        y_desc,
        y,
    )?;
    let png = format!("{base}.png");
    draw::draw(
        &BitMapBackend::new(&png, (900, 600)).into_drawing_area(),
        series,
        title,
        x_desc,
        y_desc,
        y,
    )?;
    Ok(vec![svg, png])
}

#[cfg(test)]
mod tests;
