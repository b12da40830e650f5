//! The fixed hash table shared by the hashes: one sentinel, one
//! table-length helper, the power-of-two mask check, the Fibonacci reduction
//! of a hash to a slot, and timestamps that clear a table in `O(1)`.
//!
//! Every table entry carries a timestamp: a new build bumps the structure's
//! stamp, and entries with an older stamp read as empty. Clearing is `O(1)`
//! and the table is never swept between steps (it is swept once when first
//! used and once every 2³² − 1 builds, when the stamp wraps).

use crate::error::Error;

/// The one "nothing here" value of every `u32` link, index, key and stamp
/// field in the crate's buffers (end of a list, an absent id, an empty
/// cell).
pub const NONE: u32 = u32::MAX;

/// Table slots per element that the seeds recommend for few, large objects
/// (Pouchol et al. §4.3: about 100 buckets per object made the false
/// candidates of hash collisions negligible). For dense SPH (about 8
/// particles per cell) 2 to 4 slots per particle already keep collisions
/// rare at far less memory.
pub const SLOTS_PER_OBJECT: usize = 100;

/// Largest table length (2³¹): slot indices are `u32`, with the top bit free.
pub const MAX_TABLE_LEN: usize = 1 << 31;

/// Table length of about `slots_per_element` slots per element, rounded up
/// to a power of two (at least 1, at most [`MAX_TABLE_LEN`]): the one
/// table-length helper of the crate.
///
/// ```
/// use spatium::table::{table_len, SLOTS_PER_OBJECT};
/// assert_eq!(table_len(10, SLOTS_PER_OBJECT), 1024);
/// assert_eq!(table_len(1000, 2), 2048);
/// assert_eq!(table_len(0, 4), 1);
/// ```
pub const fn table_len(elements: usize, slots_per_element: usize) -> usize {
    let want = elements.saturating_mul(slots_per_element);
    if want >= MAX_TABLE_LEN {
        MAX_TABLE_LEN
    } else if want <= 1 {
        1
    } else {
        want.next_power_of_two()
    }
}

/// `len - 1` if `len` is a usable table length: a power of two in
/// `1..=2³¹`.
///
/// # Errors
/// [`Error::InvalidTableLength`] otherwise.
pub(crate) fn table_mask(len: usize) -> Result<u32, Error> {
    if len == 0 || !len.is_power_of_two() || len > MAX_TABLE_LEN {
        Err(Error::InvalidTableLength { len })
    } else {
        Ok((len - 1) as u32)
    }
}

/// ⌊2³²/φ⌋, the multiplier of Fibonacci hashing.
pub(crate) const FIBONACCI: u32 = 0x9E37_79B9;

/// The slot of `hash` in a table of `2^(32 - shift)` slots: multiply by
/// ⌊2³²/φ⌋ and keep the top bits.
///
/// Reducing by a mask would keep only the low bits of the hash, which for
/// the seeds' XOR of prime products depend only on the low bits of the cell
/// coordinates. Measured on a block of 13 824 cells in 2¹⁸ slots: 1 068
/// colliding cells with the mask, 354 with this step (364 expected of a
/// random hash).
#[inline(always)]
pub(crate) fn fibonacci_slot(hash: u32, shift: u32) -> u32 {
    ((hash.wrapping_mul(FIBONACCI) as u64) >> shift) as u32
}

/// Advances a table stamp; on first use (0) and on wrap, `sweep` resets the
/// table's stamps to 0 and the stamp restarts at 1.
pub(crate) fn advance_stamp(stamp: &mut u32, sweep: impl FnOnce()) {
    if *stamp == 0 || *stamp == NONE {
        sweep();
        *stamp = 1;
    } else {
        *stamp += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_len_guidance() {
        assert_eq!(table_len(10, SLOTS_PER_OBJECT), 1024);
        assert_eq!(table_len(0, SLOTS_PER_OBJECT), 1);
        assert_eq!(table_len(1000, 2), 2048);
        assert_eq!(table_len(usize::MAX, SLOTS_PER_OBJECT), 1 << 31);
    }

    #[test]
    fn masks() {
        assert_eq!(table_mask(1), Ok(0));
        assert_eq!(table_mask(1 << 31), Ok(u32::MAX >> 1));
        for len in [0, 3, 6, (1 << 31) + 1, usize::MAX] {
            assert_eq!(table_mask(len), Err(Error::InvalidTableLength { len }));
        }
    }

    #[test]
    fn stamps_sweep_on_first_use_and_wrap() {
        let mut sweeps = 0;
        let mut s = 0;
        advance_stamp(&mut s, || sweeps += 1);
        assert_eq!((s, sweeps), (1, 1));
        advance_stamp(&mut s, || sweeps += 1);
        assert_eq!((s, sweeps), (2, 1));
        s = NONE;
        advance_stamp(&mut s, || sweeps += 1);
        assert_eq!((s, sweeps), (1, 2));
    }

    #[test]
    fn fibonacci_slot_uses_top_bits() {
        // A table of 2^4 slots: shift 28.
        for h in [0u32, 1, 0xDEAD_BEEF, u32::MAX] {
            assert!(fibonacci_slot(h, 28) < 16);
        }
        assert_eq!(fibonacci_slot(1, 28), FIBONACCI >> 28);
    }
}
