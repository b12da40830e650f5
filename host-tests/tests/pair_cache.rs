//! `PairCache` against the search it wraps and the brute-force oracle, on
//! every point scenario in 3D and 2D: with a buffer large enough the pairs
//! are recorded and replayed in the inner search's order; with one too
//! small the cache stays empty and answers from the inner search; either
//! way every answer equals the inner search's and the oracle's pair set.

use spatium::table::table_len;
use spatium::{NeighborPair, NeighborSearch, PairCache, Point, Validate, Vec2, Vec3};
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
