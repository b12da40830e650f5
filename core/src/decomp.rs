//! Domain decomposition for running across machines: what a distributed
//! simulation needs of the geometry, independent of any transport.
//!
//! * [`Decomposition::build`]: **recursive coordinate bisection** (RCB) of a
//!   domain box into `ranks` subdomains, any `ranks >= 1`, balanced by
//!   per-element weights (or unit weights). A cell holding `r` ranks is cut
//!   along its longest axis into `⌊r/2⌋` ranks below the cut and `⌈r/2⌉`
//!   above it, at the position that gives the lower side the same share
//!   `⌊r/2⌋ / r` of the cell's weight, found by a weighted selection over a
//!   caller-provided scratch slice of indices (no sort, no allocation).
//! * [`Decomposition::owner`] / [`Decomposition::assign`]: which rank owns a
//!   position, by a walk of the `ranks − 1` cuts.
//! * [`Decomposition::for_each_ghost`]: the ghost (halo) set of a rank: every
//!   element, or periodic image of an element, within a radius of the rank's
//!   subdomain that the rank does not already own.
//! * [`Decomposition::for_each_migration`]: which elements changed owner
//!   after a step, with per-rank counts.
//!
//! Elements are points (positions); for boxes, pass their centres. Element
//! `i` of the positions slice has id `i`.
//!
//! # Subdomains tile the domain
//!
//! The subdomains are closed boxes for reporting, but ownership is
//! **half-open on the upper side**: a position `x` on a cut (`x[axis] ==
//! at`) belongs to the upper side, and only faces that lie on no cut (the
//! domain's upper faces) are closed. Every position of the closed domain
//! box has exactly one owner: equivalently, **the owner of `x` is the
//! highest rank whose closed box contains `x`**. The subdomains' volumes add
//! up to the domain's and their interiors are disjoint. A cut may lie on a
//! cell's face (a flat subdomain): when every element of a cell is on one
//! side of all the places a cut can go, or (at the domain's upper face)
//! when elements sit on the face itself. [`Decomposition::owner`] and the
//! build agree on every element: the build places each cut strictly above
//! every element it sends down and at or below every element it sends up.
//!
//! # Load balance
//!
//! Let `δ` be the heaviest weight of a set of elements sharing one
//! coordinate value on one axis (for distinct coordinates: the largest
//! element weight). Cuts can only fall between distinct coordinates; each
//! one is placed at the achievable position nearest the target, so a cut's
//! lower side is within `δ/2` of its target, or within `δ` when a group of
//! elements sits on the domain's upper face (it cannot go below a cut
//! there). Those errors are shared among the ranks below each cut, so every
//! rank's achieved weight ([`Decomposition::loads`]) is within **`2.3 δ`**
//! of the ideal share `total / ranks`: `δ · Σ 1/tₖ` over the smallest chain
//! of rank counts from a leaf to the root, `tₖ = 1, 2, 3, 5, 9, 17, …`
//! (about `2.27 δ`; `1.14 δ` without elements on upper faces). The tests
//! check this bound on every scenario and report the worst ratio found.
//!
//! # Ghosts
//!
//! An element (or image) at `q` is within radius `h` of a box when the
//! Euclidean distance from `q` to the box is **strictly** less than `h`,
//! computed in `f32` as `Σₖ gₖ²  < h * h` with `gₖ = max(lo - q, q - hi, 0)`
//! per axis (the crate's strict "within radius" convention). Because
//! `gₖ <= |qₖ - pₖ|` for every point `p` of the box, and rounding is
//! monotone, every element within `h` of an owned element by
//! [`Point::distance_squared`] is a ghost.
//!
//! Along a periodic axis the domain is a torus of extent `L = hi - lo`;
//! each element is also tested at its images `x ± L` (every combination
//! over the periodic axes: 3, 9 or 27 positions). The visitor gets the
//! element's id and the **shift** to add to its position, so the rank sees
//! the ghost at `position + shift`. An owned element is never its own ghost
//! at shift zero, but its periodic image is reported when it falls within
//! `h` of the owner's box (a subdomain spanning a whole periodic axis sees
//! its own elements across the boundary). A radius above `L / 2` along a
//! periodic axis is refused: one element could then be a ghost at both `+L`
//! and `-L`.
//!
//! # Cost
//!
//! With `N` elements, `R` ranks and `D` axes, `p` of them periodic:
//!
//! | operation | time |
//! |---|---|
//! | [`build`](Decomposition::build) | `O(N log R)` (one linear-time selection per level: `core`'s `select_nth_unstable`, worst case linear) |
//! | [`owner`](Decomposition::owner) | `O(log R)` |
//! | [`assign`](Decomposition::assign) | `O(N log R)` |
//! | [`for_each_ghost`](Decomposition::for_each_ghost) | `O(N (log R + 3^p D))` |
//! | [`for_each_migration`](Decomposition::for_each_migration) | `O(N log R + R)` |
//! | [`subdomain`](Decomposition::subdomain) | `O(1)` |
//!
//! # Memory
//!
//! A decomposition over `R` ranks holds `R` boxes, `R − 1` [`Cut`]s (8
//! bytes) and `R` loads (`f64`): **`40R − 8` bytes in 3D, `32R − 8` in
//! 2D**. The build borrows a scratch slice of `N` `u32` (`4N` bytes) and
//! keeps nothing of it; the recursion is `⌈log₂ R⌉` frames deep.
//!
//! # Example
//!
//! ```
//! use spatium::decomp::{Cut, Decomposition, Periodic};
//! use spatium::{Aabb2, BoundingBox, Vec2};
//!
//! let domain = Aabb2::new(Vec2::new(0.0, 0.0), Vec2::new(4.0, 1.0))?;
//! let positions: Vec<Vec2> = (0..40).map(|i| Vec2::new(i as f32 * 0.1, 0.5)).collect();
//! let (mut boxes, mut cuts, mut loads) = ([Aabb2::ZERO; 4], [Cut::EMPTY; 3], [0.0f64; 4]);
//! let mut d = Decomposition::<Vec2, _, _, _>::new(&mut boxes[..], &mut cuts[..], &mut loads[..]);
//! let mut scratch = vec![0u32; positions.len()];
//! d.build(domain, 4, &positions, None, &mut scratch)?;
//! assert_eq!(d.loads(), &[10.0; 4]);
//! assert_eq!(d.owner(Vec2::new(0.05, 0.5))?, 0);
//! // Rank 0's ghosts within 0.22, the x axis periodic: two from rank 1, and
//! // two from rank 3 seen across the boundary (shift -4).
//! let mut ghosts = 0;
//! d.for_each_ghost(0, &positions, 0.22, Periodic::new(0b01), |_id, _shift| ghosts += 1)?;
//! assert_eq!(ghosts, 4);
//! # Ok::<(), spatium::Error>(())
//! ```

