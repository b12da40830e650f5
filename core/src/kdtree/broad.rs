//! [`KdBroadPhase`]: the linear kd-tree behind the [`BroadPhase`] trait.

use crate::error::{Corruption, Error, Validate, ensure};
use crate::exec::Executor;
use crate::geom::{BoundingBox, Point};
use crate::kdtree::par::sweep_tasks;
use crate::kdtree::{
    BoxSource, Candidates, KdConfig, KdRecord, KdStats, LinearKdTree, LocCode, MAX_ELEMENTS,
};
use crate::storage::Storage;
use crate::traits::BroadPhase;

/// One id's box in a [`KdBroadPhase`] (a box of NaNs when the id is not
/// stored).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KdSlot<B>(B);

impl<B: BoundingBox> Default for KdSlot<B> {
    /// The unused value, [`KdSlot::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<B: BoundingBox> KdSlot<B> {
    /// An unused slot.
    pub const EMPTY: Self = Self(B::NAN);

    #[inline(always)]
    fn get(&self) -> Option<B> {
        // A stored box is finite, so a NaN coordinate marks an empty slot.
        (!self.0.min().coord(0).is_nan()).then_some(self.0)
    }
}

impl<B: BoundingBox> crate::ids::IdSlot for KdSlot<B> {
    type Box = B;
    #[inline(always)]
    fn stored(&self) -> Option<B> {
        self.get()
    }
}

