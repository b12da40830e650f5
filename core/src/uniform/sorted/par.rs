//! The cell-sorted hash on many workers ([`crate::exec`]).
//!
//! * Build: the bounds of the input in tasks of particles; input already in
//!   the structure's order (the common case of a caller that renumbers with
//!   [`NeighborSearch::spatial_order`]) is checked and copied in tasks,
//!   each task parking its run starts at the head of its own records; one
//!   forward pass over the runs (not the particles) moves them to their
//!   run numbers. Other input whose bounding box has no more cells than the
//!   table has slots (a fluid in its box) is counting-sorted
//!   by destination: each worker owns a range of cells (its slice of the
//!   table as counts, its slice of the sorted particles) and scans every
//!   particle's cell number for its own, so no two workers write one
//!   element (a scatter by source chunks cannot be cut into disjoint pieces
//!   in safe Rust). Each chunk of input records its least and greatest
//!   cell, so a worker reads the cell numbers of only the chunks that may
//!   hold its cells (all of them for shuffled input, about its own share
//!   for input nearly in cell order), and the runs are read off its counts;
//!   the sort's result is unique, so this decomposition may follow the
//!   number of workers. Sparse input (hashed
//!   counting sort, comparison sort), and any input on fewer workers, is
//!   sorted on the calling thread.
//!   The table index of the runs is written in blocks of the table, one
//!   task per block (see `INDEX_BLOCKS`); the direct-mapped index of a
//!   dense box (`index_dense`) by tasks over ranges of runs, whose slots
//!   increase with the run, so each task owns one stretch of the table.
//!   Without an index, point queries
//!   (and the gathers of input not in the structure's order) would bisect
//!   the runs, 27 bisections per particle in 3D: 54 µs per particle at 10⁶
//!   against about 1 µs.
//! * Sweeps (pairs, gathers, lists): tasks over ranges of runs, each
//!   starting its row cursors by bisection where a whole sweep would have
//!   them, so each task sees exactly what the serial sweep sees there. The
//!   lists are written in one sweep when `indices` has room for them twice
//!   over (see `par_lists_sweep`).
//!
//! Task boundaries depend on the particle and run counts only, so every
//! result is the same for every executor and number of workers.

use super::*;
use crate::exec::{Every, Executor, Parts, task_split};

/// Particles per task of the build's passes.
const BUILD_GRAIN: usize = 16 * 1024;
/// Runs (occupied cells) per task of the sweeps.
const RUN_GRAIN: usize = 256;
/// Most tasks of one call: per-task results live in stack arrays of this
/// length (the grain widens beyond it).
const MAX_TASKS: usize = 256;

/// What one task of the identity check found: whether its particles are in
/// cell order (against the particle before the task too), and how many runs
/// start in it.
#[derive(Clone, Copy, Default)]
struct Piece {
    sorted: bool,
    runs: u32,
}

