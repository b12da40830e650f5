//! The broad-phase section of the thread-scaling experiment: the
//! hierarchical hash grid and the sorted grid (`uniform::GridBroadPhase`)
//! on the bp experiment's moving cubes (10⁶ by default), one step =
//! `par_update_all` + `par_for_each_overlap` into per-task pair counters,
//! beside parry3d's BVH (rebuilt each step, as in
//! the bp experiment) serial and with its task-parallel pair traversal on a
//! rayon pool of the same size (parry has no parallel build).
//!
//! Protocol: the scene is built once and stepped 10 times untimed (steady
//! state); then one untimed step on each thread count (the pool's first
//! use, checked against the serial detection), then 7 rounds (3 with
//! `--quick`) that each time one step on every thread count in turn, the
//! scene's own motion untimed. Each figure is the wall-clock median per step. The
//! update and the detection are also given apart (the same steps).
//!
//! Then the grid's calling-thread share (printed, not a row): the same
//! steps on an executor that runs every task on the calling thread and
//! adds up the thread CPU time inside its task passes; the rest of each
//! call (the relinks of the boxes that change cell, anything between the
//! passes) runs on the calling thread whatever the executor, and caps the
//! speed-up on `w` workers at `1 / (s + (1 − s) / w)` (Amdahl).

use super::threads::{Setup, ThreadRow};
use crate::bp_peers::{Pairs, ParryBvh};
use crate::measure::median;
use core::time::Duration;
use cpu_time::ThreadTime;
use spatium::exec::Padded;
use spatium::exec::{Executor, Serial, Split};
use spatium::{Aabb3, BroadPhase, HhgConfig, UpdateStrategy};
use spatium_host::make::{self, VecGridBp, VecHhg};
use spatium_host::par::{HostExec, Rayon};
use spatium_host::scenarios::{BoxScenario, moving_cubes};
use std::sync::Mutex;
use std::time::Instant;

/// Untimed steps after the build.
const WARM_UP: usize = 10;

/// Boxes: `setup.n`, else 10⁶ (20 000 with `--quick`).
fn size(setup: &Setup) -> usize {
    setup
        .n
        .unwrap_or(if setup.quick { 20_000 } else { 1_000_000 })
}

/// Timed steps per thread count.
fn timed_steps(setup: &Setup) -> usize {
    if setup.quick { 3 } else { 7 }
}

fn row(workload: &str, who: &str, n: usize, threads: usize, v: &[f64]) -> ThreadRow {
    ThreadRow {
        workload: workload.to_owned(),
        who: who.to_owned(),
        n,
        threads,
        median_ms: median(v),
        runs: v.len(),
    }
}

/// One step of a structure on `exec`: `update`, then every pair into
/// per-task counters (each [`Padded`] onto its own cache lines: adjacent
/// 16-byte counters written by different cores would share lines),
/// combined in task order. Returns the pairs and the two times.
fn step<G: BroadPhase<Aabb3> + Send + Sync>(
    g: &mut G,
    update: UpdateFn<G>,
    exec: &HostExec,
    boxes: &[Aabb3],
    sinks: &mut Vec<Padded<Pairs>>,
) -> (Pairs, f64, f64) {
    let t0 = Instant::now();
    update(g, exec, boxes);
    let t1 = Instant::now();
    sinks.clear();
    sinks.resize(g.overlap_tasks(), Padded::default());
    g.par_for_each_overlap(exec, sinks, |s, a, b| s.add(a, b))
        .expect("pairs");
    let mut all = Pairs::default();
    for s in sinks.iter() {
        all.count += s.count;
        all.sum = all.sum.wrapping_add(s.sum);
    }
    let t2 = Instant::now();
    (
        all,
        (t1 - t0).as_secs_f64() * 1e3,
        (t2 - t1).as_secs_f64() * 1e3,
    )
}

/// A structure's parallel update of every box.
type UpdateFn<G> = fn(&mut G, &HostExec, &[Aabb3]);

/// The hash grid's update (incremental).
fn hhg_update(g: &mut VecHhg<Aabb3>, exec: &HostExec, boxes: &[Aabb3]) {
    g.par_update_all(exec, boxes, UpdateStrategy::Incremental)
        .expect("update");
}

/// The sorted grid's update.
fn grid_update(g: &mut VecGridBp<Aabb3>, exec: &HostExec, boxes: &[Aabb3]) {
    g.par_update_all(exec, boxes).expect("update");
}

