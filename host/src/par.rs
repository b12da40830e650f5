//! Host executors for the core's task hook ([`spatium::exec::Executor`]):
//! [`Rayon`] (work stealing over a rayon pool, feature `rayon`, on by
//! default) and [`Threads`] (`std::thread::scope`, contiguous blocks of
//! tasks per thread, no dependency). Both give results bit-identical to
//! [`spatium::exec::Serial`]: the structures cut their work into tasks by
//! input size, never by worker count.

use spatium::exec::{Executor, Split};

/// Runs tasks on a rayon thread pool: the range of tasks is halved
/// recursively with `rayon::join`, so idle workers steal the other halves.
#[cfg(feature = "rayon")]
#[derive(Debug)]
pub struct Rayon {
    pool: rayon::ThreadPool,
}

#[cfg(feature = "rayon")]
impl Rayon {
    /// A pool of `threads` workers (`0`: one per available core).
    ///
    /// # Errors
    /// rayon's error if the threads cannot be started.
    pub fn new(threads: usize) -> Result<Self, rayon::ThreadPoolBuildError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("spatium-{i}"))
            .build()?;
        Ok(Self { pool })
    }

    /// The underlying pool (to run a peer's rayon code on the same threads).
    pub fn pool(&self) -> &rayon::ThreadPool {
        &self.pool
    }
}

#[cfg(feature = "rayon")]
fn join_run<S: Split, F: Fn(usize, S) + Sync>(lo: usize, hi: usize, parts: S, f: &F) {
    if hi - lo <= 1 {
        if hi > lo {
            f(lo, parts);
        }
        return;
    }
    let mid = lo + (hi - lo) / 2;
    let (a, b) = parts.split_at_task(mid - lo);
    rayon::join(|| join_run(lo, mid, a, f), || join_run(mid, hi, b, f));
}

#[cfg(feature = "rayon")]
impl Executor for Rayon {
    fn workers(&self) -> usize {
        self.pool.current_num_threads()
    }

    fn run<S, F>(&self, tasks: usize, parts: S, f: F)
    where
        S: Split,
        F: Fn(usize, S) + Sync,
    {
        if tasks <= 1 {
            if tasks == 1 {
                f(0, parts);
            }
            return;
        }
        self.pool.install(|| join_run(0, tasks, parts, &f));
    }
}

/// Runs tasks on `threads` scoped OS threads started for each call, each
/// thread taking one contiguous block of tasks (static schedule). No
/// dependency beyond `std`; a thread start costs tens of microseconds, so
/// it suits coarse calls (a whole build or pass), not tiny ones.
#[derive(Clone, Copy, Debug)]
pub struct Threads {
    threads: usize,
}

impl Threads {
    /// `threads` workers (`0`: one per available core).
    pub fn new(threads: usize) -> Self {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            threads
        };
        Self { threads }
    }
}

impl Executor for Threads {
    fn workers(&self) -> usize {
        self.threads
    }

    fn run<S, F>(&self, tasks: usize, parts: S, f: F)
    where
        S: Split,
        F: Fn(usize, S) + Sync,
    {
        let workers = self.threads.min(tasks).max(1);
        if workers == 1 {
            spatium::exec::Serial.run(tasks, parts, f);
            return;
        }
        let f = &f;
        std::thread::scope(|scope| {
            let mut rest = parts;
            let mut first = 0;
            for w in 0..workers {
                // Blocks of ⌈remaining / remaining workers⌉ tasks.
                let count = (tasks - first).div_ceil(workers - w);
                let (mine, tail) = rest.split_at_task(count);
                rest = tail;
                let lo = first;
                first += count;
                let run = move || {
                    let mut piece = mine;
                    for t in lo..lo + count {
                        let (head, tail) = piece.split_at_task(1);
                        f(t, head);
                        piece = tail;
                    }
                };
                if w + 1 == workers {
                    run();
                } else {
                    scope.spawn(run);
                }
            }
        });
    }
}

/// The executor a host program picks from a `--threads` flag: serial for
/// one thread, rayon otherwise.
#[derive(Debug)]
pub enum HostExec {
    /// The calling thread only.
    Serial,
    /// A rayon pool.
    #[cfg(feature = "rayon")]
    Rayon(Rayon),
    /// Scoped threads.
    Threads(Threads),
}

impl HostExec {
    /// `threads` workers (`0`: all cores): [`HostExec::Serial`] for one,
    /// a rayon pool otherwise (scoped threads without the `rayon` feature).
    pub fn new(threads: usize) -> Self {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            threads
        };
        if threads <= 1 {
            return Self::Serial;
        }
        #[cfg(feature = "rayon")]
        if let Ok(r) = Rayon::new(threads) {
            return Self::Rayon(r);
        }
        Self::Threads(Threads::new(threads))
    }
}

impl Executor for HostExec {
    fn workers(&self) -> usize {
        match self {
            Self::Serial => 1,
            #[cfg(feature = "rayon")]
            Self::Rayon(r) => r.workers(),
            Self::Threads(t) => t.workers(),
        }
    }

    fn run<S, F>(&self, tasks: usize, parts: S, f: F)
    where
        S: Split,
        F: Fn(usize, S) + Sync,
    {
        match self {
            Self::Serial => spatium::exec::Serial.run(tasks, parts, f),
            #[cfg(feature = "rayon")]
            Self::Rayon(r) => r.run(tasks, parts, f),
            Self::Threads(t) => t.run(tasks, parts, f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spatium::exec::{Parts, Serial, task_count};

    fn fill<E: Executor>(e: &E) -> Vec<u64> {
        let n = 100_003;
        let mut v = vec![0u64; n];
        let g = 1000;
        e.run(
            task_count(n, g),
            Parts::chunks(&mut v[..], g),
            |t, mut p| {
                let s = p.start();
                for (k, x) in p.slice().iter_mut().enumerate() {
                    *x = (t as u64) << 32 | (s + k) as u64;
                }
            },
        );
        v
    }

    #[test]
    fn every_executor_gives_the_serial_result() {
        let want = fill(&Serial);
        for threads in [1, 2, 3, 8] {
            assert_eq!(fill(&Threads::new(threads)), want, "threads {threads}");
            assert_eq!(fill(&HostExec::new(threads)), want, "host {threads}");
            #[cfg(feature = "rayon")]
            assert_eq!(fill(&Rayon::new(threads).unwrap()), want, "rayon {threads}");
        }
    }
}
