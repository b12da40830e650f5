//! SPH differential tests: one force evaluation of `spatium::sph::Fluid`
//! over every neighbour search of the crate, on every point scenario in 3D
//! and 2D, against the `O(N²)` `f64` oracle of `spatium_host::sph`
//! (the seed's equations written out particle by particle, its own kernels).
//! Densities, pressures, normals and accelerations must agree to `f32`
//! rounding. Then whole steps: every neighbour search must give the same
//! trajectory as brute force to rounding, with obstacles behind every broad
//! phase.

use spatium::hhash::{HashConfig, Hierarchical, Multilevel};
use spatium::kdtree::{KdBroadPhase, KdConfig, KdRecord, KdSlot};
use spatium::sph::boundary::{Obstacle, Obstacles, Shape};
use spatium::sph::{EquationOfState, Fluid, Integrator, ParticleState, SphParams, StepControl};
use spatium::table::table_len;
use spatium::{
    BoundingBox, BroadPhase, BruteForceBroadPhase, BruteForceNeighbors, HhgConfig, NeighborPair,
    NeighborSearch, PairCache, Point, Vec2, Vec3, VerletCache,
};
use spatium_host::scenarios::point_scenarios;
use spatium_host::{PointScenario, Rng, make, sph};

/// Parameters for a scenario: `h` its radius, a mass giving a lattice of
/// spacing `h/2` the rest density, the rest of the physics varied by `variant`.
fn params<P: Point>(sc: &PointScenario<P>, variant: usize) -> SphParams<P> {
    let (mut lo, mut hi) = (sc.points[0], sc.points[0]);
    for p in &sc.points {
        lo = lo.min(*p);
        hi = hi.max(*p);
    }
    let pad = P::from_fn(|_| sc.radius);
    let domain = P::Aabb::try_new(lo - pad, hi + pad).unwrap();
    let h = sc.radius;
    let mut p = SphParams::seed(domain, 0.5 * h).unwrap();
    p.integrator = Integrator::Euler;
    p.gravity = P::from_fn(|k| [0.5, -9.81, 0.25][k]);
    p.viscosity = 0.05;
    match variant % 4 {
        // Half the lattice density: most particles are compressed.
        0 => p.rest_density = 0.5,
        1 => p.surface_tension = 0.0,
        2 => {
            p.eos = EquationOfState::IdealGas;
            p.stiffness = 3.0;
        }
        _ => {
            p.clamp_negative_pressure = false;
            p.surface_tension = 2.5;
        }
    }
    p
}

fn velocities<P: Point>(n: usize, seed: u64) -> Vec<P> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| P::from_fn(|_| rng.range(-1.0, 1.0)))
        .collect()
}

fn close(got: f64, want: f64, scale: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * scale.max(f64::MIN_POSITIVE)
}

/// One Euler step over `ns`; the state it leaves holds the evaluation at the
/// starting positions, which is compared with the oracle's.
fn check_evaluation<P: Point, N: NeighborSearch<P>>(
    what: &str,
    sc: &PointScenario<P>,
    p: &SphParams<P>,
    v: &[P],
    want: &[sph::Evaluated],
    ns: &mut N,
) {
    let n = sc.points.len();
    let mut fluid = Fluid::new(vec![P::ZERO; n], vec![ParticleState::EMPTY; n], *p);
    // Random clouds, not a fluid: their clumps are far denser than any
    // stability bound, and only the evaluation is compared.
    fluid.set_control(StepControl::UNCHECKED).unwrap();
    for (x, vi) in sc.points.iter().zip(v) {
        fluid.push(*x, *vi).unwrap();
    }
    fluid.step(ns, &mut (), &mut ()).unwrap();
    for (i, (s, w)) in fluid.state().iter().zip(want).enumerate() {
        let ctx = || format!("{what}: particle {i}: got {s:?}, want {w:?}");
        assert!(
            close(f64::from(s.density), w.density, w.density, 2e-6),
            "density: {}",
            ctx()
        );
        let pscale = w.pressure.abs() + f64::from(p.stiffness);
        assert!(
            close(f64::from(s.pressure), w.pressure, pscale, 2e-5),
            "pressure: {}",
            ctx()
        );
        let nscale = w.normal.iter().map(|c| c.abs()).sum::<f64>() + 1e-3;
        for k in 0..P::DIM {
            assert!(
                close(f64::from(s.normal.coord(k)), w.normal[k], nscale, 1e-4),
                "normal[{k}]: {}",
                ctx()
            );
            assert!(
                close(
                    f64::from(s.acceleration.coord(k)),
                    w.acceleration[k],
                    w.magnitude,
                    2e-4
                ),
                "acceleration[{k}]: {}",
                ctx()
            );
        }
    }
}

