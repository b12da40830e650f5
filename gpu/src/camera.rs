//! [`OrbitCamera`]: a perspective camera circling a target point, with the
//! view-projection matrix in wgpu's clip space. Plain `f32` arithmetic, no
//! dependencies, the same on every target (native and `wasm32`).

use spatium::{Aabb3, BoundingBox};

/// Largest pitch magnitude, short of the poles (89°), where the view's up
/// vector would be undefined.
pub const MAX_PITCH: f32 = 89.0 * core::f32::consts::PI / 180.0;
/// Smallest vertical field of view accepted (1°).
pub const MIN_FOV_Y: f32 = core::f32::consts::PI / 180.0;
/// Largest vertical field of view accepted (170°).
pub const MAX_FOV_Y: f32 = 170.0 * core::f32::consts::PI / 180.0;

/// A camera orbiting `target` at `distance`, turned by `yaw` about the
/// vertical (`+y`) axis and raised by `pitch` above the horizontal plane.
///
/// With `yaw = 0` and `pitch = 0` the eye sits on the `+z` side of the
/// target and looks along `−z`, `x` to the right and `y` up (the front view
/// of [`render::render_density`](crate::render::render_density)); positive
/// yaw moves the eye towards `+x`, positive pitch above the target.
///
/// Angles are in radians, lengths in the scene's units. Every method
/// tolerates degenerate fields (zero, negative or non-finite): they are
/// replaced by usable values where they are used, so the matrix has no NaN
/// as long as `target` is finite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrbitCamera {
    /// The point looked at and orbited.
    pub target: [f32; 3],
    /// Rotation about `+y`, radians.
    pub yaw: f32,
    /// Elevation above the horizontal plane, radians, within
    /// `±`[`MAX_PITCH`].
    pub pitch: f32,
    /// Distance from the eye to `target`, within
    /// `min_distance..=max_distance`.
    pub distance: f32,
    /// Vertical field of view, radians.
    pub fov_y: f32,
    /// Near clipping distance, `> 0`.
    pub near: f32,
    /// Far clipping distance, `> near`.
    pub far: f32,
    /// Smallest distance [`zoom`](Self::zoom) allows.
    pub min_distance: f32,
    /// Largest distance [`zoom`](Self::zoom) allows.
    pub max_distance: f32,
}

impl Default for OrbitCamera {
    /// A camera 5 units from the origin, slightly from the right and above,
    /// 45° field of view.
    fn default() -> Self {
        Self {
            target: [0.0; 3],
            yaw: 0.6,
            pitch: 0.4,
            distance: 5.0,
            fov_y: core::f32::consts::FRAC_PI_4,
            near: 0.05,
            far: 100.0,
            min_distance: 0.1,
            max_distance: 50.0,
        }
    }
}

type V3 = [f32; 3];

fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn normalize(a: V3) -> V3 {
    let n = dot(a, a).sqrt();
    if n > 0.0 && n.is_finite() {
        [a[0] / n, a[1] / n, a[2] / n]
    } else {
        [0.0, 0.0, 1.0]
    }
}

/// `x` if finite, else `fallback`.
fn finite_or(x: f32, fallback: f32) -> f32 {
    if x.is_finite() { x } else { fallback }
}

/// `a · b` for column-major 4×4 matrices.
pub fn mul(a: &[[f32; 4]; 4], b: &[[f32; 4]; 4]) -> [[f32; 4]; 4] {
    let mut m = [[0.0; 4]; 4];
    for (c, col) in m.iter_mut().enumerate() {
        for (r, v) in col.iter_mut().enumerate() {
            *v = (0..4).map(|k| a[k][r] * b[c][k]).sum();
        }
    }
    m
}

/// `m · (p, 1)` for a column-major 4×4 matrix: clip coordinates of `p`.
pub fn transform(m: &[[f32; 4]; 4], p: [f32; 3]) -> [f32; 4] {
    let mut out = [0.0; 4];
    for (r, o) in out.iter_mut().enumerate() {
        *o = m[0][r] * p[0] + m[1][r] * p[1] + m[2][r] * p[2] + m[3][r];
    }
    out
}

