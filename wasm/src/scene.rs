//! The demo scene, in pure Rust (no browser API): a 2D box `2 × 1` with a
//! block of fluid at the left wall (a dam break), a pipe pouring from the
//! top onto a seeded field of static boxes and discs, the fluid's neighbour
//! search and the obstacles' broad phase chosen by [`Config`].
//!
//! Everything is a function of the [`Config`] (the seed places the obstacles
//! and jitters the block), so two runs of a config give the same particles
//! bit for bit; the page's wasm build and a native build give the same
//! [`Fingerprint`] too (`tests/native.rs`, `tests/web.rs`, `tests/page.rs`).

#![forbid(unsafe_code)]

use core::fmt;

use spatium::sph::boundary::{Obstacle, Obstacles, Shape};
use spatium::sph::source::Emitter;
use spatium::sph::{Fluid, ParticleState, SphParams};
use spatium::{Aabb2, Error, NeighborPair, NeighborSearch, PairCache, Vec2};

use crate::structures::{Broad, BroadKind, Search, SearchKind};
use crate::timing::{Clock, Row, Times};

/// Width of the domain (metres).
pub const WIDTH: f32 = 2.0;
/// Height of the domain (metres).
pub const HEIGHT: f32 = 1.0;
/// Particle spacing of the block and the pipe: 160 × 80 lattice cells in
/// the domain, so 4000 particles fill under a third of it (`h = 0.025`).
pub const SPACING: f32 = 1.0 / 80.0;
/// Stiffness `k` of the Tait equation. The seed preset's `k = 1` gives a
/// speed of sound `c = √(7k/ρ₀) ≈ 2.6` m/s, below the 4 to 5 m/s of a fall
/// across this 1 m box: the splashes then compress the fluid to twice its
/// rest density and fling particles at 200 m/s. `k = 4` doubles `c`.
pub const STIFFNESS: f32 = 4.0;
/// Time step: below the acoustic limit `0.4·h/c ≈ 0.0019` of
/// [`STIFFNESS`] (the preset's `0.005` suits `k = 1` at spacing 0.02).
pub const DT: f32 = 0.0015;
/// Fewest particles a scene takes.
pub const MIN_PARTICLES: usize = 100;
/// Most particles a scene takes (keeps a frame's work bounded).
pub const MAX_PARTICLES: usize = 4000;
/// Particles of the default scene.
pub const DEFAULT_PARTICLES: usize = 1500;
/// Columns of the initial block (0.6 m: at most 0.52 m tall with 4000
/// particles).
pub const BLOCK_COLUMNS: usize = 48;
/// Obstacles in the field.
pub const OBSTACLES: usize = 8;
/// Centre of the pipe's mouth.
pub const PIPE_ORIGIN: Vec2 = Vec2::new(1.0, 0.93);
/// Direction the pipe pours in (normalised by the emitter).
pub const PIPE_DIRECTION: Vec2 = Vec2::new(0.25, -1.0);
/// Speed of the fluid leaving the pipe, m/s.
pub const PIPE_SPEED: f32 = 1.0;
/// Radius of the pipe (7 particles per layer).
pub const PIPE_RADIUS: f32 = 0.05;
/// Pair-cache slots per particle (a fluid at rest has about 6 pairs per
/// particle in 2D at `h = 2 ×` spacing; a full cache only costs speed).
pub const CACHE_PAIRS_PER_PARTICLE: usize = 16;

/// What a scene is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The fluid's neighbour search.
    pub search: SearchKind,
    /// The obstacles' broad phase.
    pub broad: BroadKind,
    /// Particles in all: half (rounded down to whole rows) in the block,
    /// the rest from the pipe. [`MIN_PARTICLES`]`..=`[`MAX_PARTICLES`].
    pub particles: usize,
    /// Places the obstacles and jitters the block.
    pub seed: u64,
    /// Wrap the search in a [`PairCache`] (one search per force evaluation
    /// instead of three).
    pub pair_cache: bool,
    /// Renumber the particles in cell order every this many steps (0:
    /// never).
    pub sort_interval: u64,
}

impl Config {
    /// The page's default: cell-sorted hash with a pair cache, the
    /// hierarchical hash grid, 1500 particles, seed 7, sort every 50 steps.
    pub const DEFAULT: Config = Config {
        search: SearchKind::Sorted,
        broad: BroadKind::Hhg,
        particles: DEFAULT_PARTICLES,
        seed: 7,
        pair_cache: true,
        sort_interval: 50,
    };
}

