//! Smoothed particle hydrodynamics on the crate's neighbour search and broad
//! phases: the solver of the real-time SPH water-channel seed, on the CPU,
//! with fixed memory.
//!
//! * [`kernel`]: poly6 and its gradient, the spiky gradient, the viscosity
//!   Laplacian and the cohesion spline (seed eq. 1–4, 14), in 3D and 2D.
//! * [`Fluid`]: density (eq. 5), pressure by the Tait equation (eq. 7,
//!   exponent 7) or the ideal-gas form (eq. 6), the symmetric pressure force
//!   (eq. 9), viscosity (eq. 10), gravity (eq. 11), Akinci et al. 2013
//!   surface tension (cohesion eq. 13, normals eq. 15, curvature eq. 16,
//!   correction eq. 17), integrated by the seed's leapfrog variant (eq. 18–21,
//!   two force evaluations per step) or explicit Euler.
//! * [`boundary`]: the box walls of §2.4 (clamp, reversal with damping) and
//!   static or moving spheres, boxes and triangles found through any
//!   [`BroadPhase`](crate::BroadPhase).
//! * [`source`]: a block initialiser ([`Fluid::fill_block`]) and a pipe
//!   [`source::Emitter`].
//!
//! The neighbour search is a parameter of [`Fluid::step`]: any
//! [`NeighborSearch`] (the uniform hashes, hierarchical or multilevel
//! hashing, brute force). Forces are accumulated pair by pair from
//! [`NeighborSearch::for_each_pair`], each pair adding equal and opposite
//! terms to its two particles, so momentum is conserved to rounding.
//!
//! Everything is `f32` on one thread, in a fixed order: two runs of the same
//! scene on one machine are identical bit for bit.
//!
//! [`par`]: [`Fluid::par_step`], the same solver in gather form on an
//! [`Executor`](crate::exec::Executor) (each particle sums its own terms
//! from its neighbours through [`NeighborSearch::par_gather`], into a
//! caller-provided [`GatherSlot`] workspace of `20N` bytes in 3D): its
//! result is bit-identical for every executor and number of workers, and
//! equals `step`'s to rounding.
//!
//! # Units
//!
//! The seed writes forces where it means accelerations; here every term is an
//! acceleration. The viscosity term is Müller et al.'s force density divided
//! by `ρᵢ`, `aᵢ = μ/ρᵢ Σⱼ mⱼ (vⱼ − vᵢ)/ρⱼ ∇²W` (the seed prints
//! `vᵢ − vⱼ`, which would accelerate shear instead of damping it), and the
//! cohesion force carries Akinci's minus sign (the seed drops it, which would
//! make cohesion repulsive).

pub mod boundary;
pub mod control;
pub mod kernel;
mod layout;
pub mod par;
#[cfg(feature = "serde")]
pub mod snapshot;
pub mod source;
pub mod walls;

pub use control::{StepControl, StepReport};
pub use layout::ParamBlock;
pub use par::{GatherSlot, StepSync, SyncPoint};

use crate::error::Error;
use crate::geom::{BoundingBox, Point};
use crate::periodic::PeriodicBox;
use crate::storage::Storage;
use crate::traits::NeighborSearch;

use boundary::{Collider, clamp_to_walls};
use kernel::Kernels;

/// Equation of state: pressure from density.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum EquationOfState {
    /// Tait (eq. 7): `p = k((ρ/ρ₀)⁷ − 1)`.
    Tait,
    /// Ideal gas (eq. 6, Müller et al. 2003): `p = k(ρ − ρ₀)`.
    IdealGas,
}

/// Time integration scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Integrator {
    /// The seed's leapfrog variant (eq. 18–21, after Cossins 2010): forces at
    /// `(rᵢ, vᵢ)` give the half step `r_{i+½} = rᵢ + Δt/2·vᵢ`,
    /// `v_{i+½} = vᵢ + Δt/2·aᵢ`; forces there give
    /// `v_{i+1} = vᵢ + Δt·a_{i+½}`, `r_{i+1} = rᵢ + Δt/2·(vᵢ + v_{i+1})`.
    /// Two force evaluations per step.
    Leapfrog,
    /// Explicit Euler: `r_{i+1} = rᵢ + Δt·vᵢ`, `v_{i+1} = vᵢ + Δt·aᵢ`. One
    /// force evaluation per step.
    Euler,
}

/// The solver's parameters. [`SphParams::seed`] and [`SphParams::water`]
/// are the two presets; every field is public for tuning.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(
    feature = "serde",
    serde(bound(
        serialize = "P: serde::Serialize, P::Aabb: serde::Serialize",
        deserialize = "P: serde::Deserialize<'de>, P::Aabb: serde::Deserialize<'de>"
    ))
)]
pub struct SphParams<P: Point> {
    /// Smoothing length `h`: kernel support and neighbour radius.
    pub h: f32,
    /// Mass of every particle.
    pub mass: f32,
    /// Rest density `ρ₀`.
    pub rest_density: f32,
    /// Stiffness `k` of the equation of state.
    pub stiffness: f32,
    /// Equation of state.
    pub eos: EquationOfState,
    /// Clamp negative pressures to zero (no tensile attraction at the free
    /// surface; cohesion is the surface-tension model's job).
    pub clamp_negative_pressure: bool,
    /// Viscosity `μ` (eq. 10).
    pub viscosity: f32,
    /// Surface-tension coefficient `γ` (eq. 13, 16); `0` skips the normals
    /// pass and the surface force.
    pub surface_tension: f32,
    /// Gravity (eq. 11), an acceleration.
    pub gravity: P,
    /// Velocity factor after a bounce off a wall or obstacle (`0` stops,
    /// `1` is elastic).
    pub damping: f32,
    /// Time step `Δt`.
    pub dt: f32,
    /// Integration scheme.
    pub integrator: Integrator,
    /// The box walls: particle centres stay inside it.
    pub domain: P::Aabb,
    /// Collision radius of a particle against obstacles.
    pub particle_radius: f32,
    /// The axes along which `domain` is periodic, as a bit mask (bit `k`
    /// for axis `k`; 0, no periodic axis, in every preset). Along them a
    /// particle leaving through one face enters through the opposite one,
    /// pairs across the faces interact at their minimum-image distance,
    /// and there are no walls. The step's neighbour search must be built
    /// periodic in [`periodic_box`](Self::periodic_box) (a
    /// [`crate::uniform::DenseGrid`] over it).
    #[cfg_attr(feature = "serde", serde(default))]
    pub periodic: u8,
    /// Factor on the pressure term's kernel gradient: 1 in the seed
    /// preset (its equations as printed). On a lattice with few neighbours
    /// the spiky gradient's sum is biased: the SPH gradient of a linear
    /// pressure field comes out `κ` times the true one (`κ = 0.874` in 2D,
    /// `0.947` in 3D at `h = 2·spacing`), so a resting column builds a
    /// pressure `1/κ` too high to hold itself up. The water preset sets
    /// [`gradient_correction`](Self::gradient_correction)'s `1/κ`, which
    /// makes the gradient exact on the lattice of its spacing. Defaults to 1
    /// under serde.
    #[cfg_attr(feature = "serde", serde(default = "one"))]
    pub gradient_correction: f32,
}

/// `1.0`, the serde default of [`SphParams::gradient_correction`].
#[cfg(feature = "serde")]
fn one() -> f32 {
    1.0
}

/// Calls `f` with the squared distance from the origin of every point of
/// the lattice of the given spacing within `h` along each axis (the
/// origin included).
fn lattice_sum<P: Point>(h: f32, spacing: f32, mut f: impl FnMut(f32)) -> Result<(), Error> {
    if !(spacing.is_finite() && spacing > 0.0) {
        return Err(Error::InvalidConfig { field: "spacing" });
    }
    let reach = h / spacing;
    if reach.is_nan() || reach > 64.0 {
        return Err(Error::InvalidConfig { field: "spacing" });
    }
    let m = reach as i32;
    let nz = if P::DIM == 2 { 0 } else { m };
    for a in -m..=m {
        for b in -m..=m {
            for c in -nz..=nz {
                f(((a * a + b * b + c * c) as f32) * spacing * spacing);
            }
        }
    }
    Ok(())
}

/// The mass that makes a poly6 sum of `sum` the density `rest_density`
/// (a lattice's mass: [`SphParams::lattice_mass`], [`source::Lattice::mass`]).
fn mass_of_sum(rest_density: f32, sum: f64) -> Result<f32, Error> {
    let mass = (f64::from(rest_density) / sum) as f32;
    if mass.is_finite() && mass > 0.0 {
        Ok(mass)
    } else {
        Err(Error::InvalidConfig {
            field: "rest_density",
        })
    }
}

