//! The SPH kernels (`spatium::sph::kernel`) against their defining
//! properties, in 3D and 2D: normalisation (numerical integrals ≈ 1), the
//! gradients against finite differences of the kernels, the viscosity
//! Laplacian against the numerical Laplacian of the viscosity kernel and its
//! second moment `2d`, and the cohesion spline's shape and integral.

use spatium::sph::kernel::Kernels;
use spatium::{Point, Vec2, Vec3};

const H: f32 = 0.7;

/// `∫₀ʰ f(r)·ω_d·r^(d−1) dr` by the midpoint rule in `f64` (ω: 4π or 2π).
fn radial_integral(dim: usize, f: impl Fn(f64) -> f64) -> f64 {
    let steps = 200_000;
    let dr = f64::from(H) / steps as f64;
    let shell = |r: f64| {
        if dim == 3 {
            4.0 * core::f64::consts::PI * r * r
        } else {
            2.0 * core::f64::consts::PI * r
        }
    };
    (0..steps)
        .map(|i| {
            let r = (i as f64 + 0.5) * dr;
            f(r) * shell(r) * dr
        })
        .sum()
}

/// The same integral as a Cartesian lattice sum (no radial symmetry
/// assumed): the kernel summed over a grid of spacing `h/60` times the cell
/// volume.
fn lattice_integral<P: Point>(f: impl Fn(P) -> f64) -> f64 {
    let n = 60i32;
    let s = H / n as f32;
    let mut sum = 0.0;
    let zs = if P::DIM == 3 { -n..=n } else { 0..=0 };
    for z in zs {
        for y in -n..=n {
            for x in -n..=n {
                let idx = [x, y, z];
                sum += f(P::from_fn(|k| idx[k] as f32 * s));
            }
        }
    }
    sum * f64::from(s).powi(P::DIM as i32)
}

fn normalised<P: Point>() {
    let k = Kernels::new::<P>(H).unwrap();
    let d = P::DIM;
    let poly6 = radial_integral(d, |r| f64::from(k.poly6((r * r) as f32)));
    let spiky = radial_integral(d, |r| f64::from(k.spiky(r as f32)));
    let visc = radial_integral(d, |r| f64::from(k.viscosity(r as f32)));
    for (name, v) in [("poly6", poly6), ("spiky", spiky), ("viscosity", visc)] {
        assert!((v - 1.0).abs() < 1e-3, "{name} {d}D integrates to {v}");
    }
    let grid = lattice_integral::<P>(|p| f64::from(k.poly6(p.dot(p))));
    assert!((grid - 1.0).abs() < 2e-3, "poly6 {d}D lattice sum {grid}");
    let grid = lattice_integral::<P>(|p| f64::from(k.spiky(p.dot(p).sqrt())));
    assert!((grid - 1.0).abs() < 1e-2, "spiky {d}D lattice sum {grid}");
}

#[test]
fn kernels_are_normalised() {
    normalised::<Vec3>();
    normalised::<Vec2>();
}

/// Gradients against central differences along a few directions and radii.
fn gradients<P: Point>() {
    let k = Kernels::new::<P>(H).unwrap();
    let eps = 1e-3f64;
    for &q in &[0.1f32, 0.3, 0.55, 0.8, 0.97] {
        for dir in 0..4 {
            let u = P::from_fn(|a| {
                [
                    [1.0, 0.0, 0.0],
                    [0.6, 0.8, 0.0],
                    [0.0, 0.6, 0.8],
                    [0.48, 0.6, 0.64],
                ][dir][a]
            });
            let u = u * (1.0 / u.dot(u).sqrt());
            let r = u * (q * H);
            let r2 = r.dot(r);
            let len = r2.sqrt();
            let g6 = k.poly6_gradient(r, r2);
            let gs = k.spiky_gradient(r, len);
            for a in 0..P::DIM {
                let e = P::from_fn(|b| if a == b { eps as f32 } else { 0.0 });
                let (p, m) = (r + e, r - e);
                let fd6 =
                    (f64::from(k.poly6(p.dot(p))) - f64::from(k.poly6(m.dot(m)))) / (2.0 * eps);
                let fds = (f64::from(k.spiky(p.dot(p).sqrt()))
                    - f64::from(k.spiky(m.dot(m).sqrt())))
                    / (2.0 * eps);
                let scale6 = f64::from(k.poly6(0.0)) / f64::from(H);
                let scales = f64::from(k.spiky(0.0)) / f64::from(H);
                assert!(
                    (f64::from(g6.coord(a)) - fd6).abs() < 2e-3 * scale6,
                    "poly6 gradient {}D q={q} axis {a}: {} vs {fd6}",
                    P::DIM,
                    g6.coord(a)
                );
                assert!(
                    (f64::from(gs.coord(a)) - fds).abs() < 2e-3 * scales,
                    "spiky gradient {}D q={q} axis {a}: {} vs {fds}",
                    P::DIM,
                    gs.coord(a)
                );
            }
        }
    }
    // Outside the support and at coincident points: zero.
    let out = P::from_fn(|a| if a == 0 { H } else { 0.0 });
    assert_eq!(k.poly6_gradient(out, H * H), P::ZERO);
    assert_eq!(k.spiky_gradient(out, H), P::ZERO);
    assert_eq!(k.spiky_gradient(P::ZERO, 0.0), P::ZERO);
}

