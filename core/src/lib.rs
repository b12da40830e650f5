//! # spatium
//!
//! Spatial acceleration structures for particle simulation and collision
//! broad phase that need no allocator and no `std`: the same code runs in
//! firmware on a Cortex-M, in a WASM page and on a host simulating a million
//! particles.
//!
//! ## Storage model
//!
//! Every structure is generic over its buffers ([`Storage`]): const-generic
//! arrays for a `static` instance in firmware (every `new` is a `const fn`),
//! or caller-provided slices sized at run time. Capacities are buffer
//! lengths; nothing is ever allocated. Each structure documents its memory as
//! a formula; the uniform hashes in [`uniform`] take:
//!
//! | structure | bytes (3D) | bytes (2D) |
//! |---|---|---|
//! | [`uniform::CellSortedHash`] | `8T + 24N` | `8T + 20N` |
//! | [`uniform::BucketHash`] (`K` slots per bucket) | `(16 + 4K)T + 24N` | `(16 + 4K)T + 16N` |
//! | [`uniform::LinkedHash`] | `8T + 32N` | `8T + 24N` |
//! | [`BruteForceNeighbors`] | `12N` | `8N` |
//! | [`BruteForceBroadPhase`] | `32C` | `24C` |
//! | [`uniform::GridBroadPhase`] | `32C + 32N + 4S` | `24C + 24N + 4S` |
//! | [`HierarchicalHashGrid`] | `76C + 4A` | `60C + 4A` |
//! | [`kdtree::LinearKdTree`] | `2R · r` | `2R · r` |
//! | [`kdtree::KdBroadPhase`] | `24C + 2R · r` | `16C + 2R · r` |
//! | [`hhash::HierarchicalHash`], [`hhash::MultilevelHash`] | `40C + 8T + 8E + 12N` | `32C + 8T + 8E + 8N` |
//! | [`PairCache`] (over a search) | `12Q` | `12Q` |
//! | [`VerletCache`] (over a search) | `12N + 4K + 12Q` | `8N + 4K + 12Q` |
//! | [`sph::Fluid`] | `80N` | `56N` |
//! | [`sph::boundary::Obstacles`] (over a broad phase) | `52C` | `36C` |
//! | [`decomp::Decomposition`] | `40S − 8` | `32S − 8` |
//!
//! (`T` table slots, `N` particles, `C` ids, `A` arena words, `R` kd-tree
//! records of `r` = 8 / 16 / 32 bytes for `u32` / `u64` / `u128` codes —
//! 24 for `u128` on 32-bit ARM, which aligns `u128` to 8 —, `E` hash pool
//! entries, `Q` cached pairs, `K` Verlet candidate entries: candidates plus
//! two per run of pairs with one first id, at most `2N`, `S` subdomains (ranks)
//! of a domain decomposition, `S` cell starts of the grid broad phase.)
//!
//! ## Traits
//!
//! [`NeighborSearch`] (fixed-radius neighbour search) and [`BroadPhase`]
//! (boxes with insert / update / remove by id, overlapping pairs, box
//! queries); see [`traits`] for the shared conventions. Broad phases:
//! [`HierarchicalHashGrid`] (the pe engine's hierarchical hash grid, boxes of
//! any size, `O(1)` insert / update / remove), the linear kd-tree
//! ([`kdtree::LinearKdTree`] built from a slice each step,
//! [`kdtree::KdBroadPhase`] behind the trait), hierarchical and multilevel
//! hashing ([`hhash`]: one fixed table for objects of every size and for
//! fluid particles) and [`BruteForceBroadPhase`].
//! Every broad phase also casts rays and segments ([`RayCast`], see
//! [`ray`]): the nearest hit of a caller's narrow phase, or every hit in
//! order, with no allocation. Every structure also implements [`Validate`].
//!
//! ## SPH
//!
//! [`sph`] is the water-channel seed's solver on top of these traits: a
//! [`sph::Fluid`] in fixed memory stepped over any [`NeighborSearch`] (wrap it
//! in a [`PairCache`] to search once per force evaluation), with walls and
//! obstacles behind any [`BroadPhase`].
//!
//! ## Across machines
//!
//! [`decomp`] decomposes a domain for a distributed run, with no transport
//! in it: recursive coordinate bisection into any number of weighted
//! subdomains, the owner of a position, the ghost set of a subdomain
//! (periodic images included) and the migration lists after a step.
//!
//! ## All cores
//!
//! [`exec`] is the task hook: every structure and the SPH step have
//! parallel forms (`par_build`, `par_for_each_pair`, `par_gather`,
//! `par_neighbor_lists`, `par_for_each_overlap`, [`sph::Fluid::par_step`])
//! that take an [`exec::Executor`], cut their loops into tasks by input size
//! and give each task disjoint pieces of the outputs; the results are
//! bit-identical for every executor and number of workers.
//! [`exec::Serial`] runs the tasks in order; the host crate has executors
//! over rayon and `std::thread::scope`.
//!
//! ## Guarantees
//!
//! * `#![no_std]`, no `alloc`, `#![deny(unsafe_code)]`: the only `unsafe` is
//!   the `bytemuck::Pod` declaration of [`sph::ParticleState`] for
//!   [`Vec2`] and [`Vec3`] (checked at compile time, tested under Miri).
//! * No panic on any input: bad input (NaN, infinities, inverted boxes,
//!   radius ≤ 0, coordinates beyond the cell arithmetic) returns an [`Error`]
//!   and changes nothing; a full structure returns an error and loses nothing.
//! * Exact answers: hash collisions never duplicate or invent pairs, and the
//!   results equal the brute-force oracle's, pair for pair.
//!
//! ## Features
//!
//! * `defmt`: `defmt::Format` for every public data and error type.

