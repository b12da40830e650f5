//! The parallel forms of the neighbour searches (`par_build`,
//! `par_for_each_pair`, `par_gather`, `par_neighbor_lists`) against the
//! serial ones and brute force, on every scenario generator, and their
//! results bit-identical for every executor and number of workers.

use spatium::exec::{Executor, Serial};
use spatium::{NeighborSearch, Point, Validate, Vec2, Vec3};
use spatium_host::oracle::{csr_lists, pairs_within};
use spatium_host::par::{HostExec, Rayon, Threads};
use spatium_host::runtime::{AnySearch, Named, SearchKind};
use spatium_host::scenarios::point_scenarios;
use spatium_host::{Rng, make};

/// Sizes: large enough for several tasks (runs per task 512, particles per
/// build task 16 384), small enough for a debug build.
const N: usize = 20_000;

/// Everything a parallel run produces, for bit-for-bit comparison.
#[derive(Debug, PartialEq)]
struct Outputs {
    sorted: Vec<(u32, Vec<u32>)>,
    sinks: Vec<Vec<(u32, u32, u32)>>,
    gather: Vec<(u32, u64)>,
    offsets: Vec<u32>,
    indices: Vec<u32>,
}

fn run_all<P: Point, N: NeighborSearch<P> + Sync + Send, E: Executor>(
    exec: &E,
    s: &mut N,
    points: &[P],
    radius: f32,
) -> Outputs {
    s.par_build(exec, points, radius).unwrap();
    let n = s.len();
    let mut sinks = vec![Vec::new(); s.pair_tasks()];
    s.par_for_each_pair(
        exec,
        &mut sinks,
        |k: &mut Vec<(u32, u32, u32)>, i, j, d2| k.push((i, j, d2.to_bits())),
    )
    .unwrap();
    // Count and an order-sensitive hash of each particle's neighbours.
    let mut gather = vec![(0u32, 0u64); n];
    s.par_gather(exec, &mut gather, |_, o, j, d2| {
        o.0 += 1;
        o.1 = o.1.rotate_left(7) ^ (u64::from(j) << 32 | u64::from(d2.to_bits()));
    })
    .unwrap();
    let mut offsets = vec![0u32; n + 1];
    let total = match s.par_neighbor_lists(exec, &mut offsets, &mut []) {
        Err(spatium::Error::BufferTooSmall { needed, .. }) => needed,
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    };
    let mut indices = vec![u32::MAX; total];
    assert_eq!(
        s.par_neighbor_lists(exec, &mut offsets, &mut indices)
            .unwrap(),
        total
    );
    // More room (the cell-sorted hash then writes the lists in one sweep
    // on several workers, into provisional regions, where they fit):
    // the same lists.
    for room in [total + total / 2, 2 * total + 64, 4 * total + 64] {
        let mut o = vec![u32::MAX; n + 1];
        let mut ix = vec![u32::MAX; room];
        assert_eq!(s.par_neighbor_lists(exec, &mut o, &mut ix).unwrap(), total);
        assert!(o == offsets, "offsets with room {room}");
        assert!(ix[..total] == indices[..], "lists with room {room}");
    }
    let mut order = vec![0u32; n];
    s.spatial_order(&mut order).unwrap();
    Outputs {
        sorted: vec![(n as u32, order)],
        sinks,
        gather,
        offsets,
        indices,
    }
}

fn sorted_pairs(sinks: &[Vec<(u32, u32, u32)>]) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = sinks
        .iter()
        .flatten()
        .map(|&(i, j, _)| (i.min(j), i.max(j)))
        .collect();
    v.sort_unstable();
    v
}

