//! The linear kd-tree report: Poirrier 2009's Table 1 (§4.2) and Tables
//! 2–3 (§6) for `spatium::kdtree`, with the other broad phases in the same
//! run. Writes `benches/KD_REPORT.md` (prose from
//! `benches/templates/kd_report.md`) and `benches/kd_report.svg`.
//!
//! ```text
//! cargo run --release -p spatium-benches --bin report -- kd [--quick] [--max-n N] [--out DIR]
//! ```
//!
//! * Table 1: 10 000 spheres uniform in a cube at densities 0.01 to 1 (no
//!   simulation), placed in the kd-tree without and with splitting, and in
//!   the octree variant with splitting.
//! * Tables 2–3: the settling spheres of [`crate::settle`], run to
//!   step 39 with the kd-tree's exact pairs; the snapshots of steps 39 to 70
//!   are kept. Each structure is set up on step 39 (untimed for the table's
//!   step time) and then stepped over steps 40 to 70 on the very same boxes,
//!   one structure after the other: its step time is the thread's CPU time
//!   in steady state ([`Steady::PAPER`]: median of steps 10–30 after the
//!   build, scene steps 50–70; a refitted tree degrades step by step). Every exact implementation must report the
//!   same pair count and order-free checksum at every step it ran, or the
//!   report aborts. `--quick`: N ≤ 10⁵; `--max-n N`: sizes up to N.

use core::fmt::Write as _;
use std::process::ExitCode;

use crate::bp_peers::{Pairs, ParryBvh, SweepAndPrune};
use crate::measure::{Steady, Stopwatch, Timing, median, time};
use crate::plot::{self, Panel, Series};
use crate::provenance::{Provenance, locked_version, mem_available_gib};
use crate::settle::{self, PairSource, Settle};
use crate::template::fill_values;
use parry3d::bounding_volume::Aabb as ParryAabb;
use parry3d::math::Vector as ParryVector;
use parry3d::partitioning::{Bvh, BvhBuildStrategy};
use spatium::Inspect;
use spatium::kdtree::{
    BuildPhase, Candidates, KdConfig, KdRecord, LinearKdTree, LocCode, SortAlgo, Split,
};
use spatium::{
    Aabb3, BoundingBox, BroadPhase, BruteForceBroadPhase, BruteSlot, HhgConfig, UpdateStrategy,
};
use spatium_host::make::{self, VecHhg};

/// First timed step (the paper's steps 50–60 start here); structures are
/// set up `STEADY.skip + 1` steps before.
const FIRST_STEP: usize = 50;
/// The protocol: set up on step 39, median of steps 50–70 (10–30 after the
/// build).
const STEADY: Steady = Steady::PAPER;
/// At N = 5·10⁶: the same warm-up, steps 50–52 timed, to keep the full run
/// near 15 minutes.
const BIG: Steady = Steady { skip: 10, take: 3 };
/// The prose of the report.
const TEMPLATE: &str = include_str!("../../templates/kd_report.md");
/// Steps right after the build shown beside the steady state.
const EARLY: usize = 5;
/// A structure stops being stepped once its timed steps took this much CPU
/// time (at least one step always runs).
const BUDGET_S: f64 = 10.0;
/// Brute force runs only where its predicted step is below this.
const BRUTE_MAX_S: f64 = 10.0;
/// Sweep and prune runs only where its predicted step is below this.
const SAP_MAX_S: f64 = 30.0;
/// Record buffers are sized to the records of the first build times this.
const ROOM: f64 = 1.25;
/// Seed of Table 1's distributions.
const T1_SEED: u64 = 0x7AB1_E001;
/// N of Table 1.
const T1_N: usize = 10_000;

/// Build phases of one kd step, ms.
#[derive(Clone, Copy, Debug, Default)]
struct Phases {
    validate: f64,
    codes: f64,
    sort: f64,
    sweep: f64,
}

/// What a kd-tree driver reports about itself.
#[derive(Clone, Copy, Debug, Default)]
struct KdInfo {
    code: &'static str,
    bits: u32,
    depth: u32,
    records_first: usize,
    records_last: usize,
    cap: usize,
    record_size: usize,
    unsplit_max: usize,
    reused_steps: usize,
    moves: usize,
    steps: usize,
}

struct StepOut {
    pairs: Pairs,
    phases: Option<Phases>,
}

/// One implementation under test, driven step by step.
trait Driver {
    fn setup(&mut self, boxes: &[Aabb3]);
    fn step(&mut self, boxes: &[Aabb3]) -> StepOut;
    /// Bytes of the structure's own storage (boxes not included).
    fn memory(&self) -> Option<usize>;
    fn kd(&self) -> Option<KdInfo> {
        None
    }
}

struct Kd<K: LocCode> {
    cfg: KdConfig<Aabb3>,
    mode: Candidates,
    tree: Option<LinearKdTree<Aabb3, K, Vec<KdRecord<K>>>>,
    info: KdInfo,
}

impl<K: LocCode> Kd<K> {
    fn boxed(cfg: KdConfig<Aabb3>, mode: Candidates) -> Box<dyn Driver> {
        Box::new(Self {
            cfg,
            mode,
            tree: None,
            info: KdInfo {
                code: if K::BITS == 32 { "u32" } else { "u64" },
                record_size: size_of::<KdRecord<K>>(),
                ..KdInfo::default()
            },
        })
    }
}

impl<K: LocCode> Driver for Kd<K> {
    fn setup(&mut self, boxes: &[Aabb3]) {
        let n = boxes.len();
        // Probe with room for every box split 8 ways, then size the buffers
        // to the records actually needed.
        let probe_cap = 8 * n.max(1);
        let mut probe = LinearKdTree::<Aabb3, K, _>::new(
            vec![KdRecord::EMPTY; probe_cap],
            vec![KdRecord::EMPTY; probe_cap],
            self.cfg,
        );
        probe.build(boxes).expect("kd probe build");
        let first = probe.stats().records;
        drop(probe);
        let cap = ((first as f64 * ROOM).ceil() as usize).max(n);
        let mut tree = LinearKdTree::new(
            vec![KdRecord::EMPTY; cap],
            vec![KdRecord::EMPTY; cap],
            self.cfg,
        );
        tree.build(boxes).expect("kd build");
        self.info.records_first = first;
        self.info.cap = cap;
        self.tree = Some(tree);
    }

