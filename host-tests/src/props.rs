//! Proptest support shared by the property-test files.

use proptest::prelude::*;

/// A lattice box: lower corner `pos / 4 · 2^pe`, edges `edge / 4 · 2^se`
/// (exact dyadic arithmetic, so boxes coincide and touch exactly).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lattice {
    /// Exponent of the position scale.
    pub pe: i8,
    /// Lower corner in quarter units of `2^pe`.
    pub pos: [i8; 3],
    /// Exponent of the edge scale.
    pub se: i8,
    /// Edges in quarter units of `2^se`.
    pub edge: [u8; 3],
}

/// Lattice boxes: positions within ±24 units at scales 2⁻⁴ … 2⁴, edges of 0
/// to 7 steps at scales 2⁻⁶ … 2⁵ (one in six a point).
pub fn lattice() -> impl Strategy<Value = Lattice> {
    let edge = prop_oneof![
        1 => Just([0u8; 3]),
        5 => prop::array::uniform3(0u8..8),
    ];
    (-4i8..=4, prop::array::uniform3(-24i8..=24), -6i8..=5, edge)
        .prop_map(|(pe, pos, se, edge)| Lattice { pe, pos, se, edge })
}

/// `2^e`.
pub fn pow2(e: i8) -> f32 {
    2f32.powi(i32::from(e))
}

/// The corners of a lattice box (all three axes; 2D uses the first two).
pub fn lattice_corners(l: &Lattice) -> ([f32; 3], [f32; 3]) {
    let unit = 0.25 * pow2(l.pe);
    let step = 0.25 * pow2(l.se);
    let mut lo = [0.0f32; 3];
    let mut hi = [0.0f32; 3];
    for k in 0..3 {
        lo[k] = f32::from(l.pos[k]) * unit;
        hi[k] = lo[k] + f32::from(l.edge[k]) * step;
    }
    (lo, hi)
}

impl<'a> arbitrary::Arbitrary<'a> for Lattice {
    /// The ranges of [`lattice`]: positions within ±24 units at scales
    /// 2⁻⁴ … 2⁴, edges of 0 to 7 steps at scales 2⁻⁶ … 2⁵ (one in six a
    /// point).
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let pe = u.int_in_range(-4..=4)?;
        let mut pos = [0i8; 3];
        for p in &mut pos {
            *p = u.int_in_range(-24..=24)?;
        }
        let se = u.int_in_range(-6..=5)?;
        let mut edge = [0u8; 3];
        if !u.ratio(1u8, 6)? {
            for e in &mut edge {
                *e = u.int_in_range(0..=7)?;
            }
        }
        Ok(Self { pe, pos, se, edge })
    }
}
