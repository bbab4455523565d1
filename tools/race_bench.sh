#!/usr/bin/env bash
# Race checker benchmark (not a ctest): record histories of N ops over 64 threads and 1,000
# handle lineages from the correct store, then check each partitioned (per lineage) and, as the
# baseline, unpartitioned; prints parse/check seconds and peak memory of each check.
# Usage: tools/race_bench.sh [OPS... (default "100000 1000000")]
# Environment: KVCONFORM (default build/bin/kvconform), BASELINE_BUDGET (s, default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
KVC=${KVCONFORM:-build/bin/kvconform}
BUDGET=${BASELINE_BUDGET:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in ${@:-100000 1000000}; do
  echo "== $n ops, 64 threads, 1000 lineages"
  /usr/bin/time -f "record: %e s wall, peak RSS %M KiB" "$KVC" fuzz races --threads 64 \
    --handles 1000 --ops "$n" --programs 1 --no-shrink --quiet --seed 1 \
    --history-out "$tmp/h.jsonl" | grep -E 'programs|history written' || true
  ls -l "$tmp/h.jsonl" | awk '{printf "history: %.1f MB\n", $5/1e6}'
  /usr/bin/time -f "partitioned check process: %e s wall, peak RSS %M KiB" \
    "$KVC" fuzz check "$tmp/h.jsonl" --budget "$BUDGET" || true
  /usr/bin/time -f "unpartitioned check process: %e s wall, peak RSS %M KiB" \
    "$KVC" fuzz check "$tmp/h.jsonl" --no-partition --budget "$BUDGET" || true
done
