#!/usr/bin/env bash
# Set up, build, then run every test: ctest --test-dir build --output-on-failure.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
