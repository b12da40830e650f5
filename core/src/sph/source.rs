//! Where particles come from: a block lattice ([`Lattice`], used by
//! [`Fluid::fill_block`](super::Fluid::fill_block)) and a pipe [`Emitter`].

use crate::error::Error;
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;

use super::kernel::Kernels;
use super::{Fluid, ParticleState};

/// How a [`Lattice`] packs its points. Both packings hold one point per
/// `spacingᵈ` of the block (the same number density, so the same mass of
/// fluid for the same particle mass).
///
/// Which one to fill with: with the water preset's short support
/// (`h = 2·spacing`, about 12 neighbours in 2D and 33 in 3D) the kernel sum
/// depends on how the neighbours are arranged, not only on how many there
/// are. A fluid at rest under gravity does not stay on the cubic lattice:
/// a 2D column filled cubic reorders into a distorted triangular packing
/// within a second and packs about 1.4 % more particles per area to keep its
/// density sum at `ρ₀`, so its surface sinks by about 1.4 % of its height
/// (about one spacing at 80 spacings tall) whatever the walls. Filled close
/// packed, with the mass and gradient correction of that packing
/// ([`SphParams::fit_lattice`](super::SphParams::fit_lattice)), it starts
/// in the arrangement it keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Packing {
    /// The cubic (2D: square) lattice of the spacing: points at
    /// `min + (i + ½)·spacing` along each axis.
    Cubic,
    /// Close packed. 2D: the triangular lattice, rows along `x`, every
    /// other row shifted by half a pitch; 3D: face-centred cubic, the
    /// points of a cubic grid of pitch `spacing/∛2` whose indices have an
    /// even sum. The pitch along `x` (and `z`) is stretched, by at most
    /// half a pitch over the block, so that the block's width holds a whole
    /// number of pitches (the fluid meets both walls as the cubic lattice
    /// does); the pitch along `y` then keeps the density at one point per
    /// `spacingᵈ` (2D nominal pitches `1.0746·spacing` along a row,
    /// `0.9306·spacing` between rows; 3D `0.7937·spacing`).
    Close,
}

/// A regular lattice filling a box, cubic or close packed ([`Packing`]).
///
/// Cubic: points at `min + (i + ½)·spacing` along each axis, for every
/// `i ≥ 0` that keeps the point inside the (closed) box, i.e.
/// `round(extent / spacing)` points per axis.
///
/// When the extent is `k + ½` spacings the last point lies on the box's far
/// face; `f32` rounding of `min + (i + ½)·spacing` can land it one step past
/// the face, so every point is clamped to the box: every point is inside it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lattice<P: Point> {
    origin: P,
    max: P,
    spacing: f32,
    /// The grid's pitch per axis: `spacing` for the cubic lattice.
    pitch: [f32; 3],
    /// Grid points per axis (2D close packing: points per row, rows).
    counts: [u32; 3],
    packing: Packing,
}

/// `⌊extent/pitch + ½⌋` as a count, or the spacing error.
fn count(extent: f32, pitch: f32) -> Result<u32, Error> {
    // (i + ½)·s ≤ extent ⇔ i ≤ extent/s − ½: ⌊extent/s + ½⌋ points.
    // (⌊extent/s⌋ would drop a layer whenever the division rounds just
    // below an integer, as 1.3 / 0.1 does.)
    let n = libm::floorf(extent / pitch + 0.5);
    if n.is_finite() && n < 4.0e9 {
        Ok(n as u32)
    } else {
        Err(Error::InvalidConfig { field: "spacing" })
    }
}

impl<P: Point> Lattice<P> {
    /// The cubic lattice of `region` at `spacing`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a spacing that is not finite and positive
    /// or more than 2³² points; the region's [`BoundingBox::check`] error.
    pub fn new(region: P::Aabb, spacing: f32) -> Result<Self, Error> {
        Self::packed(region, spacing, Packing::Cubic)
    }

