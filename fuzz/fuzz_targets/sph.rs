//! Fuzzing of the SPH solver (`spatium::sph`), in 2D and 3D, with raw `f32`
//! inputs everywhere (NaN, infinities, huge and tiny values).
//!
//! The input decodes into operations on a small fluid (capacity 32) with a
//! uniform hash sized for it, a second hash too small for it, obstacles
//! behind a hierarchical hash grid, and a pipe emitter: pushes, blocks,
//! close-packed blocks (`Packing::Close`, the parameters fitted to them),
//! emitter creation and emission, steps (with a uniform hash, or with a
//! `DenseGrid` over the domain made periodic along some axes, or with
//! boundary-particle walls sampled around the domain), parameter
//! changes (raw fields, periodic axes),
//! obstacle additions, replacements and moves, and kernel evaluations.
//! Checked after every operation: no panic; a refused push, block, step,
//! parameter change or obstacle change leaves every particle's position
//! and velocity bit for bit as it was; every successful step leaves every
//! particle finite and inside the walls; the emitter's count equals the
//! particles it added; the length never exceeds the capacity; `validate()`
//! passes for the fluid and the obstacles.

#![no_main]

use core::cmp::Ordering;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use spatium::sph::boundary::{Obstacle, Obstacles, Shape};
use spatium::sph::kernel::Kernels;
use spatium::sph::source::{Emitter, Lattice, Packing};
use spatium::sph::walls::{BoundaryParticles, BoundaryState, Face, Slip, TankFaces};
use spatium::sph::{EquationOfState, Fluid, Integrator, ParticleState, SphParams, StepControl};
use spatium::uniform::{CellRecord, CellSortedHash, DenseGrid, SortedParticle, TableSlot};
use spatium::{
    BoundingBox, HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid, Point, Validate, Vec2, Vec3,
};

