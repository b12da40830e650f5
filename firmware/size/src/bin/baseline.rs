//! Baseline for the size report: cortex-m-rt and panic-halt with a loop that
//! is not optimised away, and no spatium code. Subtract its `.text` from the
//! other binaries' to see what a structure costs.

#![no_std]
#![no_main]

use cortex_m_rt::entry;
use panic_halt as _;

#[entry]
fn main() -> ! {
    let mut x = core::hint::black_box(1u32);
    loop {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        core::hint::black_box(x);
    }
}
