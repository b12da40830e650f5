//! Hierarchical hashing (Pouchol et al. 2009) and the multilevel hashing it
//! improves on (Eitz & Lixu 2007): one fixed-length hash table for boxes of
//! every size and for fluid particles.
//!
//! # Classes
//!
//! Cells come in *classes* of power-of-two sizes `base · 2^c`, where `base`
//! is the smallest class (for a fluid, its interaction radius) and `c` is the
//! class's *level* (0 to [`MAX_LEVEL`]). All classes share one origin, so a
//! cell of level `c` holds exactly `2^(c - c')` cells of a finer level `c'`
//! per axis: the base-cell coordinate `⌊(x − origin) / base⌋` is computed
//! once, and the cell of level `c` is that integer shifted right by `c`.
//! Nesting is therefore exact, whatever the floating-point rounding.
//!
//! The set of levels in use ([`HashConfig::levels`]) comes from a
//! preprocessing pass over the object sizes ([`HashConfig::add_size`],
//! [`HashConfig::from_sizes`]). An object goes to the smallest class whose
//! size is at least its box's longest edge (eq. 2); a size met at run time
//! that no class was made for goes to the nearest greater class; a box larger
//! than the largest class is *subdivided*: it is stored in every cell of the
//! largest class it overlaps.
//!
//! # The two schemes
//!
//! Both store an object's id in every cell of its class that its box
//! overlaps (the cells of its box's 4 or 8 corners, eq. 3), and differ in the
//! key and in how a query finds cells:
//!
//! * [`Multilevel`] (Eitz & Lixu, §2.2): the key of a cell is its own hash
//!   `h^c`; a box query visits, in every class, every cell the box overlaps.
//! * [`Hierarchical`] (Pouchol, §3): the key of a cell is the sum of the
//!   hashes of the cell and of all its ancestors, from the largest class down
//!   (`h̃^c = h^k + … + h^c`, eq. 4), and every bucket on the way down to a
//!   stored element gets a `hasChildren` flag (Listing 1). A query descends
//!   from the largest class and stops wherever a cell has no children
//!   (Listing 2), which prunes empty space; it visits each cell at most once.
//!
//! In both, `h^c` of a cell is the prime-XOR hash of its integer coordinates
//! at class `c` (eq. 3) plus `c · 0x9E3779B9`: the class is mixed in (the
//! paper's alternative of one table per class). Without it the literal
//! formulas collide by construction, because the cell at the origin hashes
//! to 0: in multilevel hashing every class's origin cell shares one key, and
//! in hierarchical hashing a class-1 cell under the origin's class-2 cell has
//! the key of a class-2 cell (Fig. 2's `h̃^1(2,0)` equals `h̃^2(4,0)`).
//!
//! Keys are summed in wrapping 32-bit arithmetic (eq. 4 modulo 2³²) and
//! reduced to a bucket by Fibonacci hashing (the top bits of
//! `key · 0x9E3779B9`), because the low bits of the prime-XOR hash depend only
//! on the low bits of the cell coordinates.
//!
//! # Memory: fixed table, entry pool, timestamps (§4.3)
//!
//! A structure is four caller buffers: `C` [`HashSlot`]s (one per object id),
//! `T` [`HashBucket`]s (the table, a power of two; [`crate::table::table_len`] follows
//! the paper's guidance of about 100 buckets per polygon), `E` [`HashEntry`]s
//! (the pool the buckets' linked lists draw from: one entry per cell an
//! element is stored in) and `N` particle positions. Every bucket carries the
//! timestamp of the step that last wrote it: a rebuild bumps the structure's
//! stamp and resets the pool, and a bucket with an older stamp reads as empty
//! and is reused the next time a key lands on it. The table is never swept
//! between steps (once at first use and once every 2³¹ − 1 rebuilds).
//!
//! | buffer | bytes (3D) | bytes (2D) |
//! |---|---|---|
//! | slots | `40C` | `32C` |
//! | table | `8T` | `8T` |
//! | entries | `8E` | `8E` |
//! | particles | `12N` | `8N` |
//!
//! In all, `40C + 8T + 8E + 12N` bytes in 3D and `32C + 8T + 8E + 8N` in
//! 2D; [`Inspect::memory_bytes`](crate::Inspect::memory_bytes) evaluates it
//! on an instance, [`Inspect::stats`](crate::Inspect::stats) reports the
//! table's occupancy ([`HashStats`]).
//!
//! Inserting an object appends its entries to the table at once; updating
//! or removing one marks the table stale, and the next query rebuilds it from
//! the slots (the paper's per-step rehash; [`ClassHash::refresh`] does it
//! on demand). The pool must hold one entry per
//! (object, cell) plus one per particle; [`HashConfig::entries_for`] counts
//! them. A full pool is [`Error::CapacityExceeded`] on the insert that would
//! overflow it, and nothing already stored is lost: a rebuild always fits.
//!
//! # Exactness
//!
//! Candidate queries take the crate's [`Candidates`] mode:
//!
//! * [`Candidates::Raw`]: every object entry of every visited bucket, as the
//!   paper's retrieval: an object stored in several visited cells comes
//!   several times, and hash collisions put unrelated objects in a bucket.
//!   (A query box covering more cells than [`SCAN_FACTOR`] allows scans the
//!   slots instead and reports every stored object once.)
//! * [`Candidates::Unique`]: each object at most once, by integer tests
//!   only: an object is reported only from a visited cell of its own class
//!   that holds the lowest corner of the (cell-rounded) overlap of its box
//!   with the query box. A superset of the exact answer (collisions and
//!   boxes that share cells with the query without overlapping it remain).
//! * [`Candidates::Exact`]: `Unique` plus the box overlap test, so each
//!   overlapping object is reported once and only overlapping ones are.
//!
//! Particles have a single entry; a neighbour is reported from the cell that
//! holds it. Cell coordinates come from monotone `f32` arithmetic, so the
//! cells of a query box's corners bound the cells of everything overlapping
//! it, with no margin and no range limit beyond [`HHASH_RANGE_CELLS`] base
//! cells from the origin.

