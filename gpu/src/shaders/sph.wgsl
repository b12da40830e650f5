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

// The three passes share one walk (`gather`), as the CPU's `pair_pass`
// does: for each of the 27 cells around the particle, the run of its
// bucket (from `bucket_start` while the key matches), keeping only
// particles whose own cell is that cell (so a bucket shared by two stencil
// cells is not counted twice) within `h`; `term` adds the pass's share of
// each pair. The pass is a constant at each call, so the compiler can
// specialise the loop.

const PASS_DENSITY: u32 = 0u;
const PASS_NORMALS: u32 = 1u;
const PASS_FORCES: u32 = 2u;

// What particle i reads of itself in every pass.
struct Own {
    // Velocity (xyz) and density (w).
    vd: vec4<f32>,
    // Normal (xyz) and pressure (w).
    np: vec4<f32>,
}

// Pair (i, j) with r = x_i - x_j, d2 = |r|², 0 < ... d2 < h²: the term
// `Fluid::evaluate` adds to i, in the same operation order. Density in w;
// normals and accelerations in xyz.
fn term(which: u32, own: Own, q: u32, r: vec3<f32>, d2: f32) -> vec4<f32> {
    let m = params.mass;
    switch which {
        case PASS_DENSITY: {
            return vec4<f32>(0.0, 0.0, 0.0, m * poly6(d2));
        }
        case PASS_NORMALS: {
            let ri = own.vd.w;
            let rj = sorted_vd[q].w;
            let dd = params.h2 - d2;
            let g = r * (-params.poly6_grad * dd * dd) * (params.h * m);
            let inv = 1.0 / (ri * rj);
            return vec4<f32>(g * (ri * inv), 0.0);
        }
        default: {
            let vdj = sorted_vd[q];
            let npj = sorted_np[q];
            let len = sqrt(d2);
            var inv_len = 0.0;
            if len > 0.0 {
                inv_len = 1.0 / len;
            }
            let ri = own.vd.w;
            let rj = vdj.w;
            let inv = 1.0 / (ri * rj);
            let inv_i = rj * inv;
            let inv_j = ri * inv;
            let pressure = own.np.w * inv_i * inv_i + npj.w * inv_j * inv_j;
            var a = r * (-m * pressure * spiky_gradient_factor(len, inv_len));
            a += (vdj.xyz - own.vd.xyz) * (params.viscosity * m * viscosity_laplacian(len) * inv);
            let gamma = params.surface_tension;
            if gamma > 0.0 {
                var f = (own.np.xyz - npj.xyz) * (-gamma);
                f += r * (-gamma * m * cohesion(len) * inv_len);
                a += f * (2.0 * params.rest_density / (ri + rj));
            }
            return vec4<f32>(a, 0.0);
        }
    }
}

// `init` plus the sum of `term` over particle k's neighbours (k in sorted
// order), added in the walk's order, as the CPU starts from the self term
// or gravity and adds.
fn gather(which: u32, k: u32, own: Own, init: vec4<f32>) -> vec4<f32> {
    let n = grid.count;
    let p = bitcast<vec3<f32>>(sorted[k].xyz);
    let c = cell_of(p);
    var acc = init;
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
                    acc += term(which, own, q, r, d2);
                }
            }
        }
    }
    return acc;
}

@compute @workgroup_size(256)
fn density(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) groups: vec3<u32>) {
    let k = thread_index(gid, groups);
    if k >= grid.count {
        return;
    }
    let own = Own(vec4<f32>(0.0), vec4<f32>(0.0));
    let self_density = vec4<f32>(0.0, 0.0, 0.0, params.mass * poly6(0.0));
    let rho = gather(PASS_DENSITY, k, own, self_density).w;
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
    if k >= grid.count {
        return;
    }
    let own = Own(sorted_vd[k], sorted_np[k]);
    let normal = gather(PASS_NORMALS, k, own, vec4<f32>(0.0)).xyz;
    sorted_np[k] = vec4<f32>(normal, own.np.w);
    let i = sorted_ids[k];
    states[i].nx = normal.x;
    states[i].ny = normal.y;
    states[i].nz = normal.z;
}

@compute @workgroup_size(256)
fn forces(@builtin(global_invocation_id) gid: vec3<u32>,
          @builtin(num_workgroups) groups: vec3<u32>) {
    let k = thread_index(gid, groups);
    if k >= grid.count {
        return;
    }
    let own = Own(sorted_vd[k], sorted_np[k]);
    let gravity = vec3<f32>(params.gravity_x, params.gravity_y, params.gravity_z);
    let acc = gather(PASS_FORCES, k, own, vec4<f32>(gravity, 0.0)).xyz;
    let i = sorted_ids[k];
    states[i].ax = acc.x;
    states[i].ay = acc.y;
    states[i].az = acc.z;
}
