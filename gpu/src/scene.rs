//! The scenes of the tests, the benchmark and the frames: a block of fluid
//! released in a box (a dam break).

use spatium::sph::source::Lattice;
use spatium::sph::{ParticleState, SphParams};
use spatium::{Aabb3, Vec3};

use crate::context::Gpu;
use crate::error::GpuError;
use crate::fluid::{FluidConfig, GpuFluid};

/// Parameters and initial particles, by id.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The solver's parameters.
    pub params: SphParams<Vec3>,
    /// Initial positions.
    pub positions: Vec<Vec3>,
    /// Initial states (velocity zero).
    pub states: Vec<ParticleState<Vec3>>,
}

impl Scene {
    /// The scene on the GPU: a [`GpuFluid`] holding exactly its particles
    /// (blocking; native targets only).
    ///
    /// # Errors
    /// [`GpuFluid::new`]'s errors.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn fluid(&self, gpu: &Gpu, config: FluidConfig) -> Result<GpuFluid, GpuError> {
        pollster::block_on(self.fluid_async(gpu, config))
    }

    /// The scene on the GPU: a [`GpuFluid`] holding exactly its particles;
    /// on every target (natively `fluid` blocks on it).
    ///
    /// # Errors
    /// [`GpuFluid::new_async`]'s errors.
    pub async fn fluid_async(&self, gpu: &Gpu, config: FluidConfig) -> Result<GpuFluid, GpuError> {
        GpuFluid::new_async(
            gpu,
            self.params,
            self.positions.len(),
            &self.positions,
            &self.states,
            config,
        )
        .await
    }
}

/// `count` particles of the lattice of `spacing` filling a cube of side
/// `⌈∛count⌉·spacing` in the corner of a box twice as wide (x), one and a
/// half times as high (y) and as deep (z); the seed's parameters
/// ([`SphParams::seed`]) with the time step `dt`. The particles are the
/// first `count` points of the cube's lattice, x fastest, as
/// [`spatium::sph::Fluid::fill_block`] orders them.
///
/// # Errors
/// [`GpuError::Core`] for a spacing or time step the core refuses.
pub fn dam_break(count: usize, spacing: f32, dt: f32) -> Result<Scene, GpuError> {
    let mut side = 1usize;
    while side * side * side < count {
        side += 1;
    }
    let l = side as f32 * spacing;
    let domain = Aabb3::new(Vec3::ZERO, Vec3::new(2.0 * l, 1.5 * l, l))?;
    let mut params = SphParams::seed(domain, spacing)?;
    params.dt = dt;
    params.kernels()?;
    let block = Aabb3::new(Vec3::ZERO, Vec3::new(l, l, l))?;
    let positions: Vec<Vec3> = Lattice::new(block, spacing)?.points().take(count).collect();
    let states = positions
        .iter()
        .map(|&x| ParticleState {
            start_position: x,
            ..ParticleState::EMPTY
        })
        .collect();
    Ok(Scene {
        params,
        positions,
        states,
    })
}
