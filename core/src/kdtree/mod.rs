//! Linear kd-tree broad phase (Poirrier 2009): no tree in memory, only an
//! array of (locational code, element) records sorted in prefix order and
//! swept once.
//!
//! # How it works
//!
//! 1. **Frame** (§5.2, §7.3): a root cell, given or taken from the scene's
//!    bounds, and `b` bits per axis, given or chosen from the mean box size.
//!    Each coordinate is quantised to `b` bits; the cuts of the tree are the
//!    bits of the quantised coordinates, axis 0 first, interleaved (Morton).
//! 2. **Codes** (§5.3): a box's node is the longest common prefix of its two
//!    corners' codes; its key also records the prefix length (see
//!    [`LocCode`]).
//! 3. **Splitting** (§4): a box is cut at most once per axis, along the first
//!    cutting plane each piece crosses, where that lowers the total volume of
//!    the enclosing cells by more than a factor 2³ by default
//!    ([`Split::DEFAULT`]; the paper's rule, any reduction, is
//!    [`Split::PAPER`]). Up to 8 records per box.
//! 4. **Sort** (§5.4): records in prefix order: a node before the nodes below
//!    it. LSD radix sort over a scratch buffer (sort key: the path, then the
//!    node depth in just enough bits), or `sort_unstable`
//!    ([`SortAlgo`]); with [`KdConfig::with_temporal_reuse`], the previous
//!    order is kept and repaired by a bounded insertion sort when boxes move
//!    little (§7.1). Where the sort key fits the code type (`u32` codes up
//!    to depth 27, `u64` up to 58: the path less its always-zero lowest
//!    bit, then the depth), the serial build writes the sort key itself in
//!    each record's key, so a digit is a shift and a mask, and the pass over
//!    the top digit writes the node keys back.
//! 5. **Compact boxes**: once sorted, the scratch buffer is free; it
//!    receives one compact box per record, at the record's index (the box
//!    on a grid `2^k` times finer than the cells, two words of one lane per
//!    axis, packed into the record's fields: 15 bits per coordinate with
//!    `u64` codes in 3D, 9 with `u32`, 20 with `u128`). This is the one pass
//!    that reads the caller's boxes in record order (in batches, so that
//!    their cache misses overlap).
//! 6. **Sweep** (§5.5): each record is paired with the records that follow
//!    it while their nodes lie inside its node. [`Candidates`] selects raw
//!    candidates with duplicates (the paper's kd-tree-1), unique candidates
//!    (kd-tree-2), or exact overlapping pairs. The unique and exact modes
//!    read the records and their compact boxes in order: the exact test of a
//!    candidate is one subtraction per word over all axes at once (guard
//!    bits), and the caller's boxes are read only where the fine grid leaves
//!    it open (equal fine coordinates). When the cells need more bits than a
//!    compact box has (deep `u64` trees over 15 bits per axis in 3D), the
//!    sweep reads the boxes by id as before.
//!
//! # Duplicates without memory
//!
//! A pair of split boxes can meet in several pairs of pieces. The unique and
//! exact modes report a pair only from the two pieces that contain the lowest
//! quantised corner of the two boxes' intersection; the pieces of a box
//! partition its quantised range, so exactly one piece of each box contains
//! that point, and the sweep meets that pair of pieces because both their
//! nodes contain it. No list of pairs is kept.
//!
//! # Out-of-root boxes
//!
//! Coordinates are clamped to the root cell after quantisation. Clamping is
//! monotone, so boxes that overlap still get nested nodes and no pair is
//! lost; boxes far outside the root pile up in the boundary cells and cost
//! speed, never correctness. [`KdStats::clamped`] counts them.
//!
//! # Parallel forms
//!
//! [`LinearKdTree::par_build`] (and the rebuild inside
//! [`KdBroadPhase`]'s `par_for_each_overlap`) runs the build as tasks on an
//! [`Executor`](crate::exec::Executor), with the same records, frame and
//! stats as [`LinearKdTree::build`] (but [`KdStats::sort_passes`]): the
//! validation and bounds, the codes (per-task stretches of the scratch
//! buffer packed in order when the buffers hold 8 records per box, a
//! counting pass otherwise), and from 2¹⁶ records a parallel radix sort
//! (each chunk counting-sorts itself by the top 8 varying bits of the sort
//! key, destination tasks gather their digits' segments into disjoint output
//! ranges, then every bucket is radix-sorted on its own; stable, so the
//! serial order). Serial: the coding when the buffers cannot hold every
//! box's full split (which boxes stay whole depends on the records before
//! them), [`SortAlgo::Comparison`] (unstable: its tie order cannot be
//! reproduced in pieces), the bounded insertion sort of temporal reuse (its
//! keys are recomputed in parallel), and the edge sum that chooses the bits
//! in the rare case where the parallel sum's rounding leaves the choice
//! open. [`LinearKdTree::par_for_each_candidate_pair`] and
//! `par_for_each_overlap` cut the sweep into one task per 4096 boxes (at
//! most 256) of near-equal work: a record's work is one step plus its run
//! (the records below its node, found by a galloping search) when that run
//! is long, and a cut may fall inside the run of a box high in the tree. One sink per task; the sinks in order
//! hold the serial pairs in the serial order. Stack: about 45 KiB on the
//! calling thread (per-task results, the sweep's cuts and the sort's
//! 32 × 256 histograms).
//!
//! # Memory
//!
//! Two record buffers of `R` records (records and sort scratch, which then
//! holds the compact boxes), each record `size_of::<KdRecord<K>>()`: 8 bytes
//! with `u32` codes, 16 with `u64`, 32 with `u128`; plus a 200-byte struct. With splitting, a box takes 1 to 8
//! records (see [`KdStats::records`]); a build that would need more records
//! than the buffers hold splits fewer boxes instead of failing, so `R` equal
//! to the number of boxes always works.

mod broad;
mod code;
mod pack;
mod par;
mod plan;
mod ray;
mod sort;

/// The crate's one candidate vocabulary, re-exported where the tree uses it.
pub use crate::traits::Candidates;
pub use broad::{KdBroadPhase, KdSlot};
pub use code::LocCode;

use core::marker::PhantomData;

use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;
use plan::{Frame, MAX_PIECES, Splitter};

/// Most boxes one tree holds: ids are stored in 26 bits of a record.
pub const MAX_ELEMENTS: usize = 1 << 26;

/// One record: a node key and the piece of a box it holds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KdRecord<K> {
    /// The node key (see [`LocCode`]).
    pub key: K,
    /// `id << 6 | (pieces - 1) << 3 | piece`.
    pub item: u32,
}

