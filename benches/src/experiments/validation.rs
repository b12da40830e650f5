//! The SPH validation report: the boundary-particle walls
//! ([`spatium::sph::walls`]) against a hydrostatic column (2D and 3D) and
//! against Martin & Moyce's (1952) dam break (2D, and a thin 3D slab).
//! Writes `VALIDATION_REPORT.md`, `validation_hydrostatic.svg` and
//! `validation_dam_break.svg`.
//!
//! ```text
//! cargo run --release -p spatium-benches --bin report -- validation [--quick | --full] [--out DIR]
//! ```
//!
//! `--quick`: the smallest resolution of each case only (a CI smoke run,
//! about a minute). Without it the run is long (tens of minutes on one
//! core), which is why `validation` is not in [`super::ALL`]; the two most
//! expensive cases (3D column at H/40, dam break at a/160) run only when
//! their cost, extrapolated from the next coarser run, fits
//! [`OPTIONAL_BUDGET_S`], and the report says so when they do not;
//! `--full` runs them whatever their estimate (about half an hour more).
//!
//! Every verdict in the report is computed from the measured figures against
//! the targets written in the template (`benches/templates/
//! validation_report.md`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use crate::TABLE_FACTOR;
use crate::plot::{Panel, Scale, Series, svg};
use crate::provenance::Provenance;
use crate::template::{fill_values, table};
use spatium::sph::kernel::Kernels;
use spatium::sph::source::{Lattice, Packing};
use spatium::sph::walls::{BoundaryParticles, BoundaryState, Face, Slip, TankFaces, box_count};
use spatium::sph::{Fluid, ParticleState, SphParams};
use spatium::table::table_len;
use spatium::{BoundingBox, Error, NeighborSearch, Point, Vec2, Vec3};
use spatium_host::make::{self, VecCellSorted};

/// The prose of the report.
const TEMPLATE: &str = include_str!("../../templates/validation_report.md");

/// Gravity, m/s² (the preset's).
const G: f32 = 9.81;
/// Layers of boundary particles on each closed face.
const LAYERS: u32 = 3;
/// How long the columns settle, s.
const SETTLE_S: f32 = 1.5;
/// The columns' height H, m.
const COLUMN_H: f32 = 0.2;
/// Width of the 2D column, m.
const COLUMN_W_2D: f32 = 0.2;
/// Width and depth of the 3D column, m.
const COLUMN_W_3D: f32 = 0.1;
/// The dam break's column width a, m.
const DAM_A: f32 = 0.1;
/// Depth of the 3D slab, in spacings.
const SLAB_DEPTH: usize = 4;
/// Largest extrapolated run time of an optional case, s.
pub const OPTIONAL_BUDGET_S: f64 = 480.0;

/// Martin and Moyce (1952), the collapse of a water column of width `a`
/// and height `2a` (`n² = 2`, `a` = 2.25 in): the surge front `Z = x/a` at
/// `T = t·√(2g/a)`, digitised from their figure 3.
const MARTIN_MOYCE: [(f32, f32); 5] = [
    (0.832, 1.217),
    (1.219, 1.474),
    (1.997, 2.292),
    (2.547, 2.995),
    (3.345, 4.134),
];

type VecFluid<P> = Fluid<P, Vec<P>, Vec<ParticleState<P>>>;
type VecWalls<P> = BoundaryParticles<P, Vec<P>, Vec<BoundaryState<P>>, VecCellSorted<P>>;

/// The water preset over `domain` at `spacing`, its speed of sound from
/// the fluid's `height` (the column). The domains, spacings and heights are
/// this module's constants, so the preset cannot refuse them.
fn water<P: Point>(domain: P::Aabb, spacing: f32, height: f32) -> SphParams<P> {
    SphParams::water(domain, spacing, height)
        .expect("the experiment's tanks, spacings and heights are valid")
}

/// The speed of sound of the preset's Tait stiffness `k = ρ₀c²/7`.
fn sound_speed<P: Point>(p: &SphParams<P>) -> f32 {
    (7.0 * p.stiffness / p.rest_density).sqrt()
}

fn search<P: Point>(cap: usize) -> VecCellSorted<P> {
    make::cell_sorted(cap, table_len(cap, TABLE_FACTOR))
}

fn boxed<P: Point>(lo: [f32; 3], hi: [f32; 3]) -> Result<P::Aabb, Error> {
    P::Aabb::try_new(P::from_fn(|k| lo[k]), P::from_fn(|k| hi[k]))
}

fn walls<P: Point>(tank: P::Aabb, s: f32, faces: TankFaces) -> Result<VecWalls<P>, Error> {
    let n = box_count::<P>(tank, s, LAYERS, faces)?;
    let mut w = BoundaryParticles::new(
        vec![P::ZERO; n],
        vec![BoundaryState::EMPTY; n],
        search::<P>(n),
    );
    w.sample_box(tank, s, LAYERS, faces)?;
    Ok(w)
}

/// A fluid filled on the lattice of spacing `s` over `block`, with room for
/// exactly the block.
fn filled<P: Point>(params: SphParams<P>, block: P::Aabb, s: f32) -> Result<VecFluid<P>, Error> {
    let cap: usize = (0..P::DIM)
        .map(|k| ((block.max().coord(k) - block.min().coord(k)) / s).round() as usize + 1)
        .product();
    let mut f = Fluid::new(vec![P::ZERO; cap], vec![ParticleState::EMPTY; cap], params);
    f.fill_block(block, s, P::ZERO)?;
    Ok(f)
}

/// `+1.2 %`.
fn pct(x: f64) -> String {
    format!("{:+.1} %", 100.0 * x)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "**not met**" }
}

