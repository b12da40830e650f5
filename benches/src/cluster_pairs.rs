//! Issue 17 item 3, the cluster-pair experiment: fixed-radius pairs found
//! the way GROMACS's non-bonded search finds them, measured against
//! [`CellSortedHash`](spatium::uniform::CellSortedHash) on the same input.
//!
//! This is a prototype in the benchmark crate, not a structure of the core:
//! it allocates, and it exists to answer whether the scheme is worth moving
//! into `core/` (the answer, with the figures, is in the README's benchmark
//! section and in `ARCHITECTURE.md`).
//!
//! The scheme:
//! * the points are binned into square **columns** on the x–y plane (edge
//!   `column_edge`), by a counting sort; each column's points are sorted
//!   by z and cut into **clusters** of `M` consecutive points, the last one
//!   padded with NaN positions (a NaN distance never passes `d² < r²`, so
//!   padding needs no mask);
//! * each cluster keeps its bounding box; the positions are stored
//!   structure-of-arrays in cluster order, so one cluster is `M`
//!   consecutive floats per axis;
//! * a cluster `i` is paired with every cluster `j` of the same or a
//!   forward column (half stencil: each unordered pair once) whose box lies
//!   within `r` of `i`'s. Along a column the clusters are z-sorted, so the
//!   candidates of one column are one contiguous range, found by a cursor
//!   that only moves forward as `i` climbs its column;
//! * each accepted cluster pair runs an `M × M` distance kernel: all `M²`
//!   distances first (a loop LLVM vectorises), then the hits.
//!
//! The cluster-pair list can be kept ([`ClusterPairs::build_list`]) and
//! swept again without searching ([`ClusterPairs::for_each_listed`]):
//! what a simulation with a Verlet skin pays on the steps between
//! rebuilds (the list is built at `r + skin` and each sweep tests `r`).

use spatium::Vec3;

/// For each byte, the positions of its set bits, in order (the rest zero).
const SET_BITS: [[u8; 8]; 256] = {
    let mut out = [[0u8; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let (mut n, mut l) = (0, 0);
        while l < 8 {
            if m & (1 << l) != 0 {
                out[m][n] = l as u8;
                n += 1;
            }
            l += 1;
        }
        m += 1;
    }
    out
};

/// Points binned into z-sorted columns and cut into clusters of `M`.
#[derive(Debug, Default)]
pub struct ClusterPairs<const M: usize> {
    column_edge: f32,
    radius: f32,
    cols: [usize; 2],
    /// First cluster of each column, plus one entry.
    col_start: Vec<u32>,
    /// Positions in cluster order, `M` per cluster (NaN padding).
    xs: Vec<f32>,
    ys: Vec<f32>,
    zs: Vec<f32>,
    /// Input id of each position (padding: `u32::MAX`).
    ids: Vec<u32>,
    /// Bounding box of each cluster: `[lo.x, lo.y, lo.z, hi.x, hi.y, hi.z]`.
    boxes: Vec<[f32; 6]>,
    /// Scratch of the build: per point its column, the column starts and
    /// the scatter's cursors.
    col_of: Vec<u32>,
    counts: Vec<u32>,
    next: Vec<u32>,
    order: Vec<u32>,
    /// The kept cluster-pair list (`build_list`).
    list: Vec<(u32, u32)>,
}

/// What one sweep did: the cluster pairs it tested and the pairs it found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Cluster pairs whose boxes passed the test (each runs the kernel).
    pub cluster_pairs: u64,
    /// Point pairs within the radius.
    pub pairs: u64,
}

impl Sweep {
    /// Point pairs found per distance computed by the kernels.
    pub fn efficiency<const M: usize>(&self) -> f64 {
        self.pairs as f64 / (self.cluster_pairs as f64 * (M * M) as f64).max(1.0)
    }
}

impl<const M: usize> ClusterPairs<M> {
    /// An empty structure whose columns are `column_edge` wide.
    pub fn new(column_edge: f32) -> Self {
        Self {
            column_edge,
            ..Self::default()
        }
    }

