//! The benchmark scene: a jittered fluid block in a chosen input order.

use core::fmt;

use spatium::table::table_len;
use spatium::{NeighborSearch, PeriodicBox, Point, Vec3};
use spatium_host::{Rng, make, scenarios};
use splashsurf_lib::nalgebra::Vector3;

use crate::{JITTER, SEED, SPACING, STEP, TABLE_FACTOR};

/// The order in which particles are handed to every implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Order {
    /// Cell order: the generator's lattice order permuted by
    /// [`CellSortedHash::reorder`](spatium::uniform::CellSortedHash::reorder)
    /// after one build, so the particles of a cell are contiguous and the
    /// cells follow the hash's own run order (what a simulation that reorders
    /// its particles sees).
    CellOrdered,
    /// A uniformly random permutation ([`Rng::shuffle`]): every neighbour is
    /// a cache miss.
    Shuffled,
}

impl Order {
    /// Both orders, in report order.
    pub const ALL: [Order; 2] = [Order::CellOrdered, Order::Shuffled];

    /// Short name used in benchmark ids and report columns.
    pub fn name(self) -> &'static str {
        match self {
            Order::CellOrdered => "cell-ordered",
            Order::Shuffled => "shuffled",
        }
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Positions of one fluid block in one order, in every input form.
#[derive(Clone, Debug)]
pub struct Scene {
    /// Lattice side: `side³` particles.
    pub side: usize,
    /// Input order.
    pub order: Order,
    /// Search radius (2 × spacing).
    pub radius: f32,
    /// Positions for spatium.
    pub points: Vec<Vec3>,
    /// The same positions as arrays (kiddo, rstar).
    pub arrays: Vec<[f32; 3]>,
    /// The same positions as nalgebra vectors (splashsurf_lib).
    pub vectors: Vec<Vector3<f32>>,
    /// `points` each moved by up to [`STEP`] × spacing per axis: the second
    /// position set of the `linked-update` runs.
    pub moved: Vec<Vec3>,
}

impl Scene {
    /// The block of `side³` particles in `order`.
    pub fn new(side: usize, order: Order) -> Self {
        let block = scenarios::fluid_block::<Vec3>(side, SPACING, JITTER, SEED);
        let radius = block.radius;
        let points = match order {
            Order::CellOrdered => cell_order(&block.points, radius),
            Order::Shuffled => {
                let mut p = block.points;
                Rng::new(SEED ^ 0x5A5A).shuffle(&mut p);
                p
            }
        };
        let mut rng = Rng::new(SEED ^ 0x57E9);
        let d = STEP * SPACING;
        let moved = points
            .iter()
            .map(|p| {
                Vec3::new(
                    p.x + rng.range(-d, d),
                    p.y + rng.range(-d, d),
                    p.z + rng.range(-d, d),
                )
            })
            .collect();
        let arrays = points.iter().map(|p| p.to_array()).collect();
        let vectors = points.iter().map(|p| Vector3::new(p.x, p.y, p.z)).collect();
        Self {
            side,
            order,
            radius,
            points,
            arrays,
            vectors,
            moved,
        }
    }

    /// Number of particles.
    pub fn n(&self) -> usize {
        self.points.len()
    }

    /// The boxes of issue 21's periodic comparison: `(plain, torus)`, the
    /// block's bounds without periodic axes, and a box one spacing longer
    /// than the lattice (starting half a spacing below it), periodic along
    /// every axis, so the block meets itself across every face.
    pub fn periodic_boxes(&self) -> (PeriodicBox<Vec3>, PeriodicBox<Vec3>) {
        let (mut lo, mut hi) = (self.points[0], self.points[0]);
        for &p in &self.points {
            lo = lo.min(p);
            hi = hi.max(p);
        }
        let spacing = self.radius / 2.0;
        let plain =
            PeriodicBox::new(lo, hi + Vec3::new(1e-3, 1e-3, 1e-3) * spacing, 0).expect("box");
        let start = lo - Vec3::new(0.5, 0.5, 0.5) * spacing;
        let period = Vec3::new(1.0, 1.0, 1.0) * (self.side as f32 * spacing);
        let torus = PeriodicBox::all(start, start + period).expect("box");
        (plain, torus)
    }
}

/// What issue 21's periodic comparison times after a build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeriodicWork {
    /// The build alone.
    Build,
    /// The build and every pair ([`NeighborSearch::for_each_pair`]).
    Pairs,
    /// The build and every particle's neighbours
    /// ([`NeighborSearch::for_each_neighbor`]).
    Neighbours,
}

/// One timed run of the periodic comparison: builds `s` over `points` at
/// `radius`, then does `work`; returns the sum of the distances found (the
/// particle count for [`PeriodicWork::Build`]) so the work is not
/// optimised away and runs can be compared.
pub fn periodic_run<S: NeighborSearch<Vec3>>(
    s: &mut S,
    points: &[Vec3],
    radius: f32,
    work: PeriodicWork,
) -> f64 {
    s.build(points, radius).expect("build");
    let mut sum = 0.0f64;
    match work {
        PeriodicWork::Build => return s.len() as f64,
        PeriodicWork::Pairs => s.for_each_pair(|_, _, d2| sum += f64::from(d2)),
        PeriodicWork::Neighbours => {
            for i in 0..s.len() as u32 {
                s.for_each_neighbor(i, |_, d2| sum += f64::from(d2))
                    .expect("id");
            }
        }
    }
    sum
}

/// `points` permuted into the cell order of a [`CellSortedHash`] built once
/// over them.
///
/// [`CellSortedHash`]: spatium::uniform::CellSortedHash
pub fn cell_order(points: &[Vec3], radius: f32) -> Vec<Vec3> {
    let n = points.len();
    let mut hash = make::cell_sorted::<Vec3>(n, table_len(n, TABLE_FACTOR));
    hash.build(points, radius).expect("fluid block builds");
    let mut out = vec![Vec3::ZERO; n];
    hash.reorder(points, &mut out).expect("same length");
    out
}
