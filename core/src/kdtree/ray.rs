//! Ray casts through the linear kd-tree: a front-to-back walk of the
//! implicit binary tree over the sorted records.
//!
//! A node's records (its own, then its lower half's, then its upper half's)
//! are one run of the prefix-ordered records, so a node is its key, its
//! run and its quantised lower corner; the halves' runs are split by one
//! binary search on the upper half's rank. The walk keeps nodes on a stack
//! of fixed size (one entry per level of the deepest tree, plus one),
//! visits the near half first and drops a node whose cell the ray enters
//! beyond the current bound. Octree frames need nothing special: their
//! intermediate binary nodes simply hold no records.
//!
//! A node's cell is tested in real space, widened by a margin far above
//! the rounding of quantisation and of the entry point, and open towards
//! infinity on the sides of the root (clamped boxes live there), so the
//! test never drops a node the exact test would need.
//!
//! A split box has one record per piece; it is reported only from the
//! piece that holds the quantised entry point of the ray (clamped into the
//! box), which is exactly one piece — the rule the box query uses for the
//! lowest corner of an intersection.

use crate::error::Error;
use crate::geom::{BoundingBox, Point};
use crate::kdtree::{BoxSource, KdRecord, LinearKdTree, LocCode};
use crate::ray::{Ray, lower};
use crate::storage::Storage;

/// Deepest tree (`u128` codes) plus the root.
const STACK: usize = 129;

/// One node waiting on the walk's stack.
#[derive(Clone, Copy)]
struct Node<K> {
    key: K,
    len: u32,
    start: u32,
    end: u32,
    /// Quantised lower corner of the cell.
    qlo: [u64; 3],
    /// Where the ray enters the (widened) cell.
    t: f32,
}

