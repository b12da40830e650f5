//! Property tests of the linear kd-tree (`spatium::kdtree`).
//!
//! **Broad phase.** Random operation sequences (insert, update, small moves,
//! remove, clear, pair enumeration in every candidate mode, box queries) on
//! ids `0..40` (id capacity 36, so some ids are out of range), judged by the
//! shared broad-phase model (`spatium_host_tests::model::BroadModel`, lazy:
//! changes accumulate between detections) with the kd-tree's layer on top
//! (`spatium_host_tests::kd_model`, the same judge as the `kdtree` fuzz
//! target: exact predictions, candidate modes, records and stats). Boxes are dyadic lattice boxes of edges
//! `2⁻⁸` to `56` (so they coincide and touch exactly), zero-extent boxes,
//! copies of stored boxes and boxes touching their faces, boxes moved by
//! ±10⁶, huge and tiny finite values, and bad boxes (NaN, inverted,
//! infinities). Every operation's result is predicted; a refused operation
//! must change nothing (every `get`, the pair set, the records and the
//! stats). After every operation: `validate()` is Ok, `len` and `get` of every
//! id agree with the model, and a clone rebuilt by `for_each_pair` gives
//! exactly the model's pairs and passes `validate()` with its keys checked.
//! The rebuilt stats and records are checked too: every stored box has
//! exactly `pieces()` records, `split_elements` counts the split ones, and
//! with a fixed root the frame is that root and `clamped` counts the boxes
//! reaching outside it. Configurations: every code width, octree cells, no
//! splitting, a split gain of 3, temporal reuse, comparison sort, one bit
//! per axis, the most bits `u128` holds, a small fixed root (most boxes
//! clamped), record buffers of exactly the id capacity (no room to split)
//! and smaller than it (a full structure refuses inserts with
//! `CapacityExceeded` and loses nothing), 2D and 3D.
//!
//! **Batch tree.** `LinearKdTree` builds over random box sets (zero-extent,
//! duplicated, face-sharing, huge and tiny boxes, scenes around ±10⁶) under
//! random configurations: raw candidates contain every overlapping pair
//! (`count_raw` counts them, no self pairs), unique candidates contain them
//! once each, exact pairs equal brute force, queries equal brute force, and
//! `validate` / `validate_against` pass. A refused build (NaN, infinite or
//! inverted box, more boxes than the record buffers, too many bits for the
//! code type) keeps `records()`, `stats()` and every answer. A second build
//! over moved boxes exercises temporal reuse. On exact scenes (dyadic
//! coordinates in the dyadic root `[-64, 64]`, a third of the cases) the
//! unique candidates must be exactly the pairs whose quantised ranges
//! overlap, computed here from the frame, and every record's cell must
//! overlap its box. Degenerate scenes (no box, identical points or boxes,
//! boxes spanning all of `f32`, points at its extreme corners) are built
//! under every combination of the configuration options.

use spatium_host_tests::props as common;

use common::{Lattice, lattice, lattice_corners, pow2};
use proptest::prelude::*;
use proptest::test_runner::TestCaseResult;
use spatium::Inspect;
use spatium::kdtree::{
    Candidates, KdBroadPhase, KdConfig, KdRecord, KdSlot, LinearKdTree, LocCode, SortAlgo, Split,
};
use spatium::{Aabb2, Aabb3, BoundingBox, BroadPhase, Error, Validate};
use spatium_host_tests::kd_model::{Configured, KdModel, KdOp, nudged};
use spatium_host_tests::model::{BoxSpec, BroadOp};

/// Ids are `0..IDS`; those from `CAP` are out of range.
const IDS: u8 = 40;
const CAP: usize = 36;

type Bp<B, K> = KdBroadPhase<B, K, Vec<KdSlot<B>>, Vec<KdRecord<K>>>;
type Tree<B, K> = LinearKdTree<B, K, Vec<KdRecord<K>>>;

// ---------------------------------------------------------------------------
// Boxes
// ---------------------------------------------------------------------------

/// Boxes the tests can build unchecked (NaN, inverted, infinite).
use spatium_host::boxes::{TestBox, corners, dim, overlap};

/// Finite `(lo, hi)` pairs far from the lattice: huge coordinates and
/// edges, edges that overflow `f32` when subtracted, negative zero,
/// subnormals, tiny edges, values around ±10⁶.
const EXOTIC: [(f32, f32); 16] = [
    (1.0e12, 1.0e12),
    (-1.0e12, -1.0e12),
    (1.0e30, 1.0e30),
    (-1.0e30, 1.0e30),
    (-3.0e38, 3.0e38),
    (f32::MAX, f32::MAX),
    (-f32::MAX, -f32::MAX),
    (-f32::MAX, f32::MAX),
    (-0.0, 0.0),
    (1.0e-40, 1.0e-39),
    (0.0, 1.0e-37),
    (-5.0e5, 5.0e5),
    (1.0e6, 1.0e6 + 0.0625),
    (-1.0e6 - 1.0, -1.0e6),
    (1.0, 1.0 + f32::EPSILON),
    (-1.0e-30, 1.0e-30),
];

#[derive(Clone, Copy, Debug)]
enum Defect {
    /// The lattice box.
    None,
    /// A copy of stored box `of`, or (`touch`) a lattice-sized box whose
    /// lower corner is `of`'s, moved to `of`'s upper face on `axis`. The
    /// lattice box if `of` is not stored.
    Near { of: u8, axis: u8, touch: bool },
    /// The lattice box with all edges zero.
    Zero,
    /// The lattice box moved by ±10⁶ on every axis (`f32` rounds it).
    Far { neg: bool },
    /// One of `EXOTIC` on one axis (`axis ≥ DIM`: every axis).
    Exotic { axis: u8, which: u8 },
    /// NaN on one corner of one axis.
    Nan { axis: u8, hi: bool },
    /// `max < min` on one axis.
    Inverted { axis: u8 },
    /// `-∞` below or `+∞` above on one axis.
    Infinite { axis: u8, hi: bool },
    /// `+∞` below or `-∞` above.
    WrongInfinite { axis: u8, hi: bool },
}

