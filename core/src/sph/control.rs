//! Time-step control and the stability monitor.
//!
//! Every step that reaches its end ([`Fluid::step`] and every
//! `par_step*` form) leaves a [`StepReport`] in the fluid
//! ([`Fluid::last_report`]): the step's largest speed, density ratios and
//! acceleration, the `Δt` it used and the three classic bounds on `Δt`
//! (acoustic, force, viscous). The fluid's [`StepControl`]
//! ([`Fluid::set_control`]) then
//!
//! * checks the report against two bounds, the largest density ratio
//!   `ρ/ρ₀` and the largest Courant number `|v|_max·Δt/h`: a step past
//!   either returns [`Error::Diverged`] and puts the particles back where
//!   the step began (the report stays readable);
//! * optionally sets the next step's `Δt` from the report
//!   ([`StepControl::adaptive`]).
//!
//! The report is gathered in the pass that checks the state for
//! finiteness at the end of a step (one `O(N)` pass, as before), as
//! maxima and minima, which do not depend on the order the particles are
//! visited in: the parallel step's report (hence its adaptive `Δt`) is
//! the same for every executor and number of workers.
//!
//! The same figures for a state of your own (the GPU solver's, a
//! snapshot's): [`StepReport::measure`].

use super::{EquationOfState, Fluid, ParticleState, SphParams};
use crate::error::Error;
use crate::geom::Point;
use crate::storage::Storage;

/// The stability figures of one step (see [the module](self)).
///
/// Speeds are the velocities at the end of the step (after the walls and
/// obstacles); densities and accelerations are those of the step's last
/// force evaluation (with leapfrog, the half step's), as
/// [`ParticleState`] holds them. The bounds on `Δt`, with `h` the
/// smoothing length, `c` the equation of state's speed of sound at `ρ₀`
/// ([`SphParams::speed_of_sound`]), `v_max` [`max_speed`](Self::max_speed)
/// and `a_max` [`max_acceleration`](Self::max_acceleration):
///
/// * acoustic (CFL): `0.4·h/(c + v_max)`;
/// * force: `0.25·√(h/a_max)`, [`f32::INFINITY`] when `a_max` is zero;
/// * viscous: `0.125·h²·ρ₀/μ`, [`f32::INFINITY`] when the viscosity `μ`
///   is zero.
///
/// Infinite bounds serialise as whatever the format makes of an infinite
/// `f32` (JSON: `null`, which does not read back as a number).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StepReport {
    /// Largest particle speed `|v|` at the end of the step.
    pub max_speed: f32,
    /// Largest density ratio `ρ/ρ₀` of the last force evaluation.
    pub max_density_ratio: f32,
    /// Smallest density ratio `ρ/ρ₀` of the last force evaluation.
    pub min_density_ratio: f32,
    /// Largest acceleration magnitude `|a|` of the last force evaluation
    /// (gravity included).
    pub max_acceleration: f32,
    /// The time step `Δt` the step used.
    pub dt: f32,
    /// The Courant number `max_speed·dt/h` the monitor checks.
    pub cfl: f32,
    /// The acoustic (CFL) bound `0.4·h/(c + v_max)`.
    pub dt_acoustic: f32,
    /// The force bound `0.25·√(h/a_max)` (infinite for `a_max = 0`).
    pub dt_force: f32,
    /// The viscous bound `0.125·h²·ρ₀/μ` (infinite for `μ = 0`).
    pub dt_viscous: f32,
    /// The smallest of the three bounds.
    pub dt_limit: f32,
}

impl StepReport {
    /// The report of the particles `positions`/`state` under `params`, for a
    /// step of `params.dt`: the figures a step computes, over any slices
    /// (the shorter length counts). An empty fluid reports zero speed,
    /// acceleration and density ratios. Non-finite values are skipped by
    /// the maxima and minima (a step refuses them with
    /// [`Error::NonFinite`] anyway).
    pub fn measure<P: Point>(
        params: &SphParams<P>,
        positions: &[P],
        state: &[ParticleState<P>],
    ) -> Self {
        let mut e = Extremes::EMPTY;
        for (x, s) in positions.iter().zip(state) {
            e.add(x, s);
        }
        e.report(params, params.dt)
    }
}

