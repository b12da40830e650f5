//! Every neighbour search of the run-time registry, in 3D or 2D, driven by
//! an `arbitrary` sequence of trait operations (`spatium_host_tests::model::
//! SearchOp`: builds of lattice points, points exactly at the radius, raw
//! bits, bad radii; neighbours, points within, CSR lists with short buffers)
//! and judged after every operation by the shared model (`SearchModel`), as
//! `model_props.rs` judges its proptest-generated sequences.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use spatium::{Point, Vec2, Vec3};
use spatium_host::runtime::{Named, SearchKind};
use spatium_host_tests::model::{SearchModel, SearchOp};
use spatium_host_tests::registry::{self, SEARCH_CAPACITY};

/// At most this many operations per input.
const MAX_OPS: usize = 32;

fn run<P: Point>(kind: SearchKind, u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut t = registry::search::<P>(kind, SEARCH_CAPACITY);
    let mut m = SearchModel::<P>::new(SEARCH_CAPACITY);
    for k in 0..MAX_OPS {
        if u.is_empty() {
            break;
        }
        let op = SearchOp::<P>::arbitrary(u)?;
        if let Err(e) = m.apply(&mut t, &op) {
            panic!("{} op {k}: {e}", registry::search_name::<P>(kind));
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(i) = u.choose_index(SearchKind::NAMES.len()) else {
        return;
    };
    let kind = SearchKind::NAMES[i].1;
    let _ = match u.arbitrary::<bool>() {
        Ok(true) => run::<Vec2>(kind, &mut u),
        _ => run::<Vec3>(kind, &mut u),
    };
});
