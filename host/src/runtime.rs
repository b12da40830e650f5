//! The crate's structures chosen at run time, behind one type per trait:
//! [`AnySearch`] (every [`NeighborSearch`]) and [`AnyBroad`] (every
//! [`BroadPhase`]), each forwarding its trait to the structure it holds, so
//! a program is compiled once for all of them. [`SearchKind`] and
//! [`BroadKind`] name them (for flags and menus). Used by the demo, the
//! SPH benchmark and the WASM page; generic over the dimension.

use spatium::exec::Executor;
use spatium::hhash::{
    ClassHash, HashBucket, HashConfig, HashEntry, Hierarchical, Multilevel, Scheme,
};
use spatium::kdtree::{KdBroadPhase, KdConfig, KdRecord, KdSlot};
use spatium::table::table_len;
use spatium::{
    BoundingBox, BroadPhase, BruteForceBroadPhase, BruteForceNeighbors, BruteSlot, Error,
    HhgConfig, NeighborSearch, Point,
};

use crate::make::{self, VecBucket, VecCellSorted, VecClassHash, VecHhg, VecLinked};

/// Particle slots per bucket of the bucket hash. A cell of side `h` holds
/// about 8 particles at rest density in 3D; 64 leaves room for compression
/// and for two cells sharing a bucket.
pub const BUCKET: usize = 64;

/// Table slots per particle of the uniform and particle hashes.
pub const TABLE_FACTOR: usize = 2;

/// Pruning classes above the radius class of the hierarchical particle hash
/// (bit `c` = cells of `2^c·h`): cells of 4h and 16h.
pub const PYRAMID: u32 = 0b1_0100;

/// A neighbour search, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SearchKind {
    /// `uniform::CellSortedHash`.
    Sorted,
    /// `uniform::BucketHash` with [`BUCKET`] slots per bucket.
    Bucketed,
    /// `uniform::LinkedHash`.
    Linked,
    /// `hhash::HierarchicalHash` for particles, pruning classes [`PYRAMID`].
    Hierarchical,
    /// `hhash::MultilevelHash` for particles.
    Multilevel,
    /// `BruteForceNeighbors`.
    Brute,
}

/// A broad phase, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BroadKind {
    /// `HierarchicalHashGrid`.
    Hhg,
    /// `kdtree::KdBroadPhase` with `u64` codes.
    KdTree,
    /// `uniform::GridBroadPhase`.
    Grid,
    /// `hhash::HierarchicalHash`.
    Hierarchical,
    /// `hhash::MultilevelHash`.
    Multilevel,
    /// `BruteForceBroadPhase`.
    Brute,
}

/// Names for an enum of kinds.
pub trait Named: Copy + PartialEq + 'static {
    /// Every kind with its name, in menu order.
    const NAMES: &'static [(&'static str, Self)];

    /// The name of this kind.
    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }

    /// The kind called `name`.
    ///
    /// # Errors
    /// A message listing the valid names.
    fn from_name(name: &str) -> Result<Self, String> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, k)| *k)
            .ok_or_else(|| {
                let all: Vec<&str> = Self::NAMES.iter().map(|(n, _)| *n).collect();
                format!(
                    "unknown value {name:?} (expected one of {})",
                    all.join(", ")
                )
            })
    }
}

impl Named for SearchKind {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("sorted", Self::Sorted),
        ("bucketed", Self::Bucketed),
        ("linked", Self::Linked),
        ("hierarchical", Self::Hierarchical),
        ("multilevel", Self::Multilevel),
        ("brute", Self::Brute),
    ];
}

impl Named for BroadKind {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("hhg", Self::Hhg),
        ("kdtree", Self::KdTree),
        ("grid", Self::Grid),
        ("hierarchical", Self::Hierarchical),
        ("multilevel", Self::Multilevel),
        ("brute", Self::Brute),
    ];
}

/// A neighbour search over `Vec`s, chosen at run time.
#[derive(Debug)]
pub enum AnySearch<P: Point> {
    /// Cell-sorted uniform hash.
    Sorted(VecCellSorted<P>),
    /// Bucket uniform hash.
    Bucketed(VecBucket<P, BUCKET>),
    /// Linked-list uniform hash.
    Linked(VecLinked<P>),
    /// Hierarchical hashing, particles only.
    Hierarchical(VecClassHash<Hierarchical, P::Aabb>),
    /// Multilevel hashing, particles only.
    Multilevel(VecClassHash<Multilevel, P::Aabb>),
    /// All pairs.
    Brute(BruteForceNeighbors<P, Vec<P>>),
}