    /// The lattice of `region` at `spacing` with the given packing.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn packed(region: P::Aabb, spacing: f32, packing: Packing) -> Result<Self, Error> {
        region.check()?;
        if !(spacing.is_finite() && spacing > 0.0) {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        let extent = |k: usize| region.max().coord(k) - region.min().coord(k);
        let mut pitch = [spacing; 3];
        let mut counts = [1u32; 3];
        match packing {
            Packing::Cubic => {
                for (k, c) in counts.iter_mut().enumerate().take(P::DIM) {
                    *c = count(extent(k), spacing)?;
                }
            }
            Packing::Close => {
                // The nominal pitch along the rows, stretched to fit the
                // width; `y` then keeps one point per spacingᵈ: a·r = s²
                // (2D), 2·bx·by·bz = s³ (3D, half the grid points used).
                let nominal = if P::DIM == 2 {
                    spacing * libm::sqrtf(2.0 / libm::sqrtf(3.0))
                } else {
                    spacing / libm::cbrtf(2.0)
                };
                let mut cell = 1.0f32;
                for k in (0..P::DIM).filter(|&k| k != 1) {
                    let n = libm::roundf(extent(k) / nominal);
                    if !(n.is_finite() && n < 4.0e9) {
                        return Err(Error::InvalidConfig { field: "spacing" });
                    }
                    counts[k] = n as u32;
                    pitch[k] = if n >= 1.0 { extent(k) / n } else { nominal };
                    cell *= pitch[k];
                }
                let volume = if P::DIM == 2 {
                    spacing * spacing
                } else {
                    spacing * spacing * spacing * 0.5
                };
                pitch[1] = volume / cell;
                if !(pitch[1].is_finite() && pitch[1] > 0.0) {
                    return Err(Error::InvalidConfig { field: "spacing" });
                }
                counts[1] = count(extent(1), pitch[1])?;
            }
        }
        let total = counts[..P::DIM]
            .iter()
            .fold(1u64, |t, &c| t.saturating_mul(u64::from(c)));
        if total > u64::from(u32::MAX) {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        let half = P::from_fn(|k| 0.5 * pitch[k]);
        Ok(Self {
            origin: region.min() + half,
            max: region.max(),
            spacing,
            pitch,
            counts,
            packing,
        })
    }

    /// The packing.
    pub fn packing(&self) -> Packing {
        self.packing
    }

    /// The spacing: one point per `spacingᵈ`.
    pub fn spacing(&self) -> f32 {
        self.spacing
    }

    /// The distance between consecutive rows of points along `y` (the
    /// spacing for the cubic lattice; a layer of points in 3D close
    /// packing).
    pub fn row_pitch(&self) -> f32 {
        self.pitch[1]
    }

    /// The number of rows of points along `y` (layers in 3D close
    /// packing): the filled block is `rows() · row_pitch()` tall.
    pub fn rows(&self) -> u32 {
        self.counts[1]
    }

    /// Grid points of the close-packed 3D grid (every one for the others).
    fn grid_len(&self) -> usize {
        self.counts[..P::DIM].iter().map(|&c| c as usize).product()
    }

    /// `true` for a point of the grid that the lattice uses.
    fn used(&self, idx: [usize; 3]) -> bool {
        self.packing == Packing::Cubic
            || P::DIM == 2
            || (idx[0] + idx[1] + idx[2]).is_multiple_of(2)
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        let n = self.grid_len();
        if self.packing == Packing::Close && P::DIM == 3 {
            // The even index sums: half the grid, one more when every
            // count is odd (the corners are even).
            if self.counts.iter().all(|&c| c % 2 == 1) {
                n.div_ceil(2)
            } else {
                n / 2
            }
        } else {
            n
        }
    }

    /// `true` if the region is thinner than the spacing on some axis.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The grid index of grid point `i`, x fastest.
    fn index(&self, i: usize) -> [usize; 3] {
        let [nx, ny, _] = self.counts;
        [
            i % nx.max(1) as usize,
            (i / nx.max(1) as usize) % ny.max(1) as usize,
            i / (nx.max(1) as usize * ny.max(1) as usize),
        ]
    }

    /// The points, x fastest.
    pub fn points(&self) -> impl Iterator<Item = P> + Clone + '_ {
        (0..self.grid_len()).filter_map(move |i| {
            let idx = self.index(i);
            if !self.used(idx) {
                return None;
            }
            let p = match self.packing {
                Packing::Cubic => P::from_fn(|k| idx[k] as f32 * self.spacing),
                Packing::Close => P::from_fn(|k| {
                    // 2D: rows alternate between ¼ and ¾ of a pitch from
                    // the wall (the origin is at ½).
                    let shift = if P::DIM == 2 && k == 0 {
                        if idx[1].is_multiple_of(2) {
                            -0.25
                        } else {
                            0.25
                        }
                    } else {
                        0.0
                    };
                    (idx[k] as f32 + shift) * self.pitch[k]
                }),
            };
            Some((self.origin + p).min(self.max))
        })
    }

