//! The SPH section of the thread-scaling experiment
//! (`report -- threads --only sph`).
//!
//! The scene is [`crate::sph_scene`]'s dam break (the seed preset,
//! leapfrog, two force evaluations per step) with a `side³` block, `side`
//! the cube root of the particle count (262 144 = 64³ by default; `--n`
//! overrides it, `--quick` uses 32 768). It is warmed up by a few parallel
//! steps on every core and renumbered into the hash's cell order; every
//! thread count then starts from that same snapshot.
//!
//! Rows:
//! * `SPH step (par_step_lists)`, spatium, each thread count: one
//!   [`Fluid::par_step_lists`](spatium::sph::Fluid::par_step_lists): as
//!   `par_step_sorted` below, with each particle's neighbours listed once
//!   per force evaluation ([`LIST_ROOM`] slots per particle) and the three
//!   gathers reading the lists.
//! * `SPH step (par_step_sorted)`, below [`LARGE_N`] particles only,
//!   spatium, each thread count: one
//!   [`Fluid::par_step_sorted`](spatium::sph::Fluid::par_step_sorted) on
//!   [`HostExec`] with a `CellSortedHash`: the gather form, the particles
//!   renumbered into the hash's order inside the step (timed) whenever a
//!   build finds them out of it, so both leapfrog evaluations take the
//!   hash's storage-order path.
//! * `SPH step (par_step), renumbered between steps`, below [`LARGE_N`]
//!   particles only: [`Fluid::par_step`](spatium::sph::Fluid::par_step),
//!   ids kept during the step, the fluid renumbered in the hash's order
//!   after each step (untimed, as the main job's cell-order renumbering).
//! * `SPH step (step, pair form, serial)`, one thread: the serial
//!   [`Fluid::step`](spatium::sph::Fluid::step) on the same snapshot, the
//!   same untimed renumbering between steps: the reference the parallel
//!   step's one-thread figure is compared with.
//! * `neighbour lists`: splashsurf_lib's parallel spatial-hashing search
//!   (`neighborhood_search_spatial_hashing_parallel`, rayon, run inside a
//!   pool of each size) and spatium's `par_build` + `par_neighbor_lists` on
//!   the same positions and radius.
//!
//! After the `par_step_lists` figure of each thread count, [`STAGE_STEPS`]
//! more steps run with a [`StageClock`] and the section prints (to stderr,
//! not in the table) the wall-clock ms per step of each [`Stage`] and of
//! the rest (the untimed chunk passes: saving the start state, the
//! finiteness check): a stage whose time does not shrink with threads is
//! where the scaling stops. Renumbering into the hash's order is part of
//! the neighbour-search stage.
//!
//! Each figure is the median wall-clock time of one step (one untimed
//! warm-up step, then at least 5 steps and 1 s; 3 steps with `--quick` or
//! from [`LARGE_N`] particles on, so that `--n 1000000` with five thread
//! counts stays within about two minutes on 16 cores).

use spatium::exec::Executor;
use spatium::sph::{Fluid, GatherSlot, ParticleState, SphParams, Stage, StageTimer};
use spatium::table::table_len;
use spatium::{Aabb3, NeighborSearch, Vec3};
use spatium_host::make::{self, VecCellSorted};
use spatium_host::par::{HostExec, Rayon};
use splashsurf_lib::Aabb3d;
use splashsurf_lib::nalgebra::Vector3;
use splashsurf_lib::neighborhood_search::neighborhood_search_spatial_hashing_parallel;

use super::threads::{Setup, ThreadRow};
use crate::TABLE_FACTOR;
use crate::sph_scene::{SPH_SPACING, StageClock, VecFluid};

/// Particles measured by default (`64³`).
pub const DEFAULT_N: usize = 1 << 18;

/// Particles of `--quick` (`32³`).
pub const QUICK_N: usize = 1 << 15;

/// From this many particles on, every figure is the median of 3 runs
/// after one warm-up (a 10⁶-particle step takes seconds on one thread).
pub const LARGE_N: usize = 500_000;

/// Neighbour-list slots per particle for `par_step_lists` and the
/// neighbour-list rows (a block at rest has about 30 neighbours per
/// particle with `h = 2·spacing`; the dam break compresses it a little):
/// room for the lists twice over, so that on several workers
/// [`NeighborSearch::par_neighbor_lists`] writes them in one sweep.
pub const LIST_ROOM: usize = 96;

/// Steps timed per stage after each `par_step_lists` figure.
pub const STAGE_STEPS: usize = 3;

/// Parallel steps run (on every core) before the snapshot.
pub const WARM_STEPS: usize = 4;

