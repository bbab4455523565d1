#!/usr/bin/env bash
# Benchmark (not a test): the reference engine's prefill/decode tokens/s in deterministic and
# fast mode on a generated ~110M-parameter model, side by side with Transformers on CPU at the
# same thread count when torch/transformers are installed. Prints figures and ratios.
# Usage: tools/bench_engine.sh [THREADS] [PROMPT_LEN] [DECODE]   (defaults 1 128 32)
set -euo pipefail
cd "$(dirname "$0")/.."
K=${KVCONFORM:-build/bin/kvconform}
THREADS=${1:-1} PROMPT=${2:-128} DECODE=${3:-32}
M=${BENCH_MODEL_DIR:-/tmp/kvconform_bench100m}
[ -f "$M/model.safetensors" ] || "$K" gen-model --out "$M" --shape bench100m --seed 1
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS
"$K" bench-engine --model "$M" --threads "$THREADS" --prompt-len "$PROMPT" --decode "$DECODE" --format json >/tmp/kvc_bench_engine.json
if python3 -c 'import torch, transformers' 2>/dev/null; then
  python3 tools/bench_hf.py --model "$M" --threads "$THREADS" --prompt-len "$PROMPT" --decode "$DECODE" >/tmp/kvc_bench_hf.json
else
  echo '{}' >/tmp/kvc_bench_hf.json
fi
python3 - <<'PY'
import json
e = json.load(open("/tmp/kvc_bench_engine.json")); h = json.load(open("/tmp/kvc_bench_hf.json"))
r = {x["mode"]: x for x in e["results"]}
print(f"model {e['model']}  threads {e['threads']}  prompt {e['prompt_len']}  decode {e['decode_tokens']}")
print(f"{'engine':28s} {'prefill tok/s':>14s} {'decode tok/s':>13s}")
for m in ("deterministic", "fast"):
    print(f"{'kvconform ' + m:28s} {r[m]['prefill_tokens_per_s']:14.2f} {r[m]['decode_tokens_per_s']:13.2f}")
if h:
    print(f"{'transformers ' + h['transformers'] + ' (torch ' + h['torch'] + ')':28s} {h['prefill_tokens_per_s']:14.2f} {h['decode_tokens_per_s']:13.2f}")
    print(f"fast / transformers decode: {r['fast']['decode_tokens_per_s'] / h['decode_tokens_per_s']:.2f}x   "
          f"prefill: {r['fast']['prefill_tokens_per_s'] / h['prefill_tokens_per_s']:.2f}x")
else:
    print("transformers not installed: no peer figures")
print(f"fast / deterministic decode: {r['fast']['decode_tokens_per_s'] / r['deterministic']['decode_tokens_per_s']:.2f}x   "
      f"prefill: {r['fast']['prefill_tokens_per_s'] / r['deterministic']['prefill_tokens_per_s']:.2f}x")
PY
