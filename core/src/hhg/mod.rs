//! The hierarchical hash grid of the pe physics engine (Schornbaum 2009), in
//! one fixed arena.
//!
//! Boxes of every size go to a hierarchy of grids whose cell sizes grow by a
//! constant *hierarchy factor*; each box lives in exactly one cell of the first
//! grid whose cells are larger than its longest edge, keyed by its lower
//! corner. Overlapping pairs are found cell by cell: inside a cell, against 13
//! of the 26 neighbour cells (4 of 8 in 2D), and, for every box, against the
//! 27 cells around it in each grid with larger cells. Every pair is reported
//! exactly once, after an AABB overlap test that also filters hash aliases.
//!
//! Each grid is a *hash grid*: a power-of-two block of cells (at least 4 per
//! axis) onto which all of space is folded with a bit mask, so neighbouring
//! cells stay neighbours and neighbour offsets are precomputed — one row for
//! inner cells and one for each kind of boundary cell, wrapping periodically.
//! The grids live in a caller-provided arena of `u32` words; a grid is made
//! when a box first needs it, and grows 2× per axis (rehashing its boxes)
//! when its boxes exceed `density × cells`. A grid the arena cannot grow goes
//! on at a higher density (correct, slower; [`HhgStats`] shows it); a grid the
//! arena cannot create sends its boxes to the next larger grid or, failing
//! that, to the container of unbounded objects. Only a full object store is
//! an error.
//!
//! Memory (`C` = ids, `A` = arena words): the buffers take
//! `C · (size_of::<HhgSlot<B>>() + size_of::<HhgRecord<B>>()) + 4A` bytes,
//! that is `76C + 4A` (3D: a 36-byte slot, a 40-byte record) or `60C + 4A`
//! (2D: 28 + 32) ([`Inspect::memory_bytes`]), and the struct beside them
//! about 2.5 KiB (its 30 level descriptors). A grid takes `3^D·3^D + cells`
//! words (729 + cells in 3D, 81 + cells in 2D);
//! [`HierarchicalHashGrid::arena_words_for`] sizes the arena.
//!
//! Detection reads no slot in its pair loops: it first copies every grid
//! box and its id, cell by cell in record order, into the record buffer
//! (the *packed copy*, see [`HhgRecord`]), then tests runs of that copy.
//! The slots, indexed by the caller's ids, are random in space; the copy is
//! in the grids' own order, so a cell's neighbours are near in memory. This
//! costs 32 bytes per id of record buffer (the copy and each record's start)
//! and one pass over the boxes per detection; at 10⁶ moving cubes it halves
//! detection. Each box is then tested against its forward neighbours as
//! ranges of the copy: runs that follow each other there are joined (with
//! the records sorted, a stencil row's three cells are one range, and the
//! cell's own run joins the next cell's), and a range one cell up along an
//! axis is skipped for a box whose upper corner is in the same cell as its
//! lower corner along that axis, since no box keyed there can overlap it.
//!
//! The code is split by operation: `config` (tuning), `grids` (levels,
//! arena, cell lists), `update` (insert, update, remove, bulk updates),
//! `detect` (pairs and box queries), `par` (the parallel update and
//! detection, [`HierarchicalHashGrid::par_update_all`] and
//! [`BroadPhase::par_for_each_overlap`]), `stats` ([`Inspect`]), `validate`
//! and `interface` (the [`BroadPhase`] implementation).
//!
//! On hosts, [`HierarchicalHashGrid::update_all`] is the parallel update
//! run on the calling thread (one pass checks every box and lists those
//! that change cell, a second writes the boxes, a third relinks the listed
//! ones): the same result as the in-place passes, which firmware
//! (`target_os = "none"`) keeps because their code is smaller.
//!
//! The parallel forms take no memory beyond the above: the parallel update
//! lists the boxes that change cell in the record buffer's packed-copy
//! fields (scratch until the next detection) and keeps one 16-byte counter
//! per task (at most 256) on the stack; the parallel detection sorts the
//! records in place (through the grids' cells) and makes its packed copy in
//! the record buffer too, with a count and an offset per task (at most 256)
//! on the stack, and writes its pairs into the caller's sinks.

mod config;
mod detect;
mod grids;
mod interface;
mod par;
mod ray;
mod stats;
mod update;
mod validate;

use core::marker::PhantomData;

use crate::error::Error;
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;
use crate::table::NONE;
#[cfg(doc)]
use crate::{inspect::Inspect, traits::BroadPhase};

pub use config::{HhgConfig, UpdateStrategy};
use grids::Level;
pub use stats::{GridStats, HhgStats};

