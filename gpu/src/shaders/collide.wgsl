// Contacts with the obstacles, as the core's `Obstacles::collide_linear`
// and `Shape::contact` (3D) compute them, operation for operation: up to
// CONTACT_PASSES passes over the obstacles in id order; in each, every
// obstacle whose bounds overlap the particle's query box `x ± r` (taken at
// the start of the pass) is tested against the particle's current position
// and its contact resolved at once (`resolve`, with the obstacle's velocity
// and `params.damping`); a pass without a contact ends the loop. Appended
// to integrate.wgsl, after obstacle_types.wgsl.

@group(1) @binding(3) var<storage, read> solids: ObstacleSet;

// `spatium::sph::boundary::CONTACT_PASSES`.
const CONTACT_PASSES: u32 = 4u;
// `f32::MAX`, standing in for the core's `f32::INFINITY` as the initial
// face distance (every face of a particle at a finite position is nearer).
const FAR: f32 = 0x1.fffffep+127f;

struct Contact {
    hit: bool,
    normal: vec3<f32>,
    depth: f32,
}

fn no_contact() -> Contact {
    return Contact(false, vec3<f32>(0.0), 0.0);
}

// `Point::dot`: x·x + y·y + z·z, in that order.
fn dot3(a: vec3<f32>, b: vec3<f32>) -> f32 {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

fn corner_a(o: ObstacleRecord) -> vec3<f32> {
    return vec3<f32>(o.ax, o.ay, o.az);
}

fn corner_b(o: ObstacleRecord) -> vec3<f32> {
    return vec3<f32>(o.bx, o.by, o.bz);
}

fn corner_c(o: ObstacleRecord) -> vec3<f32> {
    return vec3<f32>(o.cx, o.cy, o.cz);
}

// `Shape::bounds`: (min, max).
fn bounds_of(o: ObstacleRecord) -> array<vec3<f32>, 2> {
    let a = corner_a(o);
    let b = corner_b(o);
    if o.kind == SPHERE {
        let r = vec3<f32>(o.bx);
        return array<vec3<f32>, 2>(a - r, a + r);
    }
    if o.kind == BOX {
        return array<vec3<f32>, 2>(a, b);
    }
    let c = corner_c(o);
    return array<vec3<f32>, 2>(min(min(a, b), c), max(max(a, b), c));
}

fn sphere_contact(center: vec3<f32>, radius: f32, x: vec3<f32>, r: f32) -> Contact {
    let d = x - center;
    let dist = sqrt(dot3(d, d));
    let reach = radius + r;
    if dist >= reach {
        return no_contact();
    }
    var normal = vec3<f32>(0.0, 1.0, 0.0);
    if dist > 0.0 {
        normal = d * (1.0 / dist);
    }
    return Contact(true, normal, reach - dist);
}

fn box_contact(lo: vec3<f32>, hi: vec3<f32>, x: vec3<f32>, r: f32) -> Contact {
    let q = min(max(x, lo), hi);
    let d = x - q;
    let dist2 = dot3(d, d);
    if dist2 > 0.0 {
        if dist2 >= r * r {
            return no_contact();
        }
        let dist = sqrt(dist2);
        return Contact(true, d * (1.0 / dist), r - dist);
    }
    // Inside (or on the surface): out through the nearest face, preferring
    // faces whose exit point is inside the walls.
    let wlo = vec3<f32>(params.domain_min_x, params.domain_min_y, params.domain_min_z);
    let whi = vec3<f32>(params.domain_max_x, params.domain_max_y, params.domain_max_z);
    var best_open = false;
    var best_dist = FAR;
    var axis = 0u;
    var sign = 1.0;
    for (var k = 0u; k < 3u; k++) {
        for (var f = 0u; f < 2u; f++) {
            var dist = x[k] - lo[k];
            var exit = lo[k] - r;
            var s = -1.0;
            if f == 1u {
                dist = hi[k] - x[k];
                exit = hi[k] + r;
                s = 1.0;
            }
            let open = exit >= wlo[k] && exit <= whi[k];
            if (open && !best_open) || (open == best_open && dist < best_dist) {
                best_open = open;
                best_dist = dist;
                axis = k;
                sign = s;
            }
        }
    }
    var normal = vec3<f32>(0.0);
    normal[axis] = sign;
    return Contact(true, normal, best_dist + r);
}

// `closest_on_triangle`: by the Voronoi region of p.
fn closest_on_triangle(p: vec3<f32>, a: vec3<f32>, b: vec3<f32>, c: vec3<f32>) -> vec3<f32> {
    let ab = b - a;
    let ac = c - a;
    let ap = p - a;
    let d1 = dot3(ab, ap);
    let d2 = dot3(ac, ap);
    if d1 <= 0.0 && d2 <= 0.0 {
        return a;
    }
    let bp = p - b;
    let d3 = dot3(ab, bp);
    let d4 = dot3(ac, bp);
    if d3 >= 0.0 && d4 <= d3 {
        return b;
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return a + ab * (d1 / (d1 - d3));
    }
    let cp = p - c;
    let d5 = dot3(ab, cp);
    let d6 = dot3(ac, cp);
    if d6 >= 0.0 && d5 <= d6 {
        return c;
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return a + ac * (d2 / (d2 - d6));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0 {
        let t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return b + (c - b) * t;
    }
    let inv = 1.0 / (va + vb + vc);
    return a + ab * (vb * inv) + ac * (vc * inv);
}

// `face_normal` (3D): ab × ac normalised, +y if degenerate.
fn face_normal(a: vec3<f32>, b: vec3<f32>, c: vec3<f32>) -> vec3<f32> {
    let u = b - a;
    let w = c - a;
    let n = vec3<f32>(u.y * w.z - u.z * w.y, u.z * w.x - u.x * w.z, u.x * w.y - u.y * w.x);
    let l = sqrt(dot3(n, n));
    if l > 0.0 {
        return n * (1.0 / l);
    }
    return vec3<f32>(0.0, 1.0, 0.0);
}

// A 3D triangle: a two-sided sheet as thick as the collision radius.
fn triangle_contact(a: vec3<f32>, b: vec3<f32>, c: vec3<f32>, x: vec3<f32>, v: vec3<f32>,
                    r: f32) -> Contact {
    let q = closest_on_triangle(x, a, b, c);
    let d = x - q;
    let dist = sqrt(dot3(d, d));
    if dist >= r {
        return no_contact();
    }
    if dist > 1e-4 * r {
        return Contact(true, d * (1.0 / dist), r - dist);
    }
    // On the plane: along the face normal, against the motion.
    let n = face_normal(a, b, c);
    var normal = n;
    if dot3(n, v) > 0.0 {
        normal = -n;
    }
    return Contact(true, normal, r);
}

fn contact_of(o: ObstacleRecord, x: vec3<f32>, v: vec3<f32>, r: f32) -> Contact {
    if o.kind == SPHERE {
        return sphere_contact(corner_a(o), o.bx, x, r);
    }
    if o.kind == BOX {
        return box_contact(corner_a(o), corner_b(o), x, r);
    }
    return triangle_contact(corner_a(o), corner_b(o), corner_c(o), x, v, r);
}

// Every obstacle contact of one particle; returns (position, velocity).
fn collide(x0: vec3<f32>, v0: vec3<f32>) -> array<vec3<f32>, 2> {
    var x = x0;
    var v = v0;
    let r = params.particle_radius;
    let n = min(solids.count, MAX_OBSTACLES);
    for (var round = 0u; round < CONTACT_PASSES; round++) {
        let qlo = x - vec3<f32>(r);
        let qhi = x + vec3<f32>(r);
        var touched = false;
        for (var i = 0u; i < n; i++) {
            let o = solids.items[i];
            let b = bounds_of(o);
            if !(all(b[0] <= qhi) && all(qlo <= b[1])) {
                continue;
            }
            let c = contact_of(o, x, v, r);
            if !c.hit {
                continue;
            }
            // `resolve`: out by the depth; the normal component of the
            // velocity relative to the solid reversed and damped if it
            // points into the solid.
            x = x + c.normal * c.depth;
            let vn = dot3(v - vec3<f32>(o.vx, o.vy, o.vz), c.normal);
            if vn < 0.0 {
                v = v - c.normal * ((1.0 + params.damping) * vn);
            }
            touched = true;
        }
        if !touched {
            break;
        }
    }
    return array<vec3<f32>, 2>(x, v);
}
