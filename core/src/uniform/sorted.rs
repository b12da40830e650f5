//! Strategy (a): particles counting-sorted by bucket, with start offsets.
//!
//! The layout of the GPU pipeline (cell index per particle, sort by cell,
//! offset of each cell's first particle), built here on the CPU in `O(N)`
//! without touching empty table slots.

use core::marker::PhantomData;

use super::{Grid, advance_stamp};
use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::Point;
use crate::storage::Storage;
use crate::traits::NeighborSearch;

/// A table slot: the build it was written in and the occupied-bucket record
/// it points to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TableSlot {
    stamp: u32,
    slot: u32,
}

impl TableSlot {
    /// A never-used slot.
    pub const EMPTY: Self = Self { stamp: 0, slot: 0 };
}

/// A particle in cell order: its position and its index in the build input.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SortedParticle<P> {
    pos: P,
    id: u32,
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

/// Per-index bookkeeping of a [`CellSortedHash`]. Entry `i` holds the rank
/// (sorted position) of input particle `i`, and, for `i` below the number of
/// occupied buckets, the start, cell and purity of the `i`-th occupied bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CellRecord<P: Point> {
    rank: u32,
    start: u32,
    cell: P::Cell,
    /// Non-zero when particles of more than one cell share this bucket.
    mixed: u32,
}

impl<P: Point> CellRecord<P> {
    /// An unused entry.
    pub const EMPTY: Self = Self {
        rank: 0,
        start: 0,
        cell: P::CELL_ZERO,
        mixed: 0,
    };
}

/// Uniform spatial hash with cell-sorted buckets (strategy (a)).
///
/// A build counting-sorts particle indices by bucket: one pass assigns each
/// particle its bucket and counts, one pass over the *occupied* buckets turns
/// counts into start offsets, one pass scatters positions and ids into bucket
/// order. Empty slots are never visited: a bucket is occupied when its stamp
/// is the current build's. Queries read each neighbouring bucket as one
/// contiguous run of positions.
///
/// Buckets are numbered in order of first occurrence in the input, so input
/// that is already in cell order (see [`reorder`](Self::reorder)) comes out
/// of the sort unchanged and is read sequentially.
///
/// # Memory
///
/// `T·8 + N·(size_of::<P>() + 4) + N·(size_of::<P::Cell>() + 12)` bytes:
/// `8T + 40N` in 3D, `8T + 32N` in 2D, for a table of `T` slots and a
/// capacity of `N` particles (the lengths of the three buffers).
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
    buckets: u32,
    stamp: u32,
    identity: bool,
    /// Input particles whose cell equals their predecessor's (input coherence).
    coherent: u32,
    _p: PhantomData<P>,
}

