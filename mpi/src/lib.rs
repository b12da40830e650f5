//! spatium across machines, over MPI.
//!
//! When one machine is not enough, the ranks of an MPI job split the domain
//! with the core's recursive coordinate bisection
//! ([`spatium::decomp`]) and each steps its own part:
//!
//! * [`DistFluid`]: the SPH step of [`spatium::sph`] with a ghost layer
//!   exchanged once per step, particles migrating to their new owner after
//!   it, and the subdomains rebuilt when the ranks' loads drift apart. The
//!   result is bit-identical to one process stepping every particle (see
//!   [`fluid`]).
//! * [`DistBoxes`]: a broad phase over boxes spread over the ranks, each
//!   overlapping pair reported exactly once across all ranks, including
//!   pairs whose boxes are owned by different ranks.
//! * [`Ranks`]: the collectives they are built on; every failure on one
//!   rank is reported as the same [`DistError`] on every rank, so a bad
//!   input never leaves the others waiting.
//!
//! The crate adds no transport of its own: it calls the system's MPI
//! library through the `mpi` crate, so it runs wherever `mpirun` does.

pub mod broad;
pub mod comm;
pub mod domain;
pub mod error;
pub mod fluid;

pub use broad::{DistBoxes, OwnedBox, PairReport, UpdateReport};
pub use comm::{Ranks, Traffic};
pub use domain::{Balance, Subdomains};
pub use error::DistError;
pub use fluid::{DistFluid, Particle, StepReport};
