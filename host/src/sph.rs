//! The SPH oracle: the seed's equations evaluated directly, particle by
//! particle over all others (`O(N²)`), in `f64`, with kernels written out
//! from their formulas here rather than taken from `spatium::sph::kernel`.
//! The differential tests compare one force evaluation of
//! [`spatium::sph::Fluid`] over each neighbour search against it.

use spatium::Point;
use spatium::sph::{EquationOfState, SphParams};

/// What one force evaluation yields per particle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Evaluated {
    /// Density (eq. 5).
    pub density: f64,
    /// Pressure (eq. 6 / 7).
    pub pressure: f64,
    /// Surface normal (eq. 15), per axis.
    pub normal: [f64; 3],
    /// Acceleration (eq. 8–17), per axis.
    pub acceleration: [f64; 3],
    /// `|g|` plus the sum of the magnitudes of every pair term added to the
    /// acceleration: the scale the `f32` rounding of a sum of these terms is
    /// relative to.
    pub magnitude: f64,
}

fn pi() -> f64 {
    core::f64::consts::PI
}

/// `(poly6, poly6 gradient factor, spiky gradient factor, viscosity
/// Laplacian, cohesion)` coefficients for dimension `d` and support `h`.
fn coefficients(d: usize, h: f64) -> [f64; 5] {
    if d == 3 {
        [
            315.0 / (64.0 * pi() * h.powi(9)),
            -945.0 / (32.0 * pi() * h.powi(9)),
            -45.0 / (pi() * h.powi(6)),
            45.0 / (pi() * h.powi(6)),
            32.0 / (pi() * h.powi(9)),
        ]
    } else {
        [
            4.0 / (pi() * h.powi(8)),
            -24.0 / (pi() * h.powi(8)),
            -30.0 / (pi() * h.powi(5)),
            40.0 / (pi() * h.powi(5)),
            25280.0 / (627.0 * pi() * h.powi(8)),
        ]
    }
}

/// The Akinci cohesion spline's bracket (without its coefficient).
fn spline(r: f64, h: f64) -> f64 {
    if r <= 0.0 || r >= h {
        0.0
    } else if 2.0 * r > h {
        (h - r).powi(3) * r.powi(3)
    } else {
        2.0 * (h - r).powi(3) * r.powi(3) - h.powi(6) / 64.0
    }
}

fn vec<P: Point>(p: P) -> [f64; 3] {
    let mut v = [0.0; 3];
    for (k, c) in v.iter_mut().enumerate().take(P::DIM) {
        *c = f64::from(p.coord(k));
    }
    v
}

/// Evaluates densities, pressures, normals and accelerations of the
/// particles at `x` with velocities `v` under `params`, pair terms over every
/// `j ≠ i` with `|xᵢ − xⱼ|² < h²` (the crate's strict radius test, in `f32`
/// as the structures do it).
// Index loops mirror the equations (i, j over particles).
#[allow(clippy::needless_range_loop)]
pub fn evaluate<P: Point>(params: &SphParams<P>, x: &[P], v: &[P]) -> Vec<Evaluated> {
    let d = P::DIM;
    let h = f64::from(params.h);
    let [c6, g6, gs, lv, cc] = coefficients(d, h);
    let m = f64::from(params.mass);
    let rho0 = f64::from(params.rest_density);
    let k = f64::from(params.stiffness);
    let mu = f64::from(params.viscosity);
    let gamma = f64::from(params.surface_tension);
    let h2f = params.h * params.h;
    let n = x.len();
    let near = |i: usize, j: usize| i != j && x[i].distance_squared(x[j]) < h2f;
    let offset = |i: usize, j: usize| {
        let (a, b) = (vec(x[i]), vec(x[j]));
        [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
    };
    let norm = |r: [f64; 3]| (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]).sqrt();
    let mut out = vec![
        Evaluated {
            density: 0.0,
            pressure: 0.0,
            normal: [0.0; 3],
            acceleration: [0.0; 3],
            magnitude: 0.0,
        };
        n
    ];
    for i in 0..n {
        let mut rho = m * c6 * h.powi(6);
        for j in 0..n {
            if near(i, j) {
                let r2 = norm(offset(i, j)).powi(2);
                rho += m * c6 * (h * h - r2).powi(3);
            }
        }
        let p = match params.eos {
            EquationOfState::Tait => k * ((rho / rho0).powi(7) - 1.0),
            EquationOfState::IdealGas => k * (rho - rho0),
        };
        out[i].density = rho;
        out[i].pressure = if params.clamp_negative_pressure {
            p.max(0.0)
        } else {
            p
        };
    }
    if gamma > 0.0 {
        for i in 0..n {
            let mut nrm = [0.0; 3];
            for j in 0..n {
                if near(i, j) {
                    let r = offset(i, j);
                    let r2 = norm(r).powi(2);
                    let f = h * m / out[j].density * g6 * (h * h - r2).powi(2);
                    for a in 0..3 {
                        nrm[a] += f * r[a];
                    }
                }
            }
            out[i].normal = nrm;
        }
    }
    for i in 0..n {
        let mut acc = vec(params.gravity);
        let mut magnitude = norm(acc);
        let (ri, pi_) = (out[i].density, out[i].pressure);
        for j in 0..n {
            if !near(i, j) {
                continue;
            }
            let r = offset(i, j);
            let len = norm(r);
            let (rj, pj) = (out[j].density, out[j].pressure);
            let (vi, vj) = (vec(v[i]), vec(v[j]));
            let spiky = if len > 0.0 && len < h {
                gs * (h - len).powi(2) / len
            } else {
                0.0
            };
            let lap = if len < h { lv * (h - len) } else { 0.0 };
            let correction = 2.0 * rho0 / (ri + rj);
            let cohesion = if len > 0.0 {
                -gamma * m * cc * spline(len, h) / len
            } else {
                0.0
            };
            let mut terms = [[0.0; 3]; 3];
            for a in 0..3 {
                terms[0][a] = -m * (pi_ / (ri * ri) + pj / (rj * rj)) * spiky * r[a];
                terms[1][a] = mu * m * (vj[a] - vi[a]) / (ri * rj) * lap;
                if gamma > 0.0 {
                    terms[2][a] = correction
                        * (cohesion * r[a] - gamma * (out[i].normal[a] - out[j].normal[a]));
                }
            }
            for t in terms {
                magnitude += norm(t);
                for a in 0..3 {
                    acc[a] += t[a];
                }
            }
        }
        out[i].acceleration = acc;
        out[i].magnitude = magnitude;
    }
    out
}
