//! Where the periodic adapter's time goes: moving cubes (10⁴ and 10⁵) in
//! their own domain, periodic along every axis, on the hierarchical hash
//! grid and the kd-tree. Each configuration is timed in turns with the
//! others (same run, medians of 7 rounds), phase by phase: insert every box,
//! all pairs, `update_many` of every box, all pairs. Configurations:
//!
//! * `plain`: the structure with ids below N;
//! * `plain-8N`: the same structure with ids below 8N (the inner id space
//!   of the adapter's former layout, `i + k·N`), no adapter;
//!
//! (the grids get the same arena in every configuration: an arena sized for
//! more boxes gives the grid larger cell tables, which is not the adapter's
//! cost);
//! * `adapter-none`: the adapter with no periodic axis (no images);
//! * `periodic`: the adapter, periodic along every axis (inner ids below
//!   1.5N: the N ids and an image pool of N/2);
//! * `images`: no adapter, the plain structure given the images themselves
//!   under compact ids (`0..` in order of `(id, k)`; the floor for any id
//!   layout: the inner structure's own work on the images);
//! * `images+wrap`: as `images`, but the images computed from the
//!   caller's boxes inside the timed phases (`wrap_box`, `shift_box`), as
//!   any periodic broad phase must: the floor with the wrap's own cost;
//! * `images-8N`: the same with the former layout's ids `i + k·N` (ids
//!   below 8N).
//!
//! The grid broad phase (`uniform::GridBroadPhase`) has `plain`, `native`
//! (its own periodic mode, `set_domain`: cells that wrap, no images),
//! `periodic` (the adapter over it) and `images+wrap`.
//!
//! `cargo run --release -p spatium-benches --bin periodic_probe`
//! (`PROBE_ROUNDS=R` rounds instead of 7; for a profiler,
//! `PROBE_ONLY=hhg:periodic` one configuration and `PROBE_N=10000` one size)

use std::time::Instant;

use spatium::kdtree::{KdBroadPhase, KdConfig, KdRecord, KdSlot};
use spatium::{
    Aabb3, BroadPhase, HhgConfig, PeriodicBox, PeriodicBroadPhase, PeriodicImage, PeriodicSlot,
    Vec3,
};
use spatium_host::make;
use spatium_host::scenarios::moving_cubes;

type VecKd = KdBroadPhase<Aabb3, u64, Vec<KdSlot<Aabb3>>, Vec<KdRecord<u64>>>;

fn hhg(ids: usize, boxes: usize) -> make::VecHhg<Aabb3> {
    let cfg = HhgConfig::DEFAULT;
    make::hhg::<Aabb3>(ids, 2 * cfg.arena_words_for::<Aabb3>(boxes), cfg)
}

fn kd(ids: usize, boxes: usize) -> VecKd {
    let r = 8 * boxes + 64;
    KdBroadPhase::new(
        vec![KdSlot::EMPTY; ids],
        vec![KdRecord::EMPTY; r],
        vec![KdRecord::EMPTY; r],
        KdConfig::DEFAULT,
    )
}

/// Seconds of insert, pairs, update, pairs.
fn phases(t: &mut dyn Run, a: &[(u32, Aabb3)], b: &[(u32, Aabb3)]) -> [f64; 4] {
    let mut out = [0.0; 4];
    t.clear();
    let s = Instant::now();
    t.insert_all(a);
    out[0] = s.elapsed().as_secs_f64();
    let s = Instant::now();
    core::hint::black_box(t.pairs());
    out[1] = s.elapsed().as_secs_f64();
    let s = Instant::now();
    t.update_all(b);
    out[2] = s.elapsed().as_secs_f64();
    let s = Instant::now();
    core::hint::black_box(t.pairs());
    out[3] = s.elapsed().as_secs_f64();
    out
}

trait Run {
    fn clear(&mut self);
    fn insert_all(&mut self, a: &[(u32, Aabb3)]);
    fn update_all(&mut self, a: &[(u32, Aabb3)]);
    fn pairs(&mut self) -> u64;
}

impl<T: BroadPhase<Aabb3>> Run for T {
    fn clear(&mut self) {
        BroadPhase::clear(self);
    }
    fn insert_all(&mut self, a: &[(u32, Aabb3)]) {
        for &(i, b) in a {
            self.insert(i, b).unwrap();
        }
    }
    fn update_all(&mut self, a: &[(u32, Aabb3)]) {
        self.update_many(a).unwrap();
    }
    fn pairs(&mut self) -> u64 {
        let mut n = 0;
        self.for_each_overlap(|a, b| n += u64::from(a ^ b)).unwrap();
        n
    }
}

/// A plain structure fed the periodic images directly: insert `ins`; step
/// = `update_many(upd)`, insert `add`, remove `rem`.
struct Imaged<T> {
    t: T,
    ins: Vec<(u32, Aabb3)>,
    upd: Vec<(u32, Aabb3)>,
    add: Vec<(u32, Aabb3)>,
    rem: Vec<u32>,
    /// `Some` for `images+wrap`: the images are computed from the caller's
    /// boxes inside the timed phases (into the same buffers, reused).
    wrap: Option<Wrap>,
}

