#!/usr/bin/env bash
# The project's one test command: formatting, lints, docs, the core on the
# minimum supported Rust version (the workspace's rust-version: build and
# unit tests), `cargo publish --dry-run -p spatium` (the crate as crates.io
# would get it, built), tests, the no_std cross builds, Miri over the
# core's one unsafe module, the on-target tests on an emulated Cortex-M4
# (scripts/firmware.sh), the WASM page in headless Chromium
# (scripts/wasm.sh), the wgpu SPH crate on Mesa lavapipe (scripts/gpu.sh),
# the 3D water-channel page on WebGPU in headless Chromium
# (scripts/water.sh), the distributed crate on 1, 2 and 4 MPI ranks
# (scripts/mpi.sh) and a time-boxed fuzz run. Run from anywhere; it works
# from the repository root. On a fresh machine with only rustup/cargo it
# installs what it needs (rustfmt, clippy, the cross targets, the MSRV
# toolchain, nightly Miri, QEMU, the ARM binutils, Chromium + chromedriver
# Mesa's lavapipe Vulkan driver and Open MPI by apt, embedded-test-qemu-runner,
# defmt-print, wasm-bindgen-cli, cargo-fuzz).
#
# Environment:
#   FUZZ_SECONDS=N  fuzz each target for N seconds (default 30; the nine
#                   targets are built first, together, then run side by side)
#   FUZZ_JOBS=N     fuzz targets running at once (default: the core count)
#   SKIP_FUZZ=1     skip the fuzz stage (announced loudly, never silently;
#                   refused under CI: the run fails at once)
#   CI=true         (also 1 or yes; set by .ci/run) every stage is required:
#                   a stage that cannot run (no QEMU or test runner, no
#                   browser, no Vulkan driver, no defmt-print, ...) fails the
#                   run with a "FAILED: CI=true requires every stage" line
#                   naming it and why. REQUIRE_GPU=1, REQUIRE_BROWSER=1,
#                   REQUIRE_QEMU=1 and INSTALL_DEFMT_PRINT=1 are exported to
#                   the sub-scripts and the GPU test binaries.
#
# A local run without CI may skip, loudly: each skip prints a SKIPPED
# banner where it happens, is listed again at the end (collected from the
# sub-scripts through target/test-skipped.log) and the last line reads
# "PASSED, but SKIPPED: ..." instead of "ALL STAGES PASSED".
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

FUZZ_SECONDS="${FUZZ_SECONDS:-30}"
SKIP_FUZZ="${SKIP_FUZZ:-0}"
# shellcheck source=lib/stages.sh
source scripts/lib/stages.sh

# Every skip of this script and its sub-scripts, one "<script>: <what>" a
# line (scripts/lib/stages.sh appends to it), for the final summary.
mkdir -p target
export SKIP_LOG="$PWD/target/test-skipped.log"
: >"$SKIP_LOG"

if in_ci; then
    export REQUIRE_GPU=1 REQUIRE_BROWSER=1 REQUIRE_QEMU=1 INSTALL_DEFMT_PRINT=1
    echo "CI=$CI: every stage is required; a stage that cannot run fails the run"
    echo "exported: REQUIRE_GPU=1 REQUIRE_BROWSER=1 REQUIRE_QEMU=1 INSTALL_DEFMT_PRINT=1"
    if [[ "$SKIP_FUZZ" == "1" ]]; then
        skip "fuzz (SKIP_FUZZ=1 is refused under CI)" # fails the run here
    fi
fi

stage "toolchain components: rustfmt, clippy"
rustup component add rustfmt clippy

stage "cross targets: thumbv7em-none-eabihf, wasm32-unknown-unknown"
rustup target add thumbv7em-none-eabihf wasm32-unknown-unknown

stage "cargo fmt --check (workspace and fuzz crate)"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check

stage "cargo clippy (workspace, all targets, -D warnings)"
cargo clippy --workspace --all-targets -- -D warnings

stage "cargo doc (workspace, -D warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

# The optional interop features. spatium-host-tests enables them on its
# spatium dependency, so the workspace stages (clippy, doc, test) already
# build the core with them; these stages check the core alone with them
# (its unit tests' target, its docs with the `interop` and `sph::snapshot`
# modules).
stage "cargo clippy -p spatium --all-targets --features glam,mint,serde (-D warnings)"
cargo clippy -p spatium --all-targets --features glam,mint,serde -- -D warnings

stage "cargo doc -p spatium --features glam,mint,serde (-D warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc -p spatium --no-deps --features glam,mint,serde

