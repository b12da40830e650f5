//! The uniform hashes' own operations and rules, layered over the shared
//! neighbour-search model ([`SearchModel`]): the three strategies side by
//! side (`CellSortedHash`, `BucketHash` with its `BucketFull` refusal,
//! `LinkedHash` with its incremental `update`), every trait operation judged
//! by one `SearchModel` per strategy, and on top what only these hashes
//! have:
//!
//! * the build's result predicted exactly from the grid's public API
//!   (`Grid::new` / `Grid::cell` / `Grid::bucket`): `InvalidRadius`,
//!   `InvalidTableLength`, `CapacityExceeded`, `NonFinite`, `OutOfRange`
//!   beyond [`UNIFORM_RANGE_CELLS`] cells, and the bucket hash's first
//!   overflowing bucket (`BucketFull`); an independent `f64` estimate of the
//!   span in cells and of the radius must agree with the verdicts;
//! * the strategies agree (the bucket hash may be full besides);
//! * `new_checked` refuses exactly the table lengths `new` refuses at the
//!   first build (then every build is refused, the radius checked first);
//! * `LinkedHash::update` (`LengthMismatch`, `NonFinite`, `OutOfRange`, the
//!   number of relinked particles; nothing changes on error), the others
//!   rebuilt from the same positions;
//! * `CellSortedHash::reorder` (`LengthMismatch`, the permutation of
//!   `sorted()`), and a rebuild from reordered input is `input_was_sorted`;
//!   `sorted()`, `occupied_cells`, `colliding_cells`;
//! * `Inspect::memory_bytes` against the documented formulas, and
//!   `Inspect::stats` (particles, capacity, radius, table slots, occupied
//!   slots = distinct buckets of the stored particles; for the cell-sorted
//!   hash, which probes linearly, one slot per occupied cell when the table
//!   has two slots per cell, else none);
//! * `for_each_pair` is deterministic; `clear` keeps the radius.
//!
//! Used by `tests/uniform_props.rs` (proptest: fixed table lengths, the
//! shared strategies) and the `uniform_hash` fuzz target (fuzzed table
//! lengths, invalid ones included, bucket sizes, raw-bit floats, points at
//! the range limit).

use spatium::uniform::{
    Bucket, BucketHash, BucketParticle, CELL_MARGIN, CellRecord, CellSortedHash, Grid, Head,
    LinkedHash, LinkedParticle, SortedParticle, TableSlot, UNIFORM_RANGE_CELLS,
};
use spatium::{Error, Inspect, NeighborSearch, Point, SearchStats, Validate};
use spatium_host::make::{self, VecBucket, VecCellSorted, VecLinked};

use crate::model::{Outcome, PointSpec, RadiusSpec, SearchModel, SearchOp, bits};

/// `Err(format!(..))` unless `cond`.
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

/// An operation on the three uniform hashes.
#[derive(Clone, Debug, PartialEq)]
pub enum UniformOp<P> {
    /// A trait operation on all three (each judged by its model).
    Search(SearchOp<P>),
    /// `LinkedHash::update` of the linked hash's particles with some moved
    /// (`(index mod len, new position)`; `Near` refers to the stored
    /// particles), resized to `k` particles if `resize` is `Some(k)`; the
    /// other two are built from the same positions at the linked radius.
    Move {
        /// Moved particles.
        moves: Vec<(u32, PointSpec<P>)>,
        /// A new length (`LengthMismatch` unless equal).
        resize: Option<u8>,
    },
    /// `CellSortedHash::reorder` of its stored positions, then a rebuild of
    /// all three from the reordered positions; `Some((dst, k))` first tries
    /// a source (or destination) `1 + k % 4` too long or short.
    Reorder(Option<(bool, u8)>),
    /// `for_each_pair` twice on each: the same sequence.
    Pairs,
    /// `clear()` on the hashes of the mask (bits 0, 1, 2).
    Clear(u8),
}

/// Whether `new_checked` accepts a table of `len` slots.
pub fn table_ok(len: usize) -> bool {
    len.is_power_of_two() && len <= 1 << 31
}

