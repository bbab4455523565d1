#!/usr/bin/env bash
# The fuzz_seed_replay test: each fuzz target's oracle, run once on every input of its seed
# corpus (tools/fuzz/seed-corpus.sh: the fixtures and every invalid fixture's document), without
# libFuzzer. trace_check: the general, one-pass and batched readers report the same violations;
# document_validate: validators never throw, are deterministic, report registered codes, a
# message and an RFC 6901 pointer; race_history_check: the four linearizability searches agree
# and a witness comes with "not linearizable" only.
# Usage: tools/fuzz/seed-replay.sh [TARGET...]   (default: all three)
# Environment: KVCONFORM (default build/bin/kvconform), REPLAY_DIR (where <target>_replay is;
# default: KVCONFORM's directory), RACE_SEEDS (default 1). On a failure the replay binary names
# the input; the corpus is kept and its directory printed. Exit 0 all held, 1 an oracle failed,
# 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/../.."
export KVCONFORM=${KVCONFORM:-build/bin/kvconform}
REPLAY_DIR=${REPLAY_DIR:-$(dirname "$KVCONFORM")}
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(trace_check document_validate race_history_check)
WORK=$(mktemp -d)
rc=0
for t in "${TARGETS[@]}"; do
  bin="$REPLAY_DIR/${t}_replay"
  [ -x "$bin" ] || { echo "seed-replay: $bin is not built" >&2; exit 2; }
  tools/fuzz/seed-corpus.sh "$t" "$WORK/$t" "${RACE_SEEDS:-1}"
  if UCX_MEM_EVENTS=no "$bin" "$WORK/$t" 2>"$WORK/$t.err"; then
    grep -h '_fuzzer: ' "$WORK/$t.err" || true  # a target's own tally, when it prints one
    continue
  fi
  echo "seed-replay: $t: an oracle failed (corpus kept in $WORK/$t):" >&2
  tail -n 40 "$WORK/$t.err" >&2
  failed=$(sed -n 's/^fuzz replay: failed on input //p' "$WORK/$t.err" | tail -n 1)
  echo "seed-replay: reproduce: UCX_MEM_EVENTS=no $bin ${failed:-<the input named above>}" >&2
  rc=1
done
if [ "$rc" -eq 0 ]; then rm -rf "$WORK"; fi
exit "$rc"
