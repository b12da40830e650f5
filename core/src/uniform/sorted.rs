//! Strategy (a): particles counting-sorted by cell, with start offsets.
//!
//! The layout of the GPU pipeline (cell index per particle, sort by cell,
//! offset of each cell's first particle), built here on the CPU in `O(N)`
//! without touching empty table slots.

use core::marker::PhantomData;

use super::Grid;
use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::Point;
use crate::storage::Storage;
use crate::table::{NONE, advance_stamp};
use crate::traits::NeighborSearch;

mod dense;
mod par;
mod planes;

pub use dense::DenseGrid;

use planes::{BIT_COUNT, CHUNK, LANE_LISTS, LANES, LOCAL, Local, Planes, PlanesMut, hit_mask};

/// A table slot: the build it was written in and the first run of its chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TableSlot {
    stamp: u32,
    slot: u32,
}

impl Default for TableSlot {
    /// The unused value, [`TableSlot::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl TableSlot {
    /// A never-used slot.
    pub const EMPTY: Self = Self { stamp: 0, slot: 0 };
}

/// Room for one particle in a [`CellSortedHash`]'s particle buffer:
/// `DIM + 1` words (16 B in 3D, 12 B in 2D).
///
/// The hash keeps its particles structure-of-arrays: the buffer of `S`
/// slots is read as one plane of `S` words per axis and one of ids, so a
/// slot does not hold one particle. Read the sorted particles with
/// [`CellSortedHash::sorted_ids`] and [`CellSortedHash::sorted_position`].
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct SortedParticle<P>
where
    P: Point,
{
    words: P::Words,
}

impl<P: Point> Default for SortedParticle<P> {
    /// The unused value, [`SortedParticle::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<P: Point> SortedParticle<P> {
    /// An unused slot (all words zero).
    pub const EMPTY: Self = Self { words: P::NO_WORDS };
}

/// Per-index bookkeeping of a [`CellSortedHash`]: entry `i` holds the rank
/// (sorted position) of input particle `i` and, for `i` below the number of
/// occupied cells, the first sorted position of the `i`-th run (cell).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CellRecord<P: Point> {
    rank: u32,
    start: u32,
    _p: PhantomData<P>,
}

impl<P: Point> Default for CellRecord<P> {
    /// The unused value, [`CellRecord::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<P: Point> CellRecord<P> {
    /// An unused entry.
    pub const EMPTY: Self = Self {
        rank: 0,
        start: 0,
        _p: PhantomData,
    };
}

/// Uniform spatial hash with cell-sorted buckets (strategy (a)).
///
/// The particles are kept sorted by cell, cells in row-major order (x
/// fastest: [`Point::cell_row_key`]), each cell one contiguous run of
/// positions with their ids. The three cells `x-1..=x+1` of a stencil row
/// are then one contiguous range, so the sweeps ([`for_each_pair`],
/// [`neighbor_lists`]) read 9 (3D) or 3 (2D) ranges per cell, found by
/// cursors that only move forward: no hash lookup, no read in the caller's
/// order, every stream sequential.
///
/// A build sorts in `O(N)`:
/// * input already in cell order (the previous build's, or renumbered by the
///   caller with [`NeighborSearch::spatial_order`]) is copied in one
///   pass;
/// * other input is counting-sorted through the table (open addressing,
///   linear probing, at most one occupied cell per two slots): one pass
///   finds each particle's cell and counts, the occupied cells are sorted,
///   one pass scatters. Empty slots are never visited: a slot is occupied
///   when its stamp is the current build's;
/// * a table with fewer than two slots per occupied cell falls back to a
///   comparison sort (`O(N log N)`); point queries then bisect the runs
///   instead of hashing. Any power-of-two table is accepted.
///
/// Within a cell particles keep their input order.
///
/// # Memory
///
/// `8T + N·(size_of::<P>() + 12)` bytes: `8T + 24N` in 3D, `8T + 20N` in
/// 2D, for a table of `T` slots and a capacity of `N` particles (the lengths
/// of the three buffers).
///
/// [`for_each_pair`]: NeighborSearch::for_each_pair
/// [`neighbor_lists`]: NeighborSearch::neighbor_lists
///
/// # Example
///
/// ```
/// use spatium::{NeighborSearch, Vec2, uniform::*};
/// let pts = [Vec2::new(0.0, 0.0), Vec2::new(0.3, 0.4), Vec2::new(5.0, 5.0)];
/// let mut h = CellSortedHash::<Vec2, _, _, _>::new(
///     [TableSlot::EMPTY; 32], [SortedParticle::EMPTY; 4], [CellRecord::EMPTY; 4]);
/// h.build(&pts, 1.0)?;
/// let mut n = 0;
/// h.for_each_neighbor(0, |j, _| { assert_eq!(j, 1); n += 1; })?;
/// assert_eq!(n, 1);
/// # Ok::<(), spatium::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct CellSortedHash<P, T, S, C>
where
    P: Point,
    T: Storage<TableSlot>,
    S: Storage<SortedParticle<P>>,
    C: Storage<CellRecord<P>>,
{
    table: T,
    particles: S,
    records: C,
    grid: Grid<P>,
    len: u32,
    runs: u32,
    stamp: u32,
    identity: bool,
    /// Blocks of the table index (1 or [`INDEX_BLOCKS`]): a run is
    /// probed for within the block of its home slot; 0 when the index is
    /// direct-mapped over the cells of `dense`.
    blocks: u32,
    /// The last build's bounding box of cells, when the table indexes the
    /// runs direct-mapped over it (`blocks == 0`).
    dense: DenseBox,
    /// A fixed grid origin ([`set_anchor`](Self::set_anchor)), or `None`
    /// to centre the grid on each build's positions.
    anchor: Option<P>,
    _p: PhantomData<P>,
}

/// The runs of a build, read-only: the sweeps' and queries' view.
struct Runs<'a, P: Point> {
    parts: Planes<'a, P>,
    records: &'a [CellRecord<P>],
    runs: usize,
    grid: &'a Grid<P>,
}

