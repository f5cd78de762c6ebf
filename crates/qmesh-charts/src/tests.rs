//! The charts as files: both formats written, labels in the SVG, the same
//! bytes for the same lines (qreport's and the sweeps' figures are
//! compared across builds), the backend's error named by its figure.

use super::*;

fn lines() -> Vec<Line> {
    vec![
        (
            "fcfs/flat".to_string(),
            vec![(0.5, 1.0), (0.7, 3.5), (0.9, 40.0)],
        ),
        (
            "easy/flat".to_string(),
            vec![(0.5, 1.0), (0.75, 2.0), (0.95, 12.0)],
        ),
    ]
}

#[test]
fn a_chart_is_written_as_svg_and_png_with_its_labels() {
    let dir = tempfile::tempdir().unwrap();
    for (name, y) in [
        ("log", YAxis::Log),
        ("fraction", YAxis::Fraction),
        ("linear", YAxis::Linear),
    ] {
        let base = dir.path().join(name).display().to_string();
        let written = chart(&base, &lines(), "a title", "x", "y", y).unwrap();
        assert_eq!(written, [format!("{base}.svg"), format!("{base}.png")]);
        let svg = std::fs::read_to_string(&written[0]).unwrap();
        for text in ["<svg", "a title", "fcfs/flat", "easy/flat"] {
            assert!(svg.contains(text), "{name}: {text}");
        }
        let png = std::fs::read(&written[1]).unwrap();
        assert_eq!(&png[1..4], b"PNG", "{name}");
    }
}

#[test]
fn the_same_lines_draw_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let draw = |name: &str| {
        let base = dir.path().join(name).display().to_string();
        chart(&base, &lines(), "t", "x", "y", YAxis::Log)
            .unwrap()
            .iter()
            .map(|f| std::fs::read(f).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(draw("a"), draw("b"));
}

#[test]
fn a_chart_that_cannot_be_written_names_its_figure() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("missing").join("fig").display().to_string();
    let err = chart(&base, &lines(), "t", "x", "wait (hours)", YAxis::Linear).unwrap_err();
    assert!(matches!(&err, ChartError::Draw { figure, .. } if figure == "wait (hours)"));
    assert!(
        err.to_string()
            .starts_with("drawing the wait (hours) figure: "),
        "{err}"
    );
}
