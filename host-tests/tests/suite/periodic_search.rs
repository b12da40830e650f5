//! Periodic neighbour search: `uniform::DenseGrid` against brute force made
//! periodic (`BruteForceNeighbors::set_periodic`), on every point scenario,
//! in 3D and 2D, periodic along no axis, one axis, two and all; its errors;
//! and random operation sequences (proptest).

use proptest::prelude::*;
use spatium::uniform::CELL_MARGIN;
use spatium::{
    BruteForceNeighbors, Error, NeighborSearch, PeriodicBox, Point, Validate, Vec2, Vec3,
};
use spatium_host::Rng;
use spatium_host::make::{self, VecDense};
use spatium_host::oracle::{collect_pairs, csr_lists, neighbors_of, spatial_csr_lists, within};
use spatium_host::scenarios::{PointScenario, point_scenarios};

const N: usize = 1500;

fn brute<P: Point>(domain: PeriodicBox<P>, points: &[P], r: f32) -> BruteForceNeighbors<P, Vec<P>> {
    let mut b = BruteForceNeighbors::new(vec![P::default(); points.len()]);
    b.set_periodic(domain);
    b.build(points, r).unwrap();
    b
}

/// Every pair with its `d²` as bits, sorted.
fn pairs_d2<P: Point, S: NeighborSearch<P>>(s: &S) -> Vec<(u32, u32, u32)> {
    let mut v = Vec::new();
    s.for_each_pair(|i, j, d2| v.push((i.min(j), i.max(j), d2.to_bits())));
    v.sort_unstable();
    v
}

/// Everything `s` answers equals what `b` answers.
fn compare<P: Point>(
    label: &str,
    s: &VecDense<P>,
    b: &BruteForceNeighbors<P, Vec<P>>,
    rng: &mut Rng,
) {
    s.validate().unwrap_or_else(|e| panic!("{label}: {e}"));
    assert_eq!(s.len(), b.len(), "{label}: len");
    assert_eq!(s.periodic(), b.periodic(), "{label}: domain");
    assert_eq!(pairs_d2(s), pairs_d2(b), "{label}: pairs and distances");
    assert_eq!(collect_pairs(s), collect_pairs(b), "{label}: pairs");
    let n = s.len() as u32;
    for id in (0..n).step_by((n as usize / 300).max(1)) {
        assert_eq!(
            neighbors_of(s, id),
            neighbors_of(b, id),
            "{label}: neighbours of {id}"
        );
        assert_eq!(s.position(id), b.position(id), "{label}: position {id}");
    }
    let r = s.radius();
    let d = s.periodic();
    for _ in 0..60 {
        let base = b.position(rng.below(n as usize) as u32).unwrap();
        // Near a particle, possibly across a face; on the periodic axes also
        // a whole period away (the query wraps).
        let p = P::from_fn(|k| {
            let mut x = base.coord(k) + rng.range(-2.0 * r, 2.0 * r);
            if d.is_periodic_axis(k) && rng.f32() < 0.3 {
                x += d.lengths().coord(k) * if rng.f32() < 0.5 { 1.0 } else { -3.0 };
            }
            x
        });
        assert_eq!(within(s, p), within(b, p), "{label}: within {p:?}");
    }
    if d.axes() != (1 << P::DIM) - 1 {
        let far = P::from_fn(|k| {
            if d.is_periodic_axis(k) {
                d.lo().coord(k)
            } else {
                1e7
            }
        });
        assert_eq!(within(s, far), Vec::<u32>::new(), "{label}: far point");
    }
    assert_eq!(csr_lists(s), csr_lists(b), "{label}: CSR");
    assert_eq!(spatial_csr_lists(s), csr_lists(b), "{label}: spatial CSR");
}

/// The domain of a scenario: its bounding box, shrunk by a tenth along the
/// periodic axes (so the points beyond wrap around) when that keeps three
/// cells; `None` otherwise.
fn domain_of<P: Point>(sc: &PointScenario<P>, axes: u8) -> Option<PeriodicBox<P>> {
    let mut lo = sc.points[0];
    let mut hi = lo;
    for &p in &sc.points {
        lo = lo.min(p);
        hi = hi.max(p);
    }
    let min_len = 3.0 * sc.radius * CELL_MARGIN * 1.01;
    let mut ok = true;
    let hi = P::from_fn(|k| {
        let (a, b) = (lo.coord(k), hi.coord(k));
        if axes & (1 << k) != 0 {
            let l = 0.9 * (b - a);
            ok &= l >= min_len;
            a + l
        } else {
            // Non-periodic: the points must lie within; keep `lo < hi`.
            b.max(a + sc.radius)
        }
    });
    if !ok {
        return None;
    }
    Some(PeriodicBox::new(lo, hi, axes).unwrap())
}

fn masks<P: Point>() -> Vec<u8> {
    if P::DIM == 3 {
        vec![0, 0b001, 0b101, 0b111]
    } else {
        vec![0, 0b01, 0b10, 0b11]
    }
}

