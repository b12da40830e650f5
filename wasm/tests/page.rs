//! Drives the real page (`www/index.html` with the wasm-bindgen output in
//! `www/pkg`) in headless Chromium through chromedriver's WebDriver HTTP API
//! (plain HTTP/1.1 over `TcpStream`, JSON by `serde_json`), serving `www/`
//! with `python3 -m http.server`:
//!
//! * the page loads and its frame counter (`<body data-frames>`, also in
//!   the title) advances;
//! * its timing table fills with per-stage times;
//! * every neighbour search and broad phase can be picked with the page's
//!   controls and keeps the frames coming without an error;
//! * the page's fixed-seed runs (`window.spatium.fixedRun`, the wasm build)
//!   give the same fingerprints — pair count, pair checksum and state hash —
//!   as this native build computes here, for the fixed config and a few
//!   others.
//!
//! Ignored by default: it needs Chromium, chromedriver and a built `www/pkg`.
//! `scripts/wasm.sh` builds the page and runs it with `--ignored`.
//! Environment: `CHROMEDRIVER` (default `chromedriver`), `CHROME_BIN`
//! (default: `chromium`, `chromium-browser` or `google-chrome` on the
//! `PATH`), `SPATIUM_SCREENSHOT` (write a PNG of the page there).

#![cfg(not(target_arch = "wasm32"))]

mod webdriver;

use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use spatium_wasm::scene::{Config, FIXED_CONFIG, FIXED_EXPECTED, FIXED_STEPS, run};
use spatium_wasm::structures::{BroadKind, Named, SearchKind, kinds};
use webdriver::{Harness, Session};

/// Chromium's flags for a headless run as root in a container.
const CHROME_ARGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--window-size=1400,860",
];

/// The page's `fixedRun` call and the native fingerprint of the same run.
fn compare_fixed_run(session: &Session, c: Config, steps: u64) {
    let native = run(c, steps).expect("native run").to_string();
    let script = format!(
        "return window.spatium.fixedRun({:?}, {:?}, {}, {}, {}, {});",
        c.search.name(),
        c.broad.name(),
        c.particles,
        c.seed,
        c.pair_cache,
        steps
    );
    let page = session.js(&script);
    println!("page   {script}\n  -> {page}\nnative -> {native}");
    assert_eq!(page.as_str(), Some(native.as_str()), "{script}");
}

