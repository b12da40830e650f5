//! Structural checks ([`Validate`]): slots, counts, bucket lists and the
//! `hasChildren` flags.

use crate::error::{Corruption, Validate, ensure};
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;
use crate::table::NONE;

use super::config::{advance, shr};
use super::{ClassHash, FLAG, HashBucket, HashEntry, HashSlot, PARTICLE, STAMP_MASK, Scheme};

impl<S, B, Sl, Bk, En, Pt> ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    pub(super) fn check_cell(
        &self,
        li: u32,
        cell: &[i32; 3],
        tagged: u32,
    ) -> Result<(), Corruption> {
        let w = S::NAME;
        let table = self.table.as_ref();
        let b = self.bucket_of(self.key_of(li, cell));
        ensure(
            table[b].tag & STAMP_MASK == self.stamp,
            w,
            "element's bucket is current",
        )?;
        ensure(
            self.entries(b).any(|id| id == tagged),
            w,
            "element listed in its cell's bucket",
        )?;
        if S::HIERARCHICAL {
            let l = self.order[li as usize] as u32;
            for i in 0..li {
                let l2 = self.order[i as usize] as u32;
                let up = self.bucket_of(self.key_of(i, &shr(cell, l2 - l)));
                ensure(
                    table[up].tag & STAMP_MASK == self.stamp && table[up].tag & FLAG != 0,
                    w,
                    "ancestor buckets flagged hasChildren",
                )?;
            }
        }
        Ok(())
    }
}

impl<S, B, Sl, Bk, En, Pt> Validate for ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    fn validate(&self) -> Result<(), Corruption> {
        let w = S::NAME;
        let slots = self.slots.as_ref();
        let mut objects = 0u32;
        let mut need = 0u64;
        for s in slots {
            match s.get() {
                Some(b) => {
                    objects += 1;
                    ensure(b.check().is_ok(), w, "stored box valid")?;
                    ensure(s.level == self.config.class_of(&b), w, "slot class")?;
                    ensure(
                        s.lo == self.config.base_cell(b.min()),
                        w,
                        "slot's lower cell",
                    )?;
                    let e = self.config.entries_of(&b);
                    ensure(e.is_ok(), w, "stored box in range")?;
                    need += e.unwrap_or(0);
                }
                None => ensure(s.aabb.min().coord(0).is_nan(), w, "empty slot's box is NaN")?,
            }
        }
        ensure(objects == self.objects, w, "object count")?;
        ensure(need == self.object_entries, w, "object entry count")?;
        ensure(
            need + self.n_particles as u64 <= self.pool.as_ref().len() as u64,
            w,
            "stored elements fit the pool",
        )?;
        ensure(
            self.n_particles as usize <= self.particles.as_ref().len(),
            w,
            "particles fit",
        )?;
        ensure(
            self.used as usize <= self.pool.as_ref().len(),
            w,
            "pool use",
        )?;
        ensure(self.stamp <= STAMP_MASK, w, "stamp range")?;
        if self.stamp == 0 {
            // Never used: nothing may be stored.
            return ensure(
                self.objects == 0 && self.n_particles == 0 && self.used == 0,
                w,
                "unused structure is empty",
            );
        }
        ensure(
            self.n_levels >= 1 && self.order[self.n_levels as usize - 1] == 0,
            w,
            "level 0 is the smallest class",
        )?;
        if self.stale {
            return Ok(());
        }
        ensure(
            self.used as u64 == need + self.n_particles as u64,
            w,
            "fresh table holds every entry",
        )?;
        // Every current bucket's list: in the pool, acyclic, disjoint.
        let mut reached = 0u64;
        for bucket in self.table.as_ref() {
            let t = bucket.tag & STAMP_MASK;
            ensure(t <= self.stamp, w, "bucket stamp not in the future")?;
            if t != self.stamp {
                continue;
            }
            let mut e = bucket.head;
            let mut steps = 0u32;
            let mut prev = NONE;
            while e != NONE {
                ensure(e < self.used, w, "entry index in use")?;
                ensure(steps < self.used, w, "bucket list acyclic")?;
                let entry = self.pool.as_ref()[e as usize];
                if entry.id & PARTICLE != 0 {
                    ensure(
                        entry.id & !PARTICLE < self.n_particles,
                        w,
                        "particle entry is stored",
                    )?;
                } else {
                    ensure(
                        slots
                            .get(entry.id as usize)
                            .is_some_and(|s| s.level != NONE),
                        w,
                        "object entry is stored",
                    )?;
                }
                if entry.id != prev && entry.id & PARTICLE == 0 {
                    // An object's entries in one bucket are adjacent: no
                    // earlier run of the same id in this list.
                    let mut f = bucket.head;
                    while f != e {
                        let earlier = self.pool.as_ref()[f as usize];
                        ensure(
                            earlier.id != entry.id,
                            w,
                            "object entries adjacent in a bucket",
                        )?;
                        f = earlier.next;
                    }
                }
                prev = entry.id;
                e = entry.next;
                steps += 1;
            }
            reached += steps as u64;
        }
        ensure(reached == self.used as u64, w, "every entry in one bucket")?;
        // Every element is in the bucket of each of its cells, and (in
        // hierarchical hashing) every bucket above it is flagged.
        for (id, s) in slots.iter().enumerate() {
            if s.level == NONE {
                continue;
            }
            let l = s.level;
            let li = self.level_index(l);
            ensure(li.is_some(), w, "object class in use")?;
            ensure(
                self.occupied & (1 << l) != 0,
                w,
                "object's class marked occupied",
            )?;
            let li = li.unwrap_or(0);
            let (lo, hi) = self.config.query_range(&s.aabb);
            let (lo, hi) = (shr(&lo, l), shr(&hi, l));
            let mut c = lo;
            loop {
                self.check_cell(li, &c, id as u32)?;
                if !advance::<B::Point>(&mut c, &lo, &hi) {
                    break;
                }
            }
        }
        ensure(
            self.n_particles == 0 || self.occupied & 1 != 0,
            w,
            "particles' class marked occupied",
        )?;
        for i in 0..self.n_particles {
            let c = self.config.base_cell(self.particles.as_ref()[i as usize]);
            self.check_cell(self.n_levels - 1, &c, i | PARTICLE)?;
        }
        Ok(())
    }
}
