//! Collision filtering: which pairs a broad phase reports.
//!
//! Each id has [`Groups`]: the groups it belongs to (`member`) and the
//! groups it collides with (`filter`), 32 bits each. Two ids interact when
//! each one's membership meets the other's filter,
//! `(a.member & b.filter) != 0 && (b.member & a.filter) != 0` — symmetric,
//! so the order of a pair does not matter. The caller keeps one entry per
//! id in a slice (`8` bytes per id of the broad phase's capacity) and
//! passes it to the filtered forms of [`BroadPhase`](crate::BroadPhase)
//! ([`for_each_overlap_filtered`](crate::BroadPhase::for_each_overlap_filtered),
//! [`query_filtered`](crate::BroadPhase::query_filtered),
//! [`par_for_each_overlap_filtered`](crate::BroadPhase::par_for_each_overlap_filtered)),
//! which every broad phase has: a pair (or a query hit) whose ids do not
//! interact is dropped before the caller's callback sees it.
//!
//! ```
//! use spatium::filter::Groups;
//! use spatium::{Aabb2, BroadPhase, BruteForceBroadPhase, BruteSlot, Vec2};
//!
//! const PLAYER: u32 = 1 << 0;
//! const DEBRIS: u32 = 1 << 1;
//! let groups = [
//!     Groups::new(PLAYER, DEBRIS),          // id 0: a player hits debris only
//!     Groups::new(DEBRIS, PLAYER | DEBRIS), // id 1: debris hits everything
//!     Groups::new(PLAYER, DEBRIS),          // id 2: another player
//! ];
//! let mut bp = BruteForceBroadPhase::new([BruteSlot::<Aabb2>::EMPTY; 3]);
//! let unit = Aabb2::new(Vec2::new(0.0, 0.0), Vec2::new(1.0, 1.0))?;
//! for id in 0..3 {
//!     bp.insert(id, unit)?; // all three overlap
//! }
//! let mut pairs = Vec::new();
//! bp.for_each_overlap_filtered(&groups, |a, b| pairs.push((a.min(b), a.max(b))))?;
//! pairs.sort();
//! assert_eq!(pairs, [(0, 1), (1, 2)]); // the two players ignore each other
//! # Ok::<(), spatium::Error>(())
//! ```

use crate::error::Error;

/// The collision groups of one id: what it is (`member`) and what it
/// collides with (`filter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Groups {
    /// The groups this id belongs to.
    pub member: u32,
    /// The groups this id collides with.
    pub filter: u32,
}

impl Groups {
    /// In every group, colliding with every group: no filtering.
    pub const ALL: Self = Self::new(u32::MAX, u32::MAX);
    /// In no group: collides with nothing.
    pub const NONE: Self = Self::new(0, 0);

    /// Member of `member`, colliding with `filter`.
    pub const fn new(member: u32, filter: u32) -> Self {
        Self { member, filter }
    }

    /// Whether a pair of ids with these groups is reported: each one's
    /// membership meets the other's filter (symmetric).
    #[inline(always)]
    pub const fn interacts(self, other: Self) -> bool {
        (self.member & other.filter) != 0 && (other.member & self.filter) != 0
    }
}

impl Default for Groups {
    /// [`Groups::ALL`]: unfiltered.
    fn default() -> Self {
        Self::ALL
    }
}

/// Checks that `groups` has an entry for every id below `capacity`.
///
/// # Errors
/// [`Error::BufferTooSmall`] otherwise.
pub(crate) fn check(groups: &[Groups], capacity: usize) -> Result<(), Error> {
    if groups.len() < capacity {
        return Err(Error::BufferTooSmall {
            needed: capacity,
            available: groups.len(),
        });
    }
    Ok(())
}

/// Whether the ids `a` and `b` interact (`false` for an id without an
/// entry, which [`check`] rules out).
#[inline(always)]
pub(crate) fn pair(groups: &[Groups], a: u32, b: u32) -> bool {
    match (groups.get(a as usize), groups.get(b as usize)) {
        (Some(ga), Some(gb)) => ga.interacts(*gb),
        _ => false,
    }
}
