#!/usr/bin/env python3
"""Writes the seed corpora of the `uniform_hash`, `hhg` and `kdtree` fuzz
targets.

Each seed is encoded the way `arbitrary` 1.x decodes the target's `Input`
(fuzz_targets/uniform_hash.rs, fuzz_targets/hhg.rs, fuzz_targets/kdtree.rs):
u8/i8/bool one byte,
u32/f32 four bytes little-endian, an enum a u32 whose `(v * variants) >> 32`
is the variant index, a collection one "keep going" byte (1) before each
element and a 0 after the last. Keep this file in step with the types in the
targets.

Usage: python3 gen_corpus.py [OUT_DIR [HHG_OUT_DIR [KDTREE_OUT_DIR [PERIODIC_OUT_DIR]]]]
       (default: corpus/uniform_hash, corpus/hhg, corpus/kdtree and
       corpus/periodic; the periodic seeds are at the end of this file)
"""

import os
import struct
import sys


def u8(v):
    return bytes([v & 0xFF])


def i8(v):
    return struct.pack("<b", v)


def boolean(v):
    return u8(1 if v else 0)


def f32(v):
    return struct.pack("<f", v)


def f32_bits(bits):
    return struct.pack("<I", bits)


def variant(index, count):
    v = (index * (1 << 32) + count - 1) // count
    assert (v * count) >> 32 == index
    return struct.pack("<I", v)


def vec(items):
    return b"".join(b"\x01" + it for it in items) + b"\x00"


def option(item):
    return b"\x00" if item is None else b"\x01" + item


# Scale: Unit, Pow2(i8), Raw(f32)
def scale_unit():
    return variant(0, 3)


def scale_pow2(k):
    return variant(1, 3) + i8(k)


def scale_raw(x):
    return variant(2, 3) + f32(x)


# RadiusIn: Lattice(u8) -> (j + 1) / 4 * scale, Raw(f32), Special(u8)
def radius_lattice(j):
    return variant(0, 3) + u8(j)


def radius_raw(x):
    return variant(1, 3) + f32(x)


def radius_special(k):
    return variant(2, 3) + u8(k)


# Coord: Lattice(i8), Nudge(i8, i8), Raw(f32), Special(u8), Edge(bool, bool, i8)
def c_lattice(i):
    return variant(0, 5) + i8(i)


def c_nudge(i, n):
    return variant(1, 5) + i8(i) + i8(n)


def c_raw(x):
    return variant(2, 5) + f32(x)


def c_raw_bits(bits):
    return variant(2, 5) + f32_bits(bits)


def c_special(k):
    return variant(3, 5) + u8(k)


def c_edge(neg, double, off):
    return variant(4, 5) + boolean(neg) + boolean(double) + i8(off)


def exotic(index, axis, coord):
    return u8(index) + u8(axis) + coord


def lat(p):
    return b"".join(i8(c) for c in p)


# Op: Build, Move, Neighbor, Within, Pairs, Lists, Clear
OPS = 7


def build(points, radius, scale=None, exotics=()):
    return (
        variant(0, OPS)
        + vec([lat(p) for p in points])
        + vec(list(exotics))
        + (scale or scale_unit())
        + radius
    )


# MoveLen: Same, Same2, Same3, Resize(u8)
def move(moves, relative, exotics=(), resize=None):
    length = variant(0, 4) if resize is None else variant(3, 4) + u8(resize)
    return (
        variant(1, OPS)
        + vec([u8(i) + lat(d) for i, d in moves])
        + boolean(relative)
        + vec(list(exotics))
        + length
    )


def neighbor(id_, all_ids):
    return variant(2, OPS) + u8(id_) + boolean(all_ids)


def within(at, ex=None):
    return variant(3, OPS) + lat(at) + option(None if ex is None else u8(ex[0]) + ex[1])


def pairs():
    return variant(4, OPS)


# BufLen: Exact, Short(u8), Long(u8)
def exact():
    return variant(0, 3)


def short(k):
    return variant(1, 3) + u8(k)


def long(k):
    return variant(2, 3) + u8(k)


def lists(offsets, indices):
    return variant(5, OPS) + offsets + indices


def clear(mask):
    return variant(6, OPS) + u8(mask)


# Input: table index into [8, 16, 1, 2, 4, 8, 16, 64], then (3D?, op) pairs.
def seed(table, ops):
    return u8(table) + b"".join(b"\x01" + boolean(three) + op for three, op in ops)


def cube(n, step=1, offset=0):
    r = range(n)
    return [(offset + x * step, offset + y * step, offset + z * step) for z in r for y in r for x in r]


