//! [`GridBroadPhase`]: boxes of similar size, found in pairs by one uniform
//! grid that is counting-sorted afresh at every detection.

use crate::brute::{BruteForceBroadPhase, BruteSlot};
use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;
use crate::traits::BroadPhase;

mod par;

/// Cells along one axis at most: the cell of a coordinate is then computed
/// to within `2¹⁴ · 2 · 2⁻²⁴ < 2⁻⁷` of a cell, which the cell's margin over
/// the longest edge ([`crate::uniform::CELL_MARGIN`]) absorbs.
const AXIS_CELLS: f32 = 16384.0;

/// A broad phase for boxes of similar size: the boxes live in one slot per
/// id (`O(1)` insert, update and remove), and each detection counting-sorts
/// them by the cell of their lower corner in a dense uniform grid over the
/// stored boxes, whose cell is a little longer than the longest edge of any
/// box, then tests every box against the boxes of its own cell and of the
/// 13 forward cells around it (4 in 2D), from a contiguous copy of those
/// cells' boxes, eight at a time.
///
/// Two boxes overlap only if their lower corners are less than the longest
/// edge apart along every axis, so their cells are adjacent: the grid finds
/// every overlapping pair, once, and the exact test is
/// [`BoundingBox::overlaps`]'s (closed intervals), the brute force's own.
/// Nothing is kept between detections and nothing is updated
/// incrementally.
///
/// **Large boxes.** Up to `4√n` boxes (at least 8) longer than the rest —
/// those of the largest size classes (binary exponent of the longest
/// edge), as many classes as fit that allowance — are kept out of the
/// grid: the cell is set by the others, and each large box is tested
/// against the boxes of the cells it covers and against the other large
/// boxes. A floor, walls or a few big bodies among small ones then cost
/// the cells they cover, not a grid as coarse as they are.
///
/// **What it costs.** A detection is `O(n + S + pairs + candidates)` for
/// `S` cells, where the candidates of a box are the boxes within one cell
/// of it, plus, per large box, the cells it covers and the other large
/// boxes. Few when the boxes are of similar size, as in particle and
/// rigid-body scenes. More large boxes than the allowance make every cell
/// as long as the longest of the rest (correct, but slower: the
/// [`HierarchicalHashGrid`](crate::HierarchicalHashGrid) keeps every size
/// in cells of its own). Where the boxes spread over more cells than the
/// caller's `starts` buffer has, the cells are doubled until they fit (again
/// correct, with more candidates). Box queries and ray casts scan the
/// stored boxes, `O(n)` each. Where no grid can take the boxes (more edges
/// than the allowance so long that they are not a finite `f32`), the
/// detection is the all-pairs test, `O(n²)`, with the same result.
///
/// **On many workers.** [`par_update_all`](Self::par_update_all) and
/// [`par_for_each_overlap`](BroadPhase::par_for_each_overlap) run every
/// pass in tasks through an [`Executor`](crate::exec::Executor): the
/// census, the counting sort (each worker owns a range of cells), the
/// gather and the sweep; [`overlap_tasks`](BroadPhase::overlap_tasks)
/// sinks, fixed by the box count, each with the same pairs in the same
/// order for every executor. No memory beyond the buffers above, and under
/// 10 KiB of stack per call (per-task results, the prefix sums' partials).
///
/// **Memory.** `C · (size_of::<B>() + 8)` bytes of slots (32 per id in 3D,
/// 24 in 2D), `2·DIM + 2` words per box of `words` (the boxes in cell
/// order, as planes of coordinates, their ids and their cells: 32 bytes per
/// box in 3D, 24 in 2D), and 4 per cell start: `32C + 32N + 4S` bytes in
/// 3D, `24C + 24N + 4S` in 2D. `S` of about `N` keeps the cells as fine as
/// the boxes allow at the density of the moving-cubes scene.
///
/// # Example
///
/// ```
/// use spatium::uniform::GridBroadPhase;
/// use spatium::{Aabb2, BroadPhase, BruteSlot, Vec2};
///
/// // 8 ids, room for 8 boxes (6 words each in 2D), 16 cells.
/// let mut bp = GridBroadPhase::new([BruteSlot::<Aabb2>::EMPTY; 8], [0u32; 48], [0u32; 16]);
/// let unit = |x: f32, y: f32| Aabb2::new(Vec2::new(x, y), Vec2::new(x + 1.0, y + 1.0));
/// bp.insert(3, unit(0.0, 0.0)?)?;
/// bp.insert(5, unit(0.5, 0.9)?)?;
/// bp.insert(6, unit(3.0, 0.0)?)?;
/// let mut pairs = Vec::new();
/// bp.for_each_overlap(|a, b| pairs.push((a.min(b), a.max(b))))?;
/// assert_eq!(pairs, [(3, 5)]);
/// # Ok::<(), spatium::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct GridBroadPhase<B, S, W, T>
where
    B: BoundingBox,
    S: Storage<BruteSlot<B>>,
    W: Storage<u32>,
    T: Storage<u32>,
{
    boxes: BruteForceBroadPhase<B, S>,
    words: W,
    starts: T,
    /// The last detection's cell edge (0 before it, or when it fell back
    /// to the all-pairs test).
    cell: f32,
}

