# shellcheck shell=bash
# Shared installers of the browser and GPU scripts (sourced after
# stages.sh): wasm-bindgen-cli of the lock file's version, Chromium with
# chromedriver (and python3 for the static server), Mesa's lavapipe pinned
# for wgpu, and the closing summary. Each sets a HAVE_* variable and calls
# `skip` (a failure under CI) when it cannot get what it installs.

# `install_wasm_bindgen_cli`: wasm-bindgen and wasm-bindgen-test-runner of
# the version in ./Cargo.lock; sets HAVE_BINDGEN.
install_wasm_bindgen_cli() {
    cargo metadata --format-version 1 >/dev/null # writes Cargo.lock if missing
    local version
    version=$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
    if [[ -z "$version" ]]; then
        echo "could not read the wasm-bindgen version from $PWD/Cargo.lock" >&2
        exit 1
    fi
    echo "wasm-bindgen in Cargo.lock: $version"
    HAVE_BINDGEN=1
    if [[ "$(wasm-bindgen --version 2>/dev/null || true)" == "wasm-bindgen $version" ]] &&
        command -v wasm-bindgen-test-runner >/dev/null 2>&1; then
        echo "already installed: $(wasm-bindgen --version)"
    elif tool_install wasm-bindgen-cli --version "=$version"; then
        echo "installed: $(wasm-bindgen --version)"
    else
        HAVE_BINDGEN=0
        skip "cargo install wasm-bindgen-cli $version failed: no wasm-bindgen output (www/pkg), no browser tests"
    fi
}

# `install_chrome`: Chromium, chromedriver and python3 (apt: chromium
# chromium-driver python3); exports CHROME_BIN and CHROMEDRIVER, sets
# HAVE_CHROME.
install_chrome() {
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
        skip "Chromium, chromedriver or python3 not available (apt-get install chromium chromium-driver python3 failed or no root): no browser tests"
    else
        "$CHROME_BIN" --version 2>/dev/null || echo "$CHROME_BIN"
        "$CHROMEDRIVER" --version 2>/dev/null || echo "$CHROMEDRIVER"
        export CHROME_BIN CHROMEDRIVER
    fi
}

# `install_lavapipe`: the Vulkan loader and Mesa's lavapipe (apt: libvulkan1
# mesa-vulkan-drivers), with wgpu pinned to it (VK_DRIVER_FILES,
# WGPU_BACKEND=vulkan: without them it may fall back to a much slower GL
# driver) and REQUIRE_GPU=1 (the tests then fail rather than skip); sets
# HAVE_LVP. LVP_ICD names the ICD file.
install_lavapipe() {
    local icd="${LVP_ICD:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}"
    have_vulkan() {
        [[ -f "$icd" ]] && ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1'
    }
    if have_vulkan; then
        echo "already installed: $icd and libvulkan.so.1"
    elif as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libvulkan1 mesa-vulkan-drivers &&
        have_vulkan; then
        echo "installed: $icd"
    fi
    HAVE_LVP=1
    if [[ -f "$icd" ]]; then
        export VK_DRIVER_FILES="$icd" WGPU_BACKEND=vulkan XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
        export REQUIRE_GPU=1
        echo "pinned: VK_DRIVER_FILES=$VK_DRIVER_FILES WGPU_BACKEND=vulkan REQUIRE_GPU=1"
    else
        HAVE_LVP=0
        skip "lavapipe (mesa-vulkan-drivers) not available and cannot be installed: no GPU adapter for the tests"
    fi
}

# `print_summary NAME INSTALL_SECONDS CHECK_SECONDS`: the stage times, the
# skips, and the verdict line.
print_summary() {
    printf '\n==> summary\n'
    printf '%s\n' "${SUMMARY[@]}"
    printf '%5ds  installation\n%5ds  checks\n%5ds  total\n' \
        "$2" "$3" $((SECONDS - SCRIPT_START))
    if ((${#SKIPPED[@]})); then
        printf '\n'
        for s in "${SKIPPED[@]}"; do
            printf '!!!!!!!!!! SKIPPED: %s\n' "$s"
        done
        printf '\n%s: PASSED WITH SKIPPED PARTS (see above)\n' "$1"
    else
        printf '\n%s: all passed\n' "$1"
    fi
}
