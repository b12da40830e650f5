//! Quick per-phase probe of the linear kd-tree on uniformly placed spheres
//! (the setting of Poirrier's Table 1) — a development aid; `kd_report` is
//! the reference. Build and sweeps in thread CPU time
//! ([`spatium_benches::measure::time`]); the build's phases by CPU-time
//! marks inside it ([`spatium_benches::measure::Stopwatch`]).
//!
//! ```text
//! cargo run --release -p spatium-benches --bin kd_step -- N [density] [u32|u64] [gain|none] [bits]
//! cargo run --release -p spatium-benches --bin kd_step -- settle N [u32|u64] [gain|none] [from] [steps]
//! ```
//!
//! `settle`: the settling spheres of [`spatium_benches::settle`] (the
//! report's scene), run to step `from` (default 40); then, for each of the
//! next `steps` steps (default 11), one tree (buffers of 8 records per box,
//! kept across steps) is built on the step's boxes and swept for exact
//! pairs. Prints the medians over those steps of the build (and its
//! phases), the sweep and their sum (thread CPU time). `KD_SNAP=path`
//! keeps the steps' boxes in a file (read when present), `KD_BITS=b` fixes
//! the bits per axis, `KD_RAW=1` also
//! counts the last step's raw candidates. `KD_PARRY=1` then times parry's
//! `Bvh` on the same snapshots in the same run, as the report's "parry
//! refit" does ([`spatium_benches::bp_peers::ParryBvh`]): built on the
//! first snapshot (untimed), then per later snapshot a refit and its
//! overlapping pairs; the median over those steps (steps 1 to `steps − 1`
//! after its build: a refitted tree slows as the boxes move, so early steps
//! favour parry over the report's steps 10–30) and the last step's pair
//! count, which must equal the kd-tree's.

use spatium::Inspect;
use spatium::kdtree::{BuildPhase, Candidates, KdConfig, KdRecord, LinearKdTree, LocCode, Split};
use spatium::{Aabb3, Vec3};
use spatium_benches::measure::{Stopwatch, median, time};
use spatium_host::rng::Rng;

fn spheres(n: usize, d: f64, seed: u64) -> Vec<Aabb3> {
    let side = (n as f64 * 4.0 / 3.0 * core::f64::consts::PI / d).cbrt() as f32;
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            let c = Vec3::new(
                rng.range(0.0, side),
                rng.range(0.0, side),
                rng.range(0.0, side),
            );
            Aabb3::new(
                Vec3::new(c.x - 1.0, c.y - 1.0, c.z - 1.0),
                Vec3::new(c.x + 1.0, c.y + 1.0, c.z + 1.0),
            )
            .expect("finite")
        })
        .collect()
}

fn run<K: LocCode>(boxes: &[Aabb3], config: KdConfig<Aabb3>) {
    let n = boxes.len();
    let mut t = LinearKdTree::<Aabb3, K, _>::new(
        vec![KdRecord::<K>::EMPTY; 8 * n],
        vec![KdRecord::<K>::EMPTY; 8 * n],
        config,
    );
    let mut builds = Vec::new();
    for rep in 0..3 {
        let t0 = Stopwatch::start();
        let mut marks = Vec::new();
        let ((), built) = time(|| {
            t.build_observed(boxes, |p| marks.push((p, t0.elapsed().cpu_ms())))
                .expect("build")
        });
        builds.push(built.cpu_ms());
        let (raw, swept) = time(|| t.count_raw());
        let (exact, ex) = time(|| {
            let mut exact = 0u64;
            t.for_each_candidate_pair(boxes, Candidates::Exact, |_, _| exact += 1)
                .expect("sweep");
            exact
        });
        let phase = |p: BuildPhase| marks.iter().find(|m| m.0 == p).map(|m| m.1).unwrap_or(0.0);
        let s = t.stats();
        println!(
            "rep {rep}: K=u{} bits {} records {:.2}/elem split {} | validate {:.1} codes {:.1} sort {:.1} (passes {}) | CPU: build {:.1} ms | raw sweep {:.1} ms ({} = {:.1}/elem) | exact sweep {:.1} ms ({} pairs)",
            K::BITS,
            s.bits_per_axis,
            s.records as f64 / n as f64,
            s.split_elements,
            phase(BuildPhase::Validated),
            phase(BuildPhase::Coded) - phase(BuildPhase::Validated),
            phase(BuildPhase::Sorted) - phase(BuildPhase::Coded),
            s.sort_passes,
            built.cpu_ms(),
            swept.cpu_ms(),
            raw,
            raw as f64 / n as f64,
            ex.cpu_ms(),
            exact
        );
    }
    println!("median build {:.1} ms CPU", median(&builds));
}

