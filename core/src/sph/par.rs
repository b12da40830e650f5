//! The parallel SPH step: [`Fluid::par_step`], the solver of
//! [`Fluid::step`] in gather form, run as tasks on an
//! [`Executor`].
//!
//! [`Fluid::step`] walks the neighbour pairs once per pass and adds each
//! pair's terms to both particles, which no two workers could do at once
//! without writing the same particle. Here every force pass is a gather
//! ([`NeighborSearch::par_gather`]): particle `i`'s density, normal and
//! acceleration are summed from its own neighbours into `i`'s slot of a
//! caller-provided workspace ([`GatherSlot`]), while every other particle's
//! state is only read; a short pass over contiguous chunks then moves the
//! sums into the particles' state (from neighbour lists, the density pass,
//! which reads only positions, writes the state directly). Integration and walls run on contiguous
//! chunks of particles, each task owning its chunk ([`Parts::chunks`]);
//! obstacles too when there are few of them, otherwise through their broad
//! phase on the calling thread ([`ParCollider`]: a broad-phase query takes
//! `&mut self`, so it cannot be shared by workers safely). No `unsafe`, no
//! allocation.
//!
//! # What runs on the calling thread
//!
//! Besides the obstacles' broad phase above and the search's own serial
//! parts (its build, [`NeighborSearch::spatial_order`]'s copy), only the
//! renumbering into the search's order, in part or in whole:
//!
//! * [`Fluid::par_step_lists`] renumbers the particles into the search's
//!   order in tasks (a gather of every particle's live fields into the
//!   lists' `indices`, free until the lists are written, then a copy back
//!   in chunks); what stays serial is the check that the search's order is
//!   a permutation, a scatter into one bit per particle (`N/8` bytes, in
//!   cache): marking `order[k]` for every `k` cannot be cut into disjoint
//!   pieces per task without knowing the inverse permutation, and safe
//!   Rust on stable cannot view the workspace as atomics. Measured on a
//!   flowing dam break of 262 144 particles: 0.36 ms per renumbering,
//!   0.12 % of a 603 ms one-thread step (thread CPU time).
//! * [`Fluid::par_step_sorted`] given an `order` of `len()` entries only
//!   (no staging room; with more it stages the renumbering there, in
//!   tasks), and `par_step_lists` with `indices` shorter than
//!   [`STAGE_WORDS_PER_DIM`]`·d + 1` entries per particle, renumber in
//!   place, cycle by cycle, on the calling thread: 6.4–7.0 ms per
//!   renumbering on the same dam break, two per leapfrog step, 2.1–2.3 % of
//!   the step, which alone caps the 16-thread speed-up near 12× (Amdahl).
//!
//! The check that the particles are already in the search's order, the
//! saving of the start state, the finiteness check and the restoring of
//! the particles after an error all run in tasks.
//!
//! With boundary particles ([`crate::sph::walls`]), their density share and
//! forces run in tasks too ([`ParCollider::par_add_boundary_density`],
//! [`ParCollider::par_add_boundary_forces`]: a gather per fluid particle);
//! their pressure update runs on the calling thread, since it sums into the
//! boundary particles from the fluid side in fluid id order.
//!
//! # Determinism
//!
//! Each particle's value is computed by one task from its neighbours in the
//! search's order for that particle, which [`NeighborSearch::par_gather`]
//! fixes for every executor; the chunk passes depend on the particle count
//! only. The state after a step is therefore bit-identical for
//! [`Serial`](crate::exec::Serial) and any number of workers. It differs
//! from [`Fluid::step`]'s by rounding only: each pair's terms are computed
//! twice (once from each side) and summed in another order.
//!
//! # Memory
//!
//! The workspace: one [`GatherSlot`] per particle, `4(d + 2)·N` bytes
//! (`20N` in 3D, `16N` in 2D), on top of the fluid's `(24d + 8)·N` and the
//! search's. The per-task results (errors, finiteness) live in fixed stack
//! arrays of [`STEP_TASKS`] entries (256 for the list passes' errors,
//! 6 KiB). [`Fluid::par_step_lists`]' parallel renumbering takes no memory
//! of its own: it stages through `indices`, which needs `4(5d + 1)` bytes
//! per particle for it (64 in 3D, 44 in 2D), less than the lists
//! themselves (about 30 neighbours, 120 bytes, per particle at rest).
//! [`Fluid::par_step_sorted`] stages it in its `order` buffer when that
//! holds `(5d + 2)` entries per particle (`68N` bytes in 3D, `48N` in 2D,
//! instead of `4N`).

use super::boundary::ParCollider;
use super::control::Extremes;
use super::kernel::Kernels;
use super::{Fluid, Integrator, ParticleState, SphParams, Stage, StageTimer, pair_acceleration};
use crate::error::Error;
use crate::exec::{Executor, Parts, task_split};
use crate::geom::Point;
use crate::storage::Storage;
use crate::traits::{GATHER_GRAIN, NeighborSearch};

/// Particles per task of the parallel step's chunk passes (integration,
/// collisions, copies), before [`STEP_TASKS`] caps the task count.
pub const STEP_GRAIN: usize = 4096;

/// Most tasks of one chunk pass: the size of the stack arrays holding the
/// per-task results (an error each, `24·STEP_TASKS` bytes at most).
pub const STEP_TASKS: usize = 64;

/// Staging words per particle and dimension of the parallel renumbering in
/// [`Fluid::par_step_lists`] (position, velocity, start position, start
/// velocity and, with surface tension off, the normal); it also takes one
/// bit per particle, so it runs out of place on the executor when
/// `indices` has at least `STAGE_WORDS_PER_DIM·d + 1` entries per particle
/// (16 in 3D, 11 in 2D), in place on the calling thread otherwise.
pub const STAGE_WORDS_PER_DIM: usize = 5;

/// Where [`Fluid::par_step_synced`] stops for its [`StepSync`], and what
/// is final for every particle at that point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SyncPoint {
    /// Densities and pressures of the force evaluation are written (the
    /// normals and forces passes read them next).
    Density,
    /// Normals are written (the forces pass reads them next); only with
    /// surface tension on.
    Normals,
    /// Leapfrog's half step is taken and resolved against the walls and
    /// solids: positions and velocities are the second evaluation's.
    HalfStep,
}

impl SyncPoint {
    /// How many times a step with `params` stops: per evaluation one
    /// [`Density`](Self::Density) and, with surface tension, one
    /// [`Normals`](Self::Normals); with leapfrog two evaluations and one
    /// [`HalfStep`](Self::HalfStep).
    pub fn per_step<P: Point>(params: &SphParams<P>) -> usize {
        let per_eval = 1 + usize::from(params.surface_tension > 0.0);
        match params.integrator {
            Integrator::Leapfrog => 2 * per_eval + 1,
            Integrator::Euler => per_eval,
        }
    }
}

