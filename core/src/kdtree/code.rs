//! Locational codes: Morton interleaving of quantised corners, the node key
//! with its end marker, and the prefix (pre-order) rank the records are
//! sorted by.
//!
//! # The key of a node
//!
//! A node of the kd-tree is its path from the root: `ℓ` bits, one per cut,
//! `0` for the lower half and `1` for the upper (Poirrier §5.2). With a tree
//! of depth `D` the key stores the path left-aligned in bits `D ..= D-ℓ+1`,
//! then a single `1` (the end marker) at bit `D-ℓ`, then zeros:
//!
//! ```text
//!   D                     0
//!   [ path (ℓ bits) | 1 | 0 … 0 ]     D + 1 bits in all
//! ```
//!
//! The length is `D - trailing_zeros(key)`, so a key is self-describing and
//! one `u32` / `u64` / `u128` holds a tree of depth 31 / 63 / 127. The keys of
//! the nodes below a node `k` with `s = trailing_zeros(k)` are exactly the
//! integers of `k - 2^s + 1 ..= k + 2^s - 1`: the subtree test is one
//! subtraction and one comparison.
//!
//! # Prefix order
//!
//! Records are sorted so that a node comes before every node below it and
//! a lower half before an upper half (§5.4). Integer order of the keys is not
//! that order (it puts a node between its two halves), so sorting uses the
//! node's pre-order rank in the complete tree of depth `D`:
//!
//! `rank = path·2^(D-ℓ+1) + (number of 0 bits in the path)`
//!
//! (going to a lower half adds 1, to an upper half adds the size of the lower
//! half's subtree plus 1). It fits in the same `D + 1` bits and costs a
//! trailing-zero count and a population count.

use crate::geom::{spread2, spread3};

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
    impl Sealed for u128 {}
}

/// An unsigned integer type holding locational codes: `u32`, `u64` or `u128`
/// (sealed).
///
/// A code type of `W` bits holds trees of depth up to `W - 1` bits: 10 bits
/// per axis in 3D and 15 in 2D for `u32`, 21 and 31 for `u64`, 42 and 63 for
/// `u128`.
pub trait LocCode:
    core::ops::BitOr<Output = Self>
    + Copy
    + Ord
    + Eq
    + Default
    + core::fmt::Debug
    + core::hash::Hash
    + Send
    + Sync
    + 'static
    + sealed::Sealed
{
    /// Width in bits.
    const BITS: u32;
    /// Zero.
    const ZERO: Self;
    /// Quantisation is computed in `f64` (`true`) or `f32`. `u32` codes use
    /// `f32`, which a Cortex-M4 computes in hardware; the wider codes need
    /// `f64` to resolve more than 24 bits per axis.
    const WIDE_FLOAT: bool;
    /// Most bits per axis a code of this type holds in `dim` dimensions.
    fn max_bits_per_axis(dim: usize) -> u32 {
        (Self::BITS - 1) / dim as u32
    }
    /// Morton code of a quantised corner: the bits of `q[a]` (each below
    /// `2^bits`) interleaved with axis 0 most significant, so the first cut
    /// of the tree is across axis 0, then axis 1, …
    fn interleave(q: [u64; 3], dim: usize, bits: u32) -> Self;
    /// The Morton bits of one axis: `interleave` of `v` on axis `a` and zero
    /// on the others.
    fn spread_axis(v: u64, a: usize, dim: usize, bits: u32) -> Self;
    /// The key of the node of depth `len` whose path is the top `len` bits of
    /// the `depth`-bit Morton code `code` (see the module documentation).
    /// `len <= depth < BITS`.
    fn node_key(code: Self, depth: u32, len: u32) -> Self;
    /// Depth of a node key's node in a tree of depth `depth`.
    fn key_len(key: Self, depth: u32) -> u32;
    /// Pre-order rank of a node key in the complete tree of depth `depth`.
    fn rank(key: Self, depth: u32) -> Self;
    /// `true` if `other` is `key`'s node or below it.
    fn contains(key: Self, other: Self) -> bool;
    /// Width in bits of the radix sort key of a tree of depth `depth`.
    fn sort_bits(depth: u32) -> u32;
    /// `(sort_key >> shift) & mask`, where the sort key's integer order is the
    /// prefix order: the path left-aligned, then the length (`u32` and `u64`
    /// codes; no population count needed, which baseline x86-64 lacks), or
    /// the rank (`u128`).
    fn sort_digit(key: Self, depth: u32, shift: u32, mask: usize) -> usize;
    /// A sort key can stand in a record's key during a serial radix sort
    /// (`u32` and `u64` codes, for depths where
    /// [`direct_sort_bits`](Self::direct_sort_bits) is at most `BITS`; see
    /// [`to_sort_key`](Self::to_sort_key)).
    #[doc(hidden)]
    const DIRECT_SORT: bool;
    /// Width of [`to_sort_key`](Self::to_sort_key)'s value: `depth` bits of
    /// path, then the length (one bit less than
    /// [`sort_bits`](Self::sort_bits): the path's lowest bit, below the end
    /// marker's lowest place, is always 0).
    #[doc(hidden)]
    fn direct_sort_bits(depth: u32) -> u32 {
        depth + len_bits(depth)
    }
    /// A sort key in the prefix order as a value of the type (the path
    /// without its always-zero lowest bit, then the length), when
    /// [`direct_sort_bits`](Self::direct_sort_bits) is at most `BITS`
    /// (`DIRECT_SORT` types).
    #[doc(hidden)]
    fn to_sort_key(key: Self, depth: u32) -> Self;
    /// The node key back from [`to_sort_key`](Self::to_sort_key)'s value.
    #[doc(hidden)]
    fn from_sort_key(sk: Self, depth: u32) -> Self;
    /// `(self >> shift) & mask` (`shift < BITS`).
    #[doc(hidden)]
    fn digit(self, shift: u32, mask: usize) -> usize;
    /// The largest value (never a valid key).
    const MAX: Self;
    /// Trailing zero bits (`BITS` for zero).
    fn tz(self) -> u32;
    /// The path bit of depth `t` (0 = first cut) of a key in a tree of depth
    /// `depth`.
    fn path_bit(key: Self, depth: u32, t: u32) -> bool;
    /// The low `BITS` bits of `v` (the tree packs compact boxes into
    /// records with it).
    #[doc(hidden)]
    fn from_u128(v: u128) -> Self;
    /// The value, widened.
    #[doc(hidden)]
    fn to_u128(self) -> u128;
}