/// Checks one search kind on one scenario: the parallel answers equal
/// brute force and the serial answers, and every executor gives the same
/// bits; then again with the input renumbered into the search's order (the
/// cell-sorted hash's storage-order sweeps).
///
/// `oracle` is brute force's pairs of `points` (computed once per scenario
/// by the caller); the renumbered input's pairs are the same pairs under
/// the renumbering, since each point keeps its bits.
fn check_kind<P: Point>(
    kind: SearchKind,
    name: &str,
    points: &[P],
    radius: f32,
    oracle: &[(u32, u32)],
) {
    let label = format!("{} {}D {name}", kind.name(), P::DIM);
    let mut inputs = vec![points.to_vec()];
    let mut renumbered: Vec<(u32, u32)>;
    {
        let mut s = AnySearch::<P>::new(kind, points.len());
        if let Err(e) = s.build(points, radius) {
            // A structure may refuse an input (a bucket hash's full
            // bucket): the parallel build refuses it alike.
            let mut p = AnySearch::<P>::new(kind, points.len());
            assert_eq!(
                p.par_build(&Rayon::new(2).unwrap(), points, radius),
                Err(e),
                "{label}"
            );
            return;
        }
        let mut order = vec![0u32; points.len()];
        s.spatial_order(&mut order).unwrap();
        inputs.push(order.iter().map(|&i| points[i as usize]).collect());
        // Input 1 holds `points[order[k]]` at `k`: old id `order[k]` is
        // new id `k`.
        let mut new_id = vec![0u32; points.len()];
        for (k, &old) in order.iter().enumerate() {
            new_id[old as usize] = k as u32;
        }
        renumbered = oracle
            .iter()
            .map(|&(a, b)| {
                let (a, b) = (new_id[a as usize], new_id[b as usize]);
                (a.min(b), a.max(b))
            })
            .collect();
        renumbered.sort_unstable();
    }
    for (which, pts) in inputs.iter().enumerate() {
        let label = format!("{label} input {which}");
        let oracle_here = if which == 0 { oracle } else { &renumbered[..] };
        let mut s = AnySearch::<P>::new(kind, pts.len());
        let want = run_all(&Serial, &mut s, pts, radius);
        s.validate().unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(
            sorted_pairs(&want.sinks),
            oracle_here,
            "{label}: pairs vs brute force"
        );
        // The lists equal the serial lists as sets, and brute force's.
        let mut serial = AnySearch::<P>::new(kind, pts.len());
        serial.build(pts, radius).unwrap();
        let lists = csr_lists(&serial);
        for (i, l) in lists.iter().enumerate() {
            let (a, b) = (want.offsets[i] as usize, want.offsets[i + 1] as usize);
            let mut got = want.indices[a..b].to_vec();
            got.sort_unstable();
            assert_eq!(&got, l, "{label}: list of {i}");
            assert_eq!(
                want.gather[i].0 as usize,
                l.len(),
                "{label}: gather degree of {i}"
            );
        }
        for threads in [2, 3, 8] {
            let got = run_all(&Rayon::new(threads).unwrap(), &mut s, pts, radius);
            assert!(got == want, "{label}: rayon {threads} differs from serial");
        }
        let got = run_all(&Threads::new(3), &mut s, pts, radius);
        assert!(got == want, "{label}: threads 3 differs from serial");
        let got = run_all(&HostExec::new(1), &mut s, pts, radius);
        assert!(got == want, "{label}: one thread differs from serial");
    }
}

fn every_kind<P: Point>(n: usize, seed: u64) {
    for sc in point_scenarios::<P>(n, seed) {
        let oracle = pairs_within(&sc.points, sc.radius);
        for kind in [
            SearchKind::Sorted,
            SearchKind::Bucketed,
            SearchKind::Linked,
            SearchKind::Brute,
        ] {
            if kind == SearchKind::Brute && sc.points.len() > 3000 {
                continue;
            }
            check_kind(kind, &sc.name, &sc.points, sc.radius, &oracle);
        }
    }
}

#[test]
fn parallel_searches_equal_serial_and_brute_force_3d() {
    every_kind::<Vec3>(N, 11);
}

