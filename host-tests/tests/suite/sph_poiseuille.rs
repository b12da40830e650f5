//! Plane Poiseuille flow: the SPH step in a channel periodic along x,
//! between no-slip walls of boundary particles, driven from rest by a body
//! force, against the analytic start-up solution at several times and three
//! resolutions.
//!
//! `cargo test --profile ci -p spatium-host-tests --test suite -- sph_poiseuille::
//! --nocapture` prints the figures.

use spatium::sph::walls::{BoundaryParticles, BoundaryState, Face, Slip, TankFaces, box_count};
use spatium::sph::{Fluid, ParticleState};
use spatium::{Aabb2, PeriodicBox, Vec2};
use spatium_host::make::{self, VecDense};
use spatium_host_tests::flows::viscous_params;

/// Channel width (along y) and period (along x).
const D: f32 = 1.0;
/// Kinematic viscosity.
const NU: f32 = 0.1;
/// Centre-line speed of the steady flow; the body force follows from it.
const U_MAX: f32 = 1.0;
/// Body force (an acceleration along x): `u_max = F·D²/(8ν)`. Reynolds
/// number `U_MAX·D/ν = 10`.
const FORCE: f32 = 8.0 * NU * U_MAX / (D * D);
/// Times at which the profile is compared, in seconds (the slowest mode
/// decays with `τ = D²/(π²ν) ≈ 1.01 s`).
const TIMES: [f32; 6] = [0.1, 0.3, 0.6, 1.2, 2.4, 4.0];

type F2 = Fluid<Vec2, Vec<Vec2>, Vec<ParticleState<Vec2>>>;
type Walls = BoundaryParticles<Vec2, Vec<Vec2>, Vec<BoundaryState<Vec2>>, VecDense<Vec2>>;

/// The start-up solution from rest: the steady parabola less the decaying
/// sine modes of its Fourier series (odd `m` only).
fn analytic(y: f64, t: f64) -> f64 {
    let (d, nu, f) = (f64::from(D), f64::from(NU), f64::from(FORCE));
    let pi = core::f64::consts::PI;
    let steady = f / (2.0 * nu) * y * (d - y);
    let transient: f64 = (0..200)
        .map(|n| {
            let m = f64::from(2 * n + 1);
            4.0 * f * d * d / (nu * pi.powi(3) * m.powi(3))
                * (m * pi * y / d).sin()
                * (-m * m * pi * pi * nu * t / (d * d)).exp()
        })
        .sum();
    steady - transient
}

/// `n` particles across the channel (and `n` along its period), `h =
/// 4·spacing` as in the periodic validation (at the presets' `2·spacing`
/// the viscous term's lattice sum is 15 % weak: `sph_periodic`), walls of
/// `⌈h/spacing + ½⌉` layers, no-slip.
fn channel(n: usize) -> (F2, VecDense<Vec2>, Walls) {
    let s = D / n as f32;
    let domain = Aabb2::new(Vec2::ZERO, Vec2::new(D, D)).unwrap();
    let mut p = viscous_params(domain, s, 4.0, 10.0 * U_MAX, NU, Vec2::new(FORCE, 0.0)).unwrap();
    // Negative pressures clamped: the channel's mean pressure is zero (no
    // background pressure), and with tension kept the sheared lattice
    // clumps (measured: at 24 across, the profile breaks up between 1.2 and
    // 2.4 s, particles thrown across the channel at 1.5·u_max).
    p.clamp_negative_pressure = true;
    p.periodic = 0b01;
    let mut f = Fluid::new(
        vec![Vec2::ZERO; n * n],
        vec![ParticleState::EMPTY; n * n],
        p,
    );
    assert_eq!(f.fill_block(domain, s, Vec2::ZERO).unwrap(), n * n);
    let grid = make::dense(p.periodic_box().unwrap(), n * n, p.h).unwrap();

    let layers = (p.h / s + 0.5).ceil() as u32;
    let wall = Face::Wall(Slip::NoSlip);
    let faces = TankFaces([Face::Open, Face::Open, wall, wall, Face::Open, Face::Open]);
    let count = box_count::<Vec2>(domain, s, layers, faces).unwrap();
    assert_eq!(count, 2 * n * layers as usize);
    let reach = layers as f32 * s;
    let around = PeriodicBox::new(Vec2::new(0.0, -reach), Vec2::new(D, D + reach), 0b01).unwrap();
    let mut walls = BoundaryParticles::new(
        vec![Vec2::ZERO; count],
        vec![BoundaryState::EMPTY; count],
        make::dense(around, count, p.h).unwrap(),
    );
    assert_eq!(walls.sample_box(domain, s, layers, faces).unwrap(), count);
    (f, grid, walls)
}

