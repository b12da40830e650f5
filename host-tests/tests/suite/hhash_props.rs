//! Property tests of hierarchical and multilevel hashing (`spatium::hhash`).
//!
//! Random operation sequences on object ids `0..20` (capacity 16, so some
//! ids are out of range) and up to 12 particles, against an independent
//! model (a `Vec<Option<B>>` with its own closed-interval overlap test, and a
//! point list with its own distance test). Operations: insert, update, small
//! moves, remove, box queries (exact, and raw ⊇ exact), pair enumeration,
//! particle builds (neighbour pairs, neighbours of a particle, points
//! within), rehash, clear and configuration changes. Boxes are dyadic
//! lattice boxes (they coincide and touch exactly), zero-extent boxes, copies
//! of stored boxes, boxes beyond the cell range, and bad boxes (NaN,
//! inverted, infinite). Configurations: base sizes from 2⁻² to 3, random
//! class sets, tables of 1 to 1024 buckets (1: every key collides), pools
//! from starved to ample. Every error is predicted, a refused operation must
//! change nothing, and after every operation `validate()` passes and every
//! answer equals the model's. Objects and particles are judged by the
//! shared models (`spatium_host_tests::model`); the class rules here predict
//! hashing's own refusals on top.

use spatium_host_tests::props as common;

use common::{Lattice, lattice, lattice_corners};
use proptest::prelude::*;
use proptest::test_runner::TestCaseResult;
use spatium::hhash::{Candidates, HashConfig, Hierarchical, Multilevel, Scheme};
use spatium::{Aabb2, Aabb3, BoundingBox, BroadPhase, Error, Point};
use spatium_host::boxes::TestBox;
use spatium_host::make;
use spatium_host_tests::model::{
    BoxSpec, BroadModel, BroadOp, PointSpec, RadiusSpec, SearchModel, SearchOp,
};

const IDS: u32 = 20;
const CAP: usize = 16;
const PARTS: usize = 12;

#[derive(Clone, Debug)]
enum Shape {
    Lattice(Lattice),
    CopyOf(u32),
    Far(Lattice),
    Nan,
    Inverted,
    Infinite,
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        12 => lattice().prop_map(Shape::Lattice),
        2 => (0..IDS).prop_map(Shape::CopyOf),
        1 => lattice().prop_map(Shape::Far),
        1 => Just(Shape::Nan),
        1 => Just(Shape::Inverted),
        1 => Just(Shape::Infinite),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u32, Shape),
    Update(u32, Shape),
    Remove(u32),
    Query(Shape),
    Pairs,
    Particles(Vec<Lattice>, u8),
    Rehash,
    Clear,
    Reconfigure(u8, u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0..IDS, shape()).prop_map(|(i, s)| Op::Insert(i, s)),
        4 => (0..IDS, shape()).prop_map(|(i, s)| Op::Update(i, s)),
        2 => (0..IDS).prop_map(Op::Remove),
        3 => shape().prop_map(Op::Query),
        2 => Just(Op::Pairs),
        2 => (prop::collection::vec(lattice(), 0..=PARTS + 1), 0u8..4)
            .prop_map(|(v, r)| Op::Particles(v, r)),
        1 => Just(Op::Rehash),
        1 => Just(Op::Clear),
        1 => (0u8..3, any::<u32>()).prop_map(|(b, l)| Op::Reconfigure(b, l)),
    ]
}

const BASES: [f32; 3] = [0.25, 1.0, 3.0];
const RADII: [f32; 4] = [0.2, 1.0, 2.5, f32::NAN];