#[test]
fn parallel_searches_equal_serial_and_brute_force_2d() {
    every_kind::<Vec2>(N, 12);
}

#[test]
fn brute_force_parallel_defaults_small() {
    for sc in point_scenarios::<Vec3>(2000, 13) {
        let oracle = pairs_within(&sc.points, sc.radius);
        check_kind(SearchKind::Brute, &sc.name, &sc.points, sc.radius, &oracle);
    }
}

/// The parallel build equals the serial build (same storage order, same
/// answers) on shuffled, sorted and small inputs, and refuses what the
/// serial build refuses, changing nothing.
#[test]
fn par_build_equals_build_and_refuses_alike() {
    let mut rng = Rng::new(5);
    let exec = Rayon::new(3).unwrap();
    for n in [0usize, 1, 2, 100, 16_384, 16_385, 70_000] {
        let mut pts: Vec<Vec3> = (0..n)
            .map(|_| {
                Vec3::new(
                    rng.range(0.0, 20.0),
                    rng.range(0.0, 20.0),
                    rng.range(0.0, 20.0),
                )
            })
            .collect();
        for pass in 0..3 {
            let mut a = make::cell_sorted::<Vec3>(n.max(1), spatium::table::table_len(n.max(1), 2));
            let mut b = make::cell_sorted::<Vec3>(n.max(1), spatium::table::table_len(n.max(1), 2));
            a.build(&pts, 0.5).unwrap();
            b.par_build(&exec, &pts, 0.5).unwrap();
            b.validate().unwrap();
            assert!(
                a.sorted_particles().eq(b.sorted_particles()),
                "n {n} pass {pass}"
            );
            assert_eq!(
                a.input_was_sorted(),
                b.input_was_sorted(),
                "n {n} pass {pass}"
            );
            assert_eq!(a.occupied_cells(), b.occupied_cells());
            assert_eq!(a.is_indexed(), b.is_indexed());
            for id in (0..n as u32).step_by(97) {
                assert_eq!(a.position(id), b.position(id));
            }
            // Pass 1: the same points in the structure's order. Pass 2:
            // that order with particles swapped a little way and the first
            // and last swapped (nearly in cell order, as a simulation's
            // input a step after it was renumbered: the parallel sort then
            // skips the chunks of input that hold none of a worker's
            // cells, except the first and last).
            let mut order = vec![0u32; n];
            a.spatial_order(&mut order).unwrap();
            pts = order.iter().map(|&i| pts[i as usize]).collect();
            if pass == 1 && n > 40 {
                for i in (0..n - 40).step_by(997) {
                    pts.swap(i, i + 40);
                }
                pts.swap(0, n - 1);
            }
        }
        if n > 1 {
            let mut b = make::cell_sorted::<Vec3>(n, spatium::table::table_len(n, 2));
            b.par_build(&exec, &pts, 0.5).unwrap();
            let before: Vec<(u32, Vec3)> = b.sorted_particles().collect();
            let mut bad = pts.clone();
            bad[n / 2].x = f32::NAN;
            assert_eq!(
                b.par_build(&exec, &bad, 0.5),
                Err(spatium::Error::NonFinite)
            );
            assert_eq!(
                b.par_build(&exec, &pts, -1.0).unwrap_err(),
                b.build(&pts, -1.0).unwrap_err()
            );
            bad[n / 2].x = 1e30;
            assert_eq!(
                b.par_build(&exec, &bad, 0.5).unwrap_err(),
                b.build(&bad, 0.5).unwrap_err()
            );
            assert!(b.sorted_particles().eq(before.iter().copied()));
            b.validate().unwrap();
            let mut small = make::cell_sorted::<Vec3>(n - 1, spatium::table::table_len(n, 2));
            assert_eq!(
                small.par_build(&exec, &pts, 0.5).unwrap_err(),
                spatium::Error::CapacityExceeded { capacity: n - 1 }
            );
        }
    }
}