/// The grid of one detection.
#[derive(Clone, Copy, Debug)]
struct Frame {
    origin: [f32; 3],
    inv: f32,
    dims: [usize; 3],
    /// Boxes whose longest edge has a binary exponent above this are
    /// *large*: kept out of the grid, tested against the cells they cover.
    large_above: u32,
}

/// The size class of an edge: its binary exponent field (0 for an edge of
/// 0, 255 for one that is not finite), the unit of the large-box rule.
#[inline(always)]
fn edge_class(e: f32) -> u32 {
    (e.to_bits() >> 23) & 0xff
}

/// Large boxes allowed: the rest set the cell. A few boxes far longer than
/// the others (a floor, walls, a few big bodies) would otherwise make every
/// cell as long. Each large box reads the cells it covers and is tested
/// against every other large box, so their number is kept to `4√n` (at
/// least 8): their own pairs then cost at most `8n` tests.
fn large_allowed(n: usize) -> usize {
    (4 * n.isqrt()).max(8)
}

impl Frame {
    /// The cell of coordinate `x` along axis `a`, clamped to the grid
    /// (non-negative and finite: `as` saturates, the clamp keeps a
    /// coordinate rounded up past the last cell in it).
    #[inline(always)]
    fn axis(&self, a: usize, x: f32) -> usize {
        let top = self.dims[a].saturating_sub(1);
        (((x - self.origin[a]) * self.inv) as usize).min(top)
    }

    /// The cell coordinates of a point.
    #[inline(always)]
    fn coords(&self, p: &[f32; 3]) -> [usize; 3] {
        [self.axis(0, p[0]), self.axis(1, p[1]), self.axis(2, p[2])]
    }

    /// Cells of the grid.
    #[inline]
    fn total(&self) -> usize {
        self.dims.iter().product()
    }

    /// Dense cell of a lower corner (x fastest).
    #[inline(always)]
    fn cell<P: Point>(&self, lo: P) -> usize {
        let mut k = 0usize;
        for a in (0..P::DIM.min(3)).rev() {
            k = k * self.dims[a] + self.axis(a, lo.coord(a));
        }
        k
    }
}

/// What the frame of a detection needs to know of the boxes: the bounds of
/// their lower corners and, per size class (binary exponent of the longest
/// edge), how many boxes and the longest edge among them. Sums and extremes
/// only, so the census of a set is the merge of its parts' in any order.
#[derive(Clone, Copy, Debug)]
struct Census {
    lo: [f32; 3],
    hi: [f32; 3],
    count: [u32; 256],
    longest: [f32; 256],
}

/// Words of a [`Census`] kept in a `u32` scratch buffer.
const CENSUS_WORDS: usize = 6 + 2 * 256;

impl Census {
    const EMPTY: Self = Self {
        lo: [f32::INFINITY; 3],
        hi: [f32::NEG_INFINITY; 3],
        count: [0; 256],
        longest: [0.0; 256],
    };

    /// Adds the boxes at dense positions `range` of the brute force's slots.
    fn add_all<B: BoundingBox>(&mut self, slots: &[BruteSlot<B>], range: core::ops::Range<usize>) {
        let dim = B::Point::DIM.min(3);
        for d in slots.get(range).unwrap_or_default() {
            let b = slots.get(d.id() as usize).map_or(B::ZERO, BruteSlot::aabb);
            let bl = b.min();
            for a in 0..dim {
                self.lo[a] = self.lo[a].min(bl.coord(a));
                self.hi[a] = self.hi[a].max(bl.coord(a));
            }
            let e = b.longest_edge();
            let c = edge_class(e) as usize;
            if let (Some(k), Some(l)) = (self.count.get_mut(c), self.longest.get_mut(c)) {
                *k += 1;
                *l = l.max(e);
            }
        }
    }

    /// Adds another census.
    fn merge(&mut self, o: &Self) {
        for a in 0..3 {
            self.lo[a] = self.lo[a].min(o.lo[a]);
            self.hi[a] = self.hi[a].max(o.hi[a]);
        }
        for (k, &c) in self.count.iter_mut().zip(&o.count) {
            *k = k.saturating_add(c);
        }
        for (l, &e) in self.longest.iter_mut().zip(&o.longest) {
            *l = l.max(e);
        }
    }

    /// Writes the census into `w` (at least [`CENSUS_WORDS`] long).
    fn store(&self, w: &mut [u32]) {
        let words = self
            .lo
            .iter()
            .chain(&self.hi)
            .map(|x| x.to_bits())
            .chain(self.count.iter().copied())
            .chain(self.longest.iter().map(|x| x.to_bits()));
        for (o, v) in w.iter_mut().zip(words) {
            *o = v;
        }
    }

