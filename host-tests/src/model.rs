//! One operation model per trait, shared by the property tests and the fuzz
//! targets: [`BroadOp`] / [`BroadModel`] over any [`BroadPhase`], and
//! [`SearchOp`] / [`SearchModel`] over any [`NeighborSearch`].
//!
//! A model is the trait's contract written as an oracle: a `Vec<Option<B>>`
//! (boxes) or a `Vec<P>` plus radius (particles), answered by brute force with
//! an independent overlap test ([`spatium_host::boxes::overlap`]) and the
//! documented distance ([`Point::distance_squared`], strict `d² < r²`).
//! [`BroadModel::apply`] / [`SearchModel::apply`] run one operation on the
//! structure and on the model, judge the structure's result, and then
//! compare everything observable ([`BroadModel::check`] /
//! [`SearchModel::check`]). Every failure is an `Err(String)` naming the
//! operation, so proptest (`TestCaseError::fail`) and libFuzzer (`panic!`)
//! report it the same way.
//!
//! # What is predicted exactly, and what is allowed
//!
//! Trait errors are predicted exactly: [`Error::IdOutOfRange`],
//! [`Error::DuplicateId`], [`Error::UnknownId`], [`Error::NonFinite`],
//! [`Error::InvertedBox`], [`Error::InvalidRadius`] (for a radius that is
//! not finite and positive), [`Error::CapacityExceeded`] (for more particles
//! than the search's capacity) and [`Error::BufferTooSmall`] (with the exact
//! length needed). Where the model predicts success, a structure may refuse
//! with a structure-specific error ([`is_structure_specific`]: a coordinate
//! beyond its cell arithmetic, a full pool, arena, bucket or scratch buffer,
//! a radius its cells cannot represent); then nothing may change, which the
//! check after the operation verifies (the model is left as it was).
//!
//! # Which error wins (error precedence)
//!
//! When an operation has several faults, the model expects, matching what
//! every structure of the run-time registry does:
//!
//! * `insert(id, b)`: `IdOutOfRange`, then the box error (`NonFinite` before
//!   `InvertedBox`, as [`BoundingBox::check`]), then `DuplicateId`, then
//!   structure-specific errors (every kind: the shared id table's
//!   `vacant_for` puts the box check between the two id checks).
//! * `update(id, b)`: `IdOutOfRange`, `UnknownId`, the box error, then
//!   structure-specific errors.
//! * `update_many(list)`: the first element with a fault, in list order,
//!   each element checked as `update`; nothing changes. A structure-specific
//!   error applies a prefix of the list (the model finds which one).
//! * `remove(id)`: `IdOutOfRange`, then `UnknownId`.
//! * `query(b)`: the box error as [`BoundingBox::check`]. **Exception (the
//!   kinds disagree):** the hierarchical hash grid takes query boxes with
//!   infinite extents (`-∞` below, `+∞` above) and checks axis by axis, so
//!   for such a box either `NonFinite` or the exact answer is accepted, and
//!   for a box with faults on several axes either the `check()` error or
//!   the first axis's error.
//! * `build(points, r)`: `InvalidRadius` (a radius that is not finite and
//!   positive; one whose square or inverse is not a normal float may be
//!   refused too), then `CapacityExceeded` (too many points), then
//!   `NonFinite`, then structure-specific errors (every kind; the uniform
//!   hashes through `Grid::fit`). **Exception (the kinds disagree):**
//!   hierarchical hashing checks the points one by one, so a finite point
//!   beyond its cells before the first non-finite one gives `OutOfRange`
//!   instead of `NonFinite` (accepted).
//! * `neighbor_lists(offsets, indices)`: a short `offsets` first
//!   (`needed = len + 1`), then a short `indices` (`needed` = twice the
//!   pairs).

use proptest::prelude::*;
use spatium::{
    BoundingBox, BroadPhase, Error, NeighborSearch, Point, Ray, RayCast, RayHit, Validate,
};
use spatium_host::boxes::{TestBox, corners, dim, overlap, same, same_opt};

use crate::props::{Lattice, lattice, lattice_corners, pow2};

/// Ids the generators draw from: `0..IDS` (and sometimes `u32::MAX`). A
/// structure of capacity below `IDS` sees out-of-range ids too.
pub const IDS: u32 = 48;

/// `Err(format!(..))` unless `cond`.
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

/// Whether `e` is an error a structure may give where the trait contract
/// predicts success: a coordinate or radius beyond its cell arithmetic
/// (`OutOfRange`, `InvalidRadius`), a full pool, arena, record or scratch
/// buffer (`CapacityExceeded`), a full bucket (`BucketFull`).
pub fn is_structure_specific(e: &Error) -> bool {
    matches!(
        e,
        Error::OutOfRange | Error::CapacityExceeded { .. } | Error::BucketFull { .. }
    )
}

/// Result of the op, for callers layering structure-specific checks.
pub type Outcome = Result<(), Error>;

/// The results an operation may give.
#[derive(Clone, Debug)]
struct Expect {
    /// Exactly these results.
    exact: Vec<Outcome>,
    /// Also any structure-specific error (only where success is predicted).
    specific: bool,
}