fn run_all<P: Point>(seed: u64) {
    let mut rng = Rng::new(seed);
    // Pairs found only across a periodic face, per mask over all scenarios
    // (clustered scenes may have none).
    let mut crossing = vec![0usize; 8];
    for sc in point_scenarios::<P>(N, seed) {
        for axes in masks::<P>() {
            let Some(domain) = domain_of(&sc, axes) else {
                continue;
            };
            let label = format!("{} axes={axes:b}", sc.name);
            let b = brute(domain, &sc.points, sc.radius);
            let mut g = make::dense(domain, sc.points.len(), sc.radius).unwrap();
            g.build(&sc.points, sc.radius).unwrap();
            compare(&label, &g, &b, &mut rng);
            if axes != 0 {
                // The wrap is exercised: some pairs are near only through a face.
                let r2 = sc.radius * sc.radius;
                let across = pairs_d2(&g)
                    .iter()
                    .filter(|&&(i, j, _)| {
                        let (p, q) = (g.position(i).unwrap(), g.position(j).unwrap());
                        p.distance_squared(q) >= r2
                    })
                    .count();
                crossing[axes as usize] += across;
            }
        }
    }
    for axes in masks::<P>().into_iter().skip(1) {
        assert!(
            crossing[axes as usize] > 100,
            "axes={axes:b}: too few pairs across a face: {crossing:?}"
        );
    }
}

/// Crowded cells at the corners of a fully periodic box: the ranges beyond
/// an upper face do not fit the sweep's lane copy (512 candidates), so the
/// pair sweep measures them in place, and the corner cells' ranges shifted
/// by `+L` along one axis and `-L` along another take their own path. Both
/// must give the brute force's pairs and distances to the bit.
fn crowded_corners<P: Point>(seed: u64) {
    let mut rng = Rng::new(seed);
    let r = 1.0f32;
    let l = 4.0 * r * CELL_MARGIN * 1.01;
    let domain = PeriodicBox::all(P::ZERO, P::from_fn(|_| l)).unwrap();
    for per_corner in [40usize, 700] {
        let mut points = Vec::new();
        for corner in 0..1usize << P::DIM {
            for _ in 0..per_corner {
                points.push(P::from_fn(|k| {
                    let near = rng.range(0.0, 0.6 * r);
                    if corner & (1 << k) != 0 {
                        l - near
                    } else {
                        near
                    }
                }));
            }
        }
        let label = format!("crowded corners, {per_corner} per corner");
        let b = brute(domain, &points, r);
        let mut g = make::dense(domain, points.len(), r).unwrap();
        g.build(&points, r).unwrap();
        compare(&label, &g, &b, &mut rng);
    }
}

#[test]
fn crowded_corner_cells_match_periodic_brute_force() {
    crowded_corners::<Vec3>(5);
    crowded_corners::<Vec2>(6);
}

#[test]
fn dense_grid_matches_periodic_brute_force_3d() {
    run_all::<Vec3>(11);
}

#[test]
fn dense_grid_matches_periodic_brute_force_2d() {
    run_all::<Vec2>(12);
}

/// Every refusal names its cause and keeps the previous contents.
#[test]
fn errors_are_refused_and_change_nothing() {
    let domain = PeriodicBox::new(Vec3::ZERO, Vec3::new(4.0, 4.0, 4.0), 0b011).unwrap();
    let pts = [
        Vec3::new(0.1, 0.1, 0.1),
        Vec3::new(3.9, 0.1, 0.1),
        Vec3::new(2.0, 3.95, 4.0),
        Vec3::new(-0.2, 7.9, 0.0),
    ];
    let mut g = make::dense(domain, 4, 1.0).unwrap();
    g.build(&pts, 1.0).unwrap();
    let b = brute(domain, &pts, 1.0);
    let before = pairs_d2(&g);
    assert_eq!(before, pairs_d2(&b));
    // 0–1 and 0–3 only across the x or y faces, 1–3 directly.
    assert_eq!(before.len(), 3, "{before:?}");
    // Radius too large for three cells along a periodic axis.
    assert_eq!(g.build(&pts, 1.4), Err(Error::PeriodTooShort { axis: 0 }));
    // Cell starts too short for a finer grid.
    let needed = VecDense::<Vec3>::cells_needed(&domain, 0.5).unwrap();
    assert_eq!(needed, 7 * 7 * 7 + 1);
    assert_eq!(
        g.build(&pts, 0.5),
        Err(Error::BufferTooSmall {
            needed,
            available: 3 * 3 * 3 + 1
        })
    );
    // Outside the box along the non-periodic z axis (periodic x, y accept
    // anything finite).
    assert_eq!(
        g.build(&[Vec3::new(100.0, -50.0, 4.01)], 1.0),
        Err(Error::OutOfRange)
    );
    assert_eq!(
        g.build(&[Vec3::new(0.0, 0.0, f32::NAN)], 1.0),
        Err(Error::NonFinite)
    );
    assert_eq!(
        g.build(&[Vec3::new(f32::INFINITY, 0.0, 1.0)], 1.0),
        Err(Error::NonFinite)
    );
    assert_eq!(
        g.build(&[Vec3::ZERO; 5], 1.0),
        Err(Error::CapacityExceeded { capacity: 4 })
    );
    assert_eq!(g.build(&pts, 0.0), Err(Error::InvalidRadius));
    assert_eq!(g.build(&pts, f32::NAN), Err(Error::InvalidRadius));
    assert_eq!(
        g.for_each_neighbor(4, |_, _| {}),
        Err(Error::UnknownId { id: 4 })
    );
    assert_eq!(
        g.for_each_within(Vec3::new(f32::NAN, 0.0, 0.0), |_, _| {}),
        Err(Error::NonFinite)
    );
    g.validate().unwrap();
    assert_eq!(pairs_d2(&g), before, "a refused build changed the contents");
    // Positions come back wrapped.
    assert_eq!(g.position(3), Some(Vec3::new(3.8, 3.9, 0.0)));
}

