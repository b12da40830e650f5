//! The crate's one sort: small in code, allocation-free, no recursion.
//!
//! `core`'s `sort_unstable` (ipnsort) is fast but large: its quicksort, small
//! sorts and heapsort fallback take 7–17 KB of Cortex-M4 code per key type,
//! more than a whole structure. The structures sort short or nearly sorted
//! sequences (the cells of a build in the previous build's order, the
//! occupied cells of a grid), so this sort first runs an insertion sort with a
//! budget of moves, which finishes sorted and nearly sorted input in
//! `O(n + moves)`, and falls back to a heapsort (`O(n log n)` worst case,
//! constant stack) when the budget runs out.
//!
//! Unstable in general (the heapsort may reorder equal keys); every caller
//! sorts unique keys, except the emitter's three axes, which the insertion
//! sort alone handles, stably.
//!
//! Two sorts stay on `sort_unstable`: the kd-tree's `comparison` strategy
//! (it *is* the reference comparison sort) and [`Fluid::sort_by_cell`], a
//! host-side pass over whole particle states of shuffled input, where
//! ipnsort's speed matters and its size does not.
//!
//! [`Fluid::sort_by_cell`]: crate::sph::Fluid::sort_by_cell

/// Sorts `v` by `key`, ascending. Each comparison computes one key: the key
/// of the element being moved is kept.
pub(crate) fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    let n = v.len();
    if n < 2 {
        return;
    }
    // Insertion sort, giving up after about 4 moves per element on average.
    let mut budget = n.saturating_mul(4);
    for i in 1..n {
        let k = key(&v[i]);
        let mut j = i;
        while j > 0 && k < key(&v[j - 1]) {
            if budget == 0 {
                heapsort(v, key);
                return;
            }
            v.swap(j, j - 1);
            budget -= 1;
            j -= 1;
        }
    }
}

/// In-place heapsort: build a max-heap, then move the maximum to the end.
fn heapsort<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    let n = v.len();
    for start in (0..n / 2).rev() {
        sift_down(v, start, n, &mut key);
    }
    for end in (1..n).rev() {
        v.swap(0, end);
        sift_down(v, 0, end, &mut key);
    }
}

/// Moves `v[root]` down within `v[..end]` until both its children are
/// smaller.
fn sift_down<T, K: Ord>(v: &mut [T], mut root: usize, end: usize, key: &mut impl FnMut(&T) -> K) {
    let k = key(&v[root]);
    loop {
        let left = 2 * root + 1;
        if left >= end {
            return;
        }
        // The larger child (the right one only if it exists and is larger).
        let mut child = left;
        let mut kc = key(&v[left]);
        if let Some(right) = v[..end].get(left + 1) {
            let kr = key(right);
            if kc < kr {
                child = left + 1;
                kc = kr;
            }
        }
        if k >= kc {
            return;
        }
        v.swap(root, child);
        root = child;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift32, so the test needs no dependency.
    fn rng(state: &mut u32) -> u32 {
        *state ^= *state << 13;
        *state ^= *state >> 17;
        *state ^= *state << 5;
        *state
    }

    fn check(v: &mut [u32]) {
        let mut sorted = [0u32; 512];
        let sorted = &mut sorted[..v.len()];
        sorted.copy_from_slice(v);
        sorted.sort_unstable();
        sort_by_key(v, |&x| x);
        assert_eq!(v, sorted);
    }

    #[test]
    fn sorts_every_shape_of_input() {
        let mut s = 0x1234_5678;
        for n in [0usize, 1, 2, 3, 7, 31, 64, 200, 512] {
            let mut buf = [0u32; 512];
            let v = &mut buf[..n];
            // Random, few distinct keys, sorted, reversed, nearly sorted.
            for x in v.iter_mut() {
                *x = rng(&mut s);
            }
            check(v);
            for x in v.iter_mut() {
                *x = rng(&mut s) % 4;
            }
            check(v);
            for (i, x) in v.iter_mut().enumerate() {
                *x = i as u32;
            }
            check(v);
            for (i, x) in v.iter_mut().enumerate() {
                *x = (n - i) as u32;
            }
            check(v);
            for (i, x) in v.iter_mut().enumerate() {
                *x = i as u32;
            }
            for _ in 0..n / 16 {
                let (a, b) = (rng(&mut s) as usize % n, rng(&mut s) as usize % n);
                v.swap(a, b);
            }
            check(v);
        }
    }

    #[test]
    fn heapsort_alone_sorts() {
        let mut s = 99;
        let mut v = [0u32; 300];
        for x in v.iter_mut() {
            *x = rng(&mut s) % 1000;
        }
        let mut want = v;
        want.sort_unstable();
        heapsort(&mut v, |&x| x);
        assert_eq!(v, want);
    }
}
