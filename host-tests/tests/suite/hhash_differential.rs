//! Hierarchical and multilevel hashing against brute force: every box
//! scenario and the paper's distributions, several class sets and table
//! lengths (down to a 64-bucket table where almost every key collides),
//! moving boxes, removals, queries (raw ⊇ exact = brute force), neighbour
//! search on every point scenario (both schemes), particles and objects
//! sharing one table,
//! and bad input. `validate()` runs after every step.

use spatium::hhash::{Candidates, HashConfig, Hierarchical, Multilevel, Scheme};
use spatium::{
    Aabb2, Aabb3, BoundingBox, BroadPhase, Error, Inspect, NeighborSearch, Point, Validate, Vec2,
    Vec3,
};
use spatium_host::make::{self, VecClassHash};
use spatium_host::oracle::{
    assert_same_pairs, collect_box_pairs, collect_pairs, neighbors_of, overlapping_pairs,
    pairs_within, within,
};
use spatium_host::pouchol;
use spatium_host::rng::Rng;
use spatium_host::scenarios::{BoxScenario, box_scenarios, point_scenarios};

/// Class sets to test a scenario with: the paper's preprocessing over the
/// sizes, a single class (everything larger is subdivided), and classes
/// every level (deep descents).
fn configs<P: Point>(boxes: &[P::Aabb]) -> Vec<(&'static str, HashConfig<P>)> {
    let min_edge = boxes
        .iter()
        .map(|b| b.longest_edge())
        .fold(f32::INFINITY, f32::min)
        .max(1e-3);
    let base = min_edge * 0.75;
    let sized = HashConfig::from_sizes(base, boxes.iter().map(|b| b.longest_edge())).unwrap();
    let max_edge = boxes.iter().map(|b| b.longest_edge()).fold(0.0, f32::max);
    let single = HashConfig::new(max_edge * 0.3, 1).unwrap();
    let every = HashConfig::new(base, (1 << 12) - 1).unwrap();
    let shifted = sized.with_origin(P::from_fn(|k| -3.7 + k as f32)).unwrap();
    vec![
        ("sized", sized),
        ("single_class", single),
        ("every_level", every),
        ("shifted_origin", shifted),
    ]
}

fn brute_query<B: BoundingBox>(boxes: &[Option<B>], q: &B) -> Vec<u32> {
    (0..boxes.len() as u32)
        .filter(|&i| boxes[i as usize].is_some_and(|b| b.overlaps(q)))
        .collect()
}

fn check_queries<S: Scheme, B: BoundingBox>(
    h: &mut VecClassHash<S, B>,
    model: &[Option<B>],
    rng: &mut Rng,
    what: &str,
) {
    let live: Vec<B> = model.iter().flatten().copied().collect();
    for k in 0..10 {
        // With a tiny table every bucket is current and the whole-scene box
        // would visit every cell of every class: only for real tables.
        let q = if (k == 9 && h.table_len() > 64) || live.is_empty() {
            // A box far larger than every class: the subdivided query.
            let lo = live.iter().fold(B::Point::ZERO, |a, b| a.min(b.min()));
            let hi = live.iter().fold(B::Point::ZERO, |a, b| a.max(b.max()));
            B::try_new(lo, hi).unwrap()
        } else {
            let b = live[rng.below(live.len())];
            let grow = rng.range(0.0, 2.0) * b.longest_edge();
            B::try_new(
                B::Point::from_fn(|k| b.min().coord(k) - grow),
                B::Point::from_fn(|k| b.max().coord(k) + grow * 0.3),
            )
            .unwrap()
        };
        let mut got = Vec::new();
        h.query(&q, |id| got.push(id)).unwrap();
        got.sort_unstable();
        let want = brute_query(model, &q);
        assert_eq!(got, want, "{what}: query {q:?}");
        let mut raw = Vec::new();
        h.query_candidates(&q, Candidates::Raw, |id| raw.push(id))
            .unwrap();
        raw.sort_unstable();
        raw.dedup();
        assert!(
            want.iter().all(|id| raw.binary_search(id).is_ok()),
            "{what}: raw candidates miss an overlapping box"
        );
        match h.query_counts(&q) {
            Ok(counts) => {
                assert_eq!(counts.exact as usize, want.len(), "{what}: counts.exact");
                assert!(counts.raw >= counts.exact + counts.collisions, "{what}");
            }
            // The whole-scene box may cover more cells than the
            // inspection walks allow (INSPECT_LIMIT).
            Err(Error::OutOfRange) if k == 9 => {}
            Err(e) => panic!("{what}: query_counts {e}"),
        }
        // The shared-reference query of an up-to-date table agrees.
        let mut shared = Vec::new();
        h.query_candidates_ready(&q, Candidates::Exact, |id| shared.push(id))
            .unwrap();
        shared.sort_unstable();
        assert_eq!(shared, want, "{what}: shared query");
    }
}

