//! Property tests of `spatium::sph` over random operation sequences, in 3D
//! and 2D: particles pushed (some non-finite or outside the box), blocks
//! filled (some too large), a pipe emitting, steps with a good neighbour
//! search and with one too small for the fluid, parameter changes (some
//! invalid, some diverging), obstacles added, replaced and moved (some
//! degenerate), and clears. After every operation: the particle count is
//! what the model predicts, every refused operation left positions and
//! velocities exactly as they were, and after every successful step every
//! particle is finite and inside the walls; `validate()` passes for the
//! fluid and the obstacles. The whole sequence is then
//! replayed and must give the same bits.

use proptest::prelude::*;
use spatium::sph::boundary::{Obstacle, Obstacles, Shape};
use spatium::sph::source::Emitter;
use spatium::sph::{EquationOfState, Fluid, Integrator, ParticleState, SphParams};
use spatium::table::table_len;
use spatium::{BoundingBox, Error, HhgConfig, Point, Validate, Vec2, Vec3};
use spatium_host::make::{self, VecCellSorted, VecHhg};

const CAP: usize = 40;

#[derive(Clone, Debug)]
enum Op {
    Push([f32; 3], [f32; 3]),
    PushBad(u8),
    Fill([f32; 3], f32),
    Emit,
    Step,
    StepSmall,
    Params(u8),
    AddSolid(u8, [f32; 3], f32),
    MoveSolid(u8, [f32; 3]),
    Advance,
    Clear,
}

fn unit() -> impl Strategy<Value = [f32; 3]> {
    [0.0f32..1.0, 0.0f32..1.0, 0.0f32..1.0]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (unit(), [-2.0f32..2.0, -2.0f32..2.0, -2.0f32..2.0]).prop_map(|(x, v)| Op::Push(x, v)),
        1 => any::<u8>().prop_map(Op::PushBad),
        1 => (unit(), 0.02f32..0.3).prop_map(|(c, s)| Op::Fill(c, s)),
        2 => Just(Op::Emit),
        6 => Just(Op::Step),
        1 => Just(Op::StepSmall),
        1 => any::<u8>().prop_map(Op::Params),
        1 => (any::<u8>(), unit(), 0.0f32..0.3).prop_map(|(k, c, r)| Op::AddSolid(k, c, r)),
        1 => (any::<u8>(), [-0.5f32..0.5, -0.5f32..0.5, -0.5f32..0.5]).prop_map(|(k, v)| Op::MoveSolid(k, v)),
        1 => Just(Op::Advance),
        1 => Just(Op::Clear),
    ]
}

type World<P> = (
    Fluid<P, Vec<P>, Vec<ParticleState<P>>>,
    VecCellSorted<P>,
    VecCellSorted<P>,
    Obstacles<P, VecHhg<<P as Point>::Aabb>, Vec<Obstacle<P>>>,
    Emitter<P>,
);

fn at<P: Point>(c: [f32; 3]) -> P {
    P::from_fn(|k| c[k])
}

fn params<P: Point>(variant: u8) -> SphParams<P> {
    let domain = P::Aabb::try_new(P::ZERO, P::from_fn(|_| 1.0)).unwrap();
    let mut p = SphParams::seed(domain, 0.1).unwrap();
    match variant % 8 {
        0 => {}
        1 => p.integrator = Integrator::Euler,
        2 => p.eos = EquationOfState::IdealGas,
        3 => p.surface_tension = 0.0,
        4 => p.dt = 0.0,         // invalid
        5 => p.h = -1.0,         // invalid
        6 => p.stiffness = 1e30, // diverges
        _ => p.damping = 0.0,
    }
    p
}

fn world<P: Point>() -> World<P> {
    let hcfg = HhgConfig::DEFAULT;
    (
        Fluid::new(
            vec![P::ZERO; CAP],
            vec![ParticleState::EMPTY; CAP],
            params(0),
        ),
        make::cell_sorted::<P>(CAP, table_len(CAP, 2)),
        make::cell_sorted::<P>(CAP / 2, 16),
        Obstacles::new(
            vec![Obstacle::EMPTY; 6],
            make::hhg::<P::Aabb>(6, 4 * hcfg.arena_words_for::<P::Aabb>(6), hcfg),
        ),
        Emitter::new(at([0.5, 0.9, 0.5]), at([0.0, -1.0, 0.0]), 1.0, 0.1, 0.1, 25).unwrap(),
    )
}

type Snapshot<P> = Vec<(P, P)>;

fn snapshot<P: Point>(f: &Fluid<P, Vec<P>, Vec<ParticleState<P>>>) -> Snapshot<P> {
    f.positions()
        .iter()
        .zip(f.state())
        .map(|(x, s)| (*x, s.velocity))
        .collect()
}

