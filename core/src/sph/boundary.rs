//! Solid boundaries: the box walls of the seed (§2.4) and obstacles (spheres,
//! boxes, triangles; static or moving) found through any [`BroadPhase`].
//!
//! Every contact is resolved the same way, walls included: the particle is
//! pushed out along the contact normal by its penetration, and if it moves
//! into the solid (relative to the solid's velocity) the normal component of
//! its relative velocity is reversed and scaled by the damping factor. Solids
//! are kinematic: particles do not push them.

use super::kernel::Kernels;
use super::par::{STEP_GRAIN, STEP_TASKS};
use super::{ParticleState, SphParams};
use crate::error::Error;
use crate::exec::{Executor, Parts, task_split};
use crate::geom::{BoundingBox, Point};
use crate::periodic::PeriodicBox;
use crate::storage::Storage;
use crate::traits::BroadPhase;

/// A solid shape. In 2D a sphere is a disc and a triangle is a solid
/// triangle; in 3D a triangle is a two-sided sheet as thick as the particle
/// collision radius.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(
    feature = "serde",
    serde(bound(
        serialize = "P: serde::Serialize, P::Aabb: serde::Serialize",
        deserialize = "P: serde::Deserialize<'de>, P::Aabb: serde::Deserialize<'de>"
    ))
)]
pub enum Shape<P: Point> {
    /// A ball.
    Sphere {
        /// Centre.
        center: P,
        /// Radius, `> 0`.
        radius: f32,
    },
    /// An axis-aligned box.
    Box(P::Aabb),
    /// A triangle with non-zero area.
    Triangle([P; 3]),
}

/// An obstacle: a shape and the velocity it moves with (zero for a static
/// one). [`Obstacles::advance`] moves it each step.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(
    feature = "serde",
    serde(bound(
        serialize = "P: serde::Serialize, P::Aabb: serde::Serialize",
        deserialize = "P: serde::Deserialize<'de>, P::Aabb: serde::Deserialize<'de>"
    ))
)]
pub struct Obstacle<P: Point> {
    /// The shape at the current time.
    pub shape: Shape<P>,
    /// Velocity (a kinematic obstacle; zero for a static one).
    pub velocity: P,
}

impl<P: Point> Default for Obstacle<P> {
    /// The unused value, [`Obstacle::EMPTY`] (a buffer of defaults is an empty buffer).
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<P: Point> Obstacle<P> {
    /// A static obstacle.
    pub const fn fixed(shape: Shape<P>) -> Self {
        Self {
            shape,
            velocity: P::ZERO,
        }
    }

    /// A placeholder for unused storage slots: a sphere of radius zero at the
    /// origin (never valid, never stored).
    pub const EMPTY: Self = Self {
        shape: Shape::Sphere {
            center: P::ZERO,
            radius: 0.0,
        },
        velocity: P::ZERO,
    };
}

/// A contact: unit normal pointing out of the solid and penetration depth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact<P> {
    /// Unit normal, from the solid towards the particle.
    pub normal: P,
    /// How far the particle must move along `normal` to stop touching.
    pub depth: f32,
}

#[inline]
fn length<P: Point>(v: P) -> f32 {
    libm::sqrtf(v.dot(v))
}

