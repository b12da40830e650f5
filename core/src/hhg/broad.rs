//! The [`BroadPhase`] implementation.

use super::{HhgRecord, HhgSlot, HierarchicalHashGrid};
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
        self.insert_bounded(id, aabb)
    }

    fn update(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        self.update_box(id, aabb)
    }

    fn update_many(&mut self, updates: &[(u32, B)]) -> Result<(), Error> {
        self.update_batch(updates)
    }

    fn remove(&mut self, id: u32) -> Result<B, Error> {
        self.remove_box(id)
    }

    fn get(&self, id: u32) -> Option<B> {
        self.stored_key(id)
            .ok()
            .map(|_| self.slots.as_ref()[id as usize].aabb)
    }

    fn clear(&mut self) {
        self.clear_all();
    }

    fn for_each_overlap<F: FnMut(u32, u32)>(&mut self, mut f: F) -> Result<(), Error> {
        self.pairs(&mut f);
        Ok(())
    }

    fn query<F: FnMut(u32)>(&mut self, aabb: &B, mut f: F) -> Result<(), Error> {
        self.query_box(aabb, &mut f)
    }
}
