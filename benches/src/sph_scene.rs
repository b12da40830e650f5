//! The SPH step benchmark's scene and subjects, shared by `benches/sph.rs`
//! (criterion) and `src/bin/sph_report.rs` (`SPH_REPORT.md`).
//!
//! * [`SphScene`]: a dam break with the seed preset
//!   ([`SphParams::seed`]: Tait, leapfrog, two force evaluations per step,
//!   `Δt = 0.005`): a `side³` lattice block ([`Fluid::fill_block`]) of
//!   spacing [`SPH_SPACING`] in the corner of a box twice as long, released
//!   at rest and run [`WARM_STEPS`] steps so that it is no longer a perfect
//!   lattice. There is no random input at all: the lattice is regular and
//!   the solver runs in a fixed order, so the scene is the same bit for bit
//!   on every run on one machine. The positions and velocities after the
//!   warm-up are the [snapshot](SphScene::fluid) every timing starts from.
//! * [`Structure`] / [`Search`]: the neighbour searches a step is timed
//!   with: spatium's uniform hashes, hierarchical and multilevel hashing
//!   (two of them also behind `spatium::PairCache`), brute force, and the
//!   peer, splashsurf_lib's sequential spatial-hashing
//!   search behind the [`SplashsurfSearch`] adapter.
//! * [`StageClock`]: a [`StageTimer`] on `std::time::Instant`.
//!
//! Everything runs on the calling thread.

use core::fmt;
use std::time::Instant;

use spatium::hhash::{ClassHash, HashBucket, HashEntry, Hierarchical, Multilevel};
use spatium::sph::{Fluid, ParticleState, SphParams, Stage, StageTimer};
use spatium::table::table_len;
use spatium::{
    Aabb3, BruteForceNeighbors, Error, NeighborPair, NeighborSearch, PairCache, Point, Vec3,
    VerletCache,
};
use spatium_host::make::{self, VecBucket, VecCellSorted, VecClassHash, VecLinked};
use splashsurf_lib::Aabb3d;
use splashsurf_lib::nalgebra::Vector3;
use splashsurf_lib::neighborhood_search::{
    FlatNeighborhoodList, neighborhood_search_spatial_hashing_flat,
};

use crate::TABLE_FACTOR;
use crate::runner::BUCKET_K;

/// Lattice side of the measured block: `32³ = 32 768` particles, the seed's
/// GPU particle count.
pub const SPH_SIDE: usize = 32;

/// Lattice side of the small scene brute force is measured on
/// (`16³ = 4096` particles; brute force is `O(N²)`).
pub const SPH_SMALL_SIDE: usize = 16;

/// Lattice spacing (m): `1/16`, exact in binary, so the `32³` block is a
/// two-metre cube and the smoothing length `h = 2 · spacing = 1/8`.
///
/// The seed preset fixes `Δt = 0.005` and a soft Tait stiffness (`k = 1`),
/// so the spacing decides whether the flow stays sane: at `1/16` the
/// `32³` dam break runs for at least 300 steps (1.5 s) without blowing up,
/// at `1/32` (a one-metre block) it blows up after about 100 steps (its
/// compressed sound speed breaks the CFL limit at `h = 1/16`).
pub const SPH_SPACING: f32 = 1.0 / 16.0;

/// Steps run from the lattice before the snapshot every timing starts from
/// (0.1 s of simulated time at `Δt = 0.005`).
pub const WARM_STEPS: usize = 20;

/// A `Vec`-backed 3D fluid.
pub type VecFluid = Fluid<Vec3, Vec<Vec3>, Vec<ParticleState<Vec3>>>;

/// The dam-break scene after its warm-up.
#[derive(Clone, Debug)]
pub struct SphScene {
    /// Lattice side of the block: `side³` particles.
    pub side: usize,
    /// The solver's parameters (the seed preset over [`Self::domain`]).
    pub params: SphParams<Vec3>,
    /// The box walls: `2L × 1.5L × L` with `L = side · spacing`.
    pub domain: Aabb3,
    /// The block filled at the start: `[0, L]³`.
    pub block: Aabb3,
    /// Positions after the warm-up.
    pub positions: Vec<Vec3>,
    /// Velocities after the warm-up.
    pub velocities: Vec<Vec3>,
    /// The flow after the warm-up's last step.
    pub stats: FlowStats,
}