/// Levels of the hierarchy: cell sizes `c₀·fᵏ` for `k` in `-15..15`, where
/// `c₀` is fixed by the first box and `f` is the hierarchy factor.
pub const LEVELS: usize = 30;
/// The level of the first box's grid.
const BASE_LEVEL: usize = 15;

pub use crate::cell::HHG_RANGE_CELLS;

/// Bits of a key for the cell index inside a grid.
const LOCAL_BITS: u32 = 27;
const LOCAL_MASK: u32 = (1 << LOCAL_BITS) - 1;
/// Cells per axis of a grid are at most `2^MAX_LOG2`.
const MAX_LOG2_3D: u8 = 9;
const MAX_LOG2_2D: u8 = 13;

/// Key of a box in the flat array of the small-N path.
const KEY_FLAT: u32 = 30 << LOCAL_BITS;
/// Key of a box waiting to be rehashed (inside a growth).
const KEY_PENDING: u32 = (30 << LOCAL_BITS) | 1;
/// Key of an object inserted as unbounded.
const KEY_UNBOUNDED: u32 = 31 << LOCAL_BITS;
/// Key of a bounded box too large for every grid (kept with the unbounded).
const KEY_TOO_LARGE: u32 = (31 << LOCAL_BITS) | 1;
// The crate's one sentinel, [`NONE`], is the key of an id not stored, the
// end of every list and the content of an empty cell.

#[inline(always)]
const fn key(level: usize, local: u32) -> u32 {
    ((level as u32) << LOCAL_BITS) | local
}

#[inline(always)]
const fn is_grid_key(k: u32) -> bool {
    (k >> LOCAL_BITS) < LEVELS as u32
}

/// One id's slot in a [`HierarchicalHashGrid`].
///
/// Indexed by id it holds the box, its cell key and its links in the cell's
/// list; indexed by position it holds one entry of the list of occupied cells
/// (or, on the small-N path, of the flat array).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HhgSlot<B> {
    aabb: B,
    /// Grid level and cell (`level << 27 | cell`), or a state key.
    key: u32,
    /// Next box of the same cell (or list), or `NONE`.
    next: u32,
    /// Previous box (`NONE` for a cell's first box), or the position in the
    /// flat array.
    prev: u32,
}

/// One occupied cell (or, on the small-N path, one box of the flat array):
/// the list of occupied cells that detection and growth walk, so that no
/// empty cell is ever visited. A grid cell holds the index of its record.
///
/// The same element also holds one entry of the *packed copy* that pair
/// detection reads: at the start of every detection the boxes of each
/// occupied cell, in record order, are copied with their ids into `id` and
/// `aabb` of consecutive elements (entry `j` of the copy is element `j`,
/// whatever record that element holds), and each record's `start` is set to
/// its cell's first entry. The pair loops then run over contiguous runs in
/// the grids' own (cell) order instead of chasing slots indexed by id. The
/// copy is scratch: it is rebuilt by every detection and read by nothing
/// else.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HhgRecord<B> {
    /// The cell's key (`level << 27 | cell`), or the flat-array key.
    key: u32,
    /// First box of the cell (the box itself on the flat array).
    head: u32,
    /// First entry of the cell's run in the packed copy.
    start: u32,
    /// Packed copy: the id of entry `j`.
    id: u32,
    /// Packed copy: the box of entry `j`.
    aabb: B,
}

impl<B: BoundingBox> HhgRecord<B> {
    /// An unused record.
    pub const EMPTY: Self = Self {
        key: 0,
        head: NONE,
        start: 0,
        id: NONE,
        aabb: B::ZERO,
    };

    /// A record of the cell or flat key `key` whose first box is `head`
    /// (the packed entry at this index is left as it is).
    #[inline(always)]
    fn set(&mut self, key: u32, head: u32) {
        self.key = key;
        self.head = head;
    }
}

impl<B: BoundingBox> crate::ids::IdSlot for HhgSlot<B> {
    type Box = B;
    #[inline(always)]
    fn stored(&self) -> Option<B> {
        (self.key != NONE).then_some(self.aabb)
    }
}

impl<B: BoundingBox> Default for HhgSlot<B> {
    /// The unused value, [`HhgSlot::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<B: BoundingBox> Default for HhgRecord<B> {
    /// The unused value, [`HhgRecord::EMPTY`].
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<B: BoundingBox> HhgSlot<B> {
    /// An unused slot.
    pub const EMPTY: Self = Self {
        aabb: B::ZERO,
        key: NONE,
        next: NONE,
        prev: NONE,
    };
}

/// Where a box goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// A grid level (which may still have to be created).
    Grid(usize),
    /// The unbounded container.
    TooLarge,
}

