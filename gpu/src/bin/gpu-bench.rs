//! Steps per second of the GPU solver at given sizes, per-stage GPU times
//! from timestamp queries, and the core's one-thread CPU solver at the same
//! size as the reference; written to a markdown report.
//!
//! ```text
//! cargo run --release --bin gpu-bench -- --sizes 32768,262144,1048576 \
//!     --steps 200 --sort counting|bitonic|both [--cpu-steps 3] [--report BENCH.md]
//! ```
//!
//! On a software adapter (lavapipe) only sizes up to 32 768 run, and the
//! figures are a smoke test, not performance.

use std::fmt::Write as _;
use std::time::Instant;

use spatium::Vec3;
use spatium::sph::{Fluid, ParticleState};
use spatium::table::table_len;
use spatium::uniform::{CellRecord, CellSortedHash, SortedParticle, TableSlot};
use spatium_gpu::scene::{self, Scene};
use spatium_gpu::{FluidConfig, Gpu, GpuError, SortKind, Stage};

const SPACING: f32 = 1.0 / 64.0;
const DT: f32 = 0.0025;
const SOFTWARE_MAX: usize = 32_768;

struct Args {
    sizes: Vec<usize>,
    steps: u32,
    sorts: Vec<SortKind>,
    cpu_steps: u32,
    report: String,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        sizes: vec![32_768, 262_144, 1_048_576],
        steps: 200,
        sorts: vec![SortKind::Counting, SortKind::Bitonic],
        cpu_steps: 3,
        report: concat!(env!("CARGO_MANIFEST_DIR"), "/BENCH.md").into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--sizes" => {
                args.sizes = value()?
                    .split(',')
                    .map(|s| s.trim().parse().map_err(|e| format!("--sizes: {e}")))
                    .collect::<Result<_, _>>()?;
            }
            "--steps" => args.steps = value()?.parse().map_err(|e| format!("--steps: {e}"))?,
            "--cpu-steps" => {
                args.cpu_steps = value()?.parse().map_err(|e| format!("--cpu-steps: {e}"))?;
            }
            "--sort" => {
                args.sorts = match value()?.as_str() {
                    "counting" => vec![SortKind::Counting],
                    "bitonic" => vec![SortKind::Bitonic],
                    "both" => vec![SortKind::Counting, SortKind::Bitonic],
                    other => return Err(format!("--sort: unknown sort {other}")),
                };
            }
            "--report" => args.report = value()?,
            "--help" | "-h" => {
                return Err("usage: gpu-bench [--sizes N,N,..] [--steps N] \
                            [--sort counting|bitonic|both] [--cpu-steps N] [--report PATH]"
                    .into());
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.steps == 0 || args.sizes.is_empty() || args.sizes.contains(&0) {
        return Err("--steps and every size must be positive".into());
    }
    Ok(args)
}

struct GpuRun {
    steps_per_s: f64,
    stages: Option<[f64; 7]>,
    gpu_ms: f64,
}

fn run_gpu(gpu: &Gpu, scene: &Scene, sort: SortKind, steps: u32) -> Result<GpuRun, GpuError> {
    let config = FluidConfig {
        sort,
        ..FluidConfig::default()
    };
    let mut fluid = scene.fluid(gpu, config)?;
    fluid.step(2)?;
    fluid.wait()?;
    let start = Instant::now();
    fluid.step(steps)?;
    fluid.wait()?;
    let steps_per_s = f64::from(steps) / start.elapsed().as_secs_f64();
    if fluid.read_back()?.diverged {
        eprintln!("warning: the {} run diverged", sort.name());
    }
    drop(fluid);
    let mut stages = None;
    let mut gpu_ms = 0.0;
    if gpu.has_timestamps() {
        let timed = FluidConfig {
            timing: true,
            ..config
        };
        let mut fluid = scene.fluid(gpu, timed)?;
        fluid.step(steps.min(20))?;
        let t = fluid.stage_times();
        stages = Some(Stage::ALL.map(|s| t.ms_per_step(s)));
        gpu_ms = t.total_ms_per_step();
    }
    Ok(GpuRun {
        steps_per_s,
        stages,
        gpu_ms,
    })
}