/// Runs `$body` with `$s` bound to the structure inside an [`AnySearch`].
macro_rules! with_search {
    ($self:expr, $s:ident => $body:expr) => {
        match $self {
            AnySearch::Sorted($s) => $body,
            AnySearch::Bucketed($s) => $body,
            AnySearch::Linked($s) => $body,
            AnySearch::Hierarchical($s) => $body,
            AnySearch::Multilevel($s) => $body,
            AnySearch::Brute($s) => $body,
        }
    };
}

/// A particle-only hash of scheme `S` for `capacity` particles, `table`
/// buckets and the pruning classes `levels` above the radius class.
fn particle_hash<S: Scheme, P: Point>(
    capacity: usize,
    table: usize,
    levels: u32,
) -> VecClassHash<S, P::Aabb> {
    ClassHash::for_particles(
        Vec::new(),
        vec![HashBucket::EMPTY; table],
        vec![HashEntry::EMPTY; capacity],
        vec![P::ZERO; capacity],
        levels,
    )
}

impl<P: Point> AnySearch<P> {
    /// An empty search of `kind` for up to `capacity` particles.
    pub fn new(kind: SearchKind, capacity: usize) -> Self {
        let table = table_len(capacity, TABLE_FACTOR);
        match kind {
            SearchKind::Sorted => Self::Sorted(make::cell_sorted(capacity, table)),
            SearchKind::Bucketed => Self::Bucketed(make::bucketed(capacity, table)),
            SearchKind::Linked => Self::Linked(make::linked(capacity, table)),
            SearchKind::Hierarchical => {
                Self::Hierarchical(particle_hash::<Hierarchical, P>(capacity, table, PYRAMID))
            }
            SearchKind::Multilevel => {
                Self::Multilevel(particle_hash::<Multilevel, P>(capacity, table, 0))
            }
            SearchKind::Brute => Self::Brute(BruteForceNeighbors::new(vec![P::ZERO; capacity])),
        }
    }

    /// Which kind this is.
    pub fn kind(&self) -> SearchKind {
        match self {
            Self::Sorted(_) => SearchKind::Sorted,
            Self::Bucketed(_) => SearchKind::Bucketed,
            Self::Linked(_) => SearchKind::Linked,
            Self::Hierarchical(_) => SearchKind::Hierarchical,
            Self::Multilevel(_) => SearchKind::Multilevel,
            Self::Brute(_) => SearchKind::Brute,
        }
    }

    /// What a search of `kind` for `capacity` particles is, for a report.
    pub fn describe(kind: SearchKind, capacity: usize) -> String {
        let table = table_len(capacity, TABLE_FACTOR);
        match kind {
            SearchKind::Sorted => format!("uniform::CellSortedHash, {table} table slots"),
            SearchKind::Bucketed => format!("uniform::BucketHash, {table} buckets of {BUCKET}"),
            SearchKind::Linked => format!("uniform::LinkedHash, {table} table slots"),
            SearchKind::Hierarchical => {
                format!("hhash::HierarchicalHash, {table} buckets, pruning cells of 4h and 16h")
            }
            SearchKind::Multilevel => format!("hhash::MultilevelHash, {table} buckets"),
            SearchKind::Brute => "BruteForceNeighbors (all pairs)".to_string(),
        }
    }
}

impl<P: Point> NeighborSearch<P> for AnySearch<P> {
    fn build(&mut self, positions: &[P], radius: f32) -> Result<(), Error> {
        with_search!(self, s => NeighborSearch::build(s, positions, radius))
    }

    fn len(&self) -> usize {
        with_search!(self, s => NeighborSearch::len(s))
    }

    fn radius(&self) -> f32 {
        with_search!(self, s => NeighborSearch::radius(s))
    }

    fn position(&self, id: u32) -> Option<P> {
        with_search!(self, s => NeighborSearch::position(s, id))
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, f: F) -> Result<(), Error> {
        with_search!(self, s => NeighborSearch::for_each_neighbor(s, id, f))
    }