fn check_pairs<S: Scheme, B: BoundingBox>(
    h: &mut VecClassHash<S, B>,
    model: &[Option<B>],
    what: &str,
) {
    let got = collect_box_pairs(h);
    h.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut want = Vec::new();
    for i in 0..model.len() {
        for j in i + 1..model.len() {
            if let (Some(a), Some(b)) = (model[i], model[j])
                && a.overlaps(&b)
            {
                want.push((i as u32, j as u32));
            }
        }
    }
    assert_same_pairs(&got, &want, what);
    // Raw pair candidates contain every exact pair.
    let mut raw = Vec::new();
    h.for_each_candidate_pair(Candidates::Raw, |a, b| raw.push((a.min(b), a.max(b))));
    raw.sort_unstable();
    raw.dedup();
    assert!(
        want.iter().all(|p| raw.binary_search(p).is_ok()),
        "{what}: raw pairs miss an overlapping pair"
    );
}

fn run_boxes<S: Scheme, B: BoundingBox>(
    mut sc: BoxScenario<B>,
    name: &str,
    config: HashConfig<B::Point>,
    table: usize,
) {
    let n = sc.boxes.len();
    let what = format!("{}/{}/{name}/T={table}", S::NAME, sc.name);
    let mut rng = Rng::new(n as u64 ^ 0x4848);
    // Room for every step's boxes: 4× the first step's entries.
    let entries = config.entries_for(&sc.boxes, 0).unwrap() as usize * 4 + 64;
    let mut h = make::class_hash::<S, B>(n, table, entries, 0, config);
    let mut model: Vec<Option<B>> = vec![None; n];
    for (i, b) in sc.boxes.iter().enumerate() {
        h.insert(i as u32, *b).unwrap();
        model[i] = Some(*b);
    }
    h.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
    check_pairs(&mut h, &model, &format!("{what} setup"));
    check_queries(&mut h, &model, &mut rng, &what);
    for step in 0..4 {
        sc.step();
        for (i, b) in sc.boxes.iter().enumerate() {
            if model[i].is_some() {
                h.update(i as u32, *b).unwrap();
                model[i] = Some(*b);
            }
        }
        // Remove a few, re-insert a few others.
        for _ in 0..n / 20 + 1 {
            let i = rng.below(n);
            match model[i] {
                Some(b) => {
                    assert_eq!(h.remove(i as u32).unwrap(), b);
                    model[i] = None;
                }
                None => {
                    h.insert(i as u32, sc.boxes[i]).unwrap();
                    model[i] = Some(sc.boxes[i]);
                }
            }
        }
        h.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
        let w = format!("{what} step {step}");
        check_pairs(&mut h, &model, &w);
        check_queries(&mut h, &model, &mut rng, &w);
    }
    assert_eq!(BroadPhase::box_count(&h), model.iter().flatten().count());
}

fn all_box_scenarios<S: Scheme, B: BoundingBox>(n: usize) {
    for sc in box_scenarios::<B>(n, 11) {
        for (name, cfg) in configs::<B::Point>(&sc.boxes) {
            // A 64-bucket table: nearly every bucket shared by many cells.
            for table in [64, make_table(n)] {
                run_boxes::<S, B>(sc.clone(), name, cfg, table);
            }
        }
    }
}

fn make_table(n: usize) -> usize {
    spatium::table::table_len(n, spatium::table::SLOTS_PER_OBJECT)
}

