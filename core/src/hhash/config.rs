//! Classes and their cells: [`HashConfig`] (base size, levels, origin) and the
//! integer arithmetic of class levels and cell ranges.

use crate::cell::floor_i32;
use crate::error::Error;
use crate::geom::{BoundingBox, Point};

use super::{HHASH_RANGE_CELLS, MAX_LEVEL};

/// Classes, base size and origin of a [`ClassHash`](super::ClassHash).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(
    feature = "serde",
    serde(
        try_from = "HashConfigFields<P>",
        into = "HashConfigFields<P>",
        bound(
            serialize = "P: serde::Serialize",
            deserialize = "P: serde::Deserialize<'de>"
        )
    )
)]
pub struct HashConfig<P: Point> {
    pub(super) base: f32,
    pub(super) inv_base: f32,
    pub(super) origin: P,
    pub(super) levels: u32,
}

/// [`HashConfig`]'s values (the inverse base size is derived): a
/// configuration deserializes through [`HashConfig::new`] and
/// [`HashConfig::with_origin`].
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename = "HashConfig")]
struct HashConfigFields<P> {
    base: f32,
    levels: u32,
    origin: P,
}

#[cfg(feature = "serde")]
impl<P: Point> From<HashConfig<P>> for HashConfigFields<P> {
    fn from(c: HashConfig<P>) -> Self {
        Self {
            base: c.base,
            levels: c.levels,
            origin: c.origin,
        }
    }
}

#[cfg(feature = "serde")]
impl<P: Point> TryFrom<HashConfigFields<P>> for HashConfig<P> {
    type Error = Error;
    fn try_from(f: HashConfigFields<P>) -> Result<Self, Error> {
        Self::new(f.base, f.levels)?.with_origin(f.origin)
    }
}

impl<P: Point> HashConfig<P> {
    /// Base size 1, the origin at zero, and the single class of level 0.
    pub const DEFAULT: Self = Self {
        base: 1.0,
        inv_base: 1.0,
        origin: P::ZERO,
        levels: 1,
    };

    /// A configuration with the smallest class of size `base` and the
    /// classes whose levels are the set bits of `levels` (bit 0, the class
    /// of size `base`, is always added).
    ///
    /// A `const fn`, `O(1)`.
    ///
    /// # Errors
    /// [`Error::InvalidRadius`] if `base` is not finite and positive with a
    /// finite, normal inverse; [`Error::InvalidConfig`] if `levels` has a bit
    /// above [`MAX_LEVEL`].
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{Error, Vec3, hhash::HashConfig};
    ///
    /// const C: Result<HashConfig<Vec3>, Error> = HashConfig::new(0.25, 0b1010);
    /// let c = C.unwrap();
    /// assert_eq!(c.levels(), 0b1011); // level 0 is always there
    /// assert_eq!(c.class_size(3), 2.0);
    /// assert_eq!(HashConfig::<Vec3>::new(0.0, 1), Err(Error::InvalidRadius));
    /// ```
    pub const fn new(base: f32, levels: u32) -> Result<Self, Error> {
        let inv_base = 1.0 / base;
        if !(base.is_finite() && base > 0.0 && inv_base.is_finite() && inv_base.is_normal()) {
            return Err(Error::InvalidRadius);
        }
        if levels >> (MAX_LEVEL + 1) != 0 {
            return Err(Error::InvalidConfig { field: "levels" });
        }
        Ok(Self {
            base,
            inv_base,
            origin: P::ZERO,
            levels: levels | 1,
        })
    }

    /// The preprocessing pass of §2.2: the smallest class of size `base`
    /// (the fluid's interaction radius) plus the class of every size in
    /// `sizes` (longest box edges; sizes at or below `base` add nothing,
    /// sizes above `base · 2^30` add the largest level, [`MAX_LEVEL`]). The
    /// result always round-trips: `HashConfig::new(c.base(), c.levels())`
    /// gives `c` back.
    ///
    /// `O(number of sizes)`.
    ///
    /// # Errors
    /// As [`new`](Self::new); [`Error::NonFinite`] for a size that is NaN or
    /// infinite.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{Vec2, hhash::HashConfig};
    ///
    /// // Radius 0.1; objects of sizes 0.05, 0.3 and 1.5: classes 0.1, 0.4, 1.6.
    /// let c = HashConfig::<Vec2>::from_sizes(0.1, [0.05, 0.3, 1.5]).unwrap();
    /// assert_eq!(c.levels(), 0b10101);
    /// ```
    pub fn from_sizes(base: f32, sizes: impl IntoIterator<Item = f32>) -> Result<Self, Error> {
        let mut c = Self::new(base, 1)?;
        for s in sizes {
            c = c.add_size(s)?;
        }
        Ok(c)
    }