    fn step(&mut self, boxes: &[Aabb3]) -> StepOut {
        let t = self.tree.as_mut().expect("setup");
        let clock = Stopwatch::start();
        let mut marks = [0f64; 3];
        t.build_observed(boxes, |ph| {
            let e = clock.elapsed().cpu_ms();
            match ph {
                BuildPhase::Validated => marks[0] = e,
                // A reused build that falls back reports `Coded` twice: the
                // failed repair counts as coding.
                BuildPhase::Coded => marks[1] = e,
                BuildPhase::Sorted => marks[2] = e,
            }
        })
        .expect("kd build");
        let mut p = Pairs::default();
        match self.mode {
            Candidates::Raw => {
                let mut c = 0u64;
                t.for_each_candidate_pair(boxes, Candidates::Raw, |_, _| c += 1)
                    .expect("kd sweep");
                p.count = c;
            }
            m => t
                .for_each_candidate_pair(boxes, m, |a, b| p.add(a, b))
                .expect("kd sweep"),
        }
        let end = clock.elapsed().cpu_ms();
        let st = t.stats();
        self.info.bits = st.bits_per_axis;
        self.info.depth = st.depth;
        self.info.records_last = st.records;
        self.info.unsplit_max = self.info.unsplit_max.max(st.unsplit_for_room);
        self.info.reused_steps += st.reused as usize;
        self.info.moves += st.moves;
        self.info.steps += 1;
        StepOut {
            pairs: p,
            phases: Some(Phases {
                validate: marks[0],
                codes: marks[1] - marks[0],
                sort: marks[2] - marks[1],
                sweep: end - marks[2],
            }),
        }
    }

    fn memory(&self) -> Option<usize> {
        Some(2 * self.info.cap * self.info.record_size)
    }

    fn kd(&self) -> Option<KdInfo> {
        Some(self.info)
    }
}

struct Hhg {
    g: Option<VecHhg<Aabb3>>,
}

impl Driver for Hhg {
    fn setup(&mut self, boxes: &[Aabb3]) {
        let n = boxes.len();
        let cfg = HhgConfig::DEFAULT;
        // Room for the paper's growth rule, as in bp_report's "hhg".
        let arena = 2 * VecHhg::<Aabb3>::arena_words_for(n, &cfg) + (1 << 16);
        let mut g = make::hhg::<Aabb3>(n, arena, cfg);
        for (i, b) in boxes.iter().enumerate() {
            g.insert(i as u32, *b).expect("insert");
        }
        self.g = Some(g);
    }
    fn step(&mut self, boxes: &[Aabb3]) -> StepOut {
        let g = self.g.as_mut().expect("setup");
        g.update_all(boxes, UpdateStrategy::Incremental)
            .expect("update");
        let mut p = Pairs::default();
        g.for_each_overlap(|a, b| p.add(a, b)).expect("pairs");
        StepOut {
            pairs: p,
            phases: None,
        }
    }
    fn memory(&self) -> Option<usize> {
        self.g.as_ref().map(|g| g.stats().bytes_total)
    }
}

struct Sap(Option<SweepAndPrune<Aabb3>>);

impl Driver for Sap {
    fn setup(&mut self, boxes: &[Aabb3]) {
        self.0 = Some(SweepAndPrune::new_sorted(boxes));
    }
    fn step(&mut self, boxes: &[Aabb3]) -> StepOut {
        let s = self.0.as_mut().expect("setup");
        s.update(boxes);
        let mut p = Pairs::default();
        s.for_each_overlap(|a, b| p.add(a, b));
        StepOut {
            pairs: p,
            phases: None,
        }
    }
    fn memory(&self) -> Option<usize> {
        // Entries of (min_x, max_x, id, box): 36 bytes each.
        self.0.as_ref().map(|s| s.len() * (12 + size_of::<Aabb3>()))
    }
}

struct Parry {
    bvh: Option<ParryBvh>,
    rebuild: bool,
    bytes: usize,
}

fn to_parry(b: &Aabb3) -> ParryAabb {
    ParryAabb::new(
        ParryVector::new(b.min.x, b.min.y, b.min.z),
        ParryVector::new(b.max.x, b.max.y, b.max.z),
    )
}

impl Driver for Parry {
    fn setup(&mut self, boxes: &[Aabb3]) {
        self.bvh = Some(ParryBvh::new(boxes));
        // The same tree built directly, for parry's own memory estimate
        // (`Bvh::total_memory_size`; the traversal workspace not counted).
        let bvh = Bvh::from_iter(
            BvhBuildStrategy::Binned,
            boxes.iter().enumerate().map(|(i, b)| (i, to_parry(b))),
        );
        self.bytes = bvh.total_memory_size();
    }
    fn step(&mut self, boxes: &[Aabb3]) -> StepOut {
        let t = self.bvh.as_mut().expect("setup");
        if self.rebuild {
            t.rebuild(boxes);
        } else {
            t.refit(boxes);
        }
        let mut p = Pairs::default();
        t.for_each_overlap(|a, b| p.add(a, b));
        StepOut {
            pairs: p,
            phases: None,
        }
    }
    fn memory(&self) -> Option<usize> {
        Some(self.bytes)
    }
}

struct Brute(Option<BruteForceBroadPhase<Aabb3, Vec<BruteSlot<Aabb3>>>>);

impl Driver for Brute {
    fn setup(&mut self, boxes: &[Aabb3]) {
        let mut b = BruteForceBroadPhase::new(make::brute_slots(boxes.len()));
        for (i, x) in boxes.iter().enumerate() {
            b.insert(i as u32, *x).expect("insert");
        }
        self.0 = Some(b);
    }
    fn step(&mut self, boxes: &[Aabb3]) -> StepOut {
        let b = self.0.as_mut().expect("setup");
        for (i, x) in boxes.iter().enumerate() {
            b.update(i as u32, *x).expect("update");
        }
        let mut p = Pairs::default();
        b.for_each_overlap(|a, c| p.add(a, c)).expect("pairs");
        StepOut {
            pairs: p,
            phases: None,
        }
    }
    fn memory(&self) -> Option<usize> {
        self.0
            .as_ref()
            .map(|b| b.capacity() * size_of::<BruteSlot<Aabb3>>())
    }
}

