//! Differential fuzzing of the linear kd-tree (`spatium::kdtree`), in 2D and
//! 3D, with `u32`, `u64` or `u128` codes.
//!
//! The input decodes (via `arbitrary`) into a code width, the length of the
//! broad phase's record buffers (fewer than the 36 ids, as many, or room to
//! split), the capacity of a batch tree, a configuration
//! ([`KdCfgSpec`]: split policy — none, or a volume gain that may be out of
//! range —, octree cells, bits per axis, possibly more than the code type
//! holds, root — automatic, a lattice cell or raw `f32` corners that may be
//! invalid —, sort, temporal reuse) and up to 64 operations, each applied to
//! the 2D or the 3D world:
//!
//! * on a `KdBroadPhase` over ids `0..48` and `u32::MAX` (capacity 36):
//!   every trait operation, small moves (temporal reuse), pair enumeration
//!   in every candidate mode, configuration changes ([`KdOp`]). These are
//!   judged by the shared broad-phase model with the kd-tree's layer
//!   (`spatium_host_tests::kd_model`, the same judge as `kd_props.rs`):
//!   every result predicted exactly (id and box errors in the trait's
//!   order, `CapacityExceeded` for full record buffers, `InvalidConfig`
//!   from every rebuild while the bits are too many and a change is
//!   pending, the configuration builders' errors); a refused operation
//!   changes nothing (`get` of every id, the pairs, the records, the
//!   stats); after every operation the structure validates, and a rebuilt
//!   clone gives the model's pairs, validates with its keys checked and has
//!   consistent stats and records (pieces, split counts, frame, clamped
//!   boxes under a dyadic root); pair operations check `Raw` candidates (a
//!   superset, counted by `count_raw`), `Unique` ones (a superset without
//!   duplicates, within `Raw`), `Exact` ones and queries with every stored
//!   box.
//! * on a `LinearKdTree` (not a broad phase, checked here): batch builds of
//!   up to 64 boxes, possibly with a new configuration, possibly refused
//!   (bad box, too many boxes, too many bits: a refused build keeps its
//!   records and stats), and rebuilds over the last boxes with some moved
//!   (temporal reuse); after each, `validate`, `validate_against` its
//!   boxes, every candidate mode and queries against brute force.
//!
//! Boxes are the shared model's ([`BoxSpec`]): dyadic lattice boxes (they
//! coincide and touch exactly), copies of stored boxes and boxes touching
//! their faces, and faults (NaN, inverted, infinities, exotic finite values,
//! raw bits). Decoding never fails: input that runs out ends the run.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use spatium::Inspect;
use spatium::kdtree::{Candidates, KdBroadPhase, KdRecord, KdSlot, LinearKdTree, LocCode};
use spatium::{Aabb2, Aabb3, Validate};
use spatium_host::boxes::{TestBox, overlap};
use spatium_host_tests::kd_model::{
    Configured, KdCfgSpec, KdModel, KdOp, VecKd, check_candidates, make_config, nudged,
};
use spatium_host_tests::model::{BoxSpec, BroadModel, Fault, box_error};

/// Ids below `CAP` are in range (the shared model draws ids `0..48`).
const CAP: usize = 36;
/// Most operations per input.
const MAX_OPS: usize = 64;
/// Most boxes of a batch build.
const MAX_BATCH: usize = 64;
/// Broad-phase record buffers: full before the ids run out, exactly the ids,
/// and room to split.
const RECORDS: [usize; 5] = [12, CAP, 2 * CAP, 8 * CAP, 1];

type Tree<B, K> = LinearKdTree<B, K, Vec<KdRecord<K>>>;

macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

#[derive(Arbitrary, Debug)]
struct Header {
    /// 0: `u32`, 1: `u64`, 2: `u128` codes.
    code: u8,
    /// Records of the broad phase: `RECORDS[records % 5]`.
    records: u8,
    /// Records of the batch tree: `batch_cap % 129`.
    batch_cap: u8,
    cfg: KdCfgSpec,
}

/// A box of a batch: three batches in four are clean (lattice boxes,
/// copies, touching boxes, exotic finite values), the others any shared
/// box spec (faults included).
fn batch_spec<B: TestBox>(u: &mut Unstructured<'_>, clean: bool) -> arbitrary::Result<BoxSpec<B>> {
    if !clean {
        return u.arbitrary();
    }
    let of = |u: &mut Unstructured<'_>| u.int_in_range(0..=MAX_BATCH as u32 - 1);
    Ok(match u.int_in_range(0u8..=11)? {
        0..=6 => BoxSpec::Lattice(u.arbitrary()?),
        7..=8 => BoxSpec::CopyOf(of(u)?),
        9..=10 => BoxSpec::Touching {
            of: of(u)?,
            axis: u.arbitrary()?,
            edge: u.arbitrary()?,
        },
        _ => BoxSpec::Faulty(
            u.arbitrary()?,
            Fault::Exotic {
                axis: u.int_in_range(0..=3)?,
                which: u.arbitrary()?,
            },
        ),
    })
}