impl<P, T, S, C> CellSortedHash<P, T, S, C>
where
    P: Point,
    T: Storage<TableSlot>,
    S: Storage<SortedParticle<P>>,
    C: Storage<CellRecord<P>>,
{
    /// An empty hash over a table of `T` slots (a power of two) and two
    /// per-particle buffers whose shorter length is the capacity.
    pub const fn new(table: T, particles: S, records: C) -> Self {
        Self {
            table,
            particles,
            records,
            grid: Grid::EMPTY,
            len: 0,
            buckets: 0,
            stamp: 0,
            identity: true,
            coherent: 0,
            _p: PhantomData,
        }
    }

    /// Most particles a build accepts.
    pub fn capacity(&self) -> usize {
        self.particles
            .as_ref()
            .len()
            .min(self.records.as_ref().len())
            .min(u32::MAX as usize - 1)
    }

    /// The grid of the last build.
    pub fn grid(&self) -> &Grid<P> {
        &self.grid
    }

    /// Number of occupied buckets.
    pub fn occupied_buckets(&self) -> usize {
        self.buckets as usize
    }

    /// Number of occupied buckets holding particles of more than one cell
    /// (hash collisions between occupied cells); `O(buckets)`.
    pub fn mixed_buckets(&self) -> usize {
        self.records.as_ref()[..self.buckets as usize]
            .iter()
            .filter(|r| r.mixed != 0)
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
        self.buckets = 0;
        self.identity = true;
        // Stale entries are told apart by the stamp of the next build.
    }

    /// Writes `src` permuted into cell order: `dst[k] = src[sorted()[k].id()]`.
    /// Rebuilding from data reordered this way makes every bucket a
    /// contiguous, sequentially read run (better cache use for the caller's
    /// own per-particle arrays too). Ids refer to the new order after the
    /// next build.
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

    /// Range of particles of occupied bucket `s`.
    #[inline(always)]
    fn range(records: &[CellRecord<P>], buckets: usize, n: usize, s: usize) -> (usize, usize) {
        let lo = records[s].start as usize;
        let hi = if s + 1 < buckets {
            records[s + 1].start as usize
        } else {
            n
        };
        (lo, hi)
    }

    /// The occupied bucket a cell hashes to, if any.
    #[inline(always)]
    fn lookup(&self, table: &[TableSlot], c: P::Cell) -> Option<usize> {
        let ts = table[self.grid.bucket(c) as usize];
        if ts.stamp == self.stamp {
            Some(ts.slot as usize)
        } else {
            None
        }
    }

    /// Appends the neighbours of the particle at sorted index `k` to `out`
    /// at `cursor` (counting without writing past its end); returns the new
    /// cursor.
    #[inline]
    fn gather_one(
        &self,
        k: usize,
        cache: &mut RunCache<P>,
        out: &mut [u32],
        cursor: usize,
    ) -> usize {
        let parts = &self.particles.as_ref()[..self.len as usize];
        let grid = &self.grid;
        let r2 = grid.radius_sq();
        let me = parts[k];
        let c = grid.cell_unchecked(me.pos);
        if cache.cell != Some(c) {
            cache.len = self.resolve(c, &mut cache.runs);
            cache.cell = Some(c);
        }
        let mut cursor = cursor;
        for run in &cache.runs[..cache.len] {
            let (lo, hi) = (run.lo as usize, run.hi as usize);
            if run.check {
                // A run shared by several cells (rare): filter by cell.
                for (x, q) in parts[lo..hi].iter().enumerate() {
                    let d2 = me.pos.distance_squared(q.pos);
                    if d2 < r2 && lo + x != k && grid.cell_unchecked(q.pos) == run.cell {
                        if let Some(slot) = out.get_mut(cursor) {
                            *slot = q.id;
                        }
                        cursor += 1;
                    }
                }
            } else if (lo..hi).contains(&k) {
                cursor = gather(me.pos, &parts[lo..k], r2, out, cursor);
                cursor = gather(me.pos, &parts[k + 1..hi], r2, out, cursor);
            } else {
                cursor = gather(me.pos, &parts[lo..hi], r2, out, cursor);
            }
        }
        cursor
    }

    /// The runs holding particles of the cells around `c` (stencil order);
    /// returns how many were found.
    fn resolve(&self, c: P::Cell, runs: &mut [Run<P>; 27]) -> usize {
        let table = self.table.as_ref();
        let records = self.records.as_ref();
        let mut m = 0;
        for &d in P::STENCIL {
            let nc = P::cell_add(c, d);
            let Some(s) = self.lookup(table, nc) else {
                continue;
            };
            let rec = records[s];
            if rec.mixed == 0 && rec.cell != nc {
                continue;
            }
            let (lo, hi) = Self::range(records, self.buckets as usize, self.len as usize, s);
            runs[m] = Run {
                lo: lo as u32,
                hi: hi as u32,
                check: rec.mixed != 0,
                cell: nc,
            };
            m += 1;
        }
        m
    }

    /// Calls `f` for each particle of the run `[lo, hi)` whose cell is `c`
    /// (all of them when the bucket is pure and holds `c`), except index `skip`.
    #[inline(always)]
    fn scan_cell<F: FnMut(u32, f32)>(&self, p: P, c: P::Cell, skip: usize, f: &mut F) {
        let table = self.table.as_ref();
        let Some(s) = self.lookup(table, c) else {
            return;
        };
        let records = self.records.as_ref();
        let rec = records[s];
        let (lo, hi) = Self::range(records, self.buckets as usize, self.len as usize, s);
        let parts = &self.particles.as_ref()[lo..hi];
        let r2 = self.grid.radius_sq();
        if rec.mixed == 0 {
            if rec.cell != c {
                return;
            }
            for (k, q) in parts.iter().enumerate() {
                let d2 = p.distance_squared(q.pos);
                if d2 < r2 && lo + k != skip {
                    f(q.id, d2);
                }
            }
        } else {
            for (k, q) in parts.iter().enumerate() {
                let d2 = p.distance_squared(q.pos);
                if d2 < r2 && lo + k != skip && self.grid.cell_unchecked(q.pos) == c {
                    f(q.id, d2);
                }
            }
        }
    }
}

