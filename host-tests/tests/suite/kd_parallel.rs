//! The linear kd-tree's parallel forms against its serial ones and brute
//! force: `par_build` must give the serial build's records (same order),
//! frame and stats (all but `sort_passes`) on every scenario generator
//! (`scenarios::box_scenarios` in 2D and 3D, the Pouchol objects and
//! spheres scenes), every code width, split policy, octree mode, both sorts,
//! temporal reuse and starved record buffers, with inputs above 2¹⁶ records
//! so the parallel radix sort runs; the per-task sinks of
//! `par_for_each_candidate_pair` / `par_for_each_overlap`, concatenated,
//! must equal the serial pairs in the serial order, and be bit-identical for
//! `Serial`, `Rayon` 1, 2, 3, 8 and `Threads` 3. A property test mixes
//! serial and parallel calls on a `KdBroadPhase` and its serial twin.

use proptest::prelude::*;
use spatium::exec::{Executor, Serial, Split};
use spatium::kdtree::{
    Candidates, KdBroadPhase, KdConfig, KdRecord, KdSlot, LinearKdTree, LocCode, SortAlgo,
    Split as Cut,
};
use spatium::{Aabb2, Aabb3, BoundingBox, BroadPhase, Error, Inspect, Point, Validate, Vec2};
use spatium_host::oracle::{assert_same_pairs, overlapping_pairs};
use spatium_host::par::{Rayon, Threads};
use spatium_host::pouchol::{objects_scenario, spheres_scenario};
use spatium_host::scenarios::{BoxScenario, box_scenarios, moving_cubes};

/// The executors every parallel answer is compared across.
enum Ex {
    Serial,
    Rayon(Rayon),
    Threads(Threads),
}

impl Executor for Ex {
    fn workers(&self) -> usize {
        match self {
            Ex::Serial => 1,
            Ex::Rayon(r) => r.workers(),
            Ex::Threads(t) => t.workers(),
        }
    }
    fn run<S: Split, F: Fn(usize, S) + Sync>(&self, tasks: usize, parts: S, f: F) {
        match self {
            Ex::Serial => Serial.run(tasks, parts, f),
            Ex::Rayon(r) => r.run(tasks, parts, f),
            Ex::Threads(t) => t.run(tasks, parts, f),
        }
    }
}

fn execs() -> Vec<(String, Ex)> {
    let mut v = vec![("serial".to_owned(), Ex::Serial)];
    for n in [1, 2, 3, 8] {
        v.push((
            format!("rayon {n}"),
            Ex::Rayon(Rayon::new(n).expect("pool")),
        ));
    }
    v.push(("threads 3".to_owned(), Ex::Threads(Threads::new(3))));
    v
}

type VecTree<B, K> = LinearKdTree<B, K, Vec<KdRecord<K>>>;

fn tree<B: BoundingBox, K: LocCode>(records: usize, config: KdConfig<B>) -> VecTree<B, K> {
    LinearKdTree::new(
        vec![KdRecord::EMPTY; records],
        vec![KdRecord::EMPTY; records],
        config,
    )
}

fn normalised(v: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut v: Vec<_> = v.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
    v.sort_unstable();
    v
}

const MODES: [Candidates; 3] = [Candidates::Raw, Candidates::Unique, Candidates::Exact];

/// Serial pairs of every mode.
fn serial_pairs<B: BoundingBox, K: LocCode>(
    t: &VecTree<B, K>,
    boxes: &[B],
) -> Vec<Vec<(u32, u32)>> {
    MODES
        .iter()
        .map(|&m| {
            let mut v = Vec::new();
            if boxes.len() > 20_000 && m != Candidates::Exact {
                return v;
            }
            t.for_each_candidate_pair(boxes, m, |a, b| v.push((a, b)))
                .expect("serial pairs");
            v
        })
        .collect()
}

