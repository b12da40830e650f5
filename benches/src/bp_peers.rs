//! Peer broad phases, used only by the benchmarks, to compare with spatium's
//! hierarchical hash grid.
//!
//! * [`SweepAndPrune`]: the classic single-axis sweep and prune of the pe
//!   physics engine comparison (Schornbaum 2009): objects kept sorted by the
//!   lower bound of their box along x, the order restored each step by an
//!   incremental insertion sort (which exploits temporal coherence: boxes
//!   that moved little are already almost in order), then one sweep.
//! * [`ParryBvh`]: parry3d's dynamic bounding volume hierarchy
//!   ([`parry3d::partitioning::Bvh`]), refitted or rebuilt each step, its
//!   pairs found by parry's own traversal of the tree against itself.
//!
//! Both report every overlapping pair exactly once, with the closed-interval
//! convention of [`BoundingBox::overlaps`] (boxes that touch overlap), so
//! their pairs equal those of spatium's brute force exactly. Everything runs
//! on the calling thread except [`ParryBvh::overlaps_parallel`], parry3d's
//! task-parallel traversal (its `parallel` feature, over rayon, which the
//! host crate already uses), for the thread-scaling experiment.
//!
//! [`Pairs`] is the pair count and order-free checksum the broad-phase
//! experiments compare between implementations, step by step.

use parry3d::bounding_volume::Aabb as ParryAabb;
use parry3d::math::Vector as ParryVector;
use parry3d::partitioning::{Bvh, BvhBuildStrategy, BvhLeafUpdateStatus, BvhWorkspace};
use parry3d::query::Ray as ParryRay;
use spatium::{Aabb3, BoundingBox, Point, Vec3};

/// Pair count and an order-free checksum of the pairs: two implementations
/// that report the same set of unordered pairs, in any order, agree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pairs {
    /// Pairs reported.
    pub count: u64,
    /// Wrapping sum of a mix of each pair's ids (smaller id first).
    pub sum: u64,
}

impl Pairs {
    /// Records the pair `(a, b)` (either order).
    #[inline(always)]
    pub fn add(&mut self, a: u32, b: u32) {
        let (lo, hi) = (a.min(b) as u64, a.max(b) as u64);
        self.count += 1;
        self.sum = self
            .sum
            .wrapping_add((lo.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ hi).wrapping_mul(31));
    }
}

/// One object in sweep order: its x interval cached next to its box, so that
/// the sort and the sweep stream one array.
#[derive(Clone, Copy, Debug)]
struct Entry<B> {
    /// Lower bound along x (the sort key).
    min_x: f32,
    /// Upper bound along x (where the sweep of this object stops).
    max_x: f32,
    /// The object's id (its index in the slice given to the constructor).
    id: u32,
    /// The whole box, for the full overlap test.
    b: B,
}

impl<B: BoundingBox> Entry<B> {
    #[inline(always)]
    fn new(id: u32, b: B) -> Self {
        Self {
            min_x: b.min().coord(0),
            max_x: b.max().coord(0),
            id,
            b,
        }
    }
}

/// Single-axis sweep and prune along x.
///
/// The objects are kept in an array sorted by the lower x bound of their
/// box, each entry holding its box and its x interval. [`update`] copies the
/// new boxes into that array (a gather by id) and restores the order with an
/// insertion sort: `O(n + s)` for `s` swaps, which is small when the boxes
/// move little between steps. [`for_each_pair`] sweeps the sorted array: for
/// each object, the objects after it whose lower x bound does not exceed its
/// upper x bound are its candidates, and a full box test keeps the
/// overlapping ones.
///
/// Ids are the indices `0..n` of the slice given to the constructor; the
/// number of objects is fixed at construction.
///
/// [`update`]: SweepAndPrune::update
/// [`for_each_pair`]: SweepAndPrune::for_each_overlap
#[derive(Clone, Debug)]
pub struct SweepAndPrune<B> {
    /// Objects sorted by `min_x`.
    sorted: Vec<Entry<B>>,
}