    /// Calls `f` with every offset from a point of the lattice, extended
    /// without bounds, to the points within `reach` (the point itself
    /// included): the neighbourhood of a particle inside the block.
    fn for_each_offset(&self, reach: f32, mut f: impl FnMut([f32; 3])) -> Result<(), Error> {
        let small = self.pitch[..P::DIM]
            .iter()
            .fold(f32::INFINITY, |a, &b| a.min(b));
        let m = libm::ceilf(reach / small);
        if !(m.is_finite() && m <= 128.0) {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        let m = m as i32 + 1;
        let nz = if P::DIM == 2 { 0 } else { m };
        let close = self.packing == Packing::Close;
        for a in -m..=m {
            for b in -m..=m {
                for c in -nz..=nz {
                    if close && P::DIM == 3 && (a + b + c).rem_euclid(2) != 0 {
                        continue;
                    }
                    // 2D close packing: the rows at odd distance are
                    // shifted by half a pitch (from an even row; an odd
                    // row's neighbourhood is its mirror image).
                    let shift = if close && P::DIM == 2 && b % 2 != 0 {
                        0.5
                    } else {
                        0.0
                    };
                    f([
                        (a as f32 + shift) * self.pitch[0],
                        b as f32 * self.pitch[1],
                        c as f32 * self.pitch[2],
                    ]);
                }
            }
        }
        Ok(())
    }

    /// The particle mass for which a particle inside this lattice has the
    /// density `rest_density` (the poly6 sum over the lattice points within
    /// `h`, its own included). For the cubic lattice this is
    /// [`SphParams::lattice_mass`](super::SphParams::lattice_mass).
    ///
    /// # Errors
    /// As [`SphParams::lattice_mass`](super::SphParams::lattice_mass).
    pub fn mass(&self, h: f32, rest_density: f32) -> Result<f32, Error> {
        if self.packing == Packing::Cubic {
            return super::SphParams::<P>::lattice_mass(h, self.spacing, rest_density);
        }
        let k = Kernels::new::<P>(h)?;
        if !(rest_density.is_finite() && rest_density > 0.0) {
            return Err(Error::InvalidConfig {
                field: "rest_density",
            });
        }
        let mut sum = 0.0f64;
        self.for_each_offset(h, |d| {
            sum += f64::from(k.poly6(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]))
        })?;
        super::mass_of_sum(rest_density, sum)
    }