    /// This configuration with the class of `size` added (the smallest
    /// class at least `size`, [`MAX_LEVEL`] at most). `O(1)`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] if `size` is NaN or infinite.
    pub fn add_size(self, size: f32) -> Result<Self, Error> {
        if !size.is_finite() {
            return Err(Error::NonFinite);
        }
        // Sizes beyond the largest class add the largest class (which
        // subdivides them): a level above MAX_LEVEL would not round-trip
        // through `new`.
        let l = self.level_at_least(size).min(MAX_LEVEL);
        Ok(Self {
            levels: self.levels | (1 << l),
            ..self
        })
    }

    /// This configuration with the classes of `levels` added (bits above
    /// [`MAX_LEVEL`] are ignored). Levels with no object of their own still
    /// prune empty space in hierarchical hashing. `O(1)`.
    pub const fn with_levels(self, levels: u32) -> Self {
        Self {
            levels: self.levels | (levels & ((1 << (MAX_LEVEL + 1)) - 1)),
            ..self
        }
    }

    /// This configuration with another origin for the cells (all classes
    /// share it). `O(1)`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] if `origin` is not finite.
    pub fn with_origin(self, origin: P) -> Result<Self, Error> {
        if !origin.is_finite() {
            return Err(Error::NonFinite);
        }
        Ok(Self { origin, ..self })
    }

    /// The size of the smallest class.
    pub const fn base(&self) -> f32 {
        self.base
    }

    /// The levels in use: bit `c` is the class of size `base · 2^c`.
    pub const fn levels(&self) -> u32 {
        self.levels
    }

    /// The origin shared by every class's cells.
    pub const fn origin(&self) -> P {
        self.origin
    }

    /// The size of the class of level `c` (`base · 2^c`; levels above
    /// [`MAX_LEVEL`], which no configuration holds, report the largest
    /// class's size).
    pub fn class_size(&self, c: u32) -> f32 {
        self.base * (1u64 << c.min(MAX_LEVEL)) as f32
    }

    /// Smallest level whose class size `base · 2^l` is at least `edge`
    /// (up to 31 for edges beyond the largest class).
    ///
    /// The ratio `edge / base` is rounded, and can round down onto a power
    /// of two (base 1.9233739, edge 1.9233741: ratio exactly 1.0 in `f32`),
    /// which would pick a class smaller than the edge. `base · 2^l` is exact
    /// in `f32` (a power-of-two scaling), so the comparison is exact.
    #[inline]
    pub(super) fn level_at_least(&self, edge: f32) -> u32 {
        let l = level_for(edge * self.inv_base);
        if l < 31 && self.base * ((1u32 << l) as f32) < edge {
            l + 1
        } else {
            l
        }
    }

    /// The class an object of this box goes to: the smallest class at least
    /// as large as its longest edge, or the largest class (subdivided).
    pub fn class_of(&self, aabb: &P::Aabb) -> u32 {
        let need = self.level_at_least(aabb.longest_edge());
        let above = self.levels & !((1u32 << need) - 1);
        if above != 0 {
            above.trailing_zeros()
        } else {
            31 - self.levels.leading_zeros()
        }
    }

