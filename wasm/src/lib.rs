//! # spatium-wasm
//!
//! spatium in the browser: a 2D SPH fluid ([`spatium::sph::Fluid`] over
//! `Vec2`, the seed preset) poured from a pipe and released from a block
//! onto static boxes and discs found through a broad phase
//! ([`spatium::sph::boundary::Obstacles`]), drawn on a `<canvas>` by the page
//! in `www/`, with the neighbour search, the broad phase and the particle
//! count chosen on the page and the time of each solver stage shown live.
//!
//! * [`scene`], [`structures`], [`timing`]: the scene in pure Rust (no
//!   browser API), built and tested natively as well as for wasm32.
//! * `web` (wasm32 only): the `wasm-bindgen` glue the page calls (`Demo`,
//!   `fixed_run`, `performance.now()` as the stage clock).

pub mod scene;
pub mod structures;
pub mod timing;

#[cfg(target_arch = "wasm32")]
pub mod web;
