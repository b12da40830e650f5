//! Issue 17 item 3: cluster-pair lists (GROMACS's scheme,
//! [`spatium_benches::cluster_pairs`]) against `CellSortedHash` on the
//! fluid block, in one process, on identical input.
//!
//! `cargo run --release -p spatium-benches --bin cluster_probe -- SIDE ORDER`
//! (side³ particles; order `cell-ordered` or `shuffled`). Every variant runs
//! once per round, the variants interleaved so that the machine's drift
//! falls on all of them alike; 2 warm-up rounds, then the median
//! (`spatium_benches::measure::median`) of the thread CPU time of 11
//! rounds. Each variant's pair count is checked against the hash's.
//!
//! Variants: `spatium-sorted` (build + every pair, the reports' `pairs`
//! metric); `cluster-M/e` (build + search + every pair, clusters of `M`,
//! columns `e` spacings wide); `listed-M/e` (the sweep of a kept
//! cluster-pair list alone, built at radius + skin: what the steps between
//! rebuilds cost with a Verlet skin); `cluster build` rows time the binning
//! alone.

use spatium::{NeighborSearch, Vec3};
use spatium_benches::cluster_pairs::{ClusterPairs, Sweep};
use spatium_benches::measure::{median, time};
use spatium_benches::{Order, SPACING, Scene, TABLE_FACTOR};
use spatium_host::make;

/// The Verlet skin of the listed variants, as a fraction of the radius
/// (the SPH step's default skin is 0.1 h).
const SKIN: f32 = 0.1;

/// A structure with columns `edge` spacings wide, built on `points`, its
/// cluster-pair list kept at radius + skin (not timed).
fn kept<const M: usize>(edge: f32, points: &[Vec3], r: f32) -> ClusterPairs<M> {
    let mut c = ClusterPairs::new(edge * SPACING);
    c.build(points, r);
    c.build_list(SKIN * r);
    c
}

/// Build, search and every pair, counted through the callback.
fn fresh<const M: usize>(c: &mut ClusterPairs<M>, points: &[Vec3], r: f32) -> Sweep {
    c.build(points, r);
    let mut x = 0u64;
    let s = c.for_each_pair(|_, _, _| x += 1);
    assert_eq!(x, s.pairs);
    s
}

/// The kept list's sweep alone, counted through the callback.
fn listed<const M: usize>(c: &ClusterPairs<M>) -> Sweep {
    let mut x = 0u64;
    let s = c.for_each_listed(|_, _, _| x += 1);
    assert_eq!(x, s.pairs);
    s
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let side: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(46);
    let order = Order::ALL
        .into_iter()
        .find(|o| args.get(2).is_some_and(|a| a == o.name()))
        .unwrap_or(Order::CellOrdered);
    let scene = Scene::new(side, order);
    let (n, r) = (scene.n(), scene.radius);
    let mut hash = make::cell_sorted(n, spatium::table::table_len(n, TABLE_FACTOR));
    let edges = [1.0f32, 1.6, 2.0];
    let mut c4: Vec<ClusterPairs<4>> = edges
        .iter()
        .map(|e| ClusterPairs::new(e * SPACING))
        .collect();
    let mut c8: Vec<ClusterPairs<8>> = edges
        .iter()
        .map(|e| ClusterPairs::new(e * SPACING))
        .collect();
    let l4: Vec<ClusterPairs<4>> = edges.iter().map(|&e| kept(e, &scene.points, r)).collect();
    let l8: Vec<ClusterPairs<8>> = edges.iter().map(|&e| kept(e, &scene.points, r)).collect();

    let mut names: Vec<String> = vec!["spatium-sorted".into()];
    for m in [4, 8] {
        for e in edges {
            names.push(format!("cluster-{m}/{e}"));
        }
    }
    for m in [4, 8] {
        for e in edges {
            names.push(format!("listed-{m}/{e}"));
        }
    }
    for m in [4, 8] {
        names.push(format!("cluster build {m}/1.6"));
    }
    let mut times = vec![Vec::new(); names.len()];
    // Per variant: the pairs it found and, for the cluster sweeps, the
    // cluster pairs and the share of useful distances (none for builds).
    let mut found: Vec<Option<u64>> = vec![None; names.len()];
    let mut sweeps: Vec<Option<(u64, f64)>> = vec![None; names.len()];
    for round in 0..13 {
        let mut k = 0;
        let mut record = |k: &mut usize, pairs: Option<u64>, sweep: Option<(u64, f64)>, ms: f64| {
            if round >= 2 {
                times[*k].push(ms);
            }
            found[*k] = pairs;
            sweeps[*k] = sweep;
            *k += 1;
        };
        let (out, t) = time(|| {
            hash.build(&scene.points, r).expect("build");
            let mut c = 0u64;
            hash.for_each_pair(|_, _, _| c += 1);
            c
        });
        record(&mut k, Some(out), None, t.cpu_ms());
        for c in &mut c4 {
            let (s, t) = time(|| fresh(c, &scene.points, r));
            record(
                &mut k,
                Some(s.pairs),
                Some((s.cluster_pairs, s.efficiency::<4>())),
                t.cpu_ms(),
            );
        }
        for c in &mut c8 {
            let (s, t) = time(|| fresh(c, &scene.points, r));
            record(
                &mut k,
                Some(s.pairs),
                Some((s.cluster_pairs, s.efficiency::<8>())),
                t.cpu_ms(),
            );
        }
        for c in &l4 {
            let (s, t) = time(|| listed(c));
            record(
                &mut k,
                Some(s.pairs),
                Some((s.cluster_pairs, s.efficiency::<4>())),
                t.cpu_ms(),
            );
        }
        for c in &l8 {
            let (s, t) = time(|| listed(c));
            record(
                &mut k,
                Some(s.pairs),
                Some((s.cluster_pairs, s.efficiency::<8>())),
                t.cpu_ms(),
            );
        }
        let ((), t) = time(|| c4[1].build(&scene.points, r));
        record(&mut k, None, None, t.cpu_ms());
        let ((), t) = time(|| c8[1].build(&scene.points, r));
        record(&mut k, None, None, t.cpu_ms());
    }
    let base = median(&times[0]);
    println!(
        "fluid block {side}³ = {n} particles, {}, radius {r} (2 spacings), skin {SKIN} r; \
         median of 11 rounds, thread CPU time",
        order.name()
    );
    println!(
        "{:<22} {:>10} {:>12} {:>9} {:>14} {:>11}",
        "variant", "ms", "ns/particle", "vs hash", "cluster pairs", "efficiency"
    );
    for (k, name) in names.iter().enumerate() {
        let ms = median(&times[k]);
        if let Some(p) = found[k] {
            assert_eq!(
                Some(p),
                found[0],
                "{name}: pair count differs from the hash's"
            );
        }
        let (cp, eff) = sweeps[k].map_or(("0".into(), "-".into()), |(c, e)| {
            (c.to_string(), format!("{e:.3}"))
        });
        println!(
            "{name:<22} {ms:>10.2} {:>12.1} {:>9.2} {cp:>14} {eff:>11}",
            ms * 1e6 / n as f64,
            base / ms,
        );
    }
    println!("pairs: {}", found[0].unwrap_or(0));
}