    /// Bins `points` for pairs within `radius` (finite input assumed: a
    /// prototype, measured on the benchmark scene only).
    pub fn build(&mut self, points: &[Vec3], radius: f32) {
        self.radius = radius;
        let (mut lo, mut hi) = ([f32::INFINITY; 2], [f32::NEG_INFINITY; 2]);
        for p in points {
            lo[0] = lo[0].min(p.x);
            lo[1] = lo[1].min(p.y);
            hi[0] = hi[0].max(p.x);
            hi[1] = hi[1].max(p.y);
        }
        let inv = 1.0 / self.column_edge;
        let nx = (((hi[0] - lo[0]) * inv) as usize + 1).max(1);
        let ny = (((hi[1] - lo[1]) * inv) as usize + 1).max(1);
        self.cols = [nx, ny];
        let ncols = nx * ny;
        // Counting sort by column.
        self.counts.clear();
        self.counts.resize(ncols + 1, 0);
        self.col_of.clear();
        for p in points {
            let cx = (((p.x - lo[0]) * inv) as usize).min(nx - 1);
            let cy = (((p.y - lo[1]) * inv) as usize).min(ny - 1);
            let c = (cx + nx * cy) as u32;
            self.col_of.push(c);
            self.counts[c as usize + 1] += 1;
        }
        for c in 0..ncols {
            self.counts[c + 1] += self.counts[c];
        }
        self.order.clear();
        self.order.resize(points.len(), 0);
        self.next.clear();
        self.next.extend_from_slice(&self.counts);
        for (i, &c) in self.col_of.iter().enumerate() {
            let slot = &mut self.next[c as usize];
            self.order[*slot as usize] = i as u32;
            *slot += 1;
        }
        // Each column sorted by z, then cut into clusters.
        self.col_start.clear();
        self.xs.clear();
        self.ys.clear();
        self.zs.clear();
        self.ids.clear();
        self.boxes.clear();
        for c in 0..ncols {
            self.col_start.push(self.boxes.len() as u32);
            let (a, b) = (self.counts[c] as usize, self.counts[c + 1] as usize);
            let col = &mut self.order[a..b];
            col.sort_unstable_by(|&i, &j| points[i as usize].z.total_cmp(&points[j as usize].z));
            for chunk in col.chunks(M) {
                let mut bx = [
                    f32::INFINITY,
                    f32::INFINITY,
                    f32::INFINITY,
                    f32::NEG_INFINITY,
                    f32::NEG_INFINITY,
                    f32::NEG_INFINITY,
                ];
                for &i in chunk {
                    let p = points[i as usize];
                    self.xs.push(p.x);
                    self.ys.push(p.y);
                    self.zs.push(p.z);
                    self.ids.push(i);
                    for (a, v) in [p.x, p.y, p.z].into_iter().enumerate() {
                        bx[a] = bx[a].min(v);
                        bx[a + 3] = bx[a + 3].max(v);
                    }
                }
                for _ in chunk.len()..M {
                    self.xs.push(f32::NAN);
                    self.ys.push(f32::NAN);
                    self.zs.push(f32::NAN);
                    self.ids.push(u32::MAX);
                }
                self.boxes.push(bx);
            }
        }
        self.col_start.push(self.boxes.len() as u32);
    }