/// Maxima and minima of a part of the particles, merged in any order to
/// the same result (`f32::max`/`f32::min` skip NaN, and none of the
/// quantities is a negative zero).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Extremes {
    speed2: f32,
    accel2: f32,
    rho_max: f32,
    rho_min: f32,
    finite: bool,
}

impl Extremes {
    /// No particle seen.
    pub(crate) const EMPTY: Self = Self {
        speed2: 0.0,
        accel2: 0.0,
        rho_max: f32::NEG_INFINITY,
        rho_min: f32::INFINITY,
        finite: true,
    };

    /// Adds one particle.
    #[inline(always)]
    pub(crate) fn add<P: Point>(&mut self, x: &P, s: &ParticleState<P>) {
        self.finite &= x.is_finite() && s.velocity.is_finite();
        self.speed2 = self.speed2.max(s.velocity.dot(s.velocity));
        self.accel2 = self.accel2.max(s.acceleration.dot(s.acceleration));
        self.rho_max = self.rho_max.max(s.density);
        self.rho_min = self.rho_min.min(s.density);
    }

    /// Both parts.
    pub(crate) fn merge(self, o: Self) -> Self {
        Self {
            speed2: self.speed2.max(o.speed2),
            accel2: self.accel2.max(o.accel2),
            rho_max: self.rho_max.max(o.rho_max),
            rho_min: self.rho_min.min(o.rho_min),
            finite: self.finite && o.finite,
        }
    }

    /// Whether every position and velocity seen is finite.
    pub(crate) fn finite(&self) -> bool {
        self.finite
    }

    /// The report of a step of `dt` under `p`.
    pub(crate) fn report<P: Point>(&self, p: &SphParams<P>, dt: f32) -> StepReport {
        let h = p.h;
        let v = libm::sqrtf(self.speed2);
        let a = libm::sqrtf(self.accel2);
        let (hi, lo) = if self.rho_max >= self.rho_min {
            (self.rho_max / p.rest_density, self.rho_min / p.rest_density)
        } else {
            (0.0, 0.0)
        };
        let dt_acoustic = 0.4 * h / (p.speed_of_sound() + v);
        let dt_force = if a > 0.0 {
            0.25 * libm::sqrtf(h / a)
        } else {
            f32::INFINITY
        };
        let dt_viscous = if p.viscosity > 0.0 {
            0.125 * h * h * p.rest_density / p.viscosity
        } else {
            f32::INFINITY
        };
        StepReport {
            max_speed: v,
            max_density_ratio: hi,
            min_density_ratio: lo,
            max_acceleration: a,
            dt,
            cfl: v * dt / h,
            dt_acoustic,
            dt_force,
            dt_viscous,
            dt_limit: dt_acoustic.min(dt_force).min(dt_viscous),
        }
    }
}

