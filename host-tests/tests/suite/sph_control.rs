//! Time-step control and the stability monitor of `spatium::sph::Fluid`:
//! the seed preset's dam break at spacing `a/20` diverges and the monitor
//! stops it with `Error::Diverged` (particles restored, report readable);
//! healthy runs of the same scene never trip it; the adaptive time step
//! keeps the diverging scene alive; the report's figures equal a brute
//! recomputation from the state, and the parallel step's are the same for
//! every number of workers; the pair-cache sizing rule holds the pairs of
//! settled scenes.
//!
//! `cargo test --profile ci -p spatium-host-tests --test suite -- sph_control::
//! --ignored --nocapture` prints the figures the monitor's defaults were
//! chosen from.

use spatium::exec::Serial;
use spatium::sph::{Fluid, GatherSlot, ParticleState, SphParams, StepControl, StepReport};
use spatium::table::table_len;
use spatium::{Aabb2, Aabb3, Error, NeighborPair, PairCache, Point, Vec2, Vec3};
use spatium_host::make::{self, VecCellSorted};
use spatium_host::par::HostExec;

type VecFluid<P> = Fluid<P, Vec<P>, Vec<ParticleState<P>>>;

fn fluid<P: Point>(cap: usize, p: SphParams<P>) -> VecFluid<P> {
    Fluid::new(vec![P::ZERO; cap], vec![ParticleState::EMPTY; cap], p)
}

fn search<P: Point>(cap: usize) -> VecCellSorted<P> {
    make::cell_sorted::<P>(cap, table_len(cap, 2))
}

/// The column's side `a`.
const A: f32 = 0.1;
/// The spacing, `a/20`.
const S: f32 = A / 20.0;

/// The tank: `4a` wide, `3a` tall.
fn tank() -> Aabb2 {
    Aabb2::new(Vec2::ZERO, Vec2::new(4.0 * A, 3.0 * A)).unwrap()
}

/// The dam break of the issue: a column `a` wide and `2a` tall in the
/// tank's corner, at rest, 800 particles.
fn dam_break(p: SphParams<Vec2>) -> VecFluid<Vec2> {
    let mut f = fluid::<Vec2>(800, p);
    let column = Aabb2::new(Vec2::ZERO, Vec2::new(A, 2.0 * A)).unwrap();
    f.fill_block(column, S, Vec2::ZERO).unwrap();
    assert_eq!(f.len(), 800);
    f
}

/// The seed preset at spacing `a/20`: `Δt = 0.005`, more than three times
/// the acoustic bound `0.4·h/c ≈ 0.0015`.
fn seed() -> SphParams<Vec2> {
    SphParams::<Vec2>::seed(tank(), S).unwrap()
}

/// Steps the diverging scene must fail within.
const FAIL_WITHIN: usize = 300;

/// The figures a report of a step of `dt` holds, recomputed from the
/// state.
fn brute<P: Point>(f: &VecFluid<P>, dt: f32) -> StepReport {
    let p = f.params();
    let st = f.state();
    let v = st
        .iter()
        .map(|s| s.velocity.dot(s.velocity).sqrt())
        .fold(0.0f32, f32::max);
    let a = st
        .iter()
        .map(|s| s.acceleration.dot(s.acceleration).sqrt())
        .fold(0.0f32, f32::max);
    let hi = st.iter().map(|s| s.density).fold(f32::MIN, f32::max) / p.rest_density;
    let lo = st.iter().map(|s| s.density).fold(f32::MAX, f32::min) / p.rest_density;
    let c = (7.0 * f64::from(p.stiffness) / f64::from(p.rest_density)).sqrt();
    let h = f64::from(p.h);
    let acoustic = 0.4 * h / (c + f64::from(v));
    let force = 0.25 * (h / f64::from(a)).sqrt();
    let viscous = 0.125 * h * h * f64::from(p.rest_density) / f64::from(p.viscosity);
    StepReport {
        max_speed: v,
        max_density_ratio: hi,
        min_density_ratio: lo,
        max_acceleration: a,
        dt,
        cfl: (f64::from(v) * f64::from(dt) / h) as f32,
        dt_acoustic: acoustic as f32,
        dt_force: force as f32,
        dt_viscous: viscous as f32,
        dt_limit: acoustic.min(force).min(viscous) as f32,
    }
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-5 * a.abs().max(b.abs())
}

