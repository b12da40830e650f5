//! Obstacles on the GPU against the core's CPU solver with an `Obstacles`
//! collider: static and moving spheres, boxes and triangles, compared per
//! particle id after k steps; the refusals; the host mirror against the
//! device's copy.

mod common;

use common::{DENSITY_TOL, POSITION_TOL, RELATIVE_TOL, VELOCITY_TOL};
use spatium::exec::Serial;
use spatium::sph::boundary::{Obstacle, Shape};
use spatium::sph::source::Lattice;
use spatium::sph::{GatherSlot, Integrator, ParticleState, SphParams};
use spatium::{
    Aabb3, BoundingBox, BruteForceBroadPhase, BruteForceNeighbors, BruteSlot, NeighborSearch,
    Obstacles, Point, Vec3,
};
use spatium_gpu::scene::Scene;
use spatium_gpu::{FluidConfig, GpuError, MAX_OBSTACLES, SortKind};

const SPACING: f32 = 0.025;
const DT: f32 = 0.005;
/// As `parity.rs`: 25 steps, before the runs part chaotically at the
/// walls (and, here, at the obstacles' edges).
const STEPS: u32 = 25;
/// Explicit Euler in the paddle scene parts earlier (on the CPU against
/// itself, by 2.5 m/s after 25 steps; it is blowing up): 15 steps.
const EULER_PADDLE_STEPS: u32 = 15;

/// Largest position and velocity differences with obstacles: ten times
/// the parity tolerances, for the few particles a discontinuity of the
/// solver sends apart. Measured: the Akinci curvature term
/// (`γ·m·(nᵢ − nⱼ)`, not zero at `r = h`) jumps when a pair crosses the
/// cutoff, and with obstacles stirring the block a pair of particles 0.049
/// apart crossed it in one run and not in the other (rounding of `d² < h²`)
/// and parted by 9.5·10⁻⁴ m/s at step 15 — the CPU against itself with
/// another pair order does the same (1.6·10⁻³ m/s in the paddle scene,
/// 3.7·10⁻³ m/s and 3.4·10⁻⁵ m with Euler in the static scene,
/// `cpu_pair_order_floor_with_obstacles`). All but [`OUTLIERS`] of the
/// particles must still be within the parity tolerances.
const OBSTACLE_POSITION_TOL: f32 = 10.0 * POSITION_TOL;
/// See [`OBSTACLE_POSITION_TOL`].
const OBSTACLE_VELOCITY_TOL: f32 = 10.0 * VELOCITY_TOL;
/// Most particles (a fraction) beyond the parity tolerances of position or
/// velocity.
const OUTLIERS: f32 = 0.02;
/// A particle whose velocity differs by more than [`OBSTACLE_VELOCITY_TOL`]
/// must be in contact with an obstacle or a wall at the end (within this
/// many collision radii of it on the CPU): a contact is resolved or not on
/// either side of `dist < r` (a wall: of `x < lo`), and resolving it
/// reverses the relative normal velocity with damping, a jump of
/// `(1 + damping)·|vₙ|`. Measured: 0.69 m/s for a particle on the floor
/// (1.4·10⁻⁷ m above it on the CPU) in front of the paddle at the last
/// step, in two runs of the counting sort out of five (its order within a
/// bucket follows the atomics); the position still within
/// [`OBSTACLE_POSITION_TOL`].
const CONTACT_RANGE: f32 = 1.1;

fn aabb(lo: [f32; 3], hi: [f32; 3]) -> Aabb3 {
    Aabb3::new(
        Vec3::new(lo[0], lo[1], lo[2]),
        Vec3::new(hi[0], hi[1], hi[2]),
    )
    .expect("box")
}

/// A lattice block of `block` in a box `domain` (the seed's parameters,
/// spacing 0.025, Δt = 0.005), every particle moving with `velocity`.
fn scene(domain: Aabb3, block: Aabb3, velocity: Vec3, integrator: Integrator) -> Scene {
    let mut params = SphParams::seed(domain, SPACING).expect("params");
    params.dt = DT;
    params.integrator = integrator;
    let positions: Vec<Vec3> = Lattice::new(block, SPACING)
        .expect("lattice")
        .points()
        .collect();
    let states = positions
        .iter()
        .map(|&x| ParticleState {
            start_position: x,
            velocity,
            ..ParticleState::EMPTY
        })
        .collect();
    Scene {
        params,
        positions,
        states,
    }
}

