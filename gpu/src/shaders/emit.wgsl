// The emitter: one pipe layer written at ids first .. first + count, each
// point `centre + basis0 * a + basis1 * b` for the layer's lattice offsets
// (a, b), as `spatium::sph::source::Emitter` places them.

struct EmitInfo {
    first: u32,
    count: u32,
    centre_x: f32,
    centre_y: f32,
    centre_z: f32,
    velocity_x: f32,
    velocity_y: f32,
    velocity_z: f32,
    basis0_x: f32,
    basis0_y: f32,
    basis0_z: f32,
    basis1_x: f32,
    basis1_y: f32,
    basis1_z: f32,
    pad0: u32,
    pad1: u32,
}

@group(1) @binding(0) var<storage, read_write> positions: array<Position>;
@group(1) @binding(1) var<storage, read_write> states: array<State>;
@group(1) @binding(2) var<storage, read> layer: array<vec2<f32>>;
@group(1) @binding(3) var<uniform> emit_info: EmitInfo;

@compute @workgroup_size(256)
fn emit_layer(@builtin(global_invocation_id) gid: vec3<u32>,
              @builtin(num_workgroups) groups: vec3<u32>) {
    let t = thread_index(gid, groups);
    if t >= emit_info.count {
        return;
    }
    let e = emit_info;
    let centre = vec3<f32>(e.centre_x, e.centre_y, e.centre_z);
    let b0 = vec3<f32>(e.basis0_x, e.basis0_y, e.basis0_z);
    let b1 = vec3<f32>(e.basis1_x, e.basis1_y, e.basis1_z);
    let ab = layer[t];
    let x = centre + b0 * ab.x + b1 * ab.y;
    let v = vec3<f32>(e.velocity_x, e.velocity_y, e.velocity_z);
    let i = e.first + t;
    positions[i] = Position(x.x, x.y, x.z);
    states[i] = State(v.x, v.y, v.z, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                      x.x, x.y, x.z, v.x, v.y, v.z, 0.0, 0.0);
}
