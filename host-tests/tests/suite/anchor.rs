//! `CellSortedHash::set_anchor`: a fixed grid origin makes a subset of the
//! particles visit each particle's neighbours in the same order as the
//! whole set (what the distributed SPH step's bit-identity rests on), in
//! the serial and the parallel build; a bad anchor is refused.

use spatium::exec::Serial;
use spatium::{Error, NeighborSearch, Point, Vec3};
use spatium_host::make::cell_sorted;
use spatium_host::scenarios::uniform;

/// Each of `ids`' neighbours (as ids of the whole set), in visiting order.
fn lists(
    search: &spatium_host::make::VecCellSorted<Vec3>,
    local: &[u32],
    of: &[u32],
) -> Vec<Vec<u32>> {
    of.iter()
        .map(|&i| {
            let k = local.iter().position(|&g| g == i).expect("present") as u32;
            let mut out = Vec::new();
            search
                .for_each_neighbor(k, |j, _| out.push(local[j as usize]))
                .expect("query");
            out
        })
        .collect()
}

#[test]
fn an_anchored_subset_visits_neighbours_in_the_whole_sets_order() {
    let s = uniform::<Vec3>(4000, 20.0, 7);
    let (x, r) = (&s.points, s.radius);
    let anchor = Vec3::new(0.25, -0.5, 0.125);
    let all: Vec<u32> = (0..x.len() as u32).collect();
    // The subset: everything within 3r of the first particle (ids ascending).
    let centre = x[0];
    let sub: Vec<u32> = all
        .iter()
        .copied()
        .filter(|&i| x[i as usize].distance_squared(centre) < 9.0 * r * r)
        .collect();
    // Particles whose whole 3x3x3 stencil is in the subset: within r of the centre.
    let inner: Vec<u32> = sub
        .iter()
        .copied()
        .filter(|&i| x[i as usize].distance_squared(centre) < r * r)
        .collect();
    assert!(
        inner.len() > 3 && sub.len() < all.len() / 2,
        "{} {}",
        inner.len(),
        sub.len()
    );
    let sub_x: Vec<Vec3> = sub.iter().map(|&i| x[i as usize]).collect();
    for parallel in [false, true] {
        let build = |h: &mut spatium_host::make::VecCellSorted<Vec3>, p: &[Vec3]| {
            if parallel {
                h.par_build(&Serial, p, r)
            } else {
                h.build(p, r)
            }
        };
        let mut whole = cell_sorted::<Vec3>(x.len(), 8192);
        let mut part = cell_sorted::<Vec3>(x.len(), 512);
        whole.set_anchor(Some(anchor)).unwrap();
        part.set_anchor(Some(anchor)).unwrap();
        build(&mut whole, x).unwrap();
        build(&mut part, &sub_x).unwrap();
        assert_eq!(whole.grid().origin(), anchor);
        assert_eq!(part.grid().origin(), anchor);
        let a = lists(&whole, &all, &inner);
        let b = lists(&part, &sub, &inner);
        assert_eq!(a, b, "parallel build: {parallel}");
        // Unanchored, each grid is centred on its own positions.
        let mut free = cell_sorted::<Vec3>(x.len(), 512);
        build(&mut free, &sub_x).unwrap();
        assert_ne!(free.grid().origin(), anchor);
    }
}

#[test]
fn a_bad_anchor_is_refused() {
    let mut h = cell_sorted::<Vec3>(16, 64);
    assert_eq!(
        h.set_anchor(Some(Vec3::new(f32::NAN, 0.0, 0.0))),
        Err(Error::NonFinite)
    );
    h.set_anchor(Some(Vec3::new(1e30, 0.0, 0.0))).unwrap();
    // Positions too many cells from the anchor: refused at build.
    assert!(h.build(&[Vec3::ZERO], 0.01).is_err());
    h.set_anchor(None).unwrap();
    h.build(&[Vec3::ZERO], 0.01).unwrap();
}
