//! Every structure kind of the run-time registry (`spatium_host::runtime`),
//! sized for the models and contracts of this crate. A kind added to
//! [`BroadKind`] or [`SearchKind`] (and its `NAMES`) is covered by the
//! conformance suite, the model properties and the `broad_phase` fuzz target
//! without further code.

use spatium::{BoundingBox, Point};
use spatium_host::boxes::TestBox;
use spatium_host::runtime::{AnyBroad, AnySearch, BroadKind, Named, SearchKind};

/// Ids of the broad phases the models drive (the generators draw ids up to
/// [`crate::model::IDS`], so some are out of range).
pub const BROAD_CAPACITY: usize = 40;

/// Particles of the searches the models drive (builds of more are refused).
pub const SEARCH_CAPACITY: usize = 24;

/// Every broad-phase kind, in menu order.
pub fn broad_kinds() -> impl Iterator<Item = BroadKind> {
    BroadKind::NAMES.iter().map(|&(_, k)| k)
}

/// Every neighbour-search kind, in menu order.
pub fn search_kinds() -> impl Iterator<Item = SearchKind> {
    SearchKind::NAMES.iter().map(|&(_, k)| k)
}

/// The boxes a broad phase is sized for: edges `2⁻² · 2^(i mod 9)` (so the
/// hashes get a class for every size the generators make, up to 64),
/// straddling the origin so that each spans two cells per axis of its class
/// (the hashes' pools get room for any lattice box of those sizes).
pub fn sizing_boxes<B: TestBox>(capacity: usize) -> Vec<B> {
    (0..capacity)
        .map(|i| {
            let h = 0.125 * (1u32 << (i % 9)) as f32;
            B::raw([-h; 3], [h; 3])
        })
        .collect()
}

/// An empty broad phase of `kind` with ids below `capacity`, sized by
/// [`sizing_boxes`]; hashes queried with boxes of edge `2⁻²`.
///
/// # Panics
/// If the registry refuses the sizing (a bug).
pub fn broad<B: TestBox>(kind: BroadKind, capacity: usize) -> AnyBroad<B> {
    AnyBroad::new(kind, &sizing_boxes::<B>(capacity), 0.25)
        .unwrap_or_else(|e| panic!("{}: {e}", kind.name()))
}

/// An empty neighbour search of `kind` for up to `capacity` particles.
pub fn search<P: Point>(kind: SearchKind, capacity: usize) -> AnySearch<P> {
    AnySearch::new(kind, capacity)
}

/// The name of a broad kind and its dimension, for messages.
pub fn broad_name<B: BoundingBox>(kind: BroadKind) -> String {
    format!("{} {}D", kind.name(), B::Point::DIM)
}

/// The name of a search kind and its dimension, for messages.
pub fn search_name<P: Point>(kind: SearchKind) -> String {
    format!("{} {}D", kind.name(), P::DIM)
}
