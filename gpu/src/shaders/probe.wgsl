// Cell and bucket of every particle, through the same functions as the
// pipeline, for checking against `spatium::uniform::Grid` on the CPU.

@group(1) @binding(0) var<storage, read> positions: array<Position>;
@group(1) @binding(1) var<storage, read_write> probe: array<vec4<i32>>;

@compute @workgroup_size(256)
fn probe_cells(@builtin(global_invocation_id) gid: vec3<u32>,
               @builtin(num_workgroups) groups: vec3<u32>) {
    let i = thread_index(gid, groups);
    if i >= grid.count {
        return;
    }
    let c = cell_of(position_vec(positions[i]));
    probe[i] = vec4<i32>(c, bitcast<i32>(bucket_of(c)));
}
