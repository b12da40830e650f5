//! Stack report, run directly under QEMU with semihosting (not a test): the
//! stack each main operation uses in this build (release or the tests'
//! profile), measured by painting, against the documented bounds of
//! `spatium_fw_common::workloads`; then the structures' own sizes on this
//! 32-bit target. Exits 0 if every operation is within its bound, 1 if not,
//! 101 on a panic.

#![no_std]
#![no_main]

use core::mem::size_of;

use cortex_m_rt::entry;
use semihosting::{println, process};
use spatium::hhash::{HashBucket, HashEntry, HashSlot, HierarchicalHash};
use spatium::kdtree::{KdRecord, LinearKdTree};
use spatium::sph::ParticleState;
use spatium::sph::boundary::Obstacle;
use spatium::uniform::{CellRecord, CellSortedHash, SortedParticle, TableSlot};
use spatium::{Aabb3, HhgRecord, HhgSlot, HierarchicalHashGrid, Vec3};
use spatium_fw_common::workloads;

#[entry]
fn main() -> ! {
    let profile = if cfg!(debug_assertions) {
        "tests' profile: opt-level s, debug assertions, overflow checks"
    } else {
        "release: opt-level s, LTO"
    };
    println!("stack use per operation (thumbv7em-none-eabihf, {profile})");
    println!("{:<50} {:>8} {:>8}", "operation", "bytes", "bound");
    let mut over = 0;
    workloads::run(|f| {
        let flag = if f.ok() { "" } else { "  OVER" };
        println!("{:<50} {:>8} {:>8}{}", f.name, f.used.bytes, f.bound, flag);
        if !f.ok() {
            over += 1;
        }
    });
    println!();
    println!("struct sizes outside the buffers (32-bit target)");
    type Sorted =
        CellSortedHash<Vec3, [TableSlot; 0], [SortedParticle<Vec3>; 0], [CellRecord<Vec3>; 0]>;
    type Hhg = HierarchicalHashGrid<Aabb3, [HhgSlot<Aabb3>; 0], [HhgRecord<Aabb3>; 0], [u32; 0]>;
    type Tree = LinearKdTree<Aabb3, u64, [KdRecord<u64>; 0]>;
    type HHash =
        HierarchicalHash<Aabb3, [HashSlot<Aabb3>; 0], [HashBucket; 0], [HashEntry; 0], [Vec3; 0]>;
    println!("{:<50} {:>8}", "CellSortedHash<Vec3>", size_of::<Sorted>());
    println!(
        "{:<50} {:>8}",
        "HierarchicalHashGrid<Aabb3>",
        size_of::<Hhg>()
    );
    println!(
        "{:<50} {:>8}",
        "LinearKdTree<Aabb3, u64>",
        size_of::<Tree>()
    );
    println!(
        "{:<50} {:>8}",
        "HierarchicalHash<Aabb3>",
        size_of::<HHash>()
    );
    println!(
        "{:<50} {:>8}",
        "KdRecord<u128> (formula says 32)",
        size_of::<KdRecord<u128>>()
    );
    println!(
        "{:<50} {:>8}",
        "Vec3 + ParticleState<Vec3> (80)",
        size_of::<Vec3>() + size_of::<ParticleState<Vec3>>()
    );
    println!(
        "{:<50} {:>8}",
        "Obstacle<Vec3> (52)",
        size_of::<Obstacle<Vec3>>()
    );
    if over > 0 {
        println!("{over} operation(s) over their bound");
        process::exit(1);
    }
    process::exit(0);
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    semihosting::eprintln!("stack-report panicked: {info}");
    process::exit(101)
}
