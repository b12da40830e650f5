//! The uniform grid shared by the three bucket strategies: an origin, a
//! cell size of `radius · CELL_MARGIN`, and the reduction of cell hashes to
//! a table slot.

use crate::cell::{CELL_MARGIN, UNIFORM_RANGE_CELLS, check_radius, floor_i32};
use crate::error::Error;
use crate::geom::Point;
use crate::table::{fibonacci_slot, table_mask};

/// The uniform grid shared by the three strategies: origin, cell size and the
/// reduction of cell hashes to a table index.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Grid<P: Point> {
    origin: P,
    inv_cell: f32,
    radius: f32,
    radius_sq: f32,
    /// `32 - log2(table length)`: the table index is the top bits of the
    /// Fibonacci-mixed hash.
    shift: u32,
}

const LIMIT: f32 = UNIFORM_RANGE_CELLS as f32;

impl<P: Point> Grid<P> {
    /// The grid of an empty structure.
    pub(crate) const EMPTY: Self = Self {
        origin: P::ZERO,
        inv_cell: 0.0,
        radius: 0.0,
        radius_sq: 0.0,
        shift: 32,
    };

    /// A grid for `radius` around `origin`, hashing into `table_len` slots.
    ///
    /// The structures fit their grid to the data at each build; this builds
    /// one with a fixed origin, for computing the same cells and buckets
    /// elsewhere (the GPU pipeline uses it to check its cell assignment).
    ///
    /// # Errors
    /// [`Error::InvalidRadius`] for a radius the grid arithmetic cannot use;
    /// [`Error::InvalidTableLength`] unless `table_len` is a power of two in
    /// `1..=2³¹`.
    pub fn new(radius: f32, origin: P, table_len: usize) -> Result<Self, Error> {
        check_radius(radius)?;
        let mask = table_mask(table_len)?;
        let shift = 32 - (mask.count_ones());
        let cell_size = radius * CELL_MARGIN;
        Ok(Self {
            origin,
            inv_cell: 1.0 / cell_size,
            radius,
            radius_sq: radius * radius,
            shift,
        })
    }

    /// A grid centred on the bounding box of `positions`, after checking, in
    /// this order (the one order of every neighbour search's build): the
    /// radius, the table length, that at most `capacity` positions are
    /// given, and that every position is finite and within
    /// [`UNIFORM_RANGE_CELLS`] cells.
    #[inline(always)]
    pub(crate) fn fit(
        radius: f32,
        positions: &[P],
        table_len: usize,
        capacity: usize,
    ) -> Result<Self, Error> {
        Self::fit_bounds(radius, positions, table_len, capacity).map(|(g, _, _)| g)
    }

    /// As [`fit`](Self::fit), also returning the corners of the positions'
    /// bounding box (both `ZERO` without positions).
    #[inline(always)]
    pub(crate) fn fit_bounds(
        radius: f32,
        positions: &[P],
        table_len: usize,
        capacity: usize,
    ) -> Result<(Self, P, P), Error> {
        // The errors come in the same order whatever the positions hold:
        // radius and table, then count, then non-finite positions.
        Self::fit_with_bounds(
            radius,
            positions.len(),
            bounds(positions),
            table_len,
            capacity,
        )
    }

    /// As [`fit_bounds`](Self::fit_bounds) for `n` positions whose corners
    /// and finiteness were found elsewhere (`None` for no positions): the
    /// parallel build computes them in tasks.
    pub(crate) fn fit_with_bounds(
        radius: f32,
        n: usize,
        bounds: Option<(P, P, bool)>,
        table_len: usize,
        capacity: usize,
    ) -> Result<(Self, P, P), Error> {
        let mut grid = Self::new(radius, P::ZERO, table_len)?;
        let Some((lo, hi, finite)) = bounds else {
            return Ok((grid, P::ZERO, P::ZERO));
        };
        if n > capacity {
            return Err(Error::CapacityExceeded { capacity });
        }
        if !finite {
            return Err(Error::NonFinite);
        }
        grid.origin = P::from_fn(|k| 0.5 * lo.coord(k) + 0.5 * hi.coord(k));
        // The cell coordinate is monotone in each coordinate, so the corners
        // bound every point.
        grid.cell(lo)?;
        grid.cell(hi)?;
        Ok((grid, lo, hi))
    }

    /// This grid with its origin moved to `anchor` (when given) instead of
    /// the centre of the positions' bounding box `lo..hi`, after checking
    /// that the corners stay within [`UNIFORM_RANGE_CELLS`] cells of it
    /// (`n` positions; nothing to check without any).
    pub(crate) fn anchored(
        mut self,
        anchor: Option<P>,
        lo: P,
        hi: P,
        n: usize,
    ) -> Result<Self, Error> {
        if let Some(origin) = anchor {
            self.origin = origin;
            if n > 0 {
                self.cell(lo)?;
                self.cell(hi)?;
            }
        }
        Ok(self)
    }