    /// Entries an object of this box takes: the number of cells of its class
    /// it overlaps (saturating). `O(1)`.
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::InvertedBox`], [`Error::OutOfRange`].
    pub fn entries_of(&self, aabb: &P::Aabb) -> Result<u64, Error> {
        aabb.check()?;
        let (lo, hi) = self.stored_range(aabb)?;
        Ok(cell_count::<P>(&lo, &hi, self.class_of(aabb)))
    }

    /// Pool entries needed to store `boxes` as objects plus `particles`
    /// particles (saturating): the pool length to give
    /// [`ClassHash::new`](super::ClassHash::new). `O(boxes)`.
    ///
    /// # Errors
    /// As [`entries_of`](Self::entries_of) for the first bad box.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{Aabb2, Vec2, hhash::HashConfig};
    ///
    /// let c = HashConfig::<Vec2>::DEFAULT; // one class of size 1
    /// // A box across 2 × 2 cells and another inside one cell, 10 particles.
    /// let boxes = [
    ///     Aabb2::new(Vec2::new(0.5, 0.5), Vec2::new(1.4, 1.4)).unwrap(),
    ///     Aabb2::new(Vec2::new(3.1, 3.1), Vec2::new(3.2, 3.2)).unwrap(),
    /// ];
    /// assert_eq!(c.entries_for(&boxes, 10), Ok(4 + 1 + 10));
    /// ```
    pub fn entries_for(&self, boxes: &[P::Aabb], particles: usize) -> Result<u64, Error> {
        let mut n = particles as u64;
        for b in boxes {
            n = n.saturating_add(self.entries_of(b)?);
        }
        Ok(n)
    }

    /// Base-cell coordinate along `axis`, clamped to `±HHASH_RANGE_CELLS`
    /// (monotone in `x`).
    #[inline(always)]
    pub(super) fn base_t(&self, x: f32, axis: usize) -> f32 {
        ((x - self.origin.coord(axis)) * self.inv_base).clamp(-HHASH_RANGE_CELLS, HHASH_RANGE_CELLS)
    }

    /// Base cell of a point, clamped.
    #[inline(always)]
    pub(super) fn base_cell(&self, p: P) -> [i32; 3] {
        let mut c = [0; 3];
        for (k, ck) in c.iter_mut().enumerate().take(P::DIM) {
            *ck = floor_i32(self.base_t(p.coord(k), k));
        }
        c
    }

    /// Base cells of a box's corners, clamped (for queries).
    #[inline(always)]
    pub(super) fn query_range(&self, b: &P::Aabb) -> ([i32; 3], [i32; 3]) {
        (self.base_cell(b.min()), self.base_cell(b.max()))
    }

    /// Base cells of a stored point: refused beyond `HHASH_RANGE_CELLS`.
    #[inline(always)]
    pub(super) fn stored_cell(&self, p: P) -> Result<[i32; 3], Error> {
        let mut c = [0; 3];
        for (k, ck) in c.iter_mut().enumerate().take(P::DIM) {
            let t = (p.coord(k) - self.origin.coord(k)) * self.inv_base;
            if t.is_nan() || t.abs() >= HHASH_RANGE_CELLS {
                return Err(Error::OutOfRange);
            }
            *ck = floor_i32(t);
        }
        Ok(c)
    }

    pub(super) fn stored_range(&self, b: &P::Aabb) -> Result<([i32; 3], [i32; 3]), Error> {
        Ok((self.stored_cell(b.min())?, self.stored_cell(b.max())?))
    }
}

/// Smallest level `c` with `2^c ≥ e` (0 for `e ≤ 1`, capped at 31 for
/// anything above 2³⁰, including infinity; NaN gives 0).
#[inline(always)]
pub(super) fn level_for(e: f32) -> u32 {
    // e is a ratio of sizes; negative or NaN cannot come from a valid box.
    if e <= 1.0 || e.is_nan() {
        return 0;
    }
    if e > HHASH_RANGE_CELLS {
        return 31;
    }
    let bits = e.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32 - 127; // e ≥ 1: normal
    let exact = bits & 0x7f_ffff == 0;
    (exp + if exact { 0 } else { 1 }) as u32
}

/// The set bits of `levels`, largest first, and their number.
pub(super) const fn level_order(levels: u32) -> ([u8; 32], u32) {
    let mut order = [0u8; 32];
    let mut n = 0;
    let mut l = 32;
    while l > 0 {
        l -= 1;
        if levels & (1 << l) != 0 {
            order[n] = l as u8;
            n += 1;
        }
    }
    (order, n as u32)
}

#[inline(always)]
pub(super) fn shr(c: &[i32; 3], l: u32) -> [i32; 3] {
    [c[0] >> l, c[1] >> l, c[2] >> l]
}

