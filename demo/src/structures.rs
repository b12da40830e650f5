//! The structures a run can choose, behind one type each: [`Search`] (the
//! fluid's neighbour search) and [`Broad`] (the obstacles' broad phase).
//! Each forwards the trait to the structure it holds, so the solver is
//! compiled once for all of them.

use spatium::hhash::{
    ClassHash, HashBucket, HashConfig, HashEntry, Hierarchical, Multilevel, Scheme, table_len_for,
};
use spatium::kdtree::{KdBroadPhase, KdConfig, KdRecord, KdSlot};
use spatium::uniform::table_len_with_factor;
use spatium::{
    Aabb3, BoundingBox, BroadPhase, BruteForceBroadPhase, BruteForceNeighbors, BruteSlot, Error,
    HhgConfig, NeighborSearch, Vec3,
};
use spatium_host_tests::make::{self, VecBucket, VecCellSorted, VecClassHash, VecHhg, VecLinked};

use crate::args::{BroadKind, SearchKind};

/// Particle slots per bucket of the bucket hash. A cell of side `h` holds
/// about 8 particles at rest density; 64 leaves room for compression and
/// for two cells sharing a bucket.
pub const BUCKET: usize = 64;

/// Table slots per particle of the uniform and particle hashes.
const TABLE_FACTOR: usize = 2;

/// Pruning classes above the radius class of the hierarchical particle hash
/// (bit `c` = cells of `2^c·h`): cells of 4h and 16h.
const PYRAMID: u32 = 0b1_0100;

/// A neighbour search over `Vec`s, chosen at run time.
#[derive(Debug)]
pub enum Search {
    /// Cell-sorted uniform hash.
    Sorted(VecCellSorted<Vec3>),
    /// Bucket uniform hash.
    Bucketed(VecBucket<Vec3, BUCKET>),
    /// Linked-list uniform hash.
    Linked(VecLinked<Vec3>),
    /// Hierarchical hashing, particles only.
    Hierarchical(VecClassHash<Hierarchical, Aabb3>),
    /// Multilevel hashing, particles only.
    Multilevel(VecClassHash<Multilevel, Aabb3>),
    /// All pairs.
    Brute(BruteForceNeighbors<Vec3, Vec<Vec3>>),
}

/// Runs `$body` with `$s` bound to the structure inside a [`Search`].
macro_rules! with_search {
    ($self:expr, $s:ident => $body:expr) => {
        match $self {
            Search::Sorted($s) => $body,
            Search::Bucketed($s) => $body,
            Search::Linked($s) => $body,
            Search::Hierarchical($s) => $body,
            Search::Multilevel($s) => $body,
            Search::Brute($s) => $body,
        }
    };
}

impl Search {
    /// An empty search of `kind` for up to `capacity` particles.
    pub fn new(kind: SearchKind, capacity: usize) -> Self {
        let table = table_len_with_factor(capacity, TABLE_FACTOR);
        match kind {
            SearchKind::Sorted => Self::Sorted(make::cell_sorted(capacity, table)),
            SearchKind::Bucketed => Self::Bucketed(make::bucketed(capacity, table)),
            SearchKind::Linked => Self::Linked(make::linked(capacity, table)),
            SearchKind::Hierarchical => Self::Hierarchical(particle_hash(capacity, table, PYRAMID)),
            SearchKind::Multilevel => Self::Multilevel(particle_hash(capacity, table, 0)),
            SearchKind::Brute => Self::Brute(BruteForceNeighbors::new(vec![Vec3::ZERO; capacity])),
        }
    }

    /// What a search of `kind` for `capacity` particles is, for the report.
    pub fn describe(kind: SearchKind, capacity: usize) -> String {
        let table = table_len_with_factor(capacity, TABLE_FACTOR);
        match kind {
            SearchKind::Sorted => format!("uniform::CellSortedHash, {table} table slots"),
            SearchKind::Bucketed => {
                format!("uniform::BucketHash, {table} buckets of {BUCKET}")
            }
            SearchKind::Linked => format!("uniform::LinkedHash, {table} table slots"),
            SearchKind::Hierarchical => {
                format!("hhash::HierarchicalHash, {table} buckets, pruning cells of 4h and 16h")
            }
            SearchKind::Multilevel => format!("hhash::MultilevelHash, {table} buckets"),
            SearchKind::Brute => "BruteForceNeighbors (all pairs)".to_string(),
        }
    }
}

impl NeighborSearch<Vec3> for Search {
    fn build(&mut self, positions: &[Vec3], radius: f32) -> Result<(), Error> {
        with_search!(self, s => NeighborSearch::build(s, positions, radius))
    }

    fn len(&self) -> usize {
        with_search!(self, s => NeighborSearch::len(s))
    }

    fn radius(&self) -> f32 {
        with_search!(self, s => NeighborSearch::radius(s))
    }

    fn position(&self, id: u32) -> Option<Vec3> {
        with_search!(self, s => NeighborSearch::position(s, id))
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, f: F) -> Result<(), Error> {
        with_search!(self, s => NeighborSearch::for_each_neighbor(s, id, f))
    }

