//! Strategy (b): preallocated buckets with a fixed number of slots each.

use core::marker::PhantomData;

use super::Grid;
use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::Point;
use crate::storage::Storage;
use crate::table::advance_stamp;
use crate::traits::NeighborSearch;

/// A bucket of at most `K` particle ids, timestamped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Bucket<const K: usize> {
    stamp: u32,
    len: u32,
    /// Scratch of the counting pass that makes a build all-or-nothing.
    count_stamp: u32,
    count: u32,
    ids: [u32; K],
}

impl<const K: usize> Default for Bucket<K> {
    /// The unused value, [`Bucket::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<const K: usize> Bucket<K> {
    /// A never-used bucket.
    pub const EMPTY: Self = Self {
        stamp: 0,
        len: 0,
        count_stamp: 0,
        count: 0,
        ids: [0; K],
    };
}

/// A particle of a [`BucketHash`]: its position and cell.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BucketParticle<P: Point> {
    pos: P,
    cell: P::Cell,
}

impl<P: Point> Default for BucketParticle<P> {
    /// The unused value, [`BucketParticle::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<P: Point> BucketParticle<P> {
    /// An unused entry.
    pub const EMPTY: Self = Self {
        pos: P::ZERO,
        cell: P::CELL_ZERO,
    };
}

/// Uniform spatial hash with preallocated buckets of `K` slots (strategy (b)).
///
/// Each table slot stores up to `K` particle ids inline, so a query reads a
/// bucket's ids from one place. A build that would put more than `K`
/// particles into one bucket fails with [`Error::BucketFull`] and leaves the
/// previous contents intact: a counting pass over scratch counters runs
/// before anything is written. Overflow is never silent.
///
/// # Memory
///
/// `T·(16 + 4K) + N·(size_of::<P>() + size_of::<P::Cell>())` bytes:
/// `T·(16 + 4K) + 24N` in 3D, `+ 16N` in 2D.
#[derive(Clone, Debug)]
pub struct BucketHash<P, T, S, const K: usize>
where
    P: Point,
    T: Storage<Bucket<K>>,
    S: Storage<BucketParticle<P>>,
{
    table: T,
    particles: S,
    grid: Grid<P>,
    len: u32,
    stamp: u32,
    count_stamp: u32,
    _p: PhantomData<P>,
}

