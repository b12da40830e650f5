//! The hierarchical hash grid against brute force: every box scenario, both
//! update strategies, size changes (grid changes), insert/remove storms, the
//! paper's worst cases, unbounded objects, starved arenas and bad input.
//! `validate()` runs after every step.

use spatium::{
    Aabb2, Aabb3, BoundingBox, BroadPhase, Error, HhgConfig, HhgRecord, HhgSlot,
    HierarchicalHashGrid, Inspect, Point, UpdateStrategy, Validate, Vec3,
};
use spatium_host::make::{self, VecHhg};
use spatium_host::oracle::{assert_same_pairs, collect_box_pairs, overlapping_pairs};
use spatium_host::rng::Rng;
use spatium_host::scenarios::{BoxScenario, box_scenarios, varied_cubes};

/// Brute-force pairs over a partial id space.
fn brute_pairs<B: BoundingBox>(model: &[Option<B>]) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    for i in 0..model.len() {
        for j in i + 1..model.len() {
            if let (Some(a), Some(b)) = (model[i], model[j])
                && a.overlaps(&b)
            {
                v.push((i as u32, j as u32));
            }
        }
    }
    v
}

fn check_pairs<B: BoundingBox>(g: &mut VecHhg<B>, boxes: &[B], what: &str) {
    g.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = collect_box_pairs(g);
    let want = overlapping_pairs(boxes);
    assert_same_pairs(&got, &want, what);
}

fn check_queries<B: BoundingBox>(g: &mut VecHhg<B>, boxes: &[B], rng: &mut Rng, what: &str) {
    for _ in 0..8 {
        let q = boxes[rng.below(boxes.len())];
        let grow = rng.range(0.0, 6.0);
        let q = B::try_new(
            B::Point::from_fn(|k| q.min().coord(k) - grow),
            B::Point::from_fn(|k| q.max().coord(k) + grow * 0.5),
        )
        .unwrap();
        let mut got = Vec::new();
        g.query(&q, |id| got.push(id)).unwrap();
        got.sort_unstable();
        let want: Vec<u32> = (0..boxes.len() as u32)
            .filter(|&i| q.overlaps(&boxes[i as usize]))
            .collect();
        assert_eq!(got, want, "{what}: query {q:?}");
    }
}

fn configs() -> Vec<(&'static str, HhgConfig, Option<usize>)> {
    let d = HhgConfig::DEFAULT;
    vec![
        ("default", d, None),
        ("factor1.5", d.with_hierarchy_factor(1.5).unwrap(), None),
        ("factor4", d.with_hierarchy_factor(4.0).unwrap(), None),
        ("grids_from_start", d.with_small_n_threshold(0), None),
        (
            "dense_small_grids",
            d.with_density(4.0)
                .unwrap()
                .with_initial_cells_log2(2)
                .unwrap(),
            None,
        ),
        // Room for two minimum grids: saturation, fallback to larger grids
        // and to the unbounded container.
        (
            "starved_arena",
            d.with_initial_cells_log2(2).unwrap(),
            Some(2),
        ),
        ("no_arena", d, Some(0)),
    ]
}

fn arena_for<B: BoundingBox>(n: usize, cfg: &HhgConfig, starved: Option<usize>) -> usize {
    let one = VecHhg::<B>::arena_words_for(n, cfg);
    match starved {
        None => one * 12,
        Some(k) => k * VecHhg::<B>::arena_words_for(1, &cfg.with_initial_cells_log2(2).unwrap()),
    }
}

fn run_scenario<B: BoundingBox>(mut sc: BoxScenario<B>, name: &str, cfg: HhgConfig, arena: usize) {
    let n = sc.boxes.len();
    let mut rng = Rng::new(n as u64 ^ 0x77);
    let what = format!("{}/{name}/n={n}", sc.name);
    let mut g = make::hhg::<B>(n, arena, cfg);
    for (i, b) in sc.boxes.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    check_pairs(&mut g, &sc.boxes, &format!("{what} setup"));
    check_queries(&mut g, &sc.boxes, &mut rng, &what);
    for step in 0..6 {
        sc.step();
        match step % 3 {
            0 => {
                for (i, b) in sc.boxes.iter().enumerate() {
                    g.update(i as u32, *b).unwrap();
                }
            }
            1 => g
                .update_all(&sc.boxes, UpdateStrategy::Incremental)
                .unwrap(),
            _ => g
                .update_all(&sc.boxes, UpdateStrategy::ClearAndReinsert)
                .unwrap(),
        }
        check_pairs(&mut g, &sc.boxes, &format!("{what} step {step}"));
    }
    check_queries(&mut g, &sc.boxes, &mut rng, &what);
}

