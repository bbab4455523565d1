#!/usr/bin/env bash
# Builds and tests kvconform with Clang (under -Werror, CUDA off) in build-clang/: the second
# compiler's check. Usage: tools/clang-build.sh   (environment: BUILD_DIR, default build-clang;
# CLANG, default clang++, whose C compiler is the same name with ++ dropped; JOBS; CMAKE_ARGS).
# Installs Debian's clang when CLANG is not found. Not run by CI (a second full build does not
# fit its 20 minutes on 2 cores); measured in docs/CONTRIBUTING.md ("Compilers").
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
CLANG=${CLANG:-clang++}
if ! command -v "$CLANG" >/dev/null; then
  echo "clang-build: installing clang"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends clang >/dev/null
fi
BUILD_DIR=${BUILD_DIR:-build-clang}
JOBS=${JOBS:-$(nproc)}
echo "clang-build: $("$CLANG" --version | head -1), $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CLANG" \
  -DCMAKE_C_COMPILER="${CLANG%++}" -DKVCONFORM_CUDA=OFF -DKVCONFORM_WERROR=ON ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
export OPENBLAS_NUM_THREADS=1
ctest --test-dir "$BUILD_DIR" -j "$JOBS" --output-on-failure
