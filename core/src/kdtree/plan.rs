//! The frame (root cell and bit budget), quantisation, and the splitting plan
//! of one box (Poirrier §4).
//!
//! Everything after quantisation is integer arithmetic on inclusive cell
//! ranges `lo ..= hi` per axis. A cut at integer `m` along an axis splits a
//! range into `lo ..= m-1` and `m ..= hi`, so the pieces of a box partition
//! its quantised range exactly: every quantised point of the box lies in
//! exactly one piece. That is what makes the duplicate-free modes exact.

use crate::geom::{BoundingBox, Point};
use crate::kdtree::code::LocCode;

/// Where the tree sits and how deep it goes: the root cell and the number of
/// bits per axis, as used by one build.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Frame {
    /// Root cell lower corner, per axis.
    pub origin: [f64; 3],
    /// Cells per unit length along each axis: `2^bits / extent`.
    pub scale: [f64; 3],
    /// The same in `f32` (for `u32` codes).
    pub origin32: [f32; 3],
    pub scale32: [f32; 3],
    /// Root cell extent per axis.
    pub extent: [f64; 3],
    /// Bits per axis.
    pub bits: u32,
    /// Tree depth: `dim · bits`.
    pub depth: u32,
    /// 2 or 3.
    pub dim: u32,
    /// Truncate every node to a multiple of `dim` bits (octree cells).
    pub octree: bool,
}

/// One quantised box: inclusive integer ranges per axis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct QBox {
    pub lo: [u64; 3],
    pub hi: [u64; 3],
}

impl QBox {
    /// Component-wise `max(self.lo, other.lo)`: the lowest quantised point of
    /// the intersection, when the two overlap.
    #[inline(always)]
    pub fn meet_corner(&self, other: &QBox) -> [u64; 3] {
        [
            self.lo[0].max(other.lo[0]),
            self.lo[1].max(other.lo[1]),
            self.lo[2].max(other.lo[2]),
        ]
    }

    #[inline(always)]
    pub fn overlaps(&self, other: &QBox, dim: usize) -> bool {
        (0..dim).all(|a| self.lo[a] <= other.hi[a] && other.lo[a] <= self.hi[a])
    }
}

/// The most pieces one box splits into.
pub(crate) const MAX_PIECES: usize = 8;

/// One piece of a split box: its node key and index (bit `a` set if it is on
/// the upper side of the cut across axis `a`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Piece<K> {
    pub key: K,
    pub index: u8,
}

impl Frame {
    /// A frame over `root` with `bits` per axis.
    pub fn new<B: BoundingBox>(
        root_lo: [f64; 3],
        extent: [f64; 3],
        bits: u32,
        octree: bool,
    ) -> Self {
        let dim = B::Point::DIM as u32;
        let cells = (1u64 << bits) as f64;
        let mut scale = [1.0; 3];
        for a in 0..3 {
            scale[a] = cells / extent[a];
        }
        Self {
            origin: root_lo,
            scale,
            origin32: root_lo.map(|v| v as f32),
            scale32: scale.map(|v| v as f32),
            extent,
            bits,
            depth: dim * bits,
            dim,
            octree,
        }
    }

    /// The quantised cell coordinate of `x` along `axis`, clamped to the
    /// root. Monotone in `x`, which is all correctness needs: boxes that
    /// overlap have overlapping quantised ranges, inside the root or not.
    #[inline(always)]
    pub fn quantize<K: LocCode>(&self, x: f32, axis: usize) -> u64 {
        let top = (1u64 << self.bits) - 1;
        if K::WIDE_FLOAT {
            let t = (x as f64 - self.origin[axis]) * self.scale[axis];
            if t.is_nan() || t <= 0.0 {
                0
            } else if t >= top as f64 {
                top
            } else {
                // 0 < t < 2^63: the signed conversion is exact and one
                // instruction.
                t as i64 as u64
            }
        } else {
            let t = (x - self.origin32[axis]) * self.scale32[axis];
            if t.is_nan() || t <= 0.0 {
                0
            } else if t >= top as f32 {
                top
            } else {
                t as i32 as u64
            }
        }
    }

