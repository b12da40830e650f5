//! Differential fuzzing of the hierarchical hash grid, in 2D and 3D, judged
//! by the shared broad-phase model with the grid's layer
//! (`spatium_host_tests::hhg_model`, the same judge as `hhg_props.rs`), plus
//! what only this target checks.
//!
//! What this target explores and the property tests do not: the input
//! decodes (via `arbitrary`) into a configuration — hierarchy factor (1.25
//! to 64), density, initial grid size (4 to 16 cells per axis), small-N
//! threshold (0 to 40), arena length (0, 100, 1000, 5000 or 50000 words,
//! filled with an arbitrary word: the arena may hold anything) — and up to
//! 64 operations over ids `0..40` (capacity 36), each applied to the 2D or
//! the 3D world: insert, insert as unbounded, update, remove, `update_all`
//! with either strategy, box queries, clear, pair detection, `sort_records`.
//! Boxes are quarter-lattice boxes of power-of-two scales, copies of stored
//! boxes and boxes touching them, with coordinates overridden by raw `f32`
//! bits or special values (NaN, infinities, 1e30, subnormals, `-0.0`, values
//! at the grid range limit).
//!
//! Checked only here, on top of the shared model: `OutOfRange` from the
//! documented range rule (a box is refused iff some coordinate is at least
//! 2²⁰ cells of the largest usable level, `c₀·fᵏ`, `k < 15`, and it is
//! smaller than those cells; a small tolerance band where `f32` rounding
//! decides), the `stats()` cell sizes (`c₀·fᵏ`), grid shapes, live arena
//! words and memory formula, and `with_hierarchy_factor`'s documented range.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use spatium::{
    Aabb2, Aabb3, BoundingBox, Error, HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid, Inspect,
};
use spatium_host::boxes::{TestBox, corners, dim};
use spatium_host_tests::hhg_model::{AllLen, HhgModel, HhgOp};
use spatium_host_tests::model::{BoxSpec, BroadOp};

/// Ids are `0..IDS`; those from `CAP` are out of range.
const IDS: u32 = 40;
const CAP: usize = 36;
/// Most operations per input.
const MAX_OPS: usize = 64;
/// Most boxes an `update_all` moves.
const MAX_MOVES: usize = 16;
const FACTORS: [f32; 6] = [2.0, 1.25, 8.0, 1.5, 3.0, 64.0];
const DENSITIES: [f32; 5] = [0.125, 1.0, 4.0, 0.01, 1024.0];
const ARENAS: [usize; 5] = [0, 100, 1000, 5000, 50000];
/// Range limit of a grid in cells (`hhg::HHG_RANGE_CELLS`).
const LIMIT: f64 = 1_048_576.0;
/// Levels below and above the first box's level.
const LEVELS_BELOW: i32 = 15;
const LEVELS_ABOVE: i32 = 14;
/// Relative tolerance of the range prediction (`f32` rounding of `x / cell`
/// and of the cell sizes).
const TOL: f64 = 1e-4;

type Hhg<B> = HierarchicalHashGrid<B, Vec<HhgSlot<B>>, Vec<HhgRecord<B>>, Vec<u32>>;

// ---------------------------------------------------------------------------
// Input
// ---------------------------------------------------------------------------

/// A lattice box: lower corner `pos / 4 · 2^pe`, edges `edge / 4 · 2^se`.
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
    /// `±2²⁰ cells · (1 + off · 2⁻²⁰)` of the largest level: the range limit.
    Edge(bool, i8),
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
    -1e7,
    1_048_576.0,
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
enum LenIn {
    Full,
    Full2,
    Full3,
    /// `k % CAP` entries.
    Short(u8),
    /// `CAP + k % 4` entries.
    Long(u8),
}

#[derive(Arbitrary, Debug)]
enum Op {
    Insert(u8, BoxIn),
    InsertUnbounded(u8, BoxIn),
    Update(u8, BoxIn),
    Remove(u8),
    UpdateAll {
        incremental: bool,
        moves: Vec<(u8, BoxIn)>,
        len: LenIn,
        /// Entries of absent ids: NaN boxes (to be ignored) or zero boxes.
        nan_fill: bool,
    },
    Query(BoxIn),
    Clear,
    Pairs,
    SortRecords,
}

#[derive(Arbitrary, Debug)]
struct Input {
    factor: u8,
    density: u8,
    initial_log2: u8,
    small_n: u8,
    arena: u8,
    arena_fill: u32,
    /// Checked against the documented range of `with_hierarchy_factor`.
    raw_factor: f32,
    /// `(3D?, operation)`.
    ops: Vec<(bool, Op)>,
}