impl<P, T, S, C> NeighborSearch<P> for CellSortedHash<P, T, S, C>
where
    P: Point,
    T: Storage<TableSlot>,
    S: Storage<SortedParticle<P>>,
    C: Storage<CellRecord<P>>,
{
    fn build(&mut self, positions: &[P], radius: f32) -> Result<(), Error> {
        let cap = self.capacity();
        if positions.len() > cap {
            return Err(Error::CapacityExceeded { capacity: cap });
        }
        let grid = Grid::fit(radius, positions, self.table.as_ref().len())?;
        // Validated: from here on nothing can fail.
        let table = self.table.as_mut();
        advance_stamp(&mut self.stamp, || table.fill(TableSlot::EMPTY));
        let stamp = self.stamp;
        let records = self.records.as_mut();
        let n = positions.len();

        // Pass 1: occupied buckets (runs) and their counts.
        let mut buckets = 0usize;
        let mut coherent = 0u32;
        let mut prev = None;
        for &p in positions {
            let c = grid.cell_unchecked(p);
            coherent += (prev == Some(c)) as u32;
            prev = Some(c);
            let ts = &mut table[grid.bucket(c) as usize];
            if ts.stamp != stamp {
                *ts = TableSlot {
                    stamp,
                    slot: buckets as u32,
                };
                records[buckets] = CellRecord {
                    rank: 0,
                    start: 1,
                    cell: c,
                    mixed: 0,
                };
                buckets += 1;
            } else {
                let r = &mut records[ts.slot as usize];
                r.start += 1;
                r.mixed |= (r.cell != c) as u32;
            }
        }
        // Runs in Morton order of their cells, so that a sweep over the runs
        // finds its neighbours' table slots and particles in cache. Input in
        // the previous build's order is nearly sorted, which the sort
        // detects. Ranks are written only later, so moving whole records is
        // safe.
        records[..buckets].sort_unstable_by_key(|r| P::cell_morton(r.cell));
        // Pass 2: table slots point to the sorted runs; counts become starts.
        let mut run = 0u32;
        for (s, r) in records[..buckets].iter_mut().enumerate() {
            table[grid.bucket(r.cell) as usize].slot = s as u32;
            let count = r.start;
            r.start = run;
            run += count;
        }
        // Pass 3: scatter; `start` advances as a cursor, then is shifted back.
        let parts = self.particles.as_mut();
        let mut identity = true;
        for (i, &p) in positions.iter().enumerate() {
            let s = table[grid.bucket(grid.cell_unchecked(p)) as usize].slot as usize;
            let k = records[s].start;
            records[s].start = k + 1;
            parts[k as usize] = SortedParticle {
                pos: p,
                id: i as u32,
            };
            records[i].rank = k;
            identity &= k as usize == i;
        }
        for s in (1..buckets).rev() {
            records[s].start = records[s - 1].start;
        }
        if buckets > 0 {
            records[0].start = 0;
        }
        self.grid = grid;
        self.len = n as u32;
        self.buckets = buckets as u32;
        self.identity = identity;
        self.coherent = coherent;
        Ok(())
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
        let k = self.records.as_ref()[id as usize].rank as usize;
        let p = self.particles.as_ref()[k].pos;
        let c = self.grid.cell_unchecked(p);
        for &d in P::STENCIL {
            self.scan_cell(p, P::cell_add(c, d), k, &mut f);
        }
        Ok(())
    }

    fn for_each_within<F: FnMut(u32, f32)>(&self, point: P, mut f: F) -> Result<(), Error> {
        if self.len == 0 {
            return if point.is_finite() {
                Ok(())
            } else {
                Err(Error::NonFinite)
            };
        }
        let Some(c) = self.grid.query_cell(point)? else {
            return Ok(());
        };
        for &d in P::STENCIL {
            self.scan_cell(point, P::cell_add(c, d), usize::MAX, &mut f);
        }
        Ok(())
    }

    /// Input in cell order (most particles share their predecessor's cell)
    /// is served in one pass in id order, resolving the 27 (9) neighbour runs
    /// once per cell and writing each list sequentially. Other input is
    /// served in two sweeps over the runs in Morton order, one counting and
    /// one writing each particle's list at its offset, so that neighbour runs
    /// are read coherently whatever the ids.
    fn neighbor_lists(&self, offsets: &mut [u32], indices: &mut [u32]) -> Result<usize, Error> {
        let n = self.len as usize;
        if offsets.len() < n + 1 {
            return Err(Error::BufferTooSmall {
                needed: n + 1,
                available: offsets.len(),
            });
        }
        let offsets = &mut offsets[..=n];
        let total = if 2 * self.coherent as usize >= n {
            let mut cursor = 0usize;
            let mut cache = RunCache::new();
            let records = &self.records.as_ref()[..n];
            for (off, rec) in offsets.iter_mut().zip(records) {
                *off = cursor.min(u32::MAX as usize) as u32;
                let k = rec.rank as usize;
                cursor = self.gather_one(k, &mut cache, indices, cursor);
            }
            offsets[n] = cursor.min(u32::MAX as usize) as u32;
            cursor
        } else {
            // Sweep 1: degrees, stored at offsets[id + 1].
            offsets[0] = 0;
            let mut cache = RunCache::new();
            for (k, sp) in self.sorted().iter().enumerate() {
                let deg = self.gather_one(k, &mut cache, &mut [], 0);
                offsets[sp.id as usize + 1] = deg.min(u32::MAX as usize) as u32;
            }
            let total = crate::csr::prefix_sum(offsets);
            if total <= indices.len() && total < u32::MAX as usize {
                // Sweep 2: each list written at its offset.
                let mut cache = RunCache::new();
                for (k, sp) in self.sorted().iter().enumerate() {
                    let at = offsets[sp.id as usize] as usize;
                    self.gather_one(k, &mut cache, indices, at);
                }
            }
            total
        };
        if total > indices.len() || total >= u32::MAX as usize {
            return Err(Error::BufferTooSmall {
                needed: total,
                available: indices.len(),
            });
        }
        Ok(total)
    }

    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, f: F) {
        let n = self.len as usize;
        let buckets = self.buckets as usize;
        let parts = &self.particles.as_ref()[..n];
        let records = self.records.as_ref();
        let table = self.table.as_ref();
        let grid = &self.grid;
        let mut out = Batch::new(f, grid.radius_sq());
        for s in 0..buckets {
            let rec = records[s];
            let (lo, hi) = Self::range(records, buckets, n, s);
            let mine = &parts[lo..hi];
            if rec.mixed == 0 {
                // A pure run is one cell: pairs inside it, then against the
                // forward half of its neighbour cells.
                for (x, a) in mine.iter().enumerate() {
                    out.one_to_many(a, &mine[x + 1..]);
                }
                for &d in P::HALF_STENCIL {
                    let nc = P::cell_add(rec.cell, d);
                    let Some(s2) = self.lookup(table, nc) else {
                        continue;
                    };
                    let rec2 = records[s2];
                    let (lo2, hi2) = Self::range(records, buckets, n, s2);
                    let other = &parts[lo2..hi2];
                    if rec2.mixed == 0 {
                        if rec2.cell == nc {
                            for a in mine {
                                out.one_to_many(a, other);
                            }
                        }
                    } else {
                        for b in other {
                            if grid.cell_unchecked(b.pos) == nc {
                                for a in mine {
                                    out.one_to_one(a, b);
                                }
                            }
                        }
                    }
                }
            } else {
                // A run shared by several cells: per particle, with its own cell.
                for (x, a) in mine.iter().enumerate() {
                    let ca = grid.cell_unchecked(a.pos);
                    for b in &mine[x + 1..] {
                        if grid.cell_unchecked(b.pos) == ca {
                            out.one_to_one(a, b);
                        }
                    }
                    for &d in P::HALF_STENCIL {
                        let nc = P::cell_add(ca, d);
                        let Some(s2) = self.lookup(table, nc) else {
                            continue;
                        };
                        let rec2 = records[s2];
                        if rec2.mixed == 0 && rec2.cell != nc {
                            continue;
                        }
                        let (lo2, hi2) = Self::range(records, buckets, n, s2);
                        let other = &parts[lo2..hi2];
                        if rec2.mixed == 0 {
                            out.one_to_many(a, other);
                        } else {
                            for b in other {
                                if grid.cell_unchecked(b.pos) == nc {
                                    out.one_to_one(a, b);
                                }
                            }
                        }
                    }
                }
            }
        }
        out.flush();
    }
}

