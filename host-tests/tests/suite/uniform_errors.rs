//! Bad input and full structures: a clear error, and nothing stored changes.

use spatium::table::{SLOTS_PER_OBJECT, table_len};
use spatium::uniform;
use spatium::{Error, NeighborSearch, Point, Validate, Vec2, Vec3};
use spatium_host::make;
use spatium_host::oracle::{collect_pairs, csr_lists};
use spatium_host::scenarios::fluid_block;

/// Builds `s` from a valid scene, then checks that each bad build is refused
/// with the expected error and leaves pairs, positions and validity intact.
fn refuses_bad_builds<P: Point, S: NeighborSearch<P> + Validate>(
    label: &str,
    s: &mut S,
    cap: usize,
    has_grid: bool,
) {
    let sc = fluid_block::<P>(6, 0.5, 0.3, 7);
    assert!(sc.points.len() <= cap);
    s.build(&sc.points, sc.radius).unwrap();
    let before = collect_pairs(s);
    let pos0 = s.position(0);
    let mut check = |what: &str, pts: &[P], r: f32, want: Error| {
        assert_eq!(s.build(pts, r), Err(want), "{label}: {what}");
        s.validate().unwrap();
        assert_eq!(
            collect_pairs(s),
            before,
            "{label}: {what} changed the pairs"
        );
        assert_eq!(s.position(0), pos0, "{label}: {what}");
        assert_eq!(s.radius(), sc.radius);
    };
    let mut nan = sc.points.clone();
    nan[5] = P::from_fn(|k| if k == 1 { f32::NAN } else { 0.0 });
    check("NaN", &nan, sc.radius, Error::NonFinite);
    let mut inf = sc.points.clone();
    inf[3] = P::from_fn(|_| f32::NEG_INFINITY);
    check("infinity", &inf, sc.radius, Error::NonFinite);
    for r in [0.0, -1.0, f32::NAN, f32::INFINITY, -0.0, 1e-40] {
        check("radius", &sc.points, r, Error::InvalidRadius);
    }
    if has_grid {
        let mut far = sc.points.clone();
        far[0] = P::from_fn(|_| 1e6);
        check("out of range", &far, sc.radius, Error::OutOfRange);
    }
    let big = vec![P::default(); cap + 1];
    check(
        "capacity",
        &big,
        sc.radius,
        Error::CapacityExceeded { capacity: cap },
    );
    // Queries with bad arguments.
    let n = s.len() as u32;
    assert_eq!(
        s.for_each_neighbor(n, |_, _| ()),
        Err(Error::UnknownId { id: n })
    );
    assert_eq!(
        s.for_each_within(P::from_fn(|_| f32::NAN), |_, _| ()),
        Err(Error::NonFinite)
    );
    // CSR: too-small buffers are refused with the sizes needed, indices untouched.
    let lists = csr_lists(s);
    let total: usize = lists.iter().map(Vec::len).sum();
    let mut offsets = vec![0u32; s.len()];
    let mut indices = vec![7u32; total];
    assert_eq!(
        s.neighbor_lists(&mut offsets, &mut indices),
        Err(Error::BufferTooSmall {
            needed: s.len() + 1,
            available: s.len()
        })
    );
    let mut offsets = vec![0u32; s.len() + 1];
    let mut short = vec![7u32; total - 1];
    assert_eq!(
        s.neighbor_lists(&mut offsets, &mut short),
        Err(Error::BufferTooSmall {
            needed: total,
            available: total - 1
        })
    );
    assert_eq!(s.neighbor_lists(&mut offsets, &mut indices), Ok(total));
}