    /// Reads a census written by [`store`](Self::store).
    fn load(w: &[u32]) -> Self {
        let mut c = Self::EMPTY;
        let f = |k: usize| f32::from_bits(w.get(k).copied().unwrap_or(0));
        for a in 0..3 {
            c.lo[a] = f(a);
            c.hi[a] = f(3 + a);
        }
        for k in 0..256 {
            c.count[k] = w.get(6 + k).copied().unwrap_or(0);
            c.longest[k] = f(6 + 256 + k);
        }
        c
    }

    /// The grid over `n` boxes of this census in `dim` dimensions, with at
    /// most `room` cells; `None` when no grid can take them (a cell edge
    /// that is not finite).
    fn fit(&self, dim: usize, n: usize, room: usize) -> Option<Frame> {
        let (lo, hi) = (self.lo, self.hi);
        // The smallest class bound with at most `large_allowed` boxes
        // above it; the longest edge at or below it sets the cell.
        let allowed = large_allowed(n);
        let mut above = 0usize;
        let mut large_above = 255u32;
        for c in (0..256usize).rev() {
            let k = self.count.get(c).copied().unwrap_or(0) as usize;
            if above + k > allowed {
                break;
            }
            above += k;
            large_above = c.saturating_sub(1) as u32;
            if c == 0 {
                break;
            }
        }
        let longest = self
            .longest
            .iter()
            .take(large_above as usize + 1)
            .fold(0.0f32, |m, &l| m.max(l));
        let mut cell = longest * crate::cell::CELL_MARGIN;
        // In a sparse scene, cells up to 1.5 times that, towards two boxes
        // per cell on average over the corners' bounding box: fewer, fuller
        // cells cost less per box (on the moving cubes, half a box per
        // longest edge cubed, 1.5 times took a step at 10⁶ from 132 to
        // 120 ms in a first version of the sweep; 2 times, 133).
        let mut volume = 1.0f32;
        for a in 0..dim {
            volume *= hi[a] - lo[a];
        }
        let per_two = 2.0 * volume / n.max(1) as f32;
        let edge = if dim == 3 {
            libm::cbrtf(per_two)
        } else {
            libm::sqrtf(per_two)
        };
        if edge.is_finite() {
            cell = cell.max(edge.min(1.5 * cell));
        }
        for a in 0..dim {
            cell = cell.max((hi[a] - lo[a]) / AXIS_CELLS);
        }
        if cell == 0.0 {
            // Every box one and the same point.
            cell = 1.0;
        }
        // Cells are numbered in `u32`.
        let room = room.clamp(1, u32::MAX as usize);
        for _ in 0..160 {
            if !(cell.is_finite() && cell > 0.0) {
                return None;
            }
            let mut dims = [1usize; 3];
            let mut cells = 1usize;
            for a in 0..dim {
                // At most `AXIS_CELLS` + 1.
                dims[a] = ((hi[a] - lo[a]) / cell) as usize + 1;
                cells = cells.saturating_mul(dims[a]);
            }
            if cells <= room {
                return Some(Frame {
                    origin: lo,
                    inv: 1.0 / cell,
                    dims,
                    large_above,
                });
            }
            cell *= 2.0;
        }
        None
    }
}

/// Words per box of a [`GridBroadPhase`]'s `words`: the lower and upper
/// corners' coordinates, the id and the cell.
const fn words_per_box<P: Point>() -> usize {
    2 * P::DIM + 2
}