/// Appends the ids of the particles of `cands` within the radius of `p` to
/// `out` at `cursor` (counting past its end without writing); returns the new
/// cursor. Branch-free: each chunk is compacted into a stack buffer, then
/// copied.
#[inline(always)]
fn gather<P: Point>(
    p: P,
    cands: &[SortedParticle<P>],
    r2: f32,
    out: &mut [u32],
    cursor: usize,
) -> usize {
    const CHUNK: usize = 32;
    let mut cursor = cursor;
    let mut buf = [0u32; CHUNK];
    for chunk in cands.chunks(CHUNK) {
        let mut m = 0;
        for q in chunk {
            let d2 = p.distance_squared(q.pos);
            buf[m & (CHUNK - 1)] = q.id;
            m += (d2 < r2) as usize;
        }
        if let Some(dst) = out.get_mut(cursor..cursor + m) {
            dst.copy_from_slice(&buf[..m]);
        }
        cursor += m;
    }
    cursor
}

/// The resolved neighbour runs of the last cell seen.
struct RunCache<P: Point> {
    cell: Option<P::Cell>,
    runs: [Run<P>; 27],
    len: usize,
}

impl<P: Point> RunCache<P> {
    fn new() -> Self {
        Self {
            cell: None,
            runs: [Run::NONE; 27],
            len: 0,
        }
    }
}

