//! spatium's main job on several processes: the pipe pouring onto a field
//! of spheres in the unit box (`spatium-demo`'s scene), stepped by
//! [`DistFluid`] on every rank of `mpirun -np N`. Rank 0 writes the same PNG
//! frames, per-stage timing table, CSV and SVG plot as the single-process
//! main job (its own stages; the other ranks' are in the per-rank table),
//! then a per-rank table: particles owned, ghosts received, halo bytes sent
//! per step, and the share of the step spent communicating.
//!
//! ```text
//! mpirun -np 4 target/release/examples/main_job --particles 20000 --steps 400
//! ```
//!
//! Flags: `--particles N` (10000), `--steps N` (960), `--spacing L`
//! (1/64), `--dt S` (0.0025), `--spheres N` (200), `--seed N` (2009),
//! `--images K` (8), `--threads T` workers per rank (1), `--out DIR`
//! (`target/spatium-mpi`), `--block W`: instead of the pipe, a block of
//! fluid `[0, W] × [0, 0.4] × [0, 0.4]` released at rest (a dam break with a
//! fixed particle count, for strong and weak scaling).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use spatium::Vec3;
use spatium_demo::render::{self, DensityScale};
use spatium_demo::scene;
use spatium_demo::timing::{self, StepTiming, Timer};
use spatium_host::par::HostExec;
use spatium_host::runtime::BroadKind;
use spatium_mpi::{Balance, DistFluid, Ranks, StepReport};

/// The run's flags.
struct Args {
    particles: usize,
    steps: usize,
    spacing: f32,
    dt: f32,
    spheres: usize,
    seed: u64,
    images: usize,
    threads: usize,
    out: PathBuf,
    /// `Some(w)`: instead of the pipe, a block of fluid `[0, w] × [0, 0.4]²`
    /// released at rest (a dam break; fixed particle count, for scaling).
    block: Option<f32>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        particles: 10_000,
        steps: 960,
        spacing: 1.0 / 64.0,
        dt: 0.0025,
        spheres: 200,
        seed: 2009,
        images: 8,
        threads: 1,
        out: PathBuf::from("target/spatium-mpi"),
        block: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag}: missing value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--particles" => a.particles = value.parse().map_err(|e| bad(&e))?,
            "--steps" => a.steps = value.parse().map_err(|e| bad(&e))?,
            "--spacing" => a.spacing = value.parse().map_err(|e| bad(&e))?,
            "--dt" => a.dt = value.parse().map_err(|e| bad(&e))?,
            "--spheres" => a.spheres = value.parse().map_err(|e| bad(&e))?,
            "--seed" => a.seed = value.parse().map_err(|e| bad(&e))?,
            "--images" => a.images = value.parse().map_err(|e| bad(&e))?,
            "--threads" => a.threads = value.parse().map_err(|e| bad(&e))?,
            "--out" => a.out = PathBuf::from(value),
            "--block" => a.block = Some(value.parse().map_err(|e| bad(&e))?),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if a.threads == 0 || a.steps == 0 {
        return Err("--threads and --steps must be at least 1".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let Some(universe) = mpi::initialize() else {
        eprintln!("MPI could not be initialised");
        return ExitCode::FAILURE;
    };
    let mut ranks = Ranks::new(universe.world());
    // Flags are read on every rank; a bad flag fails every rank alike.
    let args = parse();
    let args = match ranks.agree(args) {
        Ok(a) => a,
        Err(e) => {
            if ranks.rank() == 0 {
                eprintln!("error: {}", e.message);
            }
            return ExitCode::from(2);
        }
    };
    match run(&mut ranks, &args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if ranks.rank() == 0 {
                eprintln!("error: {e}");
            }
            ExitCode::FAILURE
        }
    }
}

/// Per-rank totals over the run, gathered for the table.
const FIELDS: usize = 6;

