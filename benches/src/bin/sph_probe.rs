//! Development probe: the SPH step's steady state on one core, in thread
//! CPU time. For each structure named (benchmark names, default
//! `spatium-sorted+skin spatium-sorted+cache spatium-sorted+order
//! splashsurf`), each run restores the dam-break snapshot
//! ([`SphScene`], 32³ particles unless `--side S`) untimed and times
//! `STEPS` consecutive steps (default 10, the `sph-run10` protocol),
//! recording CPU ms per step; the structures take turns run by run, the
//! first of each round rotating. Prints the median over `RUNS` runs
//! (default 7) after one untimed run, with min–max, and each structure's
//! rate against the peer's (splashsurf) measured in the same process.
//!
//! `cargo run --release -p spatium-benches --bin sph_probe -- [--runs R]
//! [--steps S] [--side N] [STRUCTURE...]`
//!
//! For quick A/B comparisons on a shared machine; the report
//! (`report -- sph`) is the reference.

use spatium::sph::Stage;
use spatium_benches::measure::{median, time};
use spatium_benches::sph_scene::{SPH_SIDE, Search, SphScene, StageClock, Structure};

fn main() {
    let mut runs = 7usize;
    let mut steps = 10usize;
    let mut side = SPH_SIDE;
    let mut names = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = |what: &str| -> usize {
            args.next()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("{what} needs a number"))
        };
        match a.as_str() {
            "--runs" => runs = num("--runs").max(1),
            "--steps" => steps = num("--steps").max(1),
            "--side" => side = num("--side").max(2),
            _ => names.push(a),
        }
    }
    if names.is_empty() {
        names = [
            "spatium-sorted+skin",
            "spatium-sorted+cache",
            "spatium-sorted+order",
            "splashsurf",
        ]
        .map(String::from)
        .to_vec();
    }
    let structures: Vec<Structure> = names
        .iter()
        .map(|n| {
            Structure::ALL
                .into_iter()
                .find(|s| s.name() == n)
                .unwrap_or_else(|| panic!("unknown structure {n}"))
        })
        .collect();
    let scene = SphScene::new(side).expect("the scene");
    let n = scene.n();
    let mut subjects: Vec<_> = structures
        .iter()
        .map(|&s| {
            (
                s,
                Search::new(s, n),
                scene.fluid().expect("fits"),
                Vec::new(),
                StageClock::default(),
            )
        })
        .collect();
    let k = subjects.len();
    for round in 0..=runs {
        for j in 0..k {
            let (s, search, fluid, ms, clock) = &mut subjects[(j + round) % k];
            scene.restore(fluid).expect("fits");
            let (r, t) = time(|| {
                for _ in 0..steps {
                    search.step(fluid, clock)?;
                }
                Ok::<(), spatium::Error>(())
            });
            r.unwrap_or_else(|e| panic!("{s}: {e}"));
            if round > 0 {
                ms.push(t.cpu_ms() / steps as f64);
            }
        }
    }
    let peer = subjects
        .iter()
        .find(|s| s.0.is_peer())
        .map(|s| median(&s.3));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "N={n}, {runs} runs of {steps} steps, thread CPU; load {}",
        load.trim()
    );
    for (s, search, fluid, ms, clock) in &subjects {
        if let spatium_benches::sph_scene::Search::SortedSkin(v) = search {
            println!(
                "{:<28} inner builds {}, reuses {}, candidates {}, pairs {}",
                s.name(),
                v.inner_builds(),
                v.reuses(),
                v.candidate_count(),
                v.pairs().len()
            );
            let p = v.pairs();
            let same_i = p.windows(2).filter(|w| w[0].i == w[1].i).count();
            let same_j = p.windows(2).filter(|w| w[0].j == w[1].j).count();
            let mean_gap = p
                .windows(2)
                .map(|w| (w[0].i as f64 - w[1].i as f64).abs())
                .sum::<f64>()
                / p.len() as f64;
            println!("    consecutive same i {same_i}, same j {same_j}, mean |di| {mean_gap:.1}");
        }
        // FNV-1a over the positions' bits after the last run: equal
        // fingerprints mean bit-identical steps.
        let fp = fluid
            .positions()
            .iter()
            .flat_map(|x| [x.x, x.y, x.z])
            .fold(0xcbf2_9ce4_8422_2325u64, |h, c| {
                (h ^ u64::from(c.to_bits())).wrapping_mul(0x0100_0000_01b3)
            });
        println!("{:<28} fingerprint {fp:016x}", s.name());
        let m = median(ms);
        let lo = ms.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ms.iter().copied().fold(0.0, f64::max);
        let vs = peer.map_or(String::new(), |p| format!("  {:.2}x peer", p / m));
        println!(
            "{:<28} {m:7.2} ms/step [{lo:.2}-{hi:.2}]  {:6.1} steps/s{vs}",
            s.name(),
            1e3 / m
        );
        let total = clock.total_ns().max(1) as f64;
        let split: Vec<String> = Stage::ALL
            .iter()
            .map(|st| {
                format!(
                    "{} {:.0}%",
                    st.name(),
                    100.0 * clock.ns[st.index()] as f64 / total
                )
            })
            .collect();
        println!("    wall split: {}", split.join(", "));
    }
}
