//! The particle buffer of a [`CellSortedHash`](super::CellSortedHash) as
//! planes (structure of arrays), and the distance kernels over them.
//!
//! A buffer of `S` slots of `DIM + 1` words is read as `DIM + 1` planes of
//! `S` words each: plane `a < DIM` holds coordinate `a` of the particle at
//! every sorted position, plane `DIM` its id. The planes start at fixed
//! offsets (multiples of `S`), so a build of any length uses the first `len`
//! words of each. The sweeps then test [`LANES`] candidates with one load
//! per axis instead of transposing records: the distance loops vectorise
//! on stable Rust without `unsafe` (the casts are `bytemuck`'s).

use core::marker::PhantomData;

use super::SortedParticle;
use crate::exec::{Cuts, Parts};
use crate::geom::Point;

/// Candidates whose distances are computed together: eight independent
/// computations (two SSE vectors, one AVX vector, two NEON vectors).
pub(super) const LANES: usize = 8;

/// Candidates handled per round of the sweeps' kernels: their distances are
/// computed first (a vectorised loop), then the hits are collected (a
/// branch-free loop). One lane group on targets without an operating
/// system, whose stacks are small.
#[cfg(not(target_os = "none"))]
pub(super) const CHUNK: usize = 64;
#[cfg(target_os = "none")]
pub(super) const CHUNK: usize = LANES;

/// For each 8-bit hit mask, the lanes that are set, in order (the rest
/// zero): a mask of hits becomes a list of hits with one table load and one
/// store of eight lanes, with no branch per candidate.
pub(super) const LANE_LISTS: [[u8; LANES]; 256] = lane_lists();

/// Number of set bits of each byte.
pub(super) const BIT_COUNT: [u8; 256] = bit_count();

const fn lane_lists() -> [[u8; LANES]; 256] {
    let mut out = [[0u8; LANES]; 256];
    let mut m = 0;
    while m < 256 {
        let mut n = 0;
        let mut l = 0;
        while l < LANES {
            if m & (1 << l) != 0 {
                out[m][n] = l as u8;
                n += 1;
            }
            l += 1;
        }
        m += 1;
    }
    out
}

const fn bit_count() -> [u8; 256] {
    let mut out = [0u8; 256];
    let mut m = 0;
    while m < 256 {
        out[m] = (m as u32).count_ones() as u8;
        m += 1;
    }
    out
}

/// The hit mask of one lane group: bit `l` set when `d[l] < r2` and
/// `l < valid`.
#[inline(always)]
pub(super) fn hit_mask(d: &[f32], r2: f32, valid: usize) -> usize {
    let mut m = 0u32;
    for (l, &x) in d.iter().enumerate().take(LANES) {
        m |= u32::from(x < r2) << l;
    }
    let keep = if valid >= LANES {
        0xff
    } else {
        (1u32 << valid) - 1
    };
    (m & keep) as usize
}

/// Calls `f(base + j, d[j])` for each `j < m` with `d[j] < r2`, in order,
/// one [`LANES`] group at a time through its hit mask.
#[inline(always)]
fn emit_hits(d: &[f32; CHUNK], m: usize, r2: f32, base: usize, f: &mut impl FnMut(usize, f32)) {
    for (g, lanes) in d.chunks_exact(LANES).enumerate().take(m.div_ceil(LANES)) {
        let at = g * LANES;
        let mask = hit_mask(lanes, r2, m - at);
        if mask == 0 {
            continue;
        }
        let (Some(list), Some(&count)) = (LANE_LISTS.get(mask), BIT_COUNT.get(mask)) else {
            continue;
        };
        for &l in list.iter().take(count as usize) {
            if let Some(&d2) = lanes.get(l as usize) {
                f(base + at + l as usize, d2);
            }
        }
    }
}

/// Candidates one cell's copy of its forward neighbours holds (see
/// [`Local`]); none on targets without an operating system, whose stacks
/// are small (the sweeps then read the ranges in place).
#[cfg(not(target_os = "none"))]
pub(super) const LOCAL: usize = 512;
#[cfg(target_os = "none")]
pub(super) const LOCAL: usize = 0;

/// A cell's candidates copied into one contiguous run of planes: its own
/// particles, then those of its forward cells, then [`LANES`] far-away
/// particles (infinite coordinates, never within any radius). Every
/// particle of the cell then tests one contiguous range in whole lane
/// groups, with no tail and no per-range loop.
pub(super) struct Local {
    axes: [[f32; LOCAL_ROOM]; 3],
    ids: [u32; LOCAL_ROOM],
    len: usize,
}

