//! The one plot helper of the reports: line charts (with points) written to
//! SVG by plotters, one or more [`Panel`]s in a grid, each axis linear or
//! logarithmic. A series keeps its colour in every panel of a figure (the
//! colour follows its name's first appearance).

use core::error::Error;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

/// Axis scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Linear, from 0 (or the smallest value, if negative).
    Linear,
    /// Logarithmic; points with a non-positive coordinate are left out.
    Log,
}

/// One line of a panel.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// `(x, y)` points, drawn in order.
    pub points: Vec<(f64, f64)>,
    /// Thicker line (spatium's own structures against the peers).
    pub bold: bool,
}

impl Series {
    /// A series drawn with the normal line width.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            name: name.into(),
            points,
            bold: false,
        }
    }

    /// Groups `(series, x, y)` triples into series, in first-seen order.
    pub fn group(triples: impl IntoIterator<Item = (String, f64, f64)>) -> Vec<Series> {
        let mut out: Vec<Series> = Vec::new();
        for (name, x, y) in triples {
            match out.iter_mut().find(|s| s.name == name) {
                Some(s) => s.points.push((x, y)),
                None => out.push(Series::new(name, vec![(x, y)])),
            }
        }
        out
    }
}

/// One chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    /// Caption above the chart.
    pub caption: String,
    /// x axis label.
    pub x_desc: String,
    /// y axis label.
    pub y_desc: String,
    /// x axis scale.
    pub x: Scale,
    /// y axis scale.
    pub y: Scale,
    /// The lines.
    pub series: Vec<Series>,
}

impl Panel {
    /// A log-log panel.
    pub fn log_log(
        caption: impl Into<String>,
        x_desc: impl Into<String>,
        y_desc: impl Into<String>,
        series: Vec<Series>,
    ) -> Self {
        Self {
            caption: caption.into(),
            x_desc: x_desc.into(),
            y_desc: y_desc.into(),
            x: Scale::Log,
            y: Scale::Log,
            series,
        }
    }
}

/// A tick label: `1e5` style from 10⁴ on, fewer decimals as values grow.
pub fn label(v: f64) -> String {
    let a = v.abs();
    if a >= 1e4 {
        format!("{v:.0e}")
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn bounds(points: impl Iterator<Item = f64>, scale: Scale) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in points {
        if v.is_finite() && (scale == Scale::Linear || v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    if lo > hi {
        return (1.0, 10.0);
    }
    match scale {
        Scale::Log => (lo / 1.5, hi * 1.5),
        Scale::Linear => {
            let lo = lo.min(0.0);
            let hi = if hi > lo { hi } else { lo + 1.0 };
            (lo, hi + 0.05 * (hi - lo))
        }
    }
}

macro_rules! draw_panel {
    ($area:expr, $panel:expr, $colour:expr, $xr:expr, $yr:expr) => {{
        let p = $panel;
        let mut chart = ChartBuilder::on($area)
            .caption(&p.caption, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(65)
            .build_cartesian_2d($xr, $yr)?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .x_desc(p.x_desc.as_str())
            .y_desc(p.y_desc.as_str())
            .x_label_formatter(&|x| label(*x))
            .y_label_formatter(&|y| label(*y))
            .draw()?;
        for s in &p.series {
            let keep = |&(x, y): &(f64, f64)| {
                x.is_finite()
                    && y.is_finite()
                    && (p.x == Scale::Linear || x > 0.0)
                    && (p.y == Scale::Linear || y > 0.0)
            };
            let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(keep).collect();
            if pts.is_empty() {
                continue;
            }
            let colour = $colour(&s.name);
            let width = if s.bold { 3 } else { 1 };
            chart
                .draw_series(LineSeries::new(pts, colour.stroke_width(width)).point_size(3))?
                .label(s.name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 12))
            .draw()?;
    }};
}

fn panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    p: &Panel,
    colour: &dyn Fn(&str) -> RGBAColor,
) -> Result<(), Box<dyn Error>> {
    let xs = bounds(
        p.series.iter().flat_map(|s| s.points.iter().map(|q| q.0)),
        p.x,
    );
    let ys = bounds(
        p.series.iter().flat_map(|s| s.points.iter().map(|q| q.1)),
        p.y,
    );
    match (p.x, p.y) {
        (Scale::Log, Scale::Log) => draw_panel!(
            area,
            p,
            colour,
            (xs.0..xs.1).log_scale(),
            (ys.0..ys.1).log_scale()
        ),
        (Scale::Log, Scale::Linear) => {
            draw_panel!(area, p, colour, (xs.0..xs.1).log_scale(), ys.0..ys.1)
        }
        (Scale::Linear, Scale::Log) => {
            draw_panel!(area, p, colour, xs.0..xs.1, (ys.0..ys.1).log_scale())
        }
        (Scale::Linear, Scale::Linear) => draw_panel!(area, p, colour, xs.0..xs.1, ys.0..ys.1),
    }
    Ok(())
}

/// Writes `panels` to the SVG file `path`, `size` pixels, `columns` panels
/// per row, under an optional `title`.
///
/// # Errors
///
/// Whatever plotters reports (typically the file cannot be written).
pub fn svg(
    path: &Path,
    size: (u32, u32),
    title: Option<&str>,
    columns: usize,
    panels: &[Panel],
) -> Result<(), Box<dyn Error>> {
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    let root = match title {
        Some(t) => root.titled(t, ("sans-serif", 22))?,
        None => root,
    };
    let mut names: Vec<&str> = Vec::new();
    for s in panels.iter().flat_map(|p| &p.series) {
        if !names.contains(&s.name.as_str()) {
            names.push(&s.name);
        }
    }
    let colour = |name: &str| -> RGBAColor {
        let k = names.iter().position(|n| *n == name).unwrap_or(0);
        Palette99::pick(k).to_rgba()
    };
    let columns = columns.max(1);
    let rows = panels.len().div_ceil(columns).max(1);
    let areas = root.split_evenly((rows, columns));
    for (area, p) in areas.iter().zip(panels) {
        panel(area, p, &colour)?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_in_first_seen_order() {
        let s = Series::group([
            ("b".to_owned(), 1.0, 2.0),
            ("a".to_owned(), 1.0, 3.0),
            ("b".to_owned(), 2.0, 4.0),
        ]);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "b");
        assert_eq!(s[0].points, vec![(1.0, 2.0), (2.0, 4.0)]);
    }

    #[test]
    fn writes_an_svg() {
        let dir = std::env::temp_dir().join(format!("spatium-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.svg");
        let series = vec![
            Series::new("x", vec![(10.0, 1.0), (100.0, 0.5)]),
            Series::new("empty", vec![(0.0, 0.0)]),
        ];
        let mut lin = Panel::log_log("lin", "x", "y", series.clone());
        lin.x = Scale::Linear;
        lin.y = Scale::Linear;
        svg(
            &path,
            (600, 300),
            Some("t"),
            2,
            &[Panel::log_log("log", "N", "ms", series), lin],
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("<svg"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
