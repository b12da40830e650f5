//! Sorting records in prefix order (by pre-order rank): an LSD radix sort over
//! a scratch buffer, the standard library's `sort_unstable` for comparison,
//! and a bounded insertion sort for nearly sorted records (temporal reuse).

use crate::kdtree::KdRecord;
use crate::kdtree::code::LocCode;

/// Sorts `src` in prefix order with `dst` as scratch. Returns whether the
/// sorted records ended in `dst` (the caller then swaps the two buffers) and
/// the number of passes. Digits of 8 bits (two 1 KiB histograms on the
/// stack) below 2^16 records, 11 bits (two 8 KiB histograms) above, where
/// fewer passes over the records pay more than the histograms cost. Digits
/// whose value is the same for every record are skipped. `src` and `dst`
/// have the same length.
pub(crate) fn radix<K: LocCode>(
    src: &mut [KdRecord<K>],
    dst: &mut [KdRecord<K>],
    depth: u32,
) -> (bool, u32) {
    radix_low(src, dst, depth, K::sort_bits(depth))
}

/// [`radix`] over the low `total` bits of the sort key only (the caller
/// knows the bits above are the same for every record).
pub(crate) fn radix_low<K: LocCode>(
    src: &mut [KdRecord<K>],
    dst: &mut [KdRecord<K>],
    depth: u32,
    total: u32,
) -> (bool, u32) {
    let dig = |k: K, shift: u32, mask: usize| K::sort_digit(k, depth, shift, mask);
    let same = |k: K| k;
    let (in_dst, passes, _) = if src.len() < 1 << 16 {
        radix_digits::<K, 8, 256>(src, dst, total, dig, same)
    } else {
        radix_digits::<K, 11, 2048>(src, dst, total, dig, same)
    };
    (in_dst, passes)
}

/// [`radix`] of records whose keys hold their sort keys
/// ([`LocCode::to_sort_key`], `DIRECT_SORT` code types): each digit is a
/// shift and a mask. The pass over the top digit writes the node keys back
/// ([`LocCode::from_sort_key`]); the third value says whether it ran
/// (otherwise the caller converts the keys).
pub(crate) fn radix_direct<K: LocCode>(
    src: &mut [KdRecord<K>],
    dst: &mut [KdRecord<K>],
    depth: u32,
) -> (bool, u32, bool) {
    let total = K::direct_sort_bits(depth).min(K::BITS);
    let dig = |k: K, shift: u32, mask: usize| k.digit(shift, mask);
    let back = |k: K| K::from_sort_key(k, depth);
    if src.len() < 1 << 16 {
        radix_digits::<K, 8, 256>(src, dst, total, dig, back)
    } else {
        radix_digits::<K, 11, 2048>(src, dst, total, dig, back)
    }
}

// Out of line: inlined into `radix`, the two digit widths' histograms
// (2 × 1 KiB and 2 × 8 KiB) shared one 16.5 KiB frame on a Cortex-M4 in the
// tests' profile, whatever the number of records.
#[inline(never)]
fn radix_digits<K: LocCode, const BITS: u32, const SIZE: usize>(
    src: &mut [KdRecord<K>],
    dst: &mut [KdRecord<K>],
    total: u32,
    dig: impl Fn(K, u32, usize) -> usize,
    last: impl Fn(K) -> K,
) -> (bool, u32, bool) {
    let n = src.len();
    let mask = SIZE - 1;
    let mut in_dst = false;
    let mut passes = 0;
    let mut hist = [0u32; SIZE];
    let mut have = false;
    let mut finished = false;
    let mut shift = 0;
    while shift < total {
        let (from, to): (&mut [KdRecord<K>], &mut [KdRecord<K>]) = if in_dst {
            (&mut *dst, &mut *src)
        } else {
            (&mut *src, &mut *dst)
        };
        if !have {
            hist = [0; SIZE];
            for r in from.iter() {
                hist[dig(r.key, shift, mask)] += 1;
            }
        }
        let next_shift = shift + BITS;
        if hist.iter().any(|&c| c as usize == n) {
            have = false;
            shift = next_shift;
            continue;
        }
        // Exclusive prefix sums: the first slot of each digit.
        let mut sum = 0u32;
        for c in hist.iter_mut() {
            let v = *c;
            *c = sum;
            sum += v;
        }
        let mut next = [0u32; SIZE];
        let count_next = next_shift < total;
        for r in from.iter() {
            let d = dig(r.key, shift, mask);
            let slot = hist[d] as usize;
            hist[d] += 1;
            if let Some(t) = to.get_mut(slot) {
                *t = *r;
                if !count_next {
                    t.key = last(r.key);
                }
            }
            if count_next {
                next[dig(r.key, next_shift, mask)] += 1;
            }
        }
        finished = !count_next;
        hist = next;
        have = count_next;
        in_dst = !in_dst;
        passes += 1;
        shift = next_shift;
    }
    (in_dst, passes, finished)
}