/// Too few sinks or a short output buffer is an error, and nothing is called.
#[test]
fn short_buffers_are_refused() {
    let sc = &point_scenarios::<Vec3>(20_000, 3)[0];
    let mut s = make::cell_sorted::<Vec3>(
        sc.points.len(),
        spatium::table::table_len(sc.points.len(), 2),
    );
    s.build(&sc.points, sc.radius).unwrap();
    let tasks = s.pair_tasks();
    assert!(tasks > 1);
    let mut sinks = vec![0usize; tasks - 1];
    let err = s
        .par_for_each_pair(&Serial, &mut sinks, |k, _, _, _| *k += 1)
        .unwrap_err();
    assert_eq!(
        err,
        spatium::Error::BufferTooSmall {
            needed: tasks,
            available: tasks - 1
        }
    );
    assert!(sinks.iter().all(|&k| k == 0));
    let mut out = vec![0u32; sc.points.len() - 1];
    assert!(
        s.par_gather(&Serial, &mut out, |_, o, _, _| *o += 1)
            .is_err()
    );
    assert!(out.iter().all(|&k| k == 0));
    let mut offsets = vec![0u32; sc.points.len()];
    assert!(
        s.par_neighbor_lists(&Serial, &mut offsets, &mut [])
            .is_err()
    );
}

/// More occupied cells homed in one sixteenth of the table than that block
/// has room for: the run index falls back to one block (plain linear
/// probing), serially and in parallel alike, and every answer stays exact.
#[test]
fn an_overfull_index_block_falls_back_to_one_block() {
    let slots = 1 << 16;
    let radius = 1.0;
    // Candidate points at cell centres of a 64³ box; the corners fix the
    // bounds, hence the grid, whatever subset is built.
    let side = 64;
    let corners = [
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::new(side as f32 * 1.5, side as f32 * 1.5, side as f32 * 1.5),
    ];
    let cands: Vec<Vec3> = (0..side * side * side)
        .map(|i| {
            let (x, y, z) = (i % side, (i / side) % side, i / (side * side));
            Vec3::new(
                x as f32 * 1.5 + 0.7,
                y as f32 * 1.5 + 0.7,
                z as f32 * 1.5 + 0.7,
            )
        })
        .collect();
    let mut all = corners.to_vec();
    all.extend(&cands);
    let mut probe = make::cell_sorted::<Vec3>(all.len(), slots);
    probe.build(&all, radius).unwrap();
    let grid = *probe.grid();
    let block = |p: Vec3| grid.bucket(grid.cell(p).unwrap()) as usize / (slots / 16);
    // 2 100 cells of block 0 (more than its 4 096 / 2), plus the corners.
    let mut pts = corners.to_vec();
    pts.extend(cands.iter().copied().filter(|&p| block(p) == 0).take(2100));
    assert_eq!(pts.len(), 2102, "enough cells homed in block 0");
    let oracle = pairs_within(&pts, radius);
    for exec in [&HostExec::new(1), &HostExec::new(3)] {
        let mut s = make::cell_sorted::<Vec3>(pts.len(), slots);
        s.par_build(exec, &pts, radius).unwrap();
        s.validate().unwrap();
        assert!(s.is_indexed());
        let mut got = Vec::new();
        s.for_each_pair(|i, j, _| got.push((i.min(j), i.max(j))));
        got.sort_unstable();
        assert_eq!(got, oracle);
        for (id, &p) in pts.iter().enumerate().step_by(37) {
            let mut a: Vec<u32> = Vec::new();
            s.for_each_within(p, |j, _| a.push(j)).unwrap();
            a.sort_unstable();
            let want: Vec<u32> = (0..pts.len() as u32)
                .filter(|&j| p.distance_squared(pts[j as usize]) < radius * radius)
                .collect();
            assert_eq!(a, want, "within {id}");
        }
    }
}