impl<K: LocCode> Default for KdRecord<K> {
    /// The unused value, [`KdRecord::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<K: LocCode> KdRecord<K> {
    /// An unused record.
    pub const EMPTY: Self = Self {
        key: K::ZERO,
        item: 0,
    };

    #[inline(always)]
    fn new(key: K, id: u32, pieces: usize, piece: u8) -> Self {
        Self {
            key,
            item: (id << 6) | (((pieces - 1) as u32) << 3) | piece as u32,
        }
    }

    /// The box's id.
    #[inline(always)]
    pub fn id(&self) -> u32 {
        self.item >> 6
    }

    /// How many records the box has.
    #[inline(always)]
    pub fn pieces(&self) -> usize {
        ((self.item >> 3) & 7) as usize + 1
    }

    /// Which piece of the box this is: bit `a` is set for the upper side of
    /// the cut across axis `a` (0 if the box is not split).
    #[inline(always)]
    pub fn piece(&self) -> u8 {
        (self.item & 7) as u8
    }
}

/// Box splitting policy (§4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Split {
    /// One record per box.
    None,
    /// Cut each box at most once per axis where the cuts lower the total
    /// volume of the enclosing cells by more than a factor
    /// `2^min_gain_log2`. `min_gain_log2 = 0` is the paper's rule: any
    /// reduction (Fig. 7 splits are skipped).
    Volume {
        /// Required gain, as a power of two (0..=32).
        min_gain_log2: u8,
    },
}

impl Split {
    /// The paper's rule: any reduction of the cells' volume (§4).
    pub const PAPER: Self = Self::Volume { min_gain_log2: 0 };

    /// The default of [`KdConfig::DEFAULT`]: cuts that divide the cells'
    /// volume by more than 8. On the settling spheres at 10⁶ (one core) it
    /// makes 2.05 records per box instead of the paper's 5.95 and takes the
    /// exact step from about 480 to 275 ms: the boxes the paper's rule cuts
    /// for a small gain cost more records than the candidates they save.
    /// The pairs are the same with every rule.
    pub const DEFAULT: Self = Self::Volume { min_gain_log2: 3 };
}

/// How records are sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum SortAlgo {
    /// LSD radix sort, 8-bit digits of the rank, over the scratch buffer.
    Radix,
    /// `slice::sort_unstable_by_key` (no scratch used).
    Comparison,
}

/// Configuration of a [`LinearKdTree`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(
    feature = "serde",
    serde(
        try_from = "KdConfigFields<B>",
        into = "KdConfigFields<B>",
        bound(
            serialize = "B: BoundingBox + serde::Serialize",
            deserialize = "B: BoundingBox + serde::Deserialize<'de>"
        )
    )
)]
pub struct KdConfig<B> {
    split: Split,
    octree: bool,
    bits: u8,
    root: Option<B>,
    sort: SortAlgo,
    reuse: bool,
    copies: bool,
}

impl<B: BoundingBox> KdConfig<B> {
    /// Volume splitting with a gain of 2³ ([`Split::DEFAULT`]; the paper's
    /// rule is [`Split::PAPER`]), kd-tree cells, root and bits from the
    /// scene, radix sort, no temporal reuse.
    pub const DEFAULT: Self = Self {
        split: Split::DEFAULT,
        octree: false,
        bits: 0,
        root: None,
        sort: SortAlgo::Radix,
        reuse: false,
        copies: true,
    };

    /// The splitting policy.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if `min_gain_log2 > 32`.
    pub const fn with_split(mut self, split: Split) -> Result<Self, Error> {
        if let Split::Volume { min_gain_log2 } = split
            && min_gain_log2 > 32
        {
            return Err(Error::InvalidConfig {
                field: "split.min_gain_log2",
            });
        }
        self.split = split;
        Ok(self)
    }

    /// Octree cells: every node depth truncated to a multiple of the
    /// dimension (§5.3), so each cell is cut across all axes at once.
    pub const fn with_octree(mut self, octree: bool) -> Self {
        self.octree = octree;
        self
    }

    /// Bits per axis (1 up to [`LocCode::max_bits_per_axis`] of the code
    /// type, checked at build), or 0 to choose from the scene: the root's
    /// longest edge over the mean box edge, rounded up, plus one.
    pub const fn with_bits_per_axis(mut self, bits: u8) -> Self {
        self.bits = bits;
        self
    }

    /// A fixed root cell (each edge positive and finite), or `None` for the
    /// bounding box of the boxes at each build, made cubic.
    ///
    /// # Errors
    /// [`Error::NonFinite`] or [`Error::InvalidConfig`] for a root that is not
    /// finite or has an edge that is not positive.
    pub fn with_root(mut self, root: Option<B>) -> Result<Self, Error> {
        if let Some(r) = root {
            r.check()?;
            for a in 0..B::Point::DIM {
                let e = r.max().coord(a) as f64 - r.min().coord(a) as f64;
                if e <= 0.0 || !e.is_finite() {
                    return Err(Error::InvalidConfig { field: "root" });
                }
            }
        }
        self.root = root;
        Ok(self)
    }

    /// The packed box copies (on by default): after each build, a compact
    /// copy of every record's box in sweep order, written to the scratch
    /// buffer, which the [`Candidates::Exact`] and [`Candidates::Unique`]
    /// sweeps test instead of reading the caller's boxes by id. The
    /// [`Candidates::Raw`] sweep never uses them: a caller that only sweeps
    /// raw turns them off and saves the copy pass (about 23 ns per record
    /// at 10⁶ boxes). Off, the exact and unique sweeps read the caller's
    /// boxes; the pairs are the same either way.
    pub const fn with_box_copies(mut self, on: bool) -> Self {
        self.copies = on;
        self
    }

    /// The sort.
    pub const fn with_sort(mut self, sort: SortAlgo) -> Self {
        self.sort = sort;
        self
    }

    /// Temporal reuse (§7.1): keep the previous sorted records, recompute
    /// their keys in place and repair the order by insertion sort, falling
    /// back to a full build when a box's split changed shape, the frame
    /// changed, or the repair would exceed `2·records + 1024` moves. With an
    /// automatic root, the previous frame is kept while every box stays
    /// inside it and fills at least half of it.
    pub const fn with_temporal_reuse(mut self, reuse: bool) -> Self {
        self.reuse = reuse;
        self
    }

    /// The splitting policy in use.
    pub const fn split(&self) -> Split {
        self.split
    }

    /// Whether cells are octree cells.
    pub const fn octree(&self) -> bool {
        self.octree
    }

