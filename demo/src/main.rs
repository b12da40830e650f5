//! spatium's main job (until the SPH scene lands): a jittered fluid block
//! whose particles drift each step; every strategy of the uniform hash finds
//! all neighbour pairs and CSR lists, checked against each other, and a
//! timing table is printed.

use std::process::ExitCode;
use std::time::Instant;

use spatium::uniform::table_len_with_factor;
use spatium::{NeighborSearch, Vec3};
use spatium_host_tests::scenarios::fluid_block;
use spatium_host_tests::{Rng, make};

const USAGE: &str = "usage: spatium-demo [--n PARTICLES] [--steps STEPS] [--strategy sorted|bucketed|linked|all] [--table-factor F]
  --n             particle count, rounded to a cube (default 262144)
  --steps         simulation steps (default 10)
  --strategy      which uniform-hash strategy to run (default all)
  --table-factor  table slots per particle, rounded up to a power of two (default 2)";

struct Args {
    n: usize,
    steps: usize,
    strategy: String,
    factor: usize,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        n: 262_144,
        steps: 10,
        strategy: "all".into(),
        factor: 2,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "--n" => a.n = num(&value("--n")?, "--n")?,
            "--steps" => a.steps = num(&value("--steps")?, "--steps")?,
            "--strategy" => a.strategy = value("--strategy")?,
            "--table-factor" => a.factor = num(&value("--table-factor")?, "--table-factor")?,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    if !["sorted", "bucketed", "linked", "all"].contains(&a.strategy.as_str()) {
        return Err(format!("unknown strategy {:?}", a.strategy));
    }
    if a.n < 8 || a.n > 20_000_000 {
        return Err("--n must be in 8..=20000000".into());
    }
    if a.factor == 0 || a.factor > 128 {
        return Err("--table-factor must be in 1..=128".into());
    }
    Ok(a)
}

fn num(s: &str, name: &str) -> Result<usize, String> {
    s.parse()
        .map_err(|_| format!("{name}: {s:?} is not a non-negative integer"))
}

#[derive(Default)]
struct Row {
    build: f64,
    pairs: f64,
    csr: f64,
    count: usize,
}

/// Counts every pair once; returns the count and the seconds it took.
fn timed_pairs(h: &impl NeighborSearch<Vec3>) -> (usize, f64) {
    let t = Instant::now();
    let mut c = 0usize;
    h.for_each_pair(|_, _, _| c += 1);
    (c, t.elapsed().as_secs_f64())
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(if e.is_empty() { 0 } else { 2 });
        }
    };
    let side = (args.n as f64).cbrt().round().max(2.0) as usize;
    let scene = fluid_block::<Vec3>(side, 0.5, 0.3, 42);
    let n = scene.points.len();
    let table = table_len_with_factor(n, args.factor);
    println!(
        "spatium demo: jittered fluid block, {n} particles, radius {}, {} steps, table {table} slots",
        scene.radius, args.steps
    );
    let mut rng = Rng::new(7);
    let mut pts = scene.points.clone();
    rng.shuffle(&mut pts);

    let want = |s: &str| args.strategy == "all" || args.strategy == s;
    let mut sorted = want("sorted").then(|| make::cell_sorted::<Vec3>(n, table));
    let mut bucketed = want("bucketed").then(|| make::bucketed::<Vec3, 64>(n, table));
    let mut linked = want("linked").then(|| make::linked::<Vec3>(n, table));
    let (mut rs, mut rb, mut rl) = (Row::default(), Row::default(), Row::default());
    let mut offsets = vec![0u32; n + 1];
    let mut indices = vec![0u32; 40 * n];
    let r = scene.radius;

    for step in 0..args.steps {
        let mut counts = Vec::new();
        if let Some(h) = sorted.as_mut() {
            let t = Instant::now();
            h.build(&pts, r).expect("build");
            rs.build += t.elapsed().as_secs_f64();
            let (c, secs) = timed_pairs(h);
            rs.pairs += secs;
            let t = Instant::now();
            let w = h
                .neighbor_lists(&mut offsets, &mut indices)
                .expect("csr buffers");
            rs.csr += t.elapsed().as_secs_f64();
            assert_eq!(w, 2 * c);
            rs.count = c;
            counts.push(c);
            if step == 0 {
                println!(
                    "cell-sorted: {} occupied cells, {} share a table slot",
                    h.occupied_cells(),
                    h.colliding_cells()
                );
                // Keep the particles in cell order for the next steps.
                let mut reordered = pts.clone();
                h.reorder(&pts, &mut reordered).expect("same length");
                pts = reordered;
            }
        }
        if let Some(h) = bucketed.as_mut() {
            let t = Instant::now();
            if let Err(e) = h.build(&pts, r) {
                eprintln!("bucketed: {e} (raise the bucket size or the table length)");
                return ExitCode::FAILURE;
            }
            rb.build += t.elapsed().as_secs_f64();
            let (c, secs) = timed_pairs(h);
            rb.pairs += secs;
            rb.count = c;
            counts.push(c);
        }
        if let Some(h) = linked.as_mut() {
            let t = Instant::now();
            if step == 0 || h.len() != pts.len() {
                h.build(&pts, r).expect("build");
            } else {
                h.update(&pts).expect("update");
            }
            rl.build += t.elapsed().as_secs_f64();
            let (c, secs) = timed_pairs(h);
            rl.pairs += secs;
            rl.count = c;
            counts.push(c);
        }
        if counts.windows(2).any(|w| w[0] != w[1]) {
            eprintln!("strategies disagree at step {step}: {counts:?}");
            return ExitCode::FAILURE;
        }
        // Drift: every particle moves up to 10 % of the radius per axis.
        for p in &mut pts {
            p.x += rng.range(-0.1, 0.1) * r;
            p.y += rng.range(-0.1, 0.1) * r;
            p.z += rng.range(-0.1, 0.1) * r;
        }
    }

    let per = |secs: f64| secs * 1e9 / (args.steps * n) as f64;
    println!();
    println!(
        "| strategy | build / update (ns/particle) | all pairs (ns/particle) | CSR lists (ns/particle) | pairs |"
    );
    println!("|---|---:|---:|---:|---:|");
    if sorted.is_some() {
        println!(
            "| cell-sorted | {:.1} | {:.1} | {:.1} | {} |",
            per(rs.build),
            per(rs.pairs),
            per(rs.csr),
            rs.count
        );
    }
    if bucketed.is_some() {
        println!(
            "| bucketed (K=64) | {:.1} | {:.1} | - | {} |",
            per(rb.build),
            per(rb.pairs),
            rb.count
        );
    }
    if linked.is_some() {
        println!(
            "| linked (incremental update) | {:.1} | {:.1} | - | {} |",
            per(rl.build),
            per(rl.pairs),
            rl.count
        );
    }
    println!(
        "\nmean neighbours per particle: {:.1}",
        2.0 * rs.count.max(rb.count).max(rl.count) as f64 / n as f64
    );
    ExitCode::SUCCESS
}
