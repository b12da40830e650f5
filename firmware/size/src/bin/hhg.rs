//! Size report: the hierarchical hash grid (`HierarchicalHashGrid`) behind
//! `BroadPhase`: insert, update (one by one and `update_all`), pairs, box
//! queries, remove, in `static` arrays.

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use panic_halt as _;
use spatium::{
    Aabb3, BroadPhase, HhgConfig, HhgRecord, HhgSlot, HierarchicalHashGrid, UpdateStrategy, Vec3,
};
use spatium_fw_common::{XorShift32, boxes3};
use static_cell::ConstStaticCell;

const C: usize = 64;
/// Two grids of 8³ cells (plus their 729-word offset tables).
const ARENA: usize = 2 * (729 + 512);

// One `static` per buffer: the arena (all zeros) goes to `.bss`.
static SLOTS: ConstStaticCell<[HhgSlot<Aabb3>; C]> = ConstStaticCell::new([HhgSlot::EMPTY; C]);
static RECORDS: ConstStaticCell<[HhgRecord<Aabb3>; C]> =
    ConstStaticCell::new([HhgRecord::EMPTY; C]);
static ARENA_WORDS: ConstStaticCell<[u32; ARENA]> = ConstStaticCell::new([0; ARENA]);
static BOXES: ConstStaticCell<[Aabb3; C]> = ConstStaticCell::new(
    [Aabb3 {
        min: Vec3::ZERO,
        max: Vec3::ZERO,
    }; C],
);

#[entry]
fn main() -> ! {
    let mut grid = HierarchicalHashGrid::new(
        SLOTS.take(),
        RECORDS.take(),
        ARENA_WORDS.take(),
        HhgConfig::DEFAULT,
    );
    let g = &mut grid;
    let boxes = BOXES.take();
    boxes3(&mut XorShift32::new(black_box(7)), 10.0, 0.2, 1.6, boxes);
    for (id, b) in boxes.iter().enumerate() {
        black_box(g.insert(id as u32, *b).is_ok());
    }
    let mut rng = XorShift32::new(black_box(9));
    loop {
        for b in boxes.iter_mut() {
            let d = Vec3::new(rng.range(-0.1, 0.1), rng.range(-0.1, 0.1), 0.0);
            b.min += d;
            b.max += d;
        }
        black_box(g.update_all(boxes, UpdateStrategy::Incremental).is_ok());
        let i = (rng.next() as usize) % C;
        black_box(g.update(i as u32, boxes[i]).is_ok());
        let mut pairs = 0u32;
        black_box(g.for_each_overlap(|_, _| pairs += 1).is_ok());
        let q = boxes[(rng.next() as usize) % C];
        black_box(g.query(&q, |_| pairs += 1).is_ok());
        if let Ok(b) = g.remove(i as u32) {
            black_box(g.insert(i as u32, b).is_ok());
        }
        black_box(pairs);
    }
}