fn make_box<B: TestBox>(s: &Shape, model: &[Option<B>]) -> B {
    match s {
        Shape::Lattice(l) => {
            let (lo, hi) = lattice_corners(l);
            B::raw(lo, hi)
        }
        Shape::CopyOf(i) => model
            .get(*i as usize)
            .copied()
            .flatten()
            .unwrap_or(B::raw([0.0; 3], [1.0; 3])),
        Shape::Far(l) => {
            let (lo, hi) = lattice_corners(l);
            B::raw(lo.map(|x| x + 4.0e9), hi.map(|x| x + 4.0e9))
        }
        Shape::Nan => B::raw([f32::NAN, 0.0, 0.0], [1.0; 3]),
        Shape::Inverted => B::raw([2.0, 0.0, 0.0], [1.0; 3]),
        Shape::Infinite => B::raw([0.0; 3], [f32::INFINITY, 1.0, 1.0]),
    }
}

/// What the model predicts for storing `b` (besides id checks).
fn box_error<B: BoundingBox>(b: &B, cfg: &HashConfig<B::Point>) -> Option<Error> {
    b.check().err().or_else(|| cfg.entries_of(b).err())
}

/// The shared models (objects, particles) plus hashing's own state.
struct Model<B: BoundingBox> {
    broad: BroadModel<B>,
    search: SearchModel<B::Point>,
    cfg: HashConfig<B::Point>,
    pool: usize,
}

impl<B: TestBox> Model<B> {
    fn entries(&self, cfg: &HashConfig<B::Point>) -> u64 {
        self.broad
            .slots
            .iter()
            .flatten()
            .map(|b| cfg.entries_of(b).unwrap())
            .sum::<u64>()
            + self.search.points.len() as u64
    }
}

fn fail(e: String) -> TestCaseError {
    TestCaseError::fail(e)
}

