//! Periodic domains under libFuzzer. An input is a [`Case`]:
//!
//! `Search` builds `spatium::uniform::DenseGrid` over the box `[0, 8)` (3D
//! or 2D, any mask of periodic axes) from points on a half-unit lattice
//! (faces included, beyond them on the periodic axes) or raw `f32` bits,
//! at radii from 0.3 to 2.9 (too long for the period included), and after
//! every build compares every pair and its `d²` bit for bit, every
//! particle's neighbours and points within with brute force made periodic;
//! a refused build must leave the previous answers.
//!
//! `Broad` drives `spatium::PeriodicBroadPhase` over an inner
//! broad phase of the run-time registry (3D or 2D, any mask of periodic
//! axes) with an `arbitrary` sequence of operations
//! (`spatium_host_tests::periodic_model::PeriodicOp`: inserts, updates,
//! `update_many` batches, removals, queries, pairs, clears; boxes too long
//! for the period, non-finite, inverted, far away; duplicate and
//! out-of-range ids), judged after every operation by the periodic
//! brute-force oracle (`PeriodicOracle`), exactly as the property tests
//! (`periodic_broad.rs`) judge theirs; half the inputs give the adapter a
//! small image pool (0 to 7 entries), whose refusals (`CapacityExceeded`)
//! must change nothing. The same operations then run on
//! `GridBroadPhase`'s own periodic mode (`set_domain`), judged alike.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use spatium::uniform::{DenseGrid, SortedParticle};
use spatium::{Aabb2, Aabb3, BruteForceNeighbors, NeighborSearch, PeriodicBox, Point, Vec2, Vec3};
use spatium::{PeriodicBroadPhase, PeriodicImage, PeriodicSlot};
use spatium_host::boxes::TestBox;
use spatium_host::runtime::{BroadKind, Named};
use spatium_host_tests::periodic_model::{self, CAPACITY, PeriodicOp, PeriodicOracle};
use spatium_host_tests::registry;

/// At most this many operations per input.
const MAX_OPS: usize = 64;

/// What one input exercises.
#[derive(Arbitrary, Debug)]
enum Case {
    /// The periodic broad phase: inner kind (index into
    /// `BroadKind::NAMES`), 3D or 2D, the mask of periodic axes, the image
    /// pool (even: room for every id at a corner; odd: `pool / 2 % 8`
    /// entries), and the operations.
    Broad {
        kind: u8,
        three_d: bool,
        mask: u8,
        pool: u8,
        ops: Vec<PeriodicOp>,
    },
    /// The dense periodic grid: 3D or 2D, the mask, the builds.
    Search {
        three_d: bool,
        mask: u8,
        builds: Vec<Build>,
    },
}

/// One build and a few queries.
#[derive(Arbitrary, Debug)]
struct Build {
    points: Vec<Coords>,
    radius: u8,
    queries: Vec<Coords>,
}

/// A point: on the half-unit lattice from -2 to 10, or raw bits.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Coords {
    Lattice([i8; 3]),
    Raw([u32; 3]),
}

impl Coords {
    fn at<P: Point>(self) -> P {
        match self {
            Coords::Lattice(c) => P::from_fn(|k| f32::from(c[k] % 25 - 4) * 0.5),
            Coords::Raw(b) => P::from_fn(|k| f32::from_bits(b[k])),
        }
    }
}

/// At most this many particles per build (more are refused, and checked).
const PARTICLES: usize = 48;

fn pairs<P: Point, S: NeighborSearch<P>>(s: &S) -> Vec<(u32, u32, u32)> {
    let mut v = Vec::new();
    s.for_each_pair(|i, j, d2| v.push((i.min(j), i.max(j), d2.to_bits())));
    v.sort_unstable();
    v
}

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v
}