fn all_scenarios<B: BoundingBox>() {
    for &n in &[20usize, 300, 2500] {
        for sc in box_scenarios::<B>(n, 40 + n as u64) {
            for (name, cfg, starved) in configs() {
                let arena = arena_for::<B>(n, &cfg, starved);
                run_scenario(sc.clone(), name, cfg, arena);
            }
        }
    }
}

#[test]
fn every_scenario_and_config_matches_brute_force_3d() {
    all_scenarios::<Aabb3>();
}

#[test]
fn every_scenario_and_config_matches_brute_force_2d() {
    all_scenarios::<Aabb2>();
}

#[test]
fn far_negative_coordinates_match_brute_force() {
    for sc in box_scenarios::<Aabb3>(1500, 9) {
        let mut sc = sc;
        let shift = [-30_000.0f32, -7_000.5, -250_000.0];
        for b in &mut sc.boxes {
            *b = Aabb3::new(
                Vec3::from_fn(|k| b.min().coord(k) + shift[k]),
                Vec3::from_fn(|k| b.max().coord(k) + shift[k]),
            )
            .unwrap();
        }
        sc.name.push_str("_far_negative");
        run_scenario(sc, "default", HhgConfig::DEFAULT, 1 << 20);
    }
}

/// Boxes that grow and shrink every step move between grids.
fn resize<B: BoundingBox>(boxes: &mut [B], rng: &mut Rng, lo: f32, hi: f32) {
    for b in boxes {
        let s = rng.range(lo, hi);
        let m = b.min();
        *b = B::try_new(
            m,
            B::Point::from_fn(|k| m.coord(k) + (b.max().coord(k) - m.coord(k)) * s),
        )
        .unwrap();
    }
}

#[test]
fn size_changes_move_boxes_between_grids() {
    for (name, cfg, starved) in configs() {
        let mut sc = varied_cubes::<Aabb3>(1200, 12.0, 5);
        let arena = arena_for::<Aabb3>(1200, &cfg, starved);
        let mut g = make::hhg::<Aabb3>(1200, arena, cfg);
        let mut rng = Rng::new(11);
        for (i, b) in sc.boxes.iter().enumerate() {
            g.insert(i as u32, *b).unwrap();
        }
        for step in 0..10 {
            sc.step();
            // Swing sizes between 1/3× and 3× over the steps.
            let (lo, hi) = if step % 2 == 0 {
                (0.3, 1.0)
            } else {
                (1.0, 3.3)
            };
            resize(&mut sc.boxes, &mut rng, lo, hi);
            let strategy = if step % 3 == 2 {
                UpdateStrategy::ClearAndReinsert
            } else {
                UpdateStrategy::Incremental
            };
            g.update_all(&sc.boxes, strategy).unwrap();
            check_pairs(&mut g, &sc.boxes, &format!("resize/{name}/step {step}"));
        }
        let st = g.stats();
        if starved.is_none() {
            assert!(
                st.grids >= 3,
                "{name}: sizes over 30x need several grids: {st:?}"
            );
        }
    }
}

#[test]
fn insert_remove_storms_match_a_model() {
    for (name, cfg, starved) in configs() {
        let cap = 700;
        let arena = arena_for::<Aabb3>(cap, &cfg, starved);
        let mut g = make::hhg::<Aabb3>(cap, arena, cfg);
        let mut model: Vec<Option<Aabb3>> = vec![None; cap];
        let mut rng = Rng::new(3);
        let extent = 30.0;
        for round in 0..40 {
            for _ in 0..120 {
                let id = rng.below(cap) as u32;
                let size = match rng.below(4) {
                    0 => rng.range(0.01, 0.2),
                    1 => rng.range(0.5, 2.0),
                    2 => rng.range(3.0, 12.0),
                    _ => 0.0,
                };
                let lo = Vec3::from_fn(|_| rng.range(-extent, extent));
                let b = Aabb3::new(lo, Vec3::from_fn(|k| lo.coord(k) + size)).unwrap();
                match (model[id as usize], rng.below(3)) {
                    (None, _) => {
                        g.insert(id, b).unwrap();
                        model[id as usize] = Some(b);
                    }
                    (Some(old), 0) => {
                        assert_eq!(g.remove(id).unwrap(), old);
                        model[id as usize] = None;
                    }
                    (Some(_), _) => {
                        g.update(id, b).unwrap();
                        model[id as usize] = Some(b);
                    }
                }
            }
            g.validate()
                .unwrap_or_else(|e| panic!("{name} round {round}: {e}"));
            assert_eq!(g.box_count(), model.iter().flatten().count());
            assert_eq!(
                collect_box_pairs(&mut g),
                brute_pairs(&model),
                "{name} round {round}"
            );
            if round == 25 {
                // Remove almost everything: grids stay, lists stay consistent.
                for (id, m) in model.iter_mut().enumerate() {
                    if m.is_some() && id % 10 != 0 {
                        g.remove(id as u32).unwrap();
                        *m = None;
                    }
                }
                g.validate().unwrap();
                assert_eq!(collect_box_pairs(&mut g), brute_pairs(&model));
            }
        }
        g.clear();
        g.validate().unwrap();
        assert_eq!(g.box_count(), 0);
        assert!(!g.uses_grids());
        assert_eq!(collect_box_pairs(&mut g), vec![]);
    }
}

