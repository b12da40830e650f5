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
    /// Calls `f(a, b)` for pairs of stored objects: with `Exact`, every
    /// overlapping pair once; with `Raw`, every (object, entry) retrieval of
    /// the pair enumeration (each object queries the classes at or above its
    /// own; duplicates and collisions included).
    pub fn for_each_candidate_pair<F: FnMut(u32, u32)>(&mut self, mode: Candidates, mut f: F) {
        self.refresh();
        let slots = self.slots.as_ref();
        for (a, sa) in slots.iter().enumerate() {
            if sa.level == NONE {
                continue;
            }
            let a = a as u32;
            let la = sa.level;
            // Pairs with a larger class are found here; equal classes by id.
            self.candidates_in(
                &sa.aabb,
                la,
                mode,
                |b, lb| lb > la || b > a,
                |b| {
                    if mode == Candidates::Exact || b != a {
                        f(a, b)
                    }
                },
            );
        }
    }
}