macro_rules! loc_code {
    ($t:ty, $wide:expr, $interleave:expr, $spread:expr, $sort_bits:expr, $sort_digit:expr) => {
        impl LocCode for $t {
            const BITS: u32 = <$t>::BITS;
            const ZERO: Self = 0;
            const MAX: Self = <$t>::MAX;
            const WIDE_FLOAT: bool = $wide;

            #[inline(always)]
            fn interleave(q: [u64; 3], dim: usize, bits: u32) -> Self {
                let f: fn([u64; 3], usize, u32) -> $t = $interleave;
                f(q, dim, bits)
            }

            #[inline(always)]
            fn spread_axis(v: u64, a: usize, dim: usize, bits: u32) -> Self {
                let f: fn(u64, usize, usize, u32) -> $t = $spread;
                f(v, a, dim, bits)
            }

            #[inline(always)]
            fn node_key(code: Self, depth: u32, len: u32) -> Self {
                // Path bits in D..=D-len+1 are the code's top `len` bits of
                // `depth`, shifted up by one; the marker sits at D-len.
                let s = depth - len;
                let marker: $t = 1 << s;
                ((code << 1) & !(marker.wrapping_shl(1).wrapping_sub(1))) | marker
            }

            #[inline(always)]
            fn key_len(key: Self, depth: u32) -> u32 {
                depth - key.trailing_zeros()
            }

            #[inline(always)]
            fn rank(key: Self, depth: u32) -> Self {
                let len = depth - key.trailing_zeros();
                let path = key & key.wrapping_sub(1);
                // zeros in the path = len - popcount(path)
                path + (len - path.count_ones()) as $t
            }

            #[inline(always)]
            fn contains(key: Self, other: Self) -> bool {
                let half: $t = 1 << key.trailing_zeros();
                let lo = key - half + 1;
                other.wrapping_sub(lo) <= half.wrapping_add(half).wrapping_sub(2)
            }

            #[inline(always)]
            fn sort_bits(depth: u32) -> u32 {
                let f: fn(u32) -> u32 = $sort_bits;
                f(depth)
            }

            #[inline(always)]
            fn sort_digit(key: Self, depth: u32, shift: u32, mask: usize) -> usize {
                let f: fn($t, u32, u32, usize) -> usize = $sort_digit;
                f(key, depth, shift, mask)
            }

            const DIRECT_SORT: bool = <$t>::BITS < 128;

            #[inline(always)]
            fn to_sort_key(key: Self, depth: u32) -> Self {
                let lb = len_bits(depth);
                (((key & key.wrapping_sub(1)) >> 1).wrapping_shl(lb))
                    | (depth - key.trailing_zeros()) as $t
            }

            #[inline(always)]
            fn from_sort_key(sk: Self, depth: u32) -> Self {
                let lb = len_bits(depth);
                let len = (sk & ((1 << lb) - 1)) as u32;
                ((sk >> lb) << 1) | (1 as $t).wrapping_shl(depth.wrapping_sub(len))
            }

            #[inline(always)]
            fn digit(self, shift: u32, mask: usize) -> usize {
                (self.wrapping_shr(shift)) as usize & mask
            }

            #[inline(always)]
            fn tz(self) -> u32 {
                self.trailing_zeros()
            }

            #[inline(always)]
            fn path_bit(key: Self, depth: u32, t: u32) -> bool {
                (key >> (depth - t)) & 1 == 1
            }

            #[inline(always)]
            fn from_u128(v: u128) -> Self {
                v as $t
            }

            #[inline(always)]
            fn to_u128(self) -> u128 {
                self as u128
            }
        }
    };
}

