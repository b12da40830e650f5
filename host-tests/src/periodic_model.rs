//! The periodic brute-force oracle of `spatium::PeriodicBroadPhase`, and an
//! operation model over it shared by the property tests
//! (`tests/periodic_broad.rs`) and the `periodic` fuzz target.
//!
//! The oracle is written from the definition in the adapter's
//! documentation, not from its code: a box's image 0 is its lower corner
//! wrapped by [`PeriodicBox::wrap_coord`] (the one wrap of the crate) and
//! its upper corner translated by the same float difference; along an axis
//! where image 0 crosses the upper face it also has the image `x − L`.
//! Boxes `a`, `b` overlap periodically iff along every axis some choice
//! among `(a0, b0)`, `(a0, b0 − L)`, `(a0 − L, b0)` overlaps (closed
//! intervals, [`spatium_host::boxes`]' independent test). Every pair of
//! stored boxes is tried (`O(n²)`), and the premise of the adapter's
//! exactly-once proof (at most one choice overlaps per axis) is checked on
//! every pair the oracle looks at.

use core::cmp::Ordering::{Equal, Greater, Less};

use arbitrary::Arbitrary;
use spatium::{BoundingBox, BroadPhase, Error, PeriodicBox, Point, Validate};
use spatium_host::boxes::{TestBox, corners, dim, same, same_opt};

use crate::model::{box_error, check_pairs, is_structure_specific};

/// `Err(format!(..))` unless `cond`.
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

/// The images of one box, axis by axis: image 0's interval, and the
/// interval shifted by `−L` where image 0 crosses the upper face.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Images {
    /// Image 0's interval per axis.
    pub base: [(f32, f32); 3],
    /// The `−L` interval per axis, where the box crosses.
    pub shifted: [Option<(f32, f32)>; 3],
}

/// The images of `b` in `domain`, or the error the adapter must give.
///
/// # Errors
/// The box's own error (`NonFinite` before `InvertedBox`); then, for the
/// first periodic axis at fault, `PeriodTooShort` (image 0's extent not
/// below `L/2`, or a crossing box's gap `min − (max − L)` below `L/2`) or
/// `OutOfRange` (`min − L` overflows).
pub fn images<B: BoundingBox>(domain: &PeriodicBox<B::Point>, b: &B) -> Result<Images, Error> {
    if let Some(e) = box_error(b) {
        return Err(e);
    }
    let (lo, hi) = corners(b);
    let mut out = Images {
        base: [(0.0, 0.0); 3],
        shifted: [None; 3],
    };
    for k in 0..dim::<B>() {
        let (a, z) = (lo[k], hi[k]);
        if !domain.is_periodic_axis(k) {
            out.base[k] = (a, z);
            continue;
        }
        let l = domain.lengths().coord(k);
        let top = domain.hi().coord(k);
        let m = domain.wrap_coord(k, a);
        // Translate the upper corner by the same float difference; a box
        // already inside is kept bit for bit.
        let mx = if m.to_bits() == a.to_bits() {
            z
        } else {
            f32::max(z + (m - a), m)
        };
        let too_short = Error::PeriodTooShort { axis: k as u8 };
        if matches!(
            (mx - m).partial_cmp(&(l / 2.0)),
            None | Some(Greater | Equal)
        ) {
            return Err(too_short);
        }
        out.base[k] = (m, mx);
        if mx >= top {
            let s = (m - l, mx - l);
            if !s.0.is_finite() {
                return Err(Error::OutOfRange);
            }
            if matches!((m - s.1).partial_cmp(&(l / 2.0)), None | Some(Less)) {
                return Err(too_short);
            }
            out.shifted[k] = Some(s);
        }
    }
    Ok(out)
}

fn meets(x: (f32, f32), y: (f32, f32)) -> bool {
    x.0 <= y.1 && y.0 <= x.1
}

/// Whether `a` and `b` overlap periodically (along every axis one of the
/// three choices overlaps).
///
/// # Errors
/// If along some axis more than one choice overlaps (the premise of the
/// adapter's exactly-once argument is broken).
pub fn periodic_overlap(a: &Images, b: &Images, dim: usize) -> Result<bool, String> {
    let mut all = true;
    for k in 0..dim {
        let mut n = u32::from(meets(a.base[k], b.base[k]));
        if let Some(bs) = b.shifted[k] {
            n += u32::from(meets(a.base[k], bs));
        }
        if let Some(as_) = a.shifted[k] {
            n += u32::from(meets(as_, b.base[k]));
        }
        ensure!(n <= 1, "axis {k}: {n} shifts overlap for {a:?} and {b:?}");
        all &= n == 1;
    }
    Ok(all)
}