/// The grid a build of `points` at `radius` fits, or the build's error, in
/// the documented order: radius, table length, count, finiteness, range.
///
/// # Errors
/// The error the build must give.
pub fn fit<P: Point>(
    radius: f32,
    points: &[P],
    table_len: usize,
    capacity: usize,
) -> Result<Grid<P>, Error> {
    let g = Grid::new(radius, P::ZERO, table_len)?;
    let Some(&first) = points.first() else {
        return Ok(g);
    };
    if points.len() > capacity {
        return Err(Error::CapacityExceeded { capacity });
    }
    if points.iter().any(|p| !p.is_finite()) {
        return Err(Error::NonFinite);
    }
    let (lo, hi) = points
        .iter()
        .fold((first, first), |(l, h), &p| (l.min(p), h.max(p)));
    let origin = P::from_fn(|k| 0.5 * lo.coord(k) + 0.5 * hi.coord(k));
    let g = Grid::new(radius, origin, table_len)?;
    for &p in points {
        g.cell(p)?;
    }
    Ok(g)
}

/// The bucket a `BucketHash<K>` build reports full: the bucket of the first
/// particle (in input order) that would be its `K + 1`-th.
pub fn first_overflow<P: Point>(g: &Grid<P>, points: &[P], k: usize) -> Option<u32> {
    let mut counts: Vec<(u32, usize)> = Vec::new();
    for &p in points {
        let b = g.bucket(g.cell(p).ok()?);
        let i = counts.iter().position(|c| c.0 == b).unwrap_or_else(|| {
            counts.push((b, 0));
            counts.len() - 1
        });
        counts[i].1 += 1;
        if counts[i].1 > k {
            return Some(b);
        }
    }
    None
}

/// Largest distance from the centre of `pts` in cells of `radius`, computed
/// in `f64`, and the tolerance of comparing it with the `f32` arithmetic
/// (independent of the grid's code).
pub fn span_in_cells<P: Point>(pts: &[P], radius: f32) -> (f64, f64) {
    let cell = f64::from(radius * CELL_MARGIN);
    let (mut worst, mut big) = (0.0f64, 0.0f64);
    for k in 0..P::DIM {
        let lo = pts.iter().map(|p| p.coord(k)).fold(f32::INFINITY, f32::min);
        let hi = pts
            .iter()
            .map(|p| p.coord(k))
            .fold(f32::NEG_INFINITY, f32::max);
        let mid = 0.5 * f64::from(lo) + 0.5 * f64::from(hi);
        worst = worst.max((f64::from(hi) - mid) / cell);
        worst = worst.max((mid - f64::from(lo)) / cell);
        big = big.max(f64::from(lo).abs()).max(f64::from(hi).abs());
    }
    (worst, tolerance(big, cell))
}

/// The span of `pts` from a fixed grid (origin, cell size), as
/// [`span_in_cells`].
pub fn span_from<P: Point>(pts: &[P], g: &Grid<P>) -> (f64, f64) {
    let cell = f64::from(g.cell_size());
    let (mut worst, mut big) = (0.0f64, 0.0f64);
    for p in pts {
        for k in 0..P::DIM {
            let (x, o) = (f64::from(p.coord(k)), f64::from(g.origin().coord(k)));
            worst = worst.max((x - o).abs() / cell);
            big = big.max(x.abs()).max(o.abs());
        }
    }
    (worst, tolerance(big, cell))
}

fn tolerance(big: f64, cell: f64) -> f64 {
    let limit = f64::from(UNIFORM_RANGE_CELLS);
    limit * 1e-4 + 4.0 * big * f64::from(f32::EPSILON) / cell
}

/// Independent plausibility of a build's radius and range verdicts: no
/// grid refuses a radius in `(1e-20, 1e18)` or accepts one outside
/// `[1e-24, 1e20]`; accepted points span fewer than
/// [`UNIFORM_RANGE_CELLS`] cells (within the rounding), refused ones more.
fn plausible<P: Point>(got: &Outcome, points: &[P], radius: f32) -> Result<(), String> {
    let clearly_valid = radius.is_finite() && radius > 1e-20 && radius < 1e18;
    let clearly_invalid = !(1e-24..=1e20).contains(&radius);
    if *got == Err(Error::InvalidRadius) {
        ensure!(!clearly_valid, "radius {radius:e} refused");
    }
    if got.is_ok() {
        ensure!(!clearly_invalid, "radius {radius:e} accepted");
    }
    let limit = f64::from(UNIFORM_RANGE_CELLS);
    if !points.is_empty() && (got.is_ok() || *got == Err(Error::OutOfRange)) {
        let (span, tol) = span_in_cells(points, radius);
        if got.is_ok() {
            ensure!(span.lt(&(limit + tol)), "accepted {span} cells");
        } else {
            ensure!(span.gt(&(limit - tol)), "refused only {span} cells");
        }
    }
    Ok(())
}

