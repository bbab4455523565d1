#!/usr/bin/env bash
# Benchmark of `kvconform check`: events/s vs simdjson parse-only of the same file, and peak RSS.
# Usage: tools/bench_check.sh [EVENTS] [REQUESTS] [LAYERS] [IDS] [ORDER] [MIX] [ARRIVALS]
#   (defaults 1000000 64 2 short request decode together;
# e.g. 10000000 10000 for 10M events with 10k concurrent requests; LAYERS is the model's
# cache-producing layers: one append_stage_layer event per layer per step, 32 for a 7-8B model;
# IDS is gen-trace's --ids: short (r0, r1, ...) or runtime (38-byte request ids like vLLM's and a
# 64-hex-digit cache ABI id, longer than std::string's inline buffer); ORDER is gen-trace's
# --order: request (each request's step contiguous) or step (one engine iteration phase by phase,
# as a continuous-batching engine emits: consecutive events name different requests); MIX is
# gen-trace's --mix: decode, or lifecycle (retried failures and cancellations, replayed
# publications, fork children, cancelled requests, reads, speculative verifications, reorders,
# observations; ORDER request only); ARRIVALS is gen-trace's --arrivals: together (every
# request decodes the same steps, so slots are refilled at once) or staggered (decode lengths
# drawn from [0, 2 x 32], a draw of 0 decoding one: requests arrive and leave at spread times)).
# Prints figures only; not a test. Also prints the steady-state ratio: both sides less their start-up and exit,
# timed on the trace's header alone (a CUDA build loads cuBLASLt/UCX: ~80 ms on each side). Uses
# build/bin/kvconform (KVCONFORM=... to override) and /usr/bin/time -v; RUNS=3 runs per side, the
# two sides alternating (check, parse-only, check, ...), best run per side (and the medians).
# Both sides run with OPENBLAS_NUM_THREADS=1 (tools/bench_trace.sh). The profile-guided build of
# tools/pgo-build.sh: KVCONFORM=build-pgo/bin/kvconform tools/bench_check.sh ...
RUNS=${RUNS:-3}
DEFAULT_EVENTS=1000000
source "$(dirname "$0")/bench_trace.sh"
BYTES=$(stat -c %s "$T/trace.jsonl")
once() {  # once OUT CMD... -> prints wall seconds, peak RSS (kB) and CPU seconds of one run
  local out=$1 t0 t1
  shift
  t0=$EPOCHREALTIME  # microsecond wall clock (time -v prints only centiseconds)
  /usr/bin/time -v "$@" >"$out" 2>"$T/time" || true
  t1=$EPOCHREALTIME
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')" \
    "$(awk -F': ' '/Maximum resident set size/{print $2}' "$T/time")" \
    "$(awk -F': ' '/User time|System time/{s += $2} END {print s}' "$T/time")"
}
# The median; of an even count, the mean of the middle two (probe 52: the lower one, i.e. for
# RUNS=2 the best run).
median() {
  tr ' ' '\n' | grep . | sort -n |
    awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else printf "%.4f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
pair() {  # pair FILE -> best of RUNS by wall: check "wall rss cpu", parse "wall rss cpu"; medians
  # The two commands alternate, so that both sides see the same drift of a shared host.
  local bc=999999 rc=0 cc=0 bp=999999 rp=0 cp=0 w r c all_c="" all_p=""
  for _ in $(seq "$RUNS"); do
    read -r w r c < <(once "$T/check.out" "$K" check "$1")
    all_c+="$w "
    if awk "BEGIN{exit !($w < $bc)}"; then bc=$w; rc=$r; cc=$c; fi
    read -r w r c < <(once "$T/parse.out" "$K" check --parse-only "$1")
    all_p+="$w "
    if awk "BEGIN{exit !($w < $bp)}"; then bp=$w; rp=$r; cp=$c; fi
  done
  echo "$bc $rc $cc $bp $rp $cp $(echo "$all_c" | median) $(echo "$all_p" | median)"
}
read -r t_check rss_check cpu_check t_parse rss_parse cpu_parse m_check m_parse < <(pair "$T/trace.jsonl")
tail -n 1 "$T/check.out"  # the verdict line
# The figures count only when the check passed and replayed every event of the trace: a trace
# the checker refuses at its header replays nothing and runs "fast" (probe 52: gen-trace's
# --layers 80 wrote such a trace, and this script printed a ratio of 0.97).
if ! grep -Eq ": pass \($N events, 0 violations\)$" "$T/check.out"; then
  echo "bench_check.sh: the check did not pass all $N events of the generated trace; no figures" >&2
  exit 1
fi
# The parser and the kernel its runtime dispatch chose (parse-only prints them): parse-only
# throughput, and so the ratio, depends on the kernel (AVX-512 vs AVX2), so figures from two
# hosts compare only under the same kernel (SIMDJSON_FORCE_IMPLEMENTATION=haswell forces one).
PARSER=$(sed -n 's/.* lines (\(.*\))$/\1/p' "$T/parse.out")
# Process start-up and exit (library loading: a CUDA build loads cuBLASLt and UCX), measured on
# the trace's header alone and included in both figures above; the steady-state ratio
# subtracts it from both sides.
head -n 1 "$T/trace.jsonl" >"$T/header.jsonl"
read -r s_check _ _ s_parse _ _ _ _ < <(pair "$T/header.jsonl")
awk -v n="$N" -v r="$REQUESTS" -v l="$LAYERS" -v ids="$IDS" -v ord="$ORDER" -v mix="$MIX" -v arr="$ARRIVALS" -v b="$BYTES" -v tc="$t_check" -v tp="$t_parse" -v rc="$rss_check" -v rp="$rss_parse" -v cc="$cpu_check" -v cp="$cpu_parse" -v sc="$s_check" -v sp="$s_parse" -v mc="$m_check" -v mp="$m_parse" -v runs="$RUNS" -v bin="$K" -v parser="$PARSER" 'BEGIN {
  printf "trace: %d events, %d concurrent requests, %d layers, %s ids, %s order, %s mix, %s arrivals, %.1f MB\n", n, r, l, ids, ord, mix, arr, b / 1e6;
  printf "binary: %s\n", bin;
  printf "parser: %s\n", parser;
  printf "kvconform check : %8.4f s  %10.0f events/s  peak RSS %6.1f MiB  CPU %.2f s\n", tc, n / tc, rc / 1024, cc;
  printf "parse-only      : %8.4f s  %10.0f events/s  peak RSS %6.1f MiB  CPU %.2f s\n", tp, n / tp, rp / 1024, cp;
  printf "  (parse-only baseline: simdjson DOM parse of every line, in place, from the same\n";
  printf "   1 MiB block reader; the library and parser the checker uses)\n";
  printf "check / parse-only throughput ratio: %.3f (target >= 0.5); target >= 1e6 events/s\n", tp / tc;
  printf "  medians of the %d runs: check %.4f s, parse-only %.4f s, ratio %.3f\n", runs, mc, mp, mp / mc;
  if (mc > 1.1 * tc || mp > 1.1 * tp)
    printf "  (a median more than 10%% above its best run: the host was noisy; compare ratios, and\n   prefer valgrind instruction and miss counts for small changes)\n";
  printf "start-up and exit (header-only trace): check %.4f s, parse-only %.4f s; without them\n", sc, sp;
  if (tc > sc && tp > sp)
    printf "  steady-state ratio: %.3f (%.0f vs %.0f events/s)\n", (tp - sp) / (tc - sc), n / (tc - sc), n / (tp - sp);
}'