/// The dam-break block of `side³` particles at rest in its box (as
/// [`crate::sph_scene::SphScene`], without its serial warm-up).
fn dam_break(side: usize) -> VecFluid {
    let l = side as f32 * SPH_SPACING;
    let domain = Aabb3::new(Vec3::ZERO, Vec3::new(2.0 * l, 1.5 * l, l)).expect("finite box");
    let block = Aabb3::new(Vec3::ZERO, Vec3::new(l, l, l)).expect("finite box");
    let params = SphParams::seed(domain, SPH_SPACING).expect("the seed preset");
    let n = side.pow(3);
    let mut fluid = Fluid::new(vec![Vec3::ZERO; n], vec![ParticleState::EMPTY; n], params);
    fluid
        .fill_block(block, SPH_SPACING, Vec3::ZERO)
        .expect("the block fits");
    fluid
}

/// A fluid, its hash and the step's workspace.
struct Rig {
    fluid: VecFluid,
    hash: VecCellSorted<Vec3>,
    work: Vec<GatherSlot<Vec3>>,
    order: Vec<u32>,
    offsets: Vec<u32>,
    indices: Vec<u32>,
}

impl Rig {
    fn new(fluid: VecFluid) -> Self {
        let n = fluid.len();
        Self {
            fluid,
            hash: make::cell_sorted(n, table_len(n, TABLE_FACTOR)),
            work: vec![GatherSlot::EMPTY; n],
            order: vec![0; n],
            offsets: vec![0; n + 1],
            indices: vec![0; LIST_ROOM * n],
        }
    }

    /// Renumbers the fluid in the hash's storage order.
    fn reorder(&mut self) {
        self.hash
            .spatial_order(&mut self.order)
            .expect("order sized for the fluid");
        self.fluid
            .renumber(self.order.iter().copied())
            .expect("a permutation");
    }

    fn par_step_lists<E: Executor>(&mut self, exec: &E) {
        self.par_step_lists_timed(exec, &mut ());
    }

    fn par_step_lists_timed<E: Executor, T: StageTimer>(&mut self, exec: &E, timer: &mut T) {
        self.fluid
            .par_step_lists(
                exec,
                &mut self.hash,
                &mut (),
                timer,
                &mut self.work,
                (&mut self.offsets, &mut self.indices),
            )
            .unwrap_or_else(|e| panic!("par_step_lists failed: {e}"));
    }

    fn par_step_sorted<E: Executor>(&mut self, exec: &E) {
        self.fluid
            .par_step_sorted(
                exec,
                &mut self.hash,
                &mut (),
                &mut (),
                &mut self.work,
                &mut self.order,
            )
            .unwrap_or_else(|e| panic!("par_step_sorted failed: {e}"));
    }

    fn par_step<E: Executor>(&mut self, exec: &E) {
        self.fluid
            .par_step(exec, &mut self.hash, &mut (), &mut (), &mut self.work)
            .unwrap_or_else(|e| panic!("par_step failed: {e}"));
    }

    fn step(&mut self) {
        self.fluid
            .step(&mut self.hash, &mut (), &mut ())
            .unwrap_or_else(|e| panic!("step failed: {e}"));
    }
}

/// Median wall-clock ms of `run()` after one untimed warm-up call, with
/// `after()` run untimed after each call: at least 5 runs and 1 s (the
/// protocol of [`Setup::wall_median`]), 3 runs with `--quick` or from
/// [`LARGE_N`] particles on.
fn median_runs(
    setup: &Setup,
    n: usize,
    mut run: impl FnMut(),
    mut after: impl FnMut(),
) -> (f64, usize) {
    run();
    after();
    let (min_runs, min_time) = if setup.quick || n >= LARGE_N {
        (3, 0.0)
    } else {
        (5, 1.0)
    };
    let mut v = Vec::new();
    let start = std::time::Instant::now();
    while v.len() < min_runs || (start.elapsed().as_secs_f64() < min_time && v.len() < 50) {
        let (_, t) = crate::measure::time(&mut run);
        v.push(t.wall_ms());
        after();
    }
    (crate::measure::median(&v), v.len())
}

/// [`median_runs`] of `step(rig)`, the rig renumbered untimed after each
/// step if `reorder`.
fn median_steps(
    setup: &Setup,
    rig: &mut Rig,
    reorder: bool,
    mut step: impl FnMut(&mut Rig),
) -> (f64, usize) {
    let n = rig.fluid.len();
    let rig = core::cell::RefCell::new(rig);
    median_runs(
        setup,
        n,
        || step(&mut rig.borrow_mut()),
        || {
            if reorder {
                rig.borrow_mut().reorder();
            }
        },
    )
}