/// Distinct buckets and cells of `points` under `g`, and how many cells
/// share their bucket with another cell.
fn occupancy<P: Point>(g: &Grid<P>, points: &[P]) -> Result<(usize, usize, usize), String> {
    let mut cells: Vec<(P::Cell, u32)> = Vec::new();
    for &p in points {
        let c = g.cell(p).map_err(|e| format!("stored {p:?}: {e:?}"))?;
        if !cells.iter().any(|x| x.0 == c) {
            cells.push((c, g.bucket(c)));
        }
    }
    let mut buckets: Vec<u32> = cells.iter().map(|x| x.1).collect();
    buckets.sort_unstable();
    buckets.dedup();
    let colliding = cells
        .iter()
        .filter(|x| cells.iter().filter(|y| y.1 == x.1).count() > 1)
        .count();
    Ok((buckets.len(), cells.len(), colliding))
}

/// Cells in the bounding box of the occupied cells (saturating).
fn box_cells<P: Point>(g: &Grid<P>, points: &[P]) -> Result<usize, String> {
    let mut lo = [i32::MAX; 3];
    let mut hi = [i32::MIN; 3];
    for &p in points {
        let c = g.cell(p).map_err(|e| format!("stored {p:?}: {e:?}"))?;
        for k in 0..P::DIM {
            lo[k] = lo[k].min(P::cell_coord(c, k));
            hi[k] = hi[k].max(P::cell_coord(c, k));
        }
    }
    Ok((0..P::DIM).fold(1usize, |a, k| {
        a.saturating_mul((i64::from(hi[k]) - i64::from(lo[k]) + 1) as usize)
    }))
}

/// The three hashes over one table length and capacity, one model each,
/// and the grid each must hold (that of its last successful build).
#[derive(Clone, Debug)]
pub struct UniformWorld<P: Point, const K: usize> {
    /// Table slots (any length; not a power of two: every build refused).
    pub table_len: usize,
    /// Particles of each hash.
    pub capacity: usize,
    /// Strategy (a).
    pub sorted: VecCellSorted<P>,
    /// Strategy (b), `K` per bucket.
    pub bucket: VecBucket<P, K>,
    /// Strategy (c).
    pub linked: VecLinked<P>,
    /// The models of sorted, bucket, linked.
    pub models: [SearchModel<P>; 3],
    grids: [Option<Grid<P>>; 3],
}

/// The strategies' names, in [`UniformWorld::models`] order.
pub const NAMES: [&str; 3] = ["CellSortedHash", "BucketHash", "LinkedHash"];

impl<P: Point, const K: usize> UniformWorld<P, K> {
    /// Three empty hashes; `new_checked` must accept exactly the power-of-two
    /// table lengths up to 2³¹.
    ///
    /// # Errors
    /// A message if `new_checked` answers otherwise, or the empty hashes
    /// differ from their models.
    pub fn new(capacity: usize, table_len: usize) -> Result<Self, String> {
        let want = if table_ok(table_len) {
            Ok(())
        } else {
            Err(Error::InvalidTableLength { len: table_len })
        };
        let got = [
            CellSortedHash::new_checked(
                vec![TableSlot::EMPTY; table_len],
                vec![SortedParticle::<P>::EMPTY; capacity],
                vec![CellRecord::<P>::EMPTY; capacity],
            )
            .map(|_| ()),
            BucketHash::<P, _, _, K>::new_checked(
                vec![Bucket::<K>::EMPTY; table_len],
                vec![BucketParticle::<P>::EMPTY; capacity],
            )
            .map(|_| ()),
            LinkedHash::new_checked(
                vec![Head::EMPTY; table_len],
                vec![LinkedParticle::<P>::EMPTY; capacity],
            )
            .map(|_| ()),
        ];
        for (i, g) in got.iter().enumerate() {
            ensure!(
                *g == want,
                "{} new_checked(table {table_len}) = {g:?}, want {want:?}",
                NAMES[i]
            );
        }
        let w = Self {
            table_len,
            capacity,
            sorted: make::cell_sorted(capacity, table_len),
            bucket: make::bucketed(capacity, table_len),
            linked: make::linked(capacity, table_len),
            models: core::array::from_fn(|_| SearchModel::new(capacity)),
            grids: [None; 3],
        };
        w.check().map_err(|e| format!("new: {e}"))?;
        Ok(w)
    }