/// How a driver's pairs are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    /// Every overlapping pair once: must equal the reference exactly.
    Exact,
    /// A superset of the exact pairs, each once: count at least the exact.
    Unique,
    /// Raw candidates with duplicates: count at least the exact.
    Raw,
}

/// Where a row goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    /// Main table and plot.
    Main,
    /// Splitting-gain sweep only.
    Gain,
}

struct Entry {
    name: String,
    check: Check,
    group: Group,
    driver: Box<dyn Driver>,
}

fn entry(name: &str, check: Check, group: Group, driver: Box<dyn Driver>) -> Entry {
    Entry {
        name: name.to_string(),
        check,
        group,
        driver,
    }
}

/// One driver's results on one N.
struct Res {
    name: String,
    check: Check,
    group: Group,
    setup_ms: f64,
    /// CPU ms of the timed steps.
    times: Vec<f64>,
    /// Median CPU ms of the first [`EARLY`] steps after the build.
    early_ms: f64,
    /// Phases of the timed steps.
    phases: Vec<Phases>,
    /// Pairs of every step after the build, warm-up included.
    pairs: Vec<Pairs>,
    /// Warm-up steps (the first timed step is `pairs[skip]`).
    skip: usize,
    memory: Option<usize>,
    kd: Option<KdInfo>,
}

impl Res {
    fn step_ms(&self) -> f64 {
        median(&self.times)
    }
    /// Pairs reported at the first timed step (step 50), which every
    /// structure ran.
    fn first_pairs(&self) -> u64 {
        self.pairs.get(self.skip).map_or(0, |p| p.count)
    }
    /// Median of a phase over the timed steps; NaN for a structure without
    /// phases.
    fn phase(&self, f: impl Fn(&Phases) -> f64) -> f64 {
        if self.phases.is_empty() {
            return f64::NAN;
        }
        median(&self.phases.iter().map(f).collect::<Vec<_>>())
    }
}

/// Sets `e` up on `snaps[0]` and steps it over `snaps[1..]` with the
/// protocol `steady` (its timed steps stop once they took [`BUDGET_S`]).
fn run(mut e: Entry, snaps: &[Vec<Aabb3>], steady: Steady) -> Res {
    let n = snaps[0].len();
    let ((), setup) = time(|| e.driver.setup(&snaps[0]));
    let r = steady.run(
        |k| time(|| e.driver.step(&snaps[1 + k])),
        |t| t.cpu_ms().iter().sum::<f64>() > BUDGET_S * 1e3,
    );
    let early: Vec<f64> = r.all[..EARLY.min(r.all.len())]
        .iter()
        .map(Timing::cpu_ms)
        .collect();
    let res = Res {
        name: e.name,
        check: e.check,
        group: e.group,
        setup_ms: setup.cpu_ms(),
        times: r.timed.cpu_ms(),
        early_ms: median(&early),
        phases: r.outputs[steady.skip..]
            .iter()
            .filter_map(|o| o.phases)
            .collect(),
        pairs: r.outputs.iter().map(|o| o.pairs).collect(),
        skip: steady.skip,
        memory: e.driver.memory(),
        kd: e.driver.kd(),
    };
    eprintln!(
        "  {n:>8} {:<28} setup {:>9.1} ms  step {:>9.2} ms ({} steps; steps 0–4: {:>9.2})  pairs {}",
        res.name,
        res.setup_ms,
        res.step_ms(),
        res.times.len(),
        res.early_ms,
        res.first_pairs()
    );
    res
}

/// Checks every result against the reference (the first exact one).
fn cross_check(n: usize, res: &[Res]) -> Result<(), String> {
    let reference = res
        .iter()
        .find(|r| r.check == Check::Exact)
        .ok_or("no exact implementation")?;
    for r in res {
        for (k, p) in r.pairs.iter().enumerate() {
            let want = reference.pairs.get(k).copied();
            let Some(want) = want else { continue };
            let ok = match r.check {
                Check::Exact => *p == want,
                Check::Unique | Check::Raw => p.count >= want.count,
            };
            if !ok {
                return Err(format!(
                    "N = {n}, step {}: {} reports {:?}, {} reports {:?}",
                    FIRST_STEP + k - r.skip,
                    r.name,
                    p,
                    reference.name,
                    want
                ));
            }
        }
    }
    Ok(())
}

fn kd_cfg() -> KdConfig<Aabb3> {
    KdConfig::DEFAULT
}

/// The paper's splitting rule ([`Split::PAPER`]): the rows of its kd-tree-1
/// and kd-tree-2, and Table 1.
fn paper_cfg() -> KdConfig<Aabb3> {
    KdConfig::DEFAULT.with_split(Split::PAPER).expect("split")
}

fn gain_cfg(g: u8) -> KdConfig<Aabb3> {
    KdConfig::DEFAULT
        .with_split(Split::Volume { min_gain_log2: g })
        .expect("gain")
}

fn no_split() -> KdConfig<Aabb3> {
    KdConfig::DEFAULT.with_split(Split::None).expect("split")
}

/// A fixed root cell for the scene of `n`: a cube over the initial
/// distribution with a margin of 5 % of its side on each side (the floor at
/// z = 0 as its bottom), so that temporal reuse is not defeated by an
/// automatic root that changes whenever a push moves the scene's bounds.
fn fixed_root(n: usize) -> Aabb3 {
    let l = settle::side_for(n, settle::DENSITY) + 2.0 * settle::RADIUS;
    let m = 0.05 * l;
    let side = l + 2.0 * m;
    Aabb3::new(
        spatium::Vec3::new(-settle::RADIUS - m, -settle::RADIUS - m, 0.0),
        spatium::Vec3::new(side - settle::RADIUS - m, side - settle::RADIUS - m, side),
    )
    .expect("root")
}

/// Scene figures of one N.
struct SceneInfo {
    n: usize,
    side: f32,
    sim_ms: f64,
    contacts: usize,
    steps_timed: usize,
}

/// Predicted step times from the last N measured, for the skip rules.
#[derive(Default)]
struct Predict {
    brute: Option<(usize, f64)>,
    sap: Option<(usize, f64)>,
}