impl<B, S, W, T> GridBroadPhase<B, S, W, T>
where
    B: BoundingBox,
    S: Storage<BruteSlot<B>>,
    W: Storage<u32>,
    T: Storage<u32>,
{
    /// An empty broad phase: `slots` (all [`BruteSlot::EMPTY`]; its length
    /// is the id capacity), `words` (scratch of the detections, `2·DIM + 2`
    /// words per box, any contents) and `starts` (one word per cell of the
    /// grid, any contents). At most [`box_capacity`](Self::box_capacity)
    /// boxes are stored: the fewer of the slots and `words.len() / (2·DIM
    /// + 2)`.
    ///
    /// Never fails and allocates nothing; `const`. Memory: see the type.
    pub const fn new(slots: S, words: W, starts: T) -> Self {
        Self {
            boxes: BruteForceBroadPhase::new(slots),
            words,
            starts,
            cell: 0.0,
        }
    }

    /// Most boxes stored at once (an insert beyond it is refused with
    /// [`Error::CapacityExceeded`]).
    pub fn box_capacity(&self) -> usize {
        self.boxes
            .capacity()
            .min(self.words.as_ref().len() / words_per_box::<B::Point>())
    }

    /// Gives every stored id `i` the box `boxes[i]`: the brute force's
    /// [`update_all`](BruteForceBroadPhase::update_all) (ids not stored
    /// are ignored; nothing changes on error).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless every stored id is below
    /// `boxes.len()`; the errors of [`BroadPhase::update`] for a bad box.
    pub fn update_all(&mut self, boxes: &[B]) -> Result<(), Error> {
        self.boxes.update_all(boxes)
    }

    /// [`update_all`](Self::update_all) in tasks on `exec`
    /// ([`BruteForceBroadPhase::par_update_all`]).
    ///
    /// # Errors
    /// As [`update_all`](Self::update_all).
    pub fn par_update_all<E: crate::exec::Executor>(
        &mut self,
        exec: &E,
        boxes: &[B],
    ) -> Result<(), Error> {
        self.boxes.par_update_all(exec, boxes)
    }

    /// The cell edge of the last detection: a little over the longest edge
    /// of the boxes that are not large (up to 1.5 times that in a sparse
    /// scene), or more where the cells did not fit `starts`; 0 before
    /// the first detection of two or more boxes, or when it fell back to
    /// the all-pairs test.
    pub fn cell_size(&self) -> f32 {
        self.cell
    }

    /// The grid over the stored boxes' lower corners; `None` when no grid
    /// can take them (a cell edge that is not finite).
    fn frame(&self) -> Option<Frame> {
        let (slots, n) = self.boxes.dense_slots();
        let mut census = Census::EMPTY;
        census.add_all(slots, 0..n);
        census.fit(B::Point::DIM.min(3), n, self.starts.as_ref().len())
    }

    /// Sorts the boxes into the grid of this detection on the calling
    /// thread: the frame and the number of boxes in the grid (the large
    /// ones follow them in the planes); `None` (nothing written) when no
    /// grid can take the boxes.
    fn prepare(&mut self) -> Option<(Frame, usize)> {
        let dim = B::Point::DIM.min(3);
        let frame = self.frame()?;
        let total = frame.total();
        let (slots, n) = self.boxes.dense_slots();
        let cap = self.words.as_ref().len() / words_per_box::<B::Point>();
        let (coords, rest) = self.words.as_mut().split_at_mut(2 * dim * cap);
        let (ids, rest) = rest.split_at_mut(cap);
        let (Some(cells), Some(ids), Some(starts)) = (
            rest.get_mut(..n),
            ids.get_mut(..n),
            self.starts.as_mut().get_mut(..total),
        ) else {
            return None;
        };
        // Count, then turn the counts into starts; large boxes are marked
        // and go after the others.
        starts.fill(0);
        let mut large = 0usize;
        for (d, c) in slots.iter().take(n).zip(cells.iter_mut()) {
            let b = slots.get(d.id() as usize).map_or(B::ZERO, BruteSlot::aabb);
            if edge_class(b.longest_edge()) > frame.large_above {
                *c = LARGE;
                large += 1;
                continue;
            }
            let k = frame.cell(b.min());
            *c = k as u32;
            if let Some(s) = starts.get_mut(k) {
                *s += 1;
            }
        }
        let mut sum = 0u32;
        for s in starts.iter_mut() {
            let c = *s;
            *s = sum;
            sum += c;
        }
        // Scatter the ids (each start becomes its cell's end), then gather
        // the boxes in that order into the planes.
        let mut next_large = n - large;
        for (d, &k) in slots.iter().take(n).zip(cells.iter()) {
            if k == LARGE {
                if let Some(e) = ids.get_mut(next_large) {
                    *e = d.id();
                }
                next_large += 1;
            } else if let Some(s) = starts.get_mut(k as usize) {
                if let Some(e) = ids.get_mut(*s as usize) {
                    *e = d.id();
                }
                *s += 1;
            }
        }
        let coords: &mut [f32] = bytemuck::cast_slice_mut(coords);
        gather(slots, ids, &mut planes_mut::<B::Point>(coords, cap, n));
        self.cell = 1.0 / frame.inv;
        Some((frame, n - large))
    }

    /// The sorted boxes of the last [`prepare`](Self::prepare) as planes,
    /// and the ends of the cells of its `frame`.
    fn view(&self, frame: &Frame) -> (BoxPlanes<'_>, &[u32]) {
        let dim = B::Point::DIM.min(3);
        let n = self.boxes.box_count();
        let cap = self.words.as_ref().len() / words_per_box::<B::Point>();
        let (coords, rest) = self.words.as_ref().split_at(2 * dim * cap);
        let coords: &[f32] = bytemuck::cast_slice(coords);
        // Whole planes (`cap` long, past `n` whatever an earlier detection
        // left): planes of one length test faster (in the sweep at 10⁶
        // moving cubes, 72 against 91 ms with planes cut to `n`); lanes
        // past `n` are masked off.
        let plane = |p: usize| coords.get(p * cap..(p + 1) * cap).unwrap_or_default();
        let z = if dim == 3 { 2 } else { 0 };
        let planes = BoxPlanes {
            lo: [plane(0), plane(1), plane(z)],
            hi: [plane(dim), plane(dim + 1), plane(dim + z)],
            ids: rest.get(..n).unwrap_or_default(),
        };
        let ends = self
            .starts
            .as_ref()
            .get(..frame.total())
            .unwrap_or_default();
        (planes, ends)
    }

    /// Every overlapping pair through the grid; `false` (nothing called)
    /// when no grid can take the boxes.
    fn grid_pairs<F: FnMut(u32, u32)>(&mut self, f: &mut F) -> bool {
        let Some((frame, m)) = self.prepare() else {
            return false;
        };
        let dim = B::Point::DIM.min(3);
        let n = self.boxes.box_count();
        let (planes, ends) = self.view(&frame);
        sweep(&frame, dim, ends, &planes, 0..frame.total(), f);
        large_pairs(&frame, dim, ends, &planes, m..n, f);
        true
    }
}

