//! The SPH solver on the target: a `sph::Fluid` of a few hundred particles
//! in `static` array storage, stepped over the cell-sorted hash behind a
//! `PairCache`, against the walls and an `Obstacles` set holding a sphere
//! behind a broad phase (the hierarchical hash grid; the kd-tree in a
//! second run). Checks: particles finite, inside the walls and out of the
//! sphere; the stage timer sees every stage; two runs give the same bits;
//! one step agrees with brute-force neighbour search; a failed step restores
//! the particles.

#![no_std]
#![no_main]

use cortex_m_rt as _;
use spatium_fw_tests as _;

#[embedded_test::setup]
fn setup() {
    spatium_fw_tests::init_log();
}

#[embedded_test::tests]
mod tests {
    use spatium::Inspect;
    use spatium::kdtree::{KdBroadPhase, KdConfig, KdRecord, KdSlot};
    use spatium::sph::boundary::{Obstacle, Obstacles, Shape};
    use spatium::sph::source::Emitter;
    use spatium::sph::{
        EquationOfState, Fluid, Integrator, ParticleState, SphParams, Stage, StageTimer,
    };
    use spatium::uniform::{
        CellRecord, CellSortedHash, Head, LinkedHash, LinkedParticle, SortedParticle, TableSlot,
    };
    use spatium::{
        Aabb2, Aabb3, BruteForceNeighbors, Error, HhgConfig, HhgRecord, HhgSlot,
        HierarchicalHashGrid, NeighborPair, PairCache, Point, Validate, Vec2, Vec3,
    };
    use static_cell::ConstStaticCell;

    /// Particle capacity.
    const N: usize = 320;
    const SPACING: f32 = spatium_fw_tests::common::SPH_SPACING;
    const DOMAIN: Aabb3 = spatium_fw_tests::common::SPH_DOMAIN;
    /// 8 × 6 × 6 = 288 particles.
    const BLOCK: Aabb3 = Aabb3 {
        min: Vec3::new(0.0, 0.1, 0.0),
        max: Vec3::new(0.2, 0.25, 0.15),
    };
    const SPHERE: Vec3 = Vec3::new(0.1, 0.12, 0.075);
    const SPHERE_R: f32 = 0.04;

    /// `SphParams::seed` is not a `const fn`, so a `static` fluid starts
    /// with these (valid) literals and gets the seed's table by
    /// `set_params` at run time.
    const PLACEHOLDER: SphParams<Vec3> =
        spatium_fw_tests::common::seed_params(DOMAIN, SPACING, 1.0);

    type F = Fluid<Vec3, [Vec3; N], [ParticleState<Vec3>; N]>;
    type Hash =
        CellSortedHash<Vec3, [TableSlot; 1024], [SortedParticle<Vec3>; N], [CellRecord<Vec3>; N]>;
    type Search = PairCache<Hash, [NeighborPair; 24 * N]>;
    const ARENA: usize = 2 * (729 + 4096);
    type Grid =
        HierarchicalHashGrid<Aabb3, [HhgSlot<Aabb3>; 4], [HhgRecord<Aabb3>; 4], [u32; ARENA]>;
    type Solids = Obstacles<Vec3, Grid, [Obstacle<Vec3>; 4]>;

    static FLUID: ConstStaticCell<F> = ConstStaticCell::new(F::new(
        [Vec3::ZERO; N],
        [ParticleState::EMPTY; N],
        PLACEHOLDER,
    ));
    static SEARCH: ConstStaticCell<Search> = ConstStaticCell::new(PairCache::new(
        Hash::new(
            [TableSlot::EMPTY; 1024],
            [SortedParticle::EMPTY; N],
            [CellRecord::EMPTY; N],
        ),
        [NeighborPair::EMPTY; 24 * N],
    ));
    // Grids from the first obstacle on, so the grid (not its small-N path)
    // answers the particles' queries.
    static SOLIDS: ConstStaticCell<Solids> = ConstStaticCell::new(Obstacles::new(
        [Obstacle::EMPTY; 4],
        HierarchicalHashGrid::new(
            [HhgSlot::EMPTY; 4],
            [HhgRecord::EMPTY; 4],
            [0; ARENA],
            HhgConfig::DEFAULT.with_small_n_threshold(0),
        ),
    ));

    /// Counts the stages a step reports.
    #[derive(Default)]
    struct Count {
        begun: [u32; 6],
        open: bool,
    }

