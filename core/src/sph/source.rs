//! Where particles come from: a block lattice ([`Lattice`], used by
//! [`Fluid::fill_block`](super::Fluid::fill_block)) and a pipe [`Emitter`].

use crate::error::Error;
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;

use super::{Fluid, ParticleState};

/// A regular lattice filling a box: points at `min + (i + ½)·spacing` along
/// each axis, for every `i ≥ 0` that keeps the point inside the (closed) box,
/// i.e. `round(extent / spacing)` points per axis.
///
/// When the extent is `k + ½` spacings the last point lies on the box's far
/// face; `f32` rounding of `min + (i + ½)·spacing` can land it one step past
/// the face, so every point is clamped to the box: every point is inside it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lattice<P: Point> {
    origin: P,
    max: P,
    spacing: f32,
    counts: [u32; 3],
}

impl<P: Point> Lattice<P> {
    /// The lattice of `region` at `spacing`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a spacing that is not finite and positive
    /// or more than 2³² points; the region's [`BoundingBox::check`] error.
    pub fn new(region: P::Aabb, spacing: f32) -> Result<Self, Error> {
        region.check()?;
        if !(spacing.is_finite() && spacing > 0.0) {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        let mut counts = [1u32; 3];
        let mut total = 1u64;
        for (k, c) in counts.iter_mut().enumerate().take(P::DIM) {
            let extent = region.max().coord(k) - region.min().coord(k);
            // (i + ½)·s ≤ extent ⇔ i ≤ extent/s − ½: ⌊extent/s + ½⌋ points.
            // (⌊extent/s⌋ would drop a layer whenever the division rounds
            // just below an integer, as 1.3 / 0.1 does.)
            let n = libm::floorf(extent / spacing + 0.5);
            if !(n.is_finite() && n < 4.0e9) {
                return Err(Error::InvalidConfig { field: "spacing" });
            }
            *c = n as u32;
            total = total.saturating_mul(u64::from(*c));
        }
        if total > u64::from(u32::MAX) {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        let half = P::from_fn(|_| 0.5 * spacing);
        Ok(Self {
            origin: region.min() + half,
            max: region.max(),
            spacing,
            counts,
        })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.counts[..P::DIM].iter().map(|&c| c as usize).product()
    }

    /// `true` if the region is thinner than the spacing on some axis.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The points, x fastest.
    pub fn points(&self) -> impl Iterator<Item = P> + Clone + '_ {
        let [nx, ny, _] = self.counts;
        (0..self.len()).map(move |i| {
            let idx = [
                i % nx as usize,
                (i / nx as usize) % ny.max(1) as usize,
                i / (nx as usize * ny.max(1) as usize),
            ];
            (self.origin + P::from_fn(|k| idx[k] as f32 * self.spacing)).min(self.max)
        })
    }
}

/// A pipe that pours fluid: every time the fluid it emitted has moved one
/// spacing away from the mouth, it spawns a new layer — the lattice points of
/// a disc (a segment in 2D) of the pipe's radius, perpendicular to the flow —
/// moving at the pipe's speed, until it has emitted its budget.
///
/// Layers are spawned whole: a layer that does not fit in the fluid is not
/// spawned at all, the call returns [`Error::CapacityExceeded`], and it is
/// tried again on the next call. [`emitted`](Self::emitted) always equals the
/// number of particles this emitter has added.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Emitter<P: Point> {
    origin: P,
    direction: P,
    basis: [P; 2],
    speed: f32,
    radius: f32,
    spacing: f32,
    budget: u32,
    emitted: u32,
    travelled: f32,
}

