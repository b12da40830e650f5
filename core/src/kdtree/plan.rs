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

/// How a node is cut next: its depth, and the first cut inside it.
#[derive(Clone, Copy, Debug, Default)]
struct Cut {
    /// Node depth (truncated to a multiple of `dim` in octree mode).
    len: u32,
    /// Axis of the first cutting plane the node's range crosses (or 3 if
    /// none: the node is at full depth).
    axis: u8,
    /// The plane: first integer coordinate of the upper side.
    plane: u64,
}

/// The most pieces one box splits into.
pub(crate) const MAX_PIECES: usize = 8;
/// Nodes of the full split tree (1 + 2 + 4 + 8).
const MAX_NODES: usize = 15;

/// One piece of a split box: its range, depth and index (bit `a` set if it is
/// on the upper side of the cut across axis `a`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Piece {
    pub q: QBox,
    pub len: u32,
    pub index: u8,
}

/// The pieces of one box.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pieces {
    pub items: [Piece; MAX_PIECES],
    pub count: usize,
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
                (t as u64).min(top)
            }
        } else {
            let t = (x - self.origin32[axis]) * self.scale32[axis];
            if t.is_nan() || t <= 0.0 {
                0
            } else if t >= top as f32 {
                top
            } else {
                (t as u64).min(top)
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

    /// Depth and first cut of the smallest node containing `q`: the longest
    /// common prefix of the Morton codes of its corners, computed per axis
    /// from the highest differing bit (§5.3).
    #[inline(always)]
    fn cut(&self, q: &QBox) -> Cut {
        let dim = self.dim;
        let mut best = Cut {
            len: self.depth,
            axis: 3,
            plane: 0,
        };
        for a in 0..dim as usize {
            let x = q.lo[a] ^ q.hi[a];
            if x != 0 {
                let h = 63 - x.leading_zeros();
                let t = (self.bits - 1 - h) * dim + a as u32;
                if t < best.len {
                    best = Cut {
                        len: t,
                        axis: a as u8,
                        plane: (q.hi[a] >> h) << h,
                    };
                }
            }
        }
        if self.octree {
            best.len -= best.len % dim;
        }
        best
    }

    /// The node key of a piece.
    #[inline(always)]
    pub fn key<K: LocCode>(&self, p: &Piece) -> K {
        let code = K::interleave(p.q.lo, self.dim as usize, self.bits);
        K::node_key(code, self.depth, p.len)
    }

    /// Splits `q` at most once per axis, along the first cutting plane each
    /// node crosses, keeping a cut only where it lowers the total volume of
    /// the enclosing cells by more than a factor `2^min_gain_log2`
    /// (`0`: any reduction, Fig. 7). The plan is optimal over the split
    /// tree: a cut that does not pay by itself is kept if the cuts below it
    /// make it pay. No recursion: the tree has at most 15 nodes, built breadth
    /// first and decided bottom up.
    pub fn split(&self, q: &QBox, min_gain_log2: u32) -> Pieces {
        let mut nodes = [Node::default(); MAX_NODES];
        let limit = if self.dim == 3 { MAX_NODES } else { 7 };
        nodes[0] = Node {
            q: *q,
            cut: self.cut(q),
            ..Node::default()
        };
        let root_len = nodes[0].cut.len;
        let mut count = 1;
        let mut n = 0;
        while n < count {
            let node = nodes[n];
            let axis = node.cut.axis;
            if axis < 3 && node.done & (1 << axis) == 0 && count + 2 <= limit {
                let a = axis as usize;
                let mut lower = node.q;
                lower.hi[a] = node.cut.plane - 1;
                let mut upper = node.q;
                upper.lo[a] = node.cut.plane;
                let done = node.done | (1 << axis);
                nodes[count] = Node {
                    q: lower,
                    cut: self.cut(&lower),
                    done,
                    index: node.index,
                    ..Node::default()
                };
                nodes[count + 1] = Node {
                    q: upper,
                    cut: self.cut(&upper),
                    done,
                    index: node.index | (1 << axis),
                    ..Node::default()
                };
                nodes[n].child = count as u8;
                count += 2;
            }
            n += 1;
        }
        // Bottom up: best achievable volume, relative to the root's node
        // (2^60 = the root's cell; a level deeper halves it).
        let vol = |len: u32| -> u64 { 1u64 << (60 - (len - root_len).min(60)) };
        let mut best = [0u64; MAX_NODES];
        for i in (0..count).rev() {
            let own = vol(nodes[i].cut.len);
            best[i] = own;
            let c = nodes[i].child as usize;
            if c != 0 {
                let split = best[c] + best[c + 1];
                if ((split as u128) << min_gain_log2) < own as u128 {
                    best[i] = split;
                    nodes[i].split = true;
                }
            }
        }
        // Top down: the leaves of the chosen cuts.
        let mut out = Pieces {
            items: [Piece::default(); MAX_PIECES],
            count: 0,
        };
        let mut active = [false; MAX_NODES];
        active[0] = true;
        for i in 0..count {
            if !active[i] {
                continue;
            }
            if nodes[i].split {
                let c = nodes[i].child as usize;
                active[c] = true;
                active[c + 1] = true;
            } else {
                out.items[out.count] = Piece {
                    q: nodes[i].q,
                    len: nodes[i].cut.len,
                    index: nodes[i].index,
                };
                out.count += 1;
            }
        }
        out
    }

    /// The unsplit box as a single piece.
    #[inline(always)]
    pub fn whole(&self, q: &QBox) -> Piece {
        Piece {
            q: *q,
            len: self.cut(q).len,
            index: 0,
        }
    }

    /// Index of the piece of `q`'s split (with `min_gain_log2`) that contains
    /// the quantised point `x` (which must lie in `q`).
    pub fn piece_of(&self, q: &QBox, min_gain_log2: u32, x: &[u64; 3]) -> u8 {
        let pieces = self.split(q, min_gain_log2);
        for p in &pieces.items[..pieces.count] {
            if (0..self.dim as usize).all(|a| p.q.lo[a] <= x[a] && x[a] <= p.q.hi[a]) {
                return p.index;
            }
        }
        // Unreachable for x in q (the pieces partition q); a value no record
        // carries keeps the callers' "is this the canonical piece" false.
        u8::MAX
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Node {
    q: QBox,
    cut: Cut,
    /// Axes already cut on the path from the root.
    done: u8,
    /// Piece index so far.
    index: u8,
    /// Index of the lower child (the upper is next), 0 if none.
    child: u8,
    /// The plan keeps this node's cut.
    split: bool,
}
