//! One runner per implementation: preallocated state plus a timed operation.
//!
//! Every run starts from the positions and does the whole job: spatium and
//! the peers build their structure from scratch each time (except
//! `linked-update`, whose point is not to), then either count the pairs
//! within the radius (`pairs`) or write every particle's neighbour list
//! (`csr`). Output buffers are kept between runs, so allocation is not timed
//! once they have grown.
//!
//! kiddo and rstar run behind spatium's [`NeighborSearch`] trait
//! ([`crate::peers`]), through the same pair count and list writer as
//! spatium's structures. splashsurf_lib is called directly: its one search
//! call computes every list (`neighborhood_search_spatial_hashing` for the
//! pair count, the `_flat` form for the lists), which its trait adapter
//! ([`crate::sph_scene::SplashsurfSearch`], for the SPH step) would follow
//! with copies this comparison does not need.
//!
//! Radius conventions: spatium, kiddo (with `exclusive_boundaries`) and
//! splashsurf_lib test `d² < r²`; rstar's `locate_within_distance` tests
//! `d² ≤ r²` and its adapter drops hits at exactly `r`.

use core::fmt;

use spatium::table::{SLOTS_PER_OBJECT, table_len};
use spatium::{BruteForceNeighbors, NeighborSearch, Vec3};
use spatium_host::make::{self, VecBucket, VecCellSorted, VecLinked};
use splashsurf_lib::Aabb3d;
use splashsurf_lib::neighborhood_search::{
    FlatNeighborhoodList, neighborhood_search_spatial_hashing,
    neighborhood_search_spatial_hashing_flat,
};

use crate::peers::{KiddoSearch, RstarSearch};
use crate::scene::Scene;
use crate::{MAX_N_BRUTE, MAX_N_TABLE_100, TABLE_FACTOR};

/// Slots per bucket of the measured [`spatium::uniform::BucketHash`].
pub const BUCKET_K: usize = 64;

/// What a run produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// Build, then count every unordered pair within the radius once.
    Pairs,
    /// Build, then write every particle's neighbour list (compressed sparse
    /// rows, or the peer's own list form).
    Csr,
    /// Build, then write the same lists with the rows in the structure's
    /// own order ([`NeighborSearch::spatial_neighbor_lists`]); measured for
    /// `CellSortedHash` only (for every other structure it is `Csr`).
    CsrSpatial,
}

impl Metric {
    /// Both metrics, in report order.
    pub const ALL: [Metric; 3] = [Metric::Pairs, Metric::Csr, Metric::CsrSpatial];

    /// Short name used in benchmark ids and report headings.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Pairs => "pairs",
            Metric::Csr => "csr",
            Metric::CsrSpatial => "csr-spatial",
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An implementation under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Imp {
    /// spatium `CellSortedHash`, table of `table_len(n, 2)`.
    Sorted,
    /// spatium `CellSortedHash`, table of `table_len(n, SLOTS_PER_OBJECT)` (100 × N).
    Sorted100,
    /// spatium `BucketHash` with 64 slots per bucket, table of 2 × N.
    Bucket,
    /// spatium `LinkedHash`, table of 2 × N, rebuilt each run.
    Linked,
    /// spatium `LinkedHash` moved with `update` (alternating between the two
    /// position sets of the scene), then pairs.
    LinkedUpdate,
    /// spatium `BruteForceNeighbors` (all pairs).
    Brute,
    /// kiddo `ImmutableKdTree`, one within-radius query per particle.
    Kiddo,
    /// rstar `RTree` (bulk load), one `locate_within_distance` per particle.
    Rstar,
    /// splashsurf_lib sequential spatial-hashing neighbourhood search.
    Splashsurf,
}

impl Imp {
    /// Every implementation, in report order.
    pub const ALL: [Imp; 9] = [
        Imp::Sorted,
        Imp::Sorted100,
        Imp::Bucket,
        Imp::Linked,
        Imp::LinkedUpdate,
        Imp::Brute,
        Imp::Kiddo,
        Imp::Rstar,
        Imp::Splashsurf,
    ];

    /// Name used in benchmark ids and report rows.
    pub fn name(self) -> &'static str {
        match self {
            Imp::Sorted => "spatium-sorted",
            Imp::Sorted100 => "spatium-sorted-100x",
            Imp::Bucket => "spatium-bucket64",
            Imp::Linked => "spatium-linked",
            Imp::LinkedUpdate => "spatium-linked-update",
            Imp::Brute => "spatium-brute",
            Imp::Kiddo => "kiddo",
            Imp::Rstar => "rstar",
            Imp::Splashsurf => "splashsurf",
        }
    }

    /// `true` for the peers (the crates spatium is compared with).
    pub fn is_peer(self) -> bool {
        matches!(self, Imp::Kiddo | Imp::Rstar | Imp::Splashsurf)
    }

    /// `true` for spatium's own structures other than brute force.
    pub fn is_spatium_hash(self) -> bool {
        !self.is_peer() && self != Imp::Brute
    }

