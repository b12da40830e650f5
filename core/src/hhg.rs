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
//! Memory (`C` = ids, `A` = arena words):
//! `C · (size_of::<HhgSlot<B>>() + size_of::<HhgRecord>()) + 4A +
//! size_of::<Self>()` bytes, that is `44C + 4A` (3D) or `36C + 4A` (2D) plus
//! about 2.5 KiB. A grid takes
//! `3^D·3^D + cells` words (729 + cells in 3D, 81 + cells in 2D).
//! [`HierarchicalHashGrid::arena_words_for`] sizes the arena.

use core::marker::PhantomData;

use crate::cell::floor_i32;
use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;
use crate::traits::BroadPhase;

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

/// Key of an id not stored.
const ABSENT: u32 = u32::MAX;
/// Key of a box in the flat array of the small-N path.
const KEY_FLAT: u32 = 30 << LOCAL_BITS;
/// Key of a box waiting to be rehashed (inside a growth).
const KEY_PENDING: u32 = (30 << LOCAL_BITS) | 1;
/// Key of an object inserted as unbounded.
const KEY_UNBOUNDED: u32 = 31 << LOCAL_BITS;
/// Key of a bounded box too large for every grid (kept with the unbounded).
const KEY_TOO_LARGE: u32 = (31 << LOCAL_BITS) | 1;

/// End of a list.
const NONE: u32 = u32::MAX;
/// An empty cell.
const EMPTY: u32 = u32::MAX;

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
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HhgRecord {
    /// The cell's key (`level << 27 | cell`), or the flat-array key.
    key: u32,
    /// First box of the cell (the box itself on the flat array).
    head: u32,
}

impl HhgRecord {
    /// An unused record.
    pub const EMPTY: Self = Self { key: 0, head: NONE };
}

impl<B: BoundingBox> crate::ids::IdSlot for HhgSlot<B> {
    type Box = B;
    #[inline(always)]
    fn stored(&self) -> Option<B> {
        (self.key != ABSENT).then_some(self.aabb)
    }
}

impl<B: BoundingBox> Default for HhgSlot<B> {
    /// The unused value, [`HhgSlot::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl Default for HhgRecord {
    /// The unused value, [`HhgRecord::EMPTY`].
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<B: BoundingBox> HhgSlot<B> {
    /// An unused slot.
    pub const EMPTY: Self = Self {
        aabb: B::ZERO,
        key: ABSENT,
        next: NONE,
        prev: NONE,
    };
}

/// How the whole structure follows moved boxes in
/// [`HierarchicalHashGrid::update_all`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum UpdateStrategy {
    /// Rehash every box; move only those whose cell or grid changed
    /// (Algorithm 2 of the paper).
    Incremental,
    /// Empty every cell, then insert every box again.
    ClearAndReinsert,
}

/// Tuning of a [`HierarchicalHashGrid`]; every value is checked when set.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HhgConfig {
    factor: f32,
    density: f32,
    initial_log2: u8,
    small_n: u32,
}

impl Default for HhgConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl HhgConfig {
    /// The paper's configuration: hierarchy factor 2, growth when boxes
    /// exceed cells / 8, new grids of 16 cells per axis, flat array below 32
    /// boxes.
    pub const DEFAULT: Self = Self {
        factor: 2.0,
        density: 0.125,
        initial_log2: 4,
        small_n: 32,
    };

    /// Ratio of the cell sizes of successive levels, in `1.25..=64`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] outside that range (the lower bound keeps the
    /// cross-grid stencil exact under `f32` rounding).
    pub const fn with_hierarchy_factor(mut self, factor: f32) -> Result<Self, Error> {
        if !(factor >= 1.25 && factor <= 64.0) {
            return Err(Error::InvalidConfig {
                field: "hierarchy_factor",
            });
        }
        self.factor = factor;
        Ok(self)
    }

    /// Boxes per cell above which a grid grows, in `(0, 1024]`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] outside that range or NaN.
    pub const fn with_density(mut self, density: f32) -> Result<Self, Error> {
        if !(density > 0.0 && density <= 1024.0) {
            return Err(Error::InvalidConfig { field: "density" });
        }
        self.density = density;
        Ok(self)
    }

    /// Cells per axis of a new grid, as a power of two `2..=9` (capped at
    /// the largest grid of the dimension).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] outside `2..=9`.
    pub const fn with_initial_cells_log2(mut self, log2: u8) -> Result<Self, Error> {
        if log2 < 2 || log2 > 9 {
            return Err(Error::InvalidConfig {
                field: "initial_cells_log2",
            });
        }
        self.initial_log2 = log2;
        Ok(self)
    }

    /// Number of boxes from which the grids are used; below it every pair is
    /// tested (0 or 1: grids from the first box). The switch is final until
    /// [`BroadPhase::clear`].
    pub const fn with_small_n_threshold(mut self, n: u32) -> Self {
        self.small_n = n;
        self
    }

    /// Arena words for one grid of boxes `B` able to hold `objects` boxes at
    /// this density without saturating: its offset table (729 words in 3D,
    /// 81 in 2D) plus the smallest power-of-two cube of cells, from the
    /// initial size and growing 2× per axis, whose cells × density reach
    /// `objects`. Size an arena as the sum over the grids a scene needs (one
    /// per size class in use).
    pub fn arena_words_for<B: BoundingBox>(&self, objects: usize) -> usize {
        let d = B::Point::DIM;
        let max = Dims::max_log2(d);
        let mut log2 = self.initial_log2.min(max);
        loop {
            let cells = 1usize << (log2 as usize * d);
            if (objects as f32) <= cells as f32 * self.density || log2 >= max {
                return Dims::table(d) + cells;
            }
            log2 += 1;
        }
    }

    /// The hierarchy factor.
    pub const fn hierarchy_factor(&self) -> f32 {
        self.factor
    }

    /// Boxes per cell above which a grid grows.
    pub const fn density(&self) -> f32 {
        self.density
    }

    /// `log2` of the cells per axis of a new grid.
    pub const fn initial_cells_log2(&self) -> u8 {
        self.initial_log2
    }

    /// Boxes from which the grids are used.
    pub const fn small_n_threshold(&self) -> u32 {
        self.small_n
    }
}

/// One level of the hierarchy.
#[derive(Clone, Copy, Debug)]
struct Level {
    /// Cell edge, its inverse, and the edge of the level below.
    cell: f32,
    inv: f32,
    lower: f32,
    /// Whether `cell` and `inv` are finite, normal numbers.
    usable: bool,
    /// Whether the grid exists (has a region in the arena).
    active: bool,
    /// The arena could not grow it when it wanted to.
    saturated: bool,
    /// `log2` of cells per axis, shift and mask per axis.
    log2: [u8; 3],
    shift: [u32; 3],
    mask: [u32; 3],
    /// Region in the arena: the offset table, then the cells.
    base: usize,
    words: usize,
    cells: usize,
    /// Boxes and occupied cells.
    objects: u32,
    occupied: u32,
}

