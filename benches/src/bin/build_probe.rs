//! Scratch: par_build of the cell-sorted hash on 1 and 2 workers.
use spatium::NeighborSearch;
use spatium::table::table_len;
use spatium_benches::scene::{Order, Scene};
use spatium_host::make;
use spatium_host::par::HostExec;
use std::time::Instant;

fn main() {
    let t: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let reps: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let scene = Scene::new(100, Order::CellOrdered);
    let n = scene.points.len();
    let mut hash =
        make::cell_sorted::<spatium::Vec3>(n, table_len(n, spatium_benches::TABLE_FACTOR));
    let exec = HostExec::new(t);
    let mut v = Vec::new();
    for _ in 0..reps {
        let s = Instant::now();
        hash.par_build(&exec, &scene.points, scene.radius).unwrap();
        v.push(s.elapsed().as_secs_f64() * 1e3);
    }
    v.sort_by(f64::total_cmp);
    println!("{t} threads: median {:.2} ms", v[v.len() / 2]);
}
