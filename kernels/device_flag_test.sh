#!/usr/bin/env bash
# `kvconform generate|parity --device cuda` end to end. Without the CUDA backend or without a
# device (CI) both must exit 4 with a clear message; with a device, generate must print the same
# tokens as the CPU engine and parity must pass.
set -u
K=${KVCONFORM:?set KVCONFORM to the kvconform binary}
M=fixtures/models/gqa2
fail() { echo "FAIL: $*"; exit 1; }
out=$("$K" generate --device cuda --model $M --prompt-ids 1,5,9,2,7 --max-new-tokens 3 2>&1)
rc=$?
if [ $rc -eq 4 ]; then
  echo "$out" | grep -q -- "--device cuda: " || fail "exit 4 without the --device message: $out"
  echo "$out" | grep -qE "no usable CUDA device|built without the CUDA backend" ||
    fail "exit 4 without a reason: $out"
  pout=$("$K" parity --device cuda --model $M --prompt-ids 1,5,9,2,7 --max-new-tokens 2 2>&1)
  prc=$?
  [ $prc -eq 4 ] || fail "parity --device cuda exited $prc (expected 4): $pout"
  echo "ok: no CUDA device/backend -> exit 4: $out"
  exit 0
fi
[ $rc -eq 0 ] || fail "generate --device cuda exited $rc: $out"
cpu=$("$K" generate --device cpu --model $M --prompt-ids 1,5,9,2,7 --max-new-tokens 3) ||
  fail "cpu generate failed"
[ "$out" = "$cpu" ] || fail "cuda tokens '$out' differ from cpu tokens '$cpu'"
"$K" parity --device cuda --model $M --prompt-ids 1,5,9,2,7 --max-new-tokens 3 ||
  fail "parity --device cuda failed"
echo "ok: device present, cuda generate == cpu generate ($out), parity passed"