impl Expect {
    fn ok() -> Self {
        Self {
            exact: vec![Ok(())],
            specific: true,
        }
    }
    fn err(e: Error) -> Self {
        Self {
            exact: vec![Err(e)],
            specific: false,
        }
    }
    fn judge(&self, r: &Outcome, what: &dyn core::fmt::Debug) -> Result<(), String> {
        let fine = self.exact.contains(r)
            || (self.specific && r.as_ref().err().is_some_and(is_structure_specific));
        ensure!(
            fine,
            "{what:?} gave {r:?}, expected one of {:?}",
            self.exact
        );
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Boxes
// ---------------------------------------------------------------------------

/// Finite `(lo, hi)` pairs far from the lattice: huge coordinates (out of
/// range for small cells), edges that overflow, negative zero, subnormals,
/// tiny edges.
pub const EXOTIC: [(f32, f32); 14] = [
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

/// A fault put into a lattice box. `axis` is taken modulo the dimension
/// except where said.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    /// NaN on one corner of one axis: `NonFinite`.
    Nan {
        /// The axis.
        axis: u8,
        /// On the upper corner.
        hi: bool,
    },
    /// `max < min` on one axis: `InvertedBox`.
    Inverted {
        /// The axis.
        axis: u8,
    },
    /// `-∞` below and/or `+∞` above (neither flag: both) on one axis
    /// (`axis ≥ 3`: every axis): `NonFinite`, but a well-ordered unbounded
    /// box (the hierarchical hash grid's queries take it).
    Infinite {
        /// The axis (`≥ 3`: all).
        axis: u8,
        /// `-∞` below.
        below: bool,
        /// `+∞` above.
        above: bool,
    },
    /// `+∞` below or `-∞` above: `NonFinite` for every reading.
    WrongInfinite {
        /// The axis.
        axis: u8,
        /// On the upper corner.
        hi: bool,
    },
    /// One of [`EXOTIC`] on one axis (`axis ≥ 3`: every axis): valid boxes
    /// a structure may refuse with `OutOfRange`.
    Exotic {
        /// The axis (`≥ 3`: all).
        axis: u8,
        /// Index into [`EXOTIC`] (modulo its length).
        which: u8,
    },
    /// Raw bits for both corners (fuzzing: NaN payloads, subnormals, -0.0).
    Bits {
        /// Lower corner bits.
        lo: [u32; 3],
        /// Upper corner bits.
        hi: [u32; 3],
    },
}

/// How an operation's box is made; resolved against the model's stored
/// boxes when applied ([`BroadModel::resolve`]), so copies and touching
/// boxes refer to what is stored then.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BoxSpec<B> {
    /// This box, as is (deterministic tests).
    Exact(B),
    /// A dyadic lattice box (coincides and touches exactly).
    Lattice(Lattice),
    /// A bitwise copy of the box stored under this id (the unit box if
    /// none).
    CopyOf(u32),
    /// A box of `edge`'s edges whose lower corner is the stored box `of`'s,
    /// moved to `of`'s upper face on `axis`: it touches `of` exactly (the
    /// lattice box `edge` if `of` is not stored).
    Touching {
        /// The stored box touched.
        of: u32,
        /// The axis of the shared face.
        axis: u8,
        /// Edges (its position is ignored).
        edge: Lattice,
    },
    /// A lattice box with a fault.
    Faulty(Lattice, Fault),
}

fn axis_of<B: BoundingBox>(a: u8) -> usize {
    usize::from(a) % dim::<B>()
}

fn axes_of<B: BoundingBox>(a: u8) -> core::ops::Range<usize> {
    if usize::from(a) >= 3 {
        0..dim::<B>()
    } else {
        let k = axis_of::<B>(a);
        k..k + 1
    }
}

/// The corners of `spec` (no stored boxes to refer to: copies and touching
/// boxes fall back as documented).
fn fault_corners<B: BoundingBox>(l: &Lattice, fault: &Fault) -> ([f32; 3], [f32; 3]) {
    let step = 0.25 * pow2(l.se);
    let (mut lo, mut hi) = lattice_corners(l);
    match *fault {
        Fault::Nan { axis, hi: h } => {
            let k = axis_of::<B>(axis);
            if h {
                hi[k] = f32::NAN;
            } else {
                lo[k] = f32::NAN;
            }
        }
        Fault::Inverted { axis } => {
            let k = axis_of::<B>(axis);
            let mut v = lo[k] - (1.0 + f32::from(l.edge[k])) * step;
            if v >= lo[k] {
                v = lo[k].next_down();
            }
            hi[k] = v;
        }
        Fault::Infinite { axis, below, above } => {
            for k in axes_of::<B>(axis) {
                if below || !above {
                    lo[k] = f32::NEG_INFINITY;
                }
                if above || !below {
                    hi[k] = f32::INFINITY;
                }
            }
        }
        Fault::WrongInfinite { axis, hi: h } => {
            let k = axis_of::<B>(axis);
            if h {
                hi[k] = f32::NEG_INFINITY;
            } else {
                lo[k] = f32::INFINITY;
            }
        }
        Fault::Exotic { axis, which } => {
            let (x, y) = EXOTIC[usize::from(which) % EXOTIC.len()];
            for k in axes_of::<B>(axis) {
                lo[k] = x;
                hi[k] = y;
            }
        }
        Fault::Bits { lo: l2, hi: h2 } => {
            lo = l2.map(f32::from_bits);
            hi = h2.map(f32::from_bits);
        }
    }
    (lo, hi)
}

/// The error a well-ordered-unbounded reading gives (the hierarchical hash
/// grid's query check): axis by axis, NaN or a wrong-signed infinity is
/// `NonFinite`, `min > max` is `InvertedBox`.
pub fn unbounded_error<B: BoundingBox>(b: &B) -> Option<Error> {
    let (lo, hi) = corners(b);
    for k in 0..dim::<B>() {
        let (l, h) = (lo[k], hi[k]);
        if l.is_nan() || h.is_nan() || l == f32::INFINITY || h == f32::NEG_INFINITY {
            return Some(Error::NonFinite);
        }
        if l > h {
            return Some(Error::InvertedBox);
        }
    }
    None
}

/// The trait's box error, written independently of `BoundingBox::check`:
/// `NonFinite` if any coordinate is NaN or infinite, else `InvertedBox` if
/// `min > max` on some axis.
pub fn box_error<B: BoundingBox>(b: &B) -> Option<Error> {
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

// ---------------------------------------------------------------------------
// Broad phase
// ---------------------------------------------------------------------------

/// One operation of the [`BroadPhase`] trait.
#[derive(Clone, Debug, PartialEq)]
pub enum BroadOp<B> {
    /// `insert(id, box)`.
    Insert(u32, BoxSpec<B>),
    /// `update(id, box)`.
    Update(u32, BoxSpec<B>),
    /// `update_many(list)` (boxes resolved before the call).
    UpdateMany(Vec<(u32, BoxSpec<B>)>),
    /// `remove(id)`.
    Remove(u32),
    /// `get(id)` (the check after every op reads every id anyway; this one
    /// reaches far ids).
    Get(u32),
    /// `clear()`.
    Clear,
    /// `for_each_overlap` twice (the same sequence both times: the pair
    /// order is deterministic), `par_for_each_overlap` on `Serial` and on
    /// two threads (the same sinks, the model's pairs), and every stored
    /// box as a query.
    Overlaps,
    /// `query(box)`, exact answer.
    Query(BoxSpec<B>),
    /// The filtered forms with groups drawn from the seed
    /// ([`seeded_groups`]): `for_each_overlap_filtered` against the model's
    /// pairs that interact, every stored box as a `query_filtered`, and a
    /// groups slice one short refused with [`Error::BufferTooSmall`].
    Filtered(u64),
    /// A ray cast ([`RayCast`]): origin at the lower corner of the first
    /// box, towards the upper corner of the second; the byte picks a
    /// segment, an unbounded ray, an axis-parallel unbounded ray (along a
    /// face of the first box: grazing) or a ray of `max_t = 0.5`. Judged
    /// by [`check_ray`](BroadModel::check_ray): first hit and all hits
    /// with the boxes and with a shortening narrow phase, an exact
    /// [`Error::BufferTooSmall`], the filtered forms; a ray from a
    /// non-finite box must be refused.
    Ray(BoxSpec<B>, BoxSpec<B>, u8),
}

/// The groups of ids `0..n` drawn from `seed` (member: one of four groups;
/// filter: any of the 16 subsets of them), and the groups of a query.
pub fn seeded_groups(
    seed: u64,
    n: usize,
) -> (Vec<spatium::filter::Groups>, spatium::filter::Groups) {
    let mix = |i: u64| {
        let mut z = seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let groups = |h: u64| spatium::filter::Groups::new(1 << (h % 4), ((h >> 8) & 0xF) as u32);
    let all = (0..n as u64).map(|i| groups(mix(i))).collect();
    (all, groups(mix(u64::MAX)))
}

/// The oracle of a [`BroadPhase`]: one optional box per id below the
/// capacity.
#[derive(Clone, Debug)]
pub struct BroadModel<B> {
    /// The box stored under each id (index = id).
    pub slots: Vec<Option<B>>,
    /// Compare the pairs after every operation (the default). Off
    /// ([`lazy`](Self::lazy)), the pairs are compared at
    /// [`BroadOp::Overlaps`] and at the end of [`run`](Self::run) only, so
    /// structures that rebuild lazily (the kd-tree, the hashes' tables)
    /// accumulate several changes between two detections.
    pub eager: bool,
}

impl<B: TestBox> BroadModel<B> {
    /// An empty model of a structure of `capacity` ids.
    pub fn new(capacity: usize) -> Self {
        Self {
            slots: vec![None; capacity],
            eager: true,
        }
    }

    /// The same model comparing the pairs only at [`BroadOp::Overlaps`] and
    /// at the end of a run.
    pub fn lazy(mut self) -> Self {
        self.eager = false;
        self
    }

    /// Ids below this are in range.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The stored box of `id`.
    pub fn get(&self, id: u32) -> Option<B> {
        self.slots.get(id as usize).copied().flatten()
    }

    /// Boxes stored.
    pub fn len(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    /// `true` if nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sorted, normalised overlapping pairs, by brute force.
    pub fn pairs(&self) -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        for i in 0..self.slots.len() {
            for j in i + 1..self.slots.len() {
                if let (Some(a), Some(b)) = (&self.slots[i], &self.slots[j])
                    && overlap(a, b)
                {
                    v.push((i as u32, j as u32));
                }
            }
        }
        v
    }

    /// Sorted ids of the stored boxes overlapping `q`.
    pub fn hits(&self, q: &B) -> Vec<u32> {
        (0..self.slots.len())
            .filter(|&i| self.slots[i].as_ref().is_some_and(|b| overlap(b, q)))
            .map(|i| i as u32)
            .collect()
    }

    /// The box of `spec` against the stored boxes.
    pub fn resolve(&self, spec: &BoxSpec<B>) -> B {
        let unit = B::raw([0.0; 3], [1.0; 3]);
        match spec {
            BoxSpec::Exact(b) => *b,
            BoxSpec::Lattice(l) => {
                let (lo, hi) = lattice_corners(l);
                B::raw(lo, hi)
            }
            BoxSpec::CopyOf(id) => self.get(*id).unwrap_or(unit),
            BoxSpec::Touching { of, axis, edge } => {
                let step = 0.25 * pow2(edge.se);
                let (mut lo, mut hi) = lattice_corners(edge);
                if let Some(b) = self.get(*of) {
                    let (blo, bhi) = corners(&b);
                    lo = blo;
                    let k = axis_of::<B>(*axis);
                    lo[k] = bhi[k];
                    for k in 0..3 {
                        hi[k] = lo[k] + f32::from(edge.edge[k]) * step;
                    }
                }
                B::raw(lo, hi)
            }
            BoxSpec::Faulty(l, f) => {
                let (lo, hi) = fault_corners::<B>(l, f);
                B::raw(lo, hi)
            }
        }
    }

    fn expect_insert(&self, id: u32, b: &B) -> Expect {
        if id as usize >= self.capacity() {
            return Expect::err(Error::IdOutOfRange { id });
        }
        let dup = self.get(id).is_some();
        match (box_error(b), dup) {
            (Some(e), _) => Expect::err(e),
            (None, true) => Expect::err(Error::DuplicateId { id }),
            (None, false) => Expect::ok(),
        }
    }

    fn update_fault(&self, id: u32, b: &B) -> Option<Error> {
        if id as usize >= self.capacity() {
            Some(Error::IdOutOfRange { id })
        } else if self.get(id).is_none() {
            Some(Error::UnknownId { id })
        } else {
            box_error(b)
        }
    }

    /// Applies `op` to `t` and to the model, judges `t`'s result, then
    /// [`check`](Self::check)s everything. Returns the op's result.
    ///
    /// # Errors
    /// A message naming the operation and what differs.
    pub fn apply<T: RayCast<B> + Validate + Send + Sync>(
        &mut self,
        t: &mut T,
        op: &BroadOp<B>,
    ) -> Result<Outcome, String> {
        let r = self.apply_op(t, op).map_err(|e| format!("{op:?}: {e}"))?;
        self.check(t).map_err(|e| format!("after {op:?}: {e}"))?;
        Ok(r)
    }

    fn apply_op<T: RayCast<B> + Validate + Send + Sync>(
        &mut self,
        t: &mut T,
        op: &BroadOp<B>,
    ) -> Result<Outcome, String> {
        Ok(match op {
            BroadOp::Insert(id, s) => {
                let b = self.resolve(s);
                let r = t.insert(*id, b);
                self.expect_insert(*id, &b).judge(&r, &("insert", id, b))?;
                if r.is_ok() {
                    self.slots[*id as usize] = Some(b);
                }
                r
            }
            BroadOp::Update(id, s) => {
                let b = self.resolve(s);
                let r = t.update(*id, b);
                let want = self
                    .update_fault(*id, &b)
                    .map_or_else(Expect::ok, Expect::err);
                want.judge(&r, &("update", id, b))?;
                if r.is_ok() {
                    self.slots[*id as usize] = Some(b);
                }
                r
            }
            BroadOp::UpdateMany(list) => {
                let list: Vec<(u32, B)> = list.iter().map(|(i, s)| (*i, self.resolve(s))).collect();
                let r = t.update_many(&list);
                let want = list
                    .iter()
                    .find_map(|(i, b)| self.update_fault(*i, b))
                    .map_or_else(Expect::ok, Expect::err);
                want.judge(&r, &("update_many", &list))?;
                match r {
                    Ok(()) => self.apply_updates(&list),
                    Err(e) if is_structure_specific(&e) => {
                        // A prefix was applied: find it.
                        let k = (0..=list.len())
                            .find(|&k| {
                                let mut m = self.clone();
                                m.apply_updates(&list[..k]);
                                (0..m.capacity() as u32).all(|id| same_opt(t.get(id), m.get(id)))
                            })
                            .ok_or("the stored boxes are no prefix of the updates")?;
                        ensure!(k < list.len(), "{e:?} after applying every update");
                        self.apply_updates(&list[..k]);
                    }
                    Err(_) => {}
                }
                r
            }
            BroadOp::Remove(id) => {
                let r = t.remove(*id);
                if *id as usize >= self.capacity() {
                    ensure!(
                        r == Err(Error::IdOutOfRange { id: *id }),
                        "remove gave {r:?}"
                    );
                } else if let Some(b) = self.get(*id) {
                    ensure!(
                        r.as_ref().is_ok_and(|got| same(got, &b)),
                        "remove gave {r:?}, stored {b:?}"
                    );
                    self.slots[*id as usize] = None;
                } else {
                    ensure!(r == Err(Error::UnknownId { id: *id }), "remove gave {r:?}");
                }
                r.map(|_| ())
            }
            BroadOp::Get(id) => {
                let (got, want) = (t.get(*id), self.get(*id));
                ensure!(same_opt(got, want), "get gave {got:?}, model {want:?}");
                Ok(())
            }
            BroadOp::Clear => {
                t.clear();
                self.slots.fill(None);
                Ok(())
            }
            BroadOp::Overlaps => {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                let ra = t.for_each_overlap(|x, y| a.push((x, y)));
                let rb = t.for_each_overlap(|x, y| b.push((x, y)));
                if ra.is_ok() && rb.is_ok() {
                    ensure!(a == b, "for_each_overlap is not deterministic");
                }
                self.check_overlaps(t)?;
                self.check_par_overlaps(t)?;
                for q in self.slots.iter().flatten() {
                    let _ = self.check_query(t, q)?;
                }
                Ok(())
            }
            BroadOp::Query(s) => {
                let q = self.resolve(s);
                self.check_query(t, &q)?
            }
            BroadOp::Filtered(seed) => {
                self.check_filtered(t, *seed)?;
                Ok(())
            }
            BroadOp::Ray(a, b, mode) => {
                let (a, b) = (self.resolve(a), self.resolve(b));
                self.check_ray(t, &a, &b, *mode)?
            }
        })
    }

    /// Every hit of `ray` against the stored boxes, sorted by `(t, id)`,
    /// with `narrow`'s answers judged by the documented rules (NaN or
    /// beyond `max_t` ignored, before the entry raised to it).
    pub fn ray_hits(
        &self,
        ray: &Ray<B::Point>,
        narrow: impl Fn(u32, f32) -> Option<f32>,
    ) -> Vec<RayHit> {
        let mut v = Vec::new();
        for (id, b) in self.slots.iter().enumerate() {
            let Some(b) = b else { continue };
            let Some(te) = ray.enter(b) else { continue };
            let Some(t) = narrow(id as u32, te) else {
                continue;
            };
            if t.is_nan() || t > ray.max_t() {
                continue;
            }
            v.push(RayHit {
                id: id as u32,
                t: t.max(te),
            });
        }
        v.sort_by(RayHit::order);
        v
    }

    /// The ray of [`BroadOp::Ray`] from `a`, `b` and `mode`, cast through
    /// `t` and judged against the stored boxes.
    ///
    /// # Errors
    /// A message if an answer or an error is wrong.
    pub fn check_ray<T: RayCast<B>>(
        &self,
        t: &mut T,
        a: &B,
        b: &B,
        mode: u8,
    ) -> Result<Outcome, String> {
        let o = a.min();
        let dir = b.max() - o;
        let dim = B::Point::DIM;
        let ray = match mode % 4 {
            0 => Ray::segment(o, b.max()),
            1 => Ray::new(o, dir, f32::INFINITY),
            2 => {
                let axis = usize::from(mode / 4) % dim;
                let sign = if mode & 0x80 == 0 { 1.0 } else { -1.0 };
                Ray::new(
                    o,
                    B::Point::from_fn(|k| if k == axis { sign } else { 0.0 }),
                    f32::INFINITY,
                )
            }
            _ => Ray::new(o, dir, 0.5),
        };
        let ray = match ray {
            Ok(r) => r,
            Err(e) => {
                let finite = o.is_finite() && b.max().is_finite() && dir.is_finite();
                let zero = (0..dim).all(|k| dir.coord(k) == 0.0);
                ensure!(
                    (!finite && e == Error::NonFinite)
                        || (zero
                            && e == (Error::InvalidConfig {
                                field: "ray direction"
                            })),
                    "ray from {o:?} to {:?} refused with {e:?}",
                    b.max()
                );
                return Ok(Err(e));
            }
        };
        let boxes = |_: u32, te: f32| Some(te);
        let shorten =
            |id: u32, te: f32| (!id.is_multiple_of(3)).then_some(te + 0.125 * (id % 5) as f32);
        let mut first = None;
        for (which, narrow) in [
            (0, &boxes as &dyn Fn(u32, f32) -> Option<f32>),
            (1, &shorten),
        ] {
            let want = self.ray_hits(&ray, narrow);
            let mut seen = vec![false; self.capacity()];
            let mut twice = None;
            let r = t.cast(&ray, |id, te| {
                match seen.get_mut(id as usize) {
                    Some(s) if !*s => *s = true,
                    _ => twice = Some(id),
                }
                narrow(id, te)
            });
            ensure!(
                twice.is_none(),
                "cast {ray:?}: id {twice:?} offered twice or unknown"
            );
            match r {
                Ok(hit) => ensure!(
                    hit == want.first().copied(),
                    "cast {ray:?} (narrow {which}): got {hit:?}, want {:?}",
                    want.first()
                ),
                Err(e) => {
                    ensure!(is_structure_specific(&e), "cast {ray:?} gave {e:?}");
                    return Ok(Err(e));
                }
            }
            let mut buf = vec![RayHit::default(); want.len()];
            let n = t
                .cast_all(&ray, narrow, &mut buf)
                .map_err(|e| format!("cast_all {ray:?}: {e:?}"))?;
            ensure!(
                buf[..n] == want[..],
                "cast_all {ray:?} (narrow {which}): got {:?}, want {want:?}",
                &buf[..n]
            );
            if let Some(short) = want.len().checked_sub(1) {
                let mut buf = vec![RayHit::default(); short];
                let r = t.cast_all(&ray, narrow, &mut buf);
                ensure!(
                    r == Err(Error::BufferTooSmall {
                        needed: want.len(),
                        available: short
                    }),
                    "cast_all {ray:?} into {short}: {r:?}"
                );
            }
            if which == 0 {
                first = want.first().copied();
            }
        }
        let got = t.first_box(&ray).map_err(|e| format!("first_box: {e:?}"))?;
        ensure!(got == first, "first_box {ray:?}: {got:?}, want {first:?}");
        let (groups, with) = seeded_groups(u64::from(mode), self.capacity());
        let want: Vec<RayHit> = self
            .ray_hits(&ray, boxes)
            .into_iter()
            .filter(|h| groups[h.id as usize].interacts(with))
            .collect();
        let got = t
            .cast_filtered(&ray, with, &groups, |_, te| Some(te))
            .map_err(|e| format!("cast_filtered: {e:?}"))?;
        ensure!(
            got == want.first().copied(),
            "cast_filtered {ray:?}: {got:?}, want {:?}",
            want.first()
        );
        let mut buf = vec![RayHit::default(); want.len()];
        let n = t
            .cast_all_filtered(&ray, with, &groups, |_, te| Some(te), &mut buf)
            .map_err(|e| format!("cast_all_filtered: {e:?}"))?;
        ensure!(buf[..n] == want[..], "cast_all_filtered {ray:?}");
        Ok(Ok(()))
    }

    fn apply_updates(&mut self, list: &[(u32, B)]) {
        for &(id, b) in list {
            self.slots[id as usize] = Some(b);
        }
    }

    /// The filtered forms with [`seeded_groups`] of `seed`: the pairs and
    /// every stored box's hits that interact, exactly; a short groups slice
    /// refused before anything is reported.
    ///
    /// # Errors
    /// A message if an answer or an error is wrong.
    pub fn check_filtered<T: BroadPhase<B>>(&self, t: &mut T, seed: u64) -> Result<(), String> {
        let cap = t.capacity();
        let (groups, with) = seeded_groups(seed, cap);
        let mut raw = Vec::new();
        match t.for_each_overlap_filtered(&groups, |a, b| raw.push((a, b))) {
            Ok(()) => {
                let want: Vec<(u32, u32)> = self
                    .pairs()
                    .into_iter()
                    .filter(|&(a, b)| groups[a as usize].interacts(groups[b as usize]))
                    .collect();
                check_pairs(&raw, &want).map_err(|e| format!("filtered pairs: {e}"))?;
            }
            Err(e) => ensure!(
                is_structure_specific(&e),
                "for_each_overlap_filtered gave {e:?}"
            ),
        }
        for q in self.slots.iter().flatten() {
            let mut got = Vec::new();
            match t.query_filtered(q, with, &groups, |id| got.push(id)) {
                Ok(()) => {
                    got.sort_unstable();
                    let want: Vec<u32> = self
                        .hits(q)
                        .into_iter()
                        .filter(|&id| groups[id as usize].interacts(with))
                        .collect();
                    ensure!(
                        got == want,
                        "query_filtered {q:?}: got {got:?}, want {want:?}"
                    );
                }
                Err(e) => ensure!(is_structure_specific(&e), "query_filtered gave {e:?}"),
            }
        }
        if cap > 0 {
            let short = &groups[..cap - 1];
            let mut called = false;
            let r = t.for_each_overlap_filtered(short, |_, _| called = true);
            let want = Err(Error::BufferTooSmall {
                needed: cap,
                available: cap - 1,
            });
            ensure!(
                r == want && !called,
                "a short groups slice gave {r:?} (called: {called})"
            );
            let r = t.query_filtered(&B::ZERO, with, short, |_| called = true);
            ensure!(
                r == want && !called,
                "query_filtered with a short slice gave {r:?}"
            );
        }
        Ok(())
    }

    /// Runs `query(q)` and judges it (see the module documentation for the
    /// accepted errors).
    ///
    /// # Errors
    /// A message if the answer or the error is wrong.
    pub fn check_query<T: BroadPhase<B>>(&self, t: &mut T, q: &B) -> Result<Outcome, String> {
        let mut got = Vec::new();
        let r = t.query(q, |id| got.push(id));
        got.sort_unstable();
        let exact = |got: &[u32]| -> Result<(), String> {
            let want = self.hits(q);
            ensure!(got == want, "query {q:?}: got {got:?}, want {want:?}");
            Ok(())
        };
        match (box_error(q), unbounded_error(q)) {
            (None, _) => match r {
                Ok(()) => exact(&got)?,
                Err(e) => ensure!(is_structure_specific(&e), "query {q:?} gave {e:?}"),
            },
            (Some(e), None) => match r {
                Ok(()) => exact(&got)?,
                Err(x) => ensure!(x == e, "query {q:?} gave {x:?}, want {e:?} or Ok"),
            },
            (Some(e), Some(u)) => {
                ensure!(
                    r == Err(e) || r == Err(u),
                    "query {q:?} gave {r:?}, want {e:?} (or {u:?})"
                )
            }
        }
        Ok(r)
    }

    /// Everything observable against the model: `validate()`, the capacity,
    /// `box_count`, `get` of every id (and of ids beyond the capacity) bit
    /// for bit, and (if [`eager`](Self::eager)) the overlapping pairs
    /// ([`check_overlaps`](Self::check_overlaps)).
    ///
    /// # Errors
    /// A message naming what differs.
    pub fn check<T: BroadPhase<B> + Validate>(&self, t: &mut T) -> Result<(), String> {
        t.validate().map_err(|c| format!("validate: {c}"))?;
        ensure!(
            t.capacity() == self.capacity(),
            "capacity {} (model {})",
            t.capacity(),
            self.capacity()
        );
        ensure!(
            t.box_count() == self.len(),
            "box_count {} (model {})",
            t.box_count(),
            self.len()
        );
        let far = [u32::MAX, u32::MAX - 1, self.capacity() as u32];
        for id in (0..self.capacity() as u32).chain(far) {
            let (got, want) = (t.get(id), self.get(id));
            ensure!(same_opt(got, want), "get({id}) = {got:?}, model {want:?}");
        }
        if self.eager {
            self.check_overlaps(t)?;
        }
        Ok(())
    }

    /// `for_each_overlap` against the model: each pair once, no self pair,
    /// equal to brute force (a structure-specific error, a full scratch
    /// buffer, is accepted).
    ///
    /// # Errors
    /// A message naming what differs.
    pub fn check_overlaps<T: BroadPhase<B>>(&self, t: &mut T) -> Result<(), String> {
        let mut raw = Vec::new();
        match t.for_each_overlap(|a, b| raw.push((a, b))) {
            Ok(()) => check_pairs(&raw, &self.pairs())?,
            Err(e) => ensure!(is_structure_specific(&e), "for_each_overlap gave {e:?}"),
        }
        Ok(())
    }

    /// `par_for_each_overlap` on the calling thread (`Serial`) and on two
    /// scoped threads: the same sinks (each one's pairs in the same order)
    /// on both, and their pairs the model's, each once (a structure-specific
    /// error, a full scratch buffer, is accepted).
    ///
    /// # Errors
    /// A message naming what differs.
    pub fn check_par_overlaps<T: BroadPhase<B> + Send + Sync>(
        &self,
        t: &mut T,
    ) -> Result<(), String> {
        type Sinks = Vec<Vec<(u32, u32)>>;
        let mut serial: Sinks = vec![Vec::new(); t.overlap_tasks()];
        let ra = t.par_for_each_overlap(&spatium::exec::Serial, &mut serial, |s, a, b| {
            s.push((a, b))
        });
        let mut two: Sinks = vec![Vec::new(); t.overlap_tasks()];
        let rb =
            t.par_for_each_overlap(&spatium_host::par::Threads::new(2), &mut two, |s, a, b| {
                s.push((a, b))
            });
        match (ra, rb) {
            (Ok(()), Ok(())) => {
                ensure!(
                    serial == two,
                    "par_for_each_overlap's sinks differ between Serial and two threads"
                );
                check_pairs(&serial.concat(), &self.pairs())
                    .map_err(|e| format!("par_for_each_overlap: {e}"))
            }
            (Err(e), _) | (_, Err(e)) => {
                ensure!(is_structure_specific(&e), "par_for_each_overlap gave {e:?}");
                Ok(())
            }
        }
    }

    /// Applies every op, stopping at the first failure (with its index).
    ///
    /// # Errors
    /// The first failure.
    pub fn run<T: RayCast<B> + Validate + Send + Sync>(
        &mut self,
        t: &mut T,
        ops: &[BroadOp<B>],
    ) -> Result<(), String> {
        self.check(t).map_err(|e| format!("before any op: {e}"))?;
        for (k, op) in ops.iter().enumerate() {
            let _ = self.apply(t, op).map_err(|e| format!("op {k}: {e}"))?;
        }
        self.check_overlaps(t)
            .map_err(|e| format!("at the end: {e}"))
    }
}

/// Checks raw reported pairs: no self pair, each unordered pair once, equal
/// to `want` (sorted, normalised).
///
/// # Errors
/// A message with the counts and up to five extra and missing pairs.
pub fn check_pairs(raw: &[(u32, u32)], want: &[(u32, u32)]) -> Result<(), String> {
    ensure!(raw.iter().all(|&(a, b)| a != b), "a self pair in {raw:?}");
    let mut got: Vec<(u32, u32)> = raw.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
    got.sort_unstable();
    let n = got.len();
    got.dedup();
    ensure!(got.len() == n, "{} duplicate pairs", n - got.len());
    if got != want {
        let lacks = |x: &[(u32, u32)], y: &[(u32, u32)]| -> Vec<(u32, u32)> {
            y.iter()
                .filter(|p| x.binary_search(p).is_err())
                .take(5)
                .copied()
                .collect()
        };
        return Err(format!(
            "{} pairs, want {}; extra {:?}, missing {:?}",
            got.len(),
            want.len(),
            lacks(want, &got),
            lacks(&got, want)
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Neighbour search
// ---------------------------------------------------------------------------

/// How a point of an operation is made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PointSpec<P> {
    /// This point, as is.
    Exact(P),
    /// The lower corner of a lattice box (dyadic: distances are exact).
    Lattice(Lattice),
    /// Point `of` (of the points made so far in a build, of the stored
    /// particles in a query; the origin if none) moved along `axis` by the
    /// radius times `2^-shift` (`shift = 0`: exactly at the radius, excluded
    /// by the strict test; `u8::MAX`: not moved, coincident).
    Near {
        /// The point moved.
        of: u32,
        /// The axis.
        axis: u8,
        /// The distance is `radius · 2^-shift` (`u8::MAX`: 0).
        shift: u8,
    },
    /// NaN or an infinity on one axis.
    NonFinite {
        /// The axis.
        axis: u8,
        /// 0: NaN, 1: +∞, else -∞.
        which: u8,
    },
    /// One of [`EXOTIC`]'s lower values on one axis (`≥ 3`: all): finite
    /// points a grid may refuse with `OutOfRange`.
    Exotic {
        /// The axis.
        axis: u8,
        /// Index into [`EXOTIC`].
        which: u8,
    },
    /// Raw bits.
    Bits([u32; 3]),
}

/// The radius of a build.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RadiusSpec {
    /// `2^e`.
    Pow2(i8),
    /// `k / 4`.
    Quarter(u8),
    /// `0`, `-1`, NaN, `+∞`, `-∞`, a subnormal, `1e30`, `f32::MAX`, `-0.0`
    /// (index modulo 9).
    Bad(u8),
    /// Raw bits.
    Bits(u32),
}

/// The radii of [`RadiusSpec::Bad`].
pub const BAD_RADII: [f32; 9] = [
    0.0,
    -1.0,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    1.0e-40,
    1.0e30,
    f32::MAX,
    -0.0,
];

impl RadiusSpec {
    /// The radius.
    pub fn value(self) -> f32 {
        match self {
            Self::Pow2(e) => pow2(e),
            Self::Quarter(k) => f32::from(k) * 0.25,
            Self::Bad(i) => BAD_RADII[usize::from(i) % BAD_RADII.len()],
            Self::Bits(b) => f32::from_bits(b),
        }
    }
}

/// A buffer length for `neighbor_lists`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BufLen {
    /// Exactly what is needed.
    Exact,
    /// `k` short of it (saturating at 0).
    Short(u8),
    /// `k` more.
    Long(u8),
}

impl BufLen {
    fn of(self, needed: usize) -> usize {
        match self {
            Self::Exact => needed,
            Self::Short(k) => needed.saturating_sub(usize::from(k).max(1)),
            Self::Long(k) => needed + usize::from(k),
        }
    }
}

/// One operation of the [`NeighborSearch`] trait.
#[derive(Clone, Debug, PartialEq)]
pub enum SearchOp<P> {
    /// `build(points, radius)`.
    Build(Vec<PointSpec<P>>, RadiusSpec),
    /// `for_each_neighbor(id)` (every stored id is checked after each op;
    /// this one reaches unknown ids).
    Neighbors(u32),
    /// `for_each_within(point)`.
    Within(PointSpec<P>),
    /// `neighbor_lists` with these buffer lengths.
    Lists(BufLen, BufLen),
    /// `position(id)`.
    Position(u32),
}

/// The oracle of a [`NeighborSearch`]: the positions and radius of the last
/// successful build.
#[derive(Clone, Debug)]
pub struct SearchModel<P> {
    /// Particles the structure holds at most.
    pub capacity: usize,
    /// Positions of the last successful build.
    pub points: Vec<P>,
    /// Its radius (0 before the first).
    pub radius: f32,
}

impl<P: Point> SearchModel<P> {
    /// An empty model of a search of `capacity` particles.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            points: Vec::new(),
            radius: 0.0,
        }
    }

    /// The point of `spec`; `Near` refers to `base` moved by `radius`.
    pub fn resolve(spec: &PointSpec<P>, base: &[P], radius: f32) -> P {
        match *spec {
            PointSpec::Exact(p) => p,
            PointSpec::Lattice(l) => {
                let (lo, _) = lattice_corners(&l);
                P::from_fn(|k| lo[k])
            }
            PointSpec::Near { of, axis, shift } => {
                let p = base.get(of as usize).copied().unwrap_or(P::ZERO);
                let by = if shift == u8::MAX {
                    0.0
                } else {
                    radius * 2f32.powi(-i32::from(shift % 8))
                };
                let a = usize::from(axis) % P::DIM;
                P::from_fn(|k| if k == a { p.coord(k) + by } else { p.coord(k) })
            }
            PointSpec::NonFinite { axis, which } => {
                let v = match which {
                    0 => f32::NAN,
                    1 => f32::INFINITY,
                    _ => f32::NEG_INFINITY,
                };
                let a = usize::from(axis) % P::DIM;
                P::from_fn(|k| if k == a { v } else { 0.5 })
            }
            PointSpec::Exotic { axis, which } => {
                let v = EXOTIC[usize::from(which) % EXOTIC.len()].0;
                P::from_fn(|k| {
                    if usize::from(axis) >= 3 || k == usize::from(axis) % P::DIM {
                        v
                    } else {
                        0.25
                    }
                })
            }
            PointSpec::Bits(b) => P::from_fn(|k| f32::from_bits(b[k])),
        }
    }

    /// The points of a build, `Near` referring to those made before it.
    pub fn resolve_all(specs: &[PointSpec<P>], radius: f32) -> Vec<P> {
        let mut out: Vec<P> = Vec::with_capacity(specs.len());
        for s in specs {
            let p = Self::resolve(s, &out, radius);
            out.push(p);
        }
        out
    }

    /// Sorted `(j, d²)` of the stored particles strictly within the radius
    /// of `p`, except `skip`.
    pub fn near(&self, p: P, skip: Option<u32>) -> Vec<(u32, u32)> {
        let r2 = self.radius * self.radius;
        (0..self.points.len() as u32)
            .filter(|&j| Some(j) != skip)
            .filter_map(|j| {
                let d2 = p.distance_squared(self.points[j as usize]);
                (d2 < r2).then_some((j, d2.to_bits()))
            })
            .collect()
    }

    /// Sorted, normalised pairs strictly within the radius.
    pub fn pairs(&self) -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        for (i, &p) in self.points.iter().enumerate() {
            for (j, _) in self.near(p, None) {
                if (i as u32) < j {
                    v.push((i as u32, j));
                }
            }
        }
        v
    }

    fn expect_build(&self, points: &[P], radius: f32) -> Expect {
        let bad_r = !(radius.is_finite() && radius > 0.0);
        let over = points.len() > self.capacity;
        // A finite positive radius whose square or inverse is not a normal
        // float: the cell arithmetic may refuse it, before anything else.
        let r2 = radius * radius;
        let representable = r2.is_normal() && (1.0 / radius).is_normal();
        let extreme = !bad_r && !representable;
        let mut e = self.expect_points(points, bad_r, over);
        if extreme {
            e.exact.push(Err(Error::InvalidRadius));
        }
        e
    }

    fn expect_points(&self, points: &[P], bad_r: bool, over: bool) -> Expect {
        let cap = Error::CapacityExceeded {
            capacity: self.capacity,
        };
        if bad_r {
            Expect::err(Error::InvalidRadius)
        } else if over {
            Expect::err(cap)
        } else if let Some(first) = points.iter().position(|p| !p.is_finite()) {
            // Hierarchical hashing checks point by point: a finite point
            // beyond its cells before the first non-finite one wins.
            let mut e = Expect::err(Error::NonFinite);
            if first > 0 {
                e.exact.push(Err(Error::OutOfRange));
            }
            e
        } else {
            let mut e = Expect::ok();
            // A finite positive radius the cell arithmetic cannot represent.
            e.exact.push(Err(Error::InvalidRadius));
            e
        }
    }

    /// Applies `op` to `t` and the model, judges the result, then
    /// [`check`](Self::check)s everything. Returns the op's result.
    ///
    /// # Errors
    /// A message naming the operation and what differs.
    pub fn apply<N: NeighborSearch<P> + Validate>(
        &mut self,
        t: &mut N,
        op: &SearchOp<P>,
    ) -> Result<Outcome, String> {
        let r = self.apply_op(t, op).map_err(|e| format!("{op:?}: {e}"))?;
        self.check(t).map_err(|e| format!("after {op:?}: {e}"))?;
        Ok(r)
    }

    fn apply_op<N: NeighborSearch<P> + Validate>(
        &mut self,
        t: &mut N,
        op: &SearchOp<P>,
    ) -> Result<Outcome, String> {
        Ok(match op {
            SearchOp::Build(specs, r) => {
                let radius = r.value();
                let points = Self::resolve_all(specs, radius);
                let got = t.build(&points, radius);
                self.expect_build(&points, radius)
                    .judge(&got, &("build", &points, radius))?;
                if got.is_ok() {
                    self.points = points;
                    self.radius = radius;
                }
                got
            }
            SearchOp::Neighbors(id) => self.check_neighbors(t, *id)?,
            SearchOp::Within(s) => {
                let p = Self::resolve(s, &self.points, self.radius);
                let mut got = Vec::new();
                let r = t.for_each_within(p, |j, d2| got.push((j, d2.to_bits())));
                if p.is_finite() {
                    ensure!(r.is_ok(), "within({p:?}) gave {r:?}");
                    got.sort_unstable();
                    let want = self.near(p, None);
                    ensure!(got == want, "within({p:?}): {got:?}, want {want:?}");
                } else {
                    ensure!(r == Err(Error::NonFinite), "within({p:?}) gave {r:?}");
                }
                r
            }
            SearchOp::Lists(o, i) => self.check_lists(t, *o, *i)?,
            SearchOp::Position(id) => {
                let got = t.position(*id);
                let want = self.points.get(*id as usize).copied();
                ensure!(
                    got.map(|p| bits(p)) == want.map(|p| bits(p)),
                    "position({id}) = {got:?}, model {want:?}"
                );
                Ok(())
            }
        })
    }

    fn check_neighbors<N: NeighborSearch<P>>(&self, t: &N, id: u32) -> Result<Outcome, String> {
        let mut got = Vec::new();
        let r = t.for_each_neighbor(id, |j, d2| got.push((j, d2.to_bits())));
        match self.points.get(id as usize) {
            None => ensure!(
                r == Err(Error::UnknownId { id }),
                "neighbours of {id}: {r:?}"
            ),
            Some(&p) => {
                ensure!(r.is_ok(), "neighbours of {id}: {r:?}");
                got.sort_unstable();
                let want = self.near(p, Some(id));
                ensure!(got == want, "neighbours of {id}: {got:?}, want {want:?}");
            }
        }
        Ok(r)
    }

    /// `neighbor_lists` with buffers of these lengths, judged exactly; then
    /// `spatial_neighbor_lists` with the same lengths, its row `k` judged as
    /// the list of the particle `spatial_order` puts at `k`.
    ///
    /// # Errors
    /// A message if a result or a list is wrong.
    pub fn check_lists<N: NeighborSearch<P>>(
        &self,
        t: &N,
        o: BufLen,
        i: BufLen,
    ) -> Result<Outcome, String> {
        let n = self.points.len();
        let identity: Vec<u32> = (0..n as u32).collect();
        let r = self.judge_lists("neighbor_lists", o, i, &identity, |of, ix| {
            t.neighbor_lists(of, ix)
        })?;
        let mut order = vec![u32::MAX; n];
        t.spatial_order(&mut order)
            .map_err(|e| format!("spatial_order: {e}"))?;
        let mut seen = vec![false; n];
        for &id in &order {
            ensure!(
                (id as usize) < n && !seen[id as usize],
                "spatial_order is not a permutation: {order:?}"
            );
            seen[id as usize] = true;
        }
        let s = self.judge_lists("spatial_neighbor_lists", o, i, &order, |of, ix| {
            t.spatial_neighbor_lists(of, ix)
        })?;
        ensure!(
            r == s,
            "neighbor_lists {r:?} but spatial_neighbor_lists {s:?}"
        );
        Ok(r)
    }

    /// One CSR call with buffers of these lengths: the result exact, and
    /// row `k` the sorted neighbours of particle `rows[k]`.
    fn judge_lists(
        &self,
        what: &str,
        o: BufLen,
        i: BufLen,
        rows: &[u32],
        call: impl FnOnce(&mut [u32], &mut [u32]) -> Result<usize, Error>,
    ) -> Result<Outcome, String> {
        let n = self.points.len();
        let pairs = self.pairs();
        let total = 2 * pairs.len();
        let (ol, il) = (o.of(n + 1), i.of(total));
        let mut offsets = vec![u32::MAX; ol];
        let mut indices = vec![u32::MAX; il];
        let r = call(&mut offsets, &mut indices);
        let want = if ol < n + 1 {
            Err(Error::BufferTooSmall {
                needed: n + 1,
                available: ol,
            })
        } else if il < total {
            Err(Error::BufferTooSmall {
                needed: total,
                available: il,
            })
        } else {
            Ok(total)
        };
        ensure!(r == want, "{what}({ol}, {il}) = {r:?}, want {want:?}");
        if r.is_ok() {
            ensure!(offsets[0] == 0, "{what}: offsets[0] = {}", offsets[0]);
            ensure!(
                offsets[n] as usize == total,
                "{what}: offsets[n] = {}",
                offsets[n]
            );
            for (k, &a) in rows.iter().enumerate() {
                let (s, e) = (offsets[k] as usize, offsets[k + 1] as usize);
                ensure!(s <= e && e <= total, "{what}: offsets {s}..{e}");
                let mut got = indices[s..e].to_vec();
                got.sort_unstable();
                let want: Vec<u32> = self
                    .near(self.points[a as usize], Some(a))
                    .into_iter()
                    .map(|(j, _)| j)
                    .collect();
                ensure!(
                    got == want,
                    "{what}: row {k} (particle {a}): {got:?}, want {want:?}"
                );
            }
        }
        Ok(r.map(|_| ()))
    }

    /// Everything observable against the model: `validate()`, `len`, the
    /// radius bits, every position bit for bit, the neighbours of every
    /// particle (with the bits of d²), `UnknownId` past the end, the pairs
    /// (each once, no self pair, d² bits, equal to brute force) and the CSR
    /// lists.
    ///
    /// # Errors
    /// A message naming what differs.
    pub fn check<N: NeighborSearch<P> + Validate>(&self, t: &N) -> Result<(), String> {
        t.validate().map_err(|c| format!("validate: {c}"))?;
        let n = self.points.len();
        ensure!(t.len() == n, "len {} (model {n})", t.len());
        ensure!(t.is_empty() == (n == 0), "is_empty");
        ensure!(
            t.radius().to_bits() == self.radius.to_bits(),
            "radius {} (model {})",
            t.radius(),
            self.radius
        );
        for id in 0..n as u32 + 2 {
            let (got, want) = (t.position(id), self.points.get(id as usize).copied());
            ensure!(
                got.map(|p| bits(p)) == want.map(|p| bits(p)),
                "position({id}) = {got:?}, model {want:?}"
            );
            let _ = self.check_neighbors(t, id)?;
        }
        let _ = self.check_neighbors(t, u32::MAX)?;
        let mut raw = Vec::new();
        let mut bad_d2 = None;
        t.for_each_pair(|i, j, d2| {
            raw.push((i, j));
            let (pi, pj) = (self.points.get(i as usize), self.points.get(j as usize));
            if let (Some(&a), Some(&b)) = (pi, pj)
                && a.distance_squared(b).to_bits() != d2.to_bits()
            {
                bad_d2 = Some((i, j, d2));
            }
        });
        ensure!(bad_d2.is_none(), "pair with wrong d²: {bad_d2:?}");
        check_pairs(&raw, &self.pairs())?;
        let _ = self.check_lists(t, BufLen::Exact, BufLen::Exact)?;
        // spatial_order: a permutation of the ids; a short buffer refused.
        let mut order = vec![u32::MAX; n + 1];
        t.spatial_order(&mut order)
            .map_err(|e| format!("spatial_order: {e:?}"))?;
        ensure!(order[n] == u32::MAX, "spatial_order wrote past len()");
        let mut seen = vec![false; n];
        for &i in &order[..n] {
            ensure!(
                (i as usize) < n && !core::mem::replace(&mut seen[i as usize], true),
                "spatial_order is not a permutation: {:?}",
                &order[..n]
            );
        }
        if n > 0 {
            let short = t.spatial_order(&mut order[..n - 1]);
            ensure!(
                short
                    == Err(Error::BufferTooSmall {
                        needed: n,
                        available: n - 1
                    }),
                "spatial_order into {} slots: {short:?}",
                n - 1
            );
        }
        Ok(())
    }

    /// Applies every op, stopping at the first failure (with its index).
    ///
    /// # Errors
    /// The first failure.
    pub fn run<N: NeighborSearch<P> + Validate>(
        &mut self,
        t: &mut N,
        ops: &[SearchOp<P>],
    ) -> Result<(), String> {
        self.check(t).map_err(|e| format!("before any op: {e}"))?;
        for (k, op) in ops.iter().enumerate() {
            let _ = self.apply(t, op).map_err(|e| format!("op {k}: {e}"))?;
        }
        Ok(())
    }
}

/// The coordinate bits of a point (tells `-0.0` from `0.0`, NaN payloads).
pub fn bits<P: Point>(p: P) -> [u32; 3] {
    let mut b = [0; 3];
    for (k, x) in b.iter_mut().enumerate().take(P::DIM) {
        *x = p.coord(k).to_bits();
    }
    b
}

// ---------------------------------------------------------------------------
// proptest strategies
// ---------------------------------------------------------------------------

fn id() -> impl Strategy<Value = u32> {
    prop_oneof![30 => 0..IDS, 1 => Just(u32::MAX)]
}

/// Faults: every kind, NaN / inverted / infinite / exotic.
pub fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        2 => (0u8..3, any::<bool>()).prop_map(|(axis, hi)| Fault::Nan { axis, hi }),
        2 => (0u8..3).prop_map(|axis| Fault::Inverted { axis }),
        2 => (0u8..4, any::<bool>(), any::<bool>())
            .prop_map(|(axis, below, above)| Fault::Infinite { axis, below, above }),
        1 => (0u8..3, any::<bool>()).prop_map(|(axis, hi)| Fault::WrongInfinite { axis, hi }),
        3 => (0u8..4, 0..EXOTIC.len() as u8).prop_map(|(axis, which)| Fault::Exotic { axis, which }),
        1 => (prop::array::uniform3(any::<u32>()), prop::array::uniform3(any::<u32>()))
            .prop_map(|(lo, hi)| Fault::Bits { lo, hi }),
    ]
}