/// A summary of a fluid's state, to show the flow is sane.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowStats {
    /// Lowest density of the last force evaluation.
    pub density_min: f32,
    /// Mean density of the last force evaluation.
    pub density_mean: f32,
    /// Highest density of the last force evaluation.
    pub density_max: f32,
    /// Largest particle speed.
    pub max_speed: f32,
}

impl FlowStats {
    /// The summary of `fluid` (zeros for an empty one).
    pub fn of(fluid: &VecFluid) -> Self {
        let st = fluid.state();
        let mut out = Self {
            density_min: f32::INFINITY,
            density_mean: 0.0,
            density_max: 0.0,
            max_speed: 0.0,
        };
        let mut sum = 0.0f64;
        for s in st {
            out.density_min = out.density_min.min(s.density);
            out.density_max = out.density_max.max(s.density);
            out.max_speed = out.max_speed.max(s.velocity.dot(s.velocity).sqrt());
            sum += f64::from(s.density);
        }
        if st.is_empty() {
            out.density_min = 0.0;
        } else {
            out.density_mean = (sum / st.len() as f64) as f32;
        }
        out
    }
}

impl SphScene {
    /// The block of `side³` particles, warmed up by [`WARM_STEPS`] steps
    /// with a `CellSortedHash`.
    ///
    /// # Errors
    /// The solver's errors (a diverging scene is [`Error::NonFinite`]).
    pub fn new(side: usize) -> Result<Self, Error> {
        let l = side as f32 * SPH_SPACING;
        let domain = Aabb3::new(Vec3::ZERO, Vec3::new(2.0 * l, 1.5 * l, l))?;
        let block = Aabb3::new(Vec3::ZERO, Vec3::new(l, l, l))?;
        let params = SphParams::seed(domain, SPH_SPACING)?;
        let n = side.pow(3);
        let mut fluid: VecFluid =
            Fluid::new(vec![Vec3::ZERO; n], vec![ParticleState::EMPTY; n], params);
        let added = fluid.fill_block(block, SPH_SPACING, Vec3::ZERO)?;
        if added != n {
            return Err(Error::LengthMismatch {
                expected: n,
                got: added,
            });
        }
        let mut hash = make::cell_sorted::<Vec3>(n, table_len(n, TABLE_FACTOR));
        for _ in 0..WARM_STEPS {
            fluid.step(&mut hash, &mut (), &mut ())?;
        }
        Ok(Self {
            side,
            params,
            domain,
            block,
            positions: fluid.positions().to_vec(),
            velocities: fluid.state().iter().map(|s| s.velocity).collect(),
            stats: FlowStats::of(&fluid),
        })
    }

    /// Number of particles.
    pub fn n(&self) -> usize {
        self.positions.len()
    }

    /// A fluid holding the snapshot.
    ///
    /// # Errors
    /// As [`restore`](Self::restore).
    pub fn fluid(&self) -> Result<VecFluid, Error> {
        let n = self.n();
        let mut fluid = Fluid::new(
            vec![Vec3::ZERO; n],
            vec![ParticleState::EMPTY; n],
            self.params,
        );
        self.restore(&mut fluid)?;
        Ok(fluid)
    }

    /// Puts `fluid` back to the snapshot. `Fluid` is neither `Clone` nor
    /// writable in place, so this clears it and pushes every particle again;
    /// a step reads only positions and velocities (density, pressure,
    /// normals and accelerations are recomputed before use), so the next
    /// step does exactly the work it did from the snapshot.
    ///
    /// # Errors
    /// [`Fluid::push`]'s errors (a fluid with fewer than `n` slots).
    pub fn restore(&self, fluid: &mut VecFluid) -> Result<(), Error> {
        fluid.clear();
        for (x, v) in self.positions.iter().zip(&self.velocities) {
            fluid.push(*x, *v)?;
        }
        Ok(())
    }
}

