//! The water channel of the seed, independent of the browser: the box, the
//! pipe, the lock gate and the paddle, the seed's two panels of parameters,
//! and the kinematics that turn the user's controls into obstacle
//! velocities. The page (`web.rs`) and the native tests drive the same code.
//!
//! Lengths are in particle spacings `s` (the start panel's spacing), so the
//! scene keeps its shape at every resolution:
//!
//! * channel: `96s` long (x), `36s` high (y), `24s` wide (z);
//! * pipe: at `x = 4s`, `y = 28s`, the middle of the width, pointing along
//!   `+x` and slightly down, radius `4s`, at 1 m/s;
//! * lock gate: a plate `2s` thick across the whole width at `x = 44s`,
//!   `36s` tall, lifted by `0 ..= 26s` (closed at 0);
//! * paddle: a plate `2s` thick at `x = 70s`, `18s` tall, `16s` wide,
//!   swinging along x by up to `±8s` (a pump pushing the water back).

use spatium::sph::boundary::{Obstacle, Shape};
use spatium::sph::source::Lattice;
use spatium::sph::{Integrator, ParticleState, SphParams};
use spatium::{Aabb3, BoundingBox, Vec3};
use spatium_gpu::{FluidConfig, Gpu, GpuEmitter, GpuError, GpuFluid, Snapshot, SortKind};

/// Most particles the start panel accepts (the GPU buffers are sized for
/// the count chosen; 2²⁰ is the largest benchmark size).
pub const MAX_PARTICLES: u32 = 1 << 20;

/// How the water enters the channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Continuously through the pipe, layer by layer, until the count is
    /// reached (the seed's default).
    Pipe,
    /// All at once, as a block behind the gate.
    Block,
}

/// The seed's start panel (its Fig. 1): what is fixed when the simulation
/// is created.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StartConfig {
    /// Particles (the buffers' capacity; the pipe emits up to it).
    pub particles: u32,
    /// Particle spacing `s` (m); `h = 2s`.
    pub spacing: f32,
    /// Time step `Δt` (s).
    pub dt: f32,
    /// Leapfrog (the seed's) or explicit Euler.
    pub integrator: Integrator,
    /// Counting sort or the seed's bitonic sort.
    pub sort: SortKind,
    /// Pipe or block.
    pub start: Start,
    /// Solver steps per drawn frame.
    pub steps_per_frame: u32,
}

impl StartConfig {
    /// The seed's run: 32 768 particles, `Δt = 0.005`, leapfrog, poured
    /// through the pipe; spacing 0.02 (the seed leaves it open; leapfrog at
    /// 0.005 is stable from about 0.02, see `SphParams::seed`).
    pub const SEED: Self = Self {
        particles: 32_768,
        spacing: 0.02,
        dt: 0.005,
        integrator: Integrator::Leapfrog,
        sort: SortKind::Counting,
        start: Start::Pipe,
        steps_per_frame: 2,
    };

