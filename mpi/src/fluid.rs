//! The distributed SPH step ([`DistFluid`]): each rank owns the particles
//! in its subdomain, receives a ghost layer from its neighbours at the
//! start of a step, steps the owned particles and their ghosts with the
//! core's gather-form solver ([`Fluid::par_step_synced`]), refreshing the
//! ghosts from their owners at each of the step's sync points, keeps the
//! owned results, and sends particles that left its subdomain to their new
//! owners.
//!
//! # The ghost layer and the sync points
//!
//! Each force evaluation of the seed's solver is three passes: densities
//! (from positions within `h`), normals (from the densities within `h`),
//! forces (from the densities, pressures, normals and velocities within
//! `h`). A ghost only needs the values its owner computes, at the moment
//! they are final: the step stops at each [`SyncPoint`] (after the
//! densities, after the normals, after leapfrog's half step) and every rank
//! sends the owners' new values of the particles it sent as ghosts, in the
//! same order, so no ids travel after the first exchange. The layer is
//! therefore **`h + 2·v_max·dt`**: every particle within `h` of an owned
//! particle at either evaluation (the half step, with its collision, moves
//! a particle by at most `v_max·dt`, `v_max` the fastest particle of all
//! ranks, one reduction per step). Per step and neighbour: one exchange of
//! ghosts (id, position, velocity) and five of values (2 words, `d`, `2d`,
//! 2, `d` per ghost in the order density, normals, half step, density,
//! normals; the normals only with surface tension).
//!
//! A first version exchanged once per step with a layer of `4h + 2·v_max·dt`
//! (the whole reach of a leapfrog step) and computed the ghosts' passes
//! redundantly; on a block of 17 576 particles split in two, each rank then
//! received 5 200 ghosts for 8 800 owned, against 1 400–1 500 with the sync
//! points (README, "When one machine is not enough").
//!
//! # Bit for bit
//!
//! Every rank orders its owned and ghost particles by global id, and the
//! gather-form step sums each particle's terms over its neighbours in the
//! search's cell order and, within a cell, in storage order. A rank's local
//! particles are a subset of the global ones in the same relative order,
//! holding every neighbour of every owned particle with its owner's
//! values, so each owned particle's sums have the same terms in the same
//! order as in one process stepping all particles by id with
//! [`Fluid::par_step`] and the same search, its grid anchored at the same
//! point ([`anchor`]: without an anchor, a hash centres its grid on the
//! positions it holds, so a rank's cells would differ from the whole set's
//! and the sums would be taken in another order, equal only to rounding):
//! the state is **bit-identical** for every number of ranks.
//! `mpi/tests/distributed.rs` checks that on 1, 2 and 4 ranks.
//!
//! # Failures
//!
//! Each sync point begins with an agreement ([`Ranks::agree`]), so a rank
//! whose local step failed before a sync point fails that point for all
//! (it calls the agreement the others wait in), and a failure after the
//! last one is caught by the agreement after the step: every rank returns
//! the failing rank's error with its particles as before the step.

use std::time::Instant;

use bytemuck::Pod;
use spatium::decomp::Periodic;
use spatium::exec::Executor;
use spatium::sph::boundary::ParCollider;
use spatium::sph::source::Emitter;
use spatium::sph::{
    Fluid, GatherSlot, ParticleState, SphParams, StageTimer, StepControl, StepSync, SyncPoint,
};
use spatium::{BoundingBox, Error, Point};
use spatium_host::make::{VecCellSorted, cell_sorted};

use crate::comm::{Ranks, Traffic, sent_bytes};
use crate::domain::{
    Balance, Subdomains, Words, from_words, gather_all, rebuild_and_migrate, settle, words_of,
};
use crate::error::DistError;

/// Smoothing lengths of the ghost layer, besides the `2·v_max·dt` of
/// motion (see [the module](self)): the ghosts are refreshed at every sync
/// point, so one is enough.
pub const HALO_SMOOTHING_LENGTHS: f32 = 1.0;