/// The report of a step of `dt` equals the brute figures: the extremes
/// exactly, the derived bounds to rounding.
fn assert_report_matches<P: Point>(f: &VecFluid<P>, r: &StepReport, dt: f32) {
    let b = brute(f, dt);
    assert_eq!(r.max_speed, b.max_speed);
    assert_eq!(r.max_acceleration, b.max_acceleration);
    assert_eq!(r.max_density_ratio, b.max_density_ratio);
    assert_eq!(r.min_density_ratio, b.min_density_ratio);
    assert_eq!(r.dt, b.dt);
    for (name, x, y) in [
        ("cfl", r.cfl, b.cfl),
        ("acoustic", r.dt_acoustic, b.dt_acoustic),
        ("force", r.dt_force, b.dt_force),
        ("viscous", r.dt_viscous, b.dt_viscous),
        ("limit", r.dt_limit, b.dt_limit),
    ] {
        assert!(close(x, y), "{name}: report {x}, brute {y}");
    }
}

/// The seed dam break at `a/20` is stopped by the monitor within
/// [`FAIL_WITHIN`] steps; the failed step is undone, its report is
/// readable and over the bound it names, and the step count does not move.
#[test]
fn the_monitor_stops_the_diverging_seed_dam_break() {
    let mut f = dam_break(seed());
    assert_eq!(*f.control(), StepControl::DEFAULT);
    let mut ns = search::<Vec2>(f.len());
    let mut failed = None;
    for i in 0..FAIL_WITHIN {
        let before: Vec<(Vec2, Vec2)> = f
            .positions()
            .iter()
            .zip(f.state())
            .map(|(x, s)| (*x, s.velocity))
            .collect();
        match f.step(&mut ns, &mut (), &mut ()) {
            Ok(()) => {
                let r = f.last_report().unwrap();
                assert_report_matches(&f, &r, f.params().dt);
                assert!(r.max_density_ratio <= 3.0 && r.cfl <= 1.0);
            }
            Err(e) => {
                let after: Vec<(Vec2, Vec2)> = f
                    .positions()
                    .iter()
                    .zip(f.state())
                    .map(|(x, s)| (*x, s.velocity))
                    .collect();
                assert_eq!(before, after, "the failed step was not undone");
                assert_eq!(f.steps(), i as u64);
                failed = Some((i, e, f.last_report().unwrap()));
                break;
            }
        }
    }
    let Some((i, e, r)) = failed else {
        panic!("the diverging scene ran {FAIL_WITHIN} steps without an error");
    };
    println!("diverged at step {i}: {e} ({r:?})");
    match e {
        Error::Diverged {
            quantity: "max_density_ratio",
        } => assert!(r.max_density_ratio > 3.0),
        Error::Diverged {
            quantity: "max_cfl",
        } => assert!(r.cfl > 1.0),
        other => panic!("expected Diverged, got {other:?}"),
    }
    assert!(e.to_string().contains("diverges"));
    // Without the monitor the same run returns Ok: the failure above is
    // the monitor's, not the solver's.
    let mut g = dam_break(seed());
    g.set_control(StepControl::UNCHECKED).unwrap();
    let mut worst = 0.0f32;
    for _ in 0..=i {
        g.step(&mut ns, &mut (), &mut ()).unwrap();
        let r = g.last_report().unwrap();
        worst = worst.max(r.max_density_ratio).max(r.cfl);
    }
    assert!(worst > 1.0, "unchecked: worst figure {worst}");
}