/// Adds a lattice neighbour at squared distance `r2` to the sums of a
/// gradient correction: the poly6 sum and `−Σ ∇W(r)·r` (spiky).
fn add_gradient_terms(k: &Kernels, r2: f32, (w, g): &mut (f64, f64)) {
    *w += f64::from(k.poly6(r2));
    let r = libm::sqrtf(r2);
    if r > 0.0 {
        *g -= f64::from(k.spiky_gradient_factor(r, 1.0 / r)) * f64::from(r2);
    }
}

/// `1/κ` from the sums of [`add_gradient_terms`], `κ = g/(w·d)`
/// ([`SphParams::gradient_correction`], [`source::Lattice::gradient_correction`]).
fn correction_of_sums<P: Point>((w, g): (f64, f64)) -> Result<f32, Error> {
    let kappa = g / (w * P::DIM as f64);
    let f = (1.0 / kappa) as f32;
    if f.is_finite() && f > 0.0 {
        Ok(f)
    } else {
        Err(Error::InvalidConfig { field: "spacing" })
    }
}

/// `P`'s `−y` axis times `g`.
fn down<P: Point>(g: f32) -> P {
    P::from_fn(|k| if k == 1 { -g } else { 0.0 })
}

/// Standard gravity, m/s².
pub const G: f32 = 9.81;

/// Surface tension of water against air at 20 °C, N/m (a σ for
/// [`SphParams::cohesion_for_tension`]; [`SphParams::water`] keeps its
/// per-pair `γ`).
pub const WATER_SURFACE_TENSION: f32 = 0.0728;

/// Samples of the midpoint rule in [`tension_per_cohesion`].
const TENSION_SAMPLES: u32 = 2048;

/// The mean-field surface tension of a unit cohesion coefficient `γ = 1`
/// at rest density `rho0`: σ/γ.
///
/// Two half-spaces of a uniform fluid of number density `n`, whose pairs
/// attract with `F(r) = γm²C(r)`, take the work `2σ` per area to pull
/// apart; summed over the pairs across the cut this is
/// `σ = (π/8)·n²·∫F r⁴ dr` in 3D and `σ = (1/3)·n²·∫F r³ dr` in 2D
/// (Kirkwood–Buff with a flat pair distribution). With `n·m = ρ₀` the mass
/// drops out: `σ/γ = ρ₀²·(π/8)∫C r⁴ dr` (3D), `ρ₀²·(1/3)∫C r³ dr` (2D).
/// The integral is the midpoint rule over the kernel itself (2048
/// samples); the unit tests check the whole against a lattice's pair sum.
fn tension_per_cohesion<P: Point>(h: f32, rho0: f32) -> Result<f64, Error> {
    let k = Kernels::new::<P>(h)?;
    if !(rho0.is_finite() && rho0 > 0.0) {
        return Err(Error::InvalidConfig {
            field: "rest_density",
        });
    }
    let dr = f64::from(h) / f64::from(TENSION_SAMPLES);
    let power = if P::DIM == 2 { 3 } else { 4 };
    let mut sum = 0.0f64;
    for i in 0..TENSION_SAMPLES {
        let r = (f64::from(i) + 0.5) * dr;
        sum += f64::from(k.cohesion(r as f32)) * libm::pow(r, f64::from(power));
    }
    let geometry = if P::DIM == 2 {
        1.0 / 3.0
    } else {
        core::f64::consts::PI / 8.0
    };
    let per = f64::from(rho0) * f64::from(rho0) * geometry * sum * dr;
    if per.is_finite() && per > 0.0 {
        Ok(per)
    } else {
        Err(Error::InvalidRadius)
    }
}

impl<P: Point> SphParams<P> {
    /// The seed's parameter table (μ 0.02, k 1, ρ₀ 1, γ 1, damping 0.5) with
    /// the Tait equation, leapfrog and `Δt = 0.005` (the seed's 32 768
    /// particle run), gravity `9.81` along `−y`, and the length scales the
    /// table leaves open: `h = 2·spacing`, the mass that gives a lattice of
    /// that spacing the density `ρ₀` ([`lattice_mass`](Self::lattice_mass)),
    /// and a collision radius of half the spacing.
    ///
    /// The seed does not state its particle spacing. With leapfrog,
    /// `Δt = 0.005` is stable down to a spacing of about 0.02 (the tests run
    /// Δt = 0.006 at 0.025); explicit Euler is not: a 12³ block at spacing
    /// 0.025 and Δt = 0.005 reached 11 m/s after about 30 Euler steps (the
    /// GPU crate's parity runs);
    /// the acoustic limit `Δt ≤ 0.4·h/c`, with `c = √(7k/ρ₀) ≈ 2.6`, scales
    /// with the spacing, so finer fluids need a proportionally smaller step
    /// (the main job uses 0.0025 at spacing 2⁻⁶, where 0.005 boils).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a spacing that is not finite and positive
    /// or too small for `f32` kernels; [`Error::NonFinite`] /
    /// [`Error::InvertedBox`] for a bad domain.
    pub fn seed(domain: P::Aabb, spacing: f32) -> Result<Self, Error> {
        domain.check()?;
        let h = 2.0 * spacing;
        let p = Self {
            h,
            mass: Self::lattice_mass(h, spacing, 1.0)?,
            rest_density: 1.0,
            stiffness: 1.0,
            eos: EquationOfState::Tait,
            clamp_negative_pressure: true,
            viscosity: 0.02,
            surface_tension: 1.0,
            gravity: down(G),
            damping: 0.5,
            dt: 0.005,
            integrator: Integrator::Leapfrog,
            domain,
            particle_radius: 0.5 * spacing,
            periodic: 0,
            gradient_correction: 1.0,
        };
        p.kernels()?;
        Ok(p)
    }

    /// Water in SI units: `ρ₀ = 1000 kg/m³`, `h = 2·spacing`, lattice mass;
    /// weakly compressible Tait with a speed of sound `c = 10·√(2gH)` (ten
    /// times the speed of a fall across `H = height`, the height of the
    /// fluid column the scene starts from, so density varies by about 1 %),
    /// `k = ρ₀c²/7`; `Δt = 0.4·h/c` (the acoustic CFL
    /// limit); the viscosity of an artificial viscosity `α = 0.1`,
    /// `μ = ρ₀·α·h·c / (2(d + 2))` (physical water, `μ = 10⁻³ Pa·s`, is far
    /// below what the resolution can carry; with the seed's clamping walls,
    /// `α = 0.02` lets a resting column slosh with metres per second); `γ` such that two particles at
    /// `h/2` attract with `g/10`; wall damping 0.5.
    ///
    /// That `γ` is fixed per pair, so the surface tension it amounts to
    /// grows with the square of the spacing: [`tension`](Self::tension)
    /// gives σ = 0.238 / 0.059 / 0.015 N/m in 3D at spacings of 2 / 1 /
    /// 0.5 cm, against water's [`WATER_SURFACE_TENSION`] (0.0728). For the
    /// same σ at every resolution set
    /// `surface_tension = cohesion_for_tension(h, ρ₀, σ)`
    /// ([`cohesion_for_tension`](Self::cohesion_for_tension)); the
    /// validation report's figures are the preset's.
    ///
    /// `c`, and with it the stiffness, `Δt` and the viscosity, depends on
    /// `height` alone, not on the domain: a taller tank over the same
    /// column is the same physics. (Before `height` was an argument the
    /// domain's height was used; pass it to get those parameters back.)
    /// [`speed_of_sound`](Self::speed_of_sound) returns `c`.
    ///
    /// # Errors
    /// As [`seed`](Self::seed), and [`Error::InvalidConfig`]
    /// `{ field: "height" }` for a height that is not finite and positive.
    pub fn water(domain: P::Aabb, spacing: f32, height: f32) -> Result<Self, Error> {
        domain.check()?;
        if !(height.is_finite() && height > 0.0) {
            return Err(Error::InvalidConfig { field: "height" });
        }
        let h = 2.0 * spacing;
        let rho0 = 1000.0;
        let mass = Self::lattice_mass(h, spacing, rho0)?;
        let c = 10.0 * libm::sqrtf(2.0 * G * height);
        let k = Kernels::new::<P>(h)?;
        let alpha = 0.1;
        let dims = P::DIM as f32;
        let p = Self {
            h,
            mass,
            rest_density: rho0,
            stiffness: rho0 * c * c / 7.0,
            eos: EquationOfState::Tait,
            clamp_negative_pressure: true,
            viscosity: rho0 * alpha * h * c / (2.0 * (dims + 2.0)),
            surface_tension: 0.1 * G / (mass * k.cohesion(0.5 * h)),
            gravity: down(G),
            damping: 0.5,
            dt: 0.4 * h / c,
            integrator: Integrator::Leapfrog,
            domain,
            particle_radius: 0.5 * spacing,
            periodic: 0,
            gradient_correction: Self::gradient_correction(h, spacing)?,
        };
        p.kernels()?;
        Ok(p)
    }