/// The sorted grid's rows: the protocol of the hash grid's (untimed warm-up
/// steps, one checked step per thread count, interleaved timed rounds).
fn grid_rows(
    setup: &Setup,
    base: &BoxScenario<Aabb3>,
    execs: &[HostExec],
    out: &mut Vec<ThreadRow>,
) {
    let n = base.boxes.len();
    let mut sc = base.clone();
    let mut g = make::grid_bp::<Aabb3>(n);
    for (i, b) in sc.boxes.iter().enumerate() {
        g.insert(i as u32, *b).expect("insert");
    }
    for _ in 0..WARM_UP {
        sc.step();
        g.update_all(&sc.boxes).expect("update");
        g.for_each_overlap(|_, _| {}).expect("pairs");
    }
    let mut sinks = Vec::new();
    let mut rig = Rig {
        setup,
        execs,
        sc: &mut sc,
        sinks: &mut sinks,
    };
    rig.rows(&mut g, grid_update, "grid", "spatium grid", out);
}

/// What [`Rig::rows`] steps: the scene, the executors, the sinks.
struct Rig<'a> {
    setup: &'a Setup,
    execs: &'a [HostExec],
    sc: &'a mut BoxScenario<Aabb3>,
    sinks: &'a mut Vec<Padded<Pairs>>,
}

impl Rig<'_> {
    /// After the warm-up: one untimed step per thread count (the pool's
    /// first use), checked against the serial detection; then timed steps
    /// in interleaved rounds (each round steps the scene once per thread
    /// count, so a slow spell of the machine falls on all alike); pushes
    /// the step, update and detection rows of `who`.
    fn rows<G: BroadPhase<Aabb3> + Send + Sync>(
        &mut self,
        g: &mut G,
        update: UpdateFn<G>,
        name: &str,
        who: &str,
        out: &mut Vec<ThreadRow>,
    ) {
        let n = self.sc.boxes.len();
        let threads = &self.setup.threads;
        let mut want = Pairs::default();
        for (exec, &t) in self.execs.iter().zip(threads) {
            self.sc.step();
            let (got, _, _) = step(g, update, exec, &self.sc.boxes, self.sinks);
            want = Pairs::default();
            g.for_each_overlap(|a, b| want.add(a, b)).expect("pairs");
            assert_eq!(got, want, "{name} on {t} threads");
        }
        let mut times = vec![(Vec::new(), Vec::new(), Vec::new()); self.execs.len()];
        for _ in 0..timed_steps(self.setup) {
            for (exec, (total, updated, detect)) in self.execs.iter().zip(times.iter_mut()) {
                self.sc.step();
                let (_, u, d) = step(g, update, exec, &self.sc.boxes, self.sinks);
                total.push(u + d);
                updated.push(u);
                detect.push(d);
            }
        }
        for (&t, (total, update, detect)) in threads.iter().zip(&times) {
            out.push(row("moving cubes: update + all pairs", who, n, t, total));
            out.push(row("moving cubes: update", who, n, t, update));
            out.push(row("moving cubes: all pairs", who, n, t, detect));
            eprintln!(
                "  {name} {n} boxes, {t} threads: step {:.1} ms (update {:.1}, pairs {:.1}), {} pairs at the last check",
                median(total),
                median(update),
                median(detect),
                want.count
            );
        }
    }
}

/// Runs every task on the calling thread, as [`Serial`], and adds up the
/// thread CPU time spent inside its task passes.
#[derive(Default)]
struct InTasks(Mutex<Duration>);

impl InTasks {
    fn take(&self) -> Duration {
        core::mem::take(&mut *self.0.lock().expect("clock"))
    }
}

impl Executor for InTasks {
    fn workers(&self) -> usize {
        1
    }

    fn run<S: Split, F: Fn(usize, S) + Sync>(&self, tasks: usize, parts: S, f: F) {
        let t = ThreadTime::now();
        Serial.run(tasks, parts, f);
        *self.0.lock().expect("clock") += t.elapsed();
    }
}

