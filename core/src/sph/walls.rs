//! Boundary particles: walls and solids sampled as layers of particles that
//! complete the neighbourhood of the fluid next to them.
//!
//! The seed's walls ([`super::boundary`]) only clamp positions. A particle
//! at a clamped wall has no neighbours on the wall's side, so its density
//! sum falls short, the pressure gradient that should hold the fluid up is
//! missing, and a resting column sinks by several spacings. Boundary
//! particles fill that side of the kernel support with a lattice of fixed
//! particles that take part in the three sums that matter:
//!
//! * **density**: a fluid particle adds `m_b·W(|xᵢ − x_b|)` for every
//!   boundary particle within `h`, with `m_b` the lattice mass of the
//!   boundary's spacing ([`SphParams::lattice_mass`]);
//! * **pressure**: each boundary particle takes the pressure the fluid
//!   around it implies, extrapolated with the hydrostatic term (Adami,
//!   Hu and Adams 2012, "a generalized wall boundary condition"):
//!   `p_b = (Σ_f p_f W_bf + g·Σ_f ρ_f (x_b − x_f) W_bf) / Σ_f W_bf`, and
//!   the density the equation of state gives for that pressure;
//! * **forces**: the fluid particle gets the pressure and viscosity terms of
//!   the fluid–fluid pair (the same function), with the boundary particle's
//!   density and pressure, and for a no-slip wall the ghost velocity
//!   `2v_b − Σ_f v_f W_bf / Σ_f W_bf` (so the velocity interpolated at the
//!   wall is the wall's); a free-slip wall has no viscous term.
//!
//! Surface tension does not act between fluid and boundary (no adhesion).
//! The walls' acceleration is taken as zero in the extrapolation: walls are
//! static or move at a constant velocity.
//!
//! [`BoundaryParticles`] holds the particles in fixed memory, with any
//! [`NeighborSearch`] over them (built once, at the first step after a
//! change), and plugs into [`Fluid::step`](super::Fluid::step) as a
//! [`Collider`]: combine it with obstacles as the pair `(walls, obstacles)`.
//! The clamp walls of the domain stay in force as a last guard. The
//! parallel step ([`Fluid::par_step`](super::Fluid::par_step)) takes it as
//! a [`ParCollider`] and runs the boundary passes on the calling thread, in
//! id order, so its result does not depend on the number of workers.
//! Besides box tanks ([`BoundaryParticles::sample_box`]), spheres and boxes
//! are sampled by [`BoundaryParticles::sample_shape`] and moved by
//! [`BoundaryParticles::advance`].
//!
//! Cost per force evaluation: three queries of the boundary search per
//! fluid particle (density, pressure extrapolation, forces), `O(N)` with a
//! constant that is about the cost of a neighbour query on an empty
//! neighbourhood away from the walls.

use super::boundary::{Collider, ParCollider, Shape};
use super::kernel::Kernels;
use super::par::{LIST_GRAIN, LIST_TASKS};
use super::{EquationOfState, ParticleState, SphParams, pair_acceleration};
use crate::error::Error;
use crate::exec::{Executor, Parts, task_split};
use crate::geom::{BoundingBox, Point};
use crate::periodic::PeriodicBox;
use crate::storage::Storage;
use crate::traits::NeighborSearch;

/// How a wall acts on the fluid's velocity along it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Slip {
    /// The fluid sticks to the wall: viscosity acts against the ghost
    /// velocity that makes the interpolated velocity at the wall zero
    /// (the wall's own, for a moving one).
    NoSlip,
    /// The fluid slides along the wall: no viscous term with it, only
    /// pressure.
    FreeSlip,
}

/// One face of a box tank: closed by boundary particles, or open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Face {
    /// No boundary particles (an open top, or a periodic axis).
    Open,
    /// Boundary particles with this slip condition.
    Wall(Slip),
}

/// The faces of a box tank, in the order `−x, +x, −y, +y, −z, +z` (the last
/// two unused in 2D).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TankFaces(pub [Face; 6]);

impl TankFaces {
    /// Every face a wall of the given slip.
    pub const fn closed(slip: Slip) -> Self {
        Self([Face::Wall(slip); 6])
    }

    /// Every face a wall of the given slip except the top (`+y`), open.
    pub const fn open_top(slip: Slip) -> Self {
        let mut f = [Face::Wall(slip); 6];
        f[3] = Face::Open;
        Self(f)
    }

    /// Face `side` (0 low, 1 high) of `axis`.
    pub const fn face(&self, axis: usize, side: usize) -> Face {
        self.0[(2 * axis + side) % 6]
    }
}

