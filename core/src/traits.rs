//! The two traits every structure of the crate implements.
//!
//! * [`NeighborSearch`]: fixed-radius neighbour search over particles (SPH).
//!   Built from a slice of positions and a radius; particles are identified by
//!   their index in that slice. Implemented by the uniform spatial hashes and
//!   by [`crate::BruteForceNeighbors`], [`crate::PairCache`] and hierarchical
//!   hashing.
//! * [`BroadPhase`]: collision broad phase over boxes identified by caller
//!   chosen ids below the structure's capacity, with insert / update / remove
//!   at any time, every overlapping pair reported exactly once, and box
//!   queries. Implemented by [`crate::BruteForceBroadPhase`], the
//!   hierarchical hash grid, the linear kd-tree's broad phase and (multilevel
//!   and hierarchical) hashing.
//!
//! The two traits share no method name, so a type implementing both is used
//! with plain method syntax while both are imported.
//!
//! # Conventions shared by all implementations
//!
//! * "Within radius" is the strict test `distance_squared(a, b) < r * r`
//!   computed with [`Point::distance_squared`]. Strictness is what makes grid
//!   stencils exact in floating point: `d² < r²` implies `|Δ| < r` on every
//!   axis, however the subtraction rounds.
//! * Boxes overlap when their closed intervals overlap on every axis
//!   ([`BoundingBox::overlaps`]): touching boxes overlap.
//! * Pairs are unordered and reported once; the order of the two ids inside a
//!   pair and the order of the pairs are unspecified but deterministic for a
//!   given sequence of operations.
//! * A failed operation changes nothing.

use crate::error::Error;
use crate::exec::{Executor, Parts, exclusive_prefix_sum, task_count};
use crate::geom::{BoundingBox, Point};
use crate::periodic::PeriodicBox;

/// Particles per task of the default parallel gathers.
pub const GATHER_GRAIN: usize = 4096;

/// Per-task partial sums kept on the stack by the parallel prefix sums.
pub(crate) const PREFIX_TASKS: usize = 256;

/// Which candidates a candidate query reports, for every structure that offers one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Candidates {
    /// Everything the structure's retrieval touches, duplicates and false candidates included (what the papers measure).
    Raw,
    /// Each candidate at most once, found with integer (cell / code) tests only: a superset of the exact answer. A structure without a cheaper duplicate filter than the exact test answers as `Exact`.
    Unique,
    /// Exactly the overlapping boxes, each once.
    Exact,
}

