//! Size report: the linear kd-tree behind `BroadPhase` (`KdBroadPhase`
//! with `u32` codes, the paper's splitting, radix sort): insert, update,
//! pairs (a rebuild), box queries, remove, in `static` arrays.

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use panic_halt as _;
use spatium::kdtree::{KdBroadPhase, KdConfig, KdRecord, KdSlot};
use spatium::{Aabb3, BroadPhase, Vec3};
use spatium_fw_common::{XorShift32, boxes3};
use static_cell::ConstStaticCell;

const C: usize = 64;

// One `static` per buffer: the record buffers (all zeros) go to `.bss`.
static SLOTS: ConstStaticCell<[KdSlot<Aabb3>; C]> = ConstStaticCell::new([KdSlot::EMPTY; C]);
static RECORDS: ConstStaticCell<[KdRecord<u32>; 4 * C]> =
    ConstStaticCell::new([KdRecord::EMPTY; 4 * C]);
static SCRATCH: ConstStaticCell<[KdRecord<u32>; 4 * C]> =
    ConstStaticCell::new([KdRecord::EMPTY; 4 * C]);
static BOXES: ConstStaticCell<[Aabb3; C]> = ConstStaticCell::new(
    [Aabb3 {
        min: Vec3::ZERO,
        max: Vec3::ZERO,
    }; C],
);

#[entry]
fn main() -> ! {
    let mut tree = KdBroadPhase::<Aabb3, u32, _, _>::new(
        SLOTS.take(),
        RECORDS.take(),
        SCRATCH.take(),
        KdConfig::DEFAULT,
    );
    let kd = &mut tree;
    let boxes = BOXES.take();
    boxes3(&mut XorShift32::new(black_box(7)), 10.0, 0.2, 1.6, boxes);
    for (id, b) in boxes.iter().enumerate() {
        black_box(kd.insert(id as u32, *b).is_ok());
    }
    let mut rng = XorShift32::new(black_box(9));
    loop {
        for (id, b) in boxes.iter_mut().enumerate() {
            let d = Vec3::new(rng.range(-0.1, 0.1), rng.range(-0.1, 0.1), 0.0);
            b.min += d;
            b.max += d;
            black_box(kd.update(id as u32, *b).is_ok());
        }
        let mut pairs = 0u32;
        black_box(kd.for_each_overlap(|_, _| pairs += 1).is_ok());
        let i = (rng.next() as usize) % C;
        black_box(kd.query(&boxes[i], |_| pairs += 1).is_ok());
        if let Ok(b) = kd.remove(i as u32) {
            black_box(kd.insert(i as u32, b).is_ok());
        }
        black_box(pairs);
    }
}
