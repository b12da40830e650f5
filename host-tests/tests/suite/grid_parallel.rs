//! The sorted grid broad phase's parallel detection
//! (`GridBroadPhase::par_for_each_overlap`) against its serial detection
//! and brute force: every box scenario in 3D and 2D over steps of motion,
//! with and without large boxes; the sinks (their number, each one's pairs
//! and their order) bit-identical for `Serial`, rayon pools of 1, 2, 3 and
//! 8 workers and 3 scoped threads; and a property test over random
//! operation sequences.

use proptest::prelude::*;
use spatium::exec::{Executor, Serial};
use spatium::{Aabb2, Aabb3, BoundingBox, BroadPhase, Error, Point, Validate, Vec3};
use spatium_host::make::{self, VecGridBp};
use spatium_host::oracle::{assert_same_pairs, overlapping_pairs};
use spatium_host::par::{Rayon, Threads};
use spatium_host::scenarios::{BoxScenario, box_scenarios};

/// Every pair of one sink per task, in the structure's order.
type Sinks = Vec<Vec<(u32, u32)>>;

/// A detection on some executor.
type RunFn = Box<dyn Fn(&mut VecGridBp<Aabb3>) -> Sinks>;

fn par_sinks<B: BoundingBox, E: Executor>(g: &mut VecGridBp<B>, exec: &E) -> Sinks {
    let mut sinks: Sinks = vec![Vec::new(); g.overlap_tasks()];
    g.par_for_each_overlap(exec, &mut sinks, |s, a, b| s.push((a, b)))
        .expect("par pairs");
    sinks
}

fn sorted(pairs: impl IntoIterator<Item = (u32, u32)>) -> Vec<(u32, u32)> {
    let mut v: Vec<_> = pairs
        .into_iter()
        .map(|(a, b)| (a.min(b), a.max(b)))
        .collect();
    v.sort_unstable();
    v
}

fn serial<B: BoundingBox>(g: &mut VecGridBp<B>) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    g.for_each_overlap(|a, b| v.push((a, b))).expect("pairs");
    sorted(v)
}

/// `count` boxes `scale` times the scenario's first box, spread over the
/// scenario's bounds, appended to it (a floor, walls, a few big bodies).
fn with_large<B: BoundingBox>(sc: &mut BoxScenario<B>, count: usize, scale: f32) {
    let dim = B::Point::DIM;
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for b in &sc.boxes {
        for a in 0..dim {
            lo[a] = lo[a].min(b.min().coord(a));
            hi[a] = hi[a].max(b.max().coord(a));
        }
    }
    let edge = sc.boxes[0].longest_edge() * scale;
    for k in 0..count {
        let t = (k as f32 + 0.5) / count as f32;
        let at = |a: usize| lo[a] + t * (hi[a] - lo[a]) * (1.0 - 0.1 * a as f32);
        let p = B::Point::from_fn(at);
        let q = B::Point::from_fn(|a| at(a) + edge);
        sc.boxes.push(B::try_new(p, q).expect("large box"));
    }
}

