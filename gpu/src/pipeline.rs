//! Shader modules, bind group layouts, pipelines and dispatch shapes.

/// Invocations per workgroup of every kernel (the WGSL `WG`).
pub(crate) const WORKGROUP: u32 = 256;

const COMMON: &str = include_str!("shaders/common.wgsl");

/// How a kernel binds a buffer of its group 1.
#[derive(Clone, Copy)]
pub(crate) enum Access {
    Uniform,
    DynamicUniform,
    Read,
    ReadWrite,
}

/// A WGSL module (with the common prelude) and its layouts.
pub(crate) struct Module {
    module: wgpu::ShaderModule,
    layout: wgpu::PipelineLayout,
    pub group: wgpu::BindGroupLayout,
}

fn layout_entry(
    binding: u32,
    ty: wgpu::BufferBindingType,
    dynamic: bool,
) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty,
            has_dynamic_offset: dynamic,
            min_binding_size: None,
        },
        count: None,
    }
}

/// The layout of group 0: the parameter block and the grid block.
fn common_layout(device: &wgpu::Device) -> wgpu::BindGroupLayout {
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("common"),
        entries: &[
            layout_entry(0, wgpu::BufferBindingType::Uniform, false),
            layout_entry(1, wgpu::BufferBindingType::Uniform, false),
        ],
    })
}

/// Compiles `source` after the common prelude; group 1 holds `bindings`
/// at indices 0, 1, ….
pub(crate) fn make_module(
    device: &wgpu::Device,
    common: &wgpu::BindGroupLayout,
    label: &str,
    source: &str,
    bindings: &[Access],
) -> Module {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(format!("{COMMON}\n{source}").into()),
    });
    let entries: Vec<_> = bindings
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let (ty, dynamic) = match a {
                Access::Uniform => (wgpu::BufferBindingType::Uniform, false),
                Access::DynamicUniform => (wgpu::BufferBindingType::Uniform, true),
                Access::Read => (wgpu::BufferBindingType::Storage { read_only: true }, false),
                Access::ReadWrite => (wgpu::BufferBindingType::Storage { read_only: false }, false),
            };
            layout_entry(i as u32, ty, dynamic)
        })
        .collect();
    let group = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(label),
        entries: &entries,
    });
    let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(label),
        bind_group_layouts: &[Some(common), Some(&group)],
        immediate_size: 0,
    });
    Module {
        module,
        layout,
        group,
    }
}

fn make_pipeline(device: &wgpu::Device, module: &Module, entry: &str) -> wgpu::ComputePipeline {
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: Some(&module.layout),
        module: &module.module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions::default(),
        cache: None,
    })
}

/// A bind group of `layout` with `resources` at bindings 0, 1, ….
pub(crate) fn bind_group(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    resources: &[wgpu::BindingResource<'_>],
) -> wgpu::BindGroup {
    let entries: Vec<_> = resources
        .iter()
        .enumerate()
        .map(|(i, r)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: r.clone(),
        })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout,
        entries: &entries,
    })
}

/// `groups` workgroups as an `(x, y)` grid with at most `max` per
/// dimension (the caller checked `groups ≤ max²`); kernels rebuild the
/// linear index from `num_workgroups` and skip the surplus.
pub fn dispatch_grid(groups: u32, max: u32) -> (u32, u32) {
    let max = max.max(1);
    if groups <= max {
        (groups, 1)
    } else {
        let y = groups.div_ceil(max);
        (groups.div_ceil(y), y)
    }
}

/// The compute kernels, one per WGSL entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    ClearTable,
    CountCells,
    Scatter,
    BitonicKeys,
    BitonicGather,
    BitonicOffsets,
    ScanBlocks,
    AddOffsets,
    LocalSort,
    LocalMerge,
    GlobalMerge,
    Density,
    Normals,
    Forces,
    HalfStep,
    FullStep,
    EulerStep,
    EmitLayer,
    ProbeCells,
    AdvanceObstacles,
}

/// Every module and pipeline of the step.
pub(crate) struct Kernels {
    pub common: wgpu::BindGroupLayout,
    pub grid: Module,
    pub scan: Module,
    pub bitonic: Module,
    pub sph: Module,
    pub integrate: Module,
    pub probe: Module,
    pub emit: Module,
    pub advance: Module,
    pipelines: Vec<wgpu::ComputePipeline>,
}

