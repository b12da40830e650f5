//! The linear kd-tree and hierarchical-hashing sections of the
//! thread-scaling experiment (`report -- threads --only kd,hhash`).
//!
//! * `kd`: the kd experiment's Table 1 scene (uniform spheres at the
//!   settling scene's density 0.1, [`crate::settle`]), 10⁶ boxes by
//!   default (`--n` overrides; `--quick`: 2·10⁴). Rows: the parallel build
//!   (`LinearKdTree::par_build`), the parallel exact sweep
//!   (`par_for_each_candidate_pair`, a pair counter per task) and the two
//!   together (one broad-phase step); at one thread also the serial API
//!   (`build` + `for_each_candidate_pair`), the reference the parallel
//!   forms must not slow down.
//! * `hhash`: the Pouchol §4.1 neighbour-search scene (10⁶ uniform points
//!   in the 2²⁰ square, `--n` overrides) at the radius giving 3 neighbours
//!   per point on average (1024 at 10⁶) in hierarchical hashing: the particle build
//!   (`par_build`: parallel checks and copy, serial rehash), the rehash
//!   alone (serial by design: its share of the build), the pair
//!   enumeration (`par_for_each_pair`, counters; `par_gather` is the
//!   trait's per-particle default, the same queries, left out to keep the
//!   section near a minute); and the §4.1 objects (16 384 of the paper's
//!   sizes) in both schemes: the exact pair enumeration
//!   (`par_for_each_overlap`).
//!
//! No peer here has a parallel mode (parry3d is built without `parallel`,
//! rstar and kiddo single-threaded), so the rows are spatium's alone.

use super::threads::{Setup, ThreadRow};
use crate::settle;
use spatium::exec::Padded;
use spatium::hhash::{
    ClassHash, HashBucket, HashConfig, HashEntry, Hierarchical, Multilevel, Scheme,
};
use spatium::kdtree::{Candidates, KdConfig, KdRecord, LinearKdTree};
use spatium::table::{SLOTS_PER_OBJECT, table_len};
use spatium::{Aabb2, Aabb3, BroadPhase, NeighborSearch, Vec2};
use spatium_host::make::{self, VecClassHash};
use spatium_host::par::HostExec;
use spatium_host::pouchol::{SEGMENT_MAX, SQUARE_NNS, objects_2d, points_2d};

fn row(workload: &str, n: usize, threads: usize, (median_ms, runs): (f64, usize)) -> ThreadRow {
    eprintln!("  {workload}, {threads} threads: {median_ms:.2} ms");
    ThreadRow {
        workload: workload.to_owned(),
        who: "spatium".to_owned(),
        n,
        threads,
        median_ms,
        runs,
    }
}

/// Rows of the linear kd-tree: build, sweep and step at each thread count.
pub fn kd_rows(setup: &Setup) -> Vec<ThreadRow> {
    let n = setup
        .n
        .unwrap_or(if setup.quick { 20_000 } else { 1_000_000 });
    let (centres, _) = settle::uniform_centres(n, settle::DENSITY, settle::SEED);
    let boxes = settle::sphere_boxes(&centres);
    // Room for every box's full split (up to 8 records a box): the
    // parallel coding's condition, and what keeps the sweep's runs short
    // (a box left whole for want of room sits high in the tree).
    let cap = 8 * n;
    let new_tree = || {
        LinearKdTree::<Aabb3, u64, Vec<KdRecord<u64>>>::new(
            vec![KdRecord::EMPTY; cap],
            vec![KdRecord::EMPTY; cap],
            KdConfig::DEFAULT,
        )
    };
    let mut rows = Vec::new();
    let mut tree = new_tree();
    let mut pairs = None;
    if setup.threads.contains(&1) {
        let mut count = 0u64;
        let t = setup.wall_median(|| {
            tree.build(&boxes).expect("build");
            count = 0;
            tree.for_each_candidate_pair(&boxes, Candidates::Exact, |_, _| count += 1)
                .expect("pairs");
        });
        rows.push(row("kd step, serial API (build + exact sweep)", n, 1, t));
        rows.push(row(
            "kd build, serial API",
            n,
            1,
            setup.wall_median(|| tree.build(&boxes).expect("build")),
        ));
        pairs = Some(count);
    }
    for &threads in &setup.threads {
        let exec = HostExec::new(threads);
        let mut tree = new_tree();
        let t = setup.wall_median(|| tree.par_build(&exec, &boxes).expect("par_build"));
        rows.push(row("kd build (par_build)", n, threads, t));
        let mut sinks = vec![Padded(0u64); tree.candidate_tasks()];
        let sweep = |tree: &LinearKdTree<Aabb3, u64, Vec<KdRecord<u64>>>,
                     sinks: &mut [Padded<u64>]| {
            sinks.fill(Padded(0));
            tree.par_for_each_candidate_pair(&exec, &boxes, Candidates::Exact, sinks, |c, _, _| {
                **c += 1
            })
            .expect("par pairs");
            sinks.iter().map(|s| s.0).sum::<u64>()
        };
        let got = sweep(&tree, &mut sinks);
        assert_eq!(*pairs.get_or_insert(got), got, "kd: pair counts differ");
        let t = setup.wall_median(|| {
            sweep(&tree, &mut sinks);
        });
        rows.push(row("kd exact sweep (per-task counts)", n, threads, t));
        let t = setup.wall_median(|| {
            tree.par_build(&exec, &boxes).expect("par_build");
            sweep(&tree, &mut sinks);
        });
        rows.push(row("kd step (par_build + sweep)", n, threads, t));
    }
    rows
}