impl<B: BoundingBox> SweepAndPrune<B> {
    /// Sorts the boxes once with `sort_unstable_by` on their lower x bound:
    /// `O(n log n)`.
    ///
    /// # Panics
    ///
    /// If there are more than `u32::MAX` boxes.
    pub fn new_sorted(boxes: &[B]) -> Self {
        let mut sorted = entries(boxes);
        sorted.sort_unstable_by(|a, b| a.min_x.total_cmp(&b.min_x));
        Self { sorted }
    }

    /// Inserts the boxes one at a time, each moved down into its place in the
    /// sorted order (the setup of pe's sweep and prune): `O(n²)` on unsorted
    /// input, `O(n)` on input already sorted by lower x bound.
    ///
    /// # Panics
    ///
    /// If there are more than `u32::MAX` boxes.
    pub fn new_incremental(boxes: &[B]) -> Self {
        let mut sorted = Vec::with_capacity(boxes.len());
        for e in entries(boxes) {
            sorted.push(e);
            sift_down_last(&mut sorted);
        }
        Self { sorted }
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// `true` if there are no objects.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// Takes the new boxes (`boxes[id]` is object `id`'s box) and restores
    /// the sorted order by insertion sort, starting from the previous order.
    ///
    /// # Panics
    ///
    /// If `boxes.len()` differs from [`len`](Self::len).
    pub fn update(&mut self, boxes: &[B]) {
        assert_eq!(
            boxes.len(),
            self.sorted.len(),
            "SweepAndPrune::update: the number of boxes is fixed at construction"
        );
        for e in &mut self.sorted {
            *e = Entry::new(e.id, boxes[e.id as usize]);
        }
        insertion_sort(&mut self.sorted);
    }

    /// Calls `f(a, b)` once for every pair of overlapping boxes (closed
    /// intervals: touching boxes overlap), `a` before `b` in sweep order
    /// (not necessarily `a < b`).
    pub fn for_each_overlap(&self, mut f: impl FnMut(u32, u32)) {
        let s = &self.sorted[..];
        for (i, a) in s.iter().enumerate() {
            for c in &s[i + 1..] {
                // Sorted by `min_x`: every later object starts at or after
                // `c`, so none of them can overlap `a` along x either.
                if c.min_x > a.max_x {
                    break;
                }
                if a.b.overlaps(&c.b) {
                    f(a.id, c.id);
                }
            }
        }
    }
}

/// Entries in id order.
fn entries<B: BoundingBox>(boxes: &[B]) -> Vec<Entry<B>> {
    assert!(u32::try_from(boxes.len()).is_ok(), "at most u32::MAX boxes");
    boxes
        .iter()
        .enumerate()
        .map(|(i, b)| Entry::new(i as u32, *b))
        .collect()
}

/// Moves the last entry down to its place in the sorted prefix before it.
#[inline]
fn sift_down_last<B: Copy>(v: &mut [Entry<B>]) {
    let Some(last) = v.len().checked_sub(1) else {
        return;
    };
    sift_down(v, last);
}

/// Moves `v[i]` down to its place in the sorted prefix `v[..i]`, shifting
/// the larger entries up by one (a stable insertion: equal keys keep their
/// order).
#[inline(always)]
fn sift_down<B: Copy>(v: &mut [Entry<B>], i: usize) {
    let e = v[i];
    let mut j = i;
    while j > 0 && v[j - 1].min_x > e.min_x {
        v[j] = v[j - 1];
        j -= 1;
    }
    v[j] = e;
}

/// Insertion sort on `min_x`: `O(n)` comparisons plus one shift per
/// inversion.
fn insertion_sort<B: Copy>(v: &mut [Entry<B>]) {
    for i in 1..v.len() {
        // Fast path: already in place (the common case under coherence).
        if v[i - 1].min_x > v[i].min_x {
            sift_down(v, i);
        }
    }
}

/// parry3d's dynamic BVH ([`parry3d::partitioning::Bvh`], f32, 3D) as a
/// broad phase.
///
/// Leaf `id` is the box `boxes[id]`; the number of leaves is fixed at
/// construction. The tree is built with parry's binned SAH builder
/// ([`BvhBuildStrategy::Binned`], the default). Per step, either
///
/// * [`refit`](Self::refit): new leaf boxes written in place
///   (`Bvh::insert_or_update_partially`, no margin) then `Bvh::refit`, which
///   recomputes every internal box bottom-up and lays the nodes out in
///   depth-first order, keeping the topology; or
/// * [`rebuild`](Self::rebuild): new leaf boxes written in place then
///   `Bvh::rebuild`, a full binned build from the leaves that reuses the
///   tree's buffers and the workspace (the recipe of parry's regression test
///   for issue 399);
///
/// optionally followed by [`optimize_incremental`](Self::optimize_incremental)
/// (parry's rotating partial rebuild of about 5 % of the tree, which rapier's
/// broad phase runs after each refit).
///
/// A refitted tree keeps the topology built for the first positions: as the
/// boxes move away from them, internal boxes grow and overlap and the
/// traversal slows down; only a rebuild (or the incremental optimisation)
/// restores its quality.
///
/// Pairs come from `Bvh::traverse_bvtt_single_tree::<false>`, parry's
/// traversal of the tree against itself, without change detection (with it,
/// only pairs with a leaf that moved out of its enlarged box would be
/// reported). Each internal node tests its two subtrees against each other,
/// so every unordered pair of leaves is reached once, through its lowest
/// common ancestor: there are no duplicates. A pair is reported only after a
/// leaf-against-leaf test `mins <= other.maxs && maxs >= other.mins` on all
/// three axes, on the very `f32` values of the [`Aabb3`]s: the same closed
/// convention as [`BoundingBox::overlaps`], so no filtering is needed.
#[derive(Clone)]
pub struct ParryBvh {
    bvh: Bvh,
    workspace: BvhWorkspace,
    len: usize,
}

impl core::fmt::Debug for ParryBvh {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ParryBvh")
            .field("len", &self.len)
            .field("bvh", &self.bvh)
            .finish_non_exhaustive()
    }
}

