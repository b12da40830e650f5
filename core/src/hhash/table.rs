//! The table: per-id slots, buckets and pool entries, and how elements are
//! stored in, removed from and rehashed into it (the [`BroadPhase`] side).

use crate::error::Error;
use crate::exec::Executor;
use crate::geom::BoundingBox;
use crate::storage::Storage;
use crate::table::{FIBONACCI, NONE, fibonacci_slot};
use crate::traits::BroadPhase;

use super::config::{HashConfig, advance, cell_hash, shr};
use super::{Candidates, ClassHash, FLAG, PARTICLE, STAMP_MASK, Scheme};

/// One object id's slot: its box, its class level
/// ([`NONE`](crate::table::NONE) when the id is not stored) and the base
/// cell of its lower corner (so that the exact-mode filter is integer
/// arithmetic).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HashSlot<B> {
    pub(super) aabb: B,
    pub(super) level: u32,
    pub(super) lo: [i32; 3],
}

impl<B: BoundingBox> crate::ids::IdSlot for HashSlot<B> {
    type Box = B;
    #[inline(always)]
    fn stored(&self) -> Option<B> {
        self.get()
    }
}

impl<B: BoundingBox> Default for HashSlot<B> {
    /// The unused value, [`HashSlot::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl Default for HashBucket {
    /// The unused value, [`HashBucket::EMPTY`].
    fn default() -> Self {
        Self::EMPTY
    }
}

impl Default for HashEntry {
    /// The unused value, [`HashEntry::EMPTY`].
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<B: BoundingBox> HashSlot<B> {
    /// An unused slot.
    pub const EMPTY: Self = Self {
        aabb: B::NAN,
        level: NONE,
        lo: [0; 3],
    };

    pub(super) fn new(aabb: B, config: &HashConfig<B::Point>) -> Self {
        Self {
            aabb,
            level: config.class_of(&aabb),
            lo: config.base_cell(aabb.min()),
        }
    }

    #[inline(always)]
    pub(super) fn get(&self) -> Option<B> {
        (self.level != NONE).then_some(self.aabb)
    }
}

/// One bucket of the table: the stamp of the step that last wrote it, its
/// `hasChildren` flag, and the head of its entry list.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HashBucket {
    /// Stamp in the low 31 bits, `hasChildren` in bit 31.
    pub(super) tag: u32,
    pub(super) head: u32,
}

impl HashBucket {
    /// A bucket never written.
    pub const EMPTY: Self = Self { tag: 0, head: NONE };
}

/// One pool entry: an element id (bit 31 set for a particle) and the next
/// entry of its bucket.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HashEntry {
    pub(super) id: u32,
    pub(super) next: u32,
}

impl HashEntry {
    /// An unused entry.
    pub const EMPTY: Self = Self {
        id: NONE,
        next: NONE,
    };
}

