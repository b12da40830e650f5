//! The stack measurements: each main public operation of each structure,
//! on a scene of a realistic firmware size, measured by [`stack::measure`]
//! and given a documented bound. Shared by the on-target test (which
//! asserts the bounds) and the `stack-report` binary (which prints the
//! table); call [`run`] once per boot (its structures are `static`s taken
//! once).
//!
//! The bounds were chosen from the figures measured under QEMU (mps2-an386,
//! `thumbv7em-none-eabihf`, Rust 1.95), one per profile the firmware crates
//! use (the tests' `opt-level = "s"` with debug assertions and overflow
//! checks, and the release binaries' `opt-level = "s"` + LTO): 1.5× the
//! measured figure rounded up to 256 bytes, so that a compiler update does
//! not trip them but a change that doubles an operation's stack does.

use spatium::hhash::{
    HashBucket, HashConfig, HashEntry, HashSlot, HierarchicalHash, MultilevelHash,
};
use spatium::kdtree::{
    Candidates, KdBroadPhase, KdConfig, KdRecord, KdSlot, LinearKdTree, SortAlgo,
};
use spatium::sph::boundary::{Obstacle, Obstacles, Shape};
use spatium::sph::{Fluid, ParticleState, SphParams};
use spatium::uniform::{
    Bucket, BucketHash, BucketParticle, CellRecord, CellSortedHash, Head, LinkedHash,
    LinkedParticle, SortedParticle, TableSlot,
};
use spatium::{
    Aabb3, BoundingBox, BroadPhase, BruteForceBroadPhase, BruteForceNeighbors, BruteSlot,
    HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid, NeighborPair, NeighborSearch, PairCache,
    UpdateStrategy, Vec3,
};
use static_cell::ConstStaticCell;

use crate::stack::{StackUse, measure};
use crate::{XorShift32, boxes3, points3};

/// One measured operation.
#[derive(Clone, Copy, Debug)]
pub struct Figure {
    /// Structure and operation.
    pub name: &'static str,
    /// What it used.
    pub used: StackUse,
    /// The documented bound, in bytes.
    pub bound: usize,
}

impl Figure {
    /// `true` if the operation stayed within its bound (and the window).
    pub fn ok(&self) -> bool {
        !self.used.overflowed_window && self.used.bytes <= self.bound
    }
}

/// Bytes painted below the stack pointer for each measurement.
pub const WINDOW: usize = 32 * 1024;

/// Particles of the neighbour-search scenes.
pub const N: usize = 256;
/// Boxes of the broad-phase scenes.
pub const C: usize = 128;
const R: f32 = 0.12;
const TABLE: usize = 1024;
const HTABLE: usize = 4096;
const POOL: usize = 16 * C + N;
const ARENA: usize = 4 * (729 + 4096);

type Sorted =
    CellSortedHash<Vec3, [TableSlot; TABLE], [SortedParticle<Vec3>; N], [CellRecord<Vec3>; N]>;
type Bucketed = BucketHash<Vec3, [Bucket<16>; TABLE], [BucketParticle<Vec3>; N], 16>;
type Linked = LinkedHash<Vec3, [Head; TABLE], [LinkedParticle<Vec3>; N]>;
type Hhg = HierarchicalHashGrid<Aabb3, [HhgSlot<Aabb3>; C], [HhgRecord<Aabb3>; C], [u32; ARENA]>;
type Kd = KdBroadPhase<Aabb3, u32, [KdSlot<Aabb3>; C], [KdRecord<u32>; 4 * C]>;
type Tree = LinearKdTree<Aabb3, u64, [KdRecord<u64>; 8 * C]>;
type HHash = HierarchicalHash<
    Aabb3,
    [HashSlot<Aabb3>; C],
    [HashBucket; HTABLE],
    [HashEntry; POOL],
    [Vec3; N],
>;
type MHash =
    MultilevelHash<Aabb3, [HashSlot<Aabb3>; C], [HashBucket; HTABLE], [HashEntry; POOL], [Vec3; N]>;

static SORTED: ConstStaticCell<Sorted> = ConstStaticCell::new(Sorted::new(
    [TableSlot::EMPTY; TABLE],
    [SortedParticle::EMPTY; N],
    [CellRecord::EMPTY; N],
));
static BUCKETED: ConstStaticCell<Bucketed> = ConstStaticCell::new(Bucketed::new(
    [Bucket::EMPTY; TABLE],
    [BucketParticle::EMPTY; N],
));
static LINKED: ConstStaticCell<Linked> = ConstStaticCell::new(Linked::new(
    [Head::EMPTY; TABLE],
    [LinkedParticle::EMPTY; N],
));
static BRUTE: ConstStaticCell<BruteForceNeighbors<Vec3, [Vec3; N]>> =
    ConstStaticCell::new(BruteForceNeighbors::new([Vec3::ZERO; N]));
