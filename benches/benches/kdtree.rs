//! Criterion benchmarks of the linear kd-tree (Poirrier 2009) on the
//! settling spheres of `spatium_benches::settle` at N = 10⁴, step 50 (the
//! first step the paper times). Groups:
//!
//! * `kd-build/10000`: the build alone, radix sort against `sort_unstable`;
//! * `kd-cells/10000`: build + exact sweep, kd-tree against octree cells;
//! * `kd-split/10000`: build + exact sweep, the paper's splitting against
//!   none;
//! * `kd-sweep/10000`: the sweep alone over one build, raw (counting) against
//!   exact;
//! * `kd-reuse/10000`: the build alternating between the boxes of steps 49
//!   and 50, temporal reuse against a fresh build each time;
//! * `step/10000`: one broad-phase step (build or update, then every
//!   overlapping pair) alternating between steps 49 and 50: kd exact, parry3d
//!   `Bvh` refit, sweep and prune, hierarchical hash grid;
//! * `kd-threads/10000`: the same kd step through the serial API and through
//!   the parallel forms (`par_build` + `par_for_each_candidate_pair`, a pair
//!   counter per task) on 1 and 2 threads.
//!
//! Every exact variant's pair count is checked against the kd-tree's before
//! timing; a mismatch panics. The full comparison (10⁴ to 5·10⁶, the paper's
//! Tables 1–3) is the `kd_report` binary.

use core::hint::black_box;
use core::time::Duration;

use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use spatium::exec::Padded;
use spatium::kdtree::{Candidates, KdConfig, KdRecord, LinearKdTree, SortAlgo, Split};
use spatium::{Aabb3, BroadPhase, HhgConfig, UpdateStrategy};
use spatium_benches::bp_peers::{ParryBvh, SweepAndPrune};
use spatium_benches::settle::{PairSource, Settle};
use spatium_host::make::{self, VecHhg};
use spatium_host::par::HostExec;

const N: usize = 10_000;

type Tree = LinearKdTree<Aabb3, u64, Vec<KdRecord<u64>>>;

fn tree(cfg: KdConfig<Aabb3>) -> Tree {
    LinearKdTree::new(
        vec![KdRecord::EMPTY; 8 * N],
        vec![KdRecord::EMPTY; 8 * N],
        cfg,
    )
}

fn exact_pairs(t: &Tree, boxes: &[Aabb3]) -> u64 {
    let mut n = 0u64;
    t.for_each_candidate_pair(boxes, Candidates::Exact, |_, _| n += 1)
        .unwrap();
    n
}

fn quick<M: criterion::measurement::Measurement>(g: &mut BenchmarkGroup<'_, M>) {
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
}