impl<B: BoundingBox> BoxSource<B> for [KdSlot<B>] {
    #[inline(always)]
    fn id_bound(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn get(&self, id: usize) -> Option<B> {
        <[KdSlot<B>]>::get(self, id).and_then(KdSlot::get)
    }
}

/// The first `bound` slots (all of them if `bound` is past the end).
#[inline(always)]
fn live<B>(slots: &[KdSlot<B>], bound: usize) -> &[KdSlot<B>] {
    slots.get(..bound).unwrap_or(slots)
}

/// A linear kd-tree broad phase with insert / update / remove by id: boxes
/// live in one slot per id, and the tree is rebuilt (or, with temporal
/// reuse, repaired) at the first pair or box query after a change.
///
/// Memory: `C · size_of::<B>()` bytes of slots (24 per id in 3D, 16 in 2D)
/// plus the tree's two record buffers (see [`crate::kdtree`]).
///
/// # Example
///
/// ```
/// use spatium::{Aabb2, BroadPhase, Vec2};
/// use spatium::kdtree::{KdBroadPhase, KdConfig, KdRecord, KdSlot};
///
/// let mut bp = KdBroadPhase::<Aabb2, u32, _, _>::new(
///     [KdSlot::EMPTY; 16],
///     [KdRecord::EMPTY; 64],
///     [KdRecord::EMPTY; 64],
///     KdConfig::DEFAULT,
/// );
/// bp.insert(3, Aabb2::new(Vec2::new(0.0, 0.0), Vec2::new(1.0, 1.0)).unwrap()).unwrap();
/// bp.insert(7, Aabb2::new(Vec2::new(0.9, 0.9), Vec2::new(2.0, 2.0)).unwrap()).unwrap();
/// let mut pairs = 0;
/// bp.for_each_overlap(|a, b| { assert_eq!(a + b, 10); pairs += 1 }).unwrap();
/// assert_eq!(pairs, 1);
/// ```
#[derive(Clone, Debug)]
pub struct KdBroadPhase<B: BoundingBox, K: LocCode, S: Storage<KdSlot<B>>, R: Storage<KdRecord<K>>>
{
    slots: S,
    tree: LinearKdTree<B, K, R>,
    len: usize,
    /// One past the highest id stored since the last clear: the slots from
    /// here on are empty, and builds and sweeps read only those below it
    /// (ids in a sparse id space, such as a periodic adapter's image pool,
    /// cost nothing past the last one used).
    bound: usize,
    dirty: bool,
}

impl<B: BoundingBox, K: LocCode, S: Storage<KdSlot<B>>, R: Storage<KdRecord<K>>>
    KdBroadPhase<B, K, S, R>
{
    /// An empty broad phase over `slots` (all [`KdSlot::EMPTY`]; its length
    /// is the id capacity) and two record buffers (records and sort
    /// scratch; the smaller length bounds how many boxes can be stored).
    ///
    /// Never fails and allocates nothing; `const`. Memory: `24C + 2R · r`
    /// bytes in 3D (`16C + 2R · r` in 2D). Insert, update and remove are
    /// `O(1)` (they mark the tree stale); the next detection or query
    /// rebuilds it in `O(R)` (radix sort) and sweeps. See the type's
    /// example.
    pub const fn new(slots: S, records: R, scratch: R, config: KdConfig<B>) -> Self {
        Self {
            slots,
            tree: LinearKdTree::new(records, scratch, config),
            len: 0,
            bound: 0,
            dirty: false,
        }
    }

    /// The tree, as of the last rebuild.
    pub fn tree(&self) -> &LinearKdTree<B, K, R> {
        &self.tree
    }

    /// Replaces the configuration.
    pub fn set_config(&mut self, config: KdConfig<B>) {
        self.tree.set_config(config);
        self.dirty = true;
    }

    /// The slots that can hold a box: those below `bound`.
    #[inline(always)]
    fn live(&self) -> &[KdSlot<B>] {
        live(self.slots.as_ref(), self.bound)
    }

    fn refresh(&mut self) -> Result<(), Error> {
        if self.dirty {
            self.tree
                .build_from(live(self.slots.as_ref(), self.bound), |_| {})?;
            self.dirty = false;
        }
        Ok(())
    }

    /// Rebuilds if needed, then calls `f(a, b)` for the pairs selected by
    /// `mode` (see [`Candidates`]).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when the configuration asks for more bits
    /// per axis than the code type holds (every rebuild fails until the
    /// configuration is replaced). Nothing else: every stored box was
    /// validated on insert, and insert keeps the number of boxes within the
    /// record buffers.
    pub fn for_each_candidate_pair<F: FnMut(u32, u32)>(
        &mut self,
        mode: Candidates,
        f: F,
    ) -> Result<(), Error> {
        self.refresh()?;
        self.tree.sweep(self.live(), mode, f);
        Ok(())
    }

    /// [`for_each_candidate_pair`](Self::for_each_candidate_pair) on
    /// `exec`: a stale tree is rebuilt in parallel (the same tree as the
    /// serial rebuild), then task `t` sweeps its share of the records and
    /// calls `f(&mut sinks[t], a, b)`. Needs
    /// [`overlap_tasks`](BroadPhase::overlap_tasks) sinks; concatenated in
    /// order they hold the serial pairs in the serial order.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] with too few sinks (nothing is called),
    /// or the serial form's errors.
    pub fn par_for_each_candidate_pair<E, T, F>(
        &mut self,
        exec: &E,
        mode: Candidates,
        sinks: &mut [T],
        f: F,
    ) -> Result<(), Error>
    where
        E: Executor,
        T: Send,
        F: Fn(&mut T, u32, u32) + Sync,
    {
        let tasks = self.overlap_tasks();
        let available = sinks.len();
        let sinks = sinks.get_mut(..tasks).ok_or(Error::BufferTooSmall {
            needed: tasks,
            available,
        })?;
        if self.dirty {
            self.tree
                .par_build_from(exec, live(self.slots.as_ref(), self.bound))?;
            self.dirty = false;
        }
        self.tree.par_sweep(exec, self.live(), mode, sinks, f);
        Ok(())
    }

    fn present(&self, id: u32) -> Result<B, Error> {
        if id as usize >= self.capacity() {
            return Err(Error::IdOutOfRange { id });
        }
        crate::ids::stored(self.slots.as_ref(), id)
    }
}

impl<B: BoundingBox, K: LocCode, S: Storage<KdSlot<B>>, R: Storage<KdRecord<K>>> BroadPhase<B>
    for KdBroadPhase<B, K, S, R>
{
    fn capacity(&self) -> usize {
        crate::ids::capacity(self.slots.as_ref().len()).min(MAX_ELEMENTS)
    }

    fn box_count(&self) -> usize {
        self.len
    }

    fn insert(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        if id as usize >= self.capacity() {
            return Err(Error::IdOutOfRange { id });
        }
        aabb.check()?;
        crate::ids::vacant(self.slots.as_ref(), id)?;
        let room = self.tree.record_capacity();
        if self.len >= room {
            return Err(Error::CapacityExceeded { capacity: room });
        }
        self.slots.as_mut()[id as usize] = KdSlot(aabb);
        self.len += 1;
        self.bound = self.bound.max(id as usize + 1);
        self.dirty = true;
        Ok(())
    }

    fn update(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        self.present(id)?;
        aabb.check()?;
        self.slots.as_mut()[id as usize] = KdSlot(aabb);
        self.dirty = true;
        Ok(())
    }

    fn remove(&mut self, id: u32) -> Result<B, Error> {
        let b = self.present(id)?;
        self.slots.as_mut()[id as usize] = KdSlot::EMPTY;
        self.len -= 1;
        self.dirty = true;
        Ok(b)
    }

    fn get(&self, id: u32) -> Option<B> {
        self.present(id).ok()
    }

    fn clear(&mut self) {
        let bound = self.bound;
        if let Some(live) = self.slots.as_mut().get_mut(..bound) {
            live.fill(KdSlot::EMPTY);
        }
        self.len = 0;
        self.bound = 0;
        self.tree.clear();
        self.dirty = false;
    }

    fn for_each_overlap<F: FnMut(u32, u32)>(&mut self, f: F) -> Result<(), Error> {
        self.for_each_candidate_pair(Candidates::Exact, f)
    }

    fn query<F: FnMut(u32)>(&mut self, aabb: &B, f: F) -> Result<(), Error> {
        aabb.check()?;
        self.refresh()?;
        self.tree.query_in(self.live(), aabb, f);
        Ok(())
    }

    /// One task per 4096 stored boxes (at least one, at most 256).
    fn overlap_tasks(&self) -> usize {
        sweep_tasks(self.len)
    }

    /// Rebuilds if needed with [`LinearKdTree::par_build`]'s parallel build
    /// (the same tree as the serial rebuild), then sweeps in
    /// [`overlap_tasks`](BroadPhase::overlap_tasks) tasks of near-equal
    /// record ranges: the sinks, concatenated in order, hold
    /// [`for_each_overlap`](BroadPhase::for_each_overlap)'s pairs in its
    /// order.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] with too few sinks (nothing is called), or
    /// [`for_each_candidate_pair`](KdBroadPhase::for_each_candidate_pair)'s
    /// errors.
    fn par_for_each_overlap<E, T, F>(
        &mut self,
        exec: &E,
        sinks: &mut [T],
        f: F,
    ) -> Result<(), Error>
    where
        E: Executor,
        T: Send,
        F: Fn(&mut T, u32, u32) + Sync,
        Self: Send + Sync,
    {
        self.par_for_each_candidate_pair(exec, Candidates::Exact, sinks, f)
    }
}

/// Rebuilds if needed, then walks the tree front to back (see the
/// `kdtree::ray` module's source): `O(log R + k)` nodes for a ray that
/// meets `k` cells' worth of records before its bound.
impl<B: BoundingBox, K: LocCode, S: Storage<KdSlot<B>>, R: Storage<KdRecord<K>>>
    crate::ray::RayCast<B> for KdBroadPhase<B, K, S, R>
{
    /// # Errors
    /// [`Error::InvalidConfig`] as in
    /// [`for_each_candidate_pair`](KdBroadPhase::for_each_candidate_pair).
    fn ray_visit<F: FnMut(u32, f32) -> f32>(
        &mut self,
        ray: &crate::ray::Ray<B::Point>,
        visit: F,
    ) -> Result<(), Error> {
        self.refresh()?;
        self.tree
            .ray_in(live(self.slots.as_ref(), self.bound), ray, visit)
    }
}

impl<B: BoundingBox, K: LocCode, S: Storage<KdSlot<B>>, R: Storage<KdRecord<K>>> Validate
    for KdBroadPhase<B, K, S, R>
{
    fn validate(&self) -> Result<(), Corruption> {
        const W: &str = "KdBroadPhase";
        let slots = self.slots.as_ref();
        let mut present = 0;
        ensure(self.bound <= slots.len(), W, "bound within the slots")?;
        for (id, s) in slots.iter().enumerate() {
            if let Some(b) = s.get() {
                ensure(id < self.bound, W, "stored ids below the bound")?;
                present += 1;
                ensure(b.check().is_ok(), W, "stored box valid")?;
            } else {
                ensure(
                    (0..B::Point::DIM).all(|a| s.0.min().coord(a).is_nan()),
                    W,
                    "empty slot is all NaN",
                )?;
            }
        }
        ensure(present == self.len, W, "stored boxes == len")?;
        ensure(
            self.len <= self.tree.record_capacity(),
            W,
            "boxes fit the records",
        )?;
        self.tree.validate()?;
        if !self.dirty {
            ensure(self.tree.len() == self.len, W, "tree holds every box")?;
            self.tree.validate_with(self.live())?;
        }
        Ok(())
    }
}

impl<B: BoundingBox, K: LocCode, S: Storage<KdSlot<B>>, R: Storage<KdRecord<K>>>
    crate::inspect::Inspect for KdBroadPhase<B, K, S, R>
{
    type Stats = KdStats;

    /// `C · size_of::<B>()` of slots plus the tree's record buffers.
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.slots.as_ref()) + self.tree.memory_bytes()
    }

    /// What the last (re)build did.
    fn stats(&self) -> KdStats {
        self.tree.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Validate;
    use crate::geom::{Aabb2, Vec2};
    use crate::traits::BroadPhase;

    fn unit(x: f32) -> Aabb2 {
        Aabb2::new(Vec2::new(x, 0.0), Vec2::new(x + 1.0, 1.0)).unwrap()
    }

    #[test]
    fn sparse_ids_are_swept_up_to_the_highest_one_stored() {
        let mut bp = KdBroadPhase::<Aabb2, u32, _, _>::new(
            [KdSlot::EMPTY; 64],
            [KdRecord::EMPTY; 64],
            [KdRecord::EMPTY; 64],
            KdConfig::DEFAULT,
        );
        let pairs = |bp: &mut KdBroadPhase<Aabb2, u32, _, _>| {
            let mut v = [(0u32, 0u32); 4];
            let mut n = 0;
            bp.for_each_overlap(|a, b| {
                v[n] = (a.min(b), a.max(b));
                n += 1;
            })
            .unwrap();
            v[..n].sort();
            (v, n)
        };
        bp.insert(2, unit(0.0)).unwrap();
        bp.insert(40, unit(0.5)).unwrap();
        assert_eq!(bp.bound, 41);
        assert_eq!(pairs(&mut bp).1, 1);
        // A removal keeps the bound; the pair is gone, the box at 63 counts.
        bp.remove(40).unwrap();
        bp.insert(63, unit(0.25)).unwrap();
        assert_eq!(bp.bound, 64);
        let (v, n) = pairs(&mut bp);
        assert_eq!(&v[..n], &[(2, 63)]);
        bp.validate().unwrap();
        let mut hits = 0;
        bp.query(&unit(0.1), |_| hits += 1).unwrap();
        assert_eq!(hits, 2);
        // Clear empties the live slots and resets the bound.
        bp.clear();
        assert_eq!(bp.bound, 0);
        bp.validate().unwrap();
        bp.insert(1, unit(0.0)).unwrap();
        bp.insert(0, unit(0.5)).unwrap();
        let (v, n) = pairs(&mut bp);
        assert_eq!(&v[..n], &[(0, 1)]);
        assert!(bp.get(63).is_none());
        bp.validate().unwrap();
    }
}
