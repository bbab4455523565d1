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
#                      corpus: the race history fixture and histories `kvconform fuzz races`
#                      writes for every seeded mutant and for the correct store (this target
#                      also builds kvconform in BUILD_DIR)
# Environment: SEED (libFuzzer's -seed; default: from the clock, printed), BUILD_DIR (default
# build-fuzz), CLANG (default clang++; `tools/setup.sh clang` installs Debian's), JOBS. The
# corpus stays in BUILD_DIR/corpus/TARGET between runs; a failing input is written to
# BUILD_DIR/fuzz-artifacts/ and the script prints the command that replays it. Exit 0: no
# failure; 1: a failure (the fuzzer's report is above); 2: no such CLANG or TARGET; 130:
# interrupted. Not run by CI.
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
# The corpus: the target's documents, and each invalid fixture of theirs with its one-operation
# patch applied to its base (docs/fixture-format.md; a JSON Lines base is patched as the array
# of its lines), so that every rule's violation path is a starting point.
if [ "$TARGET" = race_history_check ]; then
  cmake --build "$BUILD_DIR" -j "$JOBS" --target kvconform
  cp fixtures/race/history.jsonl "$CORPUS/fixture_history.jsonl"
  # Small programs (2-3 threads, 12-30 ops): a failing history for each seeded mutant that shows
  # one within 20 programs, and the last passing history of the correct store, for 3 seeds.
  for m in none $(UCX_MEM_EVENTS=no "$BUILD_DIR/bin/kvconform" fuzz mutants | awk '{print $1}'); do
    for s in 1 2 3; do
      UCX_MEM_EVENTS=no ASAN_OPTIONS=detect_leaks=0 "$BUILD_DIR/bin/kvconform" fuzz races \
        --mutant "$m" --seed "$s" --programs 20 --threads $((2 + s % 2)) --handles 2 \
        --ops $((12 + 6 * s)) --no-shrink --quiet --history-out "$CORPUS/gen_${m}_$s.jsonl" \
        >/dev/null 2>&1 || true
    done
  done
fi
python3 - "$TARGET" "$CORPUS" <<'PYEOF'
import json, os, subprocess, sys
target, out = sys.argv[1], sys.argv[2]
files = subprocess.run(["git", "ls-files", "fixtures", "invalid_fixtures"], capture_output=True,
                       text=True, check=True).stdout.split()
def is_trace(name, text):
    return name.endswith(".jsonl") and b"race_history" not in text.split(b"\n", 1)[0]
def ours(name, text):  # trace_check: the traces; document_validate: every other document;
    if target == "race_history_check":  # race_history_check: the race histories
        return name.endswith(".jsonl") and b"race_history" in text.split(b"\n", 1)[0]
    return is_trace(name, text) == (target == "trace_check")
def walk(doc, tokens):
    for t in tokens:
        doc = doc[int(t)] if isinstance(doc, list) else doc[t]
    return doc
def apply(doc, op):
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in op["path"].split("/")[1:]]
    parent, last = walk(doc, tokens[:-1]), tokens[-1]
    if op["op"] == "remove":
        del parent[int(last) if isinstance(parent, list) else last]
    elif op["op"] == "add" and isinstance(parent, list):
        parent.insert(len(parent) if last == "-" else int(last), op["value"])
    elif op["op"] in ("add", "replace"):
        parent[int(last) if isinstance(parent, list) else last] = op["value"]
    else:
        raise ValueError(op["op"])
for f in files:
    if not (f.endswith(".json") or f.endswith(".jsonl")):
        continue
    text = open(f, "rb").read()
    if f.startswith("fixtures/"):
        if not ours(f, text):
            continue
        name = f.replace("/", "_")
    else:
        inv = json.loads(text)
        base = os.path.normpath(os.path.join(os.path.dirname(f), inv["base"]))
        raw = open(base, "rb").read()
        if not ours(base, raw):
            continue
        jsonl = base.endswith(".jsonl")
        doc = [json.loads(l) for l in raw.splitlines() if l] if jsonl else json.loads(raw)
        try:
            for op in inv["patch"]:
                apply(doc, op)
        except (KeyError, IndexError, ValueError, TypeError):
            continue  # an operation this small applier does not know: the fuzzer mutates anyway
        text = ("\n".join(json.dumps(l) for l in doc) + "\n" if jsonl else json.dumps(doc)).encode()
        name = "patched_" + f.replace("/", "_")
    open(os.path.join(out, name), "wb").write(text)
PYEOF
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
