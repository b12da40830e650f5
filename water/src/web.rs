//! The page's glue (wasm32 only): [`Water`], the running channel drawn on a
//! canvas through the browser's WebGPU, and [`fixed_run`], the fixed-seed
//! run the page test compares with the native build on lavapipe.
//! `www/water.js` calls these; nothing here blocks.

use spatium::Vec3;
use spatium::sph::Integrator;
use spatium::sph::boundary::Shape;
use spatium_gpu::{Gpu, OrbitCamera, Renderer, SortKind, Stage, StageTimes};
use std::sync::{Arc, Mutex, PoisonError};
use wasm_bindgen::prelude::*;
use web_sys::HtmlCanvasElement;

use crate::channel::{self, Channel, LIVE_PARAMS, Start, StartConfig};

/// Frames over which the per-stage times shown are averaged.
const TIMING_WINDOW: u32 = 30;

fn js_error(e: impl core::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// The water channel running on a canvas.
#[wasm_bindgen]
pub struct Water {
    /// Kept for the page's lifetime: Chrome aborts the pending buffer
    /// mappings of an instance whose last reference is gone ("a valid
    /// external Instance reference no longer exists").
    _instance: wgpu::Instance,
    gpu: Gpu,
    surface: wgpu::Surface<'static>,
    surface_config: wgpu::SurfaceConfiguration,
    renderer: Renderer,
    camera: OrbitCamera,
    channel: Channel,
    frames: u64,
    shown: StageTimes,
    window_frames: u32,
    /// The first error the device reported outside an error scope (a
    /// validation error of a pass, a lost device); the next frame returns
    /// it, so the page shows it instead of drawing on silently.
    device_error: Arc<Mutex<Option<String>>>,
}

#[wasm_bindgen]
impl Water {
    /// Opens WebGPU on `canvas` and creates the channel from the start
    /// panel.
    ///
    /// # Errors
    /// No WebGPU adapter or a device that refuses the buffers; the message
    /// says which.
    pub async fn create(canvas: HtmlCanvasElement, panel: StartPanel) -> Result<Water, JsError> {
        let config = panel.0;
        let (width, height) = (canvas.width().max(1), canvas.height().max(1));
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::BROWSER_WEBGPU,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let surface = instance
            .create_surface(wgpu::SurfaceTarget::Canvas(canvas))
            .map_err(js_error)?;
        let gpu = Gpu::request(&instance, Some(&surface))
            .await
            .map_err(js_error)?;
        let caps = surface.get_capabilities(gpu.adapter());
        // The renderer encodes sRGB itself for a plain target, which is what
        // canvases offer (bgra8unorm / rgba8unorm).
        let format = caps
            .formats
            .iter()
            .copied()
            .find(|f| !f.is_srgb())
            .or_else(|| caps.formats.first().copied())
            .ok_or_else(|| js_error("the canvas offers no texture format"))?;
        let surface_config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            width,
            height,
            present_mode: wgpu::PresentMode::Fifo,
            desired_maximum_frame_latency: 2,
            alpha_mode: caps
                .alpha_modes
                .first()
                .copied()
                .unwrap_or(wgpu::CompositeAlphaMode::Auto),
            view_formats: Vec::new(),
            color_space: wgpu::SurfaceColorSpace::Auto,
        };
        let device_error = Arc::new(Mutex::new(None));
        let sink = device_error.clone();
        gpu.device()
            .on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert_with(|| e.to_string());
            }));
        surface.configure(gpu.device(), &surface_config);
        let renderer = Renderer::new(gpu.device(), format);
        let channel = Channel::new(&gpu, config, gpu.has_timestamps())
            .await
            .map_err(js_error)?;
        let mut camera = OrbitCamera::framing(&config.domain());
        camera.orbit(-0.45, 0.35);
        camera.zoom(0.8);
        Ok(Water {
            _instance: instance,
            gpu,
            surface,
            surface_config,
            renderer,
            camera,
            channel,
            frames: 0,
            shown: StageTimes::default(),
            window_frames: 0,
            device_error,
        })
    }

    /// One frame: the controls, `steps_per_frame` solver steps (with the
    /// pipe's layers), then the particles, solids and channel drawn.
    ///
    /// # Errors
    /// A solver or surface error (the message says which).
    pub fn frame(&mut self) -> Result<(), JsError> {
        if let Some(e) = self
            .device_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            return Err(js_error(format!("the GPU device reported: {e}")));
        }
        self.channel.advance().map_err(js_error)?;
        let texture = match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(t)
            | wgpu::CurrentSurfaceTexture::Suboptimal(t) => t,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                self.surface
                    .configure(self.gpu.device(), &self.surface_config);
                return Ok(());
            }
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => {
                return Ok(());
            }
            wgpu::CurrentSurfaceTexture::Validation => {
                return Err(js_error("the canvas texture failed validation"));
            }
        };
        let view = texture
            .texture
            .create_view(&wgpu::TextureViewDescriptor::default());
        let mut encoder =
            self.gpu
                .device()
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("frame"),
                });
        self.renderer.draw(
            self.gpu.device(),
            self.gpu.queue(),
            &mut encoder,
            &view,
            (self.surface_config.width, self.surface_config.height),
            &self.channel.fluid,
            self.channel.fluid.obstacles(),
            &self.camera,
        );
        self.gpu.queue().submit([encoder.finish()]);
        self.gpu.queue().present(texture);
        self.frames += 1;
        self.window_frames += 1;
        if self.window_frames >= TIMING_WINDOW {
            self.shown = self.channel.fluid.stage_times();
            self.channel.fluid.reset_stage_times();
            self.window_frames = 0;
        }
        Ok(())
    }

    /// A handle on this page's device, for [`new_channel`] (a restart keeps
    /// the device, the canvas and the renderer; only the channel is new).
    pub fn device_handle(&self) -> DeviceHandle {
        DeviceHandle(self.gpu.clone())
    }

    /// Replaces the running channel by one made with [`new_channel`]; the
    /// camera stays, the stage times start afresh.
    pub fn replace_channel(&mut self, channel: NewChannel) {
        self.channel = channel.0;
        self.shown = StageTimes::default();
        self.window_frames = 0;
    }

    /// Follows the canvas's new size in pixels.
    pub fn resize(&mut self, width: u32, height: u32) {
        self.surface_config.width = width.max(1);
        self.surface_config.height = height.max(1);
        self.surface
            .configure(self.gpu.device(), &self.surface_config);
    }

    /// Sets a live parameter by name (`viscosity`, `stiffness`,
    /// `rest_density`, `gamma`, `damping`, `surface_tension` (on for a
    /// value > 0), `gravity` (magnitude along −y)).
    ///
    /// # Errors
    /// An unknown name or a value the solver refuses; nothing changes then.
    pub fn set_param(&mut self, name: &str, value: f32) -> Result<(), JsError> {
        self.channel.set_live(name, value).map_err(js_error)
    }

    /// A live parameter's value by name.
    pub fn param(&self, name: &str) -> Option<f32> {
        self.channel.live.get(name)
    }

    /// The lock gate's lift: 0 closed … 1 open; it slides there.
    pub fn set_gate(&mut self, lift: f32) {
        if lift.is_finite() {
            self.channel.controls.gate_lift = lift.clamp(0.0, 1.0);
        }
    }

    /// The paddle: swinging or not, with its amplitude (0 … 1 of its
    /// largest swing).
    pub fn set_paddle(&mut self, on: bool, amplitude: f32) {
        self.channel.controls.paddle_on = on;
        if amplitude.is_finite() {
            self.channel.controls.paddle_amplitude = amplitude.clamp(0.0, 1.0);
        }
    }

    /// Turns the orbit camera (radians).
    pub fn orbit(&mut self, dx: f32, dy: f32) {
        self.camera.orbit(dx, dy);
    }

    /// Moves the camera closer (< 1) or farther (> 1).
    pub fn zoom(&mut self, factor: f32) {
        self.camera.zoom(factor);
    }

    /// Frames drawn.
    pub fn frames(&self) -> f64 {
        self.frames as f64
    }

    /// The adapter, in one line (browsers do not name theirs: then its
    /// type).
    pub fn adapter(&self) -> String {
        let info = self.gpu.adapter_info();
        if info.name.is_empty() {
            format!("browser WebGPU, {:?} adapter", info.device_type)
        } else {
            self.gpu.describe()
        }
    }

    /// `true` on a software adapter (SwiftShader): the times shown are a
    /// smoke test.
    pub fn is_software(&self) -> bool {
        self.gpu.is_software()
    }

    /// Everything the page shows and the test checks, as JSON: particles,
    /// steps, simulated time, the start panel, the live parameters, the
    /// controls, the solids, the camera and the per-stage GPU times
    /// (milliseconds per step over the last window of frames; empty without
    /// timestamp queries).
    pub fn state_json(&self) -> String {
        let c = &self.channel;
        let cfg = c.config;
        let live: Vec<String> = LIVE_PARAMS
            .iter()
            .map(|n| format!("\"{n}\":{}", num(c.live.get(n).unwrap_or(f32::NAN))))
            .collect();
        let solids: Vec<String> = c
            .fluid
            .obstacles()
            .iter()
            .map(|o| match o.shape {
                Shape::Box(b) => format!(
                    "{{\"min\":{},\"max\":{},\"velocity\":{}}}",
                    vec3(spatium::BoundingBox::min(&b)),
                    vec3(spatium::BoundingBox::max(&b)),
                    vec3(o.velocity)
                ),
                Shape::Sphere { center, radius } => format!(
                    "{{\"center\":{},\"radius\":{},\"velocity\":{}}}",
                    vec3(center),
                    num(radius),
                    vec3(o.velocity)
                ),
                Shape::Triangle(_) => "{}".into(),
            })
            .collect();
        let stages: Vec<String> = Stage::ALL
            .iter()
            .map(|&s| {
                format!(
                    "[\"{}\",{}]",
                    s.name(),
                    num(self.shown.ms_per_step(s) as f32)
                )
            })
            .collect();
        let eye = self.camera.eye();
        format!(
            concat!(
                "{{\"particles\":{},\"capacity\":{},\"steps\":{},\"time\":{},",
                "\"config\":{{\"particles\":{},\"spacing\":{},\"dt\":{},\"integrator\":\"{}\",",
                "\"sort\":\"{}\",\"start\":\"{}\",\"steps_per_frame\":{}}},",
                "\"live\":{{{}}},",
                "\"controls\":{{\"gate_lift\":{},\"paddle_on\":{},\"paddle_amplitude\":{}}},",
                "\"solids\":[{}],\"camera\":{{\"eye\":[{},{},{}],\"distance\":{}}},",
                "\"timing\":{{\"available\":{},\"steps\":{},\"stages\":[{}],\"total\":{}}}}}"
            ),
            c.fluid.len(),
            c.fluid.capacity(),
            c.fluid.steps(),
            num(c.time()),
            cfg.particles,
            num(cfg.spacing),
            num(cfg.dt),
            match cfg.integrator {
                Integrator::Leapfrog => "leapfrog",
                Integrator::Euler => "euler",
            },
            cfg.sort.name(),
            match cfg.start {
                Start::Pipe => "pipe",
                Start::Block => "block",
            },
            cfg.steps_per_frame,
            live.join(","),
            num(c.controls.gate_lift),
            c.controls.paddle_on,
            num(c.controls.paddle_amplitude),
            solids.join(","),
            num(eye[0]),
            num(eye[1]),
            num(eye[2]),
            num(self.camera.distance),
            c.fluid.is_timing(),
            self.shown.steps(),
            stages.join(","),
            num(self.shown.total_ms_per_step() as f32),
        )
    }
}

