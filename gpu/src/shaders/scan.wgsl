// Exclusive prefix sum in blocks of 1024 (256 invocations, 4 elements
// each), with the block totals written to the next level; `add_offsets`
// adds the scanned totals back.

struct ScanInfo {
    len: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(1) @binding(0) var<storage, read_write> data: array<u32>;
@group(1) @binding(1) var<storage, read_write> sums: array<u32>;
@group(1) @binding(2) var<uniform> info: ScanInfo;

const BLOCK: u32 = 1024u;

var<workgroup> totals: array<u32, 256>;

@compute @workgroup_size(256)
fn scan_blocks(@builtin(local_invocation_id) lid: vec3<u32>,
               @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) groups: vec3<u32>) {
    let block = group_index(wid, groups);
    // Workgroup-uniform: a whole surplus group of a split dispatch leaves.
    if block * BLOCK >= info.len {
        return;
    }
    let base = block * BLOCK + lid.x * 4u;
    var before: array<u32, 4>;
    var run = 0u;
    for (var e = 0u; e < 4u; e++) {
        let idx = base + e;
        var x = 0u;
        if idx < info.len {
            x = data[idx];
        }
        before[e] = run;
        run += x;
    }
    totals[lid.x] = run;
    workgroupBarrier();
    for (var off = 1u; off < WG; off <<= 1u) {
        var add = 0u;
        if lid.x >= off {
            add = totals[lid.x - off];
        }
        workgroupBarrier();
        totals[lid.x] += add;
        workgroupBarrier();
    }
    var prefix = 0u;
    if lid.x > 0u {
        prefix = totals[lid.x - 1u];
    }
    for (var e = 0u; e < 4u; e++) {
        let idx = base + e;
        if idx < info.len {
            data[idx] = prefix + before[e];
        }
    }
    if lid.x == WG - 1u {
        sums[block] = totals[WG - 1u];
    }
}

@compute @workgroup_size(256)
fn add_offsets(@builtin(global_invocation_id) gid: vec3<u32>,
               @builtin(num_workgroups) groups: vec3<u32>) {
    let i = thread_index(gid, groups);
    if i < info.len {
        data[i] += sums[i / BLOCK];
    }
}