#![no_std]
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::std_instead_of_core, clippy::alloc_instead_of_core)]

pub mod brute;
pub mod cell;
mod csr;
pub mod decomp;
pub mod error;
pub mod exec;
pub mod filter;
pub mod geom;
pub mod hhash;
pub mod hhg;
pub mod ids;
pub mod inspect;
#[cfg(any(feature = "glam", feature = "mint"))]
pub mod interop;
pub mod kdtree;
mod pair_cache;
pub mod periodic;
pub mod ray;
mod sort;
pub mod sph;
pub mod storage;
pub mod table;
pub mod traits;
pub mod uniform;

pub use brute::{BruteForceBroadPhase, BruteForceNeighbors, BruteSlot};
pub use error::{Corruption, Error, Validate};
pub use geom::{Aabb2, Aabb3, BoundingBox, HASH_PRIMES, Point, Vec2, Vec3};
pub use hhash::{
    ClassHash, HashBucket, HashConfig, HashEntry, HashSlot, HashStats, HierarchicalHash,
    MultilevelHash,
};
pub use hhg::{HhgConfig, HhgRecord, HhgSlot, HhgStats, HierarchicalHashGrid, UpdateStrategy};
pub use inspect::{BruteStats, Inspect, SearchStats};
pub use kdtree::{KdBroadPhase, KdConfig, KdRecord, KdSlot, KdStats, LinearKdTree};
pub use pair_cache::{NeighborPair, PairCache, PairCacheStats, VerletCache};
pub use periodic::{PeriodicBox, PeriodicBroadPhase, PeriodicImage, PeriodicSlot};
pub use ray::{Ray, RayCast, RayHit};
pub use sph::boundary::{Obstacle, Obstacles};
pub use sph::{Fluid, FluidStats, ParticleState, SphParams};
pub use storage::Storage;
pub use traits::{BroadPhase, Candidates, NeighborSearch};
pub use uniform::{
    Bucket, BucketHash, BucketParticle, CellRecord, CellSortedHash, Head, LinkedHash,
    LinkedParticle, SortedParticle, TableSlot,
};

/// The README's examples, compiled and run as doctests. `core/README.md` is
/// a symlink to the repository's README, which `cargo package` copies into
/// the crate as a file, so the same path works in the repository and in the
/// published crate.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
