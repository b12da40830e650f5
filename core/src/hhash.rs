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
//! Inserting an object appends its entries to the table at once; updating
//! or removing one marks the table stale, and the next query rebuilds it from
//! the slots (the paper's per-step rehash). The pool must hold one entry per
//! (object, cell) plus one per particle; [`HashConfig::entries_for`] counts
//! them. A full pool is [`Error::CapacityExceeded`] on the insert that would
//! overflow it, and nothing already stored is lost: a rebuild always fits.
//!
//! # Exactness
//!
//! Hash collisions put unrelated elements in one bucket; the raw candidate
//! set ([`Candidates::Raw`]) keeps them, as the paper's does. The exact mode
//! reports an object only from the one visited cell that holds the lowest
//! corner of its overlap with the query box, in the object's own class, so
//! each overlapping object is reported once and only overlapping ones are.
//! Particles have a single entry; a neighbour is reported from the cell that
//! holds it. Cell coordinates come from monotone `f32` arithmetic, so the
//! cells of a query box's corners bound the cells of everything overlapping
//! it, with no margin and no range limit beyond [`HHASH_RANGE_CELLS`] base cells from
//! the origin.

use core::marker::PhantomData;

use crate::cell::floor_i32;
use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;
use crate::traits::{BroadPhase, NeighborSearch};

/// Largest class level: classes have sizes `base · 2^0` to `base · 2^30`.
pub const MAX_LEVEL: u32 = 30;

pub use crate::cell::HHASH_RANGE_CELLS;

/// Largest number of objects or particles (ids use 31 bits).
pub const MAX_ELEMENTS: usize = 1 << 31;

const NONE: u32 = u32::MAX;
const FLAG: u32 = 1 << 31;
const STAMP_MASK: u32 = FLAG - 1;
const PARTICLE: u32 = 1 << 31;
const EMPTY_LEVEL: u32 = u32::MAX;
const GOLDEN: u32 = 0x9E37_79B9;

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
pub trait Scheme: sealed::Sealed + Copy + core::fmt::Debug + 'static {
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

/// Classes, base size and origin of a [`ClassHash`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HashConfig<P: Point> {
    base: f32,
    inv_base: f32,
    origin: P,
    levels: u32,
}

impl<P: Point> HashConfig<P> {
    /// Base size 1, the origin at zero, and the single class of level 0.
    pub const DEFAULT: Self = Self {
        base: 1.0,
        inv_base: 1.0,
        origin: P::ZERO,
        levels: 1,
    };

    /// A configuration with the smallest class of size `base` and the
    /// classes whose levels are the set bits of `levels` (bit 0, the class
    /// of size `base`, is always added).
    ///
    /// # Errors
    /// [`Error::InvalidRadius`] if `base` is not finite and positive with a
    /// finite, normal inverse; [`Error::InvalidConfig`] if `levels` has a bit
    /// above [`MAX_LEVEL`].
    pub const fn new(base: f32, levels: u32) -> Result<Self, Error> {
        let inv_base = 1.0 / base;
        if !(base.is_finite() && base > 0.0 && inv_base.is_finite() && inv_base.is_normal()) {
            return Err(Error::InvalidRadius);
        }
        if levels >> (MAX_LEVEL + 1) != 0 {
            return Err(Error::InvalidConfig { field: "levels" });
        }
        Ok(Self {
            base,
            inv_base,
            origin: P::ZERO,
            levels: levels | 1,
        })
    }

    /// The preprocessing pass of §2.2: the smallest class of size `base`
    /// (the fluid's interaction radius) plus the class of every size in
    /// `sizes` (longest box edges; sizes at or below `base` add nothing,
    /// sizes above `base · 2^30` add the largest level, [`MAX_LEVEL`]). The
    /// result always round-trips: `HashConfig::new(c.base(), c.levels())`
    /// gives `c` back.
    ///
    /// # Errors
    /// As [`new`](Self::new); [`Error::NonFinite`] for a size that is NaN or
    /// infinite.
    pub fn from_sizes(base: f32, sizes: impl IntoIterator<Item = f32>) -> Result<Self, Error> {
        let mut c = Self::new(base, 1)?;
        for s in sizes {
            c = c.add_size(s)?;
        }
        Ok(c)
    }

    /// This configuration with the class of `size` added.
    ///
    /// # Errors
    /// [`Error::NonFinite`] if `size` is NaN or infinite.
    pub fn add_size(self, size: f32) -> Result<Self, Error> {
        if !size.is_finite() {
            return Err(Error::NonFinite);
        }
        // Sizes beyond the largest class add the largest class (which
        // subdivides them): a level above MAX_LEVEL would not round-trip
        // through `new`.
        let l = self.level_at_least(size).min(MAX_LEVEL);
        Ok(Self {
            levels: self.levels | (1 << l),
            ..self
        })
    }

    /// This configuration with the classes of `levels` added (bits above
    /// [`MAX_LEVEL`] are ignored). Levels with no object of their own still
    /// prune empty space in hierarchical hashing.
    pub const fn with_levels(self, levels: u32) -> Self {
        Self {
            levels: self.levels | (levels & ((1 << (MAX_LEVEL + 1)) - 1)),
            ..self
        }
    }

    /// This configuration with another origin for the cells.
    ///
    /// # Errors
    /// [`Error::NonFinite`] if `origin` is not finite.
    pub fn with_origin(self, origin: P) -> Result<Self, Error> {
        if !origin.is_finite() {
            return Err(Error::NonFinite);
        }
        Ok(Self { origin, ..self })
    }

    /// The size of the smallest class.
    pub const fn base(&self) -> f32 {
        self.base
    }

    /// The levels in use: bit `c` is the class of size `base · 2^c`.
    pub const fn levels(&self) -> u32 {
        self.levels
    }

    /// The origin shared by every class's cells.
    pub const fn origin(&self) -> P {
        self.origin
    }

    /// The size of the class of level `c` (`base · 2^c`; levels above
    /// [`MAX_LEVEL`], which no configuration holds, report the largest
    /// class's size).
    pub fn class_size(&self, c: u32) -> f32 {
        self.base * (1u64 << c.min(MAX_LEVEL)) as f32
    }

    /// Smallest level whose class size `base · 2^l` is at least `edge`
    /// (up to 31 for edges beyond the largest class).
    ///
    /// The ratio `edge / base` is rounded, and can round down onto a power
    /// of two (base 1.9233739, edge 1.9233741: ratio exactly 1.0 in `f32`),
    /// which would pick a class smaller than the edge. `base · 2^l` is exact
    /// in `f32` (a power-of-two scaling), so the comparison is exact.
    #[inline]
    fn level_at_least(&self, edge: f32) -> u32 {
        let l = level_for(edge * self.inv_base);
        if l < 31 && self.base * ((1u32 << l) as f32) < edge {
            l + 1
        } else {
            l
        }
    }

    /// The class an object of this box goes to: the smallest class at least
    /// as large as its longest edge, or the largest class (subdivided).
    pub fn class_of(&self, aabb: &P::Aabb) -> u32 {
        let need = self.level_at_least(aabb.longest_edge());
        let above = self.levels & !((1u32 << need) - 1);
        if above != 0 {
            above.trailing_zeros()
        } else {
            31 - self.levels.leading_zeros()
        }
    }