    /// Applies every op, stopping at the first failure (with its index).
    ///
    /// # Errors
    /// The first failure.
    pub fn run(&mut self, ops: &[UniformOp<P>]) -> Result<(), String> {
        for (k, op) in ops.iter().enumerate() {
            self.apply(op).map_err(|e| format!("op {k}: {e}"))?;
        }
        Ok(())
    }

    /// Applies `op` to the three hashes, judges the results, then
    /// [`check`](Self::check)s everything.
    ///
    /// # Errors
    /// A message naming the operation and what differs.
    pub fn apply(&mut self, op: &UniformOp<P>) -> Result<(), String> {
        self.apply_op(op).map_err(|e| format!("{op:?}: {e}"))?;
        self.check().map_err(|e| format!("after {op:?}: {e}"))
    }

    fn apply_op(&mut self, op: &UniformOp<P>) -> Result<(), String> {
        match op {
            UniformOp::Search(SearchOp::Build(specs, r)) => {
                let radius = r.value();
                let points = SearchModel::<P>::resolve_all(specs, radius);
                check_parallel(&self.sorted, &points, radius)
                    .map_err(|e| format!("{} parallel: {e}", NAMES[0]))?;
                self.build_all(&points, radius, [true; 3])
            }
            UniformOp::Search(op) => {
                let named = |i: usize| move |e: String| format!("{}: {e}", NAMES[i]);
                let _ = self.models[0]
                    .apply(&mut self.sorted, op)
                    .map_err(named(0))?;
                let _ = self.models[1]
                    .apply(&mut self.bucket, op)
                    .map_err(named(1))?;
                let _ = self.models[2]
                    .apply(&mut self.linked, op)
                    .map_err(named(2))?;
                Ok(())
            }
            UniformOp::Move { moves, resize } => self.update(moves, *resize),
            UniformOp::Reorder(bad) => self.reorder(*bad),
            UniformOp::Pairs => {
                fn twice<P: Point, N: NeighborSearch<P>>(t: &N) -> bool {
                    let seq = || {
                        let mut v = Vec::new();
                        t.for_each_pair(|i, j, d2| v.push((i, j, d2.to_bits())));
                        v
                    };
                    seq() == seq()
                }
                ensure!(twice(&self.sorted), "{}: pairs not deterministic", NAMES[0]);
                ensure!(twice(&self.bucket), "{}: pairs not deterministic", NAMES[1]);
                ensure!(twice(&self.linked), "{}: pairs not deterministic", NAMES[2]);
                Ok(())
            }
            UniformOp::Clear(mask) => {
                if mask & 1 != 0 {
                    self.sorted.clear();
                    self.models[0].points.clear();
                }
                if mask & 2 != 0 {
                    self.bucket.clear();
                    self.models[1].points.clear();
                }
                if mask & 4 != 0 {
                    self.linked.clear();
                    self.models[2].points.clear();
                }
                Ok(())
            }
        }
    }

