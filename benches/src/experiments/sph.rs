//! The SPH step report: steps per second of [`Fluid::step`] for 32 768
//! particles (the seed's GPU particle count) on one CPU core, with every
//! neighbour search, against splashsurf_lib's, and the split of a step's
//! time by stage. Writes `benches/SPH_REPORT.md`.
//!
//! ```text
//! cargo run --release -p spatium-benches --bin report -- sph [--quick] [--n N] [--out DIR]
//! ```
//!
//! * The scene is [`SphScene`]: the seed preset's dam break after its
//!   warm-up. Every step measured starts from that snapshot: each structure
//!   has its own fluid, put back to the snapshot (untimed) before every
//!   step, so every structure times the same step, again and again. A few
//!   untimed steps first (first use of the buffers), then the timed ones;
//!   the structures take turns step by step (round robin, the first of each
//!   round rotating), so load from other work on the machine falls on all
//!   of them alike.
//! * Each timed step records wall-clock time and the thread's CPU time
//!   (`spatium_benches::measure::time`), and the stages through a
//!   [`StageClock`]. Reported: `measure::median`s with the measured min–max.
//! * Every structure's pair count at the snapshot is compared with
//!   `CellSortedHash`'s, and the positions after its last step with
//!   `CellSortedHash`'s (the same step, pairs summed in another order, so
//!   close but not bit-identical).
//!
//! `--quick`: fewer steps (a smoke run). `--n N`: the block's particle count
//! (rounded to the nearest cube; default 32 768). `--out DIR`: where the
//! report goes (default: this crate's directory).
//!
//! [`Fluid::step`]: spatium::sph::Fluid::step

use core::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::TABLE_FACTOR;
use crate::measure::{median_opt, time};
use crate::provenance::{Provenance, locked_version};
use crate::sph_scene::{
    FlowStats, PAIRS_PER_PARTICLE, SPH_SIDE, SPH_SMALL_SIDE, SPH_SPACING, Search, SphScene,
    StageClock, Structure, VecFluid, WARM_STEPS,
};
use crate::template::fill_values;
use spatium::sph::{EquationOfState, Integrator, Stage};
use spatium::{BoundingBox, Error, Point, Vec3};

/// The prose of the report.
const TEMPLATE: &str = include_str!("../../templates/sph_report.md");
/// The prose of the small scene's section.
const SMALL_TEMPLATE: &str = include_str!("../../templates/sph_report_small.md");

/// Command-line options.
#[derive(Debug)]
struct Args {
    quick: bool,
    side: usize,
    /// The `--n` asked for, if it was not a cube.
    asked_n: Option<usize>,
    out: PathBuf,
}

fn parse_args(raw: &[String]) -> Result<Args, String> {
    let opts = super::check_args(raw, &["--quick"], &["--n", "--out"])?;
    let mut args = Args {
        quick: opts.flag("--quick"),
        side: SPH_SIDE,
        asked_n: None,
        out: opts.out_dir(),
    };
    if let Some(n) = opts.number("--n")? {
        if !(8..=1_000_000).contains(&n) {
            return Err(format!("--n {n}: between 8 and 1000000"));
        }
        let side = (n as f64).cbrt().round() as usize;
        if side.pow(3) != n {
            args.asked_n = Some(n);
        }
        args.side = side;
    }
    Ok(args)
}

/// Steps per structure: untimed warm-up (first use of the buffers), then
/// timed.
#[derive(Clone, Copy, Debug)]
struct Plan {
    warm: usize,
    timed: usize,
}

const FULL: Plan = Plan { warm: 3, timed: 40 };
const QUICK: Plan = Plan { warm: 1, timed: 5 };

/// One structure's measurements on one scene.
#[derive(Debug)]
struct Row {
    structure: Structure,
    /// Pairs at the snapshot.
    pairs: Result<u64, Error>,
    /// Wall-clock ms of each timed step.
    wall_ms: Vec<f64>,
    /// Thread CPU ms of each timed step.
    cpu_ms: Vec<f64>,
    /// Stage times summed over the timed steps.
    stages: StageClock,
    /// The first error a step returned (the structure refused the scene).
    error: Option<Error>,
    /// The flow after the last step (one step from the snapshot).
    flow: Option<FlowStats>,
    /// Largest distance of a particle from its position in the
    /// `spatium-sorted` run after the last step, in spacings.
    deviation: Option<f32>,
}

