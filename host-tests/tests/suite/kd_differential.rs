//! The linear kd-tree against brute force: every box scenario, the point
//! scenarios as zero-extent and radius-sized boxes, every code width, split
//! policy, octree mode, both sorts, fixed and automatic frames (boxes
//! straddling the root's first cuts, boxes outside a small root), starved
//! record buffers and temporal reuse. Raw and unique candidates must contain
//! every overlapping pair, the unique ones without duplicates, and the exact
//! pairs must equal brute force. The records are validated against the boxes
//! after every build.

use spatium::Inspect;
use spatium::kdtree::{
    Candidates, KdBroadPhase, KdConfig, KdRecord, KdSlot, LinearKdTree, LocCode, SortAlgo, Split,
};
use spatium::{Aabb2, Aabb3, BoundingBox, BroadPhase, Error, Point, Validate, Vec2, Vec3};
use spatium_host::oracle::{
    assert_same_pairs, collect_box_pairs, missing_pairs, overlapping_pairs,
};
use spatium_host::rng::Rng;
use spatium_host::scenarios::{BoxScenario, box_scenarios, point_scenarios};

type VecTree<B, K> = LinearKdTree<B, K, Vec<KdRecord<K>>>;

fn tree<B: BoundingBox, K: LocCode>(records: usize, config: KdConfig<B>) -> VecTree<B, K> {
    LinearKdTree::new(
        vec![KdRecord::EMPTY; records],
        vec![KdRecord::EMPTY; records],
        config,
    )
}

fn sorted(mut v: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    for p in v.iter_mut() {
        *p = (p.0.min(p.1), p.0.max(p.1));
    }
    v.sort_unstable();
    v
}

/// Builds and checks every mode against `want`.
fn check_build<B: BoundingBox, K: LocCode>(
    t: &mut VecTree<B, K>,
    boxes: &[B],
    want: &[(u32, u32)],
    rng: &mut Rng,
    what: &str,
) {
    t.build(boxes)
        .unwrap_or_else(|e| panic!("{what}: build {e}"));
    t.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
    t.validate_against(boxes)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut raw = Vec::new();
    t.for_each_candidate_pair(boxes, Candidates::Raw, |a, b| raw.push((a, b)))
        .unwrap();
    assert_eq!(raw.len() as u64, t.count_raw(), "{what}: count_raw");
    assert!(raw.iter().all(|p| p.0 != p.1), "{what}: self pair");
    let mut raw = sorted(raw);
    raw.dedup();
    let missing = missing_pairs(&raw, want);
    assert!(missing.is_empty(), "{what}: raw misses {missing:?}");

    let mut unique = Vec::new();
    t.for_each_candidate_pair(boxes, Candidates::Unique, |a, b| unique.push((a, b)))
        .unwrap();
    let unique = sorted(unique);
    let mut dedup = unique.clone();
    dedup.dedup();
    assert_eq!(dedup.len(), unique.len(), "{what}: unique has duplicates");
    let missing = missing_pairs(&unique, want);
    assert!(missing.is_empty(), "{what}: unique misses {missing:?}");

    let mut exact = Vec::new();
    t.for_each_candidate_pair(boxes, Candidates::Exact, |a, b| exact.push((a, b)))
        .unwrap();
    let exact = sorted(exact);
    assert_same_pairs(
        &exact,
        want,
        &format!("{what} exact, stats {:?}", t.stats()),
    );
    // Box queries.
    for _ in 0..6 {
        let q = boxes[rng.below(boxes.len())];
        let grow = rng.range(0.0, 4.0) * (q.longest_edge() + 0.5);
        let q = B::try_new(
            B::Point::from_fn(|k| q.min().coord(k) - grow),
            B::Point::from_fn(|k| q.max().coord(k) + grow * 0.5),
        )
        .unwrap();
        let mut got = Vec::new();
        t.query(boxes, &q, |id| got.push(id)).unwrap();
        got.sort_unstable();
        let want: Vec<u32> = (0..boxes.len() as u32)
            .filter(|&i| q.overlaps(&boxes[i as usize]))
            .collect();
        assert_eq!(got, want, "{what}: query {q:?}");
    }
}

