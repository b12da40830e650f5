//! The scene: the unit box, the sphere field, the pipe and the solver
//! parameters.

use spatium::sph::SphParams;
use spatium::sph::boundary::{Obstacle, Obstacles, Shape};
use spatium::sph::source::Emitter;
use spatium::{Aabb3, Vec3};
use spatium_host::Rng;
use spatium_host::runtime::{AnyBroad, BroadKind, Named};

/// The scene's solids: the spheres behind the chosen broad phase.
pub type Solids = Obstacles<Vec3, AnyBroad<Aabb3>, Vec<Obstacle<Vec3>>>;

/// Centre of the pipe's mouth.
pub const PIPE_ORIGIN: Vec3 = Vec3::new(0.5, 0.92, 0.5);
/// Direction the pipe pours in.
pub const PIPE_DIRECTION: Vec3 = Vec3::new(0.0, -1.0, 0.0);
/// Speed of the fluid leaving the pipe, m/s.
pub const PIPE_SPEED: f32 = 1.0;
/// Radius of the pipe.
pub const PIPE_RADIUS: f32 = 0.08;

/// Smallest sphere diameter (2⁻⁵).
pub const MIN_DIAMETER: f32 = 1.0 / 32.0;
/// Largest sphere diameter (2⁻³).
pub const MAX_DIAMETER: f32 = 1.0 / 8.0;
/// Lowest and highest point of the sphere field: the spheres fill this
/// band of heights and leave the floor free for the pool.
pub const FIELD: (f32, f32) = (0.15, 0.65);

/// The unit box `[0, 1]³`.
pub fn domain() -> Aabb3 {
    Aabb3 {
        min: Vec3::ZERO,
        max: Vec3::new(1.0, 1.0, 1.0),
    }
}

/// `count` static spheres of diameters log-uniform in
/// [`MIN_DIAMETER`]`..`[`MAX_DIAMETER`] (Pouchol et al. §4.2's
/// distribution, a size class smaller), centres uniform in the band
/// [`FIELD`] and inside the walls. Overlaps are allowed, as in the paper.
pub fn spheres(count: usize, seed: u64) -> Vec<Obstacle<Vec3>> {
    let mut rng = Rng::new(seed);
    let (lo, hi) = (MIN_DIAMETER.ln(), MAX_DIAMETER.ln());
    (0..count)
        .map(|_| {
            let radius = 0.5 * rng.range(lo, hi).exp();
            let center = Vec3::new(
                rng.range(radius, 1.0 - radius),
                rng.range(FIELD.0 + radius, FIELD.1 - radius),
                rng.range(radius, 1.0 - radius),
            );
            Obstacle::fixed(Shape::Sphere { center, radius })
        })
        .collect()
}

/// The [`spheres`] of `count` and `seed` behind a broad phase of `kind`
/// (queried with boxes of a particle's diameter).
///
/// # Errors
/// A one-line message if the broad phase refuses a sphere.
pub fn solids(
    count: usize,
    seed: u64,
    kind: BroadKind,
    params: &SphParams<Vec3>,
) -> Result<Solids, String> {
    let spheres = spheres(count, seed);
    let boxes: Vec<Aabb3> = spheres.iter().map(|o| o.shape.bounds()).collect();
    let broad = AnyBroad::new(kind, &boxes, 2.0 * params.particle_radius)
        .map_err(|e| format!("{} broad phase: {e}", kind.name()))?;
    let mut solids = Obstacles::new(vec![Obstacle::EMPTY; spheres.len()], broad);
    for (i, o) in spheres.into_iter().enumerate() {
        solids
            .add(o)
            .map_err(|e| format!("adding sphere {i} to the broad phase: {e}"))?;
    }
    Ok(solids)
}

/// The solver parameters: the seed paper's table at `spacing`, with time
/// step `dt`.
///
/// # Errors
/// A one-line message if the solver refuses them.
pub fn params(spacing: f32, dt: f32) -> Result<SphParams<Vec3>, String> {
    let mut p = SphParams::seed(domain(), spacing)
        .map_err(|e| format!("SPH parameters for spacing {spacing}: {e}"))?;
    p.dt = dt;
    p.kernels()
        .map_err(|e| format!("SPH parameters with dt {dt}: {e}"))?;
    Ok(p)
}

/// The pipe, emitting `budget` particles on a lattice of `spacing`.
///
/// # Errors
/// A one-line message if the emitter refuses its configuration.
pub fn pipe(spacing: f32, budget: usize) -> Result<Emitter<Vec3>, String> {
    let budget = u32::try_from(budget).map_err(|_| format!("--particles {budget} is too many"))?;
    Emitter::new(
        PIPE_ORIGIN,
        PIPE_DIRECTION,
        PIPE_SPEED,
        PIPE_RADIUS,
        spacing,
        budget,
    )
    .map_err(|e| format!("pipe with spacing {spacing}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spheres_are_seeded_inside_the_field() {
        let a = spheres(200, 7);
        assert_eq!(a, spheres(200, 7));
        assert_ne!(a, spheres(200, 8));
        for o in &a {
            let Shape::Sphere { center, radius } = o.shape else {
                panic!("not a sphere: {o:?}");
            };
            assert!((0.5 * MIN_DIAMETER..=0.5 * MAX_DIAMETER).contains(&radius));
            assert!(center.y - radius >= FIELD.0 && center.y + radius <= FIELD.1);
            assert!(center.x - radius >= 0.0 && center.x + radius <= 1.0);
            assert!(center.z - radius >= 0.0 && center.z + radius <= 1.0);
        }
    }

    #[test]
    fn default_scene_is_accepted() {
        // The main job's default flags (args.rs): spacing 2^-6, dt 0.0025,
        // 10 000 particles.
        assert!(params(1.0 / 64.0, 0.0025).is_ok());
        let pipe = pipe(1.0 / 64.0, 10_000).expect("pipe");
        assert!(pipe.layer_len() > 0);
    }
}
