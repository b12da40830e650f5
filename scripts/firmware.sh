#!/usr/bin/env bash
# spatium in firmware (issue 7): on-target tests on an emulated Cortex-M4F,
# the stack report and the code-size report. Run from anywhere; it works
# from the repository root. On a fresh Debian machine with only rustup/cargo
# it installs what it needs:
#
#   rustup: the thumbv7em-none-eabihf target, rustfmt, clippy
#   apt:    qemu-system-arm, binutils-arm-none-eabi (as root, or with sudo)
#   cargo:  embedded-test-qemu-runner 0.1.0 (the test runner, ~1 min)
#   cargo:  defmt-print (decodes the defmt test's output; ~5 min to build,
#           so only with INSTALL_DEFMT_PRINT=1 or when already installed)
#
# Stages: fmt + clippy of the firmware workspace; the on-target tests
# (`cargo test` in firmware/, each test one QEMU boot of mps2-an386); the
# defmt output of one test decoded on the host; the stack report (stack use
# of every main operation, painted and measured on the target, in both
# build profiles, checked against its documented bounds); the size report
# (.text/.data/.bss of one small release binary per structure).
#
# A tool that cannot be installed skips only the stages that need it, with
# a loud SKIPPED line, and the final line says "PASSED, but SKIPPED: ...":
# never a silent pass. Under CI (CI=true, 1 or yes; set by .ci/run) or with
# REQUIRE_QEMU=1 every skip fails the run instead, with a line naming what
# could not run and why: the on-target tests must run under QEMU, not only
# build, so a missing qemu-system-arm or embedded-test-qemu-runner fails
# right after the tool stages, before anything is built; a missing
# defmt-print, size tool or objdump fails at its stage.
#
# Environment:
#   NO_INSTALL=1          install nothing (missing tools skip their stages;
#                         under CI they fail)
#   INSTALL_DEFMT_PRINT=1 install defmt-print if missing (~5 min; on by
#                         default under CI)
#   REQUIRE_QEMU=1        fail instead of skipping (exported by
#                         scripts/test.sh under CI)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
FW="$ROOT/firmware"
TARGET=thumbv7em-none-eabihf
QEMU_MACHINE="qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic"

NO_INSTALL="${NO_INSTALL:-0}"
REQUIRE_QEMU="${REQUIRE_QEMU:-0}"
SKIP_FATAL_VAR=REQUIRE_QEMU
# shellcheck source=lib/stages.sh
source "$ROOT/scripts/lib/stages.sh"
if in_ci; then
    INSTALL_DEFMT_PRINT="${INSTALL_DEFMT_PRINT:-1}"
else
    INSTALL_DEFMT_PRINT="${INSTALL_DEFMT_PRINT:-0}"
fi

apt_install() {
    if [[ "$NO_INSTALL" == "1" ]] || ! have apt-get; then
        return 1
    fi
    local env=(env DEBIAN_FRONTEND=noninteractive)
    as_root "${env[@]}" apt-get install -y --no-install-recommends "$@" ||
        { as_root "${env[@]}" apt-get update && as_root "${env[@]}" apt-get install -y --no-install-recommends "$@"; }
}

cargo_install() {
    if [[ "$NO_INSTALL" == "1" ]]; then
        return 1
    fi
    tool_install "$@"
}

# ------------------------------------------------------------------ tools

stage "toolchain: $TARGET target, rustfmt, clippy"
if [[ "$NO_INSTALL" != "1" ]]; then
    rustup target add "$TARGET"
    rustup component add rustfmt clippy
fi
rustc --version

stage "tools: qemu-system-arm, binutils-arm-none-eabi (apt)"
if ! have qemu-system-arm || ! have arm-none-eabi-size; then
    apt_install qemu-system-arm binutils-arm-none-eabi || true
fi
HAVE_QEMU=0
if have qemu-system-arm; then
    HAVE_QEMU=1
    qemu-system-arm --version | head -1
fi
# The size tool: GNU binutils' arm-none-eabi-size, else LLVM's (both print
# the Berkeley format: text, data, bss).
SIZE_TOOL=""
NM_TOOL=""
for t in arm-none-eabi-size llvm-size rust-size; do
    if have "$t"; then SIZE_TOOL=$t; break; fi
done
for t in arm-none-eabi-nm llvm-nm rust-nm; do
    if have "$t"; then NM_TOOL=$t; break; fi
done
echo "size tool: ${SIZE_TOOL:-none}, nm: ${NM_TOOL:-none}"

