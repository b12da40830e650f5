//! Deterministic checks of every documented rule of the two traits, for any
//! implementation: [`broad_phase_contract`] and [`neighbor_search_contract`].
//!
//! Each step goes through the shared models ([`crate::model`]) with exact
//! boxes and points, so every step is judged by the same rules as the
//! property tests and fuzz targets (the error precedence included), and
//! after every step everything observable is compared with the model. On
//! top of that, each step here asserts the specific outcome the rule names
//! (where the model would also accept a structure-specific refusal, the
//! contract requires success: the structures are sized for these scenes).

use spatium::{Error, NeighborSearch, Point, RayCast, Validate};
use spatium_host::boxes::TestBox;
use spatium_host::scenarios::{box_scenarios, point_scenarios};

use crate::model::{
    BoxSpec, BroadModel, BroadOp, BufLen, PointSpec, RadiusSpec, SearchModel, SearchOp,
};

/// Applies `op` and requires `want`, with the whole state checked.
fn broad_step<B: TestBox, T: RayCast<B> + Validate + Send + Sync>(
    t: &mut T,
    m: &mut BroadModel<B>,
    op: BroadOp<B>,
    want: Result<(), Error>,
    rule: &str,
) {
    match m.apply(t, &op) {
        Ok(r) => assert_eq!(r, want, "{rule}: {op:?}"),
        Err(e) => panic!("{rule}: {e}"),
    }
}

fn bx<B: TestBox>(lo: [f32; 3], hi: [f32; 3]) -> BoxSpec<B> {
    BoxSpec::Exact(B::raw(lo, hi))
}

