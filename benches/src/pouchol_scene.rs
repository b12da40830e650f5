//! The 3D scene of Pouchol et al. 2009 §4.2: particles falling under
//! gravity onto 2000 static spheres in the unit box, with simple collision
//! response. The scene of the hierarchical-hashing report
//! (`src/bin/hhash_report.rs`).
//!
//! The spheres and the initial particle centres come from
//! [`spheres_3d`]; particles have
//! radius [`PARTICLE_RADIUS`] (`2⁻⁷`, diameter `2⁻⁶`) and start at rest.
//! Each frame:
//!
//! 1. **Prediction** ([`PoucholScene::predict`]): gravity [`GRAVITY`] along
//!    −y on the velocity (semi-implicit Euler, [`DT`]), the speed capped at
//!    [`MAX_SPEED`], and the end position `p + v·dt`. A particle's *path box*
//!    is the box of its start and end centres inflated by its radius (the
//!    union of its boxes at the start and the end of the step). With
//!    `g·dt² = 2·10⁻⁴` a particle dropped from rest crosses the box in about
//!    100 frames.
//! 2. **Collision detection** ([`PoucholScene::detect`], the part the report
//!    times): the structure is rehashed (the spheres are static but hashed
//!    again every frame, as the paper counts "hashing objects"), holding the
//!    spheres' boxes (ids `0..S`) and the particles' path boxes (ids
//!    `S..S + P`); each particle's path box is queried for exact candidates;
//!    the narrow phase keeps the spheres whose centre is closer than
//!    `R + r` to the particle's end position, and flags the walls within `r`
//!    of it. Candidates that are other particles' path boxes are counted and
//!    skipped (particle–particle interaction is the uniform hash's job).
//! 3. **Response** ([`PoucholScene::respond`], untimed): for each contact
//!    sphere, in increasing id order (so the trajectory does not depend on
//!    the order a structure reports candidates in), a particle still
//!    penetrating it is pushed out to its surface and its inward normal
//!    velocity is reflected with restitution [`RESTITUTION`]; walls clamp
//!    the position and reflect the velocity with damping [`WALL_DAMPING`];
//!    then overlapping particle pairs (centre distance below `2r`, found by
//!    a `uniform::CellSortedHash` of radius `2r`) are pushed apart by half
//!    the penetration each and lose their approaching normal velocity, in
//!    sorted pair order, and the walls are enforced again.
//!
//! Everything is deterministic (seeded positions, sorted contacts and pairs,
//! plain `f32` on one thread), and the response reads only the contact
//! lists, so two structures that report the same exact candidates produce
//! the same trajectory bit for bit.

use spatium::hhash::{Candidates, HashConfig, Scheme};
use spatium::{Aabb3, BroadPhase, NeighborSearch, Vec3};
use spatium_host::make::{self, VecCellSorted, VecClassHash};
use spatium_host::pouchol::{PARTICLE_3D, Sphere, spheres_3d};

/// Number of static spheres (the paper's 2000).
pub const SPHERES: usize = 2000;

/// Particle radius (`2⁻⁷`; the paper's particles are `2⁻⁶` in size).
pub const PARTICLE_RADIUS: f32 = 0.5 * PARTICLE_3D;

/// Time step.
pub const DT: f32 = 0.01;

/// Gravity along −y: `½·g·(100·dt)² = 1`, the box's height in 100 frames.
pub const GRAVITY: f32 = 2.0;

/// Speed cap: the speed of a fall across the whole box, `√(2g)`. It bounds
/// the path boxes, hence the classes they need.
pub const MAX_SPEED: f32 = 2.0;

/// Restitution of particle–sphere contacts.
pub const RESTITUTION: f32 = 0.5;

/// Damping of the velocity reflected by a wall.
pub const WALL_DAMPING: f32 = 0.5;

/// Seed of the scene.
pub const SEED: u64 = 0x5EED_2009_0402;

/// Contacts found by one collision detection: per particle, its contact
/// spheres (CSR) and walls, plus candidate counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contacts {
    /// `offsets[i]..offsets[i + 1]` indexes particle `i`'s spheres.
    pub offsets: Vec<u32>,
    /// Contact sphere ids, grouped by particle.
    pub spheres: Vec<u32>,
    /// Per particle: bit `2k` the low wall of axis `k`, bit `2k + 1` the high
    /// one.
    pub walls: Vec<u8>,
    /// Exact candidates that are spheres (before the narrow phase).
    pub sphere_candidates: u64,
    /// Exact candidates that are other particles' path boxes (skipped).
    pub particle_candidates: u64,
}