impl Default for Config {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The fixed-seed run the tests compare across builds: [`Config::DEFAULT`]
/// for [`FIXED_STEPS`] steps.
pub const FIXED_CONFIG: Config = Config::DEFAULT;
/// Steps of the fixed-seed run.
pub const FIXED_STEPS: u64 = 500;
/// The fixed-seed run's fingerprint. `tests/native.rs` asserts that the
/// native build reproduces it and `tests/web.rs` that the wasm build in
/// the browser does, so each side is checked against the other.
///
/// Re-pinned when `Fluid::sort_by_cell` began ordering particles by the
/// uniform grid's cells (issue 16): the renumbering order changed, so the
/// pair sums come in another order; with the previous ordering the run
/// still gives the previous value. Re-pinned again when the cell-sorted
/// hash moved to row-major cells swept with row cursors (issue 17): it
/// reports the same pairs in another order, so the SPH sums round
/// differently and the 500-step trajectory diverges (the pairs of any one
/// configuration are still checked equal across every search by the other
/// tests). Before: 5 892 pairs, checksum `0x4a51_1c23_81db_7b4d`, state
/// `0xf4ad_5f19_f427_1974`. Re-pinned once more when the SPH step's force
/// factors were folded from four to three per pair and the normals pass
/// began multiplying by each particle's `1/ρ` instead of dividing per pair
/// (issue 17, fourth round): the same formula rounds differently, so the
/// trajectory diverges over 500 steps. Before: 5 849 pairs, checksum
/// `0x14f9_612e_6e91_d4a7`, state `0x927a_8516_0f76_c6d3`.
pub const FIXED_EXPECTED: Fingerprint = Fingerprint {
    steps: FIXED_STEPS,
    particles: 1269,
    pairs: 5877,
    checksum: 0x3193_537c_d883_1550,
    state: 0x6947_06ef_750e_a2ea,
};

/// A run's result, for comparing builds: the neighbour pairs of the current
/// positions (count and an order-independent checksum) and a hash of every
/// particle's position and velocity bits in id order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    /// Steps taken.
    pub steps: u64,
    /// Particles in the fluid.
    pub particles: u64,
    /// Neighbour pairs (within `h`) of the current positions.
    pub pairs: u64,
    /// Wrapping sum over the pairs `{i, j}` of `mix(min << 32 | max)`: the
    /// same for any order of the pairs and of the two ids in a pair.
    pub checksum: u64,
    /// FNV-1a over the bits of every position and velocity, in id order.
    pub state: u64,
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "steps={} particles={} pairs={} checksum={:016x} state={:016x}",
            self.steps, self.particles, self.pairs, self.checksum, self.state
        )
    }
}

/// SplitMix64's finaliser: a bijective 64-bit mix.
pub const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The contribution of the pair `{i, j}` to [`Fingerprint::checksum`].
pub fn pair_term(i: u32, j: u32) -> u64 {
    let (a, b) = (i.min(j), i.max(j));
    mix((u64::from(a) << 32) | u64::from(b))
}

/// Builds `search` over `positions` within `radius` and returns the count
/// of its pairs and their order-independent checksum (see
/// [`Fingerprint::checksum`]).
///
/// # Errors
/// The search's build errors.
pub fn pairs_checksum<N: NeighborSearch<Vec2>>(
    search: &mut N,
    positions: &[Vec2],
    radius: f32,
) -> Result<(u64, u64), Error> {
    search.build(positions, radius)?;
    let mut count = 0u64;
    let mut sum = 0u64;
    search.for_each_pair(|i, j, _| {
        count += 1;
        sum = sum.wrapping_add(pair_term(i, j));
    });
    Ok((count, sum))
}

/// A small seeded generator (SplitMix64), the same on every target.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub const fn new(seed: u64) -> Self {
        Self(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 * (1.0 / (1u64 << 24) as f32);
        lo + (hi - lo) * u
    }
}

/// The domain `[0, WIDTH] × [0, HEIGHT]`.
pub const DOMAIN: Aabb2 = Aabb2 {
    min: Vec2::ZERO,
    max: Vec2::new(WIDTH, HEIGHT),
};

/// The seeded obstacle field: [`OBSTACLES`] static shapes, boxes (shelves
/// and blocks) and discs alternating, centred in `x ∈ [0.8, 1.85]`,
/// `y ∈ [0.2, 0.7]`, clear of the block, the pipe and the floor.
pub fn obstacle_field(seed: u64) -> [Obstacle<Vec2>; OBSTACLES] {
    let mut rng = Rng::new(seed);
    core::array::from_fn(|i| {
        let c = Vec2::new(rng.range(0.8, 1.85), rng.range(0.2, 0.7));
        let shape = if i % 2 == 0 {
            let half = Vec2::new(rng.range(0.04, 0.12), rng.range(0.015, 0.05));
            Shape::Box(Aabb2 {
                min: c - half,
                max: c + half,
            })
        } else {
            Shape::Sphere {
                center: c,
                radius: rng.range(0.04, 0.09),
            }
        };
        Obstacle::fixed(shape)
    })
}