SEEDS = {
    # A 3x3x3 block of quarter-lattice points, radius 1.25 (5 quarters):
    # many pairs, some exactly at the radius; every query kind.
    "dense_3d": seed(
        1,
        [
            (True, build(cube(3, 2), radius_lattice(4))),
            (True, pairs()),
            (True, neighbor(13, True)),
            (True, within((1, 1, 1))),
            (True, within((2, 2, 2), (0, c_nudge(2, 1)))),
            (True, lists(exact(), exact())),
            (True, lists(exact(), short(3))),
            (True, lists(short(0), long(1))),
            (True, move([(0, (1, 0, 0)), (26, (-1, -1, 0)), (5, (8, 8, 8))], True)),
            (True, pairs()),
            (True, clear(0b0101)),
            (True, neighbor(3, False)),
        ],
    ),
    # One table slot: every cell collides, BucketHash (K = 4) fills up.
    "collisions_2d": seed(
        2,
        [
            (False, build([(x * 3, y * 3, 0) for y in range(3) for x in range(4)], radius_lattice(3))),
            (False, build([(0, 0, 0), (4, 0, 0), (0, 4, 0), (9, 9, 0)], radius_lattice(4))),
            (False, pairs()),
            (False, lists(exact(), exact())),
            (False, neighbor(0, True)),
            (False, move([(3, (1, 1, 0))], True)),
        ],
    ),
    # Invalid input: NaN and infinite coordinates, bad radii, too many points.
    "invalid_input": seed(
        0,
        [
            (True, build(cube(2), radius_lattice(3))),
            (True, build(cube(2), radius_lattice(3), exotics=[exotic(1, 0, c_special(2))])),
            (True, build(cube(2), radius_lattice(3), exotics=[exotic(3, 2, c_special(4))])),
            (True, build(cube(2), radius_special(0))),
            (True, build(cube(2), radius_special(3))),
            (True, build(cube(2), radius_special(2))),
            (True, build(cube(2), radius_raw(1e-39))),
            (True, build(cube(4), radius_lattice(2))),
            (False, build([(i, -i, 0) for i in range(50)], radius_lattice(2))),
            (True, within((0, 0, 0), (1, c_special(3)))),
            (True, neighbor(200, False)),
            (True, pairs()),
        ],
    ),
    # Coordinates at the edge of the grid's range (2^14 cells either side).
    "range_edge": seed(
        4,
        [
            (True, build([(0, 0, 0), (1, 0, 0), (0, 0, 0)], radius_lattice(3),
                         exotics=[exotic(0, 0, c_edge(True, False, 0)),
                                  exotic(2, 0, c_edge(False, False, -1))])),
            (True, build([(0, 0, 0), (1, 0, 0), (0, 0, 0)], radius_lattice(3),
                         exotics=[exotic(0, 1, c_edge(True, False, 2)),
                                  exotic(2, 1, c_edge(False, False, 2))])),
            (True, build([(0, 0, 0), (4, 0, 0)], radius_lattice(3),
                         exotics=[exotic(1, 2, c_edge(False, True, -3))])),
            (True, move([], False, exotics=[exotic(0, 0, c_edge(False, False, 5))])),
            (True, within((0, 0, 0), (0, c_edge(True, True, 0)))),
            (False, build([(0, 0, 0), (2, 2, 0)], radius_lattice(0),
                          exotics=[exotic(1, 0, c_special(11))])),
        ],
    ),
    # LinkedHash::update: relative and absolute moves, a wrong length.
    "linked_update": seed(
        1,
        [
            (False, build([(i * 2, (i * 7) % 5, 0) for i in range(10)], radius_lattice(5))),
            (False, move([(0, (1, 0, 0)), (1, (0, 1, 0)), (9, (-3, -3, 0))], True)),
            (False, move([(2, (20, 20, 0)), (4, (-20, 0, 0))], False)),
            (False, neighbor(2, True)),
            (False, move([(5, (0, 0, 0))], True, resize=9)),
            (False, move([(6, (1, 1, 0))], True, exotics=[exotic(6, 1, c_special(2))])),
            (False, clear(0b0100)),
            (False, move([], True)),
            (False, pairs()),
        ],
    ),
    # Pairs exactly at the radius (strict test) at several power-of-two scales.
    "ties": seed(
        0,
        [
            (True, build([(0, 0, 0), (4, 0, 0), (0, 3, 4), (-4, 0, 0)], radius_lattice(3),
                         scale_pow2(-3))),
            (True, lists(exact(), exact())),
            (False, build([(0, 0, 0), (3, 4, 0), (6, 8, 0), (3, 0, 0)], radius_lattice(4),
                          scale_pow2(20))),
            (False, neighbor(1, True)),
            (False, build([(0, 0, 0), (3, 4, 0)], radius_lattice(4), scale_pow2(-30))),
            (False, within((3, 4, 0), (0, c_nudge(3, -1)))),
        ],
    ),
    # Raw floats: subnormals, huge values, an odd scale.
    "raw_floats": seed(
        7,
        [
            (True, build(cube(2, 3, -2), radius_lattice(7), scale_raw(0.1),
                         exotics=[exotic(0, 0, c_raw_bits(1)), exotic(1, 1, c_raw(-0.0)),
                                  exotic(2, 2, c_raw(3.0e-8))])),
            (True, build(cube(2), radius_raw(1e18), exotics=[exotic(5, 0, c_special(9))])),
            (True, build(cube(2), radius_raw(3.0e-20), scale_pow2(-66))),
            (False, build([(1, 1, 0), (1, 2, 0)], radius_raw(2.5e-7), scale_raw(1e-7))),
            (False, within((1, 1, 0))),
        ],
    ),
    # Both dimensions interleaved, partial clears, rebuilds.
    "mixed_sequence": seed(
        5,
        [
            (True, build(cube(2, 1, 1), radius_lattice(2))),
            (False, build([(0, 0, 0), (1, 1, 0), (2, 0, 0), (5, 5, 0)], radius_lattice(5))),
            (True, clear(0b1010)),
            (False, clear(0b0001)),
            (True, neighbor(1, True)),
            (False, within((1, 0, 0))),
            (True, build(cube(2, 1, 1), radius_lattice(2))),
            (False, move([(3, (-5, -5, 0))], True)),
            (True, lists(long(2), long(0))),
            (False, lists(exact(), short(1))),
        ],
    ),
}


