#!/usr/bin/env python3
"""Records Hugging Face Transformers logits for a kvconform-generated model (not run by CI).

Builds a LlamaForCausalLM from MODEL_DIR/config.json (eager attention, fp32, CPU), loads the
same weights from MODEL_DIR/model.safetensors (widened to fp32), and runs greedy decoding by
recomputing the whole prefix at every step (use_cache=False). Writes
MODEL_DIR/hf_logits.json (kind kvconform.hf_logits/1) with the logits that chose each token
and provenance (transformers/torch/python versions, config, prompt). The ctest
model_hf_parity test and `kvconform suite` compare the engine with it (max |diff| <= 1e-4,
same greedy tokens).

usage: pip install torch transformers safetensors
       python3 tools/record_hf_logits.py --model fixtures/models/gqa2 \
           --prompt-ids 1,5,9,2,7,3 --max-new-tokens 4
"""
import argparse
import json
import platform
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="model directory (config.json + model.safetensors)")
    ap.add_argument("--prompt-ids", required=True, help="comma-separated prompt token ids")
    ap.add_argument("--max-new-tokens", type=int, default=4)
    ap.add_argument("--out", help="output file (default MODEL/hf_logits.json)")
    args = ap.parse_args()

    import torch
    import transformers
    from safetensors.torch import load_file
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    with open(f"{args.model}/config.json") as f:
        raw = json.load(f)
    gen_info = raw.pop("kvconform_generator", None)
    config = LlamaConfig(**raw)
    config._attn_implementation = "eager"
    model = LlamaForCausalLM(config).to(torch.float32).eval()  # random init, replaced below
    state = {k: v.to(torch.float32) for k, v in load_file(f"{args.model}/model.safetensors").items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    allowed_missing = {"lm_head.weight"} if config.tie_word_embeddings else set()
    if set(missing) - allowed_missing or unexpected:
        sys.exit(f"weights do not match the architecture: missing={missing} unexpected={unexpected}")
    if config.tie_word_embeddings:
        model.tie_weights()

    prompt = [int(x) for x in args.prompt_ids.split(",")]
    ids = list(prompt)
    tokens, logits = [], []
    with torch.no_grad():
        for _ in range(args.max_new_tokens):
            out = model(input_ids=torch.tensor([ids]), use_cache=False)
            row = out.logits[0, -1].to(torch.float32)
            tok = int(torch.argmax(row))
            tokens.append(tok)
            logits.append([float(x) for x in row.tolist()])
            ids.append(tok)

    doc = {
        "kind": "kvconform.hf_logits/1",
        "description": "Transformers LlamaForCausalLM logits (eager attention, fp32, CPU, greedy, "
                       "full-prefix recompute per step) for this directory's weights; regenerate with "
                       f"python3 tools/record_hf_logits.py --model {args.model} --prompt-ids "
                       f"{args.prompt_ids} --max-new-tokens {args.max_new_tokens}",
        "provenance": {
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
            "generator": gen_info,
            "seed": gen_info.get("seed") if gen_info else None,
            "config": raw,
            "attn_implementation": "eager",
            "dtype": "float32",
        },
        "prompt_ids": prompt,
        "tokens": tokens,
        "logits": logits,
        "tolerance": 1e-4,
    }
    out_path = args.out or f"{args.model}/hf_logits.json"
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {out_path}: tokens {tokens}")


if __name__ == "__main__":
    main()
