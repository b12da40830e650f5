# shellcheck shell=bash
# Shared by the scripts in scripts/ (sourced, not run): timed stages, loud
# skips, the failing stage's name on exit, and running a command as root.
#
# Before sourcing, a script may set SKIP_FATAL_VAR to the name of a variable
# (REQUIRE_BROWSER, REQUIRE_GPU) that, when it is 1, turns every skip into a
# failure.
#
# Under CI (CI=true, 1 or yes, any case; .ci/run sets CI=true) every skip is
# a failure, whatever SKIP_FATAL_VAR says: CI never passes a stage that did
# not run. Without CI a skip is announced loudly and recorded in SKIPPED,
# and, when SKIP_LOG names a file (scripts/test.sh sets it for its
# sub-scripts), appended there as "<script>: <what>" for the final summary.

SCRIPT_START=$SECONDS
STAGE_START=$SECONDS
STAGE_NAME=""
SUMMARY=()
SKIPPED=()

# Records the running stage's time in SUMMARY.
finish_stage() {
    if [[ -n "$STAGE_NAME" ]]; then
        SUMMARY+=("$(printf '%5ds  %s' $((SECONDS - STAGE_START)) "$STAGE_NAME")")
    fi
    STAGE_NAME=""
}

# Starts a stage: `stage "what it does"`.
stage() {
    finish_stage
    STAGE_NAME="$1"
    STAGE_START=$SECONDS
    printf '\n==> [%s] %s\n' "$(date +%H:%M:%S)" "$STAGE_NAME"
}

# `in_ci`: true when running under CI (CI=true / CI=1 / CI=yes, any case).
in_ci() {
    local ci="${CI:-}"
    case "${ci,,}" in
    true | 1 | yes) return 0 ;;
    *) return 1 ;;
    esac
}

# Announces loudly that something did not run and records it in SKIPPED;
# fails instead under CI, or when the variable named by SKIP_FATAL_VAR is 1.
skip() {
    SKIPPED+=("$1")
    printf '\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n' >&2
    printf 'SKIPPED: %s\n' "$1" >&2
    printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\n' >&2
    if in_ci; then
        printf 'FAILED: CI=%s requires every stage, so this skip fails the run: %s: %s\n' \
            "$CI" "$(basename "$0")" "$1" >&2
        exit 1
    fi
    if [[ -n "${SKIP_FATAL_VAR:-}" && "${!SKIP_FATAL_VAR:-0}" == 1 ]]; then
        printf 'FAILED: %s=1, so this skip fails the run: %s: %s\n' \
            "$SKIP_FATAL_VAR" "$(basename "$0")" "$1" >&2
        exit 1
    fi
    if [[ -n "${SKIP_LOG:-}" ]]; then
        printf '%s: %s\n' "$(basename "$0")" "$1" >>"$SKIP_LOG"
    fi
}

on_exit() {
    local rc=$?
    if [[ $rc -ne 0 ]]; then
        printf '\nFAILED (exit %d) in stage: %s\n' "$rc" "${STAGE_NAME:-setup}" >&2
    fi
}
trap on_exit EXIT

have() { command -v "$1" >/dev/null 2>&1; }

# Runs a command as root: directly when root, through sudo when it works
# without a password; fails otherwise.
as_root() {
    if [[ "$(id -u)" == 0 ]]; then
        "$@"
    elif have sudo && sudo -n true 2>/dev/null; then
        sudo -n "$@"
    else
        return 1
    fi
}

# `tool_install ARGS...`: `cargo install ARGS` (with --locked first, then
# without) for the test tools (cargo-fuzz, wasm-bindgen-cli,
# embedded-test-qemu-runner, defmt-print), built without optimisation:
# compiling them was a quarter of a fresh machine's run (about 870 s at
# opt-level 3 on 2 cores; opt-level 0 builds cargo-fuzz in 58 s against
# 111 s), and what they do (pack a wasm file, drive a browser or QEMU,
# decode a log) is a few seconds either way.
tool_install() {
    local fast=(env CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=0
        CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16)
    "${fast[@]}" cargo install "$@" --locked || "${fast[@]}" cargo install "$@"
}