/// The coordinate planes of `words`' first `2·dim·cap` words, each cut to
/// its first `n`: lower corners' axes 0, 1, 2, then upper corners' (the
/// planes of a missing axis are empty).
fn planes_mut<P: Point>(coords: &mut [f32], cap: usize, n: usize) -> [&mut [f32]; 6] {
    let dim = P::DIM.min(3);
    let mut out: [&mut [f32]; 6] = Default::default();
    let mut rest = coords;
    for p in 0..2 * dim {
        let (head, tail) = rest.split_at_mut(cap.min(rest.len()));
        rest = tail;
        let slot = if p < dim { p } else { 3 + p - dim };
        if let Some(o) = out.get_mut(slot) {
            let len = head.len();
            *o = head.get_mut(..n.min(len)).unwrap_or_default();
        }
    }
    out
}

/// Writes the boxes of `ids` into the planes (as cut by [`planes_mut`],
/// or pieces of them starting at the same sorted position as `ids`).
fn gather<B: BoundingBox>(slots: &[BruteSlot<B>], ids: &[u32], planes: &mut [&mut [f32]; 6]) {
    let dim = B::Point::DIM.min(3);
    for (j, &id) in ids.iter().enumerate() {
        let b = slots.get(id as usize).map_or(B::ZERO, BruteSlot::aabb);
        let (lo, hi) = (b.min(), b.max());
        for a in 0..dim {
            if let Some(c) = planes.get_mut(a).and_then(|p| p.get_mut(j)) {
                *c = lo.coord(a);
            }
            if let Some(c) = planes.get_mut(3 + a).and_then(|p| p.get_mut(j)) {
                *c = hi.coord(a);
            }
        }
    }
}

/// The cells of a detection in the planes: `ends[k]` is the end of cell
/// `k`, its start the previous cell's end.
#[derive(Clone, Copy)]
struct Ends<'a>(&'a [u32]);

impl Ends<'_> {
    /// First sorted position of cell `k`.
    #[inline(always)]
    fn start(self, k: usize) -> usize {
        k.checked_sub(1)
            .and_then(|p| self.0.get(p))
            .map_or(0, |&e| e as usize)
    }

    /// One past the last sorted position of cell `k`.
    #[inline(always)]
    fn end(self, k: usize) -> usize {
        self.0.get(k).map_or(0, |&e| e as usize)
    }
}

/// The cell mark of a large box.
const LARGE: u32 = u32::MAX;

/// The pairs of the large boxes at sorted positions `large` (the large
/// boxes are the last in the planes): each against the grid's boxes in the
/// cells its box covers, widened by one cell below (a grid box overlapping
/// it has its lower corner at most one cell below the large box's, and
/// none above its upper corner), then against the large boxes after it.
#[inline(always)]
fn large_pairs<F: FnMut(u32, u32)>(
    frame: &Frame,
    dim: usize,
    ends: &[u32],
    p: &BoxPlanes<'_>,
    large: core::ops::Range<usize>,
    f: &mut F,
) {
    let [nx, ny, nz] = frame.dims;
    let cells = Ends(ends);
    let (start, end) = (|k| cells.start(k), |k| cells.end(k));
    let last = p.ids.len();
    for i in large {
        let q = p.probe(dim, i);
        let (c0, c1) = (frame.coords(&q.lo), frame.coords(&q.hi));
        let span = |a: usize| (c0[a].saturating_sub(1), c1[a]);
        let (x0, x1) = span(0);
        let (y0, y1) = span(1);
        let (z0, z1) = if dim == 3 { span(2) } else { (0, 0) };
        for z in z0..=z1.min(nz - 1) {
            for y in y0..=y1.min(ny - 1) {
                let row = (z * ny + y) * nx;
                let r = (start(row + x0), end(row + x1.min(nx - 1)));
                p.test(dim, &q, r, f);
            }
        }
        p.test(dim, &q, (i + 1, last), f);
    }
}

/// The forward rows of the half stencil, `(dy, dz)`: with the next cell
/// of its own row, each cell meets each of its neighbours once.
const HALF_ROWS_3D: [(isize, isize); 4] = [(1, 0), (-1, 1), (0, 1), (1, 1)];
/// The same in 2D.
const HALF_ROWS_2D: [(isize, isize); 1] = [(1, 0)];