    /// Bits per axis (0: chosen from the scene).
    pub const fn bits_per_axis(&self) -> u8 {
        self.bits
    }

    /// The fixed root cell, if any.
    pub const fn root(&self) -> Option<B> {
        self.root
    }

    /// The sort in use.
    pub const fn sort(&self) -> SortAlgo {
        self.sort
    }

    /// Whether temporal reuse is on.
    pub const fn temporal_reuse(&self) -> bool {
        self.reuse
    }

    /// Whether the packed box copies are on.
    pub const fn box_copies(&self) -> bool {
        self.copies
    }

    fn min_gain(&self) -> Option<u32> {
        match self.split {
            Split::None => None,
            Split::Volume { min_gain_log2 } => Some(min_gain_log2 as u32),
        }
    }
}

/// [`KdConfig`]'s fields by their setters' names: a configuration
/// deserializes through its checked setters.
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename = "KdConfig")]
struct KdConfigFields<B> {
    split: Split,
    octree: bool,
    bits_per_axis: u8,
    root: Option<B>,
    sort: SortAlgo,
    temporal_reuse: bool,
    box_copies: bool,
}

#[cfg(feature = "serde")]
impl<B: BoundingBox> From<KdConfig<B>> for KdConfigFields<B> {
    fn from(c: KdConfig<B>) -> Self {
        Self {
            split: c.split,
            octree: c.octree,
            bits_per_axis: c.bits,
            root: c.root,
            sort: c.sort,
            temporal_reuse: c.reuse,
            box_copies: c.copies,
        }
    }
}

#[cfg(feature = "serde")]
impl<B: BoundingBox> TryFrom<KdConfigFields<B>> for KdConfig<B> {
    type Error = Error;
    fn try_from(f: KdConfigFields<B>) -> Result<Self, Error> {
        Ok(Self::DEFAULT
            .with_split(f.split)?
            .with_octree(f.octree)
            .with_bits_per_axis(f.bits_per_axis)
            .with_root(f.root)?
            .with_sort(f.sort)
            .with_temporal_reuse(f.temporal_reuse)
            .with_box_copies(f.box_copies))
    }
}

/// The phases of a build, as reported to
/// [`LinearKdTree::build_observed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum BuildPhase {
    /// Boxes checked, bounds and frame chosen.
    Validated,
    /// Boxes split and keyed (records written, or rekeyed in place).
    Coded,
    /// Records in prefix order: the build is complete. A reused build that
    /// falls back to a fresh one reports `Coded` twice.
    Sorted,
}

/// What the last build did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KdStats {
    /// Boxes in the tree.
    pub elements: usize,
    /// Records (pieces) in the tree.
    pub records: usize,
    /// Boxes split into more than one piece.
    pub split_elements: usize,
    /// Boxes the policy would have split but the record buffers had no room
    /// for.
    pub unsplit_for_room: usize,
    /// Boxes reaching outside the root cell (clamped).
    pub clamped: usize,
    /// Bits per axis.
    pub bits_per_axis: u32,
    /// Tree depth in bits.
    pub depth: u32,
    /// Radix passes run (digits shared by all records are skipped).
    pub sort_passes: u32,
    /// The build repaired the previous order instead of sorting afresh.
    pub reused: bool,
    /// Insertion-sort moves of a reused build.
    pub moves: usize,
}

/// A source of boxes by id: a slice (every id present) or a broad phase's
/// slots (some empty).
pub(crate) trait BoxSource<B> {
    /// Ids are below this.
    fn id_bound(&self) -> usize;
    /// The box of `id`, if present.
    fn get(&self, id: usize) -> Option<B>;
}

