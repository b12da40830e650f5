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
//! answer equals the model's.

use spatium_host_tests::props as common;

use common::{Lattice, lattice, lattice_corners};
use proptest::prelude::*;
use proptest::test_runner::TestCaseResult;
use spatium::hhash::{Candidates, HashConfig, Hierarchical, Multilevel, Scheme};
use spatium::{Aabb2, Aabb3, BoundingBox, BroadPhase, Error, NeighborSearch, Point, Validate};
use spatium_host::boxes::{TestBox, dim, overlap};
use spatium_host::make::{self, VecClassHash};

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

struct Model<B: BoundingBox> {
    objects: Vec<Option<B>>,
    particles: Vec<B::Point>,
    radius: f32,
    cfg: HashConfig<B::Point>,
    pool: usize,
}

impl<B: BoundingBox> Model<B> {
    fn entries(&self, cfg: &HashConfig<B::Point>) -> u64 {
        self.objects
            .iter()
            .flatten()
            .map(|b| cfg.entries_of(b).unwrap())
            .sum::<u64>()
            + self.particles.len() as u64
    }
    fn pairs(&self) -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        for i in 0..self.objects.len() {
            for j in i + 1..self.objects.len() {
                if let (Some(a), Some(b)) = (self.objects[i], self.objects[j])
                    && overlap(&a, &b)
                {
                    v.push((i as u32, j as u32));
                }
            }
        }
        v
    }
    fn near(&self, p: B::Point) -> Vec<u32> {
        let r2 = self.radius * self.radius;
        (0..self.particles.len() as u32)
            .filter(|&j| {
                let q = self.particles[j as usize];
                let d2: f32 = (0..dim::<B>())
                    .map(|k| (p.coord(k) - q.coord(k)).powi(2))
                    .sum();
                d2 < r2
            })
            .collect()
    }
}

fn check<S: Scheme, B: TestBox>(h: &mut VecClassHash<S, B>, m: &Model<B>) -> TestCaseResult {
    h.validate()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(BroadPhase::box_count(h), m.objects.iter().flatten().count());
    for id in 0..IDS {
        let want = m.objects.get(id as usize).copied().flatten();
        prop_assert_eq!(
            h.get(id).map(|b| (b.min(), b.max())),
            want.map(|b| (b.min(), b.max()))
        );
    }
    let mut got = Vec::new();
    h.for_each_overlap(|a, b| got.push((a.min(b), a.max(b))))
        .unwrap();
    got.sort_unstable();
    prop_assert_eq!(got, m.pairs());
    prop_assert_eq!(*h.config(), m.cfg);
    Ok(())
}

fn check_particles<S: Scheme, B: TestBox>(h: &VecClassHash<S, B>, m: &Model<B>) -> TestCaseResult {
    prop_assert_eq!(NeighborSearch::len(h), m.particles.len());
    let mut got = Vec::new();
    h.for_each_pair(|i, j, d2| {
        got.push((i.min(j), i.max(j)));
        assert!(d2 < h.radius() * h.radius());
    });
    got.sort_unstable();
    let mut want = Vec::new();
    for i in 0..m.particles.len() as u32 {
        for j in m.near(m.particles[i as usize]) {
            if i < j {
                want.push((i, j));
            }
        }
    }
    prop_assert_eq!(got, want);
    for i in 0..m.particles.len() as u32 {
        let mut got = Vec::new();
        h.for_each_neighbor(i, |j, _| got.push(j)).unwrap();
        got.sort_unstable();
        let want: Vec<u32> = m
            .near(m.particles[i as usize])
            .into_iter()
            .filter(|&j| j != i)
            .collect();
        prop_assert_eq!(got, want);
    }
    Ok(())
}

