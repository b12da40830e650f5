//! The hierarchical hash grid's own operations and rules, layered over the
//! shared broad-phase model ([`BroadModel`]): `insert_unbounded`,
//! `update_all` (both strategies), `sort_records`, updates of unbounded
//! boxes, the small-N switch (`uses_grids`), the documented range rule (a
//! "tame" box is never refused with `OutOfRange` once the levels were fixed
//! by a tame box), queries read as unbounded boxes (exact error), and the
//! `stats()` counts, unchanged by a refused operation.
//!
//! Used by `tests/hhg_props.rs` (proptest over configurations) and the `hhg`
//! fuzz target (fuzzed configurations, arena contents, raw-bit floats).
//! hhg-specific API used here: `insert_unbounded`, `update_all`,
//! `sort_records`, `uses_grids`, `stats` (the inherent method; it moves to
//! `Inspect::stats`).

use proptest::prelude::*;
use spatium::{BroadPhase, Error, Inspect, UpdateStrategy};
use spatium_host::boxes::{TestBox, corners, dim};
use spatium_host::make::VecHhg;

use crate::model::{BoxSpec, BroadModel, BroadOp, Outcome, box_spec, broad_op, unbounded_error};

/// The length of the `update_all` slice.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AllLen {
    /// One box per id below the capacity.
    Full,
    /// `k % capacity` boxes: stored ids beyond them give `LengthMismatch`.
    Short(u8),
    /// `1 + k % 4` more (NaN, to be ignored).
    Long(u8),
}

/// An operation on the hierarchical hash grid.
#[derive(Clone, Debug, PartialEq)]
pub enum HhgOp<B> {
    /// A trait operation (judged by the shared model).
    Broad(BroadOp<B>),
    /// `insert_unbounded(id, box)`.
    InsertUnbounded(u32, BoxSpec<B>),
    /// `update_all`: the stored boxes with some moved; entries of absent
    /// ids NaN (`nan_fill`) or zero boxes (ignored).
    UpdateAll {
        /// `UpdateStrategy::Incremental`, else `ClearAndReinsert`.
        incremental: bool,
        /// Moved ids and their boxes.
        moves: Vec<(u32, BoxSpec<B>)>,
        /// The slice length.
        len: AllLen,
        /// Fill of absent ids.
        nan_fill: bool,
    },
    /// `sort_records()`.
    SortRecords,
}

/// A box no configuration may refuse once the levels were fixed by such a
/// box: finite lattice-like values (`0` or `2⁻¹⁰ ≤ |x| ≤ 2¹²`), edges `0` or
/// at least `2⁻¹⁰`.
pub fn tame<B: TestBox>(b: &B) -> bool {
    let (lo, hi) = corners(b);
    let ok = |x: f32| x.is_finite() && (x == 0.0 || (x.abs() >= 1.0 / 1024.0 && x.abs() <= 4096.0));
    (0..dim::<B>()).all(|k| {
        let e = hi[k] - lo[k];
        ok(lo[k]) && ok(hi[k]) && (e == 0.0 || e >= 1.0 / 1024.0)
    })
}

fn unbounded_result<B: TestBox>(b: &B) -> Outcome {
    unbounded_error(b).map_or(Ok(()), Err)
}

/// The shared model plus what the grid adds.
#[derive(Clone, Debug)]
pub struct HhgModel<B> {
    /// The trait model.
    pub broad: BroadModel<B>,
    /// Stored through `insert_unbounded`.
    pub unbounded: Vec<bool>,
    /// The grids are in use (an insert reached the small-N threshold).
    pub grid_mode: bool,
    /// The configuration's small-N threshold.
    pub small_n: u32,
    /// Whether the first bounded box since the last clear was tame.
    pub levels_tame: Option<bool>,
    /// The arena's length in words.
    pub arena: usize,
}

macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

impl<B: TestBox> HhgModel<B> {
    /// The model of an empty grid of `capacity` ids.
    pub fn new(capacity: usize, small_n: u32, arena: usize) -> Self {
        Self {
            broad: BroadModel::new(capacity),
            unbounded: vec![false; capacity],
            grid_mode: false,
            small_n,
            levels_tame: None,
            arena,
        }
    }

    fn is_unbounded(&self, id: u32) -> bool {
        self.unbounded.get(id as usize).copied().unwrap_or(false) && self.broad.get(id).is_some()
    }

    fn may_refuse_range(&self, b: &B) -> bool {
        !tame(b) || self.levels_tame == Some(false)
    }

