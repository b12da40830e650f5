//! The [`BroadPhase`] implementation: thin calls of the operations in
//! `update` and `detect`.
//!
//! (Not `broad.rs`: code is laid out in the order of the mangled symbol
//! names, and this name puts `insert` after the grid and update code, where
//! it needs no alignment padding on Thumb; the firmware image stays at its
//! size from before the split.)

use super::{HhgRecord, HhgSlot, HierarchicalHashGrid};
use crate::error::Error;
use crate::exec::Executor;
use crate::geom::BoundingBox;
use crate::storage::Storage;
use crate::traits::BroadPhase;

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord<B>>, A: Storage<u32>>
    BroadPhase<B> for HierarchicalHashGrid<B, S, R, A>
{
    /// The slot buffer's length (at most 2³¹ − 1). `O(1)`.
    fn capacity(&self) -> usize {
        crate::ids::capacity(self.slots.as_ref().len())
    }

    /// Boxes stored, bounded and unbounded. `O(1)`.
    fn box_count(&self) -> usize {
        self.len as usize
    }

    /// Stores `aabb` under `id`: in the flat array below the small-N
    /// threshold, else in the cell of its lower corner in the first grid
    /// whose cells are larger than its longest edge (making that grid if
    /// needed and the arena has room, growing it past the density).
    ///
    /// `O(1)` amortised: the level is found by a binary search over the 30
    /// levels; making a grid costs its words, growing one rehashes its boxes,
    /// and reaching the small-N threshold places every box once.
    ///
    /// # Errors
    /// [`Error::IdOutOfRange`], [`Error::DuplicateId`],
    /// [`Error::CapacityExceeded`] (a record buffer shorter than the slot
    /// buffer is full), [`Error::NonFinite`] or [`Error::InvertedBox`] for a
    /// bad box, [`Error::OutOfRange`] for coordinates beyond
    /// [`HHG_RANGE_CELLS`](crate::cell::HHG_RANGE_CELLS) cells of every level
    /// that could hold the box. Nothing changes on error; a short arena is
    /// never an error.
    fn insert(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        self.insert_bounded(id, aabb)
    }

    /// Moves `id` to `aabb`: relinks it to another cell of its grid when
    /// its lower corner changed cell, and moves it to another grid when its
    /// size changed level. An unbounded object takes any box that
    /// [`insert_unbounded`](HierarchicalHashGrid::insert_unbounded) takes.
    ///
    /// `O(1)` when the box stays in its grid; otherwise as
    /// [`insert`](Self::insert).
    ///
    /// # Errors
    /// [`Error::IdOutOfRange`], [`Error::UnknownId`], and the box errors of
    /// [`insert`](Self::insert); nothing changes on error.
    fn update(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        self.update_box(id, aabb)
    }

    /// Applies every `(id, box)` of `updates` in order, as
    /// [`update`](Self::update) would one by one, after checking the whole
    /// batch: once checked, no update of this structure can fail, so on
    /// error nothing has changed. `O(k)` for `k` updates.
    ///
    /// # Errors
    /// Those of [`update`](Self::update), for the first bad element.
    fn update_many(&mut self, updates: &[(u32, B)]) -> Result<(), Error> {
        self.update_batch(updates)
    }

    /// Removes `id` and returns its box. `O(1)`; the grids stay (they are
    /// only dropped by [`clear`](Self::clear)).
    ///
    /// # Errors
    /// [`Error::IdOutOfRange`], [`Error::UnknownId`]; nothing changes on
    /// error.
    fn remove(&mut self, id: u32) -> Result<B, Error> {
        self.remove_box(id)
    }

    /// The box stored under `id`. `O(1)`.
    fn get(&self, id: u32) -> Option<B> {
        self.stored_key(id)
            .ok()
            .map(|_| self.slots.as_ref()[id as usize].aabb)
    }

    /// Removes every box and every grid, and forgets the base cell size
    /// (the next box fixes it again). `O(n)` for `n` boxes when they fill
    /// less than a quarter of the slots, else `O(C)` for `C` slots.
    fn clear(&mut self) {
        self.clear_all();
    }

    /// Calls `f(a, b)` once for every overlapping pair. On the grids:
    /// inside each occupied cell, against half of its neighbour cells, and
    /// every box against the neighbourhood of its lower corner in each
    /// grid of larger cells; unbounded objects against everything. On the
    /// small-N path every pair is tested.
    ///
    /// `O(n · g + p)` for `n` boxes in `g` grids and `p` candidate pairs
    /// (boxes sharing a neighbourhood), plus `O(u · n)` for `u` unbounded
    /// objects, plus an `O(r log r)` sort of the `r` occupied-cell records
    /// when an eighth of them changed since the last sort; `O(n²)` on the
    /// small-N path.
    ///
    /// # Errors
    /// None: it always returns `Ok`.
    fn for_each_overlap<F: FnMut(u32, u32)>(&mut self, mut f: F) -> Result<(), Error> {
        self.pairs(&mut f);
        Ok(())
    }

    /// Calls `f(id)` once for every stored box overlapping `aabb`, which may
    /// have infinite bounds as an unbounded object does.
    ///
    /// Per grid, `O(min(cells covered by aabb, occupied cells))` plus the
    /// boxes visited; `O(n)` on the small-N path; plus every unbounded
    /// object.
    ///
    /// # Errors
    /// [`Error::NonFinite`] (NaN or a wrong-signed infinity) or
    /// [`Error::InvertedBox`].
    fn query<F: FnMut(u32)>(&mut self, aabb: &B, mut f: F) -> Result<(), Error> {
        self.query_box(aabb, &mut f)
    }

    /// One task per 2048 occupied cells (at most 256 tasks, the grain grows
    /// beyond 524 288 cells) on the grids; one on the small-N path. Changes
    /// only with the boxes stored. `O(1)`.
    fn overlap_tasks(&self) -> usize {
        self.pair_tasks()
    }

    /// [`for_each_overlap`](Self::for_each_overlap)'s pairs, found by tasks
    /// on `exec`: task `t` tests the boxes of occupied-cell records
    /// `2048·t ..` against their neighbourhoods, and the unbounded objects
    /// against those boxes (task 0 also tests the unbounded objects against
    /// each other). The records are sorted first when due, as
    /// [`for_each_overlap`](Self::for_each_overlap) sorts them and into the
    /// same order, by tasks over the grids' cells; the packed copy is made
    /// by tasks too (in a layout of its own, see the `par` module's
    /// source). Each sink's pairs and their order depend only on the stored
    /// boxes, never on the executor; the pairs of all sinks are exactly
    /// those of [`for_each_overlap`](Self::for_each_overlap). No memory
    /// beyond the structure's: the copy lives in the record buffer as the
    /// serial one does, plus at most about 6 KiB of stack (per-task counts
    /// and offsets).
    ///
    /// `O((n · g + p + c) / w)` on `w` workers (`c`: the grids' cells, when
    /// the sort is due), plus `O(t)` on the calling thread for `t` tasks.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] with fewer than
    /// [`overlap_tasks`](Self::overlap_tasks) sinks (nothing is called, the
    /// structure is unchanged).
    fn par_for_each_overlap<E, K, F>(
        &mut self,
        exec: &E,
        sinks: &mut [K],
        f: F,
    ) -> Result<(), Error>
    where
        E: Executor,
        K: Send,
        F: Fn(&mut K, u32, u32) + Sync,
        Self: Send + Sync,
    {
        self.par_pairs(exec, sinks, f)
    }
}

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord<B>>, A: Storage<u32>>
    crate::ray::RayCast<B> for HierarchicalHashGrid<B, S, R, A>
{
    /// A DDA per grid, coarse grids first, each stopped where its next
    /// cell lies beyond the bound; the unbounded objects and the small-N
    /// flat array scanned. `O(s · 4^D)` cell reads for `s` cells crossed
    /// per grid (at most its occupied cells, then a scan of its boxes).
    fn ray_visit<F: FnMut(u32, f32) -> f32>(
        &mut self,
        ray: &crate::ray::Ray<B::Point>,
        mut visit: F,
    ) -> Result<(), Error> {
        self.ray_walk(ray, &mut visit)
    }
}
