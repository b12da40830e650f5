//! Support for spatium's on-target tests (`tests/*.rs`, run by
//! embedded-test under QEMU): a semihosting [`log::Log`] so that panic
//! messages and failed results reach the runner, and helpers that summarise
//! a structure's pairs for comparison with the brute-force oracle of
//! [`spatium_fw_common`].

#![no_std]

pub use spatium_fw_common::{self as common, PairSet, XorShift32, stack};

use spatium::{BoundingBox, BroadPhase, NeighborSearch, Point};

/// Writes every record to the semihosting stderr (the runner shows a test's
/// output when it fails). Stdout is left to the defmt logger.
struct SemihostingLog;

impl log::Log for SemihostingLog {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        semihosting::eprintln!("[{}] {}", record.level(), record.args());
    }

    fn flush(&self) {}
}

static LOGGER: SemihostingLog = SemihostingLog;

/// Installs the semihosting logger (at `Info`); later calls do nothing.
pub fn init_log() {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }
}

/// The pairs of a neighbour search, summarised; checks along the way that
/// every reported squared distance is the crate's own, strictly within the
/// radius, and that no pair repeats an id.
pub fn search_pairs<P: Point, N: NeighborSearch<P>>(search: &N, positions: &[P]) -> PairSet {
    let r2 = search.radius() * search.radius();
    let mut set = PairSet::EMPTY;
    search.for_each_pair(|i, j, d2| {
        let (a, b) = (positions[i as usize], positions[j as usize]);
        assert!(
            d2 == a.distance_squared(b) || d2 == b.distance_squared(a),
            "pair ({i}, {j}): d2 {d2} is not the distance"
        );
        assert!(d2 < r2, "pair ({i}, {j}): d2 {d2} not below r2 {r2}");
        set.add(i, j);
    });
    assert!(!set.self_pair, "a particle paired with itself");
    set
}

/// Neighbours of every particle through `for_each_neighbor`, summarised as
/// pairs: each unordered pair must come out twice (once from each end), so
/// the summary of `i < j` reports equals the pairs'.
pub fn neighbor_pairs<P: Point, N: NeighborSearch<P>>(search: &N) -> PairSet {
    let mut set = PairSet::EMPTY;
    let mut reverse = PairSet::EMPTY;
    for i in 0..search.len() as u32 {
        search
            .for_each_neighbor(i, |j, _| {
                if i < j {
                    set.add(i, j);
                } else {
                    reverse.add(i, j);
                }
            })
            .unwrap();
    }
    assert_eq!(set, reverse, "neighbour lists are not symmetric");
    set
}

/// The overlapping pairs of a broad phase, summarised.
pub fn broad_pairs<B: BoundingBox, X: BroadPhase<B>>(bp: &mut X) -> PairSet {
    let mut set = PairSet::EMPTY;
    bp.for_each_overlap(|a, b| set.add(a, b)).unwrap();
    assert!(!set.self_pair, "a box paired with itself");
    set
}

/// A broad phase's answer to a box query, summarised as
/// [`common::brute_box_query`] does.
pub fn broad_query<B: BoundingBox, X: BroadPhase<B>>(bp: &mut X, q: &B) -> PairSet {
    let mut set = PairSet::EMPTY;
    bp.query(q, |id| set.add(u32::MAX - 1, id)).unwrap();
    set
}

/// A neighbour search's answer to a point query, summarised as
/// [`common::brute_within`] does.
pub fn search_within<P: Point, N: NeighborSearch<P>>(search: &N, point: P) -> PairSet {
    let mut set = PairSet::EMPTY;
    search
        .for_each_within(point, |j, _| set.add(u32::MAX - 1, j))
        .unwrap();
    set
}