/// Builds `boxes` serially and in parallel on every executor, and checks
/// records, frame, stats and the pairs of every mode (sinks concatenated in
/// order) against the serial ones; the exact pairs against brute force when
/// `brute`.
fn check_tree<B: BoundingBox, K: LocCode>(
    boxes: &[B],
    config: KdConfig<B>,
    records: usize,
    brute: bool,
    what: &str,
) {
    let mut serial = tree::<B, K>(records, config);
    serial
        .build(boxes)
        .unwrap_or_else(|e| panic!("{what}: build {e}"));
    let want = serial_pairs(&serial, boxes);
    if brute {
        assert_same_pairs(&normalised(&want[2]), &overlapping_pairs(boxes), what);
    }
    let mut skip_stats = serial.stats();
    skip_stats.sort_passes = 0;
    for (name, ex) in execs() {
        let what = format!("{what}, {name}");
        let mut par = tree::<B, K>(records, config);
        par.par_build(&ex, boxes)
            .unwrap_or_else(|e| panic!("{what}: par_build {e}"));
        par.validate_against(boxes)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(par.records() == serial.records(), "{what}: records differ");
        assert_eq!(par.frame(), serial.frame(), "{what}: frame");
        let mut st = par.stats();
        st.sort_passes = 0;
        assert_eq!(st, skip_stats, "{what}: stats");
        for (m, want) in MODES.iter().zip(&want) {
            if boxes.len() > 20_000 && *m != Candidates::Exact {
                continue;
            }
            let mut sinks = vec![Vec::new(); par.candidate_tasks()];
            par.par_for_each_candidate_pair(
                &ex,
                boxes,
                *m,
                &mut sinks,
                |s: &mut Vec<(u32, u32)>, a, b| s.push((a, b)),
            )
            .unwrap_or_else(|e| panic!("{what}: par pairs {e}"));
            let got: Vec<_> = sinks.concat();
            assert!(
                got == *want,
                "{what}: {m:?} pairs differ ({} vs {})",
                got.len(),
                want.len()
            );
        }
        // Too few sinks: refused, nothing called.
        let mut few: Vec<u32> = vec![0; par.candidate_tasks() - 1];
        assert_eq!(
            par.par_for_each_candidate_pair(
                &ex,
                boxes,
                Candidates::Exact,
                &mut few,
                |c: &mut u32, _, _| *c += 1
            ),
            Err(Error::BufferTooSmall {
                needed: par.candidate_tasks(),
                available: par.candidate_tasks() - 1
            })
        );
        assert!(few.iter().all(|&c| c == 0));
    }
}

fn configs<B: BoundingBox>() -> Vec<(&'static str, KdConfig<B>)> {
    vec![
        ("default", KdConfig::DEFAULT),
        ("no split", KdConfig::DEFAULT.with_split(Cut::None).unwrap()),
        ("octree", KdConfig::DEFAULT.with_octree(true)),
        (
            "comparison",
            KdConfig::DEFAULT.with_sort(SortAlgo::Comparison),
        ),
        (
            "gain 3",
            KdConfig::DEFAULT
                .with_split(Cut::Volume { min_gain_log2: 3 })
                .unwrap(),
        ),
    ]
}

fn scenes_3d(n: usize) -> Vec<BoxScenario<Aabb3>> {
    let mut v = box_scenarios::<Aabb3>(n, 11);
    v.push(spheres_scenario(8, n, 5));
    v
}

fn scenes_2d(n: usize) -> Vec<BoxScenario<Aabb2>> {
    let mut v = box_scenarios::<Aabb2>(n, 13);
    v.push(objects_scenario(n, 7));
    v
}

#[test]
fn par_build_and_sweep_match_serial_and_brute_force_on_every_scenario() {
    for sc in scenes_3d(1500) {
        for (cname, c) in configs::<Aabb3>() {
            let what = format!("3D {} {cname}", sc.name);
            check_tree::<Aabb3, u64>(&sc.boxes, c, 8 * sc.boxes.len(), true, &what);
        }
        check_tree::<Aabb3, u32>(
            &sc.boxes,
            KdConfig::DEFAULT,
            8 * sc.boxes.len(),
            false,
            "u32",
        );
        check_tree::<Aabb3, u128>(
            &sc.boxes,
            KdConfig::DEFAULT,
            8 * sc.boxes.len(),
            false,
            "u128",
        );
        // Starved buffers: the serial room rule (serial coding path).
        check_tree::<Aabb3, u64>(
            &sc.boxes,
            KdConfig::DEFAULT,
            sc.boxes.len() + 7,
            true,
            "starved",
        );
    }
    for sc in scenes_2d(1500) {
        for (cname, c) in configs::<Aabb2>() {
            let what = format!("2D {} {cname}", sc.name);
            check_tree::<Aabb2, u32>(&sc.boxes, c, 4 * sc.boxes.len(), true, &what);
        }
        check_tree::<Aabb2, u128>(
            &sc.boxes,
            KdConfig::DEFAULT,
            4 * sc.boxes.len(),
            false,
            "2D u128",
        );
    }
}