# ---------------------------------------------------------------------------
# hhg (fuzz_targets/hhg.rs)
# ---------------------------------------------------------------------------


# Lattice { pe: i8, pos: [i8; 3], se: i8, edge: [u8; 3] }: corner
# pos / 4 * 2^(pe mod 12 - 6), edges edge / 4 * 2^(se mod 16 - 8).
def h_lat(pos, edge, pexp=0, sexp=0):
    return i8(pexp + 6) + lat(pos) + i8(sexp + 8) + b"".join(u8(e) for e in edge)


# Kind: Lattice, Lattice2, Lattice3, Copy(u8, Lattice), Touch { of, axis, lat }
def k_lat(pos, edge, pexp=0, sexp=0):
    return variant(0, 5) + h_lat(pos, edge, pexp, sexp)


def k_copy(of):
    return variant(3, 5) + u8(of) + h_lat((0, 0, 0), (1, 1, 1))


def k_touch(of, axis, edge, sexp=0):
    return variant(4, 5) + u8(of) + u8(axis) + h_lat((0, 0, 0), edge, 0, sexp)


# Value: Raw(f32), Special(u8), Edge(bool, i8); Override { slot: u8 (lo x, lo y,
# lo z, hi x, hi y, hi z), value }
def v_raw(x):
    return variant(0, 3) + f32(x)


def v_raw_bits(bits):
    return variant(0, 3) + f32_bits(bits)


def v_special(k):
    return variant(1, 3) + u8(k)


def v_edge(neg, off):
    return variant(2, 3) + boolean(neg) + i8(off)


def h_box(kind, overrides=()):
    return kind + vec([u8(slot) + value for slot, value in overrides])


def bx(pos, edge, pexp=0, sexp=0, overrides=()):
    return h_box(k_lat(pos, edge, pexp, sexp), overrides)


# Op: Insert, InsertUnbounded, Update, Remove, UpdateAll, Query, Clear, Pairs,
# SortRecords
H_OPS = 9


def h_insert(id_, box):
    return variant(0, H_OPS) + u8(id_) + box


def h_insert_unbounded(id_, box):
    return variant(1, H_OPS) + u8(id_) + box


def h_update(id_, box):
    return variant(2, H_OPS) + u8(id_) + box


def h_remove(id_):
    return variant(3, H_OPS) + u8(id_)


# LenIn: Full, Full2, Full3, Short(u8), Long(u8)
def len_full():
    return variant(0, 5)


def len_short(k):
    return variant(3, 5) + u8(k)


def len_long(k):
    return variant(4, 5) + u8(k)


def h_update_all(incremental, moves, length=None, nan_fill=True):
    return (
        variant(4, H_OPS)
        + boolean(incremental)
        + vec([u8(i) + box for i, box in moves])
        + (length or len_full())
        + boolean(nan_fill)
    )


def h_query(box):
    return variant(5, H_OPS) + box


def h_clear():
    return variant(6, H_OPS)


def h_pairs():
    return variant(7, H_OPS)


