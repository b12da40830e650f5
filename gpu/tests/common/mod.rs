//! Shared by the integration tests: the adapter (skipped loudly when there
//! is none, a failure under `REQUIRE_GPU=1` or `CI=true`), the CPU
//! reference run and the comparisons.

#![allow(dead_code)]

use spatium::sph::{Fluid, ParticleState, StepControl};
use spatium::uniform::{CellRecord, CellSortedHash, SortedParticle, TableSlot};
use spatium::{NeighborSearch, Point, Vec3};
use spatium_gpu::Gpu;
use spatium_gpu::scene::Scene;

/// The device, or `None` after a `SKIPPED:` line when there is no adapter
/// (a failure instead when `REQUIRE_GPU=1` or `CI=true`: [`gpu_required`]). Prints the adapter and checks
/// that its backend is one `WGPU_BACKEND` asked for.
pub fn gpu(test: &str) -> Option<Gpu> {
    match Gpu::new() {
        Ok(gpu) => {
            eprintln!("{test}: adapter {}", gpu.describe());
            if let Ok(wanted) = std::env::var("WGPU_BACKEND") {
                let backend = gpu.adapter_info().backend;
                let ok = wanted.split(',').any(|w| {
                    let w = w.trim().to_lowercase();
                    match backend {
                        wgpu::Backend::Vulkan => w == "vulkan" || w == "vk",
                        wgpu::Backend::Gl => w == "gl" || w == "gles" || w == "opengl",
                        wgpu::Backend::Metal => w == "metal" || w == "mtl",
                        wgpu::Backend::Dx12 => w == "dx12" || w == "d3d12",
                        _ => false,
                    }
                });
                assert!(
                    ok,
                    "WGPU_BACKEND={wanted} but the adapter runs on {backend:?}"
                );
            }
            Some(gpu)
        }
        Err(e) => {
            if gpu_required() {
                panic!(
                    "{test}: no usable GPU adapter ({e}), and REQUIRE_GPU=1 or CI=true \
                     forbids skipping"
                );
            }
            eprintln!(
                "SKIPPED: {test}: no usable GPU adapter ({e}); set REQUIRE_GPU=1 to fail instead"
            );
            None
        }
    }
}

/// Whether a missing adapter is a failure: `REQUIRE_GPU=1`, or under CI
/// (`CI` is `true`, `1` or `yes`, any case, as in `scripts/lib/stages.sh`).
pub fn gpu_required() -> bool {
    std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1")
        || std::env::var("CI")
            .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes"))
}

/// The core's CPU solver holding the scene's particles, all with velocity
/// `velocity`.
pub fn cpu_fluid(
    scene: &Scene,
    velocity: Vec3,
) -> Fluid<Vec3, Vec<Vec3>, Vec<ParticleState<Vec3>>> {
    let n = scene.positions.len();
    let mut fluid = Fluid::new(
        vec![Vec3::ZERO; n],
        vec![ParticleState::EMPTY; n],
        scene.params,
    );
    // The GPU solver has no stability monitor: its CPU reference runs
    // unchecked, as both did before the monitor (`SphParams::seed`'s doc
    // has the Euler parity scene at 11 m/s after about 30 steps: a Courant
    // number of 1.1).
    fluid
        .set_control(StepControl::UNCHECKED)
        .expect("a valid control");
    fluid
        .extend(scene.positions.iter().copied(), velocity)
        .expect("scene fits");
    fluid
}

/// The CPU reference's neighbour search for `n` particles: a
/// `CellSortedHash` with the core's table length for dense SPH.
pub fn cpu_hash(n: usize) -> impl NeighborSearch<Vec3> + Sync {
    CellSortedHash::<Vec3, _, _, _>::new(
        vec![TableSlot::EMPTY; spatium::table::table_len(n, 4)],
        vec![SortedParticle::EMPTY; n],
        vec![CellRecord::EMPTY; n],
    )
}

/// Steps the core's CPU solver (a `CellSortedHash`, walls only) `steps`
/// times from the scene; returns positions and states by id.
pub fn cpu_run(scene: &Scene, steps: u32) -> (Vec<Vec3>, Vec<ParticleState<Vec3>>) {
    let mut fluid = cpu_fluid(scene, Vec3::ZERO);
    let mut hash = cpu_hash(scene.positions.len());
    for _ in 0..steps {
        fluid.step(&mut hash, &mut (), &mut ()).expect("CPU step");
    }
    (fluid.positions().to_vec(), fluid.state().to_vec())
}

// The parity tolerances, shared by `parity.rs` and `obstacles.rs`.