/// A neighbour search under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Structure {
    /// `uniform::CellSortedHash`, table `table_len(N, 2)`.
    Sorted,
    /// [`Structure::Sorted`] behind `spatium::PairCache` with
    /// [`PAIRS_PER_PARTICLE`] slots per particle: the pairs are recorded once
    /// per build and replayed by the solver's three walks per evaluation.
    SortedCached,
    /// [`Structure::Sorted`], the fluid renumbered in the hash's
    /// spatial order (`sorted()` ids) after every step (`Fluid::renumber`), so the pair
    /// passes read the particle arrays in cell order.
    SortedOrdered,
    /// [`Structure::Sorted`] behind `spatium::VerletCache` with a skin of
    /// [`SKIN`]` · h`: built at `h + skin`, its candidates reused while no
    /// particle moved more than half the skin, the pairs within `h`
    /// recorded at every build and replayed by the three passes.
    SortedSkin,
    /// `uniform::LinkedHash`, table `table_len(N, 2)`.
    Linked,
    /// `uniform::BucketHash` with 64 slots per bucket, table
    /// `table_len(N, 2)`.
    Bucket,
    /// `hhash::HierarchicalHash` built by `ClassHash::for_particles`
    /// (smallest class = the radius, no pruning levels), table
    /// `table_len(N, 2)`.
    Hierarchical,
    /// [`Structure::Hierarchical`] behind `spatium::PairCache`.
    HierarchicalCached,
    /// `hhash::MultilevelHash`, as [`Structure::Hierarchical`].
    Multilevel,
    /// `BruteForceNeighbors` (all pairs; small N only).
    Brute,
    /// splashsurf_lib's sequential spatial-hashing search behind
    /// [`SplashsurfSearch`] (the peer).
    Splashsurf,
}

impl Structure {
    /// Every structure, in report order.
    pub const ALL: [Structure; 11] = [
        Structure::Sorted,
        Structure::SortedCached,
        Structure::SortedOrdered,
        Structure::SortedSkin,
        Structure::Linked,
        Structure::Bucket,
        Structure::Hierarchical,
        Structure::HierarchicalCached,
        Structure::Multilevel,
        Structure::Brute,
        Structure::Splashsurf,
    ];

    /// Name used in benchmark ids and report rows.
    pub const fn name(self) -> &'static str {
        match self {
            Structure::Sorted => "spatium-sorted",
            Structure::SortedCached => "spatium-sorted+cache",
            Structure::SortedOrdered => "spatium-sorted+order",
            Structure::SortedSkin => "spatium-sorted+skin",
            Structure::Linked => "spatium-linked",
            Structure::Bucket => "spatium-bucket64",
            Structure::Hierarchical => "spatium-hierarchical",
            Structure::HierarchicalCached => "spatium-hierarchical+cache",
            Structure::Multilevel => "spatium-multilevel",
            Structure::Brute => "spatium-brute",
            Structure::Splashsurf => "splashsurf",
        }
    }

    /// `true` for the peer.
    pub const fn is_peer(self) -> bool {
        matches!(self, Structure::Splashsurf)
    }

    /// Whether the structure is measured at `n` particles (brute force only
    /// at [`SPH_SMALL_SIDE`]³ or fewer).
    pub const fn measured(self, n: usize) -> bool {
        match self {
            Structure::Brute => n <= SPH_SMALL_SIDE * SPH_SMALL_SIDE * SPH_SMALL_SIDE,
            _ => true,
        }
    }
}

impl fmt::Display for Structure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Hierarchical or multilevel hashing over `Vec`s, 3D.
pub type VecHash3<S> = VecClassHash<S, Aabb3>;