impl<B: BoundingBox, K: LocCode, R: Storage<KdRecord<K>>> LinearKdTree<B, K, R> {
    /// Calls `visit(id, t_enter)` for the boxes of the last build the ray
    /// enters within the current bound, each once, front to back by node;
    /// `src` must be the boxes of the last build. See
    /// [`RayCast::ray_visit`](crate::RayCast::ray_visit).
    pub(crate) fn ray_in<S: BoxSource<B> + ?Sized, F: FnMut(u32, f32) -> f32>(
        &self,
        src: &S,
        ray: &Ray<B::Point>,
        mut visit: F,
    ) -> Result<(), Error> {
        let Some(frame) = self.frame else {
            return Ok(());
        };
        let recs = self.records();
        let dim = frame.dim as usize;
        let depth = frame.depth;
        let bits = frame.bits;
        let top = (1u64 << bits) - 1;
        let o = ray.origin();
        // The widening of a cell along each axis: 2⁻¹⁸ of the magnitudes
        // that enter its coordinates and the ray's points.
        let mut margin = [0f64; 3];
        for (a, m) in margin.iter_mut().enumerate().take(dim) {
            *m = (frame.origin[a].abs() + frame.extent[a] + f64::from(o.coord(a)).abs())
                * (1.0 / 262_144.0)
                + 1e-30;
        }
        let mut size = [0f64; 3];
        for (a, s) in size.iter_mut().enumerate().take(dim) {
            *s = 1.0 / frame.scale[a];
        }
        // The real-space cell of a node, widened; the root's sides open.
        let cell = |qlo: &[u64; 3], len: u32| -> (B::Point, B::Point) {
            let mut lo = [0f32; 3];
            let mut hi = [0f32; 3];
            for a in 0..dim {
                let cuts = (len + frame.dim - 1 - a as u32) / frame.dim;
                let r = bits.saturating_sub(cuts);
                let ql = qlo[a];
                let qh = ql.saturating_add((1u64 << r) - 1);
                let size = size[a];
                lo[a] = if ql == 0 {
                    f32::NEG_INFINITY
                } else {
                    (frame.origin[a] + ql as f64 * size - margin[a]) as f32
                };
                hi[a] = if qh >= top {
                    f32::INFINITY
                } else {
                    (frame.origin[a] + (qh + 1) as f64 * size + margin[a]) as f32
                };
            }
            (B::Point::from_fn(|a| lo[a]), B::Point::from_fn(|a| hi[a]))
        };
        let mut bound = ray.max_t();
        let (lo, hi) = cell(&[0; 3], 0);
        let Some((t_root, _)) = ray.span(&lo, &hi, bound) else {
            return Ok(());
        };
        let mut stack = [Node {
            key: K::ZERO,
            len: 0,
            start: 0,
            end: 0,
            qlo: [0; 3],
            t: 0.0,
        }; STACK];
        let mut sp = 0usize;
        if let Some(s) = stack.get_mut(sp) {
            *s = Node {
                key: K::node_key(K::ZERO, depth, 0),
                len: 0,
                start: 0,
                end: recs.len() as u32,
                qlo: [0; 3],
                t: t_root,
            };
            sp += 1;
        }
        while sp > 0 {
            sp -= 1;
            let Some(&n) = stack.get(sp) else { break };
            if n.t > bound {
                continue;
            }
            let run = recs
                .get(n.start as usize..n.end as usize)
                .unwrap_or_default();
            // The node's own records come first.
            let own = run.iter().take_while(|r| r.key == n.key).count();
            for r in run.iter().take(own) {
                let id = r.id();
                let Some(b) = src.get(id as usize) else {
                    continue;
                };
                let Some(te) = ray.enter_within(&b, bound) else {
                    continue;
                };
                if r.pieces() > 1 {
                    let (bl, bh) = (b.min(), b.max());
                    let x = ray.at(te);
                    let mut q = [0u64; 3];
                    for (a, qa) in q.iter_mut().enumerate().take(dim) {
                        let c = x.coord(a).max(bl.coord(a)).min(bh.coord(a));
                        *qa = frame.quantize::<K>(c, a);
                    }
                    if !K::contains(r.key, frame.point_key::<K>(&q)) {
                        continue;
                    }
                }
                bound = lower(bound, visit(id, te));
            }
            if n.len >= depth || own == run.len() {
                continue;
            }
            // The halves: split across axis `len mod dim` at the node's middle.
            let a = (n.len % frame.dim) as usize;
            let cuts = (n.len + frame.dim - 1 - a as u32) / frame.dim;
            let r = bits.saturating_sub(cuts);
            if r == 0 {
                continue;
            }
            let mut upper = n.qlo;
            if let Some(u) = upper.get_mut(a) {
                *u = u.saturating_add(1u64 << (r - 1));
            }
            let len = n.len + 1;
            // The halves' keys: the end marker moves down one bit, and the
            // upper half sets the bit it left.
            let half = 1u128 << (depth - len);
            let key = n.key.to_u128();
            let k_lo = K::from_u128(key - half);
            let k_hi = K::from_u128(key + half);
            let from = n.start as usize + own;
            let rank_hi = K::rank(k_hi, depth);
            let rest = recs.get(from..n.end as usize).unwrap_or_default();
            let mid = from + rest.partition_point(|r| K::rank(r.key, depth) < rank_hi);
            let halves = [(k_lo, n.qlo, from, mid), (k_hi, upper, mid, n.end as usize)];
            // Far half pushed first, so the near half is walked first.
            let near_is_upper = ray.dir().coord(a) < 0.0;
            let order = if near_is_upper { [0, 1] } else { [1, 0] };
            for i in order {
                let Some(&(key, qlo, s, e)) = halves.get(i) else {
                    continue;
                };
                if s >= e {
                    continue;
                }
                let (lo, hi) = cell(&qlo, len);
                let Some((t, _)) = ray.span(&lo, &hi, bound) else {
                    continue;
                };
                if let Some(slot) = stack.get_mut(sp) {
                    *slot = Node {
                        key,
                        len,
                        start: s as u32,
                        end: e as u32,
                        qlo,
                        t,
                    };
                    sp += 1;
                }
            }
        }
        Ok(())
    }
}