    /// Entries an object of this box takes: the number of cells of its class
    /// it overlaps.
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::InvertedBox`], [`Error::OutOfRange`].
    pub fn entries_of(&self, aabb: &P::Aabb) -> Result<u64, Error> {
        aabb.check()?;
        let (lo, hi) = self.stored_range(aabb)?;
        Ok(cell_count::<P>(&lo, &hi, self.class_of(aabb)))
    }

    /// Pool entries needed to store `boxes` as objects plus `particles`
    /// particles (saturating).
    ///
    /// # Errors
    /// As [`entries_of`](Self::entries_of) for the first bad box.
    pub fn entries_for(&self, boxes: &[P::Aabb], particles: usize) -> Result<u64, Error> {
        let mut n = particles as u64;
        for b in boxes {
            n = n.saturating_add(self.entries_of(b)?);
        }
        Ok(n)
    }

    /// Base-cell coordinate along `axis`, clamped to `±HHASH_RANGE_CELLS`
    /// (monotone in `x`).
    #[inline(always)]
    fn base_t(&self, x: f32, axis: usize) -> f32 {
        ((x - self.origin.coord(axis)) * self.inv_base).clamp(-HHASH_RANGE_CELLS, HHASH_RANGE_CELLS)
    }

    /// Base cell of a point, clamped.
    #[inline(always)]
    fn base_cell(&self, p: P) -> [i32; 3] {
        let mut c = [0; 3];
        for (k, ck) in c.iter_mut().enumerate().take(P::DIM) {
            *ck = floor_i32(self.base_t(p.coord(k), k));
        }
        c
    }

    /// Base cells of a box's corners, clamped (for queries).
    #[inline(always)]
    fn query_range(&self, b: &P::Aabb) -> ([i32; 3], [i32; 3]) {
        (self.base_cell(b.min()), self.base_cell(b.max()))
    }

    /// Base cells of a stored point: refused beyond `HHASH_RANGE_CELLS`.
    #[inline(always)]
    fn stored_cell(&self, p: P) -> Result<[i32; 3], Error> {
        let mut c = [0; 3];
        for (k, ck) in c.iter_mut().enumerate().take(P::DIM) {
            let t = (p.coord(k) - self.origin.coord(k)) * self.inv_base;
            if t.is_nan() || t.abs() >= HHASH_RANGE_CELLS {
                return Err(Error::OutOfRange);
            }
            *ck = floor_i32(t);
        }
        Ok(c)
    }

    fn stored_range(&self, b: &P::Aabb) -> Result<([i32; 3], [i32; 3]), Error> {
        Ok((self.stored_cell(b.min())?, self.stored_cell(b.max())?))
    }
}

/// Smallest level `c` with `2^c ≥ e` (0 for `e ≤ 1`, capped at 31 for
/// anything above 2³⁰, including infinity; NaN gives 0).
#[inline(always)]
fn level_for(e: f32) -> u32 {
    // e is a ratio of sizes; negative or NaN cannot come from a valid box.
    if e <= 1.0 || e.is_nan() {
        return 0;
    }
    if e > HHASH_RANGE_CELLS {
        return 31;
    }
    let bits = e.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32 - 127; // e ≥ 1: normal
    let exact = bits & 0x7f_ffff == 0;
    (exp + if exact { 0 } else { 1 }) as u32
}

/// The set bits of `levels`, largest first, and their number.
const fn level_order(levels: u32) -> ([u8; 32], u32) {
    let mut order = [0u8; 32];
    let mut n = 0;
    let mut l = 32;
    while l > 0 {
        l -= 1;
        if levels & (1 << l) != 0 {
            order[n] = l as u8;
            n += 1;
        }
    }
    (order, n as u32)
}

#[inline(always)]
fn shr(c: &[i32; 3], l: u32) -> [i32; 3] {
    [c[0] >> l, c[1] >> l, c[2] >> l]
}

/// Cells of level `l` in the base-cell range `[lo, hi]` (saturating).
#[inline(always)]
fn cell_count<P: Point>(lo: &[i32; 3], hi: &[i32; 3], l: u32) -> u64 {
    let mut n = 1u64;
    for k in 0..P::DIM {
        let w = ((hi[k] >> l) as i64 - (lo[k] >> l) as i64 + 1) as u64;
        n = n.saturating_mul(w);
    }
    n
}

/// Next cell of the box `[lo, hi]` after `c` in odometer order (axis 0
/// fastest), or `false` when `c` was the last.
#[inline(always)]
fn advance<P: Point>(c: &mut [i32; 3], lo: &[i32; 3], hi: &[i32; 3]) -> bool {
    for k in 0..P::DIM {
        if c[k] < hi[k] {
            c[k] += 1;
            return true;
        }
        c[k] = lo[k];
    }
    false
}

#[inline(always)]
fn cell_hash<P: Point>(c: &[i32; 3]) -> u32 {
    P::cell_hash(P::cell_from_fn(|k| c[k]))
}

/// One object id's slot: its box, its class level (`u32::MAX` when the id
/// is not stored) and the base cell of its lower corner (so that the
/// exact-mode filter is integer arithmetic).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HashSlot<B> {
    aabb: B,
    level: u32,
    lo: [i32; 3],
}

impl<B: BoundingBox> crate::ids::IdSlot for HashSlot<B> {
    type Box = B;
    #[inline(always)]
    fn stored(&self) -> Option<B> {
        self.get()
    }
}

impl<B: BoundingBox> Default for HashSlot<B> {
    /// The unused value, [`HashSlot::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl Default for HashBucket {
    /// The unused value, [`HashBucket::EMPTY`].
    fn default() -> Self {
        Self::EMPTY
    }
}

impl Default for HashEntry {
    /// The unused value, [`HashEntry::EMPTY`].
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<B: BoundingBox> HashSlot<B> {
    /// An unused slot.
    pub const EMPTY: Self = Self {
        aabb: B::NAN,
        level: EMPTY_LEVEL,
        lo: [0; 3],
    };

    fn new(aabb: B, config: &HashConfig<B::Point>) -> Self {
        Self {
            aabb,
            level: config.class_of(&aabb),
            lo: config.base_cell(aabb.min()),
        }
    }

    #[inline(always)]
    fn get(&self) -> Option<B> {
        (self.level != EMPTY_LEVEL).then_some(self.aabb)
    }
}

/// One bucket of the table: the stamp of the step that last wrote it, its
/// `hasChildren` flag, and the head of its entry list.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HashBucket {
    /// Stamp in the low 31 bits, `hasChildren` in bit 31.
    tag: u32,
    head: u32,
}

impl HashBucket {
    /// A bucket never written.
    pub const EMPTY: Self = Self { tag: 0, head: NONE };
}

/// One pool entry: an element id (bit 31 set for a particle) and the next
/// entry of its bucket.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HashEntry {
    id: u32,
    next: u32,
}

impl HashEntry {
    /// An unused entry.
    pub const EMPTY: Self = Self {
        id: NONE,
        next: NONE,
    };
}

/// What a candidate query reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Candidates {
    /// Every object entry of every visited bucket: duplicates (an object
    /// stored in several visited cells) and hash-collision false candidates
    /// included. This is the candidate retrieval the paper measures. (A
    /// query box covering more cells than [`SCAN_FACTOR`] allows scans the
    /// slots instead and reports every stored object once.)
    Raw,
    /// Objects whose boxes overlap, each once.
    Exact,
}