fn evaluation_on_all_scenarios<P: Point>() {
    let mut checked = 0;
    for (s, sc) in point_scenarios::<P>(300, 0x5EED).iter().enumerate() {
        let n = sc.points.len();
        let v = velocities::<P>(n, s as u64);
        let p = params(sc, s);
        let want = sph::evaluate(&p, &sc.points, &v);
        let table = table_len(n, 2);
        let what = |name: &str| format!("{}/{name}/variant {}", sc.name, s % 4);
        check_evaluation(
            &what("brute"),
            sc,
            &p,
            &v,
            &want,
            &mut BruteForceNeighbors::new(vec![P::ZERO; n]),
        );
        check_evaluation(
            &what("sorted"),
            sc,
            &p,
            &v,
            &want,
            &mut make::cell_sorted::<P>(n, table),
        );
        check_evaluation(
            &what("linked"),
            sc,
            &p,
            &v,
            &want,
            &mut make::linked::<P>(n, table),
        );
        check_evaluation(
            &what("bucketed"),
            sc,
            &p,
            &v,
            &want,
            &mut make::bucketed::<P, 400>(n, table),
        );
        let cfg = HashConfig::new(p.h, 1).unwrap();
        check_evaluation(
            &what("hierarchical"),
            sc,
            &p,
            &v,
            &want,
            &mut make::class_hash::<Hierarchical, P::Aabb>(0, table, n, n, cfg),
        );
        check_evaluation(
            &what("multilevel"),
            sc,
            &p,
            &v,
            &want,
            &mut make::class_hash::<Multilevel, P::Aabb>(0, 64, n, n, cfg),
        );
        checked += 1;
    }
    assert_eq!(checked, 14);
}

#[test]
fn evaluation_matches_oracle_3d() {
    evaluation_on_all_scenarios::<Vec3>();
}

#[test]
fn evaluation_matches_oracle_2d() {
    evaluation_on_all_scenarios::<Vec2>();
}

/// The solids of the trajectory scene: a sphere, a box on the floor and a
/// triangle.
fn scene_solids<P: Point>() -> Vec<Obstacle<P>> {
    let at = |c: [f32; 3]| P::from_fn(|k| c[k]);
    let third = if P::DIM == 3 {
        [0.1, 0.3, 0.35]
    } else {
        [0.1, 0.24, 0.0]
    };
    vec![
        Obstacle::fixed(Shape::Sphere {
            center: at([0.2, 0.1, 0.2]),
            radius: 0.06,
        }),
        Obstacle::fixed(Shape::Box(
            P::Aabb::try_new(at([0.28, 0.0, 0.05]), at([0.36, 0.12, 0.35])).unwrap(),
        )),
        Obstacle::fixed(Shape::Triangle([
            at([0.02, 0.3, 0.05]),
            at([0.18, 0.22, 0.2]),
            at(third),
        ])),
    ]
}

/// Positions and velocities of every particle.
type State<P> = (Vec<P>, Vec<P>);

fn scene_fluid<P: Point>(state: Option<&State<P>>) -> Fluid<P, Vec<P>, Vec<ParticleState<P>>> {
    let s = 0.02;
    let domain = P::Aabb::try_new(P::ZERO, P::from_fn(|k| [0.4, 0.6, 0.4][k])).unwrap();
    let p = SphParams::seed(domain, s).unwrap();
    let cap = 2000;
    let mut fluid = Fluid::new(vec![P::ZERO; cap], vec![ParticleState::EMPTY; cap], p);
    match state {
        None => {
            let lo = P::from_fn(|k| [0.05, 0.3, 0.05][k]);
            let hi = P::from_fn(|k| [0.35, 0.45, 0.3][k]);
            fluid
                .fill_block(P::Aabb::try_new(lo, hi).unwrap(), s, P::ZERO)
                .unwrap();
        }
        Some((x, v)) => {
            for (x, v) in x.iter().zip(v) {
                fluid.push(*x, *v).unwrap();
            }
        }
    }
    fluid
}

fn state_of<P: Point>(f: &Fluid<P, Vec<P>, Vec<ParticleState<P>>>) -> State<P> {
    (
        f.positions().to_vec(),
        f.state().iter().map(|s| s.velocity).collect(),
    )
}