    /// The cohesion coefficient `γ` ([`surface_tension`](Self::surface_tension))
    /// whose mean-field surface tension is `sigma` at smoothing length `h`
    /// and rest density `rest_density`: σ in N/m in 3D, and in 2D in N (the
    /// energy per length of an edge, a 2D fluid being a slice of unit
    /// depth, so the same number). The mean field counts the cohesion term
    /// between two flat half-spaces (σ = (π/8)·ρ₀²·γ·∫C(r)r⁴dr in 3D,
    /// (1/3)·ρ₀²·γ·∫C(r)r³dr in 2D); the curvature term, zero at a flat
    /// surface, adds nothing to it. [`tension`](Self::tension) is the inverse.
    /// Set it after [`fit_lattice`](Self::fit_lattice), which keeps the
    /// force per pair and so scales σ by the old mass over the new.
    ///
    /// # Errors
    /// [`Error::InvalidRadius`] for a bad `h`; [`Error::InvalidConfig`] for
    /// a rest density that is not finite and positive (`rest_density`) or
    /// a `sigma` that is negative or not finite (`surface_tension`).
    pub fn cohesion_for_tension(h: f32, rest_density: f32, sigma: f32) -> Result<f32, Error> {
        let per = tension_per_cohesion::<P>(h, rest_density)?;
        let gamma = (f64::from(sigma) / per) as f32;
        if sigma.is_finite() && sigma >= 0.0 && gamma.is_finite() {
            Ok(gamma)
        } else {
            Err(Error::InvalidConfig {
                field: "surface_tension",
            })
        }
    }

    /// The mean-field surface tension σ of these parameters' cohesion
    /// (N/m in 3D, N in 2D), as [`cohesion_for_tension`](Self::cohesion_for_tension)
    /// defines it.
    ///
    /// # Errors
    /// As [`cohesion_for_tension`](Self::cohesion_for_tension).
    pub fn tension(&self) -> Result<f32, Error> {
        let per = tension_per_cohesion::<P>(self.h, self.rest_density)?;
        Ok((f64::from(self.surface_tension) * per) as f32)
    }

    /// The pressure-gradient correction `1/κ` of the lattice of the given
    /// spacing, with `κ = (1/d)·Σⱼ Vⱼ |∇W(rⱼ)| rⱼ` over the lattice points
    /// within `h` (spiky kernel, `Vⱼ = 1/Σ W_poly6` the volume the
    /// [`lattice_mass`](Self::lattice_mass) gives): with it the SPH
    /// gradient of a linear field on that lattice is exact. 1.145 in 2D and
    /// 1.056 in 3D at `h = 2·spacing`; 1.016 and 1.003 at `h = 4·spacing`.
    ///
    /// # Errors
    /// As [`lattice_mass`](Self::lattice_mass).
    pub fn gradient_correction(h: f32, spacing: f32) -> Result<f32, Error> {
        let k = Kernels::new::<P>(h)?;
        let mut sums = (0.0f64, 0.0f64);
        lattice_sum::<P>(h, spacing, |r2| add_gradient_terms(&k, r2, &mut sums))?;
        correction_of_sums::<P>(sums)
    }

    /// The particle mass for which a particle inside an infinite lattice of
    /// the given spacing has density `rest_density` (the poly6 sum over the
    /// lattice points within `h`, the particle itself included).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] unless `spacing` and `rest_density` are finite
    /// and positive and `h / spacing` is at most 64; [`Error::InvalidRadius`]
    /// for a bad `h`.
    pub fn lattice_mass(h: f32, spacing: f32, rest_density: f32) -> Result<f32, Error> {
        let k = Kernels::new::<P>(h)?;
        if !(spacing.is_finite() && spacing > 0.0) {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        if !(rest_density.is_finite() && rest_density > 0.0) {
            return Err(Error::InvalidConfig {
                field: "rest_density",
            });
        }
        let mut sum = 0.0f64;
        lattice_sum::<P>(h, spacing, |r2| sum += f64::from(k.poly6(r2)))?;
        mass_of_sum(rest_density, sum)
    }

    /// These parameters fitted to the lattice a fluid is filled with: the
    /// mass for which its points have the density `ρ₀`
    /// ([`Lattice::mass`](source::Lattice::mass)) and its pressure-gradient
    /// correction ([`Lattice::gradient_correction`](source::Lattice::gradient_correction));
    /// the surface-tension coefficient is scaled by the old mass over the
    /// new, so that two particles at a given distance attract as before.
    /// For the presets' cubic lattice of their spacing this changes
    /// nothing but a seed preset's gradient correction (1 as printed).
    ///
    /// # Errors
    /// The lattice's [`mass`](source::Lattice::mass) errors; as
    /// [`kernels`](Self::kernels).
    pub fn fit_lattice(mut self, lattice: &source::Lattice<P>) -> Result<Self, Error> {
        let mass = lattice.mass(self.h, self.rest_density)?;
        self.surface_tension *= self.mass / mass;
        self.mass = mass;
        self.gradient_correction = lattice.gradient_correction(self.h)?;
        self.kernels()?;
        Ok(self)
    }

    /// Checks every field and returns the kernels of `h`.
    ///
    /// # Errors
    /// [`Error::InvalidRadius`] for a bad `h`; [`Error::InvalidConfig`] for a
    /// mass, rest density, stiffness or time step that is not finite and
    /// positive, a viscosity, surface tension, collision radius or damping
    /// that is negative or not finite (damping at most 1), or a non-finite
    /// gravity; the domain's [`BoundingBox::check`] error.
    pub fn kernels(&self) -> Result<Kernels, Error> {
        let k = Kernels::new::<P>(self.h)?;
        // The first four must be positive, the rest non-negative; one loop
        // (a table of names) keeps the check small in firmware.
        const FIELDS: [&str; 9] = [
            "mass",
            "rest_density",
            "stiffness",
            "dt",
            "gradient_correction",
            "viscosity",
            "surface_tension",
            "particle_radius",
            "damping",
        ];
        let values = [
            self.mass,
            self.rest_density,
            self.stiffness,
            self.dt,
            self.gradient_correction,
            self.viscosity,
            self.surface_tension,
            self.particle_radius,
            self.damping,
        ];
        for (i, (&v, field)) in values.iter().zip(FIELDS).enumerate() {
            if !(v.is_finite() && (v > 0.0 || (i >= 5 && v == 0.0))) {
                return Err(Error::InvalidConfig { field });
            }
        }
        if self.damping > 1.0 {
            return Err(Error::InvalidConfig { field: "damping" });
        }
        if !self.gravity.is_finite() {
            return Err(Error::InvalidConfig { field: "gravity" });
        }
        self.domain.check()?;
        // `periodic_box`'s checks without building the box (the corners
        // are finite now).
        if self.periodic != 0 {
            PeriodicBox::check_finite(self.domain.min(), self.domain.max(), self.periodic)?;
        }
        Ok(k)
    }

    /// The domain as a [`PeriodicBox`], periodic along
    /// [`periodic`](Self::periodic)'s axes ([`PeriodicBox::NONE`] without
    /// any): the box a periodic step's neighbour search is built in.
    ///
    /// # Errors
    /// [`PeriodicBox::new`]'s, for a periodic domain: a flat domain, or a
    /// bit at or above the dimension.
    pub fn periodic_box(&self) -> Result<PeriodicBox<P>, Error> {
        if self.periodic == 0 {
            return Ok(PeriodicBox::NONE);
        }
        PeriodicBox::new(self.domain.min(), self.domain.max(), self.periodic)
    }

    /// Pressure at density `rho`.
    #[inline]
    pub fn pressure(&self, rho: f32) -> f32 {
        let p = match self.eos {
            EquationOfState::Tait => {
                let q = rho / self.rest_density;
                let q2 = q * q;
                let q3 = q2 * q;
                self.stiffness * (q3 * q3 * q - 1.0)
            }
            EquationOfState::IdealGas => self.stiffness * (rho - self.rest_density),
        };
        if self.clamp_negative_pressure {
            p.max(0.0)
        } else {
            p
        }
    }
}

/// Per-particle solver state besides the position.
///
/// `#[repr(C)]`; for [`Vec3`](crate::Vec3) and [`Vec2`](crate::Vec2) it is
/// [`bytemuck::Pod`] (17 or 12 `f32`, no padding), so a slice of it can be
/// uploaded to a GPU as bytes (see [`ParamBlock`] for the parameters).
///
/// Density, pressure, normal and acceleration are those of the last force
/// evaluation: with leapfrog, the one at the half step `(r_{i+½}, v_{i+½})`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ParticleState<P> {
    /// Velocity.
    pub velocity: P,
    /// Acceleration of the last force evaluation.
    pub acceleration: P,
    /// Akinci surface normal `nᵢ` (eq. 15) of the last evaluation (zero when
    /// surface tension is off).
    pub normal: P,
    /// Position at the start of the step (leapfrog's `rᵢ`).
    pub start_position: P,
    /// Velocity at the start of the step (leapfrog's `vᵢ`).
    pub start_velocity: P,
    /// Density of the last evaluation (eq. 5).
    pub density: f32,
    /// Pressure of the last evaluation (eq. 6 or 7).
    pub pressure: f32,
}

