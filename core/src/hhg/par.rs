//! The parallel forms (see [`crate::exec`]): [`HierarchicalHashGrid::par_update_all`]
//! and the work of [`BroadPhase::par_for_each_overlap`].
//!
//! # Update
//!
//! [`update_all`](HierarchicalHashGrid::update_all) spends most of its time
//! on per-box work that needs no other box: checking the new box, finding
//! its level and cell, and writing it into its slot. Only the boxes whose
//! cell changes touch shared state (the cell lists, the records, the grids).
//! The parallel update therefore runs in three passes:
//!
//! 1. tasks over ranges of ids check every box and count, per task, the
//!    stored ids, the first bad id and whether any box changes grid; each
//!    lists the ids of its boxes that change cell inside their grid
//!    (*movers*), in id order, with their new cells, in the packed-copy
//!    fields of its own stretch of the record buffer (scratch that every
//!    detection rebuilds). The checks and the stay test are one pass: the
//!    stay test gives the new cell, and only a box that leaves its grid
//!    has the range check of another level (at 10⁶ cubes, 23 ms with pass
//!    2 on one thread, against 33 ms for the checks and the stay test
//!    apart);
//! 2. tasks write every box into its slot;
//! 3. one thread relinks the movers, in id order (about 16 ms for the
//!    100 000 movers of a step at 10⁶ cubes: cache misses in the slots,
//!    cells and records; loads of the coming movers' words issued ahead,
//!    tried, did not shorten it).
//!
//! On hosts `update_all` itself runs these passes on the calling thread
//! (on [`Serial`](crate::exec::Serial)); firmware keeps the in-place form
//! (one check pass, then one move pass, each box moved where it is met).
//!
//! The relinks are the serial update's own, in its order, and nothing else
//! the serial update does depends on the order (a box that stays in its
//! cell only has its box written), so the structure ends bit-identical to
//! the in-place form's (a unit test in `update.rs` compares them). A box that changes grid may make or grow a grid, which
//! rehashes other boxes; when any box changes grid (or is too large for
//! every grid), and for [`UpdateStrategy::ClearAndReinsert`], pass 2 and 3
//! are the serial moves instead (the checks stay parallel).
//!
//! # Detection
//!
//! The records are sorted first when the serial detection would sort them,
//! by tasks and into the same order (the keys are unique): sorted, the
//! records are each grid's occupied cells in memory order, grid by grid, so
//! tasks over ranges of cells replace each occupied cell's record index by
//! its first box and count them, then write their cells' records from
//! their offsets and point the cells at them (two passes over the cells,
//! no comparison sort; at 10⁶ cubes, 537 000 records in 16.8 M cells, 15 ms
//! on one thread against 23 ms for the serial sort). The packed copy is then made by tasks, in a
//! layout of its own: the serial [`pack`](HierarchicalHashGrid::pack)
//! writes entry `j` into element `j`, whose record fields another task may
//! be reading, which safe disjoint pieces cannot express. Here the first box
//! of record `p`'s cell goes into element `p` itself and the cell's other
//! boxes into a stretch of the elements past the records, each task's
//! stretch sized by a first counting pass: every task writes only elements
//! it owns, and the record buffer, which holds every stored box, always has
//! the room. The pair tests then run as tasks over ranges of occupied-cell
//! records (2048 per task, at most 256 tasks), each into its own sink,
//! testing the same candidates as the serial detection; task `t` also tests
//! the unbounded objects against the boxes of its records, and task 0 the
//! unbounded objects against each other.

use super::{
    HhgRecord, HhgSlot, HierarchicalHashGrid, KEY_FLAT, KEY_UNBOUNDED, LEVELS, LOCAL_BITS,
    LOCAL_MASK, Level, NONE, UpdateStrategy, is_grid_key, key,
};
use crate::error::Error;
use crate::exec::{Executor, Parts, task_split};
use crate::geom::BoundingBox;
use crate::storage::Storage;
#[cfg(doc)]
use crate::traits::BroadPhase;

