//! The settling spheres of Poirrier 2009 §6: the scene of the linear
//! kd-tree report (`src/bin/kd_report.rs`) and benchmark
//! (`benches/kdtree.rs`).
//!
//! `N` spheres of radius [`RADIUS`], centres uniform in a cube of side `L`
//! chosen so that the density `d = N·(4/3)π·r³ / L³` is the one asked for
//! (the paper's `d = 0.1` by default, [`DENSITY`]). Each step:
//!
//! 1. **Integration** (semi-implicit Euler, [`DT`]): gravity [`GRAVITY`]
//!    along −z on the velocity, then the velocity on the position.
//! 2. **Floor** at `z = 0`: a sphere whose bottom went below it is put back
//!    on it (centre at `z = r`) and its downward velocity is dropped.
//! 3. **Pairwise non-penetration** (not global, as in the paper): the
//!    overlapping sphere pairs (centre distance `< 2r`) are taken from a
//!    linear kd-tree over the spheres' boxes ([`PairSource`]: its exact pairs
//!    by default), sorted, and handled one after the other: each sphere of
//!    a pair is pushed apart along the centre line by half the penetration
//!    (with the positions as the earlier pairs left them, so a push may
//!    create new, unhandled overlaps) and their approaching normal velocity
//!    is removed (a perfectly inelastic contact between equal masses), then
//!    the floor is enforced again on both.
//!
//! Everything is deterministic: the positions come from [`Rng`] with a
//! seed, the pairs are handled in sorted order and the arithmetic is plain
//! `f32` on one thread, so a scene of a given `N`, density and seed is the
//! same at every step on every run. The spheres' boxes after each step are
//! [`Settle::boxes`]: the snapshot the report times every structure on.

use core::f64::consts::PI;

use spatium::kdtree::{Candidates, KdConfig, KdRecord, LinearKdTree, Split};
use spatium::{Aabb3, Vec3};
use spatium_host::rng::Rng;

/// Sphere radius.
pub const RADIUS: f32 = 1.0;

/// Gravity along −z.
pub const GRAVITY: f32 = 9.81;

/// Time step.
pub const DT: f32 = 0.05;

/// The paper's density: total sphere volume over the volume of the cube the
/// centres are drawn in.
pub const DENSITY: f64 = 0.1;

/// Seed of the scene.
pub const SEED: u64 = 0x5EED_2009;

/// Volume of one sphere.
pub fn sphere_volume() -> f64 {
    4.0 / 3.0 * PI * (RADIUS as f64).powi(3)
}

/// Side of the cube holding `n` spheres at `density`.
pub fn side_for(n: usize, density: f64) -> f32 {
    (n as f64 * sphere_volume() / density).cbrt() as f32
}

/// `n` centres uniform in `[0, L)³` with `L = side_for(n, density)` (the
/// unconstrained distribution of the paper's Table 1), and `L`.
pub fn uniform_centres(n: usize, density: f64, seed: u64) -> (Vec<Vec3>, f32) {
    let side = side_for(n, density);
    let mut rng = Rng::new(seed);
    let c = (0..n)
        .map(|_| {
            Vec3::new(
                rng.range(0.0, side),
                rng.range(0.0, side),
                rng.range(0.0, side),
            )
        })
        .collect();
    (c, side)
}

/// The box of the sphere centred at `c`.
#[inline]
pub fn sphere_box(c: Vec3) -> Aabb3 {
    Aabb3 {
        min: Vec3::new(c.x - RADIUS, c.y - RADIUS, c.z - RADIUS),
        max: Vec3::new(c.x + RADIUS, c.y + RADIUS, c.z + RADIUS),
    }
}

/// The boxes of spheres centred at `centres`.
pub fn sphere_boxes(centres: &[Vec3]) -> Vec<Aabb3> {
    centres.iter().map(|&c| sphere_box(c)).collect()
}

/// The centre of a sphere's box.
#[inline]
pub fn box_centre(b: &Aabb3) -> Vec3 {
    Vec3::new(
        0.5 * (b.min.x + b.max.x),
        0.5 * (b.min.y + b.max.y),
        0.5 * (b.min.z + b.max.z),
    )
}

/// `true` if the spheres centred at `a` and `b` overlap (centre distance
/// below `2r`).
#[inline]
pub fn spheres_overlap(a: Vec3, b: Vec3) -> bool {
    let (dx, dy, dz) = (b.x - a.x, b.y - a.y, b.z - a.z);
    dx * dx + dy * dy + dz * dz < 4.0 * RADIUS * RADIUS
}