// ---------------------------------------------------------------------------
// Boxes
// ---------------------------------------------------------------------------

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

fn lattice_edges(l: &Lattice) -> [f32; 3] {
    let step = 0.25 * pow2(i32::from(l.se).rem_euclid(16) - 8);
    core::array::from_fn(|k| f32::from(l.edge[k] % 16) * step)
}

/// `c₀` as the first box `b` fixes it: its longest edge times `√f`, or 1 if
/// that is not a normal number.
fn c0_of<B: BoundingBox>(b: &B, f: f32) -> f32 {
    let c = b.longest_edge() * f.sqrt();
    if c.is_normal() && c > 0.0 { c } else { 1.0 }
}

/// Is `x` an `f32` normal number, clearly (`Some(true)`), clearly not
/// (`Some(false)`) or too close to call?
fn normal(x: f64) -> Option<bool> {
    let lo = f64::from(f32::MIN_POSITIVE);
    let hi = f64::from(f32::MAX);
    if x > lo * (1.0 + TOL) && x < hi * (1.0 - TOL) {
        Some(true)
    } else if x < lo * (1.0 - TOL) || x > hi * (1.0 + TOL) {
        Some(false)
    } else {
        None
    }
}

/// The largest usable cell size of the levels `c0 · f^k`, or `None` when
/// rounding could decide which level that is.
fn top_cell(c0: f32, f: f32) -> Option<f64> {
    let mut top = None;
    for k in -LEVELS_BELOW..=LEVELS_ABOVE {
        let cell = f64::from(c0) * f64::from(f).powi(k);
        match (normal(cell), normal(1.0 / cell)) {
            (Some(true), Some(true)) => top = Some(cell),
            (Some(false), _) | (_, Some(false)) => {}
            _ => return None,
        }
    }
    top
}

/// What an operation on one box may return.
#[derive(Clone, Debug, PartialEq)]
enum Expect {
    /// One of these errors (a box with two defects may report either).
    Refused(Vec<Error>),
    Ok,
    OkOrOutOfRange,
}

impl Expect {
    fn allows(&self, r: Result<(), Error>) -> bool {
        match (self, r) {
            (Expect::Refused(v), Err(e)) => v.contains(&e),
            (Expect::Ok | Expect::OkOrOutOfRange, Ok(())) => true,
            (Expect::OkOrOutOfRange, Err(Error::OutOfRange)) => true,
            _ => false,
        }
    }
}

/// A box given to `insert` / `update` of a bounded id, with the levels of
/// `c0` (`None`: this box fixes them).
fn expect_bounded<B: BoundingBox>(b: &B, c0: Option<f32>, f: f32) -> Expect {
    let (lo, hi) = corners(b);
    let d = dim::<B>();
    let mut errs = Vec::new();
    if (0..d).any(|k| !lo[k].is_finite() || !hi[k].is_finite()) {
        errs.push(Error::NonFinite);
    }
    if (0..d).any(|k| lo[k] > hi[k]) {
        errs.push(Error::InvertedBox);
    }
    if !errs.is_empty() {
        return Expect::Refused(errs);
    }
    let c0 = c0.unwrap_or_else(|| c0_of(b, f));
    let Some(top) = top_cell(c0, f) else {
        return Expect::OkOrOutOfRange;
    };
    let size = (0..d)
        .map(|k| f64::from(hi[k]) - f64::from(lo[k]))
        .fold(0.0, f64::max);
    let far = (0..d)
        .map(|k| f64::from(lo[k].abs()).max(f64::from(hi[k].abs())))
        .fold(0.0, f64::max)
        / top;
    if size >= top * (1.0 + TOL) || far < LIMIT * (1.0 - TOL) {
        // Too large for every grid (the unbounded container), or in range.
        Expect::Ok
    } else if size < top * (1.0 - TOL) && far >= LIMIT * (1.0 + TOL) {
        Expect::Refused(vec![Error::OutOfRange])
    } else {
        Expect::OkOrOutOfRange
    }
}

// ---------------------------------------------------------------------------
// The world of one dimension
// ---------------------------------------------------------------------------

struct World<B: BoundingBox> {
    g: Hhg<B>,
    m: HhgModel<B>,
    /// `c₀`, fixed by the first bounded box inserted since the last clear.
    c0: Option<f32>,
    cfg: HhgConfig,
    arena: usize,
}