/// Called by [`Fluid::par_step_synced`] at each [`SyncPoint`] with every
/// particle's position and state, to change what it must (a distributed
/// run overwrites its ghosts with their owners' values). `()` changes
/// nothing.
pub trait StepSync<P: Point> {
    /// The step reached `point`.
    ///
    /// # Errors
    /// Any: the step stops and returns it.
    fn sync(
        &mut self,
        point: SyncPoint,
        x: &mut [P],
        state: &mut [ParticleState<P>],
    ) -> Result<(), Error>;

    /// Whether the step may use boundary particles
    /// ([`crate::sph::walls`]) with this synchronisation: `true` by
    /// default; a distributed run whose ghosts would need the walls'
    /// share from their owners says `false`, and the step refuses walls.
    fn boundary_particles_supported(&self) -> bool {
        true
    }
}

impl<P: Point> StepSync<P> for () {
    #[inline(always)]
    fn sync(&mut self, _: SyncPoint, _: &mut [P], _: &mut [ParticleState<P>]) -> Result<(), Error> {
        Ok(())
    }
}

/// One particle's slot of [`Fluid::par_step`]'s workspace: the sum a
/// gather pass accumulates for it.
///
/// `#[repr(C)]`, no padding (`4(d + 2)` bytes: 20 in 3D, 16 in 2D).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GatherSlot<P> {
    /// The normal (eq. 15) or the acceleration being summed.
    pub sum: P,
    /// The density being summed (eq. 5); NaN once the particle met a bad
    /// neighbour id.
    pub density: f32,
    /// The bad neighbour id a faulty search reported for this particle (an
    /// id past the fluid, or the particle itself); meaningful only when
    /// `density` is NaN.
    pub bad: u32,
}

impl<P: Point> GatherSlot<P> {
    /// An unused slot.
    pub const EMPTY: Self = Self {
        sum: P::ZERO,
        density: 0.0,
        bad: 0,
    };
}

impl<P: Point> Default for GatherSlot<P> {
    /// [`GatherSlot::EMPTY`].
    fn default() -> Self {
        Self::EMPTY
    }
}

/// Particles per task of the passes over the neighbour lists (before
/// [`LIST_TASKS`] caps the count): a quarter of [`GATHER_GRAIN`], so that at
/// 262 144 particles a pass has 256 tasks, 16 per worker on 16 cores, and a
/// worker that starts its last task late holds the others back by a
/// sixteenth of the pass rather than by a quarter.
pub(super) const LIST_GRAIN: usize = GATHER_GRAIN / 4;

/// Most tasks of one list pass: the size of the density pass's per-task
/// error array (`24·LIST_TASKS` bytes of stack).
pub(super) const LIST_TASKS: usize = 256;

/// The caller's workspace of one step.
struct Scratch<'a, P> {
    /// One gather slot per particle.
    work: &'a mut [GatherSlot<P>],
    /// The search's order, when the particles are kept in it, and the
    /// room after it (the renumbering's staging area if large enough).
    order: Option<(&'a mut [u32], &'a mut [u32])>,
    /// Neighbour-list offsets and indices, when the lists are built once
    /// per evaluation (the offsets also hold the search's order).
    lists: Option<(&'a mut [u32], &'a mut [u32])>,
}

/// Calls `f(i, &mut work[i], j, d²)` for every particle `i` and neighbour
/// `j`: from the compressed lists (`offsets`, `indices`, as
/// [`NeighborSearch::neighbor_lists`] writes them, `d²` recomputed from
/// `x` as the searches compute it) if given, else through
/// [`NeighborSearch::par_gather`].
fn gather_pass<P, N, E, F>(
    exec: &E,
    search: &N,
    lists: Option<(&[u32], &[u32])>,
    x: &[P],
    work: &mut [GatherSlot<P>],
    f: F,
) -> Result<(), Error>
where
    P: Point,
    N: NeighborSearch<P> + Sync,
    E: Executor,
    F: Fn(u32, &mut GatherSlot<P>, u32, f32) + Sync,
{
    let Some((offsets, indices)) = lists else {
        return search.par_gather(exec, work, f);
    };
    let n = work.len().min(x.len());
    let (tasks, grain) = task_split(n, LIST_GRAIN, LIST_TASKS);
    exec.run(tasks, Parts::chunks(&mut work[..n], grain), |_, part| {
        let start = part.start();
        for (k, o) in part.into_slice().iter_mut().enumerate() {
            let i = start + k;
            let (Some(&xi), Some(&a), Some(&b)) = (x.get(i), offsets.get(i), offsets.get(i + 1))
            else {
                continue;
            };
            for &j in indices.get(a as usize..b as usize).unwrap_or(&[]) {
                let d2 = x.get(j as usize).map_or(0.0, |&xj| xi.distance_squared(xj));
                f(i as u32, o, j, d2);
            }
        }
    });
    Ok(())
}

/// Whether `order` is the identity (`order[k] == k`), checked in tasks.
fn par_is_identity<E: Executor>(exec: &E, order: &[u32]) -> bool {
    let n = order.len();
    let (tasks, grain) = task_split(n, STEP_GRAIN, STEP_TASKS);
    let mut same = [true; STEP_TASKS];
    exec.run(
        tasks,
        Parts::chunks(&mut same[..tasks], 1),
        |t, mut flag| {
            let lo = (t * grain).min(n);
            let hi = (lo + grain).min(n);
            let ok = (lo..hi).zip(&order[lo..hi]).all(|(k, &o)| o as usize == k);
            if let Some(f) = flag.slice().first_mut() {
                *f = ok;
            }
        },
    );
    same[..tasks].iter().all(|&s| s)
}

/// The first error of the per-task results, in task order.
fn first_error(results: &[Option<Error>]) -> Result<(), Error> {
    match results.iter().flatten().next() {
        Some(&e) => Err(e),
        None => Ok(()),
    }
}

