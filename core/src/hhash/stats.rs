//! Memory and occupancy ([`Inspect`]): the memory formula of the
//! [module](super) docs and the table's figures ([`HashStats`]).
//!
//! [`Inspect::stats`] reports the table as it stands, from `&self`. After an
//! update, a removal or a configuration change the table is stale (it is
//! rehashed by the next `&mut` query): the counts of objects, particles and
//! classes are current, the table figures (`entries`, `buckets_*`) are
//! those of the last rehash. [`ClassHash::stats_refreshed`] rehashes a stale
//! table first.

use crate::geom::{BoundingBox, Point};
use crate::inspect::Inspect;
use crate::storage::Storage;
use crate::table::NONE;

use super::config::shr;
use super::{ClassHash, HashBucket, HashEntry, HashSlot, PARTICLE, STAMP_MASK, Scheme};

/// Occupancy of the table, from [`Inspect::stats`] (the table as it stands)
/// or [`ClassHash::stats_refreshed`] (after a rehash of a stale table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HashStats {
    /// Objects stored.
    pub objects: u32,
    /// Particles stored.
    pub particles: u32,
    /// Pool entries in use.
    pub entries: u32,
    /// Buckets written by the current step (entries or flags).
    pub buckets_used: u32,
    /// Buckets holding elements whose lowest cells differ: an estimate of
    /// hash collisions between cells (an object's lowest cell stands for
    /// all of its cells, so neighbouring objects meeting in one cell count
    /// as shared, and an object's own cells sharing a bucket do not).
    pub buckets_shared: u32,
    /// Objects stored in more cells than their corners (boxes larger than
    /// the largest class).
    pub subdivided: u32,
    /// Objects per class level.
    pub per_level: [u32; 32],
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
    /// [`Inspect::stats`] of the current contents: rehashes a stale table
    /// first ([`refresh`](Self::refresh)), then reports it.
    ///
    /// Cost: the rehash if stale (`O(C + E + N)` and the key sums of every
    /// stored cell), then `O(C + T + E)`.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::hhash::*;
    /// use spatium::{Aabb3, BroadPhase, Inspect, Vec3};
    ///
    /// let mut h = HierarchicalHash::<Aabb3, _, _, _, _>::new(
    ///     [HashSlot::EMPTY; 4],
    ///     [HashBucket::EMPTY; 64],
    ///     [HashEntry::EMPTY; 32],
    ///     [Vec3::ZERO; 0],
    ///     HashConfig::DEFAULT,
    /// );
    /// let b = Aabb3::new(Vec3::ZERO, Vec3::new(0.5, 0.5, 0.5)).unwrap();
    /// h.insert(0, b).unwrap();
    /// h.insert(1, b).unwrap();
    /// h.remove(1).unwrap(); // the table is stale until the next rehash
    /// assert_eq!(h.stats().entries, 2); // as it stands
    /// assert_eq!(h.stats_refreshed().entries, 1);
    /// assert_eq!(h.stats().entries, 1);
    /// ```
    pub fn stats_refreshed(&mut self) -> HashStats {
        self.refresh();
        Inspect::stats(self)
    }

    /// Level and (lowest) cell of an element, to tell cells apart.
    pub(super) fn home(&self, tagged: u32) -> [i32; 4] {
        if tagged & PARTICLE != 0 {
            let c = self
                .config
                .base_cell(self.particles.as_ref()[(tagged & !PARTICLE) as usize]);
            [0, c[0], c[1], c[2]]
        } else {
            let s = &self.slots.as_ref()[tagged as usize];
            if s.level == NONE {
                // Removed since the last rehash (a stale table).
                return [-1, 0, 0, 0];
            }
            let c = shr(&s.lo, s.level);
            [s.level as i32 + 1, c[0], c[1], c[2]]
        }
    }
}