/// The profile's error: the largest `|ū − u(ȳ)|` over the `n` layers of
/// width `spacing` across the channel (`ū`, `ȳ` the layer's mean speed
/// along x and mean height), over `U_MAX`; and the largest `|v_y|` over
/// `U_MAX`.
fn profile_error(f: &F2, n: usize, t: f32) -> (f32, f32) {
    let s = D / n as f32;
    let mut sums = vec![(0.0f64, 0.0f64, 0usize); n];
    let mut across = 0.0f32;
    for (x, st) in f.positions().iter().zip(f.state()) {
        let j = ((x.y / s) as usize).min(n - 1);
        sums[j].0 += f64::from(st.velocity.x);
        sums[j].1 += f64::from(x.y);
        sums[j].2 += 1;
        across = across.max(st.velocity.y.abs());
    }
    let worst = sums
        .iter()
        .filter(|l| l.2 > 0)
        .map(|&(u, y, k)| {
            let (u, y) = (u / k as f64, y / k as f64);
            (u - analytic(y, f64::from(t))).abs()
        })
        .fold(0.0f64, f64::max);
    (worst as f32 / U_MAX, across / U_MAX)
}

/// Runs the channel with `n` particles across to each of [`TIMES`] and
/// returns the profile error there.
fn run(n: usize) -> Vec<f32> {
    let (mut f, mut grid, mut walls) = channel(n);
    let dt = f.params().dt;
    let mut errors = Vec::new();
    let mut steps = 0usize;
    for t in TIMES {
        let until = (t / dt).round() as usize;
        while steps < until {
            f.step(&mut grid, &mut walls, &mut ()).unwrap();
            steps += 1;
        }
        let at = steps as f32 * dt;
        let (err, across) = profile_error(&f, n, at);
        let centre = analytic(f64::from(D) / 2.0, f64::from(at));
        println!(
            "n = {n}, t = {at:.3} s: centre-line analytic {centre:.4}, worst layer off by {:.2} % of u_max, |v_y| ≤ {:.2} % of u_max",
            err * 100.0,
            across * 100.0
        );
        errors.push(err);
    }
    // Every particle stayed between the walls.
    assert!(
        f.positions()
            .iter()
            .all(|x| x.y > 0.0 && x.y < D && x.x >= 0.0 && x.x < D)
    );
    errors
}

/// The start-up profile matches the analytic solution at every layer and
/// every compared time (up to 4 s, 98 % of the steady centre-line speed):
/// within 6 % of the centre-line speed at 16 particles across the channel
/// and within 3 % at 32 and 48, the worst error shrinking as the spacing
/// does. Measured: 5.4 / 3.2 / 2.5 / 2.3 % at 16 / 24 / 32 / 48 across.
/// The profile runs about 1 % fast at every layer (the viscous term's
/// lattice sum, as in `sph_periodic`'s shear wave) and the layer next to
/// each wall about 2 % fast (slip at the boundary particles).
#[test]
fn poiseuille_start_up_matches_the_analytic_profile() {
    let worst: Vec<f32> = [16, 24, 32, 48]
        .into_iter()
        .map(|n| run(n).into_iter().fold(0.0, f32::max))
        .collect();
    println!("worst layer error per resolution (16, 24, 32, 48 across): {worst:?}");
    assert!(worst[0] < 0.06, "{worst:?}");
    assert!(worst[2] < 0.03 && worst[3] < 0.03, "{worst:?}");
    assert!(worst.windows(2).all(|w| w[1] <= w[0]), "{worst:?}");
}
