//! Differential fuzzing of the three uniform spatial hashes against the
//! brute-force oracle, in 2D and 3D.
//!
//! The input decodes (via `arbitrary`) into a table length and a sequence of
//! operations, each applied to the 2D or the 3D world. A world holds a
//! `CellSortedHash`, a `BucketHash` with `K = 4` slots per bucket (so
//! `BucketFull` really happens), a `LinkedHash` and a `BruteForceNeighbors`,
//! all over `Vec` storage with the same small table (1 to 64 slots, so hash
//! collisions are the rule) and the same capacity.
//!
//! Every structure has its own model: the positions and radius of its last
//! successful build (or update, or clear). After every operation each
//! structure is validated and compared with a brute-force oracle built from
//! its model: length, radius, stored positions and the exact set of pairs
//! (ids and the bits of d²). Queries (`for_each_neighbor`, `for_each_within`,
//! `neighbor_lists`) are compared result for result. Builds given the same
//! input must agree between the strategies on success and on the error; a
//! failed build or update must leave the answers unchanged; `BucketFull`,
//! `OutOfRange` and `InvalidRadius` are checked against an independent
//! computation.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use spatium::uniform::{
    Bucket, BucketHash, BucketParticle, CELL_MARGIN, CellRecord, CellSortedHash, Head, LinkedHash,
    LinkedParticle, SortedParticle, TableSlot, UNIFORM_RANGE_CELLS,
};
use spatium::{BruteForceNeighbors, Error, NeighborSearch, Point, Validate, Vec2, Vec3};

/// Capacity of every structure (builds of up to `MAX_POINTS` are attempted,
/// so `CapacityExceeded` occurs).
const CAP: usize = 48;
/// Most particles an operation produces.
const MAX_POINTS: usize = 64;
/// Most operations per input.
const MAX_OPS: usize = 48;
/// Slots per bucket of the `BucketHash`.
const K: usize = 4;
/// Table lengths to choose from (all powers of two, all small).
const TABLE_LENS: [usize; 8] = [8, 16, 1, 2, 4, 8, 16, 64];
/// Grid range limit in cells.
const LIMIT: f64 = UNIFORM_RANGE_CELLS as f64;
/// Initial contents of the output buffers given to `neighbor_lists`.
const SENTINEL: u32 = 0xDEAD_BEEF;

type Sorted<P> = CellSortedHash<P, Vec<TableSlot>, Vec<SortedParticle<P>>, Vec<CellRecord<P>>>;
type Bucketed<P> = BucketHash<P, Vec<Bucket<K>>, Vec<BucketParticle<P>>, K>;
type Linked<P> = LinkedHash<P, Vec<Head>, Vec<LinkedParticle<P>>>;
type Brute<P> = BruteForceNeighbors<P, Vec<P>>;

// ---------------------------------------------------------------------------
// Input
// ---------------------------------------------------------------------------

/// A scale factor for lattice coordinates.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Scale {
    Unit,
    /// `2^(k mod 40)`: exact lattice arithmetic, from tiny to huge.
    Pow2(i8),
    /// Anything, NaN included.
    Raw(f32),
}

impl Scale {
    fn value(self) -> f32 {
        match self {
            Scale::Unit => 1.0,
            Scale::Pow2(k) => 2f32.powi(i32::from(k) % 40),
            Scale::Raw(x) => x,
        }
    }
}

/// A radius: mostly a multiple of a quarter of the scale, so lattice pairs at
/// exactly the radius are common (the test is strict).
#[derive(Arbitrary, Debug, Clone, Copy)]
enum RadiusIn {
    Lattice(u8),
    Raw(f32),
    Special(u8),
}

const SPECIAL_RADII: [f32; 16] = [
    0.0,
    -0.0,
    -1.0,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    1e-39,
    1e-23,
    1e-20,
    1e18,
    1e19,
    2e19,
    1e20,
    f32::MAX,
    f32::MIN_POSITIVE,
    1.0,
];

