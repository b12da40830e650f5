//! The point-search peers behind spatium's own [`NeighborSearch`] trait, so
//! the neighbour-search runner drives every implementation through one
//! interface (the SPH experiment's splashsurf adapter is
//! [`crate::sph_scene::SplashsurfSearch`]).
//!
//! Each adapter does the work the peer's own API asks for, nothing more:
//!
//! * `build` builds the peer's tree from the positions (kiddo reads them in
//!   place as `[f32; 3]`; rstar's `bulk_load` consumes a `Vec` of its own
//!   item type, so making that `Vec` is part of the build) and keeps a copy
//!   of the positions for the trait's `position` and the pair loop (one
//!   sequential copy, under 1 % of either peer's build + pairs at 10⁶).
//! * `for_each_pair`: one within-radius query per particle, pairs kept
//!   when the other id is larger.
//! * `neighbor_lists`: one query per particle, the row written at a cursor
//!   (sequential rows; counting past the end of `indices`, so a short
//!   buffer gets the exact size needed, as spatium's structures do).
//!
//! Radius conventions: kiddo with `exclusive_boundaries` tests `d² < r²`,
//! the trait's; rstar's `locate_within_distance` tests `d² ≤ r²`, so its
//! adapter drops hits at exactly `r` by recomputing `d²`
//! ([`Point::distance_squared`]). The distances handed to callbacks are the
//! peer's (kiddo) or recomputed (rstar).

use core::fmt;

use kiddo::{ImmutableKdTree, SquaredEuclidean};
use rstar::RTree;
use rstar::primitives::GeomWithData;
use spatium::{Error, NeighborSearch, Point, Vec3};

/// The checks of a peer adapter's build, made before anything changes
/// (also [`crate::sph_scene::SplashsurfSearch`]'s).
pub(crate) fn check_build(positions: &[Vec3], radius: f32) -> Result<(), Error> {
    if !(radius.is_finite() && radius > 0.0 && (radius * radius).is_normal()) {
        return Err(Error::InvalidRadius);
    }
    if positions.iter().any(|p| !p.is_finite()) {
        return Err(Error::NonFinite);
    }
    if u32::try_from(positions.len()).is_err() {
        return Err(Error::CapacityExceeded {
            capacity: u32::MAX as usize,
        });
    }
    Ok(())
}

/// Fills CSR rows from `row(i, push)`, which calls `push(j)` for each
/// neighbour `j` of particle `i`: rows in id order, written at a cursor,
/// counting past the end of `indices`.
fn lists_by_query(
    n: usize,
    offsets: &mut [u32],
    indices: &mut [u32],
    mut row: impl FnMut(usize, &mut dyn FnMut(u32)),
) -> Result<usize, Error> {
    if offsets.len() < n + 1 {
        return Err(Error::BufferTooSmall {
            needed: n + 1,
            available: offsets.len(),
        });
    }
    let mut cursor = 0usize;
    for (i, o) in offsets[..n].iter_mut().enumerate() {
        *o = cursor as u32;
        row(i, &mut |j| {
            if let Some(slot) = indices.get_mut(cursor) {
                *slot = j;
            }
            cursor += 1;
        });
    }
    offsets[n] = cursor as u32;
    if cursor > indices.len() || cursor >= u32::MAX as usize {
        return Err(Error::BufferTooSmall {
            needed: cursor,
            available: indices.len(),
        });
    }
    Ok(cursor)
}

/// What an adapter needs from a peer's tree: a build from the positions
/// and a within-radius query. [`PeerSearch`] turns it into a
/// [`NeighborSearch`].
pub trait PeerTree: Default {
    /// Builds the tree over `positions` (checked finite, at most `u32::MAX`).
    ///
    /// # Errors
    /// What the peer refuses, as a spatium error.
    fn build(&mut self, positions: &[Vec3]) -> Result<(), Error>;

    /// Calls `f(j, d²)` for every particle `j` with `d² < r2` from `p`.
    fn query(&self, p: Vec3, r2: f32, f: impl FnMut(u32, f32));
}

/// A peer's tree with the positions and radius of its last build, as a
/// [`NeighborSearch`]: every query goes through [`PeerTree::query`].
#[derive(Default)]
pub struct PeerSearch<T> {
    tree: T,
    positions: Vec<Vec3>,
    radius: f32,
}

impl<T> fmt::Debug for PeerSearch<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeerSearch")
            .field("tree", &core::any::type_name::<T>())
            .field("len", &self.positions.len())
            .field("radius", &self.radius)
            .finish_non_exhaustive()
    }
}

impl<T: PeerTree> PeerSearch<T> {
    fn query(&self, p: Vec3, f: impl FnMut(u32, f32)) {
        self.tree.query(p, self.radius * self.radius, f);
    }
}

impl<T: PeerTree> NeighborSearch<Vec3> for PeerSearch<T> {
    fn build(&mut self, positions: &[Vec3], radius: f32) -> Result<(), Error> {
        check_build(positions, radius)?;
        self.tree.build(positions)?;
        self.positions.clear();
        self.positions.extend_from_slice(positions);
        self.radius = radius;
        Ok(())
    }

    fn len(&self) -> usize {
        self.positions.len()
    }

    fn radius(&self) -> f32 {
        self.radius
    }