//! # Parallel forms
//!
//! The pair enumerations run as tasks on an
//! [`Executor`](crate::exec::Executor), one sink per task, the sinks in
//! order holding the serial answers in the serial order:
//! [`ClassHash::par_for_each_candidate_pair`] and
//! [`BroadPhase::par_for_each_overlap`](crate::BroadPhase::par_for_each_overlap)
//! over ranges of 1024 object ids,
//! [`NeighborSearch::par_for_each_pair`](crate::NeighborSearch::par_for_each_pair)
//! over ranges of 2048 particles, and the trait's `par_gather` and
//! `par_neighbor_lists` per particle. `par_build` checks and copies the
//! positions in tasks. The rehash stays on the calling thread: storing an
//! element prepends an entry to a bucket chosen by a hash anywhere in the
//! table (and flags the buckets above it in hierarchical hashing), and the
//! lists must be linked in the serial order; safe Rust can only hand tasks
//! disjoint ranges of the table and of the pool, and no such split keeps
//! an element's writes inside one task's ranges without memory beyond the
//! four buffers.

// One file per operation: classes and cell arithmetic (`config`), the
// table's buffers and its insert / remove / rehash with the `BroadPhase`
// impl (`table`), the cell walk every query shares (`walk`), box queries
// and their inspection (`query`), pair traversal (`traverse`), particles
// and the `NeighborSearch` impl (`particles`), `Inspect` (`stats`) and
// `Validate` (`validate`).
mod config;
mod par;
mod particles;
mod query;
mod ray;
mod stats;
mod table;
mod traverse;
mod validate;
mod walk;

pub use config::HashConfig;
pub use query::{CellVisit, QueryCounts};
pub use stats::HashStats;

pub use crate::traits::Candidates;
pub use table::{HashBucket, HashEntry, HashSlot};

use core::marker::PhantomData;

use crate::error::Error;
use crate::geom::BoundingBox;
use crate::storage::Storage;
use config::level_order;

/// Largest class level: classes have sizes `base · 2^0` to `base · 2^30`.
pub const MAX_LEVEL: u32 = 30;

pub use crate::cell::HHASH_RANGE_CELLS;

/// Largest number of objects or particles (ids use 31 bits).
pub const MAX_ELEMENTS: usize = 1 << 31;

const FLAG: u32 = 1 << 31;
const STAMP_MASK: u32 = FLAG - 1;
const PARTICLE: u32 = 1 << 31;

