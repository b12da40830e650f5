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
    /// Depth per axis (see `Frame::axis_depth`).
    t: [u32; 3],
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

    /// Depth along one axis: the tree depth of the first cut across axis `a`
    /// that separates `lo` from `hi`, or at least `depth` if none does.
    /// Branch-free: `lo == hi` gives 64 leading zeros and a depth of
    /// `bits·dim + a`.
    #[inline(always)]
    fn axis_depth(&self, lo: u64, hi: u64, a: usize) -> u32 {
        (self.bits + (lo ^ hi).leading_zeros() - 64) * self.dim + a as u32
    }

    /// Depth and first cut of the smallest node containing `q`: the longest
    /// common prefix of the Morton codes of its corners, computed per axis
    /// from the highest differing bit (§5.3).
    #[inline(always)]
    fn cut(&self, q: &QBox) -> Cut {
        let mut t = [u32::MAX; 3];
        for (a, ta) in t.iter_mut().enumerate().take(self.dim as usize) {
            *ta = self.axis_depth(q.lo[a], q.hi[a], a);
        }
        self.cut_from(q, t)
    }

    #[inline(always)]
    fn cut_from(&self, q: &QBox, t: [u32; 3]) -> Cut {
        let mut a = 0;
        if t[1] < t[a] {
            a = 1;
        }
        if t[2] < t[a] {
            a = 2;
        }
        if t[a] >= self.depth {
            return Cut {
                len: self.depth - if self.octree { self.depth % self.dim } else { 0 },
                axis: 3,
                plane: 0,
                t,
            };
        }
        let h = 63 - (q.lo[a] ^ q.hi[a]).leading_zeros();
        let len = if self.octree {
            t[a] - t[a] % self.dim
        } else {
            t[a]
        };
        Cut {
            len,
            axis: a as u8,
            plane: (q.hi[a] >> h) << h,
            t,
        }
    }

    /// The node key of a piece.
    #[inline(always)]
    pub fn key<K: LocCode>(&self, p: &Piece) -> K {
        let code = K::interleave(p.q.lo, self.dim as usize, self.bits);
        K::node_key(code, self.depth, p.len)
    }

    /// The key of the full-depth node of a quantised point.
    #[inline(always)]
    pub fn point_key<K: LocCode>(&self, x: &[u64; 3]) -> K {
        K::node_key(K::interleave(*x, self.dim as usize, self.bits), self.depth, self.depth)
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
}

/// Splits boxes (§4), reusing its node and piece arrays from box to box.
///
/// A box is cut at most once per axis, along the first cutting plane each
/// node crosses, keeping a cut only where it lowers the total volume of the
/// enclosing cells by more than a factor `2^min_gain_log2` (`0`: any
/// reduction, so the Fig. 7 splits are skipped). The plan is optimal over the
/// split tree: a cut that does not pay by itself is kept if the cuts below it
/// make it pay. No recursion: the tree has at most 15 nodes, built breadth
/// first and decided bottom up.
///
/// Each cut is the first cut inside its node's cell, so the two sides lie in
/// the two halves of that cell and every piece's cell is disjoint from the
/// cells of the box's other pieces (in octree mode too: a kept cut makes both
/// sides strictly smaller cells, each inside one child octant). The
/// duplicate-free sweep relies on that.
#[derive(Clone, Debug)]
pub(crate) struct Splitter {
    nodes: [Node; MAX_NODES],
    best: [u64; MAX_NODES],
    /// The pieces of the last split.
    pub pieces: [Piece; MAX_PIECES],
    /// How many.
    pub count: usize,
}

impl Splitter {
    pub fn new() -> Self {
        Self {
            nodes: [Node::default(); MAX_NODES],
            best: [0; MAX_NODES],
            pieces: [Piece::default(); MAX_PIECES],
            count: 0,
        }
    }

    /// Splits `q`; the pieces are `self.pieces[..self.count]`.
    #[inline]
    pub fn split(&mut self, f: &Frame, q: &QBox, min_gain_log2: u32) -> &[Piece] {
        let limit = if f.dim == 3 { MAX_NODES } else { 7 };
        let root = f.cut(q);
        self.nodes[0] = Node {
            q: *q,
            cut: root,
            done: 0,
            index: 0,
            child: 0,
            split: false,
        };
        if root.axis == 3 {
            return self.single(&self.nodes[0].clone());
        }
        let mut count = 1;
        let mut n = 0;
        while n < count {
            let node = self.nodes[n];
            let axis = node.cut.axis;
            self.nodes[n].child = 0;
            self.nodes[n].split = false;
            if axis < 3 && node.done & (1 << axis) == 0 && count + 2 <= limit {
                let a = axis as usize;
                let done = node.done | (1 << axis);
                let mut lower = node.q;
                lower.hi[a] = node.cut.plane - 1;
                let mut t = node.cut.t;
                t[a] = f.axis_depth(lower.lo[a], lower.hi[a], a);
                self.nodes[count] = Node {
                    q: lower,
                    cut: f.cut_from(&lower, t),
                    done,
                    index: node.index,
                    child: 0,
                    split: false,
                };
                let mut upper = node.q;
                upper.lo[a] = node.cut.plane;
                t[a] = f.axis_depth(upper.lo[a], upper.hi[a], a);
                self.nodes[count + 1] = Node {
                    q: upper,
                    cut: f.cut_from(&upper, t),
                    done,
                    index: node.index | (1 << axis),
                    child: 0,
                    split: false,
                };
                self.nodes[n].child = count as u8;
                count += 2;
            }
            n += 1;
        }
        if count == 1 {
            return self.single(&self.nodes[0].clone());
        }
        // Bottom up: best achievable volume, relative to the root's node
        // (2^60 = the root's cell; each level deeper halves it).
        let root_len = root.len;
        for i in (0..count).rev() {
            let node = &mut self.nodes[i];
            let own = 1u64 << (60 - (node.cut.len - root_len).min(60));
            let mut best = own;
            let c = node.child as usize;
            if c != 0 {
                let split = self.best[c] + self.best[c + 1];
                if ((split as u128) << min_gain_log2) < own as u128 {
                    best = split;
                    node.split = true;
                }
            }
            self.best[i] = best;
        }
        // Top down: the leaves of the kept cuts (children follow parents, so
        // one forward pass marks them).
        let mut active = [false; MAX_NODES];
        active[0] = true;
        let mut out = 0;
        for i in 0..count {
            if !active[i] {
                continue;
            }
            let node = &self.nodes[i];
            if node.split {
                let c = node.child as usize;
                active[c] = true;
                active[c + 1] = true;
            } else {
                self.pieces[out] = Piece {
                    q: node.q,
                    len: node.cut.len,
                    index: node.index,
                };
                out += 1;
            }
        }
        self.count = out;
        &self.pieces[..out]
    }

    fn single(&mut self, node: &Node) -> &[Piece] {
        self.pieces[0] = Piece {
            q: node.q,
            len: node.cut.len,
            index: 0,
        };
        self.count = 1;
        &self.pieces[..1]
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