/// A neighbour search with all its buffers, sized for `n` particles.
pub enum Search {
    /// See [`Structure::Sorted`].
    Sorted(Box<VecCellSorted<Vec3>>),
    /// See [`Structure::SortedCached`].
    SortedCached(Box<Cached<VecCellSorted<Vec3>>>),
    /// See [`Structure::SortedOrdered`].
    SortedOrdered(Box<VecCellSorted<Vec3>>),
    /// See [`Structure::SortedSkin`].
    SortedSkin(Box<Skinned<VecCellSorted<Vec3>>>),
    /// See [`Structure::Linked`].
    Linked(Box<VecLinked<Vec3>>),
    /// See [`Structure::Bucket`].
    Bucket(Box<VecBucket<Vec3, BUCKET_K>>),
    /// See [`Structure::Hierarchical`].
    Hierarchical(Box<VecHash3<Hierarchical>>),
    /// See [`Structure::HierarchicalCached`].
    HierarchicalCached(Box<Cached<VecHash3<Hierarchical>>>),
    /// See [`Structure::Multilevel`].
    Multilevel(Box<VecHash3<Multilevel>>),
    /// See [`Structure::Brute`].
    Brute(Box<BruteForceNeighbors<Vec3, Vec<Vec3>>>),
    /// See [`Structure::Splashsurf`].
    Splashsurf(Box<SplashsurfSearch>),
}

impl fmt::Debug for Search {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Search").field(&self.structure()).finish()
    }
}

/// Runs `$body` with `$h` bound to the concrete structure inside `$search`.
macro_rules! with_search {
    ($search:expr, $h:ident => $body:expr) => {
        match $search {
            Search::Sorted($h) => $body,
            Search::SortedCached($h) => $body,
            Search::SortedOrdered($h) => $body,
            Search::SortedSkin($h) => $body,
            Search::Linked($h) => $body,
            Search::Bucket($h) => $body,
            Search::Hierarchical($h) => $body,
            Search::HierarchicalCached($h) => $body,
            Search::Multilevel($h) => $body,
            Search::Brute($h) => $body,
            Search::Splashsurf($h) => $body,
        }
    };
}

/// A particle-only class hash: smallest class = the build radius, no pruning
/// levels (the best pyramid in `HHASH_REPORT.md`'s neighbour-search section).
fn class_hash<S: spatium::hhash::Scheme>(n: usize, table: usize) -> Box<VecHash3<S>> {
    Box::new(ClassHash::for_particles(
        Vec::new(),
        vec![HashBucket::EMPTY; table],
        vec![HashEntry::EMPTY; n],
        vec![Vec3::ZERO; n],
        0,
    ))
}

impl Search {
    /// `structure` with buffers for `n` particles (not timed).
    pub fn new(structure: Structure, n: usize) -> Self {
        let table = table_len(n, TABLE_FACTOR);
        match structure {
            Structure::Sorted => Search::Sorted(Box::new(make::cell_sorted(n, table))),
            Structure::SortedCached => {
                Search::SortedCached(Box::new(cached(make::cell_sorted(n, table), n)))
            }
            Structure::SortedOrdered => {
                Search::SortedOrdered(Box::new(make::cell_sorted(n, table)))
            }
            Structure::SortedSkin => {
                Search::SortedSkin(Box::new(skinned(make::cell_sorted(n, table), n)))
            }
            Structure::Linked => Search::Linked(Box::new(make::linked(n, table))),
            Structure::Bucket => Search::Bucket(Box::new(make::bucketed(n, table))),
            Structure::Hierarchical => Search::Hierarchical(class_hash(n, table)),
            Structure::HierarchicalCached => {
                Search::HierarchicalCached(Box::new(cached(*class_hash(n, table), n)))
            }
            Structure::Multilevel => Search::Multilevel(class_hash(n, table)),
            Structure::Brute => {
                Search::Brute(Box::new(BruteForceNeighbors::new(vec![Vec3::ZERO; n])))
            }
            Structure::Splashsurf => Search::Splashsurf(Box::default()),
        }
    }

    /// Which structure this is.
    pub fn structure(&self) -> Structure {
        match self {
            Search::Sorted(_) => Structure::Sorted,
            Search::SortedCached(_) => Structure::SortedCached,
            Search::SortedOrdered(_) => Structure::SortedOrdered,
            Search::SortedSkin(_) => Structure::SortedSkin,
            Search::Linked(_) => Structure::Linked,
            Search::Bucket(_) => Structure::Bucket,
            Search::Hierarchical(_) => Structure::Hierarchical,
            Search::HierarchicalCached(_) => Structure::HierarchicalCached,
            Search::Multilevel(_) => Structure::Multilevel,
            Search::Brute(_) => Structure::Brute,
            Search::Splashsurf(_) => Structure::Splashsurf,
        }
    }

