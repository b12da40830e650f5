//! The comparison report: times every implementation on the fluid block and
//! writes `benches/REPORT.md` (prose from `benches/templates/report.md`) and
//! `benches/report.svg`.
//!
//! ```text
//! cargo run --release -p spatium-benches --bin report -- neighbors [--quick] [--max-n N] [--out DIR]
//! ```
//!
//! Each measurement: one run that is both the warm-up and the correctness
//! check (see `spatium_benches::check`), then at least 5 timed runs (and at
//! least one second of them, at most 51 runs: `measure::Repeat::REPORT`);
//! the `measure::median` of the thread's CPU
//! time is reported as nanoseconds per particle (the machine this runs on may
//! be shared, which stretches wall-clock time; wall-clock medians are in the
//! report's appendix). `--quick`: at least 3 runs (0.3 s) and N ≤ 10⁵;
//! `--max-n 20000` keeps to N ≈ 10⁴.

extern crate alloc;

use alloc::collections::BTreeMap;
use core::fmt::Write as _;
use core::time::Duration;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::check::tolerance;
use crate::measure::{Repeat, median};
use crate::plot::{self, Panel, Series};
use crate::provenance::{Provenance, locked_version};
use crate::template::fill;
use crate::{
    CheckError, Imp, MAX_N_TABLE_100, Metric, Order, Reference, Runner, SIDES, Scene, TABLE_FACTOR,
    checked_runner,
};
use spatium::table::{SLOTS_PER_OBJECT, table_len};
use spatium::{NeighborSearch, Vec3};
use spatium_host::make;

/// Command-line options.
#[derive(Debug)]
struct Args {
    quick: bool,
    max_n: usize,
    out: PathBuf,
}

fn parse_args(raw: &[String]) -> Result<Args, String> {
    let opts = super::check_args(raw, &["--quick"], &["--max-n", "--out"])?;
    let mut args = Args {
        quick: opts.flag("--quick"),
        max_n: opts.number("--max-n")?.unwrap_or(usize::MAX),
        out: opts.out_dir(),
    };
    if args.quick {
        args.max_n = args.max_n.min(100_000);
    }
    Ok(args)
}

/// One cell of the tables.
#[derive(Clone, Copy, Debug)]
struct Sample {
    /// Median wall-clock time per particle.
    wall_ns_per_particle: f64,
    /// Median thread CPU time per particle (the reported figure).
    ns_per_particle: f64,
    runs: usize,
}

/// Per-scene facts shown in the report.
#[derive(Clone, Debug)]
struct SceneInfo {
    n: usize,
    side: usize,
    reference: Reference,
    cells: usize,
    /// `(table slots, colliding cells)` per table policy.
    tables: Vec<(usize, usize)>,
}

type Key = (Metric, Imp, usize, Order);

/// The prose of the report.
const TEMPLATE: &str = include_str!("../../templates/report.md");