/// Prints the wall-clock ms per step of each stage of [`STAGE_STEPS`]
/// `par_step_lists` steps on `exec`, and of the rest of the step.
fn stage_split(rig: &mut Rig, exec: &HostExec, threads: usize) {
    let mut clock = StageClock::default();
    let start = std::time::Instant::now();
    for _ in 0..STAGE_STEPS {
        rig.par_step_lists_timed(exec, &mut clock);
    }
    let total = start.elapsed().as_nanos() as f64;
    let per_step = |ns: f64| ns / 1e6 / STAGE_STEPS as f64;
    let mut line = format!("    stages, {threads} threads, ms per step:");
    for s in Stage::ALL {
        line += &format!(" {} {:.2},", s.name(), per_step(clock.ns[s.index()] as f64));
    }
    let rest = total - clock.total_ns() as f64;
    line += &format!(" rest {:.2} (of {:.2})", per_step(rest), per_step(total));
    eprintln!("{line}");
}

/// The rows of the SPH section.
pub fn rows(setup: &Setup) -> Vec<ThreadRow> {
    let want = setup
        .n
        .unwrap_or(if setup.quick { QUICK_N } else { DEFAULT_N });
    let side = ((want as f64).cbrt().round() as usize).max(4);
    let n = side.pow(3);
    let all = HostExec::new(0);
    let mut warm = Rig::new(dam_break(side));
    for _ in 0..WARM_STEPS {
        warm.par_step_sorted(&all);
    }
    drop(all);
    let snapshot = warm.fluid;
    let mut rows = Vec::new();
    let row = |workload: &str, who: &str, threads: usize, (ms, runs): (f64, usize)| ThreadRow {
        workload: workload.to_owned(),
        who: who.to_owned(),
        n,
        threads,
        median_ms: ms,
        runs,
    };

    for &t in &setup.threads {
        let exec = HostExec::new(t);
        let mut rig = Rig::new(snapshot.clone());
        let m = median_steps(setup, &mut rig, false, |r| r.par_step_lists(&exec));
        eprintln!(
            "  sph par_step_lists, {n} particles, {t} threads: {:.2} ms",
            m.0
        );
        rows.push(row("SPH step (par_step_lists)", "spatium", t, m));
        stage_split(&mut rig, &exec, t);
    }
    if n < LARGE_N {
        for &t in &setup.threads {
            let exec = HostExec::new(t);
            let mut rig = Rig::new(snapshot.clone());
            let m = median_steps(setup, &mut rig, false, |r| r.par_step_sorted(&exec));
            eprintln!(
                "  sph par_step_sorted, {n} particles, {t} threads: {:.2} ms",
                m.0
            );
            rows.push(row("SPH step (par_step_sorted)", "spatium", t, m));
        }
        for &t in &setup.threads {
            let exec = HostExec::new(t);
            let mut rig = Rig::new(snapshot.clone());
            let m = median_steps(setup, &mut rig, true, |r| r.par_step(&exec));
            eprintln!("  sph par_step, {n} particles, {t} threads: {:.2} ms", m.0);
            rows.push(row(
                "SPH step (par_step), renumbered between steps",
                "spatium",
                t,
                m,
            ));
        }
    }
    {
        let mut rig = Rig::new(snapshot.clone());
        let m = median_steps(setup, &mut rig, true, Rig::step);
        eprintln!("  sph step (pair form), {n} particles: {:.2} ms", m.0);
        rows.push(row(
            "SPH step (step, pair form, serial), renumbered between steps",
            "spatium",
            1,
            m,
        ));
    }

    // Neighbour lists over the snapshot's positions, radius h.
    let h = snapshot.params().h;
    let positions = snapshot.positions();
    let vectors: Vec<Vector3<f32>> = positions
        .iter()
        .map(|p| Vector3::new(p.x, p.y, p.z))
        .collect();
    let mut domain = Aabb3d::from_points(&vectors);
    domain.grow_uniformly(h);
    let mut hash: VecCellSorted<Vec3> = make::cell_sorted(n, table_len(n, TABLE_FACTOR));
    let mut offsets = vec![0u32; n + 1];
    let mut indices = vec![0u32; LIST_ROOM * n];
    for &t in &setup.threads {
        let Ok(pool) = Rayon::new(t) else {
            continue;
        };
        let mut lists: Vec<Vec<usize>> = Vec::new();
        let m = median_runs(
            setup,
            n,
            || {
                pool.pool().install(|| {
                    neighborhood_search_spatial_hashing_parallel::<i64, f32>(
                        &domain, &vectors, h, &mut lists,
                    );
                });
            },
            || {},
        );
        rows.push(row(
            "neighbour lists",
            "splashsurf_lib (parallel, rayon)",
            t,
            m,
        ));
        let exec = HostExec::new(t);
        let m = median_runs(
            setup,
            n,
            || {
                hash.par_build(&exec, positions, h).expect("the hash fits");
                hash.par_neighbor_lists(&exec, &mut offsets, &mut indices)
                    .expect("LIST_ROOM neighbours per particle fit");
            },
            || {},
        );
        rows.push(row(
            "neighbour lists",
            "spatium (par_build + par_neighbor_lists, sorted)",
            t,
            m,
        ));
    }
    rows
}