    impl StageTimer for Count {
        fn begin(&mut self, stage: Stage) {
            assert!(!self.open, "stage {} begun inside another", stage.name());
            self.open = true;
            self.begun[stage.index()] += 1;
        }
        fn end(&mut self) {
            assert!(self.open, "end without begin");
            self.open = false;
        }
    }

    fn fill(fluid: &mut F) -> usize {
        fluid.clear();
        fluid.fill_block(BLOCK, SPACING, Vec3::ZERO).unwrap()
    }

    /// Every particle finite, inside the walls and outside the sphere (by
    /// at most a hair: contacts are resolved to the surface).
    fn check_state<X: spatium::sph::boundary::Collider<Vec3>>(fluid: &F, _solids: &X) {
        fluid.validate().unwrap();
        let d = fluid.params().domain;
        for (x, s) in fluid.positions().iter().zip(fluid.state()) {
            assert!(x.is_finite() && s.velocity.is_finite());
            for k in 0..3 {
                assert!(x.coord(k) >= d.min.coord(k) && x.coord(k) <= d.max.coord(k));
            }
            let reach = SPHERE_R + fluid.params().particle_radius - 1e-4;
            let d2 = x.distance_squared(SPHERE);
            assert!(d2 >= reach * reach, "particle inside the sphere: d² {d2}");
            assert!(s.density > 0.0);
        }
    }

