//! [`GpuFluid`]: the solver's particles on the device and the step
//! pipeline that advances them.

use spatium::sph::boundary::Obstacle;
use spatium::sph::{Integrator, ParamBlock, ParticleState, SphParams};
use spatium::uniform::Grid;
use spatium::{BoundingBox, Point, Vec3};

use crate::context::Gpu;
use crate::error::GpuError;
use crate::layout::{EmitBlock, GridBlock, PassBlock, ScanBlock};
use crate::obstacles::{OBSTACLE_BUFFER_BYTES, ObstacleSet};
use crate::oneshot;
use crate::pipeline::{Kernel, Kernels, WORKGROUP, bind_group, dispatch_grid};
use crate::timing::{Stage, StageTimes};
use std::sync::{Arc, Mutex, PoisonError};

/// The sort that puts particles in bucket order each evaluation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortKind {
    /// Counting sort: atomic histogram of buckets, parallel exclusive scan
    /// (which is also the bucket start table), scatter. `O(N + T)` per
    /// evaluation for `N` particles and `T` buckets.
    #[default]
    Counting,
    /// The seed's bitonic sort of (bucket, id) pairs padded to a power of
    /// two, then a pass that marks where each bucket's run starts.
    /// `O(N log² N)`.
    Bitonic,
}

impl SortKind {
    /// Lower-case name (`counting`, `bitonic`).
    pub fn name(self) -> &'static str {
        match self {
            SortKind::Counting => "counting",
            SortKind::Bitonic => "bitonic",
        }
    }
}

/// Options of a [`GpuFluid`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FluidConfig {
    /// The sort by cell.
    pub sort: SortKind,
    /// Buckets of the cell hash: a power of two in `2..=2³¹`; `None` gives
    /// about two per particle of capacity (the core's guidance for dense
    /// SPH), at least 1024.
    pub table_len: Option<usize>,
    /// Most workgroups per dispatch dimension; `None` takes the device's
    /// limit (65 535 by default). Larger dispatches are split into 2D grids;
    /// a small value here exercises the split on small scenes.
    pub max_workgroups_per_dimension: Option<u32>,
    /// Record per-stage GPU times ([`GpuFluid::stage_times`]) when the
    /// device has timestamp queries. Each batch of steps then waits for its
    /// timings.
    pub timing: bool,
}

/// Particles read back from the device, by id.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// Positions.
    pub positions: Vec<Vec3>,
    /// Per-particle state, as the CPU solver keeps it.
    pub states: Vec<ParticleState<Vec3>>,
    /// `true` if some step produced a non-finite position or velocity (the
    /// CPU solver's [`spatium::Error::NonFinite`]; the GPU does not roll the
    /// step back).
    pub diverged: bool,
}

/// The neighbour-search layout of the last grid build, read back for
/// checking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortView {
    /// Bucket of each particle, in sorted order.
    pub keys: Vec<u32>,
    /// Particle id at each sorted index.
    pub ids: Vec<u32>,
    /// For each bucket, the first sorted index of its run if it is
    /// occupied (counting sort: for every bucket, the number of particles
    /// in lower buckets).
    pub bucket_start: Vec<u32>,
}

/// Steps encoded per submission when timing is off.
const BATCH: u32 = 16;
/// Timestamp queries per set (wgpu's maximum).
const QUERIES: u32 = wgpu::QUERY_SET_MAX_QUERIES;
/// Elements per block of the prefix scan.
const SCAN_BLOCK: u32 = 1024;
/// Elements per workgroup of the bitonic sort's local passes.
const BITONIC_LOCAL: u32 = 512;

/// One level of the multi-level prefix scan.
struct ScanLevel {
    len: u32,
    bind: wgpu::BindGroup,
}

/// One pass of the bitonic network after the local sort, at a dynamic
/// offset of the pass buffer.
#[derive(Clone, Copy)]
struct BitonicPass {
    k: u32,
    global: bool,
    offset: u32,
}

struct Timer {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    period_ns: f64,
}

struct Buffers {
    params: wgpu::Buffer,
    grid: wgpu::Buffer,
    positions: wgpu::Buffer,
    states: wgpu::Buffer,
    bucket_start: wgpu::Buffer,
    sorted: wgpu::Buffer,
    sorted_ids: wgpu::Buffer,
    sorted_vd: wgpu::Buffer,
    sorted_np: wgpu::Buffer,
    flags: wgpu::Buffer,
    emit: wgpu::Buffer,
    obstacles: wgpu::Buffer,
}

struct Binds {
    common: wgpu::BindGroup,
    grid: wgpu::BindGroup,
    bitonic: wgpu::BindGroup,
    sph: wgpu::BindGroup,
    integrate: wgpu::BindGroup,
    probe: wgpu::BindGroup,
    probe_out: wgpu::Buffer,
    advance: wgpu::BindGroup,
}

