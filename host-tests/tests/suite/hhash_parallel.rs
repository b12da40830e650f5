//! Hierarchical and multilevel hashing's parallel forms against their
//! serial ones and brute force, on every scenario generator (the box
//! scenarios in 2D and 3D, the Pouchol objects and spheres scenes, the
//! point scenarios and the Pouchol 2D points): the per-task sinks of
//! `par_for_each_candidate_pair` / `par_for_each_overlap` /
//! `par_for_each_pair`, concatenated, must equal the serial answers in the
//! serial order; `par_build` must give the serial build's table (stats and
//! every answer) and errors; `par_gather` and `par_neighbor_lists` must
//! equal brute force; all bit-identical for `Serial`, `Rayon` 1, 2, 3, 8 and
//! `Threads` 3. A property test mixes serial and parallel calls.

use proptest::prelude::*;
use spatium::exec::{Executor, Serial, Split};
use spatium::hhash::{
    Candidates, HashBucket, HashConfig, HashEntry, Hierarchical, Multilevel, Scheme,
};
use spatium::{
    Aabb2, Aabb3, BoundingBox, BroadPhase, Error, Inspect, NeighborSearch, Point, Validate, Vec2,
};
use spatium_host::make::{self, VecClassHash};
use spatium_host::oracle::{assert_same_pairs, overlapping_pairs, pairs_within};
use spatium_host::par::{Rayon, Threads};
use spatium_host::pouchol;
use spatium_host::scenarios::{BoxScenario, box_scenarios, point_scenarios};

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

fn table_for(n: usize) -> usize {
    spatium::table::table_len(n, spatium::table::SLOTS_PER_OBJECT)
}

fn normalised(v: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut v: Vec<_> = v.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
    v.sort_unstable();
    v
}

const MODES: [Candidates; 3] = [Candidates::Raw, Candidates::Unique, Candidates::Exact];

fn serial_candidates<S: Scheme, B: BoundingBox>(
    h: &mut VecClassHash<S, B>,
    m: Candidates,
) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    h.for_each_candidate_pair(m, |a, b| v.push((a, b)));
    v
}

fn par_candidates<S: Scheme, B: BoundingBox, E: Executor>(
    h: &mut VecClassHash<S, B>,
    ex: &E,
    m: Candidates,
) -> Vec<(u32, u32)> {
    let mut sinks = vec![Vec::new(); h.candidate_tasks()];
    h.par_for_each_candidate_pair(ex, m, &mut sinks, |s: &mut Vec<(u32, u32)>, a, b| {
        s.push((a, b))
    })
    .expect("par pairs");
    sinks.concat()
}

/// Objects of `sc` (ids spread with gaps) over a few moving steps: every
/// executor's parallel pairs equal the serial ones, in order; exact pairs
/// equal brute force.
fn check_objects<S: Scheme, B: BoundingBox>(
    mut sc: BoxScenario<B>,
    config: HashConfig<B::Point>,
    what: &str,
) {
    let n = sc.boxes.len();
    let id = |i: usize| (i + i / 700) as u32;
    let cap = id(n) as usize + 1;
    let entries = config.entries_for(&sc.boxes, 0).unwrap() as usize * 4 + 64;
    let mut serial = make::class_hash::<S, B>(cap, table_for(n), entries, 0, config);
    let mut pars: Vec<_> = execs()
        .into_iter()
        .map(|(name, e)| {
            (
                name,
                e,
                make::class_hash::<S, B>(cap, table_for(n), entries, 0, config),
            )
        })
        .collect();
    for (i, b) in sc.boxes.iter().enumerate() {
        serial.insert(id(i), *b).unwrap();
        for (_, _, p) in pars.iter_mut() {
            p.insert(id(i), *b).unwrap();
        }
    }
    for step in 0..3 {
        let want: Vec<_> = MODES
            .iter()
            .map(|&m| serial_candidates(&mut serial, m))
            .collect();
        if step == 0 {
            let mut expected: Vec<_> = overlapping_pairs(&sc.boxes)
                .into_iter()
                .map(|(a, b)| (id(a as usize), id(b as usize)))
                .collect();
            expected.sort_unstable();
            assert_same_pairs(&normalised(&want[2]), &expected, what);
        }
        for (name, ex, p) in pars.iter_mut() {
            for (m, w) in MODES.iter().zip(&want) {
                let got = par_candidates(p, ex, *m);
                assert!(
                    got == *w,
                    "{what} step {step} {name} {m:?}: {} vs {} pairs",
                    got.len(),
                    w.len()
                );
            }
            let mut sinks = vec![Vec::new(); p.overlap_tasks()];
            p.par_for_each_overlap(ex, &mut sinks, |s: &mut Vec<(u32, u32)>, a, b| {
                s.push((a, b))
            })
            .unwrap();
            assert!(
                sinks.concat() == want[2],
                "{what} step {step} {name}: overlaps"
            );
            p.validate()
                .unwrap_or_else(|e| panic!("{what} {name}: {e}"));
            assert_eq!(p.stats(), serial.stats(), "{what} {name}: stats");
        }
        sc.step();
        for (i, b) in sc.boxes.iter().enumerate() {
            serial.update(id(i), *b).unwrap();
            for (_, _, p) in pars.iter_mut() {
                p.update(id(i), *b).unwrap();
            }
        }
    }
    // Too few sinks: refused, nothing called.
    let (_, ex, p) = &mut pars[3];
    let mut few = vec![0u32; p.candidate_tasks() - 1];
    assert_eq!(
        p.par_for_each_overlap(ex, &mut few, |c: &mut u32, _, _| *c += 1),
        Err(Error::BufferTooSmall {
            needed: p.candidate_tasks(),
            available: p.candidate_tasks() - 1
        })
    );
}

