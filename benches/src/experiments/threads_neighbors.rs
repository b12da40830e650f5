//! The neighbour-search section of the thread-scaling experiment: the
//! jittered fluid block (the `neighbors` experiment's scene, 10⁶ particles
//! unless `--n`), each run a build plus one query pass, at every thread
//! count:
//!
//! * spatium's cell-sorted hash through the parallel forms
//!   (`par_build` + `par_for_each_pair` counting into per-task sinks, or
//!   `par_build` + `par_neighbor_lists` with room for the lists four
//!   times over (one sweep on several workers), and the build alone, so that the
//!   sweep's share can be read off), on cell-ordered input (a
//!   simulation that renumbers) and shuffled input (the sort of shuffled
//!   input stays on one thread: see `core/src/uniform/sorted/par.rs`);
//! * kiddo's `ImmutableKdTree` (its build on the calling thread, the
//!   crate's parallel build needs its `multi-threaded` feature, which the
//!   benches leave off) with its within-radius queries run as a rayon
//!   `par_iter` on a pool of the same size: how a kiddo user parallelises a
//!   fixed-radius search.

use kiddo::{ImmutableKdTree, SquaredEuclidean};
use rayon::prelude::*;
use spatium::NeighborSearch;
use spatium::exec::{Executor, Padded};
use spatium::table::table_len;
use spatium_host::make;
use spatium_host::par::HostExec;

use super::threads::{Setup, ThreadRow};
use crate::scene::{Order, Scene};

/// Rows of the neighbour search. Every workload is timed in interleaved
/// rounds over all thread counts ([`Setup::interleaved`]), so a slow spell
/// of a shared machine falls on every thread count alike rather than on
/// one thread count's whole median.
pub fn rows(setup: &Setup) -> Vec<ThreadRow> {
    let n = setup
        .n
        .unwrap_or(if setup.quick { 27_000 } else { 1_000_000 });
    let side = (n as f64).cbrt().round().max(2.0) as usize;
    let execs: Vec<HostExec> = setup.threads.iter().map(|&t| HostExec::new(t)).collect();
    let pools: Vec<rayon::ThreadPool> = setup
        .threads
        .iter()
        .map(|&t| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .expect("rayon pool")
        })
        .collect();
    let mut rows = Vec::new();
    let mut push = |workload: String, who: &str, n: usize, times: Vec<(f64, usize)>| {
        for (&t, (ms, runs)) in setup.threads.iter().zip(times) {
            rows.push(row(&workload, who, n, t, ms, runs));
        }
    };
    for order in [Order::CellOrdered, Order::Shuffled] {
        let scene = Scene::new(side, order);
        let n = scene.points.len();
        let mut hash = make::cell_sorted(n, table_len(n, 2));
        let mut want = None;
        let times = setup.interleaved(execs.len(), |k| {
            let c = pairs(&execs[k], &mut hash, &scene);
            assert_eq!(*want.get_or_insert(c), c, "pair count");
        });
        push(format!("pairs, {order}"), "spatium", n, times);
        let times = setup.interleaved(execs.len(), |k| {
            hash.par_build(&execs[k], &scene.points, scene.radius)
                .expect("build");
        });
        push(
            format!("build alone (par_build), {order}"),
            "spatium",
            n,
            times,
        );
        if order == Order::CellOrdered {
            let mut offsets = vec![0u32; n + 1];
            hash.build(&scene.points, scene.radius).expect("build");
            let total = hash
                .neighbor_lists(&mut offsets, &mut [])
                .unwrap_or_else(|e| match e {
                    spatium::Error::BufferTooSmall { needed, .. } => needed,
                    e => panic!("{e}"),
                });
            // Room for the lists four times over: on several workers
            // each task writes its lists in one sweep into a region in
            // proportion to its particles (see `par_neighbor_lists`);
            // with twice over, the block's denser tasks overflow theirs
            // and sweep again (2 threads: 1.11x instead of 1.71x here).
            let mut indices = vec![0u32; 4 * total];
            let times = setup.interleaved(execs.len(), |k| {
                hash.par_build(&execs[k], &scene.points, scene.radius)
                    .expect("build");
                hash.par_neighbor_lists(&execs[k], &mut offsets, &mut indices)
                    .expect("sized");
            });
            push(format!("CSR lists, {order}"), "spatium", n, times);
        }
        let times = setup.interleaved(pools.len(), |k| {
            let c = pools[k].install(|| kiddo_pairs(&scene));
            assert_eq!(Some(c), want, "kiddo pair count");
        });
        push(
            format!("pairs, {order}"),
            "kiddo (queries on rayon)",
            n,
            times,
        );
    }
    rows
}

fn row(
    workload: &str,
    who: &str,
    n: usize,
    threads: usize,
    median_ms: f64,
    runs: usize,
) -> ThreadRow {
    ThreadRow {
        workload: workload.to_owned(),
        who: who.to_owned(),
        n,
        threads,
        median_ms,
        runs,
    }
}

/// Build plus every pair within the radius, counted per task.
pub fn pairs<E: Executor>(
    exec: &E,
    hash: &mut make::VecCellSorted<spatium::Vec3>,
    scene: &Scene,
) -> u64 {
    hash.par_build(exec, &scene.points, scene.radius)
        .expect("build");
    let mut sinks = vec![Padded(0u64); hash.pair_tasks()];
    hash.par_for_each_pair(exec, &mut sinks, |c, _, _, _| **c += 1)
        .expect("sinks");
    sinks.iter().map(|s| s.0).sum()
}

/// kiddo: build, then each particle's within-radius query (strict, as
/// spatium's), counting the partners with a larger index, in parallel.
pub fn kiddo_pairs(scene: &Scene) -> u64 {
    let r2 = scene.radius * scene.radius;
    let tree: ImmutableKdTree<f32, 3> =
        ImmutableKdTree::new_from_slice(&scene.arrays).expect("kiddo build");
    scene
        .arrays
        .par_iter()
        .enumerate()
        .map(|(i, p)| {
            let i = i as u32;
            let mut c = 0u64;
            tree.query(p)
                .within::<SquaredEuclidean<f32>>(r2)
                .unsorted()
                .exclusive_boundaries()
                .visit(|it| c += u64::from(it.item > i));
            c
        })
        .sum()
}