/// What `images+wrap` keeps between phases: the domain, each box's image
/// ids by mask (`u32::MAX` where it has none) and its mask at the insert.
struct Wrap {
    d: PeriodicBox<Vec3>,
    ids: Vec<[u32; 8]>,
    before: Vec<u8>,
}

impl<T: BroadPhase<Aabb3>> Run for Imaged<T> {
    fn clear(&mut self) {
        self.t.clear();
    }
    fn insert_all(&mut self, a: &[(u32, Aabb3)]) {
        if let Some(w) = &self.wrap {
            for (&(_, x), ids) in a.iter().zip(&w.ids) {
                let (b0, c) = w.d.wrap_box(&x).unwrap();
                for k in (0..8u8).filter(|k| k & !c == 0) {
                    self.t
                        .insert(ids[usize::from(k)], w.d.shift_box(&b0, k))
                        .unwrap();
                }
            }
            return;
        }
        for &(i, b) in &self.ins {
            self.t.insert(i, b).unwrap();
        }
    }
    fn update_all(&mut self, b: &[(u32, Aabb3)]) {
        if let Some(w) = &self.wrap {
            self.upd.clear();
            self.add.clear();
            self.rem.clear();
            for ((&(_, x), ids), &ca) in b.iter().zip(&w.ids).zip(&w.before) {
                let (b0, c) = w.d.wrap_box(&x).unwrap();
                for k in (0..8u8).filter(|k| k & !c == 0) {
                    let e = (ids[usize::from(k)], w.d.shift_box(&b0, k));
                    if k & !ca == 0 {
                        self.upd.push(e);
                    } else {
                        self.add.push(e);
                    }
                }
                for k in (0..8u8).filter(|k| k & !ca == 0 && k & !c != 0) {
                    self.rem.push(ids[usize::from(k)]);
                }
            }
        }
        self.t.update_many(&self.upd).unwrap();
        for &(i, b) in &self.add {
            self.t.insert(i, b).unwrap();
        }
        for &i in &self.rem {
            self.t.remove(i).unwrap();
        }
    }
    fn pairs(&mut self) -> u64 {
        let mut n = 0;
        self.t
            .for_each_overlap(|a, b| n += u64::from(a ^ b))
            .unwrap();
        n
    }
}

