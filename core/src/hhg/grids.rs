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

/// `√x` rounded to nearest, as `libm::sqrtf` gives it, for a positive
/// normal `x` (NaN for anything else): the integer square root of the
/// significand, bit by bit. The grids need one square root (of the
/// hierarchy factor, when the levels are set), and libm's software
/// `sqrtf` (the target's `vsqrt` is out of reach without `unsafe`) costs
/// firmware 492 bytes of code and tables (`fw-hhg`'s `.text` was 24 bytes
/// over its 16 KiB target with it), this 264. The unit test checks it
/// against `libm::sqrtf` over the factors' range bit for bit.
fn sqrt_rounded(x: f32) -> f32 {
    if !(x.is_normal() && x > 0.0) {
        return f32::NAN;
    }
    let bits = x.to_bits();
    let mut e = ((bits >> 23) & 0xff) as i32 - 127;
    let mut m = u64::from((bits & 0x7f_ffff) | 0x80_0000);
    if e & 1 != 0 {
        m <<= 1;
        e -= 1;
    }
    // x = m·2^(e − 23), e even: √x = √(m·2²³)·2^(e/2 − 23), and
    // v = m·2²³ lies in [2⁴⁶, 2⁴⁸), so ⌊√v⌋ has 24 bits.
    let v = m << 23;
    let (mut r, mut rem, mut bit) = (0u64, v, 1u64 << 46);
    while bit != 0 {
        if rem >= r + bit {
            rem -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    // rem = v − r²; v > (r + ½)² = r² + r + ¼ ⇔ rem > r (no ties).
    if rem > r {
        r += 1;
    }
    let mut e2 = e / 2;
    if r == 1 << 24 {
        r >>= 1;
        e2 += 1;
    }
    f32::from_bits((((e2 + 127) as u32) << 23) | (r as u32 & 0x7f_ffff))
}

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord<B>>, A: Storage<u32>>
    HierarchicalHashGrid<B, S, R, A>
{
    // ----------------------------------------------------------------- levels

    pub(super) fn init_levels(&mut self, first: &B) {
        let size = first.longest_edge();
        let f = self.config.factor;
        let mut c0 = size * sqrt_rounded(f);
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
        Self::fits_at(&self.levels, i, b)
    }

    /// [`fits`](Self::fits) over the levels alone (for the parallel tasks,
    /// which borrow the buffers apart from the levels).
    #[inline(always)]
    pub(super) fn fits_at(levels: &[Level; LEVELS], i: usize, b: &B) -> Result<bool, Error> {
        let inv = levels[i].inv;
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

    /// [`fits_at`](Self::fits_at)`(levels, i, b) == Ok(true)` for the level
    /// `lv` of `levels[i]`, and then the cell of `b`'s lower corner there
    /// (what [`local`](Self::local) computes), in one pass: each lower
    /// coordinate is scaled and floored once for both.
    #[inline(always)]
    pub(super) fn fits_local(lv: &Level, b: &B) -> Option<u32> {
        let (lo, hi) = (b.min(), b.max());
        let mut ok = true;
        let mut local = 0u32;
        for k in 0..Self::D {
            let t = lo.coord(k) * lv.inv;
            let u = hi.coord(k) * lv.inv;
            ok &= t.abs() < HHG_RANGE_CELLS && u.abs() < HHG_RANGE_CELLS;
            // Clamped (a no-op in range): out of range, where the result
            // is unused, the floors stay defined.
            let r = HHG_RANGE_CELLS;
            let c = floor_i32(t.clamp(-r, r));
            ok &= floor_i32(u.clamp(-r, r)) - c <= 1;
            local |= (c as u32 & lv.mask[k]) << lv.shift[k];
        }
        ok.then_some(local)
    }

    /// Whether every coordinate of `b` is within [`HHG_RANGE_CELLS`] cells of
    /// a level of inverse cell size `inv` (the range test of
    /// [`fits_at`](Self::fits_at)); used by the in-place `update_all`.
    #[cfg(any(test, target_os = "none"))]
    #[inline(always)]
    pub(super) fn in_range(inv: f32, b: &B) -> bool {
        let (lo, hi) = (b.min(), b.max());
        let mut ok = true;
        for k in 0..Self::D {
            ok &= (lo.coord(k) * inv).abs() < HHG_RANGE_CELLS;
            ok &= (hi.coord(k) * inv).abs() < HHG_RANGE_CELLS;
        }
        ok
    }

    /// The level a box of longest edge `size` belongs to (eq. 3.3.3), before
    /// the span check: the first usable level whose cells are larger.
    pub(super) fn size_level_at(levels: &[Level; LEVELS], size: f32) -> Option<usize> {
        // Usable levels are one contiguous run with increasing cells.
        let lo = levels.iter().position(|l| l.usable)?;
        let hi = LEVELS - levels.iter().rev().position(|l| l.usable)?;
        let i = lo + levels[lo..hi].partition_point(|l| l.cell <= size);
        (i < hi).then_some(i)
    }

    /// The ideal level of `b`: the first usable level whose cells are larger
    /// than `b`, in which `b` spans at most two cells per axis and its
    /// coordinates are within [`HHG_RANGE_CELLS`] cells (a box too far out
    /// for its size's level goes up to a level of larger cells). `None` if
    /// too large for every level; [`Error::OutOfRange`] if no level can
    /// represent its coordinates.
    pub(super) fn ideal(&self, b: &B) -> Result<Option<usize>, Error> {
        Self::ideal_at(&self.levels, b)
    }

    /// [`ideal`](Self::ideal) over the levels alone.
    pub(super) fn ideal_at(levels: &[Level; LEVELS], b: &B) -> Result<Option<usize>, Error> {
        let Some(start) = Self::size_level_at(levels, b.longest_edge()) else {
            return Ok(None);
        };
        let mut err = None;
        for i in start..LEVELS {
            if !levels[i].usable {
                continue;
            }
            match Self::fits_at(levels, i, b) {
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
            self.recs.as_mut()[p].set(moved.key, moved.head);
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
            self.recs.as_mut()[q as usize].set(k, a);
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
        self.recs.as_mut()[p as usize].set(KEY_FLAT, a);
        self.nrec += 1;
    }

    pub(super) fn unlink_flat(&mut self, a: u32) {
        let p = self.slots.as_ref()[a as usize].prev as usize;
        let last = self.nrec as usize - 1;
        let moved = self.recs.as_ref()[last];
        self.recs.as_mut()[p].set(moved.key, moved.head);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Validate;
    use crate::geom::{Aabb2, Aabb3, Vec2, Vec3};
    use crate::hhg::HhgConfig;
    use crate::inspect::Inspect;
    use crate::traits::BroadPhase;

    type Grid3<const C: usize, const W: usize> =
        HierarchicalHashGrid<Aabb3, [HhgSlot<Aabb3>; C], [HhgRecord<Aabb3>; C], [u32; W]>;

    /// A cube of edge `e` with its lower corner at `(x, y, z)`.
    fn cube(x: f32, y: f32, z: f32, e: f32) -> Aabb3 {
        Aabb3::new(Vec3::new(x, y, z), Vec3::new(x + e, y + e, z + e)).unwrap()
    }

    /// Grids of 4 cells per axis, from the first box on.
    fn small() -> HhgConfig {
        HhgConfig::DEFAULT
            .with_initial_cells_log2(2)
            .unwrap()
            .with_small_n_threshold(0)
    }

    /// Words of a 3D grid of `2^log2` cells per axis: table + cells.
    const fn words(log2: usize) -> usize {
        729 + (1 << (3 * log2))
    }

    fn new<const C: usize, const W: usize>(config: HhgConfig) -> Grid3<C, W> {
        HierarchicalHashGrid::new([HhgSlot::EMPTY; C], [HhgRecord::EMPTY; C], [0; W], config)
    }

    /// An arena one word short of the smallest grid makes none: the box goes
    /// to the unbounded container. One word more and the grid exists.
    #[test]
    fn arena_exhaustion_sends_boxes_to_the_unbounded_container() {
        let mut g = new::<4, { words(2) - 1 }>(small());
        g.insert(0, cube(0.0, 0.0, 0.0, 1.0)).unwrap();
        let st = g.stats();
        assert_eq!((st.grids, st.unbounded_objects), (0, 1));
        assert_eq!(g.slots[0].key, KEY_TOO_LARGE);
        assert_eq!(g.used, 0);
        g.validate().unwrap();

        let mut g = new::<4, { words(2) }>(small());
        g.insert(0, cube(0.0, 0.0, 0.0, 1.0)).unwrap();
        let st = g.stats();
        assert_eq!((st.grids, st.unbounded_objects), (1, 0));
        assert_eq!((st.arena_words_used, st.arena_words), (793, 793));
        // c₀ = edge · √2, so the unit cube is on the base level.
        assert_eq!(g.slots[0].key >> LOCAL_BITS, BASE_LEVEL as u32);
        assert!(!g.can_create());
        g.validate().unwrap();
    }

    /// The ninth box of a 4³ grid (density 1/8) grows it to 8³; with no room
    /// for 16³ the grid saturates at 65 boxes, and stays correct.
    #[test]
    fn arena_growth_then_saturation() {
        let mut g = new::<80, { words(2) + words(3) }>(small());
        let at = |i: u32| cube((i % 9) as f32 * 1.5, (i / 9) as f32 * 1.5, 0.0, 1.0);
        for id in 0..8 {
            g.insert(id, at(id)).unwrap();
        }
        let lv = g.levels[BASE_LEVEL];
        assert_eq!((lv.log2[0], lv.base, lv.words), (2, 0, words(2)));
        g.insert(8, at(8)).unwrap();
        let lv = g.levels[BASE_LEVEL];
        assert_eq!((lv.log2, lv.base, lv.words), ([3; 3], words(2), words(3)));
        assert_eq!((g.used, g.garbage), (words(2) + words(3), words(2)));
        assert_eq!(lv.objects, 9);
        g.validate().unwrap();
        for id in 9..64 {
            g.insert(id, at(id)).unwrap();
        }
        assert!(!g.levels[BASE_LEVEL].saturated);
        g.insert(64, at(64)).unwrap();
        assert!(g.levels[BASE_LEVEL].saturated);
        assert!(g.stats().grid[0].saturated);
        assert_eq!(g.levels[BASE_LEVEL].log2[0], 3);
        g.validate().unwrap();
        let mut pairs = 0;
        g.for_each_overlap(|_, _| pairs += 1).unwrap();
        assert_eq!(pairs, 0);
    }

    /// Growing the first of two grids when the arena's tail is too short
    /// compacts: the second grid slides to the front, the grown one follows.
    #[test]
    fn arena_compaction_slides_live_grids_down() {
        // Room for the two small grids, then for one small and one grown.
        let mut g = new::<16, { words(2) + words(3) }>(small());
        // The first box (edge 0.25) fixes the base level; unit cubes are two
        // levels up.
        g.insert(0, cube(0.0, 0.0, 0.0, 0.25)).unwrap();
        g.insert(1, cube(0.0, 0.0, 0.0, 1.0)).unwrap();
        let (small_lv, unit_lv) = (BASE_LEVEL, BASE_LEVEL + 2);
        assert_eq!(g.slots[1].key >> LOCAL_BITS, unit_lv as u32);
        assert_eq!(g.levels[small_lv].base, 0);
        assert_eq!(g.levels[unit_lv].base, words(2));
        for id in 2..9 {
            g.insert(id, cube(1.2 + id as f32 * 0.5, 0.0, 0.0, 0.25))
                .unwrap();
        }
        assert_eq!(g.levels[small_lv].log2[0], 2);
        // The ninth small box grows its grid: no room behind the used
        // words, so the unit grid slides to the front first.
        g.insert(9, cube(6.0, 0.0, 0.0, 0.25)).unwrap();
        assert_eq!(g.levels[small_lv].log2[0], 3);
        assert_eq!(g.levels[unit_lv].base, 0);
        assert_eq!(g.levels[small_lv].base, words(2));
        assert_eq!((g.used, g.garbage), (words(2) + words(3), 0));
        g.validate().unwrap();
        let mut pairs = [(0, 0); 4];
        let mut n = 0;
        g.for_each_overlap(|a, b| {
            if n < 4 {
                pairs[n] = (a.min(b), a.max(b));
            }
            n += 1;
        })
        .unwrap();
        assert_eq!(&pairs[..n], &[(0, 1)]);
    }

    /// Every row of the offset table, for every cell of a 4³ grid (all
    /// three boundary classes on every axis), leads to the cell at the
    /// stencil offset, wrapping periodically.
    #[test]
    fn offset_rows_wrap_at_the_boundary_3d() {
        let mut g = new::<4, { words(2) }>(small());
        g.insert(0, cube(0.0, 0.0, 0.0, 1.0)).unwrap();
        let lv = g.levels[BASE_LEVEL];
        let mut seen = [false; 27];
        for j in 0..27 {
            let o = Grid3::<4, { words(2) }>::stencil_offset(j);
            let e = ((o[0] + 1) + 3 * (o[1] + 1) + 9 * (o[2] + 1)) as usize;
            assert!(!seen[e], "offset {o:?} twice");
            seen[e] = true;
            if (1..=13).contains(&j) {
                let back = Grid3::<4, { words(2) }>::stencil_offset(j + 13);
                assert_eq!(back, [-o[0], -o[1], -o[2]]);
            }
        }
        assert_eq!(Grid3::<4, { words(2) }>::stencil_offset(0), [0; 3]);
        for local in 0..64u32 {
            let c = [local & 3, (local >> 2) & 3, (local >> 4) & 3];
            let row = g.row(&lv, local);
            assert_eq!(row.len(), 27);
            for (j, &off) in row.iter().enumerate() {
                let o = Grid3::<4, { words(2) }>::stencil_offset(j);
                let want: u32 = (0..3)
                    .map(|k| ((c[k] as i32 + o[k]).rem_euclid(4) as u32) << (2 * k))
                    .sum();
                assert_eq!(local.wrapping_add(off), want, "cell {c:?} offset {o:?}");
            }
        }
    }

    /// The same in 2D: 9 entries per row, 4 forward.
    #[test]
    fn offset_rows_wrap_at_the_boundary_2d() {
        let mut g = HierarchicalHashGrid::<Aabb2, _, _, _>::new(
            [HhgSlot::EMPTY; 2],
            [HhgRecord::EMPTY; 2],
            [0u32; 81 + 16],
            small(),
        );
        let b = Aabb2::new(Vec2::new(0.0, 0.0), Vec2::new(1.0, 1.0)).unwrap();
        g.insert(0, b).unwrap();
        assert_eq!(g.stats().grids, 1);
        let lv = g.levels[BASE_LEVEL];
        for local in 0..16u32 {
            let c = [local & 3, (local >> 2) & 3];
            let row = g.row(&lv, local);
            assert_eq!(row.len(), 9);
            for (j, &off) in row.iter().enumerate() {
                let o = HierarchicalHashGrid::<
                    Aabb2,
                    [HhgSlot<Aabb2>; 2],
                    [HhgRecord<Aabb2>; 2],
                    [u32; 97],
                >::stencil_offset(j);
                let want: u32 = (0..2)
                    .map(|k| ((c[k] as i32 + o[k]).rem_euclid(4) as u32) << (2 * k))
                    .sum();
                assert_eq!(local.wrapping_add(off), want, "cell {c:?} offset {o:?}");
            }
        }
    }

    /// A grid of level `BASE_LEVEL` made by hand, empty, for the list tests.
    fn bare() -> Grid3<8, { words(2) }> {
        let mut g = new::<8, { words(2) }>(small());
        g.init_levels(&cube(0.0, 0.0, 0.0, 1.0));
        g.grid_mode = true;
        g.create(BASE_LEVEL);
        g
    }

    /// Links are pushed at the head of a cell; the first box of a cell
    /// takes a record and the cell holds the record's index; unlinking the
    /// middle, the head and the last box relinks the neighbours, and the
    /// last one frees the record (swap-remove, repointing the moved cell).
    #[test]
    fn cell_list_insert_remove_relink() {
        let mut g = bare();
        let i = BASE_LEVEL;
        let cell = |g: &Grid3<8, { words(2) }>, local: u32| g.arena[g.cell_word(key(i, local))];
        for a in 0..3 {
            g.link(a, i, 5);
        }
        g.link(3, i, 9);
        assert_eq!((g.nrec, g.levels[i].occupied), (2, 2));
        assert_eq!((cell(&g, 5), cell(&g, 9)), (0, 1));
        assert_eq!((g.recs[0].key, g.recs[0].head), (key(i, 5), 2));
        assert_eq!((g.recs[1].key, g.recs[1].head), (key(i, 9), 3));
        let links = |g: &Grid3<8, { words(2) }>, a: usize| (g.slots[a].prev, g.slots[a].next);
        assert_eq!(links(&g, 2), (NONE, 1));
        assert_eq!(links(&g, 1), (2, 0));
        assert_eq!(links(&g, 0), (1, NONE));
        assert_eq!(g.slots[0].key, key(i, 5));
        // Middle.
        g.unlink(1);
        assert_eq!((links(&g, 2), links(&g, 0)), ((NONE, 0), (2, NONE)));
        // Head.
        g.unlink(2);
        assert_eq!(g.recs[0].head, 0);
        assert_eq!(links(&g, 0), (NONE, NONE));
        // Last: record 0 goes, record 1 (cell 9) moves into its place.
        g.unlink(0);
        assert_eq!((g.nrec, g.levels[i].occupied), (1, 1));
        assert_eq!(cell(&g, 5), NONE);
        assert_eq!((g.recs[0].key, g.recs[0].head), (key(i, 9), 3));
        assert_eq!(cell(&g, 9), 0);
        // Every cell but cell 9 is empty.
        let occupied = g.cells(&g.levels[i]).iter().filter(|&&c| c != NONE).count();
        assert_eq!(occupied, 1);
    }

    /// Detaching a level chains every box (keyed pending) and drops its
    /// records; relinking puts each box back in the cell of its lower corner.
    #[test]
    fn detach_and_relink_a_level() {
        let mut g = bare();
        let i = BASE_LEVEL;
        for a in 0..5u32 {
            let b = cube(a as f32 * 0.9, 0.0, 0.0, 1.0);
            g.slots[a as usize].aabb = b;
            g.place(a, Target::Grid(i));
        }
        g.len = 5;
        g.validate().unwrap();
        let before = g.slots;
        let chain = g.detach_level(i);
        assert_eq!(g.nrec, 0);
        let mut n = 0;
        let mut a = chain;
        while a != NONE {
            assert_eq!(g.slots[a as usize].key, KEY_PENDING);
            a = g.slots[a as usize].next;
            n += 1;
        }
        assert_eq!(n, 5);
        assert!(g.cells(&g.levels[i]).iter().all(|&c| c == NONE));
        g.levels[i].occupied = 0;
        g.relink_chain(chain, i);
        g.validate().unwrap();
        for (now, was) in g.slots.iter().zip(&before) {
            assert_eq!(now.key, was.key);
        }
    }

    /// The record list: sorting puts the records in key order and points
    /// every cell at its record again.
    #[test]
    fn record_list_sorts_and_repoints() {
        let mut g = bare();
        let i = BASE_LEVEL;
        for (a, local) in [(0u32, 40u32), (1, 7), (2, 63), (3, 0)] {
            g.link(a, i, local);
        }
        assert_eq!(g.unsorted, 4);
        g.sort_records();
        assert_eq!(g.unsorted, 0);
        let keys = [0, 7, 40, 63].map(|l| key(i, l));
        for (p, k) in keys.iter().enumerate() {
            assert_eq!(g.recs[p].key, *k);
            assert_eq!(g.arena[g.cell_word(*k)], p as u32);
        }
        assert_eq!(g.recs[3].head, 2);
    }

    /// The flat array of the small-N path: a box's `prev` is its position;
    /// removing one moves the last box into its place.
    #[test]
    fn flat_array_swap_removes() {
        let mut g = new::<8, 0>(HhgConfig::DEFAULT);
        for a in 0..3 {
            g.push_flat(a);
        }
        assert_eq!(g.nrec, 3);
        assert_eq!([0, 1, 2].map(|a| g.slots[a].prev), [0, 1, 2]);
        g.unlink_flat(0);
        assert_eq!(g.nrec, 2);
        assert_eq!((g.recs[0].head, g.recs[1].head), (2, 1));
        assert_eq!(g.slots[2].prev, 0);
        assert_eq!(g.recs[0].key, KEY_FLAT);
    }

    /// The unbounded container is a doubly linked list with a count.
    #[test]
    fn unbounded_list_links_and_unlinks() {
        let mut g = new::<8, 0>(HhgConfig::DEFAULT);
        for a in 0..3 {
            g.push_unbounded(a, KEY_TOO_LARGE);
        }
        assert_eq!((g.unbounded_head, g.unbounded_len), (2, 3));
        g.unlink_unbounded(1);
        assert_eq!((g.slots[2].next, g.slots[0].prev), (0, 2));
        g.unlink_unbounded(2);
        assert_eq!((g.unbounded_head, g.unbounded_len), (0, 1));
        assert_eq!(g.slots[0].prev, NONE);
    }

    /// `memory_bytes` is the documented `76C + 4A` in 3D, `60C + 4A` in 2D.
    #[test]
    fn memory_is_the_formula() {
        let g = new::<10, 100>(HhgConfig::DEFAULT);
        assert_eq!(g.memory_bytes(), 76 * 10 + 4 * 100);
        let g2 = HierarchicalHashGrid::<Aabb2, _, _, _>::new(
            [HhgSlot::EMPTY; 10],
            [HhgRecord::EMPTY; 10],
            [0u32; 100],
            HhgConfig::DEFAULT,
        );
        assert_eq!(g2.memory_bytes(), 60 * 10 + 4 * 100);
    }

    /// Bit for bit `libm::sqrtf` over the hierarchy factors' range
    /// `1.25..=64` (every third float: about 16 million), at the powers of
    /// two and their neighbours, and on a spread of normal floats; NaN
    /// for zero, subnormals, negatives, infinities and NaN.
    #[test]
    fn sqrt_rounded_is_libm_sqrtf() {
        let (lo, hi) = (1.25f32.to_bits(), 64.0f32.to_bits());
        let mut b = lo;
        while b <= hi {
            let x = f32::from_bits(b);
            assert_eq!(sqrt_rounded(x).to_bits(), libm::sqrtf(x).to_bits(), "{x}");
            b += 3;
        }
        for e in -126..=127 {
            let p = libm::ldexpf(1.0, e);
            for x in [
                p,
                f32::from_bits(p.to_bits() + 1),
                f32::from_bits(p.to_bits() - 1),
            ] {
                if x.is_normal() {
                    assert_eq!(sqrt_rounded(x).to_bits(), libm::sqrtf(x).to_bits(), "{x}");
                }
            }
        }
        let mut b = f32::MIN_POSITIVE.to_bits();
        while b < f32::MAX.to_bits() {
            let x = f32::from_bits(b);
            assert_eq!(sqrt_rounded(x).to_bits(), libm::sqrtf(x).to_bits(), "{x}");
            b += 9973;
        }
        for x in [
            0.0,
            -0.0,
            1e-40,
            -1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ] {
            assert!(sqrt_rounded(x).is_nan(), "{x}");
        }
    }
}