impl<S, B, Sl, Bk, En, Pt> ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    /// At first use: checks the table length and sweeps the table.
    pub(super) fn ready(&mut self) -> Result<(), Error> {
        if self.stamp == 0 {
            let mask = crate::table::table_mask(self.table.as_ref().len())?;
            self.shift = 32 - mask.count_ones();
            self.new_step();
        }
        Ok(())
    }

    #[inline(always)]
    pub(super) fn bucket_of(&self, key: u32) -> usize {
        fibonacci_slot(key, self.shift) as usize
    }

    /// `h^c` of a cell of level `l`: the spatial hash of its coordinates
    /// plus a salt of its class.
    #[inline(always)]
    pub(super) fn h(c: &[i32; 3], l: u32) -> u32 {
        cell_hash::<B::Point>(c).wrapping_add(l.wrapping_mul(FIBONACCI))
    }

    /// The key of a cell of level `order[li]` whose base-cell coordinates
    /// are `base` (hierarchical: summed over the levels above).
    pub(super) fn key_of(&self, li: u32, cell_at_level: &[i32; 3]) -> u32 {
        let l = self.order[li as usize] as u32;
        if S::HIERARCHICAL {
            let mut key = 0u32;
            for i in 0..=li {
                let up = self.order[i as usize] as u32;
                key = key.wrapping_add(Self::h(&shr(cell_at_level, up - l), up));
            }
            key
        } else {
            Self::h(cell_at_level, l)
        }
    }

    pub(super) fn level_index(&self, l: u32) -> Option<u32> {
        (0..self.n_levels).find(|&i| self.order[i as usize] as u32 == l)
    }

    /// Starts a new step: a new stamp (old buckets read as empty) and an
    /// empty pool.
    pub(super) fn new_step(&mut self) {
        let table = self.table.as_mut();
        crate::table::advance_stamp(&mut self.stamp, || table.fill(HashBucket::EMPTY));
        if self.stamp > STAMP_MASK {
            table.fill(HashBucket::EMPTY);
            self.stamp = 1;
        }
        self.used = 0;
        self.occupied = 0;
    }

    /// The bucket, reset if it belongs to an older step.
    #[inline(always)]
    pub(super) fn fresh(&mut self, b: usize) -> &mut HashBucket {
        let stamp = self.stamp;
        let bucket = &mut self.table.as_mut()[b];
        if bucket.tag & STAMP_MASK != stamp {
            *bucket = HashBucket {
                tag: stamp,
                head: NONE,
            };
        }
        bucket
    }

    /// Stores `tagged` in the cell `cell` (coordinates at level
    /// `order[li]`), flagging the buckets above it (Listing 1). The caller
    /// has checked the pool has room.
    pub(super) fn put(&mut self, li: u32, cell: &[i32; 3], tagged: u32) {
        let l = self.order[li as usize] as u32;
        let key = if S::HIERARCHICAL {
            let mut key = 0u32;
            for i in 0..li {
                let up = self.order[i as usize] as u32;
                key = key.wrapping_add(Self::h(&shr(cell, up - l), up));
                let b = self.bucket_of(key);
                self.fresh(b).tag |= FLAG;
            }
            key.wrapping_add(Self::h(cell, l))
        } else {
            self.key_of(li, cell)
        };
        let b = self.bucket_of(key);
        let e = self.used;
        let head = {
            let bucket = self.fresh(b);
            let h = bucket.head;
            bucket.head = e;
            h
        };
        self.pool.as_mut()[e as usize] = HashEntry {
            id: tagged,
            next: head,
        };
        self.used += 1;
        self.occupied |= 1 << l;
    }

    /// Stores object `id` (its slot is filled) in every cell of its class.
    pub(super) fn put_object(&mut self, id: u32) {
        let slot = self.slots.as_ref()[id as usize];
        let l = slot.level;
        let Some(li) = self.level_index(l) else {
            return; // unreachable: a slot's level is one of the classes
        };
        let (lo, hi) = self.config.query_range(&slot.aabb);
        let (lo, hi) = (shr(&lo, l), shr(&hi, l));
        let mut c = lo;
        loop {
            self.put(li, &c, id);
            if !advance::<B::Point>(&mut c, &lo, &hi) {
                break;
            }
        }
    }

    pub(super) fn put_particle(&mut self, i: u32) {
        let p = self.particles.as_ref()[i as usize];
        let c = self.config.base_cell(p);
        let li = self.n_levels - 1; // level 0 is always the last
        self.put(li, &c, i | PARTICLE);
    }

    /// Rehashes every stored element if the table is stale, that is if an
    /// update, a removal, a configuration change or a full pool left it
    /// behind the slots; a no-op otherwise (and before first use, when
    /// nothing is stored).
    ///
    /// Queries through `&mut self` do this themselves; call it before
    /// [`query_candidates_ready`] (which refuses a stale table) and before
    /// [`Inspect::stats`](crate::Inspect::stats) to see the current
    /// contents. Cost: as [`rehash`](Self::rehash) when stale,
    /// `O(1)` otherwise.
    ///
    /// [`query_candidates_ready`]: Self::query_candidates_ready
    pub fn refresh(&mut self) {
        // Before first use (stamp 0) nothing is stored.
        if self.stale && self.stamp != 0 {
            self.rebuild();
        }
    }

    /// `true` if the table lags the slots (see [`refresh`](Self::refresh)).
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    pub(super) fn rebuild(&mut self) {
        self.new_step();
        for id in 0..self.slots.as_ref().len() as u32 {
            if self.slots.as_ref()[id as usize].level != NONE {
                self.put_object(id);
            }
        }
        for i in 0..self.n_particles {
            self.put_particle(i);
        }
        self.stale = false;
    }

    /// Rehashes every stored element into a fresh step now (the paper's
    /// per-step rebuild; queries do it themselves when the table is stale,
    /// see [`refresh`](Self::refresh)). Cost: `O(C + E)` plus, in
    /// hierarchical hashing, the key sums and flags of the levels above
    /// each stored cell (`O(E · L)` for `L` classes in use); no table sweep
    /// (timestamps), except at first use and once every 2³¹ − 1 steps.
    ///
    /// # Errors
    /// [`Error::InvalidTableLength`] at first use.
    pub fn rehash(&mut self) -> Result<(), Error> {
        self.ready()?;
        self.rebuild();
        Ok(())
    }

    /// Entries of bucket `b` (current step).
    #[inline(always)]
    pub(super) fn entries(&self, b: usize) -> EntryIter<'_> {
        EntryIter {
            pool: self.pool.as_ref(),
            next: self.table.as_ref()[b].head,
        }
    }
}

