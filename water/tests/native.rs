//! The channel natively: the panels' checks and mappings without a GPU,
//! then the channel itself on the adapter the environment gives (lavapipe
//! in CI): the closed gate holds the water, the opened gate lets it
//! through, the paddle swings, the pipe pours.

#![cfg(not(target_arch = "wasm32"))]

#[path = "../../gpu/tests/common/mod.rs"]
mod common;

use spatium::sph::Integrator;
use spatium::sph::boundary::Shape;
use spatium::{BoundingBox, Point, Vec3};
use spatium_gpu::SortKind;
use spatium_water::channel::{
    Channel, Controls, LIVE_PARAMS, Live, MAX_PARTICLES, Start, StartConfig, track,
};

#[test]
fn the_start_panel_refuses_what_it_cannot_run() {
    StartConfig::SEED.check().expect("the seed's run");
    let bad = [
        StartConfig {
            particles: 0,
            ..StartConfig::SEED
        },
        StartConfig {
            particles: MAX_PARTICLES + 1,
            ..StartConfig::SEED
        },
        StartConfig {
            spacing: f32::NAN,
            ..StartConfig::SEED
        },
        StartConfig {
            spacing: -0.01,
            ..StartConfig::SEED
        },
        StartConfig {
            dt: 0.0,
            ..StartConfig::SEED
        },
        StartConfig {
            steps_per_frame: 0,
            ..StartConfig::SEED
        },
        StartConfig {
            steps_per_frame: 65,
            ..StartConfig::SEED
        },
    ];
    for c in bad {
        assert!(c.check().is_err(), "{c:?} accepted");
    }
}

#[test]
fn the_solids_and_the_block_fit_the_channel() {
    let c = StartConfig::SEED;
    let s = c.spacing;
    let d = c.domain();
    let gate = c.gate_at(0.0);
    // Closed: from the floor to above the water line, across the width.
    assert_eq!(gate.min().y, 0.0);
    assert!(gate.max().y >= d.max().y);
    assert_eq!((gate.min().z, gate.max().z), (d.min().z, d.max().z));
    // Open: lifted 26 spacings; the lift is clamped.
    assert!((c.gate_at(1.0).min().y - 26.0 * s).abs() < 1e-6);
    assert_eq!(c.gate_at(2.0), c.gate_at(1.0));
    assert_eq!(c.gate_at(-1.0), gate);
    // The paddle stays inside the channel over its whole swing.
    for dx in [-8.0 * s, 0.0, 8.0 * s] {
        let p = c.paddle_at(dx);
        assert!(p.min().x > gate.max().x && p.max().x < d.max().x, "{p:?}");
    }
    // The block is behind the gate; the pipe's mouth is inside, upstream.
    let block = c.block().expect("block");
    assert_eq!(block.len(), c.particles as usize);
    // A flat pool: whole layers from the floor, as high as the count needs
    // (43 × 24 points per layer), not a column standing against a wall.
    let layers = (c.particles as f32 / (43.0 * 24.0)).ceil();
    let top = block.iter().map(|x| x.y).fold(0.0f32, f32::max);
    assert!(
        top < layers * s,
        "the block reaches {top}, {layers} layers are {}",
        layers * s
    );
    assert!(block.iter().all(|x| inside(&d, *x) && x.x < gate.min().x));
    let (origin, _, _, radius) = c.pipe();
    assert!(inside(&d, origin) && origin.x + radius < gate.min().x);
}

fn inside(b: &spatium::Aabb3, x: Vec3) -> bool {
    (0..3).all(|k| x.coord(k) >= b.min().coord(k) && x.coord(k) <= b.max().coord(k))
}

#[test]
fn every_live_parameter_changes_what_it_names_and_only_that() {
    let start = StartConfig::SEED.params().expect("params");
    for name in LIVE_PARAMS {
        let mut live = Live::new(start);
        let before = live;
        let value = match name {
            "surface_tension" => 0.0,
            _ => before.get(name).expect("known") * 1.5 + 0.25,
        };
        let params = live.set(name, value).expect(name);
        assert_eq!(live.get(name), Some(value), "{name}");
        for other in LIVE_PARAMS.iter().filter(|o| **o != name) {
            assert_eq!(live.get(other), before.get(other), "{name} changed {other}");
        }
        assert_ne!(params, before.params, "{name} did not reach the solver");
    }
    // γ is kept while the surface tension is off, and comes back with it.
    let mut live = Live::new(start);
    live.set("gamma", 2.0).expect("gamma");
    assert_eq!(
        live.set("surface_tension", 0.0)
            .expect("off")
            .surface_tension,
        0.0
    );
    assert_eq!(
        live.set("surface_tension", 1.0)
            .expect("on")
            .surface_tension,
        2.0
    );
    // Refusals change nothing.
    let before = live;
    assert!(live.set("nonsense", 1.0).is_err());
    assert!(live.set("viscosity", f32::NAN).is_err());
    assert!(live.set("rest_density", 0.0).is_err());
    assert!(live.set("gamma", -1.0).is_err());
    assert_eq!(live, before);
}