/// How a [`Fluid`] checks and sets its time step (see [the module](self));
/// [`StepControl::DEFAULT`] unless [`Fluid::set_control`] says otherwise.
///
/// # The monitor's defaults
/// [`max_density_ratio`](Self::max_density_ratio) 3.0 and
/// [`max_cfl`](Self::max_cfl) 1.0, from measurement
/// (`host-tests/tests/suite/sph_control.rs`, `measure_monitor_figures`, which
/// prints them). Peaks of healthy runs, density ratio / Courant number:
/// the seed's 3D dam break at `Δt = 0.006`, spacing 0.025, 3000 steps,
/// 1.45 / 0.21; the SI water column, 1.06 / 0.10; the benches' seed block
/// (spacing 1/16, `Δt = 0.005`) of 16³ particles, 1.79 / 0.23, and of
/// 32³ (a 2 m column: the seed's `k = 1` is soft, its rest state alone
/// is compressed to about 1.5 ρ₀ at the bottom by the Tait equation),
/// 2.26 / 0.63 over 1200 steps (6 s); the 2D dam
/// break (column `a = 0.1` m by `2a`, spacing `a/20`) with the water
/// preset, 1.17 / 0.16, and with the seed at `Δt = 0.0005`, 1.35 / 0.08.
/// The same dam break with the seed's `Δt = 0.005` (more than three times
/// the acoustic bound at that spacing), in 2D and as a 3D slab, passes a
/// Courant number of 1 at its second step and a density ratio of 2 at its
/// third, and without the monitor ends in [`Error::NonFinite`] after 97
/// (3D) or 255 (2D) steps. A Courant number of 1 is a particle crossing
/// the whole kernel radius `h` in one step; three times the rest density
/// is a Tait pressure of `(3⁷ − 1)·k`. The seed preset at its `Δt` does
/// trip the Courant bound where fluid meets obstacles at spacing 0.02
/// (the physics tests' wedge, sphere and paddle: a few particles flung at
/// 10–11 m/s, `Δt` five times the force bound); those tests, about
/// contact geometry, run [`UNCHECKED`](Self::UNCHECKED).
///
/// # Adaptive time step
/// With [`adaptive`](Self::adaptive) set, every step that reaches its end
/// (returning `Ok` or [`Error::Diverged`]) sets `params.dt` for the next
/// step to
/// `max(dt_min, min(dt_max, safety·dt_limit))`
/// with [`StepReport::dt_limit`] from that step's report. The first step
/// uses `params.dt` as given. Without it, `params.dt` is never changed.
/// The adapted `Δt` is part of the parameters, so a snapshot keeps it; the
/// control itself is not part of a snapshot. (Serialised on its own, its
/// infinite bounds become whatever the format makes of an infinite `f32`:
/// JSON writes `null`.) A distributed run adapts per fluid: a `Δt` common
/// to several fluids needs the minimum of their reports' limits.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StepControl {
    /// Set `params.dt` after each step from its report.
    pub adaptive: bool,
    /// The factor of the report's [`dt_limit`](StepReport::dt_limit), in
    /// `(0, 1]`; the bounds already carry their Courant factors (0.4,
    /// 0.25, 0.125), so `1` is the textbook step.
    pub safety: f32,
    /// The smallest adaptive `Δt`, finite and positive.
    pub dt_min: f32,
    /// The largest adaptive `Δt`, at least `dt_min` (may be infinite).
    pub dt_max: f32,
    /// A step whose largest density ratio `ρ/ρ₀` exceeds this fails with
    /// [`Error::Diverged`] `{ quantity: "max_density_ratio" }`;
    /// [`f32::INFINITY`] never does.
    pub max_density_ratio: f32,
    /// A step whose Courant number `|v|_max·Δt/h` exceeds this fails with
    /// [`Error::Diverged`] `{ quantity: "max_cfl" }`; [`f32::INFINITY`]
    /// never does.
    pub max_cfl: f32,
}

