//! Differential checks on the target: deterministic pseudo-random scenes
//! generated on the target (xorshift32), each structure's pairs (and box
//! queries) against an O(N²) brute-force result computed on the target,
//! compared as count + order-independent checksum. Several seeds and scene
//! shapes per structure, 3D and 2D, and again after every box moved.

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
        Aabb2, Aabb3, BoundingBox, BroadPhase, BruteForceBroadPhase, BruteForceNeighbors,
        BruteSlot, HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid, NeighborPair,
        NeighborSearch, PairCache, Point, UpdateStrategy, Validate, Vec2, Vec3,
    };
    use spatium_fw_tests::common::{
        boxes2, boxes3, brute_box_pairs, brute_box_query, brute_point_pairs, points2, points3,
    };
    use spatium_fw_tests::{PairSet, XorShift32, broad_pairs, broad_query, search_pairs};
    use static_cell::ConstStaticCell;

    /// Particles per scene.
    const N: usize = 400;
    /// Boxes per scene.
    const C: usize = 200;
    /// Seeds per scene shape.
    const SEEDS: [u32; 3] = [0x1234_5678, 0xDEAD_BEEF, 42];

    /// Point scene `k` (3D) for `seed`; returns the radius.
    fn scene3(k: usize, seed: u32, out: &mut [Vec3; N]) -> f32 {
        let mut rng = XorShift32::new(seed);
        match k {
            // Uniform in the unit cube.
            0 => {
                points3(&mut rng, 1.0, out);
                0.1
            }
            // Dense: everything in a cube of 0.3.
            1 => {
                points3(&mut rng, 0.3, out);
                0.04
            }
            // A thin slab (z in [0, 0.01)).
            2 => {
                points3(&mut rng, 1.0, out);
                for p in out.iter_mut() {
                    p.z *= 0.01;
                }
                0.06
            }
            // Far from the origin (the grids centre themselves).
            _ => {
                points3(&mut rng, 1.0, out);
                for p in out.iter_mut() {
                    *p += Vec3::new(1000.0, -700.0, 300.0);
                }
                0.1
            }
        }
    }

    /// Point scene `k` (2D) for `seed`; returns the radius.
    fn scene2(k: usize, seed: u32, out: &mut [Vec2; N]) -> f32 {
        let mut rng = XorShift32::new(seed);
        points2(&mut rng, 1.0, out);
        match k {
            0 => 0.05,
            1 => {
                for p in out.iter_mut() {
                    *p = *p * 0.3;
                }
                0.02
            }
            _ => {
                for p in out.iter_mut() {
                    *p += Vec2::new(-500.0, 250.0);
                }
                0.05
            }
        }
    }

    const SCENES3: usize = 4;
    const SCENES2: usize = 3;

    /// Builds `search` over every 3D point scene and compares its pairs
    /// with brute force; returns the total pair count.
    fn diff_search3<S: NeighborSearch<Vec3> + Validate>(search: &mut S) -> u32 {
        let mut pts = [Vec3::ZERO; N];
        let mut total = 0;
        for k in 0..SCENES3 {
            for seed in SEEDS {
                let r = scene3(k, seed, &mut pts);
                search.build(&pts, r).unwrap();
                search.validate().unwrap();
                let want = brute_point_pairs(&pts, r);
                assert!(want.count > 100, "scene {k}: only {} pairs", want.count);
                let got = search_pairs(search, &pts);
                assert_eq!(got, want, "scene {k}, seed {seed:#x}");
                total += want.count;
            }
        }
        total
    }

    /// As [`diff_search3`] over the 2D scenes.
    fn diff_search2<S: NeighborSearch<Vec2> + Validate>(search: &mut S) -> u32 {
        let mut pts = [Vec2::ZERO; N];
        let mut total = 0;
        for k in 0..SCENES2 {
            for seed in SEEDS {
                let r = scene2(k, seed, &mut pts);
                search.build(&pts, r).unwrap();
                search.validate().unwrap();
                let want = brute_point_pairs(&pts, r);
                assert!(want.count > 100, "scene {k}: only {} pairs", want.count);
                assert_eq!(
                    search_pairs(search, &pts),
                    want,
                    "2D scene {k}, seed {seed:#x}"
                );
                total += want.count;
            }
        }
        total
    }

    #[test]
    fn cell_sorted_hash_3d_2d() {
        type H3 = CellSortedHash<
            Vec3,
            [TableSlot; 1024],
            [SortedParticle<Vec3>; N],
            [CellRecord<Vec3>; N],
        >;
        type H2 = CellSortedHash<
            Vec2,
            [TableSlot; 1024],
            [SortedParticle<Vec2>; N],
            [CellRecord<Vec2>; N],
        >;
        static A: ConstStaticCell<H3> = ConstStaticCell::new(H3::new(
            [TableSlot::EMPTY; 1024],
            [SortedParticle::EMPTY; N],
            [CellRecord::EMPTY; N],
        ));
        static B: ConstStaticCell<H2> = ConstStaticCell::new(H2::new(
            [TableSlot::EMPTY; 1024],
            [SortedParticle::EMPTY; N],
            [CellRecord::EMPTY; N],
        ));
        diff_search3(A.take());
        diff_search2(B.take());
    }

    #[test]
    fn cell_sorted_hash_tiny_table_collides() {
        // 16 slots for hundreds of cells: nearly every slot is shared.
        type H =
            CellSortedHash<Vec3, [TableSlot; 16], [SortedParticle<Vec3>; N], [CellRecord<Vec3>; N]>;
        static A: ConstStaticCell<H> = ConstStaticCell::new(H::new(
            [TableSlot::EMPTY; 16],
            [SortedParticle::EMPTY; N],
            [CellRecord::EMPTY; N],
        ));
        let h = A.take();
        diff_search3(h);
        assert!(h.colliding_cells() > 0);
    }

    #[test]
    fn bucket_hash_3d_2d() {
        type H3 = BucketHash<Vec3, [Bucket<32>; 1024], [BucketParticle<Vec3>; N], 32>;
        type H2 = BucketHash<Vec2, [Bucket<32>; 1024], [BucketParticle<Vec2>; N], 32>;
        static A: ConstStaticCell<H3> =
            ConstStaticCell::new(H3::new([Bucket::EMPTY; 1024], [BucketParticle::EMPTY; N]));
        static B: ConstStaticCell<H2> =
            ConstStaticCell::new(H2::new([Bucket::EMPTY; 1024], [BucketParticle::EMPTY; N]));
        diff_search3(A.take());
        diff_search2(B.take());
    }

    #[test]
    fn linked_hash_3d_2d_and_update() {
        type H3 = LinkedHash<Vec3, [Head; 1024], [LinkedParticle<Vec3>; N]>;
        type H2 = LinkedHash<Vec2, [Head; 1024], [LinkedParticle<Vec2>; N]>;
        static A: ConstStaticCell<H3> =
            ConstStaticCell::new(H3::new([Head::EMPTY; 1024], [LinkedParticle::EMPTY; N]));
        static B: ConstStaticCell<H2> =
            ConstStaticCell::new(H2::new([Head::EMPTY; 1024], [LinkedParticle::EMPTY; N]));
        let h = A.take();
        diff_search3(h);
        diff_search2(B.take());
        // Incremental updates: a random walk, compared after every move.
        let mut pts = [Vec3::ZERO; N];
        let r = scene3(0, 7, &mut pts);
        h.build(&pts, r).unwrap();
        let mut rng = XorShift32::new(99);
        for _ in 0..5 {
            for p in pts.iter_mut() {
                *p += Vec3::new(
                    rng.range(-0.05, 0.05),
                    rng.range(-0.05, 0.05),
                    rng.range(-0.05, 0.05),
                );
            }
            h.update(&pts).unwrap();
            h.validate().unwrap();
            assert_eq!(search_pairs(h, &pts), brute_point_pairs(&pts, r));
        }
    }

    #[test]
    fn brute_force_neighbors_3d_2d() {
        static A: ConstStaticCell<BruteForceNeighbors<Vec3, [Vec3; N]>> =
            ConstStaticCell::new(BruteForceNeighbors::new([Vec3::ZERO; N]));
        static B: ConstStaticCell<BruteForceNeighbors<Vec2, [Vec2; N]>> =
            ConstStaticCell::new(BruteForceNeighbors::new([Vec2::ZERO; N]));
        diff_search3(A.take());
        diff_search2(B.take());
    }

    const TABLE: usize = 8192;
    const POOL: usize = 8 * C + N;

    #[test]
    fn hierarchical_and_multilevel_hash_particles() {
        type HH = HierarchicalHash<
            Aabb3,
            [HashSlot<Aabb3>; 0],
            [HashBucket; TABLE],
            [HashEntry; POOL],
            [Vec3; N],
        >;
        type MH = MultilevelHash<
            Aabb2,
            [HashSlot<Aabb2>; 0],
            [HashBucket; TABLE],
            [HashEntry; POOL],
            [Vec2; N],
        >;
        static A: ConstStaticCell<HH> = ConstStaticCell::new(HH::for_particles(
            [],
            [HashBucket::EMPTY; TABLE],
            [HashEntry::EMPTY; POOL],
            [Vec3::ZERO; N],
            0b1110,
        ));
        static B: ConstStaticCell<MH> = ConstStaticCell::new(MH::for_particles(
            [],
            [HashBucket::EMPTY; TABLE],
            [HashEntry::EMPTY; POOL],
            [Vec2::ZERO; N],
            0,
        ));
        diff_search3(A.take());
        diff_search2(B.take());
    }

    #[test]
    fn pair_cache_over_linked_hash() {
        type H = LinkedHash<Vec3, [Head; 1024], [LinkedParticle<Vec3>; N]>;
        static A: ConstStaticCell<PairCache<H, [NeighborPair; 8 * N]>> =
            ConstStaticCell::new(PairCache::new(
                H::new([Head::EMPTY; 1024], [LinkedParticle::EMPTY; N]),
                [NeighborPair::EMPTY; 8 * N],
            ));
        let cache = A.take();
        diff_search3(cache);
        assert!(cache.is_cached());
    }

    /// Box scene `k` (3D) for `seed`.
    fn boxes_scene3(k: usize, seed: u32, out: &mut [Aabb3; C]) {
        let mut rng = XorShift32::new(seed);
        match k {
            // One size range.
            0 => boxes3(&mut rng, 10.0, 0.2, 1.6, out),
            // Sizes varying 60×: mostly small, every tenth large.
            1 => {
                boxes3(&mut rng, 10.0, 0.1, 0.5, out);
                for b in out.iter_mut().step_by(10) {
                    b.max += Vec3::new(3.0, 3.0, 3.0) * rng.range(0.5, 2.0);
                }
            }
            // Skinny (10:1:1) and far from the origin.
            _ => {
                boxes3(&mut rng, 6.0, 0.1, 0.5, out);
                for b in out.iter_mut() {
                    b.max.x += 4.0 * rng.unit();
                    *b = Aabb3 {
                        min: b.min + Vec3::new(500.0, 500.0, -500.0),
                        max: b.max + Vec3::new(500.0, 500.0, -500.0),
                    };
                }
            }
        }
    }

    fn boxes_scene2(k: usize, seed: u32, out: &mut [Aabb2; C]) {
        let mut rng = XorShift32::new(seed);
        match k {
            0 => boxes2(&mut rng, 20.0, 0.2, 1.6, out),
            _ => {
                boxes2(&mut rng, 20.0, 0.1, 0.5, out);
                for b in out.iter_mut().step_by(10) {
                    b.max += Vec2::new(4.0, 4.0) * rng.range(0.5, 2.0);
                }
            }
        }
    }

    const BOX_SCENES3: usize = 3;
    const BOX_SCENES2: usize = 2;

    /// One broad phase over every scene: insert, pairs and queries against
    /// brute force, move every box (update), pairs again, clear. `prepare`
    /// runs before each scene's inserts (to configure the structure for the
    /// scene's sizes).
    fn diff_broad<B: BoundingBox, X: BroadPhase<B> + Validate>(
        bp: &mut X,
        scenes: usize,
        make: impl Fn(usize, u32, &mut [B; C]),
        mut prepare: impl FnMut(&mut X, &[B]),
    ) -> u32 {
        let mut boxes = [B::ZERO; C];
        let mut total = 0;
        for k in 0..scenes {
            for seed in SEEDS {
                make(k, seed, &mut boxes);
                bp.clear();
                prepare(bp, &boxes);
                for (id, b) in boxes.iter().enumerate() {
                    bp.insert(id as u32, *b).unwrap();
                }
                bp.validate().unwrap();
                let want = brute_box_pairs(&boxes);
                assert!(want.count > 20, "scene {k}: only {} pairs", want.count);
                assert_eq!(broad_pairs(bp), want, "scene {k}, seed {seed:#x}");
                total += want.count;
                let mut rng = XorShift32::new(seed ^ 0xA5A5);
                for i in 0..6 {
                    let b = boxes[(i * 31) % C];
                    let grow = rng.range(0.0, 3.0);
                    let q = B::try_new(
                        B::Point::from_fn(|a| b.min().coord(a) - grow),
                        B::Point::from_fn(|a| b.max().coord(a) + grow * 0.5),
                    )
                    .unwrap();
                    assert_eq!(broad_query(bp, &q), brute_box_query(&boxes, &q, |_| true));
                }
                for (id, b) in boxes.iter_mut().enumerate() {
                    let d = B::Point::from_fn(|_| rng.range(-0.8, 0.8));
                    *b = B::try_new(b.min() + d, b.max() + d).unwrap();
                    bp.update(id as u32, *b).unwrap();
                }
                bp.validate().unwrap();
                assert_eq!(broad_pairs(bp), brute_box_pairs(&boxes), "moved scene {k}");
            }
        }
        total
    }

    #[test]
    fn brute_force_broad_phase_3d_2d() {
        static A: ConstStaticCell<BruteForceBroadPhase<Aabb3, [BruteSlot<Aabb3>; C]>> =
            ConstStaticCell::new(BruteForceBroadPhase::new([BruteSlot::EMPTY; C]));
        static B: ConstStaticCell<BruteForceBroadPhase<Aabb2, [BruteSlot<Aabb2>; C]>> =
            ConstStaticCell::new(BruteForceBroadPhase::new([BruteSlot::EMPTY; C]));
        diff_broad(A.take(), BOX_SCENES3, boxes_scene3, |_, _| {});
        diff_broad(B.take(), BOX_SCENES2, boxes_scene2, |_, _| {});
    }

    /// Eight grids' worth of arena (offset table + 16³ cells each).
    const ARENA3: usize = 8 * (729 + 4096);
    const ARENA2: usize = 8 * (81 + 256);

    #[test]
    fn hierarchical_hash_grid_3d_2d() {
        type G3 =
            HierarchicalHashGrid<Aabb3, [HhgSlot<Aabb3>; C], [HhgRecord<Aabb3>; C], [u32; ARENA3]>;
        type G2 =
            HierarchicalHashGrid<Aabb2, [HhgSlot<Aabb2>; C], [HhgRecord<Aabb2>; C], [u32; ARENA2]>;
        static A: ConstStaticCell<G3> = ConstStaticCell::new(G3::new(
            [HhgSlot::EMPTY; C],
            [HhgRecord::EMPTY; C],
            [0; ARENA3],
            HhgConfig::DEFAULT,
        ));
        static B: ConstStaticCell<G2> = ConstStaticCell::new(G2::new(
            [HhgSlot::EMPTY; C],
            [HhgRecord::EMPTY; C],
            [0; ARENA2],
            HhgConfig::DEFAULT,
        ));
        let g = A.take();
        diff_broad(g, BOX_SCENES3, boxes_scene3, |_, _| {});
        diff_broad(B.take(), BOX_SCENES2, boxes_scene2, |_, _| {});
        // update_all, both strategies, on the mixed-size scene.
        let mut boxes = [Aabb3::ZERO; C];
        boxes_scene3(1, 5, &mut boxes);
        g.clear();
        for (id, b) in boxes.iter().enumerate() {
            g.insert(id as u32, *b).unwrap();
        }
        let mut rng = XorShift32::new(6);
        for strategy in [
            UpdateStrategy::Incremental,
            UpdateStrategy::ClearAndReinsert,
        ] {
            for b in boxes.iter_mut() {
                let d = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), 0.0);
                *b = Aabb3 {
                    min: b.min + d,
                    max: b.max + d,
                };
            }
            g.update_all(&boxes, strategy).unwrap();
            g.validate().unwrap();
            assert_eq!(broad_pairs(g), brute_box_pairs(&boxes));
        }
    }

    #[test]
    fn hierarchical_hash_grid_saturated_arena() {
        // Room for one small grid only: grids saturate, boxes go up to
        // coarser grids or the unbounded container: slower, still exact.
        const SMALL: usize = 729 + 64;
        type G =
            HierarchicalHashGrid<Aabb3, [HhgSlot<Aabb3>; C], [HhgRecord<Aabb3>; C], [u32; SMALL]>;
        static A: ConstStaticCell<G> = ConstStaticCell::new(G::new(
            [HhgSlot::EMPTY; C],
            [HhgRecord::EMPTY; C],
            [0; SMALL],
            HhgConfig::DEFAULT,
        ));
        diff_broad(A.take(), BOX_SCENES3, boxes_scene3, |_, _| {});
    }

    #[test]
    fn kd_broad_phase_u32_u64_2d() {
        type K32 = KdBroadPhase<Aabb3, u32, [KdSlot<Aabb3>; C], [KdRecord<u32>; 8 * C]>;
        type K64 = KdBroadPhase<Aabb3, u64, [KdSlot<Aabb3>; C], [KdRecord<u64>; C]>;
        type K2 = KdBroadPhase<Aabb2, u32, [KdSlot<Aabb2>; C], [KdRecord<u32>; 4 * C]>;
        static A: ConstStaticCell<K32> = ConstStaticCell::new(K32::new(
            [KdSlot::EMPTY; C],
            [KdRecord::EMPTY; 8 * C],
            [KdRecord::EMPTY; 8 * C],
            KdConfig::DEFAULT,
        ));
        // As many records as boxes: no room to split (never an error).
        static B: ConstStaticCell<K64> = ConstStaticCell::new(K64::new(
            [KdSlot::EMPTY; C],
            [KdRecord::EMPTY; C],
            [KdRecord::EMPTY; C],
            KdConfig::DEFAULT.with_octree(true),
        ));
        static D: ConstStaticCell<K2> = ConstStaticCell::new(K2::new(
            [KdSlot::EMPTY; C],
            [KdRecord::EMPTY; 4 * C],
            [KdRecord::EMPTY; 4 * C],
            KdConfig::DEFAULT,
        ));
        diff_broad(A.take(), BOX_SCENES3, boxes_scene3, |_, _| {});
        diff_broad(B.take(), BOX_SCENES3, boxes_scene3, |_, _| {});
        diff_broad(D.take(), BOX_SCENES2, boxes_scene2, |_, _| {});
    }

    #[test]
    fn linear_kd_tree_from_slices() {
        type T = LinearKdTree<Aabb3, u64, [KdRecord<u64>; 8 * C]>;
        static A: ConstStaticCell<T> = ConstStaticCell::new(T::new(
            [KdRecord::EMPTY; 8 * C],
            [KdRecord::EMPTY; 8 * C],
            KdConfig::DEFAULT,
        ));
        let t = A.take();
        let mut boxes = [Aabb3::ZERO; C];
        for (k, config) in [
            KdConfig::DEFAULT,
            KdConfig::DEFAULT.with_split(Split::None).unwrap(),
            KdConfig::DEFAULT.with_octree(true),
            KdConfig::DEFAULT.with_temporal_reuse(true),
        ]
        .into_iter()
        .enumerate()
        {
            t.set_config(config);
            for scene in 0..BOX_SCENES3 {
                boxes_scene3(scene, SEEDS[k % SEEDS.len()], &mut boxes);
                for _step in 0..2 {
                    t.build(&boxes).unwrap();
                    t.validate_against(&boxes).unwrap();
                    let mut got = PairSet::EMPTY;
                    t.for_each_candidate_pair(&boxes, Candidates::Exact, |a, b| got.add(a, b))
                        .unwrap();
                    assert_eq!(got, brute_box_pairs(&boxes), "config {k}, scene {scene}");
                    // A small move for the temporal-reuse build.
                    for b in boxes.iter_mut() {
                        b.min.x += 0.05;
                        b.max.x += 0.05;
                    }
                }
            }
        }
    }

    #[test]
    fn hierarchical_and_multilevel_hash_broad_phase() {
        type HH = HierarchicalHash<
            Aabb3,
            [HashSlot<Aabb3>; C],
            [HashBucket; TABLE],
            [HashEntry; POOL],
            [Vec3; 0],
        >;
        type MH = MultilevelHash<
            Aabb3,
            [HashSlot<Aabb3>; C],
            [HashBucket; TABLE],
            [HashEntry; POOL],
            [Vec3; 0],
        >;
        type HH2 = HierarchicalHash<
            Aabb2,
            [HashSlot<Aabb2>; C],
            [HashBucket; TABLE],
            [HashEntry; POOL],
            [Vec2; 0],
        >;
        static A: ConstStaticCell<HH> = ConstStaticCell::new(HH::new(
            [HashSlot::EMPTY; C],
            [HashBucket::EMPTY; TABLE],
            [HashEntry::EMPTY; POOL],
            [],
            HashConfig::DEFAULT,
        ));
        static B: ConstStaticCell<MH> = ConstStaticCell::new(MH::new(
            [HashSlot::EMPTY; C],
            [HashBucket::EMPTY; TABLE],
            [HashEntry::EMPTY; POOL],
            [],
            HashConfig::DEFAULT,
        ));
        static D: ConstStaticCell<HH2> = ConstStaticCell::new(HH2::new(
            [HashSlot::EMPTY; C],
            [HashBucket::EMPTY; TABLE],
            [HashEntry::EMPTY; POOL],
            [],
            HashConfig::DEFAULT,
        ));
        // Classes from the scene's sizes (the paper's preprocessing), with
        // a base of 0.1; boxes larger than the largest class would be
        // subdivided.
        fn sized<B: BoundingBox, X: BroadPhase<B>>(
            set: impl Fn(&mut X, HashConfig<B::Point>),
        ) -> impl FnMut(&mut X, &[B]) {
            move |h, boxes| {
                let c =
                    HashConfig::from_sizes(0.1, boxes.iter().map(|b| b.longest_edge())).unwrap();
                set(h, c);
            }
        }
        diff_broad(
            A.take(),
            BOX_SCENES3,
            boxes_scene3,
            sized(|h: &mut HH, c| h.set_config(c).unwrap()),
        );
        diff_broad(
            B.take(),
            BOX_SCENES3,
            boxes_scene3,
            sized(|h: &mut MH, c| h.set_config(c).unwrap()),
        );
        diff_broad(
            D.take(),
            BOX_SCENES2,
            boxes_scene2,
            sized(|h: &mut HH2, c| h.set_config(c).unwrap()),
        );
    }
}
