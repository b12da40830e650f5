//! The distributed broad phase on 1, 2 and 4 ranks.
//!
//! Run by `cargo test`, this launches itself under `mpirun` for each rank
//! count (and fails loudly when `mpirun` is missing: a skipped check must
//! not pass). Run under `mpirun` (`OMPI_COMM_WORLD_SIZE` set), it runs the
//! checks on this rank:
//!
//! 1. on every box scenario, 3D and 2D, over several steps of moving boxes,
//!    the union of every rank's reported pairs equals the brute-force pair
//!    set, with no pair reported twice, for two kinds of local broad phase;
//! 2. no box is lost or duplicated by migrations or a forced rebalance;
//! 3. a bad input on one rank gives the same error on every rank, and no
//!    hang.

mod common;

use std::process::ExitCode;
use std::time::Instant;

use spatium::{Aabb2, Aabb3, BoundingBox, Point};
use spatium_host::boxes::{overlap, same};
use spatium_host::runtime::{AnyBroad, BroadKind};
use spatium_host::scenarios::{BoxScenario, box_scenarios};
use spatium_mpi::DistBoxes;
use spatium_mpi::{Balance, DistError, Ranks};

/// Boxes per scenario.
const N: usize = 2000;
/// Steps of motion per scenario (the first detection is before any).
const STEPS: usize = 4;

fn main() -> ExitCode {
    if common::under_mpirun() {
        rank_main()
    } else {
        common::launch("broad")
    }
}

// ----- One rank (run by `mpirun`) -----

fn rank_main() -> ExitCode {
    let Some(universe) = mpi::initialize() else {
        eprintln!("FAILED: MPI could not be initialized");
        return ExitCode::FAILURE;
    };
    let mut ranks = Ranks::new(universe.world());
    let me = ranks.rank();
    let start = Instant::now();
    let mut failed = Vec::new();
    let mut check =
        |name: &str, ranks: &mut Ranks, f: &dyn Fn(&mut Ranks) -> Result<(), String>| {
            let t = Instant::now();
            // Every rank learns every rank's verdict, so none goes on alone.
            let local = f(ranks);
            let result = ranks.agree(local).map_err(text);
            if me == 0 {
                println!(
                    "[{} ranks] {name}: {} ({:.2} s)",
                    ranks.size(),
                    if result.is_ok() { "ok" } else { "FAILED" },
                    t.elapsed().as_secs_f64()
                );
            }
            if let Err(e) = result {
                eprintln!("rank {me}: check {name} FAILED: {e}");
                failed.push(name.to_string());
            }
        };
    for (i, sc) in box_scenarios::<Aabb3>(N, 11).into_iter().enumerate() {
        let name = format!("pairs and boxes, {}", sc.name);
        check(&name, &mut ranks, &|r| pairs_and_boxes(r, sc.clone(), i))
    }
    for (i, sc) in box_scenarios::<Aabb2>(N, 23).into_iter().enumerate() {
        let name = format!("pairs and boxes, {}", sc.name);
        check(&name, &mut ranks, &|r| pairs_and_boxes(r, sc.clone(), i))
    }
    check(
        "forced rebalance keeps every box",
        &mut ranks,
        &rebalance_keeps,
    );
    check("bad input on one rank", &mut ranks, &bad_input);
    for seed in [1, 3, 4, 5] {
        let name = format!("random operation sequence, seed {seed}");
        check(&name, &mut ranks, &|r| random_operations(r, seed));
    }
    check("growing local broad phase", &mut ranks, &grows);
    if me == 0 {
        println!(
            "[{} ranks] done in {:.2} s",
            ranks.size(),
            start.elapsed().as_secs_f64()
        );
    }
    drop(ranks);
    drop(universe);
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn text(e: DistError) -> String {
    e.to_string()
}

/// A domain holding every centre of `sc` at every step (lower corners stay
/// in `[0, extent)`).
fn domain_of<B: BoundingBox>(sc: &BoxScenario<B>) -> B {
    let edge = sc
        .boxes
        .iter()
        .map(BoundingBox::longest_edge)
        .fold(0.0f32, f32::max);
    let hi = B::Point::from_fn(|k| sc.extent.coord(k) + edge);
    B::try_new(B::Point::ZERO, hi).expect("valid domain")
}

/// Every overlapping pair `(a, b)`, `a < b`, sorted: a sweep along x,
/// each candidate checked with the independent closed-interval test.
fn brute<B: BoundingBox>(boxes: &[B]) -> Vec<[u32; 2]> {
    let mut order: Vec<u32> = (0..boxes.len() as u32).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (
            boxes[a as usize].min().coord(0),
            boxes[b as usize].min().coord(0),
        );
        a.total_cmp(&b)
    });
    let mut out = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        let bi = &boxes[i as usize];
        for &j in &order[k + 1..] {
            let bj = &boxes[j as usize];
            if bj.min().coord(0) > bi.max().coord(0) {
                break;
            }
            if overlap(bi, bj) {
                out.push([i.min(j), i.max(j)]);
            }
        }
    }
    out.sort_unstable();
    out
}

