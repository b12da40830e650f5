//! The one storage pattern of the crate.
//!
//! Every structure is generic over its buffers, each `S: Storage<T>`, which is
//! any `AsRef<[T]> + AsMut<[T]>`:
//!
//! * `[T; N]`: a fixed-size instance whose memory is part of the value, so it
//!   can live in a `static` on a microcontroller (each structure's `new` is a
//!   `const fn`);
//! * `&mut [T]`: a runtime-sized instance over memory the caller owns, for
//!   example a `Vec` on a host simulating a million particles.
//!
//! The same code serves both. Capacities are the buffers' lengths; nothing is
//! ever allocated or grown. Each structure documents its memory as a formula
//! over these lengths.
//!
//! # Buffers that must fit together: one rule
//!
//! `new` is a `const fn` that never fails, so a structure can live in a
//! `static`. Every relation between its buffers is therefore either harmless
//! by construction — the capacity is the smallest that all the buffers
//! support — or checked with an error at first use (a table length that is
//! not a power of two is refused by the first build or insert). Structures
//! with such a checkable relation also offer `new_checked`, which returns
//! the same error at construction time ([`crate::Error::InvalidTableLength`],
//! [`crate::Error::InvalidStorage`]). No buffer relation is ever only a doc
//! sentence: no combination of buffers makes an operation panic.
//!
//! Every buffer element type's `Default` equals its `EMPTY`, so a buffer
//! filled with `Default::default()` is an empty buffer.

/// A buffer of `T` a structure can use as storage: `[T; N]`, `&mut [T]`, or
/// anything else that derefs to a mutable slice.
pub trait Storage<T>: AsRef<[T]> + AsMut<[T]> {}

impl<T, S: AsRef<[T]> + AsMut<[T]> + ?Sized> Storage<T> for S {}

#[cfg(test)]
mod tests {
    use crate::geom::{Aabb2, Aabb3, Vec2, Vec3};
    use crate::kdtree::{KdRecord, KdSlot};
    use crate::sph::ParticleState;
    use crate::sph::boundary::Obstacle;
    use crate::uniform::{
        Bucket, BucketParticle, CellRecord, Head, LinkedParticle, SortedParticle, TableSlot,
    };
    use crate::{BruteSlot, NeighborPair};

    /// Every buffer type's `Default` is its `EMPTY`, so a buffer filled with
    /// defaults is an empty buffer (a default that differs shows phantom
    /// elements). The hierarchical structures test theirs beside them.
    #[test]
    fn buffer_defaults_are_empty() {
        fn same<T: Default + PartialEq + core::fmt::Debug>(empty: T) {
            assert_eq!(T::default(), empty);
        }
        same(BruteSlot::<Aabb3>::EMPTY);
        same(BruteSlot::<Aabb2>::EMPTY);
        same(Bucket::<4>::EMPTY);
        same(BucketParticle::<Vec3>::EMPTY);
        same(Head::EMPTY);
        same(LinkedParticle::<Vec2>::EMPTY);
        same(TableSlot::EMPTY);
        same(SortedParticle::<Vec3>::EMPTY);
        same(CellRecord::<Vec3>::EMPTY);
        same(KdRecord::<u64>::EMPTY);
        same(NeighborPair::EMPTY);
        same(Obstacle::<Vec3>::EMPTY);
        same(ParticleState::<Vec3>::EMPTY);
        // KdSlot's EMPTY is a box of NaNs, which is not equal to itself.
        use crate::ids::IdSlot;
        assert!(KdSlot::<Aabb3>::default().stored().is_none());
    }
}