#[derive(Clone, Copy, Debug)]
struct Spec {
    lat: Lattice,
    defect: Defect,
}

fn valid_defect() -> impl Strategy<Value = Defect> {
    prop_oneof![
        10 => Just(Defect::None),
        5 => (0..IDS, 0u8..3, any::<bool>())
            .prop_map(|(of, axis, touch)| Defect::Near { of, axis, touch }),
        1 => Just(Defect::Zero),
        1 => any::<bool>().prop_map(|neg| Defect::Far { neg }),
        2 => (0u8..4, 0..EXOTIC.len() as u8)
            .prop_map(|(axis, which)| Defect::Exotic { axis, which }),
    ]
}

fn defect() -> impl Strategy<Value = Defect> {
    prop_oneof![
        19 => valid_defect(),
        1 => (0u8..3, any::<bool>()).prop_map(|(axis, hi)| Defect::Nan { axis, hi }),
        1 => (0u8..3).prop_map(|axis| Defect::Inverted { axis }),
        1 => (0u8..3, any::<bool>()).prop_map(|(axis, hi)| Defect::Infinite { axis, hi }),
        1 => (0u8..3, any::<bool>()).prop_map(|(axis, hi)| Defect::WrongInfinite { axis, hi }),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    (lattice(), defect()).prop_map(|(lat, defect)| Spec { lat, defect })
}

fn valid_spec() -> impl Strategy<Value = Spec> {
    (lattice(), valid_defect()).prop_map(|(lat, defect)| Spec { lat, defect })
}

/// The box of `spec`; `near(of)` resolves `Defect::Near` (a stored box).
fn make_box<B: TestBox>(spec: &Spec, near: impl Fn(u8) -> Option<B>) -> B {
    let d = dim::<B>();
    let l = spec.lat;
    let step = 0.25 * pow2(l.se);
    let (mut lo, mut hi) = lattice_corners(&l);
    let axis = |a: u8| usize::from(a) % d;
    match spec.defect {
        Defect::None => {}
        Defect::Near { of, axis: a, touch } => {
            if let Some(b) = near(of) {
                let (blo, bhi) = corners(&b);
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
        Defect::Zero => hi = lo,
        Defect::Far { neg } => {
            let s = if neg { -1.0e6 } else { 1.0e6 };
            for k in 0..3 {
                lo[k] += s;
                hi[k] += s;
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
        Defect::Infinite { axis: a, hi: h } => {
            if h {
                hi[axis(a)] = f32::INFINITY;
            } else {
                lo[axis(a)] = f32::NEG_INFINITY;
            }
        }
        Defect::WrongInfinite { axis: a, hi: h } => {
            if h {
                hi[axis(a)] = f32::NEG_INFINITY;
            } else {
                lo[axis(a)] = f32::INFINITY;
            }
        }
    }
    B::raw(lo, hi)
}

/// Normalised, sorted pairs; fails on self pairs and (`unique`) duplicates.
fn normalise(v: &[(u32, u32)], unique: bool, what: &str) -> Result<Vec<(u32, u32)>, TestCaseError> {
    prop_assert!(
        v.iter().all(|&(a, b)| a != b),
        "{}: self pair in {:?}",
        what,
        v
    );
    let mut n: Vec<(u32, u32)> = v.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
    n.sort_unstable();
    let len = n.len();
    n.dedup();
    if unique {
        prop_assert_eq!(n.len(), len, "{}: duplicate pairs in {:?}", what, v);
    }
    Ok(n)
}

/// Pairs of `want` missing from the sorted `got`.
fn missing(got: &[(u32, u32)], want: &[(u32, u32)]) -> Vec<(u32, u32)> {
    want.iter()
        .filter(|p| got.binary_search(p).is_err())
        .copied()
        .collect()
}

/// Brute-force pairs of a slice of boxes (box `i` has id `i`).
fn brute_pairs<B: BoundingBox>(boxes: &[B]) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    for i in 0..boxes.len() {
        for j in i + 1..boxes.len() {
            if overlap(&boxes[i], &boxes[j]) {
                v.push((i as u32, j as u32));
            }
        }
    }
    v
}

// ---------------------------------------------------------------------------
// Broad phase: model
// ---------------------------------------------------------------------------

fn fail(e: String) -> TestCaseError {
    TestCaseError::fail(e)
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u8, Spec),
    Update(u8, Spec),
    /// Moves stored box `id` by `delta · 2^-exp` (small moves, as temporal
    /// reuse expects); an absent id gets the lattice box at the origin.
    Nudge(u8, [i8; 3], u8),
    Remove(u8),
    Query(Spec),
    Clear,
    /// Pairs (twice: deterministic), every candidate mode, and every stored
    /// box as a query, on the structure itself.
    Pairs,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..IDS, spec()).prop_map(|(i, s)| Op::Insert(i, s)),
        6 => (0..IDS, spec()).prop_map(|(i, s)| Op::Update(i, s)),
        6 => (0..IDS, prop::array::uniform3(-3i8..=3), 0u8..8)
            .prop_map(|(i, d, e)| Op::Nudge(i, d, e)),
        3 => (0..IDS).prop_map(Op::Remove),
        3 => spec().prop_map(Op::Query),
        1 => Just(Op::Clear),
        2 => Just(Op::Pairs),
    ]
}

/// A prefill of valid inserts on ids `0..` (sometimes every id, so a
/// structure with small record buffers fills up), then random operations.
fn ops(max_ops: usize) -> impl Strategy<Value = Vec<Op>> {
    let prefill = prop_oneof![
        1 => prop::collection::vec(valid_spec(), 0..8),
        1 => prop::collection::vec(valid_spec(), 20..=CAP),
    ];
    (prefill, prop::collection::vec(op(), 1..max_ops)).prop_map(|(pre, rest)| {
        pre.into_iter()
            .enumerate()
            .map(|(i, s)| Op::Insert(i as u8, s))
            .chain(rest)
            .collect()
    })
}

/// One broad-phase configuration.
struct Setup<B> {
    cfg: Configured<B>,
    /// Length of each record buffer.
    records: usize,
}

fn setup<B: TestBox>(cfg: KdConfig<B>, records: usize) -> Setup<B> {
    Setup {
        // Reuse may be on (not readable from the configuration).
        cfg: Configured::new(cfg, None, true),
        records,
    }
}

fn with_root<B: TestBox>(cfg: KdConfig<B>, records: usize, lo: f32, hi: f32) -> Setup<B> {
    let root = B::raw([lo; 3], [hi; 3]);
    Setup {
        cfg: Configured::new(cfg.with_root(Some(root)).unwrap(), Some(root), true),
        records,
    }
}

/// The kd layer's operation for `op`: boxes made here (the kd-tree's own
/// generators: far, zero and exotic boxes), judged by the shared model with
/// the kd-tree's layer (`spatium_host_tests::kd_model`).
fn kd_op<B: TestBox>(m: &KdModel<B>, op: &Op) -> KdOp<B> {
    let make = |spec: &Spec| BoxSpec::Exact(make_box::<B>(spec, |of| m.broad.get(u32::from(of))));
    match op {
        Op::Insert(id, spec) => KdOp::Broad(BroadOp::Insert(u32::from(*id), make(spec))),
        Op::Update(id, spec) => KdOp::Broad(BroadOp::Update(u32::from(*id), make(spec))),
        Op::Nudge(id, delta, exp) => KdOp::Nudge(u32::from(*id), *delta, *exp),
        Op::Remove(id) => KdOp::Broad(BroadOp::Remove(u32::from(*id))),
        Op::Query(spec) => KdOp::Broad(BroadOp::Query(make(spec))),
        Op::Clear => KdOp::Broad(BroadOp::Clear),
        Op::Pairs => KdOp::Pairs,
    }
}

fn new_bp<B: TestBox, K: LocCode>(s: &Setup<B>) -> (Bp<B, K>, KdModel<B>) {
    let bp = KdBroadPhase::new(
        vec![KdSlot::EMPTY; CAP],
        vec![KdRecord::EMPTY; s.records],
        vec![KdRecord::EMPTY; s.records],
        s.cfg.config,
    );
    (bp, KdModel::new(CAP, s.records, s.cfg))
}

fn run_bp<B: TestBox, K: LocCode>(s: Setup<B>, ops: &[Op]) -> TestCaseResult {
    let (mut bp, mut m) = new_bp::<B, K>(&s);
    m.check(&bp).map_err(fail)?;
    for (k, op) in ops.iter().enumerate() {
        let op = kd_op(&m, op);
        let _ = m
            .apply(&mut bp, &op)
            .map_err(|e| TestCaseError::fail(format!("op {k}: {e}")))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Broad phase: configurations
// ---------------------------------------------------------------------------

fn d<B: TestBox>() -> KdConfig<B> {
    KdConfig::DEFAULT
}

/// Record buffers with room for every box split in 8.
const ROOMY: usize = 8 * CAP;
/// Fewer records than ids: the structure fills up at 12 boxes.
const FULL: usize = 12;

macro_rules! bp_props {
    ($($name:ident: $b:ty, $k:ty, $cases:expr, $setup:expr;)*) => {$(
        proptest! {
            #![proptest_config(ProptestConfig::with_cases($cases))]
            #[test]
            fn $name(ops in ops(60)) {
                run_bp::<$b, $k>($setup, &ops)?;
            }
        }
    )*};
}

bp_props! {
    bp_3d_u64_default: Aabb3, u64, 576, setup(d(), ROOMY);
    bp_3d_u32: Aabb3, u32, 384, setup(d(), ROOMY);
    bp_3d_u128: Aabb3, u128, 384, setup(d(), ROOMY);
    bp_3d_octree: Aabb3, u64, 288, setup(d().with_octree(true), ROOMY);
    bp_3d_no_split: Aabb3, u64, 288, setup(d().with_split(Split::None).unwrap(), CAP);
    bp_3d_gain3: Aabb3, u64, 288,
        setup(d().with_split(Split::Volume { min_gain_log2: 3 }).unwrap(), ROOMY);
    bp_3d_reuse: Aabb3, u64, 576, setup(d().with_temporal_reuse(true), ROOMY);
    bp_3d_reuse_u32_no_split: Aabb3, u32, 288,
        setup(d().with_temporal_reuse(true).with_split(Split::None).unwrap(), ROOMY);
    bp_3d_comparison_sort_one_bit: Aabb3, u64, 192,
        setup(d().with_sort(SortAlgo::Comparison).with_bits_per_axis(1), ROOMY);
    bp_3d_max_bits_u128: Aabb3, u128, 192, setup(d().with_bits_per_axis(42), ROOMY);
    // Most lattice boxes reach outside [-1, 1]³: clamped into the boundary
    // cells.
    bp_3d_small_root: Aabb3, u64, 384, with_root(d(), ROOMY, -1.0, 1.0);
    bp_3d_small_root_reuse_u32: Aabb3, u32, 288,
        with_root(d().with_temporal_reuse(true), ROOMY, -1.0, 1.0);
    bp_3d_root_octree_u128: Aabb3, u128, 192, with_root(d().with_octree(true), ROOMY, -16.0, 48.0);
    // As many records as ids: no room to split most boxes.
    bp_3d_exact_room: Aabb3, u64, 288, setup(d(), CAP);
    // Fewer records than ids: `CapacityExceeded` from the 13th box.
    bp_3d_full: Aabb3, u64, 384, setup(d(), FULL);
    bp_3d_full_reuse_u32: Aabb3, u32, 192, setup(d().with_temporal_reuse(true), FULL);
    bp_2d_u64_default: Aabb2, u64, 384, setup(d(), ROOMY);
    bp_2d_u32_reuse: Aabb2, u32, 288, setup(d().with_temporal_reuse(true), ROOMY);
    bp_2d_u128_octree: Aabb2, u128, 192, setup(d().with_octree(true), ROOMY);
    bp_2d_no_split: Aabb2, u64, 192, setup(d().with_split(Split::None).unwrap(), CAP);
    bp_2d_small_root: Aabb2, u64, 288, with_root(d(), ROOMY, -1.0, 1.0);
    bp_2d_full: Aabb2, u32, 192, setup(d(), FULL);
}

// ---------------------------------------------------------------------------
// Batch tree
// ---------------------------------------------------------------------------

/// A box of a batch: valid, resolved against the boxes before it.
#[derive(Clone, Copy, Debug)]
enum BatchBox {
    Lattice(Lattice),
    /// The lattice box with zero edges.
    Point(Lattice),
    /// A copy of box `of % i` (a duplicate).
    Copy(u8),
    /// A lattice-sized box on the upper face of box `of % i`, on `axis`.
    Touch {
        of: u8,
        axis: u8,
        lat: Lattice,
    },
    /// One of `EXOTIC` on one axis (`axis ≥ DIM`: every axis).
    Exotic {
        lat: Lattice,
        axis: u8,
        which: u8,
    },
    /// A lattice box with its edges scaled by 10⁻⁹.
    Tiny(Lattice),
}

fn batch_box() -> impl Strategy<Value = BatchBox> {
    prop_oneof![
        10 => lattice().prop_map(BatchBox::Lattice),
        2 => lattice().prop_map(BatchBox::Point),
        3 => any::<u8>().prop_map(BatchBox::Copy),
        3 => (any::<u8>(), 0u8..3, lattice())
            .prop_map(|(of, axis, lat)| BatchBox::Touch { of, axis, lat }),
        1 => (lattice(), 0u8..4, 0..EXOTIC.len() as u8)
            .prop_map(|(lat, axis, which)| BatchBox::Exotic { lat, axis, which }),
        1 => lattice().prop_map(BatchBox::Tiny),
    ]
}

/// How a box changes before a second build.
#[derive(Clone, Copy, Debug)]
enum Move {
    /// Moved by `delta · 2^-exp`.
    Nudge([i8; 3], u8),
    /// Replaced (resolved against the boxes as they are then).
    Replace(BatchBox),
}

fn batch_move() -> impl Strategy<Value = Move> {
    prop_oneof![
        3 => (prop::array::uniform3(-3i8..=3), 0u8..8).prop_map(|(d, e)| Move::Nudge(d, e)),
        1 => batch_box().prop_map(Move::Replace),
    ]
}

/// Where the scene sits: the lattice as is, or moved by ±10⁶ (every axis)
/// or by 10⁶ on the first axis only.
#[derive(Clone, Copy, Debug)]
enum Offset {
    None,
    Plus,
    Minus,
    FirstAxis,
}

#[derive(Clone, Copy, Debug)]
enum Root {
    Auto,
    /// The scene's bounds (touching the root's upper faces: clamped).
    Bounds,
    /// `[-1, 1]`: most boxes clamped.
    Small,
    /// `[-64, 64]`: a dyadic root holding the lattice.
    Dyadic,
}

#[derive(Clone, Copy, Debug)]
enum Failure {
    None,
    Nan(u8),
    Inverted(u8),
    Infinite(u8),
    TooMany,
    /// More bits per axis than the code type holds (on a clone).
    TooManyBits,
}

#[derive(Clone, Debug)]
struct Batch {
    three: bool,
    /// 0: u32, 1: u64, 2: u128.
    code: u8,
    /// `None`: no split; `Some(g)`: volume split of gain `g`.
    split: Option<u8>,
    octree: bool,
    /// 0: automatic; else clamped to the code type's maximum (`u8::MAX`:
    /// the maximum).
    bits: u8,
    root: Root,
    comparison: bool,
    reuse: bool,
    /// Records per box: 1, 2 or 8.
    room: usize,
    offset: Offset,
    boxes: Vec<BatchBox>,
    failure: Failure,
    queries: Vec<(Lattice, u8)>,
    /// Boxes moved before a second build.
    moves: Vec<(u8, Move)>,
}

fn batch() -> impl Strategy<Value = Batch> {
    let cfg = (
        any::<bool>(),
        0u8..3,
        prop_oneof![2 => Just(Some(0u8)), 1 => (0u8..6).prop_map(Some), 1 => Just(None)],
        any::<bool>(),
        prop_oneof![6 => Just(0u8), 2 => 1u8..64, 1 => Just(u8::MAX)],
        prop_oneof![
            4 => Just(Root::Auto),
            1 => Just(Root::Bounds),
            1 => Just(Root::Small),
            1 => Just(Root::Dyadic),
        ],
        any::<bool>(),
        any::<bool>(),
        prop_oneof![Just(1usize), Just(2usize), Just(8usize)],
        prop_oneof![
            4 => Just(Offset::None),
            1 => Just(Offset::Plus),
            1 => Just(Offset::Minus),
            1 => Just(Offset::FirstAxis),
        ],
    );
    let data = (
        prop::collection::vec(batch_box(), 0..48),
        prop_oneof![
            3 => Just(Failure::None),
            1 => any::<u8>().prop_map(Failure::Nan),
            1 => any::<u8>().prop_map(Failure::Inverted),
            1 => any::<u8>().prop_map(Failure::Infinite),
            1 => Just(Failure::TooMany),
            1 => Just(Failure::TooManyBits),
        ],
        prop::collection::vec((lattice(), any::<u8>()), 0..6),
        prop::collection::vec((any::<u8>(), batch_move()), 0..12),
    );
    // One batch in three is an exact scene (see `exact_scene`).
    (cfg, data, prop::bool::weighted(0.3)).prop_map(
        |(
            (three, code, split, octree, bits, mut root, comparison, reuse, room, mut offset),
            (mut boxes, failure, queries, mut moves),
            exact,
        )| {
            if exact {
                root = Root::Dyadic;
                offset = Offset::None;
                boxes.iter_mut().for_each(make_exact);
                for (_, m) in moves.iter_mut() {
                    if let Move::Replace(bb) = m {
                        make_exact(bb);
                    }
                }
            }
            Batch {
                three,
                code,
                split,
                octree,
                bits,
                root,
                comparison,
                reuse,
                room,
                offset,
                boxes,
                failure,
                queries,
                moves,
            }
        },
    )
}

/// Exotic and tiny boxes become their lattice boxes.
fn make_exact(b: &mut BatchBox) {
    if let BatchBox::Exotic { lat, .. } | BatchBox::Tiny(lat) = *b {
        *b = BatchBox::Lattice(lat);
    }
}

fn shift(offset: Offset, lo: &mut [f32; 3], hi: &mut [f32; 3]) {
    let axes: &[usize] = match offset {
        Offset::None => &[],
        Offset::FirstAxis => &[0],
        _ => &[0, 1, 2],
    };
    let s = if matches!(offset, Offset::Minus) {
        -1.0e6
    } else {
        1.0e6
    };
    for &k in axes {
        lo[k] += s;
        hi[k] += s;
    }
}

fn batch_corners(
    bb: &BatchBox,
    prev: &[([f32; 3], [f32; 3])],
    dimn: usize,
) -> ([f32; 3], [f32; 3]) {
    let pick = |of: u8| prev.get(usize::from(of) % prev.len().max(1)).copied();
    match *bb {
        BatchBox::Lattice(l) => lattice_corners(&l),
        BatchBox::Point(l) => {
            let (lo, _) = lattice_corners(&l);
            (lo, lo)
        }
        BatchBox::Copy(of) => pick(of).unwrap_or(([0.0; 3], [1.0; 3])),
        BatchBox::Touch { of, axis, lat } => match pick(of) {
            Some((plo, phi)) => {
                let (llo, lhi) = lattice_corners(&lat);
                let a = usize::from(axis) % dimn;
                let mut lo = plo;
                lo[a] = phi[a];
                let hi = core::array::from_fn(|k| lo[k] + (lhi[k] - llo[k]));
                (lo, hi)
            }
            None => lattice_corners(&lat),
        },
        BatchBox::Exotic { lat, axis, which } => {
            let (mut lo, mut hi) = lattice_corners(&lat);
            let (x, y) = EXOTIC[usize::from(which) % EXOTIC.len()];
            let axes = if usize::from(axis) >= dimn {
                0..dimn
            } else {
                usize::from(axis)..usize::from(axis) + 1
            };
            for k in axes {
                lo[k] = x;
                hi[k] = y;
            }
            (lo, hi)
        }
        BatchBox::Tiny(l) => {
            let (lo, hi) = lattice_corners(&l);
            (
                lo,
                core::array::from_fn(|k| lo[k] + (hi[k] - lo[k]) * 1.0e-9),
            )
        }
    }
}

/// The boxes of a batch (offset applied to the lattice-made ones).
fn batch_boxes<B: TestBox>(spec: &[BatchBox], offset: Offset) -> Vec<B> {
    let mut prev: Vec<([f32; 3], [f32; 3])> = Vec::new();
    for bb in spec {
        let (mut lo, mut hi) = batch_corners(bb, &prev, dim::<B>());
        if !matches!(
            bb,
            BatchBox::Copy(_) | BatchBox::Touch { .. } | BatchBox::Exotic { .. }
        ) {
            shift(offset, &mut lo, &mut hi);
        }
        prev.push((lo, hi));
    }
    prev.into_iter().map(|(lo, hi)| B::raw(lo, hi)).collect()
}

fn batch_config<B: TestBox, K: LocCode>(b: &Batch, boxes: &[B]) -> KdConfig<B> {
    let mut c = KdConfig::<B>::DEFAULT
        .with_split(match b.split {
            None => Split::None,
            Some(g) => Split::Volume { min_gain_log2: g },
        })
        .unwrap()
        .with_octree(b.octree)
        .with_sort(if b.comparison {
            SortAlgo::Comparison
        } else {
            SortAlgo::Radix
        })
        .with_temporal_reuse(b.reuse);
    if b.bits != 0 {
        let max = K::max_bits_per_axis(dim::<B>()) as u8;
        c = c.with_bits_per_axis(b.bits.min(max));
    }
    let root = match b.root {
        Root::Auto => None,
        Root::Bounds => boxes
            .iter()
            .skip(1)
            .fold(boxes.first().copied(), |a, x| a.map(|a| a.union(x)))
            .filter(|r| {
                let (lo, hi) = corners(r);
                (0..dim::<B>()).all(|k| {
                    let e = f64::from(hi[k]) - f64::from(lo[k]);
                    e > 0.0 && e.is_finite()
                })
            }),
        Root::Small => Some(B::raw([-1.0; 3], [1.0; 3])),
        Root::Dyadic => Some(B::raw([-64.0; 3], [64.0; 3])),
    };
    c.with_root(root).unwrap()
}

/// Every candidate mode and query of a built tree against brute force.
fn check_tree<B: TestBox, K: LocCode>(
    t: &Tree<B, K>,
    boxes: &[B],
    queries: &[B],
    what: &str,
) -> TestCaseResult {
    if let Err(c) = t.validate() {
        return Err(TestCaseError::fail(format!("{what}: validate: {c}")));
    }
    if let Err(c) = t.validate_against(boxes) {
        return Err(TestCaseError::fail(format!(
            "{what}: validate_against: {c}"
        )));
    }
    prop_assert_eq!(t.len(), boxes.len());
    let st = t.stats();
    prop_assert_eq!(st.elements, boxes.len(), "{}: stats {:?}", what, st);
    prop_assert_eq!(st.records, t.records().len(), "{}: stats {:?}", what, st);
    let want = brute_pairs(boxes);
    let mut raw = Vec::new();
    t.for_each_candidate_pair(boxes, Candidates::Raw, |a, b| raw.push((a, b)))
        .unwrap();
    prop_assert_eq!(raw.len() as u64, t.count_raw(), "{}: count_raw", what);
    let raw = normalise(&raw, false, what)?;
    prop_assert_eq!(missing(&raw, &want), vec![], "{}: raw misses pairs", what);
    let mut uni = Vec::new();
    t.for_each_candidate_pair(boxes, Candidates::Unique, |a, b| uni.push((a, b)))
        .unwrap();
    let uni = normalise(&uni, true, what)?;
    prop_assert_eq!(
        missing(&uni, &want),
        vec![],
        "{}: unique misses pairs",
        what
    );
    prop_assert_eq!(
        missing(&raw, &uni),
        vec![],
        "{}: unique not within raw",
        what
    );
    let mut ex = Vec::new();
    t.for_each_candidate_pair(boxes, Candidates::Exact, |a, b| ex.push((a, b)))
        .unwrap();
    let ex = normalise(&ex, true, what)?;
    if ex != want {
        return Err(TestCaseError::fail(format!(
            "{what}: exact pairs differ: extra {:?}, missing {:?}, stats {st:?}",
            missing(&want, &ex),
            missing(&ex, &want)
        )));
    }
    for q in queries.iter().chain(boxes) {
        let mut got = Vec::new();
        t.query(boxes, q, |id| got.push(id)).unwrap();
        got.sort_unstable();
        let hits: Vec<u32> = (0..boxes.len() as u32)
            .filter(|&i| overlap(&boxes[i as usize], q))
            .collect();
        prop_assert_eq!(got, hits, "{}: query {:?}", what, q);
    }
    if !boxes.is_empty() {
        let bad = B::raw([f32::NAN; 3], [0.0; 3]);
        prop_assert_eq!(t.query(boxes, &bad, |_| {}), Err(Error::NonFinite));
        let short = t.for_each_candidate_pair(&boxes[1..], Candidates::Exact, |_, _| {});
        prop_assert!(short.is_err(), "a short slice: {:?}", short);
    }
    Ok(())
}

/// Every coordinate of the scene is an exact dyadic value (no exotic or
/// tiny box, no offset) and the root is the dyadic `[-64, 64]`:
/// quantisation is then exact, in `f32` and `f64` alike.
fn exact_scene(spec: &[BatchBox], b: &Batch) -> bool {
    matches!(b.root, Root::Dyadic)
        && matches!(b.offset, Offset::None)
        && spec.iter().all(|x| {
            matches!(
                x,
                BatchBox::Lattice(_)
                    | BatchBox::Point(_)
                    | BatchBox::Copy(_)
                    | BatchBox::Touch { .. }
            )
        })
}

/// On an exact scene: the unique candidates are exactly the pairs whose
/// quantised ranges overlap (computed here from the frame), and the cell of
/// every record of a box inside the root overlaps that box.
fn check_quantised<B: TestBox, K: LocCode>(
    t: &Tree<B, K>,
    boxes: &[B],
    what: &str,
) -> TestCaseResult {
    let Some((root, bits)) = t.frame() else {
        return Ok(());
    };
    let (rlo, rhi) = corners(&root);
    let cells = 2f64.powi(bits as i32);
    let top = (1u64 << bits) - 1;
    let q = |x: f32, k: usize| -> u64 {
        let v =
            (f64::from(x) - f64::from(rlo[k])) * cells / (f64::from(rhi[k]) - f64::from(rlo[k]));
        if v <= 0.0 {
            0
        } else if v >= top as f64 {
            top
        } else {
            (v.floor() as u64).min(top)
        }
    };
    let qb: Vec<([u64; 3], [u64; 3])> = boxes
        .iter()
        .map(|b| {
            let (lo, hi) = corners(b);
            (
                core::array::from_fn(|k| q(lo[k], k)),
                core::array::from_fn(|k| q(hi[k], k)),
            )
        })
        .collect();
    let mut want = Vec::new();
    for i in 0..boxes.len() {
        for j in i + 1..boxes.len() {
            let (a, b) = (&qb[i], &qb[j]);
            if (0..dim::<B>()).all(|k| a.0[k] <= b.1[k] && b.0[k] <= a.1[k]) {
                want.push((i as u32, j as u32));
            }
        }
    }
    let mut uni = Vec::new();
    t.for_each_candidate_pair(boxes, Candidates::Unique, |a, b| uni.push((a, b)))
        .unwrap();
    let uni = normalise(&uni, true, what)?;
    if uni != want {
        return Err(TestCaseError::fail(format!(
            "{what}: unique candidates are not the quantised overlaps: extra {:?}, missing {:?}",
            missing(&want, &uni),
            missing(&uni, &want)
        )));
    }
    for r in t.records() {
        let b = boxes[r.id() as usize];
        let (lo, hi) = corners(&b);
        let inside = (0..dim::<B>()).all(|k| lo[k] >= rlo[k] && hi[k] < rhi[k]);
        let cell = t.cell(r.key);
        prop_assert!(cell.is_some(), "{}: no cell for {:?}", what, r);
        let (cell, len) = cell.unwrap();
        prop_assert!(len <= t.stats().depth, "{}: cell depth {}", what, len);
        if inside {
            prop_assert!(
                overlap(&cell, &b),
                "{}: cell {:?} of {:?} misses box {:?}",
                what,
                cell,
                r,
                b
            );
        }
    }
    Ok(())
}

/// One batch: build, check, a refused build, a second build over moved
/// boxes, check.
fn run_batch<B: TestBox, K: LocCode>(b: &Batch) -> TestCaseResult {
    let boxes = batch_boxes::<B>(&b.boxes, b.offset);
    let cap = boxes.len() * b.room;
    let cfg = batch_config::<B, K>(b, &boxes);
    let mut t: Tree<B, K> =
        LinearKdTree::new(vec![KdRecord::EMPTY; cap], vec![KdRecord::EMPTY; cap], cfg);
    prop_assert_eq!(t.record_capacity(), cap);
    let queries: Vec<B> = b
        .queries
        .iter()
        .map(|(l, g)| {
            let (mut lo, mut hi) = lattice_corners(l);
            shift(b.offset, &mut lo, &mut hi);
            let grow = f32::from(*g % 16) * 0.5;
            B::raw(lo.map(|x| x - grow), hi.map(|x| x + grow))
        })
        .collect();
    prop_assert_eq!(t.build(&boxes), Ok(()));
    check_tree(&t, &boxes, &queries, "first build")?;
    let exact = exact_scene(&b.boxes, b);
    if exact {
        check_quantised(&t, &boxes, "first build")?;
    }
    if !b.reuse {
        prop_assert!(!t.stats().reused);
    }

    // A refused build keeps everything.
    let records = t.records().to_vec();
    let stats = t.stats();
    let mut bad = boxes.clone();
    let at = |i: u8| usize::from(i) % bad.len().max(1);
    let expect = match b.failure {
        Failure::None => None,
        Failure::Nan(i) | Failure::Inverted(i) | Failure::Infinite(i) if !bad.is_empty() => {
            let k = at(i);
            let (mut lo, mut hi) = corners(&bad[k]);
            let axis = usize::from(i) % dim::<B>();
            let e = match b.failure {
                Failure::Nan(_) => {
                    hi[axis] = f32::NAN;
                    Error::NonFinite
                }
                Failure::Inverted(_) => {
                    (lo[axis], hi[axis]) = (1.0, 0.5);
                    Error::InvertedBox
                }
                _ => {
                    lo[axis] = f32::NEG_INFINITY;
                    Error::NonFinite
                }
            };
            bad[k] = B::raw(lo, hi);
            Some(e)
        }
        Failure::TooMany => {
            bad = vec![B::raw([0.0; 3], [1.0; 3]); cap + 1];
            Some(Error::CapacityExceeded { capacity: cap })
        }
        Failure::TooManyBits => {
            let mut c = t.clone();
            let max = K::max_bits_per_axis(dim::<B>()) as u8;
            c.set_config(cfg.with_bits_per_axis(max + 1));
            prop_assert_eq!(c.build(&boxes), Err(Error::InvalidConfig { field: "bits" }));
            prop_assert_eq!(c.records(), &[][..]);
            None
        }
        _ => None,
    };
    if let Some(e) = expect {
        prop_assert_eq!(t.build(&bad), Err(e), "build of bad boxes");
        prop_assert_eq!(
            t.records(),
            &records[..],
            "a refused build changed the records"
        );
        prop_assert_eq!(t.stats(), stats, "a refused build changed the stats");
        check_tree(&t, &boxes, &queries, "after a refused build")?;
    }

    // Moved boxes, rebuilt (temporal reuse repairs the order when it can).
    if boxes.is_empty() {
        return Ok(());
    }
    let mut moved = boxes.clone();
    let mut moved_exact = exact;
    for (i, m) in &b.moves {
        let k = usize::from(*i) % moved.len();
        moved[k] = match m {
            Move::Nudge(delta, exp) => nudged(Some(moved[k]), delta, *exp),
            Move::Replace(bb) => {
                let prev: Vec<_> = moved.iter().map(corners).collect();
                let (mut lo, mut hi) = batch_corners(bb, &prev, dim::<B>());
                if matches!(
                    bb,
                    BatchBox::Lattice(_) | BatchBox::Point(_) | BatchBox::Tiny(_)
                ) {
                    shift(b.offset, &mut lo, &mut hi);
                }
                moved_exact &= exact_scene(&[*bb], b);
                B::raw(lo, hi)
            }
        };
    }
    prop_assert_eq!(t.build(&moved), Ok(()));
    check_tree(&t, &moved, &queries, "second build")?;
    if moved_exact {
        check_quantised(&t, &moved, "second build")?;
    }
    // And the first boxes again.
    prop_assert_eq!(t.build(&boxes), Ok(()));
    check_tree(&t, &boxes, &queries, "third build")
}

fn run_batch_any(b: &Batch) -> TestCaseResult {
    match (b.three, b.code) {
        (true, 0) => run_batch::<Aabb3, u32>(b),
        (true, 1) => run_batch::<Aabb3, u64>(b),
        (true, _) => run_batch::<Aabb3, u128>(b),
        (false, 0) => run_batch::<Aabb2, u32>(b),
        (false, 1) => run_batch::<Aabb2, u64>(b),
        (false, _) => run_batch::<Aabb2, u128>(b),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8000))]
    #[test]
    fn batch_matches_brute_force(b in batch()) {
        run_batch_any(&b)?;
    }
}

/// The generators reach what the broad-phase properties are about:
/// refusals of every kind, split boxes, clamped boxes, reused builds.
#[test]
fn generators_cover_the_interesting_states() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = ops(60);
    let mut errors: Vec<String> = Vec::new();
    let (mut split, mut clamped, mut reused) = (0, 0, 0);
    for _ in 0..40 {
        let ops = strategy.new_tree(&mut runner).unwrap().current();
        for (s, reuse) in [
            (setup::<Aabb3>(d().with_temporal_reuse(true), FULL), true),
            (with_root::<Aabb3>(d(), ROOMY, -1.0, 1.0), false),
        ] {
            let (mut bp, mut m) = new_bp::<Aabb3, u64>(&s);
            for op in &ops {
                let op = kd_op(&m, op);
                if let Err(e) = m.apply(&mut bp, &op).unwrap() {
                    errors.push(
                        format!("{e:?}")
                            .split([' ', '{'])
                            .next()
                            .unwrap()
                            .to_owned(),
                    );
                }
                bp.for_each_overlap(|_, _| {}).unwrap();
                let st = bp.stats();
                split += st.split_elements;
                if !reuse {
                    clamped += st.clamped;
                }
                reused += usize::from(st.reused);
            }
        }
    }
    eprintln!(
        "split {split} clamped {clamped} reused {reused} errors {}",
        errors.len()
    );
    assert!(split > 100, "split boxes: {split}");
    assert!(clamped > 100, "clamped boxes: {clamped}");
    assert!(reused > 30, "reused builds: {reused}");
    for e in [
        "IdOutOfRange",
        "DuplicateId",
        "UnknownId",
        "NonFinite",
        "InvertedBox",
        "CapacityExceeded",
    ] {
        assert!(
            errors.iter().any(|x| x == e),
            "never refused with {e}: {errors:?}"
        );
    }
}

