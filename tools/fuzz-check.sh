#!/usr/bin/env bash
# Coverage-guided fuzzing of the trace checker (tools/fuzz/trace_check_fuzzer.cc) with libFuzzer
# under AddressSanitizer + UBSan: crashes, hangs, leaks, undefined behaviour, and any difference
# between the checker's three reading paths. Usage: tools/fuzz-check.sh [SECONDS]   (default 300)
# Environment: SEED (libFuzzer's -seed; default: from the clock, printed), BUILD_DIR (default
# build-fuzz), CLANG (default clang++; `tools/setup.sh clang` installs Debian's), JOBS. The
# corpus, seeded from the repository's .jsonl fixtures, stays in BUILD_DIR/corpus/trace_check
# between runs; a failing input is written to BUILD_DIR/fuzz-artifacts/ and the script prints
# the command that replays it. Exit 0: no failure; 1: a failure (the fuzzer's report is above);
# 2: no such CLANG; 130: interrupted. Not run by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-300}
CLANG=${CLANG:-clang++}
if [ "$CLANG" = clang++ ]; then tools/setup.sh clang; else tools/setup.sh; fi
command -v "$CLANG" >/dev/null || { echo "fuzz-check: $CLANG not found" >&2; exit 2; }
BUILD_DIR=${BUILD_DIR:-build-fuzz}
JOBS=${JOBS:-$(nproc)}
SEED=${SEED:-$(( $(date +%s) % 2147483647 ))}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CLANG" \
  -DCMAKE_C_COMPILER="${CLANG%++}" -DKVCONFORM_CUDA=OFF -DKVCONFORM_WERROR=ON \
  -DKVCONFORM_SANITIZE=address -DKVCONFORM_FUZZ=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target trace_check_fuzzer
FUZZER="$BUILD_DIR/bin/trace_check_fuzzer"
CORPUS="$BUILD_DIR/corpus/trace_check"
ARTIFACTS="$BUILD_DIR/fuzz-artifacts"
mkdir -p "$CORPUS" "$ARTIFACTS"
git ls-files -z '*.jsonl' | xargs -0 -I{} cp {} "$CORPUS/"
# Dictionary: every quoted name and enum value of the trace fixtures (member names, event
# types, outcomes, purposes, ...), so mutations splice whole tokens.
DICT="$BUILD_DIR/trace.dict"
git ls-files -z '*.jsonl' | xargs -0 grep -ohE '"[A-Za-z_][A-Za-z0-9_.-]{0,40}"' | sort -u |
  sed 's/"/\\"/g; s/.*/"&"/' > "$DICT"
echo "fuzz-check: seed $SEED, $SECS s, corpus $CORPUS ($(ls "$CORPUS" | wc -l) inputs), dictionary $(wc -l < "$DICT") tokens"
echo "fuzz-check: reproduce this campaign: SEED=$SEED tools/fuzz-check.sh $SECS (the same corpus and seed; a time limit makes the end point vary)"
rc=0
UCX_MEM_EVENTS=no ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  "$FUZZER" "$CORPUS" -seed="$SEED" -max_total_time="$SECS" -max_len=65536 -timeout=10 \
  -rss_limit_mb=4096 -dict="$DICT" -artifact_prefix="$ARTIFACTS/" -print_final_stats=1 || rc=$?
if [ "$rc" -eq 72 ]; then  # libFuzzer's -interrupted_exitcode: a signal stopped it, no finding
  echo "fuzz-check: interrupted (no failure found before the signal)"
  exit 130
fi
if [ "$rc" -ne 0 ]; then
  echo "fuzz-check: FAILED (exit $rc); replay: UCX_MEM_EVENTS=no $FUZZER $ARTIFACTS/<crash-|leak-|timeout-file>"
  ls -t "$ARTIFACTS" | head -3
  exit 1
fi
echo "fuzz-check: no failure in $SECS s (seed $SEED)"