impl<P: Point> Runs<'_, P> {
    /// First sorted position of run `s` (`len` for `s == runs`).
    #[inline(always)]
    fn start(&self, s: usize) -> usize {
        if s < self.runs {
            self.records[s].start as usize
        } else {
            self.parts.len()
        }
    }

    /// Sorted positions of run `s`.
    #[inline(always)]
    fn range(&self, s: usize) -> (usize, usize) {
        (self.start(s), self.start(s + 1))
    }

    /// Cell of run `s < runs` (that of its first particle).
    #[inline(always)]
    fn cell(&self, s: usize) -> P::Cell {
        self.grid
            .cell_unchecked(self.parts.pos(self.records[s].start as usize))
    }

    /// Row key of run `s`; `u64::MAX` past the last run.
    #[inline(always)]
    fn key(&self, s: usize) -> u64 {
        if s < self.runs {
            P::cell_row_key(self.cell(s))
        } else {
            u64::MAX
        }
    }

    /// The run of cell `c` by bisection over the runs' keys.
    fn bisect(&self, c: P::Cell) -> Option<usize> {
        let want = P::cell_row_key(c);
        let (mut lo, mut hi) = (0usize, self.runs);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let k = self.key(mid);
            if k == want {
                return Some(mid);
            }
            if k < want {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        None
    }

    /// The first run whose key is at least `want` (`runs` if none).
    fn lower_bound(&self, want: u64) -> usize {
        let (mut lo, mut hi) = (0usize, self.runs);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key(mid) < want {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Calls `f(lo, hi, fwd)` for each run `s` of `s0..s1`, in order: the
    /// run's sorted positions `lo..hi` and the ranges of its forward cells
    /// (the next cell of its row, then the three cells of each forward row
    /// of [`Point::HALF_ROWS`], empty ones left out). With each run's own
    /// later particles, the half stencil of the pair sweeps: every pair of
    /// adjacent cells is met once.
    #[inline(always)]
    fn for_each_forward(
        &self,
        s0: usize,
        s1: usize,
        mut f: impl FnMut(usize, usize, &[(u32, u32)]),
    ) {
        let nrows = P::HALF_ROWS.len().min(MAX_HALF_ROWS);
        let mut cursors = [RowCursor::new(self.key(0)); MAX_HALF_ROWS];
        self.place(s0, &P::HALF_ROWS[..nrows], &mut cursors[..nrows]);
        let mut ranges = [(0u32, 0u32); MAX_HALF_ROWS];
        let mut next_key = self.key(s0);
        for s in s0..s1.min(self.runs) {
            let key = next_key;
            next_key = self.key(s + 1);
            let (lo, hi) = self.range(s);
            let mut fwd = [(0u32, 0u32); MAX_HALF_ROWS + 1];
            self.rows(s, P::HALF_ROWS, &mut cursors[..nrows], &mut ranges[..nrows]);
            let mut m = 0;
            if next_key == key + 1 {
                let (lo2, hi2) = self.range(s + 1);
                fwd[0] = (lo2 as u32, hi2 as u32);
                m = 1;
            }
            for &r in &ranges[..nrows] {
                if r.0 < r.1 {
                    fwd[m] = r;
                    m += 1;
                }
            }
            f(lo, hi, &fwd[..m]);
        }
    }

    /// Places one cursor per stencil row where a sweep from run 0 would
    /// have left it just before run `s0` (a sweep of a later range starts
    /// in the same state as the whole sweep at that run). Run 0 keeps the
    /// fresh cursors.
    fn place(&self, s0: usize, rows: &[P::Cell], cursors: &mut [RowCursor]) {
        if s0 == 0 || s0 >= self.runs {
            return;
        }
        let c = self.cell(s0);
        for (&row, cur) in rows.iter().zip(cursors.iter_mut()) {
            let lo = P::cell_row_key(P::cell_add(c, row)) - 1;
            let b = self.lower_bound(lo);
            let kb = self.key(b);
            *cur = RowCursor {
                b,
                kb,
                e: b,
                ke: kb,
            };
        }
    }

    /// The sorted-position ranges of the given stencil rows around run `s`
    /// (cells `x-1..=x+1` of each row), advancing `cursors` (one per row).
    #[inline(always)]
    fn rows(&self, s: usize, rows: &[P::Cell], cursors: &mut [RowCursor], out: &mut [(u32, u32)]) {
        let c = self.cell(s);
        for ((&row, cur), o) in rows.iter().zip(cursors.iter_mut()).zip(out.iter_mut()) {
            let lo = P::cell_row_key(P::cell_add(c, row)) - 1;
            let (b, e) = cur.seek(lo, lo + 2, |t| self.key(t));
            *o = (self.start(b) as u32, self.start(e) as u32);
        }
    }
}

/// A window over the runs of one stencil row, moved forward as a sweep
/// advances through the runs in key order: `b` is the first run with a key
/// at least the row's first, `e` the first past its last. Both only move
/// forward, so a sweep reads each run's key at most twice per row.
#[derive(Clone, Copy)]
struct RowCursor {
    b: usize,
    kb: u64,
    e: usize,
    ke: u64,
}

impl RowCursor {
    /// A window before the first run, whose key is `first`.
    fn new(first: u64) -> Self {
        Self {
            b: 0,
            kb: first,
            e: 0,
            ke: first,
        }
    }

    /// The runs with keys in `lo..=hi` (`lo` never decreasing between calls).
    #[inline(always)]
    fn seek(&mut self, lo: u64, hi: u64, key: impl Fn(usize) -> u64) -> (usize, usize) {
        while self.kb < lo {
            self.b += 1;
            self.kb = key(self.b);
        }
        if self.e < self.b {
            self.e = self.b;
            self.ke = self.kb;
        }
        while self.ke <= hi {
            self.e += 1;
            self.ke = key(self.e);
        }
        (self.b, self.e)
    }
}

/// Whether a table of `slots` indexes `runs` occupied cells by linear
/// probing: there are some, and at least two slots for each.
#[inline(always)]
fn indexes(runs: usize, slots: usize) -> bool {
    runs > 0 && 2 * runs <= slots
}

/// Blocks of the run index in a table of at least
/// `INDEX_BLOCKS · MIN_INDEX_BLOCK` slots: each run is probed for linearly
/// within the block of its home slot (wrapping inside the block), so the
/// blocks can be filled by different workers and a block (1/16 of the
/// table) stays in cache while it is filled. A build whose runs overfill a
/// block (more than half its slots, improbable with the table at most half
/// full) indexes with one block, i.e. plain linear probing.
const INDEX_BLOCKS: usize = 16;

/// Smallest block of a blocked index, in slots.
const MIN_INDEX_BLOCK: usize = 4096;

/// The slot after `slot` in the probe sequence of a table of `len` slots in
/// `blocks` blocks (both powers of two).
#[inline(always)]
fn next_slot(slot: usize, len: usize, blocks: u32) -> usize {
    let bl = (len / blocks.max(1) as usize).max(1);
    (slot & !(bl - 1)) | ((slot + 1) & (bl - 1))
}

/// Most rows of a stencil (3D).
const MAX_ROWS: usize = 9;

/// Most forward rows of a half stencil (3D); the pair sweep's arrays are
/// sized by it (stack: it runs on a Cortex-M too).
const MAX_HALF_ROWS: usize = 4;

impl<P, T, S, C> CellSortedHash<P, T, S, C>
where
    P: Point,
    T: Storage<TableSlot>,
    S: Storage<SortedParticle<P>>,
    C: Storage<CellRecord<P>>,
{
    /// An empty hash over a table of `T` slots (a power of two) and two
    /// per-particle buffers whose shorter length is the capacity.
    ///
    /// Never fails and allocates nothing; `const`, so it can initialise a
    /// `static`. A table whose length is not a power of two in `1..=2³¹` is
    /// refused with [`Error::InvalidTableLength`] at the first build; use
    /// [`new_checked`](Self::new_checked) to refuse it here instead.
    ///
    /// Memory: `8T + 24N` bytes in 3D, `8T + 20N` in 2D. A build is `O(N)`
    /// (see the type's documentation); a neighbour query visits the 3ᵈ
    /// cells around the particle.
    pub const fn new(table: T, particles: S, records: C) -> Self {
        Self {
            table,
            particles,
            records,
            grid: Grid::EMPTY,
            len: 0,
            runs: 0,
            stamp: 0,
            identity: true,
            blocks: 1,
            dense: DenseBox::EMPTY,
            anchor: None,
            _p: PhantomData,
        }
    }

    /// As [`new`](Self::new), with the table length checked now rather than
    /// at the first build.
    ///
    /// # Errors
    /// [`Error::InvalidTableLength`] unless the table's length is a power of
    /// two in `1..=2³¹`.
    pub fn new_checked(table: T, particles: S, records: C) -> Result<Self, Error> {
        crate::table::table_mask(table.as_ref().len())?;
        Ok(Self::new(table, particles, records))
    }

    /// Most particles a build accepts.
    pub fn capacity(&self) -> usize {
        let n = self
            .particles
            .as_ref()
            .len()
            .min(self.records.as_ref().len());
        n.min(NONE as usize - 1)
    }

    /// Fixes the origin of the grid of every later build at `origin`
    /// (`None`, the default: each build centres its grid on the bounding box
    /// of its positions). Two hashes anchored at the same point and built
    /// with the same radius put every position in the same cell, whatever
    /// else each holds: a rank of a distributed run, holding a subset of
    /// the particles, then visits each particle's neighbours in the same
    /// order as one process holding them all (spatium-mpi's bit-identical
    /// step relies on it).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for an origin that is not finite (nothing
    /// changes). A later build fails with [`Error::OutOfRange`] if a
    /// position lies more than [`crate::uniform::UNIFORM_RANGE_CELLS`]
    /// cells from the origin.
    pub fn set_anchor(&mut self, origin: Option<P>) -> Result<(), Error> {
        if origin.is_some_and(|o| !o.is_finite()) {
            return Err(Error::NonFinite);
        }
        self.anchor = origin;
        Ok(())
    }

    /// The grid of the last build.
    pub fn grid(&self) -> &Grid<P> {
        &self.grid
    }

    /// Number of occupied cells (runs).
    pub fn occupied_cells(&self) -> usize {
        self.runs as usize
    }

    /// `true` when the table indexes the occupied cells of the last build
    /// (there are some, and the table has at least two slots per occupied
    /// cell: slots stamped with the current stamp hold run numbers);
    /// otherwise point queries bisect the runs.
    pub fn is_indexed(&self) -> bool {
        indexes(self.runs as usize, self.table.as_ref().len())
    }

    /// Number of occupied cells whose table slot (the one their hash
    /// selects) is also selected by another occupied cell (hash
    /// collisions). `O(cells · cluster)` when the table indexes the cells,
    /// `O(cells²)` when it is too small to; 0 when the index is
    /// direct-mapped over the input's box of cells (the input's bounding
    /// box has no more cells than the table has slots).
    pub fn colliding_cells(&self) -> usize {
        if self.blocks == 0 && self.is_indexed() {
            // Direct-mapped: one slot per cell, no collision.
            return 0;
        }
        let v = self.view();
        let table = self.table.as_ref();
        let home = |s: usize| self.grid.bucket(v.cell(s)) as usize;
        (0..v.runs)
            .filter(|&s| {
                let h = home(s);
                if self.is_indexed() {
                    let mut slot = h;
                    for _ in 0..table.len() {
                        let ts = table[slot];
                        if ts.stamp != self.stamp {
                            break;
                        }
                        let t = ts.slot as usize;
                        if t != s && home(t) == h {
                            return true;
                        }
                        slot = next_slot(slot, table.len(), self.blocks);
                    }
                    false
                } else {
                    (0..v.runs).any(|t| t != s && home(t) == h)
                }
            })
            .count()
    }

    /// The ids of the particles in cell order: `sorted_ids()[k]` is the
    /// index, in the slice given to `build`, of the particle at sorted
    /// position `k`.
    pub fn sorted_ids(&self) -> &[u32] {
        Planes::new(self.particles.as_ref(), self.len as usize).ids()
    }

    /// The particles in cell order, as `(id, position)`.
    pub fn sorted_particles(&self) -> impl ExactSizeIterator<Item = (u32, P)> + '_ {
        let v = Planes::new(self.particles.as_ref(), self.len as usize);
        (0..v.len()).map(move |k| (v.id(k), v.pos(k)))
    }

    /// Position of the particle at sorted position `k` (`None` past
    /// `len()`).
    pub fn sorted_position(&self, k: usize) -> Option<P> {
        let v = Planes::new(self.particles.as_ref(), self.len as usize);
        (k < v.len()).then(|| v.pos(k))
    }

    /// `true` when the last build found its input already in cell order
    /// (the sort was the identity).
    pub fn input_was_sorted(&self) -> bool {
        self.identity
    }

    /// Empties the hash in `O(1)`.
    pub fn clear(&mut self) {
        self.len = 0;
        self.runs = 0;
        self.identity = true;
        // Stale slots are told apart by the stamp of the next build.
    }

    /// Writes `src` permuted into cell order: `dst[k] = src[sorted_ids()[k]]`.
    /// Rebuilding from data reordered this way makes every cell a
    /// contiguous, sequentially read run (better cache use for the caller's
    /// own per-particle arrays too) and the build a single copy. Ids refer
    /// to the new order after the next build.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless both slices hold `len()` elements.
    pub fn reorder<D: Copy>(&self, src: &[D], dst: &mut [D]) -> Result<(), Error> {
        let n = self.len as usize;
        if src.len() != n || dst.len() != n {
            let got = if src.len() != n { src.len() } else { dst.len() };
            return Err(Error::LengthMismatch { expected: n, got });
        }
        for (d, &id) in dst.iter_mut().zip(self.sorted_ids()) {
            *d = src[id as usize];
        }
        Ok(())
    }

    /// The end of every build: indexes the runs by cell when the table has
    /// two slots per run, and records the build. When the input's bounding
    /// box has no more cells than the table has slots (`dense`), the index
    /// is direct-mapped: slot `d` of the box's `d`-th cell in row-major
    /// order, which is the runs' order, so the runs are written in one
    /// sequential pass, no hashing and no probing (at 10⁶ particles the
    /// hashed index's random probes of the 16 MB table were a twelfth of
    /// build + all pairs). Otherwise the runs are hashed (in blocks,
    /// filled by `exec`'s workers; see [`INDEX_BLOCKS`]). The table's
    /// contents are the same for every executor.
    fn finish_build<E: crate::exec::Executor>(
        &mut self,
        exec: &E,
        grid: Grid<P>,
        n: usize,
        runs: usize,
        identity: bool,
        dense: Option<&DenseBox>,
    ) {
        let table = self.table.as_mut();
        let parts = Planes::new(self.particles.as_ref(), n);
        let records = self.records.as_ref();
        self.blocks = 1;
        if !indexes(runs, table.len()) {
            // Point queries bisect the runs.
        } else if let Some(d) = dense {
            advance_stamp(&mut self.stamp, || table.fill(TableSlot::EMPTY));
            let slot_of = |s: usize| {
                let r = records.get(s)?;
                d.slot::<P>(grid.cell_unchecked(parts.pos(r.start as usize)))
            };
            index_dense(exec, table, runs, self.stamp, slot_of);
            self.blocks = 0;
            self.dense = *d;
        } else {
            advance_stamp(&mut self.stamp, || table.fill(TableSlot::EMPTY));
            let stamp = self.stamp;
            let home = |s: usize| {
                grid.bucket(grid.cell_unchecked(parts.pos(records[s].start as usize))) as usize
            };
            let len = table.len();
            if len >= INDEX_BLOCKS * MIN_INDEX_BLOCK {
                if index_blocked(exec, table, runs, stamp, home) {
                    self.blocks = INDEX_BLOCKS as u32;
                } else {
                    // A block overfilled: start again with one block.
                    table.fill(TableSlot::EMPTY);
                }
            }
            if self.blocks == 1 {
                for s in 0..runs {
                    let mut slot = home(s);
                    while table[slot].stamp == stamp {
                        slot = next_slot(slot, len, 1);
                    }
                    table[slot] = TableSlot {
                        stamp,
                        slot: s as u32,
                    };
                }
            }
        }
        self.grid = grid;
        self.len = n as u32;
        self.runs = runs as u32;
        self.identity = identity;
    }

    /// The read-only view of the runs.
    #[inline(always)]
    fn view(&self) -> Runs<'_, P> {
        Runs {
            parts: Planes::new(self.particles.as_ref(), self.len as usize),
            records: self.records.as_ref(),
            runs: self.runs as usize,
            grid: &self.grid,
        }
    }

    /// The run of cell `c`, if it is occupied: through the table (linear
    /// probing, each probe comparing the cell of the run's first particle)
    /// when it indexes the runs, by bisection otherwise.
    #[inline]
    fn find(&self, v: &Runs<'_, P>, c: P::Cell) -> Option<usize> {
        if !self.is_indexed() {
            return v.bisect(c);
        }
        let table = self.table.as_ref();
        if self.blocks == 0 {
            let ts = table.get(self.dense.slot::<P>(c)?)?;
            return (ts.stamp == self.stamp).then_some(ts.slot as usize);
        }
        let mut slot = self.grid.bucket(c) as usize;
        // At most half the slots are occupied, so an empty one ends the
        // probe; the bound only guards a corrupted table.
        for _ in 0..table.len() {
            let ts = table[slot];
            if ts.stamp != self.stamp {
                return None;
            }
            if v.cell(ts.slot as usize) == c {
                return Some(ts.slot as usize);
            }
            slot = next_slot(slot, table.len(), self.blocks);
        }
        None
    }

    /// Calls `f` for each particle of cell `c` within the radius of `p`,
    /// except sorted index `skip`.
    #[inline(always)]
    fn scan_cell<F: FnMut(u32, f32)>(
        &self,
        v: &Runs<'_, P>,
        p: P,
        c: P::Cell,
        skip: usize,
        f: &mut F,
    ) {
        let Some(s) = self.find(v, c) else {
            return;
        };
        let (lo, hi) = v.range(s);
        let r2 = self.grid.radius_sq();
        let ids = v.parts.ids();
        v.parts.for_each_within(p, lo, hi, r2, |k, d2| {
            if k != skip {
                f(ids[k], d2);
            }
        });
    }

    /// Calls `f(k, rows)` for every sorted position `k` of runs `s0..s1`,
    /// in order, with the ranges of the 9 (3D) or 3 (2D) stencil rows
    /// around its cell.
    #[inline(always)]
    fn sweep_rows_in(
        &self,
        v: &Runs<'_, P>,
        s0: usize,
        s1: usize,
        mut f: impl FnMut(usize, &[(u32, u32)]),
    ) {
        let nrows = P::ROWS.len().min(MAX_ROWS);
        let mut cursors = [RowCursor::new(v.key(0)); MAX_ROWS];
        v.place(s0, &P::ROWS[..nrows], &mut cursors[..nrows]);
        let mut ranges = [(0u32, 0u32); MAX_ROWS];
        for s in s0..s1.min(v.runs) {
            v.rows(s, P::ROWS, &mut cursors[..nrows], &mut ranges[..nrows]);
            let (lo, hi) = v.range(s);
            for k in lo..hi {
                f(k, &ranges[..nrows]);
            }
        }
    }

    /// Calls `f(k, cands)` for every sorted position `k` of runs `s0..s1`,
    /// in order, with its candidates: the 9 (3D) or 3 (2D) stencil rows
    /// around its cell, copied into one [`Local`] run per cell when they
    /// fit (read in place otherwise). Either way the candidates come in the
    /// same order.
    #[inline(always)]
    fn sweep_cands_in(
        &self,
        v: &Runs<'_, P>,
        s0: usize,
        s1: usize,
        mut f: impl FnMut(usize, Cands<'_, '_, P>),
    ) {
        let nrows = P::ROWS.len().min(MAX_ROWS);
        let mut cursors = [RowCursor::new(v.key(0)); MAX_ROWS];
        v.place(s0, &P::ROWS[..nrows], &mut cursors[..nrows]);
        let mut ranges = [(0u32, 0u32); MAX_ROWS];
        let mut local = Local::new();
        for s in s0..s1.min(v.runs) {
            v.rows(s, P::ROWS, &mut cursors[..nrows], &mut ranges[..nrows]);
            let (lo, hi) = v.range(s);
            if LOCAL > 0 {
                local.clear();
                let mut fits = true;
                // Where the cell's own particles land in the copy.
                let mut own = None;
                for &(a, b) in &ranges[..nrows] {
                    let (a, b) = (a as usize, b as usize);
                    if (a..b).contains(&lo) {
                        own = Some(local.len() + lo - a);
                    }
                    fits = fits && local.push(&v.parts, a, b);
                }
                if let (true, Some(own)) = (fits, own) {
                    let end = local.len();
                    let planes = local.view::<P>();
                    for (x, k) in (lo..hi).enumerate() {
                        f(
                            k,
                            Cands::Local {
                                planes: &planes,
                                me: own + x,
                                end,
                            },
                        );
                    }
                    continue;
                }
            }
            for k in lo..hi {
                f(k, Cands::Rows(&ranges[..nrows]));
            }
        }
    }

    /// The lists of the particles in sorted order, in one sweep: row `k`
    /// (`offsets[k]..offsets[k + 1]`, `offsets` `len() + 1` long) holds the
    /// ids of the neighbours of the particle at sorted position `k`.
    /// Returns the total, also when `indices` is too short (then only what
    /// fits is written).
    fn lists_in_sorted_order(&self, offsets: &mut [u32], indices: &mut [u32]) -> usize {
        let n = self.len as usize;
        let mut cursor = 0usize;
        let v = self.view();
        self.sweep_cands_in(&v, 0, v.runs, |k, cands| {
            if let Some(o) = offsets.get_mut(k) {
                *o = cursor.min(NONE as usize) as u32;
            }
            cursor = self.gather_cands(k, cands, indices, cursor);
        });
        if let Some(o) = offsets.get_mut(n) {
            *o = cursor.min(NONE as usize) as u32;
        }
        cursor
    }

    /// Appends the neighbours of the particle at sorted position `k` among
    /// `cands` to `out` at `cursor` (counting without writing past its
    /// end); returns the new cursor.
    #[inline(always)]
    fn gather_cands(
        &self,
        k: usize,
        cands: Cands<'_, '_, P>,
        out: &mut [u32],
        cursor: usize,
    ) -> usize {
        match cands {
            Cands::Rows(rows) => self.gather_one(k, rows, out, cursor),
            Cands::Local { planes, me, end } => {
                gather_local(planes, me, end, self.grid.radius_sq(), out, cursor)
            }
        }
    }

    /// The pairs of runs `s0..s1` (each run's own pairs, then against the
    /// next cell of its row and the forward rows), into `out`.
    #[inline(always)]
    fn pair_range<F: FnMut(u32, u32, f32)>(
        &self,
        v: &Runs<'_, P>,
        s0: usize,
        s1: usize,
        out: &mut Batch<P, F>,
    ) {
        let parts = v.parts;
        let mut local = Local::new();
        v.for_each_forward(s0, s1, |lo, hi, fwd| {
            // The cell and its forward cells copied into one run, when
            // they fit: each particle then tests one contiguous range.
            if LOCAL > 0 {
                local.clear();
                let mut fits = local.push(&parts, lo, hi);
                for &(lo2, hi2) in fwd {
                    fits = fits && local.push(&parts, lo2 as usize, hi2 as usize);
                }
                if fits {
                    let end = local.len();
                    let lp = local.view::<P>();
                    for x in 0..hi - lo {
                        out.begin(&lp, parts.id(lo + x), parts.pos(lo + x));
                        out.add(&lp, x + 1, end);
                    }
                    out.flush(&lp);
                    return;
                }
            }
            for k in lo..hi {
                out.begin(&parts, parts.id(k), parts.pos(k));
                out.add(&parts, k + 1, hi);
                for &(lo2, hi2) in fwd {
                    out.add(&parts, lo2 as usize, hi2 as usize);
                }
            }
            out.flush(&parts);
        });
    }

    /// Appends the neighbours of the particle at sorted position `k` found
    /// in `rows` to `out` at `cursor` (counting without writing past its
    /// end); returns the new cursor.
    #[inline(always)]
    fn gather_one(&self, k: usize, rows: &[(u32, u32)], out: &mut [u32], cursor: usize) -> usize {
        let parts = Planes::new(self.particles.as_ref(), self.len as usize);
        let r2 = self.grid.radius_sq();
        let me = parts.pos(k);
        let mut cursor = cursor;
        for &(lo, hi) in rows {
            let (lo, hi) = (lo as usize, hi as usize);
            if (lo..hi).contains(&k) {
                cursor = gather(&parts, me, lo, k, r2, out, cursor);
                cursor = gather(&parts, me, k + 1, hi, r2, out, cursor);
            } else {
                cursor = gather(&parts, me, lo, hi, r2, out, cursor);
            }
        }
        cursor
    }
}