    /// The quantised range of a box.
    #[inline(always)]
    pub fn qbox<K: LocCode, B: BoundingBox>(&self, b: &B) -> QBox {
        let (lo, hi) = (b.min(), b.max());
        let mut q = QBox::default();
        for a in 0..B::Point::DIM {
            q.lo[a] = self.quantize::<K>(lo.coord(a), a);
            q.hi[a] = self.quantize::<K>(hi.coord(a), a);
        }
        q
    }

    /// `true` if a box lies inside the root cell (nothing clamped).
    pub fn inside<B: BoundingBox>(&self, b: &B) -> bool {
        (0..B::Point::DIM).all(|a| {
            let lo = b.min().coord(a) as f64;
            let hi = b.max().coord(a) as f64;
            lo >= self.origin[a] && hi < self.origin[a] + self.extent[a]
        })
    }

    /// Depth along one axis: the tree depth of the first cut across axis `a`
    /// that separates `lo` from `hi`, or at least `depth` if none does.
    /// Branch-free: `lo == hi` gives 64 leading zeros and a depth of
    /// `bits·dim + a`.
    #[inline(always)]
    fn axis_depth(&self, lo: u64, hi: u64, a: usize) -> u32 {
        (self.bits + (lo ^ hi).leading_zeros() - 64) * self.dim + a as u32
    }

    /// A node depth as stored: truncated to a multiple of `dim` for octree
    /// cells, capped at the tree depth.
    #[inline(always)]
    fn node_len(&self, t: u32) -> u32 {
        let t = t.min(self.depth);
        if self.octree { t - t % self.dim } else { t }
    }

    /// The key and depth of the smallest node containing `q`: the longest
    /// common prefix of its corners' Morton codes (§5.3), found per axis from
    /// the highest differing bit.
    #[inline(always)]
    pub fn whole_key<K: LocCode>(&self, q: &QBox) -> (K, u32) {
        let mut t = u32::MAX;
        for a in 0..self.dim as usize {
            t = t.min(self.axis_depth(q.lo[a], q.hi[a], a));
        }
        let len = self.node_len(t);
        let code = K::interleave(q.lo, self.dim as usize, self.bits);
        (K::node_key(code, self.depth, len), len)
    }

    /// The key of the full-depth node of a quantised point.
    #[inline(always)]
    pub fn point_key<K: LocCode>(&self, x: &[u64; 3]) -> K {
        K::node_key(
            K::interleave(*x, self.dim as usize, self.bits),
            self.depth,
            self.depth,
        )
    }
}

/// Splits boxes (§4), reusing its arrays from box to box.
///
/// A box is cut at most once per axis, along the first cutting plane each
/// node crosses, keeping a cut only where it lowers the total volume of the
/// enclosing cells by more than a factor `2^min_gain_log2` (`0`: any
/// reduction, so the Fig. 7 splits are skipped). The plan is optimal over the
/// split tree: a cut that does not pay by itself is kept if the cuts below it
/// make it pay. No recursion: the split tree has at most 15 nodes, decided
/// bottom up and emitted top down over fixed arrays.
///
/// An axis is cut at most once on any path, and the first cut across axis
/// `a` always falls on the box's own first plane across `a` (the node's range
/// on `a` is still the box's). So each axis has three possible ranges (whole,
/// lower side, upper side) with their depths computed once, every path cuts
/// the axes in the same order, and a node is just its number of cuts and its
/// sides: no box is copied.
///
/// Each cut is the first cut inside its node's cell, so the two sides lie in
/// the two halves of that cell and every piece's cell is disjoint from the
/// cells of the box's other pieces (in octree mode too: a kept cut makes
/// every piece below it a strictly smaller cell, each inside one side). The
/// duplicate-free sweep relies on that.
#[derive(Clone, Debug)]
pub(crate) struct Splitter<K> {
    pieces: [Piece<K>; MAX_PIECES],
}

impl<K: LocCode> Splitter<K> {
    pub fn new() -> Self {
        Self {
            pieces: [Piece::default(); MAX_PIECES],
        }
    }

    /// The pieces of `q` (one if nothing pays).
    #[inline]
    pub fn split(&mut self, f: &Frame, q: &QBox, min_gain_log2: u32) -> &[Piece<K>] {
        let n = if f.dim == 3 {
            self.split_dim::<3>(f, q, min_gain_log2)
        } else {
            self.split_dim::<2>(f, q, min_gain_log2)
        };
        &self.pieces[..n]
    }

