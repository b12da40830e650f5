//! The comparison report: times every implementation on the fluid block and
//! writes `benches/REPORT.md` and `benches/report.svg`.
//!
//! ```text
//! cargo run --release -p spatium-benches --bin report [-- --quick] [--max-n N] [--out DIR]
//! ```
//!
//! Each measurement: one run that is both the warm-up and the correctness
//! check (see `spatium_benches::check`), then at least 5 timed runs (and at
//! least one second of them, at most 51 runs); the median of the thread's CPU
//! time is reported as nanoseconds per particle (the machine this runs on may
//! be shared, which stretches wall-clock time; wall-clock medians are in the
//! report's appendix). `--quick`: at least 3 runs and N ≤ 10⁵.

extern crate alloc;

use alloc::collections::BTreeMap;
use core::fmt::Write as _;
use core::time::Duration;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use cpu_time::ThreadTime;
use plotters::prelude::*;
use spatium::table::{SLOTS_PER_OBJECT, table_len};
use spatium::{NeighborSearch, Vec3};
use spatium_benches::check::tolerance;
use spatium_benches::provenance::{self, command_line, commit, logical_cpus};
use spatium_benches::{
    CheckError, Imp, MAX_N_TABLE_100, Metric, Order, Reference, Runner, SIDES, Scene, TABLE_FACTOR,
    checked_runner,
};
use spatium_host::make;

/// Command-line options.
#[derive(Debug)]
struct Args {
    quick: bool,
    max_n: usize,
    out: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        quick: false,
        max_n: usize::MAX,
        out: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => args.quick = true,
            "--max-n" => {
                let v = it.next().ok_or("--max-n needs a value")?;
                args.max_n = v.parse().map_err(|e| format!("--max-n {v}: {e}"))?;
            }
            "--out" => args.out = PathBuf::from(it.next().ok_or("--out needs a directory")?),
            "-h" | "--help" => {
                return Err("usage: report [--quick] [--max-n N] [--out DIR]".into());
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
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

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let started = Instant::now();
    let load = load_average();
    let prov = Provenance::now();
    let (min_runs, min_time) = if args.quick {
        (3, Duration::from_millis(300))
    } else {
        (5, Duration::from_secs(1))
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
                    let sample = time(&mut runner, &scene, metric, min_runs, min_time);
                    eprintln!(
                        "{metric:5} {order:12} N={n:7} {imp:22} {:9.1} ns/particle CPU, {:9.1} wall ({} runs)",
                        sample.ns_per_particle, sample.wall_ns_per_particle, sample.runs
                    );
                    results.insert((metric, imp, n, order), sample);
                }
            }
        }
    }
    let elapsed = started.elapsed();
    let load = format!("{load} at start, {} at end", load_average());
    let md = markdown(&args, &prov, &scenes, &results, &failures, &load, elapsed);
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
        elapsed.as_secs_f64()
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

