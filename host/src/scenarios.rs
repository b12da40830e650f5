//! Scenario generators, generic over the dimension.
//!
//! Every structure of the project is tested (and benchmarked) on all of them:
//!
//! | name | what |
//! |---|---|
//! | `fluid_block` | jittered `n^D` lattice, radius 2 × spacing (≈ 28 neighbours in 3D) |
//! | `uniform` | uniform random points, radius for a target neighbour count |
//! | `clustered` | points in Gaussian clusters of very different densities |
//! | `moving_cubes` | equal cubes of the hierarchical-hash-grid paper: ≈ 2 overlapping pairs per object, each step moves each cube up to 20 % of its size, periodic box |
//! | `elongated` | 10×1×1 boxes along random axes, ≈ 2 pairs per object |
//! | `uneven` | equal cubes in a 1024 : 1 : 1 box |
//! | `far_negative` | any scenario shifted to negative, far-from-origin coordinates |

use spatium::{BoundingBox, Point};

use crate::rng::Rng;

/// Particles and a search radius.
#[derive(Clone, Debug)]
pub struct PointScenario<P> {
    /// Short name for reports.
    pub name: String,
    /// Positions.
    pub points: Vec<P>,
    /// Search radius.
    pub radius: f32,
}

/// Boxes in a periodic domain, moving each step.
#[derive(Clone, Debug)]
pub struct BoxScenario<B: BoundingBox> {
    /// Short name for reports.
    pub name: String,
    /// Current boxes.
    pub boxes: Vec<B>,
    /// Per-box velocity (distance per step).
    pub velocities: Vec<B::Point>,
    /// Periodic domain `[0, extent)` per axis.
    pub extent: B::Point,
}

fn ball_volume(dim: usize, r: f32) -> f32 {
    if dim == 2 {
        core::f32::consts::PI * r * r
    } else {
        4.0 / 3.0 * core::f32::consts::PI * r * r * r
    }
}

/// Jittered lattice of `side^D` particles with `spacing`, each moved by up to
/// `jitter × spacing` per axis; radius `2 × spacing`.
pub fn fluid_block<P: Point>(
    side: usize,
    spacing: f32,
    jitter: f32,
    seed: u64,
) -> PointScenario<P> {
    let mut rng = Rng::new(seed);
    let n = side.pow(P::DIM as u32);
    let mut points = Vec::with_capacity(n);
    for i in 0..n {
        let mut rest = i;
        let p = P::from_fn(|_| {
            let k = rest % side;
            rest /= side;
            (k as f32 + jitter * rng.range(-1.0, 1.0)) * spacing
        });
        points.push(p);
    }
    PointScenario {
        name: format!("fluid_block{}", P::DIM),
        points,
        radius: 2.0 * spacing,
    }
}

/// `n` uniform random points in a cube of side 1 (scaled), radius chosen so a
/// particle has about `neighbours` neighbours.
pub fn uniform<P: Point>(n: usize, neighbours: f32, seed: u64) -> PointScenario<P> {
    let mut rng = Rng::new(seed);
    let side = 100.0f32;
    let points: Vec<P> = (0..n)
        .map(|_| P::from_fn(|_| rng.range(0.0, side)))
        .collect();
    let volume = side.powi(P::DIM as i32);
    // neighbours = n / volume * ball(r)
    let unit = ball_volume(P::DIM, 1.0);
    let r = (neighbours * volume / (n as f32 * unit)).powf(1.0 / P::DIM as f32);
    PointScenario {
        name: format!("uniform{}", P::DIM),
        points,
        radius: r,
    }
}

/// `n` points in `clusters` Gaussian clusters whose widths differ by up to
/// 30×, so cells range from nearly empty to very full.
pub fn clustered<P: Point>(n: usize, clusters: usize, seed: u64) -> PointScenario<P> {
    let mut rng = Rng::new(seed);
    let centres: Vec<(P, f32)> = (0..clusters)
        .map(|_| (P::from_fn(|_| rng.range(0.0, 200.0)), rng.range(0.5, 15.0)))
        .collect();
    let points = (0..n)
        .map(|_| {
            let (c, w) = centres[rng.below(clusters)];
            P::from_fn(|k| c.coord(k) + w * rng.normal())
        })
        .collect();
    PointScenario {
        name: format!("clustered{}", P::DIM),
        points,
        radius: 1.0,
    }
}