impl OrbitCamera {
    /// A camera that shows all of `domain` at any aspect ratio of at least
    /// 3:4: it looks at the box's centre from the default direction (yaw
    /// 0.6, pitch 0.4), far enough that the box's bounding sphere fits the
    /// narrower field of view, with `near`, `far` and the zoom range scaled
    /// to the box.
    pub fn framing(domain: &Aabb3) -> Self {
        let (lo, hi) = (domain.min(), domain.max());
        let lo = [lo.x, lo.y, lo.z];
        let hi = [hi.x, hi.y, hi.z];
        let mut target = [0.0; 3];
        for k in 0..3 {
            target[k] = finite_or(0.5 * (lo[k] + hi[k]), 0.0);
        }
        let half = sub(hi, target);
        let radius = finite_or(dot(half, half).sqrt(), 0.0).max(1e-3);
        let base = Self::default();
        // Fit the bounding sphere in the vertical field of view and in the
        // horizontal one of a 3:4 (portrait) view.
        let half_fov = 0.5 * base.fov_y;
        let narrow = (0.75 * half_fov.tan()).atan().min(half_fov);
        let distance = 1.1 * radius / narrow.sin();
        Self {
            target,
            distance,
            near: 0.01 * radius,
            far: 12.0 * distance,
            min_distance: 0.1 * radius,
            max_distance: 10.0 * distance,
            ..base
        }
    }

    /// The zoom range, ordered and positive.
    fn distance_range(&self) -> (f32, f32) {
        let lo = finite_or(self.min_distance, 1e-3).max(1e-6);
        let hi = finite_or(self.max_distance, lo).max(lo);
        (lo, hi)
    }

    /// `distance` clamped to the zoom range (its lower end if not finite).
    fn clamped_distance(&self) -> f32 {
        let (lo, hi) = self.distance_range();
        finite_or(self.distance, lo).clamp(lo, hi)
    }

    /// Unit vector from the target towards the eye.
    fn back(&self) -> V3 {
        let yaw = finite_or(self.yaw, 0.0);
        let pitch = finite_or(self.pitch, 0.0).clamp(-MAX_PITCH, MAX_PITCH);
        let (sy, cy) = yaw.sin_cos();
        let (sp, cp) = pitch.sin_cos();
        [cp * sy, sp, cp * cy]
    }

    /// The eye position: `distance` from `target` along the direction set by
    /// `yaw` and `pitch`.
    pub fn eye(&self) -> [f32; 3] {
        let d = self.clamped_distance();
        let b = self.back();
        [
            self.target[0] + d * b[0],
            self.target[1] + d * b[1],
            self.target[2] + d * b[2],
        ]
    }

    /// Turns the camera about the target: `dx` radians of yaw, `dy` of
    /// pitch, the pitch clamped to `±`[`MAX_PITCH`] and the yaw kept in
    /// `(−π, π]`. The distance does not change. Non-finite arguments are
    /// ignored.
    pub fn orbit(&mut self, dx: f32, dy: f32) {
        use core::f32::consts::{PI, TAU};
        let mut yaw = finite_or(self.yaw, 0.0) + finite_or(dx, 0.0);
        yaw -= TAU * ((yaw + PI) / TAU).floor();
        self.yaw = if yaw <= -PI { yaw + TAU } else { yaw };
        self.pitch = (finite_or(self.pitch, 0.0) + finite_or(dy, 0.0)).clamp(-MAX_PITCH, MAX_PITCH);
    }

    /// Multiplies the distance by `factor` (below 1 moves closer), clamped
    /// to `min_distance..=max_distance`. A factor that is not finite and
    /// positive is ignored.
    pub fn zoom(&mut self, factor: f32) {
        let d = self.clamped_distance();
        let f = if factor.is_finite() && factor > 0.0 {
            factor
        } else {
            1.0
        };
        let (lo, hi) = self.distance_range();
        self.distance = (d * f).clamp(lo, hi);
    }

    /// The view matrix (world to eye space, right-handed, looking along
    /// `−z`), column-major.
    pub fn view(&self) -> [[f32; 4]; 4] {
        let eye = self.eye();
        let b = self.back();
        let f = [-b[0], -b[1], -b[2]];
        let s = normalize(cross(f, [0.0, 1.0, 0.0]));
        let u = cross(s, f);
        [
            [s[0], u[0], -f[0], 0.0],
            [s[1], u[1], -f[1], 0.0],
            [s[2], u[2], -f[2], 0.0],
            [-dot(s, eye), -dot(u, eye), dot(f, eye), 1.0],
        ]
    }