impl Row {
    fn ok(&self) -> bool {
        self.error.is_none() && !self.wall_ms.is_empty()
    }
    fn wall(&self) -> Stats {
        Stats::of(&self.wall_ms)
    }
    fn cpu(&self) -> Stats {
        Stats::of(&self.cpu_ms)
    }
}

/// Median, min and max of a sample.
#[derive(Clone, Copy, Debug)]
struct Stats {
    median: f64,
    min: f64,
    max: f64,
}

impl Stats {
    /// NaN throughout for an empty sample (a structure that failed).
    fn of(v: &[f64]) -> Self {
        Self {
            median: median_opt(v).unwrap_or(f64::NAN),
            min: v.iter().copied().reduce(f64::min).unwrap_or(f64::NAN),
            max: v.iter().copied().reduce(f64::max).unwrap_or(f64::NAN),
        }
    }
}

/// A structure under measurement.
struct Subject {
    search: Search,
    fluid: VecFluid,
    row: Row,
}

/// Measures every structure measured at the scene's size, round robin,
/// every step from the snapshot.
fn measure(scene: &SphScene, plan: Plan) -> Vec<Row> {
    let n = scene.n();
    let h = scene.params.h;
    let mut subjects: Vec<Subject> = Structure::ALL
        .iter()
        .filter(|s| s.measured(n))
        .map(|&s| {
            let mut search = Search::new(s, n);
            let pairs = search.pairs(&scene.positions, h);
            Subject {
                search,
                fluid: scene.fluid().expect("the snapshot fits its own size"),
                row: Row {
                    structure: s,
                    pairs,
                    wall_ms: Vec::new(),
                    cpu_ms: Vec::new(),
                    stages: StageClock::default(),
                    error: None,
                    flow: None,
                    deviation: None,
                },
            }
        })
        .collect();
    for s in &mut subjects {
        if let Err(e) = s.row.pairs {
            s.row.error = Some(e);
            continue;
        }
        for _ in 0..plan.warm {
            scene
                .restore(&mut s.fluid)
                .expect("the snapshot fits its own size");
            if let Err(e) = s.search.step(&mut s.fluid, &mut ()) {
                s.row.error = Some(e);
                break;
            }
        }
    }
    let k = subjects.len();
    for round in 0..plan.timed {
        for j in 0..k {
            let s = &mut subjects[(j + round) % k];
            if s.row.error.is_some() {
                continue;
            }
            scene
                .restore(&mut s.fluid)
                .expect("the snapshot fits its own size");
            let mut clock = StageClock::default();
            let (r, t) = time(|| s.search.step(&mut s.fluid, &mut clock));
            match r {
                Ok(()) => {
                    s.row.wall_ms.push(t.wall_ms());
                    s.row.cpu_ms.push(t.cpu_ms());
                    for (a, b) in s.row.stages.ns.iter_mut().zip(clock.ns) {
                        *a += b;
                    }
                }
                Err(e) => s.row.error = Some(e),
            }
        }
        eprint!("\r  N={n}: step {}/{}", round + 1, plan.timed);
    }
    eprintln!();
    let reference: Option<Vec<Vec3>> = subjects
        .iter()
        .find(|s| s.row.structure == Structure::Sorted && s.row.ok())
        .map(|s| s.fluid.positions().to_vec());
    subjects
        .into_iter()
        .map(|mut s| {
            if s.row.ok() {
                s.row.flow = Some(FlowStats::of(&s.fluid));
                s.row.deviation = reference.as_ref().map(|r| {
                    r.iter()
                        .zip(s.fluid.positions())
                        .map(|(a, b)| a.distance_squared(*b).sqrt())
                        .fold(0.0f32, f32::max)
                        / SPH_SPACING
                });
            }
            s.row
        })
        .collect()
}

// ----------------------------------------------------------------- provenance

// ----------------------------------------------------------------- markdown

