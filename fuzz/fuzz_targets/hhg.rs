//! Differential fuzzing of the hierarchical hash grid against a brute-force
//! model, in 2D and 3D.
//!
//! The input decodes (via `arbitrary`) into a configuration — hierarchy
//! factor (1.25 to 64), density, initial grid size (4 to 16 cells per axis),
//! small-N threshold (0 to 40), arena length (0, 100, 1000, 5000 or 50000
//! words, filled with an arbitrary word: the arena may hold anything) — and
//! up to 64 operations over ids `0..40` (capacity 36, so some ids are out of
//! range), each applied to the 2D or the 3D world: insert, insert as
//! unbounded, update, remove, `update_all` with either strategy, box
//! queries, clear, pair detection, `sort_records`.
//!
//! Boxes are mostly quarter-lattice boxes of power-of-two scales (so boxes
//! coincide and touch exactly, and their sizes span many grids), copies of
//! stored boxes and boxes touching them; some coordinates are overridden by
//! raw `f32` bits or special values (NaN, infinities, 1e30, subnormals,
//! `-0.0`, values at the grid range limit).
//!
//! The model is a `Vec<Option<B>>` with its own per-axis overlap test. After
//! every operation the structure is validated and compared with it: `len`,
//! `get` of every id (bit for bit), the exact set of pairs (each once, no
//! self pairs), `uses_grids` (the small-N switch), and the `stats()` counts,
//! cell sizes and memory formula. Every operation's result is predicted:
//! id errors, `NonFinite` / `InvertedBox` (either, when a box has both
//! defects), and `OutOfRange` from the documented range rule (a box is
//! refused iff some coordinate is at least 2²⁰ cells of the largest usable
//! level, `c₀·fᵏ`, `k < 15`, and it is smaller than those cells), with a
//! small tolerance band where `f32` rounding decides. A refused operation
//! must leave everything unchanged, `stats()` included.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use spatium::{
    Aabb2, Aabb3, BoundingBox, BroadPhase, Error, HhgConfig, HhgRecord, HhgSlot, HhgStats,
    HierarchicalHashGrid, Inspect, UpdateStrategy, Validate,
};
use spatium_host::boxes::{TestBox, corners, dim, overlap, same};

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

type Hhg<B> = HierarchicalHashGrid<B, Vec<HhgSlot<B>>, Vec<HhgRecord>, Vec<u32>>;

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

// ---------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------

struct Model<B> {
    boxes: Vec<Option<B>>,
    /// Stored through `insert_unbounded`.
    unbounded: Vec<bool>,
    grid_mode: bool,
    /// `c₀`, fixed by the first bounded box inserted since the last clear.
    c0: Option<f32>,
}

impl<B: BoundingBox> Model<B> {
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

/// A box given to `insert_unbounded`, `query`, or `update` of an unbounded id.
fn expect_unbounded<B: BoundingBox>(b: &B) -> Expect {
    let (lo, hi) = corners(b);
    let d = dim::<B>();
    let mut errs = Vec::new();
    if (0..d).any(|k| {
        lo[k].is_nan() || hi[k].is_nan() || lo[k] == f32::INFINITY || hi[k] == f32::NEG_INFINITY
    }) {
        errs.push(Error::NonFinite);
    }
    if (0..d).any(|k| lo[k] > hi[k]) {
        errs.push(Error::InvertedBox);
    }
    if errs.is_empty() {
        Expect::Ok
    } else {
        Expect::Refused(errs)
    }
}

// ---------------------------------------------------------------------------
// The world of one dimension
// ---------------------------------------------------------------------------

struct World<B: BoundingBox> {
    g: Hhg<B>,
    m: Model<B>,
    cfg: HhgConfig,
    arena: usize,
}

fn sorted_pairs<B: BoundingBox>(g: &mut Hhg<B>, ctx: &dyn core::fmt::Debug) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    g.for_each_overlap(|a, b| v.push((a, b)))
        .unwrap_or_else(|e| panic!("after {ctx:?}: for_each_pair: {e}"));
    assert!(
        v.iter().all(|&(a, b)| a != b),
        "after {ctx:?}: self pair in {v:?}"
    );
    let mut n: Vec<(u32, u32)> = v.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
    n.sort_unstable();
    let len = n.len();
    n.dedup();
    assert_eq!(n.len(), len, "after {ctx:?}: duplicate pairs in {v:?}");
    n
}

