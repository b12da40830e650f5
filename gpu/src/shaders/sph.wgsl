// Density (eq. 5-7), normals (eq. 15) and forces (eq. 7, 9-17): one
// invocation per particle in bucket order, gathering over the 27 cells
// around it. A pair's term is the one `Fluid::evaluate` adds to particle i,
// written out in the same operation order.
//
// Everything read of a neighbour (and of the particle itself) comes from
// the arrays in bucket order at its sorted index: position and bucket
// (`sorted`), velocity and density (`sorted_vd`), normal and pressure
// (`sorted_np`). Each pass writes its own results there at the particle's
// sorted index and, once, into the per-id `states` (what `read_back`
// returns).

// `SortedParticle` read as one 16-byte vector (one load per neighbour, not
// four): position bits in xyz, the bucket in w (read as u32, so that no
// float load ever touches the key).
@group(1) @binding(0) var<storage, read> sorted: array<vec4<u32>>;
@group(1) @binding(1) var<storage, read> sorted_ids: array<u32>;
@group(1) @binding(2) var<storage, read> bucket_start: array<u32>;
@group(1) @binding(3) var<storage, read_write> states: array<State>;
// Velocity (xyz, copied by the sort) and density (w, the density pass).
@group(1) @binding(4) var<storage, read_write> sorted_vd: array<vec4<f32>>;
// Normal (xyz, the normals pass) and pressure (w, the density pass).
@group(1) @binding(5) var<storage, read_write> sorted_np: array<vec4<f32>>;

fn stencil(d: u32) -> vec3<i32> {
    return vec3<i32>(i32(d % 3u) - 1, i32((d / 3u) % 3u) - 1, i32(d / 9u) - 1);
}

fn poly6(r2: f32) -> f32 {
    if r2 >= params.h2 {
        return 0.0;
    }
    let d = params.h2 - r2;
    return params.poly6 * d * d * d;
}

fn pressure_of(rho: f32) -> f32 {
    var p: f32;
    if params.eos == 0u {
        let q = rho / params.rest_density;
        let q2 = q * q;
        let q3 = q2 * q;
        p = params.stiffness * (q3 * q3 * q - 1.0);
    } else {
        p = params.stiffness * (rho - params.rest_density);
    }
    if params.clamp_negative_pressure != 0u {
        p = max(p, 0.0);
    }
    return p;
}

fn spiky_gradient_factor(len: f32, inv_len: f32) -> f32 {
    if len >= params.h || len <= 0.0 {
        return 0.0;
    }
    let d = params.h - len;
    return -params.spiky_grad * d * d * inv_len;
}

fn viscosity_laplacian(len: f32) -> f32 {
    if len >= params.h {
        return 0.0;
    }
    return params.viscosity_laplacian * (params.h - max(len, 0.0));
}

fn cohesion(len: f32) -> f32 {
    if len >= params.h || len <= 0.0 {
        return 0.0;
    }
    let d = params.h - len;
    let t = d * d * d * len * len * len;
    if 2.0 * len > params.h {
        return params.cohesion * t;
    }
    return params.cohesion * (2.0 * t - params.cohesion_offset);
}

fn squared(r: vec3<f32>) -> f32 {
    return r.x * r.x + r.y * r.y + r.z * r.z;
}

// Each kernel walks the same loop: for each of the 27 cells around the
// particle, the run of its bucket (from `bucket_start` while the key
// matches), keeping only particles whose own cell is that cell (so a bucket
// shared by two stencil cells is not counted twice) within `h`.

@compute @workgroup_size(256)
fn density(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) groups: vec3<u32>) {
    let k = thread_index(gid, groups);
    let n = grid.count;
    if k >= n {
        return;
    }
    let p = bitcast<vec3<f32>>(sorted[k].xyz);
    let c = cell_of(p);
    let m = params.mass;
    var rho = m * poly6(0.0);
    for (var d = 0u; d < 27u; d++) {
        let nc = c + stencil(d);
        let b = bucket_of(nc);
        for (var q = bucket_start[b]; q < n; q++) {
            let o = sorted[q];
            if o.w != b {
                break;
            }
            let x = bitcast<vec3<f32>>(o.xyz);
            if q != k && all(cell_of(x) == nc) {
                let d2 = squared(p - x);
                if d2 < params.h2 {
                    rho += m * poly6(d2);
                }
            }
        }
    }
    let pressure = pressure_of(rho);
    sorted_vd[k].w = rho;
    sorted_np[k].w = pressure;
    let i = sorted_ids[k];
    states[i].density = rho;
    states[i].pressure = pressure;
}