/// An SPH fluid on the GPU: positions and [`ParticleState`]s in device
/// buffers, stepped by WGSL compute kernels that mirror
/// [`spatium::sph::Fluid::step`] with the box walls and, if set, kinematic
/// obstacles ([`set_obstacles`](Self::set_obstacles)).
///
/// Each force evaluation runs the seed's pipeline: cell and bucket of each
/// particle (the core's [`Grid`] arithmetic, origin at the domain centre),
/// sort by bucket ([`SortKind`]), bucket start offsets, density, normals,
/// forces; leapfrog runs two evaluations per step with the walls applied
/// after each half, Euler one. Particles keep their ids: the sort copies
/// position and velocity into bucket order, the kernels run in bucket order
/// and read neighbours only from those sorted arrays (plus the density,
/// pressure and normal each pass writes there), and each pass also writes
/// its results once into the per-id buffers, so
/// [`read_back_async`](Self::read_back_async) (and the blocking
/// `read_back`) returns them in id order.
///
/// # Memory
///
/// `148·C + 8·P + 4·T + 4112` bytes of device memory for capacity `C`, `T`
/// buckets and `P` sort pairs (counting sort: `C`; bitonic: the capacity
/// rounded up to a power of two, at least 512), plus the scan levels
/// (`T/256` bytes) and at most 64 KiB of uniform blocks (bitonic pass
/// parameters, timestamps); [`memory_bytes`](Self::memory_bytes) gives the
/// exact sum, and a test holds it to this formula. Per particle: position
/// 12, state 68, sorted position + bucket 16, sorted id 4, sorted
/// velocity + density 16, sorted normal + pressure 16, cell probe 16. The 4112 bytes
/// are the obstacle buffer: a 16-byte header and 64 bytes for each of
/// [`MAX_OBSTACLES`](crate::MAX_OBSTACLES) = 64 obstacles, allocated
/// whether or not obstacles are set.
pub struct GpuFluid {
    device: wgpu::Device,
    queue: wgpu::Queue,
    params: SphParams<Vec3>,
    config: FluidConfig,
    capacity: u32,
    memory_bytes: u64,
    len: u32,
    table_len: u32,
    grid_block: GridBlock,
    max_groups: u32,
    buffers: Buffers,
    binds: Binds,
    kernels: Kernels,
    grid: Grid<Vec3>,
    scan: Vec<ScanLevel>,
    bitonic: Vec<BitonicPass>,
    timer: Option<Timer>,
    /// Filled by the timestamp read-backs' callbacks (natively within
    /// `step`, in a browser when the GPU has finished the batch).
    times: Arc<Mutex<Timings>>,
    steps: u64,
    obstacles: ObstacleSet,
}

/// The stage times read back so far, and the first read-back failure.
#[derive(Default)]
struct Timings {
    times: StageTimes,
    error: Option<String>,
}

/// Locks `m`, recovering the value if a callback panicked while holding it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A whole buffer as a binding.
fn whole(b: &wgpu::Buffer) -> wgpu::BindingResource<'_> {
    b.as_entire_binding()
}

/// Bytes of `count` elements of `size` bytes, at least 4 (no empty buffer).
fn bytes(count: u64, size: u64) -> u64 {
    (count * size).max(4)
}

fn check_particles(
    params: &SphParams<Vec3>,
    positions: &[Vec3],
    states: &[ParticleState<Vec3>],
    capacity: usize,
) -> Result<(), GpuError> {
    if positions.len() != states.len() {
        return Err(GpuError::LengthMismatch {
            positions: positions.len(),
            states: states.len(),
        });
    }
    if positions.len() > capacity {
        return Err(GpuError::CapacityExceeded {
            capacity,
            requested: positions.len(),
        });
    }
    let (lo, hi) = (params.domain.min(), params.domain.max());
    for (x, s) in positions.iter().zip(states) {
        if !x.is_finite() || !s.velocity.is_finite() {
            return Err(spatium::Error::NonFinite.into());
        }
        for k in 0..3 {
            if x.coord(k) < lo.coord(k) || x.coord(k) > hi.coord(k) {
                return Err(spatium::Error::OutOfRange.into());
            }
        }
    }
    Ok(())
}

/// The grid of the parameters: radius `h`, origin at the domain centre; the
/// domain's corners must lie within the cell arithmetic's range.
pub(crate) fn grid_for(params: &SphParams<Vec3>, table_len: usize) -> Result<Grid<Vec3>, GpuError> {
    let (lo, hi) = (params.domain.min(), params.domain.max());
    let origin = Vec3::from_fn(|k| 0.5 * lo.coord(k) + 0.5 * hi.coord(k));
    let grid = Grid::new(params.h, origin, table_len)?;
    grid.cell(lo)?;
    grid.cell(hi)?;
    Ok(grid)
}

fn sort_len(n: u32) -> u32 {
    n.max(1).next_power_of_two().max(BITONIC_LOCAL)
}