    /// Checks the panel's values.
    ///
    /// # Errors
    /// [`GpuError::Core`] with `InvalidConfig` naming the field: particles
    /// not in `1..=MAX_PARTICLES`, a spacing or `Δt` not finite and
    /// positive, steps per frame not in `1..=64`; the core's checks of the
    /// parameters.
    pub fn check(&self) -> Result<(), GpuError> {
        let bad = |field| Err(spatium::Error::InvalidConfig { field }.into());
        if self.particles == 0 || self.particles > MAX_PARTICLES {
            return bad("particles");
        }
        if !(self.spacing.is_finite() && self.spacing > 0.0) {
            return bad("spacing");
        }
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return bad("dt");
        }
        if self.steps_per_frame == 0 || self.steps_per_frame > 64 {
            return bad("steps_per_frame");
        }
        self.params().map(|_| ())
    }

    /// The channel box.
    pub fn domain(&self) -> Aabb3 {
        let s = self.spacing;
        Aabb3::new(Vec3::ZERO, Vec3::new(96.0 * s, 36.0 * s, 24.0 * s)).unwrap_or(Aabb3::NAN)
    }

    /// The solver's parameters: the seed's table ([`SphParams::seed`]) in
    /// the channel, with this `Δt` and integrator.
    ///
    /// # Errors
    /// The core's refusal of the spacing or `Δt`.
    pub fn params(&self) -> Result<SphParams<Vec3>, GpuError> {
        let mut p = SphParams::seed(self.domain(), self.spacing)?;
        p.dt = self.dt;
        p.integrator = self.integrator;
        p.kernels()?;
        Ok(p)
    }

    /// The lock gate's box at `lift` (0 closed … 1 fully open).
    pub fn gate_at(&self, lift: f32) -> Aabb3 {
        let s = self.spacing;
        let y = 26.0 * s * lift.clamp(0.0, 1.0);
        Aabb3::new(
            Vec3::new(44.0 * s, y, 0.0),
            Vec3::new(46.0 * s, y + 36.0 * s, 24.0 * s),
        )
        .unwrap_or(Aabb3::NAN)
    }

    /// The paddle's box displaced by `dx` along x.
    pub fn paddle_at(&self, dx: f32) -> Aabb3 {
        let s = self.spacing;
        Aabb3::new(
            Vec3::new(70.0 * s + dx, 0.0, 4.0 * s),
            Vec3::new(72.0 * s + dx, 18.0 * s, 20.0 * s),
        )
        .unwrap_or(Aabb3::NAN)
    }

    /// The block of [`Start::Block`]: `particles` lattice points (fewer if
    /// the space behind the gate is full) filling the channel behind the
    /// gate from the floor up, whole layers first: a flat pool at rest.
    ///
    /// # Errors
    /// The core's refusal of the spacing.
    pub fn block(&self) -> Result<Vec<Vec3>, GpuError> {
        let s = self.spacing;
        let region = Aabb3::new(
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(43.0 * s, 35.0 * s, 24.0 * s),
        )?;
        // The lattice runs x fastest, then y, then z: taking its first
        // points would give a wall of water standing against the back of
        // the channel, which collapses. Sort by height (stable: x, then z
        // within a layer) and take whole layers from the floor.
        let mut points: Vec<Vec3> = Lattice::new(region, s)?.points().collect();
        points.sort_by(|a, b| a.y.total_cmp(&b.y).then(a.z.total_cmp(&b.z)));
        points.truncate(self.particles as usize);
        Ok(points)
    }

    /// The pipe: origin, direction, speed (m/s), radius.
    pub fn pipe(&self) -> (Vec3, Vec3, f32, f32) {
        let s = self.spacing;
        (
            Vec3::new(4.0 * s, 28.0 * s, 12.0 * s),
            Vec3::new(1.0, -0.25, 0.0),
            1.0,
            4.0 * s,
        )
    }
}

/// What the user moves while the water flows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Controls {
    /// Lock gate: 0 closed … 1 fully open.
    pub gate_lift: f32,
    /// The paddle swings.
    pub paddle_on: bool,
    /// Paddle amplitude, as a fraction of its largest swing (`±8s`).
    pub paddle_amplitude: f32,
    /// Paddle period (s).
    pub paddle_period: f32,
}

impl Controls {
    /// Gate closed, paddle at rest.
    pub const DEFAULT: Self = Self {
        gate_lift: 0.0,
        paddle_on: false,
        paddle_amplitude: 0.6,
        paddle_period: 1.6,
    };
}

/// The seed's live panel (its Fig. 2): the parameters the user changes
/// while the simulation runs, by the names the page uses.
pub const LIVE_PARAMS: [&str; 7] = [
    "viscosity",
    "stiffness",
    "rest_density",
    "gamma",
    "damping",
    "surface_tension",
    "gravity",
];

/// Live parameters kept beside [`SphParams`]: `γ` survives switching the
/// surface tension off (which sets the solver's coefficient to 0 and skips
/// the normals pass).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Live {
    /// The solver's parameters as they are now.
    pub params: SphParams<Vec3>,
    /// `γ`, the surface-tension coefficient (eq. 13, 16).
    pub gamma: f32,
    /// Surface tension on (`params.surface_tension == gamma`) or off (0).
    pub surface_tension: bool,
}

impl Live {
    /// From the start parameters (surface tension on, the seed's `γ`).
    pub fn new(params: SphParams<Vec3>) -> Self {
        Self {
            params,
            gamma: params.surface_tension,
            surface_tension: params.surface_tension > 0.0,
        }
    }

    /// Sets one live parameter by name ([`LIVE_PARAMS`]): `gravity` is the
    /// magnitude along `−y`, `surface_tension` is on for a value `> 0`.
    /// Returns the parameters to hand to the solver.
    ///
    /// # Errors
    /// `InvalidConfig` for an unknown name; the core's refusal of the new
    /// parameters (a negative viscosity, a zero rest density, ...).
    /// Nothing changes on error.
    pub fn set(&mut self, name: &str, value: f32) -> Result<SphParams<Vec3>, GpuError> {
        let mut next = *self;
        let p = &mut next.params;
        match name {
            "viscosity" => p.viscosity = value,
            "stiffness" => p.stiffness = value,
            "rest_density" => p.rest_density = value,
            "gamma" => next.gamma = value,
            "damping" => p.damping = value,
            "surface_tension" => next.surface_tension = value > 0.0,
            "gravity" => p.gravity = Vec3::new(0.0, -value, 0.0),
            _ => {
                return Err(spatium::Error::InvalidConfig {
                    field: "live parameter",
                }
                .into());
            }
        }
        if !value.is_finite() || next.gamma < 0.0 {
            return Err(spatium::Error::InvalidConfig {
                field: "live parameter",
            }
            .into());
        }
        next.params.surface_tension = if next.surface_tension {
            next.gamma
        } else {
            0.0
        };
        next.params.param_block()?;
        *self = next;
        Ok(self.params)
    }

