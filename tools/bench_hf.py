#!/usr/bin/env python3
"""Benchmark peer: Transformers LlamaForCausalLM prefill/decode tokens/s on CPU (fp32, eager).

Same prompt construction, lengths and thread count as `kvconform bench-engine`; prints one
JSON object. Used by tools/bench_engine.sh; not run by CI.
"""
import argparse
import json
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--decode", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    import torch
    import transformers
    from safetensors.torch import load_file
    from transformers import LlamaConfig, LlamaForCausalLM, DynamicCache

    torch.set_num_threads(a.threads)
    raw = json.load(open(f"{a.model}/config.json"))
    raw.pop("kvconform_generator", None)
    cfg = LlamaConfig(**raw)
    cfg._attn_implementation = "eager"
    model = LlamaForCausalLM(cfg).to(torch.float32).eval()
    model.load_state_dict({k: v.float() for k, v in load_file(f"{a.model}/model.safetensors").items()}, strict=False)
    if cfg.tie_word_embeddings:
        model.tie_weights()
    prompt = [(i * 7919 + 13) % cfg.vocab_size for i in range(a.prompt_len)]
    with torch.no_grad():
        cache = DynamicCache()
        t0 = time.perf_counter()
        out = model(input_ids=torch.tensor([prompt]), past_key_values=cache, use_cache=True)
        t1 = time.perf_counter()
        for _ in range(a.decode):
            y = int(torch.argmax(out.logits[0, -1]))
            out = model(input_ids=torch.tensor([[y]]), past_key_values=out.past_key_values, use_cache=True)
        t2 = time.perf_counter()
    print(json.dumps({"engine": "transformers", "transformers": transformers.__version__,
                      "torch": torch.__version__, "threads": a.threads,
                      "prefill_tokens_per_s": a.prompt_len / (t1 - t0),
                      "decode_tokens_per_s": a.decode / (t2 - t1)}))


if __name__ == "__main__":
    main()