use core::cmp::Ordering;

use crate::error::{Corruption, Error, Validate, ensure};
use crate::geom::{BoundingBox, Point};
use crate::storage::Storage;

/// One cut of the bisection tree: positions with `coord(axis) < at` go to
/// the lower ranks, the others to the upper ones.
///
/// The cut between ranks `m − 1` and `m` is stored at index `m − 1`: a cell
/// of ranks `lo..hi` is cut at `mid = lo + (hi − lo) / 2`, and every such
/// `mid` is distinct, so the tree needs no child links.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Cut {
    /// The axis cut (`0..DIM`).
    pub axis: u32,
    /// The cut's coordinate along that axis.
    pub at: f32,
}

impl Cut {
    /// An unused cut (the `Default`).
    pub const EMPTY: Self = Self { axis: 0, at: 0.0 };
}

/// Which axes of the domain are periodic: bit `k` for axis `k` (bits beyond
/// the dimension are ignored, so [`Periodic::ALL`] serves 2D and 3D).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Periodic(u8);

impl Periodic {
    /// No periodic axis.
    pub const NONE: Self = Self(0);
    /// Every axis periodic.
    pub const ALL: Self = Self(0b111);
    /// From a bit mask: bit `k` set makes axis `k` periodic.
    pub const fn new(mask: u8) -> Self {
        Self(mask)
    }
    /// Whether axis `k` is periodic.
    pub const fn is_periodic(self, k: usize) -> bool {
        k < 8 && self.0 & (1 << k) != 0
    }
}

/// A recursive-coordinate-bisection decomposition of a domain box into
/// subdomains, one per rank, over caller-provided buffers: `B` holds the
/// subdomain boxes, `C` the cuts, `W` the achieved weight (load) per rank.
///
/// Up to [`capacity`](Self::capacity) ranks: the smallest of `B`'s length,
/// `W`'s length and `C`'s length plus one. See the [module docs](self) for
/// the conventions, costs and memory.
#[derive(Clone, Debug)]
pub struct Decomposition<P: Point, B, C, W> {
    boxes: B,
    cuts: C,
    loads: W,
    domain: P::Aabb,
    ranks: u32,
}

/// The refusal of every query before the first build.
const NOT_BUILT: Error = Error::InvalidConfig {
    field: "ranks (not built)",
};

impl<P: Point, B: Storage<P::Aabb>, C: Storage<Cut>, W: Storage<f64>> Decomposition<P, B, C, W> {
    /// An empty decomposition (no ranks until [`build`](Self::build)) over
    /// the given buffers.
    pub const fn new(boxes: B, cuts: C, loads: W) -> Self {
        Self {
            boxes,
            cuts,
            loads,
            domain: <P::Aabb as BoundingBox>::ZERO,
            ranks: 0,
        }
    }

    /// The most ranks the buffers hold.
    pub fn capacity(&self) -> usize {
        let b = self.boxes.as_ref().len();
        let w = self.loads.as_ref().len();
        let c = self.cuts.as_ref().len().saturating_add(1);
        b.min(w).min(c)
    }

    /// Ranks of the last build (0 before the first).
    pub fn ranks(&self) -> usize {
        self.ranks as usize
    }

    /// The domain of the last build.
    pub fn domain(&self) -> P::Aabb {
        self.domain
    }

    /// Subdomain boxes, one per rank.
    pub fn subdomains(&self) -> &[P::Aabb] {
        self.boxes.as_ref().get(..self.ranks()).unwrap_or(&[])
    }

    /// The `ranks − 1` cuts ([`Cut`] documents their layout).
    pub fn cuts(&self) -> &[Cut] {
        self.cuts
            .as_ref()
            .get(..self.ranks().saturating_sub(1))
            .unwrap_or(&[])
    }

    /// The weight each rank received in the last build (its load): the sum
    /// of the weights of the elements it owns.
    pub fn loads(&self) -> &[f64] {
        self.loads.as_ref().get(..self.ranks()).unwrap_or(&[])
    }

    /// Subdomain of `rank` (a closed box; ownership is half-open, see the
    /// [module docs](self)).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] if `rank` is not below [`ranks`](Self::ranks).
    pub fn subdomain(&self, rank: u32) -> Result<P::Aabb, Error> {
        self.subdomains()
            .get(rank as usize)
            .copied()
            .ok_or(Error::InvalidConfig { field: "rank" })
    }