/// Writes the direct-mapped run index: run `s` into the slot `slot_of(s)`
/// of its cell in the input's dense box. The dense numbering is the order
/// of the runs, so the slots of consecutive runs increase and tasks over
/// ranges of runs own disjoint ranges of the table, cut at their first
/// run's slot; every slot gets the same value on one worker or many.
fn index_dense<E: crate::exec::Executor>(
    exec: &E,
    table: &mut [TableSlot],
    runs: usize,
    stamp: u32,
    slot_of: impl Fn(usize) -> Option<usize> + Sync,
) {
    let write = |piece: &mut [TableSlot], base: usize, s0: usize, s1: usize| {
        for s in s0..s1 {
            let x = slot_of(s).and_then(|x| x.checked_sub(base));
            if let Some(slot) = x.and_then(|x| piece.get_mut(x)) {
                *slot = TableSlot {
                    stamp,
                    slot: s as u32,
                };
            }
        }
    };
    if exec.workers() <= 1 {
        write(table, 0, 0, runs);
        return;
    }
    let (tasks, grain) = crate::exec::task_split(runs, DENSE_INDEX_GRAIN, 256);
    let len = table.len();
    let cut = |t: usize| {
        let s = t.saturating_mul(grain);
        if s >= runs {
            len
        } else {
            slot_of(s).unwrap_or(len)
        }
    };
    exec.run(
        tasks,
        crate::exec::Parts::cut(table, cut),
        |t, mut piece| {
            let base = piece.start();
            let s0 = t.saturating_mul(grain).min(runs);
            write(piece.slice(), base, s0, s0.saturating_add(grain).min(runs));
        },
    );
}

