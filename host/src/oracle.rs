//! The brute-force oracle, as sorted sets that compare exactly.

use spatium::{BroadPhase, BruteForceBroadPhase, BruteForceNeighbors, NeighborSearch, Point};

use crate::make;

/// Sorted, normalised `(min, max)` pairs within `radius`, by brute force.
pub fn pairs_within<P: Point>(points: &[P], radius: f32) -> Vec<(u32, u32)> {
    let mut b = BruteForceNeighbors::new(vec![P::default(); points.len()]);
    b.build(points, radius).expect("oracle build");
    collect_pairs(&b)
}

/// Sorted, normalised pairs of any neighbour search.
pub fn collect_pairs<P: Point, N: NeighborSearch<P>>(s: &N) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    s.for_each_pair(|i, j, _| v.push((i.min(j), i.max(j))));
    v.sort_unstable();
    v
}

/// Sorted neighbour ids of particle `id`.
pub fn neighbors_of<P: Point, N: NeighborSearch<P>>(s: &N, id: u32) -> Vec<u32> {
    let mut v = Vec::new();
    s.for_each_neighbor(id, |j, _| v.push(j)).expect("known id");
    v.sort_unstable();
    v
}

/// Sorted ids within the radius of a point.
pub fn within<P: Point, N: NeighborSearch<P>>(s: &N, p: P) -> Vec<u32> {
    let mut v = Vec::new();
    s.for_each_within(p, |j, _| v.push(j))
        .expect("finite point");
    v.sort_unstable();
    v
}

/// Neighbour lists through [`NeighborSearch::neighbor_lists`], each sorted.
pub fn csr_lists<P: Point, N: NeighborSearch<P>>(s: &N) -> Vec<Vec<u32>> {
    sized_rows(s.len(), |o, i| s.neighbor_lists(o, i))
}

/// [`NeighborSearch::spatial_neighbor_lists`] turned back into lists by
/// id through [`NeighborSearch::spatial_order`] (each sorted), so they
/// compare with [`csr_lists`]. Checks the exact-size error on the way.
pub fn spatial_csr_lists<P: Point, N: NeighborSearch<P>>(s: &N) -> Vec<Vec<u32>> {
    let n = s.len();
    let mut order = vec![0u32; n];
    s.spatial_order(&mut order).expect("sized order");
    let rows = sized_rows(n, |o, i| s.spatial_neighbor_lists(o, i));
    let needed: usize = rows.iter().map(Vec::len).sum();
    if needed > 0 {
        let mut offsets = vec![0u32; n + 1];
        let mut short = vec![0u32; needed - 1];
        assert_eq!(
            s.spatial_neighbor_lists(&mut offsets, &mut short),
            Err(spatium::Error::BufferTooSmall {
                needed,
                available: needed - 1
            })
        );
    }
    let mut lists = vec![Vec::new(); n];
    for (row, &id) in rows.into_iter().zip(&order) {
        lists[id as usize] = row;
    }
    lists
}

/// The rows a CSR writer for `n` particles writes (each sorted), with
/// `indices` sized from the exact size it reports for an empty one.
fn sized_rows(
    n: usize,
    mut lists: impl FnMut(&mut [u32], &mut [u32]) -> Result<usize, spatium::Error>,
) -> Vec<Vec<u32>> {
    let mut offsets = vec![0u32; n + 1];
    let needed = match lists(&mut offsets, &mut []) {
        Ok(w) => w,
        Err(spatium::Error::BufferTooSmall { needed, .. }) => needed,
        Err(e) => panic!("unexpected {e}"),
    };
    let mut indices = vec![u32::MAX; needed];
    let written = lists(&mut offsets, &mut indices).expect("sized buffers");
    assert_eq!(written, needed);
    assert_eq!(offsets[n] as usize, written);
    (0..n)
        .map(|i| {
            let mut l = indices[offsets[i] as usize..offsets[i + 1] as usize].to_vec();
            l.sort_unstable();
            l
        })
        .collect()
}

/// Sorted, normalised overlapping pairs of boxes, by brute force.
pub fn overlapping_pairs<B: spatium::BoundingBox>(boxes: &[B]) -> Vec<(u32, u32)> {
    let mut bp = BruteForceBroadPhase::new(make::brute_slots::<B>(boxes.len()));
    for (i, b) in boxes.iter().enumerate() {
        bp.insert(i as u32, *b).expect("oracle insert");
    }
    collect_box_pairs(&mut bp)
}

/// Sorted, normalised pairs of any broad phase.
pub fn collect_box_pairs<B: spatium::BoundingBox, S: BroadPhase<B>>(s: &mut S) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    s.for_each_overlap(|i, j| v.push((i.min(j), i.max(j))))
        .expect("pairs");
    v.sort_unstable();
    v
}

/// Up to five pairs of `want` that `got` lacks (both sorted).
pub fn missing_pairs(got: &[(u32, u32)], want: &[(u32, u32)]) -> Vec<(u32, u32)> {
    want.iter()
        .filter(|p| got.binary_search(p).is_err())
        .take(5)
        .copied()
        .collect()
}

/// Panics with the counts and up to five extra and missing pairs unless the
/// sorted pair sets are equal.
pub fn assert_same_pairs(got: &[(u32, u32)], want: &[(u32, u32)], what: &str) {
    if got != want {
        panic!(
            "{what}: {} pairs, want {}; extra {:?}, missing {:?}",
            got.len(),
            want.len(),
            missing_pairs(want, got),
            missing_pairs(got, want)
        );
    }
}
