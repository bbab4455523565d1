#!/usr/bin/env bash
# The one prepared GPU check: build with CUDA, run every device test, the kernel benchmark and
# the PyTorch SDPA peer; logs go under $OUT (or build-gpu/out); a short table is printed LAST.
#
# On the GPU machine (repo root as cwd, $OUT set, 16 cores, one H200):
#   tools/gpu-check.sh            # full run, bounded to 8 minutes in total
#   tools/gpu-check.sh --quick    # smoke shapes (a minute), e.g. to test the script itself
#   KVC_GPU_PROFILE=0 tools/gpu-check.sh   # without the two Nsight Compute steps
# On this (CPU) machine, before a GPU session:
#   tools/gpu-check.sh --prepare  # builds the two binaries here into build-gpu-carry/bin
# The GPU run first builds there (-DKVCONFORM_CUDA=ON, build-gpu/). If that build fails (the GPU
# image may lack the CPU-side dependencies: nlohmann-json, GTest, rapidcheck, OpenSSL), it falls
# back to prebuilt binaries in build-gpu-carry/bin, which the device call must then carry.
# KVC_GPU_CHECK_BUILD=0 skips the build and uses build-gpu-carry/bin directly (saves device time
# once a first run has shown that the GPU image cannot build the project).
set -uo pipefail
cd "$(dirname "$0")/.."
MODE=full
case "${1:-}" in
  --quick) MODE=quick ;;
  --prepare) MODE=prepare ;;
  "") ;;
  *) echo "usage: $0 [--quick|--prepare]" >&2; exit 64 ;;
esac
TARGETS=(kernels_device_tests kvconform_kernel_bench kvconform)
# Parity pairs of the CUDA engine (kvconform parity --device cuda): bundled models x both modes.
PARITY_MODELS=(gqa4 llama3 headdim)
PARITY_PROMPT=1,5,9,2,7,3,11,4,8,6,10,12,13,0,14,15,16,17,18

if [ "$MODE" = prepare ]; then
  set -e
  BD=${BUILD_DIR:-build}
  if grep -qs '^CMAKE_CUDA_COMPILER:' "$BD/CMakeCache.txt"; then
    cmake --build "$BD" -j "${JOBS:-2}" --target "${TARGETS[@]}"  # keep its configuration
  else
    BUILD_DIR=$BD KVCONFORM_CUDA=ON JOBS=${JOBS:-2} tools/build.sh
  fi
  rm -rf build-gpu-carry
  mkdir -p build-gpu-carry/bin build-gpu-carry/lib
  # Stripped binaries (the device code lives in a data section and stays), plus the shared
  # libraries the GPU image may lack (everything but libc/libstdc++, the CUDA libraries and
  # OpenBLAS: the H200 image has OpenBLAS, and with its 35 MB the carry passed the 64 MiB limit;
  # seen 2026-12-04: a run carrying the rest, 22 MB, passed every step).
  for t in "${TARGETS[@]}"; do strip -o "build-gpu-carry/bin/$t" "$BD/bin/$t"; done
  ldd "$BD/bin/kvconform" "$BD/bin/kernels_device_tests" | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libdl|libpthread|librt|libcuda|libcudart|libcublas|libcublasLt|libopenblas|libgfortran)\.so' |
    while read -r lib; do cp -L "$lib" build-gpu-carry/lib/; done
  echo "prepared: $(ls build-gpu-carry/bin build-gpu-carry/lib | tr '\n' ' ')"
  echo "size: $(du -sh build-gpu-carry | cut -f1) (carry build-gpu-carry; the device call carries at most 64 MiB)"
  exit 0
fi

OUTDIR=${OUT:-build-gpu/out}
mkdir -p "$OUTDIR"
SUMMARY="$OUTDIR/summary.txt"
: > "$SUMMARY"
T0=$(date +%s)
BUDGET=480  # seconds for the whole script (8 minutes)
QARG=()
[ "$MODE" = quick ] && QARG=(--quick)

