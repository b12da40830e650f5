//! Differential tests: every uniform-hash strategy against brute force, on
//! every scenario generator, in 3D and 2D, with generous and with tiny
//! (collision-forcing) tables.

use spatium::table::{SLOTS_PER_OBJECT, table_len};
use spatium::{BruteForceNeighbors, NeighborSearch, Point, Validate, Vec2, Vec3};
use spatium_host::oracle::{
    collect_pairs, csr_lists, neighbors_of, pairs_within, spatial_csr_lists, within,
};
use spatium_host::scenarios::{PointScenario, point_scenarios};
use spatium_host::{Rng, make};

const N: usize = 1500;

fn brute<P: Point>(sc: &PointScenario<P>) -> BruteForceNeighbors<P, Vec<P>> {
    let mut b = BruteForceNeighbors::new(vec![P::default(); sc.points.len()]);
    b.build(&sc.points, sc.radius).unwrap();
    b.validate().unwrap();
    b
}

/// Compares every query of `s` with brute force.
fn compare<P: Point, S: NeighborSearch<P> + Validate>(
    label: &str,
    s: &S,
    b: &BruteForceNeighbors<P, Vec<P>>,
    oracle: &[(u32, u32)],
    rng: &mut Rng,
) {
    s.validate().unwrap_or_else(|e| panic!("{label}: {e}"));
    assert_eq!(s.len(), b.len(), "{label}: len");
    let got = collect_pairs(s);
    assert_eq!(got.len(), oracle.len(), "{label}: pair count");
    assert_eq!(got, oracle, "{label}: pairs");
    let n = s.len() as u32;
    // Neighbours of a sample of particles (all when small).
    let step = (n / 300).max(1);
    for id in (0..n).step_by(step as usize) {
        assert_eq!(
            neighbors_of(s, id),
            neighbors_of(b, id),
            "{label}: neighbours of {id}"
        );
        assert_eq!(s.position(id), b.position(id), "{label}: position {id}");
    }
    // Arbitrary points: near particles, and far away.
    for _ in 0..50 {
        let base = b.position(rng.below(n as usize) as u32).unwrap();
        let r = s.radius();
        let p = P::from_fn(|k| base.coord(k) + rng.range(-2.0 * r, 2.0 * r));
        assert_eq!(within(s, p), within(b, p), "{label}: within {p:?}");
    }
    let far = P::from_fn(|k| b.position(0).unwrap().coord(k) + 1e7);
    assert_eq!(within(s, far), Vec::<u32>::new(), "{label}: far point");
    // CSR lists equal brute force's.
    let lists = csr_lists(s);
    let expect = csr_lists(b);
    assert_eq!(lists, expect, "{label}: CSR");
    // The same lists with the rows in the structure's order.
    assert_eq!(spatial_csr_lists(s), expect, "{label}: spatial CSR");
}

