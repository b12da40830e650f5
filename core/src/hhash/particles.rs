//! Particles (the [`NeighborSearch`] side): they live in class 0 and are
//! found by probing the cells around a point.

use crate::error::Error;
use crate::exec::{Executor, Parts, task_count, task_split};
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;
use crate::traits::NeighborSearch;

use super::config::{HashConfig, advance};
use super::{
    ClassHash, HashBucket, HashEntry, HashSlot, MAX_ELEMENTS, PARTICLE, STAMP_MASK, Scheme,
};

impl<S, B, Sl, Bk, En, Pt> ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    /// Calls `f(j, d²)` for every particle within radius of `p`, from a
    /// probe of the cells of `[p − r, p + r]` at level 0 (the 27- or 9-point
    /// probe of Listing 3, every cell in between included).
    #[inline(always)]
    pub(super) fn particles_near<F: FnMut(u32, f32)>(&self, p: B::Point, mut f: F) {
        let r = self.radius;
        let lo = B::Point::from_fn(|k| p.coord(k) - r);
        let hi = B::Point::from_fn(|k| p.coord(k) + r);
        let (clo, chi) = (self.config.base_cell(lo), self.config.base_cell(hi));
        let parts = &self.particles.as_ref()[..self.n_particles as usize];
        let r2 = r * r;
        let report = |j: u32, cell: &[i32; 3], f: &mut F| {
            let q = parts[j as usize];
            let d2 = p.distance_squared(q);
            // A particle is reported from its own cell only (a bucket shared
            // by two probed cells is read twice).
            if d2 < r2 && self.config.base_cell(q) == *cell {
                f(j, d2);
            }
        };
        if self.too_many_cells(&clo, &chi, 0) {
            for (j, q) in parts.iter().enumerate() {
                let d2 = p.distance_squared(*q);
                if d2 < r2 {
                    f(j as u32, d2);
                }
            }
            return;
        }
        if !S::HIERARCHICAL {
            // Multilevel: particles live in class 0 alone, whose cells are
            // keyed by their own hash (uniform hashing, the paper's §2.1).
            if self.stamp == 0 || self.occupied & 1 == 0 {
                return;
            }
            let table = self.table.as_ref();
            let mut c = clo;
            loop {
                let b = self.bucket_of(Self::h(&c, 0));
                if table[b].tag & STAMP_MASK == self.stamp {
                    for id in self.entries(b) {
                        if id & PARTICLE != 0 {
                            report(id & !PARTICLE, &c, &mut f);
                        }
                    }
                }
                if !advance::<B::Point>(&mut c, &clo, &chi) {
                    return;
                }
            }
        }
        self.traverse(&clo, &chi, 0, |li, cell, _, b| {
            if li + 1 != self.n_levels {
                return; // particles live at level 0 only
            }
            for id in self.entries(b) {
                if id & PARTICLE != 0 {
                    report(id & !PARTICLE, cell, &mut f);
                }
            }
        });
    }
}

/// Particles per task of the parallel position check and copy.
const BUILD_GRAIN: usize = 1 << 14;
/// Most tasks of the parallel position check (their results live on the
/// stack).
const BUILD_TASKS: usize = 64;

/// Particles per task of the parallel pair enumeration.
const PAIR_GRAIN: usize = 2048;

