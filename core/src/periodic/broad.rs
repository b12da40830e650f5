//! Broad phases with periodic overlap: one adapter,
//! [`PeriodicBroadPhase`], that makes any [`BroadPhase`] periodic.
//!
//! # Images
//!
//! A box is stored in the inner structure as up to `2^p` *images* (`p`
//! periodic axes). Image 0 is the box translated so that its lower corner
//! lies in `[lo, hi)` along every periodic axis
//! ([`PeriodicBox::wrap_box`]); along an axis where image 0 crosses the
//! upper face (`max ≥ hi`) it also has an image shifted by `−L`. Image `k`,
//! a bit mask of axes, is image 0 shifted by `−L` along the axes of `k`
//! ([`PeriodicBox::shift_box`]); it exists for every `k` that is a subset
//! of the box's *crossing mask*. Image 0 of the adapter's id `i` is stored
//! in the inner structure under `i` itself; each other image takes an entry
//! `x` of the adapter's *image pool* and is stored under `cap + x`, `cap`
//! the adapter's id capacity; the entry records the id and the image's
//! mask `k`. In practice only boxes at the upper faces have images besides
//! image 0: a cube of edge `s` in a period `L` has on average `(1 + s/L)^p`
//! images, so the pool is small and the inner structure's ids stay dense
//! (below `cap + pool`).
//!
//! # Periodic overlap
//!
//! Boxes `a` and `b` with images `a0`, `b0` overlap periodically iff along
//! every axis their closed intervals overlap for one of the choices
//! `(a0, b0)`, `(a0, b0 − L)` (only if `b` crosses that axis's upper face),
//! `(a0 − L, b0)` (only if `a` does), where `x − L` is the float image the
//! adapter stores; along a non-periodic axis the only choice is `(a0, b0)`.
//!
//! # Each pair exactly once: the integer rule
//!
//! The inner structure reports pairs of images, image `ka` of `i` and
//! image `kb` of `j` (ids below `cap` are images 0; above, the pool entry
//! gives the id and the mask); the adapter reports `(i, j)` only when
//! `i ≠ j` and `ka & kb == 0` (no axis along which both images are
//! shifted). Two images 0 (both inner ids below `cap`) pass with that one
//! comparison. This reports every
//! periodically overlapping pair exactly once, and no other pair:
//!
//! * Along each axis at most one of the three choices overlaps. Every
//!   stored box has, along each periodic axis, an extent `e < L/2` and,
//!   where it crosses, a *gap* `g = a0.min − (a0 − L).max ≥ L/2` (both
//!   checked on the floats stored, [`Error::PeriodTooShort`] otherwise).
//!   `(a0, b0)` and `(a0, b0 − L)` both overlapping would need
//!   `b0.min ≤ a0.max` and `a0.min ≤ (b0 − L).max`, so `g_b ≤ e_a`:
//!   impossible. `(a0, b0)` with `(a0 − L, b0)` is the same with the roles
//!   swapped. `(a0, b0 − L)` with `(a0 − L, b0)` would need
//!   `a0.min ≤ (b0 − L).max ≤ b0.min − L/2 ≤ (a0 − L).max − L/2 ≤ a0.min − L`:
//!   impossible.
//! * So the choice along each axis is unique, and the choices of all axes
//!   together name exactly one pair of images `(ka, kb)` with
//!   `ka & kb == 0`; both images exist, since a box is shifted along an
//!   axis only where it crosses. The inner structure reports that image
//!   pair once; every other image pair with `ka & kb == 0` fails some axis.
//! * The image pair with both shifted along an axis is the same overlap
//!   moved by `−L` (in real arithmetic) and is dropped by the integer test
//!   alone: no float comparison decides which of the two copies counts.
//! * Two images of one box never overlap (the gap is positive along a
//!   shifted axis), and `i ≠ j` is checked anyway.
//!
//! A query box is wrapped the same way (and refused the same way); stored
//! image `ka` found by query image `kq` counts only when `ka & kq == 0`,
//! so each stored id is reported once.
//!
//! # Limits
//!
//! * Boxes (and query boxes) shorter than half the period along every
//!   periodic axis; longer ones are refused with
//!   [`Error::PeriodTooShort`].
//! * The inner structure needs ids below `cap + pool` (its capacity is
//!   checked by [`PeriodicBroadPhase::new`]), so `cap + pool` must stay
//!   below [`crate::ids::MAX_IDS`].
//! * At most `pool` images besides images 0 at once: an insert or update
//!   that needs more pool entries than are free is refused with
//!   [`Error::CapacityExceeded`] and changes nothing.

use crate::error::{Corruption, Error, Validate, ensure};
use crate::exec::Executor;
use crate::geom::{BoundingBox, Point};
use crate::periodic::PeriodicBox;
use crate::storage::Storage;
use crate::traits::BroadPhase;

