//! Host-side support shared by spatium's tests, benchmarks, fuzzing and demo:
//! a deterministic random generator, the scenario generators every structure
//! is tested on, the brute-force oracle, and `Vec`-backed constructors.

#![forbid(unsafe_code)]

pub mod boxes;
pub mod make;
pub mod oracle;
pub mod pouchol;
pub mod rng;
pub mod runtime;
pub mod scenarios;
pub mod sph;

pub use rng::Rng;
pub use scenarios::{BoxScenario, PointScenario};