impl<P: Point, X: Storage<P>, S: Storage<ParticleState<P>>> Fluid<P, X, S> {
    /// [`step`](Self::step) on `exec`: the same solver (density and
    /// pressure, Akinci normals, pressure, viscosity, surface tension and
    /// gravity, the same integrator, walls and obstacles), with every force
    /// pass a gather over each particle's neighbours
    /// ([`NeighborSearch::par_gather`]) and the other passes run on chunks
    /// of particles. `search` is rebuilt with
    /// [`NeighborSearch::par_build`] before each force evaluation; `solids`
    /// resolve the particles on `exec` ([`ParCollider`]); `work` holds one
    /// [`GatherSlot`] per particle (at least [`len`](Self::len); its
    /// contents on entry do not matter and on return are unspecified).
    ///
    /// The result is bit-identical for every executor and number of workers
    /// (see [the module](self)); it equals `step`'s up to rounding.
    ///
    /// # Errors
    /// As [`step`](Self::step): the parameters' errors, the search's build
    /// errors, [`Error::LengthMismatch`], [`Error::UnknownId`] for a faulty
    /// search (the first particle, in id order, that was given an id past
    /// the fluid or itself as a neighbour, with that id), the solids'
    /// errors, [`Error::NonFinite`] if the scene diverged,
    /// [`Error::Diverged`] past a bound of the fluid's
    /// [`StepControl`](super::StepControl) (the report, bit-identical for
    /// every executor, stays in [`last_report`](Self::last_report)); and
    /// [`Error::BufferTooSmall`] if `work` is shorter than `len()` (checked
    /// first: nothing changes). On error the particles are restored to where
    /// the step began (densities, pressures, normals and accelerations of
    /// the failed evaluation may remain).
    ///
    /// # Cost
    /// Per force evaluation: one parallel build and three gathers,
    /// `O(N + pairs)` work like `step`'s, but each pair's kernels are
    /// evaluated from both sides (twice `step`'s arithmetic per pair, with
    /// no write to the neighbour). Obstacles: see [`ParCollider`]. No
    /// allocation.
    ///
    /// ```
    /// use spatium::exec::Serial;
    /// use spatium::sph::{Fluid, GatherSlot, ParticleState, SphParams};
    /// use spatium::uniform::{CellRecord, CellSortedHash, SortedParticle, TableSlot};
    /// use spatium::{Aabb3, Vec3};
    ///
    /// let domain = Aabb3::new(Vec3::ZERO, Vec3::new(0.4, 0.4, 0.4))?;
    /// let params = SphParams::seed(domain, 0.02)?;
    /// let mut fluid = Fluid::new([Vec3::ZERO; 1000], [ParticleState::EMPTY; 1000], params);
    /// fluid.fill_block(Aabb3::new(Vec3::ZERO, Vec3::new(0.2, 0.2, 0.2))?, 0.02, Vec3::ZERO)?;
    /// let mut hash = CellSortedHash::<Vec3, _, _, _>::new(
    ///     [TableSlot::EMPTY; 2048], [SortedParticle::EMPTY; 1000], [CellRecord::EMPTY; 1000]);
    /// let mut work = [GatherSlot::EMPTY; 1000];
    /// for _ in 0..10 {
    ///     // A host passes a thread pool here (spatium_host::par::HostExec).
    ///     fluid.par_step(&Serial, &mut hash, &mut (), &mut (), &mut work)?;
    /// }
    /// assert!(fluid.state().iter().all(|s| s.density > 0.0));
    /// # Ok::<(), spatium::Error>(())
    /// ```
    pub fn par_step<E, N, C, T>(
        &mut self,
        exec: &E,
        search: &mut N,
        solids: &mut C,
        timer: &mut T,
        work: &mut [GatherSlot<P>],
    ) -> Result<(), Error>
    where
        E: Executor,
        N: NeighborSearch<P> + Sync,
        C: ParCollider<P>,
        T: StageTimer,
    {
        self.par_step_synced(exec, search, solids, timer, work, &mut ())
    }

    /// [`par_step`](Self::par_step), stopping at each [`SyncPoint`] for
    /// `sync` to overwrite particles' values: a distributed run refreshes
    /// its ghost particles there with their owners' values (spatium-mpi's
    /// `DistFluid`), so that a ghost layer of `h` plus the step's motion
    /// suffices. Between the points everything is as in `par_step`; with a
    /// `sync` that changes nothing the result is `par_step`'s, bit for bit.
    /// The points, in order, for one step: per force evaluation
    /// [`SyncPoint::Density`] and (with surface tension on)
    /// [`SyncPoint::Normals`]; with leapfrog, [`SyncPoint::HalfStep`]
    /// between the two evaluations — see [`SyncPoint::per_step`].
    ///
    /// # Errors
    /// As [`par_step`](Self::par_step), and `sync`'s error (the step stops
    /// there and the particles are restored to where it began).
    pub fn par_step_synced<E, N, C, T, Y>(
        &mut self,
        exec: &E,
        search: &mut N,
        solids: &mut C,
        timer: &mut T,
        work: &mut [GatherSlot<P>],
        sync: &mut Y,
    ) -> Result<(), Error>
    where
        E: Executor,
        N: NeighborSearch<P> + Sync,
        C: ParCollider<P>,
        T: StageTimer,
        Y: StepSync<P>,
    {
        let scratch = Scratch {
            work,
            order: None,
            lists: None,
        };
        self.par_step_with(exec, search, solids, timer, scratch, sync)
    }

    /// [`par_step`](Self::par_step), keeping the particles in `search`'s
    /// storage order: after each build (two per leapfrog step) that finds
    /// them out of that order ([`NeighborSearch::spatial_order`] is not the
    /// identity), the particles are renumbered into it — as
    /// [`renumber`](Self::renumber), but keeping the step's start state —
    /// and the search is built again. A search that sorts its input
    /// ([`crate::uniform::CellSortedHash`]) then copies it and gathers in
    /// storage order, its fast path; the particles drift across cells
    /// during a step, so without this the half-step build of a leapfrog
    /// step would miss that path even when the caller renumbers between
    /// steps. Searches that keep their input order cost one `O(N)` check
    /// per build (in tasks). `order` holds one `u32` per particle (`4N`
    /// bytes); with that much the renumbering itself runs in place on the
    /// calling thread. Given at least `(`[`STAGE_WORDS_PER_DIM`]`·d + 2)·len()`
    /// entries (17 per particle in 3D, 12 in 2D: `68N` or `48N` bytes), the
    /// entries past `len()` stage it and it runs in tasks, as in
    /// [`par_step_lists`](Self::par_step_lists) (the same result either
    /// way).
    ///
    /// Particle ids change (every particle's data moves with it, as with
    /// `renumber`); the result is deterministic and the same for every
    /// executor, and equals `par_step`'s up to rounding and that
    /// permutation.
    ///
    /// # Errors
    /// As [`par_step`](Self::par_step), and [`Error::BufferTooSmall`] if
    /// `order` is shorter than [`len`](Self::len) (checked first: nothing
    /// changes); [`Error::UnknownId`] if the search's order is not a
    /// permutation. On error the particles are restored to where the step
    /// began, possibly renumbered.
    pub fn par_step_sorted<E, N, C, T>(
        &mut self,
        exec: &E,
        search: &mut N,
        solids: &mut C,
        timer: &mut T,
        work: &mut [GatherSlot<P>],
        order: &mut [u32],
    ) -> Result<(), Error>
    where
        E: Executor,
        N: NeighborSearch<P> + Sync,
        C: ParCollider<P>,
        T: StageTimer,
    {
        let n = self.len;
        if order.len() < n {
            return Err(Error::BufferTooSmall {
                needed: n,
                available: order.len(),
            });
        }
        let scratch = Scratch {
            work,
            order: Some(order.split_at_mut(n)),
            lists: None,
        };
        self.par_step_with(exec, search, solids, timer, scratch, &mut ())
    }