/// A boundary particle's state besides its position: the velocity of its
/// solid, and what the last force evaluation extrapolated from the fluid.
///
/// `#[repr(C)]`; `8 + 8d + 4` bytes with `d` axes (36 in 3D, 28 in 2D).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BoundaryState<P> {
    /// Velocity of the solid the particle belongs to.
    pub velocity: P,
    /// The velocity it shows to viscosity (no-slip: `2v − ṽ` with `ṽ` the
    /// fluid's interpolated velocity; free-slip: unused).
    pub ghost_velocity: P,
    /// Density of the extrapolated pressure by the equation of state
    /// (`ρ₀` with no fluid in reach).
    pub density: f32,
    /// Extrapolated pressure (0 with no fluid in reach).
    pub pressure: f32,
    /// 1 for no-slip, 0 for free-slip.
    pub no_slip: u32,
}

impl<P: Point> Default for BoundaryState<P> {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<P: Point> BoundaryState<P> {
    /// An unused slot.
    pub const EMPTY: Self = Self {
        velocity: P::ZERO,
        ghost_velocity: P::ZERO,
        density: 0.0,
        pressure: 0.0,
        no_slip: 0,
    };
}

/// Boundary particles in fixed memory: positions in `X`, state in `S`
/// (capacity the shorter buffer), and a neighbour search `W` over them.
///
/// All particles are sampled at one spacing (the first sample's); their
/// mass is the lattice mass of that spacing at the fluid's `h` and `ρ₀`.
///
/// Memory: `(12d + 12)` bytes per slot (`48` in 3D, `36` in 2D: the
/// position and a [`BoundaryState`]) plus the search's over `capacity`
/// particles. A box tank of inner extents `Lₖ` with `L` layers on its closed
/// faces needs `Π(Lₖ/s + L·wₖ) − Π(Lₖ/s)` particles, with `wₖ` the number
/// of closed faces across axis `k` ([`box_count`]).
///
/// ```
/// use spatium::sph::walls::{box_count, BoundaryParticles, BoundaryState, Slip, TankFaces};
/// use spatium::sph::{Fluid, ParticleState, SphParams};
/// use spatium::uniform::{CellRecord, CellSortedHash, SortedParticle, TableSlot};
/// use spatium::{Aabb2, Vec2};
///
/// let s = 0.02;
/// let tank = Aabb2::new(Vec2::ZERO, Vec2::new(0.2, 0.3))?;
/// let mut walls = BoundaryParticles::new(
///     [Vec2::ZERO; 256],
///     [BoundaryState::EMPTY; 256],
///     CellSortedHash::<Vec2, _, _, _>::new(
///         [TableSlot::EMPTY; 512], [SortedParticle::EMPTY; 256], [CellRecord::EMPTY; 256]),
/// );
/// let faces = TankFaces::open_top(Slip::NoSlip);
/// assert_eq!(walls.sample_box(tank, s, 3, faces)?, box_count::<Vec2>(tank, s, 3, faces)?);
///
/// let params = SphParams::water(tank, s, 0.1)?;
/// let mut fluid = Fluid::new([Vec2::ZERO; 100], [ParticleState::EMPTY; 100], params);
/// fluid.fill_block(Aabb2::new(Vec2::ZERO, Vec2::new(0.2, 0.1))?, s, Vec2::ZERO)?;
/// let mut hash = CellSortedHash::<Vec2, _, _, _>::new(
///     [TableSlot::EMPTY; 256], [SortedParticle::EMPTY; 100], [CellRecord::EMPTY; 100]);
/// for _ in 0..5 {
///     fluid.step(&mut hash, &mut walls, &mut ())?;
/// }
/// // The floor layer has its full neighbourhood: no density deficit.
/// let floor = fluid.positions().iter().zip(fluid.state())
///     .filter(|(x, _)| x.y < s).map(|(_, st)| st.density / params.rest_density);
/// assert!(floor.into_iter().all(|r| r > 0.97));
/// # Ok::<(), spatium::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct BoundaryParticles<P: Point, X, S, W> {
    positions: X,
    state: S,
    len: usize,
    search: W,
    /// The spacing of the samples (0 before the first).
    spacing: f32,
    /// The radius the search was last built with (`NaN`: stale).
    built: f32,
    marker: core::marker::PhantomData<P>,
}

