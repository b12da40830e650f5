//! [`Renderer`]: the fluid, its obstacles and the channel box drawn in 3D by
//! wgpu render pipelines, into any colour target: a browser canvas's
//! surface texture (WebGPU, `wasm32`) or an offscreen texture (native).
//!
//! Nothing here blocks or reads back: [`Renderer::draw`] records one render
//! pass into the caller's encoder and stages its small per-frame data with
//! [`wgpu::Queue::write_buffer`], so it fits a browser's frame callback.
//!
//! What is drawn, over a clear to [`palette::BACKGROUND`]:
//!
//! * the particles, straight from the fluid's device buffers
//!   ([`GpuFluid::positions_buffer`], [`GpuFluid::states_buffer`], read in
//!   the vertex stage): each a camera-facing quad on which the fragment
//!   shader intersects the view ray with the particle's sphere (radius
//!   [`SphParams::particle_radius`](spatium::sph::SphParams::particle_radius)),
//!   writing the hit's depth and shading it (Lambert, ambient and a
//!   Blinn-Phong highlight), coloured by density on the ramp of the CPU
//!   frames ([`palette::density_colour`]: [`palette::PALE`] at 0.5 ρ₀ to
//!   [`palette::STRONG`] at 1.5 ρ₀);
//! * kinematic obstacles in [`palette::OBSTACLE`]: boxes as shaded cubes,
//!   spheres as impostors like the particles. Triangles are not drawn;
//! * the domain (`params.domain`, the channel box) as lines in
//!   [`palette::FRAME`].
//!
//! Colours are lit in linear space; for a target format that is not sRGB
//! (a browser canvas is usually `Bgra8Unorm`) the shader encodes sRGB
//! itself, so both kinds of target show the same colours.

use bytemuck::{Pod, Zeroable};
use spatium::sph::boundary::{Obstacle, Shape};
use spatium::{BoundingBox, Vec3};

use crate::camera::OrbitCamera;
use crate::fluid::GpuFluid;
use crate::palette;

/// The depth buffer's format.
pub const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// The per-frame uniform block (`Frame` in `draw.wgsl`), 192 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct FrameBlock {
    view_proj: [[f32; 4]; 4],
    eye: [f32; 4],
    light: [f32; 4],
    domain_min: [f32; 4],
    domain_max: [f32; 4],
    pale: [f32; 4],
    strong: [f32; 4],
    solid: [f32; 4],
    edge: [f32; 4],
}

const _: () = assert!(size_of::<FrameBlock>() == 192);

/// One obstacle instance: a box's centre and half extents, or a sphere's
/// centre and its radius in every component.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
struct Instance {
    center: [f32; 3],
    extent: [f32; 3],
}

const INSTANCE_ATTRIBUTES: [wgpu::VertexAttribute; 2] =
    wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3];

/// Fluid buffers bound last, and their bind group.
struct FluidBinding {
    positions: wgpu::Buffer,
    states: wgpu::Buffer,
    group: wgpu::BindGroup,
}

/// Draws a [`GpuFluid`], its obstacles and the channel box seen by an
/// [`OrbitCamera`] (see the [module](self) for what and how).
///
/// Owns its pipelines, the per-frame uniform, the obstacle instances and a
/// depth buffer ([`DEPTH_FORMAT`]) that follows the target's size. Create
/// it on the fluid's device, once per colour format. It keeps the bind
/// group of the last fluid drawn (and so a reference to that fluid's two
/// buffers) until a fluid with other buffers is drawn or it is dropped.
pub struct Renderer {
    color_format: wgpu::TextureFormat,
    layout: wgpu::BindGroupLayout,
    frame: wgpu::Buffer,
    particles: wgpu::RenderPipeline,
    balls: wgpu::RenderPipeline,
    boxes: wgpu::RenderPipeline,
    edges: wgpu::RenderPipeline,
    instances: wgpu::Buffer,
    instance_capacity: u64,
    scratch: Vec<Instance>,
    depth: Option<(wgpu::TextureView, (u32, u32))>,
    binding: Option<FluidBinding>,
}

/// A colour as the uniform carries it: 8-bit sRGB / 255, `w` in the fourth.
fn rgb(c: [u8; 3], w: f32) -> [f32; 4] {
    [
        f32::from(c[0]) / 255.0,
        f32::from(c[1]) / 255.0,
        f32::from(c[2]) / 255.0,
        w,
    ]
}

fn normalize(v: [f32; 3]) -> [f32; 3] {
    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if n > 0.0 && n.is_finite() {
        v.map(|x| x / n)
    } else {
        [0.0, 1.0, 0.0]
    }
}

