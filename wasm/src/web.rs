//! The browser glue (wasm32 only): [`Demo`] wraps a [`Scene`] for the page,
//! with `performance.now()` as the stage clock, and [`fixed_run`] gives the
//! page (and `tests/page.rs` through it) the fingerprint of a fixed-seed run.

use wasm_bindgen::prelude::*;

use crate::scene::{self, Config, Fingerprint, Scene};
use crate::structures::{BroadKind, Named, SearchKind};
use crate::timing::{Clock, ROWS, Row, Times};
use spatium::sph::boundary::Shape;

/// `performance.now()`, or 0 where there is no `window.performance` (a
/// worker without it): the timings then read 0 and nothing else changes.
#[derive(Debug)]
pub struct PerfClock(Option<web_sys::Performance>);

impl PerfClock {
    /// The window's performance clock.
    pub fn new() -> Self {
        Self(web_sys::window().and_then(|w| w.performance()))
    }
}

impl Default for PerfClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for PerfClock {
    fn now_ms(&mut self) -> f64 {
        self.0.as_ref().map_or(0.0, web_sys::Performance::now)
    }
}

/// A JS error from a core error.
fn js_error(what: &str, e: spatium::Error) -> JsError {
    JsError::new(&format!("{what}: {e}"))
}

/// The scene's [`Config`] from the page's values.
fn config(
    search: &str,
    broad: &str,
    particles: u32,
    seed: u32,
    pair_cache: bool,
) -> Result<Config, JsError> {
    Ok(Config {
        search: SearchKind::from_name(search)
            .map_err(|e| JsError::new(&format!("neighbour search: {e}")))?,
        broad: BroadKind::from_name(broad)
            .map_err(|e| JsError::new(&format!("broad phase: {e}")))?,
        particles: particles as usize,
        seed: u64::from(seed),
        pair_cache,
        ..Config::DEFAULT
    })
}

/// Forwards Rust panics to the console (once per page).
fn hook_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            web_sys::console::error_1(&JsValue::from_str(&format!("spatium-wasm: {info}")));
        }));
    });
}

/// The running scene, as the page sees it.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Demo {
    scene: Scene,
    times: Times<PerfClock>,
    /// Reused for [`positions`](Demo::positions) and
    /// [`speeds`](Demo::speeds): no allocation per frame on the Rust side.
    positions: Vec<f32>,
    speeds: Vec<f32>,
}

#[wasm_bindgen]
impl Demo {
    /// A scene of the given neighbour search (`sorted`, `linked`,
    /// `bucketed`, `hierarchical`, `multilevel`, `brute`), broad phase
    /// (`hhg`, `kdtree`, `grid`, `hierarchical`, `multilevel`, `brute`), particle
    /// count (100 to 4000), seed and pair-cache switch.
    #[wasm_bindgen(constructor)]
    pub fn new(
        search: &str,
        broad: &str,
        particles: u32,
        seed: u32,
        pair_cache: bool,
    ) -> Result<Demo, JsError> {
        hook_panics();
        let cfg = config(search, broad, particles, seed, pair_cache)?;
        let scene = Scene::new(cfg).map_err(|e| js_error("scene", e))?;
        Ok(Demo {
            scene,
            times: Times::new(PerfClock::new()),
            positions: Vec::with_capacity(2 * scene::MAX_PARTICLES),
            speeds: Vec::with_capacity(scene::MAX_PARTICLES),
        })
    }

    /// Advances `substeps` time steps (at most 16), timing each stage.
    pub fn step(&mut self, substeps: u32) -> Result<(), JsError> {
        for _ in 0..substeps.min(16) {
            self.scene
                .step(&mut self.times)
                .map_err(|e| js_error("step", e))?;
        }
        Ok(())
    }

    /// Steps taken.
    pub fn steps(&self) -> f64 {
        self.scene.steps() as f64
    }

    /// Particles in the fluid.
    pub fn particles(&self) -> u32 {
        self.scene.len() as u32
    }

    /// Neighbour pairs of the last search, if it has a pair cache (else -1).
    pub fn pairs(&self) -> f64 {
        self.scene.cached_pairs().map_or(-1.0, |p| p as f64)
    }