/// The grid stepped through a scenario (moved by `update_many` and by
/// `par_update_all` in turn): after every step the parallel
/// detection on `exec` gives the serial pairs; at the first and last step
/// brute force agrees too.
fn lockstep<B: BoundingBox, E: Executor>(
    sc: &mut BoxScenario<B>,
    steps: usize,
    exec: &E,
    what: &str,
) {
    let n = sc.boxes.len();
    let mut g = make::grid_bp::<B>(n);
    for (i, x) in sc.boxes.iter().enumerate() {
        g.insert(i as u32, *x).unwrap();
    }
    for step in 0..steps {
        let what = format!("{what} {} step {step}", sc.name);
        if step > 0 {
            // The boxes move: by `update_many` and by `par_update_all`.
            sc.step();
            if step % 2 == 0 {
                let ups: Vec<(u32, B)> = sc
                    .boxes
                    .iter()
                    .enumerate()
                    .map(|(i, b)| (i as u32, *b))
                    .collect();
                g.update_many(&ups).unwrap();
            } else {
                g.par_update_all(exec, &sc.boxes).unwrap();
            }
            for (i, b) in sc.boxes.iter().enumerate() {
                assert_eq!(g.get(i as u32), Some(*b), "{what}: box {i}");
            }
        }
        let got = sorted(par_sinks(&mut g, exec).into_iter().flatten());
        let want = serial(&mut g);
        assert_same_pairs(&got, &want, &what);
        if step == 0 || step + 1 == steps {
            assert_same_pairs(&want, &overlapping_pairs(&sc.boxes), &what);
        }
        g.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}

#[test]
fn every_scenario_3d_matches_serial_and_brute_force() {
    let exec = Rayon::new(3).unwrap();
    for mut sc in box_scenarios::<Aabb3>(40_000, 11) {
        lockstep(&mut sc, 3, &exec, "3d");
    }
}

#[test]
fn every_scenario_2d_matches_serial_and_brute_force() {
    let exec = Threads::new(2);
    for mut sc in box_scenarios::<Aabb2>(40_000, 12) {
        lockstep(&mut sc, 3, &exec, "2d");
    }
}

/// Large boxes (kept out of the grid, swept in tasks of their own) among
/// the scenarios' boxes: a few, as many as the allowance takes, and more
/// (then none is large).
#[test]
fn large_boxes_match_serial_and_brute_force() {
    let exec = Rayon::new(4).unwrap();
    for (count, scale) in [(5, 30.0), (600, 6.0), (800, 6.0)] {
        let mut sc = box_scenarios::<Aabb3>(30_000, 13).swap_remove(0);
        with_large(&mut sc, count, scale);
        lockstep(&mut sc, 2, &exec, &format!("{count} large 3d"));
        let mut sc = box_scenarios::<Aabb2>(30_000, 14).swap_remove(0);
        with_large(&mut sc, count, scale);
        lockstep(&mut sc, 2, &exec, &format!("{count} large 2d"));
    }
}

fn rayon_sinks(threads: usize) -> RunFn {
    Box::new(move |g| par_sinks(g, &Rayon::new(threads).unwrap()))
}

/// The sinks (their number, each one's pairs and their order) are the same
/// for every executor and worker count, over steps of motion, with large
/// boxes too.
#[test]
fn sinks_are_bit_identical_for_every_executor() {
    let n = 36_000;
    let execs: Vec<(&str, RunFn)> = vec![
        ("serial", Box::new(|g| par_sinks(g, &Serial))),
        ("rayon 1", rayon_sinks(1)),
        ("rayon 2", rayon_sinks(2)),
        ("rayon 3", rayon_sinks(3)),
        ("rayon 8", rayon_sinks(8)),
        ("threads 3", Box::new(|g| par_sinks(g, &Threads::new(3)))),
    ];
    let mut scenarios = box_scenarios::<Aabb3>(n, 5);
    let mut floor = scenarios[0].clone();
    with_large(&mut floor, 40, 20.0);
    scenarios.push(floor);
    for sc0 in scenarios {
        let mut reference: Option<Vec<Sinks>> = None;
        for (name, run) in &execs {
            let mut sc = sc0.clone();
            let mut g = make::grid_bp::<Aabb3>(sc.boxes.len());
            for (i, x) in sc.boxes.iter().enumerate() {
                g.insert(i as u32, *x).unwrap();
            }
            let mut all = Vec::new();
            for _ in 0..3 {
                sc.step();
                for (i, b) in sc.boxes.iter().enumerate() {
                    g.update(i as u32, *b).unwrap();
                }
                let sinks = run(&mut g);
                assert_eq!(sinks.len(), g.overlap_tasks());
                all.push(sinks);
            }
            match &reference {
                None => {
                    assert!(
                        all[0].iter().filter(|s| !s.is_empty()).count() > 1,
                        "{}: the pairs should spread over several sinks",
                        sc0.name
                    );
                    reference = Some(all);
                }
                Some(r) => assert!(*r == all, "{} on {name}: sinks differ", sc0.name),
            }
        }
    }
}

#[test]
fn too_few_sinks_are_refused_and_nothing_is_called() {
    let mut g = make::grid_bp::<Aabb3>(50_000);
    for i in 0..50_000u32 {
        let x = (i % 100) as f32;
        let y = (i / 100 % 100) as f32;
        let z = (i / 10_000) as f32;
        let b = Aabb3::new(Vec3::new(x, y, z), Vec3::new(x + 1.0, y + 1.0, z + 1.0)).unwrap();
        g.insert(i, b).unwrap();
    }
    let tasks = g.overlap_tasks();
    assert!(tasks > 2, "{tasks}");
    let mut sinks = vec![0u32; tasks - 1];
    let exec = Rayon::new(2).unwrap();
    assert_eq!(
        g.par_for_each_overlap(&exec, &mut sinks, |s, _, _| *s += 1),
        Err(Error::BufferTooSmall {
            needed: tasks,
            available: tasks - 1
        })
    );
    assert!(sinks.iter().all(|&s| s == 0));
    let mut sinks = vec![0u64; tasks];
    g.par_for_each_overlap(&exec, &mut sinks, |s, _, _| *s += 1)
        .unwrap();
    let mut want = 0u64;
    g.for_each_overlap(|_, _| want += 1).unwrap();
    assert_eq!(sinks.iter().sum::<u64>(), want);
    // Unit cubes on a unit lattice touch 13 forward neighbours each, less
    // at the faces.
    assert!(want > 10 * 50_000, "{want}");
}

/// `par_update_all` checks every box before it writes any: a bad box or
/// a stored id past the input changes nothing, on every executor.
#[test]
fn par_update_all_refuses_bad_input_and_changes_nothing() {
    let n = 40_000;
    let sc = box_scenarios::<Aabb3>(n, 21).swap_remove(0);
    let mut g = make::grid_bp::<Aabb3>(n + 10);
    for (i, b) in sc.boxes.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    let moved: Vec<Aabb3> = sc
        .boxes
        .iter()
        .map(|b| {
            Aabb3::new(
                b.min + Vec3::new(0.5, 0.0, 0.0),
                b.max + Vec3::new(0.5, 0.0, 0.0),
            )
            .unwrap()
        })
        .collect();
    let exec = Rayon::new(3).unwrap();
    // An inverted box (built field by field) at a late id.
    let mut bad = moved.clone();
    bad[33_333] = Aabb3 {
        min: Vec3::new(1.0, 0.0, 0.0),
        max: Vec3::new(0.0, 1.0, 1.0),
    };
    let e = g.par_update_all(&exec, &bad).unwrap_err();
    assert!(matches!(e, Error::InvertedBox | Error::NonFinite), "{e:?}");
    assert_eq!(g.update_all(&bad), Err(e));
    // Too short: the stored ids past the input.
    assert_eq!(
        g.par_update_all(&exec, &moved[..n - 7]),
        Err(Error::LengthMismatch {
            expected: n,
            got: n - 7
        })
    );
    for (i, b) in sc.boxes.iter().enumerate() {
        assert_eq!(g.get(i as u32), Some(*b), "box {i} changed");
    }
    // Longer input than the ids stored: the extra entries are ignored.
    let mut longer = moved.clone();
    longer.extend_from_slice(&moved[..5]);
    g.par_update_all(&exec, &longer).unwrap();
    for (i, b) in moved.iter().enumerate() {
        assert_eq!(g.get(i as u32), Some(*b));
    }
    assert_eq!(g.get(n as u32), None);
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u32, [f32; 3], f32),
    Remove(u32),
    Move(u32, [f32; 3]),
    Detect,
}

