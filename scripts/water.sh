#!/usr/bin/env bash
# The 3D water-channel page (water/): the GPU SPH of spatium-gpu in the
# browser on WebGPU. Installs what it needs on a fresh Debian machine, then
# formatting, lints (native and wasm32), rustdoc, the native tests (the
# panels, the kinematic gate and paddle and the pipe, stepped on lavapipe),
# the wasm build (profile page: release with fat LTO), wasm-bindgen into
# water/www/pkg, and the page test (tests/page.rs) in headless Chromium on its bundled SwiftShader WebGPU:
# frames advance, the stage times fill, every control changes what it
# names, the start panel restarts, the fixed-seed run equals the native GPU
# run on lavapipe within the parity tolerances, a screenshot is written,
# and a browser without WebGPU gets the plain message and the 2D page.
#
# Locally, anything that cannot be installed is reported as a loud
# "SKIPPED:" line (and in the summary, "PASSED WITH SKIPPED PARTS"), never
# passed silently. Under CI (CI=true, 1 or yes; set by .ci/run) every skip
# fails the run instead. Run from anywhere.
#
# Environment:
#   REQUIRE_BROWSER=1  fail instead of skipping when Chromium, chromedriver,
#                      python3, wasm-bindgen-cli or lavapipe cannot be had
#                      (set under CI)
#   SCREENSHOT=PATH    where the page test writes its PNG
#                      (default water/target/page-screenshot.png)
#   LVP_ICD=PATH       the lavapipe ICD file (default
#                      /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../water"

REQUIRE_BROWSER="${REQUIRE_BROWSER:-0}"
SCREENSHOT="${SCREENSHOT:-$PWD/target/page-screenshot.png}"
SKIP_FATAL_VAR=REQUIRE_BROWSER
# shellcheck source=lib/stages.sh
source ../scripts/lib/stages.sh
# shellcheck source=lib/install.sh
source ../scripts/lib/install.sh
if in_ci; then
    export REQUIRE_BROWSER=1 REQUIRE_GPU=1
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
    skip "no rustup and no wasm32-unknown-unknown standard library: no wasm build, no page test"
fi

stage "wasm-bindgen-cli (the version in water/Cargo.lock)"
install_wasm_bindgen_cli

stage "headless Chromium, chromedriver, python3 (apt: chromium chromium-driver python3)"
install_chrome

stage "Vulkan loader and Mesa lavapipe for the native reference (apt: libvulkan1 mesa-vulkan-drivers)"
install_lavapipe
finish_stage
INSTALL_SECONDS=$((SECONDS - INSTALL_START))

# ----------------------------------------------------------------- checks
CHECK_START=$SECONDS
# Where cargo puts the builds: spatium-gpu's target directory
# (water/.cargo/config.toml), unless CARGO_TARGET_DIR says otherwise.
WATER_TARGET_DIR="$(cd .. && pwd)/gpu/target"
WATER_TARGET_DIR="${CARGO_TARGET_DIR:-$WATER_TARGET_DIR}"

stage "cargo fmt --check"
cargo fmt -- --check

stage "cargo clippy (native, all targets, -D warnings)"
cargo clippy --all-targets -- -D warnings

if [[ $HAVE_WASM_TARGET == 1 ]]; then
    stage "cargo clippy and rustdoc (wasm32-unknown-unknown, the page's glue, -D warnings)"
    cargo clippy --target wasm32-unknown-unknown --lib -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --target wasm32-unknown-unknown
fi

stage "cargo doc (native, -D warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps

stage "native tests (panels, gate, paddle, pipe; the channel on lavapipe)"
mkdir -p target
set +e
cargo test --release --test native -- --nocapture >target/native.log 2>&1
RC=$?
set -e
grep -E '^(test |test result)|SKIPPED|adapter|fastest|past it|panicked' target/native.log || true
if [[ $RC -ne 0 ]]; then
    tail -n 60 target/native.log
    exit "$RC"
fi
if grep -q 'SKIPPED:' target/native.log; then
    skip "the channel's GPU tests skipped: no adapter (see water/target/native.log)"
fi

if [[ $HAVE_WASM_TARGET == 1 && $HAVE_BINDGEN == 1 ]]; then
    stage "page build for wasm32-unknown-unknown (--profile page: release, fat LTO), wasm-bindgen --target web -> water/www/pkg"
    cargo build --profile page --target wasm32-unknown-unknown --lib
    rm -rf www/pkg
    wasm-bindgen --target web --no-typescript --out-dir www/pkg \
        "$WATER_TARGET_DIR/wasm32-unknown-unknown/page/spatium_water.wasm"
    ls -l www/pkg
    printf 'page wasm: %d bytes\n' "$(stat -c %s www/pkg/spatium_water_bg.wasm)"
fi

if [[ $HAVE_WASM_TARGET == 1 && $HAVE_BINDGEN == 1 && $HAVE_CHROME == 1 && $HAVE_LVP == 1 ]]; then
    stage "the page in headless Chromium on SwiftShader's WebGPU (tests/page.rs)"
    mkdir -p "$(dirname "$SCREENSHOT")"
    SPATIUM_WATER_SCREENSHOT="$SCREENSHOT" cargo test --release --test page -- --ignored --nocapture
fi
finish_stage
CHECK_SECONDS=$((SECONDS - CHECK_START))

print_summary water.sh "$INSTALL_SECONDS" "$CHECK_SECONDS"