    /// The positions as `x0, y0, x1, y1, …` (metres; `y` up).
    pub fn positions(&mut self) -> js_sys::Float32Array {
        self.positions.clear();
        for p in self.scene.positions() {
            self.positions.push(p.x);
            self.positions.push(p.y);
        }
        js_sys::Float32Array::from(&self.positions[..])
    }

    /// Each particle's speed (m/s), by id.
    pub fn speeds(&mut self) -> js_sys::Float32Array {
        self.speeds.clear();
        self.speeds.extend(
            self.scene
                .state()
                .iter()
                .map(|s| s.velocity.x.hypot(s.velocity.y)),
        );
        js_sys::Float32Array::from(&self.speeds[..])
    }

    /// The obstacles, 5 numbers each: `0, min x, min y, max x, max y` for a
    /// box, `1, centre x, centre y, radius, 0` for a disc.
    pub fn obstacles(&self) -> js_sys::Float32Array {
        let mut v = Vec::new();
        for o in self.scene.obstacles() {
            match o.shape {
                Shape::Box(b) => v.extend([0.0, b.min.x, b.min.y, b.max.x, b.max.y]),
                Shape::Sphere { center, radius } => {
                    v.extend([1.0, center.x, center.y, radius, 0.0]);
                }
                Shape::Triangle(_) => {}
            }
        }
        js_sys::Float32Array::from(&v[..])
    }

    /// The collision radius of a particle (metres).
    pub fn particle_radius(&self) -> f32 {
        self.scene.particle_radius()
    }

    /// Milliseconds spent in each row of [`row_names`] since the last call
    /// (then reset).
    pub fn take_timings(&mut self) -> js_sys::Float64Array {
        js_sys::Float64Array::from(&self.times.take()[..])
    }

    /// The scene's fingerprint now (pairs of the current positions and the
    /// state hash), as text.
    pub fn fingerprint(&mut self) -> Result<String, JsError> {
        self.scene
            .fingerprint()
            .map(|f| f.to_string())
            .map_err(|e| js_error("fingerprint", e))
    }
}

/// The timing rows' labels, joined by `|`.
#[wasm_bindgen]
pub fn row_names() -> String {
    let names: [&str; ROWS] = Row::ALL.map(Row::name);
    names.join("|")
}

/// The domain's size, `[width, height]` in metres.
#[wasm_bindgen]
pub fn domain_size() -> js_sys::Float32Array {
    js_sys::Float32Array::from(&[scene::WIDTH, scene::HEIGHT][..])
}

/// The pipe: `[mouth x, mouth y, direction x, direction y, radius]`
/// (metres; the direction is not normalised).
#[wasm_bindgen]
pub fn pipe_geometry() -> js_sys::Float32Array {
    let (o, d) = (scene::PIPE_ORIGIN, scene::PIPE_DIRECTION);
    js_sys::Float32Array::from(&[o.x, o.y, d.x, d.y, scene::PIPE_RADIUS][..])
}

/// The time step (seconds).
#[wasm_bindgen]
pub fn time_step() -> f32 {
    scene::DT
}

/// Most particles a scene takes.
#[wasm_bindgen]
pub fn max_particles() -> u32 {
    scene::MAX_PARTICLES as u32
}

/// Runs a fresh scene of the given settings for `steps` steps, untimed, and
/// returns its fingerprint as text (what `tests/page.rs` compares with the
/// native build's).
#[wasm_bindgen]
pub fn fixed_run(
    search: &str,
    broad: &str,
    particles: u32,
    seed: u32,
    pair_cache: bool,
    steps: u32,
) -> Result<String, JsError> {
    hook_panics();
    let cfg = config(search, broad, particles, seed, pair_cache)?;
    scene::run(cfg, u64::from(steps))
        .map(|f: Fingerprint| f.to_string())
        .map_err(|e| js_error("fixed run", e))
}

/// The fingerprint the fixed-seed run must give ([`scene::FIXED_EXPECTED`],
/// asserted natively by `tests/native.rs`), as text.
#[wasm_bindgen]
pub fn fixed_expected() -> String {
    scene::FIXED_EXPECTED.to_string()
}
