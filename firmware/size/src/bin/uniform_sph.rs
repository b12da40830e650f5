//! Size report: the SPH step (`sph::Fluid::step`, walls only) over the
//! cell-sorted uniform hash (`uniform::CellSortedHash`), in `static`
//! arrays. The step builds the hash and walks its pairs (three passes, one
//! pair walk), so this is the neighbour search and the SPH step together;
//! `fw-linked-sph` is the same over `uniform::LinkedHash`. The parameters
//! are the `const` `spatium_fw_common::SPH_PARAMS` (a firmware knows its
//! scene), so `SphParams::seed`'s `f64` lattice sum is not linked.
//! `fw-uniform-sph-obstacles` adds a `PairCache` and a sphere behind a
//! broad phase.

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use panic_halt as _;
use spatium::sph::{Fluid, ParticleState};
use spatium::uniform::{CellRecord, CellSortedHash, SortedParticle, TableSlot};
use spatium::{Aabb3, Vec3};
use spatium_fw_common::{SPH_PARAMS, SPH_SPACING};
use static_cell::ConstStaticCell;

const N: usize = 256;

// Each buffer is a `static` of its own, so the all-zero ones go to `.bss`;
// only buffers whose empty value is not all zeros (`CellRecord::EMPTY`)
// take `.data` (flash and RAM).
static POSITIONS: ConstStaticCell<[Vec3; N]> = ConstStaticCell::new([Vec3::ZERO; N]);
static STATE: ConstStaticCell<[ParticleState<Vec3>; N]> =
    ConstStaticCell::new([ParticleState::EMPTY; N]);
static TABLE: ConstStaticCell<[TableSlot; 512]> = ConstStaticCell::new([TableSlot::EMPTY; 512]);
static SORTED: ConstStaticCell<[SortedParticle<Vec3>; N]> =
    ConstStaticCell::new([SortedParticle::EMPTY; N]);
static RECORDS: ConstStaticCell<[CellRecord<Vec3>; N]> =
    ConstStaticCell::new([CellRecord::EMPTY; N]);

#[entry]
fn main() -> ! {
    let mut fluid = Fluid::new(POSITIONS.take(), STATE.take(), SPH_PARAMS);
    let mut hash = CellSortedHash::new(TABLE.take(), SORTED.take(), RECORDS.take());
    let (fluid, hash) = (&mut fluid, &mut hash);
    let block = Aabb3 {
        min: Vec3::new(0.0, 0.1, 0.0),
        max: black_box(Vec3::new(0.2, 0.2, 0.2)),
    };
    black_box(fluid.fill_block(block, SPH_SPACING, Vec3::ZERO).is_ok());
    loop {
        black_box(fluid.step(hash, &mut (), &mut ()).is_ok());
        black_box(&fluid.positions()[0]);
    }
}
