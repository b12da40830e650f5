//! The hierarchical hash grid's parallel forms (`par_update_all`,
//! `par_for_each_overlap`) against its serial ones and brute force: every
//! box scenario in 3D and 2D over several steps of motion, both update
//! strategies; the sinks bit-identical for `Serial`, rayon pools of 1, 2, 3
//! and 8 workers and 3 scoped threads; the structure after a parallel
//! update identical to the one after `update_all` (same serial pair order,
//! same stats); and a property test over random operation sequences.

use proptest::prelude::*;
use spatium::exec::{Executor, Serial};
use spatium::{
    Aabb2, Aabb3, BoundingBox, BroadPhase, Error, HhgConfig, Inspect, Point, UpdateStrategy,
    Validate, Vec3,
};
use spatium_host::make::{self, VecHhg};
use spatium_host::oracle::{assert_same_pairs, overlapping_pairs};
use spatium_host::par::{Rayon, Threads};
use spatium_host::scenarios::box_scenarios;

/// Every pair of one sink per task, in the structure's order.
type Sinks = Vec<Vec<(u32, u32)>>;

/// One step (parallel update, then parallel pairs) on some executor.
type StepFn = Box<dyn Fn(&mut VecHhg<Aabb3>, &[Aabb3]) -> Sinks>;

fn par_sinks<B: BoundingBox, E: Executor>(g: &mut VecHhg<B>, exec: &E) -> Sinks {
    let mut sinks: Sinks = vec![Vec::new(); g.overlap_tasks()];
    g.par_for_each_overlap(exec, &mut sinks, |s, a, b| s.push((a, b)))
        .expect("par pairs");
    sinks
}

/// The serial detection's pairs in its own order (a fingerprint of the
/// whole state: cell lists, records and their order).
fn serial_order<B: BoundingBox>(g: &mut VecHhg<B>) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    g.for_each_overlap(|a, b| v.push((a, b))).expect("pairs");
    v
}

fn sorted(pairs: impl IntoIterator<Item = (u32, u32)>) -> Vec<(u32, u32)> {
    let mut v: Vec<_> = pairs
        .into_iter()
        .map(|(a, b)| (a.min(b), a.max(b)))
        .collect();
    v.sort_unstable();
    v
}

/// Two copies of one grid step the scenario together, one with
/// `update_all` and `for_each_overlap`, one with `par_update_all` (on
/// `exec`) and `par_for_each_overlap`; after every step the pair sets
/// agree, and the serial detection of both gives the same pairs in the same
/// order; at the first and last step brute force agrees too.
fn lockstep<B: BoundingBox, E: Executor>(
    n: usize,
    steps: usize,
    cfg: HhgConfig,
    strategy: UpdateStrategy,
    exec: &E,
    what: &str,
) {
    for mut sc in box_scenarios::<B>(n, 11) {
        let arena = 2 * VecHhg::<B>::arena_words_for(n, &cfg) + (1 << 16);
        let mut a = make::hhg::<B>(n, arena, cfg);
        let mut b = make::hhg::<B>(n, arena, cfg);
        for (i, x) in sc.boxes.iter().enumerate() {
            a.insert(i as u32, *x).unwrap();
            b.insert(i as u32, *x).unwrap();
        }
        for step in 0..steps {
            let what = format!("{what} {} step {step}", sc.name);
            sc.step();
            a.update_all(&sc.boxes, strategy).unwrap();
            b.par_update_all(exec, &sc.boxes, strategy).unwrap();
            b.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(a.stats(), b.stats(), "{what}: stats");
            let want = sorted(serial_order(&mut a));
            let got = sorted(par_sinks(&mut b, exec).into_iter().flatten());
            assert_same_pairs(&got, &want, &what);
            if step == 0 || step + 1 == steps {
                assert_same_pairs(&want, &overlapping_pairs(&sc.boxes), &what);
            }
            // Same state: the serial walk of both is the same sequence.
            assert_eq!(serial_order(&mut a), serial_order(&mut b), "{what}: order");
        }
    }
}

#[test]
fn every_scenario_3d_matches_serial_and_brute_force() {
    let exec = Rayon::new(3).unwrap();
    for strategy in [
        UpdateStrategy::Incremental,
        UpdateStrategy::ClearAndReinsert,
    ] {
        lockstep::<Aabb3, _>(
            20_000,
            4,
            HhgConfig::DEFAULT,
            strategy,
            &exec,
            &format!("3d {strategy:?}"),
        );
    }
}