    /// One [`Fluid::step`] of `fluid` with this search, no solids, reporting
    /// stages to `timer`.
    ///
    /// # Errors
    /// [`Fluid::step`]'s errors (for example `BucketHash`'s
    /// [`Error::BucketFull`]).
    pub fn step<T: StageTimer>(
        &mut self,
        fluid: &mut VecFluid,
        timer: &mut T,
    ) -> Result<(), Error> {
        if let Search::SortedOrdered(h) = self {
            fluid.step(h.as_mut(), &mut (), timer)?;
            if !h.input_was_sorted() {
                fluid.renumber(h.sorted_ids().iter().copied())?;
            }
            return Ok(());
        }
        with_search!(self, h => fluid.step(h.as_mut(), &mut (), timer))
    }

    /// Builds over `positions` within `radius` and counts the pairs
    /// (`d² < r²`, each once).
    ///
    /// # Errors
    /// The build's errors.
    pub fn pairs(&mut self, positions: &[Vec3], radius: f32) -> Result<u64, Error> {
        with_search!(self, h => {
            h.build(positions, radius)?;
            let mut c = 0u64;
            h.for_each_pair(|_, _, _| c += 1);
            Ok(c)
        })
    }
}

/// Pair-cache slots per particle: a fluid at rest with `h = 2 ×` spacing
/// has about 14 pairs per particle, compressed up to ~20.
pub const PAIRS_PER_PARTICLE: usize = 32;

/// A search behind `spatium::PairCache` over a `Vec`.
pub type Cached<N> = PairCache<N, Vec<NeighborPair>>;

/// `inner` behind a pair cache sized for `n` particles.
fn cached<N>(inner: N, n: usize) -> Cached<N> {
    PairCache::new(inner, vec![NeighborPair::EMPTY; PAIRS_PER_PARTICLE * n])
}

/// The Verlet skin of [`Structure::SortedSkin`], in units of `h`.
pub const SKIN: f32 = 0.25;

/// Candidate list entries per particle of [`Structure::SortedSkin`]: about
/// `(1 + SKIN)³ ≈ 2` times the pairs, plus a run header of two.
pub const CANDIDATES_PER_PARTICLE: usize = 64;

/// A search behind `spatium::VerletCache` over `Vec`s.
pub type Skinned<N> = VerletCache<N, Vec<Vec3>, Vec<u32>, Vec<NeighborPair>>;

/// `inner` behind a Verlet skin of [`SKIN`]` · h` (the seed preset's `h` at
/// [`SPH_SPACING`]), sized for `n` particles.
fn skinned<N>(inner: N, n: usize) -> Skinned<N> {
    VerletCache::new(
        inner,
        vec![Vec3::ZERO; n],
        vec![0; CANDIDATES_PER_PARTICLE * n],
        vec![NeighborPair::EMPTY; PAIRS_PER_PARTICLE * n],
        SKIN * 2.0 * SPH_SPACING,
    )
}

/// splashsurf_lib's neighbourhood search as a [`NeighborSearch`].
///
/// * `build`: copies the positions (spatium's form for the queries, nalgebra
///   vectors for splashsurf), lays splashsurf's grid over the particles'
///   bounding box grown by the radius, and runs the sequential
///   `neighborhood_search_spatial_hashing_flat` into its
///   [`FlatNeighborhoodList`] (compressed rows, reused between builds). Every
///   neighbour list is computed here, once per build.
/// * `for_each_pair`: walks the lists, keeps `i < j`, and recomputes `d²`
///   with [`Point::distance_squared`] (splashsurf stores no distances);
///   pairs are kept only if `d² < r²` by that recomputation, the trait's
///   strict convention (splashsurf tests `d² < r²` too, so this drops
///   nothing unless the two roundings differ).
/// * `for_each_neighbor`: the particle's list, with `d²` recomputed.
/// * `for_each_within` (an arbitrary point): a linear scan of every particle
///   (splashsurf's search has no point query).
#[derive(Default)]
pub struct SplashsurfSearch {
    positions: Vec<Vec3>,
    vectors: Vec<Vector3<f32>>,
    lists: FlatNeighborhoodList,
    radius: f32,
}

