//! The cell walk every query shares: the cells of a box at every class in
//! use, top-down with `hasChildren` pruning (hierarchical) or class by class
//! (multilevel), and the bound that switches a query to a scan.

use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;

use super::config::{advance, cell_count, shr};
use super::{ClassHash, FLAG, HashBucket, HashEntry, HashSlot, SCAN_FACTOR, STAMP_MASK, Scheme};

impl<S, B, Sl, Bk, En, Pt> ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    /// Calls `visit(li, cell, key, bucket)` for every cell of level at least
    /// `stop` that the base-cell range `[lo, hi]` overlaps and whose bucket
    /// holds data of the current step — in hierarchical hashing only below
    /// buckets flagged `hasChildren`.
    #[inline(always)]
    pub(super) fn traverse<V: FnMut(u32, &[i32; 3], u32, usize)>(
        &self,
        lo: &[i32; 3],
        hi: &[i32; 3],
        stop: u32,
        visit: V,
    ) {
        let mut budget = u64::MAX;
        self.walk(lo, hi, stop, &mut budget, visit);
    }

    /// [`traverse`](Self::traverse), stopping after `budget` enumerated
    /// cells (each enumerated cell, its bucket current or not, takes one
    /// from `budget`); `false` if it stopped early.
    #[inline(always)]
    pub(super) fn walk<V: FnMut(u32, &[i32; 3], u32, usize)>(
        &self,
        lo: &[i32; 3],
        hi: &[i32; 3],
        stop: u32,
        budget: &mut u64,
        visit: V,
    ) -> bool {
        // The budget in a local (a register), written back once.
        let left = self.walk_local(lo, hi, stop, *budget, visit);
        *budget = left.unwrap_or(0);
        left.is_some()
    }

    /// [`walk`](Self::walk) with the budget by value: the budget left, or
    /// `None` if it ran out.
    #[inline(always)]
    fn walk_local<V: FnMut(u32, &[i32; 3], u32, usize)>(
        &self,
        lo: &[i32; 3],
        hi: &[i32; 3],
        stop: u32,
        mut budget: u64,
        mut visit: V,
    ) -> Option<u64> {
        let table = self.table.as_ref();
        let stamp = self.stamp;
        if stamp == 0 {
            return Some(budget); // never used: nothing stored, the table unchecked
        }
        if S::HIERARCHICAL {
            // Depth-first from the largest class, only below flagged cells
            // (Listing 2's pruning).
            let mut deepest = 0usize;
            while deepest + 1 < self.n_levels as usize && self.order[deepest + 1] as u32 >= stop {
                deepest += 1;
            }
            // No recursion (the firmware's call-graph check): `cur[d]` is the
            // cell visited at depth `d` of `order`, `keys[d]` the key of its
            // parent. A level's range (the children of `cur[d - 1]` that the
            // query overlaps) is recomputed when the cell advances: cheaper
            // than zeroing a third array per query, as ranges are short.
            let top = self.order[0] as u32;
            let mut cur = [[0i32; 3]; 32];
            let mut keys = [0u32; 32];
            cur[0] = shr(lo, top);
            let mut d = 0usize;
            loop {
                if budget == 0 {
                    return None;
                }
                budget -= 1;
                let l = self.order[d] as u32;
                let cell = cur[d];
                let key = keys[d].wrapping_add(Self::h(&cell, l));
                let b = self.bucket_of(key);
                let tag = table[b].tag;
                if tag & STAMP_MASK == stamp {
                    visit(d as u32, &cell, key, b);
                    if tag & FLAG != 0 && d < deepest {
                        let (clo, _) = self.child_range(lo, hi, &cell, d);
                        d += 1;
                        cur[d] = clo;
                        keys[d] = key;
                        continue;
                    }
                }
                // Next cell: advance at this depth, popping finished levels.
                loop {
                    let (rlo, rhi) = if d == 0 {
                        (shr(lo, top), shr(hi, top))
                    } else {
                        self.child_range(lo, hi, &cur[d - 1], d - 1)
                    };
                    if advance::<B::Point>(&mut cur[d], &rlo, &rhi) {
                        break;
                    }
                    if d == 0 {
                        return Some(budget);
                    }
                    d -= 1;
                }
            }
        }
        {
            for li in 0..self.n_levels {
                let l = self.order[li as usize] as u32;
                if l < stop {
                    break;
                }
                if self.occupied & (1 << l) == 0 {
                    continue; // a class with nothing stored
                }
                let (clo, chi) = (shr(lo, l), shr(hi, l));
                let mut c = clo;
                loop {
                    if budget == 0 {
                        return None;
                    }
                    budget -= 1;
                    let key = Self::h(&c, l);
                    let b = self.bucket_of(key);
                    if table[b].tag & STAMP_MASK == stamp {
                        visit(li, &c, key, b);
                    }
                    if !advance::<B::Point>(&mut c, &clo, &chi) {
                        break;
                    }
                }
            }
        }
        Some(budget)
    }

    /// `true` if walking the base-cell range `[lo, hi]` down to level
    /// `stop` would enumerate more than [`SCAN_FACTOR`]` · (C + N + 64)`
    /// cells: queries then scan the slots and particles instead, so a query
    /// costs `O(SCAN_FACTOR · (C + N))` at most, whatever its box and
    /// however many keys collide.
    #[inline(always)]
    pub(super) fn too_many_cells(&self, lo: &[i32; 3], hi: &[i32; 3], stop: u32) -> bool {
        let scan = self.slots.as_ref().len() as u64 + self.n_particles as u64 + 64;
        let limit = SCAN_FACTOR.saturating_mul(scan);
        self.walk_exceeds(lo, hi, stop, limit)
    }

    /// `true` if the walk would enumerate more than `limit` cells. Cheap when
    /// the cells of the range at every level fit the limit; otherwise (only
    /// hierarchical hashing can prune below that) a dry walk counts.
    pub(super) fn walk_exceeds(&self, lo: &[i32; 3], hi: &[i32; 3], stop: u32, limit: u64) -> bool {
        // Quick accept: the finest level has the most cells.
        if cell_count::<B::Point>(lo, hi, stop).saturating_mul(self.n_levels as u64) <= limit {
            return false;
        }
        let mut total = 0u64;
        for i in 0..self.n_levels as usize {
            let l = self.order[i] as u32;
            if l < stop {
                break;
            }
            if !S::HIERARCHICAL && self.occupied & (1 << l) == 0 {
                continue;
            }
            total = total.saturating_add(cell_count::<B::Point>(lo, hi, l));
        }
        if total <= limit {
            return false;
        }
        let mut budget = limit;
        !S::HIERARCHICAL || !self.walk(lo, hi, stop, &mut budget, |_, _, _, _| {})
    }

    /// The cells of level `order[d + 1]` inside `parent` (a cell of level
    /// `order[d]`) that the base-cell range `[lo, hi]` overlaps (never
    /// empty when `parent` overlaps the range).
    #[inline(always)]
    pub(super) fn child_range(
        &self,
        lo: &[i32; 3],
        hi: &[i32; 3],
        parent: &[i32; 3],
        d: usize,
    ) -> ([i32; 3], [i32; 3]) {
        let l = self.order[d] as u32;
        let l2 = self.order[d + 1] as u32;
        let fan = l - l2;
        let mut clo = [0; 3];
        let mut chi = [0; 3];
        for k in 0..B::Point::DIM {
            let first = (parent[k] as i64) << fan;
            let last = ((parent[k] as i64 + 1) << fan) - 1;
            clo[k] = first.max((lo[k] >> l2) as i64) as i32;
            chi[k] = last.min((hi[k] >> l2) as i64) as i32;
        }
        (clo, chi)
    }
}