/// The fluid's neighbour search, with or without a pair cache.
#[derive(Debug)]
enum Searcher {
    Cached(PairCache<Search, Vec<NeighborPair>>),
    Plain(Search),
}

/// The running scene.
#[derive(Debug)]
pub struct Scene {
    config: Config,
    fluid: Fluid<Vec2, Vec<Vec2>, Vec<ParticleState<Vec2>>>,
    pipe: Emitter<Vec2>,
    search: Searcher,
    solids: Obstacles<Vec2, Broad, Vec<Obstacle<Vec2>>>,
    block: usize,
}

impl Scene {
    /// The scene of `config` at step 0.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a particle count outside
    /// [`MIN_PARTICLES`]`..=`[`MAX_PARTICLES`]; any error of the core
    /// making the fluid, the pipe, the structures or the obstacles (none
    /// for a valid config).
    pub fn new(config: Config) -> Result<Self, Error> {
        let n = config.particles;
        if !(MIN_PARTICLES..=MAX_PARTICLES).contains(&n) {
            return Err(Error::InvalidConfig { field: "particles" });
        }
        let mut params = SphParams::seed(DOMAIN, SPACING)?;
        params.stiffness = STIFFNESS;
        params.dt = DT;
        params.kernels()?;
        let mut fluid = Fluid::new(vec![Vec2::ZERO; n], vec![ParticleState::EMPTY; n], params);
        let rows = (n / 2) / BLOCK_COLUMNS;
        let region = Aabb2::new(
            Vec2::ZERO,
            Vec2::new(BLOCK_COLUMNS as f32 * SPACING, rows.max(1) as f32 * SPACING),
        )?;
        let block = fluid.fill_block(region, SPACING, Vec2::ZERO)?;
        // Jitter the block by up to a tenth of a spacing: the seed shapes
        // the fluid too, and the collapse is not perfectly symmetric.
        let mut rng = Rng::new(config.seed ^ 0xB10C);
        for id in 0..block {
            let x = fluid.positions()[id];
            let d = Vec2::new(
                rng.range(-0.1, 0.1) * SPACING,
                rng.range(-0.1, 0.1) * SPACING,
            );
            fluid.set(id as u32, x + d, Vec2::ZERO)?;
        }
        let budget =
            u32::try_from(n - block).map_err(|_| Error::InvalidConfig { field: "particles" })?;
        let pipe = Emitter::new(
            PIPE_ORIGIN,
            PIPE_DIRECTION,
            PIPE_SPEED,
            PIPE_RADIUS,
            SPACING,
            budget,
        )?;

        let search = Search::new(config.search, n);
        let search = if config.pair_cache {
            Searcher::Cached(PairCache::new(
                search,
                vec![NeighborPair::EMPTY; CACHE_PAIRS_PER_PARTICLE * n],
            ))
        } else {
            Searcher::Plain(search)
        };

        let field = obstacle_field(config.seed);
        let bounds = field.map(|o| o.shape.bounds());
        let broad = Broad::new(config.broad, &bounds, 2.0 * params.particle_radius)?;
        let mut solids = Obstacles::new(vec![Obstacle::EMPTY; OBSTACLES], broad);
        for o in field {
            solids.add(o)?;
        }
        Ok(Self {
            config,
            fluid,
            pipe,
            search,
            solids,
            block,
        })
    }

    /// The scene's configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// One time step: the pipe's due layers, the cell-order sort if due,
    /// then [`Fluid::step`] over the chosen search and broad phase, each
    /// timed in `times`.
    ///
    /// # Errors
    /// The emitter's or the solver's errors (a diverged scene:
    /// [`Error::NonFinite`]); the particles stay where the step began.
    pub fn step<C: Clock>(&mut self, times: &mut Times<C>) -> Result<(), Error> {
        let dt = self.fluid.params().dt;
        times.begin_row(Row::Emit);
        let emitted = self.pipe.emit(&mut self.fluid, dt);
        times.end_row();
        match emitted {
            // A full fluid only happens if the budget was miscounted: the
            // pipe stops pouring, the scene goes on.
            Ok(_) | Err(Error::CapacityExceeded { .. }) => {}
            Err(e) => return Err(e),
        }
        let interval = self.config.sort_interval;
        if interval > 0 && self.fluid.steps().is_multiple_of(interval) {
            times.begin_row(Row::Sort);
            let sorted = self.fluid.sort_by_cell();
            times.end_row();
            sorted?;
        }
        match &mut self.search {
            Searcher::Cached(s) => self.fluid.step(s, &mut self.solids, times),
            Searcher::Plain(s) => self.fluid.step(s, &mut self.solids, times),
        }
    }

    /// Steps taken.
    pub fn steps(&self) -> u64 {
        self.fluid.steps()
    }

    /// Particles in the fluid now.
    pub fn len(&self) -> usize {
        self.fluid.len()
    }

