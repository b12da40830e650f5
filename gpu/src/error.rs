//! The crate's error type.

use core::fmt;

/// Everything that can go wrong in the GPU pipeline.
///
/// Bad input (parameters, particles, sizes) is refused with an error before
/// anything is dispatched; nothing in the crate panics on it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum GpuError {
    /// No adapter matches the request (no GPU and no software Vulkan
    /// driver, or the backends chosen by `WGPU_BACKEND` have none).
    NoAdapter(String),
    /// The adapter refused to open a device.
    Device(String),
    /// The adapter lacks a feature the pipeline needs.
    MissingFeature(&'static str),
    /// A limit of the device is below what the pipeline or this size needs.
    Limit {
        /// The limit's name in `wgpu::Limits`.
        limit: &'static str,
        /// What is needed.
        needed: u64,
        /// What the device allows.
        available: u64,
    },
    /// The core refused a parameter or a particle (invalid parameters, a
    /// non-finite or out-of-domain particle, a domain too large for the
    /// grid arithmetic, a bad emitter).
    Core(spatium::Error),
    /// More particles than the fluid's capacity.
    CapacityExceeded {
        /// Particles the fluid holds.
        capacity: usize,
        /// Particles asked for.
        requested: usize,
    },
    /// Positions and states of different lengths.
    LengthMismatch {
        /// Positions given.
        positions: usize,
        /// States given.
        states: usize,
    },
    /// A device operation failed: allocation, shader validation, a buffer
    /// mapping, or waiting for the device.
    Operation(String),
    /// More obstacles than a fluid holds
    /// ([`MAX_OBSTACLES`](crate::MAX_OBSTACLES)).
    TooManyObstacles {
        /// Most obstacles a fluid holds.
        max: usize,
        /// Obstacles given.
        requested: usize,
    },
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAdapter(why) => write!(f, "no GPU adapter: {why}"),
            Self::Device(why) => write!(f, "the adapter refused a device: {why}"),
            Self::MissingFeature(name) => write!(f, "the adapter lacks the feature {name}"),
            Self::Limit {
                limit,
                needed,
                available,
            } => write!(f, "device limit {limit} is {available}, {needed} needed"),
            Self::Core(e) => write!(f, "refused by the core: {e}"),
            Self::CapacityExceeded {
                capacity,
                requested,
            } => write!(f, "{requested} particles requested, capacity {capacity}"),
            Self::LengthMismatch { positions, states } => {
                write!(f, "{positions} positions but {states} particle states")
            }
            Self::Operation(why) => write!(f, "device operation failed: {why}"),
            Self::TooManyObstacles { max, requested } => {
                write!(f, "{requested} obstacles given, at most {max} allowed")
            }
        }
    }
}

impl std::error::Error for GpuError {}

impl From<spatium::Error> for GpuError {
    fn from(e: spatium::Error) -> Self {
        Self::Core(e)
    }
}
