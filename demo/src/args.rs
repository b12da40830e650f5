//! Command-line flags: parsing, validation and the usage text.

use std::path::PathBuf;

/// The usage text printed by `--help` and after every flag error.
pub const USAGE: &str = "\
usage: spatium-demo [FLAGS]
  SPH fluid pouring from a pipe onto a field of static spheres in the unit box.
  --particles N      particles the pipe emits (fluid capacity; default 10000)
  --steps N          time steps (default 960)
  --dt SECONDS       time step, in (0, 0.01] (default 0.0025)
  --spacing L        particle spacing, in [1/512, 1/16] (default 0.015625 = 2^-6)
  --spheres N        static spheres, 0..=100000 (default 200)
  --structure S      neighbour search: sorted (default), bucketed, linked,
                     hierarchical, multilevel, brute
  --broadphase B     obstacle broad phase: hhg (default), kdtree, grid,
                     hierarchical, multilevel, brute
  --images K         PNG frames written over the run, 0..=10000 (default 8)
  --out DIR          output directory (default target/spatium-demo)
  --seed N           seed of the sphere placement (default 2009)
  --threads N        worker threads of the parallel step
                     (Fluid::par_step_lists: each particle gathers its own
                     forces, so the fluid is the same bit for bit for every N);
                     0 = all cores (default), 1 = the calling thread; 0..=1024
  --sort-every K     renumber the particles into the search's cell order every
                     K steps, so the passes read memory almost in order; 0 never
                     (default 50)
  --pair-cache K     run the serial pair-form step (Fluid::step) instead, on one
                     thread, with K neighbour pairs cached per particle
                     (spatium::PairCache: the search runs once per force
                     evaluation instead of three times), ignoring --threads;
                     0..=256; 0 (default) runs the parallel step
  --walls L          walls of L layers of boundary particles on the box's
                     floor and sides (spatium::sph::walls, no-slip, open
                     top) instead of the seed's clamp, 0..=8; 0 (default)
                     clamps (their density share and forces run on the
                     workers, their pressure update on one thread)
  -h, --help         print this text";

pub use spatium_host::runtime::{BroadKind, Named, SearchKind};

/// The kind named `value`, or a message naming the flag and listing the
/// names.
fn lookup_kind<T: Named>(flag: &str, value: &str) -> Result<T, String> {
    T::from_name(value).map_err(|e| format!("{flag}: {e}"))
}

/// A validated run configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Args {
    /// Particles the pipe emits in all (the fluid's capacity).
    pub particles: usize,
    /// Time steps.
    pub steps: usize,
    /// Time step, seconds.
    pub dt: f32,
    /// Particle spacing.
    pub spacing: f32,
    /// Static spheres.
    pub spheres: usize,
    /// Neighbour search.
    pub structure: SearchKind,
    /// Obstacle broad phase.
    pub broadphase: BroadKind,
    /// PNG frames to write.
    pub images: usize,
    /// Output directory.
    pub out: PathBuf,
    /// Seed of the sphere placement.
    pub seed: u64,
    /// Pair-cache slots per particle (0: no cache).
    pub pair_cache: usize,
    /// Steps between cell-order renumberings (0: never).
    pub sort_every: usize,
    /// Threads of the parallel step (0: all cores).
    pub threads: usize,
    /// Layers of boundary-particle walls (0: the seed's clamp).
    pub walls: u32,
}

impl Default for Args {
    fn default() -> Self {
        Self {
            particles: 10_000,
            steps: 960,
            dt: 0.0025,
            spacing: 1.0 / 64.0,
            spheres: 200,
            structure: SearchKind::Sorted,
            broadphase: BroadKind::Hhg,
            images: 8,
            out: PathBuf::from("target/spatium-demo"),
            seed: 2009,
            pair_cache: 0,
            sort_every: 50,
            threads: 0,
            walls: 0,
        }
    }
}

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Run the scene.
    Run(Args),
    /// Print the usage and exit successfully.
    Help,
}