    /// Builds the decomposition of `domain` into `ranks` subdomains from the
    /// element `positions` (inside the closed domain box) and their
    /// `weights` (`None`: unit weights), using `scratch` (at least
    /// `positions.len()` entries, contents ignored and left permuted) for the
    /// selection. `O(N log R)`.
    ///
    /// # Errors
    ///
    /// Nothing changes on error.
    /// * [`Error::NonFinite`], [`Error::InvertedBox`]: a bad domain box.
    /// * [`Error::InvalidConfig`] `ranks`: zero or above `u32::MAX`.
    /// * [`Error::BufferTooSmall`]: more ranks than [`capacity`](Self::capacity),
    ///   or `scratch` shorter than `positions`.
    /// * [`Error::CapacityExceeded`]: more than `u32::MAX` elements.
    /// * [`Error::LengthMismatch`]: `weights` of another length than `positions`.
    /// * [`Error::NonFinite`]: a position or weight is NaN or infinite.
    /// * [`Error::InvalidConfig`] `weights`: a negative weight.
    /// * [`Error::OutOfRange`]: a position outside the domain box.
    pub fn build(
        &mut self,
        domain: P::Aabb,
        ranks: usize,
        positions: &[P],
        weights: Option<&[f32]>,
        scratch: &mut [u32],
    ) -> Result<(), Error> {
        domain.check()?;
        if ranks == 0 || u32::try_from(ranks).is_err() {
            return Err(Error::InvalidConfig { field: "ranks" });
        }
        if ranks > self.capacity() {
            return Err(Error::BufferTooSmall {
                needed: ranks,
                available: self.capacity(),
            });
        }
        let n = positions.len();
        ids_fit(n)?;
        if scratch.len() < n {
            return Err(Error::BufferTooSmall {
                needed: n,
                available: scratch.len(),
            });
        }
        if let Some(w) = weights {
            if w.len() != n {
                return Err(Error::LengthMismatch {
                    expected: n,
                    got: w.len(),
                });
            }
            for &x in w {
                if !x.is_finite() {
                    return Err(Error::NonFinite);
                }
                if x < 0.0 {
                    return Err(Error::InvalidConfig { field: "weights" });
                }
            }
        }
        check_positions(&domain, positions)?;

        let idx = &mut scratch[..n];
        for (i, s) in idx.iter_mut().enumerate() {
            *s = i as u32;
        }
        let el = Elements { positions, weights };
        let out = Out {
            boxes: &mut self.boxes.as_mut()[..ranks],
            cuts: &mut self.cuts.as_mut()[..ranks - 1],
            loads: &mut self.loads.as_mut()[..ranks],
        };
        bisect(&el, out, domain, idx);
        self.domain = domain;
        self.ranks = ranks as u32;
        Ok(())
    }

    /// The rank owning position `x`: an `O(log R)` walk of the cuts.
    ///
    /// # Errors
    ///
    /// [`Error::NonFinite`] for a NaN or infinite coordinate,
    /// [`Error::OutOfRange`] for a position outside the domain box,
    /// [`Error::InvalidConfig`] before the first build.
    pub fn owner(&self, x: P) -> Result<u32, Error> {
        self.built()?;
        check_position(&self.domain, x)?;
        Ok(self.walk(x))
    }

    /// [`Error::InvalidConfig`] before the first build.
    fn built(&self) -> Result<(), Error> {
        if self.ranks == 0 {
            return Err(NOT_BUILT);
        }
        Ok(())
    }

    /// The owner of a position known to be in the domain.
    fn walk(&self, x: P) -> u32 {
        let cuts = self.cuts();
        let (mut lo, mut hi) = (0usize, self.ranks());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let Some(c) = cuts.get(mid - 1) else { break };
            if x.coord(c.axis as usize) < c.at {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        lo as u32
    }

    /// Writes the owner of every position to `owners` (`O(N log R)`).
    ///
    /// # Errors
    ///
    /// Nothing is written on error. [`Error::LengthMismatch`] if `owners`
    /// has another length than `positions`; then as [`owner`](Self::owner).
    pub fn assign(&self, positions: &[P], owners: &mut [u32]) -> Result<(), Error> {
        self.built()?;
        if owners.len() != positions.len() {
            return Err(Error::LengthMismatch {
                expected: positions.len(),
                got: owners.len(),
            });
        }
        check_positions(&self.domain, positions)?;
        for (o, &p) in owners.iter_mut().zip(positions) {
            *o = self.walk(p);
        }
        Ok(())
    }

    /// Calls `f(id, shift)` for every ghost of `rank`: every element not
    /// owned by `rank` whose position is strictly within `radius` of the
    /// rank's subdomain, and every periodic image (`position + shift`,
    /// `shift` a combination of `±L` along the periodic axes) of any element,
    /// owned or not, within `radius` of it. Elements in ascending id order;
    /// for one element, shifts in a fixed order (per axis `-L`, `0`, `+L`,
    /// axis 0 fastest). See the [module docs](self) for the exact test.
    /// `O(N (log R + 3^p D))`.
    ///
    /// # Errors
    ///
    /// Checked before the first call of `f`:
    /// * [`Error::InvalidConfig`] `rank`: not below [`ranks`](Self::ranks)
    ///   (or not built);
    /// * [`Error::InvalidRadius`]: `radius` not finite and positive, or
    ///   above half the domain's extent along a periodic axis;
    /// * [`Error::InvalidConfig`] `periodic`: a periodic axis whose extent
    ///   overflows `f32`;
    /// * [`Error::NonFinite`], [`Error::OutOfRange`]: a position NaN,
    ///   infinite or outside the domain;
    /// * [`Error::CapacityExceeded`]: more than `u32::MAX` elements.
    pub fn for_each_ghost(
        &self,
        rank: u32,
        positions: &[P],
        radius: f32,
        periodic: Periodic,
        mut f: impl FnMut(u32, P),
    ) -> Result<(), Error> {
        self.built()?;
        let own = self.subdomain(rank)?;
        if !(radius.is_finite() && radius > 0.0) {
            return Err(Error::InvalidRadius);
        }
        let (lo, hi) = (self.domain.min(), self.domain.max());
        let extent = P::from_fn(|k| hi.coord(k) - lo.coord(k));
        for k in 0..P::DIM {
            if periodic.is_periodic(k) {
                let l = extent.coord(k);
                if !l.is_finite() {
                    return Err(Error::InvalidConfig { field: "periodic" });
                }
                if radius > 0.5 * l {
                    return Err(Error::InvalidRadius);
                }
            }
        }
        ids_fit(positions.len())?;
        check_positions(&self.domain, positions)?;
        let r2 = radius * radius;
        let images = 3usize.pow(P::DIM as u32);
        for (id, &p) in positions.iter().enumerate() {
            let owned = self.walk(p) == rank;
            'image: for code in 0..images {
                let mut rest = code;
                let mut zero = true;
                let mut digits = [1usize; 3];
                for (k, d) in digits.iter_mut().enumerate().take(P::DIM) {
                    *d = rest % 3;
                    rest /= 3;
                    if *d != 1 {
                        if !periodic.is_periodic(k) {
                            continue 'image;
                        }
                        zero = false;
                    }
                }
                if zero && owned {
                    continue;
                }
                let shift = P::from_fn(|k| match digits[k] {
                    0 => -extent.coord(k),
                    2 => extent.coord(k),
                    _ => 0.0,
                });
                if box_distance_squared(&own, p + shift) < r2 {
                    f(id as u32, shift);
                }
            }
        }
        Ok(())
    }