fn predicted(last: Option<(usize, f64)>, n: usize, exp: f64) -> Option<f64> {
    last.map(|(m, ms)| ms * (n as f64 / m as f64).powf(exp) / 1e3)
}

fn drivers(n: usize, pred: &Predict, notes: &mut Vec<String>) -> Vec<Entry> {
    use Candidates::{Exact, Raw, Unique};
    let (m, g) = (Group::Main, Group::Gain);
    let mut v = vec![
        entry(
            "kd exact",
            Check::Exact,
            m,
            Kd::<u64>::boxed(kd_cfg(), Exact),
        ),
        entry(
            "kd-tree-1 (raw)",
            Check::Raw,
            m,
            Kd::<u64>::boxed(paper_cfg().with_box_copies(false), Raw),
        ),
        entry(
            "kd-tree-2 (unique)",
            Check::Unique,
            m,
            Kd::<u64>::boxed(paper_cfg(), Unique),
        ),
        entry(
            "kd exact u32",
            Check::Exact,
            m,
            Kd::<u32>::boxed(kd_cfg(), Exact),
        ),
        entry(
            "kd-tree-1 (raw) u32",
            Check::Raw,
            m,
            Kd::<u32>::boxed(paper_cfg().with_box_copies(false), Raw),
        ),
        entry(
            "kd-tree-2 (unique) u32",
            Check::Unique,
            m,
            Kd::<u32>::boxed(paper_cfg(), Unique),
        ),
        entry(
            "kd exact, paper's split",
            Check::Exact,
            m,
            Kd::<u64>::boxed(paper_cfg(), Exact),
        ),
        entry(
            "octree exact",
            Check::Exact,
            m,
            Kd::<u64>::boxed(kd_cfg().with_octree(true), Exact),
        ),
        entry(
            "kd exact, sort_unstable",
            Check::Exact,
            m,
            Kd::<u64>::boxed(kd_cfg().with_sort(SortAlgo::Comparison), Exact),
        ),
        entry(
            "kd exact, temporal reuse",
            Check::Exact,
            m,
            Kd::<u64>::boxed(kd_cfg().with_temporal_reuse(true), Exact),
        ),
        entry(
            "kd exact, temporal reuse, fixed root",
            Check::Exact,
            m,
            Kd::<u64>::boxed(
                kd_cfg()
                    .with_temporal_reuse(true)
                    .with_root(Some(fixed_root(n)))
                    .expect("root"),
                Exact,
            ),
        ),
    ];
    // The splitting-gain rows: every gain up to 10⁵, a few at 10⁶.
    let gains: &[(u8, bool)] = match n {
        0..=100_000 => &[(1, false), (2, false), (4, false), (2, true), (4, true)],
        1_000_000 => &[(2, false), (4, false), (4, true)],
        _ => &[],
    };
    if gains.is_empty() {
        notes.push(format!(
            "N = {n}: splitting-gain rows not run (run at N ≤ 10⁵ and 10⁶)."
        ));
    } else {
        v.push(entry(
            "kd exact gain 2^4, temporal reuse, fixed root",
            Check::Exact,
            g,
            Kd::<u64>::boxed(
                gain_cfg(4)
                    .with_temporal_reuse(true)
                    .with_root(Some(fixed_root(n)))
                    .expect("root"),
                Exact,
            ),
        ));
    }
    for &(gain, code32) in gains {
        let name = format!("kd exact gain 2^{gain}{}", if code32 { " u32" } else { "" });
        let d = if code32 {
            Kd::<u32>::boxed(gain_cfg(gain), Exact)
        } else {
            Kd::<u64>::boxed(gain_cfg(gain), Exact)
        };
        v.push(entry(&name, Check::Exact, g, d));
    }
    if n <= 100_000 {
        v.push(entry(
            "kd exact no split, temporal reuse, fixed root",
            Check::Exact,
            g,
            Kd::<u64>::boxed(
                no_split()
                    .with_temporal_reuse(true)
                    .with_root(Some(fixed_root(n)))
                    .expect("root"),
                Exact,
            ),
        ));
        v.push(entry(
            "kd exact no split",
            Check::Exact,
            g,
            Kd::<u64>::boxed(no_split(), Exact),
        ));
        v.push(entry(
            "kd exact no split u32",
            Check::Exact,
            g,
            Kd::<u32>::boxed(no_split(), Exact),
        ));
    } else {
        notes.push(format!(
            "N = {n}: no-split rows not run (the boxes across the root's first cut pair with every \
             record after them: O(N²/L) candidates)."
        ));
    }
    v.push(entry(
        "parry refit",
        Check::Exact,
        m,
        Box::new(Parry {
            bvh: None,
            rebuild: false,
            bytes: 0,
        }),
    ));
    v.push(entry(
        "parry rebuild",
        Check::Exact,
        m,
        Box::new(Parry {
            bvh: None,
            rebuild: true,
            bytes: 0,
        }),
    ));
    v.push(entry("hhg", Check::Exact, m, Box::new(Hhg { g: None })));
    match predicted(pred.sap, n, 5.0 / 3.0) {
        Some(s) if s > SAP_MAX_S => notes.push(format!(
            "N = {n}: SAP not run: predicted {s:.0} s per step (from the last N measured, \
             × N^(5/3): the x-overlaps per box grow as N^(2/3) in this scene), above {SAP_MAX_S} s."
        )),
        _ => v.push(entry("SAP", Check::Exact, m, Box::new(Sap(None)))),
    }
    match predicted(pred.brute, n, 2.0) {
        Some(s) if s > BRUTE_MAX_S => notes.push(format!(
            "N = {n}: brute force not run: predicted {s:.0} s per step (× N² from the last N \
             measured), above {BRUTE_MAX_S} s."
        )),
        _ => v.push(entry("brute", Check::Exact, m, Box::new(Brute(None)))),
    }
    v
}