/// Bits of the length field of a sort key: enough for lengths up to
/// `depth` (5 for depths 16 to 31: a 27-deep tree sorts on 33 bits, three
/// 11-bit digits, where a fixed 6-bit field needed a fourth).
#[inline(always)]
const fn len_bits(depth: u32) -> u32 {
    32 - depth.leading_zeros()
}

#[inline(always)]
fn morton_u64(q: [u64; 3], dim: usize) -> u64 {
    // spread3 keeps the low 21 bits, spread2 the low 32.
    if dim == 3 {
        (spread3(q[0] as u32) << 2) | (spread3(q[1] as u32) << 1) | spread3(q[2] as u32)
    } else {
        (spread2(q[0] as u32) << 1) | spread2(q[1] as u32)
    }
}

/// Morton bits of one axis (the low 21 bits in 3D, 32 in 2D).
#[inline(always)]
fn spread_u64(v: u64, a: usize, dim: usize) -> u64 {
    if dim == 3 {
        spread3(v as u32) << (2 - a)
    } else {
        spread2(v as u32) << (1 - a)
    }
}

loc_code!(
    u32,
    false,
    |q, dim, _bits| morton_u64(q, dim) as u32,
    |v, a, dim, _bits| spread_u64(v, a, dim) as u32,
    |depth| depth + 1 + len_bits(depth),
    |k, depth, shift, mask| {
        let sk = (((k & k.wrapping_sub(1)) as u64) << len_bits(depth))
            | (depth - k.trailing_zeros()) as u64;
        (sk >> shift) as usize & mask
    }
);
loc_code!(
    u64,
    true,
    |q, dim, _bits| morton_u64(q, dim),
    |v, a, dim, _bits| spread_u64(v, a, dim),
    |depth| depth + 1 + len_bits(depth),
    |k, depth, shift, mask| {
        let sk = (((k & k.wrapping_sub(1)) as u128) << len_bits(depth))
            | (depth - k.trailing_zeros()) as u128;
        (sk >> shift) as usize & mask
    }
);
loc_code!(
    u128,
    true,
    |q, dim, bits| {
        // Two halves of each axis: the low `h` bits and the rest.
        let h = if dim == 3 { 21 } else { 32 };
        let lo = morton_u64(q, dim) as u128;
        if bits <= h {
            return lo;
        }
        let hi = morton_u64([q[0] >> h, q[1] >> h, q[2] >> h], dim) as u128;
        lo | (hi << (h as usize * dim))
    },
    |v, a, dim, bits| {
        let h = if dim == 3 { 21 } else { 32 };
        let lo = spread_u64(v, a, dim) as u128;
        if bits <= h {
            return lo;
        }
        lo | ((spread_u64(v >> h, a, dim) as u128) << (h as usize * dim))
    },
    |depth| depth + 1,
    |k, depth, shift, mask| (<u128 as LocCode>::rank(k, depth) >> shift) as usize & mask
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference pre-order rank by walking the path.
    fn rank_ref(path: u64, len: u32, depth: u32) -> u64 {
        let mut r = 0u64;
        for t in 0..len {
            let bit = (path >> (len - 1 - t)) & 1;
            // subtree of a child at depth t+1 has 2^(depth-t) - 1 nodes
            r += if bit == 0 { 1 } else { 1u64 << (depth - t) };
        }
        r
    }

    #[test]
    fn keys_decode_and_rank_in_prefix_order() {
        let depth = 9;
        let mut all = [(0u64, 0u64, 0u32, 0u64); 1023];
        let mut n = 0;
        for len in 0..=depth {
            for path in 0..(1u64 << len) {
                let code = path << (depth - len);
                let key = <u64 as LocCode>::node_key(code, depth, len);
                assert_eq!(<u64 as LocCode>::key_len(key, depth), len);
                let r = <u64 as LocCode>::rank(key, depth);
                assert_eq!(r, rank_ref(path, len, depth), "path {path:b} len {len}");
                all[n] = (r, path, len, key);
                n += 1;
            }
        }
        assert_eq!(n, all.len());
        all.sort_unstable();
        // Ranks are a permutation of 0..nodes.
        for (i, a) in all.iter().enumerate() {
            assert_eq!(a.0, i as u64);
        }
        // Containment agrees with "is a prefix of".
        for a in all.iter().step_by(7) {
            for b in all.iter() {
                let prefix = b.2 >= a.2 && (b.1 >> (b.2 - a.2)) == a.1;
                assert_eq!(<u64 as LocCode>::contains(a.3, b.3), prefix);
            }
        }
    }

    /// The sort key held in a record's key (direct radix sort) has the
    /// digits of `sort_digit` and gives the node key back, for every node of
    /// small trees and random nodes of the deepest trees it serves.
    fn direct_sort_keys<K: LocCode>() {
        let mut st = 0x9E37_79B9_7F4A_7C15u64;
        let mut prev: Option<(K, K)> = None;
        let full = |key: K, depth: u32| {
            (0..K::sort_bits(depth)).step_by(8).fold(0u128, |v, s| {
                v | (K::sort_digit(key, depth, s, 255) as u128) << s
            })
        };
        for depth in 1..K::BITS {
            if K::direct_sort_bits(depth) > K::BITS {
                continue;
            }
            for i in 0..4000u64 {
                st ^= st << 13;
                st ^= st >> 7;
                st ^= st << 17;
                let len = if depth <= 9 {
                    (i % (depth as u64 + 1)) as u32
                } else {
                    (st % (depth as u64 + 1)) as u32
                };
                let code = K::from_u128((st as u128) & ((1u128 << depth) - 1));
                let key = K::node_key(code, depth, len);
                let sk = K::to_sort_key(key, depth);
                assert_eq!(K::from_sort_key(sk, depth), key, "depth {depth} len {len}");
                assert!(sk.to_u128() < 1u128 << K::direct_sort_bits(depth));
                for shift in (0..K::direct_sort_bits(depth)).step_by(3) {
                    assert_eq!(sk.digit(shift, 7), (sk.to_u128() >> shift) as usize & 7);
                }
                // Same order as the sort key of `sort_digit`.
                if let Some((pk, psk)) = prev {
                    assert_eq!(
                        full(pk, depth).cmp(&full(key, depth)),
                        psk.cmp(&sk),
                        "depth {depth}"
                    );
                }
                prev = Some((key, sk));
            }
            prev = None;
        }
    }

    #[test]
    fn direct_sort_keys_round_trip() {
        assert_eq!(
            [u32::DIRECT_SORT, u64::DIRECT_SORT, u128::DIRECT_SORT],
            [true, true, false]
        );
        direct_sort_keys::<u32>();
        direct_sort_keys::<u64>();
    }

    #[test]
    fn sort_keys_follow_rank_order() {
        let depth = 9;
        let mut keys = [(0u64, 0u32); 1023];
        let mut n = 0;
        for len in 0..=depth {
            for path in 0..(1u64 << len) {
                let k = <u64 as LocCode>::node_key(path << (depth - len), depth, len);
                keys[n] = (k, k as u32);
                n += 1;
            }
        }
        let whole = |k: u64, bits: u32| -> u128 {
            (0..bits).step_by(8).fold(0u128, |acc, sh| {
                acc | ((<u64 as LocCode>::sort_digit(k, depth, sh, 0xff) as u128) << sh)
            })
        };
        let whole32 = |k: u32, bits: u32| -> u128 {
            (0..bits).step_by(8).fold(0u128, |acc, sh| {
                acc | ((<u32 as LocCode>::sort_digit(k, depth, sh, 0xff) as u128) << sh)
            })
        };
        let (b64, b32) = (
            <u64 as LocCode>::sort_bits(depth),
            <u32 as LocCode>::sort_bits(depth),
        );
        keys.sort_unstable_by_key(|&(k, _)| <u64 as LocCode>::rank(k, depth));
        for w in keys.windows(2) {
            assert!(whole(w[0].0, b64) < whole(w[1].0, b64));
            assert!(whole32(w[0].1, b32) < whole32(w[1].1, b32));
        }
    }

    #[test]
    fn full_width_keys() {
        // Depth 63 in u64 and 127 in u128: the root's subtree is everything.
        let root = <u64 as LocCode>::node_key(0, 63, 0);
        assert_eq!(root, 1 << 63);
        assert!(<u64 as LocCode>::contains(
            root,
            <u64 as LocCode>::node_key(u64::MAX >> 1, 63, 63)
        ));
        assert_eq!(<u64 as LocCode>::rank(root, 63), 0);
        let leaf = <u64 as LocCode>::node_key(u64::MAX >> 1, 63, 63);
        assert_eq!(<u64 as LocCode>::rank(leaf, 63), u64::MAX - 1);
        let root = <u128 as LocCode>::node_key(0, 126, 0);
        let leaf = <u128 as LocCode>::node_key((1u128 << 126) - 1, 126, 126);
        assert!(<u128 as LocCode>::contains(root, leaf));
        assert_eq!(<u128 as LocCode>::rank(leaf, 126), (1u128 << 127) - 2);
    }

    #[test]
    fn spread_axis_agrees_with_interleave() {
        let q = [
            0x2_1234_5678_9abc_u64 & ((1 << 42) - 1),
            0x3ff_ffff_ffff,
            0x155_5555_5555,
        ];
        for dim in [2, 3] {
            let fit = |b: u32| q.map(|v| v & ((1u64 << b) - 1));
            let b = <u32 as LocCode>::max_bits_per_axis(dim);
            let (q32, q64) = (fit(b), fit(<u64 as LocCode>::max_bits_per_axis(dim)));
            let b128 = <u128 as LocCode>::max_bits_per_axis(dim).min(42);
            let q128 = fit(b128);
            let or32 = (0..dim).fold(0, |c, a| {
                c | <u32 as LocCode>::spread_axis(q32[a], a, dim, b)
            });
            assert_eq!(or32, <u32 as LocCode>::interleave(q32, dim, b));
            let b64 = <u64 as LocCode>::max_bits_per_axis(dim);
            let or64 = (0..dim).fold(0, |c, a| {
                c | <u64 as LocCode>::spread_axis(q64[a], a, dim, b64)
            });
            assert_eq!(or64, <u64 as LocCode>::interleave(q64, dim, b64));
            let or128 = (0..dim).fold(0, |c, a| {
                c | <u128 as LocCode>::spread_axis(q128[a], a, dim, b128)
            });
            assert_eq!(or128, <u128 as LocCode>::interleave(q128, dim, b128));
        }
    }

    #[test]
    fn interleave_puts_axis_zero_first() {
        assert_eq!(<u32 as LocCode>::interleave([1, 0, 0], 3, 1), 0b100);
        assert_eq!(<u32 as LocCode>::interleave([0, 0, 1], 3, 1), 0b001);
        assert_eq!(<u64 as LocCode>::interleave([1, 0, 0], 2, 1), 0b10);
        let q = [(1u64 << 42) - 1, 0, (1 << 41) | 1];
        let c = <u128 as LocCode>::interleave(q, 3, 42);
        assert_eq!(c >> 123, 0b101, "top triple: x=1 y=0 z=1");
        assert_eq!(c & 0b111, 0b101);
        assert_eq!(c.count_ones(), 44);
    }
}