/// The union of every rank's reported pairs, equal to `expected` (sorted),
/// no pair twice: the same verdict on every rank.
fn compare_pairs(
    ranks: &mut Ranks,
    mine: &[[u32; 2]],
    expected: &[[u32; 2]],
) -> Result<(), String> {
    let mut all = ranks.all_gather(mine).map_err(text)?;
    let verdict = (|| {
        if let Some(p) = all.iter().find(|p| p[0] >= p[1]) {
            return Err(format!("pair {p:?} not (smaller, larger)"));
        }
        all.sort_unstable();
        if let Some(w) = all.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("pair {:?} reported twice", w[0]));
        }
        if all != expected {
            let missing = expected
                .iter()
                .filter(|p| all.binary_search(p).is_err())
                .count();
            let extra = all
                .iter()
                .filter(|p| expected.binary_search(p).is_err())
                .count();
            return Err(format!(
                "{} pairs reported, {} expected: {missing} missing, {extra} extra",
                all.len(),
                expected.len()
            ));
        }
        Ok(())
    })();
    ranks.agree(verdict).map_err(text)
}

/// Every box of `expected` (by id) exactly once over the ranks, bitwise,
/// each on the rank that owns its centre.
fn compare_boxes<B: BoundingBox>(
    ranks: &mut Ranks,
    dist: &DistBoxes<B>,
    expected: &[B],
) -> Result<(), String> {
    let all = dist.gather(ranks).map_err(text)?;
    let mut verdict = if all.len() != expected.len() {
        Err(format!(
            "{} boxes gathered, {} expected",
            all.len(),
            expected.len()
        ))
    } else if let Some((q, i)) = all
        .iter()
        .zip(0u32..)
        .find(|(q, i)| q.id != *i || !same(&q.aabb, &expected[*i as usize]))
    {
        Err(format!("box {i}: found id {} {:?}", q.id, q.aabb))
    } else {
        Ok(())
    };
    if verdict.is_ok() {
        let centres: Vec<B::Point> = dist
            .owned()
            .iter()
            .map(|q| {
                B::Point::from_fn(|k| 0.5 * q.aabb.min().coord(k) + 0.5 * q.aabb.max().coord(k))
            })
            .collect();
        verdict = match dist.subdomains().owners(&centres) {
            Ok(o) if o.iter().all(|&o| o == ranks.rank()) => Ok(()),
            Ok(_) => Err(format!("rank {} holds a box it does not own", ranks.rank())),
            Err(e) => Err(e.to_string()),
        };
    }
    ranks.agree(verdict).map_err(text)
}

/// Check 1 and 2 on one scenario: pairs after each step of motion, for two
/// local broad phases; the boxes after each migration.
fn pairs_and_boxes<B: BoundingBox>(
    ranks: &mut Ranks,
    mut sc: BoxScenario<B>,
    i: usize,
) -> Result<(), String> {
    let domain = domain_of(&sc);
    // A short interval, so that rebuilds happen during the steps.
    let balance = Balance {
        tolerance: 0.05,
        min_interval: 2,
    };
    let mut dist = DistBoxes::new(ranks, domain, balance).map_err(text)?;
    // Added in two batches, to exercise ids from `total` on.
    let half = sc.boxes.len() / 2;
    dist.insert_all(ranks, &sc.boxes[..half]).map_err(text)?;
    dist.insert_all(ranks, &sc.boxes[half..]).map_err(text)?;
    if dist.total() as usize != sc.boxes.len() {
        return Err(format!(
            "total {} after inserting {}",
            dist.total(),
            sc.boxes.len()
        ));
    }
    compare_boxes(ranks, &dist, &sc.boxes)?;
    // Hhg and KdTree everywhere, and a third kind by scenario (the hashes
    // size their pools for the first placement, so they go where that
    // suffices for every step).
    let extra = [
        BroadKind::Multilevel,
        BroadKind::Brute,
        BroadKind::Hierarchical,
        BroadKind::Brute,
    ];
    let kinds = [BroadKind::Hhg, BroadKind::KdTree, extra[i % extra.len()]];
    let mut locals = Vec::new();
    for kind in kinds {
        locals.push(AnyBroad::new(kind, &sc.boxes, 1.0).map_err(|e| e.to_string())?);
    }
    let mut reported = 0usize;
    for step in 0..=STEPS {
        if step > 0 {
            sc.step();
            let boxes = &sc.boxes;
            dist.update(ranks, |id, b| {
                if let Some(n) = boxes.get(id as usize) {
                    *b = *n;
                }
            })
            .map_err(text)?;
            compare_boxes(ranks, &dist, &sc.boxes)?;
        }
        let expected = brute(&sc.boxes);
        for local in &mut locals {
            let mut mine = Vec::new();
            let report = dist
                .for_each_pair(ranks, local, |a, b| mine.push([a, b]))
                .map_err(text)?;
            if report.pairs != mine.len() || report.owned != dist.owned().len() {
                return Err(format!(
                    "report {report:?} disagrees with {} pairs",
                    mine.len()
                ));
            }
            reported += mine.len();
            compare_pairs(ranks, &mine, &expected)
                .map_err(|e| format!("step {step}, {:?}: {e}", local.kind()))?;
        }
    }
    let total = ranks.sum_u64(reported as u64);
    if total == 0 {
        return Err("no pairs at all: the scenario tests nothing".into());
    }
    Ok(())
}