    /// Calls `f(id, from, to)` for every element whose owner at its new
    /// position (`to`) differs from `previous[id]` (`from`), in ascending id
    /// order, and sets `counts[rank]` to the number of elements moving to
    /// `rank` (`counts` is zeroed first; entries from [`ranks`](Self::ranks)
    /// on are left alone). Passing only one rank's elements gives that
    /// rank's send counts. `O(N log R + R)`.
    ///
    /// # Errors
    ///
    /// Checked before anything is written or `f` called:
    /// [`Error::LengthMismatch`] if `previous` and `positions` differ in
    /// length, [`Error::BufferTooSmall`] if `counts` is shorter than
    /// [`ranks`](Self::ranks), [`Error::InvalidConfig`] `previous` for a
    /// previous owner not below [`ranks`](Self::ranks), then as
    /// [`owner`](Self::owner) for the positions; [`Error::CapacityExceeded`]
    /// for more than `u32::MAX` elements.
    pub fn for_each_migration(
        &self,
        previous: &[u32],
        positions: &[P],
        counts: &mut [u32],
        mut f: impl FnMut(u32, u32, u32),
    ) -> Result<(), Error> {
        self.built()?;
        if previous.len() != positions.len() {
            return Err(Error::LengthMismatch {
                expected: positions.len(),
                got: previous.len(),
            });
        }
        let ranks = self.ranks();
        if counts.len() < ranks {
            return Err(Error::BufferTooSmall {
                needed: ranks,
                available: counts.len(),
            });
        }
        ids_fit(positions.len())?;
        if previous.iter().any(|&r| r >= self.ranks) {
            return Err(Error::InvalidConfig { field: "previous" });
        }
        check_positions(&self.domain, positions)?;
        let counts = &mut counts[..ranks];
        counts.fill(0);
        for (id, (&from, &p)) in previous.iter().zip(positions).enumerate() {
            let to = self.walk(p);
            if to != from {
                if let Some(c) = counts.get_mut(to as usize) {
                    *c = c.saturating_add(1);
                }
                f(id as u32, from, to);
            }
        }
        Ok(())
    }
}

impl<P: Point, B: Storage<P::Aabb>, C: Storage<Cut>, W: Storage<f64>> Validate
    for Decomposition<P, B, C, W>
{
    /// Checks that the ranks fit the buffers, the domain is a valid box,
    /// every cut lies on a valid axis within its cell, the stored boxes are
    /// exactly the cells of the cut tree, and the loads are finite and
    /// non-negative.
    fn validate(&self) -> Result<(), Corruption> {
        const S: &str = "Decomposition";
        let ranks = self.ranks();
        ensure(ranks <= self.capacity(), S, "ranks <= capacity")?;
        if ranks == 0 {
            return Ok(());
        }
        ensure(self.domain.check().is_ok(), S, "domain is a valid box")?;
        ensure(
            self.loads().iter().all(|l| l.is_finite() && *l >= 0.0),
            S,
            "loads finite and non-negative",
        )?;
        check_tree::<P>(self.cuts(), self.subdomains(), self.domain)
    }
}

/// Checks every rank's box against the cells its cuts make of `domain`,
/// walking the cut tree depth first with its own stack (no recursion).
fn check_tree<P: Point>(
    cuts: &[Cut],
    boxes: &[P::Aabb],
    domain: P::Aabb,
) -> Result<(), Corruption> {
    const S: &str = "Decomposition";
    let root = Cell {
        first: 0,
        ranks: boxes.len(),
        lo: 0,
        hi: 0,
        bounds: domain,
    };
    let mut stack = [root; TREE_STACK];
    let mut depth = 1;
    while depth > 0 {
        depth -= 1;
        let cell = stack[depth];
        let r = cell.ranks;
        if r <= 1 {
            ensure(
                boxes.get(cell.first) == Some(&cell.bounds),
                S,
                "boxes are the cells of the cut tree",
            )?;
            continue;
        }
        let rl = r / 2;
        let Some(c) = cuts.get(cell.first + rl - 1) else {
            return Err(Corruption {
                structure: S,
                invariant: "a cut per inner cell",
            });
        };
        let axis = c.axis as usize;
        ensure(axis < P::DIM, S, "cut axis below DIM")?;
        ensure(
            cell.bounds.min().coord(axis) <= c.at && c.at <= cell.bounds.max().coord(axis),
            S,
            "cut within its cell",
        )?;
        let (lower, upper) = halves(&cell.bounds, axis, c.at);
        for half in [
            Cell {
                first: cell.first + rl,
                ranks: r - rl,
                bounds: upper,
                ..cell
            },
            Cell {
                first: cell.first,
                ranks: rl,
                bounds: lower,
                ..cell
            },
        ] {
            let Some(slot) = stack.get_mut(depth) else {
                return Err(Corruption {
                    structure: S,
                    invariant: "cut tree no deeper than 2^32 ranks",
                });
            };
            *slot = half;
            depth += 1;
        }
    }
    Ok(())
}

/// The positions and weights of the elements being decomposed.
struct Elements<'a, P> {
    positions: &'a [P],
    weights: Option<&'a [f32]>,
}