/// A block (1152 particles) thrown down at 1 m/s onto a box standing on the
/// floor across the whole depth, a sphere, and a ramp of two triangles.
fn static_scene(integrator: Integrator) -> (Scene, Vec<Obstacle<Vec3>>) {
    let s = scene(
        aabb([0.0; 3], [0.6, 0.5, 0.3]),
        aabb([0.2, 0.22, 0.0], [0.5, 0.42, 0.3]),
        Vec3::new(0.0, -1.0, 0.0),
        integrator,
    );
    let ramp = [
        Vec3::new(0.44, 0.0, -0.01),
        Vec3::new(0.6, 0.16, -0.01),
        Vec3::new(0.6, 0.16, 0.31),
        Vec3::new(0.44, 0.0, 0.31),
    ];
    let obstacles = vec![
        Obstacle::fixed(Shape::Box(aabb([0.2, 0.0, 0.0], [0.3, 0.16, 0.3]))),
        Obstacle::fixed(Shape::Sphere {
            center: Vec3::new(0.4, 0.1, 0.15),
            radius: 0.08,
        }),
        Obstacle::fixed(Shape::Triangle([ramp[0], ramp[1], ramp[2]])),
        Obstacle::fixed(Shape::Triangle([ramp[0], ramp[2], ramp[3]])),
    ];
    (s, obstacles)
}

/// A 12³ block (1728 particles) at rest between a paddle moving in at
/// 0.8 m/s and a lock gate rising at 0.6 m/s, both boxes across the whole
/// depth.
fn moving_scene(integrator: Integrator) -> (Scene, Vec<Obstacle<Vec3>>) {
    let s = scene(
        aabb([0.0; 3], [0.8, 0.45, 0.3]),
        aabb([0.2, 0.0, 0.0], [0.5, 0.3, 0.3]),
        Vec3::ZERO,
        integrator,
    );
    let obstacles = vec![
        Obstacle {
            shape: Shape::Box(aabb([0.12, 0.0, 0.0], [0.19, 0.35, 0.3])),
            velocity: Vec3::new(0.8, 0.0, 0.0),
        },
        Obstacle {
            shape: Shape::Box(aabb([0.51, 0.0, 0.0], [0.55, 0.4, 0.3])),
            velocity: Vec3::new(0.0, 0.6, 0.0),
        },
    ];
    (s, obstacles)
}

/// The CPU reference: the core's `Fluid` over a `CellSortedHash`, with an
/// `Obstacles` collider advanced before each step. `par_step` on the
/// `Serial` executor resolves up to `SHARED_OBSTACLES` (32) obstacles with
/// `collide_linear` (every obstacle's bounds tested in id order), the
/// order the GPU follows; `step` would meet them in the broad phase's
/// order. Returns positions and states by id, the obstacles at the end,
/// and how many particles each obstacle touched (within 1.05 collision
/// radii after some step).
fn cpu_run(scene: &Scene, list: &[Obstacle<Vec3>], steps: u32) -> CpuRun {
    cpu_run_with(
        &mut common::cpu_hash(scene.positions.len()),
        scene,
        list,
        steps,
    )
}

/// Positions and states by id, the obstacles at the end, and how many
/// particles each obstacle touched.
type CpuRun = (
    Vec<Vec3>,
    Vec<ParticleState<Vec3>>,
    Vec<Obstacle<Vec3>>,
    Vec<usize>,
);

/// [`cpu_run`] over any neighbour search.
fn cpu_run_with<N: NeighborSearch<Vec3> + Sync>(
    search: &mut N,
    scene: &Scene,
    list: &[Obstacle<Vec3>],
    steps: u32,
) -> CpuRun {
    let n = scene.positions.len();
    let mut fluid = common::cpu_fluid(scene, scene.states[0].velocity);
    let m = list.len();
    let mut solids = Obstacles::new(
        vec![Obstacle::EMPTY; m],
        BruteForceBroadPhase::new(vec![BruteSlot::<Aabb3>::EMPTY; m]),
    );
    for o in list {
        solids.add(*o).expect("obstacle");
    }
    let mut work = vec![GatherSlot::EMPTY; n];
    let mut touched = vec![vec![false; n]; m];
    let (r, domain) = (scene.params.particle_radius, scene.params.domain);
    for _ in 0..steps {
        solids.advance(scene.params.dt).expect("advance");
        fluid
            .par_step(&Serial, search, &mut solids, &mut (), &mut work)
            .expect("CPU step");
        for (j, o) in solids.as_slice().iter().enumerate() {
            for (i, (x, s)) in fluid.positions().iter().zip(fluid.state()).enumerate() {
                if o.shape
                    .contact(*x, s.velocity, 1.05 * r, Some(&domain))
                    .is_some()
                {
                    touched[j][i] = true;
                }
            }
        }
    }
    let counts = touched
        .iter()
        .map(|t| t.iter().filter(|&&b| b).count())
        .collect();
    (
        fluid.positions().to_vec(),
        fluid.state().to_vec(),
        solids.as_slice().to_vec(),
        counts,
    )
}