/// The boxes of a batch: copies and touching boxes refer to box
/// `of mod i` of the boxes before them (the shared model's resolution).
fn batch_boxes<B: TestBox>(specs: &[BoxSpec<B>]) -> Vec<B> {
    let mut m = BroadModel::<B>::new(0);
    for s in specs {
        let n = m.slots.len().max(1) as u32;
        let s = match *s {
            BoxSpec::CopyOf(of) => BoxSpec::CopyOf(of % n),
            BoxSpec::Touching { of, axis, edge } => BoxSpec::Touching {
                of: of % n,
                axis,
                edge,
            },
            s => s,
        };
        let b = m.resolve(&s);
        m.slots.push(Some(b));
    }
    m.slots.into_iter().flatten().collect()
}

/// The world of one dimension: a broad phase and its model, a batch tree.
struct World<B: TestBox, K: LocCode> {
    bp: VecKd<B, K>,
    model: KdModel<B>,
    tree: Tree<B, K>,
    tree_cfg: Configured<B>,
    /// The boxes of the tree's last build, or `None` after a configuration
    /// change with no build since (nothing to compare with).
    tree_boxes: Option<Vec<B>>,
}

impl<B: TestBox, K: LocCode> World<B, K> {
    fn new(records: usize, batch_cap: usize, cfg: &KdCfgSpec) -> Result<Self, String> {
        let c = make_config::<B, K>(cfg)?;
        let w = Self {
            bp: KdBroadPhase::new(
                vec![KdSlot::EMPTY; CAP],
                vec![KdRecord::EMPTY; records],
                vec![KdRecord::EMPTY; records],
                c.config,
            ),
            model: KdModel::new(CAP, records, c),
            tree: LinearKdTree::new(
                vec![KdRecord::EMPTY; batch_cap],
                vec![KdRecord::EMPTY; batch_cap],
                c.config,
            ),
            tree_cfg: c,
            tree_boxes: Some(Vec::new()),
        };
        w.model.check(&w.bp).map_err(|e| format!("new: {e}"))?;
        Ok(w)
    }

    /// Decodes one operation and applies it (`Err` of the outer result:
    /// the input ran out).
    fn step(&mut self, u: &mut Unstructured<'_>) -> arbitrary::Result<Result<(), String>> {
        Ok(match u.int_in_range(0u8..=10)? {
            0..=7 => {
                let op: KdOp<B> = u.arbitrary()?;
                self.model.apply(&mut self.bp, &op).map(|_| ())
            }
            8 => {
                let cfg: Option<KdCfgSpec> = u.arbitrary()?;
                let n = u.int_in_range(0..=MAX_BATCH)?;
                let clean = u.ratio(3u8, 4)?;
                let mut specs = Vec::with_capacity(n);
                for _ in 0..n {
                    specs.push(batch_spec::<B>(u, clean)?);
                }
                self.batch_op(cfg.as_ref(), &specs)
                    .map_err(|e| format!("batch (cfg {cfg:?}, boxes {specs:?}): {e}"))
            }
            9 => {
                let n = u.int_in_range(0..=MAX_BATCH)?;
                let mut moves = Vec::with_capacity(n);
                for _ in 0..n {
                    moves.push(<(u8, [i8; 3], u8)>::arbitrary(u)?);
                }
                self.rebuild(&moves)
                    .map_err(|e| format!("rebuild ({moves:?}): {e}"))
            }
            _ => {
                self.tree.clear();
                self.tree_boxes = Some(Vec::new());
                if self.tree.is_empty() {
                    self.check_tree().map_err(|e| format!("clear tree: {e}"))
                } else {
                    Err("clear tree: not empty".into())
                }
            }
        })
    }

    fn batch_op(&mut self, cfg: Option<&KdCfgSpec>, specs: &[BoxSpec<B>]) -> Result<(), String> {
        if let Some(c) = cfg {
            let c = make_config::<B, K>(c)?;
            self.tree.set_config(c.config);
            self.tree_cfg = c;
            self.tree_boxes = None;
            ensure!(self.tree.records().is_empty(), "set_config keeps records");
        }
        self.batch(batch_boxes(specs))?;
        self.check_tree()
    }

    /// The last batch again with some boxes moved by `delta · 2^-(exp mod
    /// 12)` (temporal reuse).
    fn rebuild(&mut self, moves: &[(u8, [i8; 3], u8)]) -> Result<(), String> {
        if let Some(mut boxes) = self.tree_boxes.clone()
            && !boxes.is_empty()
        {
            for (i, delta, exp) in moves {
                let k = usize::from(*i) % boxes.len();
                boxes[k] = nudged(Some(boxes[k]), delta, *exp);
            }
            self.batch(boxes)?;
        }
        self.check_tree()
    }

