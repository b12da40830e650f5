//! Plain-data layouts of the solver's state and parameters, for copying to a
//! GPU (or a file, or a DMA buffer) without conversion.
//!
//! * [`ParticleState<Vec3>`] and [`ParticleState<Vec2>`] are
//!   [`bytemuck::Pod`]: `#[repr(C)]` structs of `f32` only (17 in 3D, 12 in
//!   2D), no padding, so a `&[ParticleState<Vec3>]` is a `&[u8]` by
//!   [`bytemuck::cast_slice`]. In WGSL the same bytes read as a struct of 17
//!   scalar `f32` fields (stride 68); a struct of `vec3<f32>` would not match,
//!   since WGSL aligns `vec3` to 16 bytes.
//! * [`ParamBlock`] is [`SphParams`] with the kernel coefficients of
//!   [`Kernels`](super::kernel::Kernels), flattened into 32 scalar 32-bit fields (128 bytes), valid
//!   as a WGSL uniform or storage struct of the same field order.
//!
//! The `Pod` impls of `ParticleState` are the crate's only `unsafe`: the
//! derive cannot check a generic struct for padding, so the two
//! instantiations are declared by hand and their layout is checked at
//! compile time below (size equals the sum of the fields, alignment 4).
//! The `miri` stage of the test suite runs this module's tests under Miri.

#![allow(unsafe_code)]

use core::mem::{align_of, size_of};

use bytemuck::{Pod, Zeroable};

use super::{EquationOfState, Integrator, ParticleState, SphParams};
use crate::error::Error;
use crate::geom::{BoundingBox, Point, Vec2, Vec3};

const _: () = {
    assert!(size_of::<Vec3>() == 12 && align_of::<Vec3>() == 4);
    assert!(size_of::<Vec2>() == 8 && align_of::<Vec2>() == 4);
    assert!(size_of::<ParticleState<Vec3>>() == 17 * 4);
    assert!(size_of::<ParticleState<Vec2>>() == 12 * 4);
    assert!(align_of::<ParticleState<Vec3>>() == 4);
    assert!(align_of::<ParticleState<Vec2>>() == 4);
};

// SAFETY: `ParticleState<P>` is `#[repr(C)]` with five `P` fields and two
// `f32` fields. For `P = Vec3` (three `f32`, `#[repr(C)]`, itself `Pod`) and
// `P = Vec2` (two `f32`), every field has alignment 4 and a size that is a
// multiple of 4, and the assertions above check that the struct's size is
// exactly the sum of its fields: there are no padding bytes. Every bit
// pattern is a valid `f32`, the all-zero one included, and the type holds no
// pointers or interior mutability.
unsafe impl Zeroable for ParticleState<Vec3> {}
// SAFETY: as above.
unsafe impl Pod for ParticleState<Vec3> {}
// SAFETY: as above.
unsafe impl Zeroable for ParticleState<Vec2> {}
// SAFETY: as above.
unsafe impl Pod for ParticleState<Vec2> {}

