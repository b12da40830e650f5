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

        // Pass 1: bucket of each particle, counts per occupied bucket.
        let mut buckets = 0usize;
        for (i, &p) in positions.iter().enumerate() {
            let c = grid.cell_unchecked(p);
            let ts = &mut table[grid.bucket(c) as usize];
            let s = if ts.stamp != stamp {
                *ts = TableSlot {
                    stamp,
                    slot: buckets as u32,
                };
                records[buckets].start = 0;
                records[buckets].cell = c;
                records[buckets].mixed = 0;
                buckets += 1;
                buckets - 1
            } else {
                let s = ts.slot as usize;
                if records[s].cell != c {
                    records[s].mixed = 1;
                }
                s
            };
            records[s].start += 1;
            records[i].rank = s as u32;
        }
        // Pass 2: counts to starts, over occupied buckets only.
        let mut run = 0u32;
        for r in &mut records[..buckets] {
            let count = r.start;
            r.start = run;
            run += count;
        }
        // Pass 3: scatter; `start` advances as a cursor, then is shifted back.
        let parts = self.particles.as_mut();
        let mut identity = true;
        for (i, &p) in positions.iter().enumerate() {
            let s = records[i].rank as usize;
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

    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) {
        let n = self.len as usize;
        let buckets = self.buckets as usize;
        let parts = &self.particles.as_ref()[..n];
        let records = self.records.as_ref();
        let table = self.table.as_ref();
        let grid = &self.grid;
        let r2 = grid.radius_sq();
        for s in 0..buckets {
            let rec = records[s];
            let (lo, hi) = Self::range(records, buckets, n, s);
            let mine = &parts[lo..hi];
            if rec.mixed == 0 {
                // A pure bucket is one cell: pairs inside it, then against the
                // forward half of its neighbour cells.
                for (x, a) in mine.iter().enumerate() {
                    for b in &mine[x + 1..] {
                        let d2 = a.pos.distance_squared(b.pos);
                        if d2 < r2 {
                            f(a.id, b.id, d2);
                        }
                    }
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
                        if rec2.cell != nc {
                            continue;
                        }
                        for a in mine {
                            for b in other {
                                let d2 = a.pos.distance_squared(b.pos);
                                if d2 < r2 {
                                    f(a.id, b.id, d2);
                                }
                            }
                        }
                    } else {
                        for b in other {
                            if grid.cell_unchecked(b.pos) != nc {
                                continue;
                            }
                            for a in mine {
                                let d2 = a.pos.distance_squared(b.pos);
                                if d2 < r2 {
                                    f(a.id, b.id, d2);
                                }
                            }
                        }
                    }
                }
            } else {
                // A bucket shared by several cells: per particle, with its own cell.
                for (x, a) in mine.iter().enumerate() {
                    let ca = grid.cell_unchecked(a.pos);
                    for b in &mine[x + 1..] {
                        let d2 = a.pos.distance_squared(b.pos);
                        if d2 < r2 && grid.cell_unchecked(b.pos) == ca {
                            f(a.id, b.id, d2);
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
                        for b in &parts[lo2..hi2] {
                            let d2 = a.pos.distance_squared(b.pos);
                            if d2 < r2 && (rec2.mixed == 0 || grid.cell_unchecked(b.pos) == nc) {
                                f(a.id, b.id, d2);
                            }
                        }
                    }
                }
            }
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