    /// `true` if the implementation may refuse a valid scene (a bucket
    /// holding more than its `K` slots).
    pub fn may_refuse(self) -> bool {
        self == Imp::Bucket
    }

    /// Whether this implementation is measured for `metric` at `n` particles.
    pub fn measured(self, metric: Metric, n: usize) -> bool {
        match self {
            _ if metric == Metric::CsrSpatial => {
                matches!(self, Imp::Sorted | Imp::Sorted100)
                    && (self == Imp::Sorted || n <= MAX_N_TABLE_100)
            }
            Imp::Sorted | Imp::Kiddo | Imp::Rstar | Imp::Splashsurf => true,
            Imp::Sorted100 => n <= MAX_N_TABLE_100,
            Imp::Bucket | Imp::Linked | Imp::LinkedUpdate => metric == Metric::Pairs,
            Imp::Brute => metric == Metric::Pairs && n <= MAX_N_BRUTE,
        }
    }
}

impl fmt::Display for Imp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// CSR output buffers, kept between runs.
#[derive(Debug, Default)]
struct Csr {
    offsets: Vec<u32>,
    indices: Vec<u32>,
}

enum State {
    Sorted(Box<VecCellSorted<Vec3>>, Csr),
    Bucket(Box<VecBucket<Vec3, BUCKET_K>>),
    Linked(Box<VecLinked<Vec3>>),
    LinkedUpdate(Box<VecLinked<Vec3>>, bool),
    Brute(Box<BruteForceNeighbors<Vec3, Vec<Vec3>>>),
    Kiddo(Box<KiddoSearch>, Csr),
    Rstar(Box<RstarSearch>, Csr),
    Splashsurf(Vec<Vec<usize>>, FlatNeighborhoodList),
}

/// An implementation with its buffers, ready to run on one scene.
pub struct Runner {
    imp: Imp,
    state: State,
}

impl fmt::Debug for Runner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner").field("imp", &self.imp).finish()
    }
}

impl Runner {
    /// Allocates everything `imp` needs for `scene` (not timed).
    ///
    /// # Errors
    /// `linked-update` builds its hash here; a refused build is reported.
    pub fn new(imp: Imp, scene: &Scene) -> Result<Self, String> {
        let n = scene.n();
        let t2 = table_len(n, TABLE_FACTOR);
        let state = match imp {
            Imp::Sorted => State::Sorted(Box::new(make::cell_sorted(n, t2)), Csr::default()),
            Imp::Sorted100 => State::Sorted(
                Box::new(make::cell_sorted(n, table_len(n, SLOTS_PER_OBJECT))),
                Csr::default(),
            ),
            Imp::Bucket => State::Bucket(Box::new(make::bucketed::<Vec3, BUCKET_K>(n, t2))),
            Imp::Linked => State::Linked(Box::new(make::linked(n, t2))),
            Imp::LinkedUpdate => {
                let mut h = make::linked(n, t2);
                h.build(&scene.points, scene.radius)
                    .map_err(|e| format!("LinkedHash::build: {e:?}"))?;
                State::LinkedUpdate(Box::new(h), false)
            }
            Imp::Brute => State::Brute(Box::new(BruteForceNeighbors::new(vec![Vec3::ZERO; n]))),
            Imp::Kiddo => State::Kiddo(Box::default(), Csr::default()),
            Imp::Rstar => State::Rstar(Box::default(), Csr::default()),
            Imp::Splashsurf => State::Splashsurf(Vec::new(), FlatNeighborhoodList::default()),
        };
        Ok(Self { imp, state })
    }

    /// The implementation.
    pub fn imp(&self) -> Imp {
        self.imp
    }