static BRUTE_BP: ConstStaticCell<BruteForceBroadPhase<Aabb3, [BruteSlot<Aabb3>; C]>> =
    ConstStaticCell::new(BruteForceBroadPhase::new([BruteSlot::EMPTY; C]));
static HHG: ConstStaticCell<Hhg> = ConstStaticCell::new(Hhg::new(
    [HhgSlot::EMPTY; C],
    [HhgRecord::EMPTY; C],
    [0; ARENA],
    HhgConfig::DEFAULT,
));
static KD: ConstStaticCell<Kd> = ConstStaticCell::new(Kd::new(
    [KdSlot::EMPTY; C],
    [KdRecord::EMPTY; 4 * C],
    [KdRecord::EMPTY; 4 * C],
    KdConfig::DEFAULT,
));
static TREE: ConstStaticCell<Tree> = ConstStaticCell::new(Tree::new(
    [KdRecord::EMPTY; 8 * C],
    [KdRecord::EMPTY; 8 * C],
    KdConfig::DEFAULT,
));
static HHASH: ConstStaticCell<HHash> = ConstStaticCell::new(HHash::new(
    [HashSlot::EMPTY; C],
    [HashBucket::EMPTY; HTABLE],
    [HashEntry::EMPTY; POOL],
    [Vec3::ZERO; N],
    HashConfig::DEFAULT,
));
static MHASH: ConstStaticCell<MHash> = ConstStaticCell::new(MHash::new(
    [HashSlot::EMPTY; C],
    [HashBucket::EMPTY; HTABLE],
    [HashEntry::EMPTY; POOL],
    [Vec3::ZERO; N],
    HashConfig::DEFAULT,
));

/// SPH scene: 288 particles (8 × 6 × 6 at spacing 0.025) in a 0.3 box, a
/// sphere obstacle behind the hierarchical hash grid.
const FLUID_N: usize = 320;
const SPACING: f32 = crate::SPH_SPACING;
const DOMAIN: Aabb3 = crate::SPH_DOMAIN;
/// A valid placeholder until `set_params` (see the SPH test).
const PARAMS: SphParams<Vec3> = crate::seed_params(DOMAIN, SPACING, 1.0);
type SphFluid = Fluid<Vec3, [Vec3; FLUID_N], [ParticleState<Vec3>; FLUID_N]>;
type SphHash = CellSortedHash<
    Vec3,
    [TableSlot; TABLE],
    [SortedParticle<Vec3>; FLUID_N],
    [CellRecord<Vec3>; FLUID_N],
>;
type SphSearch = PairCache<SphHash, [NeighborPair; 24 * FLUID_N]>;
type SphGrid =
    HierarchicalHashGrid<Aabb3, [HhgSlot<Aabb3>; 4], [HhgRecord<Aabb3>; 4], [u32; 729 + 4096]>;
type SphSolids = Obstacles<Vec3, SphGrid, [Obstacle<Vec3>; 4]>;

static FLUID: ConstStaticCell<SphFluid> = ConstStaticCell::new(SphFluid::new(
    [Vec3::ZERO; FLUID_N],
    [ParticleState::EMPTY; FLUID_N],
    PARAMS,
));
static SPH_SEARCH: ConstStaticCell<SphSearch> = ConstStaticCell::new(PairCache::new(
    SphHash::new(
        [TableSlot::EMPTY; TABLE],
        [SortedParticle::EMPTY; FLUID_N],
        [CellRecord::EMPTY; FLUID_N],
    ),
    [NeighborPair::EMPTY; 24 * FLUID_N],
));
static SOLIDS: ConstStaticCell<SphSolids> = ConstStaticCell::new(Obstacles::new(
    [Obstacle::EMPTY; 4],
    HierarchicalHashGrid::new(
        [HhgSlot::EMPTY; 4],
        [HhgRecord::EMPTY; 4],
        [0; 729 + 4096],
        HhgConfig::DEFAULT.with_small_n_threshold(0),
    ),
));

/// A bound per profile: `(tests, release)`. The tests' profile
/// (`opt-level = "s"`, debug assertions and overflow checks, no LTO) and the
/// release profile (`opt-level = "s"`, LTO) inline differently, and stack
/// frames follow inlining: the figures differ by up to 5× (see the kd-tree).
type Bound = (usize, usize);

/// The bound of the profile this was built with.
const fn pick(bound: Bound) -> usize {
    if cfg!(debug_assertions) {
        bound.0
    } else {
        bound.1
    }
}

