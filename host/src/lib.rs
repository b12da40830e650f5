//! spatium on a host with `std`, for applications as much as for spatium's
//! own demo, WASM page, benchmarks, tests and fuzzing:
//!
//! * [`runtime`]: every neighbour search and broad phase behind one type
//!   chosen at run time ([`runtime::AnySearch`], [`runtime::AnyBroad`], named
//!   by [`runtime::SearchKind`] / [`runtime::BroadKind`] for flags and menus);
//! * [`make`]: `Vec`-backed constructors of every structure;
//! * [`scenarios`], [`boxes`], [`pouchol`]: the scenario generators every
//!   structure is tested and measured on, with a deterministic [`Rng`];
//! * [`oracle`] and [`sph`]: brute-force answers (pairs, neighbour lists,
//!   an `O(N²)` `f64` SPH step) to check any structure against.

#![forbid(unsafe_code)]

pub mod boxes;
pub mod make;
pub mod oracle;
pub mod par;
pub mod pouchol;
pub mod rng;
pub mod runtime;
pub mod scenarios;
pub mod sph;

pub use rng::Rng;
pub use scenarios::{BoxScenario, PointScenario};
