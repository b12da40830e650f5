//! The test distributions of Pouchol et al. 2009 (§4.1, §4.2).
//!
//! * [`objects_2d`]: `n` boxes in a square of side 2¹³, about 10 % of average
//!   size 2¹⁰, 25 % of 2⁶ and the rest of 2³ (each edge uniform in
//!   `[0.5, 1.5]` times its average).
//! * [`segments_2d`]: moving-particle segments, uniform start in the square,
//!   random direction, length uniform in `(0, 2⁴]`.
//! * [`points_2d`]: uniform points in a square of side 2²⁰ (the
//!   neighbour-search test).
//! * [`spheres_3d`]: the 3D scene: static spheres of diameters log-uniform in
//!   `[2⁻⁴, 2⁻²]` and particles of diameter 2⁻⁶, all uniform in the unit box.

use spatium::{Aabb2, Aabb3, Vec2, Vec3};

use crate::rng::Rng;
use crate::scenarios::BoxScenario;

/// Side of the §4.1 broad-phase square (2¹³).
pub const SQUARE_2D: f32 = 8192.0;

/// Longest particle motion in the §4.1 broad-phase test (2⁴).
pub const SEGMENT_MAX: f32 = 16.0;

/// Side of the §4.1 neighbour-search square (2²⁰).
pub const SQUARE_NNS: f32 = 1_048_576.0;

/// Particle diameter of the §4.2 scene (2⁻⁶).
pub const PARTICLE_3D: f32 = 1.0 / 64.0;

/// The average edge of object `i` of the §4.1 distribution.
fn average_size(rng: &mut Rng) -> f32 {
    let u = rng.f32();
    if u < 0.10 {
        1024.0
    } else if u < 0.35 {
        64.0
    } else {
        8.0
    }
}

/// `n` boxes of the §4.1 size distribution in the square of side 2¹³.
pub fn objects_2d(n: usize, seed: u64) -> Vec<Aabb2> {
    let mut rng = Rng::new(seed ^ 0x9017);
    (0..n)
        .map(|_| {
            let avg = average_size(&mut rng);
            let w = rng.range(0.5, 1.5) * avg;
            let h = rng.range(0.5, 1.5) * avg;
            let x = rng.range(0.0, SQUARE_2D - w);
            let y = rng.range(0.0, SQUARE_2D - h);
            Aabb2::new(Vec2::new(x, y), Vec2::new(x + w, y + h)).expect("valid box")
        })
        .collect()
}

/// `m` particle segments `(start, end)` of length at most 2⁴ in the square.
pub fn segments_2d(m: usize, seed: u64) -> Vec<(Vec2, Vec2)> {
    let mut rng = Rng::new(seed ^ 0x5E6);
    (0..m)
        .map(|_| {
            let a = Vec2::new(rng.range(0.0, SQUARE_2D), rng.range(0.0, SQUARE_2D));
            let t = rng.range(0.0, core::f32::consts::TAU);
            let len = rng.range(0.0, 1.0).max(1e-3) * SEGMENT_MAX;
            (a, Vec2::new(a.x + len * t.cos(), a.y + len * t.sin()))
        })
        .collect()
}

/// The bounding box of a segment (the box of a particle's path).
pub fn segment_box(s: &(Vec2, Vec2)) -> Aabb2 {
    Aabb2::new(
        Vec2::new(s.0.x.min(s.1.x), s.0.y.min(s.1.y)),
        Vec2::new(s.0.x.max(s.1.x), s.0.y.max(s.1.y)),
    )
    .expect("valid box")
}

/// `true` if the segment meets the closed box (slab test).
pub fn segment_hits(s: &(Vec2, Vec2), b: &Aabb2) -> bool {
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    let d = [s.1.x - s.0.x, s.1.y - s.0.y];
    let o = [s.0.x, s.0.y];
    let lo = [b.min.x, b.min.y];
    let hi = [b.max.x, b.max.y];
    for k in 0..2 {
        if d[k] == 0.0 {
            if o[k] < lo[k] || o[k] > hi[k] {
                return false;
            }
        } else {
            let (mut a, mut c) = ((lo[k] - o[k]) / d[k], (hi[k] - o[k]) / d[k]);
            if a > c {
                core::mem::swap(&mut a, &mut c);
            }
            t0 = t0.max(a);
            t1 = t1.min(c);
            if t0 > t1 {
                return false;
            }
        }
    }
    true
}