/// Rehashes a stale table, then walks each class with a DDA, largest class
/// first, each stopped where its next cell lies beyond the bound (see the
/// `hhash::ray` module's source): `O(s · 3^D)` bucket reads for `s` cells
/// crossed per class, plus the entries of those buckets; a walk past
/// `C / 8` steps or `2²⁰` cells from the origin scans the class's slots.
impl<S, B, Sl, Bk, En, Pt> crate::ray::RayCast<B> for ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    fn ray_visit<F: FnMut(u32, f32) -> f32>(
        &mut self,
        ray: &crate::ray::Ray<B::Point>,
        mut visit: F,
    ) -> Result<(), Error> {
        self.refresh();
        self.ray_walk(ray, &mut visit);
        Ok(())
    }
}

impl<S, B, Sl, Bk, En, Pt> BroadPhase<B> for ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    fn capacity(&self) -> usize {
        crate::ids::capacity(self.slots.as_ref().len())
    }

    fn box_count(&self) -> usize {
        self.objects as usize
    }

    /// Stores `aabb` under `id` in every cell of its class (the smallest
    /// class at least its longest edge; a box larger than the largest class
    /// is stored in each cell of the largest class it overlaps). The
    /// entries are appended to the table at once (no rehash) unless it is
    /// stale. Cost: `O(cells of the box · L)`.
    ///
    /// # Errors
    /// [`Error::IdOutOfRange`], [`Error::NonFinite`],
    /// [`Error::InvertedBox`], [`Error::DuplicateId`], [`Error::OutOfRange`]
    /// (beyond [`HHASH_RANGE_CELLS`](super::HHASH_RANGE_CELLS)),
    /// [`Error::InvalidTableLength`] at first use,
    /// [`Error::CapacityExceeded`] when the pool cannot hold the stored
    /// elements' entries and this box's; nothing changes on error.
    fn insert(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        let i = crate::ids::index(self.slots.as_ref().len(), id)?;
        aabb.check()?;
        if self.slots.as_ref()[i].get().is_some() {
            return Err(Error::DuplicateId { id });
        }
        let need = self.config.entries_of(&aabb)?;
        self.ready()?;
        let pool = self.pool.as_ref().len() as u64;
        let live = self.object_entries + self.n_particles as u64;
        if live.saturating_add(need) > pool {
            return Err(self.capacity_error());
        }
        self.slots.as_mut()[id as usize] = HashSlot::new(aabb, &self.config);
        self.objects += 1;
        self.object_entries += need;
        if !self.stale && self.used as u64 + need <= pool {
            self.put_object(id);
        } else {
            self.stale = true;
        }
        Ok(())
    }

    /// Replaces the box of `id` and marks the table stale: the next query
    /// rehashes everything (the paper's per-step rebuild), so a step of
    /// updates costs one rehash. `O(1)`.
    ///
    /// # Errors
    /// [`Error::UnknownId`], [`Error::IdOutOfRange`], and the box errors of
    /// [`insert`](Self::insert) (the pool checked against the new box's
    /// entries); nothing changes on error.
    fn update(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        let old = self.present(id)?;
        aabb.check()?;
        let need = self.config.entries_of(&aabb)?;
        let had = self.config.entries_of(&old).unwrap_or(0);
        let live = self.object_entries - had + self.n_particles as u64;
        if live.saturating_add(need) > self.pool.as_ref().len() as u64 {
            return Err(self.capacity_error());
        }
        self.slots.as_mut()[id as usize] = HashSlot::new(aabb, &self.config);
        self.object_entries = self.object_entries - had + need;
        self.stale = true;
        Ok(())
    }

    /// Removes `id` and marks the table stale (see
    /// [`update`](Self::update)). `O(1)`.
    ///
    /// # Errors
    /// [`Error::UnknownId`], [`Error::IdOutOfRange`].
    fn remove(&mut self, id: u32) -> Result<B, Error> {
        let b = self.present(id)?;
        let had = self.config.entries_of(&b).unwrap_or(0);
        self.slots.as_mut()[id as usize] = HashSlot::EMPTY;
        self.objects -= 1;
        self.object_entries -= had;
        self.stale = true;
        Ok(b)
    }

    fn get(&self, id: u32) -> Option<B> {
        self.present(id).ok()
    }

    /// Removes every object and particle: `O(C)` (the table is emptied by
    /// a new timestamp).
    fn clear(&mut self) {
        self.slots.as_mut().fill(HashSlot::EMPTY);
        self.objects = 0;
        self.object_entries = 0;
        self.n_particles = 0;
        self.stale = false;
        if self.stamp != 0 {
            self.new_step();
        }
    }

    /// The exact pairs of
    /// [`for_each_candidate_pair`](ClassHash::for_each_candidate_pair)
    /// (same cost); never fails.
    fn for_each_overlap<F: FnMut(u32, u32)>(&mut self, f: F) -> Result<(), Error> {
        self.for_each_candidate_pair(Candidates::Exact, f);
        Ok(())
    }

    /// The exact candidates of
    /// [`query_candidates`](ClassHash::query_candidates) (same cost and
    /// errors).
    fn query<F: FnMut(u32)>(&mut self, aabb: &B, f: F) -> Result<(), Error> {
        self.query_candidates(aabb, Candidates::Exact, f)
    }

    /// [`ClassHash::candidate_tasks`]: one per 1024 object ids.
    fn overlap_tasks(&self) -> usize {
        self.candidate_tasks()
    }

    /// The exact pairs of
    /// [`ClassHash::par_for_each_candidate_pair`] (a stale table is
    /// rehashed serially first); never fails but for too few sinks.
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

