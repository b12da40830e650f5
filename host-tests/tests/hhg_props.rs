//! Property tests of the hierarchical hash grid: random operation sequences
//! (insert, insert as unbounded, update, remove, both `update_all`
//! strategies, queries, clears, pair detection, record sorting) on ids
//! `0..48` (capacity 42) against an independent model (a `Vec<Option<B>>`
//! with its own per-axis overlap test), in 3D and 2D, under several
//! configurations and arena sizes.
//!
//! Boxes span several orders of magnitude (lattice boxes of edges `2⁻⁸` to
//! `56`, zero-size boxes, boxes copied from or touching stored boxes), so
//! several grids exist; bad boxes (NaN, inverted, wrong-signed infinities)
//! must be refused with the exact error, infinite boxes are refused by
//! `insert` and accepted by `insert_unbounded`, and huge or tiny finite
//! boxes may be refused with `OutOfRange` — in every case a refused
//! operation must change nothing (answers and `stats()` alike). (A bad box
//! on an already stored id may report either `DuplicateId` or the box's
//! error: the order of the checks is unspecified.)
//!
//! After every operation: `validate()` is Ok, `len()`, `get()` of every id,
//! `uses_grids()` and the `stats()` counts agree with the model, and the
//! pairs equal the model's exactly (normalised, sorted, no duplicates).

use spatium_host_tests::props as common;

use common::{Lattice, lattice, lattice_corners, pow2};
use proptest::prelude::*;
use proptest::test_runner::TestCaseResult;
use spatium::{
    Aabb2, Aabb3, BoundingBox, BroadPhase, Error, HhgConfig, HhgStats, Inspect, UpdateStrategy,
    Validate,
};
use spatium_host::make::{self, VecHhg};

/// Ids are `0..IDS`; those from `CAP` are out of range.
const IDS: u8 = 48;
const CAP: usize = 42;

// ---------------------------------------------------------------------------
// Boxes
// ---------------------------------------------------------------------------

/// Boxes the tests can build unchecked (NaN, inverted, infinite).
use spatium_host::boxes::{TestBox, corners, dim, overlap, same, same_opt};

/// A box no configuration may refuse once the levels were fixed by such a
/// box: finite lattice-like values (`0` or `2⁻¹⁰ ≤ |x| ≤ 2¹²`), edges `0` or
/// at least `2⁻¹⁰`. (The smallest level cell is then far above `f32`
/// underflow and the largest far above `2¹² / 2²⁰`.)
fn tame<B: BoundingBox>(b: &B) -> bool {
    let (lo, hi) = corners(b);
    let ok = |x: f32| x.is_finite() && (x == 0.0 || (x.abs() >= 1.0 / 1024.0 && x.abs() <= 4096.0));
    (0..dim::<B>()).all(|k| {
        let e = hi[k] - lo[k];
        ok(lo[k]) && ok(hi[k]) && (e == 0.0 || e >= 1.0 / 1024.0)
    })
}

/// Finite `(lo, hi)` pairs far from the lattice: huge coordinates (out of
/// range for small cells), edges that overflow, negative zero, subnormals,
/// a tiny edge (a tiny `c₀` if it comes first).
const EXOTIC: [(f32, f32); 14] = [
    (1.0e12, 1.0e12),
    (-1.0e12, -1.0e12),
    (1.0e30, 1.0e30),
    (-1.0e30, -1.0e30),
    (-3.0e38, 3.0e38),
    (-1.0e20, 1.0e20),
    (f32::MAX, f32::MAX),
    (-f32::MAX, -f32::MAX),
    (2.0e6, 2.0e6),
    (1.0e7, 1.0e7 + 1.0),
    (-0.0, 0.0),
    (1.0e-40, 1.0e-39),
    (0.0, 1.0e-37),
    (-5.0e5, 5.0e5),
];

#[derive(Clone, Copy, Debug)]
enum Defect {
    /// The lattice box.
    None,
    /// A copy of the stored box `of`, or (`touch`) a lattice-sized box whose
    /// lower corner is `of`'s, moved to `of`'s upper face on `axis`. The
    /// lattice box if `of` is not a stored bounded box.
    Near { of: u8, axis: u8, touch: bool },
    /// NaN on one corner of one axis.
    Nan { axis: u8, hi: bool },
    /// `max < min` on one axis.
    Inverted { axis: u8 },
    /// `-∞` below and/or `+∞` above on one axis (`axis ≥ DIM`: every axis;
    /// neither flag: both): valid only as unbounded.
    Infinite { axis: u8, below: bool, above: bool },
    /// `+∞` below or `-∞` above: never valid.
    WrongInfinite { axis: u8, hi: bool },
    /// One of `EXOTIC` on one axis (`axis ≥ DIM`: every axis).
    Exotic { axis: u8, which: u8 },
}