fn all<P: Point>() {
    let cap = 300;
    refuses_bad_builds::<P, _>("sorted", &mut make::cell_sorted::<P>(cap, 1024), cap, true);
    refuses_bad_builds::<P, _>(
        "bucketed",
        &mut make::bucketed::<P, 64>(cap, 1024),
        cap,
        true,
    );
    refuses_bad_builds::<P, _>("linked", &mut make::linked::<P>(cap, 1024), cap, true);
    refuses_bad_builds::<P, _>(
        "brute",
        &mut spatium::BruteForceNeighbors::new(vec![P::default(); cap]),
        cap,
        false,
    );
}

#[test]
fn bad_builds_change_nothing_3d() {
    all::<Vec3>();
}

#[test]
fn bad_builds_change_nothing_2d() {
    all::<Vec2>();
}

#[test]
fn invalid_table_lengths_are_refused() {
    let pts = [Vec3::ZERO];
    for len in [0usize, 3, 100] {
        let mut a = make::cell_sorted::<Vec3>(4, len);
        assert_eq!(a.build(&pts, 1.0), Err(Error::InvalidTableLength { len }));
        let mut b = make::bucketed::<Vec3, 4>(4, len);
        assert_eq!(b.build(&pts, 1.0), Err(Error::InvalidTableLength { len }));
        let mut c = make::linked::<Vec3>(4, len);
        assert_eq!(c.build(&pts, 1.0), Err(Error::InvalidTableLength { len }));
    }
}

#[test]
fn full_bucket_is_an_error_and_keeps_the_previous_build() {
    let sc = fluid_block::<Vec3>(5, 0.5, 0.3, 1);
    let mut b = make::bucketed::<Vec3, 24>(
        sc.points.len() + 100,
        table_len(sc.points.len(), SLOTS_PER_OBJECT),
    );
    b.build(&sc.points, sc.radius).unwrap();
    let before = collect_pairs(&b);
    // Forty more particles in one cell: one bucket must hold more than 24.
    let mut crowded = sc.points.clone();
    crowded.extend((0..40).map(|i| Vec3::new(0.01 * i as f32, 0.0, 0.0)));
    match b.build(&crowded, sc.radius) {
        Err(Error::BucketFull { capacity: 24, .. }) => {}
        other => panic!("expected BucketFull, got {other:?}"),
    }
    b.validate().unwrap();
    assert_eq!(collect_pairs(&b), before);
    assert_eq!(b.len(), sc.points.len());
    assert!(b.max_bucket_len() <= 24);
}

#[test]
fn linked_update_errors_change_nothing() {
    let sc = fluid_block::<Vec3>(6, 0.5, 0.3, 2);
    let mut c = make::linked::<Vec3>(sc.points.len(), 256);
    c.build(&sc.points, sc.radius).unwrap();
    let before = collect_pairs(&c);
    let n = sc.points.len();
    assert_eq!(
        c.update(&sc.points[1..]),
        Err(Error::LengthMismatch {
            expected: n,
            got: n - 1
        })
    );
    let mut bad = sc.points.clone();
    bad[n - 1].x = f32::NAN;
    assert_eq!(c.update(&bad), Err(Error::NonFinite));
    let mut far = sc.points.clone();
    far[n / 2].y = 1e7;
    assert_eq!(c.update(&far), Err(Error::OutOfRange));
    c.validate().unwrap();
    assert_eq!(collect_pairs(&c), before);
}

/// A `static`-style instance: const-generic arrays, built by `const fn`.
#[test]
fn fixed_arrays_work_like_slices() {
    type Fixed = uniform::CellSortedHash<
        Vec2,
        [uniform::TableSlot; 256],
        [uniform::SortedParticle<Vec2>; 64],
        [uniform::CellRecord<Vec2>; 64],
    >;
    const EMPTY: Fixed = Fixed::new(
        [uniform::TableSlot::EMPTY; 256],
        [uniform::SortedParticle::EMPTY; 64],
        [uniform::CellRecord::EMPTY; 64],
    );
    let mut fixed = EMPTY;
    let sc = fluid_block::<Vec2>(8, 0.5, 0.3, 3);
    fixed.build(&sc.points, sc.radius).unwrap();
    let mut slices = make::cell_sorted::<Vec2>(64, 256);
    slices.build(&sc.points, sc.radius).unwrap();
    assert_eq!(collect_pairs(&fixed), collect_pairs(&slices));
    assert_eq!(fixed.capacity(), 64);
    let too_many = fluid_block::<Vec2>(9, 0.5, 0.3, 3);
    assert_eq!(
        fixed.build(&too_many.points, 1.0),
        Err(Error::CapacityExceeded { capacity: 64 })
    );
}

