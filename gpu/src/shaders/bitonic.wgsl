// Bitonic sort of (bucket, id) pairs, ascending, over a power of two of at
// least 512 elements: blocks of 512 are sorted and merged in workgroup
// memory; merge distances of 512 and more go through global memory, one
// dispatch each.

struct Pass {
    k: u32,
    j: u32,
    pad0: u32,
    pad1: u32,
}

@group(1) @binding(0) var<storage, read_write> pairs: array<vec2<u32>>;
@group(1) @binding(1) var<uniform> pass_info: Pass;

const LOCAL: u32 = 512u;

var<workgroup> local_pairs: array<vec2<u32>, 512>;

fn less(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x < b.x || (a.x == b.x && a.y < b.y);
}

// One compare-exchange of the local block starting at global index `base`.
fn local_exchange(t: u32, base: u32, k: u32, j: u32) {
    let i = 2u * j * (t / j) + t % j;
    let l = i + j;
    let up = ((base + i) & k) == 0u;
    let a = local_pairs[i];
    let b = local_pairs[l];
    if less(b, a) == up {
        local_pairs[i] = b;
        local_pairs[l] = a;
    }
}

fn load_block(base: u32, t: u32) {
    local_pairs[t] = pairs[base + t];
    local_pairs[t + WG] = pairs[base + t + WG];
}

fn store_block(base: u32, t: u32) {
    pairs[base + t] = local_pairs[t];
    pairs[base + t + WG] = local_pairs[t + WG];
}

// Every stage with k <= 512: each block ends sorted, alternately ascending
// and descending, ready for the first global merge.
@compute @workgroup_size(256)
fn local_sort(@builtin(local_invocation_id) lid: vec3<u32>,
              @builtin(workgroup_id) wid: vec3<u32>,
              @builtin(num_workgroups) groups: vec3<u32>) {
    let base = group_index(wid, groups) * LOCAL;
    if base >= grid.sort_len {
        return;
    }
    load_block(base, lid.x);
    for (var k = 2u; k <= LOCAL; k <<= 1u) {
        for (var j = k >> 1u; j > 0u; j >>= 1u) {
            workgroupBarrier();
            local_exchange(lid.x, base, k, j);
        }
    }
    workgroupBarrier();
    store_block(base, lid.x);
}

// The stages j = 256 .. 1 of merge step k (k >= 1024).
@compute @workgroup_size(256)
fn local_merge(@builtin(local_invocation_id) lid: vec3<u32>,
               @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) groups: vec3<u32>) {
    let base = group_index(wid, groups) * LOCAL;
    if base >= grid.sort_len {
        return;
    }
    load_block(base, lid.x);
    for (var j = LOCAL >> 1u; j > 0u; j >>= 1u) {
        workgroupBarrier();
        local_exchange(lid.x, base, pass_info.k, j);
    }
    workgroupBarrier();
    store_block(base, lid.x);
}

// One stage (k, j) with j >= 512, one compare-exchange per invocation.
@compute @workgroup_size(256)
fn global_merge(@builtin(global_invocation_id) gid: vec3<u32>,
                @builtin(num_workgroups) groups: vec3<u32>) {
    let t = thread_index(gid, groups);
    if t >= grid.sort_len / 2u {
        return;
    }
    let k = pass_info.k;
    let j = pass_info.j;
    let i = 2u * j * (t / j) + t % j;
    let l = i + j;
    let up = (i & k) == 0u;
    let a = pairs[i];
    let b = pairs[l];
    if less(b, a) == up {
        pairs[i] = b;
        pairs[l] = a;
    }
}