/// Fixed-radius neighbour search over a set of particles.
///
/// Particles are identified by their index in the slice given to
/// [`build`](Self::build). Every query excludes a particle from its own
/// neighbours.
///
/// # Example
///
/// ```
/// use spatium::{NeighborSearch, Vec3, uniform::{CellSortedHash, TableSlot, SortedParticle, CellRecord}};
///
/// let positions = [Vec3::new(0.0, 0.0, 0.0), Vec3::new(0.5, 0.0, 0.0), Vec3::new(3.0, 0.0, 0.0)];
/// let mut hash = CellSortedHash::<Vec3, _, _, _>::new(
///     [TableSlot::EMPTY; 64],
///     [SortedParticle::EMPTY; 8],
///     [CellRecord::EMPTY; 8],
/// );
/// hash.build(&positions, 1.0).unwrap();
/// let mut pairs = 0;
/// hash.for_each_pair(|i, j, d2| { assert_eq!((i.min(j), i.max(j)), (0, 1)); assert_eq!(d2, 0.25); pairs += 1 });
/// assert_eq!(pairs, 1);
/// ```
pub trait NeighborSearch<P: Point> {
    /// Replaces the contents with `positions`, searched within `radius`.
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::InvalidRadius`], [`Error::OutOfRange`],
    /// [`Error::CapacityExceeded`], or a structure-specific error; on error the
    /// previous contents are kept unchanged.
    fn build(&mut self, positions: &[P], radius: f32) -> Result<(), Error>;

    /// Number of particles stored.
    fn len(&self) -> usize;

    /// `true` if no particle is stored.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The radius of the last successful build (0 before the first).
    fn radius(&self) -> f32;

    /// Position of particle `id` as stored.
    fn position(&self, id: u32) -> Option<P>;

    /// The periodic domain of the last build: positions were wrapped into
    /// it and distances are minimum-image distances
    /// ([`PeriodicBox::distance_squared`]). Structures without periodic
    /// support (this default) answer [`PeriodicBox::NONE`]; a periodic
    /// search is [`crate::uniform::DenseGrid`] (and brute force, its
    /// oracle).
    fn periodic(&self) -> PeriodicBox<P> {
        PeriodicBox::NONE
    }

    /// Calls `f(j, d²)` for every particle `j != id` strictly within the
    /// radius of particle `id`.
    ///
    /// # Errors
    /// [`Error::UnknownId`] if `id >= len()`.
    fn for_each_neighbor<F: FnMut(u32, f32)>(&self, id: u32, f: F) -> Result<(), Error>;

    /// Calls `f(j, d²)` for every particle `j` strictly within the radius of
    /// an arbitrary `point`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] if `point` is not finite.
    fn for_each_within<F: FnMut(u32, f32)>(&self, point: P, f: F) -> Result<(), Error>;

    /// Calls `f(i, j, d²)` once for every unordered pair strictly within the
    /// radius.
    fn for_each_pair<F: FnMut(u32, u32, f32)>(&self, f: F);

    /// Writes every particle's neighbour list in compressed sparse row form:
    /// the neighbours of `i` are `indices[offsets[i]..offsets[i + 1]]`.
    /// Returns the number of indices written (twice the number of pairs).
    ///
    /// `offsets` needs `len() + 1` entries and `indices` the total number of
    /// neighbours. On error the buffers' contents are unspecified (they are
    /// outputs; the structure itself never changes).
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] with the exact length needed, for either
    /// buffer.
    /// The default implementation counts degrees in one pass over
    /// [`for_each_pair`](Self::for_each_pair) and fills in a second.
    fn neighbor_lists(&self, offsets: &mut [u32], indices: &mut [u32]) -> Result<usize, Error> {
        let n = self.len();
        if offsets.len() < n + 1 {
            return Err(Error::BufferTooSmall {
                needed: n + 1,
                available: offsets.len(),
            });
        }
        let offsets = &mut offsets[..=n];
        offsets.fill(0);
        self.for_each_pair(|i, j, _| {
            offsets[i as usize + 1] += 1;
            offsets[j as usize + 1] += 1;
        });
        let total = crate::csr::prefix_sum(offsets);
        if indices.len() < total {
            return Err(Error::BufferTooSmall {
                needed: total,
                available: indices.len(),
            });
        }
        // offsets[i] is now i's start; use it as a cursor, then shift back.
        self.for_each_pair(|i, j, _| {
            let ci = &mut offsets[i as usize];
            indices[*ci as usize] = j;
            *ci += 1;
            let cj = &mut offsets[j as usize];
            indices[*cj as usize] = i;
            *cj += 1;
        });
        crate::csr::shift_back(offsets);
        Ok(total)
    }

    /// [`neighbor_lists`](Self::neighbor_lists) with the rows in the
    /// structure's own storage order: row `k`
    /// (`indices[offsets[k]..offsets[k + 1]]`) is the list of the particle
    /// [`spatial_order`](Self::spatial_order) puts at `k`; the entries are
    /// still the caller's ids, each row in the order `neighbor_lists`
    /// gives it. A structure that sorts its input
    /// ([`crate::uniform::CellSortedHash`]) writes these lists in one
    /// sequential sweep for input in any order, where `neighbor_lists`
    /// needs a second sweep writing each list at its id's offset; a caller
    /// that walks its particles in spatial order (or has renumbered them in
    /// it) gets its lists at the cost of cell-ordered input. The default,
    /// for structures whose spatial order is `0..len()`, is
    /// `neighbor_lists`.
    ///
    /// # Errors
    /// As [`neighbor_lists`](Self::neighbor_lists).
    fn spatial_neighbor_lists(
        &self,
        offsets: &mut [u32],
        indices: &mut [u32],
    ) -> Result<usize, Error> {
        self.neighbor_lists(offsets, indices)
    }

    /// Writes the ids of the stored particles in the structure's own
    /// storage order into `order[..len()]`, a permutation of `0..len()`.
    /// Renumbering the caller's per-particle data in this order (new id `k`
    /// = old id `order[k]`) makes the structure's sweeps and the caller's
    /// arrays run in step, and a structure that sorts its input
    /// ([`crate::uniform::CellSortedHash`]: cells in row-major order) then
    /// finds the next build's input already sorted and copies it.
    /// Structures that keep their input order, or whose storage order is not
    /// spatial (brute force, the bucketed and linked hashes, hierarchical
    /// and multilevel hashing), write `0..len()`: this default.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] if `order` is shorter than `len()`.
    fn spatial_order(&self, order: &mut [u32]) -> Result<(), Error> {
        let n = self.len();
        let available = order.len();
        let out = order.get_mut(..n).ok_or(Error::BufferTooSmall {
            needed: n,
            available,
        })?;
        for (k, o) in out.iter_mut().enumerate() {
            *o = k as u32;
        }
        Ok(())
    }

    // ----- Parallel forms (see [`crate::exec`]). Each gives the same result
    // ----- for every executor and every number of workers.

    /// [`build`](Self::build) with its loops run as tasks on `exec`; the
    /// result is identical to `build`'s. The default runs `build` on the
    /// calling thread; structures with a parallel build override it.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    fn par_build<E: Executor>(
        &mut self,
        exec: &E,
        positions: &[P],
        radius: f32,
    ) -> Result<(), Error> {
        let _ = exec;
        self.build(positions, radius)
    }

    /// How many sinks [`par_for_each_pair`](Self::par_for_each_pair) fills:
    /// one per task, fixed by the last build (never by the number of
    /// workers). The default: one per [`GATHER_GRAIN`] particles.
    fn pair_tasks(&self) -> usize {
        task_count(self.len(), GATHER_GRAIN)
    }

    /// Every pair once, as [`for_each_pair`](Self::for_each_pair), found by
    /// tasks on `exec`: task `t` calls `f(&mut sinks[t], i, j, d²)` for its
    /// share of the pairs. The caller gives [`pair_tasks`](Self::pair_tasks)
    /// sinks (a `Vec` of per-task pair lists, counters, force buffers…) and
    /// combines them afterwards, in sink order: the pairs of each sink and
    /// their order are the same for every executor, so a combination in sink
    /// order is deterministic. Sinks updated per pair should each sit on
    /// their own cache lines ([`Padded`](crate::exec::Padded)): adjacent
    /// counters written by different cores cost the sweep most of its
    /// speed-up. The default ([`pairs_by_id`]) gives task `t`
    /// the particles `t·GATHER_GRAIN..` and reports each one's neighbours
    /// with a larger id (every distance is computed twice; structures with a
    /// half-stencil sweep override it).
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] with fewer than `pair_tasks()` sinks
    /// (nothing is called).
    fn par_for_each_pair<E, K, F>(&self, exec: &E, sinks: &mut [K], f: F) -> Result<(), Error>
    where
        E: Executor,
        K: Send,
        F: Fn(&mut K, u32, u32, f32) + Sync,
        Self: Sync,
    {
        pairs_by_id(self, exec, sinks, f)
    }

    /// A gather over every particle's neighbours, on `exec`: for every
    /// particle `i` and every neighbour `j` of it (each pair is seen from
    /// both sides), `f(i, &mut out[i], j, d²)`. No two tasks touch one
    /// `out[i]`, so `f` may accumulate into it freely; for each `i` the
    /// neighbours come in the same order for every executor. The caller
    /// initialises `out`.
    ///
    /// The default calls [`for_each_neighbor`](Self::for_each_neighbor) per
    /// particle in tasks of contiguous ids; structures whose storage order
    /// allows a sweep override it.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] if `out` is shorter than [`len`](Self::len)
    /// (nothing is called).
    fn par_gather<E, T, F>(&self, exec: &E, out: &mut [T], f: F) -> Result<(), Error>
    where
        E: Executor,
        T: Send,
        F: Fn(u32, &mut T, u32, f32) + Sync,
        Self: Sync,
    {
        gather_by_id(self, exec, out, f)
    }

    /// [`neighbor_lists`](Self::neighbor_lists) on `exec`: the same lists
    /// and errors (the order inside a list may differ from
    /// `neighbor_lists`', and is the same for every executor). The default
    /// counts degrees with [`par_gather`](Self::par_gather), sums them in
    /// parallel, and fills each task's range of lists in
    /// [`for_each_neighbor`](Self::for_each_neighbor)'s order.
    ///
    /// # Errors
    /// As [`neighbor_lists`](Self::neighbor_lists).
    fn par_neighbor_lists<E: Executor>(
        &self,
        exec: &E,
        offsets: &mut [u32],
        indices: &mut [u32],
    ) -> Result<usize, Error>
    where
        Self: Sync,
    {
        lists_by_id(self, exec, offsets, indices)
    }
}

/// [`NeighborSearch::par_for_each_pair`]'s default: task `t` takes the ids
/// `t·GATHER_GRAIN..(t+1)·GATHER_GRAIN` and reports the pairs `(i, j)` with
/// `j` a neighbour of `i` and `j > i`, through
/// [`NeighborSearch::for_each_neighbor`].
///
/// # Errors
/// As [`NeighborSearch::par_for_each_pair`].
pub fn pairs_by_id<P, N, E, K, F>(search: &N, exec: &E, sinks: &mut [K], f: F) -> Result<(), Error>
where
    P: Point,
    N: NeighborSearch<P> + Sync + ?Sized,
    E: Executor,
    K: Send,
    F: Fn(&mut K, u32, u32, f32) + Sync,
{
    let n = search.len();
    let tasks = task_count(n, GATHER_GRAIN);
    let available = sinks.len();
    let sinks = sinks.get_mut(..tasks).ok_or(Error::BufferTooSmall {
        needed: tasks,
        available,
    })?;
    exec.run(tasks, Parts::chunks(sinks, 1), |t, mut sink| {
        let Some(sink) = sink.slice().first_mut() else {
            return;
        };
        let lo = (t * GATHER_GRAIN).min(n);
        let hi = (lo + GATHER_GRAIN).min(n);
        for i in lo as u32..hi as u32 {
            // `i < len()`: the call cannot fail.
            let _ = search.for_each_neighbor(i, |j, d2| {
                if j > i {
                    f(sink, i, j, d2);
                }
            });
        }
    });
    Ok(())
}

/// [`NeighborSearch::par_gather`]'s default: tasks of contiguous ids, each
/// particle's neighbours through [`NeighborSearch::for_each_neighbor`].
/// Structures that override `par_gather` call it for the cases their sweep
/// does not cover.
///
/// # Errors
/// As [`NeighborSearch::par_gather`].
pub fn gather_by_id<P, N, E, T, F>(search: &N, exec: &E, out: &mut [T], f: F) -> Result<(), Error>
where
    P: Point,
    N: NeighborSearch<P> + Sync + ?Sized,
    E: Executor,
    T: Send,
    F: Fn(u32, &mut T, u32, f32) + Sync,
{
    let n = search.len();
    let available = out.len();
    let out = out.get_mut(..n).ok_or(Error::BufferTooSmall {
        needed: n,
        available,
    })?;
    exec.run(
        task_count(n, GATHER_GRAIN),
        Parts::chunks(out, GATHER_GRAIN),
        |_, mut part| {
            let start = part.start();
            for (k, o) in part.slice().iter_mut().enumerate() {
                let i = (start + k) as u32;
                // `i < len()`: the call cannot fail.
                let _ = search.for_each_neighbor(i, |j, d2| f(i, o, j, d2));
            }
        },
    );
    Ok(())
}

/// [`NeighborSearch::par_neighbor_lists`]' default: degrees by
/// [`NeighborSearch::par_gather`], a parallel prefix sum, and the lists of
/// each task's ids filled in [`NeighborSearch::for_each_neighbor`]'s order.
///
/// # Errors
/// As [`NeighborSearch::neighbor_lists`].
pub fn lists_by_id<P, N, E>(
    search: &N,
    exec: &E,
    offsets: &mut [u32],
    indices: &mut [u32],
) -> Result<usize, Error>
where
    P: Point,
    N: NeighborSearch<P> + Sync + ?Sized,
    E: Executor,
{
    let n = search.len();
    let available = offsets.len();
    let offsets = offsets.get_mut(..=n).ok_or(Error::BufferTooSmall {
        needed: n + 1,
        available,
    })?;
    offsets.fill(0);
    search.par_gather(exec, &mut offsets[..n], |_, d, _, _| *d += 1)?;
    let mut scratch = [0u32; PREFIX_TASKS];
    let total = exclusive_prefix_sum(exec, offsets, &mut scratch) as usize;
    if total > indices.len() || total >= u32::MAX as usize {
        return Err(Error::BufferTooSmall {
            needed: total,
            available: indices.len(),
        });
    }
    let starts = &*offsets;
    let cuts = |t: usize| {
        starts
            .get((t * GATHER_GRAIN).min(n))
            .map_or(usize::MAX, |&o| o as usize)
    };
    exec.run(
        task_count(n, GATHER_GRAIN),
        Parts::cut(&mut indices[..total], cuts),
        |t, mut part| {
            let base = part.start();
            let dst = part.slice();
            let lo = (t * GATHER_GRAIN).min(n);
            let hi = (lo + GATHER_GRAIN).min(n);
            for (i, &start) in starts.iter().enumerate().take(hi).skip(lo) {
                let mut at = (start as usize).saturating_sub(base);
                let _ = search.for_each_neighbor(i as u32, |j, _| {
                    if let Some(d) = dst.get_mut(at) {
                        *d = j;
                    }
                    at += 1;
                });
            }
        },
    );
    Ok(total)
}

/// Collision broad phase over boxes with caller-chosen ids.
///
/// Ids are `u32` values below [`capacity`](Self::capacity); the structure
/// keeps one slot per id, so insert, update and remove address the slot
/// directly.
///
/// The method names never collide with [`NeighborSearch`]'s: a type
/// implementing both (hierarchical hashing stores boxes and particles in one
/// table) is called with plain method syntax with both traits imported.
/// Broad-phase methods speak of boxes and overlaps
/// ([`box_count`](Self::box_count), [`for_each_overlap`](Self::for_each_overlap)),
/// neighbour-search methods of particles and pairs
/// ([`NeighborSearch::len`], [`NeighborSearch::for_each_pair`]).
///
/// # Example
///
/// ```
/// use spatium::{Aabb3, BroadPhase, BruteForceBroadPhase, BruteSlot, Vec3};
///
/// let mut bp = BruteForceBroadPhase::new([BruteSlot::<Aabb3>::EMPTY; 4]);
/// bp.insert(0, Aabb3::new(Vec3::ZERO, Vec3::new(1.0, 1.0, 1.0)).unwrap()).unwrap();
/// bp.insert(1, Aabb3::new(Vec3::new(0.5, 0.5, 0.5), Vec3::new(2.0, 2.0, 2.0)).unwrap()).unwrap();
/// bp.insert(2, Aabb3::new(Vec3::new(5.0, 5.0, 5.0), Vec3::new(6.0, 6.0, 6.0)).unwrap()).unwrap();
/// let mut pairs = 0;
/// bp.for_each_overlap(|a, b| { assert_eq!((a.min(b), a.max(b)), (0, 1)); pairs += 1 }).unwrap();
/// assert_eq!((pairs, bp.box_count()), (1, 3));
/// ```
pub trait BroadPhase<B: BoundingBox> {
    /// Ids must be below this.
    fn capacity(&self) -> usize;