/// The point every rank's search grid is anchored at: the domain's centre
/// (see [`spatium::uniform::CellSortedHash::set_anchor`]). A single-process
/// run that anchors its search there steps bit for bit as the ranks do.
pub fn anchor<P: Point>(params: &SphParams<P>) -> P {
    let d = params.domain;
    P::from_fn(|k| 0.5 * d.min().coord(k) + 0.5 * d.max().coord(k))
}

/// One particle owned by a rank: its global id, position and solver state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Particle<P> {
    /// Global id: the order in which the particle was added, on any rank.
    pub id: u32,
    /// Position.
    pub x: P,
    /// Velocity and the rest of the solver's state.
    pub state: ParticleState<P>,
}

impl<P: Point + Pod> Words for Particle<P>
where
    ParticleState<P>: Pod,
{
    fn words() -> usize {
        1 + (size_of::<P>() + size_of::<ParticleState<P>>()) / 4
    }
    fn write(&self, out: &mut Vec<u32>) {
        out.push(self.id);
        out.extend_from_slice(words_of(&self.x));
        out.extend_from_slice(words_of(&self.state));
    }
    fn read(w: &[u32]) -> Self {
        let d = size_of::<P>() / 4;
        Self {
            id: w[0],
            x: from_words(&w[1..1 + d]),
            state: from_words(&w[1 + d..]),
        }
    }
}

/// A ghost as it arrives at the start of a step: global id, position and
/// velocity (the rest of its state is computed by the step).
#[derive(Clone, Copy, Debug)]
struct GhostRecord<P> {
    id: u32,
    x: P,
    v: P,
}

impl<P: Point + Pod> Words for GhostRecord<P> {
    fn words() -> usize {
        1 + 2 * size_of::<P>() / 4
    }
    fn write(&self, out: &mut Vec<u32>) {
        out.push(self.id);
        out.extend_from_slice(words_of(&self.x));
        out.extend_from_slice(words_of(&self.v));
    }
    fn read(w: &[u32]) -> Self {
        let d = size_of::<P>() / 4;
        Self {
            id: w[0],
            x: from_words(&w[1..1 + d]),
            v: from_words(&w[1 + d..]),
        }
    }
}

/// The ghost refresh of one step: at each [`SyncPoint`] every rank sends
/// the values that became final there (density and pressure, normal, or
/// half-step position and velocity) of the owned particles it sent as
/// ghosts, in the same order, and writes what it receives into its ghosts.
struct GhostSync<'a> {
    ranks: &'a mut Ranks,
    /// Per destination rank, the local indices of the owned particles sent.
    sends: Vec<Vec<u32>>,
    /// Per ghost, in arrival order, its local index.
    ghost_local: Vec<u32>,
    /// Sync points entered.
    done: usize,
    /// A failure agreed by all ranks at a sync point.
    failure: Option<DistError>,
    /// Payload bytes sent to other ranks.
    bytes: u64,
}

impl<P> StepSync<P> for GhostSync<'_>
where
    P: Point + Pod,
    ParticleState<P>: Pod,
{
    /// The ghosts' boundary-particle shares are not exchanged: refused.
    fn boundary_particles_supported(&self) -> bool {
        false
    }

    fn sync(
        &mut self,
        point: SyncPoint,
        x: &mut [P],
        state: &mut [ParticleState<P>],
    ) -> Result<(), Error> {
        const REMOTE: Error = Error::InvalidConfig {
            field: "another rank's step",
        };
        self.done += 1;
        if let Err(e) = self.ranks.agree(Ok::<(), Error>(())) {
            self.failure = Some(e);
            return Err(REMOTE);
        }
        let d = size_of::<P>() / 4;
        let words = match point {
            SyncPoint::Density => 2,
            SyncPoint::Normals => d,
            SyncPoint::HalfStep => 2 * d,
        };
        let sends: Vec<Vec<u32>> = self
            .sends
            .iter()
            .map(|list| {
                let mut out = Vec::with_capacity(list.len() * words);
                for &k in list {
                    let (xk, s) = (&x[k as usize], &state[k as usize]);
                    match point {
                        SyncPoint::Density => {
                            out.push(s.density.to_bits());
                            out.push(s.pressure.to_bits());
                        }
                        SyncPoint::Normals => out.extend_from_slice(words_of(&s.normal)),
                        SyncPoint::HalfStep => {
                            out.extend_from_slice(words_of(xk));
                            out.extend_from_slice(words_of(&s.velocity));
                        }
                    }
                }
                out
            })
            .collect();
        self.bytes += sent_bytes(&sends, self.ranks.rank());
        let received = match self.ranks.exchange(&sends) {
            Ok(w) => w,
            Err(e) => {
                self.failure = Some(e);
                return Err(REMOTE);
            }
        };
        for (w, &k) in received.chunks_exact(words).zip(&self.ghost_local) {
            let k = k as usize;
            match point {
                SyncPoint::Density => {
                    state[k].density = f32::from_bits(w[0]);
                    state[k].pressure = f32::from_bits(w[1]);
                }
                SyncPoint::Normals => state[k].normal = from_words(w),
                SyncPoint::HalfStep => {
                    x[k] = from_words(&w[..d]);
                    state[k].velocity = from_words(&w[d..]);
                }
            }
        }
        Ok(())
    }
}