/// The 1-minute load average.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// Median of at least `min_runs` timed runs and at least `min_time` of them
/// (at most 51 runs).
fn time(
    runner: &mut Runner,
    scene: &Scene,
    metric: Metric,
    min_runs: usize,
    min_time: Duration,
) -> Sample {
    let mut wall = Vec::new();
    let mut cpu = Vec::new();
    let start = Instant::now();
    while wall.len() < min_runs || (start.elapsed() < min_time && wall.len() < 51) {
        let c = ThreadTime::now();
        let t = Instant::now();
        let out = runner.run(scene, metric).expect("succeeded in the check");
        core::hint::black_box(out);
        wall.push(t.elapsed().as_nanos() as f64);
        cpu.push(c.elapsed().as_nanos() as f64);
    }
    let n = scene.n() as f64;
    Sample {
        wall_ns_per_particle: median(&mut wall) / n,
        ns_per_particle: median(&mut cpu) / n,
        runs: wall.len(),
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len();
    if m == 0 {
        f64::NAN
    } else if m % 2 == 1 {
        v[m / 2]
    } else {
        0.5 * (v[m / 2 - 1] + v[m / 2])
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

/// Where and when the measured code came from, taken when the run starts
/// (`cargo run` builds just before).
#[derive(Debug)]
struct Provenance {
    date: String,
    commit: String,
    rustc: String,
}

impl Provenance {
    fn now() -> Self {
        let date =
            command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_else(|| "?".into());
        // Only the measured code matters: core/ and host-tests/.
        let commit = commit(&["../core", "../host-tests"], "core/ or host-tests/");
        let rustc = command_line("rustc", &["--version"]).unwrap_or_else(|| "?".into());
        Self {
            date,
            commit,
            rustc,
        }
    }
}

fn cpu_model() -> String {
    format!(
        "{}, {} logical CPUs",
        provenance::cpu_model(),
        logical_cpus()
    )
}

/// `name version` of the peers, from the workspace's `Cargo.lock`.
fn peer_versions() -> Vec<(String, String)> {
    let lock_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock");
    let lock = std::fs::read_to_string(lock_path).unwrap_or_default();
    let mut out = Vec::new();
    for name in ["kiddo", "rstar", "splashsurf_lib", "criterion"] {
        let mut lines = lock.lines();
        let mut versions = Vec::new();
        while let Some(l) = lines.next() {
            if l == format!("name = \"{name}\"")
                && let Some(v) = lines.next().and_then(|v| v.strip_prefix("version = "))
            {
                versions.push(v.trim_matches('"').to_owned());
            }
        }
        // Several versions when another dependency links an older one
        // (splashsurf_lib links rstar 0.12): the newest is the one measured.
        versions.sort_by_key(|v| {
            v.split('.')
                .map(|x| x.parse::<u64>().unwrap_or(0))
                .collect::<Vec<_>>()
        });
        let text = match versions.split_last() {
            Some((newest, [])) => newest.clone(),
            Some((newest, older)) => {
                format!(
                    "{newest} (also {} linked by a dependency)",
                    older.join(", ")
                )
            }
            None => "?".to_owned(),
        };
        out.push((name.to_owned(), text));
    }
    out
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
    args: &Args,
    prov: &Provenance,
    scenes: &[SceneInfo],
    results: &BTreeMap<Key, Sample>,
    failures: &BTreeMap<Key, CheckError>,
    load: &str,
    elapsed: Duration,
) -> String {
    let mut s = String::new();
    let Provenance {
        date,
        commit,
        rustc,
    } = prov;
    let cols = columns(scenes);
    let _ = writeln!(s, "# spatium: neighbour search compared with peer crates\n");
    let _ = writeln!(
        s,
        "Written by `cargo run --release -p spatium-benches --bin report{}`; \
         do not edit by hand. Plot: [`report.svg`](report.svg).\n",
        if args.quick { " -- --quick" } else { "" }
    );
    let _ = writeln!(s, "| | |\n|---|---|");
    let _ = writeln!(s, "| machine | {} |", cpu_model());
    let _ = writeln!(s, "| load average (1 min) | {load} |");
    let _ = writeln!(s, "| date | {date} |");
    let _ = writeln!(s, "| commit | {commit} |");
    let _ = writeln!(s, "| compiler | {rustc} (release profile) |");
    let _ = writeln!(s, "| threads | 1 (see below) |");
    let _ = writeln!(
        s,
        "| table length | `spatium::table::table_len(n, {TABLE_FACTOR})` \
         (2 × N slots, rounded up to a power of two) for every spatium hash; \
         `spatium-sorted-100x` uses `table_len(n, SLOTS_PER_OBJECT)` (the seeds' 100 × N), \
         measured only for N ≤ {MAX_N_TABLE_100} |"
    );
    let _ = writeln!(
        s,
        "| timing | median of ≥ {} runs (and ≥ {} s of runs) after one warm-up run that \
         also checks the answer; cells are ns per particle (median / N) of the \
         thread's CPU time (wall-clock medians in the appendix) |",
        if args.quick { 3 } else { 5 },
        if args.quick { 0.3 } else { 1.0 }
    );
    let versions = peer_versions();
    let _ = writeln!(
        s,
        "| peers | {} |",
        versions
            .iter()
            .filter(|(n, _)| n != "criterion")
            .map(|(n, v)| format!("{n} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        s,
        "| run time | {:.0} s{} |\n",
        elapsed.as_secs_f64(),
        if args.quick { " (quick mode)" } else { "" }
    );

    let _ = writeln!(s, "## Scene\n");
    let _ = writeln!(
        s,
        "`scenarios::fluid_block::<Vec3>(side, {}, {}, seed)`: a jittered lattice, \
         radius = 2 × spacing. *cell-ordered*: the lattice order permuted by \
         `CellSortedHash::reorder` after one build (the particles of a cell \
         contiguous, cells in the hash's run order); \
         *shuffled*: a random permutation (`Rng::shuffle`). Same particles in both.\n",
        spatium_benches::SPACING,
        spatium_benches::JITTER
    );
    let _ = writeln!(
        s,
        "| N | side | pairs (d < r) | neighbours / particle | pairs at d = r | pairs within 10⁻⁶ r² of r² | cells | colliding cells, per table length |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---|");
    for sc in scenes {
        let tables = sc
            .tables
            .iter()
            .map(|(t, m)| format!("2^{}: {m}", t.trailing_zeros()))
            .collect::<Vec<_>>()
            .join("; ");
        let _ = writeln!(
            s,
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
    let _ = writeln!(
        s,
        "\nA *colliding* cell shares its table slot with another occupied cell \
         (`CellSortedHash::colliding_cells`); it costs a comparison per lookup.\n"
    );

    for metric in Metric::ALL {
        let _ = writeln!(
            s,
            "## {}: CPU ns per particle (lower is better)\n",
            match metric {
                Metric::Pairs => "pairs (build + count every pair once)",
                Metric::Csr => "csr (build + every particle's neighbour list)",
            }
        );
        ns_table(&mut s, metric, &cols, results, failures, |x| {
            x.ns_per_particle
        });
        let _ = writeln!(
            s,
            "\n**Ratio to best peer** (best peer time / spatium time; > 1 means spatium is faster):\n"
        );
        ratio_table(&mut s, metric, &cols, results, |x| x.ns_per_particle);
        let runs: Vec<usize> = results
            .iter()
            .filter(|(k, _)| k.0 == metric)
            .map(|(_, v)| v.runs)
            .collect();
        let _ = writeln!(
            s,
            "\n(Timed runs per cell: {} to {}.)\n",
            runs.iter().min().unwrap_or(&0),
            runs.iter().max().unwrap_or(&0)
        );
    }

    let _ = writeln!(s, "## What each row does\n");
    let _ = writeln!(
        s,
        "Every run starts from the positions and builds from scratch (except \
         `spatium-linked-update`); output buffers are allocated once and reused.\n\n\
         - `spatium-sorted`: `CellSortedHash::build`, then `for_each_pair` (pairs) or \
         `neighbor_lists` into preallocated CSR buffers sized once (csr).\n\
         - `spatium-sorted-100x`: the same with the seeds' 100 × N table.\n\
         - `spatium-bucket64`: `BucketHash<_, _, _, 64>::build` + `for_each_pair`.\n\
         - `spatium-linked`: `LinkedHash::build` + `for_each_pair`.\n\
         - `spatium-linked-update`: `LinkedHash::update` to positions moved by up to \
         {} × spacing per axis (alternating between the two position sets, so every \
         run relinks the particles that changed cell), then `for_each_pair`.\n\
         - `spatium-brute`: `BruteForceNeighbors` all pairs, N ≈ 10⁴ only.\n\
         - `kiddo`: `ImmutableKdTree::new_from_slice`, then per particle \
         `query(p).within::<SquaredEuclidean<f32>>(r²).unsorted().exclusive_boundaries().visit(..)`; \
         pairs counts `j > i`, csr pushes `j ≠ i` into `Vec<u32>` offsets/indices.\n\
         - `rstar`: `RTree::bulk_load` of `GeomWithData<[f32; 3], u32>` (building that Vec \
         is timed: `bulk_load` consumes it), then per particle \
         `locate_within_distance(p, r²)`; pairs counts `j > i`, csr as kiddo.\n\
         - `splashsurf`: pairs: `neighborhood_search::neighborhood_search_spatial_hashing` \
         (sequential; fills `Vec<Vec<usize>>`, reused), then counts `j > i`; csr: \
         `neighborhood_search_spatial_hashing_flat` (sequential; its `FlatNeighborhoodList` \
         CSR). Domain: the particles' AABB grown by r, computed in the timed run.\n",
        spatium_benches::STEP
    );
    let _ = writeln!(s, "## Threads\n");
    let _ = writeln!(
        s,
        "All measurements are single-threaded. Setting `RAYON_NUM_THREADS` from \
         inside the process needs `unsafe` (`std::env::set_var`) in edition 2024, so \
         instead only sequential code paths are called: kiddo is built without its \
         default `multi-threaded` feature (no rayon in it at all); splashsurf_lib is \
         called only through its sequential functions (it links rayon, but those \
         functions do not use it); rstar and spatium have no threads.\n"
    );
    let _ = writeln!(s, "## Correctness check and radius conventions\n");
    let _ = writeln!(
        s,
        "spatium, kiddo (`exclusive_boundaries`) and splashsurf_lib count `d² < r²`; \
         rstar's `locate_within_distance` counts `d² ≤ r²`. Before timing, every \
         implementation's answer is compared with spatium's `CellSortedHash` \
         (pairs, or 2 × pairs entries for csr): spatium's structures must match \
         exactly; a peer may differ by at most max(pairs within 10⁻⁶ r² of r², \
         0.01 % of the pairs).\n"
    );
    let tol: Vec<String> = scenes
        .iter()
        .map(|sc| {
            format!(
                "N={}: {}",
                sc.n,
                tolerance(sc.reference.pairs, sc.reference.band)
            )
        })
        .collect();
    let _ = writeln!(s, "Tolerance in pairs: {}.\n", tol.join(", "));
    if failures.is_empty() {
        let _ = writeln!(s, "Every implementation passed the check on every scene.\n");
    } else {
        let _ = writeln!(
            s,
            "**Not timed** (cells marked *refused* or *wrong* above); every other \
             check passed:\n"
        );
        for f in failures.values() {
            let _ = writeln!(s, "- {f}");
        }
        let _ = writeln!(s);
    }

    let mut ratios: Vec<f64> = results
        .values()
        .map(|x| x.wall_ns_per_particle / x.ns_per_particle)
        .collect();
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(0.0, f64::max);
    let mid = median(&mut ratios);
    let _ = writeln!(s, "## Appendix: wall-clock time\n");
    let _ = writeln!(
        s,
        "The tables above use the thread's CPU time (`cpu-time` crate), because \
         this machine is shared with other work that deschedules the benchmark \
         thread and stretches wall-clock times. Wall / CPU time per cell ranges \
         from {lo:.2} to {hi:.2} (median {mid:.2}; 1.00 = the thread was never \
         descheduled). CPU time still includes slow-downs from sharing caches \
         and cores with that work. The wall-clock medians of the same runs:\n"
    );
    for metric in Metric::ALL {
        let _ = writeln!(s, "### {metric}: wall-clock ns per particle\n");
        ns_table(&mut s, metric, &cols, results, failures, |x| {
            x.wall_ns_per_particle
        });
        let _ = writeln!(s, "\nRatio to best peer, on wall-clock time:\n");
        ratio_table(&mut s, metric, &cols, results, |x| x.wall_ns_per_particle);
        let _ = writeln!(s);
    }
    s
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
    value: impl Fn(&Sample) -> f64,
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
    value: impl Fn(&Sample) -> f64 + Copy,
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

const COLORS: [RGBColor; 9] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
];

fn plot(
    path: &Path,
    scenes: &[SceneInfo],
    results: &BTreeMap<Key, Sample>,
) -> Result<(), Box<dyn core::error::Error>> {
    let root = SVGBackend::new(path, (1200, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        "spatium vs peers: fluid block, 1 thread (CPU ns per particle, log-log)",
        ("sans-serif", 22),
    )?;
    let (main, side) = root.split_horizontally(1010);
    let panels = main.split_evenly((2, 2));
    // One legend for all panels: colours are fixed per implementation.
    for (k, imp) in Imp::ALL.into_iter().enumerate() {
        let y = 60 + 22 * k as i32;
        let color = COLORS[k % COLORS.len()];
        side.draw(&PathElement::new(
            vec![(5, y), (30, y)],
            color.stroke_width(if imp.is_peer() { 1 } else { 2 }),
        ))?;
        side.draw(&Circle::new((17, y), 3, color.stroke_width(1)))?;
        side.draw(&Text::new(
            imp.name(),
            (36, y - 7),
            ("sans-serif", 13).into_font(),
        ))?;
    }
    let ns: Vec<usize> = scenes.iter().map(|s| s.n).collect();
    let (xmin, xmax) = match (ns.first(), ns.last()) {
        (Some(&a), Some(&b)) => (a as f64 / 1.5, b as f64 * 1.5),
        _ => return Ok(()),
    };
    let ys: Vec<f64> = results.values().map(|s| s.ns_per_particle).collect();
    let ymin = ys.iter().copied().fold(f64::INFINITY, f64::min) / 1.5;
    let ymax = ys.iter().copied().fold(0.0, f64::max) * 1.5;
    for (panel, (metric, order)) in panels.iter().zip(
        Metric::ALL
            .iter()
            .flat_map(|&m| Order::ALL.map(move |o| (m, o))),
    ) {
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{metric}, {order}"), ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((xmin..xmax).log_scale(), (ymin..ymax).log_scale())?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .x_desc("N (particles)")
            .y_desc("ns per particle")
            .x_label_formatter(&|x| format!("{x:.0e}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()?;
        for (k, imp) in Imp::ALL.into_iter().enumerate() {
            let pts: Vec<(f64, f64)> = ns
                .iter()
                .filter_map(|&n| {
                    results
                        .get(&(metric, imp, n, order))
                        .map(|s| (n as f64, s.ns_per_particle))
                })
                .collect();
            if pts.is_empty() {
                continue;
            }
            let color = COLORS[k % COLORS.len()];
            let width = if imp.is_peer() { 1 } else { 2 };
            chart.draw_series(
                LineSeries::new(pts, color.stroke_width(width)).point_size(if imp.is_peer() {
                    4
                } else {
                    3
                }),
            )?;
        }
    }
    root.present()?;
    Ok(())
}
