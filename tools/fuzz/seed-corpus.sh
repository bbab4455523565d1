#!/usr/bin/env bash
# Writes a fuzz target's seed corpus: the documents the target reads, from the repository's
# fixtures and from every invalid fixture (its patched document, as `kvconform fixture
# materialize` writes it), so that every rule's violation path is a starting point.
# Usage: tools/fuzz/seed-corpus.sh TARGET OUT_DIR [RACE_SEEDS]
#   TARGET      trace_check (the traces), document_validate (every other document: the JSON
#               ones and the race histories), race_history_check (the race histories, plus
#               the histories `kvconform fuzz races` writes for every seeded mutant and for the
#               correct store, RACE_SEEDS seeds each: default 3)
#   OUT_DIR     created; files already in it stay (a campaign's corpus grows across runs)
# Environment: KVCONFORM (default build/bin/kvconform). Used by tools/fuzz-check.sh and
# tools/fuzz/seed-replay.sh. Exit 0, or 2 on bad usage or a fixture that does not materialize.
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET=${1:-}
OUT=${2:-}
RACE_SEEDS=${3:-3}
K=${KVCONFORM:-build/bin/kvconform}
case "$TARGET" in
  trace_check|document_validate|race_history_check) ;;
  *) echo "seed-corpus: unknown target '$TARGET' (trace_check, document_validate or race_history_check)" >&2; exit 2 ;;
esac
[ -n "$OUT" ] || { echo "seed-corpus: no OUT_DIR" >&2; exit 2; }
[ -x "$K" ] || { echo "seed-corpus: $K is not an executable (set KVCONFORM)" >&2; exit 2; }
mkdir -p "$OUT"
# Which target reads a document: a trace (JSON Lines) is trace_check's; a race history (JSON
# Lines naming kvconform.race_history/1 on its first line) is race_history_check's and, like
# every JSON document, document_validate's.
ours() {  # ours FILE -> 0 when TARGET reads it
  local f=$1 kind=json
  case "$f" in
    *.jsonl)
      local first=""
      IFS= read -r first <"$f" || true  # (no pipe: under pipefail a closed pipe would fail it)
      if [[ $first == *race_history* ]]; then kind=race; else kind=trace; fi ;;
    *.json) ;;
    *) return 1 ;;
  esac
  case "$TARGET" in
    trace_check) [ "$kind" = trace ] ;;
    race_history_check) [ "$kind" = race ] ;;
    document_validate) [ "$kind" != trace ] ;;
  esac
}
n=0
while IFS= read -r -d '' f; do
  if ours "$f"; then cp "$f" "$OUT/$(echo "$f" | tr '/' '_')"; n=$((n + 1)); fi
done < <(git ls-files -z 'fixtures/*.json' 'fixtures/*.jsonl')
MAT=$(mktemp -d)
trap 'rm -rf "$MAT"' EXIT
"$K" fixture materialize invalid_fixtures --out-dir "$MAT" >/dev/null
for f in "$MAT"/*; do
  if ours "$f"; then cp "$f" "$OUT/patched_$(basename "$f")"; n=$((n + 1)); fi
done
if [ "$TARGET" = race_history_check ]; then
  # Small programs (2-3 threads, 12-30 ops): a failing history for each seeded mutant that shows
  # one within 20 programs, and the last passing history of the correct store.
  for m in $(UCX_MEM_EVENTS=no "$K" fuzz mutants | awk '{print $1}'); do  # "none" first: the correct store
    for s in $(seq "$RACE_SEEDS"); do
      UCX_MEM_EVENTS=no ASAN_OPTIONS=detect_leaks=0 "$K" fuzz races --mutant "$m" --seed "$s" \
        --programs 20 --threads $((2 + s % 2)) --handles 2 --ops $((12 + 6 * s)) --no-shrink \
        --quiet --history-out "$OUT/gen_${m}_$s.jsonl" >/dev/null 2>&1 || true
      [ -s "$OUT/gen_${m}_$s.jsonl" ] && n=$((n + 1))
    done
  done
fi
echo "seed-corpus: $TARGET: $n seed inputs written to $OUT"
