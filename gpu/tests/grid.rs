//! Cell assignment and the two sorts against the core's uniform grid.

mod common;

use spatium::sph::ParticleState;
use spatium::uniform::Grid;
use spatium::{Aabb3, Vec3};
use spatium_gpu::scene;
use spatium_gpu::{FluidConfig, GpuFluid, SortKind, SortView};

/// Deterministic pseudo-random positions inside the domain, with its
/// corners, faces and points on cell boundaries among them.
fn scattered(domain: &Aabb3, grid: &Grid<Vec3>, n: usize) -> Vec<Vec3> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let (lo, hi) = (domain.min, domain.max);
    let mut out = vec![lo, hi, Vec3::new(lo.x, hi.y, lo.z), grid.origin()];
    // Points exactly on cell boundaries.
    for k in -3..=3 {
        let c = grid.origin().x + k as f32 * grid.cell_size();
        out.push(Vec3::new(c, grid.origin().y, c.clamp(lo.z, hi.z)));
    }
    while out.len() < n {
        out.push(Vec3::new(
            lo.x + (hi.x - lo.x) * next(),
            lo.y + (hi.y - lo.y) * next(),
            lo.z + (hi.z - lo.z) * next(),
        ));
    }
    out.truncate(n);
    out
}

fn fluid_with(
    gpu: &spatium_gpu::Gpu,
    sort: SortKind,
    table_len: usize,
    n: usize,
) -> (GpuFluid, Vec<Vec3>) {
    let s = scene::dam_break(1000, 0.025, 0.005).expect("scene");
    let config = FluidConfig {
        sort,
        table_len: Some(table_len),
        ..FluidConfig::default()
    };
    let mut fluid = GpuFluid::new(gpu, s.params, n, &[], &[], config).expect("GPU fluid");
    let positions = scattered(&s.params.domain, &fluid.grid(), n);
    let states = vec![ParticleState::EMPTY; n];
    fluid.upload(&positions, &states).expect("upload");
    (fluid, positions)
}

#[test]
fn cells_and_buckets_equal_the_cpu_grid() {
    let Some(gpu) = common::gpu("cells_and_buckets") else {
        return;
    };
    for table_len in [2usize, 64, 4096, 1 << 20] {
        let (fluid, positions) = fluid_with(&gpu, SortKind::Counting, table_len, 3000);
        let grid = fluid.grid();
        // The grid the kernels use is the core's, built independently here.
        let s = fluid.params();
        let centre = Vec3::new(
            0.5 * s.domain.min.x + 0.5 * s.domain.max.x,
            0.5 * s.domain.min.y + 0.5 * s.domain.max.y,
            0.5 * s.domain.min.z + 0.5 * s.domain.max.z,
        );
        assert_eq!(grid, Grid::new(s.h, centre, table_len).expect("grid"));
        let probe = fluid.probe_cells().expect("probe");
        assert_eq!(probe.len(), positions.len());
        for (i, (p, (cell, bucket))) in positions.iter().zip(&probe).enumerate() {
            let c = grid.cell(*p).expect("in range");
            assert_eq!(*cell, c, "cell of particle {i} at {p:?}");
            assert_eq!(*bucket, grid.bucket(c), "bucket of particle {i}");
        }
    }
}

/// A correct bucket order: a permutation of the ids, keys the CPU buckets,
/// non-decreasing, each occupied bucket's start at its run's first index
/// (and, for the counting sort, every start the exclusive prefix count).
fn check_sorted(view: &SortView, grid: &Grid<Vec3>, positions: &[Vec3], counting: bool) {
    let n = positions.len();
    assert_eq!(view.ids.len(), n);
    let mut seen = vec![false; n];
    for &id in &view.ids {
        assert!(!seen[id as usize], "id {id} twice");
        seen[id as usize] = true;
    }
    for (k, (&key, &id)) in view.keys.iter().zip(&view.ids).enumerate() {
        let expect = grid.bucket(grid.cell(positions[id as usize]).expect("in range"));
        assert_eq!(key, expect, "key at sorted index {k}");
        if k > 0 {
            assert!(view.keys[k - 1] <= key, "order at sorted index {k}");
        }
        if k == 0 || view.keys[k - 1] != key {
            assert_eq!(
                view.bucket_start[key as usize], k as u32,
                "start of bucket {key}"
            );
        }
    }
    if counting {
        let mut counts = vec![0u32; view.bucket_start.len()];
        for &k in &view.keys {
            counts[k as usize] += 1;
        }
        let mut total = 0;
        for (b, c) in counts.iter().enumerate() {
            assert_eq!(view.bucket_start[b], total, "prefix of bucket {b}");
            total += c;
        }
    }
}

fn sorts_correctly(sort: SortKind) {
    let Some(gpu) = common::gpu(sort.name()) else {
        return;
    };
    // Sizes around the bitonic sort's block of 512 and scan's block of
    // 1024, tables from heavily shared buckets to sparse, one table long
    // enough for a three-level scan.
    for (n, table_len) in [
        (1usize, 2usize),
        (511, 64),
        (1000, 1024),
        (3000, 8192),
        (5000, 1 << 21),
    ] {
        let (mut fluid, positions) = fluid_with(&gpu, sort, table_len, n);
        let view = fluid.sort_view().expect("sort view");
        check_sorted(&view, &fluid.grid(), &positions, sort == SortKind::Counting);
        // Again after moving every particle: nothing stale survives.
        let moved: Vec<Vec3> = positions.iter().rev().copied().collect();
        fluid
            .upload(&moved, &vec![ParticleState::EMPTY; n])
            .expect("upload");
        let view = fluid.sort_view().expect("sort view");
        check_sorted(&view, &fluid.grid(), &moved, sort == SortKind::Counting);
    }
}

#[test]
fn counting_sort_orders_by_bucket_with_offsets() {
    sorts_correctly(SortKind::Counting);
}

#[test]
fn bitonic_sort_orders_by_bucket_with_offsets() {
    sorts_correctly(SortKind::Bitonic);
}
