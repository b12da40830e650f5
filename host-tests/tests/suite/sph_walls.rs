//! Boundary-particle walls (`spatium::sph::walls`): a water column at rest
//! keeps its height and a hydrostatic pressure, in 2D and 3D.

use spatium::sph::source::{Lattice, Packing};
use spatium::sph::walls::{BoundaryParticles, BoundaryState, Slip, TankFaces, box_count};
use spatium::sph::{Fluid, ParticleState, SphParams};
use spatium::table::table_len;
use spatium::{BoundingBox, Error, Point, Vec2, Vec3};
use spatium_host::make::{self, VecCellSorted};

type VecFluid<P> = Fluid<P, Vec<P>, Vec<ParticleState<P>>>;
type VecWalls<P> = BoundaryParticles<P, Vec<P>, Vec<BoundaryState<P>>, VecCellSorted<P>>;

fn search<P: Point>(cap: usize) -> VecCellSorted<P> {
    make::cell_sorted(cap, table_len(cap, 2))
}

fn boxed<P: Point>(lo: [f32; 3], hi: [f32; 3]) -> P::Aabb {
    P::Aabb::try_new(P::from_fn(|k| lo[k]), P::from_fn(|k| hi[k])).unwrap()
}

fn walls<P: Point>(tank: P::Aabb, s: f32, faces: TankFaces) -> VecWalls<P> {
    walls_and_room(tank, s, faces, 0)
}

/// [`walls`] with room for `extra` more particles.
fn walls_and_room<P: Point>(tank: P::Aabb, s: f32, faces: TankFaces, extra: usize) -> VecWalls<P> {
    let n = box_count::<P>(tank, s, 3, faces).unwrap();
    let mut w = BoundaryParticles::new(
        vec![P::ZERO; n + extra],
        vec![BoundaryState::EMPTY; n + extra],
        search::<P>(n + extra),
    );
    assert_eq!(w.sample_box(tank, s, 3, faces).unwrap(), n);
    w
}

/// The column's figures after settling: (surface drop in spacings, rms and
/// worst relative pressure error per layer, floor-layer error).
struct Column {
    /// Surface drop, in spacings.
    drop: f32,
    /// Relative error of the floor layer's pressure.
    floor: f32,
    /// `dp/dy` of the least-squares line, over `−ρ₀g`.
    gradient: f32,
    /// Largest `|p̄ − ρ₀g(H − y)|` of the layers below the top three, over
    /// `ρ₀gH`.
    worst: f32,
}

impl Column {
    fn check(&self, what: &str) {
        println!(
            "{what}: drop {:.2} spacings, floor {:+.4}, gradient {:.4} ρ₀g, worst layer {:.4} ρ₀gH",
            self.drop, self.floor, self.gradient, self.worst
        );
        assert!(self.drop.abs() < 0.5, "{what}: drop {}", self.drop);
        assert!(self.floor.abs() < 0.05, "{what}: floor {}", self.floor);
        assert!(
            (self.gradient - 1.0).abs() < 0.03,
            "{what}: gradient {}",
            self.gradient
        );
        // The target is 5 %; 3D at 1 cm gave 5.3 % (README): this guards
        // against a regression, it does not claim the target.
        assert!(self.worst < 0.06, "{what}: worst layer {}", self.worst);
    }
}