/// Boxes: mostly lattice boxes, copies and touching boxes of stored ones
/// (so boxes coincide and touch exactly), one in eight with a fault.
pub fn box_spec<B: TestBox>() -> impl Strategy<Value = BoxSpec<B>> {
    prop_oneof![
        12 => lattice().prop_map(BoxSpec::Lattice),
        3 => (0..IDS).prop_map(BoxSpec::CopyOf),
        3 => (0..IDS, 0u8..3, lattice())
            .prop_map(|(of, axis, edge)| BoxSpec::Touching { of, axis, edge }),
        2 => (lattice(), fault()).prop_map(|(l, f)| BoxSpec::Faulty(l, f)),
    ]
}

/// Valid lattice-like boxes only (for prefills).
pub fn good_box_spec<B: TestBox>() -> impl Strategy<Value = BoxSpec<B>> {
    prop_oneof![
        4 => lattice().prop_map(BoxSpec::Lattice),
        1 => (0..IDS, 0u8..3, lattice())
            .prop_map(|(of, axis, edge)| BoxSpec::Touching { of, axis, edge }),
    ]
}

/// Broad-phase operations over ids `0..IDS` (and `u32::MAX`).
pub fn broad_op<B: TestBox>() -> impl Strategy<Value = BroadOp<B>> {
    prop_oneof![
        8 => (id(), box_spec()).prop_map(|(i, s)| BroadOp::Insert(i, s)),
        5 => (id(), box_spec()).prop_map(|(i, s)| BroadOp::Update(i, s)),
        2 => prop::collection::vec((id(), box_spec()), 0..8).prop_map(BroadOp::UpdateMany),
        3 => id().prop_map(BroadOp::Remove),
        1 => any::<u32>().prop_map(BroadOp::Get),
        1 => Just(BroadOp::Clear),
        1 => Just(BroadOp::Overlaps),
        1 => any::<u64>().prop_map(BroadOp::Filtered),
        2 => (box_spec(), box_spec(), any::<u8>()).prop_map(|(a, b, m)| BroadOp::Ray(a, b, m)),
        3 => box_spec().prop_map(BroadOp::Query),
    ]
}

