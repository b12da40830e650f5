//! Property tests: random operation sequences (build, move, query, clear) on
//! all three strategies and brute force, with `validate()` after every step.

use proptest::prelude::*;
use spatium::{BruteForceNeighbors, Error, NeighborSearch, Validate, Vec3};
use spatium_host::make;
use spatium_host::oracle::{collect_pairs, csr_lists, neighbors_of, within};

#[derive(Clone, Debug)]
enum Op {
    Build {
        pts: Vec<(i8, i8, i8, u8)>,
        scale: f32,
        radius: f32,
    },
    Move {
        deltas: Vec<(i8, i8, i8)>,
        scale: f32,
    },
    Neighbors(u16),
    Within(i8, i8, i8),
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (
            prop::collection::vec((any::<i8>(), any::<i8>(), any::<i8>(), any::<u8>()), 0..60),
            prop_oneof![Just(0.05f32), Just(0.25), Just(1.0), Just(1e3)],
            prop_oneof![Just(0.3f32), Just(1.0), Just(2.5), Just(0.0), Just(-1.0), Just(f32::NAN), Just(1e-3),
                Just(1e-9)],
        )
            .prop_map(|(pts, scale, radius)| Op::Build { pts, scale, radius }),
        3 => (prop::collection::vec((any::<i8>(), any::<i8>(), any::<i8>()), 0..60), prop_oneof![Just(0.01f32), Just(0.1), Just(f32::NAN), Just(1e9)])
            .prop_map(|(deltas, scale)| Op::Move { deltas, scale }),
        2 => any::<u16>().prop_map(Op::Neighbors),
        2 => (any::<i8>(), any::<i8>(), any::<i8>()).prop_map(|(x, y, z)| Op::Within(x, y, z)),
        1 => Just(Op::Clear),
    ]
}

fn lattice(pts: &[(i8, i8, i8, u8)], scale: f32) -> Vec<Vec3> {
    // Small lattices (i8 / 16) make many particles share cells and sit on
    // cell boundaries; the u8 adds sub-lattice jitter.
    pts.iter()
        .map(|&(x, y, z, j)| {
            let f = j as f32 / 2560.0;
            Vec3::new(
                (x / 16) as f32 * scale + f,
                (y / 16) as f32 * scale - f,
                (z / 16) as f32 * scale,
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn random_operation_sequences(ops in prop::collection::vec(op(), 1..25), table_pow in 0u32..8) {
        let table = 1usize << table_pow;
        let cap = 64;
        let mut brute = BruteForceNeighbors::new(vec![Vec3::ZERO; cap]);
        let mut a = make::cell_sorted::<Vec3>(cap, table);
        let mut b = make::bucketed::<Vec3, 64>(cap, table);
        let mut c = make::linked::<Vec3>(cap, table);
        let mut current: Vec<Vec3> = Vec::new();
        for op in ops {
            match op {
                Op::Build { pts, scale, radius } => {
                    let pts = lattice(&pts, scale);
                    let rb = brute.build(&pts, radius);
                    let ra = a.build(&pts, radius);
                    let rbk = b.build(&pts, radius);
                    let rc = c.build(&pts, radius);
                    // The hashes agree with each other; brute force agrees
                    // except that it has no cell range.
                    prop_assert_eq!(ra, rc);
                    prop_assert_eq!(ra, rbk);
                    if ra != Err(Error::OutOfRange) {
                        prop_assert_eq!(ra, rb);
                    } else {
                        prop_assert!(rb.is_ok());
                        // Resynchronise brute force with the unchanged hashes.
                        if !current.is_empty() {
                            brute.build(&current, a.radius()).unwrap();
                        } else {
                            brute.build(&[], 1.0).unwrap();
                        }
                    }
                    if ra.is_ok() {
                        current = pts;
                    }
                }
                Op::Move { deltas, scale } => {
                    if current.is_empty() { continue; }
                    let mut moved = current.clone();
                    for (p, d) in moved.iter_mut().zip(deltas) {
                        p.x += d.0 as f32 * scale;
                        p.y += d.1 as f32 * scale;
                        p.z += d.2 as f32 * scale;
                    }
                    let r = a.radius();
                    let rc = c.update(&moved);
                    match rc {
                        Ok(_) => {
                            a.build(&moved, r).unwrap();
                            b.build(&moved, r).unwrap();
                            brute.build(&moved, r).unwrap();
                            current = moved;
                        }
                        Err(e) => {
                            prop_assert!(matches!(e, Error::NonFinite | Error::OutOfRange), "{e}");
                        }
                    }
                }
                Op::Neighbors(id) => {
                    let n = brute.len();
                    if n == 0 { continue; }
                    let id = id as u32 % n as u32;
                    let want = neighbors_of(&brute, id);
                    prop_assert_eq!(&neighbors_of(&a, id), &want);
                    prop_assert_eq!(&neighbors_of(&b, id), &want);
                    prop_assert_eq!(&neighbors_of(&c, id), &want);
                }
                Op::Within(x, y, z) => {
                    let p = Vec3::new(x as f32 * 0.1, y as f32 * 0.1, z as f32 * 0.1);
                    let want = within(&brute, p);
                    prop_assert_eq!(&within(&a, p), &want);
                    prop_assert_eq!(&within(&b, p), &want);
                    prop_assert_eq!(&within(&c, p), &want);
                }
                Op::Clear => {
                    a.clear();
                    b.clear();
                    c.clear();
                    brute.build(&[], 1.0).unwrap();
                    current.clear();
                }
            }
            a.validate().unwrap();
            b.validate().unwrap();
            c.validate().unwrap();
            brute.validate().unwrap();
            let want = collect_pairs(&brute);
            prop_assert_eq!(&collect_pairs(&a), &want);
            prop_assert_eq!(&collect_pairs(&b), &want);
            prop_assert_eq!(&collect_pairs(&c), &want);
            prop_assert_eq!(csr_lists(&a), csr_lists(&brute));
        }
    }
}