/// Where [`Settle::step`] takes its overlapping sphere pairs from. Both give
/// the same pairs in the same order, hence the same scene bit for bit (the
/// overlapping spheres' boxes overlap, so they are among the exact pairs,
/// and the raw candidates hold every exact pair).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairSource {
    /// The kd-tree's exact pairs ([`Candidates::Exact`]), filtered by the
    /// sphere test.
    Exact,
    /// The kd-tree's raw candidates ([`Candidates::Raw`]), filtered by the
    /// sphere test, then sorted and deduplicated: the same pairs, cheaper
    /// while the exact sweep costs much more than the raw one.
    RawDedup,
}

/// The settling-spheres simulation (see the module documentation).
#[derive(Clone, Debug)]
pub struct Settle {
    pos: Vec<Vec3>,
    vel: Vec<Vec3>,
    boxes: Vec<Aabb3>,
    tree: LinearKdTree<Aabb3, u64, Vec<KdRecord<u64>>>,
    pairs: Vec<(u32, u32)>,
    source: PairSource,
    side: f32,
    steps: usize,
    contacts: usize,
}

impl Settle {
    /// `n` spheres at rest, centres uniform in `[0, L)² × [r, r + L)` (the
    /// cube of [`side_for`], lifted by one radius so that no sphere starts
    /// below the floor).
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`spatium::kdtree::MAX_ELEMENTS`].
    pub fn new(n: usize, density: f64, seed: u64) -> Self {
        assert!(n <= spatium::kdtree::MAX_ELEMENTS, "too many spheres");
        let (mut pos, side) = uniform_centres(n, density, seed);
        for p in &mut pos {
            p.z += RADIUS;
        }
        let boxes = sphere_boxes(&pos);
        // Room for every box split 8 ways: the scene's pairs never depend on
        // how many boxes the buffers let the tree split.
        // The paper's splitting rule: few raw candidates, which the raw
        // pair source sweeps.
        let cap = 8 * n.max(1);
        let tree = LinearKdTree::new(
            vec![KdRecord::EMPTY; cap],
            vec![KdRecord::EMPTY; cap],
            KdConfig::DEFAULT.with_split(Split::PAPER).expect("split"),
        );
        Self {
            vel: vec![Vec3::ZERO; n],
            pos,
            boxes,
            tree,
            pairs: Vec::new(),
            source: PairSource::Exact,
            side,
            steps: 0,
            contacts: 0,
        }
    }

    /// The same scene with its pairs from `source`.
    pub fn with_pair_source(mut self, source: PairSource) -> Self {
        self.source = source;
        // The raw sweep never reads the packed box copies: skip them.
        let config = *self.tree.config();
        self.tree
            .set_config(config.with_box_copies(source != PairSource::RawDedup));
        self
    }

    /// The paper's scene: [`DENSITY`] and [`SEED`].
    pub fn paper(n: usize) -> Self {
        Self::new(n, DENSITY, SEED)
    }

    /// Number of spheres.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// `true` if there is no sphere.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// Side of the cube the centres were drawn in.
    pub fn side(&self) -> f32 {
        self.side
    }

    /// Steps run so far.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Sphere centres after the last step.
    pub fn centres(&self) -> &[Vec3] {
        &self.pos
    }

    /// Sphere boxes after the last step (box `i` is sphere `i`'s).
    pub fn boxes(&self) -> &[Aabb3] {
        &self.boxes
    }

    /// Overlapping sphere pairs handled by the last step.
    pub fn contacts(&self) -> usize {
        self.contacts
    }

    /// Runs steps until [`steps`](Self::steps) is `step`.
    pub fn advance_to(&mut self, step: usize) {
        while self.steps < step {
            self.step();
        }
    }

    /// One step: integration, floor, pairwise non-penetration (see the
    /// module documentation).
    ///
    /// # Panics
    ///
    /// If the kd-tree build fails (a non-finite position).
    pub fn step(&mut self) {
        for (p, v) in self.pos.iter_mut().zip(&mut self.vel) {
            v.z -= GRAVITY * DT;
            p.x += v.x * DT;
            p.y += v.y * DT;
            p.z += v.z * DT;
            floor(p, v);
        }
        for (b, &p) in self.boxes.iter_mut().zip(&self.pos) {
            *b = sphere_box(p);
        }
        self.tree.build(&self.boxes).expect("kd-tree build");
        self.pairs.clear();
        let (pos, pairs) = (&self.pos, &mut self.pairs);
        let mode = match self.source {
            PairSource::Exact => Candidates::Exact,
            PairSource::RawDedup => Candidates::Raw,
        };
        self.tree
            .for_each_candidate_pair(&self.boxes, mode, |a, b| {
                if spheres_overlap(pos[a as usize], pos[b as usize]) {
                    pairs.push((a.min(b), a.max(b)));
                }
            })
            .expect("kd-tree sweep");
        self.pairs.sort_unstable();
        if self.source == PairSource::RawDedup {
            self.pairs.dedup();
        }
        self.contacts = self.pairs.len();
        for &(a, b) in &self.pairs {
            separate(&mut self.pos, &mut self.vel, a as usize, b as usize);
        }
        for (b, &p) in self.boxes.iter_mut().zip(&self.pos) {
            *b = sphere_box(p);
        }
        self.steps += 1;
    }
}

