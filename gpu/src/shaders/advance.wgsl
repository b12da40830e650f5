// `Obstacles::advance(dt)` on the device: every obstacle with a non-zero
// velocity translated by its displacement (`Shape::translated`), once per
// step, before the step's first integration kernel.

@group(1) @binding(0) var<storage, read_write> moving: ObstacleSet;

@compute @workgroup_size(64)
fn advance_obstacles(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= min(moving.count, MAX_OBSTACLES) {
        return;
    }
    let o = moving.items[i];
    if o.vx == 0.0 && o.vy == 0.0 && o.vz == 0.0 {
        return;
    }
    moving.items[i].ax = o.ax + o.dx;
    moving.items[i].ay = o.ay + o.dy;
    moving.items[i].az = o.az + o.dz;
    if o.kind != SPHERE {
        moving.items[i].bx = o.bx + o.dx;
        moving.items[i].by = o.by + o.dy;
        moving.items[i].bz = o.bz + o.dz;
    }
    if o.kind == TRIANGLE {
        moving.items[i].cx = o.cx + o.dx;
        moving.items[i].cy = o.cy + o.dy;
        moving.items[i].cz = o.cz + o.dz;
    }
}
