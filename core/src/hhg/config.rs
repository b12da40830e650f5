//! Tuning of the grid: [`HhgConfig`] and the [`UpdateStrategy`] of
//! [`HierarchicalHashGrid::update_all`].

use super::Dims;
#[cfg(doc)]
use super::HierarchicalHashGrid;
use crate::error::Error;
use crate::geom::{BoundingBox, Point};
#[cfg(doc)]
use crate::traits::BroadPhase;

/// How the whole structure follows moved boxes in
/// [`HierarchicalHashGrid::update_all`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum UpdateStrategy {
    /// Rehash every box; move only those whose cell or grid changed
    /// (Algorithm 2 of the paper).
    Incremental,
    /// Empty every cell, then insert every box again.
    ClearAndReinsert,
}

/// Tuning of a [`HierarchicalHashGrid`]; every value is checked when set.
///
/// # Example
///
/// ```
/// use spatium::{Aabb2, Aabb3, HhgConfig};
///
/// let cfg = HhgConfig::DEFAULT
///     .with_hierarchy_factor(4.0)?
///     .with_density(1.0)?
///     .with_initial_cells_log2(3)?
///     .with_small_n_threshold(0);
/// assert_eq!(cfg.hierarchy_factor(), 4.0);
/// // 1000 boxes at one per cell: 8³ cells are too few, 16³ will do.
/// assert_eq!(cfg.arena_words_for::<Aabb3>(1000), 729 + 16 * 16 * 16);
/// // In 2D: 8², 16², then 32² cells.
/// assert_eq!(cfg.arena_words_for::<Aabb2>(1000), 81 + 32 * 32);
/// assert!(HhgConfig::DEFAULT.with_density(0.0).is_err());
/// # Ok::<(), spatium::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(
    feature = "serde",
    serde(try_from = "HhgConfigFields", into = "HhgConfigFields")
)]
pub struct HhgConfig {
    pub(super) factor: f32,
    pub(super) density: f32,
    pub(super) initial_log2: u8,
    pub(super) small_n: u32,
}

/// [`HhgConfig`]'s values by their accessors' names: a configuration
/// deserializes through its checked setters.
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename = "HhgConfig")]
struct HhgConfigFields {
    hierarchy_factor: f32,
    density: f32,
    initial_cells_log2: u8,
    small_n_threshold: u32,
}

#[cfg(feature = "serde")]
impl From<HhgConfig> for HhgConfigFields {
    fn from(c: HhgConfig) -> Self {
        Self {
            hierarchy_factor: c.factor,
            density: c.density,
            initial_cells_log2: c.initial_log2,
            small_n_threshold: c.small_n,
        }
    }
}

#[cfg(feature = "serde")]
impl TryFrom<HhgConfigFields> for HhgConfig {
    type Error = Error;
    fn try_from(f: HhgConfigFields) -> Result<Self, Error> {
        Ok(Self::DEFAULT
            .with_hierarchy_factor(f.hierarchy_factor)?
            .with_density(f.density)?
            .with_initial_cells_log2(f.initial_cells_log2)?
            .with_small_n_threshold(f.small_n_threshold))
    }
}

impl Default for HhgConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl HhgConfig {
    /// The paper's configuration: hierarchy factor 2, growth when boxes
    /// exceed cells / 8, new grids of 16 cells per axis, flat array below 32
    /// boxes.
    pub const DEFAULT: Self = Self {
        factor: 2.0,
        density: 0.125,
        initial_log2: 4,
        small_n: 32,
    };

    /// Ratio of the cell sizes of successive levels, in `1.25..=64`
    /// (default 2). Larger factors mean fewer grids, each box tested against
    /// more boxes of the grids above. `O(1)`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] outside that range (the lower bound keeps the
    /// cross-grid stencil exact under `f32` rounding).
    pub const fn with_hierarchy_factor(mut self, factor: f32) -> Result<Self, Error> {
        if !(factor >= 1.25 && factor <= 64.0) {
            return Err(Error::InvalidConfig {
                field: "hierarchy_factor",
            });
        }
        self.factor = factor;
        Ok(self)
    }

    /// Boxes per cell above which a grid grows, in `(0, 1024]` (default
    /// 1/8). `O(1)`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] outside that range or NaN.
    pub const fn with_density(mut self, density: f32) -> Result<Self, Error> {
        if !(density > 0.0 && density <= 1024.0) {
            return Err(Error::InvalidConfig { field: "density" });
        }
        self.density = density;
        Ok(self)
    }

    /// Cells per axis of a new grid, as a power of two: `log2` in `2..=9`
    /// (default 4, 16 cells per axis). An arena too short for that size
    /// makes the grid smaller, down to 4 cells per axis. `O(1)`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] outside `2..=9`.
    pub const fn with_initial_cells_log2(mut self, log2: u8) -> Result<Self, Error> {
        if log2 < 2 || log2 > 9 {
            return Err(Error::InvalidConfig {
                field: "initial_cells_log2",
            });
        }
        self.initial_log2 = log2;
        Ok(self)
    }

    /// Number of boxes from which the grids are used (default 32); below it
    /// every pair is tested (0 or 1: grids from the first box). The switch is
    /// final until [`BroadPhase::clear`]. Any value is valid. `O(1)`.
    pub const fn with_small_n_threshold(mut self, n: u32) -> Self {
        self.small_n = n;
        self
    }

    /// Arena words for one grid of boxes `B` able to hold `objects` boxes at
    /// this density without saturating: its offset table (729 words in 3D,
    /// 81 in 2D) plus the smallest power-of-two cube of cells, from the
    /// initial size and growing 2× per axis, whose cells × density reach
    /// `objects`. Size an arena as the sum over the grids a scene needs (one
    /// per size class in use); an arena that is too short is never an error
    /// (see the [module](super) docs). `O(log objects)`; see the
    /// [type's example](HhgConfig).
    pub fn arena_words_for<B: BoundingBox>(&self, objects: usize) -> usize {
        let d = B::Point::DIM;
        let max = Dims::max_log2(d);
        let mut log2 = self.initial_log2.min(max);
        loop {
            let cells = 1usize << (log2 as usize * d);
            if (objects as f32) <= cells as f32 * self.density || log2 >= max {
                return Dims::table(d) + cells;
            }
            log2 += 1;
        }
    }

    /// The hierarchy factor.
    pub const fn hierarchy_factor(&self) -> f32 {
        self.factor
    }

    /// Boxes per cell above which a grid grows.
    pub const fn density(&self) -> f32 {
        self.density
    }

    /// `log2` of the cells per axis of a new grid.
    pub const fn initial_cells_log2(&self) -> u8 {
        self.initial_log2
    }

    /// Boxes from which the grids are used.
    pub const fn small_n_threshold(&self) -> u32 {
        self.small_n
    }
}
