//! Per-stage GPU times from timestamp queries.

/// A stage of the GPU step, as timed by [`StageTimes`] (the seed's
/// Algorithm 1: partition, sort, offsets, density, normals, force,
/// integration).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Cell and bucket of each particle (counting sort: with the atomic
    /// histogram; bitonic: with the key setup).
    Cells,
    /// Bucket start offsets (counting sort: the parallel prefix scan;
    /// bitonic: the run boundaries after the sort).
    Offsets,
    /// The sort itself (counting: the scatter; bitonic: the sorting network
    /// and the gather into bucket order).
    Sort,
    /// Density and pressure.
    Density,
    /// Surface normals (skipped when surface tension is off).
    Normals,
    /// Pressure, viscosity, surface tension and gravity.
    Forces,
    /// Integration and the box walls.
    Integrate,
}

impl Stage {
    /// Every stage, in pipeline order.
    pub const ALL: [Stage; 7] = [
        Stage::Cells,
        Stage::Offsets,
        Stage::Sort,
        Stage::Density,
        Stage::Normals,
        Stage::Forces,
        Stage::Integrate,
    ];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Cells => "cells",
            Stage::Offsets => "offsets",
            Stage::Sort => "sort",
            Stage::Density => "density",
            Stage::Normals => "normals",
            Stage::Forces => "forces",
            Stage::Integrate => "integrate",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// GPU time spent per stage, summed over the steps taken while timing was
/// on (from `TIMESTAMP_QUERY`; empty without it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    nanos: [f64; 7],
    steps: u64,
}

impl StageTimes {
    /// Total nanoseconds spent in `stage`.
    pub fn total_ns(&self, stage: Stage) -> f64 {
        self.nanos[stage.index()]
    }

    /// Mean milliseconds per step spent in `stage` (0 before any timed
    /// step).
    pub fn ms_per_step(&self, stage: Stage) -> f64 {
        if self.steps == 0 {
            0.0
        } else {
            self.nanos[stage.index()] / self.steps as f64 / 1.0e6
        }
    }

    /// Mean GPU milliseconds per step over all stages.
    pub fn total_ms_per_step(&self) -> f64 {
        Stage::ALL.iter().map(|&s| self.ms_per_step(s)).sum()
    }

    /// Steps timed.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    pub(crate) fn add(&mut self, stage: Stage, ns: f64) {
        self.nanos[stage.index()] += ns;
    }

    pub(crate) fn add_steps(&mut self, steps: u64) {
        self.steps += steps;
    }
}
