//! Criterion benchmarks of hierarchical hashing (Pouchol et al. 2009) at
//! small sizes of the paper's §4.1 tests. Groups:
//!
//! * `hhash-bp2d/1024`: 1024 objects of the §4.1 size distribution; one
//!   query pass of 10 000 particle segments (exact candidates of each
//!   segment's box, then the segment–box test), hierarchical and multilevel
//!   hashing (`table_len(N, SLOTS_PER_OBJECT)`, classes from the object sizes) against an
//!   `rstar::RTree` (`locate_in_envelope_intersecting`); and the insert of
//!   the 1024 objects (hash: `clear()` + inserts; rstar: bulk load).
//! * `hhash-nns/20000`: 20 000 uniform points of the §4.1 neighbour test at
//!   a radius giving about 3 neighbours per point; build + every point's
//!   neighbour query: hierarchical hashing (`for_particles`, radius class
//!   alone), `uniform::CellSortedHash` and kiddo's `ImmutableKdTree`.
//! * `hhash-nns-threads/20000`: the hierarchical build + every point's
//!   neighbours through the serial API and through the parallel forms
//!   (`par_build`, then `par_gather` of the degrees) on 1 and 2 threads.
//! * `hhash-pairs-threads/4096`: 4096 §4.1 objects, every exact
//!   overlapping pair through the serial API and `par_for_each_overlap`
//!   (a counter per task) on 1 and 2 threads, both schemes.
//!
//! Every structure's answer (candidate and hit counts, neighbour counts) is
//! checked against the others before timing; a mismatch panics. The full
//! comparison is the `hhash_report` binary.

use core::hint::black_box;
use core::time::Duration;

use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use kiddo::{ImmutableKdTree, SquaredEuclidean};
use rstar::primitives::{GeomWithData, Rectangle};
use rstar::{AABB, RTree};
use spatium::exec::Padded;
use spatium::hhash::{
    Candidates, ClassHash, HashBucket, HashConfig, HashEntry, Hierarchical, Multilevel, Scheme,
};
use spatium::table::{SLOTS_PER_OBJECT, table_len};
use spatium::{Aabb2, BroadPhase, NeighborSearch, Vec2};
use spatium_host::make::{self, VecClassHash};
use spatium_host::par::HostExec;
use spatium_host::pouchol::{
    SEGMENT_MAX, SQUARE_NNS, objects_2d, points_2d, segment_box, segment_hits, segments_2d,
};

const SEED: u64 = 0x5EED_2009;
const OBJECTS: usize = 1024;
const SEGMENTS: usize = 10_000;
const POINTS: usize = 20_000;
/// Mean neighbours per point wanted in `hhash-nns`.
const MEAN_NEIGHBOURS: f64 = 3.0;

type RItem = GeomWithData<Rectangle<[f32; 2]>, u32>;

fn quick<M: criterion::measurement::Measurement>(g: &mut BenchmarkGroup<'_, M>) {
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
}

fn bp_hash<S: Scheme>(objects: &[Aabb2]) -> VecClassHash<S, Aabb2> {
    let sizes = objects
        .iter()
        .map(|b| (b.max.x - b.min.x).max(b.max.y - b.min.y))
        .chain([SEGMENT_MAX]);
    let config = HashConfig::from_sizes(1.0, sizes).unwrap();
    let pool = config.entries_for(objects, 0).unwrap() as usize;
    let mut h = make::class_hash::<S, Aabb2>(
        objects.len(),
        table_len(objects.len(), SLOTS_PER_OBJECT),
        pool,
        0,
        config,
    );
    insert_all(&mut h, objects);
    h
}

fn insert_all<S: Scheme>(h: &mut VecClassHash<S, Aabb2>, objects: &[Aabb2]) {
    h.clear();
    for (i, b) in objects.iter().enumerate() {
        h.insert(i as u32, *b).unwrap();
    }
}

fn rtree(objects: &[Aabb2]) -> RTree<RItem> {
    RTree::bulk_load(
        objects
            .iter()
            .enumerate()
            .map(|(i, b)| {
                GeomWithData::new(
                    Rectangle::from_corners(b.min.to_array(), b.max.to_array()),
                    i as u32,
                )
            })
            .collect(),
    )
}

