//! Parallel forms of the linear kd-tree (see [`crate::exec`]): the build's
//! scan, codes and sort, and the sweep, cut into tasks whose number and
//! bounds depend on the input size alone. Every result is bit-identical to
//! the serial one, for every executor and number of workers.
//!
//! # The build
//!
//! 1. **Scan**: tasks over id ranges validate the boxes and take their
//!    bounds, count and edge sum; the per-task results are combined in task
//!    order (the first bad box in id order is the error, as serially). The
//!    bounds are exact; the edge sum, which only chooses the bits per axis,
//!    is rounded differently from the serial one, so the frame is chosen
//!    from both ends of its error interval, and where the two disagree (a
//!    mean box size within ~1e-9 of a power-of-two boundary) from the serial
//!    sum, recomputed on the calling thread.
//! 2. **Codes**: tasks over the same id ranges split and key their boxes.
//!    With buffers of at least 8 records per id (the largest split), each
//!    task writes into its own stretch of the scratch buffer and the
//!    stretches are then packed, in order, into the record buffer. With
//!    smaller buffers, a counting pass (a second split of every box) gives
//!    each task's number of records, and the prefix gives each task a
//!    disjoint range of the record buffer to fill; when the records of
//!    every box's full split do not fit, which boxes stay whole depends on
//!    the records before them (the serial room rule), and the build codes
//!    serially.
//! 3. **Sort** (radix mode, from 2¹⁶ records): the records are partitioned
//!    by the top 8 bits of the sort key that vary (each chunk counting-sorts
//!    itself by that digit into its own range of the scratch buffer, then
//!    destination tasks, each owning a run of digits and so a disjoint range
//!    of the output, copy their digits' segments from every chunk in chunk
//!    order), and every bucket is then radix-sorted on its own, in parallel.
//!    Both steps are stable, so the order is the serial (stable) sort's.
//!    Safe Rust cannot hand the tasks of one global scatter disjoint pieces
//!    (a record's destination depends on every record before it); the
//!    chunk-local sort followed by the gather by digit range can. Small
//!    inputs, and [`SortAlgo::Comparison`] (an unstable sort, whose order
//!    of equal keys a parallel sort could not reproduce), sort serially.
//!
//! Temporal reuse recomputes the keys in parallel; its bounded insertion
//! sort stays serial (it is the cheap path by design).
//!
//! # Memory
//!
//! On the calling thread's stack: 64 scan results (about 5 KiB), the sort's
//! per-chunk histograms (32 × 256 × 4 bytes = 32 KiB) and offsets; each
//! sort task uses the serial radix sort's histograms on its own stack. No
//! other memory: the records and scratch buffers are the tree's own.

use crate::error::Error;
use crate::exec::{Executor, Parts, task_split};
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;

use super::plan::{Frame, MAX_PIECES, Splitter};
use super::{
    BoxSource, Candidates, KdRecord, KdStats, LinearKdTree, LocCode, MAX_ELEMENTS, SortAlgo, pack,
    rekey_record, sort, sweep_records,
};

/// Boxes (or records) per task of the scan and coding passes.
const BUILD_GRAIN: usize = 1 << 14;
/// Most tasks of the scan and coding passes (their results live on the
/// stack).
const BUILD_TASKS: usize = 64;
/// Records per source chunk of the parallel sort.
const SORT_GRAIN: usize = 1 << 15;
/// Most source chunks of the parallel sort: their histograms take
/// `SORT_TASKS × 256 × 4` bytes of stack.
const SORT_TASKS: usize = 32;
/// Most destination tasks of the parallel sort.
const SORT_GROUPS: usize = 64;
/// Fewer records than this are sorted serially by the parallel build.
const PAR_SORT_MIN: usize = 1 << 16;
/// Boxes per task of the parallel sweep.
const SWEEP_GRAIN: usize = 1 << 12;
/// Most tasks of the parallel sweep (their cuts live on the stack).
const SWEEP_TASKS: usize = 256;

/// What one scan task found.
#[derive(Clone, Copy)]
struct Scan {
    n: usize,
    lo: [f64; 3],
    hi: [f64; 3],
    sum: f64,
    err: Option<Error>,
}