    /// [`par_step_sorted`](Self::par_step_sorted) with each particle's
    /// neighbours listed once per force evaluation
    /// ([`NeighborSearch::par_neighbor_lists`] into `offsets` and `indices`)
    /// and the three gather passes reading those lists (`d²` recomputed)
    /// instead of searching three times: the gather form's counterpart of
    /// [`crate::PairCache`]. `offsets` needs `len() + 1` entries (its first
    /// `len()` also hold the search's order while the particles are
    /// renumbered); `indices` the number of neighbours, twice the pairs
    /// (about 30 per particle in a fluid at rest with `h = 2·spacing`), and
    /// about twice that for the lists to be written in one sweep on
    /// several workers (see the cell-sorted hash's
    /// [`par_neighbor_lists`](NeighborSearch::par_neighbor_lists)). An
    /// evaluation whose lists do not fit in `indices` gathers through the
    /// search instead (slower, same physics; decided by the input alone, so
    /// still the same for every executor). Until the lists are written,
    /// `indices` is also the staging area of the renumbering, which then
    /// runs in tasks (see [the module](self)) if `indices` has at least
    /// [`STAGE_WORDS_PER_DIM`]`·d + 1` entries per particle (16 in 3D, 11 in
    /// 2D; fewer: in place on the calling thread, the same result). Memory:
    /// `4(N + 1) + 4·indices` bytes on top of `par_step`'s.
    ///
    /// Particle ids change as with `par_step_sorted`; the result is
    /// deterministic and the same for every executor.
    ///
    /// # Errors
    /// As [`par_step_sorted`](Self::par_step_sorted), with
    /// [`Error::BufferTooSmall`] if `offsets` is shorter than `len() + 1`
    /// (checked first: nothing changes).
    pub fn par_step_lists<E, N, C, T>(
        &mut self,
        exec: &E,
        search: &mut N,
        solids: &mut C,
        timer: &mut T,
        work: &mut [GatherSlot<P>],
        lists: (&mut [u32], &mut [u32]),
    ) -> Result<(), Error>
    where
        E: Executor,
        N: NeighborSearch<P> + Sync,
        C: ParCollider<P>,
        T: StageTimer,
    {
        let n = self.len;
        let (offsets, indices) = lists;
        let available = offsets.len();
        let offsets = offsets.get_mut(..=n).ok_or(Error::BufferTooSmall {
            needed: n + 1,
            available,
        })?;
        let scratch = Scratch {
            work,
            order: None,
            lists: Some((offsets, indices)),
        };
        self.par_step_with(exec, search, solids, timer, scratch, &mut ())
    }

    /// The parallel step, renumbering into the search's order if `order`
    /// or `lists` is given, gathering from the lists if `lists` is.
    fn par_step_with<E, N, C, T, Y>(
        &mut self,
        exec: &E,
        search: &mut N,
        solids: &mut C,
        timer: &mut T,
        scratch: Scratch<'_, P>,
        sync: &mut Y,
    ) -> Result<(), Error>
    where
        E: Executor,
        N: NeighborSearch<P> + Sync,
        C: ParCollider<P>,
        T: StageTimer,
        Y: StepSync<P>,
    {
        let kernels = self.params.kernels()?;
        let n = self.len;
        let Scratch { work, order, lists } = scratch;
        let available = work.len();
        let work = work.get_mut(..n).ok_or(Error::BufferTooSmall {
            needed: n,
            available,
        })?;
        let (tasks, grain) = task_split(n, STEP_GRAIN, STEP_TASKS);
        {
            let x = &self.positions.as_ref()[..n];
            let st = &mut self.state.as_mut()[..n];
            exec.run(tasks, Parts::chunks(st, grain), |_, part| {
                let start = part.start();
                let xs = x.get(start..).unwrap_or(&[]);
                for (s, xi) in part.into_slice().iter_mut().zip(xs) {
                    s.start_position = *xi;
                    s.start_velocity = s.velocity;
                }
            });
        }
        let mut scratch = Scratch { work, order, lists };
        match self.par_integrate(exec, &kernels, search, solids, timer, &mut scratch, sync) {
            Ok(()) => {
                self.steps += 1;
                Ok(())
            }
            Err(e) => {
                self.par_particles(exec, |xi, s| {
                    *xi = s.start_position;
                    s.velocity = s.start_velocity;
                });
                Err(e)
            }
        }
    }

    /// The step after the start state is saved: as `integrate`, on `exec`.
    #[allow(clippy::too_many_arguments)]
    fn par_integrate<E, N, C, T, Y>(
        &mut self,
        exec: &E,
        k: &Kernels,
        search: &mut N,
        solids: &mut C,
        timer: &mut T,
        scratch: &mut Scratch<'_, P>,
        sync: &mut Y,
    ) -> Result<(), Error>
    where
        E: Executor,
        N: NeighborSearch<P> + Sync,
        C: ParCollider<P>,
        T: StageTimer,
        Y: StepSync<P>,
    {
        let dt = self.params.dt;
        if solids.boundary_particles() > 0 && !sync.boundary_particles_supported() {
            return Err(Error::InvalidConfig { field: "walls" });
        }
        self.par_evaluate(exec, k, search, solids, timer, scratch, sync)?;
        match self.params.integrator {
            Integrator::Leapfrog => {
                timer.begin(Stage::Integration);
                self.par_particles(exec, |xi, s| {
                    *xi = s.start_position + s.start_velocity * (0.5 * dt);
                    s.velocity = s.start_velocity + s.acceleration * (0.5 * dt);
                });
                timer.end();
                self.par_collide(exec, solids, timer)?;
                let n = self.len;
                sync.sync(
                    SyncPoint::HalfStep,
                    &mut self.positions.as_mut()[..n],
                    &mut self.state.as_mut()[..n],
                )?;
                self.par_evaluate(exec, k, search, solids, timer, scratch, sync)?;
                timer.begin(Stage::Integration);
                self.par_particles(exec, |xi, s| {
                    s.velocity = s.start_velocity + s.acceleration * dt;
                    *xi = s.start_position + (s.start_velocity + s.velocity) * (0.5 * dt);
                });
                timer.end();
            }
            Integrator::Euler => {
                timer.begin(Stage::Integration);
                self.par_particles(exec, |xi, s| {
                    *xi = s.start_position + s.start_velocity * dt;
                    s.velocity = s.start_velocity + s.acceleration * dt;
                });
                timer.end();
            }
        }
        self.par_collide(exec, solids, timer)?;
        // Finiteness and the step's report, per task, combined in task
        // order (maxima and minima: the same for any split).
        let n = self.len;
        let (tasks, grain) = task_split(n, STEP_GRAIN, STEP_TASKS);
        let mut parts = [Extremes::EMPTY; STEP_TASKS];
        let x = &self.positions.as_ref()[..n];
        let st = &self.state.as_ref()[..n];
        exec.run(
            tasks,
            Parts::chunks(&mut parts[..tasks], 1),
            |t, mut slot| {
                let lo = (t * grain).min(n);
                let hi = (lo + grain).min(n);
                let mut e = Extremes::EMPTY;
                for (x, s) in x[lo..hi].iter().zip(&st[lo..hi]) {
                    e.add(x, s);
                }
                if let Some(f) = slot.slice().first_mut() {
                    *f = e;
                }
            },
        );
        let extremes = parts[..tasks]
            .iter()
            .fold(Extremes::EMPTY, |a, b| a.merge(*b));
        self.conclude(&extremes, dt)
    }