    /// Applies `op` to the grid and the model, judges it, checks the shared
    /// model's state and the grid's own (`uses_grids`, `stats()`; a refused
    /// operation leaves `stats()` as it was).
    ///
    /// # Errors
    /// A message naming the operation and what differs.
    pub fn apply(&mut self, g: &mut VecHhg<B>, op: &HhgOp<B>) -> Result<Outcome, String> {
        let before = g.stats();
        let r = self.apply_op(g, op).map_err(|e| format!("{op:?}: {e}"))?;
        // A structure-specific refusal of update_many keeps the updates
        // before it (documented); every other refusal changes nothing.
        let prefix = matches!(op, HhgOp::Broad(BroadOp::UpdateMany(_)))
            && r.as_ref()
                .err()
                .is_some_and(crate::model::is_structure_specific);
        if r.is_err() && !prefix {
            ensure!(g.stats() == before, "a refused {op:?} changed the stats");
        }
        self.check(g).map_err(|e| format!("after {op:?}: {e}"))?;
        Ok(r)
    }

    fn apply_op(&mut self, g: &mut VecHhg<B>, op: &HhgOp<B>) -> Result<Outcome, String> {
        let cap = self.broad.capacity();
        Ok(match op {
            HhgOp::Broad(BroadOp::Update(id, s)) if self.is_unbounded(*id) => {
                let b = self.broad.resolve(s);
                let r = g.update(*id, b);
                let want = unbounded_result(&b);
                ensure!(
                    r == want,
                    "update of unbounded {id} to {b:?}: {r:?}, want {want:?}"
                );
                if r.is_ok() {
                    self.broad.slots[*id as usize] = Some(b);
                }
                self.broad.check(g)?;
                r
            }
            HhgOp::Broad(BroadOp::UpdateMany(list))
                if list.iter().any(|(i, _)| self.is_unbounded(*i)) =>
            {
                // The grid's update_many checks every element as `update`
                // does (an unbounded object takes an infinite box): ids and
                // box validity over the whole batch first, then the range
                // rule; a refused batch changes nothing.
                let list: Vec<(u32, B)> = list
                    .iter()
                    .map(|(i, s)| (*i, self.broad.resolve(s)))
                    .collect();
                let r = g.update_many(&list);
                let fault = list.iter().find_map(|(i, b)| {
                    if *i as usize >= cap {
                        Some(Error::IdOutOfRange { id: *i })
                    } else if self.broad.slots[*i as usize].is_none() {
                        Some(Error::UnknownId { id: *i })
                    } else if self.is_unbounded(*i) {
                        unbounded_error(b)
                    } else {
                        crate::model::box_error(b)
                    }
                });
                let mut allowed = Vec::new();
                match fault {
                    Some(e) => allowed.push(Err(e)),
                    None => {
                        if list
                            .iter()
                            .any(|(i, b)| !self.is_unbounded(*i) && self.may_refuse_range(b))
                        {
                            allowed.push(Err(Error::OutOfRange));
                        }
                        allowed.push(Ok(()));
                    }
                }
                ensure!(
                    allowed.contains(&r),
                    "update_many with unbounded ids {list:?}: {r:?}, allowed {allowed:?}"
                );
                if r.is_ok() {
                    for (i, b) in &list {
                        self.broad.slots[*i as usize] = Some(*b);
                    }
                }
                self.broad.check(g)?;
                r
            }
            HhgOp::Broad(op) => {
                let b = match op {
                    BroadOp::Insert(_, s) | BroadOp::Update(_, s) | BroadOp::Query(s) => {
                        Some(self.broad.resolve(s))
                    }
                    _ => None,
                };
                let refusable = b.as_ref().is_some_and(|b| self.may_refuse_range(b));
                let r = self.broad.apply(g, op)?;
                match op {
                    BroadOp::Insert(id, _) | BroadOp::Update(id, _) => {
                        if r == Err(Error::OutOfRange) {
                            ensure!(refusable, "OutOfRange for a tame box {b:?}");
                        }
                        if matches!(op, BroadOp::Insert(..)) && r.is_ok() {
                            self.unbounded[*id as usize] = false;
                            if self.levels_tame.is_none() {
                                self.levels_tame = b.as_ref().map(tame);
                            }
                            if self.broad.len() as u32 >= self.small_n {
                                self.grid_mode = true;
                            }
                        }
                    }
                    BroadOp::Remove(id) if r.is_ok() => self.unbounded[*id as usize] = false,
                    BroadOp::Clear => self.clear(),
                    BroadOp::Query(_) => {
                        let want = unbounded_result(b.as_ref().expect("query box"));
                        ensure!(r == want, "query {b:?}: {r:?}, want {want:?}");
                    }
                    _ => {}
                }
                r
            }
            HhgOp::InsertUnbounded(id, s) => {
                let b = self.broad.resolve(s);
                let r = g.insert_unbounded(*id, b);
                let want = if *id as usize >= cap {
                    Err(Error::IdOutOfRange { id: *id })
                } else if let Err(e) = unbounded_result(&b) {
                    Err(e)
                } else if self.broad.get(*id).is_some() {
                    Err(Error::DuplicateId { id: *id })
                } else {
                    Ok(())
                };
                ensure!(
                    r == want,
                    "insert_unbounded({id}, {b:?}) = {r:?}, want {want:?}"
                );
                if r.is_ok() {
                    self.broad.slots[*id as usize] = Some(b);
                    self.unbounded[*id as usize] = true;
                }
                self.broad.check(g)?;
                r
            }
            HhgOp::UpdateAll {
                incremental,
                moves,
                len,
                nan_fill,
            } => {
                let r = self.update_all(g, *incremental, moves, *len, *nan_fill)?;
                self.broad.check(g)?;
                r
            }
            HhgOp::SortRecords => {
                g.sort_records();
                self.broad.check(g)?;
                Ok(())
            }
        })
    }