impl Contacts {
    fn clear(&mut self, particles: usize) {
        self.offsets.clear();
        self.offsets.reserve(particles + 1);
        self.spheres.clear();
        self.walls.clear();
        self.walls.reserve(particles);
        self.sphere_candidates = 0;
        self.particle_candidates = 0;
    }

    /// Sorts each particle's spheres by id (outside any timing).
    pub fn sort(&mut self) {
        for w in self.offsets.windows(2) {
            self.spheres[w[0] as usize..w[1] as usize].sort_unstable();
        }
    }

    /// Particle–sphere contacts.
    pub fn sphere_contacts(&self) -> usize {
        self.spheres.len()
    }

    /// Particles touching a wall.
    pub fn wall_contacts(&self) -> usize {
        self.walls.iter().filter(|&&w| w != 0).count()
    }
}

/// The §4.2 simulation (see the module documentation).
#[derive(Clone, Debug)]
pub struct PoucholScene {
    spheres: Vec<Sphere>,
    sphere_boxes: Vec<Aabb3>,
    pos: Vec<Vec3>,
    vel: Vec<Vec3>,
    next: Vec<Vec3>,
    paths: Vec<Aabb3>,
    nns: VecCellSorted<Vec3>,
    pairs: Vec<(u32, u32)>,
    frames: usize,
    particle_pairs: usize,
}

#[inline]
fn sub(a: Vec3, b: Vec3) -> Vec3 {
    Vec3::new(a.x - b.x, a.y - b.y, a.z - b.z)
}

#[inline]
fn axpy(a: f32, x: Vec3, y: Vec3) -> Vec3 {
    Vec3::new(a * x.x + y.x, a * x.y + y.y, a * x.z + y.z)
}

#[inline]
fn dot(a: Vec3, b: Vec3) -> f32 {
    a.x * b.x + a.y * b.y + a.z * b.z
}

#[inline]
fn get(v: Vec3, k: usize) -> f32 {
    [v.x, v.y, v.z][k]
}

#[inline]
fn set(v: &mut Vec3, k: usize, x: f32) {
    match k {
        0 => v.x = x,
        1 => v.y = x,
        _ => v.z = x,
    }
}

/// Wall flags of a centre: bit `2k` if within `r` of the low wall of axis
/// `k`, bit `2k + 1` for the high wall.
#[inline]
fn walls_of(p: Vec3) -> u8 {
    let r = PARTICLE_RADIUS;
    let mut w = 0u8;
    for k in 0..3 {
        let x = get(p, k);
        w |= u8::from(x < r) << (2 * k);
        w |= u8::from(x > 1.0 - r) << (2 * k + 1);
    }
    w
}

/// Clamps a particle into `[r, 1 − r]³`, reflecting and damping the velocity
/// of each wall it went through.
#[inline]
fn clamp_walls(p: &mut Vec3, v: &mut Vec3) {
    let r = PARTICLE_RADIUS;
    for k in 0..3 {
        let x = get(*p, k);
        let u = get(*v, k);
        if x < r {
            set(p, k, r);
            if u < 0.0 {
                set(v, k, -WALL_DAMPING * u);
            }
        } else if x > 1.0 - r {
            set(p, k, 1.0 - r);
            if u > 0.0 {
                set(v, k, -WALL_DAMPING * u);
            }
        }
    }
}

/// The path box of a particle moving from `a` to `b`.
#[inline]
pub fn path_box(a: Vec3, b: Vec3) -> Aabb3 {
    let r = PARTICLE_RADIUS;
    Aabb3 {
        min: Vec3::new(a.x.min(b.x) - r, a.y.min(b.y) - r, a.z.min(b.z) - r),
        max: Vec3::new(a.x.max(b.x) + r, a.y.max(b.y) + r, a.z.max(b.z) + r),
    }
}

impl PoucholScene {
    /// [`SPHERES`] spheres and `particles` particles at rest, from `seed`.
    pub fn new(particles: usize, seed: u64) -> Self {
        let (spheres, pos) = spheres_3d(SPHERES, particles, seed);
        let sphere_boxes = spheres.iter().map(Sphere::aabb).collect();
        let n = pos.len();
        let nns = make::cell_sorted::<Vec3>(n, spatium::table::table_len(n, 2));
        let paths = pos.iter().map(|&p| path_box(p, p)).collect();
        Self {
            spheres,
            sphere_boxes,
            vel: vec![Vec3::ZERO; n],
            next: pos.clone(),
            pos,
            paths,
            nns,
            pairs: Vec::new(),
            frames: 0,
            particle_pairs: 0,
        }
    }