impl<P: Point, X: Storage<P>, S: Storage<BoundaryState<P>>, W: NeighborSearch<P>>
    BoundaryParticles<P, X, S, W>
{
    /// No particles, over the two buffers and the search (which must hold
    /// at least as many particles as will be sampled). Never fails and
    /// allocates nothing; `const`.
    pub const fn new(positions: X, state: S, search: W) -> Self {
        Self {
            positions,
            state,
            len: 0,
            search,
            spacing: 0.0,
            built: f32::NAN,
            marker: core::marker::PhantomData,
        }
    }

    /// Particles stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` without particles.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most particles the buffers hold.
    pub fn capacity(&self) -> usize {
        self.positions.as_ref().len().min(self.state.as_ref().len())
    }

    /// The sampling spacing (0 before the first sample).
    pub fn spacing(&self) -> f32 {
        self.spacing
    }

    /// Positions, by boundary particle id.
    pub fn positions(&self) -> &[P] {
        &self.positions.as_ref()[..self.len]
    }

    /// States (with the last evaluation's pressures), by id.
    pub fn state(&self) -> &[BoundaryState<P>] {
        &self.state.as_ref()[..self.len]
    }

    /// The search over the particles.
    pub fn search(&self) -> &W {
        &self.search
    }

    /// Removes every particle (the spacing is free again).
    pub fn clear(&mut self) {
        self.len = 0;
        self.spacing = 0.0;
        self.built = f32::NAN;
    }

    fn check_spacing(&self, spacing: f32) -> Result<(), Error> {
        if !(spacing.is_finite() && spacing > 0.0)
            || (self.len > 0 && spacing.to_bits() != self.spacing.to_bits())
        {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        Ok(())
    }

    /// Adds one particle at `x`, sampled at `spacing` (the same for every
    /// particle), belonging to a solid moving with `velocity`.
    ///
    /// # Errors
    /// [`Error::NonFinite`]; [`Error::InvalidConfig`] for a spacing that is
    /// not finite and positive or differs from the earlier samples';
    /// [`Error::CapacityExceeded`]. Nothing changes on error.
    pub fn push(&mut self, x: P, velocity: P, spacing: f32, slip: Slip) -> Result<u32, Error> {
        if !x.is_finite() || !velocity.is_finite() {
            return Err(Error::NonFinite);
        }
        self.check_spacing(spacing)?;
        if self.len >= self.capacity() {
            return Err(Error::CapacityExceeded {
                capacity: self.capacity(),
            });
        }
        let id = self.len;
        self.positions.as_mut()[id] = x;
        self.state.as_mut()[id] = BoundaryState {
            velocity,
            ghost_velocity: velocity,
            no_slip: u32::from(slip == Slip::NoSlip),
            ..BoundaryState::EMPTY
        };
        self.len += 1;
        self.spacing = spacing;
        self.built = f32::NAN;
        Ok(id as u32)
    }

    /// Samples the walls of a box tank around `domain` (the fluid's
    /// region): `layers` layers at `spacing` outside each closed face, the
    /// edges and corners between closed faces filled, none beyond an open
    /// face. Along each axis the points inside the domain sit at
    /// `lo + (i + ½)·sₖ` with `sₖ = Lₖ / round(Lₖ/spacing)` (`spacing`
    /// itself when the extent is a whole number of spacings, as a
    /// [`Fluid::fill_block`](super::Fluid::fill_block) lattice of the same
    /// spacing is), and the layers outside at `lo − (j + ½)·spacing` and
    /// `hi + (j + ½)·spacing`, so the fluid's lattice continues into the
    /// wall. A particle is no-slip if any closed face it lies beyond is.
    /// Returns how many were added.
    ///
    /// Layers needed: the kernel support must not reach past the last one
    /// from a fluid particle at the face, `layers ≥ h/spacing + ½`
    /// (3 for the presets' `h = 2·spacing`).
    ///
    /// # Errors
    /// As [`box_count`]; [`Error::CapacityExceeded`];
    /// as [`push`](Self::push). Nothing changes on error.
    pub fn sample_box(
        &mut self,
        domain: P::Aabb,
        spacing: f32,
        layers: u32,
        faces: TankFaces,
    ) -> Result<usize, Error> {
        let count = box_count::<P>(domain, spacing, layers, faces)?;
        self.check_spacing(spacing)?;
        if count > self.capacity() - self.len {
            return Err(Error::CapacityExceeded {
                capacity: self.capacity(),
            });
        }
        let lattice = BoxLattice::new(domain, spacing, layers, faces)?;
        self.push_all(
            lattice.points().map(|(x, slip)| (x, P::ZERO, slip)),
            spacing,
        )?;
        Ok(count)
    }

    /// Samples a solid as boundary particles: the points of a lattice of
    /// `spacing` inside the shape within `layers·spacing` of its surface, all
    /// moving with `velocity` ([`advance`](Self::advance) moves them). A box
    /// is sampled as [`sample_box`](Self::sample_box) samples a tank's walls
    /// from inside (points at `lo + (i + ½)·sₖ`); a sphere on the lattice
    /// through its centre (its centre a point). A triangle has no inside
    /// (refused). Returns how many were added.
    ///
    /// # Errors
    /// [`Shape::check`]'s errors; [`Error::InvalidShape`] for a triangle;
    /// [`Error::InvalidConfig`] for a bad spacing, `layers` of 0 or above
    /// 64, or a sample of more than 2²⁸ lattice points to visit;
    /// [`Error::NonFinite`] for the velocity; [`Error::CapacityExceeded`].
    /// Nothing changes on error.
    pub fn sample_shape(
        &mut self,
        shape: &Shape<P>,
        velocity: P,
        spacing: f32,
        layers: u32,
        slip: Slip,
    ) -> Result<usize, Error> {
        shape.check()?;
        if !velocity.is_finite() {
            return Err(Error::NonFinite);
        }
        self.check_spacing(spacing)?;
        if layers == 0 || layers > 64 {
            return Err(Error::InvalidConfig { field: "layers" });
        }
        let sample = ShapeLattice::new(shape, spacing, layers)?;
        // Counted up to the room left: a sample that does not fit is
        // refused without visiting the rest of its lattice.
        let room = self.capacity() - self.len;
        let mut count = 0usize;
        for _ in sample.points() {
            count += 1;
            if count > room {
                return Err(Error::CapacityExceeded {
                    capacity: self.capacity(),
                });
            }
        }
        self.push_all(sample.points().map(|x| (x, velocity, slip)), spacing)?;
        Ok(count)
    }

    /// Pushes every particle of a sample, or none: on the first refusal the
    /// ones already pushed are taken back (length, spacing and build state
    /// as before), so a refused sample changes nothing.
    fn push_all(
        &mut self,
        points: impl Iterator<Item = (P, P, Slip)>,
        spacing: f32,
    ) -> Result<(), Error> {
        let (len, old_spacing, built) = (self.len, self.spacing, self.built);
        for (x, v, slip) in points {
            if let Err(e) = self.push(x, v, spacing, slip) {
                self.len = len;
                self.spacing = old_spacing;
                self.built = built;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Moves every particle by its velocity times `dt` (kinematic solids;
    /// the search is rebuilt at the next step). Particles of static solids
    /// do not move.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a `dt` that is not finite or a position
    /// that would stop being finite; nothing moves then.
    pub fn advance(&mut self, dt: f32) -> Result<(), Error> {
        let n = self.len;
        if !dt.is_finite() {
            return Err(Error::NonFinite);
        }
        let (x, st) = (&self.positions.as_ref()[..n], &self.state.as_ref()[..n]);
        if !x
            .iter()
            .zip(st)
            .all(|(x, s)| (*x + s.velocity * dt).is_finite())
        {
            return Err(Error::NonFinite);
        }
        let mut moved = false;
        let st = &self.state.as_ref()[..n];
        for (x, s) in self.positions.as_mut()[..n].iter_mut().zip(st) {
            if s.velocity != P::ZERO {
                *x += s.velocity * dt;
                moved = true;
            }
        }
        if moved {
            self.built = f32::NAN;
        }
        Ok(())
    }

    /// Before a hook: the search built (if stale) and the boundary mass,
    /// the lattice mass of the samples' spacing; `None` without particles.
    fn ready(&mut self, p: &SphParams<P>, period: &PeriodicBox<P>) -> Result<Option<f32>, Error> {
        if self.len == 0 {
            return Ok(None);
        }
        self.ensure_built(p.h, period)?;
        SphParams::<P>::lattice_mass(p.h, self.spacing, p.rest_density).map(Some)
    }

    /// Builds the search over the particles at radius `h` if a change or
    /// another radius made it stale.
    fn ensure_built(&mut self, h: f32, period: &PeriodicBox<P>) -> Result<(), Error> {
        if self.built.to_bits() != h.to_bits() {
            self.built = f32::NAN;
            self.search.build(&self.positions.as_ref()[..self.len], h)?;
            if self.search.len() != self.len {
                return Err(Error::LengthMismatch {
                    expected: self.len,
                    got: self.search.len(),
                });
            }
            self.built = h;
        }
        // Periodic along exactly the fluid's periodic axes, over the same
        // period (the other axes may extend past the domain).
        let w = self.search.periodic();
        let same = (0..P::DIM).all(|k| {
            let (a, b) = (w.is_periodic_axis(k), period.is_periodic_axis(k));
            a == b
                && (!a
                    || (w.lo().coord(k) == period.lo().coord(k)
                        && w.hi().coord(k) == period.hi().coord(k)))
        });
        if same {
            Ok(())
        } else {
            Err(Error::InvalidConfig { field: "walls" })
        }
    }
}

/// How many particles [`BoundaryParticles::sample_box`] adds for a box
/// tank: `Π(nₖ + layers·wₖ) − Π nₖ`, with `nₖ = round(Lₖ/spacing)` and
/// `wₖ` the closed faces across axis `k`.
///
/// # Errors
/// The domain's [`BoundingBox::check`] error; [`Error::InvalidConfig`] for
/// a spacing that is not finite and positive, `layers` of 0 or above 64, or
/// a lattice (the box with its layers) of more than 2²⁸ points.
pub fn box_count<P: Point>(
    domain: P::Aabb,
    spacing: f32,
    layers: u32,
    faces: TankFaces,
) -> Result<usize, Error> {
    BoxLattice::<P>::new(domain, spacing, layers, faces).map(|l| l.count())
}

/// Most lattice points a sample visits (2²⁸): beyond, a box or shape is
/// refused as too fine for its spacing.
const MAX_VISITS: u128 = 1 << 28;

/// The lattice of [`BoundaryParticles::sample_box`].
struct BoxLattice<P: Point> {
    lo: P,
    hi: P,
    spacing: f32,
    layers: i64,
    faces: TankFaces,
    /// Points inside the domain along each axis.
    inner: [i64; 3],
}

impl<P: Point> BoxLattice<P> {
    fn new(domain: P::Aabb, spacing: f32, layers: u32, faces: TankFaces) -> Result<Self, Error> {
        domain.check()?;
        if !(spacing.is_finite() && spacing > 0.0) {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        if layers == 0 || layers > 64 {
            return Err(Error::InvalidConfig { field: "layers" });
        }
        let (lo, hi) = (domain.min(), domain.max());
        let mut inner = [1i64; 3];
        for (k, n) in inner.iter_mut().enumerate().take(P::DIM) {
            let cells = libm::roundf((hi.coord(k) - lo.coord(k)) / spacing);
            if !(cells.is_finite() && cells < 4.0e9) {
                return Err(Error::InvalidConfig { field: "spacing" });
            }
            *n = (cells as i64).max(1);
        }
        let l = Self {
            lo,
            hi,
            spacing,
            layers: i64::from(layers),
            faces,
            inner,
        };
        // Sampling visits every lattice point of the extended box: bound
        // them (which also bounds the sample).
        if l.visits() > MAX_VISITS {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        // The outermost layers must stay finite (a huge spacing times the
        // layers overflows `f32`): refused here, before any point is added.
        for k in 0..P::DIM {
            let (first, end) = l.range(k);
            if !(l.coord(k, first).is_finite() && l.coord(k, end - 1).is_finite()) {
                return Err(Error::InvalidConfig { field: "spacing" });
            }
        }
        Ok(l)
    }

    /// The index range along `axis`: `[first, end)`, with the layers
    /// beyond each closed face.
    fn range(&self, axis: usize) -> (i64, i64) {
        let wall = |side| matches!(self.faces.face(axis, side), Face::Wall(_));
        let first = if wall(0) { -self.layers } else { 0 };
        let end = self.inner[axis] + if wall(1) { self.layers } else { 0 };
        (first, end)
    }

    /// Lattice points of the extended box (inside and outside).
    fn visits(&self) -> u128 {
        (0..P::DIM)
            .map(|k| {
                let (a, b) = self.range(k);
                (b - a) as u128
            })
            .product()
    }

    fn count(&self) -> usize {
        let (mut all, mut inside) = (1u128, 1u128);
        for k in 0..P::DIM {
            let (a, b) = self.range(k);
            all *= (b - a) as u128;
            inside *= self.inner[k] as u128;
        }
        usize::try_from(all - inside).unwrap_or(usize::MAX)
    }

    /// Coordinate of index `i` along `axis`.
    fn coord(&self, axis: usize, i: i64) -> f32 {
        let (lo, hi) = (self.lo.coord(axis), self.hi.coord(axis));
        let n = self.inner[axis];
        if i < 0 {
            lo - ((-i) as f32 - 0.5) * self.spacing
        } else if i >= n {
            hi + ((i - n) as f32 + 0.5) * self.spacing
        } else {
            let s = (hi - lo) / n as f32;
            lo + (i as f32 + 0.5) * s
        }
    }

    /// Every point outside the domain, with its slip, in index order (the
    /// first axis fastest).
    fn points(&self) -> impl Iterator<Item = (P, Slip)> + '_ {
        let r = [self.range(0), self.range(1), self.range(2)];
        let dims = P::DIM;
        let span = move |k: usize| if k < dims { r[k].1 - r[k].0 } else { 1 };
        let total = span(0) * span(1) * span(2);
        (0..total).filter_map(move |flat| {
            let mut rest = flat;
            let mut idx = [0i64; 3];
            for (k, v) in idx.iter_mut().enumerate() {
                let s = span(k);
                *v = if k < dims { r[k].0 + rest % s } else { 0 };
                rest /= s;
            }
            let mut outside = false;
            let mut no_slip = false;
            for (k, &i) in idx.iter().enumerate().take(dims) {
                let side = if i < 0 {
                    0
                } else if i >= self.inner[k] {
                    1
                } else {
                    continue;
                };
                outside = true;
                no_slip |= self.faces.face(k, side) == Face::Wall(Slip::NoSlip);
            }
            outside.then(|| {
                let x = P::from_fn(|k| self.coord(k, idx[k]));
                (
                    x,
                    if no_slip {
                        Slip::NoSlip
                    } else {
                        Slip::FreeSlip
                    },
                )
            })
        })
    }
}

/// The sample of [`BoundaryParticles::sample_shape`].
struct ShapeLattice<P: Point> {
    shape: Shape<P>,
    /// First lattice point along each axis, spacing along each axis.
    origin: P,
    step: P,
    /// Lattice points along each axis.
    n: [i64; 3],
    depth: f32,
}

impl<P: Point> ShapeLattice<P> {
    fn new(shape: &Shape<P>, spacing: f32, layers: u32) -> Result<Self, Error> {
        let depth = layers as f32 * spacing;
        let mut n = [1i64; 3];
        let (origin, step) = match *shape {
            Shape::Box(b) => {
                let (lo, hi) = (b.min(), b.max());
                let mut step = [spacing; 3];
                for k in 0..P::DIM {
                    let cells = libm::roundf((hi.coord(k) - lo.coord(k)) / spacing);
                    if !(cells.is_finite() && cells < 4.0e9) {
                        return Err(Error::InvalidConfig { field: "spacing" });
                    }
                    n[k] = (cells as i64).max(1);
                    step[k] = (hi.coord(k) - lo.coord(k)) / n[k] as f32;
                }
                let step = P::from_fn(|k| step[k]);
                (P::from_fn(|k| lo.coord(k) + 0.5 * step.coord(k)), step)
            }
            Shape::Sphere { center, radius } => {
                let m = libm::floorf(radius / spacing);
                if !(m.is_finite() && m < 2.0e9) {
                    return Err(Error::InvalidConfig { field: "spacing" });
                }
                let m = m as i64;
                for v in n.iter_mut().take(P::DIM) {
                    *v = 2 * m + 1;
                }
                let o = P::from_fn(|k| center.coord(k) - m as f32 * spacing);
                (o, P::from_fn(|_| spacing))
            }
            Shape::Triangle(_) => return Err(Error::InvalidShape),
        };
        let visits = n.iter().map(|&v| v as u128).product::<u128>();
        if visits > MAX_VISITS {
            return Err(Error::InvalidConfig { field: "spacing" });
        }
        Ok(Self {
            shape: *shape,
            origin,
            step,
            n,
            depth,
        })
    }

    /// Depth of `x` below the surface (negative outside).
    fn depth_of(&self, x: P) -> f32 {
        match self.shape {
            Shape::Box(b) => (0..P::DIM)
                .map(|k| (x.coord(k) - b.min().coord(k)).min(b.max().coord(k) - x.coord(k)))
                .fold(f32::INFINITY, f32::min),
            Shape::Sphere { center, radius } => radius - libm::sqrtf(x.distance_squared(center)),
            Shape::Triangle(_) => -1.0,
        }
    }

    fn points(&self) -> impl Iterator<Item = P> + '_ {
        let total = self.n[0] * self.n[1] * self.n[2];
        (0..total).filter_map(move |flat| {
            let idx = [
                flat % self.n[0],
                (flat / self.n[0]) % self.n[1],
                flat / (self.n[0] * self.n[1]),
            ];
            let x = P::from_fn(|k| self.origin.coord(k) + idx[k] as f32 * self.step.coord(k));
            let d = self.depth_of(x);
            (d >= 0.0 && d < self.depth).then_some(x)
        })
    }
}

/// The density the equation of state gives for pressure `p` (its inverse;
/// `ρ₀` at zero pressure, never below `ρ₀/100`).
fn eos_density<P: Point>(params: &SphParams<P>, p: f32) -> f32 {
    let rho0 = params.rest_density;
    let rho = match params.eos {
        EquationOfState::Tait => {
            rho0 * libm::powf((p / params.stiffness + 1.0).max(1.0e-14), 1.0 / 7.0)
        }
        EquationOfState::IdealGas => rho0 + p / params.stiffness,
    };
    rho.max(0.01 * rho0)
}

impl<P, X, S, W> Collider<P> for BoundaryParticles<P, X, S, W>
where
    P: Point,
    X: Storage<P>,
    S: Storage<BoundaryState<P>>,
    W: NeighborSearch<P>,
{
    /// Nothing: boundary particles act through the pressure and viscosity
    /// forces (the domain's clamp walls stay as the last guard).
    fn collide(&mut self, _: &mut P, _: &mut P, _: f32, _: f32, _: &P::Aabb) -> Result<(), Error> {
        Ok(())
    }

    fn boundary_particles(&self) -> usize {
        self.len
    }

    fn add_boundary_density(
        &mut self,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        let Some(m) = self.ready(p, period)? else {
            return Ok(());
        };
        for (xi, s) in x.iter().zip(st.iter_mut()) {
            density_share(&self.search, *xi, s, k, m)?;
        }
        Ok(())
    }

    fn update_boundary(
        &mut self,
        x: &[P],
        st: &[ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        if self.ready(p, period)?.is_none() {
            return Ok(());
        }
        let n = self.len;
        // Accumulate from the fluid side, in fluid id order: the weight sum
        // in `density`, the pressure numerator in `pressure`, the weighted
        // velocity sum in `ghost_velocity`.
        let wall_x = &self.positions.as_ref()[..n];
        let ws = &mut self.state.as_mut()[..n];
        for w in ws.iter_mut() {
            w.density = 0.0;
            w.pressure = 0.0;
            w.ghost_velocity = P::ZERO;
        }
        let g = p.gravity;
        for (xf, sf) in x.iter().zip(st) {
            self.search.for_each_within(*xf, |b, d2| {
                let b = b as usize;
                if let (Some(w), Some(&xb)) = (ws.get_mut(b), wall_x.get(b)) {
                    let wgt = k.poly6(d2);
                    let lift = sf.density * g.dot(period.offset(xb, *xf));
                    w.density += wgt;
                    w.pressure += (sf.pressure + lift) * wgt;
                    w.ghost_velocity += sf.velocity * wgt;
                }
            })?;
        }
        for w in ws.iter_mut() {
            let sum = w.density;
            if sum > 0.0 {
                let mut pb = w.pressure / sum;
                if p.clamp_negative_pressure {
                    pb = pb.max(0.0);
                }
                w.pressure = pb;
                w.density = eos_density(p, pb);
                w.ghost_velocity = w.velocity * 2.0 - w.ghost_velocity * (1.0 / sum);
            } else {
                w.pressure = 0.0;
                w.density = p.rest_density;
                w.ghost_velocity = w.velocity;
            }
        }
        Ok(())
    }

    fn add_boundary_forces(
        &mut self,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        let Some(m) = self.ready(p, period)? else {
            return Ok(());
        };
        let (no_slip, free_slip) = Self::slip_params(p, m);
        let walls = self.wall_view(k, &no_slip, &free_slip, period);
        for (xi, si) in x.iter().zip(st.iter_mut()) {
            walls.force(*xi, si)?;
        }
        Ok(())
    }
}

/// The boundary particles' density share of the fluid particle at `xi`:
/// its kernel sum over them, times their mass `m`.
#[inline]
fn density_share<P: Point, W: NeighborSearch<P>>(
    search: &W,
    xi: P,
    s: &mut ParticleState<P>,
    k: &Kernels,
    m: f32,
) -> Result<(), Error> {
    let mut sum = 0.0f32;
    search.for_each_within(xi, |_, d2| sum += k.poly6(d2))?;
    s.density += m * sum;
    Ok(())
}

/// What the forces pass reads of the boundary particles: the search, their
/// positions and states, and the parameters of each slip condition.
struct WallView<'a, P: Point, W> {
    search: &'a W,
    x: &'a [P],
    st: &'a [BoundaryState<P>],
    k: &'a Kernels,
    no_slip: &'a SphParams<P>,
    free_slip: &'a SphParams<P>,
    period: &'a PeriodicBox<P>,
}

impl<P: Point, W: NeighborSearch<P>> WallView<'_, P, W> {
    /// Adds the boundary particles' pressure and viscosity forces on the
    /// fluid particle at `xi` to its acceleration.
    #[inline]
    fn force(&self, xi: P, si: &mut ParticleState<P>) -> Result<(), Error> {
        let mut acc = P::ZERO;
        let me = *si;
        self.search.for_each_within(xi, |b, d2| {
            let b = b as usize;
            if let (Some(w), Some(&xb)) = (self.st.get(b), self.x.get(b)) {
                let (q, v) = if w.no_slip != 0 {
                    (self.no_slip, w.ghost_velocity)
                } else {
                    (self.free_slip, me.velocity)
                };
                let other = ParticleState {
                    velocity: v,
                    density: w.density,
                    pressure: w.pressure,
                    ..ParticleState::EMPTY
                };
                acc += pair_acceleration(self.k, q, self.period.offset(xi, xb), d2, &me, &other);
            }
        })?;
        si.acceleration += acc;
        Ok(())
    }
}

impl<P, X, S, W> BoundaryParticles<P, X, S, W>
where
    P: Point,
    X: Storage<P>,
    S: Storage<BoundaryState<P>>,
    W: NeighborSearch<P>,
{
    fn wall_view<'a>(
        &'a self,
        k: &'a Kernels,
        no_slip: &'a SphParams<P>,
        free_slip: &'a SphParams<P>,
        period: &'a PeriodicBox<P>,
    ) -> WallView<'a, P, W> {
        let n = self.len;
        WallView {
            search: &self.search,
            x: self.positions.as_ref().get(..n).unwrap_or(&[]),
            st: self.state.as_ref().get(..n).unwrap_or(&[]),
            k,
            no_slip,
            free_slip,
            period,
        }
    }

    /// The forces pass's parameters: the fluid's with the boundary
    /// particles' mass `m` and no surface tension, and without viscosity
    /// for free-slip walls.
    fn slip_params(p: &SphParams<P>, m: f32) -> (SphParams<P>, SphParams<P>) {
        let no_slip = SphParams {
            mass: m,
            surface_tension: 0.0,
            ..*p
        };
        let free_slip = SphParams {
            viscosity: 0.0,
            ..no_slip
        };
        (no_slip, free_slip)
    }
}

/// Runs `f` on every fluid particle `(x[i], st[i])` in tasks on `exec`;
/// the first error in id order (each task stops at its first).
fn par_fluid<P, E, F>(exec: &E, x: &[P], st: &mut [ParticleState<P>], f: F) -> Result<(), Error>
where
    P: Point,
    E: Executor,
    F: Fn(P, &mut ParticleState<P>) -> Result<(), Error> + Sync,
{
    let n = x.len().min(st.len());
    let (tasks, grain) = task_split(n, LIST_GRAIN, LIST_TASKS);
    let mut results = [None; LIST_TASKS];
    exec.run(
        tasks,
        (
            Parts::chunks(&mut st[..n], grain),
            Parts::chunks(results.get_mut(..tasks).unwrap_or(&mut []), 1),
        ),
        |_, (ss, mut r)| {
            let start = ss.start();
            for (i, s) in ss.into_slice().iter_mut().enumerate() {
                let Some(&xi) = x.get(start + i) else {
                    continue;
                };
                if let Err(e) = f(xi, s) {
                    if let Some(r) = r.slice().first_mut() {
                        *r = Some(e);
                    }
                    break;
                }
            }
        },
    );
    match results.iter().take(tasks).flatten().next() {
        Some(&e) => Err(e),
        None => Ok(()),
    }
}

/// The parallel step: the walls' clamp, and the boundary particles' density
/// share and forces as gathers per fluid particle in tasks (the pressure
/// update, which accumulates into the boundary particles from the fluid
/// side, runs on the calling thread in fluid id order); the result is the
/// same for every executor.
impl<P, X, S, W> ParCollider<P> for BoundaryParticles<P, X, S, W>
where
    P: Point,
    X: Storage<P>,
    S: Storage<BoundaryState<P>>,
    W: NeighborSearch<P> + Sync,
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
        // The clamp alone: what `()` does.
        ().par_collide(exec, x, state, radius, damping, walls)
    }

    /// A gather per fluid particle, in tasks: each particle's sum runs in
    /// the same order as in the serial hook, so the result is the same for
    /// every executor.
    fn par_add_boundary_density<E: Executor>(
        &mut self,
        exec: &E,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        let Some(m) = self.ready(p, period)? else {
            return Ok(());
        };
        let search = &self.search;
        par_fluid(exec, x, st, |xi, s| density_share(search, xi, s, k, m))
    }

    /// A gather per fluid particle, in tasks, as above.
    fn par_add_boundary_forces<E: Executor>(
        &mut self,
        exec: &E,
        x: &[P],
        st: &mut [ParticleState<P>],
        k: &Kernels,
        p: &SphParams<P>,
        period: &PeriodicBox<P>,
    ) -> Result<(), Error> {
        let Some(m) = self.ready(p, period)? else {
            return Ok(());
        };
        let (no_slip, free_slip) = Self::slip_params(p, m);
        let walls = self.wall_view(k, &no_slip, &free_slip, period);
        par_fluid(exec, x, st, |xi, s| walls.force(xi, s))
    }
}

/// Occupancy of [`BoundaryParticles`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BoundaryStats {
    /// Particles stored.
    pub particles: usize,
    /// Particles the buffers hold.
    pub capacity: usize,
}

impl<P, X, S, W> crate::inspect::Inspect for BoundaryParticles<P, X, S, W>
where
    P: Point,
    X: Storage<P>,
    S: Storage<BoundaryState<P>>,
    W: NeighborSearch<P>,
{
    type Stats = BoundaryStats;

    /// Bytes of the two buffers, `(12d + 12)` per slot (the search's own
    /// are not counted: ask it).
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.positions.as_ref())
            + core::mem::size_of_val(self.state.as_ref())
    }

    fn stats(&self) -> BoundaryStats {
        BoundaryStats {
            particles: self.len,
            capacity: self.capacity(),
        }
    }
}
