//! `PeriodicBroadPhase` over every broad-phase kind of the run-time
//! registry, against the periodic brute force
//! (`spatium_host_tests::periodic_model`):
//!
//! * every box scenario (`box_scenarios`, 3D and 2D) placed in a domain
//!   slightly smaller than the scene, so that many boxes lie beyond the
//!   upper faces or cross them, periodic along no axis, x, x|z (3D) and all
//!   axes: all pairs (sequential, parallel and filtered), queries, and the
//!   same after moves (`update` and `update_many`), removals and
//!   re-insertions;
//! * random operation sequences (inserts, updates, batches, removals,
//!   queries, clears; boxes too long for the period, non-finite, inverted,
//!   far away; duplicate and out-of-range ids), judged after every step,
//!   failed operations included (nothing may change).

use proptest::prelude::*;
use spatium::exec::Padded;
use spatium::{
    Aabb2, Aabb3, BoundingBox, BroadPhase, Error, PeriodicBox, PeriodicBroadPhase, PeriodicImage,
    PeriodicSlot, Point, Validate,
};
use spatium_host::boxes::TestBox;
use spatium_host::make::{self, VecGridBp};
use spatium_host::par::HostExec;
use spatium_host::rng::Rng;
use spatium_host::runtime::AnyBroad;
use spatium_host::scenarios::{BoxScenario, box_scenarios};
use spatium_host_tests::model::{check_pairs, seeded_groups};
use spatium_host_tests::periodic_model::{self, CAPACITY, PeriodicOp, PeriodicOracle, images};
use spatium_host_tests::registry;

type Adapter<B> = PeriodicBroadPhase<B, AnyBroad<B>, Vec<PeriodicSlot<B>>, Vec<PeriodicImage>>;

fn adapter<B: TestBox>(
    kind: spatium_host::runtime::BroadKind,
    domain: PeriodicBox<B::Point>,
    cap: usize,
) -> Adapter<B> {
    // A pool for every id at a corner: never full.
    adapter_with_pool(kind, domain, cap, cap * ((1 << B::Point::DIM) - 1))
}

fn adapter_with_pool<B: TestBox>(
    kind: spatium_host::runtime::BroadKind,
    domain: PeriodicBox<B::Point>,
    cap: usize,
    pool: usize,
) -> Adapter<B> {
    let inner = registry::broad::<B>(kind, cap + pool);
    PeriodicBroadPhase::new(
        inner,
        domain,
        vec![PeriodicSlot::EMPTY; cap],
        vec![PeriodicImage::EMPTY; pool],
    )
    .unwrap()
}

/// The scene's domain shrunk to 90 % (but at least 2.2 × the longest box
/// edge per axis, so no box is refused), shifted by a quarter of a box so
/// that the faces cut through boxes.
fn domain_for<B: BoundingBox>(sc: &BoxScenario<B>, mask: u8) -> PeriodicBox<B::Point> {
    let d = B::Point::DIM;
    let longest = |k: usize| {
        sc.boxes
            .iter()
            .map(|b| b.max().coord(k) - b.min().coord(k))
            .fold(0.0f32, f32::max)
    };
    let lo = B::Point::from_fn(|_| 0.25);
    let hi = B::Point::from_fn(|k| 0.25 + (0.9 * sc.extent.coord(k)).max(2.2 * longest(k)));
    PeriodicBox::new(lo, hi, mask & ((1 << d) - 1)).unwrap()
}

fn masks(dim: usize) -> &'static [u8] {
    if dim == 3 {
        &[0, 0b001, 0b101, 0b111]
    } else {
        &[0, 0b01, 0b11]
    }
}

