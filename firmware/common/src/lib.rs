//! Shared pieces of spatium's firmware checks (on-target tests, stack report
//! and size binaries): a deterministic PRNG, scene generators, a brute-force
//! pair oracle computed on the target, and stack measurement by painting.

#![no_std]

pub mod stack;
pub mod workloads;

use spatium::sph::{EquationOfState, Integrator, SphParams};
use spatium::{Aabb2, Aabb3, BoundingBox, Point, Vec2, Vec3};

/// Marsaglia's xorshift32: deterministic, tiny, good enough for test scenes.
#[derive(Clone, Copy, Debug)]
pub struct XorShift32(u32);

impl XorShift32 {
    /// A generator from a seed (0 is replaced by a fixed non-zero seed).
    pub const fn new(seed: u32) -> Self {
        Self(if seed == 0 { 0x9E37_79B9 } else { seed })
    }

    /// The next 32 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }

    /// Uniform in `[0, 1)` with 24 bits.
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 8) as f32 * (1.0 / 16_777_216.0)
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }
}

/// Fills `out` with points uniform in `[0, extent)³`.
pub fn points3(rng: &mut XorShift32, extent: f32, out: &mut [Vec3]) {
    for p in out {
        *p = Vec3::new(
            rng.range(0.0, extent),
            rng.range(0.0, extent),
            rng.range(0.0, extent),
        );
    }
}

/// Fills `out` with points uniform in `[0, extent)²`.
pub fn points2(rng: &mut XorShift32, extent: f32, out: &mut [Vec2]) {
    for p in out {
        *p = Vec2::new(rng.range(0.0, extent), rng.range(0.0, extent));
    }
}

/// Fills `out` with boxes whose lower corners are uniform in `[0, extent)³`
/// and whose edges are uniform in `[min_edge, max_edge)` per axis.
pub fn boxes3(rng: &mut XorShift32, extent: f32, min_edge: f32, max_edge: f32, out: &mut [Aabb3]) {
    for b in out {
        let lo = Vec3::new(
            rng.range(0.0, extent),
            rng.range(0.0, extent),
            rng.range(0.0, extent),
        );
        let hi = Vec3::new(
            lo.x + rng.range(min_edge, max_edge),
            lo.y + rng.range(min_edge, max_edge),
            lo.z + rng.range(min_edge, max_edge),
        );
        *b = Aabb3 { min: lo, max: hi };
    }
}

/// Fills `out` with boxes whose lower corners are uniform in `[0, extent)²`
/// and whose edges are uniform in `[min_edge, max_edge)` per axis.
pub fn boxes2(rng: &mut XorShift32, extent: f32, min_edge: f32, max_edge: f32, out: &mut [Aabb2]) {
    for b in out {
        let lo = Vec2::new(rng.range(0.0, extent), rng.range(0.0, extent));
        let hi = Vec2::new(
            lo.x + rng.range(min_edge, max_edge),
            lo.y + rng.range(min_edge, max_edge),
        );
        *b = Aabb2 { min: lo, max: hi };
    }
}

/// An order-independent summary of a set of unordered pairs: count, a sum
/// and an xor of a 64-bit mix of each normalised pair, and whether a pair of
/// an id with itself was seen. Two equal summaries mean, with overwhelming
/// probability, equal pair sets (a duplicated pair changes count and sum).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairSet {
    /// Pairs added.
    pub count: u32,
    /// Wrapping sum of the pairs' mixes.
    pub sum: u64,
    /// Xor of the pairs' mixes (rotated, so it is not a function of `sum`).
    pub xor: u64,
    /// A pair `(i, i)` was added.
    pub self_pair: bool,
    /// The largest id seen, plus one (0 if none).
    pub id_bound: u32,
}

/// splitmix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl PairSet {
    /// The empty set.
    pub const EMPTY: Self = Self {
        count: 0,
        sum: 0,
        xor: 0,
        self_pair: false,
        id_bound: 0,
    };

    /// Adds the unordered pair `{a, b}`.
    pub fn add(&mut self, a: u32, b: u32) {
        let (lo, hi) = (a.min(b), a.max(b));
        let h = mix(((lo as u64) << 32) | hi as u64);
        self.count += 1;
        self.sum = self.sum.wrapping_add(h);
        self.xor ^= h.rotate_left(29);
        self.self_pair |= a == b;
        self.id_bound = self.id_bound.max(hi + 1);
    }
}