impl Scan {
    const EMPTY: Self = Self {
        n: 0,
        lo: [f64::INFINITY; 3],
        hi: [f64::NEG_INFINITY; 3],
        sum: 0.0,
        err: None,
    };
}

/// What one coding task wrote.
#[derive(Clone, Copy)]
struct Coded {
    /// Records written.
    count: usize,
    clamped: usize,
    split: usize,
    /// OR and AND of the records' sort keys (the bits that vary are
    /// `or ^ and`).
    or: u128,
    and: u128,
}

impl Coded {
    const EMPTY: Self = Self {
        count: 0,
        clamped: 0,
        split: 0,
        or: 0,
        and: u128::MAX,
    };
}

/// The whole sort key of a record (at most 128 bits), from 32-bit digits.
#[inline(always)]
fn sort_key<K: LocCode>(key: K, depth: u32, total: u32) -> u128 {
    let mut sk = 0u128;
    let mut s = 0;
    while s < total && s < 128 {
        sk |= (K::sort_digit(key, depth, s, 0xFFFF_FFFF) as u128) << s;
        s += 32;
    }
    sk
}

/// `[lo, hi)` of task `t` of `tasks` over `n` items, in near-equal parts.
#[inline]
fn share(n: usize, t: usize, tasks: usize) -> (usize, usize) {
    let at = |k: usize| (n as u64 * k as u64 / tasks.max(1) as u64) as usize;
    (at(t).min(n), at(t + 1).min(n))
}

impl<B: BoundingBox, K: LocCode, R: Storage<KdRecord<K>>> LinearKdTree<B, K, R> {
    /// [`build`](Self::build) with its loops run as tasks on `exec`: the
    /// same records in the same order, the same frame and the same
    /// [`KdStats`] (except [`KdStats::sort_passes`], which counts the
    /// parallel sort's passes: its partition plus the most passes a bucket
    /// needed). See [Parallel forms](crate::kdtree#parallel-forms) for
    /// what stays serial.
    ///
    /// # Errors
    /// As [`build`](Self::build); on error the previous build is kept.
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::exec::Serial;
    /// use spatium::kdtree::{KdConfig, KdRecord, LinearKdTree};
    /// use spatium::{Aabb2, Vec2};
    ///
    /// let boxes: Vec<Aabb2> = (0..100)
    ///     .map(|i| {
    ///         let p = Vec2::new((i % 10) as f32, (i / 10) as f32);
    ///         Aabb2::new(p, Vec2::new(p.x + 1.5, p.y + 1.5)).unwrap()
    ///     })
    ///     .collect();
    /// let new = || {
    ///     LinearKdTree::<Aabb2, u32, _>::new(
    ///         vec![KdRecord::EMPTY; 800],
    ///         vec![KdRecord::EMPTY; 800],
    ///         KdConfig::DEFAULT,
    ///     )
    /// };
    /// let (mut a, mut b) = (new(), new());
    /// a.build(&boxes).unwrap();
    /// b.par_build(&Serial, &boxes).unwrap();
    /// assert_eq!(a.records(), b.records());
    /// ```
    pub fn par_build<E: Executor>(&mut self, exec: &E, boxes: &[B]) -> Result<(), Error> {
        if exec.workers() <= 1 {
            // One worker: the serial build gives the same records in fewer
            // passes.
            return self.build(boxes);
        }
        self.par_build_from(exec, boxes)
    }