impl<P: Point> PeriodicBox<P> {
    /// Image 0 of a valid box `b` and its crossing mask.
    ///
    /// Along each periodic axis `k` the box is translated so that its lower
    /// corner is [`wrap_coord`](Self::wrap_coord)`(k, min)`: a box whose
    /// lower corner is already inside keeps both corners bit for bit;
    /// otherwise `max' = max + (min' − min)` (at least `min'`), a
    /// translation by a whole number of periods up to rounding, computed
    /// from the box alone (deterministic). Bit `k` of the crossing mask is
    /// set when `max' ≥ hi` along periodic axis `k`. Non-periodic axes are
    /// unchanged.
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::InvertedBox`] for a bad box;
    /// [`Error::PeriodTooShort`] for the first periodic axis along which
    /// image 0's extent `max' − min'` is not below `L/2`, or along which the
    /// box crosses and its gap `min' − (max' − L)` is below `L/2`;
    /// [`Error::OutOfRange`] if the shifted image `min' − L` overflows.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{Aabb2, PeriodicBox, Vec2};
    ///
    /// let domain = PeriodicBox::new(Vec2::ZERO, Vec2::new(10.0, 10.0), 0b01)?;
    /// let b = Aabb2::new(Vec2::new(19.5, 3.0), Vec2::new(20.5, 4.0))?;
    /// let (b0, crossing) = domain.wrap_box(&b)?;
    /// assert_eq!(b0, Aabb2::new(Vec2::new(9.5, 3.0), Vec2::new(10.5, 4.0))?);
    /// assert_eq!(crossing, 0b01);
    /// assert_eq!(domain.shift_box(&b0, 0b01).min, Vec2::new(-0.5, 3.0));
    /// # Ok::<(), spatium::Error>(())
    /// ```
    #[inline]
    pub fn wrap_box(&self, b: &P::Aabb) -> Result<(P::Aabb, u8), Error> {
        // Fast path, most boxes: valid, inside `[lo, hi)` and short enough
        // along every periodic axis (image 0 is the box itself); the
        // general path gives the same box.
        if self.is_own_image(b) {
            return Ok((*b, 0));
        }
        self.wrap_box_general(b)
    }

    /// `true` when `b` is valid and is its own image 0 with an empty
    /// crossing mask, as [`wrap_box`](Self::wrap_box)'s fast path decides
    /// it: along every periodic axis `lo ≤ min ≤ max < hi` and
    /// `max − min < L/2`, along every other axis `min ≤ max`, both finite.
    /// (A box for which this is `false` goes through the general path,
    /// which translates it, crosses a face or refuses it.)
    #[inline(always)]
    pub(crate) fn is_own_image(&self, b: &P::Aabb) -> bool {
        let (lo, hi) = (b.min(), b.max());
        (0..P::DIM).all(|k| {
            let (a, z) = (lo.coord(k), hi.coord(k));
            if self.is_periodic_axis(k) {
                // Finite and ordered by the comparisons themselves (`lo`
                // and `hi` of the domain are finite; NaN compares false).
                a >= self.lo.coord(k)
                    && a <= z
                    && z < self.hi.coord(k)
                    && z - a < self.half.coord(k)
            } else {
                a.is_finite() && z.is_finite() && a <= z
            }
        })
    }

    /// [`wrap_box`](Self::wrap_box) past its fast path (out of line); the
    /// same result as `wrap_box` for any box (the general path keeps a box
    /// that is its own image 0 as it is).
    #[inline(never)]
    fn wrap_box_general(&self, b: &P::Aabb) -> Result<(P::Aabb, u8), Error> {
        if let Some(crossing) = self.crossing_in_place(b) {
            return Ok((*b, crossing));
        }
        self.wrap_box_translated(b)
    }

    /// The general path past [`crossing_in_place`](Self::crossing_in_place):
    /// translates, crosses or refuses any box (and gives the same result
    /// as that check for a box it accepts).
    fn wrap_box_translated(&self, b: &P::Aabb) -> Result<(P::Aabb, u8), Error> {
        b.check()?;
        if self.axes() == 0 {
            return Ok((*b, 0));
        }
        let (lo, hi) = (b.min(), b.max());
        let mut min = [0.0f32; 3];
        let mut max = [0.0f32; 3];
        let mut crossing = 0u8;
        for k in 0..P::DIM {
            let (a, z) = (lo.coord(k), hi.coord(k));
            let (m, mx) = if self.is_periodic_axis(k) {
                let (m, mx) = self.wrap_interval(k, a, z);
                let l = self.lengths().coord(k);
                let half = l * 0.5;
                let axis = k as u8;
                let extent = mx - m;
                // Never NaN (`mx` is at least `m`, both not NaN); written to
                // refuse NaN anyway.
                if extent >= half || extent.is_nan() {
                    return Err(Error::PeriodTooShort { axis });
                }
                if mx >= self.hi().coord(k) {
                    let (sm, smx) = (m - l, mx - l);
                    if !sm.is_finite() {
                        return Err(Error::OutOfRange);
                    }
                    let gap = m - smx;
                    if gap < half || gap.is_nan() {
                        return Err(Error::PeriodTooShort { axis });
                    }
                    crossing |= 1 << k;
                }
                (m, mx)
            } else {
                (a, z)
            };
            if let (Some(x), Some(y)) = (min.get_mut(k), max.get_mut(k)) {
                (*x, *y) = (m, mx);
            }
        }
        let image = P::Aabb::try_new(P::from_fn(|k| min[k]), P::from_fn(|k| max[k]))?;
        Ok((image, crossing))
    }

    /// Image 0's interval along periodic axis `k` of a box's interval
    /// `[a, z]` there: the lower corner wrapped
    /// ([`wrap_coord`](Self::wrap_coord)), the upper one translated by the
    /// same float difference (kept bit for bit when the lower one is
    /// inside), never below the lower one. What
    /// [`wrap_box`](Self::wrap_box) computes, without its checks.
    #[inline(always)]
    pub(crate) fn wrap_interval(&self, k: usize, a: f32, z: f32) -> (f32, f32) {
        let m = self.wrap_coord(k, a);
        let mx = if m.to_bits() == a.to_bits() {
            z
        } else {
            (z + (m - a)).max(m)
        };
        (m, mx)
    }

    /// The crossing mask of a valid box `b` that is its own image 0 — along
    /// every periodic axis `lo ≤ min < hi` (no translation), the extent
    /// below `L/2` and, where `max ≥ hi`, the gap `min − (max − L)` at
    /// least `L/2` with `min − L` finite — computed with the very float
    /// operations of the general path; `None` for any other box (which the
    /// general path then translates or refuses). The boxes at the upper
    /// faces of a domain that the caller keeps wrapped take this path: the
    /// general one costs them several times as much (no `wrap_coord`, no
    /// copy through arrays, no second validation).
    #[inline(always)]
    fn crossing_in_place(&self, b: &P::Aabb) -> Option<u8> {
        let (lo, hi) = (b.min(), b.max());
        let mut crossing = 0u8;
        for k in 0..P::DIM {
            let (a, z) = (lo.coord(k), hi.coord(k));
            if self.is_periodic_axis(k) {
                let (dlo, dhi) = (self.lo.coord(k), self.hi.coord(k));
                let half = self.half.coord(k);
                // NaN fails every comparison, an infinite `z` the extent's.
                if !(a >= dlo && a < dhi && a <= z && z - a < half) {
                    return None;
                }
                if z >= dhi {
                    let l = self.len.coord(k);
                    let gap = a - (z - l);
                    if !((a - l).is_finite() && gap >= half) {
                        return None;
                    }
                    crossing |= 1 << k;
                }
            } else if !(a.is_finite() && z.is_finite() && a <= z) {
                return None;
            }
        }
        Some(crossing)
    }

    /// `b` shifted by `−L` along the periodic axes whose bit is set in `k`
    /// (both corners, `x − L` in `f32`); other bits are ignored. Applied to
    /// an image 0 from [`wrap_box`](Self::wrap_box) with `k` a subset of its
    /// crossing mask, the result is a valid box (`wrap_box` checked it).
    pub fn shift_box(&self, b: &P::Aabb, k: u8) -> P::Aabb {
        let k = k & self.axes();
        if k == 0 {
            return *b;
        }
        let l = self.lengths();
        let s = P::from_fn(|a| if k & (1 << a) != 0 { l.coord(a) } else { 0.0 });
        let (lo, hi) = (b.min() - s, b.max() - s);
        // Valid whenever `b` and `k` are as documented; never panics.
        P::Aabb::try_new(lo, hi).unwrap_or(*b)
    }
}

/// One id's slot in a [`PeriodicBroadPhase`]: the box as the caller gave
/// it and where its images besides image 0 are (none for most boxes).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PeriodicSlot<B> {
    aabb: B,
    /// [`ABSENT`], [`SOLO`] (image 0 only), or the pool index of the first
    /// entry of the id's chain of extra images.
    link: u32,
}

/// `link` of an unused slot.
const ABSENT: u32 = u32::MAX;
/// `link` of a stored id with image 0 only (crossing mask 0).
const SOLO: u32 = u32::MAX - 1;
/// The end of a chain (an id's extra images, or the free list).
const NIL: u32 = u32::MAX;

impl<B: BoundingBox> PeriodicSlot<B> {
    /// An unused slot.
    pub const EMPTY: Self = Self {
        aabb: B::ZERO,
        link: ABSENT,
    };

    fn stored(&self) -> Option<(B, u32)> {
        (self.link != ABSENT).then_some((self.aabb, self.link))
    }
}

impl<B: BoundingBox> Default for PeriodicSlot<B> {
    /// The unused value, [`PeriodicSlot::EMPTY`].
    fn default() -> Self {
        Self::EMPTY
    }
}

/// One entry of a [`PeriodicBroadPhase`]'s image pool: an image besides
/// image 0 of some id, stored in the inner structure under the id
/// `cap + x` (`x` the entry's index in the pool), or a free entry.
/// 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PeriodicImage {
    /// The caller's id whose image this is (0 while free).
    owner: u32,
    /// The next entry of the owner's chain, or of the free list; [`NIL`]
    /// at the end.
    next: u32,
    /// The image mask `k` (never 0 in use), 0 while free.
    mask: u8,
}

impl PeriodicImage {
    /// A free entry.
    pub const EMPTY: Self = Self {
        owner: 0,
        next: NIL,
        mask: 0,
    };
}

impl Default for PeriodicImage {
    /// The free value, [`PeriodicImage::EMPTY`].
    fn default() -> Self {
        Self::EMPTY
    }
}

/// The subsets of `mask` in increasing order, `0` first.
fn subsets(mask: u8) -> impl Iterator<Item = u8> {
    let mut next = Some(0u8);
    core::iter::from_fn(move || {
        let k = next?;
        next = (k != mask).then(|| k.wrapping_sub(mask) & mask);
        Some(k)
    })
}

/// Inner ids indexed by image mask (`2^DIM ≤ 8` masks).
type ByMask = [u32; 8];

/// `(id, mask)` of an inner id: image 0 below `cap`, otherwise the pool
/// entry `inner − cap` (`None` past the pool; never for a stored id).
#[inline(always)]
fn resolve(cap: u32, pool: &[PeriodicImage], inner: u32) -> Option<(u32, u8)> {
    if inner < cap {
        return Some((inner, 0));
    }
    pool.get((inner - cap) as usize).map(|e| (e.owner, e.mask))
}

/// The pair filter for a pair of inner ids not both images 0: `(i, j)`
/// when `ka & kb == 0` and `i ≠ j`.
#[inline(never)]
fn image_pair<F: FnMut(u32, u32)>(cap: u32, pool: &[PeriodicImage], a: u32, b: u32, f: &mut F) {
    if let (Some((i, ka)), Some((j, kb))) = (resolve(cap, pool, a), resolve(cap, pool, b))
        && ka & kb == 0
        && i != j
    {
        f(i, j);
    }
}