/// A resolved neighbour run: particles `lo..hi` of the sorted array, all of
/// cell `cell` unless `check` (a run shared by several cells).
#[derive(Clone, Copy)]
struct Run<P: Point> {
    lo: u32,
    hi: u32,
    check: bool,
    cell: P::Cell,
}

impl<P: Point> Run<P> {
    const NONE: Self = Self {
        lo: 0,
        hi: 0,
        check: false,
        cell: P::CELL_ZERO,
    };
}

/// Pairs collected branch-free into a small stack buffer, then handed to the
/// caller's closure in a tight loop: the within-radius test then costs no
/// branch mispredictions.
struct Batch<F> {
    buf: [(u32, u32, f32); BATCH],
    len: usize,
    r2: f32,
    f: F,
}

/// Pairs buffered before a flush (a power of two: indices are masked).
const BATCH: usize = 128;

impl<F: FnMut(u32, u32, f32)> Batch<F> {
    fn new(f: F, r2: f32) -> Self {
        Self {
            buf: [(0, 0, 0.0); BATCH],
            len: 0,
            r2,
            f,
        }
    }

    #[inline(always)]
    fn flush(&mut self) {
        for &(i, j, d2) in &self.buf[..self.len.min(BATCH)] {
            (self.f)(i, j, d2);
        }
        self.len = 0;
    }