/// Cells of level `l` in the base-cell range `[lo, hi]` (saturating).
#[inline(always)]
pub(super) fn cell_count<P: Point>(lo: &[i32; 3], hi: &[i32; 3], l: u32) -> u64 {
    let mut n = 1u64;
    for k in 0..P::DIM {
        let w = ((hi[k] >> l) as i64 - (lo[k] >> l) as i64 + 1) as u64;
        n = n.saturating_mul(w);
    }
    n
}

/// Next cell of the box `[lo, hi]` after `c` in odometer order (axis 0
/// fastest), or `false` when `c` was the last.
#[inline(always)]
pub(super) fn advance<P: Point>(c: &mut [i32; 3], lo: &[i32; 3], hi: &[i32; 3]) -> bool {
    for k in 0..P::DIM {
        if c[k] < hi[k] {
            c[k] += 1;
            return true;
        }
        c[k] = lo[k];
    }
    false
}

#[inline(always)]
pub(super) fn cell_hash<P: Point>(c: &[i32; 3]) -> u32 {
    P::cell_hash(P::cell_from_fn(|k| c[k]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// and the box went to a class smaller than its longest edge (27 cells
    /// instead of at most 8), so a pool sized by the formula ran short.
    #[test]
    fn class_is_never_smaller_than_the_longest_edge() {
        use crate::geom::{Aabb3, Vec3};
        let base = 1.923_373_9_f32;
        let c = HashConfig::<Vec3>::new(base, 0b11).unwrap();
        let b = Aabb3::new(
            Vec3::new(1.923_373_8, 1.923_373_8, 1.923_373_8),
            Vec3::new(3.846_747_9, 3.846_747_9, 3.846_747_9),
        )
        .unwrap();
        let l = c.class_of(&b);
        assert!(c.class_size(l) >= b.longest_edge(), "class {l}");
        assert_eq!(l, 1);
        assert!(c.entries_of(&b).unwrap() <= 8);
        // Exhaustively near powers of two of the base.
        let mut x = 1.0f32;
        for _ in 0..2000 {
            for k in 0..4 {
                let edge = base * (1u32 << k) as f32 * x;
                let l = c.level_at_least(edge);
                assert!(c.base * (1u64 << l) as f32 >= edge, "{edge}");
                assert!(
                    l == 0 || c.base * ((1u64 << (l - 1)) as f32) < edge,
                    "{edge}"
                );
            }
            x = f32::from_bits(x.to_bits() + 1);
        }
    }

    /// Regression (defect 5): sizes beyond the largest class set level 31,
    /// which `new` refuses, so the configuration did not round-trip and
    /// `class_size(31)` reported the wrong size.
    #[test]
    fn configurations_from_sizes_round_trip() {
        use crate::geom::Vec3;
        let c = HashConfig::<Vec3>::from_sizes(1.0, [2e9]).unwrap();
        assert_eq!(c.levels(), 1 | (1 << MAX_LEVEL));
        assert_eq!(c.class_size(MAX_LEVEL), (1u64 << 30) as f32);
        for sizes in [
            &[][..],
            &[0.5, 3.0, 1e3][..],
            &[2e9, f32::MAX][..],
            &[1.0, 2.0, 4.0, 1e30][..],
        ] {
            let c = HashConfig::<Vec3>::from_sizes(0.25, sizes.iter().copied()).unwrap();
            assert_eq!(
                HashConfig::<Vec3>::new(c.base(), c.levels()),
                Ok(c),
                "{sizes:?}"
            );
        }
    }

    #[test]
    fn levels_follow_eq2() {
        assert_eq!(level_for(0.0), 0);
        assert_eq!(level_for(1.0), 0);
        assert_eq!(level_for(1.01), 1);
        assert_eq!(level_for(2.0), 1);
        assert_eq!(level_for(3.0), 2);
        assert_eq!(level_for(4.0), 2);
        assert_eq!(level_for(1024.5), 11);
        assert_eq!(level_for(f32::INFINITY), 31);
    }

    #[test]
    fn level_order_lists_set_bits_largest_first() {
        let (o, n) = level_order(0b1011);
        assert_eq!((n, &o[..3]), (3, &[3u8, 1, 0][..]));
        let (o, n) = level_order(1);
        assert_eq!((n, o[0]), (1, 0));
        let (o, n) = level_order(u32::MAX);
        assert_eq!((n, o[0], o[31]), (32, 31, 0));
        assert_eq!(level_order(0).1, 0);
    }

    #[test]
    fn cells_shift_nest_and_count() {
        use crate::geom::{Vec2, Vec3};
        // Arithmetic shifts floor towards −∞: nesting holds for negatives.
        assert_eq!(shr(&[-1, -4, 7], 2), [-1, -1, 1]);
        assert_eq!(shr(&[-5, 5, 0], 0), [-5, 5, 0]);
        // [−3, 4] × [0, 1] base cells: 8 × 2 at level 0, 3 × 1 at level 2.
        let (lo, hi) = ([-3, 0, 0], [4, 1, 0]);
        assert_eq!(cell_count::<Vec2>(&lo, &hi, 0), 16);
        assert_eq!(cell_count::<Vec2>(&lo, &hi, 2), 3);
        // The third axis counts in 3D only.
        assert_eq!(cell_count::<Vec3>(&lo, &[4, 1, 2], 0), 48);
        // Saturates instead of overflowing.
        let (a, b) = ([i32::MIN; 3], [i32::MAX; 3]);
        assert_eq!(cell_count::<Vec3>(&a, &b, 0), u64::MAX);
        // The odometer visits every cell of the box once, axis 0 fastest.
        let (lo, hi) = ([-1, 2, 0], [0, 4, 0]);
        let mut c = lo;
        let mut seen = 1;
        let mut last = c;
        while advance::<Vec2>(&mut c, &lo, &hi) {
            seen += 1;
            assert!(c[1] > last[1] || (c[1] == last[1] && c[0] > last[0]));
            last = c;
        }
        assert_eq!((seen, last), (6, [0, 4, 0]));
        assert_eq!(c, lo);
    }

    #[test]
    fn cells_of_points_and_boxes() {
        use crate::geom::{Aabb2, Vec2};
        let c = HashConfig::<Vec2>::new(0.5, 0b100)
            .unwrap()
            .with_origin(Vec2::new(1.0, -1.0))
            .unwrap();
        assert_eq!(c.base_cell(Vec2::new(1.0, -1.0)), [0, 0, 0]);
        assert_eq!(c.base_cell(Vec2::new(0.9, 0.1)), [-1, 2, 0]);
        // Queries clamp, stored coordinates are refused beyond the range.
        let far = Vec2::new(1e30, 0.0);
        assert_eq!(c.base_cell(far)[0], HHASH_RANGE_CELLS as i32);
        assert_eq!(c.stored_cell(far), Err(Error::OutOfRange));
        assert_eq!(
            c.stored_cell(Vec2::new(f32::NAN, 0.0)),
            Err(Error::OutOfRange)
        );
        // Classes: 0.5 and 2; an edge of 0.6 goes to class 2 (level 2), an
        // edge of 5 to class 2 too, subdivided over its cells.
        let small = Aabb2::new(Vec2::new(1.0, -1.0), Vec2::new(1.6, -0.5)).unwrap();
        assert_eq!(c.class_of(&small), 2);
        assert_eq!(c.entries_of(&small), Ok(1));
        let big = Aabb2::new(Vec2::new(1.0, -1.0), Vec2::new(6.0, 0.0)).unwrap();
        assert_eq!(c.class_of(&big), 2);
        assert_eq!(c.entries_of(&big), Ok(3));
        assert_eq!(c.entries_for(&[small, big], 7), Ok(1 + 3 + 7));
        assert_eq!(
            c.entries_of(&Aabb2::new(Vec2::ZERO, far).unwrap()),
            Err(Error::OutOfRange)
        );
        // Configuration errors.
        assert_eq!(
            HashConfig::<Vec2>::new(f32::NAN, 1),
            Err(Error::InvalidRadius)
        );
        assert_eq!(HashConfig::<Vec2>::new(1e-39, 1), Err(Error::InvalidRadius));
        assert_eq!(
            HashConfig::<Vec2>::new(1.0, 1 << 31),
            Err(Error::InvalidConfig { field: "levels" })
        );
        assert_eq!(c.add_size(f32::INFINITY), Err(Error::NonFinite));
        assert_eq!(
            c.with_origin(Vec2::new(f32::NAN, 0.0)),
            Err(Error::NonFinite)
        );
        assert_eq!(c.with_levels(u32::MAX).levels(), (1 << 31) - 1);
    }
}