/// The same box as a parry AABB (the same `f32` values).
#[inline(always)]
fn to_parry(b: &Aabb3) -> ParryAabb {
    ParryAabb::new(
        ParryVector::new(b.min.x, b.min.y, b.min.z),
        ParryVector::new(b.max.x, b.max.y, b.max.z),
    )
}

impl ParryBvh {
    /// Builds the tree from the boxes (`Bvh::from_iter` with the binned
    /// strategy; leaf `id` is `boxes[id]`).
    ///
    /// # Panics
    ///
    /// If there are more than `u32::MAX` boxes.
    pub fn new(boxes: &[Aabb3]) -> Self {
        assert!(u32::try_from(boxes.len()).is_ok(), "at most u32::MAX boxes");
        let bvh = Bvh::from_iter(
            BvhBuildStrategy::Binned,
            boxes.iter().enumerate().map(|(i, b)| (i, to_parry(b))),
        );
        Self {
            bvh,
            workspace: BvhWorkspace::default(),
            len: boxes.len(),
        }
    }

    /// Number of leaves.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` if there are no leaves.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes the new leaf boxes in place (no topology change).
    fn set_leaves(&mut self, boxes: &[Aabb3]) {
        assert_eq!(
            boxes.len(),
            self.len,
            "ParryBvh: the number of boxes is fixed at construction"
        );
        for (i, b) in boxes.iter().enumerate() {
            let status = self
                .bvh
                .insert_or_update_partially(to_parry(b), i as u32, 0.0);
            debug_assert!(!matches!(status, BvhLeafUpdateStatus::Inserted));
        }
    }

    /// Takes the new boxes and refits the tree (`Bvh::refit`): same
    /// topology, internal boxes recomputed, nodes re-laid out depth first.
    ///
    /// # Panics
    ///
    /// If `boxes.len()` differs from [`len`](Self::len).
    pub fn refit(&mut self, boxes: &[Aabb3]) {
        self.set_leaves(boxes);
        self.bvh.refit(&mut self.workspace);
    }

