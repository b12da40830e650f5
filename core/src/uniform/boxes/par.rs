//! [`GridBroadPhase`] on many workers ([`crate::exec`]).
//!
//! A detection sorts the boxes into the grid, then sweeps it; both run in
//! tasks:
//!
//! * **Census** of the boxes (bounds of the lower corners, size classes) in
//!   tasks of boxes, each writing its census into its own stretch of the
//!   `words` scratch (free until the gather), merged in task order: sums
//!   and extremes, so the frame is the serial one.
//! * **Counting sort by destination**: each worker owns a range of cells
//!   (its slice of `starts`, then its slice of the sorted ids), so no two
//!   workers write one element (a scatter by source chunks cannot be cut
//!   into disjoint pieces in safe Rust). First, in tasks of boxes, each
//!   chunk of boxes is sorted by owner within its own stretch of scratch
//!   (ids and cells, stably), with its count per owner: an owner then
//!   reads its own boxes of every chunk and no others (on the moving cubes,
//!   whose boxes are spread over space in any chunk, an owner that read
//!   every chunk's cells would read all `n` on every worker). Then the
//!   owners count their cells, [`exclusive_prefix_sum`] turns the counts
//!   into starts, and the owners scatter their ids. The sort is stable, so
//!   its result is the serial sort's, whatever the number of workers.
//! * **Gather** of the boxes into the planes in tasks of sorted positions.
//! * **Sweep** in tasks of cells holding about the same number of boxes,
//!   then the large boxes in tasks of their own.
//!
//! The sweep's tasks and boundaries depend on the boxes alone (the sorted
//! planes are the serial ones), so every sink's pairs and their order are
//! the same for every executor. On one worker the sort runs as the serial
//! detection's.

use super::*;
use crate::exec::{Executor, Parts, exclusive_prefix_sum, task_split};

/// Boxes per task of the census, the cells, the gather and the sweep.
const BOX_GRAIN: usize = 16 * 1024;
/// Large boxes per task.
const LARGE_GRAIN: usize = 64;
/// Most tasks of one pass: per-task results live in stack arrays of this
/// length (the grain widens beyond it).
const MAX_TASKS: usize = 256;
/// Fewer boxes than this are sorted on the calling thread (the tasks'
/// passes cost more than they share).
const PAR_MIN: usize = 1024;
/// Most owners of the counting sort's cell ranges.
const MAX_OWNERS: usize = 64;

/// `(tasks, boxes per task)` of the sweep over the grid's boxes and
/// `(tasks, boxes per task)` of the large boxes, for `n` boxes.
fn sweep_tasks(n: usize) -> ((usize, usize), (usize, usize)) {
    (
        task_split(n, BOX_GRAIN, MAX_TASKS),
        task_split(large_allowed(n), LARGE_GRAIN, MAX_TASKS),
    )
}