    /// Builds `points` at `radius` into the hashes of `which`, each judged
    /// by its model and by the exact prediction; the strategies agree.
    fn build_all(&mut self, points: &[P], radius: f32, which: [bool; 3]) -> Result<(), String> {
        let fitted = fit(radius, points, self.table_len, self.capacity);
        let common: Outcome = fitted.as_ref().map(|_| ()).map_err(|e| *e);
        let bucket_want = match &fitted {
            Ok(g) => first_overflow(g, points, K).map_or(Ok(()), |bucket| {
                Err(Error::BucketFull {
                    bucket,
                    capacity: K as u32,
                })
            }),
            Err(e) => Err(*e),
        };
        let ok = table_ok(self.table_len);
        let mut got: [Option<Outcome>; 3] = [None, None, None];
        if which[0] {
            got[0] = Some(
                build_one(
                    &mut self.models[0],
                    &mut self.sorted,
                    ok,
                    points,
                    radius,
                    &common,
                )
                .map_err(|e| format!("{}: {e}", NAMES[0]))?,
            );
        }
        if which[1] {
            got[1] = Some(
                build_one(
                    &mut self.models[1],
                    &mut self.bucket,
                    ok,
                    points,
                    radius,
                    &bucket_want,
                )
                .map_err(|e| format!("{}: {e}", NAMES[1]))?,
            );
        }
        if which[2] {
            got[2] = Some(
                build_one(
                    &mut self.models[2],
                    &mut self.linked,
                    ok,
                    points,
                    radius,
                    &common,
                )
                .map_err(|e| format!("{}: {e}", NAMES[2]))?,
            );
        }
        if let (Some(a), Some(c)) = (&got[0], &got[2]) {
            ensure!(a == c, "sorted {a:?} and linked {c:?} disagree");
        }
        if let (Some(a), Some(b)) = (&got[0], &got[1]) {
            let full = matches!(b, Err(Error::BucketFull { .. })) && a.is_ok();
            ensure!(a == b || full, "sorted {a:?} and bucket {b:?} disagree");
        }
        if let Ok(g) = fitted {
            for (i, r) in got.iter().enumerate() {
                if matches!(r, Some(Ok(()))) {
                    self.grids[i] = Some(g);
                }
            }
        }
        Ok(())
    }

    /// `LinkedHash::update`, predicted from the kept grid; the others are
    /// built from the same positions.
    fn update(&mut self, moves: &[(u32, PointSpec<P>)], resize: Option<u8>) -> Result<(), String> {
        let base = self.models[2].points.clone();
        let radius = self.models[2].radius;
        let n = base.len();
        let mut new = base.clone();
        if n > 0 {
            for (i, spec) in moves {
                new[*i as usize % n] = SearchModel::resolve(spec, &base, radius);
            }
        }
        if let Some(k) = resize {
            new.resize(usize::from(k) % (self.capacity + 2), P::ZERO);
        }
        let want: Result<usize, Error> = if new.len() != n {
            Err(Error::LengthMismatch {
                expected: n,
                got: new.len(),
            })
        } else if n == 0 {
            Ok(0)
        } else {
            let g = self.grids[2].ok_or("stored particles without a grid")?;
            let mut moved = 0;
            let mut err = None;
            for (a, b) in base.iter().zip(&new) {
                match g.cell(*b) {
                    Err(e) => {
                        err = Some(e);
                        break;
                    }
                    Ok(c) => moved += usize::from(g.cell(*a) != Ok(c)),
                }
            }
            err.map_or(Ok(moved), Err)
        };
        let got = self.linked.update(&new);
        ensure!(
            got == want,
            "update of {} points: {got:?}, want {want:?}",
            new.len()
        );
        if got.is_ok() {
            if let Some(g) = &self.grids[2] {
                let (span, tol) = span_from(&new, g);
                let limit = f64::from(UNIFORM_RANGE_CELLS);
                ensure!(span.lt(&(limit + tol)), "update accepted {span} cells");
            }
            self.models[2].points = new.clone();
        }
        self.models[2]
            .check(&self.linked)
            .map_err(|e| format!("{} after update: {e}", NAMES[2]))?;
        self.build_all(&new, radius, [true, true, false])
    }

