//! Scenes and runners shared by the criterion benchmarks
//! (`benches/*.rs`) and the report generator (`src/bin/report.rs`, which
//! runs the [`experiments`]).
//!
//! * [`scene`]: the jittered fluid block at a given size, in one of the
//!   input [`Order`]s, with the positions converted once (outside any timing)
//!   into the form each implementation takes.
//! * [`runner`]: one [`Runner`] per implementation, holding every buffer it
//!   needs so that a timed run only builds and queries; each run returns a
//!   count that [`check`] compares with spatium's.
//! * [`measure`], [`provenance`], [`plot`] and [`template`]: the one
//!   timing protocol and median, the provenance block, the SVG plot helper
//!   and the markdown template filler that every report uses.
//! * [`pouchol_scene`]: the 3D scene of Pouchol et al. 2009 §4.2 (particles
//!   falling onto static spheres), timed by `src/bin/hhash_report.rs`.
//!
//! The one-core experiments (`neighbors`, `bp`, `kd`, `hhash`, `sph`) run on
//! the calling thread: kiddo is built without its `multi-threaded` feature,
//! rstar is sequential, splashsurf_lib is called through its sequential
//! functions and parry3d's BVH through its sequential traversal. The
//! [`experiments::threads`] experiment is the one that uses threads: spatium
//! through its parallel forms on `spatium_host::par::HostExec`, and each
//! peer's parallel mode (kiddo's queries as a rayon `par_iter`, parry3d's
//! `parallel` pair traversal, splashsurf_lib's `_parallel` search) on a
//! rayon pool of the same size.
//!
pub mod bp_peers;
pub mod check;
pub mod cluster_pairs;
pub mod experiments;
pub mod measure;
pub mod peers;
pub mod plot;
pub mod pouchol_scene;
pub mod provenance;
pub mod runner;
pub mod scene;
pub mod settle;
pub mod sph_scene;
pub mod template;

pub use check::{CheckError, Reference, check_runner, checked_runner};
pub use runner::{Imp, Metric, Runner};
pub use scene::{Order, Scene};

/// Sides of the fluid block measured: `side³` = 10 648, 97 336 and 1 000 000
/// particles (about 10⁴, 10⁵ and 10⁶).
pub const SIDES: [usize; 3] = [22, 46, 100];

/// Lattice spacing of the fluid block; the radius is twice this.
pub const SPACING: f32 = 0.5;

/// Jitter of the fluid block, as a fraction of the spacing.
pub const JITTER: f32 = 0.3;

/// Seed of every random choice (block jitter, shuffle, displacement).
pub const SEED: u64 = 0x5EED_2024;

/// Largest displacement per axis of the `linked-update` step, as a fraction
/// of the spacing (a typical SPH time step moves particles a small fraction
/// of their spacing).
pub const STEP: f32 = 0.1;

/// Table slots per particle for the uniform hashes (the benchmarked policy).
pub const TABLE_FACTOR: usize = 2;

/// Largest `N` at which the seeds' 100 × N table is measured (above it the
/// table alone takes 1 GiB).
pub const MAX_N_TABLE_100: usize = 200_000;

/// Largest `N` at which brute force is measured.
pub const MAX_N_BRUTE: usize = 20_000;
