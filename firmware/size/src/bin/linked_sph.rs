//! Size report: the SPH step (`sph::Fluid::step`, walls only) over the
//! linked-list uniform hash (`uniform::LinkedHash`: per-particle links, no
//! sort), in `static` arrays; otherwise as `fw-uniform-sph`.

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use panic_halt as _;
use spatium::sph::{Fluid, ParticleState};
use spatium::uniform::{Head, LinkedHash, LinkedParticle};
use spatium::{Aabb3, Vec3};
use spatium_fw_common::{SPH_PARAMS, SPH_SPACING};
use static_cell::ConstStaticCell;

const N: usize = 256;

// Each buffer is a `static` of its own; every empty value here is all
// zeros (`Head::EMPTY` and `LinkedParticle::EMPTY` included), so all of
// them go to `.bss`: no flash for the buffers.
static POSITIONS: ConstStaticCell<[Vec3; N]> = ConstStaticCell::new([Vec3::ZERO; N]);
static STATE: ConstStaticCell<[ParticleState<Vec3>; N]> =
    ConstStaticCell::new([ParticleState::EMPTY; N]);
static TABLE: ConstStaticCell<[Head; 512]> = ConstStaticCell::new([Head::EMPTY; 512]);
static LINKS: ConstStaticCell<[LinkedParticle<Vec3>; N]> =
    ConstStaticCell::new([LinkedParticle::EMPTY; N]);

#[entry]
fn main() -> ! {
    let mut fluid = Fluid::new(POSITIONS.take(), STATE.take(), SPH_PARAMS);
    let mut hash = LinkedHash::new(TABLE.take(), LINKS.take());
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