impl<P, T, S, const K: usize> BucketHash<P, T, S, K>
where
    P: Point,
    T: Storage<Bucket<K>>,
    S: Storage<BucketParticle<P>>,
{
    /// An empty hash over `table` (power-of-two length) and `particles`
    /// (its length is the capacity). `K`, the slots of a bucket, must be
    /// positive (checked at compile time).
    ///
    /// Never fails and allocates nothing; `const`, so it can initialise a
    /// `static`. A table whose length is not a power of two in `1..=2³¹` is
    /// refused with [`Error::InvalidTableLength`] at the first build; use
    /// [`new_checked`](Self::new_checked) to refuse it here instead.
    ///
    /// Memory: `(16 + 4K)T + 24N` bytes in 3D, `(16 + 4K)T + 16N` in 2D. A
    /// build is `O(N)`; a particle whose bucket is full is refused with
    /// [`Error::BucketFull`] (the previous contents are kept). A neighbour
    /// query reads the 3ᵈ buckets around the particle.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{NeighborSearch, Vec2};
    /// use spatium::uniform::{Bucket, BucketHash, BucketParticle};
    ///
    /// let mut hash = BucketHash::<Vec2, _, _, 8>::new([Bucket::EMPTY; 32], [BucketParticle::EMPTY; 16]);
    /// hash.build(&[Vec2::ZERO, Vec2::new(0.6, 0.0)], 1.0)?;
    /// let mut near = 0;
    /// hash.for_each_within(Vec2::new(0.3, 0.0), |_, _| near += 1)?;
    /// assert_eq!(near, 2);
    /// # Ok::<(), spatium::Error>(())
    /// ```
    pub const fn new(table: T, particles: S) -> Self {
        const {
            assert!(
                K > 0 && K < u32::MAX as usize,
                "bucket size must be positive"
            )
        };
        Self {
            table,
            particles,
            grid: Grid::EMPTY,
            len: 0,
            stamp: 0,
            count_stamp: 0,
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
        self.particles.as_ref().len().min(u32::MAX as usize - 1)
    }

    /// The grid of the last build.
    pub fn grid(&self) -> &Grid<P> {
        &self.grid
    }

    /// Empties the hash in `O(1)`.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Fullest bucket's length; `O(T)`.
    pub fn max_bucket_len(&self) -> usize {
        let s = self.stamp;
        self.table
            .as_ref()
            .iter()
            .filter(|b| b.stamp == s)
            .map(|b| b.len as usize)
            .max()
            .unwrap_or(0)
    }

    /// Calls `f(j, d²)` for every particle `j != skip` within the radius of
    /// `p`, searching the stencil around cell `c`.
    fn visit_stencil(&self, p: P, c: P::Cell, skip: u32, f: &mut impl FnMut(u32, f32)) {
        let parts = self.particles.as_ref();
        let r2 = self.grid.radius_sq();
        for &d in P::STENCIL {
            let nc = P::cell_add(c, d);
            for &j in self.bucket_ids(nc) {
                let q = parts[j as usize];
                let d2 = p.distance_squared(q.pos);
                if d2 < r2 && j != skip && q.cell == nc {
                    f(j, d2);
                }
            }
        }
    }

    #[inline(always)]
    fn bucket_ids(&self, c: P::Cell) -> &[u32] {
        let b = &self.table.as_ref()[self.grid.bucket(c) as usize];
        if b.stamp == self.stamp {
            &b.ids[..b.len as usize]
        } else {
            &[]
        }
    }
}

impl<P, T, S, const K: usize> NeighborSearch<P> for BucketHash<P, T, S, K>
where
    P: Point,
    T: Storage<Bucket<K>>,
    S: Storage<BucketParticle<P>>,
{
    fn build(&mut self, positions: &[P], radius: f32) -> Result<(), Error> {
        let grid = Grid::fit(
            radius,
            positions,
            self.table.as_ref().len(),
            self.capacity(),
        )?;
        let table = self.table.as_mut();
        // Counting pass on scratch counters: refuse an overflow before writing.
        advance_stamp(&mut self.count_stamp, || {
            for b in table.iter_mut() {
                b.count_stamp = 0;
            }
        });
        let cs = self.count_stamp;
        for &p in positions {
            let b = grid.bucket(grid.cell_unchecked(p));
            let bucket = &mut table[b as usize];
            if bucket.count_stamp != cs {
                bucket.count_stamp = cs;
                bucket.count = 0;
            }
            bucket.count += 1;
            if bucket.count as usize > K {
                return Err(Error::BucketFull {
                    bucket: b,
                    capacity: K as u32,
                });
            }
        }
        // Commit.
        advance_stamp(&mut self.stamp, || {
            for b in table.iter_mut() {
                b.stamp = 0;
            }
        });
        let st = self.stamp;
        let parts = self.particles.as_mut();
        for (i, &p) in positions.iter().enumerate() {
            let c = grid.cell_unchecked(p);
            let bucket = &mut table[grid.bucket(c) as usize];
            if bucket.stamp != st {
                bucket.stamp = st;
                bucket.len = 0;
            }
            bucket.ids[bucket.len as usize] = i as u32;
            bucket.len += 1;
            parts[i] = BucketParticle { pos: p, cell: c };
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
        self.visit_stencil(point, c, u32::MAX, &mut f);
        Ok(())
    }

    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) {
        let parts = &self.particles.as_ref()[..self.len as usize];
        let r2 = self.grid.radius_sq();
        for (a, me) in parts.iter().enumerate() {
            let a = a as u32;
            for &j in self.bucket_ids(me.cell) {
                let q = parts[j as usize];
                let d2 = me.pos.distance_squared(q.pos);
                if d2 < r2 && j > a && q.cell == me.cell {
                    f(a, j, d2);
                }
            }
            for &d in P::HALF_STENCIL {
                let nc = P::cell_add(me.cell, d);
                for &j in self.bucket_ids(nc) {
                    let q = parts[j as usize];
                    let d2 = me.pos.distance_squared(q.pos);
                    if d2 < r2 && q.cell == nc {
                        f(a, j, d2);
                    }
                }
            }
        }
    }
}

impl<P, T, S, const K: usize> Validate for BucketHash<P, T, S, K>
where
    P: Point,
    T: Storage<Bucket<K>>,
    S: Storage<BucketParticle<P>>,
{
    fn validate(&self) -> Result<(), Corruption> {
        const W: &str = "BucketHash";
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
        let mut total = 0usize;
        for (b, bucket) in table.iter().enumerate() {
            if bucket.stamp != self.stamp {
                continue;
            }
            ensure(bucket.len as usize <= K, W, "bucket len <= K")?;
            total += bucket.len as usize;
            for &j in &bucket.ids[..bucket.len as usize] {
                ensure((j as usize) < n, W, "bucket id < len")?;
                ensure(
                    self.grid.bucket(parts[j as usize].cell) as usize == b,
                    W,
                    "id in its bucket",
                )?;
            }
        }
        ensure(total == n, W, "every particle in exactly one bucket slot")?;
        for (i, p) in parts.iter().enumerate() {
            let c = self.grid.cell(p.pos).map_err(|_| Corruption {
                structure: W,
                invariant: "positions in range",
            })?;
            ensure(c == p.cell, W, "stored cell matches position")?;
            let hits = self
                .bucket_ids(p.cell)
                .iter()
                .filter(|&&j| j as usize == i)
                .count();
            ensure(hits == 1, W, "particle listed once in its bucket")?;
        }
        Ok(())
    }
}

impl<P, T, S, const K: usize> crate::inspect::Inspect for BucketHash<P, T, S, K>
where
    P: Point,
    T: Storage<Bucket<K>>,
    S: Storage<BucketParticle<P>>,
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
                    .filter(|s| s.stamp == self.stamp && s.len > 0)
                    .count()
            },
        }
    }
}