/// Runs per task of [`index_dense`].
const DENSE_INDEX_GRAIN: usize = 4096;

/// Fills the blocked run index (stamps `stamp`, [`INDEX_BLOCKS`] blocks):
/// on one worker in one pass over the runs, on several with each task
/// owning a group of blocks and scanning every run for those homed in it. Either way each block
/// receives its runs in run order, so the table is the same. `false` if a
/// block would hold more runs than half its slots (the table is then left
/// partly filled).
fn index_blocked<E: crate::exec::Executor>(
    exec: &E,
    table: &mut [TableSlot],
    runs: usize,
    stamp: u32,
    home: impl Fn(usize) -> usize + Sync,
) -> bool {
    let len = table.len();
    let bl = len / INDEX_BLOCKS;
    let shift = bl.trailing_zeros();
    let insert = |block: &mut [TableSlot], h: usize, s: usize| {
        let mut x = h & (bl - 1);
        while block[x].stamp == stamp {
            x = (x + 1) & (bl - 1);
        }
        block[x] = TableSlot {
            stamp,
            slot: s as u32,
        };
    };
    if exec.workers() <= 1 {
        let mut counts = [0usize; INDEX_BLOCKS];
        for s in 0..runs {
            let h = home(s);
            let b = (h >> shift).min(INDEX_BLOCKS - 1);
            counts[b] += 1;
            if 2 * counts[b] > bl {
                return false;
            }
            insert(&mut table[b * bl..(b + 1) * bl], h, s);
        }
        return true;
    }
    // Tasks own runs of whole blocks: as many tasks as workers (a power of
    // two up to INDEX_BLOCKS), since each task scans every run once. Each
    // block still receives its runs in run order, so the table does not
    // depend on the grouping.
    let mut tasks = 1;
    while tasks * 2 <= exec.workers().min(INDEX_BLOCKS) {
        tasks *= 2;
    }
    let per = INDEX_BLOCKS / tasks;
    let mut full = [false; INDEX_BLOCKS];
    exec.run(
        tasks,
        (
            crate::exec::Parts::chunks(table, per * bl),
            crate::exec::Parts::chunks(&mut full[..tasks], 1),
        ),
        |t, (mut blocks, mut full)| {
            let blocks = blocks.slice();
            let mut counts = [0usize; INDEX_BLOCKS];
            for s in 0..runs {
                let h = home(s);
                let b = h >> shift;
                if b / per != t {
                    continue;
                }
                let local = b % per;
                counts[local] += 1;
                if 2 * counts[local] > bl {
                    if let Some(f) = full.slice().first_mut() {
                        *f = true;
                    }
                    return;
                }
                if let Some(block) = blocks.get_mut(local * bl..(local + 1) * bl) {
                    insert(block, h, s);
                }
            }
        },
    );
    !full.iter().any(|&f| f)
}