    /// Tests `a` against every particle of `bs`.
    #[inline(always)]
    fn one_to_many<P: Point>(&mut self, a: &SortedParticle<P>, bs: &[SortedParticle<P>]) {
        for chunk in bs.chunks(BATCH) {
            if self.len + chunk.len() > BATCH {
                self.flush();
            }
            let mut len = self.len;
            for b in chunk {
                let d2 = a.pos.distance_squared(b.pos);
                self.buf[len & (BATCH - 1)] = (a.id, b.id, d2);
                len += (d2 < self.r2) as usize;
            }
            self.len = len;
        }
    }

    #[inline(always)]
    fn one_to_one<P: Point>(&mut self, a: &SortedParticle<P>, b: &SortedParticle<P>) {
        self.one_to_many(a, core::slice::from_ref(b));
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
        let buckets = self.buckets as usize;
        ensure(n <= self.capacity(), W, "len <= capacity")?;
        ensure(buckets <= n, W, "occupied buckets <= len")?;
        if n == 0 {
            return Ok(());
        }
        let table = self.table.as_ref();
        ensure(
            table.len() == self.grid.table_len(),
            W,
            "grid mask matches table",
        )?;
        let parts = &self.particles.as_ref()[..n];
        let records = self.records.as_ref();
        // Ranks and ids are inverse permutations.
        for (k, sp) in parts.iter().enumerate() {
            ensure((sp.id as usize) < n, W, "sorted id < len")?;
            ensure(
                records[sp.id as usize].rank as usize == k,
                W,
                "rank inverts sorted ids",
            )?;
            ensure(sp.pos.is_finite(), W, "positions finite")?;
        }
        // Bucket runs: strictly increasing starts covering 0..n.
        ensure(records[0].start == 0, W, "first run starts at 0")?;
        let mut identity = true;
        for s in 0..buckets {
            let (lo, hi) = Self::range(records, buckets, n, s);
            ensure(lo < hi && hi <= n, W, "runs non-empty and in range")?;
            let rec = records[s];
            let b = self.grid.bucket(rec.cell) as usize;
            ensure(table[b].stamp == self.stamp, W, "occupied bucket stamped")?;
            ensure(table[b].slot as usize == s, W, "table points to its run")?;
            let mut all_same = true;
            for (k, q) in parts[lo..hi].iter().enumerate() {
                let c = self.grid.cell(q.pos).map_err(|_| Corruption {
                    structure: W,
                    invariant: "stored positions within the grid range",
                })?;
                ensure(
                    self.grid.bucket(c) as usize == b,
                    W,
                    "particle in its bucket's run",
                )?;
                all_same &= c == rec.cell;
                identity &= q.id as usize == lo + k;
            }
            ensure(all_same == (rec.mixed == 0), W, "mixed flag exact")?;
        }
        ensure(identity == self.identity, W, "identity flag exact")?;
        let stamped = table.iter().filter(|t| t.stamp == self.stamp).count();
        ensure(
            stamped == buckets,
            W,
            "one stamped slot per occupied bucket",
        )
    }
}