/// A prefill of valid inserts on ids `0..` (`0..8` or `28..40` of them),
/// then `1..max_ops` random operations.
pub fn broad_ops<B: TestBox>(max_ops: usize) -> impl Strategy<Value = Vec<BroadOp<B>>> {
    let prefill = prop_oneof![
        prop::collection::vec(good_box_spec::<B>(), 0..8),
        prop::collection::vec(good_box_spec::<B>(), 28..40),
    ];
    (prefill, prop::collection::vec(broad_op::<B>(), 1..max_ops)).prop_map(|(pre, rest)| {
        pre.into_iter()
            .enumerate()
            .map(|(i, s)| BroadOp::Insert(i as u32, s))
            .chain(rest)
            .collect()
    })
}

/// Points: lattice points, points near others (at the radius exactly,
/// inside it, coincident), some non-finite or exotic.
pub fn point_spec<P: Point>() -> impl Strategy<Value = PointSpec<P>> {
    prop_oneof![
        10 => lattice().prop_map(PointSpec::Lattice),
        4 => (0u32..24, 0u8..3, prop_oneof![Just(0u8), 0u8..4, Just(u8::MAX)])
            .prop_map(|(of, axis, shift)| PointSpec::Near { of, axis, shift }),
        1 => (0u8..3, 0u8..3).prop_map(|(axis, which)| PointSpec::NonFinite { axis, which }),
        1 => (0u8..4, 0..EXOTIC.len() as u8).prop_map(|(axis, which)| PointSpec::Exotic { axis, which }),
    ]
}