/// Sorts input that is not in cell order into `parts` / `records` (dense
/// counting sort over the bounding box's cells, else through the hashed
/// table, else by comparison) and marks the runs; returns their number.
#[allow(clippy::too_many_arguments)]
fn sort_unsorted<P: Point>(
    grid: &Grid<P>,
    lo: P,
    hi: P,
    positions: &[P],
    table: &mut [TableSlot],
    stamp: &mut u32,
    parts: &mut PlanesMut<'_, P>,
    records: &mut [CellRecord<P>],
) -> usize {
    let runs = if let Some(d) = DenseBox::new(grid, lo, hi, table.len()) {
        Some(d.sort(grid, positions, table, parts.ids_mut(), records))
    } else {
        if !counting_sort(grid, positions, table, stamp, parts.ids_mut(), records) {
            comparison_sort(grid, positions, parts.ids_mut(), records);
        }
        None
    };
    // The sorts scatter ids only; the coordinates are then gathered in
    // sorted order (sequential writes, one read per particle).
    parts.gather_positions(positions);
    match runs {
        Some(runs) => runs,
        None => mark_runs(grid, &parts.view(), records),
    }
}

/// Copies `positions` if they are already in cell order, marking the runs
/// as it goes; returns the number of runs, or `None` at the first particle
/// out of order (the buffers then hold garbage the sort overwrites).
fn copy_if_sorted<P: Point>(
    grid: &Grid<P>,
    positions: &[P],
    parts: &mut PlanesMut<'_, P>,
    records: &mut [CellRecord<P>],
) -> Option<usize> {
    let mut prev = None;
    let mut runs = 0usize;
    for (i, &p) in positions.iter().enumerate() {
        let k = P::cell_row_key(grid.cell_unchecked(p));
        match prev {
            Some(q) if q == k => {}
            Some(q) if q > k => return None,
            _ => {
                prev = Some(k);
                // Run `runs <= i`: its `start` field, beside the ranks.
                records[runs].start = i as u32;
                runs += 1;
            }
        }
        parts.set(i, p, i as u32);
        records[i].rank = i as u32;
    }
    Some(runs)
}

/// Counting sort of `positions` by cell through `table` (open addressing,
/// at most `table.len() / 2` occupied cells); on return `ids` holds their
/// ids in cell order and `records[i].rank` the sorted position of particle
/// `i`. `false`, with the buffers holding garbage, if the input has more
/// cells than that.
fn counting_sort<P: Point>(
    grid: &Grid<P>,
    positions: &[P],
    table: &mut [TableSlot],
    stamp: &mut u32,
    ids: &mut [u32],
    records: &mut [CellRecord<P>],
) -> bool {
    let mask = table.len() - 1;
    let limit = table.len() / 2;
    advance_stamp(stamp, || table.fill(TableSlot::EMPTY));
    let st = *stamp;
    // Pass 1: each particle's cell (consecutive particles of one cell probe
    // once), numbered in order of first appearance; counts in `start`, the
    // cell number in `rank`, the first particle of each cell in
    // `ids[cell number]`.
    let mut runs = 0usize;
    let mut last: Option<(P::Cell, u32)> = None;
    for (i, &p) in positions.iter().enumerate() {
        let c = grid.cell_unchecked(p);
        let r = match last {
            Some((lc, lr)) if lc == c => lr,
            _ => {
                let mut slot = grid.bucket(c) as usize;
                loop {
                    let ts = table[slot];
                    if ts.stamp != st {
                        if runs >= limit {
                            return false;
                        }
                        table[slot] = TableSlot {
                            stamp: st,
                            slot: runs as u32,
                        };
                        ids[runs] = i as u32;
                        records[runs].start = 0;
                        runs += 1;
                        break (runs - 1) as u32;
                    }
                    let first = ids[ts.slot as usize] as usize;
                    if grid.cell_unchecked(positions[first]) == c {
                        break ts.slot;
                    }
                    slot = (slot + 1) & mask;
                }
            }
        };
        last = Some((c, r));
        records[r as usize].start += 1;
        records[i].rank = r;
    }
    // The cells in row-major order (each by its first particle, whose
    // rank is still its cell number); counts become each cell's cursor.
    sort_by_cell(grid, positions, &mut ids[..runs]);
    let mut total = 0u32;
    for &first in &ids[..runs] {
        let cell = records[first as usize].rank as usize;
        let rec = &mut records[cell];
        let count = rec.start;
        rec.start = total;
        total += count;
    }
    // Pass 2: scatter (the sorted cell list is no longer needed).
    for i in 0..positions.len() {
        let r = records[i].rank as usize;
        let k = records[r].start;
        records[r].start = k + 1;
        ids[k as usize] = i as u32;
        records[i].rank = k;
    }
    true
}

/// The cells of the input's bounding box, numbered densely in row-major
/// order, when there are no more of them than table slots: the table then
/// serves as a direct-mapped count array (no hashing, no probing, no sort of
/// the cells), the common case of a fluid filling its box.
///
/// The same numbering is the direct-mapped run index of the build (see
/// `finish_build`), so the box is kept with the structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DenseBox {
    lo: [i32; 3],
    /// Cells per axis (at most the table's length, so a `u32`).
    ext: [u32; 3],
    cells: usize,
}

impl DenseBox {
    /// The box of no cell (every [`slot`](Self::slot) is `None`).
    const EMPTY: Self = Self {
        lo: [0; 3],
        ext: [0; 3],
        cells: 0,
    };

    fn new<P: Point>(grid: &Grid<P>, lo: P, hi: P, table_len: usize) -> Option<Self> {
        let (cl, ch) = (grid.cell_unchecked(lo), grid.cell_unchecked(hi));
        let mut out = Self {
            lo: [0; 3],
            ext: [1; 3],
            cells: 1,
        };
        for k in 0..P::DIM.min(3) {
            out.lo[k] = P::cell_coord(cl, k);
            out.ext[k] = u32::try_from(P::cell_coord(ch, k) - out.lo[k] + 1).ok()?;
            out.cells = out.cells.checked_mul(out.ext[k] as usize)?;
        }
        (out.cells <= table_len).then_some(out)
    }