# step NAME LIMIT CMD...: runs CMD under timeout (LIMIT, shrunk to the time left), logs to
# $OUTDIR/NAME.log, records "NAME rc seconds" in the summary.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET - ($(date +%s) - T0) - 10))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -le 5 ]; then
    printf '%-14s %4s %5ss  %s\n' "$name" skip 0 "no time left in the 8-minute budget" >> "$SUMMARY"
    return 124
  fi
  echo "== $name (limit ${limit}s): $*"
  local s=$(date +%s)
  timeout --signal=TERM --kill-after=5 "$limit" "$@" > "$OUTDIR/$name.log" 2>&1
  local rc=$?
  printf '%-14s %4s %5ss  %s\n' "$name" "$rc" "$(($(date +%s) - s))" "$OUTDIR/$name.log" >> "$SUMMARY"
  return $rc
}

BIN=""
BUILD_CMD="cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DKVCONFORM_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DKVCONFORM_WERROR=OFF && \
  cmake --build build-gpu -j ${JOBS:-16} --target ${TARGETS[*]}"
BUILT=0
if [ "${KVC_GPU_CHECK_BUILD:-1}" = 0 ]; then
  echo "build skipped (KVC_GPU_CHECK_BUILD=0)" | tee -a "$SUMMARY"
elif step build 240 bash -c "$BUILD_CMD"; then
  BUILT=1
fi
if [ "$BUILT" = 1 ]; then
  BIN=build-gpu/bin
elif [ -x build-gpu-carry/bin/kernels_device_tests ]; then
  BIN=build-gpu-carry/bin
  echo "no fresh build (see build.log); using prebuilt build-gpu-carry/bin" | tee -a "$SUMMARY"
  # Prebuilt binaries need libcudart/libcublas 13: the toolkit's, else the pip wheel's.
  CUBLAS_PIP=$(python3 -c 'import os, nvidia.cublas as m; print(os.path.join(os.path.dirname(m.__file__), "lib"))' 2>/dev/null || true)
  CUDART_PIP=$(python3 -c 'import os, nvidia.cuda_runtime as m; print(os.path.join(os.path.dirname(m.__file__), "lib"))' 2>/dev/null || true)
  export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/lib:${CUBLAS_PIP}:${CUDART_PIP}:${LD_LIBRARY_PATH:-}:$PWD/build-gpu-carry/lib"
  ldd "$BIN/kernels_device_tests" 2>&1 | grep -E 'cuda|cublas|not found' >> "$SUMMARY" || true
else
  echo "build failed and no build-gpu-carry/bin: nothing to run (tail of build.log):"
  tail -20 "$OUTDIR/build.log"
fi

if [ -n "$BIN" ]; then
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
      --format=csv > "$OUTDIR/nvidia-smi.log" 2>&1 || true
  fi
  # The tests read fixtures from the source tree: this checkout, wherever the binaries were built.
  export KVCONFORM_SOURCE_DIR="$PWD"
  step device_tests 120 "$BIN/kernels_device_tests" --gtest_color=no
  # kvconform parity --device cuda: CPU pairs, then cpu_vs_gpu and the GPU path pairs.
  PARITY_CMD="rc=0; for m in ${PARITY_MODELS[*]}; do for mode in deterministic fast; do \
    $BIN/kvconform parity --device cuda --model fixtures/models/\$m --mode \$mode \
      --prompt-ids $PARITY_PROMPT --max-new-tokens 4 || rc=1; done; done; exit \$rc"
  step parity 60 bash -c "$PARITY_CMD"
  step bench 150 "$BIN/kvconform_kernel_bench" "${QARG[@]}" --csv "$OUTDIR/bench.csv"
fi
step torch_peer 90 python3 tools/torch_sdpa_peer.py "${QARG[@]}" --csv "$OUTDIR/torch_peer.csv"
# Nsight Compute on the decode and prefill kernels (full mode, KVC_GPU_PROFILE=0 to
# skip): the decode kernel at B 64, ctx 32k, contiguous (skips the 5 shorter contexts' 26
# launches each), and the tensor-core prefill at T 16k (skips 4k's and 8k's 4 launches each).
# Clocks are left as found (--clock-control none).
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
NCU_SECTIONS=(--section SpeedOfLight --section Occupancy --section LaunchStats
  --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis)
if [ -n "$BIN" ] && [ -n "$NCU" ] && [ "$MODE" = full ] && [ "${KVC_GPU_PROFILE:-1}" != 0 ]; then
  step ncu_decode 75 "$NCU" --clock-control none -k regex:"Decode(Tc|Fast)Kernel" --launch-skip 130 \
    --launch-count 1 "${NCU_SECTIONS[@]}" "$BIN/kvconform_kernel_bench" --only decode
  step ncu_prefill 60 "$NCU" --clock-control none -k regex:AttentionTcKernel --launch-skip 8 \
    --launch-count 1 "${NCU_SECTIONS[@]}" "$BIN/kvconform_kernel_bench" --only prefill
