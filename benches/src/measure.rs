//! The one way the reports measure time.
//!
//! * [`time`] runs a closure once and returns its result with a [`Timing`]
//!   ([`Stopwatch`] reads the same clocks for phases inside a step):
//!   the calling thread's CPU time (`cpu_time::ThreadTime`, the reported
//!   figure: the machine may be shared, and waiting for a core is not the
//!   code's cost) and the wall-clock time beside it.
//! * [`median`] is the one median: of the values sorted, the middle one for
//!   an odd count and the mean of the two middle ones for an even count.
//!   NaN is refused (a NaN time is a bug, not a sample), and so is an empty
//!   sample.
//! * [`Samples`] collects timings and gives their medians, minima and
//!   maxima; [`Repeat`] is the protocol of the one-shot workloads (at least
//!   `min_runs` runs and at least `min_time` of them, at most `max_runs`).
//! * [`Steady`] is the protocol of the stepped workloads (a broad phase
//!   moved and queried every step): after the build, steps `0..skip` run
//!   untimed-for-the-median (warm-up: a refitted tree degrades step by
//!   step, an incremental grid settles), and the median is taken over steps
//!   `skip..skip + take`. [`Steady::PAPER`] = steps 10–30 after the build.

use core::time::Duration;
use std::time::Instant;

use cpu_time::ThreadTime;

/// One timed run: the thread's CPU time and the wall-clock time, seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timing {
    /// Thread CPU time, seconds.
    pub cpu_s: f64,
    /// Wall-clock time, seconds.
    pub wall_s: f64,
}

impl Timing {
    /// CPU time in milliseconds.
    pub fn cpu_ms(&self) -> f64 {
        self.cpu_s * 1e3
    }

    /// Wall-clock time in milliseconds.
    pub fn wall_ms(&self) -> f64 {
        self.wall_s * 1e3
    }
}

/// A running clock: the thread's CPU time and the wall-clock time since
/// [`Stopwatch::start`], for timing parts of a step (phases) with the same
/// clocks as [`time`].
#[derive(Debug)]
pub struct Stopwatch {
    cpu: ThreadTime,
    wall: Instant,
}

impl Stopwatch {
    /// Starts both clocks.
    pub fn start() -> Self {
        Self {
            cpu: ThreadTime::now(),
            wall: Instant::now(),
        }
    }

    /// Time since the start.
    pub fn elapsed(&self) -> Timing {
        let wall = self.wall.elapsed();
        let cpu = self.cpu.elapsed();
        Timing {
            cpu_s: cpu.as_secs_f64(),
            wall_s: wall.as_secs_f64(),
        }
    }
}

/// Runs `f` once on the calling thread and times it. Never inlined, so
/// that the optimiser cannot move the work across the clock reads.
#[inline(never)]
pub fn time<R>(f: impl FnOnce() -> R) -> (R, Timing) {
    let clock = Stopwatch::start();
    let r = f();
    (r, clock.elapsed())
}

/// The median of `v`: the middle value of `v` sorted, or for an even count
/// the mean of the two middle values.
///
/// # Panics
///
/// If `v` is empty or holds a NaN.
pub fn median(v: &[f64]) -> f64 {
    assert!(!v.is_empty(), "median of an empty sample");
    assert!(v.iter().all(|x| !x.is_nan()), "median of a sample with NaN");
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len();
    if m % 2 == 1 {
        s[m / 2]
    } else {
        0.5 * (s[m / 2 - 1] + s[m / 2])
    }
}

/// [`median`] of `v`, or `None` for an empty sample (a structure that
/// refused every run).
///
/// # Panics
///
/// If `v` holds a NaN.
pub fn median_opt(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| median(v))
}

/// Timings of repeated runs of one workload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Samples {
    /// Every run, in order.
    pub runs: Vec<Timing>,
}

impl Samples {
    /// Adds a run.
    pub fn push(&mut self, t: Timing) {
        self.runs.push(t);
    }

