//! `PairCache` against the search it wraps and the brute-force oracle, on
//! every point scenario in 3D and 2D: with a buffer large enough the pairs
//! are recorded and replayed in the inner search's order; with one too
//! small the cache stays empty and answers from the inner search; either
//! way every answer equals the inner search's and the oracle's pair set.

use spatium::table::table_len;
use spatium::{
    BruteForceNeighbors, NeighborPair, NeighborSearch, PairCache, Point, Validate, Vec2, Vec3,
    VerletCache,
};
use spatium_host::scenarios::point_scenarios;
use spatium_host::{make, oracle};

fn pairs_of<P: Point>(ns: &impl NeighborSearch<P>) -> Vec<(u32, u32, u32)> {
    let mut v = Vec::new();
    ns.for_each_pair(|i, j, d2| v.push((i, j, d2.to_bits())));
    v
}

fn check<P: Point>() {
    for sc in point_scenarios::<P>(400, 0xCAC4E) {
        let n = sc.points.len();
        let table = table_len(n, 2);
        let mut inner = make::cell_sorted::<P>(n, table);
        inner.build(&sc.points, sc.radius).unwrap();
        let want = pairs_of(&inner);
        let mut sorted: Vec<(u32, u32)> =
            want.iter().map(|&(i, j, _)| (i.min(j), i.max(j))).collect();
        sorted.sort_unstable();
        let brute = oracle::pairs_within(&sc.points, sc.radius);
        assert_eq!(sorted, brute, "{}: inner search vs oracle", sc.name);
        for cap in [want.len() + 7, want.len(), want.len().saturating_sub(1), 0] {
            let mut c = PairCache::new(
                make::cell_sorted::<P>(n, table),
                vec![NeighborPair::EMPTY; cap],
            );
            c.build(&sc.points, sc.radius).unwrap();
            c.validate().unwrap();
            assert_eq!(c.is_cached(), cap >= want.len(), "{} cap {cap}", sc.name);
            assert_eq!(c.pair_count(), want.len());
            assert_eq!(c.pairs().len(), if c.is_cached() { want.len() } else { 0 });
            assert_eq!(pairs_of(&c), want, "{} cap {cap}: replayed pairs", sc.name);
            assert_eq!(c.len(), n);
            assert_eq!(c.radius(), sc.radius);
            for id in [0u32, (n / 2) as u32] {
                let mut a = Vec::new();
                let mut b = Vec::new();
                c.for_each_neighbor(id, |j, d2| a.push((j, d2.to_bits())))
                    .unwrap();
                inner
                    .for_each_neighbor(id, |j, d2| b.push((j, d2.to_bits())))
                    .unwrap();
                assert_eq!(a, b);
                assert_eq!(c.position(id), inner.position(id));
            }
            // A failed build keeps the cache and the inner search as they were.
            let bad = vec![P::from_fn(|_| f32::NAN); 3];
            assert!(c.build(&bad, sc.radius).is_err());
            assert_eq!(pairs_of(&c), want);
            c.validate().unwrap();
            // Mutable access to the inner search drops the recording: a
            // rebuild of the inner search with half the points is then what
            // the cache answers, not the stale pairs.
            let half = &sc.points[..n / 2];
            c.inner_mut().build(half, sc.radius).unwrap();
            assert!(!c.is_cached());
            assert!(c.pairs().is_empty());
            let mut fresh = make::cell_sorted::<P>(n, table);
            fresh.build(half, sc.radius).unwrap();
            assert_eq!(
                pairs_of(&c),
                pairs_of(&fresh),
                "{}: after inner_mut",
                sc.name
            );
            c.validate().unwrap();
            let (back, buffer) = c.into_inner();
            assert_eq!(back.len(), n / 2);
            assert_eq!(buffer.len(), cap);
        }
    }
}

#[test]
fn pair_cache_replays_the_inner_search_3d() {
    check::<Vec3>();
}

#[test]
fn pair_cache_replays_the_inner_search_2d() {
    check::<Vec2>();
}

