//! Brute-force implementations of both traits: the oracle every structure is
//! tested against, and the small-N path of the hierarchical hash grid.
//!
//! They use exactly the predicates the structures use
//! ([`Point::distance_squared`], [`BoundingBox::overlaps`]), so differential
//! tests compare sets exactly.

use core::marker::PhantomData;

use crate::cell::check_radius;
use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::{BoundingBox, Point};
use crate::periodic::PeriodicBox;
use crate::storage::Storage;
use crate::traits::{BroadPhase, NeighborSearch};

/// All-pairs neighbour search: `O(N)` per particle query, `O(N²)` for pairs.
///
/// Memory: `N · size_of::<P>()` (12 bytes per particle in 3D) in `S`.
#[derive(Clone, Debug)]
pub struct BruteForceNeighbors<P: Point, S: Storage<P>> {
    positions: S,
    len: usize,
    radius: f32,
    domain: PeriodicBox<P>,
    _p: PhantomData<P>,
}

impl<P: Point, S: Storage<P>> BruteForceNeighbors<P, S> {
    /// An empty search over `positions`, whose length is the capacity (the
    /// buffer's contents are overwritten by each build).
    ///
    /// Never fails and allocates nothing; `const`, so it can initialise a
    /// `static`. Memory: the buffer only, `N · size_of::<P>()` bytes. A build
    /// is `O(N)`, a query `O(N)`, all pairs `O(N²)`.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{BruteForceNeighbors, NeighborSearch, Vec2};
    ///
    /// let mut search = BruteForceNeighbors::new([Vec2::ZERO; 4]);
    /// search.build(&[Vec2::ZERO, Vec2::new(0.5, 0.0), Vec2::new(2.0, 0.0)], 1.0)?;
    /// let mut found = 0;
    /// search.for_each_neighbor(0, |j, d2| { assert_eq!((j, d2), (1, 0.25)); found += 1 })?;
    /// assert_eq!(found, 1);
    /// # Ok::<(), spatium::Error>(())
    /// ```
    pub const fn new(positions: S) -> Self {
        Self {
            positions,
            len: 0,
            radius: 0.0,
            domain: PeriodicBox::NONE,
            _p: PhantomData,
        }
    }

    /// Makes the search periodic in `domain` (the oracle of
    /// [`crate::uniform::DenseGrid`]): builds store positions wrapped
    /// ([`PeriodicBox::wrap`]), queries wrap their point, and every distance
    /// is [`PeriodicBox::distance_squared`]. [`PeriodicBox::NONE`] restores
    /// the plain search. Drops the stored particles.
    pub fn set_periodic(&mut self, domain: PeriodicBox<P>) {
        self.domain = domain;
        self.len = 0;
    }

    /// Most particles a build accepts.
    pub fn capacity(&self) -> usize {
        self.positions.as_ref().len()
    }

    fn stored(&self) -> &[P] {
        &self.positions.as_ref()[..self.len]
    }
}

impl<P: Point, S: Storage<P>> NeighborSearch<P> for BruteForceNeighbors<P, S> {
    fn build(&mut self, positions: &[P], radius: f32) -> Result<(), Error> {
        check_radius(radius)?;
        let cap = self.capacity();
        if positions.len() > cap || positions.len() >= u32::MAX as usize {
            return Err(Error::CapacityExceeded { capacity: cap });
        }
        if positions.iter().any(|p| !p.is_finite()) {
            return Err(Error::NonFinite);
        }
        for (dst, &p) in self.positions.as_mut().iter_mut().zip(positions) {
            *dst = self.domain.wrap(p);
        }
        self.len = positions.len();
        self.radius = radius;
        Ok(())
    }

    fn periodic(&self) -> PeriodicBox<P> {
        self.domain
    }

    fn len(&self) -> usize {
        self.len
    }

    fn radius(&self) -> f32 {
        self.radius
    }