/// Check 2: a forced rebalance after moving every box into one corner
/// moves them all to new owners and loses none; a second one after
/// spreading them again too.
fn rebalance_keeps(ranks: &mut Ranks) -> Result<(), String> {
    let sc = box_scenarios::<Aabb3>(N, 5).swap_remove(0);
    let domain = domain_of(&sc);
    // Never rebuilt by the load check: only the forced rebalances.
    let balance = Balance {
        tolerance: 1e9,
        min_interval: u64::MAX,
    };
    let mut dist = DistBoxes::new(ranks, domain, balance).map_err(text)?;
    dist.insert_all(ranks, &sc.boxes).map_err(text)?;
    let squeezed: Vec<Aabb3> = sc
        .boxes
        .iter()
        .map(|b| {
            let lo = b.min() * 0.1;
            Aabb3::new(lo, lo + (b.max() - b.min())).expect("valid box")
        })
        .collect();
    let mut current = squeezed.clone();
    let report = dist
        .update(ranks, |id, b| *b = squeezed[id as usize])
        .map_err(text)?;
    compare_boxes(ranks, &dist, &current)?;
    let left = dist.rebalance(ranks).map_err(text)?;
    compare_boxes(ranks, &dist, &current)?;
    let counts = ranks.gather_u64(dist.owned().len() as u64);
    let (lo, hi) = (
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    );
    if hi > lo + 2 {
        return Err(format!("rebalanced counts {counts:?}"));
    }
    let moved = ranks.sum_u64(left as u64);
    if ranks.size() > 1 && moved == 0 {
        return Err(format!(
            "rebalance moved nothing (update moved {})",
            report.migrated
        ));
    }
    current.clone_from(&sc.boxes);
    dist.update(ranks, |id, b| *b = sc.boxes[id as usize])
        .map_err(text)?;
    compare_boxes(ranks, &dist, &current)?;
    dist.rebalance(ranks).map_err(text)?;
    compare_boxes(ranks, &dist, &current)?;
    let mut local = AnyBroad::new(BroadKind::Hhg, &current, 1.0).map_err(|e| e.to_string())?;
    let mut mine = Vec::new();
    dist.for_each_pair(ranks, &mut local, |a, b| mine.push([a, b]))
        .map_err(text)?;
    compare_pairs(ranks, &mine, &brute(&current))
}

/// `result` must be the same error on every rank, from `rank`.
fn expect_error<T>(
    ranks: &mut Ranks,
    what: &str,
    result: Result<T, DistError>,
    rank: u32,
) -> Result<(), String> {
    let local = match result {
        Ok(_) => Err(format!("{what}: no error")),
        Err(e) if e.rank != rank => {
            Err(format!("{what}: error of rank {}, not {rank}: {e}", e.rank))
        }
        Err(e) => Ok(e),
    };
    let e = ranks.agree(local).map_err(text)?;
    // The same message on every rank: compare every rank's bytes.
    let bytes = e.message.as_bytes();
    let all = ranks.all_gather(bytes).map_err(text)?;
    let verdict = if all.len() == bytes.len() * ranks.size() as usize
        && all.chunks(bytes.len().max(1)).all(|c| c == bytes)
    {
        Ok(())
    } else {
        Err(format!(
            "{what}: ranks disagree on the message {:?}",
            e.message
        ))
    };
    ranks.agree(verdict).map_err(text)
}