# The minimum supported Rust version is the workspace's `rust-version`: the
# core builds and passes its unit tests on exactly that toolchain
# (installed if missing, minimal profile, about 10 s).
msrv="$(awk -F'"' '/^rust-version *=/ { print $2; exit }' Cargo.toml)"
stage "MSRV: spatium on Rust $msrv (the workspace's rust-version): build (also with glam,mint,serde), unit tests"
if [[ -z "$msrv" ]]; then
    echo "no rust-version in Cargo.toml" >&2
    exit 1
fi
rustup toolchain install "$msrv" --profile minimal
cargo +"$msrv" build -p spatium
cargo +"$msrv" build -p spatium --features glam,mint,serde
cargo +"$msrv" test -p spatium --lib

stage "cargo publish --dry-run -p spatium (the crate as published: README, licences, build)"
# Packages the crate as crates.io would get it and builds that package.
# Cargo refuses uncommitted changes to what it packages (core/ and the
# root README and licences that core/'s symlinks point at): under CI that
# fails the run; a local run with work in progress passes --allow-dirty
# and says so.
publish_flags=()
packaged=(core README.md LICENSE-MIT LICENSE-APACHE)
if ! in_ci && [[ -n "$(git status --porcelain -- "${packaged[@]}" 2>/dev/null)" ]]; then
    echo "uncommitted changes in ${packaged[*]}: packaging them (--allow-dirty; CI would refuse)"
    publish_flags+=(--allow-dirty)
fi
cargo publish --dry-run -p spatium "${publish_flags[@]}"

# Miri runs beside the workspace tests: most of its time is fetching the
# nightly toolchain (network) and interpreting on one thread, while the
# tests' build keeps the cores busy; it builds into target/miri, under a
# lock of its own. Its output goes to target/miri.log, printed, and its
# result judged, in the "miri" stage below.
run_miri() {
    set -euo pipefail
    # The nightly toolchain and Miri are installed if missing (about 1
    # min). Miri is required: failing to install it fails the run.
    if ! rustup run nightly cargo miri --version >/dev/null 2>&1; then
        rustup toolchain install nightly --profile minimal --component miri,rust-src --allow-downgrade
    fi
    cargo +nightly miri test -p spatium --lib -- sph::layout sort::
    cargo +nightly miri test -p spatium --lib --target i686-unknown-linux-gnu -- sph::layout
}
miri_log="$PWD/target/miri.log"
miri_start=$SECONDS
run_miri >"$miri_log" 2>&1 &
miri_pid=$!
echo "miri started beside the tests (pid $miri_pid, output in $miri_log)"

stage "cargo test --workspace --profile ci (optimised, overflow checks on)"
cargo test --workspace --profile ci

for target in thumbv7em-none-eabihf wasm32-unknown-unknown; do
    stage "no_std build: spatium for $target"
    cargo build -p spatium --release --target "$target"
    stage "no_std build: spatium for $target --features defmt"
    cargo build -p spatium --release --target "$target" --features defmt
done

stage "no_std build: spatium for thumbv7em-none-eabihf --features glam,mint,serde"
cargo build -p spatium --release --target thumbv7em-none-eabihf --features glam,mint,serde

stage "miri: the core's only unsafe (ParticleState Pod impls) and the small sort, 64- and 32-bit (started beside the tests)"
miri_rc=0
wait "$miri_pid" || miri_rc=$?
cat "$miri_log"
echo "miri: exit $miri_rc, $((SECONDS - miri_start)) s since it started"
if ((miri_rc != 0)); then
    echo "FAILED: miri (exit $miri_rc; output above, in $miri_log)" >&2
    exit "$miri_rc"
fi

stage "firmware: scripts/firmware.sh (QEMU Cortex-M4 tests, stack and size reports)"
# defmt-print decodes the defmt test's output (~5 min to install once).
INSTALL_DEFMT_PRINT=1 bash scripts/firmware.sh

stage "wasm: scripts/wasm.sh (the demo page: native and headless-Chromium tests)"
bash scripts/wasm.sh

stage "gpu: scripts/gpu.sh (the wgpu SPH crate on Mesa lavapipe: parity with the CPU solver, benchmark and frames smoke runs)"
bash scripts/gpu.sh

stage "water: scripts/water.sh (the 3D water-channel page: native tests on lavapipe, the page in headless Chromium on WebGPU)"
bash scripts/water.sh

stage "mpi: scripts/mpi.sh (Open MPI; the distributed SPH step and broad phase on 1, 2 and 4 ranks)"
bash scripts/mpi.sh

if [[ "$SKIP_FUZZ" == "1" ]]; then
    stage "fuzz"
    skip "fuzz (SKIP_FUZZ=1)"
