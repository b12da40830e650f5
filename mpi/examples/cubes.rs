//! The distributed broad phase on the moving-cubes scenario (the
//! benchmarks' `moving_cubes`): every step each rank moves the cubes it
//! owns (`DistBoxes::update`: migration and, when due, a rebuild of the
//! subdomains), then all overlapping pairs are found (`for_each_pair` with a
//! hierarchical hash grid on each rank). Rank 0 prints ms per step (update
//! and pairs), the pairs found, and per rank the boxes owned, ghosts
//! received, ghost bytes sent and the communication share.
//!
//! ```text
//! mpirun --bind-to none -np 2 target/release/examples/cubes --boxes 100000 --steps 20
//! ```

use std::process::ExitCode;
use std::time::Instant;

use spatium::{Aabb3, BoundingBox, Point, Vec3};
use spatium_host::runtime::{AnyBroad, BroadKind};
use spatium_host::scenarios::moving_cubes;
use spatium_mpi::{Balance, DistBoxes, Ranks};

fn main() -> ExitCode {
    let Some(universe) = mpi::initialize() else {
        eprintln!("MPI could not be initialised");
        return ExitCode::FAILURE;
    };
    let mut ranks = Ranks::new(universe.world());
    let flag = |name: &str, default: usize| -> Result<usize, String> {
        let args: Vec<String> = std::env::args().collect();
        match args.iter().position(|a| a == name) {
            Some(i) => args
                .get(i + 1)
                .ok_or(format!("{name}: missing value"))?
                .parse()
                .map_err(|e| format!("{name}: {e}")),
            None => Ok(default),
        }
    };
    let parsed = flag("--boxes", 100_000).and_then(|n| Ok((n, flag("--steps", 20)?)));
    let (n, steps) = match ranks.agree(parsed) {
        Ok(v) => v,
        Err(e) => {
            if ranks.rank() == 0 {
                eprintln!("error: {}", e.message);
            }
            return ExitCode::from(2);
        }
    };
    match run(&mut ranks, n, steps) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if ranks.rank() == 0 {
                eprintln!("error: {e}");
            }
            ExitCode::FAILURE
        }
    }
}

fn run(ranks: &mut Ranks, n: usize, steps: usize) -> Result<(), String> {
    let err = |e: spatium_mpi::DistError| e.to_string();
    let mut sc = moving_cubes::<Aabb3>(n, 2009);
    let edge = sc
        .boxes
        .iter()
        .map(BoundingBox::longest_edge)
        .fold(0.0f32, f32::max);
    let domain = Aabb3::new(Vec3::ZERO, Vec3::from_fn(|k| sc.extent.coord(k) + edge))
        .map_err(|e| e.to_string())?;
    let mut dist = DistBoxes::new(ranks, domain, Balance::default()).map_err(err)?;
    dist.insert_all(ranks, &sc.boxes).map_err(err)?;
    let mut local = AnyBroad::new(BroadKind::Hhg, &sc.boxes, 1.0).map_err(|e| e.to_string())?;
    // Per step: update ms, pairs ms, ghosts, ghost bytes, comm seconds.
    let mut rows: Vec<[f64; 5]> = Vec::with_capacity(steps);
    let mut pairs = 0u64;
    for _ in 0..steps {
        sc.step();
        let t = Instant::now();
        let boxes = &sc.boxes;
        let up = dist
            .update(ranks, |id, b| *b = boxes[id as usize])
            .map_err(err)?;
        let t_update = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut found = 0u64;
        let report = dist
            .for_each_pair_with(
                ranks,
                &mut local,
                |b| AnyBroad::new(BroadKind::Hhg, b, 1.0),
                |_, _| found += 1,
            )
            .map_err(err)?;
        let t_pairs = t.elapsed().as_secs_f64();
        pairs = ranks.sum_u64(found);
        rows.push([
            1e3 * t_update,
            1e3 * t_pairs,
            report.ghosts as f64,
            report.ghost_bytes as f64,
            up.traffic.seconds + report.traffic.seconds,
        ]);
    }
    // Steady state: the median step of the second half.
    let half = &rows[rows.len() / 2..];
    let median = |k: usize| {
        let mut v: Vec<f64> = half.iter().map(|r| r[k]).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let mine = [
        dist.owned().len() as f64,
        median(0),
        median(1),
        median(2),
        median(3),
        median(4) * 1e3,
    ];
    let all = ranks.all_gather(&mine).map_err(err)?;
    if ranks.rank() == 0 {
        println!(
            "moving cubes: {n} boxes on {} ranks, {steps} steps, {pairs} pairs in the last; medians of steps {}..{steps}:",
            ranks.size(),
            rows.len() / 2 + 1
        );
        println!(
            "| rank | boxes | update ms | pairs ms | step ms | ghosts | ghost KiB | comm ms | comm share |"
        );
        println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (r, v) in all.chunks_exact(mine.len()).enumerate() {
            let step = v[1] + v[2];
            println!(
                "| {r} | {} | {:.1} | {:.1} | {:.1} | {} | {:.0} | {:.1} | {:.1} % |",
                v[0],
                v[1],
                v[2],
                step,
                v[3],
                v[4] / 1024.0,
                v[5],
                100.0 * v[5] / step.max(1e-9)
            );
        }
    }
    Ok(())
}
