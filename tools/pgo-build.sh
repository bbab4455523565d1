#!/usr/bin/env bash
# Builds a profile-guided, link-time-optimized kvconform CLI into build-pgo/bin/kvconform.
# Usage: tools/pgo-build.sh   (environment: BUILD_DIR, default build-pgo; JOBS; CMAKE_ARGS, extra
# flags for both configure steps; KVCONFORM_CUDA, default OFF: the CLI's check path has no kernels)
# Steps, all in BUILD_DIR (GCC names each profile file after its object's path, so both builds
# must share the directory): an instrumented build (KVCONFORM_PGO=generate), a training run, then
# the optimized build (KVCONFORM_PGO=use, with -flto). The training traces come from gen-trace
# with sizes and mixes that differ from tools/bench_check.sh's (so the benchmark does not time
# the exact traces the profile was taken on), plus every .jsonl fixture of the repository (a
# non-trace among them fails the check: its error paths are in the profile too). About twice the
# time of one build of the CLI (~15 min on 2 cores). Not run by CI; the figures it was measured
# with are in docs/trace-check-performance.md ("Tenth round").
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
BUILD_DIR=${BUILD_DIR:-build-pgo}
JOBS=${JOBS:-$(nproc)}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$PWD/$BUILD_DIR" ;; esac  # the profile path is absolute
PROFILE="$BUILD_DIR/pgo-profile"
configure() {  # configure generate|use
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKVCONFORM_CUDA="${KVCONFORM_CUDA:-OFF}" -DKVCONFORM_PGO="$1" \
    -DKVCONFORM_PGO_DIR="$PROFILE" ${CMAKE_ARGS:-} >/dev/null
}
K="$BUILD_DIR/bin/kvconform"

echo "pgo-build: 1/3 instrumented build ($BUILD_DIR, KVCONFORM_PGO=generate)"
rm -rf "$PROFILE"  # counts of other sources would be refused by the optimized build
configure generate
cmake --build "$BUILD_DIR" -j "$JOBS" --target kvconform

echo "pgo-build: 2/3 training run"
TRAIN="$BUILD_DIR/pgo-train"
rm -rf "$TRAIN"
mkdir -p "$TRAIN"
export OPENBLAS_NUM_THREADS=1
for ids in short runtime; do
  for order in request step; do
    "$K" gen-trace --events 150000 --requests 500 --layers 4 --prompt 8 --decode 20 --ids "$ids" \
      --order "$order" -o "$TRAIN/gen_${ids}_${order}.jsonl" 2>/dev/null
  done
done
"$K" gen-trace --events 150000 --requests 40 --layers 24 --prompt 30 --decode 12 --ids runtime \
  -o "$TRAIN/gen_runtime_24_layers.jsonl" 2>/dev/null
for f in "$TRAIN"/gen_*.jsonl; do
  "$K" check "$f" >/dev/null  # a generated trace must pass: exit 0
  "$K" check --parse-only "$f" >/dev/null
done
# Fixtures: exit 0 (pass) or 1 (violations: fixtures/race/history.jsonl is no trace); any other
# exit code is a failure of the run.
while IFS= read -r f; do
  rc=0
  "$K" check "$f" >/dev/null 2>&1 || rc=$?
  if [ "$rc" -gt 1 ]; then
    echo "pgo-build: kvconform check $f exited $rc" >&2
    exit 1
  fi
done < <(find fixtures -name '*.jsonl' | sort)
rm -rf "$TRAIN"
echo "pgo-build: $(find "$PROFILE" -name '*.gcda' | wc -l) profile files in $PROFILE"

echo "pgo-build: 3/3 optimized build (KVCONFORM_PGO=use, -flto)"
configure use
cmake --build "$BUILD_DIR" -j "$JOBS" --target kvconform
echo "pgo-build: $K; benchmark it with KVCONFORM=$K tools/bench_check.sh"
