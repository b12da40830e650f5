//! Criterion benchmarks of the broad phase: one step (update every box, then
//! every overlapping pair) of the paper's moving cubes at 10⁴ boxes, the
//! hierarchical hash grid against sweep and prune, parry3d's `Bvh` (refit
//! and rebuild) and brute force. Ids: `step/10000/IMPLEMENTATION`.
//!
//! Before timing, every implementation's pair count after one step is
//! checked against the hierarchical hash grid's; a mismatch panics. The full
//! comparison (10² to 10⁶, the paper's §4) is the `bp_report` binary.
//!
//! A second group, `threads/100000/IMPLEMENTATION-T`, times the same step at
//! 10⁵ boxes on `T` = 1 and 2 threads: the grid's parallel forms
//! (`par_update_all` + `par_for_each_overlap` on a
//! [`spatium_host::par::HostExec`]) and parry3d's `Bvh` rebuilt with its
//! task-parallel pair traversal on a rayon pool of `T` threads (criterion
//! reports wall-clock time; the thread-scaling report is `report --
//! threads --only bp`).
//!
//! A third group, `ray/N/{first,all}/IMPLEMENTATION` for N = 10⁴ and 10⁵
//! moving cubes, casts the same 1 000 random rays (origins in the scene,
//! random unit directions, `max_t` a quarter of the scene) through every
//! spatium broad phase and parry3d's `Bvh` (`cast_ray`, and `leaves` with
//! the ray test on its nodes for all hits): the nearest box (`first_box`)
//! and every box in order (`cast_boxes`). Before timing, every
//! implementation's hits are checked against brute force's.

use core::hint::black_box;
use core::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use spatium::exec::Padded;
use spatium::{
    Aabb3, BroadPhase, BruteForceBroadPhase, HhgConfig, Point, Ray, RayCast, RayHit,
    UpdateStrategy, Vec3,
};
use spatium_benches::bp_peers::{ParryBvh, SweepAndPrune};
use spatium_host::make;
use spatium_host::par::{HostExec, Rayon};
use spatium_host::rng::Rng;
use spatium_host::runtime::{AnyBroad, BroadKind, Named};
use spatium_host::scenarios::moving_cubes;

const N: usize = 10_000;
/// Boxes of the thread group: enough for tens of tasks.
const N_PAR: usize = 100_000;

fn bench(c: &mut Criterion) {
    let mut sc = moving_cubes::<Aabb3>(N, 3);
    let start = sc.boxes.clone();
    sc.step();
    let moved = sc.boxes.clone();
    let cfg = HhgConfig::DEFAULT;

    let mut g = make::hhg::<Aabb3>(N, 2 * cfg.arena_words_for::<Aabb3>(N), cfg);
    for (i, b) in start.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    let mut sap = SweepAndPrune::new_sorted(&start);
    let mut refit = ParryBvh::new(&start);
    let mut rebuild = ParryBvh::new(&start);
    let mut brute = BruteForceBroadPhase::new(make::brute_slots::<Aabb3>(N));
    for (i, b) in start.iter().enumerate() {
        brute.insert(i as u32, *b).unwrap();
    }

    // Alternate between the two box sets so every iteration really moves.
    let sets = [&start, &moved];
    let mut grp = c.benchmark_group(format!("step/{N}"));
    grp.sample_size(20).measurement_time(Duration::from_secs(3));
    let mut reference = None;
    let mut bench_step = |name: &str, step: &mut dyn FnMut(&[Aabb3]) -> u64| {
        let pairs = step(sets[1]);
        assert_eq!(
            *reference.get_or_insert(pairs),
            pairs,
            "{name} disagrees with hhg"
        );
        let mut k = 0usize;
        grp.bench_function(name, |b| {
            b.iter(|| {
                k += 1;
                black_box(step(sets[k % 2]))
            })
        });
    };
    bench_step("hhg", &mut |boxes| {
        g.update_all(boxes, UpdateStrategy::Incremental).unwrap();
        let mut n = 0u64;
        g.for_each_overlap(|_, _| n += 1).unwrap();
        n
    });
    bench_step("sap", &mut |boxes| {
        sap.update(boxes);
        let mut n = 0u64;
        sap.for_each_overlap(|_, _| n += 1);
        n
    });
    bench_step("parry-refit", &mut |boxes| {
        refit.refit(boxes);
        let mut n = 0u64;
        refit.for_each_overlap(|_, _| n += 1);
        n
    });
    bench_step("parry-rebuild", &mut |boxes| {
        rebuild.rebuild(boxes);
        let mut n = 0u64;
        rebuild.for_each_overlap(|_, _| n += 1);
        n
    });
    bench_step("brute", &mut |boxes| {
        for (i, b) in boxes.iter().enumerate() {
            brute.update(i as u32, *b).unwrap();
        }
        let mut n = 0u64;
        brute.for_each_overlap(|_, _| n += 1).unwrap();
        n
    });
    grp.finish();
}

