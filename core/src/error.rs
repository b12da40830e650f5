//! The one error type of the crate, and the `validate()` convention.

use core::fmt;

/// Everything that can go wrong in a spatium operation.
///
/// Every fallible operation either succeeds or returns one of these and leaves
/// the structure exactly as it was: nothing half-inserted, nothing lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
// Serialize only: the `&'static str` fields cannot be deserialized without
// allocating (or borrowing for `'static`).
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
// A 32-bit tag, fields from offset 4: without it the `u8` field of
// `PeriodTooShort` (offset 1) keeps the tag a byte, every `Result<_, Error>`
// is copied as 1 + 11 unaligned bytes, and on Cortex-M that pulls
// `memcpy` (730 B) into firmware that only asks `is_ok()`.
#[repr(u32)]
pub enum Error {
    /// A coordinate is NaN or infinite.
    NonFinite,
    /// A box has `min > max` on some axis.
    InvertedBox,
    /// The radius (or cell size) is not finite, not positive, or so small or
    /// large that the cell arithmetic cannot represent it.
    InvalidRadius,
    /// A coordinate lies farther from the structure's origin (in cells)
    /// than its cell arithmetic represents exactly. Each structure documents
    /// its limit: [`crate::cell::UNIFORM_RANGE_CELLS`] for the uniform grid,
    /// [`crate::cell::HHG_RANGE_CELLS`] for the hierarchical hash grid,
    /// [`crate::cell::HHASH_RANGE_CELLS`] for hierarchical hashing, the root box for
    /// the kd-tree.
    OutOfRange,
    /// More elements than the structure's storage holds.
    CapacityExceeded {
        /// Elements the storage holds.
        capacity: usize,
    },
    /// A fixed-size bucket is full.
    BucketFull {
        /// The bucket's index in the table.
        bucket: u32,
        /// Elements a bucket holds.
        capacity: u32,
    },
    /// A caller-provided output buffer is too small.
    BufferTooSmall {
        /// Length the buffer needs.
        needed: usize,
        /// Length it has.
        available: usize,
    },
    /// A hash table's length is zero, not a power of two, or above 2³¹.
    InvalidTableLength {
        /// The length given.
        len: usize,
    },
    /// An id is not below the structure's capacity.
    IdOutOfRange {
        /// The id.
        id: u32,
    },
    /// An id is inserted twice.
    DuplicateId {
        /// The id.
        id: u32,
    },
    /// An id is not stored.
    UnknownId {
        /// The id.
        id: u32,
    },
    /// A configuration value is outside its documented range.
    InvalidConfig {
        /// The configuration field (or argument) that was refused.
        field: &'static str,
    },
    /// A query from a shared reference found the table out of date with the
    /// stored boxes (call the structure's `&mut` refresh first); nothing is
    /// wrong with the configuration.
    StaleTable,
    /// The buffers given to a constructor do not fit together (a length
    /// relation between them, or a table length, is broken).
    InvalidStorage {
        /// Which relation is broken.
        what: &'static str,
    },
    /// A solid shape is degenerate: a sphere without a positive radius or a
    /// triangle without area.
    InvalidShape,
    /// An update gives a different number of elements than the structure holds.
    LengthMismatch {
        /// Elements stored.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// A periodic axis is too short for what is asked of it: a neighbour
    /// search needs at least three cells per periodic axis (a period of
    /// `3 · radius · CELL_MARGIN`), a periodic broad phase boxes shorter
    /// than half the period.
    PeriodTooShort {
        /// The axis.
        axis: u8,
    },
    /// An SPH step exceeded a bound of the stability monitor
    /// ([`crate::sph::StepControl`]): the scene is diverging (the step was
    /// undone; its figures are in [`crate::sph::Fluid::last_report`]).
    Diverged {
        /// The bound exceeded: `"max_density_ratio"` or `"max_cfl"`.
        quantity: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::NonFinite => f.write_str("a coordinate is NaN or infinite"),
            Self::InvertedBox => f.write_str("a box has min > max"),
            Self::InvalidRadius => {
                f.write_str("radius must be finite and positive, with a representable inverse")
            }
            Self::OutOfRange => {
                f.write_str("a coordinate is beyond what the cell arithmetic can represent")
            }
            Self::CapacityExceeded { capacity } => {
                write!(f, "capacity of {capacity} elements exceeded")
            }
            Self::BucketFull { bucket, capacity } => {
                write!(f, "bucket {bucket} is full ({capacity} elements)")
            }
            Self::BufferTooSmall { needed, available } => {
                write!(
                    f,
                    "output buffer too small: {needed} needed, {available} available"
                )
            }
            Self::InvalidTableLength { len } => {
                write!(f, "table length {len} is not a power of two in 1..=2^31")
            }
            Self::IdOutOfRange { id } => write!(f, "id {id} is not below the capacity"),
            Self::DuplicateId { id } => write!(f, "id {id} is already stored"),
            Self::UnknownId { id } => write!(f, "id {id} is not stored"),
            Self::InvalidConfig { field } => {
                write!(
                    f,
                    "configuration value `{field}` is out of its documented range"
                )
            }
            Self::StaleTable => f.write_str(
                "the table is out of date with the stored boxes: refresh it through a &mut call",
            ),
            Self::InvalidStorage { what } => write!(f, "storage buffers do not fit: {what}"),
            Self::InvalidShape => {
                f.write_str("a shape is degenerate (radius <= 0 or a triangle without area)")
            }
            Self::LengthMismatch { expected, got } => {
                write!(f, "{got} elements given, {expected} stored")
            }
            Self::PeriodTooShort { axis } => {
                write!(
                    f,
                    "the period along axis {axis} is too short for the radius or box"
                )
            }
            Self::Diverged { quantity } => {
                write!(
                    f,
                    "the step exceeded the stability bound `{quantity}`: the scene diverges"
                )
            }
        }
    }
}

impl core::error::Error for Error {}

/// A broken invariant found by a structure's `validate()`.
///
/// Seeing one is always a bug in spatium (or memory corruption), never a
/// consequence of bad input: bad input is refused with an [`Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Corruption {
    /// Which structure.
    pub structure: &'static str,
    /// Which invariant is broken.
    pub invariant: &'static str,
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: invariant broken: {}",
            self.structure, self.invariant
        )
    }
}

impl core::error::Error for Corruption {}

/// The `validate()` convention shared by every structure: a full check of the
/// structure's invariants, `O(storage)` time, no allocation, no mutation.
///
/// Tests and fuzz targets call it after every operation.
pub trait Validate {
    /// Checks every invariant; returns the first one found broken.
    fn validate(&self) -> Result<(), Corruption>;
}

/// `Err(Corruption)` unless `cond` holds.
#[inline]
pub(crate) fn ensure(
    cond: bool,
    structure: &'static str,
    invariant: &'static str,
) -> Result<(), Corruption> {
    if cond {
        Ok(())
    } else {
        Err(Corruption {
            structure,
            invariant,
        })
    }
}
