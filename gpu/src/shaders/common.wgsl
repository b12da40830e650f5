// Shared by every kernel (prepended to each module): the layouts of the
// host's types and the grid arithmetic of `spatium::uniform::Grid`.

// `spatium::sph::ParamBlock`, field for field (128 bytes).
struct Params {
    dims: u32,
    eos: u32,
    integrator: u32,
    clamp_negative_pressure: u32,
    h: f32,
    h2: f32,
    mass: f32,
    rest_density: f32,
    stiffness: f32,
    viscosity: f32,
    surface_tension: f32,
    damping: f32,
    dt: f32,
    particle_radius: f32,
    gravity_x: f32,
    gravity_y: f32,
    gravity_z: f32,
    domain_min_x: f32,
    domain_min_y: f32,
    domain_min_z: f32,
    domain_max_x: f32,
    domain_max_y: f32,
    domain_max_z: f32,
    poly6: f32,
    poly6_grad: f32,
    spiky_grad: f32,
    viscosity_laplacian: f32,
    cohesion: f32,
    cohesion_offset: f32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

// `spatium_gpu::layout::GridBlock` (32 bytes).
struct GridInfo {
    count: u32,
    shift: u32,
    table_len: u32,
    sort_len: u32,
    origin_x: f32,
    origin_y: f32,
    origin_z: f32,
    inv_cell: f32,
}

// `spatium::Vec3`: three scalars, stride 12 (a vec3<f32> would be 16).
struct Position {
    x: f32,
    y: f32,
    z: f32,
}

// `spatium::sph::ParticleState<Vec3>`: 17 scalars, stride 68.
struct State {
    vx: f32,
    vy: f32,
    vz: f32,
    ax: f32,
    ay: f32,
    az: f32,
    nx: f32,
    ny: f32,
    nz: f32,
    spx: f32,
    spy: f32,
    spz: f32,
    svx: f32,
    svy: f32,
    svz: f32,
    density: f32,
    pressure: f32,
}

// A particle in bucket order: its position and its bucket (16 bytes).
struct SortedParticle {
    x: f32,
    y: f32,
    z: f32,
    key: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> grid: GridInfo;

const WG: u32 = 256u;
// `spatium::uniform::MAX_CELL_INDEX`.
const MAX_CELL_INDEX: i32 = 16384;
const LIMIT: f32 = 16384.0;

// The invocation's index in a dispatch that may be split into a 2D grid of
// workgroups (at most 65535 per dimension).
fn thread_index(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return gid.y * groups.x * WG + gid.x;
}

// The index of the workgroup itself in such a grid.
fn group_index(wid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return wid.y * groups.x + wid.x;
}

// `Grid::cell`: floor((p - origin) * inv_cell) + MAX_CELL_INDEX per axis.
// Positions stay inside the domain, which the host checked to lie within
// the accepted range; the clamp only keeps a diverged value in the table.
fn cell_of(p: vec3<f32>) -> vec3<i32> {
    let o = vec3<f32>(grid.origin_x, grid.origin_y, grid.origin_z);
    let t = clamp((p - o) * grid.inv_cell, vec3<f32>(-LIMIT), vec3<f32>(LIMIT));
    return vec3<i32>(floor(t)) + vec3<i32>(MAX_CELL_INDEX);
}

// `Grid::bucket`: the seed's XOR hash of the three primes, Fibonacci-mixed,
// top bits.
fn bucket_of(c: vec3<i32>) -> u32 {
    let u = bitcast<vec3<u32>>(c);
    let hash = (u.x * 73856093u) ^ (u.y * 19349663u) ^ (u.z * 83492791u);
    let mixed = hash * 0x9E3779B9u;
    return select(mixed >> grid.shift, 0u, grid.shift >= 32u);
}

fn position_vec(p: Position) -> vec3<f32> {
    return vec3<f32>(p.x, p.y, p.z);
}

fn sorted_vec(p: SortedParticle) -> vec3<f32> {
    return vec3<f32>(p.x, p.y, p.z);
}
