//! Changing what is stored: the checks of an insert or an update, unbounded
//! objects, and moving every box at once ([`HierarchicalHashGrid::update_all`]).

use super::{
    HhgRecord, HhgSlot, HierarchicalHashGrid, KEY_FLAT, KEY_PENDING, KEY_TOO_LARGE, KEY_UNBOUNDED,
    LEVELS, LOCAL_BITS, Level, NONE, Target, UpdateStrategy, is_grid_key, key,
};
use crate::error::Error;
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;
#[cfg(doc)]
use crate::traits::BroadPhase;

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord<B>>, A: Storage<u32>>
    HierarchicalHashGrid<B, S, R, A>
{
    // -------------------------------------------------------------- checking

    /// An insert's checks: a free id (the shared id table), and room for one
    /// more box in the record buffer (each box takes at most one record: its
    /// cell's, or its own on the small-N path), so that a record buffer
    /// shorter than the slot buffer refuses boxes instead of overflowing.
    /// The id checks of an insert around the box's own check, in the
    /// trait's order: the id's range, the box, the id's slot, then room for
    /// a record.
    pub(super) fn check_id_free(
        &self,
        id: u32,
        check: impl FnOnce() -> Result<(), Error>,
    ) -> Result<(), Error> {
        crate::ids::vacant_for(self.slots.as_ref(), id, check)?;
        let room = self.recs.as_ref().len();
        if self.len as usize >= room {
            return Err(Error::CapacityExceeded { capacity: room });
        }
        Ok(())
    }

    pub(super) fn stored_key(&self, id: u32) -> Result<u32, Error> {
        crate::ids::stored(self.slots.as_ref(), id)?;
        Ok(self.slots.as_ref()[id as usize].key)
    }

    pub(super) fn check_unbounded(b: &B) -> Result<(), Error> {
        let (lo, hi) = (b.min(), b.max());
        for k in 0..Self::D {
            let (l, h) = (lo.coord(k), hi.coord(k));
            if l.is_nan() || h.is_nan() || l == f32::INFINITY || h == f32::NEG_INFINITY {
                return Err(Error::NonFinite);
            }
            if l > h {
                return Err(Error::InvertedBox);
            }
        }
        Ok(())
    }

    /// Validation of a bounded box (already [`BoundingBox::check`]ed by the
    /// caller) against the levels, fixing them with the first box. Returns
    /// where the box goes in grid mode.
    pub(super) fn check_bounded(&mut self, b: &B) -> Result<Target, Error> {
        if self.base_size == 0.0 {
            // The first bounded box fixes c₀. No grid exists yet, so undoing
            // it on error restores the state exactly.
            self.init_levels(b);
            let r = self.target(b);
            if r.is_err() {
                self.base_size = 0.0;
                self.levels = [Level::NEW; LEVELS];
            }
            return r;
        }
        self.target(b)
    }

    // --------------------------------------------------------------- public

    /// Stores an unbounded object (a plane, a half-space): `aabb` may have
    /// infinite bounds (`-∞` below, `+∞` above) but no NaN and no `min >
    /// max`. It is tested against every other object, and never leaves the
    /// unbounded container. `O(1)`.
    ///
    /// # Errors
    /// [`Error::IdOutOfRange`], [`Error::DuplicateId`], [`Error::NonFinite`]
    /// (NaN or a wrong-signed infinity), [`Error::InvertedBox`],
    /// [`Error::CapacityExceeded`] (a full record buffer); nothing changes on
    /// error.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{Aabb3, BroadPhase, HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid, Vec3};
    ///
    /// let mut g = HierarchicalHashGrid::new(
    ///     [HhgSlot::<Aabb3>::EMPTY; 4],
    ///     [HhgRecord::EMPTY; 4],
    ///     [0u32; 1024],
    ///     HhgConfig::DEFAULT,
    /// );
    /// // The half-space z <= 0.
    /// let inf = f32::INFINITY;
    /// let floor = Aabb3 { min: Vec3::new(-inf, -inf, -inf), max: Vec3::new(inf, inf, 0.0) };
    /// g.insert_unbounded(0, floor)?;
    /// g.insert(1, Aabb3::new(Vec3::new(5.0, 5.0, -0.5), Vec3::new(6.0, 6.0, 0.5))?)?;
    /// g.insert(2, Aabb3::new(Vec3::new(5.0, 5.0, 1.0), Vec3::new(6.0, 6.0, 2.0))?)?;
    /// let mut pairs = Vec::new();
    /// g.for_each_overlap(|a, b| pairs.push((a.min(b), a.max(b))))?;
    /// assert_eq!(pairs, [(0, 1)]);
    /// # Ok::<(), spatium::Error>(())
    /// ```
    pub fn insert_unbounded(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        self.check_id_free(id, || Self::check_unbounded(&aabb))?;
        self.slots.as_mut()[id as usize].aabb = aabb;
        self.push_unbounded(id, KEY_UNBOUNDED);
        self.len += 1;
        Ok(())
    }

    /// Moves every stored box to `boxes[id]` with the given strategy
    /// (entries of ids not stored are ignored): `Incremental` relinks only
    /// the boxes whose cell or grid changed, `ClearAndReinsert` empties
    /// every cell and places every box again, keeping the grids.
    ///
    /// `O(m)` for `m = min(boxes.len(), capacity)`, both passes (checks,
    /// then moves), plus the grid changes as in [`BroadPhase::insert`].
    ///
    /// On hosts this is [`par_update_all`](Self::par_update_all) on
    /// [`Serial`](crate::exec::Serial): the check and the stay test in one
    /// pass listing the boxes that change cell, then every box written, then
    /// those boxes relinked in id order (the same checks, errors and final
    /// state as the in-place passes, which firmware keeps for their smaller
    /// code; at 10⁶ moving cubes about 40 ms a step against 62–93 ms).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless every stored id is below
    /// `boxes.len()`; the errors of [`BroadPhase::update`] for a bad box.
    /// Everything is checked before anything moves: nothing changes on error.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{Aabb3, BroadPhase, Error, HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid, UpdateStrategy, Vec3};
    ///
    /// let cube = |x: f32| Aabb3::new(Vec3::new(x, 0.0, 0.0), Vec3::new(x + 1.0, 1.0, 1.0));
    /// let mut g = HierarchicalHashGrid::new(
    ///     [HhgSlot::<Aabb3>::EMPTY; 4],
    ///     [HhgRecord::EMPTY; 4],
    ///     [0u32; 1024],
    ///     HhgConfig::DEFAULT,
    /// );
    /// let mut boxes = [cube(0.0)?, cube(3.0)?, cube(6.0)?];
    /// for (id, b) in boxes.iter().enumerate() {
    ///     g.insert(id as u32, *b)?;
    /// }
    /// boxes[1] = cube(0.5)?;
    /// g.update_all(&boxes, UpdateStrategy::Incremental)?;
    /// let mut pairs = 0;
    /// g.for_each_overlap(|_, _| pairs += 1)?;
    /// assert_eq!(pairs, 1);
    /// // Every stored id needs a box.
    /// assert_eq!(
    ///     g.update_all(&boxes[..2], UpdateStrategy::ClearAndReinsert),
    ///     Err(Error::LengthMismatch { expected: 3, got: 2 })
    /// );
    /// # Ok::<(), spatium::Error>(())
    /// ```
    pub fn update_all(&mut self, boxes: &[B], strategy: UpdateStrategy) -> Result<(), Error> {
        // Hosts: the parallel update's passes on the calling thread (see
        // above); firmware: the in-place passes.
        #[cfg(not(target_os = "none"))]
        {
            self.par_update_all(&crate::exec::Serial, boxes, strategy)
        }
        #[cfg(target_os = "none")]
        {
            self.update_all_in_place(boxes, strategy)
        }
    }

    /// [`update_all`](Self::update_all) in one check pass and one move pass
    /// over the ids, each box moved as [`BroadPhase::update`] moves it (the
    /// firmware's form; hosts use it to test that both give the same state).
    #[cfg(any(test, target_os = "none"))]
    pub(super) fn update_all_in_place(
        &mut self,
        boxes: &[B],
        strategy: UpdateStrategy,
    ) -> Result<(), Error> {
        let n = boxes.len().min(self.slots.as_ref().len());
        let mut seen = 0u32;
        // A valid bounded box whose coordinates are in range at the level
        // of the largest cells passes `check_update`: it can go to some
        // level (or be too large for all), and only a box out of range
        // everywhere fails (the range test is monotone in the cell size).
        // The full checks run for the others, and give the error.
        let top = self.levels.iter().rev().find(|l| l.usable).map(|l| l.inv);
        for (id, b) in boxes[..n].iter().enumerate() {
            let k = self.slots.as_ref()[id].key;
            if k == NONE {
                continue;
            }
            seen += 1;
            if top.is_some_and(|inv| {
                k != KEY_UNBOUNDED && b.check().is_ok() && Self::in_range(inv, b)
            }) {
                continue;
            }
            self.check_update(k, b)?;
        }
        if seen != self.len {
            return Err(Error::LengthMismatch {
                expected: self.len as usize,
                got: seen as usize,
            });
        }
        self.apply_all(&boxes[..n], strategy);
        Ok(())
    }

    /// The moves of [`update_all`](Self::update_all), once every box has
    /// passed its checks: `boxes` is indexed by id (at most the capacity).
    pub(super) fn apply_all(&mut self, boxes: &[B], strategy: UpdateStrategy) {
        let n = boxes.len();
        match strategy {
            UpdateStrategy::Incremental => {
                for (id, b) in boxes[..n].iter().enumerate() {
                    if self.slots.as_ref()[id].key != NONE {
                        self.apply_update(id as u32, *b);
                    }
                }
            }
            UpdateStrategy::ClearAndReinsert => {
                self.empty_cells();
                for (id, b) in boxes[..n].iter().enumerate() {
                    let k = self.slots.as_ref()[id].key;
                    if k == NONE || k == KEY_UNBOUNDED || k == KEY_FLAT {
                        if k != NONE {
                            self.slots.as_mut()[id].aabb = *b;
                        }
                        continue;
                    }
                    self.slots.as_mut()[id].aabb = *b;
                    let t = self.target(b).unwrap_or(Target::TooLarge);
                    self.place(id as u32, t);
                }
            }
        }
    }

    /// Empties every cell, keeping the grids: every grid box and every
    /// too-large box is left keyed pending, to be placed again.
    pub(super) fn empty_cells(&mut self) {
        if !self.grid_mode {
            return;
        }
        for p in 0..self.nrec as usize {
            let r = self.recs.as_ref()[p];
            let cell = self.cell_word(r.key);
            self.arena.as_mut()[cell] = NONE;
            let mut a = r.head;
            while a != NONE {
                let s = &mut self.slots.as_mut()[a as usize];
                s.key = KEY_PENDING;
                a = s.next;
            }
        }
        self.nrec = 0;
        for lv in &mut self.levels {
            lv.objects = 0;
            lv.occupied = 0;
        }
        // Too-large boxes are re-placed too (they may fit a grid now).
        let mut a = self.unbounded_head;
        while a != NONE {
            let next = self.slots.as_ref()[a as usize].next;
            if self.slots.as_ref()[a as usize].key == KEY_TOO_LARGE {
                self.unlink_unbounded(a);
                self.slots.as_mut()[a as usize].key = KEY_PENDING;
            }
            a = next;
        }
    }

    /// Whether the box keyed `k` may become `b`: the box checks of its kind
    /// and, unless it stays in its grid, the range check of the level it
    /// would go to (levels exist once a bounded box does).
    pub(super) fn check_update(&self, k: u32, b: &B) -> Result<(), Error> {
        Self::check_update_at(&self.levels, k, b)
    }

    /// [`check_update`](Self::check_update) over the levels alone.
    #[inline]
    pub(super) fn check_update_at(levels: &[Level; LEVELS], k: u32, b: &B) -> Result<(), Error> {
        Self::check_box(k, b)?;
        Self::check_move_at(levels, k, b)
    }

    /// The box checks of the kind of box keyed `k` (an unbounded object
    /// takes infinite extents).
    pub(super) fn check_box(k: u32, b: &B) -> Result<(), Error> {
        if k == KEY_UNBOUNDED {
            Self::check_unbounded(b)
        } else {
            b.check()
        }
    }

    /// The range check of the level a checked box `b` keyed `k` would go to,
    /// unless it stays in its grid (unbounded objects have none).
    fn check_move(&self, k: u32, b: &B) -> Result<(), Error> {
        Self::check_move_at(&self.levels, k, b)
    }

    /// [`check_move`](Self::check_move) over the levels alone.
    #[inline]
    fn check_move_at(levels: &[Level; LEVELS], k: u32, b: &B) -> Result<(), Error> {
        if k != KEY_UNBOUNDED && !Self::stays_at(levels, k, b) {
            Self::ideal_at(levels, b)?;
        }
        Ok(())
    }

    /// `true` if the box keyed `k` can stay in its grid with box `b`: same
    /// level by size, within two cells per axis and in range there.
    #[inline(always)]
    pub(super) fn stays_at(levels: &[Level; LEVELS], k: u32, b: &B) -> bool {
        Self::stays_local(levels, k, b).is_some()
    }

    /// [`stays_at`](Self::stays_at), and then the cell of `b` in its grid
    /// (see [`fits_local`](Self::fits_local)).
    #[inline(always)]
    pub(super) fn stays_local(levels: &[Level; LEVELS], k: u32, b: &B) -> Option<u32> {
        if !is_grid_key(k) {
            return None;
        }
        let i = (k >> LOCAL_BITS) as usize;
        let lv = &levels[i];
        let size = b.longest_edge();
        if size < lv.cell && (size >= lv.lower || Self::size_level_at(levels, size) == Some(i)) {
            Self::fits_local(lv, b)
        } else {
            None
        }
    }

    pub(super) fn apply_update(&mut self, id: u32, b: B) {
        let k = self.slots.as_ref()[id as usize].key;
        if is_grid_key(k) {
            let i = (k >> LOCAL_BITS) as usize;
            // Fast path: same level, box still within two cells per axis.
            if let Some(local) = Self::stays_local(&self.levels, k, &b) {
                self.slots.as_mut()[id as usize].aabb = b;
                if key(i, local) != k {
                    self.unlink(id);
                    self.link(id, i, local);
                }
                return;
            }
        } else if k == KEY_FLAT || k == KEY_UNBOUNDED {
            self.slots.as_mut()[id as usize].aabb = b;
            return;
        }
        // Grid change (size change or arena fallback) or too-large box.
        let t = self.target(&b).unwrap_or(Target::TooLarge);
        let current = if is_grid_key(k) {
            Target::Grid((k >> LOCAL_BITS) as usize)
        } else {
            Target::TooLarge
        };
        if t == current {
            // Same grid after all (a box kept above its size's level by the
            // coordinate range or a full arena), or still too large: move
            // only if the cell changed.
            self.slots.as_mut()[id as usize].aabb = b;
            if let Target::Grid(j) = t {
                let local = Self::local(&self.levels[j], b.min());
                if key(j, local) != k {
                    self.unlink(id);
                    self.link(id, j, local);
                }
            }
            return;
        }
        self.take_out(id);
        self.slots.as_mut()[id as usize].aabb = b;
        self.place(id, t);
    }

    /// [`BroadPhase::insert`]: checks, then stores `aabb` under `id` (on the
    /// flat array, switching to the grids at the threshold, or in its grid).
    pub(super) fn insert_bounded(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        self.check_id_free(id, || aabb.check())?;
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

    /// [`BroadPhase::update`]: checks, then moves the box.
    pub(super) fn update_box(&mut self, id: u32, aabb: B) -> Result<(), Error> {
        let k = self.stored_key(id)?;
        self.check_update(k, &aabb)?;
        self.apply_update(id, aabb);
        Ok(())
    }

    /// [`BroadPhase::update_many`] on the incremental path of
    /// [`update_all`](Self::update_all): every id and box passes the checks
    /// of [`BroadPhase::update`] first, then every box moves. The checks go
    /// in the trait's order: ids and box validity over the whole batch, then
    /// the grid's range rule, so a bad box anywhere in the batch wins over a
    /// box out of range before it. Moving cannot fail once checked, so on
    /// error nothing has changed.
    pub(super) fn update_batch(&mut self, updates: &[(u32, B)]) -> Result<(), Error> {
        for (id, b) in updates {
            Self::check_box(self.stored_key(*id)?, b)?;
        }
        for (id, b) in updates {
            self.check_move(self.slots.as_ref()[*id as usize].key, b)?;
        }
        for &(id, b) in updates {
            self.apply_update(id, b);
        }
        Ok(())
    }

    /// [`BroadPhase::remove`].
    pub(super) fn remove_box(&mut self, id: u32) -> Result<B, Error> {
        self.stored_key(id)?;
        self.take_out(id);
        let s = &mut self.slots.as_mut()[id as usize];
        let b = s.aabb;
        *s = HhgSlot::EMPTY;
        self.len -= 1;
        Ok(b)
    }

    /// [`BroadPhase::clear`]: empties the structure, forgetting the levels.
    pub(super) fn clear_all(&mut self) {
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
}

#[cfg(test)]
mod tests {
    use crate::error::{Error, Validate};
    use crate::geom::{Aabb3, Vec3};
    use crate::hhg::{HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid, UpdateStrategy};
    use crate::inspect::Inspect;
    use crate::traits::BroadPhase;

    fn cube(x: f32) -> Aabb3 {
        Aabb3::new(Vec3::new(x, 0.0, 0.0), Vec3::new(x + 1.0, 1.0, 1.0)).unwrap()
    }

    /// A box with a NaN coordinate.
    const NAN_BOX: Aabb3 = Aabb3 {
        min: Vec3::new(f32::NAN, 0.0, 0.0),
        max: Vec3::new(1.0, 1.0, 1.0),
    };

    type Grid4 =
        HierarchicalHashGrid<Aabb3, [HhgSlot<Aabb3>; 4], [HhgRecord<Aabb3>; 4], [u32; 4096]>;

    /// Four ids, room for grids; flat (all-pairs) below `small_n` boxes.
    fn grid(small_n: u32) -> Grid4 {
        HierarchicalHashGrid::new(
            [HhgSlot::EMPTY; 4],
            [HhgRecord::EMPTY; 4],
            [0u32; 4096],
            HhgConfig::DEFAULT.with_small_n_threshold(small_n),
        )
    }

    /// A bad box on a stored id reports the box's error, as every broad
    /// phase does (the id's range, the box, then the id's slot), for bounded
    /// and unbounded inserts alike.
    #[test]
    fn insert_reports_the_box_before_the_duplicate() {
        for small_n in [0, 64] {
            let mut g = grid(small_n);
            g.insert(1, cube(0.0)).unwrap();
            let nan = NAN_BOX;
            let inverted = Aabb3 {
                min: Vec3::new(2.0, 0.0, 0.0),
                max: Vec3::new(1.0, 1.0, 1.0),
            };
            assert_eq!(g.insert(1, nan), Err(Error::NonFinite));
            assert_eq!(g.insert(1, inverted), Err(Error::InvertedBox));
            assert_eq!(g.insert_unbounded(1, nan), Err(Error::NonFinite));
            assert_eq!(g.insert(1, cube(3.0)), Err(Error::DuplicateId { id: 1 }));
            assert_eq!(g.insert(4, nan), Err(Error::IdOutOfRange { id: 4 }));
            assert_eq!(g.get(1), Some(cube(0.0)));
            g.validate().unwrap();
        }
    }

    /// `update_all` accepts boxes in range at the largest cells without the
    /// stay test, so it must still refuse a box out of every grid's range
    /// (with nothing moved), and still move a box to another grid.
    #[test]
    fn update_all_refuses_out_of_range_and_moves_across_grids() {
        for small_n in [0, 64] {
            let mut g = grid(small_n);
            let boxes = [cube(0.0), cube(5.0), cube(10.0)];
            for (id, b) in boxes.iter().enumerate() {
                g.insert(id as u32, *b).unwrap();
            }
            let big = Aabb3::new(Vec3::new(0.5, 0.0, 0.0), Vec3::new(40.5, 40.0, 40.0)).unwrap();
            for far in [cube(1.0e30), cube(-3.0e29), big] {
                let moved = [cube(0.5), far, cube(10.0)];
                let r = g.update_all(&moved, UpdateStrategy::Incremental);
                if far == big {
                    r.unwrap();
                    assert_eq!(g.get(1), Some(big));
                    let mut pairs = 0;
                    g.for_each_overlap(|_, _| pairs += 1).unwrap();
                    assert_eq!(pairs, 2);
                } else {
                    assert_eq!(r, Err(Error::OutOfRange));
                    assert_eq!(g.get(0), Some(cube(0.0)));
                    assert_eq!(g.get(1), Some(cube(5.0)));
                }
                g.validate().unwrap();
            }
        }
    }

    /// The host's `update_all` (the parallel passes on one thread) and the
    /// firmware's in-place form give the same state and the same errors:
    /// boxes of several sizes on a small grid (so that boxes change cell,
    /// change grid and grow grids), moved at random, with a bad box or a
    /// far box now and then.
    #[test]
    fn update_all_forms_agree() {
        const N: usize = 96;
        type G =
            HierarchicalHashGrid<Aabb3, [HhgSlot<Aabb3>; N], [HhgRecord<Aabb3>; N], [u32; 8192]>;
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f32 / (1u64 << 53) as f32
        };
        let cfg = HhgConfig::DEFAULT
            .with_initial_cells_log2(2)
            .unwrap()
            .with_small_n_threshold(0);
        for strategy in [
            UpdateStrategy::Incremental,
            UpdateStrategy::ClearAndReinsert,
        ] {
            let mut a: G = HierarchicalHashGrid::new(
                [HhgSlot::EMPTY; N],
                [HhgRecord::EMPTY; N],
                [0; 8192],
                cfg,
            );
            let mut boxes = [cube(0.0); N];
            for (id, b) in boxes.iter_mut().enumerate() {
                let e = [0.5, 1.0, 3.0][id % 3];
                let p = Vec3::new(next() * 20.0, next() * 20.0, next() * 20.0);
                *b = Aabb3::new(p, Vec3::new(p.x + e, p.y + e, p.z + e)).unwrap();
                if id % 7 != 3 {
                    a.insert(id as u32, *b).unwrap();
                }
            }
            let mut b = a.clone();
            let (mut moved, mut refused) = (0, 0);
            for round in 0..60 {
                let mut new = boxes;
                for x in new.iter_mut() {
                    let d = if next() < 0.05 { 6.0 } else { 0.6 };
                    let v = Vec3::new((next() - 0.5) * d, (next() - 0.5) * d, (next() - 0.5) * d);
                    let grow = if next() < 0.03 { 2.0 } else { 0.0 };
                    *x = Aabb3::new(
                        Vec3::new(x.min.x + v.x, x.min.y + v.y, x.min.z + v.z),
                        Vec3::new(x.max.x + v.x + grow, x.max.y + v.y, x.max.z + v.z),
                    )
                    .unwrap();
                }
                if round % 11 == 5 {
                    new[(round * 7) % N] = NAN_BOX;
                }
                if round % 13 == 7 {
                    new[(round * 14) % N] = cube(1.0e30);
                }
                let ra = a.update_all(&new, strategy);
                let rb = b.update_all_in_place(&new, strategy);
                assert_eq!(ra, rb, "round {round}");
                if ra.is_ok() {
                    boxes = new;
                    moved += 1;
                } else {
                    refused += 1;
                }
                a.validate().unwrap();
                b.validate().unwrap();
                assert_eq!(a.slots, b.slots, "round {round}");
                assert_eq!(a.nrec, b.nrec);
                let (ra, rb) = (&a.recs[..a.nrec as usize], &b.recs[..b.nrec as usize]);
                assert!(
                    ra.iter()
                        .zip(rb)
                        .all(|(x, y)| (x.key, x.head) == (y.key, y.head)),
                    "round {round}"
                );
                assert_eq!(a.arena, b.arena, "round {round}");
                assert_eq!(a.stats(), b.stats());
                // The pairs, in order (the states are equal).
                let pairs = |g: &mut G| {
                    let mut h = (0u64, 0u64);
                    g.for_each_overlap(|x, y| {
                        h.0 += 1;
                        h.1 = h.1.rotate_left(7) ^ ((x as u64) << 32 | y as u64);
                    })
                    .unwrap();
                    h
                };
                assert_eq!(pairs(&mut a), pairs(&mut b));
            }
            assert!(moved > 40 && refused > 5, "{moved} {refused}");
            assert!(a.stats().grids >= 2);
        }
    }

    /// `update_many` checks the whole batch with `update`'s checks before
    /// moving anything: an unbounded object takes an infinite box, and a
    /// box out of every grid's range refuses the batch with nothing moved.
    #[test]
    fn update_many_checks_everything_first() {
        for small_n in [0, 64] {
            let mut g = grid(small_n);
            let floor = Aabb3 {
                min: Vec3::new(f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY),
                max: Vec3::new(f32::INFINITY, f32::INFINITY, 0.0),
            };
            g.insert_unbounded(0, floor).unwrap();
            g.insert(1, cube(0.0)).unwrap();
            g.insert(2, cube(5.0)).unwrap();
            let lower = Aabb3 {
                max: Vec3::new(f32::INFINITY, f32::INFINITY, -1.0),
                ..floor
            };
            g.update_many(&[(1, cube(0.5)), (0, lower)]).unwrap();
            assert_eq!((g.get(0), g.get(1)), (Some(lower), Some(cube(0.5))));
            let far = cube(1.0e30);
            assert_eq!(
                g.update_many(&[(1, cube(3.0)), (2, far)]),
                Err(Error::OutOfRange)
            );
            assert_eq!((g.get(1), g.get(2)), (Some(cube(0.5)), Some(cube(5.0))));
            assert_eq!(
                g.update_many(&[(1, cube(3.0)), (3, cube(1.0))]),
                Err(Error::UnknownId { id: 3 })
            );
            assert_eq!(g.get(1), Some(cube(0.5)));
            // The trait's order: a bad box anywhere in the batch wins over a
            // box out of range before it.
            let nan = NAN_BOX;
            assert_eq!(g.update_many(&[(2, far), (1, nan)]), Err(Error::NonFinite));
            assert_eq!((g.get(1), g.get(2)), (Some(cube(0.5)), Some(cube(5.0))));
            g.validate().unwrap();
            let mut pairs = 0;
            g.for_each_overlap(|_, _| pairs += 1).unwrap();
            assert_eq!(pairs, 0);
        }
    }
}
