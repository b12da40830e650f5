//! Differential fuzzing of hierarchical and multilevel hashing
//! (`spatium::hhash`), in 2D and 3D, judged by the shared models
//! (`spatium_host_tests::model`: `BroadModel` for the objects, `SearchModel`
//! for the particles, the same judges as the property tests), with
//! hashing's class rules and the agreement of both schemes on top.
//!
//! The input decodes into a configuration — base size, class set (any 31-bit
//! mask), origin, table length (1 to 4096 buckets: from "every key collides"
//! to sparse), pool length (starved to ample) — and up to 48 operations over
//! object ids `0..20` (capacity 16) and up to 16 particles, each applied to
//! both schemes in the 2D or the 3D world: insert, update, remove, box
//! query (exact, and raw candidates ⊇ exact), pairs, particle build,
//! rehash, clear, configuration change.
//!
//! Boxes are quarter-lattice boxes of power-of-two scales (they coincide and
//! touch exactly, and their sizes span many classes) or copies of stored
//! boxes, with coordinates optionally overridden by raw `f32` bits or special
//! values (NaN, infinities, huge, subnormal, `-0.0`, values near the cell
//! range limit). Every result is predicted: id errors, `NonFinite` /
//! `InvertedBox` (either, when a box has both defects), `OutOfRange` (some
//! stored coordinate 2³⁰ base cells or more from the origin; within a
//! relative 10⁻⁵ of the limit either answer is accepted and the model
//! follows), and `CapacityExceeded` from the pool arithmetic (entries per
//! object from `HashConfig::entries_of`, which `validate()` checks against
//! the cells). After every operation each structure is validated and
//! compared with its models: `box_count`, `get` of every id bit for bit, the
//! exact pair set, and (particles) `len`, positions, every neighbour with its
//! d², the pairs and the CSR lists.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use spatium::hhash::{
    Candidates, ClassHash, HashBucket, HashConfig, HashEntry, HashSlot, Hierarchical, Multilevel,
    Scheme,
};
use spatium::{Aabb2, Aabb3, BoundingBox, Error, Point};
use spatium_host::boxes::{TestBox, corners};
use spatium_host_tests::model::{
    BoxSpec, BroadModel, BroadOp, PointSpec, RadiusSpec, SearchModel, SearchOp,
};

const IDS: u32 = 20;
const CAP: usize = 16;
const PARTS: usize = 16;
const MAX_OPS: usize = 48;
const BASES: [f32; 5] = [1.0, 0.25, 3.0, 1e-3, 1e4];
const TABLES: [usize; 5] = [1, 16, 256, 4096, 2];
const POOLS: [usize; 5] = [0, 8, 64, 512, 1024];
const RADII: [f32; 5] = [1.0, 0.3, 2.5, 0.0, f32::NAN];
const LIMIT: f64 = 1_073_741_824.0; // 2³⁰

type H<S, B> = ClassHash<
    S,
    B,
    Vec<HashSlot<B>>,
    Vec<HashBucket>,
    Vec<HashEntry>,
    Vec<<B as BoundingBox>::Point>,
>;