/// A periodic inner search under a Verlet cache is refused.
#[test]
fn verlet_cache_refuses_a_periodic_search() {
    use spatium::{NeighborPair, VerletCache};
    let domain = PeriodicBox::all(Vec2::ZERO, Vec2::new(4.0, 4.0)).unwrap();
    let inner = make::dense(domain, 4, 1.0).unwrap();
    let mut v = VerletCache::new(
        inner,
        vec![Vec2::ZERO; 4],
        vec![0u32; 64],
        vec![NeighborPair::EMPTY; 64],
        0.2,
    );
    assert_eq!(
        v.build(&[Vec2::ZERO], 1.0),
        Err(Error::InvalidConfig { field: "periodic" })
    );
}

#[derive(Clone, Debug)]
enum Op {
    Build { points: Vec<[f32; 3]>, radius: f32 },
    Within([f32; 3]),
}

fn coord() -> impl Strategy<Value = f32> {
    prop_oneof![
        // Lattice values, the faces included, and beyond them.
        (-4i32..=20).prop_map(|k| k as f32 * 0.5),
        -2.0f32..10.0,
        Just(8.0f32 - f32::EPSILON * 4.0),
        Just(-f32::EPSILON),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (
            prop::collection::vec([coord(), coord(), coord()], 0..40),
            prop_oneof![Just(1.0f32), Just(0.5f32), Just(2.0f32), Just(2.7f32), 0.3f32..3.0]
        )
            .prop_map(|(points, radius)| Op::Build { points, radius }),
        1 => [coord(), coord(), coord()].prop_map(Op::Within),
    ]
}

fn point<P: Point>(c: [f32; 3]) -> P {
    P::from_fn(|k| c[k])
}

/// Random builds and queries on a box `[0, 8)` periodic along `axes`:
/// after every operation the grid answers as the periodic brute force, and
/// a refused build leaves both the previous contents and the answers.
fn sequence<P: Point>(axes: u8, ops: &[Op]) -> Result<(), TestCaseError> {
    let domain = PeriodicBox::new(P::ZERO, point::<P>([8.0; 3]), axes).unwrap();
    // Starts for radius 0.3 and up; capacity 32 (builds of more are refused).
    let mut g = make::dense(domain, 32, 0.3).unwrap();
    let mut b = BruteForceNeighbors::new(vec![P::default(); 64]);
    b.set_periodic(domain);
    let mut rng = Rng::new(5);
    for op in ops {
        match op {
            Op::Build { points, radius } => {
                let pts: Vec<P> = points.iter().map(|&c| point(c)).collect();
                match g.build(&pts, *radius) {
                    Ok(()) => b.build(&pts, *radius).unwrap(),
                    Err(Error::CapacityExceeded { .. }) => prop_assert!(pts.len() > 32),
                    Err(Error::PeriodTooShort { axis }) => {
                        prop_assert!(domain.is_periodic_axis(axis as usize));
                        prop_assert!(8.0 < 3.0 * radius * CELL_MARGIN);
                    }
                    Err(Error::OutOfRange) => {
                        let outside = pts.iter().any(|p| {
                            (0..P::DIM).any(|k| {
                                !domain.is_periodic_axis(k) && !(0.0..=8.0).contains(&p.coord(k))
                            })
                        });
                        prop_assert!(outside);
                    }
                    Err(e) => prop_assert!(false, "unexpected {e}"),
                }
            }
            Op::Within(c) => {
                prop_assert_eq!(within(&g, point(*c)), within(&b, point(*c)));
            }
        }
        g.validate()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(pairs_d2(&g), pairs_d2(&b));
        prop_assert_eq!(csr_lists(&g), csr_lists(&b));
        let n = g.len() as u32;
        for id in 0..n {
            prop_assert_eq!(neighbors_of(&g, id), neighbors_of(&b, id));
        }
        if n > 0 {
            let q = b.position(rng.below(n as usize) as u32).unwrap();
            prop_assert_eq!(within(&g, q), within(&b, q));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_sequences_match_brute_force_3d(axes in 0u8..8, ops in prop::collection::vec(op(), 1..8)) {
        sequence::<Vec3>(axes, &ops)?;
    }

    #[test]
    fn random_sequences_match_brute_force_2d(axes in 0u8..4, ops in prop::collection::vec(op(), 1..8)) {
        sequence::<Vec2>(axes, &ops)?;
    }
}