#[test]
fn every_scenario_2d_matches_serial_and_brute_force() {
    let exec = Threads::new(2);
    lockstep::<Aabb2, _>(
        20_000,
        4,
        HhgConfig::DEFAULT,
        UpdateStrategy::Incremental,
        &exec,
        "2d",
    );
}

/// Small grids that grow while boxes move between levels: the parallel
/// update takes its serial moves and must still end identical.
#[test]
fn growing_grids_and_level_changes_match_serial() {
    let cfg = HhgConfig::DEFAULT
        .with_initial_cells_log2(2)
        .unwrap()
        .with_small_n_threshold(0);
    let exec = Rayon::new(2).unwrap();
    lockstep::<Aabb3, _>(
        12_000,
        3,
        cfg,
        UpdateStrategy::Incremental,
        &exec,
        "growing",
    );
}

/// Many steps: the parallel detection sorts the records (by tasks over the
/// grids' cells) whenever the serial one would, into the same order, for
/// one grid and for several (the scenarios' varied sizes), in 3D and 2D.
#[test]
fn record_sorts_match_serial_over_many_steps() {
    let exec = Rayon::new(3).unwrap();
    lockstep::<Aabb3, _>(
        6_000,
        12,
        HhgConfig::DEFAULT,
        UpdateStrategy::Incremental,
        &exec,
        "sorts 3d",
    );
    lockstep::<Aabb2, _>(
        6_000,
        12,
        HhgConfig::DEFAULT,
        UpdateStrategy::Incremental,
        &Serial,
        "sorts 2d",
    );
}

/// The sinks (their number, each one's pairs and their order) are the same
/// for every executor and worker count, over several steps of motion.
#[test]
fn sinks_are_bit_identical_for_every_executor() {
    let n = 30_000;
    let execs: Vec<(&str, StepFn)> = vec![
        (
            "serial",
            Box::new(|g, bx| {
                g.par_update_all(&Serial, bx, UpdateStrategy::Incremental)
                    .unwrap();
                par_sinks(g, &Serial)
            }),
        ),
        ("rayon 1", rayon_run(1)),
        ("rayon 2", rayon_run(2)),
        ("rayon 3", rayon_run(3)),
        ("rayon 8", rayon_run(8)),
        (
            "threads 3",
            Box::new(|g, bx| {
                let e = Threads::new(3);
                g.par_update_all(&e, bx, UpdateStrategy::Incremental)
                    .unwrap();
                par_sinks(g, &e)
            }),
        ),
    ];
    for sc0 in box_scenarios::<Aabb3>(n, 5) {
        let cfg = HhgConfig::DEFAULT;
        let arena = 2 * VecHhg::<Aabb3>::arena_words_for(n, &cfg) + (1 << 16);
        let mut reference: Option<Vec<Sinks>> = None;
        for (name, run) in &execs {
            let mut sc = sc0.clone();
            let mut g = make::hhg::<Aabb3>(n, arena, cfg);
            for (i, x) in sc.boxes.iter().enumerate() {
                g.insert(i as u32, *x).unwrap();
            }
            let mut all = Vec::new();
            for _ in 0..3 {
                sc.step();
                all.push(run(&mut g, &sc.boxes));
            }
            if sc.name.starts_with("moving_cubes") {
                assert!(all[0].len() > 4, "{}: several tasks", sc.name);
            }
            match &reference {
                None => reference = Some(all),
                Some(r) => assert!(r == &all, "{name} differs from serial on {}", sc.name),
            }
        }
    }
}

fn rayon_run(threads: usize) -> StepFn {
    let e = Rayon::new(threads).unwrap();
    Box::new(move |g, bx| {
        g.par_update_all(&e, bx, UpdateStrategy::Incremental)
            .unwrap();
        par_sinks(g, &e)
    })
}