/// Most particles accepted (the memory of a run grows by about 1 KiB each).
const MAX_PARTICLES: usize = 5_000_000;
/// Most steps accepted.
const MAX_STEPS: usize = 10_000_000;
/// Most spheres accepted.
const MAX_SPHERES: usize = 100_000;
/// Most frames accepted.
const MAX_IMAGES: usize = 10_000;
/// Most threads accepted.
const MAX_THREADS: usize = 1024;
/// Largest time step accepted.
const MAX_DT: f32 = 0.01;
/// Smallest particle spacing accepted.
const MIN_SPACING: f32 = 1.0 / 512.0;
/// Largest particle spacing accepted.
const MAX_SPACING: f32 = 1.0 / 16.0;

/// An integer flag value in `lo..=hi`.
fn integer<T>(flag: &str, value: &str, lo: T, hi: T) -> Result<T, String>
where
    T: core::str::FromStr + PartialOrd + core::fmt::Display + Copy,
{
    let v: T = value
        .parse()
        .map_err(|_| format!("{flag}: {value:?} is not a whole number"))?;
    if v < lo || v > hi {
        return Err(format!("{flag}: {v} is outside {lo}..={hi}"));
    }
    Ok(v)
}

/// A finite real flag value in `lo..=hi` (above `lo` if `open_low`).
fn real(flag: &str, value: &str, lo: f32, hi: f32, open_low: bool) -> Result<f32, String> {
    let v: f32 = value
        .parse()
        .map_err(|_| format!("{flag}: {value:?} is not a number"))?;
    let low_ok = if open_low { v > lo } else { v >= lo };
    if !(v.is_finite() && low_ok && v <= hi) {
        let open = if open_low { "(" } else { "[" };
        return Err(format!("{flag}: {value} is outside {open}{lo}, {hi}]"));
    }
    Ok(v)
}