    fn position(&self, id: u32) -> Option<P> {
        self.stored().get(id as usize).copied()
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, mut f: F) -> Result<(), Error> {
        let pts = self.stored();
        let p = *pts.get(id as usize).ok_or(Error::UnknownId { id })?;
        let r2 = self.radius * self.radius;
        for (j, q) in pts.iter().enumerate() {
            let d2 = self.domain.distance_squared(p, *q);
            if j != id as usize && d2 < r2 {
                f(j as u32, d2);
            }
        }
        Ok(())
    }

    fn for_each_within<F: FnMut(u32, f32)>(&self, point: P, mut f: F) -> Result<(), Error> {
        if !point.is_finite() {
            return Err(Error::NonFinite);
        }
        let r2 = self.radius * self.radius;
        let point = self.domain.wrap(point);
        for (j, q) in self.stored().iter().enumerate() {
            let d2 = self.domain.distance_squared(point, *q);
            if d2 < r2 {
                f(j as u32, d2);
            }
        }
        Ok(())
    }

    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) {
        let pts = self.stored();
        let r2 = self.radius * self.radius;
        for (i, p) in pts.iter().enumerate() {
            for (j, q) in pts.iter().enumerate().skip(i + 1) {
                let d2 = self.domain.distance_squared(*p, *q);
                if d2 < r2 {
                    f(i as u32, j as u32, d2);
                }
            }
        }
    }
}

impl<P: Point, S: Storage<P>> Validate for BruteForceNeighbors<P, S> {
    fn validate(&self) -> Result<(), Corruption> {
        const W: &str = "BruteForceNeighbors";
        ensure(self.len <= self.capacity(), W, "len <= capacity")?;
        ensure(
            self.stored().iter().all(|p| p.is_finite()),
            W,
            "stored positions finite",
        )?;
        ensure(
            self.len == 0 || self.radius > 0.0,
            W,
            "radius positive once built",
        )
    }
}

/// One id's slot in a [`BruteForceBroadPhase`].
///
/// A slot serves two arrays at once: indexed by id it holds that id's box and
/// its position in the dense list; indexed by dense position it holds the id
/// stored there.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BruteSlot<B> {
    aabb: B,
    /// Position of this id in the dense list, or `ABSENT`.
    dense: u32,
    /// The id stored at this dense position.
    id: u32,
}

const ABSENT: u32 = crate::table::NONE;

impl<B: BoundingBox> crate::ids::IdSlot for BruteSlot<B> {
    type Box = B;
    #[inline(always)]
    fn stored(&self) -> Option<B> {
        (self.dense != ABSENT).then_some(self.aabb)
    }
}

impl<B: BoundingBox> Default for BruteSlot<B> {
    /// The unused value, [`BruteSlot::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<B: BoundingBox> BruteSlot<B> {
    /// The box written here (meaningful where the id is stored).
    #[inline(always)]
    pub(crate) fn aabb(&self) -> B {
        self.aabb
    }

    /// The id stored at this dense position (meaningful below the count).
    #[inline(always)]
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// An unused slot.
    pub const EMPTY: Self = Self {
        aabb: B::ZERO,
        dense: ABSENT,
        id: 0,
    };
}

/// All-pairs broad phase: `O(1)` insert, update and remove by id; `O(n²)`
/// pairs; `O(n)` box queries. Also the small-N path of the hierarchical hash
/// grid.
///
/// Memory: `capacity · size_of::<BruteSlot<B>>()` = `capacity · (size_of::<B>() + 8)`
/// bytes (32 bytes per id in 3D).
#[derive(Clone, Debug)]
pub struct BruteForceBroadPhase<B: BoundingBox, S: Storage<BruteSlot<B>>> {
    slots: S,
    len: usize,
    _b: PhantomData<B>,
}