/// (exact candidates, hits) of every segment against `cands`.
fn pass(
    segs: &[(Vec2, Vec2)],
    boxes: &[Aabb2],
    objects: &[Aabb2],
    mut cands: impl FnMut(&Aabb2, &mut dyn FnMut(u32)),
) -> (u64, u64) {
    let (mut c, mut h) = (0u64, 0u64);
    for (s, q) in segs.iter().zip(boxes) {
        cands(q, &mut |id| {
            c += 1;
            h += u64::from(segment_hits(s, &objects[id as usize]));
        });
    }
    (c, h)
}

fn hash_pass<S: Scheme>(
    h: &VecClassHash<S, Aabb2>,
    segs: &[(Vec2, Vec2)],
    boxes: &[Aabb2],
    objects: &[Aabb2],
) -> (u64, u64) {
    pass(segs, boxes, objects, |q, f| {
        h.query_candidates_ready(q, Candidates::Exact, f).unwrap()
    })
}

fn tree_pass(
    t: &RTree<RItem>,
    segs: &[(Vec2, Vec2)],
    boxes: &[Aabb2],
    objects: &[Aabb2],
) -> (u64, u64) {
    pass(segs, boxes, objects, |q, f| {
        let env = AABB::from_corners(q.min.to_array(), q.max.to_array());
        for o in t.locate_in_envelope_intersecting(env) {
            f(o.data);
        }
    })
}

fn bp2d(c: &mut Criterion) {
    let objects = objects_2d(OBJECTS, SEED);
    let segs = segments_2d(SEGMENTS, SEED);
    let boxes: Vec<Aabb2> = segs.iter().map(segment_box).collect();
    let mut hh = bp_hash::<Hierarchical>(&objects);
    let mut ml = bp_hash::<Multilevel>(&objects);
    let tree = rtree(&objects);
    let want = tree_pass(&tree, &segs, &boxes, &objects);
    assert_eq!(
        hash_pass(&hh, &segs, &boxes, &objects),
        want,
        "hierarchical"
    );
    assert_eq!(hash_pass(&ml, &segs, &boxes, &objects), want, "multilevel");

    let mut g = c.benchmark_group(format!("hhash-bp2d/{OBJECTS}"));
    quick(&mut g);
    g.bench_function("query/hierarchical", |b| {
        b.iter(|| hash_pass(&hh, black_box(&segs), &boxes, &objects))
    });
    g.bench_function("query/multilevel", |b| {
        b.iter(|| hash_pass(&ml, black_box(&segs), &boxes, &objects))
    });
    g.bench_function("query/rstar", |b| {
        b.iter(|| tree_pass(&tree, black_box(&segs), &boxes, &objects))
    });
    g.bench_function("insert/hierarchical", |b| {
        b.iter(|| insert_all(&mut hh, black_box(&objects)))
    });
    g.bench_function("insert/multilevel", |b| {
        b.iter(|| insert_all(&mut ml, black_box(&objects)))
    });
    g.bench_function("insert/rstar", |b| b.iter(|| rtree(black_box(&objects))));
    g.finish();
}

/// Σ neighbour counts over every point.
fn hash_neighbours<N: NeighborSearch<Vec2>>(h: &N, n: usize) -> u64 {
    let mut c = 0u64;
    for i in 0..n as u32 {
        h.for_each_neighbor(i, |_, _| c += 1).unwrap();
    }
    c
}

fn kiddo_neighbours(pts: &[[f32; 2]], r: f32) -> u64 {
    let tree = ImmutableKdTree::<f32, 2>::new_from_slice(pts).unwrap();
    let mut c = 0u64;
    for (i, p) in pts.iter().enumerate() {
        let i = i as u32;
        tree.query(p)
            .within::<SquaredEuclidean<f32>>(r * r)
            .unsorted()
            .exclusive_boundaries()
            .visit(|it| c += u64::from(it.item != i));
    }
    c
}

