//! Bad input and full capacity on the target behave as on the host: NaN and
//! infinities are `Error::NonFinite`, a full structure says
//! `CapacityExceeded` (or its own capacity error), and a failed operation
//! changes nothing: `len` unchanged, earlier items still found, the same
//! pairs. Also: the memory formulas' element sizes on a 32-bit target, and
//! defmt logging of the crate's types.

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
    use core::mem::size_of;

    use spatium::Inspect;

    use spatium::hhash::{
        HashBucket, HashConfig, HashEntry, HashSlot, HierarchicalHash, MultilevelHash,
    };
    use spatium::kdtree::{KdBroadPhase, KdConfig, KdRecord, KdSlot, LinearKdTree, Split};
    use spatium::sph::ParticleState;
    use spatium::sph::boundary::Obstacle;
    use spatium::uniform::{
        Bucket, BucketHash, BucketParticle, CellRecord, CellSortedHash, Head, LinkedHash,
        LinkedParticle, SortedParticle, TableSlot,
    };
    use spatium::{
        Aabb2, Aabb3, BoundingBox, BroadPhase, BruteForceBroadPhase, BruteForceNeighbors,
        BruteSlot, Error, HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid, NeighborPair,
        NeighborSearch, PairCache, Validate, Vec2, Vec3,
    };
    use spatium_fw_tests::common::{boxes3, brute_box_pairs, points3};
    use spatium_fw_tests::{PairSet, XorShift32, broad_pairs, search_pairs};
    use static_cell::ConstStaticCell;

    /// Particle capacity of the neighbour searches here.
    const N: usize = 32;
    /// Id capacity of the broad phases here.
    const C: usize = 16;
    const R: f32 = 0.3;

    fn points() -> [Vec3; N + 1] {
        let mut pts = [Vec3::ZERO; N + 1];
        points3(&mut XorShift32::new(3), 1.0, &mut pts);
        pts
    }

    /// Every refused build leaves the last good one in place.
    fn check_search_errors<S: NeighborSearch<Vec3> + Validate>(s: &mut S) {
        let pts = points();
        let good = &pts[..N];
        s.build(good, R).unwrap();
        let before = search_pairs(s, good);
        assert!(before.count > 0);
        let unchanged = |s: &mut S| {
            assert_eq!(s.len(), N);
            assert_eq!(s.radius(), R);
            assert_eq!(s.position(5), Some(good[5]));
            assert_eq!(search_pairs(s, good), before);
            s.validate().unwrap();
        };
        // One particle too many.
        assert_eq!(
            s.build(&pts, R),
            Err(Error::CapacityExceeded { capacity: N })
        );
        unchanged(s);
        // NaN, infinity.
        let mut bad = [Vec3::ZERO; N];
        bad.copy_from_slice(good);
        bad[7].y = f32::NAN;
        assert_eq!(s.build(&bad, R), Err(Error::NonFinite));
        unchanged(s);
        bad[7].y = f32::INFINITY;
        assert_eq!(s.build(&bad, R), Err(Error::NonFinite));
        unchanged(s);
        // Radius.
        for r in [0.0, -1.0, f32::NAN, f32::INFINITY] {
            assert_eq!(s.build(good, r), Err(Error::InvalidRadius));
            unchanged(s);
        }
        // Queries.
        assert_eq!(
            s.for_each_within(Vec3::new(f32::NAN, 0.0, 0.0), |_, _| {}),
            Err(Error::NonFinite)
        );
        assert_eq!(
            s.for_each_neighbor(N as u32, |_, _| {}),
            Err(Error::UnknownId { id: N as u32 })
        );
        // CSR buffers too small: the exact need is reported.
        let mut offsets = [0u32; N];
        let mut indices = [0u32; 0];
        assert_eq!(
            s.neighbor_lists(&mut offsets, &mut indices),
            Err(Error::BufferTooSmall {
                needed: N + 1,
                available: N
            })
        );
        let mut offsets = [0u32; N + 1];
        assert_eq!(
            s.neighbor_lists(&mut offsets, &mut indices),
            Err(Error::BufferTooSmall {
                needed: 2 * before.count as usize,
                available: 0
            })
        );
        unchanged(s);
    }

    /// A spread beyond what the uniform grid's cell arithmetic can represent
    /// (2¹⁴ cells from the centre of the data) is refused.
    fn check_out_of_range<S: NeighborSearch<Vec3> + Validate>(s: &mut S) {
        let pts = points();
        s.build(&pts[..N], R).unwrap();
        let mut far = [Vec3::ZERO; 2];
        far[1].x = 1.0e6;
        assert_eq!(s.build(&far, R), Err(Error::OutOfRange));
        assert_eq!(s.len(), N);
        s.validate().unwrap();
    }

    type Sorted =
        CellSortedHash<Vec3, [TableSlot; 64], [SortedParticle<Vec3>; N], [CellRecord<Vec3>; N]>;

    #[test]
    fn uniform_hashes_refuse_bad_input_and_overflow() {
        static SORTED: ConstStaticCell<Sorted> = ConstStaticCell::new(Sorted::new(
            [TableSlot::EMPTY; 64],
            [SortedParticle::EMPTY; N],
            [CellRecord::EMPTY; N],
        ));
        type Bk = BucketHash<Vec3, [Bucket<8>; 64], [BucketParticle<Vec3>; N], 8>;
        static BUCKET: ConstStaticCell<Bk> =
            ConstStaticCell::new(Bk::new([Bucket::EMPTY; 64], [BucketParticle::EMPTY; N]));
        type Lk = LinkedHash<Vec3, [Head; 64], [LinkedParticle<Vec3>; N]>;
        static LINKED: ConstStaticCell<Lk> =
            ConstStaticCell::new(Lk::new([Head::EMPTY; 64], [LinkedParticle::EMPTY; N]));
        let (sorted, bucket, linked) = (SORTED.take(), BUCKET.take(), LINKED.take());
        check_search_errors(sorted);
        check_out_of_range(sorted);
        check_search_errors(bucket);
        check_out_of_range(bucket);
        check_search_errors(linked);
        check_out_of_range(linked);

        // A bucket of 8 slots cannot take 9 particles in one cell: refused
        // before anything is written.
        let pts = points();
        bucket.build(&pts[..N], R).unwrap();
        let before = search_pairs(bucket, &pts[..N]);
        let crowd = [Vec3::new(0.5, 0.5, 0.5); 9];
        assert!(matches!(
            bucket.build(&crowd, R),
            Err(Error::BucketFull { capacity: 8, .. })
        ));
        assert_eq!(bucket.len(), N);
        assert_eq!(search_pairs(bucket, &pts[..N]), before);

        // Linked update: wrong length, NaN: refused, nothing moved.
        linked.build(&pts[..N], R).unwrap();
        let before = search_pairs(linked, &pts[..N]);
        assert_eq!(
            linked.update(&pts[..N - 1]),
            Err(Error::LengthMismatch {
                expected: N,
                got: N - 1
            })
        );
        let mut moved = [Vec3::ZERO; N];
        moved.copy_from_slice(&pts[..N]);
        moved[0].z = f32::NAN;
        assert_eq!(linked.update(&moved), Err(Error::NonFinite));
        assert_eq!(linked.position(0), Some(pts[0]));
        assert_eq!(search_pairs(linked, &pts[..N]), before);
        linked.validate().unwrap();
    }

    #[test]
    fn table_length_not_a_power_of_two() {
        type H = CellSortedHash<
            Vec3,
            [TableSlot; 1000],
            [SortedParticle<Vec3>; N],
            [CellRecord<Vec3>; N],
        >;
        static HASH: ConstStaticCell<H> = ConstStaticCell::new(H::new(
            [TableSlot::EMPTY; 1000],
            [SortedParticle::EMPTY; N],
            [CellRecord::EMPTY; N],
        ));
        let pts = points();
        assert_eq!(
            HASH.take().build(&pts[..N], R),
            Err(Error::InvalidTableLength { len: 1000 })
        );
    }

    #[test]
    fn brute_force_hashing_and_pair_cache_refuse_bad_input() {
        static BRUTE: ConstStaticCell<BruteForceNeighbors<Vec3, [Vec3; N]>> =
            ConstStaticCell::new(BruteForceNeighbors::new([Vec3::ZERO; N]));
        type HH = HierarchicalHash<
            Aabb3,
            [HashSlot<Aabb3>; 0],
            [HashBucket; 256],
            [HashEntry; N],
            [Vec3; N],
        >;
        static HH_P: ConstStaticCell<HH> = ConstStaticCell::new(HH::for_particles(
            [],
            [HashBucket::EMPTY; 256],
            [HashEntry::EMPTY; N],
            [Vec3::ZERO; N],
            0b10,
        ));
        static CACHE: ConstStaticCell<PairCache<Sorted, [NeighborPair; 4 * N]>> =
            ConstStaticCell::new(PairCache::new(
                Sorted::new(
                    [TableSlot::EMPTY; 64],
                    [SortedParticle::EMPTY; N],
                    [CellRecord::EMPTY; N],
                ),
                [NeighborPair::EMPTY; 4 * N],
            ));
        check_search_errors(BRUTE.take());
        check_search_errors(HH_P.take());
        let cache = CACHE.take();
        check_search_errors(cache);
        check_out_of_range(cache);
        assert!(cache.is_cached());
    }

    fn scene_boxes() -> [Aabb3; C] {
        let mut boxes = [Aabb3::ZERO; C];
        boxes3(&mut XorShift32::new(21), 3.0, 0.3, 1.5, &mut boxes);
        boxes
    }

    /// Every refused insert, update, remove and query leaves the stored boxes
    /// and their pairs as they were; the id store fills to its capacity.
    fn check_broad_errors<X: BroadPhase<Aabb3> + Validate>(bp: &mut X) {
        let boxes = scene_boxes();
        let last = (C - 1) as u32;
        for (id, b) in boxes[..C - 1].iter().enumerate() {
            bp.insert(id as u32, *b).unwrap();
        }
        let before = broad_pairs(bp);
        assert_eq!(before, brute_box_pairs(&boxes[..C - 1]));
        let unchanged = |bp: &mut X| {
            assert_eq!(bp.box_count(), C - 1);
            assert_eq!(bp.get(3), Some(boxes[3]));
            assert_eq!(bp.get(last), None);
            assert_eq!(broad_pairs(bp), before);
            bp.validate().unwrap();
        };
        let nan = Aabb3 {
            min: Vec3::new(0.0, f32::NAN, 0.0),
            max: Vec3::new(1.0, 1.0, 1.0),
        };
        let inf = Aabb3 {
            min: Vec3::new(0.0, 0.0, 0.0),
            max: Vec3::new(1.0, f32::INFINITY, 1.0),
        };
        let inverted = Aabb3 {
            min: Vec3::new(0.0, 2.0, 0.0),
            max: Vec3::new(1.0, 1.0, 1.0),
        };
        assert_eq!(bp.insert(last, nan), Err(Error::NonFinite));
        unchanged(bp);
        assert_eq!(bp.insert(last, inf), Err(Error::NonFinite));
        unchanged(bp);
        assert_eq!(bp.insert(last, inverted), Err(Error::InvertedBox));
        unchanged(bp);
        assert_eq!(
            bp.insert(C as u32, boxes[0]),
            Err(Error::IdOutOfRange { id: C as u32 })
        );
        unchanged(bp);
        assert_eq!(bp.insert(3, boxes[0]), Err(Error::DuplicateId { id: 3 }));
        unchanged(bp);
        assert_eq!(bp.update(3, nan), Err(Error::NonFinite));
        unchanged(bp);
        assert_eq!(bp.update(3, inverted), Err(Error::InvertedBox));
        unchanged(bp);
        assert_eq!(
            bp.update(last, boxes[0]),
            Err(Error::UnknownId { id: last })
        );
        unchanged(bp);
        assert_eq!(bp.remove(last), Err(Error::UnknownId { id: last }));
        unchanged(bp);
        assert_eq!(bp.query(&nan, |_| {}), Err(Error::NonFinite));
        assert_eq!(bp.query(&inverted, |_| {}), Err(Error::InvertedBox));
        unchanged(bp);
        // The last id fills the store; one more id is refused.
        bp.insert(last, boxes[C - 1]).unwrap();
        assert_eq!(bp.box_count(), C);
        assert_eq!(broad_pairs(bp), brute_box_pairs(&boxes));
        assert_eq!(bp.capacity(), C);
        bp.validate().unwrap();
    }

    #[test]
    fn broad_phases_refuse_bad_input() {
        static BRUTE: ConstStaticCell<BruteForceBroadPhase<Aabb3, [BruteSlot<Aabb3>; C]>> =
            ConstStaticCell::new(BruteForceBroadPhase::new([BruteSlot::EMPTY; C]));
        const ARENA: usize = 2 * (729 + 4096);
        type G =
            HierarchicalHashGrid<Aabb3, [HhgSlot<Aabb3>; C], [HhgRecord<Aabb3>; C], [u32; ARENA]>;
        // Grids from the first box on (no small-N path), so the grid code
        // sees the bad input.
        static HHG: ConstStaticCell<G> = ConstStaticCell::new(G::new(
            [HhgSlot::EMPTY; C],
            [HhgRecord::EMPTY; C],
            [0; ARENA],
            HhgConfig::DEFAULT.with_small_n_threshold(0),
        ));
        type K = KdBroadPhase<Aabb3, u32, [KdSlot<Aabb3>; C], [KdRecord<u32>; 4 * C]>;
        static KD: ConstStaticCell<K> = ConstStaticCell::new(K::new(
            [KdSlot::EMPTY; C],
            [KdRecord::EMPTY; 4 * C],
            [KdRecord::EMPTY; 4 * C],
            KdConfig::DEFAULT,
        ));
        type M = MultilevelHash<
            Aabb3,
            [HashSlot<Aabb3>; C],
            [HashBucket; 512],
            [HashEntry; 64 * C],
            [Vec3; 0],
        >;
        static MH: ConstStaticCell<M> = ConstStaticCell::new(M::new(
            [HashSlot::EMPTY; C],
            [HashBucket::EMPTY; 512],
            [HashEntry::EMPTY; 64 * C],
            [],
            HashConfig::DEFAULT,
        ));
        check_broad_errors(BRUTE.take());
        let g = HHG.take();
        check_broad_errors(g);
        assert!(g.uses_grids());
        // Beyond the cell arithmetic of every grid: refused.
        g.remove(0).unwrap();
        let far = Aabb3::new(Vec3::new(1.0e30, 0.0, 0.0), Vec3::new(1.0e30, 1.0, 1.0)).unwrap();
        assert_eq!(g.insert(0, far), Err(Error::OutOfRange));
        assert_eq!(g.box_count(), C - 1);
        g.validate().unwrap();
        check_broad_errors(KD.take());
        check_broad_errors(MH.take());
    }

    #[test]
    fn full_broad_phases_say_capacity_exceeded_and_lose_nothing() {
        let boxes = scene_boxes();
        // Kd-tree: 16 ids, records for 8 boxes.
        type K = KdBroadPhase<Aabb3, u64, [KdSlot<Aabb3>; C], [KdRecord<u64>; 8]>;
        static KD: ConstStaticCell<K> = ConstStaticCell::new(K::new(
            [KdSlot::EMPTY; C],
            [KdRecord::EMPTY; 8],
            [KdRecord::EMPTY; 8],
            KdConfig::DEFAULT,
        ));
        let kd = KD.take();
        for (id, b) in boxes[..8].iter().enumerate() {
            kd.insert(id as u32, *b).unwrap();
        }
        assert_eq!(
            kd.insert(8, boxes[8]),
            Err(Error::CapacityExceeded { capacity: 8 })
        );
        assert_eq!(kd.box_count(), 8);
        assert_eq!(kd.get(8), None);
        assert_eq!(kd.get(7), Some(boxes[7]));
        assert_eq!(broad_pairs(kd), brute_box_pairs(&boxes[..8]));
        kd.validate().unwrap();

        // Hierarchical hashing: a pool of 64 entries.
        type H = HierarchicalHash<
            Aabb3,
            [HashSlot<Aabb3>; C],
            [HashBucket; 256],
            [HashEntry; 64],
            [Vec3; 4],
        >;
        static HH: ConstStaticCell<H> = ConstStaticCell::new(H::new(
            [HashSlot::EMPTY; C],
            [HashBucket::EMPTY; 256],
            [HashEntry::EMPTY; 64],
            [Vec3::ZERO; 4],
            HashConfig::DEFAULT,
        ));
        let h = HH.take();
        // One class of 0.5: the boxes (edges up to 1.5) are subdivided into
        // every class cell they overlap (up to 64), so the pool runs out
        // after a few boxes.
        h.set_config(HashConfig::new(0.5, 1).unwrap()).unwrap();
        let mut stored = 0;
        let mut refused = None;
        for (id, b) in boxes.iter().enumerate() {
            match h.insert(id as u32, *b) {
                Ok(()) => stored += 1,
                Err(e) => {
                    refused = Some((id, e));
                    break;
                }
            }
        }
        let (id, e) = refused.expect("the pool never filled");
        assert!(stored >= 1);
        assert_eq!(e, Error::CapacityExceeded { capacity: 64 });
        assert_eq!(BroadPhase::box_count(h), stored);
        assert_eq!(h.get(id as u32), None);
        assert_eq!(h.get(0), Some(boxes[0]));
        assert_eq!(broad_pairs(h), brute_box_pairs(&boxes[..stored]));
        h.validate().unwrap();
        // Particles that do not fit the rest of the pool are refused too.
        let pts = [Vec3::new(0.5, 0.5, 0.5); 4];
        let free = 64 - h.stats_refreshed().entries as usize;
        if free < 4 {
            assert_eq!(
                NeighborSearch::build(h, &pts, 0.5),
                Err(Error::CapacityExceeded { capacity: 64 })
            );
            assert_eq!(NeighborSearch::len(h), 0);
        } else {
            NeighborSearch::build(h, &pts, 0.5).unwrap();
            assert_eq!(NeighborSearch::len(h), 4);
        }
        assert_eq!(BroadPhase::box_count(h), stored);
        h.validate().unwrap();
    }

    #[test]
    fn configurations_are_checked() {
        assert_eq!(
            HhgConfig::DEFAULT.with_hierarchy_factor(1.0),
            Err(Error::InvalidConfig {
                field: "hierarchy_factor"
            })
        );
        assert_eq!(
            HhgConfig::DEFAULT.with_density(f32::NAN),
            Err(Error::InvalidConfig { field: "density" })
        );
        assert_eq!(
            HhgConfig::DEFAULT.with_initial_cells_log2(12),
            Err(Error::InvalidConfig {
                field: "initial_cells_log2"
            })
        );
        assert_eq!(
            HashConfig::<Vec3>::new(f32::NAN, 1),
            Err(Error::InvalidRadius)
        );
        assert_eq!(
            HashConfig::<Vec3>::new(1.0, 1 << 31),
            Err(Error::InvalidConfig { field: "levels" })
        );
        assert_eq!(
            KdConfig::<Aabb3>::DEFAULT.with_split(Split::Volume { min_gain_log2: 33 }),
            Err(Error::InvalidConfig {
                field: "split.min_gain_log2"
            })
        );
        // More bits per axis than u32 codes hold: every build refuses.
        type T = LinearKdTree<Aabb3, u32, [KdRecord<u32>; C]>;
        static TREE: ConstStaticCell<T> = ConstStaticCell::new(T::new(
            [KdRecord::EMPTY; C],
            [KdRecord::EMPTY; C],
            KdConfig::DEFAULT.with_bits_per_axis(20),
        ));
        let boxes = scene_boxes();
        assert_eq!(
            TREE.take().build(&boxes),
            Err(Error::InvalidConfig { field: "bits" })
        );
    }

    /// The element sizes behind the documented memory formulas, on a 32-bit
    /// `usize` target (the table of `core/src/lib.rs` and the README).
    #[test]
    fn memory_formulas_hold_on_thumbv7em() {
        assert_eq!(size_of::<usize>(), 4);
        // CellSortedHash: 8T + 24N (3D), 8T + 20N (2D).
        assert_eq!(size_of::<TableSlot>(), 8);
        assert_eq!(
            size_of::<SortedParticle<Vec3>>() + size_of::<CellRecord<Vec3>>(),
            24
        );
        assert_eq!(
            size_of::<SortedParticle<Vec2>>() + size_of::<CellRecord<Vec2>>(),
            20
        );
        // BucketHash<K>: (16 + 4K)T + 24N / 16N.
        assert_eq!(size_of::<Bucket<1>>(), 16 + 4);
        assert_eq!(size_of::<Bucket<16>>(), 16 + 4 * 16);
        assert_eq!(size_of::<BucketParticle<Vec3>>(), 24);
        assert_eq!(size_of::<BucketParticle<Vec2>>(), 16);
        // LinkedHash: 8T + 32N / 24N.
        assert_eq!(size_of::<Head>(), 8);
        assert_eq!(size_of::<LinkedParticle<Vec3>>(), 32);
        assert_eq!(size_of::<LinkedParticle<Vec2>>(), 24);
        // BruteForceNeighbors: 12N / 8N; BruteForceBroadPhase: 32C / 24C.
        assert_eq!(size_of::<Vec3>(), 12);
        assert_eq!(size_of::<Vec2>(), 8);
        assert_eq!(size_of::<BruteSlot<Aabb3>>(), 32);
        assert_eq!(size_of::<BruteSlot<Aabb2>>(), 24);
        // HierarchicalHashGrid: 76C + 4A / 60C + 4A.
        assert_eq!(
            size_of::<HhgSlot<Aabb3>>() + size_of::<HhgRecord<Aabb3>>(),
            76
        );
        assert_eq!(
            size_of::<HhgSlot<Aabb2>>() + size_of::<HhgRecord<Aabb2>>(),
            60
        );
        // Kd-tree records r = 8 / 16 bytes for u32 / u64 codes; KdBroadPhase
        // slots 24C / 16C.
        assert_eq!(size_of::<KdRecord<u32>>(), 8);
        assert_eq!(size_of::<KdRecord<u64>>(), 16);
        assert_eq!(size_of::<KdSlot<Aabb3>>(), 24);
        assert_eq!(size_of::<KdSlot<Aabb2>>(), 16);
        // Hashing: 40C + 8T + 8E + 12N / 32C + 8T + 8E + 8N.
        assert_eq!(size_of::<HashSlot<Aabb3>>(), 40);
        assert_eq!(size_of::<HashSlot<Aabb2>>(), 32);
        assert_eq!(size_of::<HashBucket>(), 8);
        assert_eq!(size_of::<HashEntry>(), 8);
        // PairCache: 12Q.
        assert_eq!(size_of::<NeighborPair>(), 12);
        // Fluid: 80N / 56N.
        assert_eq!(size_of::<Vec3>() + size_of::<ParticleState<Vec3>>(), 80);
        assert_eq!(size_of::<Vec2>() + size_of::<ParticleState<Vec2>>(), 56);
        // Obstacles: 52C / 36C.
        assert_eq!(size_of::<Obstacle<Vec3>>(), 52);
        assert_eq!(size_of::<Obstacle<Vec2>>(), 36);
    }

    /// `u128` codes: the formula says r = 32 bytes (x86-64, where `u128` is
    /// 16-aligned); the AAPCS aligns `u128` to 8, so a record is 24 bytes on
    /// a Cortex-M: the formula over-states it there.
    #[test]
    fn kd_record_u128_is_24_bytes_on_cortex_m() {
        assert_eq!(core::mem::align_of::<u128>(), 8);
        assert_eq!(size_of::<KdRecord<u128>>(), 24);
    }

    /// A structure's own bookkeeping (the part outside its buffers), on a
    /// 32-bit target; documented as ≈ 2.5 KiB for the hierarchical hash grid
    /// and ≈ 200 bytes for the kd-tree (on a 64-bit host). The kd-tree's
    /// flag for its packed box copies (issue 17) took it from 200 to 208 B
    /// here (alignment padding).
    #[test]
    fn struct_overheads_on_thumbv7em() {
        type G = HierarchicalHashGrid<Aabb3, [HhgSlot<Aabb3>; 0], [HhgRecord<Aabb3>; 0], [u32; 0]>;
        type T = LinearKdTree<Aabb3, u64, [KdRecord<u64>; 0]>;
        let g = size_of::<G>();
        let t = size_of::<T>();
        log::info!("HierarchicalHashGrid struct: {g} B, LinearKdTree<u64> struct: {t} B");
        assert!(g <= 2560, "HHG struct {g} B");
        assert!(t <= 208, "kd-tree struct {t} B");
    }

    /// defmt through semihosting (`defmt-semihosting` global logger, the
    /// ELF linked with `-Tdefmt.x`): the crate's types, errors included,
    /// are `defmt::Format`. The frames go to the semihosting stdout in
    /// defmt's binary encoding; `scripts/firmware.sh` decodes them with
    /// `defmt-print` when it can.
    #[test]
    fn defmt_logs_errors_and_stats() {
        use defmt_semihosting as _;
        static BRUTE: ConstStaticCell<BruteForceNeighbors<Vec3, [Vec3; N]>> =
            ConstStaticCell::new(BruteForceNeighbors::new([Vec3::ZERO; N]));
        let b = BRUTE.take();
        let pts = points();
        let e = b.build(&pts, R).unwrap_err();
        defmt::info!(
            "spatium on target: build of {} points refused: {}",
            pts.len(),
            e
        );
        assert_eq!(e, Error::CapacityExceeded { capacity: N });
        let e = Aabb3::new(Vec3::ZERO, Vec3::new(f32::NAN, 0.0, 0.0)).unwrap_err();
        defmt::warn!("bad box: {}", e);
        assert_eq!(e, Error::NonFinite);
        b.build(&pts[..N], R).unwrap();
        let mut pairs = PairSet::EMPTY;
        b.for_each_pair(|i, j, _| pairs.add(i, j));
        defmt::info!("{} pairs; first point {}", pairs.count, pts[0]);
        type K = KdBroadPhase<Aabb3, u32, [KdSlot<Aabb3>; C], [KdRecord<u32>; 4 * C]>;
        static KD: ConstStaticCell<K> = ConstStaticCell::new(K::new(
            [KdSlot::EMPTY; C],
            [KdRecord::EMPTY; 4 * C],
            [KdRecord::EMPTY; 4 * C],
            KdConfig::DEFAULT,
        ));
        let kd = KD.take();
        for (id, bx) in scene_boxes().iter().enumerate() {
            kd.insert(id as u32, *bx).unwrap();
        }
        broad_pairs(kd);
        defmt::info!("kd-tree stats: {}", kd.stats());
    }
}
