#!/usr/bin/env bash
# The GPU companion crate (gpu/): installs Mesa's lavapipe (a Vulkan driver
# on the CPU) when it is missing, pins wgpu to it, then formatting, clippy,
# rustdoc, the wasm32 build (wgpu's WebGPU backend) with its clippy and
# rustdoc, the tests in release mode (parity with the CPU solver, obstacles,
# drawing, the grid and both sorts, the emitter, the errors), a benchmark
# smoke run at 32 768 particles and a frames smoke run writing PNGs under
# gpu/target/frames.
#
# Locally, anything that cannot be installed is reported as a loud
# "SKIPPED:" line (and in the summary, "PASSED WITH SKIPPED PARTS"), never
# passed silently; without an adapter the tests print SKIPPED and pass.
# Under CI (CI=true, 1 or yes; set by .ci/run) every skip fails the run
# instead, with a line naming what could not run and why, REQUIRE_GPU=1 is
# exported, and the tests themselves (gpu/tests/common/mod.rs) panic
# without an adapter. Run from anywhere.
#
# Environment:
#   REQUIRE_GPU=1  fail instead of skipping when no Vulkan driver or adapter
#                  can be had (set under CI, and automatically when the
#                  lavapipe ICD file exists, so the tests cannot skip there)
#   LVP_ICD=PATH   the lavapipe ICD file to look for and pin (default
#                  /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../gpu"

REQUIRE_GPU="${REQUIRE_GPU:-0}"
LVP_ICD="${LVP_ICD:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}"
SKIP_FATAL_VAR=REQUIRE_GPU
# shellcheck source=lib/stages.sh
source ../scripts/lib/stages.sh
# shellcheck source=lib/install.sh
source ../scripts/lib/install.sh
if in_ci; then
    export REQUIRE_GPU=1 # the test binaries panic instead of skipping
fi

# ---------------------------------------------------------------- install
INSTALL_START=$SECONDS

stage "Vulkan loader and Mesa lavapipe (apt: libvulkan1 mesa-vulkan-drivers)"
install_lavapipe
finish_stage
INSTALL_SECONDS=$((SECONDS - INSTALL_START))

# ----------------------------------------------------------------- checks
CHECK_START=$SECONDS

stage "cargo fmt --check"
cargo fmt -- --check

stage "cargo clippy (all targets, -D warnings)"
cargo clippy --all-targets -- -D warnings

stage "cargo doc (-D warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps

stage "wasm32-unknown-unknown: build and clippy with wgpu's webgpu backend (the browser build)"
if command -v rustup >/dev/null 2>&1; then
    rustup target add wasm32-unknown-unknown
fi
if [[ -d "$(rustc --print sysroot)/lib/rustlib/wasm32-unknown-unknown" ]]; then
    cargo build --target wasm32-unknown-unknown --lib
    cargo clippy --target wasm32-unknown-unknown --lib -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --target wasm32-unknown-unknown
else
    skip "no wasm32-unknown-unknown standard library (no rustup): the browser build of spatium-gpu"
fi

stage "cargo test --release (parity, grid and sorts, emitter, errors)"
mkdir -p target
set +e
cargo test --release -- --nocapture >target/test.log 2>&1
TEST_RC=$?
set -e
# The adapter, every SKIPPED line, the measured parity deviations, verdicts.
grep -E '^(test |test result)|SKIPPED|adapter|after [0-9]+ steps|CPU brute|panicked' target/test.log || true
if [[ $TEST_RC -ne 0 ]]; then
    tail -n 80 target/test.log
    exit "$TEST_RC"
fi
# (Not anchored: with --nocapture a test's stderr can land mid-line.)
if grep -q 'SKIPPED:' target/test.log; then
    skip "GPU tests skipped: no adapter (see the SKIPPED lines of gpu/target/test.log)"
fi

if compgen -G '/usr/share/vulkan/icd.d/*.json' >/dev/null || [[ "$REQUIRE_GPU" == 1 ]]; then
    stage "benchmark smoke run: 32 768 particles, both sorts (gpu-bench)"
    cargo run --release -q --bin gpu-bench -- --sizes 32768 --steps 4 --cpu-steps 1 \
        --report target/bench-smoke.md
    cat target/bench-smoke.md

    stage "frames smoke run: 3 PNGs under gpu/target/frames (gpu-frames)"
    rm -rf target/frames
    cargo run --release -q --bin gpu-frames -- --particles 4000 --frames 3 \
        --steps-per-frame 10 --out target/frames
    ls -l target/frames/*.png
else
    skip "no Vulkan driver: no benchmark smoke run, no frames"
fi
finish_stage
CHECK_SECONDS=$((SECONDS - CHECK_START))

print_summary gpu.sh "$INSTALL_SECONDS" "$CHECK_SECONDS"