    /// Takes the new boxes and rebuilds the whole tree from them
    /// (`Bvh::rebuild` with the binned strategy), reusing its buffers.
    ///
    /// # Panics
    ///
    /// If `boxes.len()` differs from [`len`](Self::len).
    pub fn rebuild(&mut self, boxes: &[Aabb3]) {
        self.set_leaves(boxes);
        // With at most two leaves the root holds them directly and
        // `Bvh::rebuild` does nothing: writing the leaves was enough.
        self.bvh
            .rebuild(&mut self.workspace, BvhBuildStrategy::Binned);
    }

    /// parry's incremental optimisation (`Bvh::optimize_incremental`):
    /// rebuilds a rotating selection of small subtrees, to be called after
    /// [`refit`](Self::refit) to slow the decay of a refitted tree.
    pub fn optimize_incremental(&mut self) {
        self.bvh.optimize_incremental(&mut self.workspace);
    }

    /// Calls `f(a, b)` once for every pair of overlapping leaves (closed
    /// intervals), in parry's traversal order and orientation (not
    /// necessarily `a < b`). Takes `&mut self` for parry's traversal stack,
    /// which lives in the workspace.
    pub fn for_each_overlap(&mut self, mut f: impl FnMut(u32, u32)) {
        self.bvh
            .traverse_bvtt_single_tree::<false>(&mut self.workspace, &mut f);
    }

    /// Every pair of overlapping leaves by parry's task-parallel traversal
    /// (`Bvh::traverse_bvtt_single_tree_parallel`), on the current rayon
    /// pool (run it inside `ThreadPool::install` to choose the threads):
    /// the same pairs as [`for_each_overlap`](Self::for_each_overlap), in
    /// one `Vec`.
    pub fn overlaps_parallel(&self) -> Vec<(u32, u32)> {
        self.bvh.traverse_bvtt_single_tree_parallel::<false>()
    }

    /// The nearest leaf box `ray` enters (`Bvh::cast_ray`, parry's
    /// best-first traversal), with the leaf test done by spatium's slab test
    /// ([`spatium::Ray::enter_within`]) on `boxes` (the boxes of the last
    /// build or refit): the box narrow phase of spatium's
    /// [`first_box`](spatium::RayCast::first_box). Ties in `t` may pick
    /// another id than spatium's smallest.
    pub fn first_hit(&self, ray: &spatium::Ray<Vec3>, boxes: &[Aabb3]) -> Option<(u32, f32)> {
        let (o, d) = (ray.origin(), ray.dir());
        let pray = ParryRay::new(
            ParryVector::new(o.x, o.y, o.z),
            ParryVector::new(d.x, d.y, d.z),
        );
        let max_t = ray.max_t().min(f32::MAX);
        self.bvh.cast_ray(&pray, max_t, |id, best| {
            boxes
                .get(id as usize)
                .and_then(|b| ray.enter_within(b, best))
        })
    }

    /// Every leaf box `ray` enters within its `max_t`, sorted by `(t, id)`
    /// into `out` (cleared first): the leaves of `Bvh::leaves` whose every
    /// ancestor the ray meets, each tested with spatium's slab test.
    pub fn all_hits(
        &self,
        ray: &spatium::Ray<Vec3>,
        boxes: &[Aabb3],
        out: &mut Vec<spatium::RayHit>,
    ) {
        let (o, d) = (ray.origin(), ray.dir());
        let pray = ParryRay::new(
            ParryVector::new(o.x, o.y, o.z),
            ParryVector::new(d.x, d.y, d.z),
        );
        let max_t = ray.max_t().min(f32::MAX);
        out.clear();
        for id in self.bvh.leaves(|node| node.cast_ray(&pray, max_t) <= max_t) {
            if let Some(t) = boxes.get(id as usize).and_then(|b| ray.enter(b)) {
                out.push(spatium::RayHit { id, t });
            }
        }
        out.sort_unstable_by(spatium::RayHit::order);
    }
}