/// [`SphParams`] and the coefficients of its [`Kernels`](super::kernel::Kernels) as one flat block of
/// 32-bit scalars, in this field order (128 bytes, a multiple of 16, so it is
/// also a valid WGSL uniform struct). Two-dimensional parameters leave the
/// `z` fields 0.
///
/// Built by [`SphParams::param_block`], which checks the parameters first.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ParamBlock {
    /// Axes: 2 or 3.
    pub dims: u32,
    /// 0: Tait (eq. 7); 1: ideal gas (eq. 6).
    pub eos: u32,
    /// 0: leapfrog; 1: explicit Euler.
    pub integrator: u32,
    /// 1: negative pressures are clamped to 0.
    pub clamp_negative_pressure: u32,
    /// Smoothing length `h`.
    pub h: f32,
    /// `h²`.
    pub h2: f32,
    /// Particle mass.
    pub mass: f32,
    /// Rest density `ρ₀`.
    pub rest_density: f32,
    /// Stiffness `k`.
    pub stiffness: f32,
    /// Viscosity `μ`.
    pub viscosity: f32,
    /// Surface-tension coefficient `γ`.
    pub surface_tension: f32,
    /// Bounce damping.
    pub damping: f32,
    /// Time step `Δt`.
    pub dt: f32,
    /// Collision radius against obstacles.
    pub particle_radius: f32,
    /// Gravity, `x`.
    pub gravity_x: f32,
    /// Gravity, `y`.
    pub gravity_y: f32,
    /// Gravity, `z`.
    pub gravity_z: f32,
    /// Domain minimum, `x`.
    pub domain_min_x: f32,
    /// Domain minimum, `y`.
    pub domain_min_y: f32,
    /// Domain minimum, `z`.
    pub domain_min_z: f32,
    /// Domain maximum, `x`.
    pub domain_max_x: f32,
    /// Domain maximum, `y`.
    pub domain_max_y: f32,
    /// Domain maximum, `z`.
    pub domain_max_z: f32,
    /// Poly6 coefficient ([`Kernels::poly6`](super::kernel::Kernels::poly6) = `c·(h² − r²)³`).
    pub poly6: f32,
    /// Poly6 gradient coefficient (`−c·r·(h² − r²)²`).
    pub poly6_grad: f32,
    /// Spiky gradient coefficient of the pressure term (`−c·r̂·(h − r)²`),
    /// times [`SphParams::gradient_correction`].
    pub spiky_grad: f32,
    /// Viscosity Laplacian coefficient (`c·(h − r)`).
    pub viscosity_laplacian: f32,
    /// Cohesion spline coefficient ([`Kernels::cohesion`](super::kernel::Kernels::cohesion)).
    pub cohesion: f32,
    /// Cohesion spline offset `h⁶/64` (inner branch).
    pub cohesion_offset: f32,
    /// Zero padding to a multiple of 16 bytes.
    pub pad: [u32; 3],
}

const _: () = assert!(size_of::<ParamBlock>() == 128);