fn fmt_ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn fmt_rate(ms: f64) -> String {
    let r = 1e3 / ms;
    if r >= 100.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// The peer's row, if it ran.
fn peer(rows: &[Row]) -> Option<&Row> {
    rows.iter().find(|r| r.structure.is_peer() && r.ok())
}

/// The throughput table: steps/s, ms/step with min–max, wall and CPU, and
/// the ratio to the peer.
fn speed_table(md: &mut String, rows: &[Row]) {
    let peer = peer(rows);
    md.push_str(
        "| structure | steps/s (wall) | wall ms/step, median [min–max] | steps/s (CPU) | \
         CPU ms/step, median [min–max] | vs splashsurf (wall) | vs splashsurf (CPU) | steps |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let name = if r.structure.is_peer() {
            format!("*{}* (peer)", r.structure)
        } else {
            format!("`{}`", r.structure)
        };
        if let Some(e) = r.error {
            let _ = writeln!(md, "| {name} | refused: `{e:?}` | – | – | – | – | – | – |");
            continue;
        }
        let (w, c) = (r.wall(), r.cpu());
        let ratio = |p: f64, x: f64| format!("{:.2}", p / x);
        let (rw, rc) = match peer {
            Some(p) => (
                ratio(p.wall().median, w.median),
                ratio(p.cpu().median, c.median),
            ),
            None => ("–".into(), "–".into()),
        };
        let _ = writeln!(
            md,
            "| {name} | **{}** | {} [{}–{}] | {} | {} [{}–{}] | {rw} | {rc} | {} |",
            fmt_rate(w.median),
            fmt_ms(w.median),
            fmt_ms(w.min),
            fmt_ms(w.max),
            fmt_rate(c.median),
            fmt_ms(c.median),
            fmt_ms(c.min),
            fmt_ms(c.max),
            r.wall_ms.len(),
        );
    }
}

/// The split of a step's wall-clock time by stage.
fn stage_table(md: &mut String, rows: &[Row]) {
    md.push_str("| structure |");
    for s in Stage::ALL {
        let _ = write!(md, " {} |", s.name());
    }
    md.push_str(" outside stages | mean step |\n|---|");
    for _ in 0..Stage::ALL.len() + 2 {
        md.push_str("---:|");
    }
    md.push('\n');
    for r in rows.iter().filter(|r| r.ok()) {
        let steps = r.wall_ms.len() as f64;
        let mean_step: f64 = r.wall_ms.iter().sum::<f64>() / steps;
        let stage_ms: Vec<f64> = r
            .stages
            .ns
            .iter()
            .map(|&x| x as f64 / 1e6 / steps)
            .collect();
        let outside = mean_step - stage_ms.iter().sum::<f64>();
        let _ = write!(md, "| `{}` |", r.structure);
        for ms in stage_ms.iter().chain([&outside]) {
            let _ = write!(md, " {} ({:.1} %) |", fmt_ms(*ms), 100.0 * ms / mean_step);
        }
        let _ = writeln!(md, " {} |", fmt_ms(mean_step));
    }
}

/// Mean wall ms per step of `r` in `stages` (indices into [`Stage::ALL`]),
/// and the mean step.
fn stage_share(r: &Row, stages: &[Stage]) -> (f64, f64) {
    let steps = r.wall_ms.len() as f64;
    let mean_step = r.wall_ms.iter().sum::<f64>() / steps;
    let ms: f64 = stages
        .iter()
        .map(|&s| r.stages.ns[s.index()] as f64 / 1e6 / steps)
        .sum();
    (ms, mean_step)
}