/// The calling thread's share of the grid's step (see the module docs):
/// `steps` steps, each update and detection timed whole and inside its
/// task passes (thread CPU time); prints the medians and the shares of the
/// sums (the record sort is due every few steps).
fn calling_thread_share(
    g: &mut VecHhg<Aabb3>,
    sc: &mut BoxScenario<Aabb3>,
    steps: usize,
    sinks: &mut Vec<Padded<Pairs>>,
) {
    let exec = InTasks::default();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    // Per step: update whole, update on the calling thread, the same for
    // the detection.
    let mut v: Vec<[f64; 4]> = Vec::new();
    for _ in 0..steps {
        sc.step();
        let t = ThreadTime::now();
        g.par_update_all(&exec, &sc.boxes, UpdateStrategy::Incremental)
            .expect("update");
        let u = ms(t.elapsed());
        let u_serial = u - ms(exec.take());
        sinks.clear();
        sinks.resize(g.overlap_tasks(), Padded::default());
        let t = ThreadTime::now();
        g.par_for_each_overlap(&exec, sinks, |s, a, b| s.add(a, b))
            .expect("pairs");
        let d = ms(t.elapsed());
        let d_serial = d - ms(exec.take());
        v.push([u, u_serial, d, d_serial]);
    }
    let col = |k: usize| v.iter().map(|x| x[k]).collect::<Vec<_>>();
    let sum = |k: usize| col(k).iter().sum::<f64>();
    let cap = |s: f64, w: f64| 1.0 / (s + (1.0 - s) / w);
    let (su, sd) = (sum(1) / sum(0), sum(3) / sum(2));
    let ss = (sum(1) + sum(3)) / (sum(0) + sum(2));
    eprintln!(
        "  hhg calling thread, {steps} steps, thread CPU medians: update {:.1} ms of which {:.1} on the calling thread, pairs {:.1} ms of which {:.1}",
        median(&col(0)),
        median(&col(1)),
        median(&col(2)),
        median(&col(3)),
    );
    eprintln!(
        "  hhg calling-thread shares (sums): update {:.3}, pairs {:.3}, step {:.3}; Amdahl caps at 16 workers {:.2}x, {:.2}x, {:.2}x",
        su,
        sd,
        ss,
        cap(su, 16.0),
        cap(sd, 16.0),
        cap(ss, 16.0)
    );
}

/// Rows for the sorted grid alone (`--only grid`: a quick run of its
/// scaling, the same scene and protocol as in `bp`).
pub fn grid_only(setup: &Setup) -> Vec<ThreadRow> {
    let base: BoxScenario<Aabb3> = moving_cubes(size(setup), 9);
    let execs: Vec<HostExec> = setup.threads.iter().map(|&t| HostExec::new(t)).collect();
    let mut out = Vec::new();
    grid_rows(setup, &base, &execs, &mut out);
    out
}

/// Rows for the hierarchical hash grid, the sorted grid and parry3d's BVH.
pub fn rows(setup: &Setup) -> Vec<ThreadRow> {
    let n = size(setup);
    let steps = timed_steps(setup);
    let cfg = HhgConfig::DEFAULT;
    let base: BoxScenario<Aabb3> = moving_cubes(n, 9);
    let mut out = Vec::new();

    // The grid.
    let mut sc = base.clone();
    let arena = 2 * VecHhg::<Aabb3>::arena_words_for(n, &cfg) + (1 << 16);
    let mut g = make::hhg::<Aabb3>(n, arena, cfg);
    for (i, b) in sc.boxes.iter().enumerate() {
        g.insert(i as u32, *b).expect("insert");
    }
    for _ in 0..WARM_UP {
        sc.step();
        g.update_all(&sc.boxes, UpdateStrategy::Incremental)
            .expect("update");
        g.for_each_overlap(|_, _| {}).expect("pairs");
    }
    let mut sinks = Vec::new();
    let execs: Vec<HostExec> = setup.threads.iter().map(|&t| HostExec::new(t)).collect();
    Rig {
        setup,
        execs: &execs,
        sc: &mut sc,
        sinks: &mut sinks,
    }
    .rows(&mut g, hhg_update, "hhg", "spatium hhg", &mut out);
    calling_thread_share(&mut g, &mut sc, steps.max(6), &mut sinks);
    drop(g);

    // The sorted grid.
    grid_rows(setup, &base, &execs, &mut out);

    // parry3d's BVH, rebuilt each step: serial, then its parallel pairs.
    let mut sc = base;
    let mut bvh = ParryBvh::new(&sc.boxes);
    let workload = "moving cubes: BVH rebuild + all pairs";
    let mut v = Vec::new();
    for k in 0..steps + 1 {
        sc.step();
        let t0 = Instant::now();
        bvh.rebuild(&sc.boxes);
        let mut p = Pairs::default();
        bvh.for_each_overlap(|a, b| p.add(a, b));
        core::hint::black_box(p);
        if k > 0 {
            v.push(t0.elapsed().as_secs_f64() * 1e3);
        }
    }
    out.push(row(workload, "parry3d (serial)", n, 1, &v));
    eprintln!("  parry serial: {:.1} ms", median(&v));
    for &threads in &setup.threads {
        let Ok(pool) = Rayon::new(threads) else {
            continue;
        };
        let mut v = Vec::new();
        for k in 0..steps + 1 {
            sc.step();
            let t0 = Instant::now();
            bvh.rebuild(&sc.boxes);
            let pairs = pool.pool().install(|| bvh.overlaps_parallel());
            core::hint::black_box(pairs.len());
            if k > 0 {
                v.push(t0.elapsed().as_secs_f64() * 1e3);
            }
        }
        out.push(row(workload, "parry3d (parallel pairs)", n, threads, &v));
        eprintln!(
            "  parry parallel pairs, {threads} threads: {:.1} ms",
            median(&v)
        );
    }
    out
}
