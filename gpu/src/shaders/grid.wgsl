// Cell assignment, the counting sort's histogram and scatter, the bitonic
// sort's key setup and gather, and the bucket start offsets. The scatter
// and the gather also copy each particle's velocity into bucket order, so
// the neighbour loops read only sorted, compact arrays.

@group(1) @binding(0) var<storage, read> positions: array<Position>;
@group(1) @binding(1) var<storage, read> states: array<State>;
// Per id: counting sort (bucket, rank in the bucket); bitonic sort (bucket,
// id), padded to `sort_len`, sorted in place by bitonic.wgsl.
@group(1) @binding(2) var<storage, read_write> pairs: array<vec2<u32>>;
@group(1) @binding(3) var<storage, read_write> bucket_start: array<atomic<u32>>;
@group(1) @binding(4) var<storage, read_write> sorted: array<SortedParticle>;
@group(1) @binding(5) var<storage, read_write> sorted_ids: array<u32>;
// Velocity in bucket order (xyz; w is the density, written by sph.wgsl).
@group(1) @binding(6) var<storage, read_write> sorted_vd: array<vec4<f32>>;

const PAD: u32 = 0xffffffffu;

// Zeroes the bucket table (counts for the counting sort, starts for the
// bitonic one).
@compute @workgroup_size(256)
fn clear_table(@builtin(global_invocation_id) gid: vec3<u32>,
               @builtin(num_workgroups) groups: vec3<u32>) {
    let b = thread_index(gid, groups);
    if b < grid.table_len {
        atomicStore(&bucket_start[b], 0u);
    }
}

// Counting sort, histogram: each particle's bucket, and its rank among the
// particles of that bucket (the order of the atomics, nondeterministic).
@compute @workgroup_size(256)
fn count_cells(@builtin(global_invocation_id) gid: vec3<u32>,
               @builtin(num_workgroups) groups: vec3<u32>) {
    let i = thread_index(gid, groups);
    if i >= grid.count {
        return;
    }
    let b = bucket_of(cell_of(position_vec(positions[i])));
    pairs[i] = vec2<u32>(b, atomicAdd(&bucket_start[b], 1u));
}

// Particle `i` (position, bucket `b`, velocity) at sorted index `k`.
fn place(k: u32, i: u32, b: u32) {
    let p = positions[i];
    sorted[k] = SortedParticle(p.x, p.y, p.z, b);
    sorted_ids[k] = i;
    sorted_vd[k] = vec4<f32>(states[i].vx, states[i].vy, states[i].vz, 0.0);
}

// Counting sort, scatter: after the exclusive scan `bucket_start[b]` is the
// first sorted index of bucket `b`.
@compute @workgroup_size(256)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) groups: vec3<u32>) {
    let i = thread_index(gid, groups);
    if i >= grid.count {
        return;
    }
    let e = pairs[i];
    place(atomicLoad(&bucket_start[e.x]) + e.y, i, e.x);
}

// Bitonic sort, keys: (bucket, id) per particle, padded to the power of two
// `sort_len` with pairs that sort last.
@compute @workgroup_size(256)
fn bitonic_keys(@builtin(global_invocation_id) gid: vec3<u32>,
                @builtin(num_workgroups) groups: vec3<u32>) {
    let i = thread_index(gid, groups);
    if i >= grid.sort_len {
        return;
    }
    if i < grid.count {
        pairs[i] = vec2<u32>(bucket_of(cell_of(position_vec(positions[i]))), i);
    } else {
        pairs[i] = vec2<u32>(PAD, PAD);
    }
}

// Bitonic sort, gather: positions and velocities into bucket order.
@compute @workgroup_size(256)
fn bitonic_gather(@builtin(global_invocation_id) gid: vec3<u32>,
                  @builtin(num_workgroups) groups: vec3<u32>) {
    let k = thread_index(gid, groups);
    if k >= grid.count {
        return;
    }
    let e = pairs[k];
    place(k, e.y, e.x);
}

// Bitonic sort, offsets (the seed's offset shader): the first index of each
// run of equal buckets. Empty buckets keep 0, which the neighbour loops
// recognise because `sorted[0]` then belongs to another bucket.
@compute @workgroup_size(256)
fn bitonic_offsets(@builtin(global_invocation_id) gid: vec3<u32>,
                   @builtin(num_workgroups) groups: vec3<u32>) {
    let k = thread_index(gid, groups);
    if k >= grid.count {
        return;
    }
    let b = pairs[k].x;
    if k == 0u {
        atomicStore(&bucket_start[b], 0u);
    } else if pairs[k - 1u].x != b {
        atomicStore(&bucket_start[b], k);
    }
}
