//! The [`BroadPhase`] implementation.

use super::{HhgRecord, HhgSlot, HierarchicalHashGrid, LEVELS, Level, NONE};
use crate::error::Error;
use crate::geom::BoundingBox;
use crate::storage::Storage;
use crate::traits::BroadPhase;

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord>, A: Storage<u32>> BroadPhase<B>
    for HierarchicalHashGrid<B, S, R, A>
{
    fn capacity(&self) -> usize {
        crate::ids::capacity(self.slots.as_ref().len())
    }

    fn box_count(&self) -> usize {
        self.len as usize
    }

    fn insert(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        self.check_id_free(id)?;
        let t = self.check_bounded(&aabb)?;
        self.slots.as_mut()[id as usize].aabb = aabb;
        self.len += 1;
        if self.grid_mode {
            self.place(id, t);
        } else {
            self.push_flat(id);
            if self.len >= self.config.small_n {
                self.switch_to_grids();
            }
        }
        Ok(())
    }

    fn update(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        let k = self.stored_key(id)?;
        self.check_update(k, &aabb)?;
        self.apply_update(id, aabb);
        Ok(())
    }

    fn remove(&mut self, id: u32) -> Result<B, Error> {
        self.stored_key(id)?;
        self.take_out(id);
        let s = &mut self.slots.as_mut()[id as usize];
        let b = s.aabb;
        *s = HhgSlot::EMPTY;
        self.len -= 1;
        Ok(b)
    }

    fn get(&self, id: u32) -> Option<B> {
        self.stored_key(id)
            .ok()
            .map(|_| self.slots.as_ref()[id as usize].aabb)
    }

    fn clear(&mut self) {
        if (self.len as usize) * 4 < self.slots.as_ref().len() {
            // Few boxes: chain every stored id through `next`, then empty
            // exactly those slots.
            let mut chain = NONE;
            let mut lists = NONE;
            if self.grid_mode {
                for p in 0..self.nrec as usize {
                    let mut a = self.recs.as_ref()[p].head;
                    while a != NONE {
                        let next = self.slots.as_ref()[a as usize].next;
                        self.slots.as_mut()[a as usize].next = lists;
                        lists = a;
                        a = next;
                    }
                }
            } else {
                for p in 0..self.nrec as usize {
                    let a = self.recs.as_ref()[p].head;
                    self.slots.as_mut()[a as usize].next = lists;
                    lists = a;
                }
            }
            core::mem::swap(&mut chain, &mut lists);
            let mut u = self.unbounded_head;
            while u != NONE {
                let next = self.slots.as_ref()[u as usize].next;
                self.slots.as_mut()[u as usize].next = chain;
                chain = u;
                u = next;
            }
            while chain != NONE {
                let next = self.slots.as_ref()[chain as usize].next;
                self.slots.as_mut()[chain as usize] = HhgSlot::EMPTY;
                chain = next;
            }
        } else {
            self.slots.as_mut().fill(HhgSlot::EMPTY);
        }
        self.len = 0;
        self.nrec = 0;
        self.grid_mode = false;
        self.base_size = 0.0;
        self.levels = [Level::NEW; LEVELS];
        self.active = 0;
        self.used = 0;
        self.garbage = 0;
        self.unbounded_head = NONE;
        self.unbounded_len = 0;
        self.unsorted = 0;
    }

    fn for_each_overlap<F: FnMut(u32, u32)>(&mut self, mut f: F) -> Result<(), Error> {
        if self.grid_mode {
            // Walk the cells in memory order once an eighth of the records
            // have been added or moved since the last sort.
            if self.unsorted as u64 * 8 > self.nrec as u64 {
                self.sort_records();
            }
            self.grid_pairs(&mut f);
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
        self.unbounded_pairs(&mut f);
        Ok(())
    }

    fn query<F: FnMut(u32)>(&mut self, aabb: &B, mut f: F) -> Result<(), Error> {
        Self::check_unbounded(aabb)?;
        let slots = self.slots.as_ref();
        if self.grid_mode {
            let mut m = self.active;
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                self.query_level(i, aabb, &mut f);
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