#[derive(Clone, Copy, Debug)]
struct Spec {
    lat: Lattice,
    defect: Defect,
}

fn defect() -> impl Strategy<Value = Defect> {
    prop_oneof![
        10 => Just(Defect::None),
        4 => (0..IDS, 0u8..3, any::<bool>())
            .prop_map(|(of, axis, touch)| Defect::Near { of, axis, touch }),
        1 => (0u8..3, any::<bool>()).prop_map(|(axis, hi)| Defect::Nan { axis, hi }),
        1 => (0u8..3).prop_map(|axis| Defect::Inverted { axis }),
        1 => (0u8..4, any::<bool>(), any::<bool>())
            .prop_map(|(axis, below, above)| Defect::Infinite { axis, below, above }),
        1 => (0u8..3, any::<bool>()).prop_map(|(axis, hi)| Defect::WrongInfinite { axis, hi }),
        2 => (0u8..4, 0..EXOTIC.len() as u8)
            .prop_map(|(axis, which)| Defect::Exotic { axis, which }),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    (lattice(), defect()).prop_map(|(lat, defect)| Spec { lat, defect })
}

/// Mostly valid boxes (for the prefill that takes the default configuration
/// past its small-N threshold).
fn good_spec() -> impl Strategy<Value = Spec> {
    let defect = prop_oneof![
        3 => Just(Defect::None),
        1 => (0..IDS, 0u8..3, any::<bool>())
            .prop_map(|(of, axis, touch)| Defect::Near { of, axis, touch }),
    ];
    (lattice(), defect).prop_map(|(lat, defect)| Spec { lat, defect })
}

/// The box of `spec`, resolved against the model's stored boxes.
fn make_box<B: TestBox>(spec: &Spec, m: &Model<B>) -> B {
    let d = dim::<B>();
    let l = spec.lat;
    let step = 0.25 * pow2(l.se);
    let (mut lo, mut hi) = lattice_corners(&l);
    let axis = |a: u8| usize::from(a) % d;
    match spec.defect {
        Defect::None => {}
        Defect::Near { of, axis: a, touch } => {
            if let Some(Some(b)) = m.boxes.get(usize::from(of))
                && !m.unbounded[usize::from(of)]
            {
                let (blo, bhi) = corners(b);
                if touch {
                    lo = blo;
                    lo[axis(a)] = bhi[axis(a)];
                    for k in 0..3 {
                        hi[k] = lo[k] + f32::from(l.edge[k]) * step;
                    }
                } else {
                    (lo, hi) = (blo, bhi);
                }
            }
        }
        Defect::Nan { axis: a, hi: h } => {
            if h {
                hi[axis(a)] = f32::NAN;
            } else {
                lo[axis(a)] = f32::NAN;
            }
        }
        Defect::Inverted { axis: a } => {
            let k = axis(a);
            let mut v = lo[k] - (1.0 + f32::from(l.edge[k])) * step;
            if v >= lo[k] {
                v = lo[k].next_down();
            }
            hi[k] = v;
        }
        Defect::Infinite {
            axis: a,
            below,
            above,
        } => {
            let axes = if usize::from(a) >= d {
                0..d
            } else {
                usize::from(a)..usize::from(a) + 1
            };
            for k in axes {
                if below || !above {
                    lo[k] = f32::NEG_INFINITY;
                }
                if above || !below {
                    hi[k] = f32::INFINITY;
                }
            }
        }
        Defect::WrongInfinite { axis: a, hi: h } => {
            if h {
                hi[axis(a)] = f32::NEG_INFINITY;
            } else {
                lo[axis(a)] = f32::INFINITY;
            }
        }
        Defect::Exotic { axis: a, which } => {
            let (x, y) = EXOTIC[usize::from(which) % EXOTIC.len()];
            let axes = if usize::from(a) >= d {
                0..d
            } else {
                usize::from(a)..usize::from(a) + 1
            };
            for k in axes {
                lo[k] = x;
                hi[k] = y;
            }
        }
    }
    B::raw(lo, hi)
}

// ---------------------------------------------------------------------------
// Expected outcomes
// ---------------------------------------------------------------------------

/// What an operation on one box must do.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    Exactly(Result<(), Error>),
    /// A finite, valid box a grid may be unable to represent.
    OkOrOutOfRange,
}

