//! The broad-phase report: the paper's §4 benchmarks (Schornbaum 2009) for
//! the hierarchical hash grid, with its peers in the same run. Writes
//! `benches/BP_REPORT.md` (prose from `benches/templates/bp_report.md`) and
//! `benches/bp_report.svg`.
//!
//! ```text
//! cargo run --release -p spatium-benches --bin report -- bp [--quick] [--max-n N] [--out DIR]
//! ```
//!
//! Scenario (as in the paper): cubes (or boxes) placed uniformly in a periodic
//! box sized for about two overlapping pairs per object, each moving in a
//! random direction at up to 20 % of its size per step. A *step* is the
//! update of every box followed by the enumeration of every overlapping pair;
//! its time is the thread's CPU time, in steady state
//! ([`Steady::PAPER`]: the median of steps 10–30 after the build), for every
//! implementation alike. Every implementation runs the very same boxes,
//! and every step's pair count and order-free pair checksum must agree
//! between all implementations of a row (brute force included where it runs),
//! or the report aborts. `--quick`: N ≤ 10⁵; `--max-n N`: sizes up to N.
//!
//! Each section is an experiment that returns rows; rendering them into
//! tables and the template is separate.

use std::path::Path;
use std::process::ExitCode;

use crate::bp_peers::{Pairs, ParryBvh, SweepAndPrune};
use crate::measure::{Steady, Timing, median, time};
use crate::plot::{self, Panel, Series};
use crate::provenance::{Provenance, locked_version};
use crate::template::{fill, table};
use spatium::{
    Aabb3, BoundingBox, BroadPhase, BruteForceBroadPhase, HhgConfig, Inspect, Point,
    UpdateStrategy, Vec3,
};
use spatium_host::make::{self, VecHhg};
use spatium_host::scenarios::{BoxScenario, elongated, moving_cubes, uneven, varied_cubes};

/// The measurement protocol of every stepped row.
const STEADY: Steady = Steady::PAPER;

/// Steps right after the build shown beside the steady state.
const EARLY: usize = 5;

/// The prose of the report.
const TEMPLATE: &str = include_str!("../../templates/bp_report.md");

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

/// `uniform::GridBroadPhase`, every box updated by one `update_many`.
struct Grid {
    g: make::VecGridBp<Aabb3>,
    updates: Vec<(u32, Aabb3)>,
}

