//! The three uniform spatial hashes side by side, in 2D and 3D, judged by
//! the shared neighbour-search model (`spatium_host_tests::model::
//! SearchModel`, one per strategy, through `SearchOp`) and the uniform layer
//! (`spatium_host_tests::uniform_model`: exact build errors incl.
//! `BucketFull` and `OutOfRange` beyond `UNIFORM_RANGE_CELLS`,
//! `LinkedHash::update`, `reorder` and `input_was_sorted`, occupied and
//! colliding cells, `Inspect` against the documented formulas,
//! `new_checked`).
//!
//! What the property test (`host-tests/tests/suite/uniform_props.rs`: fixed table
//! lengths, 4 slots per bucket, the proptest strategies) does not reach:
//! fuzzed table lengths (1 to 4096 slots, and lengths that are not powers of
//! two: `new_checked` refuses them and every build reports
//! `InvalidTableLength`), bucket sizes 1, 2, 3 and 16, capacities 0 to 40,
//! the `arbitrary` operations (raw-bit points and radii), and builds whose
//! coordinates are overridden by raw bits, special values or values at the
//! grid's range limit (`±(1 or 2) · UNIFORM_RANGE_CELLS` cells from the
//! origin, a few ulps either side).

#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use spatium::uniform::{CELL_MARGIN, UNIFORM_RANGE_CELLS};
use spatium::{Point, Vec2, Vec3};
use spatium_host_tests::model::{PointSpec, RadiusSpec, SearchModel, SearchOp};
use spatium_host_tests::uniform_model::{UniformOp, UniformWorld};

/// Most operations per input.
const MAX_OPS: usize = 48;
/// Most particles of a build (capacities go to 40).
const MAX_POINTS: usize = 44;

/// Radii besides the shared `RadiusSpec` ones: at the grid's limits.
const SPECIAL_RADII: [f32; 16] = [
    0.0,
    -0.0,
    -1.0,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    1e-39,
    1e-23,
    1e-20,
    1e18,
    1e19,
    2e19,
    1e20,
    f32::MAX,
    f32::MIN_POSITIVE,
    1.0,
];

/// Coordinates that override lattice ones.
const SPECIAL_COORDS: [f32; 16] = [
    0.0,
    -0.0,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::MAX,
    -f32::MAX,
    f32::MIN_POSITIVE,
    1e-40,
    1e30,
    -1e30,
    16384.0,
    -16384.0,
    1e7,
    0.5,
    f32::EPSILON,
];

/// A coordinate: raw bits, a special value, or near the range limit
/// (`±(1 or 2) · UNIFORM_RANGE_CELLS` cells of `radius`, moved by
/// `off · 2⁻²⁰` relative, or by a few ulps).
fn coord(u: &mut Unstructured<'_>, radius: f32) -> Result<f32> {
    Ok(match u.int_in_range(0u8..=2)? {
        0 => f32::from_bits(u.arbitrary()?),
        1 => SPECIAL_COORDS[u.choose_index(SPECIAL_COORDS.len())?],
        _ => {
            let cell = radius * CELL_MARGIN;
            let double: bool = u.arbitrary()?;
            let l = UNIFORM_RANGE_CELLS as f32 * cell * if double { 2.0 } else { 1.0 };
            let off: i8 = u.arbitrary()?;
            let mut v = l * (1.0 + f32::from(off) * (1.0 / (1 << 20) as f32));
            let ulps: i8 = u.int_in_range(-4..=4)?;
            for _ in 0..ulps.unsigned_abs() {
                v = if ulps > 0 { v.next_up() } else { v.next_down() };
            }
            if u.arbitrary()? { -v } else { v }
        }
    })
}

/// A build of shared point specs with coordinates overridden.
fn edge_build<P: Point>(u: &mut Unstructured<'_>) -> Result<UniformOp<P>> {
    let radius = if u.arbitrary()? {
        SPECIAL_RADII[u.choose_index(SPECIAL_RADII.len())?]
    } else {
        u.arbitrary::<RadiusSpec>()?.value()
    };
    let n = u.int_in_range(0..=MAX_POINTS)?;
    let mut specs = Vec::with_capacity(n);
    for _ in 0..n {
        specs.push(u.arbitrary::<PointSpec<P>>()?);
    }
    let mut pts = SearchModel::<P>::resolve_all(&specs, radius);
    let overrides = u.int_in_range(0..=4)?;
    for _ in 0..overrides {
        if pts.is_empty() {
            break;
        }
        let i = u.choose_index(pts.len())?;
        let axis = u.choose_index(P::DIM)?;
        let x = coord(u, radius)?;
        let p = pts[i];
        pts[i] = P::from_fn(|k| if k == axis { x } else { p.coord(k) });
    }
    Ok(UniformOp::Search(SearchOp::Build(
        pts.into_iter().map(PointSpec::Exact).collect(),
        RadiusSpec::Bits(radius.to_bits()),
    )))
}

fn op<P: Point>(u: &mut Unstructured<'_>) -> Result<UniformOp<P>> {
    Ok(match u.int_in_range(0u8..=15)? {
        0..=5 => UniformOp::Search(u.arbitrary()?),
        6..=8 => edge_build(u)?,
        9..=11 => {
            let n = u.int_in_range(0u8..=8)?;
            let mut moves = Vec::new();
            for _ in 0..n {
                let i = u.int_in_range(0u32..=47)?;
                let spec = if u.arbitrary()? {
                    PointSpec::Near {
                        of: i,
                        axis: u.arbitrary()?,
                        shift: u.int_in_range(0..=7)?,
                    }
                } else {
                    u.arbitrary()?
                };
                moves.push((i, spec));
            }
            let resize = if u.ratio(1u8, 6)? {
                Some(u.arbitrary()?)
            } else {
                None
            };
            UniformOp::Move { moves, resize }
        }
        12 => UniformOp::Reorder(u.arbitrary()?),
        13 => UniformOp::Pairs,
        _ => UniformOp::Clear(u.arbitrary()?),
    })
}

fn run<P: Point, const K: usize>(
    u: &mut Unstructured<'_>,
    capacity: usize,
    table: usize,
) -> Result<()> {
    let mut w = UniformWorld::<P, K>::new(capacity, table)
        .unwrap_or_else(|e| panic!("{}D K={K} table {table}: {e}", P::DIM));
    for k in 0..MAX_OPS {
        if u.is_empty() {
            break;
        }
        let op = op::<P>(u)?;
        if let Err(e) = w.apply(&op) {
            panic!(
                "{}D K={K} table {table} capacity {capacity} op {k}: {e}",
                P::DIM
            );
        }
    }
    Ok(())
}

fn run_dim<P: Point>(u: &mut Unstructured<'_>) -> Result<()> {
    let table = if u.ratio(1u8, 8)? {
        // Mostly not a power of two (0 included).
        usize::from(u.int_in_range(0u16..=5000)?)
    } else {
        1usize << u.int_in_range(0u32..=12)?
    };
    // Mostly room for every build of the generators (up to 44 points).
    let capacity = if u.ratio(1u8, 4)? {
        u.int_in_range(0usize..=40)?
    } else {
        40
    };
    match u.int_in_range(0u8..=3)? {
        0 => run::<P, 1>(u, capacity, table),
        1 => run::<P, 2>(u, capacity, table),
        2 => run::<P, 3>(u, capacity, table),
        _ => run::<P, 16>(u, capacity, table),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = if u.arbitrary::<bool>().unwrap_or(false) {
        run_dim::<Vec3>(&mut u)
    } else {
        run_dim::<Vec2>(&mut u)
    };
});