/// The hierarchical hash grid: a [`BroadPhase`] with `O(1)` insert, update
/// and remove and `O(n)` pair detection whatever the boxes' sizes.
///
/// `slots` holds one [`HhgSlot`] per id (ids are below its length, at most
/// 2³¹ − 1), `recs` one [`HhgRecord`] per stored box, `arena` the grids. See
/// the [module](self) docs.
///
/// # Example
///
/// ```
/// use spatium::{Aabb3, BroadPhase, HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid, Inspect, Vec3};
///
/// let cube = |x: f32, e: f32| Aabb3::new(Vec3::new(x, 0.0, 0.0), Vec3::new(x + e, e, e));
/// // Grids from the first box on (by default all pairs are tested below 32
/// // boxes).
/// let cfg = HhgConfig::DEFAULT.with_small_n_threshold(0);
/// let mut g = HierarchicalHashGrid::new(
///     [HhgSlot::<Aabb3>::EMPTY; 8],
///     [HhgRecord::EMPTY; 8],
///     [0u32; 2048],
///     cfg,
/// );
/// g.insert(0, cube(0.0, 1.0)?)?;
/// g.insert(1, cube(0.5, 1.0)?)?; // overlaps 0
/// g.insert(2, cube(10.0, 4.0)?)?; // larger: a grid of larger cells
/// let mut pairs = Vec::new();
/// g.for_each_overlap(|a, b| pairs.push((a.min(b), a.max(b))))?;
/// assert_eq!(pairs, [(0, 1)]);
///
/// g.update(1, cube(11.0, 1.0)?)?; // now inside 2
/// let mut hits = Vec::new();
/// g.query(&cube(10.5, 1.0)?, |id| hits.push(id))?;
/// hits.sort();
/// assert_eq!(hits, [1, 2]);
///
/// assert_eq!(g.remove(0)?, cube(0.0, 1.0)?);
/// assert_eq!(g.box_count(), 2);
/// assert_eq!(g.stats().grids, 2);
/// assert_eq!(g.memory_bytes(), 76 * 8 + 4 * 2048);
/// # Ok::<(), spatium::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct HierarchicalHashGrid<
    B: BoundingBox,
    S: Storage<HhgSlot<B>>,
    R: Storage<HhgRecord<B>>,
    A: Storage<u32>,
> {
    slots: S,
    recs: R,
    arena: A,
    config: HhgConfig,
    len: u32,
    /// Occupied-cell records (grid mode) or flat boxes (small-N mode).
    nrec: u32,
    grid_mode: bool,
    /// `c₀`; zero until the first bounded box.
    base_size: f32,
    levels: [Level; LEVELS],
    /// Bit `i` set when level `i` has a grid.
    active: u32,
    /// Arena words handed out (live + garbage) and words of dead regions.
    used: usize,
    garbage: usize,
    unbounded_head: u32,
    unbounded_len: u32,
    /// Records added or moved since the records were last sorted.
    unsorted: u32,
    _b: PhantomData<B>,
}

struct Dims;

