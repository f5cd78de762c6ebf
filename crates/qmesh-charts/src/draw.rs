//! One chart on one plotters backend: the axes for the y scale asked, a
//! line and its points per series, the legend. The same drawing goes to
//! the SVG and the PNG backend.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::{ChartError, Line, YAxis};

pub(crate) fn draw<B: DrawingBackend>(
    root: &DrawingArea<B, Shift>,
    series: &[Line],
    title: &str,
    x_desc: &str,
    y_desc: &str,
    y: YAxis,
) -> Result<(), ChartError> {
    let fail = |e: &dyn std::fmt::Display| ChartError::Draw {
        figure: y_desc.to_string(),
        why: e.to_string(),
    };
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