    pub(crate) fn par_build_from<E: Executor, S: BoxSource<B> + Sync + ?Sized>(
        &mut self,
        exec: &E,
        src: &S,
    ) -> Result<(), Error> {
        let dim = B::Point::DIM;
        let cap = self.record_capacity();
        let ids = src.id_bound();
        let (tasks, grain) = task_split(ids, BUILD_GRAIN, BUILD_TASKS);
        // Pass 1: validate, count, bounds, edge sums, per task.
        let mut scans = [Scan::EMPTY; BUILD_TASKS];
        exec.run(
            tasks,
            Parts::chunks(&mut scans[..tasks], 1),
            |t, mut part| {
                let lo_id = t.saturating_mul(grain).min(ids);
                let hi_id = lo_id.saturating_add(grain).min(ids);
                let mut s = Scan::EMPTY;
                for id in lo_id..hi_id {
                    if let Some(b) = src.get(id) {
                        if let Err(e) = b.check() {
                            s.err = Some(e);
                            break;
                        }
                        s.n += 1;
                        let (bl, bh) = (b.min(), b.max());
                        for a in 0..dim {
                            s.lo[a] = s.lo[a].min(bl.coord(a) as f64);
                            s.hi[a] = s.hi[a].max(bh.coord(a) as f64);
                        }
                        s.sum += b.longest_edge() as f64;
                    }
                }
                if let Some(slot) = part.slice().first_mut() {
                    *slot = s;
                }
            },
        );
        let scans = &scans[..tasks];
        let mut n = 0usize;
        let mut lo = [f64::INFINITY; 3];
        let mut hi = [f64::NEG_INFINITY; 3];
        let mut sum = 0f64;
        for s in scans {
            if let Some(e) = s.err {
                return Err(e);
            }
            n += s.n;
            for a in 0..dim {
                lo[a] = lo[a].min(s.lo[a]);
                hi[a] = hi[a].max(s.hi[a]);
            }
            sum += s.sum;
        }
        if n > cap || n > MAX_ELEMENTS || ids > MAX_ELEMENTS {
            return Err(Error::CapacityExceeded {
                capacity: cap.min(MAX_ELEMENTS),
            });
        }
        let frame = self.par_frame(src, n, lo, hi, sum)?;
        let reuse = self.config.reuse
            && self.frame == Some(frame)
            && self.elements == n
            && self.id_bound == ids
            && n > 0;
        if reuse && self.par_rekey(exec, src, &frame) {
            return Ok(());
        }
        self.par_fresh(exec, src, frame, n, scans, grain);
        Ok(())
    }

    /// The serial build's frame from the parallel scan: the edge sum only
    /// chooses the bits, monotonically, so when both ends of the sum's
    /// rounding interval choose the same frame, the serial sum (inside the
    /// interval) does too; otherwise the serial sum is recomputed.
    fn par_frame<S: BoxSource<B> + ?Sized>(
        &self,
        src: &S,
        n: usize,
        lo: [f64; 3],
        hi: [f64; 3],
        sum: f64,
    ) -> Result<Frame, Error> {
        if self.config.bits != 0 || n == 0 {
            return self.choose_frame(n, lo, hi, sum);
        }
        // Recursive summation of n non-negative terms errs by at most
        // (n - 1)·2⁻⁵³ of the exact sum, in any order: the two sums differ by
        // less than twice that.
        let eps = 4.0 * n as f64 * f64::EPSILON;
        let below = self.choose_frame(n, lo, hi, sum * (1.0 - eps))?;
        let above = self.choose_frame(n, lo, hi, sum * (1.0 + eps))?;
        if below == above {
            return Ok(below);
        }
        let mut serial = 0f64;
        for id in 0..src.id_bound() {
            if let Some(b) = src.get(id) {
                serial += b.longest_edge() as f64;
            }
        }
        self.choose_frame(n, lo, hi, serial)
    }