    fn update_all(
        &mut self,
        g: &mut VecHhg<B>,
        incremental: bool,
        moves: &[(u32, BoxSpec<B>)],
        len: AllLen,
        nan_fill: bool,
    ) -> Result<Outcome, String> {
        let cap = self.broad.capacity();
        let nan = B::raw([f32::NAN; 3], [f32::NAN; 3]);
        let fill = if nan_fill { nan } else { B::ZERO };
        let mut boxes: Vec<B> = self.broad.slots.iter().map(|b| b.unwrap_or(fill)).collect();
        for (id, s) in moves {
            let b = self.broad.resolve(s);
            if let Some(slot) = boxes.get_mut(*id as usize) {
                *slot = b;
            }
        }
        match len {
            AllLen::Full => {}
            AllLen::Short(k) => boxes.truncate(usize::from(k) % cap.max(1)),
            AllLen::Long(k) => boxes.extend(core::iter::repeat_n(nan, 1 + usize::from(k % 4))),
        }
        // Every stored id in order: the first bad box's error, after any
        // box a grid may refuse; then the length.
        let mut allowed = Vec::new();
        let mut done = false;
        let mut seen = 0;
        for (i, b) in boxes.iter().enumerate().take(cap) {
            if self.broad.slots[i].is_none() {
                continue;
            }
            seen += 1;
            let e = if self.unbounded[i] {
                unbounded_result(b)
            } else {
                crate::model::box_error(b).map_or(Ok(()), Err)
            };
            match e {
                Err(x) => {
                    allowed.push(Err(x));
                    done = true;
                    break;
                }
                Ok(()) if !self.unbounded[i] && self.may_refuse_range(b) => {
                    allowed.push(Err(Error::OutOfRange));
                }
                Ok(()) => {}
            }
        }
        if !done {
            let n = self.broad.len();
            allowed.push(if seen == n {
                Ok(())
            } else {
                Err(Error::LengthMismatch {
                    expected: n,
                    got: seen,
                })
            });
        }
        let strategy = if incremental {
            UpdateStrategy::Incremental
        } else {
            UpdateStrategy::ClearAndReinsert
        };
        let r = g.update_all(&boxes, strategy);
        ensure!(
            allowed.contains(&r),
            "update_all = {r:?}, allowed {allowed:?}"
        );
        if r.is_ok() {
            for (stored, b) in self.broad.slots.iter_mut().zip(&boxes) {
                if stored.is_some() {
                    *stored = Some(*b);
                }
            }
        }
        Ok(r)
    }

    fn clear(&mut self) {
        self.unbounded.fill(false);
        self.grid_mode = false;
        self.levels_tame = None;
    }