/// Sorted `(min, max, d² bits)` of a search's pairs.
fn pair_set<P: Point>(ns: &impl NeighborSearch<P>) -> Vec<(u32, u32, u32)> {
    let mut v: Vec<(u32, u32, u32)> = pairs_of(ns)
        .into_iter()
        .map(|(i, j, d)| (i.min(j), i.max(j), d))
        .collect();
    v.sort_unstable();
    v
}

/// `VerletCache` over a cell-sorted hash, on every point scenario moved by
/// a random walk whose steps are sometimes within the half skin (the
/// candidates are reused) and sometimes beyond it (they are rebuilt): every
/// pair set, neighbour list and point query equals brute force's on the
/// current positions, `d²` bit for bit; too small buffers fall back to the
/// same answers.
fn check_verlet<P: Point>() {
    let mut rng = spatium_host::Rng::new(0x5E1E7);
    let mut reused = 0u64;
    for sc in point_scenarios::<P>(400, 0x5C1A) {
        let n = sc.points.len();
        let r = sc.radius;
        let skin = 0.3 * r;
        let table = table_len(n, 2);
        for (cands, cap) in [(64 * n, 64 * n), (64 * n, 0), (0, 0)] {
            let mut v = VerletCache::new(
                make::cell_sorted::<P>(n, table),
                vec![P::ZERO; n],
                vec![[0u32; 2]; cands],
                vec![NeighborPair::EMPTY; cap],
                skin,
            );
            let mut x = sc.points.clone();
            for step in 0..6 {
                // Steps 1–4 move every particle by at most 0.12·skin (the
                // sum stays within the half skin); step 5 by up to a skin.
                let amp = if step == 5 { skin } else { 0.12 * skin / 2.0 };
                if step > 0 {
                    for p in &mut x {
                        *p += P::from_fn(|_| rng.range(-amp, amp));
                    }
                }
                v.build(&x, r).unwrap();
                v.validate().unwrap();
                let mut brute = BruteForceNeighbors::new(vec![P::ZERO; n]);
                brute.build(&x, r).unwrap();
                let ctx = format!("{} cands {cands} cap {cap} step {step}", sc.name);
                assert_eq!(pair_set(&v), pair_set(&brute), "{ctx}: pairs");
                assert_eq!(v.len(), n);
                assert_eq!(v.radius(), r);
                for id in [0u32, (n / 2) as u32, (n - 1) as u32] {
                    let mut a = Vec::new();
                    let mut b = Vec::new();
                    v.for_each_neighbor(id, |j, d2| a.push((j, d2.to_bits())))
                        .unwrap();
                    brute
                        .for_each_neighbor(id, |j, d2| b.push((j, d2.to_bits())))
                        .unwrap();
                    a.sort_unstable();
                    b.sort_unstable();
                    assert_eq!(a, b, "{ctx}: neighbours of {id}");
                    assert_eq!(v.position(id), Some(x[id as usize]));
                    let q = x[id as usize] + P::from_fn(|_| 0.1 * r);
                    let mut a = Vec::new();
                    let mut b = Vec::new();
                    v.for_each_within(q, |j, d2| a.push((j, d2.to_bits())))
                        .unwrap();
                    brute
                        .for_each_within(q, |j, d2| b.push((j, d2.to_bits())))
                        .unwrap();
                    a.sort_unstable();
                    b.sort_unstable();
                    assert_eq!(a, b, "{ctx}: within");
                }
                assert!(v.for_each_neighbor(n as u32, |_, _| {}).is_err());
            }
            assert_eq!(v.is_cached(), cands > 0 && cap > 0);
            if cands == 0 {
                assert_eq!(v.reuses(), 0);
                assert_eq!(v.candidate_count(), 0);
            } else {
                reused += v.reuses();
            }
            // A refused build keeps every answer.
            let before = pair_set(&v);
            let bad = vec![P::from_fn(|_| f32::NAN); n];
            assert!(v.build(&bad, r).is_err());
            assert!(v.build(&x, -1.0).is_err());
            assert_eq!(pair_set(&v), before);
        }
    }
    assert!(reused > 20, "the candidates were reused {reused} times");
}

#[test]
fn verlet_cache_matches_brute_force_3d() {
    check_verlet::<Vec3>();
}

#[test]
fn verlet_cache_matches_brute_force_2d() {
    check_verlet::<Vec2>();
}
