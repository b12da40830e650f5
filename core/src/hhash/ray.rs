//! Ray casts through hierarchical and multilevel hashing: a 3D / 2D DDA
//! per class, largest class first, each stopped where its next cell lies
//! beyond the current bound.
//!
//! An object is stored in every cell of its class that its box overlaps,
//! so the cell holding the ray's entry point into it holds it. The walk
//! visits the cells the ray crosses in order, each with the stretch
//! `[t_in, t_out)` of the ray inside it, and reads the buckets of the cells
//! `C − 1 ..= C + 1` per axis: one cell of slack on each side for the
//! rounding of the walk against the cell function. Within a visited cell,
//! an object is taken only from the one read cell that holds the lowest
//! corner of its cells within that block (the integer test the box query
//! uses), and across cells only from the cell whose stretch holds its
//! entry parameter: each object once, hash collisions and objects stored
//! in many cells included, with no marks.
//!
//! The slack covers the rounding while cell coordinates stay below `2²⁰`
//! cells of the class from the origin; beyond that (and past a budget of
//! steps) the walk hands over to a scan of the class's slots for the entry
//! parameters it has not reached.

use super::{ClassHash, HashBucket, HashEntry, HashSlot, PARTICLE, STAMP_MASK, Scheme};
use crate::cell::floor_i32;
use crate::geom::{BoundingBox, Point};
use crate::ray::{Ray, lower};
use crate::storage::Storage;

/// Cells of a class, per axis from the origin, within which the walk's
/// rounding stays far below a cell.
const SAFE_CELLS: f32 = 1_048_576.0;

impl<S, B, Sl, Bk, En, Pt> ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    /// [`RayCast::ray_visit`](crate::RayCast::ray_visit) on an up-to-date
    /// table (see the module docs).
    pub(super) fn ray_walk<F: FnMut(u32, f32) -> f32>(&self, ray: &Ray<B::Point>, visit: &mut F) {
        if self.stamp == 0 || self.objects == 0 {
            return;
        }
        let slots = self.slots.as_ref();
        let mut bound = ray.max_t();
        let mut test = |id: u32, bound: &mut f32, from: f32, to: f32| {
            if let Some(s) = slots.get(id as usize)
                && let Some(t) = ray.enter_within(&s.aabb, *bound)
                && t >= from
                && t < to
            {
                *bound = lower(*bound, visit(id, t));
            }
        };
        for li in 0..self.n_levels.min(32) {
            let Some(&l) = self.order.get(li as usize) else {
                break;
            };
            let l = u32::from(l);
            if l < 32 && self.occupied & (1 << l) != 0 {
                self.ray_class(li, l, ray, &mut bound, &mut test);
            }
        }
    }

    fn ray_class<T: FnMut(u32, &mut f32, f32, f32)>(
        &self,
        li: u32,
        l: u32,
        ray: &Ray<B::Point>,
        bound: &mut f32,
        test: &mut T,
    ) {
        let d = B::Point::DIM;
        let slots = self.slots.as_ref();
        let table = self.table.as_ref();
        let scan = |from: f32, bound: &mut f32, test: &mut T| {
            for (id, s) in slots.iter().enumerate() {
                if s.level == l {
                    test(id as u32, bound, from, f32::INFINITY);
                }
            }
        };
        let base = self.config.base();
        let origin = self.config.origin();
        let o = ray.origin();
        let dir = ray.dir();
        let scale = (1u64 << l.min(40)) as f32;
        let safe = SAFE_CELLS * scale;
        if (0..d).any(|k| self.config.base_t(o.coord(k), k).abs() >= safe) {
            scan(f32::NEG_INFINITY, bound, test);
            return;
        }
        let lo = B::Point::from_fn(|k| origin.coord(k) - safe * base);
        let hi = B::Point::from_fn(|k| origin.coord(k) + safe * base);
        let Some((_, t1)) = ray.span(&lo, &hi, *bound) else {
            return;
        };
        let mut c = [0i32; 3];
        for (k, ck) in c.iter_mut().enumerate().take(d) {
            *ck = floor_i32(self.config.base_t(o.coord(k), k)) >> l.min(31);
        }
        let exit = |c: &[i32; 3], k: usize| -> f32 {
            let dk = dir.coord(k);
            if dk == 0.0 {
                return f32::INFINITY;
            }
            let face = i64::from(c[k]) + i64::from(dk > 0.0);
            let x = (face as f32 * scale) * base + origin.coord(k);
            (x - o.coord(k)) / dk
        };
        let limit = (SAFE_CELLS as i32).saturating_sub(2);
        let budget = (slots.len() / 8).max(16);
        let stamp = self.stamp;
        let mut steps = 0usize;
        let mut t_in = f32::NEG_INFINITY;
        loop {
            let (t_out, axis) = crate::ray::next_exit(d, |k| exit(&c, k));
            let last = t_out >= t1 || axis == usize::MAX;
            let to = if last { f32::INFINITY } else { t_out };
            // The cells C-1 ..= C+1 per axis.
            let n: i32 = if d == 3 { 27 } else { 9 };
            for j in 0..n {
                let mut cell = [0i32; 3];
                let mut m = j;
                for (k, ck) in cell.iter_mut().enumerate().take(d) {
                    *ck = c[k].saturating_add((m % 3) - 1);
                    m /= 3;
                }
                let key = self.key_of(li, &cell);
                let b = self.bucket_of(key);
                if table.get(b).is_none_or(|x| x.tag & STAMP_MASK != stamp) {
                    continue;
                }
                let mut prev = u32::MAX;
                for id in self.entries(b) {
                    if id & PARTICLE != 0 || id == prev {
                        continue;
                    }
                    prev = id;
                    let Some(s) = slots.get(id as usize) else {
                        continue;
                    };
                    // From the lowest read cell holding the object only.
                    let mut canonical = s.level == l;
                    for k in 0..d {
                        canonical &= (c[k].saturating_sub(1)).max(s.lo[k] >> l.min(31)) == cell[k];
                    }
                    if canonical {
                        test(id, bound, t_in, to);
                    }
                }
            }
            if last || to > *bound {
                return;
            }
            t_in = t_out;
            steps += 1;
            if steps > budget {
                break;
            }
            let s = if dir.coord(axis) > 0.0 { 1 } else { -1 };
            if let Some(ck) = c.get_mut(axis) {
                *ck = ck.saturating_add(s);
                if ck.unsigned_abs() > limit as u32 {
                    break;
                }
            }
        }
        scan(t_in, bound, test);
    }
}
