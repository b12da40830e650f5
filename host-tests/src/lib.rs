//! Support shared by spatium's test files (the tests themselves are in
//! `tests/`) and fuzz targets: proptest strategies for lattice boxes
//! ([`props`]), one operation model per trait ([`model`]: broad phase and
//! neighbour search, with proptest strategies and `arbitrary` impls), the
//! layers of the hierarchical hash grid and the kd-tree over the
//! broad-phase model ([`hhg_model`], [`kd_model`]) and of the uniform
//! hashes over the search model ([`uniform_model`]), the deterministic
//! contract checks of both traits ([`contract`]), the registry of every
//! structure kind they run over ([`registry`]) and the brute-force judge of
//! the domain decomposition ([`decomp_oracle`]), and the parameters of the
//! analytic SPH validation flows ([`flows`]). The scenario generators,
//! the oracle and the `Vec`-backed constructors are in the user-facing host
//! crate, `spatium-host`.

#![forbid(unsafe_code)]

pub mod contract;
pub mod decomp_oracle;
pub mod flows;
pub mod hhg_model;
pub mod kd_model;
pub mod model;
pub mod periodic_model;
pub mod props;
pub mod registry;
pub mod uniform_model;