    /// Calls `visit(i, j)` for every cluster pair (`i ≤ j`, each unordered
    /// pair once, `i == j` for a cluster with itself) whose boxes lie within
    /// `reach` of each other.
    fn for_each_cluster_pair(&self, reach: f32, mut visit: impl FnMut(u32, u32)) {
        let [nx, ny] = self.cols;
        let span = (reach / self.column_edge).ceil() as isize;
        let r2 = reach * reach;
        // The half stencil of columns: this one, the rest of its row ahead,
        // and every column of the rows ahead within reach.
        let mut stencil = Vec::new();
        for dy in 0..=span {
            for dx in -span..=span {
                if dy > 0 || dx >= 0 {
                    stencil.push((dx, dy));
                }
            }
        }
        let mut cursor = vec![0u32; stencil.len()];
        // The neighbour columns of the current one: (column, first, end).
        let mut nbrs: Vec<(usize, u32, u32)> = Vec::with_capacity(stencil.len());
        for cy in 0..ny {
            for cx in 0..nx {
                let c = cx + nx * cy;
                let (i0, i1) = (self.col_start[c], self.col_start[c + 1]);
                // The neighbour columns and their cursors.
                nbrs.clear();
                for &(dx, dy) in &stencil {
                    let (x, y) = (cx as isize + dx, cy as isize + dy);
                    if x < 0 || x >= nx as isize || y >= ny as isize {
                        continue;
                    }
                    let n = x as usize + nx * y as usize;
                    nbrs.push((n, self.col_start[n], self.col_start[n + 1]));
                }
                for (k, (_, a, _)) in nbrs.iter().enumerate() {
                    cursor[k] = *a;
                }
                for i in i0..i1 {
                    let bi = self.boxes[i as usize];
                    for (k, &(n, _, b)) in nbrs.iter().enumerate() {
                        // Same column: only clusters from i on.
                        let mut j = if n == c { i } else { cursor[k] };
                        // Skip the clusters wholly below i's reach (their
                        // tops only rise along the column).
                        while j < b && self.boxes[j as usize][5] < bi[2] - reach {
                            j += 1;
                        }
                        if n != c {
                            cursor[k] = j;
                        }
                        while j < b {
                            let bj = self.boxes[j as usize];
                            if bj[2] > bi[5] + reach {
                                break;
                            }
                            let mut d2 = 0.0;
                            for a in 0..3 {
                                let g = (bj[a] - bi[a + 3]).max(bi[a] - bj[a + 3]).max(0.0);
                                d2 += g * g;
                            }
                            if d2 < r2 {
                                visit(i, j);
                            }
                            j += 1;
                        }
                    }
                }
            }
        }
    }

    /// The `M × M` kernel of one cluster pair: `f(id, id, d²)` for every
    /// point pair within the radius (for `i == j`, each pair once). All
    /// `M²` distances first, into one hit mask (`M ≤ 8`: 64 bits), then one
    /// loop over the set bits: one loop exit per cluster pair, not per row.
    #[inline(always)]
    fn kernel<F: FnMut(u32, u32, f32)>(&self, i: u32, j: u32, r2: f32, f: &mut F) -> u64 {
        let (a, b) = (i as usize * M, j as usize * M);
        let (Some(xi), Some(yi), Some(zi)) = (
            self.xs.get(a..a + M),
            self.ys.get(a..a + M),
            self.zs.get(a..a + M),
        ) else {
            return 0;
        };
        let (Some(xj), Some(yj), Some(zj)) = (
            self.xs.get(b..b + M),
            self.ys.get(b..b + M),
            self.zs.get(b..b + M),
        ) else {
            return 0;
        };
        let mut mask = 0u64;
        let mut d = [[0.0f32; M]; M];
        for p in 0..M {
            for q in 0..M {
                let (dx, dy, dz) = (xi[p] - xj[q], yi[p] - yj[q], zi[p] - zj[q]);
                d[p][q] = dx * dx + dy * dy + dz * dz;
            }
            for (q, &dq) in d[p].iter().enumerate() {
                mask |= u64::from(dq < r2) << (p * M + q);
            }
        }
        if i == j {
            mask &= Self::UPPER;
        }
        // The hits as a list of bit positions, written without a branch per
        // hit (each byte of the mask through a table of its set bits), then
        // one tight loop of calls.
        let mut list = [0u8; 64 + 8];
        let mut h = 0usize;
        for byte in 0..(M * M).div_ceil(8) {
            let m = ((mask >> (8 * byte)) & 0xff) as usize;
            let set = &SET_BITS[m];
            for (o, &l) in list[h..h + 8].iter_mut().zip(set) {
                *o = l + 8 * byte as u8;
            }
            h += m.count_ones() as usize;
        }
        let (ids_i, ids_j) = (&self.ids[a..a + M], &self.ids[b..b + M]);
        for &bit in &list[..h] {
            let (p, q) = (bit as usize / M, bit as usize % M);
            f(ids_i[p], ids_j[q], d[p][q]);
        }
        h as u64
    }

