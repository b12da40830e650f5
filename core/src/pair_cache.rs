//! [`PairCache`]: any [`NeighborSearch`] with its pairs enumerated once per
//! build into a fixed buffer, so that algorithms making several passes over
//! the pairs (SPH makes three per force evaluation: density, normals,
//! forces) pay for the search once.

use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::Point;
use crate::storage::Storage;
use crate::traits::NeighborSearch;

/// One neighbour pair: the two particle ids and their squared distance.
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NeighborPair {
    /// First particle.
    pub i: u32,
    /// Second particle.
    pub j: u32,
    /// Squared distance, as the inner search computed it.
    pub d2: f32,
}

impl Default for NeighborPair {
    /// The unused value, [`NeighborPair::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl NeighborPair {
    /// An unused slot.
    pub const EMPTY: Self = Self {
        i: 0,
        j: 0,
        d2: 0.0,
    };
}

/// A neighbour search whose [`for_each_pair`](NeighborSearch::for_each_pair)
/// replays the pairs recorded at the last [`build`](NeighborSearch::build).
///
/// `build` builds the inner search and records its pairs, in its order, in
/// `pairs`. If they do not fit, the cache stays empty and `for_each_pair`
/// asks the inner search each time: the answers are the same either way, only
/// slower ([`is_cached`](Self::is_cached) tells which). Every other query goes
/// to the inner search.
///
/// Memory: the inner search's, plus 12 bytes per slot of `pairs` (about
/// `N·k/2` pairs for `N` particles with `k` neighbours each).
#[derive(Debug)]
pub struct PairCache<N, S> {
    inner: N,
    pairs: S,
    len: usize,
    cached: bool,
    needed: usize,
}

impl<N, S: Storage<NeighborPair>> PairCache<N, S> {
    /// `inner` with a pair buffer of `pairs.len()` slots (its contents are
    /// overwritten by each build).
    ///
    /// Never fails and allocates nothing; `const`. Memory: the inner search's
    /// plus `12 · pairs.len()` bytes. A build costs the inner build plus one
    /// `for_each_pair` of the inner search; replaying the pairs afterwards is
    /// `O(pairs)` sequential reads.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{BruteForceNeighbors, NeighborPair, NeighborSearch, PairCache, Vec3};
    ///
    /// let inner = BruteForceNeighbors::new([Vec3::ZERO; 8]);
    /// let mut cache = PairCache::new(inner, [NeighborPair::EMPTY; 16]);
    /// cache.build(&[Vec3::ZERO, Vec3::new(0.5, 0.0, 0.0)], 1.0)?;
    /// assert!(cache.is_cached());
    /// assert_eq!(cache.pairs().len(), 1);
    /// # Ok::<(), spatium::Error>(())
    /// ```
    pub const fn new(inner: N, pairs: S) -> Self {
        Self {
            inner,
            pairs,
            len: 0,
            cached: false,
            needed: 0,
        }
    }

    /// The inner search.
    pub fn inner(&self) -> &N {
        &self.inner
    }

    /// The inner search, mutably. The recorded pairs are dropped, since a
    /// change to the inner search could make them stale: until the next
    /// [`build`](NeighborSearch::build), `for_each_pair` asks the inner
    /// search.
    pub fn inner_mut(&mut self) -> &mut N {
        self.len = 0;
        self.cached = false;
        &mut self.inner
    }

    /// The inner search and the pair buffer, back.
    pub fn into_inner(self) -> (N, S) {
        (self.inner, self.pairs)
    }

    /// `true` if the last build's pairs fit in the buffer.
    pub fn is_cached(&self) -> bool {
        self.cached
    }

    /// Pairs found by the last build (recorded or not).
    pub fn pair_count(&self) -> usize {
        self.needed
    }

    /// Pairs the buffer holds.
    pub fn capacity(&self) -> usize {
        self.pairs.as_ref().len()
    }

    /// The recorded pairs (empty if they did not fit).
    pub fn pairs(&self) -> &[NeighborPair] {
        &self.pairs.as_ref()[..self.len]
    }
}