    /// `reorder` (bad lengths first if asked), then a rebuild of all three
    /// from the reordered positions: the sort is then the identity.
    fn reorder(&mut self, bad: Option<(bool, u8)>) -> Result<(), String> {
        let points = self.models[0].points.clone();
        let radius = self.models[0].radius;
        let n = points.len();
        if let Some((dst_bad, k)) = bad {
            let d = 1 + usize::from(k % 4);
            let len = if k & 4 != 0 {
                n + d
            } else {
                n.saturating_sub(d)
            };
            if len != n {
                let mut src = points.clone();
                src.resize(len, P::ZERO);
                let mut dst = vec![P::ZERO; if dst_bad { len } else { n }];
                let r = if dst_bad {
                    self.sorted.reorder(&points, &mut dst)
                } else {
                    self.sorted.reorder(&src, &mut dst)
                };
                let want = Err(Error::LengthMismatch {
                    expected: n,
                    got: len,
                });
                ensure!(r == want, "reorder with a length {len} of {n}: {r:?}");
            }
        }
        let mut dst = vec![P::ZERO; n];
        let r = self.sorted.reorder(&points, &mut dst);
        ensure!(r == Ok(()), "reorder: {r:?}");
        let ids: Vec<u32> = (0..n as u32).collect();
        let mut perm = vec![u32::MAX; n];
        let r = self.sorted.reorder(&ids, &mut perm);
        ensure!(r == Ok(()), "reorder of ids: {r:?}");
        let sorted: Vec<u32> = self.sorted.sorted_ids().to_vec();
        ensure!(
            perm == sorted,
            "reorder of ids {perm:?}, sorted() {sorted:?}"
        );
        for (k, &i) in perm.iter().enumerate() {
            ensure!(
                bits(dst[k]) == bits(points[i as usize]),
                "reorder[{k}] = {:?}, want {:?}",
                dst[k],
                points[i as usize]
            );
        }
        self.build_all(&dst, radius, [true; 3])?;
        if n > 0 && self.models[0].points.len() == n {
            ensure!(
                self.sorted.input_was_sorted(),
                "rebuilt from reordered input, not input_was_sorted"
            );
        }
        Ok(())
    }

    /// Everything observable against the models, and the uniform hashes'
    /// own figures.
    ///
    /// # Errors
    /// A message naming the hash and what differs.
    pub fn check(&self) -> Result<(), String> {
        let (t, k) = (self.table_len, K);
        let three = P::DIM == 3;
        let named = |i: usize| move |e: String| format!("{}: {e}", NAMES[i]);
        self.models[0].check(&self.sorted).map_err(named(0))?;
        self.models[1].check(&self.bucket).map_err(named(1))?;
        self.models[2].check(&self.linked).map_err(named(2))?;
        let sorted_mem = 8 * t + if three { 24 } else { 20 } * self.capacity;
        let bucket_mem = (16 + 4 * k) * t + if three { 24 } else { 16 } * self.capacity;
        let linked_mem = 8 * t + if three { 32 } else { 24 } * self.capacity;
        self.common(0, &self.sorted, self.sorted.grid(), sorted_mem)
            .map_err(named(0))?;
        self.common(1, &self.bucket, self.bucket.grid(), bucket_mem)
            .map_err(named(1))?;
        self.common(2, &self.linked, self.linked.grid(), linked_mem)
            .map_err(named(2))?;
        self.check_sorted().map_err(named(0))?;
        self.check_bucket().map_err(named(1))
    }

    fn common<N: Inspect<Stats = SearchStats>>(
        &self,
        i: usize,
        t: &N,
        grid: &Grid<P>,
        memory: usize,
    ) -> Result<(), String> {
        let m = &self.models[i];
        if let Some(g) = &self.grids[i] {
            ensure!(grid == g, "grid {grid:?}, want {g:?}");
        }
        ensure!(
            t.memory_bytes() == memory,
            "memory_bytes {}, formula {memory}",
            t.memory_bytes()
        );
        let occupied = match (&self.grids[i], m.points.is_empty()) {
            (_, true) => 0,
            // The cell-sorted hash indexes its cells by open addressing, one
            // slot each, when the table has two slots per cell; none otherwise.
            (Some(g), false) if i == 0 => {
                let cells = occupancy(g, &m.points)?.1;
                if 2 * cells <= self.table_len {
                    cells
                } else {
                    0
                }
            }
            (Some(g), false) => occupancy(g, &m.points)?.0,
            (None, false) => return Err("stored particles without a grid".into()),
        };
        let s = t.stats();
        let want = SearchStats {
            particles: m.points.len(),
            capacity: self.capacity,
            radius: m.radius,
            table_slots: self.table_len,
            occupied_slots: occupied,
        };
        ensure!(
            s.radius.to_bits() == want.radius.to_bits() && s == want,
            "stats {s:?}, want {want:?}"
        );
        Ok(())
    }