fn configs<B: BoundingBox>(sc_root: B) -> Vec<(&'static str, KdConfig<B>, usize)> {
    let d = KdConfig::<B>::DEFAULT;
    // A root covering the lower half of the scene: half the boxes clamped.
    let half = B::try_new(
        sc_root.min(),
        B::Point::from_fn(|k| 0.5 * (sc_root.min().coord(k) + sc_root.max().coord(k))),
    )
    .unwrap();
    vec![
        ("default", d, 8),
        ("no_split", d.with_split(Split::None).unwrap(), 1),
        (
            "gain2",
            d.with_split(Split::Volume { min_gain_log2: 2 }).unwrap(),
            8,
        ),
        ("octree", d.with_octree(true), 8),
        ("comparison_sort", d.with_sort(SortAlgo::Comparison), 8),
        ("fixed_root", d.with_root(Some(sc_root)).unwrap(), 8),
        ("half_root_clamped", d.with_root(Some(half)).unwrap(), 8),
        ("one_bit", d.with_bits_per_axis(1), 8),
        ("starved_records", d, 1),
        ("some_room", d, 2),
        ("reuse", d.with_temporal_reuse(true), 8),
        (
            "reuse_no_split_fixed_root",
            d.with_temporal_reuse(true)
                .with_split(Split::None)
                .unwrap()
                .with_root(Some(sc_root))
                .unwrap(),
            1,
        ),
    ]
}

fn bounds<B: BoundingBox>(boxes: &[B]) -> B {
    boxes.iter().skip(1).fold(boxes[0], |a, b| a.union(b))
}

fn run_scenario<B: BoundingBox, K: LocCode>(sc: &mut BoxScenario<B>, steps: usize, seed: u64) {
    let root = bounds(&sc.boxes);
    let cfgs = configs(root);
    let mut trees: Vec<_> = cfgs
        .iter()
        .map(|(_, c, per)| tree::<B, K>(sc.boxes.len() * per, *c))
        .collect();
    let mut rng = Rng::new(seed);
    for step in 0..steps {
        let want = overlapping_pairs(&sc.boxes);
        for ((name, _, _), t) in cfgs.iter().zip(trees.iter_mut()) {
            let what = format!(
                "{} n={} {name} K={} step {step}",
                sc.name,
                sc.boxes.len(),
                K::BITS
            );
            check_build(t, &sc.boxes, &want, &mut rng, &what);
        }
        sc.step();
    }
}

#[test]
fn box_scenarios_3d_u64() {
    for n in [20, 300, 2500] {
        for mut sc in box_scenarios::<Aabb3>(n, 11) {
            run_scenario::<Aabb3, u64>(&mut sc, 3, 1);
        }
    }
}

#[test]
fn box_scenarios_2d_u64() {
    for n in [20, 300, 2500] {
        for mut sc in box_scenarios::<Aabb2>(n, 12) {
            run_scenario::<Aabb2, u64>(&mut sc, 3, 2);
        }
    }
}

#[test]
fn box_scenarios_u32_and_u128() {
    for n in [20, 700] {
        for mut sc in box_scenarios::<Aabb3>(n, 13) {
            run_scenario::<Aabb3, u32>(&mut sc, 2, 3);
            run_scenario::<Aabb3, u128>(&mut sc, 2, 4);
        }
        for mut sc in box_scenarios::<Aabb2>(n, 14) {
            run_scenario::<Aabb2, u32>(&mut sc, 2, 5);
            run_scenario::<Aabb2, u128>(&mut sc, 2, 6);
        }
    }
}