    /// The clipping range actually used: `near > 0` and `far > near`.
    pub fn clip_range(&self) -> (f32, f32) {
        let near = finite_or(self.near, 1e-3).max(1e-6);
        let far = finite_or(self.far, 0.0).max(2.0 * near);
        (near, far)
    }

    /// The perspective projection for `aspect` (width / height; 1 if not
    /// finite and positive), column-major, mapping eye-space depth `−near`
    /// to 0 and `−far` to 1 (wgpu's clip space).
    pub fn projection(&self, aspect: f32) -> [[f32; 4]; 4] {
        let aspect = if aspect.is_finite() && aspect > 0.0 {
            aspect
        } else {
            1.0
        };
        let fov = finite_or(self.fov_y, core::f32::consts::FRAC_PI_4).clamp(MIN_FOV_Y, MAX_FOV_Y);
        let f = 1.0 / (0.5 * fov).tan();
        let (near, far) = self.clip_range();
        let range = near - far;
        [
            [f / aspect, 0.0, 0.0, 0.0],
            [0.0, f, 0.0, 0.0],
            [0.0, 0.0, far / range, -1.0],
            [0.0, 0.0, near * far / range, 0.0],
        ]
    }

    /// Projection times view for `aspect` (width / height): world
    /// coordinates to wgpu clip coordinates (`x`, `y` in `[−w, w]`, `z` in
    /// `[0, w]` between the near and far planes), column-major.
    pub fn view_proj(&self, aspect: f32) -> [[f32; 4]; 4] {
        mul(&self.projection(aspect), &self.view())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spatium::Vec3;

    fn ndc(m: &[[f32; 4]; 4], p: [f32; 3]) -> [f32; 3] {
        let c = transform(m, p);
        [c[0] / c[3], c[1] / c[3], c[2] / c[3]]
    }

    fn cameras() -> Vec<OrbitCamera> {
        let mut out = Vec::new();
        for &yaw in &[-3.0, -1.0, 0.0, 0.6, 2.5] {
            for &pitch in &[-1.5, -0.3, 0.0, 0.4, 1.5] {
                out.push(OrbitCamera {
                    target: [0.3, -1.0, 2.0],
                    yaw,
                    pitch,
                    ..OrbitCamera::default()
                });
            }
        }
        out
    }

    #[test]
    fn target_projects_to_the_centre() {
        for cam in cameras() {
            for aspect in [0.5, 1.0, 4.0 / 3.0, 3.0] {
                let p = ndc(&cam.view_proj(aspect), cam.target);
                assert!(p[0].abs() < 1e-5 && p[1].abs() < 1e-5, "{cam:?}: {p:?}");
                assert!(p[2] > 0.0 && p[2] < 1.0);
            }
        }
    }

    #[test]
    fn depth_runs_from_zero_at_near_to_one_at_far() {
        for cam in cameras() {
            let m = cam.view_proj(1.5);
            let eye = cam.eye();
            let dir = normalize(sub(cam.target, eye));
            let at = |t: f32| {
                [
                    eye[0] + t * dir[0],
                    eye[1] + t * dir[1],
                    eye[2] + t * dir[2],
                ]
            };
            let z_near = ndc(&m, at(cam.near))[2];
            let z_far = ndc(&m, at(cam.far))[2];
            assert!(z_near.abs() < 1e-4, "{z_near}");
            assert!((z_far - 1.0).abs() < 1e-4, "{z_far}");
            let mut last = z_near;
            for k in 1..20 {
                let t = cam.near + (cam.far - cam.near) * k as f32 / 20.0;
                let z = ndc(&m, at(t))[2];
                assert!(z > last && (0.0..=1.0).contains(&z), "{z}");
                last = z;
            }
        }
    }

    #[test]
    fn up_is_up_and_right_is_right() {
        let cam = OrbitCamera {
            yaw: 0.0,
            pitch: 0.0,
            ..OrbitCamera::default()
        };
        let m = cam.view_proj(1.0);
        assert!(ndc(&m, [0.0, 0.5, 0.0])[1] > 0.1);
        assert!(ndc(&m, [0.5, 0.0, 0.0])[0] > 0.1);
        let e = cam.eye();
        assert!(e[2] > 4.99 && e[0].abs() < 1e-6 && e[1].abs() < 1e-6);
    }

    #[test]
    fn orbit_keeps_distance_and_clamps_pitch() {
        let mut cam = OrbitCamera::default();
        let dist = |c: &OrbitCamera| {
            let d = sub(c.eye(), c.target);
            dot(d, d).sqrt()
        };
        let d0 = dist(&cam);
        for k in 0..200 {
            cam.orbit(0.37 * k as f32, 0.05 * (k as f32 - 80.0));
            assert!((dist(&cam) - d0).abs() < 1e-4 * d0);
            assert!(cam.pitch.abs() <= MAX_PITCH);
            assert!(cam.yaw > -core::f32::consts::PI - 1e-6 && cam.yaw <= core::f32::consts::PI);
            let m = cam.view_proj(1.0);
            assert!(m.iter().flatten().all(|v| v.is_finite()));
        }
        cam.orbit(0.0, 100.0);
        assert_eq!(cam.pitch, MAX_PITCH);
        cam.orbit(0.0, -100.0);
        assert_eq!(cam.pitch, -MAX_PITCH);
    }

    #[test]
    fn zoom_is_clamped() {
        let mut cam = OrbitCamera::default();
        cam.zoom(0.5);
        assert!((cam.distance - 2.5).abs() < 1e-6);
        cam.zoom(1e-9);
        assert_eq!(cam.distance, cam.min_distance);
        cam.zoom(1e12);
        assert_eq!(cam.distance, cam.max_distance);
        for bad in [0.0, -2.0, f32::NAN, f32::INFINITY] {
            cam.zoom(bad);
            assert_eq!(cam.distance, cam.max_distance);
        }
    }

    #[test]
    fn framing_shows_the_whole_box() {
        let domain = Aabb3::new(Vec3::ZERO, Vec3::new(0.4, 0.3, 0.2)).unwrap();
        let cam = OrbitCamera::framing(&domain);
        for aspect in [0.75, 1.0, 4.0 / 3.0, 2.0] {
            let m = cam.view_proj(aspect);
            for k in 0..8 {
                let p = [
                    if k & 1 == 0 { 0.0 } else { 0.4 },
                    if k & 2 == 0 { 0.0 } else { 0.3 },
                    if k & 4 == 0 { 0.0 } else { 0.2 },
                ];
                let q = ndc(&m, p);
                assert!(q[0].abs() < 1.0 && q[1].abs() < 1.0, "{aspect}: {q:?}");
                assert!(q[2] > 0.0 && q[2] < 1.0);
            }
        }
        // Zooming out as far as allowed keeps the box inside the far plane.
        let mut far = cam;
        far.zoom(1e9);
        let q = ndc(&far.view_proj(1.0), [0.0; 3]);
        assert!(q[2] < 1.0);
    }

    #[test]
    fn degenerate_input_gives_no_nan() {
        let bad = [0.0, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
        for &x in &bad {
            let cam = OrbitCamera {
                target: [0.0; 3],
                yaw: x,
                pitch: x,
                distance: x,
                fov_y: x,
                near: x,
                far: x,
                min_distance: x,
                max_distance: x,
            };
            for aspect in [0.0, -1.0, f32::NAN, 1.0] {
                let m = cam.view_proj(aspect);
                assert!(
                    m.iter().flatten().all(|v| v.is_finite()),
                    "{x} {aspect}: {m:?}"
                );
                assert!(cam.eye().iter().all(|v| v.is_finite()));
            }
            let mut c = cam;
            c.orbit(x, x);
            c.zoom(x);
            assert!(c.view_proj(1.0).iter().flatten().all(|v| v.is_finite()));
        }
        // A flat box still frames.
        let flat = Aabb3::new(Vec3::ZERO, Vec3::ZERO).unwrap();
        let cam = OrbitCamera::framing(&flat);
        assert!(cam.view_proj(1.0).iter().flatten().all(|v| v.is_finite()));
    }
}