    /// The plan of [`split`](Self::split) over fixed arrays, one level of
    /// the split tree after the other, with no array indexed by a level
    /// number. The plan is decided per box, so its cost is per element:
    /// the loop form over `[level][node]` tables (kept in the tests as the
    /// reference this must match piece for piece, in order) made the
    /// settling spheres' coding pass at 10⁶ about 87 ms, this form about
    /// 67 ms.
    #[inline(always)]
    fn split_dim<const DIM: usize>(&mut self, f: &Frame, q: &QBox, min_gain_log2: u32) -> usize {
        // Per axis: the depth of the whole range, of the lower and upper
        // sides of its first plane (`u32::MAX` when the range is one cell),
        // and the Morton bits of its lower end and of that plane.
        let mut whole = [u32::MAX; 3];
        let mut side = [[u32::MAX; 2]; 3];
        let mut code_lo = [K::ZERO; 3];
        let mut code_plane = [K::ZERO; 3];
        for a in 0..DIM {
            let (lo, hi) = (q.lo[a], q.hi[a]);
            whole[a] = f.axis_depth(lo, hi, a);
            code_lo[a] = K::spread_axis(lo, a, DIM, f.bits);
            if lo != hi {
                let h = 63 - (lo ^ hi).leading_zeros();
                let plane = (hi >> h) << h;
                side[a] = [f.axis_depth(lo, plane - 1, a), f.axis_depth(plane, hi, a)];
                code_plane[a] = K::spread_axis(plane, a, DIM, f.bits);
            }
        }
        // Axes by whole depth (distinct: the depth of axis `a` is `a`
        // modulo `dim`): every path of the split tree cuts them in this
        // order (see the type's documentation).
        let mut o = [0usize, 1, 2];
        if DIM == 3 {
            if whole[o[1]] < whole[o[0]] {
                o.swap(0, 1);
            }
            if whole[o[2]] < whole[o[1]] {
                o.swap(1, 2);
                if whole[o[1]] < whole[o[0]] {
                    o.swap(0, 1);
                }
            }
        } else if whole[1] < whole[0] {
            o.swap(0, 1);
        }
        // w[k]: whole depth of the k-th axis cut (u32::MAX past the last);
        // s[k]: its two sides' depths; bit k of a node's number p is the
        // side of the k-th cut.
        let mut w = [u32::MAX; 4];
        let mut s = [[u32::MAX; 2]; 3];
        let mut pl = [[K::ZERO; 2]; 3];
        let mut bit = [0u8; 3];
        for k in 0..DIM {
            w[k] = whole[o[k]];
            s[k] = side[o[k]];
            pl[k] = [code_lo[o[k]], code_plane[o[k]]];
            bit[k] = 1 << o[k];
        }
        let root = w[0];
        let root_len = f.node_len(root);
        let emit = |pieces: &mut [Piece<K>; MAX_PIECES], out: usize, k: usize, p: usize, t: u32| {
            // The piece's index and code: upper side across the axes of the
            // cuts on its path where p's bit is set, lower end elsewhere.
            let mut code = K::ZERO;
            let mut index = 0u8;
            for (i, (pli, bi)) in pl.iter().zip(bit).enumerate().take(DIM) {
                let up = i < k && (p >> i) & 1 == 1;
                code = code | pli[up as usize];
                index |= if up { bi } else { 0 };
            }
            pieces[out] = Piece {
                key: K::node_key(code, f.depth, f.node_len(t)),
                index,
            };
        };
        if root >= f.depth || min_gain_log2 > 60 {
            emit(&mut self.pieces, 0, 0, 0, root);
            return 1;
        }
        // m{k}[p]: smallest side depth along node (k, p)'s path; the node's
        // depth is min(w[k], m{k}[p]) and it can cut the next axis when
        // w[k] is below both that and the tree depth.
        let m1 = [s[0][0], s[0][1]];
        let mut m2 = [u32::MAX; 4];
        let mut m3 = [u32::MAX; 8];
        for p in 0..4 {
            m2[p] = m1[p & 1].min(s[1][p >> 1]);
        }
        for p in 0..8 {
            m3[p] = m2[p & 3].min(s[2][p >> 2]);
        }
        let vol = |t: u32| 1u64 << (60 - (f.node_len(t) - root_len).min(60));
        let g = min_gain_log2;
        let can = |k: usize, m: u32| w[k] < f.depth && w[k] < m;
        // Bottom up: each node's best volume (relative to the root's node,
        // 2^60) and whether its cut is kept (split · 2^gain < own).
        let mut b3 = [0u64; 8];
        for p in 0..8 {
            b3[p] = vol(m3[p].min(w[3]));
        }
        let mut b2 = [0u64; 4];
        let mut keep2 = [false; 4];
        for p in 0..4 {
            let own = vol(m2[p].min(w[2]));
            let split = b3[p] + b3[p | 4];
            keep2[p] = DIM > 2 && can(2, m2[p]) && split < own >> g;
            b2[p] = if keep2[p] { split } else { own };
        }
        let mut b1 = [0u64; 2];
        let mut keep1 = [false; 2];
        for p in 0..2 {
            let own = vol(m1[p].min(w[1]));
            let split = b2[p] + b2[p | 2];
            keep1[p] = DIM > 1 && can(1, m1[p]) && split < own >> g;
            b1[p] = if keep1[p] { split } else { own };
        }
        let own = vol(root);
        if b1[0] + b1[1] >= own >> g {
            emit(&mut self.pieces, 0, 0, 0, root);
            return 1;
        }
        // Top down, level by level: the leaves under the kept cuts.
        let mut out = 0;
        for p in 0..2 {
            if !keep1[p] {
                emit(&mut self.pieces, out, 1, p, m1[p].min(w[1]));
                out += 1;
            }
        }
        for p in 0..4 {
            if keep1[p & 1] && !keep2[p] {
                emit(&mut self.pieces, out, 2, p, m2[p].min(w[2]));
                out += 1;
            }
        }
        for p in 0..8 {
            if keep1[p & 1] && keep2[p & 3] {
                emit(&mut self.pieces, out, 3, p, m3[p].min(w[3]));
                out += 1;
            }
        }
        out
    }