    fn for_each_within<F: FnMut(u32, f32)>(&self, point: P, f: F) -> Result<(), Error> {
        with_search!(self, s => NeighborSearch::for_each_within(s, point, f))
    }

    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, f: F) {
        with_search!(self, s => NeighborSearch::for_each_pair(s, f))
    }

    fn neighbor_lists(&self, offsets: &mut [u32], indices: &mut [u32]) -> Result<usize, Error> {
        with_search!(self, s => NeighborSearch::neighbor_lists(s, offsets, indices))
    }

    fn spatial_order(&self, order: &mut [u32]) -> Result<(), Error> {
        with_search!(self, s => NeighborSearch::spatial_order(s, order))
    }

    fn spatial_neighbor_lists(
        &self,
        offsets: &mut [u32],
        indices: &mut [u32],
    ) -> Result<usize, Error> {
        with_search!(self, s => NeighborSearch::spatial_neighbor_lists(s, offsets, indices))
    }

    fn par_build<E: Executor>(
        &mut self,
        exec: &E,
        positions: &[P],
        radius: f32,
    ) -> Result<(), Error> {
        with_search!(self, s => NeighborSearch::par_build(s, exec, positions, radius))
    }

    fn pair_tasks(&self) -> usize {
        with_search!(self, s => NeighborSearch::pair_tasks(s))
    }

    fn par_for_each_pair<E, K, F>(&self, exec: &E, sinks: &mut [K], f: F) -> Result<(), Error>
    where
        E: Executor,
        K: Send,
        F: Fn(&mut K, u32, u32, f32) + Sync,
        Self: Sync,
    {
        with_search!(self, s => NeighborSearch::par_for_each_pair(s, exec, sinks, f))
    }

    fn par_gather<E, T, F>(&self, exec: &E, out: &mut [T], f: F) -> Result<(), Error>
    where
        E: Executor,
        T: Send,
        F: Fn(u32, &mut T, u32, f32) + Sync,
        Self: Sync,
    {
        with_search!(self, s => NeighborSearch::par_gather(s, exec, out, f))
    }

    fn par_neighbor_lists<E: Executor>(
        &self,
        exec: &E,
        offsets: &mut [u32],
        indices: &mut [u32],
    ) -> Result<usize, Error>
    where
        Self: Sync,
    {
        with_search!(self, s => NeighborSearch::par_neighbor_lists(s, exec, offsets, indices))
    }
}

/// A broad phase over `Vec`s, chosen at run time.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one per program; boxing the grid would only add a pointer chase to every query"
)]
pub enum AnyBroad<B: BoundingBox> {
    /// Hierarchical hash grid.
    Hhg(VecHhg<B>),
    /// Linear kd-tree behind the broad-phase trait.
    KdTree(KdBroadPhase<B, u64, Vec<KdSlot<B>>, Vec<KdRecord<u64>>>),
    /// Uniform grid, sorted at each detection.
    Grid(make::VecGridBp<B>),
    /// Hierarchical hashing.
    Hierarchical(VecClassHash<Hierarchical, B>),
    /// Multilevel hashing.
    Multilevel(VecClassHash<Multilevel, B>),
    /// Every box against every query.
    Brute(BruteForceBroadPhase<B, Vec<BruteSlot<B>>>),
}

/// Runs `$body` with `$b` bound to the structure inside an [`AnyBroad`].
macro_rules! with_broad {
    ($self:expr, $b:ident => $body:expr) => {
        match $self {
            AnyBroad::Hhg($b) => $body,
            AnyBroad::KdTree($b) => $body,
            AnyBroad::Grid($b) => $body,
            AnyBroad::Hierarchical($b) => $body,
            AnyBroad::Multilevel($b) => $body,
            AnyBroad::Brute($b) => $body,
        }
    };
}

/// Classes, table length and pool length of a hash holding `boxes`: the
/// smallest class is the query box edge, plus the class of every box
/// (Pouchol et al.'s preprocessing pass); about 100 buckets per box.
fn hash_sizes<B: BoundingBox>(
    boxes: &[B],
    base: f32,
) -> Result<(HashConfig<B::Point>, usize, usize), Error> {
    let cfg = HashConfig::from_sizes(base, boxes.iter().map(BoundingBox::longest_edge))?;
    let pool = cfg.entries_for(boxes, 0)?;
    let pool = usize::try_from(pool).map_err(|_| Error::InvalidConfig { field: "pool" })?;
    Ok((
        cfg,
        table_len(boxes.len().max(1), spatium::table::SLOTS_PER_OBJECT),
        pool,
    ))
}

impl<B: BoundingBox> AnyBroad<B> {
    /// An empty broad phase of `kind` sized for `boxes` (the boxes it will
    /// hold, with ids `0..boxes.len()`), queried with boxes of edge
    /// `query_edge`.
    ///
    /// # Errors
    /// [`HashConfig`]'s errors for the hashes (a box or edge out of range).
    pub fn new(kind: BroadKind, boxes: &[B], query_edge: f32) -> Result<Self, Error> {
        let n = boxes.len();
        Ok(match kind {
            BroadKind::Hhg => {
                let cfg = HhgConfig::DEFAULT;
                // Room for one grid per size class of the boxes (a factor-2
                // hierarchy over sizes spanning 4× needs 3), and one more.
                let words = 4 * cfg.arena_words_for::<B>(n.max(1));
                Self::Hhg(make::hhg(n, words, cfg))
            }
            BroadKind::KdTree => {
                // Split boxes take up to 8 records each.
                let records = 8 * n + 64;
                Self::KdTree(KdBroadPhase::new(
                    vec![KdSlot::EMPTY; n],
                    vec![KdRecord::EMPTY; records],
                    vec![KdRecord::EMPTY; records],
                    KdConfig::DEFAULT,
                ))
            }
            BroadKind::Grid => Self::Grid(make::grid_bp(n)),
            BroadKind::Hierarchical => {
                let (cfg, table, pool) = hash_sizes(boxes, query_edge)?;
                Self::Hierarchical(make::class_hash(n, table, pool, 0, cfg))
            }
            BroadKind::Multilevel => {
                let (cfg, table, pool) = hash_sizes(boxes, query_edge)?;
                Self::Multilevel(make::class_hash(n, table, pool, 0, cfg))
            }
            BroadKind::Brute => Self::Brute(BruteForceBroadPhase::new(make::brute_slots(n))),
        })
    }

