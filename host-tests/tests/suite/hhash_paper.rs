//! The worked examples of Pouchol et al. 2009 as unit tests: Fig. 2 (the
//! cells, objects and `hasChildren` flags of multilevel and hierarchical
//! hashing for one 2D scene) and Fig. 3 (moving objects hashed by the box of
//! their path, and the top-down retrieval paths of two points).
//!
//! Classes have sizes 1, 2 and 4 (levels 0, 1, 2). The paper names cells by
//! their lower-left corner in world units; here a cell is its integer
//! coordinate at its level, so the paper's `h^1(2,0)` is level 1, cell
//! `(1,0)`.

use spatium::hhash::{HashConfig, Hierarchical, Multilevel, Scheme};
use spatium::{Aabb2, BoundingBox, BroadPhase, HASH_PRIMES, Vec2};
use spatium_host::make::{self, VecClassHash};

const A: u32 = 0;
const B: u32 = 1;
const C: u32 = 2;
const D: u32 = 3;

fn bx(x0: f32, y0: f32, x1: f32, y1: f32) -> Aabb2 {
    Aabb2::new(Vec2::new(x0, y0), Vec2::new(x1, y1)).unwrap()
}

fn config() -> HashConfig<Vec2> {
    HashConfig::new(1.0, 0b111).unwrap()
}

/// A large table, so that the few keys of the example do not collide.
fn table<S: Scheme>() -> VecClassHash<S, Aabb2> {
    make::class_hash::<S, Aabb2>(8, 1 << 16, 64, 0, config())
}