fn object_configs<P: Point>(boxes: &[P::Aabb]) -> Vec<(&'static str, HashConfig<P>)> {
    let min_edge = boxes
        .iter()
        .map(|b| b.longest_edge())
        .fold(f32::INFINITY, f32::min)
        .max(1e-3);
    let sized =
        HashConfig::from_sizes(min_edge * 0.75, boxes.iter().map(|b| b.longest_edge())).unwrap();
    let max_edge = boxes.iter().map(|b| b.longest_edge()).fold(0.0, f32::max);
    let single = HashConfig::new(max_edge * 0.3, 1).unwrap();
    vec![("sized", sized), ("single", single)]
}

fn objects_on_every_scenario<S: Scheme>() {
    let mut scenes3 = box_scenarios::<Aabb3>(2500, 31);
    scenes3.push(pouchol::spheres_scenario(60, 2500, 4));
    for sc in scenes3 {
        for (cname, c) in object_configs::<<Aabb3 as BoundingBox>::Point>(&sc.boxes) {
            let what = format!("{} 3D {} {cname}", S::NAME, sc.name);
            check_objects::<S, Aabb3>(sc.clone(), c, &what);
        }
    }
    let mut scenes2 = box_scenarios::<Aabb2>(2500, 37);
    scenes2.push(pouchol::objects_scenario(2500, 8));
    for sc in scenes2 {
        for (cname, c) in object_configs::<Vec2>(&sc.boxes) {
            let what = format!("{} 2D {} {cname}", S::NAME, sc.name);
            check_objects::<S, Aabb2>(sc.clone(), c, &what);
        }
    }
}

#[test]
fn hierarchical_objects_match_serial_and_brute_force() {
    objects_on_every_scenario::<Hierarchical>();
}

#[test]
fn multilevel_objects_match_serial_and_brute_force() {
    objects_on_every_scenario::<Multilevel>();
}

fn particle_hash<S: Scheme, B: BoundingBox>(np: usize) -> VecClassHash<S, B> {
    VecClassHash::<S, B>::for_particles(
        Vec::new(),
        vec![HashBucket::EMPTY; table_for(np)],
        vec![HashEntry::EMPTY; np],
        vec![B::Point::ZERO; np],
        0,
    )
}