impl<S, B, Sl, Bk, En, Pt> Inspect for ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    type Stats = HashStats;

    /// Bytes of the four buffers: `40C + 8T + 8E + 12N` in 3D,
    /// `32C + 8T + 8E + 8N` in 2D (the formula of the [module](super)
    /// docs). `O(1)`.
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.slots.as_ref())
            + core::mem::size_of_val(self.table.as_ref())
            + core::mem::size_of_val(self.pool.as_ref())
            + core::mem::size_of_val(self.particles.as_ref())
    }

    /// The table as it stands: on a stale table (see
    /// [`ClassHash::is_stale`]) the counts of objects, particles and classes
    /// are current and the table figures (`entries`, `buckets_*`) are those
    /// of the last rehash; [`ClassHash::stats_refreshed`] rehashes first.
    /// `O(C + T + E)`, no mutation.
    fn stats(&self) -> HashStats {
        let mut s = HashStats {
            objects: self.objects,
            particles: self.n_particles,
            entries: self.used,
            ..HashStats::default()
        };
        for slot in self.slots.as_ref() {
            if let Some(b) = slot.get() {
                s.per_level[slot.level as usize] += 1;
                if self.config.entries_of(&b).unwrap_or(0) > (1 << B::Point::DIM) {
                    s.subdivided += 1;
                }
            }
        }
        for (b, bucket) in self.table.as_ref().iter().enumerate() {
            if self.stamp == 0 || bucket.tag & STAMP_MASK != self.stamp {
                continue;
            }
            s.buckets_used += 1;
            let mut first: Option<[i32; 4]> = None;
            let mut shared = false;
            for id in self.entries(b) {
                let c = self.home(id);
                match first {
                    None => first = Some(c),
                    Some(f) => shared |= f != c,
                }
            }
            s.buckets_shared += shared as u32;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use crate::error::Validate;
    use crate::geom::{Aabb3, Vec3};
    use crate::hhash::{HashBucket, HashConfig, HashEntry, HashSlot, HierarchicalHash};
    use crate::inspect::Inspect;
    use crate::traits::{BroadPhase, NeighborSearch};

    /// Memory is the module's formula; a stale table is reported as it
    /// stands (removed and moved objects included, no panic) and
    /// `stats_refreshed` reports the rehashed one.
    #[test]
    fn stats_of_stale_and_refreshed_tables() {
        let mut h = HierarchicalHash::<Aabb3, _, _, _, _>::new(
            [HashSlot::EMPTY; 8],
            [HashBucket::EMPTY; 64],
            [HashEntry::EMPTY; 64],
            [Vec3::ZERO; 4],
            HashConfig::DEFAULT.with_levels(0b110),
        );
        assert_eq!(h.memory_bytes(), 40 * 8 + 8 * 64 + 8 * 64 + 12 * 4);
        assert_eq!(h.stats().entries, 0);
        for id in 0..4 {
            let lo = Vec3::new(id as f32 * 1.5, 0.0, 0.0);
            h.insert(id, Aabb3::new(lo, lo + Vec3::new(0.5, 0.5, 0.5)).unwrap())
                .unwrap();
        }
        h.build(&[Vec3::new(0.2, 0.2, 0.2)], 0.5).unwrap();
        let fresh = h.stats();
        assert_eq!((fresh.objects, fresh.particles), (4, 1));
        assert!(!h.is_stale());
        h.remove(3).unwrap();
        let big = Aabb3::new(Vec3::ZERO, Vec3::new(3.0, 3.0, 3.0)).unwrap();
        h.update(0, big).unwrap();
        assert!(h.is_stale());
        let stale = h.stats();
        assert_eq!(stale.objects, 3);
        assert_eq!(stale.entries, fresh.entries);
        let refreshed = h.stats_refreshed();
        assert!(!h.is_stale());
        assert_eq!(refreshed, h.stats());
        assert_eq!(refreshed.objects, 3);
        assert_eq!(refreshed.per_level.iter().sum::<u32>(), 3);
        h.validate().unwrap();
    }
}
