//! spatium's host test suite, one test binary: the differential tests
//! against brute force, the property tests over random operation
//! sequences, the error-path, parallel, physics and paper-anchor tests.
//!
//! Each file is a module, named as its test binary was before they were
//! merged (`cargo test --profile ci -p spatium-host-tests --test suite --
//! sph_walls::` runs one of them). One binary instead of one per file:
//! the optimised test profile monomorphises the structures and links the
//! dependencies once, not 37 times, which took most of a cold CI run's
//! test stage.

mod anchor;
mod brute_broadphase;
mod conformance;
mod decomp_differential;
mod decomp_props;
mod filter;
mod grid_differential;
mod grid_parallel;
mod hhash_differential;
mod hhash_paper;
mod hhash_parallel;
mod hhash_props;
mod hhg_differential;
mod hhg_parallel;
mod hhg_props;
mod kd_differential;
mod kd_parallel;
mod kd_props;
mod model_props;
mod pair_cache;
mod periodic_broad;
mod periodic_search;
mod ray;
mod serde;
mod sph_control;
mod sph_differential;
mod sph_kernels;
mod sph_parallel;
mod sph_periodic;
mod sph_physics;
mod sph_poiseuille;
mod sph_props;
mod sph_shapes;
mod sph_walls;
mod uniform_differential;
mod uniform_errors;
mod uniform_parallel;
mod uniform_props;
mod update_many;