/// Closest point of triangle `t` to `p`, by the Voronoi region of `p`
/// (vertex, edge or face); dot products only, so it serves 2D and 3D. In 2D a
/// point inside the triangle is its own closest point.
fn closest_on_triangle<P: Point>(p: P, [a, b, c]: [P; 3]) -> P {
    let ab = b - a;
    let ac = c - a;
    let ap = p - a;
    let d1 = ab.dot(ap);
    let d2 = ac.dot(ap);
    if d1 <= 0.0 && d2 <= 0.0 {
        return a;
    }
    let bp = p - b;
    let d3 = ab.dot(bp);
    let d4 = ac.dot(bp);
    if d3 >= 0.0 && d4 <= d3 {
        return b;
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return a + ab * (d1 / (d1 - d3));
    }
    let cp = p - c;
    let d5 = ab.dot(cp);
    let d6 = ac.dot(cp);
    if d6 >= 0.0 && d5 <= d6 {
        return c;
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return a + ac * (d2 / (d2 - d6));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0 {
        let t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return b + (c - b) * t;
    }
    let inv = 1.0 / (va + vb + vc);
    a + ab * (vb * inv) + ac * (vc * inv)
}

/// Twice the triangle's area squared (`|ab|²|ac|² − (ab·ac)²`), any dimension.
fn area2<P: Point>([a, b, c]: [P; 3]) -> f32 {
    let ab = b - a;
    let ac = c - a;
    ab.dot(ab) * ac.dot(ac) - ab.dot(ac) * ab.dot(ac)
}

impl<P: Point> Shape<P> {
    /// Checks the shape: finite coordinates, a positive radius, a box with
    /// `min <= max`, a triangle with non-zero area.
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::InvertedBox`], [`Error::InvalidShape`].
    pub fn check(&self) -> Result<(), Error> {
        match *self {
            Shape::Sphere { center, radius } => {
                if !center.is_finite() || !radius.is_finite() {
                    return Err(Error::NonFinite);
                }
                if radius <= 0.0 {
                    return Err(Error::InvalidShape);
                }
            }
            Shape::Box(b) => b.check()?,
            Shape::Triangle(t) => {
                if !t.iter().all(|v| v.is_finite()) {
                    return Err(Error::NonFinite);
                }
                let a2 = area2(t);
                if !(a2.is_finite() && a2 > 0.0) {
                    return Err(Error::InvalidShape);
                }
            }
        }
        self.bounds().check()
    }

    /// The shape's bounding box.
    pub fn bounds(&self) -> P::Aabb {
        let (lo, hi) = match *self {
            Shape::Sphere { center, radius } => {
                let r = P::from_fn(|_| radius);
                (center - r, center + r)
            }
            Shape::Box(b) => (b.min(), b.max()),
            Shape::Triangle([a, b, c]) => (a.min(b).min(c), a.max(b).max(c)),
        };
        P::Aabb::try_new(lo, hi).unwrap_or(P::Aabb::NAN)
    }

    /// The shape moved by `d`.
    pub fn translated(&self, d: P) -> Self {
        match *self {
            Shape::Sphere { center, radius } => Shape::Sphere {
                center: center + d,
                radius,
            },
            Shape::Box(b) => Shape::Box(P::Aabb::try_new(b.min() + d, b.max() + d).unwrap_or(b)),
            Shape::Triangle([a, b, c]) => Shape::Triangle([a + d, b + d, c + d]),
        }
    }

    /// The contact of a particle of collision radius `r` at `x` moving with
    /// velocity `v`, if it touches the shape (closer than `r`, or inside).
    /// `v` only breaks the tie of a particle exactly on a 3D triangle's plane
    /// (the normal faces against the motion). `walls`, if given, are the box
    /// the particle must stay in: a particle inside a box obstacle leaves
    /// through the nearest face whose exit point is inside the walls (so a
    /// box standing on the floor pushes sideways or up, never into the
    /// floor), or the nearest face if none is.
    pub fn contact(&self, x: P, v: P, r: f32, walls: Option<&P::Aabb>) -> Option<Contact<P>> {
        match *self {
            Shape::Sphere { center, radius } => {
                let d = x - center;
                let dist = length(d);
                let reach = radius + r;
                if dist >= reach {
                    return None;
                }
                let normal = if dist > 0.0 {
                    d * (1.0 / dist)
                } else {
                    up::<P>()
                };
                Some(Contact {
                    normal,
                    depth: reach - dist,
                })
            }
            Shape::Box(b) => {
                let (lo, hi) = (b.min(), b.max());
                let q = x.max(lo).min(hi);
                let d = x - q;
                let dist2 = d.dot(d);
                if dist2 > 0.0 {
                    if dist2 >= r * r {
                        return None;
                    }
                    let dist = libm::sqrtf(dist2);
                    return Some(Contact {
                        normal: d * (1.0 / dist),
                        depth: r - dist,
                    });
                }
                // Inside (or on the surface): out through the nearest face,
                // preferring faces whose exit point is inside the walls.
                let mut best = (false, f32::INFINITY, 0usize, 1.0f32);
                for k in 0..P::DIM {
                    let faces = [
                        (x.coord(k) - lo.coord(k), lo.coord(k) - r, -1.0),
                        (hi.coord(k) - x.coord(k), hi.coord(k) + r, 1.0),
                    ];
                    for (dist, exit, sign) in faces {
                        let open = walls
                            .is_none_or(|w| exit >= w.min().coord(k) && exit <= w.max().coord(k));
                        if (open && !best.0) || (open == best.0 && dist < best.1) {
                            best = (open, dist, k, sign);
                        }
                    }
                }
                let (_, dist, axis, sign) = best;
                Some(Contact {
                    normal: P::from_fn(|k| if k == axis { sign } else { 0.0 }),
                    depth: dist + r,
                })
            }
            Shape::Triangle(t) => {
                if P::DIM == 2
                    && let Some((along, normal)) = inside_2d(x, t)
                {
                    // Inside a solid 2D triangle (or on its boundary): out
                    // through the edge whose line is nearest, along that
                    // edge's outward normal, to `r` beyond the line.
                    return Some(Contact {
                        normal,
                        depth: r - along,
                    });
                }
                let q = closest_on_triangle(x, t);
                let d = x - q;
                let dist = length(d);
                if dist >= r {
                    return None;
                }
                // Closer than rounding can resolve a direction (the closest
                // point carries ~10⁻⁷ relative error): use the face normal.
                if dist > 1e-4 * r {
                    return Some(Contact {
                        normal: d * (1.0 / dist),
                        depth: r - dist,
                    });
                }
                // On a 3D triangle's plane: along the face normal, against the motion.
                let n = face_normal(t);
                let normal = if n.dot(v) > 0.0 { -n } else { n };
                Some(Contact { normal, depth: r })
            }
        }
    }
}

/// For a point inside (or on) a 2D triangle: the largest signed distance to
/// an edge's line (≤ 0) and that edge's outward unit normal; `None` if the
/// point is outside. Decided by the edge lines, not by the closest point,
/// whose rounding would leave an interior point a spurious `10⁻⁹` from
/// itself.
fn inside_2d<P: Point>(x: P, [a, b, c]: [P; 3]) -> Option<(f32, P)> {
    let mut best: Option<(f32, P)> = None;
    for (s, e, third) in [(a, b, c), (b, c, a), (c, a, b)] {
        let d = e - s;
        let n = P::from_fn(|k| match k {
            0 => -d.coord(1),
            1 => d.coord(0),
            _ => 0.0,
        });
        let l = length(n);
        if l <= 0.0 {
            return None;
        }
        let mut n = n * (1.0 / l);
        if n.dot(third - s) > 0.0 {
            n = -n;
        }
        let along = (x - s).dot(n);
        if along > 0.0 {
            return None;
        }
        if best.is_none_or(|(b, _)| along > b) {
            best = Some((along, n));
        }
    }
    best
}

/// `+y`: the fallback normal of a particle exactly at a sphere's centre.
fn up<P: Point>() -> P {
    P::from_fn(|k| if k == 1 { 1.0 } else { 0.0 })
}

/// Unit normal of a 3D triangle (`ab × ac`, normalised); `+y` in 2D.
fn face_normal<P: Point>([a, b, c]: [P; 3]) -> P {
    if P::DIM != 3 {
        return up::<P>();
    }
    let (u, w) = (b - a, c - a);
    let (ux, uy, uz) = (u.coord(0), u.coord(1), u.coord(2));
    let (wx, wy, wz) = (w.coord(0), w.coord(1), w.coord(2));
    let n = [uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx];
    let n = P::from_fn(|k| n[k]);
    let l = length(n);
    if l > 0.0 { n * (1.0 / l) } else { up::<P>() }
}

/// Applies a contact to a particle: push out by the depth, and reverse and
/// damp the normal component of the velocity relative to `solid_velocity`
/// if it points into the solid.
#[inline]
pub fn resolve<P: Point>(x: &mut P, v: &mut P, c: Contact<P>, solid_velocity: P, damping: f32) {
    *x += c.normal * c.depth;
    let vn = (*v - solid_velocity).dot(c.normal);
    if vn < 0.0 {
        *v -= c.normal * ((1.0 + damping) * vn);
    }
}

/// Keeps a particle inside `domain` (seed §2.4): each coordinate is clamped
/// to the walls and, if the particle moves outwards there, that velocity
/// component is reversed and multiplied by `damping`.
#[inline]
pub fn clamp_to_walls<P: Point>(x: &mut P, v: &mut P, domain: &P::Aabb, damping: f32) {
    let (lo, hi) = (domain.min(), domain.max());
    let mut xs = [0.0f32; 3];
    let mut vs = [0.0f32; 3];
    for k in 0..P::DIM {
        let (mut xk, mut vk) = (x.coord(k), v.coord(k));
        if xk < lo.coord(k) {
            xk = lo.coord(k);
            if vk < 0.0 {
                vk *= -damping;
            }
        } else if xk > hi.coord(k) {
            xk = hi.coord(k);
            if vk > 0.0 {
                vk *= -damping;
            }
        }
        xs[k] = xk;
        vs[k] = vk;
    }
    *x = P::from_fn(|k| xs[k]);
    *v = P::from_fn(|k| vs[k]);
}

/// Most contact-resolution passes per particle and step in
/// [`Obstacles`]' [`Collider::collide`] (a pass that finds no contact ends
/// it early).
pub const CONTACT_PASSES: usize = 4;

/// What the solver asks of the solids around the fluid: contact
/// resolution only. Solids are kinematic, so moving them is the caller's
/// business between steps ([`Obstacles::advance`]); a step never moves them.
///
/// Implemented by `()` (no obstacles: walls only) and by [`Obstacles`].
pub trait Collider<P: Point> {
    /// Resolves the contacts of one particle of collision radius `radius`,
    /// which must end inside `walls` (see [`Shape::contact`]).
    ///
    /// # Errors
    /// A query the broad phase refuses (a non-finite position).
    fn collide(
        &mut self,
        x: &mut P,
        v: &mut P,
        radius: f32,
        damping: f32,
        walls: &P::Aabb,
    ) -> Result<(), Error>;

    /// Boundary particles the collider holds ([`super::walls`]); 0, the
    /// default, for colliders that only resolve contacts (the hooks below
    /// are then never called).
    fn boundary_particles(&self) -> usize {
        0
    }

    /// Adds the boundary particles' share to each fluid particle's density,
    /// after the fluid's own sum and before the pressures. `x` and `st` are
    /// the fluid's positions and states, by id.
    ///
    /// # Errors
    /// A boundary search that cannot be built or queried; a boundary
    /// search not periodic along the fluid's axes.
    fn add_boundary_density(
        &mut self,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        let _ = (x, st, k, p, period);
        Ok(())
    }

    /// Sets the boundary particles' pressures (and what else they show the
    /// fluid) from the fluid's densities and pressures, after those are
    /// known.
    ///
    /// # Errors
    /// As [`add_boundary_density`](Self::add_boundary_density).
    fn update_boundary(
        &mut self,
        x: &[P],
        st: &[ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        let _ = (x, st, k, p, period);
        Ok(())
    }

    /// Adds the boundary particles' pressure and viscosity accelerations to
    /// each fluid particle, after the fluid's own pair forces.
    ///
    /// # Errors
    /// As [`add_boundary_density`](Self::add_boundary_density).
    fn add_boundary_forces(
        &mut self,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        let _ = (x, st, k, p, period);
        Ok(())
    }
}

/// Two colliders as one: contacts resolved by the first, then the second;
/// the boundary-particle hooks of both, first then second. For example
/// `(walls, obstacles)`: boundary-particle walls and contact-resolved
/// obstacles.
impl<P: Point, A: Collider<P>, B: Collider<P>> Collider<P> for (A, B) {
    fn collide(
        &mut self,
        x: &mut P,
        v: &mut P,
        radius: f32,
        damping: f32,
        walls: &P::Aabb,
    ) -> Result<(), Error> {
        self.0.collide(x, v, radius, damping, walls)?;
        self.1.collide(x, v, radius, damping, walls)
    }

    fn boundary_particles(&self) -> usize {
        self.0.boundary_particles() + self.1.boundary_particles()
    }

    fn add_boundary_density(
        &mut self,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        self.0.add_boundary_density(x, st, k, p, period)?;
        self.1.add_boundary_density(x, st, k, p, period)
    }

    fn update_boundary(
        &mut self,
        x: &[P],
        st: &[ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        self.0.update_boundary(x, st, k, p, period)?;
        self.1.update_boundary(x, st, k, p, period)
    }

    fn add_boundary_forces(
        &mut self,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        self.0.add_boundary_forces(x, st, k, p, period)?;
        self.1.add_boundary_forces(x, st, k, p, period)
    }
}

/// A collider borrowed: `(&mut walls, &mut obstacles)` combines two
/// without moving them.
impl<P: Point, C: Collider<P>> Collider<P> for &mut C {
    fn collide(
        &mut self,
        x: &mut P,
        v: &mut P,
        radius: f32,
        damping: f32,
        walls: &P::Aabb,
    ) -> Result<(), Error> {
        (**self).collide(x, v, radius, damping, walls)
    }

    fn boundary_particles(&self) -> usize {
        (**self).boundary_particles()
    }

    fn add_boundary_density(
        &mut self,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        (**self).add_boundary_density(x, st, k, p, period)
    }

    fn update_boundary(
        &mut self,
        x: &[P],
        st: &[ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        (**self).update_boundary(x, st, k, p, period)
    }

    fn add_boundary_forces(
        &mut self,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        (**self).add_boundary_forces(x, st, k, p, period)
    }
}

impl<P: Point> Collider<P> for () {
    fn collide(&mut self, _: &mut P, _: &mut P, _: f32, _: f32, _: &P::Aabb) -> Result<(), Error> {
        Ok(())
    }
}

/// Contact resolution for the parallel step
/// ([`Fluid::par_step`](super::Fluid::par_step)): every particle is resolved
/// against the walls, the solids, and the walls again (as
/// [`Fluid::step`](super::Fluid::step) does with [`Collider::collide`]),
/// with the work on an executor. Implemented by `()` (walls only, in
/// parallel chunks) and by [`Obstacles`]: up to [`SHARED_OBSTACLES`]
/// obstacles are tested by every worker directly (each particle's box
/// against every obstacle's bounds: a broad-phase query needs `&mut`);
/// more are found through the broad phase on the calling thread, between
/// two parallel wall passes. The choice depends on the obstacle count only,
/// so the result is the same for every executor.
pub trait ParCollider<P: Point>: Collider<P> {
    /// Resolves particle `i` at `x[i]` with velocity `state[i].velocity`,
    /// for every `i` (the two slices have the same length).
    ///
    /// # Errors
    /// As [`Collider::collide`]: the first particle's error, in id order
    /// (each task stops at its first; particles after an error may be left
    /// unresolved, as `step` leaves them).
    fn par_collide<E: Executor>(
        &mut self,
        exec: &E,
        x: &mut [P],
        state: &mut [ParticleState<P>],
        radius: f32,
        damping: f32,
        walls: &P::Aabb,
    ) -> Result<(), Error>;

    /// [`Collider::add_boundary_density`] with the fluid particles split
    /// into tasks on `exec`. The default runs the serial hook on the
    /// calling thread; an override must give the same result for every
    /// executor.
    ///
    /// # Errors
    /// As [`Collider::add_boundary_density`].
    fn par_add_boundary_density<E: Executor>(
        &mut self,
        exec: &E,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        let _ = exec;
        self.add_boundary_density(x, st, k, p, period)
    }

    /// [`Collider::add_boundary_forces`] with the fluid particles split into
    /// tasks on `exec`; the default runs the serial hook, as above.
    ///
    /// # Errors
    /// As [`Collider::add_boundary_forces`].
    fn par_add_boundary_forces<E: Executor>(
        &mut self,
        exec: &E,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        let _ = exec;
        self.add_boundary_forces(x, st, k, p, period)
    }
}

/// Walls, `solid(x, v)`, walls, for every particle, in chunks on `exec`;
/// the first error in id order.
fn par_resolve<P, E, F>(
    exec: &E,
    x: &mut [P],
    state: &mut [ParticleState<P>],
    damping: f32,
    walls: &P::Aabb,
    solid: F,
) -> Result<(), Error>
where
    P: Point,
    E: Executor,
    F: Fn(&mut P, &mut P) -> Result<(), Error> + Sync,
{
    let n = x.len().min(state.len());
    let (tasks, grain) = task_split(n, STEP_GRAIN, STEP_TASKS);
    let mut results = [None; STEP_TASKS];
    exec.run(
        tasks,
        (
            Parts::chunks(&mut x[..n], grain),
            Parts::chunks(&mut state[..n], grain),
            Parts::chunks(&mut results[..tasks], 1),
        ),
        |_, (xs, ss, mut r)| {
            for (xi, s) in xs.into_slice().iter_mut().zip(ss.into_slice()) {
                clamp_to_walls(xi, &mut s.velocity, walls, damping);
                if let Err(e) = solid(xi, &mut s.velocity) {
                    if let Some(r) = r.slice().first_mut() {
                        *r = Some(e);
                    }
                    break;
                }
                clamp_to_walls(xi, &mut s.velocity, walls, damping);
            }
        },
    );
    match results[..tasks].iter().flatten().next() {
        Some(&e) => Err(e),
        None => Ok(()),
    }
}

/// Two colliders as one in the parallel step: the first's contact pass,
/// then the second's (walls, solid, walls for each).
impl<P: Point, A: ParCollider<P>, B: ParCollider<P>> ParCollider<P> for (A, B) {
    fn par_collide<E: Executor>(
        &mut self,
        exec: &E,
        x: &mut [P],
        state: &mut [ParticleState<P>],
        radius: f32,
        damping: f32,
        walls: &P::Aabb,
    ) -> Result<(), Error> {
        self.0.par_collide(exec, x, state, radius, damping, walls)?;
        self.1.par_collide(exec, x, state, radius, damping, walls)
    }

    fn par_add_boundary_density<E: Executor>(
        &mut self,
        exec: &E,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        self.0.par_add_boundary_density(exec, x, st, k, p, period)?;
        self.1.par_add_boundary_density(exec, x, st, k, p, period)
    }

    fn par_add_boundary_forces<E: Executor>(
        &mut self,
        exec: &E,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        self.0.par_add_boundary_forces(exec, x, st, k, p, period)?;
        self.1.par_add_boundary_forces(exec, x, st, k, p, period)
    }
}

impl<P: Point, C: ParCollider<P>> ParCollider<P> for &mut C {
    fn par_collide<E: Executor>(
        &mut self,
        exec: &E,
        x: &mut [P],
        state: &mut [ParticleState<P>],
        radius: f32,
        damping: f32,
        walls: &P::Aabb,
    ) -> Result<(), Error> {
        (**self).par_collide(exec, x, state, radius, damping, walls)
    }

    fn par_add_boundary_density<E: Executor>(
        &mut self,
        exec: &E,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        (**self).par_add_boundary_density(exec, x, st, k, p, period)
    }

    fn par_add_boundary_forces<E: Executor>(
        &mut self,
        exec: &E,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        (**self).par_add_boundary_forces(exec, x, st, k, p, period)
    }
}

impl<P: Point> ParCollider<P> for () {
    fn par_collide<E: Executor>(
        &mut self,
        exec: &E,
        x: &mut [P],
        state: &mut [ParticleState<P>],
        _: f32,
        damping: f32,
        walls: &P::Aabb,
    ) -> Result<(), Error> {
        par_resolve(exec, x, state, damping, walls, |_, _| Ok(()))
    }
}

/// Most obstacles [`Obstacles`]' [`ParCollider::par_collide`] tests
/// directly on every worker; above it, the broad phase is queried on the
/// calling thread. About where the two cost the same on one thread
/// (a few nanoseconds per obstacle box against a broad-phase query of
/// about a hundred).
pub const SHARED_OBSTACLES: usize = 32;

/// Static and moving obstacles behind a broad phase: each obstacle's bounding
/// box is stored in `B` under the obstacle's index, and each particle queries
/// the box of its collision sphere, so the narrow phase only meets the
/// obstacles near it. Any [`BroadPhase`] fits; the scenes use the
/// hierarchical hash grid, the linear kd-tree or hierarchical hashing.
///
/// Memory: `size_of::<Obstacle<P>>()` (52 bytes in 3D, 36 in 2D) per slot of
/// `S`, plus the broad phase's own.
#[derive(Debug)]
pub struct Obstacles<P: Point, B, S> {
    shapes: S,
    len: usize,
    broad_phase: B,
    marker: core::marker::PhantomData<P>,
}

impl<P: Point, B: BroadPhase<P::Aabb>, S: Storage<Obstacle<P>>> Obstacles<P, B, S> {
    /// An empty set over `shapes` (one slot per obstacle) and an empty
    /// `broad_phase`.
    ///
    /// Never fails and allocates nothing; `const`. Memory: 52 bytes per
    /// slot of `shapes` in 3D (36 in 2D) plus the broad phase's. Adding or
    /// moving an obstacle costs one broad-phase insert or update; resolving
    /// the particles of a step costs one broad-phase box query per particle.
    pub const fn new(shapes: S, broad_phase: B) -> Self {
        Self {
            shapes,
            len: 0,
            broad_phase,
            marker: core::marker::PhantomData,
        }
    }

    /// Obstacles stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` if none is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most obstacles storable: the shape slots, or the broad phase's id
    /// capacity if smaller.
    pub fn capacity(&self) -> usize {
        self.shapes.as_ref().len().min(self.broad_phase.capacity())
    }

    /// The obstacles, by id.
    pub fn as_slice(&self) -> &[Obstacle<P>] {
        &self.shapes.as_ref()[..self.len]
    }

    /// The broad phase (for its statistics).
    pub fn broad_phase(&self) -> &B {
        &self.broad_phase
    }

    /// Adds an obstacle and returns its id (ids are consecutive from 0).
    ///
    /// # Errors
    /// The shape's [`Shape::check`] error; [`Error::NonFinite`] for a
    /// non-finite velocity; [`Error::CapacityExceeded`]; the broad phase's
    /// insert error. Nothing changes on error.
    pub fn add(&mut self, obstacle: Obstacle<P>) -> Result<u32, Error> {
        obstacle.shape.check()?;
        if !obstacle.velocity.is_finite() {
            return Err(Error::NonFinite);
        }
        if self.len >= self.capacity() {
            return Err(Error::CapacityExceeded {
                capacity: self.capacity(),
            });
        }
        let id = self.len as u32;
        self.broad_phase.insert(id, obstacle.shape.bounds())?;
        self.shapes.as_mut()[self.len] = obstacle;
        self.len += 1;
        Ok(id)
    }

    /// Replaces obstacle `id` (to move it by hand, or change its velocity).
    ///
    /// # Errors
    /// [`Error::UnknownId`], or as [`add`](Self::add). Nothing changes on
    /// error.
    pub fn set(&mut self, id: u32, obstacle: Obstacle<P>) -> Result<(), Error> {
        if id as usize >= self.len {
            return Err(Error::UnknownId { id });
        }
        obstacle.shape.check()?;
        if !obstacle.velocity.is_finite() {
            return Err(Error::NonFinite);
        }
        self.broad_phase.update(id, obstacle.shape.bounds())?;
        self.shapes.as_mut()[id as usize] = obstacle;
        Ok(())
    }

    /// Removes every obstacle.
    pub fn clear(&mut self) {
        self.broad_phase.clear();
        self.len = 0;
    }

    /// Moves every obstacle with a non-zero velocity by `velocity · dt`
    /// (kinematic obstacles: call it once per step, before
    /// [`Fluid::step`](super::Fluid::step), so contacts are resolved against
    /// where the solids are at the end of the step).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a non-finite `dt`; a moved shape that
    /// fails [`Shape::check`] (coordinates overflowing to infinity) or that
    /// the broad phase refuses. Every move is checked before any is made, so
    /// nothing changes on error — except that a broad phase whose update
    /// fails for a reason it cannot check in advance (none in this crate)
    /// would leave the obstacles before the failing one moved.
    pub fn advance(&mut self, dt: f32) -> Result<(), Error> {
        if !dt.is_finite() {
            return Err(Error::InvalidConfig { field: "dt" });
        }
        for o in &self.shapes.as_ref()[..self.len] {
            if o.velocity != P::ZERO {
                o.shape.translated(o.velocity * dt).check()?;
            }
        }
        for id in 0..self.len {
            let o = self.shapes.as_ref()[id];
            if o.velocity != P::ZERO {
                let moved = o.shape.translated(o.velocity * dt);
                self.broad_phase.update(id as u32, moved.bounds())?;
                self.shapes.as_mut()[id].shape = moved;
            }
        }
        Ok(())
    }
}

impl<P: Point, B: BroadPhase<P::Aabb>, S: Storage<Obstacle<P>>> Collider<P> for Obstacles<P, B, S> {
    fn collide(
        &mut self,
        x: &mut P,
        v: &mut P,
        radius: f32,
        damping: f32,
        walls: &P::Aabb,
    ) -> Result<(), Error> {
        // A particle wedged between solids (two triangles of a ramp, a
        // sphere on a box) can be pushed from one into the other: resolve
        // again, up to `CONTACT_PASSES` times, while contacts remain.
        let r = P::from_fn(|_| radius);
        let shapes = &self.shapes.as_ref()[..self.len];
        for _ in 0..CONTACT_PASSES {
            let query = P::Aabb::try_new(*x - r, *x + r)?;
            let mut touched = false;
            self.broad_phase.query(&query, |id| {
                if let Some(o) = shapes.get(id as usize)
                    && let Some(c) = o.shape.contact(*x, *v, radius, Some(walls))
                {
                    resolve(x, v, c, o.velocity, damping);
                    touched = true;
                }
            })?;
            if !touched {
                break;
            }
        }
        Ok(())
    }
}

impl<P: Point, B: BroadPhase<P::Aabb>, S: Storage<Obstacle<P>>> Obstacles<P, B, S> {
    /// The contacts of [`Collider::collide`], found by testing the
    /// particle's query box against every obstacle's bounds in id order,
    /// through `&self` (a particle touching two solids may meet them in
    /// another order than the broad phase reports them).
    fn collide_linear(
        shapes: &[Obstacle<P>],
        x: &mut P,
        v: &mut P,
        radius: f32,
        damping: f32,
        walls: &P::Aabb,
    ) -> Result<(), Error> {
        let r = P::from_fn(|_| radius);
        for _ in 0..CONTACT_PASSES {
            let query = P::Aabb::try_new(*x - r, *x + r)?;
            let mut touched = false;
            for o in shapes {
                if o.shape.bounds().overlaps(&query)
                    && let Some(c) = o.shape.contact(*x, *v, radius, Some(walls))
                {
                    resolve(x, v, c, o.velocity, damping);
                    touched = true;
                }
            }
            if !touched {
                break;
            }
        }
        Ok(())
    }
}

impl<P: Point, B: BroadPhase<P::Aabb>, S: Storage<Obstacle<P>>> ParCollider<P>
    for Obstacles<P, B, S>
{
    fn par_collide<E: Executor>(
        &mut self,
        exec: &E,
        x: &mut [P],
        state: &mut [ParticleState<P>],
        radius: f32,
        damping: f32,
        walls: &P::Aabb,
    ) -> Result<(), Error> {
        if self.len <= SHARED_OBSTACLES {
            let shapes = self.as_slice();
            return par_resolve(exec, x, state, damping, walls, |xi, vi| {
                Self::collide_linear(shapes, xi, vi, radius, damping, walls)
            });
        }
        // Walls in parallel, the broad phase here, walls in parallel.
        par_resolve(exec, x, state, damping, walls, |_, _| Ok(()))?;
        for (xi, s) in x.iter_mut().zip(state.iter_mut()) {
            self.collide(xi, &mut s.velocity, radius, damping, walls)?;
        }
        par_resolve(exec, x, state, damping, walls, |_, _| Ok(()))
    }
}

impl<P: Point, B: BroadPhase<P::Aabb> + crate::error::Validate, S: Storage<Obstacle<P>>>
    crate::error::Validate for Obstacles<P, B, S>
{
    /// Checks the broad phase, then that it holds exactly the ids `0..len`,
    /// each with its obstacle's bounding box, and that every obstacle is
    /// valid.
    fn validate(&self) -> Result<(), crate::error::Corruption> {
        const W: &str = "Obstacles";
        self.broad_phase.validate()?;
        crate::error::ensure(self.len <= self.capacity(), W, "len within capacity")?;
        crate::error::ensure(
            self.broad_phase.box_count() == self.len,
            W,
            "one box per obstacle",
        )?;
        for (id, o) in self.as_slice().iter().enumerate() {
            crate::error::ensure(o.shape.check().is_ok(), W, "obstacle valid")?;
            crate::error::ensure(o.velocity.is_finite(), W, "velocity finite")?;
            crate::error::ensure(
                self.broad_phase.get(id as u32) == Some(o.shape.bounds()),
                W,
                "broad phase box is the obstacle's bounds",
            )?;
        }
        Ok(())
    }
}

/// Occupancy of [`Obstacles`] and of their broad phase.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ObstacleStats<T> {
    /// Obstacles stored.
    pub obstacles: usize,
    /// The broad phase's figures.
    pub broad_phase: T,
}

impl<P: Point, B: BroadPhase<P::Aabb> + crate::inspect::Inspect, S: Storage<Obstacle<P>>>
    crate::inspect::Inspect for Obstacles<P, B, S>
{
    type Stats = ObstacleStats<B::Stats>;

    /// `C · size_of::<Obstacle<P>>()` plus the broad phase's buffers.
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.shapes.as_ref()) + self.broad_phase.memory_bytes()
    }

    fn stats(&self) -> Self::Stats {
        ObstacleStats {
            obstacles: self.len,
            broad_phase: self.broad_phase.stats(),
        }
    }
}