/// Particles: `par_build` equals `build`; parallel pairs equal the serial
/// ones in order and brute force; gathers and lists equal brute force.
fn check_particles<S: Scheme, B: BoundingBox>(points: &[B::Point], radius: f32, what: &str) {
    let np = points.len();
    let mut serial = particle_hash::<S, B>(np);
    serial.build(points, radius).unwrap();
    let mut want = Vec::new();
    serial.for_each_pair(|i, j, d2| want.push((i, j, d2.to_bits())));
    let brute = pairs_within(points, radius);
    let pairs: Vec<_> = want.iter().map(|&(i, j, _)| (i, j)).collect();
    assert_same_pairs(&normalised(&pairs), &brute, what);
    let mut degree = vec![0u32; np];
    for &(i, j) in &brute {
        degree[i as usize] += 1;
        degree[j as usize] += 1;
    }
    for (name, ex) in execs() {
        let what = format!("{what} {name}");
        let mut h = particle_hash::<S, B>(np);
        h.par_build(&ex, points, radius).unwrap();
        h.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(h.stats(), serial.stats(), "{what}: stats");
        let mut sinks = vec![Vec::new(); h.pair_tasks()];
        h.par_for_each_pair(&ex, &mut sinks, |s: &mut Vec<(u32, u32, u32)>, i, j, d2| {
            s.push((i, j, d2.to_bits()))
        })
        .unwrap();
        assert!(sinks.concat() == want, "{what}: pairs differ");
        let mut got = vec![0u32; np];
        h.par_gather(&ex, &mut got, |_, d, _, _| *d += 1).unwrap();
        assert_eq!(got, degree, "{what}: gather degrees");
        let mut offsets = vec![0u32; np + 1];
        let mut indices = vec![0u32; 2 * brute.len()];
        assert_eq!(
            h.par_neighbor_lists(&ex, &mut offsets, &mut indices)
                .unwrap(),
            2 * brute.len()
        );
        for i in 0..np {
            let list = &indices[offsets[i] as usize..offsets[i + 1] as usize];
            assert_eq!(list.len(), degree[i] as usize, "{what}: list {i}");
            assert!(
                list.iter()
                    .all(|&j| points[j as usize].distance_squared(points[i]) < radius * radius)
            );
        }
    }
}

#[test]
fn particles_match_serial_and_brute_force_on_every_point_scenario() {
    for sc in point_scenarios::<<Aabb3 as BoundingBox>::Point>(5000, 23) {
        check_particles::<Hierarchical, Aabb3>(&sc.points, sc.radius, &format!("H 3D {}", sc.name));
        check_particles::<Multilevel, Aabb3>(&sc.points, sc.radius, &format!("M 3D {}", sc.name));
    }
    for sc in point_scenarios::<Vec2>(5000, 29) {
        check_particles::<Hierarchical, Aabb2>(&sc.points, sc.radius, &format!("H 2D {}", sc.name));
        check_particles::<Multilevel, Aabb2>(&sc.points, sc.radius, &format!("M 2D {}", sc.name));
    }
    let pts = pouchol::points_2d(40_000, 3);
    let r = pouchol::SQUARE_NNS / 400.0;
    check_particles::<Hierarchical, Aabb2>(&pts, r, "pouchol points H");
    check_particles::<Multilevel, Aabb2>(&pts, r, "pouchol points M");
}

#[test]
fn refused_par_builds_match_serial_errors_and_change_nothing() {
    let sc = &point_scenarios::<Vec2>(70_000, 5)[0];
    let np = sc.points.len();
    let ex = Rayon::new(3).unwrap();
    let mut h = particle_hash::<Hierarchical, Aabb2>(np);
    h.par_build(&ex, &sc.points, sc.radius).unwrap();
    let stats = h.stats();
    let mut bad = sc.points.clone();
    bad[np - 10] = Vec2::new(f32::NAN, 0.0);
    bad[np / 2] = Vec2::new(1e30, 0.0); // beyond the cell range
    let mut s = particle_hash::<Hierarchical, Aabb2>(np);
    let want = s.build(&bad, sc.radius).unwrap_err();
    assert_eq!(h.par_build(&ex, &bad, sc.radius).unwrap_err(), want);
    assert_eq!(
        h.par_build(&ex, &sc.points, -1.0).unwrap_err(),
        s.build(&sc.points, -1.0).unwrap_err()
    );
    let mut more = sc.points.clone();
    more.push(Vec2::ZERO);
    assert_eq!(
        h.par_build(&ex, &more, sc.radius).unwrap_err(),
        s.build(&more, sc.radius).unwrap_err()
    );
    assert_eq!(h.stats(), stats);
    assert!((0..np as u32).all(|i| h.position(i) == Some(sc.points[i as usize])));
    let mut few: Vec<u32> = Vec::new();
    assert!(matches!(
        h.par_for_each_pair(&ex, &mut few, |c: &mut u32, _, _, _| *c += 1),
        Err(Error::BufferTooSmall { .. })
    ));
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u8, [u8; 4]),
    Update(u8, [u8; 4]),
    Remove(u8),
    Particles(u8, bool),
    Serial,
    Par(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let b = any::<[u8; 4]>();
    prop_oneof![
        4 => (0u8..40, b).prop_map(|(i, b)| Op::Insert(i, b)),
        3 => (0u8..40, b).prop_map(|(i, b)| Op::Update(i, b)),
        2 => (0u8..40).prop_map(Op::Remove),
        1 => (any::<u8>(), any::<bool>()).prop_map(|(s, p)| Op::Particles(s, p)),
        1 => Just(Op::Serial),
        3 => (0u8..6).prop_map(Op::Par),
    ]
}

