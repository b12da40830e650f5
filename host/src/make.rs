//! `Vec`-backed constructors: the runtime-sized form of every structure.

use spatium::uniform::{
    Bucket, BucketHash, BucketParticle, CellRecord, CellSortedHash, DenseGrid, GridBroadPhase,
    Head, LinkedHash, LinkedParticle, SortedParticle, TableSlot,
};
use spatium::{
    BoundingBox, BruteSlot, Error, HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid,
    PeriodicBox, Point,
};

/// Cell-sorted hash over `Vec`s.
pub type VecCellSorted<P> =
    CellSortedHash<P, Vec<TableSlot>, Vec<SortedParticle<P>>, Vec<CellRecord<P>>>;
/// Bucket hash over `Vec`s.
pub type VecBucket<P, const K: usize> = BucketHash<P, Vec<Bucket<K>>, Vec<BucketParticle<P>>, K>;
/// Linked hash over `Vec`s.
pub type VecLinked<P> = LinkedHash<P, Vec<Head>, Vec<LinkedParticle<P>>>;

/// A cell-sorted hash for `capacity` particles and `table` slots.
pub fn cell_sorted<P: Point>(capacity: usize, table: usize) -> VecCellSorted<P> {
    CellSortedHash::new(
        vec![TableSlot::EMPTY; table],
        vec![SortedParticle::EMPTY; capacity],
        vec![CellRecord::EMPTY; capacity],
    )
}

/// A bucket hash for `capacity` particles and `table` buckets of `K`.
pub fn bucketed<P: Point, const K: usize>(capacity: usize, table: usize) -> VecBucket<P, K> {
    BucketHash::new(
        vec![Bucket::EMPTY; table],
        vec![BucketParticle::EMPTY; capacity],
    )
}

/// A linked hash for `capacity` particles and `table` heads.
pub fn linked<P: Point>(capacity: usize, table: usize) -> VecLinked<P> {
    LinkedHash::new(
        vec![Head::EMPTY; table],
        vec![LinkedParticle::EMPTY; capacity],
    )
}

/// Dense (periodic) grid over `Vec`s.
pub type VecDense<P> = DenseGrid<P, Vec<SortedParticle<P>>, Vec<u32>, Vec<u32>>;

/// A dense grid over `domain` for `capacity` particles, with cell starts
/// for searches within `radius` (or any larger radius).
///
/// # Errors
/// [`DenseGrid::cells_needed`]'s.
pub fn dense<P: Point>(
    domain: PeriodicBox<P>,
    capacity: usize,
    radius: f32,
) -> Result<VecDense<P>, Error> {
    let cells = VecDense::<P>::cells_needed(&domain, radius)?;
    Ok(DenseGrid::new(
        domain,
        vec![SortedParticle::EMPTY; capacity],
        vec![0; capacity],
        vec![0; cells],
    ))
}

/// Slots for a brute-force broad phase of `capacity` ids.
pub fn brute_slots<B: BoundingBox>(capacity: usize) -> Vec<BruteSlot<B>> {
    vec![BruteSlot::EMPTY; capacity]
}

/// Grid broad phase over `Vec`s.
pub type VecGridBp<B> = GridBroadPhase<B, Vec<BruteSlot<B>>, Vec<u32>, Vec<u32>>;

/// A grid broad phase for `capacity` ids, every one storable, with one
/// cell per box.
pub fn grid_bp<B: BoundingBox>(capacity: usize) -> VecGridBp<B> {
    GridBroadPhase::new(
        brute_slots(capacity),
        vec![0; (2 * B::Point::DIM + 2) * capacity],
        vec![0; capacity.max(1)],
    )
}

/// Hierarchical hash grid over `Vec`s.
pub type VecHhg<B> = HierarchicalHashGrid<B, Vec<HhgSlot<B>>, Vec<HhgRecord<B>>, Vec<u32>>;

/// A hierarchical hash grid for `capacity` ids with an arena of `arena`
/// words.
pub fn hhg<B: BoundingBox>(capacity: usize, arena: usize, config: HhgConfig) -> VecHhg<B> {
    HierarchicalHashGrid::new(
        vec![HhgSlot::EMPTY; capacity],
        vec![HhgRecord::EMPTY; capacity],
        vec![0; arena],
        config,
    )
}

/// Hierarchical or multilevel hashing over `Vec`s.
pub type VecClassHash<S, B> = spatium::hhash::ClassHash<
    S,
    B,
    Vec<spatium::hhash::HashSlot<B>>,
    Vec<spatium::hhash::HashBucket>,
    Vec<spatium::hhash::HashEntry>,
    Vec<<B as BoundingBox>::Point>,
>;

/// Hierarchical or multilevel hashing for `capacity` object ids, `table`
/// buckets, `entries` pool entries and `particles` particles.
pub fn class_hash<S: spatium::hhash::Scheme, B: BoundingBox>(
    capacity: usize,
    table: usize,
    entries: usize,
    particles: usize,
    config: spatium::hhash::HashConfig<B::Point>,
) -> VecClassHash<S, B> {
    use spatium::hhash::{ClassHash, HashBucket, HashEntry, HashSlot};
    ClassHash::new(
        vec![HashSlot::EMPTY; capacity],
        vec![HashBucket::EMPTY; table],
        vec![HashEntry::EMPTY; entries],
        vec![B::Point::default(); particles],
        config,
    )
}