/// One cell a query visited, for inspection (Fig. 3's retrieval paths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CellVisit {
    /// Class level of the cell.
    pub level: u32,
    /// Integer cell coordinates at that level (`[x, y, 0]` in 2D).
    pub cell: [i32; 3],
    /// The cell's key before reduction to the table length.
    pub key: u32,
    /// The bucket's `hasChildren` flag (always `false` in multilevel
    /// hashing).
    pub has_children: bool,
}

/// Work counted by [`ClassHash::query_counts`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QueryCounts {
    /// Cells whose bucket was read (buckets with the current stamp).
    pub cells: u64,
    /// Object entries retrieved ([`Candidates::Raw`]).
    pub raw: u64,
    /// Raw entries whose object is not stored in the visited cell (hash
    /// collisions with other cells or classes).
    pub collisions: u64,
    /// Objects that overlap the query ([`Candidates::Exact`]).
    pub exact: u64,
}

/// Occupancy of the table, from [`ClassHash::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HashStats {
    /// Objects stored.
    pub objects: u32,
    /// Particles stored.
    pub particles: u32,
    /// Pool entries in use.
    pub entries: u32,
    /// Buckets written by the current step (entries or flags).
    pub buckets_used: u32,
    /// Buckets holding elements whose lowest cells differ: an estimate of
    /// hash collisions between cells (an object's lowest cell stands for
    /// all of its cells, so neighbouring objects meeting in one cell count
    /// as shared, and an object's own cells sharing a bucket do not).
    pub buckets_shared: u32,
    /// Objects stored in more cells than their corners (boxes larger than
    /// the largest class).
    pub subdivided: u32,
    /// Objects per class level.
    pub per_level: [u32; 32],
}

