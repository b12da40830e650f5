//! The SPH step in a periodic domain: the Taylor–Green vortex against its
//! analytic decay, conservation across the faces, the serial and parallel
//! steps agreeing, and a search that does not match the domain refused.

use spatium::sph::{Fluid, ParticleState};
use spatium::{Aabb2, Error, Point, Vec2};
use spatium_host::make::{self, VecDense};
use spatium_host_tests::flows::viscous_params;

const L: f32 = 1.0;
const U: f32 = 1.0;
/// Kinematic viscosity: Reynolds number `UL/ν = 100`.
const NU: f32 = 0.01;

type F2 = Fluid<Vec2, Vec<Vec2>, Vec<ParticleState<Vec2>>>;

/// The two periodic flows with an analytic viscous decay.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Flow {
    /// A shear wave `u = U sin(ky)`, `v = 0`: layers sliding along x, the
    /// pressure uniform; the amplitude decays as `exp(−νk²t)`.
    ShearWave,
    /// The Taylor–Green vortex `u = U sin(kx) cos(ky)`,
    /// `v = −U cos(kx) sin(ky)`; the amplitude decays as `exp(−2νk²t)`.
    TaylorGreen,
}

const K: f32 = 2.0 * core::f32::consts::PI / L;

impl Flow {
    /// The flow's velocity mode at `x` (unit amplitude).
    fn mode(self, x: Vec2) -> Vec2 {
        match self {
            Flow::ShearWave => Vec2::new((K * x.y).sin(), 0.0),
            Flow::TaylorGreen => Vec2::new(
                (K * x.x).sin() * (K * x.y).cos(),
                -(K * x.x).cos() * (K * x.y).sin(),
            ),
        }
    }

    /// The analytic decay rate of the amplitude.
    fn rate(self) -> f32 {
        match self {
            Flow::ShearWave => NU * K * K,
            Flow::TaylorGreen => 2.0 * NU * K * K,
        }
    }
}

/// `flow` with `n × n` particles in the unit box, periodic along both
/// axes: water-like density, weakly compressible (`c = 10U`, Tait, negative
/// pressures kept), no gravity, no surface tension, `h = 4·spacing` (at the
/// seed's `h = 2·spacing` the viscous term's lattice sum is 15 % weak; see
/// the note in `shear_wave_decays_at_the_analytic_rate`), `Δt = h/(4c)`.
fn periodic_flow(flow: Flow, n: usize, h_over_s: f32) -> (F2, VecDense<Vec2>) {
    let s = L / n as f32;
    let domain = Aabb2::new(Vec2::ZERO, Vec2::new(L, L)).unwrap();
    // Δt = h/(4c): the viscous bound h²/(8ν) is far larger here.
    let mut p = viscous_params(domain, s, h_over_s, 10.0 * U, NU, Vec2::ZERO).unwrap();
    p.periodic = 0b11;
    let mut f = Fluid::new(
        vec![Vec2::ZERO; n * n],
        vec![ParticleState::EMPTY; n * n],
        p,
    );
    for j in 0..n {
        for i in 0..n {
            let x = Vec2::new((i as f32 + 0.5) * s, (j as f32 + 0.5) * s);
            f.push(x, flow.mode(x) * U).unwrap();
        }
    }
    let grid = make::dense(p.periodic_box().unwrap(), n * n, p.h).unwrap();
    (f, grid)
}

/// The amplitude of `flow`'s mode in the particles' velocities (a least
/// squares fit of `A·mode(x)` to `v`).
fn amplitude(flow: Flow, f: &F2) -> f32 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (x, s) in f.positions().iter().zip(f.state()) {
        let m = flow.mode(*x);
        num += f64::from(s.velocity.dot(m));
        den += f64::from(m.dot(m));
    }
    (num / den) as f32
}

/// The relative error of the decay rate of `flow` over half a second, at
/// `n × n` particles.
fn decay_error(flow: Flow, n: usize, h_over_s: f32) -> f32 {
    let (mut f, mut grid) = periodic_flow(flow, n, h_over_s);
    let a0 = amplitude(flow, &f);
    let steps = (0.5 / f.params().dt).round() as usize;
    for _ in 0..steps {
        f.step(&mut grid, &mut (), &mut ()).unwrap();
    }
    // Every particle stayed in the box.
    let d = f.params().periodic_box().unwrap();
    assert!(f.positions().iter().all(|&x| d.contains_wrapped(x)));
    let t = steps as f32 * f.params().dt;
    let measured = -(amplitude(flow, &f) / a0).ln() / t;
    let err = (measured - flow.rate()) / flow.rate();
    println!(
        "{flow:?} n = {n}, h = {h_over_s}·spacing: decay rate {measured:.4}/s, analytic {:.4}/s, error {:+.1} %",
        flow.rate(),
        err * 100.0
    );
    err
}