/// The images of `a` and `b` as `(id, k, box)`, and the id maps: compact
/// (in order of `(id, k)` over both sets) or `i + k·n`; with `wrap`, the
/// per-box id table for computing the images in the timed phases instead.
fn imaged<T: BroadPhase<Aabb3>>(
    t: T,
    d: &PeriodicBox<Vec3>,
    a: &[(u32, Aabb3)],
    b: &[(u32, Aabb3)],
    compact: bool,
    wrap: bool,
) -> Imaged<T> {
    let n = a.len() as u32;
    let images = |s: &[(u32, Aabb3)]| -> Vec<Vec<(u8, Aabb3)>> {
        s.iter()
            .map(|&(_, x)| {
                let (b0, c) = d.wrap_box(&x).unwrap();
                (0..8u8)
                    .filter(|k| k & !c == 0)
                    .map(|k| (k, d.shift_box(&b0, k)))
                    .collect()
            })
            .collect()
    };
    let (ia, ib) = (images(a), images(b));
    let mut map = std::collections::HashMap::new();
    for i in 0..n as usize {
        let mut ks: Vec<u8> = ia[i].iter().chain(&ib[i]).map(|x| x.0).collect();
        ks.sort();
        ks.dedup();
        for k in ks {
            let id = if compact {
                map.len() as u32
            } else {
                i as u32 + u32::from(k) * n
            };
            map.insert((i, k), id);
        }
    }
    let mut r = Imaged {
        t,
        ins: vec![],
        upd: vec![],
        add: vec![],
        rem: vec![],
        wrap: wrap.then(|| Wrap {
            d: *d,
            ids: (0..n as usize)
                .map(|i| {
                    core::array::from_fn(|k| map.get(&(i, k as u8)).copied().unwrap_or(u32::MAX))
                })
                .collect(),
            before: a.iter().map(|(_, x)| d.wrap_box(x).unwrap().1).collect(),
        }),
    };
    for i in 0..n as usize {
        for &(k, x) in &ia[i] {
            r.ins.push((map[&(i, k)], x));
        }
        for &(k, x) in &ib[i] {
            if ia[i].iter().any(|y| y.0 == k) {
                r.upd.push((map[&(i, k)], x));
            } else {
                r.add.push((map[&(i, k)], x));
            }
        }
        for &(k, _) in &ia[i] {
            if !ib[i].iter().any(|y| y.0 == k) {
                r.rem.push(map[&(i, k)]);
            }
        }
    }
    r
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // `PROBE_N=10000` (for a profiler): that size only.
    let only_n: Option<usize> = std::env::var("PROBE_N").ok().and_then(|v| v.parse().ok());
    for n in [10_000usize, 100_000] {
        if only_n.is_some_and(|m| m != n) {
            continue;
        }
        let mut sc = moving_cubes::<Aabb3>(n, 5);
        let all = PeriodicBox::all(Vec3::ZERO, sc.extent).unwrap();
        let a: Vec<(u32, Aabb3)> = sc
            .boxes
            .iter()
            .enumerate()
            .map(|(i, b)| (i as u32, *b))
            .collect();
        sc.step();
        let b: Vec<(u32, Aabb3)> = sc
            .boxes
            .iter()
            .enumerate()
            .map(|(i, b)| (i as u32, *b))
            .collect();
        let im = n + n / 2;
        let slots = || vec![PeriodicSlot::EMPTY; n];
        let pool = || vec![PeriodicImage::EMPTY; im - n];
        for name in ["grid", "hhg", "kdtree"] {
            let mut runs: Vec<(&str, Box<dyn Run>)> = if name == "grid" {
                let mut native = make::grid_bp::<Aabb3>(n);
                native.set_domain(all).unwrap();
                vec![
                    ("plain", Box::new(make::grid_bp::<Aabb3>(n))),
                    ("native", Box::new(native)),
                    (
                        "periodic",
                        Box::new(
                            PeriodicBroadPhase::new(make::grid_bp(im), all, slots(), pool())
                                .unwrap(),
                        ),
                    ),
                    (
                        "images+wrap",
                        Box::new(imaged(make::grid_bp(im), &all, &a, &b, true, true)),
                    ),
                ]
            } else if name == "hhg" {
                vec![
                    ("plain", Box::new(hhg(n, n))),
                    ("plain-8N", Box::new(hhg(8 * n, n))),
                    (
                        "adapter-none",
                        Box::new(
                            PeriodicBroadPhase::new(hhg(im, n), PeriodicBox::NONE, slots(), pool())
                                .unwrap(),
                        ),
                    ),
                    (
                        "periodic",
                        Box::new(
                            PeriodicBroadPhase::new(hhg(im, n), all, slots(), pool()).unwrap(),
                        ),
                    ),
                    (
                        "images",
                        Box::new(imaged(hhg(im, n), &all, &a, &b, true, false)),
                    ),
                    (
                        "images+wrap",
                        Box::new(imaged(hhg(im, n), &all, &a, &b, true, true)),
                    ),
                    (
                        "images-8N",
                        Box::new(imaged(hhg(8 * n, n), &all, &a, &b, false, false)),
                    ),
                ]
            } else {
                vec![
                    ("plain", Box::new(kd(n, n))),
                    ("plain-8N", Box::new(kd(8 * n, n))),
                    (
                        "adapter-none",
                        Box::new(
                            PeriodicBroadPhase::new(kd(im, im), PeriodicBox::NONE, slots(), pool())
                                .unwrap(),
                        ),
                    ),
                    (
                        "periodic",
                        Box::new(
                            PeriodicBroadPhase::new(kd(im, im), all, slots(), pool()).unwrap(),
                        ),
                    ),
                    (
                        "images",
                        Box::new(imaged(kd(im, im), &all, &a, &b, true, false)),
                    ),
                    (
                        "images+wrap",
                        Box::new(imaged(kd(im, im), &all, &a, &b, true, true)),
                    ),
                    (
                        "images-8N",
                        Box::new(imaged(kd(8 * n, im), &all, &a, &b, false, false)),
                    ),
                ]
            };
            // `PROBE_ONLY=kdtree:periodic` (for a profiler): that run only.
            if let Ok(only) = std::env::var("PROBE_ONLY") {
                runs.retain(|(l, _)| only == format!("{name}:{l}"));
                if runs.is_empty() {
                    continue;
                }
            }
            let mut times: Vec<[Vec<f64>; 4]> = runs.iter().map(|_| Default::default()).collect();
            for _ in 0..std::env::var("PROBE_ROUNDS")
                .ok()
                .and_then(|r| r.parse().ok())
                .unwrap_or(7)
            {
                for (k, (_, t)) in runs.iter_mut().enumerate() {
                    let p = phases(t.as_mut(), &a, &b);
                    for q in 0..4 {
                        times[k][q].push(p[q]);
                    }
                }
            }
            let base: Vec<f64> = times[0].iter().map(|v| median(v.clone())).collect();
            println!("{name} n={n}: medians in ms (ratio to plain)");
            for (k, (label, _)) in runs.iter().enumerate() {
                let m: Vec<f64> = times[k].iter().map(|v| median(v.clone())).collect();
                let build = m[0] + m[1];
                let step = m[2] + m[3];
                println!(
                    "  {label:13} insert {:7.2} pairs {:7.2} update {:7.2} pairs {:7.2} | build+pairs {:7.2} ({:.2}x) update+pairs {:7.2} ({:.2}x)",
                    m[0] * 1e3,
                    m[1] * 1e3,
                    m[2] * 1e3,
                    m[3] * 1e3,
                    build * 1e3,
                    build / (base[0] + base[1]),
                    step * 1e3,
                    step / (base[2] + base[3]),
                );
            }
        }
    }
}