/// Measures `f` and reports it with its bound.
fn fig<R>(
    report: &mut impl FnMut(Figure),
    name: &'static str,
    bound: Bound,
    f: impl FnOnce() -> R,
) -> R {
    let (r, used) = measure(WINDOW, f);
    report(Figure {
        name,
        used,
        bound: pick(bound),
    });
    r
}

/// A neighbour search's build, pairs, neighbours, point query and CSR.
fn search_ops<S: NeighborSearch<Vec3>>(
    report: &mut impl FnMut(Figure),
    names: [&'static str; 4],
    bounds: [Bound; 4],
    s: &mut S,
    pts: &[Vec3],
) {
    fig(report, names[0], bounds[0], || s.build(pts, R)).unwrap();
    let mut n = 0u32;
    fig(report, names[1], bounds[1], || {
        s.for_each_pair(|_, _, _| n += 1)
    });
    assert!(n > 0);
    fig(report, names[2], bounds[2], || {
        s.for_each_neighbor(7, |_, _| n += 1)?;
        s.for_each_within(Vec3::new(0.5, 0.5, 0.5), |_, _| n += 1)
    })
    .unwrap();
    let mut offsets = [0u32; N + 1];
    let mut indices = [0u32; 8 * N];
    fig(report, names[3], bounds[3], || {
        s.neighbor_lists(&mut offsets, &mut indices)
    })
    .unwrap();
}

/// A broad phase's insert (every box), update (every box), pairs and query.
fn broad_ops<X: BroadPhase<Aabb3>>(
    report: &mut impl FnMut(Figure),
    names: [&'static str; 4],
    bounds: [Bound; 4],
    bp: &mut X,
    boxes: &mut [Aabb3; C],
) {
    fig(report, names[0], bounds[0], || {
        boxes
            .iter()
            .enumerate()
            .try_for_each(|(id, b)| bp.insert(id as u32, *b))
    })
    .unwrap();
    for b in boxes.iter_mut() {
        b.min.y += 0.4;
        b.max.y += 0.4;
    }
    fig(report, names[1], bounds[1], || {
        boxes
            .iter()
            .enumerate()
            .try_for_each(|(id, b)| bp.update(id as u32, *b))
    })
    .unwrap();
    let mut n = 0u32;
    fig(report, names[2], bounds[2], || {
        bp.for_each_overlap(|_, _| n += 1)
    })
    .unwrap();
    assert!(n > 0);
    let q = Aabb3::new(Vec3::new(2.0, 2.0, 2.0), Vec3::new(5.0, 6.0, 4.0)).unwrap();
    fig(report, names[3], bounds[3], || bp.query(&q, |_| n += 1)).unwrap();
}

/// Measures every operation and calls `report` with each figure, in order.
/// Call once per boot.
pub fn run(mut report: impl FnMut(Figure)) {
    let r = &mut report;
    let mut pts = [Vec3::ZERO; N];
    points3(&mut XorShift32::new(1), 1.0, &mut pts);
    let mut boxes = [Aabb3::ZERO; C];
    boxes3(&mut XorShift32::new(2), 10.0, 0.2, 1.6, &mut boxes);

    search_ops(
        r,
        [
            "CellSortedHash build",
            "CellSortedHash for_each_pair",
            "CellSortedHash neighbour/within query",
            "CellSortedHash neighbor_lists (CSR)",
        ],
        [(768, 768), (2816, 512), (512, 512), (1280, 1280)],
        SORTED.take(),
        &pts,
    );
    search_ops(
        r,
        [
            "BucketHash build",
            "BucketHash for_each_pair",
            "BucketHash neighbour/within query",
            "BucketHash neighbor_lists (CSR)",
        ],
        [(512, 512), (512, 256), (512, 512), (512, 512)],
        BUCKETED.take(),
        &pts,
    );
    let linked = LINKED.take();
    search_ops(
        r,
        [
            "LinkedHash build",
            "LinkedHash for_each_pair",
            "LinkedHash neighbour/within query",
            "LinkedHash neighbor_lists (CSR)",
        ],
        [(768, 512), (256, 256), (512, 256), (256, 256)],
        linked,
        &pts,
    );
    for p in pts.iter_mut() {
        p.x += 0.03;
    }
    fig(r, "LinkedHash update", (512, 256), || linked.update(&pts)).unwrap();
    search_ops(
        r,
        [
            "BruteForceNeighbors build",
            "BruteForceNeighbors for_each_pair",
            "BruteForceNeighbors neighbour/within query",
            "BruteForceNeighbors neighbor_lists (CSR)",
        ],
        [(256, 256), (256, 256), (256, 256), (256, 256)],
        BRUTE.take(),
        &pts,
    );

    let mut b = boxes;
    broad_ops(
        r,
        [
            "BruteForceBroadPhase insert",
            "BruteForceBroadPhase update",
            "BruteForceBroadPhase for_each_pair",
            "BruteForceBroadPhase query",
        ],
        [(256, 256), (256, 256), (256, 256), (256, 256)],
        BRUTE_BP.take(),
        &mut b,
    );
    let hhg = HHG.take();
    let mut b = boxes;
    broad_ops(
        r,
        [
            "HierarchicalHashGrid insert",
            "HierarchicalHashGrid update",
            "HierarchicalHashGrid for_each_pair",
            "HierarchicalHashGrid query",
        ],
        [(1024, 1024), (512, 256), (768, 512), (256, 256)],
        hhg,
        &mut b,
    );
    for x in b.iter_mut() {
        x.min.x += 0.7;
        x.max.x += 0.7;
    }
    fig(r, "HierarchicalHashGrid update_all", (512, 256), || {
        hhg.update_all(&b, UpdateStrategy::Incremental)
    })
    .unwrap();
    let mut b = boxes;
    broad_ops(
        r,
        [
            "KdBroadPhase<u32> insert",
            "KdBroadPhase<u32> update",
            "KdBroadPhase<u32> for_each_pair (rebuild)",
            "KdBroadPhase<u32> query",
        ],
        [(256, 256), (256, 256), (4608, 5120), (768, 768)],
        KD.take(),
        &mut b,
    );
    let tree = TREE.take();
    fig(r, "LinearKdTree<u64> build", (4864, 4608), || {
        tree.build(&boxes)
    })
    .unwrap();
    let mut n = 0u32;
    fig(
        r,
        "LinearKdTree<u64> for_each_candidate_pair",
        (1024, 1024),
        || tree.for_each_candidate_pair(&boxes, Candidates::Exact, |_, _| n += 1),
    )
    .unwrap();
    assert!(n > 0);
    // The comparison sort instead of the radix sort: no histograms on the
    // stack, but not a smaller stack in every profile (8.2 KiB with LTO).
    tree.set_config(KdConfig::DEFAULT.with_sort(SortAlgo::Comparison));
    fig(
        r,
        "LinearKdTree<u64> build (SortAlgo::Comparison)",
        (3840, 9728),
        || tree.build(&boxes),
    )
    .unwrap();

    let config = HashConfig::from_sizes(R, boxes.iter().map(|b| b.longest_edge())).unwrap();
    let hh = HHASH.take();
    hh.set_config(config).unwrap();
    let mut b = boxes;
    broad_ops(
        r,
        [
            "HierarchicalHash insert",
            "HierarchicalHash update",
            "HierarchicalHash for_each_pair (boxes)",
            "HierarchicalHash query",
        ],
        [(512, 512), (512, 512), (2304, 2304), (2304, 2304)],
        hh,
        &mut b,
    );
    fig(r, "HierarchicalHash build (particles)", (512, 512), || {
        NeighborSearch::build(hh, &pts, R)
    })
    .unwrap();
    fig(
        r,
        "HierarchicalHash for_each_pair (particles)",
        (2560, 2304),
        || NeighborSearch::for_each_pair(hh, |_, _, _| n += 1),
    );
    let mh = MHASH.take();
    mh.set_config(config).unwrap();
    let mut b = boxes;
    broad_ops(
        r,
        [
            "MultilevelHash insert",
            "MultilevelHash update",
            "MultilevelHash for_each_pair (boxes)",
            "MultilevelHash query",
        ],
        [(512, 512), (512, 512), (768, 768), (512, 512)],
        mh,
        &mut b,
    );

    let fluid = FLUID.take();
    let search = SPH_SEARCH.take();
    let solids = SOLIDS.take();
    fluid
        .set_params(SphParams::seed(DOMAIN, SPACING).unwrap())
        .unwrap();
    let block = Aabb3::new(Vec3::new(0.0, 0.1, 0.0), Vec3::new(0.2, 0.25, 0.15)).unwrap();
    fluid.fill_block(block, SPACING, Vec3::ZERO).unwrap();
    solids
        .add(Obstacle::fixed(Shape::Sphere {
            center: Vec3::new(0.1, 0.12, 0.075),
            radius: 0.04,
        }))
        .unwrap();
    fig(
        r,
        "PairCache<CellSortedHash> build (SPH scene)",
        (2816, 3072),
        || search.build(fluid.positions(), 2.0 * SPACING),
    )
    .unwrap();
    fig(
        r,
        "sph::Fluid::step (PairCache + Obstacles<HHG>)",
        (3328, 3584),
        || fluid.step(search, solids, &mut ()),
    )
    .unwrap();
}
