//! Development probe: the cell-sorted hash's `par_build` at 10⁶ particles
//! (the jittered block of the neighbour experiments), on a given number of
//! workers, for input in cell order (`sorted`), nearly in cell order
//! (`near`: each particle moved by up to a tenth of the radius, so a few
//! per cent change cell, as a simulation's input a step after it was
//! renumbered) or shuffled (`shuffled`). Prints the median wall-clock time
//! and the median CPU time of the whole process per build (the total work
//! of all workers, meaningful also with more workers than cores).
//!
//! ```text
//! cargo run --release -p spatium-benches --bin build_probe -- THREADS [sorted|near|shuffled] [REPS]
//! ```

use spatium::table::table_len;
use spatium::{NeighborSearch, Vec3};
use spatium_benches::TABLE_FACTOR;
use spatium_benches::measure::median;
use spatium_benches::scene::{Order, Scene};
use spatium_host::make;
use spatium_host::par::HostExec;
use std::time::Instant;

/// CPU time of the whole process so far, in ms.
fn process_cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // utime and stime, fields 14 and 15, in clock ticks (100 per second
    // on Linux), after the parenthesised command name.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) * 10.0
}

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
    let input = args.next().unwrap_or_else(|| "sorted".to_owned());
    let reps: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100)
        .max(1);
    let order = if input == "shuffled" {
        Order::Shuffled
    } else {
        Order::CellOrdered
    };
    let scene = Scene::new(100, order);
    let mut points = scene.points.clone();
    if input == "near" {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let d = 0.2 * scene.radius;
        for p in &mut points {
            *p = Vec3::new(p.x + d * next(), p.y + d * next(), p.z + d * next());
        }
    }
    let n = points.len();
    let mut hash = make::cell_sorted::<Vec3>(n, table_len(n, TABLE_FACTOR));
    let exec = HostExec::new(threads);
    hash.par_build(&exec, &points, scene.radius)
        .expect("the hash fits");
    let mut wall = Vec::new();
    let c0 = process_cpu_ms();
    for _ in 0..reps {
        let t0 = Instant::now();
        hash.par_build(&exec, &points, scene.radius)
            .expect("the hash fits");
        wall.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let cpu = (process_cpu_ms() - c0) / reps as f64;
    println!(
        "{threads} workers, {input} ({n} particles, in cell order: {}): wall median {:.2} ms, process CPU {cpu:.1} ms per build (mean of {reps})",
        hash.input_was_sorted(),
        median(&wall),
    );
}