impl<P: Point> SphParams<P> {
    /// The parameters and their kernel coefficients as a flat
    /// [`ParamBlock`].
    ///
    /// # Errors
    /// [`SphParams::kernels`]' errors.
    pub fn param_block(&self) -> Result<ParamBlock, Error> {
        let k = self.kernels()?;
        let axis = |p: P, i: usize| if i < P::DIM { p.coord(i) } else { 0.0 };
        let (lo, hi) = (self.domain.min(), self.domain.max());
        let c = k.coefficients();
        Ok(ParamBlock {
            dims: P::DIM as u32,
            eos: match self.eos {
                EquationOfState::Tait => 0,
                EquationOfState::IdealGas => 1,
            },
            integrator: match self.integrator {
                Integrator::Leapfrog => 0,
                Integrator::Euler => 1,
            },
            clamp_negative_pressure: u32::from(self.clamp_negative_pressure),
            h: self.h,
            h2: self.h * self.h,
            mass: self.mass,
            rest_density: self.rest_density,
            stiffness: self.stiffness,
            viscosity: self.viscosity,
            surface_tension: self.surface_tension,
            damping: self.damping,
            dt: self.dt,
            particle_radius: self.particle_radius,
            gravity_x: axis(self.gravity, 0),
            gravity_y: axis(self.gravity, 1),
            gravity_z: axis(self.gravity, 2),
            domain_min_x: axis(lo, 0),
            domain_min_y: axis(lo, 1),
            domain_min_z: axis(lo, 2),
            domain_max_x: axis(hi, 0),
            domain_max_y: axis(hi, 1),
            domain_max_z: axis(hi, 2),
            poly6: c[0],
            poly6_grad: c[1],
            spiky_grad: c[2] * self.gradient_correction,
            viscosity_laplacian: c[3],
            cohesion: c[4],
            cohesion_offset: c[5],
            pad: [0; 3],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Aabb2, Aabb3};

    fn state3(i: u32) -> ParticleState<Vec3> {
        let f = |k: u32| (i * 17 + k) as f32 * 0.5 - 3.0;
        ParticleState {
            velocity: Vec3::new(f(0), f(1), f(2)),
            acceleration: Vec3::new(f(3), f(4), f(5)),
            normal: Vec3::new(f(6), f(7), f(8)),
            start_position: Vec3::new(f(9), f(10), f(11)),
            start_velocity: Vec3::new(f(12), f(13), f(14)),
            density: f(15),
            pressure: f(16),
        }
    }

    #[test]
    fn particle_state_3d_bytes_are_its_fields_in_order() {
        let states: [ParticleState<Vec3>; 3] = [state3(0), state3(1), state3(2)];
        let words: &[f32] = bytemuck::cast_slice(&states);
        assert_eq!(words.len(), 51);
        for (i, w) in words.iter().enumerate() {
            assert_eq!(*w, (i as u32) as f32 * 0.5 - 3.0, "word {i}");
        }
        let bytes: &[u8] = bytemuck::cast_slice(&states);
        let back: &[ParticleState<Vec3>] = bytemuck::cast_slice(bytes);
        assert_eq!(back, &states);
        let zero: ParticleState<Vec3> = Zeroable::zeroed();
        assert_eq!(zero, ParticleState::EMPTY);
    }

    #[test]
    fn particle_state_2d_bytes_are_its_fields_in_order() {
        let s = ParticleState {
            velocity: Vec2::new(1.0, 2.0),
            acceleration: Vec2::new(3.0, 4.0),
            normal: Vec2::new(5.0, 6.0),
            start_position: Vec2::new(7.0, 8.0),
            start_velocity: Vec2::new(9.0, 10.0),
            density: 11.0,
            pressure: 12.0,
        };
        let words: &[f32] = bytemuck::cast_slice(core::slice::from_ref(&s));
        assert_eq!(
            words,
            &[
                1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0
            ]
        );
        let zero: ParticleState<Vec2> = Zeroable::zeroed();
        assert_eq!(zero, ParticleState::EMPTY);
    }

    #[test]
    fn param_block_carries_params_and_kernels() {
        let domain = Aabb3::new(Vec3::new(-1.0, 0.0, 0.5), Vec3::new(1.0, 2.0, 3.0)).unwrap();
        let mut p: SphParams<Vec3> = SphParams::seed(domain, 0.05).unwrap();
        p.integrator = Integrator::Euler;
        let b = p.param_block().unwrap();
        let k = p.kernels().unwrap();
        assert_eq!(
            (b.dims, b.eos, b.integrator, b.clamp_negative_pressure),
            (3, 0, 1, 1)
        );
        assert_eq!((b.h, b.h2, b.mass, b.dt), (p.h, p.h * p.h, p.mass, p.dt));
        assert_eq!(
            (b.gravity_x, b.gravity_y, b.gravity_z),
            (0.0, -crate::sph::G, 0.0)
        );
        assert_eq!(
            (b.domain_min_x, b.domain_min_y, b.domain_min_z),
            (-1.0, 0.0, 0.5)
        );
        assert_eq!(
            (b.domain_max_x, b.domain_max_y, b.domain_max_z),
            (1.0, 2.0, 3.0)
        );
        // The coefficients reproduce the kernels.
        let r = 0.3 * p.h;
        let d = b.h2 - r * r;
        assert_eq!(b.poly6 * d * d * d, k.poly6(r * r));
        assert_eq!(b.viscosity_laplacian * (b.h - r), k.viscosity_laplacian(r));
        let bytes = bytemuck::bytes_of(&b);
        assert_eq!(bytes.len(), 128);
        assert_eq!(&bytes[116..], &[0; 12]);

        let d2 = Aabb2::new(Vec2::new(0.0, 0.0), Vec2::new(1.0, 1.0)).unwrap();
        let p2: SphParams<Vec2> = SphParams::seed(d2, 0.05).unwrap();
        let b2 = p2.param_block().unwrap();
        assert_eq!(
            (b2.dims, b2.gravity_z, b2.domain_min_z, b2.domain_max_z),
            (2, 0.0, 0.0, 0.0)
        );

        let mut bad = p;
        bad.dt = f32::NAN;
        assert_eq!(bad.param_block(), Err(Error::InvalidConfig { field: "dt" }));
    }
}