#[test]
fn gradients_match_finite_differences() {
    gradients::<Vec3>();
    gradients::<Vec2>();
}

/// `∇²W = W'' + (d−1)/r·W'` of the viscosity kernel, by finite differences
/// in `f64` of the `f32` kernel, against eq. 4; and the second moment
/// `∫ r²∇²W dV = 2d` that makes the discrete Laplacian exact for `x²`.
fn laplacian<P: Point>() {
    let k = Kernels::new::<P>(H).unwrap();
    let d = P::DIM as f64;
    let w = |r: f64| f64::from(k.viscosity(r as f32));
    let e = 2e-2 * f64::from(H);
    for &q in &[0.2f64, 0.4, 0.6, 0.8, 0.9] {
        let r = q * f64::from(H);
        let d1 = (w(r + e) - w(r - e)) / (2.0 * e);
        let d2 = (w(r + e) - 2.0 * w(r) + w(r - e)) / (e * e);
        let numeric = d2 + (d - 1.0) / r * d1;
        let lap = f64::from(k.viscosity_laplacian(r as f32));
        if P::DIM == 3 {
            assert!(
                (numeric - lap).abs() < 2e-2 * lap.abs(),
                "3D viscosity Laplacian at q={q}: {lap} vs numeric {numeric}"
            );
        }
        assert!(lap > 0.0);
    }
    let moment = radial_integral(P::DIM, |r| {
        r * r * f64::from(k.viscosity_laplacian(r as f32))
    });
    assert!(
        (moment - 2.0 * d).abs() < 1e-3,
        "{}D second moment {moment}",
        P::DIM
    );
    assert_eq!(k.viscosity_laplacian(H), 0.0);
}

#[test]
fn viscosity_laplacian_is_consistent() {
    laplacian::<Vec3>();
    laplacian::<Vec2>();
}

fn cohesion<P: Point>() {
    let k = Kernels::new::<P>(H).unwrap();
    // Continuous at h/2, zero at and beyond h, repulsive below 0.273h.
    let half = 0.5 * H;
    let below = k.cohesion(half * (1.0 - 1e-6));
    let above = k.cohesion(half * (1.0 + 1e-6));
    assert!((below - above).abs() < 1e-4 * above, "{below} vs {above}");
    assert_eq!(k.cohesion(H), 0.0);
    assert_eq!(k.cohesion(2.0 * H), 0.0);
    assert!(k.cohesion(0.2 * H) < 0.0);
    assert!(k.cohesion(0.3 * H) > 0.0);
    let integral = radial_integral(P::DIM, |r| f64::from(k.cohesion(r as f32)));
    assert!(
        (integral - 79.0 / 336.0).abs() < 1e-4,
        "{}D cohesion integral {integral}",
        P::DIM
    );
}

#[test]
fn cohesion_spline() {
    cohesion::<Vec3>();
    cohesion::<Vec2>();
}

#[test]
fn bad_support_is_refused() {
    for h in [0.0, -1.0, f32::NAN, f32::INFINITY, 1e-6, 1e30] {
        assert!(Kernels::new::<Vec3>(h).is_err(), "h = {h}");
    }
    assert!(Kernels::new::<Vec2>(1e-6).is_err());
    assert!(Kernels::new::<Vec3>(1e-3).is_ok());
}