/// What one distributed step did on this rank.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepReport {
    /// Particles this rank owned during the step.
    pub owned: usize,
    /// Ghost particles it received.
    pub ghosts: usize,
    /// Width of the ghost layer.
    pub halo: f32,
    /// Bytes of ghost records this rank sent.
    pub halo_bytes: u64,
    /// Particles that left this rank after the step.
    pub migrated: usize,
    /// Communication of the whole step (ghosts, migration, reductions,
    /// load check and any rebuild).
    pub traffic: Traffic,
    /// Wall seconds of the whole step on this rank.
    pub seconds: f64,
    /// Every rank's owned count after the step, by rank.
    pub counts: Vec<u64>,
    /// Whether the subdomains were rebuilt after this step.
    pub rebalanced: bool,
}

/// An SPH fluid spread over the ranks of a communicator. Every method is
/// collective (see [`crate::comm`]); the particles' global ids are the order
/// in which they were added.
///
/// Memory per rank: the owned particles (`4 + 24d + 8` bytes each, `84` in
/// 3D), and for the step a local fluid, search and gather workspace over the
/// owned and ghost particles (about `80 + 20 + 64` bytes each in 3D, see
/// [`Fluid`] and the cell-sorted hash), all in `Vec`s that grow to the
/// largest step seen.
pub struct DistFluid<P: Point> {
    params: SphParams<P>,
    sub: Subdomains<P>,
    owned: Vec<Particle<P>>,
    total: u32,
    local: Fluid<P, Vec<P>, Vec<ParticleState<P>>>,
    search: VecCellSorted<P>,
    work: Vec<GatherSlot<P>>,
    control: StepControl,
}