/// Slots of a [`Local`] copy: its candidates and the far-away lanes (none
/// at all where [`LOCAL`] is zero).
const LOCAL_ROOM: usize = if LOCAL > 0 { LOCAL + LANES } else { 0 };

impl Local {
    pub(super) fn new() -> Self {
        Self {
            axes: [[f32::INFINITY; LOCAL_ROOM]; 3],
            ids: [0; LOCAL_ROOM],
            len: 0,
        }
    }

    /// Empties the copy.
    #[inline(always)]
    pub(super) fn clear(&mut self) {
        self.len = 0;
    }

    /// Candidates copied.
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Appends the particles at sorted positions `lo..hi` of `src`;
    /// `false` (nothing appended) if they do not fit.
    #[inline(always)]
    pub(super) fn push<P: Point>(&mut self, src: &Planes<'_, P>, lo: usize, hi: usize) -> bool {
        let (at, n) = (self.len, hi.saturating_sub(lo));
        if at + n > LOCAL || hi > src.len() {
            return false;
        }
        for a in 0..P::DIM {
            copy_lanes(&mut self.axes[a], at, src.axes[a], lo, n);
        }
        copy_lanes(&mut self.ids, at, src.ids, lo, n);
        self.len = at + n;
        true
    }

    /// As [`push`](Self::push), each copied position moved by `t` (the
    /// candidates' part of a periodic shift): the sweeps then test them
    /// with the plain kernel.
    #[inline(always)]
    pub(super) fn push_shifted<P: Point>(
        &mut self,
        src: &Planes<'_, P>,
        lo: usize,
        hi: usize,
        t: P,
    ) -> bool {
        let at = self.len;
        if !self.push(src, lo, hi) {
            return false;
        }
        for a in 0..P::DIM {
            let v = t.coord(a);
            if v != 0.0
                && let Some(run) = self.axes[a].get_mut(at..self.len)
            {
                for x in run {
                    *x += v;
                }
            }
        }
        true
    }

    /// The copy as planes, with the far-away lanes after it.
    #[inline(always)]
    pub(super) fn view<P: Point>(&mut self) -> Planes<'_, P> {
        let end = (self.len + LANES).min(LOCAL_ROOM);
        for a in 0..P::DIM {
            if let Some(far) = self.axes[a].get_mut(self.len..end) {
                far.fill(f32::INFINITY);
            }
        }
        let [x, y, z] = &self.axes;
        Planes {
            axes: [&x[..end], &y[..end], &z[..end]],
            ids: &self.ids[..end],
            _p: PhantomData,
        }
    }
}

/// Copies `src[lo..lo + n]` to `dst[at..]` in whole lane groups where both
/// sides allow it (writing up to a group past `at + n`, which a later copy
/// or the far-away lanes overwrite): short runs copied inline, not through
/// a `memcpy` call per run.
#[inline(always)]
fn copy_lanes<T: Copy>(dst: &mut [T], at: usize, src: &[T], lo: usize, n: usize) {
    let mut j = 0;
    while j < n {
        match (
            dst.get_mut(at + j..at + j + LANES),
            src.get(lo + j..lo + j + LANES),
        ) {
            (Some(d), Some(s)) => d.copy_from_slice(s),
            _ => {
                for x in j..n {
                    if let (Some(d), Some(&s)) = (dst.get_mut(at + x), src.get(lo + x)) {
                        *d = s;
                    }
                }
                return;
            }
        }
        j += LANES;
    }
}

/// Read-only planes of the first `len` sorted positions.
#[derive(Clone, Copy)]
pub(super) struct Planes<'a, P: Point> {
    axes: [&'a [f32]; 3],
    ids: &'a [u32],
    _p: PhantomData<P>,
}