impl GpuFluid {
    /// A fluid of `capacity` particles holding `positions` and `states`
    /// (by id; as [`spatium::sph::Fluid::positions`] and
    /// [`state`](spatium::sph::Fluid::state) give them), uploaded as bytes;
    /// blocks until the device has accepted the buffers and kernels
    /// ([`new_async`](Self::new_async) driven by `pollster`; native targets
    /// only).
    ///
    /// # Errors
    /// As [`new_async`](Self::new_async).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new(
        gpu: &Gpu,
        params: SphParams<Vec3>,
        capacity: usize,
        positions: &[Vec3],
        states: &[ParticleState<Vec3>],
        config: FluidConfig,
    ) -> Result<Self, GpuError> {
        pollster::block_on(Self::new_async(
            gpu, params, capacity, positions, states, config,
        ))
    }

    /// A fluid of `capacity` particles holding `positions` and `states`
    /// (by id), on every target: the device's verdict on the allocations
    /// (out of memory, a refused buffer or kernel) is awaited, not waited
    /// for. Natively `new` is this future driven by `pollster`.
    ///
    /// # Errors
    /// [`GpuError::Core`] for parameters [`SphParams::param_block`] refuses,
    /// a domain beyond [`UNIFORM_RANGE_CELLS`](spatium::uniform::UNIFORM_RANGE_CELLS) cells of its centre, a table
    /// length that is not a power of two in `2..=2³¹`, or a particle that is
    /// not finite or lies outside the domain; [`GpuError::LengthMismatch`];
    /// [`GpuError::CapacityExceeded`] for more particles than `capacity` or
    /// a capacity of 2³¹ or more; [`GpuError::Limit`] for a buffer or
    /// dispatch beyond the device's limits; [`GpuError::Operation`] if the
    /// device fails to allocate or to build a kernel.
    pub async fn new_async(
        gpu: &Gpu,
        params: SphParams<Vec3>,
        capacity: usize,
        positions: &[Vec3],
        states: &[ParticleState<Vec3>],
        config: FluidConfig,
    ) -> Result<Self, GpuError> {
        let block = params.param_block()?;
        if capacity >= 1 << 31 {
            return Err(GpuError::CapacityExceeded {
                capacity: (1 << 31) - 1,
                requested: capacity,
            });
        }
        let table_len = match config.table_len {
            Some(t) => t,
            None => (2 * capacity).next_power_of_two().max(1024),
        };
        if table_len < 2 {
            return Err(spatium::Error::InvalidTableLength { len: table_len }.into());
        }
        let grid = grid_for(&params, table_len)?;
        check_particles(&params, positions, states, capacity)?;

        let device = gpu.device.clone();
        let limits = device.limits();
        let cap = capacity.max(1) as u64;
        let table = table_len as u64;
        let sort_cap = match config.sort {
            SortKind::Counting => 1,
            SortKind::Bitonic => u64::from(sort_len(capacity as u32)),
        };
        let largest = [
            cap * 68,
            cap * 16,
            cap * 12,
            table * 4,
            cap.max(sort_cap) * 8,
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        if largest > limits.max_storage_buffer_binding_size {
            return Err(GpuError::Limit {
                limit: "max_storage_buffer_binding_size",
                needed: largest,
                available: limits.max_storage_buffer_binding_size,
            });
        }
        if largest > limits.max_buffer_size {
            return Err(GpuError::Limit {
                limit: "max_buffer_size",
                needed: largest,
                available: limits.max_buffer_size,
            });
        }
        let max_groups = config
            .max_workgroups_per_dimension
            .unwrap_or(limits.max_compute_workgroups_per_dimension)
            .min(limits.max_compute_workgroups_per_dimension)
            .max(1);
        let most_threads = cap.max(table).max(sort_cap);
        let most_groups = most_threads.div_ceil(u64::from(WORKGROUP));
        let reach = u64::from(max_groups) * u64::from(max_groups);
        if most_groups > reach {
            return Err(GpuError::Limit {
                limit: "max_compute_workgroups_per_dimension",
                needed: most_groups.isqrt() + 1,
                available: u64::from(max_groups),
            });
        }

        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let built = Self::build(
            gpu,
            params,
            block,
            grid,
            capacity as u32,
            table_len as u32,
            sort_cap,
            max_groups,
            config,
        );
        let out_of_memory = oom.pop().await;
        let invalid = scope.pop().await;
        if let Some(e) = out_of_memory.or(invalid) {
            return Err(GpuError::Operation(e.to_string()));
        }
        let mut fluid = built;
        fluid.upload(positions, states)?;
        Ok(fluid)
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        gpu: &Gpu,
        params: SphParams<Vec3>,
        block: ParamBlock,
        grid: Grid<Vec3>,
        capacity: u32,
        table_len: u32,
        sort_cap: u64,
        max_groups: u32,
        config: FluidConfig,
    ) -> Self {
        let device = gpu.device.clone();
        let queue = gpu.queue.clone();
        let cap = u64::from(capacity.max(1));
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let uniform = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
        // Every byte this fluid allocates, for `memory_bytes`.
        let allocated = std::cell::Cell::new(0u64);
        let buffer = |label: &str, size: u64, usage| {
            allocated.set(allocated.get() + size);
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        let buffers = Buffers {
            params: buffer("params", 128, uniform),
            grid: buffer("grid", 32, uniform),
            positions: buffer("positions", bytes(cap, 12), storage),
            states: buffer("states", bytes(cap, 68), storage),
            bucket_start: buffer("bucket_start", bytes(u64::from(table_len), 4), storage),
            sorted: buffer("sorted", bytes(cap, 16), storage),
            sorted_ids: buffer("sorted_ids", bytes(cap, 4), storage),
            sorted_vd: buffer("sorted velocity, density", bytes(cap, 16), storage),
            sorted_np: buffer("sorted normal, pressure", bytes(cap, 16), storage),
            flags: buffer("flags", 4, storage),
            emit: buffer("emit", 64, uniform),
            obstacles: buffer("obstacles", OBSTACLE_BUFFER_BYTES, storage),
        };
        // Counting sort: (bucket, rank) per id; bitonic: the sorted pairs.
        let pairs = buffer("pairs", bytes(cap.max(sort_cap), 8), storage);
        let probe_out = buffer("probe", bytes(cap, 16), storage);
        queue.write_buffer(&buffers.params, 0, bytemuck::bytes_of(&block));

        let kernels = Kernels::new(&device);
        let common = bind_group(
            &device,
            &kernels.common,
            &[
                buffers.params.as_entire_binding(),
                buffers.grid.as_entire_binding(),
            ],
        );
        let grid_bind = bind_group(
            &device,
            &kernels.grid.group,
            &[
                whole(&buffers.positions),
                whole(&buffers.states),
                whole(&pairs),
                whole(&buffers.bucket_start),
                whole(&buffers.sorted),
                whole(&buffers.sorted_ids),
                whole(&buffers.sorted_vd),
            ],
        );
        let sph = bind_group(
            &device,
            &kernels.sph.group,
            &[
                whole(&buffers.sorted),
                whole(&buffers.sorted_ids),
                whole(&buffers.bucket_start),
                whole(&buffers.states),
                whole(&buffers.sorted_vd),
                whole(&buffers.sorted_np),
            ],
        );
        let integrate = bind_group(
            &device,
            &kernels.integrate.group,
            &[
                whole(&buffers.positions),
                whole(&buffers.states),
                whole(&buffers.flags),
                whole(&buffers.obstacles),
            ],
        );
        let probe = bind_group(
            &device,
            &kernels.probe.group,
            &[whole(&buffers.positions), whole(&probe_out)],
        );
        let advance = bind_group(
            &device,
            &kernels.advance.group,
            &[whole(&buffers.obstacles)],
        );

        // Scan levels: the table, then the block totals of each level until
        // one block holds them all.
        let mut scan = Vec::new();
        let mut level_data = buffers.bucket_start.clone();
        let mut len = table_len;
        loop {
            let blocks = len.div_ceil(SCAN_BLOCK);
            let sums = buffer("scan sums", bytes(u64::from(blocks), 4), storage);
            let info = buffer("scan info", 16, uniform);
            queue.write_buffer(
                &info,
                0,
                bytemuck::bytes_of(&ScanBlock { len, pad: [0; 3] }),
            );
            let bind = bind_group(
                &device,
                &kernels.scan.group,
                &[whole(&level_data), whole(&sums), whole(&info)],
            );
            scan.push(ScanLevel { len, bind });
            if blocks <= 1 {
                break;
            }
            level_data = sums;
            len = blocks;
        }

        // Bitonic passes beyond the local sort, for the largest length; a
        // shorter sort runs a prefix of them.
        let stride = device.limits().min_uniform_buffer_offset_alignment.max(16);
        let mut plan = Vec::new();
        let mut k = 2 * BITONIC_LOCAL;
        while u64::from(k) <= sort_cap {
            let mut j = k / 2;
            while j >= BITONIC_LOCAL {
                plan.push((PassBlock { k, j, pad: [0; 2] }, true));
                j /= 2;
            }
            plan.push((
                PassBlock {
                    k,
                    j: 0,
                    pad: [0; 2],
                },
                false,
            ));
            k *= 2;
        }
        let pass_buffer = buffer(
            "bitonic passes",
            u64::from(stride) * (plan.len() as u64).max(1),
            uniform,
        );
        let mut bitonic = Vec::new();
        for (i, (p, global)) in plan.iter().enumerate() {
            let offset = stride * i as u32;
            queue.write_buffer(&pass_buffer, u64::from(offset), bytemuck::bytes_of(p));
            bitonic.push(BitonicPass {
                k: p.k,
                global: *global,
                offset,
            });
        }
        let bitonic_bind = bind_group(
            &device,
            &kernels.bitonic.group,
            &[
                whole(&pairs),
                wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &pass_buffer,
                    offset: 0,
                    size: wgpu::BufferSize::new(16),
                }),
            ],
        );

        let timer = (config.timing && gpu.has_timestamps()).then(|| Timer {
            set: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("stage timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: QUERIES,
            }),
            resolve: buffer(
                "timestamps",
                u64::from(QUERIES) * 8,
                wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            ),
            period_ns: f64::from(queue.get_timestamp_period()),
        });

        let grid_block = GridBlock {
            count: 0,
            shift: 32 - table_len.trailing_zeros(),
            table_len,
            sort_len: sort_len(0),
            origin_x: grid.origin().x,
            origin_y: grid.origin().y,
            origin_z: grid.origin().z,
            inv_cell: 1.0 / grid.cell_size(),
        };
        let memory_bytes = allocated.get();
        Self {
            device,
            queue,
            params,
            config,
            capacity,
            memory_bytes,
            len: 0,
            table_len,
            grid_block,
            max_groups,
            buffers,
            binds: Binds {
                common,
                grid: grid_bind,
                bitonic: bitonic_bind,
                sph,
                integrate,
                probe,
                probe_out,
                advance,
            },
            kernels,
            grid,
            scan,
            bitonic,
            timer,
            times: Arc::default(),
            steps: 0,
            obstacles: ObstacleSet::default(),
        }
    }

    /// Particles stored.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// `true` if there are no particles.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most particles the buffers hold.
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// Bytes of device memory this fluid allocated (every buffer it owns;
    /// not the query set, nor a [`GpuEmitter`](crate::GpuEmitter)'s layer
    /// buffer, nor transient read-back buffers).
    pub fn memory_bytes(&self) -> u64 {
        self.memory_bytes
    }

    /// The parameters.
    pub fn params(&self) -> &SphParams<Vec3> {
        &self.params
    }

    /// The options it was created with.
    pub fn config(&self) -> &FluidConfig {
        &self.config
    }

    /// Buckets of the cell hash.
    pub fn table_len(&self) -> usize {
        self.table_len as usize
    }

    /// The grid the kernels use (radius `h`, origin at the domain centre),
    /// for computing the same cells and buckets on the CPU.
    pub fn grid(&self) -> Grid<Vec3> {
        self.grid
    }

    /// Steps taken.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Per-stage GPU times of the steps taken with
    /// [`FluidConfig::timing`] on (empty without timestamp queries), since
    /// the fluid was made or [`reset_stage_times`](Self::reset_stage_times).
    /// Natively every step is in once [`step`](Self::step) returns; in a
    /// browser a batch is added when the GPU has finished it and its
    /// timestamps have been mapped (a frame or two later).
    pub fn stage_times(&self) -> StageTimes {
        lock(&self.times).times
    }

    /// Starts the per-stage sums afresh (a live display's rolling window).
    pub fn reset_stage_times(&mut self) {
        lock(&self.times).times = StageTimes::default();
    }

    /// `true` when per-stage times are recorded.
    pub fn is_timing(&self) -> bool {
        self.timer.is_some()
    }

    /// Replaces the parameters (the grid follows the new `h` and domain).
    ///
    /// # Errors
    /// As [`new_async`](Self::new_async) for the parameters; nothing
    /// changes on error.
    pub fn set_params(&mut self, params: SphParams<Vec3>) -> Result<(), GpuError> {
        let block = params.param_block()?;
        let grid = grid_for(&params, self.table_len as usize)?;
        self.params = params;
        self.grid = grid;
        self.grid_block.origin_x = grid.origin().x;
        self.grid_block.origin_y = grid.origin().y;
        self.grid_block.origin_z = grid.origin().z;
        self.grid_block.inv_cell = 1.0 / grid.cell_size();
        self.queue
            .write_buffer(&self.buffers.params, 0, bytemuck::bytes_of(&block));
        self.write_grid();
        // The obstacles' displacements per step follow the new `dt`.
        self.obstacles
            .write(&self.queue, &self.buffers.obstacles, self.params.dt);
        Ok(())
    }

    /// Replaces every particle (ids are slice indices), clearing the
    /// divergence flag.
    ///
    /// # Errors
    /// [`GpuError::LengthMismatch`], [`GpuError::CapacityExceeded`], and
    /// [`GpuError::Core`] for a particle that is not finite or lies outside
    /// the domain; nothing changes on error.
    pub fn upload(
        &mut self,
        positions: &[Vec3],
        states: &[ParticleState<Vec3>],
    ) -> Result<(), GpuError> {
        check_particles(&self.params, positions, states, self.capacity as usize)?;
        if !positions.is_empty() {
            self.queue
                .write_buffer(&self.buffers.positions, 0, bytemuck::cast_slice(positions));
            self.queue
                .write_buffer(&self.buffers.states, 0, bytemuck::cast_slice(states));
        }
        self.queue
            .write_buffer(&self.buffers.flags, 0, bytemuck::bytes_of(&0u32));
        self.len = positions.len() as u32;
        self.write_grid();
        Ok(())
    }

    fn write_grid(&mut self) {
        self.grid_block.count = self.len;
        self.grid_block.sort_len = sort_len(self.len);
        self.queue
            .write_buffer(&self.buffers.grid, 0, bytemuck::bytes_of(&self.grid_block));
    }

    /// Advances the fluid by `k` steps of `params.dt`, as `k` calls of
    /// [`spatium::sph::Fluid::step`], each after
    /// [`Obstacles::advance`](spatium::Obstacles::advance) when there are
    /// obstacles ([`set_obstacles`](Self::set_obstacles)). Returns once the
    /// work is submitted; when timing, natively also once its timings are
    /// read (in a browser they arrive later, see
    /// [`stage_times`](Self::stage_times)).
    ///
    /// # Errors
    /// [`GpuError::Operation`] if reading the timings of this or an
    /// earlier step failed; [`GpuError::Core`] if a moving obstacle would
    /// leave the finite range within the `k` steps (nothing is stepped
    /// then).
    pub fn step(&mut self, k: u32) -> Result<(), GpuError> {
        if let Some(e) = lock(&self.times).error.take() {
            return Err(GpuError::Operation(e));
        }
        self.obstacles.advance(k, self.params.dt)?;
        let per_step = self.passes_per_step();
        let batch = match self.timer {
            Some(_) => (QUERIES / (2 * per_step)).max(1),
            None => BATCH,
        };
        let mut left = k;
        while left > 0 {
            let steps = left.min(batch);
            let mut encoder = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("steps"),
                });
            let mut stages = Vec::new();
            for _ in 0..steps {
                self.encode_step(&mut encoder, &mut stages);
            }
            if let Some(t) = &self.timer
                && !stages.is_empty()
            {
                encoder.resolve_query_set(&t.set, 0..2 * stages.len() as u32, &t.resolve, 0);
            }
            let timed = match &self.timer {
                Some(t) if !stages.is_empty() => {
                    let size = 16 * stages.len() as u64;
                    let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("timestamps read back"),
                        size,
                        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    });
                    encoder.copy_buffer_to_buffer(&t.resolve, 0, &staging, 0, size);
                    Some((staging, t.period_ns))
                }
                _ => None,
            };
            let command = encoder.finish();
            self.queue.submit([command]);
            if let Some((staging, period)) = timed {
                self.collect_times(staging, stages, period, u64::from(steps))?;
            }
            self.steps += u64::from(steps);
            left -= steps;
        }
        Ok(())
    }

    /// Replaces the obstacles (ids are slice indices): spheres, boxes and
    /// triangles, static or moving, resolved after each integration half
    /// with the core's contact rules (walls, up to
    /// [`CONTACT_PASSES`](spatium::sph::boundary::CONTACT_PASSES) passes
    /// over the obstacles in id order, walls), and moved by
    /// `velocity · dt` at the start of each step. An empty slice removes
    /// them.
    ///
    /// # Errors
    /// [`GpuError::TooManyObstacles`] for more than
    /// [`MAX_OBSTACLES`](crate::MAX_OBSTACLES); [`GpuError::Core`] for a
    /// shape [`Shape::check`](spatium::sph::boundary::Shape::check)
    /// refuses or a non-finite velocity, as
    /// [`Obstacles::add`](spatium::Obstacles::add). Nothing changes on
    /// error.
    pub fn set_obstacles(&mut self, obstacles: &[Obstacle<Vec3>]) -> Result<(), GpuError> {
        self.obstacles.set(
            obstacles,
            &self.queue,
            &self.buffers.obstacles,
            self.params.dt,
        )
    }

    /// The obstacles, by id, where they are after the steps taken (a host
    /// mirror of the device's copy, moved by the same `f32` operations).
    /// [`step`](Self::step)`(k)` moves the mirror by all `k` steps before
    /// it submits them, so it runs ahead of the device until they finish
    /// (and stays ahead if reading the timings fails part-way).
    pub fn obstacles(&self) -> &[Obstacle<Vec3>] {
        self.obstacles.as_slice()
    }

    /// Waits for the device and reads the obstacles back from its buffer
    /// (equal to [`obstacles`](Self::obstacles); for checking; native
    /// targets only).
    ///
    /// # Errors
    /// [`GpuError::Operation`] if the read-back fails or the buffer holds
    /// no valid obstacles.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_obstacles(&self) -> Result<Vec<Obstacle<Vec3>>, GpuError> {
        pollster::block_on(self.read_obstacles_async())
    }

    /// Reads the obstacles back from the device's buffer once the work
    /// submitted before it has finished (equal to
    /// [`obstacles`](Self::obstacles); for checking); on every target.
    ///
    /// # Errors
    /// [`GpuError::Operation`] if the read-back fails or the buffer holds
    /// no valid obstacles.
    pub async fn read_obstacles_async(&self) -> Result<Vec<Obstacle<Vec3>>, GpuError> {
        let raw = read_buffer(
            &self.device,
            &self.queue,
            &self.buffers.obstacles,
            OBSTACLE_BUFFER_BYTES,
        )
        .await?;
        crate::obstacles::decode(&raw)
    }

    /// Blocks until the submitted work has finished (native targets).
    ///
    /// # Errors
    /// [`GpuError::Operation`] if the device is lost or the wait fails.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn wait(&self) -> Result<(), GpuError> {
        drive(&self.device)
    }

    /// Resolves when the work submitted so far has finished, on every
    /// target (a browser frame loop awaits it to measure a frame's GPU
    /// time without blocking).
    ///
    /// # Errors
    /// [`GpuError::Operation`] if the device is lost or the wait fails.
    pub async fn wait_async(&self) -> Result<(), GpuError> {
        let (tx, rx) = oneshot::channel();
        self.queue.on_submitted_work_done(move || tx.send(()));
        drive(&self.device)?;
        rx.await;
        Ok(())
    }

    fn passes_per_step(&self) -> u32 {
        let eval = 5 + u32::from(self.params.surface_tension > 0.0);
        match self.params.integrator {
            Integrator::Leapfrog => 2 * (eval + 1),
            Integrator::Euler => eval + 1,
        }
    }

    fn encode_step(&self, encoder: &mut wgpu::CommandEncoder, stages: &mut Vec<Stage>) {
        match self.params.integrator {
            Integrator::Leapfrog => {
                self.encode_evaluation(encoder, stages);
                self.encode_integration(encoder, stages, Kernel::HalfStep);
                self.encode_evaluation(encoder, stages);
                self.encode_integration(encoder, stages, Kernel::FullStep);
            }
            Integrator::Euler => {
                self.encode_evaluation(encoder, stages);
                self.encode_integration(encoder, stages, Kernel::EulerStep);
            }
        }
    }

    /// A compute pass for `stage` with group 0 bound, timestamped when
    /// timing is on.
    fn pass<'e>(
        &'e self,
        encoder: &'e mut wgpu::CommandEncoder,
        stages: &mut Vec<Stage>,
        stage: Stage,
    ) -> wgpu::ComputePass<'e> {
        let timestamp_writes = self.timer.as_ref().map(|t| {
            let q = 2 * stages.len() as u32;
            stages.push(stage);
            wgpu::ComputePassTimestampWrites {
                query_set: &t.set,
                beginning_of_pass_write_index: Some(q),
                end_of_pass_write_index: Some(q + 1),
            }
        });
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(stage.name()),
            timestamp_writes,
        });
        pass.set_bind_group(0, &self.binds.common, &[]);
        pass
    }

    /// Dispatches `kernel` over `threads` invocations (2D when needed).
    fn run(&self, pass: &mut wgpu::ComputePass<'_>, kernel: Kernel, threads: u32) {
        self.run_groups(pass, kernel, threads.div_ceil(WORKGROUP));
    }

    /// Dispatches `kernel` over `groups` workgroups (2D when needed).
    fn run_groups(&self, pass: &mut wgpu::ComputePass<'_>, kernel: Kernel, groups: u32) {
        if groups == 0 {
            return;
        }
        let (x, y) = dispatch_grid(groups, self.max_groups);
        pass.set_pipeline(self.kernels.get(kernel));
        pass.dispatch_workgroups(x, y, 1);
    }

    fn encode_evaluation(&self, encoder: &mut wgpu::CommandEncoder, stages: &mut Vec<Stage>) {
        self.encode_grid(encoder, stages);
        let n = self.len;
        {
            let mut pass = self.pass(encoder, stages, Stage::Density);
            pass.set_bind_group(1, &self.binds.sph, &[]);
            self.run(&mut pass, Kernel::Density, n);
        }
        if self.params.surface_tension > 0.0 {
            let mut pass = self.pass(encoder, stages, Stage::Normals);
            pass.set_bind_group(1, &self.binds.sph, &[]);
            self.run(&mut pass, Kernel::Normals, n);
        }
        let mut pass = self.pass(encoder, stages, Stage::Forces);
        pass.set_bind_group(1, &self.binds.sph, &[]);
        self.run(&mut pass, Kernel::Forces, n);
    }

    /// Cells, sort and offsets: the neighbour-search layout for the current
    /// positions.
    fn encode_grid(&self, encoder: &mut wgpu::CommandEncoder, stages: &mut Vec<Stage>) {
        let n = self.len;
        let table = self.table_len;
        match self.config.sort {
            SortKind::Counting => {
                {
                    let mut pass = self.pass(encoder, stages, Stage::Cells);
                    pass.set_bind_group(1, &self.binds.grid, &[]);
                    self.run(&mut pass, Kernel::ClearTable, table);
                    self.run(&mut pass, Kernel::CountCells, n);
                }
                {
                    let mut pass = self.pass(encoder, stages, Stage::Offsets);
                    for level in &self.scan {
                        pass.set_bind_group(1, &level.bind, &[]);
                        self.run_groups(
                            &mut pass,
                            Kernel::ScanBlocks,
                            level.len.div_ceil(SCAN_BLOCK),
                        );
                    }
                    for level in self.scan.iter().rev().skip(1) {
                        pass.set_bind_group(1, &level.bind, &[]);
                        self.run(&mut pass, Kernel::AddOffsets, level.len);
                    }
                }
                let mut pass = self.pass(encoder, stages, Stage::Sort);
                pass.set_bind_group(1, &self.binds.grid, &[]);
                self.run(&mut pass, Kernel::Scatter, n);
            }
            SortKind::Bitonic => {
                let len = sort_len(n);
                {
                    let mut pass = self.pass(encoder, stages, Stage::Cells);
                    pass.set_bind_group(1, &self.binds.grid, &[]);
                    self.run(&mut pass, Kernel::BitonicKeys, len);
                }
                {
                    let mut pass = self.pass(encoder, stages, Stage::Sort);
                    pass.set_bind_group(1, &self.binds.bitonic, &[0]);
                    self.run_groups(&mut pass, Kernel::LocalSort, len / BITONIC_LOCAL);
                    for p in self.bitonic.iter().take_while(|p| p.k <= len) {
                        pass.set_bind_group(1, &self.binds.bitonic, &[p.offset]);
                        if p.global {
                            self.run(&mut pass, Kernel::GlobalMerge, len / 2);
                        } else {
                            self.run_groups(&mut pass, Kernel::LocalMerge, len / BITONIC_LOCAL);
                        }
                    }
                    pass.set_bind_group(1, &self.binds.grid, &[]);
                    self.run(&mut pass, Kernel::BitonicGather, n);
                }
                let mut pass = self.pass(encoder, stages, Stage::Offsets);
                pass.set_bind_group(1, &self.binds.grid, &[]);
                self.run(&mut pass, Kernel::ClearTable, table);
                self.run(&mut pass, Kernel::BitonicOffsets, n);
            }
        }
    }

    fn encode_integration(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        stages: &mut Vec<Stage>,
        kernel: Kernel,
    ) {
        let mut pass = self.pass(encoder, stages, Stage::Integrate);
        if matches!(kernel, Kernel::HalfStep | Kernel::EulerStep) && self.obstacles.moving() {
            // The step's `Obstacles::advance`, before its first collisions.
            pass.set_bind_group(1, &self.binds.advance, &[]);
            self.run_groups(&mut pass, Kernel::AdvanceObstacles, 1);
        }
        pass.set_bind_group(1, &self.binds.integrate, &[]);
        self.run(&mut pass, kernel, self.len);
    }

    /// Has the batch's timestamps (copied into `staging`) added to the
    /// stage times once the GPU has written them; natively waits for that.
    fn collect_times(
        &self,
        staging: wgpu::Buffer,
        stages: Vec<Stage>,
        period: f64,
        steps: u64,
    ) -> Result<(), GpuError> {
        let times = self.times.clone();
        let mapped = staging.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let mut t = lock(&times);
            let read = r.map_err(|e| e.to_string()).and_then(|()| {
                mapped
                    .get_mapped_range(..)
                    .map(|v| bytemuck::pod_collect_to_vec::<u8, u64>(&v))
                    .map_err(|e| e.to_string())
            });
            mapped.unmap();
            match read {
                Ok(ticks) => {
                    for (stage, pair) in stages.iter().zip(ticks.chunks_exact(2)) {
                        t.times
                            .add(*stage, pair[1].saturating_sub(pair[0]) as f64 * period);
                    }
                    t.times.add_steps(steps);
                }
                Err(e) => {
                    t.error.get_or_insert(e);
                }
            }
        });
        drive(&self.device)?;
        match lock(&self.times).error.take() {
            Some(e) => Err(GpuError::Operation(e)),
            None => Ok(()),
        }
    }

    /// Waits for the device and reads every particle back, by id
    /// ([`read_back_async`](Self::read_back_async) driven by `pollster`;
    /// native targets only).
    ///
    /// # Errors
    /// [`GpuError::Operation`] if the copy or the mapping fails.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_back(&self) -> Result<Snapshot, GpuError> {
        pollster::block_on(self.read_back_async())
    }

    /// Reads every particle back, by id, once the work submitted before it
    /// has finished; on every target.
    ///
    /// # Errors
    /// [`GpuError::Operation`] if the copy or the mapping fails.
    pub async fn read_back_async(&self) -> Result<Snapshot, GpuError> {
        let n = u64::from(self.len);
        let positions =
            read_buffer(&self.device, &self.queue, &self.buffers.positions, 12 * n).await?;
        let states = read_buffer(&self.device, &self.queue, &self.buffers.states, 68 * n).await?;
        let flags = read_buffer(&self.device, &self.queue, &self.buffers.flags, 4).await?;
        Ok(Snapshot {
            positions: bytemuck::pod_collect_to_vec(&positions),
            states: bytemuck::pod_collect_to_vec(&states),
            diverged: flags.iter().any(|&b| b != 0),
        })
    }

    /// The cell and bucket of every particle as the kernels compute them
    /// (to compare with [`Grid::cell`] and [`Grid::bucket`] of
    /// [`grid`](Self::grid)).
    ///
    /// Native targets only: [`probe_cells_async`](Self::probe_cells_async)
    /// driven by `pollster`.
    ///
    /// # Errors
    /// [`GpuError::Operation`] if the read-back fails.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn probe_cells(&self) -> Result<Vec<([i32; 3], u32)>, GpuError> {
        pollster::block_on(self.probe_cells_async())
    }

    /// The cell and bucket of every particle as the kernels compute them
    /// (to compare with [`Grid::cell`] and [`Grid::bucket`] of
    /// [`grid`](Self::grid)), on every target.
    ///
    /// # Errors
    /// [`GpuError::Operation`] if the read-back fails.
    pub async fn probe_cells_async(&self) -> Result<Vec<([i32; 3], u32)>, GpuError> {
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("probe"),
            });
        {
            let mut pass = self.pass_untimed(&mut encoder);
            pass.set_bind_group(1, &self.binds.probe, &[]);
            self.run(&mut pass, Kernel::ProbeCells, self.len);
        }
        self.queue.submit([encoder.finish()]);
        let raw = read_buffer(
            &self.device,
            &self.queue,
            &self.binds.probe_out,
            16 * u64::from(self.len),
        )
        .await?;
        let words: Vec<i32> = bytemuck::pod_collect_to_vec(&raw);
        Ok(words
            .chunks_exact(4)
            .map(|w| ([w[0], w[1], w[2]], w[3] as u32))
            .collect())
    }

    fn pass_untimed<'e>(&'e self, encoder: &'e mut wgpu::CommandEncoder) -> wgpu::ComputePass<'e> {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("untimed"),
            timestamp_writes: None,
        });
        pass.set_bind_group(0, &self.binds.common, &[]);
        pass
    }

    /// Builds the neighbour-search layout (cells, sort, offsets) for the
    /// current positions, without stepping, and reads it back.
    ///
    /// Native targets only: [`sort_view_async`](Self::sort_view_async)
    /// driven by `pollster`.
    ///
    /// # Errors
    /// [`GpuError::Operation`] if the read-back fails.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn sort_view(&mut self) -> Result<SortView, GpuError> {
        pollster::block_on(self.sort_view_async())
    }

    /// Builds the neighbour-search layout (cells, sort, offsets) for the
    /// current positions, without stepping, and reads it back; on every
    /// target.
    ///
    /// # Errors
    /// [`GpuError::Operation`] if the read-back fails.
    pub async fn sort_view_async(&mut self) -> Result<SortView, GpuError> {
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("grid"),
            });
        let mut stages = Vec::new();
        self.encode_grid(&mut encoder, &mut stages);
        if let Some(t) = &self.timer
            && !stages.is_empty()
        {
            // Keep the query set's use balanced; these times are discarded.
            encoder.resolve_query_set(&t.set, 0..2 * stages.len() as u32, &t.resolve, 0);
        }
        self.queue.submit([encoder.finish()]);
        let n = u64::from(self.len);
        let sorted = read_buffer(&self.device, &self.queue, &self.buffers.sorted, 16 * n).await?;
        let ids = read_buffer(&self.device, &self.queue, &self.buffers.sorted_ids, 4 * n).await?;
        let starts = read_buffer(
            &self.device,
            &self.queue,
            &self.buffers.bucket_start,
            4 * u64::from(self.table_len),
        )
        .await?;
        let sorted: Vec<u32> = bytemuck::pod_collect_to_vec(&sorted);
        Ok(SortView {
            keys: sorted.chunks_exact(4).map(|w| w[3]).collect(),
            ids: bytemuck::pod_collect_to_vec(&ids),
            bucket_start: bytemuck::pod_collect_to_vec(&starts),
        })
    }

    /// Writes one emitter layer: particles `len .. len + count` at
    /// `centre + basis0·a + basis1·b` for the first `count` offsets of
    /// `layer`, all with `velocity`; the count grows by `count`.
    pub(crate) fn emit_layer(
        &mut self,
        layer: &wgpu::Buffer,
        count: u32,
        centre: Vec3,
        velocity: Vec3,
        basis: [Vec3; 2],
    ) -> Result<(), GpuError> {
        let first = self.len;
        if u64::from(first) + u64::from(count) > u64::from(self.capacity) {
            return Err(GpuError::CapacityExceeded {
                capacity: self.capacity as usize,
                requested: first as usize + count as usize,
            });
        }
        let block = EmitBlock {
            first,
            count,
            centre: [centre.x, centre.y, centre.z],
            velocity: [velocity.x, velocity.y, velocity.z],
            basis0: [basis[0].x, basis[0].y, basis[0].z],
            basis1: [basis[1].x, basis[1].y, basis[1].z],
            pad: [0; 2],
        };
        self.queue
            .write_buffer(&self.buffers.emit, 0, bytemuck::bytes_of(&block));
        let bind = bind_group(
            &self.device,
            &self.kernels.emit.group,
            &[
                self.buffers.positions.as_entire_binding(),
                self.buffers.states.as_entire_binding(),
                layer.as_entire_binding(),
                self.buffers.emit.as_entire_binding(),
            ],
        );
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("emit"),
            });
        {
            let mut pass = self.pass_untimed(&mut encoder);
            pass.set_bind_group(1, &bind, &[]);
            self.run(&mut pass, Kernel::EmitLayer, count);
        }
        self.queue.submit([encoder.finish()]);
        self.len = first + count;
        self.write_grid();
        Ok(())
    }

    pub(crate) fn device(&self) -> &wgpu::Device {
        &self.device
    }

    pub(crate) fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The per-id positions: `[f32; 3]` (the bytes of [`Vec3`]) per
    /// particle, stride 12 bytes, id `i` at byte `12·i`. Valid for the first
    /// [`len()`](Self::len) ids; the rest of the capacity holds stale or
    /// zero data. Usage `STORAGE | COPY_SRC | COPY_DST`: bind it read-only
    /// (e.g. in a vertex shader, as [`draw::Renderer`](crate::draw::Renderer)
    /// does); the solver rewrites it during [`step`](Self::step).
    pub fn positions_buffer(&self) -> &wgpu::Buffer {
        &self.buffers.positions
    }

    /// The per-id states: the core's [`ParticleState<Vec3>`] as 17 `f32`
    /// per particle, stride 68 bytes, in field order velocity (words 0–2),
    /// acceleration (3–5), normal (6–8), step start position (9–11), step
    /// start velocity (12–14), density (15), pressure (16). Valid for the
    /// first [`len()`](Self::len) ids. Usage as
    /// [`positions_buffer`](Self::positions_buffer).
    pub fn states_buffer(&self) -> &wgpu::Buffer {
        &self.buffers.states
    }
}

