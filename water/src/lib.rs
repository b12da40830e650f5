//! # spatium-water
//!
//! The real-time SPH water channel of the seed (`realtime-sph-water-channel`),
//! live in a browser on WebGPU: [`spatium_gpu`]'s solver in a channel fed
//! by a pipe, with a lock gate that slides up and down and a paddle that
//! swings, moved by the user while the water flows (kinematic boxes with
//! the CPU solver's contact rules), drawn as shaded spheres coloured from
//! pale to strong blue by density, with the seed's start panel (particle
//! count, spacing, Δt, integrator, sort) and live panel (μ, k, ρ₀, γ,
//! damping, surface tension, gravity), an orbit camera, frames per second
//! and per-stage GPU times.
//!
//! * [`channel`]: the scene, the panels and the controls, independent of
//!   the browser (the native tests run it on lavapipe);
//! * `web` (wasm32 only): the page's glue, `www/index.html` and
//!   `www/water.js`.

#![forbid(unsafe_code)]

pub mod channel;
#[cfg(target_arch = "wasm32")]
mod web;