impl<'a, P: Point> Planes<'a, P> {
    /// The planes of `buf`, each `n` long (`n <= buf.len()`; a longer `n`
    /// gives empty planes).
    pub(super) fn new(buf: &'a [SortedParticle<P>], n: usize) -> Self {
        let stride = buf.len();
        let words: &'a [u32] = bytemuck::cast_slice(buf);
        let plane = |a: usize| -> &'a [u32] {
            words
                .get(a * stride..a * stride + n.min(stride))
                .unwrap_or(&[])
        };
        let axes = [0, 1, 2].map(|a| -> &'a [f32] {
            if a < P::DIM {
                bytemuck::cast_slice(plane(a))
            } else {
                &[]
            }
        });
        Self {
            axes,
            ids: plane(P::DIM),
            _p: PhantomData,
        }
    }

    /// Number of particles.
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Position of the particle at sorted position `k < len`.
    #[inline(always)]
    pub(super) fn pos(&self, k: usize) -> P {
        P::from_fn(|a| self.axes[a][k])
    }

    /// Position of the particle at sorted position `k`, zero past the end:
    /// no panic path, so a loop whose results go unused can be dropped
    /// whole by the compiler.
    #[inline(always)]
    pub(super) fn pos_or_zero(&self, k: usize) -> P {
        P::from_fn(|a| self.axes[a].get(k).copied().unwrap_or(0.0))
    }

    /// Id of the particle at sorted position `k`, zero past the end (see
    /// [`pos_or_zero`](Self::pos_or_zero)).
    #[inline(always)]
    pub(super) fn id_or_zero(&self, k: usize) -> u32 {
        self.ids.get(k).copied().unwrap_or(0)
    }

    /// Id of the particle at sorted position `k < len`.
    #[inline(always)]
    pub(super) fn id(&self, k: usize) -> u32 {
        self.ids[k]
    }

    /// The id plane.
    #[inline(always)]
    pub(super) fn ids(&self) -> &'a [u32] {
        self.ids
    }

    /// Writes the squared distances from `p` to the particles at sorted
    /// positions `k..k + out.len()` into `out`, each summed axis by axis as
    /// [`Point::distance_squared`] does (bit for bit the same values).
    /// `out.len()` must be a multiple of [`LANES`]; `false` (nothing
    /// written) if the planes end before `k + out.len()`.
    #[inline(always)]
    pub(super) fn distances_into(&self, p: P, k: usize, out: &mut [f32]) -> bool {
        let m = out.len();
        let (Some(xs), Some(ys)) = (self.axes[0].get(k..k + m), self.axes[1].get(k..k + m)) else {
            return false;
        };
        let (px, py) = (p.coord(0), p.coord(1));
        let xy = out
            .chunks_exact_mut(LANES)
            .zip(xs.chunks_exact(LANES).zip(ys.chunks_exact(LANES)));
        if P::DIM > 2 {
            let Some(zs) = self.axes[2].get(k..k + m) else {
                return false;
            };
            let pz = p.coord(2);
            for ((d, (x, y)), z) in xy.zip(zs.chunks_exact(LANES)) {
                for l in 0..LANES {
                    let (dx, dy, dz) = (px - x[l], py - y[l], pz - z[l]);
                    d[l] = dx * dx + dy * dy + dz * dz;
                }
            }
        } else {
            for (d, (x, y)) in xy {
                for l in 0..LANES {
                    let (dx, dy) = (px - x[l], py - y[l]);
                    d[l] = dx * dx + dy * dy;
                }
            }
        }
        true
    }

    /// Squared distances from `p` to the particles at sorted positions
    /// `k..k + m` (`m <= CHUNK`) into `out[..m]`: [`LANES`] at a time where
    /// the planes allow reading past `k + m` to a whole number of lanes
    /// (`out` beyond `m` then holds distances of particles past the range),
    /// one at a time otherwise.
    #[inline(always)]
    pub(super) fn chunk_distances(&self, p: P, k: usize, m: usize, out: &mut [f32; CHUNK]) {
        let padded = m.div_ceil(LANES) * LANES;
        if padded <= CHUNK && self.distances_into(p, k, &mut out[..padded]) {
            return;
        }
        for (j, d) in out.iter_mut().enumerate().take(m) {
            *d = p.distance_squared(self.pos(k + j));
        }
    }

    /// As [`distances_into`](Self::distances_into) for the candidates
    /// shifted by `t`: each component is `p - (q + t)`, the minimum image of
    /// [`crate::PeriodicBox::offset`] when `p` and `t` are the two parts of
    /// the shift of a range reached through a periodic face (the query
    /// already shifted where it is the lower coordinate).
    #[inline(always)]
    fn shifted_distances_into(&self, p: P, t: P, k: usize, out: &mut [f32]) -> bool {
        let m = out.len();
        let (Some(xs), Some(ys)) = (self.axes[0].get(k..k + m), self.axes[1].get(k..k + m)) else {
            return false;
        };
        let (px, py, tx, ty) = (p.coord(0), p.coord(1), t.coord(0), t.coord(1));
        let xy = out
            .chunks_exact_mut(LANES)
            .zip(xs.chunks_exact(LANES).zip(ys.chunks_exact(LANES)));
        if P::DIM > 2 {
            let Some(zs) = self.axes[2].get(k..k + m) else {
                return false;
            };
            let (pz, tz) = (p.coord(2), t.coord(2));
            for ((d, (x, y)), z) in xy.zip(zs.chunks_exact(LANES)) {
                for l in 0..LANES {
                    let (dx, dy, dz) = (px - (x[l] + tx), py - (y[l] + ty), pz - (z[l] + tz));
                    d[l] = dx * dx + dy * dy + dz * dz;
                }
            }
        } else {
            for (d, (x, y)) in xy {
                for l in 0..LANES {
                    let (dx, dy) = (px - (x[l] + tx), py - (y[l] + ty));
                    d[l] = dx * dx + dy * dy;
                }
            }
        }
        true
    }

    /// Calls `f(k, d²)` for the sorted positions `k` in `lo..hi` within
    /// `r2` of `p` (`d² < r2`), in order: the distances of a [`CHUNK`] are
    /// computed together, then each group of [`LANES`] becomes a hit mask
    /// whose set lanes are visited (no branch per candidate that misses).
    /// The same hits and distances as filtering
    /// [`for_each_distance`](Self::for_each_distance).
    #[inline(always)]
    pub(super) fn for_each_within(
        &self,
        p: P,
        lo: usize,
        hi: usize,
        r2: f32,
        mut f: impl FnMut(usize, f32),
    ) {
        if cfg!(target_os = "none") {
            for k in lo..hi {
                let d2 = p.distance_squared(self.pos_or_zero(k));
                if d2 < r2 {
                    f(k, d2);
                }
            }
            return;
        }
        let mut d = [0.0f32; CHUNK];
        let mut k = lo;
        while k < hi {
            let m = (hi - k).min(CHUNK);
            self.chunk_distances(p, k, m, &mut d);
            emit_hits(&d, m, r2, k, &mut f);
            k += m;
        }
    }

    /// [`for_each_within`](Self::for_each_within) with the squared length
    /// of `p - (q + t)` for a candidate at `q` (see
    /// [`shifted_distances_into`](Self::shifted_distances_into)).
    #[inline(always)]
    pub(super) fn for_each_shifted_within(
        &self,
        p: P,
        t: P,
        lo: usize,
        hi: usize,
        r2: f32,
        mut f: impl FnMut(usize, f32),
    ) {
        let scalar = |k: usize| {
            let e = p - (self.pos_or_zero(k) + t);
            e.dot(e)
        };
        if cfg!(target_os = "none") {
            for k in lo..hi {
                let d2 = scalar(k);
                if d2 < r2 {
                    f(k, d2);
                }
            }
            return;
        }
        let mut d = [0.0f32; CHUNK];
        let mut k = lo;
        while k < hi {
            let m = (hi - k).min(CHUNK);
            let padded = m.div_ceil(LANES) * LANES;
            if !(padded <= CHUNK && self.shifted_distances_into(p, t, k, &mut d[..padded])) {
                for (j, dj) in d.iter_mut().enumerate().take(m) {
                    *dj = scalar(k + j);
                }
            }
            emit_hits(&d, m, r2, k, &mut f);
            k += m;
        }
    }

    /// Calls `f(k, d²)` for every sorted position `k` in `lo..hi` with its
    /// squared distance from `p` (computed [`CHUNK`] at a time by
    /// [`chunk_distances`](Self::chunk_distances)).
    #[inline(always)]
    pub(super) fn for_each_distance(
        &self,
        p: P,
        lo: usize,
        hi: usize,
        mut f: impl FnMut(usize, f32),
    ) {
        if cfg!(target_os = "none") {
            // No vector unit to feed, little stack: one at a time.
            for k in lo..hi {
                f(k, p.distance_squared(self.pos_or_zero(k)));
            }
            return;
        }
        let mut d = [0.0f32; CHUNK];
        let mut k = lo;
        while k < hi {
            let m = (hi - k).min(CHUNK);
            self.chunk_distances(p, k, m, &mut d);
            for (j, &d2) in d.iter().enumerate().take(m) {
                f(k + j, d2);
            }
            k += m;
        }
    }
}

