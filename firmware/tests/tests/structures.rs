//! Every landed structure on the target, in `static` const-generic array
//! storage built by its `const fn new` (taken once per boot through
//! `static_cell::ConstStaticCell`, so nothing is copied through the stack),
//! driven through its main operations, checked against the brute-force
//! oracle computed on the target and by `validate()`.

#![no_std]
#![no_main]

use cortex_m_rt as _;
use spatium_fw_tests as _;

#[embedded_test::setup]
fn setup() {
    spatium_fw_tests::init_log();
}

#[embedded_test::tests]
mod tests {
    use spatium::Inspect;
    use spatium::hhash::{
        HashBucket, HashConfig, HashEntry, HashSlot, HierarchicalHash, MultilevelHash,
    };
    use spatium::kdtree::{
        Candidates, KdBroadPhase, KdConfig, KdRecord, KdSlot, LinearKdTree, Split,
    };
    use spatium::uniform::{
        Bucket, BucketHash, BucketParticle, CellRecord, CellSortedHash, Head, LinkedHash,
        LinkedParticle, SortedParticle, TableSlot,
    };
    use spatium::{
        Aabb3, BoundingBox, BroadPhase, BruteForceBroadPhase, BruteForceNeighbors, BruteSlot,
        HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid, NeighborPair, NeighborSearch,
        PairCache, UpdateStrategy, Validate, Vec3,
    };
    use spatium_fw_tests::common::{
        boxes3, brute_box_pairs, brute_box_pairs_where, brute_box_query, brute_point_pairs,
        brute_within, points3,
    };
    use spatium_fw_tests::{
        PairSet, XorShift32, broad_pairs, broad_query, neighbor_pairs, search_pairs, search_within,
    };
    use static_cell::ConstStaticCell;

    /// Particles of the neighbour-search scenes.
    const N: usize = 256;
    /// Boxes of the broad-phase scenes.
    const C: usize = 128;
    /// Search radius for `N` points in the unit cube: about 1.6 neighbours
    /// each.
    const R: f32 = 0.12;

    fn scene_points(seed: u32) -> [Vec3; N] {
        let mut pts = [Vec3::ZERO; N];
        points3(&mut XorShift32::new(seed), 1.0, &mut pts);
        pts
    }

    fn scene_boxes(seed: u32) -> [Aabb3; C] {
        let mut boxes = [Aabb3::ZERO; C];
        boxes3(&mut XorShift32::new(seed), 10.0, 0.2, 1.6, &mut boxes);
        boxes
    }

    /// The checks every neighbour search passes: pairs, per-particle
    /// neighbours, point queries, CSR lists, all against brute force.
    fn check_search<N: NeighborSearch<Vec3>>(search: &N, pts: &[Vec3]) -> PairSet {
        let want = brute_point_pairs(pts, R);
        assert!(want.count > 50, "scene too sparse: {}", want.count);
        assert_eq!(search.len(), pts.len());
        assert_eq!(search.radius(), R);
        assert_eq!(search_pairs(search, pts), want);
        assert_eq!(neighbor_pairs(search), want);
        for q in [
            Vec3::new(0.5, 0.5, 0.5),
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(0.93, 0.1, 0.4),
            Vec3::new(3.0, 3.0, 3.0),
        ] {
            assert_eq!(search_within(search, q), brute_within(pts, q, R));
        }
        let mut offsets = [0u32; N + 1];
        let mut indices = [0u32; 4 * N];
        let total = search.neighbor_lists(&mut offsets, &mut indices).unwrap();
        assert_eq!(total, 2 * want.count as usize);
        assert_eq!(offsets[pts.len()] as usize, total);
        let mut csr = PairSet::EMPTY;
        for i in 0..pts.len() {
            for &j in &indices[offsets[i] as usize..offsets[i + 1] as usize] {
                if (i as u32) < j {
                    csr.add(i as u32, j);
                }
            }
        }
        assert_eq!(csr, want);
        want
    }