/// The ids of one bucket's entry list.
pub(super) struct EntryIter<'a> {
    pool: &'a [HashEntry],
    next: u32,
}

impl Iterator for EntryIter<'_> {
    type Item = u32;
    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        let e = self.pool.get(self.next as usize)?;
        self.next = e.next;
        Some(e.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_defaults_are_empty() {
        use crate::geom::Aabb3;
        assert_eq!(HashBucket::default(), HashBucket::EMPTY);
        assert_eq!(HashEntry::default(), HashEntry::EMPTY);
        // HashSlot::EMPTY holds a NaN box, unequal to itself: compare what
        // the slot says it holds.
        assert!(crate::ids::IdSlot::stored(&HashSlot::<Aabb3>::default()).is_none());
    }

    /// `new_checked` refuses exactly the table lengths that the first use of
    /// `new`'s structure refuses, with the same error.
    #[test]
    fn new_checked_refuses_what_first_use_refuses() {
        use crate::geom::{Aabb2, Vec2};
        use crate::hhash::{HashConfig, HierarchicalHash, MultilevelHash};
        use crate::table::NONE;
        let b = Aabb2::new(Vec2::ZERO, Vec2::new(0.5, 0.5)).unwrap();
        let mut table = [HashBucket::EMPTY; 128];
        for len in [0usize, 1, 2, 3, 6, 64, 100, 128] {
            let t = &mut table[..len];
            let want = crate::table::table_mask(len).map(|_| ());
            let checked = MultilevelHash::<Aabb2, _, _, _, _>::new_checked(
                [HashSlot::EMPTY; 2],
                &mut *t,
                [HashEntry::EMPTY; 4],
                [Vec2::ZERO; 0],
                HashConfig::DEFAULT,
            );
            assert_eq!(checked.as_ref().map(|_| ()).map_err(|e| *e), want, "{len}");
            let mut h = HierarchicalHash::<Aabb2, _, _, _, _>::new(
                [HashSlot::EMPTY; 2],
                &mut *t,
                [HashEntry::EMPTY; 4],
                [Vec2::ZERO; 0],
                HashConfig::DEFAULT,
            );
            assert_eq!(h.insert(0, b), want, "{len}");
            if want.is_err() {
                assert_eq!(want, Err(Error::InvalidTableLength { len }));
                assert_eq!(h.get(0), None);
            }
        }
        // The sentinel of an unused slot is the crate's one sentinel.
        assert_eq!(HashSlot::<Aabb2>::EMPTY.level, NONE);
        assert_eq!(HashBucket::EMPTY.head, NONE);
    }

    /// A bucket of an older step reads as empty and is reset when written;
    /// a stamp past the 31 bits sweeps the table.
    #[test]
    fn stamps_age_buckets_and_wrap() {
        use crate::geom::{Aabb2, Vec2};
        use crate::hhash::{HashConfig, MultilevelHash};
        let mut h = MultilevelHash::<Aabb2, _, _, _, _>::new(
            [HashSlot::EMPTY; 2],
            [HashBucket::EMPTY; 8],
            [HashEntry::EMPTY; 4],
            [Vec2::ZERO; 0],
            HashConfig::DEFAULT,
        );
        h.rehash().unwrap(); // first use (stamp 1), then the rehash
        assert_eq!((h.stamp, h.shift), (2, 29));
        let b = h.bucket_of(12345);
        assert!(b < 8);
        h.fresh(b).head = 0;
        h.rehash().unwrap();
        assert_eq!(h.stamp, 3);
        // The old bucket is still there but stale; `fresh` resets it.
        assert_eq!(h.table[b].tag & STAMP_MASK, 2);
        assert_eq!(*h.fresh(b), HashBucket { tag: 3, head: NONE });
        h.stamp = STAMP_MASK;
        h.table[b].tag = STAMP_MASK | FLAG;
        h.rehash().unwrap();
        assert_eq!(h.stamp, 1);
        assert!(h.table.iter().all(|k| *k == HashBucket::EMPTY));
    }
}