impl<P: Point> Default for ParticleState<P> {
    /// The unused value, [`ParticleState::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<P: Point> ParticleState<P> {
    /// An unused slot.
    pub const EMPTY: Self = Self {
        velocity: P::ZERO,
        acceleration: P::ZERO,
        normal: P::ZERO,
        start_position: P::ZERO,
        start_velocity: P::ZERO,
        density: 0.0,
        pressure: 0.0,
    };
}

/// The stages of a step, as reported to a [`StageTimer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Stage {
    /// Building the neighbour search over the positions.
    NeighborSearch,
    /// Density and pressure (eq. 5–7).
    Density,
    /// Surface normals (eq. 15).
    Normals,
    /// Pressure, viscosity, gravity and surface forces (eq. 8–17).
    Forces,
    /// Position and velocity updates (eq. 18–21).
    Integration,
    /// Walls and obstacles (the broad-phase queries and the narrow phase).
    Collisions,
}

impl Stage {
    /// Every stage, in the order of a force evaluation and a step.
    pub const ALL: [Stage; 6] = [
        Stage::NeighborSearch,
        Stage::Density,
        Stage::Normals,
        Stage::Forces,
        Stage::Integration,
        Stage::Collisions,
    ];

    /// The stage's index in [`Stage::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// A short name.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::NeighborSearch => "neighbour search",
            Stage::Density => "density",
            Stage::Normals => "normals",
            Stage::Forces => "forces",
            Stage::Integration => "integration",
            Stage::Collisions => "collisions",
        }
    }
}

/// Receives the boundaries of the stages of [`Fluid::step`]; the core has no
/// clock, so the host supplies one. `()` ignores them.
pub trait StageTimer {
    /// `stage` starts.
    fn begin(&mut self, stage: Stage);
    /// The stage begun last ends.
    fn end(&mut self);
}

impl StageTimer for () {
    #[inline(always)]
    fn begin(&mut self, _: Stage) {}
    #[inline(always)]
    fn end(&mut self) {}
}

/// The pair `(i, j)` as indices below `n`, or `None` (recording the
/// offending id in `bad`) if the search reported an id past the fluid or a
/// particle paired with itself.
#[inline(always)]
fn pair_ids(i: u32, j: u32, n: usize, bad: &mut Option<u32>) -> Option<(usize, usize)> {
    let (a, b) = (i as usize, j as usize);
    if a < n && b < n && a != b {
        Some((a, b))
    } else {
        *bad = Some(if a < n && a != b { j } else { i });
        None
    }
}

/// The sum one pass over the pairs accumulates.
#[derive(Clone, Copy)]
enum PairPass {
    /// Density (eq. 5).
    Density,
    /// Akinci normals (eq. 15).
    Normals,
    /// Pressure, viscosity and surface-tension accelerations.
    Forces,
}

/// What the pair passes read and write.
struct PairTerms<'a, P: Point> {
    x: &'a [P],
    /// The minimum image of a pair's offset (periodic domains).
    period: PeriodicBox<P>,
    st: &'a mut [ParticleState<P>],
    k: &'a Kernels,
    p: &'a SphParams<P>,
    /// An id the search reported past the fluid, or paired with itself.
    bad: Option<u32>,
}

impl<P: Point> PairTerms<'_, P> {
    /// Adds the pair's terms of `pass` to both particles, equal and
    /// opposite.
    #[inline(always)]
    fn pair<const PERIODIC: bool>(&mut self, pass: PairPass, i: u32, j: u32, d2: f32) {
        let Some((i, j)) = pair_ids(i, j, self.st.len(), &mut self.bad) else {
            return;
        };
        // Without periodic axes (known from the search's type) the plain
        // `x[i] - x[j]`, the same float.
        let period = if PERIODIC {
            self.period
        } else {
            PeriodicBox::NONE
        };
        let (k, p, x, st) = (self.k, self.p, self.x, &mut *self.st);
        let m = p.mass;
        match pass {
            PairPass::Density => {
                let w = m * k.poly6(d2);
                st[i].density += w;
                st[j].density += w;
            }
            PairPass::Normals if CHUNKED => {
                // `acceleration`'s first coordinate holds `1/ρ` during
                // this pass (see `evaluate`).
                let g = k.poly6_gradient(period.offset(x[i], x[j]), d2) * (p.h * m);
                let (inv_i, inv_j) = (st[i].acceleration.coord(0), st[j].acceleration.coord(0));
                st[i].normal += g * inv_j;
                st[j].normal -= g * inv_i;
            }
            PairPass::Normals => {
                let g = k.poly6_gradient(period.offset(x[i], x[j]), d2) * (p.h * m);
                let (ri, rj) = (st[i].density, st[j].density);
                let inv = 1.0 / (ri * rj);
                st[i].normal += g * (ri * inv);
                st[j].normal -= g * (rj * inv);
            }
            PairPass::Forces => {
                let a = pair_acceleration(k, p, period.offset(x[i], x[j]), d2, &st[i], &st[j]);
                st[i].acceleration += a;
                st[j].acceleration -= a;
            }
        }
    }
}

/// The three scalars of the acceleration particle `j` gives particle `i` at
/// distance `len` (see [`pair_acceleration`]): the factors of `r`, of
/// `vⱼ − vᵢ` and of `nⱼ − nᵢ`. With the surface-tension correction
/// `s = 2ρ₀/(ρᵢ + ρⱼ)`, the acceleration `r·cp + (vⱼ − vᵢ)·cv +
/// ((nᵢ − nⱼ)·(−γ) + r·cc)·s` (pressure, viscosity, curvature and
/// cohesion) is `r·(cp + cc·s) + (vⱼ − vᵢ)·cv + (nⱼ − nᵢ)·γs`: the
/// products are taken here, where a loop over pairs vectorises
/// (branch-free), rather than per vector component.
#[inline(always)]
fn pair_coefficients<P: Point>(
    k: &Kernels,
    p: &SphParams<P>,
    len: f32,
    (ri, rj): (f32, f32),
    (pi, pj): (f32, f32),
) -> [f32; 3] {
    let m = p.mass;
    let inv_len = Kernels::inverse_lane(len);
    // One division for 1/ρᵢ, 1/ρⱼ and 1/(ρᵢρⱼ).
    let inv = 1.0 / (ri * rj);
    let (inv_i, inv_j) = (rj * inv, ri * inv);
    // Pressure (eq. 9), spiky gradient.
    let pressure = pi * inv_i * inv_i + pj * inv_j * inv_j;
    let cp = -m * pressure * k.spiky_gradient_factor_lane(len, inv_len) * p.gradient_correction;
    // Viscosity (eq. 10, divided by ρᵢ).
    let cv = p.viscosity * m * k.viscosity_laplacian_lane(len) * inv;
    // Surface tension (eq. 13, 16, 17), per unit mass of i.
    let gamma = p.surface_tension;
    let cc = -gamma * m * k.cohesion_lane(len) * inv_len;
    let cs = 2.0 * p.rest_density / (ri + rj);
    [cp + cc * cs, cv, gamma * cs]
}

/// The acceleration of [`pair_coefficients`] `c` for `r = xᵢ − xⱼ` and the
/// two particles' velocities and normals; the surface terms only when
/// `gamma > 0`.
#[inline(always)]
fn pair_assemble<P: Point>(
    gamma: f32,
    c: [f32; 3],
    r: P,
    si: &ParticleState<P>,
    sj: &ParticleState<P>,
) -> P {
    let mut a = r * c[0];
    a += (sj.velocity - si.velocity) * c[1];
    if gamma > 0.0 {
        a += (sj.normal - si.normal) * c[2];
    }
    a
}

/// The acceleration particle `j` gives particle `i` (pressure, viscosity and
/// surface tension), with `r = xᵢ − xⱼ` and `d2 = |r|²`; `j` receives its
/// opposite. Shared by the pair form ([`Fluid::step`], which computes the
/// same two parts a chunk of pairs at a time on hosted targets) and the
/// gather form ([`Fluid::par_step`]).
#[inline(always)]
fn pair_acceleration<P: Point>(
    k: &Kernels,
    p: &SphParams<P>,
    r: P,
    d2: f32,
    si: &ParticleState<P>,
    sj: &ParticleState<P>,
) -> P {
    let c = pair_coefficients(
        k,
        p,
        libm::sqrtf(d2),
        (si.density, sj.density),
        (si.pressure, sj.pressure),
    );
    pair_assemble(p.surface_tension, c, r, si, sj)
}

