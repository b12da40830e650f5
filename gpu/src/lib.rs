//! # spatium-gpu
//!
//! The SPH solver of [`spatium`] (the real-time SPH water-channel seed) as
//! WGSL compute kernels through wgpu, checked particle by particle against
//! the CPU solver.
//!
//! * [`Gpu`]: the adapter and device the environment selects (`WGPU_BACKEND`,
//!   `WGPU_ADAPTER_NAME`; Mesa's lavapipe where there is no GPU; the
//!   browser's WebGPU on `wasm32-unknown-unknown`).
//! * [`GpuFluid`]: positions and [`spatium::sph::ParticleState`]s in device
//!   buffers, uploaded as the core's bytes (`bytemuck::cast_slice`), with the
//!   parameters as the core's [`spatium::sph::ParamBlock`] uniform; stepped
//!   by the seed's pipeline (cells, sort by cell, offsets, density, normals,
//!   forces, integration with the box walls and kinematic obstacles); read
//!   back by particle id.
//! * [`GpuFluid::set_obstacles`]: the core's spheres, boxes and triangles,
//!   static or moving, resolved with the core's contact rules (at most
//!   [`MAX_OBSTACLES`]).
//! * [`SortKind`]: the counting sort (atomic histogram, parallel prefix
//!   scan, scatter) or the seed's bitonic sort.
//! * [`GpuEmitter`]: the core's pipe emitter, writing its layers on the GPU.
//! * [`render`]: density-coloured PNG frames of read-back particles.
//! * [`draw`]: the fluid, its obstacles and the channel box in 3D through
//!   wgpu render pipelines ([`Renderer`]), into a canvas surface (WebGPU) or
//!   an offscreen texture, seen by an [`OrbitCamera`] ([`camera`]); no
//!   read-back, no blocking.
//! * [`palette`]: the colours both share (the density ramp).
//!
//! The neighbour search uses the core's uniform hash exactly: the cell of a
//! point is [`spatium::uniform::Grid::cell`] and its bucket
//! [`spatium::uniform::Grid::bucket`] for the grid of radius `h` centred on
//! the domain ([`GpuFluid::grid`]); a bucket shared by several cells is
//! searched with a per-particle cell check, so no pair is counted twice.
//!
//! Three dimensions only ([`spatium::Vec3`]).
//!
//! # Async on every target
//!
//! Opening the device ([`Gpu::new_async`], [`Gpu::request`]), creating a
//! fluid ([`GpuFluid::new_async`]) and every read-back
//! ([`GpuFluid::read_back_async`], [`GpuFluid::wait_async`], ...) are
//! futures, so the crate builds for `wasm32-unknown-unknown` with wgpu's
//! WebGPU backend and runs in a browser's event loop. Native targets keep
//! blocking conveniences on top (`Gpu::new`, `GpuFluid::new`,
//! `GpuFluid::read_back`, `GpuFluid::wait`, ...), each the future driven by
//! `pollster`; they do not exist on `wasm32`.
//!
//! # Errors and limits
//!
//! Every failure is a [`GpuError`]: no adapter, a missing limit, a buffer
//! larger than the device allows, parameters or particles the core refuses,
//! more particles than the capacity. Dispatches wider than the device's
//! workgroups per dimension are split into 2D grids.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod camera;
mod context;
pub mod draw;
mod emitter;
mod error;
mod fluid;
pub mod layout;
mod obstacles;
mod oneshot;
pub mod palette;
mod pipeline;
pub mod render;
pub mod scene;
mod timing;

pub use camera::OrbitCamera;
pub use context::Gpu;
pub use draw::Renderer;
pub use emitter::GpuEmitter;
pub use error::GpuError;
pub use fluid::{FluidConfig, GpuFluid, Snapshot, SortKind, SortView};
pub use obstacles::MAX_OBSTACLES;
pub use pipeline::dispatch_grid;
pub use timing::{Stage, StageTimes};