/// Runs the experiment and writes the report; `args` are the options
/// after the program (and subcommand) name.
pub fn main(args: &[String]) -> ExitCode {
    let args = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut prov = Provenance::start();
    let repeat = if args.quick {
        Repeat {
            min_runs: 3,
            min_time: Duration::from_millis(300),
            ..Repeat::REPORT
        }
    } else {
        Repeat::REPORT
    };

    let mut results: BTreeMap<Key, Sample> = BTreeMap::new();
    let mut scenes: Vec<SceneInfo> = Vec::new();
    let mut failures: BTreeMap<Key, CheckError> = BTreeMap::new();
    let sides: Vec<usize> = SIDES
        .iter()
        .copied()
        .filter(|s| s.pow(3) <= args.max_n)
        .collect();
    for &side in &sides {
        for order in Order::ALL {
            let scene = Scene::new(side, order);
            let n = scene.n();
            let reference = Reference::compute(&scene);
            if order == Order::CellOrdered {
                scenes.push(scene_info(&scene, reference));
            }
            for metric in Metric::ALL {
                for imp in Imp::ALL {
                    if !imp.measured(metric, n) {
                        continue;
                    }
                    let mut runner = match checked_runner(imp, &scene, &reference, metric) {
                        Ok(r) => r,
                        Err(e) => {
                            eprintln!("NOT TIMED: {e}");
                            failures.insert((metric, imp, n, order), e);
                            continue;
                        }
                    };
                    let sample = time(&mut runner, &scene, metric, &repeat);
                    eprintln!(
                        "{metric:5} {order:12} N={n:7} {imp:22} {:9.1} ns/particle CPU, {:9.1} wall ({} runs)",
                        sample.ns_per_particle, sample.wall_ns_per_particle, sample.runs
                    );
                    results.insert((metric, imp, n, order), sample);
                }
            }
        }
    }
    prov.finish();
    let md = match markdown(&prov, &repeat, &scenes, &results, &failures) {
        Ok(md) => md,
        Err(e) => {
            eprintln!("templates/report.md: {e}");
            return ExitCode::FAILURE;
        }
    };
    let md_path = args.out.join("REPORT.md");
    let svg_path = args.out.join("report.svg");
    if let Err(e) = std::fs::write(&md_path, md) {
        eprintln!("writing {}: {e}", md_path.display());
        return ExitCode::FAILURE;
    }
    if let Err(e) = plot(&svg_path, &scenes, &results) {
        eprintln!("writing {}: {e}", svg_path.display());
        return ExitCode::FAILURE;
    }
    eprintln!(
        "wrote {} and {} in {:.0} s",
        md_path.display(),
        svg_path.display(),
        prov.elapsed.unwrap_or_default().as_secs_f64()
    );
    // A refused scene is a documented limit; a wrong answer is a failure.
    if failures
        .values()
        .any(|e| matches!(e, CheckError::Mismatch(_)))
    {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The median runs of `repeat` (CPU and wall-clock), per particle.
fn time(runner: &mut Runner, scene: &Scene, metric: Metric, repeat: &Repeat) -> Sample {
    let samples = repeat.run(|| runner.run(scene, metric).expect("succeeded in the check"));
    let n = scene.n() as f64;
    Sample {
        wall_ns_per_particle: samples.median_wall_ms() * 1e6 / n,
        ns_per_particle: samples.median_cpu_ms() * 1e6 / n,
        runs: samples.len(),
    }
}

fn scene_info(scene: &Scene, reference: Reference) -> SceneInfo {
    let n = scene.n();
    let mut tables = Vec::new();
    let mut cells = 0;
    let mut policies = vec![table_len(n, TABLE_FACTOR)];
    if n <= MAX_N_TABLE_100 {
        policies.push(table_len(n, SLOTS_PER_OBJECT));
    }
    for t in policies {
        let mut h = make::cell_sorted::<Vec3>(n, t);
        h.build(&scene.points, scene.radius).expect("build");
        if cells == 0 {
            let set: HashSet<[i32; 3]> = scene
                .points
                .iter()
                .map(|&p| h.grid().cell(p).expect("in range"))
                .collect();
            cells = set.len();
        }
        tables.push((t, h.colliding_cells()));
    }
    SceneInfo {
        n,
        side: scene.side,
        reference,
        cells,
        tables,
    }
}

fn fmt_ns(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn columns(scenes: &[SceneInfo]) -> Vec<(usize, Order)> {
    scenes
        .iter()
        .flat_map(|s| Order::ALL.map(|o| (s.n, o)))
        .collect()
}

/// The fastest peer for a column, if any was measured.
fn best_peer(
    results: &BTreeMap<Key, Sample>,
    metric: Metric,
    n: usize,
    order: Order,
    value: impl Fn(&Sample) -> f64,
) -> Option<(Imp, f64)> {
    Imp::ALL
        .iter()
        .filter(|i| i.is_peer())
        .filter_map(|&i| results.get(&(metric, i, n, order)).map(|s| (i, value(s))))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

fn markdown(
    prov: &Provenance,
    repeat: &Repeat,
    scenes: &[SceneInfo],
    results: &BTreeMap<Key, Sample>,
    failures: &BTreeMap<Key, CheckError>,
) -> Result<String, crate::template::TemplateError> {
    let cols = columns(scenes);
    let peers = ["kiddo", "rstar", "splashsurf_lib"]
        .map(|n| format!("{n} {}", locked_version(n)))
        .join(", ");

    let mut scene_table = String::from(
        "| N | side | pairs (d < r) | neighbours / particle | pairs at d = r | pairs within 10⁻⁶ r² of r² | cells | colliding cells, per table length |\n\
         |---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for sc in scenes {
        let tables = sc
            .tables
            .iter()
            .map(|(t, m)| format!("2^{}: {m}", t.trailing_zeros()))
            .collect::<Vec<_>>()
            .join("; ");
        let _ = writeln!(
            scene_table,
            "| {} | {} | {} | {:.1} | {} | {} | {} | {tables} |",
            sc.n,
            sc.side,
            sc.reference.pairs,
            sc.reference.neighbours_per_particle(sc.n),
            sc.reference.at_r,
            sc.reference.band,
            sc.cells,
        );
    }

    let cpu = |x: &Sample| x.ns_per_particle;
    let wall = |x: &Sample| x.wall_ns_per_particle;
    let ns = |metric, value: &dyn Fn(&Sample) -> f64| {
        let mut s = String::new();
        ns_table(&mut s, metric, &cols, results, failures, value);
        s
    };
    let ratio = |metric, value: &dyn Fn(&Sample) -> f64| {
        let mut s = String::new();
        ratio_table(&mut s, metric, &cols, results, value);
        s
    };
    let runs = |metric| {
        let r: Vec<usize> = results
            .iter()
            .filter(|(k, _)| k.0 == metric)
            .map(|(_, v)| v.runs)
            .collect();
        format!(
            "{} to {}",
            r.iter().min().unwrap_or(&0),
            r.iter().max().unwrap_or(&0)
        )
    };

    let tolerance_text = scenes
        .iter()
        .map(|sc| {
            format!(
                "N={}: {}",
                sc.n,
                tolerance(sc.reference.pairs, sc.reference.band)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let check_result = if failures.is_empty() {
        "Every implementation passed the check on every scene.\n".to_owned()
    } else {
        let mut s = "**Not timed** (cells marked *refused* or *wrong* above); every other \
                     check passed:\n\n"
            .to_owned();
        for f in failures.values() {
            let _ = writeln!(s, "- {f}");
        }
        s
    };

    let ratios: Vec<f64> = results
        .values()
        .map(|x| x.wall_ns_per_particle / x.ns_per_particle)
        .filter(|r| !r.is_nan())
        .collect();
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(0.0, f64::max);
    let mid = if ratios.is_empty() {
        "–".to_owned()
    } else {
        format!("{:.2}", median(&ratios))
    };

    let values: Vec<(&str, String)> = vec![
        ("provenance", prov.markdown()),
        ("table_factor", TABLE_FACTOR.to_string()),
        ("max_n_table_100", MAX_N_TABLE_100.to_string()),
        ("min_runs", repeat.min_runs.to_string()),
        ("min_time", format!("{}", repeat.min_time.as_secs_f64())),
        ("max_runs", repeat.max_runs.to_string()),
        ("peers", peers),
        ("spacing", crate::SPACING.to_string()),
        ("jitter", crate::JITTER.to_string()),
        ("table_scenes", scene_table),
        ("table_pairs", ns(Metric::Pairs, &cpu)),
        ("ratio_pairs", ratio(Metric::Pairs, &cpu)),
        ("runs_pairs", runs(Metric::Pairs)),
        ("table_csr", ns(Metric::Csr, &cpu)),
        ("ratio_csr", ratio(Metric::Csr, &cpu)),
        ("runs_csr", runs(Metric::Csr)),
        ("table_csr_spatial", ns(Metric::CsrSpatial, &cpu)),
        ("runs_csr_spatial", runs(Metric::CsrSpatial)),
        ("step", crate::STEP.to_string()),
        ("tolerance", tolerance_text),
        ("check_result", check_result),
        ("wall_lo", format!("{lo:.2}")),
        ("wall_hi", format!("{hi:.2}")),
        ("wall_mid", mid),
        ("wall_pairs", ns(Metric::Pairs, &wall)),
        ("wall_ratio_pairs", ratio(Metric::Pairs, &wall)),
        ("wall_csr", ns(Metric::Csr, &wall)),
        ("wall_ratio_csr", ratio(Metric::Csr, &wall)),
    ];
    let values: Vec<(&str, &str)> = values.iter().map(|(k, v)| (*k, v.as_str())).collect();
    fill(TEMPLATE, &values)
}

fn header(cols: &[(usize, Order)]) -> String {
    let h: Vec<String> = cols.iter().map(|(n, o)| format!("N={n} {o}")).collect();
    format!(
        "| implementation | {} |\n|---|{}",
        h.join(" | "),
        "---:|".repeat(cols.len())
    )
}

/// One row per implementation, one column per `(N, order)`.
fn ns_table(
    s: &mut String,
    metric: Metric,
    cols: &[(usize, Order)],
    results: &BTreeMap<Key, Sample>,
    failures: &BTreeMap<Key, CheckError>,
    value: &dyn Fn(&Sample) -> f64,
) {
    let _ = writeln!(s, "{}", header(cols));
    for imp in Imp::ALL {
        let cells: Vec<String> = cols
            .iter()
            .map(|&(n, o)| {
                let key = (metric, imp, n, o);
                match (results.get(&key), failures.get(&key)) {
                    (Some(x), _) => fmt_ns(value(x)),
                    (None, Some(CheckError::Refused(_))) => "*refused*".to_owned(),
                    (None, Some(CheckError::Mismatch(_))) => "*wrong*".to_owned(),
                    (None, None) => "–".to_owned(),
                }
            })
            .collect();
        if cells.iter().all(|c| c == "–") {
            continue;
        }
        let _ = writeln!(s, "| {imp} | {} |", cells.join(" | "));
    }
}

/// Best peer per column, then best peer time / spatium time per spatium row.
fn ratio_table(
    s: &mut String,
    metric: Metric,
    cols: &[(usize, Order)],
    results: &BTreeMap<Key, Sample>,
    value: &dyn Fn(&Sample) -> f64,
) {
    let _ = writeln!(s, "{}", header(cols));
    let best: Vec<Option<(Imp, f64)>> = cols
        .iter()
        .map(|&(n, o)| best_peer(results, metric, n, o, value))
        .collect();
    let _ = writeln!(
        s,
        "| *best peer* | {} |",
        best.iter()
            .map(|b| b.map_or_else(|| "–".to_owned(), |(i, _)| i.name().to_owned()))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    for imp in Imp::ALL.into_iter().filter(|i| i.is_spatium_hash()) {
        let cells: Vec<String> = cols
            .iter()
            .zip(&best)
            .map(
                |(&(n, o), b)| match (results.get(&(metric, imp, n, o)), b) {
                    (Some(x), Some((_, bt))) => format!("{:.2}", bt / value(x)),
                    _ => "–".to_owned(),
                },
            )
            .collect();
        if cells.iter().all(|c| c == "–") {
            continue;
        }
        let _ = writeln!(s, "| {imp} | {} |", cells.join(" | "));
    }
}

/// One panel per (metric, order): CPU ns per particle against N, log-log.
fn plot(
    path: &Path,
    scenes: &[SceneInfo],
    results: &BTreeMap<Key, Sample>,
) -> Result<(), Box<dyn core::error::Error>> {
    let panels: Vec<Panel> = Metric::ALL
        .iter()
        .flat_map(|&m| Order::ALL.map(move |o| (m, o)))
        .map(|(metric, order)| {
            let series = Imp::ALL
                .into_iter()
                .map(|imp| Series {
                    name: imp.name().to_owned(),
                    points: scenes
                        .iter()
                        .filter_map(|sc| {
                            results
                                .get(&(metric, imp, sc.n, order))
                                .map(|s| (sc.n as f64, s.ns_per_particle))
                        })
                        .collect(),
                    bold: !imp.is_peer(),
                })
                .filter(|s| !s.points.is_empty())
                .collect();
            Panel::log_log(
                format!("{metric}, {order}"),
                "N (particles)",
                "ns per particle",
                series,
            )
        })
        .collect();
    plot::svg(
        path,
        (1200, 900),
        Some("spatium vs peers: fluid block, 1 thread (CPU ns per particle, log-log)"),
        2,
        &panels,
    )
}