    /// The loop form of [`split_dim`](Self::split_dim), kept to check it.
    #[cfg(test)]
    fn split_dim_reference<const DIM: usize>(
        &mut self,
        f: &Frame,
        q: &QBox,
        min_gain_log2: u32,
    ) -> usize {
        // Per axis: depth of the whole range and of the lower and upper sides
        // of its first plane, and the Morton bits of its lower end and plane.
        let mut depth = [[u32::MAX; 3]; DIM];
        let mut code_lo = [K::ZERO; DIM];
        let mut code_plane = [K::ZERO; DIM];
        for a in 0..DIM {
            let (lo, hi) = (q.lo[a], q.hi[a]);
            depth[a][0] = f.axis_depth(lo, hi, a);
            code_lo[a] = K::spread_axis(lo, a, DIM, f.bits);
            if lo != hi {
                let h = 63 - (lo ^ hi).leading_zeros();
                let plane = (hi >> h) << h;
                depth[a][1] = f.axis_depth(lo, plane - 1, a);
                depth[a][2] = f.axis_depth(plane, hi, a);
                code_plane[a] = K::spread_axis(plane, a, DIM, f.bits);
            }
        }
        // Cutting one axis leaves the other axes' depths as they were, so
        // every path cuts the axes in one order: by their whole-range depth.
        // A node that has cut the first k axes (sides s) has depth
        // min(whole depth of axis k, side depths along its path), and it cuts
        // axis k next exactly when that axis's whole depth is the smaller.
        let mut order = [0usize; 3];
        for (k, o) in order.iter_mut().enumerate().take(DIM) {
            *o = k;
        }
        for i in 1..DIM {
            let mut j = i;
            while j > 0 && depth[order[j]][0] < depth[order[j - 1]][0] {
                order.swap(j, j - 1);
                j -= 1;
            }
        }
        let whole = |k: usize| {
            if k < DIM {
                depth[order[k]][0]
            } else {
                u32::MAX
            }
        };
        let root = whole(0);
        let root_len = f.node_len(root);
        let emit = |pieces: &mut [Piece<K>; MAX_PIECES], out: usize, index: u8, len: u32| {
            let mut code = K::ZERO;
            for a in 0..DIM {
                code = code
                    | if index & (1 << a) != 0 {
                        code_plane[a]
                    } else {
                        code_lo[a]
                    };
            }
            pieces[out] = Piece {
                key: K::node_key(code, f.depth, len),
                index,
            };
        };
        if root >= f.depth || min_gain_log2 > 60 {
            emit(&mut self.pieces, 0, 0, root_len);
            return 1;
        }
        // Node (k, p): k axes cut, bit i of p the side of the i-th cut.
        // side_min[k][p]: smallest side depth along the path.
        // index[k][p]: the piece index (bit a: upper side across axis a).
        let mut side_min = [[u32::MAX; MAX_PIECES]; 4];
        let mut index = [[0u8; MAX_PIECES]; 4];
        for k in 0..DIM {
            let a = order[k];
            for p in 0..(1usize << k) {
                let m = side_min[k][p];
                side_min[k + 1][p] = m.min(depth[a][1]);
                side_min[k + 1][p | (1 << k)] = m.min(depth[a][2]);
                index[k + 1][p] = index[k][p];
                index[k + 1][p | (1 << k)] = index[k][p] | (1 << a);
            }
        }
        let node_depth = |k: usize, p: usize| side_min[k][p].min(whole(k));
        let cuts = |k: usize, p: usize| k < DIM && whole(k) < f.depth && whole(k) < side_min[k][p];
        let vol = |t: u32| 1u64 << (60 - (f.node_len(t) - root_len).min(60));
        // Bottom up: the best achievable volume of each node's subtree,
        // relative to the root's node (2^60), and whether its cut is kept.
        let mut best = [[0u64; MAX_PIECES]; 4];
        let mut keep = [[false; MAX_PIECES]; 4];
        for k in (0..=DIM).rev() {
            for p in 0..(1usize << k) {
                let own = vol(node_depth(k, p));
                best[k][p] = own;
                if cuts(k, p) {
                    let split = best[k + 1][p] + best[k + 1][p | (1 << k)];
                    // split · 2^gain < own, with own a power of two.
                    if split < own >> min_gain_log2 {
                        best[k][p] = split;
                        keep[k][p] = true;
                    }
                }
            }
        }
        // Top down: the leaves under the kept cuts.
        let mut active = [[false; MAX_PIECES]; 4];
        active[0][0] = true;
        let mut out = 0;
        for k in 0..=DIM {
            for p in 0..(1usize << k) {
                if !active[k][p] {
                    continue;
                }
                if keep[k][p] {
                    active[k + 1][p] = true;
                    active[k + 1][p | (1 << k)] = true;
                } else {
                    emit(
                        &mut self.pieces,
                        out,
                        index[k][p],
                        f.node_len(node_depth(k, p)),
                    );
                    out += 1;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Aabb2, Aabb3};

    fn check<K: LocCode, B: BoundingBox, const DIM: usize>() {
        let mut st = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            st
        };
        let (mut a, mut b) = (Splitter::<K>::new(), Splitter::<K>::new());
        let mut split = [0usize; MAX_PIECES + 1];
        for bits in 1..=K::max_bits_per_axis(DIM).min(12) {
            for octree in [false, true] {
                let f = Frame::new::<B>([0.0; 3], [1.0; 3], bits, octree);
                let top = (1u64 << bits) - 1;
                for _ in 0..3000 {
                    let mut q = QBox::default();
                    for x in 0..DIM {
                        let l = next() % (top + 1);
                        // Mostly small boxes, some spanning the root.
                        let span = match next() % 4 {
                            0 => next() % (top + 1),
                            _ => next() % 4,
                        };
                        q.lo[x] = l;
                        q.hi[x] = (l + span).min(top);
                    }
                    for g in [0, 1, 3, 5, 61] {
                        let na = a.split_dim::<DIM>(&f, &q, g);
                        let nb = b.split_dim_reference::<DIM>(&f, &q, g);
                        split[na] += 1;
                        assert_eq!(
                            a.pieces[..na],
                            b.pieces[..nb],
                            "bits {bits} octree {octree} gain {g} {q:?}"
                        );
                    }
                }
            }
        }
        // Whole boxes, two pieces and full splits all came up.
        assert!(
            split[1] > 0 && split[2] > 0 && split[1 << DIM] > 0,
            "{split:?}"
        );
    }

    /// The fixed-array plan gives the loop form's pieces, in its order.
    #[test]
    fn fixed_plan_is_the_loop_plan() {
        check::<u32, Aabb3, 3>();
        check::<u64, Aabb3, 3>();
        check::<u128, Aabb3, 3>();
        check::<u32, Aabb2, 2>();
        check::<u64, Aabb2, 2>();
    }
}
