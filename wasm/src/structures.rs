//! The structures a page can choose: the project's run-time-chosen types
//! ([`spatium_host::runtime`], shared with the native demo and the
//! benchmarks) in 2D. [`Search`] forwards [`spatium::NeighborSearch`] and
//! [`Broad`] forwards [`spatium::BroadPhase`] to the structure they hold,
//! so the solver is compiled once for all of them. All buffers are `Vec`s
//! sized once when the scene is made; nothing is allocated while it runs.

use spatium::{Aabb2, Vec2};
pub use spatium_host::runtime::{AnyBroad, AnySearch, BroadKind, Named, SearchKind};

/// The fluid's neighbour search, chosen at run time.
pub type Search = AnySearch<Vec2>;

/// The obstacles' broad phase, chosen at run time.
pub type Broad = AnyBroad<Aabb2>;

/// Every kind of `K`, in menu order.
pub fn kinds<K: Named>() -> impl Iterator<Item = K> {
    K::NAMES.iter().map(|&(_, k)| k)
}