    /// Temporal reuse with the keys recomputed in parallel (the insertion
    /// sort is serial). Returns `false` as [`rekey`](Self::rekey) does.
    fn par_rekey<E: Executor, S: BoxSource<B> + Sync + ?Sized>(
        &mut self,
        exec: &E,
        src: &S,
        frame: &Frame,
    ) -> bool {
        let gain = self.config.min_gain();
        let len = self.nrec;
        let (tasks, grain) = task_split(len, BUILD_GRAIN, BUILD_TASKS);
        let mut res = [(0usize, 0usize, true); BUILD_TASKS];
        let recs = &mut self.records.as_mut()[..len];
        exec.run(
            tasks,
            (
                Parts::chunks(recs, grain),
                Parts::chunks(&mut res[..tasks], 1),
            ),
            |_, (mut pr, mut ps)| {
                let mut splitter = Splitter::<K>::new();
                let mut out = (0usize, 0usize, true);
                for r in pr.slice().iter_mut() {
                    match rekey_record(src, frame, gain, &mut splitter, r) {
                        Some((c, s)) => {
                            out.0 += c as usize;
                            out.1 += s as usize;
                        }
                        None => {
                            out.2 = false;
                            break;
                        }
                    }
                }
                if let Some(slot) = ps.slice().first_mut() {
                    *slot = out;
                }
            },
        );
        let res = &res[..tasks];
        if res.iter().any(|r| !r.2) {
            return false;
        }
        let clamped = res.iter().map(|r| r.0).sum();
        let split_elements = res.iter().map(|r| r.1).sum();
        let recs = &mut self.records.as_mut()[..len];
        let Some(moves) = sort::insertion(recs, frame.depth, 2 * len + 1024) else {
            return false;
        };
        self.stats = KdStats {
            elements: self.elements,
            records: len,
            split_elements,
            unsplit_for_room: self.stats.unsplit_for_room,
            clamped,
            bits_per_axis: frame.bits,
            depth: frame.depth,
            sort_passes: 0,
            reused: true,
            moves,
        };
        self.par_pack_boxes(exec, src);
        true
    }

    /// [`LinearKdTree::pack_boxes`] in tasks over record ranges (the same
    /// compact boxes).
    fn par_pack_boxes<E: Executor, S: BoxSource<B> + Sync + ?Sized>(&mut self, exec: &E, src: &S) {
        self.packed = false;
        let Some((frame, k, recs, out)) = self.pack_target() else {
            return;
        };
        let n = recs.len();
        let (tasks, grain) = task_split(n, BUILD_GRAIN, BUILD_TASKS);
        let mut oks = [true; BUILD_TASKS];
        exec.run(
            tasks,
            (
                Parts::chunks(out, grain),
                Parts::chunks(&mut oks[..tasks], 1),
            ),
            |_t, (mut part, mut ok)| {
                let start = part.start();
                let out = part.slice();
                let Some(recs) = recs.get(start..start + out.len()) else {
                    return;
                };
                let good = pack::pack::<B, K, S>(recs, out, &frame, k, src);
                if let Some(slot) = ok.slice().first_mut() {
                    *slot = good;
                }
            },
        );
        self.packed = oks[..tasks].iter().all(|&g| g);
    }

