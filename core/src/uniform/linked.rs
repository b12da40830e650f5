//! Strategy (c): per-particle doubly linked lists, updated incrementally.

use core::marker::PhantomData;

use super::Grid;
use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::Point;
use crate::storage::Storage;
use crate::table::{NONE, advance_stamp};
use crate::traits::NeighborSearch;

/// A table slot of a [`LinkedHash`]: the first particle of its list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Head {
    stamp: u32,
    head: u32,
}

impl Default for Head {
    /// The unused value, [`Head::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl Head {
    /// A never-used slot. All zeros, so a `static` buffer of them lands in
    /// `.bss` rather than `.data`: a slot is read only when its stamp equals
    /// the hash's, which is never 0 once anything is stored.
    pub const EMPTY: Self = Self { stamp: 0, head: 0 };
}

/// A particle of a [`LinkedHash`]: position, cell and list links.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LinkedParticle<P: Point> {
    pos: P,
    cell: P::Cell,
    next: u32,
    prev: u32,
}

impl<P: Point> Default for LinkedParticle<P> {
    /// The unused value, [`LinkedParticle::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<P: Point> LinkedParticle<P> {
    /// An unused entry. All zeros (a `static` buffer of them lands in
    /// `.bss`): entries past the stored particles are never read.
    pub const EMPTY: Self = Self {
        pos: P::ZERO,
        cell: P::CELL_ZERO,
        next: 0,
        prev: 0,
    };
}

/// Uniform spatial hash with linked-list buckets (strategy (c)).
///
/// Each particle links to the previous and next particle of its bucket; a
/// bucket has no size limit. [`update`](Self::update) moves particles to new
/// positions and relinks only those whose cell changed, in `O(1)` each,
/// without rebuilding. Particles never move in memory, so queries follow
/// links (this suits cacheless targets best, as the SPH excerpt notes).
///
/// # Memory
///
/// `8T + N·(size_of::<P>() + size_of::<P::Cell>() + 8)` bytes: `8T + 32N`
/// in 3D, `8T + 24N` in 2D.
#[derive(Clone, Debug)]
pub struct LinkedHash<P, T, S>
where
    P: Point,
    T: Storage<Head>,
    S: Storage<LinkedParticle<P>>,
{
    table: T,
    particles: S,
    grid: Grid<P>,
    len: u32,
    stamp: u32,
    _p: PhantomData<P>,
}