    /// A batch build: predicted result; a refused build keeps everything.
    fn batch(&mut self, boxes: Vec<B>) -> Result<(), String> {
        let records = self.tree.records().to_vec();
        let stats = self.tree.stats();
        let cap = self.tree.record_capacity();
        let want = match boxes.iter().find_map(box_error) {
            Some(e) => Err(e),
            None if boxes.len() > cap => Err(spatium::Error::CapacityExceeded { capacity: cap }),
            None if self.tree_cfg.bad_bits => Err(spatium::Error::InvalidConfig { field: "bits" }),
            None => Ok(()),
        };
        let r = self.tree.build(&boxes);
        ensure!(
            r == want,
            "build of {} boxes: {r:?}, want {want:?}",
            boxes.len()
        );
        if r.is_ok() {
            self.tree_boxes = Some(boxes);
        } else {
            ensure!(
                self.tree.records() == &records[..],
                "a refused build changed the records"
            );
            ensure!(
                self.tree.stats() == stats,
                "a refused build changed the stats"
            );
        }
        Ok(())
    }

    /// The batch tree against brute force over its last boxes.
    fn check_tree(&self) -> Result<(), String> {
        let t = &self.tree;
        t.validate().map_err(|c| format!("tree validate: {c}"))?;
        let Some(boxes) = &self.tree_boxes else {
            return Ok(());
        };
        t.validate_against(boxes)
            .map_err(|c| format!("tree validate_against: {c}"))?;
        ensure!(t.len() == boxes.len(), "tree len {}", t.len());
        let st = t.stats();
        ensure!(st.records == t.records().len(), "{st:?}");
        if !self.tree_cfg.reuse {
            ensure!(!st.reused, "reused without temporal reuse: {st:?}");
        }
        let mut want = Vec::new();
        for i in 0..boxes.len() {
            for j in i + 1..boxes.len() {
                if overlap(&boxes[i], &boxes[j]) {
                    want.push((i as u32, j as u32));
                }
            }
        }
        let mut modes: [Vec<(u32, u32)>; 3] = Default::default();
        for (v, mode) in
            modes
                .iter_mut()
                .zip([Candidates::Raw, Candidates::Unique, Candidates::Exact])
        {
            let r = t.for_each_candidate_pair(boxes, mode, |a, b| v.push((a, b)));
            ensure!(r.is_ok(), "tree {mode:?}: {r:?}");
        }
        let [raw, uni, ex] = &modes;
        check_candidates(raw, t.count_raw(), uni, ex, &want)
            .map_err(|e| format!("tree candidates: {e}; boxes {boxes:?}, stats {st:?}"))?;
        for (k, q) in boxes.iter().enumerate().take(16) {
            let mut got = Vec::new();
            let r = t.query(boxes, q, |id| got.push(id));
            got.sort_unstable();
            let hits: Vec<u32> = (0..boxes.len() as u32)
                .filter(|&i| overlap(&boxes[i as usize], q))
                .collect();
            ensure!(
                r.is_ok() && got == hits,
                "tree query with box {k} {q:?}: {r:?} {got:?}, want {hits:?}"
            );
        }
        Ok(())
    }
}

fn run<K: LocCode>(h: &Header, u: &mut Unstructured<'_>) -> Result<(), String> {
    let records = RECORDS[usize::from(h.records) % RECORDS.len()];
    let batch_cap = usize::from(h.batch_cap) % 129;
    let mut w2 =
        World::<Aabb2, K>::new(records, batch_cap, &h.cfg).map_err(|e| format!("2D {e}"))?;
    let mut w3 =
        World::<Aabb3, K>::new(records, batch_cap, &h.cfg).map_err(|e| format!("3D {e}"))?;
    for k in 0..MAX_OPS {
        if u.is_empty() {
            break;
        }
        let Ok(three) = u.arbitrary::<bool>() else {
            break;
        };
        let r = if three { w3.step(u) } else { w2.step(u) };
        match r {
            Ok(r) => r.map_err(|e| format!("op {k} ({}D): {e}", if three { 3 } else { 2 }))?,
            Err(_) => break,
        }
    }
    Ok(())
}

fn run_input(data: &[u8]) -> Result<(), String> {
    let mut u = Unstructured::new(data);
    let Ok(h) = Header::arbitrary(&mut u) else {
        return Ok(());
    };
    match h.code % 3 {
        0 => run::<u32>(&h, &mut u),
        1 => run::<u64>(&h, &mut u),
        _ => run::<u128>(&h, &mut u),
    }
}

fuzz_target!(|data: &[u8]| {
    if let Err(e) = run_input(data) {
        panic!("{e}");
    }
});
