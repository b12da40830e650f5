//! Headless frames: a dam break stepped on the GPU, read back every few
//! steps and written as PNG images coloured by density.
//!
//! ```text
//! cargo run --release --bin gpu-frames -- [--particles 8000] [--frames 4] \
//!     [--steps-per-frame 20] [--size 480x360] [--sort counting|bitonic] [--out DIR]
//! ```

use std::path::PathBuf;

use spatium_gpu::render::render_density;
use spatium_gpu::{FluidConfig, Gpu, SortKind, scene};

struct Args {
    particles: usize,
    frames: u32,
    steps_per_frame: u32,
    width: u32,
    height: u32,
    sort: SortKind,
    out: PathBuf,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        particles: 8000,
        frames: 4,
        steps_per_frame: 20,
        width: 480,
        height: 360,
        sort: SortKind::Counting,
        out: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target/frames")),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<u32>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--particles" => a.particles = number(value()?)? as usize,
            "--frames" => a.frames = number(value()?)?,
            "--steps-per-frame" => a.steps_per_frame = number(value()?)?,
            "--size" => {
                let v = value()?;
                let (w, h) = v.split_once('x').ok_or("--size: WIDTHxHEIGHT")?;
                a.width = number(w.into())?;
                a.height = number(h.into())?;
            }
            "--sort" => {
                a.sort = match value()?.as_str() {
                    "counting" => SortKind::Counting,
                    "bitonic" => SortKind::Bitonic,
                    other => return Err(format!("--sort: unknown sort {other}")),
                }
            }
            "--out" => a.out = PathBuf::from(value()?),
            "--help" | "-h" => {
                return Err("usage: gpu-frames [--particles N] [--frames N] \
                            [--steps-per-frame N] [--size WxH] [--sort counting|bitonic] \
                            [--out DIR]"
                    .into());
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.particles == 0 || a.width == 0 || a.height == 0 {
        return Err("particles and image size must be positive".into());
    }
    Ok(a)
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("gpu-frames: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let gpu = Gpu::new()?;
    println!("adapter: {}", gpu.describe());
    let s = scene::dam_break(args.particles, 0.025, 0.004)?;
    let config = FluidConfig {
        sort: args.sort,
        ..FluidConfig::default()
    };
    let mut fluid = s.fluid(&gpu, config)?;
    std::fs::create_dir_all(&args.out)?;
    for frame in 0..args.frames {
        if frame > 0 {
            fluid.step(args.steps_per_frame)?;
        }
        let snap = fluid.read_back()?;
        let image = render_density(
            &snap.positions,
            &snap.states,
            fluid.params(),
            args.width,
            args.height,
        );
        let path = args.out.join(format!("frame_{frame:03}.png"));
        image.write_png(&path)?;
        println!(
            "{} (step {}, {} particles{})",
            path.display(),
            fluid.steps(),
            fluid.len(),
            if snap.diverged { ", DIVERGED" } else { "" }
        );
    }
    Ok(())
}