/// The boxes of the settling scene's steps `from + 1 ..= from + steps`.
/// With `KD_SNAP=path`, they are read from `path` when it exists (and
/// written there otherwise), so that repeated probes skip the simulation.
fn settle_snaps(n: usize, from: usize, steps: usize) -> Vec<Vec<Aabb3>> {
    let snap = std::env::var_os("KD_SNAP").map(|p| {
        let mut p = std::path::PathBuf::from(p);
        p.as_mut_os_string().push(format!("-{n}-{from}-{steps}"));
        p
    });
    if let Some(bytes) = snap.as_ref().and_then(|p| std::fs::read(p).ok())
        && bytes.len() == n * steps * 24
    {
        let f = |i: usize| f32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4"));
        return (0..steps)
            .map(|s| {
                (0..n)
                    .map(|b| {
                        let o = 6 * (s * n + b);
                        Aabb3::new(
                            Vec3::new(f(o), f(o + 1), f(o + 2)),
                            Vec3::new(f(o + 3), f(o + 4), f(o + 5)),
                        )
                        .expect("finite")
                    })
                    .collect()
            })
            .collect();
    }
    let mut sim = spatium_benches::settle::Settle::paper(n)
        .with_pair_source(spatium_benches::settle::PairSource::RawDedup);
    sim.advance_to(from);
    let mut out = Vec::new();
    for _ in 0..steps {
        sim.step();
        out.push(sim.boxes().to_vec());
    }
    if let Some(p) = snap {
        let mut bytes = Vec::with_capacity(n * steps * 24);
        for b in out.iter().flatten() {
            for v in [b.min.x, b.min.y, b.min.z, b.max.x, b.max.y, b.max.z] {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
        }
        std::fs::write(&p, bytes).expect("snapshot");
    }
    out
}

fn settle_run<K: LocCode>(n: usize, config: KdConfig<Aabb3>, from: usize, steps: usize) {
    let snaps = settle_snaps(n, from, steps);
    let mut t = LinearKdTree::<Aabb3, K, _>::new(
        vec![KdRecord::<K>::EMPTY; 8 * n],
        vec![KdRecord::<K>::EMPTY; 8 * n],
        config,
    );
    let (mut builds, mut sweeps, mut totals) = (Vec::new(), Vec::new(), Vec::new());
    let mut phases = [Vec::new(), Vec::new(), Vec::new()];
    let mut pairs = 0u64;
    for boxes in &snaps {
        let clock = Stopwatch::start();
        let mut marks = [0f64; 3];
        let ((), built) = time(|| {
            t.build_observed(boxes, |p| {
                let e = clock.elapsed().cpu_ms();
                match p {
                    BuildPhase::Validated => marks[0] = e,
                    BuildPhase::Coded => marks[1] = e,
                    BuildPhase::Sorted => marks[2] = e,
                }
            })
            .expect("build")
        });
        let (p, swept) = time(|| {
            let mut p = 0u64;
            t.for_each_candidate_pair(boxes, Candidates::Exact, |_, _| p += 1)
                .expect("sweep");
            p
        });
        pairs = p;
        phases[0].push(marks[0]);
        phases[1].push(marks[1] - marks[0]);
        phases[2].push(marks[2] - marks[1]);
        builds.push(built.cpu_ms());
        sweeps.push(swept.cpu_ms());
        totals.push(built.cpu_ms() + swept.cpu_ms());
    }
    let s = t.stats();
    let raw = if std::env::var_os("KD_RAW").is_some() {
        t.count_raw()
    } else {
        0
    };
    println!(
        "settle N={n} K=u{} steps {}..{} bits {} records {:.2}/elem: build {:.1} ms (validate {:.1}, codes {:.1}, sort+copies {:.1}), exact sweep {:.1} ms, total {:.1} ms = {:.0} ns/elem ({pairs} pairs, raw {raw}, buffers {:.1} B/elem at cap = records)",
        K::BITS,
        from + 1,
        from + steps,
        s.bits_per_axis,
        s.records as f64 / n as f64,
        median(&builds),
        median(&phases[0]),
        median(&phases[1]),
        median(&phases[2]),
        median(&sweeps),
        median(&totals),
        median(&totals) * 1e6 / n as f64,
        2.0 * s.records as f64 * size_of::<KdRecord<K>>() as f64 / n as f64,
    );
    if std::env::var_os("KD_PARRY").is_some() && snaps.len() > 1 {
        let mut bvh = spatium_benches::bp_peers::ParryBvh::new(&snaps[0]);
        let mut refits = Vec::new();
        let mut last = 0u64;
        for boxes in &snaps[1..] {
            let (p, t) = time(|| {
                bvh.refit(boxes);
                let mut p = 0u64;
                bvh.for_each_overlap(|_, _| p += 1);
                p
            });
            last = p;
            refits.push(t.cpu_ms());
        }
        println!(
            "parry refit + pairs: median {:.1} ms over steps {}..{} (built on step {}), last step {last} pairs (kd: {pairs}){}",
            median(&refits),
            from + 2,
            from + steps,
            from + 1,
            if last == pairs { "" } else { " MISMATCH" },
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("settle") {
        let n: usize = args
            .get(2)
            .and_then(|s| s.parse().ok())
            .unwrap_or(1_000_000);
        let split = match args.get(4).map(String::as_str) {
            Some("none") => Split::None,
            Some(g) => Split::Volume {
                min_gain_log2: g.parse().unwrap_or(0),
            },
            None => Split::DEFAULT,
        };
        let from = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(40);
        let steps = args.get(6).and_then(|s| s.parse().ok()).unwrap_or(11);
        // `KD_BITS=b`: bits per axis (default: chosen from the scene).
        let bits: u8 = std::env::var("KD_BITS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let config = KdConfig::DEFAULT
            .with_split(split)
            .expect("split")
            .with_bits_per_axis(bits);
        match args.get(3).map(String::as_str) {
            Some("u32") => settle_run::<u32>(n, config, from, steps),
            _ => settle_run::<u64>(n, config, from, steps),
        }
        return;
    }
    let n: usize = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let d: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0.1);
    let k = args.get(3).map(String::as_str).unwrap_or("u64");
    let split = match args.get(4).map(String::as_str) {
        Some("none") => Split::None,
        Some(g) => Split::Volume {
            min_gain_log2: g.parse().unwrap_or(0),
        },
        None => Split::DEFAULT,
    };
    let bits: u8 = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut boxes = spheres(n, d, 7);
    if std::env::var_os("KD_SORTED_IDS").is_some() {
        // Ids in the tree's own spatial order: what a simulation gets by
        // renumbering its elements once in a while.
        let mut t = LinearKdTree::<Aabb3, u64, _>::new(
            vec![KdRecord::<u64>::EMPTY; n],
            vec![KdRecord::<u64>::EMPTY; n],
            KdConfig::DEFAULT.with_split(Split::None).expect("split"),
        );
        t.build(&boxes).expect("build");
        boxes = t.records().iter().map(|r| boxes[r.id() as usize]).collect();
    }
    let config = KdConfig::DEFAULT
        .with_split(split)
        .expect("split")
        .with_bits_per_axis(bits);
    match k {
        "u32" => run::<u32>(&boxes, config),
        "u128" => run::<u128>(&boxes, config),
        _ => run::<u64>(&boxes, config),
    }
}