/// Degenerate scenes under every combination of configuration options:
/// no box, one box, identical points, identical boxes, boxes spanning all
/// of `f32`, points at its extreme corners, a row of boxes sharing faces,
/// tiny boxes around 10⁶ that `f32` makes coincide.
fn degenerate<B: TestBox, K: LocCode>() {
    let m = f32::MAX;
    let mut scenes: Vec<(&str, Vec<B>)> = vec![
        ("empty", vec![]),
        ("one", vec![B::raw([0.0; 3], [1.0; 3])]),
        (
            "same points",
            vec![B::raw([0.3, -7.0, 1.0e6], [0.3, -7.0, 1.0e6]); 12],
        ),
        (
            "same boxes",
            vec![B::raw([-1.0, 2.0, 3.0], [4.0, 5.0, 6.0]); 12],
        ),
        ("extreme corners", {
            let mut v = vec![B::raw([-m; 3], [-m; 3]), B::raw([m; 3], [m; 3])];
            v.push(B::raw([-m, m, -m], [-m, m, -m]));
            v.push(B::raw([0.0; 3], [0.0; 3]));
            v
        }),
        (
            "faces",
            (0..12)
                .map(|i| B::raw([i as f32, 0.0, 0.0], [i as f32 + 1.0, 1.0, 1.0]))
                .collect(),
        ),
        (
            "tiny at 1e6",
            (0..12)
                .map(|i| {
                    let x = 1.0e6 + i as f32 * 1.0e-3;
                    B::raw([x, -x, x], [x + 1.0e-4, -x + 1.0e-4, x + 1.0e-4])
                })
                .collect(),
        ),
    ];
    let mut spanning = vec![B::raw([-m; 3], [m; 3]); 10];
    spanning.push(B::raw([1.0; 3], [1.0; 3]));
    scenes.push(("spanning", spanning));
    let max = K::max_bits_per_axis(dim::<B>()) as u8;
    for split in [
        Split::None,
        Split::Volume { min_gain_log2: 0 },
        Split::Volume { min_gain_log2: 5 },
    ] {
        for octree in [false, true] {
            for bits in [0, 1, max] {
                for root in [None, Some(B::raw([-1.0; 3], [1.0; 3]))] {
                    for reuse in [false, true] {
                        for room in [1, 8] {
                            let cfg = KdConfig::<B>::DEFAULT
                                .with_split(split)
                                .unwrap()
                                .with_octree(octree)
                                .with_bits_per_axis(bits)
                                .with_root(root)
                                .unwrap()
                                .with_temporal_reuse(reuse);
                            for (name, boxes) in &scenes {
                                let cap = boxes.len() * room;
                                let mut t: Tree<B, K> = LinearKdTree::new(
                                    vec![KdRecord::EMPTY; cap],
                                    vec![KdRecord::EMPTY; cap],
                                    cfg,
                                );
                                let what = format!(
                                    "{name} {}D K={} {split:?} octree {octree} bits {bits} \
                                     root {root:?} reuse {reuse} room {room}",
                                    dim::<B>(),
                                    K::BITS
                                );
                                for pass in 0..2 {
                                    assert_eq!(t.build(boxes), Ok(()), "{what}: build {pass}");
                                    check_tree(&t, boxes, &[], &what)
                                        .unwrap_or_else(|e| panic!("{what}: pass {pass}: {e}"));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn degenerate_scenes_every_config_3d() {
    degenerate::<Aabb3, u32>();
    degenerate::<Aabb3, u64>();
    degenerate::<Aabb3, u128>();
}

#[test]
fn degenerate_scenes_every_config_2d() {
    degenerate::<Aabb2, u32>();
    degenerate::<Aabb2, u64>();
    degenerate::<Aabb2, u128>();
}
