//! The timing plot: milliseconds per step of each stage against the step,
//! as SVG.

use std::path::Path;

use plotters::prelude::*;
use spatium::sph::Stage;

use crate::timing::{StepTiming, stage_name};

/// Steps averaged per plotted point (a moving window keeps the lines
/// readable; the CSV has every step).
fn window(steps: usize) -> usize {
    (steps / 120).max(1)
}

/// Plots `log` to `path`; `title` names the run.
///
/// # Errors
/// The drawing backend's error, as a message.
pub fn timings(path: &Path, log: &[StepTiming], title: &str) -> Result<(), String> {
    draw(path, log, title).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Line colours: the six stages, the emitter, the cell sort, the step total.
const COLOURS: [RGBColor; 9] = [
    RGBColor(188, 189, 34),
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(0, 0, 0),
];

/// One plotted series: its name and per-step milliseconds.
type Series = (String, Vec<f64>);

fn draw(path: &Path, log: &[StepTiming], title: &str) -> Result<(), Box<dyn core::error::Error>> {
    let mut series: Vec<Series> = Stage::ALL
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let ms = log.iter().map(|t| 1e3 * t.stages[k]).collect();
            (stage_name(*s).to_string(), ms)
        })
        .collect();
    series.push((
        "emitter".to_string(),
        log.iter().map(|t| 1e3 * t.emitter).collect(),
    ));
    series.push((
        "cell sort".to_string(),
        log.iter().map(|t| 1e3 * t.sort).collect(),
    ));
    series.push((
        "step total".to_string(),
        log.iter().map(|t| 1e3 * t.simulation()).collect(),
    ));
    let w = window(log.len());
    let points: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|(_, ms)| {
            ms.chunks(w)
                .enumerate()
                .map(|(i, c)| {
                    let step = (i * w) as f64 + 0.5 * (c.len() + 1) as f64;
                    (step, c.iter().sum::<f64>() / c.len() as f64)
                })
                .collect()
        })
        .collect();
    let ymax = points
        .iter()
        .flatten()
        .map(|p| p.1)
        .fold(0.0f64, f64::max)
        .max(1e-3)
        * 1.05;
    let xmax = log.len().max(1) as f64;

    let root = SVGBackend::new(path, (1100, 620)).into_drawing_area();
    root.fill(&WHITE)?;
    let chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .right_y_label_area_size(70)
        .build_cartesian_2d(0.0..xmax, 0.0..ymax)?;
    // The particle count on the right-hand axis: the cost follows it.
    let particles: Vec<(f64, f64)> = log
        .iter()
        .enumerate()
        .map(|(i, t)| ((i + 1) as f64, t.particles as f64))
        .collect();
    let pmax = particles.iter().map(|p| p.1).fold(1.0f64, f64::max) * 1.05;
    let mut chart = chart.set_secondary_coord(0.0..xmax, 0.0..pmax);
    let unit = if w > 1 {
        format!("ms per step (mean of {w} steps)")
    } else {
        "ms per step".to_string()
    };
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .x_desc("step")
        .y_desc(unit)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    chart
        .configure_secondary_axes()
        .y_desc("particles")
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    let grey = RGBColor(150, 150, 150);
    chart
        .draw_secondary_series(DashedLineSeries::new(particles, 6, 4, grey.stroke_width(1)))?
        .label("particles (right axis)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey));
    for (k, ((name, _), pts)) in series.iter().zip(points).enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let width = if name == "step total" { 3 } else { 2 };
        chart
            .draw_series(LineSeries::new(pts, colour.stroke_width(width)))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