impl Expect {
    fn allows(self, r: Result<(), Error>) -> bool {
        match self {
            Expect::Exactly(e) => r == e,
            Expect::OkOrOutOfRange => r.is_ok() || r == Err(Error::OutOfRange),
        }
    }
}

/// A box for `insert` / `update` of a bounded id. The generators make at
/// most one defect per box, so the error is unambiguous.
fn expect_bounded<B: BoundingBox>(b: &B, levels_tame: Option<bool>) -> Expect {
    let (lo, hi) = corners(b);
    let d = dim::<B>();
    if (0..d).any(|k| !lo[k].is_finite() || !hi[k].is_finite()) {
        return Expect::Exactly(Err(Error::NonFinite));
    }
    if (0..d).any(|k| lo[k] > hi[k]) {
        return Expect::Exactly(Err(Error::InvertedBox));
    }
    if tame(b) && levels_tame != Some(false) {
        Expect::Exactly(Ok(()))
    } else {
        Expect::OkOrOutOfRange
    }
}

/// A box for `insert_unbounded`, `query`, or `update` of an unbounded id.
fn expect_unbounded<B: BoundingBox>(b: &B) -> Result<(), Error> {
    let (lo, hi) = corners(b);
    let d = dim::<B>();
    if (0..d).any(|k| {
        lo[k].is_nan() || hi[k].is_nan() || lo[k] == f32::INFINITY || hi[k] == f32::NEG_INFINITY
    }) {
        return Err(Error::NonFinite);
    }
    if (0..d).any(|k| lo[k] > hi[k]) {
        return Err(Error::InvertedBox);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------

struct Model<B> {
    boxes: Vec<Option<B>>,
    /// Stored through `insert_unbounded`.
    unbounded: Vec<bool>,
    /// The grids are in use (the small-N threshold was reached by an insert).
    grid_mode: bool,
    small_n: u32,
    /// Whether the box that fixed the levels (the first bounded box inserted
    /// since the last clear) was tame; `None` before it.
    levels_tame: Option<bool>,
}

impl<B: BoundingBox> Model<B> {
    fn new(small_n: u32) -> Self {
        Self {
            boxes: vec![None; CAP],
            unbounded: vec![false; CAP],
            grid_mode: false,
            small_n,
            levels_tame: None,
        }
    }

    fn len(&self) -> usize {
        self.boxes.iter().flatten().count()
    }

    fn pairs(&self) -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        for i in 0..CAP {
            for j in i + 1..CAP {
                if let (Some(a), Some(b)) = (&self.boxes[i], &self.boxes[j])
                    && overlap(a, b)
                {
                    v.push((i as u32, j as u32));
                }
            }
        }
        v
    }

    fn hits(&self, q: &B) -> Vec<u32> {
        (0..CAP)
            .filter(|&i| self.boxes[i].as_ref().is_some_and(|b| overlap(b, q)))
            .map(|i| i as u32)
            .collect()
    }

    fn clear(&mut self) {
        self.boxes.fill(None);
        self.unbounded.fill(false);
        self.grid_mode = false;
        self.levels_tame = None;
    }
}

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Len {
    Full,
    /// `k % CAP` entries: stored ids beyond them give `LengthMismatch`.
    Short(u8),
    /// `CAP + 3` entries (the extra ones NaN, to be ignored).
    Long,
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u8, Spec),
    InsertUnbounded(u8, Spec),
    Update(u8, Spec),
    Remove(u8),
    /// The model's boxes with some moved; entries of absent ids are NaN
    /// (`nan_fill`) or zero boxes, to be ignored.
    UpdateAll {
        incremental: bool,
        moves: Vec<(u8, Spec)>,
        len: Len,
        nan_fill: bool,
    },
    Query(Spec),
    Clear,
    Pairs,
    SortRecords,
}