    /// The paper's scene with `particles` particles and [`SEED`].
    pub fn paper(particles: usize) -> Self {
        Self::new(particles, SEED)
    }

    /// The static spheres.
    pub fn spheres(&self) -> &[Sphere] {
        &self.spheres
    }

    /// The spheres' boxes.
    pub fn sphere_boxes(&self) -> &[Aabb3] {
        &self.sphere_boxes
    }

    /// Number of particles.
    pub fn particles(&self) -> usize {
        self.pos.len()
    }

    /// Particle centres (at the start of the coming step).
    pub fn positions(&self) -> &[Vec3] {
        &self.pos
    }

    /// The path boxes of the last [`predict`](Self::predict).
    pub fn paths(&self) -> &[Aabb3] {
        &self.paths
    }

    /// Frames completed.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Overlapping particle pairs resolved by the last response.
    pub fn particle_pairs(&self) -> usize {
        self.particle_pairs
    }

    /// Mean height (y) of the particles.
    pub fn mean_height(&self) -> f32 {
        self.pos.iter().map(|p| p.y).sum::<f32>() / self.pos.len().max(1) as f32
    }

    /// The longest edges a path box can have: from a particle at rest (`2r`)
    /// to one at [`MAX_SPEED`] (`2r + MAX_SPEED·dt`), in quarters.
    pub fn path_edges() -> [f32; 5] {
        let d = 2.0 * PARTICLE_RADIUS;
        core::array::from_fn(|k| d + k as f32 * 0.25 * MAX_SPEED * DT)
    }

    /// The report's classes: base = the particle diameter `2⁻⁶`, plus the
    /// classes of the sphere diameters and of the path-box edges
    /// ([`path_edges`](Self::path_edges)).
    pub fn config(&self) -> HashConfig<Vec3> {
        let sizes = self
            .sphere_boxes
            .iter()
            .map(|b| b.max.x - b.min.x)
            .chain(Self::path_edges());
        HashConfig::from_sizes(2.0 * PARTICLE_RADIUS, sizes).expect("finite sizes")
    }

    /// Pool entries enough for every frame: the spheres' entries plus 8 per
    /// particle (a path box is never longer than its class, so it overlaps
    /// at most 2 cells per axis).
    pub fn pool_len(&self, config: &HashConfig<Vec3>) -> usize {
        let spheres = config
            .entries_for(&self.sphere_boxes, 0)
            .expect("spheres in range");
        spheres as usize + 8 * self.pos.len()
    }

    /// A hash structure for this scene with `table` buckets.
    pub fn structure<S: Scheme>(&self, table: usize) -> VecClassHash<S, Aabb3> {
        let config = self.config();
        make::class_hash::<S, Aabb3>(
            SPHERES + self.pos.len(),
            table,
            self.pool_len(&config),
            0,
            config,
        )
    }

    /// Step 1: gravity, the speed cap, end positions and path boxes.
    pub fn predict(&mut self) {
        for i in 0..self.pos.len() {
            let mut v = self.vel[i];
            v.y -= GRAVITY * DT;
            let s2 = dot(v, v);
            if s2 > MAX_SPEED * MAX_SPEED {
                let k = MAX_SPEED / s2.sqrt();
                v = Vec3::new(v.x * k, v.y * k, v.z * k);
            }
            self.vel[i] = v;
            let p = self.pos[i];
            let q = axpy(DT, v, p);
            self.next[i] = q;
            self.paths[i] = path_box(p, q);
        }
    }

