//! Drives the 3D page (`www/index.html` with the wasm-bindgen output in
//! `www/pkg`) in headless Chromium on SwiftShader's WebGPU through
//! chromedriver (the WebDriver client of `wasm/tests/webdriver`), serving the
//! repository root so the page's link to the 2D page resolves:
//!
//! * the page finds a WebGPU adapter, starts, and its frames advance;
//! * the per-stage GPU times fill the table;
//! * every live control changes the parameter it names, the gate slider
//!   lifts the gate, the paddle swings, the camera orbits and zooms;
//! * the start panel restarts with every value it offers;
//! * the fixed-seed run in the browser gives the same particle state as
//!   the native build on this machine's adapter (lavapipe in CI), within
//!   the GPU crate's parity tolerances;
//! * a screenshot is written (`SPATIUM_WATER_SCREENSHOT`);
//! * a browser without WebGPU gets the plain message and the 2D page.
//!
//! Ignored by default: it needs Chromium, chromedriver, a native adapter
//! and the built page. `scripts/water.sh` builds the page and runs it with
//! `--ignored`.

#![cfg(not(target_arch = "wasm32"))]

#[path = "../../gpu/tests/common/mod.rs"]
mod common;
#[path = "../../wasm/tests/webdriver/mod.rs"]
mod webdriver;

use std::path::Path;
use std::thread::sleep;
use std::time::Duration;

use serde_json::{Value, json};
use spatium_water::channel::{self, FIXED_STEPS};
use webdriver::{Harness, Session};

/// Headless Chromium with WebGPU on its bundled SwiftShader Vulkan.
///
/// `--use-angle=swiftshader --enable-unsafe-swiftshader` give the
/// compositor a software GL: without them the WebGPU canvas of a headless
/// Chromium here never reaches the page (a white rectangle; the GPU
/// process logs "Unable to create shared image"), and Chrome destroys the
/// canvas device's buffers that are waiting to be mapped ("Buffer was
/// destroyed before mapping was resolved"), which fails the page's stage
/// timings.
const WEBGPU_ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    "--enable-unsafe-webgpu",
    "--enable-features=Vulkan",
    "--use-vulkan=swiftshader",
    "--use-webgpu-adapter=swiftshader",
    "--disable-gpu-sandbox",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--window-size=1400,860",
];

/// Headless Chromium without a GPU: no WebGPU adapter.
const NO_GPU_ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--window-size=1000,700",
];

/// Tolerances of the GPU crate's parity test (`gpu/tests/parity.rs`):
/// position 1/1000 of the spacing, velocity 1 mm/s, density 1/1000 of ρ₀.
const POSITION_TOL: f32 = 1e-3 * 0.025;
const VELOCITY_TOL: f32 = 1e-3;
const DENSITY_TOL: f32 = 1e-3;

fn state(session: &Session) -> Value {
    let text = session.js("return window.water.water.state_json();");
    serde_json::from_str(text.as_str().expect("state JSON")).expect("state parses")
}

/// Sets an input's value (or a checkbox) and fires its `input` event.
fn set_input(session: &Session, id: &str, value: &str) {
    session.js(&format!(
        "const e = document.getElementById({id:?}); \
         if (e.type === 'checkbox') e.checked = {value:?} === 'true'; else e.value = {value:?}; \
         e.dispatchEvent(new Event('input')); e.dispatchEvent(new Event('change')); return null;"
    ));
}

fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
#[ignore = "needs headless Chromium, chromedriver, an adapter and the built page (www/pkg): scripts/water.sh runs it"]
fn the_water_channel_runs_in_the_browser_and_matches_the_native_gpu() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository root")
        .to_path_buf();
    for f in [
        "index.html",
        "water.js",
        "pkg/spatium_water.js",
        "pkg/spatium_water_bg.wasm",
    ] {
        assert!(
            root.join("water/www").join(f).is_file(),
            "water/www/{f} is missing: build the page first (scripts/water.sh)"
        );
    }
    let gpu = common::gpu("water page").expect("a native adapter for the reference run");
    let harness = Harness::start(&root);

    // A small start so SwiftShader keeps frames coming.
    let session = harness.open(
        WEBGPU_ARGS,
        "water",
        "water/www/index.html?particles=2048&steps=1&start=block",
    );
    Harness::wait_for(
        &session,
        "window.water && window.water.ready",
        Duration::from_secs(60),
        "the page starting",
    );
    assert_eq!(
        session.js("return window.water.supported;"),
        Value::Bool(true),
        "headless Chromium on SwiftShader gave no WebGPU adapter"
    );
    let adapter = session.js("return window.water.water.adapter();");
    println!("browser adapter: {adapter}");
    let fps = session.assert_frames_advance(Duration::from_millis(3000), "the block scene");
    println!("block scene, 2048 particles: {fps:.1} frames/s (SwiftShader: a smoke test)");
    let s = state(&session);
    assert_eq!(s["particles"], json!(2048));
    assert_eq!(s["config"]["start"], json!("block"));

    // Per-stage GPU times: the adapter has timestamp queries; the table
    // fills after a window of frames.
    Harness::wait_for(
        &session,
        "JSON.parse(window.water.water.state_json()).timing.steps > 0",
        Duration::from_secs(60),
        "the first timed window",
    );
    let s = state(&session);
    assert_eq!(s["timing"]["available"], json!(true));
    println!("GPU ms per step: {}", s["timing"]);
    assert!(number(&s["timing"]["total"]) > 0.0, "{}", s["timing"]);
    let rows = session.js("return document.querySelectorAll('#timings tbody tr').length;");
    assert_eq!(number(&rows) as usize, 8, "seven stages and a total");

    // Every live control changes what it names.
    for (name, value) in [
        ("viscosity", 0.05),
        ("stiffness", 2.0),
        ("rest_density", 1.2),
        ("gamma", 0.5),
        ("damping", 0.3),
        ("gravity", 5.0),
    ] {
        let before = state(&session)["live"].clone();
        set_input(&session, &format!("live-{name}"), &value.to_string());
        let after = state(&session)["live"].clone();
        assert!(
            (number(&after[name]) - value).abs() < 1e-6,
            "{name}: {after}"
        );
        for (other, v) in after.as_object().expect("live object") {
            if other != name {
                assert_eq!(v, &before[other], "setting {name} changed {other}");
            }
        }
    }
    set_input(&session, "live-surface_tension", "false");
    assert_eq!(number(&state(&session)["live"]["surface_tension"]), 0.0);
    set_input(&session, "live-surface_tension", "true");
    assert_eq!(number(&state(&session)["live"]["surface_tension"]), 1.0);
    session.assert_frames_advance(Duration::from_millis(800), "after the live changes");

    // The gate slides up when lifted; the paddle swings when switched on.
    let gate_y = |s: &Value| number(&s["solids"][0]["min"][1]);
    let paddle_x = |s: &Value| number(&s["solids"][1]["min"][0]);
    let (g0, p0) = {
        let s = state(&session);
        (gate_y(&s), paddle_x(&s))
    };
    set_input(&session, "paddle-amplitude", "0.8");
    assert!((number(&state(&session)["controls"]["paddle_amplitude"]) - 0.8).abs() < 1e-6);
    set_input(&session, "gate", "1");
    set_input(&session, "paddle", "true");
    let mut moved = (0.0f64, 0.0f64);
    for _ in 0..40 {
        sleep(Duration::from_millis(150));
        let s = state(&session);
        moved.0 = moved.0.max(gate_y(&s) - g0);
        moved.1 = moved.1.max((paddle_x(&s) - p0).abs());
        if moved.0 > 0.2 && moved.1 > 0.02 {
            break;
        }
    }
    let s = state(&session);
    println!(
        "gate lifted by {:.3} m, paddle swung {:.3} m",
        moved.0, moved.1
    );
    assert_eq!(number(&s["controls"]["gate_lift"]), 1.0);
    assert_eq!(s["controls"]["paddle_on"], json!(true));
    assert!(moved.0 > 0.05, "the gate did not lift: {}", s["solids"]);
    assert!(moved.1 > 0.01, "the paddle did not swing: {}", s["solids"]);

    // The orbit camera: a drag turns it, the wheel zooms.
    let eye0 = state(&session)["camera"].clone();
    session.js(
        "const c = document.getElementById('view'); \
         const ev = (t, x, y) => new PointerEvent(t, {clientX: x, clientY: y, pointerId: 1, bubbles: true}); \
         c.dispatchEvent(ev('pointerdown', 300, 300)); c.dispatchEvent(ev('pointermove', 380, 330)); \
         c.dispatchEvent(ev('pointerup', 380, 330)); \
         c.dispatchEvent(new WheelEvent('wheel', {deltaY: 300, bubbles: true, cancelable: true})); return null;",
    );
    let eye1 = state(&session)["camera"].clone();
    assert_ne!(eye0["eye"], eye1["eye"], "the drag did not orbit");
    assert!(
        number(&eye1["distance"]) > number(&eye0["distance"]),
        "the wheel did not zoom out"
    );

    // The start panel: every value it offers reaches the new run.
    for (id, value) in [
        ("particles", "1500"),
        ("spacing", "0.025"),
        ("dt", "0.004"),
        ("integrator", "euler"),
        ("sort", "bitonic"),
        ("start-mode", "pipe"),
        ("steps-per-frame", "2"),
    ] {
        set_input(&session, id, value);
    }
    session.js("document.getElementById('start').click(); return null;");
    Harness::wait_for(
        &session,
        "window.water.water && JSON.parse(window.water.water.state_json()).config.sort === 'bitonic'",
        Duration::from_secs(60),
        "the restart",
    );
    session.assert_frames_advance(Duration::from_millis(1500), "the restarted scene");
    let s = state(&session);
    assert_eq!(
        s["config"],
        json!({"particles": 1500, "spacing": 0.025, "dt": 0.004, "integrator": "euler",
               "sort": "bitonic", "start": "pipe", "steps_per_frame": 2}),
    );
    assert!(number(&s["particles"]) > 0.0, "the pipe has not poured");
    assert!(number(&s["particles"]) <= 1500.0);
    // The live panel's values carry over to the new run.
    assert!(
        (number(&s["live"]["viscosity"]) - 0.05).abs() < 1e-6,
        "{}",
        s["live"]
    );

    // The fixed-seed run: the browser's WebGPU against the native adapter.
    let page = session.js_async(
        &format!(
            "const done = arguments[arguments.length - 1]; \
             window.water.fixedRun({FIXED_STEPS}).then(done, e => done('error: ' + e));"
        ),
        Duration::from_secs(300),
    );
    let page: Vec<f32> = page
        .as_array()
        .unwrap_or_else(|| panic!("fixedRun failed: {page}"))
        .iter()
        .map(|v| number(v) as f32)
        .collect();
    let native = pollster::block_on(channel::fixed_run(&gpu, FIXED_STEPS)).expect("native run");
    assert!(!native.diverged);
    let native = channel::flatten(&native);
    assert_eq!(page.len(), native.len(), "particle counts differ");
    let mut worst = [0.0f32; 3];
    for (p, n) in page.chunks_exact(7).zip(native.chunks_exact(7)) {
        for k in 0..3 {
            worst[0] = worst[0].max((p[k] - n[k]).abs());
            worst[1] = worst[1].max((p[3 + k] - n[3 + k]).abs());
        }
        worst[2] = worst[2].max((p[6] - n[6]).abs());
    }
    println!(
        "fixed-seed run, {} particles, {FIXED_STEPS} steps, browser against {}: \
         position {:.2e} m, velocity {:.2e} m/s, density {:.2e}",
        page.len() / 7,
        gpu.describe(),
        worst[0],
        worst[1],
        worst[2]
    );
    assert!(worst[0] <= POSITION_TOL, "position {}", worst[0]);
    assert!(worst[1] <= VELOCITY_TOL, "velocity {}", worst[1]);
    assert!(worst[2] <= DENSITY_TOL, "density {}", worst[2]);

    // A screenshot of the seed's scene: the pipe pouring against the gate.
    if let Some(path) = std::env::var_os("SPATIUM_WATER_SCREENSHOT") {
        session.call(
            "POST",
            "url",
            Some(json!({ "url": format!(
                "http://127.0.0.1:{}/water/www/index.html?particles=8000&steps=2&start=block",
                harness.web_port
            )})),
        );
        Harness::wait_for(
            &session,
            "window.water && window.water.ready && window.water.water",
            Duration::from_secs(60),
            "the screenshot scene",
        );
        set_input(&session, "gate", "0.45");
        Harness::wait_for(
            &session,
            "Number(document.body.dataset.frames) >= 40",
            Duration::from_secs(240),
            "40 frames of the screenshot scene",
        );
        session.save_screenshot(Path::new(&path));
    }
    assert_eq!(session.error(), Value::Null);
    drop(session);

    // Without WebGPU: the message, and the CPU 2D page behind its link.
    let session = harness.open(NO_GPU_ARGS, "water", "water/www/index.html");
    Harness::wait_for(
        &session,
        "window.water && window.water.ready",
        Duration::from_secs(30),
        "the page without WebGPU",
    );
    assert_eq!(
        session.js("return window.water.supported;"),
        Value::Bool(false)
    );
    let shown = session.js("const m = document.getElementById('nowebgpu'); \
         return [getComputedStyle(m).display, m.textContent, \
                 getComputedStyle(document.getElementById('app')).display];");
    assert_eq!(shown[0], json!("block"), "{shown}");
    assert!(
        shown[1].as_str().is_some_and(|t| t.contains("no WebGPU")),
        "{shown}"
    );
    assert_eq!(shown[2], json!("none"), "{shown}");
    let linked = session.js_async(
        "const done = arguments[arguments.length - 1]; \
         fetch(document.getElementById('fallback').href).then(r => done(r.status), e => done(String(e)));",
        Duration::from_secs(30),
    );
    assert_eq!(linked, json!(200), "the 2D page behind the link");
}