fn search<P: Point>(mask: u8, builds: &[Build]) {
    let mask = mask & ((1u8 << P::DIM) - 1);
    let Ok(domain) = PeriodicBox::new(P::ZERO, P::from_fn(|_| 8.0), mask) else {
        return;
    };
    type Grid<P> = DenseGrid<P, Vec<SortedParticle<P>>, Vec<u32>, Vec<u32>>;
    let cells = Grid::<P>::cells_needed(&domain, 0.3).unwrap_or(1);
    let mut g: Grid<P> = DenseGrid::new(
        domain,
        vec![SortedParticle::EMPTY; PARTICLES],
        vec![0; PARTICLES],
        vec![0; cells],
    );
    let mut b = BruteForceNeighbors::new(vec![P::ZERO; 4 * PARTICLES]);
    b.set_periodic(domain);
    for build in builds.iter().take(8) {
        let pts: Vec<P> = build
            .points
            .iter()
            .take(2 * PARTICLES)
            .map(|c| c.at())
            .collect();
        let radius = 0.3 + f32::from(build.radius % 27) * 0.1;
        match g.build(&pts, radius) {
            Ok(()) => b
                .build(&pts, radius)
                .expect("the oracle takes what the grid takes"),
            Err(e) => {
                // The refusal names a real cause.
                let ok = match e {
                    spatium::Error::CapacityExceeded { .. } => pts.len() > PARTICLES,
                    spatium::Error::NonFinite => pts.iter().any(|p| !p.is_finite()),
                    spatium::Error::OutOfRange => pts.iter().any(|p| {
                        (0..P::DIM).any(|k| {
                            !domain.is_periodic_axis(k) && !(0.0..=8.0).contains(&p.coord(k))
                        })
                    }),
                    spatium::Error::PeriodTooShort { axis } => {
                        domain.is_periodic_axis(usize::from(axis))
                    }
                    _ => false,
                };
                assert!(ok, "{e} for {pts:?} at {radius}");
            }
        }
        assert_eq!(g.len(), b.len());
        assert_eq!(pairs(&g), pairs(&b));
        for id in 0..g.len() as u32 {
            let mut x = Vec::new();
            let mut y = Vec::new();
            g.for_each_neighbor(id, |j, _| x.push(j)).expect("stored");
            b.for_each_neighbor(id, |j, _| y.push(j)).expect("stored");
            assert_eq!(sorted(x), sorted(y), "neighbours of {id}");
            assert_eq!(g.position(id), b.position(id));
        }
        for q in build.queries.iter().take(8) {
            let p: P = q.at();
            let mut x = Vec::new();
            let mut y = Vec::new();
            let rg = g.for_each_within(p, |j, _| x.push(j));
            let rb = b.for_each_within(p, |j, _| y.push(j));
            assert_eq!(rg, rb);
            assert_eq!(sorted(x), sorted(y), "within {p:?}");
        }
    }
}

fn broad<B: TestBox>(kind: BroadKind, mask: u8, pool: u8, ops: &[PeriodicOp]) {
    let domain = periodic_model::domain::<B::Point>(mask);
    // Half the inputs: a pool for every id at a corner (never full); the
    // others: 0 to 7 entries (full pools refuse crossing boxes).
    let pool = if pool & 1 == 0 {
        CAPACITY * ((1 << B::Point::DIM) - 1)
    } else {
        usize::from(pool >> 1) % 8
    };
    let inner = registry::broad::<B>(kind, CAPACITY + pool);
    let Ok(mut t) = PeriodicBroadPhase::new(
        inner,
        domain,
        vec![PeriodicSlot::<B>::EMPTY; CAPACITY],
        vec![PeriodicImage::EMPTY; pool],
    ) else {
        panic!("{}: construction refused", registry::broad_name::<B>(kind));
    };
    let mut o = PeriodicOracle::<B>::new(domain, CAPACITY);
    for (k, op) in ops.iter().take(MAX_OPS).enumerate() {
        if let Err(e) = o.apply(&mut t, op) {
            panic!(
                "{} mask {mask:#b} op {k}: {e}",
                registry::broad_name::<B>(kind)
            );
        }
    }
    // The same operations on the grid broad phase's own periodic mode.
    let mut g = spatium_host::make::grid_bp::<B>(CAPACITY);
    g.set_domain(domain)
        .expect("an empty grid takes any domain");
    let mut o = PeriodicOracle::<B>::new(domain, CAPACITY);
    for (k, op) in ops.iter().take(MAX_OPS).enumerate() {
        if let Err(e) = o.apply(&mut g, op) {
            panic!("native periodic grid mask {mask:#b} op {k}: {e}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(case) = Case::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    match case {
        Case::Search {
            three_d,
            mask,
            builds,
        } => {
            if three_d {
                search::<Vec3>(mask, &builds);
            } else {
                search::<Vec2>(mask, &builds);
            }
        }
        Case::Broad {
            kind,
            three_d,
            mask,
            pool,
            ops,
        } => {
            let kind = BroadKind::NAMES[usize::from(kind) % BroadKind::NAMES.len()].1;
            if three_d {
                broad::<Aabb3>(kind, mask, pool, &ops);
            } else {
                broad::<Aabb2>(kind, mask, pool, &ops);
            }
        }
    }
});
