//! Ray and segment casts (`spatium::ray`) in every broad phase of the
//! run-time registry, 3D and 2D, on every box scenario generator: the first
//! hit and all hits equal a brute-force oracle over the scenario's boxes for
//! many rays (random, axis-parallel, grazing faces and edges, starting
//! inside boxes, unbounded, segments), with the boxes as the narrow phase
//! and with narrow phases that reject ids, shorten the ray or answer
//! nonsense; each id reaches the narrow phase at most once per cast.

use std::collections::HashSet;

use spatium::filter::Groups;
use spatium::{Aabb2, Aabb3, BoundingBox, BroadPhase, Error, Point, Ray, RayCast, RayHit};
use spatium_host::boxes::TestBox;
use spatium_host::rng::Rng;
use spatium_host::runtime::AnyBroad;
use spatium_host::scenarios::box_scenarios;
use spatium_host_tests::model::seeded_groups;
use spatium_host_tests::registry::{self, broad_kinds};

/// Boxes per scenario.
const N: usize = 1200;
/// Rays per scenario.
const RAYS: usize = 300;

/// The narrow phases under test, as functions of `(id, t_enter)`.
#[derive(Clone, Copy, Debug)]
enum Narrow {
    /// The box itself.
    Boxes,
    /// Rejects one id in three, hits the others a little after the entry.
    Shortening,
    /// NaN, negative, huge and early answers for some ids.
    Nonsense,
}

impl Narrow {
    fn call(self, id: u32, t: f32) -> Option<f32> {
        match self {
            Narrow::Boxes => Some(t),
            Narrow::Shortening => {
                (!id.is_multiple_of(3)).then_some(t + 0.01 * (id % 7) as f32 * (1.0 + t))
            }
            Narrow::Nonsense => match id % 5 {
                0 => Some(f32::NAN),
                1 => Some(-1.0),
                2 => Some(f32::INFINITY),
                3 => Some(t * 0.5),
                _ => Some(t),
            },
        }
    }
}

/// The documented rules for a narrow answer, applied once per box.
fn oracle_all<B: BoundingBox>(boxes: &[B], ray: &Ray<B::Point>, narrow: Narrow) -> Vec<RayHit> {
    let mut out = Vec::new();
    for (id, b) in boxes.iter().enumerate() {
        // A removed id is a NaN box here.
        if b.check().is_err() {
            continue;
        }
        let Some(te) = ray.enter(b) else { continue };
        let Some(t) = narrow.call(id as u32, te) else {
            continue;
        };
        if t.is_nan() || t > ray.max_t() {
            continue;
        }
        out.push(RayHit {
            id: id as u32,
            t: t.max(te),
        });
    }
    out.sort_by(RayHit::order);
    out
}

fn point<P: Point>(rng: &mut Rng, lo: f32, hi: f32) -> P {
    P::from_fn(|_| rng.range(lo, hi))
}

