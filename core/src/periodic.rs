//! Periodic domains: a box whose opposite faces are identified on any subset
//! of the axes.
//!
//! A [`PeriodicBox`] value describes the domain once; every structure and pass
//! that supports periodic boundaries takes the same value and uses its
//! functions, so they agree bit for bit:
//!
//! * [`wrap`](PeriodicBox::wrap) maps a coordinate on a periodic axis into
//!   `[lo, hi)`;
//! * [`offset`](PeriodicBox::offset) is the minimum-image difference `a - b` of
//!   two wrapped points: on a periodic axis, where `a - b > L/2` it is
//!   `a - (b + L)`, where `a - b < -L/2` it is `(a + L) - b` (`L = hi - lo`),
//!   and `a - b` otherwise. The period is always added to the *lower* of the
//!   two coordinates before the one subtraction, so the result is
//!   antisymmetric to the bit (`offset(b, a)` is `-offset(a, b)` exactly: a
//!   float subtraction is), and a pair's distance does not depend on which
//!   side asks;
//! * [`distance_squared`](PeriodicBox::distance_squared) sums the squared
//!   components of that offset axis by axis, as
//!   [`Point::distance_squared`] does (on a domain without periodic axes
//!   the two are the same function).
//!
//! A structure that finds a neighbour through a wrapped cell knows from the
//! cell offset which of the two is the lower coordinate along each axis, so
//! it computes the same float: it adds the period to the query point where
//! the query is the lower one, and to the candidates where they are (the
//! crate-private `PeriodicBox::image` splits a cell shift into those two
//! parts). A sweep can then
//! test a whole range of candidates with the plain kernel `p' - q`, the
//! query shifted once, or with the candidates copied shifted.

use crate::error::Error;
use crate::geom::Point;

/// A box `[lo, hi)` periodic along the axes of a bit mask (bit `k` for axis
/// `k`); the other axes are not constrained by it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PeriodicBox<P: Point> {
    lo: P,
    hi: P,
    /// `hi - lo` on the periodic axes, 0 on the others.
    len: P,
    /// `len / 2`: the minimum-image threshold.
    half: P,
    axes: u8,
}

impl<P: Point> Default for PeriodicBox<P> {
    fn default() -> Self {
        Self::NONE
    }
}

impl<P: Point> PeriodicBox<P> {
    /// No periodic axis: every function is the plain non-periodic one.
    pub const NONE: Self = Self {
        lo: P::ZERO,
        hi: P::ZERO,
        len: P::ZERO,
        half: P::ZERO,
        axes: 0,
    };

    /// The box `[lo, hi)`, periodic along the axes whose bit is set in
    /// `axes` (bit 0 for x; bits at or above `DIM` are refused).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite corner, [`Error::InvertedBox`]
    /// unless `lo < hi` on every axis, [`Error::InvalidConfig`] (`"axes"`)
    /// for a bit at or above `DIM`.
    // Out of line: its callers' path for no periodic axis stays small.
    #[inline(never)]
    pub fn new(lo: P, hi: P, axes: u8) -> Result<Self, Error> {
        if !lo.is_finite() || !hi.is_finite() {
            return Err(Error::NonFinite);
        }
        Self::check_finite(lo, hi, axes)?;
        let len = P::from_fn(|k| {
            if axes & (1 << k) != 0 {
                hi.coord(k) - lo.coord(k)
            } else {
                0.0
            }
        });
        Ok(Self {
            lo,
            hi,
            len,
            half: len * 0.5,
            axes,
        })
    }

    /// [`new`](Self::new)'s checks after the corners' finiteness (the
    /// same errors in the same order), without building the box: a caller
    /// that has checked the corners and only validates does not link the
    /// constructor.
    pub(crate) fn check_finite(lo: P, hi: P, axes: u8) -> Result<(), Error> {
        if u32::from(axes) >> P::DIM != 0 {
            return Err(Error::InvalidConfig { field: "axes" });
        }
        for k in 0..P::DIM {
            let (a, b) = (lo.coord(k), hi.coord(k));
            // `b - a` may overflow to infinity for finite corners.
            if a >= b || !(b - a).is_finite() {
                return Err(Error::InvertedBox);
            }
        }
        Ok(())
    }