    /// Number of boxes stored.
    fn box_count(&self) -> usize;

    /// Stores `aabb` under `id`.
    ///
    /// # Errors
    /// [`Error::IdOutOfRange`], [`Error::DuplicateId`], [`Error::NonFinite`],
    /// [`Error::InvertedBox`], [`Error::OutOfRange`], or a full structure's
    /// capacity error; nothing changes on error.
    fn insert(&mut self, id: u32, aabb: B) -> Result<(), Error>;

    /// Replaces the box of a stored `id`.
    ///
    /// # Errors
    /// As [`insert`](Self::insert), with [`Error::UnknownId`] for an id not
    /// stored; nothing changes on error.
    fn update(&mut self, id: u32, aabb: B) -> Result<(), Error>;

    /// Replaces the boxes of many stored ids: for each `(id, aabb)` in order,
    /// as [`update`](Self::update) (a repeated id ends with its last box).
    ///
    /// Every id and box is checked before anything changes, so an unknown id
    /// or a bad box changes nothing. A structure-specific error found while
    /// applying (a coordinate beyond the cell arithmetic, a full arena) stops
    /// at that element: the updates before it are applied, it and the rest
    /// are not, and nothing stored is lost.
    ///
    /// The provided implementation is `O(k)` calls of `update`; structures
    /// with a cheaper bulk path override it.
    ///
    /// # Errors
    /// As [`update`](Self::update).
    fn update_many(&mut self, updates: &[(u32, B)]) -> Result<(), Error> {
        for &(id, aabb) in updates {
            if id as usize >= self.capacity() {
                return Err(Error::IdOutOfRange { id });
            }
            if self.get(id).is_none() {
                return Err(Error::UnknownId { id });
            }
            aabb.check()?;
        }
        for &(id, aabb) in updates {
            self.update(id, aabb)?;
        }
        Ok(())
    }