/// Runs the scene of `n` to the first timed step and keeps the snapshots.
fn snapshots(n: usize, steady: Steady) -> (Vec<Vec<Aabb3>>, SceneInfo) {
    let build = FIRST_STEP - 1 - steady.skip;
    let mut sim = Settle::paper(n).with_pair_source(PairSource::RawDedup);
    if n <= 10_000 {
        // The raw-and-deduplicate pair source gives the exact source's
        // scene bit for bit: checked on the whole run at the smallest N.
        let mut a = Settle::paper(n);
        let mut b = sim.clone();
        for _ in 0..FIRST_STEP + steady.take {
            a.step();
            b.step();
            assert_eq!(a.boxes(), b.boxes(), "pair sources disagree");
        }
    }
    let (snaps, t) = time(|| {
        sim.advance_to(build);
        let mut snaps = vec![sim.boxes().to_vec()];
        for _ in 0..steady.steps() {
            sim.step();
            snaps.push(sim.boxes().to_vec());
        }
        snaps
    });
    let sim_ms = t.cpu_ms() / sim.steps() as f64;
    let info = SceneInfo {
        n,
        side: sim.side(),
        sim_ms,
        contacts: sim.contacts(),
        steps_timed: steady.take,
    };
    eprintln!(
        "scene n={n}: side {:.1}, {:.1} ms per sim step, {} contacts at step {}",
        info.side,
        sim_ms,
        info.contacts,
        sim.steps()
    );
    (snaps, info)
}

fn table_header(md: &mut String, cols: &[&str]) {
    let _ = writeln!(md, "| {} |", cols.join(" | "));
    let _ = writeln!(
        md,
        "|{}|",
        cols.iter().map(|_| "---").collect::<Vec<_>>().join("|")
    );
}

/// A count in the paper's style: plain below 10⁶, else `3.30e6`.
fn big(x: f64) -> String {
    if x.is_nan() {
        "/".to_string()
    } else if x < 1e6 {
        format!("{x:.0}")
    } else {
        let e = x.log10().floor() as i32;
        format!("{:.2}e{e}", x / 10f64.powi(e))
    }
}

/// A whole number, `/` for none.
fn num(x: f64) -> String {
    if x.is_nan() {
        "/".to_string()
    } else {
        format!("{x:.0}")
    }
}

/// A ratio: two decimals below 10⁴, else as [`big`].
fn ratio(x: f64) -> String {
    if x >= 1e4 { big(x) } else { format!("{x:.2}") }
}

fn ms(x: f64) -> String {
    if x.is_nan() {
        "/".to_string()
    } else if x < 10.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.1}")
    }
}

// --- The paper's values.

/// One half of a Table 1 row: records/N, V_n/V_e, selected, true positives.
type PaperT1 = (f64, f64, f64, f64);

/// Table 1, per density: (records/N, V_n/V_e, selected, true positives)
/// without and with splitting.
const PAPER_T1: [(f64, [PaperT1; 2]); 5] = [
    (
        0.01,
        [
            (1.0, 8.0275e6, 1_261_197.0, 389.0),
            (6.37, 10.9362, 4928.0, 429.0),
        ],
    ),
    (
        0.05,
        [
            (1.0, 1.5836e6, 1_834_155.0, 1901.0),
            (6.67, 10.8227, 25643.0, 2660.0),
        ],
    ),
    (
        0.1,
        [
            (1.0, 1.3439e6, 2_300_212.0, 3715.0),
            (6.24, 13.4065, 62148.0, 6235.0),
        ],
    ),
    (
        0.5,
        [
            (1.0, 2.9324e6, 4_193_598.0, 16227.0),
            (6.35, 13.4745, 280_736.0, 63454.0),
        ],
    ),
    (
        1.0,
        [
            (1.0, 4.0032e6, 5_552_230.0, 28144.0),
            (6.01, 12.5170, 492_790.0, 72176.0),
        ],
    ),
];

/// Tables 2–3 per N: quadr ms, S&P ms, Delaunay ms, kd-1 ms, kd-2 ms;
/// S&P, Delaunay, kd-1, kd-2 candidates; Delaunay, kd-1, kd-2 memory (MB).
struct PaperRow {
    n: usize,
    ms: [f64; 5],
    cand: [f64; 4],
    mem: [f64; 3],
}

const NAN: f64 = f64::NAN;
const PAPER_T23: [PaperRow; 5] = [
    PaperRow {
        n: 50_000,
        ms: [23818.0, 64662.0, 11350.0, 211.0, 297.0],
        cand: [471_044.0, 365_396.0, 3.30e6, 277_806.0],
        mem: [32.0, 9.0, 18.0],
    },
    PaperRow {
        n: 100_000,
        ms: [94813.0, 266_840.0, 23616.0, 434.0, 620.0],
        cand: [972_680.0, 732_000.0, 5.84e6, 565_180.0],
        mem: [76.0, 17.0, 35.0],
    },
    PaperRow {
        n: 500_000,
        ms: [NAN, NAN, 118_408.0, 2261.0, 3288.0],
        cand: [NAN, 3.67e6, 35.8e6, 3.01e6],
        mem: [312.0, 82.0, 193.0],
    },
    PaperRow {
        n: 1_000_000,
        ms: [NAN, NAN, 240_563.0, 4194.0, 6153.0],
        cand: [NAN, 7.34e6, 78.9e6, 6.01e6],
        mem: [623.0, 144.0, 353.0],
    },
    PaperRow {
        n: 5_000_000,
        ms: [NAN, NAN, NAN, 18885.0, 24205.0],
        cand: [NAN, NAN, 518e6, 30.4e6],
        mem: [NAN, 558.0, 1500.0],
    },
];

// --- Table 1.