/// Ids per task of the parallel update.
const UPDATE_GRAIN: usize = 8192;
/// At most this many update tasks (their counters live on the stack).
const UPDATE_TASKS: usize = 256;
/// Occupied-cell records per task of the parallel detection.
const PAIR_GRAIN: usize = 2048;
/// At most this many detection tasks (one sink each; the packed copy keeps
/// a count and an offset per task on the stack).
const PAIR_TASKS: usize = 256;

/// Cells per task of the parallel record sort.
const SORT_GRAIN: usize = 1 << 16;
/// At most this many record-sort tasks per grid (their counts and offsets
/// live on the stack).
const SORT_TASKS: usize = 256;

/// What one task of pass 1 found.
#[derive(Clone, Copy, Debug)]
struct TaskCount {
    /// Stored ids in the task's range.
    seen: u32,
    /// The first id whose box fails its checks, or `NONE`.
    bad: u32,
    /// Boxes that change cell inside their grid.
    movers: u32,
    /// Some box changes grid, or is not in a grid and not flat/unbounded.
    regrid: bool,
}

impl TaskCount {
    const ZERO: Self = Self {
        seen: 0,
        bad: NONE,
        movers: 0,
        regrid: false,
    };
}

/// How a checked box moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Move {
    /// Its slot takes the box; no list changes.
    Stay,
    /// It changes cell inside its grid: to this cell.
    Cell(u32),
    /// It may change grid (the serial moves decide).
    Regrid,
}

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord<B>>, A: Storage<u32>>
    HierarchicalHashGrid<B, S, R, A>
{
    /// [`check_update_at`](Self::check_update_at)`(levels, k, b)` and then
    /// how the box keyed `k` moves to `b` (what
    /// [`apply_update`](Self::apply_update) would do with it), in one pass:
    /// the stay test gives the cell, and only a box that does not stay has
    /// the range check of the level it would go to.
    #[inline(always)]
    fn check_classify(levels: &[Level; LEVELS], k: u32, b: &B) -> Result<Move, Error> {
        Self::check_box(k, b)?;
        if is_grid_key(k) {
            if let Some(local) = Self::stays_local(levels, k, b) {
                let i = (k >> LOCAL_BITS) as usize;
                return Ok(if key(i, local) == k {
                    Move::Stay
                } else {
                    Move::Cell(local)
                });
            }
        } else if k == KEY_UNBOUNDED {
            return Ok(Move::Stay);
        }
        Self::ideal_at(levels, b)?;
        Ok(if k == KEY_FLAT {
            Move::Stay
        } else {
            Move::Regrid
        })
    }

    /// [`update_all`](Self::update_all) with its per-box work run as tasks
    /// on `exec`: the same checks, errors and final state (bit-identical:
    /// every later answer is the same as after `update_all`), whatever the
    /// executor and its number of workers.
    ///
    /// The checks always run in parallel. With
    /// [`UpdateStrategy::Incremental`], when every box stays in its grid,
    /// the boxes are written in parallel and the boxes that change cell are
    /// relinked on the calling thread, in id order; otherwise (a box changes
    /// grid, which may make or grow one, a record buffer shorter than the
    /// slot buffer runs out of room for the list of movers, or
    /// [`UpdateStrategy::ClearAndReinsert`]) the moves are
    /// [`update_all`](Self::update_all)'s, on the calling thread. Tasks
    /// cover 8192 ids each (at most 256 tasks), so their number depends on
    /// `boxes.len()` alone. The movers' ids are listed in the record
    /// buffer's packed-copy fields (scratch, rebuilt by every detection): no
    /// memory beyond the structure's own, and about 4 KiB of stack.
    ///
    /// `O(m / w)` for `m = min(boxes.len(), capacity)` on `w` workers, plus
    /// `O(k)` on the calling thread for `k` boxes that change cell.
    ///
    /// # Errors
    /// As [`update_all`](Self::update_all); nothing changes on error.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::exec::Serial;
    /// use spatium::{Aabb3, BroadPhase, HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid, UpdateStrategy, Vec3};
    ///
    /// let cube = |x: f32| Aabb3::new(Vec3::new(x, 0.0, 0.0), Vec3::new(x + 1.0, 1.0, 1.0));
    /// let mut g = HierarchicalHashGrid::new(
    ///     [HhgSlot::<Aabb3>::EMPTY; 4],
    ///     [HhgRecord::EMPTY; 4],
    ///     [0u32; 1024],
    ///     HhgConfig::DEFAULT.with_small_n_threshold(0),
    /// );
    /// let mut boxes = [cube(0.0)?, cube(3.0)?, cube(6.0)?];
    /// for (id, b) in boxes.iter().enumerate() {
    ///     g.insert(id as u32, *b)?;
    /// }
    /// boxes[1] = cube(0.5)?;
    /// g.par_update_all(&Serial, &boxes, UpdateStrategy::Incremental)?;
    /// let mut pairs = 0;
    /// g.for_each_overlap(|_, _| pairs += 1)?;
    /// assert_eq!(pairs, 1);
    /// # Ok::<(), spatium::Error>(())
    /// ```
    pub fn par_update_all<E: Executor>(
        &mut self,
        exec: &E,
        boxes: &[B],
        strategy: UpdateStrategy,
    ) -> Result<(), Error> {
        let n = boxes.len().min(self.slots.as_ref().len());
        let boxes = &boxes[..n];
        let (tasks, grain) = task_split(n, UPDATE_GRAIN, UPDATE_TASKS);
        let mut counts = [TaskCount::ZERO; UPDATE_TASKS];
        let counts = &mut counts[..tasks];
        // Pass 1: checks, counts, and each task's movers listed in its
        // stretch of the record buffer's packed-copy fields (scratch).
        {
            let levels = &self.levels;
            let slots = self.slots.as_ref();
            let recs = self.recs.as_mut();
            exec.run(
                tasks,
                (
                    Parts::chunks(&mut counts[..], 1),
                    Parts::chunks(recs, grain),
                ),
                |t, (mut pc, mut pr)| {
                    let Some(c) = pc.slice().first_mut() else {
                        return;
                    };
                    let list = pr.slice();
                    let lo = (t * grain).min(n);
                    let hi = (lo + grain).min(n);
                    for (s, (id, b)) in slots[lo..hi].iter().zip((lo..hi).zip(&boxes[lo..hi])) {
                        let k = s.key;
                        if k == NONE {
                            continue;
                        }
                        c.seen += 1;
                        let Ok(m) = Self::check_classify(levels, k, b) else {
                            c.bad = id as u32;
                            return;
                        };
                        match m {
                            Move::Stay => {}
                            Move::Cell(local) => {
                                match list.get_mut(c.movers as usize) {
                                    Some(e) => {
                                        e.id = id as u32;
                                        e.start = local;
                                    }
                                    // A record buffer shorter than the
                                    // slots: the serial moves.
                                    None => c.regrid = true,
                                }
                                c.movers += 1;
                            }
                            Move::Regrid => c.regrid = true,
                        }
                    }
                },
            );
        }
        if let Some(c) = counts.iter().find(|c| c.bad != NONE) {
            let id = c.bad as usize;
            let k = self.slots.as_ref()[id].key;
            return self.check_update(k, &boxes[id]);
        }
        let seen: u64 = counts.iter().map(|c| c.seen as u64).sum();
        if seen != self.len as u64 {
            return Err(Error::LengthMismatch {
                expected: self.len as usize,
                got: seen as usize,
            });
        }
        if strategy != UpdateStrategy::Incremental || counts.iter().any(|c| c.regrid) {
            self.apply_all(boxes, strategy);
            return Ok(());
        }
        // Pass 2: every box into its slot.
        exec.run(
            tasks,
            Parts::chunks(&mut self.slots.as_mut()[..n], grain),
            |t, mut ps| {
                let lo = (t * grain).min(n);
                for (s, b) in ps.slice().iter_mut().zip(&boxes[lo..]) {
                    if s.key != NONE {
                        s.aabb = *b;
                    }
                }
            },
        );
        // Pass 3: the movers' relinks, in id order.
        for (t, c) in counts.iter().enumerate() {
            for x in 0..c.movers as usize {
                let e = &self.recs.as_ref()[t * grain + x];
                let (id, local) = (e.id, e.start);
                let i = (self.slots.as_ref()[id as usize].key >> LOCAL_BITS) as usize;
                self.unlink(id);
                self.link(id, i, local);
            }
        }
        Ok(())
    }

    /// [`BroadPhase::overlap_tasks`]: tasks of 2048 occupied cells (at most
    /// 256) on the grids, one on the small-N path.
    pub(super) fn pair_tasks(&self) -> usize {
        if self.grid_mode {
            task_split(self.nrec as usize, PAIR_GRAIN, PAIR_TASKS).0
        } else {
            1
        }
    }

    /// [`BroadPhase::par_for_each_overlap`]: the grids' pairs of each range
    /// of records into that task's sink, over the packed copy; the
    /// unbounded objects' pairs split the same way.
    pub(super) fn par_pairs<E, K, F>(
        &mut self,
        exec: &E,
        sinks: &mut [K],
        f: F,
    ) -> Result<(), Error>
    where
        E: Executor,
        K: Send,
        F: Fn(&mut K, u32, u32) + Sync,
        Self: Sync,
    {
        let tasks = self.pair_tasks();
        let available = sinks.len();
        let sinks = sinks.get_mut(..tasks).ok_or(Error::BufferTooSmall {
            needed: tasks,
            available,
        })?;
        if !self.grid_mode {
            if let Some(sink) = sinks.first_mut() {
                self.pairs(&mut |a, b| f(sink, a, b));
            }
            return Ok(());
        }
        if self.unsorted as u64 * 8 > self.nrec as u64 {
            self.par_sort_records(exec);
        }
        let (_, grain) = task_split(self.nrec as usize, PAIR_GRAIN, PAIR_TASKS);
        if let Some(end) = self.par_pack(exec, tasks, grain) {
            let this = &*self;
            exec.run(tasks, Parts::chunks(sinks, 1), |t, mut part| {
                let Some(sink) = part.slice().first_mut() else {
                    return;
                };
                let lo = t * grain;
                let hi = lo.saturating_add(grain);
                let mut g = |a, b| f(sink, a, b);
                this.split_pairs_of(lo, hi, end, &mut g);
                let (firsts, rest) = this.split_entries(lo, hi, end);
                this.unbounded_pairs_of(t == 0, firsts, rest, &mut g);
            });
        } else {
            // Unreachable (the records hold every grid box): the packed
            // copy of the serial detection, its pairs in tasks.
            let total = self.pack();
            let this = &*self;
            exec.run(tasks, Parts::chunks(sinks, 1), |t, mut part| {
                let Some(sink) = part.slice().first_mut() else {
                    return;
                };
                let lo = t * grain;
                let hi = lo.saturating_add(grain);
                let mut g = |a, b| f(sink, a, b);
                this.grid_pairs_of(lo, hi, total, &mut g);
                let recs = this.recs.as_ref();
                let nrec = this.nrec as usize;
                let first = |p: usize| match recs[..nrec].get(p) {
                    Some(r) => r.start as usize,
                    None => total as usize,
                };
                let entries = &recs[first(lo)..first(hi)];
                this.unbounded_pairs_of(t == 0, &[], entries, &mut g);
            });
        }
        Ok(())
    }

    /// [`sort_records`](Self::sort_records) by tasks, with the same result
    /// (the keys are unique: there is one sorted order). The records in
    /// key order are the occupied cells of each grid, grid by grid in level
    /// order, each in memory order. So tasks over ranges of each grid's
    /// cells first replace each occupied cell's record index by its
    /// record's first box, counting them (every grid before any record is
    /// written), and then, from each task's offset (the counts' prefix
    /// sums), write the records of their cells in order and point the cells
    /// at them: every task writes only its own cells and its own stretch of
    /// records. The tasks, about 65 536 cells each, share 256 counters on
    /// the stack (at most `256 / g` tasks for each of `g` grids).
    /// `O(c / w)` for `c` cells of the grids on `w` workers, plus `O(t)` on
    /// the calling thread for `t` tasks.
    fn par_sort_records<E: Executor>(&mut self, exec: &E) {
        let nrec = self.nrec as usize;
        let grids = self.active.count_ones() as usize;
        if !self.grid_mode || grids == 0 {
            self.sort_records();
            return;
        }
        let most = SORT_TASKS / grids;
        let mut counts = [0u32; SORT_TASKS];
        // Pass 1, every grid: each occupied cell's first box in place of its
        // record index, and the occupied cells of each task.
        let mut k = 0usize;
        for i in 0..LEVELS {
            if self.active & (1 << i) == 0 {
                continue;
            }
            let lv = self.levels[i];
            let (tasks, grain) = task_split(lv.cells, SORT_GRAIN, most);
            let recs = &self.recs.as_ref()[..nrec];
            let cells = &mut self.arena.as_mut()[lv.cells_at(Self::TABLE)..][..lv.cells];
            let mine = &mut counts[k..(k + tasks).min(SORT_TASKS)];
            exec.run(
                tasks,
                (Parts::chunks(cells, grain), Parts::chunks(mine, 1)),
                |_, (mut pc, mut pn)| {
                    let mut c = 0u32;
                    for w in pc.slice() {
                        if *w != NONE {
                            *w = recs.get(*w as usize).map_or(NONE, |r| r.head);
                            c += 1;
                        }
                    }
                    if let Some(x) = pn.slice().first_mut() {
                        *x = c;
                    }
                },
            );
            k += tasks;
        }
        // Pass 2, grid by grid: the records of each task's cells, in cell
        // order, from its offset; the cells point at them.
        let mut k = 0usize;
        let mut base = 0usize;
        for i in 0..LEVELS {
            if self.active & (1 << i) == 0 {
                continue;
            }
            let lv = self.levels[i];
            let (tasks, grain) = task_split(lv.cells, SORT_GRAIN, most);
            let mut offs = [0usize; SORT_TASKS + 1];
            for (t, &c) in counts[k..(k + tasks).min(SORT_TASKS)].iter().enumerate() {
                offs[t + 1] = offs[t] + c as usize;
            }
            let total = offs[tasks.min(SORT_TASKS)];
            let all = self.recs.as_mut();
            let out = &mut all[base.min(nrec)..(base + total).min(nrec)];
            let cells = &mut self.arena.as_mut()[lv.cells_at(Self::TABLE)..][..lv.cells];
            let o = &offs;
            exec.run(
                tasks,
                (
                    Parts::chunks(cells, grain),
                    Parts::cut(out, move |t: usize| o.get(t).copied().unwrap_or(usize::MAX)),
                ),
                |t, (mut pc, mut pr)| {
                    let first = base + o.get(t).copied().unwrap_or(total);
                    let lo = t * grain;
                    let out = pr.slice();
                    let mut j = 0usize;
                    for (x, w) in pc.slice().iter_mut().enumerate() {
                        if *w != NONE {
                            if let Some(r) = out.get_mut(j) {
                                r.set(key(i, (lo + x) as u32), *w);
                            }
                            *w = (first + j) as u32;
                            j += 1;
                        }
                    }
                },
            );
            k += tasks;
            base += total;
        }
        self.unsorted = 0;
    }

    /// The parallel detection's packed copy, made by tasks (the serial
    /// [`pack`](Self::pack) writes entry `j` into element `j`, whose record
    /// fields another task may be reading; this layout keeps every task in
    /// its own elements). The first box of record `p`'s cell goes into
    /// element `p` itself; the others, in list order, into the stretch
    /// `start..` of the elements past the records (`start` of record `p + 1`,
    /// or the returned end, ends it). Task `t` owns records
    /// `grain·t ..` and the stretch of their other boxes (counted in a first
    /// pass). Returns the end of the last stretch, or `None` (nothing
    /// usable written) if the record buffer is too short, which it never is:
    /// it holds every stored box.
    fn par_pack<E: Executor>(&mut self, exec: &E, tasks: usize, grain: usize) -> Option<usize> {
        let nrec = self.nrec as usize;
        let mut extra = [0u32; PAIR_TASKS];
        let extra = &mut extra[..tasks.min(PAIR_TASKS)];
        // Pass 1: each cell's first box into its record's element, the
        // number of its other boxes into `start`, and each task's sum.
        {
            let slots = self.slots.as_ref();
            let own = &mut self.recs.as_mut()[..nrec];
            exec.run(
                tasks,
                (Parts::chunks(own, grain), Parts::chunks(&mut extra[..], 1)),
                |_, (mut po, mut pe)| {
                    let mut sum = 0u32;
                    for r in po.slice() {
                        let h = &slots[r.head as usize];
                        r.id = r.head;
                        r.aabb = h.aabb;
                        let mut c = 0u32;
                        let mut a = h.next;
                        while a != NONE {
                            c += 1;
                            a = slots[a as usize].next;
                        }
                        r.start = c;
                        sum += c;
                    }
                    if let Some(e) = pe.slice().first_mut() {
                        *e = sum;
                    }
                },
            );
        }
        let mut offs = [0usize; PAIR_TASKS + 1];
        offs[0] = nrec;
        for (t, &e) in extra.iter().enumerate() {
            offs[t + 1] = offs[t] + e as usize;
        }
        let end = offs[extra.len()];
        for o in &mut offs[extra.len() + 1..] {
            *o = end;
        }
        if end > self.recs.as_ref().len() || end > u32::MAX as usize {
            return None;
        }
        // Pass 2: the other boxes into each task's stretch; the starts.
        {
            let slots = self.slots.as_ref();
            let (own, tail) = self.recs.as_mut().split_at_mut(nrec);
            let o = &offs;
            exec.run(
                tasks,
                (
                    Parts::chunks(own, grain),
                    Parts::cut(tail, move |t: usize| {
                        o.get(t).map_or(usize::MAX, |x| x.saturating_sub(nrec))
                    }),
                ),
                |t, (mut po, mut pt)| {
                    let base = o.get(t).copied().unwrap_or(end);
                    let list = pt.slice();
                    let mut j = 0usize;
                    for r in po.slice() {
                        let c = r.start;
                        r.start = (base + j) as u32;
                        if c == 0 {
                            continue;
                        }
                        let mut a = slots[r.head as usize].next;
                        while a != NONE {
                            let s = &slots[a as usize];
                            if let Some(e) = list.get_mut(j) {
                                e.id = a;
                                e.aabb = s.aabb;
                            }
                            j += 1;
                            a = s.next;
                        }
                    }
                },
            );
        }
        Some(end)
    }

    /// Record `q`'s run in [`par_pack`](Self::par_pack)'s layout: its first
    /// entry and the others (`end` ends the last stretch).
    #[inline(always)]
    fn split_run(&self, q: usize, end: usize) -> (&HhgRecord<B>, &[HhgRecord<B>]) {
        let recs = self.recs.as_ref();
        let nrec = self.nrec as usize;
        let s = recs[q].start as usize;
        let e = match recs[..nrec].get(q + 1) {
            Some(r) => r.start as usize,
            None => end,
        };
        (&recs[q], &recs[s..e])
    }

    /// The entries of records `lo..hi` in [`par_pack`](Self::par_pack)'s
    /// layout: their first entries and the others.
    fn split_entries(
        &self,
        lo: usize,
        hi: usize,
        end: usize,
    ) -> (&[HhgRecord<B>], &[HhgRecord<B>]) {
        let recs = self.recs.as_ref();
        let nrec = self.nrec as usize;
        let (lo, hi) = (lo.min(nrec), hi.min(nrec));
        let start = |p: usize| match recs[..nrec].get(p) {
            Some(r) => r.start as usize,
            None => end,
        };
        (&recs[lo..hi], &recs[start(lo)..start(hi)])
    }

    /// Reports `ea` against every entry of the run `(first, rest)`.
    #[inline(always)]
    fn one_vs_run<F: FnMut(u32, u32)>(
        ea: &HhgRecord<B>,
        (first, rest): (&HhgRecord<B>, &[HhgRecord<B>]),
        f: &mut F,
    ) {
        if ea.aabb.overlaps(&first.aabb) {
            f(ea.id, first.id);
        }
        for eb in rest {
            if ea.aabb.overlaps(&eb.aabb) {
                f(ea.id, eb.id);
            }
        }
    }

    /// [`grid_pairs_of`](Self::grid_pairs_of) over
    /// [`par_pack`](Self::par_pack)'s layout: the same pairs from the same
    /// records.
    fn split_pairs_of<F: FnMut(u32, u32)>(&self, lo: usize, hi: usize, end: usize, f: &mut F) {
        let recs = self.recs.as_ref();
        let hi = hi.min(self.nrec as usize);
        for (p, r) in recs[..hi].iter().enumerate().skip(lo) {
            let k = r.key;
            let i = (k >> LOCAL_BITS) as usize;
            let local = k & LOCAL_MASK;
            let lv = &self.levels[i];
            let cells = self.cells(lv);
            let (first, rest) = self.split_run(p, end);
            // Inside the cell.
            for (x, ea) in rest.iter().enumerate() {
                if first.aabb.overlaps(&ea.aabb) {
                    f(first.id, ea.id);
                }
                for eb in &rest[x + 1..] {
                    if ea.aabb.overlaps(&eb.aabb) {
                        f(ea.id, eb.id);
                    }
                }
            }
            // Forward half of the neighbours.
            let mut qs = [NONE; 13]; // the 3D half stencil (2D: 4)
            for (q, &off) in qs.iter_mut().zip(&self.row(lv, local)[1..=Self::HALF]) {
                *q = cells[local.wrapping_add(off) as usize];
            }
            for &q in &qs[..Self::HALF] {
                if q != NONE {
                    let other = self.split_run(q as usize, end);
                    Self::one_vs_run(first, other, f);
                    for ea in rest {
                        Self::one_vs_run(ea, other, f);
                    }
                }
            }
            // Every grid with larger cells.
            let larger = self.active & !((2u32 << i) - 1);
            if larger == 0 {
                continue;
            }
            for ea in core::iter::once(first).chain(rest) {
                let mut m = larger;
                while m != 0 {
                    let h = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let lh = &self.levels[h];
                    let hl = Self::local(lh, ea.aabb.min());
                    let hcells = self.cells(lh);
                    for &off in self.row(lh, hl) {
                        let q = hcells[hl.wrapping_add(off) as usize];
                        if q != NONE {
                            Self::one_vs_run(ea, self.split_run(q as usize, end), f);
                        }
                    }
                }
            }
        }
    }

    /// The unbounded objects' pairs with the packed boxes `firsts` and
    /// `rest`, and with each other if `among`.
    fn unbounded_pairs_of<F: FnMut(u32, u32)>(
        &self,
        among: bool,
        firsts: &[HhgRecord<B>],
        rest: &[HhgRecord<B>],
        f: &mut F,
    ) {
        if self.unbounded_head == NONE {
            return;
        }
        let slots = self.slots.as_ref();
        let mut u = self.unbounded_head;
        while u != NONE {
            let bu = slots[u as usize].aabb;
            if among {
                let mut v = slots[u as usize].next;
                while v != NONE {
                    if bu.overlaps(&slots[v as usize].aabb) {
                        f(u, v);
                    }
                    v = slots[v as usize].next;
                }
            }
            for e in firsts.iter().chain(rest) {
                if bu.overlaps(&e.aabb) {
                    f(u, e.id);
                }
            }
            u = slots[u as usize].next;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::exec::Serial;
    use crate::geom::{Aabb3, Vec3};
    use crate::hhg::{HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid};
    use crate::traits::BroadPhase;

    #[test]
    fn par_sort_is_the_serial_sort() {
        let mut g = HierarchicalHashGrid::new(
            [HhgSlot::<Aabb3>::EMPTY; 64],
            [HhgRecord::EMPTY; 64],
            [0u32; 1 << 14],
            HhgConfig::DEFAULT.with_small_n_threshold(0),
        );
        for id in 0..40u32 {
            let x = ((id * 7919) % 37) as f32 * 1.7;
            let y = ((id * 104_729) % 11) as f32 * 2.3;
            let e = if id % 5 == 0 { 3.0 } else { 1.0 };
            let b = Aabb3::new(Vec3::new(x, y, 0.0), Vec3::new(x + e, y + e, e)).unwrap();
            g.insert(id, b).unwrap();
        }
        let mut h = g.clone();
        g.sort_records();
        h.par_sort_records(&Serial);
        let n = g.nrec as usize;
        for p in 0..n {
            assert_eq!(
                (g.recs[p].key, g.recs[p].head),
                (h.recs[p].key, h.recs[p].head),
                "record {p}"
            );
        }
        assert_eq!(&g.arena[..], &h.arena[..]);
    }
}
