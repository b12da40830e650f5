// Integration (eq. 18-21) and the box walls (`clamp_to_walls`), per
// particle id. The first kernel of a step also records the step's start
// position and velocity, as `Fluid::step` does before its first evaluation.

@group(1) @binding(0) var<storage, read_write> positions: array<Position>;
@group(1) @binding(1) var<storage, read_write> states: array<State>;
@group(1) @binding(2) var<storage, read_write> flags: array<atomic<u32>>;
// Binding 3, the obstacles (`solids`), is declared in collide.wgsl.

// One axis of `clamp_to_walls`: (position, velocity).
fn wall(x: f32, v: f32, lo: f32, hi: f32) -> vec2<f32> {
    var xk = x;
    var vk = v;
    if xk < lo {
        xk = lo;
        if vk < 0.0 {
            vk *= -params.damping;
        }
    } else if xk > hi {
        xk = hi;
        if vk > 0.0 {
            vk *= -params.damping;
        }
    }
    return vec2<f32>(xk, vk);
}

fn finite(v: vec3<f32>) -> bool {
    let e = bitcast<vec3<u32>>(v) & vec3<u32>(0x7f800000u);
    return all(e != vec3<u32>(0x7f800000u));
}

// `clamp_to_walls`: (position, velocity).
fn walls(x: vec3<f32>, v: vec3<f32>) -> array<vec3<f32>, 2> {
    let wx = wall(x.x, v.x, params.domain_min_x, params.domain_max_x);
    let wy = wall(x.y, v.y, params.domain_min_y, params.domain_max_y);
    let wz = wall(x.z, v.z, params.domain_min_z, params.domain_max_z);
    return array<vec3<f32>, 2>(vec3<f32>(wx.x, wy.x, wz.x), vec3<f32>(wx.y, wy.y, wz.y));
}

// Walls, then with obstacles (collide.wgsl) the obstacles and the walls
// again, as `Fluid::collide`; then the new position and velocity stored; a
// non-finite result raises flag 0 (the host reports the scene as diverged).
fn finish(i: u32, x: vec3<f32>, v: vec3<f32>) {
    var xv = walls(x, v);
    if solids.count > 0u {
        xv = collide(xv[0], xv[1]);
        xv = walls(xv[0], xv[1]);
    }
    let wx = vec2<f32>(xv[0].x, xv[1].x);
    let wy = vec2<f32>(xv[0].y, xv[1].y);
    let wz = vec2<f32>(xv[0].z, xv[1].z);
    positions[i] = Position(wx.x, wy.x, wz.x);
    states[i].vx = wx.y;
    states[i].vy = wy.y;
    states[i].vz = wz.y;
    if !finite(vec3<f32>(wx.x, wy.x, wz.x)) || !finite(vec3<f32>(wx.y, wy.y, wz.y)) {
        atomicOr(&flags[0], 1u);
    }
}

// Records the step's start; returns (start position, start velocity).
fn begin(i: u32) -> array<vec3<f32>, 2> {
    let x = position_vec(positions[i]);
    let s = states[i];
    let v = vec3<f32>(s.vx, s.vy, s.vz);
    states[i].spx = x.x;
    states[i].spy = x.y;
    states[i].spz = x.z;
    states[i].svx = v.x;
    states[i].svy = v.y;
    states[i].svz = v.z;
    return array<vec3<f32>, 2>(x, v);
}

fn acceleration(i: u32) -> vec3<f32> {
    let s = states[i];
    return vec3<f32>(s.ax, s.ay, s.az);
}

// Leapfrog, first half: r = r0 + dt/2 v0, v = v0 + dt/2 a(r0, v0).
@compute @workgroup_size(256)
fn half_step(@builtin(global_invocation_id) gid: vec3<u32>,
             @builtin(num_workgroups) groups: vec3<u32>) {
    let i = thread_index(gid, groups);
    if i >= grid.count {
        return;
    }
    let start = begin(i);
    let half = 0.5 * params.dt;
    finish(i, start[0] + start[1] * half, start[1] + acceleration(i) * half);
}

// Leapfrog, second half: v1 = v0 + dt a(half), r1 = r0 + dt/2 (v0 + v1).
@compute @workgroup_size(256)
fn full_step(@builtin(global_invocation_id) gid: vec3<u32>,
             @builtin(num_workgroups) groups: vec3<u32>) {
    let i = thread_index(gid, groups);
    if i >= grid.count {
        return;
    }
    let s = states[i];
    let x0 = vec3<f32>(s.spx, s.spy, s.spz);
    let v0 = vec3<f32>(s.svx, s.svy, s.svz);
    let v1 = v0 + acceleration(i) * params.dt;
    finish(i, x0 + (v0 + v1) * (0.5 * params.dt), v1);
}

// Explicit Euler: r1 = r0 + dt v0, v1 = v0 + dt a.
@compute @workgroup_size(256)
fn euler_step(@builtin(global_invocation_id) gid: vec3<u32>,
              @builtin(num_workgroups) groups: vec3<u32>) {
    let i = thread_index(gid, groups);
    if i >= grid.count {
        return;
    }
    let start = begin(i);
    finish(i, start[0] + start[1] * params.dt, start[1] + acceleration(i) * params.dt);
}
