//! Helpers for compressed-sparse-row neighbour lists.

/// Turns counts stored at `offsets[i + 1]` (with `offsets[0] == 0`) into
/// starts, in place; returns the total. Saturates at `u32::MAX`, which the
/// callers' buffer-size checks then refuse.
pub(crate) fn prefix_sum(offsets: &mut [u32]) -> usize {
    let mut run: u32 = 0;
    for o in offsets.iter_mut() {
        run = run.saturating_add(*o);
        *o = run;
    }
    run as usize
}

/// After a fill that advanced each `offsets[i]` from i's start to i's end
/// (= start of i+1), restores the starts.
pub(crate) fn shift_back(offsets: &mut [u32]) {
    let n = offsets.len();
    if n == 0 {
        return;
    }
    for i in (1..n).rev() {
        offsets[i] = offsets[i - 1];
    }
    offsets[0] = 0;
}