impl<P: Point> Elements<'_, P> {
    #[inline]
    fn coord(&self, i: u32, axis: usize) -> f32 {
        self.positions
            .get(i as usize)
            .map_or(0.0, |p| p.coord(axis))
    }
    #[inline]
    fn weight(&self, i: u32) -> f64 {
        match self.weights {
            None => 1.0,
            Some(w) => w.get(i as usize).map_or(0.0, |&x| f64::from(x)),
        }
    }
    fn total(&self, idx: &[u32]) -> f64 {
        idx.iter().map(|&i| self.weight(i)).sum()
    }
}

/// The output slices of a build: every rank's box and load, and the cuts.
struct Out<'a, A> {
    boxes: &'a mut [A],
    cuts: &'a mut [Cut],
    loads: &'a mut [f64],
}

/// Pending cells of the cut tree: each split halves the rank count, so at
/// most one pending sibling per level of a tree of at most 2³² ranks (32
/// levels), plus the cell being split. The core never recurses (the
/// firmware's call graphs are checked for cycles), so the depth-first walk
/// keeps its own stack.
const TREE_STACK: usize = 40;

/// A cell of the cut tree: ranks `first..first + ranks`, elements
/// `idx[lo..hi]`, and its box.
#[derive(Clone, Copy)]
struct Cell<A> {
    first: usize,
    ranks: usize,
    lo: usize,
    hi: usize,
    bounds: A,
}

/// Bisects `domain`, holding every rank of `out` and the elements `idx`,
/// depth first: each cell is cut along its longest axis at the weighted
/// split of its ranks, its cut stored at index `first + ⌊r/2⌋ − 1`.
fn bisect<P: Point>(el: &Elements<'_, P>, out: Out<'_, P::Aabb>, domain: P::Aabb, idx: &mut [u32]) {
    let Out { boxes, cuts, loads } = out;
    let root = Cell {
        first: 0,
        ranks: boxes.len(),
        lo: 0,
        hi: idx.len(),
        bounds: domain,
    };
    let mut stack = [root; TREE_STACK];
    let mut depth = 1;
    while depth > 0 {
        depth -= 1;
        let cell = stack[depth];
        let Some(elements) = idx.get_mut(cell.lo..cell.hi) else {
            continue;
        };
        let r = cell.ranks;
        if r <= 1 {
            if let (Some(b), Some(l)) = (boxes.get_mut(cell.first), loads.get_mut(cell.first)) {
                *b = cell.bounds;
                *l = el.total(elements);
            }
            continue;
        }
        let rl = r / 2;
        let (lo, hi) = (cell.bounds.min(), cell.bounds.max());
        let mut axis = 0;
        for k in 1..P::DIM {
            if hi.coord(k) - lo.coord(k) > hi.coord(axis) - lo.coord(axis) {
                axis = k;
            }
        }
        let target = el.total(elements) * rl as f64 / r as f64;
        let at = choose_cut(el, elements, axis, lo.coord(axis), hi.coord(axis), target);
        // Partition: elements below the cut first.
        let mut below = 0;
        for j in 0..elements.len() {
            if el.coord(elements[j], axis) < at {
                elements.swap(below, j);
                below += 1;
            }
        }
        if let Some(c) = cuts.get_mut(cell.first + rl - 1) {
            *c = Cut {
                axis: axis as u32,
                at,
            };
        }
        let (lower, upper) = halves(&cell.bounds, axis, at);
        // Upper pushed first, so the lower cell is split next.
        for half in [
            Cell {
                first: cell.first + rl,
                ranks: r - rl,
                lo: cell.lo + below,
                hi: cell.hi,
                bounds: upper,
            },
            Cell {
                first: cell.first,
                ranks: rl,
                lo: cell.lo,
                hi: cell.lo + below,
                bounds: lower,
            },
        ] {
            if let Some(slot) = stack.get_mut(depth) {
                *slot = half;
                depth += 1;
            }
        }
    }
}

/// The two cells of `cell` cut at `at` along `axis`.
fn halves<A: BoundingBox>(cell: &A, axis: usize, at: f32) -> (A, A) {
    let (lo, hi) = (cell.min(), cell.max());
    let lower_hi = A::Point::from_fn(|k| if k == axis { at } else { hi.coord(k) });
    let upper_lo = A::Point::from_fn(|k| if k == axis { at } else { lo.coord(k) });
    (
        A::try_new(lo, lower_hi).unwrap_or(*cell),
        A::try_new(upper_lo, hi).unwrap_or(*cell),
    )
}

/// A value in `(a, b]` for `a < b`, near the middle.
fn between(a: f32, b: f32) -> f32 {
    let m = a * 0.5 + b * 0.5;
    if m > a && m <= b { m } else { b }
}

/// The cut along `axis` (in `[cell_lo, cell_hi]`) that leaves the weight
/// below it nearest `target`, among the cuts that separate distinct
/// coordinates. Reorders `idx` (a weighted selection).
fn choose_cut<P: Point>(
    el: &Elements<'_, P>,
    idx: &mut [u32],
    axis: usize,
    cell_lo: f32,
    cell_hi: f32,
    target: f64,
) -> f32 {
    let m = idx.len();
    if m == 0 {
        return (cell_lo * 0.5 + cell_hi * 0.5).clamp(cell_lo, cell_hi);
    }
    let cmp = |a: &u32, b: &u32| {
        el.coord(*a, axis)
            .partial_cmp(&el.coord(*b, axis))
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(b))
    };
    // Narrow a window [lo, hi) of sorted positions: everything before lo is
    // at or below everything in it (weight `acc`), everything from hi on at
    // or above; stop at the element where the prefix weight reaches target.
    let (mut lo, mut hi, mut acc) = (0usize, m, 0.0f64);
    while hi - lo > 1 {
        let k = lo + (hi - lo) / 2;
        idx[lo..hi].select_nth_unstable_by(k - lo, cmp);
        let wl: f64 = el.total(&idx[lo..k]);
        if acc + wl >= target {
            hi = k;
        } else {
            acc += wl;
            lo = k;
        }
    }
    let p = idx[lo];
    let c = el.coord(p, axis);
    // The tie group of `c` and its nearest distinct neighbours.
    let (mut below, mut below_ties) = (None::<f32>, 0.0f64);
    for &i in &idx[..lo] {
        let x = el.coord(i, axis);
        if x < c {
            below = Some(below.map_or(x, |b: f32| b.max(x)));
        } else {
            below_ties += el.weight(i);
        }
    }
    let (mut above, mut above_ties) = (None::<f32>, 0.0f64);
    for &i in &idx[lo + 1..] {
        let x = el.coord(i, axis);
        if x > c {
            above = Some(above.map_or(x, |a: f32| a.min(x)));
        } else {
            above_ties += el.weight(i);
        }
    }
    // Cut just below the tie group, or just above it.
    let w_low = acc - below_ties;
    let w_high = acc + el.weight(p) + above_ties;
    let low_at = match below {
        Some(a) => between(a, c),
        None => (cell_lo * 0.5 + c * 0.5).clamp(cell_lo, c),
    };
    let high_at = match above {
        Some(b) => Some(between(c, b)),
        None if c < cell_hi => Some(between(c, cell_hi)),
        None => None,
    };
    match high_at {
        Some(h) if (w_high - target).abs() < (target - w_low).abs() => h,
        _ => low_at,
    }
}

