#!/usr/bin/env bash
# Builds and tests kvconform with Clang (under -Werror, CUDA off) in build-clang/: the second
# compiler's check. Usage: tools/clang-build.sh   (environment: BUILD_DIR, default build-clang;
# CLANG, default clang++, whose C compiler is the same name with ++ dropped; JOBS; CMAKE_ARGS).
# With the default CLANG, `tools/setup.sh clang` installs Debian's clang. Not run by CI (a second
# full build does not fit its 20 minutes on 2 cores); measured in docs/CONTRIBUTING.md
# ("Compilers").
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG=${CLANG:-clang++}
if [ "$CLANG" = clang++ ]; then tools/setup.sh clang; else tools/setup.sh; fi
command -v "$CLANG" >/dev/null || { echo "clang-build: $CLANG not found" >&2; exit 2; }
BUILD_DIR=${BUILD_DIR:-build-clang}
JOBS=${JOBS:-$(nproc)}
echo "clang-build: $("$CLANG" --version | head -1), $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CLANG" \
  -DCMAKE_C_COMPILER="${CLANG%++}" -DKVCONFORM_CUDA=OFF -DKVCONFORM_WERROR=ON ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
export OPENBLAS_NUM_THREADS=1
ctest --test-dir "$BUILD_DIR" -j "$JOBS" --output-on-failure