impl<B: BoundingBox> BoxSource<B> for [B] {
    #[inline(always)]
    fn id_bound(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn get(&self, id: usize) -> Option<B> {
        <[B]>::get(self, id).copied()
    }
}

/// The new key of one record of a reused build (temporal reuse), written in
/// place; `None` when its box is gone or its split changed shape. Also says
/// whether the record counts as a clamped box and as a split box (each box
/// is counted at its piece 0).
#[inline(always)]
pub(crate) fn rekey_record<B: BoundingBox, K: LocCode, S: BoxSource<B> + ?Sized>(
    src: &S,
    frame: &Frame,
    gain: Option<u32>,
    splitter: &mut Splitter<K>,
    r: &mut KdRecord<K>,
) -> Option<(bool, bool)> {
    let b = src.get(r.id() as usize)?;
    let q = frame.qbox::<K, B>(&b);
    let count = r.pieces();
    let clamped = r.piece() == 0 && !frame.inside(&b);
    let key = match gain {
        None => frame.whole_key::<K>(&q).0,
        Some(g) => {
            let pieces = splitter.split(frame, &q, g);
            if pieces.len() != count {
                return None;
            }
            pieces.iter().find(|p| p.index == r.piece())?.key
        }
    };
    r.key = key;
    Some((clamped, count > 1 && r.piece() == 0))
}

/// A place in the sweep's sequence of steps: `(i, u)` is step `u` of
/// record `i`, where step 0 is the record's own (no pair) and step `u ≥ 1`
/// meets record `i + u`. The serial sweep runs from `(0, 0)` to
/// `(len, 0)`.
pub(crate) type SweepAt = (usize, usize);

/// The sweep's steps from `from` up to (not including) `to` (see
/// [`SweepAt`]): the pairs of the full sweep met there, in the same order.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn sweep_records<
    B: BoundingBox,
    K: LocCode,
    S: BoxSource<B> + ?Sized,
    F: FnMut(u32, u32),
>(
    recs: &[KdRecord<K>],
    packed: Option<&[KdRecord<K>]>,
    frame: &Frame,
    src: &S,
    mode: Candidates,
    from: SweepAt,
    to: SweepAt,
    mut f: F,
) {
    let len = recs.len();
    if mode != Candidates::Raw
        && let Some(pk) = packed
        && let Some(k) = pack::fine_shift::<K>(frame)
        && pk.len() == len
    {
        sweep_packed::<B, K, S, F>(recs, pk, k, frame, src, mode, from, to, f);
        return;
    }
    let (ia, ua) = from;
    let (ib, ub) = to;
    let end = if ub == 0 { ib } else { ib.saturating_add(1) }.min(len);
    for i in ia.min(end)..end {
        let r = &recs[i];
        let a = r.id();
        let first = i + 1 + if i == ia { ua.saturating_sub(1) } else { 0 };
        let stop = if i == ib {
            i.saturating_add(ub).min(len)
        } else {
            len
        };
        let rest = recs.get(first..stop.max(first)).unwrap_or(&[]);
        match mode {
            Candidates::Raw => {
                for s in rest {
                    if !K::contains(r.key, s.key) {
                        break;
                    }
                    if s.id() != a {
                        f(a, s.id());
                    }
                }
            }
            Candidates::Unique | Candidates::Exact => {
                if rest.first().is_none_or(|s| !K::contains(r.key, s.key)) {
                    continue;
                }
                let Some(ba) = src.get(a as usize) else {
                    continue;
                };
                let qa = frame.qbox::<K, B>(&ba);
                for s in rest {
                    if !K::contains(r.key, s.key) {
                        break;
                    }
                    let b = s.id();
                    if b == a {
                        continue;
                    }
                    let Some(bb) = src.get(b as usize) else {
                        continue;
                    };
                    if mode == Candidates::Exact && !ba.overlaps(&bb) {
                        continue;
                    }
                    let single = r.pieces() == 1 && s.pieces() == 1;
                    if single && mode == Candidates::Exact {
                        f(a, b);
                        continue;
                    }
                    let qb = frame.qbox::<K, B>(&bb);
                    if !qa.overlaps(&qb, B::Point::DIM) {
                        continue;
                    }
                    // The pair belongs to the pieces holding the lowest
                    // quantised point of the intersection. A box's
                    // pieces have disjoint cells, so those are the ones
                    // whose cells hold it; `s`'s cell lies in `r`'s, so
                    // one test covers both.
                    if single || K::contains(s.key, frame.point_key(&qa.meet_corner(&qb))) {
                        f(a, b);
                    }
                }
            }
        }
    }
}

/// [`sweep_records`] of the unique and exact modes over the compact boxes
/// `pk` (`pk[i]` is `recs[i]`'s, fine grid `k` bits finer than the cells;
/// see `pack`): the same pairs in the same order, reading `src` only where
/// the compact boxes leave the exact test open.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn sweep_packed<B: BoundingBox, K: LocCode, S: BoxSource<B> + ?Sized, F: FnMut(u32, u32)>(
    recs: &[KdRecord<K>],
    pk: &[KdRecord<K>],
    k: u32,
    frame: &Frame,
    src: &S,
    mode: Candidates,
    from: SweepAt,
    to: SweepAt,
    mut f: F,
) {
    let dim = B::Point::DIM;
    let exact = mode == Candidates::Exact;
    let g = pack::guards::<K>(dim);
    let len = recs.len();
    let (ia, ua) = from;
    let (ib, ub) = to;
    let end = if ub == 0 { ib } else { ib.saturating_add(1) }.min(len);
    for i in ia.min(end)..end {
        let r = &recs[i];
        let a = r.id();
        let first = i + 1 + if i == ia { ua.saturating_sub(1) } else { 0 };
        let stop = if i == ib {
            i.saturating_add(ub).min(len)
        } else {
            len
        };
        let stop = stop.max(first);
        let (Some(rest), Some(prest)) = (recs.get(first..stop), pk.get(first..stop)) else {
            continue;
        };
        if rest.first().is_none_or(|s| !K::contains(r.key, s.key)) {
            continue;
        }
        let Some(ca) = pk.get(i).map(pack::unpack) else {
            continue;
        };
        let single_a = r.pieces() == 1;
        for (s, cs) in rest.iter().zip(prest) {
            if !K::contains(r.key, s.key) {
                break;
            }
            let cb = pack::unpack(cs);
            // Exact: most candidates end here, on two words.
            if exact && !pack::meets(&ca, &cb, g) {
                continue;
            }
            let b = s.id();
            if b == a {
                continue;
            }
            if exact {
                match pack::verdict::<K>(&ca, &cb, dim) {
                    pack::Verdict::Apart => continue,
                    pack::Verdict::Overlap => {}
                    pack::Verdict::Open => {
                        let (Some(ba), Some(bb)) = (src.get(a as usize), src.get(b as usize))
                        else {
                            continue;
                        };
                        if !ba.overlaps(&bb) {
                            continue;
                        }
                    }
                }
            } else if !(0..dim).all(|x| {
                (ca.lo_at::<K>(x, dim) >> k) <= (cb.hi_at::<K>(x, dim) >> k)
                    && (cb.lo_at::<K>(x, dim) >> k) <= (ca.hi_at::<K>(x, dim) >> k)
            }) {
                continue;
            }
            if single_a && s.pieces() == 1 {
                f(a, b);
                continue;
            }
            // The pair belongs to the pieces holding the lowest quantised
            // point of the intersection (see `sweep_records`).
            let mut meet = [0u64; 3];
            for (x, m) in meet.iter_mut().enumerate().take(dim) {
                *m = ca.lo_at::<K>(x, dim).max(cb.lo_at::<K>(x, dim)) >> k;
            }
            if K::contains(s.key, frame.point_key(&meet)) {
                f(a, b);
            }
        }
    }
}

/// A linear kd-tree over caller-provided record buffers, built from a slice
/// of boxes (box `i` has id `i`) each step.
///
/// For a broad phase with insert / update / remove by id, see
/// [`KdBroadPhase`].
///
/// # Example
///
/// ```
/// use spatium::{Aabb3, Vec3};
/// use spatium::kdtree::{Candidates, KdConfig, KdRecord, LinearKdTree};
///
/// let boxes = [
///     Aabb3::new(Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 1.0, 1.0)).unwrap(),
///     Aabb3::new(Vec3::new(0.5, 0.5, 0.5), Vec3::new(2.0, 2.0, 2.0)).unwrap(),
///     Aabb3::new(Vec3::new(5.0, 5.0, 5.0), Vec3::new(6.0, 6.0, 6.0)).unwrap(),
/// ];
/// let mut tree = LinearKdTree::<Aabb3, u64, _>::new(
///     [KdRecord::EMPTY; 24],
///     [KdRecord::EMPTY; 24],
///     KdConfig::DEFAULT,
/// );
/// tree.build(&boxes).unwrap();
/// let mut pairs = 0;
/// tree.for_each_candidate_pair(&boxes, Candidates::Exact, |a, b| {
///     assert_eq!((a.min(b), a.max(b)), (0, 1));
///     pairs += 1;
/// }).unwrap();
/// assert_eq!(pairs, 1);
/// ```
#[derive(Clone, Debug)]
pub struct LinearKdTree<B: BoundingBox, K: LocCode, R: Storage<KdRecord<K>>> {
    records: R,
    scratch: R,
    /// Records in use.
    nrec: usize,
    /// `scratch[..nrec]` holds the records' compact boxes (see `pack`).
    packed: bool,
    elements: usize,
    /// Exclusive bound of the ids of the last build.
    id_bound: usize,
    frame: Option<Frame>,
    config: KdConfig<B>,
    stats: KdStats,
    _k: PhantomData<K>,
}