/// Equal cubes (squares in 2D) of side `size`, placed uniformly in a periodic
/// box sized so that there are about `2n` overlapping pairs; velocities up to
/// 20 % of the size per step.
pub fn moving_cubes<B: BoundingBox>(n: usize, seed: u64) -> BoxScenario<B> {
    let dim = B::Point::DIM as i32;
    let size = 1.0f32;
    // Expected pairs = n²/2 · (2s/L)^D = 2n  =>  L = 2s · (n/4)^(1/D).
    let extent = 2.0 * size * (n as f32 / 4.0).powf(1.0 / dim as f32);
    equal_boxes(
        n,
        seed,
        B::Point::from_fn(|_| extent),
        [size; 3],
        "moving_cubes",
        0.2,
    )
}

/// Elongated 10×1×1 boxes (10×1 in 2D) along a random axis, about `2n`
/// overlapping pairs, moving up to 20 % of their short side per step.
pub fn elongated<B: BoundingBox>(n: usize, seed: u64) -> BoxScenario<B> {
    let dim = B::Point::DIM as i32;
    let mut rng = Rng::new(seed ^ 0xE1);
    // Mean overlap volume of two such boxes with random axes is about
    // (1+1)(1+10)(1+1)·... ; calibrated so pairs ≈ 2n in 3D and 2D.
    let factor = if dim == 3 { 30.0 } else { 10.0 };
    let extent = (n as f32 * factor / 4.0).powf(1.0 / dim as f32) * 2.0;
    let mut sc: BoxScenario<B> = equal_boxes(
        n,
        seed,
        B::Point::from_fn(|_| extent),
        [1.0; 3],
        "elongated",
        0.2,
    );
    for b in &mut sc.boxes {
        let axis = rng.below(dim as usize);
        let lo = b.min();
        let hi = B::Point::from_fn(|k| lo.coord(k) + if k == axis { 10.0 } else { 1.0 });
        *b = B::try_new(lo, hi).expect("valid box");
    }
    sc
}

/// Equal cubes in a box of aspect 1024 : 1 (: 1), same density as
/// [`moving_cubes`].
pub fn uneven<B: BoundingBox>(n: usize, seed: u64) -> BoxScenario<B> {
    let dim = B::Point::DIM as i32;
    let base = 2.0 * (n as f32 / 4.0).powf(1.0 / dim as f32);
    // Same volume as the cube: short sides s, long side 1024 s.
    let short = base / 1024f32.powf(1.0 / dim as f32);
    let short = short.max(1.0);
    let long = base.powi(dim) / short.powi(dim - 1);
    let extent = B::Point::from_fn(|k| if k == 0 { long } else { short });
    equal_boxes(n, seed, extent, [1.0; 3], "uneven", 0.2)
}

fn equal_boxes<B: BoundingBox>(
    n: usize,
    seed: u64,
    extent: B::Point,
    size: [f32; 3],
    name: &str,
    speed: f32,
) -> BoxScenario<B> {
    let mut rng = Rng::new(seed);
    let mut boxes = Vec::with_capacity(n);
    let mut velocities = Vec::with_capacity(n);
    for _ in 0..n {
        let lo = B::Point::from_fn(|k| rng.range(0.0, extent.coord(k)));
        let hi = B::Point::from_fn(|k| lo.coord(k) + size[k]);
        boxes.push(B::try_new(lo, hi).expect("valid box"));
        // Random direction, random speed in [0, speed · size].
        let dir = B::Point::from_fn(|_| rng.normal());
        let norm = (0..B::Point::DIM)
            .map(|k| dir.coord(k).powi(2))
            .sum::<f32>()
            .sqrt()
            .max(1e-6);
        let v = rng.range(0.0, speed * size[0]);
        velocities.push(B::Point::from_fn(|k| dir.coord(k) / norm * v));
    }
    BoxScenario {
        name: format!("{name}{}", B::Point::DIM),
        boxes,
        velocities,
        extent,
    }
}

impl<B: BoundingBox> BoxScenario<B> {
    /// Moves every box by its velocity, wrapping its lower corner into the
    /// periodic domain.
    pub fn step(&mut self) {
        for (b, v) in self.boxes.iter_mut().zip(&self.velocities) {
            let lo = b.min();
            let hi = b.max();
            let new_lo = B::Point::from_fn(|k| {
                let e = self.extent.coord(k);
                let x = lo.coord(k) + v.coord(k);
                if x < 0.0 {
                    x + e
                } else if x >= e {
                    x - e
                } else {
                    x
                }
            });
            let new_hi = B::Point::from_fn(|k| new_lo.coord(k) + (hi.coord(k) - lo.coord(k)));
            *b = B::try_new(new_lo, new_hi).expect("valid box");
        }
    }