    /// A full build: records coded by tasks over the scan's id ranges, then
    /// the parallel sort.
    fn par_fresh<E: Executor, S: BoxSource<B> + Sync + ?Sized>(
        &mut self,
        exec: &E,
        src: &S,
        frame: Frame,
        n: usize,
        scans: &[Scan],
        grain: usize,
    ) {
        let cap = self.record_capacity();
        let gain = self.config.min_gain();
        let ids = src.id_bound();
        let tasks = scans.len();
        let range = |t: usize| {
            let lo = t.saturating_mul(grain).min(ids);
            (lo, lo.saturating_add(grain).min(ids))
        };
        let depth = frame.depth;
        let sort_total = K::sort_bits(depth);
        // Codes the boxes of task `t` into `out` (which has room).
        let code = |t: usize, out: &mut [KdRecord<K>]| {
            let mut c = Coded::EMPTY;
            let mut w = 0usize;
            let mut splitter = Splitter::<K>::new();
            let (lo, hi) = range(t);
            for id in lo..hi {
                let Some(b) = src.get(id) else { continue };
                if !frame.inside(&b) {
                    c.clamped += 1;
                }
                let q = frame.qbox::<K, B>(&b);
                let id = id as u32;
                match gain {
                    Some(g) => {
                        let pieces = splitter.split(&frame, &q, g);
                        let count = pieces.len();
                        for p in pieces {
                            if let Some(o) = out.get_mut(w) {
                                *o = KdRecord::new(p.key, id, count, p.index);
                            }
                            w += 1;
                        }
                        if count > 1 {
                            c.split += 1;
                        }
                    }
                    None => {
                        if let Some(o) = out.get_mut(w) {
                            *o = KdRecord::new(frame.whole_key::<K>(&q).0, id, 1, 0);
                        }
                        w += 1;
                    }
                }
            }
            c.count = w;
            for r in out.iter().take(w) {
                let sk = sort_key::<K>(r.key, depth, sort_total);
                c.or |= sk;
                c.and &= sk;
            }
            c
        };
        let mut coded = [Coded::EMPTY; BUILD_TASKS];
        // Each task's first record.
        let mut offs = [0usize; BUILD_TASKS + 1];
        if gain.is_some() && cap / MAX_PIECES >= ids {
            // Room for every id's largest split: each task codes into its
            // own stretch of the scratch buffer (MAX_PIECES records per id),
            // and the stretches are then packed into the records in order.
            let stride = MAX_PIECES * grain;
            exec.run(
                tasks,
                (
                    Parts::chunks(self.scratch.as_mut(), stride),
                    Parts::chunks(&mut coded[..tasks], 1),
                ),
                |t, (mut ps, mut pc)| {
                    let c = code(t, ps.slice());
                    if let Some(slot) = pc.slice().first_mut() {
                        *slot = c;
                    }
                },
            );
            for t in 0..tasks {
                offs[t + 1] = offs[t] + coded[t].count;
            }
            let offs = &offs;
            let cuts = |t: usize| offs.get(t).copied().unwrap_or(usize::MAX);
            let staged = self.scratch.as_ref();
            exec.run(
                tasks,
                Parts::cut(&mut self.records.as_mut()[..offs[tasks]], cuts),
                |t, mut pr| {
                    let dst = pr.slice();
                    let at = t * stride;
                    if let Some(src) = staged.get(at..at + dst.len()) {
                        dst.copy_from_slice(src);
                    }
                },
            );
        } else {
            match gain {
                None => {
                    for (t, s) in scans.iter().enumerate() {
                        offs[t + 1] = offs[t] + s.n;
                    }
                }
                Some(g) => {
                    // A counting pass gives each task's records.
                    let mut counts = [0usize; BUILD_TASKS];
                    exec.run(
                        tasks,
                        Parts::chunks(&mut counts[..tasks], 1),
                        |t, mut part| {
                            let mut splitter = Splitter::<K>::new();
                            let mut c = 0usize;
                            let (lo, hi) = range(t);
                            for id in lo..hi {
                                if let Some(b) = src.get(id) {
                                    let q = frame.qbox::<K, B>(&b);
                                    c += splitter.split(&frame, &q, g).len();
                                }
                            }
                            if let Some(slot) = part.slice().first_mut() {
                                *slot = c;
                            }
                        },
                    );
                    for t in 0..tasks {
                        offs[t + 1] = offs[t] + counts[t];
                    }
                    if offs[tasks] > cap {
                        // Which boxes stay whole depends on the records
                        // before them: the serial room rule decides.
                        self.fresh(src, frame, n, &mut |_| {});
                        return;
                    }
                }
            }
            let offs = &offs;
            let cuts = |t: usize| offs.get(t).copied().unwrap_or(usize::MAX);
            let recs = &mut self.records.as_mut()[..offs[tasks]];
            exec.run(
                tasks,
                (
                    Parts::cut(recs, cuts),
                    Parts::chunks(&mut coded[..tasks], 1),
                ),
                |t, (mut pr, mut pc)| {
                    let c = code(t, pr.slice());
                    if let Some(slot) = pc.slice().first_mut() {
                        *slot = c;
                    }
                },
            );
        }
        let total = offs[tasks];
        let mut stats = KdStats {
            elements: n,
            records: total,
            bits_per_axis: frame.bits,
            depth: frame.depth,
            ..KdStats::default()
        };
        let (mut or, mut and) = (0u128, u128::MAX);
        for c in &coded[..tasks] {
            stats.clamped += c.clamped;
            stats.split_elements += c.split;
            or |= c.or;
            and &= c.and;
        }
        match self.config.sort {
            SortAlgo::Radix => {
                let (in_scratch, passes) = par_radix(
                    exec,
                    &mut self.records.as_mut()[..total],
                    &mut self.scratch.as_mut()[..total],
                    depth,
                    or ^ and,
                );
                if in_scratch {
                    core::mem::swap(&mut self.records, &mut self.scratch);
                }
                stats.sort_passes = passes;
            }
            SortAlgo::Comparison => {
                sort::comparison(&mut self.records.as_mut()[..total], depth);
            }
        }
        self.nrec = total;
        self.elements = n;
        self.id_bound = ids;
        self.frame = Some(frame);
        self.stats = stats;
        self.par_pack_boxes(exec, src);
    }