/// Brute-force oracle of a point query: every `i` with
/// `distance_squared(point, points[i]) < radius²`, summarised as the pairs
/// `(u32::MAX - 1, i)`.
pub fn brute_within<P: Point>(points: &[P], point: P, radius: f32) -> PairSet {
    let r2 = radius * radius;
    let mut set = PairSet::EMPTY;
    for (i, &p) in points.iter().enumerate() {
        if point.distance_squared(p) < r2 {
            set.add(u32::MAX - 1, i as u32);
        }
    }
    set
}

/// Brute-force oracle: every pair `i < j` of `points` with
/// `distance_squared < radius²` (the crate's strict convention, with the
/// crate's own distance function, so the sets agree exactly).
pub fn brute_point_pairs<P: Point>(points: &[P], radius: f32) -> PairSet {
    let r2 = radius * radius;
    let mut set = PairSet::EMPTY;
    for (i, &a) in points.iter().enumerate() {
        for (j, &b) in points.iter().enumerate().skip(i + 1) {
            if a.distance_squared(b) < r2 {
                set.add(i as u32, j as u32);
            }
        }
    }
    set
}

/// Brute-force oracle: every pair `i < j` of overlapping `boxes`.
pub fn brute_box_pairs<B: BoundingBox>(boxes: &[B]) -> PairSet {
    brute_box_pairs_where(boxes, |_| true)
}

/// Brute-force oracle: every pair `i < j` of overlapping `boxes` with both
/// `keep(i)` and `keep(j)` (the ids still stored).
pub fn brute_box_pairs_where<B: BoundingBox>(boxes: &[B], keep: impl Fn(usize) -> bool) -> PairSet {
    let mut set = PairSet::EMPTY;
    for (i, a) in boxes.iter().enumerate() {
        if !keep(i) {
            continue;
        }
        for (j, b) in boxes.iter().enumerate().skip(i + 1) {
            if keep(j) && a.overlaps(b) {
                set.add(i as u32, j as u32);
            }
        }
    }
    set
}

/// Brute-force oracle of a box query over the ids with `keep(id)`: the
/// answer is summarised as the pairs `(u32::MAX - 1, id)`.
pub fn brute_box_query<B: BoundingBox>(
    boxes: &[B],
    q: &B,
    keep: impl Fn(usize) -> bool,
) -> PairSet {
    let mut set = PairSet::EMPTY;
    for (i, b) in boxes.iter().enumerate() {
        if keep(i) && b.overlaps(q) {
            set.add(u32::MAX - 1, i as u32);
        }
    }
    set
}

/// The seed's parameter table (`SphParams::seed`: μ 0.02, k 1, ρ₀ 1, γ 1,
/// damping 0.5, Tait, leapfrog, Δt 0.005, `h = 2·spacing`, collision radius
/// `spacing / 2`) as a `const`, for `static` fluids: `SphParams::seed` is
/// not a `const fn` (its lattice mass sums kernels), so the mass is given.
pub const fn seed_params(domain: Aabb3, spacing: f32, mass: f32) -> SphParams<Vec3> {
    SphParams {
        h: 2.0 * spacing,
        mass,
        rest_density: 1.0,
        stiffness: 1.0,
        eos: EquationOfState::Tait,
        clamp_negative_pressure: true,
        viscosity: 0.02,
        surface_tension: 1.0,
        gravity: Vec3::new(0.0, -9.81, 0.0),
        damping: 0.5,
        dt: 0.005,
        integrator: Integrator::Leapfrog,
        domain,
        particle_radius: 0.5 * spacing,
        periodic: 0,
        gradient_correction: 1.0,
    }
}

/// Particle spacing of the SPH scene shared by the firmware tests, the stack
/// workloads and the size binaries.
pub const SPH_SPACING: f32 = 0.025;

/// The walls of that scene: a 0.3 cube at the origin.
pub const SPH_DOMAIN: Aabb3 = Aabb3 {
    min: Vec3::ZERO,
    max: Vec3::new(0.3, 0.3, 0.3),
};

/// [`seed_params`] of that scene with the mass `SphParams::seed(SPH_DOMAIN,
/// SPH_SPACING)` computes (its lattice mass), for binaries that must not
/// link the `f64` lattice sum.
pub const SPH_PARAMS: SphParams<Vec3> = seed_params(SPH_DOMAIN, SPH_SPACING, 1.547_374_3e-5);