impl<B, S, W, T> GridBroadPhase<B, S, W, T>
where
    B: BoundingBox,
    S: Storage<BruteSlot<B>>,
    W: Storage<u32>,
    T: Storage<u32>,
{
    /// How many sinks [`par_for_each_overlap`](BroadPhase::par_for_each_overlap)
    /// fills for `n` boxes.
    pub(super) fn tasks_for(n: usize) -> usize {
        let ((grid, _), (large, _)) = sweep_tasks(n);
        grid + large
    }

    /// [`prepare`](Self::prepare) in tasks on `exec`: the same frame, the
    /// same sorted planes.
    fn par_prepare<E: Executor>(&mut self, exec: &E) -> Option<(Frame, usize)> {
        let dim = B::Point::DIM.min(3);
        let (slots, n) = self.boxes.dense_slots();
        let domain = &self.domain;
        let cap = self.words.as_ref().len() / words_per_box::<B::Point>();
        let (coords, rest) = self.words.as_mut().split_at_mut(2 * dim * cap);
        let (ids, rest) = rest.split_at_mut(cap);
        let (Some(cells), Some(ids)) = (rest.get_mut(..n), ids.get_mut(..n)) else {
            return None;
        };

        // Census: each task into its own stretch of the coordinate words.
        let room = (coords.len() / CENSUS_WORDS).clamp(1, MAX_TASKS);
        let (tasks, grain) = task_split(n, BOX_GRAIN, room);
        let mut census = Census::EMPTY;
        if let Some(scratch) = coords.get_mut(..tasks * CENSUS_WORDS) {
            exec.run(tasks, Parts::chunks(scratch, CENSUS_WORDS), |t, mut w| {
                let lo = (t * grain).min(n);
                let mut c = Census::EMPTY;
                c.add_all(slots, lo..(lo + grain).min(n));
                c.store(w.slice());
            });
            for w in coords.chunks(CENSUS_WORDS).take(tasks) {
                census.merge(&Census::load(w));
            }
        } else {
            census.add_all(slots, 0..n);
        }
        let frame = census.fit(dim, n, self.starts.as_ref().len(), &periodic_axes(domain))?;
        let total = frame.total();
        let starts = self.starts.as_mut().get_mut(..total)?;

        // The owners' cell ranges: `per` cells each (a power of two, so an
        // owner is a shift away from a cell), the last one also taking the
        // large boxes.
        let wanted = exec.workers().clamp(1, MAX_OWNERS).min(total);
        let per = total.div_ceil(wanted).next_power_of_two();
        let shift = per.trailing_zeros();
        // Every owner's range is not empty.
        let owners = total.div_ceil(per);
        let owner = |k: u32| ((k >> shift) as usize).min(owners - 1);

        // Per chunk of boxes (dense order), a stable sort by owner within
        // the chunk's own stretch: the ids into the coordinate words (free
        // until the gather), their cells into `cells`, and the chunk's
        // count per owner into the words after them. An owner then reads
        // its boxes of every chunk, and no other.
        let (tasks, grain) = task_split(n, BOX_GRAIN, MAX_TASKS);
        let (by_owner, rest) = coords.split_at_mut(n.min(coords.len()));
        let (dense_cells, rest) = rest.split_at_mut(n.min(rest.len()));
        let counts = rest.get_mut(..tasks * MAX_OWNERS)?;
        exec.run(
            tasks,
            (
                (
                    Parts::chunks(&mut by_owner[..], grain),
                    Parts::chunks(&mut dense_cells[..], grain),
                ),
                Parts::chunks(&mut cells[..], grain),
                Parts::chunks(&mut counts[..], MAX_OWNERS),
            ),
            |_, ((mut out, mut dc), mut c, mut k)| {
                let lo = out.start();
                let (out, dense, cells, count) = (out.slice(), dc.slice(), c.slice(), k.slice());
                let mine = slots.get(lo..lo + out.len()).unwrap_or_default();
                // The cells in dense order, counted per owner; then placed.
                count.fill(0);
                for (d, k) in mine.iter().zip(dense.iter_mut()) {
                    let b = slots.get(d.id() as usize).map_or(B::ZERO, BruteSlot::aabb);
                    *k = if edge_class(b.longest_edge()) > frame.large_above {
                        LARGE
                    } else {
                        frame.cell(wrapped_min(domain, &b)) as u32
                    };
                    if let Some(c) = count.get_mut(owner(*k)) {
                        *c += 1;
                    }
                }
                let mut next = [0u32; MAX_OWNERS];
                let mut sum = 0u32;
                for (x, &c) in next.iter_mut().zip(count.iter()) {
                    *x = sum;
                    sum += c;
                }
                for (d, &k) in mine.iter().zip(dense.iter()) {
                    if let Some(x) = next.get_mut(owner(k)) {
                        let at = *x as usize;
                        *x += 1;
                        if let (Some(o), Some(c)) = (out.get_mut(at), cells.get_mut(at)) {
                            *o = d.id();
                            *c = k;
                        }
                    }
                }
            },
        );
        let (by_owner, counts, cells) = (&*by_owner, &*counts, &*cells);
        // Calls `visit(id, k)` for every box of owner `o`, chunk by chunk,
        // each chunk's in dense order.
        let scan = |o: usize, visit: &mut dyn FnMut(u32, u32)| {
            for c in 0..tasks {
                let row = counts
                    .get(c * MAX_OWNERS..(c + 1) * MAX_OWNERS)
                    .unwrap_or_default();
                let before: usize = row.iter().take(o).map(|&x| x as usize).sum();
                let mine = row.get(o).map_or(0, |&x| x as usize);
                let lo = c * grain + before;
                let (ids, ks) = (
                    by_owner.get(lo..lo + mine).unwrap_or_default(),
                    cells.get(lo..lo + mine).unwrap_or_default(),
                );
                for (&id, &k) in ids.iter().zip(ks) {
                    visit(id, k);
                }
            }
        };
        let cut = move |o: usize| (o * per).min(total);
        exec.run(owners, Parts::cut(&mut starts[..], cut), |o, mut s| {
            let k0 = cut(o);
            let counts = s.slice();
            counts.fill(0);
            scan(o, &mut |_, k| {
                if let Some(c) = (k as usize).checked_sub(k0).and_then(|x| counts.get_mut(x)) {
                    *c += 1;
                }
            });
        });
        let mut sums = [0u32; 1024];
        let grid_boxes = exclusive_prefix_sum(exec, starts, &mut sums) as usize;

        // Scatter: each owner writes its cells' ids (and the last owner
        // the large boxes', after the others) into its own stretch.
        let mut first = [n; MAX_OWNERS + 1];
        for (o, f) in first.iter_mut().enumerate().take(owners) {
            *f = starts.get(o * per).map_or(n, |&s| s as usize);
        }
        let first = &first;
        let at = move |o: usize| first.get(o).copied().unwrap_or(n);
        exec.run(
            owners,
            (
                Parts::cut(&mut starts[..], cut),
                Parts::cut(&mut ids[..], at),
            ),
            |o, (mut s, mut out)| {
                let k0 = cut(o);
                let base = out.start();
                let (next, out) = (s.slice(), out.slice());
                let mut large = grid_boxes;
                scan(o, &mut |id, k| {
                    let pos = if k == LARGE {
                        large += 1;
                        large - 1
                    } else if let Some(e) =
                        (k as usize).checked_sub(k0).and_then(|x| next.get_mut(x))
                    {
                        *e += 1;
                        *e as usize - 1
                    } else {
                        return;
                    };
                    if let Some(e) = pos.checked_sub(base).and_then(|p| out.get_mut(p)) {
                        *e = id;
                    }
                });
            },
        );

        // Gather in tasks of sorted positions.
        let coords: &mut [f32] = bytemuck::cast_slice_mut(coords);
        let [a, b, c, d, e, f] = planes_mut::<B::Point>(coords, cap, n);
        let ids = &*ids;
        exec.run(
            tasks,
            (
                (
                    Parts::chunks(a, grain),
                    Parts::chunks(b, grain),
                    Parts::chunks(c, grain),
                ),
                (
                    Parts::chunks(d, grain),
                    Parts::chunks(e, grain),
                    Parts::chunks(f, grain),
                ),
            ),
            |t, ((mut a, mut b, mut c), (mut d, mut e, mut f))| {
                let lo = (t * grain).min(n);
                let piece = ids.get(lo..(lo + grain).min(n)).unwrap_or_default();
                let mut planes = [
                    a.slice(),
                    b.slice(),
                    c.slice(),
                    d.slice(),
                    e.slice(),
                    f.slice(),
                ];
                gather(slots, piece, &mut planes, domain);
            },
        );
        self.cell = frame.cell;
        Some((frame, grid_boxes))
    }

    /// The parallel detection (see the module docs).
    pub(super) fn par_overlaps<E, K, F>(
        &mut self,
        exec: &E,
        sinks: &mut [K],
        f: F,
    ) -> Result<(), Error>
    where
        E: Executor,
        K: Send,
        F: Fn(&mut K, u32, u32) + Sync,
    {
        let n = self.boxes.box_count();
        let tasks = Self::tasks_for(n);
        let available = sinks.len();
        let sinks = sinks.get_mut(..tasks).ok_or(Error::BufferTooSmall {
            needed: tasks,
            available,
        })?;
        if n < 2 {
            return Ok(());
        }
        let prepared = if exec.workers() <= 1 || n < PAR_MIN {
            self.prepare()
        } else {
            self.par_prepare(exec)
        };
        let Some((frame, m)) = prepared else {
            self.cell = 0.0;
            let Some(sink) = sinks.first_mut() else {
                return Ok(());
            };
            return self.all_pairs(|a, b| f(sink, a, b));
        };
        let (planes, ends) = self.view(&frame);
        let ((grid, _), (_, large_grain)) = sweep_tasks(n);
        // Task `t < grid` sweeps the cells whose boxes start in
        // `t·m/grid ..`: cell boundaries by bisection of the ends.
        let total = frame.total();
        let mut bounds = [total; MAX_TASKS + 1];
        for (t, b) in bounds.iter_mut().enumerate().take(grid).skip(1) {
            let q = t * m / grid;
            // The first cell starting at or after `q`: one past the first
            // whose end reaches `q`.
            *b = ends.partition_point(|&e| (e as usize) < q) + 1;
        }
        bounds[0] = 0;
        let bounds = &bounds;
        exec.run(tasks, Parts::chunks(sinks, 1), |t, mut sink| {
            let Some(sink) = sink.slice().first_mut() else {
                return;
            };
            let mut g = |a: u32, b: u32| f(sink, a, b);
            // A constant in the task (a captured `dim` would be read from
            // the closure's environment: the lane tests then stay generic
            // over it, 145 against 118 ms a step at 10⁶ on one worker).
            let dim = B::Point::DIM.min(3);
            if t < grid {
                let k0 = bounds.get(t).copied().unwrap_or(total).min(total);
                let k1 = bounds.get(t + 1).copied().unwrap_or(total).min(total);
                sweep(&frame, dim, ends, &planes, k0..k1.max(k0), &mut g);
            } else {
                let l0 = (m + (t - grid) * large_grain).min(n);
                let l1 = (l0 + large_grain).min(n);
                large_pairs(&frame, dim, ends, &planes, l0..l1, &mut g);
            }
        });
        Ok(())
    }
}
