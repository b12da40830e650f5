//! Property tests of the hierarchical hash grid under several
//! configurations and arena sizes, in 3D and 2D: random sequences of the
//! shared broad-phase operations plus the grid's own (`insert_unbounded`,
//! both `update_all` strategies, `sort_records`), judged by the shared model
//! with the grid's layer ([`spatium_host_tests::hhg_model`]: unbounded boxes,
//! the small-N switch, the range rule for tame boxes, `stats()`, refused
//! operations leave `stats()` unchanged).
//!
//! The registry's grid also runs in `model_props.rs` (trait operations
//! only); the `hhg` fuzz target explores fuzzed configurations, arena contents and
//! raw-bit floats through the same layer. Here: fixed configurations that
//! reach every regime (grids from the start, factor 1.5, dense small grids,
//! growing grids, a starved arena, no arena).

use proptest::prelude::*;
use spatium::{Aabb2, Aabb3, HhgConfig, Inspect};
use spatium_host::boxes::TestBox;
use spatium_host::make;
use spatium_host_tests::hhg_model::{HhgModel, HhgOp, hhg_op};
use spatium_host_tests::model::{BroadOp, good_box_spec};

/// Ids below this are in range (the generators draw up to `model::IDS`).
const CAP: usize = 42;

/// A prefill of mostly valid inserts on ids `0..` (often enough to pass the
/// default small-N threshold of 32), then random operations.
fn ops<B: TestBox>(max_ops: usize) -> impl Strategy<Value = Vec<HhgOp<B>>> {
    let prefill = prop_oneof![
        1 => prop::collection::vec(good_box_spec::<B>(), 0..8),
        1 => prop::collection::vec(good_box_spec::<B>(), 28..CAP),
    ];
    (prefill, prop::collection::vec(hhg_op::<B>(), 1..max_ops)).prop_map(|(pre, rest)| {
        pre.into_iter()
            .enumerate()
            .map(|(i, s)| HhgOp::Broad(BroadOp::Insert(i as u32, s)))
            .chain(rest)
            .collect()
    })
}

fn run<B: TestBox>(cfg: HhgConfig, arena: usize, ops: &[HhgOp<B>]) -> Result<(), TestCaseError> {
    let mut g = make::hhg::<B>(CAP, arena, cfg);
    HhgModel::<B>::new(CAP, cfg.small_n_threshold(), arena)
        .run(&mut g, ops)
        .map_err(TestCaseError::fail)
}

/// Room for every grid of the hierarchy at the initial size.
const ROOMY: usize = 1 << 17;

fn default() -> HhgConfig {
    HhgConfig::DEFAULT
}

fn grids_from_start() -> HhgConfig {
    HhgConfig::DEFAULT.with_small_n_threshold(0)
}

fn factor_1_5() -> HhgConfig {
    HhgConfig::DEFAULT.with_hierarchy_factor(1.5).unwrap()
}

fn dense_small_grids() -> HhgConfig {
    HhgConfig::DEFAULT
        .with_density(4.0)
        .unwrap()
        .with_initial_cells_log2(2)
        .unwrap()
}

/// Grids of 4 cells per axis that grow from 9 (3D) or 3 (2D) boxes.
fn growing() -> HhgConfig {
    HhgConfig::DEFAULT
        .with_initial_cells_log2(2)
        .unwrap()
        .with_small_n_threshold(0)
}

macro_rules! props {
    ($($name:ident: $b:ty, $cases:expr, $cfg:expr, $arena:expr;)*) => {$(
        proptest! {
            #![proptest_config(ProptestConfig::with_cases($cases))]
            #[test]
            fn $name(ops in ops::<$b>(60)) {
                run::<$b>($cfg, $arena, &ops)?;
            }
        }
    )*};
}

props! {
    matches_model_3d_default: Aabb3, 300, default(), ROOMY;
    matches_model_2d_default: Aabb2, 100, default(), ROOMY;
    matches_model_3d_grids_from_start: Aabb3, 400, grids_from_start(), ROOMY;
    matches_model_3d_factor_1_5: Aabb3, 300, factor_1_5(), ROOMY;
    matches_model_3d_dense_small_grids: Aabb3, 300, dense_small_grids(), ROOMY;
    matches_model_3d_growing: Aabb3, 300, growing(), ROOMY;
    // One grid of 4³ cells at most (a second is refused): saturation and
    // fallbacks to the larger grid and to the unbounded container.
    matches_model_3d_arena_1000: Aabb3, 300, default(), 1000;
    matches_model_3d_arena_1000_grids_from_start: Aabb3, 300, grids_from_start(), 1000;
    // No grid at all: every box in the flat array or the unbounded container.
    matches_model_3d_no_arena: Aabb3, 200, grids_from_start(), 0;
    matches_model_2d_grids_from_start: Aabb2, 150, grids_from_start(), ROOMY;
    matches_model_2d_factor_1_5: Aabb2, 100, factor_1_5(), ROOMY;
    matches_model_2d_dense_small_grids: Aabb2, 100, dense_small_grids(), ROOMY;
    matches_model_2d_growing: Aabb2, 150, growing(), ROOMY;
    matches_model_2d_arena_300: Aabb2, 150, grids_from_start(), 300;
    matches_model_2d_no_arena: Aabb2, 100, default(), 0;
}

/// The generators reach what the properties are about: several grids at
/// once, the unbounded container, growth, refusals of every kind.
#[test]
fn generators_cover_the_interesting_states() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = ops::<Aabb3>(60);
    let (mut max_grids, mut unbounded, mut grew) = (0, 0, false);
    let mut errors: Vec<String> = Vec::new();
    for _ in 0..100 {
        let ops = strategy.new_tree(&mut runner).unwrap().current();
        let mut g = make::hhg::<Aabb3>(CAP, ROOMY, growing());
        let mut m = HhgModel::<Aabb3>::new(CAP, 0, ROOMY);
        for op in &ops {
            let r = m.apply(&mut g, op).unwrap();
            if let (HhgOp::Broad(BroadOp::Insert(..)), Err(e)) = (op, r) {
                errors.push(
                    format!("{e:?}")
                        .split([' ', '{'])
                        .next()
                        .unwrap()
                        .to_owned(),
                );
            }
            let st = g.stats();
            max_grids = max_grids.max(st.grids);
            unbounded = unbounded.max(st.unbounded_objects);
            grew |= st.grid[..st.grids].iter().any(|s| s.cells_per_axis[0] > 4);
        }
    }
    assert!(max_grids >= 4, "at most {max_grids} grids at once");
    assert!(unbounded >= 2, "unbounded container: {unbounded}");
    assert!(grew, "no grid grew");
    for e in [
        "IdOutOfRange",
        "DuplicateId",
        "NonFinite",
        "InvertedBox",
        "OutOfRange",
    ] {
        assert!(
            errors.iter().any(|x| x == e),
            "never refused with {e}: {errors:?}"
        );
    }
}