#[derive(Arbitrary, Debug, Clone, Copy)]
struct Lattice {
    pe: i8,
    pos: [i8; 3],
    se: i8,
    edge: [u8; 3],
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Value {
    Raw(f32),
    Special(u8),
}

const SPECIAL: [f32; 14] = [
    0.0,
    -0.0,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::MAX,
    1e-40,
    1e30,
    -1e9,
    1_073_741_824.0,
    1_073_741_760.0,
    -1_073_741_888.0,
    0.5,
    3.0e9,
];

#[derive(Arbitrary, Debug, Clone)]
struct BoxIn {
    lat: Lattice,
    copy_of: Option<u8>,
    over: Vec<(u8, Value)>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Insert(u8, BoxIn),
    Update(u8, BoxIn),
    Remove(u8),
    Query(BoxIn),
    Pairs,
    Particles(Vec<Lattice>, u8),
    Rehash,
    Clear,
    Reconfigure(u8, u32),
}

#[derive(Arbitrary, Debug)]
struct Input {
    base: u8,
    levels: u32,
    origin: [i8; 3],
    table: u8,
    pool: u8,
    ops: Vec<(bool, Op)>,
}

fn lattice(l: &Lattice) -> ([f32; 3], [f32; 3]) {
    let unit = 0.25 * 2f32.powi(i32::from(l.pe.clamp(-8, 8)));
    let step = 0.25 * 2f32.powi(i32::from(l.se.clamp(-10, 8)));
    let mut lo = [0.0; 3];
    let mut hi = [0.0; 3];
    for k in 0..3 {
        lo[k] = f32::from(l.pos[k]) * unit;
        hi[k] = lo[k] + f32::from(l.edge[k] % 12) * step;
    }
    (lo, hi)
}

fn make_box<B: TestBox>(b: &BoxIn, model: &[Option<B>]) -> B {
    let (mut lo, mut hi) = match b
        .copy_of
        .and_then(|i| model.get(i as usize).copied().flatten())
    {
        Some(s) => corners(&s),
        None => lattice(&b.lat),
    };
    for (slot, v) in b.over.iter().take(3) {
        let x = match v {
            Value::Raw(x) => *x,
            Value::Special(i) => SPECIAL[*i as usize % SPECIAL.len()],
        };
        let s = *slot as usize % 6;
        if s < 3 {
            lo[s] = x;
        } else {
            hi[s - 3] = x;
        }
    }
    B::raw(lo, hi)
}

/// `Some(true)` if the box is in range, `Some(false)` if out, `None` if too
/// close to the limit to tell.
fn in_range<B: BoundingBox>(b: &B, cfg: &HashConfig<B::Point>) -> Option<bool> {
    let mut verdict = Some(true);
    for p in [b.min(), b.max()] {
        for k in 0..B::Point::DIM {
            let t = ((p.coord(k) as f64 - cfg.origin().coord(k) as f64) / cfg.base() as f64).abs();
            if (t - LIMIT).abs() <= LIMIT * 1e-5 {
                verdict = None;
            } else if t > LIMIT {
                return Some(false);
            }
        }
    }
    verdict
}

/// The validity error of a box, or `None`; `Err(())` if both defects are
/// present (either error accepted).
fn validity<B: BoundingBox>(b: &B) -> Result<Option<Error>, ()> {
    let (lo, hi) = corners(b);
    let d = B::Point::DIM;
    let nonfinite = lo[..d].iter().chain(&hi[..d]).any(|x| !x.is_finite());
    let inverted = (0..d).any(|k| lo[k] > hi[k]);
    match (nonfinite, inverted) {
        (true, true) => Err(()),
        (true, false) => Ok(Some(Error::NonFinite)),
        (false, true) => Ok(Some(Error::InvertedBox)),
        (false, false) => Ok(None),
    }
}

/// Both schemes, each judged by its own copy of the shared models
/// (`BroadModel` for the objects, `SearchModel` for the particles); on top,
/// the schemes must agree and the class rules predict hashing's own
/// refusals (`OutOfRange`, `CapacityExceeded` of the pool).
struct World<B: TestBox> {
    hier: H<Hierarchical, B>,
    multi: H<Multilevel, B>,
    bh: BroadModel<B>,
    bm: BroadModel<B>,
    sh: SearchModel<B::Point>,
    sm: SearchModel<B::Point>,
    cfg: HashConfig<B::Point>,
    pool: usize,
}

fn new_hash<S: Scheme, B: BoundingBox>(
    cfg: HashConfig<B::Point>,
    table: usize,
    pool: usize,
) -> H<S, B> {
    ClassHash::new(
        vec![HashSlot::EMPTY; CAP],
        vec![HashBucket::EMPTY; table],
        vec![HashEntry::EMPTY; pool],
        vec![B::Point::default(); PARTS],
        cfg,
    )
}

fn judged<T>(r: Result<T, String>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

impl<B: TestBox> World<B> {
    fn new(cfg: HashConfig<B::Point>, table: usize, pool: usize) -> Self {
        Self {
            hier: new_hash(cfg, table, pool),
            multi: new_hash(cfg, table, pool),
            bh: BroadModel::new(CAP),
            bm: BroadModel::new(CAP),
            sh: SearchModel::new(PARTS),
            sm: SearchModel::new(PARTS),
            cfg,
            pool,
        }
    }

    fn entries(&self, cfg: &HashConfig<B::Point>, skip: Option<usize>) -> u64 {
        self.bh
            .slots
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != skip)
            .filter_map(|(_, b)| *b)
            .map(|b| cfg.entries_of(&b).expect("stored box in range"))
            .fold(self.sh.points.len() as u64, u64::saturating_add)
    }

    /// The predicted result of storing `b` under `id` (after id checks):
    /// `Err(())` when either outcome is acceptable.
    fn predict_store(&self, b: &B, skip: Option<usize>) -> Result<Option<Error>, ()> {
        if let Some(e) = validity(b)? {
            return Ok(Some(e));
        }
        match in_range(b, &self.cfg) {
            None => return Err(()),
            Some(false) => return Ok(Some(Error::OutOfRange)),
            Some(true) => {}
        }
        let need = self.cfg.entries_of(b).expect("in range");
        if self.entries(&self.cfg, skip).saturating_add(need) > self.pool as u64 {
            return Ok(Some(Error::CapacityExceeded {
                capacity: self.pool,
            }));
        }
        Ok(None)
    }

    /// One trait operation on both schemes, judged by their models; the
    /// schemes must agree.
    fn broad(&mut self, op: &BroadOp<B>) -> Result<(), Error> {
        let h = judged(self.bh.apply(&mut self.hier, op));
        let m = judged(self.bm.apply(&mut self.multi, op));
        assert_eq!(h, m, "schemes disagree on {op:?}");
        h
    }

    fn check(&mut self) {
        judged(self.bh.check(&mut self.hier));
        judged(self.bm.check(&mut self.multi));
        judged(self.sh.check(&self.hier));
        judged(self.sm.check(&self.multi));
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Insert(id, bin) => {
                let id = u32::from(*id) % IDS;
                let b: B = make_box(bin, &self.bh.slots);
                let want = if id as usize >= CAP {
                    Ok(Some(Error::IdOutOfRange { id }))
                } else if let Err(()) | Ok(Some(_)) = validity(&b) {
                    validity(&b)
                } else if self.bh.get(id).is_some() {
                    Ok(Some(Error::DuplicateId { id }))
                } else {
                    self.predict_store(&b, None)
                };
                let got = self.broad(&BroadOp::Insert(id, BoxSpec::Exact(b)));
                if let Ok(w) = want {
                    assert_eq!(got.err(), w, "insert {id} {b:?}");
                }
            }
            Op::Update(id, bin) => {
                let id = u32::from(*id) % IDS;
                let b: B = make_box(bin, &self.bh.slots);
                let want = if id as usize >= CAP {
                    Ok(Some(Error::IdOutOfRange { id }))
                } else if self.bh.get(id).is_none() {
                    Ok(Some(Error::UnknownId { id }))
                } else {
                    self.predict_store(&b, Some(id as usize))
                };
                let got = self.broad(&BroadOp::Update(id, BoxSpec::Exact(b)));
                if let Ok(w) = want {
                    assert_eq!(got.err(), w, "update {id} {b:?}");
                }
            }
            Op::Remove(id) => {
                let _ = self.broad(&BroadOp::Remove(u32::from(*id) % IDS));
            }
            Op::Query(bin) => {
                let q: B = make_box(bin, &self.bh.slots);
                let valid = validity(&q);
                let got = self.broad(&BroadOp::Query(BoxSpec::Exact(q)));
                match valid {
                    Ok(None) => assert_eq!(got, Ok(()), "query {q:?}"),
                    Ok(Some(e)) => assert_eq!(got, Err(e)),
                    Err(()) => assert!(got.is_err()),
                }
                if valid == Ok(None) {
                    let want = self.bh.hits(&q);
                    let mut raw = Vec::new();
                    self.hier
                        .query_candidates(&q, Candidates::Raw, |id| raw.push(id))
                        .unwrap();
                    assert!(want.iter().all(|id| raw.contains(id)), "raw ⊉ exact");
                }
            }
            Op::Pairs => {
                let _ = self.broad(&BroadOp::Overlaps);
            }
            Op::Particles(pts, r) => {
                let points: Vec<B::Point> = pts
                    .iter()
                    .take(PARTS + 2)
                    .map(|l| {
                        let (lo, _) = lattice(l);
                        B::Point::from_fn(|k| lo[k])
                    })
                    .collect();
                let radius = RADII[*r as usize % RADII.len()];
                let others = self.entries(&self.cfg, None) - self.sh.points.len() as u64;
                let want = if radius.is_nan() || radius <= 0.0 {
                    Some(Error::InvalidRadius)
                } else if points.len() > PARTS {
                    Some(Error::CapacityExceeded { capacity: PARTS })
                } else if points
                    .iter()
                    .any(|p| in_range(&B::try_new(*p, *p).unwrap(), &self.cfg) == Some(false))
                {
                    Some(Error::OutOfRange)
                } else if others.saturating_add(points.len() as u64) > self.pool as u64 {
                    Some(Error::CapacityExceeded {
                        capacity: self.pool,
                    })
                } else {
                    None
                };
                let op = SearchOp::Build(
                    points.iter().map(|p| PointSpec::Exact(*p)).collect(),
                    RadiusSpec::Bits(radius.to_bits()),
                );
                let got = judged(self.sh.apply(&mut self.hier, &op));
                let got_m = judged(self.sm.apply(&mut self.multi, &op));
                assert_eq!(got, got_m, "schemes disagree on build");
                assert_eq!(
                    got.err(),
                    want,
                    "build {} particles r={radius}",
                    points.len()
                );
            }
            Op::Rehash => {
                // Every table length here is a power of two.
                self.hier.rehash().unwrap();
                self.multi.rehash().unwrap();
            }
            Op::Clear => {
                // Clears the particles too.
                let _ = self.broad(&BroadOp::Clear);
                self.sh.points.clear();
                self.sm.points.clear();
            }
            Op::Reconfigure(b, l) => {
                let base = BASES[*b as usize % BASES.len()];
                let cfg = HashConfig::new(base, l & 0x7fff_ffff)
                    .unwrap()
                    .with_origin(self.cfg.origin())
                    .unwrap();
                let in_range_all = self
                    .bh
                    .slots
                    .iter()
                    .flatten()
                    .map(|b| in_range(b, &cfg))
                    .chain(
                        self.sh
                            .points
                            .iter()
                            .map(|p| in_range(&B::try_new(*p, *p).unwrap(), &cfg)),
                    )
                    .try_fold(true, |acc, v| v.map(|v| acc && v));
                let got_h = self.hier.set_config(cfg);
                let got_m = self.multi.set_config(cfg);
                assert_eq!(got_h, got_m);
                match in_range_all {
                    Some(false) => assert_eq!(got_h, Err(Error::OutOfRange)),
                    Some(true) => {
                        let want = if self.entries(&cfg, None) > self.pool as u64 {
                            Err(Error::CapacityExceeded {
                                capacity: self.pool,
                            })
                        } else {
                            Ok(())
                        };
                        assert_eq!(got_h, want);
                    }
                    None => {}
                }
                if got_h.is_ok() {
                    self.cfg = cfg;
                }
            }
        }
    }
}

fn run<B: TestBox>(input: &Input, three_d: bool) {
    let base = BASES[input.base as usize % BASES.len()];
    let origin = B::Point::from_fn(|k| f32::from(input.origin[k]) * 0.37);
    let cfg = HashConfig::new(base, input.levels & 0x7fff_ffff)
        .unwrap()
        .with_origin(origin)
        .unwrap();
    let mut w = World::<B>::new(
        cfg,
        TABLES[input.table as usize % TABLES.len()],
        POOLS[input.pool as usize % POOLS.len()],
    );
    for (d3, op) in input.ops.iter().take(MAX_OPS) {
        if *d3 != three_d {
            continue;
        }
        w.apply(op);
        w.check();
    }
}

fuzz_target!(|input: Input| {
    run::<Aabb2>(&input, false);
    run::<Aabb3>(&input, true);
});