    #[test]
    fn cell_sorted_hash() {
        type H = CellSortedHash<
            Vec3,
            [TableSlot; 1024],
            [SortedParticle<Vec3>; N],
            [CellRecord<Vec3>; N],
        >;
        static HASH: ConstStaticCell<H> = ConstStaticCell::new(H::new(
            [TableSlot::EMPTY; 1024],
            [SortedParticle::EMPTY; N],
            [CellRecord::EMPTY; N],
        ));
        let h = HASH.take();
        assert_eq!(h.capacity(), N);
        let pts = scene_points(1);
        h.build(&pts, R).unwrap();
        h.validate().unwrap();
        let want = check_search(h, &pts);
        assert!(h.occupied_cells() > 0);
        // Reordered into cell order, the input is already sorted and gives
        // the same number of pairs.
        let mut sorted = [Vec3::ZERO; N];
        h.reorder(&pts, &mut sorted).unwrap();
        h.build(&sorted, R).unwrap();
        assert!(h.input_was_sorted());
        assert_eq!(search_pairs(h, &sorted).count, want.count);
        h.clear();
        assert_eq!(h.len(), 0);
        h.validate().unwrap();
    }

    #[test]
    fn bucket_hash() {
        type H = BucketHash<Vec3, [Bucket<16>; 1024], [BucketParticle<Vec3>; N], 16>;
        static HASH: ConstStaticCell<H> =
            ConstStaticCell::new(H::new([Bucket::EMPTY; 1024], [BucketParticle::EMPTY; N]));
        let h = HASH.take();
        let pts = scene_points(2);
        h.build(&pts, R).unwrap();
        h.validate().unwrap();
        check_search(h, &pts);
        assert!(h.max_bucket_len() <= 16);
    }

    #[test]
    fn linked_hash() {
        type H = LinkedHash<Vec3, [Head; 1024], [LinkedParticle<Vec3>; N]>;
        static HASH: ConstStaticCell<H> =
            ConstStaticCell::new(H::new([Head::EMPTY; 1024], [LinkedParticle::EMPTY; N]));
        let h = HASH.take();
        let mut pts = scene_points(3);
        h.build(&pts, R).unwrap();
        h.validate().unwrap();
        check_search(h, &pts);
        // Incremental update: move every particle a little, relink.
        let mut rng = XorShift32::new(33);
        for p in pts.iter_mut() {
            p.x = (p.x + rng.range(-0.1, 0.1)).clamp(0.0, 1.0);
            p.y = (p.y + rng.range(-0.1, 0.1)).clamp(0.0, 1.0);
        }
        let relinked = h.update(&pts).unwrap();
        assert!(relinked > 0 && relinked <= N);
        h.validate().unwrap();
        check_search(h, &pts);
    }

    #[test]
    fn brute_force_neighbors() {
        static BRUTE: ConstStaticCell<BruteForceNeighbors<Vec3, [Vec3; N]>> =
            ConstStaticCell::new(BruteForceNeighbors::new([Vec3::ZERO; N]));
        let b = BRUTE.take();
        let pts = scene_points(4);
        b.build(&pts, R).unwrap();
        b.validate().unwrap();
        check_search(b, &pts);
    }