    /// The search radius.
    pub fn radius(&self) -> f32 {
        self.radius
    }

    /// `radius * radius`, the bound of the strict within-radius test.
    pub fn radius_sq(&self) -> f32 {
        self.radius_sq
    }

    /// Edge length of a cell (`radius · CELL_MARGIN`).
    pub fn cell_size(&self) -> f32 {
        self.radius * CELL_MARGIN
    }

    /// The point cell coordinates are measured from.
    pub fn origin(&self) -> P {
        self.origin
    }

    /// Number of table slots.
    pub fn table_len(&self) -> usize {
        1usize << (32 - self.shift)
    }

    /// The cell of `p`, or [`Error::NonFinite`] / [`Error::OutOfRange`].
    ///
    /// Cell coordinates are counted from [`UNIFORM_RANGE_CELLS`] cells below the
    /// origin, so they are never negative: the XOR hash maps mirrored
    /// negative coordinates onto few keys (cells in `[-25, 25]³` give only
    /// 79 430 distinct keys of 132 651 in a 2²¹ table, against 129 015 for
    /// `[0, 50]³`).
    pub fn cell(&self, p: P) -> Result<P::Cell, Error> {
        if !p.is_finite() {
            return Err(Error::NonFinite);
        }
        let mut ok = true;
        let c = P::cell_from_fn(|k| {
            let t = (p.coord(k) - self.origin.coord(k)) * self.inv_cell;
            ok &= t.abs() < LIMIT;
            // Clamped before the integer conversion, so a refused coordinate
            // never overflows the cell arithmetic.
            floor_i32(t.clamp(-LIMIT, LIMIT)) + UNIFORM_RANGE_CELLS
        });
        if ok { Ok(c) } else { Err(Error::OutOfRange) }
    }

    /// The cell of a point already known to be in range.
    #[inline(always)]
    pub(crate) fn cell_unchecked(&self, p: P) -> P::Cell {
        P::cell_from_fn(|k| {
            floor_i32((p.coord(k) - self.origin.coord(k)) * self.inv_cell) + UNIFORM_RANGE_CELLS
        })
    }

    /// The cell of any finite point, with coordinates beyond
    /// [`UNIFORM_RANGE_CELLS`] (+ 2) clamped to it: a cell for ordering
    /// (renumbering particles along the Morton curve of their cells), where
    /// far points sharing the border cell is harmless.
    #[inline(always)]
    pub(crate) fn cell_clamped(&self, p: P) -> P::Cell {
        P::cell_from_fn(|k| {
            let t = (p.coord(k) - self.origin.coord(k)) * self.inv_cell;
            // NaN clamps to NaN, which converts to 0: still a valid cell.
            floor_i32(t.clamp(-LIMIT - 2.0, LIMIT + 2.0)) + UNIFORM_RANGE_CELLS
        })
    }

    /// The cell of a query point around which `stored` particles are
    /// searched: `Ok(None)` when none is stored or the point lies so far
    /// outside the accepted range that no stored particle can be within the
    /// radius.
    pub(crate) fn query_cell(&self, p: P, stored: usize) -> Result<Option<P::Cell>, Error> {
        if !p.is_finite() {
            return Err(Error::NonFinite);
        }
        if stored == 0 {
            return Ok(None);
        }
        let mut ok = true;
        let c = P::cell_from_fn(|k| {
            let t = (p.coord(k) - self.origin.coord(k)) * self.inv_cell;
            ok &= t.abs() < LIMIT + 2.0;
            floor_i32(t.clamp(-LIMIT - 2.0, LIMIT + 2.0)) + UNIFORM_RANGE_CELLS
        });
        Ok(if ok { Some(c) } else { None })
    }

    /// Table index of a cell: the seed's hash ([`Point::cell_hash`]),
    /// reduced to the table length by Fibonacci hashing (multiply by
    /// ⌊2³²/φ⌋ and keep the top bits).
    ///
    /// Reducing by a mask would keep only the low bits of the three products,
    /// which depend only on the low bits of the coordinates. Measured on a
    /// block of 13 824 cells in 2¹⁸ slots: 1 068 colliding cells with the
    /// mask, 354 with the Fibonacci step (364 expected of a random hash).
    #[inline(always)]
    pub fn bucket(&self, c: P::Cell) -> u32 {
        fibonacci_slot(P::cell_hash(c), self.shift)
    }
}