/// Rays of every kind over a scene in `[0, extent)`.
fn rays<B: BoundingBox>(boxes: &[B], extent: B::Point, seed: u64) -> Vec<Ray<B::Point>> {
    let dim = B::Point::DIM;
    let mut rng = Rng::new(seed);
    let e = (0..dim).map(|k| extent.coord(k)).fold(0.0f32, f32::max);
    let mut out = Vec::new();
    while out.len() < RAYS {
        let pick = &boxes[rng.below(boxes.len())];
        let r = match out.len() % 9 {
            // Random origin around the scene, random direction, finite or not.
            0 => {
                let o = point::<B::Point>(&mut rng, -0.1 * e, 1.1 * e);
                let d = B::Point::from_fn(|_| rng.normal());
                let max_t = if rng.below(2) == 0 {
                    f32::INFINITY
                } else {
                    rng.range(0.0, 2.0 * e)
                };
                Ray::new(o, d, max_t)
            }
            // Axis-parallel along a face of a stored box (grazing it).
            1 => {
                let axis = rng.below(dim);
                let sign = if rng.below(2) == 0 { 1.0 } else { -1.0 };
                let d = B::Point::from_fn(|k| if k == axis { sign } else { 0.0 });
                let o = B::Point::from_fn(|k| {
                    if k == axis {
                        rng.range(-0.1 * e, 1.1 * e)
                    } else if rng.below(2) == 0 {
                        pick.min().coord(k)
                    } else {
                        pick.max().coord(k)
                    }
                });
                Ray::new(o, d, f32::INFINITY)
            }
            // From inside a box.
            2 => {
                let o = B::Point::from_fn(|k| 0.5 * (pick.min().coord(k) + pick.max().coord(k)));
                let d = B::Point::from_fn(|_| rng.normal());
                Ray::new(o, d, rng.range(0.0, 0.3 * e))
            }
            // A segment between two points of the scene.
            3 => Ray::segment(
                point::<B::Point>(&mut rng, 0.0, e),
                point::<B::Point>(&mut rng, 0.0, e),
            ),
            // A segment from a box corner across the scene (grazing edges).
            4 => Ray::segment(pick.min(), point::<B::Point>(&mut rng, 0.0, e)),
            // A diagonal through two corners of a stored box.
            5 => {
                let d = pick.max() - pick.min();
                Ray::new(pick.min() - d, d, f32::INFINITY)
            }
            // Axis-parallel from far outside, one other coordinate zero
            // direction, the rest random (2D: plain axis ray).
            6 => {
                let axis = rng.below(dim);
                let d = B::Point::from_fn(|k| if k == axis { -1.0 } else { 0.0 });
                let o = B::Point::from_fn(|k| {
                    if k == axis {
                        10.0 * e
                    } else {
                        rng.range(0.0, e)
                    }
                });
                Ray::new(o, d, f32::INFINITY)
            }
            // From beyond every grid's and hash's range (10⁷, more than
            // 2²⁰ cells away) towards the scene: the scans take over.
            7 => {
                let o = B::Point::from_fn(|k| if k == 0 { 1.0e7 } else { rng.range(0.0, e) });
                let target = point::<B::Point>(&mut rng, 0.0, e);
                Ray::new(o, target - o, f32::INFINITY)
            }
            // Unbounded from far away towards the scene.
            _ => {
                let o = point::<B::Point>(&mut rng, -50.0 * e, 50.0 * e);
                let target = point::<B::Point>(&mut rng, 0.0, e);
                Ray::new(o, target - o, f32::INFINITY)
            }
        };
        if let Ok(r) = r {
            out.push(r);
        }
    }
    out
}

fn every_kind<B: TestBox>(seed: u64) {
    for sc in box_scenarios::<B>(N, seed) {
        let rays = rays(&sc.boxes, sc.extent, seed ^ 0xAA);
        let (groups, with) = seeded_groups(seed ^ 0x5E, sc.boxes.len());
        let mut checked_hits = 0usize;
        for kind in broad_kinds() {
            let name = format!("{} on {}", registry::broad_name::<B>(kind), sc.name);
            let mut bp = AnyBroad::new(kind, &sc.boxes, 1.0).expect(&name);
            for (id, b) in sc.boxes.iter().enumerate() {
                bp.insert(id as u32, *b).expect(&name);
            }
            let mut buf = vec![RayHit::default(); sc.boxes.len()];
            for (i, ray) in rays.iter().enumerate() {
                for narrow in [Narrow::Boxes, Narrow::Shortening, Narrow::Nonsense] {
                    let want = oracle_all(&sc.boxes, ray, narrow);
                    let mut seen = HashSet::new();
                    let got = bp
                        .cast(ray, |id, t| {
                            assert!(seen.insert(id), "{name}: ray {i}: id {id} twice");
                            assert!(t >= 0.0 && t <= ray.max_t(), "{name}: t_enter {t}");
                            assert_eq!(Some(t), ray.enter(&sc.boxes[id as usize]));
                            narrow.call(id, t)
                        })
                        .expect(&name);
                    assert_eq!(
                        got,
                        want.first().copied(),
                        "{name}: ray {i} {ray:?} {narrow:?}"
                    );
                    let mut seen = HashSet::new();
                    let n = bp
                        .cast_all(
                            ray,
                            |id, t| {
                                assert!(seen.insert(id), "{name}: ray {i}: id {id} twice");
                                narrow.call(id, t)
                            },
                            &mut buf,
                        )
                        .expect(&name);
                    assert_eq!(
                        &buf[..n],
                        &want[..],
                        "{name}: ray {i} {ray:?} {narrow:?} all"
                    );
                    checked_hits += n;
                }
                // Filtered: the ids that do not interact never reach narrow.
                let want: Vec<RayHit> = oracle_all(&sc.boxes, ray, Narrow::Boxes)
                    .into_iter()
                    .filter(|h| groups[h.id as usize].interacts(with))
                    .collect();
                let got = bp
                    .cast_filtered(ray, with, &groups, |id, t| {
                        assert!(groups[id as usize].interacts(with));
                        Some(t)
                    })
                    .expect(&name);
                assert_eq!(got, want.first().copied(), "{name}: ray {i} filtered");
                let n = bp
                    .cast_all_filtered(ray, with, &groups, |_, t| Some(t), &mut buf)
                    .expect(&name);
                assert_eq!(&buf[..n], &want[..], "{name}: ray {i} filtered all");
                assert_eq!(
                    bp.first_box(ray).expect(&name),
                    oracle_all(&sc.boxes, ray, Narrow::Boxes).first().copied()
                );
            }
        }
        assert!(
            checked_hits > 10 * RAYS,
            "{}: too few hits ({checked_hits})",
            sc.name
        );
    }
}