    /// Step 2, the timed collision detection on `h` (ids `0..S` the spheres,
    /// `S..S + P` the particles): rehash with the current path boxes, one
    /// exact query per particle, the narrow phase. The contact spheres of a
    /// particle come in the structure's order; [`Contacts::sort`] before
    /// comparing or responding.
    ///
    /// # Panics
    ///
    /// On any structure error (a pool or table too small for the scene).
    pub fn detect<S: Scheme>(&self, h: &mut VecClassHash<S, Aabb3>, out: &mut Contacts) {
        let ns = self.sphere_boxes.len() as u32;
        let np = self.pos.len();
        if BroadPhase::box_count(h) == 0 {
            for (i, b) in self.sphere_boxes.iter().enumerate() {
                h.insert(i as u32, *b).expect("insert sphere");
            }
            for (i, b) in self.paths.iter().enumerate() {
                h.insert(ns + i as u32, *b).expect("insert particle");
            }
        } else {
            for (i, b) in self.paths.iter().enumerate() {
                h.update(ns + i as u32, *b).expect("update particle");
            }
        }
        h.rehash().expect("rehash");
        out.clear(np);
        let r = PARTICLE_RADIUS;
        let h = &*h;
        for i in 0..np {
            out.offsets.push(out.spheres.len() as u32);
            let p = self.next[i];
            let (mut sc, mut pc) = (0u64, 0u64);
            h.query_candidates_ready(&self.paths[i], Candidates::Exact, |id| {
                if id < ns {
                    sc += 1;
                    let s = &self.spheres[id as usize];
                    let d = sub(p, s.centre);
                    let rr = s.radius + r;
                    if dot(d, d) < rr * rr {
                        out.spheres.push(id);
                    }
                } else {
                    pc += 1;
                }
            })
            .expect("query");
            out.sphere_candidates += sc;
            // A particle's own path box is always among its candidates.
            out.particle_candidates += pc - 1;
            out.walls.push(walls_of(p));
        }
        out.offsets.push(out.spheres.len() as u32);
    }

    /// Step 3: the response from `contacts` (sorted, see
    /// [`Contacts::sort`]), then particle–particle repulsion and walls.
    ///
    /// # Panics
    ///
    /// If `contacts` is not for this scene's particles.
    pub fn respond(&mut self, contacts: &Contacts) {
        let np = self.pos.len();
        assert_eq!(contacts.offsets.len(), np + 1, "contacts of another scene");
        let r = PARTICLE_RADIUS;
        for i in 0..np {
            let mut p = self.next[i];
            let mut v = self.vel[i];
            let (a, b) = (contacts.offsets[i], contacts.offsets[i + 1]);
            for &s in &contacts.spheres[a as usize..b as usize] {
                let s = &self.spheres[s as usize];
                let d = sub(p, s.centre);
                let dist2 = dot(d, d);
                let rr = s.radius + r;
                if dist2 >= rr * rr {
                    continue; // pushed out by an earlier contact
                }
                let dist = dist2.sqrt();
                let n = if dist > 0.0 {
                    Vec3::new(d.x / dist, d.y / dist, d.z / dist)
                } else {
                    Vec3::new(0.0, 1.0, 0.0)
                };
                p = axpy(rr, n, s.centre);
                let vn = dot(v, n);
                if vn < 0.0 {
                    v = axpy(-(1.0 + RESTITUTION) * vn, n, v);
                }
            }
            clamp_walls(&mut p, &mut v);
            self.pos[i] = p;
            self.vel[i] = v;
        }
        self.repel();
        self.frames += 1;
    }

    /// Particle–particle non-penetration (untimed; a uniform hash).
    fn repel(&mut self) {
        let d = 2.0 * PARTICLE_RADIUS;
        self.nns.build(&self.pos, d).expect("uniform hash build");
        self.pairs.clear();
        let pairs = &mut self.pairs;
        self.nns
            .for_each_pair(|a, b, _| pairs.push((a.min(b), a.max(b))));
        self.pairs.sort_unstable();
        self.particle_pairs = self.pairs.len();
        for &(a, b) in &self.pairs {
            let (a, b) = (a as usize, b as usize);
            let dv = sub(self.pos[b], self.pos[a]);
            let dist2 = dot(dv, dv);
            if dist2 >= d * d {
                continue;
            }
            let dist = dist2.sqrt();
            let n = if dist > 0.0 {
                Vec3::new(dv.x / dist, dv.y / dist, dv.z / dist)
            } else {
                Vec3::new(0.0, 1.0, 0.0)
            };
            let push = 0.5 * (d - dist);
            self.pos[a] = axpy(-push, n, self.pos[a]);
            self.pos[b] = axpy(push, n, self.pos[b]);
            // Equal masses, perfectly inelastic along the normal.
            let vn = dot(sub(self.vel[b], self.vel[a]), n);
            if vn < 0.0 {
                self.vel[a] = axpy(0.5 * vn, n, self.vel[a]);
                self.vel[b] = axpy(-0.5 * vn, n, self.vel[b]);
            }
        }
        for i in 0..self.pos.len() {
            let (mut p, mut v) = (self.pos[i], self.vel[i]);
            clamp_walls(&mut p, &mut v);
            self.pos[i] = p;
            self.vel[i] = v;
        }
    }
}