    /// Dense number of a cell of the box (x fastest).
    #[inline(always)]
    fn index<P: Point>(&self, c: P::Cell) -> usize {
        let mut d = 0usize;
        for k in (0..P::DIM.min(3)).rev() {
            d = d * self.ext[k] as usize + (P::cell_coord(c, k) - self.lo[k]) as usize;
        }
        d
    }

    /// [`index`](Self::index) of any cell: `None` outside the box.
    #[inline(always)]
    fn slot<P: Point>(&self, c: P::Cell) -> Option<usize> {
        (0..P::DIM.min(3))
            .all(|k| {
                let off = P::cell_coord(c, k).wrapping_sub(self.lo[k]);
                off >= 0 && (off as u32) < self.ext[k]
            })
            .then(|| self.index::<P>(c))
    }

    /// Counting sort of `positions` by dense cell through the first `cells`
    /// slots of `table` (left with stamp 0, i.e. empty); on return `ids`
    /// holds their ids in cell order, `records[i].rank` the sorted
    /// position of particle `i` and `records[s].start` the start of run
    /// `s`; returns the number of runs. The dense numbering is row-major
    /// (x fastest), the order of [`Point::cell_row_key`], so the runs are
    /// the occupied cells in dense order, marked while the counts become
    /// starts (no pass over the sorted particles).
    fn sort<P: Point>(
        &self,
        grid: &Grid<P>,
        positions: &[P],
        table: &mut [TableSlot],
        ids: &mut [u32],
        records: &mut [CellRecord<P>],
    ) -> usize {
        let counts = &mut table[..self.cells];
        counts.fill(TableSlot::EMPTY);
        for (&p, rec) in positions.iter().zip(records.iter_mut()) {
            let d = self.index::<P>(grid.cell_unchecked(p));
            counts[d].slot += 1;
            rec.rank = d as u32;
        }
        let mut total = 0u32;
        let mut runs = 0usize;
        for c in counts.iter_mut() {
            let n = c.slot;
            if n > 0 {
                // Run `runs` < the particles counted so far + 1 <= len.
                if let Some(r) = records.get_mut(runs) {
                    r.start = total;
                }
                runs += 1;
            }
            c.slot = total;
            total += n;
        }
        for (i, rec) in records[..positions.len()].iter_mut().enumerate() {
            let c = &mut counts[rec.rank as usize];
            let k = c.slot;
            c.slot = k + 1;
            ids[k as usize] = i as u32;
            rec.rank = k;
        }
        runs
    }
}

/// Sorts ids by (row key of the cell of their position, id): the one sort
/// of the build (one instantiation, which matters in firmware).
#[inline(never)]
fn sort_by_cell<P: Point>(grid: &Grid<P>, positions: &[P], ids: &mut [u32]) {
    crate::sort::sort_by_key(ids, |&i| {
        let p = positions.get(i as usize).copied().unwrap_or(P::ZERO);
        (P::cell_row_key(grid.cell_unchecked(p)), i)
    });
}

/// Comparison sort by (cell, id): any table size, `O(N log N)`.
fn comparison_sort<P: Point>(
    grid: &Grid<P>,
    positions: &[P],
    ids: &mut [u32],
    records: &mut [CellRecord<P>],
) {
    let ids = &mut ids[..positions.len()];
    for (i, id) in ids.iter_mut().enumerate() {
        *id = i as u32;
    }
    sort_by_cell(grid, positions, ids);
    for (k, &id) in ids.iter().enumerate() {
        records[id as usize].rank = k as u32;
    }
}

/// Writes the run starts of particles in cell order; returns the number of
/// runs.
fn mark_runs<P: Point>(
    grid: &Grid<P>,
    parts: &Planes<'_, P>,
    records: &mut [CellRecord<P>],
) -> usize {
    let mut runs = 0usize;
    let mut prev = None;
    for k in 0..parts.len() {
        let key = P::cell_row_key(grid.cell_unchecked(parts.pos(k)));
        if prev != Some(key) {
            prev = Some(key);
            records[runs].start = k as u32;
            runs += 1;
        }
    }
    runs
}

