//! Criterion benchmarks of the broad phase: one step (update every box, then
//! every overlapping pair) of the paper's moving cubes at 10⁴ boxes, the
//! hierarchical hash grid against sweep and prune, parry3d's `Bvh` (refit
//! and rebuild) and brute force. Ids: `step/10000/IMPLEMENTATION`.
//!
//! Before timing, every implementation's pair count after one step is
//! checked against the hierarchical hash grid's; a mismatch panics. The full
//! comparison (10² to 10⁶, the paper's §4) is the `bp_report` binary.

use core::hint::black_box;
use core::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use spatium::{Aabb3, BroadPhase, BruteForceBroadPhase, HhgConfig, UpdateStrategy};
use spatium_benches::bp_peers::{ParryBvh, SweepAndPrune};
use spatium_host_tests::make;
use spatium_host_tests::scenarios::moving_cubes;

const N: usize = 10_000;

fn bench(c: &mut Criterion) {
    let mut sc = moving_cubes::<Aabb3>(N, 3);
    let start = sc.boxes.clone();
    sc.step();
    let moved = sc.boxes.clone();
    let cfg = HhgConfig::DEFAULT;

    let mut g = make::hhg::<Aabb3>(N, 2 * cfg.arena_words_for::<Aabb3>(N), cfg);
    for (i, b) in start.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    let mut sap = SweepAndPrune::new_sorted(&start);
    let mut refit = ParryBvh::new(&start);
    let mut rebuild = ParryBvh::new(&start);
    let mut brute = BruteForceBroadPhase::new(make::brute_slots::<Aabb3>(N));
    for (i, b) in start.iter().enumerate() {
        brute.insert(i as u32, *b).unwrap();
    }

    // Alternate between the two box sets so every iteration really moves.
    let sets = [&start, &moved];
    let mut check = Vec::new();
    let mut k = 0usize;
    let mut step_hhg = |k: usize| {
        g.update_all(sets[k % 2], UpdateStrategy::Incremental)
            .unwrap();
        let mut n = 0u64;
        g.for_each_pair(|_, _| n += 1).unwrap();
        n
    };
    check.push(("hhg", step_hhg(1)));
    assert_eq!(
        check.last().unwrap().1,
        check[0].1,
        "hhg disagrees with hhg"
    );
    let mut grp = c.benchmark_group(format!("step/{N}"));
    grp.sample_size(20).measurement_time(Duration::from_secs(3));
    grp.bench_function("hhg", |b| {
        b.iter(|| {
            k += 1;
            black_box(step_hhg(k))
        })
    });
    let mut step_sap = |k: usize| {
        sap.update(sets[k % 2]);
        let mut n = 0u64;
        sap.for_each_pair(|_, _| n += 1);
        n
    };
    check.push(("sap", step_sap(1)));
    assert_eq!(
        check.last().unwrap().1,
        check[0].1,
        "sap disagrees with hhg"
    );
    grp.bench_function("sap", |b| {
        b.iter(|| {
            k += 1;
            black_box(step_sap(k))
        })
    });
    let mut step_refit = |k: usize| {
        refit.refit(sets[k % 2]);
        let mut n = 0u64;
        refit.for_each_pair(|_, _| n += 1);
        n
    };
    check.push(("parry-refit", step_refit(1)));
    assert_eq!(
        check.last().unwrap().1,
        check[0].1,
        "parry-refit disagrees with hhg"
    );
    grp.bench_function("parry-refit", |b| {
        b.iter(|| {
            k += 1;
            black_box(step_refit(k))
        })
    });
    let mut step_rebuild = |k: usize| {
        rebuild.rebuild(sets[k % 2]);
        let mut n = 0u64;
        rebuild.for_each_pair(|_, _| n += 1);
        n
    };
    check.push(("parry-rebuild", step_rebuild(1)));
    assert_eq!(
        check.last().unwrap().1,
        check[0].1,
        "parry-rebuild disagrees with hhg"
    );
    grp.bench_function("parry-rebuild", |b| {
        b.iter(|| {
            k += 1;
            black_box(step_rebuild(k))
        })
    });
    let mut step_brute = |k: usize| {
        for (i, b) in sets[k % 2].iter().enumerate() {
            brute.update(i as u32, *b).unwrap();
        }
        let mut n = 0u64;
        brute.for_each_pair(|_, _| n += 1).unwrap();
        n
    };
    check.push(("brute", step_brute(1)));
    assert_eq!(
        check.last().unwrap().1,
        check[0].1,
        "brute disagrees with hhg"
    );
    grp.sample_size(10);
    grp.bench_function("brute", |b| {
        b.iter(|| {
            k += 1;
            black_box(step_brute(k))
        })
    });
    grp.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