    /// The box `[lo, hi)`, periodic along every axis.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn all(lo: P, hi: P) -> Result<Self, Error> {
        Self::new(lo, hi, (1u8 << P::DIM) - 1)
    }

    /// The bit mask of the periodic axes.
    pub fn axes(&self) -> u8 {
        self.axes
    }

    /// `true` if some axis is periodic.
    pub fn is_periodic(&self) -> bool {
        self.axes != 0
    }

    /// `true` if `axis` is periodic.
    pub fn is_periodic_axis(&self, axis: usize) -> bool {
        axis < P::DIM && self.axes & (1 << axis) != 0
    }

    /// The lower corner.
    pub fn lo(&self) -> P {
        self.lo
    }

    /// The upper corner (excluded on the periodic axes).
    pub fn hi(&self) -> P {
        self.hi
    }

    /// The period `hi - lo` along each periodic axis, 0 along the others.
    pub fn lengths(&self) -> P {
        self.len
    }

    /// The shortest period (`f32::INFINITY` without periodic axes).
    pub fn shortest(&self) -> f32 {
        let mut m = f32::INFINITY;
        for k in 0..P::DIM {
            if self.is_periodic_axis(k) {
                m = m.min(self.len.coord(k));
            }
        }
        m
    }

    /// One coordinate mapped into `[lo, hi)` along a periodic `axis`
    /// (returned unchanged along the others). A coordinate already inside is
    /// returned bit for bit; a non-finite one is returned unchanged.
    #[inline]
    pub fn wrap_coord(&self, axis: usize, x: f32) -> f32 {
        if !self.is_periodic_axis(axis) {
            return x;
        }
        let (lo, hi) = (self.lo.coord(axis), self.hi.coord(axis));
        if x >= lo && x < hi {
            return x;
        }
        self.wrap_outside(axis, x)
    }

    /// [`wrap_coord`](Self::wrap_coord) of a coordinate outside `[lo, hi)`
    /// on a periodic axis (or non-finite): out of line, so that the common
    /// case, a coordinate already inside, is two comparisons in the caller.
    #[cold]
    #[inline(never)]
    fn wrap_outside(&self, axis: usize, x: f32) -> f32 {
        if !x.is_finite() {
            return x;
        }
        let (lo, hi, l) = (
            self.lo.coord(axis),
            self.hi.coord(axis),
            self.len.coord(axis),
        );
        let mut y = x - l * libm::floorf((x - lo) / l);
        // Rounding may land on the excluded face or just outside; one more
        // period (or the face itself) settles it.
        if y >= hi {
            y -= l;
        }
        if y < lo {
            y += l;
        }
        if y >= hi || y < lo { lo } else { y }
    }

    /// `p` with every periodic coordinate mapped into `[lo, hi)`
    /// ([`wrap_coord`](Self::wrap_coord)); the other coordinates unchanged.
    #[inline]
    pub fn wrap(&self, p: P) -> P {
        if self.axes == 0 {
            return p;
        }
        P::from_fn(|k| self.wrap_coord(k, p.coord(k)))
    }

    /// [`wrap`](Self::wrap) of every point of `xs`, in place; out of line,
    /// so that a caller's non-periodic path carries only the call.
    /// (The same points as `wrap`: `wrap_coord` returns the coordinates of
    /// the other axes unchanged.)
    #[inline(never)]
    pub(crate) fn wrap_all(&self, xs: &mut [P]) {
        for x in xs {
            let p = *x;
            *x = P::from_fn(|k| self.wrap_coord_out_of_line(k, p.coord(k)));
        }
    }

    /// [`wrap_coord`](Self::wrap_coord), one copy for every axis.
    #[inline(never)]
    fn wrap_coord_out_of_line(&self, axis: usize, x: f32) -> f32 {
        self.wrap_coord(axis, x)
    }

    /// `true` if every periodic coordinate of `p` lies in `[lo, hi)`.
    #[inline]
    pub fn contains_wrapped(&self, p: P) -> bool {
        (0..P::DIM).all(|k| {
            !self.is_periodic_axis(k) || {
                let x = p.coord(k);
                x >= self.lo.coord(k) && x < self.hi.coord(k)
            }
        })
    }

    /// The minimum-image difference `a - b` of two wrapped points (see the
    /// module documentation); `a - b` without periodic axes.
    #[inline(always)]
    pub fn offset(&self, a: P, b: P) -> P {
        let d = a - b;
        if self.axes == 0 {
            return d;
        }
        P::from_fn(|k| {
            let (x, h, l) = (d.coord(k), self.half.coord(k), self.len.coord(k));
            if l == 0.0 {
                x
            } else if x > h {
                a.coord(k) - (b.coord(k) + l)
            } else if x < -h {
                (a.coord(k) + l) - b.coord(k)
            } else {
                x
            }
        })
    }

    /// The two parts of a cell shift `s` (each component `-L`, `0` or `L`:
    /// a candidate `q` reached through a face is at `q + s` seen from the
    /// query `p`): `(p', t)` with `p' = p - min(s, 0)` and `t = max(s, 0)`
    /// componentwise, so that `p' - (q + t)` is [`offset`](Self::offset)`(p, q)`
    /// to the bit for every pair the shift connects within half a period.
    /// A zero component leaves that coordinate of `p` as it is.
    #[inline(always)]
    pub(crate) fn image(p: P, s: P) -> (P, P) {
        let query = P::from_fn(|k| {
            let v = s.coord(k);
            if v < 0.0 { p.coord(k) - v } else { p.coord(k) }
        });
        let cand = P::from_fn(|k| s.coord(k).max(0.0));
        (query, cand)
    }

    /// Squared length of [`offset`](Self::offset), summed axis by axis in
    /// [`Point::distance_squared`]'s order.
    #[inline(always)]
    pub fn distance_squared(&self, a: P, b: P) -> f32 {
        let d = self.offset(a, b);
        d.dot(d)
    }
}

