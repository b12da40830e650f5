//! Development probe: the cost of the parallel forms of the linear kd-tree
//! and of hierarchical hashing on one thread (`exec::Serial`) against the
//! serial API, in thread CPU time (valid for one thread, and robust on a
//! shared machine), the two alternating run by run; medians of `REPS`.
//!
//! ```text
//! cargo run --release -p spatium-benches --bin par_probe -- [N]
//! ```

use spatium::exec::Serial;
use spatium::hhash::{ClassHash, HashBucket, HashEntry, Hierarchical};
use spatium::kdtree::{Candidates, KdConfig, KdRecord, LinearKdTree};
use spatium::table::table_len;
use spatium::{Aabb2, Aabb3, NeighborSearch, Vec2};
use spatium_benches::measure::{median, time};
use spatium_benches::settle;
use spatium_host::make::VecClassHash;
use spatium_host::pouchol::{SQUARE_NNS, points_2d};

const REPS: usize = 7;

fn compare(what: &str, mut serial: impl FnMut() -> u64, mut par: impl FnMut() -> u64) {
    let (mut s, mut p) = (Vec::new(), Vec::new());
    for _ in 0..REPS {
        let (a, ts) = time(&mut serial);
        let (b, tp) = time(&mut par);
        assert_eq!(a, b, "{what}: answers differ");
        s.push(ts.cpu_ms());
        p.push(tp.cpu_ms());
    }
    let (ms, mp) = (median(&s), median(&p));
    println!(
        "{what}: serial API {ms:.1} ms, parallel form on Serial {mp:.1} ms ({:+.1} %)",
        100.0 * (mp / ms - 1.0)
    );
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let (centres, _) = settle::uniform_centres(n, settle::DENSITY, settle::SEED);
    let boxes = settle::sphere_boxes(&centres);
    let tree = || {
        LinearKdTree::<Aabb3, u64, Vec<KdRecord<u64>>>::new(
            vec![KdRecord::EMPTY; 8 * n],
            vec![KdRecord::EMPTY; 8 * n],
            KdConfig::DEFAULT,
        )
    };
    let (mut a, mut b) = (tree(), tree());
    compare(
        "kd build",
        || {
            a.build(&boxes).unwrap();
            a.records().len() as u64
        },
        || {
            b.par_build(&Serial, &boxes).unwrap();
            b.records().len() as u64
        },
    );
    let mut sinks = vec![0u64; b.candidate_tasks()];
    compare(
        "kd exact sweep",
        || {
            let mut c = 0u64;
            a.for_each_candidate_pair(&boxes, Candidates::Exact, |_, _| c += 1)
                .unwrap();
            c
        },
        || {
            sinks.fill(0);
            b.par_for_each_candidate_pair(
                &Serial,
                &boxes,
                Candidates::Exact,
                &mut sinks,
                |c, _, _| *c += 1,
            )
            .unwrap();
            sinks.iter().sum()
        },
    );

    let pts = points_2d(n, settle::SEED);
    let density = n as f64 / (SQUARE_NNS as f64 * SQUARE_NNS as f64);
    let r = (3.0 / (core::f64::consts::PI * density)).sqrt() as f32;
    let hash = || -> VecClassHash<Hierarchical, Aabb2> {
        ClassHash::for_particles(
            Vec::new(),
            vec![HashBucket::EMPTY; table_len(n, 2)],
            vec![HashEntry::EMPTY; n],
            vec![Vec2::ZERO; n],
            0,
        )
    };
    let (mut h, mut g) = (hash(), hash());
    compare(
        "hhash particle build",
        || {
            h.build(&pts, r).unwrap();
            h.len() as u64
        },
        || {
            g.par_build(&Serial, &pts, r).unwrap();
            g.len() as u64
        },
    );
    let mut sinks = vec![0u64; g.pair_tasks()];
    compare(
        "hhash particle pairs",
        || {
            let mut c = 0u64;
            h.for_each_pair(|_, _, _| c += 1);
            c
        },
        || {
            sinks.fill(0);
            g.par_for_each_pair(&Serial, &mut sinks, |c, _, _, _| *c += 1)
                .unwrap();
            sinks.iter().sum()
        },
    );
}
