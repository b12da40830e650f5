//! The adapter and device: [`Gpu`]. Opening one is async on every target
//! ([`Gpu::new_async`], [`Gpu::request`]); native targets also have the
//! blocking [`Gpu::new`].

use crate::error::GpuError;

/// An open device on the adapter that the environment selects.
///
/// wgpu's variables choose it: `WGPU_BACKEND` (for example `vulkan`),
/// `WGPU_ADAPTER_NAME` (a substring of the adapter's name) and
/// `WGPU_POWER_PREF`. Without a GPU, Mesa's lavapipe (a Vulkan driver on the
/// CPU) serves: pin it with
/// `VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
/// WGPU_BACKEND=vulkan`.
///
/// The device is opened with the WebGPU default limits, raised to the
/// adapter's buffer-size and workgroup-count limits, and with
/// `TIMESTAMP_QUERY` when the adapter has it (per-stage timings).
#[derive(Clone, Debug)]
pub struct Gpu {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    adapter: wgpu::Adapter,
    info: wgpu::AdapterInfo,
    timestamps: bool,
}

impl Gpu {
    /// Opens a device on the adapter chosen by the environment, blocking
    /// until it is ready: [`new_async`](Self::new_async) driven by
    /// `pollster`. Native targets only (a browser cannot block).
    ///
    /// # Errors
    /// As [`new_async`](Self::new_async).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new() -> Result<Self, GpuError> {
        pollster::block_on(Self::new_async())
    }

    /// Opens a device on the adapter chosen by the environment (natively
    /// the variables above; in a browser, its WebGPU adapter).
    ///
    /// # Errors
    /// [`GpuError::NoAdapter`] when there is none; [`GpuError::Limit`] when
    /// it does not meet the WebGPU default limits (the pipeline's storage
    /// buffer and workgroup needs); [`GpuError::Device`] when it refuses the
    /// device.
    pub async fn new_async() -> Result<Self, GpuError> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        Self::request(&instance, None).await
    }

    /// Opens a device on an adapter of `instance`, compatible with
    /// `surface` when one is given (a window's or a canvas's, to draw the
    /// fluid on it with the same device).
    ///
    /// # Errors
    /// As [`new_async`](Self::new_async).
    pub async fn request(
        instance: &wgpu::Instance,
        surface: Option<&wgpu::Surface<'_>>,
    ) -> Result<Self, GpuError> {
        let adapter = wgpu::util::initialize_adapter_from_env_or_default(instance, surface)
            .await
            .map_err(|e| {
                GpuError::NoAdapter(format!(
                    "{e} (backends requested: {})",
                    std::env::var("WGPU_BACKEND").unwrap_or_else(|_| "all".into())
                ))
            })?;
        let info = adapter.get_info();
        let available = adapter.limits();
        let mut failed = None;
        wgpu::Limits::default().check_limits_with_fail_fn(
            &available,
            true,
            |name, needed, have| {
                failed = Some(GpuError::Limit {
                    limit: name,
                    needed,
                    available: have,
                });
            },
        );
        if let Some(e) = failed {
            return Err(e);
        }
        let required_limits = wgpu::Limits {
            max_storage_buffer_binding_size: available.max_storage_buffer_binding_size,
            max_buffer_size: available.max_buffer_size,
            max_compute_workgroups_per_dimension: available.max_compute_workgroups_per_dimension,
            ..wgpu::Limits::default()
        };
        let timestamps = adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        let required_features = if timestamps {
            wgpu::Features::TIMESTAMP_QUERY
        } else {
            wgpu::Features::empty()
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("spatium-gpu"),
                required_features,
                required_limits,
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| GpuError::Device(e.to_string()))?;
        Ok(Self {
            device,
            queue,
            adapter,
            info,
            timestamps,
        })
    }

    /// The adapter (to configure a surface for it).
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }

    /// The adapter's name, backend, driver and type.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// The device, for work beside the solver's (a [`Renderer`](crate::Renderer),
    /// textures, buffers).
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The device's queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The device's limits.
    pub fn limits(&self) -> wgpu::Limits {
        self.device.limits()
    }

    /// `true` if the device records timestamps (per-stage GPU times).
    pub fn has_timestamps(&self) -> bool {
        self.timestamps
    }

    /// `true` for a driver that runs on the CPU (lavapipe / llvmpipe,
    /// SwiftShader): its timings are a smoke test, not performance.
    pub fn is_software(&self) -> bool {
        let name = self.info.name.to_lowercase();
        self.info.device_type == wgpu::DeviceType::Cpu
            || ["llvmpipe", "lavapipe", "swiftshader"]
                .iter()
                .any(|s| name.contains(s))
    }

    /// One line: adapter name, backend, driver.
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?}, {:?}, driver {} {})",
            self.info.name,
            self.info.backend,
            self.info.device_type,
            self.info.driver,
            self.info.driver_info
        )
    }
}
