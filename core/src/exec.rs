//! Running the structures' loops on many workers without `std`: the
//! application hands the library an [`Executor`], the library cuts its work
//! into numbered tasks and gives each task its own disjoint pieces of the
//! output buffers.
//!
//! The design follows the task hook of Box2D v3 (the application owns the
//! threads; the library only enqueues ranges and waits for them), expressed
//! in safe Rust:
//!
//! * [`Executor::run`] calls `f(t, piece_t)` once for every task
//!   `t in 0..tasks`, in any order and on any thread, and returns when all
//!   have finished. [`Serial`] (here) runs them in order on the calling
//!   thread; the host crate implements the trait over `rayon` and over
//!   `std::thread::scope`.
//! * The pieces come from a [`Split`]: one or more mutable slices cut at
//!   task boundaries ([`Parts`]), so no two tasks can write the same element
//!   and no `unsafe` is needed. Everything else a task reads is captured by
//!   shared reference.
//!
//! # Determinism
//!
//! Every structure decides its number of tasks and their boundaries from the
//! size of its input alone ([`task_count`]), never from
//! [`Executor::workers`], and combines per-task results in task order. The
//! answers are therefore bit-identical for every executor and every number of
//! workers, including [`Serial`].
//!
//! ```
//! use spatium::exec::{Executor, Parts, Serial, task_count};
//! let xs: Vec<u32> = (0..10_000).collect();
//! let mut doubled = vec![0u32; xs.len()];
//! let grain = 4096;
//! let tasks = task_count(xs.len(), grain);
//! Serial.run(tasks, Parts::chunks(&mut doubled[..], grain), |_t, mut part| {
//!     let start = part.start();
//!     for (k, d) in part.slice().iter_mut().enumerate() {
//!         *d = 2 * xs[start + k];
//!     }
//! });
//! assert_eq!(doubled[9_999], 19_998);
//! ```

/// Runs numbered tasks, possibly concurrently.
///
/// Implementations must call `f` exactly once for every task index in
/// `0..tasks`, with the piece of `parts` for that task (obtained by
/// [`Split::split_at_task`]), and return only after every call returned. A
/// panic in a task may propagate (the core's tasks never panic).
pub trait Executor: Sync {
    /// How many tasks may run at once (≥ 1). Informative only: the
    /// structures never let it change a result.
    fn workers(&self) -> usize;

    /// Calls `f(t, piece)` for every `t in 0..tasks`; returns when all are
    /// done.
    fn run<S, F>(&self, tasks: usize, parts: S, f: F)
    where
        S: Split,
        F: Fn(usize, S) + Sync;
}

/// The executor that runs every task in order on the calling thread: what
/// firmware and single-threaded hosts use, and the reference the parallel
/// executors' results are compared with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Serial;

impl Executor for Serial {
    fn workers(&self) -> usize {
        1
    }

    fn run<S, F>(&self, tasks: usize, parts: S, f: F)
    where
        S: Split,
        F: Fn(usize, S) + Sync,
    {
        let mut rest = parts;
        for t in 0..tasks {
            let (head, tail) = rest.split_at_task(1);
            f(t, head);
            rest = tail;
        }
    }
}

impl<E: Executor> Executor for &E {
    fn workers(&self) -> usize {
        (**self).workers()
    }

    fn run<S, F>(&self, tasks: usize, parts: S, f: F)
    where
        S: Split,
        F: Fn(usize, S) + Sync,
    {
        (**self).run(tasks, parts, f)
    }
}

/// A value alone on its own cache lines (128 bytes, the pair of lines that
/// adjacent-line prefetchers move together), for per-task sinks.
///
/// Sinks that tasks update concurrently (a pair counter, a small
/// accumulator) but that sit next to each other in one slice share cache
/// lines: each write by one core then evicts the line from the cores
/// writing its neighbours ("false sharing"), and a sweep that updates its
/// sink once per particle scales far below its core count. Wrap each sink
/// in `Padded` (`vec![Padded(0u64); tasks]`); it dereferences to the value.
/// Memory: `max(128, size_of::<T>())` rounded up to 128 bytes per sink.
///
/// ```
/// use spatium::exec::Padded;
/// let mut sinks = [Padded(0u64); 4];
/// *sinks[2] += 5;
/// assert_eq!(sinks.iter().map(|s| **s).sum::<u64>(), 5);
/// assert_eq!(core::mem::align_of::<Padded<u8>>(), 128);
/// ```
#[repr(C, align(128))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Padded<T>(pub T);