impl Default for StepControl {
    /// [`StepControl::DEFAULT`].
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl StepControl {
    /// A fixed time step, the monitor on: density ratio 3.0, Courant number
    /// 1.0 (see the type's doc for why). Safety 1, `dt_min = 10⁻⁷`,
    /// `dt_max` infinite (used once [`adaptive`](Self::adaptive) is set).
    pub const DEFAULT: Self = Self {
        adaptive: false,
        safety: 1.0,
        dt_min: 1e-7,
        dt_max: f32::INFINITY,
        max_density_ratio: 3.0,
        max_cfl: 1.0,
    };

    /// A fixed time step and no monitor: steps fail only as they did
    /// before the monitor ([`Error::NonFinite`] and the rest).
    pub const UNCHECKED: Self = Self {
        max_density_ratio: f32::INFINITY,
        max_cfl: f32::INFINITY,
        ..Self::DEFAULT
    };

    /// [`DEFAULT`](Self::DEFAULT)'s monitor with an adaptive time step
    /// between `dt_min` and `dt_max` and the given safety factor.
    pub const fn adaptive(safety: f32, dt_min: f32, dt_max: f32) -> Self {
        Self {
            adaptive: true,
            safety,
            dt_min,
            dt_max,
            ..Self::DEFAULT
        }
    }

    /// Checks the fields.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the field: `safety` not in `(0, 1]`,
    /// `dt_min` not finite and positive, `dt_max` below `dt_min` or NaN, a
    /// monitor bound that is NaN or not positive.
    pub fn check(&self) -> Result<(), Error> {
        if !(self.safety > 0.0 && self.safety <= 1.0) {
            return Err(Error::InvalidConfig { field: "safety" });
        }
        if !(self.dt_min.is_finite() && self.dt_min > 0.0) {
            return Err(Error::InvalidConfig { field: "dt_min" });
        }
        if self.dt_max.is_nan() || self.dt_max < self.dt_min {
            return Err(Error::InvalidConfig { field: "dt_max" });
        }
        if self.max_density_ratio.is_nan() || self.max_density_ratio <= 0.0 {
            return Err(Error::InvalidConfig {
                field: "max_density_ratio",
            });
        }
        if self.max_cfl.is_nan() || self.max_cfl <= 0.0 {
            return Err(Error::InvalidConfig { field: "max_cfl" });
        }
        Ok(())
    }

    /// The adaptive time step after a step with `report`:
    /// `max(dt_min, min(dt_max, safety·dt_limit))` (whether or not
    /// [`adaptive`](Self::adaptive) is set).
    pub fn next_dt(&self, report: &StepReport) -> f32 {
        (self.safety * report.dt_limit)
            .min(self.dt_max)
            .max(self.dt_min)
    }

    /// The monitor's verdict on `report`: the first bound exceeded
    /// (density ratio, then Courant number) as [`Error::Diverged`].
    ///
    /// # Errors
    /// [`Error::Diverged`] naming the bound.
    pub fn judge(&self, report: &StepReport) -> Result<(), Error> {
        if report.max_density_ratio > self.max_density_ratio {
            return Err(Error::Diverged {
                quantity: "max_density_ratio",
            });
        }
        if report.cfl > self.max_cfl {
            return Err(Error::Diverged {
                quantity: "max_cfl",
            });
        }
        Ok(())
    }
}

impl<P: Point> SphParams<P> {
    /// The equation of state's speed of sound at `ρ₀`, `c = √(dp/dρ)`:
    /// `√(7k/ρ₀)` for Tait (`p = k((ρ/ρ₀)⁷ − 1)`), `√k` for the ideal gas
    /// (`p = k(ρ − ρ₀)`). The seed's table gives `√7 ≈ 2.65`; the water
    /// preset the `c` it was derived from.
    pub fn speed_of_sound(&self) -> f32 {
        match self.eos {
            EquationOfState::Tait => libm::sqrtf(7.0 * self.stiffness / self.rest_density),
            EquationOfState::IdealGas => libm::sqrtf(self.stiffness),
        }
    }