fn op() -> impl Strategy<Value = Op> {
    let len = prop_oneof![
        6 => Just(Len::Full),
        1 => any::<u8>().prop_map(Len::Short),
        1 => Just(Len::Long),
    ];
    prop_oneof![
        6 => (0..IDS, spec()).prop_map(|(i, s)| Op::Insert(i, s)),
        1 => (0..IDS, spec()).prop_map(|(i, s)| Op::InsertUnbounded(i, s)),
        5 => (0..IDS, spec()).prop_map(|(i, s)| Op::Update(i, s)),
        3 => (0..IDS).prop_map(Op::Remove),
        2 => (
            any::<bool>(),
            prop::collection::vec((0..IDS, spec()), 0..8),
            len,
            any::<bool>(),
        )
            .prop_map(|(incremental, moves, len, nan_fill)| Op::UpdateAll {
                incremental,
                moves,
                len,
                nan_fill,
            }),
        3 => spec().prop_map(Op::Query),
        1 => Just(Op::Clear),
        1 => Just(Op::Pairs),
        1 => Just(Op::SortRecords),
    ]
}

/// A prefill of mostly valid inserts on ids `0..` (often enough to pass the
/// default small-N threshold of 32), then random operations.
fn ops(max_ops: usize) -> impl Strategy<Value = Vec<Op>> {
    let prefill = prop_oneof![
        1 => prop::collection::vec(good_spec(), 0..8),
        1 => prop::collection::vec(good_spec(), 28..CAP),
    ];
    (prefill, prop::collection::vec(op(), 1..max_ops)).prop_map(|(pre, rest)| {
        pre.into_iter()
            .enumerate()
            .map(|(i, s)| Op::Insert(i as u8, s))
            .chain(rest)
            .collect()
    })
}

// ---------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------

fn sorted_pairs<B: BoundingBox>(g: &mut VecHhg<B>) -> Result<Vec<(u32, u32)>, TestCaseError> {
    let mut v = Vec::new();
    let r = g.for_each_overlap(|a, b| v.push((a, b)));
    prop_assert_eq!(r, Ok(()));
    prop_assert!(v.iter().all(|&(a, b)| a != b), "self pair in {:?}", v);
    let mut n: Vec<(u32, u32)> = v.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
    n.sort_unstable();
    let len = n.len();
    n.dedup();
    prop_assert_eq!(n.len(), len, "duplicate pairs");
    Ok(n)
}

fn query<B: BoundingBox>(g: &mut VecHhg<B>, q: &B) -> Result<Vec<u32>, Error> {
    let mut v = Vec::new();
    g.query(q, |id| v.push(id))?;
    v.sort_unstable();
    Ok(v)
}

/// Everything the model predicts, after every operation.
fn check<B: BoundingBox>(g: &mut VecHhg<B>, m: &Model<B>, arena: usize) -> TestCaseResult {
    if let Err(c) = g.validate() {
        return Err(TestCaseError::fail(format!("validate: {c}")));
    }
    let n = m.len();
    prop_assert_eq!(g.box_count(), n);
    prop_assert_eq!(g.box_count() == 0, n == 0);
    for id in 0..u32::from(IDS) {
        let want = m.boxes.get(id as usize).copied().flatten();
        let got = g.get(id);
        prop_assert!(
            same_opt(got, want),
            "get({}) = {:?}, model {:?}",
            id,
            got,
            want
        );
    }
    prop_assert!(g.get(u32::MAX).is_none());
    prop_assert_eq!(g.uses_grids(), m.grid_mode);
    let st = g.stats();
    let nu = (0..CAP)
        .filter(|&i| m.unbounded[i] && m.boxes[i].is_some())
        .count();
    let in_grids: u32 = st.grid[..st.grids].iter().map(|s| s.objects).sum();
    prop_assert_eq!(st.small_n, !m.grid_mode);
    prop_assert_eq!(
        st.flat_objects + st.unbounded_objects + in_grids as usize,
        n
    );
    prop_assert_eq!(st.arena_words, arena);
    prop_assert!(st.arena_words_used <= arena);
    if m.grid_mode {
        prop_assert_eq!(st.flat_objects, 0);
        prop_assert!(st.unbounded_objects >= nu);
    } else {
        prop_assert_eq!(st.grids, 0);
        prop_assert_eq!(st.unbounded_objects, nu);
    }
    for s in &st.grid[..st.grids] {
        let per: u32 = s.cells_per_axis.iter().product();
        prop_assert_eq!(s.cells, per);
        prop_assert!(s.occupied_cells <= s.objects && s.max_objects_per_cell <= s.objects);
        prop_assert_eq!(s.objects > 0, s.max_objects_per_cell > 0);
    }
    for s in &st.grid[st.grids..] {
        prop_assert_eq!(s.objects, 0);
    }
    prop_assert_eq!(sorted_pairs(g)?, m.pairs());
    Ok(())
}