fn run(ranks: &mut Ranks, a: &Args) -> Result<(), String> {
    let wall = Instant::now();
    let root = ranks.rank() == 0;
    let params = ranks
        .agree(scene::params(a.spacing, a.dt))
        .map_err(|e| e.to_string())?;
    let mut solids = ranks
        .agree(scene::solids(a.spheres, a.seed, BroadKind::Hhg, &params))
        .map_err(|e| e.to_string())?;
    let mut pipe = ranks
        .agree(scene::pipe(a.spacing, a.particles))
        .map_err(|e| e.to_string())?;
    let exec = HostExec::new(a.threads);
    let mut fluid = DistFluid::new(ranks, params, Balance::default()).map_err(|e| e.to_string())?;
    if let Some(w) = a.block {
        let block = spatium::Aabb3::new(Vec3::ZERO, Vec3::new(w, 0.4, 0.4))
            .map_err(|e| format!("--block {w}: {e}"));
        let block = ranks.agree(block).map_err(|e| e.to_string())?;
        fluid
            .fill_block(ranks, block, a.spacing, Vec3::ZERO)
            .map_err(|e| e.to_string())?;
        fluid.rebalance(ranks).map_err(|e| e.to_string())?;
    }
    if root {
        std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
        println!(
            "spatium main job on {} ranks ({} thread{} each): {}, spacing {}, dt {}, {} spheres, {} steps",
            ranks.size(),
            a.threads,
            if a.threads == 1 { "" } else { "s" },
            match a.block {
                Some(w) => format!("a block of {} particles (width {w})", fluid.total()),
                None => format!("a pipe pouring up to {} particles", a.particles),
            },
            a.spacing,
            a.dt,
            a.spheres,
            a.steps
        );
    }
    let scale = DensityScale {
        lo: 0.4 * params.rest_density,
        hi: 1.2 * params.rest_density,
    };
    let frames = render::frame_steps(a.steps, a.images);
    let mut timer = Timer::default();
    let mut log: Vec<StepTiming> = Vec::with_capacity(a.steps);
    // ghosts, halo bytes, comm seconds, step seconds, migrations, steps
    let mut sums = [0.0f64; FIELDS];
    let mut last = StepReport::default();
    for step in 1..=a.steps {
        let t = Instant::now();
        if a.block.is_none() {
            fluid
                .emit(ranks, &mut pipe, a.dt)
                .map_err(|e| e.to_string())?;
        }
        let emitter = t.elapsed().as_secs_f64();
        let report = fluid
            .step(ranks, &exec, &mut solids, &mut timer)
            .map_err(|e| e.to_string())?;
        sums[0] += report.ghosts as f64;
        sums[1] += report.halo_bytes as f64;
        sums[2] += report.traffic.seconds;
        sums[3] += report.seconds;
        sums[4] += report.migrated as f64;
        sums[5] += 1.0;
        let mut row = StepTiming {
            particles: fluid.total() as usize,
            stages: timer.take(),
            emitter,
            sort: 0.0,
            image: 0.0,
        };
        if frames.contains(&step) {
            let t = Instant::now();
            let all = fluid.gather(ranks).map_err(|e| e.to_string())?;
            if root {
                let positions: Vec<Vec3> = all.iter().map(|q| q.x).collect();
                let densities: Vec<f32> = all.iter().map(|q| q.state.density).collect();
                let img = render::render(&render::Scene {
                    obstacles: solids.as_slice(),
                    positions: &positions,
                    densities: &densities,
                    particle_radius: params.particle_radius,
                    pipe: (scene::PIPE_ORIGIN, scene::PIPE_RADIUS),
                    scale,
                });
                img.write_png(&a.out.join(format!("frame-{step:05}.png")))?;
            }
            row.image = t.elapsed().as_secs_f64();
        }
        log.push(row);
        last = report;
    }
    let wall = wall.elapsed().as_secs_f64();
    let mut mine = sums.to_vec();
    mine.push(fluid.owned().len() as f64);
    let all = ranks.all_gather(&mine).map_err(|e| e.to_string())?;
    if root {
        println!("\nrank 0's stages (the single-process main job's table):");
        timing::print_table(&log, wall);
        let csv = a.out.join("timings.csv");
        timing::write_csv(&csv, &log).map_err(|e| format!("{}: {e}", csv.display()))?;
        let svg = a.out.join("timings.svg");
        let title = format!("spatium main job, rank 0 of {}", ranks.size());
        spatium_demo::plot::timings(&svg, &log, &title)?;
        println!(
            "\nper rank (means per step over {} steps; halo {:.4} m at the end):",
            a.steps, last.halo
        );
        println!(
            "| rank | particles at end | ghosts/step | halo KiB/step | migrations/step | step ms | comm ms | comm share |"
        );
        println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (r, v) in all.chunks_exact(FIELDS + 1).enumerate() {
            let steps = v[5].max(1.0);
            println!(
                "| {r} | {} | {:.0} | {:.1} | {:.1} | {:.2} | {:.2} | {:.1} % |",
                v[6],
                v[0] / steps,
                v[1] / steps / 1024.0,
                v[4] / steps,
                1e3 * v[3] / steps,
                1e3 * v[2] / steps,
                100.0 * v[2] / v[3].max(1e-12)
            );
        }
        println!(
            "\n{} particles on {} ranks, {} subdomain rebuilds, wall {:.2} s; frames, timings.csv and timings.svg in {}",
            fluid.total(),
            ranks.size(),
            fluid.subdomains().rebuilds(),
            wall,
            a.out.display()
        );
    }
    Ok(())
}