impl<P, T, S> LinkedHash<P, T, S>
where
    P: Point,
    T: Storage<Head>,
    S: Storage<LinkedParticle<P>>,
{
    /// An empty hash over `table` (power-of-two length) and `particles`
    /// (its length is the capacity).
    ///
    /// Never fails and allocates nothing; `const`, so it can initialise a
    /// `static`. A table whose length is not a power of two in `1..=2³¹` is
    /// refused with [`Error::InvalidTableLength`] at the first build; use
    /// [`new_checked`](Self::new_checked) to refuse it here instead.
    ///
    /// Memory: `8T + 32N` bytes in 3D, `8T + 24N` in 2D. A build is `O(N)`
    /// (one link per particle); a neighbour query walks the lists of the 3ᵈ
    /// cells around the particle.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{NeighborSearch, Vec3};
    /// use spatium::uniform::{Head, LinkedHash, LinkedParticle};
    ///
    /// let mut hash = LinkedHash::<Vec3, _, _>::new([Head::EMPTY; 64], [LinkedParticle::EMPTY; 16]);
    /// hash.build(&[Vec3::ZERO, Vec3::new(0.0, 0.9, 0.0), Vec3::new(0.0, 1.1, 0.0)], 1.0)?;
    /// let mut pairs = 0;
    /// hash.for_each_pair(|_, _, d2| { assert!(d2 < 1.0); pairs += 1 });
    /// assert_eq!(pairs, 2); // 0–1 and 1–2; 0–2 are 1.1 apart
    /// # Ok::<(), spatium::Error>(())
    /// ```
    pub const fn new(table: T, particles: S) -> Self {
        Self {
            table,
            particles,
            grid: Grid::EMPTY,
            len: 0,
            stamp: 0,
            _p: PhantomData,
        }
    }

    /// As [`new`](Self::new), with the table length checked now rather than
    /// at the first build.
    ///
    /// # Errors
    /// [`Error::InvalidTableLength`] unless the table's length is a power of
    /// two in `1..=2³¹`.
    pub fn new_checked(table: T, particles: S) -> Result<Self, Error> {
        crate::table::table_mask(table.as_ref().len())?;
        Ok(Self::new(table, particles))
    }

    /// Most particles a build accepts.
    pub fn capacity(&self) -> usize {
        self.particles.as_ref().len().min(NONE as usize - 1)
    }

    /// The grid of the last build (kept by updates).
    pub fn grid(&self) -> &Grid<P> {
        &self.grid
    }

    /// Empties the hash in `O(1)`.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Moves every particle to `positions[i]`, relinking only those whose
    /// cell changed. Returns how many were relinked.
    ///
    /// The grid (origin, radius) of the last [`build`](NeighborSearch::build)
    /// is kept; positions must stay within [`super::UNIFORM_RANGE_CELLS`] cells of
    /// its origin.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`], [`Error::NonFinite`], [`Error::OutOfRange`];
    /// nothing changes on error.
    pub fn update(&mut self, positions: &[P]) -> Result<usize, Error> {
        let n = self.len as usize;
        if positions.len() != n {
            return Err(Error::LengthMismatch {
                expected: n,
                got: positions.len(),
            });
        }
        for &p in positions {
            self.grid.cell(p)?;
        }
        let grid = self.grid;
        let stamp = self.stamp;
        let table = self.table.as_mut();
        let parts = self.particles.as_mut();
        let mut relinked = 0;
        for (i, &p) in positions.iter().enumerate() {
            let c = grid.cell_unchecked(p);
            parts[i].pos = p;
            if c != parts[i].cell {
                unlink(&grid, table, parts, i as u32);
                link(&grid, stamp, table, parts, i as u32, c);
                relinked += 1;
            }
        }
        Ok(relinked)
    }

    /// Calls `f(j, d²)` for every particle `j != skip` within the radius of
    /// `p`, searching the stencil around cell `c`.
    fn visit_stencil(&self, p: P, c: P::Cell, skip: u32, f: &mut impl FnMut(u32, f32)) {
        let r2 = self.grid.radius_sq();
        for &d in P::STENCIL {
            let nc = P::cell_add(c, d);
            self.for_each_in_bucket(nc, |j, q| {
                let d2 = p.distance_squared(q.pos);
                if d2 < r2 && j != skip && q.cell == nc {
                    f(j, d2);
                }
            });
        }
    }

    /// Walks the list of the bucket `c` hashes to.
    #[inline(always)]
    fn for_each_in_bucket(&self, c: P::Cell, mut f: impl FnMut(u32, &LinkedParticle<P>)) {
        let h = self.table.as_ref()[self.grid.bucket(c) as usize];
        // Stamp 0: nothing was ever built, and every slot still reads 0.
        if self.stamp == 0 || h.stamp != self.stamp {
            return;
        }
        let parts = self.particles.as_ref();
        let mut j = h.head;
        while j != NONE {
            let q = &parts[j as usize];
            f(j, q);
            j = q.next;
        }
    }
}

fn unlink<P: Point>(grid: &Grid<P>, table: &mut [Head], parts: &mut [LinkedParticle<P>], i: u32) {
    let LinkedParticle {
        prev, next, cell, ..
    } = parts[i as usize];
    if prev != NONE {
        parts[prev as usize].next = next;
    } else {
        table[grid.bucket(cell) as usize].head = next;
    }
    if next != NONE {
        parts[next as usize].prev = prev;
    }
}

fn link<P: Point>(
    grid: &Grid<P>,
    stamp: u32,
    table: &mut [Head],
    parts: &mut [LinkedParticle<P>],
    i: u32,
    c: P::Cell,
) {
    let h = &mut table[grid.bucket(c) as usize];
    if h.stamp != stamp {
        *h = Head { stamp, head: NONE };
    }
    let old = h.head;
    h.head = i;
    if old != NONE {
        parts[old as usize].prev = i;
    }
    let me = &mut parts[i as usize];
    me.cell = c;
    me.next = old;
    me.prev = NONE;
}