/// Applies one operation to the structure and the model.
fn apply<B: TestBox>(g: &mut VecHhg<B>, m: &mut Model<B>, op: &Op) -> TestCaseResult {
    let before: HhgStats = g.stats();
    let r: Result<(), Error> = match op {
        Op::Insert(id, spec) => {
            let b = make_box::<B>(spec, m);
            let i = usize::from(*id);
            let r = g.insert(u32::from(*id), b);
            if i >= CAP {
                prop_assert_eq!(r, Err(Error::IdOutOfRange { id: u32::from(*id) }));
            } else if m.boxes[i].is_some() {
                let dup = Err(Error::DuplicateId { id: u32::from(*id) });
                match expect_bounded(&b, m.levels_tame) {
                    // Both the id and the box are wrong: either error will do.
                    Expect::Exactly(Err(e)) => {
                        prop_assert!(r == dup || r == Err(e), "insert on a stored id: {:?}", r)
                    }
                    _ => prop_assert_eq!(r, dup),
                }
            } else {
                let e = expect_bounded(&b, m.levels_tame);
                prop_assert!(
                    e.allows(r),
                    "insert({}, {:?}) = {:?}, want {:?}",
                    id,
                    b,
                    r,
                    e
                );
                if r.is_ok() {
                    m.boxes[i] = Some(b);
                    m.unbounded[i] = false;
                    if m.levels_tame.is_none() {
                        m.levels_tame = Some(tame(&b));
                    }
                    if m.len() as u32 >= m.small_n {
                        m.grid_mode = true;
                    }
                }
            }
            r
        }
        Op::InsertUnbounded(id, spec) => {
            let b = make_box::<B>(spec, m);
            let i = usize::from(*id);
            let r = g.insert_unbounded(u32::from(*id), b);
            let want = if i >= CAP {
                Err(Error::IdOutOfRange { id: u32::from(*id) })
            } else if m.boxes[i].is_some() {
                Err(Error::DuplicateId { id: u32::from(*id) })
            } else {
                expect_unbounded(&b)
            };
            if i < CAP && m.boxes[i].is_some() && expect_unbounded(&b).is_err() {
                prop_assert!(r == want || r == expect_unbounded(&b), "{:?}", r);
            } else {
                prop_assert_eq!(r, want, "insert_unbounded({}, {:?})", id, b);
            }
            if r.is_ok() {
                m.boxes[i] = Some(b);
                m.unbounded[i] = true;
            }
            r
        }
        Op::Update(id, spec) => {
            let b = make_box::<B>(spec, m);
            let i = usize::from(*id);
            let r = g.update(u32::from(*id), b);
            if i >= CAP {
                prop_assert_eq!(r, Err(Error::IdOutOfRange { id: u32::from(*id) }));
            } else if m.boxes[i].is_none() {
                prop_assert_eq!(r, Err(Error::UnknownId { id: u32::from(*id) }));
            } else {
                let e = if m.unbounded[i] {
                    Expect::Exactly(expect_unbounded(&b))
                } else {
                    expect_bounded(&b, m.levels_tame)
                };
                prop_assert!(
                    e.allows(r),
                    "update({}, {:?}) = {:?}, want {:?}",
                    id,
                    b,
                    r,
                    e
                );
                if r.is_ok() {
                    m.boxes[i] = Some(b);
                }
            }
            r
        }
        Op::Remove(id) => {
            let r = g.remove(u32::from(*id));
            let i = usize::from(*id);
            if i >= CAP {
                prop_assert_eq!(r, Err(Error::IdOutOfRange { id: u32::from(*id) }));
            } else {
                match m.boxes[i] {
                    None => prop_assert_eq!(r, Err(Error::UnknownId { id: u32::from(*id) })),
                    Some(b) => {
                        prop_assert!(r.as_ref().is_ok_and(|got| same(got, &b)), "remove: {:?}", r);
                        m.boxes[i] = None;
                        m.unbounded[i] = false;
                    }
                }
            }
            r.map(|_| ())
        }
        Op::UpdateAll {
            incremental,
            moves,
            len,
            nan_fill,
        } => {
            let fill = if *nan_fill {
                B::raw([f32::NAN; 3], [f32::NAN; 3])
            } else {
                B::ZERO
            };
            let mut boxes: Vec<B> = m.boxes.iter().map(|b| b.unwrap_or(fill)).collect();
            for (id, spec) in moves {
                let b = make_box::<B>(spec, m);
                if let Some(slot) = boxes.get_mut(usize::from(*id)) {
                    *slot = b;
                }
            }
            match len {
                Len::Full => {}
                Len::Short(k) => boxes.truncate(usize::from(*k) % CAP),
                Len::Long => boxes.extend([B::raw([f32::NAN; 3], [f32::NAN; 3]); 3]),
            }
            // Every stored id in order: the first bad box's error, after any
            // box a grid may refuse; then the length.
            let mut allowed = Vec::new();
            let mut done = false;
            let mut seen = 0;
            for (i, b) in boxes.iter().enumerate().take(CAP) {
                if m.boxes[i].is_none() {
                    continue;
                }
                seen += 1;
                let e = if m.unbounded[i] {
                    Expect::Exactly(expect_unbounded(b))
                } else {
                    expect_bounded(b, m.levels_tame)
                };
                match e {
                    Expect::Exactly(Ok(())) => {}
                    Expect::Exactly(Err(x)) => {
                        allowed.push(Err(x));
                        done = true;
                        break;
                    }
                    Expect::OkOrOutOfRange => allowed.push(Err(Error::OutOfRange)),
                }
            }
            if !done {
                if seen == m.len() {
                    allowed.push(Ok(()));
                } else {
                    allowed.push(Err(Error::LengthMismatch {
                        expected: m.len(),
                        got: seen,
                    }));
                }
            }
            let strategy = if *incremental {
                UpdateStrategy::Incremental
            } else {
                UpdateStrategy::ClearAndReinsert
            };
            let r = g.update_all(&boxes, strategy);
            prop_assert!(
                allowed.contains(&r),
                "update_all = {:?}, allowed {:?}",
                r,
                allowed
            );
            if r.is_ok() {
                for (stored, b) in m.boxes.iter_mut().zip(&boxes) {
                    if stored.is_some() {
                        *stored = Some(*b);
                    }
                }
            }
            r
        }
        Op::Query(spec) => {
            let q = make_box::<B>(spec, m);
            let got = query(g, &q);
            match expect_unbounded(&q) {
                Err(e) => prop_assert_eq!(got.clone(), Err(e), "query {:?}", q),
                Ok(()) => {
                    let want = m.hits(&q);
                    prop_assert_eq!(got.clone(), Ok(want), "query {:?}", q);
                }
            }
            got.map(|_| ())
        }
        Op::Clear => {
            g.clear();
            m.clear();
            Ok(())
        }
        Op::Pairs => {
            // Deterministic order, and every stored box as a query.
            let mut a = Vec::new();
            let mut b = Vec::new();
            g.for_each_overlap(|x, y| a.push((x, y))).unwrap();
            g.for_each_overlap(|x, y| b.push((x, y))).unwrap();
            prop_assert_eq!(a, b, "for_each_pair not deterministic");
            for i in 0..CAP {
                if let Some(q) = m.boxes[i] {
                    prop_assert_eq!(query(g, &q), Ok(m.hits(&q)), "query with box {}", i);
                }
            }
            Ok(())
        }
        Op::SortRecords => {
            g.sort_records();
            Ok(())
        }
    };
    if r.is_err() {
        prop_assert_eq!(g.stats(), before, "a refused {:?} changed the stats", op);
    }
    Ok(())
}