    fn for_each_within<F: FnMut(u32, f32)>(&self, point: Vec3, f: F) -> Result<(), Error> {
        with_search!(self, s => NeighborSearch::for_each_within(s, point, f))
    }

    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, f: F) {
        with_search!(self, s => NeighborSearch::for_each_pair(s, f))
    }
}

/// A particle-only hash of scheme `S` for `capacity` particles, `table`
/// buckets and the pruning classes `levels` above the radius class.
fn particle_hash<S: Scheme>(capacity: usize, table: usize, levels: u32) -> VecClassHash<S, Aabb3> {
    ClassHash::for_particles(
        Vec::new(),
        vec![HashBucket::EMPTY; table],
        vec![HashEntry::EMPTY; capacity],
        vec![Vec3::ZERO; capacity],
        levels,
    )
}

/// A broad phase over `Vec`s, chosen at run time.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one per run; boxing the grid would only add a pointer chase to every query"
)]
pub enum Broad {
    /// Hierarchical hash grid.
    Hhg(VecHhg<Aabb3>),
    /// Linear kd-tree behind the broad-phase trait.
    KdTree(KdBroadPhase<Aabb3, u64, Vec<KdSlot<Aabb3>>, Vec<KdRecord<u64>>>),
    /// Hierarchical hashing.
    Hierarchical(VecClassHash<Hierarchical, Aabb3>),
    /// Multilevel hashing.
    Multilevel(VecClassHash<Multilevel, Aabb3>),
    /// Every box against every query.
    Brute(BruteForceBroadPhase<Aabb3, Vec<BruteSlot<Aabb3>>>),
}

/// Runs `$body` with `$b` bound to the structure inside a [`Broad`].
macro_rules! with_broad {
    ($self:expr, $b:ident => $body:expr) => {
        match $self {
            Broad::Hhg($b) => $body,
            Broad::KdTree($b) => $body,
            Broad::Hierarchical($b) => $body,
            Broad::Multilevel($b) => $body,
            Broad::Brute($b) => $body,
        }
    };
}

impl Broad {
    /// An empty broad phase of `kind` sized for `boxes` (the obstacles it
    /// will hold), queried with boxes of edge `query_edge`.
    ///
    /// # Errors
    /// [`HashConfig`]'s errors for the hashes (a box or edge out of range).
    pub fn new(kind: BroadKind, boxes: &[Aabb3], query_edge: f32) -> Result<Self, Error> {
        let n = boxes.len();
        Ok(match kind {
            BroadKind::Hhg => {
                let cfg = HhgConfig::DEFAULT;
                // Room for one grid per size class of the obstacles (a
                // factor-2 hierarchy over diameters spanning 4x needs 3).
                let words = 4 * cfg.arena_words_for::<Aabb3>(n.max(1));
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

    /// What it is, for the report.
    pub fn describe(&self) -> String {
        match self {
            Self::Hhg(_) => "HierarchicalHashGrid (pe), factor 2".to_string(),
            Self::KdTree(_) => "kdtree::KdBroadPhase, u64 codes".to_string(),
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
            Self::Brute(_) => "BruteForceBroadPhase (every obstacle)".to_string(),
        }
    }
}

/// Classes, table length and pool length of a hash holding `boxes`: the
/// smallest class is the query box edge, plus the class of every box
/// (Pouchol et al.'s preprocessing pass); about 100 buckets per box.
fn hash_sizes(boxes: &[Aabb3], base: f32) -> Result<(HashConfig<Vec3>, usize, usize), Error> {
    let cfg = HashConfig::from_sizes(base, boxes.iter().map(BoundingBox::longest_edge))?;
    let pool = cfg.entries_for(boxes, 0)?;
    let pool = usize::try_from(pool).map_err(|_| Error::InvalidConfig)?;
    Ok((cfg, table_len_for(boxes.len().max(1)), pool))
}

impl BroadPhase<Aabb3> for Broad {
    fn capacity(&self) -> usize {
        with_broad!(self, b => BroadPhase::capacity(b))
    }

    fn len(&self) -> usize {
        with_broad!(self, b => BroadPhase::len(b))
    }

    fn insert(&mut self, id: u32, aabb: Aabb3) -> Result<(), Error> {
        with_broad!(self, b => BroadPhase::insert(b, id, aabb))
    }

    fn update(&mut self, id: u32, aabb: Aabb3) -> Result<(), Error> {
        with_broad!(self, b => BroadPhase::update(b, id, aabb))
    }

    fn remove(&mut self, id: u32) -> Result<Aabb3, Error> {
        with_broad!(self, b => BroadPhase::remove(b, id))
    }

    fn get(&self, id: u32) -> Option<Aabb3> {
        with_broad!(self, b => BroadPhase::get(b, id))
    }

    fn clear(&mut self) {
        with_broad!(self, b => BroadPhase::clear(b))
    }

    fn for_each_pair<F: FnMut(u32, u32)>(&mut self, f: F) -> Result<(), Error> {
        with_broad!(self, b => BroadPhase::for_each_pair(b, f))
    }

    fn query<F: FnMut(u32)>(&mut self, aabb: &Aabb3, f: F) -> Result<(), Error> {
        with_broad!(self, b => BroadPhase::query(b, aabb, f))
    }
}