fn query<B: BoundingBox>(g: &mut Hhg<B>, q: &B) -> Result<Vec<u32>, Error> {
    let mut v = Vec::new();
    g.query(q, |id| v.push(id))?;
    v.sort_unstable();
    let len = v.len();
    v.dedup();
    assert_eq!(v.len(), len, "query {q:?}: an id reported twice");
    Ok(v)
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
            m: Model {
                boxes: vec![None; CAP],
                unbounded: vec![false; CAP],
                grid_mode: false,
                c0: None,
            },
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
        self.m.boxes[i].filter(|_| !self.m.unbounded[i])
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
                    let c0 = self.m.c0.unwrap_or(1.0);
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

    /// Validates the structure and compares it with the model.
    fn check(&mut self, ctx: &dyn core::fmt::Debug) {
        let d = dim::<B>();
        if let Err(c) = self.g.validate() {
            panic!("after {ctx:?}: {d}D: validate() failed: {c}");
        }
        let n = self.m.len();
        assert_eq!(self.g.box_count(), n, "after {ctx:?}: {d}D: len");
        assert_eq!(self.g.box_count() == 0, n == 0, "after {ctx:?}");
        assert_eq!(self.g.capacity(), CAP, "after {ctx:?}");
        for id in 0..IDS {
            let want = self.m.boxes.get(id as usize).copied().flatten();
            let got = self.g.get(id);
            let ok = match (got, want) {
                (Some(a), Some(b)) => same(&a, &b),
                (None, None) => true,
                _ => false,
            };
            assert!(
                ok,
                "after {ctx:?}: {d}D: get({id}) = {got:?}, model {want:?}"
            );
        }
        assert!(self.g.get(u32::MAX).is_none());
        assert_eq!(
            self.g.uses_grids(),
            self.m.grid_mode,
            "after {ctx:?}: {d}D: small-N switch"
        );
        self.check_stats(ctx);
        let got = sorted_pairs(&mut self.g, ctx);
        let want = self.m.pairs();
        assert_eq!(
            got, want,
            "after {ctx:?}: {d}D: pairs differ from brute force (boxes {:?})",
            self.m.boxes
        );
    }

    fn check_stats(&self, ctx: &dyn core::fmt::Debug) {
        let st = self.g.stats();
        let n = self.m.len();
        let m = &self.m;
        let nu = (0..CAP)
            .filter(|&i| m.unbounded[i] && m.boxes[i].is_some())
            .count();
        let in_grids: usize = st.grid[..st.grids].iter().map(|s| s.objects as usize).sum();
        let c = format!("after {ctx:?}: {}D: stats {st:?}", dim::<B>());
        assert_eq!(st.small_n, !m.grid_mode, "{c}");
        assert_eq!(st.flat_objects + st.unbounded_objects + in_grids, n, "{c}");
        assert_eq!(st.arena_words, self.arena, "{c}");
        assert!(st.arena_words_used <= self.arena, "{c}");
        if m.grid_mode {
            assert_eq!(st.flat_objects, 0, "{c}");
            assert!(st.unbounded_objects >= nu, "{c}");
        } else {
            assert_eq!(st.grids, 0, "{c}");
            assert_eq!(st.unbounded_objects, nu, "{c}");
        }
        // A grid takes 3^D·3^D table words plus at least 4^D cells.
        let min_grid = if dim::<B>() == 3 { 729 + 64 } else { 81 + 16 };
        if self.arena < min_grid {
            assert_eq!(st.grids, 0, "{c}");
        }
        let bytes = CAP * (size_of::<HhgSlot<B>>() + size_of::<HhgRecord>())
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
            let c0 = m.c0.expect("grids only once a bounded box fixed c0");
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

    fn op_insert(&mut self, id: u8, b: &BoxIn) -> Result<(), Error> {
        let bx = self.make_box(b);
        let id = u32::from(id) % IDS;
        let i = id as usize;
        let r = self.g.insert(id, bx);
        let ctx = format!("insert({id}, {bx:?}) = {r:?}");
        let e = expect_bounded(&bx, self.m.c0, self.factor());
        if i >= CAP {
            assert_eq!(r, Err(Error::IdOutOfRange { id }), "{ctx}");
        } else if self.m.boxes[i].is_some() {
            // A wrong id and a wrong box: either error will do.
            let box_err = matches!(e, Expect::Refused(_)) && e.allows(r);
            assert!(r == Err(Error::DuplicateId { id }) || box_err, "{ctx}");
        } else {
            assert!(e.allows(r), "{ctx}: want {e:?}");
            if r.is_ok() {
                self.m.boxes[i] = Some(bx);
                self.m.unbounded[i] = false;
                if self.m.c0.is_none() {
                    self.m.c0 = Some(c0_of(&bx, self.factor()));
                }
                if self.m.len() as u32 >= self.cfg.small_n_threshold() {
                    self.m.grid_mode = true;
                }
            }
        }
        r
    }

    fn op_insert_unbounded(&mut self, id: u8, b: &BoxIn) -> Result<(), Error> {
        let bx = self.make_box(b);
        let id = u32::from(id) % IDS;
        let i = id as usize;
        let r = self.g.insert_unbounded(id, bx);
        let ctx = format!("insert_unbounded({id}, {bx:?}) = {r:?}");
        let e = expect_unbounded(&bx);
        if i >= CAP {
            assert_eq!(r, Err(Error::IdOutOfRange { id }), "{ctx}");
        } else if self.m.boxes[i].is_some() {
            let box_err = matches!(e, Expect::Refused(_)) && e.allows(r);
            assert!(r == Err(Error::DuplicateId { id }) || box_err, "{ctx}");
        } else {
            assert!(e.allows(r), "{ctx}: want {e:?}");
            if r.is_ok() {
                self.m.boxes[i] = Some(bx);
                self.m.unbounded[i] = true;
            }
        }
        r
    }

    fn op_update(&mut self, id: u8, b: &BoxIn) -> Result<(), Error> {
        let bx = self.make_box(b);
        let id = u32::from(id) % IDS;
        let i = id as usize;
        let r = self.g.update(id, bx);
        let ctx = format!("update({id}, {bx:?}) = {r:?}");
        if i >= CAP {
            assert_eq!(r, Err(Error::IdOutOfRange { id }), "{ctx}");
        } else if self.m.boxes[i].is_none() {
            assert_eq!(r, Err(Error::UnknownId { id }), "{ctx}");
        } else {
            let e = if self.m.unbounded[i] {
                expect_unbounded(&bx)
            } else {
                expect_bounded(&bx, self.m.c0, self.factor())
            };
            assert!(e.allows(r), "{ctx}: want {e:?}");
            if r.is_ok() {
                self.m.boxes[i] = Some(bx);
            }
        }
        r
    }

    fn op_remove(&mut self, id: u8) -> Result<(), Error> {
        let id = u32::from(id) % IDS;
        let i = id as usize;
        let r = self.g.remove(id);
        if i >= CAP {
            assert_eq!(r, Err(Error::IdOutOfRange { id }));
        } else {
            match self.m.boxes[i] {
                None => assert_eq!(r, Err(Error::UnknownId { id })),
                Some(b) => {
                    assert!(
                        r.as_ref().is_ok_and(|got| same(got, &b)),
                        "remove({id}) = {r:?}, model {b:?}"
                    );
                    self.m.boxes[i] = None;
                    self.m.unbounded[i] = false;
                }
            }
        }
        r.map(|_| ())
    }

    fn op_update_all(
        &mut self,
        incremental: bool,
        moves: &[(u8, BoxIn)],
        len: LenIn,
        nan_fill: bool,
    ) -> Result<(), Error> {
        let nan = B::raw([f32::NAN; 3], [f32::NAN; 3]);
        let fill = if nan_fill { nan } else { B::ZERO };
        let mut boxes: Vec<B> = self.m.boxes.iter().map(|b| b.unwrap_or(fill)).collect();
        for (id, b) in moves.iter().take(MAX_MOVES) {
            let bx = self.make_box(b);
            boxes[usize::from(*id) % CAP] = bx;
        }
        match len {
            LenIn::Full | LenIn::Full2 | LenIn::Full3 => {}
            LenIn::Short(k) => boxes.truncate(usize::from(k) % CAP),
            LenIn::Long(k) => boxes.extend(core::iter::repeat_n(nan, usize::from(k % 4))),
        }
        // Every stored id in order: a box that may be out of range can stop
        // the check, a box that must be refused does; then the length.
        let mut allowed: Vec<Result<(), Error>> = Vec::new();
        let mut stopped = false;
        let mut seen = 0;
        for (i, b) in boxes.iter().enumerate().take(CAP) {
            if self.m.boxes[i].is_none() {
                continue;
            }
            seen += 1;
            let e = if self.m.unbounded[i] {
                expect_unbounded(b)
            } else {
                expect_bounded(b, self.m.c0, self.factor())
            };
            match e {
                Expect::Ok => {}
                Expect::OkOrOutOfRange => allowed.push(Err(Error::OutOfRange)),
                Expect::Refused(v) => {
                    allowed.extend(v.into_iter().map(Err));
                    stopped = true;
                    break;
                }
            }
        }
        if !stopped {
            let n = self.m.len();
            allowed.push(if seen == n {
                Ok(())
            } else {
                Err(Error::LengthMismatch {
                    expected: n,
                    got: seen,
                })
            });
        }
        let strategy = if incremental {
            UpdateStrategy::Incremental
        } else {
            UpdateStrategy::ClearAndReinsert
        };
        let r = self.g.update_all(&boxes, strategy);
        assert!(
            allowed.contains(&r),
            "update_all({strategy:?}, {} boxes) = {r:?}, allowed {allowed:?}, boxes {boxes:?}",
            boxes.len()
        );
        if r.is_ok() {
            for (stored, b) in self.m.boxes.iter_mut().zip(&boxes) {
                if stored.is_some() {
                    *stored = Some(*b);
                }
            }
        }
        r
    }

    fn op_query(&mut self, b: &BoxIn) -> Result<(), Error> {
        let q = self.make_box(b);
        let got = query(&mut self.g, &q);
        match expect_unbounded(&q) {
            Expect::Refused(v) => assert!(
                got.as_ref().is_err_and(|e| v.contains(e)),
                "query {q:?} = {got:?}, want one of {v:?}"
            ),
            _ => assert_eq!(got, Ok(self.m.hits(&q)), "query {q:?}"),
        }
        got.map(|_| ())
    }

    fn op_pairs(&mut self) {
        let mut a = Vec::new();
        let mut b = Vec::new();
        self.g.for_each_overlap(|x, y| a.push((x, y))).unwrap();
        self.g.for_each_overlap(|x, y| b.push((x, y))).unwrap();
        assert_eq!(a, b, "for_each_pair not deterministic");
        for i in 0..CAP {
            if let Some(q) = self.m.boxes[i] {
                assert_eq!(
                    query(&mut self.g, &q),
                    Ok(self.m.hits(&q)),
                    "query with stored box {i}"
                );
            }
        }
    }

    fn apply(&mut self, op: &Op) {
        let before: HhgStats = self.g.stats();
        let r = match op {
            Op::Insert(id, b) => self.op_insert(*id, b),
            Op::InsertUnbounded(id, b) => self.op_insert_unbounded(*id, b),
            Op::Update(id, b) => self.op_update(*id, b),
            Op::Remove(id) => self.op_remove(*id),
            Op::UpdateAll {
                incremental,
                moves,
                len,
                nan_fill,
            } => self.op_update_all(*incremental, moves, *len, *nan_fill),
            Op::Query(b) => self.op_query(b),
            Op::Clear => {
                self.g.clear();
                self.m.boxes.fill(None);
                self.m.unbounded.fill(false);
                self.m.grid_mode = false;
                self.m.c0 = None;
                Ok(())
            }
            Op::Pairs => {
                self.op_pairs();
                Ok(())
            }
            Op::SortRecords => {
                self.g.sort_records();
                Ok(())
            }
        };
        if let Err(e) = r {
            assert_eq!(
                self.g.stats(),
                before,
                "{op:?} refused with {e:?} but changed the stats"
            );
        }
        self.check(op);
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
    w2.check(&"new");
    w3.check(&"new");
    for (three, op) in input.ops.iter().take(MAX_OPS) {
        if *three {
            w3.apply(op);
        } else {
            w2.apply(op);
        }
    }
});
