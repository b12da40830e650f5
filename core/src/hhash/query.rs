//! Box queries: candidates of a box (raw or exact), the single-point query,
//! and the inspection of a query's walk (visited cells, bucket contents,
//! keys, work counts).

use crate::error::Error;
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;
use crate::table::NONE;

use super::config::shr;
use super::{
    Candidates, ClassHash, FLAG, HashBucket, HashEntry, HashSlot, INSPECT_LIMIT, PARTICLE,
    STAMP_MASK, Scheme,
};

/// One cell a query visited, for inspection (Fig. 3's retrieval paths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CellVisit {
    /// Class level of the cell.
    pub level: u32,
    /// Integer cell coordinates at that level (`[x, y, 0]` in 2D).
    pub cell: [i32; 3],
    /// The cell's key before reduction to the table length.
    pub key: u32,
    /// The bucket's `hasChildren` flag (always `false` in multilevel
    /// hashing).
    pub has_children: bool,
}

/// Work counted by [`ClassHash::query_counts`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QueryCounts {
    /// Cells enumerated: keys computed and buckets probed, whether the
    /// bucket held data of the current step or not (multilevel hashing:
    /// every cell of the query in every class holding entries;
    /// hierarchical hashing: the cells below flagged buckets only).
    pub keys: u64,
    /// Cells whose bucket was read (buckets with the current stamp).
    pub cells: u64,
    /// Object entries retrieved ([`Candidates::Raw`]).
    pub raw: u64,
    /// Raw entries whose object is not stored in the visited cell (hash
    /// collisions with other cells or classes).
    pub collisions: u64,
    /// Objects that overlap the query ([`Candidates::Exact`]).
    pub exact: u64,
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
    /// `true` if the object in `slot` (of level `l`), overlapping a query
    /// whose lower corner is in base cell `qlo`, is reported from cell
    /// `cell`: the cell of its class holding the lowest corner of the
    /// overlap. That corner is `max(q.min, b.min)`, and the cell function is
    /// monotone, so its cell is the maximum of the two corners' cells.
    #[inline(always)]
    pub(super) fn canonical(qlo: &[i32; 3], slot: &HashSlot<B>, l: u32, cell: &[i32; 3]) -> bool {
        let mut ok = true;
        for k in 0..B::Point::DIM {
            ok &= (qlo[k].max(slot.lo[k]) >> l) == cell[k];
        }
        ok
    }

    /// `true` if object `b` of level `lb` is stored in cell `cell` of level
    /// `l`.
    pub(super) fn stored_in(&self, b: &B, lb: u32, l: u32, cell: &[i32; 3]) -> bool {
        if lb != l {
            return false;
        }
        let (lo, hi) = self.config.query_range(b);
        let (lo, hi) = (shr(&lo, l), shr(&hi, l));
        (0..B::Point::DIM).all(|k| lo[k] <= cell[k] && cell[k] <= hi[k])
    }

    /// Object candidates of `q` from cells of level at least `stop`; except
    /// in raw mode, `keep(id, level)` further filters (pair enumeration).
    #[inline(always)]
    pub(super) fn candidates_in<F: FnMut(u32)>(
        &self,
        q: &B,
        stop: u32,
        mode: Candidates,
        mut keep: impl FnMut(u32, u32) -> bool,
        mut f: F,
    ) {
        let (lo, hi) = self.config.query_range(q);
        let slots = self.slots.as_ref();
        if self.too_many_cells(&lo, &hi, stop) {
            // Scanning the slots is cheaper than walking the cells.
            for (id, s) in slots.iter().enumerate() {
                let id = id as u32;
                if s.level == NONE || s.level < stop {
                    continue;
                }
                let hit = match mode {
                    Candidates::Raw => true,
                    Candidates::Unique => keep(id, s.level),
                    Candidates::Exact => keep(id, s.level) && s.aabb.overlaps(q),
                };
                if hit {
                    f(id);
                }
            }
            return;
        }
        self.traverse(&lo, &hi, stop, |li, cell, _key, b| {
            let l = self.order[li as usize] as u32;
            self.scan_bucket(b, l, cell, (q, &lo), mode, &mut keep, &mut f);
        });
    }

    /// The object candidates of query `q` (lower base cell `q.1`) in
    /// bucket `b`, visited as cell `cell` of level `l` (see
    /// [`candidates_in`](Self::candidates_in)). Out of line: the walk's
    /// loop and this one keep their own registers.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn scan_bucket<F: FnMut(u32), K: FnMut(u32, u32) -> bool>(
        &self,
        b: usize,
        l: u32,
        cell: &[i32; 3],
        q: (&B, &[i32; 3]),
        mode: Candidates,
        keep: &mut K,
        f: &mut F,
    ) {
        let (q, lo) = q;
        let slots = self.slots.as_ref();
        let mut prev = NONE;
        for id in self.entries(b) {
            if id & PARTICLE != 0 {
                continue;
            }
            match mode {
                Candidates::Raw => f(id),
                // An object whose cells share this bucket has adjacent
                // entries here (it pushed them in one go): one is enough.
                Candidates::Unique | Candidates::Exact if id == prev => {}
                Candidates::Unique | Candidates::Exact => {
                    prev = id;
                    let s = &slots[id as usize];
                    // One branch per entry: the tests on the slot are
                    // combined without short-circuits.
                    let fits = (s.level == l)
                        & (mode == Candidates::Unique || s.aabb.overlaps(q))
                        & Self::canonical(lo, s, l, cell);
                    if fits && keep(id, s.level) {
                        f(id);
                    }
                }
            }
        }
    }

    /// Calls `f(id)` for the object candidates of the box `q`: with
    /// [`Candidates::Raw`] every object entry of the visited buckets (an id
    /// may come several times), with [`Candidates::Unique`] each id at most
    /// once by the integer canonical-cell test (a superset of the
    /// overlapping objects), with [`Candidates::Exact`] exactly the objects
    /// whose boxes overlap `q`, each once (what
    /// [`BroadPhase::query`](crate::BroadPhase::query) reports). Rehashes a
    /// stale table first.
    ///
    /// Cost: the cells of `q` in every class in use (hierarchical hashing
    /// skips the children of cells without `hasChildren`) plus the entries
    /// of their buckets; a query whose walk would exceed
    /// [`SCAN_FACTOR`](super::SCAN_FACTOR)` · (C + N + 64)` cells scans the
    /// `C` slots instead, so a query is `O(SCAN_FACTOR · (C + N))` at most.
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::InvertedBox`] for a bad query box.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::hhash::*;
    /// use spatium::{Aabb2, BroadPhase, Candidates, Vec2};
    ///
    /// let mut h = HierarchicalHash::<Aabb2, _, _, _, _>::new(
    ///     [HashSlot::EMPTY; 4],
    ///     [HashBucket::EMPTY; 64],
    ///     [HashEntry::EMPTY; 16],
    ///     [Vec2::ZERO; 0],
    ///     HashConfig::DEFAULT,
    /// );
    /// h.insert(0, Aabb2::new(Vec2::new(0.1, 0.1), Vec2::new(0.9, 0.9)).unwrap()).unwrap();
    /// h.insert(1, Aabb2::new(Vec2::new(0.95, 0.1), Vec2::new(1.5, 0.5)).unwrap()).unwrap();
    /// let q = Aabb2::new(Vec2::new(0.5, 0.5), Vec2::new(0.92, 0.6)).unwrap();
    /// let mut exact = [0; 2];
    /// h.query_candidates(&q, Candidates::Exact, |id| exact[id as usize] += 1).unwrap();
    /// assert_eq!(exact, [1, 0]);
    /// let mut unique = [0; 2];
    /// h.query_candidates(&q, Candidates::Unique, |id| unique[id as usize] += 1).unwrap();
    /// assert_eq!(unique, [1, 1]); // 1 shares the query's cell, not its box
    /// ```
    pub fn query_candidates<F: FnMut(u32)>(
        &mut self,
        q: &B,
        mode: Candidates,
        f: F,
    ) -> Result<(), Error> {
        q.check()?;
        self.refresh();
        self.candidates_in(q, 0, mode, |_, _| true, f);
        Ok(())
    }

    /// Like [`query_candidates`](Self::query_candidates) on a table that
    /// is up to date (after [`refresh`](Self::refresh),
    /// [`rehash`](Self::rehash) or any `&mut` query), from a shared
    /// reference, so that several threads can query one table. Same cost.
    ///
    /// # Errors
    /// As [`query_candidates`](Self::query_candidates), and
    /// [`Error::StaleTable`] on a stale table.
    pub fn query_candidates_ready<F: FnMut(u32)>(
        &self,
        q: &B,
        mode: Candidates,
        f: F,
    ) -> Result<(), Error> {
        q.check()?;
        if self.stale {
            return Err(Error::StaleTable);
        }
        self.candidates_in(q, 0, mode, |_, _| true, f);
        Ok(())
    }

    /// The single-point top-down query of §3.3 (Fig. 3): calls `f(id)` for
    /// every object entry in the cells on the point's path, from the largest
    /// class down until a cell has no children (all classes in multilevel
    /// hashing). Duplicates and hash-collision candidates included: the
    /// [`Candidates::Raw`] query of the point's box.
    ///
    /// # Errors
    /// [`Error::NonFinite`].
    pub fn point_candidates<F: FnMut(u32)>(&mut self, p: B::Point, f: F) -> Result<(), Error> {
        if !p.is_finite() {
            return Err(Error::NonFinite);
        }
        let q = B::try_new(p, p)?;
        self.query_candidates(&q, Candidates::Raw, f)
    }

    /// Calls `f` for every cell the query of box `q` visits (whose bucket
    /// holds data of the current step), in visiting order.
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::InvertedBox`]; [`Error::OutOfRange`]
    /// when the walk could visit more than [`INSPECT_LIMIT`] cells.
    pub fn for_each_visited_cell<F: FnMut(CellVisit)>(
        &mut self,
        q: &B,
        mut f: F,
    ) -> Result<(), Error> {
        q.check()?;
        self.refresh();
        let (lo, hi) = self.config.query_range(q);
        if self.walk_exceeds(&lo, &hi, 0, INSPECT_LIMIT) {
            return Err(Error::OutOfRange);
        }
        let table = self.table.as_ref();
        self.traverse(&lo, &hi, 0, |li, cell, key, b| {
            f(CellVisit {
                level: self.order[li as usize] as u32,
                cell: *cell,
                key,
                has_children: S::HIERARCHICAL && table[b].tag & FLAG != 0,
            })
        });
        Ok(())
    }

    /// The ids stored in the bucket of cell `cell` at class level `level`
    /// (all entries of the bucket, particles with bit 31 set), and its
    /// `hasChildren` flag; `None` if no class has that level or the bucket
    /// holds nothing of the current step.
    pub fn cell_contents<F: FnMut(u32)>(
        &mut self,
        level: u32,
        cell: [i32; 3],
        mut f: F,
    ) -> Option<bool> {
        self.refresh();
        if self.stamp == 0 {
            return None;
        }
        let li = self.level_index(level)?;
        let key = self.key_of(li, &cell);
        let b = self.bucket_of(key);
        let bucket = self.table.as_ref()[b];
        if bucket.tag & STAMP_MASK != self.stamp {
            return None;
        }
        for id in self.entries(b) {
            f(id);
        }
        Some(S::HIERARCHICAL && bucket.tag & FLAG != 0)
    }

    /// The key of cell `cell` at class level `level` (before reduction to
    /// the table length): `h^c` for multilevel hashing, `h^k + … + h^c` for
    /// hierarchical hashing, where `h^c` includes the class salt (see the
    /// [module](super) docs).
    pub fn key(&self, level: u32, cell: [i32; 3]) -> Option<u32> {
        self.level_index(level).map(|li| self.key_of(li, &cell))
    }

    /// Counts the work of querying box `q` (see [`QueryCounts`]).
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::InvertedBox`]; [`Error::OutOfRange`]
    /// when the walk could visit more than [`INSPECT_LIMIT`] cells.
    pub fn query_counts(&mut self, q: &B) -> Result<QueryCounts, Error> {
        q.check()?;
        self.refresh();
        let mut n = QueryCounts::default();
        let (lo, hi) = self.config.query_range(q);
        if self.walk_exceeds(&lo, &hi, 0, INSPECT_LIMIT) {
            return Err(Error::OutOfRange);
        }
        let slots = self.slots.as_ref();
        let mut budget = u64::MAX;
        self.walk(&lo, &hi, 0, &mut budget, |li, cell, _, b| {
            n.cells += 1;
            let l = self.order[li as usize] as u32;
            let mut prev = NONE;
            for id in self.entries(b) {
                if id & PARTICLE != 0 {
                    continue;
                }
                n.raw += 1;
                let s = &slots[id as usize];
                let repeat = id == prev;
                prev = id;
                if !self.stored_in(&s.aabb, s.level, l, cell) || repeat {
                    n.collisions += 1;
                } else if s.aabb.overlaps(q) && Self::canonical(&lo, s, l, cell) {
                    n.exact += 1;
                }
            }
        });
        n.keys = u64::MAX - budget;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use crate::geom::{Aabb2, BoundingBox, Vec2};
    use crate::hhash::{
        Candidates, HashBucket, HashConfig, HashEntry, HashSlot, Hierarchical, Multilevel, Scheme,
    };
    use crate::traits::BroadPhase;

    type H<S> = super::ClassHash<
        S,
        Aabb2,
        [HashSlot<Aabb2>; 32],
        [HashBucket; 16],
        [HashEntry; 512],
        [Vec2; 0],
    >;

    fn boxes() -> [Aabb2; 12] {
        let mut out = [Aabb2::new(Vec2::ZERO, Vec2::ZERO).unwrap(); 12];
        for (i, b) in out.iter_mut().enumerate() {
            let x = (i % 4) as f32 * 1.7 - 2.0;
            let y = (i / 4) as f32 * 2.3 - 1.5;
            let e = 0.3 + (i % 5) as f32 * 1.1;
            *b = Aabb2::new(Vec2::new(x, y), Vec2::new(x + e, y + 0.5 * e)).unwrap();
        }
        out
    }

    /// `Unique` reports each id at most once, contains every `Exact` id and
    /// only ids `Raw` retrieves; pairs likewise. A 16-bucket table forces
    /// collisions.
    #[allow(clippy::needless_range_loop)]
    fn unique_between_raw_and_exact<S: Scheme>() {
        let config =
            HashConfig::<Vec2>::from_sizes(0.5, boxes().iter().map(|b| b.longest_edge())).unwrap();
        let mut h = H::<S>::new(
            [HashSlot::EMPTY; 32],
            [HashBucket::EMPTY; 16],
            [HashEntry::EMPTY; 512],
            [],
            config,
        );
        for (i, b) in boxes().iter().enumerate() {
            h.insert(i as u32, *b).unwrap();
        }
        let queries = [
            Aabb2::new(Vec2::new(-1.0, -1.0), Vec2::new(1.0, 0.5)).unwrap(),
            Aabb2::new(Vec2::new(0.2, 0.2), Vec2::new(0.2, 0.2)).unwrap(),
            Aabb2::new(Vec2::new(-9.0, -9.0), Vec2::new(9.0, 9.0)).unwrap(),
        ];
        for q in &queries {
            let mut seen = [[0u32; 32]; 3];
            for (m, mode) in [Candidates::Raw, Candidates::Unique, Candidates::Exact]
                .into_iter()
                .enumerate()
            {
                h.query_candidates(q, mode, |id| seen[m][id as usize] += 1)
                    .unwrap();
            }
            for id in 0..32 {
                let [raw, unique, exact] = [seen[0][id], seen[1][id], seen[2][id]];
                assert!(unique <= 1 && exact <= 1, "{id}");
                assert!(exact <= unique && (unique == 0 || raw > 0), "{id}");
                let overlaps = h.get(id as u32).is_some_and(|b| b.overlaps(q));
                assert_eq!(exact == 1, overlaps, "{id}");
            }
        }
        let mut pairs = [[[0u32; 32]; 32]; 2];
        for (m, mode) in [Candidates::Unique, Candidates::Exact]
            .into_iter()
            .enumerate()
        {
            h.for_each_candidate_pair(mode, |a, b| {
                pairs[m][a.min(b) as usize][a.max(b) as usize] += 1
            });
        }
        for a in 0..32 {
            for b in 0..32 {
                let [unique, exact] = [pairs[0][a][b], pairs[1][a][b]];
                assert!(unique <= 1 && exact <= unique, "{a} {b}");
            }
        }
    }

    #[test]
    fn unique_is_between_raw_and_exact() {
        unique_between_raw_and_exact::<Hierarchical>();
        unique_between_raw_and_exact::<Multilevel>();
    }
}