#[test]
fn hierarchical_3d_box_scenarios() {
    all_box_scenarios::<Hierarchical, Aabb3>(300);
}

#[test]
fn hierarchical_2d_box_scenarios() {
    all_box_scenarios::<Hierarchical, Aabb2>(400);
}

#[test]
fn multilevel_3d_box_scenarios() {
    all_box_scenarios::<Multilevel, Aabb3>(300);
}

#[test]
fn multilevel_2d_box_scenarios() {
    all_box_scenarios::<Multilevel, Aabb2>(400);
}

/// The paper's own distributions: §4.1's three object sizes over four
/// decades of area, and §4.2's spheres with small particles.
#[test]
fn paper_distributions() {
    for n in [50, 600] {
        let sc = pouchol::objects_scenario(n, 5);
        let cfg = HashConfig::from_sizes(1.0, sc.boxes.iter().map(|b| b.longest_edge())).unwrap();
        run_boxes::<Hierarchical, Aabb2>(sc.clone(), "paper", cfg, make_table(n));
        run_boxes::<Multilevel, Aabb2>(sc, "paper", cfg, make_table(n));
    }
    let sc = pouchol::spheres_scenario(200, 1500, 6);
    let cfg = HashConfig::from_sizes(
        pouchol::PARTICLE_3D,
        sc.boxes.iter().map(|b| b.longest_edge()),
    )
    .unwrap();
    run_boxes::<Hierarchical, Aabb3>(sc.clone(), "paper", cfg, make_table(1700));
    run_boxes::<Multilevel, Aabb3>(sc, "paper", cfg, make_table(1700));
}

/// §4.1's query workload: segments' path boxes against the objects.
#[test]
fn paper_segment_queries() {
    let objects = pouchol::objects_2d(800, 9);
    let mut sizes: Vec<f32> = objects.iter().map(|b| b.longest_edge()).collect();
    sizes.push(pouchol::SEGMENT_MAX);
    let cfg = HashConfig::<Vec2>::from_sizes(1.0, sizes).unwrap();
    let entries = cfg.entries_for(&objects, 0).unwrap() as usize;
    let mut h = make::class_hash::<Hierarchical, Aabb2>(800, make_table(800), entries, 0, cfg);
    let mut m = make::class_hash::<Multilevel, Aabb2>(800, make_table(800), entries, 0, cfg);
    for (i, b) in objects.iter().enumerate() {
        h.insert(i as u32, *b).unwrap();
        m.insert(i as u32, *b).unwrap();
    }
    let model: Vec<Option<Aabb2>> = objects.iter().copied().map(Some).collect();
    let mut hits = 0;
    for s in pouchol::segments_2d(3000, 9) {
        let q = pouchol::segment_box(&s);
        let want = brute_query(&model, &q);
        for got in [
            {
                let mut v = Vec::new();
                h.query(&q, |id| v.push(id)).unwrap();
                v.sort_unstable();
                v
            },
            {
                let mut v = Vec::new();
                m.query(&q, |id| v.push(id)).unwrap();
                v.sort_unstable();
                v
            },
        ] {
            assert_eq!(got, want, "segment {s:?}");
        }
        hits += want
            .iter()
            .any(|&i| pouchol::segment_hits(&s, &objects[i as usize])) as usize;
    }
    // The distribution covers a good share of the square at this N.
    assert!(hits > 300 && hits < 3000, "{hits}");
}

fn check_nns<P: Point, N: NeighborSearch<P>>(s: &N, points: &[P], radius: f32, what: &str) {
    let want = pairs_within(points, radius);
    assert_same_pairs(&collect_pairs(s), &want, what);
    let mut rng = Rng::new(points.len() as u64);
    for _ in 0..20 {
        let i = rng.below(points.len()) as u32;
        let mut w: Vec<u32> = (0..points.len() as u32)
            .filter(|&j| {
                j != i && points[j as usize].distance_squared(points[i as usize]) < radius * radius
            })
            .collect();
        w.sort_unstable();
        assert_eq!(neighbors_of(s, i), w, "{what}: neighbours of {i}");
        let p = points[rng.below(points.len())];
        let p = P::from_fn(|k| p.coord(k) + rng.range(-radius, radius));
        let mut w: Vec<u32> = (0..points.len() as u32)
            .filter(|&j| points[j as usize].distance_squared(p) < radius * radius)
            .collect();
        w.sort_unstable();
        assert_eq!(within(s, p), w, "{what}: within {p:?}");
    }
}

