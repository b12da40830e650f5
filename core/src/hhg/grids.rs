//! The grids: the levels of the hierarchy (which grid a box belongs to),
//! the arena that holds every grid (allocation, compaction, growth, the
//! offset tables) and the cell lists (boxes linked per cell, the record list
//! of occupied cells, the flat array and the unbounded container).

use super::{
    BASE_LEVEL, Dims, HHG_RANGE_CELLS, HhgRecord, HhgSlot, HierarchicalHashGrid, KEY_FLAT,
    KEY_PENDING, KEY_TOO_LARGE, LEVELS, LOCAL_BITS, LOCAL_MASK, NONE, Target, is_grid_key, key,
};
use crate::cell::floor_i32;
use crate::error::Error;
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;

/// One level of the hierarchy.
#[derive(Clone, Copy, Debug)]
pub(super) struct Level {
    /// Cell edge, its inverse, and the edge of the level below.
    pub(super) cell: f32,
    pub(super) inv: f32,
    pub(super) lower: f32,
    /// Whether `cell` and `inv` are finite, normal numbers.
    pub(super) usable: bool,
    /// Whether the grid exists (has a region in the arena).
    pub(super) active: bool,
    /// The arena could not grow it when it wanted to.
    pub(super) saturated: bool,
    /// `log2` of cells per axis, shift and mask per axis.
    pub(super) log2: [u8; 3],
    pub(super) shift: [u32; 3],
    pub(super) mask: [u32; 3],
    /// Region in the arena: the offset table, then the cells.
    pub(super) base: usize,
    pub(super) words: usize,
    pub(super) cells: usize,
    /// Boxes and occupied cells.
    pub(super) objects: u32,
    pub(super) occupied: u32,
}

impl Level {
    pub(super) const NEW: Self = Self {
        cell: 0.0,
        inv: 0.0,
        lower: 0.0,
        usable: false,
        active: false,
        saturated: false,
        log2: [0; 3],
        shift: [0; 3],
        mask: [0; 3],
        base: 0,
        words: 0,
        cells: 0,
        objects: 0,
        occupied: 0,
    };