fn bx(b: [u8; 4]) -> Aabb2 {
    let x = b[0] as f32 / 16.0;
    let y = b[1] as f32 / 16.0;
    Aabb2::new(
        Vec2::new(x, y),
        Vec2::new(x + (b[2] % 64) as f32 / 8.0, y + (b[3] % 64) as f32 / 16.0),
    )
    .unwrap()
}

fn points(seed: u8) -> Vec<Vec2> {
    (0..(seed as usize % 50))
        .map(|k| {
            let h = (k as u32)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(seed as u32 * 977);
            Vec2::new((h % 256) as f32 / 16.0, ((h >> 8) % 256) as f32 / 16.0)
        })
        .collect()
}

fn mixed<S: Scheme>(ops: &[Op]) -> Result<(), TestCaseError> {
    let exs = execs();
    let cfg = HashConfig::<Vec2>::new(0.5, 0b1111).unwrap();
    let new = || make::class_hash::<S, Aabb2>(36, 256, 4096, 64, cfg);
    let (mut mixed, mut twin) = (new(), new());
    for op in ops {
        match op {
            Op::Insert(i, b) => prop_assert_eq!(
                mixed.insert(*i as u32, bx(*b)),
                twin.insert(*i as u32, bx(*b))
            ),
            Op::Update(i, b) => prop_assert_eq!(
                mixed.update(*i as u32, bx(*b)),
                twin.update(*i as u32, bx(*b))
            ),
            Op::Remove(i) => prop_assert_eq!(
                mixed.remove(*i as u32).is_ok(),
                twin.remove(*i as u32).is_ok()
            ),
            Op::Particles(s, par) => {
                let p = points(*s);
                let got = if *par {
                    mixed.par_build(&exs[*s as usize % 6].1, &p, 0.4)
                } else {
                    mixed.build(&p, 0.4)
                };
                prop_assert_eq!(got, twin.build(&p, 0.4));
            }
            Op::Serial => {
                for m in MODES {
                    prop_assert_eq!(
                        serial_candidates(&mut mixed, m),
                        serial_candidates(&mut twin, m)
                    );
                }
            }
            Op::Par(e) => {
                let ex = &exs[*e as usize].1;
                for m in MODES {
                    prop_assert_eq!(
                        par_candidates(&mut mixed, ex, m),
                        serial_candidates(&mut twin, m)
                    );
                }
                let mut sinks = vec![Vec::new(); mixed.pair_tasks()];
                mixed
                    .par_for_each_pair(ex, &mut sinks, |s: &mut Vec<(u32, u32, f32)>, i, j, d| {
                        s.push((i, j, d))
                    })
                    .unwrap();
                let mut w = Vec::new();
                twin.for_each_pair(|i, j, d| w.push((i, j, d)));
                prop_assert_eq!(sinks.concat(), w);
            }
        }
        prop_assert!(mixed.validate().is_ok());
        prop_assert_eq!(mixed.box_count(), twin.box_count());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random operations where pair enumerations and particle builds
    /// alternate between serial and parallel calls on random executors,
    /// against a twin that only calls the serial forms: every answer
    /// identical, in order; `validate` after every operation.
    #[test]
    fn mixed_serial_and_parallel_calls_agree(ops in proptest::collection::vec(op(), 1..50)) {
        mixed::<Hierarchical>(&ops)?;
        mixed::<Multilevel>(&ops)?;
    }
}
