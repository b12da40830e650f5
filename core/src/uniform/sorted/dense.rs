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

use super::planes::{LOCAL, Local, Planes, PlanesMut};
use super::{Batch, SortedParticle};
use crate::cell::{CELL_MARGIN, UNIFORM_RANGE_CELLS, check_radius, floor_i32};
use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::Point;
use crate::periodic::PeriodicBox;
use crate::storage::Storage;
use crate::traits::NeighborSearch;

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

    /// Cell coordinate of a coordinate `x` along `axis` (the box starting
    /// at `lo` there), clamped into the grid: a point on a non-periodic
    /// upper face belongs to the last cell, and rounding at a periodic face
    /// stays in the first or last one.
    #[inline(always)]
    fn axis_cell(&self, lo: f32, axis: usize, x: f32) -> i32 {
        let t = (x - lo) * self.inv[axis];
        let n = self.n[axis];
        floor_i32(t.clamp(0.0, n as f32)).min(n - 1)
    }

    #[inline(always)]
    fn cell_of<P: Point>(&self, lo: P, p: P) -> [i32; 3] {
        let mut c = [0; 3];
        for (k, ck) in c.iter_mut().enumerate().take(P::DIM) {
            *ck = self.axis_cell(lo.coord(k), k, p.coord(k));
        }
        c
    }

    /// Index of a cell inside the grid (x fastest).
    #[inline(always)]
    fn index(&self, c: [i32; 3]) -> usize {
        let n = self.n;
        (c[0] + n[0] * (c[1] + n[1] * c[2])) as usize
    }
}

/// A dense cell list over the box of a [`PeriodicBox`], periodic along its
/// periodic axes: along them the grid wraps, and a pair found through a
/// face is measured with the minimum image ([`PeriodicBox::offset`]), with
/// no ghost copy of any particle.
///
/// Storage, three caller buffers: `particles`, one [`SortedParticle`] per
/// particle (the cell-sorted hash's planar layout, `4(d + 1)` bytes: 16 in
/// 3D), `ranks`, one `u32` per particle (where each id sits in cell
/// order), and `starts`, one `u32` per cell plus one
/// ([`cells_needed`](Self::cells_needed) gives the length for a box and a
/// radius): `20N + 4(cells + 1)` bytes in 3D. Build `O(N + cells)`; a
/// particle's neighbours are read from 9 (3D) or 3 (2D) contiguous rows of
/// cells, split in two where a row wraps through a periodic x face.
///
/// Along the box's non-periodic axes positions must lie in `[lo, hi]`;
/// along its periodic axes any finite coordinate is accepted and wrapped
/// into `[lo, hi)` ([`PeriodicBox::wrap`]), which is what
/// [`position`](NeighborSearch::position) then returns.
///
/// # Example
///
/// ```
/// use spatium::uniform::{DenseGrid, SortedParticle};
/// use spatium::{NeighborSearch, PeriodicBox, Vec2};
///
/// // A 10 × 10 box, periodic along x only.
/// let domain = PeriodicBox::new(Vec2::ZERO, Vec2::new(10.0, 10.0), 0b01)?;
/// assert_eq!(DenseGrid::<Vec2, [SortedParticle<Vec2>; 0], [u32; 0], [u32; 0]>::cells_needed(&domain, 1.0)?, 82);
/// let mut grid = DenseGrid::new(domain, [SortedParticle::EMPTY; 4], [0u32; 4], [0u32; 82]);
/// let points = [Vec2::new(0.25, 5.0), Vec2::new(9.75, 5.0), Vec2::new(5.0, 0.25), Vec2::new(5.0, 9.75)];
/// grid.build(&points, 1.0)?;
/// let mut pairs = Vec::new();
/// grid.for_each_pair(|i, j, d2| pairs.push((i.min(j), i.max(j), d2)));
/// // Across the periodic x faces, 0.5 apart; not across the y faces.
/// assert_eq!(pairs, [(0, 1, 0.25)]);
/// # Ok::<(), spatium::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct DenseGrid<P: Point, S, R, C> {
    domain: PeriodicBox<P>,
    particles: S,
    ranks: R,
    starts: C,
    len: usize,
    radius: f32,
    radius_sq: f32,
    cells: Cells,
}