impl RadiusIn {
    fn value(self, scale: f32) -> f32 {
        match self {
            RadiusIn::Lattice(j) => (f32::from(j) + 1.0) * 0.25 * scale,
            RadiusIn::Raw(x) => x,
            RadiusIn::Special(k) => SPECIAL_RADII[usize::from(k) % SPECIAL_RADII.len()],
        }
    }
}

/// One coordinate that overrides a lattice coordinate.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Coord {
    /// `i / 4 · scale`.
    Lattice(i8),
    /// A lattice value moved by a few ulps.
    Nudge(i8, i8),
    /// Any bits: NaN, infinities, subnormals, huge.
    Raw(f32),
    /// One of `SPECIAL_COORDS`.
    Special(u8),
    /// Near the grid's range limit: `±(1 or 2) · 2¹⁴ cells · (1 + off · 2⁻²⁰)`.
    Edge(bool, bool, i8),
}

const SPECIAL_COORDS: [f32; 16] = [
    0.0,
    -0.0,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::MAX,
    -f32::MAX,
    f32::MIN_POSITIVE,
    1e-40,
    1e30,
    -1e30,
    16384.0,
    -16384.0,
    1e7,
    0.5,
    f32::EPSILON,
];

fn lattice(i: i8, scale: f32) -> f32 {
    f32::from(i) * 0.25 * scale
}

impl Coord {
    fn value(self, scale: f32, radius: f32) -> f32 {
        match self {
            Coord::Lattice(i) => lattice(i, scale),
            Coord::Nudge(i, n) => {
                let mut x = lattice(i, scale);
                for _ in 0..(n % 16).unsigned_abs() {
                    x = if n > 0 { x.next_up() } else { x.next_down() };
                }
                x
            }
            Coord::Raw(x) => x,
            Coord::Special(k) => SPECIAL_COORDS[usize::from(k) % SPECIAL_COORDS.len()],
            Coord::Edge(neg, double, off) => {
                let cell = radius * CELL_MARGIN;
                let l = UNIFORM_RANGE_CELLS as f32 * cell * if double { 2.0 } else { 1.0 };
                let v = l * (1.0 + f32::from(off) * (1.0 / (1 << 20) as f32));
                if neg { -v } else { v }
            }
        }
    }
}

/// Overrides one coordinate of one particle.
#[derive(Arbitrary, Debug, Clone, Copy)]
struct Exotic {
    index: u8,
    axis: u8,
    coord: Coord,
}

#[derive(Arbitrary, Debug)]
struct BuildIn {
    lattice: Vec<[i8; 3]>,
    exotic: Vec<Exotic>,
    scale: Scale,
    radius: RadiusIn,
}

#[derive(Arbitrary, Debug)]
enum MoveLen {
    Same,
    Same2,
    Same3,
    /// A different length (usually): `LengthMismatch` for the update.
    Resize(u8),
}

