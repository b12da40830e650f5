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

/// Per-index bookkeeping of a [`CellSortedHash`]. Entry `i` holds the rank
/// (sorted position) of input particle `i`, and, for `i` below the number of
/// occupied cells, the start and cell of the `i`-th run and the next run
/// whose cell hashes to the same table slot.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CellRecord<P: Point> {
    rank: u32,
    start: u32,
    cell: P::Cell,
    next: u32,
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
        cell: P::CELL_ZERO,
        next: NONE,
    };
}

/// Uniform spatial hash with cell-sorted buckets (strategy (a)).
///
/// A build counting-sorts particle indices by cell: one pass finds each
/// particle's cell through the table and counts, one pass over the
/// *occupied* cells turns counts into start offsets, one pass scatters
/// positions and ids into cell order. Empty slots are never visited: a slot
/// is occupied when its stamp is the current build's. Cells that hash to the
/// same slot are chained through their records, so every run holds exactly
/// one cell and a hash collision costs one comparison, never a wrong or
/// duplicated answer. Queries read each neighbouring cell as one contiguous
/// run of positions.
///
/// Runs are ordered by the Morton code of their cell, so sweeps visit space
/// coherently; input already in that order (see [`reorder`](Self::reorder))
/// comes out of the sort unchanged.
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
    runs: u32,
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
    ///
    /// Never fails and allocates nothing; `const`, so it can initialise a
    /// `static`. A table whose length is not a power of two in `1..=2³¹` is
    /// refused with [`Error::InvalidTableLength`] at the first build; use
    /// [`new_checked`](Self::new_checked) to refuse it here instead.
    ///
    /// Memory: `8T + 40N` bytes in 3D, `8T + 32N` in 2D. A build is `O(N)`
    /// (a counting sort by cell; empty table slots are never touched); a
    /// neighbour query visits the 3ᵈ cells around the particle.
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
            coherent: 0,
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

    /// Number of occupied cells that share their table slot with another
    /// occupied cell (hash collisions); `O(cells)`.
    pub fn colliding_cells(&self) -> usize {
        let records = &self.records.as_ref()[..self.runs as usize];
        let table = self.table.as_ref();
        records
            .iter()
            .enumerate()
            .filter(|&(s, r)| {
                r.next != NONE || table[self.grid.bucket(r.cell) as usize].slot != s as u32
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
        self.coherent = 0;
        // Stale slots are told apart by the stamp of the next build.
    }

    /// Writes `src` permuted into cell order: `dst[k] = src[sorted()[k].id()]`.
    /// Rebuilding from data reordered this way makes every cell a
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

    /// Range of particles of run `s`.
    #[inline(always)]
    fn range(&self, records: &[CellRecord<P>], s: usize) -> (usize, usize) {
        let lo = records[s].start as usize;
        let hi = if s + 1 < self.runs as usize {
            records[s + 1].start as usize
        } else {
            self.len as usize
        };
        (lo, hi)
    }

    /// The run of cell `c`, if it is occupied: the slot's chain is walked
    /// comparing cells (one step unless occupied cells collide).
    #[inline(always)]
    fn lookup(&self, table: &[TableSlot], records: &[CellRecord<P>], c: P::Cell) -> Option<usize> {
        let ts = table[self.grid.bucket(c) as usize];
        if ts.stamp != self.stamp {
            return None;
        }
        let mut s = ts.slot;
        while let Some(r) = records.get(s as usize) {
            if r.cell == c {
                return Some(s as usize);
            }
            s = r.next;
        }
        None
    }

    /// The runs of the occupied cells around `c`, in stencil order; returns
    /// how many there are.
    fn resolve(&self, c: P::Cell, runs: &mut [(u32, u32); 27]) -> usize {
        let table = self.table.as_ref();
        let records = self.records.as_ref();
        let mut m = 0;
        for &d in P::STENCIL {
            if let Some(s) = self.lookup(table, records, P::cell_add(c, d)) {
                let (lo, hi) = self.range(records, s);
                runs[m] = (lo as u32, hi as u32);
                m += 1;
            }
        }
        m
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
        let r2 = self.grid.radius_sq();
        let me = parts[k];
        let c = self.grid.cell_unchecked(me.pos);
        if cache.cell != Some(c) {
            cache.len = self.resolve(c, &mut cache.runs);
            cache.cell = Some(c);
        }
        let mut cursor = cursor;
        for &(lo, hi) in &cache.runs[..cache.len] {
            let (lo, hi) = (lo as usize, hi as usize);
            if (lo..hi).contains(&k) {
                cursor = gather(me.pos, &parts[lo..k], r2, out, cursor);
                cursor = gather(me.pos, &parts[k + 1..hi], r2, out, cursor);
            } else {
                cursor = gather(me.pos, &parts[lo..hi], r2, out, cursor);
            }
        }
        cursor
    }

    /// Calls `f` for each particle of cell `c` within the radius of `p`,
    /// except sorted index `skip`.
    #[inline(always)]
    fn scan_cell<F: FnMut(u32, f32)>(&self, p: P, c: P::Cell, skip: usize, f: &mut F) {
        let records = self.records.as_ref();
        let Some(s) = self.lookup(self.table.as_ref(), records, c) else {
            return;
        };
        let (lo, hi) = self.range(records, s);
        let r2 = self.grid.radius_sq();
        for (k, q) in self.particles.as_ref()[lo..hi].iter().enumerate() {
            let d2 = p.distance_squared(q.pos);
            if d2 < r2 && lo + k != skip {
                f(q.id, d2);
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
        let grid = Grid::fit(
            radius,
            positions,
            self.table.as_ref().len(),
            self.capacity(),
        )?;
        // Validated: from here on nothing can fail.
        let table = self.table.as_mut();
        advance_stamp(&mut self.stamp, || table.fill(TableSlot::EMPTY));
        let stamp = self.stamp;
        let records = self.records.as_mut();
        let n = positions.len();

        // Pass 1: occupied cells and their counts, chained per table slot.
        let mut runs = 0usize;
        let mut coherent = 0u32;
        let mut prev = None;
        for &p in positions {
            let c = grid.cell_unchecked(p);
            coherent += (prev == Some(c)) as u32;
            prev = Some(c);
            let ts = &mut table[grid.bucket(c) as usize];
            let head = if ts.stamp == stamp { ts.slot } else { NONE };
            let mut s = head;
            while let Some(r) = records.get_mut(s as usize) {
                if r.cell == c {
                    r.start += 1;
                    break;
                }
                s = r.next;
            }
            if s == NONE {
                records[runs] = CellRecord {
                    rank: 0,
                    start: 1,
                    cell: c,
                    next: head,
                };
                *ts = TableSlot {
                    stamp,
                    slot: runs as u32,
                };
                runs += 1;
            }
        }
        // Runs in Morton order of their cells, so that sweeps find their
        // neighbours' slots and particles in cache. Input in the previous
        // build's order is nearly sorted, which the sort detects. Ranks are
        // written only later, so moving whole records is safe.
        crate::sort::sort_by_key(&mut records[..runs], |r| P::cell_morton(r.cell));
        // Pass 2: rechain the sorted runs; counts become starts.
        for r in &records[..runs] {
            table[grid.bucket(r.cell) as usize].slot = NONE;
        }
        let mut total = 0u32;
        for (s, r) in records[..runs].iter_mut().enumerate() {
            let ts = &mut table[grid.bucket(r.cell) as usize];
            r.next = ts.slot;
            ts.slot = s as u32;
            let count = r.start;
            r.start = total;
            total += count;
        }
        // Pass 3: scatter; `start` advances as a cursor, then is shifted back.
        let parts = self.particles.as_mut();
        let mut identity = true;
        for (i, &p) in positions.iter().enumerate() {
            let c = grid.cell_unchecked(p);
            let mut s = table[grid.bucket(c) as usize].slot as usize;
            while records[s].cell != c {
                s = records[s].next as usize;
            }
            let k = records[s].start;
            records[s].start = k + 1;
            parts[k as usize] = SortedParticle {
                pos: p,
                id: i as u32,
            };
            records[i].rank = k;
            identity &= k as usize == i;
        }
        for s in (1..runs).rev() {
            records[s].start = records[s - 1].start;
        }
        if runs > 0 {
            records[0].start = 0;
        }
        self.grid = grid;
        self.len = n as u32;
        self.runs = runs as u32;
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
        let Some(c) = self.grid.query_cell(point, self.len as usize)? else {
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
    /// served in two sweeps in cell order, one counting and one writing each
    /// particle's list at its offset, so that neighbour runs are read
    /// coherently whatever the ids.
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
                *off = cursor.min(NONE as usize) as u32;
                cursor = self.gather_one(rec.rank as usize, &mut cache, indices, cursor);
            }
            offsets[n] = cursor.min(NONE as usize) as u32;
            cursor
        } else {
            // Sweep 1: degrees, stored at offsets[id + 1].
            offsets[0] = 0;
            let mut cache = RunCache::new();
            for (k, sp) in self.sorted().iter().enumerate() {
                let deg = self.gather_one(k, &mut cache, &mut [], 0);
                offsets[sp.id as usize + 1] = deg as u32;
            }
            let total = crate::csr::prefix_sum(offsets);
            if total <= indices.len() && total < NONE as usize {
                // Sweep 2: each list written at its offset.
                let mut cache = RunCache::new();
                // Each particle gets exactly its own segment, so the
                // branch-free writes never spill into a list already written.
                for (k, sp) in self.sorted().iter().enumerate() {
                    let id = sp.id as usize;
                    let (at, end) = (offsets[id] as usize, offsets[id + 1] as usize);
                    self.gather_one(k, &mut cache, &mut indices[at..end], 0);
                }
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

    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, f: F) {
        let n = self.len as usize;
        let parts = &self.particles.as_ref()[..n];
        let records = self.records.as_ref();
        let table = self.table.as_ref();
        let mut out = Batch::new(f, self.grid.radius_sq());
        for s in 0..self.runs as usize {
            // A run is one cell: pairs inside it, then against the forward
            // half of its neighbour cells.
            let (lo, hi) = self.range(records, s);
            let mine = &parts[lo..hi];
            for (x, a) in mine.iter().enumerate() {
                out.one_to_many(a, &mine[x + 1..]);
            }
            let cell = records[s].cell;
            for &d in P::HALF_STENCIL {
                let Some(s2) = self.lookup(table, records, P::cell_add(cell, d)) else {
                    continue;
                };
                let (lo2, hi2) = self.range(records, s2);
                let other = &parts[lo2..hi2];
                for a in mine {
                    out.one_to_many(a, other);
                }
            }
        }
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

/// The resolved neighbour runs (`lo..hi`) of the last cell seen.
struct RunCache<P: Point> {
    cell: Option<P::Cell>,
    runs: [(u32, u32); 27],
    len: usize,
}

impl<P: Point> RunCache<P> {
    fn new() -> Self {
        Self {
            cell: None,
            runs: [(0, 0); 27],
            len: 0,
        }
    }
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
            let (buf, r2) = (&mut self.buf, self.r2);
            let mut len = self.len;
            for_each_distance(a.pos, chunk, |b, d2| {
                buf[len & (BATCH - 1)] = (a.id, b.id, d2);
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
        }
        ensure(records[0].start == 0, W, "first run starts at 0")?;
        let mut identity = true;
        let mut prev_key = None;
        for s in 0..runs {
            let (lo, hi) = self.range(records, s);
            ensure(
                lo < hi && hi <= n,
                W,
                "runs non-empty, increasing, in range",
            )?;
            let rec = records[s];
            let key = P::cell_morton(rec.cell);
            ensure(
                prev_key.is_none_or(|p| p < key),
                W,
                "runs in strict Morton order",
            )?;
            prev_key = Some(key);
            // The run is reachable through its slot's chain, exactly once.
            ensure(
                self.lookup(table, records, rec.cell) == Some(s),
                W,
                "run found by its cell",
            )?;
            let b = self.grid.bucket(rec.cell);
            ensure(
                rec.next == NONE
                    || ((rec.next as usize) < runs
                        && self.grid.bucket(records[rec.next as usize].cell) == b),
                W,
                "chain stays in its slot",
            )?;
            for (k, q) in parts[lo..hi].iter().enumerate() {
                let c = self.grid.cell(q.pos).map_err(|_| Corruption {
                    structure: W,
                    invariant: "stored positions within the grid range",
                })?;
                ensure(c == rec.cell, W, "particle in its cell's run")?;
                identity &= q.id as usize == lo + k;
            }
        }
        ensure(identity == self.identity, W, "identity flag exact")?;
        // Chains hold every run once: total chain length == runs.
        let mut chained = 0usize;
        for t in table.iter().filter(|t| t.stamp == self.stamp) {
            let mut s = t.slot;
            while s != NONE {
                chained += 1;
                ensure(
                    chained <= runs && (s as usize) < runs,
                    W,
                    "chains acyclic, in range",
                )?;
                s = records[s as usize].next;
            }
        }
        ensure(chained == runs, W, "chains hold every run once")
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

    /// `O(T)`: counts the slots stamped by the last build.
    fn stats(&self) -> Self::Stats {
        let table = self.table.as_ref();
        crate::inspect::SearchStats {
            particles: self.len as usize,
            capacity: self.particles.as_ref().len(),
            radius: self.grid.radius(),
            table_slots: table.len(),
            occupied_slots: if self.len == 0 {
                0
            } else {
                table.iter().filter(|s| s.stamp == self.stamp).count()
            },
        }
    }
}
