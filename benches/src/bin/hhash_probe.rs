//! Development probe for the §4.1 2D broad phase of the hierarchical-hashing
//! report: hierarchical against multilevel hashing on the same objects and
//! segments, thread CPU time per pass (exact candidates + the segment test),
//! the schemes alternating A B B A, medians of the runs. For quick A/B
//! comparisons; `HHASH_REPORT.md` is the reference.
//!
//! `cargo run --release -p spatium-benches --bin hhash_probe -- [SEGMENTS] [REPS] [SCHEME] [N...]`
//! (`SCHEME`: `both`, `hier` or `multi`, the latter two for `perf`).
//! `HHASH_SLOTS=K` sizes the table at `K` buckets per object instead of the
//! paper's [`SLOTS_PER_OBJECT`].

use spatium::hhash::{Candidates, HashConfig, Hierarchical, Multilevel, Scheme};
use spatium::table::{SLOTS_PER_OBJECT, table_len};
use spatium::{Aabb2, BroadPhase, Vec2};
use spatium_benches::experiments::hhash::sum_counts;
use spatium_benches::measure::{median, time};
use spatium_host::make::{self, VecClassHash};
use spatium_host::pouchol::{SEGMENT_MAX, objects_2d, segment_box, segment_hits, segments_2d};

const SEED: u64 = 0x5EED_2009;

fn build<S: Scheme>(objects: &[Aabb2]) -> VecClassHash<S, Aabb2> {
    let sizes = objects
        .iter()
        .map(|b| (b.max.x - b.min.x).max(b.max.y - b.min.y))
        .chain([SEGMENT_MAX]);
    let config = HashConfig::from_sizes(1.0, sizes).expect("sizes");
    let pool = config.entries_for(objects, 0).expect("range") as usize;
    let per_object = std::env::var("HHASH_SLOTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SLOTS_PER_OBJECT);
    let table = table_len(objects.len(), per_object);
    let mut h = make::class_hash::<S, Aabb2>(objects.len(), table, pool, 0, config);
    for (i, b) in objects.iter().enumerate() {
        h.insert(i as u32, *b).expect("insert");
    }
    h.refresh();
    h
}

#[inline(never)]
fn pass<S: Scheme>(
    h: &VecClassHash<S, Aabb2>,
    segs: &[(Vec2, Vec2)],
    boxes: &[Aabb2],
    objects: &[Aabb2],
) -> (u64, u64) {
    let (mut cand, mut hits) = (0u64, 0u64);
    for (seg, q) in segs.iter().zip(boxes) {
        h.query_candidates_ready(q, Candidates::Exact, |id| {
            cand += 1;
            hits += u64::from(segment_hits(seg, &objects[id as usize]));
        })
        .expect("query");
    }
    (cand, hits)
}

/// The walk alone: every visited cell of every query box, no entries read.
#[inline(never)]
fn walk_pass<S: Scheme>(h: &mut VecClassHash<S, Aabb2>, boxes: &[Aabb2]) -> u64 {
    let mut n = 0u64;
    for q in boxes {
        h.for_each_visited_cell(q, |_| n += 1).expect("walk");
    }
    n
}

fn median_or_nan(v: &[f64]) -> f64 {
    if v.is_empty() { f64::NAN } else { median(v) }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let m: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let scheme = args.get(3).map_or("both", String::as_str);
    let ns: Vec<usize> = if args.len() > 4 {
        args[4..].iter().filter_map(|s| s.parse().ok()).collect()
    } else {
        vec![16, 64, 256, 1024, 4096, 16_384]
    };
    let segs = segments_2d(m, SEED);
    let boxes: Vec<Aabb2> = segs.iter().map(segment_box).collect();
    println!(
        "N\thier ms\tmulti ms\tmulti/hier\twalk h/m ms\tbest ratio\tkeys h/m\tcells h/m\traw/query\texact/query"
    );
    for n in ns {
        let objects = objects_2d(n, SEED);
        let mut hh = build::<Hierarchical>(&objects);
        let mut hm = build::<Multilevel>(&objects);
        let (mut th, mut tm) = (Vec::new(), Vec::new());
        let (mut wh, mut wm) = (Vec::new(), Vec::new());
        let mut answers = Vec::new();
        for r in 0..reps {
            let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
            for k in order {
                if k == 0 && scheme != "multi" {
                    let (a, t) = time(|| pass(&hh, &segs, &boxes, &objects));
                    answers.push(a);
                    th.push(t.cpu_ms());
                    wh.push(time(|| walk_pass(&mut hh, &boxes)).1.cpu_ms());
                }
                if k == 1 && scheme != "hier" {
                    let (a, t) = time(|| pass(&hm, &segs, &boxes, &objects));
                    answers.push(a);
                    tm.push(t.cpu_ms());
                    wm.push(time(|| walk_pass(&mut hm, &boxes)).1.cpu_ms());
                }
            }
        }
        assert!(answers.windows(2).all(|w| w[0] == w[1]), "answers differ");
        let (ch, cm) = (sum_counts(&mut hh, &boxes), sum_counts(&mut hm, &boxes));
        let q = m as f64;
        let (mh, mm) = (median_or_nan(&th), median_or_nan(&tm));
        let (wh, wm) = (median_or_nan(&wh), median_or_nan(&wm));
        println!(
            "{n}\t{mh:.1}\t{mm:.1}\t{:.2}\t{wh:.1}/{wm:.1}\t{:.2}\t{:.2}/{:.2}\t{:.2}/{:.2}\t{:.1}\t{:.2}",
            mm / mh,
            mm / (mm - wm),
            ch.keys as f64 / q,
            cm.keys as f64 / q,
            ch.cells as f64 / q,
            cm.cells as f64 / q,
            ch.raw as f64 / q,
            ch.exact as f64 / q
        );
    }
}