#[test]
fn large_builds_use_the_parallel_sort_and_match_serial() {
    // Above 2^16 records: the partition-and-bucket radix sort runs.
    for sc in scenes_3d(70_000) {
        check_tree::<Aabb3, u64>(
            &sc.boxes,
            KdConfig::DEFAULT,
            8 * sc.boxes.len(),
            false,
            &sc.name,
        );
    }
    let sc = moving_cubes::<Aabb3>(80_000, 3);
    check_tree::<Aabb3, u32>(
        &sc.boxes,
        KdConfig::DEFAULT.with_split(Cut::None).unwrap(),
        sc.boxes.len(),
        false,
        "u32 whole",
    );
    check_tree::<Aabb3, u128>(
        &sc.boxes,
        KdConfig::DEFAULT,
        8 * sc.boxes.len(),
        false,
        "u128",
    );
    for sc in scenes_2d(70_000) {
        check_tree::<Aabb2, u64>(
            &sc.boxes,
            KdConfig::DEFAULT.with_octree(true),
            4 * sc.boxes.len(),
            false,
            &sc.name,
        );
    }
    // Identical boxes: no bit varies, the serial sort is used.
    let same = vec![Aabb2::new(Vec2::new(1.0, 1.0), Vec2::new(2.0, 2.0)).unwrap(); 70_000];
    check_tree::<Aabb2, u64>(&same[..2000], KdConfig::DEFAULT, 2000, false, "identical");
    let mut t = tree::<Aabb2, u64>(70_000, KdConfig::DEFAULT);
    let mut s = tree::<Aabb2, u64>(70_000, KdConfig::DEFAULT);
    t.par_build(&Rayon::new(3).unwrap(), &same).unwrap();
    s.build(&same).unwrap();
    assert!(t.records() == s.records());
}

/// A few boxes spanning the scene sit at the root with runs of every
/// record: the sweep's cuts fall inside those runs.
#[test]
fn boxes_spanning_the_scene_are_cut_inside_their_runs() {
    for n in [3000usize, 30_000] {
        let mut sc = moving_cubes::<Aabb3>(n, 17);
        let e = sc.extent;
        for k in 0..20 {
            let f = k as f32 / 40.0;
            sc.boxes.push(
                Aabb3::try_new(
                    Point::from_fn(|a| e.coord(a) * f),
                    Point::from_fn(|a| e.coord(a) * (1.0 - f)),
                )
                .unwrap(),
            );
        }
        for (cname, c) in configs::<Aabb3>() {
            let records = 8 * sc.boxes.len();
            check_tree::<Aabb3, u64>(
                &sc.boxes,
                c,
                records,
                n < 10_000,
                &format!("spanning {n} {cname}"),
            );
        }
    }
}

#[test]
fn temporal_reuse_in_parallel_matches_serial_over_steps() {
    for split in [Cut::None, Cut::Volume { min_gain_log2: 0 }] {
        let mut boxes = moving_cubes::<Aabb3>(20_000, 9).boxes;
        let root = Aabb3::try_new(Point::from_fn(|_| -60.0), Point::from_fn(|_| 200.0)).unwrap();
        let config = KdConfig::DEFAULT
            .with_temporal_reuse(true)
            .with_split(split)
            .unwrap()
            .with_root(Some(root))
            .unwrap();
        let mut serial = tree::<Aabb3, u64>(8 * 20_000, config);
        let mut pars: Vec<_> = execs()
            .into_iter()
            .map(|(n, e)| (n, e, tree::<Aabb3, u64>(8 * 20_000, config)))
            .collect();
        let mut reused = 0;
        for step in 0..6 {
            serial.build(&boxes).unwrap();
            reused += serial.stats().reused as usize;
            for (name, ex, t) in pars.iter_mut() {
                t.par_build(&*ex, &boxes).unwrap();
                assert!(
                    t.records() == serial.records(),
                    "step {step} {name}: records"
                );
                let (mut a, mut b) = (t.stats(), serial.stats());
                a.sort_passes = 0;
                b.sort_passes = 0;
                assert_eq!(a, b, "step {step} {name}: stats");
            }
            // A tiny drift: most keys stay, a few change.
            for (i, b) in boxes.iter_mut().enumerate() {
                let d = ((i * 7919 + step) % 200) as f32 * 1e-5 - 1e-3;
                *b = Aabb3::try_new(
                    Point::from_fn(|k| b.min().coord(k) + d),
                    Point::from_fn(|k| b.max().coord(k) + d),
                )
                .unwrap();
            }
        }
        if split == Cut::None {
            assert!(reused >= 4, "reuse happened {reused} times");
        }
    }
}