impl Driver for Grid {
    fn setup(&mut self, boxes: &[Aabb3]) {
        for (i, b) in boxes.iter().enumerate() {
            self.g.insert(i as u32, *b).expect("insert");
        }
    }
    fn step(&mut self, boxes: &[Aabb3]) -> Pairs {
        self.updates.clear();
        self.updates
            .extend(boxes.iter().enumerate().map(|(i, b)| (i as u32, *b)));
        self.g.update_many(&self.updates).expect("update");
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
    /// Median CPU ms per step in steady state.
    step_ms: f64,
    /// Median wall-clock ms per step in steady state.
    wall_ms: f64,
    /// Median CPU ms of the first [`EARLY`] steps after the build.
    early_ms: f64,
    pairs: Pairs,
}

/// Runs `d` on a copy of `sc`: setup, then [`STEADY`]'s steps, the scene's
/// motion untimed, the structure's update and pairs timed. Returns the run
/// and the pairs of every step (for the cross-check).
fn run(d: &mut dyn Driver, sc: &BoxScenario<Aabb3>) -> (Run, Vec<Pairs>) {
    let mut sc = sc.clone();
    let ((), setup) = time(|| d.setup(&sc.boxes));
    let r = STEADY.run(
        |_| {
            sc.step();
            time(|| d.step(&sc.boxes))
        },
        |_| false,
    );
    let early: Vec<f64> = r.all[..EARLY.min(r.all.len())]
        .iter()
        .map(Timing::cpu_ms)
        .collect();
    (
        Run {
            setup_ms: setup.cpu_ms(),
            step_ms: r.median_cpu_ms(),
            wall_ms: r.timed.median_wall_ms(),
            early_ms: median(&early),
            pairs: *r.outputs.last().expect("steps"),
        },
        r.outputs,
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
            "  {:>9} {:<28} setup {:>9.2} ms  step {:>9.2} ms (steps 0–4: {:>9.2})  pairs {}",
            sc.boxes.len(),
            name,
            r.setup_ms,
            r.step_ms,
            r.early_ms,
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

// ----------------------------------------------------------------- experiments

/// A row of section 1.
struct ScalingRow {
    scenario: String,
    varied: bool,
    n: usize,
    imp: String,
    run: Run,
    /// This row's step time over the first row's (hhg) of its scenario.
    vs_hhg: f64,
}

/// Section 1: every implementation on both scenarios at every size.
fn scaling(ns: &[usize]) -> Vec<ScalingRow> {
    let d = HhgConfig::DEFAULT;
    let inc = UpdateStrategy::Incremental;
    let mut rows = Vec::new();
    for varied in [false, true] {
        for &n in ns {
            let sc = if varied {
                varied_cubes::<Aabb3>(n, 12.0, 7)
            } else {
                moving_cubes::<Aabb3>(n, 7)
            };
            eprintln!("{} n={n}", sc.name);
            let mut drivers: Vec<(&str, Box<dyn Driver>)> = vec![
                ("hhg", hhg(n, d, roomy(n, &d), inc)),
                ("hhg capped", hhg(n, d, capped(n), inc)),
                (
                    "grid",
                    Box::new(Grid {
                        g: make::grid_bp(n),
                        updates: Vec::with_capacity(n),
                    }),
                ),
            ];
            if n <= 100_000 {
                drivers.push(("SAP", Box::new(Sap(None))));
            }
            for rebuild in [false, true] {
                drivers.push((
                    if rebuild {
                        "parry rebuild"
                    } else {
                        "parry refit"
                    },
                    Box::new(Parry { bvh: None, rebuild }),
                ));
            }
            if n <= 10_000 {
                drivers.push((
                    "brute",
                    Box::new(Brute(BruteForceBroadPhase::new(make::brute_slots(n)))),
                ));
            }
            let res = compare(&sc, drivers);
            let base = res[0].1.step_ms;
            rows.extend(res.into_iter().map(|(imp, run)| ScalingRow {
                scenario: sc.name.clone(),
                varied,
                n,
                imp,
                vs_hhg: run.step_ms / base,
                run,
            }));
        }
    }
    rows
}

/// A row of section 2.
struct FactorRow {
    scenario: String,
    factor: f32,
    grids: usize,
    max_per_cell: u32,
    step_ms: f64,
}

/// Section 2: the hierarchy factor at `n`.
fn factors(n: usize) -> Vec<FactorRow> {
    let d = HhgConfig::DEFAULT;
    let mut rows = Vec::new();
    for varied in [false, true] {
        let sc = if varied {
            varied_cubes::<Aabb3>(n, 12.0, 8)
        } else {
            moving_cubes::<Aabb3>(n, 8)
        };
        for f in [1.5f32, 2.0, 3.0, 4.0, 8.0] {
            let cfg = d.with_hierarchy_factor(f).expect("factor");
            let mut h = Hhg::new(n, cfg, roomy(n, &cfg) * 2, UpdateStrategy::Incremental);
            let (r, _) = run(&mut h, &sc);
            let st = h.g.stats();
            let max_per_cell = st.grid[..st.grids]
                .iter()
                .map(|g| g.max_objects_per_cell)
                .max()
                .unwrap_or(0);
            eprintln!("  factor {f}: {:.2} ms, {} grids", r.step_ms, st.grids);
            rows.push(FactorRow {
                scenario: sc.name.clone(),
                factor: f,
                grids: st.grids,
                max_per_cell,
                step_ms: r.step_ms,
            });
        }
    }
    rows
}

/// A row of section 3.
struct StrategyRow {
    abnormal: bool,
    n: usize,
    incremental_ms: f64,
    reinsert_ms: f64,
}

/// Section 3: incremental update against clear-and-reinsert, update alone.
fn strategies(ns: &[usize]) -> Vec<StrategyRow> {
    let d = HhgConfig::DEFAULT;
    let mut rows = Vec::new();
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
                let r = STEADY.run(
                    |_| {
                        sc.step();
                        time(|| g.update_all(&sc.boxes, s).expect("update"))
                    },
                    |_| false,
                );
                t[k] = r.median_cpu_ms();
            }
            eprintln!("  update strategies n={n} abnormal={abnormal}: {t:?}");
            rows.push(StrategyRow {
                abnormal,
                n,
                incremental_ms: t[0],
                reinsert_ms: t[1],
            });
        }
    }
    rows
}

