//! Bad input is refused with an error, never a panic.

mod common;

use spatium::Vec3;
use spatium::sph::ParticleState;
use spatium_gpu::{FluidConfig, GpuError, GpuFluid, SortKind, scene};

#[test]
fn bad_input_is_refused() {
    let Some(gpu) = common::gpu("errors") else {
        return;
    };
    let s = scene::dam_break(100, 0.025, 0.005).expect("scene");
    let n = s.positions.len();
    let make = |params, capacity, positions: &[Vec3], states: &[ParticleState<Vec3>], config| {
        GpuFluid::new(&gpu, params, capacity, positions, states, config).map(|_| ())
    };
    let config = FluidConfig::default();
    assert_eq!(make(s.params, n, &s.positions, &s.states, config), Ok(()));

    let mut bad = s.params;
    bad.dt = -1.0;
    assert_eq!(
        make(bad, n, &s.positions, &s.states, config),
        Err(GpuError::Core(spatium::Error::InvalidConfig {
            field: "dt"
        }))
    );
    bad = s.params;
    bad.h = f32::NAN;
    assert_eq!(
        make(bad, n, &s.positions, &s.states, config),
        Err(GpuError::Core(spatium::Error::InvalidRadius))
    );
    assert_eq!(
        make(s.params, n - 1, &s.positions, &s.states, config),
        Err(GpuError::CapacityExceeded {
            capacity: n - 1,
            requested: n
        })
    );
    assert_eq!(
        make(s.params, n, &s.positions, &s.states[1..], config),
        Err(GpuError::LengthMismatch {
            positions: n,
            states: n - 1
        })
    );
    let mut outside = s.positions.clone();
    outside[7] = Vec3::new(-0.5, 0.1, 0.1);
    assert_eq!(
        make(s.params, n, &outside, &s.states, config),
        Err(GpuError::Core(spatium::Error::OutOfRange))
    );
    let mut states = s.states.clone();
    states[3].velocity.x = f32::INFINITY;
    assert_eq!(
        make(s.params, n, &s.positions, &states, config),
        Err(GpuError::Core(spatium::Error::NonFinite))
    );
    for len in [0usize, 1, 1000] {
        let c = FluidConfig {
            table_len: Some(len),
            ..config
        };
        assert_eq!(
            make(s.params, n, &s.positions, &s.states, c),
            Err(GpuError::Core(spatium::Error::InvalidTableLength { len }))
        );
    }
    // A domain too wide for the cell arithmetic (2¹⁴ cells from its centre).
    let mut wide = s.params;
    wide.domain.max.x = 1.0e4;
    assert_eq!(
        make(wide, n, &[], &[], config),
        Err(GpuError::Core(spatium::Error::OutOfRange))
    );
    // Buffers beyond the device's limits are refused before allocation.
    let huge = make(s.params, 1 << 30, &[], &[], config);
    assert!(
        matches!(huge, Err(GpuError::Limit { limit, .. }) if limit.starts_with("max_")),
        "{huge:?}"
    );
    assert!(matches!(
        make(s.params, 1 << 31, &[], &[], config),
        Err(GpuError::CapacityExceeded { .. })
    ));
    // Dispatches that do not fit in max² workgroups.
    let narrow = FluidConfig {
        max_workgroups_per_dimension: Some(1),
        sort: SortKind::Bitonic,
        ..config
    };
    assert!(matches!(
        make(s.params, n, &s.positions, &s.states, narrow),
        Err(GpuError::Limit {
            limit: "max_compute_workgroups_per_dimension",
            ..
        })
    ));

    // The same checks on a live fluid, which is left as it was.
    let mut fluid =
        GpuFluid::new(&gpu, s.params, n, &s.positions, &s.states, config).expect("fluid");
    assert!(fluid.upload(&outside, &s.states).is_err());
    let mut bad = s.params;
    bad.viscosity = -1.0;
    assert!(fluid.set_params(bad).is_err());
    assert_eq!(fluid.len(), n);
    assert_eq!(fluid.params(), &s.params);
    fluid.step(2).expect("steps");
    let out = fluid.read_back().expect("read back");
    assert_eq!(out.positions.len(), n);
    assert!(!out.diverged);
    // Every error explains itself.
    for e in [
        GpuError::NoAdapter("none".into()),
        GpuError::MissingFeature("TIMESTAMP_QUERY"),
        GpuError::Core(spatium::Error::OutOfRange),
    ] {
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn an_empty_fluid_steps() {
    let Some(gpu) = common::gpu("empty") else {
        return;
    };
    let s = scene::dam_break(100, 0.025, 0.005).expect("scene");
    for sort in [SortKind::Counting, SortKind::Bitonic] {
        let config = FluidConfig {
            sort,
            ..FluidConfig::default()
        };
        let mut fluid = GpuFluid::new(&gpu, s.params, 0, &[], &[], config).expect("fluid");
        fluid.step(3).expect("steps");
        let out = fluid.read_back().expect("read back");
        assert!(out.positions.is_empty() && !out.diverged);
    }
}

#[test]
fn memory_follows_the_documented_formula() {
    let Some(gpu) = common::gpu("memory") else {
        return;
    };
    let s = scene::dam_break(1000, 0.025, 0.005).expect("scene");
    for sort in [SortKind::Counting, SortKind::Bitonic] {
        for (capacity, table) in [(1000usize, 4096usize), (3000, 1 << 16), (5000, 1 << 20)] {
            let config = FluidConfig {
                sort,
                table_len: Some(table),
                ..FluidConfig::default()
            };
            let f = GpuFluid::new(&gpu, s.params, capacity, &s.positions, &s.states, config)
                .expect("fluid");
            let (c, t) = (capacity as u64, table as u64);
            // Sort pairs: the capacity (counting), or the capacity rounded up
            // to a power of two, at least 512 (bitonic).
            let p = match sort {
                SortKind::Counting => c,
                SortKind::Bitonic => c.next_power_of_two().max(512),
            };
            // The obstacle buffer: a 16-byte header and 64 bytes per
            // obstacle slot.
            let obstacles = 16 + 64 * spatium_gpu::MAX_OBSTACLES as u64;
            let formula = 148 * c + 8 * p + 4 * t + obstacles;
            let extra = f.memory_bytes() - formula.min(f.memory_bytes());
            eprintln!(
                "{} C={c} T={t}: {} bytes, formula {formula}, extra {extra}",
                sort.name(),
                f.memory_bytes()
            );
            assert!(f.memory_bytes() >= formula, "below the formula");
            // Scan levels (about T/256 bytes) and uniform blocks (64 KiB).
            assert!(
                extra <= t / 256 + 64 * 1024,
                "{extra} bytes beyond the formula"
            );
        }
    }
}
