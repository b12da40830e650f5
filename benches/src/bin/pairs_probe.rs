//! Development probe: one neighbour-search implementation on the fluid
//! block, thread CPU time per run (build + all pairs, or build + CSR), the
//! median of 11 runs after 2 warm-up runs (the reports' median,
//! `spatium_benches::measure`). For quick A/B comparisons on a shared
//! machine, where criterion's wall-clock times swing with the load; the
//! reports are the reference.
//!
//! `cargo run --release -p spatium-benches --bin pairs_probe -- SIDE ORDER METRIC IMP`
//! e.g. `-- 100 shuffled pairs spatium-sorted` (side³ particles; orders
//! `cell-ordered`/`shuffled`, metrics `pairs`/`csr`/`csr-spatial`, implementations by
//! their benchmark names).

use spatium_benches::measure::{median, time};
use spatium_benches::{Imp, Metric, Order, Runner, Scene};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let side: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(46);
    let order = match args.get(2).map(String::as_str) {
        Some("shuffled") => Order::Shuffled,
        _ => Order::CellOrdered,
    };
    let metric = match args.get(3).map(String::as_str) {
        Some("csr") => Metric::Csr,
        Some("csr-spatial") => Metric::CsrSpatial,
        _ => Metric::Pairs,
    };
    let name = args.get(4).map_or("spatium-sorted", String::as_str);
    let Some(imp) = Imp::ALL.into_iter().find(|i| i.name() == name) else {
        eprintln!("unknown implementation {name}");
        std::process::exit(2);
    };
    let scene = Scene::new(side, order);
    let mut runner = Runner::new(imp, &scene).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut times = Vec::new();
    let mut out = 0;
    for k in 0..13 {
        let (r, t) = time(|| runner.run(&scene, metric));
        out = r.unwrap_or_else(|e| panic!("{name}: {e:?}"));
        if k >= 2 {
            times.push(t.cpu_ms());
        }
    }
    let n = scene.n();
    let ms = median(&times);
    println!(
        "{name} {metric} {} n={n}: {ms:.2} ms ({:.0} ns per particle), result {out:?}",
        order.name(),
        ms * 1e6 / n as f64
    );
}
