//! [`GpuEmitter`]: the core's pipe emitter, writing its layers on the GPU.

use spatium::sph::source::Emitter;
use spatium::{BoundingBox, Point, Vec3};

use crate::error::GpuError;
use crate::fluid::GpuFluid;

/// A pipe that pours fluid into a [`GpuFluid`]: the core's
/// [`spatium::sph::source::Emitter`] decides when a layer is due and where
/// (its [`emit_with`](Emitter::emit_with)), and the GPU writes the layer's
/// particles from its lattice offsets
/// ([`layer_offsets`](Emitter::layer_offsets)), uploaded once.
///
/// The host checks each due layer first (every point inside the domain,
/// room for the whole layer); a refused layer is not written, the call
/// returns the error, and the layer stays due at the mouth (no backlog), as
/// on the CPU.
#[derive(Debug)]
pub struct GpuEmitter {
    pipe: Emitter<Vec3>,
    /// `(u, v)` of each layer point along the pipe's basis, in the core's
    /// order.
    offsets: Vec<[f32; 2]>,
    layer: Option<wgpu::Buffer>,
}

impl GpuEmitter {
    /// A pipe whose mouth is centred at `origin`, pouring along `direction`
    /// at `speed`, of the given `radius` and lattice `spacing`, emitting
    /// `budget` particles in all.
    ///
    /// # Errors
    /// [`GpuError::Core`] with the error of [`Emitter::new`] for the same
    /// arguments.
    pub fn new(
        origin: Vec3,
        direction: Vec3,
        speed: f32,
        radius: f32,
        spacing: f32,
        budget: u32,
    ) -> Result<Self, GpuError> {
        let pipe = Emitter::new(origin, direction, speed, radius, spacing, budget)?;
        let offsets = pipe.layer_offsets().map(|(u, v)| [u, v]).collect();
        Ok(Self {
            pipe,
            offsets,
            layer: None,
        })
    }

    /// Particles emitted so far.
    pub fn emitted(&self) -> u32 {
        self.pipe.emitted()
    }

    /// Particles still to emit.
    pub fn remaining(&self) -> u32 {
        self.pipe.remaining()
    }

    /// Points in a full layer.
    pub fn layer_len(&self) -> usize {
        self.offsets.len()
    }

    /// Advances the pipe by `dt` and writes the layers due into `fluid`;
    /// returns how many particles were added.
    ///
    /// # Errors
    /// As [`Emitter::emit`]: [`GpuError::Core`] with
    /// [`spatium::Error::InvalidConfig`] for a `dt` that is not finite and
    /// non-negative, or [`spatium::Error::OutOfRange`] /
    /// [`spatium::Error::NonFinite`] if a layer point lies outside the
    /// domain; [`GpuError::CapacityExceeded`] if a due layer does not fit.
    /// Layers written earlier in the call are kept.
    pub fn emit(&mut self, fluid: &mut GpuFluid, dt: f32) -> Result<usize, GpuError> {
        let (offsets, layer) = (&self.offsets, &mut self.layer);
        self.pipe.emit_with(dt, |pipe, centre, count| {
            write_layer(fluid, pipe, offsets, layer, centre, count)?;
            Ok(count)
        })
    }
}

/// Checks the layer's first `count` points and has the GPU write them.
fn write_layer(
    fluid: &mut GpuFluid,
    pipe: &Emitter<Vec3>,
    offsets: &[[f32; 2]],
    layer: &mut Option<wgpu::Buffer>,
    centre: Vec3,
    count: usize,
) -> Result<(), GpuError> {
    let velocity = pipe.velocity();
    let domain = fluid.params().domain;
    let (lo, hi) = (domain.min(), domain.max());
    for x in pipe.layer_points(centre).take(count) {
        if !x.is_finite() || !velocity.is_finite() {
            return Err(spatium::Error::NonFinite.into());
        }
        if (0..3).any(|k| x.coord(k) < lo.coord(k) || x.coord(k) > hi.coord(k)) {
            return Err(spatium::Error::OutOfRange.into());
        }
    }
    if count > fluid.capacity() - fluid.len() {
        return Err(GpuError::CapacityExceeded {
            capacity: fluid.capacity(),
            requested: fluid.len() + count,
        });
    }
    let buffer = match layer {
        Some(l) => l.clone(),
        None => {
            let bytes: &[u8] = bytemuck::cast_slice(offsets);
            let l = fluid.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("emitter layer"),
                size: bytes.len().max(8) as u64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            fluid.queue().write_buffer(&l, 0, bytes);
            *layer = Some(l.clone());
            l
        }
    };
    fluid.emit_layer(&buffer, count as u32, centre, velocity, pipe.basis())
}