    /// How many sinks
    /// [`par_for_each_candidate_pair`](Self::par_for_each_candidate_pair)
    /// fills: one per 4096 boxes of the last build (at least one, at most
    /// 256).
    pub fn candidate_tasks(&self) -> usize {
        sweep_tasks(self.elements)
    }

    /// [`for_each_candidate_pair`](Self::for_each_candidate_pair) on
    /// `exec`: task `t` sweeps its share of the sorted records and calls
    /// `f(&mut sinks[t], a, b)` for the pairs that start there. The sinks,
    /// concatenated in order, hold the serial sweep's pairs in the serial
    /// order, for every executor.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] as the serial form, and
    /// [`Error::BufferTooSmall`] with fewer than
    /// [`candidate_tasks`](Self::candidate_tasks) sinks (nothing is called).
    pub fn par_for_each_candidate_pair<E, T, F>(
        &self,
        exec: &E,
        boxes: &[B],
        mode: Candidates,
        sinks: &mut [T],
        f: F,
    ) -> Result<(), Error>
    where
        E: Executor,
        T: Send,
        F: Fn(&mut T, u32, u32) + Sync,
    {
        if boxes.len() != self.id_bound || boxes.len() != self.elements {
            return Err(Error::LengthMismatch {
                expected: self.elements,
                got: boxes.len(),
            });
        }
        let tasks = self.candidate_tasks();
        let available = sinks.len();
        let sinks = sinks.get_mut(..tasks).ok_or(Error::BufferTooSmall {
            needed: tasks,
            available,
        })?;
        self.par_sweep(exec, boxes, mode, sinks, f);
        Ok(())
    }

    /// The sweep in [`candidate_tasks`](Self::candidate_tasks) tasks of
    /// near-equal work; `sinks` holds one per task.
    ///
    /// A record's work is one step of its own plus, for a long run, one per
    /// record below its node (found by a galloping search): tasks over equal record
    /// ranges sum their work, and each cut of the total into equal shares
    /// is placed at the start of the range that holds it, or, in a range
    /// of more than twice the mean work, at the very step of the sweep
    /// where the work reaches it, inside a run if need be (a box high in
    /// the tree has a run of many records). The cuts depend on the records
    /// alone.
    pub(crate) fn par_sweep<E, S, T, F>(
        &self,
        exec: &E,
        src: &S,
        mode: Candidates,
        sinks: &mut [T],
        f: F,
    ) where
        E: Executor,
        S: BoxSource<B> + Sync + ?Sized,
        T: Send,
        F: Fn(&mut T, u32, u32) + Sync,
    {
        let tasks = self.candidate_tasks().min(sinks.len()).min(SWEEP_TASKS);
        let Some(frame) = self.frame else { return };
        let recs = self.records();
        let packed = self.packed();
        let n = recs.len();
        // The work of each record range.
        let mut work = [0u64; SWEEP_TASKS + 1];
        exec.run(
            tasks,
            Parts::chunks(&mut work[1..=tasks], 1),
            |t, mut part| {
                let (lo, hi) = share(n, t, tasks);
                let w: u64 = (lo..hi).map(|i| weight(recs, i)).sum();
                if let Some(slot) = part.slice().first_mut() {
                    *slot = w;
                }
            },
        );
        for t in 0..tasks {
            work[t + 1] += work[t];
        }
        let total = work[tasks];
        // Cut k at the step where the work done reaches total · k / tasks.
        let mut cuts = [(0usize, 0usize); SWEEP_TASKS + 1];
        cuts[tasks] = (n, 0);
        {
            let work = &work;
            exec.run(
                tasks.saturating_sub(1),
                Parts::chunks(&mut cuts[1..tasks], 1),
                |k, mut part| {
                    let target = (total as u128 * (k + 1) as u128 / tasks as u128) as u64;
                    // The range holding the target, then the record.
                    let t = work[1..=tasks]
                        .partition_point(|&w| w <= target)
                        .min(tasks - 1);
                    let (lo, hi) = share(n, t, tasks);
                    let mut done = work[t];
                    let mut at = (lo, 0);
                    // A range of at most twice the mean work is cut at its
                    // start; a heavier one (long runs) where the work
                    // reaches the target.
                    let heavy = (work[t + 1] - done) * tasks as u64 > 2 * total;
                    let scan = if heavy { hi } else { lo };
                    for i in lo..scan {
                        let w = weight(recs, i);
                        if done + w > target {
                            at = (i, (target - done) as usize);
                            break;
                        }
                        done += w;
                    }
                    if let Some(slot) = part.slice().first_mut() {
                        *slot = at;
                    }
                },
            );
        }
        let cuts = &cuts;
        exec.run(
            tasks,
            Parts::chunks(&mut sinks[..tasks], 1),
            |t, mut part| {
                let Some(sink) = part.slice().first_mut() else {
                    return;
                };
                sweep_records::<B, K, S, _>(
                    recs,
                    packed,
                    &frame,
                    src,
                    mode,
                    cuts[t],
                    cuts[t + 1],
                    |a, b| f(sink, a, b),
                );
            },
        );
    }
}

