#!/usr/bin/env bash
# Deterministic companion of tools/bench_check.sh: instructions and simulated cache misses per
# event of `kvconform check` and of `check --parse-only` on one generated trace (cachegrind), for
# comparing builds on a host whose wall clock is noisy. Prints figures only; not a test.
# Usage: tools/bench_check_counts.sh [EVENTS] [REQUESTS] [LAYERS] [IDS] [ORDER] [MIX] [ARRIVALS]
#   (defaults 100000 64 2 short request decode together; the arguments are bench_check.sh's, see
#   there).
# The last level is simulated as LL=SIZE,ASSOC,LINE (default 524288,8,64: this CPU's L2 per
# core; the shared L3 is not modelled); LL=8388608,16,64 models a share of an L3. Needs
# valgrind (Debian package `valgrind`; not needed by CI). Counts include process start-up
# (dynamic loading: ~15M instructions, the same on both sides); one 100k-event run per side
# takes about 10 s under cachegrind.
LL=${LL:-524288,8,64}
if ! command -v valgrind >/dev/null; then
  echo "bench_check_counts.sh: valgrind not found (apt-get install valgrind)" >&2
  exit 2
fi
DEFAULT_EVENTS=100000
source "$(dirname "$0")/bench_trace.sh"
counts() {  # counts NAME ARGS... -> "Ir D1_misses LL_data_misses" of one cachegrind run
  local name=$1
  shift
  valgrind --tool=cachegrind --cache-sim=yes --LL="$LL" --cachegrind-out-file="$T/$name.cg" \
    "$K" "$@" >"$T/$name.out" 2>"$T/$name.err" || {
    echo "bench_check_counts.sh: $K $* failed:" >&2
    tail -n 5 "$T/$name.err" >&2
    exit 1
  }
  # The columns by the names on the file's events: line (Ir, D1mr, D1mw, DLmr, DLmw, ...).
  awk '/^events:/ {for (i = 2; i <= NF; ++i) col[$i] = i}
       /^summary:/ {print $col["Ir"], $col["D1mr"] + $col["D1mw"], $col["DLmr"] + $col["DLmw"]}' \
    "$T/$name.cg"
}
read -r ic dc lc < <(counts check check "$T/trace.jsonl")
tail -n 1 "$T/check.out"  # the verdict line: the generated trace must pass
read -r ip dp lp < <(counts parse check --parse-only "$T/trace.jsonl")
awk -v n="$N" -v r="$REQUESTS" -v l="$LAYERS" -v ids="$IDS" -v ord="$ORDER" -v ll="$LL" \
  -v ic="$ic" -v dc="$dc" -v lc="$lc" -v ip="$ip" -v dp="$dp" -v lp="$lp" 'BEGIN {
  printf "trace: %d events, %d concurrent requests, %d layers, %s ids, %s order\n", n, r, l, ids, ord;
  printf "cachegrind, last level %s (size,assoc,line); per event:\n", ll;
  printf "                  %14s %14s %14s\n", "instructions", "D1 misses", "LL data misses";
  printf "kvconform check : %14.1f %14.2f %14.3f\n", ic / n, dc / n, lc / n;
  printf "parse-only      : %14.1f %14.2f %14.3f\n", ip / n, dp / n, lp / n;
  printf "check beyond parse-only: %.1f instructions, %.2f D1 and %.3f LL data misses per event\n",
         (ic - ip) / n, (dc - dp) / n, (lc - lp) / n;
  printf "instruction ratio parse-only / check: %.3f (not the throughput ratio: the two sides\n", ip / ic;
  printf "  run at different instructions per cycle; see tools/bench_check.sh)\n";
}'