#[derive(Arbitrary, Debug)]
struct MoveIn {
    /// Particle (mod len) and its new lattice position or displacement.
    moves: Vec<(u8, [i8; 3])>,
    relative: bool,
    exotic: Vec<Exotic>,
    len: MoveLen,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum BufLen {
    Exact,
    Short(u8),
    Long(u8),
}

impl BufLen {
    fn len(self, needed: usize) -> usize {
        match self {
            BufLen::Exact => needed,
            BufLen::Short(k) if needed > 0 => needed - 1 - usize::from(k) % needed,
            BufLen::Short(_) => 0,
            BufLen::Long(k) => needed + usize::from(k % 4),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    Build(BuildIn),
    Move(MoveIn),
    Neighbor {
        id: u8,
        all: bool,
    },
    Within {
        at: [i8; 3],
        exotic: Option<(u8, Coord)>,
    },
    Pairs,
    Lists {
        offsets: BufLen,
        indices: BufLen,
    },
    Clear {
        mask: u8,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    table: u8,
    /// `(3D?, operation)`.
    ops: Vec<(bool, Op)>,
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn point<P: Point>(c: [f32; 3]) -> P {
    P::from_fn(|k| c[k])
}

fn coords<P: Point>(p: P) -> [f32; 3] {
    let mut c = [0.0; 3];
    for (k, x) in c.iter_mut().enumerate().take(P::DIM) {
        *x = p.coord(k);
    }
    c
}

fn same_point<P: Point>(a: P, b: P) -> bool {
    (0..P::DIM).all(|k| a.coord(k).to_bits() == b.coord(k).to_bits())
}

fn apply_exotic<P: Point>(pts: &mut [P], ex: &[Exotic], scale: f32, radius: f32) {
    if pts.is_empty() {
        return;
    }
    for e in ex.iter().take(2 * MAX_POINTS) {
        let i = usize::from(e.index) % pts.len();
        let mut c = coords(pts[i]);
        c[usize::from(e.axis) % P::DIM] = e.coord.value(scale, radius);
        pts[i] = point(c);
    }
}

/// A pair `(min id, max id, d² bits)`.
type Pair = (u32, u32, u32);

/// What `neighbor_lists` returned, with its two buffers.
type Lists = (Result<usize, Error>, Vec<u32>, Vec<u32>);

fn pairs_of<P: Point, N: NeighborSearch<P>>(name: &str, s: &N) -> Vec<Pair> {
    let n = s.len() as u32;
    let mut v = Vec::new();
    s.for_each_pair(|i, j, d2| {
        assert!(
            i != j && i < n && j < n,
            "{name}: bad pair ({i}, {j}) with len {n}"
        );
        v.push((i.min(j), i.max(j), d2.to_bits()));
    });
    v.sort_unstable();
    v
}

fn sorted_hits(mut v: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    v.sort_unstable();
    v
}

/// Committed state of one structure.
#[derive(Clone, Debug)]
struct Model<P> {
    positions: Vec<P>,
    radius: f32,
}

/// Bitwise equality of two models.
fn same_model<P: Point>(a: &Model<P>, b: &Model<P>) -> bool {
    a.radius.to_bits() == b.radius.to_bits()
        && a.positions.len() == b.positions.len()
        && a.positions
            .iter()
            .zip(&b.positions)
            .all(|(&p, &q)| same_point(p, q))
}

/// `true` if no reasonable grid can refuse this radius.
fn radius_clearly_valid(r: f32) -> bool {
    r.is_finite() && r > 1e-20 && r < 1e18
}

/// `true` if no grid can accept this radius.
fn radius_clearly_invalid(r: f32) -> bool {
    !(1e-24..=1e20).contains(&r)
}

/// Largest distance from the centre of `pts` in cells of `radius`, computed in
/// `f64`, and the tolerance of comparing it with the `f32` grid arithmetic.
fn span_in_cells<P: Point>(pts: &[P], radius: f32) -> (f64, f64) {
    let cell = f64::from(radius * CELL_MARGIN);
    let mut worst = 0.0f64;
    let mut big = 0.0f64;
    for k in 0..P::DIM {
        let lo = pts.iter().map(|p| p.coord(k)).fold(f32::INFINITY, f32::min);
        let hi = pts
            .iter()
            .map(|p| p.coord(k))
            .fold(f32::NEG_INFINITY, f32::max);
        let mid = 0.5 * f64::from(lo) + 0.5 * f64::from(hi);
        worst = worst.max((f64::from(hi) - mid) / cell);
        worst = worst.max((mid - f64::from(lo)) / cell);
        big = big.max(f64::from(lo).abs()).max(f64::from(hi).abs());
    }
    let tol = LIMIT * 1e-4 + 4.0 * big * f64::from(f32::EPSILON) / cell;
    (worst, tol)
}

/// Range check of positions against an existing grid (origin, cell size).
fn span_from<P: Point>(pts: &[P], origin: P, cell: f32) -> (f64, f64) {
    let cell = f64::from(cell);
    let mut worst = 0.0f64;
    let mut big = 0.0f64;
    for p in pts {
        for k in 0..P::DIM {
            let d = (f64::from(p.coord(k)) - f64::from(origin.coord(k))).abs() / cell;
            worst = worst.max(d);
            big = big
                .max(f64::from(p.coord(k)).abs())
                .max(f64::from(origin.coord(k)).abs());
        }
    }
    let tol = LIMIT * 1e-4 + 4.0 * big * f64::from(f32::EPSILON) / cell;
    (worst, tol)
}

// ---------------------------------------------------------------------------
// The world of one dimension
// ---------------------------------------------------------------------------

const S: usize = 0;
const B: usize = 1;
const L: usize = 2;
const F: usize = 3;
const NAMES: [&str; 4] = ["CellSortedHash", "BucketHash", "LinkedHash", "BruteForce"];

struct World<P: Point> {
    sorted: Sorted<P>,
    bucket: Bucketed<P>,
    linked: Linked<P>,
    brute: Brute<P>,
    models: [Model<P>; 4],
    /// Rebuilt from a model whenever expected answers are needed.
    oracle: Brute<P>,
    /// Scale of the last build op (for moves and query points).
    scale: f32,
    dim: usize,
}

/// Calls `$body` with `$s` bound to each structure (by shared reference) and
/// `$i` to its index.
macro_rules! each {
    ($w:expr, |$i:ident, $s:ident| $body:expr) => {{
        {
            let $i = S;
            let $s = &$w.sorted;
            $body
        }
        {
            let $i = B;
            let $s = &$w.bucket;
            $body
        }
        {
            let $i = L;
            let $s = &$w.linked;
            $body
        }
        {
            let $i = F;
            let $s = &$w.brute;
            $body
        }
    }};
}

impl<P: Point> World<P> {
    fn new(table_len: usize) -> Self {
        let empty = Model {
            positions: Vec::new(),
            radius: 0.0,
        };
        Self {
            sorted: CellSortedHash::new(
                vec![TableSlot::EMPTY; table_len],
                vec![SortedParticle::EMPTY; CAP],
                vec![CellRecord::EMPTY; CAP],
            ),
            bucket: BucketHash::new(
                vec![Bucket::EMPTY; table_len],
                vec![BucketParticle::EMPTY; CAP],
            ),
            linked: LinkedHash::new(
                vec![Head::EMPTY; table_len],
                vec![LinkedParticle::EMPTY; CAP],
            ),
            brute: BruteForceNeighbors::new(vec![P::ZERO; CAP]),
            models: [empty.clone(), empty.clone(), empty.clone(), empty],
            oracle: BruteForceNeighbors::new(vec![P::ZERO; MAX_POINTS]),
            scale: 1.0,
            dim: P::DIM,
        }
    }

    /// The oracle loaded with `model`, or `None` for an empty model.
    fn oracle(oracle: &mut Brute<P>, model: &Model<P>) -> Option<()> {
        if model.positions.is_empty() {
            return None;
        }
        oracle
            .build(&model.positions, model.radius)
            .expect("oracle rebuild of a committed state");
        Some(())
    }

    fn expected_pairs(&mut self, i: usize) -> Vec<Pair> {
        match Self::oracle(&mut self.oracle, &self.models[i]) {
            Some(()) => pairs_of("oracle", &self.oracle),
            None => Vec::new(),
        }
    }

    fn expected_neighbors(&mut self, i: usize, id: u32) -> Result<Vec<(u32, u32)>, Error> {
        match Self::oracle(&mut self.oracle, &self.models[i]) {
            Some(()) => {
                let mut v = Vec::new();
                self.oracle
                    .for_each_neighbor(id, |j, d2| v.push((j, d2.to_bits())))?;
                Ok(sorted_hits(v))
            }
            None => Err(Error::UnknownId { id }),
        }
    }

    fn expected_within(&mut self, i: usize, p: P) -> Result<Vec<(u32, u32)>, Error> {
        match Self::oracle(&mut self.oracle, &self.models[i]) {
            Some(()) => {
                let mut v = Vec::new();
                self.oracle
                    .for_each_within(p, |j, d2| v.push((j, d2.to_bits())))?;
                Ok(sorted_hits(v))
            }
            None if p.is_finite() => Ok(Vec::new()),
            None => Err(Error::NonFinite),
        }
    }

    /// Validates every structure and compares it with its model.
    fn check_all(&mut self, ctx: &dyn core::fmt::Debug) {
        let mut got: [Vec<Pair>; 4] = Default::default();
        each!(self, |i, s| {
            let name = NAMES[i];
            if let Err(c) = s.validate() {
                panic!(
                    "after {ctx:?}: {name} {}D: validate() failed: {c}",
                    self.dim
                );
            }
            let m = &self.models[i];
            assert_eq!(s.len(), m.positions.len(), "after {ctx:?}: {name}: len");
            assert_eq!(
                s.is_empty(),
                m.positions.is_empty(),
                "after {ctx:?}: {name}"
            );
            assert_eq!(
                s.radius().to_bits(),
                m.radius.to_bits(),
                "after {ctx:?}: {name}: radius {} vs model {}",
                s.radius(),
                m.radius
            );
            for (id, &p) in m.positions.iter().enumerate() {
                let q = s.position(id as u32);
                assert!(
                    q.is_some_and(|q| same_point(p, q)),
                    "after {ctx:?}: {name}: position({id}) = {q:?}, model {p:?}"
                );
            }
            assert!(s.position(m.positions.len() as u32).is_none());
            got[i] = pairs_of(NAMES[i], s);
        });
        // Models are usually identical: compute each distinct answer once.
        let mut wants: Vec<Vec<Pair>> = Vec::with_capacity(4);
        for (i, g) in got.iter().enumerate() {
            let want = match (0..i).find(|&j| same_model(&self.models[j], &self.models[i])) {
                Some(j) => wants[j].clone(),
                None => self.expected_pairs(i),
            };
            assert_eq!(
                *g, want,
                "after {ctx:?}: {} {}D: pairs differ from brute force (model {:?})",
                NAMES[i], self.dim, self.models[i]
            );
            wants.push(want);
        }
    }

    fn all_pairs(&self) -> [Vec<Pair>; 4] {
        let mut out: [Vec<Pair>; 4] = Default::default();
        each!(self, |i, s| out[i] = pairs_of(NAMES[i], s));
        out
    }

    /// Builds `pos` at `radius` into every structure (the `LinkedHash` too if
    /// `with_linked`) and checks that they agree.
    fn build(&mut self, pos: &[P], radius: f32, with_linked: bool) {
        let before = self.all_pairs();
        let rs = self.sorted.build(pos, radius);
        let rb = self.bucket.build(pos, radius);
        let rl = with_linked.then(|| self.linked.build(pos, radius));
        let rf = self.brute.build(pos, radius);
        let ctx = format!(
            "build of {} points, radius {radius:?}: sorted {rs:?}, bucket {rb:?}, \
             linked {rl:?}, brute {rf:?}",
            pos.len()
        );

        // The strategies agree, except that BucketHash may also be full.
        if let Some(rl) = rl {
            assert_eq!(rl, rs, "{ctx}: LinkedHash and CellSortedHash disagree");
        }
        match rb {
            Err(Error::BucketFull { bucket, capacity }) => {
                assert!(rs.is_ok(), "{ctx}: BucketFull for input others refuse");
                assert_eq!(capacity as usize, K, "{ctx}");
                // Same input, same table length: the sorted hash's grid is the
                // one the bucket hash computed.
                let g = self.sorted.grid();
                let count = pos
                    .iter()
                    .filter(|&&p| g.bucket(g.cell(p).unwrap()) == bucket)
                    .count();
                assert!(count > K, "{ctx}: BucketFull but bucket holds {count}");
            }
            _ => assert_eq!(rb, rs, "{ctx}: BucketHash and CellSortedHash disagree"),
        }
        if rs.is_ok() && rb.is_ok() {
            assert!(self.bucket.max_bucket_len() <= K, "{ctx}");
        }

        // Brute force has no grid: it never says OutOfRange.
        if pos.len() > CAP {
            assert_eq!(rs, Err(Error::CapacityExceeded { capacity: CAP }), "{ctx}");
            assert!(
                rf == Err(Error::CapacityExceeded { capacity: CAP })
                    || rf == Err(Error::InvalidRadius),
                "{ctx}: brute force"
            );
        } else {
            if rs == Err(Error::OutOfRange) {
                assert!(rf.is_ok(), "{ctx}: brute force refuses in-grid input");
            } else {
                assert_eq!(rs, rf, "{ctx}: hashes and brute force disagree");
            }
            // Independent plausibility of the radius and range verdicts.
            if rs == Err(Error::InvalidRadius) {
                assert!(!radius_clearly_valid(radius), "{ctx}: radius refused");
            }
            if rs.is_ok() {
                assert!(!radius_clearly_invalid(radius), "{ctx}: radius accepted");
            }
            if (rs.is_ok() || rs == Err(Error::OutOfRange)) && !pos.is_empty() {
                let (span, tol) = span_in_cells(pos, radius);
                if rs.is_ok() {
                    assert!(span < LIMIT + tol, "{ctx}: accepted {span} cells");
                } else {
                    assert!(span > LIMIT - tol, "{ctx}: refused only {span} cells");
                }
            }
        }

        // Commit successes to the models; failures must change nothing.
        let results = [rs, rb, rl.unwrap_or(Err(Error::NonFinite)), rf];
        let after = self.all_pairs();
        for i in 0..4 {
            if i == L && !with_linked {
                assert_eq!(after[i], before[i], "{ctx}: LinkedHash changed");
                continue;
            }
            match results[i] {
                Ok(()) => {
                    self.models[i] = Model {
                        positions: pos.to_vec(),
                        radius,
                    }
                }
                Err(_) => assert_eq!(
                    after[i], before[i],
                    "{ctx}: failed build changed {}",
                    NAMES[i]
                ),
            }
        }
    }

    fn op_build(&mut self, b: &BuildIn) {
        let scale = b.scale.value();
        let radius = b.radius.value(scale);
        let mut pos: Vec<P> = b
            .lattice
            .iter()
            .take(MAX_POINTS)
            .map(|c| {
                point([
                    lattice(c[0], scale),
                    lattice(c[1], scale),
                    lattice(c[2], scale),
                ])
            })
            .collect();
        apply_exotic(&mut pos, &b.exotic, scale, radius);
        self.scale = scale;
        self.build(&pos, radius, true);
    }

    fn op_move(&mut self, m: &MoveIn) {
        let model = self.models[L].clone();
        let n = model.positions.len();
        let scale = self.scale;
        let mut new = model.positions.clone();
        if n > 0 {
            for &(idx, c) in m.moves.iter().take(MAX_POINTS) {
                let i = usize::from(idx) % n;
                let d = [
                    lattice(c[0], scale),
                    lattice(c[1], scale),
                    lattice(c[2], scale),
                ];
                let mut p = if m.relative { coords(new[i]) } else { [0.0; 3] };
                for k in 0..3 {
                    p[k] += d[k];
                }
                new[i] = point(p);
            }
        }
        apply_exotic(&mut new, &m.exotic, scale, model.radius);
        if let MoveLen::Resize(k) = m.len {
            new.resize(usize::from(k) % (MAX_POINTS + 1), P::ZERO);
        }

        // What the update must do, from the grid's public API.
        let grid = *self.linked.grid();
        let expected = if new.len() != n {
            Err(Error::LengthMismatch {
                expected: n,
                got: new.len(),
            })
        } else {
            new.iter()
                .try_for_each(|&p| grid.cell(p).map(|_| ()))
                .map(|()| {
                    model
                        .positions
                        .iter()
                        .zip(&new)
                        .filter(|&(&a, &b)| grid.cell(a).unwrap() != grid.cell(b).unwrap())
                        .count()
                })
        };
        let before = pairs_of(NAMES[L], &self.linked);
        let r = self.linked.update(&new);
        let ctx = format!("update of {} points: {r:?}", new.len());
        assert_eq!(r, expected, "{ctx}: LinkedHash::update");
        match r {
            Ok(_) => {
                if n > 0 {
                    let (span, tol) = span_from(&new, grid.origin(), grid.cell_size());
                    assert!(span < LIMIT + tol, "{ctx}: accepted {span} cells");
                }
                self.models[L].positions = new.clone();
            }
            Err(_) => assert_eq!(
                pairs_of(NAMES[L], &self.linked),
                before,
                "{ctx}: failed update changed LinkedHash"
            ),
        }
        // The others rebuild.
        self.build(&new, model.radius, false);
    }

    fn op_neighbor(&mut self, id: u8, all: bool) {
        let max = self.models.iter().map(|m| m.positions.len()).max().unwrap();
        let id = u32::from(id) % (max as u32 + 2);
        let ids: Vec<u32> = if all {
            (0..max as u32 + 1).chain([id]).collect()
        } else {
            vec![id]
        };
        for id in ids {
            let mut got: [Result<Vec<(u32, u32)>, Error>; 4] =
                core::array::from_fn(|_| Ok(Vec::new()));
            each!(self, |i, s| {
                let mut v = Vec::new();
                got[i] = s
                    .for_each_neighbor(id, |j, d2| v.push((j, d2.to_bits())))
                    .map(|()| sorted_hits(v));
            });
            for (i, g) in got.iter().enumerate() {
                let want = self.expected_neighbors(i, id);
                assert_eq!(
                    *g, want,
                    "{} {}D: for_each_neighbor({id})",
                    NAMES[i], self.dim
                );
            }
        }
    }

    fn op_within(&mut self, at: [i8; 3], exotic: Option<(u8, Coord)>) {
        let s = self.scale;
        let mut c = [lattice(at[0], s), lattice(at[1], s), lattice(at[2], s)];
        if let Some((axis, coord)) = exotic {
            c[usize::from(axis) % P::DIM] = coord.value(s, self.models[L].radius);
        }
        let p: P = point(c);
        let mut got: [Result<Vec<(u32, u32)>, Error>; 4] = core::array::from_fn(|_| Ok(Vec::new()));
        each!(self, |i, s| {
            let mut v = Vec::new();
            got[i] = s
                .for_each_within(p, |j, d2| v.push((j, d2.to_bits())))
                .map(|()| sorted_hits(v));
        });
        for (i, g) in got.iter().enumerate() {
            let want = self.expected_within(i, p);
            assert_eq!(
                *g, want,
                "{} {}D: for_each_within({p:?})",
                NAMES[i], self.dim
            );
        }
    }

    fn op_pairs(&mut self) {
        // The order is unspecified but deterministic.
        each!(self, |i, s| {
            let mut a = Vec::new();
            let mut b = Vec::new();
            s.for_each_pair(|x, y, d| a.push((x, y, d.to_bits())));
            s.for_each_pair(|x, y, d| b.push((x, y, d.to_bits())));
            assert_eq!(a, b, "{}: for_each_pair not deterministic", NAMES[i]);
        });
    }

    fn op_lists(&mut self, off: BufLen, idx: BufLen) {
        let mut got: [Lists; 4] = core::array::from_fn(|_| (Ok(0), Vec::new(), Vec::new()));
        let mut lens = [(0usize, 0usize); 4];
        for (i, l) in lens.iter_mut().enumerate() {
            let n = self.models[i].positions.len();
            let total = 2 * self.expected_pairs(i).len();
            *l = (off.len(n + 1), idx.len(total));
        }
        each!(self, |i, s| {
            let mut offsets = vec![SENTINEL; lens[i].0];
            let mut indices = vec![SENTINEL; lens[i].1];
            let r = s.neighbor_lists(&mut offsets, &mut indices);
            got[i] = (r, offsets, indices);
        });
        for (i, (r, offsets, indices)) in got.iter().enumerate() {
            let name = NAMES[i];
            let n = self.models[i].positions.len();
            let pairs = self.expected_pairs(i);
            let total = 2 * pairs.len();
            let want = if offsets.len() < n + 1 {
                Err(Error::BufferTooSmall {
                    needed: n + 1,
                    available: offsets.len(),
                })
            } else if indices.len() < total {
                Err(Error::BufferTooSmall {
                    needed: total,
                    available: indices.len(),
                })
            } else {
                Ok(total)
            };
            assert_eq!(*r, want, "{name}: neighbor_lists");
            // On error the buffers' contents are unspecified; on success
            // only `indices[..total]` and `offsets[..=n]` are meaningful.
            if r.is_err() {
                continue;
            }
            assert_eq!(offsets[0], 0, "{name}: offsets[0]");
            assert_eq!(offsets[n] as usize, total, "{name}: offsets[n]");
            let mut rows = vec![Vec::new(); n];
            for &(a, b, _) in &pairs {
                rows[a as usize].push(b);
                rows[b as usize].push(a);
            }
            for (k, row) in rows.iter_mut().enumerate() {
                let (lo, hi) = (offsets[k] as usize, offsets[k + 1] as usize);
                assert!(lo <= hi && hi <= total, "{name}: offsets not monotone");
                let mut got_row = indices[lo..hi].to_vec();
                got_row.sort_unstable();
                row.sort_unstable();
                assert_eq!(got_row, *row, "{name}: neighbour list of {k}");
            }
        }
    }

    fn op_clear(&mut self, mask: u8) {
        if mask & 1 != 0 {
            self.sorted.clear();
            self.models[S].positions.clear();
        }
        if mask & 2 != 0 {
            self.bucket.clear();
            self.models[B].positions.clear();
        }
        if mask & 4 != 0 {
            self.linked.clear();
            self.models[L].positions.clear();
        }
        if mask & 8 != 0 && self.models[F].radius > 0.0 {
            self.brute
                .build(&[], self.models[F].radius)
                .expect("brute force: empty build");
            self.models[F].positions.clear();
        }
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Build(b) => self.op_build(b),
            Op::Move(m) => self.op_move(m),
            Op::Neighbor { id, all } => self.op_neighbor(*id, *all),
            Op::Within { at, exotic } => self.op_within(*at, *exotic),
            Op::Pairs => self.op_pairs(),
            Op::Lists { offsets, indices } => self.op_lists(*offsets, *indices),
            Op::Clear { mask } => self.op_clear(*mask),
        }
        self.check_all(op);
    }
}

fuzz_target!(|input: Input| {
    let table_len = TABLE_LENS[usize::from(input.table) % TABLE_LENS.len()];
    let mut w2 = World::<Vec2>::new(table_len);
    let mut w3 = World::<Vec3>::new(table_len);
    for (three, op) in input.ops.iter().take(MAX_OPS) {
        if *three {
            w3.apply(op);
        } else {
            w2.apply(op);
        }
    }
});
