//! A dense cell list over a fixed box, periodic along any subset of its axes.
//!
//! Where the hashes of this module cover an unbounded domain with a table,
//! [`DenseGrid`] covers one box with one counter per cell: a particle's cell
//! is its index in the box, no hashing, no collisions. Along a periodic axis
//! the grid wraps: the neighbour of the last cell is the first, and a pair
//! found through a wrapped cell is measured with the minimum image
//! ([`PeriodicBox::offset`]), without ghost copies of any particle.
//!
//! Each axis gets `n = ⌊L / (r · CELL_MARGIN)⌋` cells (at least 1; a
//! periodic axis needs at least 3, so that the 27 (9 in 2D) cells around a
//! cell are distinct; at most [`UNIFORM_RANGE_CELLS`] per axis, larger cells
//! above that), of edge `L / n ≥ r`, so every pair within the radius lies in
//! adjacent cells, across a periodic face included.

use crate::cell::{CELL_MARGIN, UNIFORM_RANGE_CELLS, check_radius, floor_i32};
use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::Point;
use crate::periodic::PeriodicBox;
use crate::storage::Storage;
use crate::traits::NeighborSearch;

/// One particle slot of a [`DenseGrid`]. Slot `k` holds the `k`-th particle
/// in cell order (its position and id) and, separately, where the particle
/// with id `k` sits in that order.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DenseParticle<P: Point> {
    position: P,
    id: u32,
    slot: u32,
}

impl<P: Point> DenseParticle<P> {
    /// An unused slot.
    pub const EMPTY: Self = Self {
        position: P::ZERO,
        id: 0,
        slot: 0,
    };
}

impl<P: Point> Default for DenseParticle<P> {
    /// The unused value, [`DenseParticle::EMPTY`].
    fn default() -> Self {
        Self::EMPTY
    }
}

/// The cell arithmetic of one build: cells per axis and their inverse edge.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Cells {
    n: [i32; 3],
    inv: [f32; 3],
    count: usize,
}

impl Cells {
    const EMPTY: Self = Self {
        n: [1; 3],
        inv: [0.0; 3],
        count: 0,
    };
}

/// A dense cell list over the box of a [`PeriodicBox`], periodic along its
/// periodic axes; see the [module documentation](self).
///
/// Storage: `particles` holds one [`DenseParticle`] per particle
/// (`size_of::<P>() + 8` bytes: 20 in 3D), `starts` one `u32` per cell plus
/// one. [`cells_needed`](Self::cells_needed) gives the length `starts`
/// needs for a box and radius. Build `O(N + cells)`, a particle's
/// neighbours `O(27 · particles per cell)`.
///
/// Along the box's non-periodic axes positions must lie in `[lo, hi]`;
/// along its periodic axes any finite coordinate is accepted and wrapped
/// into `[lo, hi)` ([`PeriodicBox::wrap`]), which is what
/// [`position`](NeighborSearch::position) then returns.
///
/// # Example
///
/// ```
/// use spatium::uniform::{DenseGrid, DenseParticle};
/// use spatium::{NeighborSearch, PeriodicBox, Vec2};
///
/// // A 10 × 10 box, periodic along x only.
/// let domain = PeriodicBox::new(Vec2::ZERO, Vec2::new(10.0, 10.0), 0b01)?;
/// let cells = DenseGrid::<Vec2, [DenseParticle<Vec2>; 0], [u32; 0]>::cells_needed(&domain, 1.0)?;
/// let mut grid = DenseGrid::new(domain, [DenseParticle::EMPTY; 4], [0u32; 128]);
/// assert!(cells + 1 <= 128);
/// let points = [Vec2::new(0.25, 5.0), Vec2::new(9.75, 5.0), Vec2::new(5.0, 0.25), Vec2::new(5.0, 9.75)];
/// grid.build(&points, 1.0)?;
/// let mut pairs = Vec::new();
/// grid.for_each_pair(|i, j, d2| pairs.push((i.min(j), i.max(j), d2)));
/// // Across the periodic x faces, 0.5 apart; not across the y faces.
/// assert_eq!(pairs, [(0, 1, 0.25)]);
/// # Ok::<(), spatium::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct DenseGrid<P: Point, S, C> {
    domain: PeriodicBox<P>,
    particles: S,
    starts: C,
    len: usize,
    radius: f32,
    radius_sq: f32,
    cells: Cells,
}

