//! The shared operation models ([`spatium_host_tests::model`]) over every
//! kind of the run-time registry, 3D and 2D: random broad-phase operation
//! sequences (lattice boxes that coincide and touch, copies, bad and exotic
//! boxes, out-of-range ids, `update_many` batches, queries, clears) and
//! random neighbour-search operation sequences (builds with exact-radius
//! distances, bad radii and points, neighbours, points within, CSR lists with
//! short buffers).

extern crate alloc;

use proptest::prelude::*;
use spatium::{Aabb2, Aabb3, Vec2, Vec3};
use spatium_host::boxes::TestBox;
use spatium_host_tests::model::{self, BroadModel, BroadOp, SearchModel, SearchOp};
use spatium_host_tests::registry::{self, BROAD_CAPACITY, SEARCH_CAPACITY};

fn run_broad<B: TestBox>(ops: &[BroadOp<B>]) -> Result<(), TestCaseError> {
    // Eager: pairs compared after every op. Lazy: only at `Overlaps` and at
    // the end, so lazily rebuilt structures accumulate changes.
    for eager in [true, false] {
        for kind in registry::broad_kinds() {
            let mut t = registry::broad::<B>(kind, BROAD_CAPACITY);
            let mut m = BroadModel::new(BROAD_CAPACITY);
            m.eager = eager;
            m.run(&mut t, ops).map_err(|e| {
                let lazy = if eager { "" } else { " (lazy)" };
                TestCaseError::fail(format!("{}{lazy}: {e}", registry::broad_name::<B>(kind)))
            })?;
        }
    }
    Ok(())
}

fn run_search<P: spatium::Point>(ops: &[SearchOp<P>]) -> Result<(), TestCaseError> {
    for kind in registry::search_kinds() {
        let mut t = registry::search::<P>(kind, SEARCH_CAPACITY);
        SearchModel::new(SEARCH_CAPACITY)
            .run(&mut t, ops)
            .map_err(|e| {
                TestCaseError::fail(format!("{}: {e}", registry::search_name::<P>(kind)))
            })?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn broad_phase_3d(ops in model::broad_ops::<Aabb3>(50)) {
        run_broad(&ops)?;
    }

    #[test]
    fn broad_phase_2d(ops in model::broad_ops::<Aabb2>(50)) {
        run_broad(&ops)?;
    }

    #[test]
    fn neighbor_search_3d(ops in prop::collection::vec(model::search_op::<Vec3>(28), 1..20)) {
        run_search(&ops)?;
    }

    #[test]
    fn neighbor_search_2d(ops in prop::collection::vec(model::search_op::<Vec2>(28), 1..20)) {
        run_search(&ops)?;
    }
}

/// The generators reach what the models are about, on every kind: every
/// trait error, successful inserts (most of them), structure-specific
/// refusals only now and then, builds that succeed and fail.
#[test]
fn generators_reach_every_outcome() {
    use alloc::collections::BTreeMap;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let name = |r: &Result<(), spatium::Error>| match r {
        Ok(()) => "Ok".to_owned(),
        Err(e) => format!("{e:?}")
            .split([' ', '{'])
            .next()
            .unwrap()
            .to_owned(),
    };
    for kind in registry::broad_kinds() {
        let mut runner = TestRunner::deterministic();
        let strategy = model::broad_ops::<Aabb3>(50);
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for _ in 0..60 {
            let ops = strategy.new_tree(&mut runner).unwrap().current();
            let mut t = registry::broad::<Aabb3>(kind, BROAD_CAPACITY);
            let mut m = BroadModel::new(BROAD_CAPACITY);
            for op in &ops {
                let r = m.apply(&mut t, op).unwrap();
                if matches!(op, BroadOp::Insert(..)) {
                    *seen.entry(format!("insert {}", name(&r))).or_default() += 1;
                } else {
                    *seen.entry(name(&r)).or_default() += 1;
                }
            }
        }
        let kind = registry::broad_name::<Aabb3>(kind);
        println!("{kind}: {seen:?}");
        for e in [
            "IdOutOfRange",
            "DuplicateId",
            "UnknownId",
            "NonFinite",
            "InvertedBox",
        ] {
            assert!(
                seen.keys().any(|k| k.ends_with(e)),
                "{kind}: never {e}: {seen:?}"
            );
        }
        let ok = seen.get("insert Ok").copied().unwrap_or(0);
        let specific: usize = [
            "insert OutOfRange",
            "insert CapacityExceeded",
            "insert BucketFull",
        ]
        .iter()
        .filter_map(|k| seen.get(*k))
        .sum();
        assert!(ok > 1000 && specific * 5 < ok, "{kind}: {seen:?}");
    }
    for kind in registry::search_kinds() {
        let mut runner = TestRunner::deterministic();
        let strategy = prop::collection::vec(model::search_op::<Vec3>(28), 1..20);
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for _ in 0..60 {
            let ops = strategy.new_tree(&mut runner).unwrap().current();
            let mut t = registry::search::<Vec3>(kind, SEARCH_CAPACITY);
            let mut m = SearchModel::new(SEARCH_CAPACITY);
            for op in &ops {
                let r = m.apply(&mut t, op).unwrap();
                if matches!(op, SearchOp::Build(..)) {
                    *seen.entry(format!("build {}", name(&r))).or_default() += 1;
                } else {
                    *seen.entry(name(&r)).or_default() += 1;
                }
            }
        }
        let kind = registry::search_name::<Vec3>(kind);
        println!("{kind}: {seen:?}");
        for e in [
            "build Ok",
            "build InvalidRadius",
            "build CapacityExceeded",
            "build NonFinite",
            "UnknownId",
            "BufferTooSmall",
        ] {
            assert!(seen.contains_key(e), "{kind}: never {e}: {seen:?}");
        }
    }
}