/// Most cells the inspection walks ([`ClassHash::query_counts`],
/// [`ClassHash::for_each_visited_cell`]) may visit (2²⁶).
pub const INSPECT_LIMIT: u64 = 1 << 26;

/// A query whose walk could visit more than `SCAN_FACTOR · (C + N + 64)`
/// cells (`C` object slots, `N` particles) scans the slots and particles
/// instead: a cell visit (hash, random bucket read) costs several times a
/// sequential slot test.
pub const SCAN_FACTOR: u64 = 16;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Hierarchical {}
    impl Sealed for super::Multilevel {}
}

/// The key and query scheme of a [`ClassHash`]: [`Hierarchical`] or
/// [`Multilevel`] (sealed).
pub trait Scheme: sealed::Sealed + Copy + core::fmt::Debug + Send + Sync + 'static {
    /// `true` for additive top-down keys with `hasChildren` flags.
    const HIERARCHICAL: bool;
    /// Name used in corruption reports.
    const NAME: &'static str;
}

/// Pouchol et al.'s hierarchical hashing: additive top-down keys (eq. 4)
/// and `hasChildren` flags.
#[derive(Clone, Copy, Debug)]
pub struct Hierarchical;

/// Eitz & Lixu's multilevel hashing: one hash per class (eq. 3), every class
/// visited by a query.
#[derive(Clone, Copy, Debug)]
pub struct Multilevel;

impl Scheme for Hierarchical {
    const HIERARCHICAL: bool = true;
    const NAME: &'static str = "HierarchicalHash";
}

impl Scheme for Multilevel {
    const HIERARCHICAL: bool = false;
    const NAME: &'static str = "MultilevelHash";
}

/// Hierarchical hashing over caller buffers (see the [module](self) docs).
pub type HierarchicalHash<B, Sl, Bk, En, Pt> = ClassHash<Hierarchical, B, Sl, Bk, En, Pt>;

/// Multilevel hashing over caller buffers (see the [module](self) docs).
pub type MultilevelHash<B, Sl, Bk, En, Pt> = ClassHash<Multilevel, B, Sl, Bk, En, Pt>;

/// Hierarchical ([`Hierarchical`]) or multilevel ([`Multilevel`]) hashing
/// over caller buffers: objects by id ([`BroadPhase`](crate::BroadPhase)) and particles
/// ([`NeighborSearch`](crate::NeighborSearch)) in one table. See the [module](self) docs.
///
/// Particles live in class 0. Hierarchical hashing reaches their cells
/// through the classes above (pruning empty space, Listing 3); multilevel
/// hashing reads class 0 directly, which is uniform hashing (the paper's
/// footnote to §4.1).
///
/// # Example
///
/// ```
/// use spatium::{Aabb2, BroadPhase, Vec2};
/// use spatium::hhash::*;
///
/// // Classes from the object sizes; the smallest is 1.
/// let config = HashConfig::<Vec2>::from_sizes(1.0, [1.0, 8.0]).unwrap();
/// let mut h = HierarchicalHash::<Aabb2, _, _, _, _>::new(
///     [HashSlot::EMPTY; 16],          // object ids 0..16
///     [HashBucket::EMPTY; 256],       // the table (a power of two)
///     [HashEntry::EMPTY; 64],         // entry pool
///     [Vec2::ZERO; 0],                // no particles
///     config,
/// );
/// h.insert(0, Aabb2::new(Vec2::new(0.0, 0.0), Vec2::new(7.0, 7.0)).unwrap()).unwrap();
/// h.insert(1, Aabb2::new(Vec2::new(6.5, 6.5), Vec2::new(7.2, 7.2)).unwrap()).unwrap();
/// let mut pairs = 0;
/// h.for_each_overlap(|a, b| { assert_eq!(a + b, 1); pairs += 1 }).unwrap();
/// assert_eq!(pairs, 1);
/// ```
#[derive(Clone, Debug)]
pub struct ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
{
    slots: Sl,
    table: Bk,
    pool: En,
    particles: Pt,
    config: HashConfig<B::Point>,
    /// Levels in use, largest first.
    order: [u8; 32],
    n_levels: u32,
    /// `32 - log2(T)`: bucket = [`fibonacci_slot`](crate::table)`(key, shift)`.
    shift: u32,
    stamp: u32,
    /// Pool entries written since the last rebuild.
    used: u32,
    /// Levels holding at least one entry since the last rebuild (multilevel
    /// queries skip the others).
    occupied: u32,
    /// Entries the stored objects need.
    object_entries: u64,
    objects: u32,
    n_particles: u32,
    radius: f32,
    /// Base size follows the radius at each particle build.
    base_follows_radius: bool,
    /// The table does not reflect the slots and particles.
    stale: bool,
    _scheme: PhantomData<S>,
}