/// Squared Euclidean distance from `q` to the closed box `b` (0 inside),
/// [`Error::CapacityExceeded`] for more elements than `u32` ids name.
fn ids_fit(n: usize) -> Result<(), Error> {
    if u32::try_from(n).is_err() {
        return Err(Error::CapacityExceeded {
            capacity: u32::MAX as usize,
        });
    }
    Ok(())
}

/// summed axis by axis in order.
pub fn box_distance_squared<A: BoundingBox>(b: &A, q: A::Point) -> f32 {
    let mut d2 = 0.0f32;
    for k in 0..A::Point::DIM {
        let x = q.coord(k);
        let g = (b.min().coord(k) - x).max(x - b.max().coord(k)).max(0.0);
        d2 += g * g;
    }
    d2
}

fn check_position<A: BoundingBox>(domain: &A, x: A::Point) -> Result<(), Error> {
    if !x.is_finite() {
        return Err(Error::NonFinite);
    }
    let (lo, hi) = (domain.min(), domain.max());
    for k in 0..A::Point::DIM {
        let c = x.coord(k);
        if c < lo.coord(k) || c > hi.coord(k) {
            return Err(Error::OutOfRange);
        }
    }
    Ok(())
}

fn check_positions<A: BoundingBox>(domain: &A, xs: &[A::Point]) -> Result<(), Error> {
    xs.iter().try_for_each(|&x| check_position(domain, x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Aabb2, Aabb3, Vec2, Vec3};

    type D2<'a> = Decomposition<Vec2, &'a mut [Aabb2], &'a mut [Cut], &'a mut [f64]>;

    struct Bufs {
        boxes: [Aabb2; 32],
        cuts: [Cut; 32],
        loads: [f64; 32],
    }
    fn bufs() -> Bufs {
        Bufs {
            boxes: [Aabb2::ZERO; 32],
            cuts: [Cut::EMPTY; 32],
            loads: [0.0; 32],
        }
    }
    fn dec(b: &mut Bufs) -> D2<'_> {
        Decomposition::new(&mut b.boxes[..], &mut b.cuts[..], &mut b.loads[..])
    }
    fn unit() -> Aabb2 {
        Aabb2::new(Vec2::ZERO, Vec2::new(1.0, 1.0)).unwrap()
    }
    fn grid(n: usize) -> [Vec2; 64] {
        let mut p = [Vec2::ZERO; 64];
        for (i, q) in p.iter_mut().enumerate().take(n) {
            *q = Vec2::new((i % 8) as f32 / 8.0 + 0.01, (i / 8) as f32 / 8.0 + 0.01);
        }
        p
    }
    fn area(b: &Aabb2) -> f32 {
        (b.max.x - b.min.x) * (b.max.y - b.min.y)
    }

    /// Every element's owner holds it, `owner` agrees with the build's loads
    /// (unit weights), and the boxes cover the domain's area.
    fn check(d: &D2<'_>, pts: &[Vec2]) {
        d.validate().unwrap();
        let mut count = [0.0f64; 32];
        for &p in pts {
            let r = d.owner(p).unwrap();
            let b = d.subdomain(r).unwrap();
            assert!(b.min.x <= p.x && p.x <= b.max.x && b.min.y <= p.y && p.y <= b.max.y);
            count[r as usize] += 1.0;
        }
        assert_eq!(&count[..d.ranks()], d.loads());
        let total: f32 = d.subdomains().iter().map(area).sum();
        let dom = area(&d.domain());
        assert!((total - dom).abs() <= 1e-5 * dom.max(1.0), "{total} {dom}");
    }

    #[test]
    fn buffer_defaults_are_empty() {
        assert_eq!(Cut::default(), Cut::EMPTY);
        assert_eq!(Periodic::default(), Periodic::NONE);
    }

    #[test]
    fn one_rank_is_the_domain() {
        let mut b = bufs();
        let mut d = dec(&mut b);
        let pts = grid(10);
        let mut s = [0u32; 64];
        d.build(unit(), 1, &pts[..10], None, &mut s).unwrap();
        assert_eq!(d.subdomains(), &[unit()]);
        assert!(d.cuts().is_empty());
        assert_eq!(d.loads(), &[10.0]);
        check(&d, &pts[..10]);
        // Corners of the closed domain are owned.
        assert_eq!(d.owner(Vec2::new(1.0, 1.0)), Ok(0));
        assert_eq!(d.owner(Vec2::new(0.0, 0.0)), Ok(0));
    }

    #[test]
    fn more_ranks_than_elements_and_none() {
        let mut b = bufs();
        let mut d = dec(&mut b);
        let pts = grid(3);
        let mut s = [0u32; 64];
        for ranks in [1, 2, 3, 7, 16, 32] {
            d.build(unit(), ranks, &pts[..3], None, &mut s).unwrap();
            assert_eq!(d.ranks(), ranks);
            check(&d, &pts[..3]);
            d.build(unit(), ranks, &[], None, &mut s).unwrap();
            check(&d, &[]);
            assert!(d.loads().iter().all(|&l| l == 0.0));
        }
    }

    #[test]
    fn all_weight_on_one_element() {
        let mut b = bufs();
        let mut d = dec(&mut b);
        let pts = grid(64);
        let mut w = [0.0f32; 64];
        w[37] = 5.0;
        let mut s = [0u32; 64];
        d.build(unit(), 4, &pts, Some(&w), &mut s).unwrap();
        d.validate().unwrap();
        let heavy = d.owner(pts[37]).unwrap() as usize;
        for (r, &l) in d.loads().iter().enumerate() {
            assert_eq!(l, if r == heavy { 5.0 } else { 0.0 });
        }
    }

    #[test]
    fn all_elements_at_one_point() {
        let mut b = bufs();
        let mut d = dec(&mut b);
        let mut s = [0u32; 64];
        for p in [Vec2::new(0.5, 0.5), Vec2::ZERO, Vec2::new(1.0, 1.0)] {
            let pts = [p; 20];
            d.build(unit(), 5, &pts, None, &mut s).unwrap();
            check(&d, &pts);
            // One rank holds them all.
            assert_eq!(d.loads().iter().filter(|&&l| l == 20.0).count(), 1);
        }
    }

    #[test]
    fn points_on_cuts_go_up() {
        let mut b = bufs();
        let mut d = dec(&mut b);
        let pts = grid(64);
        let mut s = [0u32; 64];
        d.build(unit(), 7, &pts, None, &mut s).unwrap();
        check(&d, &pts);
        for (m, c) in d.cuts().iter().enumerate() {
            // A point on the cut inside the upper neighbour's box: owned by
            // a rank at or above m + 1.
            let up = d.subdomain(m as u32 + 1).unwrap();
            let q = Vec2::from_fn(|k| {
                if k == c.axis as usize {
                    c.at
                } else {
                    up.min.coord(k) * 0.5 + up.max.coord(k) * 0.5
                }
            });
            assert!(d.owner(q).unwrap() as usize > m);
        }
        assert_eq!(d.loads().iter().sum::<f64>(), 64.0);
    }

    #[test]
    fn degenerate_domain_is_handled() {
        // A flat domain (zero extent on y) and a single point domain.
        let mut b = bufs();
        let mut d = dec(&mut b);
        let flat = Aabb2::new(Vec2::new(0.0, 2.0), Vec2::new(4.0, 2.0)).unwrap();
        let pts: [Vec2; 8] = core::array::from_fn(|i| Vec2::new(i as f32 * 0.5, 2.0));
        let mut s = [0u32; 64];
        d.build(flat, 4, &pts, None, &mut s).unwrap();
        check(&d, &pts);
        assert_eq!(d.loads(), &[2.0; 4]);
        let dot = Aabb2::new(Vec2::new(1.0, 1.0), Vec2::new(1.0, 1.0)).unwrap();
        d.build(dot, 3, &[Vec2::new(1.0, 1.0); 4], None, &mut s)
            .unwrap();
        check(&d, &[Vec2::new(1.0, 1.0); 4]);
        // Ghosts in a flat domain: a periodic zero-extent axis is refused.
        assert_eq!(
            d.for_each_ghost(0, &[], 0.1, Periodic::ALL, |_, _| {}),
            Err(Error::InvalidRadius)
        );
    }

    #[test]
    fn bad_inputs_are_refused_and_change_nothing() {
        let mut b = bufs();
        let mut d = dec(&mut b);
        let pts = grid(16);
        let mut s = [0u32; 64];
        let err = |e| Err::<(), Error>(e);
        assert_eq!(d.owner(Vec2::ZERO), Err(NOT_BUILT));
        d.build(unit(), 3, &pts[..16], None, &mut s).unwrap();
        let before = (d.subdomains()[2], d.cuts()[1], d.loads()[0]);
        let bad_dom = Aabb2 {
            min: Vec2::new(1.0, 0.0),
            max: Vec2::ZERO,
        };
        assert_eq!(
            d.build(bad_dom, 2, &pts[..16], None, &mut s),
            err(Error::InvertedBox)
        );
        assert_eq!(
            d.build(unit(), 0, &pts[..16], None, &mut s),
            err(Error::InvalidConfig { field: "ranks" })
        );
        assert_eq!(
            d.build(unit(), 33, &pts[..16], None, &mut s),
            err(Error::BufferTooSmall {
                needed: 33,
                available: 32
            })
        );
        assert_eq!(
            d.build(unit(), 2, &pts[..16], None, &mut s[..3]),
            err(Error::BufferTooSmall {
                needed: 16,
                available: 3
            })
        );
        assert_eq!(
            d.build(unit(), 2, &pts[..16], Some(&[1.0; 3]), &mut s),
            err(Error::LengthMismatch {
                expected: 16,
                got: 3
            })
        );
        let mut w = [1.0f32; 16];
        w[3] = f32::NAN;
        assert_eq!(
            d.build(unit(), 2, &pts[..16], Some(&w), &mut s),
            err(Error::NonFinite)
        );
        w[3] = -1.0;
        assert_eq!(
            d.build(unit(), 2, &pts[..16], Some(&w), &mut s),
            err(Error::InvalidConfig { field: "weights" })
        );
        let mut p = pts;
        p[5] = Vec2::new(1.5, 0.5);
        assert_eq!(
            d.build(unit(), 2, &p[..16], None, &mut s),
            err(Error::OutOfRange)
        );
        p[5] = Vec2::new(f32::NAN, 0.5);
        assert_eq!(
            d.build(unit(), 2, &p[..16], None, &mut s),
            err(Error::NonFinite)
        );
        assert_eq!(
            (d.subdomains()[2], d.cuts()[1], d.loads()[0], d.ranks()),
            (before.0, before.1, before.2, 3)
        );
        d.validate().unwrap();

        assert_eq!(d.owner(Vec2::new(-0.1, 0.0)), Err(Error::OutOfRange));
        assert_eq!(
            d.owner(Vec2::new(0.5, f32::INFINITY)),
            Err(Error::NonFinite)
        );
        assert_eq!(d.subdomain(3), Err(Error::InvalidConfig { field: "rank" }));
        let mut o = [0u32; 3];
        assert!(matches!(
            d.assign(&pts[..16], &mut o),
            Err(Error::LengthMismatch { .. })
        ));
        let mut calls = 0;
        for (h, per) in [
            (0.0, Periodic::NONE),
            (-1.0, Periodic::NONE),
            (f32::NAN, Periodic::NONE),
            (f32::INFINITY, Periodic::NONE),
            (0.6, Periodic::new(0b10)),
        ] {
            assert_eq!(
                d.for_each_ghost(0, &pts[..16], h, per, |_, _| calls += 1),
                err(Error::InvalidRadius)
            );
        }
        assert_eq!(
            d.for_each_ghost(3, &pts[..16], 0.1, Periodic::NONE, |_, _| calls += 1),
            err(Error::InvalidConfig { field: "rank" })
        );
        assert_eq!(
            d.for_each_ghost(0, &p[..16], 0.1, Periodic::NONE, |_, _| calls += 1),
            err(Error::NonFinite)
        );
        // Exactly half the periodic extent is allowed.
        d.for_each_ghost(0, &pts[..16], 0.5, Periodic::ALL, |_, _| {})
            .unwrap();
        let mut counts = [7u32; 3];
        let prev = [0u32; 16];
        assert!(matches!(
            d.for_each_migration(&prev[..15], &pts[..16], &mut counts, |_, _, _| calls += 1),
            Err(Error::LengthMismatch { .. })
        ));
        assert!(matches!(
            d.for_each_migration(&prev, &pts[..16], &mut counts[..2], |_, _, _| calls += 1),
            Err(Error::BufferTooSmall { .. })
        ));
        let mut bad_prev = prev;
        bad_prev[9] = 3;
        assert_eq!(
            d.for_each_migration(&bad_prev, &pts[..16], &mut counts, |_, _, _| calls += 1),
            err(Error::InvalidConfig { field: "previous" })
        );
        assert_eq!(
            d.for_each_migration(&prev, &p[..16], &mut counts, |_, _, _| calls += 1),
            err(Error::NonFinite)
        );
        assert_eq!((calls, counts), (0, [7; 3]));
    }

    #[test]
    fn huge_domain_does_not_overflow() {
        let mut b = [Aabb3::ZERO; 8];
        let mut c = [Cut::EMPTY; 7];
        let mut l = [0.0f64; 8];
        let mut d = Decomposition::<Vec3, _, _, _>::new(&mut b[..], &mut c[..], &mut l[..]);
        let big = Aabb3::new(Vec3::new(-3e38, -3e38, -3e38), Vec3::new(3e38, 3e38, 3e38)).unwrap();
        let pts = [
            Vec3::new(-3e38, 0.0, 3e38),
            Vec3::new(3e38, 3e38, 3e38),
            Vec3::ZERO,
            Vec3::new(1.0, -2e38, 5.0),
        ];
        let mut s = [0u32; 4];
        d.build(big, 8, &pts, None, &mut s).unwrap();
        d.validate().unwrap();
        for &p in &pts {
            d.owner(p).unwrap();
        }
        assert_eq!(d.loads().iter().sum::<f64>(), 4.0);
        // The extent overflows: periodic ghosts are refused, plain ones work.
        assert_eq!(
            d.for_each_ghost(0, &pts, 1.0, Periodic::ALL, |_, _| {}),
            Err(Error::InvalidConfig { field: "periodic" })
        );
        d.for_each_ghost(0, &pts, 1e38, Periodic::NONE, |_, _| {})
            .unwrap();
    }

    #[test]
    fn own_periodic_images_are_ghosts() {
        let mut b = bufs();
        let mut d = dec(&mut b);
        // One rank: its only ghosts are its own elements' images.
        let pts = [
            Vec2::new(0.05, 0.5),
            Vec2::new(0.5, 0.5),
            Vec2::new(0.97, 0.02),
        ];
        let mut s = [0u32; 3];
        d.build(unit(), 1, &pts, None, &mut s).unwrap();
        let mut got = [(0u32, Vec2::ZERO); 8];
        let mut n = 0;
        d.for_each_ghost(0, &pts, 0.1, Periodic::ALL, |id, sh| {
            got[n] = (id, sh);
            n += 1;
        })
        .unwrap();
        assert_eq!(
            &got[..n],
            &[
                (0, Vec2::new(1.0, 0.0)),
                (2, Vec2::new(-1.0, 0.0)),
                (2, Vec2::new(-1.0, 1.0)),
                (2, Vec2::new(0.0, 1.0)),
            ]
        );
        n = 0;
        d.for_each_ghost(0, &pts, 0.1, Periodic::NONE, |_, _| n += 1)
            .unwrap();
        assert_eq!(n, 0);
    }

    #[test]
    fn migration_reports_changed_owners() {
        let mut b = bufs();
        let mut d = dec(&mut b);
        let pts = grid(64);
        let mut s = [0u32; 64];
        d.build(unit(), 4, &pts, None, &mut s).unwrap();
        let mut owners = [0u32; 64];
        d.assign(&pts, &mut owners).unwrap();
        let mut counts = [9u32; 5];
        let mut n = 0;
        d.for_each_migration(&owners, &pts, &mut counts, |_, _, _| n += 1)
            .unwrap();
        assert_eq!((n, &counts[..4], counts[4]), (0, &[0u32; 4][..], 9));
        // Move element 0 into the top corner's rank.
        let mut moved = pts;
        moved[0] = Vec2::new(0.99, 0.99);
        let to = d.owner(moved[0]).unwrap();
        let mut seen = None;
        d.for_each_migration(&owners, &moved, &mut counts, |id, from, t| {
            seen = Some((id, from, t));
        })
        .unwrap();
        assert_eq!(seen, Some((0, owners[0], to)));
        assert_eq!(counts[to as usize], 1);
        assert_eq!(counts[..4].iter().sum::<u32>(), 1);
    }
}
