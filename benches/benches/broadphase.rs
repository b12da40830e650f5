//! Criterion benchmarks of the broad phase: one step (update every box, then
//! every overlapping pair) of the paper's moving cubes at 10⁴ boxes, the
//! hierarchical hash grid and the grid broad phase (`uniform::GridBroadPhase`,
//! `update_many` of every box) against sweep and prune, parry3d's `Bvh`
//! (refit and rebuild) and brute force. Ids: `step/10000/IMPLEMENTATION`.
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
//!
//! A fourth group, `periodic/N/STRUCTURE-PHASE-FORM`, times
//! `spatium::PeriodicBroadPhase` over the hierarchical hash grid and the
//! kd-tree against the same structure used directly (`plain`), on the same
//! moving cubes (N = 10⁴ and 10⁵) in the scene's own domain `[0, extent)³`,
//! periodic along every axis for the adapter, so every box beyond an upper
//! face is stored twice or more: `build` (clear, insert every box, every
//! overlapping pair) and `step` (`update_many` of every box, every pair).
//! The periodic run finds the pairs across the faces too. Before timing it
//! prints the image count and both pair counts.

use core::hint::black_box;
use core::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use spatium::exec::Padded;
use spatium::kdtree::{KdBroadPhase, KdConfig, KdRecord, KdSlot};
use spatium::{
    Aabb3, BroadPhase, BruteForceBroadPhase, HhgConfig, PeriodicBox, PeriodicBroadPhase,
    PeriodicImage, PeriodicSlot, Point, Ray, RayCast, RayHit, UpdateStrategy, Vec3,
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
    let mut grid = make::grid_bp::<Aabb3>(N);
    for (i, b) in start.iter().enumerate() {
        grid.insert(i as u32, *b).unwrap();
    }
    let mut updates: Vec<(u32, Aabb3)> = Vec::with_capacity(N);
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
        g.for_each_overlap(|a, b| n += u64::from(a ^ b)).unwrap();
        n
    });
    bench_step("grid", &mut |boxes| {
        updates.clear();
        updates.extend(boxes.iter().enumerate().map(|(i, b)| (i as u32, *b)));
        grid.update_many(&updates).unwrap();
        let mut n = 0u64;
        grid.for_each_overlap(|a, b| n += u64::from(a ^ b)).unwrap();
        n
    });
    bench_step("sap", &mut |boxes| {
        sap.update(boxes);
        let mut n = 0u64;
        sap.for_each_overlap(|a, b| n += u64::from(a ^ b));
        n
    });
    bench_step("parry-refit", &mut |boxes| {
        refit.refit(boxes);
        let mut n = 0u64;
        refit.for_each_overlap(|a, b| n += u64::from(a ^ b));
        n
    });
    bench_step("parry-rebuild", &mut |boxes| {
        rebuild.rebuild(boxes);
        let mut n = 0u64;
        rebuild.for_each_overlap(|a, b| n += u64::from(a ^ b));
        n
    });
    bench_step("brute", &mut |boxes| {
        for (i, b) in boxes.iter().enumerate() {
            brute.update(i as u32, *b).unwrap();
        }
        let mut n = 0u64;
        brute
            .for_each_overlap(|a, b| n += u64::from(a ^ b))
            .unwrap();
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
            // The brute force and the grid (whose casts are the brute
            // force's scan) only at 10⁴.
            if matches!(kind, BroadKind::Brute | BroadKind::Grid) && n > 10_000 {
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

/// A hierarchical hash grid for ids below `ids`, with arena room for
/// `boxes` boxes.
fn hhg_for(ids: usize, boxes: usize) -> make::VecHhg<Aabb3> {
    let cfg = HhgConfig::DEFAULT;
    make::hhg::<Aabb3>(ids, 2 * cfg.arena_words_for::<Aabb3>(boxes), cfg)
}

type VecKd = KdBroadPhase<Aabb3, u64, Vec<KdSlot<Aabb3>>, Vec<KdRecord<u64>>>;

/// A kd-tree broad phase for ids below `ids`, with record room for `boxes`
/// boxes (split boxes take up to 8 records).
fn kd_for(ids: usize, boxes: usize) -> VecKd {
    let records = 8 * boxes + 64;
    KdBroadPhase::new(
        vec![KdSlot::EMPTY; ids],
        vec![KdRecord::EMPTY; records],
        vec![KdRecord::EMPTY; records],
        KdConfig::DEFAULT,
    )
}

/// Clear, insert every box, count the pairs.
fn build<T: BroadPhase<Aabb3>>(t: &mut T, boxes: &[Aabb3]) -> u64 {
    t.clear();
    for (i, b) in boxes.iter().enumerate() {
        t.insert(i as u32, *b).unwrap();
    }
    let mut n = 0u64;
    t.for_each_overlap(|a, b| n += u64::from(a ^ b)).unwrap();
    n
}

/// `update_many` of every box, count the pairs.
fn step<T: BroadPhase<Aabb3>>(t: &mut T, updates: &[(u32, Aabb3)]) -> u64 {
    t.update_many(updates).unwrap();
    let mut n = 0u64;
    t.for_each_overlap(|a, b| n += u64::from(a ^ b)).unwrap();
    n
}

/// One structure, plain and periodic: build and step, timed.
fn bench_pair<T: BroadPhase<Aabb3> + Send + Sync>(
    grp: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    plain: &mut T,
    periodic: &mut PeriodicBroadPhase<Aabb3, T, Vec<PeriodicSlot<Aabb3>>, Vec<PeriodicImage>>,
    sets: [&[(u32, Aabb3)]; 2],
    boxes: &[Aabb3],
) {
    let (pp, pq) = (build(plain, boxes), build(periodic, boxes));
    eprintln!(
        "periodic/{}/{name}: {} boxes, {} images ({:.2} per box), pairs plain {pp}, periodic {pq}",
        boxes.len(),
        periodic.box_count(),
        periodic.image_count(),
        periodic.image_count() as f64 / periodic.box_count() as f64
    );
    grp.bench_function(format!("{name}-build-plain"), |b| {
        b.iter(|| black_box(build(plain, boxes)))
    });
    grp.bench_function(format!("{name}-build-periodic"), |b| {
        b.iter(|| black_box(build(periodic, boxes)))
    });
    let mut k = 0usize;
    grp.bench_function(format!("{name}-step-plain"), |b| {
        b.iter(|| {
            k += 1;
            black_box(step(plain, sets[k % 2]))
        })
    });
    let mut k = 0usize;
    grp.bench_function(format!("{name}-step-periodic"), |b| {
        b.iter(|| {
            k += 1;
            black_box(step(periodic, sets[k % 2]))
        })
    });
}

/// The periodic adapter against the structure it wraps.
fn bench_periodic(c: &mut Criterion) {
    for n in [N, N_PAR] {
        let mut sc = moving_cubes::<Aabb3>(n, 5);
        let domain = PeriodicBox::all(Vec3::ZERO, sc.extent).unwrap();
        let start = sc.boxes.clone();
        sc.step();
        let with_ids = |bs: &[Aabb3]| -> Vec<(u32, Aabb3)> {
            bs.iter().enumerate().map(|(i, b)| (i as u32, *b)).collect()
        };
        let (a, b) = (with_ids(&start), with_ids(&sc.boxes));
        let sets: [&[(u32, Aabb3)]; 2] = [&a, &b];
        let mut grp = c.benchmark_group(format!("periodic/{n}"));
        grp.sample_size(10).measurement_time(Duration::from_secs(3));
        // Room for the images: a unit cube in a period L has (1 + 1/L)³
        // images on average; 1.5 n (a pool of n / 2 extra images) is
        // generous for both sizes.
        let images = n + n / 2;
        let slots = || vec![PeriodicSlot::EMPTY; n];
        let pool = || vec![PeriodicImage::EMPTY; images - n];
        let mut plain = hhg_for(n, n);
        // The same arena as the plain grid: one sized for more boxes gets
        // larger cell tables (a different grid, not the adapter's cost).
        let mut periodic =
            PeriodicBroadPhase::new(hhg_for(images, n), domain, slots(), pool()).unwrap();
        bench_pair(&mut grp, "hhg", &mut plain, &mut periodic, sets, &start);
        drop((plain, periodic));
        let mut plain = kd_for(n, n);
        let mut periodic =
            PeriodicBroadPhase::new(kd_for(images, images), domain, slots(), pool()).unwrap();
        bench_pair(&mut grp, "kdtree", &mut plain, &mut periodic, sets, &start);
        grp.finish();
    }
}

criterion_group!(benches, bench, bench_threads, bench_rays, bench_periodic);
criterion_main!(benches);