    /// Removes `id` and returns its box.
    ///
    /// # Errors
    /// [`Error::UnknownId`] (or [`Error::IdOutOfRange`]).
    fn remove(&mut self, id: u32) -> Result<B, Error>;

    /// The box stored under `id`.
    fn get(&self, id: u32) -> Option<B>;

    /// Removes everything.
    fn clear(&mut self);

    /// Calls `f(a, b)` once for every unordered pair of stored boxes that
    /// overlap.
    ///
    /// # Errors
    /// Structures that build scratch data at detection time may report a full
    /// scratch buffer; the stored boxes are unaffected.
    fn for_each_overlap<F: FnMut(u32, u32)>(&mut self, f: F) -> Result<(), Error>;

    /// Calls `f(id)` once for every stored box overlapping `aabb`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] or [`Error::InvertedBox`] for a bad query box.
    fn query<F: FnMut(u32)>(&mut self, aabb: &B, f: F) -> Result<(), Error>;

    // ----- Parallel forms (see [`crate::exec`]): the same answers for
    // ----- every executor and every number of workers.

    /// How many sinks [`par_for_each_overlap`](Self::par_for_each_overlap)
    /// fills: one per task, fixed by the stored boxes (never by the number
    /// of workers). The default, 1, is the serial detection.
    fn overlap_tasks(&self) -> usize {
        1
    }