    /// The checks every broad phase passes on the box scene: insert all,
    /// pairs and queries; move, update each, pairs; remove a few, pairs and
    /// queries; clear.
    fn check_broad<X: BroadPhase<Aabb3> + Validate>(bp: &mut X, seed: u32) {
        let mut boxes = scene_boxes(seed);
        for (id, b) in boxes.iter().enumerate() {
            bp.insert(id as u32, *b).unwrap();
        }
        assert_eq!(bp.box_count(), C);
        bp.validate().unwrap();
        let want = brute_box_pairs(&boxes);
        assert!(want.count > 20, "scene too sparse: {}", want.count);
        assert_eq!(broad_pairs(bp), want);
        check_queries(bp, &boxes, |_| true);
        // Move every box and update it.
        let mut rng = XorShift32::new(seed ^ 0x55);
        for (id, b) in boxes.iter_mut().enumerate() {
            let d = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), 0.0);
            *b = Aabb3 {
                min: b.min + d,
                max: b.max + d,
            };
            bp.update(id as u32, *b).unwrap();
        }
        bp.validate().unwrap();
        assert_eq!(broad_pairs(bp), brute_box_pairs(&boxes));
        // Remove every third box.
        for id in (0..C).step_by(3) {
            assert_eq!(bp.remove(id as u32).unwrap(), boxes[id]);
        }
        let keep = |i: usize| !i.is_multiple_of(3);
        assert_eq!(bp.box_count(), C - C.div_ceil(3));
        assert_eq!(bp.get(0), None);
        assert_eq!(bp.get(1), Some(boxes[1]));
        bp.validate().unwrap();
        assert_eq!(broad_pairs(bp), brute_box_pairs_where(&boxes, keep));
        check_queries(bp, &boxes, keep);
        bp.clear();
        assert_eq!(bp.box_count(), 0);
        assert_eq!(broad_pairs(bp).count, 0);
        bp.validate().unwrap();
    }

    fn check_queries<X: BroadPhase<Aabb3>>(
        bp: &mut X,
        boxes: &[Aabb3],
        keep: impl Fn(usize) -> bool + Copy,
    ) {
        let mut rng = XorShift32::new(77);
        for _ in 0..8 {
            let lo = Vec3::new(
                rng.range(-1.0, 10.0),
                rng.range(-1.0, 10.0),
                rng.range(-1.0, 10.0),
            );
            let e = rng.range(0.0, 4.0);
            let q = Aabb3::new(lo, lo + Vec3::new(e, e, e)).unwrap();
            assert_eq!(broad_query(bp, &q), brute_box_query(boxes, &q, keep));
        }
    }

    #[test]
    fn brute_force_broad_phase() {
        static BP: ConstStaticCell<BruteForceBroadPhase<Aabb3, [BruteSlot<Aabb3>; C]>> =
            ConstStaticCell::new(BruteForceBroadPhase::new([BruteSlot::EMPTY; C]));
        let bp = BP.take();
        assert_eq!(bp.capacity(), C);
        check_broad(bp, 5);
    }

    /// Arena of the hierarchical hash grid: four grids of 16³ cells plus
    /// their offset tables (room for the scene's few size classes).
    const ARENA: usize = 4 * (729 + 4096);

    type Hhg =
        HierarchicalHashGrid<Aabb3, [HhgSlot<Aabb3>; C], [HhgRecord<Aabb3>; C], [u32; ARENA]>;

    #[test]
    fn hierarchical_hash_grid() {
        static HHG: ConstStaticCell<Hhg> = ConstStaticCell::new(Hhg::new(
            [HhgSlot::EMPTY; C],
            [HhgRecord::EMPTY; C],
            [0; ARENA],
            HhgConfig::DEFAULT,
        ));
        let g = HHG.take();
        assert_eq!(ARENA, 4 * g.config().arena_words_for::<Aabb3>(C));
        check_broad(g, 6);
    }

    #[test]
    fn hierarchical_hash_grid_update_all_and_unbounded() {
        static HHG: ConstStaticCell<Hhg> = ConstStaticCell::new(Hhg::new(
            [HhgSlot::EMPTY; C],
            [HhgRecord::EMPTY; C],
            [0; ARENA],
            HhgConfig::DEFAULT,
        ));
        let g = HHG.take();
        let mut boxes = scene_boxes(7);
        // The last id is a half-space (the floor below y = 1).
        let floor = Aabb3 {
            min: Vec3::new(f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY),
            max: Vec3::new(f32::INFINITY, 1.0, f32::INFINITY),
        };
        boxes[C - 1] = floor;
        for (id, b) in boxes[..C - 1].iter().enumerate() {
            g.insert(id as u32, *b).unwrap();
        }
        g.insert_unbounded((C - 1) as u32, floor).unwrap();
        assert!(g.uses_grids());
        g.validate().unwrap();
        assert_eq!(broad_pairs(g), brute_box_pairs(&boxes));
        let stats = g.stats();
        assert!(stats.grids >= 1);
        assert_eq!(stats.unbounded_objects, 1);
        for strategy in [
            UpdateStrategy::Incremental,
            UpdateStrategy::ClearAndReinsert,
        ] {
            for b in boxes[..C - 1].iter_mut() {
                b.min.y += 0.3;
                b.max.y += 0.3;
            }
            g.update_all(&boxes, strategy).unwrap();
            g.validate().unwrap();
            assert_eq!(broad_pairs(g), brute_box_pairs(&boxes));
        }
        g.sort_records();
        g.validate().unwrap();
        assert_eq!(broad_pairs(g), brute_box_pairs(&boxes));
    }

    #[test]
    fn linear_kd_tree() {
        // u32 codes: quantisation in f32, which the Cortex-M4F does in
        // hardware.
        type T = LinearKdTree<Aabb3, u32, [KdRecord<u32>; 8 * C]>;
        static TREE: ConstStaticCell<T> = ConstStaticCell::new(T::new(
            [KdRecord::EMPTY; 8 * C],
            [KdRecord::EMPTY; 8 * C],
            KdConfig::DEFAULT,
        ));
        let t = TREE.take();
        let boxes = scene_boxes(8);
        t.build(&boxes).unwrap();
        t.validate().unwrap();
        t.validate_against(&boxes).unwrap();
        assert_eq!(t.len(), C);
        let want = brute_box_pairs(&boxes);
        let mut got = PairSet::EMPTY;
        t.for_each_candidate_pair(&boxes, Candidates::Exact, |a, b| got.add(a, b))
            .unwrap();
        assert_eq!(got, want);
        let mut unique = PairSet::EMPTY;
        t.for_each_candidate_pair(&boxes, Candidates::Unique, |a, b| unique.add(a, b))
            .unwrap();
        assert!(unique.count >= want.count);
        assert!(t.count_raw() >= unique.count as u64);
        let q = Aabb3::new(Vec3::new(2.0, 2.0, 2.0), Vec3::new(5.0, 6.0, 4.0)).unwrap();
        let mut hits = PairSet::EMPTY;
        t.query(&boxes, &q, |id| hits.add(u32::MAX - 1, id))
            .unwrap();
        assert_eq!(hits, brute_box_query(&boxes, &q, |_| true));
        let stats = t.stats();
        assert_eq!(stats.elements, C);
        assert!(stats.records >= C);
        // Without splitting: one record per box, same pairs.
        t.set_config(KdConfig::DEFAULT.with_split(Split::None).unwrap());
        t.build(&boxes).unwrap();
        assert_eq!(t.stats().records, C);
        let mut plain = PairSet::EMPTY;
        t.for_each_candidate_pair(&boxes, Candidates::Exact, |a, b| plain.add(a, b))
            .unwrap();
        assert_eq!(plain, want);
    }

    #[test]
    fn kd_broad_phase() {
        type K = KdBroadPhase<Aabb3, u64, [KdSlot<Aabb3>; C], [KdRecord<u64>; 4 * C]>;
        static KD: ConstStaticCell<K> = ConstStaticCell::new(K::new(
            [KdSlot::EMPTY; C],
            [KdRecord::EMPTY; 4 * C],
            [KdRecord::EMPTY; 4 * C],
            KdConfig::DEFAULT,
        ));
        let kd = KD.take();
        check_broad(kd, 9);
    }

    /// Table, pool and particle buffers of the hashing structures.
    const TABLE: usize = 4096;
    const POOL: usize = 16 * C + N;

    type HH = HierarchicalHash<
        Aabb3,
        [HashSlot<Aabb3>; C],
        [HashBucket; TABLE],
        [HashEntry; POOL],
        [Vec3; N],
    >;
    type MH = MultilevelHash<
        Aabb3,
        [HashSlot<Aabb3>; C],
        [HashBucket; TABLE],
        [HashEntry; POOL],
        [Vec3; N],
    >;

    #[test]
    fn hierarchical_hash_broad_phase() {
        static H: ConstStaticCell<HH> = ConstStaticCell::new(HH::new(
            [HashSlot::EMPTY; C],
            [HashBucket::EMPTY; TABLE],
            [HashEntry::EMPTY; POOL],
            [Vec3::ZERO; N],
            HashConfig::DEFAULT,
        ));
        let h = H.take();
        let boxes = scene_boxes(10);
        let config = HashConfig::from_sizes(0.2, boxes.iter().map(|b| b.longest_edge())).unwrap();
        h.set_config(config).unwrap();
        check_broad(h, 10);
    }

    #[test]
    fn multilevel_hash_broad_phase() {
        static H: ConstStaticCell<MH> = ConstStaticCell::new(MH::new(
            [HashSlot::EMPTY; C],
            [HashBucket::EMPTY; TABLE],
            [HashEntry::EMPTY; POOL],
            [Vec3::ZERO; N],
            HashConfig::DEFAULT,
        ));
        let h = H.take();
        let boxes = scene_boxes(11);
        let config = HashConfig::from_sizes(0.2, boxes.iter().map(|b| b.longest_edge())).unwrap();
        h.set_config(config).unwrap();
        check_broad(h, 11);
    }

    #[test]
    fn hierarchical_hash_particles_and_objects_in_one_table() {
        static H: ConstStaticCell<HH> = ConstStaticCell::new(HH::new(
            [HashSlot::EMPTY; C],
            [HashBucket::EMPTY; TABLE],
            [HashEntry::EMPTY; POOL],
            [Vec3::ZERO; N],
            HashConfig::DEFAULT,
        ));
        let h = H.take();
        // Spheres' boxes in the unit cube, particles among them.
        let mut boxes = [Aabb3::ZERO; C];
        boxes3(&mut XorShift32::new(12), 1.0, 0.02, 0.1, &mut boxes);
        let pts = scene_points(12);
        let config = HashConfig::from_sizes(R, boxes.iter().map(|b| b.longest_edge())).unwrap();
        h.set_config(config).unwrap();
        for (id, b) in boxes.iter().enumerate() {
            h.insert(id as u32, *b).unwrap();
        }
        NeighborSearch::build(h, &pts, R).unwrap();
        h.validate().unwrap();
        check_search(h, &pts);
        assert_eq!(broad_pairs(h), brute_box_pairs(&boxes));
        // Fluid–solid: a particle's path box against the objects.
        let q = Aabb3::new(pts[0], pts[0] + Vec3::new(0.05, 0.05, 0.05)).unwrap();
        assert_eq!(broad_query(h, &q), brute_box_query(&boxes, &q, |_| true));
        let stats = h.stats_refreshed();
        assert_eq!(stats.objects as usize, C);
        assert_eq!(stats.particles as usize, N);
    }

    #[test]
    fn multilevel_hash_for_particles() {
        static H: ConstStaticCell<MH> = ConstStaticCell::new(MH::for_particles(
            [HashSlot::EMPTY; C],
            [HashBucket::EMPTY; TABLE],
            [HashEntry::EMPTY; POOL],
            [Vec3::ZERO; N],
            0b110,
        ));
        let h = H.take();
        let pts = scene_points(13);
        NeighborSearch::build(h, &pts, R).unwrap();
        h.validate().unwrap();
        check_search(h, &pts);
    }

    #[test]
    fn pair_cache() {
        type H = CellSortedHash<
            Vec3,
            [TableSlot; 1024],
            [SortedParticle<Vec3>; N],
            [CellRecord<Vec3>; N],
        >;
        static CACHE: ConstStaticCell<PairCache<H, [NeighborPair; 2 * N]>> =
            ConstStaticCell::new(PairCache::new(
                H::new(
                    [TableSlot::EMPTY; 1024],
                    [SortedParticle::EMPTY; N],
                    [CellRecord::EMPTY; N],
                ),
                [NeighborPair::EMPTY; 2 * N],
            ));
        // A buffer too small for the pairs: not cached, same answers.
        static SMALL: ConstStaticCell<PairCache<H, [NeighborPair; 16]>> =
            ConstStaticCell::new(PairCache::new(
                H::new(
                    [TableSlot::EMPTY; 1024],
                    [SortedParticle::EMPTY; N],
                    [CellRecord::EMPTY; N],
                ),
                [NeighborPair::EMPTY; 16],
            ));
        let pts = scene_points(14);
        let cache = CACHE.take();
        cache.build(&pts, R).unwrap();
        cache.validate().unwrap();
        assert!(cache.is_cached());
        let want = check_search(cache, &pts);
        assert_eq!(cache.pair_count(), want.count as usize);
        assert_eq!(cache.pairs().len(), want.count as usize);
        assert_eq!(
            cache.memory_bytes(),
            12 * 2 * N + cache.inner().memory_bytes()
        );
        let small = SMALL.take();
        small.build(&pts, R).unwrap();
        small.validate().unwrap();
        assert!(!small.is_cached());
        assert_eq!(small.pair_count(), want.count as usize);
        check_search(small, &pts);
    }
}