    /// A position checksum: bit patterns, order-dependent.
    fn bits(fluid: &F) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for x in fluid.positions() {
            for k in 0..3 {
                h = (h ^ x.coord(k).to_bits() as u64).wrapping_mul(0x100_0000_01b3);
            }
        }
        h
    }

    #[test]
    fn fluid_steps_over_cell_sorted_hash_with_sphere_in_hhg() {
        let fluid = FLUID.take();
        let search = SEARCH.take();
        let solids = SOLIDS.take();
        fluid
            .set_params(SphParams::seed(DOMAIN, SPACING).unwrap())
            .unwrap();
        assert_eq!(fill(fluid), 288);
        assert_eq!(fluid.memory_bytes(), 80 * N);
        let sphere = Obstacle::fixed(Shape::Sphere {
            center: SPHERE,
            radius: SPHERE_R,
        });
        assert_eq!(solids.add(sphere).unwrap(), 0);
        solids.validate().unwrap();
        assert!(solids.broad_phase().uses_grids());
        let mut timer = Count::default();
        const STEPS: u32 = 8;
        for _ in 0..STEPS {
            fluid.step(search, solids, &mut timer).unwrap();
        }
        assert_eq!(fluid.steps(), STEPS as u64);
        // Leapfrog: two force evaluations per step.
        assert_eq!(timer.begun[Stage::NeighborSearch.index()], 2 * STEPS);
        assert_eq!(timer.begun[Stage::Density.index()], 2 * STEPS);
        assert_eq!(timer.begun[Stage::Normals.index()], 2 * STEPS);
        assert_eq!(timer.begun[Stage::Forces.index()], 2 * STEPS);
        assert_eq!(timer.begun[Stage::Collisions.index()], 2 * STEPS);
        assert!(search.is_cached());
        check_state(fluid, solids);
        let after = bits(fluid);
        let energy = fluid.kinetic_energy();
        assert!(energy > 0.0 && energy.is_finite());

        // The same scene again: the same bits.
        fill(fluid);
        for _ in 0..STEPS {
            fluid.step(search, solids, &mut ()).unwrap();
        }
        assert_eq!(bits(fluid), after, "two runs differ");

        // A pipe emitter adds layers that fit; the fluid keeps stepping.
        fill(fluid);
        let mut pipe = Emitter::new(
            Vec3::new(0.25, 0.28, 0.25),
            Vec3::new(0.0, -1.0, 0.0),
            1.0,
            0.03,
            SPACING,
            32,
        )
        .unwrap();
        for _ in 0..4 {
            pipe.emit(fluid, fluid.params().dt).unwrap();
            fluid.step(search, solids, &mut ()).unwrap();
        }
        assert_eq!(fluid.len(), 288 + pipe.emitted() as usize);
        check_state(fluid, solids);
    }

    #[test]
    fn one_step_agrees_with_brute_force_search() {
        let fluid = FLUID.take();
        let search = SEARCH.take();
        static BRUTE: ConstStaticCell<BruteForceNeighbors<Vec3, [Vec3; N]>> =
            ConstStaticCell::new(BruteForceNeighbors::new([Vec3::ZERO; N]));
        let brute = BRUTE.take();
        fluid
            .set_params(SphParams::seed(DOMAIN, SPACING).unwrap())
            .unwrap();
        fill(fluid);
        fluid.step(search, &mut (), &mut ()).unwrap();
        let mut hashed = [Vec3::ZERO; N];
        hashed[..fluid.len()].copy_from_slice(fluid.positions());
        let densities: [f32; 4] = core::array::from_fn(|i| fluid.state()[i * 50].density);
        fill(fluid);
        fluid.step(brute, &mut (), &mut ()).unwrap();
        // Same pairs in another order: equal up to rounding.
        for (a, b) in hashed.iter().zip(fluid.positions()) {
            assert!(a.distance_squared(*b) < 1e-12, "{a:?} vs {b:?}");
        }
        for (i, d) in densities.iter().enumerate() {
            let e = fluid.state()[i * 50].density;
            assert!((d - e).abs() <= 1e-5 * d.abs(), "density {d} vs {e}");
        }
        // The linked-list hash (the size report's `fw-linked-sph`) too.
        type Linked = LinkedHash<Vec3, [Head; 1024], [LinkedParticle<Vec3>; N]>;
        static LINKED: ConstStaticCell<Linked> = ConstStaticCell::new(LinkedHash::new(
            [Head::EMPTY; 1024],
            [LinkedParticle::EMPTY; N],
        ));
        let linked = LINKED.take();
        let mut brute_x = [Vec3::ZERO; N];
        brute_x[..fluid.len()].copy_from_slice(fluid.positions());
        fill(fluid);
        fluid.step(linked, &mut (), &mut ()).unwrap();
        for (a, b) in brute_x.iter().zip(fluid.positions()) {
            assert!(a.distance_squared(*b) < 1e-12, "{a:?} vs {b:?}");
        }
        for (i, d) in densities.iter().enumerate() {
            let e = fluid.state()[i * 50].density;
            assert!((d - e).abs() <= 1e-5 * d.abs(), "density {d} vs {e}");
        }
    }

    #[test]
    fn failed_step_restores_particles_and_full_fluid_refuses() {
        let fluid = FLUID.take();
        fluid
            .set_params(SphParams::seed(DOMAIN, SPACING).unwrap())
            .unwrap();
        fill(fluid);
        // A search holding fewer particles than the fluid.
        type Small = LinkedHash<Vec3, [Head; 256], [LinkedParticle<Vec3>; 100]>;
        static SMALL: ConstStaticCell<Small> =
            ConstStaticCell::new(Small::new([Head::EMPTY; 256], [LinkedParticle::EMPTY; 100]));
        let before = bits(fluid);
        assert_eq!(
            fluid.step(SMALL.take(), &mut (), &mut ()),
            Err(Error::CapacityExceeded { capacity: 100 })
        );
        assert_eq!(bits(fluid), before);
        assert_eq!(fluid.steps(), 0);
        // Bad particles and a full fluid: refused, nothing added.
        let n = fluid.len();
        assert_eq!(
            fluid.push(Vec3::new(f32::NAN, 0.1, 0.1), Vec3::ZERO),
            Err(Error::NonFinite)
        );
        assert_eq!(
            fluid.push(Vec3::new(0.5, 0.1, 0.1), Vec3::ZERO),
            Err(Error::OutOfRange)
        );
        assert_eq!(
            fluid.fill_block(DOMAIN, SPACING, Vec3::ZERO),
            Err(Error::CapacityExceeded { capacity: N })
        );
        assert_eq!(fluid.len(), n);
        while fluid.len() < N {
            fluid.push(Vec3::new(0.29, 0.29, 0.29), Vec3::ZERO).unwrap();
        }
        assert_eq!(
            fluid.push(Vec3::new(0.29, 0.29, 0.29), Vec3::ZERO),
            Err(Error::CapacityExceeded { capacity: N })
        );
        assert_eq!(fluid.len(), N);
        // Parameters are checked when set.
        let mut bad = *fluid.params();
        bad.h = -1.0;
        assert!(fluid.set_params(bad).is_err());
        assert_eq!(fluid.params().h, 2.0 * SPACING);
        // Degenerate obstacles, and a full set, are refused.
        let solids = SOLIDS.take();
        assert_eq!(
            solids.add(Obstacle::fixed(Shape::Sphere {
                center: SPHERE,
                radius: 0.0
            })),
            Err(Error::InvalidShape)
        );
        for _ in 0..4 {
            solids
                .add(Obstacle::fixed(Shape::Sphere {
                    center: SPHERE,
                    radius: SPHERE_R,
                }))
                .unwrap();
        }
        assert_eq!(
            solids.add(Obstacle::fixed(Shape::Sphere {
                center: SPHERE,
                radius: SPHERE_R
            })),
            Err(Error::CapacityExceeded { capacity: 4 })
        );
        assert_eq!(solids.len(), 4);
        solids.validate().unwrap();
    }

    #[test]
    fn sphere_behind_the_kd_tree_and_moving() {
        type Kd = KdBroadPhase<Aabb3, u32, [KdSlot<Aabb3>; 4], [KdRecord<u32>; 32]>;
        static KSOLIDS: ConstStaticCell<Obstacles<Vec3, Kd, [Obstacle<Vec3>; 4]>> =
            ConstStaticCell::new(Obstacles::new(
                [Obstacle::EMPTY; 4],
                Kd::new(
                    [KdSlot::EMPTY; 4],
                    [KdRecord::EMPTY; 32],
                    [KdRecord::EMPTY; 32],
                    KdConfig::DEFAULT,
                ),
            ));
        let fluid = FLUID.take();
        let search = SEARCH.take();
        let solids = KSOLIDS.take();
        fluid
            .set_params(SphParams::seed(DOMAIN, SPACING).unwrap())
            .unwrap();
        fill(fluid);
        solids
            .add(Obstacle::fixed(Shape::Sphere {
                center: SPHERE,
                radius: SPHERE_R,
            }))
            .unwrap();
        // A box sliding along z, below the block.
        let slab = Aabb3::new(Vec3::new(0.0, 0.0, 0.0), Vec3::new(0.3, 0.04, 0.05)).unwrap();
        solids
            .add(Obstacle {
                shape: Shape::Box(slab),
                velocity: Vec3::new(0.0, 0.0, 0.5),
            })
            .unwrap();
        for _ in 0..6 {
            solids.advance(fluid.params().dt).unwrap();
            fluid.step(search, solids, &mut ()).unwrap();
        }
        solids.validate().unwrap();
        check_state(fluid, solids);
    }

    #[test]
    fn fluid_2d_euler_walls_only() {
        const M: usize = 200;
        const D2: Aabb2 = Aabb2 {
            min: Vec2::ZERO,
            max: Vec2::new(0.5, 0.5),
        };
        type F2 = Fluid<Vec2, [Vec2; M], [ParticleState<Vec2>; M]>;
        type H2 = CellSortedHash<
            Vec2,
            [TableSlot; 512],
            [SortedParticle<Vec2>; M],
            [CellRecord<Vec2>; M],
        >;
        static F2S: ConstStaticCell<F2> = ConstStaticCell::new(F2::new(
            [Vec2::ZERO; M],
            [ParticleState::EMPTY; M],
            SphParams {
                h: 0.05,
                mass: 1.0,
                rest_density: 1.0,
                stiffness: 1.0,
                eos: EquationOfState::IdealGas,
                clamp_negative_pressure: true,
                viscosity: 0.02,
                surface_tension: 0.0,
                gravity: Vec2::new(0.0, -9.81),
                damping: 0.5,
                dt: 0.005,
                integrator: Integrator::Euler,
                domain: D2,
                particle_radius: 0.0125,
                periodic: 0,
                gradient_correction: 1.0,
            },
        ));
        static H2S: ConstStaticCell<H2> = ConstStaticCell::new(H2::new(
            [TableSlot::EMPTY; 512],
            [SortedParticle::EMPTY; M],
            [CellRecord::EMPTY; M],
        ));
        let fluid = F2S.take();
        let hash = H2S.take();
        let mut params = SphParams::seed(D2, 0.025).unwrap();
        params.integrator = Integrator::Euler;
        params.eos = EquationOfState::IdealGas;
        params.surface_tension = 0.0;
        fluid.set_params(params).unwrap();
        let block = Aabb2::new(Vec2::new(0.0, 0.0), Vec2::new(0.3, 0.3)).unwrap();
        assert_eq!(fluid.fill_block(block, 0.025, Vec2::ZERO).unwrap(), 144);
        let mut timer = Count::default();
        for _ in 0..10 {
            fluid.step(hash, &mut (), &mut timer).unwrap();
        }
        // Euler: one force evaluation per step; no surface tension: no
        // normals pass.
        assert_eq!(timer.begun[Stage::NeighborSearch.index()], 10);
        assert_eq!(timer.begun[Stage::Normals.index()], 0);
        fluid.validate().unwrap();
        for x in fluid.positions() {
            assert!(x.x >= 0.0 && x.x <= 0.5 && x.y >= 0.0 && x.y <= 0.5);
        }
        assert_eq!(fluid.memory_bytes(), 56 * M);
    }
}