/// Corners of `positions` and whether all are finite (`None` for none):
/// what [`Grid::fit_bounds`] reads, also per task in the parallel build.
pub(crate) fn bounds<P: Point>(positions: &[P]) -> Option<(P, P, bool)> {
    let &first = positions.first()?;
    let (mut lo, mut hi) = (first, first);
    let mut finite = true;
    for &p in positions {
        finite &= p.is_finite();
        lo = lo.min(p);
        hi = hi.max(p);
    }
    Some((lo, hi, finite))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::Vec3;

    #[test]
    fn out_of_range_is_refused() {
        let g = Grid::<Vec3>::new(1.0, Vec3::ZERO, 16).unwrap();
        assert!(g.cell(Vec3::new(16000.0, 0.0, 0.0)).is_ok());
        assert_eq!(g.cell(Vec3::new(17000.0, 0.0, 0.0)), Err(Error::OutOfRange));
        assert_eq!(g.cell(Vec3::new(f32::NAN, 0.0, 0.0)), Err(Error::NonFinite));
        // Far beyond i32 cells: refused, no overflow (found by the fuzzer).
        let tiny = Grid::<Vec3>::new(1e-9, Vec3::ZERO, 16).unwrap();
        assert_eq!(
            tiny.cell(Vec3::new(0.0, 0.0, -10.0)),
            Err(Error::OutOfRange)
        );
        assert_eq!(tiny.cell(Vec3::new(0.0, 0.0, 10.0)), Err(Error::OutOfRange));
        assert_eq!(tiny.query_cell(Vec3::new(0.0, 0.0, 1e30), 1), Ok(None));
        assert_eq!(tiny.query_cell(Vec3::new(0.0, 0.0, -1e30), 1), Ok(None));
        assert_eq!(
            Grid::<Vec3>::fit(1.0, &[Vec3::ZERO, Vec3::new(40000.0, 0.0, 0.0)], 16, 2),
            Err(Error::OutOfRange)
        );
        assert!(Grid::<Vec3>::fit(1.0, &[Vec3::new(1e6, 0.0, 0.0)], 16, 1).is_ok());
    }

    /// The one order of a build's checks: radius, table length, count, then
    /// the positions (as brute force and hierarchical hashing).
    #[test]
    fn fit_checks_in_the_shared_order() {
        let bad = [Vec3::new(f32::NAN, 0.0, 0.0), Vec3::ZERO];
        assert_eq!(
            Grid::<Vec3>::fit(0.0, &bad, 3, 1),
            Err(Error::InvalidRadius)
        );
        assert_eq!(
            Grid::<Vec3>::fit(1.0, &bad, 3, 1),
            Err(Error::InvalidTableLength { len: 3 })
        );
        assert_eq!(
            Grid::<Vec3>::fit(1.0, &bad, 4, 1),
            Err(Error::CapacityExceeded { capacity: 1 })
        );
        assert_eq!(Grid::<Vec3>::fit(1.0, &bad, 4, 2), Err(Error::NonFinite));
    }

    /// The boundary case that breaks an inclusive test: `x1 = -2⁻³⁰`,
    /// `x2 = 1`, r = 1 round to distance exactly 1. Strict `<` excludes it, and
    /// every pair the strict test accepts is in adjacent cells.
    #[test]
    fn strict_pairs_are_in_adjacent_cells() {
        let g = Grid::<Vec3>::new(1.0, Vec3::ZERO, 16).unwrap();
        let a = Vec3::new(-1.0 / (1u64 << 30) as f32, 0.0, 0.0);
        let b = Vec3::new(1.0, 0.0, 0.0);
        assert!(a.distance_squared(b) >= g.radius_sq());
        let mut x = -3.0f32;
        while x < 3.0 {
            let p = Vec3::new(x, 0.0, 0.0);
            let q = Vec3::new(x + 0.999_999, 0.0, 0.0);
            if p.distance_squared(q) < g.radius_sq() {
                let (cp, cq) = (g.cell(p).unwrap(), g.cell(q).unwrap());
                assert!((cq[0] - cp[0]).abs() <= 1);
            }
            x += 0.001;
        }
    }

    /// `new_checked` refuses a table length the first build would refuse,
    /// and accepts what `new` + build accepts.
    #[test]
    fn new_checked_refuses_bad_tables() {
        use crate::uniform::{
            Bucket, BucketHash, BucketParticle, CellRecord, CellSortedHash, Head, LinkedHash,
            LinkedParticle, SortedParticle, TableSlot,
        };
        let bad = Err(Error::InvalidTableLength { len: 6 });
        assert_eq!(
            CellSortedHash::<Vec3, _, _, _>::new_checked(
                [TableSlot::EMPTY; 6],
                [SortedParticle::EMPTY; 4],
                [CellRecord::EMPTY; 4]
            )
            .map(|_| ()),
            bad
        );
        assert_eq!(
            BucketHash::<Vec3, _, _, 2>::new_checked(
                [Bucket::<2>::EMPTY; 6],
                [BucketParticle::EMPTY; 4]
            )
            .map(|_| ()),
            bad
        );
        assert_eq!(
            LinkedHash::<Vec3, _, _>::new_checked([Head::EMPTY; 6], [LinkedParticle::EMPTY; 4])
                .map(|_| ()),
            bad
        );
        assert!(
            LinkedHash::<Vec3, _, _>::new_checked([Head::EMPTY; 8], [LinkedParticle::EMPTY; 4])
                .is_ok()
        );
    }
}
