//! The linear kd-tree's own operations and rules, layered over the shared
//! broad-phase model ([`BroadModel`], lazy: the kd-tree rebuilds when pairs
//! or queries are asked for, so changes accumulate between two detections):
//!
//! * exact results where the trait allows a choice: `CapacityExceeded`
//!   exactly when the record buffers are full (after the id and box
//!   errors), no other structure-specific error ever, query errors exact;
//! * configuration changes ([`KdOp::SetConfig`]) with the builders' errors
//!   ([`make_config`]) and [`Error::InvalidConfig`] from every rebuild while
//!   the configuration asks for more bits than the code type holds and a
//!   change is pending (until a clear);
//! * small moves ([`KdOp::Nudge`], as temporal reuse expects);
//! * pair enumeration in every candidate mode ([`KdOp::Pairs`],
//!   [`check_candidates`]: `Raw` contains every overlapping pair and is
//!   counted by `count_raw`, `Unique` contains them without duplicates and
//!   lies within `Raw`, `Exact` equals brute force);
//! * a refused operation changes nothing: `get` of every id, the pairs, the
//!   records and the stats ([`KdSnapshot`]);
//! * after every operation, on a clone rebuilt by `for_each_pair` (the
//!   structure keeps its pending changes): the model's pairs, `validate()`
//!   with the keys checked, and the stats and records ([`KdModel::check`]).
//!
//! Used by `tests/kd_props.rs` (proptest over fixed configurations) and the
//! `kdtree` fuzz target (fuzzed configurations, raw-bit roots and boxes).

use spatium::Inspect;
use spatium::kdtree::{
    Candidates, KdBroadPhase, KdConfig, KdRecord, KdSlot, KdStats, LocCode, SortAlgo, Split,
};
use spatium::{BoundingBox, BroadPhase, Error, Validate};
use spatium_host::boxes::{TestBox, corners, dim, same};

use crate::model::{BoxSpec, BroadModel, BroadOp, Outcome, box_error, check_pairs};
use crate::props::pow2;

/// A `Vec`-backed kd-tree broad phase.
pub type VecKd<B, K> = KdBroadPhase<B, K, Vec<KdSlot<B>>, Vec<KdRecord<K>>>;

macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

// ---------------------------------------------------------------------------
// Configurations
// ---------------------------------------------------------------------------

/// The root of a configuration.
#[derive(Clone, Copy, Debug, PartialEq, arbitrary::Arbitrary)]
pub enum RootSpec {
    /// From the scene.
    Auto,
    /// A dyadic lattice cell `[pos, pos + (edge mod 64 + 1)] / 4 ·
    /// 2^(pe mod 12 - 6)`.
    Cell {
        /// Scale exponent.
        pe: i8,
        /// Lower corner in units.
        pos: [i8; 3],
        /// Edges in units (minus one, modulo 64).
        edge: [u8; 3],
    },
    /// Raw corners `lo x, lo y, lo z, hi x, …`: may be invalid
    /// (`with_root` must then refuse it).
    Raw([f32; 6]),
}

/// A configuration as decoded from fuzz input.
#[derive(Clone, Copy, Debug, PartialEq, arbitrary::Arbitrary)]
pub struct KdCfgSpec {
    /// 0: `Split::None`; else `Volume { min_gain_log2: split - 1 }` (over
    /// 32 refused by `with_split`, the default split kept).
    pub split: u8,
    /// Octree cells.
    pub octree: bool,
    /// Bits per axis modulo `max + 2`: 0 automatic, `max + 1` too many.
    pub bits: u8,
    /// The root.
    pub root: RootSpec,
    /// Comparison sort (else radix).
    pub comparison: bool,
    /// Temporal reuse.
    pub reuse: bool,
}

/// A configuration with what the model needs to know of it.
#[derive(Clone, Copy, Debug)]
pub struct Configured<B> {
    /// The configuration.
    pub config: KdConfig<B>,
    /// Its fixed root, if any.
    pub root: Option<B>,
    /// The root is a dyadic cell (the frame is the root exactly and the
    /// `clamped` count is predicted).
    pub root_exact: bool,
    /// It asks for more bits per axis than the code type holds.
    pub bad_bits: bool,
    /// Temporal reuse is on.
    pub reuse: bool,
}

impl<B: TestBox> Configured<B> {
    /// A valid configuration whose fixed root (if any) is `root`, a dyadic
    /// cell, and whose temporal reuse is `reuse`.
    pub fn new(config: KdConfig<B>, root: Option<B>, reuse: bool) -> Self {
        Self {
            config,
            root,
            root_exact: true,
            bad_bits: false,
            reuse,
        }
    }
}