/// Runs shorter than this count as no run in the sweep's work estimate.
const LONG_RUN: usize = 64;

/// The work the sweep's cuts count for record `i`: one step of its own,
/// plus its run when the run is long (at least [`LONG_RUN`] records, one
/// test; the short runs of most records spread evenly and are not worth a
/// search each). A step the cuts may fall on: at most `1 + run`.
#[inline]
fn weight<K: LocCode>(recs: &[KdRecord<K>], i: usize) -> u64 {
    match (recs.get(i), recs.get(i + LONG_RUN)) {
        (Some(r), Some(s)) if K::contains(r.key, s.key) => 1 + run_len(recs, i) as u64,
        _ => 1,
    }
}

/// How many records after record `i` lie in its node (they follow it
/// contiguously in prefix order): a galloping search.
#[inline]
fn run_len<K: LocCode>(recs: &[KdRecord<K>], i: usize) -> usize {
    let Some(r) = recs.get(i) else { return 0 };
    let rest = &recs[i + 1..];
    let inside = |s: &KdRecord<K>| K::contains(r.key, s.key);
    let mut hi = 1;
    while hi <= rest.len() && inside(&rest[hi - 1]) {
        hi *= 2;
    }
    let lo = hi / 2;
    let hi = hi.min(rest.len());
    lo + rest[lo..hi].partition_point(inside)
}

/// Tasks of the parallel sweep for `n` boxes: one per 4096, at most
/// [`SWEEP_TASKS`].
pub(crate) fn sweep_tasks(n: usize) -> usize {
    task_split(n, SWEEP_GRAIN, SWEEP_TASKS).0
}