/// The point scenarios as zero-extent boxes (full-depth codes) and as boxes
/// of the scenario's radius.
fn point_boxes<P: Point>(n: usize, seed: u64) {
    for sc in point_scenarios::<P>(n, seed) {
        let zero: Vec<P::Aabb> = sc
            .points
            .iter()
            .map(|&p| P::Aabb::try_new(p, p).unwrap())
            .collect();
        let sized: Vec<P::Aabb> = sc
            .points
            .iter()
            .map(|&p| P::Aabb::try_new(p, P::from_fn(|k| p.coord(k) + sc.radius)).unwrap())
            .collect();
        for (kind, boxes) in [("zero", zero), ("sized", sized)] {
            let want = overlapping_pairs(&boxes);
            let mut rng = Rng::new(seed);
            for (name, c, per) in configs(bounds(&boxes)) {
                let mut t = tree::<P::Aabb, u64>(boxes.len() * per, c);
                let what = format!("{} {kind} n={} {name}", sc.name, boxes.len());
                check_build(&mut t, &boxes, &want, &mut rng, &what);
            }
            // Full-depth codes: the deepest tree the type holds.
            let mut t = tree::<P::Aabb, u64>(
                boxes.len() * 8,
                KdConfig::DEFAULT.with_bits_per_axis(u64::max_bits_per_axis(P::DIM) as u8),
            );
            check_build(
                &mut t,
                &boxes,
                &want,
                &mut rng,
                &format!("{} {kind} full depth", sc.name),
            );
            let mut t = tree::<P::Aabb, u128>(
                boxes.len() * 8,
                KdConfig::DEFAULT.with_bits_per_axis(u128::max_bits_per_axis(P::DIM) as u8),
            );
            check_build(
                &mut t,
                &boxes,
                &want,
                &mut rng,
                &format!("{} {kind} full depth u128", sc.name),
            );
        }
    }
}

#[test]
fn point_scenarios_as_boxes_3d() {
    point_boxes::<Vec3>(600, 21);
}

#[test]
fn point_scenarios_as_boxes_2d() {
    point_boxes::<Vec2>(600, 22);
}

/// Boxes on the root's first cutting planes: every box straddles the cut
/// across x at the middle, some also across y and z, and touching boxes meet
/// exactly on the planes.
#[test]
fn boxes_straddling_the_first_cuts() {
    let root = Aabb3::new(Vec3::new(0.0, 0.0, 0.0), Vec3::new(64.0, 64.0, 64.0)).unwrap();
    let mut rng = Rng::new(5);
    let mut boxes = Vec::new();
    for i in 0..400 {
        let c = [
            32.0,
            if i % 2 == 0 {
                32.0
            } else {
                rng.range(0.0, 64.0)
            },
            if i % 3 == 0 {
                32.0
            } else {
                rng.range(0.0, 64.0)
            },
        ];
        let h = [
            rng.range(0.0, 1.0),
            rng.range(0.0, 1.0),
            rng.range(0.0, 1.0),
        ];
        let lo = Vec3::new(c[0] - h[0], c[1] - h[1], c[2] - h[2]);
        let hi = if i % 5 == 0 {
            Vec3::new(c[0], c[1] + h[1], c[2] + h[2]) // ends on the plane
        } else {
            Vec3::new(c[0] + h[0], c[1] + h[1], c[2] + h[2])
        };
        boxes.push(Aabb3::new(lo, hi).unwrap());
    }
    let want = overlapping_pairs(&boxes);
    let d = KdConfig::DEFAULT.with_root(Some(root)).unwrap();
    for (name, c) in [
        ("split", d),
        ("octree", d.with_octree(true)),
        ("no_split", d.with_split(Split::None).unwrap()),
        ("bits10", d.with_bits_per_axis(10)),
    ] {
        let mut t = tree::<Aabb3, u32>(boxes.len() * 8, c);
        check_build(&mut t, &boxes, &want, &mut rng, name);
    }
    // Splitting takes the straddlers off the root: most records end deep.
    let mut t = tree::<Aabb3, u32>(boxes.len() * 8, d.with_bits_per_axis(10));
    t.build(&boxes).unwrap();
    let s = t.stats();
    assert!(s.split_elements > 300, "{s:?}");
    let shallow = t
        .records()
        .iter()
        .filter(|r| t.cell(r.key).unwrap().1 < 3)
        .count();
    assert_eq!(shallow, 0, "no piece stays in the first three levels");
}