/// Check 3: a bad input on the last rank only.
fn bad_input(ranks: &mut Ranks) -> Result<(), String> {
    let sc = box_scenarios::<Aabb3>(N / 4, 7).swap_remove(0);
    let domain = domain_of(&sc);
    let last = ranks.size() - 1;
    let me = ranks.rank();
    let mut dist = DistBoxes::new(ranks, domain, Balance::default()).map_err(text)?;
    dist.insert_all(ranks, &sc.boxes).map_err(text)?;
    let has = ranks.agree(if dist.owned().is_empty() {
        Err(format!("rank {me} owns no box: the check needs some"))
    } else {
        Ok(())
    });
    has.map_err(text)?;

    // A NaN box in an update.
    let r = dist.update(ranks, |_, b| {
        if me == last {
            *b = Aabb3::NAN;
        }
    });
    expect_error(ranks, "NaN box in update", r, last)?;
    compare_boxes(ranks, &dist, &sc.boxes)?;

    // An inverted box.
    let r = dist.update(ranks, |_, b| {
        if me == last {
            *b = Aabb3 {
                min: b.max,
                max: b.min - spatium::Vec3::new(1.0, 1.0, 1.0),
            };
        }
    });
    expect_error(ranks, "inverted box in update", r, last)?;
    compare_boxes(ranks, &dist, &sc.boxes)?;

    // A box moved outside the domain.
    let r = dist.update(ranks, |_, b| {
        if me == last {
            *b = Aabb3 {
                min: b.min + domain.max * 3.0,
                max: b.max + domain.max * 3.0,
            };
        }
    });
    expect_error(ranks, "box outside the domain in update", r, last)?;
    compare_boxes(ranks, &dist, &sc.boxes)?;

    // A list that differs on the last rank: an infinite box there.
    let mut extra = vec![sc.boxes[0]; 3];
    if me == last {
        extra[1] = Aabb3 {
            min: spatium::Vec3::new(0.0, 0.0, 0.0),
            max: spatium::Vec3::new(f32::INFINITY, 1.0, 1.0),
        };
    }
    let r = dist.insert_all(ranks, &extra);
    expect_error(ranks, "infinite box in insert_all", r, last)?;
    if dist.total() as usize != sc.boxes.len() {
        return Err(format!("{} boxes after a failed insert", dist.total()));
    }
    compare_boxes(ranks, &dist, &sc.boxes)?;

    // A local broad phase too small on the last rank only.
    let mut local = if me == last {
        AnyBroad::new(BroadKind::Brute, &[], 1.0)
    } else {
        AnyBroad::new(BroadKind::Brute, &sc.boxes, 1.0)
    }
    .map_err(|e| e.to_string())?;
    let mut calls = 0usize;
    let r = dist.for_each_pair(ranks, &mut local, |_, _| calls += 1);
    expect_error(ranks, "local broad phase too small", r, last)?;
    if calls != 0 {
        return Err(format!("{calls} pairs reported by a failed detection"));
    }

    // And everything still works afterwards, with no hang.
    let mut local = AnyBroad::new(BroadKind::KdTree, &sc.boxes, 1.0).map_err(|e| e.to_string())?;
    let mut mine = Vec::new();
    dist.for_each_pair(ranks, &mut local, |a, b| mine.push([a, b]))
        .map_err(text)?;
    compare_pairs(ranks, &mine, &brute(&sc.boxes))
}

/// `for_each_pair_with` grows an empty local broad phase; points as boxes
/// (`e == 0`), including duplicates and points on the subdomains' faces.
fn grows(ranks: &mut Ranks) -> Result<(), String> {
    let mut sc = box_scenarios::<Aabb2>(N / 2, 3).swap_remove(0);
    let domain = domain_of(&sc);
    let mut dist = DistBoxes::new(ranks, domain, Balance::default()).map_err(text)?;
    dist.insert_all(ranks, &sc.boxes).map_err(text)?;
    let mut local = AnyBroad::new(BroadKind::Hhg, &[], 1.0).map_err(|e| e.to_string())?;
    let mut mine = Vec::new();
    dist.for_each_pair_with(
        ranks,
        &mut local,
        |b| AnyBroad::new(BroadKind::Hhg, b, 1.0),
        |a, b| mine.push([a, b]),
    )
    .map_err(text)?;
    compare_pairs(ranks, &mine, &brute(&sc.boxes))?;

    // Points on a coarse lattice (so many are equal and many lie on cuts).
    for b in &mut sc.boxes {
        let p = spatium::Vec2::new(b.min.x.round(), b.min.y.round());
        *b = Aabb2::new(p, p).expect("valid box");
    }
    let boxes = sc.boxes.clone();
    dist.update(ranks, |id, b| *b = boxes[id as usize])
        .map_err(text)?;
    dist.rebalance(ranks).map_err(text)?;
    let mut local = AnyBroad::new(BroadKind::KdTree, &[], 1.0).map_err(|e| e.to_string())?;
    let mut mine = Vec::new();
    let report = dist
        .for_each_pair_with(
            ranks,
            &mut local,
            |b| AnyBroad::new(BroadKind::KdTree, b, 1.0),
            |a, b| mine.push([a, b]),
        )
        .map_err(text)?;
    if !(report.radius > 0.0 && report.radius < 1e-3) {
        return Err(format!("radius {} for points", report.radius));
    }
    let expected = brute(&sc.boxes);
    if ranks.sum_u64(expected.len() as u64) == 0 {
        return Err("no equal points: the check tests nothing".into());
    }
    compare_pairs(ranks, &mine, &expected)
}