#[test]
fn worst_case_everything_in_one_cell() {
    // Identical boxes: one cell, quadratic pairs, still exact.
    let n = 400;
    let b = Aabb3::new(Vec3::new(1.0, 1.0, 1.0), Vec3::new(2.0, 2.0, 2.0)).unwrap();
    let boxes = vec![b; n];
    let mut g = make::hhg::<Aabb3>(n, 1 << 16, HhgConfig::DEFAULT);
    for (i, b) in boxes.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    check_pairs(&mut g, &boxes, "one cell");
    assert_eq!(collect_box_pairs(&mut g).len(), n * (n - 1) / 2);
    let st = g.stats();
    assert_eq!(st.grids, 1);
    assert_eq!(st.grid[0].max_objects_per_cell, n as u32);
    assert_eq!(st.grid[0].occupied_cells, 1);
}

#[test]
fn worst_case_long_thin_boxes() {
    // 100 × 1 × 1 boxes all land in the grid for their long edge.
    let mut rng = Rng::new(8);
    let n = 600;
    let boxes: Vec<Aabb3> = (0..n)
        .map(|_| {
            let lo = Vec3::from_fn(|_| rng.range(0.0, 60.0));
            Aabb3::new(lo, Vec3::new(lo.x + 100.0, lo.y + 1.0, lo.z + 1.0)).unwrap()
        })
        .collect();
    let mut g = make::hhg::<Aabb3>(n, 1 << 16, HhgConfig::DEFAULT);
    for (i, b) in boxes.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    check_pairs(&mut g, &boxes, "long thin");
}

#[test]
fn sizes_beyond_the_hierarchy_use_the_end_levels_and_the_container() {
    // The first box fixes c0 = 1·√2; levels reach c0·2^±15. Boxes far smaller
    // go to level 0 (larger cells: correct), boxes far larger go to the
    // unbounded container.
    let mut boxes = vec![Aabb3::new(Vec3::ZERO, Vec3::new(1.0, 1.0, 1.0)).unwrap()];
    let mut rng = Rng::new(12);
    for i in 0..300 {
        let size = match i % 3 {
            0 => 1e-9,
            1 => 1e6,
            _ => rng.range(0.1, 10.0),
        };
        let lo = Vec3::from_fn(|_| rng.range(-20.0, 20.0));
        boxes.push(Aabb3::new(lo, Vec3::from_fn(|k| lo.coord(k) + size)).unwrap());
    }
    let mut g = make::hhg::<Aabb3>(boxes.len(), 1 << 18, HhgConfig::DEFAULT);
    for (i, b) in boxes.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    check_pairs(&mut g, &boxes, "extreme sizes");
    let st = g.stats();
    assert_eq!(st.unbounded_objects, 100, "{st:?}");
    assert_eq!(st.grid[0].level, -15);
}

