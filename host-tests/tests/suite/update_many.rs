//! `BroadPhase::update_many`, the bulk update, on every broad phase (the
//! run-time registry of `spatium_host::runtime::BroadKind`) and every box
//! scenario, 3D and 2D: a batch with an unknown id, an id beyond the
//! capacity or a bad box changes nothing; a good batch ends exactly where
//! the same updates one by one end, and the pairs equal brute force.

use spatium::{Aabb2, Aabb3, BoundingBox, BroadPhase, Error, Validate};
use spatium_host::oracle::{collect_box_pairs, overlapping_pairs};
use spatium_host::runtime::{AnyBroad, BroadKind, Named};
use spatium_host::scenarios::box_scenarios;

fn snapshot<B: BoundingBox>(bp: &mut AnyBroad<B>, n: usize) -> (Vec<Option<B>>, Vec<(u32, u32)>) {
    let gets = (0..n as u32).map(|id| bp.get(id)).collect();
    (gets, collect_box_pairs(bp))
}

fn check<B: BoundingBox + PartialEq>() {
    let mut applied = 0;
    let mut runs = 0;
    for mut sc in box_scenarios::<B>(300, 41) {
        for &(name, kind) in BroadKind::NAMES {
            runs += 1;
            let n = sc.boxes.len();
            let what = format!("{name} on {}", sc.name);
            // Both structures are sized for the boxes before the step.
            let original = sc.boxes.clone();
            let mut bp = AnyBroad::new(kind, &original, 1.0).expect(&what);
            for (id, b) in sc.boxes.iter().enumerate() {
                bp.insert(id as u32, *b).expect(&what);
            }
            // One id left out, so that an unknown id can be named.
            let gone = (n - 1) as u32;
            bp.remove(gone).expect(&what);
            sc.step();
            let updates: Vec<(u32, B)> = (0..gone).map(|id| (id, sc.boxes[id as usize])).collect();
            let before = snapshot(&mut bp, n);

            // Bad batches change nothing, whichever element is bad.
            let nan = B::NAN;
            let mut bad = updates.clone();
            bad.push((gone, sc.boxes[0]));
            assert_eq!(
                bp.update_many(&bad),
                Err(Error::UnknownId { id: gone }),
                "{what}"
            );
            let far = bp.capacity() as u32;
            bad[updates.len()] = (far, sc.boxes[0]);
            assert_eq!(
                bp.update_many(&bad),
                Err(Error::IdOutOfRange { id: far }),
                "{what}"
            );
            bad[updates.len()] = (0, nan);
            assert_eq!(bp.update_many(&bad), Err(Error::NonFinite), "{what}");
            assert!(
                snapshot(&mut bp, n) == before,
                "{what}: a refused batch changed something"
            );
            bp.validate().unwrap_or_else(|c| panic!("{what}: {c}"));

            // A good batch ends where the same updates one by one end. The
            // hashes' pools are sized for the boxes before the step (no
            // headroom), so a moved box may not fit: then both stop at the
            // same element with the same error, nothing stored is lost.
            let bulk = bp.update_many(&updates);
            bp.validate().unwrap_or_else(|c| panic!("{what}: {c}"));
            let mut one_by_one = AnyBroad::new(kind, &original, 1.0).expect(&what);
            for (id, b) in before.0.iter().enumerate() {
                if let Some(b) = b {
                    one_by_one.insert(id as u32, *b).expect(&what);
                }
            }
            let mut seq = Ok(());
            for &(id, b) in &updates {
                if let Err(e) = one_by_one.update(id, b) {
                    seq = Err(e);
                    break;
                }
            }
            assert_eq!(bulk, seq, "{what}: bulk and one by one end differently");
            let after = snapshot(&mut bp, n);
            assert!(
                after == snapshot(&mut one_by_one, n),
                "{what}: bulk != one by one"
            );
            assert_eq!(
                after.0.iter().flatten().count(),
                n - 1,
                "{what}: a box was lost"
            );
            match bulk {
                Ok(()) => {
                    let want = overlapping_pairs(&sc.boxes[..n - 1]);
                    assert_eq!(after.1, want, "{what}: pairs after the bulk update");
                    applied += 1;
                }
                Err(e) => assert!(
                    matches!(e, Error::CapacityExceeded { .. })
                        && matches!(kind, BroadKind::Hierarchical | BroadKind::Multilevel),
                    "{what}: {e}"
                ),
            }
        }
    }
    // Every run of the grid, the kd-tree and brute force applies its batch.
    assert!(
        applied >= runs * 3 / 5,
        "{applied} of {runs} batches applied"
    );
}

#[test]
fn update_many_3d() {
    check::<Aabb3>();
}

#[test]
fn update_many_2d() {
    check::<Aabb2>();
}