#[test]
fn refused_par_builds_match_serial_errors_and_keep_the_tree() {
    let sc = moving_cubes::<Aabb3>(40_000, 4);
    let ex = Rayon::new(3).unwrap();
    let mut t = tree::<Aabb3, u64>(8 * 40_000, KdConfig::DEFAULT);
    t.par_build(&ex, &sc.boxes).unwrap();
    let before = t.records().to_vec();
    // Two bad boxes in different tasks: the first in id order is the error.
    let mut bad = sc.boxes.clone();
    let nan = Aabb3::NAN;
    bad[30_000] = nan;
    bad[20_000] = Aabb3::try_new(bad[20_000].max(), bad[20_000].min()).unwrap_or(nan);
    let mut s = tree::<Aabb3, u64>(8 * 40_000, KdConfig::DEFAULT);
    let want = s.build(&bad).unwrap_err();
    assert_eq!(t.par_build(&ex, &bad).unwrap_err(), want);
    assert!(t.records() == before.as_slice());
    // Capacity.
    let mut small = tree::<Aabb3, u64>(100, KdConfig::DEFAULT);
    assert_eq!(
        small.par_build(&ex, &sc.boxes).unwrap_err(),
        Error::CapacityExceeded { capacity: 100 }
    );
    // Length mismatch of the sweep.
    let mut sinks = vec![0u32; t.candidate_tasks()];
    assert!(matches!(
        t.par_for_each_candidate_pair(
            &ex,
            &sc.boxes[1..],
            Candidates::Exact,
            &mut sinks,
            |c: &mut u32, _, _| *c += 1
        ),
        Err(Error::LengthMismatch { .. })
    ));
}

type Bp<B, K> = KdBroadPhase<B, K, Vec<KdSlot<B>>, Vec<KdRecord<K>>>;

fn bp<B: BoundingBox, K: LocCode>(cap: usize, config: KdConfig<B>) -> Bp<B, K> {
    KdBroadPhase::new(
        vec![KdSlot::EMPTY; cap],
        vec![KdRecord::EMPTY; 8 * cap],
        vec![KdRecord::EMPTY; 8 * cap],
        config,
    )
}

fn par_overlaps<B: BoundingBox, K: LocCode, E: Executor>(
    b: &mut Bp<B, K>,
    ex: &E,
) -> Vec<(u32, u32)> {
    let mut sinks = vec![Vec::new(); b.overlap_tasks()];
    b.par_for_each_overlap(ex, &mut sinks, |s: &mut Vec<(u32, u32)>, x, y| {
        s.push((x, y))
    })
    .expect("par overlaps");
    sinks.concat()
}

fn serial_overlaps<B: BoundingBox, S: BroadPhase<B>>(b: &mut S) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    b.for_each_overlap(|x, y| v.push((x, y))).expect("overlaps");
    v
}

