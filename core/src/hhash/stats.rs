//! Occupancy of the table ([`HashStats`]).

use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;

use super::config::shr;
use super::{ClassHash, HashBucket, HashEntry, HashSlot, PARTICLE, STAMP_MASK, Scheme};

/// Occupancy of the table, from [`ClassHash::stats`].
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
    /// Occupancy of the table.
    pub fn stats(&mut self) -> HashStats {
        self.refresh();
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

    /// Level and (lowest) cell of an element, to tell cells apart.
    pub(super) fn home(&self, tagged: u32) -> [i32; 4] {
        if tagged & PARTICLE != 0 {
            let c = self
                .config
                .base_cell(self.particles.as_ref()[(tagged & !PARTICLE) as usize]);
            [0, c[0], c[1], c[2]]
        } else {
            let s = &self.slots.as_ref()[tagged as usize];
            let c = shr(&s.lo, s.level);
            [s.level as i32 + 1, c[0], c[1], c[2]]
        }
    }
}