/// The configuration of `c` for code type `K`, checking the builders'
/// errors (`with_split` over 32, `with_root` of an invalid root).
///
/// # Errors
/// A message if a builder's result is not the documented one.
pub fn make_config<B: TestBox, K: LocCode>(c: &KdCfgSpec) -> Result<Configured<B>, String> {
    let mut cfg = KdConfig::<B>::DEFAULT;
    if c.split == 0 {
        cfg = cfg
            .with_split(Split::None)
            .map_err(|e| format!("with_split(None) = {e:?}"))?;
    } else {
        let g = c.split - 1;
        let r = cfg.with_split(Split::Volume { min_gain_log2: g });
        if g > 32 {
            let want = Error::InvalidConfig {
                field: "split.min_gain_log2",
            };
            ensure!(
                r.as_ref().err() == Some(&want),
                "with_split gain {g}: {:?}",
                r.map(|c| c.split())
            );
        } else {
            cfg = r.map_err(|e| format!("with_split gain {g}: {e:?}"))?;
            ensure!(
                cfg.split() == Split::Volume { min_gain_log2: g },
                "split {:?}",
                cfg.split()
            );
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
        RootSpec::Auto => None,
        RootSpec::Cell { pe, pos, edge } => {
            let unit = 0.25 * pow2((pe.rem_euclid(12)) - 6);
            let lo = pos.map(|p| f32::from(p) * unit);
            let hi = core::array::from_fn(|k| lo[k] + f32::from(edge[k] % 64 + 1) * unit);
            Some(B::raw(lo, hi))
        }
        RootSpec::Raw(v) => Some(B::raw([v[0], v[1], v[2]], [v[3], v[4], v[5]])),
    };
    let r = cfg.with_root(root);
    let mut kept = None;
    match root {
        None => cfg = r.map_err(|e| format!("with_root(None) = {e:?}"))?,
        Some(root) => {
            let (lo, hi) = corners(&root);
            let want = match box_error(&root) {
                Some(e) => Err(e),
                None if (0..dim::<B>()).any(|k| lo[k] >= hi[k]) => {
                    Err(Error::InvalidConfig { field: "root" })
                }
                None => Ok(()),
            };
            let got = r.map(|_| ());
            ensure!(got == want, "with_root({root:?}) = {got:?}, want {want:?}");
            if let Ok(c) = r {
                cfg = c;
                kept = Some(root);
            }
        }
    }
    Ok(Configured {
        config: cfg,
        root: kept,
        root_exact: !matches!(c.root, RootSpec::Raw(_)),
        bad_bits: bits > max,
        reuse: c.reuse,
    })
}

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------

/// An operation on the kd-tree broad phase.
#[derive(Clone, Debug, PartialEq)]
pub enum KdOp<B> {
    /// A trait operation (judged by the shared model, with the kd-tree's
    /// exact predictions on top).
    Broad(BroadOp<B>),
    /// Moves stored box `id` by `delta · 2^-(exp mod 12)` (the unit box at
    /// the origin if `id` is not stored; unchanged where the move would
    /// round to an invalid box).
    Nudge(u32, [i8; 3], u8),
    /// `for_each_pair` (twice: deterministic), every stored box as a query,
    /// and every candidate mode.
    Pairs,
    /// `set_config`.
    SetConfig(KdCfgSpec),
}

/// `b` moved by `delta · 2^-(exp mod 12)` (the unit box at the origin if
/// `None`); unchanged where the move would make it invalid (rounding of
/// huge values).
pub fn nudged<B: TestBox>(b: Option<B>, delta: &[i8; 3], exp: u8) -> B {
    let Some(b) = b else {
        return B::raw([0.0; 3], [1.0; 3]);
    };
    let (mut lo, mut hi) = corners(&b);
    let s = 2f32.powi(-i32::from(exp % 12));
    for k in 0..dim::<B>() {
        let v = f32::from(delta[k]) * s;
        lo[k] += v;
        hi[k] += v;
    }
    let moved = B::raw(lo, hi);
    if box_error(&moved).is_none() {
        moved
    } else {
        b
    }
}

/// Candidate pairs against the exact pairs `want` (sorted, normalised):
/// `raw` has no self pair, `count_raw` entries and contains `want`;
/// `unique` has no self pair and no duplicate, contains `want` and lies
/// within `raw`; `exact` equals `want`, each pair once.
///
/// # Errors
/// A message naming the mode and what differs.
pub fn check_candidates(
    raw: &[(u32, u32)],
    count_raw: u64,
    unique: &[(u32, u32)],
    exact: &[(u32, u32)],
    want: &[(u32, u32)],
) -> Result<(), String> {
    let norm = |v: &[(u32, u32)]| -> Vec<(u32, u32)> {
        let mut n: Vec<(u32, u32)> = v.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
        n.sort_unstable();
        n
    };
    let missing = |got: &[(u32, u32)], want: &[(u32, u32)]| -> Vec<(u32, u32)> {
        want.iter()
            .filter(|p| got.binary_search(p).is_err())
            .take(5)
            .copied()
            .collect()
    };
    ensure!(
        raw.len() as u64 == count_raw,
        "count_raw {count_raw}, {} raw pairs",
        raw.len()
    );
    ensure!(raw.iter().all(|&(a, b)| a != b), "a self pair in raw");
    let mut r = norm(raw);
    r.dedup();
    let m = missing(&r, want);
    ensure!(m.is_empty(), "raw misses pairs {m:?}");
    ensure!(unique.iter().all(|&(a, b)| a != b), "a self pair in unique");
    let u = norm(unique);
    let mut ud = u.clone();
    ud.dedup();
    ensure!(
        ud.len() == u.len(),
        "{} duplicate unique pairs",
        u.len() - ud.len()
    );
    let m = missing(&u, want);
    ensure!(m.is_empty(), "unique misses pairs {m:?}");
    let m = missing(&r, &u);
    ensure!(m.is_empty(), "unique pairs not in raw {m:?}");
    check_pairs(exact, want).map_err(|e| format!("exact: {e}"))
}

/// What a refused operation must keep.
#[derive(Debug, PartialEq)]
pub struct KdSnapshot<B, K> {
    len: usize,
    gets: Vec<Option<B>>,
    /// The pairs of a clone (sorted, normalised).
    pairs: Result<Vec<(u32, u32)>, Error>,
    records: Vec<KdRecord<K>>,
    stats: KdStats,
}

/// What `bp` shows of itself (ids up to `ids`).
pub fn snapshot<B: TestBox, K: LocCode>(bp: &VecKd<B, K>, ids: u32) -> KdSnapshot<B, K> {
    let mut c = bp.clone();
    let mut v = Vec::new();
    let pairs = c.for_each_overlap(|a, b| v.push((a.min(b), a.max(b))));
    v.sort_unstable();
    KdSnapshot {
        len: bp.box_count(),
        gets: (0..ids).map(|id| bp.get(id)).collect(),
        pairs: pairs.map(|()| v),
        records: bp.tree().records().to_vec(),
        stats: bp.stats(),
    }
}

/// A box lies inside the root cell (as `KdStats::clamped` counts it: the
/// upper face belongs to the next cell).
fn inside<B: BoundingBox>(b: &B, root: &B) -> bool {
    let (lo, hi) = corners(b);
    let (rl, rh) = corners(root);
    (0..dim::<B>()).all(|k| {
        f64::from(lo[k]) >= f64::from(rl[k])
            && f64::from(hi[k]) < f64::from(rl[k]) + (f64::from(rh[k]) - f64::from(rl[k]))
    })
}

/// The shared model plus what the kd-tree adds.
#[derive(Clone, Debug)]
pub struct KdModel<B> {
    /// The trait model (lazy).
    pub broad: BroadModel<B>,
    /// The length of each record buffer.
    pub records: usize,
    /// The configuration in use.
    pub cfg: Configured<B>,
    /// The structure has changes not yet built.
    pub dirty: bool,
}

impl<B: TestBox> KdModel<B> {
    /// The model of an empty broad phase of `capacity` ids, record buffers
    /// of `records` entries, configuration `cfg`.
    pub fn new(capacity: usize, records: usize, cfg: Configured<B>) -> Self {
        Self {
            broad: BroadModel::new(capacity).lazy(),
            records,
            cfg,
            dirty: false,
        }
    }

    /// What a rebuild gives: `InvalidConfig` while the bits are bad and a
    /// change is pending.
    pub fn refresh_result(&self) -> Outcome {
        if self.dirty && self.cfg.bad_bits {
            Err(Error::InvalidConfig { field: "bits" })
        } else {
            Ok(())
        }
    }

    fn insert_result(&self, id: u32, b: &B) -> Outcome {
        if id as usize >= self.broad.capacity() {
            Err(Error::IdOutOfRange { id })
        } else if let Some(e) = box_error(b) {
            Err(e)
        } else if self.broad.get(id).is_some() {
            Err(Error::DuplicateId { id })
        } else if self.broad.len() >= self.records {
            Err(Error::CapacityExceeded {
                capacity: self.records,
            })
        } else {
            Ok(())
        }
    }

    fn update_result(&self, id: u32, b: &B) -> Outcome {
        if id as usize >= self.broad.capacity() {
            Err(Error::IdOutOfRange { id })
        } else if self.broad.get(id).is_none() {
            Err(Error::UnknownId { id })
        } else {
            box_error(b).map_or(Ok(()), Err)
        }
    }

    /// Applies `op` to `bp` and the model, judges it, checks that a refused
    /// operation changed nothing, then [`check`](Self::check)s everything.
    ///
    /// # Errors
    /// A message naming the operation and what differs.
    pub fn apply<K: LocCode>(
        &mut self,
        bp: &mut VecKd<B, K>,
        op: &KdOp<B>,
    ) -> Result<Outcome, String> {
        let ids = self.broad.capacity() as u32 + 4;
        let before = snapshot(bp, ids);
        let r = self.apply_op(bp, op).map_err(|e| format!("{op:?}: {e}"))?;
        if let Err(e) = &r {
            let after = snapshot(bp, ids);
            ensure!(
                after == before,
                "{op:?} refused with {e:?} but changed: before {before:?}, after {after:?}"
            );
        }
        self.check(bp).map_err(|e| format!("after {op:?}: {e}"))?;
        Ok(r)
    }

    fn apply_op<K: LocCode>(
        &mut self,
        bp: &mut VecKd<B, K>,
        op: &KdOp<B>,
    ) -> Result<Outcome, String> {
        let r = match op {
            KdOp::Broad(bop) => match bop {
                BroadOp::Insert(id, s) => {
                    let b = self.broad.resolve(s);
                    let want = self.insert_result(*id, &b);
                    let r = self.broad.apply(bp, bop)?;
                    ensure!(r == want, "insert({id}, {b:?}) = {r:?}, want {want:?}");
                    r
                }
                BroadOp::Update(id, s) => {
                    let b = self.broad.resolve(s);
                    let want = self.update_result(*id, &b);
                    let r = self.broad.apply(bp, bop)?;
                    ensure!(r == want, "update({id}, {b:?}) = {r:?}, want {want:?}");
                    r
                }
                BroadOp::UpdateMany(list) => {
                    let want = list
                        .iter()
                        .map(|(i, s)| self.update_result(*i, &self.broad.resolve(s)))
                        .find(Result::is_err)
                        .unwrap_or(Ok(()));
                    let r = self.broad.apply(bp, bop)?;
                    ensure!(r == want, "update_many = {r:?}, want {want:?}");
                    if list.is_empty() {
                        return Ok(r);
                    }
                    r
                }
                BroadOp::Remove(_) => self.broad.apply(bp, bop)?,
                BroadOp::Get(_) => return self.broad.apply(bp, bop),
                BroadOp::Clear => {
                    let r = self.broad.apply(bp, bop)?;
                    self.dirty = false;
                    return Ok(r);
                }
                BroadOp::Overlaps => return self.pairs(bp, false),
                BroadOp::Filtered(_) | BroadOp::Ray(..) => {
                    // The unfiltered detection first (it rebuilds what is
                    // due, as the model tracks); then the filtered forms
                    // on the rebuilt tree, judged by the shared model.
                    let r = self.pairs(bp, false)?;
                    if r.is_ok() {
                        let _ = self.broad.apply(bp, bop)?;
                    }
                    return Ok(r);
                }
                BroadOp::Query(s) => {
                    let q = self.broad.resolve(s);
                    let want = box_error(&q).map_or_else(|| self.refresh_result(), Err);
                    let r = if want.is_err() && box_error(&q).is_none() {
                        // A failed rebuild: the shared model allows no such
                        // error; judged here.
                        let mut hits = 0;
                        let r = bp.query(&q, |_| hits += 1);
                        ensure!(hits == 0, "a refused query reported {hits} ids");
                        r
                    } else {
                        self.broad.apply(bp, bop)?
                    };
                    ensure!(r == want, "query {q:?} = {r:?}, want {want:?}");
                    if r.is_ok() {
                        self.dirty = false;
                    }
                    return Ok(r);
                }
            },
            KdOp::Nudge(id, delta, exp) => {
                let b = nudged(self.broad.get(*id), delta, *exp);
                let want = self.update_result(*id, &b);
                let r = self
                    .broad
                    .apply(bp, &BroadOp::Update(*id, BoxSpec::Exact(b)))?;
                ensure!(r == want, "nudge({id}) to {b:?} = {r:?}, want {want:?}");
                r
            }
            KdOp::Pairs => return self.pairs(bp, true),
            KdOp::SetConfig(c) => {
                let cfg = make_config::<B, K>(c)?;
                bp.set_config(cfg.config);
                self.cfg = cfg;
                Ok(())
            }
        };
        // A change accepted: the next detection rebuilds.
        if r.is_ok() {
            self.dirty = true;
        }
        Ok(r)
    }

    /// Pair detection; with `modes`, every candidate mode too.
    fn pairs<K: LocCode>(&mut self, bp: &mut VecKd<B, K>, modes: bool) -> Result<Outcome, String> {
        if let Err(e) = self.refresh_result() {
            let mut n = 0;
            let r = bp.for_each_overlap(|_, _| n += 1);
            ensure!(
                r == Err(e) && n == 0,
                "for_each_pair = {r:?} ({n} pairs), want {e:?}"
            );
            if modes {
                for mode in [Candidates::Raw, Candidates::Unique, Candidates::Exact] {
                    let r = bp.for_each_candidate_pair(mode, |_, _| n += 1);
                    ensure!(r == Err(e) && n == 0, "{mode:?} = {r:?} ({n}), want {e:?}");
                }
            }
            for q in self.broad.slots.iter().flatten() {
                let r = bp.query(q, |_| n += 1);
                ensure!(
                    r == Err(e) && n == 0,
                    "query {q:?} = {r:?} ({n}), want {e:?}"
                );
            }
            return Ok(Err(e));
        }
        // Determinism, the model's pairs, every stored box as a query.
        let r = self.broad.apply(bp, &BroadOp::Overlaps)?;
        let mut ex = Vec::new();
        let r2 = bp.for_each_candidate_pair(Candidates::Exact, |a, b| ex.push((a, b)));
        ensure!(
            r.is_ok() && r2.is_ok(),
            "for_each_pair = {r:?}, exact candidates {r2:?}"
        );
        self.dirty = false;
        if modes {
            let (mut raw, mut uni) = (Vec::new(), Vec::new());
            let r1 = bp.for_each_candidate_pair(Candidates::Raw, |a, b| raw.push((a, b)));
            let r2 = bp.for_each_candidate_pair(Candidates::Unique, |a, b| uni.push((a, b)));
            ensure!(r1.is_ok() && r2.is_ok(), "raw {r1:?}, unique {r2:?}");
            check_candidates(&raw, bp.tree().count_raw(), &uni, &ex, &self.broad.pairs())?;
        }
        Ok(Ok(()))
    }

    /// Everything the model predicts, on a clone rebuilt by `for_each_pair`
    /// (the structure keeps its pending changes): the shared model's
    /// `check` (`validate`, capacity, count, `get` of every id), the pairs
    /// (or the failed rebuild's error), `validate()` after the rebuild, and
    /// the stats and records ([`check_built`](Self::check_built)).
    ///
    /// # Errors
    /// A message naming what differs.
    pub fn check<K: LocCode>(&self, bp: &VecKd<B, K>) -> Result<(), String> {
        let mut c = bp.clone();
        self.broad.check(&mut c)?;
        let mut raw = Vec::new();
        let r = c.for_each_overlap(|a, b| raw.push((a, b)));
        match self.refresh_result() {
            Err(e) => ensure!(
                r == Err(e) && raw.is_empty(),
                "pairs of a clone: {r:?}, want {e:?}"
            ),
            Ok(()) => {
                ensure!(r.is_ok(), "pairs of a clone: {r:?}");
                check_pairs(&raw, &self.broad.pairs())
                    .map_err(|e| format!("pairs of a rebuilt clone: {e}"))?;
                c.validate()
                    .map_err(|e| format!("validate after a rebuild: {e}"))?;
                self.check_built(&c)?;
            }
        }
        Ok(())
    }

    /// The stats and records of a rebuilt structure against the model:
    /// counts, depth and bits, one record per box without splitting, each
    /// stored id with exactly `pieces()` records of distinct pieces,
    /// `split_elements`, a cell for every key; with a dyadic fixed root the
    /// frame is that root and `clamped` counts the boxes reaching outside.
    ///
    /// # Errors
    /// A message naming what differs.
    pub fn check_built<K: LocCode>(&self, bp: &VecKd<B, K>) -> Result<(), String> {
        let n = self.broad.len();
        let st = bp.stats();
        let t = bp.tree();
        let recs = t.records();
        let d = dim::<B>();
        ensure!(st.elements == n, "stats {st:?}, {n} boxes");
        ensure!(
            st.records == recs.len(),
            "stats {st:?}, {} records",
            recs.len()
        );
        ensure!(
            st.records >= n && st.records <= 8 * n && st.records <= self.records,
            "stats {st:?}, {n} boxes"
        );
        ensure!(st.split_elements + st.unsplit_for_room <= n, "stats {st:?}");
        ensure!(st.clamped <= n, "stats {st:?}");
        ensure!(st.depth == d as u32 * st.bits_per_axis, "stats {st:?}");
        ensure!(st.bits_per_axis <= K::max_bits_per_axis(d), "stats {st:?}");
        if !self.cfg.reuse {
            ensure!(!st.reused, "reused without temporal reuse: {st:?}");
        }
        if self.cfg.config.split() == Split::None {
            ensure!(st.records == n, "no split: one record per box, {st:?}");
            ensure!(st.split_elements == 0, "no split: {st:?}");
        }
        let cap = self.broad.capacity();
        let mut count = vec![0usize; cap];
        let mut seen = vec![0u16; cap];
        for r in recs {
            let id = r.id() as usize;
            ensure!(
                id < cap && self.broad.slots[id].is_some(),
                "record of absent id {id}"
            );
            ensure!(r.piece() < 8, "piece of {r:?}");
            count[id] += 1;
            ensure!(seen[id] & (1 << r.piece()) == 0, "piece twice: {r:?}");
            seen[id] |= 1 << r.piece();
            ensure!(
                t.cell(r.key).is_some() || t.frame().is_none(),
                "no cell for {r:?}"
            );
        }
        for r in recs {
            ensure!(count[r.id() as usize] == r.pieces(), "pieces of {r:?}");
        }
        let split = count.iter().filter(|&&c| c > 1).count();
        ensure!(split == st.split_elements, "{split} split, stats {st:?}");
        if n > 0 {
            // No frame only when the automatic root's corners overflow
            // `f32`: a fixed root always gives one.
            let frame = t.frame();
            ensure!(
                frame.is_some() || self.cfg.root.is_none(),
                "no frame, fixed root"
            );
            if let Some((_, bits)) = frame {
                ensure!(bits == st.bits_per_axis, "frame bits {bits}, stats {st:?}");
            }
            if let (Some(root), Some((fr, _)), true) = (self.cfg.root, frame, self.cfg.root_exact) {
                ensure!(same(&fr, &root), "frame {fr:?} != root {root:?}");
                let out = self
                    .broad
                    .slots
                    .iter()
                    .flatten()
                    .filter(|b| !inside(*b, &root))
                    .count();
                ensure!(st.clamped == out, "{out} boxes outside, stats {st:?}");
            }
        }
        Ok(())
    }

    /// Checks the model, then applies every op, stopping at the first
    /// failure.
    ///
    /// # Errors
    /// The first failure, with its index.
    pub fn run<K: LocCode>(&mut self, bp: &mut VecKd<B, K>, ops: &[KdOp<B>]) -> Result<(), String> {
        self.check(bp).map_err(|e| format!("before any op: {e}"))?;
        for (k, op) in ops.iter().enumerate() {
            let _ = self.apply(bp, op).map_err(|e| format!("op {k}: {e}"))?;
        }
        Ok(())
    }
}

mod fuzzing {
    use super::*;
    use arbitrary::{Arbitrary, Result, Unstructured};

    impl<'a, B: TestBox> Arbitrary<'a> for KdOp<B> {
        fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
            Ok(match u.int_in_range(0u8..=23)? {
                0..=15 => KdOp::Broad(u.arbitrary()?),
                16..=19 => {
                    let id = if u.ratio(1u8, 32)? {
                        u32::MAX
                    } else {
                        u.int_in_range(0..=crate::model::IDS - 1)?
                    };
                    KdOp::Nudge(id, u.arbitrary()?, u.arbitrary()?)
                }
                20..=21 => KdOp::Pairs,
                _ => KdOp::SetConfig(u.arbitrary()?),
            })
        }
    }
}
