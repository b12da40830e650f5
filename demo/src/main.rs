//! spatium's main job: an SPH fluid pouring from a pipe onto a field of
//! static spheres inside the unit box, on the CPU.
//!
//! Each step the pipe ([`Emitter`]) adds its due layers, then
//! [`Fluid::par_step_lists`] runs the seed paper's solver with the chosen neighbour
//! search on `--threads` workers ([`HostExec`]) and resolves the particles
//! against the spheres. With `--pair-cache K > 0` the serial pair-form
//! [`Fluid::step`] runs instead, with the pairs cached and the spheres found
//! through the chosen broad phase. A [`timing::Timer`] clocks every stage;
//! the run ends with a per-stage table, PNG frames coloured by density, and
//! the timings as CSV and as an SVG plot. Everything is seeded and the
//! parallel step's result does not depend on the number of threads, so two
//! runs with the same flags (any `--threads`) compute the same fluid bit for
//! bit.

mod args;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use spatium::sph::boundary::SHARED_OBSTACLES;
use spatium::sph::source::Emitter;
use spatium::sph::walls::{BoundaryParticles, BoundaryState, Slip, TankFaces, box_count};
use spatium::sph::{Fluid, GatherSlot, ParticleState, SphParams, StageTimer};
use spatium::{BoundingBox, Error, NeighborPair, NeighborSearch, PairCache, PeriodicBox, Vec3};
use spatium_host::make::{self, VecDense};

use args::Named;
use args::{Args, Command, USAGE};
use spatium_demo::render::DensityScale;
use spatium_demo::{plot, render, say, scene, timing, warn};
use spatium_host::par::HostExec;
use spatium_host::runtime::{AnySearch, SearchKind};

/// The fluid's neighbour search, chosen by flag.
type Search = AnySearch<Vec3>;
use spatium_demo::timing::{StepTiming, Timer};

/// Densities drawn pale and strong blue, as multiples of the rest density.
const COLOUR_RANGE: (f32, f32) = (0.4, 1.2);