/// A row of section 4.
struct WorstRow {
    scenario: String,
    n: usize,
    pairs: u64,
    step_ms: f64,
    vs_cubes: f64,
}

/// Section 4: the worst cases against the cubes.
fn worst_cases(ns: &[usize]) -> Vec<WorstRow> {
    let d = HhgConfig::DEFAULT;
    let mut rows = Vec::new();
    for &n in ns.iter().filter(|&&n| n >= 10_000) {
        let mut base = 0.0;
        for sc in [
            moving_cubes::<Aabb3>(n, 10),
            elongated::<Aabb3>(n, 10),
            uneven::<Aabb3>(n, 10),
        ] {
            let mut h = Hhg::new(n, d, roomy(n, &d), UpdateStrategy::Incremental);
            let (r, _) = run(&mut h, &sc);
            if base == 0.0 {
                base = r.step_ms;
            }
            eprintln!("  worst case {} n={n}: {:.2} ms", sc.name, r.step_ms);
            rows.push(WorstRow {
                scenario: sc.name.clone(),
                n,
                pairs: r.pairs.count,
                step_ms: r.step_ms,
                vs_cubes: r.step_ms / base,
            });
        }
    }
    rows
}

/// A row of section 5.
struct SapRow {
    motion: &'static str,
    n: usize,
    pairs: u64,
    hhg_ms: f64,
    sap_ms: f64,
}

/// Section 5: sweep and prune under temporal coherence.
fn sap_coherence(ns: &[usize]) -> Vec<SapRow> {
    let d = HhgConfig::DEFAULT;
    let mut rows = Vec::new();
    for &n in ns.iter().filter(|&&n| (1_000..=100_000).contains(&n)) {
        let base = moving_cubes::<Aabb3>(n, 11);
        let slow = scaled_velocities(base.clone(), 0.05, "1 %");
        let tiny = shrunk(&slow, 1e5);
        for (motion, sc) in [("20 %", base), ("1 %", slow), ("shrunk, 1 %", tiny)] {
            let res = compare(
                &sc,
                vec![
                    ("hhg", hhg(n, d, roomy(n, &d), UpdateStrategy::Incremental)),
                    ("SAP", Box::new(Sap(None))),
                ],
            );
            rows.push(SapRow {
                motion,
                n,
                pairs: res[0].1.pairs.count,
                hhg_ms: res[0].1.step_ms,
                sap_ms: res[1].1.step_ms,
            });
        }
    }
    rows
}

/// A row of section 6.
struct MemoryRow {
    n: usize,
    arena: &'static str,
    largest_axis: u32,
    saturated: bool,
    used_per_object: f64,
    total_per_object: f64,
}

/// Section 6: memory per object, exact and capped arenas.
fn memory(ns: &[usize]) -> Vec<MemoryRow> {
    let d = HhgConfig::DEFAULT;
    let mut rows = Vec::new();
    for &n in ns.iter().filter(|&&n| n >= 10_000) {
        let sc = moving_cubes::<Aabb3>(n, 12);
        for (arena, words) in [
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
            rows.push(MemoryRow {
                n,
                arena,
                largest_axis: big.cells_per_axis[0],
                saturated: big.saturated,
                used_per_object: st.bytes_used as f64 / n as f64,
                total_per_object: st.bytes_total as f64 / n as f64,
            });
        }
    }
    rows
}

