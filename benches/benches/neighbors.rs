//! Criterion benchmarks: fixed-radius neighbour search on the jittered fluid
//! block, spatium against kiddo, rstar and splashsurf_lib.
//!
//! Ids are `METRIC/ORDER/N/IMPLEMENTATION`, e.g.
//! `pairs/cell-ordered/97336/spatium-sorted`; filter with
//! `cargo bench -p spatium-benches -- pairs/shuffled/10648/`.
//!
//! The `neighbors` groups run on one thread: only sequential code paths of
//! the peers are called. The `threads` group runs spatium's parallel forms
//! and kiddo's queries on 1 and 2 threads. The `clusters` group times the
//! cluster-pair prototype (issue 17) beside the cell-sorted hash.
//!
//! Before an implementation is timed on a scene, its answer is checked
//! against spatium's pair count (`spatium_benches::check`); a mismatch
//! panics. An implementation that refuses a scene (`BucketHash` with a
//! bucket over its 64 slots) is reported on stderr and not benchmarked.
//!
//! Sample sizes and times shrink with N so that the whole run takes about
//! ten minutes on a 2-core machine. At N = 10⁶ the slowest runs (several
//! seconds each: rstar, and the linked and bucket hashes on shuffled input)
//! are left out unless `SPATIUM_BENCH_FULL=1` is set; the report binary
//! (`cargo run --release -p spatium-benches --bin report -- neighbors`) measures them all.

use core::cell::OnceCell;
use core::hint::black_box;
use core::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use spatium_benches::{
    CheckError, Imp, Metric, Order, Reference, Runner, SIDES, Scene, checked_runner,
};

/// Whether `imp` is measured at `n` in `order` (besides `Imp::measured`).
fn included(imp: Imp, n: usize, order: Order, full: bool) -> bool {
    if full || n < 1_000_000 {
        return true;
    }
    match imp {
        Imp::Rstar => false,
        Imp::Bucket | Imp::Linked | Imp::LinkedUpdate => order == Order::CellOrdered,
        _ => true,
    }
}

fn neighbors(c: &mut Criterion) {
    let full = std::env::var_os("SPATIUM_BENCH_FULL").is_some_and(|v| v == "1");
    for side in SIDES {
        let n = side.pow(3);
        for order in Order::ALL {
            // Built on first use, so a filtered run skips unused sizes, except
            // where an implementation may refuse the scene: that must be known
            // before its benchmark is registered.
            let scene: OnceCell<Scene> = OnceCell::new();
            let reference: OnceCell<Reference> = OnceCell::new();
            for metric in Metric::ALL {
                let mut g = c.benchmark_group(format!("{metric}/{order}/{n}"));
                g.throughput(Throughput::Elements(n as u64));
                match n {
                    ..=20_000 => {
                        g.sample_size(20)
                            .warm_up_time(Duration::from_millis(300))
                            .measurement_time(Duration::from_secs(1));
                    }
                    20_001..=200_000 => {
                        g.sample_size(10)
                            .sampling_mode(SamplingMode::Flat)
                            .warm_up_time(Duration::from_millis(300))
                            .measurement_time(Duration::from_secs(2));
                    }
                    _ => {
                        g.sample_size(10)
                            .sampling_mode(SamplingMode::Flat)
                            .warm_up_time(Duration::from_millis(100))
                            .measurement_time(Duration::from_secs(3));
                    }
                }
                for imp in Imp::ALL {
                    if !imp.measured(metric, n) || !included(imp, n, order, full) {
                        continue;
                    }
                    let mut runner: Option<Runner> = None;
                    if imp.may_refuse() {
                        let sc = scene.get_or_init(|| Scene::new(side, order));
                        let rf = reference.get_or_init(|| Reference::compute(sc));
                        match checked_runner(imp, sc, rf, metric) {
                            Ok(r) => runner = Some(r),
                            Err(CheckError::Refused(e)) => {
                                eprintln!("not benchmarked: {e}");
                                continue;
                            }
                            Err(e) => panic!("sanity check failed: {e}"),
                        }
                    }
                    g.bench_function(imp.name(), |b| {
                        let scene = scene.get_or_init(|| Scene::new(side, order));
                        let runner = runner.get_or_insert_with(|| {
                            let reference = reference.get_or_init(|| Reference::compute(scene));
                            checked_runner(imp, scene, reference, metric)
                                .unwrap_or_else(|e| panic!("sanity check failed: {e}"))
                        });
                        b.iter(|| black_box(runner.run(scene, metric).expect("checked")));
                    });
                }
                g.finish();
            }
        }
    }
}