fn bench(c: &mut Criterion) {
    let mut sim = Settle::paper(N).with_pair_source(PairSource::RawDedup);
    sim.advance_to(49);
    let before = sim.boxes().to_vec();
    sim.step();
    let boxes = sim.boxes().to_vec();
    let sets = [&before, &boxes];
    let split = KdConfig::DEFAULT;
    let none = KdConfig::DEFAULT.with_split(Split::None).unwrap();

    let mut reference = tree(split);
    reference.build(&boxes).unwrap();
    let want = exact_pairs(&reference, &boxes);

    // Build alone: radix against comparison sort.
    {
        let mut g = c.benchmark_group(format!("kd-build/{N}"));
        quick(&mut g);
        for (name, sort) in [
            ("radix", SortAlgo::Radix),
            ("sort_unstable", SortAlgo::Comparison),
        ] {
            let mut t = tree(split.with_sort(sort));
            t.build(&boxes).unwrap();
            assert_eq!(exact_pairs(&t, &boxes), want, "{name} disagrees");
            g.bench_function(name, |b| b.iter(|| t.build(black_box(&boxes)).unwrap()));
        }
        g.finish();
    }

    // Build + exact sweep: cell shapes and splitting.
    for (group, variants) in [
        (
            "kd-cells",
            [("kd-tree", split), ("octree", split.with_octree(true))],
        ),
        ("kd-split", [("split", split), ("no-split", none)]),
    ] {
        let mut g = c.benchmark_group(format!("{group}/{N}"));
        quick(&mut g);
        for (name, cfg) in variants {
            let mut t = tree(cfg);
            t.build(&boxes).unwrap();
            assert_eq!(exact_pairs(&t, &boxes), want, "{name} disagrees");
            g.bench_function(name, |b| {
                b.iter(|| {
                    t.build(black_box(&boxes)).unwrap();
                    exact_pairs(&t, &boxes)
                })
            });
        }
        g.finish();
    }

    // Sweep alone: raw (counting, the paper's kd-tree-1) against exact.
    {
        let mut g = c.benchmark_group(format!("kd-sweep/{N}"));
        quick(&mut g);
        let t = &reference;
        g.bench_function("raw", |b| {
            b.iter(|| {
                let mut n = 0u64;
                t.for_each_candidate_pair(black_box(&boxes), Candidates::Raw, |_, _| n += 1)
                    .unwrap();
                n
            })
        });
        g.bench_function("exact", |b| b.iter(|| exact_pairs(t, black_box(&boxes))));
        g.finish();
    }

    // Temporal reuse against a fresh build, alternating between two steps.
    {
        let mut g = c.benchmark_group(format!("kd-reuse/{N}"));
        quick(&mut g);
        for (name, cfg) in [("reuse", split.with_temporal_reuse(true)), ("fresh", split)] {
            let mut t = tree(cfg);
            t.build(&before).unwrap();
            t.build(&boxes).unwrap();
            assert_eq!(exact_pairs(&t, &boxes), want, "{name} disagrees");
            let mut k = 0usize;
            g.bench_function(name, |b| {
                b.iter(|| {
                    k += 1;
                    t.build(black_box(sets[k % 2])).unwrap();
                })
            });
        }
        g.finish();
    }

    // One broad-phase step against the peers.
    {
        let mut g = c.benchmark_group(format!("step/{N}"));
        quick(&mut g);
        let mut step_bench = |name: &str, step: &mut dyn FnMut(&[Aabb3]) -> u64| {
            assert_eq!(step(sets[1]), want, "{name} disagrees with the kd-tree");
            let mut k = 0usize;
            g.bench_function(name, |b| {
                b.iter(|| {
                    k += 1;
                    black_box(step(sets[k % 2]))
                })
            });
        };
        let mut kd = tree(split);
        step_bench("kd-exact", &mut |bx| {
            kd.build(bx).unwrap();
            exact_pairs(&kd, bx)
        });
        let mut bvh = ParryBvh::new(&before);
        step_bench("parry-refit", &mut |bx| {
            bvh.refit(bx);
            let mut n = 0u64;
            bvh.for_each_overlap(|_, _| n += 1);
            n
        });
        let mut sap = SweepAndPrune::new_sorted(&before);
        step_bench("sap", &mut |bx| {
            sap.update(bx);
            let mut n = 0u64;
            sap.for_each_overlap(|_, _| n += 1);
            n
        });
        let cfg = HhgConfig::DEFAULT;
        let mut hhg = make::hhg::<Aabb3>(N, 2 * VecHhg::<Aabb3>::arena_words_for(N, &cfg), cfg);
        for (i, b) in before.iter().enumerate() {
            hhg.insert(i as u32, *b).unwrap();
        }
        step_bench("hhg", &mut |bx| {
            hhg.update_all(bx, UpdateStrategy::Incremental).unwrap();
            let mut n = 0u64;
            hhg.for_each_overlap(|_, _| n += 1).unwrap();
            n
        });
        g.finish();
    }

    // The parallel forms on 1 and 2 threads beside the serial API (wall
    // clock: criterion's default measurement).
    {
        let mut g = c.benchmark_group(format!("kd-threads/{N}"));
        quick(&mut g);
        let mut kd = tree(split);
        let mut k = 0usize;
        g.bench_function("serial-api", |b| {
            b.iter(|| {
                k += 1;
                kd.build(sets[k % 2]).unwrap();
                black_box(exact_pairs(&kd, sets[k % 2]))
            })
        });
        for threads in [1, 2] {
            let exec = HostExec::new(threads);
            let mut kd = tree(split);
            let mut step = |bx: &[Aabb3]| {
                kd.par_build(&exec, bx).unwrap();
                let mut sinks = vec![Padded(0u64); kd.candidate_tasks()];
                kd.par_for_each_candidate_pair(
                    &exec,
                    bx,
                    Candidates::Exact,
                    &mut sinks,
                    |c, _, _| **c += 1,
                )
                .unwrap();
                sinks.iter().map(|s| s.0).sum::<u64>()
            };
            assert_eq!(step(sets[1]), want, "par step disagrees with the kd-tree");
            g.bench_function(format!("par-{threads}"), |b| {
                b.iter(|| {
                    k += 1;
                    black_box(step(sets[k % 2]))
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
