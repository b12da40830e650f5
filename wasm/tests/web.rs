//! The wasm build's side of the cross-build check, run in headless Chromium
//! by wasm-bindgen's test runner (`scripts/wasm.sh`: `cargo test --target
//! wasm32-unknown-unknown --test web` with `CHROMEDRIVER` and
//! `WASM_BINDGEN_USE_BROWSER=1`): the fixed-seed run in the browser gives
//! [`FIXED_EXPECTED`], the fingerprint `tests/native.rs` asserts natively.

#![cfg(target_arch = "wasm32")]

use spatium_wasm::scene::{FIXED_CONFIG, FIXED_EXPECTED, FIXED_STEPS, run};
use spatium_wasm::structures::Named;
use spatium_wasm::web::{Demo, fixed_expected, fixed_run};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn fixed_seed_run_in_the_browser_matches_the_native_build() {
    let f = run(FIXED_CONFIG, FIXED_STEPS).expect("fixed run");
    assert_eq!(f, FIXED_EXPECTED, "wasm: {f}\nexpected: {FIXED_EXPECTED}");
}

#[wasm_bindgen_test]
fn the_page_entry_point_gives_the_same_fingerprint() {
    let c = FIXED_CONFIG;
    let got = fixed_run(
        c.search.name(),
        c.broad.name(),
        c.particles as u32,
        c.seed as u32,
        c.pair_cache,
        FIXED_STEPS as u32,
    )
    .map_err(|_| "fixed_run failed")
    .expect("fixed_run");
    assert_eq!(got, fixed_expected());
}

#[wasm_bindgen_test]
fn the_demo_steps_and_times_its_stages() {
    let mut d = Demo::new("linked", "kdtree", 500, 3, false)
        .map_err(|_| "Demo::new failed")
        .expect("demo");
    d.step(5).map_err(|_| "step failed").expect("step");
    assert_eq!(d.steps(), 5.0);
    assert!(d.particles() > 200, "{}", d.particles());
    assert_eq!(d.positions().length(), 2 * d.particles());
    assert_eq!(d.speeds().length(), d.particles());
    assert_eq!(d.obstacles().length() % 5, 0);
    let t = d.take_timings().to_vec();
    assert!(t.iter().all(|ms| ms.is_finite() && *ms >= 0.0), "{t:?}");
    assert!(
        t.iter().sum::<f64>() > 0.0,
        "performance.now() never advanced: {t:?}"
    );
    assert!(Demo::new("nope", "hhg", 500, 3, true).is_err());
}
