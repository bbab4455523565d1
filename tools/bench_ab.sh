#!/usr/bin/env bash
# A/B of `kvconform check` binaries on one trace: the binaries alternate run by run (so that each
# sees the same drift of a shared host), and each binary's wall and CPU (user + system) seconds are
# printed, best and median, with every run's figures. Prints figures only; not a test.
# Usage: tools/bench_ab.sh TRACE RUNS BINARY [BINARY...]
#   e.g. kvconform gen-trace --events 1000000 --requests 10000 --ids runtime --order step -o t.jsonl
#        tools/bench_ab.sh t.jsonl 5 /tmp/before/kvconform build/bin/kvconform
# Every run must pass with 0 violations (a run that does not is reported, and the script exits 1):
# a refused trace "checks" fast. CPU time is the steadier figure where the host steals time.
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,9p' "$0" >&2
  exit 2
fi
TRACE=$1
RUNS=$2
shift 2
export OPENBLAS_NUM_THREADS=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failed=0
for _ in $(seq "$RUNS"); do
  i=0
  for b in "$@"; do
    t0=$EPOCHREALTIME
    /usr/bin/time -f "%U %S" -o "$T/time" "$b" check "$TRACE" >"$T/out" 2>&1 || true
    t1=$EPOCHREALTIME
    if ! tail -n 1 "$T/out" | grep -Eq ": pass \([0-9]+ events, 0 violations\)$"; then
      echo "bench_ab.sh: $b did not pass $TRACE: $(tail -n 1 "$T/out")" >&2
      failed=1
    fi
    echo "$i $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') $(awk 'END {printf "%.2f", $1 + $2}' "$T/time")" >>"$T/runs"
    i=$((i + 1))
  done
done
i=0
for b in "$@"; do
  awk -v i="$i" -v bin="$b" '
    function median(v, n,   k, j, t) {
      for (k = 2; k <= n; k++) for (j = k; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    $1 == i { n++; w[n] = $2; c[n] = $3; ws = ws " " $2; cs = cs " " $3 }
    END {
      printf "%s\n  wall: best %.3f s, median %.3f s (%s )\n", bin, min(w, n), median(w, n), ws
      printf "  cpu:  best %.2f s, median %.2f s (%s )\n", min(c, n), median(c, n), cs
    }
    function min(v, n,   k, m) { m = v[1]; for (k = 2; k <= n; k++) if (v[k] < m) m = v[k]; return m }
  ' "$T/runs"
  i=$((i + 1))
done
exit "$failed"