/// Runs `ops` on one structure: every trait operation is judged by the
/// shared models (objects through `BroadModel`, particles through
/// `SearchModel`, with every answer compared after each op); on top, the
/// class rules predict hashing's own refusals exactly (`OutOfRange` from
/// the cell range of a box's class, `CapacityExceeded` from the pool).
fn run_scheme<S: Scheme, B: TestBox>(
    ops: &[Op],
    base: usize,
    levels: u32,
    table: usize,
    pool: usize,
) -> TestCaseResult {
    let cfg = HashConfig::<B::Point>::new(BASES[base], levels & 0x3f).unwrap();
    let mut h = make::class_hash::<S, B>(CAP, table, pool, PARTS, cfg);
    let mut m = Model::<B> {
        broad: BroadModel::new(CAP),
        search: SearchModel::new(PARTS),
        cfg,
        pool,
    };
    for op in ops {
        match op {
            Op::Insert(id, s) => {
                let b: B = make_box(s, &m.broad.slots);
                let want = if *id as usize >= CAP {
                    Some(Error::IdOutOfRange { id: *id })
                } else if let Some(e) = b.check().err() {
                    Some(e)
                } else if m.broad.get(*id).is_some() {
                    Some(Error::DuplicateId { id: *id })
                } else if let Some(e) = box_error(&b, &m.cfg) {
                    Some(e)
                } else if m.entries(&m.cfg) + m.cfg.entries_of(&b).unwrap() > m.pool as u64 {
                    Some(Error::CapacityExceeded { capacity: m.pool })
                } else {
                    None
                };
                let got = m
                    .broad
                    .apply(&mut h, &BroadOp::Insert(*id, BoxSpec::Exact(b)))
                    .map_err(fail)?;
                prop_assert_eq!(got.err(), want, "insert {} {:?}", id, b);
            }
            Op::Update(id, s) => {
                let b: B = make_box(s, &m.broad.slots);
                let stored = m.broad.get(*id);
                let want = if *id as usize >= CAP {
                    Some(Error::IdOutOfRange { id: *id })
                } else if let Some(old) = stored {
                    if let Some(e) = box_error(&b, &m.cfg) {
                        Some(e)
                    } else if m.entries(&m.cfg) - m.cfg.entries_of(&old).unwrap()
                        + m.cfg.entries_of(&b).unwrap()
                        > m.pool as u64
                    {
                        Some(Error::CapacityExceeded { capacity: m.pool })
                    } else {
                        None
                    }
                } else {
                    Some(Error::UnknownId { id: *id })
                };
                let got = m
                    .broad
                    .apply(&mut h, &BroadOp::Update(*id, BoxSpec::Exact(b)))
                    .map_err(fail)?;
                prop_assert_eq!(got.err(), want);
            }
            Op::Remove(id) => {
                let _ = m.broad.apply(&mut h, &BroadOp::Remove(*id)).map_err(fail)?;
            }
            Op::Query(s) => {
                let q: B = make_box(s, &m.broad.slots);
                let r = m
                    .broad
                    .apply(&mut h, &BroadOp::Query(BoxSpec::Exact(q)))
                    .map_err(fail)?;
                prop_assert_eq!(r, q.check());
                if r.is_ok() {
                    // Raw candidates are a superset of the exact answer.
                    let want = m.broad.hits(&q);
                    let mut raw = Vec::new();
                    h.query_candidates(&q, Candidates::Raw, |id| raw.push(id))
                        .unwrap();
                    prop_assert!(want.iter().all(|id| raw.contains(id)));
                }
            }
            Op::Pairs => {
                let _ = m.broad.apply(&mut h, &BroadOp::Overlaps).map_err(fail)?;
            }
            Op::Particles(pts, r) => {
                let points: Vec<B::Point> = pts
                    .iter()
                    .map(|l| {
                        let (lo, _) = lattice_corners(l);
                        B::Point::from_fn(|k| lo[k])
                    })
                    .collect();
                let radius = RADII[*r as usize];
                let want = if radius.is_nan() || radius <= 0.0 {
                    Some(Error::InvalidRadius)
                } else if points.len() > PARTS {
                    Some(Error::CapacityExceeded { capacity: PARTS })
                } else if m.entries(&m.cfg) - m.search.points.len() as u64 + points.len() as u64
                    > m.pool as u64
                {
                    Some(Error::CapacityExceeded { capacity: m.pool })
                } else {
                    None
                };
                let op = SearchOp::Build(
                    points.iter().map(|p| PointSpec::Exact(*p)).collect(),
                    RadiusSpec::Bits(radius.to_bits()),
                );
                let got = m.search.apply(&mut h, &op).map_err(fail)?;
                prop_assert_eq!(got.err(), want);
            }
            Op::Rehash => h.rehash().unwrap(),
            Op::Clear => {
                h.clear();
                m.broad.slots.fill(None);
                m.search.points.clear();
            }
            Op::Reconfigure(b, l) => {
                let cfg = HashConfig::new(BASES[*b as usize], l & 0x3f).unwrap();
                let want = if m.entries(&cfg) > m.pool as u64 {
                    Some(Error::CapacityExceeded { capacity: m.pool })
                } else {
                    None
                };
                prop_assert_eq!(h.set_config(cfg).err(), want);
                if want.is_none() {
                    m.cfg = cfg;
                }
            }
        }
        m.broad.check(&mut h).map_err(fail)?;
        m.search.check(&h).map_err(fail)?;
        prop_assert_eq!(*h.config(), m.cfg);
    }
    Ok(())
}

fn setup() -> impl Strategy<Value = (Vec<Op>, usize, u32, usize, usize)> {
    (
        prop::collection::vec(op(), 1..80),
        0usize..3,
        any::<u32>(),
        prop::sample::select(vec![1usize, 4, 64, 1024]),
        prop::sample::select(vec![8usize, 40, 400, 4000]),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn hierarchical_3d((ops, b, l, t, p) in setup()) {
        run_scheme::<Hierarchical, Aabb3>(&ops, b, l, t, p)?;
    }

    #[test]
    fn hierarchical_2d((ops, b, l, t, p) in setup()) {
        run_scheme::<Hierarchical, Aabb2>(&ops, b, l, t, p)?;
    }

    #[test]
    fn multilevel_3d((ops, b, l, t, p) in setup()) {
        run_scheme::<Multilevel, Aabb3>(&ops, b, l, t, p)?;
    }

    #[test]
    fn multilevel_2d((ops, b, l, t, p) in setup()) {
        run_scheme::<Multilevel, Aabb2>(&ops, b, l, t, p)?;
    }
}