fn check_all<B: TestBox, T: BroadPhase<B> + Validate + Send + Sync>(
    name: &str,
    t: &mut T,
    o: &PeriodicOracle<B>,
    queries: &[B],
) -> Result<(), String> {
    o.check(t).map_err(|e| format!("{name}: {e}"))?;
    let want = o.pairs()?;
    // Parallel form on two threads.
    let exec = HostExec::new(2);
    let mut sinks = vec![Padded(Vec::new()); t.overlap_tasks()];
    t.par_for_each_overlap(&exec, &mut sinks, |s, a, b| s.push((a, b)))
        .map_err(|e| format!("{name}: par: {e}"))?;
    let raw: Vec<(u32, u32)> = sinks.into_iter().flat_map(|s| s.0).collect();
    check_pairs(&raw, &want).map_err(|e| format!("{name}: par: {e}"))?;
    // Filtered form.
    let (groups, with) = seeded_groups(7, t.capacity());
    let mut raw = Vec::new();
    t.for_each_overlap_filtered(&groups, |a, b| raw.push((a, b)))
        .map_err(|e| format!("{name}: filtered: {e}"))?;
    let fwant: Vec<_> = want
        .iter()
        .copied()
        .filter(|&(a, b)| groups[a as usize].interacts(groups[b as usize]))
        .collect();
    check_pairs(&raw, &fwant).map_err(|e| format!("{name}: filtered: {e}"))?;
    for q in queries {
        o.check_query(t, q).map_err(|e| format!("{name}: {e}"))?;
        let mut got = Vec::new();
        let r = t.query_filtered(q, with, &groups, |id| got.push(id));
        let want = match o.hits(q)? {
            Err(e) if r == Err(e) => continue,
            Err(e) => return Err(format!("{name}: query_filtered: {r:?}, want {e:?}")),
            Ok(w) => w,
        };
        r.map_err(|e| format!("{name}: query_filtered: {e}"))?;
        got.sort_unstable();
        let want: Vec<u32> = want
            .into_iter()
            .filter(|&i| groups[i as usize].interacts(with))
            .collect();
        if got != want {
            return Err(format!(
                "{name}: query_filtered {q:?}: {got:?}, want {want:?}"
            ));
        }
    }
    Ok(())
}

/// The native periodic grid (`GridBroadPhase::set_domain`) for `n` ids.
fn native_grid<B: TestBox>(domain: PeriodicBox<B::Point>, n: usize) -> VecGridBp<B> {
    let mut g = make::grid_bp::<B>(n);
    g.set_domain(domain).unwrap();
    g
}

fn differential<B: TestBox>(n: usize, seed: u64) {
    let dim = B::Point::DIM;
    let mut crossing_seen = 0usize;
    for mut sc in box_scenarios::<B>(n, seed) {
        for &mask in masks(dim) {
            let domain = domain_for(&sc, mask);
            for kind in registry::broad_kinds() {
                let name = format!(
                    "{} {} mask {mask:#b}",
                    sc.name,
                    registry::broad_name::<B>(kind)
                );
                let mut t = adapter::<B>(kind, domain, n);
                crossing_seen += scenario(&name, &mut t, &mut sc, domain, n, seed);
                t.clear();
                assert_eq!((t.box_count(), t.image_count()), (0, 0));
                t.validate().unwrap();
            }
            let name = format!("{} native periodic grid mask {mask:#b}", sc.name);
            let mut g = native_grid::<B>(domain, n);
            crossing_seen += scenario(&name, &mut g, &mut sc, domain, n, seed);
            g.clear();
            assert_eq!(g.box_count(), 0);
            g.validate().unwrap();
        }
    }
    assert!(crossing_seen > 0, "no box crossed a face");
}