/// Unbounded objects and too-large boxes: their pairs are split over the
/// tasks and still complete; the errors are `update_all`'s, nothing moved.
#[test]
fn unbounded_objects_and_errors() {
    let n = 9_000;
    let mut sc = spatium_host::scenarios::moving_cubes::<Aabb3>(n, 3);
    let cfg = HhgConfig::DEFAULT;
    let arena = 2 * VecHhg::<Aabb3>::arena_words_for(n + 2, &cfg) + (1 << 16);
    let mut g = make::hhg::<Aabb3>(n + 2, arena, cfg);
    for (i, x) in sc.boxes.iter().enumerate() {
        g.insert(i as u32, *x).unwrap();
    }
    let inf = f32::INFINITY;
    let floor = Aabb3 {
        min: Vec3::new(-inf, -inf, -inf),
        max: Vec3::new(inf, inf, 3.0),
    };
    g.insert_unbounded(n as u32, floor).unwrap();
    let wall = Aabb3 {
        min: Vec3::new(-inf, -inf, -inf),
        max: Vec3::new(2.0, inf, inf),
    };
    g.insert_unbounded(n as u32 + 1, wall).unwrap();
    let exec = Rayon::new(3).unwrap();
    let mut all = sc.boxes.clone();
    all.push(floor);
    all.push(wall);
    for step in 0..3 {
        sc.step();
        all[..n].copy_from_slice(&sc.boxes);
        g.par_update_all(&exec, &all, UpdateStrategy::Incremental)
            .unwrap();
        let got = sorted(par_sinks(&mut g, &exec).into_iter().flatten());
        let mut want = overlapping_pairs(&sc.boxes);
        for (u, bu) in [(n as u32, floor), (n as u32 + 1, wall)] {
            for (i, b) in sc.boxes.iter().enumerate() {
                if bu.overlaps(b) {
                    want.push((i as u32, u));
                }
            }
        }
        want.push((n as u32, n as u32 + 1));
        want.sort_unstable();
        assert_same_pairs(&got, &want, &format!("unbounded step {step}"));
    }
    // Errors: a NaN box, a short slice, a box out of range: nothing moves.
    let before = serial_order(&mut g);
    let mut bad = all.clone();
    bad[7_000].min = Vec3::new(f32::NAN, 0.0, 0.0);
    bad[100] = Aabb3::new(Vec3::new(1.0e30, 0.0, 0.0), Vec3::new(1.0e30, 1.0, 1.0)).unwrap();
    let mut serial = g.clone();
    let want = serial.update_all(&bad, UpdateStrategy::Incremental);
    assert_eq!(want, Err(Error::OutOfRange));
    assert_eq!(
        g.par_update_all(&exec, &bad, UpdateStrategy::Incremental),
        want
    );
    bad[100] = all[100];
    assert_eq!(
        g.par_update_all(&exec, &bad, UpdateStrategy::Incremental),
        Err(Error::NonFinite)
    );
    assert_eq!(
        g.par_update_all(&exec, &all[..n], UpdateStrategy::Incremental),
        Err(Error::LengthMismatch {
            expected: n + 2,
            got: n
        })
    );
    assert_eq!(serial_order(&mut g), before);
    g.validate().unwrap();
    // Too few sinks: refused, nothing called.
    let tasks = g.overlap_tasks();
    assert!(tasks > 1);
    let mut few: Sinks = vec![Vec::new(); tasks - 1];
    assert_eq!(
        g.par_for_each_overlap(&exec, &mut few, |s, a, b| s.push((a, b))),
        Err(Error::BufferTooSmall {
            needed: tasks,
            available: tasks - 1
        })
    );
    assert!(few.iter().all(Vec::is_empty));
}

// ------------------------------------------------------------ properties

/// One operation of the property test.
#[derive(Clone, Debug)]
enum Op {
    Insert(u32, Aabb3),
    Unbounded(u32, Aabb3),
    Update(u32, Aabb3),
    Remove(u32),
    /// Every stored box shifted by a per-id amount; which strategy; threads.
    ParUpdate(f32, f32, bool, usize),
    /// Parallel detection on this many threads (the serial copy detects
    /// serially).
    ParPairs(usize),
}

const IDS: u32 = 48;