/// Healthy versions of the same scene run twice [`FAIL_WITHIN`] steps
/// with the default monitor and no error: the water preset with its
/// column height, and the seed preset with `Δt = 0.0005` (below all
/// three bounds).
#[test]
fn healthy_dam_breaks_do_not_trip_the_monitor() {
    let water = SphParams::<Vec2>::water(tank(), S, 2.0 * A).unwrap();
    let mut small = seed();
    small.dt = 0.0005;
    for p in [water, small] {
        let mut f = dam_break(p);
        let mut ns = search::<Vec2>(f.len());
        let mut peak = (0.0f32, 0.0f32, 0.0f32);
        for i in 0..2 * FAIL_WITHIN {
            if let Err(e) = f.step(&mut ns, &mut (), &mut ()) {
                panic!("step {i}: {e} ({:?})", f.last_report());
            }
            let r = f.last_report().unwrap();
            peak = (
                peak.0.max(r.max_density_ratio),
                peak.1.max(r.cfl),
                peak.2.max(r.max_speed),
            );
        }
        // The dam did break: the fluid moves.
        assert!(peak.2 > 0.5, "{peak:?}");
        println!("healthy peak (density ratio, cfl, speed): {peak:?}");
    }
}

/// The adaptive time step keeps the diverging scene alive: from the seed's
/// `Δt = 0.005`, every step sets the next from the report's limit, and the
/// run covers 0.5 s (more than the failing run's simulated time) with the
/// default monitor and no error; `Δt` then stays between the bounds and is
/// `safety·dt_limit` of the last report.
#[test]
fn adaptive_time_step_keeps_the_seed_dam_break_alive() {
    let mut f = dam_break(seed());
    let control = StepControl::adaptive(0.9, 1e-5, 0.005);
    f.set_control(control).unwrap();
    let mut ns = search::<Vec2>(f.len());
    let mut t = 0.0f32;
    let mut steps = 0usize;
    let mut max_speed = 0.0f32;
    while t < 0.5 {
        let dt = f.params().dt;
        if let Err(e) = f.step(&mut ns, &mut (), &mut ()) {
            panic!("step {steps} at t = {t}: {e} ({:?})", f.last_report());
        }
        let r = f.last_report().unwrap();
        assert_eq!(r.dt, dt);
        assert_report_matches(&f, &r, dt);
        let next = f.params().dt;
        assert_eq!(next, control.next_dt(&r));
        assert!((1e-5..=0.005).contains(&next));
        assert!(close(next, (0.9 * r.dt_limit).clamp(1e-5, 0.005)));
        max_speed = max_speed.max(r.max_speed);
        t += dt;
        steps += 1;
    }
    assert!(steps > FAIL_WITHIN, "{steps} steps");
    assert!(max_speed > 0.5, "the dam never broke: {max_speed}");
    println!("adaptive: {steps} steps to 0.5 s, max speed {max_speed}");
}

/// The parallel step's report is bit-identical for 1, 2, 3 and 8 workers
/// (and so is its adaptive `Δt`), and matches the brute figures.
#[test]
fn parallel_reports_are_the_same_for_every_worker_count() {
    let run = |workers: usize| {
        let mut f = dam_break(seed());
        f.set_control(StepControl::adaptive(1.0, 1e-5, 0.005))
            .unwrap();
        let mut ns = search::<Vec2>(f.len());
        let mut work = vec![GatherSlot::EMPTY; f.len()];
        let exec = HostExec::new(workers);
        let mut reports = Vec::new();
        for _ in 0..60 {
            let dt = f.params().dt;
            f.par_step(&exec, &mut ns, &mut (), &mut (), &mut work)
                .unwrap();
            let r = f.last_report().unwrap();
            assert_report_matches(&f, &r, dt);
            reports.push(r);
        }
        (reports, f.params().dt)
    };
    let one = run(1);
    for w in [2, 3, 8] {
        let other = run(w);
        assert_eq!(other.1.to_bits(), one.1.to_bits());
        for (a, b) in one.0.iter().zip(&other.0) {
            for (x, y) in [
                (a.max_speed, b.max_speed),
                (a.max_density_ratio, b.max_density_ratio),
                (a.min_density_ratio, b.min_density_ratio),
                (a.max_acceleration, b.max_acceleration),
                (a.dt, b.dt),
                (a.dt_limit, b.dt_limit),
            ] {
                assert_eq!(x.to_bits(), y.to_bits(), "{w} workers");
            }
        }
    }
    // Serial executor, the trait's own: the same.
    let mut f = dam_break(seed());
    let mut ns = search::<Vec2>(f.len());
    let mut work = vec![GatherSlot::EMPTY; f.len()];
    f.par_step(&Serial, &mut ns, &mut (), &mut (), &mut work)
        .unwrap();
    assert_report_matches(&f, &f.last_report().unwrap(), f.params().dt);
}