/// Every documented rule of [`BroadPhase`](spatium::BroadPhase), on fresh structures from `make`
/// (which must give an empty structure with room, in its pools and arenas,
/// for its capacity of boxes of edges up to 4 near the origin; the capacity
/// must be at least 8).
///
/// Checked: bad ids (`IdOutOfRange` at and beyond the capacity and at
/// `u32::MAX`, `UnknownId`, `DuplicateId`), bad boxes (NaN, infinities and
/// inverted extents on every axis, on insert, update, update_many and query)
/// with the documented precedence, that a failed operation changes nothing,
/// that touching boxes (faces, edges, corners, zero-extent boxes, `-0.0`
/// against `0.0`) and coincident boxes overlap, that pairs are reported once
/// without self pairs, that `remove` returns the box bit for bit,
/// `update_many` (repeated ids end with the last box; a bad id or box
/// anywhere changes nothing), `clear`, queries (touching, points, all,
/// none), the capacity boundary (every id filled, the last id, the first id
/// beyond), and the crate's box scenarios over a few steps.
///
/// # Panics
/// On the first broken rule, naming it.
pub fn broad_phase_contract<B: TestBox, T: RayCast<B> + Validate + Send + Sync>(
    make: impl Fn() -> T,
) {
    let d = B::Point::DIM;
    let mut t = make();
    let cap = t.capacity();
    assert!(cap >= 8, "the contract needs a capacity of at least 8");
    let c = cap as u32;
    let mut m = BroadModel::<B>::new(cap);
    m.check(&mut t).unwrap_or_else(|e| panic!("empty: {e}"));
    let unit = bx::<B>([0.0; 3], [1.0; 3]);

    // Ids.
    for id in [c, c + 1, u32::MAX] {
        let oor = Err(Error::IdOutOfRange { id });
        broad_step(
            &mut t,
            &mut m,
            BroadOp::Insert(id, unit),
            oor,
            "insert beyond the capacity",
        );
        broad_step(
            &mut t,
            &mut m,
            BroadOp::Update(id, unit),
            oor,
            "update beyond the capacity",
        );
        broad_step(
            &mut t,
            &mut m,
            BroadOp::Remove(id),
            oor,
            "remove beyond the capacity",
        );
        broad_step(
            &mut t,
            &mut m,
            BroadOp::Get(id),
            Ok(()),
            "get beyond the capacity",
        );
    }
    let unknown = Err(Error::UnknownId { id: 3 });
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Update(3, unit),
        unknown,
        "update of an absent id",
    );
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Remove(3),
        unknown,
        "remove of an absent id",
    );
    broad_step(&mut t, &mut m, BroadOp::Insert(3, unit), Ok(()), "insert");
    let other = bx::<B>([0.5; 3], [2.0; 3]);
    let dup = Err(Error::DuplicateId { id: 3 });
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Insert(3, other),
        dup,
        "insert of a stored id",
    );
    broad_step(&mut t, &mut m, BroadOp::Update(3, other), Ok(()), "update");
    broad_step(&mut t, &mut m, BroadOp::Remove(3), Ok(()), "remove");
    broad_step(&mut t, &mut m, BroadOp::Remove(3), unknown, "remove twice");
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Insert(3, unit),
        Ok(()),
        "insert after remove",
    );

    // Bad boxes, every axis: nothing changes.
    for k in 0..d {
        let with = |lo_v: f32, hi_v: f32| {
            let (mut lo, mut hi) = ([0.0f32; 3], [1.0f32; 3]);
            lo[k] = lo_v;
            hi[k] = hi_v;
            bx::<B>(lo, hi)
        };
        let bad: [(BoxSpec<B>, Error); 4] = [
            (with(f32::NAN, 1.0), Error::NonFinite),
            (with(0.0, f32::INFINITY), Error::NonFinite),
            (with(f32::NEG_INFINITY, 1.0), Error::NonFinite),
            (with(0.0, -0.5), Error::InvertedBox),
        ];
        for (b, e) in bad {
            broad_step(
                &mut t,
                &mut m,
                BroadOp::Insert(4, b),
                Err(e),
                "insert of a bad box",
            );
            broad_step(
                &mut t,
                &mut m,
                BroadOp::Update(3, b),
                Err(e),
                "update to a bad box",
            );
            let list = vec![(3, unit), (3, b)];
            broad_step(
                &mut t,
                &mut m,
                BroadOp::UpdateMany(list),
                Err(e),
                "update_many with a bad box",
            );
            // The query error may be the hierarchical hash grid's reading of
            // unbounded boxes (see the model); the model judges it.
            let _ = m
                .apply(&mut t, &BroadOp::Query(b))
                .unwrap_or_else(|e| panic!("bad query: {e}"));
        }
    }
    // Precedence: the id before the box (update: an absent id before the box).
    let nan = bx::<B>([f32::NAN; 3], [1.0; 3]);
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Insert(c, nan),
        Err(Error::IdOutOfRange { id: c }),
        "id before box",
    );
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Update(5, nan),
        Err(Error::UnknownId { id: 5 }),
        "unknown id before box",
    );
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Insert(5, nan),
        Err(Error::NonFinite),
        "box error on a free id",
    );
    // A bad box on a stored id: the model accepts either error (the kinds
    // disagree).
    let _ = m
        .apply(&mut t, &BroadOp::Insert(3, nan))
        .unwrap_or_else(|e| panic!("{e}"));
    let inv_nan = bx::<B>([0.0, f32::NAN, f32::NAN], [-1.0, 1.0, 1.0]);
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Insert(5, inv_nan),
        Err(Error::NonFinite),
        "NonFinite before InvertedBox",
    );

    // update_many atomicity: a bad element anywhere changes nothing.
    broad_step(&mut t, &mut m, BroadOp::Insert(4, other), Ok(()), "insert");
    let moved = bx::<B>([5.0; 3], [6.0; 3]);
    for (bad, e) in [
        ((6, moved), Error::UnknownId { id: 6 }),
        ((c, moved), Error::IdOutOfRange { id: c }),
        ((4, nan), Error::NonFinite),
    ] {
        let list = vec![(3, moved), (4, moved), bad];
        broad_step(
            &mut t,
            &mut m,
            BroadOp::UpdateMany(list),
            Err(e),
            "update_many with a bad element",
        );
    }
    let first = vec![(3, moved), (6, nan), (c, moved)];
    broad_step(
        &mut t,
        &mut m,
        BroadOp::UpdateMany(first),
        Err(Error::UnknownId { id: 6 }),
        "update_many: the first fault wins",
    );
    let list = vec![(3, moved), (4, moved), (3, unit)];
    broad_step(
        &mut t,
        &mut m,
        BroadOp::UpdateMany(list),
        Ok(()),
        "update_many, a repeated id ends with its last box",
    );
    assert!(
        t.get(3).is_some_and(|b| b.min().coord(0) == 0.0),
        "update_many: last box wins"
    );
    broad_step(
        &mut t,
        &mut m,
        BroadOp::UpdateMany(Vec::new()),
        Ok(()),
        "empty update_many",
    );
    broad_step(&mut t, &mut m, BroadOp::Clear, Ok(()), "clear");
    assert_eq!(t.box_count(), 0, "clear");

    // Touching and coincident boxes overlap; pairs once.
    let mut id = 0;
    let mut put = |t: &mut T, m: &mut BroadModel<B>, lo: [f32; 3], hi: [f32; 3]| {
        broad_step(
            t,
            m,
            BroadOp::Insert(id, bx(lo, hi)),
            Ok(()),
            "insert of a touching box",
        );
        id += 1;
    };
    put(&mut t, &mut m, [0.0; 3], [1.0; 3]);
    put(&mut t, &mut m, [0.0; 3], [1.0; 3]); // coincident
    put(&mut t, &mut m, [1.0, 0.0, 0.0], [2.0, 1.0, 1.0]); // face, x
    put(&mut t, &mut m, [0.0, 1.0, 0.0], [1.0, 2.0, 1.0]); // face, y
    put(&mut t, &mut m, [1.0, 1.0, 1.0], [3.0, 3.0, 3.0]); // corner
    put(&mut t, &mut m, [0.5, 0.5, 1.0], [0.5, 0.5, 1.0]); // a point on a face
    put(&mut t, &mut m, [-1.0, -1.0, -1.0], [-0.0, -0.0, -0.0]); // -0.0 against 0.0
    put(&mut t, &mut m, [2.0, 2.0, 2.0], [2.0, 2.0, 2.0]); // a point inside box 4
    let pairs = m.pairs();
    for (a, b) in [(0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (0, 6), (4, 7)] {
        assert!(
            pairs.contains(&(a, b)),
            "touching boxes {a} and {b} must overlap"
        );
    }
    let q = |lo, hi| BroadOp::Query(bx::<B>(lo, hi));
    for op in [
        q([1.0; 3], [1.0; 3]),
        q([-0.0; 3], [-0.0; 3]),
        q([-10.0; 3], [10.0; 3]),
        q([20.0; 3], [21.0; 3]),
        q([3.0; 3], [4.0; 3]),
        BroadOp::Overlaps,
    ] {
        broad_step(&mut t, &mut m, op, Ok(()), "query");
    }
    let far = bx::<B>([f32::NEG_INFINITY; 3], [f32::INFINITY; 3]);
    let _ = m
        .apply(&mut t, &BroadOp::Query(far))
        .unwrap_or_else(|e| panic!("unbounded query: {e}"));
    // remove returns the box bit for bit (-0.0 included).
    let removed = t.remove(6).expect("remove");
    assert_eq!(
        removed.max().coord(0).to_bits(),
        (-0.0f32).to_bits(),
        "remove: -0.0 kept"
    );
    m.slots[6] = None;
    m.check(&mut t)
        .unwrap_or_else(|e| panic!("after remove: {e}"));

    // The capacity boundary: every id stored, small boxes on a line.
    let mut t = make();
    let mut m = BroadModel::<B>::new(cap);
    for i in 0..c {
        let x = (i % 64) as f32 * 0.5;
        let y = (i / 64) as f32 * 0.5;
        broad_step(
            &mut t,
            &mut m,
            BroadOp::Insert(i, bx([x, y, 0.0], [x + 0.5, y + 0.25, 0.25])),
            Ok(()),
            "fill every id",
        );
    }
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Insert(c, unit),
        Err(Error::IdOutOfRange { id: c }),
        "one beyond a full structure",
    );
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Remove(c - 1),
        Ok(()),
        "remove the last id",
    );
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Insert(c - 1, unit),
        Ok(()),
        "insert the last id",
    );
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Overlaps,
        Ok(()),
        "pairs of a full structure",
    );
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Clear,
        Ok(()),
        "clear a full structure",
    );
    broad_step(
        &mut t,
        &mut m,
        BroadOp::Insert(0, unit),
        Ok(()),
        "insert after clear",
    );

    // The crate's box scenarios, a few steps, by update and update_many.
    for mut sc in box_scenarios::<B>(cap, 41) {
        let mut t = make();
        let mut m = BroadModel::<B>::new(cap);
        let n = sc.boxes.len().min(cap);
        for (i, b) in sc.boxes[..n].iter().enumerate() {
            broad_step(
                &mut t,
                &mut m,
                BroadOp::Insert(i as u32, BoxSpec::Exact(*b)),
                Ok(()),
                &sc.name,
            );
        }
        for step in 0..3 {
            sc.step();
            if step % 2 == 0 {
                let list = (0..n)
                    .map(|i| (i as u32, BoxSpec::Exact(sc.boxes[i])))
                    .collect();
                broad_step(&mut t, &mut m, BroadOp::UpdateMany(list), Ok(()), &sc.name);
            } else {
                for (i, b) in sc.boxes[..n].iter().enumerate() {
                    broad_step(
                        &mut t,
                        &mut m,
                        BroadOp::Update(i as u32, BoxSpec::Exact(*b)),
                        Ok(()),
                        &sc.name,
                    );
                }
            }
            broad_step(&mut t, &mut m, BroadOp::Overlaps, Ok(()), &sc.name);
        }
    }
}