/// The periodic brute force: one optional box per id, with its images.
#[derive(Clone, Debug)]
pub struct PeriodicOracle<B: BoundingBox> {
    /// The domain.
    pub domain: PeriodicBox<B::Point>,
    /// The box stored under each id, as given, with its images.
    pub slots: Vec<Option<(B, Images)>>,
}

impl<B: TestBox> PeriodicOracle<B> {
    /// Empty, for ids below `capacity`.
    pub fn new(domain: PeriodicBox<B::Point>, capacity: usize) -> Self {
        Self {
            domain,
            slots: vec![None; capacity],
        }
    }

    /// The box of `id`, as given.
    pub fn get(&self, id: u32) -> Option<B> {
        self.slots.get(id as usize).copied().flatten().map(|s| s.0)
    }

    /// Number of boxes.
    pub fn len(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    /// `true` if empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The error `insert(id, b)` must give, or `b`'s images.
    ///
    /// # Errors
    /// `IdOutOfRange`, the box's error, `DuplicateId`, then [`images`]'.
    pub fn predict_insert(&self, id: u32, b: &B) -> Result<Images, Error> {
        let slot = self
            .slots
            .get(id as usize)
            .ok_or(Error::IdOutOfRange { id })?;
        if let Some(e) = box_error(b) {
            return Err(e);
        }
        if slot.is_some() {
            return Err(Error::DuplicateId { id });
        }
        images(&self.domain, b)
    }

    /// The error `update(id, b)` must give, or `b`'s images.
    ///
    /// # Errors
    /// `IdOutOfRange`, `UnknownId`, then [`images`]'.
    pub fn predict_update(&self, id: u32, b: &B) -> Result<Images, Error> {
        let slot = self
            .slots
            .get(id as usize)
            .ok_or(Error::IdOutOfRange { id })?;
        if slot.is_none() {
            return Err(Error::UnknownId { id });
        }
        images(&self.domain, b)
    }

    /// Every periodically overlapping pair `(i < j)`, sorted.
    ///
    /// # Errors
    /// As [`periodic_overlap`].
    pub fn pairs(&self) -> Result<Vec<(u32, u32)>, String> {
        let stored: Vec<(u32, Images)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|s| (i as u32, s.1)))
            .collect();
        let mut out = Vec::new();
        for (x, (i, a)) in stored.iter().enumerate() {
            for (j, b) in &stored[x + 1..] {
                if periodic_overlap(a, b, dim::<B>())? {
                    out.push((*i, *j));
                }
            }
        }
        Ok(out)
    }

    /// The ids overlapping `q` periodically, sorted, or the query's error.
    ///
    /// # Errors
    /// The outer `Err`: as [`periodic_overlap`]; the inner: [`images`]'.
    pub fn hits(&self, q: &B) -> Result<Result<Vec<u32>, Error>, String> {
        let qi = match images(&self.domain, q) {
            Ok(i) => i,
            Err(e) => return Ok(Err(e)),
        };
        let mut out = Vec::new();
        for (i, s) in self.slots.iter().enumerate() {
            if let Some((_, a)) = s
                && periodic_overlap(&qi, a, dim::<B>())?
            {
                out.push(i as u32);
            }
        }
        Ok(Ok(out))
    }

    /// Compares everything observable of `t` with the oracle: the count,
    /// every id's box (bit for bit, and one id past the capacity), the
    /// invariants, and all pairs.
    ///
    /// # Errors
    /// A message naming the first difference.
    pub fn check<T: BroadPhase<B> + Validate>(&self, t: &mut T) -> Result<(), String> {
        ensure!(
            t.box_count() == self.len(),
            "box_count {} want {}",
            t.box_count(),
            self.len()
        );
        for id in 0..=self.slots.len() as u32 {
            ensure!(
                same_opt(t.get(id), self.get(id)),
                "get({id}) = {:?}, want {:?}",
                t.get(id),
                self.get(id)
            );
        }
        t.validate().map_err(|c| format!("validate: {c}"))?;
        self.check_pairs(t)
    }

    /// Compares `t`'s pairs with the oracle's.
    ///
    /// # Errors
    /// A message with the difference.
    pub fn check_pairs<T: BroadPhase<B>>(&self, t: &mut T) -> Result<(), String> {
        let mut raw = Vec::new();
        t.for_each_overlap(|a, b| raw.push((a, b)))
            .map_err(|e| format!("for_each_overlap: {e}"))?;
        check_pairs(&raw, &self.pairs()?).map_err(|e| format!("pairs: {e}"))
    }

    /// Compares `t`'s answer to the query `q` with the oracle's.
    ///
    /// # Errors
    /// A message with the difference.
    pub fn check_query<T: BroadPhase<B>>(&self, t: &mut T, q: &B) -> Result<(), String> {
        let want = self.hits(q)?;
        let mut got = Vec::new();
        let r = t.query(q, |id| got.push(id));
        match want {
            Err(e) => ensure!(r == Err(e), "query {q:?}: {r:?}, want Err({e:?})"),
            Ok(want) => {
                ensure!(r.is_ok(), "query {q:?}: {r:?}, want Ok");
                got.sort_unstable();
                let n = got.len();
                got.dedup();
                ensure!(got.len() == n, "query {q:?}: an id reported twice");
                ensure!(got == want, "query {q:?}: {got:?}, want {want:?}");
            }
        }
        Ok(())
    }
}