impl Kernels {
    pub fn new(device: &wgpu::Device) -> Self {
        use Access::{DynamicUniform, Read, ReadWrite, Uniform};
        let common = common_layout(device);
        let m = |label, source, bindings: &[Access]| {
            make_module(device, &common, label, source, bindings)
        };
        let grid = m(
            "grid",
            include_str!("shaders/grid.wgsl"),
            &[
                Read, Read, ReadWrite, ReadWrite, ReadWrite, ReadWrite, ReadWrite,
            ],
        );
        let scan = m(
            "scan",
            include_str!("shaders/scan.wgsl"),
            &[ReadWrite, ReadWrite, Uniform],
        );
        let bitonic = m(
            "bitonic",
            include_str!("shaders/bitonic.wgsl"),
            &[ReadWrite, DynamicUniform],
        );
        let sph = m(
            "sph",
            include_str!("shaders/sph.wgsl"),
            &[Read, Read, Read, ReadWrite, ReadWrite, ReadWrite],
        );
        let integrate = m(
            "integrate",
            concat!(
                include_str!("shaders/integrate.wgsl"),
                include_str!("shaders/obstacle_types.wgsl"),
                include_str!("shaders/collide.wgsl"),
            ),
            &[ReadWrite, ReadWrite, ReadWrite, Read],
        );
        let advance = m(
            "advance obstacles",
            concat!(
                include_str!("shaders/obstacle_types.wgsl"),
                include_str!("shaders/advance.wgsl"),
            ),
            &[ReadWrite],
        );
        let probe = m(
            "probe",
            include_str!("shaders/probe.wgsl"),
            &[Read, ReadWrite],
        );
        let emit = m(
            "emit",
            include_str!("shaders/emit.wgsl"),
            &[ReadWrite, ReadWrite, Read, Uniform],
        );
        let table: [(Kernel, &Module, &str); 20] = [
            (Kernel::ClearTable, &grid, "clear_table"),
            (Kernel::CountCells, &grid, "count_cells"),
            (Kernel::Scatter, &grid, "scatter"),
            (Kernel::BitonicKeys, &grid, "bitonic_keys"),
            (Kernel::BitonicGather, &grid, "bitonic_gather"),
            (Kernel::BitonicOffsets, &grid, "bitonic_offsets"),
            (Kernel::ScanBlocks, &scan, "scan_blocks"),
            (Kernel::AddOffsets, &scan, "add_offsets"),
            (Kernel::LocalSort, &bitonic, "local_sort"),
            (Kernel::LocalMerge, &bitonic, "local_merge"),
            (Kernel::GlobalMerge, &bitonic, "global_merge"),
            (Kernel::Density, &sph, "density"),
            (Kernel::Normals, &sph, "normals"),
            (Kernel::Forces, &sph, "forces"),
            (Kernel::HalfStep, &integrate, "half_step"),
            (Kernel::FullStep, &integrate, "full_step"),
            (Kernel::EulerStep, &integrate, "euler_step"),
            (Kernel::EmitLayer, &emit, "emit_layer"),
            (Kernel::ProbeCells, &probe, "probe_cells"),
            (Kernel::AdvanceObstacles, &advance, "advance_obstacles"),
        ];
        let pipelines = table
            .iter()
            .enumerate()
            .map(|(i, (kernel, module, entry))| {
                debug_assert_eq!(*kernel as usize, i);
                make_pipeline(device, module, entry)
            })
            .collect();
        Self {
            common,
            grid,
            scan,
            bitonic,
            sph,
            integrate,
            probe,
            emit,
            advance,
            pipelines,
        }
    }

    pub fn get(&self, kernel: Kernel) -> &wgpu::ComputePipeline {
        &self.pipelines[kernel as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_grid_covers_and_respects_the_limit() {
        for max in [1u32, 2, 7, 65_535] {
            for groups in [1u32, 2, 6, 7, 8, 49, 50, 1000, 65_535, 65_536, 300_000] {
                if u64::from(groups) > u64::from(max) * u64::from(max) {
                    continue;
                }
                let (x, y) = dispatch_grid(groups, max);
                assert!(x <= max && y <= max, "{groups} groups, max {max}: {x}×{y}");
                assert!(u64::from(x) * u64::from(y) >= u64::from(groups));
                // No whole surplus row.
                assert!(u64::from(x) * u64::from(y - 1) < u64::from(groups));
            }
        }
    }
}