impl<P: Point, S, R, C> DenseGrid<P, S, R, C>
where
    S: Storage<SortedParticle<P>>,
    R: Storage<u32>,
    C: Storage<u32>,
{
    /// An empty grid over `domain`, holding up to the shorter of
    /// `particles.len()` and `ranks.len()` particles in grids of up to
    /// `starts.len() - 1` cells. Never fails and allocates nothing;
    /// `const`.
    pub const fn new(domain: PeriodicBox<P>, particles: S, ranks: R, starts: C) -> Self {
        Self {
            domain,
            particles,
            ranks,
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

    /// Most particles a build accepts: the shorter of `particles` and
    /// `ranks`.
    pub fn capacity(&self) -> usize {
        self.particles.as_ref().len().min(self.ranks.as_ref().len())
    }

    /// Cells per axis of the last build (`[1, 1, 1]` before one; the third
    /// is 1 in 2D).
    pub fn cells_per_axis(&self) -> [u32; 3] {
        self.cells.n.map(|n| n as u32)
    }

    #[inline(always)]
    fn axis_cell(&self, axis: usize, x: f32) -> i32 {
        self.cells.axis_cell(self.domain.lo().coord(axis), axis, x)
    }

    #[inline(always)]
    fn cell_of(&self, p: P) -> [i32; 3] {
        self.cells.cell_of(self.domain.lo(), p)
    }

    #[inline(always)]
    fn index(&self, c: [i32; 3]) -> usize {
        self.cells.index(c)
    }

    /// The particles of the cells `x + dx0 ..= x + dx1` of the row at
    /// `(y + dy, z + dz)` from cell `c = (x, y, z)`, as at most two ranges
    /// of sorted slots with the shift `s` of their image (a particle `q`
    /// of a range is at offset `(p - q) - s` from a particle `p` of `c`).
    /// Cells of a row are consecutive, so a row is one range unless it
    /// wraps through a periodic x face; cells past a non-periodic face are
    /// left out. Returns how many ranges were written.
    #[inline(always)]
    fn row(&self, c: [i32; 3], dy: i32, dz: i32, dx: (i32, i32), out: &mut [Run<P>; 2]) -> usize {
        let n = self.cells.n;
        let lens = self.domain.lengths();
        let mut shift = [0.0f32; 3];
        let mut m = [0i32; 3];
        for (k, d) in [(1usize, dy), (2, dz)] {
            if k >= P::DIM {
                continue;
            }
            let mut v = c[k] + d;
            if v < 0 || v >= n[k] {
                if !self.domain.is_periodic_axis(k) {
                    return 0;
                }
                if v < 0 {
                    v += n[k];
                    shift[k] = -lens.coord(k);
                } else {
                    v -= n[k];
                    shift[k] = lens.coord(k);
                }
            }
            m[k] = v;
        }
        let base = (n[0] * (m[1] + n[1] * m[2])) as usize;
        let (x0, x1) = (c[0] + dx.0, c[0] + dx.1);
        let starts = self.starts.as_ref();
        let span = |a: i32, b: i32| {
            let lo = starts.get(base + a as usize).copied().unwrap_or(0) as usize;
            let hi = starts.get(base + b as usize + 1).copied().unwrap_or(0) as usize;
            (lo, hi)
        };
        let mut k = 0;
        let mut push = |(lo, hi): (usize, usize), sx: f32| {
            if lo < hi
                && let Some(o) = out.get_mut(k)
            {
                shift[0] = sx;
                *o = Run {
                    lo,
                    hi,
                    shift: P::from_fn(|a| shift[a]),
                };
                k += 1;
            }
        };
        let wraps = self.domain.is_periodic_axis(0);
        let lx = lens.coord(0);
        let (a, b) = (x0.max(0), x1.min(n[0] - 1));
        if a <= b {
            push(span(a, b), 0.0);
        }
        if wraps && x0 < 0 {
            push(span(x0 + n[0], n[0] - 1), -lx);
        }
        if wraps && x1 >= n[0] {
            push(span(0, x1 - n[0]), lx);
        }
        k
    }

    #[inline(always)]
    fn range(&self, cell: usize) -> (usize, usize) {
        let starts = self.starts.as_ref();
        let lo = starts.get(cell).copied().unwrap_or(0) as usize;
        let hi = starts.get(cell + 1).copied().unwrap_or(0) as usize;
        (lo, hi)
    }

    fn planes(&self) -> Planes<'_, P> {
        Planes::new(self.particles.as_ref(), self.len)
    }

    /// The sorted slot of `id`.
    fn rank(&self, id: u32) -> Option<usize> {
        if (id as usize) < self.len {
            self.ranks.as_ref().get(id as usize).map(|&k| k as usize)
        } else {
            None
        }
    }

    /// Visits the particles within the radius of `p` (already wrapped),
    /// in the rows of cells around `c`, skipping sorted slot `skip`.
    #[inline(always)]
    fn visit<F: FnMut(u32, f32)>(
        &self,
        parts: &Planes<'_, P>,
        p: P,
        c: [i32; 3],
        skip: usize,
        mut f: F,
    ) {
        let r2 = self.radius_sq;
        let ids = parts.ids();
        let mut runs = [Run::EMPTY; 2];
        for &o in P::ROWS {
            let (dy, dz) = (
                P::cell_coord(o, 1),
                if P::DIM > 2 { P::cell_coord(o, 2) } else { 0 },
            );
            let k = self.row(c, dy, dz, (-1, 1), &mut runs);
            for run in runs.iter().take(k) {
                let mut hit = |k: usize, d2: f32| {
                    if k != skip {
                        f(ids[k], d2);
                    }
                };
                if run.shift == P::ZERO {
                    parts.for_each_within(p, run.lo, run.hi, r2, hit);
                    continue;
                }
                // Through a face: the query moved where it is the lower
                // coordinate, the candidates where they are.
                let (q, t) = PeriodicBox::image(p, run.shift);
                if t == P::ZERO {
                    parts.for_each_within(q, run.lo, run.hi, r2, &mut hit);
                } else {
                    parts.for_each_shifted_within(q, t, run.lo, run.hi, r2, &mut hit);
                }
            }
        }
    }
}

/// A range of sorted slots and the shift of its particles' image.
#[derive(Clone, Copy, Debug)]
struct Run<P> {
    lo: usize,
    hi: usize,
    shift: P,
}

impl<P: Point> Run<P> {
    const EMPTY: Self = Self {
        lo: 0,
        hi: 0,
        shift: P::ZERO,
    };
}

impl<P: Point, S, R, C> NeighborSearch<P> for DenseGrid<P, S, R, C>
where
    S: Storage<SortedParticle<P>>,
    R: Storage<u32>,
    C: Storage<u32>,
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
        if positions.iter().any(|p| !p.is_finite()) {
            return Err(Error::NonFinite);
        }
        let (lo, hi) = (self.domain.lo(), self.domain.hi());
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
        let domain = self.domain;
        // Pass 1: each particle's cell, kept in its rank slot, counted in
        // `starts[cell + 1]`.
        let starts = self.starts.as_mut().get_mut(..=count).unwrap_or(&mut []);
        starts.fill(0);
        let ranks = self.ranks.as_mut().get_mut(..n).unwrap_or(&mut []);
        for (r, &p) in ranks.iter_mut().zip(positions) {
            let cell = cells.index(cells.cell_of(domain.lo(), domain.wrap(p)));
            *r = cell as u32;
            if let Some(s) = starts.get_mut(cell + 1) {
                *s += 1;
            }
        }
        let mut run = 0u32;
        for s in starts.iter_mut() {
            run += *s;
            *s = run;
        }
        // Now `starts[c + 1]` is the end of cell c: scatter from the ends
        // backwards, so each cell keeps its particles in id order and the
        // counters finish as the starts, one place up.
        let mut planes = PlanesMut::new(self.particles.as_mut(), n);
        for (i, (r, &p)) in ranks.iter_mut().zip(positions).enumerate().rev() {
            if let Some(end) = starts.get_mut(*r as usize + 1) {
                *end -= 1;
                planes.set(*end as usize, domain.wrap(p), i as u32);
                *r = *end;
            }
        }
        starts.copy_within(1.., 0);
        if let Some(last) = starts.last_mut() {
            *last = n as u32;
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
        let k = self.rank(id)?;
        let parts = self.planes();
        (k < parts.len()).then(|| parts.pos(k))
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, f: F) -> Result<(), Error> {
        let k = self.rank(id).ok_or(Error::UnknownId { id })?;
        let parts = self.planes();
        let p = parts.pos_or_zero(k);
        self.visit(&parts, p, self.cell_of(p), k, f);
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
        // A cell just outside a non-periodic face: `row` leaves out the
        // cells past the face.
        self.visit(&self.planes(), p, c, usize::MAX, f);
        Ok(())
    }

    /// One sweep in cell order: each cell against itself, the next cell of
    /// its row and its forward rows (each neighbouring pair of cells once),
    /// copied into one run and tested in lanes as the cell-sorted hash does.
    ///
    /// Pairs of cells across a periodic face: the minimum image adds the
    /// period to the lower coordinate ([`PeriodicBox::offset`]), so where
    /// every axis of a range's shift is `0` or `+L` (the range lies beyond
    /// an upper face of the cell) its candidates are copied moved by the
    /// shift into the same run, and the plain kernel measures them. Each such
    /// pair of cells is taken from its upper side only, forward or not: the
    /// other cell sees this one with the negated shift and leaves it. The
    /// rare ranges shifted by `+L` along one axis and `-L` along another
    /// (cells on two faces at once) are taken from the half stencil, one
    /// range at a time.
    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, f: F) {
        let parts = self.planes();
        let n = self.cells.n;
        let mut out = Batch::new(f, self.radius_sq);
        let mut local = Local::new();
        let mut runs = [Run::EMPTY; 2];
        let nrows = P::HALF_ROWS.len();
        let axes = self.domain.axes();
        for z in 0..n[2] {
            for y in 0..n[1] {
                for x in 0..n[0] {
                    let c = [x, y, z];
                    let (lo, hi) = self.range(self.index(c));
                    if lo == hi {
                        continue;
                    }
                    // The forward runs: the next cell of the own row, then
                    // the three cells of each forward row.
                    let mut fwd = [Run::EMPTY; 10];
                    let mut m = 0;
                    for r in 0..=nrows {
                        let (dy, dz, dx) = match P::HALF_ROWS.get(r.wrapping_sub(1)) {
                            Some(&o) if r > 0 => (
                                P::cell_coord(o, 1),
                                if P::DIM > 2 { P::cell_coord(o, 2) } else { 0 },
                                (-1, 1),
                            ),
                            _ => (0, 0, (1, 1)),
                        };
                        let k = self.row(c, dy, dz, dx, &mut runs);
                        for run in &runs[..k] {
                            if let Some(slot) = fwd.get_mut(m) {
                                *slot = *run;
                                m += 1;
                            }
                        }
                    }
                    let fwd = &fwd[..m];
                    // The ranges beyond an upper face of this cell, from
                    // every row around it.
                    let mut up = [Run::EMPTY; 18];
                    let mut u = 0;
                    let upper = (0..P::DIM).any(|k| axes & (1 << k) != 0 && c[k] == n[k] - 1);
                    if upper {
                        let top_x = axes & 1 != 0 && c[0] == n[0] - 1;
                        for &o in P::ROWS {
                            let (dy, dz) = (
                                P::cell_coord(o, 1),
                                if P::DIM > 2 { P::cell_coord(o, 2) } else { 0 },
                            );
                            // Only rows through no lower face and through an
                            // upper one (or along an upper x face) hold such
                            // ranges.
                            let (mut down, mut up_yz) = (false, false);
                            for (k, d) in [(1usize, dy), (2, dz)] {
                                if k < P::DIM && axes & (1 << k) != 0 {
                                    down |= c[k] + d < 0;
                                    up_yz |= c[k] + d >= n[k];
                                }
                            }
                            if down || !(up_yz || top_x) {
                                continue;
                            }
                            let k = self.row(c, dy, dz, (-1, 1), &mut runs);
                            for run in &runs[..k] {
                                if run.shift != P::ZERO
                                    && (0..P::DIM).all(|a| run.shift.coord(a) >= 0.0)
                                    && let Some(slot) = up.get_mut(u)
                                {
                                    *slot = *run;
                                    u += 1;
                                }
                            }
                        }
                    }
                    let up = &up[..u];
                    let plain = fwd.iter().filter(|r| r.shift == P::ZERO);
                    let mut done = false;
                    if LOCAL > 0 {
                        local.clear();
                        let mut fits = local.push(&parts, lo, hi);
                        for r in plain.clone() {
                            fits = fits && local.push(&parts, r.lo, r.hi);
                        }
                        for r in up {
                            fits = fits && local.push_shifted(&parts, r.lo, r.hi, r.shift);
                        }
                        if fits {
                            let end = local.len();
                            let lp = local.view::<P>();
                            for a in 0..hi - lo {
                                out.begin(&lp, parts.id_or_zero(lo + a), parts.pos_or_zero(lo + a));
                                out.add(&lp, a + 1, end);
                            }
                            out.flush(&lp);
                            done = true;
                        }
                    }
                    if !done {
                        for k in lo..hi {
                            out.begin(&parts, parts.id_or_zero(k), parts.pos_or_zero(k));
                            out.add(&parts, k + 1, hi);
                            for r in plain.clone() {
                                out.add(&parts, r.lo, r.hi);
                            }
                        }
                        out.flush(&parts);
                    }
                    // In place: the ranges beyond an upper face that did not
                    // fit the copy, and the ranges shifted both ways (none
                    // without periodic axes).
                    if axes == 0 {
                        continue;
                    }
                    let mixed = fwd.iter().filter(|r| {
                        (0..P::DIM).any(|a| r.shift.coord(a) > 0.0)
                            && (0..P::DIM).any(|a| r.shift.coord(a) < 0.0)
                    });
                    let rest = up.iter().filter(|_| !done).chain(mixed);
                    let (r2, f) = (out.r2, &mut out.f);
                    let ids = parts.ids();
                    for r in rest {
                        for k in lo..hi {
                            let (a, p) = (parts.id_or_zero(k), parts.pos_or_zero(k));
                            let (q, t) = PeriodicBox::image(p, r.shift);
                            parts.for_each_shifted_within(q, t, r.lo, r.hi, r2, |j, d2| {
                                f(a, ids[j], d2);
                            });
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
        let parts = self.planes();
        let mut total = 0usize;
        if let Some(o) = offsets.first_mut() {
            *o = 0;
        }
        for k in 0..n {
            let p = parts.pos_or_zero(k);
            let mut degree = 0usize;
            self.visit(&parts, p, self.cell_of(p), k, |_, _| degree += 1);
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
        for k in 0..n {
            let p = parts.pos_or_zero(k);
            self.visit(&parts, p, self.cell_of(p), k, |j, _| {
                if let Some(d) = indices.get_mut(at) {
                    *d = j;
                }
                at += 1;
            });
        }
        Ok(total)
    }

    /// The ids in cell order (cells x fastest, then y, then z; input order
    /// within a cell).
    fn spatial_order(&self, order: &mut [u32]) -> Result<(), Error> {
        let ids = self.planes().ids();
        let available = order.len();
        let out = order.get_mut(..ids.len()).ok_or(Error::BufferTooSmall {
            needed: ids.len(),
            available,
        })?;
        out.copy_from_slice(ids);
        Ok(())
    }
}

impl<P: Point, S, R, C> Validate for DenseGrid<P, S, R, C>
where
    S: Storage<SortedParticle<P>>,
    R: Storage<u32>,
    C: Storage<u32>,
{
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
        let parts = self.planes();
        for k in 0..n {
            let id = parts.id_or_zero(k);
            ensure((id as usize) < n, W, "ids below len")?;
            ensure(self.rank(id) == Some(k), W, "ranks invert the order")?;
            let p = parts.pos_or_zero(k);
            ensure(
                p.is_finite() && self.domain.contains_wrapped(p),
                W,
                "positions wrapped",
            )?;
            let (lo, hi) = self.range(self.index(self.cell_of(p)));
            ensure(lo <= k && k < hi, W, "particle in its cell's run")?;
        }
        Ok(())
    }
}

impl<P: Point, S, R, C> crate::inspect::Inspect for DenseGrid<P, S, R, C>
where
    S: Storage<SortedParticle<P>>,
    R: Storage<u32>,
    C: Storage<u32>,
{
    type Stats = crate::inspect::SearchStats;

    /// The buffers' bytes: `N · 4(d + 2) + 4 · (cells + 1)`.
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.particles.as_ref())
            + core::mem::size_of_val(self.ranks.as_ref())
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
