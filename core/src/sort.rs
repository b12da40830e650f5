//! The structures' sort: on bare-metal targets a small one, elsewhere
//! `core`'s `sort_unstable`.
//!
//! `core`'s `sort_unstable` (ipnsort) is fast but large: its quicksort, small
//! sorts and heapsort fallback take 7–17 KB of Cortex-M4 code per key type,
//! more than a whole structure. On `target_os = "none"` (firmware) the
//! structures therefore use [`small_sort_by_key`]: an insertion sort with a
//! budget of moves, which finishes sorted and nearly sorted input (the cells
//! of a build in the previous build's order) in `O(n + moves)`, falling back
//! to a heapsort (`O(n log n)`, constant stack). On the host the heapsort's
//! recomputed keys cost: building the cell-sorted hash over 97 336 particles
//! in lexicographic cell order took 18–22 ms with it against 13–15 ms with
//! `sort_unstable` (criterion, `pairs/cell-ordered/97336/spatium-sorted`),
//! so hosted targets (wasm included) keep `sort_unstable`.
//!
//! Every caller sorts unique keys, where all correct sorts give the same
//! order, or (the emitter's three axes) a sequence short enough for both
//! sorts to run a stable insertion sort: results are the same on every
//! target. The firmware tests run the structures with the small sort on an
//! emulated Cortex-M4; the tests below check it against `sort_unstable`.
//!
//! `Fluid::sort_by_cell` and the kd-tree's `comparison` strategy call
//! `sort_unstable` directly on every target (the latter *is* the reference
//! comparison sort).

/// Sorts `v` by `key`, ascending (unstable).
#[cfg(not(target_os = "none"))]
#[inline]
pub(crate) fn sort_by_key<T, K: Ord>(v: &mut [T], key: impl FnMut(&T) -> K) {
    v.sort_unstable_by_key(key);
}

/// Sorts `v` by `key`, ascending (unstable): [`small_sort_by_key`].
#[cfg(target_os = "none")]
#[inline]
pub(crate) fn sort_by_key<T, K: Ord>(v: &mut [T], key: impl FnMut(&T) -> K) {
    small_sort_by_key(v, key);
}

/// Sorts `v` by `key`, ascending: insertion sort with a move budget, then
/// heapsort. Each comparison computes one key: the key of the element being
/// moved is kept.
#[cfg_attr(not(any(test, target_os = "none")), allow(dead_code))]
pub(crate) fn small_sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
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
        small_sort_by_key(v, |&x| x);
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