impl<S, B, Sl, Bk, En, Pt> ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    /// An empty structure over `slots` (all [`HashSlot::EMPTY`]; its length
    /// is the object id capacity), a table of `T` buckets (a power of two up
    /// to 2³¹; contents ignored, swept at first use), an entry pool (its
    /// length bounds the cells stored, see [`HashConfig::entries_for`]) and a
    /// particle buffer (its length is the particle capacity; may be empty).
    ///
    /// A `const fn` that never fails, so a fixed-size instance can be a
    /// `static`. The table length is checked at the first insert, build or
    /// rehash, which refuse a bad one with [`Error::InvalidTableLength`];
    /// [`new_checked`](Self::new_checked) refuses it now. `O(1)`: the table
    /// is swept at first use (`O(T)`).
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::hhash::*;
    /// use spatium::{Aabb3, BroadPhase, Vec3};
    ///
    /// // A `static`-ready instance: 16 ids, 256 buckets, 128 entries and
    /// // no particles.
    /// let mut h = MultilevelHash::<Aabb3, _, _, _, _>::new(
    ///     [HashSlot::EMPTY; 16],
    ///     [HashBucket::EMPTY; 256],
    ///     [HashEntry::EMPTY; 128],
    ///     [Vec3::ZERO; 0],
    ///     HashConfig::new(0.5, 0b111).unwrap(), // classes 0.5, 1 and 2
    /// );
    /// h.insert(3, Aabb3::new(Vec3::ZERO, Vec3::new(1.5, 0.2, 0.2)).unwrap()).unwrap();
    /// assert_eq!(h.class_of_id(3), Some(2));
    /// ```
    pub const fn new(
        slots: Sl,
        table: Bk,
        pool: En,
        particles: Pt,
        config: HashConfig<B::Point>,
    ) -> Self {
        let (order, n_levels) = level_order(config.levels);
        Self {
            slots,
            table,
            pool,
            particles,
            config,
            order,
            n_levels,
            shift: 32,
            stamp: 0,
            used: 0,
            occupied: 0,
            object_entries: 0,
            objects: 0,
            n_particles: 0,
            radius: 0.0,
            base_follows_radius: false,
            stale: false,
            _scheme: PhantomData,
        }
    }

    /// As [`new`](Self::new), with the table length checked now rather than
    /// at the first insert, build or rehash. `O(1)`.
    ///
    /// # Errors
    /// [`Error::InvalidTableLength`] unless the table's length is a power of
    /// two in `1..=2³¹` (the error the first use of [`new`](Self::new)'s
    /// structure gives).
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::hhash::*;
    /// use spatium::{Aabb2, Error, Vec2};
    ///
    /// let bad = HierarchicalHash::<Aabb2, _, _, _, _>::new_checked(
    ///     [HashSlot::EMPTY; 4],
    ///     [HashBucket::EMPTY; 100], // not a power of two
    ///     [HashEntry::EMPTY; 16],
    ///     [Vec2::ZERO; 0],
    ///     HashConfig::DEFAULT,
    /// );
    /// assert!(matches!(bad, Err(Error::InvalidTableLength { len: 100 })));
    /// ```
    pub fn new_checked(
        slots: Sl,
        table: Bk,
        pool: En,
        particles: Pt,
        config: HashConfig<B::Point>,
    ) -> Result<Self, Error> {
        crate::table::table_mask(table.as_ref().len())?;
        Ok(Self::new(slots, table, pool, particles, config))
    }

    /// A structure for neighbour search alone whose smallest class follows
    /// the radius of each [`NeighborSearch::build`](crate::NeighborSearch::build); `extra_levels` (bit
    /// `c`: the class of `2^c` radii) are kept above it, to prune empty
    /// space in hierarchical hashing. A `const fn` that never fails, like
    /// [`new`](Self::new). `O(1)`.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::hhash::*;
    /// use spatium::{Aabb3, NeighborSearch, Vec3};
    ///
    /// let mut h = HierarchicalHash::<Aabb3, _, _, _, _>::for_particles(
    ///     [HashSlot::EMPTY; 0], // no objects
    ///     [HashBucket::EMPTY; 64],
    ///     [HashEntry::EMPTY; 8],
    ///     [Vec3::ZERO; 8],
    ///     0b1100, // classes of 4 and 8 radii above the radius class
    /// );
    /// let pts = [Vec3::ZERO, Vec3::new(0.3, 0.0, 0.0), Vec3::new(2.0, 0.0, 0.0)];
    /// h.build(&pts, 0.5).unwrap();
    /// let mut pairs = 0;
    /// h.for_each_pair(|i, j, _| { assert_eq!(i + j, 1); pairs += 1 });
    /// assert_eq!(pairs, 1);
    /// ```
    pub const fn for_particles(
        slots: Sl,
        table: Bk,
        pool: En,
        particles: Pt,
        extra_levels: u32,
    ) -> Self {
        let mut s = Self::new(
            slots,
            table,
            pool,
            particles,
            HashConfig::DEFAULT.with_levels(extra_levels),
        );
        s.base_follows_radius = true;
        s
    }

    fn set_order(&mut self) {
        (self.order, self.n_levels) = level_order(self.config.levels);
    }

    /// The configuration.
    pub fn config(&self) -> &HashConfig<B::Point> {
        &self.config
    }

    /// Replaces the configuration; every stored element is rehashed at the
    /// next query. Cost: `O(C + N)` to check and re-class the stored
    /// elements (the rehash comes later).
    ///
    /// # Errors
    /// [`Error::OutOfRange`] if a stored element lies beyond [`HHASH_RANGE_CELLS`]
    /// under the new configuration, [`Error::CapacityExceeded`] if the pool
    /// cannot hold the stored elements under it; nothing changes on error.
    pub fn set_config(&mut self, config: HashConfig<B::Point>) -> Result<(), Error> {
        let need = self.objects_need(&config)?;
        for p in &self.particles.as_ref()[..self.n_particles as usize] {
            config.stored_cell(*p)?;
        }
        if need.saturating_add(self.n_particles as u64) > self.pool.as_ref().len() as u64 {
            return Err(self.capacity_error());
        }
        self.adopt(config, need);
        Ok(())
    }

    /// Pool entries the stored objects would take under `config`
    /// (saturating).
    ///
    /// # Errors
    /// [`Error::OutOfRange`] for an object beyond [`HHASH_RANGE_CELLS`] under it.
    fn objects_need(&self, config: &HashConfig<B::Point>) -> Result<u64, Error> {
        let mut need = 0u64;
        for s in self.slots.as_ref() {
            if let Some(b) = s.get() {
                need = need.saturating_add(config.entries_of(&b)?);
            }
        }
        Ok(need)
    }

    /// Switches to `config`, whose objects take `need` entries (checked by
    /// the caller): the slots are re-classed and the table goes stale.
    fn adopt(&mut self, config: HashConfig<B::Point>, need: u64) {
        self.config = config;
        for s in self.slots.as_mut() {
            if let Some(b) = s.get() {
                *s = HashSlot::new(b, &config);
            }
        }
        self.object_entries = need;
        self.set_order();
        self.stale = true;
    }

    /// Number of buckets.
    pub fn table_len(&self) -> usize {
        self.table.as_ref().len()
    }

    /// Pool entries available.
    pub fn pool_len(&self) -> usize {
        self.pool.as_ref().len()
    }

    /// The class level of a stored object.
    pub fn class_of_id(&self, id: u32) -> Option<u32> {
        let s = self.slots.as_ref().get(id as usize)?;
        s.get().map(|_| s.level)
    }

    fn present(&self, id: u32) -> Result<B, Error> {
        crate::ids::stored(self.slots.as_ref(), id)
    }

    fn capacity_error(&self) -> Error {
        Error::CapacityExceeded {
            capacity: self.pool.as_ref().len(),
        }
    }
}
