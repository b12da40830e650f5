//! Criterion benchmarks: one SPH step ([`Fluid::step`], the seed preset,
//! leapfrog with two force evaluations) of the dam break in
//! `spatium_benches::sph_scene`, with each neighbour search.
//!
//! Ids are `sph-step/N/STRUCTURE`, e.g. `sph-step/32768/spatium-sorted`;
//! filter with `cargo bench -p spatium-benches --bench sph -- sph-step/32768/`.
//! N is 32 768 (the seed's GPU particle count) and 4096, the only size brute
//! force is measured at (it is O(N²)). Steps per second = 1 / the reported
//! time.
//!
//! Every iteration first puts the fluid back to the scene's snapshot
//! (untimed: [`SphScene::restore`]) and then times one step, so every
//! structure times the same work. The neighbour search is the only thing
//! kept between iterations (its buffers; `Fluid::step` rebuilds it before
//! each force evaluation). Everything runs on one thread (splashsurf_lib
//! through its sequential search only).
//!
//! A second group, `sph-run10/32768/STRUCTURE`, restores the snapshot
//! (untimed) and times ten consecutive steps, reporting the time per step:
//! the steady state of searches that keep something between steps
//! (`spatium-sorted+skin`, a `VerletCache` whose candidates survive several
//! builds; `spatium-sorted+order`, the fluid renumbered in the hash's own
//! order after each step). In the one-step group such a search may reuse
//! what the previous iteration left, which flatters it: compare them in
//! `sph-run10`.
//!
//! A third group, `sph-par/32768/THREADS`, times one
//! [`Fluid::par_step_lists`] (the gather form on
//! `spatium_host::par::HostExec` with 1 and 2 threads, `CellSortedHash`,
//! 48 neighbour-list slots per particle, the fluid renumbered in the hash's
//! order before the step, untimed, and inside the step, timed), restoring
//! the snapshot untimed before
//! each step like the first group; its wall-clock time is what a parallel
//! step is judged by (criterion measures wall time).
//!
//! A fourth group, `sph-walls/4096/{clamp,walls}`, times one step of the
//! 16³ scene without and with boundary-particle walls
//! (`spatium::sph::walls`, three layers on five faces).
//!
//! Samples are few and short (10 samples, flat sampling, 2–3 s each), so the
//! whole run takes about a minute after compilation. The report binary
//! (`cargo run --release -p spatium-benches --bin report -- sph`) adds CPU
//! time, min–max and the split of time by stage.
//!
//! [`Fluid::step`]: spatium::sph::Fluid::step
//! [`Fluid::par_step_lists`]: spatium::sph::Fluid::par_step_lists

use core::cell::OnceCell;
use core::hint::black_box;
use core::time::Duration;
use std::time::Instant;

use criterion::{Bencher, Criterion, SamplingMode, criterion_group, criterion_main};
use spatium::NeighborSearch;
use spatium::sph::GatherSlot;
use spatium::table::table_len;
use spatium_benches::TABLE_FACTOR;
use spatium_benches::sph_scene::{SPH_SIDE, SPH_SMALL_SIDE, Search, SphScene, Structure};
use spatium_host::make;
use spatium_host::par::HostExec;

fn sph(c: &mut Criterion) {
    for side in [SPH_SIDE, SPH_SMALL_SIDE] {
        let n = side.pow(3);
        // Built on first use, so a filtered run skips the other size.
        let scene: OnceCell<SphScene> = OnceCell::new();
        let mut g = c.benchmark_group(format!("sph-step/{n}"));
        g.sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(if side == SPH_SIDE { 3 } else { 2 }));
        for structure in Structure::ALL {
            if !structure.measured(n) {
                continue;
            }
            g.bench_function(structure.name(), |b| {
                let scene = scene.get_or_init(|| {
                    SphScene::new(side).unwrap_or_else(|e| panic!("the {n}-particle scene: {e}"))
                });
                time_steps(b, scene, structure, n, 1);
            });
        }
        g.finish();
    }
    // Steady state: each iteration restores the snapshot (untimed) and times
    // RUN consecutive steps, reporting the time per step, so that a search
    // which keeps something from step to step (the Verlet skin's candidates,
    // the renumbered fluid's order) is charged for its rebuilds.
    let n = SPH_SIDE.pow(3);
    let scene: OnceCell<SphScene> = OnceCell::new();
    let mut g = c.benchmark_group(format!("sph-run{RUN}/{n}"));
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for structure in [
        Structure::Sorted,
        Structure::SortedCached,
        Structure::SortedOrdered,
        Structure::SortedSkin,
        Structure::Linked,
    ] {
        g.bench_function(structure.name(), |b| {
            let scene = scene.get_or_init(|| {
                SphScene::new(SPH_SIDE).unwrap_or_else(|e| panic!("the {n}-particle scene: {e}"))
            });
            time_steps(b, scene, structure, n, RUN);
        });
    }
    g.finish();

    // The parallel step at 1 and 2 threads.
    let mut g = c.benchmark_group(format!("sph-par/{n}"));
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for threads in [1usize, 2] {
        g.bench_function(format!("{threads}-threads"), |b| {
            let scene = scene.get_or_init(|| {
                SphScene::new(SPH_SIDE).unwrap_or_else(|e| panic!("the {n}-particle scene: {e}"))
            });
            time_par_step(b, scene, &HostExec::new(threads));
        });
    }
    g.finish();
}