/// A box of an operation, on a quarter-unit lattice: lower corner
/// `lo / 4`, edges from [`SIZES`], and sometimes a fault.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq)]
pub struct BoxSpec {
    /// Lower corner in quarter units.
    pub lo: [i8; 3],
    /// Edge per axis: an index into [`SIZES`].
    pub size: [u8; 3],
    /// `fault % 16`: 0–9 none, 10 NaN, 11 infinite, 12 inverted, 13 far
    /// (`+1e6` on x), 14 off-lattice (`× 0.1`), 15 huge (`1e30` on x).
    pub fault: u8,
}

/// The edges a [`BoxSpec`] draws: zero, fractions of the period of
/// [`domain`] (8 × 6 × 10: half periods 4, 3, 5) and beyond.
pub const SIZES: [f32; 10] = [0.0, 0.25, 1.0, 1.5, 2.75, 3.0, 3.999, 4.0, 5.0, 20.0];

impl BoxSpec {
    /// The box (unvalidated).
    pub fn resolve<B: TestBox>(&self) -> B {
        let mut lo = [0.0f32; 3];
        let mut hi = [0.0f32; 3];
        for k in 0..3 {
            lo[k] = f32::from(self.lo[k]) * 0.25;
            hi[k] = lo[k] + SIZES[usize::from(self.size[k]) % SIZES.len()];
        }
        match self.fault % 16 {
            10 => lo[1] = f32::NAN,
            11 => hi[0] = f32::INFINITY,
            12 => core::mem::swap(&mut lo[0], &mut hi[0]),
            13 => {
                lo[0] += 1e6;
                hi[0] += 1e6;
            }
            14 => {
                lo = lo.map(|x| x * 0.1);
                hi = hi.map(|x| x * 0.1);
            }
            15 => {
                lo[0] = 1e30;
                hi[0] = 1e30;
            }
            _ => {}
        }
        B::raw(lo, hi)
    }
}

/// The domain of the operation models: `[-1, 7) × [0.5, 6.5) × [-2, 8)`
/// (periods 8, 6, 10), periodic along the axes of `mask` (masked to the
/// dimension).
pub fn domain<P: Point>(mask: u8) -> PeriodicBox<P> {
    let lo = P::from_fn(|k| [-1.0, 0.5, -2.0][k]);
    let hi = P::from_fn(|k| [7.0, 6.5, 8.0][k]);
    let mask = mask & ((1 << P::DIM) - 1);
    PeriodicBox::new(lo, hi, mask).unwrap_or(PeriodicBox::NONE)
}

/// One operation of the periodic model.
#[derive(Arbitrary, Clone, Debug, PartialEq)]
pub enum PeriodicOp {
    /// `insert(id, box)`.
    Insert(u8, BoxSpec),
    /// `update(id, box)`.
    Update(u8, BoxSpec),
    /// `update_many` of a few updates.
    UpdateMany(Vec<(u8, BoxSpec)>),
    /// `remove(id)`.
    Remove(u8),
    /// `query(box)`.
    Query(BoxSpec),
    /// All pairs, sequentially and on two threads.
    Overlaps,
    /// `clear()`.
    Clear,
}

/// Ids of the modelled adapter (the operations draw `u8` ids, most of
/// them out of range).
pub const CAPACITY: usize = 12;