    /// The bits `p·M + q` with `q > p`: each pair of a cluster with itself once.
    const UPPER: u64 = {
        let mut m = 0u64;
        let mut p = 0;
        while p < M {
            let mut q = p + 1;
            while q < M {
                m |= 1 << (p * M + q);
                q += 1;
            }
            p += 1;
        }
        m
    };

    /// Every pair within the radius of the last build, each once, searched
    /// and swept in one pass (no list kept).
    pub fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) -> Sweep {
        let r2 = self.radius * self.radius;
        let mut s = Sweep::default();
        self.for_each_cluster_pair(self.radius, |i, j| {
            s.cluster_pairs += 1;
            s.pairs += self.kernel(i, j, r2, &mut f);
        });
        s
    }

    /// Searches the cluster pairs within `radius + skin` and keeps them.
    pub fn build_list(&mut self, skin: f32) -> usize {
        let mut list = core::mem::take(&mut self.list);
        list.clear();
        self.for_each_cluster_pair(self.radius + skin, |i, j| list.push((i, j)));
        self.list = list;
        self.list.len()
    }

    /// Sweeps the kept list: every pair within the radius among the listed
    /// cluster pairs (all of them when the points have not moved by more
    /// than half the skin since the list was built).
    pub fn for_each_listed<F: FnMut(u32, u32, f32)>(&self, mut f: F) -> Sweep {
        let r2 = self.radius * self.radius;
        let mut s = Sweep::default();
        for &(i, j) in &self.list {
            s.cluster_pairs += 1;
            s.pairs += self.kernel(i, j, r2, &mut f);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spatium::{BruteForceNeighbors, NeighborSearch};
    use spatium_host::scenarios;

    fn pairs_of(mut v: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
        for p in &mut v {
            *p = (p.0.min(p.1), p.0.max(p.1));
        }
        v.sort_unstable();
        v
    }

    fn check<const M: usize>(points: &[Vec3], radius: f32, edge: f32) {
        let mut brute = BruteForceNeighbors::new(vec![Vec3::ZERO; points.len()]);
        brute.build(points, radius).unwrap();
        let mut want = Vec::new();
        brute.for_each_pair(|i, j, _| want.push((i, j)));
        let want = pairs_of(want);

        let mut c = ClusterPairs::<M>::new(edge);
        c.build(points, radius);
        let mut got = Vec::new();
        let s = c.for_each_pair(|i, j, d2| {
            assert!(d2 < radius * radius);
            got.push((i, j));
        });
        assert_eq!(s.pairs as usize, got.len());
        assert_eq!(pairs_of(got), want, "M = {M}, edge {edge}");

        let skin = 0.25 * radius;
        c.build_list(skin);
        let mut listed = Vec::new();
        c.for_each_listed(|i, j, _| listed.push((i, j)));
        assert_eq!(pairs_of(listed), want, "listed, M = {M}, edge {edge}");
    }

    /// Every scenario generator, against brute force, for both cluster
    /// sizes and column edges below, at and above the radius.
    #[test]
    fn cluster_pairs_match_brute_force_on_every_scenario() {
        for s in scenarios::point_scenarios::<Vec3>(600, 17) {
            for edge in [0.6, 1.0, 1.7] {
                let e = edge * s.radius;
                check::<4>(&s.points, s.radius, e);
                check::<8>(&s.points, s.radius, e);
            }
        }
    }
}