impl<B: BoundingBox, K: LocCode, R: Storage<KdRecord<K>>> LinearKdTree<B, K, R> {
    /// An empty tree over two record buffers (records and sort scratch). The
    /// smaller length is the record capacity; it must be at least the number
    /// of boxes of a build (boxes split across planes take more records, or
    /// stay unsplit when there is no room: [`KdStats`] counts them).
    ///
    /// Never fails and allocates nothing; `const`, so it can initialise a
    /// `static`. The configuration is checked at the first build
    /// ([`Error::InvalidConfig`] names the field). Memory: `2R · r` bytes
    /// (`r` = 8 / 16 / 32 bytes per record for `u32` / `u64` / `u128`
    /// codes). See the type's example.
    pub const fn new(records: R, scratch: R, config: KdConfig<B>) -> Self {
        Self {
            records,
            scratch,
            nrec: 0,
            packed: false,
            elements: 0,
            id_bound: 0,
            frame: None,
            config,
            stats: KdStats {
                elements: 0,
                records: 0,
                split_elements: 0,
                unsplit_for_room: 0,
                clamped: 0,
                bits_per_axis: 0,
                depth: 0,
                sort_passes: 0,
                reused: false,
                moves: 0,
            },
            _k: PhantomData,
        }
    }

    /// Records the buffers hold.
    pub fn record_capacity(&self) -> usize {
        self.records
            .as_ref()
            .len()
            .min(self.scratch.as_ref().len())
            .min(u32::MAX as usize)
    }

    /// The configuration.
    pub fn config(&self) -> &KdConfig<B> {
        &self.config
    }

    /// Replaces the configuration and forgets the last build (as
    /// [`clear`](Self::clear)): the next build starts afresh.
    pub fn set_config(&mut self, config: KdConfig<B>) {
        self.config = config;
        self.clear();
    }

    /// Boxes in the last build.
    pub fn len(&self) -> usize {
        self.elements
    }

    /// `true` if the last build had no box.
    pub fn is_empty(&self) -> bool {
        self.elements == 0
    }

    /// The sorted records of the last build.
    pub fn records(&self) -> &[KdRecord<K>] {
        &self.records.as_ref()[..self.nrec]
    }

    /// The root cell and bits per axis of the last build.
    pub fn frame(&self) -> Option<(B, u32)> {
        let f = self.frame?;
        let lo = B::Point::from_fn(|a| f.origin[a] as f32);
        let hi = B::Point::from_fn(|a| (f.origin[a] + f.extent[a]) as f32);
        Some((B::try_new(lo, hi).ok()?, f.bits))
    }

    /// The real-space cell of a node key of the last build, and its depth.
    pub fn cell(&self, key: K) -> Option<(B, u32)> {
        let f = self.frame?;
        if key == K::ZERO || key.tz() > f.depth {
            return None;
        }
        let len = K::key_len(key, f.depth);
        let dim = f.dim as usize;
        let mut lo = [0f64; 3];
        let mut size = f.extent;
        for t in 0..len {
            let a = t as usize % dim;
            size[a] *= 0.5;
            if K::path_bit(key, f.depth, t) {
                lo[a] += size[a];
            }
        }
        let min = B::Point::from_fn(|a| (f.origin[a] + lo[a]) as f32);
        let max = B::Point::from_fn(|a| (f.origin[a] + lo[a] + size[a]) as f32);
        Some((B::try_new(min, max).ok()?, len))
    }

    /// Forgets the last build.
    pub fn clear(&mut self) {
        self.invalidate();
        self.elements = 0;
        self.id_bound = 0;
        self.stats = KdStats::default();
    }

    fn invalidate(&mut self) {
        self.nrec = 0;
        self.packed = false;
        self.frame = None;
    }

    /// Builds the tree over `boxes` (box `i` has id `i`).
    ///
    /// # Errors
    /// [`Error::NonFinite`] or [`Error::InvertedBox`] for a bad box,
    /// [`Error::CapacityExceeded`] for more boxes than the record buffers or
    /// [`MAX_ELEMENTS`], [`Error::InvalidConfig`] for a bit count the code
    /// type cannot hold. On error the previous build is kept unchanged.
    ///
    /// # Cost
    /// `O(R)` with the radix sort ([`SortAlgo::Radix`], the default),
    /// `O(R log R)` with the comparison sort, for `R` records; no
    /// allocation. See the type's example.
    pub fn build(&mut self, boxes: &[B]) -> Result<(), Error> {
        self.build_from(boxes, |_| {})
    }

    /// [`build`](Self::build), calling `mark` as each phase ends, so that a
    /// caller with a clock can time the phases (the core has none).
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn build_observed<F: FnMut(BuildPhase)>(
        &mut self,
        boxes: &[B],
        mark: F,
    ) -> Result<(), Error> {
        self.build_from(boxes, mark)
    }

    pub(crate) fn build_from<S: BoxSource<B> + ?Sized, F: FnMut(BuildPhase)>(
        &mut self,
        src: &S,
        mut mark: F,
    ) -> Result<(), Error> {
        let dim = B::Point::DIM;
        let cap = self.record_capacity();
        // Pass 1: validate, count, bounds, mean size. Nothing changes yet.
        let mut n = 0usize;
        let mut lo = [f64::INFINITY; 3];
        let mut hi = [f64::NEG_INFINITY; 3];
        let mut edge_sum = 0f64;
        for id in 0..src.id_bound() {
            if let Some(b) = src.get(id) {
                b.check()?;
                n += 1;
                let (bl, bh) = (b.min(), b.max());
                for a in 0..dim {
                    lo[a] = lo[a].min(bl.coord(a) as f64);
                    hi[a] = hi[a].max(bh.coord(a) as f64);
                }
                edge_sum += b.longest_edge() as f64;
            }
        }
        if n > cap || n > MAX_ELEMENTS || src.id_bound() > MAX_ELEMENTS {
            return Err(Error::CapacityExceeded {
                capacity: cap.min(MAX_ELEMENTS),
            });
        }
        let frame = self.choose_frame(n, lo, hi, edge_sum)?;
        mark(BuildPhase::Validated);

        let reuse = self.config.reuse
            && self.frame == Some(frame)
            && self.elements == n
            && self.id_bound == src.id_bound()
            && n > 0;
        if reuse && self.rekey(src, &frame, &mut mark) {
            return Ok(());
        }
        self.fresh(src, frame, n, &mut mark);
        Ok(())
    }