impl Level {
    const NEW: Self = Self {
        cell: 0.0,
        inv: 0.0,
        lower: 0.0,
        usable: false,
        active: false,
        saturated: false,
        log2: [0; 3],
        shift: [0; 3],
        mask: [0; 3],
        base: 0,
        words: 0,
        cells: 0,
        objects: 0,
        occupied: 0,
    };

    #[inline(always)]
    fn cells_at(&self, table: usize) -> usize {
        self.base + table
    }
}

/// Per-grid figures in [`HhgStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GridStats {
    /// Level relative to the first box's grid (`cell = c₀·factor^level`).
    pub level: i32,
    /// Cell edge.
    pub cell_size: f32,
    /// Cells per axis (1 on unused axes).
    pub cells_per_axis: [u32; 3],
    /// Cells in the grid.
    pub cells: u32,
    /// Boxes in the grid.
    pub objects: u32,
    /// Cells holding at least one box.
    pub occupied_cells: u32,
    /// Most boxes in one cell.
    pub max_objects_per_cell: u32,
    /// Boxes per cell.
    pub density: f32,
    /// The grid wanted to grow but the arena had no room.
    pub saturated: bool,
}

/// What [`HierarchicalHashGrid::stats`] reports.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HhgStats {
    /// Number of grids.
    pub grids: usize,
    /// The grids in ascending cell size; entries past `grids` are zero.
    pub grid: [GridStats; LEVELS],
    /// `true` while on the small-N path (flat array, all pairs tested).
    pub small_n: bool,
    /// Boxes in the flat array.
    pub flat_objects: usize,
    /// Objects in the unbounded container (inserted as unbounded, or too
    /// large for every grid).
    pub unbounded_objects: usize,
    /// Arena words holding live grids.
    pub arena_words_used: usize,
    /// Arena length in words.
    pub arena_words: usize,
    /// Bytes of live data: stored slots, live arena words and the struct.
    pub bytes_used: usize,
    /// Bytes of all storage: every slot, the whole arena and the struct.
    pub bytes_total: usize,
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
/// 2³¹ − 1); `arena` holds the grids. See the [module](self) docs.
#[derive(Clone, Debug)]
pub struct HierarchicalHashGrid<
    B: BoundingBox,
    S: Storage<HhgSlot<B>>,
    R: Storage<HhgRecord>,
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

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord>, A: Storage<u32>>
    HierarchicalHashGrid<B, S, R, A>
{
    const D: usize = B::Point::DIM;
    const STENCIL: usize = Dims::stencil(B::Point::DIM);
    const HALF: usize = Dims::half(B::Point::DIM);
    const TABLE: usize = Dims::table(B::Point::DIM);

    /// An empty grid over `slots` (all [`HhgSlot::EMPTY`]; the capacity is
    /// its length), `recs` (any contents; its length bounds the number of
    /// boxes stored: make it as long as `slots`) and `arena` (any contents;
    /// its length bounds the grids).
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
    /// buffer's length with [`Error::CapacityExceeded`]).
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
    /// [`HhgConfig::arena_words_for`]).
    pub fn arena_words_for(objects: usize, config: &HhgConfig) -> usize {
        config.arena_words_for::<B>(objects)
    }

    /// The configuration.
    pub fn config(&self) -> &HhgConfig {
        &self.config
    }

    /// `true` once the grids are in use (the small-N path is over).
    pub fn uses_grids(&self) -> bool {
        self.grid_mode
    }

    // ----------------------------------------------------------------- levels

    fn init_levels(&mut self, first: &B) {
        let size = first.longest_edge();
        let f = self.config.factor;
        let mut c0 = size * libm::sqrtf(f);
        if !(c0.is_normal() && c0 > 0.0) {
            c0 = 1.0;
        }
        self.base_size = c0;
        let mut cell = [0.0f32; LEVELS];
        cell[BASE_LEVEL] = c0;
        for i in BASE_LEVEL + 1..LEVELS {
            cell[i] = cell[i - 1] * f;
        }
        for i in (0..BASE_LEVEL).rev() {
            cell[i] = cell[i + 1] / f;
        }
        for (i, lv) in self.levels.iter_mut().enumerate() {
            *lv = Level::NEW;
            lv.cell = cell[i];
            lv.inv = 1.0 / cell[i];
            lv.lower = if i == 0 { cell[0] / f } else { cell[i - 1] };
            lv.usable = lv.cell.is_normal() && lv.inv.is_normal();
        }
    }

    /// Whether `b` spans at most two cells per axis at level `i`, with every
    /// coordinate within [`HHG_RANGE_CELLS`] cells. `Err` for out of range.
    #[inline(always)]
    fn fits(&self, i: usize, b: &B) -> Result<bool, Error> {
        let inv = self.levels[i].inv;
        let (lo, hi) = (b.min(), b.max());
        let mut ok = true;
        for k in 0..Self::D {
            let t = lo.coord(k) * inv;
            let u = hi.coord(k) * inv;
            if !(t.abs() < HHG_RANGE_CELLS && u.abs() < HHG_RANGE_CELLS) {
                return Err(Error::OutOfRange);
            }
            ok &= floor_i32(u) - floor_i32(t) <= 1;
        }
        Ok(ok)
    }

    /// The level a box of longest edge `size` belongs to (eq. 3.3.3), before
    /// the span check: the first usable level whose cells are larger.
    fn size_level(&self, size: f32) -> Option<usize> {
        // Usable levels are one contiguous run with increasing cells.
        let lo = self.levels.iter().position(|l| l.usable)?;
        let hi = LEVELS - self.levels.iter().rev().position(|l| l.usable)?;
        let i = lo + self.levels[lo..hi].partition_point(|l| l.cell <= size);
        (i < hi).then_some(i)
    }

    /// The ideal level of `b`: the first usable level whose cells are larger
    /// than `b`, in which `b` spans at most two cells per axis and its
    /// coordinates are within [`HHG_RANGE_CELLS`] cells (a box too far out
    /// for its size's level goes up to a level of larger cells). `None` if
    /// too large for every level; [`Error::OutOfRange`] if no level can
    /// represent its coordinates.
    fn ideal(&self, b: &B) -> Result<Option<usize>, Error> {
        let Some(start) = self.size_level(b.longest_edge()) else {
            return Ok(None);
        };
        let mut err = None;
        for i in start..LEVELS {
            if !self.levels[i].usable {
                continue;
            }
            match self.fits(i, b) {
                Ok(true) => return Ok(Some(i)),
                Ok(false) => err = None,
                Err(e) => err = Some(e),
            }
        }
        match err {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// Where `b` goes now: its ideal level if that grid exists or can be
    /// made, else the next larger existing grid, else the unbounded container.
    fn target(&self, b: &B) -> Result<Target, Error> {
        let Some(i) = self.ideal(b)? else {
            return Ok(Target::TooLarge);
        };
        if self.levels[i].active || self.can_create() {
            return Ok(Target::Grid(i));
        }
        let mut j = i + 1;
        while j < LEVELS {
            if self.levels[j].active && self.fits(j, b) == Ok(true) {
                return Ok(Target::Grid(j));
            }
            j += 1;
        }
        Ok(Target::TooLarge)
    }

    fn min_grid_words() -> usize {
        Self::TABLE + (1usize << (2 * Self::D))
    }

    fn can_create(&self) -> bool {
        self.free_words() >= Self::min_grid_words()
    }

    fn free_words(&self) -> usize {
        self.arena.as_ref().len().min(u32::MAX as usize) - self.used + self.garbage
    }

    /// Cell index of the lower corner of `b` in level `i`'s grid.
    #[inline(always)]
    fn local(lv: &Level, p: B::Point) -> u32 {
        let mut local = 0u32;
        for k in 0..Self::D {
            let c = floor_i32(p.coord(k) * lv.inv) as u32;
            local |= (c & lv.mask[k]) << lv.shift[k];
        }
        local
    }

    /// Row of the offset table for the cell `local`.
    #[inline(always)]
    fn class(lv: &Level, local: u32) -> usize {
        let mut class = 0usize;
        let mut w = 1usize;
        for k in 0..Self::D {
            let x = (local >> lv.shift[k]) & lv.mask[k];
            let c = if x == 0 {
                1
            } else if x == lv.mask[k] {
                2
            } else {
                0
            };
            class += c * w;
            w *= 3;
        }
        class
    }

    // ------------------------------------------------------------------ arena

    /// Hands out `words` arena words, compacting first if needed; the caller
    /// has checked `free_words() >= words`.
    fn alloc(&mut self, words: usize) -> usize {
        let len = self.arena.as_ref().len();
        if self.used + words > len {
            self.compact();
        }
        let at = self.used;
        self.used += words;
        at
    }

    /// Slides the live regions to the front of the arena, in place.
    fn compact(&mut self) {
        let mut order = [0usize; LEVELS];
        let mut n = 0;
        for (i, lv) in self.levels.iter().enumerate() {
            if lv.active {
                order[n] = i;
                n += 1;
            }
        }
        let levels = &self.levels;
        crate::sort::sort_by_key(&mut order[..n], |&i| levels[i].base);
        let mut dst = 0usize;
        let arena = self.arena.as_mut();
        for &i in &order[..n] {
            let lv = &mut self.levels[i];
            if lv.base != dst {
                arena.copy_within(lv.base..lv.base + lv.words, dst);
                lv.base = dst;
            }
            dst += lv.words;
        }
        self.used = dst;
        self.garbage = 0;
    }

    /// Gives level `i` a fresh region of `2^log2` cells per axis: offset
    /// table filled, cells empty. The caller has checked the room.
    fn make_region(&mut self, i: usize, log2: u8) {
        let d = Self::D;
        let cells = 1usize << (log2 as usize * d);
        let words = Self::TABLE + cells;
        let base = self.alloc(words);
        let lv = &mut self.levels[i];
        lv.active = true;
        lv.base = base;
        lv.words = words;
        lv.cells = cells;
        lv.log2 = [0; 3];
        lv.shift = [0; 3];
        lv.mask = [0; 3];
        let mut shift = 0u32;
        for k in 0..d {
            lv.log2[k] = log2;
            lv.shift[k] = shift;
            lv.mask[k] = (1u32 << log2) - 1;
            shift += log2 as u32;
        }
        let lv = *lv;
        let region = &mut self.arena.as_mut()[base..base + words];
        let (table, cell_words) = region.split_at_mut(Self::TABLE);
        cell_words.fill(EMPTY);
        for (e, t) in table.iter_mut().enumerate() {
            *t = Self::table_entry(&lv, e / Self::STENCIL, e % Self::STENCIL);
        }
        self.active |= 1 << i;
    }

    /// Offset from a cell of boundary class `class` to its stencil entry
    /// `j`, wrapping periodically: per axis, class digit 0 is an inner cell,
    /// 1 a cell on the low face, 2 one on the high face.
    fn table_entry(lv: &Level, class: usize, j: usize) -> u32 {
        let o = Self::stencil_offset(j);
        let mut off = 0i64;
        let mut c = class;
        for (k, &ok) in o.iter().enumerate().take(Self::D) {
            let cls = c % 3;
            c /= 3;
            let stride = 1i64 << lv.shift[k];
            let dim = lv.mask[k] as i64 + 1;
            off += ok as i64 * stride;
            if cls == 1 && ok == -1 {
                off += dim * stride;
            } else if cls == 2 && ok == 1 {
                off -= dim * stride;
            }
        }
        off as i32 as u32
    }

    /// Entry `j` of a table row: the cell itself, the forward half, then the
    /// backward half.
    fn stencil_offset(j: usize) -> [i32; 3] {
        let half = B::Point::HALF_STENCIL;
        let mut o = [0i32; 3];
        if j == 0 {
            return o;
        }
        let (h, sign) = if j <= Self::HALF {
            (half[j - 1], 1)
        } else {
            (half[j - 1 - Self::HALF], -1)
        };
        for (k, ok) in o.iter_mut().enumerate().take(Self::D) {
            *ok = sign * B::Point::cell_coord(h, k);
        }
        o
    }

    /// Creates level `i`'s grid at the initial size, or smaller if the arena
    /// is short. The caller has checked [`can_create`](Self::can_create).
    fn create(&mut self, i: usize) {
        let mut log2 = self.config.initial_log2.min(Dims::max_log2(Self::D));
        while log2 > 2 && self.free_words() < Self::TABLE + (1usize << (log2 as usize * Self::D)) {
            log2 -= 1;
        }
        let lv = &mut self.levels[i];
        lv.objects = 0;
        lv.occupied = 0;
        lv.saturated = false;
        self.make_region(i, log2);
    }

    /// Grows level `i` 2× per axis if its boxes exceed the density and the
    /// arena has room; otherwise marks it saturated.
    fn maybe_grow(&mut self, i: usize) {
        let lv = self.levels[i];
        if lv.saturated || (lv.objects as f32) <= lv.cells as f32 * self.config.density {
            return;
        }
        let max = Dims::max_log2(Self::D);
        let log2 = lv.log2[0];
        if log2 >= max {
            self.levels[i].saturated = true;
            return;
        }
        let need = Self::TABLE + (1usize << ((log2 as usize + 1) * Self::D));
        if self.free_words() + lv.words < need {
            self.levels[i].saturated = true;
            return;
        }
        // 1. Detach every box of the level into a pending chain.
        let pending = self.detach_level(i);
        // 2. New region (the old one becomes garbage).
        self.active &= !(1 << i);
        self.levels[i].active = false;
        self.garbage += lv.words;
        self.make_region(i, log2 + 1);
        self.levels[i].objects = lv.objects;
        self.levels[i].occupied = 0;
        // 3. Rehash.
        self.relink_chain(pending, i);
    }

    /// Unlinks every box of level `i` into one chain (through `next`, keys
    /// set to pending) and drops the level's cell records. Returns its head.
    fn detach_level(&mut self, i: usize) -> u32 {
        let lv = self.levels[i];
        let mut chain = NONE;
        let mut p = self.nrec as usize;
        while p > 0 {
            p -= 1;
            let r = self.recs.as_ref()[p];
            if (r.key >> LOCAL_BITS) as usize != i {
                continue;
            }
            self.arena.as_mut()[lv.cells_at(Self::TABLE) + (r.key & LOCAL_MASK) as usize] = EMPTY;
            let slots = self.slots.as_mut();
            let mut a = r.head;
            while a != NONE {
                let next = slots[a as usize].next;
                slots[a as usize].key = KEY_PENDING;
                slots[a as usize].next = chain;
                chain = a;
                a = next;
            }
            self.remove_record(p);
        }
        chain
    }

    /// Links every box of a pending chain into level `i`.
    fn relink_chain(&mut self, mut chain: u32, i: usize) {
        while chain != NONE {
            let a = chain;
            chain = self.slots.as_ref()[a as usize].next;
            let lv = &self.levels[i];
            let b = self.slots.as_ref()[a as usize].aabb;
            let local = Self::local(lv, b.min());
            self.link(a, i, local);
        }
    }

    // ------------------------------------------------------------ cell lists

    /// Drops occupied-cell record `p` (swap-remove) and repoints the head of
    /// the record moved into its place.
    fn remove_record(&mut self, p: usize) {
        let last = self.nrec as usize - 1;
        if p != last {
            let moved = self.recs.as_ref()[last];
            self.recs.as_mut()[p] = moved;
            let c = self.cell_word(moved.key);
            self.arena.as_mut()[c] = p as u32;
            self.unsorted += 1;
        }
        self.nrec -= 1;
    }

    /// Arena word of the cell of a grid key.
    #[inline(always)]
    fn cell_word(&self, k: u32) -> usize {
        self.levels[(k >> LOCAL_BITS) as usize].cells_at(Self::TABLE) + (k & LOCAL_MASK) as usize
    }

    /// Pushes box `a` at the front of cell `local` of level `i`.
    fn link(&mut self, a: u32, i: usize, local: u32) {
        let k = key(i, local);
        let cell = self.levels[i].cells_at(Self::TABLE) + local as usize;
        let p = self.arena.as_ref()[cell];
        let slots = self.slots.as_mut();
        slots[a as usize].key = k;
        slots[a as usize].prev = NONE;
        if p == EMPTY {
            let q = self.nrec;
            self.recs.as_mut()[q as usize] = HhgRecord { key: k, head: a };
            slots[a as usize].next = NONE;
            self.arena.as_mut()[cell] = q;
            self.nrec += 1;
            self.unsorted += 1;
            self.levels[i].occupied += 1;
        } else {
            let r = &mut self.recs.as_mut()[p as usize];
            slots[a as usize].next = r.head;
            slots[r.head as usize].prev = a;
            r.head = a;
        }
    }

    /// Removes box `a` from its cell (it must be in a grid).
    fn unlink(&mut self, a: u32) {
        let s = self.slots.as_ref()[a as usize];
        if s.prev == NONE {
            let i = (s.key >> LOCAL_BITS) as usize;
            let cell = self.cell_word(s.key);
            let p = self.arena.as_ref()[cell] as usize;
            if s.next == NONE {
                self.arena.as_mut()[cell] = EMPTY;
                self.levels[i].occupied -= 1;
                self.remove_record(p);
            } else {
                self.recs.as_mut()[p].head = s.next;
                self.slots.as_mut()[s.next as usize].prev = NONE;
            }
        } else {
            let slots = self.slots.as_mut();
            slots[s.prev as usize].next = s.next;
            if s.next != NONE {
                slots[s.next as usize].prev = s.prev;
            }
        }
    }

    fn push_unbounded(&mut self, a: u32, k: u32) {
        let head = self.unbounded_head;
        let slots = self.slots.as_mut();
        slots[a as usize].key = k;
        slots[a as usize].next = head;
        slots[a as usize].prev = NONE;
        if head != NONE {
            slots[head as usize].prev = a;
        }
        self.unbounded_head = a;
        self.unbounded_len += 1;
    }

    fn unlink_unbounded(&mut self, a: u32) {
        let s = self.slots.as_ref()[a as usize];
        let slots = self.slots.as_mut();
        if s.prev == NONE {
            self.unbounded_head = s.next;
        } else {
            slots[s.prev as usize].next = s.next;
        }
        if s.next != NONE {
            slots[s.next as usize].prev = s.prev;
        }
        self.unbounded_len -= 1;
    }

    fn push_flat(&mut self, a: u32) {
        let p = self.nrec;
        let slots = self.slots.as_mut();
        slots[a as usize].key = KEY_FLAT;
        slots[a as usize].prev = p;
        slots[a as usize].next = NONE;
        self.recs.as_mut()[p as usize] = HhgRecord {
            key: KEY_FLAT,
            head: a,
        };
        self.nrec += 1;
    }

    fn unlink_flat(&mut self, a: u32) {
        let p = self.slots.as_ref()[a as usize].prev as usize;
        let last = self.nrec as usize - 1;
        let moved = self.recs.as_ref()[last];
        self.recs.as_mut()[p] = moved;
        self.slots.as_mut()[moved.head as usize].prev = p as u32;
        self.nrec -= 1;
    }

    /// Puts a box (already stored in its slot) where it belongs.
    fn place(&mut self, a: u32, t: Target) {
        match t {
            Target::TooLarge => self.push_unbounded(a, KEY_TOO_LARGE),
            Target::Grid(i) => {
                if !self.levels[i].active {
                    self.create(i);
                }
                let b = self.slots.as_ref()[a as usize].aabb;
                let local = Self::local(&self.levels[i], b.min());
                self.link(a, i, local);
                self.levels[i].objects += 1;
                self.maybe_grow(i);
            }
        }
    }

    /// Removes a stored box from wherever it is.
    fn take_out(&mut self, a: u32) {
        let k = self.slots.as_ref()[a as usize].key;
        if is_grid_key(k) {
            self.unlink(a);
            self.levels[(k >> LOCAL_BITS) as usize].objects -= 1;
        } else if k == KEY_FLAT {
            self.unlink_flat(a);
        } else {
            self.unlink_unbounded(a);
        }
    }

    /// Leaves the small-N path: every flat box goes to its grid.
    fn switch_to_grids(&mut self) {
        let mut chain = NONE;
        for p in 0..self.nrec as usize {
            let a = self.recs.as_ref()[p].head;
            let s = &mut self.slots.as_mut()[a as usize];
            s.key = KEY_PENDING;
            s.next = chain;
            chain = a;
        }
        self.nrec = 0;
        self.grid_mode = true;
        while chain != NONE {
            let a = chain;
            let s = self.slots.as_ref()[a as usize];
            chain = s.next;
            // Validated on insertion against the same levels.
            let t = self.target(&s.aabb).unwrap_or(Target::TooLarge);
            self.place(a, t);
        }
    }

    // -------------------------------------------------------------- checking

    /// An insert's checks: a free id (the shared id table), and room for one
    /// more box in the record buffer (each box takes at most one record: its
    /// cell's, or its own on the small-N path), so that a record buffer
    /// shorter than the slot buffer refuses boxes instead of overflowing.
    fn check_id_free(&self, id: u32) -> Result<(), Error> {
        crate::ids::vacant(self.slots.as_ref(), id)?;
        let room = self.recs.as_ref().len();
        if self.len as usize >= room {
            return Err(Error::CapacityExceeded { capacity: room });
        }
        Ok(())
    }

    fn stored_key(&self, id: u32) -> Result<u32, Error> {
        crate::ids::stored(self.slots.as_ref(), id)?;
        Ok(self.slots.as_ref()[id as usize].key)
    }

    fn check_unbounded(b: &B) -> Result<(), Error> {
        let (lo, hi) = (b.min(), b.max());
        for k in 0..Self::D {
            let (l, h) = (lo.coord(k), hi.coord(k));
            if l.is_nan() || h.is_nan() || l == f32::INFINITY || h == f32::NEG_INFINITY {
                return Err(Error::NonFinite);
            }
            if l > h {
                return Err(Error::InvertedBox);
            }
        }
        Ok(())
    }

    /// Validation of a bounded box against the levels (fixing them with the
    /// first box). Returns where the box goes in grid mode.
    fn check_bounded(&mut self, b: &B) -> Result<Target, Error> {
        b.check()?;
        if self.base_size == 0.0 {
            // The first bounded box fixes c₀. No grid exists yet, so undoing
            // it on error restores the state exactly.
            self.init_levels(b);
            let r = self.target(b);
            if r.is_err() {
                self.base_size = 0.0;
                self.levels = [Level::NEW; LEVELS];
            }
            return r;
        }
        self.target(b)
    }

    // --------------------------------------------------------------- public

    /// Stores an unbounded object (a plane, a half-space): `aabb` may have
    /// infinite bounds (`-∞` below, `+∞` above) but no NaN and no `min >
    /// max`. It is tested against every other object.
    ///
    /// # Errors
    /// [`Error::IdOutOfRange`], [`Error::DuplicateId`], [`Error::NonFinite`]
    /// (NaN or a wrong-signed infinity), [`Error::InvertedBox`]; nothing
    /// changes on error.
    pub fn insert_unbounded(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        self.check_id_free(id)?;
        Self::check_unbounded(&aabb)?;
        self.slots.as_mut()[id as usize].aabb = aabb;
        self.push_unbounded(id, KEY_UNBOUNDED);
        self.len += 1;
        Ok(())
    }

    /// Moves every stored box to `boxes[id]` with the given strategy.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless every stored id is below
    /// `boxes.len()`; the errors of [`BroadPhase::update`] for a bad box.
    /// Everything is checked before anything moves: nothing changes on error.
    pub fn update_all(&mut self, boxes: &[B], strategy: UpdateStrategy) -> Result<(), Error> {
        let n = boxes.len().min(self.slots.as_ref().len());
        let mut seen = 0u32;
        for (id, b) in boxes[..n].iter().enumerate() {
            let k = self.slots.as_ref()[id].key;
            if k == ABSENT {
                continue;
            }
            seen += 1;
            self.check_update(k, b)?;
        }
        if seen != self.len {
            return Err(Error::LengthMismatch {
                expected: self.len as usize,
                got: seen as usize,
            });
        }
        match strategy {
            UpdateStrategy::Incremental => {
                for (id, b) in boxes[..n].iter().enumerate() {
                    if self.slots.as_ref()[id].key != ABSENT {
                        self.apply_update(id as u32, *b);
                    }
                }
            }
            UpdateStrategy::ClearAndReinsert => {
                self.empty_cells();
                for (id, b) in boxes[..n].iter().enumerate() {
                    let k = self.slots.as_ref()[id].key;
                    if k == ABSENT || k == KEY_UNBOUNDED || k == KEY_FLAT {
                        if k != ABSENT {
                            self.slots.as_mut()[id].aabb = *b;
                        }
                        continue;
                    }
                    self.slots.as_mut()[id].aabb = *b;
                    let t = self.target(b).unwrap_or(Target::TooLarge);
                    self.place(id as u32, t);
                }
            }
        }
        Ok(())
    }

    /// Empties every cell, keeping the grids: every grid box and every
    /// too-large box is left keyed pending, to be placed again.
    fn empty_cells(&mut self) {
        if !self.grid_mode {
            return;
        }
        for p in 0..self.nrec as usize {
            let r = self.recs.as_ref()[p];
            let cell = self.cell_word(r.key);
            self.arena.as_mut()[cell] = EMPTY;
            let mut a = r.head;
            while a != NONE {
                let s = &mut self.slots.as_mut()[a as usize];
                s.key = KEY_PENDING;
                a = s.next;
            }
        }
        self.nrec = 0;
        for lv in &mut self.levels {
            lv.objects = 0;
            lv.occupied = 0;
        }
        // Too-large boxes are re-placed too (they may fit a grid now).
        let mut a = self.unbounded_head;
        while a != NONE {
            let next = self.slots.as_ref()[a as usize].next;
            if self.slots.as_ref()[a as usize].key == KEY_TOO_LARGE {
                self.unlink_unbounded(a);
                self.slots.as_mut()[a as usize].key = KEY_PENDING;
            }
            a = next;
        }
    }

    /// Whether the box keyed `k` may become `b`: the box checks of its kind
    /// and, unless it stays in its grid, the range check of the level it
    /// would go to (levels exist once a bounded box does).
    fn check_update(&self, k: u32, b: &B) -> Result<(), Error> {
        if k == KEY_UNBOUNDED {
            return Self::check_unbounded(b);
        }
        b.check()?;
        if !self.stays(k, b) {
            self.ideal(b)?;
        }
        Ok(())
    }

    /// `true` if the box keyed `k` can stay in its grid with box `b`: same
    /// level by size, within two cells per axis and in range there.
    #[inline(always)]
    fn stays(&self, k: u32, b: &B) -> bool {
        if !is_grid_key(k) {
            return false;
        }
        let i = (k >> LOCAL_BITS) as usize;
        let lv = &self.levels[i];
        let size = b.longest_edge();
        size < lv.cell
            && (size >= lv.lower || self.size_level(size) == Some(i))
            && self.fits(i, b) == Ok(true)
    }

    fn apply_update(&mut self, id: u32, b: B) {
        let k = self.slots.as_ref()[id as usize].key;
        if is_grid_key(k) {
            let i = (k >> LOCAL_BITS) as usize;
            // Fast path: same level, box still within two cells per axis.
            if self.stays(k, &b) {
                let local = Self::local(&self.levels[i], b.min());
                self.slots.as_mut()[id as usize].aabb = b;
                if key(i, local) != k {
                    self.unlink(id);
                    self.link(id, i, local);
                }
                return;
            }
        } else if k == KEY_FLAT || k == KEY_UNBOUNDED {
            self.slots.as_mut()[id as usize].aabb = b;
            return;
        }
        // Grid change (size change or arena fallback) or too-large box.
        let t = self.target(&b).unwrap_or(Target::TooLarge);
        let current = if is_grid_key(k) {
            Target::Grid((k >> LOCAL_BITS) as usize)
        } else {
            Target::TooLarge
        };
        if t == current {
            // Same grid after all (a box kept above its size's level by the
            // coordinate range or a full arena), or still too large: move
            // only if the cell changed.
            self.slots.as_mut()[id as usize].aabb = b;
            if let Target::Grid(j) = t {
                let local = Self::local(&self.levels[j], b.min());
                if key(j, local) != k {
                    self.unlink(id);
                    self.link(id, j, local);
                }
            }
            return;
        }
        self.take_out(id);
        self.slots.as_mut()[id as usize].aabb = b;
        self.place(id, t);
    }

    /// Figures about the grids and the memory in use. `O(n)` (it walks the
    /// cells for the largest cell population).
    pub fn stats(&self) -> HhgStats {
        let mut st = HhgStats {
            grids: 0,
            grid: [GridStats::default(); LEVELS],
            small_n: !self.grid_mode,
            flat_objects: if self.grid_mode {
                0
            } else {
                self.nrec as usize
            },
            unbounded_objects: self.unbounded_len as usize,
            arena_words_used: self.used - self.garbage,
            arena_words: self.arena.as_ref().len(),
            bytes_used: 0,
            bytes_total: 0,
        };
        let mut max_per = [0u32; LEVELS];
        if self.grid_mode {
            let slots = self.slots.as_ref();
            for r in &self.recs.as_ref()[..self.nrec as usize] {
                let i = (r.key >> LOCAL_BITS) as usize;
                let mut a = r.head;
                let mut n = 0;
                while a != NONE {
                    n += 1;
                    a = slots[a as usize].next;
                }
                max_per[i] = max_per[i].max(n);
            }
        }
        for (i, lv) in self.levels.iter().enumerate() {
            if !lv.active {
                continue;
            }
            let mut per_axis = [1u32; 3];
            for (k, p) in per_axis.iter_mut().enumerate().take(Self::D) {
                *p = 1 << lv.log2[k];
            }
            st.grid[st.grids] = GridStats {
                level: i as i32 - BASE_LEVEL as i32,
                cell_size: lv.cell,
                cells_per_axis: per_axis,
                cells: lv.cells as u32,
                objects: lv.objects,
                occupied_cells: lv.occupied,
                max_objects_per_cell: max_per[i],
                density: lv.objects as f32 / lv.cells as f32,
                saturated: lv.saturated,
            };
            st.grids += 1;
        }
        let slot = core::mem::size_of::<HhgSlot<B>>();
        let me = core::mem::size_of::<Self>();
        let rec = core::mem::size_of::<HhgRecord>();
        st.bytes_used = self.len as usize * (slot + rec) + st.arena_words_used * 4 + me;
        st.bytes_total = core::mem::size_of_val(self.slots.as_ref())
            + core::mem::size_of_val(self.recs.as_ref())
            + core::mem::size_of_val(self.arena.as_ref())
            + me;
        st
    }

    /// Calls `f` for every stored bounded box of the grids and the flat array.
    fn for_each_bounded(&self, mut f: impl FnMut(u32)) {
        let slots = self.slots.as_ref();
        if !self.grid_mode {
            for r in &self.recs.as_ref()[..self.nrec as usize] {
                f(r.head);
            }
            return;
        }
        for r in &self.recs.as_ref()[..self.nrec as usize] {
            let mut a = r.head;
            while a != NONE {
                f(a);
                a = slots[a as usize].next;
            }
        }
    }

    /// Pairs involving the unbounded container.
    fn unbounded_pairs<F: FnMut(u32, u32)>(&self, f: &mut F) {
        let slots = self.slots.as_ref();
        let mut u = self.unbounded_head;
        while u != NONE {
            let bu = slots[u as usize].aabb;
            let mut v = slots[u as usize].next;
            while v != NONE {
                if bu.overlaps(&slots[v as usize].aabb) {
                    f(u, v);
                }
                v = slots[v as usize].next;
            }
            self.for_each_bounded(|a| {
                if bu.overlaps(&slots[a as usize].aabb) {
                    f(u, a);
                }
            });
            u = slots[u as usize].next;
        }
    }

    /// Puts the occupied-cell records in key order (grid by grid, each
    /// grid's cells in memory order) and points the cells at them again, so
    /// that detection walks every grid front to back. `O(r log r)` for `r`
    /// occupied cells; [`BroadPhase::for_each_overlap`] calls it when an eighth
    /// of the records are new or moved since the last time.
    pub fn sort_records(&mut self) {
        if !self.grid_mode {
            return;
        }
        let n = self.nrec as usize;
        crate::sort::sort_by_key(&mut self.recs.as_mut()[..n], |r| r.key);
        for p in 0..n {
            let c = self.cell_word(self.recs.as_ref()[p].key);
            self.arena.as_mut()[c] = p as u32;
        }
        self.unsorted = 0;
    }

    /// The cells of a grid.
    #[inline(always)]
    fn cells(&self, lv: &Level) -> &[u32] {
        &self.arena.as_ref()[lv.cells_at(Self::TABLE)..][..lv.cells]
    }

    /// The offset-table row of cell `local` (the cell itself, the forward
    /// half, then the backward half).
    #[inline(always)]
    fn row(&self, lv: &Level, local: u32) -> &[u32] {
        let st = Self::STENCIL;
        &self.arena.as_ref()[lv.base + Self::class(lv, local) * st..][..st]
    }

    /// Reports box `a` against every overlapping box of the list at `b`.
    #[inline(always)]
    fn against_list<F: FnMut(u32, u32)>(&self, a: u32, ba: &B, mut b: u32, f: &mut F) {
        let slots = self.slots.as_ref();
        while b != NONE {
            let sb = &slots[b as usize];
            if ba.overlaps(&sb.aabb) {
                f(a, b);
            }
            b = sb.next;
        }
    }

    /// Pairs of the grids (Algorithm 4).
    fn grid_pairs<F: FnMut(u32, u32)>(&self, f: &mut F) {
        let slots = self.slots.as_ref();
        let recs = self.recs.as_ref();
        for r in &recs[..self.nrec as usize] {
            let k = r.key;
            let i = (k >> LOCAL_BITS) as usize;
            let local = k & LOCAL_MASK;
            let lv = &self.levels[i];
            let cells = self.cells(lv);
            let head = r.head;
            // Inside the cell.
            let mut a = head;
            while a != NONE {
                let sa = &slots[a as usize];
                self.against_list(a, &sa.aabb, sa.next, f);
                a = sa.next;
            }
            // Forward half of the neighbours.
            for &off in &self.row(lv, local)[1..=Self::HALF] {
                let q = cells[local.wrapping_add(off) as usize];
                if q == EMPTY {
                    continue;
                }
                let nb = recs[q as usize].head;
                let mut a = head;
                while a != NONE {
                    let sa = &slots[a as usize];
                    self.against_list(a, &sa.aabb, nb, f);
                    a = sa.next;
                }
            }
            // Every grid with larger cells.
            let larger = self.active & !((2u32 << i) - 1);
            if larger == 0 {
                continue;
            }
            let mut a = head;
            while a != NONE {
                let sa = &slots[a as usize];
                let mut m = larger;
                while m != 0 {
                    let h = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let lh = &self.levels[h];
                    let hl = Self::local(lh, sa.aabb.min());
                    let hcells = self.cells(lh);
                    for &off in self.row(lh, hl) {
                        let q = hcells[hl.wrapping_add(off) as usize];
                        if q != EMPTY {
                            self.against_list(a, &sa.aabb, recs[q as usize].head, f);
                        }
                    }
                }
                a = sa.next;
            }
        }
    }

    /// Boxes of level `i` overlapping `q`: the cells from one below `q`'s
    /// lower corner to its upper corner (boxes are keyed by their lower
    /// corner), each cell once even when the range wraps.
    fn query_level<F: FnMut(u32)>(&self, i: usize, q: &B, f: &mut F) {
        let lv = &self.levels[i];
        let slots = self.slots.as_ref();
        let recs = self.recs.as_ref();
        let cells = self.cells(lv);
        let mut lo = [0u32; 3];
        let mut n = [1u32; 3];
        let mut total = 1u64;
        for k in 0..Self::D {
            let dim = lv.mask[k] as u64 + 1;
            let a = (q.min().coord(k) * lv.inv).clamp(-2.0e9, 2.0e9);
            let b = (q.max().coord(k) * lv.inv).clamp(-2.0e9, 2.0e9);
            let l = floor_i32(a) as i64 - 1;
            let h = floor_i32(b) as i64;
            let span = (h - l + 1) as u64;
            if span >= dim {
                lo[k] = 0;
                n[k] = dim as u32;
            } else {
                lo[k] = (l as u32) & lv.mask[k];
                n[k] = span as u32;
            }
            total *= n[k] as u64;
        }
        let visit = |a0: u32, f: &mut F| {
            let mut a = a0;
            while a != NONE {
                let s = &slots[a as usize];
                if q.overlaps(&s.aabb) {
                    f(a);
                }
                a = s.next;
            }
        };
        if total > self.nrec as u64 {
            // Cheaper to walk the occupied cells of this level.
            for r in &recs[..self.nrec as usize] {
                if (r.key >> LOCAL_BITS) as usize == i {
                    visit(r.head, f);
                }
            }
            return;
        }
        for z in 0..n[2] {
            let cz = ((lo[2] + z) & lv.mask[2]) << lv.shift[2];
            for y in 0..n[1] {
                let cy = ((lo[1] + y) & lv.mask[1]) << lv.shift[1];
                for x in 0..n[0] {
                    let cx = ((lo[0] + x) & lv.mask[0]) << lv.shift[0];
                    let q = cells[(cx | cy | cz) as usize];
                    if q != EMPTY {
                        visit(recs[q as usize].head, f);
                    }
                }
            }
        }
    }
}

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord>, A: Storage<u32>> BroadPhase<B>
    for HierarchicalHashGrid<B, S, R, A>
{
    fn capacity(&self) -> usize {
        crate::ids::capacity(self.slots.as_ref().len())
    }

    fn box_count(&self) -> usize {
        self.len as usize
    }

    fn insert(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        self.check_id_free(id)?;
        let t = self.check_bounded(&aabb)?;
        self.slots.as_mut()[id as usize].aabb = aabb;
        self.len += 1;
        if self.grid_mode {
            self.place(id, t);
        } else {
            self.push_flat(id);
            if self.len >= self.config.small_n {
                self.switch_to_grids();
            }
        }
        Ok(())
    }

    fn update(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        let k = self.stored_key(id)?;
        self.check_update(k, &aabb)?;
        self.apply_update(id, aabb);
        Ok(())
    }

    fn remove(&mut self, id: u32) -> Result<B, Error> {
        self.stored_key(id)?;
        self.take_out(id);
        let s = &mut self.slots.as_mut()[id as usize];
        let b = s.aabb;
        *s = HhgSlot::EMPTY;
        self.len -= 1;
        Ok(b)
    }

    fn get(&self, id: u32) -> Option<B> {
        self.stored_key(id)
            .ok()
            .map(|_| self.slots.as_ref()[id as usize].aabb)
    }

    fn clear(&mut self) {
        if (self.len as usize) * 4 < self.slots.as_ref().len() {
            // Few boxes: chain every stored id through `next`, then empty
            // exactly those slots.
            let mut chain = NONE;
            let mut lists = NONE;
            if self.grid_mode {
                for p in 0..self.nrec as usize {
                    let mut a = self.recs.as_ref()[p].head;
                    while a != NONE {
                        let next = self.slots.as_ref()[a as usize].next;
                        self.slots.as_mut()[a as usize].next = lists;
                        lists = a;
                        a = next;
                    }
                }
            } else {
                for p in 0..self.nrec as usize {
                    let a = self.recs.as_ref()[p].head;
                    self.slots.as_mut()[a as usize].next = lists;
                    lists = a;
                }
            }
            core::mem::swap(&mut chain, &mut lists);
            let mut u = self.unbounded_head;
            while u != NONE {
                let next = self.slots.as_ref()[u as usize].next;
                self.slots.as_mut()[u as usize].next = chain;
                chain = u;
                u = next;
            }
            while chain != NONE {
                let next = self.slots.as_ref()[chain as usize].next;
                self.slots.as_mut()[chain as usize] = HhgSlot::EMPTY;
                chain = next;
            }
        } else {
            self.slots.as_mut().fill(HhgSlot::EMPTY);
        }
        self.len = 0;
        self.nrec = 0;
        self.grid_mode = false;
        self.base_size = 0.0;
        self.levels = [Level::NEW; LEVELS];
        self.active = 0;
        self.used = 0;
        self.garbage = 0;
        self.unbounded_head = NONE;
        self.unbounded_len = 0;
        self.unsorted = 0;
    }

    fn for_each_overlap<F: FnMut(u32, u32)>(&mut self, mut f: F) -> Result<(), Error> {
        if self.grid_mode {
            // Walk the cells in memory order once an eighth of the records
            // have been added or moved since the last sort.
            if self.unsorted as u64 * 8 > self.nrec as u64 {
                self.sort_records();
            }
            self.grid_pairs(&mut f);
        } else {
            let slots = self.slots.as_ref();
            let recs = self.recs.as_ref();
            let n = self.nrec as usize;
            for (p, ra) in recs[..n].iter().enumerate() {
                let a = ra.head;
                let ba = slots[a as usize].aabb;
                for rb in &recs[p + 1..n] {
                    let b = rb.head;
                    if ba.overlaps(&slots[b as usize].aabb) {
                        f(a, b);
                    }
                }
            }
        }
        self.unbounded_pairs(&mut f);
        Ok(())
    }

    fn query<F: FnMut(u32)>(&mut self, aabb: &B, mut f: F) -> Result<(), Error> {
        Self::check_unbounded(aabb)?;
        let slots = self.slots.as_ref();
        if self.grid_mode {
            let mut m = self.active;
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                self.query_level(i, aabb, &mut f);
            }
        } else {
            for r in &self.recs.as_ref()[..self.nrec as usize] {
                if aabb.overlaps(&slots[r.head as usize].aabb) {
                    f(r.head);
                }
            }
        }
        let mut u = self.unbounded_head;
        while u != NONE {
            let s = &slots[u as usize];
            if aabb.overlaps(&s.aabb) {
                f(u);
            }
            u = s.next;
        }
        Ok(())
    }
}

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord>, A: Storage<u32>> Validate
    for HierarchicalHashGrid<B, S, R, A>
{
    fn validate(&self) -> Result<(), Corruption> {
        const W: &str = "HierarchicalHashGrid";
        let slots = self.slots.as_ref();
        let recs = self.recs.as_ref();
        let arena = self.arena.as_ref();
        let table = Self::TABLE;
        ensure(self.used <= arena.len(), W, "arena use within the arena")?;
        ensure(self.len as usize <= recs.len(), W, "a record per box")?;
        ensure(self.garbage <= self.used, W, "garbage within use")?;
        ensure(self.nrec <= self.len, W, "records <= boxes")?;
        // Regions: disjoint, within use, tables as built.
        let mut live = 0usize;
        for (i, lv) in self.levels.iter().enumerate() {
            ensure(
                lv.active == (self.active >> i & 1 == 1),
                W,
                "active mask matches levels",
            )?;
            if !lv.active {
                continue;
            }
            ensure(self.grid_mode, W, "grids only in grid mode")?;
            ensure(lv.usable, W, "active level usable")?;
            ensure(lv.base + lv.words <= self.used, W, "region within use")?;
            ensure(lv.words == table + lv.cells, W, "region = table + cells")?;
            ensure(lv.log2[0] >= 2, W, "at least 4 cells per axis")?;
            for k in 0..Self::D {
                ensure(lv.log2[k] == lv.log2[0], W, "cubic grid")?;
            }
            for (j, lj) in self.levels.iter().enumerate() {
                if j != i && lj.active {
                    ensure(
                        lv.base + lv.words <= lj.base || lj.base + lj.words <= lv.base,
                        W,
                        "regions disjoint",
                    )?;
                }
            }
            live += lv.words;
        }
        ensure(
            live + self.garbage == self.used,
            W,
            "live + garbage == used",
        )?;
        // Records: unique occupied cells whose heads point back.
        let mut objects = [0u32; LEVELS];
        let mut occupied = [0u32; LEVELS];
        let mut in_grids = 0u32;
        if self.grid_mode {
            for (p, r) in recs[..self.nrec as usize].iter().enumerate() {
                let k = r.key;
                ensure(is_grid_key(k), W, "record is a grid key")?;
                let i = (k >> LOCAL_BITS) as usize;
                let lv = &self.levels[i];
                ensure(lv.active, W, "record in an active grid")?;
                ensure(
                    ((k & LOCAL_MASK) as usize) < lv.cells,
                    W,
                    "record cell in grid",
                )?;
                ensure(
                    self.cells(lv)[(k & LOCAL_MASK) as usize] == p as u32,
                    W,
                    "cell holds its record",
                )?;
                let head = r.head;
                ensure((head as usize) < slots.len(), W, "head id in range")?;
                ensure(slots[head as usize].prev == NONE, W, "head has no prev")?;
                occupied[i] += 1;
                let mut a = head;
                let mut prev = NONE;
                let mut steps = 0u32;
                while a != NONE {
                    ensure((a as usize) < slots.len(), W, "list id in range")?;
                    let s = &slots[a as usize];
                    ensure(s.key == k, W, "box key matches its cell")?;
                    if prev != NONE {
                        ensure(s.prev == prev, W, "prev link")?;
                    }
                    ensure(s.aabb.check().is_ok(), W, "grid box valid")?;
                    let lv = &self.levels[i];
                    ensure(s.aabb.longest_edge() < lv.cell, W, "box smaller than cell")?;
                    ensure(self.fits(i, &s.aabb) == Ok(true), W, "box spans <= 2 cells")?;
                    ensure(
                        Self::local(lv, s.aabb.min()) == k & LOCAL_MASK,
                        W,
                        "box in the cell of its lower corner",
                    )?;
                    objects[i] += 1;
                    in_grids += 1;
                    steps += 1;
                    ensure(steps <= self.len, W, "list terminates")?;
                    prev = a;
                    a = s.next;
                }
            }
            for (i, lv) in self.levels.iter().enumerate() {
                if !lv.active {
                    continue;
                }
                ensure(lv.objects == objects[i], W, "grid box count")?;
                ensure(lv.occupied == occupied[i], W, "grid occupied count")?;
                let cells = self.cells(lv);
                let nonempty = cells.iter().filter(|&&c| c != EMPTY).count();
                ensure(
                    nonempty == occupied[i] as usize,
                    W,
                    "every occupied cell recorded",
                )?;
                let t = &arena[lv.base..lv.base + table];
                for (e, &v) in t.iter().enumerate() {
                    ensure(
                        v == Self::table_entry(lv, e / Self::STENCIL, e % Self::STENCIL),
                        W,
                        "offset table as built",
                    )?;
                }
            }
        } else {
            for (p, r) in recs[..self.nrec as usize].iter().enumerate() {
                let a = r.head;
                ensure(r.key == KEY_FLAT, W, "flat record keyed flat")?;
                ensure((a as usize) < slots.len(), W, "flat id in range")?;
                ensure(slots[a as usize].key == KEY_FLAT, W, "flat box keyed flat")?;
                ensure(slots[a as usize].prev == p as u32, W, "flat position")?;
            }
            in_grids = self.nrec;
        }
        // Unbounded list.
        let mut u = self.unbounded_head;
        let mut prev = NONE;
        let mut nu = 0u32;
        while u != NONE {
            ensure((u as usize) < slots.len(), W, "unbounded id in range")?;
            let s = &slots[u as usize];
            ensure(
                s.key == KEY_UNBOUNDED || s.key == KEY_TOO_LARGE,
                W,
                "unbounded key",
            )?;
            ensure(s.prev == prev, W, "unbounded prev link")?;
            nu += 1;
            ensure(nu <= self.len, W, "unbounded list terminates")?;
            prev = u;
            u = s.next;
        }
        ensure(nu == self.unbounded_len, W, "unbounded count")?;
        ensure(in_grids + nu == self.len, W, "every box somewhere")?;
        let stored = slots.iter().filter(|s| s.key != ABSENT).count();
        ensure(stored == self.len as usize, W, "stored ids == len")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Aabb3, Vec3};

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
        assert_eq!(HhgRecord::default(), HhgRecord::EMPTY);
    }
}
