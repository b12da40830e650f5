//! What a structure holds and what it costs, asked the same way of every
//! structure: [`Inspect::memory_bytes`] (the documented memory formula,
//! evaluated on this instance's buffers) and [`Inspect::stats`] (occupancy
//! figures specific to the structure).

/// Memory and occupancy of a structure.
///
/// Every structure of the crate implements it. Hashing's
/// [`ClassHash::stats_refreshed`](crate::ClassHash::stats_refreshed)
/// rehashes a stale table first, while this one reports the table as it
/// stands.
///
/// # Example
///
/// ```
/// use spatium::{Inspect, NeighborSearch, Vec3, uniform::{CellSortedHash, TableSlot, SortedParticle, CellRecord}};
///
/// let mut hash = CellSortedHash::<Vec3, _, _, _>::new(
///     [TableSlot::EMPTY; 64],
///     [SortedParticle::EMPTY; 8],
///     [CellRecord::EMPTY; 8],
/// );
/// hash.build(&[Vec3::ZERO, Vec3::new(0.5, 0.0, 0.0)], 1.0).unwrap();
/// let s = hash.stats();
/// // The grid is centred on the data: the two particles sit in the cells on
/// // either side of its origin.
/// assert_eq!((s.particles, s.table_slots, s.occupied_slots), (2, 64, 2));
/// // 8 bytes per slot and 24 per particle (3D): the documented `8T + 24N`.
/// assert_eq!(hash.memory_bytes(), 8 * 64 + 24 * 8);
/// ```
pub trait Inspect {
    /// The structure's occupancy figures.
    type Stats: Copy + core::fmt::Debug;

    /// Bytes of every buffer the structure holds: its memory formula
    /// evaluated on this instance's buffer lengths (the fixed-size fields
    /// beside the buffers are not counted). `O(1)`.
    fn memory_bytes(&self) -> usize;

    /// Occupancy figures; `O(storage)` at most, no mutation.
    fn stats(&self) -> Self::Stats;
}

/// Occupancy of a fixed-radius neighbour search (the uniform hashes and the
/// brute-force search).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SearchStats {
    /// Particles stored.
    pub particles: usize,
    /// Particles the storage holds.
    pub capacity: usize,
    /// The radius of the last build.
    pub radius: f32,
    /// Slots of the hash table (0 without one).
    pub table_slots: usize,
    /// Table slots holding particles of the current build.
    pub occupied_slots: usize,
}

/// Occupancy of the brute-force broad phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BruteStats {
    /// Boxes stored.
    pub boxes: usize,
    /// Ids the storage holds.
    pub capacity: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Aabb3, Vec3};
    use crate::traits::{BroadPhase, NeighborSearch};
    use crate::uniform::{
        Bucket, BucketHash, BucketParticle, CellRecord, CellSortedHash, Head, LinkedHash,
        LinkedParticle, SortedParticle, TableSlot,
    };
    use crate::{BruteForceBroadPhase, BruteForceNeighbors, BruteSlot};

    const PTS: [Vec3; 4] = [
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::new(0.2, 0.0, 0.0),
        Vec3::new(5.0, 0.0, 0.0),
        Vec3::new(5.3, 0.0, 0.0),
    ];

    /// Memory is the documented formula; occupancy counts the cells of the
    /// build (two clusters, each inside one cell, hashed to distinct slots
    /// in 1024).
    #[test]
    fn uniform_hashes_report_formula_and_occupancy() {
        let mut s = CellSortedHash::<Vec3, _, _, _>::new(
            [TableSlot::EMPTY; 1024],
            [SortedParticle::EMPTY; 8],
            [CellRecord::EMPTY; 8],
        );
        let mut b = BucketHash::<Vec3, _, _, 4>::new(
            [Bucket::<4>::EMPTY; 1024],
            [BucketParticle::EMPTY; 8],
        );
        let mut l = LinkedHash::<Vec3, _, _>::new([Head::EMPTY; 1024], [LinkedParticle::EMPTY; 8]);
        assert_eq!(s.stats().occupied_slots, 0);
        s.build(&PTS, 1.0).unwrap();
        b.build(&PTS, 1.0).unwrap();
        l.build(&PTS, 1.0).unwrap();
        for st in [s.stats(), b.stats(), l.stats()] {
            assert_eq!(
                (
                    st.particles,
                    st.capacity,
                    st.radius,
                    st.table_slots,
                    st.occupied_slots
                ),
                (4, 8, 1.0, 1024, 2),
                "{st:?}"
            );
        }
        assert_eq!(s.memory_bytes(), 8 * 1024 + 24 * 8);
        assert_eq!(b.memory_bytes(), (16 + 4 * 4) * 1024 + 24 * 8);
        assert_eq!(l.memory_bytes(), 8 * 1024 + 32 * 8);
    }

    #[test]
    fn brute_force_reports_formula_and_counts() {
        let mut n = BruteForceNeighbors::new([Vec3::ZERO; 8]);
        n.build(&PTS, 0.5).unwrap();
        assert_eq!(n.memory_bytes(), 12 * 8);
        assert_eq!(n.stats().particles, 4);
        let mut bp = BruteForceBroadPhase::new([BruteSlot::<Aabb3>::EMPTY; 8]);
        bp.insert(3, Aabb3::new(Vec3::ZERO, Vec3::new(1.0, 1.0, 1.0)).unwrap())
            .unwrap();
        assert_eq!(bp.memory_bytes(), 32 * 8);
        assert_eq!(
            bp.stats(),
            BruteStats {
                boxes: 1,
                capacity: 8
            }
        );
    }
}