/// A random sequence of the distributed broad phase's operations (seeded:
/// every rank draws the same), checked against a model that is the global
/// list of boxes: inserting batches, moving a random subset of the boxes
/// (each rank changes those it owns), forcing a rebalance, and detecting
/// pairs with a random local broad phase; after each operation the boxes
/// gathered from all ranks equal the model, and each detection's pairs
/// equal the brute force over the model.
fn random_operations(ranks: &mut Ranks, seed: u64) -> Result<(), String> {
    let mut rng = spatium_host::Rng::new(seed);
    let domain = Aabb3::new(spatium::Vec3::ZERO, spatium::Vec3::new(10.0, 10.0, 10.0))
        .map_err(|e| e.to_string())?;
    let balance = Balance {
        tolerance: 0.05,
        min_interval: 1,
    };
    let mut dist = DistBoxes::new(ranks, domain, balance).map_err(text)?;
    let mut model: Vec<Aabb3> = Vec::new();
    let random_box = |rng: &mut spatium_host::Rng| {
        let half = rng.range(0.05, 1.2);
        let c = spatium::Vec3::new(
            rng.range(0.0, 10.0),
            rng.range(0.0, 10.0),
            rng.range(0.0, 10.0),
        );
        let h = spatium::Vec3::new(half, half * rng.range(0.2, 1.0), half);
        // Centres stay in the domain; boxes may stick out of it.
        Aabb3::new(c - h, c + h).expect("valid box")
    };
    let kinds = [BroadKind::Hhg, BroadKind::KdTree, BroadKind::Brute];
    let (mut detections, mut pairs) = (0usize, 0usize);
    for op in 0..40 {
        match rng.below(4) {
            0 => {
                let n = 1 + rng.below(300);
                let batch: Vec<Aabb3> = (0..n).map(|_| random_box(&mut rng)).collect();
                dist.insert_all(ranks, &batch).map_err(text)?;
                model.extend(batch);
            }
            1 => {
                let moves: Vec<(u32, Aabb3)> = (0..model.len() / 3)
                    .map(|_| (rng.below(model.len().max(1)) as u32, random_box(&mut rng)))
                    .collect();
                for &(id, b) in &moves {
                    model[id as usize] = b;
                }
                let latest = |id: u32| moves.iter().rev().find(|m| m.0 == id).map(|m| m.1);
                dist.update(ranks, |id, b| {
                    if let Some(nb) = latest(id) {
                        *b = nb;
                    }
                })
                .map_err(text)?;
            }
            2 => {
                dist.rebalance(ranks).map_err(text)?;
            }
            _ => {
                let kind = kinds[rng.below(kinds.len())];
                let mut local = AnyBroad::new(kind, &model, 1.0).map_err(|e| e.to_string())?;
                let mut mine = Vec::new();
                dist.for_each_pair_with(
                    ranks,
                    &mut local,
                    |boxes| AnyBroad::new(kind, boxes, 1.0),
                    |a, b| mine.push([a, b]),
                )
                .map_err(text)?;
                let expected = brute(&model);
                compare_pairs(ranks, &mine, &expected)
                    .map_err(|e| format!("op {op} ({kind:?}): {e}"))?;
                detections += 1;
                pairs += expected.len();
            }
        }
        compare_boxes(ranks, &dist, &model).map_err(|e| format!("op {op}: {e}"))?;
    }
    if ranks.rank() == 0 {
        println!(
            "  {} boxes at the end, {detections} detections, {pairs} pairs checked, {} rebuilds",
            model.len(),
            dist.subdomains().rebuilds()
        );
    }
    Ok(())
}