fn solids_in<P: Point, B: BroadPhase<P::Aabb>>(bp: B) -> Obstacles<P, B, Vec<Obstacle<P>>> {
    let mut solids = Obstacles::new(vec![Obstacle::EMPTY; 8], bp);
    for o in scene_solids::<P>() {
        solids.add(o).unwrap();
    }
    solids
}

/// The reference run: a block falling onto the solids, 60 leapfrog steps,
/// brute-force neighbours and broad phase; every state from the first.
fn reference<P: Point>() -> Vec<State<P>> {
    let mut f = scene_fluid::<P>(None);
    let mut ns = BruteForceNeighbors::new(vec![P::ZERO; 2000]);
    let mut solids = solids_in::<P, _>(BruteForceBroadPhase::new(make::brute_slots::<P::Aabb>(8)));
    let mut states = vec![state_of(&f)];
    for _ in 0..60 {
        f.step(&mut ns, &mut solids, &mut ()).unwrap();
        states.push(state_of(&f));
    }
    states
}

/// Replays every step of the reference from its starting state with
/// neighbour search `ns` and the solids behind `bp`; returns the largest
/// deviation of a position or velocity from the reference's next state.
fn replay<P: Point, N: NeighborSearch<P>, B: BroadPhase<P::Aabb>>(
    states: &[State<P>],
    ns: &mut N,
    bp: B,
) -> f32 {
    let mut solids = solids_in::<P, _>(bp);
    let mut worst = 0.0f32;
    for k in 0..states.len() - 1 {
        let mut f = scene_fluid::<P>(Some(&states[k]));
        f.step(ns, &mut solids, &mut ()).unwrap();
        let (x, v) = state_of(&f);
        let (rx, rv) = &states[k + 1];
        for (a, b) in x.iter().zip(rx).chain(v.iter().zip(rv)) {
            for c in 0..P::DIM {
                worst = worst.max((a.coord(c) - b.coord(c)).abs());
            }
        }
    }
    worst
}

/// Every neighbour search and every broad phase for the solids reproduces
/// each step of the brute-force run to 5·10⁻⁵. Pair sums in another order
/// round differently: a velocity moves by about `Δt·ε·Σ|aᵢⱼ|`; the largest
/// deviation seen is 1.5·10⁻⁵ (3D, in the impact, where accelerations reach
/// 740 m/s²). A missing or doubled pair moves a velocity by `Δt·|aᵢⱼ|`,
/// 5·10⁻³ for a pair term of 1 m/s², a hundred times the bound.
/// The replay restarts each step from the reference state, so the impact
/// (which amplifies any difference exponentially in a free run) can neither
/// hide a real discrepancy nor magnify rounding.
fn trajectories<P: Point>() {
    let cap = 2000;
    let table = table_len(cap, 2);
    let states = reference::<P>();
    let brute_bp = || BruteForceBroadPhase::new(make::brute_slots::<P::Aabb>(8));
    let brute_ns = || BruteForceNeighbors::new(vec![P::ZERO; cap]);
    let cfg = HashConfig::new(0.04, 1).unwrap();
    let obj_cfg = HashConfig::from_sizes(0.02, [0.12, 0.16, 0.3]).unwrap();
    let hcfg = HhgConfig::DEFAULT;
    let runs = [
        (
            "sorted",
            replay(&states, &mut make::cell_sorted::<P>(cap, table), brute_bp()),
        ),
        (
            "linked",
            replay(&states, &mut make::linked::<P>(cap, table), brute_bp()),
        ),
        (
            "sorted behind a pair cache",
            replay(
                &states,
                &mut PairCache::new(
                    make::cell_sorted::<P>(cap, table),
                    vec![NeighborPair::EMPTY; 40 * cap],
                ),
                brute_bp(),
            ),
        ),
        (
            "sorted behind a Verlet skin",
            replay(
                &states,
                &mut VerletCache::new(
                    make::cell_sorted::<P>(cap, table),
                    vec![P::ZERO; cap],
                    vec![0u32; 80 * cap],
                    vec![NeighborPair::EMPTY; 40 * cap],
                    0.01,
                ),
                brute_bp(),
            ),
        ),
        (
            "bucketed",
            replay(
                &states,
                &mut make::bucketed::<P, 128>(cap, table),
                brute_bp(),
            ),
        ),
        (
            "hierarchical",
            replay(
                &states,
                &mut make::class_hash::<Hierarchical, P::Aabb>(0, table, cap, cap, cfg),
                brute_bp(),
            ),
        ),
        (
            "multilevel",
            replay(
                &states,
                &mut make::class_hash::<Multilevel, P::Aabb>(0, table, cap, cap, cfg),
                brute_bp(),
            ),
        ),
        (
            "solids in hhg",
            replay(
                &states,
                &mut brute_ns(),
                make::hhg::<P::Aabb>(8, 2 * hcfg.arena_words_for::<P::Aabb>(8), hcfg),
            ),
        ),
        (
            "solids in kdtree",
            replay(
                &states,
                &mut brute_ns(),
                KdBroadPhase::<P::Aabb, u64, _, _>::new(
                    vec![KdSlot::EMPTY; 8],
                    vec![KdRecord::EMPTY; 512],
                    vec![KdRecord::EMPTY; 512],
                    KdConfig::DEFAULT,
                ),
            ),
        ),
        (
            "solids in hierarchical hashing",
            replay(
                &states,
                &mut brute_ns(),
                make::class_hash::<Hierarchical, P::Aabb>(8, 64, 256, 0, obj_cfg),
            ),
        ),
        (
            "solids in multilevel hashing",
            replay(
                &states,
                &mut brute_ns(),
                make::class_hash::<Multilevel, P::Aabb>(8, 64, 256, 0, obj_cfg),
            ),
        ),
    ];
    for (name, d) in runs {
        assert!(
            d < 5e-5,
            "{}D {name}: deviates from brute force by {d}",
            P::DIM
        );
    }
    // Not a trivial scene: the fluid fell and met the solids.
    let fell = states[0]
        .0
        .iter()
        .zip(&states[60].0)
        .map(|(a, b)| a.coord(1) - b.coord(1))
        .fold(0.0, f32::max);
    assert!(fell > 0.05, "fell {fell}");
    let touching = states[60]
        .0
        .iter()
        .filter(|x| {
            scene_solids::<P>()
                .iter()
                .any(|o| o.shape.contact(**x, P::ZERO, 0.011, None).is_some())
        })
        .count();
    assert!(touching > 20, "{touching} particles touch the solids");
}