#[test]
fn broad_phase_par_overlaps_match_serial_over_moving_steps() {
    for mut sc in scenes_3d(6000) {
        let n = sc.boxes.len();
        let mut serial = bp::<Aabb3, u64>(n + 10, KdConfig::DEFAULT);
        let mut pars: Vec<_> = execs()
            .into_iter()
            .map(|(name, e)| (name, e, bp::<Aabb3, u64>(n + 10, KdConfig::DEFAULT)))
            .collect();
        // Ids with gaps: every third id shifted by the capacity's slack.
        let id = |i: usize| (i + i / 1000) as u32;
        for (i, b) in sc.boxes.iter().enumerate() {
            serial.insert(id(i), *b).unwrap();
            for (_, _, p) in pars.iter_mut() {
                p.insert(id(i), *b).unwrap();
            }
        }
        for step in 0..3 {
            let want = serial_overlaps(&mut serial);
            if step == 0 {
                let mut brute = bp::<Aabb3, u64>(n + 10, KdConfig::DEFAULT);
                for (i, b) in sc.boxes.iter().enumerate() {
                    brute.insert(id(i), *b).unwrap();
                }
                let mut expected: Vec<_> = overlapping_pairs(&sc.boxes)
                    .into_iter()
                    .map(|(a, b)| (id(a as usize), id(b as usize)))
                    .collect();
                expected.sort_unstable();
                assert_same_pairs(&normalised(&want), &expected, &sc.name);
            }
            for (name, ex, p) in pars.iter_mut() {
                let got = par_overlaps(p, ex);
                assert!(got == want, "{} step {step} {name}: pairs differ", sc.name);
                p.validate().unwrap();
                assert!(p.tree().records() == serial.tree().records());
            }
            sc.step();
            for (i, b) in sc.boxes.iter().enumerate() {
                serial.update(id(i), *b).unwrap();
                for (_, _, p) in pars.iter_mut() {
                    p.update(id(i), *b).unwrap();
                }
            }
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u8, [u8; 4]),
    Update(u8, [u8; 4]),
    Remove(u8),
    Serial,
    Par(u8),
    Query([u8; 4]),
    Refresh(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let b = any::<[u8; 4]>();
    prop_oneof![
        4 => (0u8..48, b).prop_map(|(i, b)| Op::Insert(i, b)),
        3 => (0u8..48, b).prop_map(|(i, b)| Op::Update(i, b)),
        2 => (0u8..48).prop_map(Op::Remove),
        1 => Just(Op::Serial),
        2 => (0u8..6).prop_map(Op::Par),
        1 => b.prop_map(Op::Query),
        1 => (0u8..6).prop_map(Op::Refresh),
    ]
}

fn bx(b: [u8; 4]) -> Aabb2 {
    let x = b[0] as f32 / 8.0;
    let y = b[1] as f32 / 8.0;
    Aabb2::new(
        Vec2::new(x, y),
        Vec2::new(x + (b[2] % 64) as f32 / 4.0, y + (b[3] % 64) as f32 / 8.0),
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random operations on a `KdBroadPhase` whose detections alternate
    /// between serial and parallel calls on random executors, against a
    /// twin that only calls the serial forms: every answer identical, in
    /// order; `validate` after every operation.
    #[test]
    fn mixed_serial_and_parallel_calls_agree(ops in proptest::collection::vec(op(), 1..60), reuse in any::<bool>(), split in any::<bool>()) {
        let config = KdConfig::<Aabb2>::DEFAULT
            .with_temporal_reuse(reuse)
            .with_split(if split { Cut::Volume { min_gain_log2: 0 } } else { Cut::None })
            .unwrap();
        let exs = execs();
        let mut twin = bp::<Aabb2, u32>(40, config);
        let mut mixed = bp::<Aabb2, u32>(40, config);
        for op in ops {
            match op {
                Op::Insert(i, b) => prop_assert_eq!(mixed.insert(i as u32, bx(b)), twin.insert(i as u32, bx(b))),
                Op::Update(i, b) => prop_assert_eq!(mixed.update(i as u32, bx(b)), twin.update(i as u32, bx(b))),
                Op::Remove(i) => prop_assert_eq!(mixed.remove(i as u32).is_ok(), twin.remove(i as u32).is_ok()),
                Op::Serial => prop_assert_eq!(serial_overlaps(&mut mixed), serial_overlaps(&mut twin)),
                Op::Par(e) => {
                    let ex = &exs[e as usize].1;
                    let want = serial_overlaps(&mut twin);
                    prop_assert_eq!(par_overlaps(&mut mixed, ex), want.clone());
                    for m in MODES {
                        let mut sinks = vec![Vec::new(); mixed.overlap_tasks()];
                        mixed.par_for_each_candidate_pair(ex, m, &mut sinks, |s: &mut Vec<(u32, u32)>, a, b| s.push((a, b))).unwrap();
                        let mut w = Vec::new();
                        twin.for_each_candidate_pair(m, |a, b| w.push((a, b))).unwrap();
                        prop_assert_eq!(sinks.concat(), w);
                    }
                }
                Op::Query(b) => {
                    let (mut x, mut y) = (Vec::new(), Vec::new());
                    mixed.query(&bx(b), |i| x.push(i)).unwrap();
                    twin.query(&bx(b), |i| y.push(i)).unwrap();
                    prop_assert_eq!(x, y);
                }
                Op::Refresh(e) => {
                    // A parallel detection with a refused sink count changes nothing.
                    let ex = &exs[e as usize].1;
                    let mut none: Vec<u32> = Vec::new();
                    prop_assert!(mixed.par_for_each_overlap(ex, &mut none, |c: &mut u32, _, _| *c += 1).is_err());
                }
            }
            prop_assert!(mixed.validate().is_ok());
            prop_assert_eq!(mixed.box_count(), twin.box_count());
        }
        prop_assert_eq!(mixed.memory_bytes(), twin.memory_bytes());
        let _ = Aabb2::NAN.min().coord(0);
    }
}