/// Whether the forces pass works a [`CHUNK`] of pairs at a time (hosted
/// targets): the pairs' scalars in a loop the compiler vectorises (four
/// divisions at once), then the additions pair by pair, in the search's
/// order. Not on bare-metal targets (code size, stack).
const CHUNKED: bool = cfg!(not(target_os = "none"));

/// Pairs of a forces chunk.
const CHUNK: usize = 32;

/// A chunk of pairs (valid ids only) and their scalars, in lanes.
struct ForceChunk {
    len: usize,
    i: [u32; CHUNK],
    j: [u32; CHUNK],
    dist: [f32; CHUNK],
    rho: [[f32; CHUNK]; 2],
    pressure: [[f32; CHUNK]; 2],
    /// The factors of `r`, of `vⱼ − vᵢ` and of `nⱼ − nᵢ`.
    c: [[f32; CHUNK]; 3],
}

impl ForceChunk {
    const fn new() -> Self {
        Self {
            len: 0,
            i: [0; CHUNK],
            j: [0; CHUNK],
            dist: [0.0; CHUNK],
            rho: [[1.0; CHUNK]; 2],
            pressure: [[0.0; CHUNK]; 2],
            c: [[0.0; CHUNK]; 3],
        }
    }
}

impl<P: Point> PairTerms<'_, P> {
    /// Appends a pair to the forces chunk, and works the chunk when full.
    #[inline(always)]
    fn force_pair(&mut self, c: &mut ForceChunk, i: u32, j: u32, d2: f32) {
        let Some((a, b)) = pair_ids(i, j, self.st.len(), &mut self.bad) else {
            return;
        };
        let q = c.len;
        if q < CHUNK {
            let (sa, sb) = (&self.st[a], &self.st[b]);
            c.i[q] = i;
            c.j[q] = j;
            c.dist[q] = libm::sqrtf(d2);
            c.rho[0][q] = sa.density;
            c.rho[1][q] = sb.density;
            c.pressure[0][q] = sa.pressure;
            c.pressure[1][q] = sb.pressure;
            c.len = q + 1;
        }
        if c.len == CHUNK {
            self.force_chunk(c);
        }
    }

    /// The chunk's scalars in lanes, then each pair's acceleration added to
    /// both particles, in order; empties the chunk.
    #[inline(never)]
    fn force_chunk(&mut self, c: &mut ForceChunk) {
        // Local copies, so that the compiler knows the lane stores below
        // leave them alone (and keeps them in registers).
        let (k, p) = (*self.k, *self.p);
        let (k, p) = (&k, &p);
        let gamma = p.surface_tension;
        let [c0, c1, c2] = &mut c.c;
        let (dist, [ri, rj], [pi, pj]) = (&c.dist, &c.rho, &c.pressure);
        for q in 0..CHUNK {
            [c0[q], c1[q], c2[q]] =
                pair_coefficients(k, p, dist[q], (ri[q], rj[q]), (pi[q], pj[q]));
        }
        let (x, st) = (self.x, &mut *self.st);
        for q in 0..c.len.min(CHUNK) {
            let (a, b) = (c.i[q] as usize, c.j[q] as usize);
            if let (Some(&xa), Some(&xb), Some(sa), Some(sb)) =
                (x.get(a), x.get(b), st.get(a), st.get(b))
            {
                let cf = [c.c[0][q], c.c[1][q], c.c[2][q]];
                let acc = pair_assemble(gamma, cf, self.period.offset(xa, xb), sa, sb);
                st[a].acceleration += acc;
                st[b].acceleration -= acc;
            }
        }
        c.len = 0;
    }
}

/// One pass over the search's pairs. On bare-metal targets a single walk
/// for the three passes, so the search's pair walk is instantiated once
/// rather than once per pass (on a Cortex-M4 that is about 3 KB of code;
/// the branch on the pass is the same for every pair). On hosted targets
/// each pass has its own walk with the pass fixed, so the compiler can
/// inline the pair's terms into the walk (the density pass's closure was a
/// call per pair).
#[inline(never)]
fn pair_pass<P: Point, N: NeighborSearch<P>>(
    search: &N,
    terms: &mut PairTerms<'_, P>,
    pass: PairPass,
) {
    if CHUNKED && matches!(pass, PairPass::Forces) {
        let mut chunk = ForceChunk::new();
        search.for_each_pair(
            #[inline(always)]
            |i, j, d2| terms.force_pair(&mut chunk, i, j, d2),
        );
        terms.force_chunk(&mut chunk);
    } else if CHUNKED && matches!(pass, PairPass::Density) {
        search.for_each_pair(
            #[inline(always)]
            |i, j, d2| terms.pair::<true>(PairPass::Density, i, j, d2),
        );
    } else if CHUNKED {
        search.for_each_pair(
            #[inline(always)]
            |i, j, d2| terms.pair::<true>(PairPass::Normals, i, j, d2),
        );
    } else if search.periodic().is_periodic() {
        search.for_each_pair(|i, j, d2| terms.pair::<true>(pass, i, j, d2));
    } else {
        search.for_each_pair(|i, j, d2| terms.pair::<false>(pass, i, j, d2));
    }
}

/// An SPH fluid in fixed memory: positions in `X`, the rest of each
/// particle's state in `S`; capacity is the shorter buffer.
///
/// Memory: `(24d + 8)·N` bytes with `d` axes and `N` the capacity (`80N` in
/// 3D, `56N` in 2D), plus the neighbour search's; [`Fluid::par_step`] adds
/// its workspace, `4(d + 2)·N` bytes ([`GatherSlot`]: `20N` in 3D, `16N` in
/// 2D).
///
/// ```
/// use spatium::sph::{Fluid, ParticleState, SphParams};
/// use spatium::uniform::{CellRecord, CellSortedHash, SortedParticle, TableSlot};
/// use spatium::{Aabb3, Vec3};
///
/// let domain = Aabb3::new(Vec3::ZERO, Vec3::new(0.4, 0.4, 0.4))?;
/// let params = SphParams::seed(domain, 0.02)?;
/// let mut fluid = Fluid::new([Vec3::ZERO; 1000], [ParticleState::EMPTY; 1000], params);
/// let block = Aabb3::new(Vec3::ZERO, Vec3::new(0.2, 0.2, 0.2))?;
/// fluid.fill_block(block, 0.02, Vec3::ZERO)?;
/// assert_eq!(fluid.len(), 1000);
/// let mut hash = CellSortedHash::<Vec3, _, _, _>::new(
///     [TableSlot::EMPTY; 2048], [SortedParticle::EMPTY; 1000], [CellRecord::EMPTY; 1000]);
/// for _ in 0..10 {
///     fluid.step(&mut hash, &mut (), &mut ())?;
/// }
/// assert!(fluid.state().iter().all(|s| s.density > 0.0));
/// # Ok::<(), spatium::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Fluid<P: Point, X, S> {
    positions: X,
    state: S,
    len: usize,
    params: SphParams<P>,
    steps: u64,
    control: StepControl,
    report: Option<StepReport>,
}

impl<P: Point, X: Storage<P>, S: Storage<ParticleState<P>>> Fluid<P, X, S> {
    /// An empty fluid over the two buffers. The parameters are checked by
    /// [`step`](Self::step) (and by [`set_params`](Self::set_params)), so
    /// this can build a `static`.
    ///
    /// Never fails and allocates nothing. The capacity is the shorter
    /// buffer. Memory: `(24d + 8)·N` bytes (`80N` in 3D, `56N` in 2D) plus
    /// the neighbour search's. See the type's example.
    pub const fn new(positions: X, state: S, params: SphParams<P>) -> Self {
        Self {
            positions,
            state,
            len: 0,
            params,
            steps: 0,
            control: StepControl::DEFAULT,
            report: None,
        }
    }

    /// Particles stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` if there are no particles.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most particles the buffers hold.
    pub fn capacity(&self) -> usize {
        self.positions.as_ref().len().min(self.state.as_ref().len())
    }

    /// The parameters.
    pub fn params(&self) -> &SphParams<P> {
        &self.params
    }

    /// Replaces the parameters.
    ///
    /// # Errors
    /// [`SphParams::kernels`]' errors; nothing changes on error.
    pub fn set_params(&mut self, params: SphParams<P>) -> Result<(), Error> {
        params.kernels()?;
        self.params = params;
        Ok(())
    }

    /// Steps taken.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Positions, by particle id.
    pub fn positions(&self) -> &[P] {
        &self.positions.as_ref()[..self.len]
    }