impl<B: TestBox> PeriodicOracle<B> {
    /// Runs `op` on `t` and on the oracle, judges `t`'s result, then
    /// compares everything ([`check`](Self::check)). A structure-specific
    /// error of the inner structure is accepted where success is
    /// predicted, provided nothing changed.
    ///
    /// # Errors
    /// A message naming the operation and the difference.
    pub fn apply<T: BroadPhase<B> + Validate + Send + Sync>(
        &mut self,
        t: &mut T,
        op: &PeriodicOp,
    ) -> Result<(), String> {
        let judge = |r: Result<(), Error>, want: &Result<Images, Error>| -> Result<bool, String> {
            match (r, want) {
                (Ok(()), Ok(_)) => Ok(true),
                (Err(e), Err(w)) if e == *w => Ok(false),
                (Err(e), Ok(_)) if is_structure_specific(&e) => Ok(false),
                (r, w) => Err(format!("{op:?}: {r:?}, want {:?}", w.as_ref().map(|_| ()))),
            }
        };
        match op {
            PeriodicOp::Insert(id, spec) => {
                let (id, b) = (u32::from(*id), spec.resolve::<B>());
                let want = self.predict_insert(id, &b);
                if judge(t.insert(id, b), &want)?
                    && let Ok(im) = want
                {
                    self.slots[id as usize] = Some((b, im));
                }
            }
            PeriodicOp::Update(id, spec) => {
                let (id, b) = (u32::from(*id), spec.resolve::<B>());
                let want = self.predict_update(id, &b);
                if judge(t.update(id, b), &want)?
                    && let Ok(im) = want
                {
                    self.slots[id as usize] = Some((b, im));
                }
            }
            PeriodicOp::UpdateMany(list) => {
                let list: Vec<(u32, B)> = list
                    .iter()
                    .map(|(id, s)| (u32::from(*id), s.resolve::<B>()))
                    .collect();
                let mut want = Ok(());
                let mut imgs = Vec::new();
                for (id, b) in &list {
                    match self.predict_update(*id, b) {
                        Ok(im) => imgs.push(im),
                        Err(e) => {
                            want = Err(e);
                            break;
                        }
                    }
                }
                let r = t.update_many(&list);
                match (r, want) {
                    (Ok(()), Ok(())) => {
                        for ((id, b), im) in list.iter().zip(imgs) {
                            self.slots[*id as usize] = Some((*b, im));
                        }
                    }
                    (Err(e), Err(w)) if e == w => {}
                    (Err(e), Ok(())) if is_structure_specific(&e) => {
                        // A prefix is applied: find which one.
                        let matches = |m: &Self, t: &T| {
                            (0..m.slots.len())
                                .all(|id| same_opt(t.get(id as u32), m.get(id as u32)))
                        };
                        let mut m = self.clone();
                        let mut found = matches(&m, t);
                        for ((id, b), im) in list.iter().zip(&imgs) {
                            if found {
                                break;
                            }
                            m.slots[*id as usize] = Some((*b, *im));
                            found = matches(&m, t);
                        }
                        ensure!(found, "{op:?}: {e:?} left no prefix applied");
                        *self = m;
                    }
                    (r, w) => return Err(format!("{op:?}: {r:?}, want {w:?}")),
                }
            }
            PeriodicOp::Remove(id) => {
                let id = u32::from(*id);
                let r = t.remove(id);
                match self.slots.get_mut(id as usize) {
                    None => ensure!(
                        r == Err(Error::IdOutOfRange { id }),
                        "{op:?}: {r:?}, want IdOutOfRange"
                    ),
                    Some(s) => match s.take() {
                        None => ensure!(
                            r == Err(Error::UnknownId { id }),
                            "{op:?}: {r:?}, want UnknownId"
                        ),
                        Some((b, _)) => ensure!(
                            r.as_ref().is_ok_and(|g| same(g, &b)),
                            "{op:?}: {r:?}, want Ok({b:?})"
                        ),
                    },
                }
            }
            PeriodicOp::Query(spec) => self.check_query(t, &spec.resolve::<B>())?,
            PeriodicOp::Overlaps => {
                self.check_pairs(t)?;
                let exec = spatium_host::par::Threads::new(2);
                let mut sinks = vec![Vec::new(); t.overlap_tasks()];
                t.par_for_each_overlap(&exec, &mut sinks, |s, a, b| s.push((a, b)))
                    .map_err(|e| format!("par_for_each_overlap: {e}"))?;
                let raw: Vec<(u32, u32)> = sinks.concat();
                check_pairs(&raw, &self.pairs()?).map_err(|e| format!("par pairs: {e}"))?;
            }
            PeriodicOp::Clear => {
                t.clear();
                self.slots.iter_mut().for_each(|s| *s = None);
            }
        }
        self.check(t).map_err(|e| format!("after {op:?}: {e}"))
    }
}