/// `sort_unstable` by rank (for comparison with [`radix`]).
pub(crate) fn comparison<K: LocCode>(recs: &mut [KdRecord<K>], depth: u32) {
    recs.sort_unstable_by_key(|r| K::rank(r.key, depth));
}

/// Insertion sort by rank giving up after `budget` moves. Returns the moves
/// made, or `None` if it gave up (the records are then a permutation of the
/// input, partly sorted).
pub(crate) fn insertion<K: LocCode>(
    recs: &mut [KdRecord<K>],
    depth: u32,
    budget: usize,
) -> Option<usize> {
    let mut moves = 0usize;
    for i in 1..recs.len() {
        let r = recs[i];
        let rank = K::rank(r.key, depth);
        let mut j = i;
        while j > 0 && K::rank(recs[j - 1].key, depth) > rank {
            recs[j] = recs[j - 1];
            j -= 1;
            moves += 1;
        }
        recs[j] = r;
        if moves > budget {
            return None;
        }
    }
    Some(moves)
}

/// `true` if `recs` is in prefix order.
pub(crate) fn is_sorted<K: LocCode>(recs: &[KdRecord<K>], depth: u32) -> bool {
    recs.windows(2)
        .all(|w| K::rank(w[0].key, depth) <= K::rank(w[1].key, depth))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct sort gives the records of the rank-keyed sort, node keys
    /// back, whether its top digit's pass runs (keys converted by it) or is
    /// skipped (the caller converts).
    #[test]
    fn direct_radix_is_the_rank_radix() {
        let depth = 18;
        let mut st = 0x2545_F491_4F6C_DD1Du64;
        for top_same in [false, true] {
            let mut a = [KdRecord::<u64>::EMPTY; 600];
            for (i, r) in a.iter_mut().enumerate() {
                st ^= st << 13;
                st ^= st >> 7;
                st ^= st << 17;
                // Paths with a fixed top half leave the top digit constant.
                let mut code = st & ((1 << depth) - 1);
                if top_same {
                    code &= (1 << 9) - 1;
                }
                let len = (st >> 40) as u32 % (depth + 1);
                r.key = <u64 as LocCode>::node_key(code, depth, len);
                // Equal keys keep their input order: ids tell them apart.
                r.item = (i as u32) << 6;
            }
            let (mut want, mut ws) = (a, [KdRecord::EMPTY; 600]);
            let (in_ws, _) = radix(&mut want, &mut ws, depth);
            let want = if in_ws { ws } else { want };
            let mut got = a.map(|r| KdRecord {
                key: <u64 as LocCode>::to_sort_key(r.key, depth),
                item: r.item,
            });
            let mut gs = [KdRecord::EMPTY; 600];
            let (in_gs, passes, done) = radix_direct(&mut got, &mut gs, depth);
            let mut got = if in_gs { gs } else { got };
            // 23 bits of sort key: three 8-bit digits, the top one skipped
            // when constant.
            assert_eq!(done, !top_same, "passes {passes}");
            if !done {
                for r in got.iter_mut() {
                    r.key = <u64 as LocCode>::from_sort_key(r.key, depth);
                }
            }
            assert_eq!(got, want);
            assert!(is_sorted(&got, depth));
        }
    }
}