fn check(
    test: &str,
    (s, list): (Scene, Vec<Obstacle<Vec3>>),
    config: FluidConfig,
    steps: u32,
    steps_per_call: u32,
) {
    let Some(gpu) = common::gpu(test) else {
        return;
    };
    let (cpu_x, cpu_s, cpu_obstacles, touched) = cpu_run(&s, &list, steps);
    let mut fluid = s.fluid(&gpu, config).expect("GPU fluid");
    fluid.set_obstacles(&list).expect("obstacles");
    let mut left = steps;
    while left > 0 {
        let k = left.min(steps_per_call);
        fluid.step(k).expect("GPU steps");
        left -= k;
    }
    let out = fluid.read_back().expect("read back");
    assert!(!out.diverged, "{test}: diverged");
    // The obstacles moved exactly as the core's `advance` moved them.
    assert_eq!(fluid.obstacles(), &cpu_obstacles[..], "{test}: mirror");
    assert_eq!(
        fluid.read_obstacles().expect("obstacles back"),
        cpu_obstacles,
        "{test}: device obstacles"
    );
    let d = common::deviation(
        (&out.positions, &out.states),
        (&cpu_x, &cpu_s),
        s.params.rest_density,
    );
    eprintln!(
        "{test}: {} particles, touched per obstacle {touched:?}; after {steps} steps, {d}",
        cpu_x.len()
    );
    let r = s.params.particle_radius;
    // Not vacuous: every obstacle met the fluid.
    assert!(
        touched.iter().all(|&t| t >= 10),
        "{test}: some obstacle touched too few particles: {touched:?}"
    );
    // Every particle stays out of every obstacle (to rounding), on the GPU
    // as on the CPU.
    for x in &out.positions {
        for o in fluid.obstacles() {
            if let Some(c) = o.shape.contact(*x, Vec3::ZERO, r, None) {
                assert!(c.depth < 0.5 * r, "{test}: {x:?} deep in {o:?}");
            }
        }
    }
    // The bulk within the parity tolerances, the rest within ten times.
    let norm = |v: Vec3| (v.x * v.x + v.y * v.y + v.z * v.z).sqrt();
    let outliers = (0..cpu_x.len())
        .filter(|&i| {
            norm(out.positions[i] - cpu_x[i]) > POSITION_TOL
                || norm(out.states[i].velocity - cpu_s[i].velocity) > VELOCITY_TOL
        })
        .count();
    eprintln!("{test}: {outliers} particles beyond the parity tolerances of position or velocity");
    assert!(
        outliers as f32 <= OUTLIERS * cpu_x.len() as f32,
        "{test}: {outliers} outliers"
    );
    assert!(
        d.position <= OBSTACLE_POSITION_TOL,
        "{test}: position {:e}",
        d.position
    );
    for i in 0..cpu_x.len() {
        let dv = norm(out.states[i].velocity - cpu_s[i].velocity);
        if dv > OBSTACLE_VELOCITY_TOL {
            let (x, v) = (cpu_x[i], cpu_s[i].velocity);
            let (lo, hi) = (s.params.domain.min(), s.params.domain.max());
            let wall = (0..3).any(|k| {
                x.coord(k) - lo.coord(k) <= CONTACT_RANGE * r
                    || hi.coord(k) - x.coord(k) <= CONTACT_RANGE * r
            });
            let contact = wall
                || cpu_obstacles.iter().any(|o| {
                    o.shape
                        .contact(x, v, CONTACT_RANGE * r, Some(&s.params.domain))
                        .is_some()
                });
            eprintln!("{test}: particle {i} at {x:?} differs by {dv:e} m/s, in contact: {contact}");
            assert!(
                contact,
                "{test}: velocity of particle {i} {dv:e} away from any contact"
            );
        }
    }
    assert!(
        d.start_position <= OBSTACLE_POSITION_TOL,
        "{test}: step start {:e} m, {:e} m/s",
        d.start_position,
        d.start_velocity
    );
    d.assert_derived(test);
}

#[test]
fn static_obstacles_leapfrog_match_cpu() {
    check(
        "static_leapfrog",
        static_scene(Integrator::Leapfrog),
        FluidConfig::default(),
        STEPS,
        STEPS,
    );
}