/// Runs `ops` on one structure.
fn run<S: Scheme, B: TestBox>(
    ops: &[Op],
    base: usize,
    levels: u32,
    table: usize,
    pool: usize,
    nns: impl Fn(&mut VecClassHash<S, B>, &[B::Point], f32) -> Option<Result<(), Error>>,
    check_nns: impl Fn(&VecClassHash<S, B>, &Model<B>) -> TestCaseResult,
) -> TestCaseResult {
    let cfg = HashConfig::<B::Point>::new(BASES[base], levels & 0x3f).unwrap();
    let mut h = make::class_hash::<S, B>(CAP, table, pool, PARTS, cfg);
    let mut m = Model::<B> {
        objects: vec![None; CAP],
        particles: Vec::new(),
        radius: 0.0,
        cfg,
        pool,
    };
    for op in ops {
        match op {
            Op::Insert(id, s) => {
                let b: B = make_box(s, &m.objects);
                let want = if *id as usize >= CAP {
                    Some(Error::IdOutOfRange { id: *id })
                } else if let Some(e) = b.check().err() {
                    Some(e)
                } else if m.objects[*id as usize].is_some() {
                    Some(Error::DuplicateId { id: *id })
                } else if let Some(e) = box_error(&b, &m.cfg) {
                    Some(e)
                } else if m.entries(&m.cfg) + m.cfg.entries_of(&b).unwrap() > m.pool as u64 {
                    Some(Error::CapacityExceeded { capacity: m.pool })
                } else {
                    None
                };
                let got = h.insert(*id, b);
                prop_assert_eq!(got.err(), want, "insert {} {:?}", id, b);
                if want.is_none() {
                    m.objects[*id as usize] = Some(b);
                }
            }
            Op::Update(id, s) => {
                let b: B = make_box(s, &m.objects);
                let stored = m.objects.get(*id as usize).copied().flatten();
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
                prop_assert_eq!(h.update(*id, b).err(), want);
                if want.is_none() {
                    m.objects[*id as usize] = Some(b);
                }
            }
            Op::Remove(id) => {
                let stored = m.objects.get(*id as usize).copied().flatten();
                let got = h.remove(*id);
                match stored {
                    Some(b) => {
                        prop_assert_eq!(got.map(|x| (x.min(), x.max())), Ok((b.min(), b.max())));
                        m.objects[*id as usize] = None;
                    }
                    None if *id as usize >= CAP => {
                        prop_assert_eq!(got.err(), Some(Error::IdOutOfRange { id: *id }))
                    }
                    None => prop_assert_eq!(got.err(), Some(Error::UnknownId { id: *id })),
                }
            }
            Op::Query(s) => {
                let q: B = make_box(s, &m.objects);
                let mut got = Vec::new();
                let r = h.query(&q, |id| got.push(id));
                if let Err(e) = q.check() {
                    prop_assert_eq!(r, Err(e));
                    continue;
                }
                prop_assert_eq!(r, Ok(()));
                got.sort_unstable();
                let want: Vec<u32> = (0..CAP as u32)
                    .filter(|&i| m.objects[i as usize].is_some_and(|b| overlap(&b, &q)))
                    .collect();
                prop_assert_eq!(&got, &want);
                let mut raw = Vec::new();
                h.query_candidates(&q, Candidates::Raw, |id| raw.push(id))
                    .unwrap();
                prop_assert!(want.iter().all(|id| raw.contains(id)));
            }
            Op::Pairs => {}
            Op::Particles(pts, r) => {
                let points: Vec<B::Point> = pts
                    .iter()
                    .map(|l| {
                        let (lo, _) = lattice_corners(l);
                        B::Point::from_fn(|k| lo[k])
                    })
                    .collect();
                let radius = RADII[*r as usize];
                let Some(got) = nns(&mut h, &points, radius) else {
                    continue;
                };
                let want = if radius.is_nan() || radius <= 0.0 {
                    Some(Error::InvalidRadius)
                } else if points.len() > PARTS {
                    Some(Error::CapacityExceeded { capacity: PARTS })
                } else if m.entries(&m.cfg) - m.particles.len() as u64 + points.len() as u64
                    > m.pool as u64
                {
                    Some(Error::CapacityExceeded { capacity: m.pool })
                } else {
                    None
                };
                prop_assert_eq!(got.err(), want);
                if want.is_none() {
                    m.particles = points;
                    m.radius = radius;
                }
            }
            Op::Rehash => h.rehash().unwrap(),
            Op::Clear => {
                h.clear();
                m.objects = vec![None; CAP];
                m.particles.clear();
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
        check(&mut h, &m)?;
        check_nns(&h, &m)?;
    }
    Ok(())
}

fn run_scheme<S: Scheme, B: TestBox>(
    ops: &[Op],
    base: usize,
    levels: u32,
    table: usize,
    pool: usize,
) -> TestCaseResult {
    run::<S, B>(
        ops,
        base,
        levels,
        table,
        pool,
        |h, p, r| Some(h.build(p, r)),
        check_particles,
    )
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