impl<P, T, S, C> CellSortedHash<P, T, S, C>
where
    P: Point,
    T: Storage<TableSlot>,
    S: Storage<SortedParticle<P>>,
    C: Storage<CellRecord<P>>,
{
    /// `(tasks, runs per task)` of the parallel sweeps of the last build.
    pub(super) fn run_tasks(&self) -> (usize, usize) {
        task_split(self.runs as usize, RUN_GRAIN, MAX_TASKS)
    }

    pub(super) fn par_build_impl<E: Executor>(
        &mut self,
        exec: &E,
        positions: &[P],
        radius: f32,
    ) -> Result<(), Error> {
        // One worker: the serial build gives the same structure in fewer
        // passes.
        if exec.workers() <= 1 {
            return self.build(positions, radius);
        }
        let n = positions.len();
        let (tasks, grain) = task_split(n, BUILD_GRAIN, MAX_TASKS);
        let mut bounds = [None; MAX_TASKS];
        exec.run(tasks, Parts::chunks(&mut bounds[..tasks], 1), |t, mut b| {
            let lo = (t * grain).min(n);
            let hi = (lo + grain).min(n);
            if let Some(b) = b.slice().first_mut() {
                *b = super::super::grid::bounds(&positions[lo..hi]);
            }
        });
        let all = bounds[..tasks]
            .iter()
            .flatten()
            .copied()
            .reduce(|(lo, hi, f), (l, h, g)| (lo.min(l), hi.max(h), f && g));
        let (grid, lo, hi) =
            Grid::fit_with_bounds(radius, n, all, self.table.as_ref().len(), self.capacity())?;
        let grid = grid.anchored(self.anchor, lo, hi, n)?;
        // Validated: from here on nothing can fail.
        let mut parts = PlanesMut::new(self.particles.as_mut(), n);
        let records = &mut self.records.as_mut()[..n];
        let (runs, identity) = match par_copy_if_sorted(exec, &grid, positions, &mut parts, records)
        {
            Some(runs) => (runs, true),
            None => {
                let table = self.table.as_mut();
                let dense = DenseBox::new(&grid, lo, hi, table.len());
                let runs = match dense {
                    Some(d) if exec.workers() > 1 => {
                        par_dense_sort(exec, &d, &grid, positions, table, &mut parts, records)
                    }
                    _ => sort_unsorted(
                        &grid,
                        lo,
                        hi,
                        positions,
                        table,
                        &mut self.stamp,
                        &mut parts,
                        records,
                    ),
                };
                (runs, false)
            }
        };
        let dense = DenseBox::new(&grid, lo, hi, self.table.as_ref().len());
        self.finish_build(exec, grid, n, runs, identity, dense.as_ref());
        Ok(())
    }

    pub(super) fn par_pairs_impl<E, K, F>(
        &self,
        exec: &E,
        sinks: &mut [K],
        f: F,
    ) -> Result<(), Error>
    where
        E: Executor,
        K: Send,
        F: Fn(&mut K, u32, u32, f32) + Sync,
        Self: Sync,
    {
        let (tasks, grain) = self.run_tasks();
        let available = sinks.len();
        let sinks = sinks.get_mut(..tasks).ok_or(Error::BufferTooSmall {
            needed: tasks,
            available,
        })?;
        let v = self.view();
        let r2 = self.grid.radius_sq();
        exec.run(tasks, Parts::chunks(sinks, 1), |t, mut sink| {
            let Some(sink) = sink.slice().first_mut() else {
                return;
            };
            let s0 = t * grain;
            let mut out = Batch::new(|i, j, d2| f(sink, i, j, d2), r2);
            self.pair_range(&v, s0, s0 + grain, &mut out);
        });
        Ok(())
    }

    /// First sorted position of task `t`'s runs.
    #[inline]
    fn task_start(&self, v: &Runs<'_, P>, t: usize, grain: usize) -> usize {
        v.start(t.saturating_mul(grain).min(v.runs))
    }

    /// The gather in storage order (`self.identity`: id = sorted position).
    pub(super) fn par_gather_sweep<E, U, F>(
        &self,
        exec: &E,
        out: &mut [U],
        f: F,
    ) -> Result<(), Error>
    where
        E: Executor,
        U: Send,
        F: Fn(u32, &mut U, u32, f32) + Sync,
        Self: Sync,
    {
        let n = self.len as usize;
        let available = out.len();
        let out = out.get_mut(..n).ok_or(Error::BufferTooSmall {
            needed: n,
            available,
        })?;
        let v = self.view();
        let (tasks, grain) = self.run_tasks();
        let r2 = self.grid.radius_sq();
        let cuts = |t: usize| self.task_start(&v, t, grain);
        exec.run(tasks, Parts::cut(out, cuts), |t, mut piece| {
            let base = piece.start();
            let outs = piece.slice();
            // Hits are collected branch-free per particle (as the pair
            // sweep does) and handed to `f` in a tight loop.
            let mut batch = Batch::new(
                |i: u32, j: u32, d2: f32| {
                    if let Some(o) = (i as usize).checked_sub(base).and_then(|x| outs.get_mut(x)) {
                        f(i, o, j, d2);
                    }
                },
                r2,
            );
            let s0 = t * grain;
            self.sweep_rows_in(&v, s0, s0 + grain, |k, rows| {
                batch.begin(&v.parts, k as u32, v.parts.pos(k));
                for &(lo, hi) in rows {
                    let (lo, hi) = (lo as usize, hi as usize);
                    if (lo..hi).contains(&k) {
                        batch.add(&v.parts, lo, k);
                        batch.add(&v.parts, k + 1, hi);
                    } else {
                        batch.add(&v.parts, lo, hi);
                    }
                }
            });
            batch.flush(&v.parts);
        });
        Ok(())
    }

    /// The lists in storage order, on several workers.
    ///
    /// One sweep when `indices` has room for the lists twice over: the
    /// upper half of `indices` is cut into one provisional region per task,
    /// in proportion to the task's particles; each task writes its lists
    /// there (and, in `offsets`, each list's start within its region), the
    /// per-task totals are summed, and each task copies its lists down to
    /// their place in the lower half and shifts its offsets (a copy of 4
    /// bytes per neighbour, in parallel, instead of a second sweep over
    /// every candidate). A task whose region overflowed sweeps again,
    /// writing its lists straight into place; if the lists do not fit in
    /// the lower half at all, every task does (the first sweep's counts
    /// give the offsets: two sweeps in all). Either way the
    /// lists are [`neighbor_lists`](NeighborSearch::neighbor_lists)' own;
    /// which way is taken depends on the input and `indices.len()` only.
    /// Returns the total and whether one sweep sufficed.
    pub(super) fn par_lists_sweep<E: Executor>(
        &self,
        exec: &E,
        offsets: &mut [u32],
        indices: &mut [u32],
    ) -> Result<(usize, bool), Error>
    where
        Self: Sync,
    {
        let n = self.len as usize;
        let available = offsets.len();
        let offsets = offsets.get_mut(..=n).ok_or(Error::BufferTooSmall {
            needed: n + 1,
            available,
        })?;
        let v = self.view();
        let (tasks, grain) = self.run_tasks();
        let starts = |t: usize| self.task_start(&v, t, grain);
        let len = indices.len();
        let half = len / 2;
        // Provisional region of task `t` within the upper half: from
        // `region(t)` to `region(t + 1)`, relative to `half`.
        // In 128 bits: a buffer of more than 2³² entries times 2³² particles
        // would overflow 64.
        let room = (len - half) as u128;
        let region = |t: usize| {
            let s = starts(t) as u128;
            (room * s).checked_div(n as u128).unwrap_or(0) as usize
        };
        // Pass 1: each task's lists into its region (counting past its
        // end), list starts relative to the region.
        let mut firsts = [0usize; MAX_TASKS];
        {
            let (_, upper) = indices.split_at_mut(half);
            exec.run(
                tasks,
                (
                    Parts::cut(&mut offsets[..n], starts),
                    Parts::cut(upper, region),
                    Parts::chunks(&mut firsts[..tasks], 1),
                ),
                |t, (mut offs, mut dst, mut count)| {
                    let base = offs.start();
                    let offs = offs.slice();
                    let dst = dst.slice();
                    let mut cursor = 0usize;
                    let s0 = t * grain;
                    self.sweep_cands_in(&v, s0, s0 + grain, |k, cands| {
                        if let Some(o) = offs.get_mut(k - base) {
                            *o = cursor.min(NONE as usize) as u32;
                        }
                        cursor = self.gather_cands(k, cands, dst, cursor);
                    });
                    if let Some(c) = count.slice().first_mut() {
                        *c = cursor;
                    }
                },
            );
        }
        // Each task's final start; whether every region held its lists.
        let mut total = 0usize;
        let mut held = true;
        for (t, f) in firsts[..tasks].iter_mut().enumerate() {
            let count = *f;
            held &= count <= region(t + 1) - region(t);
            *f = total;
            total = total.saturating_add(count);
        }
        if total > len || total >= NONE as usize {
            return Err(Error::BufferTooSmall {
                needed: total,
                available: len,
            });
        }
        offsets[n] = total as u32;
        let firsts = &firsts;
        let finals = |t: usize| if t < tasks { firsts[t] } else { total };
        // Task `t`'s lists swept again, straight into their place.
        let resweep = |t: usize, dst: &mut [u32]| {
            let mut cursor = 0;
            let s0 = t * grain;
            self.sweep_cands_in(&v, s0, s0 + grain, |k, cands| {
                cursor = self.gather_cands(k, cands, dst, cursor);
            });
        };
        // When the final lists fit below the provisional ones, each task
        // whose region held its lists copies them down and the others
        // sweep again; otherwise every task sweeps again.
        let (lower, upper): (&mut [u32], &[u32]) = if total <= half {
            let (lower, upper) = indices.split_at_mut(half);
            (lower, upper)
        } else {
            (indices, &[])
        };
        exec.run(
            tasks,
            (
                Parts::cut(&mut offsets[..n], starts),
                Parts::cut(&mut lower[..total], finals),
            ),
            |t, (mut offs, mut dst)| {
                shift(offs.slice(), finals(t));
                let dst = dst.slice();
                let (from, to) = (region(t), region(t + 1));
                match upper.get(from..from + dst.len()) {
                    Some(src) if dst.len() <= to - from => dst.copy_from_slice(src),
                    _ => resweep(t, dst),
                }
            },
        );
        let once = held && total <= half;
        Ok((total, once))
    }
}