impl<B: BoundingBox, S: Storage<BruteSlot<B>>> BruteForceBroadPhase<B, S> {
    /// An empty broad phase over `slots`, which must be all
    /// [`BruteSlot::EMPTY`] (or `Default`, the same value); the capacity is
    /// its length, capped at 2³¹ − 1 ids.
    ///
    /// Never fails and allocates nothing; `const`, so it can initialise a
    /// `static`. Memory: `capacity · (size_of::<B>() + 8)` bytes. Insert,
    /// update and remove are `O(1)`; all overlaps `O(n²)`; a box query
    /// `O(n)`.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{Aabb2, BroadPhase, BruteForceBroadPhase, BruteSlot, Vec2};
    ///
    /// let mut bp = BruteForceBroadPhase::new([BruteSlot::<Aabb2>::EMPTY; 8]);
    /// bp.insert(3, Aabb2::new(Vec2::ZERO, Vec2::new(1.0, 1.0))?)?;
    /// bp.insert(5, Aabb2::new(Vec2::new(1.0, 0.0), Vec2::new(2.0, 1.0))?)?; // touches 3
    /// let mut pairs = 0;
    /// bp.for_each_overlap(|a, b| { assert_eq!((a.min(b), a.max(b)), (3, 5)); pairs += 1 })?;
    /// assert_eq!(pairs, 1);
    /// # Ok::<(), spatium::Error>(())
    /// ```
    pub const fn new(slots: S) -> Self {
        Self {
            slots,
            len: 0,
            _b: PhantomData,
        }
    }

    /// Ids stored, in dense order.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots.as_ref()[..self.len].iter().map(|s| s.id)
    }

    /// The slots and the number of stored ids: position `d < count` holds
    /// the `d`-th stored id ([`BruteSlot::id`]), position `id` its box.
    pub(crate) fn dense_slots(&self) -> (&[BruteSlot<B>], usize) {
        (self.slots.as_ref(), self.len)
    }

    /// Gives every stored id `i` the box `boxes[i]` (entries of ids not
    /// stored are ignored): a whole scene's new boxes in one call, without
    /// the `(id, box)` list of [`update_many`](BroadPhase::update_many).
    /// [`par_update_all`](Self::par_update_all) on
    /// [`Serial`](crate::exec::Serial). `O(min(boxes.len(), capacity))`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless every stored id is below
    /// `boxes.len()`; [`Error::NonFinite`] or [`Error::InvertedBox`] for
    /// the bad box of the lowest stored id. Everything is checked before
    /// anything is written: nothing changes on error.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{Aabb2, BroadPhase, BruteForceBroadPhase, BruteSlot, Error, Vec2};
    ///
    /// let unit = |x: f32| Aabb2::new(Vec2::new(x, 0.0), Vec2::new(x + 1.0, 1.0));
    /// let mut bp = BruteForceBroadPhase::new([BruteSlot::<Aabb2>::EMPTY; 4]);
    /// bp.insert(0, unit(0.0)?)?;
    /// bp.insert(2, unit(5.0)?)?;
    /// bp.update_all(&[unit(1.0)?, unit(9.0)?, unit(1.5)?])?; // id 1 is not stored
    /// assert_eq!(bp.get(2), Some(unit(1.5)?));
    /// assert_eq!(
    ///     bp.update_all(&[unit(0.0)?]),
    ///     Err(Error::LengthMismatch { expected: 2, got: 1 })
    /// );
    /// # Ok::<(), spatium::Error>(())
    /// ```
    pub fn update_all(&mut self, boxes: &[B]) -> Result<(), Error> {
        self.par_update_all(&crate::exec::Serial, boxes)
    }

    /// [`update_all`](Self::update_all) in tasks of 16 384 ids on `exec`
    /// (checks, then writes): the same errors and result for every executor.
    ///
    /// # Errors
    /// As [`update_all`](Self::update_all); nothing changes on error.
    pub fn par_update_all<E: crate::exec::Executor>(
        &mut self,
        exec: &E,
        boxes: &[B],
    ) -> Result<(), Error> {
        use crate::exec::{Parts, task_split};
        const GRAIN: usize = 16 * 1024;
        const MAX_TASKS: usize = 256;
        let slots = self.slots.as_mut();
        let n = boxes.len().min(slots.len());
        let (tasks, grain) = task_split(n, GRAIN, MAX_TASKS);
        // Pass 1: per task, the stored ids seen and the first bad one.
        let mut seen = [(0usize, ABSENT); MAX_TASKS];
        {
            let slots = &*slots;
            exec.run(tasks, Parts::chunks(&mut seen[..tasks], 1), |t, mut out| {
                let lo = (t * grain).min(n);
                let hi = (lo + grain).min(n);
                let mut c = (0usize, ABSENT);
                for (i, (s, b)) in slots[lo..hi].iter().zip(&boxes[lo..hi]).enumerate() {
                    if s.dense != ABSENT {
                        c.0 += 1;
                        if c.1 == ABSENT && b.check().is_err() {
                            c.1 = (lo + i) as u32;
                        }
                    }
                }
                if let Some(o) = out.slice().first_mut() {
                    *o = c;
                }
            });
        }
        if let Some(&(_, bad)) = seen[..tasks].iter().find(|c| c.1 != ABSENT) {
            return boxes[bad as usize].check();
        }
        let stored: usize = seen[..tasks].iter().map(|c| c.0).sum();
        if stored != self.len {
            return Err(Error::LengthMismatch {
                expected: self.len,
                got: stored,
            });
        }
        // Pass 2: every stored id's box.
        exec.run(tasks, Parts::chunks(&mut slots[..n], grain), |t, mut ps| {
            let lo = (t * grain).min(n);
            for (s, b) in ps.slice().iter_mut().zip(&boxes[lo..]) {
                if s.dense != ABSENT {
                    s.aabb = *b;
                }
            }
        });
        Ok(())
    }

    fn slot_of(&self, id: u32) -> Result<&BruteSlot<B>, Error> {
        let slots = self.slots.as_ref();
        crate::ids::stored(slots, id)?;
        Ok(&slots[id as usize])
    }
}