    /// Per-particle state, by particle id.
    pub fn state(&self) -> &[ParticleState<P>] {
        &self.state.as_ref()[..self.len]
    }

    /// Removes every particle.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    fn check_particle(&self, x: P, v: P) -> Result<(), Error> {
        if !x.is_finite() || !v.is_finite() {
            return Err(Error::NonFinite);
        }
        let d = self.params.domain;
        for k in 0..P::DIM {
            let c = x.coord(k);
            if c < d.min().coord(k) || c > d.max().coord(k) {
                return Err(Error::OutOfRange);
            }
        }
        Ok(())
    }

    /// Adds a particle at `x` with velocity `v`; returns its id.
    ///
    /// # Errors
    /// [`Error::NonFinite`]; [`Error::OutOfRange`] if `x` is outside the
    /// domain; [`Error::CapacityExceeded`]. Nothing changes on error.
    pub fn push(&mut self, x: P, v: P) -> Result<u32, Error> {
        self.check_particle(x, v)?;
        if self.len >= self.capacity() {
            return Err(Error::CapacityExceeded {
                capacity: self.capacity(),
            });
        }
        let id = self.len;
        self.positions.as_mut()[id] = x;
        self.state.as_mut()[id] = ParticleState {
            velocity: v,
            start_position: x,
            start_velocity: v,
            ..ParticleState::EMPTY
        };
        self.len += 1;
        Ok(id as u32)
    }

    /// Replaces particle `id`'s position and velocity (its other state is
    /// recomputed by the next step).
    ///
    /// # Errors
    /// [`Error::UnknownId`]; as [`push`](Self::push). Nothing changes on
    /// error.
    pub fn set(&mut self, id: u32, x: P, v: P) -> Result<(), Error> {
        if id as usize >= self.len {
            return Err(Error::UnknownId { id });
        }
        self.check_particle(x, v)?;
        self.positions.as_mut()[id as usize] = x;
        let s = &mut self.state.as_mut()[id as usize];
        s.velocity = v;
        s.start_position = x;
        s.start_velocity = v;
        Ok(())
    }

    /// Adds the particles of `points` (all or none), each with velocity `v`.
    ///
    /// # Errors
    /// As [`push`](Self::push) for any of them; nothing changes on error.
    pub fn extend<I: Iterator<Item = P> + Clone>(
        &mut self,
        points: I,
        v: P,
    ) -> Result<usize, Error> {
        let mut count = 0usize;
        for x in points.clone() {
            self.check_particle(x, v)?;
            count += 1;
        }
        if count > self.capacity() - self.len {
            return Err(Error::CapacityExceeded {
                capacity: self.capacity(),
            });
        }
        for x in points {
            self.push(x, v)?;
        }
        Ok(count)
    }

    /// Fills `region` with a lattice of the given spacing (points at
    /// `min + (i + ½)·spacing` along each axis, inside the region: see
    /// [`source::Lattice`]),
    /// all with velocity `v`; returns how many were added.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a spacing that is not finite and positive
    /// or a lattice of more than 2³² points; the region's box error; as
    /// [`extend`](Self::extend). Nothing changes on error.
    pub fn fill_block(&mut self, region: P::Aabb, spacing: f32, v: P) -> Result<usize, Error> {
        self.fill_lattice(&source::Lattice::new(region, spacing)?, v)
    }

    /// Adds the points of `lattice` (cubic or close packed: see
    /// [`source::Packing`]), all with velocity `v`; returns how many were
    /// added. With a close-packed lattice, give the fluid the parameters
    /// that fit it ([`SphParams::fit_lattice`]).
    ///
    /// # Errors
    /// As [`extend`](Self::extend). Nothing changes on error.
    pub fn fill_lattice(&mut self, lattice: &source::Lattice<P>, v: P) -> Result<usize, Error> {
        // Refuse an oversized block before visiting its points.
        if lattice.len() > self.capacity() - self.len {
            return Err(Error::CapacityExceeded {
                capacity: self.capacity(),
            });
        }
        self.extend(lattice.points(), v)
    }

    /// Advances the fluid by one time step `params.dt`: forces from the
    /// neighbour pairs found by `search` (rebuilt from the positions, radius
    /// `h`, before each force evaluation), integration, then each particle
    /// is resolved against `solids` and the walls (solids do not move during
    /// a step; see [`boundary::Obstacles::advance`]). `timer` is told where
    /// each stage begins and ends.
    ///
    /// # Errors
    /// [`SphParams::kernels`]' errors; the neighbour search's build errors
    /// (for example [`Error::CapacityExceeded`] if it holds fewer particles
    /// than the fluid); [`Error::LengthMismatch`] if the search holds another
    /// number of particles after its build, and [`Error::UnknownId`] if it
    /// reports a pair with an id past the fluid or a particle paired with
    /// itself (a faulty search: such pairs are skipped, never indexed); the
    /// solids' errors; [`Error::NonFinite`] if the state stops being finite
    /// (the scene diverged); [`Error::Diverged`] if the step's
    /// [`StepReport`] exceeds a bound of the fluid's [`StepControl`] (see
    /// [`control`]). On error the particles are
    /// restored to where the step began (the densities, pressures, normals
    /// and accelerations of the failed evaluation may remain).
    ///
    /// Every step that reaches its end (`Ok`, [`Error::Diverged`],
    /// [`Error::NonFinite`]) leaves its report in
    /// [`last_report`](Self::last_report), and with an adaptive control sets
    /// `params.dt` for the next step ([`StepControl`]).
    ///
    /// # Cost
    /// Per force evaluation (two per leapfrog step, one per Euler step): one
    /// build of `search` and three passes over its pairs (density, normals,
    /// forces), `O(N + pairs)`; wrap the search in a [`crate::PairCache`] to
    /// enumerate the pairs once per evaluation. No allocation. See the
    /// type's example.
    pub fn step<N, C, T>(
        &mut self,
        search: &mut N,
        solids: &mut C,
        timer: &mut T,
    ) -> Result<(), Error>
    where
        N: NeighborSearch<P>,
        C: Collider<P>,
        T: StageTimer,
    {
        let kernels = self.params.kernels()?;
        let n = self.len;
        {
            let x = &self.positions.as_ref()[..n];
            for (s, xi) in self.state.as_mut()[..n].iter_mut().zip(x) {
                // Coordinate by coordinate: a whole-point copy between the
                // two buffers became a `memmove` call in firmware, which
                // linked a 1.5 kB `memmove` for these two loops.
                s.start_position = P::from_fn(|k| xi.coord(k));
                s.start_velocity = s.velocity;
            }
        }
        match self.integrate(&kernels, search, solids, timer) {
            Ok(()) => {
                self.steps += 1;
                Ok(())
            }
            Err(e) => {
                let st = &self.state.as_mut()[..n];
                for (x, s) in self.positions.as_mut()[..n].iter_mut().zip(st) {
                    *x = P::from_fn(|k| s.start_position.coord(k));
                }
                for s in &mut self.state.as_mut()[..n] {
                    s.velocity = s.start_velocity;
                }
                Err(e)
            }
        }
    }

    fn integrate<N, C, T>(
        &mut self,
        k: &Kernels,
        search: &mut N,
        solids: &mut C,
        timer: &mut T,
    ) -> Result<(), Error>
    where
        N: NeighborSearch<P>,
        C: Collider<P>,
        T: StageTimer,
    {
        let n = self.len;
        let dt = self.params.dt;
        self.evaluate(k, search, solids, timer)?;
        match self.params.integrator {
            Integrator::Leapfrog => {
                timer.begin(Stage::Integration);
                let x = &mut self.positions.as_mut()[..n];
                for (xi, s) in x.iter_mut().zip(&mut self.state.as_mut()[..n]) {
                    *xi = s.start_position + s.start_velocity * (0.5 * dt);
                    s.velocity = s.start_velocity + s.acceleration * (0.5 * dt);
                }
                timer.end();
                self.collide(search.periodic().is_periodic(), solids, timer)?;
                self.evaluate(k, search, solids, timer)?;
                timer.begin(Stage::Integration);
                let x = &mut self.positions.as_mut()[..n];
                for (xi, s) in x.iter_mut().zip(&mut self.state.as_mut()[..n]) {
                    s.velocity = s.start_velocity + s.acceleration * dt;
                    *xi = s.start_position + (s.start_velocity + s.velocity) * (0.5 * dt);
                }
                timer.end();
            }
            Integrator::Euler => {
                timer.begin(Stage::Integration);
                let x = &mut self.positions.as_mut()[..n];
                for (xi, s) in x.iter_mut().zip(&mut self.state.as_mut()[..n]) {
                    *xi = s.start_position + s.start_velocity * dt;
                    s.velocity = s.start_velocity + s.acceleration * dt;
                }
                timer.end();
            }
        }
        self.collide(search.periodic().is_periodic(), solids, timer)?;
        // Finiteness and the step's report in one pass.
        let x = &self.positions.as_ref()[..n];
        let st = &self.state.as_ref()[..n];
        let mut extremes = control::Extremes::EMPTY;
        for (x, s) in x.iter().zip(st) {
            extremes.add(x, s);
        }
        self.conclude(&extremes, dt)
    }

    /// Walls, obstacles, walls again, for every particle.
    /// `periodic`: the search's box is periodic; after a successful
    /// `evaluate` it is the params' box.
    fn collide<C: Collider<P>, T: StageTimer>(
        &mut self,
        periodic: bool,
        solids: &mut C,
        timer: &mut T,
    ) -> Result<(), Error> {
        timer.begin(Stage::Collisions);
        let n = self.len;
        let p = &self.params;
        let x = &mut self.positions.as_mut()[..n];
        // Through a periodic face first (the walls there then never act).
        if periodic {
            p.periodic_box()?.wrap_all(x);
        }
        let mut result = Ok(());
        for (xi, s) in x.iter_mut().zip(&mut self.state.as_mut()[..n]) {
            // Walls first, so a solid standing on a wall pushes along the
            // wall; then the walls again, so the particle ends inside.
            clamp_to_walls(xi, &mut s.velocity, &p.domain, p.damping);
            if let Err(e) =
                solids.collide(xi, &mut s.velocity, p.particle_radius, p.damping, &p.domain)
            {
                result = Err(e);
                break;
            }
            clamp_to_walls(xi, &mut s.velocity, &p.domain, p.damping);
        }
        timer.end();
        result
    }

    /// One force evaluation at the current positions and velocities: fills
    /// density, pressure, normals and acceleration.
    fn evaluate<N: NeighborSearch<P>, C: Collider<P>, T: StageTimer>(
        &mut self,
        k: &Kernels,
        search: &mut N,
        solids: &mut C,
        timer: &mut T,
    ) -> Result<(), Error> {
        let n = self.len;
        let p = self.params;
        let m = p.mass;
        timer.begin(Stage::NeighborSearch);
        let built = search.build(&self.positions.as_ref()[..n], p.h);
        timer.end();
        built?;
        if search.len() != n {
            return Err(Error::LengthMismatch {
                expected: n,
                got: search.len(),
            });
        }
        let period = search.periodic();
        if !period.is_periodic() {
            // Known from the search's type for most searches: no
            // `PeriodicBox` to build. (`kernels` has checked the params'
            // box, so `periodic_box` would not fail here.)
            if p.periodic != 0 || period != PeriodicBox::NONE {
                return Err(Error::InvalidConfig { field: "periodic" });
            }
        } else if p.periodic_box()? != period {
            return Err(Error::InvalidConfig { field: "periodic" });
        }
        let mut terms = PairTerms {
            x: &self.positions.as_ref()[..n],
            period,
            st: &mut self.state.as_mut()[..n],
            k,
            p: &self.params,
            bad: None,
        };

        timer.begin(Stage::Density);
        let self_density = m * k.poly6(0.0);
        for s in terms.st.iter_mut() {
            s.density = self_density;
        }
        pair_pass(search, &mut terms, PairPass::Density);
        let walls = solids.boundary_particles() > 0;
        if walls {
            solids.add_boundary_density(terms.x, terms.st, k, &p, &period)?;
        }
        for s in terms.st.iter_mut() {
            s.pressure = p.pressure(s.density);
        }
        if walls {
            solids.update_boundary(terms.x, terms.st, k, &p, &period)?;
        }
        timer.end();

        if p.surface_tension > 0.0 {
            timer.begin(Stage::Normals);
            for s in terms.st.iter_mut() {
                s.normal = P::ZERO;
                if CHUNKED {
                    // Each particle's `1/ρ` for the normals pass, in the
                    // acceleration it is about to be reset anyway: one
                    // division per particle instead of one per pair.
                    let inv = 1.0 / s.density;
                    s.acceleration = P::from_fn(|k| if k == 0 { inv } else { 0.0 });
                }
            }
            pair_pass(search, &mut terms, PairPass::Normals);
            timer.end();
        }

        timer.begin(Stage::Forces);
        for s in terms.st.iter_mut() {
            s.acceleration = p.gravity;
        }
        pair_pass(search, &mut terms, PairPass::Forces);
        if walls {
            solids.add_boundary_forces(terms.x, terms.st, k, &p, &period)?;
        }
        timer.end();
        match terms.bad {
            Some(id) => Err(Error::UnknownId { id }),
            None => Ok(()),
        }
    }

    /// Renumbers the particles in Morton (Z) order of their cells in the
    /// uniform grid of radius `h` centred on the domain (the cells every
    /// [`crate::uniform`] hash uses), so that neighbours are near in memory: the
    /// pair passes then read the particle arrays almost sequentially. A
    /// fluid poured or stirred for a while loses that order; on a shuffled
    /// 32 768-particle block the pair passes ran 1.6× slower than in cell
    /// order. In place (the sort moves each particle's state, with its
    /// position carried in `start_position`), no allocation,
    /// `O(N log N)`, deterministic; it changes every particle's id and
    /// nothing else.
    ///
    /// # Errors
    /// [`SphParams::kernels`]' errors (the parameters are checked first).
    pub fn sort_by_cell(&mut self) -> Result<(), Error> {
        self.params.kernels()?;
        let n = self.len;
        // The cells of the uniform grid of radius h over the domain (the
        // grid every uniform hash uses), ordered along the Morton curve.
        let d = self.params.domain;
        let centre = P::from_fn(|k| 0.5 * d.min().coord(k) + 0.5 * d.max().coord(k));
        let grid = crate::uniform::Grid::new(self.params.h, centre, 1)?;
        let x = &self.positions.as_ref()[..n];
        let st = &mut self.state.as_mut()[..n];
        for (s, xi) in st.iter_mut().zip(x) {
            s.start_position = *xi;
        }
        st.sort_unstable_by_key(|s| P::cell_morton(grid.cell_clamped(s.start_position)));
        for (xi, s) in self.positions.as_mut()[..n].iter_mut().zip(st.iter()) {
            *xi = s.start_position;
        }
        Ok(())
    }

    /// Renumbers the particles in the order `order` lists them: the particle
    /// that was `order[k]` becomes particle `k` (its position and all its
    /// state move with it). Give it a neighbour search's own order — for
    /// example [`NeighborSearch::spatial_order`] after a step — and the next
    /// build over the positions finds them (nearly) in its order, while the
    /// pair passes read the particle arrays almost sequentially.
    ///
    /// In place, no allocation, `O(N)` (each particle is swapped at most
    /// once into its final slot), deterministic. Sets each particle's
    /// `start_position` to its position, as [`sort_by_cell`](Self::sort_by_cell) does.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless `order` yields exactly
    /// [`len`](Self::len) ids, [`Error::UnknownId`] for an id past the fluid
    /// or listed twice; the particles are then unchanged.
    ///
    pub fn renumber<I: IntoIterator<Item = u32>>(&mut self, order: I) -> Result<(), Error> {
        let n = self.len;
        let x = &mut self.positions.as_mut()[..n];
        let st = &mut self.state.as_mut()[..n];
        // The positions ride in `start_position`; the position slots hold
        // each particle's new id (its bits in the first coordinate, `NONE`
        // until it is listed) while the state is permuted.
        const UNSET: u32 = u32::MAX;
        let tag = |k: u32| P::from_fn(|c| if c == 0 { f32::from_bits(k) } else { 0.0 });
        for (s, xi) in st.iter_mut().zip(x.iter_mut()) {
            s.start_position = *xi;
            *xi = tag(UNSET);
        }
        let mut count = 0usize;
        let mut bad = None;
        for id in order {
            let slot = x.get_mut(id as usize);
            match slot {
                Some(xi) if count < n && xi.coord(0).to_bits() == UNSET => {
                    *xi = tag(count as u32);
                }
                _ => {
                    bad = Some(if count >= n {
                        Error::LengthMismatch {
                            expected: n,
                            got: count + 1,
                        }
                    } else {
                        Error::UnknownId { id }
                    });
                    break;
                }
            }
            count += 1;
        }
        if bad.is_none() && count != n {
            bad = Some(Error::LengthMismatch {
                expected: n,
                got: count,
            });
        }
        if let Some(e) = bad {
            for (xi, s) in x.iter_mut().zip(st.iter()) {
                *xi = s.start_position;
            }
            return Err(e);
        }
        // Cycle by cycle: the particle in slot i goes to its new id until
        // slot i holds the particle whose new id is i.
        for i in 0..n {
            loop {
                let k = x[i].coord(0).to_bits() as usize;
                if k == i || k >= n {
                    break;
                }
                x.swap(i, k);
                st.swap(i, k);
            }
        }
        for (xi, s) in x.iter_mut().zip(st.iter()) {
            *xi = s.start_position;
        }
        Ok(())
    }

    /// Total kinetic energy `Σ ½m|v|²`.
    pub fn kinetic_energy(&self) -> f64 {
        let m = f64::from(self.params.mass);
        self.state()
            .iter()
            .map(|s| 0.5 * m * f64::from(s.velocity.dot(s.velocity)))
            .sum()
    }

    /// Total momentum `Σ m·v`, per axis (`f64` sums).
    pub fn momentum(&self) -> [f64; 3] {
        let m = f64::from(self.params.mass);
        let mut out = [0.0f64; 3];
        for s in self.state() {
            for (k, o) in out.iter_mut().enumerate().take(P::DIM) {
                *o += m * f64::from(s.velocity.coord(k));
            }
        }
        out
    }
}

