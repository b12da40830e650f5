//! Sorting records in prefix order (by pre-order rank): an LSD radix sort over
//! a scratch buffer, the standard library's `sort_unstable` for comparison,
//! and a bounded insertion sort for nearly sorted records (temporal reuse).

use crate::kdtree::KdRecord;
use crate::kdtree::code::LocCode;

/// 8-bit digits: 256 counters (1 KiB) per histogram, two on the stack.
const DIGIT_BITS: u32 = 8;

/// Sorts `src` by rank with `dst` as scratch. Returns `true` if the sorted
/// records ended in `dst` (an odd number of non-trivial passes), the caller
/// then swaps the two buffers. Digits whose value is the same for every
/// record are skipped. `src` and `dst` have the same length.
pub(crate) fn radix<K: LocCode>(
    src: &mut [KdRecord<K>],
    dst: &mut [KdRecord<K>],
    depth: u32,
) -> (bool, u32) {
    let n = src.len();
    let mut in_dst = false;
    let mut passes = 0;
    let mut hist = [0u32; 256];
    let mut have = false;
    let mut shift = 0;
    while shift < depth + 1 {
        let (from, to): (&mut [KdRecord<K>], &mut [KdRecord<K>]) = if in_dst {
            (&mut *dst, &mut *src)
        } else {
            (&mut *src, &mut *dst)
        };
        if !have {
            hist = [0; 256];
            for r in from.iter() {
                hist[K::rank(r.key, depth).digit(shift)] += 1;
            }
        }
        let next_shift = shift + DIGIT_BITS;
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
        let mut next = [0u32; 256];
        let count_next = next_shift < depth + 1;
        for r in from.iter() {
            let rank = K::rank(r.key, depth);
            let d = rank.digit(shift);
            let slot = hist[d] as usize;
            hist[d] += 1;
            if let Some(t) = to.get_mut(slot) {
                *t = *r;
            }
            if count_next {
                next[rank.digit(next_shift)] += 1;
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