impl<P, T, S> NeighborSearch<P> for LinkedHash<P, T, S>
where
    P: Point,
    T: Storage<Head>,
    S: Storage<LinkedParticle<P>>,
{
    fn build(&mut self, positions: &[P], radius: f32) -> Result<(), Error> {
        let grid = Grid::fit(
            radius,
            positions,
            self.table.as_ref().len(),
            self.capacity(),
        )?;
        let table = self.table.as_mut();
        advance_stamp(&mut self.stamp, || table.fill(Head::EMPTY));
        let parts = self.particles.as_mut();
        // Link in reverse so that each list runs in increasing id order.
        for (i, &p) in positions.iter().enumerate().rev() {
            parts[i].pos = p;
            link(
                &grid,
                self.stamp,
                table,
                parts,
                i as u32,
                grid.cell_unchecked(p),
            );
        }
        self.grid = grid;
        self.len = positions.len() as u32;
        Ok(())
    }

    fn len(&self) -> usize {
        self.len as usize
    }

    fn radius(&self) -> f32 {
        self.grid.radius()
    }

    fn position(&self, id: u32) -> Option<P> {
        (id < self.len).then(|| self.particles.as_ref()[id as usize].pos)
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, mut f: F) -> Result<(), Error> {
        if id >= self.len {
            return Err(Error::UnknownId { id });
        }
        let me = self.particles.as_ref()[id as usize];
        self.visit_stencil(me.pos, me.cell, id, &mut f);
        Ok(())
    }

    fn for_each_within<F: FnMut(u32, f32)>(&self, point: P, mut f: F) -> Result<(), Error> {
        let Some(c) = self.grid.query_cell(point, self.len as usize)? else {
            return Ok(());
        };
        self.visit_stencil(point, c, NONE, &mut f);
        Ok(())
    }

    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) {
        let parts = &self.particles.as_ref()[..self.len as usize];
        let r2 = self.grid.radius_sq();
        for (a, me) in parts.iter().enumerate() {
            let a = a as u32;
            self.for_each_in_bucket(me.cell, |j, q| {
                let d2 = me.pos.distance_squared(q.pos);
                if d2 < r2 && j > a && q.cell == me.cell {
                    f(a, j, d2);
                }
            });
            for &d in P::HALF_STENCIL {
                let nc = P::cell_add(me.cell, d);
                self.for_each_in_bucket(nc, |j, q| {
                    let d2 = me.pos.distance_squared(q.pos);
                    if d2 < r2 && q.cell == nc {
                        f(a, j, d2);
                    }
                });
            }
        }
    }
}

impl<P, T, S> Validate for LinkedHash<P, T, S>
where
    P: Point,
    T: Storage<Head>,
    S: Storage<LinkedParticle<P>>,
{
    fn validate(&self) -> Result<(), Corruption> {
        const W: &str = "LinkedHash";
        let n = self.len as usize;
        ensure(n <= self.capacity(), W, "len <= capacity")?;
        if n == 0 {
            return Ok(());
        }
        let table = self.table.as_ref();
        ensure(
            table.len() == self.grid.table_len(),
            W,
            "grid mask matches table",
        )?;
        let parts = &self.particles.as_ref()[..n];
        for (i, p) in parts.iter().enumerate() {
            let c = self.grid.cell(p.pos).map_err(|_| Corruption {
                structure: W,
                invariant: "positions in range",
            })?;
            ensure(c == p.cell, W, "stored cell matches position")?;
            let b = self.grid.bucket(c) as usize;
            if p.prev == NONE {
                ensure(
                    table[b].stamp == self.stamp && table[b].head as usize == i,
                    W,
                    "list head in table",
                )?;
            } else {
                ensure((p.prev as usize) < n, W, "prev < len")?;
                ensure(
                    parts[p.prev as usize].next as usize == i,
                    W,
                    "prev.next == self",
                )?;
            }
            if p.next != NONE {
                ensure((p.next as usize) < n, W, "next < len")?;
                ensure(
                    parts[p.next as usize].prev as usize == i,
                    W,
                    "next.prev == self",
                )?;
                ensure(
                    self.grid.bucket(parts[p.next as usize].cell) as usize == b,
                    W,
                    "list stays in its bucket",
                )?;
            }
        }
        // Every list is finite and the lists hold n particles in all.
        let mut total = 0usize;
        for h in table.iter().filter(|h| h.stamp == self.stamp) {
            let mut j = h.head;
            while j != NONE {
                total += 1;
                ensure(
                    total <= n && (j as usize) < n,
                    W,
                    "lists acyclic and in range",
                )?;
                j = parts[j as usize].next;
            }
        }
        ensure(total == n, W, "lists hold every particle once")
    }
}

impl<P, T, S> crate::inspect::Inspect for LinkedHash<P, T, S>
where
    P: Point,
    T: Storage<Head>,
    S: Storage<LinkedParticle<P>>,
{
    type Stats = crate::inspect::SearchStats;

    /// The buffers' bytes (the formula in [`crate::uniform`]'s table).
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.table.as_ref())
            + core::mem::size_of_val(self.particles.as_ref())
    }

    /// `O(T)`: counts the slots stamped by the last build.
    fn stats(&self) -> Self::Stats {
        let table = self.table.as_ref();
        crate::inspect::SearchStats {
            particles: self.len as usize,
            capacity: self.particles.as_ref().len(),
            radius: self.grid.radius(),
            table_slots: table.len(),
            occupied_slots: if self.len == 0 {
                0
            } else {
                table
                    .iter()
                    .filter(|s| s.stamp == self.stamp && s.head != NONE)
                    .count()
            },
        }
    }
}