    /// Which kind this is.
    pub fn kind(&self) -> BroadKind {
        match self {
            Self::Hhg(_) => BroadKind::Hhg,
            Self::KdTree(_) => BroadKind::KdTree,
            Self::Grid(_) => BroadKind::Grid,
            Self::Hierarchical(_) => BroadKind::Hierarchical,
            Self::Multilevel(_) => BroadKind::Multilevel,
            Self::Brute(_) => BroadKind::Brute,
        }
    }

    /// What it is, for a report.
    pub fn describe(&self) -> String {
        match self {
            Self::Hhg(_) => "HierarchicalHashGrid (pe), factor 2".to_string(),
            Self::KdTree(_) => "kdtree::KdBroadPhase, u64 codes".to_string(),
            Self::Grid(_) => "uniform::GridBroadPhase (cell = longest edge)".to_string(),
            Self::Hierarchical(h) => format!(
                "hhash::HierarchicalHash, {} buckets, {} pool entries",
                h.table_len(),
                h.pool_len()
            ),
            Self::Multilevel(h) => format!(
                "hhash::MultilevelHash, {} buckets, {} pool entries",
                h.table_len(),
                h.pool_len()
            ),
            Self::Brute(_) => "BruteForceBroadPhase (every box)".to_string(),
        }
    }
}

impl<B: BoundingBox> BroadPhase<B> for AnyBroad<B> {
    fn capacity(&self) -> usize {
        with_broad!(self, b => BroadPhase::capacity(b))
    }

    fn box_count(&self) -> usize {
        with_broad!(self, b => BroadPhase::box_count(b))
    }

    fn insert(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        with_broad!(self, b => BroadPhase::insert(b, id, aabb))
    }

    fn update(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        with_broad!(self, b => BroadPhase::update(b, id, aabb))
    }

    fn remove(&mut self, id: u32) -> Result<B, Error> {
        with_broad!(self, b => BroadPhase::remove(b, id))
    }

    fn get(&self, id: u32) -> Option<B> {
        with_broad!(self, b => BroadPhase::get(b, id))
    }

    fn clear(&mut self) {
        with_broad!(self, b => BroadPhase::clear(b))
    }

    fn for_each_overlap<F: FnMut(u32, u32)>(&mut self, f: F) -> Result<(), Error> {
        with_broad!(self, b => BroadPhase::for_each_overlap(b, f))
    }

    fn query<F: FnMut(u32)>(&mut self, aabb: &B, f: F) -> Result<(), Error> {
        with_broad!(self, b => BroadPhase::query(b, aabb, f))
    }

    fn overlap_tasks(&self) -> usize {
        with_broad!(self, b => BroadPhase::overlap_tasks(b))
    }

    fn par_for_each_overlap<E, K, F>(
        &mut self,
        exec: &E,
        sinks: &mut [K],
        f: F,
    ) -> Result<(), Error>
    where
        E: Executor,
        K: Send,
        F: Fn(&mut K, u32, u32) + Sync,
        Self: Send + Sync,
    {
        with_broad!(self, b => BroadPhase::par_for_each_overlap(b, exec, sinks, f))
    }
}

impl<B: BoundingBox> spatium::RayCast<B> for AnyBroad<B> {
    fn ray_visit<F: FnMut(u32, f32) -> f32>(
        &mut self,
        ray: &spatium::Ray<B::Point>,
        visit: F,
    ) -> Result<(), Error> {
        with_broad!(self, b => spatium::RayCast::ray_visit(b, ray, visit))
    }
}

impl<B: BoundingBox> spatium::Validate for AnyBroad<B> {
    fn validate(&self) -> Result<(), spatium::Corruption> {
        with_broad!(self, b => spatium::Validate::validate(b))
    }
}

impl<P: Point> spatium::Validate for AnySearch<P> {
    fn validate(&self) -> Result<(), spatium::Corruption> {
        with_search!(self, s => spatium::Validate::validate(s))
    }
}