impl<T> core::ops::Deref for Padded<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> core::ops::DerefMut for Padded<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// Something that can be cut, in task order, into one piece per task.
///
/// `split_at_task(k)` returns the pieces of this piece's first `k` tasks and
/// of the rest. Splitting never panics: a boundary past the end gives empty
/// pieces.
pub trait Split: Send + Sized {
    /// The pieces of the first `k` tasks, and of the others.
    fn split_at_task(self, k: usize) -> (Self, Self);
}

impl Split for () {
    #[inline]
    fn split_at_task(self, _: usize) -> (Self, Self) {
        ((), ())
    }
}

impl<A: Split, B: Split> Split for (A, B) {
    #[inline]
    fn split_at_task(self, k: usize) -> (Self, Self) {
        let (a0, a1) = self.0.split_at_task(k);
        let (b0, b1) = self.1.split_at_task(k);
        ((a0, b0), (a1, b1))
    }
}

impl<A: Split, B: Split, C: Split> Split for (A, B, C) {
    #[inline]
    fn split_at_task(self, k: usize) -> (Self, Self) {
        let (a0, a1) = self.0.split_at_task(k);
        let (b0, b1) = self.1.split_at_task(k);
        let (c0, c1) = self.2.split_at_task(k);
        ((a0, b0, c0), (a1, b1, c1))
    }
}

/// Where each task's piece of a slice begins: `cut(t)` is the index of the
/// first element of task `t` (non-decreasing in `t`; values past the slice
/// are clamped to it).
pub trait Cuts: Copy + Send {
    /// First element of task `t`.
    fn cut(&self, t: usize) -> usize;
}

/// Pieces of a fixed number of elements: task `t` gets `t·n .. (t+1)·n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Every(pub usize);

impl Cuts for Every {
    #[inline]
    fn cut(&self, t: usize) -> usize {
        t.saturating_mul(self.0)
    }
}

impl<F: Fn(usize) -> usize + Copy + Send> Cuts for F {
    #[inline]
    fn cut(&self, t: usize) -> usize {
        self(t)
    }
}

/// A mutable slice cut into one piece per task (see [`Cuts`]).
#[derive(Debug)]
pub struct Parts<'a, T, C> {
    data: &'a mut [T],
    cuts: C,
    /// Absolute index of this piece's first task.
    first: usize,
    /// Absolute index of this piece's first element.
    base: usize,
}

impl<'a, T: Send> Parts<'a, T, Every> {
    /// `data` in pieces of `n` elements (the last may be shorter; tasks past
    /// the end get empty pieces).
    pub fn chunks(data: &'a mut [T], n: usize) -> Self {
        Self::cut(data, Every(n))
    }
}

impl<'a, T: Send, C: Cuts> Parts<'a, T, C> {
    /// `data` cut where `cuts` says.
    pub fn cut(data: &'a mut [T], cuts: C) -> Self {
        let base = cuts.cut(0).min(data.len());
        // Elements before the first task's cut belong to no task.
        let data = &mut data[base..];
        Self {
            data,
            cuts,
            first: 0,
            base,
        }
    }

    /// The elements of this piece.
    #[inline]
    pub fn slice(&mut self) -> &mut [T] {
        self.data
    }

    /// The elements of this piece, for the piece's whole lifetime.
    #[inline]
    pub fn into_slice(self) -> &'a mut [T] {
        self.data
    }

    /// Index, in the whole slice, of this piece's first element.
    #[inline]
    pub fn start(&self) -> usize {
        self.base
    }
}

impl<T: Send, C: Cuts> Split for Parts<'_, T, C> {
    #[inline]
    fn split_at_task(self, k: usize) -> (Self, Self) {
        let at = self.first.saturating_add(k);
        let mid = self
            .cuts
            .cut(at)
            .saturating_sub(self.base)
            .min(self.data.len());
        let (a, b) = self.data.split_at_mut(mid);
        (
            Self {
                data: a,
                cuts: self.cuts,
                first: self.first,
                base: self.base,
            },
            Self {
                data: b,
                cuts: self.cuts,
                first: at,
                base: self.base + mid,
            },
        )
    }
}

/// Number of tasks of at most `grain` items each for `n` items (at least
/// one, so a task sees an empty input too). Depends on `n` and `grain` only,
/// which is what makes results independent of the number of workers.
#[inline]
pub const fn task_count(n: usize, grain: usize) -> usize {
    let g = if grain == 0 { 1 } else { grain };
    if n == 0 { 1 } else { n.div_ceil(g) }
}