fn run_cpu(scene: &Scene, steps: u32) -> Result<f64, spatium::Error> {
    let n = scene.positions.len();
    let mut fluid = Fluid::new(
        vec![Vec3::ZERO; n],
        vec![ParticleState::EMPTY; n],
        scene.params,
    );
    fluid.extend(scene.positions.iter().copied(), Vec3::ZERO)?;
    let mut hash = CellSortedHash::<Vec3, _, _, _>::new(
        vec![TableSlot::EMPTY; table_len(n, 4)],
        vec![SortedParticle::EMPTY; n],
        vec![CellRecord::EMPTY; n],
    );
    fluid.step(&mut hash, &mut (), &mut ())?;
    let start = Instant::now();
    for _ in 0..steps {
        fluid.step(&mut hash, &mut (), &mut ())?;
    }
    Ok(f64::from(steps) / start.elapsed().as_secs_f64())
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("gpu-bench: {e}");
            std::process::exit(1);
        }
    };
    let software = gpu.is_software();
    let mut md = String::new();
    let banner = "LAVAPIPE / SOFTWARE ADAPTER: these figures are a SMOKE TEST, NOT PERFORMANCE \
                  (the GPU kernels run on the CPU)";
    println!("adapter: {}", gpu.describe());
    let _ = writeln!(md, "# spatium-gpu benchmark\n");
    let _ = writeln!(md, "* adapter: {}", gpu.adapter_info().name);
    let _ = writeln!(
        md,
        "* backend: {:?}, device type {:?}, driver {} {}",
        gpu.adapter_info().backend,
        gpu.adapter_info().device_type,
        gpu.adapter_info().driver,
        gpu.adapter_info().driver_info
    );
    let _ = writeln!(
        md,
        "* scene: dam break (`scene::dam_break`), spacing 1/64, h = 1/32, Δt = {DT}, seed \
         parameters, leapfrog (two evaluations per step); {} timed steps per run",
        args.steps
    );
    let _ = writeln!(
        md,
        "* CPU reference: `spatium::sph::Fluid::step` with a `CellSortedHash`, one thread, \
         {} steps",
        args.cpu_steps
    );
    if software {
        println!("\n!!!!!!!!!! {banner}\n");
        let _ = writeln!(md, "\n**{banner}.**");
    }
    if !gpu.has_timestamps() {
        println!("the adapter lacks TIMESTAMP_QUERY: wall-clock steps/s only, no per-stage times");
        let _ = writeln!(
            md,
            "\nThe adapter lacks `TIMESTAMP_QUERY`: wall-clock steps/s only."
        );
    }
    let _ = writeln!(
        md,
        "\n| particles | sort | GPU steps/s | CPU steps/s | GPU/CPU | GPU ms/step (timestamps) | {} |",
        Stage::ALL.map(|s| format!("{} ms", s.name())).join(" | ")
    );
    let _ = writeln!(md, "|{}", "---|".repeat(6 + Stage::ALL.len()));
    let mut failed = false;
    for &size in &args.sizes {
        if software && size > SOFTWARE_MAX {
            println!(
                "SKIPPED: {size} particles on a software adapter (smoke test only up to {SOFTWARE_MAX})"
            );
            let _ = writeln!(
                md,
                "| {size} | – | skipped: software adapter | | | | {} |",
                vec![""; Stage::ALL.len()].join(" | ")
            );
            continue;
        }
        let scene = match scene::dam_break(size, SPACING, DT) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("scene of {size}: {e}");
                failed = true;
                continue;
            }
        };
        let cpu = run_cpu(&scene, args.cpu_steps).unwrap_or_else(|e| {
            eprintln!("CPU run of {size}: {e}");
            f64::NAN
        });
        for &sort in &args.sorts {
            match run_gpu(&gpu, &scene, sort, args.steps) {
                Ok(r) => {
                    let stages = r
                        .stages
                        .map(|s| s.map(|ms| format!("{ms:.3}")).join(" | "))
                        .unwrap_or_else(|| vec!["–"; Stage::ALL.len()].join(" | "));
                    println!(
                        "{size:>8} particles, {:>8} sort: GPU {:>9.1} steps/s, CPU {:>7.2} steps/s, ratio {:>6.1}×, GPU {:.3} ms/step by timestamps",
                        sort.name(),
                        r.steps_per_s,
                        cpu,
                        r.steps_per_s / cpu,
                        r.gpu_ms
                    );
                    if let Some(s) = r.stages {
                        let parts: Vec<String> = Stage::ALL
                            .iter()
                            .zip(s)
                            .map(|(st, ms)| format!("{} {ms:.3}", st.name()))
                            .collect();
                        println!("    per stage (ms/step): {}", parts.join(", "));
                    }
                    let _ = writeln!(
                        md,
                        "| {size} | {} | {:.1} | {:.2} | {:.1}× | {:.3} | {stages} |",
                        sort.name(),
                        r.steps_per_s,
                        cpu,
                        r.steps_per_s / cpu,
                        r.gpu_ms
                    );
                }
                Err(e) => {
                    eprintln!("GPU run of {size} ({}): {e}", sort.name());
                    failed = true;
                }
            }
        }
    }
    let _ = writeln!(
        md,
        "\nTarget on an H100: 1 048 576 particles ≥ 100 steps/s, 32 768 ≥ 2000 steps/s."
    );
    if software {
        println!("\n!!!!!!!!!! {banner}");
    }
    match std::fs::write(&args.report, md) {
        Ok(()) => println!("report: {}", args.report),
        Err(e) => {
            eprintln!("writing {}: {e}", args.report);
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
}