    fn choose_frame(
        &self,
        n: usize,
        lo: [f64; 3],
        hi: [f64; 3],
        edge_sum: f64,
    ) -> Result<Frame, Error> {
        let dim = B::Point::DIM;
        let max_bits = K::max_bits_per_axis(dim);
        let bits_cfg = self.config.bits as u32;
        if bits_cfg > max_bits {
            return Err(Error::InvalidConfig { field: "bits" });
        }
        let (origin, extent) = match self.config.root {
            Some(r) => {
                let mut o = [0.0; 3];
                let mut e = [1.0; 3];
                for a in 0..dim {
                    o[a] = r.min().coord(a) as f64;
                    e[a] = r.max().coord(a) as f64 - o[a];
                }
                (o, e)
            }
            None => {
                if n == 0 {
                    ([0.0; 3], [1.0; 3])
                } else {
                    let mut side = 0f64;
                    for a in 0..dim {
                        side = side.max(hi[a] - lo[a]);
                    }
                    // A point set still needs a cell of positive size; the
                    // tiny margin keeps the upper corner inside.
                    let side = if side > 0.0 { side * (1.0 + 1e-6) } else { 1.0 };
                    let mut o = [0.0; 3];
                    o[..dim].copy_from_slice(&lo[..dim]);
                    (o, [side; 3])
                }
            }
        };
        let bits = if bits_cfg != 0 {
            bits_cfg
        } else {
            let mean = if n > 0 { edge_sum / n as f64 } else { 0.0 };
            let mut side = 0f64;
            for e in extent.iter().take(dim) {
                side = side.max(*e);
            }
            if mean > 0.0 {
                let ratio = side / mean;
                // ceil(log2(ratio)) + 1, in integer steps.
                let mut b = 1;
                while b < max_bits && ((1u64 << (b - 1)) as f64) < ratio {
                    b += 1;
                }
                b
            } else {
                max_bits
            }
        };
        let mut frame = Frame::new::<B>(origin, extent, bits, self.config.octree);
        // Temporal reuse keeps an automatic frame while every box stays
        // inside it and the scene still spans at least half of it.
        if self.config.reuse
            && self.config.root.is_none()
            && self.config.bits == 0
            && let Some(prev) = self.frame
        {
            let inside = (0..dim)
                .all(|a| lo[a] >= prev.origin[a] && hi[a] < prev.origin[a] + prev.extent[a]);
            if inside && n == self.elements && extent[0] * 2.0 >= prev.extent[0] {
                frame = prev;
            }
        }
        Ok(frame)
    }

    /// A full build: pieces of every box, then a sort.
    fn fresh<S: BoxSource<B> + ?Sized>(
        &mut self,
        src: &S,
        frame: Frame,
        n: usize,
        mark: &mut impl FnMut(BuildPhase),
    ) {
        let cap = self.record_capacity();
        let gain = self.config.min_gain();
        let mut stats = KdStats {
            elements: n,
            bits_per_axis: frame.bits,
            depth: frame.depth,
            ..KdStats::default()
        };
        let recs = &mut self.records.as_mut()[..cap];
        let mut written = 0usize;
        let mut seen = 0usize;
        let mut splitter = Splitter::<K>::new();
        // With the radix sort and a sort key that fits the code type, the
        // records hold their sort keys until sorted (each digit is then a
        // shift and a mask), and their node keys after.
        let direct = self.config.sort == SortAlgo::Radix
            && K::DIRECT_SORT
            && K::direct_sort_bits(frame.depth) <= K::BITS;
        let depth = frame.depth;
        let key_of = |k: K| if direct { K::to_sort_key(k, depth) } else { k };
        for id in 0..src.id_bound() {
            let Some(b) = src.get(id) else { continue };
            seen += 1;
            if !frame.inside(&b) {
                stats.clamped += 1;
            }
            let q = frame.qbox::<K, B>(&b);
            // Room left for this box after keeping one record for each box
            // still to come.
            let room = cap - written - (n - seen);
            let id = id as u32;
            if let Some(g) = gain {
                let pieces = splitter.split(&frame, &q, g);
                let count = pieces.len();
                if count <= room {
                    for p in pieces {
                        recs[written] = KdRecord::new(key_of(p.key), id, count, p.index);
                        written += 1;
                    }
                    if count > 1 {
                        stats.split_elements += 1;
                    }
                    continue;
                }
                stats.unsplit_for_room += 1;
            }
            recs[written] = KdRecord::new(key_of(frame.whole_key::<K>(&q).0), id, 1, 0);
            written += 1;
        }
        stats.records = written;
        mark(BuildPhase::Coded);
        match self.config.sort {
            SortAlgo::Radix => {
                let (recs, scratch) = (
                    &mut self.records.as_mut()[..written],
                    &mut self.scratch.as_mut()[..written],
                );
                let (in_scratch, passes, converted) = if direct {
                    sort::radix_direct(recs, scratch, depth)
                } else {
                    let (in_scratch, passes) = sort::radix(recs, scratch, depth);
                    (in_scratch, passes, true)
                };
                if in_scratch {
                    core::mem::swap(&mut self.records, &mut self.scratch);
                }
                if !converted {
                    for r in &mut self.records.as_mut()[..written] {
                        r.key = K::from_sort_key(r.key, depth);
                    }
                }
                stats.sort_passes = passes;
            }
            SortAlgo::Comparison => {
                sort::comparison(&mut self.records.as_mut()[..written], frame.depth);
            }
        }
        self.nrec = written;
        self.elements = n;
        self.id_bound = src.id_bound();
        self.frame = Some(frame);
        self.stats = stats;
        self.pack_boxes(src);
        mark(BuildPhase::Sorted);
    }

    /// Temporal reuse: new keys in place, then a bounded insertion sort.
    /// Returns `false` (records then unspecified, a fresh build follows) when
    /// some box's split changed shape or the repair is too long.
    fn rekey<S: BoxSource<B> + ?Sized>(
        &mut self,
        src: &S,
        frame: &Frame,
        mark: &mut impl FnMut(BuildPhase),
    ) -> bool {
        let gain = self.config.min_gain();
        let len = self.nrec;
        let recs = &mut self.records.as_mut()[..len];
        let mut clamped = 0;
        let mut split_elements = 0;
        let mut splitter = Splitter::<K>::new();
        for r in recs.iter_mut() {
            let Some((c, s)) = rekey_record(src, frame, gain, &mut splitter, r) else {
                return false;
            };
            clamped += c as usize;
            split_elements += s as usize;
        }
        mark(BuildPhase::Coded);
        let Some(moves) = sort::insertion(recs, frame.depth, 2 * len + 1024) else {
            return false;
        };
        self.stats = KdStats {
            elements: self.elements,
            records: len,
            split_elements,
            unsplit_for_room: self.stats.unsplit_for_room,
            clamped,
            bits_per_axis: frame.bits,
            depth: frame.depth,
            sort_passes: 0,
            reused: true,
            moves,
        };
        self.pack_boxes(src);
        mark(BuildPhase::Sorted);
        true
    }

