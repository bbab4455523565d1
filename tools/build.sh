#!/usr/bin/env bash
# Configures and builds kvconform into build/ (idempotent; installs missing packages first).
# Environment: BUILD_DIR (default build), KVCONFORM_CUDA (AUTO|ON|OFF, default AUTO on first configure),
# KVCONFORM_WERROR (ON in CI; otherwise the cached value, OFF at first), JOBS (default: number of cores), CMAKE_ARGS (extra flags).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
# -Werror is ON in CI; elsewhere it is only set when asked, so that tools/run.sh after
# tools/test.sh (or the reverse) reuses the configured tree instead of rebuilding everything.
WERROR_ARG=()
if [ -n "${KVCONFORM_WERROR:-}" ]; then WERROR_ARG=(-DKVCONFORM_WERROR="$KVCONFORM_WERROR")
elif [ "${CI:-}" = "true" ]; then WERROR_ARG=(-DKVCONFORM_WERROR=ON); fi
CUDA_ARG=()
if [ -n "${KVCONFORM_CUDA:-}" ] || [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  CUDA_ARG=(-DKVCONFORM_CUDA="${KVCONFORM_CUDA:-AUTO}")
fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${CUDA_ARG[@]}" "${WERROR_ARG[@]}" ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