    /// The neighbour pairs of `particles` particles in a fluid of the given
    /// lattice spacing, with room to spare: the size of a
    /// [`crate::PairCache`]'s pair buffer.
    ///
    /// The rule: `k` is the number of points of the square (2D) or cubic
    /// (3D) lattice of that spacing within `h` of a lattice point (the
    /// point itself excluded, the points at exactly `h` included: 12 in 2D
    /// and 32 in 3D for `h = 2·spacing`); the capacity is
    /// `⌈particles·k/2·PAIR_MARGIN⌉`, [`PAIR_MARGIN`] = 1.3. A fluid at
    /// rest has fewer pairs than `k/2` per particle (its surface), so the
    /// margin is for compression and disorder: measured with
    /// [`crate::PairCache::pair_count`] (the pairs its last build found —
    /// the way to ask what a scene needs), a settling 3D water column of
    /// 2000 particles needed at most 29 024 pairs (0.91 of `k/2` per
    /// particle; the rule gives 41 600) and the 2D water dam break of 800
    /// particles at most 4 393 (0.92; the rule gives 6 240), so the rule
    /// holds them with 40 % to spare and is below twice what they used
    /// (`host-tests/tests/suite/sph_control.rs`). A fluid compressed well past
    /// `ρ₀` needs more: ask `pair_count`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] unless `spacing` is finite and positive
    /// and `h/spacing` is at most 64; [`Error::CapacityExceeded`] if the
    /// capacity does not fit in `usize`.
    pub fn pair_capacity(&self, particles: usize, spacing: f32) -> Result<usize, Error> {
        if !(spacing.is_finite() && spacing > 0.0) {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        let reach = self.h / spacing;
        if !(reach.is_finite() && reach <= 64.0) {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        let m = reach as i64;
        let (ny, nz) = if P::DIM == 2 { (m, 0) } else { (m, m) };
        let r2 = f64::from(reach) * f64::from(reach);
        let mut k = 0u64;
        for a in -m..=m {
            for b in -ny..=ny {
                for c in -nz..=nz {
                    let d2 = (a * a + b * b + c * c) as f64;
                    if d2 > 0.0 && d2 <= r2 {
                        k += 1;
                    }
                }
            }
        }
        let want = (particles as f64) * (k as f64) * 0.5 * f64::from(PAIR_MARGIN);
        let cap = libm::ceil(want);
        if cap < usize::MAX as f64 {
            Ok(cap as usize)
        } else {
            Err(Error::CapacityExceeded {
                capacity: usize::MAX,
            })
        }
    }
}

/// The compression margin of [`SphParams::pair_capacity`].
pub const PAIR_MARGIN: f32 = 1.3;

impl<P: Point, X: Storage<P>, S: Storage<ParticleState<P>>> Fluid<P, X, S> {
    /// The report of the last step that reached its end (`Ok`,
    /// [`Error::Diverged`] or [`Error::NonFinite`]); `None` before the
    /// first (and after `Fluid::restore`, feature `serde`).
    pub fn last_report(&self) -> Option<StepReport> {
        self.report
    }

    /// The time-step control ([`StepControl::DEFAULT`] unless set).
    pub fn control(&self) -> &StepControl {
        &self.control
    }

    /// Replaces the time-step control.
    ///
    /// # Errors
    /// [`StepControl::check`]'s; nothing changes on error.
    pub fn set_control(&mut self, control: StepControl) -> Result<(), Error> {
        control.check()?;
        self.control = control;
        Ok(())
    }

    /// The end of a step whose integration finished with the extremes
    /// `e`, taken with time step `dt`: keeps the report, adapts `params.dt`
    /// (unless the state is not finite), and judges the step.
    pub(super) fn conclude(&mut self, e: &Extremes, dt: f32) -> Result<(), Error> {
        let report = e.report(&self.params, dt);
        self.report = Some(report);
        if !e.finite() {
            return Err(Error::NonFinite);
        }
        if self.control.adaptive {
            let next = self.control.next_dt(&report);
            if next.is_finite() && next > 0.0 {
                self.params.dt = next;
            }
        }
        self.control.judge(&report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Aabb2, Vec2};

    fn params() -> SphParams<Vec2> {
        let d = Aabb2::new(Vec2::ZERO, Vec2::new(1.0, 1.0)).unwrap();
        SphParams::seed(d, 0.05).unwrap()
    }

    fn particle(v: Vec2, a: Vec2, rho: f32) -> ParticleState<Vec2> {
        ParticleState {
            velocity: v,
            acceleration: a,
            density: rho,
            ..ParticleState::EMPTY
        }
    }

    /// The extremes of two halves merged in either order equal those of
    /// the whole, and give the documented bounds.
    #[test]
    fn report_of_parts_equals_report_of_the_whole() {
        let p = params();
        let x = [Vec2::ZERO; 4];
        let st = [
            particle(Vec2::new(3.0, 4.0), Vec2::new(0.0, -9.81), 1.2),
            particle(Vec2::new(0.5, 0.0), Vec2::new(30.0, 40.0), 0.7),
            particle(Vec2::ZERO, Vec2::ZERO, 1.0),
            particle(Vec2::new(-1.0, 1.0), Vec2::new(0.0, 1.0), 0.9),
        ];
        let whole = StepReport::measure(&p, &x, &st);
        let half = |r: core::ops::Range<usize>| {
            let mut e = Extremes::EMPTY;
            for (x, s) in x[r.clone()].iter().zip(&st[r]) {
                e.add(x, s);
            }
            e
        };
        let (a, b) = (half(0..1), half(1..4));
        assert_eq!(a.merge(b).report(&p, p.dt), whole);
        assert_eq!(b.merge(a).report(&p, p.dt), whole);
        assert_eq!(whole.max_speed, 5.0);
        assert_eq!(whole.max_acceleration, 50.0);
        assert_eq!(
            (whole.max_density_ratio, whole.min_density_ratio),
            (1.2, 0.7)
        );
        let c = libm::sqrtf(7.0);
        assert_eq!(whole.dt_acoustic, 0.4 * p.h / (c + 5.0));
        assert_eq!(whole.dt_force, 0.25 * libm::sqrtf(p.h / 50.0));
        assert_eq!(whole.dt_viscous, 0.125 * p.h * p.h / 0.02);
        assert_eq!(whole.dt_limit, whole.dt_acoustic); // 0.0052 < 0.011 < 0.0625
        assert_eq!(whole.cfl, 5.0 * p.dt / p.h);
    }

    /// No particle, no viscosity: zero figures and infinite bounds where
    /// the term is zero; the next step is clamped into `[dt_min, dt_max]`.
    #[test]
    fn empty_report_and_clamped_next_step() {
        let mut p = params();
        p.viscosity = 0.0;
        let r = StepReport::measure(&p, &[], &[]);
        assert_eq!(
            (r.max_speed, r.max_density_ratio, r.min_density_ratio),
            (0.0, 0.0, 0.0)
        );
        assert_eq!(r.dt_force, f32::INFINITY);
        assert_eq!(r.dt_viscous, f32::INFINITY);
        assert_eq!(r.dt_limit, r.dt_acoustic);
        assert!(r.dt_acoustic.is_finite() && r.dt_acoustic > 0.0);
        let c = StepControl::adaptive(0.5, 1e-4, 2e-3);
        assert_eq!(c.check(), Ok(()));
        assert_eq!(c.next_dt(&r), (0.5 * r.dt_limit).clamp(1e-4, 2e-3));
        let fast = StepReport {
            dt_limit: 1e-9,
            ..r
        };
        assert_eq!(c.next_dt(&fast), 1e-4);
        let slow = StepReport { dt_limit: 1.0, ..r };
        assert_eq!(c.next_dt(&slow), 2e-3);
        assert_eq!(
            StepControl::UNCHECKED.judge(&StepReport {
                cfl: 1e30,
                max_density_ratio: 1e30,
                ..r
            }),
            Ok(())
        );
        assert_eq!(
            StepControl::DEFAULT.judge(&StepReport { cfl: 1.01, ..r }),
            Err(Error::Diverged {
                quantity: "max_cfl"
            })
        );
        assert_eq!(
            StepControl::DEFAULT.judge(&StepReport {
                max_density_ratio: 3.01,
                ..r
            }),
            Err(Error::Diverged {
                quantity: "max_density_ratio"
            })
        );
    }
}