stage "tools: embedded-test-qemu-runner 0.1.0 (cargo install)"
if ! have embedded-test-qemu-runner; then
    cargo_install embedded-test-qemu-runner --version 0.1.0 || true
fi
HAVE_RUNNER=0
if have embedded-test-qemu-runner; then
    HAVE_RUNNER=1
    echo "runner: $(command -v embedded-test-qemu-runner)"
fi

stage "tools: defmt-print (optional locally, required under CI)"
if ! have defmt-print && [[ "$INSTALL_DEFMT_PRINT" == "1" ]]; then
    cargo_install defmt-print || true
fi
if have defmt-print; then defmt-print --version || true; fi

# Under CI or REQUIRE_QEMU=1 the on-target tests must run, not only build:
# fail now, naming the missing tool, rather than after the builds.
if in_ci || [[ "$REQUIRE_QEMU" == "1" ]]; then
    stage "tools: QEMU and the test runner are required (CI or REQUIRE_QEMU=1)"
    missing=()
    if [[ $HAVE_QEMU != 1 ]]; then
        missing+=("qemu-system-arm (apt-get install qemu-system-arm failed, no root, or NO_INSTALL=1)")
    fi
    if [[ $HAVE_RUNNER != 1 ]]; then
        missing+=("embedded-test-qemu-runner (cargo install embedded-test-qemu-runner --version 0.1.0 failed, or NO_INSTALL=1)")
    fi
    if ((${#missing[@]})); then
        skip "on-target tests under QEMU cannot run: missing $(printf '%s; ' "${missing[@]}" | sed 's/; $//')"
    fi
fi

TOOLS_DONE=$SECONDS

# ------------------------------------------------------------------ checks

cd "$FW"

stage "cargo fmt --check (firmware workspace)"
cargo fmt --all -- --check

stage "cargo clippy (firmware workspace, $TARGET, all targets, -D warnings)"
cargo clippy --workspace --all-targets -- -D warnings

stage "on-target tests: cargo test under QEMU mps2-an386 (Cortex-M4F)"
if [[ $HAVE_QEMU == 1 && $HAVE_RUNNER == 1 ]]; then
    cargo test -p spatium-fw-tests
else
    cargo test -p spatium-fw-tests --no-run
    skip "on-target tests (built, not run: qemu-system-arm or embedded-test-qemu-runner missing)"
fi

stage "defmt on target: decode the defmt test's output with defmt-print"
if [[ $HAVE_QEMU == 1 && $HAVE_RUNNER == 1 ]] && have defmt-print; then
    elf=$(cargo test -p spatium-fw-tests --test errors --no-run --message-format=json 2>/dev/null |
        sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
    # The runner prints the QEMU command line of each test it runs.
    qemu_cmd=$(embedded-test-qemu-runner --qemu "$QEMU_MACHINE" --verbose "$elf" \
        tests::defmt_logs_errors_and_stats --exact 2>&1 | sed -n 's/^QEMU: //p' | head -1)
    if [[ -z "$qemu_cmd" ]]; then
        echo "could not find the defmt test's QEMU command" >&2
        exit 1
    fi
    decoded=$(eval "$qemu_cmd" 2>/dev/null | defmt-print -e "$elf")
    printf '%s\n' "$decoded"
    if ! grep -q 'refused: CapacityExceeded { capacity: 32 }' <<<"$decoded"; then
        echo "defmt output did not decode to the expected lines" >&2
        exit 1
    fi
elif [[ $HAVE_QEMU == 1 && $HAVE_RUNNER == 1 ]]; then
    skip "defmt decoding (defmt-print not installed; INSTALL_DEFMT_PRINT=1 installs it, ~5 min). The defmt test itself ran above, logging through defmt-semihosting; its frames were not decoded"
else
    skip "defmt decoding (no QEMU or runner)"
fi

run_stack_report() {
    local elf=$1
    # Semihosting for output and exit code; the report exits 1 if an
    # operation is over its bound.
    timeout 300 $QEMU_MACHINE -semihosting-config enable=on,target=native -kernel "$elf"
}

stage "stack report: tests' profile (opt-level s, debug assertions, overflow checks)"
cargo build -p spatium-fw-size --bin stack-report
if [[ $HAVE_QEMU == 1 ]]; then
    run_stack_report "target/$TARGET/debug/stack-report"
else
    skip "stack report, tests' profile (qemu-system-arm missing)"
fi

stage "stack report: release profile (opt-level s, LTO)"
cargo build --release -p spatium-fw-size --bin stack-report
if [[ $HAVE_QEMU == 1 ]]; then
    run_stack_report "target/$TARGET/release/stack-report"
else
    skip "stack report, release profile (qemu-system-arm missing)"
fi

stage "size report: release binaries (opt-level s, LTO, codegen-units 1, panic-halt)"
cargo build --release -p spatium-fw-size --bins
BINS=(fw-baseline fw-brute fw-uniform-sph fw-linked-sph fw-uniform-sph-obstacles fw-hhg fw-kdtree fw-hhash)
if [[ -n "$SIZE_TOOL" ]]; then
    echo "sizes from: $SIZE_TOOL (Berkeley format: .text includes the vector table and .rodata)"
    base_text=$("$SIZE_TOOL" "target/$TARGET/release/fw-baseline" | awk 'NR == 2 { print $1 }')
    printf '\n| binary | .text | .data | .bss | .text − baseline | flash (.text + .data) | RAM (.data + .bss) |\n'
    printf '|---|---:|---:|---:|---:|---:|---:|\n'
    declare -A TEXT
    for b in "${BINS[@]}"; do
        read -r text data bss _ < <("$SIZE_TOOL" "target/$TARGET/release/$b" | awk 'NR == 2')
        TEXT[$b]=$text
        printf '| %s | %d | %d | %d | %d | %d | %d |\n' "$b" "$text" "$data" "$bss" \
            $((text - base_text)) $((text + data)) $((data + bss))
    done
    echo
    # A target marked `held` is met and must stay met: going over fails the
    # run (fw-hhg went 24 B over once, unnoticed, while the line only
    # printed). The cell-sorted binary's target is not met and only reported.
    SIZE_FAILED=0
    target_line() {
        local b=$1 limit=$2 what=$3 held=${4:-}
        local t=${TEXT[$b]}
        if ((t <= limit)); then
            printf 'target MET:     %-44s .text %6d <= %6d\n' "$what ($b)" "$t" "$limit"
        else
            printf 'target NOT MET: %-44s .text %6d >  %6d (%+d)\n' "$what ($b)" "$t" "$limit" $((t - limit))
            if [[ "$held" == held ]]; then
                echo "FAILED: $b is over a size target it met (see firmware/README.md)" >&2
                SIZE_FAILED=1
            fi
        fi
    }
    target_line fw-linked-sph 12288 "uniform hash (linked) + SPH step <= 12 KiB" held
    target_line fw-uniform-sph 12288 "uniform hash (cell-sorted) + SPH step <= 12 KiB"
    target_line fw-hhg 16384 "hierarchical hash grid <= 16 KiB" held
    if ((SIZE_FAILED)); then
        exit 1
    fi
else
    skip "size table (no arm-none-eabi-size, llvm-size or rust-size)"
fi
if [[ -n "$NM_TOOL" ]]; then
    for b in fw-linked-sph fw-uniform-sph fw-hhg; do
        echo
        echo "largest functions of $b ($NM_TOOL --size-sort):"
        "$NM_TOOL" --size-sort -C -r --radix=d "target/$TARGET/release/$b" |
            awk '$2 ~ /^[tTrR]$/' | head -10
        "$NM_TOOL" --size-sort -C --radix=d "target/$TARGET/release/$b" |
            awk '$2 ~ /^[tT]$/ && /core::slice::sort/ { s += $1 } END { printf "core::slice::sort (sort_unstable) in total: %d bytes\n", s }'
    done
fi

stage "no recursion: call graphs of the linked firmware (scripts/no_recursion.py)"
OBJDUMP_TOOL=""
for t in arm-none-eabi-objdump llvm-objdump; do
    if have "$t"; then
        OBJDUMP_TOOL=$t
        break
    fi
done
if [[ -n "$OBJDUMP_TOOL" ]] && have python3; then
    ELVES=("target/$TARGET/debug/stack-report" "target/$TARGET/release/stack-report")
    for b in "${BINS[@]}"; do
        ELVES+=("target/$TARGET/release/$b")
    done
    python3 ../scripts/no_recursion.py "$OBJDUMP_TOOL" "${ELVES[@]}"
else
    skip "no-recursion check (no arm-none-eabi-objdump / llvm-objdump or python3)"
fi

finish_stage
STAGE_NAME=""
printf '\n==> stage times\n'
printf '%s\n' "${SUMMARY[@]}"
printf '%5ds  total (%ds after tool installation)\n' $((SECONDS - SCRIPT_START)) $((SECONDS - TOOLS_DONE))
if ((${#SKIPPED[@]} > 0)); then
    echo "PASSED, but SKIPPED:"
    printf '  - %s\n' "${SKIPPED[@]}"
else
    echo "ALL FIRMWARE STAGES PASSED"
fi