/// Documented memory formulas match the types' sizes.
#[test]
fn memory_formulas() {
    use core::mem::size_of;
    assert_eq!(size_of::<uniform::TableSlot>(), 8);
    assert_eq!(
        size_of::<uniform::SortedParticle<Vec3>>() + size_of::<uniform::CellRecord<Vec3>>(),
        24
    );
    assert_eq!(
        size_of::<uniform::SortedParticle<Vec2>>() + size_of::<uniform::CellRecord<Vec2>>(),
        20
    );
    assert_eq!(size_of::<uniform::Bucket<16>>(), 16 + 4 * 16);
    assert_eq!(size_of::<uniform::BucketParticle<Vec3>>(), 24);
    assert_eq!(size_of::<uniform::BucketParticle<Vec2>>(), 16);
    assert_eq!(size_of::<uniform::Head>(), 8);
    assert_eq!(size_of::<uniform::LinkedParticle<Vec3>>(), 32);
    assert_eq!(size_of::<uniform::LinkedParticle<Vec2>>(), 24);
    assert_eq!(size_of::<spatium::BruteSlot<spatium::Aabb3>>(), 32);
    assert_eq!(size_of::<spatium::BruteSlot<spatium::Aabb2>>(), 24);
}

/// A structure that was never built answers nothing, refuses ids, validates
/// and accepts an empty update: no query reads its table before the first
/// build (where the stamp is still 0, like every empty slot's; `LinkedHash`
/// relies on it for its all-zero `EMPTY` values).
fn never_built<P: Point, S: NeighborSearch<P> + Validate>(label: &str, s: &S) {
    s.validate().unwrap();
    assert_eq!(s.len(), 0, "{label}");
    assert!(collect_pairs(s).is_empty(), "{label}: pairs");
    let mut found = 0;
    for q in [
        P::ZERO,
        P::from_fn(|k| k as f32 * 0.3 - 0.2),
        P::from_fn(|_| 1e5),
    ] {
        s.for_each_within(q, |_, _| found += 1).unwrap();
    }
    assert_eq!(found, 0, "{label}: within");
    assert_eq!(
        s.for_each_neighbor(0, |_, _| ()),
        Err(Error::UnknownId { id: 0 }),
        "{label}"
    );
    assert_eq!(s.position(0), None, "{label}");
    let mut offsets = vec![0u32; 1];
    assert_eq!(s.neighbor_lists(&mut offsets, &mut []), Ok(0), "{label}");
}

fn never_built_all<P: Point>() {
    never_built::<P, _>("sorted", &make::cell_sorted::<P>(64, 256));
    never_built::<P, _>("bucketed", &make::bucketed::<P, 8>(64, 256));
    let mut linked = make::linked::<P>(64, 256);
    never_built::<P, _>("linked", &linked);
    assert_eq!(linked.update(&[]), Ok(0));
    never_built::<P, _>("linked after update", &linked);
    // Cleared after a build: the same answers.
    let sc = fluid_block::<P>(4, 0.5, 0.3, 3);
    linked.build(&sc.points, sc.radius).unwrap();
    linked.clear();
    never_built::<P, _>("linked cleared", &linked);
}

#[test]
fn never_built_structures_answer_nothing_3d() {
    never_built_all::<Vec3>();
}

#[test]
fn never_built_structures_answer_nothing_2d() {
    never_built_all::<Vec2>();
}