fn nns_scenarios<B: BoundingBox>(n: usize) {
    for sc in point_scenarios::<B::Point>(n, 21) {
        let np = sc.points.len();
        for extra in [0u32, 0b1010_1010, 0b1110] {
            let what = format!("{}/extra={extra:#b}", sc.name);
            let mut h = VecClassHash::<Hierarchical, B>::for_particles(
                Vec::new(),
                vec![spatium::hhash::HashBucket::EMPTY; make_table(np)],
                vec![spatium::hhash::HashEntry::EMPTY; np],
                vec![B::Point::ZERO; np],
                extra,
            );
            h.build(&sc.points, sc.radius).unwrap();
            h.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
            check_nns(&h, &sc.points, sc.radius, &what);
        }
        // A fixed base different from the radius (the probe covers as many
        // cells as it needs), with a tiny table.
        for (base, table) in [(sc.radius * 0.4, 16), (sc.radius * 2.5, make_table(np))] {
            let what = format!("{}/base={base}/T={table}", sc.name);
            let cfg = HashConfig::new(base, 0b100).unwrap();
            let mut h = make::class_hash::<Hierarchical, B>(0, table, np, np, cfg);
            h.build(&sc.points, sc.radius).unwrap();
            h.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
            check_nns(&h, &sc.points, sc.radius, &what);
            let mut m = make::class_hash::<Multilevel, B>(0, table, np, np, cfg);
            m.build(&sc.points, sc.radius).unwrap();
            m.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
            check_nns(&m, &sc.points, sc.radius, &format!("{what} multilevel"));
        }
    }
}

#[test]
fn neighbour_search_3d() {
    nns_scenarios::<Aabb3>(700);
}

#[test]
fn neighbour_search_2d() {
    nns_scenarios::<Aabb2>(900);
}

/// Particles and objects in one table (the paper's point): each answers as
/// if it were alone, with a small table so that they share buckets.
#[test]
fn particles_and_objects_share_one_table() {
    let (spheres, particles) = pouchol::spheres_3d(150, 1200, 3);
    let boxes: Vec<Aabb3> = spheres.iter().map(|s| s.aabb()).collect();
    let r = pouchol::PARTICLE_3D;
    let cfg = HashConfig::from_sizes(r, boxes.iter().map(|b| b.longest_edge())).unwrap();
    for table in [64, make_table(1350)] {
        let entries = cfg.entries_for(&boxes, particles.len()).unwrap() as usize + 64;
        let mut h = make::class_hash::<Hierarchical, Aabb3>(150, table, entries, 1200, cfg);
        for (i, b) in boxes.iter().enumerate() {
            h.insert(i as u32, *b).unwrap();
        }
        h.build(&particles, r).unwrap();
        h.validate().unwrap();
        check_nns(&h, &particles, r, "mixed nns");
        assert_same_pairs(
            &collect_box_pairs(&mut h),
            &overlapping_pairs(&boxes),
            "mixed bp",
        );
        // Moving an object rebuilds the table with the particles in it.
        h.update(0, boxes[1]).unwrap();
        let mut moved = boxes.clone();
        moved[0] = boxes[1];
        assert_same_pairs(
            &collect_box_pairs(&mut h),
            &overlapping_pairs(&moved),
            "mixed bp 2",
        );
        h.validate().unwrap();
        check_nns(&h, &particles, r, "mixed nns 2");
        // A second build replaces the particles, keeps the objects.
        h.build(&particles[..600], r).unwrap();
        check_nns(&h, &particles[..600], r, "mixed nns 3");
        assert_eq!(BroadPhase::box_count(&h), 150);
        // Multilevel hashing shares its table the same way.
        let mut m = make::class_hash::<Multilevel, Aabb3>(150, table, entries, 1200, cfg);
        for (i, b) in boxes.iter().enumerate() {
            m.insert(i as u32, *b).unwrap();
        }
        m.build(&particles, r).unwrap();
        m.validate().unwrap();
        check_nns(&m, &particles, r, "mixed nns multilevel");
        assert_same_pairs(
            &collect_box_pairs(&mut m),
            &overlapping_pairs(&boxes),
            "mixed bp multilevel",
        );
    }
}