impl<P: Point, S: Storage<DenseParticle<P>>, C: Storage<u32>> DenseGrid<P, S, C> {
    /// An empty grid over `domain`, holding up to `particles.len()`
    /// particles in grids of up to `starts.len() - 1` cells. Never fails and
    /// allocates nothing; `const`.
    pub const fn new(domain: PeriodicBox<P>, particles: S, starts: C) -> Self {
        Self {
            domain,
            particles,
            starts,
            len: 0,
            radius: 0.0,
            radius_sq: 0.0,
            cells: Cells::EMPTY,
        }
    }

    /// The length `starts` needs (cells + 1) for `domain` searched within
    /// `radius`.
    ///
    /// # Errors
    /// [`Error::InvalidRadius`]; [`Error::PeriodTooShort`] for a periodic
    /// axis shorter than three cells (`3 · radius · CELL_MARGIN`);
    /// [`Error::CapacityExceeded`] if the count overflows `usize`.
    pub fn cells_needed(domain: &PeriodicBox<P>, radius: f32) -> Result<usize, Error> {
        Ok(Self::layout(domain, radius)?.count + 1)
    }

    fn layout(domain: &PeriodicBox<P>, radius: f32) -> Result<Cells, Error> {
        check_radius(radius)?;
        let cell = radius * CELL_MARGIN;
        let mut out = Cells {
            n: [1; 3],
            inv: [0.0; 3],
            count: 1,
        };
        for k in 0..P::DIM {
            let l = domain.hi().coord(k) - domain.lo().coord(k);
            let cells = libm::floorf(l / cell);
            // NaN never occurs (finite corners, positive cell); the
            // comparison form also catches it.
            let n = if cells >= UNIFORM_RANGE_CELLS as f32 {
                UNIFORM_RANGE_CELLS
            } else if cells >= 1.0 {
                cells as i32
            } else {
                1
            };
            if domain.is_periodic_axis(k) && n < 3 {
                return Err(Error::PeriodTooShort { axis: k as u8 });
            }
            out.n[k] = n;
            out.inv[k] = n as f32 / l;
            out.count = out
                .count
                .checked_mul(n as usize)
                .ok_or(Error::CapacityExceeded {
                    capacity: usize::MAX,
                })?;
        }
        Ok(out)
    }

    /// The domain.
    pub fn domain(&self) -> &PeriodicBox<P> {
        &self.domain
    }

    /// Replaces the domain; the stored particles are dropped (the next
    /// build uses the new domain).
    pub fn set_domain(&mut self, domain: PeriodicBox<P>) {
        self.domain = domain;
        self.clear();
    }

    /// Removes every particle.
    pub fn clear(&mut self) {
        self.len = 0;
        self.cells = Cells::EMPTY;
    }

    /// Most particles a build accepts.
    pub fn capacity(&self) -> usize {
        self.particles.as_ref().len()
    }

    /// Cells per axis of the last build (`[1, 1, 1]` before one; the third
    /// is 1 in 2D).
    pub fn cells_per_axis(&self) -> [u32; 3] {
        self.cells.n.map(|n| n as u32)
    }

    /// Cell coordinate of a coordinate `x` along `axis`, clamped into the
    /// grid (a point on a non-periodic upper face belongs to the last cell;
    /// rounding at a periodic face stays in the first or last one).
    #[inline(always)]
    fn axis_cell(&self, axis: usize, x: f32) -> i32 {
        let t = (x - self.domain.lo().coord(axis)) * self.cells.inv[axis];
        let n = self.cells.n[axis];
        floor_i32(t.clamp(0.0, n as f32)).min(n - 1)
    }

    #[inline(always)]
    fn cell_of(&self, p: P) -> [i32; 3] {
        let mut c = [0; 3];
        for (k, ck) in c.iter_mut().enumerate().take(P::DIM) {
            *ck = self.axis_cell(k, p.coord(k));
        }
        c
    }

