#!/usr/bin/env bash
# spatium across machines (mpi/, crate spatium-mpi): installs Open MPI on a
# fresh Debian machine (apt: libopenmpi-dev openmpi-bin libclang-dev), then
# formatting, lints, rustdoc, and the tests, each of which starts itself
# under `mpirun` on 1, 2 and 4 ranks: the distributed SPH step equal bit for
# bit to one process (3D and 2D dam breaks, the main job's scene), the
# distributed broad phase's pair sets against brute force, no particle or
# box lost or duplicated across migrations and rebalancing, and a bad input
# on one rank failing every rank instead of hanging. Then the main job's
# scene on 2 ranks (frames, timing table, per-rank table).
#
# Nothing here is skipped: without mpirun the tests fail (they never pass a
# check that did not run). Run from anywhere.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../mpi"
# shellcheck source=lib/stages.sh
source ../scripts/lib/stages.sh

stage "Open MPI (apt: libopenmpi-dev openmpi-bin libclang-dev)"
if ! have mpirun || ! have mpicc; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            libopenmpi-dev openmpi-bin libclang-dev ||
        true
fi
if ! have mpirun; then
    echo "FAILED: Open MPI could not be installed (apt-get install libopenmpi-dev openmpi-bin libclang-dev)" >&2
    exit 1
fi
mpirun --version | head -n 1
# Root in a container: Open MPI refuses to start ranks as root without
# these; --oversubscribe lets 4 ranks share 2 cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

stage "cargo fmt --check (mpi)"
cargo fmt -- --check

stage "cargo clippy (mpi, all targets, -D warnings)"
cargo clippy --all-targets -- -D warnings

stage "cargo doc (mpi, -D warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps

stage "cargo test --profile ci (each test on 1, 2 and 4 ranks under mpirun)"
cargo test --profile ci

stage "the main job's scene on 2 ranks (mpirun -np 2 main_job)"
cargo build --profile ci --example main_job
out=target/main-job-np2
rm -rf "$out"
mpirun --oversubscribe -np 2 target/ci/examples/main_job \
    --particles 3000 --steps 200 --images 2 --out "$out"
ls "$out"/frame-*.png "$out"/timings.csv "$out"/timings.svg >/dev/null
finish_stage
printf 'mpi.sh: %d s\n' "$SECONDS"
