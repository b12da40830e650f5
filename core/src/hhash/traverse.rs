//! Pair traversal: every pair of stored objects, each object querying the
//! classes at or above its own.

use crate::geom::BoundingBox;
use crate::storage::Storage;
use crate::table::NONE;

use super::{Candidates, ClassHash, HashBucket, HashEntry, HashSlot, Scheme};

impl<S, B, Sl, Bk, En, Pt> ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    /// Calls `f(a, b)` for pairs of stored objects, each object querying
    /// the classes at or above its own (pairs within one class are found
    /// from the lower id):
    ///
    /// * [`Candidates::Exact`]: every overlapping pair once (what
    ///   [`BroadPhase::for_each_overlap`](crate::BroadPhase::for_each_overlap)
    ///   reports);
    /// * [`Candidates::Unique`]: every unordered pair at most once, filtered
    ///   by the integer cell tests alone: a superset of the exact pairs;
    /// * [`Candidates::Raw`]: every (object, entry) retrieval of the
    ///   enumeration, duplicates and hash collisions included.
    ///
    /// Rehashes a stale table first. Cost: one candidate query per stored
    /// object, so `O(C + Σ cells visited + entries read)`; a query whose walk
    /// would exceed the [`SCAN_FACTOR`](super::SCAN_FACTOR) bound scans the
    /// `C` slots instead, so the worst case is `O(SCAN_FACTOR · C · (C + N))`.
    ///
    /// # Example
    ///
    /// ```
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
    /// let cell = |x: f32, y: f32| Aabb2::new(Vec2::new(x, y), Vec2::new(x + 0.5, y + 0.5)).unwrap();
    /// h.insert(0, cell(0.1, 0.1)).unwrap();
    /// h.insert(1, cell(0.4, 0.4)).unwrap(); // overlaps 0
    /// h.insert(2, cell(0.95, 0.0)).unwrap(); // shares a cell with 0, apart
    /// let (mut exact, mut unique) = (0, 0);
    /// h.for_each_candidate_pair(Candidates::Exact, |_, _| exact += 1);
    /// h.for_each_candidate_pair(Candidates::Unique, |_, _| unique += 1);
    /// assert_eq!(exact, 1);
    /// assert!(unique >= exact);
    /// ```
    pub fn for_each_candidate_pair<F: FnMut(u32, u32)>(&mut self, mode: Candidates, mut f: F) {
        self.refresh();
        self.pairs_of_range(0, self.slots.as_ref().len(), mode, &mut f);
    }

    /// The pairs of [`for_each_candidate_pair`](Self::for_each_candidate_pair)
    /// found by the objects of ids `lo..hi`, in the same order, on a table
    /// that is up to date.
    #[inline(always)]
    pub(super) fn pairs_of_range<F: FnMut(u32, u32)>(
        &self,
        lo: usize,
        hi: usize,
        mode: Candidates,
        f: &mut F,
    ) {
        let slots = self.slots.as_ref();
        let hi = hi.min(slots.len());
        let lo = lo.min(hi);
        for (k, sa) in slots[lo..hi].iter().enumerate() {
            if sa.level == NONE {
                continue;
            }
            let a = (lo + k) as u32;
            let la = sa.level;
            // Pairs with a larger class are found here; equal classes by id.
            self.candidates_in(
                &sa.aabb,
                la,
                mode,
                |b, lb| lb > la || b > a,
                |b| {
                    if mode != Candidates::Raw || b != a {
                        f(a, b)
                    }
                },
            );
        }
    }
}