#[test]
fn trajectories_match_brute_force_3d() {
    trajectories::<Vec3>();
}

#[test]
fn trajectories_match_brute_force_2d() {
    trajectories::<Vec2>();
}

/// `Fluid::renumber` moves every particle's position and state to its new
/// id, refuses anything but a permutation of the ids (changing nothing), and
/// in a cell-sorted hash's `spatial_order` makes the next build over the
/// same positions a copy.
fn renumbering<P: Point>() {
    let mut f = scene_fluid::<P>(None);
    let mut ns = spatium_host::make::cell_sorted::<P>(2000, table_len(2000, 2));
    f.step(&mut ns, &mut (), &mut ()).unwrap();
    let n = f.len();
    let before: Vec<(P, P, f32)> = f
        .positions()
        .iter()
        .zip(f.state())
        .map(|(x, s)| (*x, s.velocity, s.density))
        .collect();
    let mut rng = Rng::new(7);
    let mut order: Vec<u32> = (0..n as u32).collect();
    rng.shuffle(&mut order);
    let unchanged = |f: &Fluid<P, Vec<P>, Vec<ParticleState<P>>>| {
        f.positions()
            .iter()
            .zip(f.state())
            .zip(&before)
            .all(|((x, s), b)| *x == b.0 && s.velocity == b.1 && s.density == b.2)
    };
    let mut dup = order.clone();
    dup[3] = dup[5];
    assert!(f.renumber(dup).is_err());
    assert!(f.renumber(order[..n - 1].iter().copied()).is_err());
    assert!(f.renumber(order.iter().copied().chain([0])).is_err());
    let mut past = order.clone();
    past[0] = n as u32;
    assert!(f.renumber(past).is_err());
    assert!(unchanged(&f));
    f.renumber(order.iter().copied()).unwrap();
    for (k, &old) in order.iter().enumerate() {
        let b = before[old as usize];
        assert_eq!(f.positions()[k], b.0);
        assert_eq!(f.state()[k].velocity, b.1);
        assert_eq!(f.state()[k].density, b.2);
    }
    ns.build(f.positions(), f.params().h).unwrap();
    assert!(!ns.input_was_sorted());
    let mut spatial = vec![0u32; ns.len()];
    ns.spatial_order(&mut spatial).unwrap();
    f.renumber(spatial.iter().copied()).unwrap();
    ns.build(f.positions(), f.params().h).unwrap();
    assert!(ns.input_was_sorted());
    // A renumbered fluid steps like the original up to rounding.
    f.step(&mut ns, &mut (), &mut ()).unwrap();
}

#[test]
fn renumbering_3d() {
    renumbering::<Vec3>();
}

#[test]
fn renumbering_2d() {
    renumbering::<Vec2>();
}