impl fmt::Debug for SplashsurfSearch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SplashsurfSearch")
            .field("len", &self.positions.len())
            .field("radius", &self.radius)
            .finish_non_exhaustive()
    }
}

impl SplashsurfSearch {
    /// The neighbour list of particle `i` (valid `i < len()`).
    fn list(&self, i: usize) -> &[usize] {
        let ptr = &self.lists.neighbor_ptr;
        &self.lists.neighbors[ptr[i]..ptr[i + 1]]
    }
}

impl NeighborSearch<Vec3> for SplashsurfSearch {
    fn build(&mut self, positions: &[Vec3], radius: f32) -> Result<(), Error> {
        // The checks come first so that a refused build changes nothing.
        crate::peers::check_build(positions, radius)?;
        self.positions.clear();
        self.positions.extend_from_slice(positions);
        self.vectors.clear();
        self.vectors
            .extend(positions.iter().map(|p| Vector3::new(p.x, p.y, p.z)));
        self.radius = radius;
        if positions.is_empty() {
            self.lists = FlatNeighborhoodList::default();
            return Ok(());
        }
        let mut domain = Aabb3d::from_points(&self.vectors);
        domain.grow_uniformly(radius);
        neighborhood_search_spatial_hashing_flat::<i64, f32>(
            &domain,
            &self.vectors,
            radius,
            &mut self.lists,
        );
        Ok(())
    }

    fn len(&self) -> usize {
        self.positions.len()
    }

    fn radius(&self) -> f32 {
        self.radius
    }

    fn position(&self, id: u32) -> Option<Vec3> {
        self.positions.get(id as usize).copied()
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, mut f: F) -> Result<(), Error> {
        let i = id as usize;
        let p = *self.positions.get(i).ok_or(Error::UnknownId { id })?;
        let r2 = self.radius * self.radius;
        for &j in self.list(i) {
            let d2 = p.distance_squared(self.positions[j]);
            if d2 < r2 {
                f(j as u32, d2);
            }
        }
        Ok(())
    }

    fn for_each_within<F: FnMut(u32, f32)>(&self, point: Vec3, mut f: F) -> Result<(), Error> {
        if !point.is_finite() {
            return Err(Error::NonFinite);
        }
        let r2 = self.radius * self.radius;
        for (j, q) in self.positions.iter().enumerate() {
            let d2 = point.distance_squared(*q);
            if d2 < r2 {
                f(j as u32, d2);
            }
        }
        Ok(())
    }

    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) {
        let r2 = self.radius * self.radius;
        for (i, &p) in self.positions.iter().enumerate() {
            for &j in self.list(i) {
                if j > i {
                    let d2 = p.distance_squared(self.positions[j]);
                    if d2 < r2 {
                        f(i as u32, j as u32, d2);
                    }
                }
            }
        }
    }
}

/// A [`StageTimer`] on the wall clock: nanoseconds spent in each stage,
/// indexed like [`Stage::ALL`], summed over every step it has seen.
#[derive(Clone, Copy, Debug, Default)]
pub struct StageClock {
    current: Option<(usize, Instant)>,
    /// Nanoseconds per stage, indexed like [`Stage::ALL`].
    pub ns: [u64; 6],
}

impl StageClock {
    /// Total nanoseconds over every stage.
    pub fn total_ns(&self) -> u64 {
        self.ns.iter().sum()
    }
}

impl StageTimer for StageClock {
    #[inline]
    fn begin(&mut self, stage: Stage) {
        self.current = Some((stage.index(), Instant::now()));
    }