impl<P: Point, N: NeighborSearch<P>, S: Storage<NeighborPair>> NeighborSearch<P>
    for PairCache<N, S>
{
    fn build(&mut self, positions: &[P], radius: f32) -> Result<(), Error> {
        self.inner.build(positions, radius)?;
        let buf = self.pairs.as_mut();
        let cap = buf.len();
        let mut n = 0usize;
        self.inner.for_each_pair(|i, j, d2| {
            if n < cap {
                buf[n] = NeighborPair { i, j, d2 };
            }
            n += 1;
        });
        self.needed = n;
        self.cached = n <= cap;
        self.len = if self.cached { n } else { 0 };
        Ok(())
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn radius(&self) -> f32 {
        self.inner.radius()
    }

    fn position(&self, id: u32) -> Option<P> {
        self.inner.position(id)
    }

    fn periodic(&self) -> crate::periodic::PeriodicBox<P> {
        self.inner.periodic()
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, f: F) -> Result<(), Error> {
        self.inner.for_each_neighbor(id, f)
    }

    fn for_each_within<F: FnMut(u32, f32)>(&self, point: P, f: F) -> Result<(), Error> {
        self.inner.for_each_within(point, f)
    }

    #[inline]
    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) {
        if self.cached {
            for p in &self.pairs.as_ref()[..self.len] {
                f(p.i, p.j, p.d2);
            }
        } else {
            self.inner.for_each_pair(f);
        }
    }
}

impl<N: Validate, S: Storage<NeighborPair>> Validate for PairCache<N, S> {
    fn validate(&self) -> Result<(), Corruption> {
        const W: &str = "PairCache";
        self.inner.validate()?;
        ensure(
            self.len <= self.pairs.as_ref().len(),
            W,
            "len within buffer",
        )?;
        ensure(
            if self.cached {
                self.len == self.needed
            } else {
                self.len == 0
            },
            W,
            "cached pairs are all the pairs",
        )
    }
}

/// Occupancy of a [`PairCache`] and of the search it wraps.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PairCacheStats<T> {
    /// Pairs recorded by the last build (0 if they did not fit).
    pub cached_pairs: usize,
    /// Pairs the buffer holds.
    pub capacity: usize,
    /// The wrapped search's figures.
    pub inner: T,
}

impl<N: crate::inspect::Inspect, S: Storage<NeighborPair>> crate::inspect::Inspect
    for PairCache<N, S>
{
    type Stats = PairCacheStats<N::Stats>;

    /// `12Q` bytes of pairs plus the wrapped search's buffers.
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.pairs.as_ref()) + self.inner.memory_bytes()
    }

    fn stats(&self) -> Self::Stats {
        PairCacheStats {
            cached_pairs: self.len,
            capacity: self.pairs.as_ref().len(),
            inner: self.inner.stats(),
        }
    }
}

/// Relative margin kept off the half skin in [`VerletCache`]'s displacement
/// test, so that rounding in the distance arithmetic (relative errors of a
/// few `f32` ulps) can never let a true pair escape the candidate list.
const SKIN_MARGIN: f32 = 1.0 / 256.0;

/// How a [`VerletCache`] answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Nothing built yet (or the last fallback build failed).
    Empty,
    /// The inner search is built at the true radius: everything is asked of it.
    Direct,
    /// The inner search is built at `radius + skin` and its pairs are the
    /// recorded candidates.
    Candidates,
}