/// The parallel step is stopped by the monitor as the serial one is, and
/// undoes the step.
#[test]
fn the_parallel_step_is_stopped_too() {
    let mut f = dam_break(seed());
    let mut ns = search::<Vec2>(f.len());
    let mut work = vec![GatherSlot::EMPTY; f.len()];
    let exec = HostExec::new(3);
    for i in 0..FAIL_WITHIN {
        let before = f.positions().to_vec();
        match f.par_step(&exec, &mut ns, &mut (), &mut (), &mut work) {
            Ok(()) => {}
            Err(Error::Diverged { .. }) => {
                assert_eq!(before, f.positions());
                assert_eq!(f.steps(), i as u64);
                return;
            }
            Err(e) => panic!("step {i}: {e}"),
        }
    }
    panic!("the parallel step never diverged");
}

/// Bad controls are refused and change nothing; `water` refuses a bad
/// height; `speed_of_sound` is the preset's `c`.
#[test]
fn controls_and_presets_are_checked() {
    let mut f = dam_break(seed());
    for (bad, field) in [
        (
            StepControl {
                safety: 0.0,
                ..StepControl::DEFAULT
            },
            "safety",
        ),
        (
            StepControl {
                safety: 1.5,
                ..StepControl::DEFAULT
            },
            "safety",
        ),
        (
            StepControl {
                dt_min: 0.0,
                ..StepControl::DEFAULT
            },
            "dt_min",
        ),
        (StepControl::adaptive(1.0, 0.01, 0.001), "dt_max"),
        (
            StepControl {
                max_cfl: f32::NAN,
                ..StepControl::DEFAULT
            },
            "max_cfl",
        ),
        (
            StepControl {
                max_density_ratio: -1.0,
                ..StepControl::DEFAULT
            },
            "max_density_ratio",
        ),
    ] {
        assert_eq!(f.set_control(bad), Err(Error::InvalidConfig { field }));
        assert_eq!(*f.control(), StepControl::DEFAULT);
    }
    for h in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        assert_eq!(
            SphParams::<Vec2>::water(tank(), S, h).map(|_| ()),
            Err(Error::InvalidConfig { field: "height" })
        );
    }
    // The physics depends on the column, not on the tank.
    let tall = Aabb2::new(Vec2::ZERO, Vec2::new(4.0 * A, 30.0 * A)).unwrap();
    let a = SphParams::<Vec2>::water(tank(), S, 2.0 * A).unwrap();
    let b = SphParams::<Vec2>::water(tall, S, 2.0 * A).unwrap();
    assert_eq!(
        (a.dt, a.stiffness, a.viscosity),
        (b.dt, b.stiffness, b.viscosity)
    );
    let c = 10.0 * (2.0 * 9.81f32 * 2.0 * A).sqrt();
    assert!(close(a.speed_of_sound(), c), "{}", a.speed_of_sound());
    assert!(close(seed().speed_of_sound(), 7.0f32.sqrt()));
    let mut gas = seed();
    gas.eos = spatium::sph::EquationOfState::IdealGas;
    gas.stiffness = 4.0;
    assert!(close(gas.speed_of_sound(), 2.0));
}