// ------------------------------------------------------------ hydrostatic

/// One settled column.
#[derive(Clone, Debug)]
struct Settled {
    /// Fluid particles.
    n: usize,
    /// Boundary particles (0 with the clamp walls).
    walls: usize,
    steps: usize,
    /// Speed of sound of the run's parameters, m/s.
    c: f32,
    /// Surface drop, in spacings.
    drop: f32,
    /// Relative error of the floor layer's pressure.
    floor: f32,
    /// `dp/dy` of the least-squares line over `−ρ₀g`.
    gradient: f32,
    /// Largest `|p̄ − ρ₀g(H_s − y)|` of the layers below the top three, over
    /// `ρ₀gH_s`.
    worst: f32,
    /// As `floor` and `worst` for the stress: the pressure plus the
    /// cohesion's virial ([`Virial`]); the same figures without surface
    /// tension.
    stress_floor: f32,
    stress_worst: f32,
    /// `((H − y)/H, p/(ρ₀gH))` per layer, H nominal.
    profile: Vec<(f64, f64)>,
    seconds: f64,
}

/// The column `per_h` spacings tall, filled with `packing` (and the
/// parameters fitted to it), settled with boundary-particle walls
/// (`walls_on`) or the clamp walls alone, with the preset's surface
/// tension (`tension`) or none.
fn settle<P: Point>(
    per_h: u32,
    walls_on: bool,
    packing: Packing,
    tension: bool,
) -> Result<Settled, Error> {
    let start = Instant::now();
    let d3 = P::DIM == 3;
    let (height, width) = (COLUMN_H, if d3 { COLUMN_W_3D } else { COLUMN_W_2D });
    let s = height / per_h as f32;
    let depth = if d3 { width } else { 0.0 };
    let tank = boxed::<P>([0.0; 3], [width, 1.5 * height, depth])?;
    let lattice = Lattice::<P>::packed(boxed::<P>([0.0; 3], [width, height, depth])?, s, packing)?;
    let mut p = water::<P>(tank, s, height).fit_lattice(&lattice)?;
    if !tension {
        p.surface_tension = 0.0;
    }
    let n = lattice.len();
    let mut f = Fluid::new(vec![P::ZERO; n], vec![ParticleState::EMPTY; n], p);
    f.fill_lattice(&lattice, P::ZERO)?;
    // Layers are the lattice's rows (a spacing for the cubic lattice), and
    // the column's height is that of its rows.
    let row = lattice.row_pitch();
    let rows = lattice.rows() as usize;
    let filled_h = rows as f32 * row;
    let mut ns = search::<P>(n);
    let mut w = walls::<P>(tank, s, TankFaces::open_top(Slip::NoSlip))?;
    let steps = (SETTLE_S / p.dt) as usize;
    let avg_from = steps - steps / 6;
    let mut y_avg = vec![0.0f64; n];
    let mut p_avg = vec![0.0f64; n];
    // The cohesion's share of each particle's stress (its virial, below),
    // averaged as the pressure is.
    let mut c_avg = vec![0.0f64; n];
    let mut virial = Virial::new(&p, n)?;
    for i in 0..steps {
        if walls_on {
            f.step(&mut ns, &mut w, &mut ())?;
        } else {
            f.step(&mut ns, &mut (), &mut ())?;
        }
        if i >= avg_from {
            for (k, (x, st)) in f.positions().iter().zip(f.state()).enumerate() {
                y_avg[k] += f64::from(x.coord(1));
                p_avg[k] += f64::from(st.pressure);
            }
            virial.add(&f, &mut c_avg)?;
        }
    }
    let samples = (steps - avg_from) as f64;
    let mut sum_y = vec![0.0f64; rows];
    let mut sum_p = vec![0.0f64; rows];
    let mut sum_q = vec![0.0f64; rows];
    let mut cnt = vec![0usize; rows];
    for ((y, pr), c) in y_avg.iter().zip(&p_avg).zip(&c_avg) {
        let y = y / samples;
        let r = ((y / f64::from(row)).max(0.0) as usize).min(rows - 1);
        sum_y[r] += y;
        sum_p[r] += pr / samples;
        sum_q[r] += (pr + c) / samples;
        cnt[r] += 1;
    }
    let top = (0..rows).rev().find(|&r| cnt[r] > 0).unwrap_or(0);
    let mean = |r: usize| (sum_y[r] / cnt[r] as f64, sum_p[r] / cnt[r] as f64);
    let surface = mean(top).0 + 0.5 * f64::from(row);
    let rho_g = f64::from(p.rest_density * G);
    // The floor layer's relative error and the worst layer's below the top
    // three (which carry the free surface's density deficit), over ρ₀gH_s,
    // of per-layer sums `v` (the pressure, or the stress).
    let judge = |v: &[f64]| {
        let (mut floor, mut worst) = (f64::NAN, 0.0f64);
        for r in (0..=top).filter(|&r| cnt[r] > 0) {
            let (y, got) = (sum_y[r] / cnt[r] as f64, v[r] / cnt[r] as f64);
            let want = rho_g * (surface - y);
            if r == 0 {
                floor = got / want - 1.0;
            }
            if r + 3 <= top {
                worst = worst.max((got - want).abs() / (rho_g * surface));
            }
        }
        (floor, worst)
    };
    let (floor, worst) = judge(&sum_p);
    let (stress_floor, stress_worst) = judge(&sum_q);
    let hn = f64::from(height);
    let profile: Vec<(f64, f64)> = (0..=top)
        .filter(|&r| cnt[r] > 0)
        .map(mean)
        .map(|(y, got)| ((hn - y) / hn, got / (rho_g * hn)))
        .collect();
    // Least-squares line through the layers below the top three.
    let pts: Vec<(f64, f64)> = (0..top.saturating_sub(2))
        .filter(|&r| cnt[r] > 0)
        .map(mean)
        .collect();
    let k = pts.len() as f64;
    let (sx, sy) = pts.iter().fold((0.0, 0.0), |a, q| (a.0 + q.0, a.1 + q.1));
    let (mx, my) = (sx / k, sy / k);
    let sxy: f64 = pts.iter().map(|q| (q.0 - mx) * (q.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|q| (q.0 - mx) * (q.0 - mx)).sum();
    let gradient = if pts.len() >= 2 {
        -(sxy / sxx) / rho_g
    } else {
        f64::NAN
    };
    Ok(Settled {
        n,
        walls: if walls_on { w.len() } else { 0 },
        steps,
        c: sound_speed(&p),
        drop: ((f64::from(filled_h) - surface) / f64::from(s)) as f32,
        floor: floor as f32,
        gradient: gradient as f32,
        worst: worst as f32,
        stress_floor: stress_floor as f32,
        stress_worst: stress_worst as f32,
        profile,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// The cohesion's share of each particle's isotropic stress, its virial
/// `(1/(2d·Vᵢ)) Σⱼ rᵢⱼ·Fᵢⱼ` over the cohesion forces `Fᵢⱼ` (the fluid's own
/// pairs: the walls exert none), `Vᵢ = m/ρᵢ`: negative where the particles
/// attract. The stress that balances gravity is the pressure plus this.
/// The force is the solver's (`γ·m²·C(r)·2ρ₀/(ρᵢ + ρⱼ)` along `rᵢⱼ`,
/// attractive for `C > 0`); the curvature term, which acts through the
/// normals and vanishes inside the fluid, is left out.
struct Virial<P: Point> {
    params: SphParams<P>,
    kernels: Kernels,
    search: VecCellSorted<P>,
    sums: Vec<f32>,
}

impl<P: Point> Virial<P> {
    fn new(params: &SphParams<P>, n: usize) -> Result<Self, Error> {
        Ok(Self {
            params: *params,
            kernels: params.kernels()?,
            search: search::<P>(n),
            sums: vec![0.0; n],
        })
    }

    /// Adds each particle's cohesion virial in `f`'s present state to `out`.
    fn add(&mut self, f: &VecFluid<P>, out: &mut [f64]) -> Result<(), Error> {
        let p = &self.params;
        if p.surface_tension <= 0.0 {
            return Ok(());
        }
        self.search.build(f.positions(), p.h)?;
        let st = f.state();
        let (k, sums) = (&self.kernels, &mut self.sums);
        sums.fill(0.0);
        self.search.for_each_pair(|a, b, d2| {
            let (a, b) = (a as usize, b as usize);
            let r = d2.sqrt();
            let scale = 2.0 * p.rest_density / (st[a].density + st[b].density);
            // rᵢⱼ·Fᵢⱼ / (γm²): minus |r|·C(r) scaled.
            let w = -r * k.cohesion(r) * scale;
            sums[a] += w;
            sums[b] += w;
        });
        let per = p.surface_tension * p.mass / (2.0 * P::DIM as f32);
        for ((o, s), x) in out.iter_mut().zip(sums.iter()).zip(st) {
            *o += f64::from(per * x.density * s);
        }
        Ok(())
    }
}

/// One resolution of the column: with walls, and with the clamp walls.
#[derive(Clone, Debug)]
struct ColumnRow {
    dim: usize,
    per_h: u32,
    /// Boundary-particle walls, filled with [`fill`]'s packing: the run
    /// the target is judged on.
    walls: Settled,
    /// Boundary-particle walls, filled with the other packing.
    other: Settled,
    /// The clamp walls alone, cubic fill.
    clamp: Settled,
    /// As `walls` without surface tension: the EOS pressure is then the
    /// only stress (see the template's section 1).
    tensionless: Settled,
}

impl ColumnRow {
    fn met(&self) -> bool {
        let w = &self.walls;
        w.drop.abs() < 0.5 && w.floor.abs() < 0.05 && w.worst < 0.05
    }

    /// [`met`](Self::met) read on the stress (the pressure plus the
    /// cohesion's virial) instead of the pressure.
    fn met_on_stress(&self) -> bool {
        let w = &self.walls;
        w.drop.abs() < 0.5 && w.stress_floor.abs() < 0.05 && w.stress_worst < 0.05
    }
}

/// The packing a column of `dim` dimensions is filled with for its
/// verdict: close packed in 2D, where a cubic fill reorders into the
/// triangular packing as it settles (and sinks by the kernel sums'
/// difference); cubic in 3D, where it turns amorphous instead, and a
/// face-centred fill, stretched to the tank's width by up to 3 % per
/// axis at these resolutions, relaxes and sinks more (the report shows
/// both).
fn fill(dim: usize) -> Packing {
    if dim == 2 {
        Packing::Close
    } else {
        Packing::Cubic
    }
}

fn other_fill(dim: usize) -> Packing {
    if dim == 2 {
        Packing::Cubic
    } else {
        Packing::Close
    }
}

fn packing_name(p: Packing) -> &'static str {
    match p {
        Packing::Cubic => "cubic",
        Packing::Close => "close",
    }
}

fn column(dim: usize, per_h: u32) -> Result<ColumnRow, Error> {
    let run = |walls_on, packing, tension| {
        let r = if dim == 3 {
            settle::<Vec3>(per_h, walls_on, packing, tension)
        } else {
            settle::<Vec2>(per_h, walls_on, packing, tension)
        }?;
        eprintln!(
            "hydrostatic column {dim}D, H/{per_h}, {} {packing:?}{}: drop {:.2} spacings, \
             floor {:+.4}, worst {:.4} (stress: floor {:+.4}, worst {:.4}), {} particles x {} \
             steps in {:.1} s",
            if walls_on { "walls" } else { "clamp" },
            if tension { "" } else { ", no surface tension" },
            r.drop,
            r.floor,
            r.worst,
            r.stress_floor,
            r.stress_worst,
            r.n,
            r.steps,
            r.seconds
        );
        Ok::<_, Error>(r)
    };
    Ok(ColumnRow {
        dim,
        per_h,
        walls: run(true, fill(dim), true)?,
        other: run(true, other_fill(dim), true)?,
        clamp: run(false, Packing::Cubic, true)?,
        tensionless: run(true, fill(dim), false)?,
    })
}

/// Particles and steps of a column, without running it.
fn column_size(dim: usize, per_h: u32) -> Result<(usize, usize), Error> {
    fn size<P: Point>(per_h: u32) -> Result<(usize, usize), Error> {
        let d3 = P::DIM == 3;
        let w = if d3 { COLUMN_W_3D } else { COLUMN_W_2D };
        let s = COLUMN_H / per_h as f32;
        let tank = boxed::<P>([0.0; 3], [w, 1.5 * COLUMN_H, if d3 { w } else { 0.0 }])?;
        let p = water::<P>(tank, s, COLUMN_H);
        let across = (w / s).round() as usize;
        let n = per_h as usize * across.pow(P::DIM as u32 - 1);
        Ok((n, (SETTLE_S / p.dt) as usize))
    }
    if dim == 3 {
        size::<Vec3>(per_h)
    } else {
        size::<Vec2>(per_h)
    }
}

fn hydro_table(rows: &[ColumnRow]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let (w, q, c, t) = (&r.walls, &r.other, &r.clamp, &r.tensionless);
            vec![
                format!("{}D", r.dim),
                format!("H/{} ({} m)", r.per_h, COLUMN_H / r.per_h as f32),
                packing_name(fill(r.dim)).to_owned(),
                format!("{} / {}", w.n, w.walls),
                w.steps.to_string(),
                format!("{:.2}", w.drop),
                format!("{:.4}", w.gradient),
                pct(f64::from(w.floor)),
                format!("{:.2} %", 100.0 * w.worst),
                verdict(r.met()).to_owned(),
                pct(f64::from(w.stress_floor)),
                format!("{:.2} %", 100.0 * w.stress_worst),
                verdict(r.met_on_stress()).to_owned(),
                format!("{:.2}", q.drop),
                pct(f64::from(q.floor)),
                format!("{:.2} %", 100.0 * q.worst),
                format!("{:.2}", c.drop),
                pct(f64::from(c.floor)),
                format!("{:.2} %", 100.0 * c.worst),
                format!("{:.2}", t.drop),
                pct(f64::from(t.floor)),
                format!("{:.2} %", 100.0 * t.worst),
                format!(
                    "{:.0} + {:.0} + {:.0} + {:.0}",
                    w.seconds, q.seconds, c.seconds, t.seconds
                ),
            ]
        })
        .collect();
    table(
        &[
            "dim",
            "spacing",
            "fill",
            "fluid / wall particles",
            "steps",
            "surface drop (spacings)",
            "dp/dy over ρ₀g",
            "floor layer",
            "worst layer (of ρ₀gH)",
            "target",
            "stress: floor layer",
            "stress: worst layer",
            "target on the stress",
            "other fill: drop",
            "other fill: floor layer",
            "other fill: worst layer",
            "clamp walls (cubic fill): drop",
            "clamp: floor layer",
            "clamp: worst layer",
            "no surface tension: drop",
            "no surface tension: floor layer",
            "no surface tension: worst layer",
            "run time (s, fill + other + clamp + no tension)",
        ],
        &body,
    )
}

fn hydro_plot(
    rows: &[ColumnRow],
    path: &std::path::Path,
) -> Result<(), Box<dyn core::error::Error>> {
    let line = Series::new("ρ₀g(H − y)", vec![(0.0, 0.0), (1.0, 1.0)]);
    let panel = |dim: usize| {
        let mut series = vec![line.clone()];
        for r in rows.iter().filter(|r| r.dim == dim) {
            series.push(Series::new(
                format!("H/{}", r.per_h),
                r.walls.profile.clone(),
            ));
        }
        let finest = rows.iter().rev().find(|r| r.dim == 2);
        if let Some(r) = finest.filter(|_| dim == 2) {
            series.push(Series::new(
                format!("clamp walls, H/{}", r.per_h),
                r.clamp.profile.clone(),
            ));
        }
        Panel {
            caption: format!("{dim}D column, boundary particles"),
            x_desc: "(H − y)/H".into(),
            y_desc: "p/(ρ₀gH)".into(),
            x: Scale::Linear,
            y: Scale::Linear,
            series,
        }
    };
    svg(path, (1100, 480), None, 2, &[panel(2), panel(3)])
}

// -------------------------------------------------------------- dam break

/// One dam-break run.
#[derive(Clone, Debug)]
struct DamRun {
    per_a: u32,
    slip: Slip,
    n: usize,
    walls: usize,
    steps: usize,
    c: f32,
    /// The viscosity `μ` used, Pa·s.
    mu: f32,
    /// `Z` at each of the experiment's `T`.
    z: Vec<f32>,
    /// `(T, Z)` along the run, for the plot.
    trace: Vec<(f64, f64)>,
    seconds: f64,
}

impl DamRun {
    /// Relative error against the experiment at each `T`.
    fn errors(&self) -> Vec<f64> {
        self.z
            .iter()
            .zip(MARTIN_MOYCE)
            .map(|(z, (_, ze))| f64::from(z / ze - 1.0))
            .collect()
    }

    fn worst(&self) -> f64 {
        self.errors().iter().fold(0.0, |a, e| a.max(e.abs()))
    }

    fn label(&self) -> String {
        format!("a/{}", self.per_a)
    }
}

/// The dam break at spacing `a/per_a`; in 3D a slab [`SLAB_DEPTH`]
/// spacings deep with free-slip side walls, of the same fluid as the 2D
/// run (the 2D preset's viscosity `μ`) unless `own_mu`. The preset turns
/// its artificial viscosity `α` into `μ = ρ₀αhc/(2(d + 2))`, so the 3D
/// preset's own `μ` is 0.8 of the 2D one and its floor drags less.
fn dam_break<P: Point>(per_a: u32, slip: Slip, own_mu: bool) -> Result<DamRun, Error> {
    let start = Instant::now();
    let a = DAM_A;
    let s = a / per_a as f32;
    let d3 = P::DIM == 3;
    let depth = if d3 { SLAB_DEPTH as f32 * s } else { 0.0 };
    let tank = boxed::<P>([0.0; 3], [5.0 * a, 3.0 * a, depth])?;
    let mut p = water::<P>(tank, s, 2.0 * a);
    if d3 && !own_mu {
        let plane = boxed::<Vec2>([0.0; 3], [5.0 * a, 3.0 * a, 0.0])?;
        p.viscosity = water::<Vec2>(plane, s, 2.0 * a).viscosity;
    }
    let mut f = filled(p, boxed::<P>([0.0; 3], [a, 2.0 * a, depth])?, s)?;
    let mut ns = search::<P>(f.len());
    let mut faces = TankFaces::open_top(slip);
    if d3 {
        faces.0[4] = Face::Wall(Slip::FreeSlip);
        faces.0[5] = Face::Wall(Slip::FreeSlip);
    }
    let mut w = walls::<P>(tank, s, faces)?;
    let scale = (2.0 * G / a).sqrt();
    let front = |f: &VecFluid<P>| {
        (f.positions().iter().map(|x| x.coord(0)).fold(0.0, f32::max) + 0.5 * s) / a
    };
    let t_end = MARTIN_MOYCE[MARTIN_MOYCE.len() - 1].0;
    let every = ((t_end / scale / p.dt) as usize / 150).max(1);
    let (mut t, mut z) = (0.0f32, front(&f));
    let mut trace = vec![(0.0, f64::from(z))];
    let mut out = Vec::new();
    let mut steps = 0;
    for &(te, _) in &MARTIN_MOYCE {
        while t * scale < te {
            f.step(&mut ns, &mut w, &mut ())?;
            steps += 1;
            let (t1, z1) = (t + p.dt, front(&f));
            if t1 * scale >= te {
                let u = (te / scale - t) / p.dt;
                out.push(z + u * (z1 - z));
            }
            if steps % every == 0 {
                trace.push((f64::from(t1 * scale), f64::from(z1)));
            }
            (t, z) = (t1, z1);
        }
    }
    eprintln!(
        "dam break {}D a/{per_a} {}: Z {:?}, {} particles x {steps} steps in {:.1} s",
        P::DIM,
        slip_name(slip),
        out,
        f.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(DamRun {
        per_a,
        slip,
        n: f.len(),
        walls: w.len(),
        steps,
        c: sound_speed(&p),
        mu: p.viscosity,
        z: out,
        trace,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Particles and steps of a 2D dam break, without running it.
fn dam_size(per_a: u32) -> Result<(usize, usize), Error> {
    let s = DAM_A / per_a as f32;
    let tank = boxed::<Vec2>([0.0; 3], [5.0 * DAM_A, 3.0 * DAM_A, 0.0])?;
    let p = water::<Vec2>(tank, s, 2.0 * DAM_A);
    let t_end = MARTIN_MOYCE[MARTIN_MOYCE.len() - 1].0 / (2.0 * G / DAM_A).sqrt();
    Ok((2 * (per_a as usize).pow(2), (t_end / p.dt).ceil() as usize))
}

fn slip_name(s: Slip) -> &'static str {
    match s {
        Slip::NoSlip => "no-slip",
        Slip::FreeSlip => "free-slip",
    }
}

/// The table of one slip condition's runs, with the two verdicts per row.
fn dam_table(runs: &[&DamRun]) -> String {
    let mut header: Vec<String> = vec!["spacing".into(), "particles (fluid / wall)".into()];
    header.extend(
        MARTIN_MOYCE
            .iter()
            .map(|(t, ze)| format!("T = {t} (Z = {ze})")),
    );
    header.extend(
        [
            "largest error",
            "within 10 %",
            "error vs the coarser row",
            "steps",
            "run time (s)",
        ]
        .map(String::from),
    );
    let mut body = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let mut row = vec![
            format!("{} ({} m)", r.label(), DAM_A / r.per_a as f32),
            format!("{} / {}", r.n, r.walls),
        ];
        for (z, e) in r.z.iter().zip(r.errors()) {
            row.push(format!("{z:.3} ({})", pct(e)));
        }
        let growth = match i.checked_sub(1).map(|j| runs[j]) {
            None => "–".to_owned(),
            Some(prev) if r.worst() <= prev.worst() => "not growing: met".to_owned(),
            Some(_) => "**growing: not met**".to_owned(),
        };
        row.extend([
            format!("{:.1} %", 100.0 * r.worst()),
            verdict(r.worst() < 0.10).to_owned(),
            growth,
            r.steps.to_string(),
            format!("{:.0}", r.seconds),
        ]);
        body.push(row);
    }
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    table(&h, &body)
}

fn dam_plot(
    runs: &[DamRun],
    slab: Option<(&DamRun, &DamRun)>,
    path: &std::path::Path,
) -> Result<(), Box<dyn core::error::Error>> {
    let experiment = Series::new(
        "Martin & Moyce (1952)",
        MARTIN_MOYCE
            .iter()
            .map(|&(t, z)| (f64::from(t), f64::from(z)))
            .collect(),
    );
    let panel = |caption: String, series: Vec<Series>| Panel {
        caption,
        x_desc: "T = t√(2g/a)".into(),
        y_desc: "Z = x/a".into(),
        x: Scale::Linear,
        y: Scale::Linear,
        series,
    };
    let mut panels = Vec::new();
    for slip in [Slip::NoSlip, Slip::FreeSlip] {
        let mut series = vec![experiment.clone()];
        for r in runs.iter().filter(|r| r.slip == slip) {
            series.push(Series::new(r.label(), r.trace.clone()));
        }
        panels.push(panel(format!("2D, {} walls", slip_name(slip)), series));
    }
    if let Some((d2, d3)) = slab {
        panels.push(panel(
            format!("3D slab vs 2D, {}", d2.label()),
            vec![
                experiment.clone(),
                Series::new(format!("2D {}", d2.label()), d2.trace.clone()),
                Series::new(format!("3D slab {}", d3.label()), d3.trace.clone()),
            ],
        ));
    }
    svg(path, (1500, 480), None, 3, &panels)
}

// ------------------------------------------------------------------- main

/// Command-line options.
#[derive(Debug)]
struct Args {
    quick: bool,
    /// Run the optional cases whatever their estimate.
    full: bool,
    out: PathBuf,
}

fn parse_args(raw: &[String]) -> Result<Args, String> {
    let opts = super::check_args(raw, &["--quick", "--full"], &["--out"])?;
    if opts.flag("--quick") && opts.flag("--full") {
        return Err("--quick and --full exclude each other".to_owned());
    }
    Ok(Args {
        quick: opts.flag("--quick"),
        full: opts.flag("--full"),
        out: opts.out_dir(),
    })
}

/// Whether an optional case of `runs` runs of `to = (particles, steps)`
/// fits the budget, its cost extrapolated from the next coarser runs of
/// `from`, which took `seconds` a run; the note says why not. With `full`
/// every case fits.
fn fits(
    full: bool,
    what: &str,
    seconds: f64,
    from: (usize, usize),
    to: (usize, usize),
    runs: usize,
) -> Result<(), String> {
    let est = seconds * (to.0 * to.1) as f64 / (from.0 * from.1) as f64 * runs as f64;
    if full || est <= OPTIONAL_BUDGET_S {
        eprintln!(
            "{what}: estimated {est:.0} s, run (budget {OPTIONAL_BUDGET_S:.0} s, --full {full})"
        );
        Ok(())
    } else {
        Err(format!(
            "{what} ({} particles × {} steps, {runs} run{}): not run, its cost extrapolated \
             from the next coarser runs ({} particles × {} steps, {seconds:.0} s a run) is \
             {est:.0} s, over this report's budget of {OPTIONAL_BUDGET_S:.0} s for one \
             optional case.",
            to.0,
            to.1,
            if runs == 1 { "" } else { "s" },
            from.0,
            from.1,
        ))
    }
}

struct Results {
    columns: Vec<ColumnRow>,
    dams: Vec<DamRun>,
    slab: Option<(DamRun, DamRun)>,
    /// The slab with the 3D preset's own viscosity.
    slab_own_mu: DamRun,
    left_out: Vec<String>,
}

fn run_all(quick: bool, full: bool) -> Result<Results, Error> {
    let mut left_out = Vec::new();
    let mut columns = Vec::new();
    let res_2d: &[u32] = if quick { &[20] } else { &[20, 40, 80] };
    for &k in res_2d {
        columns.push(column(2, k)?);
    }
    let res_3d: &[u32] = if quick { &[10] } else { &[10, 20] };
    for &k in res_3d {
        columns.push(column(3, k)?);
    }
    if quick {
        left_out.push(
            "`--quick`: the 2D column at H/40 and H/80, the 3D column at H/20 and H/40, and \
             the dam break at a/40, a/80 and a/160 (the smallest resolution of each case only)."
                .to_owned(),
        );
    } else {
        let last = columns.last().expect("the 3D columns ran");
        // Four runs: with the walls, filled each way, with the clamp walls,
        // and with the walls but no surface tension.
        let seconds =
            last.walls.seconds + last.other.seconds + last.clamp.seconds + last.tensionless.seconds;
        match fits(
            full,
            "3D column at H/40, with the walls (both fills, and without surface tension) and \
             with the clamp walls",
            seconds / 4.0,
            column_size(3, 20)?,
            column_size(3, 40)?,
            4,
        ) {
            Ok(()) => columns.push(column(3, 40)?),
            Err(note) => left_out.push(note),
        }
    }
    let mut dams = Vec::new();
    let res_dam: &[u32] = if quick { &[20] } else { &[20, 40, 80] };
    for slip in [Slip::NoSlip, Slip::FreeSlip] {
        for &k in res_dam {
            dams.push(dam_break::<Vec2>(k, slip, false)?);
        }
    }
    if !quick {
        let seconds: f64 = dams
            .iter()
            .filter(|r| r.per_a == 80)
            .map(|r| r.seconds)
            .sum();
        match fits(
            full,
            "dam break at a/160, no-slip and free-slip",
            seconds / 2.0,
            dam_size(80)?,
            dam_size(160)?,
            2,
        ) {
            Ok(()) => {
                for slip in [Slip::NoSlip, Slip::FreeSlip] {
                    let r = dam_break::<Vec2>(160, slip, false)?;
                    let at = dams
                        .iter()
                        .rposition(|d| d.slip == slip)
                        .map_or(0, |i| i + 1);
                    dams.insert(at, r);
                }
            }
            Err(note) => left_out.push(note),
        }
    }
    let slab3 = dam_break::<Vec3>(20, Slip::NoSlip, false)?;
    let own = dam_break::<Vec3>(20, Slip::NoSlip, true)?;
    let slab2 = dams
        .iter()
        .find(|r| r.per_a == 20 && r.slip == Slip::NoSlip)
        .cloned();
    Ok(Results {
        columns,
        dams,
        slab: slab2.map(|d2| (d2, slab3)),
        slab_own_mu: own,
        left_out,
    })
}

/// Runs the experiment and writes the report; `args` are the options
/// after the program (and subcommand) name.
pub fn main(args: &[String]) -> ExitCode {
    let args = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut prov = Provenance::start();
    let res = match run_all(args.quick, args.full) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("a run failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    prov.finish();

    if let Err(e) = std::fs::create_dir_all(&args.out) {
        eprintln!("{}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    let hydro_svg = "validation_hydrostatic.svg";
    let dam_svg = "validation_dam_break.svg";
    if let Err(e) = hydro_plot(&res.columns, &args.out.join(hydro_svg)) {
        eprintln!("{hydro_svg}: {e}");
        return ExitCode::FAILURE;
    }
    let slab = res.slab.as_ref().map(|(a, b)| (a, b));
    if let Err(e) = dam_plot(&res.dams, slab, &args.out.join(dam_svg)) {
        eprintln!("{dam_svg}: {e}");
        return ExitCode::FAILURE;
    }

    // Hydrostatic notes: the speeds of sound.
    let mut hydro_notes = String::new();
    for r in &res.columns {
        hydro_notes.push_str(&format!(
            "{}D H/{}: c = {:.1} m/s; ",
            r.dim, r.per_h, r.walls.c
        ));
    }
    let hydro_notes = format!(
        "Speed of sound of each run (from the tank's height, 1.5·H = {} m): {}.\n",
        1.5 * COLUMN_H,
        hydro_notes.trim_end_matches("; ")
    );

    let by_slip =
        |slip: Slip| -> Vec<&DamRun> { res.dams.iter().filter(|r| r.slip == slip).collect() };
    let (noslip, freeslip) = (by_slip(Slip::NoSlip), by_slip(Slip::FreeSlip));
    let ran_160 = res.dams.iter().any(|r| r.per_a == 160);
    let dam_summary = |runs: &[&DamRun]| {
        let within = runs.iter().all(|r| r.worst() < 0.10);
        let not_growing = runs.windows(2).all(|w| w[1].worst() <= w[0].worst());
        let all = within && not_growing && ran_160;
        format!(
            "{} walls: within 10 % at every resolution run: {}; error not growing: {}; \
             the target over a/20 … a/160: {}.",
            slip_name(runs[0].slip),
            verdict(within),
            if runs.len() < 2 {
                "not assessed (one resolution)"
            } else {
                verdict(not_growing)
            },
            if all {
                "met"
            } else if within && (not_growing || runs.len() < 2) {
                "not verified (a/160, or more resolutions, not run)"
            } else {
                "**not met**"
            },
        )
    };
    let c_dam = res.dams.first().map_or(0.0, |r| r.c);
    let dam_notes = format!(
        "Summary. {} {}\n\nSpeed of sound c = {c_dam:.1} m/s (from the tank's height 3a); \
         the step Δt = 0.4·h/c, so the steps double with each halving of the spacing.\n",
        dam_summary(&noslip),
        dam_summary(&freeslip),
    );

    let (slab_table, slab_verdict, slab_per_a) = match &res.slab {
        None => (String::new(), "Not run.".to_owned(), 20),
        Some((d2, d3)) => {
            let own = &res.slab_own_mu;
            let body: Vec<Vec<String>> = MARTIN_MOYCE
                .iter()
                .zip(d2.z.iter().zip(&d3.z))
                .zip(&own.z)
                .map(|((&(t, _), (&z2, &z3)), &zo)| {
                    let diff = f64::from(z3 / z2 - 1.0);
                    vec![
                        t.to_string(),
                        format!("{z2:.3}"),
                        format!("{z3:.3}"),
                        pct(diff),
                        verdict(diff.abs() < 0.03).to_owned(),
                        format!("{zo:.3}"),
                        pct(f64::from(zo / z2 - 1.0)),
                    ]
                })
                .collect();
            let worst =
                d2.z.iter()
                    .zip(&d3.z)
                    .fold(0.0f64, |a, (z2, z3)| a.max(f64::from(z3 / z2 - 1.0).abs()));
            let own_worst =
                d2.z.iter()
                    .zip(&own.z)
                    .fold(0.0f64, |a, (z2, zo)| a.max(f64::from(zo / z2 - 1.0).abs()));
            (
                table(
                    &[
                        "T",
                        "Z, 2D no-slip",
                        "Z, 3D slab",
                        "3D vs 2D",
                        "within 3 %",
                        "Z, 3D slab, 3D preset's μ",
                        "vs 2D",
                    ],
                    &body,
                ),
                format!(
                    "Largest difference {:.1} %: target {}. The slab: {} fluid and {} wall \
                     particles, {} steps in {:.0} s (the 2D run: {:.0} s). With the 3D \
                     preset's own viscosity (μ {:.4} Pa·s against the 2D preset's {:.4}) the \
                     largest difference is {:.1} %: that slab is a less viscous fluid, not \
                     the same flow.",
                    100.0 * worst,
                    verdict(worst < 0.03),
                    d3.n,
                    d3.walls,
                    d3.steps,
                    d3.seconds,
                    d2.seconds,
                    own.mu,
                    d3.mu,
                    100.0 * own_worst,
                ),
                d3.per_a,
            )
        }
    };

    // Headline.
    let mut headline = String::from("**Headline.** ");
    for dim in [2, 3] {
        let rows: Vec<&ColumnRow> = res.columns.iter().filter(|r| r.dim == dim).collect();
        if rows.is_empty() {
            continue;
        }
        let list = |f: &dyn Fn(&ColumnRow) -> String| {
            rows.iter().map(|r| f(r)).collect::<Vec<_>>().join(" / ")
        };
        headline.push_str(&format!(
            "Hydrostatic column {dim}D, {} fill, at {}: surface drop {} spacings, floor layer {}, \
             worst layer {} of ρ₀gH (target {}; {} fill: drop {} spacings; clamp walls: drop {} \
             spacings; on the stress: floor layer {}, worst layer {}, target {}; without surface \
             tension: floor layer {}, worst layer {}). ",
            packing_name(fill(dim)),
            list(&|r| format!("H/{}", r.per_h)),
            list(&|r| format!("{:.2}", r.walls.drop)),
            list(&|r| pct(f64::from(r.walls.floor))),
            list(&|r| format!("{:.1} %", 100.0 * r.walls.worst)),
            if rows.iter().all(|r| r.met()) {
                "met"
            } else {
                "**not met**"
            },
            packing_name(other_fill(dim)),
            list(&|r| format!("{:.2}", r.other.drop)),
            list(&|r| format!("{:.2}", r.clamp.drop)),
            list(&|r| pct(f64::from(r.walls.stress_floor))),
            list(&|r| format!("{:.1} %", 100.0 * r.walls.stress_worst)),
            if rows.iter().all(|r| r.met_on_stress()) {
                "met"
            } else {
                "**not met**"
            },
            list(&|r| pct(f64::from(r.tensionless.floor))),
            list(&|r| format!("{:.1} %", 100.0 * r.tensionless.worst)),
        ));
    }
    for runs in [&noslip, &freeslip] {
        let last = MARTIN_MOYCE.len() - 1;
        headline.push_str(&format!(
            "Dam break, {} walls, front error at T = {}: {}. ",
            slip_name(runs[0].slip),
            MARTIN_MOYCE[last].0,
            runs.iter()
                .map(|r| format!("{} ({})", pct(r.errors()[last]), r.label()))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    if let Some((d2, d3)) = &res.slab {
        let worst =
            d2.z.iter()
                .zip(&d3.z)
                .fold(0.0f64, |a, (z2, z3)| a.max(f64::from(z3 / z2 - 1.0).abs()));
        headline.push_str(&format!(
            "3D slab vs 2D at {}: largest difference {:.1} %.",
            d3.label(),
            100.0 * worst
        ));
    }
    headline.push('\n');

    let left_out = if res.left_out.is_empty() {
        "Nothing: every case of the plan ran.".to_owned()
    } else {
        res.left_out
            .iter()
            .map(|s| format!("- {s}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let run_note = if args.quick {
        " **`--quick` run: the smallest resolution of each case only, a smoke test; the \
         resolution trends the targets ask about are not measured.**"
    } else if args.full {
        " `--full` run: the optional cases ran whatever their estimated cost."
    } else {
        ""
    };
    let values = vec![
        ("run_note", run_note.to_owned()),
        ("provenance", prov.markdown()),
        ("headline", headline),
        ("layers", LAYERS.to_string()),
        ("settle", SETTLE_S.to_string()),
        (
            "column_2d",
            format!("{COLUMN_W_2D} m wide, H = {COLUMN_H} m tall, at H/20, H/40, H/80"),
        ),
        (
            "column_3d",
            format!(
                "{COLUMN_W_3D} m × {COLUMN_W_3D} m, H = {COLUMN_H} m tall, at H/10, H/20 (H/40 \
                 only if it fits the budget, see *Left out*)"
            ),
        ),
        ("hydro_table", hydro_table(&res.columns)),
        ("hydro_notes", hydro_notes),
        ("hydro_svg", hydro_svg.to_owned()),
        ("column_height", COLUMN_H.to_string()),
        ("dam_a", DAM_A.to_string()),
        (
            "experiment",
            MARTIN_MOYCE
                .iter()
                .map(|(t, z)| format!("({t}, {z})"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("dam_noslip", dam_table(&noslip)),
        ("dam_freeslip", dam_table(&freeslip)),
        ("dam_notes", dam_notes),
        ("dam_svg", dam_svg.to_owned()),
        ("slab_per_a", slab_per_a.to_string()),
        ("slab_depth", SLAB_DEPTH.to_string()),
        (
            "slab_depth_m",
            (SLAB_DEPTH as f32 * DAM_A / slab_per_a as f32).to_string(),
        ),
        ("slab_table", slab_table),
        ("slab_verdict", slab_verdict),
        ("left_out", left_out),
    ];
    let md = match fill_values(TEMPLATE, &values) {
        Ok(md) => md,
        Err(e) => {
            eprintln!("templates/validation_report.md: {e}");
            return ExitCode::FAILURE;
        }
    };
    let path = args.out.join("VALIDATION_REPORT.md");
    if let Err(e) = std::fs::write(&path, &md) {
        eprintln!("writing {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    eprintln!(
        "wrote {} in {:.0} s",
        path.display(),
        prov.elapsed.unwrap_or_default().as_secs_f64()
    );
    ExitCode::SUCCESS
}
