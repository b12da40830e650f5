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

mod par;

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

/// A particle in cell order: its position and its index in the build input.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SortedParticle<P> {
    pos: P,
    id: u32,
}

impl<P: Point> Default for SortedParticle<P> {
    /// The unused value, [`SortedParticle::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<P: Point> SortedParticle<P> {
    /// An unused entry.
    pub const EMPTY: Self = Self {
        pos: P::ZERO,
        id: 0,
    };

    /// Position.
    pub fn position(&self) -> P {
        self.pos
    }

    /// Index in the slice given to `build`.
    pub fn id(&self) -> u32 {
        self.id
    }
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
    /// probed for within the block of its home slot.
    blocks: u32,
    _p: PhantomData<P>,
}

/// The runs of a build, read-only: the sweeps' and queries' view.
struct Runs<'a, P: Point> {
    parts: &'a [SortedParticle<P>],
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
            .cell_unchecked(self.parts[self.records[s].start as usize].pos)
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
    /// `O(cells²)` when it is too small to.
    pub fn colliding_cells(&self) -> usize {
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

    /// The particles in cell order.
    pub fn sorted(&self) -> &[SortedParticle<P>] {
        &self.particles.as_ref()[..self.len as usize]
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

    /// Writes `src` permuted into cell order: `dst[k] = src[sorted()[k].id()]`.
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
        for (d, sp) in dst.iter_mut().zip(self.sorted()) {
            *d = src[sp.id as usize];
        }
        Ok(())
    }

    /// The end of every build: indexes the runs by cell when the table has
    /// two slots per run (in blocks, filled by `exec`'s workers; see
    /// [`INDEX_BLOCKS`]), and records the build. The table's contents are
    /// the same for every executor.
    fn finish_build<E: crate::exec::Executor>(
        &mut self,
        exec: &E,
        grid: Grid<P>,
        n: usize,
        runs: usize,
        identity: bool,
    ) {
        let table = self.table.as_mut();
        let parts = &self.particles.as_ref()[..n];
        let records = self.records.as_ref();
        self.blocks = 1;
        if indexes(runs, table.len()) {
            advance_stamp(&mut self.stamp, || table.fill(TableSlot::EMPTY));
            let stamp = self.stamp;
            let home = |s: usize| {
                grid.bucket(grid.cell_unchecked(parts[records[s].start as usize].pos)) as usize
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
            parts: &self.particles.as_ref()[..self.len as usize],
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
        for (k, q) in v.parts[lo..hi].iter().enumerate() {
            let d2 = p.distance_squared(q.pos);
            if d2 < r2 && lo + k != skip {
                f(q.id, d2);
            }
        }
    }

    /// Calls `f(k, rows)` for every sorted position `k`, in order, with the
    /// ranges of the 9 (3D) or 3 (2D) stencil rows around its cell.
    #[inline(always)]
    fn sweep_rows(&self, f: impl FnMut(usize, &[(u32, u32)])) {
        let v = self.view();
        self.sweep_rows_in(&v, 0, v.runs, f);
    }

    /// [`sweep_rows`](Self::sweep_rows) over runs `s0..s1` only.
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

    /// The pairs of runs `s0..s1` (each run's own pairs, then against the
    /// next cell of its row and the forward rows), into `out`.
    #[inline(always)]
    fn pair_range<F: FnMut(u32, u32, f32)>(
        &self,
        v: &Runs<'_, P>,
        s0: usize,
        s1: usize,
        out: &mut Batch<F>,
    ) {
        let parts = v.parts;
        let nrows = P::HALF_ROWS.len().min(MAX_HALF_ROWS);
        let mut cursors = [RowCursor::new(v.key(0)); MAX_HALF_ROWS];
        v.place(s0, &P::HALF_ROWS[..nrows], &mut cursors[..nrows]);
        let mut ranges = [(0u32, 0u32); MAX_HALF_ROWS];
        let mut next_key = v.key(s0);
        for s in s0..s1.min(v.runs) {
            let key = next_key;
            next_key = v.key(s + 1);
            let (lo, hi) = v.range(s);
            let mine = &parts[lo..hi];
            // The slices of the forward cells: the next cell of the row,
            // then the three cells of each forward row.
            let mut fwd = [(0u32, 0u32); MAX_HALF_ROWS + 1];
            v.rows(s, P::HALF_ROWS, &mut cursors[..nrows], &mut ranges[..nrows]);
            let mut m = 0;
            if next_key == key + 1 {
                let (lo2, hi2) = v.range(s + 1);
                fwd[0] = (lo2 as u32, hi2 as u32);
                m = 1;
            }
            for &r in &ranges[..nrows] {
                if r.0 < r.1 {
                    fwd[m] = r;
                    m += 1;
                }
            }
            for (x, a) in mine.iter().enumerate() {
                out.begin(a.id);
                out.add(a.pos, &mine[x + 1..]);
                for &(lo2, hi2) in &fwd[..m] {
                    out.add(a.pos, &parts[lo2 as usize..hi2 as usize]);
                }
            }
        }
    }

    /// Appends the neighbours of the particle at sorted position `k` found
    /// in `rows` to `out` at `cursor` (counting without writing past its
    /// end); returns the new cursor.
    #[inline(always)]
    fn gather_one(&self, k: usize, rows: &[(u32, u32)], out: &mut [u32], cursor: usize) -> usize {
        let parts = &self.particles.as_ref()[..self.len as usize];
        let r2 = self.grid.radius_sq();
        let me = parts[k].pos;
        let mut cursor = cursor;
        for &(lo, hi) in rows {
            let (lo, hi) = (lo as usize, hi as usize);
            if (lo..hi).contains(&k) {
                cursor = gather(me, &parts[lo..k], r2, out, cursor);
                cursor = gather(me, &parts[k + 1..hi], r2, out, cursor);
            } else {
                cursor = gather(me, &parts[lo..hi], r2, out, cursor);
            }
        }
        cursor
    }
}

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
    parts: &mut [SortedParticle<P>],
    records: &mut [CellRecord<P>],
) -> usize {
    if let Some(d) = DenseBox::new(grid, lo, hi, table.len()) {
        d.sort(grid, positions, table, parts, records);
    } else if !counting_sort(grid, positions, table, stamp, parts, records) {
        comparison_sort(grid, positions, parts, records);
    }
    mark_runs(grid, parts, records)
}

/// Copies `positions` if they are already in cell order, marking the runs
/// as it goes; returns the number of runs, or `None` at the first particle
/// out of order (the buffers then hold garbage the sort overwrites).
fn copy_if_sorted<P: Point>(
    grid: &Grid<P>,
    positions: &[P],
    parts: &mut [SortedParticle<P>],
    records: &mut [CellRecord<P>],
) -> Option<usize> {
    let mut prev = None;
    let mut runs = 0usize;
    for (i, (&p, sp)) in positions.iter().zip(parts.iter_mut()).enumerate() {
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
        *sp = SortedParticle {
            pos: p,
            id: i as u32,
        };
        records[i].rank = i as u32;
    }
    Some(runs)
}

/// Counting sort of `positions` by cell through `table` (open addressing,
/// at most `table.len() / 2` occupied cells); on return `parts` holds them
/// in cell order and `records[i].rank` the sorted position of particle `i`.
/// `false`, with the buffers holding garbage, if the input has more cells
/// than that.
fn counting_sort<P: Point>(
    grid: &Grid<P>,
    positions: &[P],
    table: &mut [TableSlot],
    stamp: &mut u32,
    parts: &mut [SortedParticle<P>],
    records: &mut [CellRecord<P>],
) -> bool {
    let mask = table.len() - 1;
    let limit = table.len() / 2;
    advance_stamp(stamp, || table.fill(TableSlot::EMPTY));
    let st = *stamp;
    // Pass 1: each particle's cell (consecutive particles of one cell probe
    // once), numbered in order of first appearance; counts in `start`, the
    // cell number in `rank`, one representative position per cell in
    // `parts[cell number]`.
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
                        parts[runs] = SortedParticle {
                            pos: p,
                            id: runs as u32,
                        };
                        records[runs].start = 0;
                        runs += 1;
                        break (runs - 1) as u32;
                    }
                    if grid.cell_unchecked(parts[ts.slot as usize].pos) == c {
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
    // The cells in row-major order (one per run, so the ids, which number
    // the runs here, never decide); counts become each cell's cursor.
    sort_by_cell(grid, &mut parts[..runs]);
    let mut total = 0u32;
    for sp in &parts[..runs] {
        let rec = &mut records[sp.id as usize];
        let count = rec.start;
        rec.start = total;
        total += count;
    }
    // Pass 2: scatter (the sorted cell list is no longer needed).
    for (i, &p) in positions.iter().enumerate() {
        let r = records[i].rank as usize;
        let k = records[r].start;
        records[r].start = k + 1;
        parts[k as usize] = SortedParticle {
            pos: p,
            id: i as u32,
        };
        records[i].rank = k;
    }
    true
}

/// The cells of the input's bounding box, numbered densely in row-major
/// order, when there are no more of them than table slots: the table then
/// serves as a direct-mapped count array (no hashing, no probing, no sort of
/// the cells), the common case of a fluid filling its box.
struct DenseBox {
    lo: [i32; 3],
    ext: [usize; 3],
    cells: usize,
}

impl DenseBox {
    fn new<P: Point>(grid: &Grid<P>, lo: P, hi: P, table_len: usize) -> Option<Self> {
        let (cl, ch) = (grid.cell_unchecked(lo), grid.cell_unchecked(hi));
        let mut out = Self {
            lo: [0; 3],
            ext: [1; 3],
            cells: 1,
        };
        for k in 0..P::DIM.min(3) {
            out.lo[k] = P::cell_coord(cl, k);
            out.ext[k] = (P::cell_coord(ch, k) - out.lo[k]) as usize + 1;
            out.cells = out.cells.checked_mul(out.ext[k])?;
        }
        (out.cells <= table_len).then_some(out)
    }

    /// Dense number of a cell of the box (x fastest).
    #[inline(always)]
    fn index<P: Point>(&self, c: P::Cell) -> usize {
        let mut d = 0usize;
        for k in (0..P::DIM.min(3)).rev() {
            d = d * self.ext[k] + (P::cell_coord(c, k) - self.lo[k]) as usize;
        }
        d
    }

    /// Counting sort of `positions` by dense cell through the first `cells`
    /// slots of `table` (left with stamp 0, i.e. empty); on return `parts`
    /// holds them in cell order and `records[i].rank` the sorted position of
    /// particle `i`.
    fn sort<P: Point>(
        &self,
        grid: &Grid<P>,
        positions: &[P],
        table: &mut [TableSlot],
        parts: &mut [SortedParticle<P>],
        records: &mut [CellRecord<P>],
    ) {
        let counts = &mut table[..self.cells];
        counts.fill(TableSlot::EMPTY);
        for (&p, rec) in positions.iter().zip(records.iter_mut()) {
            let d = self.index::<P>(grid.cell_unchecked(p));
            counts[d].slot += 1;
            rec.rank = d as u32;
        }
        let mut total = 0u32;
        for c in counts.iter_mut() {
            let n = c.slot;
            c.slot = total;
            total += n;
        }
        for (i, (&p, rec)) in positions.iter().zip(records.iter_mut()).enumerate() {
            let c = &mut counts[rec.rank as usize];
            let k = c.slot;
            c.slot = k + 1;
            parts[k as usize] = SortedParticle {
                pos: p,
                id: i as u32,
            };
            rec.rank = k;
        }
    }
}

/// Sorts by (row key of the cell, id): the one sort of the build (one
/// instantiation, which matters in firmware).
#[inline(never)]
fn sort_by_cell<P: Point>(grid: &Grid<P>, parts: &mut [SortedParticle<P>]) {
    crate::sort::sort_by_key(parts, |sp| {
        (P::cell_row_key(grid.cell_unchecked(sp.pos)), sp.id)
    });
}

/// Comparison sort by (cell, id): any table size, `O(N log N)`.
fn comparison_sort<P: Point>(
    grid: &Grid<P>,
    positions: &[P],
    parts: &mut [SortedParticle<P>],
    records: &mut [CellRecord<P>],
) {
    for (i, (&p, sp)) in positions.iter().zip(parts.iter_mut()).enumerate() {
        *sp = SortedParticle {
            pos: p,
            id: i as u32,
        };
    }
    sort_by_cell(grid, parts);
    for (k, sp) in parts.iter().enumerate() {
        records[sp.id as usize].rank = k as u32;
    }
}

/// Writes the run starts of particles in cell order; returns the number of
/// runs.
fn mark_runs<P: Point>(
    grid: &Grid<P>,
    parts: &[SortedParticle<P>],
    records: &mut [CellRecord<P>],
) -> usize {
    let mut runs = 0usize;
    let mut prev = None;
    for (k, sp) in parts.iter().enumerate() {
        let key = P::cell_row_key(grid.cell_unchecked(sp.pos));
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
        // Validated: from here on nothing can fail.
        let n = positions.len();
        let parts = &mut self.particles.as_mut()[..n];
        let records = &mut self.records.as_mut()[..n];
        let (runs, identity) = match copy_if_sorted(&grid, positions, parts, records) {
            Some(runs) => (runs, true),
            None => (
                sort_unsorted(
                    &grid,
                    lo,
                    hi,
                    positions,
                    self.table.as_mut(),
                    &mut self.stamp,
                    parts,
                    records,
                ),
                false,
            ),
        };
        self.finish_build(&crate::exec::Serial, grid, n, runs, identity);
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
    /// same lists as [`neighbor_lists`](NeighborSearch::neighbor_lists);
    /// otherwise the trait's default.
    fn par_neighbor_lists<E: crate::exec::Executor>(
        &self,
        exec: &E,
        offsets: &mut [u32],
        indices: &mut [u32],
    ) -> Result<usize, Error>
    where
        Self: Sync,
    {
        if self.identity {
            self.par_lists_sweep(exec, offsets, indices)
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
        Some(self.particles.as_ref()[k].pos)
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, mut f: F) -> Result<(), Error> {
        if id >= self.len {
            return Err(Error::UnknownId { id });
        }
        let v = self.view();
        let k = self.records.as_ref()[id as usize].rank as usize;
        let p = v.parts[k].pos;
        let c = self.grid.cell_unchecked(p);
        for &d in P::STENCIL {
            self.scan_cell(&v, p, P::cell_add(c, d), k, &mut f);
        }
        Ok(())
    }

    /// The ids in cell order (cells row-major, input order within a cell):
    /// `sorted()[k].id()`.
    fn spatial_order(&self, order: &mut [u32]) -> Result<(), Error> {
        let parts = self.sorted();
        let available = order.len();
        let out = order.get_mut(..parts.len()).ok_or(Error::BufferTooSmall {
            needed: parts.len(),
            available,
        })?;
        for (o, sp) in out.iter_mut().zip(parts) {
            *o = sp.id;
        }
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
        let parts = self.sorted();
        let total = if self.identity {
            let mut cursor = 0usize;
            self.sweep_rows(|k, rows| {
                offsets[k] = cursor.min(NONE as usize) as u32;
                cursor = self.gather_one(k, rows, indices, cursor);
            });
            offsets[n] = cursor.min(NONE as usize) as u32;
            cursor
        } else {
            // Sweep 1: degrees, stored at offsets[id + 1].
            offsets[0] = 0;
            self.sweep_rows(|k, rows| {
                let deg = self.gather_one(k, rows, &mut [], 0);
                offsets[parts[k].id as usize + 1] = deg as u32;
            });
            let total = crate::csr::prefix_sum(offsets);
            if total <= indices.len() && total < NONE as usize {
                // Sweep 2: each list written at its offset. Each particle
                // gets exactly its own segment, so the branch-free writes
                // never spill into a list already written.
                self.sweep_rows(|k, rows| {
                    let id = parts[k].id as usize;
                    let (at, end) = (offsets[id] as usize, offsets[id + 1] as usize);
                    self.gather_one(k, rows, &mut indices[at..end], 0);
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

    /// One sweep in cell order: each cell's pairs, then against the next
    /// cell of its row and the forward rows, found by cursors.
    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, f: F) {
        let v = self.view();
        let mut out = Batch::new(f, self.grid.radius_sq());
        self.pair_range(&v, 0, v.runs, &mut out);
        out.flush();
    }
}

/// Calls `f(b, d²)` for every particle `b` of `cands`, computing the
/// distances four at a time: four independent computations vectorise.
#[inline(always)]
fn for_each_distance<P: Point>(
    p: P,
    cands: &[SortedParticle<P>],
    mut f: impl FnMut(&SortedParticle<P>, f32),
) {
    let mut quads = cands.chunks_exact(4);
    for q in &mut quads {
        let d = [
            p.distance_squared(q[0].pos),
            p.distance_squared(q[1].pos),
            p.distance_squared(q[2].pos),
            p.distance_squared(q[3].pos),
        ];
        for (b, d2) in q.iter().zip(d) {
            f(b, d2);
        }
    }
    for b in quads.remainder() {
        f(b, p.distance_squared(b.pos));
    }
}

/// Appends the ids of the particles of `cands` within the radius of `p` to
/// `out` at `cursor` (counting past its end without writing); returns the new
/// cursor. Branch-free when `out` has room for every candidate: each id is
/// written and the cursor advances only on a hit.
#[inline(always)]
fn gather<P: Point>(
    p: P,
    cands: &[SortedParticle<P>],
    r2: f32,
    out: &mut [u32],
    cursor: usize,
) -> usize {
    if let Some(dst) = out.get_mut(cursor..cursor + cands.len()) {
        let mut m = 0;
        for_each_distance(p, cands, |b, d2| {
            if let Some(slot) = dst.get_mut(m) {
                *slot = b.id;
            }
            m += (d2 < r2) as usize;
        });
        cursor + m
    } else if cursor >= out.len() {
        // Nothing more can be written: count only.
        let mut c = cursor;
        for_each_distance(p, cands, |_, d2| c += (d2 < r2) as usize);
        c
    } else {
        // The output ends inside this run: write while there is room.
        let mut c = cursor;
        for q in cands {
            if p.distance_squared(q.pos) < r2 {
                if let Some(slot) = out.get_mut(c) {
                    *slot = q.id;
                }
                c += 1;
            }
        }
        c
    }
}

/// The pairs of one particle `a`, collected branch-free into a small stack
/// buffer (the partner's id and the squared distance: two stores per
/// candidate), then handed to the caller's closure in a tight loop: the
/// within-radius test costs no branch misprediction.
struct Batch<F> {
    buf: [(u32, f32); BATCH],
    len: usize,
    a: u32,
    r2: f32,
    f: F,
}

/// Pairs buffered before a flush (a power of two: indices are masked).
const BATCH: usize = 128;

impl<F: FnMut(u32, u32, f32)> Batch<F> {
    fn new(f: F, r2: f32) -> Self {
        Self {
            buf: [(0, 0.0); BATCH],
            len: 0,
            a: 0,
            r2,
            f,
        }
    }

    /// Hands the buffered pairs to the closure.
    #[inline(always)]
    fn flush(&mut self) {
        let a = self.a;
        for &(j, d2) in &self.buf[..self.len.min(BATCH)] {
            (self.f)(a, j, d2);
        }
        self.len = 0;
    }

    /// Starts collecting the pairs of particle `a` (flushing the previous
    /// particle's).
    #[inline(always)]
    fn begin(&mut self, a: u32) {
        self.flush();
        self.a = a;
    }

    /// Tests the current particle, at `p`, against every particle of `bs`.
    #[inline(always)]
    fn add<P: Point>(&mut self, p: P, bs: &[SortedParticle<P>]) {
        for chunk in bs.chunks(BATCH) {
            if self.len + chunk.len() > BATCH {
                self.flush();
            }
            let (buf, r2) = (&mut self.buf, self.r2);
            let mut len = self.len;
            for_each_distance(p, chunk, |b, d2| {
                buf[len & (BATCH - 1)] = (b.id, d2);
                len += (d2 < r2) as usize;
            });
            self.len = len;
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
        for (k, sp) in parts.iter().enumerate() {
            ensure((sp.id as usize) < n, W, "sorted id < len")?;
            ensure(
                records[sp.id as usize].rank as usize == k,
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
            let cell = self.grid.cell(parts[lo].pos).map_err(|_| Corruption {
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
            for (k, q) in parts[lo..hi].iter().enumerate() {
                let c = self.grid.cell(q.pos).map_err(|_| Corruption {
                    structure: W,
                    invariant: "stored positions within the grid range",
                })?;
                ensure(c == cell, W, "particle in its cell's run")?;
                ensure(
                    prev_id.is_none_or(|p| p < q.id),
                    W,
                    "input order within a run",
                )?;
                prev_id = Some(q.id);
                identity &= q.id as usize == lo + k;
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
            self.blocks == 1
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