#[test]
fn static_obstacles_euler_match_cpu() {
    check(
        "static_euler",
        static_scene(Integrator::Euler),
        FluidConfig::default(),
        STEPS,
        STEPS,
    );
}

/// Several steps per call and per submission (a batch holds 16), and one
/// step per call.
#[test]
fn moving_obstacles_leapfrog_match_cpu() {
    for (sort, per_call) in [(SortKind::Counting, STEPS), (SortKind::Bitonic, 1)] {
        let config = FluidConfig {
            sort,
            ..FluidConfig::default()
        };
        check(
            &format!("moving_leapfrog_{}_{per_call}_per_call", sort.name()),
            moving_scene(Integrator::Leapfrog),
            config,
            STEPS,
            per_call,
        );
    }
}

#[test]
fn moving_obstacles_euler_match_cpu() {
    check(
        "moving_euler",
        moving_scene(Integrator::Euler),
        FluidConfig::default(),
        EULER_PADDLE_STEPS,
        7,
    );
}

fn sphere(center: [f32; 3], radius: f32, velocity: [f32; 3]) -> Obstacle<Vec3> {
    Obstacle {
        shape: Shape::Sphere {
            center: Vec3::new(center[0], center[1], center[2]),
            radius,
        },
        velocity: Vec3::new(velocity[0], velocity[1], velocity[2]),
    }
}

#[test]
fn bad_obstacles_are_refused_and_change_nothing() {
    let Some(gpu) = common::gpu("bad_obstacles") else {
        return;
    };
    let (s, list) = static_scene(Integrator::Leapfrog);
    let mut fluid = s.fluid(&gpu, FluidConfig::default()).expect("fluid");
    fluid.set_obstacles(&list).expect("obstacles");
    let core_err = GpuError::Core;
    let nan = f32::NAN;
    let bad: Vec<(Vec<Obstacle<Vec3>>, GpuError)> = vec![
        (
            vec![sphere([0.1; 3], 0.0, [0.0; 3])],
            core_err(spatium::Error::InvalidShape),
        ),
        (
            vec![sphere([0.1; 3], -1.0, [0.0; 3])],
            core_err(spatium::Error::InvalidShape),
        ),
        (
            vec![sphere([0.1, nan, 0.1], 0.1, [0.0; 3])],
            core_err(spatium::Error::NonFinite),
        ),
        (
            vec![sphere([0.1; 3], 0.1, [0.0, f32::INFINITY, 0.0])],
            core_err(spatium::Error::NonFinite),
        ),
        (
            vec![
                sphere([0.1; 3], 0.1, [0.0; 3]),
                Obstacle::fixed(Shape::Triangle([
                    Vec3::ZERO,
                    Vec3::ZERO,
                    Vec3::new(1.0, 1.0, 1.0),
                ])),
            ],
            core_err(spatium::Error::InvalidShape),
        ),
        (
            vec![sphere([0.1; 3], 0.1, [0.0; 3]); MAX_OBSTACLES + 1],
            GpuError::TooManyObstacles {
                max: MAX_OBSTACLES,
                requested: MAX_OBSTACLES + 1,
            },
        ),
    ];
    for (obstacles, want) in bad {
        assert_eq!(fluid.set_obstacles(&obstacles), Err(want.clone()));
        assert_eq!(fluid.obstacles(), &list[..], "{want:?} changed the mirror");
        assert_eq!(fluid.read_obstacles().expect("read"), list, "{want:?}");
    }
    // The maximum is accepted; none removes them.
    let most = vec![sphere([0.1; 3], 0.1, [0.0; 3]); MAX_OBSTACLES];
    fluid.set_obstacles(&most).expect("the maximum");
    assert_eq!(fluid.read_obstacles().expect("read"), most);
    fluid.set_obstacles(&[]).expect("none");
    assert!(fluid.obstacles().is_empty());
    assert!(fluid.read_obstacles().expect("read").is_empty());
    fluid.step(2).expect("steps without obstacles");
}

/// A moving obstacle about to overflow refuses the step as
/// `Obstacles::advance` does, and nothing moves.
#[test]
fn an_obstacle_leaving_the_finite_range_refuses_the_step() {
    let Some(gpu) = common::gpu("overflow") else {
        return;
    };
    let (s, _) = static_scene(Integrator::Leapfrog);
    let mut fluid = s.fluid(&gpu, FluidConfig::default()).expect("fluid");
    // Δ = 3·10³⁸ · 0.005 = 1.5·10³⁶ per step: the third step overflows.
    let list = vec![sphere([3.37e38, 0.1, 0.1], 0.1, [3.0e38, 0.0, 0.0])];
    fluid.set_obstacles(&list).expect("obstacles");
    assert_eq!(
        fluid.step(3),
        Err(GpuError::Core(spatium::Error::NonFinite))
    );
    assert_eq!(fluid.steps(), 0);
    assert_eq!(fluid.obstacles(), &list[..]);
}

