//! The crate's own GPU-side blocks (the particle and parameter types are the
//! core's: [`spatium::Vec3`], [`spatium::sph::ParticleState`],
//! [`spatium::sph::ParamBlock`]). Each is `#[repr(C)]`, `Pod`, of scalar
//! 32-bit fields, mirrored field for field by a WGSL struct.

use bytemuck::{Pod, Zeroable};

/// Per-evaluation grid constants (WGSL `GridInfo`, 32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GridBlock {
    /// Particles stored.
    pub count: u32,
    /// `32 − log2(table length)`, as in [`spatium::uniform::Grid::bucket`].
    pub shift: u32,
    /// Table length (buckets).
    pub table_len: u32,
    /// Padded length of the bitonic sort (a power of two, at least 512).
    pub sort_len: u32,
    /// Grid origin, `x`.
    pub origin_x: f32,
    /// Grid origin, `y`.
    pub origin_y: f32,
    /// Grid origin, `z`.
    pub origin_z: f32,
    /// `1 / cell size`, computed as the core's grid does.
    pub inv_cell: f32,
}

/// One emitted layer (WGSL `EmitInfo`, 64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub(crate) struct EmitBlock {
    pub first: u32,
    pub count: u32,
    pub centre: [f32; 3],
    pub velocity: [f32; 3],
    pub basis0: [f32; 3],
    pub basis1: [f32; 3],
    pub pad: [u32; 2],
}

/// The length of one scan level (WGSL `ScanInfo`, 16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub(crate) struct ScanBlock {
    pub len: u32,
    pub pad: [u32; 3],
}

/// One bitonic pass (WGSL `Pass`, 16 bytes): merge size `k`, distance `j`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub(crate) struct PassBlock {
    pub k: u32,
    pub j: u32,
    pub pad: [u32; 2],
}

const _: () = {
    assert!(size_of::<GridBlock>() == 32);
    assert!(size_of::<EmitBlock>() == 64);
    assert!(size_of::<ScanBlock>() == 16);
    assert!(size_of::<spatium::sph::ParamBlock>() == 128);
    assert!(size_of::<spatium::sph::ParticleState<spatium::Vec3>>() == 68);
    assert!(size_of::<spatium::Vec3>() == 12);
};