fn op() -> impl Strategy<Value = Op> {
    let id = 0u32..3000;
    let p = [0.0f32..60.0, 0.0f32..60.0, 0.0f32..60.0];
    prop_oneof![
        4 => (id.clone(), p.clone(), prop_oneof![3 => 0.0f32..2.0, 1 => 5.0f32..40.0])
            .prop_map(|(i, p, e)| Op::Insert(i, p, e)),
        1 => id.clone().prop_map(Op::Remove),
        2 => (id, p).prop_map(|(i, p)| Op::Move(i, p)),
        1 => Just(Op::Detect),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random inserts (some long boxes), removals and moves, with
    /// detections between them: the parallel detection on two and three
    /// workers gives the serial pairs and brute force's, and the same sinks
    /// on both.
    #[test]
    fn random_operations_match_serial_and_brute_force(
        ops in proptest::collection::vec(op(), 1..400),
        bulk in 0usize..2500,
    ) {
        let mut g = make::grid_bp::<Aabb3>(3000);
        let mut live: Vec<Option<Aabb3>> = vec![None; 3000];
        // A bulk of unit boxes first, so the tasks' sort runs.
        for i in 0..bulk as u32 {
            let f = i as f32;
            let b = Aabb3::new(
                Vec3::new((f * 0.37) % 60.0, (f * 0.61) % 60.0, (f * 0.13) % 60.0),
                Vec3::new((f * 0.37) % 60.0 + 1.0, (f * 0.61) % 60.0 + 1.0, (f * 0.13) % 60.0 + 1.0),
            ).unwrap();
            g.insert(i, b).unwrap();
            live[i as usize] = Some(b);
        }
        let two = Rayon::new(2).unwrap();
        let three = Threads::new(3);
        let check = |g: &mut VecGridBp<Aabb3>, live: &[Option<Aabb3>]| {
            let a = par_sinks(g, &two);
            let b = par_sinks(g, &three);
            prop_assert!(a == b, "sinks differ between executors");
            let got = sorted(a.into_iter().flatten());
            let want = serial(g);
            prop_assert_eq!(&got, &want);
            let boxes: Vec<(u32, Aabb3)> = live
                .iter()
                .enumerate()
                .filter_map(|(i, b)| b.map(|b| (i as u32, b)))
                .collect();
            let mut brute = Vec::new();
            for (k, &(i, x)) in boxes.iter().enumerate() {
                for &(j, y) in &boxes[k + 1..] {
                    if x.overlaps(&y) {
                        brute.push((i.min(j), i.max(j)));
                    }
                }
            }
            brute.sort_unstable();
            prop_assert_eq!(&got, &brute);
            Ok(())
        };
        for op in ops {
            match op {
                Op::Insert(i, p, e) => {
                    let b = Aabb3::new(Vec3::new(p[0], p[1], p[2]), Vec3::new(p[0] + e, p[1] + e, p[2] + e)).unwrap();
                    if g.insert(i, b).is_ok() {
                        live[i as usize] = Some(b);
                    }
                }
                Op::Remove(i) => {
                    if g.remove(i).is_ok() {
                        live[i as usize] = None;
                    }
                }
                Op::Move(i, p) => {
                    if let Some(old) = live[i as usize] {
                        let e = old.longest_edge();
                        let b = Aabb3::new(Vec3::new(p[0], p[1], p[2]), Vec3::new(p[0] + e, p[1] + e, p[2] + e)).unwrap();
                        g.update(i, b).unwrap();
                        live[i as usize] = Some(b);
                    }
                }
                Op::Detect => check(&mut g, &live)?,
            }
        }
        check(&mut g, &live)?;
    }
}