/// The host mirror equals the device's buffer after steps in one and in
/// several submissions, and after a change of `dt`; both equal the core's
/// `Obstacles::advance`, bit for bit.
#[test]
fn mirror_equals_the_device_copy() {
    let Some(gpu) = common::gpu("mirror") else {
        return;
    };
    let (s, _) = static_scene(Integrator::Leapfrog);
    let mut fluid = s.fluid(&gpu, FluidConfig::default()).expect("fluid");
    let list = vec![
        sphere([0.1, 0.45, 0.1], 0.03, [0.13, -0.31, 0.07]),
        Obstacle {
            shape: Shape::Box(aabb([0.05, 0.3, 0.05], [0.1, 0.35, 0.12])),
            velocity: Vec3::new(-0.011, 0.37, 0.0),
        },
        Obstacle::fixed(Shape::Box(aabb([0.5, 0.0, 0.0], [0.6, 0.1, 0.3]))),
        Obstacle {
            shape: Shape::Triangle([
                Vec3::new(0.3, 0.45, 0.0),
                Vec3::new(0.35, 0.45, 0.1),
                Vec3::new(0.3, 0.48, 0.2),
            ]),
            velocity: Vec3::new(0.003, -0.2, 0.1),
        },
    ];
    fluid.set_obstacles(&list).expect("obstacles");
    let mut cpu = Obstacles::new(
        vec![Obstacle::EMPTY; list.len()],
        BruteForceBroadPhase::new(vec![BruteSlot::<Aabb3>::EMPTY; list.len()]),
    );
    for o in &list {
        cpu.add(*o).expect("obstacle");
    }
    let mut dt = s.params.dt;
    for (k, new_dt) in [(7u32, None), (20, None), (5, Some(0.0037f32)), (3, None)] {
        if let Some(t) = new_dt {
            let mut p = *fluid.params();
            p.dt = t;
            fluid.set_params(p).expect("params");
            dt = t;
        }
        fluid.step(k).expect("steps");
        for _ in 0..k {
            cpu.advance(dt).expect("advance");
        }
        let back = fluid.read_obstacles().expect("read");
        assert_eq!(back, fluid.obstacles(), "after {} steps", fluid.steps());
        assert_eq!(back, cpu.as_slice(), "after {} steps", fluid.steps());
    }
    assert_ne!(fluid.obstacles()[0], list[0], "the sphere moved");
    assert_eq!(fluid.obstacles()[2], list[2], "the static box stayed");
}

/// The floor of the tolerances with obstacles: the CPU solver against
/// itself, once with the `CellSortedHash` and once with brute force
/// (another pair order, so other roundings).
#[test]
fn cpu_pair_order_floor_with_obstacles() {
    let scenes = [
        ("static", Integrator::Leapfrog, STEPS),
        ("static", Integrator::Euler, STEPS),
        ("moving", Integrator::Leapfrog, STEPS),
        ("moving", Integrator::Euler, EULER_PADDLE_STEPS),
    ];
    for (name, integrator, steps) in scenes {
        let make = if name == "static" {
            static_scene
        } else {
            moving_scene
        };
        let (s, list) = make(integrator);
        let (hx, hs, _, _) = cpu_run(&s, &list, steps);
        let mut brute = BruteForceNeighbors::new(vec![Vec3::ZERO; s.positions.len()]);
        let (bx, bs, _, _) = cpu_run_with(&mut brute, &s, &list, steps);
        let d = common::deviation((&bx, &bs), (&hx, &hs), s.params.rest_density);
        eprintln!(
            "CPU brute force vs CellSortedHash, {name} {integrator:?}, {steps} steps: max |Δx| {:.3e} m, \
             |Δv| {:.3e} m/s, |Δρ|/ρ₀ {:.3e}; start |Δx| {:.3e} m, |Δv| {:.3e} m/s; relative pressure \
             {:.3e}, normal {:.3e}, acceleration {:.3e}",
            d.position,
            d.velocity,
            d.density,
            d.start_position,
            d.start_velocity,
            d.pressure,
            d.normal,
            d.acceleration
        );
        // The floor lies within the tolerances the GPU is held to.
        assert!(d.position <= OBSTACLE_POSITION_TOL && d.velocity <= OBSTACLE_VELOCITY_TOL);
        assert!(d.density <= DENSITY_TOL && d.normal <= RELATIVE_TOL);
    }
}