/// Adds `by` to every offset of a task (its lists' final start).
#[inline]
fn shift(offsets: &mut [u32], by: usize) {
    let by = by.min(NONE as usize) as u32;
    for o in offsets {
        *o = o.saturating_add(by);
    }
}

/// [`copy_if_sorted`] in tasks: each task checks the order (also against
/// the particle before it), copies, sets the ranks and parks the starts of
/// the runs beginning in it at the head of its own records; then one pass
/// over the runs on the calling thread moves those starts to their run
/// numbers. `None` if the input is not in cell order.
fn par_copy_if_sorted<P: Point, E: Executor>(
    exec: &E,
    grid: &Grid<P>,
    positions: &[P],
    parts: &mut PlanesMut<'_, P>,
    records: &mut [CellRecord<P>],
) -> Option<usize> {
    let n = positions.len();
    let (tasks, grain) = task_split(n, BUILD_GRAIN, MAX_TASKS);
    let key = |p: P| P::cell_row_key(grid.cell_unchecked(p));
    let mut pieces = [Piece::default(); MAX_TASKS];
    exec.run(
        tasks,
        (
            parts.reborrow().cut(Every(grain)),
            Parts::chunks(&mut records[..], grain),
            Parts::chunks(&mut pieces[..tasks], 1),
        ),
        |t, (ps, mut rs, mut out)| {
            let (_, mut ps) = PlanesMut::from_piece(ps);
            let lo = (t * grain).min(n);
            let mut prev = lo.checked_sub(1).map(|i| key(positions[i]));
            let mut piece = Piece {
                sorted: true,
                runs: 0,
            };
            let rs = rs.slice();
            for k in 0..rs.len() {
                let i = lo + k;
                let p = positions[i];
                let kk = key(p);
                match prev {
                    Some(q) if q == kk => {}
                    Some(q) if q > kk => {
                        piece.sorted = false;
                        break;
                    }
                    _ => {
                        // The task's `r`-th run starts here; `r <= k`, so
                        // its start parks in the task's own records.
                        if let Some(rec) = rs.get_mut(piece.runs as usize) {
                            rec.start = i as u32;
                        }
                        piece.runs += 1;
                    }
                }
                prev = Some(kk);
                ps.set(k, p, i as u32);
                if let Some(rec) = rs.get_mut(k) {
                    rec.rank = i as u32;
                }
            }
            if let Some(o) = out.slice().first_mut() {
                *o = piece;
            }
        },
    );
    if pieces[..tasks].iter().any(|p| !p.sorted) {
        return None;
    }
    // Each task's run starts, parked at the head of its records, moved
    // down to their run numbers in task order: every move goes to a lower
    // or the same index, and no later task's starts lie below it, so one
    // forward pass over the runs (a few per cell, not per particle) is
    // exact.
    let mut runs = 0usize;
    for (t, p) in pieces[..tasks].iter().enumerate() {
        let lo = (t * grain).min(n);
        for j in 0..p.runs as usize {
            let start = records.get(lo + j).map_or(0, |r| r.start);
            if let Some(rec) = records.get_mut(runs) {
                rec.start = start;
            }
            runs += 1;
        }
    }
    Some(runs)
}

