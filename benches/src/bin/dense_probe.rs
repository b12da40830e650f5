//! Development probe for issue 21's periodic-search target: the periodic
//! `DenseGrid` against the same grid without periodic axes and the
//! cell-sorted hash, on the cell-ordered fluid block of the `neighbors`
//! bench's `periodic` group (the same boxes). Thread CPU time per run
//! (build + all pairs, or build + every particle's neighbours), the three
//! (and the plain grid over the torus's own box: the same cells) taking
//! turns inside each round, the median of 11 rounds after 2 warm-up
//! rounds (`spatium_benches::measure`). For A/B work on a shared machine;
//! the criterion group is the reference.
//!
//! `cargo run --release -p spatium-benches --bin dense_probe -- SIDE [pairs|neighbours|build]`

use spatium::table::table_len;
use spatium::{NeighborSearch, PeriodicBox, Point, Vec3};
use spatium_benches::measure::{median, time};
use spatium_benches::scene::{PeriodicWork, periodic_run};
use spatium_benches::{Order, Scene};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let side: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(22);
    let what = args.get(2).map_or("pairs", String::as_str);
    let work = match what {
        "neighbours" => PeriodicWork::Neighbours,
        "build" => PeriodicWork::Build,
        _ => PeriodicWork::Pairs,
    };
    let scene = Scene::new(side, Order::CellOrdered);
    let (n, r) = (scene.points.len(), scene.radius);
    let (plain_box, torus) = scene.periodic_boxes();
    let spacing = r / 2.0;
    let hi = scene.points.iter().fold(scene.points[0], |m, &p| m.max(p));
    let mut periodic = spatium_host::make::dense(torus, n, r).expect("grid");
    let mut plain = spatium_host::make::dense(plain_box, n, r).expect("grid");
    // The torus's box without periodic axes (stretched over the few jittered
    // points beyond it): the same cells.
    let same_box = PeriodicBox::new(
        torus.lo(),
        torus.hi().max(hi + Vec3::new(1e-3, 1e-3, 1e-3) * spacing),
        0,
    )
    .expect("box");
    let mut same = spatium_host::make::dense(same_box, n, r).expect("grid");
    let mut sorted = spatium_host::make::cell_sorted::<Vec3>(n, table_len(n, 2));
    let pts = &scene.points;
    let mut t = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    let mut sums = [0.0; 4];
    for round in 0..13 {
        let (a, ta) = time(|| periodic_run(&mut periodic, pts, r, work));
        let (b, tb) = time(|| periodic_run(&mut plain, pts, r, work));
        let (c, tc) = time(|| periodic_run(&mut sorted, pts, r, work));
        let (d, td) = time(|| periodic_run(&mut same, pts, r, work));
        sums = [a, b, c, d];
        if round >= 2 {
            for (v, x) in t.iter_mut().zip([ta, tb, tc, td]) {
                v.push(x.cpu_ms());
            }
        }
    }
    let m = t.map(|v| median(&v));
    // The work the timings compare: the candidates each particle's
    // neighbour query reads (the particles of the 27 cells around its
    // cell, wrapped on the torus, cut at the faces of the plain box), from
    // each grid's own cell layout; and the pairs found.
    let cand = |g: &spatium_host::make::VecDense<Vec3>| {
        let n3 = g.cells_per_axis().map(|v| v as i64);
        let d = g.domain();
        let (lo, len) = (d.lo(), d.hi() - d.lo());
        // The grid's own binning, to the bit: `(x − lo) · (n / L)`, clamped.
        let cell = |p: Vec3| -> [i64; 3] {
            let q = d.wrap(p);
            core::array::from_fn(|k| {
                let inv = n3[k] as f32 / len.coord(k);
                let t = ((q.coord(k) - lo.coord(k)) * inv).clamp(0.0, n3[k] as f32);
                (t.floor() as i64).min(n3[k] - 1)
            })
        };
        let mut count = vec![0u64; (n3[0] * n3[1] * n3[2]) as usize];
        let at = |c: [i64; 3]| (c[0] + n3[0] * (c[1] + n3[1] * c[2])) as usize;
        for &p in pts {
            count[at(cell(p))] += 1;
        }
        let mut total = 0u64;
        for &p in pts {
            let c = cell(p);
            for o in 0..27i64 {
                let mut e = [0i64; 3];
                let mut inside = true;
                for k in 0..3 {
                    let v = c[k] + (o / 3i64.pow(k as u32)) % 3 - 1;
                    if d.is_periodic_axis(k) {
                        e[k] = v.rem_euclid(n3[k]);
                    } else {
                        inside &= (0..n3[k]).contains(&v);
                        e[k] = v;
                    }
                }
                if inside {
                    total += count[at(e)];
                }
            }
        }
        total
    };
    let pairs = |g: &mut spatium_host::make::VecDense<Vec3>| {
        g.build(pts, r).expect("build");
        let mut k = 0u64;
        g.for_each_pair(|_, _, _| k += 1);
        k
    };
    let (cp, cq) = (cand(&periodic), cand(&plain));
    let (pp, pq) = (pairs(&mut periodic), pairs(&mut plain));
    println!(
        "{n}: cells per axis periodic {:?}, plain {:?}; candidates read by the neighbour queries periodic {cp}, plain {cq} ({:.3}x); \
         pairs periodic {pp}, plain {pq} ({:.3}x)",
        periodic.cells_per_axis(),
        plain.cells_per_axis(),
        cp as f64 / cq as f64,
        pp as f64 / pq as f64
    );
    println!(
        "{n} {what}: periodic {:.3} ms, plain {:.3} ms, sorted {:.3} ms, plain on the torus's box {:.3} ms; \
         periodic/plain {:.3}x, periodic/same box {:.3}x (d² sums {:.1} {:.1} {:.1} {:.1})",
        m[0],
        m[1],
        m[2],
        m[3],
        m[0] / m[1],
        m[0] / m[3],
        sums[0],
        sums[1],
        sums[2],
        sums[3]
    );
}
