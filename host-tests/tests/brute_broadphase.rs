//! The brute-force broad phase (the oracle of every later broad phase)
//! against an independent model, on random operation sequences and on the
//! box scenarios.

use proptest::prelude::*;
use spatium::{Aabb2, Aabb3, BoundingBox, BroadPhase, BruteForceBroadPhase, Error, Validate, Vec3};
use spatium_host::make;
use spatium_host::oracle::collect_box_pairs;
use spatium_host::scenarios::box_scenarios;

/// Independent overlap test written out per axis (not `BoundingBox::overlaps`).
fn overlap3(a: &Aabb3, b: &Aabb3) -> bool {
    a.min.x <= b.max.x
        && b.min.x <= a.max.x
        && a.min.y <= b.max.y
        && b.min.y <= a.max.y
        && a.min.z <= b.max.z
        && b.min.z <= a.max.z
}

fn model_pairs(model: &[Option<Aabb3>]) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    for i in 0..model.len() {
        for j in i + 1..model.len() {
            if let (Some(a), Some(b)) = (model[i], model[j])
                && overlap3(&a, &b)
            {
                v.push((i as u32, j as u32));
            }
        }
    }
    v
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u8, [i8; 6]),
    Update(u8, [i8; 6]),
    Remove(u8),
    Query([i8; 6]),
    Clear,
}

fn boxed(c: [i8; 6]) -> Aabb3 {
    // May be inverted or contain NaN (code 127): the structure must refuse it.
    let f = |x: i8| if x == 127 { f32::NAN } else { x as f32 / 8.0 };
    Aabb3 {
        min: Vec3::new(f(c[0]), f(c[1]), f(c[2])),
        max: Vec3::new(
            f(c[0]) + f(c[3]).abs() - 0.5,
            f(c[1]) + f(c[4]).abs(),
            f(c[2]) + f(c[5]).abs(),
        ),
    }
}

fn op() -> impl Strategy<Value = Op> {
    let b = prop::array::uniform6(any::<i8>());
    prop_oneof![
        4 => (0u8..40, b).prop_map(|(i, b)| Op::Insert(i, b)),
        3 => (0u8..40, b).prop_map(|(i, b)| Op::Update(i, b)),
        2 => (0u8..40).prop_map(Op::Remove),
        2 => b.prop_map(Op::Query),
        1 => Just(Op::Clear),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]
    #[test]
    fn matches_model(ops in prop::collection::vec(op(), 1..60)) {
        const CAP: usize = 32; // ids 32..40 are out of range
        let mut bp = BruteForceBroadPhase::new(make::brute_slots::<Aabb3>(CAP));
        let mut model: Vec<Option<Aabb3>> = vec![None; CAP];
        for op in ops {
            match op {
                Op::Insert(id, c) => {
                    let b = boxed(c);
                    let r = bp.insert(id as u32, b);
                    let want = if id as usize >= CAP { Err(Error::IdOutOfRange { id: id as u32 }) }
                        else if b.check().is_err() { Err(b.check().unwrap_err()) }
                        else if model[id as usize].is_some() { Err(Error::DuplicateId { id: id as u32 }) }
                        else { Ok(()) };
                    prop_assert_eq!(r, want);
                    if r.is_ok() { model[id as usize] = Some(b); }
                }
                Op::Update(id, c) => {
                    let b = boxed(c);
                    let r = bp.update(id as u32, b);
                    let want = if id as usize >= CAP { Err(Error::IdOutOfRange { id: id as u32 }) }
                        else if model[id as usize].is_none() { Err(Error::UnknownId { id: id as u32 }) }
                        else if b.check().is_err() { Err(b.check().unwrap_err()) }
                        else { Ok(()) };
                    prop_assert_eq!(r, want);
                    if r.is_ok() { model[id as usize] = Some(b); }
                }
                Op::Remove(id) => {
                    let r = bp.remove(id as u32);
                    match model.get(id as usize).copied().flatten() {
                        Some(b) => { prop_assert_eq!(r, Ok(b)); model[id as usize] = None; }
                        None => prop_assert!(r.is_err()),
                    }
                }
                Op::Query(c) => {
                    let q = boxed(c);
                    let mut got = Vec::new();
                    let r = bp.query(&q, |id| got.push(id));
                    if q.check().is_err() {
                        prop_assert!(r.is_err());
                    } else {
                        got.sort_unstable();
                        let want: Vec<u32> = (0..CAP).filter(|&i| model[i].is_some_and(|b| overlap3(&b, &q))).map(|i| i as u32).collect();
                        prop_assert_eq!(got, want);
                    }
                }
                Op::Clear => { bp.clear(); model.iter_mut().for_each(|m| *m = None); }
            }
            bp.validate().unwrap();
            prop_assert_eq!(bp.box_count(), model.iter().filter(|m| m.is_some()).count());
            for (i, m) in model.iter().enumerate() {
                prop_assert_eq!(bp.get(i as u32), *m);
            }
            prop_assert_eq!(collect_box_pairs(&mut bp), model_pairs(&model));
        }
    }
}

#[test]
fn box_scenarios_over_steps() {
    for mut sc in box_scenarios::<Aabb3>(600, 21) {
        let mut bp = BruteForceBroadPhase::new(make::brute_slots::<Aabb3>(sc.boxes.len()));
        for (i, b) in sc.boxes.iter().enumerate() {
            bp.insert(i as u32, *b).unwrap();
        }
        for _ in 0..3 {
            let model: Vec<Option<Aabb3>> = sc.boxes.iter().copied().map(Some).collect();
            assert_eq!(
                collect_box_pairs(&mut bp),
                model_pairs(&model),
                "{}",
                sc.name
            );
            sc.step();
            for (i, b) in sc.boxes.iter().enumerate() {
                bp.update(i as u32, *b).unwrap();
            }
            bp.validate().unwrap();
        }
    }
    // 2D scenarios run through the same code path.
    for sc in box_scenarios::<Aabb2>(400, 22) {
        let mut bp = BruteForceBroadPhase::new(make::brute_slots::<Aabb2>(sc.boxes.len()));
        for (i, b) in sc.boxes.iter().enumerate() {
            bp.insert(i as u32, *b).unwrap();
        }
        let mut want = Vec::new();
        for i in 0..sc.boxes.len() {
            for j in i + 1..sc.boxes.len() {
                let (a, b) = (sc.boxes[i], sc.boxes[j]);
                if a.min.x <= b.max.x
                    && b.min.x <= a.max.x
                    && a.min.y <= b.max.y
                    && b.min.y <= a.max.y
                {
                    want.push((i as u32, j as u32));
                }
            }
        }
        assert_eq!(collect_box_pairs(&mut bp), want, "{}", sc.name);
        assert!(!want.is_empty());
    }
}