// ----------------------------------------------------------------- rendering

fn scaling_table(rows: &[ScalingRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.scenario.clone(),
                r.n.to_string(),
                r.run.pairs.count.to_string(),
                r.imp.clone(),
                format!("{:.2}", r.run.setup_ms),
                format!("{:.3}", r.run.step_ms),
                format!("{:.3}", r.run.wall_ms),
                format!("{:.3}", r.run.early_ms),
                format!("{:.0}", r.run.step_ms * 1e6 / r.n as f64),
                format!("{:.2}×", r.vs_hhg),
            ]
        })
        .collect();
    table(
        &[
            "scenario",
            "N",
            "pairs",
            "implementation",
            "setup ms",
            "step ms (CPU)",
            "step ms (wall)",
            "steps 0–4 ms (CPU)",
            "ns/object/step",
            "vs hhg",
        ],
        &cells,
    )
}

fn factor_table(rows: &[FactorRow], n: usize) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.scenario.clone(),
                r.factor.to_string(),
                r.grids.to_string(),
                r.max_per_cell.to_string(),
                format!("{:.2}", r.step_ms),
                format!("{:.0}", r.step_ms * 1e6 / n as f64),
            ]
        })
        .collect();
    table(
        &[
            "scenario",
            "factor",
            "grids",
            "max boxes/cell",
            "step ms",
            "ns/object/step",
        ],
        &cells,
    )
}

fn strategy_table(rows: &[StrategyRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                if r.abnormal {
                    "abnormal (×10)"
                } else {
                    "normal (20 %)"
                }
                .to_owned(),
                r.n.to_string(),
                format!("{:.2}", r.incremental_ms),
                format!("{:.2}", r.reinsert_ms),
                format!("{:.2}", r.incremental_ms / r.reinsert_ms),
            ]
        })
        .collect();
    table(
        &[
            "motion",
            "N",
            "incremental ms",
            "clear + reinsert ms",
            "incremental / reinsert",
        ],
        &cells,
    )
}

fn worst_table(rows: &[WorstRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.scenario.clone(),
                r.n.to_string(),
                r.pairs.to_string(),
                format!("{:.2}", r.step_ms),
                format!("{:.0}", r.step_ms * 1e6 / r.n as f64),
                format!("{:.2}×", r.vs_cubes),
            ]
        })
        .collect();
    table(
        &[
            "scenario",
            "N",
            "pairs",
            "step ms",
            "ns/object/step",
            "vs cubes",
        ],
        &cells,
    )
}

fn sap_table(rows: &[SapRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.motion.to_owned(),
                r.n.to_string(),
                r.pairs.to_string(),
                format!("{:.3}", r.hhg_ms),
                format!("{:.3}", r.sap_ms),
                format!("{:.2}×", r.sap_ms / r.hhg_ms),
            ]
        })
        .collect();
    table(
        &["motion", "N", "pairs", "hhg ms", "SAP ms", "SAP / hhg"],
        &cells,
    )
}

fn memory_table(rows: &[MemoryRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.n.to_string(),
                r.arena.to_owned(),
                format!("{}³", r.largest_axis),
                r.saturated.to_string(),
                format!("{:.1}", r.used_per_object),
                format!("{:.1}", r.total_per_object),
            ]
        })
        .collect();
    table(
        &[
            "N",
            "arena",
            "largest grid",
            "saturated",
            "B/object used",
            "B/object total",
        ],
        &cells,
    )
}

