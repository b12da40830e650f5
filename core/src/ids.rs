//! The id → slot table every broad phase keeps: one slot per caller id,
//! the three id errors, and one capacity rule.
//!
//! A broad phase stores the box of id `i` in slot `i` of a caller-provided
//! buffer, so insert, update and remove address it directly. Each structure
//! has its own slot type (what else it keeps per id differs), and each slot
//! type says whether it holds a box through `IdSlot`; the checks below are
//! the same for all of them.

use crate::error::Error;

/// Largest capacity of any broad phase: ids are below `2³¹ − 1`, so an id
/// never equals [`crate::table::NONE`] and its top bit stays free for tags.
pub const MAX_IDS: usize = (1 << 31) - 1;

/// The one capacity rule: ids must be below the slot buffer's length, and
/// below [`MAX_IDS`].
#[inline(always)]
pub(crate) const fn capacity(slots: usize) -> usize {
    if slots < MAX_IDS { slots } else { MAX_IDS }
}

/// A slot of an id table: whether it holds a box, and which.
pub(crate) trait IdSlot {
    /// The box type stored.
    type Box: Copy;
    /// The stored box, or `None` for an unused slot.
    fn stored(&self) -> Option<Self::Box>;
}

/// The slot index of `id`.
///
/// # Errors
/// [`Error::IdOutOfRange`] unless `id` is below the capacity.
#[inline(always)]
pub(crate) fn index(slots: usize, id: u32) -> Result<usize, Error> {
    if (id as usize) < capacity(slots) {
        Ok(id as usize)
    } else {
        Err(Error::IdOutOfRange { id })
    }
}

/// The box stored under `id`.
///
/// # Errors
/// [`Error::IdOutOfRange`], or [`Error::UnknownId`] for an unused slot.
#[inline(always)]
pub(crate) fn stored<S: IdSlot>(slots: &[S], id: u32) -> Result<S::Box, Error> {
    let i = index(slots.len(), id)?;
    slots[i].stored().ok_or(Error::UnknownId { id })
}

/// The slot index of `id`, which must be unused (an insert).
///
/// # Errors
/// [`Error::IdOutOfRange`], or [`Error::DuplicateId`] for a used slot.
#[inline(always)]
pub(crate) fn vacant<S: IdSlot>(slots: &[S], id: u32) -> Result<usize, Error> {
    vacant_for(slots, id, || Ok(()))
}

/// The slot index of `id` for an insert whose box `check` validates, with
/// the errors in the order every broad phase reports them:
/// [`Error::IdOutOfRange`], then the box's error, then
/// [`Error::DuplicateId`].
///
/// # Errors
/// As listed.
#[inline(always)]
pub(crate) fn vacant_for<S: IdSlot>(
    slots: &[S],
    id: u32,
    check: impl FnOnce() -> Result<(), Error>,
) -> Result<usize, Error> {
    let i = index(slots.len(), id)?;
    check()?;
    if slots[i].stored().is_some() {
        Err(Error::DuplicateId { id })
    } else {
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy)]
    struct S(Option<u8>);
    impl IdSlot for S {
        type Box = u8;
        fn stored(&self) -> Option<u8> {
            self.0
        }
    }

    #[test]
    fn the_three_id_errors() {
        let slots = [S(Some(7)), S(None)];
        assert_eq!(stored(&slots, 0), Ok(7));
        assert_eq!(stored(&slots, 1), Err(Error::UnknownId { id: 1 }));
        assert_eq!(stored(&slots, 2), Err(Error::IdOutOfRange { id: 2 }));
        assert_eq!(vacant(&slots, 1), Ok(1));
        assert_eq!(vacant(&slots, 0), Err(Error::DuplicateId { id: 0 }));
        assert_eq!(
            vacant(&slots, u32::MAX),
            Err(Error::IdOutOfRange { id: u32::MAX })
        );
    }

    #[test]
    fn capacity_rule() {
        assert_eq!(capacity(0), 0);
        assert_eq!(capacity(10), 10);
        assert_eq!(capacity(usize::MAX), MAX_IDS);
        assert_eq!(index(usize::MAX, (MAX_IDS - 1) as u32), Ok(MAX_IDS - 1));
        assert!(index(usize::MAX, MAX_IDS as u32).is_err());
    }
}
