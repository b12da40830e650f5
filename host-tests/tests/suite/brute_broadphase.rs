//! The brute-force broad phase (the oracle of every later broad phase),
//! beyond what the shared model runs on every kind (`model_props.rs`,
//! `conformance.rs`): the box scenarios at a few hundred boxes over steps,
//! and a saved regression (a remove after inserts of coincident point
//! boxes, from the retired per-file proptest).

use spatium::{Aabb2, Aabb3, BroadPhase, BruteForceBroadPhase};
use spatium_host::boxes::TestBox;
use spatium_host::make;
use spatium_host::scenarios::box_scenarios;
use spatium_host_tests::model::{BoxSpec, BroadModel, BroadOp};

fn scenarios<B: TestBox>(n: usize, seed: u64) {
    for mut sc in box_scenarios::<B>(n, seed) {
        let mut bp = BruteForceBroadPhase::new(make::brute_slots::<B>(sc.boxes.len()));
        let mut m = BroadModel::<B>::new(sc.boxes.len());
        for (i, b) in sc.boxes.iter().enumerate() {
            // Inserted unchecked; the model check follows the first step.
            bp.insert(i as u32, *b).unwrap();
            m.slots[i] = Some(*b);
        }
        m.check(&mut bp)
            .unwrap_or_else(|e| panic!("{}: {e}", sc.name));
        assert!(!m.pairs().is_empty(), "{}: no pairs", sc.name);
        for _ in 0..3 {
            sc.step();
            let list = (0..sc.boxes.len())
                .map(|i| (i as u32, BoxSpec::Exact(sc.boxes[i])))
                .collect();
            let r = m.apply(&mut bp, &BroadOp::UpdateMany(list));
            assert_eq!(r, Ok(Ok(())), "{}", sc.name);
        }
    }
}

#[test]
fn box_scenarios_over_steps() {
    scenarios::<Aabb3>(600, 21);
    // 2D scenarios run through the same code path.
    scenarios::<Aabb2>(400, 22);
}

#[test]
fn remove_after_coincident_points() {
    let point = BoxSpec::Exact(Aabb3::raw([0.0; 3], [0.0; 3]));
    let mut bp = BruteForceBroadPhase::new(make::brute_slots::<Aabb3>(32));
    let ops = [
        BroadOp::Insert(7, point),
        BroadOp::Insert(8, point),
        BroadOp::Insert(0, point),
        BroadOp::Insert(1, point),
        BroadOp::Remove(7),
    ];
    BroadModel::new(32).run(&mut bp, &ops).unwrap();
}