    /// Writes the records' compact boxes to the scratch buffer (see
    /// `pack`); the sweep uses them when this succeeds.
    pub(crate) fn pack_boxes<S: BoxSource<B> + ?Sized>(&mut self, src: &S) {
        self.packed = false;
        let Some((frame, k, recs, out)) = self.pack_target() else {
            return;
        };
        self.packed = pack::pack::<B, K, S>(recs, out, &frame, k, src);
    }

    /// What a pack pass needs, serial or in tasks: the frame, the fine
    /// shift, the records and the scratch to write the copies into; `None`
    /// when the copies are turned off or cannot be made.
    #[allow(clippy::type_complexity)]
    pub(crate) fn pack_target(
        &mut self,
    ) -> Option<(Frame, u32, &[KdRecord<K>], &mut [KdRecord<K>])> {
        if !self.config.copies {
            return None;
        }
        let frame = self.frame?;
        let k = pack::fine_shift::<K>(&frame)?;
        let n = self.nrec;
        Some((
            frame,
            k,
            self.records.as_ref().get(..n)?,
            self.scratch.as_mut().get_mut(..n)?,
        ))
    }

    /// The compact boxes, when the last build wrote them.
    pub(crate) fn packed(&self) -> Option<&[KdRecord<K>]> {
        if self.packed {
            self.scratch.as_ref().get(..self.nrec)
        } else {
            None
        }
    }

    /// Calls `f(a, b)` for the pairs selected by `mode`. `boxes` must be the
    /// slice of the last build (the unique and exact modes test the compact
    /// copies the build made of it, and read `boxes` only for the rare test
    /// those leave open). For the kd-tree the modes are:
    ///
    /// * [`Candidates::Raw`]: every pair of records whose nodes are nested,
    ///   with duplicates when boxes are split (the paper's kd-tree-1). Pieces
    ///   of one box are never paired with each other.
    /// * [`Candidates::Unique`]: each pair of boxes whose quantised ranges
    ///   overlap, once: a superset of the overlapping pairs found with integer
    ///   tests only (the role of the paper's kd-tree-2 and its bounding-sphere
    ///   filter).
    /// * [`Candidates::Exact`]: each pair of overlapping boxes
    ///   ([`BoundingBox::overlaps`]), once.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if `boxes` is not as long as the slice of the
    /// last build.
    pub fn for_each_candidate_pair<F: FnMut(u32, u32)>(
        &self,
        boxes: &[B],
        mode: Candidates,
        f: F,
    ) -> Result<(), Error> {
        if boxes.len() != self.id_bound || boxes.len() != self.elements {
            return Err(Error::LengthMismatch {
                expected: self.elements,
                got: boxes.len(),
            });
        }
        self.sweep(boxes, mode, f);
        Ok(())
    }

    /// Number of raw candidates (kd-tree-1 pairs, duplicates included)
    /// without touching the boxes.
    pub fn count_raw(&self) -> u64 {
        let recs = self.records();
        let mut total = 0u64;
        for (i, r) in recs.iter().enumerate() {
            let id = r.id();
            for s in &recs[i + 1..] {
                if !K::contains(r.key, s.key) {
                    break;
                }
                total += (s.id() != id) as u64;
            }
        }
        total
    }

    pub(crate) fn sweep<S: BoxSource<B> + ?Sized, F: FnMut(u32, u32)>(
        &self,
        src: &S,
        mode: Candidates,
        f: F,
    ) {
        let Some(frame) = self.frame else { return };
        sweep_records::<B, K, S, F>(
            self.records(),
            self.packed(),
            &frame,
            src,
            mode,
            (0, 0),
            (self.nrec, 0),
            f,
        );
    }

    /// Calls `f(id)` once for every box of the last build overlapping
    /// `aabb`. `boxes` must be the slice of the last build.
    ///
    /// # Errors
    /// [`Error::NonFinite`] or [`Error::InvertedBox`] for a bad query box,
    /// [`Error::LengthMismatch`] as in
    /// [`for_each_candidate_pair`](Self::for_each_candidate_pair).
    pub fn query<F: FnMut(u32)>(&self, boxes: &[B], aabb: &B, f: F) -> Result<(), Error> {
        if boxes.len() != self.id_bound || boxes.len() != self.elements {
            return Err(Error::LengthMismatch {
                expected: self.elements,
                got: boxes.len(),
            });
        }
        aabb.check()?;
        self.query_in(boxes, aabb, f);
        Ok(())
    }

    pub(crate) fn query_in<S: BoxSource<B> + ?Sized, F: FnMut(u32)>(
        &self,
        src: &S,
        aabb: &B,
        mut f: F,
    ) {
        let Some(frame) = self.frame else { return };
        let recs = self.records();
        let qq = frame.qbox::<K, B>(aabb);
        let (key, whole_len) = frame.whole_key::<K>(&qq);
        let depth = frame.depth;
        let mut visit = |r: &KdRecord<K>| {
            let id = r.id();
            let Some(b) = src.get(id as usize) else {
                return;
            };
            if !b.overlaps(aabb) {
                return;
            }
            if r.pieces() > 1 {
                // Report the piece holding the lowest quantised point of the
                // intersection (see `sweep`).
                let x = frame.qbox::<K, B>(&b).meet_corner(&qq);
                if !K::contains(r.key, frame.point_key(&x)) {
                    return;
                }
            }
            f(id);
        };
        // The query's node and everything below it: one run of records.
        let rank = K::rank(key, depth);
        let start = recs.partition_point(|r| K::rank(r.key, depth) < rank);
        for r in &recs[start..] {
            if !K::contains(key, r.key) {
                break;
            }
            visit(r);
        }
        // Every node above it: one run per ancestor.
        let code = K::interleave(qq.lo, frame.dim as usize, frame.bits);
        let step = if frame.octree { frame.dim } else { 1 };
        let mut len = 0;
        while len < whole_len {
            let k = K::node_key(code, depth, len);
            let rk = K::rank(k, depth);
            let s = recs.partition_point(|r| K::rank(r.key, depth) < rk);
            for r in &recs[s..] {
                if r.key != k {
                    break;
                }
                visit(r);
            }
            len += step;
        }
    }

