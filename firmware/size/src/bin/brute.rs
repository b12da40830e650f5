//! Size report: brute force (`BruteForceNeighbors` and
//! `BruteForceBroadPhase`), in `static` arrays.

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use panic_halt as _;
use spatium::{
    Aabb3, BroadPhase, BruteForceBroadPhase, BruteForceNeighbors, BruteSlot, NeighborSearch, Vec3,
};
use spatium_fw_common::{XorShift32, boxes3, points3};
use static_cell::ConstStaticCell;

const C: usize = 64;
const N: usize = 128;

// One `static` per buffer: the all-zero ones go to `.bss`.
static STORED: ConstStaticCell<[Vec3; N]> = ConstStaticCell::new([Vec3::ZERO; N]);
static SLOTS: ConstStaticCell<[BruteSlot<Aabb3>; C]> = ConstStaticCell::new([BruteSlot::EMPTY; C]);
static BOXES: ConstStaticCell<[Aabb3; C]> = ConstStaticCell::new(
    [Aabb3 {
        min: Vec3::ZERO,
        max: Vec3::ZERO,
    }; C],
);
static POINTS: ConstStaticCell<[Vec3; N]> = ConstStaticCell::new([Vec3::ZERO; N]);

#[entry]
fn main() -> ! {
    let mut neighbors = BruteForceNeighbors::new(STORED.take());
    let mut broad = BruteForceBroadPhase::new(SLOTS.take());
    let (nb, bp) = (&mut neighbors, &mut broad);
    let boxes = BOXES.take();
    let pts = POINTS.take();
    let mut rng = XorShift32::new(black_box(7));
    boxes3(&mut rng, 10.0, 0.2, 1.6, boxes);
    for (id, b) in boxes.iter().enumerate() {
        black_box(bp.insert(id as u32, *b).is_ok());
    }
    loop {
        points3(&mut rng, 1.0, pts);
        let mut pairs = 0u32;
        if nb.build(pts, black_box(0.1)).is_ok() {
            nb.for_each_pair(|_, _, _| pairs += 1);
        }
        for (id, b) in boxes.iter_mut().enumerate() {
            let d = Vec3::new(rng.range(-0.1, 0.1), rng.range(-0.1, 0.1), 0.0);
            b.min += d;
            b.max += d;
            black_box(bp.update(id as u32, *b).is_ok());
        }
        black_box(bp.for_each_overlap(|_, _| pairs += 1).is_ok());
        black_box(bp.query(&boxes[0], |_| pairs += 1).is_ok());
        black_box(pairs);
    }
}