    /// Number of runs.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// `true` without runs.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// CPU times, milliseconds.
    pub fn cpu_ms(&self) -> Vec<f64> {
        self.runs.iter().map(Timing::cpu_ms).collect()
    }

    /// Wall-clock times, milliseconds.
    pub fn wall_ms(&self) -> Vec<f64> {
        self.runs.iter().map(Timing::wall_ms).collect()
    }

    /// [`median`] CPU time, milliseconds.
    pub fn median_cpu_ms(&self) -> f64 {
        median(&self.cpu_ms())
    }

    /// [`median`] wall-clock time, milliseconds.
    pub fn median_wall_ms(&self) -> f64 {
        median(&self.wall_ms())
    }

    /// Smallest and largest CPU time, milliseconds.
    pub fn cpu_range_ms(&self) -> (f64, f64) {
        range(&self.cpu_ms())
    }

    /// Smallest and largest wall-clock time, milliseconds.
    pub fn wall_range_ms(&self) -> (f64, f64) {
        range(&self.wall_ms())
    }
}

fn range(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}

/// How often a one-shot workload is repeated: at least `min_runs` runs and
/// at least `min_time` (wall-clock) of runs, at most `max_runs` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repeat {
    /// Fewest runs (≥ 5 wherever a report states "median of ≥ 5").
    pub min_runs: usize,
    /// Least total wall-clock time of the runs.
    pub min_time: Duration,
    /// Most runs.
    pub max_runs: usize,
}

impl Repeat {
    /// The reports' protocol: ≥ 5 runs and ≥ 1 s of runs, at most 51.
    pub const REPORT: Repeat = Repeat {
        min_runs: 5,
        min_time: Duration::from_secs(1),
        max_runs: 51,
    };

    /// Runs `f` as the protocol says, timing every run.
    pub fn run<R>(&self, mut f: impl FnMut() -> R) -> Samples {
        let mut s = Samples::default();
        let start = Instant::now();
        while s.len() < self.min_runs
            || (start.elapsed() < self.min_time && s.len() < self.max_runs)
        {
            let (r, t) = time(&mut f);
            core::hint::black_box(r);
            s.push(t);
        }
        s
    }
}

/// The steady-state protocol of a stepped workload: after the build, steps
/// `0..skip` are warm-up, and the median is taken over steps
/// `skip..skip + take`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Steady {
    /// Steps after the build that are not part of the median.
    pub skip: usize,
    /// Steps timed for the median, following the skipped ones.
    pub take: usize,
}

/// What [`Steady::run`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyRun<R> {
    /// Timings of steps `skip..skip + take` (the median is over these).
    pub timed: Samples,
    /// Timings of every step, the warm-up included.
    pub all: Vec<Timing>,
    /// What every step returned, the warm-up included.
    pub outputs: Vec<R>,
}

impl<R> SteadyRun<R> {
    /// [`median`] CPU time of the timed steps, milliseconds.
    pub fn median_cpu_ms(&self) -> f64 {
        self.timed.median_cpu_ms()
    }
}

impl Steady {
    /// Median of steps 10–30 after the build (21 steps after 10 of
    /// warm-up): a refitted tree has degraded for 10 steps, an incremental
    /// structure has settled.
    pub const PAPER: Steady = Steady { skip: 10, take: 21 };

    /// Total steps run.
    pub fn steps(&self) -> usize {
        self.skip + self.take
    }

    /// First and last timed step, counted from 0 = the first step after
    /// the build (e.g. `(10, 30)`).
    pub fn window(&self) -> (usize, usize) {
        (self.skip, self.skip + self.take.max(1) - 1)
    }

    /// The protocol in words, for the reports (e.g. "median of steps 10–30
    /// after the build").
    pub fn describe(&self) -> String {
        let (a, b) = self.window();
        format!("median of steps {a}–{b} after the build")
    }

