//! Smoothing kernels of the water-channel seed (§2.2 eq. 1–4, §2.3 eq. 14),
//! in 3D and 2D.
//!
//! The seed prints four of the formulas with typos; these are the kernels of
//! Müller et al. 2003 and Akinci et al. 2013 that it cites, which is what the
//! tests check (normalisation, gradients against finite differences):
//!
//! * eq. 2, the poly6 gradient, lacks its minus sign: it is
//!   `−945/(32πh⁹) · r (h² − |r|²)²`.
//! * eq. 3, the spiky gradient, carries a stray factor `(h² − r²)³`: it is
//!   `−45/(πh⁶) · r̂ (h − |r|)²`.
//! * eq. 4, the viscosity Laplacian, has `h⁹` for `h⁶`: it is
//!   `45/(πh⁶) · (h − |r|)`.
//! * eq. 14, the cohesion spline, has `32/(64πh⁹)` for `32/(πh⁹)`.
//!
//! The 2D coefficients are derived the same way: poly6 `4/(πh⁸)`, spiky
//! `10/(πh⁵)`, viscosity kernel `10/(3πh²)`, viscosity Laplacian `40/(πh⁵)`
//! (the coefficient that makes `∫ |r|² ∇²W dA = 2·d`, as the 3D one does with
//! `d = 3`: the discrete Laplacian is then consistent for `v = x²`), and the
//! cohesion spline `25280/(627πh⁸)`, which gives its integral over the plane
//! the value `79/336` of the 3D spline's integral over space.

use core::f32::consts::PI;

use crate::error::Error;
use crate::geom::Point;

/// Precomputed kernel coefficients for one smoothing length `h` and one
/// dimension. All kernels vanish at and beyond `|r| = h`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Kernels {
    h: f32,
    h2: f32,
    poly6: f32,
    poly6_grad: f32,
    spiky: f32,
    spiky_grad: f32,
    viscosity: f32,
    viscosity_laplacian: f32,
    cohesion: f32,
    cohesion_offset: f32,
}

impl Kernels {
    /// The kernels of support `h` in the dimension of `P`.
    ///
    /// # Errors
    /// [`Error::InvalidRadius`] if `h` is not finite and positive, or so small
    /// or large that a coefficient (`∝ h⁻⁹`) is not a finite non-zero `f32`.
    pub fn new<P: Point>(h: f32) -> Result<Self, Error> {
        if !(h.is_finite() && h > 0.0) {
            return Err(Error::InvalidRadius);
        }
        let h2 = h * h;
        let h3 = h2 * h;
        let h5 = h3 * h2;
        let h6 = h3 * h3;
        let h8 = h6 * h2;
        let h9 = h6 * h3;
        let k = if P::DIM == 3 {
            Self {
                h,
                h2,
                poly6: 315.0 / (64.0 * PI * h9),
                poly6_grad: 945.0 / (32.0 * PI * h9),
                spiky: 15.0 / (PI * h6),
                spiky_grad: 45.0 / (PI * h6),
                viscosity: 15.0 / (2.0 * PI * h3),
                viscosity_laplacian: 45.0 / (PI * h6),
                cohesion: 32.0 / (PI * h9),
                cohesion_offset: h6 / 64.0,
            }
        } else {
            Self {
                h,
                h2,
                poly6: 4.0 / (PI * h8),
                poly6_grad: 24.0 / (PI * h8),
                spiky: 10.0 / (PI * h5),
                spiky_grad: 30.0 / (PI * h5),
                viscosity: 10.0 / (3.0 * PI * h2),
                viscosity_laplacian: 40.0 / (PI * h5),
                cohesion: 25280.0 / (627.0 * PI * h8),
                cohesion_offset: h6 / 64.0,
            }
        };
        let coefficients = [
            k.poly6,
            k.poly6_grad,
            k.spiky,
            k.spiky_grad,
            k.viscosity,
            k.viscosity_laplacian,
            k.cohesion,
            k.cohesion_offset,
        ];
        if coefficients.iter().all(|c| c.is_finite() && *c > 0.0) {
            Ok(k)
        } else {
            Err(Error::InvalidRadius)
        }
    }

