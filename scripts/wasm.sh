#!/usr/bin/env bash
# The WASM demo page (wasm/): installs what it needs on a fresh Debian
# machine, then formatting, lints (native and wasm32), the native tests, the
# release wasm build, wasm-bindgen into wasm/www/pkg, and the browser tests
# in headless Chromium:
#   * wasm-bindgen-test (tests/web.rs): the fixed-seed run inside the
#     browser gives the fingerprint the native tests assert;
#   * the page itself (tests/page.rs) driven through chromedriver's
#     WebDriver API: frames advance, the controls switch every structure,
#     and the page's fixed-seed runs equal the native build's.
#
# Locally, anything that cannot be installed is reported as a loud
# "SKIPPED:" line (and in the summary, "PASSED WITH SKIPPED PARTS"), never
# passed silently: without a browser the browser and page tests do not run.
# Under CI (CI=true, 1 or yes; set by .ci/run) every skip fails the run
# instead, with a line naming what could not run and why: the browser
# (tests/web.rs) and page (tests/page.rs) tests must run. Run from anywhere.
#
# Environment:
#   REQUIRE_BROWSER=1  fail instead of skipping when Chromium, chromedriver,
#                      python3 or wasm-bindgen-cli cannot be had (set under
#                      CI)
#   SCREENSHOT=PATH    where the page test writes its PNG
#                      (default wasm/target/page-screenshot.png)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../wasm"

REQUIRE_BROWSER="${REQUIRE_BROWSER:-0}"
SCREENSHOT="${SCREENSHOT:-$PWD/target/page-screenshot.png}"
SKIP_FATAL_VAR=REQUIRE_BROWSER
# shellcheck source=lib/stages.sh
source ../scripts/lib/stages.sh
# shellcheck source=lib/install.sh
source ../scripts/lib/install.sh
if in_ci; then
    export REQUIRE_BROWSER=1
fi

# ---------------------------------------------------------------- install
INSTALL_START=$SECONDS

stage "toolchain: wasm32-unknown-unknown target, rustfmt, clippy"
HAVE_WASM_TARGET=1
if command -v rustup >/dev/null 2>&1; then
    rustup target add wasm32-unknown-unknown
    rustup component add rustfmt clippy
elif [[ ! -d "$(rustc --print sysroot)/lib/rustlib/wasm32-unknown-unknown" ]]; then
    HAVE_WASM_TARGET=0
    skip "no rustup and no wasm32-unknown-unknown standard library: every wasm build and browser test"
fi

stage "wasm-bindgen-cli (the version in wasm/Cargo.lock)"
install_wasm_bindgen_cli

stage "headless Chromium, chromedriver and python3 (apt: chromium chromium-driver python3)"
install_chrome
HAVE_PYTHON=$HAVE_CHROME
finish_stage
INSTALL_SECONDS=$((SECONDS - INSTALL_START))

# ----------------------------------------------------------------- checks
CHECK_START=$SECONDS

stage "cargo fmt --check"
cargo fmt -- --check

stage "cargo clippy (native, all targets, -D warnings)"
cargo clippy --all-targets -- -D warnings

if [[ $HAVE_WASM_TARGET == 1 ]]; then
    stage "cargo clippy (wasm32-unknown-unknown, all targets, -D warnings)"
    cargo clippy --target wasm32-unknown-unknown --all-targets -- -D warnings
fi

stage "native tests (the scene, the fixed-seed fingerprint)"
cargo test

if [[ $HAVE_WASM_TARGET == 1 ]]; then
    stage "release build for wasm32-unknown-unknown"
    cargo build --release --target wasm32-unknown-unknown --lib
    ls -l target/wasm32-unknown-unknown/release/spatium_wasm.wasm
fi

if [[ $HAVE_WASM_TARGET == 1 && $HAVE_BINDGEN == 1 ]]; then
    stage "wasm-bindgen --target web -> wasm/www/pkg"
    rm -rf www/pkg
    wasm-bindgen --target web --no-typescript --out-dir www/pkg \
        target/wasm32-unknown-unknown/release/spatium_wasm.wasm
    ls -l www/pkg
    printf 'page wasm: %d bytes\n' "$(stat -c %s www/pkg/spatium_wasm_bg.wasm)"
fi

if [[ $HAVE_WASM_TARGET == 1 && $HAVE_BINDGEN == 1 && $HAVE_CHROME == 1 ]]; then
    stage "wasm-bindgen-test in headless Chromium (tests/web.rs)"
    WASM_BINDGEN_USE_BROWSER=1 cargo test --release --target wasm32-unknown-unknown --test web

    if [[ $HAVE_PYTHON == 1 ]]; then
        stage "the page through WebDriver (tests/page.rs)"
        mkdir -p "$(dirname "$SCREENSHOT")"
        SPATIUM_SCREENSHOT="$SCREENSHOT" cargo test --test page -- --ignored --nocapture
    fi
fi
finish_stage
CHECK_SECONDS=$((SECONDS - CHECK_START))

print_summary wasm.sh "$INSTALL_SECONDS" "$CHECK_SECONDS"
