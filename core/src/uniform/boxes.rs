//! [`GridBroadPhase`]: boxes of similar size, found in pairs by one uniform
//! grid that is counting-sorted afresh at every detection.

use crate::brute::{BruteForceBroadPhase, BruteSlot};
use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::{BoundingBox, Point};
use crate::periodic::PeriodicBox;
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
/// **Periodic.** [`set_domain`](Self::set_domain) makes the boxes overlap
/// periodically in a [`PeriodicBox`] (any subset of the axes), as
/// [`crate::PeriodicBroadPhase`] defines it, without images: the cells
/// wrap along the periodic axes. Same memory; ray casts are refused there.
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
    /// The domain whose periodic axes the boxes wrap around
    /// ([`PeriodicBox::NONE`] unless [`set_domain`](Self::set_domain)).
    domain: PeriodicBox<B::Point>,
}

/// The grid of one detection.
#[derive(Clone, Copy, Debug)]
struct Frame {
    origin: [f32; 3],
    /// Cells per unit length along each axis.
    inv: [f32; 3],
    dims: [usize; 3],
    /// The cell edge the boxes set (the cells along a periodic axis are
    /// `L/n`, at least as long).
    cell: f32,
    /// The axes along which the cells wrap (bit `a`): `dims[a] ≥ 3` cells
    /// of `L/dims[a]` from the domain's lower face.
    wrap: u8,
    /// `L` along a periodic axis (0 along the others).
    period: [f32; 3],
    /// The domain's upper face along a periodic axis: an image 0 whose
    /// upper corner is at or past it crosses that face.
    top: [f32; 3],
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

/// Image 0 of a stored box in `domain` ([`PeriodicBox::wrap_box`]; the box
/// itself without periodic axes). Stored boxes were checked by `wrap_box`
/// when they came in, so the fallback to the box is never taken.
#[inline(always)]
fn image0<B: BoundingBox>(domain: &PeriodicBox<B::Point>, b: B) -> B {
    if domain.axes() == 0 {
        return b;
    }
    domain.wrap_box(&b).map_or(b, |(x, _)| x)
}

/// Image 0's lower corner of a stored box (the box's own without periodic
/// axes): [`PeriodicBox::wrap_coord`] along the periodic ones.
#[inline(always)]
fn wrapped_min<B: BoundingBox>(domain: &PeriodicBox<B::Point>, b: &B) -> B::Point {
    let lo = b.min();
    if domain.axes() == 0 {
        return lo;
    }
    B::Point::from_fn(|a| domain.wrap_coord(a, lo.coord(a)))
}

/// `(lo, hi, L)` of each periodic axis of `domain`, for [`Census::fit`].
fn periodic_axes<P: Point>(domain: &PeriodicBox<P>) -> [Option<(f32, f32, f32)>; 3] {
    core::array::from_fn(|a| {
        (a < P::DIM && domain.is_periodic_axis(a)).then(|| {
            (
                domain.lo().coord(a),
                domain.hi().coord(a),
                domain.lengths().coord(a),
            )
        })
    })
}

impl Frame {
    /// The cell of coordinate `x` along axis `a`, clamped to the grid
    /// (non-negative and finite: `as` saturates, the clamp keeps a
    /// coordinate rounded up past the last cell in it).
    #[inline(always)]
    fn axis(&self, a: usize, x: f32) -> usize {
        let top = self.dims[a].saturating_sub(1);
        (((x - self.origin[a]) * self.inv[a]) as usize).min(top)
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
    ///
    /// The boxes as stored, also in a periodic domain: along a periodic
    /// axis the frame takes the domain's faces instead of the corners'
    /// bounds, and an image 0's edges are the box's to within a rounding
    /// of its corners, far below the cell's margin.
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
    /// that is not finite, or fewer than 3 cells along an axis of
    /// `periodic`).
    ///
    /// `periodic[a]` is `(lo, hi, L)` of a periodic axis: its cells are
    /// `⌊L/cell⌋` cells of `L/⌊L/cell⌋` from `lo`, whatever the census's
    /// corners there (the census is of the boxes' images 0, inside).
    fn fit(
        &self,
        dim: usize,
        n: usize,
        room: usize,
        periodic: &[Option<(f32, f32, f32)>; 3],
    ) -> Option<Frame> {
        let (mut lo, mut hi) = (self.lo, self.hi);
        let (mut period, mut top) = ([0.0f32; 3], [0.0f32; 3]);
        for a in 0..dim {
            if let Some(&Some((l0, h0, len))) = periodic.get(a) {
                (lo[a], hi[a]) = (l0, h0);
                (period[a], top[a]) = (len, h0);
            }
        }
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
            let mut inv = [1.0 / cell; 3];
            let mut wrap = 0u8;
            let mut cells = 1usize;
            for a in 0..dim {
                if let Some(&Some((_, _, len))) = periodic.get(a) {
                    // At most `AXIS_CELLS` + 1, at least 3.
                    dims[a] = (len / cell) as usize;
                    if dims[a] < 3 {
                        return None;
                    }
                    inv[a] = dims[a] as f32 / len;
                    wrap |= 1 << a;
                } else {
                    // At most `AXIS_CELLS` + 1.
                    dims[a] = ((hi[a] - lo[a]) / cell) as usize + 1;
                }
                cells = cells.saturating_mul(dims[a]);
            }
            if cells <= room {
                return Some(Frame {
                    origin: lo,
                    inv,
                    dims,
                    cell,
                    wrap,
                    period,
                    top,
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
            domain: PeriodicBox::NONE,
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
        self.check_all(boxes)?;
        self.boxes.update_all(boxes)
    }

    /// With a periodic domain, [`PeriodicBox::wrap_box`] on the new box of
    /// every stored id (the brute force's own checks come first where it
    /// would refuse the slice's length).
    fn check_all(&self, boxes: &[B]) -> Result<(), Error> {
        if self.domain.axes() == 0 {
            return Ok(());
        }
        let (slots, n) = self.boxes.dense_slots();
        let dense = slots.get(..n).unwrap_or_default();
        if dense.iter().any(|d| d.id() as usize >= boxes.len()) {
            return Ok(());
        }
        for d in dense {
            if let Some(b) = boxes.get(d.id() as usize) {
                self.domain.wrap_box(b)?;
            }
        }
        Ok(())
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
        self.check_all(boxes)?;
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

    /// Makes the boxes overlap periodically in `domain` (any subset of the
    /// axes; [`PeriodicBox::NONE`] for none): two boxes overlap when some
    /// periodic images of them do, as in [`crate::PeriodicBroadPhase`]
    /// (the same definition, on the same floats), and each pair is reported
    /// once. The grid's cells then wrap along the periodic axes (`⌊L/c⌋`
    /// cells of `L/⌊L/c⌋` for the cell `c` the boxes set), so no box has an
    /// image stored and nothing is copied: a detection reads each box once
    /// more (its image 0, [`PeriodicBox::wrap_box`]) and tests the cells
    /// reached through a face one candidate at a time. Fewer than 3 cells
    /// along a periodic axis (boxes longer than a third of the period, or
    /// too few `starts`) fall back to the all-pairs test. Queries scan the
    /// images 0; ray casts are refused.
    ///
    /// Boxes stored, inserted and updated must be shorter than half the
    /// period along every periodic axis (`wrap_box`'s conditions).
    ///
    /// # Errors
    /// [`PeriodicBox::wrap_box`]'s error for the first stored box it
    /// refuses; nothing changes then.
    pub fn set_domain(&mut self, domain: PeriodicBox<B::Point>) -> Result<(), Error> {
        let (slots, n) = self.boxes.dense_slots();
        if domain.axes() != 0 {
            for d in slots.iter().take(n) {
                if let Some(s) = slots.get(d.id() as usize) {
                    domain.wrap_box(&s.aabb())?;
                }
            }
        }
        self.domain = domain;
        self.cell = 0.0;
        Ok(())
    }

    /// The domain of [`set_domain`](Self::set_domain)
    /// ([`PeriodicBox::NONE`] unless set).
    pub fn domain(&self) -> &PeriodicBox<B::Point> {
        &self.domain
    }

    /// An update's checks with a periodic domain, in the order of
    /// [`crate::PeriodicBroadPhase`]: the id, then the box
    /// ([`PeriodicBox::wrap_box`]).
    fn check_update(&self, id: u32, aabb: &B) -> Result<(), Error> {
        if self.domain.axes() == 0 {
            return Ok(());
        }
        crate::ids::index(self.boxes.capacity(), id)?;
        if self.boxes.get(id).is_none() {
            return Err(Error::UnknownId { id });
        }
        self.domain.wrap_box(aabb).map(|_| ())
    }

    /// Every overlapping pair by the all-pairs test (periodic with a
    /// periodic domain): where no grid can take the boxes.
    fn all_pairs<F: FnMut(u32, u32)>(&mut self, mut f: F) -> Result<(), Error> {
        if self.domain.axes() == 0 {
            return self.boxes.for_each_overlap(f);
        }
        let (slots, n) = self.boxes.dense_slots();
        let boxes = |d: &BruteSlot<B>| slots.get(d.id() as usize).map(|s| (d.id(), s.aabb()));
        for (k, a) in slots.iter().take(n).enumerate() {
            let Some((ia, ba)) = boxes(a) else { continue };
            for b in slots.get(k + 1..n).unwrap_or_default() {
                if let Some((ib, bb)) = boxes(b)
                    && periodic_overlap(&self.domain, &ba, &bb)
                {
                    f(ia, ib);
                }
            }
        }
        Ok(())
    }

    /// The grid over the stored boxes' lower corners; `None` when no grid
    /// can take them (a cell edge that is not finite).
    fn frame(&self) -> Option<Frame> {
        let (slots, n) = self.boxes.dense_slots();
        let mut census = Census::EMPTY;
        census.add_all(slots, 0..n);
        census.fit(
            B::Point::DIM.min(3),
            n,
            self.starts.as_ref().len(),
            &periodic_axes(&self.domain),
        )
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
        let domain = &self.domain;
        for (d, c) in slots.iter().take(n).zip(cells.iter_mut()) {
            let b = slots.get(d.id() as usize).map_or(B::ZERO, BruteSlot::aabb);
            if edge_class(b.longest_edge()) > frame.large_above {
                *c = LARGE;
                large += 1;
                continue;
            }
            let k = frame.cell(wrapped_min(domain, &b));
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
        gather(
            slots,
            ids,
            &mut planes_mut::<B::Point>(coords, cap, n),
            domain,
        );
        self.cell = frame.cell;
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
fn gather<B: BoundingBox>(
    slots: &[BruteSlot<B>],
    ids: &[u32],
    planes: &mut [&mut [f32]; 6],
    domain: &PeriodicBox<B::Point>,
) {
    let dim = B::Point::DIM.min(3);
    let wraps = domain.axes() != 0;
    for (j, &id) in ids.iter().enumerate() {
        let b = slots.get(id as usize).map_or(B::ZERO, BruteSlot::aabb);
        let (lo, hi) = (b.min(), b.max());
        for a in 0..dim {
            // Image 0 (`wrap_box`'s floats) along a periodic axis.
            let (l, h) = if wraps && domain.is_periodic_axis(a) {
                domain.wrap_interval(a, lo.coord(a), hi.coord(a))
            } else {
                (lo.coord(a), hi.coord(a))
            };
            if let Some(c) = planes.get_mut(a).and_then(|p| p.get_mut(j)) {
                *c = l;
            }
            if let Some(c) = planes.get_mut(3 + a).and_then(|p| p.get_mut(j)) {
                *c = h;
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
    if frame.wrap != 0 {
        return large_pairs_wrapped(frame, dim, ends, p, large, f);
    }
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
    fn test<F: FnMut(u32, u32)>(&self, dim: usize, q: &Probe, r: (usize, usize), f: &mut F) {
        let (lo, hi) = (&q.lo, &q.hi);
        self.test_by(dim, q.id, r, |d, b0, b1| (lo[d] <= b1) & (b0 <= hi[d]), f);
    }

    /// Calls `f(a, b)` for every box `b` at sorted positions `r0..r1` whose
    /// interval `[b0, b1]` along every axis `d` passes `meets(d, b0, b1)`,
    /// eight candidates at a time (the kernel of [`test`](Self::test) and
    /// [`test_faces`](Self::test_faces)).
    #[inline(always)]
    fn test_by<F: FnMut(u32, u32), M: Fn(usize, f32, f32) -> bool>(
        &self,
        dim: usize,
        a: u32,
        (r0, r1): (usize, usize),
        meets: M,
        f: &mut F,
    ) {
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
                    let mut hit = meets(0, x0[l], x1[l]) & meets(1, y0[l], y1[l]);
                    if dim == 3 {
                        hit &= meets(2, z0[l], z1[l]);
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
                        hit &= meets(d, b0, b1);
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
    if frame.wrap != 0 {
        return sweep_wrapped(frame, dim, ends, p, cells, f);
    }
    let rows: &[(isize, isize)] = if dim == 3 {
        &HALF_ROWS_3D
    } else {
        &HALF_ROWS_2D
    };
    let [nx, ny, _] = frame.dims;
    let ends = Ends(ends);
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
            plain_cell(frame.dims, dim, rows, ends, p, [x, y, z], f);
        }
    }
}

/// The pairs of cell `[x, y, z]` of a grid of `dims` with itself and its
/// forward cells, none of them across a face (cells past the grid are
/// skipped).
#[inline(always)]
fn plain_cell<F: FnMut(u32, u32)>(
    [nx, ny, nz]: [usize; 3],
    dim: usize,
    rows: &[(isize, isize)],
    ends: Ends<'_>,
    p: &BoxPlanes<'_>,
    [x, y, z]: [usize; 3],
    f: &mut F,
) {
    let (start, end) = (|k| ends.start(k), |k| ends.end(k));
    let k = (z * ny + y) * nx + x;
    let (lo, hi) = (start(k), end(k));
    if lo == hi {
        return;
    }
    // The cell's own later boxes and the next cell of its row are one
    // range; then the three cells of each forward row.
    let mut fwd = [(0usize, 0usize); 6];
    let mut m = 0;
    let (x0, x1) = (x.saturating_sub(1), (x + 1).min(nx - 1));
    for &(dy, dz) in rows {
        let (yy, zz) = (y as isize + dy, z as isize + dz);
        if yy < 0 || zz < 0 || yy as usize >= ny || zz as usize >= nz {
            continue;
        }
        let r = (zz as usize * ny + yy as usize) * nx;
        let (a, b) = (start(r + x0), end(r + x1));
        if a < b
            && let Some(e) = fwd.get_mut(m)
        {
            *e = (a, b);
            m += 1;
        }
    }
    let next = if x + 1 < nx { end(k + 1) } else { hi };
    for i in lo..hi {
        let q = p.probe(dim, i);
        p.test(dim, &q, (i + 1, next), f);
        for &r in fwd.get(..m).unwrap_or_default() {
            p.test(dim, &q, r, f);
        }
    }
}

/// Periodic overlap along one axis of two images 0 `[a0, a1]` and
/// `[b0, b1]` (closed intervals): they meet as they are, or, along a
/// periodic axis (`period` `l`, upper face `top`), `b` shifted by `−l`
/// meets `a` where `b` crosses the face (`b1 ≥ top`), or `a` shifted meets
/// `b` where `a` crosses: the definition of [`crate::PeriodicBroadPhase`],
/// on the same floats (`x − l`).
#[inline(always)]
fn axis_meets(periodic: bool, l: f32, top: f32, a: (f32, f32), b: (f32, f32)) -> bool {
    let ((a0, a1), (b0, b1)) = (a, b);
    if a0 <= b1 && b0 <= a1 {
        return true;
    }
    periodic
        && ((b1 >= top && a0 <= b1 - l && b0 - l <= a1)
            || (a1 >= top && a0 - l <= b1 && b0 <= a1 - l))
}

/// Whether two stored boxes overlap periodically in `domain` (their images
/// 0 along every axis, [`axis_meets`]).
fn periodic_overlap<B: BoundingBox>(domain: &PeriodicBox<B::Point>, a: &B, b: &B) -> bool {
    let (a, b) = (image0(domain, *a), image0(domain, *b));
    (0..B::Point::DIM).all(|k| {
        axis_meets(
            domain.is_periodic_axis(k),
            domain.lengths().coord(k),
            domain.hi().coord(k),
            (a.min().coord(k), a.max().coord(k)),
            (b.min().coord(k), b.max().coord(k)),
        )
    })
}

impl BoxPlanes<'_> {
    /// Calls `f(q.id, b)` for every box `b` at sorted positions `r0..r1`
    /// that overlaps `q` periodically ([`axis_meets`] along every axis),
    /// one candidate at a time: the ranges reached through a face and the
    /// large boxes' candidates.
    #[inline(always)]
    fn test_periodic<F: FnMut(u32, u32)>(
        &self,
        frame: &Frame,
        dim: usize,
        q: &Probe,
        (r0, r1): (usize, usize),
        f: &mut F,
    ) {
        for k in r0..r1 {
            let mut hit = true;
            for d in 0..dim {
                let (Some(&b0), Some(&b1)) = (self.lo[d].get(k), self.hi[d].get(k)) else {
                    return;
                };
                hit &= axis_meets(
                    frame.wrap & (1 << d) != 0,
                    frame.period[d],
                    frame.top[d],
                    (q.lo[d], q.hi[d]),
                    (b0, b1),
                );
            }
            if hit && let Some(&b) = self.ids.get(k) {
                f(q.id, b);
            }
        }
    }
}

impl BoxPlanes<'_> {
    /// Calls `f(q.id, b)` for every box `b` at sorted positions `r0..r1`,
    /// a range of cells reached through faces, that overlaps `q`
    /// periodically, eight candidates at a time. Along an axis of `up` the
    /// range lies past the upper face (query at the last cell, candidates
    /// at the first), so the only image pair that can meet is the query
    /// shifted by `−L` with the candidate (and only if the query crosses
    /// that face); along an axis of `down` the candidates shifted with the
    /// query (only those that cross); along the other axes the boxes as
    /// they are. For grid boxes (edges at most a cell, at least 3 cells
    /// per wrapping axis) no other image pair can meet, so this is the
    /// periodic test ([`axis_meets`]) on the same floats.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn test_faces<F: FnMut(u32, u32)>(
        &self,
        frame: &Frame,
        dim: usize,
        q: &Probe,
        (r0, r1): (usize, usize),
        up: u8,
        down: u8,
        f: &mut F,
    ) {
        let mut ql = q.lo;
        let mut qh = q.hi;
        let mut sb = [0.0f32; 3];
        let mut floor = [f32::NEG_INFINITY; 3];
        for a in 0..dim {
            if up & (1 << a) != 0 {
                if q.hi[a] < frame.top[a] {
                    return;
                }
                ql[a] = q.lo[a] - frame.period[a];
                qh[a] = q.hi[a] - frame.period[a];
            }
            if down & (1 << a) != 0 {
                sb[a] = frame.period[a];
                floor[a] = frame.top[a];
            }
        }
        let meets = |d: usize, b0: f32, b1: f32| {
            (ql[d] <= b1 - sb[d]) & (b0 - sb[d] <= qh[d]) & (b1 >= floor[d])
        };
        self.test_by(dim, q.id, (r0, r1), meets, f);
    }
}

/// A step of `d ∈ {−1, 0, 1}` from cell `c` of `n` along an axis: the cell
/// and whether the step went through a face (only along a wrapping axis;
/// `None` past the grid along another).
#[inline(always)]
fn step_cell(c: usize, d: isize, n: usize, wraps: bool) -> Option<(usize, bool)> {
    let t = c as isize + d;
    if t >= 0 && (t as usize) < n {
        Some((t as usize, false))
    } else if wraps {
        Some((t.rem_euclid(n as isize) as usize, true))
    } else {
        None
    }
}

/// [`sweep`] on a grid whose cells wrap along some axes (`frame.wrap`):
/// the same forward cells, taken modulo the cells per axis (at least 3, so
/// no cell is met twice); ranges reached without crossing a face are
/// tested as in the plain sweep (for two grid boxes in directly adjacent
/// cells the plain test is the periodic one: a shifted image would need
/// lower corners at least `L` less a box edge apart), ranges reached
/// through a face by [`BoxPlanes::test_periodic`].
fn sweep_wrapped<F: FnMut(u32, u32)>(
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
    let wraps = |a: usize| frame.wrap & (1 << a) != 0;
    let ends = Ends(ends);
    let (start, end) = (|k| ends.start(k), |k| ends.end(k));
    if cells.is_empty() {
        return;
    }
    for row_index in cells.start / nx..=(cells.end - 1) / nx {
        let (y, z) = (row_index % ny, row_index / ny);
        let row = row_index * nx;
        let x_first = cells.start.saturating_sub(row);
        let x_end = (cells.end - row).min(nx);
        // Away from the faces the cells of a row are plain ones.
        let y_inside = !wraps(1) || (y > 0 && y + 1 < ny);
        let z_inside = !wraps(2) || z + 1 < nz;
        for x in x_first..x_end {
            if y_inside && z_inside && (!wraps(0) || (x > 0 && x + 1 < nx)) {
                plain_cell(frame.dims, dim, rows, ends, p, [x, y, z], f);
                continue;
            }
            let k = row + x;
            let (lo, hi) = (start(k), end(k));
            if lo == hi {
                continue;
            }
            let mut plain = [(0usize, 0usize); 4];
            let mut np = 0;
            let mut through = [(0usize, 0usize, 0u8, 0u8); 9];
            let mut nt = 0;
            // `up` / `down`: the axes along which the range lies past the
            // upper / lower face.
            let mut add = |r: (usize, usize), up: u8, down: u8| {
                if r.0 >= r.1 {
                    return;
                }
                if up | down != 0 {
                    if let Some(e) = through.get_mut(nt) {
                        *e = (r.0, r.1, up, down);
                        nt += 1;
                    }
                } else if let Some(e) = plain.get_mut(np) {
                    *e = r;
                    np += 1;
                }
            };
            // The x neighbours of a cell of a row: the direct ones, and
            // the one through the x face at either end.
            let (x0, x1) = (
                if x > 0 { x - 1 } else { x },
                if x + 1 < nx { x + 1 } else { x },
            );
            let x_face_low = (x == 0 && wraps(0)).then_some(nx - 1);
            let x_face_high = (x + 1 == nx && wraps(0)).then_some(0);
            let next = if x + 1 < nx { end(k + 1) } else { hi };
            if let Some(c) = x_face_high {
                add((start(row + c), end(row + c)), 1, 0);
            }
            for &(dy, dz) in rows {
                let Some((yy, fy)) = step_cell(y, dy, ny, wraps(1)) else {
                    continue;
                };
                let Some((zz, fz)) = step_cell(z, dz, nz, wraps(2)) else {
                    continue;
                };
                // A step of +1 through a face goes past the upper one.
                let (mut up, mut down) = (0u8, 0u8);
                if fy {
                    if dy > 0 { up |= 2 } else { down |= 2 }
                }
                if fz {
                    if dz > 0 { up |= 4 } else { down |= 4 }
                }
                let r = (zz * ny + yy) * nx;
                add((start(r + x0), end(r + x1)), up, down);
                if let Some(c) = x_face_low {
                    add((start(r + c), end(r + c)), up, down | 1);
                }
                if let Some(c) = x_face_high {
                    add((start(r + c), end(r + c)), up | 1, down);
                }
            }
            for i in lo..hi {
                let q = p.probe(dim, i);
                p.test(dim, &q, (i + 1, next), f);
                for &r in &plain[..np] {
                    p.test(dim, &q, r, f);
                }
                for &(a, b, up, down) in &through[..nt] {
                    p.test_faces(frame, dim, &q, (a, b), up, down, f);
                }
            }
        }
    }
}

/// The cells `[c0 − 1, c1 + 1]` around a large box's image 0 along one axis
/// of `n` cells, taken modulo `n` along a wrapping axis (at most `n` of them,
/// as at most two runs of consecutive cells), clamped to the grid along
/// another: a grid box that overlaps it, as it is or through the face, has
/// its lower corner in them.
fn large_runs(c0: isize, c1: isize, n: usize, wraps: bool) -> [(usize, usize); 2] {
    let n_i = n as isize;
    if !wraps {
        let a = c0.saturating_sub(1).clamp(0, n_i - 1) as usize;
        let b = c1.clamp(0, n_i - 1) as usize;
        return [(a, b + 1), (0, 0)];
    }
    let first = c0 - 1;
    let len = (c1 + 1 - first + 1).clamp(1, n_i);
    let a = first.rem_euclid(n_i) as usize;
    let end = a + len as usize;
    if end <= n {
        [(a, end), (0, 0)]
    } else {
        [(a, n), (0, end - n)]
    }
}

/// [`large_pairs`] on a grid whose cells wrap along some axes: each large
/// box against the grid's boxes in the cells around its image 0
/// ([`large_runs`]), then against the large boxes after it, all by
/// [`BoxPlanes::test_periodic`].
fn large_pairs_wrapped<F: FnMut(u32, u32)>(
    frame: &Frame,
    dim: usize,
    ends: &[u32],
    p: &BoxPlanes<'_>,
    large: core::ops::Range<usize>,
    f: &mut F,
) {
    let [nx, ny, nz] = frame.dims;
    let cells = Ends(ends);
    let last = p.ids.len();
    let raw = |a: usize, x: f32| -> isize {
        // Finite: image 0's corners lie within a period of the grid.
        let t = (x - frame.origin[a]) * frame.inv[a];
        if t.is_finite() { t as isize } else { 0 }
    };
    for i in large {
        let q = p.probe(dim, i);
        let runs = |a: usize, n: usize| {
            let c0 = frame.axis(a, q.lo[a]) as isize;
            let c1 = raw(a, q.hi[a]);
            large_runs(c0, c1, n, frame.wrap & (1 << a) != 0)
        };
        let xs = runs(0, nx);
        let ys = runs(1, ny);
        let zs = if dim == 3 {
            runs(2, nz)
        } else {
            [(0, 1), (0, 0)]
        };
        for &(z0, z1) in &zs {
            for z in z0..z1 {
                for &(y0, y1) in &ys {
                    for y in y0..y1 {
                        let row = (z * ny + y) * nx;
                        for &(x0, x1) in &xs {
                            if x0 < x1 {
                                let r = (cells.start(row + x0), cells.end(row + x1 - 1));
                                p.test_periodic(frame, dim, &q, r, f);
                            }
                        }
                    }
                }
            }
        }
        p.test_periodic(frame, dim, &q, (i + 1, last), f);
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
        if self.domain.axes() != 0 && self.boxes.get(id).is_none() {
            self.domain.wrap_box(&aabb)?;
        }
        if self.boxes.get(id).is_none() && self.boxes.box_count() >= self.box_capacity() {
            return Err(Error::CapacityExceeded {
                capacity: self.box_capacity(),
            });
        }
        self.boxes.insert(id, aabb)
    }

    fn update(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        self.check_update(id, &aabb)?;
        self.boxes.update(id, aabb)
    }

    fn update_many(&mut self, updates: &[(u32, B)]) -> Result<(), Error> {
        if self.domain.axes() != 0 {
            for (id, b) in updates {
                self.check_update(*id, b)?;
            }
        }
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
            self.all_pairs(f)?;
        }
        Ok(())
    }

    /// A scan of the stored boxes; with a periodic domain, of their images
    /// 0 against the query box's (periodic overlap), each id once.
    ///
    /// # Errors
    /// The box's errors; with a periodic domain also
    /// [`PeriodicBox::wrap_box`]'s for the query box.
    fn query<F: FnMut(u32)>(&mut self, aabb: &B, mut f: F) -> Result<(), Error> {
        if self.domain.axes() == 0 {
            return self.boxes.query(aabb, f);
        }
        let (q, _) = self.domain.wrap_box(aabb)?;
        let (slots, n) = self.boxes.dense_slots();
        for d in slots.iter().take(n) {
            if let Some(s) = slots.get(d.id() as usize)
                && periodic_overlap(&self.domain, &q, &s.aabb())
            {
                f(d.id());
            }
        }
        Ok(())
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
    /// # Errors
    /// As the brute force's; [`Error::InvalidConfig`] (`"domain"`) with a
    /// periodic domain (a ray does not wrap; cast through a copy without
    /// one, or through the boxes' images).
    fn ray_visit<F: FnMut(u32, f32) -> f32>(
        &mut self,
        ray: &crate::ray::Ray<B::Point>,
        visit: F,
    ) -> Result<(), Error> {
        if self.domain.axes() != 0 {
            return Err(Error::InvalidConfig { field: "domain" });
        }
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

    /// The periodic grid against the all-pairs periodic test, on unit-ish
    /// cubes in an 8-unit domain (5 cells per axis, so the grid is used),
    /// a few large boxes among them, every subset of periodic axes (the
    /// host tests judge it, the parallel form included, by the periodic
    /// model).
    #[test]
    fn periodic_grid_matches_all_pairs() {
        type Big = GridBroadPhase<Aabb3, [BruteSlot<Aabb3>; 64], [u32; 1024], [u32; 256]>;
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        let mut grid_used = 0;
        for round in 0..200 {
            let axes = (round % 8) as u8;
            let d = crate::PeriodicBox::new(Vec3::ZERO, Vec3::new(8.0, 8.0, 8.0), axes).unwrap();
            let mut g: Big = GridBroadPhase::new([BruteSlot::EMPTY; 64], [0; 1024], [0; 256]);
            g.set_domain(d).unwrap();
            let mut boxes = [Aabb3::ZERO; 64];
            for (i, b) in boxes.iter_mut().enumerate() {
                let e = if i % 16 == 0 { 3.0 } else { 0.5 + rnd() };
                // Lower corners inside, and some just past the upper faces.
                let c = Vec3::new(rnd() * 8.6 - 0.3, rnd() * 8.6 - 0.3, rnd() * 8.6 - 0.3);
                *b = Aabb3::new(c, c + Vec3::new(e, e * 0.9, e * 1.1)).unwrap();
                g.insert(i as u32, *b).unwrap();
            }
            let mut want = [[false; 64]; 64];
            for i in 0..64 {
                for j in i + 1..64 {
                    want[i][j] = periodic_overlap(&d, &boxes[i], &boxes[j]);
                }
            }
            let mut got = [[false; 64]; 64];
            g.for_each_overlap(|a, b| {
                let (a, b) = (a.min(b) as usize, a.max(b) as usize);
                assert!(!got[a][b], "pair ({a}, {b}) twice, axes {axes:#b}");
                got[a][b] = true;
            })
            .unwrap();
            assert_eq!(got, want, "round {round}, axes {axes:#b}");
            grid_used += usize::from(g.cell_size() > 0.0);
        }
        assert!(grid_used > 100, "the grid ran {grid_used} times");
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