/// A paragraph on where the time goes, from the measured rows.
fn findings(md: &mut String, rows: &[Row]) {
    let find = |s: Structure| rows.iter().find(|r| r.structure == s && r.ok());
    let (Some(sorted), Some(splash)) = (find(Structure::Sorted), find(Structure::Splashsurf))
    else {
        return;
    };
    let pct = |r: &Row, stages: &[Stage]| {
        let (ms, step) = stage_share(r, stages);
        100.0 * ms / step
    };
    let walks = [Stage::Density, Stage::Normals, Stage::Forces];
    let build = [Stage::NeighborSearch];
    let _ = write!(
        md,
        "\n**Where the time goes.** With `spatium-sorted`, the stages that walk the pairs \
         (density, normals, forces: three `for_each_pair` per evaluation, six per step) take \
         {:.0} % of the step and the two builds {:.0} %: every walk searches the grid again. \
         With splashsurf, the builds take {:.0} % \
         and the walks {:.0} %: it finds every neighbour list once per build (slowly: a hash map \
         of cells) and the solver then walks flat lists.",
        pct(sorted, &walks),
        pct(sorted, &build),
        pct(splash, &build),
        pct(splash, &walks),
    );
    if let Some(pairs) = find(Structure::SortedCached) {
        let _ = write!(
            md,
            " Doing both, the grid search once per build and the walks over the flat pair list \
             of `spatium::PairCache` (`spatium-sorted+cache`), runs the step {:.2}× as fast as \
             `spatium-sorted` ({} steps/s, {:.2}× splashsurf's rate).",
            sorted.wall().median / pairs.wall().median,
            fmt_rate(pairs.wall().median),
            splash.wall().median / pairs.wall().median,
        );
    }
    md.push('\n');
}

/// The sanity checks: pairs at the snapshot and the flow after the run.
fn check_table(md: &mut String, rows: &[Row]) {
    let reference = rows
        .iter()
        .find(|r| r.structure == Structure::Sorted)
        .and_then(|r| r.pairs.ok());
    md.push_str(
        "| structure | pairs at the snapshot | vs `spatium-sorted` | density min / mean / max \
         after one step | max speed (m/s) | max deviation from `spatium-sorted` (spacings) |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let pairs = match r.pairs {
            Ok(p) => p.to_string(),
            Err(e) => format!("`{e:?}`"),
        };
        let diff = match (r.pairs, reference) {
            (Ok(p), Some(q)) => format!("{:+}", p as i64 - q as i64),
            _ => "–".into(),
        };
        let flow = r.flow.map_or("–".into(), |f| {
            format!(
                "{:.3} / {:.3} / {:.3}",
                f.density_min, f.density_mean, f.density_max
            )
        });
        let speed = r.flow.map_or("–".into(), |f| format!("{:.2}", f.max_speed));
        let dev = r.deviation.map_or("–".into(), |d| format!("{d:.2e}"));
        let _ = writeln!(
            md,
            "| `{}` | {pairs} | {diff} | {flow} | {speed} | {dev} |",
            r.structure
        );
    }
}

/// `[a, b]×[c, d]×[e, f]` with whole numbers.
fn span(lo: Vec3, hi: Vec3) -> String {
    format!(
        "[{:.0}, {:.0}]×[{:.0}, {:.0}]×[{:.0}, {:.0}]",
        lo.x, hi.x, lo.y, hi.y, lo.z, hi.z
    )
}

