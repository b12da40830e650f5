//! Per-stage timing with a clock supplied by the host: [`Times`] is the
//! solver's [`StageTimer`] plus two rows of the scene's own (the emitter and
//! the cell-order sort). Natively the clock can be `std::time::Instant`; in
//! the browser it is `performance.now()`. [`NoClock`] times nothing.

use spatium::sph::{Stage, StageTimer};

/// Milliseconds from some fixed origin.
pub trait Clock {
    /// The current time in milliseconds.
    fn now_ms(&mut self) -> f64;
}

/// A clock that always reads 0: for untimed runs (tests, checksums).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoClock;

impl Clock for NoClock {
    fn now_ms(&mut self) -> f64 {
        0.0
    }
}

/// What a row of the timing table measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// A stage of [`spatium::sph::Fluid::step`].
    Stage(Stage),
    /// The pipe emitting its layers.
    Emit,
    /// Renumbering the particles in cell order.
    Sort,
}

/// Number of rows: the solver's stages, then the emitter and the sort.
pub const ROWS: usize = Stage::ALL.len() + 2;

impl Row {
    /// Every row, in table order.
    pub const ALL: [Row; ROWS] = [
        Row::Stage(Stage::NeighborSearch),
        Row::Stage(Stage::Density),
        Row::Stage(Stage::Normals),
        Row::Stage(Stage::Forces),
        Row::Stage(Stage::Integration),
        Row::Stage(Stage::Collisions),
        Row::Emit,
        Row::Sort,
    ];

    /// The row's index in [`Row::ALL`].
    pub const fn index(self) -> usize {
        match self {
            Row::Stage(s) => s.index(),
            Row::Emit => Stage::ALL.len(),
            Row::Sort => Stage::ALL.len() + 1,
        }
    }

    /// The row's label.
    pub const fn name(self) -> &'static str {
        match self {
            Row::Stage(Stage::Collisions) => "broad phase + collisions",
            Row::Stage(s) => s.name(),
            Row::Emit => "emitter",
            Row::Sort => "cell-order sort",
        }
    }
}

/// Sums the milliseconds spent in each [`Row`] since the last
/// [`take`](Self::take).
#[derive(Clone, Debug, Default)]
pub struct Times<C> {
    clock: C,
    open: Option<(usize, f64)>,
    ms: [f64; ROWS],
}

impl<C: Clock> Times<C> {
    /// Zero times over `clock`.
    pub fn new(clock: C) -> Self {
        Self {
            clock,
            open: None,
            ms: [0.0; ROWS],
        }
    }

    /// `row` starts (a row left open is closed first).
    pub fn begin_row(&mut self, row: Row) {
        self.end_row();
        self.open = Some((row.index(), self.clock.now_ms()));
    }

    /// The row begun last ends.
    pub fn end_row(&mut self) {
        if let Some((k, t)) = self.open.take() {
            self.ms[k] += self.clock.now_ms() - t;
        }
    }

    /// Milliseconds per row since the last call, in [`Row::ALL`] order;
    /// resets them.
    pub fn take(&mut self) -> [f64; ROWS] {
        core::mem::replace(&mut self.ms, [0.0; ROWS])
    }

    /// Milliseconds per row so far, without resetting.
    pub fn peek(&self) -> &[f64; ROWS] {
        &self.ms
    }
}

impl<C: Clock> StageTimer for Times<C> {
    fn begin(&mut self, stage: Stage) {
        self.begin_row(Row::Stage(stage));
    }

    fn end(&mut self) {
        self.end_row();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock that advances 1 ms per reading.
    struct Tick(f64);

    impl Clock for Tick {
        fn now_ms(&mut self) -> f64 {
            self.0 += 1.0;
            self.0
        }
    }

    #[test]
    fn rows_are_indexed_in_table_order() {
        for (i, r) in Row::ALL.into_iter().enumerate() {
            assert_eq!(r.index(), i, "{r:?}");
        }
    }

    #[test]
    fn times_sum_per_row_and_reset() {
        let mut t = Times::new(Tick(0.0));
        t.begin(Stage::Density);
        t.end();
        t.begin_row(Row::Emit);
        t.end_row();
        t.begin(Stage::Density);
        t.end();
        let ms = t.take();
        assert_eq!(ms[Row::Stage(Stage::Density).index()], 2.0);
        assert_eq!(ms[Row::Emit.index()], 1.0);
        assert_eq!(t.take(), [0.0; ROWS]);
    }
}
