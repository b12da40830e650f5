//! Property tests of the three uniform hashes, side by side, judged by the
//! shared neighbour-search model (`spatium_host_tests::model::SearchModel`,
//! one per strategy, through `SearchOp`) and the uniform layer
//! (`spatium_host_tests::uniform_model`: exact build errors incl.
//! `BucketFull` and `OutOfRange`, `LinkedHash::update`, `reorder` and
//! `input_was_sorted`, occupied and colliding cells, `Inspect` against the
//! documented formulas, `new_checked`).
//!
//! Here: the shared proptest strategies (lattice points, points at the
//! radius, bad radii and points, exotic coordinates) over fixed table
//! lengths — 1 (every cell in one bucket), 4, 64, 1024 — with 4 slots per
//! bucket. The `uniform_hash` fuzz target covers the rest: fuzzed and
//! invalid table lengths, other bucket sizes, raw-bit floats, points at the
//! range limit.

use proptest::prelude::*;
use spatium::{Point, Vec2, Vec3};
use spatium_host_tests::model::{PointSpec, point_spec, search_op};
use spatium_host_tests::registry::SEARCH_CAPACITY;
use spatium_host_tests::uniform_model::{UniformOp, UniformWorld};

/// Table lengths every sequence runs on.
const TABLES: [usize; 4] = [1, 4, 64, 1024];
/// Slots per bucket.
const K: usize = 4;

/// A moved particle: by the radius times `2^-shift` along an axis (may
/// change cell), or anywhere the shared point strategy goes.
fn moved<P: Point>() -> impl Strategy<Value = (u32, PointSpec<P>)> {
    prop_oneof![
        3 => (0u32..32, 0u8..3, 0u8..6)
            .prop_map(|(i, axis, shift)| (i, PointSpec::Near { of: i, axis, shift })),
        2 => (0u32..32, point_spec::<P>()),
    ]
}

fn uniform_op<P: Point>() -> impl Strategy<Value = UniformOp<P>> {
    prop_oneof![
        8 => search_op::<P>(SEARCH_CAPACITY + 4).prop_map(UniformOp::Search),
        3 => (
            prop::collection::vec(moved::<P>(), 0..8),
            prop_oneof![5 => Just(None), 1 => any::<u8>().prop_map(Some)],
        )
            .prop_map(|(moves, resize)| UniformOp::Move { moves, resize }),
        1 => prop::option::of((any::<bool>(), any::<u8>())).prop_map(UniformOp::Reorder),
        1 => Just(UniformOp::Pairs),
        1 => (0u8..8).prop_map(UniformOp::Clear),
    ]
}

fn run<P: Point>(ops: &[UniformOp<P>]) -> Result<(), TestCaseError> {
    for table in TABLES {
        let fail = |e: String| TestCaseError::fail(format!("{}D, table {table}: {e}", P::DIM));
        UniformWorld::<P, K>::new(SEARCH_CAPACITY, table)
            .map_err(fail)?
            .run(ops)
            .map_err(fail)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn uniform_hashes_3d(ops in prop::collection::vec(uniform_op::<Vec3>(), 1..24)) {
        run(&ops)?;
    }

    #[test]
    fn uniform_hashes_2d(ops in prop::collection::vec(uniform_op::<Vec2>(), 1..24)) {
        run(&ops)?;
    }
}
