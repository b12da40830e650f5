//! Periodic domains under libFuzzer. An input is a [`Case`]: for now one
//! kind, `Broad`, which drives `spatium::PeriodicBroadPhase` over an inner
//! broad phase of the run-time registry (3D or 2D, any mask of periodic
//! axes) with an `arbitrary` sequence of operations
//! (`spatium_host_tests::periodic_model::PeriodicOp`: inserts, updates,
//! `update_many` batches, removals, queries, pairs, clears; boxes too long
//! for the period, non-finite, inverted, far away; duplicate and
//! out-of-range ids), judged after every operation by the periodic
//! brute-force oracle (`PeriodicOracle`), exactly as the property tests
//! (`periodic_broad.rs`) judge theirs. A neighbour-search case can be added
//! as another variant.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use spatium::{Aabb2, Aabb3, Point};
use spatium::{PeriodicBroadPhase, PeriodicSlot};
use spatium_host::boxes::TestBox;
use spatium_host::runtime::{BroadKind, Named};
use spatium_host_tests::periodic_model::{self, CAPACITY, PeriodicOp, PeriodicOracle};
use spatium_host_tests::registry;

/// At most this many operations per input.
const MAX_OPS: usize = 64;

/// What one input exercises.
#[derive(Arbitrary, Debug)]
enum Case {
    /// The periodic broad phase: inner kind (index into
    /// `BroadKind::NAMES`), 3D or 2D, the mask of periodic axes, and the
    /// operations.
    Broad {
        kind: u8,
        three_d: bool,
        mask: u8,
        ops: Vec<PeriodicOp>,
    },
}

fn broad<B: TestBox>(kind: BroadKind, mask: u8, ops: &[PeriodicOp]) {
    let domain = periodic_model::domain::<B::Point>(mask);
    let inner = registry::broad::<B>(kind, CAPACITY << B::Point::DIM);
    let Ok(mut t) =
        PeriodicBroadPhase::new(inner, domain, vec![PeriodicSlot::<B>::EMPTY; CAPACITY])
    else {
        panic!("{}: construction refused", registry::broad_name::<B>(kind));
    };
    let mut o = PeriodicOracle::<B>::new(domain, CAPACITY);
    for (k, op) in ops.iter().take(MAX_OPS).enumerate() {
        if let Err(e) = o.apply(&mut t, op) {
            panic!(
                "{} mask {mask:#b} op {k}: {e}",
                registry::broad_name::<B>(kind)
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(case) = Case::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    match case {
        Case::Broad {
            kind,
            three_d,
            mask,
            ops,
        } => {
            let kind = BroadKind::NAMES[usize::from(kind) % BroadKind::NAMES.len()].1;
            if three_d {
                broad::<Aabb3>(kind, mask, &ops);
            } else {
                broad::<Aabb2>(kind, mask, &ops);
            }
        }
    }
});