impl Dims {
    #[inline(always)]
    const fn stencil(d: usize) -> usize {
        if d == 3 { 27 } else { 9 }
    }
    #[inline(always)]
    const fn half(d: usize) -> usize {
        if d == 3 { 13 } else { 4 }
    }
    #[inline(always)]
    const fn table(d: usize) -> usize {
        Self::stencil(d) * Self::stencil(d)
    }
    #[inline(always)]
    const fn max_log2(d: usize) -> u8 {
        if d == 3 { MAX_LOG2_3D } else { MAX_LOG2_2D }
    }
}

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord<B>>, A: Storage<u32>>
    HierarchicalHashGrid<B, S, R, A>
{
    const D: usize = B::Point::DIM;
    const STENCIL: usize = Dims::stencil(B::Point::DIM);
    const HALF: usize = Dims::half(B::Point::DIM);
    const TABLE: usize = Dims::table(B::Point::DIM);

    /// An empty grid over `slots` (all [`HhgSlot::EMPTY`]; the capacity is
    /// its length), `recs` (any contents; its length bounds the number of
    /// boxes stored: make it as long as `slots`) and `arena` (any contents;
    /// its length bounds the grids). A `const fn`, for a `static` grid over
    /// arrays. `O(1)`: nothing is written to the buffers until used.
    ///
    /// See the [type's example](Self); [`new_checked`](Self::new_checked)
    /// refuses a record buffer shorter than the slot buffer.
    pub const fn new(slots: S, recs: R, arena: A, config: HhgConfig) -> Self {
        Self {
            slots,
            recs,
            arena,
            config,
            len: 0,
            nrec: 0,
            grid_mode: false,
            base_size: 0.0,
            levels: [Level::NEW; LEVELS],
            active: 0,
            used: 0,
            garbage: 0,
            unbounded_head: NONE,
            unbounded_len: 0,
            unsorted: 0,
            _b: PhantomData,
        }
    }

    /// As [`new`](Self::new), refusing buffers that do not fit together.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] when `recs` is shorter than `slots` (with
    /// [`new`](Self::new) such a grid refuses boxes beyond the record
    /// buffer's length with [`Error::CapacityExceeded`]). `O(1)`.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{Aabb3, Error, HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid};
    ///
    /// let short = HierarchicalHashGrid::new_checked(
    ///     [HhgSlot::<Aabb3>::EMPTY; 8],
    ///     [HhgRecord::EMPTY; 4],
    ///     [0u32; 1024],
    ///     HhgConfig::DEFAULT,
    /// );
    /// assert!(matches!(short, Err(Error::InvalidStorage { .. })));
    /// ```
    pub fn new_checked(slots: S, recs: R, arena: A, config: HhgConfig) -> Result<Self, Error> {
        if recs.as_ref().len() < slots.as_ref().len() {
            return Err(Error::InvalidStorage {
                what: "the record buffer must be at least as long as the slot buffer",
            });
        }
        Ok(Self::new(slots, recs, arena, config))
    }

    /// Arena words for one grid able to hold `objects` boxes at the
    /// configured density without saturating (see
    /// [`HhgConfig::arena_words_for`]). `O(log objects)`.
    ///
    /// ```
    /// use spatium::{Aabb3, HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid};
    ///
    /// type Grid = HierarchicalHashGrid<Aabb3, Vec<HhgSlot<Aabb3>>, Vec<HhgRecord<Aabb3>>, Vec<u32>>;
    /// // 10 000 boxes at 1/8 per cell: 64³ cells (32³ / 8 < 10 000 ≤ 64³ / 8).
    /// assert_eq!(Grid::arena_words_for(10_000, &HhgConfig::DEFAULT), 729 + 64 * 64 * 64);
    /// ```
    pub fn arena_words_for(objects: usize, config: &HhgConfig) -> usize {
        config.arena_words_for::<B>(objects)
    }

    /// The configuration. `O(1)`.
    pub fn config(&self) -> &HhgConfig {
        &self.config
    }

    /// `true` once the grids are in use (the small-N path is over). `O(1)`.
    pub fn uses_grids(&self) -> bool {
        self.grid_mode
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Validate;
    use crate::geom::{Aabb3, Vec3};
    use crate::traits::BroadPhase;

    fn cube(x: f32) -> Aabb3 {
        Aabb3::new(Vec3::new(x, 0.0, 0.0), Vec3::new(x + 1.0, 1.0, 1.0)).unwrap()
    }

    /// Regression: a record buffer shorter than the slot buffer panicked
    /// (index out of bounds in `insert`). `new_checked` refuses it; over
    /// `new`, boxes beyond the records are refused and nothing is lost.
    #[test]
    fn short_record_buffer_refuses_instead_of_panicking() {
        let refused = HierarchicalHashGrid::<Aabb3, _, _, _>::new_checked(
            [HhgSlot::EMPTY; 8],
            [HhgRecord::EMPTY; 3],
            [0u32; 0],
            HhgConfig::DEFAULT,
        );
        assert!(matches!(refused, Err(Error::InvalidStorage { .. })));
        // Small-N path and grid path (small_n 2 switches to grids early).
        for small_n in [64, 2] {
            let config = HhgConfig {
                small_n,
                ..HhgConfig::DEFAULT
            };
            let mut g = HierarchicalHashGrid::<Aabb3, _, _, _>::new(
                [HhgSlot::EMPTY; 8],
                [HhgRecord::EMPTY; 3],
                [0u32; 4096],
                config,
            );
            for id in 0..3 {
                g.insert(id, cube(id as f32 * 3.0)).unwrap();
            }
            assert_eq!(
                g.insert(5, cube(20.0)),
                Err(Error::CapacityExceeded { capacity: 3 })
            );
            assert_eq!(g.box_count(), 3);
            assert!(g.validate().is_ok());
            let mut pairs = 0;
            g.for_each_overlap(|_, _| pairs += 1).unwrap();
            assert_eq!(pairs, 0);
            g.remove(1).unwrap();
            g.insert(5, cube(20.0)).unwrap();
            assert!(g.validate().is_ok());
        }
    }

    #[test]
    fn buffer_defaults_are_empty() {
        assert_eq!(HhgSlot::<Aabb3>::default(), HhgSlot::<Aabb3>::EMPTY);
        assert_eq!(HhgRecord::<Aabb3>::default(), HhgRecord::EMPTY);
    }
}