fn a_box() -> impl Strategy<Value = Aabb3> {
    (
        0u32..40,
        0u32..40,
        0u32..8,
        prop_oneof![Just(0.3f32), Just(1.0), Just(2.5), Just(9.0), Just(150.0)],
    )
        .prop_map(|(x, y, z, e)| {
            let lo = Vec3::new(x as f32 * 0.5, y as f32 * 0.5, z as f32 * 0.5);
            Aabb3::new(lo, Vec3::new(lo.x + e, lo.y + e * 0.5, lo.z + e)).unwrap()
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..IDS, a_box()).prop_map(|(i, b)| Op::Insert(i, b)),
        1 => (0..IDS, a_box()).prop_map(|(i, b)| Op::Unbounded(i, b)),
        3 => (0..IDS, a_box()).prop_map(|(i, b)| Op::Update(i, b)),
        2 => (0..IDS).prop_map(Op::Remove),
        3 => (-3.0f32..3.0, 0.5f32..1.5, any::<bool>(), 1usize..5)
            .prop_map(|(d, s, c, t)| Op::ParUpdate(d, s, c, t)),
        2 => (1usize..5).prop_map(Op::ParPairs),
    ]
}

fn run_ops(cfg: HhgConfig, arena: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut a = make::hhg::<Aabb3>(IDS as usize, arena, cfg);
    let mut b = make::hhg::<Aabb3>(IDS as usize, arena, cfg);
    let pools: Vec<Rayon> = (1..5).map(|t| Rayon::new(t).unwrap()).collect();
    for (k, op) in ops.iter().enumerate() {
        match *op {
            Op::Insert(i, x) => prop_assert_eq!(a.insert(i, x), b.insert(i, x)),
            Op::Unbounded(i, x) => {
                prop_assert_eq!(a.insert_unbounded(i, x), b.insert_unbounded(i, x))
            }
            Op::Update(i, x) => prop_assert_eq!(a.update(i, x), b.update(i, x)),
            Op::Remove(i) => prop_assert_eq!(a.remove(i), b.remove(i)),
            Op::ParUpdate(d, s, clear, t) => {
                let strategy = if clear {
                    UpdateStrategy::ClearAndReinsert
                } else {
                    UpdateStrategy::Incremental
                };
                let boxes: Vec<Aabb3> = (0..IDS)
                    .map(|i| match a.get(i) {
                        Some(x) if x.min.x.is_finite() && x.max.x.is_finite() => {
                            let sh = d * ((i % 5) as f32 - 2.0);
                            let lo = Vec3::from_fn(|c| x.min.coord(c) + sh);
                            let e = Vec3::from_fn(|c| (x.max.coord(c) - x.min.coord(c)) * s);
                            Aabb3::new(lo, Vec3::from_fn(|c| lo.coord(c) + e.coord(c))).unwrap()
                        }
                        Some(x) => x,
                        None => Aabb3::new(Vec3::ZERO, Vec3::ZERO).unwrap(),
                    })
                    .collect();
                let want = a.update_all(&boxes, strategy);
                let got = b.par_update_all(&pools[t - 1], &boxes, strategy);
                prop_assert_eq!(got, want, "op {}", k);
            }
            Op::ParPairs(t) => {
                let want = sorted(serial_order(&mut a));
                let sinks = par_sinks(&mut b, &pools[t - 1]);
                prop_assert_eq!(sorted(sinks.into_iter().flatten()), want, "op {}", k);
            }
        }
        prop_assert!(b.validate().is_ok(), "op {}: {:?}", k, b.validate());
        prop_assert_eq!(a.stats(), b.stats(), "op {}", k);
        prop_assert_eq!(serial_order(&mut a), serial_order(&mut b), "op {}", k);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_operations_match_the_serial_grid(
        ops in prop::collection::vec(op(), 1..60),
        which in 0usize..3,
    ) {
        let (cfg, arena) = match which {
            0 => (HhgConfig::DEFAULT.with_small_n_threshold(4), 1 << 16),
            1 => (
                HhgConfig::DEFAULT
                    .with_initial_cells_log2(2)
                    .unwrap()
                    .with_small_n_threshold(0),
                1 << 14,
            ),
            // Room for two minimum grids: fallbacks to larger grids and to
            // the unbounded container.
            _ => (
                HhgConfig::DEFAULT
                    .with_initial_cells_log2(2)
                    .unwrap()
                    .with_small_n_threshold(0),
                2 * (729 + 64),
            ),
        };
        run_ops(cfg, arena, &ops)?;
    }
}