/// Tasks of about `grain` items, but at most `max` (for per-task scratch of
/// a fixed size): the grain is widened instead. Returns `(tasks, grain)`.
#[inline]
pub const fn task_split(n: usize, grain: usize, max: usize) -> (usize, usize) {
    let max = if max == 0 { 1 } else { max };
    let mut g = if grain == 0 { 1 } else { grain };
    if n.div_ceil(g) > max {
        g = n.div_ceil(max);
    }
    (task_count(n, g), g)
}

/// Exclusive prefix sum of `counts` in place (each becomes the sum of those
/// before it), with the per-task partial sums computed in parallel; returns
/// the total, saturated at `u32::MAX`. `scratch` holds one `u32` per task
/// (at most 1024 tasks are used: shorter scratch is fine, the grain grows).
pub fn exclusive_prefix_sum<E: Executor>(exec: &E, counts: &mut [u32], scratch: &mut [u32]) -> u32 {
    const GRAIN: usize = 1 << 16;
    let n = counts.len();
    let (tasks, grain) = task_split(n, GRAIN, scratch.len().clamp(1, 1024));
    if tasks <= 1 || scratch.len() < tasks {
        let mut run = 0u32;
        for c in counts.iter_mut() {
            let v = *c;
            *c = run;
            run = run.saturating_add(v);
        }
        return run;
    }
    let sums = &mut scratch[..tasks];
    // Pass 1: each task's total.
    {
        let counts = &*counts;
        exec.run(tasks, Parts::chunks(&mut sums[..], 1), |t, mut s| {
            let lo = (t * grain).min(n);
            let hi = (lo + grain).min(n);
            let total = counts[lo..hi]
                .iter()
                .fold(0u32, |a, &c| a.saturating_add(c));
            if let Some(s) = s.slice().first_mut() {
                *s = total;
            }
        });
    }
    let mut run = 0u32;
    for s in sums.iter_mut() {
        let v = *s;
        *s = run;
        run = run.saturating_add(v);
    }
    // Pass 2: each task's prefix from its offset.
    let sums = &*sums;
    exec.run(tasks, Parts::chunks(counts, grain), |t, mut part| {
        let mut r = sums.get(t).copied().unwrap_or(0);
        for c in part.slice() {
            let v = *c;
            *c = r;
            r = r.saturating_add(v);
        }
    });
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_runs_every_task_once_in_order_with_its_piece() {
        let mut data = [0u32; 10];
        Serial.run(4, Parts::chunks(&mut data[..], 3), |t, mut p| {
            let start = p.start();
            assert_eq!(start, (t * 3).min(10));
            for (k, d) in p.slice().iter_mut().enumerate() {
                *d = (t * 100 + start + k) as u32;
            }
        });
        assert_eq!(data, [0, 1, 2, 103, 104, 105, 206, 207, 208, 309]);
    }

    #[test]
    fn cuts_past_the_end_give_empty_pieces_and_tuples_split_together() {
        let mut a = [1u8; 5];
        let mut b = [0u16; 2];
        let bounds = [0usize, 4, 9, 2];
        Serial.run(
            4,
            (
                Parts::cut(&mut a[..], |t: usize| {
                    bounds.get(t).copied().unwrap_or(usize::MAX)
                }),
                Parts::chunks(&mut b[..], 1),
            ),
            |t, (mut pa, mut pb)| {
                let la = pa.slice().len();
                let lb = pb.slice().len();
                match t {
                    0 => assert_eq!((la, lb), (4, 1)),
                    1 => assert_eq!((la, lb), (1, 1)),
                    _ => assert_eq!((la, lb), (0, 0)),
                }
            },
        );
    }

    #[test]
    fn prefix_sum_matches_the_serial_one() {
        let mut a = [0u32; 100_000];
        for (i, v) in a.iter_mut().enumerate() {
            *v = (i % 7) as u32;
        }
        let mut b = a;
        let mut scratch = [0u32; 8];
        let t1 = exclusive_prefix_sum(&Serial, &mut a, &mut scratch);
        let t2 = exclusive_prefix_sum(&Serial, &mut b, &mut []);
        assert_eq!(t1, t2);
        assert_eq!(a, b);
        assert_eq!(task_count(0, 10), 1);
        assert_eq!(task_split(100, 1, 8), (8, 13));
    }
}