/// Finite lattice points and points near them (the bulk of good builds).
pub fn good_point_spec<P: Point>() -> impl Strategy<Value = PointSpec<P>> {
    prop_oneof![
        5 => lattice().prop_map(PointSpec::Lattice),
        2 => (0u32..24, 0u8..3, prop_oneof![Just(0u8), 0u8..4, Just(u8::MAX)])
            .prop_map(|(of, axis, shift)| PointSpec::Near { of, axis, shift }),
    ]
}

/// Radii: powers of two and quarters, sometimes bad.
pub fn radius_spec() -> impl Strategy<Value = RadiusSpec> {
    prop_oneof![
        6 => (-4i8..=4).prop_map(RadiusSpec::Pow2),
        3 => (1u8..16).prop_map(RadiusSpec::Quarter),
        1 => any::<u8>().prop_map(RadiusSpec::Bad),
    ]
}

fn buf_len() -> impl Strategy<Value = BufLen> {
    prop_oneof![
        3 => Just(BufLen::Exact),
        2 => (0u8..4).prop_map(BufLen::Short),
        1 => (0u8..4).prop_map(BufLen::Long),
    ]
}

/// Neighbour-search operations; builds of `0..max_points` points, three in
/// four of them from [`good_point_spec`].
pub fn search_op<P: Point>(max_points: usize) -> impl Strategy<Value = SearchOp<P>> {
    prop_oneof![
        3 => (prop::collection::vec(good_point_spec::<P>(), 0..max_points), radius_spec())
            .prop_map(|(p, r)| SearchOp::Build(p, r)),
        1 => (prop::collection::vec(point_spec::<P>(), 0..max_points), radius_spec())
            .prop_map(|(p, r)| SearchOp::Build(p, r)),
        1 => prop_oneof![0u32..32, Just(u32::MAX)].prop_map(SearchOp::Neighbors),
        3 => point_spec::<P>().prop_map(SearchOp::Within),
        2 => (buf_len(), buf_len()).prop_map(|(o, i)| SearchOp::Lists(o, i)),
        1 => prop_oneof![0u32..32, Just(u32::MAX)].prop_map(SearchOp::Position),
    ]
}

