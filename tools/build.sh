#!/usr/bin/env bash
# Configures and builds kvconform into build/ (idempotent; installs missing packages first).
# Environment: BUILD_DIR (default build), KVCONFORM_CUDA (AUTO|ON|OFF, default AUTO),
# KVCONFORM_WERROR (ON in CI), JOBS (default: number of cores), CMAKE_ARGS (extra flags).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
WERROR=${KVCONFORM_WERROR:-$([ "${CI:-}" = "true" ] && echo ON || echo OFF)}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKVCONFORM_CUDA="${KVCONFORM_CUDA:-AUTO}" -DKVCONFORM_WERROR="$WERROR" ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