impl<S, B, Sl, Bk, En, Pt> ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    /// The particle build; `check` finds the first bad position (in index
    /// order) under the build's configuration, `copy` fills the particle
    /// buffer's first `n` slots with the positions.
    fn build_with<C, W>(
        &mut self,
        positions: &[B::Point],
        radius: f32,
        check: C,
        copy: W,
    ) -> Result<(), Error>
    where
        C: FnOnce(&HashConfig<B::Point>) -> Result<(), Error>,
        W: FnOnce(&mut [B::Point]),
    {
        crate::cell::check_radius(radius)?;
        let n = positions.len();
        if n > self.particles.as_ref().len() || n >= MAX_ELEMENTS {
            return Err(Error::CapacityExceeded {
                capacity: self.particles.as_ref().len(),
            });
        }
        let config = if self.base_follows_radius {
            HashConfig {
                base: radius,
                inv_base: 1.0 / radius,
                ..self.config
            }
        } else {
            self.config
        };
        check(&config)?;
        let objects_need = if config != self.config {
            self.objects_need(&config)?
        } else {
            self.object_entries
        };
        if objects_need.saturating_add(n as u64) > self.pool.as_ref().len() as u64 {
            return Err(self.capacity_error());
        }
        self.ready()?;
        if config != self.config {
            self.adopt(config, objects_need);
        }
        copy(&mut self.particles.as_mut()[..n]);
        self.n_particles = n as u32;
        self.radius = radius;
        self.rebuild();
        Ok(())
    }
}

/// The first position that is not finite or not in the cell range.
fn check_positions<P: Point>(config: &HashConfig<P>, positions: &[P]) -> Result<(), Error> {
    for p in positions {
        if !p.is_finite() {
            return Err(Error::NonFinite);
        }
        config.stored_cell(*p)?;
    }
    Ok(())
}