    #[inline]
    fn end(&mut self) {
        if let Some((i, t)) = self.current.take() {
            self.ns[i] += t.elapsed().as_nanos() as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spatium_host::Rng;

    /// Sorted `(min, max, d²)` pairs.
    fn pairs<N: NeighborSearch<Vec3>>(s: &N) -> Vec<(u32, u32, u32)> {
        let mut v = Vec::new();
        s.for_each_pair(|i, j, d2| v.push((i.min(j), i.max(j), d2.to_bits())));
        v.sort_unstable();
        v
    }

    /// What `run` pushes, sorted.
    fn sorted_ids(run: impl FnOnce(&mut Vec<(u32, u32)>)) -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        run(&mut v);
        v.sort_unstable();
        v
    }

    /// The adapters answer every query as brute force does.
    #[test]
    fn adapters_match_brute_force() {
        let mut rng = Rng::new(0x5EED);
        let pts: Vec<Vec3> = (0..600)
            .map(|_| {
                Vec3::new(
                    rng.range(0.0, 2.0),
                    rng.range(0.0, 2.0),
                    rng.range(0.0, 1.0),
                )
            })
            .collect();
        let r = 0.25;
        let mut brute = BruteForceNeighbors::new(vec![Vec3::ZERO; pts.len()]);
        brute.build(&pts, r).unwrap();
        let mut splash = SplashsurfSearch::default();
        splash.build(&pts, r).unwrap();
        let mut replay = cached(make::cell_sorted::<Vec3>(pts.len(), 2048), pts.len());
        replay.build(&pts, r).unwrap();
        let want = pairs(&brute);
        assert!(want.len() > 1000);
        assert_eq!(pairs(&splash), want);
        assert_eq!(pairs(&replay), want);
        assert_eq!(replay.pair_count(), want.len());
        assert!(replay.is_cached());
        for id in [0u32, 17, 599] {
            let a = sorted_ids(|v| {
                brute
                    .for_each_neighbor(id, |j, d2| v.push((j, d2.to_bits())))
                    .unwrap()
            });
            let b = sorted_ids(|v| {
                splash
                    .for_each_neighbor(id, |j, d2| v.push((j, d2.to_bits())))
                    .unwrap()
            });
            assert_eq!(a, b);
        }
        let q = Vec3::new(1.0, 1.0, 0.5);
        let a = sorted_ids(|v| {
            brute
                .for_each_within(q, |j, d2| v.push((j, d2.to_bits())))
                .unwrap()
        });
        let b = sorted_ids(|v| {
            splash
                .for_each_within(q, |j, d2| v.push((j, d2.to_bits())))
                .unwrap()
        });
        assert_eq!(a, b);
        assert_eq!(
            splash.for_each_neighbor(600, |_, _| {}),
            Err(Error::UnknownId { id: 600 })
        );
        assert_eq!(
            splash.for_each_within(Vec3::new(f32::NAN, 0.0, 0.0), |_, _| {}),
            Err(Error::NonFinite)
        );
        // A refused build keeps the previous contents.
        assert_eq!(splash.build(&pts[..3], -1.0), Err(Error::InvalidRadius));
        assert_eq!(splash.len(), pts.len());
        assert_eq!(pairs(&splash), want);
    }

    /// Every structure finds the same pairs on a small scene, and a restored
    /// fluid steps exactly like the first time.
    #[test]
    fn small_scene_is_consistent() {
        let scene = SphScene::new(6).unwrap();
        let n = scene.n();
        let mut counts = Vec::new();
        for s in Structure::ALL {
            counts.push(
                Search::new(s, n)
                    .pairs(&scene.positions, scene.params.h)
                    .unwrap(),
            );
        }
        assert!(counts.iter().all(|&c| c == counts[0] && c > 0));
        let mut search = Search::new(Structure::Sorted, n);
        let mut fluid = scene.fluid().unwrap();
        search.step(&mut fluid, &mut ()).unwrap();
        let first = fluid.positions().to_vec();
        scene.restore(&mut fluid).unwrap();
        let mut clock = StageClock::default();
        search.step(&mut fluid, &mut clock).unwrap();
        assert_eq!(fluid.positions(), &first[..]);
        assert!(clock.ns[Stage::Forces.index()] > 0);
    }
}