/// Table 1's rows (the prose is in the template).
fn table1(md: &mut String) {
    table_header(
        md,
        &[
            "d",
            "mode",
            "bits",
            "records/N",
            "V_n/V_e",
            "selected",
            "true pos.",
            "unique",
            "exact",
            "spheres",
            "paper records/N",
            "paper V_n/V_e",
            "paper selected",
            "paper true pos.",
        ],
    );
    for (d, paper) in PAPER_T1 {
        let (centres, _) = settle::uniform_centres(T1_N, d, T1_SEED);
        let boxes = settle::sphere_boxes(&centres);
        let ve = T1_N as f64 * settle::sphere_volume();
        let mut sphere_pairs = None;
        for (k, (label, cfg)) in [
            ("kd, no split", no_split()),
            ("kd, split", paper_cfg()),
            ("octree, split", paper_cfg().with_octree(true)),
        ]
        .into_iter()
        .enumerate()
        {
            let cap = 8 * T1_N;
            let mut t = LinearKdTree::<Aabb3, u64, _>::new(
                vec![KdRecord::EMPTY; cap],
                vec![KdRecord::EMPTY; cap],
                cfg,
            );
            t.build(&boxes).expect("build");
            let st = t.stats();
            let vn: f64 = t
                .records()
                .iter()
                .map(|r| {
                    let (c, _) = t.cell(r.key).expect("cell of a record");
                    (0..3)
                        .map(|a| c.max().coord_f64(a) - c.min().coord_f64(a))
                        .product::<f64>()
                })
                .sum();
            let (mut raw, mut tp) = (0u64, 0u64);
            t.for_each_candidate_pair(&boxes, Candidates::Raw, |a, b| {
                raw += 1;
                tp += settle::spheres_overlap(centres[a as usize], centres[b as usize]) as u64;
            })
            .expect("raw");
            assert_eq!(raw, t.count_raw(), "count_raw disagrees with the raw sweep");
            let mut unique = 0u64;
            t.for_each_candidate_pair(&boxes, Candidates::Unique, |_, _| unique += 1)
                .expect("unique");
            let (mut exact, mut spheres) = (0u64, 0u64);
            t.for_each_candidate_pair(&boxes, Candidates::Exact, |a, b| {
                exact += 1;
                spheres += settle::spheres_overlap(centres[a as usize], centres[b as usize]) as u64;
            })
            .expect("exact");
            assert_eq!(
                *sphere_pairs.get_or_insert(spheres),
                spheres,
                "sphere pairs differ between modes"
            );
            let p = if k < 2 {
                let (rn, v, s, tpp) = paper[k];
                [format!("{rn:.2}"), ratio(v), big(s), big(tpp)]
            } else {
                ["/".to_string(), "/".into(), "/".into(), "/".into()]
            };
            let _ = writeln!(
                md,
                "| {d} | {label} | {} | {:.2} | {} | {} | {} | {unique} | {exact} | {spheres} | {} | {} | {} | {} |",
                st.bits_per_axis,
                st.records as f64 / T1_N as f64,
                ratio(vn / ve),
                big(raw as f64),
                big(tp as f64),
                p[0],
                p[1],
                p[2],
                p[3]
            );
            eprintln!(
                "table 1 d={d} {label}: records {} vn/ve {:.2} raw {raw} tp {tp} unique {unique} exact {exact}",
                st.records,
                vn / ve
            );
        }
    }
}

/// f64 coordinate of a point.
trait CoordF64 {
    fn coord_f64(&self, a: usize) -> f64;
}

impl<P: spatium::Point> CoordF64 for P {
    fn coord_f64(&self, a: usize) -> f64 {
        self.coord(a) as f64
    }
}

// --- Main.

/// Runs the experiment and writes the report; `args` are the options
/// after the program (and subcommand) name.
pub fn main(args: &[String]) -> ExitCode {
    let opts = match super::check_args(args, &["--quick"], &["--out", "--max-n"]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut prov = Provenance::start();
    let quick = opts.flag("--quick");
    let out = opts.out_dir();
    let max_n = match opts.number("--max-n") {
        Ok(m) => m.unwrap_or(usize::MAX),
        Err(_) => {
            eprintln!("--max-n needs a number");
            return ExitCode::FAILURE;
        }
    };
    let mut notes = Vec::new();
    let mut ns: Vec<usize> = vec![10_000, 50_000, 100_000];
    if !quick {
        ns.extend([500_000, 1_000_000]);
        // 5·10⁶: about 5 GB at the peak (14 snapshots, the scene's tree,
        // one structure at a time).
        match mem_available_gib() {
            Some(g) if g >= 10.0 => ns.push(5_000_000),
            g => notes.push(format!(
                "N = 5·10⁶ not run: {} GiB of memory available, 10 needed.",
                g.map_or("unknown".to_string(), |g| format!("{g:.1}"))
            )),
        }
    }

    ns.retain(|&n| n <= max_n);
    let mut table_1 = String::new();
    table1(&mut table_1);

    // --- Tables 2–3.
    let mut scenes = Vec::new();
    let mut all: Vec<(usize, Vec<Res>)> = Vec::new();
    let mut pred = Predict::default();
    for &n in &ns {
        let steady = if n >= 5_000_000 { BIG } else { STEADY };
        let (snaps, info) = snapshots(n, steady);
        scenes.push(info);
        let mut res = Vec::new();
        for e in drivers(n, &pred, &mut notes) {
            res.push(run(e, &snaps, steady));
        }
        drop(snaps);
        if let Err(e) = cross_check(n, &res) {
            eprintln!("cross-check failed: {e}");
            return ExitCode::FAILURE;
        }
        for r in &res {
            match r.name.as_str() {
                "brute" => pred.brute = Some((n, r.step_ms())),
                "SAP" => pred.sap = Some((n, r.step_ms())),
                _ => {}
            }
        }
        all.push((n, res));
    }

    prov.finish();
    let build = FIRST_STEP - 1 - STEADY.skip;
    let mut values: Vec<(&str, String)> = vec![
        ("provenance", prov.markdown()),
        ("t1_n", T1_N.to_string()),
        ("table_1", table_1),
        ("build", build.to_string()),
        ("first_after_build", (build + 1).to_string()),
        ("last_step", (FIRST_STEP + STEADY.take - 1).to_string()),
        ("protocol", STEADY.describe()),
        ("first_step", FIRST_STEP.to_string()),
        ("big_last_step", (FIRST_STEP + BIG.take - 1).to_string()),
        ("skip", STEADY.skip.to_string()),
        ("budget_s", BUDGET_S.to_string()),
        ("room", ROOM.to_string()),
        ("parry_version", locked_version("parry3d")),
        ("record_bytes", size_of::<KdRecord<u64>>().to_string()),
        ("box_bytes", size_of::<Aabb3>().to_string()),
    ];
    values.extend(tables(&scenes, &all, &notes));
    let md = match fill_values(TEMPLATE, &values) {
        Ok(md) => md,
        Err(e) => {
            eprintln!("templates/kd_report.md: {e}");
            return ExitCode::FAILURE;
        }
    };
    let md_path = out.join("KD_REPORT.md");
    if let Err(e) = std::fs::write(&md_path, &md) {
        eprintln!("writing {}: {e}", md_path.display());
        return ExitCode::FAILURE;
    }
    let series = Series::group(all.iter().flat_map(|(n, res)| {
        res.iter()
            .filter(|r| r.group == Group::Main)
            .map(move |r| (r.name.clone(), *n as f64, r.step_ms()))
    }));
    let panel = Panel::log_log(
        format!(
            "Settling spheres (Poirrier §6): CPU ms per step, {} (steps 50–70), log-log",
            STEADY.describe()
        ),
        "N (spheres)",
        "ms per step",
        series,
    );
    if let Err(e) = plot::svg(&out.join("kd_report.svg"), (1100, 700), None, 1, &[panel]) {
        eprintln!("plot: {e}");
        return ExitCode::FAILURE;
    }
    eprintln!(
        "wrote {} in {:.1} min",
        md_path.display(),
        prov.elapsed.unwrap_or_default().as_secs_f64() / 60.0
    );
    ExitCode::SUCCESS
}

fn find<'a>(res: &'a [Res], name: &str) -> Option<&'a Res> {
    res.iter().find(|r| r.name == name)
}

