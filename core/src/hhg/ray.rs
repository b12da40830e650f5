//! Ray casts through the hierarchical hash grid: a 3D / 2D DDA per grid,
//! coarse grids first, each stopped where its next cell lies beyond the
//! current bound.
//!
//! A box is keyed by the cell of its lower corner and spans at most two
//! cells per axis, so the ray's entry point into it lies in the key cell or
//! the one above along each axis. The walk visits the cells the ray crosses
//! in order, each with the stretch `[t_in, t_out)` of the ray inside it,
//! and looks at the boxes keyed in the cells `C − 2 ..= C + 1` per axis: one cell of slack on each side for
//! the rounding of the walk against the floors of the keys (coordinates
//! are below 2²⁰ cells, so that rounding is far below a cell). A box is
//! reported only from the cell whose stretch holds its entry parameter:
//! the stretches partition the ray, so each box once, whatever cells it is
//! seen from (hash aliases included), with no marks. A grid has at least 4
//! cells per axis, so the 4 cells per axis looked at fold onto distinct
//! cells.
//!
//! The walk is budgeted: past as many steps as the grid has occupied cells
//! it is cheaper to test the grid's boxes one by one, and the walk hands
//! over to a scan of the grid's occupied cells for the entry parameters it
//! has not reached. The small-N flat array and the unbounded objects are
//! scanned.

use super::{HhgRecord, HhgSlot, HierarchicalHashGrid, LEVELS, LOCAL_BITS};
use crate::cell::{HHG_RANGE_CELLS, floor_i32};
use crate::error::Error;
use crate::geom::{BoundingBox, Point};
use crate::ray::{Ray, lower};
use crate::storage::Storage;
use crate::table::NONE;

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord<B>>, A: Storage<u32>>
    HierarchicalHashGrid<B, S, R, A>
{
    /// [`RayCast::ray_visit`](crate::RayCast::ray_visit) (see the module
    /// docs).
    pub(super) fn ray_walk<F: FnMut(u32, f32) -> f32>(
        &self,
        ray: &Ray<B::Point>,
        visit: &mut F,
    ) -> Result<(), Error> {
        let slots = self.slots.as_ref();
        let mut bound = ray.max_t();
        // Unbounded objects and the flat array: every box once.
        // `visit` for a box entered within the bound and in `[from, to)`.
        let mut test = |id: u32, bound: &mut f32, from: f32, to: f32| {
            if let Some(s) = slots.get(id as usize)
                && let Some(t) = ray.enter_within(&s.aabb, *bound)
                && t >= from
                && t < to
            {
                *bound = lower(*bound, visit(id, t));
            }
        };
        let all = (f32::NEG_INFINITY, f32::INFINITY);
        let mut u = self.unbounded_head;
        while u != NONE {
            test(u, &mut bound, all.0, all.1);
            u = slots.get(u as usize).map_or(NONE, |s| s.next);
        }
        let recs = self.recs.as_ref();
        let recs = recs.get(..self.nrec as usize).unwrap_or_default();
        if !self.grid_mode {
            for r in recs {
                test(r.head, &mut bound, all.0, all.1);
            }
            return Ok(());
        }
        // Coarse grids first: few steps, and they shorten the ray early.
        let mut m = self.active;
        while m != 0 {
            let i = 31 - m.leading_zeros() as usize;
            m &= !(1u32 << i);
            if i >= LEVELS {
                continue;
            }
            self.ray_level(i, ray, &mut bound, &mut test);
        }
        Ok(())
    }

    fn ray_level<T: FnMut(u32, &mut f32, f32, f32)>(
        &self,
        i: usize,
        ray: &Ray<B::Point>,
        bound: &mut f32,
        test: &mut T,
    ) {
        let Some(lv) = self.levels.get(i) else { return };
        if !lv.usable || !lv.active {
            return;
        }
        let d = Self::D;
        let slots = self.slots.as_ref();
        let recs = self.recs.as_ref();
        let cells = self.cells(lv);
        let list = |head: u32, bound: &mut f32, from: f32, to: f32, test: &mut T| {
            let mut a = head;
            while a != NONE {
                test(a, bound, from, to);
                a = slots.get(a as usize).map_or(NONE, |s| s.next);
            }
        };
        // Clip to the grid's range (every box of the grid lies inside it).
        let reach = (HHG_RANGE_CELLS + 4.0) * lv.cell;
        let lo = B::Point::from_fn(|_| -reach);
        let hi = B::Point::from_fn(|_| reach);
        let Some((t0, t1)) = ray.span(&lo, &hi, *bound) else {
            return;
        };
        let o = ray.origin();
        let dir = ray.dir();
        let scan = |from: f32, bound: &mut f32, test: &mut T| {
            for r in recs.get(..self.nrec as usize).unwrap_or_default() {
                if (r.key >> LOCAL_BITS) as usize == i {
                    list(r.head, bound, from, f32::INFINITY, test);
                }
            }
        };
        // An origin beyond the grid's range: the walk's rounding would no
        // longer be small against a cell; test the grid's boxes instead.
        if (0..d).any(|k| (o.coord(k) * lv.inv).abs() >= HHG_RANGE_CELLS) {
            scan(f32::NEG_INFINITY, bound, test);
            return;
        }
        let p = ray.at(t0);
        let lim = HHG_RANGE_CELLS as i32 + 8;
        let mut c = [0i32; 3];
        for (k, ck) in c.iter_mut().enumerate().take(d) {
            *ck = floor_i32((p.coord(k) * lv.inv).clamp(-(lim as f32), lim as f32));
        }
        // Where the walk leaves cell `c` along axis `k`.
        let exit = |c: &[i32; 3], k: usize| -> f32 {
            let dk = dir.coord(k);
            if dk == 0.0 {
                return f32::INFINITY;
            }
            let face = if dk > 0.0 { c[k] + 1 } else { c[k] };
            (face as f32 * lv.cell - o.coord(k)) / dk
        };
        let budget = lv.occupied.max(8);
        let mut steps = 0u32;
        let mut t_in = f32::NEG_INFINITY;
        loop {
            let (t_out, axis) = crate::ray::next_exit(d, |k| exit(&c, k));
            let last = t_out >= t1 || axis == usize::MAX;
            let to = if last { f32::INFINITY } else { t_out };
            // The cells C-2 ..= C+1 per axis.
            let n = 1usize << (2 * d);
            for j in 0..n {
                let mut local = 0u32;
                for (k, ck) in c.iter().enumerate().take(d) {
                    let off = ((j >> (2 * k)) & 3) as i32 - 2;
                    let x = ck.wrapping_add(off) as u32;
                    local |= (x & lv.mask[k]) << lv.shift[k];
                }
                if let Some(&q) = cells.get(local as usize)
                    && q != NONE
                    && let Some(r) = recs.get(q as usize)
                {
                    list(r.head, bound, t_in, to, test);
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
            if let Some(ck) = c.get_mut(axis) {
                let s = if dir.coord(axis) > 0.0 { 1 } else { -1 };
                *ck = ck.saturating_add(s).clamp(-lim, lim);
            }
        }
        // Over budget: the grid's boxes entered from `t_in` on, one by one.
        scan(t_in, bound, test);
    }
}
