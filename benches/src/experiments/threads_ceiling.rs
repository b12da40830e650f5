//! The machine's own ceiling for the thread-scaling experiment: how much
//! faster `t` threads can run work that shares nothing, so that each
//! structure's speed-up can be read against what the cores allow (logical
//! CPUs that are hyper-threads of one core, a clock that drops when every
//! core is busy, one memory bus).
//!
//! * `ceiling: arithmetic, one dependent chain` — a fixed number of
//!   integer and float operations (a xorshift generator feeding a
//!   multiply and add chain per task), cut into 256 tasks run on a rayon pool
//!   of `t` threads. It touches no memory, but each step waits for the one
//!   before: it scales over hyper-threads as over cores.
//! * `ceiling: arithmetic, 32 independent chains` — the same number of
//!   tasks, each running 32 independent multiply and add chains, which
//!   keeps a core's float units busy: if logical CPUs share cores, this
//!   row shows it.
//! * `ceiling: memory read` — the sum of a 512 MiB array (8 MiB with
//!   `--quick`), cut into 256 chunks, on the same pool: the ceiling of a
//!   pass that streams from memory.
//!
//! Both results are checked against their one-thread values, so neither
//! can be optimised away.

use super::threads::{Setup, ThreadRow};
use rayon::prelude::*;

/// Tasks each kernel is cut into.
const TASKS: usize = 256;
/// Independent chains per task of the throughput kernel (16 two-lane
/// vector chains: two multiplies or adds issued every cycle).
const CHAINS: usize = 32;

/// One task of the arithmetic kernel: `steps` rounds of a xorshift and a
/// dependent multiply and add chain seeded by the task number.
fn arithmetic(task: usize, steps: u32) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (task as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut f = 1.0f64 + task as f64;
    for _ in 0..steps {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        f = f * 0.999_999_9 + (x >> 40) as f64 * 1e-9;
    }
    x ^ f.to_bits()
}

/// One task of the throughput kernel: [`CHAINS`] independent multiply and
/// add chains, enough to keep a core's float units busy every cycle, so two
/// logical CPUs that are hyper-threads of one core would share them (a
/// single dependent chain, as in [`arithmetic`], leaves most cycles idle
/// and scales over hyper-threads as if they were cores).
fn throughput(task: usize, steps: u32) -> u64 {
    let mut f = [0.0f64; CHAINS];
    for (k, x) in f.iter_mut().enumerate() {
        *x = 1.0 + (task * CHAINS + k) as f64;
    }
    for _ in 0..steps {
        for x in &mut f {
            *x = *x * 0.999_999_9 + 1e-7;
        }
    }
    f.iter().fold(0u64, |a, x| a ^ x.to_bits())
}

/// Rows: the kernels at every thread count.
pub fn rows(setup: &Setup) -> Vec<ThreadRow> {
    let steps: u32 = if setup.quick { 20_000 } else { 500_000 };
    let words = if setup.quick { 1 << 20 } else { 1 << 26 };
    let data: Vec<u64> = (0..words as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9))
        .collect();
    let chunk = words / TASKS;
    let mem = format!("ceiling: memory read ({} MiB)", (words * 8) >> 20);
    let mut rows = Vec::new();
    let mut want = None;
    let mut want_sum = None;
    let mut want_wide = None;
    for &t in &setup.threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .expect("rayon pool");
        // Each arithmetic kernel's 256 tasks on the pool, their results
        // combined and checked against the first run's.
        let kernel = |f: &(dyn Fn(usize) -> u64 + Sync), want: &mut Option<u64>| {
            setup.wall_median(|| {
                let h =
                    pool.install(|| (0..TASKS).into_par_iter().map(f).reduce(|| 0, |a, b| a ^ b));
                assert_eq!(*want.get_or_insert(h), h, "kernel result");
            })
        };
        let (ms, runs) = kernel(&|k| arithmetic(k, steps), &mut want);
        rows.push(row(
            "ceiling: arithmetic, one dependent chain",
            t,
            TASKS,
            ms,
            runs,
        ));
        let (ms, runs) = kernel(&|k| throughput(k, steps / 4), &mut want_wide);
        rows.push(row(
            "ceiling: arithmetic, 32 independent chains",
            t,
            TASKS,
            ms,
            runs,
        ));
        let (ms, runs) = setup.wall_median(|| {
            let s = pool.install(|| {
                data.par_chunks(chunk)
                    .map(|c| c.iter().fold(0u64, |a, &b| a.wrapping_add(b)))
                    .reduce(|| 0, u64::wrapping_add)
            });
            assert_eq!(*want_sum.get_or_insert(s), s, "memory sum");
        });
        rows.push(row(&mem, t, words, ms, runs));
    }
    rows
}

fn row(workload: &str, threads: usize, n: usize, median_ms: f64, runs: usize) -> ThreadRow {
    ThreadRow {
        workload: workload.to_owned(),
        who: "machine (no shared data)".to_owned(),
        n,
        threads,
        median_ms,
        runs,
    }
}
