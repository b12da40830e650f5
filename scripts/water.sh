#!/usr/bin/env bash
# The 3D water-channel page (water/): the GPU SPH of spatium-gpu in the
# browser on WebGPU. Installs what it needs on a fresh Debian machine, then
# formatting, lints (native and wasm32), rustdoc, the native tests (the
# panels, the kinematic gate and paddle and the pipe, stepped on lavapipe),
# the release wasm build, wasm-bindgen into water/www/pkg, and the page test
# (tests/page.rs) in headless Chromium on its bundled SwiftShader WebGPU:
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
LVP_ICD="${LVP_ICD:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}"
SKIP_FATAL_VAR=REQUIRE_BROWSER
# shellcheck source=lib/stages.sh
source ../scripts/lib/stages.sh
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
cargo metadata --format-version 1 >/dev/null # writes Cargo.lock if missing
WB_VERSION=$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
if [[ -z "$WB_VERSION" ]]; then
    echo "could not read the wasm-bindgen version from water/Cargo.lock" >&2
    exit 1
fi
echo "wasm-bindgen in Cargo.lock: $WB_VERSION"
HAVE_BINDGEN=1
if [[ "$(wasm-bindgen --version 2>/dev/null || true)" == "wasm-bindgen $WB_VERSION" ]]; then
    echo "already installed: $(wasm-bindgen --version)"
elif cargo install wasm-bindgen-cli --version "=$WB_VERSION" --locked ||
    cargo install wasm-bindgen-cli --version "=$WB_VERSION"; then
    echo "installed: $(wasm-bindgen --version)"
else
    HAVE_BINDGEN=0
    skip "cargo install wasm-bindgen-cli $WB_VERSION failed: no www/pkg, no page test"
fi

stage "headless Chromium, chromedriver, python3 (apt: chromium chromium-driver python3)"
find_chrome() {
    CHROME_BIN="${CHROME_BIN:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}"
    CHROMEDRIVER="${CHROMEDRIVER:-$(command -v chromedriver || true)}"
}
find_chrome
if [[ -z "$CHROME_BIN" || -z "$CHROMEDRIVER" ]] || ! have python3; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver python3 ||
        true
    find_chrome
fi
HAVE_CHROME=1
if [[ -z "$CHROME_BIN" || -z "$CHROMEDRIVER" ]] || ! have python3; then
    HAVE_CHROME=0
    skip "Chromium, chromedriver or python3 not available: no page test"
else
    "$CHROME_BIN" --version 2>/dev/null || echo "$CHROME_BIN"
    "$CHROMEDRIVER" --version 2>/dev/null || echo "$CHROMEDRIVER"
    export CHROME_BIN CHROMEDRIVER
fi

stage "Vulkan loader and Mesa lavapipe for the native reference (apt: libvulkan1 mesa-vulkan-drivers)"
have_vulkan() {
    [[ -f "$LVP_ICD" ]] && ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1'
}
if ! have_vulkan; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libvulkan1 mesa-vulkan-drivers ||
        true
fi
HAVE_LVP=1
if have_vulkan; then
    export VK_DRIVER_FILES="$LVP_ICD" WGPU_BACKEND=vulkan XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
    export REQUIRE_GPU=1
    echo "pinned: VK_DRIVER_FILES=$VK_DRIVER_FILES WGPU_BACKEND=vulkan REQUIRE_GPU=1"
else
    HAVE_LVP=0
    skip "lavapipe not available: the native channel tests skip, no page test (its reference run needs an adapter)"
fi
finish_stage
INSTALL_SECONDS=$((SECONDS - INSTALL_START))

# ----------------------------------------------------------------- checks
CHECK_START=$SECONDS

stage "cargo fmt --check"
cargo fmt -- --check

stage "cargo clippy (native, all targets, -D warnings)"
cargo clippy --release --all-targets -- -D warnings

if [[ $HAVE_WASM_TARGET == 1 ]]; then
    stage "cargo clippy and rustdoc (wasm32-unknown-unknown, the page's glue, -D warnings)"
    cargo clippy --release --target wasm32-unknown-unknown --lib -- -D warnings
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
    stage "release build for wasm32-unknown-unknown, wasm-bindgen --target web -> water/www/pkg"
    cargo build --release --target wasm32-unknown-unknown --lib
    rm -rf www/pkg
    wasm-bindgen --target web --no-typescript --out-dir www/pkg \
        target/wasm32-unknown-unknown/release/spatium_water.wasm
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

printf '\n==> summary\n'
printf '%s\n' "${SUMMARY[@]}"
printf '%5ds  installation\n%5ds  checks\n%5ds  total\n' \
    "$INSTALL_SECONDS" "$CHECK_SECONDS" $((SECONDS - SCRIPT_START))
if ((${#SKIPPED[@]})); then
    printf '\n'
    for s in "${SKIPPED[@]}"; do
        printf '!!!!!!!!!! SKIPPED: %s\n' "$s"
    done
    printf '\nwater.sh: PASSED WITH SKIPPED PARTS (see above)\n'
else
    printf '\nwater.sh: all passed\n'
fi