impl<P: Point, X: Storage<P>, S: Storage<ParticleState<P>>> crate::error::Validate
    for Fluid<P, X, S>
{
    /// Checks that the length is within the capacity and that every stored
    /// position and velocity is finite (steps and pushes refuse anything
    /// else).
    fn validate(&self) -> Result<(), crate::error::Corruption> {
        const W: &str = "Fluid";
        crate::error::ensure(self.len <= self.capacity(), W, "len within capacity")?;
        crate::error::ensure(
            self.positions()
                .iter()
                .zip(self.state())
                .all(|(x, s)| x.is_finite() && s.velocity.is_finite()),
            W,
            "positions and velocities finite",
        )
    }
}

/// Occupancy of a [`Fluid`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FluidStats {
    /// Particles stored.
    pub particles: usize,
    /// Particles the buffers hold.
    pub capacity: usize,
    /// Steps taken.
    pub steps: u64,
}

impl<P: Point, X: Storage<P>, S: Storage<ParticleState<P>>> crate::inspect::Inspect
    for Fluid<P, X, S>
{
    type Stats = FluidStats;

    /// Bytes of the two buffers: `capacity · (size_of::<P>() +
    /// size_of::<ParticleState<P>>())`.
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.positions.as_ref())
            + core::mem::size_of_val(self.state.as_ref())
    }

    fn stats(&self) -> FluidStats {
        FluidStats {
            particles: self.len,
            capacity: self.capacity(),
            steps: self.steps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Aabb2, Aabb3, BruteForceNeighbors, Vec2, Vec3};

    /// The mean-field σ against the work of pulling a lattice apart: the
    /// pairs of a cubic lattice (spacing `h/8`, `n·m = ρ₀`) across a plane
    /// between two layers, each pair's `∫_r^h F`, halved, per area.
    fn tension_matches_the_lattice_work<P: Point>() {
        let (h, rho0, gamma) = (0.08f32, 1000.0f32, 3.0f32);
        let s = h / 8.0;
        let k = Kernels::new::<P>(h).unwrap();
        let m = rho0 * libm::powf(s, P::DIM as f32);
        // ∫_r^h C, midpoint rule.
        let work = |r: f32| {
            let steps = 256;
            let dr = (h - r) / steps as f32;
            (0..steps)
                .map(|i| f64::from(k.cohesion(r + (i as f32 + 0.5) * dr)) * f64::from(dr))
                .sum::<f64>()
        };
        // One site of the cut per area s^(d-1): i at depth (a + ½)s below
        // the plane, j at (b + ½)s above it and any lateral offset.
        let reach = 9i32;
        let lateral = if P::DIM == 2 { 0 } else { reach };
        let mut total = 0.0f64;
        for a in 0..reach {
            for b in 0..reach {
                for u in -reach..=reach {
                    for v in -lateral..=lateral {
                        let dz = (a + b + 1) as f32 * s;
                        let r2 = dz * dz + ((u * u + v * v) as f32) * s * s;
                        let r = libm::sqrtf(r2);
                        if r < h {
                            total += work(r);
                        }
                    }
                }
            }
        }
        let area = libm::powf(s, (P::DIM - 1) as f32);
        let want = 0.5 * f64::from(gamma) * f64::from(m * m) * total / f64::from(area);
        let mut p =
            SphParams::<P>::seed(P::Aabb::try_new(P::ZERO, P::from_fn(|_| 1.0)).unwrap(), s)
                .unwrap();
        p.h = h;
        p.rest_density = rho0;
        p.surface_tension = gamma;
        let got = f64::from(p.tension().unwrap());
        assert!((got / want - 1.0).abs() < 0.02, "{got} {want}");
        let back = SphParams::<P>::cohesion_for_tension(h, rho0, got as f32).unwrap();
        assert!((back / gamma - 1.0).abs() < 1e-5, "{back}");
    }

    #[test]
    fn tension_is_the_mean_field_of_the_cohesion() {
        tension_matches_the_lattice_work::<Vec2>();
        tension_matches_the_lattice_work::<Vec3>();
        // The water preset's σ, as its documentation gives it.
        let b = Aabb3::new(Vec3::ZERO, Vec3::new(1.0, 1.0, 1.0)).unwrap();
        for (s, sigma) in [(0.02, 0.238), (0.01, 0.059), (0.005, 0.015)] {
            let got = SphParams::<Vec3>::water(b, s, 0.2)
                .unwrap()
                .tension()
                .unwrap();
            assert!((got / sigma - 1.0).abs() < 0.02, "{s}: {got}");
        }
        assert_eq!(
            SphParams::<Vec3>::cohesion_for_tension(0.02, 1000.0, -1.0),
            Err(Error::InvalidConfig {
                field: "surface_tension"
            })
        );
        assert_eq!(
            SphParams::<Vec3>::cohesion_for_tension(0.02, f32::NAN, 0.07),
            Err(Error::InvalidConfig {
                field: "rest_density"
            })
        );
        assert_eq!(
            SphParams::<Vec2>::cohesion_for_tension(f32::NAN, 1000.0, 0.07),
            Err(Error::InvalidRadius)
        );
    }

    /// Evaluates the forces of a block of `domain` with a velocity field
    /// that is not uniform and two particles on one spot, and compares every
    /// particle's acceleration bits with the pair-at-a-time sum of
    /// [`pair_acceleration`] in the search's pair order.
    fn forces_match<P: Point>(domain: P::Aabb, block: P::Aabb) {
        let params = SphParams::seed(domain, 0.05).unwrap();
        let mut fluid = Fluid::new([P::ZERO; 300], [ParticleState::EMPTY; 300], params);
        fluid.fill_block(block, 0.05, P::ZERO).unwrap();
        let x0 = fluid.positions()[0];
        fluid.push(x0, P::ZERO).unwrap();
        let n = fluid.len();
        for id in 0..n as u32 {
            let x = fluid.positions()[id as usize];
            let v = P::from_fn(|c| x.coord((c + 1) % P::DIM) * (c as f32 - 0.7));
            fluid.set(id, x, v).unwrap();
        }
        let k = params.kernels().unwrap();
        let mut search = BruteForceNeighbors::new([P::ZERO; 300]);
        fluid.evaluate(&k, &mut search, &mut (), &mut ()).unwrap();
        let mut pairs = 0usize;
        let mut want = [params.gravity; 300];
        let (x, st) = (fluid.positions(), fluid.state());
        search.for_each_pair(|i, j, d2| {
            let (i, j) = (i as usize, j as usize);
            let a = pair_acceleration(&k, &params, x[i] - x[j], d2, &st[i], &st[j]);
            want[i] += a;
            want[j] -= a;
            pairs += 1;
        });
        assert!(
            pairs > 3 * CHUNK && !pairs.is_multiple_of(CHUNK),
            "{pairs} pairs"
        );
        for (s, w) in st.iter().zip(&want) {
            for c in 0..P::DIM {
                assert_eq!(s.acceleration.coord(c).to_bits(), w.coord(c).to_bits());
            }
        }
    }

    /// The forces pass (a chunk of pairs at a time on hosted targets)
    /// gives every particle exactly the acceleration of the pair-at-a-time
    /// sum, including a last, partial chunk and a pair at zero distance, in
    /// 3D and 2D.
    #[test]
    fn forces_pass_equals_the_pair_at_a_time_sum() {
        let one = Vec3::new(1.0, 1.0, 1.0);
        forces_match::<Vec3>(
            Aabb3::new(Vec3::ZERO, one).unwrap(),
            Aabb3::new(one * 0.1, Vec3::new(0.4, 0.35, 0.3)).unwrap(),
        );
        forces_match::<Vec2>(
            Aabb2::new(Vec2::ZERO, Vec2::new(2.0, 1.0)).unwrap(),
            Aabb2::new(Vec2::new(0.1, 0.1), Vec2::new(0.8, 0.6)).unwrap(),
        );
    }
}
