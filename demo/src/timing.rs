//! Wall-clock timing of the solver's stages ([`Timer`], a [`StageTimer`])
//! and the per-step log with its table and CSV.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use spatium::sph::{Stage, StageTimer};

/// Number of solver stages.
pub const STAGES: usize = Stage::ALL.len();

/// The report's name of a stage.
pub fn stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::Collisions => "broad phase + collisions",
        other => other.name(),
    }
}

/// The index of `stage` in [`Stage::ALL`].
fn slot(stage: Stage) -> usize {
    match stage {
        Stage::NeighborSearch => 0,
        Stage::Density => 1,
        Stage::Normals => 2,
        Stage::Forces => 3,
        Stage::Integration => 4,
        Stage::Collisions => 5,
    }
}

/// Sums the seconds spent in each stage since the last
/// [`take`](Self::take).
#[derive(Debug, Default)]
pub struct Timer {
    open: Option<(usize, Instant)>,
    seconds: [f64; STAGES],
}

impl Timer {
    /// The seconds per stage since the last call, in [`Stage::ALL`] order;
    /// resets them.
    pub fn take(&mut self) -> [f64; STAGES] {
        core::mem::take(&mut self.seconds)
    }
}

impl StageTimer for Timer {
    fn begin(&mut self, stage: Stage) {
        self.open = Some((slot(stage), Instant::now()));
    }

    fn end(&mut self) {
        if let Some((k, t)) = self.open.take() {
            self.seconds[k] += t.elapsed().as_secs_f64();
        }
    }
}

/// What one step took, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTiming {
    /// Particles in the fluid during the step.
    pub particles: usize,
    /// Seconds per solver stage, in [`Stage::ALL`] order.
    pub stages: [f64; STAGES],
    /// Seconds in the emitter.
    pub emitter: f64,
    /// Seconds renumbering the particles into cell order (0 if not due).
    pub sort: f64,
    /// Seconds writing the frame taken after the step (0 if none).
    pub image: f64,
}

impl StepTiming {
    /// Emitter plus solver seconds.
    pub fn simulation(&self) -> f64 {
        self.emitter + self.sort + self.stages.iter().sum::<f64>()
    }
}

/// Prints the per-stage table: total seconds, milliseconds per step and
/// share of the simulation time, then the emitter, image writing and the
/// wall total.
pub fn print_table(log: &[StepTiming], wall: f64) {
    let steps = log.len().max(1) as f64;
    let mut totals = [0.0f64; STAGES];
    for t in log {
        for (sum, s) in totals.iter_mut().zip(t.stages) {
            *sum += s;
        }
    }
    let emitter: f64 = log.iter().map(|t| t.emitter).sum();
    let sort: f64 = log.iter().map(|t| t.sort).sum();
    let images: f64 = log.iter().map(|t| t.image).sum();
    let simulation = totals.iter().sum::<f64>() + emitter + sort;
    let share = |s: f64| {
        if simulation > 0.0 {
            format!("{:5.1} %", 100.0 * s / simulation)
        } else {
            "-".to_string()
        }
    };
    say!(
        "| {:<26} | {:>10} | {:>9} | {:>10} |",
        "stage",
        "total (s)",
        "ms/step",
        "of sim."
    );
    say!("|{:-<28}|{:->12}|{:->11}|{:->12}|", "", ":", ":", ":");
    let row = |name: &str, s: f64, of: String| {
        say!(
            "| {name:<26} | {s:>10.3} | {:>9.3} | {of:>10} |",
            1e3 * s / steps
        );
    };
    for (stage, s) in Stage::ALL.iter().zip(totals) {
        row(stage_name(*stage), s, share(s));
    }
    row("emitter", emitter, share(emitter));
    row("cell sort", sort, share(sort));
    row("simulation (sum of above)", simulation, share(simulation));
    row("image writing", images, "-".to_string());
    row("wall total", wall, "-".to_string());
}

/// Writes the log as CSV: one row per step, milliseconds per stage.
///
/// # Errors
/// The file's I/O error.
pub fn write_csv(path: &Path, log: &[StepTiming]) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    write!(w, "step,particles")?;
    for stage in Stage::ALL {
        write!(w, ",{}_ms", column(stage))?;
    }
    writeln!(w, ",emitter_ms,sort_ms,simulation_ms,image_ms")?;
    for (i, t) in log.iter().enumerate() {
        write!(w, "{},{}", i + 1, t.particles)?;
        for s in t.stages {
            write!(w, ",{:.4}", 1e3 * s)?;
        }
        writeln!(
            w,
            ",{:.4},{:.4},{:.4},{:.4}",
            1e3 * t.emitter,
            1e3 * t.sort,
            1e3 * t.simulation(),
            1e3 * t.image
        )?;
    }
    w.flush()
}

/// A CSV column name for a stage.
fn column(stage: Stage) -> &'static str {
    match stage {
        Stage::NeighborSearch => "neighbour_search",
        Stage::Density => "density",
        Stage::Normals => "normals",
        Stage::Forces => "forces",
        Stage::Integration => "integration",
        Stage::Collisions => "collisions",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_stage_order() {
        for (k, stage) in Stage::ALL.into_iter().enumerate() {
            assert_eq!(slot(stage), k);
        }
    }

    #[test]
    fn timer_sums_stages_until_taken() {
        let mut t = Timer::default();
        t.begin(Stage::Density);
        t.end();
        t.begin(Stage::Collisions);
        std::thread::sleep(core::time::Duration::from_millis(2));
        t.end();
        t.end(); // no stage open: ignored
        let s = t.take();
        assert!(s[5] >= 0.002);
        assert!(s[0] == 0.0 && s[1] >= 0.0);
        assert_eq!(t.take(), [0.0; STAGES]);
    }
}