    /// Runs `f(xᵢ, stateᵢ)` for every particle, in chunks on `exec`.
    fn par_particles<E, F>(&mut self, exec: &E, f: F)
    where
        E: Executor,
        F: Fn(&mut P, &mut ParticleState<P>) + Sync,
    {
        let n = self.len;
        let (tasks, grain) = task_split(n, STEP_GRAIN, STEP_TASKS);
        let x = &mut self.positions.as_mut()[..n];
        let st = &mut self.state.as_mut()[..n];
        exec.run(
            tasks,
            (Parts::chunks(x, grain), Parts::chunks(st, grain)),
            |_, (xs, ss)| {
                for (xi, s) in xs.into_slice().iter_mut().zip(ss.into_slice()) {
                    f(xi, s);
                }
            },
        );
    }

    /// Walls, obstacles, walls again, for every particle, on `exec`.
    fn par_collide<E, C, T>(&mut self, exec: &E, solids: &mut C, timer: &mut T) -> Result<(), Error>
    where
        E: Executor,
        C: ParCollider<P>,
        T: StageTimer,
    {
        let period = self.params.periodic_box()?;
        if period.is_periodic() {
            self.par_particles(exec, |xi, _| *xi = period.wrap(*xi));
        }
        timer.begin(Stage::Collisions);
        let n = self.len;
        let p = &self.params;
        let result = solids.par_collide(
            exec,
            &mut self.positions.as_mut()[..n],
            &mut self.state.as_mut()[..n],
            p.particle_radius,
            p.damping,
            &p.domain,
        );
        timer.end();
        result
    }

    /// Builds `search` over the positions; with `order`, renumbers the
    /// particles into the search's order and builds again if they were not
    /// in it: out of place on `exec` through `stage` if it has room
    /// ([`par_permute_in_step`](Self::par_permute_in_step)), else in place
    /// on the calling thread.
    fn par_build_in_order<E, N>(
        &mut self,
        exec: &E,
        search: &mut N,
        order: Option<&mut [u32]>,
        stage: Option<&mut [u32]>,
    ) -> Result<(), Error>
    where
        E: Executor,
        N: NeighborSearch<P> + Sync,
    {
        let n = self.len;
        let h = self.params.h;
        search.par_build(exec, &self.positions.as_ref()[..n], h)?;
        if search.len() != n {
            return Err(Error::LengthMismatch {
                expected: n,
                got: search.len(),
            });
        }
        let Some(order) = order else {
            return Ok(());
        };
        search.spatial_order(order)?;
        if par_is_identity(exec, order) {
            return Ok(());
        }
        match stage {
            Some(stage) => self.par_permute_in_step(exec, order, stage)?,
            None => self.permute_in_step(order)?,
        }
        search.par_build(exec, &self.positions.as_ref()[..n], h)
    }

    /// [`permute_in_step`](Self::permute_in_step) out of place, on `exec`:
    /// one task pass gathers, for every new id `k`, the live fields of old
    /// particle `order[k]` (position, velocity, start position and
    /// velocity; the normal too when surface tension is off, as no
    /// evaluation recomputes it) into `stage` as `f32` bits, a second
    /// copies them back in place, each task on its own chunk of particles.
    /// Density, pressure, acceleration (and the normal with surface
    /// tension) stay where they are: the evaluation that follows
    /// recomputes them. Before anything moves, `order` is checked to be a
    /// permutation with one bit per particle at the head of `stage`: the
    /// only serial part, `O(N)` over an `N/8`-byte bit set.
    ///
    /// With fewer than [`STAGE_WORDS_PER_DIM`]`·d + 1` entries of `stage`
    /// per particle, the in-place form runs instead (same result).
    ///
    /// # Errors
    /// As `permute_in_step`, with the same id.
    fn par_permute_in_step<E: Executor>(
        &mut self,
        exec: &E,
        order: &[u32],
        stage: &mut [u32],
    ) -> Result<(), Error> {
        let n = self.len;
        let d = P::DIM;
        let room = (STAGE_WORDS_PER_DIM * d + 1).saturating_mul(n);
        if stage.len() < room || order.len() != n {
            return self.permute_in_step(order);
        }
        let keep_normal = self.params.surface_tension <= 0.0;
        let w = d * if keep_normal { 5 } else { 4 };
        let (seen, stage) = stage.split_at_mut(n.div_ceil(32));
        // A permutation: every id below n, none twice; the first offender in
        // `order` is reported, as by `permute_in_step`.
        seen.fill(0);
        for &id in order {
            let i = id as usize;
            let bit = 1u32 << (i % 32);
            match seen.get_mut(i / 32) {
                Some(word) if i < n && *word & bit == 0 => *word |= bit,
                _ => return Err(Error::UnknownId { id }),
            }
        }
        let stage = &mut stage[..w * n];
        let (tasks, grain) = task_split(n, STEP_GRAIN, STEP_TASKS);
        {
            let x = &self.positions.as_ref()[..n];
            let st = &self.state.as_ref()[..n];
            exec.run(tasks, Parts::chunks(stage, grain * w), |_, part| {
                let first = part.start() / w;
                for (k, words) in (first..).zip(part.into_slice().chunks_exact_mut(w)) {
                    let o = order.get(k).map_or(n, |&o| o as usize);
                    let (Some(&xo), Some(so)) = (x.get(o), st.get(o)) else {
                        continue;
                    };
                    let fields = [
                        xo,
                        so.velocity,
                        so.start_position,
                        so.start_velocity,
                        so.normal,
                    ];
                    for (v, dst) in fields.iter().zip(words.chunks_exact_mut(d)) {
                        for (a, word) in dst.iter_mut().enumerate() {
                            *word = v.coord(a).to_bits();
                        }
                    }
                }
            });
        }
        let stage = &*stage;
        let x = &mut self.positions.as_mut()[..n];
        let st = &mut self.state.as_mut()[..n];
        exec.run(
            tasks,
            (Parts::chunks(x, grain), Parts::chunks(st, grain)),
            |_, (xs, ss)| {
                let words = stage.get(xs.start() * w..).unwrap_or(&[]);
                let rows = xs.into_slice().iter_mut().zip(ss.into_slice());
                for ((xi, s), row) in rows.zip(words.chunks_exact(w)) {
                    let field = |f: usize| {
                        P::from_fn(|a| f32::from_bits(row.get(f * d + a).copied().unwrap_or(0)))
                    };
                    *xi = field(0);
                    s.velocity = field(1);
                    s.start_position = field(2);
                    s.start_velocity = field(3);
                    if keep_normal {
                        s.normal = field(4);
                    }
                }
            },
        );
        Ok(())
    }