/// The column filled with `packing` (the parameters fitted to it), settled
/// `seconds` with boundary-particle walls (`walls_on`) or the clamp alone,
/// with the preset's surface tension (`tension`) or none.
fn column<P: Point>(
    s: f32,
    height: f32,
    width: f32,
    seconds: f32,
    walls_on: bool,
    packing: Packing,
    tension: bool,
) -> Column {
    let d3 = P::DIM == 3;
    let tank_hi = [width, 1.5 * height, if d3 { width } else { 0.0 }];
    let tank = boxed::<P>([0.0; 3], tank_hi);
    // The speed of sound from the column's height.
    let block = boxed::<P>([0.0; 3], [width, height, if d3 { width } else { 0.0 }]);
    let lattice = Lattice::<P>::packed(block, s, packing).unwrap();
    let mut p = SphParams::<P>::water(tank, s, height)
        .unwrap()
        .fit_lattice(&lattice)
        .unwrap();
    if !tension {
        p.surface_tension = 0.0;
    }
    let mut f: VecFluid<P> = Fluid::new(vec![P::ZERO; 20000], vec![ParticleState::EMPTY; 20000], p);
    let n = f.fill_lattice(&lattice, P::ZERO).unwrap();
    // Layers are the lattice's rows; the column is as tall as its rows.
    let row = lattice.row_pitch();
    let rows = lattice.rows() as usize;
    let filled = rows as f32 * row;
    let mut ns = search::<P>(n);
    let mut w = walls::<P>(tank, s, TankFaces::open_top(Slip::NoSlip));
    let steps = (seconds / p.dt) as usize;
    // Each particle's height and pressure, averaged over the last sixth of
    // the run (the column still rings faintly after its release).
    let avg_from = steps - steps / 6;
    let mut y_avg = vec![0.0f64; n];
    let mut p_avg = vec![0.0f64; n];
    for i in 0..steps {
        if walls_on {
            f.step(&mut ns, &mut w, &mut ())
                .unwrap_or_else(|e| panic!("step {i}: {e}"));
        } else {
            f.step(&mut ns, &mut (), &mut ()).unwrap();
        }
        if i >= avg_from {
            for (k, (x, st)) in f.positions().iter().zip(f.state()).enumerate() {
                y_avg[k] += f64::from(x.coord(1));
                p_avg[k] += f64::from(st.pressure);
            }
        }
    }
    let samples = (steps - avg_from) as f64;
    // Layers one row thick by the averaged height.
    let mut sum_y = vec![0.0f64; rows];
    let mut sum_p = vec![0.0f64; rows];
    let mut cnt = vec![0usize; rows];
    for (y, pr) in y_avg.iter().zip(&p_avg) {
        let y = y / samples;
        let r = ((y / f64::from(row)) as usize).min(rows - 1);
        sum_y[r] += y;
        sum_p[r] += pr / samples;
        cnt[r] += 1;
    }
    let top = (0..rows).rev().find(|&r| cnt[r] > 0).unwrap();
    let surface = (sum_y[top] / cnt[top] as f64) as f32 + 0.5 * row;
    let rho_g = p.rest_density * 9.81;
    let mut worst = 0.0f32;
    let mut floor = 0.0;
    println!("layer  y/s   p/(ρ₀g(H−y))  count");
    for r in 0..=top {
        if cnt[r] == 0 {
            continue;
        }
        let y = (sum_y[r] / cnt[r] as f64) as f32;
        let want = rho_g * (surface - y);
        let got = (sum_p[r] / cnt[r] as f64) as f32;
        let rel = got / want - 1.0;
        println!("{r:>5} {:>5.2} {:>+8.4} {:>6}", y / s, rel, cnt[r]);
        if r == 0 {
            floor = rel;
        }
        // The top three layers carry the free surface's density deficit.
        if r + 3 <= top {
            worst = worst.max((got - want).abs() / (rho_g * surface));
        }
    }
    // Least-squares line through the layers below the top three.
    let pts: Vec<(f64, f64)> = (0..top.saturating_sub(2))
        .filter(|&r| cnt[r] > 0)
        .map(|r| (sum_y[r] / cnt[r] as f64, sum_p[r] / cnt[r] as f64))
        .collect();
    let k = pts.len() as f64;
    let (sx, sy) = pts.iter().fold((0.0, 0.0), |a, q| (a.0 + q.0, a.1 + q.1));
    let (mx, my) = (sx / k, sy / k);
    let sxy: f64 = pts.iter().map(|q| (q.0 - mx) * (q.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|q| (q.0 - mx) * (q.0 - mx)).sum();
    let slope = sxy / sxx;
    let h0 = mx - my / slope;
    println!(
        "fit: dp/dy = {:.4} ρ₀g, p = 0 at y = {:.2} s (surface {:.2} s)",
        -slope / f64::from(rho_g),
        h0 / f64::from(s),
        surface / s
    );
    Column {
        drop: (filled - surface) / s,
        floor,
        gradient: (-slope / f64::from(rho_g)) as f32,
        worst,
    }
}

/// In 2D (a 0.2 m column at 5 mm spacing in an open-top tank with no-slip
/// walls, the water preset, settled 1.5 s), filled close packed with the
/// parameters fitted to that lattice: the surface sinks less than a
/// quarter spacing, the pressure gradient is within 3 % of `ρ₀g`, the
/// floor layer's pressure within 5 % of the column's weight, and every
/// layer below the top three within 5 % of `ρ₀gH` of `ρ₀g(H − y)` (the
/// issue's target; measured 0.18 spacing, −0.9 %, 2.1 %). Filled on the
/// cubic lattice the same column reorders into a close packing as it
/// settles and sinks by more than a third of a spacing (0.45; the defect
/// the close packing mends, growing with resolution: 0.98 at 2.5 mm); the
/// seed's clamp walls sink by more than two spacings and leave the floor
/// layer more than 20 % short (the defect the walls mend).
#[test]
fn water_column_2d_is_hydrostatic() {
    let c = column::<Vec2>(0.005, 0.2, 0.2, 1.5, true, Packing::Close, true);
    c.check("2D close packed");
    assert!(c.drop.abs() < 0.25, "2D close packed: drop {}", c.drop);
    assert!(c.worst < 0.05, "2D close packed: worst layer {}", c.worst);
    let cubic = column::<Vec2>(0.005, 0.2, 0.2, 1.5, true, Packing::Cubic, true);
    cubic.check("2D cubic");
    assert!(cubic.drop > 0.35, "2D cubic: drop {}", cubic.drop);
    let clamp = column::<Vec2>(0.005, 0.2, 0.2, 1.5, false, Packing::Cubic, true);
    println!(
        "2D clamp walls: drop {:.2} spacings, floor {:+.3}",
        clamp.drop, clamp.floor
    );
    assert!(clamp.drop > 2.0 && clamp.floor < -0.2);
}

/// As [`water_column_2d_is_hydrostatic`] in 3D (10 × 20 × 10 particles at
/// 1 cm).
#[test]
fn water_column_3d_is_hydrostatic() {
    column::<Vec3>(0.01, 0.2, 0.1, 1.5, true, Packing::Cubic, true).check("3D");
}

/// What the 3D columns' misses come from: the preset's cohesion. The 3D
/// column at 2 cm (5 × 10 × 5 particles) with the preset misses the
/// pressure target by far (worst layer 12.6 % of `ρ₀gH`, floor layer
/// +7.2 %: the validation report); the same column without surface
/// tension meets every part of it (measured: drop 0.33 spacing, floor
/// +3.5 %, worst layer 4.6 %). Part of the difference is that the
/// equation-of-state pressure also carries the cohesion's pull (its
/// virial, about 2 of the 8 points here: the validation report's section
/// 1), the rest what the cohesion does to a column five particles wide.
#[test]
fn water_column_3d_without_surface_tension_meets_the_pressure_target() {
    let dry = column::<Vec3>(0.02, 0.2, 0.1, 1.5, true, Packing::Cubic, false);
    dry.check("3D, 2 cm, no surface tension");
    assert!(dry.worst < 0.05, "worst layer {}", dry.worst);
    let wet = column::<Vec3>(0.02, 0.2, 0.1, 1.5, true, Packing::Cubic, true);
    println!(
        "3D, 2 cm, the preset's surface tension: drop {:.2}, floor {:+.4}, worst layer {:.4}",
        wet.drop, wet.floor, wet.worst
    );
    assert!(
        wet.worst > dry.worst + 0.03,
        "{} against {}",
        wet.worst,
        dry.worst
    );
}

/// The sample: every point outside the domain, on the lattice continuing
/// the fluid's, none past the open top, the count [`box_count`] says;
/// no-slip where any closed face it lies beyond is no-slip.
#[test]
fn box_sample_is_the_lattice_outside_the_domain() {
    let s = 0.1;
    let tank = boxed::<Vec3>([0.0; 3], [0.4, 0.6, 0.3]);
    let mut faces = TankFaces::open_top(Slip::FreeSlip);
    faces.0[0] = spatium::sph::walls::Face::Wall(Slip::NoSlip);
    let w = walls::<Vec3>(tank, s, faces);
    // (4 + 6)(6 + 3)(3 + 6) − 4·6·3 with three layers on five faces.
    assert_eq!(w.len(), 10 * 9 * 9 - 72);
    for (x, st) in w.positions().iter().zip(w.state()) {
        let out: Vec<(usize, bool)> = (0..3)
            .filter_map(|k| {
                let (lo, hi) = (tank.min().coord(k), tank.max().coord(k));
                let c = x.coord(k);
                (c < lo || c > hi).then_some((k, c > hi))
            })
            .collect();
        assert!(!out.is_empty(), "{x:?} inside the domain");
        assert!(!out.contains(&(1, true)), "{x:?} above the open top");
        let frac = |c: f32| (c / s - 0.5).rem_euclid(1.0);
        for k in 0..3 {
            let f = frac(x.coord(k));
            assert!(f.min(1.0 - f) < 1e-3, "{x:?} off the lattice");
        }
        let no_slip = out.contains(&(0, false));
        assert_eq!(st.no_slip == 1, no_slip, "{x:?}");
    }
}

/// Refusals change nothing: a full buffer, another spacing, no layers, a
/// boundary search that is not periodic along the fluid's periodic axis,
/// and the parallel step.
#[test]
fn refusals_change_nothing() {
    let s = 0.05;
    let tank = boxed::<Vec2>([0.0; 3], [0.5, 0.5, 0.0]);
    let faces = TankFaces::closed(Slip::NoSlip);
    let n = box_count::<Vec2>(tank, s, 3, faces).unwrap();
    let mut w: VecWalls<Vec2> = BoundaryParticles::new(
        vec![Vec2::ZERO; n - 1],
        vec![BoundaryState::EMPTY; n - 1],
        search::<Vec2>(n),
    );
    assert!(matches!(
        w.sample_box(tank, s, 3, faces),
        Err(Error::CapacityExceeded { .. })
    ));
    assert!(w.is_empty());
    assert_eq!(
        box_count::<Vec2>(tank, s, 0, faces),
        Err(Error::InvalidConfig { field: "layers" })
    );
    w.push(Vec2::new(-0.025, 0.2), Vec2::ZERO, s, Slip::NoSlip)
        .unwrap();
    assert_eq!(
        w.push(Vec2::new(-0.025, 0.3), Vec2::ZERO, 0.04, Slip::NoSlip),
        Err(Error::InvalidConfig { field: "spacing" })
    );
    assert_eq!(w.len(), 1);
    // A spacing so large that the outer layers overflow `f32` (a fuzz
    // find: the sample used to stop half-way with some walls added).
    let huge = 5.5e37;
    for faces in [faces, TankFaces::closed(Slip::FreeSlip)] {
        assert_eq!(
            box_count::<Vec2>(tank, huge, 50, faces),
            Err(Error::InvalidConfig { field: "spacing" })
        );
        let mut empty: VecWalls<Vec2> = BoundaryParticles::new(
            vec![Vec2::ZERO; 512],
            vec![BoundaryState::EMPTY; 512],
            search::<Vec2>(512),
        );
        assert_eq!(
            empty.sample_box(tank, huge, 50, faces),
            Err(Error::InvalidConfig { field: "spacing" })
        );
        assert!(empty.is_empty());
    }

    // A fluid periodic along x with a boundary search that is not.
    let mut p = SphParams::<Vec2>::water(tank, s, 0.2).unwrap();
    p.periodic = 1;
    let mut f: VecFluid<Vec2> = Fluid::new(vec![Vec2::ZERO; 64], vec![ParticleState::EMPTY; 64], p);
    f.fill_block(boxed::<Vec2>([0.0; 3], [0.5, 0.2, 0.0]), s, Vec2::ZERO)
        .unwrap();
    let before = f.positions().to_vec();
    let mut ns = make::dense::<Vec2>(p.periodic_box().unwrap(), 64, p.h).unwrap();
    assert_eq!(
        f.step(&mut ns, &mut w, &mut ()),
        Err(Error::InvalidConfig { field: "walls" })
    );
    assert_eq!(f.positions(), &before[..]);
}

/// The boundary's density share, as the step adds it, equals the brute-force
/// sum over every boundary particle (the boundary search finds them all).
#[test]
fn boundary_density_equals_the_brute_force_sum() {
    let s = 0.02;
    let tank = boxed::<Vec3>([0.0; 3], [0.2, 0.3, 0.1]);
    let p = SphParams::<Vec3>::water(tank, s, 0.1).unwrap();
    let mut f: VecFluid<Vec3> =
        Fluid::new(vec![Vec3::ZERO; 600], vec![ParticleState::EMPTY; 600], p);
    f.fill_block(boxed::<Vec3>([0.0; 3], [0.2, 0.1, 0.1]), s, Vec3::ZERO)
        .unwrap();
    let mut w = walls::<Vec3>(tank, s, TankFaces::open_top(Slip::NoSlip));
    // One Euler step from rest with no gravity: the step's first
    // evaluation is at the start positions, which do not move.
    let p0 = SphParams {
        integrator: spatium::sph::Integrator::Euler,
        gravity: Vec3::ZERO,
        ..p
    };
    f.set_params(p0).unwrap();
    let x0 = f.positions().to_vec();
    let mut ns = search::<Vec3>(f.len());
    f.step(&mut ns, &mut w, &mut ()).unwrap();
    let k = p0.kernels().unwrap();
    let mb = SphParams::<Vec3>::lattice_mass(p.h, s, p.rest_density).unwrap();
    let mut touched = 0;
    for (i, xi) in x0.iter().enumerate() {
        let fluid: f32 = x0
            .iter()
            .map(|xj| p.mass * k.poly6(xi.distance_squared(*xj)))
            .sum();
        let wall: f32 = w
            .positions()
            .iter()
            .map(|xb| mb * k.poly6(xi.distance_squared(*xb)))
            .sum();
        touched += usize::from(wall > 0.0);
        let got = f.state()[i].density;
        assert!(
            (got - (fluid + wall)).abs() <= 1e-4 * got,
            "particle {i}: {got} vs {fluid} + {wall}"
        );
    }
    assert!(touched > 100, "{touched} particles near the walls");
}

/// Martin and Moyce (1952), the collapse of a water column of width `a` and
/// height `2a` (`n² = 2`, `a` = 2.25 in): the surge front `Z = x/a` at
/// `T = t·√(2g/a)`, as digitised from their figure 3.
const MARTIN_MOYCE: [(f32, f32); 5] = [
    (0.832, 1.217),
    (1.219, 1.474),
    (1.997, 2.292),
    (2.547, 2.995),
    (3.345, 4.134),
];

/// A 2D dam break in an open-top tank `5a` long with no-slip walls: the
/// front `Z(T)` at the experiment's times, by linear interpolation between
/// steps. The front is the rightmost particle plus half a spacing (so
/// `Z(0) = 1`).
fn dam_break_2d(a: f32, per_a: u32, slip: Slip) -> Vec<(f32, f32)> {
    let s = a / per_a as f32;
    let tank = boxed::<Vec2>([0.0; 3], [5.0 * a, 3.0 * a, 0.0]);
    let p = SphParams::<Vec2>::water(tank, s, 2.0 * a).unwrap();
    let column = boxed::<Vec2>([0.0; 3], [a, 2.0 * a, 0.0]);
    let cap = (2 * per_a * per_a) as usize;
    let mut f: VecFluid<Vec2> =
        Fluid::new(vec![Vec2::ZERO; cap], vec![ParticleState::EMPTY; cap], p);
    assert_eq!(f.fill_block(column, s, Vec2::ZERO).unwrap(), cap);
    let mut ns = search::<Vec2>(cap);
    let mut w = walls::<Vec2>(tank, s, TankFaces::open_top(slip));
    let scale = (2.0 * 9.81 / a).sqrt();
    let front =
        |f: &VecFluid<Vec2>| (f.positions().iter().map(|x| x.x).fold(0.0, f32::max) + 0.5 * s) / a;
    let mut out = Vec::new();
    let (mut t, mut z) = (0.0f32, front(&f));
    for &(te, _) in &MARTIN_MOYCE {
        while t * scale < te {
            f.step(&mut ns, &mut w, &mut ()).unwrap();
            let (t1, z1) = (t + p.dt, front(&f));
            if t1 * scale >= te {
                let u = (te / scale - t) / p.dt;
                out.push((te, z + u * (z1 - z)));
            }
            (t, z) = (t1, z1);
        }
    }
    out
}

/// The 2D dam break with no-slip walls against Martin and Moyce: at a/20
/// and a/40 the front lags the experiment (the preset's artificial
/// viscosity, `∝ h`, drags along the floor), and the lag shrinks with the
/// spacing at every time from `T = 2` on; at a/40 it is within 15 %.
/// (a/80 gave −0.8, −3.7, −7.7 % at `T` = 2.0, 2.5, 3.3: see the
/// validation report.)
#[test]
fn dam_break_front_converges_to_the_experiment() {
    let coarse = dam_break_2d(0.1, 20, Slip::NoSlip);
    let fine = dam_break_2d(0.1, 40, Slip::NoSlip);
    assert_eq!(coarse.len(), MARTIN_MOYCE.len());
    assert_eq!(fine.len(), MARTIN_MOYCE.len());
    for (((t, zc), (_, zf)), (_, ze)) in coarse.iter().zip(&fine).zip(MARTIN_MOYCE) {
        let (ec, ef) = (zc / ze - 1.0, zf / ze - 1.0);
        println!(
            "T {t:.3}: a/20 {:+.1} %, a/40 {:+.1} %",
            100.0 * ec,
            100.0 * ef
        );
        assert!(ef.abs() < 0.15, "T {t}: a/40 off by {ef}");
        if *t > 1.9 {
            assert!(ef.abs() < ec.abs(), "T {t}: {ef} at a/40, {ec} at a/20");
        }
    }
}

/// The memory formula: `12d + 12` bytes per slot.
#[test]
fn memory_is_the_formula() {
    use spatium::Inspect;
    let w3: VecWalls<Vec3> = BoundaryParticles::new(
        vec![Vec3::ZERO; 100],
        vec![BoundaryState::EMPTY; 100],
        search::<Vec3>(100),
    );
    assert_eq!(w3.memory_bytes(), 100 * (12 * 3 + 12));
    let w2: VecWalls<Vec2> = BoundaryParticles::new(
        vec![Vec2::ZERO; 100],
        vec![BoundaryState::EMPTY; 100],
        search::<Vec2>(100),
    );
    assert_eq!(w2.memory_bytes(), 100 * (12 * 2 + 12));
    assert_eq!(w2.stats().capacity, 100);
}

/// A solid sampled as boundary particles holds the fluid off: water poured
/// onto a disc of boundary particles ends around it, no particle centre
/// deeper than a quarter spacing into it, and the sample lies inside the
/// disc within its layers. A box sampled and moved by `advance` moves its
/// particles by exactly `v·dt`.
#[test]
fn sampled_solids_hold_the_fluid_off() {
    use spatium::sph::boundary::Shape;
    let s = 0.01;
    let tank = boxed::<Vec2>([0.0; 3], [0.4, 0.4, 0.0]);
    let (centre, radius) = (Vec2::new(0.2, 0.12), 0.06);
    let mut w: VecWalls<Vec2> = BoundaryParticles::new(
        vec![Vec2::ZERO; 2000],
        vec![BoundaryState::EMPTY; 2000],
        search::<Vec2>(2000),
    );
    let disc = Shape::Sphere {
        center: centre,
        radius,
    };
    let n = w
        .sample_shape(&disc, Vec2::ZERO, s, 3, Slip::NoSlip)
        .unwrap();
    assert_eq!(n, w.len());
    // About the annulus' area in lattice cells: π(6² − 3²) ≈ 84.8.
    let annulus = core::f32::consts::PI * (radius * radius - (radius - 3.0 * s).powi(2)) / (s * s);
    assert!(
        (n as f32 - annulus).abs() < 0.1 * annulus,
        "{n} vs {annulus}"
    );
    for x in w.positions() {
        let r = x.distance_squared(centre).sqrt();
        assert!(r <= radius && r > radius - 3.0 * s - 1e-6, "{x:?} at {r}");
    }
    assert_eq!(
        w.sample_shape(
            &Shape::Triangle([Vec2::ZERO, Vec2::new(0.1, 0.0), Vec2::new(0.0, 0.1)]),
            Vec2::ZERO,
            s,
            3,
            Slip::NoSlip
        ),
        Err(Error::InvalidShape)
    );
    let p = SphParams::<Vec2>::water(tank, s, 0.08).unwrap();
    let mut f: VecFluid<Vec2> =
        Fluid::new(vec![Vec2::ZERO; 2000], vec![ParticleState::EMPTY; 2000], p);
    f.fill_block(
        boxed::<Vec2>([0.1, 0.22, 0.0], [0.3, 0.3, 0.0]),
        s,
        Vec2::ZERO,
    )
    .unwrap();
    let mut ns = search::<Vec2>(f.len());
    for _ in 0..(0.6 / p.dt) as usize {
        f.step(&mut ns, &mut w, &mut ()).unwrap();
    }
    let deepest = f
        .positions()
        .iter()
        .map(|x| radius - x.distance_squared(centre).sqrt())
        .fold(f32::MIN, f32::max);
    println!(
        "deepest fluid particle: {:.3} spacings into the disc",
        deepest / s
    );
    assert!(deepest < 0.25 * s, "{deepest}");
    // Some water rests on the disc (not all of it slid off).
    assert!(
        f.positions()
            .iter()
            .any(|x| x.y > centre.y && (x.distance_squared(centre).sqrt() - radius) < 2.0 * s)
    );

    // A moving box.
    let mut m: VecWalls<Vec2> = BoundaryParticles::new(
        vec![Vec2::ZERO; 500],
        vec![BoundaryState::EMPTY; 500],
        search::<Vec2>(500),
    );
    let b = boxed::<Vec2>([0.1, 0.1, 0.0], [0.2, 0.15, 0.0]);
    let v = Vec2::new(0.5, -0.25);
    let k = m
        .sample_shape(&Shape::Box(b), v, s, 2, Slip::FreeSlip)
        .unwrap();
    // 10 × 5 lattice points, all but the 6 × 1 core within two layers.
    assert_eq!(k, 50 - 6);
    let before = m.positions().to_vec();
    m.advance(0.1).unwrap();
    for (a, b) in before.iter().zip(m.positions()) {
        assert_eq!(*b, *a + v * 0.1);
    }
    assert_eq!(m.advance(f32::NAN), Err(Error::NonFinite));
}

/// The parallel step with walls and an obstacle: the same fluid bit for bit
/// for 1, 2, 3 and 8 workers, and within rounding of the serial step after
/// a few steps of a collapsing column.
#[test]
fn parallel_step_with_walls_is_deterministic_and_matches_serial() {
    use spatium::sph::GatherSlot;
    use spatium::sph::boundary::Shape;
    use spatium_host::par::HostExec;
    let s = 0.01;
    let tank = boxed::<Vec2>([0.0; 3], [0.3, 0.3, 0.0]);
    let p = SphParams::<Vec2>::water(tank, s, 0.2).unwrap();
    let start = |w: &mut VecWalls<Vec2>| {
        let mut f: VecFluid<Vec2> =
            Fluid::new(vec![Vec2::ZERO; 800], vec![ParticleState::EMPTY; 800], p);
        f.fill_block(boxed::<Vec2>([0.0; 3], [0.1, 0.2, 0.0]), s, Vec2::ZERO)
            .unwrap();
        let disc = Shape::Sphere {
            center: Vec2::new(0.2, 0.05),
            radius: 0.04,
        };
        w.sample_shape(&disc, Vec2::ZERO, s, 3, Slip::FreeSlip)
            .unwrap();
        f
    };
    let steps = 200;
    let run_par = |threads: usize| {
        let mut w = walls_and_room::<Vec2>(tank, s, TankFaces::open_top(Slip::NoSlip), 200);
        let mut f = start(&mut w);
        let mut ns = search::<Vec2>(f.len());
        let mut work = vec![GatherSlot::EMPTY; f.len()];
        let exec = HostExec::new(threads);
        for _ in 0..steps {
            f.par_step(&exec, &mut ns, &mut w, &mut (), &mut work)
                .unwrap();
        }
        f
    };
    let one = run_par(1);
    for threads in [2, 3, 8] {
        let other = run_par(threads);
        assert!(
            one.positions() == other.positions() && one.state() == other.state(),
            "{threads} workers differ from one"
        );
    }
    let mut w = walls_and_room::<Vec2>(tank, s, TankFaces::open_top(Slip::NoSlip), 200);
    let mut serial = start(&mut w);
    let mut ns = search::<Vec2>(serial.len());
    for _ in 0..steps {
        serial.step(&mut ns, &mut w, &mut ()).unwrap();
    }
    let worst = one
        .positions()
        .iter()
        .zip(serial.positions())
        .map(|(a, b)| a.distance_squared(*b).sqrt())
        .fold(0.0f32, f32::max);
    println!(
        "parallel vs serial after {steps} steps: {:.2e} spacings",
        worst / s
    );
    assert!(worst < 1e-3 * s, "{worst}");
    // The walls acted: the column's foot has spread along the floor.
    assert!(one.positions().iter().any(|x| x.x > 0.105));
}

/// The walls' hooks with only the serial forms: `ParCollider`'s provided
/// `par_add_boundary_*` run them on the calling thread.
struct SerialHooks<C>(C);

mod serial_hooks {
    use super::SerialHooks;
    use spatium::sph::boundary::{Collider, ParCollider};
    use spatium::sph::kernel::Kernels;
    use spatium::sph::{ParticleState, SphParams};
    use spatium::{Error, PeriodicBox, Point, exec::Executor};

    impl<P: Point, C: Collider<P>> Collider<P> for SerialHooks<C> {
        fn collide(
            &mut self,
            x: &mut P,
            v: &mut P,
            radius: f32,
            damping: f32,
            walls: &P::Aabb,
        ) -> Result<(), Error> {
            self.0.collide(x, v, radius, damping, walls)
        }
        fn boundary_particles(&self) -> usize {
            self.0.boundary_particles()
        }
        fn add_boundary_density(
            &mut self,
            x: &[P],
            st: &mut [ParticleState<P>],
            k: &Kernels,
            p: &SphParams<P>,
            period: &PeriodicBox<P>,
        ) -> Result<(), Error> {
            self.0.add_boundary_density(x, st, k, p, period)
        }
        fn update_boundary(
            &mut self,
            x: &[P],
            st: &[ParticleState<P>],
            k: &Kernels,
            p: &SphParams<P>,
            period: &PeriodicBox<P>,
        ) -> Result<(), Error> {
            self.0.update_boundary(x, st, k, p, period)
        }
        fn add_boundary_forces(
            &mut self,
            x: &[P],
            st: &mut [ParticleState<P>],
            k: &Kernels,
            p: &SphParams<P>,
            period: &PeriodicBox<P>,
        ) -> Result<(), Error> {
            self.0.add_boundary_forces(x, st, k, p, period)
        }
    }

    impl<P: Point, C: ParCollider<P>> ParCollider<P> for SerialHooks<C> {
        fn par_collide<E: Executor>(
            &mut self,
            exec: &E,
            x: &mut [P],
            state: &mut [ParticleState<P>],
            radius: f32,
            damping: f32,
            walls: &P::Aabb,
        ) -> Result<(), Error> {
            self.0.par_collide(exec, x, state, radius, damping, walls)
        }
    }
}

/// The walls' density share and forces as gathers in tasks: a fluid of
/// 4 800 particles (several tasks per pass) gives the same bits for 1, 2, 3
/// and 8 workers as the same parallel step with the serial hooks.
#[test]
fn parallel_boundary_gathers_equal_the_serial_hooks() {
    use spatium::sph::GatherSlot;
    use spatium_host::par::HostExec;
    let s = 0.005;
    let tank = boxed::<Vec2>([0.0; 3], [0.6, 0.6, 0.0]);
    let p = SphParams::<Vec2>::water(tank, s, 0.4).unwrap();
    let cap = 5000;
    let start = || {
        let mut f: VecFluid<Vec2> =
            Fluid::new(vec![Vec2::ZERO; cap], vec![ParticleState::EMPTY; cap], p);
        f.fill_block(boxed::<Vec2>([0.0; 3], [0.3, 0.4, 0.0]), s, Vec2::ZERO)
            .unwrap();
        f
    };
    assert!(start().len() >= 4 * 1024, "{} particles", start().len());
    let steps = 15;
    let run = |threads: usize, serial_hooks: bool| {
        let mut w = walls_and_room::<Vec2>(tank, s, TankFaces::open_top(Slip::NoSlip), 0);
        let mut f = start();
        let mut ns = search::<Vec2>(f.len());
        let mut work = vec![GatherSlot::EMPTY; f.len()];
        let exec = HostExec::new(threads);
        for _ in 0..steps {
            if serial_hooks {
                f.par_step(&exec, &mut ns, &mut SerialHooks(&mut w), &mut (), &mut work)
            } else {
                f.par_step(&exec, &mut ns, &mut w, &mut (), &mut work)
            }
            .unwrap();
        }
        f
    };
    let reference = run(2, true);
    for threads in [1, 2, 3, 8] {
        let f = run(threads, false);
        assert!(
            f.positions() == reference.positions() && f.state() == reference.state(),
            "{threads} workers: the parallel boundary gathers differ from the serial hooks"
        );
    }
}
