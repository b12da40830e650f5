//! Size report: hierarchical hashing (`hhash::HierarchicalHash`): objects
//! behind `BroadPhase` (insert, update, pairs, box queries) and particles
//! behind `NeighborSearch` (build, pairs) in one table, in `static` arrays.

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use panic_halt as _;
use spatium::hhash::{HashBucket, HashConfig, HashEntry, HashSlot, HierarchicalHash};
use spatium::{Aabb3, BoundingBox, BroadPhase, NeighborSearch, Vec3};
use spatium_fw_common::{XorShift32, boxes3, points3};
use static_cell::ConstStaticCell;

const C: usize = 64;
const N: usize = 128;
const E: usize = 8 * C + N;

// One `static` per buffer: the particle buffer (all zeros) goes to `.bss`.
static SLOTS: ConstStaticCell<[HashSlot<Aabb3>; C]> = ConstStaticCell::new([HashSlot::EMPTY; C]);
static TABLE: ConstStaticCell<[HashBucket; 2048]> = ConstStaticCell::new([HashBucket::EMPTY; 2048]);
static POOL: ConstStaticCell<[HashEntry; E]> = ConstStaticCell::new([HashEntry::EMPTY; E]);
static PARTICLES: ConstStaticCell<[Vec3; N]> = ConstStaticCell::new([Vec3::ZERO; N]);
static BOXES: ConstStaticCell<[Aabb3; C]> = ConstStaticCell::new(
    [Aabb3 {
        min: Vec3::ZERO,
        max: Vec3::ZERO,
    }; C],
);
static POINTS: ConstStaticCell<[Vec3; N]> = ConstStaticCell::new([Vec3::ZERO; N]);

#[entry]
fn main() -> ! {
    let mut hash = HierarchicalHash::<Aabb3, _, _, _, _>::new(
        SLOTS.take(),
        TABLE.take(),
        POOL.take(),
        PARTICLES.take(),
        HashConfig::DEFAULT,
    );
    let h = &mut hash;
    let boxes = BOXES.take();
    let pts = POINTS.take();
    let mut rng = XorShift32::new(black_box(7));
    boxes3(&mut rng, 1.0, 0.02, 0.1, boxes);
    points3(&mut rng, 1.0, pts);
    let radius = black_box(0.05);
    if let Ok(config) = HashConfig::from_sizes(radius, boxes.iter().map(|b| b.longest_edge())) {
        black_box(h.set_config(config).is_ok());
    }
    for (id, b) in boxes.iter().enumerate() {
        black_box(h.insert(id as u32, *b).is_ok());
    }
    loop {
        for (id, b) in boxes.iter_mut().enumerate() {
            let d = Vec3::new(rng.range(-0.01, 0.01), rng.range(-0.01, 0.01), 0.0);
            b.min += d;
            b.max += d;
            black_box(h.update(id as u32, *b).is_ok());
        }
        let mut pairs = 0u32;
        black_box(BroadPhase::for_each_overlap(h, |_, _| pairs += 1).is_ok());
        if NeighborSearch::build(h, pts, radius).is_ok() {
            NeighborSearch::for_each_pair(h, |_, _, _| pairs += 1);
        }
        let i = (rng.next() as usize) % N;
        let path = Aabb3 {
            min: pts[i],
            max: pts[i] + Vec3::new(0.02, 0.02, 0.02),
        };
        black_box(h.query(&path, |_| pairs += 1).is_ok());
        black_box(pairs);
    }
}