    fn check_sorted(&self) -> Result<(), String> {
        let s = &self.sorted;
        let points = &self.models[0].points;
        let n = points.len();
        let (cells, colliding) = match &self.grids[0] {
            Some(g) if n > 0 => {
                let o = occupancy(g, points)?;
                // The index is direct-mapped (no collisions) when the
                // table has two slots per cell and the cells' bounding box
                // fits in it.
                let direct = self.table_len >= 2 * o.1 && box_cells(g, points)? <= self.table_len;
                (o.1, if direct { 0 } else { o.2 })
            }
            _ => (0, 0),
        };
        ensure!(
            s.occupied_cells() == cells,
            "occupied_cells {}, want {cells}",
            s.occupied_cells()
        );
        ensure!(
            s.colliding_cells() == colliding,
            "colliding_cells {}, want {colliding}",
            s.colliding_cells()
        );
        let sorted: Vec<(u32, P)> = s.sorted_particles().collect();
        ensure!(sorted.len() == n, "sorted() holds {}", sorted.len());
        let mut seen = vec![false; n];
        let mut identity = true;
        for (k, &(id, pos)) in sorted.iter().enumerate() {
            let i = id as usize;
            ensure!(i < n && !seen[i], "sorted() ids not a permutation");
            seen[i] = true;
            identity &= i == k;
            ensure!(
                bits(pos) == bits(points[i]),
                "sorted()[{k}] at {:?}, particle {i} at {:?}",
                pos,
                points[i]
            );
        }
        ensure!(
            s.input_was_sorted() == identity,
            "input_was_sorted {} but the order is {}the identity",
            s.input_was_sorted(),
            if identity { "" } else { "not " }
        );
        if let Some(g) = &self.grids[0] {
            // One run per cell, input order within it.
            let mut done: Vec<P::Cell> = Vec::new();
            let mut prev: Option<(P::Cell, u32)> = None;
            for (id, pos) in sorted {
                let c = g.cell(pos).map_err(|e| format!("{e:?}"))?;
                match prev {
                    Some((pc, pid)) if pc == c => {
                        ensure!(pid < id, "run of {c:?} not in input order");
                    }
                    _ => {
                        ensure!(!done.contains(&c), "cell {c:?} in two runs");
                        done.push(c);
                    }
                }
                prev = Some((c, id));
            }
        }
        Ok(())
    }

    fn check_bucket(&self) -> Result<(), String> {
        let b = &self.bucket;
        let points = &self.models[1].points;
        ensure!(
            b.max_bucket_len() <= K,
            "max_bucket_len {} > {K}",
            b.max_bucket_len()
        );
        if let (Some(g), false) = (&self.grids[1], points.is_empty()) {
            let mut counts: Vec<(u32, usize)> = Vec::new();
            for &p in points {
                let k = g.bucket(g.cell(p).map_err(|e| format!("{e:?}"))?);
                match counts.iter_mut().find(|c| c.0 == k) {
                    Some(c) => c.1 += 1,
                    None => counts.push((k, 1)),
                }
            }
            let max = counts.iter().map(|c| c.1).max().unwrap_or(0);
            ensure!(
                b.max_bucket_len() == max,
                "max_bucket_len {}, want {max}",
                b.max_bucket_len()
            );
        }
        Ok(())
    }
}

/// One build judged by the model (or, for a table `new` accepted but the
/// build must refuse, by the check after it) and by the exact prediction.
fn build_one<P: Point, N: NeighborSearch<P> + Validate>(
    m: &mut SearchModel<P>,
    t: &mut N,
    table_ok: bool,
    points: &[P],
    radius: f32,
    want: &Outcome,
) -> Result<Outcome, String> {
    let got = if table_ok {
        let op = SearchOp::Build(
            points.iter().map(|&p| PointSpec::Exact(p)).collect(),
            RadiusSpec::Bits(radius.to_bits()),
        );
        m.apply(t, &op)?
    } else {
        let r = t.build(points, radius);
        m.check(t)
            .map_err(|e| format!("after a refused build: {e}"))?;
        r
    };
    ensure!(
        got == *want,
        "build of {} points, radius {radius:e}: {got:?}, want {want:?}",
        points.len()
    );
    plausible(&got, points, radius)?;
    Ok(got)
}

