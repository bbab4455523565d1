# Sourced by the check benchmarks (tools/bench_check.sh, tools/bench_check_counts.sh): their
# shared arguments [EVENTS] [REQUESTS] [LAYERS] [IDS] [ORDER] [MIX] [ARRIVALS] and the generated trace.
# Before sourcing, set DEFAULT_EVENTS; afterwards K (the kvconform binary: build/bin/kvconform
# or $KVCONFORM), EVENTS, REQUESTS, LAYERS, IDS, ORDER, MIX, ARRIVALS, T (a scratch directory removed at exit)
# and N (the number of events of $T/trace.jsonl, written by gen-trace) are set, and the current
# directory is the repository root. A missing binary is exit 2. Both benchmarks run kvconform
# with OPENBLAS_NUM_THREADS=1: it links OpenBLAS (the reference model), whose thread pool
# otherwise starts and spins at load time on a second core.
set -euo pipefail
export OPENBLAS_NUM_THREADS=1
cd "$(dirname "${BASH_SOURCE[0]}")/.."
K=${KVCONFORM:-build/bin/kvconform}
EVENTS=${1:-$DEFAULT_EVENTS}
REQUESTS=${2:-64}
LAYERS=${3:-2}
IDS=${4:-short}
ORDER=${5:-request}
MIX=${6:-decode}
ARRIVALS=${7:-together}
if [ ! -x "$K" ]; then
  echo "$(basename "$0"): $K not found (build first: tools/build.sh, or set KVCONFORM)" >&2
  exit 2
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$K" gen-trace --events "$EVENTS" --requests "$REQUESTS" --layers "$LAYERS" --ids "$IDS" \
  --order "$ORDER" --mix "$MIX" --arrivals "$ARRIVALS" -o "$T/trace.jsonl" 2>/dev/null
N=$(($(wc -l <"$T/trace.jsonl") - 1))
