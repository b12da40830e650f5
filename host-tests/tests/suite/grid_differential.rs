//! The grid broad phase (`uniform::GridBroadPhase`) against brute force:
//! every box scenario over six steps of motion (updates one by one and in
//! bulk), every point scenario as zero-extent and radius-sized boxes, boxes
//! removed and inserted between detections, one box far longer than the
//! rest, boxes beyond the grid's numbered range, and a full structure.

use spatium::{Aabb2, Aabb3, BoundingBox, BroadPhase, Error, Inspect, Point, Validate};
use spatium_host::boxes::TestBox;
use spatium_host::make;
use spatium_host::oracle::{assert_same_pairs, collect_box_pairs, overlapping_pairs};
use spatium_host::rng::Rng;
use spatium_host::scenarios::{BoxScenario, box_scenarios, point_scenarios};

fn check<B: BoundingBox>(g: &mut make::VecGridBp<B>, boxes: &[Option<B>], what: &str) {
    let present: Vec<(u32, B)> = boxes
        .iter()
        .enumerate()
        .filter_map(|(i, b)| b.map(|b| (i as u32, b)))
        .collect();
    let mut want = Vec::new();
    for (x, &(i, a)) in present.iter().enumerate() {
        for &(j, b) in &present[x + 1..] {
            if a.overlaps(&b) {
                want.push((i.min(j), i.max(j)));
            }
        }
    }
    want.sort_unstable();
    let got = collect_box_pairs(g);
    assert_same_pairs(&got, &want, what);
    g.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(g.box_count(), present.len(), "{what}: count");
}

fn run_scenario<B: BoundingBox>(mut sc: BoxScenario<B>) {
    let n = sc.boxes.len();
    let what = format!("{} n={n}", sc.name);
    let mut g = make::grid_bp::<B>(n);
    for (i, b) in sc.boxes.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    let want = overlapping_pairs(&sc.boxes);
    assert_same_pairs(&collect_box_pairs(&mut g), &want, &format!("{what} setup"));
    let mut rng = Rng::new(n as u64 ^ 0x61);
    let mut stored: Vec<Option<B>> = sc.boxes.iter().copied().map(Some).collect();
    for step in 0..6 {
        sc.step();
        if step % 2 == 0 {
            for (i, b) in sc.boxes.iter().enumerate() {
                if stored[i].is_some() {
                    g.update(i as u32, *b).unwrap();
                    stored[i] = Some(*b);
                }
            }
        } else {
            let ups: Vec<(u32, B)> = sc
                .boxes
                .iter()
                .enumerate()
                .filter(|(i, _)| stored[*i].is_some())
                .map(|(i, b)| (i as u32, *b))
                .collect();
            g.update_many(&ups).unwrap();
            for &(i, b) in &ups {
                stored[i as usize] = Some(b);
            }
        }
        // Some boxes leave, some come back.
        for _ in 0..n / 10 + 1 {
            let i = rng.below(n);
            match stored[i] {
                Some(b) => {
                    assert_eq!(g.remove(i as u32), Ok(b));
                    stored[i] = None;
                }
                None => {
                    g.insert(i as u32, sc.boxes[i]).unwrap();
                    stored[i] = Some(sc.boxes[i]);
                }
            }
        }
        check(&mut g, &stored, &format!("{what} step {step}"));
    }
}

fn all_scenarios<B: BoundingBox>() {
    for &n in &[2usize, 20, 300, 2500] {
        for sc in box_scenarios::<B>(n, 70 + n as u64) {
            run_scenario(sc);
        }
    }
}

#[test]
fn box_scenarios_3d() {
    all_scenarios::<Aabb3>();
}

#[test]
fn box_scenarios_2d() {
    all_scenarios::<Aabb2>();
}

/// Point scenarios as zero-extent boxes (pairs only where points coincide)
/// and as boxes of the scenario's radius around each point.
fn points<B: BoundingBox>() {
    for &n in &[30usize, 600] {
        for sc in point_scenarios::<B::Point>(n, 90 + n as u64) {
            let r = sc.radius;
            for (label, half) in [("points", 0.0f32), ("radius boxes", 0.5 * r)] {
                let boxes: Vec<B> = sc
                    .points
                    .iter()
                    .map(|p| {
                        let lo = B::Point::from_fn(|k| p.coord(k) - half);
                        let hi = B::Point::from_fn(|k| p.coord(k) + half);
                        B::try_new(lo, hi).unwrap()
                    })
                    .collect();
                let mut g = make::grid_bp::<B>(boxes.len());
                for (i, b) in boxes.iter().enumerate() {
                    g.insert(i as u32, *b).unwrap();
                }
                let what = format!("{} {label} n={n}", sc.name);
                assert_same_pairs(
                    &collect_box_pairs(&mut g),
                    &overlapping_pairs(&boxes),
                    &what,
                );
            }
        }
    }
}

#[test]
fn point_scenarios_as_boxes_3d() {
    points::<Aabb3>();
}

