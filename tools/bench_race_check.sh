#!/usr/bin/env bash
# Race checker benchmark (not a ctest): histories of N ops recorded from the correct store over
# 64 threads and 1,000 handle lineages, each checked (1) partitioned per lineage with the
# in-place search (the default), (2) partitioned with the exact search (full state copies, the
# previous method), and (3) unpartitioned (the baseline: one search over the whole history).
# Prints wall and CPU (all threads) seconds of parse and check, and peak RSS, of each; a check
# that runs out of its budget prints "unknown within budget". On a shared, loaded machine the
# CPU seconds are the stable figure (wall time depends on the load, printed first). Histories are kept in $HISTORY_DIR and reused.
# Usage: tools/bench_race_check.sh [OPS... (default "100000 1000000")]
# Environment: KVCONFORM (default build/bin/kvconform), BUDGET (s per check, default 60),
#              BASELINE_BUDGET (s, default 30), HISTORY_DIR (default build/race_bench).
set -euo pipefail
cd "$(dirname "$0")/.."
KVC=${KVCONFORM:-build/bin/kvconform}
BUDGET=${BUDGET:-60}
BASE_BUDGET=${BASELINE_BUDGET:-30}
DIR=${HISTORY_DIR:-build/race_bench}
mkdir -p "$DIR"
run_check() {  # label, history, flags...
  local label=$1 h=$2
  shift 2
  local out rss
  out=$( { /usr/bin/time -f "RSS %M" "$KVC" fuzz check "$h" "$@" 2>&1; } || true)
  rss=$(echo "$out" | awk '/^RSS/ {printf "%.0f MiB", $2/1024}')
  if echo "$out" | grep -q "budget ran out"; then
    printf "  %-28s unknown within budget; %s\n" "$label:" \
      "$(echo "$out" | sed -n 's/.*parse \([0-9.e-]*\) s, validate \([0-9.e-]*\) s, check \([0-9.e-]*\) s; cpu parse \([0-9.e-]*\) s, check \([0-9.e-]*\) s.*/wall: parse \1 s, validate \2 s, check > \3 s; cpu: parse \4 s, check > \5 s/p'), peak RSS $rss"
  else
    printf "  %-28s %s, %s\n" "$label:" \
      "$(echo "$out" | sed -n 's/^[^:]*: \([a-z_]*\) (.*parse \([0-9.e-]*\) s, validate \([0-9.e-]*\) s, check \([0-9.e-]*\) s; cpu parse \([0-9.e-]*\) s, check \([0-9.e-]*\) s.*/\1; wall: parse \2 s, validate \3 s, check \4 s; cpu: parse \5 s, check \6 s/p')" \
      "peak RSS $rss"
  fi
}
echo "machine: $(nproc) cores, $(uptime | sed 's/.*load average/load average/')"
for n in ${@:-100000 1000000}; do
  h="$DIR/h$n.jsonl"
  if [ ! -s "$h" ]; then
    "$KVC" fuzz races --threads 64 --handles 1000 --ops "$n" --programs 1 --no-shrink --quiet \
      --seed 1 --history-out "$h" >/dev/null || { echo "recording $n ops failed"; exit 1; }
  fi
  echo "== $n ops, 64 threads, 1000 lineages ($(du -m "$h" | cut -f1) MB)"
  run_check "partitioned, in-place" "$h" --budget "$BUDGET"
  run_check "partitioned, exact search" "$h" --exact --budget "$BUDGET"
  run_check "unpartitioned (baseline)" "$h" --no-partition --budget "$BASE_BUDGET"
done