#[test]
fn casts_equal_brute_force_3d() {
    every_kind::<Aabb3>(0x5AE1);
}

#[test]
fn casts_equal_brute_force_2d() {
    every_kind::<Aabb2>(0x5AE2);
}

/// After removals and updates the casts still follow the stored boxes.
#[test]
fn casts_follow_updates() {
    for sc in box_scenarios::<Aabb3>(400, 77) {
        let mut moved = sc.clone();
        moved.step();
        let rays = rays(&sc.boxes, sc.extent, 78);
        for kind in broad_kinds() {
            let name = format!("{} on {}", registry::broad_name::<Aabb3>(kind), sc.name);
            let mut bp = AnyBroad::new(kind, &sc.boxes, 1.0).expect(&name);
            for (id, b) in sc.boxes.iter().enumerate() {
                bp.insert(id as u32, *b).expect(&name);
            }
            let mut buf = vec![RayHit::default(); sc.boxes.len()];
            let _ = bp.first_box(&rays[0]).expect(&name);
            for (id, b) in moved.boxes.iter().enumerate() {
                if id % 4 == 0 {
                    bp.remove(id as u32).expect(&name);
                } else {
                    bp.update(id as u32, *b).expect(&name);
                }
            }
            let live: Vec<Aabb3> = moved
                .boxes
                .iter()
                .enumerate()
                .map(|(id, b)| if id % 4 == 0 { Aabb3::NAN } else { *b })
                .collect();
            for ray in &rays {
                // NaN boxes are never entered: the oracle skips them.
                let want = oracle_all(&live, ray, Narrow::Boxes);
                let n = bp.cast_boxes(ray, &mut buf).expect(&name);
                assert_eq!(&buf[..n], &want[..], "{name}: {ray:?}");
            }
        }
    }
}

#[test]
fn errors_are_exact() {
    let boxes: Vec<Aabb3> = (0..10)
        .map(|i| Aabb3::raw([i as f32, 0.0, 0.0], [i as f32 + 0.5, 1.0, 1.0]))
        .collect();
    let ray = Ray::new(
        spatium::Vec3::new(-1.0, 0.5, 0.5),
        spatium::Vec3::new(1.0, 0.0, 0.0),
        f32::INFINITY,
    )
    .unwrap();
    for kind in broad_kinds() {
        let name = registry::broad_name::<Aabb3>(kind);
        let mut bp = AnyBroad::new(kind, &boxes, 1.0).expect(&name);
        for (id, b) in boxes.iter().enumerate() {
            bp.insert(id as u32, *b).expect(&name);
        }
        let mut small = [RayHit::default(); 3];
        assert_eq!(
            bp.cast_boxes(&ray, &mut small),
            Err(Error::BufferTooSmall {
                needed: 10,
                available: 3
            }),
            "{name}"
        );
        let mut exact = [RayHit::default(); 10];
        assert_eq!(bp.cast_boxes(&ray, &mut exact), Ok(10), "{name}");
        assert_eq!(exact[3], RayHit { id: 3, t: 4.0 }, "{name}");
        let groups = vec![Groups::ALL; 3];
        assert_eq!(
            bp.cast_filtered(&ray, Groups::ALL, &groups, |_, t| Some(t)),
            Err(Error::BufferTooSmall {
                needed: bp.capacity(),
                available: 3
            }),
            "{name}"
        );
        // Shortened to a hit in box 2: nothing beyond it is offered.
        let mut calls = Vec::new();
        let hit = bp
            .cast(&ray, |id, t| {
                calls.push(id);
                (id == 2).then_some(t + 0.25)
            })
            .expect(&name);
        assert_eq!(hit, Some(RayHit { id: 2, t: 3.25 }), "{name}");
        assert!(bp.validate_ok(), "{name}");
    }
    let o = spatium::Vec3::ZERO;
    assert_eq!(
        Ray::new(o, o, 1.0),
        Err(Error::InvalidConfig {
            field: "ray direction"
        })
    );
    assert_eq!(
        Ray::segment(o, o),
        Err(Error::InvalidConfig {
            field: "ray direction"
        })
    );
    assert_eq!(
        Ray::new(o, spatium::Vec3::new(1.0, 0.0, 0.0), -0.5),
        Err(Error::InvalidConfig { field: "max_t" })
    );
    assert_eq!(
        Ray::new(o, spatium::Vec3::new(f32::NAN, 0.0, 0.0), 1.0),
        Err(Error::NonFinite)
    );
    assert_eq!(
        Ray::new(o, spatium::Vec3::new(1.0, 0.0, 0.0), f32::NAN),
        Err(Error::NonFinite)
    );
}

