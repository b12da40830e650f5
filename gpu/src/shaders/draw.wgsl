// The renderer of `draw.rs`: particles and obstacle spheres as ray-traced
// sphere impostors on camera-facing quads, obstacle boxes as shaded cubes,
// the channel box as lines. Colours arrive as 8-bit sRGB values / 255
// (`palette.rs`), are mixed as the CPU frames mix them, decoded to linear
// for lighting, and encoded again here when the target is not an sRGB
// format (`frame.light.w`).

struct Frame {
    // World to clip (wgpu clip space, depth in [0, 1]).
    view_proj: mat4x4<f32>,
    // xyz: eye position; w: particle radius.
    eye: vec4<f32>,
    // xyz: unit direction towards the light; w: 1 to encode sRGB here.
    light: vec4<f32>,
    // xyz: domain minimum; w: rest density.
    domain_min: vec4<f32>,
    // xyz: domain maximum; w: unused.
    domain_max: vec4<f32>,
    // rgb: pale end of the ramp (sRGB / 255); w: its density / rest density.
    pale: vec4<f32>,
    // rgb: strong end of the ramp (sRGB / 255); w: its density / rest density.
    strong: vec4<f32>,
    // rgb: obstacle colour (sRGB / 255).
    solid: vec4<f32>,
    // rgb: channel box colour (sRGB / 255).
    edge: vec4<f32>,
}

@group(0) @binding(0) var<uniform> frame: Frame;
// The fluid's per-id buffers: `[f32; 3]` positions (stride 12) and the core's
// `ParticleState<Vec3>` (17 f32, stride 68; the density is word 15).
@group(0) @binding(1) var<storage, read> positions: array<f32>;
@group(0) @binding(2) var<storage, read> states: array<f32>;

const STATE_WORDS: u32 = 17u;
const DENSITY_WORD: u32 = 15u;

const AMBIENT: f32 = 0.35;
const DIFFUSE: f32 = 0.75;
const SPECULAR: f32 = 0.3;
const SHININESS: f32 = 48.0;

fn to_linear(c: vec3<f32>) -> vec3<f32> {
    let lo = c / 12.92;
    let hi = pow((c + vec3(0.055)) / 1.055, vec3(2.4));
    return select(hi, lo, c <= vec3(0.04045));
}

fn to_srgb(c: vec3<f32>) -> vec3<f32> {
    let lo = c * 12.92;
    let hi = 1.055 * pow(c, vec3(1.0 / 2.4)) - vec3(0.055);
    return select(hi, lo, c <= vec3(0.0031308));
}

// A linear colour as the target stores it.
fn finish(c: vec3<f32>) -> vec4<f32> {
    let k = clamp(c, vec3(0.0), vec3(1.0));
    if frame.light.w > 0.5 {
        return vec4(to_srgb(k), 1.0);
    }
    return vec4(k, 1.0);
}

// Lambert with an ambient term and a Blinn-Phong highlight; `n` and `v`
// (towards the eye) unit vectors, `base` linear.
fn shade(base: vec3<f32>, n: vec3<f32>, v: vec3<f32>) -> vec3<f32> {
    let l = frame.light.xyz;
    let lambert = max(dot(n, l), 0.0);
    let h = normalize(l + v);
    let spec = select(0.0, pow(max(dot(n, h), 0.0), SHININESS), lambert > 0.0);
    return base * (AMBIENT + DIFFUSE * lambert) + vec3(SPECULAR * spec);
}

// The pale-to-strong ramp of the CPU frames, mixed in sRGB, returned linear.
fn density_colour(density: f32) -> vec3<f32> {
    let ratio = density / frame.domain_min.w;
    var t = clamp((ratio - frame.pale.w) / (frame.strong.w - frame.pale.w), 0.0, 1.0);
    if t != t {
        t = 0.0;
    }
    return to_linear(mix(frame.pale.rgb, frame.strong.rgb, t));
}

// Two triangles covering [-1, 1]².
fn quad_corner(v: u32) -> vec2<f32> {
    var c = array<vec2<f32>, 6>(
        vec2(-1.0, -1.0), vec2(1.0, -1.0), vec2(1.0, 1.0),
        vec2(-1.0, -1.0), vec2(1.0, 1.0), vec2(-1.0, 1.0),
    );
    return c[v];
}

struct Impostor {
    @builtin(position) clip: vec4<f32>,
    // The quad's point in world space (the ray through this fragment).
    @location(0) world: vec3<f32>,
    @location(1) @interpolate(flat) center: vec3<f32>,
    @location(2) @interpolate(flat) radius: f32,
    // Linear base colour.
    @location(3) @interpolate(flat) colour: vec3<f32>,
}