fn run_all<P: Point>(seed: u64) {
    let mut rng = Rng::new(seed);
    for sc in point_scenarios::<P>(N, seed) {
        let n = sc.points.len();
        let oracle = pairs_within(&sc.points, sc.radius);
        assert!(!oracle.is_empty(), "{}: scenario has no pairs", sc.name);
        let b = brute(&sc);
        for table in [table_len(n, SLOTS_PER_OBJECT), table_len(n, 2), 8, 1] {
            let label = format!("{} T={table}", sc.name);

            let mut a = make::cell_sorted::<P>(n, table);
            a.build(&sc.points, sc.radius).unwrap();
            if table <= 8 {
                assert!(
                    a.colliding_cells() > 0,
                    "{label}: tiny table must make cells collide"
                );
            }
            compare(&format!("sorted {label}"), &a, &b, &oracle, &mut rng);

            let mut c = make::linked::<P>(n, table);
            c.build(&sc.points, sc.radius).unwrap();
            compare(&format!("linked {label}"), &c, &b, &oracle, &mut rng);

            if table >= 8 * n {
                // Buckets of 64 suffice for every scenario at this density.
                let mut bk = make::bucketed::<P, 64>(n, table_len(n, 2));
                match bk.build(&sc.points, sc.radius) {
                    Ok(()) => compare(&format!("bucketed {label}"), &bk, &b, &oracle, &mut rng),
                    Err(e) => panic!("bucketed {label}: {e}"),
                }
            }
        }
        // Bucket hash with a tiny table: overflow is reported, never dropped.
        let mut bk = make::bucketed::<P, 64>(n, 8);
        match bk.build(&sc.points, sc.radius) {
            Ok(()) => compare(
                &format!("bucketed {} T=8", sc.name),
                &bk,
                &b,
                &oracle,
                &mut rng,
            ),
            Err(spatium::Error::BucketFull { capacity, .. }) => {
                assert_eq!(capacity, 64);
                assert_eq!(bk.len(), 0, "failed first build leaves it empty");
                bk.validate().unwrap();
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn all_strategies_match_brute_force_3d() {
    run_all::<Vec3>(1);
}

#[test]
fn all_strategies_match_brute_force_2d() {
    run_all::<Vec2>(2);
}

/// Linked buckets: moving particles relinks exactly those that changed cell,
/// and the answers stay exact.
fn incremental<P: Point>(seed: u64) {
    let mut rng = Rng::new(seed);
    for sc in point_scenarios::<P>(800, seed) {
        let n = sc.points.len();
        for table in [table_len(n, SLOTS_PER_OBJECT), 4] {
            let mut c = make::linked::<P>(n, table);
            c.build(&sc.points, sc.radius).unwrap();
            let mut pts = sc.points.clone();
            for step in 0..5 {
                let old_cells: Vec<_> = pts.iter().map(|&p| c.grid().cell(p).unwrap()).collect();
                for p in &mut pts {
                    if rng.f32() < 0.5 {
                        let r = sc.radius;
                        *p = P::from_fn(|k| p.coord(k) + rng.range(-0.6 * r, 0.6 * r));
                    }
                }
                let changed = pts
                    .iter()
                    .zip(&old_cells)
                    .filter(|&(&p, c0)| c.grid().cell(p).unwrap() != *c0)
                    .count();
                let relinked = c.update(&pts).unwrap();
                assert_eq!(relinked, changed, "{} step {step}", sc.name);
                let b = brute(&PointScenario {
                    name: sc.name.clone(),
                    points: pts.clone(),
                    radius: sc.radius,
                });
                let oracle = pairs_within(&pts, sc.radius);
                compare(
                    &format!("linked-update {} T={table} step {step}", sc.name),
                    &c,
                    &b,
                    &oracle,
                    &mut rng,
                );
            }
        }
    }
}

#[test]
fn linked_update_is_incremental_and_exact_3d() {
    incremental::<Vec3>(3);
}

#[test]
fn linked_update_is_incremental_and_exact_2d() {
    incremental::<Vec2>(4);
}

/// Reordering into cell order makes the next build's sort the identity and
/// keeps the answers (up to the relabelling).
#[test]
fn reorder_gives_identity_sort() {
    for sc in point_scenarios::<Vec3>(1000, 5) {
        let n = sc.points.len();
        let want = pairs_within(&sc.points, sc.radius);
        for table in [table_len(n, SLOTS_PER_OBJECT), 8, 1] {
            let mut a = make::cell_sorted::<Vec3>(n, table);
            a.build(&sc.points, sc.radius).unwrap();
            let mut sorted = sc.points.clone();
            a.reorder(&sc.points, &mut sorted).unwrap();
            let ids: Vec<u32> = a.sorted_ids().to_vec();
            // Rebuilding from cell order takes the in-order path (no sort,
            // runs reused from the first pass); twice, to reuse a table.
            for _ in 0..2 {
                a.build(&sorted, sc.radius).unwrap();
                assert!(a.input_was_sorted(), "{} T={table}", sc.name);
                a.validate().unwrap();
                // Pairs map back through the permutation.
                let mut back: Vec<(u32, u32)> = collect_pairs(&a)
                    .into_iter()
                    .map(|(i, j)| {
                        let (x, y) = (ids[i as usize], ids[j as usize]);
                        (x.min(y), x.max(y))
                    })
                    .collect();
                back.sort_unstable();
                assert_eq!(back, want, "{} T={table}", sc.name);
            }
        }
    }
}

/// Scenario generators produce what their documentation promises.
#[test]
fn scenarios_have_documented_statistics() {
    let block = spatium_host::scenarios::fluid_block::<Vec3>(20, 0.5, 0.3, 9);
    let pairs = pairs_within(&block.points, block.radius).len();
    // Interior particles have about 28 neighbours; the surface lowers the mean.
    let interior_mean = 2.0 * pairs as f32 / block.points.len() as f32;
    assert!(
        (20.0..32.0).contains(&interior_mean),
        "fluid block mean {interior_mean}"
    );

    for sc in spatium_host::scenarios::box_scenarios::<spatium::Aabb3>(4000, 11)
        .into_iter()
        .chain(spatium_host::scenarios::box_scenarios::<spatium::Aabb3>(
            4000, 12,
        ))
    {
        let p = spatium_host::oracle::overlapping_pairs(&sc.boxes).len() as f32 / 4000.0;
        assert!((1.0..4.0).contains(&p), "{}: {p} pairs per object", sc.name);
    }
}
