//! Finding overlaps: the pairs of the grids (Algorithm 4), of the unbounded
//! container, and the boxes of a grid overlapping a query box.

use super::{HhgRecord, HhgSlot, HierarchicalHashGrid, LOCAL_BITS, LOCAL_MASK, Level, NONE};
use crate::cell::floor_i32;
use crate::error::Error;
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;
#[cfg(doc)]
use crate::traits::BroadPhase;

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord<B>>, A: Storage<u32>>
    HierarchicalHashGrid<B, S, R, A>
{
    /// Calls `f` for every stored bounded box of the grids and the flat array.
    pub(super) fn for_each_bounded(&self, mut f: impl FnMut(u32)) {
        let slots = self.slots.as_ref();
        if !self.grid_mode {
            for r in &self.recs.as_ref()[..self.nrec as usize] {
                f(r.head);
            }
            return;
        }
        for r in &self.recs.as_ref()[..self.nrec as usize] {
            let mut a = r.head;
            while a != NONE {
                f(a);
                a = slots[a as usize].next;
            }
        }
    }

    /// Pairs involving the unbounded container.
    pub(super) fn unbounded_pairs<F: FnMut(u32, u32)>(&self, f: &mut F) {
        let slots = self.slots.as_ref();
        let mut u = self.unbounded_head;
        while u != NONE {
            let bu = slots[u as usize].aabb;
            let mut v = slots[u as usize].next;
            while v != NONE {
                if bu.overlaps(&slots[v as usize].aabb) {
                    f(u, v);
                }
                v = slots[v as usize].next;
            }
            self.for_each_bounded(|a| {
                if bu.overlaps(&slots[a as usize].aabb) {
                    f(u, a);
                }
            });
            u = slots[u as usize].next;
        }
    }

    /// Puts the occupied-cell records in key order (grid by grid, each
    /// grid's cells in memory order) and points the cells at them again, so
    /// that detection walks every grid front to back. `O(r log r)` for `r`
    /// occupied cells; [`BroadPhase::for_each_overlap`] calls it when an eighth
    /// of the records are new or moved since the last time.
    pub fn sort_records(&mut self) {
        if !self.grid_mode {
            return;
        }
        let n = self.nrec as usize;
        crate::sort::sort_by_key(&mut self.recs.as_mut()[..n], |r| r.key);
        for p in 0..n {
            let c = self.cell_word(self.recs.as_ref()[p].key);
            self.arena.as_mut()[c] = p as u32;
        }
        self.unsorted = 0;
    }

    /// The cells of a grid.
    #[inline(always)]
    pub(super) fn cells(&self, lv: &Level) -> &[u32] {
        &self.arena.as_ref()[lv.cells_at(Self::TABLE)..][..lv.cells]
    }

    /// The offset-table row of cell `local` (the cell itself, the forward
    /// half, then the backward half).
    #[inline(always)]
    pub(super) fn row(&self, lv: &Level, local: u32) -> &[u32] {
        let st = Self::STENCIL;
        &self.arena.as_ref()[lv.base + Self::class(lv, local) * st..][..st]
    }

    /// Refreshes the packed copy: the boxes of every occupied cell, with
    /// their ids, into consecutive record elements in record order, each
    /// record's `start` at its cell's first entry, a cell's boxes in list
    /// order. Returns the number of entries. `O(n)`; the only pass of
    /// detection that reads the slots (one per box, in cell order).
    pub(super) fn pack(&mut self) -> u32 {
        let slots = self.slots.as_ref();
        let recs = self.recs.as_mut();
        let mut j = 0usize;
        for p in 0..self.nrec as usize {
            recs[p].start = j as u32;
            let mut a = recs[p].head;
            while a != NONE {
                let s = &slots[a as usize];
                let e = &mut recs[j];
                e.id = a;
                e.aabb = s.aabb;
                j += 1;
                a = s.next;
            }
        }
        j as u32
    }

    /// The packed entries of record `q` (of `total` entries in all).
    #[inline]
    fn run(&self, q: usize, total: u32) -> &[HhgRecord<B>] {
        let (s, e) = self.span(q, total);
        &self.recs.as_ref()[s as usize..e as usize]
    }

    /// First and one-past-last packed entry of record `q` (of `total`).
    #[inline(always)]
    fn span(&self, q: usize, total: u32) -> (u32, u32) {
        let recs = self.recs.as_ref();
        let s = recs[q].start;
        let e = match recs[..self.nrec as usize].get(q + 1) {
            Some(r) => r.start,
            None => total,
        };
        (s, e)
    }

    /// Reports every entry of `b` that overlaps the entry `ea`.
    #[inline(always)]
    fn one_vs<F: FnMut(u32, u32)>(ea: &HhgRecord<B>, b: &[HhgRecord<B>], f: &mut F) {
        let ba = ea.aabb;
        for eb in b {
            if ba.overlaps(&eb.aabb) {
                f(ea.id, eb.id);
            }
        }
    }

    /// The axes (bit `k` for axis `k`) along which box `b` of level `lv`
    /// reaches into the next cell up: where the cell of its upper corner is
    /// above the cell of its lower corner, computed as the cell of a box is
    /// (`floor(x · inv)`). No box keyed in a cell one up along another axis
    /// can overlap `b`: such a box's lower corner maps to a cell above the
    /// one `b`'s upper corner maps to, so (the product being monotone) it
    /// lies above `b`'s upper corner; a box of a hash-aliased cell spans
    /// cells too far away to overlap either (every grid box spans at most
    /// two cells per axis and a grid has at least four). Exact: a skipped
    /// range holds no overlapping box.
    #[inline(always)]
    fn reach(lv: &Level, b: &B) -> u8 {
        let (lo, hi) = (b.min(), b.max());
        let mut m = 0u8;
        for k in 0..Self::D {
            let l = floor_i32(lo.coord(k) * lv.inv);
            let h = floor_i32(hi.coord(k) * lv.inv);
            m |= ((h != l) as u8) << k;
        }
        m
    }

    /// Pairs of the grids (Algorithm 4), over the packed copy of `total`
    /// entries that [`pack`](Self::pack) has just made.
    pub(super) fn grid_pairs<F: FnMut(u32, u32)>(&self, total: u32, f: &mut F) {
        self.grid_pairs_of(0, self.nrec as usize, total, f);
    }

    /// The pairs [`grid_pairs`](Self::grid_pairs) finds from the occupied
    /// cells of records `lo..hi` (each pair is found from exactly one
    /// record, so disjoint ranges find disjoint pairs).
    pub(super) fn grid_pairs_of<F: FnMut(u32, u32)>(
        &self,
        lo: usize,
        hi: usize,
        total: u32,
        f: &mut F,
    ) {
        let recs = self.recs.as_ref();
        let hi = hi.min(self.nrec as usize);
        // Per forward stencil entry, the axes along which it is one cell up.
        let mut up = [0u8; 13];
        for (u, h) in up.iter_mut().zip(B::Point::HALF_STENCIL) {
            for k in 0..Self::D {
                *u |= ((B::Point::cell_coord(*h, k) == 1) as u8) << k;
            }
        }
        for (p, r) in recs[..hi].iter().enumerate().skip(lo) {
            let k = r.key;
            let i = (k >> LOCAL_BITS) as usize;
            let local = k & LOCAL_MASK;
            let lv = &self.levels[i];
            let cells = self.cells(lv);
            let (own_s, own_e) = self.span(p, total);
            let own = &recs[own_s as usize..own_e as usize];
            // Forward half of the neighbours: the cell words first, so that
            // their loads overlap, then their runs as ranges of the packed
            // copy, a range joined to the one before when it starts where
            // that one ends (with sorted records, the cells `x-1..=x+1` of a
            // stencil row are consecutive runs: one range per row).
            let mut qs = [NONE; 13]; // the 3D half stencil (2D: 4)
            for (q, &off) in qs.iter_mut().zip(&self.row(lv, local)[1..=Self::HALF]) {
                *q = cells[local.wrapping_add(off) as usize];
            }
            let mut ranges = [(0u32, 0u32, 0u8); 13];
            let mut nr = 0usize;
            for (&q, &u) in qs[..Self::HALF].iter().zip(&up) {
                if q == NONE {
                    continue;
                }
                let (s, e) = self.span(q as usize, total);
                match nr.checked_sub(1).and_then(|l| ranges.get_mut(l)) {
                    Some(last) if last.1 == s => {
                        last.1 = e;
                        last.2 &= u;
                    }
                    _ => {
                        ranges[nr] = (s, e, u);
                        nr += 1;
                    }
                }
            }
            // Inside the cell, joined with the first range when it follows
            // the cell's run (the cell `x + 1`): each entry against the
            // entries after it up to that range's end. A range whose cells
            // are one cell up along an axis the entry does not reach into is
            // skipped (see [`reach`](Self::reach)).
            let (mut tail, mut tail_up, mut first) = (own_e, 0, 0);
            if nr > 0 && ranges[0].0 == own_e {
                (tail, tail_up, first) = (ranges[0].1, ranges[0].2, 1);
            }
            for (x, ea) in own.iter().enumerate() {
                let reach = Self::reach(lv, &ea.aabb);
                let t = if reach & tail_up == tail_up {
                    tail
                } else {
                    own_e
                };
                Self::one_vs(ea, &recs[own_s as usize + x + 1..t as usize], f);
                for &(s, e, u) in &ranges[first..nr] {
                    if reach & u == u {
                        Self::one_vs(ea, &recs[s as usize..e as usize], f);
                    }
                }
            }
            // Every grid with larger cells.
            let larger = self.active & !((2u32 << i) - 1);
            if larger == 0 {
                continue;
            }
            for ea in own {
                let mut m = larger;
                while m != 0 {
                    let h = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let lh = &self.levels[h];
                    let hl = Self::local(lh, ea.aabb.min());
                    let hcells = self.cells(lh);
                    for &off in self.row(lh, hl) {
                        let q = hcells[hl.wrapping_add(off) as usize];
                        if q != NONE {
                            let other = self.run(q as usize, total);
                            Self::one_vs(ea, other, f);
                        }
                    }
                }
            }
        }
    }

    /// Boxes of level `i` overlapping `q`: the cells from one below `q`'s
    /// lower corner to its upper corner (boxes are keyed by their lower
    /// corner), each cell once even when the range wraps.
    pub(super) fn query_level<F: FnMut(u32)>(&self, i: usize, q: &B, f: &mut F) {
        let lv = &self.levels[i];
        let slots = self.slots.as_ref();
        let recs = self.recs.as_ref();
        let cells = self.cells(lv);
        let mut lo = [0u32; 3];
        let mut n = [1u32; 3];
        let mut total = 1u64;
        for k in 0..Self::D {
            let dim = lv.mask[k] as u64 + 1;
            let a = (q.min().coord(k) * lv.inv).clamp(-2.0e9, 2.0e9);
            let b = (q.max().coord(k) * lv.inv).clamp(-2.0e9, 2.0e9);
            let l = floor_i32(a) as i64 - 1;
            let h = floor_i32(b) as i64;
            let span = (h - l + 1) as u64;
            if span >= dim {
                lo[k] = 0;
                n[k] = dim as u32;
            } else {
                lo[k] = (l as u32) & lv.mask[k];
                n[k] = span as u32;
            }
            total *= n[k] as u64;
        }
        let visit = |a0: u32, f: &mut F| {
            let mut a = a0;
            while a != NONE {
                let s = &slots[a as usize];
                if q.overlaps(&s.aabb) {
                    f(a);
                }
                a = s.next;
            }
        };
        if total > self.nrec as u64 {
            // Cheaper to walk the occupied cells of this level.
            for r in &recs[..self.nrec as usize] {
                if (r.key >> LOCAL_BITS) as usize == i {
                    visit(r.head, f);
                }
            }
            return;
        }
        for z in 0..n[2] {
            let cz = ((lo[2] + z) & lv.mask[2]) << lv.shift[2];
            for y in 0..n[1] {
                let cy = ((lo[1] + y) & lv.mask[1]) << lv.shift[1];
                for x in 0..n[0] {
                    let cx = ((lo[0] + x) & lv.mask[0]) << lv.shift[0];
                    let q = cells[(cx | cy | cz) as usize];
                    if q != NONE {
                        visit(recs[q as usize].head, f);
                    }
                }
            }
        }
    }

    /// [`BroadPhase::for_each_overlap`]: the grids' pairs (sorting the
    /// records first when enough moved) or every pair of the flat array,
    /// then the pairs of the unbounded container.
    pub(super) fn pairs<F: FnMut(u32, u32)>(&mut self, f: &mut F) {
        if self.grid_mode {
            // Walk the cells in memory order once an eighth of the records
            // have been added or moved since the last sort.
            if self.unsorted as u64 * 8 > self.nrec as u64 {
                self.sort_records();
            }
            let total = self.pack();
            self.grid_pairs(total, f);
        } else {
            let slots = self.slots.as_ref();
            let recs = self.recs.as_ref();
            let n = self.nrec as usize;
            for (p, ra) in recs[..n].iter().enumerate() {
                let a = ra.head;
                let ba = slots[a as usize].aabb;
                for rb in &recs[p + 1..n] {
                    let b = rb.head;
                    if ba.overlaps(&slots[b as usize].aabb) {
                        f(a, b);
                    }
                }
            }
        }
        self.unbounded_pairs(f);
    }

    /// [`BroadPhase::query`]: every grid (or the flat array), then the
    /// unbounded container.
    pub(super) fn query_box<F: FnMut(u32)>(&self, aabb: &B, f: &mut F) -> Result<(), Error> {
        Self::check_unbounded(aabb)?;
        let slots = self.slots.as_ref();
        if self.grid_mode {
            let mut m = self.active;
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                self.query_level(i, aabb, f);
            }
        } else {
            for r in &self.recs.as_ref()[..self.nrec as usize] {
                if aabb.overlaps(&slots[r.head as usize].aabb) {
                    f(r.head);
                }
            }
        }
        let mut u = self.unbounded_head;
        while u != NONE {
            let s = &slots[u as usize];
            if aabb.overlaps(&s.aabb) {
                f(u);
            }
            u = s.next;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::error::Validate;
    use crate::geom::{Aabb3, BoundingBox, Vec3};
    use crate::hhg::{BASE_LEVEL, HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid};
    use crate::inspect::Inspect;
    use crate::traits::BroadPhase;

    /// `x` moved by `d` units in the last place.
    fn ulps(x: f32, d: i32) -> f32 {
        if x == 0.0 {
            return f32::from_bits(d.unsigned_abs()) * d.signum() as f32;
        }
        let b = x.to_bits() as i32;
        let step = if x > 0.0 { d } else { -d };
        f32::from_bits((b + step) as u32)
    }

    /// Boxes whose faces sit on cell boundaries, or one or two ulps off,
    /// on every axis, in a grid of 4 cells per axis (so that cells also
    /// alias): the pairs are exactly the overlapping pairs (the neighbour
    /// ranges skipped by `reach` hold none), each once.
    #[test]
    fn faces_on_cell_boundaries_give_exact_pairs() {
        const N: usize = 192;
        let cfg = HhgConfig::DEFAULT
            .with_initial_cells_log2(2)
            .unwrap()
            .with_small_n_threshold(0);
        let mut g = HierarchicalHashGrid::new(
            [HhgSlot::<Aabb3>::EMPTY; N],
            [HhgRecord::EMPTY; N],
            [0u32; 2 * 793 + 100],
            cfg,
        );
        let first = Aabb3::new(Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 1.0, 1.0)).unwrap();
        g.insert(0, first).unwrap();
        let cell = g.levels[BASE_LEVEL].cell;
        let mut boxes = [first; N];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m) as i32
        };
        for b in boxes.iter_mut().skip(1) {
            let mut lo = [0.0f32; 3];
            let mut hi = [0.0f32; 3];
            for k in 0..3 {
                // One face on a boundary (± 2 ulps), the other 0.3 to 1 away.
                let at = ulps((next(5) - 2) as f32 * cell, next(5) - 2);
                let e = 0.3 + next(8) as f32 * 0.1;
                if next(2) == 0 {
                    (lo[k], hi[k]) = (at, at + e);
                } else {
                    (lo[k], hi[k]) = (at - e, at);
                }
            }
            *b = Aabb3::new(
                Vec3::new(lo[0], lo[1], lo[2]),
                Vec3::new(hi[0], hi[1], hi[2]),
            )
            .unwrap();
        }
        for (id, b) in boxes.iter().enumerate().skip(1) {
            g.insert(id as u32, *b).unwrap();
        }
        g.validate().unwrap();
        // Two grids (edges from 0.3 to 1 are on two levels), kept at 4
        // cells per axis by the short arena.
        let st = g.stats();
        assert_eq!(st.grids, 2);
        assert!(st.grid[..2].iter().all(|s| s.cells_per_axis == [4; 3]));
        let mut want = 0usize;
        let mut seen = [[false; N]; N];
        for a in 0..N {
            for b in a + 1..N {
                if boxes[a].overlaps(&boxes[b]) {
                    want += 1;
                }
            }
        }
        let mut got = 0usize;
        g.for_each_overlap(|a, b| {
            let (a, b) = (a.min(b) as usize, a.max(b) as usize);
            assert!(boxes[a].overlaps(&boxes[b]), "({a}, {b}) do not overlap");
            assert!(!seen[a][b], "({a}, {b}) twice");
            seen[a][b] = true;
            got += 1;
        })
        .unwrap();
        assert!(want > N / 2, "too few overlapping pairs to test: {want}");
        assert_eq!(got, want);
    }
}