    /// Every overlapping pair once, as
    /// [`for_each_overlap`](Self::for_each_overlap), found by tasks on
    /// `exec`: task `t` calls `f(&mut sinks[t], a, b)` for its share. The
    /// caller gives [`overlap_tasks`](Self::overlap_tasks) sinks and
    /// combines them in sink order; each sink's pairs and their order are
    /// the same for every executor. Wrap sinks updated per pair in
    /// [`Padded`](crate::exec::Padded) (one cache line pair each).
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] with fewer than `overlap_tasks()` sinks
    /// (nothing is called), or [`for_each_overlap`](Self::for_each_overlap)'s
    /// errors.
    fn par_for_each_overlap<E, K, F>(
        &mut self,
        exec: &E,
        sinks: &mut [K],
        f: F,
    ) -> Result<(), Error>
    where
        E: Executor,
        K: Send,
        F: Fn(&mut K, u32, u32) + Sync,
        Self: Send + Sync,
    {
        let _ = exec;
        let available = sinks.len();
        let sink = sinks.first_mut().ok_or(Error::BufferTooSmall {
            needed: 1,
            available,
        })?;
        self.for_each_overlap(|a, b| f(sink, a, b))
    }

    // ----- Filtered forms (see [`crate::filter`]): the same detection,
    // ----- with the pairs whose ids do not interact dropped before `f`.