    /// The pressure-gradient correction `1/κ` of this lattice (see
    /// [`SphParams::gradient_correction`](super::SphParams::gradient_correction),
    /// which it is for the cubic lattice): 1.180 for the 2D close packing
    /// and 1.117 for the 3D one at `h = 2·spacing`, unstretched (1.145 and
    /// 1.056 cubic).
    ///
    /// # Errors
    /// As [`mass`](Self::mass).
    pub fn gradient_correction(&self, h: f32) -> Result<f32, Error> {
        if self.packing == Packing::Cubic {
            return super::SphParams::<P>::gradient_correction(h, self.spacing);
        }
        let k = Kernels::new::<P>(h)?;
        let mut sums = (0.0f64, 0.0f64);
        self.for_each_offset(h, |d| {
            super::add_gradient_terms(&k, d[0] * d[0] + d[1] * d[1] + d[2] * d[2], &mut sums)
        })?;
        super::correction_of_sums::<P>(sums)
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

    use crate::geom::{Aabb2, Vec2};
    use crate::sph::kernel::Kernels;

    /// The density of the point of `lattice` nearest `c` (`None` if it is
    /// within `h` of the block's faces), summed over the lattice's own
    /// points, and the SPH gradient there of the field `f(x) = x·e` for
    /// each unit vector `e`, with `mass` and the gradient correction.
    fn measured<P: Point>(lattice: &Lattice<P>, h: f32, mass: f32, corr: f32) -> (f64, [f64; 3]) {
        let (sum, n) = lattice
            .points()
            .fold((P::ZERO, 0usize), |(a, n), p| (a + p, n + 1));
        let mid = sum * (1.0 / n as f32);
        let dist = |p: P| (p - mid).dot(p - mid);
        let i = lattice
            .points()
            .min_by(|&a, &b| dist(a).total_cmp(&dist(b)))
            .unwrap();
        let k = Kernels::new::<P>(h).unwrap();
        let mut rho = 0.0f64;
        for j in lattice.points() {
            rho += f64::from(mass * k.poly6((i - j).dot(i - j)));
        }
        // Σ V_j (f_j − f_i) ∇W_ij, V_j = m/ρ (uniform): the pressure
        // force's form for a linear field.
        let mut grad = [0.0f64; 3];
        for j in lattice.points() {
            let d = i - j;
            let r = libm::sqrtf(d.dot(d));
            if r > 0.0 && r < h {
                let g = k.spiky_gradient_factor(r, 1.0 / r);
                for (e, out) in grad.iter_mut().enumerate().take(P::DIM) {
                    let df = j.coord(e) - i.coord(e);
                    *out += f64::from(mass) / rho * f64::from(df * g * d.coord(e) * corr);
                }
            }
        }
        (rho, grad)
    }

    /// Both packings: every point inside the block, `len` the number of
    /// points, one point per `spacingᵈ` to within the block's boundary
    /// layer, and the mass and gradient correction exact at an interior
    /// point (its density sum over the lattice's own points is `ρ₀`, the
    /// gradient of a linear field is the field's own).
    #[test]
    fn packings_fill_the_block_at_one_point_per_cell_with_exact_sums() {
        fn check<P: Point>(region: P::Aabb, s: f32, packing: Packing) {
            let lattice = Lattice::<P>::packed(region, s, packing).unwrap();
            let (lo, hi) = (region.min(), region.max());
            let mut n = 0usize;
            for p in lattice.points() {
                let inside =
                    (0..P::DIM).all(|k| p.coord(k) >= lo.coord(k) && p.coord(k) <= hi.coord(k));
                assert!(inside, "{packing:?}: {p:?} outside");
                n += 1;
            }
            assert_eq!(n, lattice.len(), "{packing:?}");
            let volume: f32 = (0..P::DIM).map(|k| hi.coord(k) - lo.coord(k)).product();
            let per_cell = n as f32 * libm::powf(s, P::DIM as f32) / volume;
            assert!(
                (per_cell - 1.0).abs() < 0.04,
                "{packing:?} {}D: {per_cell}",
                P::DIM
            );
            let h = 2.0 * s;
            let mass = lattice.mass(h, 1000.0).unwrap();
            let corr = lattice.gradient_correction(h).unwrap();
            let (rho, grad) = measured(&lattice, h, mass, corr);
            assert!(
                (rho / 1000.0 - 1.0).abs() < 1e-4,
                "{packing:?} {}D: ρ {rho}",
                P::DIM
            );
            // The trace of the gradient tensor is exact; each diagonal term
            // is, up to the stretch of the pitches.
            let trace: f64 = grad.iter().sum::<f64>() / P::DIM as f64;
            assert!(
                (trace - 1.0).abs() < 1e-4,
                "{packing:?} {}D: {grad:?}",
                P::DIM
            );
            for g in &grad[..P::DIM] {
                assert!((g - 1.0).abs() < 0.03, "{packing:?} {}D: {grad:?}", P::DIM);
            }
            if packing == Packing::Cubic {
                assert_eq!(mass, SphParams::<P>::lattice_mass(h, s, 1000.0).unwrap());
                assert_eq!(corr, SphParams::<P>::gradient_correction(h, s).unwrap());
            } else {
                assert_ne!(mass, SphParams::<P>::lattice_mass(h, s, 1000.0).unwrap());
            }
        }
        for packing in [Packing::Cubic, Packing::Close] {
            let b2 = Aabb2::new(Vec2::ZERO, Vec2::new(0.31, 0.27)).unwrap();
            check::<Vec2>(b2, 0.01, packing);
            let b3 = Aabb3::new(Vec3::ZERO, Vec3::new(0.16, 0.13, 0.15)).unwrap();
            check::<Vec3>(b3, 0.01, packing);
        }
    }

    /// The cubic packing is the lattice `new` gives; a close packing's
    /// rows are its layers along `y`.
    #[test]
    fn cubic_packing_is_the_plain_lattice() {
        let b = Aabb3::new(Vec3::ZERO, Vec3::new(0.35, 0.2, 0.1)).unwrap();
        let plain = Lattice::<Vec3>::new(b, 0.05).unwrap();
        assert_eq!(Lattice::packed(b, 0.05, Packing::Cubic).unwrap(), plain);
        assert_eq!(plain.row_pitch(), 0.05);
        assert_eq!(plain.packing(), Packing::Cubic);
        let close = Lattice::<Vec2>::packed(
            Aabb2::new(Vec2::ZERO, Vec2::new(0.2, 0.2)).unwrap(),
            0.005,
            Packing::Close,
        )
        .unwrap();
        // Rows at (j + ½)·pitch, the first and last within the block.
        let rows = (0.2 / close.row_pitch() + 0.5) as u32;
        for p in close.points() {
            let j = p.y / close.row_pitch() - 0.5;
            assert!(
                (j - libm::roundf(j)).abs() < 1e-3 && (j as u32) < rows,
                "{p:?}"
            );
        }
        assert!((close.row_pitch() / 0.005 - 0.9306).abs() < 0.01);
    }

    /// Bad spacings and lattices too large to count are refused, for both
    /// packings, without panicking.
    #[test]
    fn bad_spacings_are_refused() {
        let b = Aabb3::new(Vec3::ZERO, Vec3::new(1.0, 1.0, 1.0)).unwrap();
        for packing in [Packing::Cubic, Packing::Close] {
            for s in [0.0, -1.0, f32::NAN, f32::INFINITY, 1e-6] {
                assert_eq!(
                    Lattice::<Vec3>::packed(b, s, packing),
                    Err(Error::InvalidConfig { field: "spacing" }),
                    "{packing:?} {s}"
                );
            }
            let l = Lattice::<Vec3>::packed(b, 0.1, packing).unwrap();
            assert!(l.mass(f32::NAN, 1000.0).is_err());
            assert!(l.mass(0.2, -1.0).is_err());
            assert!(l.gradient_correction(1e6).is_err());
        }
    }

    /// `fit_lattice`: the lattice's mass and correction, and the cohesion
    /// force per pair kept.
    #[test]
    fn fit_lattice_keeps_the_cohesion_per_pair() {
        let b = Aabb2::new(Vec2::ZERO, Vec2::new(0.2, 0.2)).unwrap();
        let p = SphParams::<Vec2>::water(b, 0.01, 0.2).unwrap();
        let l = Lattice::<Vec2>::packed(b, 0.01, Packing::Close).unwrap();
        let q = p.fit_lattice(&l).unwrap();
        assert_eq!(q.mass, l.mass(p.h, p.rest_density).unwrap());
        assert_eq!(q.gradient_correction, l.gradient_correction(p.h).unwrap());
        let rel = (q.surface_tension * q.mass) / (p.surface_tension * p.mass) - 1.0;
        assert!(rel.abs() < 1e-6, "{rel}");
        let cubic = Lattice::<Vec2>::new(b, 0.01).unwrap();
        assert_eq!(p.fit_lattice(&cubic).unwrap(), p);
        let mut fluid = Fluid::new([Vec2::ZERO; 500], [ParticleState::<Vec2>::EMPTY; 500], q);
        assert_eq!(fluid.fill_lattice(&l, Vec2::ZERO), Ok(l.len()));
        assert_eq!(
            fluid.fill_lattice(&l, Vec2::ZERO),
            Err(Error::CapacityExceeded { capacity: 500 })
        );
        assert_eq!(fluid.len(), l.len());
    }

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
