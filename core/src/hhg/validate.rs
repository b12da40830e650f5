//! The [`Validate`] implementation: every invariant of the grids, the
//! record list, the cell lists and the unbounded container.

use super::{
    HhgRecord, HhgSlot, HierarchicalHashGrid, KEY_FLAT, KEY_TOO_LARGE, KEY_UNBOUNDED, LEVELS,
    LOCAL_BITS, LOCAL_MASK, NONE, is_grid_key,
};
use crate::error::{Corruption, Validate, ensure};
use crate::geom::BoundingBox;
use crate::storage::Storage;

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord<B>>, A: Storage<u32>> Validate
    for HierarchicalHashGrid<B, S, R, A>
{
    fn validate(&self) -> Result<(), Corruption> {
        const W: &str = "HierarchicalHashGrid";
        let slots = self.slots.as_ref();
        let recs = self.recs.as_ref();
        let arena = self.arena.as_ref();
        let table = Self::TABLE;
        ensure(self.used <= arena.len(), W, "arena use within the arena")?;
        ensure(self.len as usize <= recs.len(), W, "a record per box")?;
        ensure(self.garbage <= self.used, W, "garbage within use")?;
        ensure(self.nrec <= self.len, W, "records <= boxes")?;
        // Regions: disjoint, within use, tables as built.
        let mut live = 0usize;
        for (i, lv) in self.levels.iter().enumerate() {
            ensure(
                lv.active == (self.active >> i & 1 == 1),
                W,
                "active mask matches levels",
            )?;
            if !lv.active {
                continue;
            }
            ensure(self.grid_mode, W, "grids only in grid mode")?;
            ensure(lv.usable, W, "active level usable")?;
            ensure(lv.base + lv.words <= self.used, W, "region within use")?;
            ensure(lv.words == table + lv.cells, W, "region = table + cells")?;
            ensure(lv.log2[0] >= 2, W, "at least 4 cells per axis")?;
            for k in 0..Self::D {
                ensure(lv.log2[k] == lv.log2[0], W, "cubic grid")?;
            }
            for (j, lj) in self.levels.iter().enumerate() {
                if j != i && lj.active {
                    ensure(
                        lv.base + lv.words <= lj.base || lj.base + lj.words <= lv.base,
                        W,
                        "regions disjoint",
                    )?;
                }
            }
            live += lv.words;
        }
        ensure(
            live + self.garbage == self.used,
            W,
            "live + garbage == used",
        )?;
        // Records: unique occupied cells whose heads point back.
        let mut objects = [0u32; LEVELS];
        let mut occupied = [0u32; LEVELS];
        let mut in_grids = 0u32;
        if self.grid_mode {
            for (p, r) in recs[..self.nrec as usize].iter().enumerate() {
                let k = r.key;
                ensure(is_grid_key(k), W, "record is a grid key")?;
                let i = (k >> LOCAL_BITS) as usize;
                let lv = &self.levels[i];
                ensure(lv.active, W, "record in an active grid")?;
                ensure(
                    ((k & LOCAL_MASK) as usize) < lv.cells,
                    W,
                    "record cell in grid",
                )?;
                ensure(
                    self.cells(lv)[(k & LOCAL_MASK) as usize] == p as u32,
                    W,
                    "cell holds its record",
                )?;
                let head = r.head;
                ensure((head as usize) < slots.len(), W, "head id in range")?;
                ensure(slots[head as usize].prev == NONE, W, "head has no prev")?;
                occupied[i] += 1;
                let mut a = head;
                let mut prev = NONE;
                let mut steps = 0u32;
                while a != NONE {
                    ensure((a as usize) < slots.len(), W, "list id in range")?;
                    let s = &slots[a as usize];
                    ensure(s.key == k, W, "box key matches its cell")?;
                    if prev != NONE {
                        ensure(s.prev == prev, W, "prev link")?;
                    }
                    ensure(s.aabb.check().is_ok(), W, "grid box valid")?;
                    let lv = &self.levels[i];
                    ensure(s.aabb.longest_edge() < lv.cell, W, "box smaller than cell")?;
                    ensure(self.fits(i, &s.aabb) == Ok(true), W, "box spans <= 2 cells")?;
                    ensure(
                        Self::local(lv, s.aabb.min()) == k & LOCAL_MASK,
                        W,
                        "box in the cell of its lower corner",
                    )?;
                    objects[i] += 1;
                    in_grids += 1;
                    steps += 1;
                    ensure(steps <= self.len, W, "list terminates")?;
                    prev = a;
                    a = s.next;
                }
            }
            for (i, lv) in self.levels.iter().enumerate() {
                if !lv.active {
                    continue;
                }
                ensure(lv.objects == objects[i], W, "grid box count")?;
                ensure(lv.occupied == occupied[i], W, "grid occupied count")?;
                let cells = self.cells(lv);
                let nonempty = cells.iter().filter(|&&c| c != NONE).count();
                ensure(
                    nonempty == occupied[i] as usize,
                    W,
                    "every occupied cell recorded",
                )?;
                let t = &arena[lv.base..lv.base + table];
                for (e, &v) in t.iter().enumerate() {
                    ensure(
                        v == Self::table_entry(lv, e / Self::STENCIL, e % Self::STENCIL),
                        W,
                        "offset table as built",
                    )?;
                }
            }
        } else {
            for (p, r) in recs[..self.nrec as usize].iter().enumerate() {
                let a = r.head;
                ensure(r.key == KEY_FLAT, W, "flat record keyed flat")?;
                ensure((a as usize) < slots.len(), W, "flat id in range")?;
                ensure(slots[a as usize].key == KEY_FLAT, W, "flat box keyed flat")?;
                ensure(slots[a as usize].prev == p as u32, W, "flat position")?;
            }
            in_grids = self.nrec;
        }
        // Unbounded list.
        let mut u = self.unbounded_head;
        let mut prev = NONE;
        let mut nu = 0u32;
        while u != NONE {
            ensure((u as usize) < slots.len(), W, "unbounded id in range")?;
            let s = &slots[u as usize];
            ensure(
                s.key == KEY_UNBOUNDED || s.key == KEY_TOO_LARGE,
                W,
                "unbounded key",
            )?;
            ensure(s.prev == prev, W, "unbounded prev link")?;
            nu += 1;
            ensure(nu <= self.len, W, "unbounded list terminates")?;
            prev = u;
            u = s.next;
        }
        ensure(nu == self.unbounded_len, W, "unbounded count")?;
        ensure(in_grids + nu == self.len, W, "every box somewhere")?;
        let stored = slots.iter().filter(|s| s.key != NONE).count();
        ensure(stored == self.len as usize, W, "stored ids == len")?;
        Ok(())
    }
}