@compute @workgroup_size(256)
fn normals(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) groups: vec3<u32>) {
    let k = thread_index(gid, groups);
    let n = grid.count;
    if k >= n {
        return;
    }
    let p = bitcast<vec3<f32>>(sorted[k].xyz);
    let c = cell_of(p);
    let ri = sorted_vd[k].w;
    let scale = params.h * params.mass;
    var acc = vec3<f32>(0.0);
    for (var d = 0u; d < 27u; d++) {
        let nc = c + stencil(d);
        let b = bucket_of(nc);
        for (var q = bucket_start[b]; q < n; q++) {
            let o = sorted[q];
            if o.w != b {
                break;
            }
            let x = bitcast<vec3<f32>>(o.xyz);
            if q != k && all(cell_of(x) == nc) {
                let r = p - x;
                let d2 = squared(r);
                if d2 < params.h2 {
                    let rj = sorted_vd[q].w;
                    let dd = params.h2 - d2;
                    let g = r * (-params.poly6_grad * dd * dd) * scale;
                    let inv = 1.0 / (ri * rj);
                    acc += g * (ri * inv);
                }
            }
        }
    }
    sorted_np[k] = vec4<f32>(acc, sorted_np[k].w);
    let i = sorted_ids[k];
    states[i].nx = acc.x;
    states[i].ny = acc.y;
    states[i].nz = acc.z;
}

@compute @workgroup_size(256)
fn forces(@builtin(global_invocation_id) gid: vec3<u32>,
          @builtin(num_workgroups) groups: vec3<u32>) {
    let k = thread_index(gid, groups);
    let n = grid.count;
    if k >= n {
        return;
    }
    let p = bitcast<vec3<f32>>(sorted[k].xyz);
    let c = cell_of(p);
    let vdi = sorted_vd[k];
    let npi = sorted_np[k];
    let m = params.mass;
    let mu = params.viscosity;
    let gamma = params.surface_tension;
    let rho0 = params.rest_density;
    var acc = vec3<f32>(params.gravity_x, params.gravity_y, params.gravity_z);
    for (var d = 0u; d < 27u; d++) {
        let nc = c + stencil(d);
        let b = bucket_of(nc);
        for (var q = bucket_start[b]; q < n; q++) {
            let o = sorted[q];
            if o.w != b {
                break;
            }
            let x = bitcast<vec3<f32>>(o.xyz);
            if q != k && all(cell_of(x) == nc) {
                let r = p - x;
                let d2 = squared(r);
                if d2 < params.h2 {
                    let vdj = sorted_vd[q];
                    let npj = sorted_np[q];
                    let len = sqrt(d2);
                    var inv_len = 0.0;
                    if len > 0.0 {
                        inv_len = 1.0 / len;
                    }
                    let ri = vdi.w;
                    let rj = vdj.w;
                    let inv = 1.0 / (ri * rj);
                    let inv_i = rj * inv;
                    let inv_j = ri * inv;
                    let pressure = npi.w * inv_i * inv_i + npj.w * inv_j * inv_j;
                    var a = r * (-m * pressure * spiky_gradient_factor(len, inv_len));
                    a += (vdj.xyz - vdi.xyz) * (mu * m * viscosity_laplacian(len) * inv);
                    if gamma > 0.0 {
                        var f = (npi.xyz - npj.xyz) * (-gamma);
                        f += r * (-gamma * m * cohesion(len) * inv_len);
                        a += f * (2.0 * rho0 / (ri + rj));
                    }
                    acc += a;
                }
            }
        }
    }
    let i = sorted_ids[k];
    states[i].ax = acc.x;
    states[i].ay = acc.y;
    states[i].az = acc.z;
}