// Corner `v` of the quad that covers the sphere's silhouette: it lies in the
// plane through the centre facing the eye, with half-width r·d/√(d² − r²)
// (where the tangent rays from the eye cross that plane). A sphere around
// the eye, or of no radius, is moved out of the clip volume.
fn impostor(v: u32, center: vec3<f32>, radius: f32, colour: vec3<f32>) -> Impostor {
    var out: Impostor;
    out.center = center;
    out.radius = radius;
    out.colour = colour;
    out.world = center;
    let to_eye = frame.eye.xyz - center;
    let d2 = dot(to_eye, to_eye);
    let r2 = radius * radius;
    if !(radius > 0.0) || !(d2 > 1.0001 * r2) {
        out.clip = vec4(0.0, 0.0, 2.0, 1.0);
        return out;
    }
    let w = to_eye * inverseSqrt(d2);
    var up = vec3(0.0, 1.0, 0.0);
    if abs(w.y) > 0.99 {
        up = vec3(1.0, 0.0, 0.0);
    }
    let s = normalize(cross(up, w));
    let u = cross(w, s);
    let half = radius * sqrt(d2 / (d2 - r2));
    let c = quad_corner(v);
    out.world = center + (s * c.x + u * c.y) * half;
    out.clip = frame.view_proj * vec4(out.world, 1.0);
    return out;
}

// One instance per particle (the first `len()` ids), six vertices each.
@vertex
fn particle_vs(@builtin(vertex_index) v: u32, @builtin(instance_index) i: u32) -> Impostor {
    let p = vec3(positions[3u * i], positions[3u * i + 1u], positions[3u * i + 2u]);
    let density = states[STATE_WORDS * i + DENSITY_WORD];
    return impostor(v, p, frame.eye.w, density_colour(density));
}

// One instance per obstacle sphere: `extent.x` is the radius.
@vertex
fn ball_vs(
    @builtin(vertex_index) v: u32,
    @location(0) center: vec3<f32>,
    @location(1) extent: vec3<f32>,
) -> Impostor {
    return impostor(v, center, extent.x, to_linear(frame.solid.rgb));
}

struct Shaded {
    @location(0) colour: vec4<f32>,
    @builtin(frag_depth) depth: f32,
}

// The ray from the eye through the fragment against the sphere: the nearer
// hit's normal for the lighting and its depth for the depth test.
@fragment
fn impostor_fs(in: Impostor) -> Shaded {
    let eye = frame.eye.xyz;
    let dir = normalize(in.world - eye);
    let oc = eye - in.center;
    let b = dot(oc, dir);
    let c = dot(oc, oc) - in.radius * in.radius;
    let disc = b * b - c;
    if disc < 0.0 {
        discard;
    }
    let t = -b - sqrt(disc);
    let hit = eye + t * dir;
    let n = normalize(hit - in.center);
    let clip = frame.view_proj * vec4(hit, 1.0);
    var out: Shaded;
    out.depth = clamp(clip.z / clip.w, 0.0, 1.0);
    out.colour = finish(shade(in.colour, n, -dir));
    return out;
}

struct Solid {
    @builtin(position) clip: vec4<f32>,
    @location(0) @interpolate(flat) normal: vec3<f32>,
    @location(1) world: vec3<f32>,
}

// One instance per obstacle box (`center` ± `extent`), 36 vertices: face
// `v / 6` (axis `face / 2`, negative side for even faces), two triangles.
@vertex
fn box_vs(
    @builtin(vertex_index) v: u32,
    @location(0) center: vec3<f32>,
    @location(1) extent: vec3<f32>,
) -> Solid {
    let face = v / 6u;
    let axis = face / 2u;
    let side = select(-1.0, 1.0, (face & 1u) == 1u);
    let c = quad_corner(v % 6u);
    var local = vec3(0.0);
    var normal = vec3(0.0);
    local[axis] = side;
    normal[axis] = side;
    local[(axis + 1u) % 3u] = c.x;
    local[(axis + 2u) % 3u] = c.y;
    var out: Solid;
    out.world = center + local * extent;
    out.normal = normal;
    out.clip = frame.view_proj * vec4(out.world, 1.0);
    return out;
}

@fragment
fn box_fs(in: Solid) -> @location(0) vec4<f32> {
    let v = normalize(frame.eye.xyz - in.world);
    return finish(shade(to_linear(frame.solid.rgb), in.normal, v));
}

// The 12 edges of the domain as a line list: edge `v / 2` runs along axis
// `edge / 4`, at the corner the low two bits of `edge % 4` pick on the
// other two axes.
@vertex
fn edge_vs(@builtin(vertex_index) v: u32) -> @builtin(position) vec4<f32> {
    let edge = v / 2u;
    let axis = edge / 4u;
    let pick = edge % 4u;
    var t = vec3(0.0);
    t[axis] = f32(v & 1u);
    t[(axis + 1u) % 3u] = f32(pick & 1u);
    t[(axis + 2u) % 3u] = f32(pick >> 1u);
    let p = mix(frame.domain_min.xyz, frame.domain_max.xyz, t);
    return frame.view_proj * vec4(p, 1.0);
}

@fragment
fn edge_fs() -> @location(0) vec4<f32> {
    return finish(to_linear(frame.edge.rgb));
}