impl<P, T, S, C> NeighborSearch<P> for CellSortedHash<P, T, S, C>
where
    P: Point,
    T: Storage<TableSlot>,
    S: Storage<SortedParticle<P>>,
    C: Storage<CellRecord<P>>,
{
    fn build(&mut self, positions: &[P], radius: f32) -> Result<(), Error> {
        let (grid, lo, hi) = Grid::fit_bounds(
            radius,
            positions,
            self.table.as_ref().len(),
            self.capacity(),
        )?;
        let grid = grid.anchored(self.anchor, lo, hi, positions.len())?;
        // Validated: from here on nothing can fail.
        let n = positions.len();
        let mut parts = PlanesMut::new(self.particles.as_mut(), n);
        let records = &mut self.records.as_mut()[..n];
        let (runs, identity) = match copy_if_sorted(&grid, positions, &mut parts, records) {
            Some(runs) => (runs, true),
            None => (
                sort_unsorted(
                    &grid,
                    lo,
                    hi,
                    positions,
                    self.table.as_mut(),
                    &mut self.stamp,
                    &mut parts,
                    records,
                ),
                false,
            ),
        };
        let dense = DenseBox::new(&grid, lo, hi, self.table.as_ref().len());
        self.finish_build(
            &crate::exec::Serial,
            grid,
            n,
            runs,
            identity,
            dense.as_ref(),
        );
        Ok(())
    }

    fn par_build<E: crate::exec::Executor>(
        &mut self,
        exec: &E,
        positions: &[P],
        radius: f32,
    ) -> Result<(), Error> {
        self.par_build_impl(exec, positions, radius)
    }

    fn pair_tasks(&self) -> usize {
        self.run_tasks().0
    }

    fn par_for_each_pair<E, K, F>(&self, exec: &E, sinks: &mut [K], f: F) -> Result<(), Error>
    where
        E: crate::exec::Executor,
        K: Send,
        F: Fn(&mut K, u32, u32, f32) + Sync,
        Self: Sync,
    {
        self.par_pairs_impl(exec, sinks, f)
    }

    /// In the structure's order (the last build's input was in cell order:
    /// see [`NeighborSearch::spatial_order`]) tasks sweep ranges of cells
    /// with forward cursors, as the serial sweeps do; otherwise the trait's
    /// default (each particle's neighbours through the table, in tasks of
    /// contiguous ids).
    fn par_gather<E, U, F>(&self, exec: &E, out: &mut [U], f: F) -> Result<(), Error>
    where
        E: crate::exec::Executor,
        U: Send,
        F: Fn(u32, &mut U, u32, f32) + Sync,
        Self: Sync,
    {
        if self.identity {
            self.par_gather_sweep(exec, out, f)
        } else {
            crate::traits::gather_by_id(self, exec, out, f)
        }
    }

    /// In the structure's order, tasks sweep ranges of cells and write the
    /// same lists as [`neighbor_lists`](NeighborSearch::neighbor_lists):
    /// in one sweep when `indices` has room for the lists twice over (each
    /// task fills a provisional region of its upper half, in proportion to
    /// its particles, then copies its lists into place; a task whose
    /// region overflowed sweeps again), else in two (counts, then lists at
    /// their offsets). On one worker the serial sweep runs. Otherwise the
    /// trait's default.
    fn par_neighbor_lists<E: crate::exec::Executor>(
        &self,
        exec: &E,
        offsets: &mut [u32],
        indices: &mut [u32],
    ) -> Result<usize, Error>
    where
        Self: Sync,
    {
        if self.identity && exec.workers() <= 1 {
            // One worker: the serial sweep writes the same lists, in the
            // same order, in one pass (the parallel form sweeps twice:
            // degrees, then each task's lists at their offsets).
            self.neighbor_lists(offsets, indices)
        } else if self.identity {
            self.par_lists_sweep(exec, offsets, indices)
                .map(|(total, _)| total)
        } else {
            crate::traits::lists_by_id(self, exec, offsets, indices)
        }
    }

    fn len(&self) -> usize {
        self.len as usize
    }

    fn radius(&self) -> f32 {
        self.grid.radius()
    }

    fn position(&self, id: u32) -> Option<P> {
        if id >= self.len {
            return None;
        }
        let k = self.records.as_ref()[id as usize].rank as usize;
        Some(self.view().parts.pos(k))
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, mut f: F) -> Result<(), Error> {
        if id >= self.len {
            return Err(Error::UnknownId { id });
        }
        let v = self.view();
        let k = self.records.as_ref()[id as usize].rank as usize;
        let p = v.parts.pos(k);
        let c = self.grid.cell_unchecked(p);
        for &d in P::STENCIL {
            self.scan_cell(&v, p, P::cell_add(c, d), k, &mut f);
        }
        Ok(())
    }

    /// The ids in cell order (cells row-major, input order within a cell):
    /// [`sorted_ids`](CellSortedHash::sorted_ids).
    fn spatial_order(&self, order: &mut [u32]) -> Result<(), Error> {
        let ids = self.sorted_ids();
        let available = order.len();
        let out = order.get_mut(..ids.len()).ok_or(Error::BufferTooSmall {
            needed: ids.len(),
            available,
        })?;
        out.copy_from_slice(ids);
        Ok(())
    }

    fn for_each_within<F: FnMut(u32, f32)>(&self, point: P, mut f: F) -> Result<(), Error> {
        let Some(c) = self.grid.query_cell(point, self.len as usize)? else {
            return Ok(());
        };
        let v = self.view();
        for &d in P::STENCIL {
            self.scan_cell(&v, point, P::cell_add(c, d), usize::MAX, &mut f);
        }
        Ok(())
    }

    /// One sweep in cell order resolves each cell's stencil rows with
    /// forward cursors (no lookups). Input in the structure's order (the
    /// sort was the identity) is served in that one sweep, each list written
    /// sequentially; other input in two, one counting and one writing each
    /// particle's list at its offset.
    fn neighbor_lists(&self, offsets: &mut [u32], indices: &mut [u32]) -> Result<usize, Error> {
        let n = self.len as usize;
        if offsets.len() < n + 1 {
            return Err(Error::BufferTooSmall {
                needed: n + 1,
                available: offsets.len(),
            });
        }
        let offsets = &mut offsets[..=n];
        let ids = self.sorted_ids();
        let total = if self.identity {
            self.lists_in_sorted_order(offsets, indices)
        } else {
            // Sweep 1: degrees, stored at offsets[id + 1].
            offsets[0] = 0;
            let v = self.view();
            self.sweep_cands_in(&v, 0, v.runs, |k, cands| {
                let deg = self.gather_cands(k, cands, &mut [], 0);
                offsets[ids[k] as usize + 1] = deg as u32;
            });
            let total = crate::csr::prefix_sum(offsets);
            if total <= indices.len() && total < NONE as usize {
                // Sweep 2: each list written at its offset. Each particle
                // gets exactly its own segment, so the branch-free writes
                // never spill into a list already written.
                self.sweep_cands_in(&v, 0, v.runs, |k, cands| {
                    let id = ids[k] as usize;
                    let (at, end) = (offsets[id] as usize, offsets[id + 1] as usize);
                    self.gather_cands(k, cands, &mut indices[at..end], 0);
                });
            }
            total
        };
        if total > indices.len() || total >= NONE as usize {
            return Err(Error::BufferTooSmall {
                needed: total,
                available: indices.len(),
            });
        }
        Ok(total)
    }

    /// Always the one sweep of the structure's order (see
    /// [`neighbor_lists`](NeighborSearch::neighbor_lists)), whatever the
    /// input's order: each list written sequentially at the cursor.
    fn spatial_neighbor_lists(
        &self,
        offsets: &mut [u32],
        indices: &mut [u32],
    ) -> Result<usize, Error> {
        let n = self.len as usize;
        if offsets.len() < n + 1 {
            return Err(Error::BufferTooSmall {
                needed: n + 1,
                available: offsets.len(),
            });
        }
        let total = self.lists_in_sorted_order(&mut offsets[..=n], indices);
        if total > indices.len() || total >= NONE as usize {
            return Err(Error::BufferTooSmall {
                needed: total,
                available: indices.len(),
            });
        }
        Ok(total)
    }

    /// One sweep in cell order: each cell's pairs, then against the next
    /// cell of its row and the forward rows, found by cursors.
    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, f: F) {
        let v = self.view();
        let mut out = Batch::new(f, self.grid.radius_sq());
        self.pair_range(&v, 0, v.runs, &mut out);
    }
}

/// Where a particle's candidates are (see `sweep_cands_in`).
#[derive(Clone, Copy)]
enum Cands<'c, 'p, P: Point> {
    /// Positions `0..end` of a [`Local`] copy; `me` is the particle's own.
    Local {
        planes: &'c Planes<'p, P>,
        me: usize,
        end: usize,
    },
    /// The stencil rows, read in place.
    Rows(&'c [(u32, u32)]),
}

/// Appends the ids of the particles at positions `0..end` of a local copy
/// within the radius of the one at `me` (itself excluded) to `out` at
/// `cursor` (counting past its end without writing); returns the new
/// cursor. Distances [`CHUNK`] at a time; per lane group a hit mask and
/// [`LANE_LISTS`] append the hits' positions to a chunk-sized list
/// without a branch; then one tight loop turns the listed positions into
/// ids in `out` (one read and one write per hit, not per candidate).
#[inline(always)]
fn gather_local<P: Point>(
    planes: &Planes<'_, P>,
    me: usize,
    end: usize,
    r2: f32,
    out: &mut [u32],
    cursor: usize,
) -> usize {
    let ids = planes.ids();
    let p = planes.pos_or_zero(me);
    let mut d = [0.0f32; CHUNK];
    let mut hits = [0u32; CHUNK + LANES];
    let mut c = cursor;
    let mut j = 0;
    while j < end {
        let m = (end - j).min(CHUNK);
        planes.chunk_distances(p, j, m, &mut d);
        let padded = m.div_ceil(LANES) * LANES;
        let mut h = 0usize;
        for (g, dg) in d[..padded].chunks_exact(LANES).enumerate() {
            let base = j + g * LANES;
            let ex = me.wrapping_sub(base);
            let mask =
                hit_mask(dg, r2, m - g * LANES) & !(usize::from(ex < LANES) << (ex & (LANES - 1)));
            if let Some(dst) = hits.get_mut(h..h + LANES) {
                for (o, &l) in dst.iter_mut().zip(&LANE_LISTS[mask]) {
                    *o = base as u32 + u32::from(l);
                }
            }
            h += usize::from(BIT_COUNT[mask]);
        }
        let h = h.min(CHUNK);
        if let Some(dst) = out.get_mut(c..c + h) {
            for (o, &k) in dst.iter_mut().zip(&hits[..h]) {
                *o = ids.get(k as usize).copied().unwrap_or(0);
            }
        } else if c < out.len() {
            for (x, &k) in hits[..h].iter().enumerate() {
                if let Some(o) = out.get_mut(c + x) {
                    *o = ids.get(k as usize).copied().unwrap_or(0);
                }
            }
        }
        c += h;
        j += m;
    }
    c
}

/// Appends the ids of the particles at sorted positions `lo..hi` within the
/// radius of `p` to `out` at `cursor` (counting past its end without
/// writing); returns the new cursor. Branch-free when `out` has room for
/// every candidate: each id is written and the cursor advances only on a
/// hit.
#[inline(always)]
fn gather<P: Point>(
    parts: &Planes<'_, P>,
    p: P,
    lo: usize,
    hi: usize,
    r2: f32,
    out: &mut [u32],
    cursor: usize,
) -> usize {
    let ids = parts.ids();
    if let Some(dst) = out.get_mut(cursor..cursor + (hi - lo)) {
        let mut m = 0;
        parts.for_each_distance(p, lo, hi, |k, d2| {
            if let Some(slot) = dst.get_mut(m) {
                *slot = ids[k];
            }
            m += (d2 < r2) as usize;
        });
        cursor + m
    } else if cursor >= out.len() {
        // Nothing more can be written: count only.
        let mut c = cursor;
        parts.for_each_distance(p, lo, hi, |_, d2| c += (d2 < r2) as usize);
        c
    } else {
        // The output ends inside this range: write while there is room.
        let mut c = cursor;
        parts.for_each_distance(p, lo, hi, |k, d2| {
            if d2 < r2 {
                if let Some(slot) = out.get_mut(c) {
                    *slot = ids[k];
                }
                c += 1;
            }
        });
        c
    }
}

/// The pairs of one particle `a`: the sorted positions of its hits,
/// collected without a branch per candidate (distances [`CHUNK`] at a
/// time, then per group of [`LANES`] a hit mask turned into a list of hits
/// by [`LANE_LISTS`]), then handed to the caller's closure in a tight loop
/// that reloads each partner's id and recomputes its squared distance (the
/// same operations, so the same bits). The positions index the planes
/// passed to [`add`](Self::add), which must be the ones passed to the next
/// [`flush`](Self::flush) or [`begin`](Self::begin).
struct Batch<P: Point, F> {
    hits: [u32; BATCH],
    len: usize,
    a: u32,
    p: P,
    r2: f32,
    f: F,
}

/// Hits buffered before a flush.
const BATCH: usize = 128;

impl<P: Point, F: FnMut(u32, u32, f32)> Batch<P, F> {
    fn new(f: F, r2: f32) -> Self {
        Self {
            hits: [0; BATCH],
            len: 0,
            a: 0,
            p: P::ZERO,
            r2,
            f,
        }
    }