fn main() -> ExitCode {
    let wall = Instant::now();
    match args::parse(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            say!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Command::Run(a)) => match run(&a, wall) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                warn!("error: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            warn!("error: {e}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The scene's solids: the spheres behind the chosen broad phase.
type Solids = scene::Solids;

/// The fluid over `Vec`s.
type VecFluid = Fluid<Vec3, Vec<Vec3>, Vec<ParticleState<Vec3>>>;

/// Neighbour-list slots per particle of the parallel step (a fluid at rest
/// with `h = 2·spacing` has about 26 neighbours per particle): room for the
/// lists about twice over and more, so that on several threads they are
/// written in one sweep (`NeighborSearch::par_neighbor_lists`); an
/// evaluation whose lists overflow the whole buffer gathers through the
/// search instead.
const LIST_ROOM: usize = 96;

/// How the fluid is stepped.
enum Stepper {
    /// [`Fluid::par_step_lists`] on an executor, with its workspace.
    Parallel {
        /// The executor (`--threads`).
        exec: HostExec,
        /// The neighbour search.
        search: Box<Search>,
        /// One gather slot per particle.
        work: Vec<GatherSlot<Vec3>>,
        /// The search's order, for renumbering.
        order: Vec<u32>,
        /// Neighbour-list offsets (one per particle, plus one).
        offsets: Vec<u32>,
        /// Neighbour lists ([`LIST_ROOM`] slots per particle).
        indices: Vec<u32>,
        /// Walls of boundary particles (`--walls`), or the seed's clamp.
        walls: Option<Box<Walls>>,
    },
    /// [`Fluid::step`] on the calling thread behind a pair cache.
    Serial {
        /// The search behind its cache.
        search: Box<PairCache<Search, Vec<NeighborPair>>>,
        /// Steps whose pairs overflowed the cache.
        uncached: usize,
        /// Walls of boundary particles (`--walls`), or the seed's clamp.
        walls: Option<Box<Walls>>,
    },
}

/// Boundary-particle walls over `Vec`s, with a dense grid over them (the
/// tank and its layers: a query far from every wall reads a few empty
/// rows; 18 % faster steps than a cell-sorted hash in the `sph-walls`
/// bench).
type Walls = BoundaryParticles<Vec3, Vec<Vec3>, Vec<BoundaryState<Vec3>>, VecDense<Vec3>>;

/// The walls `--walls` asks for: `layers` layers on the box's floor and
/// sides, no-slip, open top; their search sized for the solver's `h`.
fn walls(a: &Args, h: f32) -> Result<Option<Box<Walls>>, Error> {
    if a.walls == 0 {
        return Ok(None);
    }
    let faces = TankFaces::open_top(Slip::NoSlip);
    let n = box_count::<Vec3>(scene::domain(), a.spacing, a.walls, faces)?;
    let reach = Vec3::new(1.0, 1.0, 1.0) * (a.walls as f32 * a.spacing);
    let around = PeriodicBox::new(
        scene::domain().min() - reach,
        scene::domain().max() + reach,
        0,
    )?;
    let mut w = BoundaryParticles::new(
        vec![Vec3::ZERO; n],
        vec![BoundaryState::EMPTY; n],
        make::dense::<Vec3>(around, n, h)?,
    );
    w.sample_box(scene::domain(), a.spacing, a.walls, faces)?;
    Ok(Some(Box::new(w)))
}

impl Stepper {
    /// The stepper the flags ask for; `h` is the solver's (the walls'
    /// search is sized for it).
    fn new(a: &Args, h: f32) -> Result<Self, Error> {
        let search = Search::new(a.structure, a.particles);
        if a.pair_cache > 0 {
            let per = a.pair_cache;
            Ok(Self::Serial {
                search: Box::new(PairCache::new(
                    search,
                    vec![NeighborPair::EMPTY; per * a.particles],
                )),
                uncached: 0,
                walls: walls(a, h)?,
            })
        } else {
            Ok(Self::Parallel {
                exec: HostExec::new(a.threads),
                search: Box::new(search),
                work: vec![GatherSlot::EMPTY; a.particles],
                order: vec![0; a.particles],
                offsets: vec![0; a.particles + 1],
                indices: vec![0; LIST_ROOM * a.particles],
                walls: walls(a, h)?,
            })
        }
    }

    /// Threads the step runs on.
    fn threads(&self) -> usize {
        match self {
            Self::Parallel { exec, .. } => spatium::exec::Executor::workers(exec),
            Self::Serial { .. } => 1,
        }
    }

    /// The step's form and threads, for the report.
    fn describe(&self) -> String {
        let walls = match self {
            Self::Parallel { walls, .. } | Self::Serial { walls, .. } => walls
                .as_ref()
                .map(|w| format!("; walls of {} boundary particles", w.len()))
                .unwrap_or_default(),
        };
        let form = match self {
            Self::Parallel { exec, .. } => {
                let pool = match exec {
                    HostExec::Serial => "the calling thread",
                    HostExec::Threads(_) => "scoped threads",
                    _ => "a rayon pool",
                };
                let t = self.threads();
                format!(
                    "parallel gather step (Fluid::par_step_lists) on {t} thread{} ({pool})",
                    if t == 1 { "" } else { "s" }
                )
            }
            Self::Serial { .. } => {
                "serial pair step (Fluid::step) with a pair cache, 1 thread".to_string()
            }
        };
        form + &walls
    }

    /// Renumbers the particles into the search's cell order (the sorted
    /// hash's own order for the parallel step, whose next build then copies;
    /// Morton order of the cells otherwise). Particles the pipe added since
    /// the last build keep their place after the others.
    fn reorder(&mut self, fluid: &mut VecFluid, kind: SearchKind) -> Result<(), Error> {
        match self {
            Self::Parallel { search, order, .. }
                if kind == SearchKind::Sorted && search.len() <= fluid.len() =>
            {
                let (m, n) = (search.len(), fluid.len());
                order.resize(n, 0);
                search.spatial_order(&mut order[..m])?;
                for (k, o) in order[m..].iter_mut().enumerate() {
                    *o = (m + k) as u32;
                }
                fluid.renumber(order.iter().copied())
            }
            _ => fluid.sort_by_cell(),
        }
    }

    /// One step of `fluid` against `solids`.
    fn step<T: StageTimer>(
        &mut self,
        fluid: &mut VecFluid,
        solids: &mut Solids,
        timer: &mut T,
    ) -> Result<(), Error> {
        match self {
            Self::Parallel {
                exec,
                search,
                work,
                offsets,
                indices,
                walls,
                ..
            } => match walls {
                Some(w) => fluid.par_step_lists(
                    exec,
                    search.as_mut(),
                    &mut (&mut **w, &mut *solids),
                    timer,
                    work,
                    (offsets, indices),
                ),
                None => fluid.par_step_lists(
                    exec,
                    search.as_mut(),
                    solids,
                    timer,
                    work,
                    (offsets, indices),
                ),
            },
            Self::Serial {
                search,
                uncached,
                walls,
            } => {
                match walls {
                    Some(w) => fluid.step(search.as_mut(), &mut (&mut **w, &mut *solids), timer)?,
                    None => fluid.step(search.as_mut(), solids, timer)?,
                }
                if !search.is_cached() {
                    *uncached += 1;
                }
                Ok(())
            }
        }
    }
}

/// Builds the spheres and their broad phase.
fn solids(a: &Args, params: &SphParams<Vec3>) -> Result<Solids, String> {
    scene::solids(a.spheres, a.seed, a.broadphase, params)
}

/// The progress bar, redrawn in place on stderr at most ten times a
/// second; dropping it ends its line.
struct Progress {
    steps: usize,
    last: Option<f64>,
}

impl Progress {
    /// Bar width in characters.
    const WIDTH: usize = 30;

    /// A bar for a run of `steps` steps (nothing drawn yet).
    fn new(steps: usize) -> Self {
        Self { steps, last: None }
    }

    /// Redraws the bar after `step` if a tenth of a second has passed since
    /// the last redraw, or at the last step.
    fn update(&mut self, step: usize, particles: usize, seconds: f64) {
        if step != self.steps && self.last.is_some_and(|t| seconds - t < 0.1) {
            return;
        }
        self.last = Some(seconds);
        let done = step * Self::WIDTH / self.steps.max(1);
        let bar: String = (0..Self::WIDTH)
            .map(|i| if i < done { '#' } else { '.' })
            .collect();
        let mut err = std::io::stderr().lock();
        // A progress bar that cannot be drawn is not worth stopping for.
        let _ = write!(
            err,
            "\r[{bar}] {step}/{} steps  {particles} particles  {seconds:.1} s",
            self.steps
        );
        let _ = err.flush();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.last.is_some() {
            warn!();
        }
    }
}

/// Renders and writes the frame of the current state.
fn write_frame(
    path: &Path,
    fluid: &VecFluid,
    solids: &Solids,
    scale: DensityScale,
) -> Result<(), String> {
    let densities: Vec<f32> = fluid.state().iter().map(|s| s.density).collect();
    let img = render::render(&render::Scene {
        obstacles: solids.as_slice(),
        positions: fluid.positions(),
        densities: &densities,
        particle_radius: fluid.params().particle_radius,
        pipe: (scene::PIPE_ORIGIN, scene::PIPE_RADIUS),
        scale,
    });
    img.write_png(path)
}

/// Runs the scene and prints the report.
fn run(a: &Args, wall: Instant) -> Result<(), String> {
    let params = scene::params(a.spacing, a.dt)?;
    let mut solids = solids(a, &params)?;
    let mut emitter: Emitter<Vec3> = scene::pipe(a.spacing, a.particles)?;
    let mut stepper = Stepper::new(a, params.h).map_err(|e| format!("--walls {}: {e}", a.walls))?;
    let mut fluid: VecFluid = Fluid::new(
        vec![Vec3::ZERO; a.particles],
        vec![ParticleState::EMPTY; a.particles],
        params,
    );
    std::fs::create_dir_all(&a.out).map_err(|e| format!("creating {}: {e}", a.out.display()))?;
    let scale = DensityScale {
        lo: COLOUR_RANGE.0 * params.rest_density,
        hi: COLOUR_RANGE.1 * params.rest_density,
    };

    say!(
        "spatium demo: SPH fluid pouring onto {} static spheres in the unit box (CPU, {} thread{})",
        solids.len(),
        stepper.threads(),
        if stepper.threads() == 1 { "" } else { "s" }
    );
    say!("  step: {}", stepper.describe());
    say!(
        "  fluid: up to {} particles, spacing {}, h {}, mass {:.3e}, rest density {}, dt {}, {} steps ({:.2} s simulated)",
        a.particles,
        a.spacing,
        params.h,
        params.mass,
        params.rest_density,
        params.dt,
        a.steps,
        a.steps as f64 * f64::from(params.dt)
    );
    say!(
        "  pipe: mouth ({}, {}, {}), radius {}, {} m/s downwards, {} particles per layer",
        scene::PIPE_ORIGIN.x,
        scene::PIPE_ORIGIN.y,
        scene::PIPE_ORIGIN.z,
        scene::PIPE_RADIUS,
        scene::PIPE_SPEED,
        emitter.layer_len()
    );
    say!(
        "  spheres: diameters {}..{} (log-uniform), heights {}..{}, seed {}",
        scene::MIN_DIAMETER,
        scene::MAX_DIAMETER,
        scene::FIELD.0,
        scene::FIELD.1,
        a.seed
    );
    say!(
        "  neighbour search ({}): {}",
        a.structure.name(),
        Search::describe(a.structure, a.particles)
    );
    match &stepper {
        Stepper::Serial { search, .. } => {
            say!(
                "  pair cache: {} pairs ({} per particle, {:.1} MB)",
                a.pair_cache * a.particles,
                a.pair_cache,
                (search.capacity() * core::mem::size_of::<NeighborPair>()) as f64 / 1e6,
            );
            say!(
                "  broad phase ({}): {}",
                a.broadphase.name(),
                solids.broad_phase().describe()
            );
        }
        Stepper::Parallel { .. } => {
            say!(
                "  gather workspace: {:.1} MB, neighbour lists: {LIST_ROOM} per particle ({:.1} MB)",
                (a.particles * core::mem::size_of::<GatherSlot<Vec3>>()) as f64 / 1e6,
                (LIST_ROOM * a.particles * 4) as f64 / 1e6,
            );
            if solids.len() > SHARED_OBSTACLES {
                say!(
                    "  broad phase ({}): {}; queried on the calling thread between parallel wall passes (more than {SHARED_OBSTACLES} spheres)",
                    a.broadphase.name(),
                    solids.broad_phase().describe()
                );
            } else {
                say!(
                    "  spheres: every worker tests every sphere's box ({SHARED_OBSTACLES} spheres or fewer; the broad phase is not used)"
                );
            }
        }
    }

    let frames = render::frame_steps(a.steps, a.images);
    let mut frame_paths: Vec<PathBuf> = Vec::with_capacity(frames.len());
    let mut timer = Timer::default();
    let mut log: Vec<StepTiming> = Vec::with_capacity(a.steps);
    let sim_start = Instant::now();
    let mut bar = Progress::new(a.steps);
    for step in 1..=a.steps {
        let t = Instant::now();
        emitter
            .emit(&mut fluid, params.dt)
            .map_err(|e| format!("the pipe failed at step {step}: {e}"))?;
        let emit = t.elapsed().as_secs_f64();
        let particles = fluid.len();
        let t = Instant::now();
        if a.sort_every > 0 && step % a.sort_every == 0 {
            stepper
                .reorder(&mut fluid, a.structure)
                .map_err(|e| format!("sorting at step {step}: {e}"))?;
        }
        let sort = t.elapsed().as_secs_f64();
        stepper
            .step(&mut fluid, &mut solids, &mut timer)
            .map_err(|e| {
                let hint = match e {
                    Error::NonFinite => " (the scene diverged: try a smaller --dt)",
                    _ => "",
                };
                format!(
                    "step {step} of {} failed with {particles} particles: {e}{hint}",
                    a.steps
                )
            })?;
        let mut row = StepTiming {
            particles,
            stages: timer.take(),
            emitter: emit,
            sort,
            image: 0.0,
        };
        if frames.get(frame_paths.len()) == Some(&step) {
            let t = Instant::now();
            let path = a.out.join(format!("frame_{:04}.png", frame_paths.len()));
            write_frame(&path, &fluid, &solids, scale)?;
            frame_paths.push(path);
            row.image = t.elapsed().as_secs_f64();
        }
        log.push(row);
        bar.update(step, fluid.len(), sim_start.elapsed().as_secs_f64());
    }
    drop(bar);

    let t = Instant::now();
    let csv = a.out.join("timings.csv");
    timing::write_csv(&csv, &log).map_err(|e| format!("writing {}: {e}", csv.display()))?;
    let svg = a.out.join("timings.svg");
    let title = format!(
        "spatium-demo: SPH stages, {} particles, {} + {}",
        fluid.len(),
        a.structure.name(),
        a.broadphase.name()
    );
    plot::timings(&svg, &log, &title)?;
    let reports = t.elapsed().as_secs_f64();

    report(a, &fluid, &emitter, solids.len(), scale);
    if let Stepper::Serial {
        search, uncached, ..
    } = &stepper
    {
        say!(
            "pair cache: the last build found {} pairs; {uncached} of {} steps overflowed the cache and searched three times",
            search.pair_count(),
            a.steps
        );
    }
    say!();
    say!("stage times: {}", stepper.describe());
    timing::print_table(&log, wall.elapsed().as_secs_f64());
    say!(
        "(CSV and plot written in {:.3} s, inside the wall total)",
        reports
    );
    say!();
    say!("wrote:");
    for (p, step) in frame_paths.iter().zip(&frames) {
        say!("  {}  (after step {step})", p.display());
    }
    say!("  {}", csv.display());
    say!("  {}", svg.display());
    Ok(())
}

/// Prints the particle counts and the fluid's state at the end.
fn report(
    a: &Args,
    fluid: &VecFluid,
    emitter: &Emitter<Vec3>,
    spheres: usize,
    scale: DensityScale,
) {
    say!();
    say!(
        "particles: emitted {}, in the fluid {}, budget {}",
        emitter.emitted(),
        fluid.len(),
        a.particles
    );
    say!("spheres: {spheres}");
    let st = fluid.state();
    if !st.is_empty() {
        let (mut lo, mut hi, mut sum) = (f32::INFINITY, f32::NEG_INFINITY, 0.0f64);
        for s in st {
            lo = lo.min(s.density);
            hi = hi.max(s.density);
            sum += f64::from(s.density);
        }
        let mean_y = fluid
            .positions()
            .iter()
            .map(|p| f64::from(p.y))
            .sum::<f64>()
            / fluid.len() as f64;
        say!(
            "density: min {lo:.3}, mean {:.3}, max {hi:.3}; mean height {mean_y:.3}; kinetic energy {:.3e}",
            sum / st.len() as f64,
            fluid.kinetic_energy()
        );
    }
    say!(
        "colours: density {} and below pale blue, {} and above strong blue (colour bar, upper left)",
        scale.lo,
        scale.hi
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_run_writes_its_files() {
        let out = std::env::temp_dir().join(format!("spatium-demo-test-{}", std::process::id()));
        let a = Args {
            particles: 300,
            steps: 30,
            spheres: 20,
            images: 1,
            out: out.clone(),
            ..Args::default()
        };
        run(&a, Instant::now()).expect("run");
        for f in ["frame_0000.png", "timings.csv", "timings.svg"] {
            assert!(out.join(f).is_file(), "{f} missing");
        }
        let csv = std::fs::read_to_string(out.join("timings.csv")).expect("csv");
        assert_eq!(csv.lines().count(), 31);
        std::fs::remove_dir_all(&out).expect("cleanup");
    }

    #[test]
    fn the_serial_pair_step_and_one_thread_still_run() {
        for (pair_cache, threads) in [(8, 0), (0, 1)] {
            let out = std::env::temp_dir().join(format!(
                "spatium-demo-test-{}-{pair_cache}-{threads}",
                std::process::id()
            ));
            let a = Args {
                particles: 300,
                steps: 20,
                spheres: 20,
                images: 0,
                out: out.clone(),
                pair_cache,
                threads,
                sort_every: 7,
                ..Args::default()
            };
            run(&a, Instant::now()).expect("run");
            assert!(out.join("timings.csv").is_file());
            std::fs::remove_dir_all(&out).expect("cleanup");
        }
    }

    #[test]
    fn the_parallel_step_does_not_depend_on_the_thread_count() {
        let a = Args {
            particles: 6000,
            spheres: 50,
            ..Args::default()
        };
        let params = scene::params(a.spacing, a.dt).expect("params");
        let end = |threads: usize| {
            let a = Args {
                threads,
                ..a.clone()
            };
            let mut solids = solids(&a, &params).expect("solids");
            let mut pipe = scene::pipe(a.spacing, a.particles).expect("pipe");
            let mut stepper = Stepper::new(&a, params.h).expect("stepper");
            let mut fluid: VecFluid = Fluid::new(
                vec![Vec3::ZERO; a.particles],
                vec![ParticleState::EMPTY; a.particles],
                params,
            );
            // A block of 4913 particles (two gather tasks), then the pipe.
            fluid
                .fill_block(
                    spatium::Aabb3::new(Vec3::new(0.2, 0.0, 0.2), Vec3::new(0.465, 0.265, 0.465))
                        .expect("box"),
                    a.spacing,
                    Vec3::ZERO,
                )
                .expect("block");
            for step in 1..=12 {
                pipe.emit(&mut fluid, params.dt).expect("emit");
                if step % 5 == 0 {
                    stepper.reorder(&mut fluid, a.structure).expect("reorder");
                }
                stepper
                    .step(&mut fluid, &mut solids, &mut ())
                    .expect("step");
            }
            let bits: Vec<u32> = fluid
                .positions()
                .iter()
                .zip(fluid.state())
                .flat_map(|(x, s)| [x.x, x.y, x.z, s.velocity.x, s.velocity.y, s.density])
                .map(f32::to_bits)
                .collect();
            bits
        };
        let one = end(1);
        assert!(one.len() > 6 * 4096);
        assert!(end(2) == one, "2 threads differ from 1");
        assert!(end(3) == one, "3 threads differ from 1");
    }
}