    #[inline(always)]
    pub(super) fn cells_at(&self, table: usize) -> usize {
        self.base + table
    }
}

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord>, A: Storage<u32>>
    HierarchicalHashGrid<B, S, R, A>
{
    // ----------------------------------------------------------------- levels

    pub(super) fn init_levels(&mut self, first: &B) {
        let size = first.longest_edge();
        let f = self.config.factor;
        let mut c0 = size * libm::sqrtf(f);
        if !(c0.is_normal() && c0 > 0.0) {
            c0 = 1.0;
        }
        self.base_size = c0;
        let mut cell = [0.0f32; LEVELS];
        cell[BASE_LEVEL] = c0;
        for i in BASE_LEVEL + 1..LEVELS {
            cell[i] = cell[i - 1] * f;
        }
        for i in (0..BASE_LEVEL).rev() {
            cell[i] = cell[i + 1] / f;
        }
        for (i, lv) in self.levels.iter_mut().enumerate() {
            *lv = Level::NEW;
            lv.cell = cell[i];
            lv.inv = 1.0 / cell[i];
            lv.lower = if i == 0 { cell[0] / f } else { cell[i - 1] };
            lv.usable = lv.cell.is_normal() && lv.inv.is_normal();
        }
    }

    /// Whether `b` spans at most two cells per axis at level `i`, with every
    /// coordinate within [`HHG_RANGE_CELLS`] cells. `Err` for out of range.
    #[inline(always)]
    pub(super) fn fits(&self, i: usize, b: &B) -> Result<bool, Error> {
        let inv = self.levels[i].inv;
        let (lo, hi) = (b.min(), b.max());
        let mut ok = true;
        for k in 0..Self::D {
            let t = lo.coord(k) * inv;
            let u = hi.coord(k) * inv;
            if !(t.abs() < HHG_RANGE_CELLS && u.abs() < HHG_RANGE_CELLS) {
                return Err(Error::OutOfRange);
            }
            ok &= floor_i32(u) - floor_i32(t) <= 1;
        }
        Ok(ok)
    }

    /// The level a box of longest edge `size` belongs to (eq. 3.3.3), before
    /// the span check: the first usable level whose cells are larger.
    pub(super) fn size_level(&self, size: f32) -> Option<usize> {
        // Usable levels are one contiguous run with increasing cells.
        let lo = self.levels.iter().position(|l| l.usable)?;
        let hi = LEVELS - self.levels.iter().rev().position(|l| l.usable)?;
        let i = lo + self.levels[lo..hi].partition_point(|l| l.cell <= size);
        (i < hi).then_some(i)
    }

    /// The ideal level of `b`: the first usable level whose cells are larger
    /// than `b`, in which `b` spans at most two cells per axis and its
    /// coordinates are within [`HHG_RANGE_CELLS`] cells (a box too far out
    /// for its size's level goes up to a level of larger cells). `None` if
    /// too large for every level; [`Error::OutOfRange`] if no level can
    /// represent its coordinates.
    pub(super) fn ideal(&self, b: &B) -> Result<Option<usize>, Error> {
        let Some(start) = self.size_level(b.longest_edge()) else {
            return Ok(None);
        };
        let mut err = None;
        for i in start..LEVELS {
            if !self.levels[i].usable {
                continue;
            }
            match self.fits(i, b) {
                Ok(true) => return Ok(Some(i)),
                Ok(false) => err = None,
                Err(e) => err = Some(e),
            }
        }
        match err {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// Where `b` goes now: its ideal level if that grid exists or can be
    /// made, else the next larger existing grid, else the unbounded container.
    pub(super) fn target(&self, b: &B) -> Result<Target, Error> {
        let Some(i) = self.ideal(b)? else {
            return Ok(Target::TooLarge);
        };
        if self.levels[i].active || self.can_create() {
            return Ok(Target::Grid(i));
        }
        let mut j = i + 1;
        while j < LEVELS {
            if self.levels[j].active && self.fits(j, b) == Ok(true) {
                return Ok(Target::Grid(j));
            }
            j += 1;
        }
        Ok(Target::TooLarge)
    }

    pub(super) fn min_grid_words() -> usize {
        Self::TABLE + (1usize << (2 * Self::D))
    }

    pub(super) fn can_create(&self) -> bool {
        self.free_words() >= Self::min_grid_words()
    }

    pub(super) fn free_words(&self) -> usize {
        self.arena.as_ref().len().min(u32::MAX as usize) - self.used + self.garbage
    }

    /// Cell index of the lower corner of `b` in level `i`'s grid.
    #[inline(always)]
    pub(super) fn local(lv: &Level, p: B::Point) -> u32 {
        let mut local = 0u32;
        for k in 0..Self::D {
            let c = floor_i32(p.coord(k) * lv.inv) as u32;
            local |= (c & lv.mask[k]) << lv.shift[k];
        }
        local
    }

    /// Row of the offset table for the cell `local`.
    #[inline(always)]
    pub(super) fn class(lv: &Level, local: u32) -> usize {
        let mut class = 0usize;
        let mut w = 1usize;
        for k in 0..Self::D {
            let x = (local >> lv.shift[k]) & lv.mask[k];
            let c = if x == 0 {
                1
            } else if x == lv.mask[k] {
                2
            } else {
                0
            };
            class += c * w;
            w *= 3;
        }
        class
    }

    // ------------------------------------------------------------------ arena

    /// Hands out `words` arena words, compacting first if needed; the caller
    /// has checked `free_words() >= words`.
    pub(super) fn alloc(&mut self, words: usize) -> usize {
        let len = self.arena.as_ref().len();
        if self.used + words > len {
            self.compact();
        }
        let at = self.used;
        self.used += words;
        at
    }

    /// Slides the live regions to the front of the arena, in place.
    pub(super) fn compact(&mut self) {
        let mut order = [0usize; LEVELS];
        let mut n = 0;
        for (i, lv) in self.levels.iter().enumerate() {
            if lv.active {
                order[n] = i;
                n += 1;
            }
        }
        let levels = &self.levels;
        crate::sort::sort_by_key(&mut order[..n], |&i| levels[i].base);
        let mut dst = 0usize;
        let arena = self.arena.as_mut();
        for &i in &order[..n] {
            let lv = &mut self.levels[i];
            if lv.base != dst {
                arena.copy_within(lv.base..lv.base + lv.words, dst);
                lv.base = dst;
            }
            dst += lv.words;
        }
        self.used = dst;
        self.garbage = 0;
    }

    /// Gives level `i` a fresh region of `2^log2` cells per axis: offset
    /// table filled, cells empty. The caller has checked the room.
    pub(super) fn make_region(&mut self, i: usize, log2: u8) {
        let d = Self::D;
        let cells = 1usize << (log2 as usize * d);
        let words = Self::TABLE + cells;
        let base = self.alloc(words);
        let lv = &mut self.levels[i];
        lv.active = true;
        lv.base = base;
        lv.words = words;
        lv.cells = cells;
        lv.log2 = [0; 3];
        lv.shift = [0; 3];
        lv.mask = [0; 3];
        let mut shift = 0u32;
        for k in 0..d {
            lv.log2[k] = log2;
            lv.shift[k] = shift;
            lv.mask[k] = (1u32 << log2) - 1;
            shift += log2 as u32;
        }
        let lv = *lv;
        let region = &mut self.arena.as_mut()[base..base + words];
        let (table, cell_words) = region.split_at_mut(Self::TABLE);
        cell_words.fill(NONE);
        for (e, t) in table.iter_mut().enumerate() {
            *t = Self::table_entry(&lv, e / Self::STENCIL, e % Self::STENCIL);
        }
        self.active |= 1 << i;
    }

    /// Offset from a cell of boundary class `class` to its stencil entry
    /// `j`, wrapping periodically: per axis, class digit 0 is an inner cell,
    /// 1 a cell on the low face, 2 one on the high face.
    pub(super) fn table_entry(lv: &Level, class: usize, j: usize) -> u32 {
        let o = Self::stencil_offset(j);
        let mut off = 0i64;
        let mut c = class;
        for (k, &ok) in o.iter().enumerate().take(Self::D) {
            let cls = c % 3;
            c /= 3;
            let stride = 1i64 << lv.shift[k];
            let dim = lv.mask[k] as i64 + 1;
            off += ok as i64 * stride;
            if cls == 1 && ok == -1 {
                off += dim * stride;
            } else if cls == 2 && ok == 1 {
                off -= dim * stride;
            }
        }
        off as i32 as u32
    }

    /// Entry `j` of a table row: the cell itself, the forward half, then the
    /// backward half.
    pub(super) fn stencil_offset(j: usize) -> [i32; 3] {
        let half = B::Point::HALF_STENCIL;
        let mut o = [0i32; 3];
        if j == 0 {
            return o;
        }
        let (h, sign) = if j <= Self::HALF {
            (half[j - 1], 1)
        } else {
            (half[j - 1 - Self::HALF], -1)
        };
        for (k, ok) in o.iter_mut().enumerate().take(Self::D) {
            *ok = sign * B::Point::cell_coord(h, k);
        }
        o
    }

    /// Creates level `i`'s grid at the initial size, or smaller if the arena
    /// is short. The caller has checked [`can_create`](Self::can_create).
    pub(super) fn create(&mut self, i: usize) {
        let mut log2 = self.config.initial_log2.min(Dims::max_log2(Self::D));
        while log2 > 2 && self.free_words() < Self::TABLE + (1usize << (log2 as usize * Self::D)) {
            log2 -= 1;
        }
        let lv = &mut self.levels[i];
        lv.objects = 0;
        lv.occupied = 0;
        lv.saturated = false;
        self.make_region(i, log2);
    }

    /// Grows level `i` 2× per axis if its boxes exceed the density and the
    /// arena has room; otherwise marks it saturated.
    pub(super) fn maybe_grow(&mut self, i: usize) {
        let lv = self.levels[i];
        if lv.saturated || (lv.objects as f32) <= lv.cells as f32 * self.config.density {
            return;
        }
        let max = Dims::max_log2(Self::D);
        let log2 = lv.log2[0];
        if log2 >= max {
            self.levels[i].saturated = true;
            return;
        }
        let need = Self::TABLE + (1usize << ((log2 as usize + 1) * Self::D));
        if self.free_words() + lv.words < need {
            self.levels[i].saturated = true;
            return;
        }
        // 1. Detach every box of the level into a pending chain.
        let pending = self.detach_level(i);
        // 2. New region (the old one becomes garbage).
        self.active &= !(1 << i);
        self.levels[i].active = false;
        self.garbage += lv.words;
        self.make_region(i, log2 + 1);
        self.levels[i].objects = lv.objects;
        self.levels[i].occupied = 0;
        // 3. Rehash.
        self.relink_chain(pending, i);
    }

    /// Unlinks every box of level `i` into one chain (through `next`, keys
    /// set to pending) and drops the level's cell records. Returns its head.
    pub(super) fn detach_level(&mut self, i: usize) -> u32 {
        let lv = self.levels[i];
        let mut chain = NONE;
        let mut p = self.nrec as usize;
        while p > 0 {
            p -= 1;
            let r = self.recs.as_ref()[p];
            if (r.key >> LOCAL_BITS) as usize != i {
                continue;
            }
            self.arena.as_mut()[lv.cells_at(Self::TABLE) + (r.key & LOCAL_MASK) as usize] = NONE;
            let slots = self.slots.as_mut();
            let mut a = r.head;
            while a != NONE {
                let next = slots[a as usize].next;
                slots[a as usize].key = KEY_PENDING;
                slots[a as usize].next = chain;
                chain = a;
                a = next;
            }
            self.remove_record(p);
        }
        chain
    }

    /// Links every box of a pending chain into level `i`.
    pub(super) fn relink_chain(&mut self, mut chain: u32, i: usize) {
        while chain != NONE {
            let a = chain;
            chain = self.slots.as_ref()[a as usize].next;
            let lv = &self.levels[i];
            let b = self.slots.as_ref()[a as usize].aabb;
            let local = Self::local(lv, b.min());
            self.link(a, i, local);
        }
    }

    // ------------------------------------------------------------ cell lists

    /// Drops occupied-cell record `p` (swap-remove) and repoints the head of
    /// the record moved into its place.
    pub(super) fn remove_record(&mut self, p: usize) {
        let last = self.nrec as usize - 1;
        if p != last {
            let moved = self.recs.as_ref()[last];
            self.recs.as_mut()[p] = moved;
            let c = self.cell_word(moved.key);
            self.arena.as_mut()[c] = p as u32;
            self.unsorted += 1;
        }
        self.nrec -= 1;
    }

    /// Arena word of the cell of a grid key.
    #[inline(always)]
    pub(super) fn cell_word(&self, k: u32) -> usize {
        self.levels[(k >> LOCAL_BITS) as usize].cells_at(Self::TABLE) + (k & LOCAL_MASK) as usize
    }

    /// Pushes box `a` at the front of cell `local` of level `i`.
    pub(super) fn link(&mut self, a: u32, i: usize, local: u32) {
        let k = key(i, local);
        let cell = self.levels[i].cells_at(Self::TABLE) + local as usize;
        let p = self.arena.as_ref()[cell];
        let slots = self.slots.as_mut();
        slots[a as usize].key = k;
        slots[a as usize].prev = NONE;
        if p == NONE {
            let q = self.nrec;
            self.recs.as_mut()[q as usize] = HhgRecord { key: k, head: a };
            slots[a as usize].next = NONE;
            self.arena.as_mut()[cell] = q;
            self.nrec += 1;
            self.unsorted += 1;
            self.levels[i].occupied += 1;
        } else {
            let r = &mut self.recs.as_mut()[p as usize];
            slots[a as usize].next = r.head;
            slots[r.head as usize].prev = a;
            r.head = a;
        }
    }

    /// Removes box `a` from its cell (it must be in a grid).
    pub(super) fn unlink(&mut self, a: u32) {
        let s = self.slots.as_ref()[a as usize];
        if s.prev == NONE {
            let i = (s.key >> LOCAL_BITS) as usize;
            let cell = self.cell_word(s.key);
            let p = self.arena.as_ref()[cell] as usize;
            if s.next == NONE {
                self.arena.as_mut()[cell] = NONE;
                self.levels[i].occupied -= 1;
                self.remove_record(p);
            } else {
                self.recs.as_mut()[p].head = s.next;
                self.slots.as_mut()[s.next as usize].prev = NONE;
            }
        } else {
            let slots = self.slots.as_mut();
            slots[s.prev as usize].next = s.next;
            if s.next != NONE {
                slots[s.next as usize].prev = s.prev;
            }
        }
    }

    pub(super) fn push_unbounded(&mut self, a: u32, k: u32) {
        let head = self.unbounded_head;
        let slots = self.slots.as_mut();
        slots[a as usize].key = k;
        slots[a as usize].next = head;
        slots[a as usize].prev = NONE;
        if head != NONE {
            slots[head as usize].prev = a;
        }
        self.unbounded_head = a;
        self.unbounded_len += 1;
    }

    pub(super) fn unlink_unbounded(&mut self, a: u32) {
        let s = self.slots.as_ref()[a as usize];
        let slots = self.slots.as_mut();
        if s.prev == NONE {
            self.unbounded_head = s.next;
        } else {
            slots[s.prev as usize].next = s.next;
        }
        if s.next != NONE {
            slots[s.next as usize].prev = s.prev;
        }
        self.unbounded_len -= 1;
    }

    pub(super) fn push_flat(&mut self, a: u32) {
        let p = self.nrec;
        let slots = self.slots.as_mut();
        slots[a as usize].key = KEY_FLAT;
        slots[a as usize].prev = p;
        slots[a as usize].next = NONE;
        self.recs.as_mut()[p as usize] = HhgRecord {
            key: KEY_FLAT,
            head: a,
        };
        self.nrec += 1;
    }

    pub(super) fn unlink_flat(&mut self, a: u32) {
        let p = self.slots.as_ref()[a as usize].prev as usize;
        let last = self.nrec as usize - 1;
        let moved = self.recs.as_ref()[last];
        self.recs.as_mut()[p] = moved;
        self.slots.as_mut()[moved.head as usize].prev = p as u32;
        self.nrec -= 1;
    }

    /// Puts a box (already stored in its slot) where it belongs.
    pub(super) fn place(&mut self, a: u32, t: Target) {
        match t {
            Target::TooLarge => self.push_unbounded(a, KEY_TOO_LARGE),
            Target::Grid(i) => {
                if !self.levels[i].active {
                    self.create(i);
                }
                let b = self.slots.as_ref()[a as usize].aabb;
                let local = Self::local(&self.levels[i], b.min());
                self.link(a, i, local);
                self.levels[i].objects += 1;
                self.maybe_grow(i);
            }
        }
    }

    /// Removes a stored box from wherever it is.
    pub(super) fn take_out(&mut self, a: u32) {
        let k = self.slots.as_ref()[a as usize].key;
        if is_grid_key(k) {
            self.unlink(a);
            self.levels[(k >> LOCAL_BITS) as usize].objects -= 1;
        } else if k == KEY_FLAT {
            self.unlink_flat(a);
        } else {
            self.unlink_unbounded(a);
        }
    }

    /// Leaves the small-N path: every flat box goes to its grid.
    pub(super) fn switch_to_grids(&mut self) {
        let mut chain = NONE;
        for p in 0..self.nrec as usize {
            let a = self.recs.as_ref()[p].head;
            let s = &mut self.slots.as_mut()[a as usize];
            s.key = KEY_PENDING;
            s.next = chain;
            chain = a;
        }
        self.nrec = 0;
        self.grid_mode = true;
        while chain != NONE {
            let a = chain;
            let s = self.slots.as_ref()[a as usize];
            chain = s.next;
            // Validated on insertion against the same levels.
            let t = self.target(&s.aabb).unwrap_or(Target::TooLarge);
            self.place(a, t);
        }
    }
}