#[cfg(test)]
mod tests {
    use spatium::{Aabb2, Vec3};
    use spatium_host::oracle::overlapping_pairs;
    use spatium_host::rng::Rng;
    use spatium_host::scenarios::{BoxScenario, moving_cubes};

    use super::*;

    #[test]
    fn pairs_checksum_is_order_free() {
        let (mut a, mut b) = (Pairs::default(), Pairs::default());
        for (x, y) in [(1, 2), (7, 3), (4, 5)] {
            a.add(x, y);
        }
        for (x, y) in [(5, 4), (2, 1), (3, 7)] {
            b.add(x, y);
        }
        assert_eq!(a, b);
        let mut c = Pairs::default();
        for (x, y) in [(1, 2), (7, 3), (4, 6)] {
            c.add(x, y);
        }
        assert_ne!(a, c);
    }

    fn normalized(mut v: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
        for p in &mut v {
            *p = (p.0.min(p.1), p.0.max(p.1));
        }
        // Not deduplicated: a duplicate would fail the comparison.
        v.sort_unstable();
        v
    }

    fn sap_pairs<B: BoundingBox>(s: &SweepAndPrune<B>) -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        s.for_each_overlap(|a, b| v.push((a, b)));
        normalized(v)
    }

    fn bvh_pairs(s: &mut ParryBvh) -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        s.for_each_overlap(|a, b| v.push((a, b)));
        normalized(v)
    }

    fn assert_sorted<B>(s: &SweepAndPrune<B>) {
        assert!(s.sorted.windows(2).all(|w| w[0].min_x <= w[1].min_x));
    }

    fn check_sap<B: BoundingBox>(mut sc: BoxScenario<B>, steps: usize) {
        let mut sorted = SweepAndPrune::new_sorted(&sc.boxes);
        let mut incremental = SweepAndPrune::new_incremental(&sc.boxes);
        assert_eq!(sorted.len(), sc.boxes.len());
        assert_eq!(incremental.len(), sc.boxes.len());
        for step in 0..=steps {
            if step > 0 {
                sc.step();
                sorted.update(&sc.boxes);
                incremental.update(&sc.boxes);
            }
            let want = overlapping_pairs(&sc.boxes);
            assert!(!want.is_empty() || sc.boxes.len() < 2);
            for s in [&sorted, &incremental] {
                assert_sorted(s);
                assert_eq!(sap_pairs(s), want, "{} step {step}", sc.name);
            }
        }
    }

    fn check_bvh(mut sc: BoxScenario<Aabb3>, steps: usize) {
        let mut refit = ParryBvh::new(&sc.boxes);
        let mut optimized = ParryBvh::new(&sc.boxes);
        let mut rebuilt = ParryBvh::new(&sc.boxes);
        assert_eq!(refit.len(), sc.boxes.len());
        for step in 0..=steps {
            if step > 0 {
                sc.step();
                refit.refit(&sc.boxes);
                optimized.refit(&sc.boxes);
                optimized.optimize_incremental();
                rebuilt.rebuild(&sc.boxes);
            }
            let want = overlapping_pairs(&sc.boxes);
            let fresh = &mut ParryBvh::new(&sc.boxes);
            for s in [&mut refit, &mut optimized, &mut rebuilt, fresh] {
                assert_eq!(bvh_pairs(s), want, "{} step {step}", sc.name);
            }
        }
    }

    #[test]
    fn sap_moving_cubes_3d() {
        check_sap(moving_cubes::<Aabb3>(500, 1), 5);
    }

    #[test]
    fn sap_moving_cubes_2d() {
        check_sap(moving_cubes::<Aabb2>(500, 2), 5);
    }

    #[test]
    fn bvh_moving_cubes() {
        check_bvh(moving_cubes::<Aabb3>(500, 3), 5);
    }

    /// Random boxes of very different sizes, fully re-drawn each step (no
    /// coherence: the insertion sort does its worst).
    #[test]
    fn random_boxes_redrawn() {
        let mut rng = Rng::new(4);
        let mut draw = |n: usize| -> Vec<Aabb3> {
            (0..n)
                .map(|_| {
                    let lo = Vec3::new(
                        rng.range(0.0, 20.0),
                        rng.range(0.0, 20.0),
                        rng.range(0.0, 20.0),
                    );
                    let s = if rng.below(10) == 0 { 6.0 } else { 1.5 };
                    let hi = Vec3::new(
                        lo.x + rng.range(0.0, s),
                        lo.y + rng.range(0.0, s),
                        lo.z + rng.range(0.0, s),
                    );
                    Aabb3::try_new(lo, hi).expect("valid box")
                })
                .collect()
        };
        let boxes = draw(500);
        let mut sap = SweepAndPrune::new_incremental(&boxes);
        let mut refit = ParryBvh::new(&boxes);
        let mut rebuilt = ParryBvh::new(&boxes);
        for _ in 0..5 {
            let boxes = draw(500);
            sap.update(&boxes);
            refit.refit(&boxes);
            rebuilt.rebuild(&boxes);
            let want = overlapping_pairs(&boxes);
            assert_sorted(&sap);
            assert_eq!(sap_pairs(&sap), want);
            assert_eq!(bvh_pairs(&mut refit), want);
            assert_eq!(bvh_pairs(&mut rebuilt), want);
        }
    }

    /// Unit cubes on an integer lattice: every neighbour (face, edge or
    /// corner) only touches, so the closed convention decides every pair.
    #[test]
    fn touching_lattice() {
        let side = 6;
        let mut boxes = Vec::new();
        for z in 0..side {
            for y in 0..side {
                for x in 0..side {
                    let lo = Vec3::new(x as f32, y as f32, z as f32);
                    let hi = Vec3::new(lo.x + 1.0, lo.y + 1.0, lo.z + 1.0);
                    boxes.push(Aabb3::try_new(lo, hi).expect("valid box"));
                }
            }
        }
        let mut rng = Rng::new(5);
        rng.shuffle(&mut boxes);
        let want = overlapping_pairs(&boxes);
        // 26-neighbourhood, each pair once.
        let s = side as usize;
        let expected = 3 * (s - 1) * s * s // faces
            + 6 * (s - 1) * (s - 1) * s // edges
            + 4 * (s - 1) * (s - 1) * (s - 1); // corners
        assert_eq!(want.len(), expected);
        assert_eq!(sap_pairs(&SweepAndPrune::new_sorted(&boxes)), want);
        assert_eq!(sap_pairs(&SweepAndPrune::new_incremental(&boxes)), want);
        assert_eq!(bvh_pairs(&mut ParryBvh::new(&boxes)), want);
    }

    /// 0 to 3 boxes: the special cases of parry's builder, refit and
    /// rebuild.
    #[test]
    fn tiny() {
        let sc = moving_cubes::<Aabb3>(4, 6);
        for n in 0..4 {
            let mut boxes = sc.boxes[..n].to_vec();
            // All at the same place: every pair overlaps.
            for b in &mut boxes {
                *b = sc.boxes[0];
            }
            let want = overlapping_pairs(&boxes);
            assert_eq!(want.len(), n * n.saturating_sub(1) / 2);
            let mut sap = SweepAndPrune::new_incremental(&boxes);
            assert_eq!(sap.is_empty(), n == 0);
            sap.update(&boxes);
            assert_eq!(sap_pairs(&sap), want);
            let mut bvh = ParryBvh::new(&boxes);
            assert_eq!(bvh.is_empty(), n == 0);
            assert_eq!(bvh_pairs(&mut bvh), want);
            bvh.refit(&boxes);
            assert_eq!(bvh_pairs(&mut bvh), want);
            bvh.rebuild(&boxes);
            assert_eq!(bvh_pairs(&mut bvh), want);
            bvh.optimize_incremental();
            assert_eq!(bvh_pairs(&mut bvh), want);
        }
    }
}