#[test]
fn point_scenarios_as_boxes_2d() {
    points::<Aabb2>();
}

/// Boxes 200 times longer than the others: 1 or 40 (no more than the
/// large-box allowance, 4√n = 176 of 2 000) stay out of the grid, whose
/// cells keep the cubes' size; 250 make every cell that long. Exact either
/// way.
fn one_long_box<B: BoundingBox>() {
    for (long, big_cells) in [(1usize, false), (40, false), (250, true)] {
        let mut sc = box_scenarios::<B>(2000, 5).remove(0);
        for k in 0..long {
            let i = 7 + 7 * k;
            let lo = sc.boxes[i].min();
            sc.boxes[i] = B::try_new(lo, B::Point::from_fn(|a| lo.coord(a) + 200.0)).unwrap();
        }
        let mut g = make::grid_bp::<B>(sc.boxes.len());
        for (i, b) in sc.boxes.iter().enumerate() {
            g.insert(i as u32, *b).unwrap();
        }
        let want = overlapping_pairs(&sc.boxes);
        let what = format!("{long} long boxes");
        assert_same_pairs(&collect_box_pairs(&mut g), &want, &what);
        assert_eq!(
            g.cell_size() >= 200.0,
            big_cells,
            "{what}: cell {}",
            g.cell_size()
        );
    }
}

#[test]
fn one_long_box_3d() {
    one_long_box::<Aabb3>();
}

#[test]
fn one_long_box_2d() {
    one_long_box::<Aabb2>();
}

/// Boxes spread over a range of 10¹⁵ (cells 10¹⁵ wide), then with one
/// whose extent overflows `f32` (a large box, out of the grid), then with
/// seventy (the grid cannot take them: the all-pairs test takes over): the same
/// pairs as brute force every time.
#[test]
fn boxes_beyond_the_grid_range() {
    let mut rng = Rng::new(3);
    let boxes: Vec<Aabb3> = (0..200)
        .map(|i| {
            let s = if i % 2 == 0 { 1.0e15 } else { 1.0 };
            let x = (rng.f32() - 0.5) * 4.0 * s;
            let y = (rng.f32() - 0.5) * 4.0;
            let z = (rng.f32() - 0.5) * 4.0;
            Aabb3::raw([x, y, z], [x + 1.5 * s, y + 1.5, z + 1.5])
        })
        .collect();
    let mut g = make::grid_bp::<Aabb3>(boxes.len() + 1);
    for (i, b) in boxes.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    assert_same_pairs(
        &collect_box_pairs(&mut g),
        &overlapping_pairs(&boxes),
        "wide range",
    );
    assert!(g.cell_size() > 1.0e15);
    // One box whose extent overflows: a large box, out of the grid.
    let huge = |k: usize| Aabb3::raw([-3.0e38, k as f32, 0.0], [3.0e38, k as f32 + 1.0, 1.0]);
    g.insert(boxes.len() as u32, huge(0)).unwrap();
    let mut all = boxes.clone();
    all.push(huge(0));
    assert_same_pairs(
        &collect_box_pairs(&mut g),
        &overlapping_pairs(&all),
        "overflowing extent",
    );
    assert!(g.cell_size() > 0.0);
    // More of them than the large-box allowance (4√n): no grid can take
    // them, the all-pairs test does.
    let mut all = boxes.clone();
    all.extend((0..70).map(huge));
    let mut g = make::grid_bp::<Aabb3>(all.len());
    for (i, b) in all.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    assert_same_pairs(
        &collect_box_pairs(&mut g),
        &overlapping_pairs(&all),
        "all pairs",
    );
    assert_eq!(g.cell_size(), 0.0);
}

/// A structure whose detection buffers are shorter than its ids refuses
/// the insert past them and keeps everything it has; its memory is the
/// documented formula.
#[test]
fn full_structure_and_memory() {
    use spatium::uniform::GridBroadPhase;
    let n = 50;
    let mut g = GridBroadPhase::new(
        make::brute_slots::<Aabb3>(2 * n),
        vec![0u32; 8 * n],
        vec![0u32; 128],
    );
    let cube = |i: usize| Aabb3::raw([i as f32, 0.0, 0.0], [i as f32 + 1.5, 1.0, 1.0]);
    for i in 0..n {
        g.insert(i as u32, cube(i)).unwrap();
    }
    assert_eq!(
        g.insert(n as u32, cube(0)),
        Err(Error::CapacityExceeded { capacity: n })
    );
    assert_eq!(g.box_count(), n);
    let boxes: Vec<Aabb3> = (0..n).map(cube).collect();
    assert_same_pairs(
        &collect_box_pairs(&mut g),
        &overlapping_pairs(&boxes),
        "full",
    );
    // 32 per id, 8 words per box, 4 per cell start.
    assert_eq!(g.memory_bytes(), 32 * 2 * n + 32 * n + 4 * 128);
}