impl<P: Point> Emitter<P> {
    /// A pipe whose mouth is centred at `origin`, pouring along `direction`
    /// (normalised here) at `speed`, of the given `radius` and lattice
    /// `spacing`, that emits `budget` particles in all.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite origin or direction;
    /// [`Error::InvalidConfig`] for a zero direction, a speed or spacing that
    /// is not finite and positive, a negative or non-finite radius, or more
    /// than 2¹⁶ points per layer.
    pub fn new(
        origin: P,
        direction: P,
        speed: f32,
        radius: f32,
        spacing: f32,
        budget: u32,
    ) -> Result<Self, Error> {
        if !origin.is_finite() || !direction.is_finite() {
            return Err(Error::NonFinite);
        }
        let len = libm::sqrtf(direction.dot(direction));
        let positive = |v: f32| v.is_finite() && v > 0.0;
        if !positive(len) {
            return Err(Error::InvalidConfig { field: "direction" });
        }
        if !positive(speed) {
            return Err(Error::InvalidConfig { field: "speed" });
        }
        if !positive(spacing) {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        if !(radius.is_finite() && radius >= 0.0) || radius / spacing > 128.0 {
            return Err(Error::InvalidConfig { field: "radius" });
        }
        let direction = direction * (1.0 / len);
        // Basis of the plane across the pipe: the axes least aligned with the
        // direction, made orthonormal to it and to each other.
        let mut axes = [0usize, 1, 2];
        let axes = &mut axes[..P::DIM];
        // |c| ≥ 0, so its bits order as its values.
        crate::sort::sort_by_key(axes, |&a| libm::fabsf(direction.coord(a)).to_bits());
        let mut basis = [P::ZERO; 2];
        let mut found = 0;
        for &axis in axes.iter() {
            if found + 1 >= P::DIM {
                break;
            }
            let mut e = P::from_fn(|k| if k == axis { 1.0 } else { 0.0 });
            e -= direction * e.dot(direction);
            for b in &basis[..found] {
                e -= *b * e.dot(*b);
            }
            let l = libm::sqrtf(e.dot(e));
            if l > 1e-3 {
                basis[found] = e * (1.0 / l);
                found += 1;
            }
        }
        let e = Self {
            origin,
            direction,
            basis,
            speed,
            radius,
            spacing,
            budget,
            emitted: 0,
            travelled: spacing,
        };
        if e.layer_len() > 1 << 16 {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        Ok(e)
    }

    /// Particles emitted so far.
    pub fn emitted(&self) -> u32 {
        self.emitted
    }

    /// Particles still to emit.
    pub fn remaining(&self) -> u32 {
        self.budget - self.emitted
    }

    /// Points in a full layer.
    pub fn layer_len(&self) -> usize {
        self.layer_offsets().count()
    }

    /// The velocity of every emitted particle: the unit direction times the
    /// speed.
    pub fn velocity(&self) -> P {
        self.direction * self.speed
    }

    /// The orthonormal basis of the plane across the pipe (in 2D, the first
    /// vector only; the second is zero).
    pub fn basis(&self) -> [P; 2] {
        self.basis
    }

    /// The layer's points relative to its centre, as coordinates `(u, v)`
    /// along [`basis`](Self::basis): the lattice points of spacing
    /// `spacing` within the pipe's radius, in the order they are spawned.
    /// A point is `centre + basis[0]·u + basis[1]·v`.
    pub fn layer_offsets(&self) -> impl Iterator<Item = (f32, f32)> + Clone + use<P> {
        let spacing = self.spacing;
        let m = libm::floorf(self.radius / spacing) as i32;
        let q = self.radius / spacing;
        let limit = q * q * (1.0 + 1e-5);
        let mb = if P::DIM == 3 { m } else { 0 };
        (-m..=m)
            .flat_map(move |a| (-mb..=mb).map(move |b| (a, b)))
            .filter(move |&(a, b)| ((a * a + b * b) as f32) <= limit)
            .map(move |(a, b)| (a as f32 * spacing, b as f32 * spacing))
    }

    /// The layer's points with its centre at `centre`.
    pub fn layer_points(&self, centre: P) -> impl Iterator<Item = P> + Clone + use<P> {
        let [e, f] = self.basis;
        self.layer_offsets()
            .map(move |(u, v)| centre + e * u + f * v)
    }

    /// Advances the pipe by `dt` and spawns the layers due into `fluid`;
    /// returns how many particles were added.
    ///
    /// # Errors
    /// [`Error::CapacityExceeded`] if a due layer does not fit (it stays due,
    /// at the mouth: a blocked pipe builds no backlog; earlier layers of the
    /// call are kept); [`Error::OutOfRange`] if a
    /// layer point lies outside the fluid's domain; [`Error::InvalidConfig`]
    /// for a `dt` that is not finite and non-negative.
    pub fn emit<X, S>(&mut self, fluid: &mut Fluid<P, X, S>, dt: f32) -> Result<usize, Error>
    where
        X: Storage<P>,
        S: Storage<ParticleState<P>>,
    {
        self.emit_with(dt, |pipe, centre, count| {
            fluid.extend(pipe.layer_points(centre).take(count), pipe.velocity())
        })
    }

    /// [`emit`](Self::emit) into any sink: advances the pipe by `dt` and
    /// calls `spawn(self, centre, count)` for each layer due, which must add
    /// the first `count` points of [`layer_points(centre)`](Self::layer_points)
    /// at [`velocity`](Self::velocity) whole and return `count`, or add
    /// nothing and fail. The GPU pipeline spawns its layers through this.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] (converted) for a `dt` that is not finite and
    /// non-negative; `spawn`'s error, after which the layer stays due at the
    /// mouth (no backlog; layers spawned earlier in the call are kept).
    pub fn emit_with<E: From<Error>>(
        &mut self,
        dt: f32,
        mut spawn: impl FnMut(&Self, P, usize) -> Result<usize, E>,
    ) -> Result<usize, E> {
        if !(dt.is_finite() && dt >= 0.0) {
            return Err(Error::InvalidConfig { field: "dt" }.into());
        }
        if self.emitted >= self.budget {
            return Ok(0);
        }
        self.travelled += self.speed * dt;
        let mut added = 0usize;
        while self.travelled >= self.spacing && self.emitted < self.budget {
            let ahead = self.travelled - self.spacing;
            let centre = self.origin + self.direction * ahead;
            let take = self.layer_len().min(self.remaining() as usize);
            let count = match spawn(self, centre, take) {
                Ok(count) => count,
                Err(e) => {
                    // Blocked: keep one layer due at the mouth, no backlog.
                    self.travelled = self.travelled.min(self.spacing);
                    return Err(e);
                }
            };
            self.emitted += count as u32;
            added += count;
            self.travelled -= self.spacing;
        }
        Ok(added)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Aabb3, Vec3};
    use crate::sph::SphParams;

    /// Regression: a block whose extent is `k + ½` spacings put its last
    /// lattice point one float step past the far face, and `fill_block`
    /// refused a block inside the domain with `OutOfRange`.
    #[test]
    fn half_spacing_extents_fill_the_whole_block() {
        for (extent, per_axis) in [(0.35f32, 4usize), (0.45, 5), (0.95, 10)] {
            let domain = Aabb3::new(Vec3::ZERO, Vec3::new(extent, extent, extent)).unwrap();
            let lattice = Lattice::<Vec3>::new(domain, 0.1).unwrap();
            assert_eq!(lattice.len(), per_axis.pow(3), "{extent}");
            for p in lattice.points() {
                let inside = (0..3).all(|k| p.coord(k) >= 0.0 && p.coord(k) <= extent);
                assert!(inside, "{extent}: {p:?} outside");
            }
            let params = SphParams::<Vec3>::seed(domain, 0.1).unwrap();
            let mut fluid = Fluid::new(
                [Vec3::ZERO; 1000],
                [ParticleState::<Vec3>::EMPTY; 1000],
                params,
            );
            assert_eq!(
                fluid.fill_block(domain, 0.1, Vec3::ZERO),
                Ok(per_axis.pow(3)),
                "{extent}"
            );
        }
    }
}
