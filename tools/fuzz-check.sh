#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer under AddressSanitizer + UBSan: crashes, hangs, leaks,
# undefined behaviour, and each target's own oracle.
# Usage: tools/fuzz-check.sh [SECONDS] [TARGET]   (defaults 300, trace_check)
#   trace_check        the trace checker (tools/fuzz/trace_check_fuzzer.cc): its three reading
#                      paths must agree; corpus: the trace fixtures and every trace invalid
#                      fixture's patched trace
#   document_validate  `validate` of every other document kind (document_validate_fuzzer.cc):
#                      validators never throw, are deterministic and report well-formed
#                      violations; corpus: the .json fixtures, the race histories, and every
#                      invalid fixture's patched document (so each rule's violation path is a
#                      starting point)
#   race_history_check `fuzz check` of race histories (race_history_check_fuzzer.cc): the
#                      in-place and exact searches, per lineage and whole, reach one verdict;
#                      corpus: the race history fixture, its invalid fixtures' patched histories
#                      and histories `kvconform fuzz races` writes for every seeded mutant and
#                      for the correct store
# Every target's seed corpus comes from tools/fuzz/seed-corpus.sh (so this script also builds
# kvconform in BUILD_DIR); CI replays the same seeds once through each target's oracle without
# libFuzzer (the fuzz_seed_replay test, tools/fuzz/seed-replay.sh).
# Environment: SEED (libFuzzer's -seed; default: from the clock, printed), BUILD_DIR (default
# build-fuzz), CLANG (default clang++; `tools/setup.sh clang` installs Debian's), JOBS. The
# corpus stays in BUILD_DIR/corpus/TARGET between runs; a failing input is written to
# BUILD_DIR/fuzz-artifacts/ and the script prints the command that replays it. Exit 0: no
# failure; 1: a failure (the fuzzer's report is above); 2: no such CLANG or TARGET; 130:
# interrupted. Not run by CI (CI runs fuzz_seed_replay).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-300}
TARGET=${2:-trace_check}
case "$TARGET" in
  trace_check|document_validate|race_history_check) ;;
  *) echo "fuzz-check: unknown target '$TARGET' (expected trace_check, document_validate or race_history_check)" >&2; exit 2 ;;
esac
CLANG=${CLANG:-clang++}
if [ "$CLANG" = clang++ ]; then tools/setup.sh clang; else tools/setup.sh; fi
command -v "$CLANG" >/dev/null || { echo "fuzz-check: $CLANG not found" >&2; exit 2; }
BUILD_DIR=${BUILD_DIR:-build-fuzz}
JOBS=${JOBS:-$(nproc)}
SEED=${SEED:-$(( $(date +%s) % 2147483647 ))}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CLANG" \
  -DCMAKE_C_COMPILER="${CLANG%++}" -DKVCONFORM_CUDA=OFF -DKVCONFORM_WERROR=ON \
  -DKVCONFORM_SANITIZE=address -DKVCONFORM_FUZZ=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TARGET}_fuzzer"
FUZZER="$BUILD_DIR/bin/${TARGET}_fuzzer"
CORPUS="$BUILD_DIR/corpus/$TARGET"
ARTIFACTS="$BUILD_DIR/fuzz-artifacts"
mkdir -p "$CORPUS" "$ARTIFACTS"
DICT="$BUILD_DIR/$TARGET.dict"
# The corpus: the target's documents, and each invalid fixture's patched document (`kvconform
# fixture materialize`), so that every rule's violation path is a starting point; for
# race_history_check also histories of every seeded mutant (tools/fuzz/seed-corpus.sh).
cmake --build "$BUILD_DIR" -j "$JOBS" --target kvconform
KVCONFORM="$BUILD_DIR/bin/kvconform" ASAN_OPTIONS=detect_leaks=0 tools/fuzz/seed-corpus.sh "$TARGET" "$CORPUS"
# Dictionary: every quoted name and enum value of the target's fixtures (member names, event
# types, outcomes, kinds, ...), so mutations splice whole tokens.
if [ "$TARGET" != document_validate ]; then
  git ls-files -z '*.jsonl' | xargs -0 grep -ohE '"[A-Za-z_][A-Za-z0-9_.-]{0,40}"' | sort -u |
    sed 's/"/\\"/g; s/.*/"&"/' > "$DICT"
else
  git ls-files -z 'fixtures/*.json' 'fixtures/race/*.jsonl' |
    xargs -0 grep -ohE '"[A-Za-z_][A-Za-z0-9_./-]{0,40}"' | sort -u |
    sed 's/"/\\"/g; s/.*/"&"/' > "$DICT"
fi
echo "fuzz-check: $TARGET, seed $SEED, $SECS s, corpus $CORPUS ($(ls "$CORPUS" | wc -l) inputs), dictionary $(wc -l < "$DICT") tokens"
echo "fuzz-check: reproduce this campaign: SEED=$SEED tools/fuzz-check.sh $SECS $TARGET (the same corpus and seed; a time limit makes the end point vary)"
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