/// Any broad phase made periodic: boxes in a [`PeriodicBox`] domain overlap
/// when some periodic images of them overlap (the module documentation
/// gives the images, the definition and the proof that every pair is
/// reported exactly once).
///
/// Ids: image 0 of the caller's id `i` is stored in the inner structure
/// under `i` itself; every other image (only boxes crossing an upper face
/// have them) takes an entry `x` of the *image pool* and is stored under
/// `cap + x`. The pool is the caller's storage of [`PeriodicImage`]s; its
/// length `pool` bounds the images besides images 0 stored at once (a box
/// crossing `c` faces needs `2^c − 1` entries). The inner structure's ids
/// are thus dense, below `cap + pool`.
///
/// Memory: the inner structure, sized for `cap + pool` ids (its own
/// formula), plus the adapter's slots, `cap · size_of::<PeriodicSlot<B>>()`
/// = `cap · (size_of::<B>() + 4)` bytes (28 bytes per id in 3D, 20 in 2D),
/// which keep each caller's box as given, plus the pool,
/// `pool · size_of::<PeriodicImage>()` = `12 · pool` bytes. A cube of edge
/// `s` in a period `L` has on average `(1 + s/L)^p − 1` extra images (`p`
/// periodic axes), so `pool ≈ cap · ((1 + s/L)^p − 1)` with a margin is
/// enough for boxes spread uniformly; `pool = cap · (2^p − 1)` is enough for
/// any boxes. The inner structure's occupancy-dependent storage (pools,
/// arenas, records) needs room for the images, not just the boxes.
///
/// Costs: each operation is the inner structure's, once per image, plus
/// a walk of the id's chain of pool entries (at most `2^DIM − 1`) for a
/// box with extra images; pairs and queries add a comparison per reported
/// image pair (and a pool lookup for an image besides image 0).
///
/// # Example
///
/// ```
/// use spatium::{Aabb2, BroadPhase, BruteForceBroadPhase, BruteSlot, Vec2};
/// use spatium::periodic::{PeriodicBox, PeriodicBroadPhase, PeriodicImage, PeriodicSlot};
///
/// let domain = PeriodicBox::all(Vec2::ZERO, Vec2::new(10.0, 10.0))?;
/// // 4 ids and a pool of 6 extra images: the inner structure needs 4 + 6 ids.
/// let inner = BruteForceBroadPhase::new([BruteSlot::<Aabb2>::EMPTY; 10]);
/// let mut bp = PeriodicBroadPhase::new(
///     inner,
///     domain,
///     [PeriodicSlot::EMPTY; 4],
///     [PeriodicImage::EMPTY; 6],
/// )?;
/// bp.insert(0, Aabb2::new(Vec2::new(9.5, 9.5), Vec2::new(10.5, 10.5))?)?; // 3 extra images
/// bp.insert(1, Aabb2::new(Vec2::new(0.2, 0.2), Vec2::new(1.0, 1.0))?)?; // across the corner
/// assert_eq!(bp.free_images(), 3);
/// let mut pairs = 0;
/// bp.for_each_overlap(|a, b| { assert_eq!((a.min(b), a.max(b)), (0, 1)); pairs += 1 })?;
/// assert_eq!(pairs, 1);
/// # Ok::<(), spatium::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct PeriodicBroadPhase<B: BoundingBox, I, S, P> {
    inner: I,
    domain: PeriodicBox<B::Point>,
    slots: S,
    pool: P,
    /// The id capacity, `slots.len()`.
    cap: u32,
    /// The first free pool entry, or [`NIL`].
    free: u32,
    /// Free pool entries.
    free_len: u32,
    len: usize,
}