elif [ -n "$BIN" ] && [ "$MODE" = full ]; then
  echo "ncu not found (or KVC_GPU_PROFILE=0): no kernel profile" >> "$SUMMARY"
fi
# Last (lowest priority, bounded): compute-sanitizer on the new kernels' tests: memcheck
# (out-of-bounds / misaligned accesses) and racecheck (shared-memory hazards of the tiled and
# tensor-core attention kernels).
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -n "$BIN" ] && [ -n "$SAN" ]; then
  step memcheck 60 "$SAN" --tool memcheck --error-exitcode 9 "$BIN/kernels_device_tests" \
    --gtest_filter='*TensorCorePrefill*:*TensorCoreDecode*:*AttentionMatchesTwin*:CudaEngine.FailedAppends*'
  step racecheck 45 "$SAN" --tool racecheck --error-exitcode 9 "$BIN/kernels_device_tests" \
    --gtest_filter='*TensorCorePrefill*:*TensorCoreDecode*'
elif [ -n "$BIN" ]; then
  echo "compute-sanitizer not found: memcheck/racecheck skipped" >> "$SUMMARY"
fi

# ---- The short table, last ---------------------------------------------------------------------
echo
echo "==== gpu-check ($MODE) $(date -u +%FT%TZ), $(($(date +%s) - T0))s, binaries: ${BIN:-none}"
head -2 "$OUTDIR/nvidia-smi.log" 2>/dev/null | tail -1
echo "-- steps (name rc seconds log)"
cat "$SUMMARY"
if [ -f "$OUTDIR/device_tests.log" ]; then
  echo "-- device tests: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$OUTDIR/device_tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] [A-Za-z]|Skipped|no CUDA device' "$OUTDIR/device_tests.log" | sort -u | head -12
  grep -E 'NMSE|^\[ parity' "$OUTDIR/device_tests.log" | cut -c1-140 | head -40
fi
if [ -f "$OUTDIR/parity.log" ]; then
  echo "-- kvconform parity --device cuda (GPU pairs; deterministic: tolerance 0 = bit-identical)"
  grep -E '^(kvconform parity:|cpu_vs_gpu|gpu_|verdict:)' "$OUTDIR/parity.log" | cut -c1-140
fi
if [ -f "$OUTDIR/bench.log" ]; then
  echo "-- kvconform_kernel_bench"
  grep -E '^(device|group|ceiling|decode|append|prefill)' "$OUTDIR/bench.log" | cut -c1-140
  grep -vE '^(device|group|ceiling|decode|append|prefill)' "$OUTDIR/bench.log" | tail -5
fi
for t in memcheck racecheck; do
  [ -f "$OUTDIR/$t.log" ] && echo "-- $t: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUTDIR/$t.log" | tail -1)"
done
for t in ncu_decode ncu_prefill; do
  [ -f "$OUTDIR/$t.log" ] || continue
  echo "-- $t (Nsight Compute; full report in $t.log)"
  grep -E '^ +(Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Block Limit (Registers|Shared Mem)|Warp Cycles Per Issued Instruction|Issued Warp Per Scheduler|Dynamic Shared Memory Per Block|L1/TEX Hit Rate|L2 Hit Rate) ' \
    "$OUTDIR/$t.log" | sed -E 's/ +/ /g' | head -16
  grep -oE 'stalled [^.]*\.' "$OUTDIR/$t.log" | head -2
done
if [ -f "$OUTDIR/torch_peer.log" ]; then
  echo "-- torch sdpa peer"
  tail -20 "$OUTDIR/torch_peer.log" | cut -c1-140
fi
# The device call brings back at most 8 files from $OUT: pack the logs into one archive there,
# next to the summary and the two CSVs.
if [ -n "${OUT:-}" ] && [ "$OUTDIR" = "$OUT" ]; then
  tar czf /tmp/gpu-check-logs.tar.gz -C "$OUT" . &&
    find "$OUT" -maxdepth 1 -type f ! -name summary.txt ! -name '*.csv' -delete &&
    mv /tmp/gpu-check-logs.tar.gz "$OUT/"
fi
