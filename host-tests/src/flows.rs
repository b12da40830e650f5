//! Parameters of the analytic validation flows (`tests/sph_periodic.rs`,
//! `tests/sph_poiseuille.rs`): a weakly compressible, water-like fluid with a
//! physical viscosity, set from the flow's scales rather than a preset.

use spatium::sph::{EquationOfState, SphParams};
use spatium::{Error, Point};

/// Water-like density (`ρ₀ = 1000`), the lattice mass of `spacing` at
/// `h = h_over_s·spacing`, Tait with speed of sound `c` (negative pressures
/// kept; the caller may clamp them), kinematic viscosity `nu`, no surface
/// tension, the body force `gravity`, and `Δt` the smaller of `h/(4c)` and
/// `h²/(8ν)`.
///
/// # Errors
/// [`SphParams::seed`]'s and [`SphParams::lattice_mass`]'s.
pub fn viscous_params<P: Point>(
    domain: P::Aabb,
    spacing: f32,
    h_over_s: f32,
    c: f32,
    nu: f32,
    gravity: P,
) -> Result<SphParams<P>, Error> {
    let rho0 = 1000.0;
    let mut p = SphParams::<P>::seed(domain, spacing)?;
    p.h = h_over_s * spacing;
    p.rest_density = rho0;
    p.mass = SphParams::<P>::lattice_mass(p.h, spacing, rho0)?;
    p.eos = EquationOfState::Tait;
    p.stiffness = rho0 * c * c / 7.0;
    p.clamp_negative_pressure = false;
    p.viscosity = nu * rho0;
    p.surface_tension = 0.0;
    p.gravity = gravity;
    p.dt = (0.25 * p.h / c).min(0.125 * p.h * p.h / nu);
    Ok(p)
}