/// The sorted boxes as planes: plane `p < DIM` the lower corners'
/// coordinate `p`, plane `DIM + p` the upper corners', each `n` long, and
/// their ids.
#[derive(Clone, Copy)]
struct BoxPlanes<'a> {
    lo: [&'a [f32]; 3],
    hi: [&'a [f32]; 3],
    ids: &'a [u32],
}

/// Lanes tested together.
const LANES: usize = 8;

/// The box whose candidates are tested.
struct Probe {
    id: u32,
    lo: [f32; 3],
    hi: [f32; 3],
}

impl BoxPlanes<'_> {
    /// The box at sorted position `i`, to test others against.
    #[inline(always)]
    fn probe(&self, dim: usize, i: usize) -> Probe {
        let mut q = Probe {
            id: self.ids.get(i).copied().unwrap_or(0),
            lo: [0.0; 3],
            hi: [0.0; 3],
        };
        for d in 0..dim {
            q.lo[d] = self.lo[d].get(i).copied().unwrap_or(f32::NAN);
            q.hi[d] = self.hi[d].get(i).copied().unwrap_or(f32::NAN);
        }
        q
    }

    /// Calls `f(q.id, b)` for every box `b` at sorted positions `r0..r1`
    /// overlapping the box `q` (closed intervals, as
    /// [`BoundingBox::overlaps`]), eight candidates at a time.
    #[inline(always)]
    fn test<F: FnMut(u32, u32)>(&self, dim: usize, q: &Probe, (r0, r1): (usize, usize), f: &mut F) {
        let (lo, hi, a) = (&q.lo, &q.hi, q.id);
        let mut j = r0;
        while j < r1 {
            let valid = (r1 - j).min(LANES);
            let mut mask = 0u32;
            let lanes = (
                self.lo[0].get(j..j + LANES),
                self.hi[0].get(j..j + LANES),
                self.lo[1].get(j..j + LANES),
                self.hi[1].get(j..j + LANES),
                self.lo[2].get(j..j + LANES),
                self.hi[2].get(j..j + LANES),
            );
            if let (Some(x0), Some(x1), Some(y0), Some(y1), Some(z0), Some(z1)) = lanes {
                for l in 0..LANES {
                    let mut hit = (lo[0] <= x1[l]) & (x0[l] <= hi[0]);
                    hit &= (lo[1] <= y1[l]) & (y0[l] <= hi[1]);
                    if dim == 3 {
                        hit &= (lo[2] <= z1[l]) & (z0[l] <= hi[2]);
                    }
                    mask |= u32::from(hit) << l;
                }
                mask &= (1u32 << valid) - 1;
            } else {
                // The last lanes of the planes: one at a time.
                for l in 0..valid {
                    let k = j + l;
                    let mut hit = true;
                    for d in 0..dim {
                        let (Some(&b0), Some(&b1)) = (self.lo[d].get(k), self.hi[d].get(k)) else {
                            return;
                        };
                        hit &= (lo[d] <= b1) & (b0 <= hi[d]);
                    }
                    mask |= u32::from(hit) << l;
                }
            }
            while mask != 0 {
                let l = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if let Some(&b) = self.ids.get(j + l) {
                    f(a, b);
                }
            }
            j += LANES;
        }
    }
}

/// The pairs of the cells `cells` with themselves and their forward cells;
/// `ends[k]` is the end of cell `k` in the planes (its start the previous
/// cell's end). Always inlined, so `dim` is a constant in the lane tests.
#[inline(always)]
fn sweep<F: FnMut(u32, u32)>(
    frame: &Frame,
    dim: usize,
    ends: &[u32],
    p: &BoxPlanes<'_>,
    cells: core::ops::Range<usize>,
    f: &mut F,
) {
    let rows: &[(isize, isize)] = if dim == 3 {
        &HALF_ROWS_3D
    } else {
        &HALF_ROWS_2D
    };
    let [nx, ny, nz] = frame.dims;
    let ends = Ends(ends);
    let (start, end) = (|k| ends.start(k), |k| ends.end(k));
    let mut fwd = [(0usize, 0usize); 6];
    if cells.is_empty() {
        return;
    }
    // Row by row (a row: the cells of one `y`, `z`), each from its first
    // cell in `cells` to its last.
    for row_index in cells.start / nx..=(cells.end - 1) / nx {
        let (y, z) = (row_index % ny, row_index / ny);
        let row = row_index * nx;
        let x_first = cells.start.saturating_sub(row);
        let x_end = (cells.end - row).min(nx);
        for x in x_first..x_end {
            let k = row + x;
            let (lo, hi) = (start(k), end(k));
            if lo == hi {
                continue;
            }
            // The cell's own later boxes and the next cell of its row are
            // one range; then the three cells of each forward row.
            let mut m = 0;
            let (x0, x1) = (x.saturating_sub(1), (x + 1).min(nx - 1));
            for &(dy, dz) in rows {
                let (yy, zz) = (y as isize + dy, z as isize + dz);
                if yy < 0 || zz < 0 || yy as usize >= ny || zz as usize >= nz {
                    continue;
                }
                let r = (zz as usize * ny + yy as usize) * nx;
                let (a, b) = (start(r + x0), end(r + x1));
                if a < b {
                    fwd[m] = (a, b);
                    m += 1;
                }
            }
            let next = if x + 1 < nx { end(k + 1) } else { hi };
            for i in lo..hi {
                let q = p.probe(dim, i);
                p.test(dim, &q, (i + 1, next), f);
                for &r in &fwd[..m] {
                    p.test(dim, &q, r, f);
                }
            }
        }
    }
}

