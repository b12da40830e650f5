//! The domain decomposition (`spatium::decomp`) against brute force on every
//! point scenario (`spatium_host::scenarios::point_scenarios`), 2D and 3D,
//! for 1, 2, 3, 7 and 16 ranks, with unit weights and with random weights
//! (a fifth of them zero). The judge is `spatium_host_tests::decomp_oracle`:
//!
//! * the boxes tile the domain (the points' bounding box, so elements sit on
//!   its faces): inside it, volumes summing to its volume, interiors
//!   pairwise disjoint; `validate()` passes;
//! * every element is owned by exactly one rank, the highest whose closed
//!   box holds it, and `owner`, `assign` and the oracle agree;
//! * the loads are the owned weights, each within `2.3 δ` of the ideal
//!   share (`δ`: the heaviest set of elements sharing a coordinate); the
//!   worst ratio found is printed (`--nocapture`);
//! * the ghosts of every rank equal the oracle's (every element × every
//!   periodic image × distance to the box) as sets, without periodic axes,
//!   with the first axis periodic and with every axis periodic, at the
//!   scenario's radius (clamped to half the smallest periodic extent);
//! * the migration lists after moving every point randomly (by up to twice
//!   the radius) equal the brute-force comparison of owners, with counts.

use spatium::decomp::Periodic;
use spatium::{BoundingBox, Point};
use spatium::{Vec2, Vec3};
use spatium_host::rng::Rng;
use spatium_host::scenarios::point_scenarios;
use spatium_host_tests::decomp_oracle::{
    bounds, check_build, check_ghosts, check_migration, check_refusals, decomposition, moved,
};

const RANKS: [usize; 5] = [1, 2, 3, 7, 16];

fn run<P: Point>(n: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut worst = 0.0f64;
    let mut imbalance = 1.0f64;
    for sc in point_scenarios::<P>(n, seed) {
        let pts = &sc.points;
        let domain = bounds(pts);
        let weights: Vec<f32> = (0..pts.len())
            .map(|_| {
                if rng.below(5) == 0 {
                    0.0
                } else {
                    rng.range(0.0, 4.0)
                }
            })
            .collect();
        let mut scratch = vec![0u32; pts.len()];
        for &ranks in &RANKS {
            let mut d = decomposition::<P>(ranks);
            for w in [None, Some(&weights[..])] {
                let what = format!("{} ranks {ranks} weighted {}", sc.name, w.is_some());
                d.build(domain, ranks, pts, w, &mut scratch)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let (owners, ratio) = check_build(&d, &domain, ranks, pts, w)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                worst = worst.max(ratio);
                let total: f64 = d.loads().iter().sum();
                if total > 0.0 {
                    let max = d.loads().iter().fold(0.0f64, |a, &b| a.max(b));
                    imbalance = imbalance.max(max * ranks as f64 / total);
                }
                let min_ext = (0..P::DIM)
                    .map(|k| domain.max().coord(k) - domain.min().coord(k))
                    .fold(f32::INFINITY, f32::min);
                let first_ext = domain.max().coord(0) - domain.min().coord(0);
                for (periodic, limit) in [
                    (Periodic::NONE, f32::INFINITY),
                    (Periodic::new(0b001), first_ext),
                    (Periodic::ALL, min_ext),
                ] {
                    let radius = sc.radius.min(0.5 * limit);
                    check_ghosts(&d, pts, radius, periodic)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                }
                let step = 2.0 * sc.radius;
                let next = moved(&domain, pts, step, || rng.f32());
                check_migration(&d, &owners, &next).unwrap_or_else(|e| panic!("{what}: {e}"));
                check_refusals(&d, pts).unwrap_or_else(|e| panic!("{what}: {e}"));
            }
        }
    }
    println!(
        "{}D: worst |load - share| / δ = {worst:.3} (bound {}), worst max load / mean = {imbalance:.4}",
        P::DIM,
        spatium_host_tests::decomp_oracle::BALANCE_BOUND
    );
}

#[test]
fn scenarios_3d() {
    run::<Vec3>(1000, 11);
}

#[test]
fn scenarios_2d() {
    run::<Vec2>(1000, 12);
}