/// Puts a sphere below the floor back on it and drops its downward velocity.
#[inline]
fn floor(p: &mut Vec3, v: &mut Vec3) {
    if p.z < RADIUS {
        p.z = RADIUS;
        if v.z < 0.0 {
            v.z = 0.0;
        }
    }
}

/// Pushes spheres `a` and `b` apart by half the penetration each along the
/// centre line and removes their approaching normal velocity.
fn separate(pos: &mut [Vec3], vel: &mut [Vec3], a: usize, b: usize) {
    let (pa, pb) = (pos[a], pos[b]);
    let d = Vec3::new(pb.x - pa.x, pb.y - pa.y, pb.z - pa.z);
    let dist2 = d.x * d.x + d.y * d.y + d.z * d.z;
    let reach = 2.0 * RADIUS;
    if dist2 >= reach * reach {
        // An earlier pair already moved them apart.
        return;
    }
    let dist = dist2.sqrt();
    // Coincident centres: push along z.
    let n = if dist > 1e-6 {
        Vec3::new(d.x / dist, d.y / dist, d.z / dist)
    } else {
        Vec3::new(0.0, 0.0, 1.0)
    };
    let half = 0.5 * (reach - dist);
    pos[a] = Vec3::new(pa.x - n.x * half, pa.y - n.y * half, pa.z - n.z * half);
    pos[b] = Vec3::new(pb.x + n.x * half, pb.y + n.y * half, pb.z + n.z * half);
    let (va, vb) = (vel[a], vel[b]);
    let vn = (vb.x - va.x) * n.x + (vb.y - va.y) * n.y + (vb.z - va.z) * n.z;
    if vn < 0.0 {
        let h = 0.5 * vn;
        vel[a] = Vec3::new(va.x + n.x * h, va.y + n.y * h, va.z + n.z * h);
        vel[b] = Vec3::new(vb.x - n.x * h, vb.y - n.y * h, vb.z - n.z * h);
    }
    floor(&mut pos[a], &mut vel[a]);
    floor(&mut pos[b], &mut vel[b]);
}

#[cfg(test)]
mod tests {
    use spatium::BoundingBox;

    use super::*;

    #[test]
    fn density_and_side() {
        let n = 10_000;
        let side = side_for(n, 0.1) as f64;
        let d = n as f64 * sphere_volume() / side.powi(3);
        assert!((d - 0.1).abs() < 1e-4, "{d}");
    }

    /// Same seed, same scene, whichever pair source; spheres stay above the
    /// floor; the kd-tree's exact pairs are brute force's.
    #[test]
    fn deterministic_and_settling() {
        let mut a = Settle::new(2_000, 0.3, 7);
        let mut b = Settle::new(2_000, 0.3, 7).with_pair_source(PairSource::RawDedup);
        for _ in 0..30 {
            a.step();
            b.step();
            assert_eq!(a.centres(), b.centres());
            assert_eq!(a.contacts(), b.contacts());
            assert!(a.centres().iter().all(|p| p.z >= RADIUS));
        }
        assert!(a.contacts() > 0);
        // The kd-tree's exact pairs match brute force on the last snapshot.
        let boxes = a.boxes().to_vec();
        let mut want = 0;
        for i in 0..boxes.len() {
            for j in i + 1..boxes.len() {
                want += boxes[i].overlaps(&boxes[j]) as usize;
            }
        }
        let mut got = 0;
        a.tree.build(&boxes).unwrap();
        a.tree
            .for_each_candidate_pair(&boxes, Candidates::Exact, |_, _| got += 1)
            .unwrap();
        assert_eq!(got, want);
    }
}