impl<B: BoundingBox, S: Storage<BruteSlot<B>>> BroadPhase<B> for BruteForceBroadPhase<B, S> {
    fn capacity(&self) -> usize {
        crate::ids::capacity(self.slots.as_ref().len())
    }

    fn box_count(&self) -> usize {
        self.len
    }

    fn insert(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        crate::ids::index(self.slots.as_ref().len(), id)?;
        aabb.check()?;
        crate::ids::vacant(self.slots.as_ref(), id)?;
        let slots = self.slots.as_mut();
        let d = self.len;
        slots[id as usize].aabb = aabb;
        slots[id as usize].dense = d as u32;
        slots[d].id = id;
        self.len += 1;
        Ok(())
    }

    fn update(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        self.slot_of(id)?;
        aabb.check()?;
        self.slots.as_mut()[id as usize].aabb = aabb;
        Ok(())
    }

    fn remove(&mut self, id: u32) -> Result<B, Error> {
        let s = *self.slot_of(id)?;
        let last = self.len - 1;
        let slots = self.slots.as_mut();
        let moved = slots[last].id;
        slots[s.dense as usize].id = moved;
        slots[moved as usize].dense = s.dense;
        slots[id as usize].dense = ABSENT;
        self.len = last;
        Ok(s.aabb)
    }

    fn get(&self, id: u32) -> Option<B> {
        self.slot_of(id).ok().map(|s| s.aabb)
    }

    fn clear(&mut self) {
        let len = self.len;
        let slots = self.slots.as_mut();
        for d in 0..len {
            let id = slots[d].id as usize;
            slots[id].dense = ABSENT;
        }
        self.len = 0;
    }

    fn for_each_overlap<F: FnMut(u32, u32)>(&mut self, mut f: F) -> Result<(), Error> {
        let slots = self.slots.as_ref();
        for a in 0..self.len {
            let ia = slots[a].id;
            let ba = slots[ia as usize].aabb;
            for b in a + 1..self.len {
                let ib = slots[b].id;
                if ba.overlaps(&slots[ib as usize].aabb) {
                    f(ia, ib);
                }
            }
        }
        Ok(())
    }