/// The largest N's moving cubes, each implementation against hhg capped.
fn headline(rows: &[ScalingRow]) -> (usize, String) {
    let n = rows
        .iter()
        .filter(|r| !r.varied)
        .map(|r| r.n)
        .max()
        .unwrap_or(0);
    let last: Vec<&ScalingRow> = rows.iter().filter(|r| !r.varied && r.n == n).collect();
    let Some(capped) = last.iter().find(|r| r.imp == "hhg capped") else {
        return (n, "(hhg capped not measured)\n".to_owned());
    };
    let mut s = String::new();
    for r in &last {
        s.push_str(&format!(
            "- {}: {:.1} ms per step ({:.2}× hhg capped); steps 0–4 after the build: {:.1} ms\n",
            r.imp,
            r.run.step_ms,
            r.run.step_ms / capped.run.step_ms,
            r.run.early_ms
        ));
    }
    (n, s)
}

fn plot_scaling(path: &Path, rows: &[ScalingRow]) -> Result<(), Box<dyn core::error::Error>> {
    let series = Series::group(rows.iter().map(|r| {
        (
            format!("{} {}", r.imp, if r.varied { "(12×)" } else { "(cubes)" }),
            r.n as f64,
            r.run.step_ms * 1e6 / r.n as f64,
        )
    }))
    .into_iter()
    .map(|mut s| {
        s.bold = s.name.starts_with("hhg");
        s
    })
    .collect();
    plot::svg(
        path,
        (1100, 700),
        None,
        1,
        &[Panel::log_log(
            format!(
                "Broad phase step (update + all pairs), CPU ns per object, {}, log-log",
                STEADY.describe()
            ),
            "N (objects)",
            "ns per object per step",
            series,
        )],
    )
}

/// Runs the experiment and writes the report; `args` are the options
/// after the program (and subcommand) name.
pub fn main(args: &[String]) -> ExitCode {
    let opts = match super::check_args(args, &["--quick"], &["--out", "--max-n"]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut prov = Provenance::start();
    let quick = opts.flag("--quick");
    let out = opts.out_dir();
    let mut max_n = if quick { 100_000 } else { 1_000_000 };
    match opts.number("--max-n") {
        Ok(Some(m)) => max_n = max_n.min(m),
        Ok(None) => {}
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    let ns: Vec<usize> = [100, 1_000, 10_000, 100_000, 1_000_000]
        .into_iter()
        .filter(|&n| n <= max_n)
        .collect();
    let n_factor = 100_000.min(max_n);

    let scaling_rows = scaling(&ns);
    let factor_rows = factors(n_factor);
    let strategy_rows = strategies(&ns);
    let worst_rows = worst_cases(&ns);
    let sap_rows = sap_coherence(&ns);
    let memory_rows = memory(&ns);
    prov.finish();

    let (n_headline, headline) = headline(&scaling_rows);
    let (skip, steps) = (STEADY.skip.to_string(), STEADY.steps().to_string());
    let values = [
        ("provenance", prov.markdown()),
        ("protocol", STEADY.describe()),
        ("steps", steps),
        ("skip", skip),
        ("parry_version", locked_version("parry3d")),
        ("table_scaling", scaling_table(&scaling_rows)),
        ("n_factor", n_factor.to_string()),
        ("table_factor", factor_table(&factor_rows, n_factor)),
        ("table_strategies", strategy_table(&strategy_rows)),
        ("table_worst", worst_table(&worst_rows)),
        ("table_sap", sap_table(&sap_rows)),
        ("table_memory", memory_table(&memory_rows)),
        ("n_headline", n_headline.to_string()),
        ("headline", headline),
    ];
    let values: Vec<(&str, &str)> = values.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let md = match fill(TEMPLATE, &values) {
        Ok(md) => md,
        Err(e) => {
            eprintln!("templates/bp_report.md: {e}");
            return ExitCode::FAILURE;
        }
    };
    let md_path = out.join("BP_REPORT.md");
    if let Err(e) = std::fs::write(&md_path, md) {
        eprintln!("writing {}: {e}", md_path.display());
        return ExitCode::FAILURE;
    }
    if let Err(e) = plot_scaling(&out.join("bp_report.svg"), &scaling_rows) {
        eprintln!("plot: {e}");
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {}", md_path.display());
    ExitCode::SUCCESS
}
