//! Property tests of the domain decomposition (`spatium::decomp`), 2D and
//! 3D, judged by `spatium_host_tests::decomp_oracle` (the same judge as the
//! differential test and the `decomp` fuzz target).
//!
//! Random point sets of up to 80 elements mix quarter-lattice coordinates
//! in `[-2, 2)` (so elements coincide, share coordinates, and sit on cuts
//! and on the domain's faces) with arbitrary values in `[-100, 100)`; the
//! domain is their bounding box, possibly enlarged. Weights are unit, or
//! random with zeros and huge values; rank counts `1..=40` (more ranks than
//! elements included); radii in `[0.01, 60)`, clamped to half the smallest
//! periodic extent; any periodic mask. For each case: the build succeeds,
//! the boxes tile the domain, every element has exactly the oracle's owner
//! and lies in its box, the loads are the owned weights within `2.3 δ` of
//! their share, the ghosts of every rank equal the oracle's, the migration
//! lists after random moves equal the brute-force comparison, and bad
//! inputs are refused. A periodic axis of zero extent must be refused with
//! `InvalidRadius`.

use proptest::prelude::*;
use spatium::decomp::Periodic;
use spatium::{BoundingBox, Error, Point, Vec2, Vec3};
use spatium_host_tests::decomp_oracle::{
    bounds, check_build, check_ghosts, check_migration, check_refusals, decomposition, moved,
};

/// One coordinate: a quarter-lattice value or an arbitrary one.
fn coord() -> impl Strategy<Value = f32> {
    prop_oneof![
        3 => (-8i32..8).prop_map(|i| i as f32 * 0.25),
        1 => -100.0f32..100.0,
    ]
}

fn weight() -> impl Strategy<Value = f32> {
    prop_oneof![
        2 => Just(0.0f32),
        6 => 0.0f32..10.0,
        1 => Just(1.0e6f32),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    points: Vec<[f32; 3]>,
    weights: Option<Vec<f32>>,
    margin: f32,
    ranks: usize,
    radius: f32,
    periodic: u8,
    moves: Vec<f32>,
}

fn case() -> impl Strategy<Value = Case> {
    (0usize..80).prop_flat_map(|n| {
        (
            prop::collection::vec([coord(), coord(), coord()], n),
            prop::option::of(prop::collection::vec(weight(), n)),
            prop_oneof![Just(0.0f32), 0.0f32..3.0],
            1usize..=40,
            0.01f32..60.0,
            0u8..8,
            prop::collection::vec(0.0f32..1.0, 3 * n),
        )
            .prop_map(
                |(points, weights, margin, ranks, radius, periodic, moves)| Case {
                    points,
                    weights,
                    margin,
                    ranks,
                    radius,
                    periodic,
                    moves,
                },
            )
    })
}

fn check<P: Point>(c: &Case) -> Result<(), String> {
    let pts: Vec<P> = c.points.iter().map(|a| P::from_fn(|k| a[k])).collect();
    let b = bounds(&pts);
    let domain = P::Aabb::try_new(
        P::from_fn(|k| b.min().coord(k) - c.margin),
        P::from_fn(|k| b.max().coord(k) + c.margin),
    )
    .map_err(|e| e.to_string())?;
    let w = c.weights.as_deref();
    let mut d = decomposition::<P>(c.ranks);
    let mut scratch = vec![0u32; pts.len()];
    d.build(domain, c.ranks, &pts, w, &mut scratch)
        .map_err(|e| format!("build: {e}"))?;
    let (owners, _) = check_build(&d, &domain, c.ranks, &pts, w)?;
    let periodic = Periodic::new(c.periodic);
    let limit = (0..P::DIM)
        .filter(|&k| periodic.is_periodic(k))
        .map(|k| domain.max().coord(k) - domain.min().coord(k))
        .fold(f32::INFINITY, f32::min);
    if limit == 0.0 {
        let r = d.for_each_ghost(0, &pts, c.radius, periodic, |_, _| {});
        if r != Err(Error::InvalidRadius) {
            return Err(format!("zero periodic extent: {r:?}"));
        }
    } else {
        check_ghosts(&d, &pts, c.radius.min(0.5 * limit), periodic)?;
        check_ghosts(&d, &pts, c.radius.min(0.5 * limit), Periodic::NONE)?;
    }
    let mut m = c.moves.iter().copied().cycle();
    let next = moved(&domain, &pts, 2.0, || m.next().unwrap_or(0.5));
    check_migration(&d, &owners, &next)?;
    check_refusals(&d, &pts).map_err(|e| format!("refusal: {e}"))?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn decomposition_3d(c in case()) {
        check::<Vec3>(&c).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn decomposition_2d(c in case()) {
        check::<Vec2>(&c).map_err(TestCaseError::fail)?;
    }
}