    #[inline(always)]
    fn index(&self, c: [i32; 3]) -> usize {
        let n = self.cells.n;
        (c[0] + n[0] * (c[1] + n[1] * c[2])) as usize
    }

    /// The cell at `c + d` and the shift `s` of its particles' image
    /// (their offset from a particle of `c` is `(a - b) - s`), or `None`
    /// past a non-periodic face.
    #[inline(always)]
    fn neighbour(&self, c: [i32; 3], d: [i32; 3]) -> Option<(usize, P)> {
        let mut shift = [0.0f32; 3];
        let mut m = [0; 3];
        for k in 0..P::DIM {
            let n = self.cells.n[k];
            let mut v = c[k] + d[k];
            if v < 0 || v >= n {
                if !self.domain.is_periodic_axis(k) {
                    return None;
                }
                let l = self.domain.lengths().coord(k);
                if v < 0 {
                    v += n;
                    shift[k] = -l;
                } else {
                    v -= n;
                    shift[k] = l;
                }
            }
            m[k] = v;
        }
        Some((self.index(m), P::from_fn(|k| shift[k])))
    }

    #[inline(always)]
    fn range(&self, cell: usize) -> (usize, usize) {
        let starts = self.starts.as_ref();
        let lo = starts.get(cell).copied().unwrap_or(0) as usize;
        let hi = starts.get(cell + 1).copied().unwrap_or(0) as usize;
        (lo, hi)
    }

    fn stored(&self) -> &[DenseParticle<P>] {
        self.particles.as_ref().get(..self.len).unwrap_or(&[])
    }

    /// Visits the particles within the radius of `p` (already wrapped),
    /// in the cells around `c`, skipping sorted slot `skip`.
    #[inline(always)]
    fn visit<F: FnMut(u32, f32)>(&self, p: P, c: [i32; 3], skip: usize, mut f: F) {
        let parts = self.stored();
        for &o in P::STENCIL {
            let d = [0, 1, 2].map(|k| if k < P::DIM { P::cell_coord(o, k) } else { 0 });
            let Some((cell, s)) = self.neighbour(c, d) else {
                continue;
            };
            let (lo, hi) = self.range(cell);
            for (k, q) in parts.get(lo..hi).unwrap_or(&[]).iter().enumerate() {
                let e = (p - q.position) - s;
                let d2 = e.dot(e);
                if d2 < self.radius_sq && lo + k != skip {
                    f(q.id, d2);
                }
            }
        }
    }
}