    /// Runs steps `0..self.steps()`. `step(k)` does step `k` and returns
    /// its output with the [`Timing`] of what it timed (typically the
    /// structure's update and query through [`time`], with the scene's own
    /// motion outside); only steps `skip..` count for the median.
    ///
    /// `stop(&timed)` is asked after each timed step and ends the run early
    /// when it returns `true` (a time budget); pass `|_| false` for none.
    pub fn run<R>(
        &self,
        mut step: impl FnMut(usize) -> (R, Timing),
        mut stop: impl FnMut(&Samples) -> bool,
    ) -> SteadyRun<R> {
        let mut out = SteadyRun {
            timed: Samples::default(),
            all: Vec::with_capacity(self.steps()),
            outputs: Vec::with_capacity(self.steps()),
        };
        for k in 0..self.steps() {
            let (r, t) = step(k);
            out.all.push(t);
            out.outputs.push(r);
            if k >= self.skip {
                out.timed.push(t);
                if stop(&out.timed) {
                    break;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_and_order() {
        assert_eq!(median(&[3.0]), 3.0);
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[1.0, 1.0, 9.0, 9.0]), 5.0);
        assert_eq!(median(&[-1.0, f64::INFINITY, 2.0]), 2.0);
        assert_eq!(median(&[2.0, 1.0, 5.0, 4.0, 3.0]), 3.0);
    }

    #[test]
    fn median_opt_of_nothing_is_none() {
        assert_eq!(median_opt(&[]), None);
        assert_eq!(median_opt(&[2.0, 4.0]), Some(3.0));
    }

    #[test]
    #[should_panic(expected = "empty")]
    fn median_of_nothing_panics() {
        median(&[]);
    }

    #[test]
    #[should_panic(expected = "NaN")]
    fn median_refuses_nan() {
        median(&[1.0, f64::NAN, 2.0]);
    }

    fn fake(ms: f64) -> Timing {
        Timing {
            cpu_s: ms / 1e3,
            wall_s: 2.0 * ms / 1e3,
        }
    }

    #[test]
    fn steady_times_only_the_window() {
        let s = Steady { skip: 10, take: 21 };
        assert_eq!(s.window(), (10, 30));
        assert_eq!(s.describe(), "median of steps 10–30 after the build");
        // Step k takes k ms: the median of steps 10..=30 is 20.
        let r = s.run(|k| (k, fake(k as f64)), |_| false);
        assert_eq!(r.outputs, (0..31).collect::<Vec<_>>());
        assert_eq!(r.all.len(), 31);
        assert_eq!(r.timed.len(), 21);
        assert!((r.median_cpu_ms() - 20.0).abs() < 1e-9);
        assert!((r.timed.median_wall_ms() - 40.0).abs() < 1e-9);
        assert_eq!(r.timed.cpu_range_ms().0.round(), 10.0);
        assert_eq!(r.timed.cpu_range_ms().1.round(), 30.0);
    }

    #[test]
    fn steady_stops_on_budget_after_warm_up() {
        let s = Steady { skip: 3, take: 10 };
        let r = s.run(|k| ((), fake(k as f64)), |t| t.len() == 4);
        assert_eq!(r.all.len(), 7);
        assert_eq!(r.timed.len(), 4);
        // Steps 3, 4, 5, 6: even count, mean of the middle two.
        assert!((r.median_cpu_ms() - 4.5).abs() < 1e-9);
    }

    #[test]
    fn repeat_runs_at_least_min_runs() {
        let rep = Repeat {
            min_runs: 5,
            min_time: Duration::ZERO,
            max_runs: 51,
        };
        let mut calls = 0;
        let s = rep.run(|| calls += 1);
        assert_eq!(calls, 5);
        assert_eq!(s.len(), 5);
        assert!(s.runs.iter().all(|t| t.cpu_s >= 0.0 && t.wall_s >= 0.0));
    }

    #[test]
    fn time_returns_the_result() {
        let (r, t) = time(|| (0..1000u64).sum::<u64>());
        assert_eq!(r, 499_500);
        assert!(t.cpu_s >= 0.0 && t.wall_s >= 0.0);
    }
}