else
    stage "cargo-fuzz (install if missing)"
    if ! cargo fuzz --version >/dev/null 2>&1; then
        tool_install cargo-fuzz
    fi
    cargo fuzz --version

    stage "cargo clippy (fuzz crate, -D warnings)"
    cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings

    # All nine targets built by one cargo invocation (cargo builds them side
    # by side and shares every dependency), so each `cargo fuzz run` below
    # finds its binary up to date. The flags must be the same in both:
    #   --sanitizer none: the core forbids unsafe code but for its Pod impls
    #     (which Miri covers), so AddressSanitizer has nothing to find; it
    #     only made each target slower to build and to run;
    #   --debug-assertions: overflow checks and debug assertions on, as in
    #     the test profile (cargo fuzz's default without -O; said here so
    #     it stays so), so an arithmetic overflow is a finding instead of
    #     a silent wrap.
    fuzz_flags=(--sanitizer none --debug-assertions)
    stage "cargo fuzz build (all targets: ${fuzz_flags[*]})"
    (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz build "${fuzz_flags[@]}")

    # libFuzzer runs on one thread, so the targets run side by side, as
    # many at a time as there are cores (FUZZ_JOBS overrides): each still
    # gets its full FUZZ_SECONDS on a core of its own, and the stage takes
    # about ceil(9 / jobs) * FUZZ_SECONDS instead of 9 * FUZZ_SECONDS. Each
    # run's output goes to fuzz/target/fuzz-<target>.log; its last lines
    # are printed when it ends, the whole log when it fails.
    fuzz_jobs="${FUZZ_JOBS:-$(nproc)}"
    fuzz_targets=(uniform_hash hhg kdtree hhash sph broad_phase neighbor_search decomp periodic)
    stage "fuzz: ${#fuzz_targets[@]} targets for ${FUZZ_SECONDS}s each, $fuzz_jobs at a time"
    fuzz_one() {
        local target="$1" start=$SECONDS
        # Fuzz a copy of the committed seed corpus so the run leaves the
        # repository clean: new inputs go to fuzz/target/corpus-run-<target>,
        # crash inputs to fuzz/artifacts/<target>/ (both ignored by git).
        local run_dir="fuzz/target/corpus-run-$target" log="fuzz/target/fuzz-$target.log"
        rm -rf "$run_dir"
        mkdir -p "$run_dir"
        cp -R "fuzz/corpus/$target/." "$run_dir/"
        if (
            cd fuzz &&
                RUSTC_BOOTSTRAP=1 cargo fuzz run "${fuzz_flags[@]}" "$target" "target/corpus-run-$target" -- \
                    -max_total_time="$FUZZ_SECONDS" -timeout=60
        ) >"$log" 2>&1; then
            printf '\n--- fuzz: %s passed in %ds (%s)\n' "$target" $((SECONDS - start)) "$log"
            grep -E '^(#[0-9]+\s+DONE|Done [0-9]+ runs)' "$log" || tail -n 3 "$log"
        else
            cat "$log" >&2
            echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
            echo "FUZZ FAILURE: $target (crash input under fuzz/artifacts/$target/, log $log)" >&2
            echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
            return 1
        fi
    }
    fuzz_failed=()
    declare -A fuzz_pid_target=()
    for target in "${fuzz_targets[@]}"; do
        # Wait for a slot; collect every run that ends, failed or not.
        while (($(jobs -rp | wc -l) >= fuzz_jobs)); do
            done_pid=""
            if ! wait -n -p done_pid; then fuzz_failed+=("${fuzz_pid_target[$done_pid]}"); fi
            unset "fuzz_pid_target[$done_pid]"
        done
        fuzz_one "$target" &
        fuzz_pid_target[$!]="$target"
    done
    for pid in "${!fuzz_pid_target[@]}"; do
        if ! wait "$pid"; then fuzz_failed+=("${fuzz_pid_target[$pid]}"); fi
    done
    if ((${#fuzz_failed[@]} > 0)); then
        echo "FUZZ FAILURE in: ${fuzz_failed[*]}" >&2
        exit 1
    fi
fi

finish_stage
STAGE_NAME=""
printf '\n==> stage times\n'
printf '%s\n' "${SUMMARY[@]}"
printf '%5ds  total\n' $((SECONDS - SCRIPT_START))
if [[ -s "$SKIP_LOG" ]]; then
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    echo "SKIPPED (see the banners above; CI would have failed on each):"
    sed 's/^/  - /' "$SKIP_LOG"
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    echo "PASSED, but SKIPPED: $(awk '{ sub(/^[^:]*: /, ""); printf "%s%s", (NR > 1 ? "; " : ""), $0 }' "$SKIP_LOG")"
else
    echo "ALL STAGES PASSED"
fi