/// Sorts `a` in prefix order with `b` as scratch, as [`sort::radix`] does
/// (the same order: both are stable), on `exec`; `varying` has the bits of
/// the sort key that differ between records. Returns whether the records
/// ended in `b` and the passes.
fn par_radix<E: Executor, K: LocCode>(
    exec: &E,
    a: &mut [KdRecord<K>],
    b: &mut [KdRecord<K>],
    depth: u32,
    varying: u128,
) -> (bool, u32) {
    let n = a.len();
    if n < PAR_SORT_MIN || varying == 0 || b.len() != n {
        return sort::radix(a, b, depth);
    }
    // The top digit: the 8 highest bits that vary.
    let high = 128 - varying.leading_zeros();
    let shift = high.saturating_sub(8);
    let digit = |r: &KdRecord<K>| K::sort_digit(r.key, depth, shift, 255);
    let (tasks, grain) = task_split(n, SORT_GRAIN, SORT_TASKS);
    // 1. Each chunk counting-sorts itself by the digit, from `a` into the
    //    same range of `b`.
    let mut hist = [[0u32; 256]; SORT_TASKS];
    exec.run(
        tasks,
        (
            Parts::chunks(&mut *a, grain),
            Parts::chunks(&mut *b, grain),
            Parts::chunks(&mut hist[..tasks], 1),
        ),
        |_, (mut pa, mut pb, mut ph)| {
            let (src, dst) = (pa.slice(), pb.slice());
            let mut h = [0u32; 256];
            for r in src.iter() {
                h[digit(r)] += 1;
            }
            let mut at = [0u32; 256];
            let mut s = 0u32;
            for (x, c) in at.iter_mut().zip(h.iter()) {
                *x = s;
                s += c;
            }
            for r in src.iter() {
                let d = digit(r);
                if let Some(o) = dst.get_mut(at[d] as usize) {
                    *o = *r;
                }
                at[d] += 1;
            }
            if let Some(slot) = ph.slice().first_mut() {
                *slot = h;
            }
        },
    );
    // 2. Where each digit starts, and groups of digits of about n / GROUPS
    //    records for the destination tasks.
    let hist = &hist[..tasks];
    let mut start = [0usize; 257];
    for v in 0..256 {
        let c: usize = hist.iter().map(|h| h[v] as usize).sum();
        start[v + 1] = start[v] + c;
    }
    let mut first = [256usize; SORT_GROUPS + 1];
    first[0] = 0;
    let mut groups = 0;
    for v in 1..256 {
        if groups + 1 < SORT_GROUPS
            && (start[v] - start[first[groups]]).saturating_mul(SORT_GROUPS) >= n
        {
            groups += 1;
            first[groups] = v;
        }
    }
    groups += 1;
    first[groups] = 256;
    let (first, start) = (&first, &start);
    let cuts = |k: usize| first.get(k).map_or(usize::MAX, |&v| start[v.min(256)]);
    // 3. Each group copies its digits' segments, chunk by chunk, into its
    //    range of `a`.
    {
        let b = &*b;
        exec.run(groups, Parts::cut(&mut *a, cuts), |k, mut pa| {
            let out = pa.slice();
            let (v0, v1) = (first[k], first[k + 1]);
            let mut cur = [0usize; SORT_TASKS];
            for (t, c) in cur.iter_mut().enumerate().take(tasks) {
                *c = t * grain + hist[t][..v0].iter().map(|&x| x as usize).sum::<usize>();
            }
            let mut w = 0;
            for v in v0..v1 {
                for (h, c) in hist.iter().zip(cur.iter_mut()) {
                    let len = h[v] as usize;
                    if let (Some(d), Some(s)) = (out.get_mut(w..w + len), b.get(*c..*c + len)) {
                        d.copy_from_slice(s);
                    }
                    w += len;
                    *c += len;
                }
            }
        });
    }
    // 4. Each bucket sorts itself on the bits below the digit.
    let mut passes = [0u32; SORT_GROUPS];
    exec.run(
        groups,
        (
            Parts::cut(&mut *a, cuts),
            Parts::cut(&mut *b, cuts),
            Parts::chunks(&mut passes[..groups], 1),
        ),
        |k, (mut pa, mut pb, mut pp)| {
            let base = pa.start();
            let (sa, sb) = (pa.slice(), pb.slice());
            let mut most = 0;
            for v in first[k]..first[k + 1] {
                let lo = start[v] - base;
                let hi = start[v + 1] - base;
                if hi - lo < 2 || shift == 0 {
                    continue;
                }
                if let (Some(ra), Some(rb)) = (sa.get_mut(lo..hi), sb.get_mut(lo..hi)) {
                    let (in_b, p) = sort::radix_low(ra, rb, depth, shift);
                    if in_b {
                        ra.copy_from_slice(rb);
                    }
                    most = most.max(p);
                }
            }
            if let Some(slot) = pp.slice().first_mut() {
                *slot = most;
            }
        },
    );
    (
        false,
        1 + passes[..groups].iter().copied().max().unwrap_or(0),
    )
}