mod broad;
pub use broad::{PeriodicBroadPhase, PeriodicImage, PeriodicSlot};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Vec2, Vec3};

    #[test]
    fn construction_checks_its_arguments() {
        let (lo, hi) = (Vec3::ZERO, Vec3::new(1.0, 2.0, 3.0));
        assert!(PeriodicBox::new(lo, hi, 0b101).is_ok());
        assert_eq!(
            PeriodicBox::new(lo, hi, 0b1000),
            Err(Error::InvalidConfig { field: "axes" })
        );
        assert_eq!(PeriodicBox::new(hi, lo, 1), Err(Error::InvertedBox));
        assert_eq!(PeriodicBox::new(lo, lo, 0), Err(Error::InvertedBox));
        assert_eq!(
            PeriodicBox::new(Vec3::new(f32::NAN, 0.0, 0.0), hi, 1),
            Err(Error::NonFinite)
        );
        assert_eq!(
            PeriodicBox::new(Vec3::new(-3e38, 0.0, 0.0), Vec3::new(3e38, 1.0, 1.0), 1),
            Err(Error::InvertedBox)
        );
        assert_eq!(
            PeriodicBox::<Vec2>::new(Vec2::ZERO, Vec2::new(1.0, 1.0), 0b100),
            Err(Error::InvalidConfig { field: "axes" })
        );
        let p = PeriodicBox::new(lo, hi, 0b101).unwrap();
        assert_eq!(p.lengths(), Vec3::new(1.0, 0.0, 3.0));
        assert_eq!(p.shortest(), 1.0);
        assert!(p.is_periodic_axis(2) && !p.is_periodic_axis(1) && !p.is_periodic_axis(7));
    }

    #[test]
    fn wrap_lands_inside_and_keeps_inside_points() {
        let p = PeriodicBox::all(Vec2::new(-1.0, 0.5), Vec2::new(2.0, 0.75)).unwrap();
        for &x in &[
            -1.0f32,
            1.999_999,
            0.3,
            2.0,
            -1.000_000_1,
            5.5,
            -7.25,
            1e7,
            -1e7,
        ] {
            let w = p.wrap_coord(0, x);
            assert!((-1.0..2.0).contains(&w), "{x} -> {w}");
            if (-1.0..2.0).contains(&x) {
                assert_eq!(w.to_bits(), x.to_bits());
            }
        }
        // Just below `lo`: one period up rounds onto `hi`, which is excluded.
        let tiny = -f32::EPSILON * 1e-3;
        let q = PeriodicBox::all(Vec2::ZERO, Vec2::new(1.0, 1.0)).unwrap();
        let w = q.wrap_coord(0, tiny);
        assert!((0.0..1.0).contains(&w), "{w}");
        assert!(q.wrap_coord(0, f32::NAN).is_nan());
        let none = PeriodicBox::<Vec2>::NONE;
        assert_eq!(none.wrap(Vec2::new(9.0, -9.0)), Vec2::new(9.0, -9.0));
    }

    #[test]
    fn offset_is_the_minimum_image_and_antisymmetric() {
        let p = PeriodicBox::new(Vec3::ZERO, Vec3::new(10.0, 10.0, 10.0), 0b011).unwrap();
        let a = Vec3::new(0.5, 9.75, 0.5);
        let b = Vec3::new(9.5, 0.25, 9.5);
        let d = p.offset(a, b);
        assert_eq!(d, Vec3::new(1.0, -0.5, -9.0));
        assert_eq!(p.offset(b, a), -d);
        assert_eq!(p.distance_squared(a, b), 1.0 + 0.25 + 81.0);
        // Bit-antisymmetric on awkward values.
        let mut x = 0.013f32;
        while x < 10.0 {
            let a = Vec3::new(x, 9.999 - x * 0.7, 3.0);
            let b = Vec3::new(9.99 - x * 0.31, x * 0.9, 4.0);
            let (u, v) = (p.offset(a, b), p.offset(b, a));
            assert_eq!(u, -v);
            assert_eq!(
                p.distance_squared(a, b).to_bits(),
                p.distance_squared(b, a).to_bits()
            );
            x += 0.137;
        }
        let none = PeriodicBox::<Vec3>::NONE;
        assert_eq!(none.distance_squared(a, b), a.distance_squared(b));
    }
}