    /// Box centres as particles, with the radius of the boxes' short side.
    pub fn centres(&self) -> PointScenario<B::Point> {
        let points = self
            .boxes
            .iter()
            .map(|b| B::Point::from_fn(|k| 0.5 * (b.min().coord(k) + b.max().coord(k))))
            .collect();
        PointScenario {
            name: format!("{}_centres", self.name),
            points,
            radius: 1.0,
        }
    }
}

/// The same scenario moved to negative, far-from-origin coordinates.
pub fn far_negative<P: Point>(s: &PointScenario<P>) -> PointScenario<P> {
    let shift = [-30_000.0f32, -7_000.5, -250_000.0];
    // Keep spatium's cell range: shift in units of the radius is what matters;
    // the far shift stresses f32 rounding, not the cell range (origin is fitted).
    let points = s
        .points
        .iter()
        .map(|p| P::from_fn(|k| p.coord(k) + shift[k]))
        .collect();
    PointScenario {
        name: format!("{}_far_negative", s.name),
        points,
        radius: s.radius,
    }
}

/// Every point scenario at about `n` particles (fewer for the block, which
/// is a full lattice), 3D or 2D by `P`.
pub fn point_scenarios<P: Point>(n: usize, seed: u64) -> Vec<PointScenario<P>> {
    let side = (n as f32).powf(1.0 / P::DIM as f32).round().max(2.0) as usize;
    let mut v = vec![
        fluid_block::<P>(side, 0.5, 0.3, seed),
        uniform::<P>(n, 28.0, seed + 1),
        uniform::<P>(n, 3.0, seed + 2),
        clustered::<P>(n, 8, seed + 3),
        moving_cubes::<P::Aabb>(n, seed + 4).centres(),
        elongated::<P::Aabb>(n, seed + 5).centres(),
        uneven::<P::Aabb>(n, seed + 6).centres(),
    ];
    let far: Vec<_> = v.iter().map(far_negative).collect();
    v.extend(far);
    v
}

/// Cubes whose edges vary uniformly by `ratio` (1 to `ratio`), about `2n`
/// overlapping pairs, each moving up to 20 % of its own size per step (the
/// paper's Fig. 20–22 use a ratio of 12).
pub fn varied_cubes<B: BoundingBox>(n: usize, ratio: f32, seed: u64) -> BoxScenario<B> {
    let dim = B::Point::DIM as i32;
    let mut rng = Rng::new(seed ^ 0x5A);
    let sizes: Vec<f32> = (0..n).map(|_| rng.range(1.0, ratio)).collect();
    // Expected pairs = n²/2 · E[(a+b)^D] / L^D = 2n.
    let m = 4096.min(n.max(1));
    let mut e = 0.0f64;
    for _ in 0..m {
        let a = sizes[rng.below(n.max(1))] as f64;
        let b = sizes[rng.below(n.max(1))] as f64;
        e += (a + b).powi(dim);
    }
    e /= m as f64;
    let extent = ((n as f64 * e / 4.0).powf(1.0 / dim as f64)) as f32;
    let mut sc: BoxScenario<B> = equal_boxes(
        n,
        seed,
        B::Point::from_fn(|_| extent),
        [1.0; 3],
        "varied_cubes",
        0.2,
    );
    for ((b, v), &s) in sc.boxes.iter_mut().zip(&mut sc.velocities).zip(&sizes) {
        let lo = b.min();
        *b = B::try_new(lo, B::Point::from_fn(|k| lo.coord(k) + s)).expect("valid box");
        *v = B::Point::from_fn(|k| v.coord(k) * s);
    }
    sc
}

/// Every box scenario at `n` boxes, 3D or 2D by `B`.
pub fn box_scenarios<B: BoundingBox>(n: usize, seed: u64) -> Vec<BoxScenario<B>> {
    vec![
        moving_cubes(n, seed),
        elongated(n, seed + 1),
        uneven(n, seed + 2),
        varied_cubes(n, 12.0, seed + 3),
    ]
}