    /// [`for_each_overlap`](Self::for_each_overlap), calling `f(a, b)` only
    /// for pairs whose [`Groups`](crate::filter::Groups) interact
    /// (`groups[id]` for each id below [`capacity`](Self::capacity)).
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] if `groups` is shorter than the capacity
    /// (nothing is called); then as
    /// [`for_each_overlap`](Self::for_each_overlap).
    fn for_each_overlap_filtered<F: FnMut(u32, u32)>(
        &mut self,
        groups: &[crate::filter::Groups],
        mut f: F,
    ) -> Result<(), Error> {
        crate::filter::check(groups, self.capacity())?;
        self.for_each_overlap(|a, b| {
            if crate::filter::pair(groups, a, b) {
                f(a, b);
            }
        })
    }

    /// [`query`](Self::query) for a query with groups `with`, calling
    /// `f(id)` only for stored ids whose groups interact with it.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] if `groups` is shorter than the capacity
    /// (nothing is called); then as [`query`](Self::query).
    fn query_filtered<F: FnMut(u32)>(
        &mut self,
        aabb: &B,
        with: crate::filter::Groups,
        groups: &[crate::filter::Groups],
        mut f: F,
    ) -> Result<(), Error> {
        crate::filter::check(groups, self.capacity())?;
        self.query(aabb, |id| {
            if groups.get(id as usize).is_some_and(|g| g.interacts(with)) {
                f(id);
            }
        })
    }

    /// [`par_for_each_overlap`](Self::par_for_each_overlap) with the pairs
    /// whose groups do not interact dropped, as
    /// [`for_each_overlap_filtered`](Self::for_each_overlap_filtered).
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] if `groups` is shorter than the capacity
    /// (checked first; nothing is called); then as
    /// [`par_for_each_overlap`](Self::par_for_each_overlap).
    fn par_for_each_overlap_filtered<E, K, F>(
        &mut self,
        exec: &E,
        sinks: &mut [K],
        groups: &[crate::filter::Groups],
        f: F,
    ) -> Result<(), Error>
    where
        E: Executor,
        K: Send,
        F: Fn(&mut K, u32, u32) + Sync,
        Self: Send + Sync,
    {
        crate::filter::check(groups, self.capacity())?;
        self.par_for_each_overlap(exec, sinks, |k, a, b| {
            if crate::filter::pair(groups, a, b) {
                f(k, a, b);
            }
        })
    }
}
