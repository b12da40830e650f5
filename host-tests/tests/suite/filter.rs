//! Collision filtering (`spatium::filter`) in every broad phase of the
//! run-time registry, 3D and 2D, on every box scenario generator: the
//! filtered pairs equal the brute-force pairs whose groups interact, the
//! parallel filtered form gives the same pairs on every executor, and the
//! filtered queries equal the brute-force hits that interact.

use spatium::exec::Serial;
use spatium::filter::Groups;
use spatium::{Aabb2, Aabb3, BoundingBox, BroadPhase};
use spatium_host::boxes::{TestBox, overlap};
use spatium_host::par::HostExec;
use spatium_host::runtime::AnyBroad;
use spatium_host::scenarios::box_scenarios;
use spatium_host_tests::model::seeded_groups;
use spatium_host_tests::registry::{self, broad_kinds};

/// Boxes per scenario.
const N: usize = 1500;

fn brute_pairs<B: BoundingBox>(boxes: &[B], groups: &[Groups]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for i in 0..boxes.len() {
        for j in i + 1..boxes.len() {
            if overlap(&boxes[i], &boxes[j]) && groups[i].interacts(groups[j]) {
                out.push((i as u32, j as u32));
            }
        }
    }
    out
}

fn sorted(mut v: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    for p in &mut v {
        *p = (p.0.min(p.1), p.0.max(p.1));
    }
    v.sort_unstable();
    v
}

fn every_kind<B: TestBox>(seed: u64) {
    let exec = HostExec::new(2);
    for sc in box_scenarios::<B>(N, seed) {
        let (groups, with) = seeded_groups(seed ^ 0xF1, sc.boxes.len());
        let want = brute_pairs(&sc.boxes, &groups);
        let unfiltered = brute_pairs(&sc.boxes, &vec![Groups::ALL; sc.boxes.len()]);
        assert!(
            !want.is_empty() && want.len() < unfiltered.len(),
            "{}: the groups must drop some pairs and keep some ({} of {})",
            sc.name,
            want.len(),
            unfiltered.len()
        );
        for kind in broad_kinds() {
            let name = format!("{} on {}", registry::broad_name::<B>(kind), sc.name);
            let mut bp = AnyBroad::new(kind, &sc.boxes, 1.0).expect(&name);
            for (id, b) in sc.boxes.iter().enumerate() {
                bp.insert(id as u32, *b).expect(&name);
            }
            let mut got = Vec::new();
            bp.for_each_overlap_filtered(&groups, |a, b| got.push((a, b)))
                .expect(&name);
            assert_eq!(sorted(got), want, "{name}: filtered pairs");
            for e in [&HostExec::new(1), &exec] {
                let mut sinks = vec![Vec::new(); bp.overlap_tasks()];
                bp.par_for_each_overlap_filtered(e, &mut sinks, &groups, |s, a, b| s.push((a, b)))
                    .expect(&name);
                assert_eq!(
                    sorted(sinks.concat()),
                    want,
                    "{name}: parallel filtered pairs"
                );
            }
            let mut sinks = vec![Vec::new(); bp.overlap_tasks()];
            bp.par_for_each_overlap_filtered(&Serial, &mut sinks, &groups, |s, a, b| {
                s.push((a, b))
            })
            .expect(&name);
            assert_eq!(sorted(sinks.concat()), want, "{name}: serial executor");
            for q in sc.boxes.iter().step_by(97) {
                let mut hits = Vec::new();
                bp.query_filtered(q, with, &groups, |id| hits.push(id))
                    .expect(&name);
                hits.sort_unstable();
                let want: Vec<u32> = (0..sc.boxes.len() as u32)
                    .filter(|&i| {
                        overlap(&sc.boxes[i as usize], q) && groups[i as usize].interacts(with)
                    })
                    .collect();
                assert_eq!(hits, want, "{name}: filtered query {q:?}");
            }
        }
    }
}

#[test]
fn filtered_pairs_and_queries_every_kind_3d() {
    every_kind::<Aabb3>(5);
}

#[test]
fn filtered_pairs_and_queries_every_kind_2d() {
    every_kind::<Aabb2>(6);
}

#[test]
fn groups_interact_symmetrically() {
    let a = Groups::new(0b01, 0b10);
    let b = Groups::new(0b10, 0b01);
    let c = Groups::new(0b10, 0b10);
    assert!(a.interacts(b) && b.interacts(a));
    assert!(!a.interacts(c) && !c.interacts(a));
    assert!(Groups::ALL.interacts(Groups::ALL));
    assert!(!Groups::NONE.interacts(Groups::ALL));
    assert_eq!(Groups::default(), Groups::ALL);
}