    /// The grid's own state against the model: `uses_grids` and the
    /// `stats()` counts (objects per container, arena words, per-grid
    /// counts).
    ///
    /// # Errors
    /// A message naming what differs.
    pub fn check(&self, g: &VecHhg<B>) -> Result<(), String> {
        let n = self.broad.len();
        ensure!(
            g.uses_grids() == self.grid_mode,
            "uses_grids {}",
            g.uses_grids()
        );
        let st = g.stats();
        let nu = (0..self.broad.capacity())
            .filter(|&i| self.unbounded[i] && self.broad.slots[i].is_some())
            .count();
        let in_grids: u32 = st.grid[..st.grids].iter().map(|s| s.objects).sum();
        ensure!(st.small_n != self.grid_mode, "stats.small_n {}", st.small_n);
        ensure!(
            st.flat_objects + st.unbounded_objects + in_grids as usize == n,
            "stats count {st:?}, {n} stored"
        );
        ensure!(
            st.arena_words == self.arena,
            "arena_words {}",
            st.arena_words
        );
        ensure!(
            st.arena_words_used <= self.arena,
            "arena_words_used {}",
            st.arena_words_used
        );
        if self.grid_mode {
            ensure!(st.flat_objects == 0, "flat objects in grid mode");
            ensure!(
                st.unbounded_objects >= nu,
                "unbounded objects {}",
                st.unbounded_objects
            );
        } else {
            ensure!(st.grids == 0, "grids in small-N mode");
            ensure!(
                st.unbounded_objects == nu,
                "unbounded objects {}",
                st.unbounded_objects
            );
        }
        for s in &st.grid[..st.grids] {
            let per: u32 = s.cells_per_axis.iter().product();
            ensure!(s.cells == per, "cells {s:?}");
            ensure!(
                s.occupied_cells <= s.objects && s.max_objects_per_cell <= s.objects,
                "cell counts {s:?}"
            );
            ensure!(
                (s.objects > 0) == (s.max_objects_per_cell > 0),
                "max per cell {s:?}"
            );
        }
        for s in &st.grid[st.grids..] {
            ensure!(s.objects == 0, "objects in an unused grid");
        }
        Ok(())
    }

    /// Checks the model, then applies every op, stopping at the first
    /// failure.
    ///
    /// # Errors
    /// The first failure, with its index.
    pub fn run(&mut self, g: &mut VecHhg<B>, ops: &[HhgOp<B>]) -> Result<(), String> {
        self.broad.check(g)?;
        self.check(g)?;
        for (k, op) in ops.iter().enumerate() {
            let _ = self.apply(g, op).map_err(|e| format!("op {k}: {e}"))?;
        }
        Ok(())
    }
}

/// Grid operations: mostly trait operations, with unbounded inserts,
/// `update_all` and record sorts.
pub fn hhg_op<B: TestBox>() -> impl Strategy<Value = HhgOp<B>> {
    let len = prop_oneof![
        6 => Just(AllLen::Full),
        1 => any::<u8>().prop_map(AllLen::Short),
        1 => any::<u8>().prop_map(AllLen::Long),
    ];
    prop_oneof![
        20 => broad_op::<B>().prop_map(HhgOp::Broad),
        2 => (0..crate::model::IDS, box_spec::<B>()).prop_map(|(i, s)| HhgOp::InsertUnbounded(i, s)),
        3 => (
            any::<bool>(),
            prop::collection::vec((0..crate::model::IDS, box_spec::<B>()), 0..8),
            len,
            any::<bool>(),
        )
            .prop_map(|(incremental, moves, len, nan_fill)| HhgOp::UpdateAll {
                incremental,
                moves,
                len,
                nan_fill,
            }),
        1 => Just(HhgOp::SortRecords),
    ]
}

mod fuzzing {
    use super::*;
    use arbitrary::{Arbitrary, Result, Unstructured};

    impl<'a> Arbitrary<'a> for AllLen {
        fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
            Ok(match u.int_in_range(0u8..=7)? {
                0..=5 => AllLen::Full,
                6 => AllLen::Short(u.arbitrary()?),
                _ => AllLen::Long(u.arbitrary()?),
            })
        }
    }

    impl<'a, B: TestBox> Arbitrary<'a> for HhgOp<B> {
        fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
            Ok(match u.int_in_range(0u8..=25)? {
                0..=19 => HhgOp::Broad(u.arbitrary()?),
                20..=21 => HhgOp::InsertUnbounded(
                    u.int_in_range(0..=crate::model::IDS - 1)?,
                    u.arbitrary()?,
                ),
                22..=24 => {
                    let n = u.int_in_range(0u8..=16)?;
                    let mut moves = Vec::new();
                    for _ in 0..n {
                        moves.push((u.int_in_range(0..=crate::model::IDS - 1)?, u.arbitrary()?));
                    }
                    HhgOp::UpdateAll {
                        incremental: u.arbitrary()?,
                        moves,
                        len: u.arbitrary()?,
                        nan_fill: u.arbitrary()?,
                    }
                }
                _ => HhgOp::SortRecords,
            })
        }
    }
}