/// Mean neighbours per point of the neighbour-search rows (as the
/// criterion group `hhash-nns`).
const MEAN_NEIGHBOURS: f64 = 3.0;

fn object_hash<S: Scheme>(objects: &[Aabb2]) -> VecClassHash<S, Aabb2> {
    let sizes = objects
        .iter()
        .map(|b| (b.max.x - b.min.x).max(b.max.y - b.min.y))
        .chain([SEGMENT_MAX]);
    let config = HashConfig::from_sizes(1.0, sizes).expect("finite sizes");
    let pool = config.entries_for(objects, 0).expect("objects in range") as usize;
    let table = table_len(objects.len(), SLOTS_PER_OBJECT);
    let mut h = make::class_hash::<S, Aabb2>(objects.len(), table, pool, 0, config);
    for (i, b) in objects.iter().enumerate() {
        h.insert(i as u32, *b).expect("insert");
    }
    h
}

fn object_rows<S: Scheme>(setup: &Setup, objects: &[Aabb2], rows: &mut Vec<ThreadRow>) {
    let name = if S::HIERARCHICAL {
        "hierarchical"
    } else {
        "multilevel"
    };
    let n = objects.len();
    let mut h = object_hash::<S>(objects);
    rows.push(row(
        &format!("hhash objects, {name}: rehash (serial)"),
        n,
        1,
        setup.wall_median(|| h.rehash().expect("rehash")),
    ));
    let mut pairs = None;
    for &threads in &setup.threads {
        let exec = HostExec::new(threads);
        let mut sinks = vec![Padded(0u64); h.overlap_tasks()];
        let t = setup.wall_median(|| {
            sinks.fill(Padded(0));
            h.par_for_each_overlap(&exec, &mut sinks, |c, _, _| **c += 1)
                .expect("par overlaps");
        });
        let got: u64 = sinks.iter().map(|s| s.0).sum();
        assert_eq!(*pairs.get_or_insert(got), got, "hhash: pair counts differ");
        rows.push(row(
            &format!("hhash objects, {name}: exact pairs (par_for_each_overlap)"),
            n,
            threads,
            t,
        ));
    }
}

/// Rows of hierarchical hashing: particle build, rehash, pairs and gather,
/// and object pairs in both schemes, at each thread count.
pub fn hhash_rows(setup: &Setup) -> Vec<ThreadRow> {
    let n = setup
        .n
        .unwrap_or(if setup.quick { 20_000 } else { 1_000_000 });
    let pts = points_2d(n, settle::SEED);
    // π r² · density = MEAN_NEIGHBOURS.
    let density = n as f64 / (SQUARE_NNS as f64 * SQUARE_NNS as f64);
    let radius = (MEAN_NEIGHBOURS / (core::f64::consts::PI * density)).sqrt() as f32;
    let mut h: VecClassHash<Hierarchical, Aabb2> = ClassHash::for_particles(
        Vec::new(),
        vec![HashBucket::EMPTY; table_len(n, 2)],
        vec![HashEntry::EMPTY; n],
        vec![Vec2::ZERO; n],
        0,
    );
    let mut rows = Vec::new();
    h.build(&pts, radius).expect("build");
    rows.push(row(
        "hhash particles: build, serial API",
        n,
        1,
        setup.wall_median(|| h.build(&pts, radius).expect("build")),
    ));
    rows.push(row(
        "hhash particles: rehash alone (serial in every build)",
        n,
        1,
        setup.wall_median(|| h.rehash().expect("rehash")),
    ));
    let mut pairs = None;
    for &threads in &setup.threads {
        let exec = HostExec::new(threads);
        let t = setup.wall_median(|| h.par_build(&exec, &pts, radius).expect("par_build"));
        rows.push(row("hhash particles: par_build", n, threads, t));
        let mut sinks = vec![Padded(0u64); h.pair_tasks()];
        let t = setup.wall_median(|| {
            sinks.fill(Padded(0));
            h.par_for_each_pair(&exec, &mut sinks, |c, _, _, _| **c += 1)
                .expect("par pairs");
        });
        let got: u64 = sinks.iter().map(|s| s.0).sum();
        assert_eq!(*pairs.get_or_insert(got), got, "hhash: pair counts differ");
        rows.push(row(
            "hhash particles: pairs (par_for_each_pair)",
            n,
            threads,
            t,
        ));
    }
    let objects = objects_2d(if setup.quick { 4096 } else { 16_384 }, settle::SEED);
    object_rows::<Hierarchical>(setup, &objects, &mut rows);
    object_rows::<Multilevel>(setup, &objects, &mut rows);
    rows
}