fn unit(x: f32) -> Aabb3 {
    Aabb3::new(Vec3::new(x, 0.0, 0.0), Vec3::new(x + 1.0, 1.0, 1.0)).unwrap()
}

/// Bad input is refused and changes nothing; a full pool refuses the insert
/// that would overflow it and keeps everything stored.
#[test]
fn errors_change_nothing() {
    let cfg = HashConfig::<Vec3>::new(1.0, 0b11).unwrap();
    let mut h = make::class_hash::<Hierarchical, Aabb3>(4, 64, 24, 4, cfg);
    h.insert(0, unit(0.0)).unwrap();
    h.insert(1, unit(0.5)).unwrap();
    let before = collect_box_pairs(&mut h);
    let nan = Aabb3 {
        min: Vec3::new(f32::NAN, 0.0, 0.0),
        max: Vec3::new(1.0, 1.0, 1.0),
    };
    let inverted = Aabb3 {
        min: Vec3::new(2.0, 0.0, 0.0),
        max: Vec3::new(1.0, 1.0, 1.0),
    };
    let far = unit(3.0e9);
    let huge = Aabb3::new(Vec3::new(0.0, 0.0, 0.0), Vec3::new(100.0, 100.0, 100.0)).unwrap();
    assert_eq!(h.insert(2, nan), Err(Error::NonFinite));
    assert_eq!(h.insert(2, inverted), Err(Error::InvertedBox));
    assert_eq!(h.insert(2, far), Err(Error::OutOfRange));
    assert_eq!(h.insert(9, unit(0.0)), Err(Error::IdOutOfRange { id: 9 }));
    assert_eq!(h.insert(0, unit(0.0)), Err(Error::DuplicateId { id: 0 }));
    assert_eq!(h.update(3, unit(0.0)), Err(Error::UnknownId { id: 3 }));
    assert_eq!(h.update(0, nan), Err(Error::NonFinite));
    assert_eq!(h.remove(3), Err(Error::UnknownId { id: 3 }));
    // 50³ cells of size 2 (the largest class) cannot fit 24 entries.
    assert_eq!(
        h.insert(2, huge),
        Err(Error::CapacityExceeded { capacity: 24 })
    );
    assert_eq!(
        h.update(1, huge),
        Err(Error::CapacityExceeded { capacity: 24 })
    );
    assert_eq!(h.query(&nan, |_| {}), Err(Error::NonFinite));
    // Particles: too many, non-finite, bad radius; the old set stays.
    let pts = [Vec3::new(0.2, 0.2, 0.2), Vec3::new(0.4, 0.2, 0.2)];
    h.build(&pts, 0.5).unwrap();
    assert_eq!(
        h.build(&[Vec3::ZERO; 5], 0.5),
        Err(Error::CapacityExceeded { capacity: 4 })
    );
    assert_eq!(
        h.build(&[Vec3::new(f32::NAN, 0.0, 0.0)], 0.5),
        Err(Error::NonFinite)
    );
    assert_eq!(h.build(&pts, 0.0), Err(Error::InvalidRadius));
    assert_eq!(h.build(&pts, f32::NAN), Err(Error::InvalidRadius));
    // Pool: 16 entries of objects 0 and 1 (unit boxes on the cell grid
    // touch 2 × 2 × 2 cells of size 1) plus the particles.
    assert_eq!(
        h.build(&[Vec3::ZERO; 4], 0.5)
            .and_then(|_| h.build(&pts, 0.5)),
        Ok(())
    );
    h.validate().unwrap();
    assert_eq!(collect_box_pairs(&mut h), before);
    assert_eq!(NeighborSearch::len(&h), 2);
    assert_eq!(collect_pairs(&h), vec![(0, 1)]);
    // Filling the pool exactly works; one entry more fails and loses nothing.
    let mut k = 2;
    let mut filled = Vec::new();
    loop {
        match h.insert(k, unit(10.0 + 3.0 * k as f32)) {
            Ok(()) => {
                filled.push(k);
                k += 1;
                if k == 4 {
                    break;
                }
            }
            Err(e) => {
                assert!(matches!(e, Error::CapacityExceeded { .. }), "{e:?}");
                break;
            }
        }
    }
    h.validate().unwrap();
    assert_eq!(collect_box_pairs(&mut h), before);
    for id in filled {
        assert!(h.get(id).is_some());
    }
    // Bad configurations and tables.
    assert_eq!(HashConfig::<Vec3>::new(0.0, 1), Err(Error::InvalidRadius));
    assert_eq!(
        HashConfig::<Vec3>::new(1.0, 1 << 31),
        Err(Error::InvalidConfig { field: "levels" })
    );
    assert_eq!(
        HashConfig::<Vec3>::new(1.0, 1)
            .unwrap()
            .add_size(f32::INFINITY),
        Err(Error::NonFinite)
    );
    let mut bad = make::class_hash::<Multilevel, Aabb3>(4, 100, 16, 0, cfg);
    assert_eq!(
        bad.insert(0, unit(0.0)),
        Err(Error::InvalidTableLength { len: 100 })
    );
    assert_eq!(BroadPhase::box_count(&bad), 0);
    bad.validate().unwrap();
    let mut zero = make::class_hash::<Multilevel, Aabb3>(4, 0, 16, 0, cfg);
    assert_eq!(
        zero.insert(0, unit(0.0)),
        Err(Error::InvalidTableLength { len: 0 })
    );
    assert_eq!(zero.query(&unit(0.0), |_| panic!()), Ok(()));
}