#[test]
fn cells_of_keys_contain_their_pieces() {
    let mut sc = box_scenarios::<Aabb3>(500, 31).remove(3);
    let mut t = tree::<Aabb3, u64>(4000, KdConfig::DEFAULT);
    t.build(&sc.boxes).unwrap();
    for r in t.records() {
        let (cell, _) = t.cell(r.key).unwrap();
        let b = sc.boxes[r.id() as usize];
        // The piece lies in the cell, so the cell overlaps the box.
        assert!(cell.overlaps(&b), "{cell:?} {b:?}");
    }
    sc.step();
}

#[test]
fn broad_phase_matches_brute_force() {
    for mut sc in box_scenarios::<Aabb3>(800, 41) {
        let n = sc.boxes.len();
        let cap = n + 64;
        let mut bp = KdBroadPhase::<Aabb3, u64, _, _>::new(
            vec![KdSlot::EMPTY; cap],
            vec![KdRecord::EMPTY; 4 * n],
            vec![KdRecord::EMPTY; 4 * n],
            KdConfig::DEFAULT.with_temporal_reuse(true),
        );
        // Sparse ids: box i under id 2i (mod cap) area.
        let ids: Vec<u32> = (0..n as u32).map(|i| (i * 7) % cap as u32).collect();
        let mut uniq = ids.clone();
        uniq.sort_unstable();
        uniq.dedup();
        assert_eq!(uniq.len(), n);
        for (i, &id) in ids.iter().enumerate() {
            bp.insert(id, sc.boxes[i]).unwrap();
        }
        let map = |v: Vec<(u32, u32)>| {
            sorted(
                v.into_iter()
                    .map(|(a, b)| (ids[a as usize], ids[b as usize]))
                    .collect(),
            )
        };
        let mut rng = Rng::new(3);
        for step in 0..4 {
            bp.validate().unwrap();
            let got = collect_box_pairs(&mut bp);
            bp.validate().unwrap();
            assert_eq!(
                got,
                map(overlapping_pairs(&sc.boxes)),
                "{} step {step}",
                sc.name
            );
            let q = sc.boxes[rng.below(n)];
            let mut hits = Vec::new();
            bp.query(&q, |id| hits.push(id)).unwrap();
            hits.sort_unstable();
            let mut want: Vec<u32> = (0..n)
                .filter(|&i| q.overlaps(&sc.boxes[i]))
                .map(|i| ids[i])
                .collect();
            want.sort_unstable();
            assert_eq!(hits, want);
            sc.step();
            for (i, &id) in ids.iter().enumerate() {
                bp.update(id, sc.boxes[i]).unwrap();
            }
        }
        // Remove half, pairs still right.
        for i in (0..n).step_by(2) {
            assert_eq!(bp.remove(ids[i]).unwrap(), sc.boxes[i]);
        }
        let left: Vec<usize> = (1..n).step_by(2).collect();
        let sub: Vec<Aabb3> = left.iter().map(|&i| sc.boxes[i]).collect();
        let want = sorted(
            overlapping_pairs(&sub)
                .into_iter()
                .map(|(a, b)| (ids[left[a as usize]], ids[left[b as usize]]))
                .collect(),
        );
        assert_eq!(collect_box_pairs(&mut bp), want);
        bp.validate().unwrap();
        bp.clear();
        assert_eq!(bp.box_count(), 0);
        assert_eq!(collect_box_pairs(&mut bp), vec![]);
    }
}