/// One scene on one structure, judged by the oracle: the boxes inserted,
/// pairs (sequential, parallel, filtered) and queries, then three moves
/// with removals and re-insertions; the scene's boxes are put back.
/// Returns how many stored boxes crossed a face after the insert.
fn scenario<B: TestBox, T: BroadPhase<B> + Validate + Send + Sync>(
    name: &str,
    t: &mut T,
    sc: &mut BoxScenario<B>,
    domain: PeriodicBox<B::Point>,
    n: usize,
    seed: u64,
) -> usize {
    let mut o = PeriodicOracle::<B>::new(domain, n);
    for (i, b) in sc.boxes.iter().enumerate() {
        let im = o.predict_insert(i as u32, b).unwrap();
        t.insert(i as u32, *b)
            .unwrap_or_else(|e| panic!("{name}: insert {i}: {e}"));
        o.slots[i] = Some((*b, im));
    }
    let crossing = o
        .slots
        .iter()
        .flatten()
        .filter(|(_, im)| im.shifted.iter().any(Option::is_some))
        .count();
    // Queries: some boxes grown by a bit, and cubes at the corners.
    let mut rng = Rng::new(seed ^ 0x51);
    let mut queries: Vec<B> = sc
        .boxes
        .iter()
        .step_by(17)
        .map(|b| {
            let g = B::Point::from_fn(|_| 0.3);
            B::try_new(b.min() - g, b.max() + g).unwrap()
        })
        .collect();
    for _ in 0..8 {
        let c = B::Point::from_fn(|k| {
            let (l, h) = (domain.lo().coord(k), domain.hi().coord(k));
            if rng.below(2) == 0 {
                l + rng.range(-1.0, 0.5)
            } else {
                h + rng.range(-0.5, 1.0)
            }
        });
        let edge =
            B::Point::from_fn(|k| 1.5f32.min(0.4 * (domain.hi().coord(k) - domain.lo().coord(k))));
        queries.push(B::try_new(c, c + edge).unwrap());
    }
    check_all(name, t, &o, &queries).unwrap_or_else(|e| panic!("{e}"));
    // Moves: three steps, alternately update and update_many; a few
    // removals and re-insertions.
    let start = sc.boxes.clone();
    for step in 0..3 {
        sc.step();
        if step % 2 == 0 {
            for (i, b) in sc.boxes.iter().enumerate() {
                t.update(i as u32, *b)
                    .unwrap_or_else(|e| panic!("{name}: update {i}: {e}"));
            }
        } else {
            let list: Vec<(u32, B)> = sc
                .boxes
                .iter()
                .enumerate()
                .map(|(i, b)| (i as u32, *b))
                .collect();
            t.update_many(&list)
                .unwrap_or_else(|e| panic!("{name}: update_many: {e}"));
        }
        for (i, b) in sc.boxes.iter().enumerate() {
            o.slots[i] = Some((*b, images(&domain, b).unwrap()));
        }
        for _ in 0..n / 10 {
            let i = rng.below(n) as u32;
            if o.slots[i as usize].is_none() {
                assert_eq!(t.remove(i), Err(Error::UnknownId { id: i }), "{name}");
                continue;
            }
            let got = t.remove(i).unwrap();
            assert_eq!(got, sc.boxes[i as usize], "{name}");
            o.slots[i as usize] = None;
        }
        check_all(name, t, &o, &queries).unwrap_or_else(|e| panic!("{e}"));
        for (i, b) in sc.boxes.iter().enumerate() {
            if o.slots[i].is_none() {
                t.insert(i as u32, *b).unwrap();
                o.slots[i] = Some((*b, images(&domain, b).unwrap()));
            }
        }
    }
    check_all(name, t, &o, &queries).unwrap_or_else(|e| panic!("{e}"));
    sc.boxes = start;
    crossing
}

#[test]
fn differential_3d() {
    differential::<Aabb3>(300, 11);
}

#[test]
fn differential_2d() {
    differential::<Aabb2>(300, 12);
}

/// The native periodic grid past the size where its parallel form sorts
/// in tasks (`par_prepare`, 1 024 boxes): every box scenario at 3 000
/// boxes, periodic along x and along every axis, pairs on 1, 2 and 3
/// workers against the periodic model, after an insert and after a move.
fn native_grid_in_tasks<B: TestBox>(seed: u64) {
    let n = 3000;
    for mut sc in box_scenarios::<B>(n, seed) {
        for &mask in &[0b001u8, 0b111] {
            let domain = domain_for(&sc, mask);
            let name = format!("{} native periodic grid mask {mask:#b}", sc.name);
            let mut g = native_grid::<B>(domain, n);
            let mut o = PeriodicOracle::<B>::new(domain, n);
            for (i, b) in sc.boxes.iter().enumerate() {
                g.insert(i as u32, *b).unwrap();
                o.slots[i] = Some((*b, images(&domain, b).unwrap()));
            }
            for round in 0..2 {
                let want = o.pairs().unwrap();
                for workers in [1, 2, 3] {
                    let exec = HostExec::new(workers);
                    let mut sinks = vec![Padded(Vec::new()); g.overlap_tasks()];
                    g.par_for_each_overlap(&exec, &mut sinks, |s, a, b| s.push((a, b)))
                        .unwrap();
                    let raw: Vec<(u32, u32)> = sinks.into_iter().flat_map(|s| s.0).collect();
                    check_pairs(&raw, &want)
                        .unwrap_or_else(|e| panic!("{name} round {round} {workers}: {e}"));
                }
                sc.step();
                g.update_all(&sc.boxes).unwrap();
                for (i, b) in sc.boxes.iter().enumerate() {
                    o.slots[i] = Some((*b, images(&domain, b).unwrap()));
                }
            }
        }
    }
}

#[test]
fn native_grid_in_tasks_3d() {
    native_grid_in_tasks::<Aabb3>(21);
}

#[test]
fn native_grid_in_tasks_2d() {
    native_grid_in_tasks::<Aabb2>(22);
}