#[test]
fn tracking_is_bounded_and_reaches_its_target() {
    assert_eq!(track(0.0, 1.0, 0.5, 10.0), 2.0);
    assert_eq!(track(0.0, 1.0, 0.01, 10.0), 10.0);
    assert_eq!(track(1.0, 0.0, 0.01, 10.0), -10.0);
    assert_eq!(track(0.0, 1.0, 0.0, 10.0), 0.0);
    assert_eq!(track(0.0, 1.0, f32::NAN, 10.0), 0.0);
    let mut x = 0.0f32;
    for _ in 0..100 {
        x += track(x, 0.3, 0.01, 1.0) * 0.01;
    }
    assert!((x - 0.3).abs() < 1e-5, "{x}");
}

/// 4 096 particles at spacing 0.025 as a block behind the closed gate.
fn small(start: Start) -> StartConfig {
    StartConfig {
        particles: 4096,
        spacing: 0.025,
        dt: 0.004,
        integrator: Integrator::Leapfrog,
        sort: SortKind::Counting,
        start,
        steps_per_frame: 4,
    }
}

fn solid_min(ch: &Channel, id: usize) -> Vec3 {
    match ch.fluid.obstacles()[id].shape {
        Shape::Box(b) => b.min(),
        other => panic!("solid {id} is {other:?}"),
    }
}

#[test]
fn the_gate_holds_the_water_until_it_is_lifted() {
    let Some(gpu) = common::gpu("the_gate_holds_the_water_until_it_is_lifted") else {
        return;
    };
    let config = small(Start::Block);
    let mut ch = pollster_block(Channel::new(&gpu, config, false)).expect("channel");
    let gate = config.gate_at(0.0);
    let beyond = |ch: &Channel| {
        let s = ch.fluid.read_back().expect("read back");
        assert!(!s.diverged);
        s.positions.iter().filter(|x| x.x > gate.max().x).count()
    };
    for _ in 0..40 {
        ch.advance().expect("frame");
    }
    // The pool settles: nothing is thrown about (a collapsing column of
    // water reaches metres per second here).
    let still = ch.fluid.read_back().expect("read back");
    let fastest = still
        .states
        .iter()
        .map(|st| st.velocity.dot(st.velocity).sqrt())
        .fold(0.0f32, f32::max);
    eprintln!("closed gate, 40 frames: fastest particle {fastest:.3} m/s");
    assert!(fastest < 0.5, "the pool is not at rest: {fastest} m/s");
    assert_eq!(beyond(&ch), 0, "water got past the closed gate");
    assert_eq!(solid_min(&ch, 0).y, 0.0, "the closed gate moved");

    ch.controls.gate_lift = 1.0;
    for _ in 0..60 {
        ch.advance().expect("frame");
    }
    let lifted = solid_min(&ch, 0).y;
    assert!(
        (lifted - config.gate_at(1.0).min().y).abs() < 1e-4,
        "the gate is at {lifted}"
    );
    let through = beyond(&ch);
    eprintln!("gate open for 60 frames: {through} of 4096 particles past it");
    assert!(
        through > 100,
        "only {through} particles passed the open gate"
    );

    // The paddle swings while it is on, and comes back to rest.
    let rest = solid_min(&ch, 1).x;
    ch.controls = Controls {
        paddle_on: true,
        ..ch.controls
    };
    let mut far = 0.0f32;
    for _ in 0..30 {
        ch.advance().expect("frame");
        far = far.max((solid_min(&ch, 1).x - rest).abs());
    }
    assert!(far > 2.0 * config.spacing, "the paddle swung only {far} m");
    ch.controls.paddle_on = false;
    for _ in 0..40 {
        ch.advance().expect("frame");
    }
    assert!((solid_min(&ch, 1).x - rest).abs() < 1e-4);

    // The gate slides back down to the floor, through the water under it.
    ch.controls.gate_lift = 0.0;
    for _ in 0..60 {
        ch.advance().expect("frame");
    }
    assert!(
        solid_min(&ch, 0).y.abs() < 1e-4,
        "the gate is at {:?}",
        solid_min(&ch, 0)
    );
    assert!(!ch.fluid.read_back().expect("read back").diverged);
}

#[test]
fn the_pipe_pours_until_the_count_is_reached() {
    let Some(gpu) = common::gpu("the_pipe_pours_until_the_count_is_reached") else {
        return;
    };
    let config = StartConfig {
        particles: 1500,
        ..small(Start::Pipe)
    };
    let mut ch = pollster_block(Channel::new(&gpu, config, false)).expect("channel");
    assert_eq!(ch.fluid.len(), 0);
    let mut last = 0;
    let mut grew = 0;
    for _ in 0..400 {
        ch.advance().expect("frame");
        grew += usize::from(ch.fluid.len() > last);
        last = ch.fluid.len();
        if last == 1500 {
            break;
        }
    }
    assert_eq!(last, 1500, "the pipe stopped at {last}");
    assert!(
        grew > 10,
        "the pipe poured in {grew} frames, not layer by layer"
    );
    ch.advance().expect("a frame with the pipe empty");
    assert_eq!(ch.fluid.len(), 1500);
    assert!(!ch.fluid.read_back().expect("read back").diverged);
}

fn pollster_block<F: std::future::Future>(f: F) -> F::Output {
    pollster::block_on(f)
}
