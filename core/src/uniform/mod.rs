//! Uniform spatial hashing for fixed-radius neighbour search (SPH).
//!
//! Space is cut into cubic cells slightly larger than the search radius
//! ([`CELL_MARGIN`]); a particle's neighbours lie in its own cell and the 26
//! around it (8 in 2D). Integer cell coordinates are hashed with the primes
//! 73856093, 19349663 and 83492791 ([`crate::HASH_PRIMES`]) into a table of
//! fixed, power-of-two length, so an unbounded domain needs a bounded table.
//!
//! Three bucket strategies share the grid, hashing and queries:
//!
//! | type | buckets | build | update | capacity limit |
//! |---|---|---|---|---|
//! | [`CellSortedHash`] | counting sort of particles by bucket + start offsets (the GPU layout) | `O(N)` | rebuild | none per bucket |
//! | [`BucketHash`] | `K` preallocated slots per bucket | `O(N)` | rebuild | `K`: overflow is an error |
//! | [`LinkedHash`] | per-particle doubly linked lists | `O(N)` | incremental: relinks only particles that changed cell | none |
//!
//! Every table entry carries a timestamp ([`crate::table`]): a new build
//! bumps the structure's stamp, and entries with an older stamp read as
//! empty, so clearing is `O(1)`.
//!
//! # Exactness
//!
//! Hash collisions are harmless. [`CellSortedHash`] chains the records of
//! the occupied cells that share a slot and compares cells on lookup, so a
//! run is only ever read for its own cell; [`BucketHash`] and [`LinkedHash`]
//! store each particle's cell and test it against the visited cell. Either
//! way a pair is never reported twice and far particles are never reported. Cells are computed relative to an origin at the centre of the
//! data, with a margin of 1/128 on the cell size; coordinates are refused
//! ([`crate::Error::OutOfRange`]) when they lie more than [`UNIFORM_RANGE_CELLS`]
//! cells from that origin, the range over which `f32` rounding provably keeps
//! every pair with `d² < r²` in adjacent cells.

mod boxes;
mod bucketed;
mod grid;
mod linked;
mod sorted;

pub use boxes::GridBroadPhase;
pub use bucketed::{Bucket, BucketHash, BucketParticle};
pub use linked::{Head, LinkedHash, LinkedParticle};
pub use sorted::{CellRecord, CellSortedHash, DenseGrid, SortedParticle, TableSlot};

pub use crate::cell::{CELL_MARGIN, UNIFORM_RANGE_CELLS};
pub use grid::Grid;