/// A neighbour search with a Verlet skin: the inner search is built with
/// radius `r + skin` and its pairs are kept as *candidates*; a later
/// [`build`](NeighborSearch::build) with the same radius and particle count
/// reuses them, without touching the inner search, as long as no particle
/// has moved more than `skin / 2` (less a margin of 1/256 for rounding)
/// from where the inner search holds it. Each build (reused or not) copies
/// the positions and tests the true radius on every candidate, recording the
/// pairs within it as [`PairCache`] does, so that the several passes of an
/// algorithm (SPH makes three per force evaluation) replay them.
///
/// Answers are exact: a pair within `r` now was within `r + skin` at the
/// inner build (triangle inequality), every reported `d²` is computed from
/// the current positions, and each answer equals that of a search built on
/// the current positions with radius `r`, pair for pair (the order differs).
///
/// The candidates are kept as *runs*, one `u32` per entry: a first id `i`,
/// the run's length `k`, then the `k` second ids `j` of the pairs `(i, j)`
/// the inner search reported in a row with that first id. The filter then
/// loads `i`'s position once per run and reads 4 bytes per candidate
/// instead of 8 (on the 32 768-particle dam break, the SPH step's
/// neighbour-search stage went from 36 % to 32–33 % of the step, A/B). A
/// search that
/// reports each particle's pairs together (every uniform hash and brute
/// force do) needs at most one run per particle; one that interleaves them
/// needs up to one per pair.
///
/// Falls back to building the inner search with the true radius each time
/// (and answering from it) when the candidates do not fit their buffer or the
/// skin is below `r/1024` (too thin to survive rounding). If only the pairs
/// within `r` do not fit theirs, `for_each_pair` tests the candidates on
/// every call instead of replaying.
///
/// Memory: the inner search's (sized for radius `r + skin`: more candidates
/// per cell), plus `size_of::<P>()·N` for the positions, `4·K` for `K`
/// candidate entries (`K ≥` candidates `+ 2·`runs, at most candidates
/// `+ 2N` for a search that groups its pairs) and `12·Q` for `Q` pair
/// slots. With a skin `s`, a fluid has about `(1 + s/r)³` times as many
/// candidates as pairs.
///
/// # Example
///
/// ```
/// use spatium::{BruteForceNeighbors, NeighborPair, NeighborSearch, Vec3, VerletCache};
///
/// let inner = BruteForceNeighbors::new([Vec3::ZERO; 8]);
/// let mut v = VerletCache::new(inner, [Vec3::ZERO; 8], [0u32; 16],
///     [NeighborPair::EMPTY; 16], 0.5);
/// let mut x = [Vec3::ZERO, Vec3::new(1.2, 0.0, 0.0)];
/// v.build(&x, 1.0)?;            // the inner search, radius 1.5: one candidate
/// assert_eq!(v.candidate_count(), 1);
/// assert_eq!(v.pairs().len(), 0); // 1.2 is not within 1.0
/// x[1].x = 0.9;                 // moved 0.3 > 0.25: the candidates are rebuilt
/// v.build(&x, 1.0)?;
/// x[1].x = 0.8;                 // 0.1 from where the inner search holds it
/// v.build(&x, 1.0)?;
/// assert_eq!((v.inner_builds(), v.reuses()), (2, 1));
/// assert_eq!(v.pairs().len(), 1);
/// # Ok::<(), spatium::Error>(())
/// ```
#[derive(Debug)]
pub struct VerletCache<N, X, C, S> {
    inner: N,
    positions: X,
    candidates: C,
    pairs: S,
    skin: f32,
    radius: f32,
    len: usize,
    /// Entries (run headers and ids) of the candidate list.
    cand_len: usize,
    /// Candidate pairs in it.
    cand_count: usize,
    pair_len: usize,
    pairs_cached: bool,
    mode: Mode,
    inner_builds: u64,
    reuses: u64,
}

impl<N, X, C, S> VerletCache<N, X, C, S> {
    /// `inner` with a skin of `skin` (a length; `0` or a non-finite value
    /// never reuses), room for `positions.len()` particles,
    /// `candidates.len()` candidate list entries (one per candidate and two
    /// per run, see the type's documentation) and `pairs.len()` pairs.
    ///
    /// Never fails and allocates nothing; `const`. Memory: the inner
    /// search's plus `size_of::<P>()·N + 4K + 12Q` bytes. A build that
    /// reuses the candidates costs one pass over the particles (the
    /// displacement test, one `position` query each) and one over the
    /// candidates; one that does not adds the inner build and its
    /// `for_each_pair` at radius `r + skin`.
    pub const fn new(inner: N, positions: X, candidates: C, pairs: S, skin: f32) -> Self {
        Self {
            inner,
            positions,
            candidates,
            pairs,
            skin,
            radius: 0.0,
            len: 0,
            cand_len: 0,
            cand_count: 0,
            pair_len: 0,
            pairs_cached: false,
            mode: Mode::Empty,
            inner_builds: 0,
            reuses: 0,
        }
    }