def h_sort():
    return variant(8, H_OPS)


# Input: factor index into [2, 1.25, 8, 1.5, 3, 64], density index into
# [0.125, 1, 4, 0.01, 1024], initial log2 2 + k % 3, small-N threshold
# k % 41, arena index into [0, 100, 1000, 5000, 50000] words, arena fill
# word, a raw hierarchy factor, then (3D?, op) pairs.
def h_seed(ops, factor=0, density=0, log2=2, small_n=32, arena=4, fill=0, raw_factor=2.0):
    return (
        u8(factor)
        + u8(density)
        + u8(log2)
        + u8(small_n)
        + u8(arena)
        + struct.pack("<I", fill)
        + f32(raw_factor)
        + b"".join(b"\x01" + boolean(three) + op for three, op in ops)
    )


def both(ops):
    """The same operations on the 2D and the 3D world."""
    return [(False, op) for op in ops] + [(True, op) for op in ops]


# Boxes from 2^-6 to 2^5 in edge, some coinciding, some touching, a point.
SIZES = [
    bx((0, 0, 0), (4, 4, 4)),
    bx((4, 0, 0), (4, 4, 4)),
    bx((0, 0, 0), (4, 4, 4)),
    bx((1, 1, 1), (1, 1, 1), -2, -6),
    bx((0, 0, 0), (7, 3, 1), 0, 5),
    bx((-8, -8, -8), (0, 0, 0)),
    bx((2, 2, 2), (3, 3, 3), 2, 2),
    bx((-3, 5, 1), (2, 1, 0), -1, -3),
    h_box(k_copy(4)),
    h_box(k_touch(0, 1, (2, 2, 2))),
    h_box(k_touch(6, 0, (1, 1, 1), -4)),
    bx((20, -20, 7), (15, 15, 15), 5, 7),
]