/// The seed's start panel, parsed and checked once, for [`Water::create`]
/// and [`new_channel`].
#[wasm_bindgen]
pub struct StartPanel(StartConfig);

#[wasm_bindgen]
impl StartPanel {
    /// The panel's values: `integrator` is `leapfrog` or `euler`, `sort`
    /// `counting` or `bitonic`, `start` `pipe` or `block`.
    ///
    /// # Errors
    /// An unknown name, or a value [`StartConfig::check`] refuses; the
    /// message says which.
    #[wasm_bindgen(constructor)]
    pub fn new(
        particles: u32,
        spacing: f32,
        dt: f32,
        integrator: &str,
        sort: &str,
        start: &str,
        steps_per_frame: u32,
    ) -> Result<StartPanel, JsError> {
        let config = StartConfig {
            particles,
            spacing,
            dt,
            integrator: match integrator {
                "leapfrog" => Integrator::Leapfrog,
                "euler" => Integrator::Euler,
                other => return Err(js_error(format!("unknown integrator {other:?}"))),
            },
            sort: match sort {
                "counting" => SortKind::Counting,
                "bitonic" => SortKind::Bitonic,
                other => return Err(js_error(format!("unknown sort {other:?}"))),
            },
            start: match start {
                "pipe" => Start::Pipe,
                "block" => Start::Block,
                other => return Err(js_error(format!("unknown start {other:?}"))),
            },
            steps_per_frame,
        };
        config.check().map_err(js_error)?;
        Ok(StartPanel(config))
    }
}