#[test]
fn unbounded_objects_are_tested_against_everything() {
    let sc = box_scenarios::<Aabb3>(800, 21).remove(0);
    let n = sc.boxes.len();
    let mut g = make::hhg::<Aabb3>(n + 3, 1 << 18, HhgConfig::DEFAULT);
    for (i, b) in sc.boxes.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    let inf = f32::INFINITY;
    // A floor (z ≤ 2), a wall (x ≥ 10), and a slab bounded in y only.
    let planes = [
        Aabb3 {
            min: Vec3::new(-inf, -inf, -inf),
            max: Vec3::new(inf, inf, 2.0),
        },
        Aabb3 {
            min: Vec3::new(10.0, -inf, -inf),
            max: Vec3::new(inf, inf, inf),
        },
        Aabb3 {
            min: Vec3::new(-inf, 3.0, -inf),
            max: Vec3::new(inf, 4.0, inf),
        },
    ];
    for (k, p) in planes.iter().enumerate() {
        g.insert_unbounded((n + k) as u32, *p).unwrap();
    }
    g.validate().unwrap();
    let mut all: Vec<Aabb3> = sc.boxes.clone();
    all.extend_from_slice(&planes);
    let got = collect_box_pairs(&mut g);
    let want = brute_pairs(&all.iter().copied().map(Some).collect::<Vec<_>>());
    assert_eq!(got, want);
    // Infinite boxes are refused by insert; NaN by insert_unbounded.
    assert_eq!(g.remove(n as u32).map(|_| ()), Ok(()));
    assert_eq!(g.insert(n as u32, planes[0]), Err(Error::NonFinite));
    let nan = Aabb3 {
        min: Vec3::new(f32::NAN, 0.0, 0.0),
        max: Vec3::new(1.0, 1.0, 1.0),
    };
    assert_eq!(g.insert_unbounded(n as u32, nan), Err(Error::NonFinite));
    g.validate().unwrap();
    let mut q = Vec::new();
    g.query(&planes[2], |id| q.push(id)).unwrap();
    q.sort_unstable();
    let want: Vec<u32> = (0..all.len() as u32)
        .filter(|&i| i != n as u32 && planes[2].overlaps(&all[i as usize]))
        .collect();
    assert_eq!(q, want);
}

#[test]
fn bad_input_changes_nothing() {
    let sc = box_scenarios::<Aabb3>(500, 2).remove(0);
    let n = sc.boxes.len();
    let mut g = make::hhg::<Aabb3>(n + 1, 1 << 18, HhgConfig::DEFAULT);
    // Out of range before the levels exist: the first box is refused and
    // does not fix c0.
    let far = Aabb3::new(Vec3::new(1e12, 0.0, 0.0), Vec3::new(1e12 + 1.0, 1.0, 1.0)).unwrap();
    assert_eq!(g.insert(0, far), Err(Error::OutOfRange));
    g.validate().unwrap();
    assert_eq!(g.box_count(), 0);
    for (i, b) in sc.boxes.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    let before = collect_box_pairs(&mut g);
    let good = sc.boxes[0];
    let inverted = Aabb3 {
        min: good.max,
        max: good.min,
    };
    let nan = Aabb3 {
        min: Vec3::new(f32::NAN, 0.0, 0.0),
        ..good
    };
    let inf = Aabb3 {
        max: Vec3::new(f32::INFINITY, 1.0, 1.0),
        ..good
    };
    // A box so far away that even the largest level (c0·2^15) puts it
    // beyond 2^20 cells.
    let tiny_far = Aabb3::new(
        Vec3::new(1.0e12, 0.0, 0.0),
        Vec3::new(1.0e12 + 1.0, 1.0, 1.0),
    )
    .unwrap();
    for (b, e) in [
        (inverted, Error::InvertedBox),
        (nan, Error::NonFinite),
        (inf, Error::NonFinite),
        (tiny_far, Error::OutOfRange),
    ] {
        assert_eq!(g.insert(n as u32, b), Err(e));
        assert_eq!(g.update(3, b), Err(e));
        let mut all = sc.boxes.clone();
        all[7] = b;
        assert_eq!(g.update_all(&all, UpdateStrategy::Incremental), Err(e));
        assert_eq!(g.update_all(&all, UpdateStrategy::ClearAndReinsert), Err(e));
        g.validate().unwrap();
        assert_eq!(collect_box_pairs(&mut g), before);
        assert_eq!(g.get(3), Some(sc.boxes[3]));
    }
    assert_eq!(g.insert(1, good), Err(Error::DuplicateId { id: 1 }));
    assert_eq!(
        g.insert((n + 1) as u32, good),
        Err(Error::IdOutOfRange { id: (n + 1) as u32 })
    );
    assert_eq!(
        g.update(n as u32, good),
        Err(Error::UnknownId { id: n as u32 })
    );
    assert_eq!(g.remove(n as u32), Err(Error::UnknownId { id: n as u32 }));
    assert_eq!(
        g.update_all(&sc.boxes[..n - 1], UpdateStrategy::Incremental),
        Err(Error::LengthMismatch {
            expected: n,
            got: n - 1
        })
    );
    g.validate().unwrap();
    assert_eq!(collect_box_pairs(&mut g), before);
    // Configuration ranges.
    let d = HhgConfig::DEFAULT;
    assert_eq!(
        d.with_hierarchy_factor(1.1),
        Err(Error::InvalidConfig {
            field: "hierarchy_factor"
        })
    );
    assert_eq!(
        d.with_hierarchy_factor(f32::NAN),
        Err(Error::InvalidConfig {
            field: "hierarchy_factor"
        })
    );
    assert_eq!(
        d.with_density(0.0),
        Err(Error::InvalidConfig { field: "density" })
    );
    assert_eq!(
        d.with_initial_cells_log2(1),
        Err(Error::InvalidConfig {
            field: "initial_cells_log2"
        })
    );
}