/// Largest per-particle differences accepted: position 1/1000 of the
/// spacing (m), velocity 1 mm/s (the block falls at up to 0.8 m/s),
/// density 1/1000 of the rest density; the step's start position and
/// velocity as position and velocity. Measured on lavapipe: about 5e-7 m,
/// 2e-4 m/s and 5e-6 (see the README).
pub const POSITION_TOL: f32 = 1e-3 * 0.025;
/// See [`POSITION_TOL`].
pub const VELOCITY_TOL: f32 = 1e-3;
/// See [`POSITION_TOL`].
pub const DENSITY_TOL: f32 = 1e-3;
/// Largest differences of pressure and normal, relative to the largest
/// magnitude of each on the CPU. Measured on lavapipe: about 1e-5.
pub const RELATIVE_TOL: f32 = 1e-3;
/// Largest difference of the acceleration, relative to the largest on the
/// CPU (the pressure force of the particles in contact with the floor).
/// Measured on lavapipe: up to about 1.5e-4.
pub const ACCELERATION_TOL: f32 = 2e-3;

/// Largest per-particle differences between two runs: position and
/// velocity, and the step's start position and velocity, absolute (m,
/// m/s), density
/// relative to the rest density, and pressure, normal and acceleration
/// relative to the largest magnitude of that quantity in the second run.
#[derive(Debug, Default)]
pub struct Deviation {
    pub position: f32,
    pub velocity: f32,
    pub density: f32,
    pub start_position: f32,
    pub start_velocity: f32,
    pub pressure: f32,
    pub normal: f32,
    pub acceleration: f32,
}

impl std::fmt::Display for Deviation {
    /// The figures every parity test prints.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "max |Δx| {:.3e} m, |Δv| {:.3e} m/s, |Δρ|/ρ₀ {:.3e}; start |Δx| {:.3e} m, \
             |Δv| {:.3e} m/s; relative pressure {:.3e}, normal {:.3e}, acceleration {:.3e}",
            self.position,
            self.velocity,
            self.density,
            self.start_position,
            self.start_velocity,
            self.pressure,
            self.normal,
            self.acceleration
        )
    }
}

impl Deviation {
    /// Asserts what every parity scene holds to, walls only or with
    /// obstacles: density within [`DENSITY_TOL`], pressure and normal within
    /// [`RELATIVE_TOL`] and acceleration within [`ACCELERATION_TOL`] of
    /// their largest value (the per-id writes of every pass; the neighbour
    /// loops read sorted copies).
    pub fn assert_derived(&self, test: &str) {
        assert!(
            self.density <= DENSITY_TOL,
            "{test}: density {:e}",
            self.density
        );
        assert!(
            self.pressure <= RELATIVE_TOL,
            "{test}: pressure {:e}",
            self.pressure
        );
        assert!(
            self.normal <= RELATIVE_TOL,
            "{test}: normal {:e}",
            self.normal
        );
        assert!(
            self.acceleration <= ACCELERATION_TOL,
            "{test}: acceleration {:e}",
            self.acceleration
        );
    }
}

pub fn deviation(
    a: (&[Vec3], &[ParticleState<Vec3>]),
    b: (&[Vec3], &[ParticleState<Vec3>]),
    rest_density: f32,
) -> Deviation {
    assert_eq!(a.0.len(), b.0.len());
    let norm = |v: Vec3| v.dot(v).sqrt();
    let mut d = Deviation::default();
    let (mut p_max, mut n_max, mut a_max) = (0.0f32, 0.0f32, 0.0f32);
    for i in 0..a.0.len() {
        let (s, t) = (&a.1[i], &b.1[i]);
        d.position = d.position.max(norm(a.0[i] - b.0[i]));
        d.velocity = d.velocity.max(norm(s.velocity - t.velocity));
        d.density = d.density.max((s.density - t.density).abs() / rest_density);
        d.start_position = d
            .start_position
            .max(norm(s.start_position - t.start_position));
        d.start_velocity = d
            .start_velocity
            .max(norm(s.start_velocity - t.start_velocity));
        d.pressure = d.pressure.max((s.pressure - t.pressure).abs());
        d.normal = d.normal.max(norm(s.normal - t.normal));
        d.acceleration = d.acceleration.max(norm(s.acceleration - t.acceleration));
        p_max = p_max.max(t.pressure.abs());
        n_max = n_max.max(norm(t.normal));
        a_max = a_max.max(norm(t.acceleration));
    }
    d.pressure /= p_max.max(f32::MIN_POSITIVE);
    d.normal /= n_max.max(f32::MIN_POSITIVE);
    d.acceleration /= a_max.max(f32::MIN_POSITIVE);
    d
}