/// `threads/pairs/cell-ordered/97336/{spatium-T, kiddo-rayon-T}` for T = 1,
/// 2: build + every pair through the parallel forms on `HostExec::new(T)`,
/// and kiddo's queries as a rayon `par_iter` on a pool of T threads (the
/// report's `threads` experiment measures more sizes and thread counts).
fn threads(c: &mut Criterion) {
    use spatium::table::table_len;
    use spatium_benches::experiments::threads_neighbors::{kiddo_pairs, pairs};
    let side = SIDES[1];
    let scene = Scene::new(side, Order::CellOrdered);
    let n = scene.points.len();
    let mut g = c.benchmark_group(format!("threads/pairs/cell-ordered/{n}"));
    g.throughput(Throughput::Elements(n as u64))
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let mut hash = spatium_host::make::cell_sorted(n, table_len(n, 2));
    for t in [1usize, 2] {
        let exec = spatium_host::par::HostExec::new(t);
        g.bench_function(format!("spatium-{t}"), |b| {
            b.iter(|| black_box(pairs(&exec, &mut hash, &scene)))
        });
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .expect("rayon pool");
        g.bench_function(format!("kiddo-rayon-{t}"), |b| {
            b.iter(|| black_box(pool.install(|| kiddo_pairs(&scene))))
        });
    }
    g.finish();
}

/// `periodic/{pairs,neighbours}/N/{dense-periodic, dense, sorted}`: build +
/// every pair (or every particle's neighbours) on the cell-ordered fluid
/// block, by `uniform::DenseGrid` periodic along all three axes (a box one
/// spacing longer than the lattice, so the block touches itself across
/// every face), the same grid without periodic axes (its box the block's
/// bounds), and the cell-sorted hash. Issue 21's target: the periodic
/// search within 1.2× of the non-periodic one.
fn periodic(c: &mut Criterion) {
    use spatium::Vec3;
    use spatium::table::table_len;
    use spatium_benches::scene::{PeriodicWork, periodic_run};
    for side in [SIDES[0], SIDES[1]] {
        let scene = Scene::new(side, Order::CellOrdered);
        let (n, r) = (scene.points.len(), scene.radius);
        let (plain_box, torus) = scene.periodic_boxes();
        let mut periodic = spatium_host::make::dense(torus, n, r).expect("grid");
        let mut plain = spatium_host::make::dense(plain_box, n, r).expect("grid");
        let mut sorted = spatium_host::make::cell_sorted::<Vec3>(n, table_len(n, 2));
        for what in ["pairs", "neighbours"] {
            let mut g = c.benchmark_group(format!("periodic/{what}/{n}"));
            g.throughput(Throughput::Elements(n as u64))
                .sample_size(10)
                .sampling_mode(SamplingMode::Flat)
                .warm_up_time(Duration::from_millis(300))
                .measurement_time(Duration::from_secs(2));
            let work = if what == "pairs" {
                PeriodicWork::Pairs
            } else {
                PeriodicWork::Neighbours
            };
            let pts = &scene.points;
            g.bench_function("dense-periodic", |b| {
                b.iter(|| black_box(periodic_run(&mut periodic, pts, r, work)))
            });
            g.bench_function("dense", |b| {
                b.iter(|| black_box(periodic_run(&mut plain, pts, r, work)))
            });
            g.bench_function("sorted", |b| {
                b.iter(|| black_box(periodic_run(&mut sorted, pts, r, work)))
            });
            g.finish();
        }
    }
}

/// `clusters/pairs/N/{spatium-sorted, cluster-4, cluster-8}`: build + every
/// pair on the cell-ordered fluid block, by the cell-sorted hash and by the
/// cluster-pair prototype (`spatium_benches::cluster_pairs`, GROMACS's
/// scheme; clusters of 4 or 8 in columns of one radius) — issue 17's
/// cluster-pair experiment. The pair counts are checked equal first.
fn clusters(c: &mut Criterion) {
    use spatium::NeighborSearch;
    use spatium::table::table_len;
    use spatium_benches::cluster_pairs::ClusterPairs;
    for side in [SIDES[0], SIDES[1]] {
        let scene = Scene::new(side, Order::CellOrdered);
        let (n, r) = (scene.points.len(), scene.radius);
        let pts = &scene.points;
        let mut sorted = spatium_host::make::cell_sorted(n, table_len(n, 2));
        let mut c4 = ClusterPairs::<4>::new(r);
        let mut c8 = ClusterPairs::<8>::new(r);
        let mut hash_pairs = || {
            sorted.build(pts, r).expect("build");
            let mut k = 0u64;
            sorted.for_each_pair(|_, _, _| k += 1);
            k
        };
        let want = hash_pairs();
        c4.build(pts, r);
        c8.build(pts, r);
        assert_eq!(c4.for_each_pair(|_, _, _| ()).pairs, want, "cluster-4");
        assert_eq!(c8.for_each_pair(|_, _, _| ()).pairs, want, "cluster-8");
        let mut g = c.benchmark_group(format!("clusters/pairs/{n}"));
        g.throughput(Throughput::Elements(n as u64))
            .sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(2));
        g.bench_function("spatium-sorted", |b| b.iter(|| black_box(hash_pairs())));
        g.bench_function("cluster-4", |b| {
            b.iter(|| {
                c4.build(pts, r);
                let mut k = 0u64;
                c4.for_each_pair(|_, _, _| k += 1);
                black_box(k)
            })
        });
        g.bench_function("cluster-8", |b| {
            b.iter(|| {
                c8.build(pts, r);
                let mut k = 0u64;
                c8.for_each_pair(|_, _, _| k += 1);
                black_box(k)
            })
        });
        g.finish();
    }
}

criterion_group!(benches, neighbors, threads, periodic, clusters);
criterion_main!(benches);
