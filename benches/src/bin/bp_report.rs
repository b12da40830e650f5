//! The broad-phase report: the paper's §4 benchmarks (Schornbaum 2009) for
//! the hierarchical hash grid, with its peers in the same run. Writes
//! `benches/BP_REPORT.md` and `benches/bp_report.svg`.
//!
//! ```text
//! cargo run --release -p spatium-benches --bin bp_report [-- --quick] [--out DIR]
//! ```
//!
//! Scenario (as in the paper): cubes (or boxes) placed uniformly in a periodic
//! box sized for about two overlapping pairs per object, each moving in a
//! random direction at up to 20 % of its size per step. A *step* is the
//! update of every box followed by the enumeration of every overlapping pair;
//! its time is the thread's CPU time, median over the timed steps (5, after
//! one untimed warm-up step). Every implementation runs the very same boxes,
//! and every step's pair count and order-free pair checksum must agree
//! between all implementations of a row (brute force included where it runs),
//! or the report aborts. `--quick`: N ≤ 10⁵.

use core::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use cpu_time::ThreadTime;
use plotters::prelude::*;
use spatium::{
    Aabb3, BoundingBox, BroadPhase, BruteForceBroadPhase, HhgConfig, Inspect, Point,
    UpdateStrategy, Vec3,
};
use spatium_benches::bp_peers::{ParryBvh, SweepAndPrune};
use spatium_host::make::{self, VecHhg};
use spatium_host::scenarios::{BoxScenario, elongated, moving_cubes, uneven, varied_cubes};

const TIMED_STEPS: usize = 5;

/// Pair count and an order-free checksum of the pairs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Pairs {
    count: u64,
    sum: u64,
}

impl Pairs {
    fn add(&mut self, a: u32, b: u32) {
        let (lo, hi) = (a.min(b) as u64, a.max(b) as u64);
        self.count += 1;
        self.sum = self
            .sum
            .wrapping_add((lo.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ hi).wrapping_mul(31));
    }
}

/// One implementation under test, driven step by step.
trait Driver {
    fn setup(&mut self, boxes: &[Aabb3]);
    fn step(&mut self, boxes: &[Aabb3]) -> Pairs;
}

struct Hhg {
    g: VecHhg<Aabb3>,
    strategy: UpdateStrategy,
}

impl Hhg {
    fn new(n: usize, cfg: HhgConfig, arena: usize, strategy: UpdateStrategy) -> Self {
        Self {
            g: make::hhg::<Aabb3>(n, arena, cfg),
            strategy,
        }
    }
}

impl Driver for Hhg {
    fn setup(&mut self, boxes: &[Aabb3]) {
        for (i, b) in boxes.iter().enumerate() {
            self.g.insert(i as u32, *b).expect("insert");
        }
    }
    fn step(&mut self, boxes: &[Aabb3]) -> Pairs {
        self.g.update_all(boxes, self.strategy).expect("update");
        let mut p = Pairs::default();
        self.g.for_each_overlap(|a, b| p.add(a, b)).expect("pairs");
        p
    }
}

struct Sap(Option<SweepAndPrune<Aabb3>>);

impl Driver for Sap {
    fn setup(&mut self, boxes: &[Aabb3]) {
        self.0 = Some(SweepAndPrune::new_sorted(boxes));
    }
    fn step(&mut self, boxes: &[Aabb3]) -> Pairs {
        let s = self.0.as_mut().expect("setup");
        s.update(boxes);
        let mut p = Pairs::default();
        s.for_each_overlap(|a, b| p.add(a, b));
        p
    }
}

struct Parry {
    bvh: Option<ParryBvh>,
    rebuild: bool,
}