fn run<B: TestBox>(cfg: HhgConfig, arena: usize, ops: &[Op]) -> TestCaseResult {
    let mut g = make::hhg::<B>(CAP, arena, cfg);
    let mut m = Model::<B>::new(cfg.small_n_threshold());
    check(&mut g, &m, arena)?;
    for (k, op) in ops.iter().enumerate() {
        apply(&mut g, &mut m, op)
            .and_then(|()| check(&mut g, &m, arena))
            .map_err(|e| TestCaseError::fail(format!("op {k} ({op:?}): {e}")))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Configurations
// ---------------------------------------------------------------------------

/// Room for every grid of the hierarchy at the initial size.
const ROOMY: usize = 1 << 17;

fn default() -> HhgConfig {
    HhgConfig::DEFAULT
}

fn grids_from_start() -> HhgConfig {
    HhgConfig::DEFAULT.with_small_n_threshold(0)
}

fn factor_1_5() -> HhgConfig {
    HhgConfig::DEFAULT.with_hierarchy_factor(1.5).unwrap()
}

fn dense_small_grids() -> HhgConfig {
    HhgConfig::DEFAULT
        .with_density(4.0)
        .unwrap()
        .with_initial_cells_log2(2)
        .unwrap()
}

/// Grids of 4 cells per axis that grow from 9 (3D) or 3 (2D) boxes.
fn growing() -> HhgConfig {
    HhgConfig::DEFAULT
        .with_initial_cells_log2(2)
        .unwrap()
        .with_small_n_threshold(0)
}

macro_rules! props {
    ($($name:ident: $b:ty, $cases:expr, $cfg:expr, $arena:expr;)*) => {$(
        proptest! {
            #![proptest_config(ProptestConfig::with_cases($cases))]
            #[test]
            fn $name(ops in ops(60)) {
                run::<$b>($cfg, $arena, &ops)?;
            }
        }
    )*};
}

props! {
    matches_model_3d_default: Aabb3, 600, default(), ROOMY;
    matches_model_3d_grids_from_start: Aabb3, 600, grids_from_start(), ROOMY;
    matches_model_3d_factor_1_5: Aabb3, 400, factor_1_5(), ROOMY;
    matches_model_3d_dense_small_grids: Aabb3, 400, dense_small_grids(), ROOMY;
    matches_model_3d_growing: Aabb3, 400, growing(), ROOMY;
    // One grid of 4³ cells at most (a second is refused): saturation and
    // fallbacks to the larger grid and to the unbounded container.
    matches_model_3d_arena_1000: Aabb3, 400, default(), 1000;
    matches_model_3d_arena_1000_grids_from_start: Aabb3, 400, grids_from_start(), 1000;
    // No grid at all: every box in the flat array or the unbounded container.
    matches_model_3d_no_arena: Aabb3, 250, grids_from_start(), 0;
    matches_model_2d_default: Aabb2, 200, default(), ROOMY;
    matches_model_2d_grids_from_start: Aabb2, 200, grids_from_start(), ROOMY;
    matches_model_2d_factor_1_5: Aabb2, 150, factor_1_5(), ROOMY;
    matches_model_2d_dense_small_grids: Aabb2, 150, dense_small_grids(), ROOMY;
    matches_model_2d_growing: Aabb2, 200, growing(), ROOMY;
    matches_model_2d_arena_300: Aabb2, 200, grids_from_start(), 300;
    matches_model_2d_no_arena: Aabb2, 100, default(), 0;
}

/// The generators reach what the properties are about: several grids at
/// once, the unbounded container, growth, refusals of every kind.
#[test]
fn generators_cover_the_interesting_states() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = ops(60);
    let (mut max_grids, mut unbounded, mut grew) = (0, 0, false);
    let mut errors: Vec<String> = Vec::new();
    for _ in 0..40 {
        let ops = strategy.new_tree(&mut runner).unwrap().current();
        let mut g = make::hhg::<Aabb3>(CAP, ROOMY, growing());
        let mut m = Model::<Aabb3>::new(0);
        for op in &ops {
            // Count the refusals through the public API, then apply.
            if let Op::Insert(id, spec) = op {
                let b = make_box::<Aabb3>(spec, &m);
                let mut probe = g.clone();
                if let Err(e) = probe.insert(u32::from(*id), b) {
                    errors.push(
                        format!("{e:?}")
                            .split([' ', '{'])
                            .next()
                            .unwrap()
                            .to_owned(),
                    );
                }
            }
            apply(&mut g, &mut m, op).unwrap();
            let st = g.stats();
            max_grids = max_grids.max(st.grids);
            unbounded = unbounded.max(st.unbounded_objects);
            grew |= st.grid[..st.grids].iter().any(|s| s.cells_per_axis[0] > 4);
        }
    }
    assert!(max_grids >= 4, "at most {max_grids} grids at once");
    assert!(unbounded >= 2, "unbounded container: {unbounded}");
    assert!(grew, "no grid grew");
    for e in [
        "IdOutOfRange",
        "DuplicateId",
        "NonFinite",
        "InvertedBox",
        "OutOfRange",
    ] {
        assert!(
            errors.iter().any(|x| x == e),
            "never refused with {e}: {errors:?}"
        );
    }
}