impl<B, I, S, P> PeriodicBroadPhase<B, I, S, P>
where
    B: BoundingBox,
    I: BroadPhase<B>,
    S: Storage<PeriodicSlot<B>>,
    P: Storage<PeriodicImage>,
{
    /// The broad phase `inner` made periodic in `domain`, with ids below
    /// `slots.len()` (`cap`) and at most `pool.len()` images besides
    /// images 0 at once. The slots and the pool are reset
    /// (`O(cap + pool)`).
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if `cap + pool.len()` exceeds the inner
    /// structure's capacity (or [`crate::ids::MAX_IDS`]), or if `inner`
    /// already holds boxes.
    pub fn new(
        inner: I,
        domain: PeriodicBox<B::Point>,
        mut slots: S,
        pool: P,
    ) -> Result<Self, Error> {
        let cap = slots.as_ref().len();
        let images = pool.as_ref().len();
        let ids = cap
            .checked_add(images)
            .filter(|&n| n <= crate::ids::MAX_IDS);
        if ids.is_none_or(|n| n > inner.capacity()) {
            return Err(Error::InvalidStorage {
                what: "inner capacity below slots + image pool",
            });
        }
        if inner.box_count() != 0 {
            return Err(Error::InvalidStorage {
                what: "inner broad phase not empty",
            });
        }
        slots.as_mut().fill(PeriodicSlot::EMPTY);
        let mut bp = Self {
            inner,
            domain,
            slots,
            pool,
            cap: cap as u32,
            free: NIL,
            free_len: 0,
            len: 0,
        };
        bp.reset_pool();
        Ok(bp)
    }

    /// Every pool entry free, the free list in index order.
    fn reset_pool(&mut self) {
        let pool = self.pool.as_mut();
        let n = pool.len() as u32;
        for (x, e) in pool.iter_mut().enumerate() {
            let next = x as u32 + 1;
            *e = PeriodicImage {
                next: if next < n { next } else { NIL },
                ..PeriodicImage::EMPTY
            };
        }
        self.free = if n > 0 { 0 } else { NIL };
        self.free_len = n;
    }

    /// The domain.
    pub fn domain(&self) -> &PeriodicBox<B::Point> {
        &self.domain
    }

    /// The inner structure (holding images 0 under the caller's ids, the
    /// other images under `cap + x`, `x` their pool entry).
    pub fn inner(&self) -> &I {
        &self.inner
    }

    /// Gives the inner structure, the slots and the pool back.
    pub fn into_parts(self) -> (I, S, P) {
        (self.inner, self.slots, self.pool)
    }

    /// Number of images stored in the inner structure (`box_count()` plus
    /// one per extra image).
    pub fn image_count(&self) -> usize {
        self.inner.box_count()
    }

    /// Free entries of the image pool (`pool.len()` minus the images
    /// besides images 0 stored).
    pub fn free_images(&self) -> usize {
        self.free_len as usize
    }

    /// `true` while every pool entry is free: the inner structure then
    /// holds images 0 only, under the callers' ids (below `cap`), and each
    /// of its pairs is a pair of distinct ids that passes the filter.
    #[inline(always)]
    fn no_extra_images(&self) -> bool {
        self.free_len as usize == self.pool.as_ref().len()
    }

    /// The link of a stored `id` ([`SOLO`] or its chain's first entry).
    #[inline(always)]
    fn link_of(&self, id: u32) -> Result<u32, Error> {
        if id >= self.cap {
            return Err(Error::IdOutOfRange { id });
        }
        match self.slots.as_ref().get(id as usize) {
            Some(s) if s.link != ABSENT => Ok(s.link),
            _ => Err(Error::UnknownId { id }),
        }
    }

    fn slot(&self, id: u32) -> Result<(B, u32), Error> {
        if id >= self.cap {
            return Err(Error::IdOutOfRange { id });
        }
        self.slots
            .as_ref()
            .get(id as usize)
            .and_then(PeriodicSlot::stored)
            .ok_or(Error::UnknownId { id })
    }

    fn set_slot(&mut self, id: u32, slot: PeriodicSlot<B>) {
        if let Some(s) = self.slots.as_mut().get_mut(id as usize) {
            *s = slot;
        }
    }

    /// The inner ids of the images of `id` stored from `link`, by mask
    /// (`ids[0] = id`), and the crossing mask (the union of the chain's
    /// masks). At most `2^DIM − 1` entries are walked.
    fn chain(&self, id: u32, link: u32) -> (ByMask, u8) {
        let mut ids = [NIL; 8];
        ids[0] = id;
        let mut crossing = 0u8;
        let mut x = if link == SOLO { NIL } else { link };
        let pool = self.pool.as_ref();
        for _ in 1..1u32 << B::Point::DIM {
            let Some(e) = pool.get(x as usize) else {
                break;
            };
            if let Some(slot) = ids.get_mut(usize::from(e.mask)) {
                *slot = self.cap + x;
            }
            crossing |= e.mask;
            x = e.next;
        }
        (ids, crossing)
    }

    /// The first `n` entries of the free list (`n ≤ free_len`, `n < 8`).
    fn peek_free(&self, n: usize) -> [u32; 8] {
        let mut out = [NIL; 8];
        let mut x = self.free;
        let pool = self.pool.as_ref();
        for o in out.iter_mut().take(n) {
            let Some(e) = pool.get(x as usize) else {
                break;
            };
            *o = x;
            x = e.next;
        }
        out
    }

    /// Takes the first `n` entries off the free list (those
    /// [`peek_free`](Self::peek_free) gave).
    fn pop_free(&mut self, n: usize) {
        for _ in 0..n {
            match self.pool.as_ref().get(self.free as usize) {
                Some(e) => {
                    self.free = e.next;
                    self.free_len -= 1;
                }
                None => break,
            }
        }
    }

    /// Puts the entry of inner id `inner` back on the free list.
    fn release(&mut self, inner: u32) {
        let x = inner.wrapping_sub(self.cap);
        let free = self.free;
        if let Some(e) = self.pool.as_mut().get_mut(x as usize) {
            *e = PeriodicImage {
                next: free,
                ..PeriodicImage::EMPTY
            };
            self.free = x;
            self.free_len += 1;
        }
    }

    /// Writes the chain of `id`'s extra images (`ids` by mask, the masks
    /// `k ⊆ crossing`, `k ≠ 0`, all taken off the free list) and returns
    /// its link.
    fn link_chain(&mut self, id: u32, ids: &ByMask, crossing: u8) -> u32 {
        let mut head = NIL;
        let cap = self.cap;
        let pool = self.pool.as_mut();
        for k in subsets(crossing).skip(1) {
            let Some(&inner) = ids.get(usize::from(k)) else {
                continue;
            };
            let x = inner.wrapping_sub(cap);
            if let Some(e) = pool.get_mut(x as usize) {
                *e = PeriodicImage {
                    owner: id,
                    next: head,
                    mask: k,
                };
                head = x;
            }
        }
        if head == NIL { SOLO } else { head }
    }

    /// [`Error::CapacityExceeded`] for a full pool.
    fn pool_full(&self) -> Error {
        Error::CapacityExceeded {
            capacity: self.pool.as_ref().len(),
        }
    }

    /// Inserts the images `k ⊆ crossing` of `id` (`crossing ≠ 0`) under
    /// fresh pool entries and returns the link; on an error (a full pool,
    /// checked first, or the inner structure's) removes those inserted and
    /// changes nothing.
    fn insert_images(&mut self, id: u32, b0: &B, crossing: u8) -> Result<u32, Error> {
        let n = (1usize << crossing.count_ones()) - 1;
        if n > self.free_len as usize {
            return Err(self.pool_full());
        }
        let fresh = self.peek_free(n);
        let mut ids = [NIL; 8];
        ids[0] = id;
        for (k, &x) in subsets(crossing).skip(1).zip(fresh.iter()) {
            if let Some(slot) = ids.get_mut(usize::from(k)) {
                *slot = self.cap + x;
            }
        }
        for k in subsets(crossing) {
            let image = self.domain.shift_box(b0, k);
            let inner_id = ids.get(usize::from(k)).copied().unwrap_or(NIL);
            if let Err(e) = self.inner.insert(inner_id, image) {
                for j in subsets(crossing).take_while(|&j| j != k) {
                    if let Some(&jid) = ids.get(usize::from(j)) {
                        let _ = self.inner.remove(jid);
                    }
                }
                return Err(e);
            }
        }
        self.pop_free(n);
        Ok(self.link_chain(id, &ids, crossing))
    }

    /// [`BroadPhase::update`].
    fn update_box(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        let (old, link) = self.slot(id)?;
        if link == SOLO && self.domain.is_own_image(&aabb) {
            // Most boxes: image 0 only, before and after, the box itself.
            self.inner.update(id, aabb)?;
            self.set_slot(id, PeriodicSlot { aabb, link: SOLO });
            return Ok(());
        }
        let (b0, nc) = self.domain.wrap_box_general(&aabb)?;
        let link = self.move_images(id, &old, link, &b0, nc)?;
        self.set_slot(id, PeriodicSlot { aabb, link });
        Ok(())
    }

    /// Applies `run`, updates of boxes that are their own image 0 before
    /// and after (inner ids = ids, images = the caller's boxes), through the
    /// inner structure's `update_many` in one call; if it refuses, applies
    /// them one by one (an element the inner structure already applied is
    /// rewritten with the same box), stopping at the first failure.
    fn update_run(&mut self, run: &[(u32, B)]) -> Result<(), Error> {
        if run.is_empty() {
            return Ok(());
        }
        if self.inner.update_many(run).is_ok() {
            for &(id, aabb) in run {
                self.set_slot(id, PeriodicSlot { aabb, link: SOLO });
            }
            return Ok(());
        }
        for &(id, aabb) in run {
            self.update_box(id, aabb)?;
        }
        Ok(())
    }

    /// Moves `id` from the images of `old` (stored from `link`) to those of
    /// `b0` (crossing `nc`) and returns the new link; on an error (a full
    /// pool, checked first, or the inner structure's) puts back what it
    /// changed.
    ///
    /// Image `k ⊆ nc` keeps its inner id when the old images had it
    /// (`k ⊆ oc`, updated); the other new images take first the entries
    /// of old images that go away (updated to their new box, no inner
    /// insert or remove), then free entries (inserted); old entries left
    /// over are removed and freed.
    fn move_images(&mut self, id: u32, old: &B, link: u32, b0: &B, nc: u8) -> Result<u32, Error> {
        if link == SOLO && nc == 0 {
            // Image 0 only, before and after.
            self.inner.update(id, *b0)?;
            return Ok(SOLO);
        }
        let (old_ids, oc) = self.chain(id, link);
        // Entries of old images that go away, with their old masks.
        let mut spare = [(NIL, 0u8); 8];
        let mut n_spare = 0usize;
        for j in subsets(oc).filter(|&j| j & !nc != 0) {
            if let (Some(s), Some(&jid)) = (spare.get_mut(n_spare), old_ids.get(usize::from(j))) {
                *s = (jid, j);
                n_spare += 1;
            }
        }
        let n_new = subsets(nc).filter(|&k| k & !oc != 0).count();
        let need = n_new.saturating_sub(n_spare);
        if need > self.free_len as usize {
            return Err(self.pool_full());
        }
        let fresh = self.peek_free(need);
        // New inner ids by mask, and what each replaces: `Some(j)` the old
        // image `j` (updated), `None` nothing (inserted).
        let mut ids = [NIL; 8];
        let mut was = [None::<u8>; 8];
        let (mut s, mut f) = (0usize, 0usize);
        for k in subsets(nc) {
            let (inner_id, from) = if k & !oc == 0 {
                (old_ids.get(usize::from(k)).copied().unwrap_or(NIL), Some(k))
            } else if let Some(&(jid, j)) = spare.get(s).filter(|_| s < n_spare) {
                s += 1;
                (jid, Some(j))
            } else {
                let x = fresh.get(f).copied().unwrap_or(NIL);
                f += 1;
                (self.cap.wrapping_add(x), None)
            };
            if let (Some(a), Some(w)) = (ids.get_mut(usize::from(k)), was.get_mut(usize::from(k))) {
                (*a, *w) = (inner_id, from);
            }
        }
        for k in subsets(nc) {
            let image = self.domain.shift_box(b0, k);
            let ki = usize::from(k);
            let inner_id = ids.get(ki).copied().unwrap_or(NIL);
            let r = match was.get(ki).copied().flatten() {
                Some(_) => self.inner.update(inner_id, image),
                None => self.inner.insert(inner_id, image),
            };
            if let Err(e) = r {
                // The old image 0 is recomputed from the caller's box (the
                // same function of the same box: the same floats).
                let o0 = self.domain.wrap_box(old).map_or(*old, |(o0, _)| o0);
                for j in subsets(nc).take_while(|&j| j != k) {
                    let ji = usize::from(j);
                    let jid = ids.get(ji).copied().unwrap_or(NIL);
                    match was.get(ji).copied().flatten() {
                        Some(m) => {
                            let _ = self.inner.update(jid, self.domain.shift_box(&o0, m));
                        }
                        None => {
                            let _ = self.inner.remove(jid);
                        }
                    }
                }
                return Err(e);
            }
        }
        // The fresh entries off the free list first (`release` pushes onto
        // it), then the old entries not taken removed and freed.
        self.pop_free(need);
        for &(jid, _) in spare.iter().take(n_spare).skip(s) {
            let _ = self.inner.remove(jid);
            self.release(jid);
        }
        Ok(self.link_chain(id, &ids, nc))
    }
}