/// The template values of the scene and structures sections.
fn scene_values(scene: &SphScene) -> Vec<(&'static str, String)> {
    let p = &scene.params;
    let eos = match p.eos {
        EquationOfState::Tait => "Tait (exponent 7)",
        EquationOfState::IdealGas => "ideal gas",
    };
    let integrator = match p.integrator {
        Integrator::Leapfrog => "leapfrog (two force evaluations per step)",
        Integrator::Euler => "explicit Euler",
    };
    let f = scene.stats;
    let n = scene.n();
    vec![
        ("side", scene.side.to_string()),
        ("block", span(scene.block.min(), scene.block.max())),
        ("domain", span(scene.domain.min(), scene.domain.max())),
        ("spacing", SPH_SPACING.to_string()),
        ("warm_steps", WARM_STEPS.to_string()),
        ("h", p.h.to_string()),
        ("mass", format!("{:.4e}", p.mass)),
        ("rest_density", p.rest_density.to_string()),
        ("stiffness", p.stiffness.to_string()),
        ("eos", eos.to_owned()),
        ("viscosity", p.viscosity.to_string()),
        ("surface_tension", p.surface_tension.to_string()),
        ("gravity", (-p.gravity.coord(1)).to_string()),
        ("dt", p.dt.to_string()),
        ("integrator", integrator.to_owned()),
        ("damping", p.damping.to_string()),
        (
            "snapshot_density",
            format!(
                "{:.3} / {:.3} / {:.3}",
                f.density_min, f.density_mean, f.density_max
            ),
        ),
        ("snapshot_speed", format!("{:.2}", f.max_speed)),
        ("table_factor", TABLE_FACTOR.to_string()),
        (
            "table",
            spatium::table::table_len(n, TABLE_FACTOR).to_string(),
        ),
        ("pairs_per_particle", PAIRS_PER_PARTICLE.to_string()),
        ("splashsurf_version", locked_version("splashsurf_lib")),
    ]
}

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
    let plan = if args.quick { QUICK } else { FULL };

    eprintln!(
        "scene: {}³ particles, {WARM_STEPS} warm-up steps",
        args.side
    );
    let scene = match SphScene::new(args.side) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("the scene failed: {e:?}");
            return ExitCode::FAILURE;
        }
    };
    let rows = measure(&scene, plan);
    let small = (args.side > SPH_SMALL_SIDE).then(|| {
        eprintln!("small scene: {SPH_SMALL_SIDE}³ particles");
        let s = SphScene::new(SPH_SMALL_SIDE).expect("the small scene runs");
        let r = measure(&s, plan);
        (s, r)
    });
    prov.finish();
    let elapsed = prov.elapsed.unwrap_or_default().as_secs_f64();

    let n = scene.n();
    let run_note = format!(
        "{}{}",
        if args.quick {
            " **`--quick` run: few steps, a smoke test, not a measurement.**"
        } else {
            ""
        },
        match args.asked_n {
            Some(a) => format!(" (`--n {a}` rounded to the nearest cube, {n}.)"),
            None => String::new(),
        }
    );
    let mut headline = String::new();
    if let Some(p) = peer(&rows) {
        let pw = p.wall().median;
        let best = rows
            .iter()
            .filter(|r| r.ok() && !r.structure.is_peer())
            .min_by(|a, b| a.wall().median.total_cmp(&b.wall().median));
        if let Some(b) = best {
            let bw = b.wall().median;
            let _ = writeln!(
                headline,
                "**Headline.** N = {n}, one core: `{}` runs **{} steps/s** (median {} ms/step \
                 wall, {} ms CPU; fastest step {} ms); with splashsurf's search the same step \
                 runs {} steps/s ({} ms): **{:.2}×** the peer's rate.",
                b.structure,
                fmt_rate(bw),
                fmt_ms(bw),
                fmt_ms(b.cpu().median),
                fmt_ms(b.wall().min),
                fmt_rate(pw),
                fmt_ms(pw),
                pw / bw,
            );
        }
    }
    let tables = |rows: &[Row]| {
        let (mut speed, mut stages, mut checks) = (String::new(), String::new(), String::new());
        speed_table(&mut speed, rows);
        stage_table(&mut stages, rows);
        check_table(&mut checks, rows);
        (speed, stages, checks)
    };
    let small_scene = match &small {
        None => Ok(String::new()),
        Some((s, r)) => {
            let (speed, stages, checks) = tables(r);
            fill_values(
                SMALL_TEMPLATE,
                &[
                    ("n", s.n().to_string()),
                    ("side", s.side.to_string()),
                    (
                        "block_side",
                        format!("{:.0}", s.side as f64 * f64::from(SPH_SPACING)),
                    ),
                    ("table_speed", speed),
                    ("table_stages", stages),
                    ("table_checks", checks),
                ],
            )
        }
    };
    let (speed, stages, checks) = tables(&rows);
    let mut findings_text = String::new();
    findings(&mut findings_text, &rows);
    let mut values = vec![
        ("n", n.to_string()),
        ("run_note", run_note),
        ("provenance", prov.markdown()),
        ("warm", plan.warm.to_string()),
        ("timed", plan.timed.to_string()),
        ("headline", headline),
        ("table_speed", speed),
        ("table_stages", stages),
        ("findings", findings_text),
        ("table_checks", checks),
    ];
    values.extend(scene_values(&scene));
    let md = match small_scene.and_then(|small| {
        values.push(("small_scene", small));
        fill_values(TEMPLATE, &values)
    }) {
        Ok(md) => md,
        Err(e) => {
            eprintln!("templates/sph_report*.md: {e}");
            return ExitCode::FAILURE;
        }
    };

    let path = args.out.join("SPH_REPORT.md");
    if let Err(e) = std::fs::write(&path, &md) {
        eprintln!("writing {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {} in {elapsed:.0} s", path.display());
    ExitCode::SUCCESS
}
