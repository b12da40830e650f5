//! [`PairCache`]: any [`NeighborSearch`] with its pairs enumerated once per
//! build into a fixed buffer, so that algorithms making several passes over
//! the pairs (SPH makes three per force evaluation: density, normals,
//! forces) pay for the search once.

use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::Point;
use crate::storage::Storage;
use crate::traits::NeighborSearch;

/// One neighbour pair: the two particle ids and their squared distance.
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NeighborPair {
    /// First particle.
    pub i: u32,
    /// Second particle.
    pub j: u32,
    /// Squared distance, as the inner search computed it.
    pub d2: f32,
}

impl Default for NeighborPair {
    /// The unused value, [`NeighborPair::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl NeighborPair {
    /// An unused slot.
    pub const EMPTY: Self = Self {
        i: 0,
        j: 0,
        d2: 0.0,
    };
}

/// A neighbour search whose [`for_each_pair`](NeighborSearch::for_each_pair)
/// replays the pairs recorded at the last [`build`](NeighborSearch::build).
///
/// `build` builds the inner search and records its pairs, in its order, in
/// `pairs`. If they do not fit, the cache stays empty and `for_each_pair`
/// asks the inner search each time: the answers are the same either way, only
/// slower ([`is_cached`](Self::is_cached) tells which). Every other query goes
/// to the inner search.
///
/// Memory: the inner search's, plus 12 bytes per slot of `pairs` (about
/// `N·k/2` pairs for `N` particles with `k` neighbours each).
#[derive(Debug)]
pub struct PairCache<N, S> {
    inner: N,
    pairs: S,
    len: usize,
    cached: bool,
    needed: usize,
}

impl<N, S: Storage<NeighborPair>> PairCache<N, S> {
    /// `inner` with a pair buffer of `pairs.len()` slots (its contents are
    /// overwritten by each build).
    ///
    /// Never fails and allocates nothing; `const`. Memory: the inner search's
    /// plus `12 · pairs.len()` bytes. A build costs the inner build plus one
    /// `for_each_pair` of the inner search; replaying the pairs afterwards is
    /// `O(pairs)` sequential reads.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{BruteForceNeighbors, NeighborPair, NeighborSearch, PairCache, Vec3};
    ///
    /// let inner = BruteForceNeighbors::new([Vec3::ZERO; 8]);
    /// let mut cache = PairCache::new(inner, [NeighborPair::EMPTY; 16]);
    /// cache.build(&[Vec3::ZERO, Vec3::new(0.5, 0.0, 0.0)], 1.0)?;
    /// assert!(cache.is_cached());
    /// assert_eq!(cache.pairs().len(), 1);
    /// # Ok::<(), spatium::Error>(())
    /// ```
    pub const fn new(inner: N, pairs: S) -> Self {
        Self {
            inner,
            pairs,
            len: 0,
            cached: false,
            needed: 0,
        }
    }

    /// The inner search.
    pub fn inner(&self) -> &N {
        &self.inner
    }

    /// The inner search, mutably. The recorded pairs are dropped, since a
    /// change to the inner search could make them stale: until the next
    /// [`build`](NeighborSearch::build), `for_each_pair` asks the inner
    /// search.
    pub fn inner_mut(&mut self) -> &mut N {
        self.len = 0;
        self.cached = false;
        &mut self.inner
    }

    /// The inner search and the pair buffer, back.
    pub fn into_inner(self) -> (N, S) {
        (self.inner, self.pairs)
    }

    /// `true` if the last build's pairs fit in the buffer.
    pub fn is_cached(&self) -> bool {
        self.cached
    }

    /// Pairs found by the last build (recorded or not).
    pub fn pair_count(&self) -> usize {
        self.needed
    }

    /// Pairs the buffer holds.
    pub fn capacity(&self) -> usize {
        self.pairs.as_ref().len()
    }

    /// The recorded pairs (empty if they did not fit).
    pub fn pairs(&self) -> &[NeighborPair] {
        &self.pairs.as_ref()[..self.len]
    }
}

impl<P: Point, N: NeighborSearch<P>, S: Storage<NeighborPair>> NeighborSearch<P>
    for PairCache<N, S>
{
    fn build(&mut self, positions: &[P], radius: f32) -> Result<(), Error> {
        self.inner.build(positions, radius)?;
        let buf = self.pairs.as_mut();
        let cap = buf.len();
        let mut n = 0usize;
        self.inner.for_each_pair(|i, j, d2| {
            if n < cap {
                buf[n] = NeighborPair { i, j, d2 };
            }
            n += 1;
        });
        self.needed = n;
        self.cached = n <= cap;
        self.len = if self.cached { n } else { 0 };
        Ok(())
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn radius(&self) -> f32 {
        self.inner.radius()
    }

    fn position(&self, id: u32) -> Option<P> {
        self.inner.position(id)
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, f: F) -> Result<(), Error> {
        self.inner.for_each_neighbor(id, f)
    }

    fn for_each_within<F: FnMut(u32, f32)>(&self, point: P, f: F) -> Result<(), Error> {
        self.inner.for_each_within(point, f)
    }

    #[inline]
    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) {
        if self.cached {
            for p in &self.pairs.as_ref()[..self.len] {
                f(p.i, p.j, p.d2);
            }
        } else {
            self.inner.for_each_pair(f);
        }
    }
}

impl<N: Validate, S: Storage<NeighborPair>> Validate for PairCache<N, S> {
    fn validate(&self) -> Result<(), Corruption> {
        const W: &str = "PairCache";
        self.inner.validate()?;
        ensure(
            self.len <= self.pairs.as_ref().len(),
            W,
            "len within buffer",
        )?;
        ensure(
            if self.cached {
                self.len == self.needed
            } else {
                self.len == 0
            },
            W,
            "cached pairs are all the pairs",
        )
    }
}

/// Occupancy of a [`PairCache`] and of the search it wraps.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PairCacheStats<T> {
    /// Pairs recorded by the last build (0 if they did not fit).
    pub cached_pairs: usize,
    /// Pairs the buffer holds.
    pub capacity: usize,
    /// The wrapped search's figures.
    pub inner: T,
}

impl<N: crate::inspect::Inspect, S: Storage<NeighborPair>> crate::inspect::Inspect
    for PairCache<N, S>
{
    type Stats = PairCacheStats<N::Stats>;

    /// `12Q` bytes of pairs plus the wrapped search's buffers.
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.pairs.as_ref()) + self.inner.memory_bytes()
    }

    fn stats(&self) -> Self::Stats {
        PairCacheStats {
            cached_pairs: self.len,
            capacity: self.pairs.as_ref().len(),
            inner: self.inner.stats(),
        }
    }
}