/// The dense counting sort of [`DenseBox::sort`] by destination (see the
/// module's text): the same `parts` and ranks, with `W = exec.workers()`
/// ranges of cells.
fn par_dense_sort<P: Point, E: Executor>(
    exec: &E,
    d: &DenseBox,
    grid: &Grid<P>,
    positions: &[P],
    table: &mut [TableSlot],
    parts: &mut PlanesMut<'_, P>,
    records: &mut [CellRecord<P>],
) -> usize {
    let n = positions.len();
    let cells = d.cells.min(table.len());
    // Each particle's dense cell number, in its record's rank, and the
    // least and greatest of each chunk: a worker skips the chunks that hold
    // none of its cells (input nearly in cell order, as a simulation's
    // renumbered a step ago, then costs each worker about its own share
    // instead of every particle).
    let (tasks, grain) = task_split(n, BUILD_GRAIN, MAX_TASKS);
    let mut spans = [(u32::MAX, 0u32); MAX_TASKS];
    exec.run(
        tasks,
        (
            Parts::chunks(&mut records[..n], grain),
            Parts::chunks(&mut spans[..tasks], 1),
        ),
        |t, (mut rs, mut span)| {
            let lo = t * grain;
            let (mut least, mut most) = (u32::MAX, 0u32);
            for (k, rec) in rs.slice().iter_mut().enumerate() {
                if let Some(&p) = positions.get(lo + k) {
                    let c = d.index::<P>(grid.cell_unchecked(p)) as u32;
                    rec.rank = c;
                    least = least.min(c);
                    most = most.max(c);
                }
            }
            if let Some(s) = span.slice().first_mut() {
                *s = (least, most);
            }
        },
    );
    let spans = &spans[..tasks];
    let w = exec.workers().clamp(1, MAX_TASKS);
    let cut = |t: usize| ((cells as u64 * t.min(w) as u64) / w as u64) as usize;
    let counts = &mut table[..cells];
    let keys = &records[..n];
    // Counts of each worker's cells, turned into offsets within its range.
    // Per worker: particles, and occupied cells (its runs).
    let mut totals = [(0u32, 0u32); MAX_TASKS];
    exec.run(
        w,
        (
            Parts::cut(&mut counts[..], cut),
            Parts::chunks(&mut totals[..w], 1),
        ),
        |_, (mut c, mut tot)| {
            let c0 = c.start();
            let c = c.slice();
            c.fill(TableSlot::EMPTY);
            for (_, chunk) in chunks_touching(keys, spans, grain, c0, c.len()) {
                for rec in chunk {
                    if let Some(x) = c.get_mut((rec.rank as usize).wrapping_sub(c0)) {
                        x.slot += 1;
                    }
                }
            }
            let (mut run, mut occupied) = (0u32, 0u32);
            for x in c.iter_mut() {
                let v = x.slot;
                x.slot = run;
                run += v;
                occupied += u32::from(v > 0);
            }
            if let Some(t) = tot.slice().first_mut() {
                *t = (run, occupied);
            }
        },
    );
    let mut first = [0usize; MAX_TASKS + 1];
    let mut first_run = [0usize; MAX_TASKS + 1];
    for t in 0..w {
        first[t + 1] = first[t] + totals[t].0 as usize;
        first_run[t + 1] = first_run[t] + totals[t].1 as usize;
    }
    let first = &first;
    let first_run = &first_run;
    let runs = first_run[w];
    // Each worker places the ids of its particles, in input order, in its
    // range.
    exec.run(
        w,
        (
            Parts::cut(&mut counts[..], cut),
            Parts::cut(parts.ids_mut(), |t: usize| {
                first.get(t).copied().unwrap_or(usize::MAX)
            }),
        ),
        |_, (mut c, mut ps)| {
            let c0 = c.start();
            let c = c.slice();
            let ps = ps.slice();
            // Chunks in input order: within a cell, particles keep theirs.
            for (first, chunk) in chunks_touching(keys, spans, grain, c0, c.len()) {
                for (i, rec) in (first..).zip(chunk) {
                    if let Some(x) = c.get_mut((rec.rank as usize).wrapping_sub(c0)) {
                        let k = x.slot as usize;
                        x.slot += 1;
                        if let Some(dst) = ps.get_mut(k) {
                            *dst = i as u32;
                        }
                    }
                }
            }
        },
    );
    // The runs: after placing, each cell's slot is the end of its
    // particles within the worker's range, so the occupied cells and their
    // starts are read off in order (no cell number is computed again).
    exec.run(
        w,
        (
            Parts::cut(&mut counts[..], cut),
            Parts::cut(&mut records[..runs], |t: usize| {
                first_run.get(t).copied().unwrap_or(usize::MAX)
            }),
        ),
        |t, (mut c, mut rs)| {
            let base = first.get(t).copied().unwrap_or(0);
            let mut starts = rs.slice().iter_mut();
            let mut prev = 0u32;
            for x in c.slice().iter() {
                if x.slot > prev
                    && let Some(rec) = starts.next()
                {
                    rec.start = (base + prev as usize) as u32;
                }
                prev = x.slot;
            }
        },
    );
    // The coordinates, gathered in sorted order by tasks of positions, and
    // the least and greatest id of each task's piece.
    let mut id_spans = [(u32::MAX, 0u32); MAX_TASKS];
    exec.run(
        tasks,
        (
            parts.reborrow().cut(Every(grain)),
            Parts::chunks(&mut id_spans[..tasks], 1),
        ),
        |_, (piece, mut span)| {
            let mut planes = PlanesMut::from_piece(piece).1;
            planes.gather_positions(positions);
            let ids = planes.view().ids();
            let least = ids.iter().copied().min().unwrap_or(u32::MAX);
            let most = ids.iter().copied().max().unwrap_or(0);
            if let Some(s) = span.slice().first_mut() {
                *s = (least, most);
            }
        },
    );
    // Ranks: each worker owns a range of ids and scans the pieces of the
    // sorted ids that hold any of them.
    let sorted = parts.view().ids();
    let id_spans = &id_spans[..tasks];
    exec.run(
        w,
        Parts::chunks(&mut records[..n], n.div_ceil(w)),
        |_, mut rs| {
            let lo = rs.start();
            let rs = rs.slice();
            for (from, piece) in chunks_touching(sorted, id_spans, grain, lo, rs.len()) {
                for (k, &id) in (from..).zip(piece) {
                    if let Some(rec) = rs.get_mut((id as usize).wrapping_sub(lo)) {
                        rec.rank = k as u32;
                    }
                }
            }
        },
    );
    runs
}

