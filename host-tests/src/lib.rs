//! Support shared by spatium's test files (the tests themselves are in
//! `tests/`): proptest strategies for lattice boxes ([`props`]). The
//! scenario generators, the oracle and the `Vec`-backed constructors are in
//! the user-facing host crate, `spatium-host`.

#![forbid(unsafe_code)]

pub mod props;