/// The page's device, handed to [`new_channel`].
#[wasm_bindgen]
pub struct DeviceHandle(Gpu);

/// A channel made by [`new_channel`], for [`Water::replace_channel`].
#[wasm_bindgen]
pub struct NewChannel(Channel);

/// A new channel from the start panel on the page's device (the restart:
/// opening a second device on the same canvas is avoided, Chrome then
/// aborts the first one's pending buffer mappings).
///
/// # Errors
/// A GPU error.
#[wasm_bindgen(js_name = newChannel)]
pub async fn new_channel(device: DeviceHandle, panel: StartPanel) -> Result<NewChannel, JsError> {
    let config = panel.0;
    let gpu = device.0;
    let channel = Channel::new(&gpu, config, gpu.has_timestamps())
        .await
        .map_err(js_error)?;
    Ok(NewChannel(channel))
}

/// A JSON number (`null` for NaN and infinities).
fn num(x: f32) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".into()
    }
}

fn vec3(v: Vec3) -> String {
    format!("[{},{},{}]", num(v.x), num(v.y), num(v.z))
}

/// The fixed-seed run ([`channel::fixed_run`]) on a device of its own:
/// per particle id, position, velocity and density (7 numbers).
///
/// # Errors
/// No WebGPU adapter, or a GPU error.
#[wasm_bindgen(js_name = fixedRun)]
pub async fn fixed_run(steps: u32) -> Result<Vec<f32>, JsError> {
    let gpu = Gpu::new_async().await.map_err(js_error)?;
    let snapshot = channel::fixed_run(&gpu, steps).await.map_err(js_error)?;
    if snapshot.diverged {
        return Err(js_error("the fixed-seed run diverged"));
    }
    Ok(channel::flatten(&snapshot))
}

/// Steps of the fixed-seed run the page test compares.
#[wasm_bindgen(js_name = fixedSteps)]
pub fn fixed_steps() -> u32 {
    channel::FIXED_STEPS
}
