#!/usr/bin/env bash
# Benchmark (not a test): K/V-shaped bytes moved between two processes on loopback through the
# M5.6 handoff protocol (kvconform pd-bench) side by side with raw UCX moving the same bytes
# with the same transport, message size and byte window, plus the checksum's cost.
# Usage: tools/bench_pd_transfer.sh [SIZES_MIB...]   (default: 1 16 64 256 1024)
# Env: KVCONFORM (default build/bin/kvconform), TRANSPORT (tcp|shm, default tcp),
#      CHUNK (message bytes, default 1 MiB), WINDOW (credit bytes, default 8 MiB),
#      REPS (runs per cell, best kept; default 1).
set -euo pipefail
K=${KVCONFORM:-build/bin/kvconform}
TRANSPORT=${TRANSPORT:-tcp}
CHUNK=${CHUNK:-1048576}
WINDOW=${WINDOW:-8388608}
REPS=${REPS:-1}
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(1 16 64 256 1024)
best() {  # best MODE BYTES -> GiB/s (max over REPS)
  local mode=$1 bytes=$2 b=0 args=()
  case $mode in
    raw) args=(--raw) ;;
    protocol) args=(--checksum none) ;;
    protocol_sha256) args=(--checksum sha256) ;;
    sha256_only) args=(--checksum-only) ;;
  esac
  for _ in $(seq "$REPS"); do
    local g
    g=$("$K" pd-bench --bytes "$bytes" --chunk-bytes "$CHUNK" --credit-bytes "$WINDOW" \
         --transport "$TRANSPORT" --peer-timeout-ms 30000 "${args[@]}" |
        python3 -c 'import json,sys;print(json.load(sys.stdin)["gib_per_s"])')
    b=$(python3 -c "print(max($b, $g))")
  done
  echo "$b"
}
echo "# kvconform pd transfer benchmark: $(date -u +%Y-%m-%dT%H:%MZ) transport=$TRANSPORT" \
     "message=$CHUNK B window=$WINDOW B reps=$REPS host=$(hostname) cores=$(nproc)"
printf "%8s %10s %10s %10s %8s %10s %8s\n" "MiB" "raw" "protocol" "proto+sha" "ratio" "ratio+sha" "sha256"
for mib in "${SIZES[@]}"; do
  bytes=$((mib * 1048576))
  raw=$(best raw $bytes)
  pro=$(best protocol $bytes)
  sha=$(best protocol_sha256 $bytes)
  only=$(best sha256_only $bytes)
  python3 - "$mib" "$raw" "$pro" "$sha" "$only" <<'PY'
import sys
mib, raw, pro, sha, only = sys.argv[1], *map(float, sys.argv[2:])
print(f"{mib:>8} {raw:>10.3f} {pro:>10.3f} {sha:>10.3f} {pro/raw:>8.2f} {sha/raw:>10.2f} {only:>8.3f}")
PY
done
echo "# columns: GiB/s (raw UCX, protocol without checksums, protocol with per-chunk SHA-256"
echo "# verified by the receiver), ratio = protocol / raw (target >= 0.8 at >= 64 MiB), sha256 ="
echo "# SHA-256 throughput alone on one core (the sender hashes before the transfer: not timed)."