#[test]
fn bad_input_changes_nothing() {
    let b = |x: f32| Aabb3::new(Vec3::new(x, 0.0, 0.0), Vec3::new(x + 1.0, 1.0, 1.0)).unwrap();
    let good = vec![b(0.0), b(0.5), b(3.0)];
    let mut t = tree::<Aabb3, u64>(8, KdConfig::DEFAULT);
    t.build(&good).unwrap();
    let before: Vec<_> = t.records().to_vec();
    let nan = Aabb3 {
        min: Vec3::new(f32::NAN, 0.0, 0.0),
        max: Vec3::new(1.0, 1.0, 1.0),
    };
    let inverted = Aabb3 {
        min: Vec3::new(2.0, 0.0, 0.0),
        max: Vec3::new(1.0, 1.0, 1.0),
    };
    let inf = Aabb3 {
        min: Vec3::new(0.0, 0.0, 0.0),
        max: Vec3::new(f32::INFINITY, 1.0, 1.0),
    };
    assert_eq!(t.build(&[b(0.0), nan]), Err(Error::NonFinite));
    assert_eq!(t.build(&[inverted]), Err(Error::InvertedBox));
    assert_eq!(t.build(&[inf]), Err(Error::NonFinite));
    let too_many = vec![b(0.0); 9];
    assert_eq!(
        t.build(&too_many),
        Err(Error::CapacityExceeded { capacity: 8 })
    );
    let mut bad_bits = t.clone();
    bad_bits.set_config(KdConfig::DEFAULT.with_bits_per_axis(22));
    assert_eq!(
        bad_bits.build(&good),
        Err(Error::InvalidConfig { field: "bits" })
    );
    assert_eq!(t.records(), &before[..]);
    t.validate_against(&good).unwrap();
    assert_eq!(
        t.for_each_candidate_pair(&good[..2], Candidates::Exact, |_, _| {}),
        Err(Error::LengthMismatch {
            expected: 3,
            got: 2
        })
    );
    assert_eq!(t.query(&good, &nan, |_| {}), Err(Error::NonFinite));
    assert!(
        KdConfig::<Aabb3>::DEFAULT
            .with_split(Split::Volume { min_gain_log2: 33 })
            .is_err()
    );
    let flat = Aabb3::new(Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 1.0)).unwrap();
    assert_eq!(
        KdConfig::<Aabb3>::DEFAULT.with_root(Some(flat)),
        Err(Error::InvalidConfig { field: "root" })
    );

    // Broad phase: errors change nothing, a full one loses nothing.
    let mut bp = KdBroadPhase::<Aabb3, u32, _, _>::new(
        vec![KdSlot::EMPTY; 4],
        vec![KdRecord::EMPTY; 2],
        vec![KdRecord::EMPTY; 2],
        KdConfig::DEFAULT,
    );
    bp.insert(0, b(0.0)).unwrap();
    bp.insert(3, b(0.5)).unwrap();
    assert_eq!(
        bp.insert(1, b(9.0)),
        Err(Error::CapacityExceeded { capacity: 2 })
    );
    assert_eq!(bp.insert(4, b(9.0)), Err(Error::IdOutOfRange { id: 4 }));
    assert_eq!(bp.insert(0, b(9.0)), Err(Error::DuplicateId { id: 0 }));
    assert_eq!(bp.update(1, b(9.0)), Err(Error::UnknownId { id: 1 }));
    assert_eq!(bp.update(0, nan), Err(Error::NonFinite));
    assert_eq!(bp.remove(2), Err(Error::UnknownId { id: 2 }));
    assert_eq!(bp.get(0), Some(b(0.0)));
    assert_eq!(collect_box_pairs(&mut bp), vec![(0, 3)]);
    bp.validate().unwrap();
}

