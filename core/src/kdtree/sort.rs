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
    if src.len() < 1 << 16 {
        radix_digits::<K, 8, 256>(src, dst, depth, total)
    } else {
        radix_digits::<K, 11, 2048>(src, dst, depth, total)
    }
}

// Out of line: inlined into `radix`, the two digit widths' histograms
// (2 × 1 KiB and 2 × 8 KiB) shared one 16.5 KiB frame on a Cortex-M4 in the
// tests' profile, whatever the number of records.
#[inline(never)]
fn radix_digits<K: LocCode, const BITS: u32, const SIZE: usize>(
    src: &mut [KdRecord<K>],
    dst: &mut [KdRecord<K>],
    depth: u32,
    total: u32,
) -> (bool, u32) {
    let n = src.len();
    let mask = SIZE - 1;
    let mut in_dst = false;
    let mut passes = 0;
    let mut hist = [0u32; SIZE];
    let mut have = false;
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
                hist[K::sort_digit(r.key, depth, shift, mask)] += 1;
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
            let d = K::sort_digit(r.key, depth, shift, mask);
            let slot = hist[d] as usize;
            hist[d] += 1;
            if let Some(t) = to.get_mut(slot) {
                *t = *r;
            }
            if count_next {
                next[K::sort_digit(r.key, depth, next_shift, mask)] += 1;
            }
        }
        hist = next;
        have = count_next;
        in_dst = !in_dst;
        passes += 1;
        shift = next_shift;
    }
    (in_dst, passes)
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