HHG_SEEDS = {
    # Many sizes, so many grids, straight from the first box.
    "many_sizes": h_seed(
        both(
            [h_insert(i, b) for i, b in enumerate(SIZES)]
            + [
                h_pairs(),
                h_query(bx((0, 0, 0), (1, 1, 1))),
                h_update(3, bx((5, 5, 5), (2, 2, 2), 0, 3)),
                h_update(6, bx((0, 0, 0), (0, 0, 0))),
                h_update_all(True, [(1, bx((1, 1, 1), (3, 3, 3), 0, -5))]),
                h_update_all(False, [(2, bx((-1, -1, -1), (9, 9, 9), 0, 1))]),
                h_remove(0),
                h_remove(0),
                h_sort(),
                h_pairs(),
            ]
        ),
        small_n=0,
    ),
    # The small-N path, the switch to the grids, a clear, the path again.
    "small_n_switch": h_seed(
        both(
            [h_insert(i, b) for i, b in enumerate(SIZES[:9])]
            + [h_remove(2), h_insert(2, SIZES[9]), h_insert(20, SIZES[10]), h_pairs(), h_clear()]
            + [h_insert(i + 10, b) for i, b in enumerate(SIZES[:5])]
        ),
        small_n=8,
        arena=3,
    ),
    # One small grid fits: saturation, fallback to larger grids and to the
    # unbounded container; factor 1.25.
    "starved_arena": h_seed(
        both(
            [h_insert(i, bx((i % 5, i // 5, i % 3), (1 + i % 3, 1, 2), i % 4 - 2, i % 7 - 3))
             for i in range(24)]
            + [h_pairs(), h_update_all(True, []), h_update_all(False, [(5, SIZES[11])])]
        ),
        factor=1,
        log2=0,
        small_n=0,
        arena=2,
    ),
    # No arena: unbounded objects (half-spaces, slabs, everything) and bad
    # input of every kind.
    "unbounded_and_invalid": h_seed(
        both(
            [
                h_insert(0, SIZES[0]),
                h_insert(1, SIZES[4]),
                h_insert_unbounded(2, bx((0, 0, 0), (1, 1, 1), overrides=[(0, v_special(4))])),
                h_insert_unbounded(3, bx((0, 0, 0), (1, 1, 1), overrides=[(4, v_special(3)),
                                                                          (1, v_special(4))])),
                h_insert_unbounded(4, bx((0, 0, 0), (1, 1, 1), overrides=[(0, v_special(3))])),
                h_insert_unbounded(5, bx((0, 0, 0), (1, 1, 1), overrides=[(3, v_special(2))])),
                h_insert(6, bx((0, 0, 0), (1, 1, 1), overrides=[(2, v_special(2))])),
                h_insert(7, bx((3, 0, 0), (1, 1, 1), overrides=[(3, v_raw(-1.0))])),
                h_insert(8, bx((0, 0, 0), (1, 1, 1), overrides=[(3, v_special(3))])),
                h_insert(38, SIZES[1]),
                h_insert(0, SIZES[1]),
                h_update(9, SIZES[1]),
                h_update(3, bx((0, 0, 0), (1, 1, 1), overrides=[(5, v_special(3))])),
                h_query(bx((0, 0, 0), (1, 1, 1), overrides=[(0, v_special(4)), (3, v_special(3))])),
                h_query(bx((0, 0, 0), (1, 1, 1), overrides=[(3, v_special(4))])),
                h_update_all(True, [(3, bx((0, 0, 0), (1, 1, 1), overrides=[(0, v_special(2))]))]),
                h_update_all(False, [], len_short(1)),
                h_update_all(True, [], len_long(3), nan_fill=False),
                h_remove(3),
                h_pairs(),
            ]
        ),
        small_n=0,
        arena=0,
    ),
    # Raw and special coordinates: huge, subnormal, -0.0, the range limit.
    "range_and_raw": h_seed(
        both(
            [
                h_insert(0, bx((1, 1, 1), (2, 2, 2))),
                h_insert(1, bx((0, 0, 0), (1, 1, 1), overrides=[(0, v_special(10)),
                                                                (3, v_special(10))])),
                h_insert(2, bx((0, 0, 0), (1, 1, 1), overrides=[(0, v_edge(False, -2)),
                                                                (3, v_edge(False, -2))])),
                h_insert(3, bx((0, 0, 0), (1, 1, 1), overrides=[(1, v_edge(True, 2)),
                                                                (4, v_edge(True, 1))])),
                h_insert(4, bx((0, 0, 0), (0, 0, 0), overrides=[(0, v_special(1)),
                                                                (3, v_special(0))])),
                h_insert(5, bx((0, 0, 0), (0, 0, 0), overrides=[(3, v_raw_bits(1)),
                                                                (4, v_special(8))])),
                h_insert(6, bx((0, 0, 0), (1, 1, 1), overrides=[(0, v_special(6)),
                                                                (3, v_special(5))])),
                h_insert(7, bx((0, 0, 0), (1, 1, 1), overrides=[(2, v_special(12)),
                                                                (5, v_special(12))])),
                h_update(0, bx((0, 0, 0), (1, 1, 1), overrides=[(0, v_special(14)),
                                                                (3, v_special(14))])),
                h_query(bx((0, 0, 0), (1, 1, 1), overrides=[(0, v_special(6)),
                                                            (3, v_special(5))])),
                h_pairs(),
            ]
        ),
        factor=2,
        small_n=0,
    ),
    # A tiny first box (c0 = 1e-30 * sqrt(f)): lattice boxes far out are then
    # out of range.
    "tiny_first_box": h_seed(
        both(
            [
                h_insert(0, bx((0, 0, 0), (0, 0, 0), overrides=[(3, v_special(19))])),
                h_insert(1, bx((100, 0, 0), (0, 0, 0), 5)),
                h_insert(2, bx((1, 0, 0), (1, 0, 0), -6, -8)),
                h_insert(3, bx((0, 0, 0), (4, 4, 4), 0, 7)),
                h_update_all(True, [(0, bx((9, 9, 9), (0, 0, 0), 5))]),
                h_pairs(),
            ]
        ),
        factor=5,
        small_n=0,
        arena=3,
    ),
    # Growth: density 0.01 with 4 cells per axis, many boxes in one grid.
    "growth": h_seed(
        both(
            [h_insert(i, bx((i % 6, (i // 6) % 6, i % 4), (2, 2, 2), -1, -2)) for i in range(30)]
            + [h_pairs(), h_update_all(False, []), h_remove(7), h_remove(8), h_sort(), h_pairs()]
        ),
        density=3,
        log2=0,
        small_n=0,
        fill=0xFFFF_FFFF,
    ),
}


# ---------------------------------------------------------------------------
# kdtree (fuzz_targets/kdtree.rs)
# ---------------------------------------------------------------------------


# Kind: Lattice, Lattice2, Lattice3, Point(Lattice), Copy(u8, Lattice),
# Touch { of, axis, lat }. Lattice as for hhg (h_lat).
KD_KINDS = 6


def kd_lat(pos, edge, pexp=0, sexp=0):
    return variant(0, KD_KINDS) + h_lat(pos, edge, pexp, sexp)


def kd_point(pos, pexp=0):
    return variant(3, KD_KINDS) + h_lat(pos, (0, 0, 0), pexp)


def kd_copy(of):
    return variant(4, KD_KINDS) + u8(of) + h_lat((0, 0, 0), (1, 1, 1))


def kd_touch(of, axis, edge, sexp=0):
    return variant(5, KD_KINDS) + u8(of) + u8(axis) + h_lat((0, 0, 0), edge, 0, sexp)


# Value: Raw(f32), Special(u8) into [0, -0, NaN, inf, -inf, MAX, -MAX,
# MIN_POSITIVE, 1e-40, 1e-45, 1e30, -1e30, 1e12, 1e6, -1e6, 0.5, EPSILON,
# 3e38, -2e9, 1e-30]; Override { slot: u8 (lo x, lo y, lo z, hi x, ...), value }
def kv_raw(x):
    return variant(0, 2) + f32(x)


def kv_special(k):
    return variant(1, 2) + u8(k)


def kd_box(kind, overrides=()):
    return kind + vec([u8(slot) + value for slot, value in overrides])


def kbx(pos, edge, pexp=0, sexp=0, overrides=()):
    return kd_box(kd_lat(pos, edge, pexp, sexp), overrides)


# RootIn: Auto, Auto2, Cell { pe: i8, pos: [i8; 3], edge: [u8; 3] }, Raw([f32; 6])
def root_auto():
    return variant(0, 4)


def root_cell(pos, edge, pexp=0):
    return variant(2, 4) + i8(pexp + 6) + lat(pos) + b"".join(u8(e) for e in edge)


def root_raw(lo, hi):
    return variant(3, 4) + b"".join(f32(v) for v in list(lo) + list(hi))


# CfgIn { split: u8 (0 none, else gain split - 1), octree, bits: u8 (mod
# max + 2), root, comparison, reuse }
def kcfg(split=1, octree=False, bits=0, root=None, comparison=False, reuse=False):
    return (
        u8(split)
        + boolean(octree)
        + u8(bits)
        + (root or root_auto())
        + boolean(comparison)
        + boolean(reuse)
    )


# Op: Insert, Update, Nudge, Remove, Query, Clear, Pairs, SetConfig, Batch,
# Rebuild, ClearTree
K_OPS = 11


def k_insert(id_, box):
    return variant(0, K_OPS) + u8(id_) + box


def k_update(id_, box):
    return variant(1, K_OPS) + u8(id_) + box


def k_nudge(id_, delta, exp):
    return variant(2, K_OPS) + u8(id_) + lat(delta) + u8(exp)


def k_remove(id_):
    return variant(3, K_OPS) + u8(id_)


def k_query(box):
    return variant(4, K_OPS) + box


def k_clear():
    return variant(5, K_OPS)


def k_pairs():
    return variant(6, K_OPS)


def k_set_config(cfg):
    return variant(7, K_OPS) + cfg


def k_batch(boxes, cfg=None):
    return variant(8, K_OPS) + option(cfg) + vec(boxes)


def k_rebuild(moves):
    return variant(9, K_OPS) + vec([u8(i) + lat(d) + u8(e) for i, d, e in moves])


def k_clear_tree():
    return variant(10, K_OPS)


# Input: code (0 u32, 1 u64, 2 u128), records index into [12, 36, 72, 288, 1],
# batch tree records (k % 129), configuration, then (3D?, op) pairs.
def k_seed(ops, code=1, records=3, batch_cap=128, cfg=None):
    return (
        u8(code)
        + u8(records)
        + u8(batch_cap)
        + (cfg or kcfg())
        + b"".join(b"\x01" + boolean(three) + op for three, op in ops)
    )


# Coinciding, touching, nested boxes, points, edges 2^-6 to 2^5.
K_BOXES = [
    kbx((0, 0, 0), (4, 4, 4)),
    kbx((4, 0, 0), (4, 4, 4)),
    kbx((0, 0, 0), (4, 4, 4)),
    kbx((1, 1, 1), (1, 1, 1), -2, -6),
    kbx((0, 0, 0), (7, 3, 1), 0, 5),
    kd_box(kd_point((3, 3, 3))),
    kbx((2, 2, 2), (3, 3, 3), 2, 2),
    kbx((-3, 5, 1), (2, 1, 0), -1, -3),
    kd_box(kd_copy(4)),
    kd_box(kd_touch(0, 1, (2, 2, 2))),
    kd_box(kd_touch(6, 0, (1, 1, 1), -4)),
    kbx((20, -20, 7), (15, 15, 15), 5, 7),
]

# Finite boxes far from the lattice: huge, tiny, -0.0, around 1e6.
K_EXOTIC = [
    kbx((0, 0, 0), (1, 1, 1), overrides=[(0, kv_special(6)), (3, kv_special(5))]),
    kbx((0, 0, 0), (1, 1, 1), overrides=[(1, kv_special(10)), (4, kv_special(10))]),
    kbx((0, 0, 0), (0, 0, 0), overrides=[(0, kv_special(1)), (3, kv_special(0))]),
    kbx((0, 0, 0), (0, 0, 0), overrides=[(3, kv_special(8)), (4, kv_special(9))]),
    kbx((0, 0, 0), (1, 1, 1), overrides=[(0, kv_special(13)), (3, kv_raw(1.0e6 + 0.0625))]),
    kbx((0, 0, 0), (1, 1, 1), overrides=[(2, kv_special(14)), (5, kv_raw(-999999.0))]),
    kbx((0, 0, 0), (1, 1, 1), overrides=[(1, kv_special(11)), (4, kv_special(17))]),
    kbx((1, 1, 1), (1, 1, 1), overrides=[(3, kv_raw(0.25 + 1.0e-7))]),
]

# Bad boxes: NaN, infinities, inverted.
K_BAD = [
    kbx((0, 0, 0), (1, 1, 1), overrides=[(2, kv_special(2))]),
    kbx((0, 0, 0), (1, 1, 1), overrides=[(3, kv_special(3))]),
    kbx((0, 0, 0), (1, 1, 1), overrides=[(0, kv_special(4))]),
    kbx((0, 0, 0), (1, 1, 1), overrides=[(0, kv_special(3))]),
    kbx((3, 0, 0), (1, 1, 1), overrides=[(3, kv_raw(-1.0))]),
]

KD_SEEDS = {
    # The default configuration: inserts, pairs, moves, queries, removals.
    "broad_default": k_seed(
        both(
            [k_insert(i, b) for i, b in enumerate(K_BOXES)]
            + [
                k_pairs(),
                k_query(kbx((0, 0, 0), (1, 1, 1))),
                k_nudge(3, (1, -1, 2), 3),
                k_update(6, kbx((0, 0, 0), (0, 0, 0))),
                k_remove(0),
                k_remove(0),
                k_pairs(),
            ]
        ),
    ),
    # Twelve records for 36 ids: CapacityExceeded, then a removal frees one.
    "broad_full": k_seed(
        both(
            [k_insert(i, K_BOXES[i % len(K_BOXES)]) for i in range(14)]
            + [k_pairs(), k_remove(5), k_insert(20, K_BOXES[3]), k_insert(21, K_BOXES[4]),
               k_pairs()]
        ),
        code=0,
        records=0,
    ),
    # Temporal reuse: small moves between pair enumerations.
    "reuse_nudges": k_seed(
        both(
            [k_insert(i, kbx((i % 6, (i // 6) % 6, i % 4), (2, 2, 2), -1, -2)) for i in range(24)]
            + [k_pairs()]
            + [op for i in range(8) for op in (k_nudge(i * 3, (1, 0, -1), 6), k_pairs())]
        ),
        code=0,
        cfg=kcfg(reuse=True),
    ),
    # A small fixed root: most boxes clamped; octree cells, u128 codes.
    "small_root_octree": k_seed(
        both(
            [k_insert(i, b) for i, b in enumerate(K_BOXES)]
            + [k_pairs(), k_query(kbx((-24, -24, -24), (8, 8, 8), 4, 4)), k_pairs()]
        ),
        code=2,
        cfg=kcfg(octree=True, root=root_cell((0, 0, 0), (3, 3, 3))),
    ),
    # Huge, tiny and bad boxes; bad queries; ids out of range.
    "special_values": k_seed(
        both(
            [k_insert(i, b) for i, b in enumerate(K_BOXES[:4] + K_EXOTIC)]
            + [k_insert(20 + i, b) for i, b in enumerate(K_BAD)]
            + [
                k_insert(38, K_BOXES[1]),
                k_insert(0, K_BOXES[1]),
                k_update(30, K_BOXES[1]),
                k_update(2, K_BAD[0]),
                k_query(K_BAD[1]),
                k_query(K_EXOTIC[0]),
                k_pairs(),
            ]
        ),
        cfg=kcfg(split=4),
    ),
    # Configuration changes: no split, comparison sort, too many bits
    # (u64: 22 per axis in 3D), a gain out of range, invalid roots.
    "config_changes": k_seed(
        both(
            [k_insert(i, b) for i, b in enumerate(K_BOXES)]
            + [
                k_set_config(kcfg(split=0, comparison=True)),
                k_pairs(),
                k_set_config(kcfg(bits=22)),
                k_pairs(),
                k_insert(20, K_BOXES[0]),
                k_query(K_BOXES[0]),
                k_clear(),
                k_pairs(),
                k_set_config(kcfg(split=40, bits=1)),
                k_set_config(kcfg(root=root_raw((0, 0, 0), (1, 0, 1)))),
                k_set_config(kcfg(root=root_raw((0, 0, 0), (1, -1, 1)))),
                k_set_config(kcfg(root=root_raw((0, float("nan"), 0), (1, 1, 1)))),
                k_insert(1, K_BOXES[1]),
                k_insert(2, K_BOXES[2]),
                k_pairs(),
            ]
        ),
    ),
    # Batch builds: duplicates, touching boxes, points, exotic values; a
    # refused build (NaN box, too many boxes), rebuilds with moved boxes.
    "batch": k_seed(
        both(
            [
                k_batch(K_BOXES + K_EXOTIC),
                k_rebuild([(1, (1, 0, 0), 2), (5, (0, -1, 0), 8)]),
                k_batch(K_BOXES + K_BAD[:1]),
                k_batch([K_BOXES[0]] * 40),
                k_batch(K_BOXES, kcfg(split=0, reuse=True)),
                k_rebuild([(2, (1, 1, 1), 10)]),
                k_batch(K_BOXES, kcfg(bits=22)),
                k_batch(K_BOXES, kcfg(octree=True, root=root_cell((-2, -2, -2), (1, 1, 1)))),
                k_clear_tree(),
                k_batch([]),
            ]
        ),
        batch_cap=32,
    ),
}


# --- periodic (fuzz_targets/periodic.rs) -----------------------------------
# Case::Broad { kind: u8, three_d: bool, mask: u8, ops: Vec<PeriodicOp> };
# PeriodicOp: Insert(u8, BoxSpec), Update(u8, BoxSpec),
# UpdateMany(Vec<(u8, BoxSpec)>), Remove(u8), Query(BoxSpec), Overlaps, Clear;
# BoxSpec { lo: [i8; 3] (quarter units), size: [u8; 3], fault: u8 }
# (host-tests/src/periodic_model.rs).


def p_box(lo, size, fault=0):
    return b"".join(i8(x) for x in lo) + b"".join(u8(x) for x in size) + u8(fault)


def p_op(index, *fields):
    return variant(index, 7) + b"".join(fields)


def p_case(kind, three_d, mask, ops):
    return variant(0, 1) + u8(kind) + boolean(three_d) + u8(mask) + vec(ops)


PERIODIC_SEEDS = {
    # Cubes at the upper faces and corner of the domain (x in [-1, 7)),
    # pairs across the faces, a query at the lower corner, a move back in.
    "seed-corner-3d": p_case(
        0,
        True,
        0b111,
        [
            p_op(0, u8(0), p_box([26, 22, 30], [2, 2, 2])),
            p_op(0, u8(1), p_box([-4, 2, -8], [1, 1, 1])),
            p_op(0, u8(2), p_box([10, 10, 10], [3, 3, 3])),
            p_op(5),
            p_op(4, p_box([-5, 1, -9], [1, 1, 1])),
            p_op(1, u8(0), p_box([8, 8, 8], [2, 2, 2])),
            p_op(2, vec([u8(1) + p_box([27, 23, 31], [2, 2, 2]), u8(2) + p_box([0, 0, 0], [7, 2, 2])])),
            p_op(3, u8(1)),
            p_op(5),
        ],
    ),
    # 2D, x periodic only: faults (NaN, too long, duplicate, out of range).
    "seed-faults-2d": p_case(
        1,
        False,
        0b01,
        [
            p_op(0, u8(3), p_box([27, 0, 0], [3, 2, 0])),
            p_op(0, u8(3), p_box([0, 0, 0], [1, 1, 0])),
            p_op(0, u8(4), p_box([0, 0, 0], [1, 1, 0], 10)),
            p_op(0, u8(5), p_box([0, 0, 0], [7, 1, 0])),
            p_op(0, u8(200), p_box([0, 0, 0], [1, 1, 0])),
            p_op(0, u8(6), p_box([-3, 0, 0], [2, 2, 0], 13)),
            p_op(5),
            p_op(6),
        ],
    ),
}


def write(out, seeds):
    os.makedirs(out, exist_ok=True)
    for name, data in seeds.items():
        assert len(data) < 4096, (name, len(data))
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus", "uniform_hash")
    hhg_out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "corpus", "hhg")
    kd_out = sys.argv[3] if len(sys.argv) > 3 else os.path.join(here, "corpus", "kdtree")
    for name, data in SEEDS.items():
        assert len(data) < 1024, (name, len(data))
    write(out, SEEDS)
    write(hhg_out, HHG_SEEDS)
    write(kd_out, KD_SEEDS)
    periodic_out = sys.argv[4] if len(sys.argv) > 4 else os.path.join(here, "corpus", "periodic")
    write(periodic_out, PERIODIC_SEEDS)


if __name__ == "__main__":
    main()