fn search_step<P: Point, N: NeighborSearch<P> + Validate>(
    t: &mut N,
    m: &mut SearchModel<P>,
    op: SearchOp<P>,
    want: Result<(), Error>,
    rule: &str,
) {
    match m.apply(t, &op) {
        Ok(r) => assert_eq!(r, want, "{rule}: {op:?}"),
        Err(e) => panic!("{rule}: {e}"),
    }
}

fn exact<P: Point>(points: &[P]) -> Vec<PointSpec<P>> {
    points.iter().map(|p| PointSpec::Exact(*p)).collect()
}

fn pt<P: Point>(c: [f32; 3]) -> P {
    P::from_fn(|k| c[k])
}

/// Every documented rule of [`NeighborSearch`] on fresh structures from
/// `make`, which must give an empty search for `capacity` (at least 8)
/// particles.
///
/// Checked: the empty state (len 0, radius 0, `UnknownId`, empty lists);
/// the strict `d² < r²` (points exactly at the radius along an axis and
/// diagonally are not neighbours, a point one ulp inside is); a particle is
/// not its own neighbour, coincident particles are each other's; bad input
/// (`InvalidRadius` for zero, negative, NaN and infinite radii,
/// `CapacityExceeded` one beyond the capacity, `NonFinite` points) keeps the
/// previous contents; a smaller rebuild forgets the old ids; the capacity
/// boundary; `for_each_within` (`NonFinite`, the strict test from an
/// arbitrary point); `neighbor_lists` with exact, short (`BufferTooSmall`
/// with the exact length, for either buffer) and long buffers; and the
/// crate's point scenarios.
///
/// # Panics
/// On the first broken rule, naming it.
pub fn neighbor_search_contract<P: Point, N: NeighborSearch<P> + Validate>(
    capacity: usize,
    make: impl Fn() -> N,
) {
    assert!(capacity >= 8, "the contract needs a capacity of at least 8");
    let mut t = make();
    let mut m = SearchModel::<P>::new(capacity);
    m.check(&t).unwrap_or_else(|e| panic!("empty: {e}"));
    search_step(
        &mut t,
        &mut m,
        SearchOp::Neighbors(0),
        Err(Error::UnknownId { id: 0 }),
        "empty: no particle 0",
    );
    search_step(
        &mut t,
        &mut m,
        SearchOp::Lists(BufLen::Exact, BufLen::Exact),
        Ok(()),
        "empty lists",
    );

    // Strictness: 0 and 1 at exactly r = 1, 0 and 2 one ulp inside, 3 and 4
    // diagonally at exactly r = 5 (3-4-5), 5 coincident with 0.
    let r = RadiusSpec::Pow2(0);
    let pts: Vec<P> = vec![
        pt([0.0; 3]),
        pt([1.0, 0.0, 0.0]),
        pt([0.0, 1.0f32.next_down(), 0.0]),
        pt([10.0, 10.0, 0.0]),
        pt([13.0, 14.0, 0.0]),
        pt([0.0; 3]),
    ];
    search_step(
        &mut t,
        &mut m,
        SearchOp::Build(exact(&pts), r),
        Ok(()),
        "build",
    );
    let pairs = m.pairs();
    assert!(!pairs.contains(&(0, 1)), "d² = r² is not within");
    assert!(pairs.contains(&(0, 2)), "one ulp inside is within");
    assert!(
        pairs.contains(&(0, 5)),
        "coincident particles are neighbours"
    );
    let r5 = RadiusSpec::Quarter(20);
    search_step(
        &mut t,
        &mut m,
        SearchOp::Build(exact(&pts), r5),
        Ok(()),
        "build r = 5",
    );
    assert!(
        !m.pairs().contains(&(3, 4)),
        "diagonal d² = r² is not within"
    );
    search_step(
        &mut t,
        &mut m,
        SearchOp::Build(exact(&pts), r),
        Ok(()),
        "build",
    );
    for id in 0..pts.len() as u32 {
        search_step(
            &mut t,
            &mut m,
            SearchOp::Neighbors(id),
            Ok(()),
            "neighbours (self excluded)",
        );
    }
    let n = pts.len() as u32;
    search_step(
        &mut t,
        &mut m,
        SearchOp::Neighbors(n),
        Err(Error::UnknownId { id: n }),
        "unknown id",
    );
    search_step(
        &mut t,
        &mut m,
        SearchOp::Within(PointSpec::Exact(pt([0.0, -1.0, 0.0]))),
        Ok(()),
        "within, at the radius",
    );
    search_step(
        &mut t,
        &mut m,
        SearchOp::Within(PointSpec::Exact(pt([0.5, 0.5, 0.0]))),
        Ok(()),
        "within",
    );
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let p = PointSpec::Exact(pt([0.0, bad, 0.0]));
        search_step(
            &mut t,
            &mut m,
            SearchOp::Within(p),
            Err(Error::NonFinite),
            "within a non-finite point",
        );
    }

    // Bad builds keep the previous contents.
    for i in 0..5u8 {
        let bad = RadiusSpec::Bad(i);
        search_step(
            &mut t,
            &mut m,
            SearchOp::Build(exact(&pts), bad),
            Err(Error::InvalidRadius),
            "bad radius",
        );
    }
    let many: Vec<P> = (0..=capacity)
        .map(|i| pt([i as f32 * 0.25, 0.0, 0.0]))
        .collect();
    let cap = Err(Error::CapacityExceeded { capacity });
    search_step(
        &mut t,
        &mut m,
        SearchOp::Build(exact(&many), r),
        cap,
        "one beyond the capacity",
    );
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut p = pts.clone();
        p[2] = pt([bad, 0.0, 0.0]);
        search_step(
            &mut t,
            &mut m,
            SearchOp::Build(exact(&p), r),
            Err(Error::NonFinite),
            "non-finite point",
        );
    }
    assert_eq!(t.len(), pts.len(), "a failed build keeps the contents");

    // CSR buffers.
    for (o, i, want) in [
        (BufLen::Exact, BufLen::Exact, Ok(())),
        (BufLen::Long(3), BufLen::Long(5), Ok(())),
        (BufLen::Short(1), BufLen::Exact, Err(())),
        (BufLen::Exact, BufLen::Short(1), Err(())),
        (BufLen::Short(1), BufLen::Short(1), Err(())),
    ] {
        let r = m
            .check_lists(&t, o, i)
            .unwrap_or_else(|e| panic!("neighbor_lists: {e}"));
        assert_eq!(r.is_ok(), want.is_ok(), "neighbor_lists {o:?} {i:?}");
    }

    // A smaller rebuild forgets the old ids; the capacity boundary.
    search_step(
        &mut t,
        &mut m,
        SearchOp::Build(exact(&pts[..2]), r),
        Ok(()),
        "smaller rebuild",
    );
    search_step(
        &mut t,
        &mut m,
        SearchOp::Neighbors(3),
        Err(Error::UnknownId { id: 3 }),
        "forgotten id",
    );
    search_step(
        &mut t,
        &mut m,
        SearchOp::Build(exact(&many[..capacity]), r),
        Ok(()),
        "exactly the capacity",
    );
    search_step(
        &mut t,
        &mut m,
        SearchOp::Build(Vec::new(), r),
        Ok(()),
        "empty rebuild",
    );

    // The crate's point scenarios.
    for sc in point_scenarios::<P>(capacity, 43) {
        if sc.points.len() > capacity {
            continue;
        }
        let mut t = make();
        let mut m = SearchModel::<P>::new(capacity);
        let spec = SearchOp::Build(exact(&sc.points), RadiusSpec::Bits(sc.radius.to_bits()));
        search_step(&mut t, &mut m, spec, Ok(()), &sc.name);
    }
}