impl Driver for Parry {
    fn setup(&mut self, boxes: &[Aabb3]) {
        self.bvh = Some(ParryBvh::new(boxes));
    }
    fn step(&mut self, boxes: &[Aabb3]) -> Pairs {
        let t = self.bvh.as_mut().expect("setup");
        if self.rebuild {
            t.rebuild(boxes);
        } else {
            t.refit(boxes);
        }
        let mut p = Pairs::default();
        t.for_each_overlap(|a, b| p.add(a, b));
        p
    }
}

struct Brute(BruteForceBroadPhase<Aabb3, Vec<spatium::BruteSlot<Aabb3>>>);

impl Driver for Brute {
    fn setup(&mut self, boxes: &[Aabb3]) {
        for (i, b) in boxes.iter().enumerate() {
            self.0.insert(i as u32, *b).expect("insert");
        }
    }
    fn step(&mut self, boxes: &[Aabb3]) -> Pairs {
        for (i, b) in boxes.iter().enumerate() {
            self.0.update(i as u32, *b).expect("update");
        }
        let mut p = Pairs::default();
        self.0.for_each_overlap(|a, b| p.add(a, b)).expect("pairs");
        p
    }
}

/// Result of one implementation on one scenario.
#[derive(Clone, Copy, Debug)]
struct Run {
    setup_ms: f64,
    step_ms: f64,
    pairs: Pairs,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `d` on a copy of `sc`: setup, one warm-up step, timed steps. Returns
/// the run and the pairs of every step (for the cross-check).
fn run(d: &mut dyn Driver, sc: &BoxScenario<Aabb3>) -> (Run, Vec<Pairs>) {
    let mut sc = sc.clone();
    let c = ThreadTime::now();
    d.setup(&sc.boxes);
    let setup_ms = c.elapsed().as_secs_f64() * 1e3;
    let mut all = Vec::new();
    let mut times = Vec::new();
    for k in 0..=TIMED_STEPS {
        sc.step();
        let c = ThreadTime::now();
        let p = d.step(&sc.boxes);
        let t = c.elapsed().as_secs_f64() * 1e3;
        if k > 0 {
            times.push(t);
        }
        all.push(p);
    }
    (
        Run {
            setup_ms,
            step_ms: median(&mut times),
            pairs: all[all.len() - 1],
        },
        all,
    )
}

/// Runs every named driver on `sc`; all must see the same pairs each step.
fn compare(sc: &BoxScenario<Aabb3>, drivers: Vec<(&str, Box<dyn Driver>)>) -> Vec<(String, Run)> {
    let mut out = Vec::new();
    let mut reference: Option<(String, Vec<Pairs>)> = None;
    for (name, mut d) in drivers {
        let (r, pairs) = run(d.as_mut(), sc);
        match &reference {
            None => reference = Some((name.to_string(), pairs)),
            Some((rn, rp)) => assert_eq!(
                &pairs,
                rp,
                "{name} disagrees with {rn} on {} (n = {})",
                sc.name,
                sc.boxes.len()
            ),
        }
        eprintln!(
            "  {:>9} {:<28} setup {:>9.2} ms  step {:>9.2} ms  pairs {}",
            sc.boxes.len(),
            name,
            r.setup_ms,
            r.step_ms,
            r.pairs.count
        );
        out.push((name.to_string(), r));
    }
    out
}

fn hhg(n: usize, cfg: HhgConfig, arena: usize, s: UpdateStrategy) -> Box<dyn Driver> {
    Box::new(Hhg::new(n, cfg, arena, s))
}

/// Arena for a scene: room for the grids the paper's rule wants (largest
/// grid at density 1/8, plus as many again for other levels).
fn roomy(n: usize, cfg: &HhgConfig) -> usize {
    2 * VecHhg::<Aabb3>::arena_words_for(n, cfg) + (1 << 16)
}

/// Arena capped at one cell per two objects (rounded to a power of eight):
/// the largest grid saturates there.
fn capped(n: usize) -> usize {
    let mut cells = 64usize;
    while cells * 2 < n {
        cells *= 8;
    }
    cells + 729 + (1 << 16)
}

fn scaled_velocities(mut sc: BoxScenario<Aabb3>, f: f32, name: &str) -> BoxScenario<Aabb3> {
    for v in &mut sc.velocities {
        *v = Vec3::from_fn(|k| v.coord(k) * f);
    }
    sc.name = name.to_string();
    sc
}

fn shrunk(sc: &BoxScenario<Aabb3>, f: f32) -> BoxScenario<Aabb3> {
    let mut sc = sc.clone();
    for (b, v) in sc.boxes.iter_mut().zip(&mut sc.velocities) {
        let lo = b.min();
        let e = b.longest_edge() / f;
        *b = Aabb3::new(lo, Vec3::from_fn(|k| lo.coord(k) + e)).expect("box");
        *v = Vec3::from_fn(|k| v.coord(k) / f);
    }
    sc.name = format!("{}_shrunk", sc.name);
    sc
}

struct Report {
    md: String,
    /// (series, n, ns per object per step) for the plot.
    points: Vec<(String, usize, f64)>,
}

fn table_header(md: &mut String, cols: &[&str]) {
    let _ = writeln!(md, "| {} |", cols.join(" | "));
    let _ = writeln!(
        md,
        "|{}|",
        cols.iter().map(|_| "---").collect::<Vec<_>>().join("|")
    );
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let max_n = if quick { 100_000 } else { 1_000_000 };
    let ns: Vec<usize> = [100, 1_000, 10_000, 100_000, 1_000_000]
        .into_iter()
        .filter(|&n| n <= max_n)
        .collect();
    let d = HhgConfig::DEFAULT;
    let inc = UpdateStrategy::Incremental;
    let mut rep = Report {
        md: String::new(),
        points: Vec::new(),
    };
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_default();
    let md = &mut rep.md;
    let _ = writeln!(
        md,
        "# Broad phase: the hierarchical hash grid against its peers\n\n\
         Generated by `cargo run --release -p spatium-benches --bin bp_report{}` at commit `{}`.\n\
         Times are the thread's CPU time per step (update of every box + every overlapping pair), \
         median of {TIMED_STEPS} steps after one warm-up, one thread. Every implementation of a row \
         ran the same boxes and reported the same pairs (count and checksum) at every step. \
         Scenario: the paper's §4 — cubes uniform in a periodic box with about 2 overlapping pairs \
         per object, moving up to 20 % of their size per step.\n",
        if quick { " -- --quick" } else { "" },
        commit.trim()
    );

    // --- 1. Scaling (Fig. 20–22) and the peers (Fig. 28).
    let _ = writeln!(
        md,
        "## 1. Scaling, one size and sizes varying by 12× (Fig. 20–22, 28)\n\n\
         hhg: hierarchical hash grid, default configuration (factor 2, growth at 1/8 box per cell, \
         flat array below 32 boxes), incremental update, arena with room for the paper's growth rule. \
         hhg capped: arena capped at about one cell per two boxes (the largest grid saturates; \
         this is the configuration that meets 64 B/object). SAP: sweep and prune with incremental \
         insertion sort on x (the paper's pe peer; not run at 10⁶, where one step takes minutes). \
         parry refit / rebuild: parry3d 0.31 `Bvh` refitted or rebuilt each step, pairs by its own \
         tree self-traversal. brute: all pairs (n ≤ 10⁴).\n"
    );
    table_header(
        md,
        &[
            "scenario",
            "N",
            "pairs",
            "implementation",
            "setup ms",
            "step ms",
            "ns/object/step",
            "vs hhg",
        ],
    );
    let mut headline = Vec::new();
    for varied in [false, true] {
        for &n in &ns {
            let sc = if varied {
                varied_cubes::<Aabb3>(n, 12.0, 7)
            } else {
                moving_cubes::<Aabb3>(n, 7)
            };
            eprintln!("{} n={n}", sc.name);
            let mut drivers: Vec<(&str, Box<dyn Driver>)> = vec![
                ("hhg", hhg(n, d, roomy(n, &d), inc)),
                ("hhg capped", hhg(n, d, capped(n), inc)),
            ];
            if n <= 100_000 {
                drivers.push(("SAP", Box::new(Sap(None))));
            }
            drivers.push((
                "parry refit",
                Box::new(Parry {
                    bvh: None,
                    rebuild: false,
                }),
            ));
            drivers.push((
                "parry rebuild",
                Box::new(Parry {
                    bvh: None,
                    rebuild: true,
                }),
            ));
            if n <= 10_000 {
                drivers.push((
                    "brute",
                    Box::new(Brute(BruteForceBroadPhase::new(make::brute_slots(n)))),
                ));
            }
            let res = compare(&sc, drivers);
            let base = res[0].1.step_ms;
            for (name, r) in &res {
                let _ = writeln!(
                    md,
                    "| {} | {n} | {} | {name} | {:.2} | {:.3} | {:.0} | {:.2}× |",
                    sc.name,
                    r.pairs.count,
                    r.setup_ms,
                    r.step_ms,
                    r.step_ms * 1e6 / n as f64,
                    r.step_ms / base
                );
                rep.points.push((
                    format!("{} {}", name, if varied { "(12×)" } else { "(cubes)" }),
                    n,
                    r.step_ms * 1e6 / n as f64,
                ));
            }
            if !varied && n == *ns.last().expect("sizes") {
                headline = res;
            }
        }
    }

    // --- 2. Hierarchy factor (Fig. 23–24).
    let n2 = 100_000.min(max_n);
    let _ = writeln!(md, "\n## 2. Hierarchy factor (Fig. 23–24), N = {n2}\n");
    table_header(
        md,
        &[
            "scenario",
            "factor",
            "grids",
            "max boxes/cell",
            "step ms",
            "ns/object/step",
        ],
    );
    for varied in [false, true] {
        let sc = if varied {
            varied_cubes::<Aabb3>(n2, 12.0, 8)
        } else {
            moving_cubes::<Aabb3>(n2, 8)
        };
        for f in [1.5f32, 2.0, 3.0, 4.0, 8.0] {
            let cfg = d.with_hierarchy_factor(f).expect("factor");
            let mut h = Hhg::new(n2, cfg, roomy(n2, &cfg) * 2, inc);
            let (r, _) = run(&mut h, &sc);
            let st = h.g.stats();
            let maxper = st.grid[..st.grids]
                .iter()
                .map(|g| g.max_objects_per_cell)
                .max()
                .unwrap_or(0);
            eprintln!("  factor {f}: {:.2} ms, {} grids", r.step_ms, st.grids);
            let _ = writeln!(
                md,
                "| {} | {f} | {} | {maxper} | {:.2} | {:.0} |",
                sc.name,
                st.grids,
                r.step_ms,
                r.step_ms * 1e6 / n2 as f64
            );
        }
    }

    // --- 3. Incremental update against clear-and-reinsert (Fig. 25).
    let _ = writeln!(
        md,
        "\n## 3. Update strategies (Fig. 25)\n\n\
         Update phase alone (no detection). Normal: motion up to 20 % of the size. Abnormal: \
         velocities ×10, so that nearly every box changes cell every step.\n"
    );
    table_header(
        md,
        &[
            "motion",
            "N",
            "incremental ms",
            "clear + reinsert ms",
            "incremental / reinsert",
        ],
    );
    for &n in ns.iter().filter(|&&n| n >= 10_000) {
        for abnormal in [false, true] {
            let base = moving_cubes::<Aabb3>(n, 9);
            let sc = if abnormal {
                scaled_velocities(base, 10.0, "abnormal")
            } else {
                base
            };
            let mut t = [0.0f64; 2];
            for (k, s) in [
                UpdateStrategy::Incremental,
                UpdateStrategy::ClearAndReinsert,
            ]
            .into_iter()
            .enumerate()
            {
                let mut g = make::hhg::<Aabb3>(n, roomy(n, &d), d);
                let mut sc = sc.clone();
                for (i, b) in sc.boxes.iter().enumerate() {
                    g.insert(i as u32, *b).expect("insert");
                }
                let mut times = Vec::new();
                for _ in 0..=TIMED_STEPS {
                    sc.step();
                    let c = ThreadTime::now();
                    g.update_all(&sc.boxes, s).expect("update");
                    times.push(c.elapsed().as_secs_f64() * 1e3);
                }
                times.remove(0);
                t[k] = median(&mut times);
            }
            let _ = writeln!(
                md,
                "| {} | {n} | {:.2} | {:.2} | {:.2} |",
                if abnormal {
                    "abnormal (×10)"
                } else {
                    "normal (20 %)"
                },
                t[0],
                t[1],
                t[0] / t[1]
            );
            eprintln!("  update strategies n={n} abnormal={abnormal}: {t:?}");
        }
    }

    // --- 4. Worst cases (Fig. 26).
    let _ = writeln!(
        md,
        "\n## 4. Worst cases (Fig. 26)\n\n\
         10×1×1 boxes along random axes, and cubes in a 1024 : 1 : 1 box (1024 times as many \
         objects along x), both about 2 pairs per object, against the cube scenario.\n"
    );
    table_header(
        md,
        &[
            "scenario",
            "N",
            "pairs",
            "step ms",
            "ns/object/step",
            "vs cubes",
        ],
    );
    for &n in ns.iter().filter(|&&n| n >= 10_000) {
        let mut base = 0.0;
        for sc in [
            moving_cubes::<Aabb3>(n, 10),
            elongated::<Aabb3>(n, 10),
            uneven::<Aabb3>(n, 10),
        ] {
            let mut h = Hhg::new(n, d, roomy(n, &d), inc);
            let (r, _) = run(&mut h, &sc);
            if base == 0.0 {
                base = r.step_ms;
            }
            let _ = writeln!(
                md,
                "| {} | {n} | {} | {:.2} | {:.0} | {:.2}× |",
                sc.name,
                r.pairs.count,
                r.step_ms,
                r.step_ms * 1e6 / n as f64,
                r.step_ms / base
            );
            eprintln!("  worst case {} n={n}: {:.2} ms", sc.name, r.step_ms);
        }
    }

    // --- 5. Sweep and prune under coherence (Fig. 29–30).
    let _ = writeln!(
        md,
        "\n## 5. Sweep and prune under temporal coherence (Fig. 28–30)\n\n\
         20 %: the usual motion. 1 %: motion up to 1 % of the size. shrunk: boxes 10⁵ times \
         smaller (no pairs), motion 1 % of the new size.\n"
    );
    table_header(
        md,
        &["motion", "N", "pairs", "hhg ms", "SAP ms", "SAP / hhg"],
    );
    for &n in ns.iter().filter(|&&n| (1_000..=100_000).contains(&n)) {
        let base = moving_cubes::<Aabb3>(n, 11);
        let slow = scaled_velocities(base.clone(), 0.05, "1 %");
        let tiny = shrunk(&slow, 1e5);
        for (label, sc) in [("20 %", base), ("1 %", slow), ("shrunk, 1 %", tiny)] {
            let res = compare(
                &sc,
                vec![
                    ("hhg", hhg(n, d, roomy(n, &d), inc)),
                    ("SAP", Box::new(Sap(None))),
                ],
            );
            let _ = writeln!(
                md,
                "| {label} | {n} | {} | {:.3} | {:.3} | {:.2}× |",
                res[0].1.pairs.count,
                res[0].1.step_ms,
                res[1].1.step_ms,
                res[1].1.step_ms / res[0].1.step_ms
            );
        }
    }

    // --- 6. Memory.
    let _ = writeln!(
        md,
        "\n## 6. Memory per object\n\n\
         All storage: id slots (36 B) + cell records (8 B) per id, the arena (4 B per word) and \
         the struct; `used` counts live grids only. The paper's own figure: 64 MB for 10⁵ objects \
         in 128³ cells (≈ 671 B/object, 64-bit pointers and per-cell vectors).\n"
    );
    table_header(
        md,
        &[
            "N",
            "arena",
            "largest grid",
            "saturated",
            "B/object used",
            "B/object total",
        ],
    );
    for &n in ns.iter().filter(|&&n| n >= 10_000) {
        let sc = moving_cubes::<Aabb3>(n, 12);
        for (label, words) in [
            (
                "exact (arena_words_for)",
                VecHhg::<Aabb3>::arena_words_for(n, &d),
            ),
            ("capped (1 cell / 2 boxes)", capped(n)),
        ] {
            let mut g = make::hhg::<Aabb3>(n, words, d);
            for (i, b) in sc.boxes.iter().enumerate() {
                g.insert(i as u32, *b).expect("insert");
            }
            let st = g.stats();
            let big = st.grid[..st.grids]
                .iter()
                .max_by_key(|g| g.cells)
                .copied()
                .unwrap_or_default();
            let _ = writeln!(
                md,
                "| {n} | {label} | {}³ | {} | {:.1} | {:.1} |",
                big.cells_per_axis[0],
                big.saturated,
                st.bytes_used as f64 / n as f64,
                st.bytes_total as f64 / n as f64
            );
        }
    }

    // --- Headline.
    if let Some((_, h)) = headline.iter().find(|(name, _)| name == "hhg capped") {
        let n = *ns.last().expect("sizes");
        let _ = writeln!(md, "\n## Headline: {n} moving cubes\n");
        for (name, r) in &headline {
            let _ = writeln!(
                md,
                "- {name}: {:.1} ms per step ({:.2}× hhg capped)",
                r.step_ms,
                r.step_ms / h.step_ms
            );
        }
    }
    let md_path = out.join("BP_REPORT.md");
    if let Err(e) = std::fs::write(&md_path, &rep.md) {
        eprintln!("writing {}: {e}", md_path.display());
        return ExitCode::FAILURE;
    }
    if let Err(e) = plot(&out.join("bp_report.svg"), &rep.points) {
        eprintln!("plot: {e}");
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {}", md_path.display());
    ExitCode::SUCCESS
}

fn plot(
    path: &std::path::Path,
    pts: &[(String, usize, f64)],
) -> Result<(), Box<dyn core::error::Error>> {
    let root = SVGBackend::new(path, (1100, 700)).into_drawing_area();
    root.fill(&WHITE)?;
    let xmax = pts.iter().map(|p| p.1).max().unwrap_or(10) as f64 * 1.5;
    let ymin = pts.iter().map(|p| p.2).fold(f64::INFINITY, f64::min) / 1.5;
    let ymax = pts.iter().map(|p| p.2).fold(0.0, f64::max) * 1.5;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Broad phase step (update + all pairs), CPU ns per object, log-log",
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((70.0..xmax).log_scale(), (ymin..ymax).log_scale())?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .x_desc("N (objects)")
        .y_desc("ns per object per step")
        .x_label_formatter(&|x| format!("{x:.0e}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    let mut names: Vec<&String> = pts.iter().map(|p| &p.0).collect();
    names.dedup();
    let mut seen = Vec::new();
    for n in names {
        if !seen.contains(&n) {
            seen.push(n);
        }
    }
    for (k, name) in seen.iter().enumerate() {
        let color = Palette99::pick(k).to_rgba();
        let series: Vec<(f64, f64)> = pts
            .iter()
            .filter(|p| &&p.0 == name)
            .map(|p| (p.1 as f64, p.2))
            .collect();
        chart
            .draw_series(LineSeries::new(series, color.stroke_width(2)).point_size(3))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