/// The parallel forms of the cell-sorted hash against the serial ones, from
/// the same state `pre`: `par_build` on three scoped threads gives the same
/// outcome and structure as `build`, the per-task pair sinks concatenated
/// are the serial pair sequence bit for bit, the gather sees every
/// particle's serial neighbours, and the parallel lists equal the serial
/// lists as sets (with exact room, and with room for them four times over,
/// which takes the one-sweep path).
///
/// # Errors
/// What differs.
pub fn check_parallel<P: Point>(
    pre: &VecCellSorted<P>,
    points: &[P],
    radius: f32,
) -> Result<(), String> {
    use spatium::exec::Executor;
    let exec = spatium_host::par::Threads::new(3);
    ensure!(exec.workers() == 3, "three workers");
    let mut ser = pre.clone();
    let mut par = pre.clone();
    let want = ser.build(points, radius);
    let got = par.par_build(&exec, points, radius);
    ensure!(got == want, "par_build {got:?}, build {want:?}");
    ensure!(
        par.sorted_particles()
            .map(|(i, p)| (i, bits(p)))
            .eq(ser.sorted_particles().map(|(i, p)| (i, bits(p)))),
        "sorted particles differ"
    );
    ensure!(
        par.len() == ser.len() && par.radius().to_bits() == ser.radius().to_bits(),
        "len / radius"
    );
    ensure!(par.is_indexed() == ser.is_indexed(), "indexed");
    ensure!(
        par.input_was_sorted() == ser.input_was_sorted(),
        "input_was_sorted"
    );
    par.validate().map_err(|e| format!("validate: {e}"))?;
    let mut serial = Vec::new();
    ser.for_each_pair(|i, j, d2| serial.push((i, j, d2.to_bits())));
    let mut sinks = vec![Vec::new(); par.pair_tasks()];
    par.par_for_each_pair(
        &exec,
        &mut sinks,
        |k: &mut Vec<(u32, u32, u32)>, i, j, d2| k.push((i, j, d2.to_bits())),
    )
    .map_err(|e| format!("par_for_each_pair: {e}"))?;
    ensure!(
        sinks.concat() == serial,
        "pair sinks differ from the serial sequence"
    );
    let n = par.len();
    let mut lists = vec![Vec::new(); n];
    par.par_gather(&exec, &mut lists, |_, l: &mut Vec<u32>, j, _| l.push(j))
        .map_err(|e| format!("par_gather: {e}"))?;
    let mut offsets = vec![0u32; n + 1];
    let mut indices = vec![0u32; 2 * serial.len()];
    let total = par
        .par_neighbor_lists(&exec, &mut offsets, &mut indices)
        .map_err(|e| format!("par_neighbor_lists: {e}"))?;
    ensure!(total == 2 * serial.len(), "list total {total}");
    // With room for the lists more than twice over they are written in one
    // sweep into provisional regions, then copied into place: the same
    // lists.
    let mut roomy_offsets = vec![u32::MAX; n + 1];
    let mut roomy = vec![u32::MAX; 4 * total + 8];
    let again = par
        .par_neighbor_lists(&exec, &mut roomy_offsets, &mut roomy)
        .map_err(|e| format!("par_neighbor_lists with room: {e}"))?;
    ensure!(
        again == total && roomy_offsets == offsets && roomy[..total] == indices[..total],
        "lists with room for them four times over differ"
    );
    for (i, l) in lists.iter_mut().enumerate() {
        let mut want: Vec<u32> = Vec::new();
        ser.for_each_neighbor(i as u32, |j, _| want.push(j))
            .map_err(|e| format!("for_each_neighbor: {e}"))?;
        want.sort_unstable();
        l.sort_unstable();
        ensure!(*l == want, "gather of {i}");
        let mut li = indices[offsets[i] as usize..offsets[i + 1] as usize].to_vec();
        li.sort_unstable();
        ensure!(li == want, "list of {i}");
    }
    Ok(())
}