/// Writable planes of the first `len` sorted positions.
pub(super) struct PlanesMut<'a, P: Point> {
    axes: [&'a mut [f32]; 3],
    ids: &'a mut [u32],
    _p: PhantomData<P>,
}

impl<'a, P: Point> PlanesMut<'a, P> {
    /// The planes of `buf`, each `n` long (`n <= buf.len()`).
    pub(super) fn new(buf: &'a mut [SortedParticle<P>], n: usize) -> Self {
        let stride = buf.len();
        let n = n.min(stride);
        let mut rest: &'a mut [u32] = bytemuck::cast_slice_mut(buf);
        let mut take = || -> &'a mut [u32] {
            let all = core::mem::take(&mut rest);
            let (head, tail) = all.split_at_mut(stride.min(all.len()));
            rest = tail;
            let (plane, _) = head.split_at_mut(n.min(head.len()));
            plane
        };
        let x = take();
        let y = take();
        let z = if P::DIM > 2 { take() } else { &mut [] };
        let ids = take();
        Self {
            axes: [x, y, z].map(bytemuck::cast_slice_mut),
            ids,
            _p: PhantomData,
        }
    }

    /// Stores particle `id` at `p` in sorted position `k` (nothing past the
    /// end).
    #[inline(always)]
    pub(super) fn set(&mut self, k: usize, p: P, id: u32) {
        for a in 0..P::DIM {
            if let Some(x) = self.axes[a].get_mut(k) {
                *x = p.coord(a);
            }
        }
        if let Some(i) = self.ids.get_mut(k) {
            *i = id;
        }
    }

    /// The id plane.
    #[inline(always)]
    pub(super) fn ids_mut(&mut self) -> &mut [u32] {
        self.ids
    }

    /// Fills the coordinate planes from the id plane: sorted position `k`
    /// gets `positions[ids[k]]` (ids past `positions` leave it unchanged).
    /// One sequential write per plane and one read per particle, after a
    /// sort that scattered only the ids.
    pub(super) fn gather_positions(&mut self, positions: &[P]) {
        let [x, y, z] = &mut self.axes;
        let ids = &*self.ids;
        for (k, &id) in ids.iter().enumerate() {
            if let Some(&p) = positions.get(id as usize) {
                if let Some(v) = x.get_mut(k) {
                    *v = p.coord(0);
                }
                if let Some(v) = y.get_mut(k) {
                    *v = p.coord(1);
                }
                if let Some(v) = z.get_mut(k) {
                    *v = p.coord(2);
                }
            }
        }
    }

    /// A shorter-lived handle on the same planes.
    #[inline(always)]
    pub(super) fn reborrow(&mut self) -> PlanesMut<'_, P> {
        let [x, y, z] = &mut self.axes;
        PlanesMut {
            axes: [&mut **x, &mut **y, &mut **z],
            ids: &mut *self.ids,
            _p: PhantomData,
        }
    }

    /// The read-only view.
    #[inline(always)]
    pub(super) fn view(&self) -> Planes<'_, P> {
        let [x, y, z] = &self.axes;
        Planes {
            axes: [&**x, &**y, &**z],
            ids: self.ids,
            _p: PhantomData,
        }
    }

    /// The planes cut into one piece per task where `cuts` says (the same
    /// sorted positions of every plane), for [`crate::exec::Executor::run`].
    pub(super) fn cut<C: Cuts>(self, cuts: C) -> PlaneParts<'a, C> {
        let [x, y, z] = self.axes;
        (
            (Parts::cut(x, cuts), Parts::cut(y, cuts)),
            (Parts::cut(z, cuts), Parts::cut(self.ids, cuts)),
        )
    }

    /// One task's piece of [`cut`](Self::cut), with the sorted position
    /// of its first particle.
    pub(super) fn from_piece(piece: PlaneParts<'a, impl Cuts>) -> (usize, Self) {
        let ((x, y), (z, ids)) = piece;
        let start = ids.start();
        (
            start,
            Self {
                axes: [x.into_slice(), y.into_slice(), z.into_slice()],
                ids: ids.into_slice(),
                _p: PhantomData,
            },
        )
    }
}

/// The pieces of the planes for one task, or to be split among tasks.
pub(super) type PlaneParts<'a, C> = (
    (Parts<'a, f32, C>, Parts<'a, f32, C>),
    (Parts<'a, f32, C>, Parts<'a, u32, C>),
);