    fn query<F: FnMut(u32)>(&mut self, aabb: &B, mut f: F) -> Result<(), Error> {
        aabb.check()?;
        let slots = self.slots.as_ref();
        for d in 0..self.len {
            let id = slots[d].id;
            if aabb.overlaps(&slots[id as usize].aabb) {
                f(id);
            }
        }
        Ok(())
    }
}

/// The oracle of every cast: a linear scan of the stored boxes in dense
/// order, `O(n)` per cast.
impl<B: BoundingBox, S: Storage<BruteSlot<B>>> crate::ray::RayCast<B>
    for BruteForceBroadPhase<B, S>
{
    fn ray_visit<F: FnMut(u32, f32) -> f32>(
        &mut self,
        ray: &crate::ray::Ray<B::Point>,
        mut visit: F,
    ) -> Result<(), Error> {
        let slots = self.slots.as_ref();
        let mut bound = ray.max_t();
        for d in slots.get(..self.len).unwrap_or_default() {
            let Some(s) = slots.get(d.id as usize) else {
                continue;
            };
            if let Some(t) = ray.enter_within(&s.aabb, bound) {
                bound = crate::ray::lower(bound, visit(d.id, t));
            }
        }
        Ok(())
    }
}

impl<B: BoundingBox, S: Storage<BruteSlot<B>>> Validate for BruteForceBroadPhase<B, S> {
    fn validate(&self) -> Result<(), Corruption> {
        const W: &str = "BruteForceBroadPhase";
        let slots = self.slots.as_ref();
        ensure(self.len <= slots.len(), W, "len <= capacity")?;
        let mut present = 0usize;
        for (id, s) in slots.iter().enumerate() {
            if s.dense != ABSENT {
                present += 1;
                ensure((s.dense as usize) < self.len, W, "dense index below len")?;
                ensure(
                    slots[s.dense as usize].id as usize == id,
                    W,
                    "dense list points back",
                )?;
                ensure(s.aabb.check().is_ok(), W, "stored box valid")?;
            }
        }
        ensure(present == self.len, W, "present ids == len")
    }
}

impl<P: Point, S: Storage<P>> crate::inspect::Inspect for BruteForceNeighbors<P, S> {
    type Stats = crate::inspect::SearchStats;

    /// `N · size_of::<P>()`.
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.positions.as_ref())
    }

    fn stats(&self) -> Self::Stats {
        crate::inspect::SearchStats {
            particles: self.len,
            capacity: self.positions.as_ref().len(),
            radius: self.radius,
            table_slots: 0,
            occupied_slots: 0,
        }
    }
}

impl<B: BoundingBox, S: Storage<BruteSlot<B>>> crate::inspect::Inspect
    for BruteForceBroadPhase<B, S>
{
    type Stats = crate::inspect::BruteStats;

    /// `C · size_of::<BruteSlot<B>>()`.
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.slots.as_ref())
    }

    fn stats(&self) -> Self::Stats {
        crate::inspect::BruteStats {
            boxes: self.len,
            capacity: self.capacity(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Aabb3, Vec3};

    /// Regression: `BruteSlot::default()` was not `BruteSlot::EMPTY`, so a
    /// structure over default slots showed a phantom box, refused
    /// `insert(0, ..)` and panicked on `remove(0)`.
    #[test]
    fn default_slots_are_empty_slots() {
        let mut bp = BruteForceBroadPhase::new([BruteSlot::<Aabb3>::default(); 4]);
        assert_eq!(bp.box_count(), 0);
        assert_eq!(bp.get(0), None);
        assert_eq!(bp.remove(0), Err(Error::UnknownId { id: 0 }));
        let b = Aabb3::new(Vec3::ZERO, Vec3::new(1.0, 1.0, 1.0)).unwrap();
        assert_eq!(bp.insert(0, b), Ok(()));
        assert_eq!(bp.remove(0), Ok(b));
        assert!(bp.validate().is_ok());
    }
}
