//! Differential fuzzing of the linear kd-tree (`spatium::kdtree`) against a
//! brute-force model, in 2D and 3D, with `u32`, `u64` or `u128` codes.
//!
//! The input decodes (via `arbitrary`) into a code width, the length of the
//! broad phase's record buffers (fewer than the 36 ids, as many, or room to
//! split), the capacity of a batch tree, a configuration — split policy (none,
//! or a volume gain that may be out of range), octree cells, bits per axis
//! (possibly more than the code type holds), root (automatic, a lattice cell
//! or raw `f32` corners that may be invalid), sort, temporal reuse — and up to
//! 64 operations, each applied to the 2D or the 3D world:
//!
//! * on a `KdBroadPhase` over ids `0..40` (capacity 36): insert, update,
//!   small moves (temporal reuse), remove, box queries, clear, pair
//!   enumeration in every candidate mode, configuration changes;
//! * on a `LinearKdTree`: batch builds of up to 64 boxes, possibly with a
//!   new configuration, possibly refused (bad box, too many boxes, too many
//!   bits), and rebuilds over the last boxes with some moved.
//!
//! Boxes are quarter-lattice boxes of power-of-two scales (so boxes coincide
//! and touch exactly), points, copies of stored boxes and boxes touching
//! their faces, with coordinates overridden by raw `f32` bits or special
//! values (NaN, infinities, `f32::MAX`, 1e30, ±1e6, subnormals, `-0.0`).
//!
//! The model is a `Vec<Option<B>>` with its own per-axis overlap test. Every
//! result is predicted: id errors, `NonFinite` / `InvertedBox`,
//! `CapacityExceeded` (a full broad phase; a batch larger than the tree),
//! `InvalidConfig` (bits the code type cannot hold, from every rebuild until
//! a clear), and the configuration builders' errors. After every broad-phase
//! operation it is `validate()`d, its `len` and `get` of every id are
//! compared bit for bit, and the pairs of a rebuilt clone (which must
//! validate too) must equal brute force exactly (each once, no self pairs).
//! Pair operations also check raw candidates (a superset, counted by
//! `count_raw`), unique candidates (a superset without duplicates) and
//! queries with every stored box. A refused operation must change nothing:
//! `get` of every id, the records and the stats (and the pairs, compared
//! with the unchanged model). After every tree operation the tree is checked
//! with `validate` and `validate_against` its last boxes, its candidates in
//! every mode and its queries against brute force; a refused build must keep
//! its records and stats.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use spatium::Inspect;
use spatium::kdtree::{
    Candidates, KdBroadPhase, KdConfig, KdRecord, KdSlot, KdStats, LinearKdTree, LocCode, SortAlgo,
    Split,
};
use spatium::{Aabb2, Aabb3, BoundingBox, BroadPhase, Error, Validate};
use spatium_host::boxes::{TestBox, corners, dim, overlap, same, same_opt};

/// Ids are `0..IDS`; those from `CAP` are out of range.
const IDS: u32 = 40;
const CAP: usize = 36;
/// Most operations per input.
const MAX_OPS: usize = 64;
/// Most boxes of a batch build.
const MAX_BATCH: usize = 64;
/// Most coordinate overrides per box.
const MAX_OVERRIDES: usize = 6;

type Bp<B, K> = KdBroadPhase<B, K, Vec<KdSlot<B>>, Vec<KdRecord<K>>>;
type Tree<B, K> = LinearKdTree<B, K, Vec<KdRecord<K>>>;

// ---------------------------------------------------------------------------
// Input
// ---------------------------------------------------------------------------