    /// The inner search.
    pub fn inner(&self) -> &N {
        &self.inner
    }

    /// The inner search and the three buffers, back.
    pub fn into_inner(self) -> (N, X, C, S) {
        (self.inner, self.positions, self.candidates, self.pairs)
    }

    /// The skin.
    pub fn skin(&self) -> f32 {
        self.skin
    }

    /// Builds of the inner search so far.
    pub fn inner_builds(&self) -> u64 {
        self.inner_builds
    }

    /// Builds that reused the candidates so far.
    pub fn reuses(&self) -> u64 {
        self.reuses
    }

    /// Candidate pairs held (0 when the last build fell back to the true
    /// radius).
    pub fn candidate_count(&self) -> usize {
        if self.mode == Mode::Candidates {
            self.cand_count
        } else {
            0
        }
    }

    /// `true` when the last build's pairs were recorded (they are then
    /// replayed by `for_each_pair`).
    pub fn is_cached(&self) -> bool {
        self.mode == Mode::Candidates && self.pairs_cached
    }

    /// The pairs within the radius recorded by the last build (empty unless
    /// [`is_cached`](Self::is_cached)).
    pub fn pairs<'a>(&'a self) -> &'a [NeighborPair]
    where
        S: Storage<NeighborPair> + 'a,
    {
        if self.is_cached() {
            &self.pairs.as_ref()[..self.pair_len]
        } else {
            &[]
        }
    }
}

impl<N, X, C, S> VerletCache<N, X, C, S>
where
    C: Storage<u32>,
    S: Storage<NeighborPair>,
{
    /// `true` if every particle is within the (margined) half skin of where
    /// the inner search holds it; `false` on any NaN.
    fn within_skin<P: Point>(&self, positions: &[P]) -> bool
    where
        N: NeighborSearch<P>,
    {
        let half = 0.5 * self.skin * (1.0 - SKIN_MARGIN);
        let limit = half * half;
        positions.iter().enumerate().all(|(i, &p)| {
            self.inner
                .position(i as u32)
                .is_some_and(|q| p.distance_squared(q) <= limit)
        })
    }

    /// Records the inner search's pairs as candidate runs; `false` if
    /// they do not fit.
    fn record_candidates<P: Point>(&mut self) -> bool
    where
        N: NeighborSearch<P>,
    {
        let buf = self.candidates.as_mut();
        let (cap, n) = (buf.len(), self.len);
        let (mut m, mut count) = (0usize, 0usize);
        // The current run's first id and where its header sits.
        let mut head: Option<(u32, usize)> = None;
        self.inner.for_each_pair(|i, j, _| {
            if (i as usize) < n && (j as usize) < n {
                if head.map(|h| h.0) != Some(i) {
                    close_run(buf, head, m);
                    head = Some((i, m));
                    put(buf, &mut m, i);
                    put(buf, &mut m, 0);
                }
                put(buf, &mut m, j);
                count += 1;
            }
        });
        close_run(buf, head, m);
        self.cand_len = m.min(cap);
        self.cand_count = count;
        m <= cap
    }
}

/// Writes `e` at `buf[*m]` if there is room; advances `*m` either way.
#[inline(always)]
fn put(buf: &mut [u32], m: &mut usize, e: u32) {
    if let Some(slot) = buf.get_mut(*m) {
        *slot = e;
    }
    *m += 1;
}

/// Sets the length of the run whose header sits at `head` (if any and if
/// it fits), the list now ending at `end`.
fn close_run(buf: &mut [u32], head: Option<(u32, usize)>, end: usize) {
    if let Some((_, h)) = head
        && let Some(slot) = buf.get_mut(h + 1)
    {
        *slot = end.saturating_sub(h + 2) as u32;
    }
}