/// Hierarchical ([`Hierarchical`]) or multilevel ([`Multilevel`]) hashing
/// over caller buffers: objects by id ([`BroadPhase`]) and particles
/// ([`NeighborSearch`]) in one table. See the [module](self) docs.
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
    /// `32 - log2(T)`: bucket = top bits of `key · GOLDEN`.
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
    /// to 2³¹; contents ignored, swept at first use), an entry pool and a
    /// particle buffer (its length is the particle capacity; may be empty).
    ///
    /// A `const fn`, so a fixed-size instance can be a `static`. The table
    /// length is checked at the first insert, build or rehash
    /// ([`Error::InvalidTableLength`]).
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

    /// A structure for neighbour search alone whose smallest class follows
    /// the radius of each [`NeighborSearch::build`]; `extra_levels` are kept
    /// above it (hierarchical pruning of empty space).
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

    /// At first use: checks the table length and sweeps the table.
    fn ready(&mut self) -> Result<(), Error> {
        if self.stamp == 0 {
            let mask = crate::table::table_mask(self.table.as_ref().len())?;
            self.shift = 32 - mask.count_ones();
            self.new_step();
        }
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &HashConfig<B::Point> {
        &self.config
    }

    /// Replaces the configuration; every stored element is rehashed at the
    /// next query.
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

    /// Bytes of the four buffers (the formula of the [module](self) docs).
    pub fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.slots.as_ref())
            + core::mem::size_of_val(self.table.as_ref())
            + core::mem::size_of_val(self.pool.as_ref())
            + core::mem::size_of_val(self.particles.as_ref())
    }

    /// The class level of a stored object.
    pub fn class_of_id(&self, id: u32) -> Option<u32> {
        let s = self.slots.as_ref().get(id as usize)?;
        s.get().map(|_| s.level)
    }

    // ----- table primitives ---------------------------------------------

    #[inline(always)]
    fn bucket_of(&self, key: u32) -> usize {
        ((key.wrapping_mul(GOLDEN) as u64) >> self.shift) as usize
    }

    /// `h^c` of a cell of level `l`: the spatial hash of its coordinates
    /// plus a salt of its class.
    #[inline(always)]
    fn h(c: &[i32; 3], l: u32) -> u32 {
        cell_hash::<B::Point>(c).wrapping_add(l.wrapping_mul(GOLDEN))
    }

    /// The key of a cell of level `order[li]` whose base-cell coordinates
    /// are `base` (hierarchical: summed over the levels above).
    fn key_of(&self, li: u32, cell_at_level: &[i32; 3]) -> u32 {
        let l = self.order[li as usize] as u32;
        if S::HIERARCHICAL {
            let mut key = 0u32;
            for i in 0..=li {
                let up = self.order[i as usize] as u32;
                key = key.wrapping_add(Self::h(&shr(cell_at_level, up - l), up));
            }
            key
        } else {
            Self::h(cell_at_level, l)
        }
    }

    fn level_index(&self, l: u32) -> Option<u32> {
        (0..self.n_levels).find(|&i| self.order[i as usize] as u32 == l)
    }

    /// Starts a new step: a new stamp (old buckets read as empty) and an
    /// empty pool.
    fn new_step(&mut self) {
        let table = self.table.as_mut();
        crate::table::advance_stamp(&mut self.stamp, || table.fill(HashBucket::EMPTY));
        if self.stamp > STAMP_MASK {
            table.fill(HashBucket::EMPTY);
            self.stamp = 1;
        }
        self.used = 0;
        self.occupied = 0;
    }

    /// The bucket, reset if it belongs to an older step.
    #[inline(always)]
    fn fresh(&mut self, b: usize) -> &mut HashBucket {
        let stamp = self.stamp;
        let bucket = &mut self.table.as_mut()[b];
        if bucket.tag & STAMP_MASK != stamp {
            *bucket = HashBucket {
                tag: stamp,
                head: NONE,
            };
        }
        bucket
    }

    /// Stores `tagged` in the cell `cell` (coordinates at level
    /// `order[li]`), flagging the buckets above it (Listing 1). The caller
    /// has checked the pool has room.
    fn put(&mut self, li: u32, cell: &[i32; 3], tagged: u32) {
        let l = self.order[li as usize] as u32;
        let key = if S::HIERARCHICAL {
            let mut key = 0u32;
            for i in 0..li {
                let up = self.order[i as usize] as u32;
                key = key.wrapping_add(Self::h(&shr(cell, up - l), up));
                let b = self.bucket_of(key);
                self.fresh(b).tag |= FLAG;
            }
            key.wrapping_add(Self::h(cell, l))
        } else {
            self.key_of(li, cell)
        };
        let b = self.bucket_of(key);
        let e = self.used;
        let head = {
            let bucket = self.fresh(b);
            let h = bucket.head;
            bucket.head = e;
            h
        };
        self.pool.as_mut()[e as usize] = HashEntry {
            id: tagged,
            next: head,
        };
        self.used += 1;
        self.occupied |= 1 << l;
    }

    /// Stores object `id` (its slot is filled) in every cell of its class.
    fn put_object(&mut self, id: u32) {
        let slot = self.slots.as_ref()[id as usize];
        let l = slot.level;
        let Some(li) = self.level_index(l) else {
            return; // unreachable: a slot's level is one of the classes
        };
        let (lo, hi) = self.config.query_range(&slot.aabb);
        let (lo, hi) = (shr(&lo, l), shr(&hi, l));
        let mut c = lo;
        loop {
            self.put(li, &c, id);
            if !advance::<B::Point>(&mut c, &lo, &hi) {
                break;
            }
        }
    }

    fn put_particle(&mut self, i: u32) {
        let p = self.particles.as_ref()[i as usize];
        let c = self.config.base_cell(p);
        let li = self.n_levels - 1; // level 0 is always the last
        self.put(li, &c, i | PARTICLE);
    }

    /// Rehashes everything if the table is stale.
    fn refresh(&mut self) {
        // Before first use (stamp 0) nothing is stored.
        if self.stale && self.stamp != 0 {
            self.rebuild();
        }
    }

    fn rebuild(&mut self) {
        self.new_step();
        for id in 0..self.slots.as_ref().len() as u32 {
            if self.slots.as_ref()[id as usize].level != EMPTY_LEVEL {
                self.put_object(id);
            }
        }
        for i in 0..self.n_particles {
            self.put_particle(i);
        }
        self.stale = false;
    }

    /// Rehashes every stored element into a fresh step now (the paper's
    /// per-step rebuild; queries do it themselves when the table is stale).
    ///
    /// # Errors
    /// [`Error::InvalidTableLength`] at first use.
    pub fn rehash(&mut self) -> Result<(), Error> {
        self.ready()?;
        self.rebuild();
        Ok(())
    }

    // ----- traversal ----------------------------------------------------

    /// Calls `visit(li, cell, key, bucket)` for every cell of level at least
    /// `stop` that the base-cell range `[lo, hi]` overlaps and whose bucket
    /// holds data of the current step — in hierarchical hashing only below
    /// buckets flagged `hasChildren`.
    #[inline(always)]
    fn traverse<V: FnMut(u32, &[i32; 3], u32, usize)>(
        &self,
        lo: &[i32; 3],
        hi: &[i32; 3],
        stop: u32,
        visit: V,
    ) {
        self.walk(lo, hi, stop, u64::MAX, visit);
    }

    /// [`traverse`](Self::traverse), stopping after `budget` enumerated
    /// cells; `false` if it stopped early.
    #[inline(always)]
    fn walk<V: FnMut(u32, &[i32; 3], u32, usize)>(
        &self,
        lo: &[i32; 3],
        hi: &[i32; 3],
        stop: u32,
        mut budget: u64,
        mut visit: V,
    ) -> bool {
        let table = self.table.as_ref();
        let stamp = self.stamp;
        if stamp == 0 {
            return true; // never used: nothing stored, the table unchecked
        }
        if S::HIERARCHICAL {
            // Depth-first, no recursion: `cur[d]` is the cell being visited
            // at the `d`-th level of `order`, `keys[d]` the key of its
            // parent. A level's range (the children of `cur[d - 1]` that
            // the query overlaps) is recomputed when the cell advances.
            let mut deepest = 0usize;
            while deepest + 1 < self.n_levels as usize && self.order[deepest + 1] as u32 >= stop {
                deepest += 1;
            }
            let mut cur = [[0i32; 3]; 32];
            let mut keys = [0u32; 32];
            cur[0] = shr(lo, self.order[0] as u32);
            let mut d = 0usize;
            loop {
                if budget == 0 {
                    return false;
                }
                budget -= 1;
                let l = self.order[d] as u32;
                let cell = cur[d];
                let key = keys[d].wrapping_add(Self::h(&cell, l));
                let b = self.bucket_of(key);
                let tag = table[b].tag;
                if tag & STAMP_MASK == stamp {
                    visit(d as u32, &cell, key, b);
                    if tag & FLAG != 0 && d < deepest {
                        let (clo, _) = self.child_range(lo, hi, &cell, d);
                        d += 1;
                        cur[d] = clo;
                        keys[d] = key;
                        continue;
                    }
                }
                // Next cell: advance at this depth, popping finished levels.
                loop {
                    let (rlo, rhi) = if d == 0 {
                        let top = self.order[0] as u32;
                        (shr(lo, top), shr(hi, top))
                    } else {
                        self.child_range(lo, hi, &cur[d - 1], d - 1)
                    };
                    if advance::<B::Point>(&mut cur[d], &rlo, &rhi) {
                        break;
                    }
                    if d == 0 {
                        return true;
                    }
                    d -= 1;
                }
            }
        } else {
            for li in 0..self.n_levels {
                let l = self.order[li as usize] as u32;
                if l < stop {
                    break;
                }
                if self.occupied & (1 << l) == 0 {
                    continue; // a class with nothing stored
                }
                let (clo, chi) = (shr(lo, l), shr(hi, l));
                let mut c = clo;
                loop {
                    if budget == 0 {
                        return false;
                    }
                    budget -= 1;
                    let key = Self::h(&c, l);
                    let b = self.bucket_of(key);
                    if table[b].tag & STAMP_MASK == stamp {
                        visit(li, &c, key, b);
                    }
                    if !advance::<B::Point>(&mut c, &clo, &chi) {
                        break;
                    }
                }
            }
        }
        true
    }

    /// `true` if walking the base-cell range `[lo, hi]` down to level
    /// `stop` would enumerate more than [`SCAN_FACTOR`]` · (C + N + 64)`
    /// cells: queries then scan the slots and particles instead, so a query
    /// costs `O(SCAN_FACTOR · (C + N))` at most, whatever its box and
    /// however many keys collide.
    #[inline(always)]
    fn too_many_cells(&self, lo: &[i32; 3], hi: &[i32; 3], stop: u32) -> bool {
        let scan = self.slots.as_ref().len() as u64 + self.n_particles as u64 + 64;
        self.walk_exceeds(lo, hi, stop, SCAN_FACTOR.saturating_mul(scan))
    }

    /// `true` if the walk would enumerate more than `limit` cells. Cheap when
    /// the cells of the range at every level fit the limit; otherwise (only
    /// hierarchical hashing can prune below that) a dry walk counts.
    fn walk_exceeds(&self, lo: &[i32; 3], hi: &[i32; 3], stop: u32, limit: u64) -> bool {
        // Quick accept: the finest level has the most cells.
        if cell_count::<B::Point>(lo, hi, stop).saturating_mul(self.n_levels as u64) <= limit {
            return false;
        }
        let mut total = 0u64;
        for i in 0..self.n_levels as usize {
            let l = self.order[i] as u32;
            if l < stop {
                break;
            }
            if !S::HIERARCHICAL && self.occupied & (1 << l) == 0 {
                continue;
            }
            total = total.saturating_add(cell_count::<B::Point>(lo, hi, l));
        }
        if total <= limit {
            return false;
        }
        !S::HIERARCHICAL || !self.walk(lo, hi, stop, limit, |_, _, _, _| {})
    }

    /// The cells of level `order[d + 1]` inside `parent` (a cell of level
    /// `order[d]`) that the base-cell range `[lo, hi]` overlaps (never
    /// empty when `parent` overlaps the range).
    #[inline(always)]
    fn child_range(
        &self,
        lo: &[i32; 3],
        hi: &[i32; 3],
        parent: &[i32; 3],
        d: usize,
    ) -> ([i32; 3], [i32; 3]) {
        let l = self.order[d] as u32;
        let l2 = self.order[d + 1] as u32;
        let fan = l - l2;
        let mut clo = [0; 3];
        let mut chi = [0; 3];
        for k in 0..B::Point::DIM {
            let first = (parent[k] as i64) << fan;
            let last = ((parent[k] as i64 + 1) << fan) - 1;
            clo[k] = first.max((lo[k] >> l2) as i64) as i32;
            chi[k] = last.min((hi[k] >> l2) as i64) as i32;
        }
        (clo, chi)
    }

    /// Entries of bucket `b` (current step).
    #[inline(always)]
    fn entries(&self, b: usize) -> EntryIter<'_> {
        EntryIter {
            pool: self.pool.as_ref(),
            next: self.table.as_ref()[b].head,
        }
    }

    /// `true` if the object in `slot` (of level `l`), overlapping a query
    /// whose lower corner is in base cell `qlo`, is reported from cell
    /// `cell`: the cell of its class holding the lowest corner of the
    /// overlap. That corner is `max(q.min, b.min)`, and the cell function is
    /// monotone, so its cell is the maximum of the two corners' cells.
    #[inline(always)]
    fn canonical(qlo: &[i32; 3], slot: &HashSlot<B>, l: u32, cell: &[i32; 3]) -> bool {
        (0..B::Point::DIM).all(|k| (qlo[k].max(slot.lo[k]) >> l) == cell[k])
    }

    /// `true` if object `b` of level `lb` is stored in cell `cell` of level
    /// `l`.
    fn stored_in(&self, b: &B, lb: u32, l: u32, cell: &[i32; 3]) -> bool {
        if lb != l {
            return false;
        }
        let (lo, hi) = self.config.query_range(b);
        let (lo, hi) = (shr(&lo, l), shr(&hi, l));
        (0..B::Point::DIM).all(|k| lo[k] <= cell[k] && cell[k] <= hi[k])
    }

    /// Object candidates of `q` from cells of level at least `stop`; for
    /// exact mode, `keep(id, level)` further filters (pair enumeration).
    #[inline(always)]
    fn candidates_in<F: FnMut(u32)>(
        &self,
        q: &B,
        stop: u32,
        mode: Candidates,
        mut keep: impl FnMut(u32, u32) -> bool,
        mut f: F,
    ) {
        let (lo, hi) = self.config.query_range(q);
        let slots = self.slots.as_ref();
        if self.too_many_cells(&lo, &hi, stop) {
            // Scanning the slots is cheaper than walking the cells.
            for (id, s) in slots.iter().enumerate() {
                let id = id as u32;
                if s.level == EMPTY_LEVEL || s.level < stop {
                    continue;
                }
                let hit = match mode {
                    Candidates::Raw => true,
                    Candidates::Exact => keep(id, s.level) && s.aabb.overlaps(q),
                };
                if hit {
                    f(id);
                }
            }
            return;
        }
        self.traverse(&lo, &hi, stop, |li, cell, _key, b| {
            let l = self.order[li as usize] as u32;
            let mut prev = NONE;
            for id in self.entries(b) {
                if id & PARTICLE != 0 {
                    continue;
                }
                match mode {
                    Candidates::Raw => f(id),
                    // An object whose cells share this bucket has adjacent
                    // entries here (it pushed them in one go): one is enough.
                    Candidates::Exact if id == prev => {}
                    Candidates::Exact => {
                        prev = id;
                        let s = &slots[id as usize];
                        if s.level == l
                            && keep(id, s.level)
                            && s.aabb.overlaps(q)
                            && Self::canonical(&lo, s, l, cell)
                        {
                            f(id);
                        }
                    }
                }
            }
        });
    }

    // ----- public queries -----------------------------------------------

    /// Calls `f(id)` for the object candidates of the box `q` (see
    /// [`Candidates`]); with `Raw` an id may come several times.
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::InvertedBox`] for a bad query box.
    pub fn for_each_candidate<F: FnMut(u32)>(
        &mut self,
        q: &B,
        mode: Candidates,
        f: F,
    ) -> Result<(), Error> {
        q.check()?;
        self.refresh();
        self.candidates_in(q, 0, mode, |_, _| true, f);
        Ok(())
    }

    /// Like [`for_each_candidate`](Self::for_each_candidate) on a table that
    /// is up to date (after [`rehash`](Self::rehash) or any `&mut` query),
    /// from a shared reference; `Err(StaleTable)` if it is stale.
    ///
    /// # Errors
    /// As [`for_each_candidate`](Self::for_each_candidate), and
    /// [`Error::StaleTable`] on a stale table.
    pub fn candidates<F: FnMut(u32)>(&self, q: &B, mode: Candidates, f: F) -> Result<(), Error> {
        q.check()?;
        if self.stale {
            return Err(Error::StaleTable);
        }
        self.candidates_in(q, 0, mode, |_, _| true, f);
        Ok(())
    }

    /// The single-point top-down query of §3.3 (Fig. 3): calls `f(id)` for
    /// every object entry in the cells on the point's path, from the largest
    /// class down until a cell has no children (all classes in multilevel
    /// hashing). Duplicates and hash-collision candidates included.
    ///
    /// # Errors
    /// [`Error::NonFinite`].
    pub fn point_candidates<F: FnMut(u32)>(&mut self, p: B::Point, f: F) -> Result<(), Error> {
        if !p.is_finite() {
            return Err(Error::NonFinite);
        }
        let q = B::try_new(p, p)?;
        self.for_each_candidate(&q, Candidates::Raw, f)
    }

    /// Calls `f` for every cell the query of box `q` visits (whose bucket
    /// holds data of the current step), in visiting order.
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::InvertedBox`]; [`Error::OutOfRange`]
    /// when the walk could visit more than [`INSPECT_LIMIT`] cells.
    pub fn for_each_visited_cell<F: FnMut(CellVisit)>(
        &mut self,
        q: &B,
        mut f: F,
    ) -> Result<(), Error> {
        q.check()?;
        self.refresh();
        let (lo, hi) = self.config.query_range(q);
        if self.walk_exceeds(&lo, &hi, 0, INSPECT_LIMIT) {
            return Err(Error::OutOfRange);
        }
        let table = self.table.as_ref();
        self.traverse(&lo, &hi, 0, |li, cell, key, b| {
            f(CellVisit {
                level: self.order[li as usize] as u32,
                cell: *cell,
                key,
                has_children: S::HIERARCHICAL && table[b].tag & FLAG != 0,
            })
        });
        Ok(())
    }

    /// The ids stored in the bucket of cell `cell` at class level `level`
    /// (all entries of the bucket, particles with bit 31 set), and its
    /// `hasChildren` flag; `None` if no class has that level or the bucket
    /// holds nothing of the current step.
    pub fn cell_contents<F: FnMut(u32)>(
        &mut self,
        level: u32,
        cell: [i32; 3],
        mut f: F,
    ) -> Option<bool> {
        self.refresh();
        if self.stamp == 0 {
            return None;
        }
        let li = self.level_index(level)?;
        let key = self.key_of(li, &cell);
        let b = self.bucket_of(key);
        let bucket = self.table.as_ref()[b];
        if bucket.tag & STAMP_MASK != self.stamp {
            return None;
        }
        for id in self.entries(b) {
            f(id);
        }
        Some(S::HIERARCHICAL && bucket.tag & FLAG != 0)
    }

    /// The key of cell `cell` at class level `level` (before reduction to
    /// the table length): `h^c` for multilevel hashing, `h^k + … + h^c` for
    /// hierarchical hashing, where `h^c` includes the class salt (see the
    /// [module](self) docs).
    pub fn key(&self, level: u32, cell: [i32; 3]) -> Option<u32> {
        self.level_index(level).map(|li| self.key_of(li, &cell))
    }

    /// Counts the work of querying box `q` (see [`QueryCounts`]).
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::InvertedBox`]; [`Error::OutOfRange`]
    /// when the walk could visit more than [`INSPECT_LIMIT`] cells.
    pub fn query_counts(&mut self, q: &B) -> Result<QueryCounts, Error> {
        q.check()?;
        self.refresh();
        let mut n = QueryCounts::default();
        let (lo, hi) = self.config.query_range(q);
        if self.walk_exceeds(&lo, &hi, 0, INSPECT_LIMIT) {
            return Err(Error::OutOfRange);
        }
        let slots = self.slots.as_ref();
        self.traverse(&lo, &hi, 0, |li, cell, _, b| {
            n.cells += 1;
            let l = self.order[li as usize] as u32;
            let mut prev = NONE;
            for id in self.entries(b) {
                if id & PARTICLE != 0 {
                    continue;
                }
                n.raw += 1;
                let s = &slots[id as usize];
                let repeat = id == prev;
                prev = id;
                if !self.stored_in(&s.aabb, s.level, l, cell) || repeat {
                    n.collisions += 1;
                } else if s.aabb.overlaps(q) && Self::canonical(&lo, s, l, cell) {
                    n.exact += 1;
                }
            }
        });
        Ok(n)
    }

    /// Calls `f(a, b)` for pairs of stored objects: with `Exact`, every
    /// overlapping pair once; with `Raw`, every (object, entry) retrieval of
    /// the pair enumeration (each object queries the classes at or above its
    /// own; duplicates and collisions included).
    pub fn for_each_candidate_pair<F: FnMut(u32, u32)>(&mut self, mode: Candidates, mut f: F) {
        self.refresh();
        let slots = self.slots.as_ref();
        for (a, sa) in slots.iter().enumerate() {
            if sa.level == EMPTY_LEVEL {
                continue;
            }
            let a = a as u32;
            let la = sa.level;
            // Pairs with a larger class are found here; equal classes by id.
            self.candidates_in(
                &sa.aabb,
                la,
                mode,
                |b, lb| lb > la || b > a,
                |b| {
                    if mode == Candidates::Exact || b != a {
                        f(a, b)
                    }
                },
            );
        }
    }

    /// Occupancy of the table.
    pub fn stats(&mut self) -> HashStats {
        self.refresh();
        let mut s = HashStats {
            objects: self.objects,
            particles: self.n_particles,
            entries: self.used,
            ..HashStats::default()
        };
        for slot in self.slots.as_ref() {
            if let Some(b) = slot.get() {
                s.per_level[slot.level as usize] += 1;
                if self.config.entries_of(&b).unwrap_or(0) > (1 << B::Point::DIM) {
                    s.subdivided += 1;
                }
            }
        }
        for (b, bucket) in self.table.as_ref().iter().enumerate() {
            if self.stamp == 0 || bucket.tag & STAMP_MASK != self.stamp {
                continue;
            }
            s.buckets_used += 1;
            let mut first: Option<[i32; 4]> = None;
            let mut shared = false;
            for id in self.entries(b) {
                let c = self.home(id);
                match first {
                    None => first = Some(c),
                    Some(f) => shared |= f != c,
                }
            }
            s.buckets_shared += shared as u32;
        }
        s
    }

    /// Level and (lowest) cell of an element, to tell cells apart.
    fn home(&self, tagged: u32) -> [i32; 4] {
        if tagged & PARTICLE != 0 {
            let c = self
                .config
                .base_cell(self.particles.as_ref()[(tagged & !PARTICLE) as usize]);
            [0, c[0], c[1], c[2]]
        } else {
            let s = &self.slots.as_ref()[tagged as usize];
            let c = shr(&s.lo, s.level);
            [s.level as i32 + 1, c[0], c[1], c[2]]
        }
    }

    fn present(&self, id: u32) -> Result<B, Error> {
        crate::ids::stored(self.slots.as_ref(), id)
    }

    fn capacity_error(&self) -> Error {
        Error::CapacityExceeded {
            capacity: self.pool.as_ref().len(),
        }
    }

    fn check_cell(&self, li: u32, cell: &[i32; 3], tagged: u32) -> Result<(), Corruption> {
        let w = S::NAME;
        let table = self.table.as_ref();
        let b = self.bucket_of(self.key_of(li, cell));
        ensure(
            table[b].tag & STAMP_MASK == self.stamp,
            w,
            "element's bucket is current",
        )?;
        ensure(
            self.entries(b).any(|id| id == tagged),
            w,
            "element listed in its cell's bucket",
        )?;
        if S::HIERARCHICAL {
            let l = self.order[li as usize] as u32;
            for i in 0..li {
                let l2 = self.order[i as usize] as u32;
                let up = self.bucket_of(self.key_of(i, &shr(cell, l2 - l)));
                ensure(
                    table[up].tag & STAMP_MASK == self.stamp && table[up].tag & FLAG != 0,
                    w,
                    "ancestor buckets flagged hasChildren",
                )?;
            }
        }
        Ok(())
    }

    // ----- particles ----------------------------------------------------

    /// Calls `f(j, d²)` for every particle within radius of `p`, from a
    /// probe of the cells of `[p − r, p + r]` at level 0 (the 27- or 9-point
    /// probe of Listing 3, every cell in between included).
    #[inline(always)]
    fn particles_near<F: FnMut(u32, f32)>(&self, p: B::Point, mut f: F) {
        let r = self.radius;
        let lo = B::Point::from_fn(|k| p.coord(k) - r);
        let hi = B::Point::from_fn(|k| p.coord(k) + r);
        let (clo, chi) = (self.config.base_cell(lo), self.config.base_cell(hi));
        let parts = &self.particles.as_ref()[..self.n_particles as usize];
        let r2 = r * r;
        let report = |j: u32, cell: &[i32; 3], f: &mut F| {
            let q = parts[j as usize];
            let d2 = p.distance_squared(q);
            // A particle is reported from its own cell only (a bucket shared
            // by two probed cells is read twice).
            if d2 < r2 && self.config.base_cell(q) == *cell {
                f(j, d2);
            }
        };
        if self.too_many_cells(&clo, &chi, 0) {
            for (j, q) in parts.iter().enumerate() {
                let d2 = p.distance_squared(*q);
                if d2 < r2 {
                    f(j as u32, d2);
                }
            }
            return;
        }
        if !S::HIERARCHICAL {
            // Multilevel: particles live in class 0 alone, whose cells are
            // keyed by their own hash (uniform hashing, the paper's §2.1).
            if self.stamp == 0 || self.occupied & 1 == 0 {
                return;
            }
            let table = self.table.as_ref();
            let mut c = clo;
            loop {
                let b = self.bucket_of(Self::h(&c, 0));
                if table[b].tag & STAMP_MASK == self.stamp {
                    for id in self.entries(b) {
                        if id & PARTICLE != 0 {
                            report(id & !PARTICLE, &c, &mut f);
                        }
                    }
                }
                if !advance::<B::Point>(&mut c, &clo, &chi) {
                    return;
                }
            }
        }
        self.traverse(&clo, &chi, 0, |li, cell, _, b| {
            if li + 1 != self.n_levels {
                return; // particles live at level 0 only
            }
            for id in self.entries(b) {
                if id & PARTICLE != 0 {
                    report(id & !PARTICLE, cell, &mut f);
                }
            }
        });
    }
}

impl<S, B, Sl, Bk, En, Pt> BroadPhase<B> for ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    fn capacity(&self) -> usize {
        crate::ids::capacity(self.slots.as_ref().len())
    }

    fn box_count(&self) -> usize {
        self.objects as usize
    }

    fn insert(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        let i = crate::ids::index(self.slots.as_ref().len(), id)?;
        aabb.check()?;
        if self.slots.as_ref()[i].get().is_some() {
            return Err(Error::DuplicateId { id });
        }
        let need = self.config.entries_of(&aabb)?;
        self.ready()?;
        let pool = self.pool.as_ref().len() as u64;
        let live = self.object_entries + self.n_particles as u64;
        if live.saturating_add(need) > pool {
            return Err(self.capacity_error());
        }
        self.slots.as_mut()[id as usize] = HashSlot::new(aabb, &self.config);
        self.objects += 1;
        self.object_entries += need;
        if !self.stale && self.used as u64 + need <= pool {
            self.put_object(id);
        } else {
            self.stale = true;
        }
        Ok(())
    }

    fn update(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        let old = self.present(id)?;
        aabb.check()?;
        let need = self.config.entries_of(&aabb)?;
        let had = self.config.entries_of(&old).unwrap_or(0);
        let live = self.object_entries - had + self.n_particles as u64;
        if live.saturating_add(need) > self.pool.as_ref().len() as u64 {
            return Err(self.capacity_error());
        }
        self.slots.as_mut()[id as usize] = HashSlot::new(aabb, &self.config);
        self.object_entries = self.object_entries - had + need;
        self.stale = true;
        Ok(())
    }

    fn remove(&mut self, id: u32) -> Result<B, Error> {
        let b = self.present(id)?;
        let had = self.config.entries_of(&b).unwrap_or(0);
        self.slots.as_mut()[id as usize] = HashSlot::EMPTY;
        self.objects -= 1;
        self.object_entries -= had;
        self.stale = true;
        Ok(b)
    }

    fn get(&self, id: u32) -> Option<B> {
        self.present(id).ok()
    }

    fn clear(&mut self) {
        self.slots.as_mut().fill(HashSlot::EMPTY);
        self.objects = 0;
        self.object_entries = 0;
        self.n_particles = 0;
        self.stale = false;
        if self.stamp != 0 {
            self.new_step();
        }
    }

    fn for_each_overlap<F: FnMut(u32, u32)>(&mut self, f: F) -> Result<(), Error> {
        self.for_each_candidate_pair(Candidates::Exact, f);
        Ok(())
    }

    fn query<F: FnMut(u32)>(&mut self, aabb: &B, f: F) -> Result<(), Error> {
        self.for_each_candidate(aabb, Candidates::Exact, f)
    }
}

impl<S, B, Sl, Bk, En, Pt> NeighborSearch<B::Point> for ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    /// Replaces the particles (objects stay). With
    /// [`for_particles`](ClassHash::for_particles) the smallest class
    /// becomes `radius`; otherwise any radius works with the configured
    /// classes.
    ///
    /// # Errors
    /// [`Error::InvalidRadius`], [`Error::NonFinite`], [`Error::OutOfRange`],
    /// [`Error::CapacityExceeded`] (particle buffer or pool); nothing changes
    /// on error.
    fn build(&mut self, positions: &[B::Point], radius: f32) -> Result<(), Error> {
        crate::cell::check_radius(radius)?;
        let n = positions.len();
        if n > self.particles.as_ref().len() || n >= MAX_ELEMENTS {
            return Err(Error::CapacityExceeded {
                capacity: self.particles.as_ref().len(),
            });
        }
        let config = if self.base_follows_radius {
            HashConfig {
                base: radius,
                inv_base: 1.0 / radius,
                ..self.config
            }
        } else {
            self.config
        };
        for p in positions {
            if !p.is_finite() {
                return Err(Error::NonFinite);
            }
            config.stored_cell(*p)?;
        }
        let objects_need = if config != self.config {
            self.objects_need(&config)?
        } else {
            self.object_entries
        };
        if objects_need.saturating_add(n as u64) > self.pool.as_ref().len() as u64 {
            return Err(self.capacity_error());
        }
        self.ready()?;
        if config != self.config {
            self.adopt(config, objects_need);
        }
        self.particles.as_mut()[..n].copy_from_slice(positions);
        self.n_particles = n as u32;
        self.radius = radius;
        self.rebuild();
        Ok(())
    }

    fn len(&self) -> usize {
        self.n_particles as usize
    }

    fn radius(&self) -> f32 {
        self.radius
    }

    fn position(&self, id: u32) -> Option<B::Point> {
        self.particles.as_ref()[..self.n_particles as usize]
            .get(id as usize)
            .copied()
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, mut f: F) -> Result<(), Error> {
        let p = self.position(id).ok_or(Error::UnknownId { id })?;
        self.particles_near(p, |j, d2| {
            if j != id {
                f(j, d2)
            }
        });
        Ok(())
    }

    fn for_each_within<F: FnMut(u32, f32)>(&self, point: B::Point, f: F) -> Result<(), Error> {
        if !point.is_finite() {
            return Err(Error::NonFinite);
        }
        if self.n_particles > 0 {
            self.particles_near(point, f);
        }
        Ok(())
    }

    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) {
        let parts = self.particles.as_ref();
        for i in 0..self.n_particles {
            // Listing 3: each particle meets the ones before it.
            self.particles_near(parts[i as usize], |j, d2| {
                if j < i {
                    f(j, i, d2)
                }
            });
        }
    }
}

impl<S, B, Sl, Bk, En, Pt> Validate for ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    fn validate(&self) -> Result<(), Corruption> {
        let w = S::NAME;
        let slots = self.slots.as_ref();
        let mut objects = 0u32;
        let mut need = 0u64;
        for s in slots {
            match s.get() {
                Some(b) => {
                    objects += 1;
                    ensure(b.check().is_ok(), w, "stored box valid")?;
                    ensure(s.level == self.config.class_of(&b), w, "slot class")?;
                    ensure(
                        s.lo == self.config.base_cell(b.min()),
                        w,
                        "slot's lower cell",
                    )?;
                    let e = self.config.entries_of(&b);
                    ensure(e.is_ok(), w, "stored box in range")?;
                    need += e.unwrap_or(0);
                }
                None => ensure(s.aabb.min().coord(0).is_nan(), w, "empty slot's box is NaN")?,
            }
        }
        ensure(objects == self.objects, w, "object count")?;
        ensure(need == self.object_entries, w, "object entry count")?;
        ensure(
            need + self.n_particles as u64 <= self.pool.as_ref().len() as u64,
            w,
            "stored elements fit the pool",
        )?;
        ensure(
            self.n_particles as usize <= self.particles.as_ref().len(),
            w,
            "particles fit",
        )?;
        ensure(
            self.used as usize <= self.pool.as_ref().len(),
            w,
            "pool use",
        )?;
        ensure(self.stamp <= STAMP_MASK, w, "stamp range")?;
        if self.stamp == 0 {
            // Never used: nothing may be stored.
            return ensure(
                self.objects == 0 && self.n_particles == 0 && self.used == 0,
                w,
                "unused structure is empty",
            );
        }
        ensure(
            self.n_levels >= 1 && self.order[self.n_levels as usize - 1] == 0,
            w,
            "level 0 is the smallest class",
        )?;
        if self.stale {
            return Ok(());
        }
        ensure(
            self.used as u64 == need + self.n_particles as u64,
            w,
            "fresh table holds every entry",
        )?;
        // Every current bucket's list: in the pool, acyclic, disjoint.
        let mut reached = 0u64;
        for bucket in self.table.as_ref() {
            let t = bucket.tag & STAMP_MASK;
            ensure(t <= self.stamp, w, "bucket stamp not in the future")?;
            if t != self.stamp {
                continue;
            }
            let mut e = bucket.head;
            let mut steps = 0u32;
            let mut prev = NONE;
            while e != NONE {
                ensure(e < self.used, w, "entry index in use")?;
                ensure(steps < self.used, w, "bucket list acyclic")?;
                let entry = self.pool.as_ref()[e as usize];
                if entry.id & PARTICLE != 0 {
                    ensure(
                        entry.id & !PARTICLE < self.n_particles,
                        w,
                        "particle entry is stored",
                    )?;
                } else {
                    ensure(
                        slots
                            .get(entry.id as usize)
                            .is_some_and(|s| s.level != EMPTY_LEVEL),
                        w,
                        "object entry is stored",
                    )?;
                }
                if entry.id != prev && entry.id & PARTICLE == 0 {
                    // An object's entries in one bucket are adjacent: no
                    // earlier run of the same id in this list.
                    let mut f = bucket.head;
                    while f != e {
                        let earlier = self.pool.as_ref()[f as usize];
                        ensure(
                            earlier.id != entry.id,
                            w,
                            "object entries adjacent in a bucket",
                        )?;
                        f = earlier.next;
                    }
                }
                prev = entry.id;
                e = entry.next;
                steps += 1;
            }
            reached += steps as u64;
        }
        ensure(reached == self.used as u64, w, "every entry in one bucket")?;
        // Every element is in the bucket of each of its cells, and (in
        // hierarchical hashing) every bucket above it is flagged.
        for (id, s) in slots.iter().enumerate() {
            if s.level == EMPTY_LEVEL {
                continue;
            }
            let l = s.level;
            let li = self.level_index(l);
            ensure(li.is_some(), w, "object class in use")?;
            ensure(
                self.occupied & (1 << l) != 0,
                w,
                "object's class marked occupied",
            )?;
            let li = li.unwrap_or(0);
            let (lo, hi) = self.config.query_range(&s.aabb);
            let (lo, hi) = (shr(&lo, l), shr(&hi, l));
            let mut c = lo;
            loop {
                self.check_cell(li, &c, id as u32)?;
                if !advance::<B::Point>(&mut c, &lo, &hi) {
                    break;
                }
            }
        }
        ensure(
            self.n_particles == 0 || self.occupied & 1 != 0,
            w,
            "particles' class marked occupied",
        )?;
        for i in 0..self.n_particles {
            let c = self.config.base_cell(self.particles.as_ref()[i as usize]);
            self.check_cell(self.n_levels - 1, &c, i | PARTICLE)?;
        }
        Ok(())
    }
}

/// The ids of one bucket's entry list.
struct EntryIter<'a> {
    pool: &'a [HashEntry],
    next: u32,
}

impl Iterator for EntryIter<'_> {
    type Item = u32;
    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        let e = self.pool.get(self.next as usize)?;
        self.next = e.next;
        Some(e.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_defaults_are_empty() {
        use crate::geom::Aabb3;
        assert_eq!(HashBucket::default(), HashBucket::EMPTY);
        assert_eq!(HashEntry::default(), HashEntry::EMPTY);
        // HashSlot::EMPTY holds a NaN box, unequal to itself: compare what
        // the slot says it holds.
        assert!(crate::ids::IdSlot::stored(&HashSlot::<Aabb3>::default()).is_none());
    }

    /// Regression (defect 4): the ratio edge / base rounded down onto 1.0
    /// and the box went to a class smaller than its longest edge (27 cells
    /// instead of at most 8), so a pool sized by the formula ran short.
    #[test]
    fn class_is_never_smaller_than_the_longest_edge() {
        use crate::geom::{Aabb3, Vec3};
        let base = 1.923_373_9_f32;
        let c = HashConfig::<Vec3>::new(base, 0b11).unwrap();
        let b = Aabb3::new(
            Vec3::new(1.923_373_8, 1.923_373_8, 1.923_373_8),
            Vec3::new(3.846_747_9, 3.846_747_9, 3.846_747_9),
        )
        .unwrap();
        let l = c.class_of(&b);
        assert!(c.class_size(l) >= b.longest_edge(), "class {l}");
        assert_eq!(l, 1);
        assert!(c.entries_of(&b).unwrap() <= 8);
        // Exhaustively near powers of two of the base.
        let mut x = 1.0f32;
        for _ in 0..2000 {
            for k in 0..4 {
                let edge = base * (1u32 << k) as f32 * x;
                let l = c.level_at_least(edge);
                assert!(c.base * (1u64 << l) as f32 >= edge, "{edge}");
                assert!(
                    l == 0 || c.base * ((1u64 << (l - 1)) as f32) < edge,
                    "{edge}"
                );
            }
            x = f32::from_bits(x.to_bits() + 1);
        }
    }

    /// Regression (defect 5): sizes beyond the largest class set level 31,
    /// which `new` refuses, so the configuration did not round-trip and
    /// `class_size(31)` reported the wrong size.
    #[test]
    fn configurations_from_sizes_round_trip() {
        use crate::geom::Vec3;
        let c = HashConfig::<Vec3>::from_sizes(1.0, [2e9]).unwrap();
        assert_eq!(c.levels(), 1 | (1 << MAX_LEVEL));
        assert_eq!(c.class_size(MAX_LEVEL), (1u64 << 30) as f32);
        for sizes in [
            &[][..],
            &[0.5, 3.0, 1e3][..],
            &[2e9, f32::MAX][..],
            &[1.0, 2.0, 4.0, 1e30][..],
        ] {
            let c = HashConfig::<Vec3>::from_sizes(0.25, sizes.iter().copied()).unwrap();
            assert_eq!(
                HashConfig::<Vec3>::new(c.base(), c.levels()),
                Ok(c),
                "{sizes:?}"
            );
        }
    }

    #[test]
    fn levels_follow_eq2() {
        assert_eq!(level_for(0.0), 0);
        assert_eq!(level_for(1.0), 0);
        assert_eq!(level_for(1.01), 1);
        assert_eq!(level_for(2.0), 1);
        assert_eq!(level_for(3.0), 2);
        assert_eq!(level_for(4.0), 2);
        assert_eq!(level_for(1024.5), 11);
        assert_eq!(level_for(f32::INFINITY), 31);
    }
}
