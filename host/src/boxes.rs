//! Raw boxes for property tests and fuzzing: built without validation, and
//! compared and overlapped by independent code (not spatium's own).

use spatium::{Aabb2, Aabb3, BoundingBox, Point, Vec2, Vec3};

/// Box types the property tests build from raw corners, with no
/// validation (so NaN, infinite and inverted boxes can be made).
pub trait TestBox: BoundingBox {
    /// The box with these corners (the third coordinate is ignored in 2D).
    fn raw(lo: [f32; 3], hi: [f32; 3]) -> Self;
}

impl TestBox for Aabb3 {
    fn raw(lo: [f32; 3], hi: [f32; 3]) -> Self {
        Aabb3 {
            min: Vec3::new(lo[0], lo[1], lo[2]),
            max: Vec3::new(hi[0], hi[1], hi[2]),
        }
    }
}

impl TestBox for Aabb2 {
    fn raw(lo: [f32; 3], hi: [f32; 3]) -> Self {
        Aabb2 {
            min: Vec2::new(lo[0], lo[1]),
            max: Vec2::new(hi[0], hi[1]),
        }
    }
}

/// Number of axes of `B`.
pub fn dim<B: BoundingBox>() -> usize {
    B::Point::DIM
}

/// The corners as arrays (unused axes 0).
pub fn corners<B: BoundingBox>(b: &B) -> ([f32; 3], [f32; 3]) {
    let mut lo = [0.0; 3];
    let mut hi = [0.0; 3];
    for k in 0..dim::<B>() {
        lo[k] = b.min().coord(k);
        hi[k] = b.max().coord(k);
    }
    (lo, hi)
}

/// Independent closed-interval overlap, axis by axis (not
/// `BoundingBox::overlaps`).
pub fn overlap<B: BoundingBox>(a: &B, b: &B) -> bool {
    let (al, ah) = corners(a);
    let (bl, bh) = corners(b);
    (0..dim::<B>()).all(|k| al[k] <= bh[k] && bl[k] <= ah[k])
}

/// Bitwise equality (tells `-0.0` from `0.0`).
pub fn same<B: BoundingBox>(a: &B, b: &B) -> bool {
    let (al, ah) = corners(a);
    let (bl, bh) = corners(b);
    (0..dim::<B>())
        .all(|k| al[k].to_bits() == bl[k].to_bits() && ah[k].to_bits() == bh[k].to_bits())
}

/// [`same`] for optional boxes.
pub fn same_opt<B: BoundingBox>(a: Option<B>, b: Option<B>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same(&a, &b),
        (None, None) => true,
        _ => false,
    }
}
