//! The native build's side of the cross-build check: the fixed-seed run
//! reproduces [`FIXED_EXPECTED`] (which `tests/web.rs` asserts in the
//! browser, and `tests/page.rs` compares with the page's own run), and the
//! scene is deterministic and independent of how pairs are found.

#![cfg(not(target_arch = "wasm32"))]

use spatium::{BruteForceNeighbors, Vec2};
use spatium_wasm::scene::{
    Config, FIXED_CONFIG, FIXED_EXPECTED, FIXED_STEPS, Scene, pairs_checksum, run,
};
use spatium_wasm::structures::{BroadKind, Search, SearchKind, kinds};
use spatium_wasm::timing::{NoClock, Times};

#[test]
fn fixed_seed_run_gives_the_expected_fingerprint() {
    let f = run(FIXED_CONFIG, FIXED_STEPS).expect("fixed run");
    println!("native fixed run: {f}");
    assert_eq!(f, FIXED_EXPECTED, "native: {f}\nexpected: {FIXED_EXPECTED}");
    assert!(f.pairs > 0 && f.particles > 0);
}

#[test]
fn runs_are_deterministic_and_the_seed_matters() {
    let c = Config {
        particles: 600,
        ..Config::DEFAULT
    };
    let a = run(c, 120).expect("run");
    assert_eq!(a, run(c, 120).expect("run"));
    let b = run(Config { seed: 8, ..c }, 120).expect("run");
    assert_ne!(a.state, b.state);
}

#[test]
fn the_pair_cache_changes_nothing() {
    let c = Config {
        particles: 800,
        ..Config::DEFAULT
    };
    let cached = run(c, 150).expect("run");
    let plain = run(
        Config {
            pair_cache: false,
            ..c
        },
        150,
    )
    .expect("run");
    assert_eq!(cached, plain);
}

#[test]
fn every_search_finds_the_brute_force_pairs() {
    let mut scene = Scene::new(Config {
        particles: 2000,
        ..Config::DEFAULT
    })
    .expect("scene");
    let mut times = Times::new(NoClock);
    for _ in 0..400 {
        scene.step(&mut times).expect("step");
    }
    let x: Vec<Vec2> = scene.positions().to_vec();
    let h = scene.h();
    let mut brute = BruteForceNeighbors::new(vec![Vec2::ZERO; x.len()]);
    let want = pairs_checksum(&mut brute, &x, h).expect("brute");
    assert!(want.0 > 1000, "{want:?}");
    for kind in kinds::<SearchKind>() {
        let mut s = Search::new(kind, x.len());
        assert_eq!(
            pairs_checksum(&mut s, &x, h).expect("build"),
            want,
            "{kind:?}"
        );
    }
}

#[test]
fn every_search_and_broad_phase_runs() {
    for search in kinds::<SearchKind>() {
        for broad in kinds::<BroadKind>() {
            let c = Config {
                search,
                broad,
                particles: 400,
                ..Config::DEFAULT
            };
            let f = run(c, 300).unwrap_or_else(|e| panic!("{search:?} / {broad:?}: {e}"));
            assert_eq!(f.particles, 400, "{search:?} / {broad:?}");
        }
    }
}

#[test]
fn the_broad_phase_changes_nothing() {
    // Every broad phase reports each obstacle near a particle once; the
    // field's obstacles do not overlap the fluid twice at once in this run,
    // so the order of the reports cannot matter.
    let c = Config {
        particles: 1000,
        ..Config::DEFAULT
    };
    let want = run(c, 500).expect("run");
    for broad in kinds::<BroadKind>() {
        assert_eq!(
            run(Config { broad, ..c }, 500).expect("run"),
            want,
            "{broad:?}"
        );
    }
}