impl<B: TestBox> World<B> {
    fn new(cfg: HhgConfig, arena: usize, fill: u32) -> Self {
        Self {
            g: HierarchicalHashGrid::new(
                vec![HhgSlot::EMPTY; CAP],
                vec![HhgRecord::EMPTY; CAP],
                vec![fill; arena],
                cfg,
            ),
            m: HhgModel::new(CAP, cfg.small_n_threshold(), arena),
            c0: None,
            cfg,
            arena,
        }
    }

    fn factor(&self) -> f32 {
        self.cfg.hierarchy_factor()
    }

    /// The stored bounded box `of`, if any.
    fn stored_bounded(&self, of: u8) -> Option<B> {
        let i = usize::from(of) % CAP;
        self.m.broad.slots[i].filter(|_| !self.m.unbounded[i])
    }

    fn make_box(&self, b: &BoxIn) -> B {
        let (mut lo, mut hi) = match b.kind {
            Kind::Lattice(l) | Kind::Lattice2(l) | Kind::Lattice3(l) => lattice_corners(&l),
            Kind::Copy(of, l) => match self.stored_bounded(of) {
                Some(s) => corners(&s),
                None => lattice_corners(&l),
            },
            Kind::Touch { of, axis, lat } => match self.stored_bounded(of) {
                Some(s) => {
                    let (slo, shi) = corners(&s);
                    let a = usize::from(axis) % dim::<B>();
                    let mut lo = slo;
                    lo[a] = shi[a];
                    let e = lattice_edges(&lat);
                    (lo, core::array::from_fn(|k| lo[k] + e[k]))
                }
                None => lattice_corners(&lat),
            },
        };
        for o in b.over.iter().take(6) {
            let v = match o.value {
                Value::Raw(x) => x,
                Value::Special(k) => SPECIAL[usize::from(k) % SPECIAL.len()],
                Value::Edge(neg, off) => {
                    let c0 = self.c0.unwrap_or(1.0);
                    let top = top_cell(c0, self.factor()).unwrap_or(f64::from(c0));
                    let v = (LIMIT * top * (1.0 + f64::from(off) / LIMIT)) as f32;
                    if neg { -v } else { v }
                }
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

    fn check_stats(&self, ctx: &dyn core::fmt::Debug) {
        let st = self.g.stats();
        // The counts are the shared layer's (HhgModel::check); these are
        // this target's own.
        let c = format!("after {ctx:?}: {}D: stats {st:?}", dim::<B>());
        // A grid takes 3^D·3^D table words plus at least 4^D cells.
        let min_grid = if dim::<B>() == 3 { 729 + 64 } else { 81 + 16 };
        if self.arena < min_grid {
            assert_eq!(st.grids, 0, "{c}");
        }
        let bytes = CAP * (size_of::<HhgSlot<B>>() + size_of::<HhgRecord<B>>())
            + self.arena * 4
            + size_of::<Hhg<B>>();
        assert_eq!(st.bytes_total, bytes, "{c}");
        let f = f64::from(self.factor());
        let mut words = 0usize;
        let mut prev_cell = 0.0f32;
        for s in &st.grid[..st.grids] {
            let per: u32 = s.cells_per_axis.iter().product();
            assert_eq!(s.cells, per, "{c}");
            for (k, &a) in s.cells_per_axis.iter().enumerate() {
                if k < dim::<B>() {
                    assert!(a.is_power_of_two() && a >= 4, "{c}");
                    assert_eq!(a, s.cells_per_axis[0], "{c}");
                } else {
                    assert_eq!(a, 1, "{c}");
                }
            }
            assert!(s.occupied_cells <= s.objects, "{c}");
            assert!(s.max_objects_per_cell <= s.objects, "{c}");
            assert_eq!(s.objects > 0, s.max_objects_per_cell > 0, "{c}");
            assert!((-LEVELS_BELOW..=LEVELS_ABOVE).contains(&s.level), "{c}");
            assert!(s.cell_size > prev_cell, "{c}: grids in ascending cell size");
            prev_cell = s.cell_size;
            let c0 = self.c0.expect("grids only once a bounded box fixed c0");
            let want = f64::from(c0) * f.powi(s.level);
            assert!(
                (f64::from(s.cell_size) / want - 1.0).abs() < TOL,
                "{c}: cell size of level {} is not c0·f^k = {want}",
                s.level
            );
            words += s.cells as usize + if dim::<B>() == 3 { 729 } else { 81 };
        }
        assert_eq!(words, st.arena_words_used, "{c}: live arena words");
        for s in &st.grid[st.grids..] {
            assert_eq!(s.objects, 0, "{c}");
        }
    }

    /// The range rule, for an insert of a free id or an update of a stored
    /// bounded one (other cases are the shared model's).
    fn range_rule(&self, op: &Op, b: &B) -> Option<Expect> {
        let (id, insert) = match op {
            Op::Insert(id, _) => (u32::from(*id) % IDS, true),
            Op::Update(id, _) => (u32::from(*id) % IDS, false),
            _ => return None,
        };
        let i = id as usize;
        let stored = self.m.broad.get(id).is_some();
        if i >= CAP || stored == insert || (stored && self.m.unbounded[i]) {
            return None;
        }
        Some(expect_bounded(b, self.c0, self.factor()))
    }

    fn apply(&mut self, op: &Op) {
        let id = |i: &u8| u32::from(*i) % IDS;
        let exact = |w: &Self, b: &BoxIn| BoxSpec::Exact(w.make_box(b));
        let (hop, b) = match op {
            Op::Insert(i, b) => {
                let bx = self.make_box(b);
                (
                    HhgOp::Broad(BroadOp::Insert(id(i), BoxSpec::Exact(bx))),
                    Some(bx),
                )
            }
            Op::InsertUnbounded(i, b) => (HhgOp::InsertUnbounded(id(i), exact(self, b)), None),
            Op::Update(i, b) => {
                let bx = self.make_box(b);
                (
                    HhgOp::Broad(BroadOp::Update(id(i), BoxSpec::Exact(bx))),
                    Some(bx),
                )
            }
            Op::Remove(i) => (HhgOp::Broad(BroadOp::Remove(id(i))), None),
            Op::UpdateAll {
                incremental,
                moves,
                len,
                nan_fill,
            } => {
                let moves = moves
                    .iter()
                    .take(MAX_MOVES)
                    .map(|(i, b)| (id(i), exact(self, b)))
                    .collect();
                let len = match len {
                    LenIn::Full | LenIn::Full2 | LenIn::Full3 => AllLen::Full,
                    LenIn::Short(k) => AllLen::Short(*k),
                    LenIn::Long(k) => AllLen::Long(*k),
                };
                let (incremental, nan_fill) = (*incremental, *nan_fill);
                (
                    HhgOp::UpdateAll {
                        incremental,
                        moves,
                        len,
                        nan_fill,
                    },
                    None,
                )
            }
            Op::Query(b) => (HhgOp::Broad(BroadOp::Query(exact(self, b))), None),
            Op::Clear => (HhgOp::Broad(BroadOp::Clear), None),
            Op::Pairs => (HhgOp::Broad(BroadOp::Overlaps), None),
            Op::SortRecords => (HhgOp::SortRecords, None),
        };
        let rule = b.as_ref().and_then(|b| self.range_rule(op, b));
        let r = self
            .m
            .apply(&mut self.g, &hop)
            .unwrap_or_else(|e| panic!("{}D: {e}", dim::<B>()));
        if let (Some(e), Some(b)) = (rule, b) {
            assert!(
                e.allows(r),
                "{}D: {op:?}: {b:?} gave {r:?}, range rule {e:?}",
                dim::<B>()
            );
            if matches!(op, Op::Insert(..)) && r.is_ok() && self.c0.is_none() {
                self.c0 = Some(c0_of(&b, self.factor()));
            }
        }
        if matches!(op, Op::Clear) {
            self.c0 = None;
        }
        self.check_stats(op);
    }
}

fuzz_target!(|input: Input| {
    let f = FACTORS[usize::from(input.factor) % FACTORS.len()];
    let cfg = HhgConfig::DEFAULT
        .with_hierarchy_factor(f)
        .unwrap()
        .with_density(DENSITIES[usize::from(input.density) % DENSITIES.len()])
        .unwrap()
        .with_initial_cells_log2(2 + input.initial_log2 % 3)
        .unwrap()
        .with_small_n_threshold(u32::from(input.small_n % 41));
    let raw = input.raw_factor;
    assert_eq!(
        HhgConfig::DEFAULT.with_hierarchy_factor(raw).is_ok(),
        (1.25..=64.0).contains(&raw),
        "with_hierarchy_factor({raw})"
    );
    let arena = ARENAS[usize::from(input.arena) % ARENAS.len()];
    let mut w2 = World::<Aabb2>::new(cfg, arena, input.arena_fill);
    let mut w3 = World::<Aabb3>::new(cfg, arena, input.arena_fill);
    w2.check_stats(&"new");
    w3.check_stats(&"new");
    for (three, op) in input.ops.iter().take(MAX_OPS) {
        if *three {
            w3.apply(op);
        } else {
            w2.apply(op);
        }
    }
});