impl Renderer {
    /// Builds the pipelines for targets of `color_format` on `device` (the
    /// device of the fluids it will draw).
    pub fn new(device: &wgpu::Device, color_format: wgpu::TextureFormat) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("draw.wgsl"),
            source: wgpu::ShaderSource::Wgsl(include_str!("shaders/draw.wgsl").into()),
        });
        let storage = |binding| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::VERTEX,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: true },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("draw"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: wgpu::BufferSize::new(size_of::<FrameBlock>() as u64),
                    },
                    count: None,
                },
                storage(1),
                storage(2),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("draw"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let instance_layout = wgpu::VertexBufferLayout {
            array_stride: size_of::<Instance>() as u64,
            step_mode: wgpu::VertexStepMode::Instance,
            attributes: &INSTANCE_ATTRIBUTES,
        };
        let pipeline = |label: &str,
                        vs: &str,
                        fs: &str,
                        buffers: &[Option<wgpu::VertexBufferLayout<'_>>],
                        topology: wgpu::PrimitiveTopology| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(&pipeline_layout),
                vertex: wgpu::VertexState {
                    module: &module,
                    entry_point: Some(vs),
                    compilation_options: Default::default(),
                    buffers,
                },
                primitive: wgpu::PrimitiveState {
                    topology,
                    cull_mode: None,
                    ..Default::default()
                },
                depth_stencil: Some(wgpu::DepthStencilState {
                    format: DEPTH_FORMAT,
                    depth_write_enabled: Some(true),
                    depth_compare: Some(wgpu::CompareFunction::Less),
                    stencil: wgpu::StencilState::default(),
                    bias: wgpu::DepthBiasState::default(),
                }),
                multisample: wgpu::MultisampleState::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &module,
                    entry_point: Some(fs),
                    compilation_options: Default::default(),
                    targets: &[Some(wgpu::ColorTargetState {
                        format: color_format,
                        blend: None,
                        write_mask: wgpu::ColorWrites::ALL,
                    })],
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let triangles = wgpu::PrimitiveTopology::TriangleList;
        let particles = pipeline("particles", "particle_vs", "impostor_fs", &[], triangles);
        let balls = pipeline(
            "obstacle spheres",
            "ball_vs",
            "impostor_fs",
            &[Some(instance_layout.clone())],
            triangles,
        );
        let boxes = pipeline(
            "obstacle boxes",
            "box_vs",
            "box_fs",
            &[Some(instance_layout)],
            triangles,
        );
        let edges = pipeline(
            "channel box",
            "edge_vs",
            "edge_fs",
            &[],
            wgpu::PrimitiveTopology::LineList,
        );
        let frame = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("draw frame"),
            size: size_of::<FrameBlock>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let instance_capacity = 8;
        let instances = Self::instance_buffer(device, instance_capacity);
        Self {
            color_format,
            layout,
            frame,
            particles,
            balls,
            boxes,
            edges,
            instances,
            instance_capacity,
            scratch: Vec::new(),
            depth: None,
            binding: None,
        }
    }

    fn instance_buffer(device: &wgpu::Device, count: u64) -> wgpu::Buffer {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("obstacle instances"),
            size: count * size_of::<Instance>() as u64,
            usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// The colour format the pipelines were built for.
    pub fn color_format(&self) -> wgpu::TextureFormat {
        self.color_format
    }

    /// The clear colour for this renderer's format: [`palette::BACKGROUND`]
    /// (decoded to linear for an sRGB format, which encodes it again).
    pub fn clear_color(&self) -> wgpu::Color {
        let c = palette::BACKGROUND.map(|c| {
            if self.color_format.is_srgb() {
                f64::from(palette::srgb_to_linear(c))
            } else {
                f64::from(c) / 255.0
            }
        });
        wgpu::Color {
            r: c[0],
            g: c[1],
            b: c[2],
            a: 1.0,
        }
    }

    /// The depth view for `size`, recreated when the size changes.
    fn depth_view(&mut self, device: &wgpu::Device, size: (u32, u32)) -> wgpu::TextureView {
        if let Some((view, at)) = &self.depth
            && *at == size
        {
            return view.clone();
        }
        let texture = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("draw depth"),
            size: wgpu::Extent3d {
                width: size.0,
                height: size.1,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: DEPTH_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            view_formats: &[],
        });
        let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
        self.depth = Some((view.clone(), size));
        view
    }

    /// The bind group of the frame uniform and `fluid`'s buffers, rebuilt
    /// only when the buffers change.
    fn fluid_group(&mut self, device: &wgpu::Device, fluid: &GpuFluid) -> wgpu::BindGroup {
        let (positions, states) = (fluid.positions_buffer(), fluid.states_buffer());
        if let Some(b) = &self.binding
            && b.positions == *positions
            && b.states == *states
        {
            return b.group.clone();
        }
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("draw"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: self.frame.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: positions.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: states.as_entire_binding(),
                },
            ],
        });
        self.binding = Some(FluidBinding {
            positions: positions.clone(),
            states: states.clone(),
            group: group.clone(),
        });
        group
    }

    /// Writes the obstacle instances (boxes first, then spheres; triangles
    /// and invalid shapes skipped) and returns how many of each.
    fn write_obstacles(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        obstacles: &[Obstacle<Vec3>],
    ) -> (u32, u32) {
        self.scratch.clear();
        for o in obstacles {
            if o.shape.check().is_err() {
                continue;
            }
            if let Shape::Box(b) = o.shape {
                let (lo, hi) = (b.min(), b.max());
                self.scratch.push(Instance {
                    center: [
                        0.5 * (lo.x + hi.x),
                        0.5 * (lo.y + hi.y),
                        0.5 * (lo.z + hi.z),
                    ],
                    extent: [
                        0.5 * (hi.x - lo.x),
                        0.5 * (hi.y - lo.y),
                        0.5 * (hi.z - lo.z),
                    ],
                });
            }
        }
        let boxes = self.scratch.len() as u32;
        for o in obstacles {
            if o.shape.check().is_err() {
                continue;
            }
            if let Shape::Sphere { center, radius } = o.shape {
                self.scratch.push(Instance {
                    center: [center.x, center.y, center.z],
                    extent: [radius; 3],
                });
            }
        }
        let spheres = self.scratch.len() as u32 - boxes;
        let needed = self.scratch.len() as u64;
        if needed > self.instance_capacity {
            self.instance_capacity = needed.next_power_of_two();
            self.instances = Self::instance_buffer(device, self.instance_capacity);
        }
        if needed > 0 {
            queue.write_buffer(&self.instances, 0, bytemuck::cast_slice(&self.scratch));
        }
        (boxes, spheres)
    }

    /// Records one render pass into `encoder` drawing into `target` (a view
    /// of a texture of this renderer's [`color_format`](Self::color_format)
    /// and of `size` pixels, width × height): a clear to the background,
    /// the channel box (`fluid.params().domain`), the `obstacles` and the
    /// first [`fluid.len()`](GpuFluid::len) particles as `camera` sees them,
    /// the aspect ratio taken from `size`.
    ///
    /// Non-blocking: the frame's uniform and obstacle instances are staged
    /// with [`wgpu::Queue::write_buffer`] and take effect at the next
    /// submission, so record at most one `draw` per submission (a second
    /// one would overwrite the first one's camera and obstacles). Steps of
    /// the fluid submitted before, or encoded earlier in the same encoder,
    /// are seen. A zero `size` records nothing.
    ///
    /// `fluid` must live on the `device` this renderer was built on.
    #[allow(clippy::too_many_arguments)]
    pub fn draw(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        size: (u32, u32),
        fluid: &GpuFluid,
        obstacles: &[Obstacle<Vec3>],
        camera: &OrbitCamera,
    ) {
        if size.0 == 0 || size.1 == 0 {
            return;
        }
        let params = fluid.params();
        let (lo, hi) = (params.domain.min(), params.domain.max());
        let eye = camera.eye();
        // The light comes from above, over the viewer's right shoulder,
        // turning with the camera.
        let back = normalize([
            eye[0] - camera.target[0],
            eye[1] - camera.target[1],
            eye[2] - camera.target[2],
        ]);
        let right = normalize([back[2], 0.0, -back[0]]);
        let light = normalize([
            0.5 * back[0] + 0.35 * right[0],
            0.5 * back[1] + 0.35 * right[1] + 0.8,
            0.5 * back[2] + 0.35 * right[2],
        ]);
        let block = FrameBlock {
            view_proj: camera.view_proj(size.0 as f32 / size.1 as f32),
            eye: [eye[0], eye[1], eye[2], params.particle_radius],
            light: [
                light[0],
                light[1],
                light[2],
                if self.color_format.is_srgb() {
                    0.0
                } else {
                    1.0
                },
            ],
            domain_min: [lo.x, lo.y, lo.z, params.rest_density],
            domain_max: [hi.x, hi.y, hi.z, 0.0],
            pale: rgb(palette::PALE, palette::DENSITY_LOW),
            strong: rgb(palette::STRONG, palette::DENSITY_HIGH),
            solid: rgb(palette::OBSTACLE, 0.0),
            edge: rgb(palette::FRAME, 0.0),
        };
        queue.write_buffer(&self.frame, 0, bytemuck::bytes_of(&block));
        let (boxes, spheres) = self.write_obstacles(device, queue, obstacles);
        let depth = self.depth_view(device, size);
        let group = self.fluid_group(device, fluid);
        let count = fluid.len() as u32;

        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("draw"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(self.clear_color()),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &depth,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(1.0),
                    store: wgpu::StoreOp::Discard,
                }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_bind_group(0, &group, &[]);
        pass.set_pipeline(&self.edges);
        pass.draw(0..24, 0..1);
        if boxes + spheres > 0 {
            pass.set_vertex_buffer(0, self.instances.slice(..));
            if boxes > 0 {
                pass.set_pipeline(&self.boxes);
                pass.draw(0..36, 0..boxes);
            }
            if spheres > 0 {
                pass.set_pipeline(&self.balls);
                pass.draw(0..6, boxes..boxes + spheres);
            }
        }
        if count > 0 {
            pass.set_pipeline(&self.particles);
            pass.draw(0..6, 0..count);
        }
    }
}