/// Natively, runs the device until the work submitted so far has finished
/// (which also runs the callbacks of finished mappings); in a browser,
/// nothing: the browser settles the mappings' promises itself.
fn drive(device: &wgpu::Device) -> Result<(), GpuError> {
    #[cfg(not(target_arch = "wasm32"))]
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| GpuError::Operation(e.to_string()))?;
    #[cfg(target_arch = "wasm32")]
    let _ = device;
    Ok(())
}

/// Copies the first `size` bytes of `src` to a mappable buffer and returns
/// them once the copy has finished.
pub(crate) async fn read_buffer(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    src: &wgpu::Buffer,
    size: u64,
) -> Result<Vec<u8>, GpuError> {
    if size == 0 {
        return Ok(Vec::new());
    }
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("read back"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("copy"),
    });
    encoder.copy_buffer_to_buffer(src, 0, &staging, 0, size);
    queue.submit([encoder.finish()]);
    let (tx, rx) = oneshot::channel();
    staging.map_async(wgpu::MapMode::Read, .., move |r| tx.send(r));
    drive(device)?;
    rx.await.map_err(|e| GpuError::Operation(e.to_string()))?;
    let data = staging
        .get_mapped_range(..)
        .map_err(|e| GpuError::Operation(e.to_string()))?
        .to_vec();
    staging.unmap();
    Ok(data)
}
