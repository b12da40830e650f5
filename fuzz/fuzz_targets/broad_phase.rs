//! Every broad phase of the run-time registry, in 3D or 2D, driven by an
//! `arbitrary` sequence of trait operations (`spatium_host_tests::model::
//! BroadOp`: lattice boxes that coincide and touch, copies, raw-bit and
//! faulty boxes, ids beyond the capacity, `update_many` batches, queries,
//! clears) and judged after every operation by the shared model
//! (`BroadModel`), exactly as the property tests (`model_props.rs`) judge
//! their proptest-generated sequences; its pair checks run the parallel
//! detection too (on `Serial` and on two scoped threads).

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use spatium::{Aabb2, Aabb3};
use spatium_host::boxes::TestBox;
use spatium_host::runtime::{BroadKind, Named};
use spatium_host_tests::model::{BroadModel, BroadOp};
use spatium_host_tests::registry::{self, BROAD_CAPACITY};

/// At most this many operations per input.
const MAX_OPS: usize = 96;

fn run<B: TestBox>(kind: BroadKind, u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut t = registry::broad::<B>(kind, BROAD_CAPACITY);
    let mut m = BroadModel::<B>::new(BROAD_CAPACITY);
    for k in 0..MAX_OPS {
        if u.is_empty() {
            break;
        }
        let op = BroadOp::<B>::arbitrary(u)?;
        if let Err(e) = m.apply(&mut t, &op) {
            panic!("{} op {k}: {e}", registry::broad_name::<B>(kind));
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(i) = u.choose_index(BroadKind::NAMES.len()) else {
        return;
    };
    let kind = BroadKind::NAMES[i].1;
    let _ = match u.arbitrary::<bool>() {
        Ok(true) => run::<Aabb2>(kind, &mut u),
        _ => run::<Aabb3>(kind, &mut u),
    };
});