/// A run-time size no class was made for goes to the nearest greater class;
/// a size above every class is subdivided in the largest.
#[test]
fn run_time_sizes_map_to_the_nearest_greater_class() {
    let cfg = HashConfig::<Vec2>::from_sizes(1.0, [4.0, 32.0]).unwrap();
    assert_eq!(cfg.levels(), 0b10_0101);
    let b = |e: f32| Aabb2::new(Vec2::new(0.0, 0.0), Vec2::new(e, e * 0.5)).unwrap();
    assert_eq!(cfg.class_of(&b(0.5)), 0);
    assert_eq!(cfg.class_of(&b(1.0)), 0);
    assert_eq!(cfg.class_of(&b(1.5)), 2);
    assert_eq!(cfg.class_of(&b(5.0)), 5);
    assert_eq!(cfg.class_of(&b(32.0)), 5);
    assert_eq!(cfg.class_of(&b(33.0)), 5);
    // 33 × 16.5 at size 32: 2 × 1 cells (lower corner at 0).
    assert_eq!(cfg.entries_of(&b(33.0)), Ok(2));
    assert_eq!(cfg.entries_of(&b(100.0)), Ok(4 * 2));
}

/// The memory formula of the README: `40C + 8T + 8E + 12N` bytes in 3D,
/// `32C + 8T + 8E + 8N` in 2D.
#[test]
fn memory_formula() {
    use core::mem::size_of;
    use spatium::hhash::{HashBucket, HashEntry, HashSlot};
    assert_eq!(size_of::<HashSlot<Aabb3>>(), 40);
    assert_eq!(size_of::<HashSlot<Aabb2>>(), 32);
    assert_eq!(size_of::<HashBucket>(), 8);
    assert_eq!(size_of::<HashEntry>(), 8);
    let (c, t, e, n) = (7, 64, 50, 9);
    let h3 = make::class_hash::<Hierarchical, Aabb3>(c, t, e, n, HashConfig::DEFAULT);
    assert_eq!(h3.memory_bytes(), 40 * c + 8 * t + 8 * e + 12 * n);
    let h2 = make::class_hash::<Multilevel, Aabb2>(c, t, e, n, HashConfig::DEFAULT);
    assert_eq!(h2.memory_bytes(), 32 * c + 8 * t + 8 * e + 8 * n);
}