impl<P> DistFluid<P>
where
    P: Point + Pod,
    ParticleState<P>: Pod,
{
    /// Collective: an empty fluid with `params` over `params.domain`,
    /// cut into one subdomain per rank and rebalanced by `balance`.
    ///
    /// # Errors
    /// The parameters' error ([`SphParams::kernels`]), on every rank;
    /// `InvalidConfig` (`"periodic"`) for a periodic domain (the ghost
    /// exchange does not send periodic images).
    pub fn new(
        ranks: &mut Ranks,
        params: SphParams<P>,
        balance: Balance,
    ) -> Result<Self, DistError> {
        let periodic = if params.periodic == 0 {
            Ok(())
        } else {
            Err(spatium::Error::InvalidConfig { field: "periodic" })
        };
        ranks.agree(params.kernels().and(periodic))?;
        let sub = Subdomains::new(ranks, params.domain, balance)?;
        Ok(Self {
            params,
            sub,
            owned: Vec::new(),
            total: 0,
            local: Fluid::new(Vec::new(), Vec::new(), params),
            search: cell_sorted(0, 1),
            work: Vec::new(),
            control: StepControl::DEFAULT,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &SphParams<P> {
        &self.params
    }

    /// The stability monitor each rank's local fluid steps under
    /// ([`StepControl::DEFAULT`] unless set).
    pub fn control(&self) -> &StepControl {
        &self.control
    }

    /// Sets the stability monitor of each rank's local fluid (owned and
    /// ghost particles): a step past one of its bounds on any rank fails on
    /// every rank with [`Error::Diverged`], as any local failure does (see
    /// [Failures](self#failures)). Local, not collective: give every rank
    /// the same control.
    ///
    /// # Errors
    /// [`StepControl::check`]'s; `InvalidConfig` (`"adaptive"`) for an
    /// adaptive control (each rank would adapt its `Δt` to its own
    /// particles). Nothing changes on error.
    pub fn set_control(&mut self, control: StepControl) -> Result<(), Error> {
        control.check()?;
        if control.adaptive {
            return Err(Error::InvalidConfig { field: "adaptive" });
        }
        self.local.set_control(control)?;
        self.control = control;
        Ok(())
    }

    /// Particles this rank owns, by ascending global id.
    pub fn owned(&self) -> &[Particle<P>] {
        &self.owned
    }

    /// Particles on all ranks.
    pub fn total(&self) -> u32 {
        self.total
    }

    /// The subdomains.
    pub fn subdomains(&self) -> &Subdomains<P> {
        &self.sub
    }

    /// Adds `points` on this rank if it owns them, with ids from
    /// [`total`](Self::total) on; every rank must pass the same points.
    fn add_local(
        &mut self,
        me: u32,
        points: impl Iterator<Item = P>,
        v: P,
    ) -> Result<usize, Error> {
        if !v.is_finite() {
            return Err(Error::NonFinite);
        }
        // The owners' walk checks each point (finite, inside the domain,
        // which is the fluid's).
        let xs: Vec<P> = points.collect();
        let owners = self.sub.owners(&xs)?;
        let count = xs.len();
        if u32::try_from(self.total as usize + count).is_err() {
            return Err(Error::CapacityExceeded {
                capacity: u32::MAX as usize,
            });
        }
        for (k, (x, o)) in xs.into_iter().zip(owners).enumerate() {
            if o == me {
                self.owned.push(Particle {
                    id: self.total + k as u32,
                    x,
                    state: ParticleState {
                        velocity: v,
                        start_position: x,
                        start_velocity: v,
                        ..ParticleState::EMPTY
                    },
                });
            }
        }
        self.total += count as u32;
        Ok(count)
    }

    /// Collective: agrees on the outcome of an addition on this rank,
    /// restoring the owned count and total of `before` if any rank failed.
    fn agree_added(
        &mut self,
        ranks: &mut Ranks,
        before: (usize, u32),
        local: Result<usize, Error>,
    ) -> Result<usize, DistError> {
        let agreed = ranks.agree(local);
        if agreed.is_err() {
            self.owned.truncate(before.0);
            self.total = before.1;
        }
        agreed
    }

    /// Collective: adds `points`, each with velocity `v`; every rank must
    /// pass the same points (each keeps those in its subdomain). Returns
    /// how many were added in all. Ids are given in the points' order from
    /// [`total`](Self::total) on, as [`Fluid::extend`] gives them.
    ///
    /// # Errors
    /// A point not finite or outside the domain, or more than `u32::MAX`
    /// particles in all, on any rank: nothing is added on any rank.
    pub fn extend(
        &mut self,
        ranks: &mut Ranks,
        points: impl Iterator<Item = P> + Clone,
        v: P,
    ) -> Result<usize, DistError> {
        let me = ranks.rank();
        let before = (self.owned.len(), self.total);
        let result = self.add_local(me, points, v);
        self.agree_added(ranks, before, result)
    }

    /// Collective: [`Fluid::fill_block`] on every rank, each keeping its own
    /// particles (see [`extend`](Self::extend)).
    ///
    /// # Errors
    /// As [`extend`](Self::extend); the lattice's errors.
    pub fn fill_block(
        &mut self,
        ranks: &mut Ranks,
        region: P::Aabb,
        spacing: f32,
        v: P,
    ) -> Result<usize, DistError> {
        let me = ranks.rank();
        let before = (self.owned.len(), self.total);
        let result = spatium::sph::source::Lattice::new(region, spacing)
            .and_then(|lattice| self.add_local(me, lattice.points(), v));
        self.agree_added(ranks, before, result)
    }

    /// Collective: runs `pipe` for `dt` on every rank (each rank holds an
    /// identical copy of it) and adds the layers it spawns as
    /// [`Emitter::emit`] adds them to a [`Fluid`], each rank keeping its own
    /// particles. Returns how many were added in all.
    ///
    /// # Errors
    /// As [`Emitter::emit_with`] and [`extend`](Self::extend); the
    /// particles added by the failed call are removed on every rank, but
    /// the pipes of the ranks that did not fail have advanced.
    pub fn emit(
        &mut self,
        ranks: &mut Ranks,
        pipe: &mut Emitter<P>,
        dt: f32,
    ) -> Result<usize, DistError> {
        let me = ranks.rank();
        let before = (self.owned.len(), self.total);
        let result = pipe.emit_with(dt, |pipe, centre, count| {
            self.add_local(me, pipe.layer_points(centre).take(count), pipe.velocity())
        });
        self.agree_added(ranks, before, result)
    }

    /// Collective: one time step of every particle, as [`Fluid::par_step`]
    /// with a cell-sorted hash anchored at [`anchor`] would take it over all
    /// particles in id order (bit for bit; see [the module](self)): ghosts
    /// in, the step on `exec` with `solids` (each rank holds the same
    /// solids), the ghosts refreshed from their owners at each
    /// [`SyncPoint`], owned results kept, emigrants out, then the load check
    /// and, when due, a rebuild of the subdomains and a second migration.
    /// `timer` clocks the local step's stages.
    ///
    /// # Errors
    /// Any rank's failure (the local step's errors: a diverged scene, a
    /// solid's error; a message too large for MPI), on every rank. The
    /// owned particles are then as before the step on every rank.
    pub fn step<E, C, T>(
        &mut self,
        ranks: &mut Ranks,
        exec: &E,
        solids: &mut C,
        timer: &mut T,
    ) -> Result<StepReport, DistError>
    where
        E: Executor,
        C: ParCollider<P>,
        T: StageTimer,
    {
        let start = Instant::now();
        let traffic0 = ranks.traffic();
        let me = ranks.rank();
        let p = self.params;

        // The layer: h + 2·v_max·dt, with a little room for rounding.
        let vmax = self
            .owned
            .iter()
            .map(|q| q.state.velocity.dot(q.state.velocity).sqrt())
            .fold(0.0f32, f32::max);
        let vmax = ranks.max_f32(vmax);
        let halo = (HALO_SMOOTHING_LENGTHS * p.h + 2.0 * vmax * p.dt) * (1.0 + 1e-4);

        // Ghosts out, ghosts in: which owned particles go to which rank.
        let size = ranks.size() as usize;
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); size];
        let xs: Vec<P> = self.owned.iter().map(|q| q.x).collect();
        let decomp = self.sub.decomposition();
        let selected = (0..size as u32).filter(|&r| r != me).try_for_each(|r| {
            let out = &mut lists[r as usize];
            decomp.for_each_ghost(r, &xs, halo, Periodic::NONE, |id, _| out.push(id))
        });
        ranks.agree(selected)?;
        let sends: Vec<Vec<u32>> = lists
            .iter()
            .map(|list| {
                let mut out = Vec::with_capacity(list.len() * GhostRecord::<P>::words());
                for &k in list {
                    let q = &self.owned[k as usize];
                    GhostRecord {
                        id: q.id,
                        x: q.x,
                        v: q.state.velocity,
                    }
                    .write(&mut out);
                }
                out
            })
            .collect();
        let mut halo_bytes = sent_bytes(&sends, me);
        let words = ranks.exchange(&sends)?;
        let ghosts: Vec<GhostRecord<P>> = words
            .chunks_exact(GhostRecord::<P>::words())
            .map(GhostRecord::read)
            .collect();

        // The local step over owned and ghost particles, by global id, the
        // ghosts refreshed at every sync point.
        let (owned_local, ghost_local) = match self.merge(&ghosts) {
            Ok(v) => v,
            Err(e) => return Err(ranks.fail(e)),
        };
        let mut sync = GhostSync {
            ranks,
            sends: lists
                .iter()
                .map(|l| l.iter().map(|&k| owned_local[k as usize]).collect())
                .collect(),
            ghost_local,
            done: 0,
            failure: None,
            bytes: 0,
        };
        let local = self.local.par_step_synced(
            exec,
            &mut self.search,
            solids,
            timer,
            &mut self.work,
            &mut sync,
        );
        let (done, failure, sync_bytes) = (sync.done, sync.failure.take(), sync.bytes);
        halo_bytes += sync_bytes;
        match (local, failure) {
            (_, Some(agreed)) => return Err(agreed),
            // The others wait at the next sync point: fail it for all.
            (Err(e), None) if done < SyncPoint::per_step(&p) => return Err(ranks.fail(e)),
            (local, None) => ranks.agree(local)?,
        }
        let mut moved = self.owned.clone();
        for (q, &k) in moved.iter_mut().zip(&owned_local) {
            q.x = self.local.positions()[k as usize];
            q.state = self.local.state()[k as usize];
        }

        // Emigrants out, immigrants in; the load check, and a rebuild when
        // due.
        let s = settle(ranks, &mut self.sub, moved, |q| q.x, |q| q.id)?;
        self.owned = s.items;
        let traffic = ranks.traffic().since(traffic0);
        Ok(StepReport {
            owned: owned_local.len(),
            ghosts: ghosts.len(),
            halo,
            halo_bytes,
            migrated: s.migrated,
            traffic,
            seconds: start.elapsed().as_secs_f64(),
            counts: s.counts,
            rebalanced: s.rebalanced,
        })
    }

    /// Fills the local fluid with the owned particles and `ghosts`, merged
    /// by ascending global id; returns the local index of each owned
    /// particle and of each ghost (in `ghosts`' order).
    fn merge(&mut self, ghosts: &[GhostRecord<P>]) -> Result<(Vec<u32>, Vec<u32>), Error> {
        let n = self.owned.len() + ghosts.len();
        if self.local.capacity() < n {
            let cap = n + n / 4 + 16;
            self.local = Fluid::new(
                vec![P::ZERO; cap],
                vec![ParticleState::EMPTY; cap],
                self.params,
            );
            self.local.set_control(self.control)?;
            self.search = cell_sorted(cap, (2 * cap).next_power_of_two());
            self.search.set_anchor(Some(anchor(&self.params)))?;
            self.work = vec![GatherSlot::EMPTY; cap];
        }
        self.local.clear();
        let mut order: Vec<u32> = (0..ghosts.len() as u32).collect();
        order.sort_unstable_by_key(|&g| ghosts[g as usize].id);
        let mut owned_local = Vec::with_capacity(self.owned.len());
        let mut ghost_local = vec![0u32; ghosts.len()];
        let (mut a, mut b) = (0usize, 0usize);
        while a < self.owned.len() || b < order.len() {
            let g = order.get(b).map(|&g| &ghosts[g as usize]);
            match (self.owned.get(a), g) {
                (Some(q), g) if g.is_none_or(|g| q.id < g.id) => {
                    owned_local.push(self.local.push(q.x, q.state.velocity)?);
                    a += 1;
                }
                (_, Some(g)) => {
                    ghost_local[order[b] as usize] = self.local.push(g.x, g.v)?;
                    b += 1;
                }
                _ => break,
            }
        }
        Ok((owned_local, ghost_local))
    }

    /// Collective: rebuilds the subdomains from every rank's particles
    /// (balanced by count) and moves the particles to their new owners;
    /// returns how many left this rank.
    ///
    /// # Errors
    /// As [`Subdomains::rebuild`]; a message too large for MPI.
    pub fn rebalance(&mut self, ranks: &mut Ranks) -> Result<usize, DistError> {
        let items = core::mem::take(&mut self.owned);
        let (owned, left) = rebuild_and_migrate(ranks, &mut self.sub, items, |q| q.x, |q| q.id)?;
        self.owned = owned;
        Ok(left)
    }

    /// Collective: every rank's particles on every rank, by ascending id
    /// (for frames, checks and output; `O(N)` bytes to every rank).
    ///
    /// # Errors
    /// A message too large for MPI.
    pub fn gather(&self, ranks: &mut Ranks) -> Result<Vec<Particle<P>>, DistError> {
        gather_all(ranks, &self.owned, |q| q.id)
    }
}