    /// The support radius `h`.
    #[inline]
    pub fn h(&self) -> f32 {
        self.h
    }

    /// `W_poly6` (eq. 1) at squared distance `r2`.
    #[inline(always)]
    pub fn poly6(&self, r2: f32) -> f32 {
        if r2 >= self.h2 {
            return 0.0;
        }
        let d = self.h2 - r2;
        self.poly6 * d * d * d
    }

    /// `∇W_poly6` (eq. 2, sign corrected) at offset `r` with `r2 = |r|²`.
    #[inline(always)]
    pub fn poly6_gradient<P: Point>(&self, r: P, r2: f32) -> P {
        if r2 >= self.h2 {
            return P::ZERO;
        }
        let d = self.h2 - r2;
        r * (-self.poly6_grad * d * d)
    }

    /// `W_spiky` (Müller et al. 2003; the kernel whose gradient is eq. 3) at
    /// distance `r`.
    #[inline]
    pub fn spiky(&self, r: f32) -> f32 {
        if r >= self.h || r.is_nan() {
            return 0.0;
        }
        let d = self.h - r.max(0.0);
        self.spiky * d * d * d
    }

    /// `∇W_spiky` (eq. 3, corrected) at offset `r` of length `len`; zero for
    /// coincident points, where the direction is undefined.
    #[inline(always)]
    pub fn spiky_gradient<P: Point>(&self, r: P, len: f32) -> P {
        if len >= self.h || len <= 0.0 || len.is_nan() {
            return P::ZERO;
        }
        let d = self.h - len;
        r * (-self.spiky_grad * d * d / len)
    }

    /// The scalar `f` with `∇W_spiky(r) = f · r`, given `|r|` and `1/|r|`
    /// (zero at and beyond `h` and for coincident points): the solver's pair
    /// loop shares `1/|r|` between this and the cohesion term.
    #[inline(always)]
    pub fn spiky_gradient_factor(&self, len: f32, inv_len: f32) -> f32 {
        if len >= self.h || len <= 0.0 || len.is_nan() {
            return 0.0;
        }
        let d = self.h - len;
        -self.spiky_grad * d * d * inv_len
    }

    /// `W_viscosity` (Müller et al. 2003; the kernel whose Laplacian is
    /// eq. 4) at distance `r`. It is singular at `r = 0` (returns `+∞`).
    #[inline]
    pub fn viscosity(&self, r: f32) -> f32 {
        if r >= self.h || r.is_nan() {
            return 0.0;
        }
        if r <= 0.0 {
            return f32::INFINITY;
        }
        let q = r / self.h;
        self.viscosity * (-0.5 * q * q * q + q * q + 0.5 / q - 1.0)
    }

    /// `∇²W_viscosity` (eq. 4, corrected) at distance `r`.
    #[inline(always)]
    pub fn viscosity_laplacian(&self, r: f32) -> f32 {
        if r >= self.h || r.is_nan() {
            return 0.0;
        }
        self.viscosity_laplacian * (self.h - r.max(0.0))
    }

    /// The cohesion spline `C(r)` (eq. 14, corrected): negative (repulsive)
    /// below `0.273h`, positive (attractive) above, continuous at `h/2`,
    /// zero at `h` and beyond, and defined as zero at `r = 0` (no direction).
    #[inline(always)]
    pub fn cohesion(&self, r: f32) -> f32 {
        if r >= self.h || r <= 0.0 || r.is_nan() {
            return 0.0;
        }
        let d = self.h - r;
        let t = d * d * d * r * r * r;
        if 2.0 * r > self.h {
            self.cohesion * t
        } else {
            self.cohesion * (2.0 * t - self.cohesion_offset)
        }
    }
}

