//! Size report: as `fw-uniform-sph`, plus what the README's scene adds: the
//! search behind a `PairCache` (one search per force evaluation) and a
//! sphere obstacle behind a broad phase (`Obstacles` over the brute-force
//! broad phase, the smallest one).

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use panic_halt as _;
use spatium::sph::boundary::{Obstacle, Obstacles, Shape};
use spatium::sph::{Fluid, ParticleState};
use spatium::uniform::{CellRecord, CellSortedHash, SortedParticle, TableSlot};
use spatium::{Aabb3, BruteForceBroadPhase, BruteSlot, NeighborPair, PairCache, Vec3};
use spatium_fw_common::{SPH_PARAMS, SPH_SPACING};
use static_cell::ConstStaticCell;

const N: usize = 256;

// One `static` per buffer: the all-zero ones go to `.bss`.
static POSITIONS: ConstStaticCell<[Vec3; N]> = ConstStaticCell::new([Vec3::ZERO; N]);
static STATE: ConstStaticCell<[ParticleState<Vec3>; N]> =
    ConstStaticCell::new([ParticleState::EMPTY; N]);
static TABLE: ConstStaticCell<[TableSlot; 512]> = ConstStaticCell::new([TableSlot::EMPTY; 512]);
static SORTED: ConstStaticCell<[SortedParticle<Vec3>; N]> =
    ConstStaticCell::new([SortedParticle::EMPTY; N]);
static RECORDS: ConstStaticCell<[CellRecord<Vec3>; N]> =
    ConstStaticCell::new([CellRecord::EMPTY; N]);
static PAIRS: ConstStaticCell<[NeighborPair; 16 * N]> =
    ConstStaticCell::new([NeighborPair::EMPTY; 16 * N]);
static SHAPES: ConstStaticCell<[Obstacle<Vec3>; 4]> = ConstStaticCell::new([Obstacle::EMPTY; 4]);
static SLOTS: ConstStaticCell<[BruteSlot<Aabb3>; 4]> = ConstStaticCell::new([BruteSlot::EMPTY; 4]);

#[entry]
fn main() -> ! {
    let mut fluid = Fluid::new(POSITIONS.take(), STATE.take(), SPH_PARAMS);
    let hash = CellSortedHash::new(TABLE.take(), SORTED.take(), RECORDS.take());
    let mut search = PairCache::new(hash, PAIRS.take());
    let mut solids = Obstacles::new(SHAPES.take(), BruteForceBroadPhase::new(SLOTS.take()));
    let (fluid, search, solids) = (&mut fluid, &mut search, &mut solids);
    let block = Aabb3 {
        min: Vec3::new(0.0, 0.1, 0.0),
        max: black_box(Vec3::new(0.2, 0.2, 0.2)),
    };
    black_box(fluid.fill_block(block, SPH_SPACING, Vec3::ZERO).is_ok());
    let sphere = Obstacle::fixed(Shape::Sphere {
        center: black_box(Vec3::new(0.1, 0.05, 0.1)),
        radius: 0.04,
    });
    black_box(solids.add(sphere).is_ok());
    loop {
        black_box(fluid.step(search, solids, &mut ()).is_ok());
        black_box(&fluid.positions()[0]);
    }
}