// ---------------------------------------------------------------------------
// arbitrary (fuzzing)
// ---------------------------------------------------------------------------

mod fuzzing {
    use super::*;
    use arbitrary::{Arbitrary, Result, Unstructured};

    fn small_id(u: &mut Unstructured<'_>) -> Result<u32> {
        Ok(if u.ratio(1u8, 32)? {
            u32::MAX
        } else {
            u.int_in_range(0..=IDS - 1)?
        })
    }

    impl<'a> Arbitrary<'a> for Fault {
        fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
            Ok(match u.int_in_range(0u8..=5)? {
                0 => Fault::Nan {
                    axis: u.arbitrary()?,
                    hi: u.arbitrary()?,
                },
                1 => Fault::Inverted {
                    axis: u.arbitrary()?,
                },
                2 => Fault::Infinite {
                    axis: u.int_in_range(0..=3)?,
                    below: u.arbitrary()?,
                    above: u.arbitrary()?,
                },
                3 => Fault::WrongInfinite {
                    axis: u.arbitrary()?,
                    hi: u.arbitrary()?,
                },
                4 => Fault::Exotic {
                    axis: u.int_in_range(0..=3)?,
                    which: u.arbitrary()?,
                },
                _ => Fault::Bits {
                    lo: u.arbitrary()?,
                    hi: u.arbitrary()?,
                },
            })
        }
    }

    impl<'a, B: TestBox> Arbitrary<'a> for BoxSpec<B> {
        fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
            Ok(match u.int_in_range(0u8..=15)? {
                0..=8 => BoxSpec::Lattice(u.arbitrary()?),
                9..=10 => BoxSpec::CopyOf(small_id(u)?),
                11..=12 => BoxSpec::Touching {
                    of: small_id(u)?,
                    axis: u.arbitrary()?,
                    edge: u.arbitrary()?,
                },
                _ => BoxSpec::Faulty(u.arbitrary()?, u.arbitrary()?),
            })
        }
    }

    impl<'a, B: TestBox> Arbitrary<'a> for BroadOp<B> {
        fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
            Ok(match u.int_in_range(0u8..=25)? {
                0..=7 => BroadOp::Insert(small_id(u)?, u.arbitrary()?),
                8..=12 => BroadOp::Update(small_id(u)?, u.arbitrary()?),
                13..=14 => {
                    let n = u.int_in_range(0u8..=8)?;
                    let mut v = Vec::new();
                    for _ in 0..n {
                        v.push((small_id(u)?, u.arbitrary()?));
                    }
                    BroadOp::UpdateMany(v)
                }
                15..=17 => BroadOp::Remove(small_id(u)?),
                18 => BroadOp::Get(u.arbitrary()?),
                19 => BroadOp::Clear,
                20 => BroadOp::Overlaps,
                21 => BroadOp::Filtered(u.arbitrary()?),
                22..=23 => BroadOp::Ray(u.arbitrary()?, u.arbitrary()?, u.arbitrary()?),
                _ => BroadOp::Query(u.arbitrary()?),
            })
        }
    }

    impl<'a, P: Point> Arbitrary<'a> for PointSpec<P> {
        fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
            Ok(match u.int_in_range(0u8..=15)? {
                0..=9 => PointSpec::Lattice(u.arbitrary()?),
                10..=12 => PointSpec::Near {
                    of: u.int_in_range(0..=31)?,
                    axis: u.arbitrary()?,
                    shift: u.arbitrary()?,
                },
                13 => PointSpec::NonFinite {
                    axis: u.arbitrary()?,
                    which: u.arbitrary()?,
                },
                14 => PointSpec::Exotic {
                    axis: u.int_in_range(0..=3)?,
                    which: u.arbitrary()?,
                },
                _ => PointSpec::Bits(u.arbitrary()?),
            })
        }
    }

    impl<'a> Arbitrary<'a> for RadiusSpec {
        fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
            Ok(match u.int_in_range(0u8..=9)? {
                0..=5 => RadiusSpec::Pow2(u.int_in_range(-4..=4)?),
                6..=7 => RadiusSpec::Quarter(u.int_in_range(1..=15)?),
                8 => RadiusSpec::Bad(u.arbitrary()?),
                _ => RadiusSpec::Bits(u.arbitrary()?),
            })
        }
    }

    impl<'a> Arbitrary<'a> for BufLen {
        fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
            Ok(match u.int_in_range(0u8..=5)? {
                0..=2 => BufLen::Exact,
                3..=4 => BufLen::Short(u.int_in_range(0..=3)?),
                _ => BufLen::Long(u.int_in_range(0..=3)?),
            })
        }
    }

    impl<'a, P: Point> Arbitrary<'a> for SearchOp<P> {
        fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
            Ok(match u.int_in_range(0u8..=10)? {
                0..=3 => {
                    let n = u.int_in_range(0u8..=28)?;
                    let clean = u.ratio(2u8, 3)?;
                    let mut v = Vec::new();
                    for _ in 0..n {
                        v.push(if clean {
                            match u.int_in_range(0u8..=2)? {
                                0 => PointSpec::Near {
                                    of: u.int_in_range(0..=31)?,
                                    axis: u.arbitrary()?,
                                    shift: u.arbitrary()?,
                                },
                                _ => PointSpec::Lattice(u.arbitrary()?),
                            }
                        } else {
                            u.arbitrary()?
                        });
                    }
                    SearchOp::Build(v, u.arbitrary()?)
                }
                4 => SearchOp::Neighbors(u.arbitrary()?),
                5..=7 => SearchOp::Within(u.arbitrary()?),
                8..=9 => SearchOp::Lists(u.arbitrary()?, u.arbitrary()?),
                _ => SearchOp::Position(u.arbitrary()?),
            })
        }
    }
}