/// The step on 1 and 2 threads: the grid's parallel forms and parry's
/// parallel pair traversal.
fn bench_threads(c: &mut Criterion) {
    let mut sc = moving_cubes::<Aabb3>(N_PAR, 4);
    let start = sc.boxes.clone();
    sc.step();
    let moved = sc.boxes.clone();
    let sets = [&start, &moved];
    let cfg = HhgConfig::DEFAULT;
    let mut grp = c.benchmark_group(format!("threads/{N_PAR}"));
    grp.sample_size(10).measurement_time(Duration::from_secs(3));
    let mut reference = None;
    for threads in [1usize, 2] {
        let exec = HostExec::new(threads);
        let mut g = make::hhg::<Aabb3>(N_PAR, 2 * cfg.arena_words_for::<Aabb3>(N_PAR), cfg);
        for (i, b) in start.iter().enumerate() {
            g.insert(i as u32, *b).unwrap();
        }
        // One counter per task, each on its own cache lines (no false
        // sharing between the cores' counters).
        let mut sinks: Vec<Padded<u64>> = Vec::new();
        let mut step = |boxes: &[Aabb3]| {
            g.par_update_all(&exec, boxes, UpdateStrategy::Incremental)
                .unwrap();
            sinks.clear();
            sinks.resize(g.overlap_tasks(), Padded(0));
            g.par_for_each_overlap(&exec, &mut sinks, |s, _, _| **s += 1)
                .unwrap();
            sinks.iter().map(|s| **s).sum::<u64>()
        };
        let pairs = step(sets[1]);
        assert_eq!(*reference.get_or_insert(pairs), pairs, "hhg-par-{threads}");
        let mut k = 0usize;
        grp.bench_function(format!("hhg-par-{threads}"), |b| {
            b.iter(|| {
                k += 1;
                black_box(step(sets[k % 2]))
            })
        });
    }
    for threads in [1usize, 2] {
        let pool = Rayon::new(threads).unwrap();
        let mut bvh = ParryBvh::new(&start);
        let mut step = |boxes: &[Aabb3]| {
            bvh.rebuild(boxes);
            pool.pool().install(|| bvh.overlaps_parallel()).len() as u64
        };
        let pairs = step(sets[1]);
        assert_eq!(
            reference,
            Some(pairs),
            "parry-rebuild-par-{threads} disagrees with hhg"
        );
        let mut k = 0usize;
        grp.bench_function(format!("parry-rebuild-par-{threads}"), |b| {
            b.iter(|| {
                k += 1;
                black_box(step(sets[k % 2]))
            })
        });
    }
    grp.finish();
}

/// Rays cast per iteration of the ray group.
const RAYS: usize = 1000;

/// `RAYS` rays from random points of the scene along random unit
/// directions, `max_t` a quarter of the scene's longest side.
fn scene_rays(extent: Vec3, seed: u64) -> Vec<Ray<Vec3>> {
    let mut rng = Rng::new(seed);
    let e = extent.x.max(extent.y).max(extent.z);
    let mut out = Vec::with_capacity(RAYS);
    while out.len() < RAYS {
        let o = Vec3::from_fn(|k| rng.range(0.0, extent.coord(k)));
        let d = Vec3::from_fn(|_| rng.normal());
        let n = d.dot(d).sqrt();
        if let Ok(r) = Ray::new(o, d * (1.0 / n), 0.25 * e) {
            out.push(r);
        }
    }
    out
}