    /// `true` before the first particle (never: the block is there).
    pub fn is_empty(&self) -> bool {
        self.fluid.is_empty()
    }

    /// Particles in the initial block.
    pub fn block_len(&self) -> usize {
        self.block
    }

    /// Particles the pipe has still to pour.
    pub fn pipe_remaining(&self) -> u32 {
        self.pipe.remaining()
    }

    /// The particles' positions, by id.
    pub fn positions(&self) -> &[Vec2] {
        self.fluid.positions()
    }

    /// The particles' state, by id.
    pub fn state(&self) -> &[ParticleState<Vec2>] {
        self.fluid.state()
    }

    /// The obstacles.
    pub fn obstacles(&self) -> &[Obstacle<Vec2>] {
        self.solids.as_slice()
    }

    /// The smoothing length `h` (the neighbour radius).
    pub fn h(&self) -> f32 {
        self.fluid.params().h
    }

    /// The collision radius of a particle.
    pub fn particle_radius(&self) -> f32 {
        self.fluid.params().particle_radius
    }

    /// Pairs found by the last build, if the search has a pair cache.
    pub fn cached_pairs(&self) -> Option<usize> {
        match &self.search {
            Searcher::Cached(s) => Some(s.pair_count()),
            Searcher::Plain(_) => None,
        }
    }

    /// `(count, checksum)` of the neighbour pairs within `h` of the current
    /// positions, from the scene's own search (rebuilt here; the next step
    /// rebuilds it again, so this changes nothing).
    ///
    /// # Errors
    /// The search's build errors (none for a scene that steps).
    pub fn pairs_checksum(&mut self) -> Result<(u64, u64), Error> {
        let h = self.fluid.params().h;
        let x = self.fluid.positions();
        match &mut self.search {
            Searcher::Cached(s) => pairs_checksum(s, x, h),
            Searcher::Plain(s) => pairs_checksum(s, x, h),
        }
    }

    /// FNV-1a over the bits of every position and velocity, in id order.
    pub fn state_hash(&self) -> u64 {
        let mut h = 0xCBF2_9CE4_8422_2325u64;
        let mut eat = |v: f32| {
            for b in v.to_bits().to_le_bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
            }
        };
        for (x, s) in self.fluid.positions().iter().zip(self.fluid.state()) {
            eat(x.x);
            eat(x.y);
            eat(s.velocity.x);
            eat(s.velocity.y);
        }
        h
    }

    /// The scene's [`Fingerprint`] now.
    ///
    /// # Errors
    /// As [`pairs_checksum`](Self::pairs_checksum).
    pub fn fingerprint(&mut self) -> Result<Fingerprint, Error> {
        let (pairs, checksum) = self.pairs_checksum()?;
        Ok(Fingerprint {
            steps: self.steps(),
            particles: self.len() as u64,
            pairs,
            checksum,
            state: self.state_hash(),
        })
    }
}

/// Runs `config` for `steps` steps, untimed, and returns its fingerprint.
///
/// # Errors
/// As [`Scene::new`] and [`Scene::step`].
pub fn run(config: Config, steps: u64) -> Result<Fingerprint, Error> {
    let mut scene = Scene::new(config)?;
    let mut times = Times::new(crate::timing::NoClock);
    for _ in 0..steps {
        scene.step(&mut times)?;
    }
    scene.fingerprint()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_term_ignores_order() {
        assert_eq!(pair_term(3, 9), pair_term(9, 3));
        assert_ne!(pair_term(3, 9), pair_term(3, 10));
    }

    #[test]
    fn obstacles_are_valid_and_clear_of_block_pipe_and_floor() {
        for seed in 0..50 {
            for o in obstacle_field(seed) {
                o.shape.check().expect("valid shape");
                let b = o.shape.bounds();
                assert!(b.min.x > BLOCK_COLUMNS as f32 * SPACING, "{b:?}");
                assert!(b.max.x < WIDTH, "{b:?}");
                assert!(b.min.y > 0.1 && b.max.y < 0.85, "{b:?}");
            }
        }
    }

    #[test]
    fn block_and_pipe_share_the_particles() {
        for n in [MIN_PARTICLES, 777, DEFAULT_PARTICLES, MAX_PARTICLES] {
            let s = Scene::new(Config {
                particles: n,
                ..Config::DEFAULT
            })
            .expect("scene");
            assert_eq!(s.block_len() + s.pipe_remaining() as usize, n);
            assert!(s.block_len() <= n / 2 && s.block_len() > 0);
        }
    }

    #[test]
    fn particle_count_is_bounded() {
        for n in [0, MIN_PARTICLES - 1, MAX_PARTICLES + 1] {
            let c = Config {
                particles: n,
                ..Config::DEFAULT
            };
            assert!(matches!(Scene::new(c), Err(Error::InvalidConfig { .. })));
        }
    }
}
