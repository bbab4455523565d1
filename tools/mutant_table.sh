#!/usr/bin/env bash
# Mutant detection table: for every seeded bug of the race store, run `kvconform fuzz races`
# over a few seeds and report the median time to detection and the RapidCheck-shrunk program
# size (Markdown).
# Usage: tools/mutant_table.sh [SEEDS (default "1 2 3 4 5")] [extra fuzz flags...]
# Environment: KVCONFORM (default build/bin/kvconform), TIME_LIMIT per run (default 60 s).
set -euo pipefail
cd "$(dirname "$0")/.."
KVC=${KVCONFORM:-build/bin/kvconform}
SEEDS=${1:-"1 2 3 4 5"}
shift || true
LIMIT=${TIME_LIMIT:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mutants=$("$KVC" fuzz mutants | awk '{print $1}')
echo "| mutant | found (seeds) | median s to detection | median programs | median shrunk ops (per seed) | median shrink s |"
echo "|---|---|---|---|---|---|"
for m in $mutants; do
  for s in $SEEDS; do
    "$KVC" fuzz races --mutant "$m" --seed "$s" --time "$LIMIT" --quiet --shrink-time 10 \
      --report "$tmp/$m.$s.json" "$@" > "$tmp/$m.$s.txt" || true
  done
  python3 - "$tmp" "$m" $SEEDS <<'PY'
import json, statistics, sys
tmp, m, seeds = sys.argv[1], sys.argv[2], sys.argv[3:]
found, secs, progs, shrunk, shrink_s = 0, [], [], [], []
for i, s in enumerate(seeds):
    r = json.load(open(f"{tmp}/{m}.{s}.json"))
    if r["failure"]:
        found += 1
        secs.append(r["failure"]["seconds_to_detection"])
        progs.append(r["failure"]["program_index"] + 1)
        shrunk.append(r["failure"]["shrunk_ops"])
        shrink_s.append(r["failure"].get("shrink_seconds", 0))
med = lambda v: f"{statistics.median(v):.3f}" if v else "-"
per = ", ".join(str(x) for x in shrunk) or "-"
print(f"| {m} | {found}/{len(seeds)} | {med(secs)} | {med(progs)} | {med(shrunk)} ({per}) | {med(shrink_s)} |")
PY
done
echo
echo "Shrunk programs (first seed):"
for m in $mutants; do
  s=${SEEDS%% *}
  echo
  echo "### $m"
  echo '```'
  sed -n '/shrunk program/,/witness/p' "$tmp/$m.$s.txt" | sed '$d'
  grep -E 'cannot place' "$tmp/$m.$s.txt" || true
  echo '```'
done