impl<S, B, Sl, Bk, En, Pt> NeighborSearch<B::Point> for ClassHash<S, B, Sl, Bk, En, Pt>
where
    S: Scheme,
    B: BoundingBox,
    Sl: Storage<HashSlot<B>>,
    Bk: Storage<HashBucket>,
    En: Storage<HashEntry>,
    Pt: Storage<B::Point>,
{
    /// Replaces the particles (objects stay). With
    /// [`for_particles`](ClassHash::for_particles) the smallest class
    /// becomes `radius`; otherwise any radius works with the configured
    /// classes. Every stored element is rehashed into a fresh step.
    ///
    /// Cost: `O(N)` to check and copy the positions, then a rehash
    /// ([`rehash`](ClassHash::rehash): `O(C + E)`, times the classes above
    /// each cell in hierarchical hashing); with `for_particles` a new radius
    /// also re-classes the objects (`O(C)`).
    ///
    /// # Errors
    /// [`Error::InvalidRadius`], [`Error::NonFinite`], [`Error::OutOfRange`],
    /// [`Error::CapacityExceeded`] (particle buffer or pool),
    /// [`Error::InvalidTableLength`] at first use; nothing changes on
    /// error.
    fn build(&mut self, positions: &[B::Point], radius: f32) -> Result<(), Error> {
        self.build_with(
            positions,
            radius,
            |config| check_positions(config, positions),
            |dst| dst.copy_from_slice(positions),
        )
    }

    /// [`build`](NeighborSearch::build) with the positions checked and
    /// copied by tasks on `exec`; the rehash stays serial (see
    /// [`ClassHash::par_for_each_candidate_pair`]'s notes). The same table
    /// and errors as `build`.
    ///
    /// # Errors
    /// As [`build`](NeighborSearch::build).
    fn par_build<E: Executor>(
        &mut self,
        exec: &E,
        positions: &[B::Point],
        radius: f32,
    ) -> Result<(), Error> {
        if exec.workers() <= 1 {
            // One worker: the serial build is the same table in fewer
            // passes.
            return self.build(positions, radius);
        }
        let n = positions.len();
        let (tasks, grain) = task_split(n, BUILD_GRAIN, BUILD_TASKS);
        let check = |config: &HashConfig<B::Point>| {
            let mut errs = [None; BUILD_TASKS];
            exec.run(
                tasks,
                Parts::chunks(&mut errs[..tasks], 1),
                |t, mut part| {
                    let lo = t.saturating_mul(grain).min(n);
                    let hi = lo.saturating_add(grain).min(n);
                    if let Some(slot) = part.slice().first_mut() {
                        *slot = check_positions(config, &positions[lo..hi]).err();
                    }
                },
            );
            // The first bad position in index order, as the serial check.
            errs[..tasks].iter().find_map(|e| *e).map_or(Ok(()), Err)
        };
        let copy = |dst: &mut [B::Point]| {
            exec.run(tasks, Parts::chunks(dst, grain), |_, mut part| {
                let start = part.start();
                let dst = part.slice();
                if let Some(src) = positions.get(start..start + dst.len()) {
                    dst.copy_from_slice(src);
                }
            });
        };
        self.build_with(positions, radius, check, copy)
    }

    fn len(&self) -> usize {
        self.n_particles as usize
    }

    fn radius(&self) -> f32 {
        self.radius
    }

    fn position(&self, id: u32) -> Option<B::Point> {
        self.particles.as_ref()[..self.n_particles as usize]
            .get(id as usize)
            .copied()
    }

    /// The particles within the radius of particle `id`, from the cells of
    /// its box of half-width `r` at class 0 (hierarchical hashing reaches
    /// them through the classes above, skipping empty space). Cost: the
    /// `3^d` cells around it (more when the radius exceeds the class-0 cell)
    /// and their entries; bounded by a scan of the `N` particles, like
    /// [`query_candidates`](ClassHash::query_candidates).
    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, mut f: F) -> Result<(), Error> {
        let p = self.position(id).ok_or(Error::UnknownId { id })?;
        self.particles_near(p, |j, d2| {
            if j != id {
                f(j, d2)
            }
        });
        Ok(())
    }

    /// As [`for_each_neighbor`](Self::for_each_neighbor), around any point.
    fn for_each_within<F: FnMut(u32, f32)>(&self, point: B::Point, f: F) -> Result<(), Error> {
        if !point.is_finite() {
            return Err(Error::NonFinite);
        }
        if self.n_particles > 0 {
            self.particles_near(point, f);
        }
        Ok(())
    }

    /// Every pair within the radius once: each particle queries its cells
    /// and keeps the particles before it (Listing 3). `O(N)` neighbour
    /// queries.
    /// One task per 2048 particles (at least one).
    fn pair_tasks(&self) -> usize {
        task_count(self.n_particles as usize, PAIR_GRAIN)
    }

    /// [`for_each_pair`](NeighborSearch::for_each_pair) in
    /// [`pair_tasks`](NeighborSearch::pair_tasks) tasks of consecutive
    /// particles: the sinks, concatenated in order, hold the serial pairs
    /// in the serial order.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] with too few sinks (nothing is called).
    fn par_for_each_pair<E, K, F>(&self, exec: &E, sinks: &mut [K], f: F) -> Result<(), Error>
    where
        E: Executor,
        K: Send,
        F: Fn(&mut K, u32, u32, f32) + Sync,
        Self: Sync,
    {
        let tasks = self.pair_tasks();
        let available = sinks.len();
        let sinks = sinks.get_mut(..tasks).ok_or(Error::BufferTooSmall {
            needed: tasks,
            available,
        })?;
        let n = self.n_particles as usize;
        let parts = &self.particles.as_ref()[..n];
        exec.run(tasks, Parts::chunks(sinks, 1), |t, mut part| {
            let Some(sink) = part.slice().first_mut() else {
                return;
            };
            let lo = t.saturating_mul(PAIR_GRAIN).min(n);
            let hi = lo.saturating_add(PAIR_GRAIN).min(n);
            for (k, p) in parts[lo..hi].iter().enumerate() {
                let i = (lo + k) as u32;
                self.particles_near(*p, |j, d2| {
                    if j < i {
                        f(sink, j, i, d2)
                    }
                });
            }
        });
        Ok(())
    }

    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, mut f: F) {
        let parts = self.particles.as_ref();
        for i in 0..self.n_particles {
            // Listing 3: each particle meets the ones before it.
            self.particles_near(parts[i as usize], |j, d2| {
                if j < i {
                    f(j, i, d2)
                }
            });
        }
    }
}