impl<B, S, W, T> BroadPhase<B> for GridBroadPhase<B, S, W, T>
where
    B: BoundingBox,
    S: Storage<BruteSlot<B>>,
    W: Storage<u32>,
    T: Storage<u32>,
{
    fn capacity(&self) -> usize {
        self.boxes.capacity()
    }

    fn box_count(&self) -> usize {
        self.boxes.box_count()
    }

    fn insert(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        crate::ids::index(self.boxes.capacity(), id)?;
        aabb.check()?;
        if self.boxes.get(id).is_none() && self.boxes.box_count() >= self.box_capacity() {
            return Err(Error::CapacityExceeded {
                capacity: self.box_capacity(),
            });
        }
        self.boxes.insert(id, aabb)
    }

    fn update(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        self.boxes.update(id, aabb)
    }

    fn update_many(&mut self, updates: &[(u32, B)]) -> Result<(), Error> {
        self.boxes.update_many(updates)
    }

    fn remove(&mut self, id: u32) -> Result<B, Error> {
        self.boxes.remove(id)
    }

    fn get(&self, id: u32) -> Option<B> {
        self.boxes.get(id)
    }

    fn clear(&mut self) {
        self.boxes.clear();
        self.cell = 0.0;
    }

    fn for_each_overlap<F: FnMut(u32, u32)>(&mut self, mut f: F) -> Result<(), Error> {
        if self.boxes.box_count() < 2 {
            return Ok(());
        }
        if !self.grid_pairs(&mut f) {
            self.cell = 0.0;
            self.boxes.for_each_overlap(f)?;
        }
        Ok(())
    }

    fn query<F: FnMut(u32)>(&mut self, aabb: &B, f: F) -> Result<(), Error> {
        self.boxes.query(aabb, f)
    }

    /// Tasks of about 16 384 boxes for the grid (at most 256), then tasks
    /// of 64 large boxes for the allowance of large boxes (`4√n`, at least
    /// 8): a number fixed by the box count.
    fn overlap_tasks(&self) -> usize {
        Self::tasks_for(self.boxes.box_count())
    }

    /// The sort into the grid and the sweep in tasks (see
    /// [`GridBroadPhase`]'s parallel form): sink `t < grid tasks` gets the
    /// pairs of the cells whose boxes start in its share of the sorted
    /// boxes, the later sinks those of the large boxes.
    fn par_for_each_overlap<E, K, F>(
        &mut self,
        exec: &E,
        sinks: &mut [K],
        f: F,
    ) -> Result<(), Error>
    where
        E: crate::exec::Executor,
        K: Send,
        F: Fn(&mut K, u32, u32) + Sync,
        Self: Send + Sync,
    {
        self.par_overlaps(exec, sinks, f)
    }
}

/// Casts scan the stored boxes (as the brute force does), `O(n)` each.
impl<B, S, W, T> crate::ray::RayCast<B> for GridBroadPhase<B, S, W, T>
where
    B: BoundingBox,
    S: Storage<BruteSlot<B>>,
    W: Storage<u32>,
    T: Storage<u32>,
{
    fn ray_visit<F: FnMut(u32, f32) -> f32>(
        &mut self,
        ray: &crate::ray::Ray<B::Point>,
        visit: F,
    ) -> Result<(), Error> {
        self.boxes.ray_visit(ray, visit)
    }
}

impl<B, S, W, T> Validate for GridBroadPhase<B, S, W, T>
where
    B: BoundingBox,
    S: Storage<BruteSlot<B>>,
    W: Storage<u32>,
    T: Storage<u32>,
{
    fn validate(&self) -> Result<(), Corruption> {
        self.boxes.validate()?;
        ensure(
            self.boxes.box_count() <= self.box_capacity(),
            "GridBroadPhase",
            "boxes stored <= box capacity",
        )
    }
}