    /// Renumbers the particles as `order` lists them (new id `k` = old id
    /// `order[k]`), every field of the state moving with its particle:
    /// unlike [`renumber`](Self::renumber) the step's start state is kept
    /// (the position rides in `acceleration` and the new id in `density`,
    /// both recomputed by the evaluation that follows). `O(N)`, in place.
    ///
    /// # Errors
    /// [`Error::UnknownId`] unless `order` is a permutation of `0..len()`
    /// (the positions are then unchanged).
    fn permute_in_step(&mut self, order: &[u32]) -> Result<(), Error> {
        const UNSET: u32 = u32::MAX;
        let n = self.len;
        let x = &mut self.positions.as_mut()[..n];
        let st = &mut self.state.as_mut()[..n];
        if order.len() != n {
            return Err(Error::LengthMismatch {
                expected: n,
                got: order.len(),
            });
        }
        for (s, xi) in st.iter_mut().zip(x.iter()) {
            s.acceleration = *xi;
            s.density = f32::from_bits(UNSET);
        }
        for (k, &id) in order.iter().enumerate() {
            match st.get_mut(id as usize) {
                Some(s) if s.density.to_bits() == UNSET => s.density = f32::from_bits(k as u32),
                _ => return Err(Error::UnknownId { id }),
            }
        }
        // Cycle by cycle: the particle in slot i goes to its new id until
        // slot i holds the particle whose new id is i.
        for i in 0..n {
            loop {
                let k = st[i].density.to_bits() as usize;
                if k == i || k >= n {
                    break;
                }
                st.swap(i, k);
            }
        }
        for (xi, s) in x.iter_mut().zip(st.iter()) {
            *xi = s.acceleration;
        }
        Ok(())
    }