/// The memory formula of the README: record sizes per code type and the
/// slot size of the broad phase.
#[test]
fn memory_formula_sizes() {
    use core::mem::size_of;
    assert_eq!(size_of::<KdRecord<u32>>(), 8);
    assert_eq!(size_of::<KdRecord<u64>>(), 16);
    assert_eq!(size_of::<KdRecord<u128>>(), 32);
    assert_eq!(size_of::<KdSlot<Aabb3>>(), 24);
    assert_eq!(size_of::<KdSlot<Aabb2>>(), 16);
    // The struct around the buffers is small and fixed.
    assert!(size_of::<LinearKdTree<Aabb3, u64, [KdRecord<u64>; 0]>>() <= 256);
}

/// Temporal reuse repairs the previous order when boxes move little, and
/// falls back to a fresh build when they move a lot; pairs stay exact.
#[test]
fn temporal_reuse_repairs_small_motion() {
    let mut sc = box_scenarios::<Aabb3>(3000, 51).remove(0);
    let root = bounds(&sc.boxes);
    let root = Aabb3::new(
        Vec3::from_fn(|k| root.min().coord(k) - 50.0),
        Vec3::from_fn(|k| root.max().coord(k) + 50.0),
    )
    .unwrap();
    for split in [Split::None, Split::Volume { min_gain_log2: 0 }] {
        let config = KdConfig::DEFAULT
            .with_split(split)
            .unwrap()
            .with_root(Some(root))
            .unwrap()
            .with_temporal_reuse(true);
        let mut t = tree::<Aabb3, u64>(3000 * 8, config);
        t.build(&sc.boxes).unwrap();
        assert!(!t.stats().reused, "first build is fresh");
        let mut reused = 0;
        let mut rng = Rng::new(9);
        for _ in 0..5 {
            // A tiny drift: most keys stay, a few change.
            for b in sc.boxes.iter_mut() {
                let d = rng.range(-1e-3, 1e-3);
                *b = Aabb3::new(
                    Vec3::from_fn(|k| b.min().coord(k) + d),
                    Vec3::from_fn(|k| b.max().coord(k) + d),
                )
                .unwrap();
            }
            let want = overlapping_pairs(&sc.boxes);
            check_build(&mut t, &sc.boxes, &want, &mut rng, "reuse");
            reused += t.stats().reused as usize;
        }
        if split == Split::None {
            assert_eq!(reused, 5, "no split: every small step reuses");
        }
        // A big move: the repair gives up, a fresh build follows.
        sc.step();
        for _ in 0..20 {
            sc.step();
        }
        let want = overlapping_pairs(&sc.boxes);
        check_build(&mut t, &sc.boxes, &want, &mut rng, "after big move");
        eprintln!(
            "{split:?}: reused {reused} of 5 small steps; big move reused {}",
            t.stats().reused
        );
    }
}

/// A new configuration forgets the last build: no stale answers.
#[test]
fn set_config_forgets_the_last_build() {
    let b = |x: f32| Aabb3::new(Vec3::new(x, 0.0, 0.0), Vec3::new(x + 1.0, 1.0, 1.0)).unwrap();
    let boxes = [b(0.0), b(0.5)];
    let mut t = tree::<Aabb3, u64>(16, KdConfig::DEFAULT);
    t.build(&boxes).unwrap();
    t.set_config(KdConfig::DEFAULT.with_octree(true));
    assert_eq!(t.len(), 0);
    assert_eq!(t.stats(), Default::default());
    assert_eq!(
        t.for_each_candidate_pair(&boxes, Candidates::Exact, |_, _| {}),
        Err(Error::LengthMismatch {
            expected: 0,
            got: 2
        })
    );
    t.build(&boxes).unwrap();
    let mut n = 0;
    t.for_each_candidate_pair(&boxes, Candidates::Exact, |_, _| n += 1)
        .unwrap();
    assert_eq!(n, 1);
}
