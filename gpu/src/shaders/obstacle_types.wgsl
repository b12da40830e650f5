// `spatium_gpu::obstacles::ObstacleRecord` (64 bytes): kind 0 sphere (centre
// a, radius b.x), 1 box (min a, max b), 2 triangle (a, b, c); the velocity
// contacts are resolved against, and the displacement of one step
// (`velocity * dt`, computed on the host).
struct ObstacleRecord {
    kind: u32,
    ax: f32,
    ay: f32,
    az: f32,
    bx: f32,
    by: f32,
    bz: f32,
    cx: f32,
    cy: f32,
    cz: f32,
    vx: f32,
    vy: f32,
    vz: f32,
    dx: f32,
    dy: f32,
    dz: f32,
}

// The obstacle buffer: a 16-byte header, then the records by id.
struct ObstacleSet {
    count: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    items: array<ObstacleRecord>,
}

const SPHERE: u32 = 0u;
const BOX: u32 = 1u;
const TRIANGLE: u32 = 2u;
// `spatium_gpu::MAX_OBSTACLES`.
const MAX_OBSTACLES: u32 = 64u;