    /// The positions the next `linked-update` run moves to (the scene's
    /// original or moved set, alternately); `scene.points` for every other
    /// implementation.
    pub fn next_positions<'a>(&self, scene: &'a Scene) -> &'a [Vec3] {
        match self.state {
            State::LinkedUpdate(_, false) => &scene.moved,
            _ => &scene.points,
        }
    }

    /// One timed run: returns the number of pairs (`Pairs`) or of neighbour
    /// entries written (`Csr`, twice the pairs).
    ///
    /// # Errors
    /// A spatium structure that refuses the scene (for example
    /// `BucketHash`'s `BucketFull` when a bucket would exceed its `K` slots),
    /// with the error it returned.
    pub fn run(&mut self, scene: &Scene, metric: Metric) -> Result<u64, String> {
        let r = scene.radius;
        match (&mut self.state, metric) {
            (State::Sorted(h, _), Metric::Pairs) => {
                h.build(&scene.points, r)
                    .map_err(|e| format!("CellSortedHash::build: {e:?}"))?;
                Ok(count_pairs(h.as_ref()))
            }
            (State::Sorted(h, csr), Metric::Csr) => {
                h.build(&scene.points, r)
                    .map_err(|e| format!("CellSortedHash::build: {e:?}"))?;
                Ok(spatium_csr(h.as_ref(), csr))
            }
            (State::Sorted(h, csr), Metric::CsrSpatial) => {
                h.build(&scene.points, r)
                    .map_err(|e| format!("CellSortedHash::build: {e:?}"))?;
                Ok(spatial_csr(h.as_ref(), csr))
            }
            (State::Bucket(h), _) => {
                h.build(&scene.points, r)
                    .map_err(|e| format!("BucketHash::build: {e:?}"))?;
                Ok(count_pairs(h.as_ref()))
            }
            (State::Linked(h), _) => {
                h.build(&scene.points, r)
                    .map_err(|e| format!("LinkedHash::build: {e:?}"))?;
                Ok(count_pairs(h.as_ref()))
            }
            (State::LinkedUpdate(h, at_moved), _) => {
                let to = if *at_moved {
                    &scene.points
                } else {
                    &scene.moved
                };
                h.update(to)
                    .map_err(|e| format!("LinkedHash::update: {e:?}"))?;
                *at_moved = !*at_moved;
                Ok(count_pairs(h.as_ref()))
            }
            (State::Brute(h), _) => {
                h.build(&scene.points, r)
                    .map_err(|e| format!("BruteForceNeighbors::build: {e:?}"))?;
                Ok(count_pairs(h.as_ref()))
            }
            (State::Kiddo(t, csr), metric) => search_run(t.as_mut(), scene, metric, csr),
            (State::Rstar(t, csr), metric) => search_run(t.as_mut(), scene, metric, csr),
            (State::Splashsurf(lists, flat), metric) => Ok(splash_run(scene, metric, lists, flat)),
        }
    }
}

fn count_pairs<N: NeighborSearch<Vec3>>(s: &N) -> u64 {
    let mut c = 0u64;
    s.for_each_pair(|_, _, _| c += 1);
    c
}

/// `neighbor_lists` into buffers sized on the first run (the sizing call is
/// not repeated once the buffers are large enough).
fn spatium_csr<N: NeighborSearch<Vec3>>(s: &N, csr: &mut Csr) -> u64 {
    sized_csr(s.len(), csr, |o, i| s.neighbor_lists(o, i))
}

/// `spatial_neighbor_lists` into buffers sized as [`spatium_csr`]'s.
fn spatial_csr<N: NeighborSearch<Vec3>>(s: &N, csr: &mut Csr) -> u64 {
    sized_csr(s.len(), csr, |o, i| s.spatial_neighbor_lists(o, i))
}

/// Runs a CSR writer for `n` particles into `csr`, growing `indices` to
/// the exact size it reports the first time it is too short.
fn sized_csr(
    n: usize,
    csr: &mut Csr,
    mut lists: impl FnMut(&mut [u32], &mut [u32]) -> Result<usize, spatium::Error>,
) -> u64 {
    if csr.offsets.len() < n + 1 {
        csr.offsets.resize(n + 1, 0);
    }
    match lists(&mut csr.offsets, &mut csr.indices) {
        Ok(w) => w as u64,
        Err(spatium::Error::BufferTooSmall { needed, .. }) => {
            csr.indices.resize(needed, 0);
            lists(&mut csr.offsets, &mut csr.indices).expect("sized buffers") as u64
        }
        Err(e) => panic!("CSR lists: {e}"),
    }
}

/// A peer behind [`NeighborSearch`] ([`crate::peers`]): build, then count
/// the pairs or write the lists, as for spatium's structures.
fn search_run<N: NeighborSearch<Vec3>>(
    s: &mut N,
    scene: &Scene,
    metric: Metric,
    csr: &mut Csr,
) -> Result<u64, String> {
    s.build(&scene.points, scene.radius)
        .map_err(|e| format!("build: {e:?}"))?;
    Ok(match metric {
        Metric::Pairs => count_pairs(s),
        Metric::Csr => spatium_csr(s, csr),
        Metric::CsrSpatial => spatial_csr(s, csr),
    })
}

/// The domain splashsurf_lib's grid is laid over: the particles' bounding box
/// grown by one radius.
fn splash_domain(scene: &Scene) -> Aabb3d<f32> {
    let mut d = Aabb3d::from_points(&scene.vectors);
    d.grow_uniformly(scene.radius);
    d
}

fn splash_run(
    scene: &Scene,
    metric: Metric,
    lists: &mut Vec<Vec<usize>>,
    flat: &mut FlatNeighborhoodList,
) -> u64 {
    let domain = splash_domain(scene);
    match metric {
        Metric::Pairs => {
            neighborhood_search_spatial_hashing::<i64, f32>(
                &domain,
                &scene.vectors,
                scene.radius,
                lists,
            );
            lists
                .iter()
                .enumerate()
                .map(|(i, l)| l.iter().filter(|&&j| j > i).count() as u64)
                .sum()
        }
        Metric::Csr | Metric::CsrSpatial => {
            neighborhood_search_spatial_hashing_flat::<i64, f32>(
                &domain,
                &scene.vectors,
                scene.radius,
                flat,
            );
            flat.neighbors.len() as u64
        }
    }
}