trait ValidateOk {
    fn validate_ok(&self) -> bool;
}

impl<B: BoundingBox> ValidateOk for AnyBroad<B> {
    fn validate_ok(&self) -> bool {
        spatium::Validate::validate(self).is_ok()
    }
}

/// Hashing with a small table (collisions everywhere), boxes much larger
/// than the largest class (stored in many cells), and particles in the
/// same table: the casts still equal the oracle's.
#[test]
fn hashes_with_collisions_large_boxes_and_particles() {
    use spatium::NeighborSearch;
    use spatium::hhash::{HashConfig, Hierarchical, Multilevel};
    use spatium_host::make::{VecClassHash, class_hash};
    fn run<S: spatium::hhash::Scheme>(mut h: VecClassHash<S, Aabb3>, name: &str) {
        let mut rng = Rng::new(91);
        let boxes: Vec<Aabb3> = (0..200)
            .map(|_| {
                let lo = [0; 3].map(|_: i32| rng.range(0.0, 20.0));
                let e = if rng.below(4) == 0 {
                    rng.range(3.0, 9.0)
                } else {
                    rng.range(0.1, 1.5)
                };
                Aabb3::raw(lo, lo.map(|x| x + e))
            })
            .collect();
        for (id, b) in boxes.iter().enumerate() {
            h.insert(id as u32, *b).expect(name);
        }
        let points: Vec<spatium::Vec3> = (0..64)
            .map(|_| spatium::Vec3::from_fn(|_| rng.range(0.0, 20.0)))
            .collect();
        h.build(&points, 1.0).expect(name);
        let rays = rays(&boxes, spatium::Vec3::new(20.0, 20.0, 20.0), 92);
        let mut buf = vec![RayHit::default(); boxes.len()];
        for ray in &rays {
            let want = oracle_all(&boxes, ray, Narrow::Boxes);
            let n = h.cast_boxes(ray, &mut buf).expect(name);
            assert_eq!(&buf[..n], &want[..], "{name}: {ray:?}");
            let want = oracle_all(&boxes, ray, Narrow::Shortening);
            let got = h
                .cast(ray, |id, t| Narrow::Shortening.call(id, t))
                .expect(name);
            assert_eq!(got, want.first().copied(), "{name}: {ray:?}");
        }
        // Remove some: the table goes stale and is rehashed by the cast.
        let mut live = boxes.clone();
        for id in (0..200).step_by(3) {
            h.remove(id as u32).expect(name);
            live[id] = Aabb3::NAN;
        }
        for ray in &rays {
            let want = oracle_all(&live, ray, Narrow::Boxes);
            let n = h.cast_boxes(ray, &mut buf).expect(name);
            assert_eq!(&buf[..n], &want[..], "{name} after removals: {ray:?}");
        }
    }
    let cfg = HashConfig::new(1.0, 0b11).unwrap();
    run(
        class_hash::<Hierarchical, Aabb3>(200, 256, 100_000, 64, cfg),
        "hierarchical",
    );
    run(
        class_hash::<Multilevel, Aabb3>(200, 256, 100_000, 64, cfg),
        "multilevel",
    );
}