/// `n` uniform points in the square of side 2²⁰.
pub fn points_2d(n: usize, seed: u64) -> Vec<Vec2> {
    let mut rng = Rng::new(seed ^ 0xA11);
    (0..n)
        .map(|_| Vec2::new(rng.range(0.0, SQUARE_NNS), rng.range(0.0, SQUARE_NNS)))
        .collect()
}

/// A static sphere of the §4.2 scene.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sphere {
    /// Centre.
    pub centre: Vec3,
    /// Radius.
    pub radius: f32,
}

impl Sphere {
    /// Its bounding box.
    pub fn aabb(&self) -> Aabb3 {
        let r = self.radius;
        let c = self.centre;
        Aabb3::new(
            Vec3::new(c.x - r, c.y - r, c.z - r),
            Vec3::new(c.x + r, c.y + r, c.z + r),
        )
        .expect("valid box")
    }
}

/// The §4.2 scene: `spheres` static spheres (diameters log-uniform in
/// `[2⁻⁴, 2⁻²]`) and `particles` particle centres, uniform in the unit box.
pub fn spheres_3d(spheres: usize, particles: usize, seed: u64) -> (Vec<Sphere>, Vec<Vec3>) {
    let mut rng = Rng::new(seed ^ 0x3D);
    let s = (0..spheres)
        .map(|_| {
            let d = 2f32.powf(rng.range(-4.0, -2.0));
            let r = 0.5 * d;
            Sphere {
                centre: Vec3::new(
                    rng.range(r, 1.0 - r),
                    rng.range(r, 1.0 - r),
                    rng.range(r, 1.0 - r),
                ),
                radius: r,
            }
        })
        .collect();
    let h = 0.5 * PARTICLE_3D;
    let p = (0..particles)
        .map(|_| {
            Vec3::new(
                rng.range(h, 1.0 - h),
                rng.range(h, 1.0 - h),
                rng.range(h, 1.0 - h),
            )
        })
        .collect();
    (s, p)
}

/// The §4.1 objects as a moving box scenario (each moving up to 1 % of its
/// size per step, periodic square).
pub fn objects_scenario(n: usize, seed: u64) -> BoxScenario<Aabb2> {
    let boxes = objects_2d(n, seed);
    let mut rng = Rng::new(seed ^ 0x77);
    let velocities = boxes
        .iter()
        .map(|b| {
            let s = 0.01 * (b.max.x - b.min.x);
            Vec2::new(rng.range(-s, s), rng.range(-s, s))
        })
        .collect();
    BoxScenario {
        name: "pouchol_objects2".into(),
        boxes,
        velocities,
        extent: Vec2::new(SQUARE_2D, SQUARE_2D),
    }
}

/// The §4.2 scene as a box scenario: sphere boxes, then particle boxes
/// (diameter 2⁻⁶) falling by up to one diameter per step.
pub fn spheres_scenario(spheres: usize, particles: usize, seed: u64) -> BoxScenario<Aabb3> {
    let (s, p) = spheres_3d(spheres, particles, seed);
    let h = 0.5 * PARTICLE_3D;
    let mut boxes: Vec<Aabb3> = s.iter().map(Sphere::aabb).collect();
    let mut velocities = vec![Vec3::ZERO; s.len()];
    let mut rng = Rng::new(seed ^ 0xFA11);
    for c in p {
        boxes.push(
            Aabb3::new(
                Vec3::new(c.x - h, c.y - h, c.z - h),
                Vec3::new(c.x + h, c.y + h, c.z + h),
            )
            .expect("valid box"),
        );
        velocities.push(Vec3::new(0.0, -rng.range(0.0, PARTICLE_3D), 0.0));
    }
    BoxScenario {
        name: "pouchol_spheres3".into(),
        boxes,
        velocities,
        extent: Vec3::new(1.0, 1.0, 1.0),
    }
}