    fn position(&self, id: u32) -> Option<Vec3> {
        self.positions.get(id as usize).copied()
    }

    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, mut f: F) -> Result<(), Error> {
        let p = self.position(id).ok_or(Error::UnknownId { id })?;
        self.query(p, |j, d2| {
            if j != id {
                f(j, d2);
            }
        });
        Ok(())
    }

    fn for_each_within<F: FnMut(u32, f32)>(&self, point: Vec3, f: F) -> Result<(), Error> {
        if !point.is_finite() {
            return Err(Error::NonFinite);
        }
        self.query(point, f);
        Ok(())
    }

    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) {
        for (i, &p) in self.positions.iter().enumerate() {
            let i = i as u32;
            self.query(p, |j, d2| {
                if j > i {
                    f(i, j, d2);
                }
            });
        }
    }

    fn neighbor_lists(&self, offsets: &mut [u32], indices: &mut [u32]) -> Result<usize, Error> {
        lists_by_query(self.positions.len(), offsets, indices, |i, push| {
            self.query(self.positions[i], |j, _| {
                if j as usize != i {
                    push(j);
                }
            });
        })
    }
}

/// kiddo's `ImmutableKdTree` (sequential build, no `multi-threaded`
/// feature): `within` with exclusive boundaries, unsorted.
#[derive(Default)]
pub struct KiddoTree(Option<ImmutableKdTree<f32, 3>>);

impl PeerTree for KiddoTree {
    fn build(&mut self, positions: &[Vec3]) -> Result<(), Error> {
        self.0 = if positions.is_empty() {
            None
        } else {
            let arrays: &[[f32; 3]] = bytemuck::cast_slice(positions);
            Some(
                ImmutableKdTree::new_from_slice(arrays).map_err(|_| Error::CapacityExceeded {
                    capacity: positions.len(),
                })?,
            )
        };
        Ok(())
    }

    fn query(&self, p: Vec3, r2: f32, mut f: impl FnMut(u32, f32)) {
        if let Some(tree) = &self.0 {
            tree.query(&p.to_array())
                .within::<SquaredEuclidean<f32>>(r2)
                .unsorted()
                .exclusive_boundaries()
                .visit(|it| f(it.item, it.distance));
        }
    }
}

/// rstar's `RTree` of points (bulk load): `locate_within_distance`, which
/// keeps `d² ≤ r²`, then the trait's strict test on the recomputed `d²`.
#[derive(Default)]
pub struct RstarTree(RTree<GeomWithData<[f32; 3], u32>>);

impl PeerTree for RstarTree {
    fn build(&mut self, positions: &[Vec3]) -> Result<(), Error> {
        let items = positions
            .iter()
            .enumerate()
            .map(|(i, p)| GeomWithData::new(p.to_array(), i as u32))
            .collect();
        self.0 = RTree::bulk_load(items);
        Ok(())
    }

    fn query(&self, p: Vec3, r2: f32, mut f: impl FnMut(u32, f32)) {
        for g in self.0.locate_within_distance(p.to_array(), r2) {
            let d2 = p.distance_squared(Vec3::from(*g.geom()));
            if d2 < r2 {
                f(g.data, d2);
            }
        }
    }
}

/// kiddo behind [`NeighborSearch`].
pub type KiddoSearch = PeerSearch<KiddoTree>;

/// rstar behind [`NeighborSearch`].
pub type RstarSearch = PeerSearch<RstarTree>;

#[cfg(test)]
mod tests {
    use super::*;
    use spatium_host::oracle::{collect_pairs, csr_lists, neighbors_of, pairs_within, within};
    use spatium_host::scenarios::point_scenarios;

    /// Both adapters against the brute-force oracle on every scenario
    /// generator: pairs, lists, per-particle and point queries, and the
    /// refused inputs.
    fn check<N: NeighborSearch<Vec3> + Default>(name: &str) {
        for sc in point_scenarios::<Vec3>(600, 7) {
            let mut s = N::default();
            s.build(&sc.points, sc.radius).unwrap();
            let oracle = pairs_within(&sc.points, sc.radius);
            assert_eq!(collect_pairs(&s), oracle, "{name} {}: pairs", sc.name);
            let mut b = spatium::BruteForceNeighbors::new(vec![Vec3::ZERO; sc.points.len()]);
            b.build(&sc.points, sc.radius).unwrap();
            assert_eq!(csr_lists(&s), csr_lists(&b), "{name} {}: lists", sc.name);
            for id in (0..sc.points.len() as u32).step_by(37) {
                assert_eq!(neighbors_of(&s, id), neighbors_of(&b, id), "{name}");
                let p = sc.points[id as usize] + Vec3::new(0.1, -0.2, 0.05) * sc.radius;
                assert_eq!(within(&s, p), within(&b, p), "{name}");
            }
        }
        let mut s = N::default();
        assert_eq!(s.build(&[Vec3::ZERO], 0.0), Err(Error::InvalidRadius));
        assert_eq!(
            s.build(&[Vec3::new(f32::NAN, 0.0, 0.0)], 1.0),
            Err(Error::NonFinite)
        );
        s.build(&[], 1.0).unwrap();
        assert_eq!(collect_pairs(&s), Vec::new());
    }

    #[test]
    fn kiddo_adapter_matches_brute_force() {
        check::<KiddoSearch>("kiddo");
    }

    #[test]
    fn rstar_adapter_matches_brute_force() {
        check::<RstarSearch>("rstar");
    }
}