/// Calls `f(i, a, js)` for each run of the candidate list: the first id,
/// its position and the second ids (a run whose first id is past
/// `positions`, or that overruns the list, ends the walk or is skipped).
#[inline(always)]
fn runs<P: Point>(positions: &[P], list: &[u32], mut f: impl FnMut(u32, P, &[u32])) {
    let mut rest = list;
    while let [i, k, tail @ ..] = rest {
        let Some((js, next)) = tail.split_at_checked(*k as usize) else {
            return;
        };
        rest = next;
        if let Some(&a) = positions.get(*i as usize) {
            f(*i, a, js);
        }
    }
}

impl<P, N, X, C, S> NeighborSearch<P> for VerletCache<N, X, C, S>
where
    P: Point,
    N: NeighborSearch<P>,
    X: Storage<P>,
    C: Storage<u32>,
    S: Storage<NeighborPair>,
{
    /// Reuses the candidates when the radius and the particle count are
    /// those of the last build and every particle is within the half skin
    /// (less 1/256) of its position at the inner build; otherwise builds
    /// the inner search at `radius + skin` and records its pairs. Then copies
    /// the positions and records the pairs within `radius`.
    ///
    /// # Errors
    /// [`Error::InvalidRadius`] unless `radius` is finite and positive with
    /// a normal square; [`Error::CapacityExceeded`] for more particles than
    /// the positions buffer holds; [`Error::InvalidConfig`] (`"periodic"`)
    /// over a periodic inner search (the skin test and the recorded
    /// distances are not minimum-image); the inner build's errors. On error nothing
    /// changes, except when the fallback build at the true radius fails
    /// after the one at `radius + skin` succeeded: the cache is then empty.
    fn build(&mut self, positions: &[P], radius: f32) -> Result<(), Error> {
        if !(radius.is_finite() && radius > 0.0 && (radius * radius).is_normal()) {
            return Err(Error::InvalidRadius);
        }
        // Its skin test and its recorded distances are not minimum-image.
        if self.inner.periodic().is_periodic() {
            return Err(Error::InvalidConfig { field: "periodic" });
        }
        let n = positions.len();
        let capacity = self.positions.as_ref().len();
        if n > capacity {
            return Err(Error::CapacityExceeded { capacity });
        }
        let reuse = self.mode == Mode::Candidates
            && radius == self.radius
            && n == self.len
            && self.within_skin(positions);
        if reuse {
            self.reuses += 1;
        } else {
            let outer = radius + self.skin;
            let lists = self.skin.is_finite()
                && self.skin >= radius / 1024.0
                && outer.is_finite()
                && (outer * outer).is_finite();
            let mut recorded = false;
            if lists {
                self.inner.build(positions, outer)?;
                self.inner_builds += 1;
                self.len = n;
                recorded = self.record_candidates();
            }
            if !recorded {
                if let Err(e) = self.inner.build(positions, radius) {
                    if lists {
                        self.mode = Mode::Empty;
                        self.len = 0;
                    }
                    return Err(e);
                }
                self.inner_builds += 1;
            }
            self.mode = if recorded {
                Mode::Candidates
            } else {
                Mode::Direct
            };
        }
        self.len = n;
        self.radius = radius;
        self.positions.as_mut()[..n].copy_from_slice(positions);
        if self.mode == Mode::Candidates {
            let cands = &self.candidates.as_ref()[..self.cand_len];
            let m = record_within(
                &self.positions.as_ref()[..n],
                cands,
                self.pairs.as_mut(),
                radius * radius,
            );
            self.pairs_cached = m <= self.pairs.as_ref().len();
            self.pair_len = if self.pairs_cached { m } else { 0 };
        }
        Ok(())
    }

    fn len(&self) -> usize {
        match self.mode {
            Mode::Empty => 0,
            Mode::Direct => self.inner.len(),
            Mode::Candidates => self.len,
        }
    }

    fn radius(&self) -> f32 {
        self.radius
    }

    fn position(&self, id: u32) -> Option<P> {
        match self.mode {
            Mode::Empty => None,
            Mode::Direct => self.inner.position(id),
            Mode::Candidates => self.positions.as_ref()[..self.len]
                .get(id as usize)
                .copied(),
        }
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, mut f: F) -> Result<(), Error> {
        match self.mode {
            Mode::Direct => self.inner.for_each_neighbor(id, f),
            Mode::Empty => Err(Error::UnknownId { id }),
            Mode::Candidates => {
                let x = &self.positions.as_ref()[..self.len];
                let p = *x.get(id as usize).ok_or(Error::UnknownId { id })?;
                let r2 = self.radius * self.radius;
                self.inner.for_each_within(p, |j, _| {
                    if let Some(q) = x.get(j as usize).filter(|_| j != id) {
                        let d2 = p.distance_squared(*q);
                        if d2 < r2 {
                            f(j, d2);
                        }
                    }
                })
            }
        }
    }

    fn for_each_within<F: FnMut(u32, f32)>(&self, point: P, mut f: F) -> Result<(), Error> {
        match self.mode {
            Mode::Direct => self.inner.for_each_within(point, f),
            Mode::Empty => {
                if point.is_finite() {
                    Ok(())
                } else {
                    Err(Error::NonFinite)
                }
            }
            Mode::Candidates => {
                let x = &self.positions.as_ref()[..self.len];
                let r2 = self.radius * self.radius;
                self.inner.for_each_within(point, |j, _| {
                    if let Some(q) = x.get(j as usize) {
                        let d2 = point.distance_squared(*q);
                        if d2 < r2 {
                            f(j, d2);
                        }
                    }
                })
            }
        }
    }

    #[inline]
    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) {
        match self.mode {
            Mode::Empty => {}
            Mode::Direct => self.inner.for_each_pair(f),
            Mode::Candidates if self.pairs_cached => {
                for p in &self.pairs.as_ref()[..self.pair_len] {
                    f(p.i, p.j, p.d2);
                }
            }
            Mode::Candidates => filter(
                &self.positions.as_ref()[..self.len],
                &self.candidates.as_ref()[..self.cand_len],
                self.radius * self.radius,
                f,
            ),
        }
    }
}