/// Parses the flags (without the program name). `--flag value` and
/// `--flag=value` are both accepted; a later flag overrides an earlier one.
///
/// # Errors
/// A one-line message for an unknown flag, a missing value, or a value that
/// is not valid for its flag.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, String> {
    let mut a = Args::default();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(Command::Help);
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg, None),
        };
        let known = [
            "--particles",
            "--steps",
            "--dt",
            "--spacing",
            "--spheres",
            "--structure",
            "--broadphase",
            "--images",
            "--out",
            "--seed",
            "--pair-cache",
            "--sort-every",
            "--threads",
            "--walls",
        ];
        if !known.contains(&flag.as_str()) {
            return Err(format!("unknown flag {flag:?}"));
        }
        let value = match inline {
            Some(v) => v,
            None => it.next().ok_or_else(|| format!("{flag} needs a value"))?,
        };
        let f = flag.as_str();
        let v = value.as_str();
        match f {
            "--particles" => a.particles = integer(f, v, 1, MAX_PARTICLES)?,
            "--steps" => a.steps = integer(f, v, 1, MAX_STEPS)?,
            "--dt" => a.dt = real(f, v, 0.0, MAX_DT, true)?,
            "--spacing" => a.spacing = real(f, v, MIN_SPACING, MAX_SPACING, false)?,
            "--spheres" => a.spheres = integer(f, v, 0, MAX_SPHERES)?,
            "--structure" => a.structure = lookup_kind(f, v)?,
            "--broadphase" => a.broadphase = lookup_kind(f, v)?,
            "--images" => a.images = integer(f, v, 0, MAX_IMAGES)?,
            "--seed" => a.seed = integer(f, v, 0, u64::MAX)?,
            "--pair-cache" => a.pair_cache = integer(f, v, 0, 256)?,
            "--sort-every" => a.sort_every = integer(f, v, 0, MAX_STEPS)?,
            "--threads" => a.threads = integer(f, v, 0, MAX_THREADS)?,
            "--walls" => a.walls = integer(f, v, 0, 8)?,
            _ => {
                if v.is_empty() {
                    return Err(format!("{f} needs a non-empty value"));
                }
                a.out = PathBuf::from(v);
            }
        }
    }
    Ok(Command::Run(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Command, String> {
        parse(args.iter().map(|s| (*s).to_string()))
    }

    fn args(args: &[&str]) -> Args {
        match run(args) {
            Ok(Command::Run(a)) => a,
            other => panic!("expected a run, got {other:?}"),
        }
    }

    fn error(args: &[&str]) -> String {
        match run(args) {
            Err(e) => e,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn no_flags_give_the_defaults() {
        let a = args(&[]);
        assert_eq!(a, Args::default());
        assert_eq!(a.structure, SearchKind::Sorted);
        assert_eq!(a.broadphase, BroadKind::Hhg);
        assert_eq!(a.spacing, 1.0 / 64.0);
        assert!(a.dt <= 0.005);
        assert_eq!(a.out, PathBuf::from("target/spatium-demo"));
    }

    #[test]
    fn flags_set_their_fields() {
        let a = args(&[
            "--particles",
            "500",
            "--steps=7",
            "--dt",
            "0.001",
            "--spacing",
            "0.03125",
            "--spheres",
            "0",
            "--structure",
            "hierarchical",
            "--broadphase=kdtree",
            "--images",
            "0",
            "--out",
            "x/y",
            "--seed",
            "99",
            "--threads",
            "3",
            "--pair-cache=16",
        ]);
        assert_eq!(a.particles, 500);
        assert_eq!(a.steps, 7);
        assert_eq!(a.dt, 0.001);
        assert_eq!(a.spacing, 0.03125);
        assert_eq!(a.spheres, 0);
        assert_eq!(a.structure, SearchKind::Hierarchical);
        assert_eq!(a.broadphase, BroadKind::KdTree);
        assert_eq!(a.images, 0);
        assert_eq!(a.out, PathBuf::from("x/y"));
        assert_eq!(a.seed, 99);
        assert_eq!(a.threads, 3);
        assert_eq!(a.pair_cache, 16);
    }

    #[test]
    fn every_structure_name_parses_back() {
        for &(name, kind) in SearchKind::NAMES {
            assert_eq!(args(&["--structure", name]).structure, kind);
            assert_eq!(kind.name(), name);
        }
        for &(name, kind) in BroadKind::NAMES {
            assert_eq!(args(&["--broadphase", name]).broadphase, kind);
            assert_eq!(kind.name(), name);
        }
    }

    #[test]
    fn help_wins() {
        assert_eq!(run(&["--steps", "3", "--help"]), Ok(Command::Help));
        assert_eq!(run(&["-h"]), Ok(Command::Help));
    }

    #[test]
    fn bad_flags_are_one_line_errors() {
        let cases: [(&[&str], &str); 13] = [
            (&["--frobnicate"], "unknown flag \"--frobnicate\""),
            (&["extra"], "unknown flag \"extra\""),
            (&["--steps"], "--steps needs a value"),
            (
                &["--steps", "ten"],
                "--steps: \"ten\" is not a whole number",
            ),
            (
                &["--particles", "0"],
                "--particles: 0 is outside 1..=5000000",
            ),
            (&["--particles", "-3"], "is not a whole number"),
            (&["--dt", "0"], "--dt: 0 is outside (0, 0.01]"),
            (&["--dt", "NaN"], "is outside"),
            (&["--spacing", "1"], "--spacing: 1 is outside"),
            (
                &["--structure", "octree"],
                "--structure: unknown value \"octree\"",
            ),
            (&["--broadphase", "sorted"], "expected one of hhg, kdtree"),
            (&["--out="], "--out needs a non-empty value"),
            (
                &["--threads", "2000"],
                "--threads: 2000 is outside 0..=1024",
            ),
        ];
        for (argv, want) in cases {
            let e = error(argv);
            assert!(e.contains(want), "{argv:?}: {e:?} lacks {want:?}");
            assert!(!e.contains('\n'), "{argv:?}: {e:?} is not one line");
        }
    }
}
