//! Development probe: the paper's moving cubes, one step at a time, with the
//! hierarchical hash grid, the grid broad phase (`uniform::GridBroadPhase`;
//! `grid-tasks` is its parallel form, `par_update_all` and
//! `par_for_each_overlap`, on one worker: the cost of its tasks) and
//! parry3d's `Bvh` (rebuilt, and refitted) on the very same boxes of
//! every step — they take turns inside each
//! step, the first of each step rotating. Thread CPU time of update + all
//! pairs per step; medians over the reports' steady state (steps 10–30
//! after the build, [`Steady::PAPER`]); each step's pair counts are checked
//! equal across the three. For same-run ratios on a shared machine, where
//! two separate runs minutes apart differ by more than the effects
//! measured; the broad-phase report (`report -- bp`) is the reference.
//!
//! `cargo run --release -p spatium-benches --bin cubes_probe -- [N] [hhg|grid|grid-tasks|rebuild|refit ...]`
//! (default 10⁶ and all but `grid-tasks`).

use spatium::exec::{Padded, Serial};
use spatium::{Aabb3, BroadPhase, HhgConfig, UpdateStrategy};
use spatium_benches::bp_peers::ParryBvh;
use spatium_benches::measure::{Steady, median, time};
use spatium_host::make;
use spatium_host::scenarios::moving_cubes;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args
        .first()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let mut names: Vec<&str> = args
        .iter()
        .skip(1)
        .map(String::as_str)
        .filter(|s| matches!(*s, "hhg" | "grid" | "grid-tasks" | "rebuild" | "refit"))
        .collect();
    if names.is_empty() {
        names = vec!["hhg", "grid", "rebuild", "refit"];
    }
    let mut sc = moving_cubes::<Aabb3>(n, 1);
    let cfg = HhgConfig::DEFAULT;
    let words = make::VecHhg::<Aabb3>::arena_words_for(n, &cfg) * 2;
    let mut g = make::hhg::<Aabb3>(n, words, cfg);
    for (i, b) in sc.boxes.iter().enumerate() {
        g.insert(i as u32, *b).expect("insert");
    }
    let mut grid = make::grid_bp::<Aabb3>(n);
    for (i, b) in sc.boxes.iter().enumerate() {
        grid.insert(i as u32, *b).expect("insert");
    }
    let mut updates: Vec<(u32, Aabb3)> = Vec::with_capacity(n);
    let mut sinks: Vec<Padded<usize>> = Vec::new();
    let mut rebuilt = ParryBvh::new(&sc.boxes);
    let mut refitted = ParryBvh::new(&sc.boxes);
    let steady = Steady::PAPER;
    let mut ms: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for step in 0..steady.steps() {
        sc.step();
        let mut counts = Vec::new();
        for turn in 0..names.len() {
            let which = (turn + step) % names.len();
            let (pairs, t) = match names[which] {
                "hhg" => time(|| {
                    g.update_all(&sc.boxes, UpdateStrategy::Incremental)
                        .expect("update");
                    let mut pairs = 0usize;
                    g.for_each_overlap(|_, _| pairs += 1).expect("pairs");
                    pairs
                }),
                "grid" => time(|| {
                    updates.clear();
                    updates.extend(sc.boxes.iter().enumerate().map(|(i, b)| (i as u32, *b)));
                    grid.update_many(&updates).expect("update");
                    let mut pairs = 0usize;
                    grid.for_each_overlap(|_, _| pairs += 1).expect("pairs");
                    pairs
                }),
                "grid-tasks" => time(|| {
                    grid.par_update_all(&Serial, &sc.boxes).expect("update");
                    sinks.clear();
                    sinks.resize(grid.overlap_tasks(), Padded(0));
                    grid.par_for_each_overlap(&Serial, &mut sinks, |s, _, _| **s += 1)
                        .expect("pairs");
                    sinks.iter().map(|s| **s).sum()
                }),
                "rebuild" => time(|| {
                    rebuilt.rebuild(&sc.boxes);
                    let mut pairs = 0usize;
                    rebuilt.for_each_overlap(|_, _| pairs += 1);
                    pairs
                }),
                _ => time(|| {
                    refitted.refit(&sc.boxes);
                    let mut pairs = 0usize;
                    refitted.for_each_overlap(|_, _| pairs += 1);
                    pairs
                }),
            };
            counts.push(pairs);
            if step >= steady.skip {
                ms[which].push(t.cpu_ms());
            }
        }
        assert!(
            counts.windows(2).all(|w| w[0] == w[1]),
            "step {step}: pair counts differ {counts:?}"
        );
    }
    let (a, b) = steady.window();
    println!("moving cubes n={n}, steps {a}-{b} (thread CPU ms per step, update + all pairs)");
    let med: Vec<f64> = ms.iter().map(|v| median(v)).collect();
    for (name, (m, v)) in names.iter().zip(med.iter().zip(&ms)) {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        println!("{name:8} median {m:8.1} ms  (min {lo:.1}, max {hi:.1})");
    }
    if let Some(h) = names.iter().position(|s| *s == "hhg") {
        for (name, m) in names.iter().zip(&med) {
            if *name != "hhg" {
                println!("{name} / hhg: {:.2}x", m / med[h]);
            }
        }
    }
}