impl<N: Validate, X, C: Storage<u32>, S: Storage<NeighborPair>> Validate
    for VerletCache<N, X, C, S>
{
    fn validate(&self) -> Result<(), Corruption> {
        const W: &str = "VerletCache";
        self.inner.validate()?;
        ensure(
            self.cand_len <= self.candidates.as_ref().len(),
            W,
            "candidates within buffer",
        )?;
        ensure(
            self.pair_len <= self.pairs.as_ref().len(),
            W,
            "pairs within buffer",
        )?;
        ensure(
            self.pairs_cached || self.pair_len == 0,
            W,
            "uncached pairs are not replayed",
        )
    }
}

/// Tests every candidate of the run list `candidates` against `d² < r2`
/// at `positions`, calling `f` for those within (ids past `positions` are
/// skipped).
#[inline(always)]
fn filter<P: Point>(
    positions: &[P],
    candidates: &[u32],
    r2: f32,
    mut f: impl FnMut(u32, u32, f32),
) {
    runs(positions, candidates, |i, a, js| {
        for &j in js {
            if let Some(b) = positions.get(j as usize) {
                let d2 = a.distance_squared(*b);
                if d2 < r2 {
                    f(i, j, d2);
                }
            }
        }
    });
}

/// Writes the candidates of the run list `candidates` within `d² < r2` at
/// `positions` to `out` as pairs and returns how many there are (counting
/// past the end of `out` without writing). Branch-free while `out` has
/// room: every candidate is written, the cursor advances on a hit.
fn record_within<P: Point>(
    positions: &[P],
    candidates: &[u32],
    out: &mut [NeighborPair],
    r2: f32,
) -> usize {
    let mut m = 0usize;
    runs(positions, candidates, |i, a, js| {
        for &j in js {
            if let Some(b) = positions.get(j as usize) {
                let d2 = a.distance_squared(*b);
                if let Some(slot) = out.get_mut(m) {
                    *slot = NeighborPair { i, j, d2 };
                }
                m += usize::from(d2 < r2);
            }
        }
    });
    m
}