/// The pair-cache sizing rule holds the pairs of settled scenes (the
/// cache stays cached over every build) and is less than twice what they
/// need.
#[test]
fn pair_capacity_holds_settled_scenes() {
    // 3D: a water column settling, 10 × 20 × 10.
    let s3 = 0.02;
    let domain = Aabb3::new(Vec3::ZERO, Vec3::new(0.2, 0.5, 0.2)).unwrap();
    let p3 = SphParams::<Vec3>::water(domain, s3, 0.4).unwrap();
    let mut f3 = fluid::<Vec3>(2000, p3);
    f3.fill_block(
        Aabb3::new(Vec3::ZERO, Vec3::new(0.2, 0.4, 0.2)).unwrap(),
        s3,
        Vec3::ZERO,
    )
    .unwrap();
    let cap3 = p3.pair_capacity(f3.len(), s3).unwrap();
    assert_eq!(cap3, (2000.0f64 * 16.0 * 1.3).ceil() as usize);
    let mut cache = PairCache::new(search::<Vec3>(f3.len()), vec![NeighborPair::EMPTY; cap3]);
    let most3 = settle(&mut f3, &mut cache, 600);
    println!("3D column: at most {most3} pairs, capacity {cap3}");
    assert!(2 * most3 > cap3, "{most3} pairs, capacity {cap3}");

    // 2D: the healthy dam break (water preset), until it has settled.
    let p2 = SphParams::<Vec2>::water(tank(), S, 2.0 * A).unwrap();
    let mut f2 = dam_break(p2);
    let cap2 = p2.pair_capacity(f2.len(), S).unwrap();
    assert_eq!(cap2, (800.0f64 * 6.0 * 1.3).ceil() as usize);
    let mut cache = PairCache::new(search::<Vec2>(f2.len()), vec![NeighborPair::EMPTY; cap2]);
    let most2 = settle(&mut f2, &mut cache, 2000);
    println!("2D dam break: at most {most2} pairs, capacity {cap2}");
    assert!(2 * most2 > cap2, "{most2} pairs, capacity {cap2}");

    assert_eq!(
        p2.pair_capacity(10, 0.0),
        Err(Error::InvalidConfig { field: "spacing" })
    );
    assert_eq!(
        p2.pair_capacity(10, p2.h / 100.0),
        Err(Error::InvalidConfig { field: "spacing" })
    );
}

/// Steps `f` with `cache`, which must stay cached; returns the most pairs
/// a build found.
fn settle<P: Point>(
    f: &mut VecFluid<P>,
    cache: &mut PairCache<VecCellSorted<P>, Vec<NeighborPair>>,
    steps: usize,
) -> usize {
    let mut most = 0;
    for i in 0..steps {
        f.step(cache, &mut (), &mut ()).unwrap();
        assert!(cache.is_cached(), "step {i}: {} pairs", cache.pair_count());
        most = most.max(cache.pair_count());
    }
    most
}