fn run<P: Point>(ops: &[Op]) -> Result<Snapshot<P>, TestCaseError> {
    let (mut f, mut ns, mut small, mut solids, mut pipe) = world::<P>();
    let domain = f.params().domain;
    for op in ops {
        let before = snapshot(&f);
        let len = f.len();
        match op {
            Op::Push(x, v) => {
                let r = f.push(at(*x), at(*v));
                prop_assert_eq!(r.is_ok(), len < CAP);
            }
            Op::PushBad(k) => {
                let (x, v, e) = match k % 3 {
                    0 => (at([f32::NAN, 0.5, 0.5]), P::ZERO, Error::NonFinite),
                    1 => (
                        at([0.5, 0.5, 0.5]),
                        at([f32::INFINITY, 0.0, 0.0]),
                        Error::NonFinite,
                    ),
                    _ => (at([1.5, 0.5, 0.5]), P::ZERO, Error::OutOfRange),
                };
                prop_assert_eq!(f.push(x, v), Err(e));
            }
            Op::Fill(c, s) => {
                let lo = at::<P>(*c) * 0.5;
                let region = P::Aabb::try_new(lo, lo + P::from_fn(|_| 0.3)).unwrap();
                match f.fill_block(region, *s, P::ZERO) {
                    Ok(added) => prop_assert_eq!(f.len(), len + added),
                    Err(e) => {
                        prop_assert!(matches!(e, Error::CapacityExceeded { .. }), "{:?}", e);
                        prop_assert!(before == snapshot(&f));
                    }
                }
            }
            Op::Emit => {
                let e0 = pipe.emitted();
                let r = pipe.emit(&mut f, 0.1);
                if let Err(e) = r {
                    prop_assert!(matches!(e, Error::CapacityExceeded { .. }), "{:?}", e);
                }
                prop_assert_eq!(f.len() - len, (pipe.emitted() - e0) as usize);
            }
            Op::Step => {
                let r = f.step(&mut ns, &mut solids, &mut ());
                if let Err(e) = r {
                    // Only invalid or diverging parameters fail a step.
                    prop_assert!(
                        matches!(
                            e,
                            Error::NonFinite
                                | Error::Diverged { .. }
                                | Error::InvalidConfig { .. }
                                | Error::InvalidRadius
                        ),
                        "{:?}",
                        e
                    );
                    prop_assert!(
                        before == snapshot(&f),
                        "a failed step changed the particles"
                    );
                } else {
                    for x in f.positions() {
                        prop_assert!(x.is_finite());
                        for k in 0..P::DIM {
                            prop_assert!(
                                x.coord(k) >= domain.min().coord(k)
                                    && x.coord(k) <= domain.max().coord(k)
                            );
                        }
                    }
                    for s in f.state() {
                        prop_assert!(s.velocity.is_finite() && s.density > 0.0);
                    }
                }
            }
            Op::StepSmall => {
                let r = f.step(&mut small, &mut solids, &mut ());
                if f.len() > CAP / 2 {
                    prop_assert!(r.is_err());
                }
                if r.is_err() {
                    prop_assert!(
                        before == snapshot(&f),
                        "a failed step changed the particles"
                    );
                }
            }
            Op::Params(k) => {
                let p = params::<P>(*k);
                let ok = f.set_params(p).is_ok();
                prop_assert_eq!(ok, !matches!(k % 8, 4 | 5));
            }
            Op::AddSolid(k, c, r) => {
                let centre = at::<P>(*c);
                let shape = match k % 3 {
                    0 => Shape::Sphere {
                        center: centre,
                        radius: *r,
                    },
                    1 => Shape::Box(P::Aabb::try_new(centre, centre + P::from_fn(|_| *r)).unwrap()),
                    _ => Shape::Triangle([
                        centre,
                        centre + at([*r, 0.0, 0.0]),
                        centre + at([0.0, *r, *r * 0.5]),
                    ]),
                };
                let o = Obstacle::fixed(shape);
                let n0 = solids.len();
                match solids.add(o) {
                    Ok(_) => prop_assert_eq!(solids.len(), n0 + 1),
                    Err(e) => {
                        prop_assert!(*r == 0.0 || n0 == 6, "{:?} {:?}", e, o);
                        prop_assert_eq!(solids.len(), n0);
                    }
                }
            }
            Op::MoveSolid(k, v) => {
                if !solids.is_empty() {
                    let id = u32::from(*k) % solids.len() as u32;
                    let mut o = solids.as_slice()[id as usize];
                    o.velocity = at(*v);
                    solids.set(id, o).unwrap();
                }
            }
            Op::Advance => {
                let _ = solids.advance(0.05);
            }
            Op::Clear => f.clear(),
        }
        if !matches!(op, Op::Push(..) | Op::Fill(..) | Op::Emit | Op::Clear) {
            prop_assert_eq!(f.len(), len);
        }
        f.validate()
            .map_err(|e| TestCaseError::fail(format!("{op:?}: {e}")))?;
        solids
            .validate()
            .map_err(|e| TestCaseError::fail(format!("{op:?}: {e}")))?;
        let after = snapshot(&f);
        if f.len() == len
            && matches!(
                op,
                Op::PushBad(_) | Op::Params(_) | Op::AddSolid(..) | Op::MoveSolid(..) | Op::Advance
            )
        {
            prop_assert!(before == after, "{:?} changed the particles", op);
        }
    }
    Ok(snapshot(&f))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_3d(ops in prop::collection::vec(op(), 1..60)) {
        let a = run::<Vec3>(&ops)?;
        let b = run::<Vec3>(&ops)?;
        prop_assert!(a == b, "replay differs");
    }

    #[test]
    fn random_operations_2d(ops in prop::collection::vec(op(), 1..60)) {
        let a = run::<Vec2>(&ops)?;
        let b = run::<Vec2>(&ops)?;
        prop_assert!(a == b, "replay differs");
    }
}
