//! Quick per-step timing of the hierarchical hash grid on the paper's moving
//! cubes (development probe; the report is the reference). Thread CPU time
//! per step ([`spatium_benches::measure::time`]), every step of the
//! reports' steady-state protocol printed, then its medians.
//!
//! ```text
//! cargo run --release -p spatium-benches --bin hhg_step -- [N] [cubes|varied] [arena words]
//! ```

use spatium::exec::Serial;
use spatium::{Aabb3, BroadPhase, HhgConfig, Inspect, UpdateStrategy};
use spatium_benches::measure::{Steady, median, time};
use spatium_host::make;
use spatium_host::scenarios::{moving_cubes, varied_cubes};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let varied = args.get(2).is_some_and(|s| s == "varied");
    // `PAR1=1` in the environment: the parallel forms on the `Serial`
    // executor (one thread), for comparison.
    let par1 = std::env::var_os("PAR1").is_some();
    // `SPLIT=1`: the records sorted (`sort_records`) before detection,
    // timed apart and printed per step (part of the detection time).
    let split = std::env::var_os("SPLIT").is_some();
    let arena_cap: Option<usize> = args.get(3).and_then(|s| s.parse().ok());
    let mut sc = if varied {
        varied_cubes::<Aabb3>(n, 12.0, 1)
    } else {
        moving_cubes::<Aabb3>(n, 1)
    };
    let cfg = HhgConfig::DEFAULT;
    let words = arena_cap.unwrap_or(make::VecHhg::<Aabb3>::arena_words_for(n, &cfg) * 2);
    let mut g = make::hhg::<Aabb3>(n, words, cfg);
    let ((), setup) = time(|| {
        for (i, b) in sc.boxes.iter().enumerate() {
            g.insert(i as u32, *b).unwrap();
        }
    });
    println!("setup {:.1} ms CPU", setup.cpu_ms());
    let steady = Steady::PAPER;
    let mut update = Vec::new();
    let mut detect = Vec::new();
    for step in 0..steady.steps() {
        sc.step();
        let ((), tu) = time(|| {
            if par1 {
                g.par_update_all(&Serial, &sc.boxes, UpdateStrategy::Incremental)
            } else {
                g.update_all(&sc.boxes, UpdateStrategy::Incremental)
            }
            .unwrap()
        });
        let ((), ts) = time(|| {
            if split {
                g.sort_records();
            }
        });
        let (pairs, td) = time(|| {
            if par1 {
                let mut sinks = vec![0usize; g.overlap_tasks()];
                g.par_for_each_overlap(&Serial, &mut sinks, |k, _, _| *k += 1)
                    .unwrap();
                sinks.iter().sum()
            } else {
                let mut pairs = 0usize;
                g.for_each_overlap(|_, _| pairs += 1).unwrap();
                pairs
            }
        });
        let td = spatium_benches::measure::Timing {
            cpu_s: td.cpu_s + ts.cpu_s,
            wall_s: td.wall_s + ts.wall_s,
        };
        println!(
            "step {step}: update {:.1} ms, detect {:.1} ms CPU (sort {:.1}), pairs {pairs}",
            tu.cpu_ms(),
            td.cpu_ms(),
            ts.cpu_ms()
        );
        if step >= steady.skip {
            update.push(tu.cpu_ms());
            detect.push(td.cpu_ms());
        }
    }
    println!(
        "{}: update {:.1} ms, detect {:.1} ms CPU",
        steady.describe(),
        median(&update),
        median(&detect)
    );
    let st = g.stats();
    for gs in &st.grid[..st.grids] {
        println!("{gs:?}");
    }
    println!(
        "bytes used {} ({:.1} B/object), total {} ({:.1} B/object)",
        st.bytes_used,
        st.bytes_used as f64 / n as f64,
        st.bytes_total,
        st.bytes_total as f64 / n as f64
    );
}