/// The shear wave decays at the analytic rate within 5 % at 24², 32² and
/// 48² particles, the error not growing as the spacing shrinks. Measured
/// (`cargo test --profile ci -p spatium-host-tests --test suite -- sph_periodic::
/// --nocapture`): −4.5 %, −3.6 %, −2.2 %. At `h = 2·spacing` the error is
/// −15 % at every resolution, a bias of the viscosity kernel's sum over so
/// few neighbours, not of the periodic domain.
#[test]
fn shear_wave_decays_at_the_analytic_rate() {
    let errors: Vec<f32> = [24, 32, 48]
        .into_iter()
        .map(|n| decay_error(Flow::ShearWave, n, 4.0))
        .collect();
    assert!(errors.iter().all(|e| e.abs() < 0.05), "{errors:?}");
    assert!(errors[2].abs() <= errors[0].abs(), "{errors:?}");
}

/// The Taylor–Green vortex decays faster than the analytic rate: the
/// pressure field disorders the particles, and plain weakly compressible
/// SPH has no particle shifting to undo it (an inviscid vortex loses
/// 20–100 % of the analytic viscous rate by itself). Measured: +52 %,
/// +39 %, +21 % at 24², 32², 48²: the error shrinks with the spacing. The
/// test holds that convergence, and the bound, so neither can regress
/// unnoticed.
#[test]
fn taylor_green_vortex_decay_converges_towards_the_analytic_rate() {
    let errors: Vec<f32> = [24, 32, 48]
        .into_iter()
        .map(|n| decay_error(Flow::TaylorGreen, n, 4.0))
        .collect();
    assert!(errors.iter().all(|&e| e > 0.0 && e < 0.6), "{errors:?}");
    assert!(errors[0] > errors[1] && errors[1] > errors[2], "{errors:?}");
}

/// A block moving through the faces: momentum is conserved exactly up to
/// rounding (no walls act), and every particle stays in the box.
#[test]
fn momentum_is_conserved_across_the_faces() {
    let (mut f, mut grid) = periodic_flow(Flow::TaylorGreen, 16, 4.0);
    // A uniform drift on top of the vortex.
    for id in 0..f.len() as u32 {
        let (x, v) = (f.positions()[id as usize], f.state()[id as usize].velocity);
        f.set(id, x, v + Vec2::new(3.0, -2.0)).unwrap();
    }
    let m0 = f.momentum();
    for _ in 0..200 {
        f.step(&mut grid, &mut (), &mut ()).unwrap();
    }
    let m1 = f.momentum();
    let scale = f.len() as f64 * f.params().mass as f64 * 3.0;
    for k in 0..2 {
        assert!((m1[k] - m0[k]).abs() < 1e-4 * scale, "{m0:?} -> {m1:?}");
    }
    let d = f.params().periodic_box().unwrap();
    assert!(f.positions().iter().all(|&x| d.contains_wrapped(x)));
}

/// The parallel step gives the serial step's particles (to rounding: the
/// gather sums in another order).
#[test]
fn the_parallel_step_matches_the_serial_one() {
    use spatium_host::par::Threads;
    let (mut a, mut ga) = periodic_flow(Flow::TaylorGreen, 20, 4.0);
    let (mut b, mut gb) = periodic_flow(Flow::TaylorGreen, 20, 4.0);
    let pool = Threads::new(2);
    let mut work = vec![Default::default(); b.len()];
    for _ in 0..20 {
        a.step(&mut ga, &mut (), &mut ()).unwrap();
        b.par_step(&pool, &mut gb, &mut (), &mut (), &mut work)
            .unwrap();
    }
    let d = a.params().periodic_box().unwrap();
    for (x, y) in a.positions().iter().zip(b.positions()) {
        assert!(d.distance_squared(*x, *y) < 1e-10, "{x:?} {y:?}");
    }
}

/// A step whose search is not periodic in the fluid's box is refused and
/// changes nothing; so is a search periodic along other axes than the
/// fluid's domain.
#[test]
fn a_search_of_another_domain_is_refused() {
    let (mut f, _) = periodic_flow(Flow::TaylorGreen, 16, 4.0);
    let n = f.len();
    let before = f.positions().to_vec();
    let mut plain = make::cell_sorted::<Vec2>(n, 1024);
    assert_eq!(
        f.step(&mut plain, &mut (), &mut ()),
        Err(Error::InvalidConfig { field: "periodic" })
    );
    assert_eq!(f.positions(), &before[..]);
    let mut p = *f.params();
    p.periodic = 0b01;
    f.set_params(p).unwrap();
    let mut grid = make::dense(
        spatium::PeriodicBox::all(Vec2::ZERO, Vec2::new(L, L)).unwrap(),
        n,
        p.h,
    )
    .unwrap();
    assert_eq!(
        f.step(&mut grid, &mut (), &mut ()),
        Err(Error::InvalidConfig { field: "periodic" })
    );
    assert_eq!(f.positions(), &before[..]);
    p.periodic = 0b100;
    assert_eq!(f.set_params(p), Err(Error::InvalidConfig { field: "axes" }));
}
