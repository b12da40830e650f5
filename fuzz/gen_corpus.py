#!/usr/bin/env python3
"""Writes the seed corpus of the `uniform_hash` fuzz target.

Each seed is encoded the way `arbitrary` 1.x decodes the target's `Input`
(fuzz_targets/uniform_hash.rs): u8/i8/bool one byte, u32/f32 four bytes
little-endian, an enum a u32 whose `(v * variants) >> 32` is the variant
index, a collection one "keep going" byte (1) before each element and a 0
after the last. Keep this file in step with the types in the target.

Usage: python3 gen_corpus.py [OUT_DIR]   (default: corpus/uniform_hash)
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


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus", "uniform_hash")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        assert len(data) < 1024, (name, len(data))
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