#[test]
#[ignore = "needs headless Chromium, chromedriver and the built page (www/pkg): scripts/wasm.sh runs it"]
fn page_runs_and_matches_the_native_build() {
    let www = Path::new(env!("CARGO_MANIFEST_DIR")).join("www");
    for f in [
        "index.html",
        "main.js",
        "pkg/spatium_wasm.js",
        "pkg/spatium_wasm_bg.wasm",
    ] {
        assert!(
            www.join(f).is_file(),
            "www/{f} is missing: build the page first (scripts/wasm.sh)"
        );
    }
    let harness = Harness::start(&www);
    let session = harness.open(CHROME_ARGS, "spatium", "index.html");
    let start = Instant::now();
    while session.js("return !!(window.spatium && window.spatium.ready);") != Value::Bool(true) {
        assert_eq!(session.error(), Value::Null, "the page failed to start");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the page never became ready"
        );
        sleep(Duration::from_millis(100));
    }

    // Frames advance, and the title follows.
    let fps = session.assert_frames_advance(Duration::from_millis(2000), "default scene");
    println!("default scene: {fps:.1} frames/s in headless Chromium");
    let title = session.js("return document.title;");
    assert!(
        title
            .as_str()
            .is_some_and(|t| t.starts_with("spatium wasm · frame ")),
        "{title}"
    );

    // The timing table: every stage row, a draw row and a total, with times.
    let rows = session.js(
        "return Array.from(document.querySelectorAll('#timings tbody tr'))\
         .map(r => [r.cells[0].textContent, Number(r.cells[1].textContent)]);",
    );
    let rows = rows.as_array().expect("timing rows").clone();
    println!("timings, ms per frame (4 steps):");
    for r in &rows {
        println!("  {:<26} {}", r[0].as_str().unwrap_or("?"), r[1]);
    }
    assert_eq!(rows.len(), spatium_wasm::timing::ROWS + 2, "{rows:?}");
    let total = rows.last().and_then(|r| r[1].as_f64()).expect("total");
    assert!(total > 0.0, "no time measured: {rows:?}");

    // Every structure through the page's controls.
    let pick = |id: &str, value: &str| {
        session.js(&format!(
            "const e = document.getElementById({id:?}); e.value = {value:?}; \
             e.dispatchEvent(new Event('change')); return e.value;"
        ))
    };
    assert_eq!(pick("particles", "800"), json!("800"));
    for kind in kinds::<SearchKind>() {
        assert_eq!(pick("search", kind.name()), json!(kind.name()));
        session.assert_frames_advance(Duration::from_millis(400), kind.name());
    }
    pick("search", "sorted");
    for kind in kinds::<BroadKind>() {
        assert_eq!(pick("broad", kind.name()), json!(kind.name()));
        session.assert_frames_advance(Duration::from_millis(400), kind.name());
    }
    let status = session.js("return document.getElementById('status').textContent;");
    assert!(
        status
            .as_str()
            .is_some_and(|s| s.contains("brute broad phase · 800 particles")),
        "{status}"
    );

    // The live scene itself, paused: its fingerprint after however many
    // steps it has taken equals a native run of as many steps.
    let paused = session.js("document.getElementById('pause').click(); \
         return [window.spatium.demo.steps(), window.spatium.demo.fingerprint()];");
    let steps = paused[0].as_f64().expect("steps") as u64;
    let live = Config {
        search: SearchKind::Sorted,
        broad: BroadKind::Brute,
        particles: 800,
        ..Config::DEFAULT
    };
    let native = run(live, steps).expect("native run").to_string();
    println!(
        "live page scene (paused) -> {}\nnative                    -> {native}",
        paused[1]
    );
    assert!(steps > 0);
    assert_eq!(paused[1].as_str(), Some(native.as_str()));
    session.js("document.getElementById('pause').click(); return null;");
    session.assert_frames_advance(Duration::from_millis(300), "resumed");

    // The fixed-seed run: page (wasm) against native, and the constant.
    assert_eq!(FIXED_EXPECTED.steps, FIXED_STEPS);
    compare_fixed_run(&session, FIXED_CONFIG, FIXED_STEPS);
    let expected = session.js("return window.spatium.fixedExpected();");
    assert_eq!(expected.as_str(), Some(FIXED_EXPECTED.to_string().as_str()));
    let others = [
        (SearchKind::Linked, BroadKind::KdTree, 1200, 3, false, 400),
        (
            SearchKind::Hierarchical,
            BroadKind::Multilevel,
            2500,
            11,
            true,
            300,
        ),
        (
            SearchKind::Bucketed,
            BroadKind::Hierarchical,
            4000,
            5,
            true,
            200,
        ),
        (SearchKind::Multilevel, BroadKind::Brute, 900, 0, true, 300),
    ];
    for (search, broad, particles, seed, pair_cache, steps) in others {
        let c = Config {
            search,
            broad,
            particles,
            seed,
            pair_cache,
            ..Config::DEFAULT
        };
        compare_fixed_run(&session, c, steps);
    }

    // A screenshot of the default scene after a few seconds of pouring.
    if let Some(path) = std::env::var_os("SPATIUM_SCREENSHOT") {
        // Back to the default scene, caught while the dam breaks and the
        // pipe pours (about 300 steps in).
        pick("broad", "hhg");
        pick("particles", "1500");
        sleep(Duration::from_millis(1300));
        session.assert_frames_advance(Duration::from_millis(300), "before the screenshot");
        session.save_screenshot(Path::new(&path));
    }
    assert_eq!(session.error(), Value::Null);
}