impl<B, S, W, T> crate::inspect::Inspect for GridBroadPhase<B, S, W, T>
where
    B: BoundingBox,
    S: Storage<BruteSlot<B>>,
    W: Storage<u32>,
    T: Storage<u32>,
{
    type Stats = crate::inspect::BruteStats;

    /// The slots, the words and the starts.
    fn memory_bytes(&self) -> usize {
        self.boxes.memory_bytes()
            + core::mem::size_of_val(self.words.as_ref())
            + core::mem::size_of_val(self.starts.as_ref())
    }

    fn stats(&self) -> Self::Stats {
        crate::inspect::BruteStats {
            boxes: self.boxes.box_count(),
            capacity: self.boxes.capacity(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Aabb3, Vec3};

    type Bp = GridBroadPhase<Aabb3, [BruteSlot<Aabb3>; 64], [u32; 256], [u32; 32]>;

    fn bp() -> Bp {
        GridBroadPhase::new([BruteSlot::EMPTY; 64], [0; 256], [0; 32])
    }

    fn cube(x: f32, y: f32, z: f32, e: f32) -> Aabb3 {
        Aabb3::new(Vec3::new(x, y, z), Vec3::new(x + e, y + e, z + e)).unwrap()
    }

    /// The pairs, each as `(min, max)`, sorted (at most 64), and how many.
    fn pairs(g: &mut Bp) -> ([(u32, u32); 64], usize) {
        let mut out = [(u32::MAX, u32::MAX); 64];
        let mut n = 0;
        g.for_each_overlap(|a, b| {
            out[n] = (a.min(b), a.max(b));
            n += 1;
        })
        .unwrap();
        out.sort_unstable();
        (out, n)
    }

    #[test]
    fn touching_boxes_across_cells_are_found_once() {
        let mut g = bp();
        g.insert(0, cube(0.0, 0.0, 0.0, 1.0)).unwrap();
        g.insert(1, cube(1.0, 1.0, 1.0, 1.0)).unwrap(); // touches 0 at a corner
        g.insert(2, cube(2.0, 0.5, 2.0, 1.0)).unwrap(); // touches 1 at an edge
        g.insert(3, cube(5.0, 5.0, 5.0, 1.0)).unwrap();
        let (p, n) = pairs(&mut g);
        assert_eq!(p[..n], [(0, 1), (1, 2)]);
        assert!(g.cell_size() >= 1.0);
        assert!(g.validate().is_ok());
    }

    #[test]
    fn a_full_structure_refuses_and_keeps_what_it_has() {
        let mut g = bp();
        for i in 0..32 {
            g.insert(i, cube(i as f32, 0.0, 0.0, 1.5)).unwrap();
        }
        assert_eq!(
            g.insert(40, cube(0.0, 0.0, 0.0, 1.0)),
            Err(Error::CapacityExceeded { capacity: 32 })
        );
        assert_eq!(g.box_count(), 32);
        assert_eq!(pairs(&mut g).1, 31);
    }

    #[test]
    fn cells_that_do_not_fit_the_starts_are_doubled() {
        let mut g = bp();
        // 32 unit boxes along a diagonal 1000 long: 10⁹ unit cells.
        for i in 0..32 {
            let t = i as f32 * 31.0;
            g.insert(i, cube(t, t, t, 1.0)).unwrap();
        }
        g.insert(32, cube(30.5, 30.5, 30.5, 1.0)).unwrap_err();
        g.remove(31).unwrap();
        g.insert(31, cube(30.5, 30.5, 30.5, 1.0)).unwrap();
        let (p, n) = pairs(&mut g);
        assert_eq!(p[..n], [(1, 31)]);
        assert!(g.cell_size() > 100.0);
    }

    #[test]
    fn boxes_beyond_the_grid_fall_back_to_all_pairs() {
        let mut g = bp();
        g.insert(0, cube(-3.0e38, 0.0, 0.0, 1.0)).unwrap();
        g.insert(
            1,
            Aabb3::new(Vec3::new(-3.0e38, 0.0, 0.0), Vec3::new(3.0e38, 1.0, 1.0)).unwrap(),
        )
        .unwrap();
        g.insert(2, cube(3.0e38, 0.5, 0.5, 1.0)).unwrap();
        let (p, n) = pairs(&mut g);
        assert_eq!(p[..n], [(0, 1), (1, 2)]);
        assert_eq!(g.cell_size(), 0.0);
    }

    #[test]
    fn a_floor_stays_out_of_the_grid() {
        let mut g = bp();
        // A floor 30 long under 20 unit cubes, some resting on it.
        g.insert(
            40,
            Aabb3::new(Vec3::new(0.0, 0.0, 0.0), Vec3::new(30.0, 1.0, 30.0)).unwrap(),
        )
        .unwrap();
        for i in 0..20 {
            let y = if i % 2 == 0 { 1.0 } else { 3.0 };
            g.insert(i, cube(i as f32 * 1.5, y, 2.0, 1.0)).unwrap();
        }
        let (p, n) = pairs(&mut g);
        assert_eq!(n, 10);
        assert!(p[..n].iter().all(|&(a, b)| b == 40 && a % 2 == 0));
        // Cubes of edge 1: cells of 1.5, doubled once to fit 32 starts.
        assert!(g.cell_size() < 4.0, "{}", g.cell_size());
    }

    #[test]
    fn points_pair_only_with_equal_points() {
        let mut g = bp();
        g.insert(0, cube(1.0, 2.0, 3.0, 0.0)).unwrap();
        g.insert(1, cube(1.0, 2.0, 3.0, 0.0)).unwrap();
        g.insert(2, cube(1.0, 2.0, 3.5, 0.0)).unwrap();
        let (p, n) = pairs(&mut g);
        assert_eq!(p[..n], [(0, 1)]);
    }
}
