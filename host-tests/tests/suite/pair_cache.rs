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
                vec![0u32; cands],
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

/// A search that reports its inner search's pairs with the two ids of every
/// other pair swapped, so that no two consecutive pairs share their first
/// id: each candidate of a `VerletCache` over it then needs its own run.
struct Interleaved<N>(N);

impl<P: Point, N: NeighborSearch<P>> NeighborSearch<P> for Interleaved<N> {
    fn build(&mut self, positions: &[P], radius: f32) -> Result<(), spatium::Error> {
        self.0.build(positions, radius)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn radius(&self) -> f32 {
        self.0.radius()
    }
    fn position(&self, id: u32) -> Option<P> {
        self.0.position(id)
    }
    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, f: F) -> Result<(), spatium::Error> {
        self.0.for_each_neighbor(id, f)
    }
    fn for_each_within<F: FnMut(u32, f32)>(&self, p: P, f: F) -> Result<(), spatium::Error> {
        self.0.for_each_within(p, f)
    }
    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) {
        let mut k = 0usize;
        self.0.for_each_pair(|i, j, d2| {
            k += 1;
            if k.is_multiple_of(2) {
                f(j, i, d2)
            } else {
                f(i, j, d2)
            }
        });
    }
}

/// The candidate list holds runs (a first id, a length, the second ids):
/// a buffer of exactly `candidates + 2·runs` entries keeps the candidates,
/// one entry less falls back to the inner search at the true radius; both
/// answer like brute force. Over a search that interleaves its pairs every
/// candidate is its own run (`3` entries each); over one that reports each
/// particle's pairs together there are at most `N` runs.
#[test]
fn verlet_candidate_runs_fill_their_buffer_exactly() {
    // A line of points 0.5 apart, radius 1 (+ skin 0.25): each point's
    // neighbours within 1.25 are the next two, so `2n − 3` candidates.
    let n = 40usize;
    let x: Vec<Vec3> = (0..n)
        .map(|k| Vec3::new(0.5 * k as f32, 0.0, 0.0))
        .collect();
    let mut brute = BruteForceNeighbors::new(vec![Vec3::ZERO; n]);
    brute.build(&x, 1.0).unwrap();
    let want = pair_set(&brute);
    let candidates = 2 * n - 3;
    // Grouped by first id (brute force's order): one run per point but
    // the last.
    let grouped = candidates + 2 * (n - 1);
    for (entries, kept) in [(grouped, true), (grouped - 1, false)] {
        let mut v = VerletCache::new(
            BruteForceNeighbors::new(vec![Vec3::ZERO; n]),
            vec![Vec3::ZERO; n],
            vec![0u32; entries],
            vec![NeighborPair::EMPTY; 4 * n],
            0.25,
        );
        v.build(&x, 1.0).unwrap();
        v.validate().unwrap();
        assert_eq!(v.candidate_count(), if kept { candidates } else { 0 });
        assert_eq!(v.is_cached(), kept, "{entries} entries");
        assert_eq!(pair_set(&v), want);
    }
    let interleaved = 3 * candidates;
    for (entries, kept) in [(interleaved, true), (interleaved - 1, false)] {
        let mut v = VerletCache::new(
            Interleaved(BruteForceNeighbors::new(vec![Vec3::ZERO; n])),
            vec![Vec3::ZERO; n],
            vec![0u32; entries],
            vec![NeighborPair::EMPTY; 4 * n],
            0.25,
        );
        let mut y = x.clone();
        for step in 0..3 {
            // Within the half skin: the runs are reused and refiltered.
            y[7].x += 0.04 * step as f32;
            v.build(&y, 1.0).unwrap();
            assert_eq!(v.candidate_count(), if kept { candidates } else { 0 });
            assert_eq!(v.is_cached(), kept, "{entries} entries");
            let mut b = BruteForceNeighbors::new(vec![Vec3::ZERO; n]);
            b.build(&y, 1.0).unwrap();
            assert_eq!(pair_set(&v), pair_set(&b), "step {step}");
        }
        assert_eq!(v.reuses(), if kept { 2 } else { 0 });
    }
}