/// First hit and all hits of the same rays through every broad phase and
/// parry's `Bvh`, at 10⁴ and 10⁵ moving cubes.
fn bench_rays(c: &mut Criterion) {
    for n in [10_000usize, 100_000] {
        let sc = moving_cubes::<Aabb3>(n, 5);
        let boxes = sc.boxes.clone();
        let rays = scene_rays(sc.extent, 6);
        let mut kinds: Vec<(String, AnyBroad<Aabb3>)> = Vec::new();
        for &(name, kind) in BroadKind::NAMES {
            if kind == BroadKind::Brute && n > 10_000 {
                continue;
            }
            let mut bp = AnyBroad::new(kind, &boxes, 1.0).unwrap();
            for (i, b) in boxes.iter().enumerate() {
                bp.insert(i as u32, *b).unwrap();
            }
            kinds.push((name.to_string(), bp));
        }
        let bvh = ParryBvh::new(&boxes);
        // The reference: brute force over the boxes.
        let mut oracle = BruteForceBroadPhase::new(make::brute_slots::<Aabb3>(n));
        for (i, b) in boxes.iter().enumerate() {
            oracle.insert(i as u32, *b).unwrap();
        }
        let mut buf = vec![RayHit::default(); n];
        let mut want_first = Vec::new();
        let mut want_all = Vec::new();
        for r in &rays {
            want_first.push(oracle.first_box(r).unwrap());
            let k = oracle.cast_boxes(r, &mut buf).unwrap();
            want_all.push(buf[..k].to_vec());
        }
        let total: usize = want_all.iter().map(Vec::len).sum();
        let firsts = want_first.iter().flatten().count();
        assert!(firsts > RAYS / 2, "too few rays hit ({firsts})");
        for (name, bp) in &mut kinds {
            for (i, r) in rays.iter().enumerate() {
                assert_eq!(
                    bp.first_box(r).unwrap(),
                    want_first[i],
                    "{name} first, ray {i}"
                );
                let k = bp.cast_boxes(r, &mut buf).unwrap();
                assert_eq!(&buf[..k], &want_all[i][..], "{name} all, ray {i}");
            }
        }
        let mut hits = Vec::new();
        for (i, r) in rays.iter().enumerate() {
            let got = bvh.first_hit(r, &boxes).map(|(_, t)| t);
            assert_eq!(got, want_first[i].map(|h| h.t), "parry first, ray {i}");
            bvh.all_hits(r, &boxes, &mut hits);
            assert_eq!(hits, want_all[i], "parry all, ray {i}");
        }

        let mut grp = c.benchmark_group(format!("ray/{n}"));
        grp.sample_size(10).measurement_time(Duration::from_secs(2));
        println!("ray/{n}: {RAYS} rays, {firsts} hit, {total} hits in all");
        for (name, bp) in &mut kinds {
            grp.bench_function(format!("first/{name}"), |b| {
                b.iter(|| {
                    let mut s = 0f32;
                    for r in &rays {
                        s += bp.first_box(r).unwrap().map_or(0.0, |h| h.t);
                    }
                    black_box(s)
                })
            });
        }
        grp.bench_function("first/parry-bvh", |b| {
            b.iter(|| {
                let mut s = 0f32;
                for r in &rays {
                    s += bvh.first_hit(r, &boxes).map_or(0.0, |h| h.1);
                }
                black_box(s)
            })
        });
        for (name, bp) in &mut kinds {
            grp.bench_function(format!("all/{name}"), |b| {
                b.iter(|| {
                    let mut s = 0usize;
                    for r in &rays {
                        s += bp.cast_boxes(r, &mut buf).unwrap();
                    }
                    black_box(s)
                })
            });
        }
        grp.bench_function("all/parry-bvh", |b| {
            b.iter(|| {
                let mut s = 0usize;
                for r in &rays {
                    bvh.all_hits(r, &boxes, &mut hits);
                    s += hits.len();
                }
                black_box(s)
            })
        });
        grp.finish();
    }
}

criterion_group!(benches, bench, bench_threads, bench_rays);
criterion_main!(benches);