fn nns(c: &mut Criterion) {
    let pts = points_2d(POINTS, SEED);
    let arr: Vec<[f32; 2]> = pts.iter().map(|p| p.to_array()).collect();
    // π r² · density = MEAN_NEIGHBOURS.
    let density = POINTS as f64 / (SQUARE_NNS as f64 * SQUARE_NNS as f64);
    let r = (MEAN_NEIGHBOURS / (core::f64::consts::PI * density)).sqrt() as f32;
    let table = table_len(POINTS, 2);
    let mut hh: VecClassHash<Hierarchical, Aabb2> = ClassHash::for_particles(
        Vec::new(),
        vec![HashBucket::EMPTY; table],
        vec![HashEntry::EMPTY; POINTS],
        vec![Vec2::ZERO; POINTS],
        0,
    );
    let mut uni = make::cell_sorted::<Vec2>(POINTS, table);
    hh.build(&pts, r).unwrap();
    uni.build(&pts, r).unwrap();
    let want = kiddo_neighbours(&arr, r);
    assert_eq!(hash_neighbours(&hh, POINTS), want, "hierarchical");
    assert_eq!(hash_neighbours(&uni, POINTS), want, "uniform");

    let mut g = c.benchmark_group(format!("hhash-nns/{POINTS}"));
    quick(&mut g);
    g.bench_function("hierarchical", |b| {
        b.iter(|| {
            hh.build(black_box(&pts), r).unwrap();
            hash_neighbours(&hh, POINTS)
        })
    });
    g.bench_function("uniform", |b| {
        b.iter(|| {
            uni.build(black_box(&pts), r).unwrap();
            hash_neighbours(&uni, POINTS)
        })
    });
    g.bench_function("kiddo", |b| b.iter(|| kiddo_neighbours(black_box(&arr), r)));
    g.finish();

    // The parallel forms on 1 and 2 threads beside the serial API: build +
    // every neighbour once (degrees by a gather), wall clock.
    let mut g = c.benchmark_group(format!("hhash-nns-threads/{POINTS}"));
    quick(&mut g);
    g.bench_function("serial-api", |b| {
        b.iter(|| {
            hh.build(black_box(&pts), r).unwrap();
            hash_neighbours(&hh, POINTS)
        })
    });
    let mut degrees = vec![0u32; POINTS];
    for threads in [1, 2] {
        let exec = HostExec::new(threads);
        let mut step = |hh: &mut VecClassHash<Hierarchical, Aabb2>| {
            hh.par_build(&exec, &pts, r).unwrap();
            degrees.fill(0);
            hh.par_gather(&exec, &mut degrees, |_, d, _, _| *d += 1)
                .unwrap();
            degrees.iter().map(|&d| u64::from(d)).sum::<u64>()
        };
        assert_eq!(step(&mut hh), want, "parallel hierarchical");
        g.bench_function(format!("par-{threads}"), |b| b.iter(|| step(&mut hh)));
    }
    g.finish();
}

/// Exact object pairs through the serial API and the parallel form on 1 and
/// 2 threads (per-task counters), hierarchical and multilevel.
fn bp_threads(c: &mut Criterion) {
    let objects = objects_2d(4 * OBJECTS, SEED);
    let mut g = c.benchmark_group(format!("hhash-pairs-threads/{}", 4 * OBJECTS));
    quick(&mut g);
    fn run<S: Scheme>(
        g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
        objects: &[Aabb2],
    ) {
        let name = if S::HIERARCHICAL {
            "hierarchical"
        } else {
            "multilevel"
        };
        let mut h = bp_hash::<S>(objects);
        let mut want = 0u64;
        h.for_each_overlap(|_, _| want += 1).unwrap();
        g.bench_function(format!("{name}/serial-api"), |b| {
            b.iter(|| {
                let mut n = 0u64;
                h.for_each_overlap(|_, _| n += 1).unwrap();
                n
            })
        });
        for threads in [1, 2] {
            let exec = HostExec::new(threads);
            let mut sinks = vec![Padded(0u64); h.overlap_tasks()];
            let mut pairs = |h: &mut VecClassHash<S, Aabb2>| {
                sinks.fill(Padded(0));
                h.par_for_each_overlap(&exec, &mut sinks, |c, _, _| **c += 1)
                    .unwrap();
                sinks.iter().map(|s| s.0).sum::<u64>()
            };
            assert_eq!(pairs(&mut h), want, "{name}: parallel pairs");
            g.bench_function(format!("{name}/par-{threads}"), |b| {
                b.iter(|| pairs(&mut h))
            });
        }
    }
    run::<Hierarchical>(&mut g, &objects);
    run::<Multilevel>(&mut g, &objects);
    g.finish();
}

criterion_group!(benches, bp2d, nns, bp_threads);
criterion_main!(benches);