fn step_of(res: &[Res], name: &str) -> f64 {
    find(res, name).map_or(f64::NAN, Res::step_ms)
}

fn pairs_of(res: &[Res], name: &str) -> f64 {
    find(res, name).map_or(f64::NAN, |r| r.first_pairs() as f64)
}

/// kd buffer bytes per element (without boxes).
fn kd_bytes_per(r: &Res, n: usize) -> f64 {
    r.memory.map_or(f64::NAN, |m| m as f64 / n as f64)
}

/// The template values of the settling-scene sections: every table, the
/// skipped sizes and the targets.
fn tables(
    scenes: &[SceneInfo],
    all: &[(usize, Vec<Res>)],
    notes: &[String],
) -> Vec<(&'static str, String)> {
    let boxb = size_of::<Aabb3>();
    let mut v: Vec<(&'static str, String)> = Vec::new();
    let md = &mut String::new();
    table_header(
        md,
        &[
            "N",
            "L",
            "sim ms/step (kd build + raw sweep, sphere test, dedup, resolution)",
            "sphere contacts handled at the last step",
            "exact box pairs at step 50",
            "steps timed",
        ],
    );
    for (s, (_, res)) in scenes.iter().zip(all) {
        let _ = writeln!(
            md,
            "| {} | {:.1} | {:.1} | {} | {} | {} |",
            s.n,
            s.side,
            s.sim_ms,
            s.contacts,
            pairs_of(res, "kd exact"),
            s.steps_timed
        );
    }
    v.push(("table_scenes", core::mem::take(md)));
    if !notes.is_empty() {
        let _ = writeln!(md, "\nSkipped:\n");
        for n in notes {
            let _ = writeln!(md, "- {n}");
        }
    }
    v.push(("skipped", core::mem::take(md)));

    // Paper-format Table 2.
    table_header(
        md,
        &[
            "N",
            "quadr. ms",
            "S&P ms",
            "parry refit ms",
            "parry rebuild ms",
            "hhg ms",
            "kd-tree-1 ms",
            "kd exact ms",
            "paper quadr. ms",
            "paper S&P ms",
            "paper Delaunay ms",
            "paper kd-tree-1 ms",
        ],
    );
    for (n, res) in all {
        let p = PAPER_T23.iter().find(|p| p.n == *n);
        let pm = |k: usize| p.map_or("—".to_string(), |p| num(p.ms[k]));
        let _ = writeln!(
            md,
            "| {n} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            ms(step_of(res, "brute")),
            ms(step_of(res, "SAP")),
            ms(step_of(res, "parry refit")),
            ms(step_of(res, "parry rebuild")),
            ms(step_of(res, "hhg")),
            ms(step_of(res, "kd-tree-1 (raw)")),
            ms(step_of(res, "kd exact")),
            pm(0),
            pm(1),
            pm(2),
            pm(3)
        );
    }
    v.push(("table_2_times", core::mem::take(md)));
    table_header(
        md,
        &[
            "N",
            "quadr. N(N−1)/2",
            "exact pairs (S&P, parry, hhg, kd exact)",
            "kd-tree-1 raw",
            "paper S&P",
            "paper Delaunay",
            "paper kd-tree-1",
        ],
    );
    for (n, res) in all {
        let p = PAPER_T23.iter().find(|p| p.n == *n);
        let pc = |k: usize| p.map_or("—".to_string(), |p| big(p.cand[k]));
        let nn = *n as f64;
        let _ = writeln!(
            md,
            "| {n} | {} | {} | {} | {} | {} | {} |",
            big(nn * (nn - 1.0) / 2.0),
            big(pairs_of(res, "kd exact")),
            big(pairs_of(res, "kd-tree-1 (raw)")),
            pc(0),
            pc(1),
            pc(2)
        );
    }

    v.push(("table_2_pairs", core::mem::take(md)));

    // Paper-format Table 3.
    table_header(
        md,
        &[
            "N",
            "kd-1 ms",
            "kd-2 ms",
            "kd-1 cand.",
            "kd-2 cand.",
            "kd MB (buffers + boxes)",
            "paper kd-1 ms",
            "paper kd-2 ms",
            "paper kd-1 cand.",
            "paper kd-2 cand.",
            "paper Delaunay MB",
            "paper kd-1 MB",
            "paper kd-2 MB",
        ],
    );
    for (n, res) in all {
        let p = PAPER_T23.iter().find(|p| p.n == *n);
        let pv = |f: &dyn Fn(&PaperRow) -> String| p.map_or("—".to_string(), f);
        let mem = find(res, "kd-tree-1 (raw)")
            .and_then(|r| r.memory)
            .map_or(f64::NAN, |m| (m + n * boxb) as f64 / 1e6);
        let _ = writeln!(
            md,
            "| {n} | {} | {} | {} | {} | {:.0} | {} | {} | {} | {} | {} | {} | {} |",
            ms(step_of(res, "kd-tree-1 (raw)")),
            ms(step_of(res, "kd-tree-2 (unique)")),
            big(pairs_of(res, "kd-tree-1 (raw)")),
            big(pairs_of(res, "kd-tree-2 (unique)")),
            mem,
            pv(&|p| num(p.ms[3])),
            pv(&|p| num(p.ms[4])),
            pv(&|p| big(p.cand[2])),
            pv(&|p| big(p.cand[3])),
            pv(&|p| num(p.mem[0])),
            pv(&|p| num(p.mem[1])),
            pv(&|p| num(p.mem[2])),
        );
    }

    v.push(("table_3", core::mem::take(md)));

    // Every structure.
    table_header(
        md,
        &[
            "N",
            "structure",
            "steps",
            "setup ms",
            "ms/step",
            "steps 0–4 ms/step",
            "ns/elem/step",
            "pairs",
            "B/elem",
            "vs kd exact",
        ],
    );
    for (n, res) in all {
        let base = step_of(res, "kd exact");
        for r in res.iter().filter(|r| r.group == Group::Main) {
            let _ = writeln!(
                md,
                "| {n} | {} | {} | {:.1} | {} | {} | {:.0} | {} | {} | {:.2}× |",
                r.name,
                r.times.len(),
                r.setup_ms,
                ms(r.step_ms()),
                ms(r.early_ms),
                r.step_ms() * 1e6 / *n as f64,
                big(r.first_pairs() as f64),
                r.memory
                    .map_or("?".to_string(), |m| format!("{:.1}", m as f64 / *n as f64)),
                r.step_ms() / base
            );
        }
    }

    v.push(("table_structures", core::mem::take(md)));

    // kd detail.
    table_header(
        md,
        &[
            "N",
            "variant",
            "code",
            "bits",
            "records/N",
            "cap/N",
            "validate",
            "codes",
            "sort",
            "sweep",
            "total ms",
            "B/elem",
            "B/elem + box",
            "unsplit",
            "reused",
        ],
    );
    for (n, res) in all {
        for r in res.iter().filter(|r| r.kd.is_some()) {
            let k = r.kd.expect("kd");
            let per = kd_bytes_per(r, *n);
            let _ = writeln!(
                md,
                "| {n} | {} | {} | {} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {} | {}/{} |",
                r.name,
                k.code,
                k.bits,
                k.records_last as f64 / *n as f64,
                k.cap as f64 / *n as f64,
                ms(r.phase(|p| p.validate)),
                ms(r.phase(|p| p.codes)),
                ms(r.phase(|p| p.sort)),
                ms(r.phase(|p| p.sweep)),
                ms(r.step_ms()),
                per,
                per + boxb as f64,
                k.unsplit_max,
                k.reused_steps,
                k.steps
            );
        }
    }

    v.push(("table_kd", core::mem::take(md)));

    // Targets.
    let head = all
        .iter()
        .rev()
        .find(|(n, _)| *n <= 1_000_000)
        .expect("some N");
    let (hn, hres) = (head.0, &head.1);
    v.push(("n_targets", hn.to_string()));
    v.push((
        "quick_note",
        if hn == 1_000_000 {
            String::new()
        } else {
            "(Quick run: the targets are stated for 10⁶; these are the figures at the largest N \
             run.)\n\n"
                .to_owned()
        },
    ));
    let kd = find(hres, "kd exact");
    let raw = find(hres, "kd-tree-1 (raw)");
    let refit = step_of(hres, "parry refit");
    let rebuild = step_of(hres, "parry rebuild");
    for (label, r) in [("kd exact (u64)", kd), ("kd-tree-1 raw (u64)", raw)] {
        let Some(r) = r else { continue };
        let t = r.step_ms();
        let build = r.phase(|p| p.codes) + r.phase(|p| p.sort) + r.phase(|p| p.sweep);
        let _ = writeln!(
            md,
            "- {label}: {} ms per step (codes + splitting + sort + sweep {} ms, validate/frame {} \
             ms) — target ≤ 150 ms: **{}**. parry refit {} ms = {:.1}× kd, parry rebuild {} ms = \
             {:.1}× kd — target ≥ 10×: **{}**.",
            ms(t),
            ms(build),
            ms(r.phase(|p| p.validate)),
            if t <= 150.0 { "met" } else { "not met" },
            ms(refit),
            refit / t,
            ms(rebuild),
            rebuild / t,
            if refit.min(rebuild) / t >= 10.0 {
                "met"
            } else {
                "not met"
            }
        );
    }
    // Issue 17: one core, the same run.
    if let Some(r) = kd {
        let t = r.step_ms();
        let per = kd_bytes_per(r, hn);
        let _ = writeln!(
            md,
            "- Issue 17, kd exact (default split, u64): {} ms per step — target ≤ 200 ms and \
             below parry refit ({} ms): **{}**; {per:.1} B per element — target ≤ 40 B: **{}**.",
            ms(t),
            ms(refit),
            if t <= 200.0 && t < refit {
                "met"
            } else {
                "not met"
            },
            if per <= 40.0 { "met" } else { "not met" }
        );
    }
    v.push(("targets", core::mem::take(md)));
    table_header(
        md,
        &[
            "variant",
            "code",
            "records/N",
            "ms/step",
            "B/elem",
            "B/elem + box",
            "≤ 40 B",
        ],
    );
    for r in hres
        .iter()
        .filter(|r| r.kd.is_some() && r.check != Check::Raw)
    {
        let k = r.kd.expect("kd");
        let per = kd_bytes_per(r, hn);
        let _ = writeln!(
            md,
            "| {} | {} | {:.2} | {} | {per:.1} | {:.1} | {} |",
            r.name,
            k.code,
            k.records_last as f64 / hn as f64,
            ms(r.step_ms()),
            per + boxb as f64,
            if per <= 40.0 { "met" } else { "not met" }
        );
    }
    v.push(("table_memory", core::mem::take(md)));
    for (n, res) in all {
        for r in res.iter().filter(|r| r.name.contains("reuse")) {
            let k = r.kd.expect("kd");
            let _ = writeln!(
                md,
                "- N = {n}, {}: {} of {} ({} insertion moves in all).",
                r.name, k.reused_steps, k.steps, k.moves
            );
        }
    }
    v.push(("reuse", core::mem::take(md)));
    v
}