    /// The value of a live parameter by name, as [`set`](Self::set) takes
    /// it.
    pub fn get(&self, name: &str) -> Option<f32> {
        let p = &self.params;
        Some(match name {
            "viscosity" => p.viscosity,
            "stiffness" => p.stiffness,
            "rest_density" => p.rest_density,
            "gamma" => self.gamma,
            "damping" => p.damping,
            "surface_tension" => f32::from(u8::from(self.surface_tension)),
            "gravity" => -p.gravity.y,
            _ => return None,
        })
    }
}

/// The velocity that brings a kinematic solid from `current` to `target`
/// in `time`, at most `limit` in magnitude (so a slider jump moves the gate
/// smoothly instead of teleporting it through the water).
pub fn track(current: f32, target: f32, time: f32, limit: f32) -> f32 {
    if time.is_nan() || time <= 0.0 {
        return 0.0;
    }
    ((target - current) / time).clamp(-limit, limit)
}

/// Fastest the gate and the paddle move, in spacings per second.
const SOLID_SPEED: f32 = 40.0;

/// The running channel: the fluid on the GPU, the pipe, the solids and the
/// controls.
pub struct Channel {
    /// The start panel it was made with.
    pub config: StartConfig,
    /// The live parameters.
    pub live: Live,
    /// The user's controls.
    pub controls: Controls,
    /// The fluid on the GPU (its obstacles are the gate, id 0, and the
    /// paddle, id 1).
    pub fluid: GpuFluid,
    emitter: Option<GpuEmitter>,
    time: f32,
}

impl Channel {
    /// Creates the channel on `gpu`: the fluid's buffers for
    /// `config.particles`, the gate (closed) and the paddle (at rest), and
    /// either the block or an empty channel with the pipe.
    ///
    /// # Errors
    /// [`StartConfig::check`], and the GPU's errors.
    pub async fn new(gpu: &Gpu, config: StartConfig, timing: bool) -> Result<Self, GpuError> {
        config.check()?;
        let params = config.params()?;
        let (positions, emitter) = match config.start {
            Start::Block => (config.block()?, None),
            Start::Pipe => {
                let (origin, direction, speed, radius) = config.pipe();
                let pipe = GpuEmitter::new(
                    origin,
                    direction,
                    speed,
                    radius,
                    config.spacing,
                    config.particles,
                )?;
                (Vec::new(), Some(pipe))
            }
        };
        let states: Vec<ParticleState<Vec3>> = positions
            .iter()
            .map(|&x| ParticleState {
                start_position: x,
                ..ParticleState::EMPTY
            })
            .collect();
        let fluid_config = FluidConfig {
            sort: config.sort,
            timing,
            ..FluidConfig::default()
        };
        let mut fluid = GpuFluid::new_async(
            gpu,
            params,
            config.particles as usize,
            &positions,
            &states,
            fluid_config,
        )
        .await?;
        fluid.set_obstacles(&[
            Obstacle::fixed(Shape::Box(config.gate_at(0.0))),
            Obstacle::fixed(Shape::Box(config.paddle_at(0.0))),
        ])?;
        Ok(Self {
            config,
            live: Live::new(params),
            controls: Controls::DEFAULT,
            fluid,
            emitter,
            time: 0.0,
        })
    }

    /// Simulated time (s).
    pub fn time(&self) -> f32 {
        self.time
    }

    /// Sets a live parameter ([`Live::set`]) and hands it to the solver.
    ///
    /// # Errors
    /// As [`Live::set`]; nothing changes on error.
    pub fn set_live(&mut self, name: &str, value: f32) -> Result<(), GpuError> {
        let mut live = self.live;
        let params = live.set(name, value)?;
        self.fluid.set_params(params)?;
        self.live = live;
        Ok(())
    }

