//! Parallel forms of hierarchical and multilevel hashing (see
//! [`crate::exec`]): the pair enumerations run as tasks over ranges of
//! object ids or particle indices, each with its own sink; the particle
//! build checks and copies the positions in tasks.
//!
//! # What stays serial: the rehash
//!
//! Storing an element prepends an entry to its bucket's list (the bucket's
//! head is the entry's `next`) and, in hierarchical hashing, flags the
//! buckets of every class above it: each write lands on a bucket decided by
//! a hash, anywhere in the table, and the lists must be linked in the
//! serial order to give the same table. Safe Rust can only hand tasks
//! disjoint ranges of the table and of the pool, and no split of either
//! keeps an element's writes inside one task's ranges (a bucket-range
//! split needs each task to see every entry; an entry-range split needs
//! every bucket), without memory beyond the four buffers. The rehash
//! therefore runs on the calling thread (the measured share is in the
//! thread-scaling report), and every query after it runs in parallel.

use crate::error::Error;
use crate::exec::{Executor, Parts, task_count};
use crate::geom::BoundingBox;
use crate::storage::Storage;

use super::{Candidates, ClassHash, HashBucket, HashEntry, HashSlot, Scheme};

/// Object ids per task of the parallel pair enumeration.
pub(super) const OBJECT_GRAIN: usize = 1024;

impl<S, B, Sl, Bk, En, Pt> ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    /// How many sinks
    /// [`par_for_each_candidate_pair`](Self::par_for_each_candidate_pair)
    /// (and [`BroadPhase::par_for_each_overlap`](crate::BroadPhase::par_for_each_overlap))
    /// fills: one per 1024 object ids of the slot buffer (at least one);
    /// fixed by the buffer's length.
    pub fn candidate_tasks(&self) -> usize {
        task_count(self.slots.as_ref().len(), OBJECT_GRAIN)
    }

    /// [`for_each_candidate_pair`](Self::for_each_candidate_pair) on
    /// `exec`: a stale table is rehashed first (on the calling thread, see
    /// [Parallel forms](crate::hhash#parallel-forms)), then task `t` runs the queries of the
    /// objects of ids `1024·t .. 1024·(t+1)` and calls
    /// `f(&mut sinks[t], a, b)`. The sinks, concatenated in order, hold the
    /// serial pairs in the serial order, for every executor.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] with fewer than
    /// [`candidate_tasks`](Self::candidate_tasks) sinks (nothing is called,
    /// nothing is rehashed).
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::exec::Serial;
    /// use spatium::hhash::*;
    /// use spatium::{Aabb2, BroadPhase, Candidates, Vec2};
    ///
    /// let mut h = MultilevelHash::<Aabb2, _, _, _, _>::new(
    ///     [HashSlot::EMPTY; 4],
    ///     [HashBucket::EMPTY; 64],
    ///     [HashEntry::EMPTY; 16],
    ///     [Vec2::ZERO; 0],
    ///     HashConfig::DEFAULT,
    /// );
    /// h.insert(0, Aabb2::new(Vec2::new(0.1, 0.1), Vec2::new(0.6, 0.6)).unwrap()).unwrap();
    /// h.insert(1, Aabb2::new(Vec2::new(0.4, 0.4), Vec2::new(0.9, 0.9)).unwrap()).unwrap();
    /// let mut sinks = vec![Vec::new(); h.candidate_tasks()];
    /// h.par_for_each_candidate_pair(&Serial, Candidates::Exact, &mut sinks, |s: &mut Vec<(u32, u32)>, a, b| {
    ///     s.push((a, b))
    /// })
    /// .unwrap();
    /// assert_eq!(sinks.concat(), vec![(0, 1)]);
    /// ```
    pub fn par_for_each_candidate_pair<E, T, F>(
        &mut self,
        exec: &E,
        mode: Candidates,
        sinks: &mut [T],
        f: F,
    ) -> Result<(), Error>
    where
        E: Executor,
        T: Send,
        F: Fn(&mut T, u32, u32) + Sync,
        Self: Sync,
    {
        let tasks = self.candidate_tasks();
        let available = sinks.len();
        let sinks = sinks.get_mut(..tasks).ok_or(Error::BufferTooSmall {
            needed: tasks,
            available,
        })?;
        self.refresh();
        let this = &*self;
        exec.run(tasks, Parts::chunks(sinks, 1), |t, mut part| {
            let Some(sink) = part.slice().first_mut() else {
                return;
            };
            let lo = t.saturating_mul(OBJECT_GRAIN);
            this.pairs_of_range(lo, lo.saturating_add(OBJECT_GRAIN), mode, &mut |a, b| {
                f(sink, a, b)
            });
        });
        Ok(())
    }
}