#[test]
fn construction_checks_the_inner_capacity() {
    let domain = periodic_model::domain::<spatium::Vec3>(0b111);
    let kind = spatium_host::runtime::BroadKind::Brute;
    let slots = || vec![PeriodicSlot::<Aabb3>::EMPTY; 10];
    let pool = || vec![PeriodicImage::EMPTY; 5];
    let small = registry::broad::<Aabb3>(kind, 10 + 5 - 1);
    assert_eq!(
        PeriodicBroadPhase::new(small, domain, slots(), pool()).err(),
        Some(Error::InvalidStorage {
            what: "inner capacity below slots + image pool"
        })
    );
    let mut full = registry::broad::<Aabb3>(kind, 15);
    full.insert(3, Aabb3::raw([0.0; 3], [1.0; 3])).unwrap();
    assert_eq!(
        PeriodicBroadPhase::new(full, domain, slots(), pool()).err(),
        Some(Error::InvalidStorage {
            what: "inner broad phase not empty"
        })
    );
}

/// `ops` on the adapter over every inner kind, with an image pool of
/// `pool` entries (`None`: room for every id at a corner), judged by the
/// oracle (a full pool's `CapacityExceeded` is accepted where success is
/// predicted, provided nothing changed).
fn run_ops<B: TestBox>(
    mask: u8,
    ops: &[PeriodicOp],
    pool: Option<usize>,
) -> Result<(), TestCaseError> {
    let domain = periodic_model::domain::<B::Point>(mask);
    for kind in registry::broad_kinds() {
        let mut t = match pool {
            None => adapter::<B>(kind, domain, CAPACITY),
            Some(p) => adapter_with_pool::<B>(kind, domain, CAPACITY, p),
        };
        let mut o = PeriodicOracle::<B>::new(domain, CAPACITY);
        for (k, op) in ops.iter().enumerate() {
            o.apply(&mut t, op).map_err(|e| {
                TestCaseError::fail(format!("{} op {k}: {e}", registry::broad_name::<B>(kind)))
            })?;
        }
    }
    // The native periodic grid (it has no image pool: the same ops).
    let mut g = native_grid::<B>(domain, CAPACITY);
    let mut o = PeriodicOracle::<B>::new(domain, CAPACITY);
    for (k, op) in ops.iter().enumerate() {
        o.apply(&mut g, op)
            .map_err(|e| TestCaseError::fail(format!("native periodic grid op {k}: {e}")))?;
    }
    Ok(())
}

fn box_spec() -> impl Strategy<Value = periodic_model::BoxSpec> {
    (
        prop::array::uniform3(prop_oneof![
            -12i8..36,
            // Near the faces (quarter units: x −4, 28; y 2, 26; z −8, 32),
            // so that boxes cross the same faces and overlap there.
            prop::sample::select(vec![-9i8, -8, -5, -4, 1, 2, 24, 25, 26, 27, 28, 31, 32]),
        ]),
        prop::array::uniform3(0u8..10),
        prop_oneof![8 => Just(0u8), 1 => 10u8..16],
    )
        .prop_map(|(lo, size, fault)| periodic_model::BoxSpec { lo, size, fault })
}

fn op() -> impl Strategy<Value = PeriodicOp> {
    let id = 0u8..14;
    prop_oneof![
        6 => (id.clone(), box_spec()).prop_map(|(i, b)| PeriodicOp::Insert(i, b)),
        4 => (id.clone(), box_spec()).prop_map(|(i, b)| PeriodicOp::Update(i, b)),
        2 => prop::collection::vec((id.clone(), box_spec()), 0..5).prop_map(PeriodicOp::UpdateMany),
        2 => id.prop_map(PeriodicOp::Remove),
        3 => box_spec().prop_map(PeriodicOp::Query),
        1 => Just(PeriodicOp::Overlaps),
        1 => prop::sample::select(vec![PeriodicOp::Clear, PeriodicOp::Overlaps]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn operations_3d(mask in 0u8..8, ops in prop::collection::vec(op(), 1..40)) {
        run_ops::<Aabb3>(mask, &ops, None)?;
    }

    #[test]
    fn operations_2d(mask in 0u8..4, ops in prop::collection::vec(op(), 1..40)) {
        run_ops::<Aabb2>(mask, &ops, None)?;
    }

    /// A small image pool: inserts and updates of crossing boxes refused
    /// when it is full (nothing lost), entries freed and reused.
    #[test]
    fn operations_small_pool_3d(
        mask in 1u8..8,
        pool in 0usize..8,
        ops in prop::collection::vec(op(), 1..40),
    ) {
        run_ops::<Aabb3>(mask, &ops, Some(pool))?;
    }

    #[test]
    fn operations_small_pool_2d(
        mask in 1u8..4,
        pool in 0usize..4,
        ops in prop::collection::vec(op(), 1..40),
    ) {
        run_ops::<Aabb2>(mask, &ops, Some(pool))?;
    }
}