    /// The solids' velocities for the next `frame` seconds: the gate
    /// towards its lift, the paddle along its swing (or back to rest).
    pub fn solid_velocities(&self, frame: f32) -> [Vec3; 2] {
        let s = self.config.spacing;
        let limit = SOLID_SPEED * s;
        let solids = self.fluid.obstacles();
        let min_of = |i: usize| match solids.get(i).map(|o| o.shape) {
            Some(Shape::Box(b)) => b.min(),
            _ => Vec3::ZERO,
        };
        let gate_y = min_of(0).y;
        let gate_target = self.config.gate_at(self.controls.gate_lift).min().y;
        let paddle_dx = min_of(1).x - self.config.paddle_at(0.0).min().x;
        let paddle_target = if self.controls.paddle_on && self.controls.paddle_period > 0.0 {
            let phase = core::f32::consts::TAU * (self.time + frame) / self.controls.paddle_period;
            8.0 * s * self.controls.paddle_amplitude.clamp(0.0, 1.0) * sin_f32(phase)
        } else {
            0.0
        };
        [
            Vec3::new(0.0, track(gate_y, gate_target, frame, limit), 0.0),
            Vec3::new(track(paddle_dx, paddle_target, frame, limit), 0.0, 0.0),
        ]
    }

    /// One drawn frame: the solids' velocities from the controls, then
    /// `steps_per_frame` steps, each after the pipe's layers due.
    ///
    /// # Errors
    /// The GPU's errors (a full fluid is not one: the pipe stops).
    pub fn advance(&mut self) -> Result<(), GpuError> {
        let k = self.config.steps_per_frame;
        let dt = self.live.params.dt;
        let frame = dt * k as f32;
        let velocities = self.solid_velocities(frame);
        let solids: Vec<Obstacle<Vec3>> = self
            .fluid
            .obstacles()
            .iter()
            .zip(velocities)
            .map(|(o, velocity)| Obstacle {
                shape: o.shape,
                velocity,
            })
            .collect();
        self.fluid.set_obstacles(&solids)?;
        for _ in 0..k {
            if let Some(pipe) = &mut self.emitter
                && pipe.remaining() > 0
            {
                pipe.emit(&mut self.fluid, dt)?;
            }
            self.fluid.step(1)?;
            self.time += dt;
        }
        Ok(())
    }
}

/// `sin` of an `f32` phase, computed in `f64` (the paddle's swing; no
/// parity test depends on its last bit).
fn sin_f32(x: f32) -> f32 {
    (f64::from(x)).sin() as f32
}

/// Steps of the fixed-seed run compared between the browser and native
/// builds.
pub const FIXED_STEPS: u32 = 25;

/// The fixed-seed run's start: a 12³ block at spacing 0.025 falling in a
/// box (as the GPU crate's parity test) onto a static sphere and a static
/// box, beside a gate sliding down into it at 0.4 m/s.
pub fn fixed_scene() -> Result<(spatium_gpu::scene::Scene, Vec<Obstacle<Vec3>>), GpuError> {
    let scene = spatium_gpu::scene::dam_break(12 * 12 * 12, 0.025, 0.005)?;
    let l = 12.0 * 0.025;
    let obstacles = vec![
        Obstacle::fixed(Shape::Sphere {
            center: Vec3::new(0.5 * l, 0.0, 0.5 * l),
            radius: 0.2 * l,
        }),
        Obstacle::fixed(Shape::Box(Aabb3::new(
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(0.2 * l, 0.15 * l, l),
        )?)),
        Obstacle {
            shape: Shape::Box(Aabb3::new(
                Vec3::new(1.05 * l, 0.4 * l, 0.0),
                Vec3::new(1.15 * l, 1.4 * l, l),
            )?),
            velocity: Vec3::new(0.0, -0.4, 0.0),
        },
    ];
    Ok((scene, obstacles))
}

/// Runs the fixed-seed scene for `steps` on `gpu` (counting sort) and reads
/// it back: the browser's and the native run's states are compared by the
/// page test.
///
/// # Errors
/// The GPU's errors.
pub async fn fixed_run(gpu: &Gpu, steps: u32) -> Result<Snapshot, GpuError> {
    let (scene, obstacles) = fixed_scene()?;
    let mut fluid = scene.fluid_async(gpu, FluidConfig::default()).await?;
    fluid.set_obstacles(&obstacles)?;
    fluid.step(steps)?;
    fluid.read_back_async().await
}

/// A snapshot flattened for JavaScript: per particle id, position (3),
/// velocity (3) and density.
pub fn flatten(s: &Snapshot) -> Vec<f32> {
    s.positions
        .iter()
        .zip(&s.states)
        .flat_map(|(x, st)| {
            [
                x.x,
                x.y,
                x.z,
                st.velocity.x,
                st.velocity.y,
                st.velocity.z,
                st.density,
            ]
        })
        .collect()
}
