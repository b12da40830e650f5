//! Cell arithmetic shared by every structure: the floor of a cell
//! coordinate, the radius check of the uniform grid, the per-structure range
//! limits (each named by its unit). Cells are ordered along the Morton
//! curve by [`crate::Point::cell_morton`].
//!
//! Every structure that cuts space into cells computes its cells here, so a
//! cell means the same thing in the uniform hashes, the SPH fluid's
//! renumbering, the hash's reorder and the GPU pipeline.

use crate::error::Error;

/// Uniform grid (the hashes of [`crate::uniform`]): largest distance from
/// the grid's origin, **in cells of the grid, per axis**, that a coordinate
/// may have (2¹⁴), as an `i32` because the grid adds it to every cell
/// coordinate so that stored cells are never negative.
///
/// Within it the relative rounding error of the cell coordinate (three `f32`
/// roundings, `≤ 3·2⁻²⁴` relative) shifts a cell boundary by less than
/// `2¹⁴ · 6 · 2⁻²⁴ < 2⁻⁷` of a cell, which [`CELL_MARGIN`] absorbs: every
/// computed cell is wider than the radius.
pub const UNIFORM_RANGE_CELLS: i32 = 1 << 14;

/// Hierarchical hash grid ([`crate::hhg`]): largest `|x| / cell size`, **in
/// cells of the grid the box goes to, per axis**, as an `f32` (2²⁰; the pe
/// paper's eq. 3.2.2 for `f32`, with margin): beyond it `f32` rounding could
/// move a box by a whole cell.
pub const HHG_RANGE_CELLS: f32 = 1_048_576.0;

/// Hierarchical and multilevel hashing ([`crate::hhash`]): largest distance
/// from the origin, **in base-class cells, per axis**, of a stored
/// coordinate, as an `f32` (2³⁰). Query boxes are clamped to it, which is
/// exact because nothing is stored beyond it.
pub const HHASH_RANGE_CELLS: f32 = (1u32 << 30) as f32;

/// Cell size divided by radius in the uniform grid: `1 + 2⁻⁷` (see
/// [`UNIFORM_RANGE_CELLS`]).
pub const CELL_MARGIN: f32 = 1.0 + 1.0 / 128.0;

/// `floor(t)` for `|t| < 2³¹`, without `libm` (truncate, then step down for
/// negative non-integers).
#[inline(always)]
pub(crate) fn floor_i32(t: f32) -> i32 {
    let i = t as i32;
    if (i as f32) > t { i - 1 } else { i }
}

/// `Ok` if `radius` can drive the uniform grid's arithmetic: finite,
/// positive, with a finite normal inverse of the cell size and a positive
/// finite square.
///
/// # Errors
/// [`Error::InvalidRadius`] otherwise.
pub(crate) fn check_radius(radius: f32) -> Result<(), Error> {
    let cell = radius * CELL_MARGIN;
    let inv = 1.0 / cell;
    let r2 = radius * radius;
    if radius.is_finite()
        && radius > 0.0
        && cell.is_finite()
        && inv.is_finite()
        && inv.is_normal()
        && r2.is_finite()
        && r2 > 0.0
    {
        Ok(())
    } else {
        Err(Error::InvalidRadius)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_matches_libm() {
        for &t in &[
            0.0f32, -0.0, 0.5, -0.5, 1.0, -1.0, -1.5, 16383.9, -16383.9, -1e-30, 3.0,
        ] {
            assert_eq!(floor_i32(t), libm::floorf(t) as i32, "{t}");
        }
    }

    #[test]
    fn radius_checks() {
        assert!(check_radius(1.0).is_ok());
        for r in [0.0, -1.0, f32::NAN, f32::INFINITY, 1e-39, f32::MAX] {
            assert_eq!(check_radius(r), Err(Error::InvalidRadius), "{r}");
        }
    }
}