#[test]
fn full_object_store_is_the_only_capacity_error() {
    let mut g = make::hhg::<Aabb3>(40, 0, HhgConfig::DEFAULT);
    let b = Aabb3::new(Vec3::ZERO, Vec3::new(1.0, 1.0, 1.0)).unwrap();
    for i in 0..40 {
        g.insert(i, b).unwrap();
    }
    // No arena at all: every box sits in the unbounded container.
    assert_eq!(g.stats().unbounded_objects, 40);
    assert_eq!(g.insert(40, b), Err(Error::IdOutOfRange { id: 40 }));
    g.validate().unwrap();
}

#[test]
fn growth_keeps_density_and_saturation_is_reported() {
    let sc = box_scenarios::<Aabb3>(20_000, 4).remove(0);
    let cfg = HhgConfig::DEFAULT;
    let words = VecHhg::<Aabb3>::arena_words_for(20_000, &cfg);
    let mut g = make::hhg::<Aabb3>(20_000, words, cfg);
    for (i, b) in sc.boxes.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    let st = g.stats();
    assert_eq!(st.grids, 1);
    assert!(!st.grid[0].saturated, "{st:?}");
    assert!(st.grid[0].density <= cfg.density(), "{st:?}");
    assert_eq!(st.grid[0].cells_per_axis, [64, 64, 64]);
    // Half the arena: the grid stops at 32³ and says so.
    let mut g = make::hhg::<Aabb3>(20_000, words / 2, cfg);
    for (i, b) in sc.boxes.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    let st = g.stats();
    assert!(st.grid[0].saturated, "{st:?}");
    assert_eq!(st.grid[0].cells_per_axis, [32, 32, 32]);
    check_pairs(&mut g, &sc.boxes, "saturated");
}

#[test]
fn fixed_arrays_work_without_an_allocator() {
    type Fixed =
        HierarchicalHashGrid<Aabb2, [HhgSlot<Aabb2>; 64], [HhgRecord<Aabb2>; 64], [u32; 2048]>;
    let mut g: Fixed = HierarchicalHashGrid::new(
        [HhgSlot::EMPTY; 64],
        [HhgRecord::EMPTY; 64],
        [0; 2048],
        HhgConfig::DEFAULT,
    );
    let mut rng = Rng::new(1);
    let boxes: Vec<Aabb2> = (0..64)
        .map(|_| {
            let lo = spatium::Vec2::new(rng.range(0.0, 20.0), rng.range(0.0, 20.0));
            Aabb2::new(lo, spatium::Vec2::new(lo.x + 1.5, lo.y + 1.0)).unwrap()
        })
        .collect();
    for (i, b) in boxes.iter().enumerate() {
        g.insert(i as u32, *b).unwrap();
    }
    g.validate().unwrap();
    assert!(g.uses_grids());
    assert_eq!(collect_box_pairs(&mut g), overlapping_pairs(&boxes));
}

#[test]
fn memory_formula() {
    assert_eq!(core::mem::size_of::<HhgSlot<Aabb3>>(), 36);
    assert_eq!(core::mem::size_of::<HhgSlot<Aabb2>>(), 28);
    assert_eq!(core::mem::size_of::<HhgRecord<Aabb3>>(), 40);
    assert_eq!(core::mem::size_of::<HhgRecord<Aabb2>>(), 32);
    let g = make::hhg::<Aabb3>(1000, 5000, HhgConfig::DEFAULT);
    let st = g.stats();
    let me = core::mem::size_of::<VecHhg<Aabb3>>();
    assert_eq!(st.bytes_total, 1000 * 76 + 5000 * 4 + me);
    assert!(me < 3072, "struct is {me} bytes");
}