/// A cell as (level, integer coordinates).
type Cell = (u32, [i32; 3]);
/// An expected cell: where, its ids, its `hasChildren` flag.
type Expected = (Cell, &'static [u32], bool);

/// The world-unit corner of the paper's notation to (level, cell).
fn cell(level: u32, x: i32, y: i32) -> Cell {
    (level, [x >> level, y >> level, 0])
}

/// `(ids, hasChildren)` of a cell, or `None` if its bucket is unwritten.
fn contents<S: Scheme>(
    h: &mut VecClassHash<S, Aabb2>,
    (level, c): Cell,
) -> Option<(Vec<u32>, bool)> {
    let mut ids = Vec::new();
    let flag = h.cell_contents(level, c, |id| ids.push(id))?;
    ids.sort_unstable();
    Some((ids, flag))
}

/// Fig. 2's scene: A of class 2 over four cells, C of class 1 over two, B
/// and D of class 0 over one and two.
fn fig2<S: Scheme>() -> VecClassHash<S, Aabb2> {
    let mut h = table::<S>();
    h.insert(A, bx(2.5, 2.5, 5.5, 5.5)).unwrap(); // edge 3 → size 4
    h.insert(B, bx(3.2, 3.2, 3.8, 3.8)).unwrap(); // edge 0.6 → size 1
    h.insert(C, bx(3.2, 0.2, 4.8, 1.5)).unwrap(); // edge 1.6 → size 2
    h.insert(D, bx(5.5, 0.2, 6.3, 0.8)).unwrap(); // edge 0.8 → size 1
    assert_eq!(
        [A, B, C, D].map(|id| h.class_of_id(id).unwrap()),
        [2, 0, 1, 0]
    );
    h
}

#[test]
fn fig2_multilevel_cells() {
    let mut h = fig2::<Multilevel>();
    let want: &[(Cell, &[u32])] = &[
        (cell(2, 0, 0), &[A]),
        (cell(1, 2, 0), &[C]),
        (cell(2, 4, 0), &[A]),
        (cell(2, 0, 4), &[A]),
        (cell(1, 4, 0), &[C]),
        (cell(2, 4, 4), &[A]),
        (cell(0, 3, 3), &[B]),
        (cell(0, 5, 0), &[D]),
        (cell(0, 6, 0), &[D]),
    ];
    for (c, ids) in want {
        assert_eq!(
            contents(&mut h, *c),
            Some((ids.to_vec(), false)),
            "cell {c:?}"
        );
    }
    // Nine non-empty cells and nothing else: the four written by A, two by
    // C, one by B and two by D.
    assert_eq!(h.stats_refreshed().entries, 9);
    assert_eq!(h.stats_refreshed().buckets_used, 9);
    // Multilevel cells of the inner classes that the hierarchy would flag are
    // absent.
    assert_eq!(contents(&mut h, cell(1, 2, 2)), None);
    assert_eq!(contents(&mut h, cell(1, 6, 0)), None);
}

#[test]
fn fig2_hierarchical_cells_and_flags() {
    let mut h = fig2::<Hierarchical>();
    let want: &[Expected] = &[
        (cell(2, 0, 0), &[A], true),
        (cell(1, 2, 0), &[C], false),
        (cell(2, 4, 0), &[A], true),
        (cell(2, 0, 4), &[A], false),
        (cell(1, 2, 2), &[], true),
        (cell(2, 4, 4), &[A], false),
        (cell(1, 4, 0), &[C], true),
        (cell(1, 6, 0), &[], true),
        (cell(0, 3, 3), &[B], false),
        (cell(0, 5, 0), &[D], false),
        (cell(0, 6, 0), &[D], false),
    ];
    for (c, ids, flag) in want {
        assert_eq!(
            contents(&mut h, *c),
            Some((ids.to_vec(), *flag)),
            "cell {c:?}"
        );
    }
    // Eleven buckets written (Fig. 2, right), nine entries.
    let s = h.stats_refreshed();
    assert_eq!((s.buckets_used, s.entries), (11, 9));
}

/// Eq. 3 and 4: `h^c` is the prime-XOR hash of the cell's coordinates at
/// class `c` plus the class salt `c · 0x9E3779B9`; the hierarchical key sums
/// it over the cell and its ancestors (no modulo: the paper's n = ∞ is 2³²
/// here).
#[test]
fn keys_follow_eq3_and_eq4() {
    let h = |c: u32, x: i32, y: i32| {
        ((x as u32).wrapping_mul(HASH_PRIMES[0]) ^ (y as u32).wrapping_mul(HASH_PRIMES[1]))
            .wrapping_add(c.wrapping_mul(0x9E37_79B9))
    };
    let hier = fig2::<Hierarchical>();
    // B's cell (3,3): classes 2, 1, 0 give cells (0,0), (1,1), (3,3).
    assert_eq!(
        hier.key(0, [3, 3, 0]),
        Some(h(2, 0, 0).wrapping_add(h(1, 1, 1)).wrapping_add(h(0, 3, 3)))
    );
    assert_eq!(hier.key(2, [1, 0, 0]), Some(h(2, 1, 0)));
    assert_eq!(
        hier.key(1, [3, 0, 0]),
        Some(h(2, 1, 0).wrapping_add(h(1, 3, 0)))
    );
    // Without the salt, h̃^1(2,0) = h(0,0) + h(1,0) = h(1,0) = h̃^2(4,0):
    // the salt keeps these two cells of Fig. 2 apart.
    assert_ne!(hier.key(1, [1, 0, 0]), hier.key(2, [1, 0, 0]));
    let m = fig2::<Multilevel>();
    assert_eq!(m.key(2, [1, 0, 0]), Some(h(2, 1, 0)));
    assert_eq!(m.key(0, [3, 3, 0]), Some(h(0, 3, 3)));
    // No class of level 3.
    assert_eq!(hier.key(3, [0, 0, 0]), None);
}

/// Fig. 3's scene: A and B moving, each inserted as the box of its whole
/// path.
fn fig3<S: Scheme>() -> VecClassHash<S, Aabb2> {
    let mut h = table::<S>();
    let a_path = bx(2.2, 2.2, 3.4, 3.4).union(&bx(4.3, 4.3, 5.5, 5.5)); // edge 3.3
    let b_path = bx(5.6, 0.6, 6.0, 1.0).union(&bx(6.0, 1.0, 6.4, 1.4)); // edge 0.8
    h.insert(A, a_path).unwrap();
    h.insert(B, b_path).unwrap();
    h
}

#[test]
fn fig3_moving_objects_cells() {
    let mut h = fig3::<Hierarchical>();
    let want: &[Expected] = &[
        (cell(2, 0, 0), &[A], false),
        (cell(2, 4, 0), &[A], true),
        (cell(2, 0, 4), &[A], false),
        (cell(2, 4, 4), &[A], false),
        (cell(1, 4, 0), &[], true),
        (cell(1, 6, 0), &[], true),
        (cell(0, 5, 1), &[B], false),
        (cell(0, 5, 0), &[B], false),
        (cell(0, 6, 1), &[B], false),
        (cell(0, 6, 0), &[B], false),
    ];
    for (c, ids, flag) in want {
        assert_eq!(
            contents(&mut h, *c),
            Some((ids.to_vec(), *flag)),
            "cell {c:?}"
        );
    }
    assert_eq!(h.stats_refreshed().buckets_used, 10);
}

/// The retrieval paths of Fig. 3 (bottom right): P descends through the
/// flagged cells to B's cell; Q stops at A's unflagged cell.
#[test]
fn fig3_point_paths() {
    let mut h = fig3::<Hierarchical>();
    let path = |h: &mut VecClassHash<Hierarchical, Aabb2>, p: Vec2| {
        let mut cells = Vec::new();
        h.for_each_visited_cell(&Aabb2::new(p, p).unwrap(), |v| {
            cells.push((v.level, [v.cell[0], v.cell[1]], v.has_children))
        })
        .unwrap();
        let mut ids = Vec::new();
        h.point_candidates(p, |id| ids.push(id)).unwrap();
        (cells, ids)
    };
    let p = Vec2::new(5.5, 0.5);
    assert_eq!(
        path(&mut h, p),
        (
            vec![(2, [1, 0], true), (1, [2, 0], true), (0, [5, 0], false)],
            vec![A, B]
        )
    );
    let q = Vec2::new(1.0, 5.0);
    assert_eq!(path(&mut h, q), (vec![(2, [0, 1], false)], vec![A]));
    // Exact: P lies in the cells of A and B but in neither box (both are
    // false candidates); a point inside B's path box finds B only.
    let exact = |h: &mut VecClassHash<Hierarchical, Aabb2>, p: Vec2| {
        let mut got = Vec::new();
        h.query(&Aabb2::new(p, p).unwrap(), |id| got.push(id))
            .unwrap();
        got
    };
    assert_eq!(exact(&mut h, p), Vec::<u32>::new());
    assert_eq!(exact(&mut h, Vec2::new(5.8, 0.8)), vec![B]);

    // Multilevel visits every class for the same point: A's cell at level 2,
    // nothing written at level 1, B's cell at level 0.
    let mut m = fig3::<Multilevel>();
    let mut cells = Vec::new();
    m.for_each_visited_cell(&Aabb2::new(p, p).unwrap(), |v| {
        cells.push((v.level, v.cell))
    })
    .unwrap();
    assert_eq!(cells, vec![(2, [1, 0, 0]), (0, [5, 0, 0])]);
}

/// Listing 2's subdivision: a query box larger than the cells below it still
/// finds every small object, and an object larger than the largest class is
/// stored in every largest-class cell it overlaps.
#[test]
fn large_boxes_are_subdivided() {
    let mut h = table::<Hierarchical>();
    h.insert(A, bx(0.0, 0.0, 13.0, 5.0)).unwrap(); // beyond size 4
    assert_eq!(h.class_of_id(A), Some(2));
    // x cells 0..=3, y cells 0..=1 at size 4.
    assert_eq!(h.stats_refreshed().entries, 8);
    assert_eq!(h.stats_refreshed().subdivided, 1);
    h.insert(B, bx(9.1, 4.1, 9.2, 4.2)).unwrap();
    h.insert(C, bx(30.0, 30.0, 30.5, 30.5)).unwrap();
    let mut got = Vec::new();
    h.query(&bx(-1.0, -1.0, 20.0, 20.0), |id| got.push(id))
        .unwrap();
    got.sort_unstable();
    assert_eq!(got, vec![A, B]);
    let mut pairs = Vec::new();
    h.for_each_overlap(|a, b| pairs.push((a.min(b), a.max(b))))
        .unwrap();
    assert_eq!(pairs, vec![(A, B)]);
}