/// The cost of boundary-particle walls (`spatium::sph::walls`): one step of
/// the scene with a `CellSortedHash`, against the seed's clamp walls
/// (`clamp`) and with three layers of boundary particles on the tank's
/// five closed faces, open top, no-slip (`walls`); the snapshot restored
/// untimed before each step as in `sph-step`.
fn walls(c: &mut Criterion) {
    use spatium::sph::walls::{BoundaryParticles, BoundaryState, Slip, TankFaces, box_count};
    use spatium::{BoundingBox, PeriodicBox, Vec3};
    use spatium_benches::sph_scene::SPH_SPACING;
    let n = SPH_SMALL_SIDE.pow(3);
    let scene = SphScene::new(SPH_SMALL_SIDE).expect("the scene");
    let mut g = c.benchmark_group(format!("sph-walls/{n}"));
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let faces = TankFaces::open_top(Slip::NoSlip);
    let nb = box_count::<Vec3>(scene.domain, SPH_SPACING, 3, faces).expect("the tank");
    let mut sorted_walls = BoundaryParticles::new(
        vec![Vec3::ZERO; nb],
        vec![BoundaryState::EMPTY; nb],
        make::cell_sorted::<Vec3>(nb, table_len(nb, TABLE_FACTOR)),
    );
    sorted_walls
        .sample_box(scene.domain, SPH_SPACING, 3, faces)
        .expect("fits");
    // The same walls searched by a dense grid over the tank and its layers.
    let reach = Vec3::new(1.0, 1.0, 1.0) * (3.0 * SPH_SPACING);
    let around = PeriodicBox::new(scene.domain.min() - reach, scene.domain.max() + reach, 0)
        .expect("the tank's box");
    let mut dense_walls = BoundaryParticles::new(
        vec![Vec3::ZERO; nb],
        vec![BoundaryState::EMPTY; nb],
        make::dense::<Vec3>(around, nb, scene.params.h).expect("the grid"),
    );
    dense_walls
        .sample_box(scene.domain, SPH_SPACING, 3, faces)
        .expect("fits");
    for name in ["clamp", "walls", "walls-dense"] {
        g.bench_function(name, |b| {
            let mut search = make::cell_sorted::<Vec3>(n, table_len(n, TABLE_FACTOR));
            let mut fluid = scene.fluid().expect("the snapshot fits its own size");
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    scene.restore(&mut fluid).expect("same size");
                    let t = Instant::now();
                    let r = match name {
                        "walls" => fluid.step(&mut search, &mut sorted_walls, &mut ()),
                        "walls-dense" => fluid.step(&mut search, &mut dense_walls, &mut ()),
                        _ => fluid.step(&mut search, &mut (), &mut ()),
                    };
                    timed += t.elapsed();
                    r.unwrap_or_else(|e| panic!("{name}: {e}"));
                    black_box(fluid.positions());
                }
                timed
            });
        });
    }
    g.finish();
}

/// Times one [`spatium::sph::Fluid::par_step_lists`] on `exec` per iteration,
/// from the snapshot renumbered into the hash's cell order (untimed).
fn time_par_step(b: &mut Bencher<'_>, scene: &SphScene, exec: &HostExec) {
    let n = scene.n();
    let mut hash = make::cell_sorted(n, table_len(n, TABLE_FACTOR));
    let mut work = vec![GatherSlot::EMPTY; n];
    let mut order = vec![0u32; n];
    let mut offsets = vec![0u32; n + 1];
    // Room for the lists about three times over: one sweep on several
    // threads (see `NeighborSearch::par_neighbor_lists`).
    let mut indices = vec![0u32; 96 * n];
    let mut fluid = scene.fluid().expect("the snapshot fits its own size");
    b.iter_custom(|iters| {
        let mut timed = Duration::ZERO;
        for _ in 0..iters {
            scene.restore(&mut fluid).expect("same size");
            hash.build(fluid.positions(), fluid.params().h)
                .expect("the hash fits");
            hash.spatial_order(&mut order).expect("sized for n");
            fluid
                .renumber(order.iter().copied())
                .expect("a permutation");
            let t = Instant::now();
            fluid
                .par_step_lists(
                    exec,
                    &mut hash,
                    &mut (),
                    &mut (),
                    &mut work,
                    (&mut offsets, &mut indices),
                )
                .unwrap_or_else(|e| panic!("par_step_lists refused the step: {e}"));
            timed += t.elapsed();
            black_box(fluid.positions());
        }
        timed
    });
}

/// Times `steps` consecutive steps of `structure` per iteration, each
/// iteration starting from the scene's snapshot (restored untimed); reports
/// the time per step.
fn time_steps(b: &mut Bencher<'_>, scene: &SphScene, structure: Structure, n: usize, steps: u32) {
    let mut search = Search::new(structure, n);
    let mut fluid = scene.fluid().expect("the snapshot fits its own size");
    b.iter_custom(|iters| {
        let mut timed = Duration::ZERO;
        for _ in 0..iters {
            scene.restore(&mut fluid).expect("same size");
            let t = Instant::now();
            for _ in 0..steps {
                search
                    .step(&mut fluid, &mut ())
                    .unwrap_or_else(|e| panic!("{structure} refused the step: {e}"));
            }
            timed += t.elapsed() / steps;
            black_box(fluid.positions());
        }
        timed
    });
}

/// Steps per iteration of the steady-state group `sph-run10/32768/*`.
const RUN: u32 = 10;

criterion_group!(benches, sph, walls);
criterion_main!(benches);