/// Prints the figures the monitor's defaults were chosen from: the peaks
/// of density ratio and Courant number of healthy runs (the physics
/// tests' seed dam break at `Δt = 0.006` and SI water column, the
/// benches' block) and of the diverging seed dam break, all without the
/// monitor.
#[test]
#[ignore = "measurement: prints figures"]
fn measure_monitor_figures() {
    fn peaks<P: Point>(name: &str, mut f: VecFluid<P>, steps: usize) {
        f.set_control(StepControl::UNCHECKED).unwrap();
        let mut ns = search::<P>(f.len());
        let (mut rho, mut cfl) = (0.0f32, 0.0f32);
        let (mut first_cfl1, mut first_rho2, mut first_rho3) = (None, None, None);
        for i in 0..steps {
            if let Err(e) = f.step(&mut ns, &mut (), &mut ()) {
                println!("{name}: step {i}: {e}");
                break;
            }
            let r = f.last_report().unwrap();
            rho = rho.max(r.max_density_ratio);
            cfl = cfl.max(r.cfl);
            if r.cfl > 1.0 && first_cfl1.is_none() {
                first_cfl1 = Some(i);
            }
            if r.max_density_ratio > 2.0 && first_rho2.is_none() {
                first_rho2 = Some(i);
            }
            if r.max_density_ratio > 3.0 && first_rho3.is_none() {
                first_rho3 = Some(i);
            }
        }
        println!(
            "{name}: {steps} steps, peak density ratio {rho:.3}, peak cfl {cfl:.3}, \
             cfl > 1 first at {first_cfl1:?}, density > 2 first at {first_rho2:?}, \
             > 3 at {first_rho3:?}"
        );
    }
    fn boxed3(hi: [f32; 3]) -> Aabb3 {
        Aabb3::new(Vec3::ZERO, Vec3::new(hi[0], hi[1], hi[2])).unwrap()
    }
    // sph_physics: leapfrog at Δt = 0.006.
    let mut p = SphParams::<Vec3>::seed(boxed3([0.5, 0.5, 0.25]), 0.025).unwrap();
    p.dt = 0.006;
    let mut f = fluid::<Vec3>(960, p);
    f.fill_block(boxed3([0.2, 0.3, 0.25]), 0.025, Vec3::ZERO)
        .unwrap();
    peaks("seed dam break 3D, dt 0.006", f, 3000);
    // sph_physics: the SI column.
    let p = SphParams::<Vec3>::water(boxed3([0.2, 0.5, 0.2]), 0.02, 0.5).unwrap();
    let mut f = fluid::<Vec3>(2000, p);
    f.fill_block(boxed3([0.2, 0.4, 0.2]), 0.02, Vec3::ZERO)
        .unwrap();
    let steps = (1.0 / p.dt) as usize;
    peaks("water column 3D", f, steps);
    // The benches' scene: seed at spacing 1/16, a side³ block in a
    // 2l × 1.5l × l box (side 16), for 2 s.
    let (s, side) = (0.0625f32, 16usize);
    let l = side as f32 * s;
    let p = SphParams::<Vec3>::seed(boxed3([2.0 * l, 1.5 * l, l]), s).unwrap();
    let mut f = fluid::<Vec3>(side.pow(3), p);
    f.fill_block(boxed3([l, l, l]), s, Vec3::ZERO).unwrap();
    peaks("bench block 3D, side 16", f, 400);
    let side = 32usize;
    let l = side as f32 * s;
    let p = SphParams::<Vec3>::seed(boxed3([2.0 * l, 1.5 * l, l]), s).unwrap();
    let mut f = fluid::<Vec3>(side.pow(3), p);
    f.fill_block(boxed3([l, l, l]), s, Vec3::ZERO).unwrap();
    peaks("bench block 3D, side 32", f, 1200);
    // The scene in 3D, a slab a/4 deep.
    let p = SphParams::<Vec3>::seed(boxed3([4.0 * A, 3.0 * A, 0.25 * A]), S).unwrap();
    let mut f = fluid::<Vec3>(4000, p);
    f.fill_block(boxed3([A, 2.0 * A, 0.25 * A]), S, Vec3::ZERO)
        .unwrap();
    peaks("seed dam break 3D slab a/20 (diverging)", f, 600);
    // The scenes.
    peaks(
        "seed dam break 2D a/20 (diverging)",
        dam_break(seed()),
        1000,
    );
    let mut small = seed();
    small.dt = 0.0005;
    peaks("seed dam break 2D a/20, dt 0.0005", dam_break(small), 2000);
    peaks(
        "water dam break 2D a/20",
        dam_break(SphParams::<Vec2>::water(tank(), S, 2.0 * A).unwrap()),
        2000,
    );
}
