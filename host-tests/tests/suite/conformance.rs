//! The trait contracts ([`spatium_host_tests::contract`]) over every
//! structure: every kind of the run-time registry in 3D and 2D (a kind added
//! there is covered without a line here), plus configurations the registry
//! does not build, one line each.

use spatium::{Aabb2, Aabb3, HhgConfig, Vec2, Vec3};
use spatium_host::make;
use spatium_host_tests::contract::{broad_phase_contract, neighbor_search_contract};
use spatium_host_tests::registry::{self, BROAD_CAPACITY, SEARCH_CAPACITY};

#[test]
fn broad_phase_every_kind_3d() {
    for kind in registry::broad_kinds() {
        eprintln!("{}", registry::broad_name::<Aabb3>(kind));
        broad_phase_contract::<Aabb3, _>(|| registry::broad(kind, BROAD_CAPACITY));
    }
}

#[test]
fn broad_phase_every_kind_2d() {
    for kind in registry::broad_kinds() {
        eprintln!("{}", registry::broad_name::<Aabb2>(kind));
        broad_phase_contract::<Aabb2, _>(|| registry::broad(kind, BROAD_CAPACITY));
    }
}

#[test]
fn neighbor_search_every_kind_3d() {
    for kind in registry::search_kinds() {
        eprintln!("{}", registry::search_name::<Vec3>(kind));
        neighbor_search_contract::<Vec3, _>(SEARCH_CAPACITY, || {
            registry::search(kind, SEARCH_CAPACITY)
        });
    }
}

#[test]
fn neighbor_search_every_kind_2d() {
    for kind in registry::search_kinds() {
        eprintln!("{}", registry::search_name::<Vec2>(kind));
        neighbor_search_contract::<Vec2, _>(SEARCH_CAPACITY, || {
            registry::search(kind, SEARCH_CAPACITY)
        });
    }
}

/// The hierarchical hash grid with its grids from the first box, and with
/// no arena at all (every box in the flat array or the unbounded
/// container).
#[test]
fn broad_phase_hhg_configs() {
    let grids = HhgConfig::DEFAULT.with_small_n_threshold(0);
    broad_phase_contract::<Aabb3, _>(|| make::hhg(BROAD_CAPACITY, 1 << 17, grids));
    broad_phase_contract::<Aabb2, _>(|| make::hhg(BROAD_CAPACITY, 1 << 17, grids));
    broad_phase_contract::<Aabb3, _>(|| make::hhg(BROAD_CAPACITY, 0, grids));
}