/// `a` where `c`, else `b`: both are computed, so a loop of these has no
/// branch and vectorises.
#[inline(always)]
fn select(c: bool, a: f32, b: f32) -> f32 {
    if c { a } else { b }
}

/// Branch-free forms of the kernels for loops over many pairs (the forces
/// pass of [`Fluid::step`](super::Fluid::step) computes a chunk of pairs'
/// scalars at once; with no branch in the loop the compiler vectorises it).
/// Each equals its scalar form bit for bit for every argument that is not
/// NaN (a NaN distance gives 0 here); the tests check it.
impl Kernels {
    /// `1/len` for `len > 0`, else 0 (what
    /// [`spiky_gradient_factor`](Self::spiky_gradient_factor) and the
    /// cohesion term are given).
    #[inline(always)]
    pub(crate) fn inverse_lane(len: f32) -> f32 {
        select(len > 0.0, 1.0 / len, 0.0)
    }

    /// [`spiky_gradient_factor`](Self::spiky_gradient_factor).
    #[inline(always)]
    pub(crate) fn spiky_gradient_factor_lane(&self, len: f32, inv_len: f32) -> f32 {
        let d = self.h - len;
        select(
            len < self.h && len > 0.0,
            -self.spiky_grad * d * d * inv_len,
            0.0,
        )
    }

    /// [`viscosity_laplacian`](Self::viscosity_laplacian).
    #[inline(always)]
    pub(crate) fn viscosity_laplacian_lane(&self, r: f32) -> f32 {
        select(
            r < self.h,
            self.viscosity_laplacian * (self.h - r.max(0.0)),
            0.0,
        )
    }

    /// [`cohesion`](Self::cohesion).
    #[inline(always)]
    pub(crate) fn cohesion_lane(&self, r: f32) -> f32 {
        let d = self.h - r;
        let t = d * d * d * r * r * r;
        let c = select(
            2.0 * r > self.h,
            self.cohesion * t,
            self.cohesion * (2.0 * t - self.cohesion_offset),
        );
        select(r < self.h && r > 0.0, c, 0.0)
    }
}

impl Kernels {
    /// `[poly6, poly6_grad, spiky_grad, viscosity_laplacian, cohesion,
    /// cohesion_offset]`, as in [`ParamBlock`].
    pub(crate) fn coefficients(&self) -> [f32; 6] {
        [
            self.poly6,
            self.poly6_grad,
            self.spiky_grad,
            self.viscosity_laplacian,
            self.cohesion,
            self.cohesion_offset,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Vec2, Vec3};

    /// The lane forms equal the scalar kernels bit for bit on a sweep of
    /// distances through the support, its ends, zero and beyond.
    fn lanes_match<P: Point>(h: f32) {
        let k = Kernels::new::<P>(h).unwrap();
        let ends = [
            -h,
            -0.0,
            f32::MIN_POSITIVE,
            0.5 * h,
            h,
            h * (1.0 - f32::EPSILON),
        ];
        let sweep = (0..=2400).map(|i| i as f32 * h / 2000.0);
        for r in sweep.chain(ends) {
            let inv = if r > 0.0 { 1.0 / r } else { 0.0 };
            assert_eq!(Kernels::inverse_lane(r).to_bits(), inv.to_bits(), "1/{r}");
            assert_eq!(
                k.spiky_gradient_factor_lane(r, inv).to_bits(),
                k.spiky_gradient_factor(r, inv).to_bits(),
                "spiky at {r}"
            );
            assert_eq!(
                k.viscosity_laplacian_lane(r).to_bits(),
                k.viscosity_laplacian(r).to_bits(),
                "viscosity at {r}"
            );
            assert_eq!(
                k.cohesion_lane(r).to_bits(),
                k.cohesion(r).to_bits(),
                "cohesion at {r}"
            );
        }
    }

    #[test]
    fn lane_forms_equal_the_scalar_kernels() {
        for h in [0.125, 0.05, 1.0, 3.7] {
            lanes_match::<Vec3>(h);
            lanes_match::<Vec2>(h);
        }
    }
}