/// Whether `least..=most` meets `lo..lo + len`.
#[inline]
fn overlaps(least: u32, most: u32, lo: usize, len: usize) -> bool {
    len > 0 && (least as usize) < lo + len && most as usize >= lo
}

/// The chunks of `items` (`grain` each, with the index of their first)
/// whose values (cell numbers, ids), by `spans` (least and greatest per
/// chunk), may fall in `lo..lo + len`, in order.
fn chunks_touching<'k, T>(
    items: &'k [T],
    spans: &'k [(u32, u32)],
    grain: usize,
    lo: usize,
    len: usize,
) -> impl Iterator<Item = (usize, &'k [T])> + 'k {
    let grain = grain.max(1);
    items
        .chunks(grain)
        .zip(spans)
        .enumerate()
        .filter(move |(_, (_, span))| overlaps(span.0, span.1, lo, len))
        .map(move |(t, (chunk, _))| (t * grain, chunk))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Vec3;
    use crate::exec::Serial;

    const SIDE: usize = 12;
    const N: usize = SIDE * SIDE * SIDE;
    /// A lattice of unit spacing, radius 1.1: six neighbours inside.
    const MOST: usize = 6 * N;

    /// Both ways of the parallel lists (one sweep into provisional regions
    /// then a copy; two sweeps) give the serial sweep's lists, and the way
    /// taken follows the room in `indices`.
    #[test]
    fn one_sweep_and_two_sweeps_give_the_serial_lists() {
        let mut lattice = [Vec3::ZERO; N];
        for (i, p) in lattice.iter_mut().enumerate() {
            let (x, y, z) = (i % SIDE, (i / SIDE) % SIDE, i / (SIDE * SIDE));
            *p = Vec3::new(x as f32, y as f32, z as f32);
        }
        let mut h = CellSortedHash::<Vec3, _, _, _>::new(
            [TableSlot::EMPTY; 8192],
            [SortedParticle::EMPTY; N],
            [CellRecord::EMPTY; N],
        );
        // Renumbered into the hash's order: ids are sorted positions.
        h.build(&lattice, 1.1).unwrap();
        let mut order = [0u32; N];
        h.spatial_order(&mut order).unwrap();
        let pts: [Vec3; N] = core::array::from_fn(|k| lattice[order[k] as usize]);
        h.build(&pts, 1.1).unwrap();
        assert!(h.input_was_sorted());
        assert!(h.run_tasks().0 > 1, "several tasks");
        let mut want_offsets = [0u32; N + 1];
        let mut want = [0u32; MOST];
        let total = h.neighbor_lists(&mut want_offsets, &mut want).unwrap();
        assert!(total > N && total <= MOST);
        let mut offsets = [u32::MAX; N + 1];
        let mut indices = [u32::MAX; 4 * MOST];
        // Exactly twice the lists: the regions hold the average list, so
        // the denser tasks sweep again (whether any does is not asserted).
        for (room, once) in [
            (total, Some(false)),
            (total + 1, Some(false)),
            (2 * total, None),
            (4 * MOST, Some(true)),
        ] {
            offsets.fill(u32::MAX);
            indices.fill(u32::MAX);
            let got = h.par_lists_sweep(&Serial, &mut offsets, &mut indices[..room]);
            let got = got.map(|(t, o)| (t, once.map(|_| o)));
            assert_eq!(got, Ok((total, once)), "room {room}");
            let first_diff = |a: &[u32], b: &[u32]| a.iter().zip(b).position(|(x, y)| x != y);
            assert_eq!(
                first_diff(&offsets, &want_offsets),
                None,
                "room {room}: offsets"
            );
            assert_eq!(
                first_diff(&indices[..total], &want[..total]),
                None,
                "room {room}: lists"
            );
        }
        // Too little room: the error names what is needed.
        assert_eq!(
            h.par_lists_sweep(&Serial, &mut offsets, &mut indices[..total - 1]),
            Err(Error::BufferTooSmall {
                needed: total,
                available: total - 1
            })
        );
    }
}