/// A lattice box: lower corner `pos / 4 · 2^(pe mod 12 - 6)`, edges
/// `edge / 4 · 2^(se mod 16 - 8)`.
#[derive(Arbitrary, Debug, Clone, Copy)]
struct Lattice {
    pe: i8,
    pos: [i8; 3],
    se: i8,
    edge: [u8; 3],
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Kind {
    Lattice(Lattice),
    Lattice2(Lattice),
    Lattice3(Lattice),
    /// The lattice box's lower corner, as a zero-extent box.
    Point(Lattice),
    /// A copy of stored box `of` (the lattice box if none).
    Copy(u8, Lattice),
    /// A lattice-sized box at stored box `of`'s lower corner moved to its
    /// upper face on `axis`.
    Touch {
        of: u8,
        axis: u8,
        lat: Lattice,
    },
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Value {
    Raw(f32),
    Special(u8),
}

const SPECIAL: [f32; 20] = [
    0.0,
    -0.0,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::MAX,
    -f32::MAX,
    f32::MIN_POSITIVE,
    1e-40,
    1e-45,
    1e30,
    -1e30,
    1e12,
    1e6,
    -1e6,
    0.5,
    f32::EPSILON,
    3e38,
    -2e9,
    1e-30,
];

/// Overrides coordinate `slot % 6` (`lo x, lo y, lo z, hi x, …`).
#[derive(Arbitrary, Debug, Clone, Copy)]
struct Override {
    slot: u8,
    value: Value,
}

#[derive(Arbitrary, Debug, Clone)]
struct BoxIn {
    kind: Kind,
    over: Vec<Override>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum RootIn {
    Auto,
    Auto2,
    /// A lattice cell `[pos, pos + (edge + 1)] / 4 · 2^(pe mod 12 - 6)`.
    Cell {
        pe: i8,
        pos: [i8; 3],
        edge: [u8; 3],
    },
    /// Raw corners: may be invalid (`with_root` must then refuse it).
    Raw([f32; 6]),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct CfgIn {
    /// 0: `Split::None`; else `Volume { min_gain_log2: split - 1 }` (over 32
    /// refused by `with_split`, the default split kept).
    split: u8,
    octree: bool,
    /// Bits per axis modulo `max + 2`: 0 automatic, `max + 1` too many.
    bits: u8,
    root: RootIn,
    comparison: bool,
    reuse: bool,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Insert(u8, BoxIn),
    Update(u8, BoxIn),
    /// Moves stored box `id` by `delta · 2^-(exp mod 12)`.
    Nudge(u8, [i8; 3], u8),
    Remove(u8),
    Query(BoxIn),
    Clear,
    Pairs,
    SetConfig(CfgIn),
    /// A batch build of the tree, with a new configuration first if given.
    Batch {
        cfg: Option<CfgIn>,
        boxes: Vec<BoxIn>,
    },
    /// The last batch again with some boxes moved by `delta · 2^-(exp mod
    /// 12)` (temporal reuse).
    Rebuild(Vec<(u8, [i8; 3], u8)>),
    ClearTree,
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// 0: `u32`, 1: `u64`, 2: `u128` codes.
    code: u8,
    /// Records of the broad phase: `RECORDS[records % 5]`.
    records: u8,
    /// Records of the batch tree: `batch_cap % 129`.
    batch_cap: u8,
    cfg: CfgIn,
    /// `(3D?, operation)`.
    ops: Vec<(bool, Op)>,
}

/// Broad-phase record buffers: full before the ids run out, exactly the ids,
/// and room to split.
const RECORDS: [usize; 5] = [12, CAP, 2 * CAP, 8 * CAP, 1];

// ---------------------------------------------------------------------------
// Boxes
// ---------------------------------------------------------------------------

/// The error `check()` must give: `NonFinite` before `InvertedBox`.
fn box_error<B: BoundingBox>(b: &B) -> Option<Error> {
    let (lo, hi) = corners(b);
    let d = dim::<B>();
    if (0..d).any(|k| !lo[k].is_finite() || !hi[k].is_finite()) {
        Some(Error::NonFinite)
    } else if (0..d).any(|k| lo[k] > hi[k]) {
        Some(Error::InvertedBox)
    } else {
        None
    }
}

fn pow2(e: i32) -> f32 {
    2f32.powi(e)
}

fn lattice_corners(l: &Lattice) -> ([f32; 3], [f32; 3]) {
    let unit = 0.25 * pow2(i32::from(l.pe).rem_euclid(12) - 6);
    let step = 0.25 * pow2(i32::from(l.se).rem_euclid(16) - 8);
    let mut lo = [0.0f32; 3];
    let mut hi = [0.0f32; 3];
    for k in 0..3 {
        lo[k] = f32::from(l.pos[k] % 24) * unit;
        hi[k] = lo[k] + f32::from(l.edge[k] % 16) * step;
    }
    (lo, hi)
}

/// The box of `b`; `near(of)` gives the box `Copy` and `Touch` refer to.
fn make_box<B: TestBox>(b: &BoxIn, near: impl Fn(u8) -> Option<B>) -> B {
    let (mut lo, mut hi) = match b.kind {
        Kind::Lattice(l) | Kind::Lattice2(l) | Kind::Lattice3(l) => lattice_corners(&l),
        Kind::Point(l) => {
            let (lo, _) = lattice_corners(&l);
            (lo, lo)
        }
        Kind::Copy(of, l) => match near(of) {
            Some(s) => corners(&s),
            None => lattice_corners(&l),
        },
        Kind::Touch { of, axis, lat } => {
            let (llo, lhi) = lattice_corners(&lat);
            match near(of) {
                Some(s) => {
                    let (slo, shi) = corners(&s);
                    let a = usize::from(axis) % dim::<B>();
                    let mut lo = slo;
                    lo[a] = shi[a];
                    (lo, core::array::from_fn(|k| lo[k] + (lhi[k] - llo[k])))
                }
                None => (llo, lhi),
            }
        }
    };
    for o in b.over.iter().take(MAX_OVERRIDES) {
        let v = match o.value {
            Value::Raw(x) => x,
            Value::Special(k) => SPECIAL[usize::from(k) % SPECIAL.len()],
        };
        let s = usize::from(o.slot) % 6;
        if s < 3 {
            lo[s] = v;
        } else {
            hi[s - 3] = v;
        }
    }
    B::raw(lo, hi)
}

/// `b` moved by `delta · 2^-(exp mod 12)`; unchanged where the move would
/// make it invalid (rounding of huge values).
fn nudged<B: TestBox>(b: &B, delta: &[i8; 3], exp: u8) -> B {
    let (mut lo, mut hi) = corners(b);
    let s = pow2(-i32::from(exp % 12));
    for k in 0..dim::<B>() {
        let v = f32::from(delta[k]) * s;
        lo[k] += v;
        hi[k] += v;
    }
    let moved = B::raw(lo, hi);
    if box_error(&moved).is_none() {
        moved
    } else {
        *b
    }
}

/// Normalised, sorted pairs; panics on self pairs and (`unique`) duplicates.
fn normalise(v: &[(u32, u32)], unique: bool, ctx: &str) -> Vec<(u32, u32)> {
    assert!(v.iter().all(|&(a, b)| a != b), "{ctx}: self pair in {v:?}");
    let mut n: Vec<(u32, u32)> = v.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
    n.sort_unstable();
    let len = n.len();
    n.dedup();
    if unique {
        assert_eq!(n.len(), len, "{ctx}: duplicate pairs in {v:?}");
    }
    n
}

/// Pairs of `want` missing from the sorted `got`.
fn missing(got: &[(u32, u32)], want: &[(u32, u32)]) -> Vec<(u32, u32)> {
    want.iter()
        .filter(|p| got.binary_search(p).is_err())
        .copied()
        .collect()
}

// ---------------------------------------------------------------------------
// Configurations
// ---------------------------------------------------------------------------

/// The configuration of `c`, checking the builders' errors; the bits it
/// asks for (0: automatic).
fn make_config<B: TestBox, K: LocCode>(c: &CfgIn) -> (KdConfig<B>, u32) {
    let mut cfg = KdConfig::<B>::DEFAULT;
    if c.split == 0 {
        cfg = cfg.with_split(Split::None).unwrap();
    } else {
        let g = c.split - 1;
        let r = cfg.with_split(Split::Volume { min_gain_log2: g });
        if g > 32 {
            assert_eq!(
                r,
                Err(Error::InvalidConfig {
                    field: "split.min_gain_log2"
                }),
                "with_split gain {g}"
            );
        } else {
            cfg = r.unwrap();
            assert_eq!(cfg.split(), Split::Volume { min_gain_log2: g });
        }
    }
    let max = K::max_bits_per_axis(dim::<B>());
    let bits = u32::from(c.bits) % (max + 2);
    cfg = cfg
        .with_octree(c.octree)
        .with_bits_per_axis(bits as u8)
        .with_sort(if c.comparison {
            SortAlgo::Comparison
        } else {
            SortAlgo::Radix
        })
        .with_temporal_reuse(c.reuse);
    let root = match c.root {
        RootIn::Auto | RootIn::Auto2 => None,
        RootIn::Cell { pe, pos, edge } => {
            let unit = 0.25 * pow2(i32::from(pe).rem_euclid(12) - 6);
            let lo = pos.map(|p| f32::from(p) * unit);
            let hi = core::array::from_fn(|k| lo[k] + f32::from(edge[k] % 64 + 1) * unit);
            Some(B::raw(lo, hi))
        }
        RootIn::Raw(v) => Some(B::raw([v[0], v[1], v[2]], [v[3], v[4], v[5]])),
    };
    let r = cfg.with_root(root);
    match root {
        None => cfg = r.unwrap(),
        Some(root) => {
            let (lo, hi) = corners(&root);
            let want = match box_error(&root) {
                Some(e) => Err(e),
                None if (0..dim::<B>()).any(|k| lo[k] >= hi[k]) => {
                    Err(Error::InvalidConfig { field: "root" })
                }
                None => Ok(()),
            };
            assert_eq!(r.map(|_| ()), want, "with_root({root:?})");
            if let Ok(c) = r {
                cfg = c;
            }
        }
    }
    (cfg, bits)
}

// ---------------------------------------------------------------------------
// The world of one dimension
// ---------------------------------------------------------------------------

struct World<B: BoundingBox, K: LocCode> {
    bp: Bp<B, K>,
    boxes: Vec<Option<B>>,
    /// Boxes the broad phase's record buffers hold.
    room: usize,
    /// The broad phase's configuration asks for more bits than `K` holds.
    bad_bits: bool,
    /// The broad phase has changes not yet built.
    dirty: bool,
    tree: Tree<B, K>,
    tree_bad_bits: bool,
    /// The tree's configuration has temporal reuse.
    tree_reuse: bool,
    /// The boxes of the tree's last build, or `None` after a configuration
    /// change with no build since (nothing to compare with).
    tree_boxes: Option<Vec<B>>,
}

fn rebuilt_pairs<B: BoundingBox, K: LocCode>(bp: &mut Bp<B, K>) -> Result<Vec<(u32, u32)>, Error> {
    let mut v = Vec::new();
    bp.for_each_overlap(|a, b| v.push((a, b)))?;
    Ok(normalise(&v, true, "for_each_pair"))
}

/// What a refused operation must keep. (The pairs are compared with the
/// unchanged model after every operation.)
#[derive(Debug, PartialEq)]
struct Snapshot<B, K> {
    len: usize,
    gets: Vec<Option<B>>,
    records: Vec<KdRecord<K>>,
    stats: KdStats,
}

impl<B: TestBox, K: LocCode> World<B, K> {
    fn new(records: usize, batch_cap: usize, cfg: &CfgIn) -> Self {
        let (c, bits) = make_config::<B, K>(cfg);
        let bad = bits > K::max_bits_per_axis(dim::<B>());
        Self {
            bp: KdBroadPhase::new(
                vec![KdSlot::EMPTY; CAP],
                vec![KdRecord::EMPTY; records],
                vec![KdRecord::EMPTY; records],
                c,
            ),
            boxes: vec![None; CAP],
            room: records.min(CAP),
            bad_bits: bad,
            dirty: false,
            tree: LinearKdTree::new(
                vec![KdRecord::EMPTY; batch_cap],
                vec![KdRecord::EMPTY; batch_cap],
                c,
            ),
            tree_bad_bits: bad,
            tree_reuse: cfg.reuse,
            tree_boxes: Some(Vec::new()),
        }
    }

    fn len(&self) -> usize {
        self.boxes.iter().flatten().count()
    }

    fn stored(&self, of: u8) -> Option<B> {
        self.boxes[usize::from(of) % CAP]
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

    /// What a rebuild gives: `InvalidConfig` while the bits are bad and a
    /// change is pending.
    fn refresh_result(&self) -> Result<(), Error> {
        if self.dirty && self.bad_bits {
            Err(Error::InvalidConfig { field: "bits" })
        } else {
            Ok(())
        }
    }

    fn snapshot(&self) -> Snapshot<B, K> {
        Snapshot {
            len: self.bp.box_count(),
            gets: (0..IDS).map(|id| self.bp.get(id)).collect(),
            records: self.bp.tree().records().to_vec(),
            stats: self.bp.stats(),
        }
    }

    fn check(&self, ctx: &dyn core::fmt::Debug) {
        let d = dim::<B>();
        if let Err(c) = self.bp.validate() {
            panic!("after {ctx:?}: {d}D: validate() failed: {c}");
        }
        let n = self.len();
        assert_eq!(self.bp.box_count(), n, "after {ctx:?}: {d}D: len");
        assert_eq!(self.bp.box_count() == 0, n == 0);
        assert_eq!(self.bp.capacity(), CAP);
        for id in 0..IDS {
            let want = self.boxes.get(id as usize).copied().flatten();
            let got = self.bp.get(id);
            assert!(
                same_opt(got, want),
                "after {ctx:?}: {d}D: get({id}) = {got:?}, model {want:?}"
            );
        }
        assert!(self.bp.get(u32::MAX).is_none());
        // Pairs of a rebuilt clone: the structure keeps its pending changes.
        let mut c = self.bp.clone();
        match self.refresh_result() {
            Err(e) => assert_eq!(rebuilt_pairs(&mut c), Err(e), "after {ctx:?}: {d}D"),
            Ok(()) => {
                let got = rebuilt_pairs(&mut c);
                let want = self.pairs();
                assert_eq!(
                    got,
                    Ok(want),
                    "after {ctx:?}: {d}D: pairs differ from brute force (boxes {:?})",
                    self.boxes
                );
                if let Err(e) = c.validate() {
                    panic!("after {ctx:?}: {d}D: validate() after a rebuild failed: {e}");
                }
                let st = c.stats();
                let recs = c.tree().records();
                assert!(
                    st.elements == n && st.records == recs.len() && st.records <= 8 * n,
                    "after {ctx:?}: {d}D: stats {st:?}"
                );
                let mut count = vec![0usize; CAP];
                for r in recs {
                    count[r.id() as usize] += 1;
                }
                for r in recs {
                    assert_eq!(count[r.id() as usize], r.pieces(), "{d}D: pieces of {r:?}");
                }
            }
        }
    }

    fn op_insert(&mut self, id: u8, b: &BoxIn) -> Result<(), Error> {
        let bx = make_box::<B>(b, |of| self.stored(of));
        let id = u32::from(id) % IDS;
        let i = id as usize;
        let r = self.bp.insert(id, bx);
        let mut allowed = Vec::new();
        if i >= CAP {
            allowed.push(Err(Error::IdOutOfRange { id }));
        } else {
            if let Some(e) = box_error(&bx) {
                allowed.push(Err(e));
            }
            if self.boxes[i].is_some() {
                allowed.push(Err(Error::DuplicateId { id }));
            }
            if self.len() >= self.room {
                allowed.push(Err(Error::CapacityExceeded {
                    capacity: self.room,
                }));
            }
            if allowed.is_empty() {
                allowed.push(Ok(()));
            }
        }
        assert!(
            allowed.contains(&r),
            "insert({id}, {bx:?}) = {r:?}, allowed {allowed:?}"
        );
        if r.is_ok() {
            self.boxes[i] = Some(bx);
            self.dirty = true;
        }
        r
    }

    fn op_update(&mut self, id: u32, bx: B) -> Result<(), Error> {
        let i = id as usize;
        let r = self.bp.update(id, bx);
        let mut allowed = Vec::new();
        if i >= CAP {
            allowed.push(Err(Error::IdOutOfRange { id }));
        } else {
            if self.boxes[i].is_none() {
                allowed.push(Err(Error::UnknownId { id }));
            }
            if let Some(e) = box_error(&bx) {
                allowed.push(Err(e));
            }
            if allowed.is_empty() {
                allowed.push(Ok(()));
            }
        }
        assert!(
            allowed.contains(&r),
            "update({id}, {bx:?}) = {r:?}, allowed {allowed:?}"
        );
        if r.is_ok() {
            self.boxes[i] = Some(bx);
            self.dirty = true;
        }
        r
    }

    fn op_remove(&mut self, id: u8) -> Result<(), Error> {
        let id = u32::from(id) % IDS;
        let i = id as usize;
        let r = self.bp.remove(id);
        if i >= CAP {
            assert_eq!(r, Err(Error::IdOutOfRange { id }));
        } else {
            match self.boxes[i] {
                None => assert_eq!(r, Err(Error::UnknownId { id })),
                Some(b) => {
                    assert!(
                        r.as_ref().is_ok_and(|got| same(got, &b)),
                        "remove({id}) = {r:?}, model {b:?}"
                    );
                    self.boxes[i] = None;
                    self.dirty = true;
                }
            }
        }
        r.map(|_| ())
    }

    fn query(&mut self, q: &B) -> Result<Vec<u32>, Error> {
        let mut v = Vec::new();
        self.bp.query(q, |id| v.push(id))?;
        v.sort_unstable();
        let len = v.len();
        v.dedup();
        assert_eq!(v.len(), len, "query {q:?}: an id reported twice");
        Ok(v)
    }

    fn op_query(&mut self, q: &B) -> Result<(), Error> {
        let got = self.query(q);
        let want = match box_error(q) {
            Some(e) => Err(e),
            None => self.refresh_result().map(|()| self.hits(q)),
        };
        assert_eq!(got, want, "query {q:?}");
        if got.is_ok() {
            self.dirty = false;
        }
        got.map(|_| ())
    }

    fn op_pairs(&mut self) -> Result<(), Error> {
        let mut a = Vec::new();
        let r = self.bp.for_each_overlap(|x, y| a.push((x, y)));
        assert_eq!(r, self.refresh_result(), "for_each_pair");
        r?;
        self.dirty = false;
        let mut b = Vec::new();
        self.bp.for_each_overlap(|x, y| b.push((x, y))).unwrap();
        assert_eq!(a, b, "for_each_pair not deterministic");
        let want = self.pairs();
        assert_eq!(normalise(&a, true, "pairs"), want);
        let mut raw = Vec::new();
        self.bp
            .for_each_candidate_pair(Candidates::Raw, |x, y| raw.push((x, y)))
            .unwrap();
        assert_eq!(raw.len() as u64, self.bp.tree().count_raw(), "count_raw");
        let raw = normalise(&raw, false, "raw");
        assert_eq!(missing(&raw, &want), vec![], "raw misses pairs");
        let mut uni = Vec::new();
        self.bp
            .for_each_candidate_pair(Candidates::Unique, |x, y| uni.push((x, y)))
            .unwrap();
        let uni = normalise(&uni, true, "unique");
        assert_eq!(missing(&uni, &want), vec![], "unique misses pairs");
        assert_eq!(missing(&raw, &uni), vec![], "unique not within raw");
        let mut ex = Vec::new();
        self.bp
            .for_each_candidate_pair(Candidates::Exact, |x, y| ex.push((x, y)))
            .unwrap();
        assert_eq!(normalise(&ex, true, "exact"), want);
        for i in 0..CAP {
            if let Some(q) = self.boxes[i] {
                assert_eq!(self.query(&q), Ok(self.hits(&q)), "query with box {i}");
            }
        }
        Ok(())
    }

    fn apply(&mut self, op: &Op) {
        let before = self.snapshot();
        let r = match op {
            Op::Insert(id, b) => self.op_insert(*id, b),
            Op::Update(id, b) => {
                let bx = make_box::<B>(b, |of| self.stored(of));
                self.op_update(u32::from(*id) % IDS, bx)
            }
            Op::Nudge(id, delta, exp) => {
                let id = u32::from(*id) % IDS;
                let bx = match self.boxes.get(id as usize).copied().flatten() {
                    Some(b) => nudged(&b, delta, *exp),
                    None => B::raw([0.0; 3], [1.0; 3]),
                };
                self.op_update(id, bx)
            }
            Op::Remove(id) => self.op_remove(*id),
            Op::Query(b) => {
                let q = make_box::<B>(b, |of| self.stored(of));
                self.op_query(&q)
            }
            Op::Clear => {
                self.bp.clear();
                self.boxes.fill(None);
                self.dirty = false;
                Ok(())
            }
            Op::Pairs => self.op_pairs(),
            Op::SetConfig(c) => {
                let (cfg, bits) = make_config::<B, K>(c);
                self.bp.set_config(cfg);
                self.bad_bits = bits > K::max_bits_per_axis(dim::<B>());
                self.dirty = true;
                Ok(())
            }
            Op::Batch { cfg, boxes } => {
                if let Some(c) = cfg {
                    self.tree_reuse = c.reuse;
                    let (c, bits) = make_config::<B, K>(c);
                    self.tree.set_config(c);
                    self.tree_bad_bits = bits > K::max_bits_per_axis(dim::<B>());
                    self.tree_boxes = None;
                    assert_eq!(self.tree.records(), &[][..], "set_config keeps records");
                }
                let mut made: Vec<B> = Vec::new();
                for b in boxes.iter().take(MAX_BATCH) {
                    let bx = make_box::<B>(b, |of| {
                        (!made.is_empty()).then(|| made[usize::from(of) % made.len()])
                    });
                    made.push(bx);
                }
                self.batch(made);
                Ok(())
            }
            Op::Rebuild(moves) => {
                if let Some(mut boxes) = self.tree_boxes.clone()
                    && !boxes.is_empty()
                {
                    for (i, delta, exp) in moves.iter().take(MAX_BATCH) {
                        let k = usize::from(*i) % boxes.len();
                        boxes[k] = nudged(&boxes[k], delta, *exp);
                    }
                    self.batch(boxes);
                }
                Ok(())
            }
            Op::ClearTree => {
                self.tree.clear();
                assert!(self.tree.is_empty());
                self.tree_boxes = Some(Vec::new());
                Ok(())
            }
        };
        if let Err(e) = r {
            let after = self.snapshot();
            assert_eq!(after, before, "{op:?} refused with {e:?} but changed");
        }
        match op {
            Op::Batch { .. } | Op::Rebuild(_) | Op::ClearTree => self.check_tree(op),
            _ => self.check(op),
        }
    }

    /// A batch build: predicted result; a refused build keeps everything.
    fn batch(&mut self, boxes: Vec<B>) {
        let records = self.tree.records().to_vec();
        let stats = self.tree.stats();
        let cap = self.tree.record_capacity();
        let want = match boxes.iter().find_map(box_error) {
            Some(e) => Err(e),
            None if boxes.len() > cap => Err(Error::CapacityExceeded { capacity: cap }),
            None if self.tree_bad_bits => Err(Error::InvalidConfig { field: "bits" }),
            None => Ok(()),
        };
        let r = self.tree.build(&boxes);
        assert_eq!(r, want, "build of {} boxes: {boxes:?}", boxes.len());
        if r.is_ok() {
            self.tree_boxes = Some(boxes);
        } else {
            assert_eq!(
                self.tree.records(),
                &records[..],
                "a refused build changed the records"
            );
            assert_eq!(
                self.tree.stats(),
                stats,
                "a refused build changed the stats"
            );
        }
    }

    /// The batch tree against brute force over its last boxes.
    fn check_tree(&self, ctx: &dyn core::fmt::Debug) {
        let d = dim::<B>();
        let t = &self.tree;
        if let Err(c) = t.validate() {
            panic!("after {ctx:?}: {d}D: tree validate() failed: {c}");
        }
        let Some(boxes) = &self.tree_boxes else {
            return;
        };
        if let Err(c) = t.validate_against(boxes) {
            panic!("after {ctx:?}: {d}D: tree validate_against() failed: {c}");
        }
        assert_eq!(t.len(), boxes.len(), "after {ctx:?}: {d}D: tree len");
        let st = t.stats();
        assert_eq!(st.records, t.records().len(), "{st:?}");
        if !self.tree_reuse {
            assert!(!st.reused, "{d}D: reused without temporal reuse: {st:?}");
        }
        let mut want = Vec::new();
        for i in 0..boxes.len() {
            for j in i + 1..boxes.len() {
                if overlap(&boxes[i], &boxes[j]) {
                    want.push((i as u32, j as u32));
                }
            }
        }
        let mut raw = Vec::new();
        t.for_each_candidate_pair(boxes, Candidates::Raw, |a, b| raw.push((a, b)))
            .unwrap();
        assert_eq!(raw.len() as u64, t.count_raw(), "{d}D: tree count_raw");
        let raw = normalise(&raw, false, "tree raw");
        assert_eq!(missing(&raw, &want), vec![], "{d}D: tree raw misses pairs");
        let mut uni = Vec::new();
        t.for_each_candidate_pair(boxes, Candidates::Unique, |a, b| uni.push((a, b)))
            .unwrap();
        let uni = normalise(&uni, true, "tree unique");
        assert_eq!(
            missing(&uni, &want),
            vec![],
            "{d}D: tree unique misses pairs"
        );
        assert_eq!(
            missing(&raw, &uni),
            vec![],
            "{d}D: tree unique not within raw"
        );
        let mut ex = Vec::new();
        t.for_each_candidate_pair(boxes, Candidates::Exact, |a, b| ex.push((a, b)))
            .unwrap();
        assert_eq!(
            normalise(&ex, true, "tree exact"),
            want,
            "after {ctx:?}: {d}D: tree exact pairs differ from brute force; boxes {boxes:?}, stats {st:?}"
        );
        for (k, q) in boxes.iter().enumerate().take(16) {
            let mut got = Vec::new();
            t.query(boxes, q, |id| got.push(id)).unwrap();
            got.sort_unstable();
            let hits: Vec<u32> = (0..boxes.len() as u32)
                .filter(|&i| overlap(&boxes[i as usize], q))
                .collect();
            assert_eq!(got, hits, "{d}D: tree query with box {k} {q:?}");
        }
    }
}

fn run<K: LocCode>(input: &Input) {
    let records = RECORDS[usize::from(input.records) % RECORDS.len()];
    let batch_cap = usize::from(input.batch_cap) % 129;
    let mut w2 = World::<Aabb2, K>::new(records, batch_cap, &input.cfg);
    let mut w3 = World::<Aabb3, K>::new(records, batch_cap, &input.cfg);
    w2.check(&"new");
    w3.check(&"new");
    for (three, op) in input.ops.iter().take(MAX_OPS) {
        if *three {
            w3.apply(op);
        } else {
            w2.apply(op);
        }
    }
}

fuzz_target!(|input: Input| {
    match input.code % 3 {
        0 => run::<u32>(&input),
        1 => run::<u64>(&input),
        _ => run::<u128>(&input),
    }
});