    /// Hands the buffered pairs, hits in `parts`, to the closure.
    #[inline(always)]
    fn flush(&mut self, parts: &Planes<'_, P>) {
        let (a, p) = (self.a, self.p);
        // Every hit is a position below `parts.len()` (the `_or_zero`
        // reads only spare the loop a panic path).
        for &k in &self.hits[..self.len.min(BATCH)] {
            let k = k as usize;
            let d2 = p.distance_squared(parts.pos_or_zero(k));
            (self.f)(a, parts.id_or_zero(k), d2);
        }
        self.len = 0;
    }

    /// Starts collecting the pairs of particle `a` at `p` (flushing the
    /// previous particle's, whose hits are in `parts`).
    #[inline(always)]
    fn begin(&mut self, parts: &Planes<'_, P>, a: u32, p: P) {
        self.flush(parts);
        self.a = a;
        self.p = p;
    }

    /// Appends one lane group's hits: `d` the distances of the particles
    /// from position `base`, the first `valid` of them candidates.
    #[inline(always)]
    fn push_lanes(&mut self, d: &[f32], base: usize, valid: usize) {
        let mask = hit_mask(d, self.r2, valid);
        let len = self.len;
        if let Some(dst) = self.hits.get_mut(len..len + LANES) {
            for (h, &l) in dst.iter_mut().zip(&LANE_LISTS[mask]) {
                *h = base as u32 + u32::from(l);
            }
        }
        self.len = len + usize::from(BIT_COUNT[mask]);
    }

    /// Tests the current particle against the particles at positions
    /// `lo..hi` of `parts`.
    #[inline(always)]
    fn add(&mut self, parts: &Planes<'_, P>, lo: usize, hi: usize) {
        if cfg!(target_os = "none") {
            // No vector unit, little stack: each candidate written, the
            // length advanced on a hit.
            let (p, r2) = (self.p, self.r2);
            for k in lo..hi {
                if self.len >= BATCH {
                    self.flush(parts);
                }
                let d2 = p.distance_squared(parts.pos_or_zero(k));
                if let Some(h) = self.hits.get_mut(self.len) {
                    *h = k as u32;
                }
                self.len += usize::from(d2 < r2);
            }
            return;
        }
        let mut d = [0.0f32; CHUNK];
        let mut k = lo;
        while k < hi {
            let m = (hi - k).min(CHUNK);
            parts.chunk_distances(self.p, k, m, &mut d);
            let padded = m.div_ceil(LANES) * LANES;
            if self.len + padded > BATCH {
                self.flush(parts);
            }
            for (c, dc) in d[..padded].chunks_exact(LANES).enumerate() {
                self.push_lanes(dc, k + c * LANES, m - c * LANES);
            }
            k += m;
        }
    }
}

impl<P, T, S, C> Validate for CellSortedHash<P, T, S, C>
where
    P: Point,
    T: Storage<TableSlot>,
    S: Storage<SortedParticle<P>>,
    C: Storage<CellRecord<P>>,
{
    fn validate(&self) -> Result<(), Corruption> {
        const W: &str = "CellSortedHash";
        let n = self.len as usize;
        let runs = self.runs as usize;
        ensure(n <= self.capacity(), W, "len <= capacity")?;
        ensure(runs <= n, W, "runs <= len")?;
        if n == 0 {
            return Ok(());
        }
        let table = self.table.as_ref();
        ensure(
            table.len() == self.grid.table_len(),
            W,
            "grid mask matches table",
        )?;
        let v = self.view();
        let parts = v.parts;
        let records = self.records.as_ref();
        // Ranks and ids are inverse permutations.
        ensure(parts.len() == n, W, "planes hold len particles")?;
        for (k, &id) in parts.ids().iter().enumerate() {
            ensure((id as usize) < n, W, "sorted id < len")?;
            ensure(
                records[id as usize].rank as usize == k,
                W,
                "rank inverts sorted ids",
            )?;
        }
        ensure(
            runs > 0 && records[0].start == 0,
            W,
            "first run starts at 0",
        )?;
        let mut identity = true;
        let mut prev_key = None;
        for s in 0..runs {
            let (lo, hi) = v.range(s);
            ensure(
                lo < hi && hi <= n,
                W,
                "runs non-empty, increasing, in range",
            )?;
            let cell = self.grid.cell(parts.pos(lo)).map_err(|_| Corruption {
                structure: W,
                invariant: "stored positions within the grid range",
            })?;
            let key = P::cell_row_key(cell);
            ensure(
                prev_key.is_none_or(|p| p < key),
                W,
                "runs in strict row-major order",
            )?;
            prev_key = Some(key);
            ensure(self.find(&v, cell) == Some(s), W, "run found by its cell")?;
            let mut prev_id = None;
            for k in lo..hi {
                let id = parts.id(k);
                let c = self.grid.cell(parts.pos(k)).map_err(|_| Corruption {
                    structure: W,
                    invariant: "stored positions within the grid range",
                })?;
                ensure(c == cell, W, "particle in its cell's run")?;
                ensure(
                    prev_id.is_none_or(|p| p < id),
                    W,
                    "input order within a run",
                )?;
                prev_id = Some(id);
                identity &= id as usize == k;
            }
        }
        ensure(identity == self.identity, W, "identity flag exact")?;
        if self.is_indexed() {
            // Every stamped slot holds a distinct run, and all runs are there.
            let mut stamped = 0usize;
            for t in table.iter().filter(|t| t.stamp == self.stamp) {
                stamped += 1;
                ensure((t.slot as usize) < runs, W, "indexed run in range")?;
            }
            ensure(stamped == runs, W, "table holds every run once")?;
            // Every run is found where its probe sequence leads.
            let v = self.view();
            for r in 0..runs {
                ensure(
                    self.find(&v, v.cell(r)) == Some(r),
                    W,
                    "every run found by its cell",
                )?;
            }
        }
        ensure(
            self.blocks <= 1
                || (self.blocks as usize == INDEX_BLOCKS
                    && table.len() >= INDEX_BLOCKS * MIN_INDEX_BLOCK),
            W,
            "index blocks",
        )?;
        Ok(())
    }
}

impl<P, T, S, C> crate::inspect::Inspect for CellSortedHash<P, T, S, C>
where
    P: Point,
    T: Storage<TableSlot>,
    S: Storage<SortedParticle<P>>,
    C: Storage<CellRecord<P>>,
{
    type Stats = crate::inspect::SearchStats;

    /// The buffers' bytes (the formula in [`crate::uniform`]'s table).
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.table.as_ref())
            + core::mem::size_of_val(self.particles.as_ref())
            + core::mem::size_of_val(self.records.as_ref())
    }

    /// `O(T)`: counts the slots indexing the last build's cells (one per
    /// occupied cell when the table indexes them, none otherwise).
    fn stats(&self) -> Self::Stats {
        let table = self.table.as_ref();
        crate::inspect::SearchStats {
            particles: self.len as usize,
            capacity: self.particles.as_ref().len(),
            radius: self.grid.radius(),
            table_slots: table.len(),
            occupied_slots: if !self.is_indexed() {
                0
            } else {
                table.iter().filter(|s| s.stamp == self.stamp).count()
            },
        }
    }
}