impl<P: Point, S: Storage<DenseParticle<P>>, C: Storage<u32>> NeighborSearch<P>
    for DenseGrid<P, S, C>
{
    fn build(&mut self, positions: &[P], radius: f32) -> Result<(), Error> {
        let cells = Self::layout(&self.domain, radius)?;
        let cap = self.capacity();
        if positions.len() > cap || positions.len() >= u32::MAX as usize {
            return Err(Error::CapacityExceeded { capacity: cap });
        }
        let available = self.starts.as_ref().len();
        if cells.count >= available {
            return Err(Error::BufferTooSmall {
                needed: cells.count + 1,
                available,
            });
        }
        let (lo, hi) = (self.domain.lo(), self.domain.hi());
        for p in positions {
            if !p.is_finite() {
                return Err(Error::NonFinite);
            }
        }
        for p in positions {
            for k in 0..P::DIM {
                let x = p.coord(k);
                let inside = x >= lo.coord(k) && x <= hi.coord(k);
                if !self.domain.is_periodic_axis(k) && !inside {
                    return Err(Error::OutOfRange);
                }
            }
        }
        // Checked: from here on nothing fails.
        self.cells = cells;
        self.radius = radius;
        self.radius_sq = radius * radius;
        self.len = positions.len();
        let n = positions.len();
        let count = cells.count;
        let starts = &mut self.starts.as_mut()[..=count];
        starts.fill(0);
        // Pass 1: each particle's cell, kept in its id's `slot` field.
        for (i, &p) in positions.iter().enumerate() {
            let w = self.domain.wrap(p);
            let c = self.cell_of(w);
            let cell = self.index(c);
            if let Some(s) = self.starts.as_mut().get_mut(cell + 1) {
                *s += 1;
            }
            if let Some(slot) = self.particles.as_mut().get_mut(i) {
                slot.slot = cell as u32;
            }
        }
        let starts = &mut self.starts.as_mut()[..=count];
        let mut run = 0u32;
        for s in starts.iter_mut() {
            run += *s;
            *s = run;
        }
        // Now starts[c + 1] is the end of cell c: scatter backwards from the
        // ends, so each cell keeps its particles in id order and the counters
        // finish as the starts.
        let parts = self.particles.as_mut();
        for i in (0..n).rev() {
            let cell = parts[i].slot as usize;
            let end = &mut starts[cell + 1];
            *end -= 1;
            let k = *end as usize;
            let w = self.domain.wrap(positions[i]);
            parts[k].position = w;
            parts[k].id = i as u32;
        }
        // starts[c + 1] now holds cell c's start: shift down one place.
        for c in 0..count {
            starts[c] = starts[c + 1];
        }
        starts[count] = n as u32;
        for k in 0..n {
            let id = parts[k].id as usize;
            parts[id].slot = k as u32;
        }
        Ok(())
    }

    fn len(&self) -> usize {
        self.len
    }

    fn radius(&self) -> f32 {
        self.radius
    }

    fn periodic(&self) -> PeriodicBox<P> {
        self.domain
    }

    fn position(&self, id: u32) -> Option<P> {
        let parts = self.stored();
        let k = parts.get(id as usize)?.slot as usize;
        parts.get(k).map(|q| q.position)
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, f: F) -> Result<(), Error> {
        let parts = self.stored();
        let k = parts.get(id as usize).ok_or(Error::UnknownId { id })?.slot as usize;
        let p = parts.get(k).ok_or(Error::UnknownId { id })?.position;
        self.visit(p, self.cell_of(p), k, f);
        Ok(())
    }

    fn for_each_within<F: FnMut(u32, f32)>(&self, point: P, f: F) -> Result<(), Error> {
        if !point.is_finite() {
            return Err(Error::NonFinite);
        }
        if self.len == 0 {
            return Ok(());
        }
        let p = self.domain.wrap(point);
        // Along a non-periodic axis a point may lie outside the box: beyond
        // one cell of it nothing stored is within the radius.
        let mut c = [0; 3];
        for (k, ck) in c.iter_mut().enumerate().take(P::DIM) {
            if self.domain.is_periodic_axis(k) {
                *ck = self.axis_cell(k, p.coord(k));
                continue;
            }
            let t = (p.coord(k) - self.domain.lo().coord(k)) * self.cells.inv[k];
            let n = self.cells.n[k] as f32;
            if !(t >= -1.0 && t < n + 1.0) {
                return Ok(());
            }
            *ck = floor_i32(t);
        }
        // A cell just outside a non-periodic face: its in-range neighbours
        // are visited by `visit`, which skips cells past the face.
        self.visit(p, c, usize::MAX, f);
        Ok(())
    }

    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) {
        let parts = self.stored();
        let n = self.cells.n;
        for z in 0..n[2] {
            for y in 0..n[1] {
                for x in 0..n[0] {
                    let c = [x, y, z];
                    let (lo, hi) = self.range(self.index(c));
                    let own = parts.get(lo..hi).unwrap_or(&[]);
                    for (a, p) in own.iter().enumerate() {
                        for q in own.iter().skip(a + 1) {
                            let d2 = p.position.distance_squared(q.position);
                            if d2 < self.radius_sq {
                                f(p.id, q.id, d2);
                            }
                        }
                    }
                    for &o in P::HALF_STENCIL {
                        let d = [0, 1, 2].map(|k| if k < P::DIM { P::cell_coord(o, k) } else { 0 });
                        let Some((cell, s)) = self.neighbour(c, d) else {
                            continue;
                        };
                        let (l2, h2) = self.range(cell);
                        let other = parts.get(l2..h2).unwrap_or(&[]);
                        for p in own {
                            for q in other {
                                let e = (p.position - q.position) - s;
                                let d2 = e.dot(e);
                                if d2 < self.radius_sq {
                                    f(p.id, q.id, d2);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Rows in cell order ([`spatial_order`](Self::spatial_order)): one
    /// sweep counting, one filling, both in storage order.
    fn spatial_neighbor_lists(
        &self,
        offsets: &mut [u32],
        indices: &mut [u32],
    ) -> Result<usize, Error> {
        let n = self.len;
        let available = offsets.len();
        let offsets = offsets.get_mut(..=n).ok_or(Error::BufferTooSmall {
            needed: n + 1,
            available,
        })?;
        let parts = self.stored();
        let mut total = 0usize;
        if let Some(o) = offsets.first_mut() {
            *o = 0;
        }
        for (k, q) in parts.iter().enumerate() {
            let mut degree = 0usize;
            self.visit(q.position, self.cell_of(q.position), k, |_, _| degree += 1);
            total += degree;
            if let Some(o) = offsets.get_mut(k + 1) {
                *o = total.min(u32::MAX as usize) as u32;
            }
        }
        if total > indices.len() || total >= u32::MAX as usize {
            return Err(Error::BufferTooSmall {
                needed: total,
                available: indices.len(),
            });
        }
        let mut at = 0usize;
        for (k, q) in parts.iter().enumerate() {
            self.visit(q.position, self.cell_of(q.position), k, |j, _| {
                if let Some(d) = indices.get_mut(at) {
                    *d = j;
                }
                at += 1;
            });
        }
        Ok(total)
    }

    fn spatial_order(&self, order: &mut [u32]) -> Result<(), Error> {
        let available = order.len();
        let out = order.get_mut(..self.len).ok_or(Error::BufferTooSmall {
            needed: self.len,
            available,
        })?;
        for (o, q) in out.iter_mut().zip(self.stored()) {
            *o = q.id;
        }
        Ok(())
    }
}

impl<P: Point, S: Storage<DenseParticle<P>>, C: Storage<u32>> Validate for DenseGrid<P, S, C> {
    fn validate(&self) -> Result<(), Corruption> {
        const W: &str = "DenseGrid";
        let n = self.len;
        ensure(n <= self.capacity(), W, "len <= capacity")?;
        if n == 0 {
            return Ok(());
        }
        let count = self.cells.count;
        let starts = self.starts.as_ref();
        ensure(count < starts.len(), W, "cells fit the starts")?;
        let starts = &starts[..=count];
        ensure(
            starts.first() == Some(&0) && starts.last() == Some(&(n as u32)),
            W,
            "starts span the particles",
        )?;
        ensure(
            starts.windows(2).all(|w| w[0] <= w[1]),
            W,
            "starts non-decreasing",
        )?;
        let parts = self.stored();
        for (k, q) in parts.iter().enumerate() {
            ensure((q.id as usize) < n, W, "ids below len")?;
            ensure(
                parts.get(q.id as usize).map(|s| s.slot) == Some(k as u32),
                W,
                "slots invert the order",
            )?;
            ensure(
                q.position.is_finite() && self.domain.contains_wrapped(q.position),
                W,
                "positions wrapped",
            )?;
            let cell = self.index(self.cell_of(q.position));
            let (lo, hi) = self.range(cell);
            ensure(lo <= k && k < hi, W, "particle in its cell's run")?;
        }
        Ok(())
    }
}

impl<P: Point, S: Storage<DenseParticle<P>>, C: Storage<u32>> crate::inspect::Inspect
    for DenseGrid<P, S, C>
{
    type Stats = crate::inspect::SearchStats;

    /// The buffers' bytes: `N · (size_of::<P>() + 8) + 4 · (cells + 1)`.
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.particles.as_ref())
            + core::mem::size_of_val(self.starts.as_ref())
    }

    /// `O(cells)`: counts the occupied cells.
    fn stats(&self) -> Self::Stats {
        let starts = self.starts.as_ref();
        let count = if self.len == 0 { 0 } else { self.cells.count };
        crate::inspect::SearchStats {
            particles: self.len,
            capacity: self.capacity(),
            radius: self.radius,
            table_slots: count,
            occupied_slots: starts
                .get(..=count)
                .map_or(0, |s| s.windows(2).filter(|w| w[1] > w[0]).count()),
        }
    }
}