    /// One force evaluation in gather form: fills density, pressure,
    /// normals and acceleration.
    #[allow(clippy::too_many_arguments)]
    fn par_evaluate<E, N, C, T, Y>(
        &mut self,
        exec: &E,
        k: &Kernels,
        search: &mut N,
        solids: &mut C,
        timer: &mut T,
        scratch: &mut Scratch<'_, P>,
        sync: &mut Y,
    ) -> Result<(), Error>
    where
        E: Executor,
        N: NeighborSearch<P> + Sync,
        C: ParCollider<P>,
        T: StageTimer,
        Y: StepSync<P>,
    {
        let n = self.len;
        let p: SphParams<P> = self.params;
        let m = p.mass;
        timer.begin(Stage::NeighborSearch);
        // With lists, `indices` is free until they are written: the
        // renumbering's staging area.
        let (order, stage) = match (&mut scratch.order, &mut scratch.lists) {
            (_, Some((offsets, indices))) => (offsets.get_mut(..n), Some(&mut **indices)),
            (Some((order, rest)), None) => (Some(&mut **order), Some(&mut **rest)),
            (None, None) => (None, None),
        };
        let mut built = self.par_build_in_order(exec, search, order, stage);
        // The lists, if asked for and they fit (else the gathers).
        let mut lists = None;
        if built.is_ok()
            && let Some((offsets, indices)) = &mut scratch.lists
        {
            match search.par_neighbor_lists(exec, offsets, indices) {
                Ok(total) => {
                    lists = offsets.get(..=n).zip(indices.get(..total));
                }
                Err(Error::BufferTooSmall { .. }) => {}
                Err(e) => built = Err(e),
            }
        }
        timer.end();
        built?;
        let period = p.periodic_box()?;
        if search.periodic() != period {
            return Err(Error::InvalidConfig { field: "periodic" });
        }
        let work = &mut *scratch.work;
        let search = &*search;
        let x = &self.positions.as_ref()[..n];
        let st = &mut self.state.as_mut()[..n];
        let (tasks, grain) = task_split(n, STEP_GRAIN, STEP_TASKS);
        let valid = |i: u32, j: u32| (j as usize) < n && j != i;

        timer.begin(Stage::Density);
        let self_density = m * k.poly6(0.0);
        // The sums restart after the density for the next pass (normals, or
        // the forces from gravity).
        let first = if p.surface_tension > 0.0 {
            P::ZERO
        } else {
            p.gravity
        };
        let mut results = [None; LIST_TASKS];
        let used = if let Some((offsets, indices)) = lists {
            // One pass: the density is summed from the lists and written
            // with the pressure straight into the state (the pass reads
            // only the positions).
            let (tasks, grain) = task_split(n, LIST_GRAIN, LIST_TASKS);
            exec.run(
                tasks,
                (
                    Parts::chunks(&mut st[..], grain),
                    Parts::chunks(&mut work[..], grain),
                    Parts::chunks(&mut results[..tasks], 1),
                ),
                |_, (ss, ws, mut r)| {
                    let start = ss.start();
                    let rows = ss.into_slice().iter_mut().zip(ws.into_slice());
                    for (i, (s, g)) in (start..).zip(rows) {
                        let mut rho = self_density;
                        if let (Some(&xi), Some(&a), Some(&b)) =
                            (x.get(i), offsets.get(i), offsets.get(i + 1))
                        {
                            for &j in indices.get(a as usize..b as usize).unwrap_or(&[]) {
                                if valid(i as u32, j)
                                    && let Some(&xj) = x.get(j as usize)
                                {
                                    rho += m * k.poly6(xi.distance_squared(xj));
                                } else {
                                    g.bad = j;
                                    rho = f32::NAN;
                                }
                            }
                        }
                        store_density(s, g, rho, r.slice(), &p, first);
                    }
                },
            );
            tasks
        } else {
            exec.run(tasks, Parts::chunks(&mut work[..], grain), |_, w| {
                for g in w.into_slice() {
                    g.density = self_density;
                }
            });
            gather_pass(exec, search, None, x, work, |i, g, j, d2| {
                if valid(i, j) {
                    g.density += m * k.poly6(d2);
                } else {
                    g.bad = j;
                    g.density = f32::NAN;
                }
            })?;
            // Density and pressure into the state.
            exec.run(
                tasks,
                (
                    Parts::chunks(&mut st[..], grain),
                    Parts::chunks(&mut work[..], grain),
                    Parts::chunks(&mut results[..tasks], 1),
                ),
                |_, (ss, ws, mut r)| {
                    for (s, g) in ss.into_slice().iter_mut().zip(ws.into_slice()) {
                        let rho = g.density;
                        store_density(s, g, rho, r.slice(), &p, first);
                    }
                },
            );
            tasks
        };
        first_error(&results[..used])?;
        // Boundary particles: their density share (a gather per fluid
        // particle, in tasks), the pressures again, then their own
        // pressures from the fluid's (serial, in fluid id order). The same
        // for every executor.
        let walls = solids.boundary_particles() > 0;
        if walls {
            solids.par_add_boundary_density(exec, x, st, k, &p, &period)?;
            for s in st.iter_mut() {
                s.pressure = p.pressure(s.density);
            }
            solids.update_boundary(x, st, k, &p, &period)?;
        }
        timer.end();
        sync.sync(
            SyncPoint::Density,
            &mut self.positions.as_mut()[..n],
            &mut self.state.as_mut()[..n],
        )?;
        let x = &self.positions.as_ref()[..n];
        let st = &mut self.state.as_mut()[..n];

        if p.surface_tension > 0.0 {
            timer.begin(Stage::Normals);
            let sr = &*st;
            gather_pass(exec, search, lists, x, work, |i, g, j, d2| {
                if valid(i, j)
                    && let (Some(&xi), Some(si), Some(&xj), Some(sj)) = (
                        x.get(i as usize),
                        sr.get(i as usize),
                        x.get(j as usize),
                        sr.get(j as usize),
                    )
                {
                    // Particle i's side of the pair form's normal term.
                    let grad = k.poly6_gradient(period.offset(xi, xj), d2) * (p.h * m);
                    let (ri, rj) = (si.density, sj.density);
                    let inv = 1.0 / (ri * rj);
                    g.sum += grad * (ri * inv);
                }
            })?;
            exec.run(
                tasks,
                (
                    Parts::chunks(&mut st[..], grain),
                    Parts::chunks(&mut work[..], grain),
                ),
                |_, (ss, ws)| {
                    for (s, g) in ss.into_slice().iter_mut().zip(ws.into_slice()) {
                        s.normal = g.sum;
                        g.sum = p.gravity;
                    }
                },
            );
            timer.end();
        }
        if p.surface_tension > 0.0 {
            sync.sync(
                SyncPoint::Normals,
                &mut self.positions.as_mut()[..n],
                &mut self.state.as_mut()[..n],
            )?;
        }
        let x = &self.positions.as_ref()[..n];
        let st = &mut self.state.as_mut()[..n];

        timer.begin(Stage::Forces);
        let sr = &*st;
        gather_pass(exec, search, lists, x, work, |i, g, j, d2| {
            if valid(i, j)
                && let (Some(&xi), Some(si), Some(&xj), Some(sj)) = (
                    x.get(i as usize),
                    sr.get(i as usize),
                    x.get(j as usize),
                    sr.get(j as usize),
                )
            {
                g.sum += pair_acceleration(k, &p, period.offset(xi, xj), d2, si, sj);
            }
        })?;
        exec.run(
            tasks,
            (
                Parts::chunks(&mut st[..], grain),
                Parts::chunks(&mut work[..], grain),
            ),
            |_, (ss, ws)| {
                for (s, g) in ss.into_slice().iter_mut().zip(ws.into_slice()) {
                    s.acceleration = g.sum;
                }
            },
        );
        if walls {
            solids.par_add_boundary_forces(exec, x, st, k, &p, &period)?;
        }
        timer.end();
        Ok(())
    }
}