    /// Checks the records against the boxes they were built from.
    pub(crate) fn validate_with<S2: BoxSource<B> + ?Sized>(
        &self,
        src: &S2,
    ) -> Result<(), Corruption> {
        const S: &str = "LinearKdTree";
        // Capacity, prefix order and key ranges first.
        self.validate()?;
        let recs = self.records();
        let Some(frame) = self.frame else {
            return Ok(());
        };
        let gain = self.config.min_gain();
        let mut splitter = Splitter::<K>::new();
        // Each box's records count 840/pieces (840 = lcm(1..=8)): the sum is
        // 840 per box exactly when every box has all its pieces.
        let mut weight = 0u64;
        for r in recs {
            let Some(b) = src.get(r.id() as usize) else {
                return Err(Corruption {
                    structure: S,
                    invariant: "record of a stored box",
                });
            };
            let q = frame.qbox::<K, B>(&b);
            let count = r.pieces();
            weight += 840 / count as u64;
            let expect: Option<K> = if count == 1 {
                ensure(r.piece() == 0, S, "unsplit box has piece 0")?;
                Some(frame.whole_key::<K>(&q).0)
            } else {
                let pieces = splitter.split(&frame, &q, gain.unwrap_or(0));
                ensure(
                    gain.is_some() && pieces.len() == count && count <= MAX_PIECES,
                    S,
                    "piece count matches the split",
                )?;
                pieces.iter().find(|p| p.index == r.piece()).map(|p| p.key)
            };
            let Some(key) = expect else {
                return Err(Corruption {
                    structure: S,
                    invariant: "piece exists in the split",
                });
            };
            ensure(key == r.key, S, "key matches the box")?;
        }
        ensure(
            weight == 840 * self.elements as u64,
            S,
            "every box has all its pieces",
        )?;
        // The compact boxes, when in use, are those of the records' boxes.
        if let (Some(pk), Some(k)) = (self.packed(), pack::fine_shift::<K>(&frame)) {
            ensure(pk.len() == recs.len(), S, "a compact box per record")?;
            for (r, c) in recs.iter().zip(pk) {
                let ok = src
                    .get(r.id() as usize)
                    .is_some_and(|b| pack::check::<B, K>(&b, c, &frame, k));
                ensure(ok, S, "compact box matches the box")?;
            }
        }
        Ok(())
    }

    /// Checks the records against `boxes`, the slice of the last build.
    ///
    /// # Errors
    /// The first broken invariant.
    pub fn validate_against(&self, boxes: &[B]) -> Result<(), Corruption> {
        ensure(
            boxes.len() == self.id_bound || self.frame.is_none(),
            "LinearKdTree",
            "boxes are the slice of the last build",
        )?;
        self.validate_with(boxes)
    }
}

impl<B: BoundingBox, K: LocCode, R: Storage<KdRecord<K>>> Validate for LinearKdTree<B, K, R> {
    /// Structural checks that need no boxes: sorted records within capacity.
    /// [`LinearKdTree::validate_against`] also checks every key.
    fn validate(&self) -> Result<(), Corruption> {
        const S: &str = "LinearKdTree";
        ensure(
            self.nrec <= self.record_capacity(),
            S,
            "records within capacity",
        )?;
        match self.frame {
            None => ensure(self.nrec == 0, S, "records without a frame"),
            Some(f) => {
                ensure(sort::is_sorted(self.records(), f.depth), S, "prefix order")?;
                ensure(
                    self.records()
                        .iter()
                        .all(|r| r.key != K::ZERO && r.key.tz() <= f.depth && r.piece() < 8),
                    S,
                    "keys within the tree depth",
                )
            }
        }
    }
}

impl<B: BoundingBox, K: LocCode, R: Storage<KdRecord<K>>> crate::inspect::Inspect
    for LinearKdTree<B, K, R>
{
    type Stats = KdStats;

    /// The two record buffers: `2R · size_of::<KdRecord<K>>()`.
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.records.as_ref())
            + core::mem::size_of_val(self.scratch.as_ref())
    }

    /// What the last build did.
    fn stats(&self) -> KdStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Aabb3, Vec3};
    use crate::inspect::Inspect;

    /// Every splitting rule gives brute force's pairs, each once; the
    /// default makes fewer records than the paper's rule and more than no
    /// split on boxes that straddle many cuts.
    #[test]
    fn split_rules_give_the_same_pairs() {
        let mut st = 0x2545_F491_4F6C_DD1Du64;
        let mut boxes = [Aabb3::NAN; 96];
        for b in boxes.iter_mut() {
            let mut v = [0f32; 3];
            for x in v.iter_mut() {
                st ^= st << 13;
                st ^= st >> 7;
                st ^= st << 17;
                *x = (st % 10_000) as f32 / 1000.0;
            }
            *b = Aabb3::new(
                Vec3::new(v[0], v[1], v[2]),
                Vec3::new(v[0] + 1.3, v[1] + 1.3, v[2] + 1.3),
            )
            .unwrap();
        }
        let mut records = [0usize; 3];
        for (rule, split) in [Split::PAPER, Split::DEFAULT, Split::None]
            .into_iter()
            .enumerate()
        {
            let mut tree = LinearKdTree::<Aabb3, u64, _>::new(
                [KdRecord::EMPTY; 768],
                [KdRecord::EMPTY; 768],
                KdConfig::DEFAULT.with_split(split).unwrap(),
            );
            tree.build(&boxes).unwrap();
            tree.validate_against(&boxes).unwrap();
            records[rule] = tree.stats().records;
            let mut got = [[false; 96]; 96];
            tree.for_each_candidate_pair(&boxes, Candidates::Exact, |a, b| {
                let (a, b) = (a.min(b) as usize, a.max(b) as usize);
                assert!(!got[a][b], "{split:?}: ({a}, {b}) twice");
                got[a][b] = true;
            })
            .unwrap();
            for a in 0..96 {
                for b in a + 1..96 {
                    assert_eq!(got[a][b], boxes[a].overlaps(&boxes[b]), "{split:?}");
                }
            }
        }
        assert_eq!(KdConfig::<Aabb3>::DEFAULT.split(), Split::DEFAULT);
        assert!(
            records[0] > records[1] && records[1] > records[2],
            "{records:?}"
        );
    }
}