impl<B, I, S, P> BroadPhase<B> for PeriodicBroadPhase<B, I, S, P>
where
    B: BoundingBox,
    I: BroadPhase<B> + Send + Sync,
    S: Storage<PeriodicSlot<B>>,
    P: Storage<PeriodicImage>,
{
    fn capacity(&self) -> usize {
        self.cap as usize
    }

    fn box_count(&self) -> usize {
        self.len
    }

    /// Stores `aabb` under `id` as its images (the module documentation).
    ///
    /// # Errors
    /// [`Error::IdOutOfRange`], the box's [`Error::NonFinite`] /
    /// [`Error::InvertedBox`], [`Error::DuplicateId`], then
    /// [`PeriodicBox::wrap_box`]'s [`Error::PeriodTooShort`] /
    /// [`Error::OutOfRange`], then [`Error::CapacityExceeded`] (with the
    /// pool's length) if the image pool lacks entries for the box's extra
    /// images, then the inner structure's errors; nothing changes on error
    /// (images already inserted are removed).
    fn insert(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        match self.link_of(id) {
            Err(Error::UnknownId { .. }) => {}
            Err(e) => return Err(e),
            Ok(_) => {
                aabb.check()?;
                return Err(Error::DuplicateId { id });
            }
        }
        if self.domain.is_own_image(&aabb) {
            // Most boxes: image 0 is the box itself, no other image (the box
            // is used in place, not copied out of `wrap_box`'s result).
            self.inner.insert(id, aabb)?;
            self.set_slot(id, PeriodicSlot { aabb, link: SOLO });
            self.len += 1;
            return Ok(());
        }
        let (b0, crossing) = self.domain.wrap_box_general(&aabb)?;
        let link = if crossing == 0 {
            self.inner.insert(id, b0)?;
            SOLO
        } else {
            self.insert_images(id, &b0, crossing)?
        };
        self.set_slot(id, PeriodicSlot { aabb, link });
        self.len += 1;
        Ok(())
    }

    /// Replaces the box of `id`: its images are updated, inserted or
    /// removed as its crossing mask changes (an image that goes away hands
    /// its pool entry to one that comes).
    ///
    /// # Errors
    /// [`Error::IdOutOfRange`], [`Error::UnknownId`], the box's errors,
    /// [`Error::PeriodTooShort`] / [`Error::OutOfRange`],
    /// [`Error::CapacityExceeded`] if the image pool lacks entries for the
    /// new extra images, the inner structure's errors; nothing changes on
    /// error (changed images are put back).
    fn update(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        self.update_box(id, aabb)
    }

    /// As the trait documents: every id and box is checked first (including
    /// [`Error::PeriodTooShort`]), then the updates are applied in order;
    /// an error of the pool or the inner structure stops at that element
    /// (it is undone, those before it stay applied).
    ///
    /// Runs of boxes that are their own image 0 before and after (most
    /// boxes: inside the domain, crossing no face) go to the inner
    /// structure's own `update_many` as the caller's slice itself, in one
    /// call per run (no copy: their inner ids are their ids); if a run is
    /// refused, its elements are applied one by one as `update`, which
    /// stops at the failing one. Other boxes are updated one by one.
    fn update_many(&mut self, updates: &[(u32, B)]) -> Result<(), Error> {
        for &(id, aabb) in updates {
            self.link_of(id)?;
            if !self.domain.is_own_image(&aabb) {
                self.domain.wrap_box_general(&aabb)?;
            }
        }
        let mut from = 0usize;
        for (x, &(id, aabb)) in updates.iter().enumerate() {
            if self.link_of(id) == Ok(SOLO) && self.domain.is_own_image(&aabb) {
                continue;
            }
            self.update_run(updates.get(from..x).unwrap_or_default())?;
            self.update_box(id, aabb)?;
            from = x + 1;
        }
        self.update_run(updates.get(from..).unwrap_or_default())
    }

    fn remove(&mut self, id: u32) -> Result<B, Error> {
        let (aabb, link) = self.slot(id)?;
        let _ = self.inner.remove(id);
        if link != SOLO {
            let (ids, crossing) = self.chain(id, link);
            for k in subsets(crossing).skip(1) {
                if let Some(&kid) = ids.get(usize::from(k)) {
                    let _ = self.inner.remove(kid);
                    self.release(kid);
                }
            }
        }
        self.set_slot(id, PeriodicSlot::EMPTY);
        self.len -= 1;
        Ok(aabb)
    }

    /// The box as the caller gave it (not its image).
    fn get(&self, id: u32) -> Option<B> {
        self.slot(id).ok().map(|(b, _)| b)
    }

    fn clear(&mut self) {
        self.inner.clear();
        self.slots.as_mut().fill(PeriodicSlot::EMPTY);
        self.reset_pool();
        self.len = 0;
    }

    /// The inner structure's pairs of images, reported as the pair of their
    /// ids `(i, j)` when `i ≠ j` and their masks `ka & kb == 0`. While no
    /// box has an image besides image 0 (no box across an upper face), the
    /// inner structure's pairs are the pairs, and `f` is handed to it as it
    /// is (no filter in its loop).
    ///
    /// # Errors
    /// The inner structure's.
    fn for_each_overlap<F: FnMut(u32, u32)>(&mut self, mut f: F) -> Result<(), Error> {
        if self.no_extra_images() {
            return self.inner.for_each_overlap(f);
        }
        let cap = self.cap;
        let pool = self.pool.as_ref();
        self.inner.for_each_overlap(|a, b| {
            // Two images 0 (most pairs): distinct ids, reported as they are.
            // The rest out of line, so that the inner structure's loop
            // carries only this test.
            if a.max(b) < cap {
                f(a, b);
            } else {
                image_pair(cap, pool, a, b, &mut f);
            }
        })
    }

    /// Queries the inner structure with each image `kq` of the wrapped
    /// query box, reporting stored image `ka` when `ka & kq == 0`: each
    /// overlapping id once.
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::InvertedBox`], then
    /// [`Error::PeriodTooShort`] / [`Error::OutOfRange`] for the query box.
    fn query<F: FnMut(u32)>(&mut self, aabb: &B, mut f: F) -> Result<(), Error> {
        let (q0, crossing) = self.domain.wrap_box(aabb)?;
        let cap = self.cap;
        let pool = self.pool.as_ref();
        for kq in subsets(crossing) {
            let q = self.domain.shift_box(&q0, kq);
            self.inner.query(&q, |a| {
                // Image 0 (most ids) counts for every query image.
                if a < cap {
                    f(a);
                } else if let Some((i, ka)) = resolve(cap, pool, a)
                    && ka & kq == 0
                {
                    f(i);
                }
            })?;
        }
        Ok(())
    }

    fn overlap_tasks(&self) -> usize {
        self.inner.overlap_tasks()
    }

    /// The inner structure's parallel detection with the mapping of
    /// [`for_each_overlap`](Self::for_each_overlap): the same sinks, the
    /// same tasks.
    fn par_for_each_overlap<E, K, F>(
        &mut self,
        exec: &E,
        sinks: &mut [K],
        f: F,
    ) -> Result<(), Error>
    where
        E: Executor,
        K: Send,
        F: Fn(&mut K, u32, u32) + Sync,
        Self: Send + Sync,
    {
        if self.no_extra_images() {
            return self.inner.par_for_each_overlap(exec, sinks, f);
        }
        let cap = self.cap;
        let pool = self.pool.as_ref();
        self.inner.par_for_each_overlap(exec, sinks, |s, a, b| {
            if a.max(b) < cap {
                f(s, a, b);
            } else {
                image_pair(cap, pool, a, b, &mut |i, j| f(s, i, j));
            }
        })
    }
}

impl<B, I, S, P> Validate for PeriodicBroadPhase<B, I, S, P>
where
    B: BoundingBox,
    I: BroadPhase<B> + Validate,
    S: Storage<PeriodicSlot<B>>,
    P: Storage<PeriodicImage>,
{
    /// The inner structure's invariants; for every id: image 0 stored
    /// under the id and each image `k ⊆ crossing`, `k ≠ 0`, under
    /// `cap + x` for exactly one pool entry `x` of the id's chain (owner
    /// the id, mask `k`), all exactly as [`PeriodicBox::wrap_box`] and
    /// [`PeriodicBox::shift_box`] give them; the free list `free_len`
    /// entries long, ending the list, its entries free and absent from the
    /// inner structure; every pool entry in exactly one chain or the free
    /// list (by count); the counts agreeing. `O(cap + pool)`.
    fn validate(&self) -> Result<(), Corruption> {
        const W: &str = "PeriodicBroadPhase";
        self.inner.validate()?;
        let slots = self.slots.as_ref();
        let pool = self.pool.as_ref();
        ensure(slots.len() == self.cap as usize, W, "cap == slots")?;
        let mut present = 0usize;
        let mut images = 0usize;
        let mut extra = 0usize;
        for (id, s) in slots.iter().enumerate() {
            let id = id as u32;
            let Some((b, link)) = s.stored() else {
                ensure(self.inner.get(id).is_none(), W, "no image of an absent id")?;
                continue;
            };
            present += 1;
            let wrapped = self.domain.wrap_box(&b);
            let (b0, crossing) = wrapped.unwrap_or((b, 0));
            ensure(wrapped.is_ok(), W, "a stored box wraps")?;
            ensure(
                self.inner.get(id) == Some(b0),
                W,
                "image 0 stored under the id as wrap_box",
            )?;
            images += 1;
            // The chain: owner the id, distinct masks within the crossing
            // mask, all of them, ending in NIL.
            let mut seen = 0u16;
            let mut x = if link == SOLO { NIL } else { link };
            let mut n = 0usize;
            while x != NIL {
                ensure(n < (1 << B::Point::DIM) - 1, W, "chain not too long")?;
                let e = pool.get(x as usize);
                ensure(e.is_some(), W, "chain entry in the pool")?;
                let e = e.copied().unwrap_or(PeriodicImage::EMPTY);
                ensure(e.owner == id, W, "chain entry owned by its id")?;
                ensure(
                    e.mask != 0 && e.mask & !crossing == 0,
                    W,
                    "chain mask a nonzero subset of the crossing mask",
                )?;
                ensure(seen & (1 << e.mask) == 0, W, "chain masks distinct")?;
                seen |= 1 << e.mask;
                ensure(
                    self.inner.get(self.cap + x) == Some(self.domain.shift_box(&b0, e.mask)),
                    W,
                    "image k stored as shift_box",
                )?;
                n += 1;
                x = e.next;
            }
            ensure(
                n == (1 << crossing.count_ones()) - 1,
                W,
                "every image of the crossing mask in the chain",
            )?;
            images += n;
            extra += n;
        }
        // The free list.
        let mut x = self.free;
        let mut n = 0usize;
        while x != NIL {
            ensure(n < self.free_len as usize, W, "free list not too long")?;
            let e = pool.get(x as usize);
            ensure(e.is_some_and(|e| e.mask == 0), W, "free entry free")?;
            ensure(
                self.inner.get(self.cap + x).is_none(),
                W,
                "no image under a free entry",
            )?;
            n += 1;
            x = e.map_or(NIL, |e| e.next);
        }
        ensure(n == self.free_len as usize, W, "free list free_len long")?;
        ensure(extra + n == pool.len(), W, "pool entries in use or free")?;
        ensure(present == self.len, W, "present ids == len")?;
        ensure(images == self.inner.box_count(), W, "inner boxes == images")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brute::{BruteForceBroadPhase, BruteSlot};
    use crate::geom::{Aabb2, Aabb3, Vec2, Vec3};

    fn b3(lo: [f32; 3], hi: [f32; 3]) -> Aabb3 {
        Aabb3::new(
            Vec3::new(lo[0], lo[1], lo[2]),
            Vec3::new(hi[0], hi[1], hi[2]),
        )
        .unwrap()
    }

    /// The adapter of [`torus10`].
    type Torus<const T: usize, const C: usize, const I: usize> = PeriodicBroadPhase<
        Aabb2,
        BruteForceBroadPhase<Aabb2, [BruteSlot<Aabb2>; T]>,
        [PeriodicSlot<Aabb2>; C],
        [PeriodicImage; I],
    >;

    /// A `10 × 10` torus over brute force (`T` inner ids), `C` ids and an
    /// image pool of `I`.
    fn torus10<const T: usize, const C: usize, const I: usize>() -> Torus<T, C, I> {
        let d = PeriodicBox::all(Vec2::ZERO, Vec2::new(10.0, 10.0)).unwrap();
        let inner = BruteForceBroadPhase::new([BruteSlot::<Aabb2>::EMPTY; T]);
        PeriodicBroadPhase::new(
            inner,
            d,
            [PeriodicSlot::EMPTY; C],
            [PeriodicImage::EMPTY; I],
        )
        .unwrap()
    }

    /// The unit square with lower corner `(x, y)`.
    fn unit2(x: f32, y: f32) -> Aabb2 {
        Aabb2::new(Vec2::new(x, y), Vec2::new(x + 1.0, y + 1.0)).unwrap()
    }

    #[test]
    fn subsets_in_increasing_order() {
        let v: [u8; 4] = {
            let mut a = [0; 4];
            for (x, k) in a.iter_mut().zip(subsets(0b101)) {
                *x = k;
            }
            a
        };
        assert_eq!(v, [0, 1, 4, 5]);
        assert_eq!(subsets(0).count(), 1);
        assert_eq!(subsets(0b111).count(), 8);
    }

    #[test]
    fn wrap_box_translates_and_refuses() {
        let d = PeriodicBox::new(Vec3::ZERO, Vec3::new(10.0, 10.0, 10.0), 0b101).unwrap();
        let (b0, c) = d
            .wrap_box(&b3([-0.5, -3.0, 9.5], [0.5, -2.0, 10.5]))
            .unwrap();
        assert_eq!(b0, b3([9.5, -3.0, 9.5], [10.5, -2.0, 10.5]));
        assert_eq!(c, 0b101);
        assert_eq!(
            d.wrap_box(&b3([0.0, 0.0, 0.0], [1.0, 1.0, 5.0])),
            Err(Error::PeriodTooShort { axis: 2 })
        );
        // Long along the non-periodic axis: fine.
        assert!(d.wrap_box(&b3([0.0, 0.0, 0.0], [1.0, 100.0, 1.0])).is_ok());
        let nan = Aabb3 {
            min: Vec3::ZERO,
            max: Vec3::new(f32::NAN, 1.0, 1.0),
        };
        assert_eq!(d.wrap_box(&nan), Err(Error::NonFinite));
    }

    /// The in-place path (boxes whose lower corner is inside, crossing a
    /// face or not) gives bit for bit what the translating path gives, on
    /// boxes at and around the faces, the half-period limits, signed zeros
    /// and huge coordinates; and it takes the boxes that cross a face.
    #[test]
    fn in_place_crossing_agrees_with_the_translating_path() {
        let domains = [
            PeriodicBox::new(Vec3::ZERO, Vec3::new(10.0, 10.0, 10.0), 0b101).unwrap(),
            PeriodicBox::all(Vec3::new(-3.3, 0.1, -1e30), Vec3::new(7.9, 0.7, 1e30)).unwrap(),
            PeriodicBox::NONE,
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut hits = 0u32;
        for d in &domains {
            let specials = |k: usize, r: u64| -> f32 {
                let (lo, hi, l) = (d.lo().coord(k), d.hi().coord(k), d.lengths().coord(k));
                let pick = [
                    lo,
                    hi,
                    -0.0,
                    0.0,
                    lo + l * 0.5,
                    hi - l * 0.5,
                    f32::from_bits(hi.to_bits().wrapping_sub(1)),
                    f32::from_bits(hi.to_bits().wrapping_add(1)),
                    hi + l * 0.25,
                    1e38,
                    -1e38,
                    f32::INFINITY,
                    f32::NAN,
                ];
                let x = pick[(r as usize >> 8) % pick.len()];
                let t = (r >> 40) as f32 / (1u64 << 24) as f32;
                match r % 4 {
                    0 => x,
                    1 => lo + (hi - lo) * t,
                    2 => x + (t - 0.5) * l.max(1.0),
                    _ => lo + (hi - lo) * t * 1.5 - 0.25 * (hi - lo),
                }
            };
            for _ in 0..200_000 {
                let mut mn = [0.0f32; 3];
                let mut mx = [0.0f32; 3];
                for k in 0..3 {
                    mn[k] = specials(k, next());
                    mx[k] = if next() % 3 == 0 {
                        specials(k, next())
                    } else {
                        mn[k] + (next() % 1000) as f32 * d.lengths().coord(k).max(1.0) / 1900.0
                    };
                }
                let b = Aabb3 {
                    min: Vec3::new(mn[0], mn[1], mn[2]),
                    max: Vec3::new(mx[0], mx[1], mx[2]),
                };
                // Compared as bits (`==` on floats would take -0 for +0).
                let bits = |r: Result<(Aabb3, u8), Error>| {
                    r.map(|(x, c)| {
                        let (l, h) = (x.min, x.max);
                        ([l.x, l.y, l.z, h.x, h.y, h.z].map(f32::to_bits), c)
                    })
                };
                if let Some(c) = d.crossing_in_place(&b) {
                    assert_eq!(
                        bits(d.wrap_box_translated(&b)),
                        bits(Ok((b, c))),
                        "{b:?} in {d:?}"
                    );
                    hits += u32::from(c != 0);
                }
                assert_eq!(
                    bits(d.wrap_box(&b)),
                    bits(d.wrap_box_translated(&b)),
                    "{b:?} in {d:?}"
                );
            }
        }
        assert!(
            hits > 1000,
            "only {hits} crossing boxes took the in-place path"
        );
    }

    #[test]
    fn pairs_across_faces_once_and_failures_change_nothing() {
        let d = PeriodicBox::all(Vec3::ZERO, Vec3::new(10.0, 10.0, 10.0)).unwrap();
        let inner = BruteForceBroadPhase::new([BruteSlot::<Aabb3>::EMPTY; 32]);
        let mut bp = PeriodicBroadPhase::new(
            inner,
            d,
            [PeriodicSlot::EMPTY; 4],
            [PeriodicImage::EMPTY; 28],
        )
        .unwrap();
        // Across the corner: all three axes wrap.
        bp.insert(0, b3([9.5, 9.5, 9.5], [10.5, 10.5, 10.5]))
            .unwrap();
        bp.insert(1, b3([0.0, 0.0, 0.0], [0.6, 0.6, 0.6])).unwrap();
        bp.insert(2, b3([10.2, 10.2, 10.2], [10.4, 10.4, 10.4]))
            .unwrap();
        assert_eq!(bp.image_count(), 8 + 1 + 1);
        bp.validate().unwrap();
        let mut n = [0u32; 3];
        bp.for_each_overlap(|a, b| {
            let (a, b) = (a.min(b), a.max(b));
            n[match (a, b) {
                (0, 1) => 0,
                (0, 2) => 1,
                _ => 2,
            }] += 1;
        })
        .unwrap();
        assert_eq!(n, [1, 1, 1]);
        let mut q = 0;
        bp.query(&b3([-0.1, -0.1, -0.1], [0.1, 0.1, 0.1]), |id| {
            assert!(id <= 1);
            q += 1
        })
        .unwrap();
        assert_eq!(q, 2);
        assert_eq!(bp.get(2), Some(b3([10.2, 10.2, 10.2], [10.4, 10.4, 10.4])));
        assert_eq!(
            bp.insert(3, b3([0.0, 0.0, 0.0], [6.0, 1.0, 1.0])),
            Err(Error::PeriodTooShort { axis: 0 })
        );
        assert_eq!(
            bp.insert(1, b3([0.0; 3], [1.0; 3])),
            Err(Error::DuplicateId { id: 1 })
        );
        assert_eq!(
            bp.insert(4, b3([0.0; 3], [1.0; 3])),
            Err(Error::IdOutOfRange { id: 4 })
        );
        assert_eq!(
            bp.update(0, b3([0.0; 3], [1.0, 1.0, 7.0])),
            Err(Error::PeriodTooShort { axis: 2 })
        );
        bp.update(0, b3([3.0; 3], [4.0; 3])).unwrap();
        assert_eq!(bp.image_count(), 3);
        bp.validate().unwrap();
        assert_eq!(bp.remove(2), Ok(b3([10.2; 3], [10.4; 3])));
        assert_eq!(bp.box_count(), 2);
        bp.validate().unwrap();
    }

    #[test]
    fn update_many_runs_around_crossing_boxes_and_repeated_ids() {
        let mut bp = torus10::<32, 8, 24>();
        let b = unit2;
        for id in 0..6 {
            bp.insert(id, b(id as f32, 1.0)).unwrap();
        }
        // Own images, a crossing box, a translated box, one id three times
        // (own image, crossing, own image again), own images after.
        let ups = [
            (0, b(0.5, 2.0)),
            (1, b(9.5, 2.0)),
            (2, b(-3.0, 2.0)),
            (3, b(4.0, 4.0)),
            (3, b(9.6, 9.6)),
            (3, b(4.5, 4.5)),
            (4, b(9.2, 4.0)),
            (5, b(0.1, 2.5)),
        ];
        bp.update_many(&ups).unwrap();
        bp.validate().unwrap();
        for (id, want) in [(0, b(0.5, 2.0)), (1, b(9.5, 2.0)), (2, b(-3.0, 2.0))] {
            assert_eq!(bp.get(id), Some(want));
        }
        assert_eq!(bp.get(3), Some(b(4.5, 4.5)));
        // Images: 1 and 4 cross x (2 each), the others 1.
        assert_eq!(bp.image_count(), 8);
        let mut pairs = [0u32; 2];
        bp.for_each_overlap(|a, b| match (a.min(b), a.max(b)) {
            (0, 1) => pairs[0] += 1, // across x = 10
            (1, 5) => pairs[1] += 1,
            _ => {}
        })
        .unwrap();
        assert_eq!(pairs, [1, 1]);
        // Two extra images (ids 1 and 4) under pool entries among the first
        // four (the free list is last in, first out: id 3's three entries
        // came back and one went to id 4).
        assert_eq!(bp.free_images(), 22);
        assert!(bp.inner().ids().all(|i| i < 8 + 4));
    }

    #[test]
    fn capacity_rule_and_a_full_inner_structure() {
        // The inner capacity fits 2 ids and 6 extra images: both boxes at
        // the corner, the inner structure and the pool full.
        let d = PeriodicBox::all(Vec2::ZERO, Vec2::new(4.0, 4.0)).unwrap();
        let inner = BruteForceBroadPhase::new([BruteSlot::<Aabb2>::EMPTY; 8]);
        let pool = [PeriodicImage::EMPTY; 6];
        assert_eq!(
            PeriodicBroadPhase::new(inner.clone(), d, [PeriodicSlot::EMPTY; 3], pool).err(),
            Some(Error::InvalidStorage {
                what: "inner capacity below slots + image pool"
            })
        );
        let mut bp = PeriodicBroadPhase::new(inner, d, [PeriodicSlot::EMPTY; 2], pool).unwrap();
        let corner = Aabb2::new(Vec2::new(3.5, 3.5), Vec2::new(4.5, 4.5)).unwrap();
        bp.insert(0, corner).unwrap();
        bp.insert(1, corner).unwrap();
        let mut n = 0;
        bp.for_each_overlap(|_, _| n += 1).unwrap();
        assert_eq!(n, 1);
        bp.validate().unwrap();
    }
    #[test]
    fn memory_formula_sizes() {
        // `cap · (size_of::<B>() + 4) + 12 · pool` bytes besides the inner
        // structure (the rustdoc, README's memory table, ARCHITECTURE.md).
        assert_eq!(core::mem::size_of::<PeriodicSlot<Aabb3>>(), 24 + 4);
        assert_eq!(core::mem::size_of::<PeriodicSlot<Aabb2>>(), 16 + 4);
        assert_eq!(core::mem::size_of::<PeriodicImage>(), 12);
    }

    #[test]
    fn a_full_pool_refuses_and_loses_nothing() {
        let mut bp = torus10::<8, 4, 4>();
        let b = unit2;
        let full = Err(Error::CapacityExceeded { capacity: 4 });
        bp.insert(0, b(9.5, 9.5)).unwrap(); // 3 extra images
        bp.insert(1, b(2.0, 9.5)).unwrap(); // 1
        assert_eq!(bp.free_images(), 0);
        bp.validate().unwrap();
        // No entry for a crossing box; a box inside still goes in.
        assert_eq!(bp.insert(2, b(9.5, 2.0)), full);
        assert_eq!((bp.get(2), bp.box_count(), bp.image_count()), (None, 2, 6));
        bp.insert(2, b(5.0, 5.0)).unwrap();
        // An update that needs more entries than it frees: refused, kept.
        assert_eq!(bp.update(1, b(9.5, 9.5)), full);
        assert_eq!(bp.update(2, b(9.5, 5.0)), full);
        assert_eq!(bp.get(1), Some(b(2.0, 9.5)));
        assert_eq!(bp.get(2), Some(b(5.0, 5.0)));
        bp.validate().unwrap();
        // Across another face: the entry of the image that goes away is
        // taken by the one that comes (no free entry needed).
        bp.update(1, b(9.5, 2.0)).unwrap();
        // Fewer images: entries freed, then taken by another box.
        bp.update(0, b(9.5, 4.0)).unwrap();
        assert_eq!(bp.free_images(), 2);
        bp.update(2, b(4.0, 9.5)).unwrap();
        assert_eq!(bp.free_images(), 1);
        // update_many stops at the first refusal, that one undone.
        assert_eq!(
            bp.update_many(&[(2, b(4.5, 9.5)), (1, b(9.5, 9.5)), (0, b(1.0, 1.0))]),
            full
        );
        assert_eq!(
            (bp.get(0), bp.get(1), bp.get(2)),
            (Some(b(9.5, 4.0)), Some(b(9.5, 2.0)), Some(b(4.5, 9.5)))
        );
        bp.validate().unwrap();
        let mut n = 0;
        bp.for_each_overlap(|_, _| n += 1).unwrap();
        assert_eq!(n, 0);
        // Removal frees the entries.
        bp.remove(0).unwrap();
        bp.remove(1).unwrap();
        assert_eq!(bp.free_images(), 3);
        bp.update(2, b(9.5, 9.5)).unwrap();
        assert_eq!(bp.free_images(), 1);
        bp.validate().unwrap();
        bp.clear();
        assert_eq!((bp.free_images(), bp.image_count()), (4, 0));
        bp.validate().unwrap();
    }

    #[test]
    fn pairs_without_extra_images_skip_the_filter_and_agree() {
        let mut bp = torus10::<12, 4, 8>();
        let b = unit2;
        let pairs = |bp: &mut PeriodicBroadPhase<_, _, _, _>| {
            let mut v = [(0u32, 0u32); 8];
            let mut n = 0;
            bp.for_each_overlap(|a: u32, c: u32| {
                if let Some(s) = v.get_mut(n) {
                    *s = (a.min(c), a.max(c));
                }
                n += 1;
            })
            .unwrap();
            v[..n.min(8)].sort_unstable();
            (n, v)
        };
        bp.insert(0, b(0.5, 0.5)).unwrap();
        bp.insert(1, b(1.0, 1.0)).unwrap();
        bp.insert(2, b(8.5, 0.5)).unwrap();
        assert!(bp.no_extra_images());
        let (n, v) = pairs(&mut bp);
        assert_eq!((n, &v[..n]), (1, &[(0, 1)][..]));
        // Box 2 across x = 10 meets box 0 through the face: the filter path.
        bp.update(2, b(9.6, 0.5)).unwrap();
        assert!(!bp.no_extra_images());
        let (n, v) = pairs(&mut bp);
        assert_eq!((n, &v[..n]), (2, &[(0, 1), (0, 2)][..]));
        // Back inside: every pool entry free again, the fast path, the same
        // pairs as at the start.
        bp.update(2, b(8.5, 0.5)).unwrap();
        assert!(bp.no_extra_images());
        let (n, v) = pairs(&mut bp);
        assert_eq!((n, &v[..n]), (1, &[(0, 1)][..]));
        bp.validate().unwrap();
    }

    #[test]
    fn boxes_moving_across_faces_reuse_pool_entries() {
        let d = PeriodicBox::all(Vec3::ZERO, Vec3::new(10.0, 10.0, 10.0)).unwrap();
        // 4 ids, room for one corner box's 7 extra images at a time.
        let inner = BruteForceBroadPhase::new([BruteSlot::<Aabb3>::EMPTY; 11]);
        let mut bp = PeriodicBroadPhase::new(
            inner,
            d,
            [PeriodicSlot::EMPTY; 4],
            [PeriodicImage::EMPTY; 7],
        )
        .unwrap();
        let c = |x: f32, y: f32, z: f32| b3([x, y, z], [x + 1.0, y + 1.0, z + 1.0]);
        bp.insert(0, c(5.0, 5.0, 5.0)).unwrap();
        bp.insert(1, c(9.6, 0.0, 0.0)).unwrap();
        bp.insert(2, c(3.0, 3.0, 3.0)).unwrap();
        let spots = [
            c(9.5, 9.5, 9.5),
            c(9.5, 2.0, 2.0),
            c(2.0, 9.5, 9.5),
            c(5.0, 5.0, 5.0),
            c(19.7, -0.3, 9.8),
            c(2.0, 2.0, 9.5),
        ];
        for round in 0..30usize {
            // Box 1 leaves the corner it may hold before box 0 takes it.
            let s0 = spots[round % spots.len()];
            let s1 = if round % 2 == 0 {
                c(9.6, 0.0, 0.0)
            } else {
                c(0.0, 9.6, 0.0)
            };
            bp.update(1, c(7.0, 7.0, 7.0)).unwrap();
            bp.update(0, s0).unwrap();
            let r = bp.update(1, s1);
            let crossing0 = d.wrap_box(&s0).unwrap().1;
            if crossing0 == 0b111 {
                assert_eq!(r, Err(Error::CapacityExceeded { capacity: 7 }));
                assert_eq!(bp.get(1), Some(c(7.0, 7.0, 7.0)));
            } else {
                r.unwrap();
            }
            bp.validate().unwrap();
            let extra = bp.image_count() - bp.box_count();
            assert_eq!(bp.free_images(), 7 - extra);
            // Box 0 against box 2 at (3, 3, 3) and box 1: pairs as the
            // definition gives them (none of these spots overlap).
            let mut n = 0;
            bp.for_each_overlap(|_, _| n += 1).unwrap();
            assert_eq!(n, 0);
        }
        // A query over the corner finds the box there once (box 1 inside,
        // so that box 0 gets all 7 entries).
        bp.update(1, c(7.0, 7.0, 7.0)).unwrap();
        bp.update(0, c(9.5, 9.5, 9.5)).unwrap();
        assert_eq!(bp.free_images(), 0);
        let mut hits = 0;
        bp.query(&b3([-0.2; 3], [0.2; 3]), |id| {
            assert_eq!(id, 0);
            hits += 1
        })
        .unwrap();
        assert_eq!(hits, 1);
        bp.remove(0).unwrap();
        assert_eq!(bp.free_images(), 7 - (bp.image_count() - bp.box_count()));
        bp.validate().unwrap();
    }

    /// Brute force that refuses (with `OutOfRange`) every box below y = 0:
    /// the images shifted along y.
    struct Picky(BruteForceBroadPhase<Aabb2, [BruteSlot<Aabb2>; 16]>);

    impl Picky {
        fn refuse(b: &Aabb2) -> Result<(), Error> {
            if b.min.y < 0.0 {
                Err(Error::OutOfRange)
            } else {
                Ok(())
            }
        }
    }

    impl BroadPhase<Aabb2> for Picky {
        fn capacity(&self) -> usize {
            self.0.capacity()
        }
        fn box_count(&self) -> usize {
            self.0.box_count()
        }
        fn insert(&mut self, id: u32, aabb: Aabb2) -> Result<(), Error> {
            Self::refuse(&aabb)?;
            self.0.insert(id, aabb)
        }
        fn update(&mut self, id: u32, aabb: Aabb2) -> Result<(), Error> {
            Self::refuse(&aabb)?;
            self.0.update(id, aabb)
        }
        fn remove(&mut self, id: u32) -> Result<Aabb2, Error> {
            self.0.remove(id)
        }
        fn get(&self, id: u32) -> Option<Aabb2> {
            self.0.get(id)
        }
        fn clear(&mut self) {
            self.0.clear();
        }
        fn for_each_overlap<F: FnMut(u32, u32)>(&mut self, f: F) -> Result<(), Error> {
            self.0.for_each_overlap(f)
        }
        fn query<F: FnMut(u32)>(&mut self, aabb: &Aabb2, f: F) -> Result<(), Error> {
            self.0.query(aabb, f)
        }
    }

    impl Validate for Picky {
        fn validate(&self) -> Result<(), Corruption> {
            self.0.validate()
        }
    }

    #[test]
    fn inner_failures_are_undone() {
        let d = PeriodicBox::all(Vec2::ZERO, Vec2::new(4.0, 4.0)).unwrap();
        let inner = Picky(BruteForceBroadPhase::new([BruteSlot::EMPTY; 16]));
        let mut bp = PeriodicBroadPhase::new(
            inner,
            d,
            [PeriodicSlot::EMPTY; 4],
            [PeriodicImage::EMPTY; 12],
        )
        .unwrap();
        let b = unit2;
        // Crossing x and y: images 0 and x go in, y is refused; both undone.
        assert_eq!(bp.insert(0, b(3.5, 3.5)), Err(Error::OutOfRange));
        assert_eq!((bp.box_count(), bp.image_count(), bp.get(0)), (0, 0, None));
        bp.validate().unwrap();
        // Crossing x only: fine.
        bp.insert(0, b(3.5, 1.0)).unwrap();
        bp.insert(1, b(1.0, 1.0)).unwrap();
        assert_eq!(bp.image_count(), 3);
        // An update to the corner: image 0 updated, image x updated, image y
        // refused; everything put back.
        assert_eq!(bp.update(0, b(3.5, 3.5)), Err(Error::OutOfRange));
        assert_eq!(bp.update(1, b(3.5, 3.5)), Err(Error::OutOfRange));
        assert_eq!(bp.get(0), Some(b(3.5, 1.0)));
        assert_eq!(bp.get(1), Some(b(1.0, 1.0)));
        assert_eq!(bp.image_count(), 3);
        bp.validate().unwrap();
        // update_many: the first applies, the second stops, the third not.
        assert_eq!(
            bp.update_many(&[(1, b(2.0, 2.0)), (0, b(7.5, 7.5)), (1, b(0.0, 0.0))]),
            Err(Error::OutOfRange)
        );
        assert_eq!(
            (bp.get(0), bp.get(1)),
            (Some(b(3.5, 1.0)), Some(b(2.0, 2.0)))
        );
        bp.validate().unwrap();
        // Checked before anything changes.
        let long = Aabb2::new(Vec2::ZERO, Vec2::new(1.0, 2.5)).unwrap();
        assert_eq!(
            bp.update_many(&[(1, b(0.5, 0.5)), (0, long)]),
            Err(Error::PeriodTooShort { axis: 1 })
        );
        assert_eq!(bp.get(1), Some(b(2.0, 2.0)));
        let mut n = 0;
        bp.for_each_overlap(|_, _| n += 1).unwrap();
        assert_eq!(n, 0);
    }
}