const CAP: usize = 32;
const SOLIDS: usize = 6;
const MAX_OPS: usize = 64;
/// Boundary particles the walls hold.
const WALLS: usize = 512;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Op {
    Push([f32; 3], [f32; 3]),
    Fill([f32; 3], [f32; 3], f32),
    /// A block filled close packed, the parameters fitted to its lattice
    /// first (a refused fit or fill changes no particle).
    FillClose([f32; 3], [f32; 3], f32),
    NewEmitter([f32; 3], [f32; 3], f32, f32, f32, u8),
    Emit(f32),
    Step,
    StepSmall,
    /// Makes the domain periodic along the axes of the mask (bits past the
    /// dimension are refused by `set_params`).
    Periodic(u8),
    /// A step with a `DenseGrid` over the fluid's periodic box.
    StepDense,
    /// Samples boundary-particle walls around the domain: the faces closed
    /// by the bits of the first mask, no-slip by the second, the raw
    /// spacing and layer count (refusals change nothing).
    Walls(u8, u8, f32, u8),
    /// A step with the boundary particles and the obstacles.
    StepWalls,
    /// Samples a solid as boundary particles (raw shape, velocity, spacing,
    /// layers).
    WallShape(RawShape, [f32; 3], f32, u8),
    /// Moves the boundary particles by their velocities.
    WallAdvance(f32),
    Params(RawParams),
    Seed(f32, bool),
    AddSolid(RawShape, [f32; 3]),
    SetSolid(u8, RawShape, [f32; 3]),
    Advance(f32),
    Kernel(f32, f32),
    Clear,
    /// Replaces the time-step control with raw values (refused ones change
    /// nothing); the steps after it are judged against it.
    Control(RawControl),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct RawControl {
    adaptive: bool,
    safety: f32,
    dt_min: f32,
    dt_max: f32,
    max_density_ratio: f32,
    max_cfl: f32,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct RawParams {
    h: f32,
    gradient_correction: f32,
    mass: f32,
    rest_density: f32,
    stiffness: f32,
    ideal_gas: bool,
    clamp: bool,
    viscosity: f32,
    surface_tension: f32,
    gravity: [f32; 3],
    damping: f32,
    dt: f32,
    euler: bool,
    domain: ([f32; 3], [f32; 3]),
    particle_radius: f32,
    periodic: u8,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum RawShape {
    Sphere([f32; 3], f32),
    Box([f32; 3], [f32; 3]),
    Triangle([f32; 3], [f32; 3], [f32; 3]),
}

#[derive(Arbitrary, Debug)]
struct Input {
    three_d: bool,
    ops: Vec<Op>,
}

type Hash<P> = CellSortedHash<P, Vec<TableSlot>, Vec<SortedParticle<P>>, Vec<CellRecord<P>>>;
type Grid<B> = HierarchicalHashGrid<B, Vec<HhgSlot<B>>, Vec<HhgRecord<B>>, Vec<u32>>;

fn at<P: Point>(c: [f32; 3]) -> P {
    P::from_fn(|k| c[k])
}

fn hash<P: Point>(cap: usize, table: usize) -> Hash<P> {
    CellSortedHash::new(
        vec![TableSlot::EMPTY; table],
        vec![SortedParticle::EMPTY; cap],
        vec![CellRecord::EMPTY; cap],
    )
}

fn shape<P: Point>(s: RawShape) -> Shape<P> {
    match s {
        RawShape::Sphere(c, r) => Shape::Sphere {
            center: at(c),
            radius: r,
        },
        // An inverted or NaN box is refused by `Obstacles::add`'s check.
        RawShape::Box(lo, hi) => {
            Shape::Box(P::Aabb::try_new(at(lo), at(hi)).unwrap_or(P::Aabb::NAN))
        }
        RawShape::Triangle(a, b, c) => Shape::Triangle([at(a), at(b), at(c)]),
    }
}

fn snapshot<P: Point>(f: &Fluid<P, Vec<P>, Vec<ParticleState<P>>>) -> Vec<[u32; 6]> {
    f.positions()
        .iter()
        .zip(f.state())
        .map(|(x, s)| {
            let mut b = [0u32; 6];
            for k in 0..P::DIM {
                b[k] = x.coord(k).to_bits();
                b[3 + k] = s.velocity.coord(k).to_bits();
            }
            b
        })
        .collect()
}

/// After a successful step: every particle finite and inside the walls.
fn check_stepped<P: Point>(fluid: &Fluid<P, Vec<P>, Vec<ParticleState<P>>>) {
    // The monitor's contract: a step that returned `Ok` stayed within the
    // control's bounds (no diverging step reports success).
    if let Some(r) = fluid.last_report() {
        let c = fluid.control();
        // The judge's comparisons (a NaN figure passes them, as there).
        let over = |x: f32, bound: f32| x.partial_cmp(&bound) == Some(Ordering::Greater);
        assert!(
            !over(r.max_density_ratio, c.max_density_ratio),
            "{r:?} {c:?}"
        );
        assert!(!over(r.cfl, c.max_cfl), "{r:?} {c:?}");
    }
    let d = fluid.params().domain;
    for (x, s) in fluid.positions().iter().zip(fluid.state()) {
        assert!(x.is_finite() && s.velocity.is_finite());
        for k in 0..P::DIM {
            assert!(x.coord(k) >= d.min().coord(k) && x.coord(k) <= d.max().coord(k));
        }
    }
}

fn run<P: Point>(ops: &[Op]) {
    let domain = P::Aabb::try_new(P::ZERO, P::from_fn(|_| 1.0)).unwrap();
    let mut fluid = Fluid::new(
        vec![P::ZERO; CAP],
        vec![ParticleState::EMPTY; CAP],
        SphParams::seed(domain, 0.1).unwrap(),
    );
    let mut ns = hash::<P>(CAP, 64);
    let mut small = hash::<P>(CAP / 4, 8);
    let cfg = HhgConfig::DEFAULT;
    let grid: Grid<P::Aabb> = HierarchicalHashGrid::new(
        vec![HhgSlot::EMPTY; SOLIDS],
        vec![HhgRecord::EMPTY; SOLIDS],
        vec![0; 4 * cfg.arena_words_for::<P::Aabb>(SOLIDS)],
        cfg,
    );
    let mut solids = Obstacles::new(vec![Obstacle::EMPTY; SOLIDS], grid);
    let mut pipe: Option<Emitter<P>> = None;
    let mut walls = BoundaryParticles::new(
        vec![P::ZERO; WALLS],
        vec![BoundaryState::EMPTY; WALLS],
        hash::<P>(WALLS, 1024),
    );
    for op in ops.iter().take(MAX_OPS) {
        let before = snapshot(&fluid);
        let len = fluid.len();
        let mut must_keep = false;
        match *op {
            Op::Push(x, v) => must_keep = fluid.push(at(x), at(v)).is_err(),
            Op::Fill(lo, hi, s) => {
                if let Ok(region) = P::Aabb::try_new(at(lo), at(hi)) {
                    match fluid.fill_block(region, s, P::ZERO) {
                        Ok(n) => assert_eq!(fluid.len(), len + n),
                        Err(_) => must_keep = true,
                    }
                }
            }
            Op::FillClose(lo, hi, s) => {
                let lattice = P::Aabb::try_new(at(lo), at(hi))
                    .and_then(|region| Lattice::<P>::packed(region, s, Packing::Close));
                if let Ok(lattice) = lattice {
                    if lattice.len() <= 4 * CAP {
                        // Every point inside the block, as many as `len`.
                        let mut n = 0;
                        for x in lattice.points() {
                            assert!(
                                (0..P::DIM).all(|k| x.coord(k) >= lo[k] && x.coord(k) <= hi[k]),
                                "{x:?} outside the block"
                            );
                            n += 1;
                        }
                        assert_eq!(n, lattice.len());
                    }
                    if let Ok(p) = fluid.params().fit_lattice(&lattice) {
                        fluid
                            .set_params(p)
                            .expect("fit_lattice checks the parameters");
                    }
                    match fluid.fill_lattice(&lattice, P::ZERO) {
                        Ok(n) => assert_eq!(fluid.len(), len + n),
                        Err(_) => must_keep = true,
                    }
                } else {
                    must_keep = true;
                }
            }
            Op::NewEmitter(o, d, speed, radius, spacing, budget) => {
                pipe = Emitter::new(at(o), at(d), speed, radius, spacing, u32::from(budget)).ok();
            }
            Op::Emit(dt) => {
                if let Some(e) = pipe.as_mut() {
                    let e0 = e.emitted();
                    let _ = e.emit(&mut fluid, dt);
                    assert_eq!(fluid.len() - len, (e.emitted() - e0) as usize);
                }
            }
            Op::Step | Op::StepSmall => {
                let r = if matches!(op, Op::Step) {
                    fluid.step(&mut ns, &mut solids, &mut ())
                } else {
                    fluid.step(&mut small, &mut solids, &mut ())
                };
                match r {
                    Ok(()) => check_stepped(&fluid),
                    Err(_) => must_keep = true,
                }
            }
            Op::Periodic(axes) => {
                let mut p = *fluid.params();
                p.periodic = axes;
                let old = *fluid.params();
                if fluid.set_params(p).is_err() {
                    assert_eq!(*fluid.params(), old);
                }
                must_keep = true;
            }
            Op::StepDense => {
                let params = *fluid.params();
                let Ok(period) = params.periodic_box() else {
                    continue;
                };
                type Dense<P> = DenseGrid<P, Vec<SortedParticle<P>>, Vec<u32>, Vec<u32>>;
                // A grid of at most 2^16 cells (finer ones are refused with
                // `BufferTooSmall`, which the step then reports).
                let cells =
                    Dense::<P>::cells_needed(&period, params.h).map_or(1, |c| c.min(1 << 16));
                let mut grid: Dense<P> = DenseGrid::new(
                    period,
                    vec![SortedParticle::EMPTY; CAP],
                    vec![0; CAP],
                    vec![0; cells],
                );
                match fluid.step(&mut grid, &mut solids, &mut ()) {
                    Ok(()) => check_stepped(&fluid),
                    Err(_) => must_keep = true,
                }
            }
            Op::Walls(closed, no_slip, spacing, layers) => {
                let mut faces = TankFaces::closed(Slip::FreeSlip);
                for (k, f) in faces.0.iter_mut().enumerate() {
                    *f = if closed & (1 << k) == 0 {
                        Face::Open
                    } else if no_slip & (1 << k) != 0 {
                        Face::Wall(Slip::NoSlip)
                    } else {
                        Face::Wall(Slip::FreeSlip)
                    };
                }
                let had = walls.len();
                let d = fluid.params().domain;
                match walls.sample_box(d, spacing, u32::from(layers), faces) {
                    Ok(n) => assert_eq!(walls.len(), had + n),
                    Err(_) => assert_eq!(walls.len(), had),
                }
                must_keep = true;
            }
            Op::WallShape(raw, v, spacing, layers) => {
                let had = walls.len();
                let r = walls.sample_shape(
                    &shape::<P>(raw),
                    at(v),
                    spacing,
                    u32::from(layers),
                    Slip::NoSlip,
                );
                match r {
                    Ok(n) => assert_eq!(walls.len(), had + n),
                    Err(_) => assert_eq!(walls.len(), had),
                }
                must_keep = true;
            }
            Op::WallAdvance(dt) => {
                let before: Vec<P> = walls.positions().to_vec();
                if walls.advance(dt).is_err() {
                    assert!(before == walls.positions());
                }
                assert!(walls.positions().iter().all(|x| x.is_finite()));
                must_keep = true;
            }
            Op::StepWalls => {
                let mut both = (&mut walls, &mut solids);
                match fluid.step(&mut ns, &mut both, &mut ()) {
                    Ok(()) => check_stepped(&fluid),
                    Err(_) => must_keep = true,
                }
            }
            Op::Params(r) => {
                let p = SphParams {
                    h: r.h,
                    mass: r.mass,
                    rest_density: r.rest_density,
                    stiffness: r.stiffness,
                    eos: if r.ideal_gas {
                        EquationOfState::IdealGas
                    } else {
                        EquationOfState::Tait
                    },
                    clamp_negative_pressure: r.clamp,
                    viscosity: r.viscosity,
                    surface_tension: r.surface_tension,
                    gravity: at(r.gravity),
                    damping: r.damping,
                    dt: r.dt,
                    integrator: if r.euler {
                        Integrator::Euler
                    } else {
                        Integrator::Leapfrog
                    },
                    domain: P::Aabb::try_new(at(r.domain.0), at(r.domain.1))
                        .unwrap_or(P::Aabb::NAN),
                    particle_radius: r.particle_radius,
                    periodic: r.periodic,
                    gradient_correction: r.gradient_correction,
                };
                let old = *fluid.params();
                if fluid.set_params(p).is_err() {
                    assert_eq!(*fluid.params(), old);
                }
                must_keep = true;
            }
            Op::Seed(spacing, water) => {
                let d = fluid.params().domain;
                let p = if water {
                    // The domain's height, as the preset took before.
                    SphParams::water(d, spacing, d.max().coord(1) - d.min().coord(1))
                } else {
                    SphParams::seed(d, spacing)
                };
                if let Ok(p) = p {
                    fluid.set_params(p).expect("a preset is valid");
                }
                must_keep = true;
            }
            Op::AddSolid(s, v) => {
                let n = solids.len();
                if solids
                    .add(Obstacle {
                        shape: shape(s),
                        velocity: at(v),
                    })
                    .is_err()
                {
                    assert_eq!(solids.len(), n);
                }
                must_keep = true;
            }
            Op::SetSolid(id, s, v) => {
                let _ = solids.set(
                    u32::from(id),
                    Obstacle {
                        shape: shape(s),
                        velocity: at(v),
                    },
                );
                must_keep = true;
            }
            Op::Advance(dt) => {
                let _ = solids.advance(dt);
                must_keep = true;
            }
            Op::Kernel(h, r) => {
                if let Ok(k) = Kernels::new::<P>(h) {
                    let g = k.poly6_gradient(P::from_fn(|_| r), r * r);
                    let s = k.spiky_gradient(P::from_fn(|_| r), r);
                    let _ = (
                        k.poly6(r * r),
                        k.viscosity_laplacian(r),
                        k.cohesion(r),
                        k.spiky(r),
                        k.viscosity(r),
                    );
                    let _ = (g, s);
                }
                must_keep = true;
            }
            Op::Clear => fluid.clear(),
            Op::Control(c) => {
                let control = StepControl {
                    adaptive: c.adaptive,
                    safety: c.safety,
                    dt_min: c.dt_min,
                    dt_max: c.dt_max,
                    max_density_ratio: c.max_density_ratio,
                    max_cfl: c.max_cfl,
                };
                let old = *fluid.control();
                if fluid.set_control(control).is_err() {
                    assert_eq!(*fluid.control(), old);
                } else {
                    assert_eq!(*fluid.control(), control);
                }
                must_keep = true;
            }
        }
        assert!(fluid.len() <= CAP);
        fluid.validate().unwrap();
        solids.validate().unwrap();
        if must_keep {
            assert_eq!(fluid.len(), len, "{op:?}");
            assert!(before == snapshot(&fluid), "{op:?} changed the particles");
        }
    }
}

fuzz_target!(|input: Input| {
    if input.three_d {
        run::<Vec3>(&input.ops);
    } else {
        run::<Vec2>(&input.ops);
    }
});
