//! The GPU emitter against the core's `source::Emitter`.

mod common;

use spatium::sph::source::Emitter;
use spatium::sph::{Fluid, ParticleState, StepControl};
use spatium::{Point, Vec3};
use spatium_gpu::{FluidConfig, GpuEmitter, GpuError, GpuFluid, scene};

#[test]
fn emitter_layers_match_the_core_emitter() {
    let Some(gpu) = common::gpu("emitter") else {
        return;
    };
    let s = scene::dam_break(1000, 0.025, 0.005).expect("scene");
    let capacity = 400;
    let (origin, direction) = (Vec3::new(0.4, 0.3, 0.12), Vec3::new(-1.0, -0.5, 0.25));
    let (speed, radius, spacing, budget) = (1.5, 0.06, 0.025, 300);
    let mut cpu = Fluid::new(
        vec![Vec3::ZERO; capacity],
        vec![ParticleState::EMPTY; capacity],
        s.params,
    );
    // As `common::cpu_fluid`: unchecked, like the GPU solver.
    cpu.set_control(StepControl::UNCHECKED)
        .expect("a valid control");
    let mut cpu_pipe =
        Emitter::new(origin, direction, speed, radius, spacing, budget).expect("pipe");
    let mut gpu_fluid =
        GpuFluid::new(&gpu, s.params, capacity, &[], &[], FluidConfig::default()).expect("fluid");
    let mut gpu_pipe =
        GpuEmitter::new(origin, direction, speed, radius, spacing, budget).expect("pipe");
    assert_eq!(gpu_pipe.layer_len(), cpu_pipe.layer_len());
    assert!(gpu_pipe.layer_len() > 10);
    // Uneven time steps, some emitting several layers, until the budget is
    // spent (300 is not a multiple of the layer, so the last is partial).
    for dt in [0.0, 0.01, 0.03, 0.005, 0.05, 0.02, 0.1, 0.1, 0.1, 0.2] {
        let a = cpu_pipe.emit(&mut cpu, dt).expect("CPU emit");
        let b = gpu_pipe.emit(&mut gpu_fluid, dt).expect("GPU emit");
        assert_eq!(a, b, "added at dt {dt}");
        assert_eq!(cpu_pipe.emitted(), gpu_pipe.emitted());
        assert_eq!(cpu.len(), gpu_fluid.len());
    }
    assert_eq!(gpu_pipe.emitted(), budget);
    let out = gpu_fluid.read_back().expect("read back");
    for (i, (x, st)) in out.positions.iter().zip(&out.states).enumerate() {
        let (cx, cs) = (cpu.positions()[i], cpu.state()[i]);
        let d = *x - cx;
        assert!(d.dot(d).sqrt() <= 1e-6, "particle {i}: {x:?} vs {cx:?}");
        assert_eq!(st.velocity, cs.velocity, "particle {i}");
        assert_eq!(st.start_velocity, cs.start_velocity);
        assert_eq!(st.density, 0.0);
    }
    // The poured fluid steps.
    gpu_fluid.step(5).expect("steps");
    assert!(!gpu_fluid.read_back().expect("read back").diverged);
}

#[test]
fn emitter_refuses_as_the_core_does() {
    let Some(gpu) = common::gpu("emitter_refusals") else {
        return;
    };
    let s = scene::dam_break(1000, 0.025, 0.005).expect("scene");
    let (origin, direction) = (Vec3::new(0.4, 0.3, 0.12), Vec3::new(0.0, -1.0, 0.0));
    // Capacity for two and a bit layers.
    let mut pipe = GpuEmitter::new(origin, direction, 1.0, 0.05, 0.025, 1000).expect("pipe");
    let layer = pipe.layer_len();
    let mut cpu_pipe = Emitter::new(origin, direction, 1.0, 0.05, 0.025, 1000).expect("pipe");
    let capacity = 2 * layer + 3;
    let mut cpu = Fluid::new(
        vec![Vec3::ZERO; capacity],
        vec![ParticleState::EMPTY; capacity],
        s.params,
    );
    // As `common::cpu_fluid`: unchecked, like the GPU solver.
    cpu.set_control(StepControl::UNCHECKED)
        .expect("a valid control");
    let mut fluid =
        GpuFluid::new(&gpu, s.params, capacity, &[], &[], FluidConfig::default()).expect("fluid");
    assert_eq!(
        pipe.emit(&mut fluid, 0.03).expect("two layers fit"),
        2 * layer
    );
    cpu_pipe.emit(&mut cpu, 0.03).expect("two layers fit");
    let refused = pipe.emit(&mut fluid, 0.05);
    assert!(
        matches!(refused, Err(GpuError::CapacityExceeded { .. })),
        "{refused:?}"
    );
    assert_eq!(
        cpu_pipe.emit(&mut cpu, 0.05),
        Err(spatium::Error::CapacityExceeded { capacity })
    );
    assert_eq!(pipe.emitted() as usize, 2 * layer);
    assert_eq!(fluid.len(), 2 * layer);
    // Blocked: no backlog, exactly as on the CPU.
    assert_eq!(pipe.remaining(), cpu_pipe.remaining());

    // A pipe outside the domain.
    let mut outside =
        GpuEmitter::new(Vec3::new(-1.0, 0.3, 0.1), direction, 1.0, 0.05, 0.025, 100).expect("pipe");
    assert_eq!(
        outside.emit(&mut fluid, 0.01),
        Err(GpuError::Core(spatium::Error::OutOfRange))
    );
    // Bad arguments: the core's errors.
    assert_eq!(
        pipe.emit(&mut fluid, f32::NAN),
        Err(GpuError::Core(spatium::Error::InvalidConfig {
            field: "dt"
        }))
    );
    assert_eq!(
        GpuEmitter::new(origin, Vec3::ZERO, 1.0, 0.05, 0.025, 10).map(|_| ()),
        Err(GpuError::Core(spatium::Error::InvalidConfig {
            field: "direction"
        }))
    );
    assert_eq!(
        GpuEmitter::new(
            Vec3::new(f32::NAN, 0.0, 0.0),
            direction,
            1.0,
            0.05,
            0.025,
            10
        )
        .map(|_| ()),
        Err(GpuError::Core(spatium::Error::NonFinite))
    );
}