/// Writes a summed density and its pressure into a particle's state and
/// starts its slot's next sum at `first`; a NaN density (a bad neighbour
/// id met while summing) is recorded as the task's first error.
#[inline(always)]
fn store_density<P: Point>(
    s: &mut ParticleState<P>,
    g: &mut GatherSlot<P>,
    rho: f32,
    result: &mut [Option<Error>],
    p: &SphParams<P>,
    first: P,
) {
    if rho.is_nan()
        && let Some(r) = result.first_mut()
        && r.is_none()
    {
        *r = Some(Error::UnknownId { id: g.bad });
    }
    s.density = rho;
    s.pressure = p.pressure(rho);
    g.sum = first;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Serial;
    use crate::uniform::{CellRecord, CellSortedHash, SortedParticle, TableSlot};
    use crate::{Aabb3, Vec3};

    type Hash = CellSortedHash<
        Vec3,
        [TableSlot; 1024],
        [SortedParticle<Vec3>; 512],
        [CellRecord<Vec3>; 512],
    >;

    fn hash() -> Hash {
        CellSortedHash::new(
            [TableSlot::EMPTY; 1024],
            [SortedParticle::EMPTY; 512],
            [CellRecord::EMPTY; 512],
        )
    }

    #[test]
    fn gather_step_matches_the_pair_step_to_rounding() {
        let domain = Aabb3::new(Vec3::ZERO, Vec3::new(0.3, 0.3, 0.3)).unwrap();
        let params = SphParams::seed(domain, 0.025).unwrap();
        let mut a = Fluid::new([Vec3::ZERO; 512], [ParticleState::EMPTY; 512], params);
        let block = Aabb3::new(Vec3::ZERO, Vec3::new(0.2, 0.15, 0.2)).unwrap();
        a.fill_block(block, 0.025, Vec3::ZERO).unwrap();
        let mut b = a.clone();
        let (mut ha, mut hb) = (hash(), hash());
        let mut work = [GatherSlot::EMPTY; 512];
        for _ in 0..20 {
            a.step(&mut ha, &mut (), &mut ()).unwrap();
            b.par_step(&Serial, &mut hb, &mut (), &mut (), &mut work)
                .unwrap();
        }
        for (sa, sb) in a.state().iter().zip(b.state()) {
            assert!((sa.density - sb.density).abs() <= 1e-3 * sa.density);
        }
        for (xa, xb) in a.positions().iter().zip(b.positions()) {
            assert!(xa.distance_squared(*xb) < 1e-8, "{xa:?} {xb:?}");
        }
        assert_eq!(b.steps(), 20);
    }

    /// Counts the points it is called at, in order, and can fail at one.
    struct Points {
        seen: [Option<SyncPoint>; 8],
        count: usize,
        fail_at: usize,
    }

    impl StepSync<Vec3> for Points {
        fn sync(
            &mut self,
            point: SyncPoint,
            x: &mut [Vec3],
            state: &mut [ParticleState<Vec3>],
        ) -> Result<(), Error> {
            assert_eq!(x.len(), state.len());
            if let Some(s) = self.seen.get_mut(self.count) {
                *s = Some(point);
            }
            self.count += 1;
            if self.count == self.fail_at {
                return Err(Error::NonFinite);
            }
            Ok(())
        }
    }

    #[test]
    fn the_synced_step_stops_at_its_points_and_otherwise_is_par_step() {
        let domain = Aabb3::new(Vec3::ZERO, Vec3::new(0.3, 0.3, 0.3)).unwrap();
        let params = SphParams::seed(domain, 0.025).unwrap();
        assert!(params.surface_tension > 0.0);
        assert_eq!(SyncPoint::per_step(&params), 5);
        let mut a = Fluid::new([Vec3::ZERO; 512], [ParticleState::EMPTY; 512], params);
        let block = Aabb3::new(Vec3::ZERO, Vec3::new(0.2, 0.15, 0.2)).unwrap();
        a.fill_block(block, 0.025, Vec3::ZERO).unwrap();
        let mut b = a.clone();
        let (mut ha, mut hb) = (hash(), hash());
        let mut work = [GatherSlot::EMPTY; 512];
        let mut points = Points {
            seen: [None; 8],
            count: 0,
            fail_at: 0,
        };
        for _ in 0..5 {
            a.par_step(&Serial, &mut ha, &mut (), &mut (), &mut work)
                .unwrap();
            points.count = 0;
            b.par_step_synced(&Serial, &mut hb, &mut (), &mut (), &mut work, &mut points)
                .unwrap();
            assert_eq!(points.count, 5);
        }
        use SyncPoint::*;
        let order = [Density, Normals, HalfStep, Density, Normals];
        assert_eq!(&points.seen[..5], &order.map(Some));
        assert_eq!(a.positions(), b.positions());
        assert_eq!(a.state(), b.state());
        // A sync that fails stops the step and restores the particles.
        let before = b.clone();
        points.count = 0;
        points.fail_at = 3;
        assert_eq!(
            b.par_step_synced(&Serial, &mut hb, &mut (), &mut (), &mut work, &mut points),
            Err(Error::NonFinite)
        );
        assert_eq!(points.count, 3);
        assert_eq!(b.positions(), before.positions());
        assert_eq!(b.steps(), before.steps());
    }

    #[test]
    fn renumbering_out_of_place_matches_the_in_place_one() {
        let domain = Aabb3::new(Vec3::ZERO, Vec3::new(0.3, 0.3, 0.3)).unwrap();
        let block = Aabb3::new(Vec3::ZERO, Vec3::new(0.2, 0.15, 0.2)).unwrap();
        for gamma in [1.0, 0.0] {
            let mut params = SphParams::seed(domain, 0.025).unwrap();
            params.surface_tension = gamma;
            let mut a = Fluid::new([Vec3::ZERO; 512], [ParticleState::EMPTY; 512], params);
            a.fill_block(block, 0.025, Vec3::ZERO).unwrap();
            let n = a.len();
            for (i, s) in a.state.as_mut()[..n].iter_mut().enumerate() {
                let v = |k: u32| Vec3::new(i as f32, k as f32, -(i as f32));
                s.velocity = v(1);
                s.start_position = v(2);
                s.start_velocity = v(3);
                s.normal = v(4);
            }
            // A shuffle of 0..n (a fixed linear congruential sequence).
            let mut order = [0u32; 512];
            for (k, o) in order[..n].iter_mut().enumerate() {
                *o = k as u32;
            }
            let mut r = 12345u32;
            for k in (1..n).rev() {
                r = r.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                order.swap(k, (r >> 8) as usize % (k + 1));
            }
            let order = &order[..n];
            let mut b = a.clone();
            let mut c = a.clone();
            a.permute_in_step(order).unwrap();
            let mut stage = [0u32; 16 * 512];
            b.par_permute_in_step(&Serial, order, &mut stage).unwrap();
            // Too little room: the in-place form.
            c.par_permute_in_step(&Serial, order, &mut stage[..16 * n - 1])
                .unwrap();
            for f in [&b, &c] {
                assert_eq!(f.positions(), a.positions());
                for (sa, sb) in a.state().iter().zip(f.state()) {
                    assert_eq!(sa.velocity, sb.velocity);
                    assert_eq!(sa.start_position, sb.start_position);
                    assert_eq!(sa.start_velocity, sb.start_velocity);
                    if gamma == 0.0 {
                        assert_eq!(sa.normal, sb.normal);
                    }
                }
            }
            // Not a permutation: the same first offender, nothing moved.
            let mut bad = [0u32; 512];
            bad[..n].copy_from_slice(order);
            bad[7] = bad[3];
            let before = b.clone();
            let want = Err(Error::UnknownId { id: bad[3] });
            assert_eq!(b.par_permute_in_step(&Serial, &bad[..n], &mut stage), want);
            assert_eq!(b.positions(), before.positions());
            bad[7] = n as u32;
            let want = Err(Error::UnknownId { id: n as u32 });
            assert_eq!(b.par_permute_in_step(&Serial, &bad[..n], &mut stage), want);
            assert_eq!(b.positions(), before.positions());
            assert_eq!(b.clone().permute_in_step(&bad[..n]), want);
        }
    }

    #[test]
    fn short_workspace_is_refused_and_changes_nothing() {
        let domain = Aabb3::new(Vec3::ZERO, Vec3::new(0.3, 0.3, 0.3)).unwrap();
        let params = SphParams::seed(domain, 0.025).unwrap();
        let mut f = Fluid::new([Vec3::ZERO; 512], [ParticleState::EMPTY; 512], params);
        f.fill_block(domain, 0.05, Vec3::ZERO).unwrap();
        let before = f.clone();
        let mut work = [GatherSlot::EMPTY; 4];
        let e = f.par_step(&Serial, &mut hash(), &mut (), &mut (), &mut work);
        assert_eq!(
            e,
            Err(Error::BufferTooSmall {
                needed: f.len(),
                available: 4
            })
        );
        assert_eq!(f.positions(), before.positions());
        assert_eq!(f.state(), before.state());
    }
}
