#!/usr/bin/env python3
"""Times torch.nn.functional.scaled_dot_product_attention on the kernel benchmark's shapes.

The peer for build/bin/kvconform_kernel_bench: decode (bf16, head_dim 128, GQA 8:1, batch 64,
contexts 1k..32k; batch 1 at 32k) and causal prefill (bf16, H_q 32 / H_kv 8, 4k..16k). Same
counting as the C++ benchmark: decode bytes = K + V read once (+ q, out), prefill FLOPs =
4 * H_q * d * T(T+1)/2. Timing: CUDA events, warm-up first, median of repetitions; inputs are
random normal, never zeros. Where PyTorch or a GPU is missing it says so and exits 0 (nothing
to compare). Usage: tools/torch_sdpa_peer.py [--quick] [--csv PATH]
"""
import argparse
import statistics
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smoke shapes, few repetitions")
    ap.add_argument("--csv", help="also write the rows as CSV")
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("torch_sdpa_peer: PyTorch not installed; no peer numbers")
        return 0
    if not torch.cuda.is_available():
        print("torch_sdpa_peer: torch sees no CUDA device; no peer numbers")
        return 0
    dev = torch.device("cuda")
    torch.manual_seed(20261129)
    reps = 3 if args.quick else 10
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}")

    def time_ms(fn, warmup=3):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        out = []
        for _ in range(reps):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            out.append(a.elapsed_time(b))
        return statistics.median(out)

    def sdpa(q, k, v, causal):
        try:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        except TypeError:  # older torch: expand the K/V heads (extra traffic, noted below)
            g = q.shape[1] // k.shape[1]
            return F.scaled_dot_product_attention(
                q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1), is_causal=causal)

    # Ceiling measured in the same run, like the C++ benchmark: D2D copy, read + write.
    n = (256 << 20) if args.quick else (4 << 30)
    src = torch.rand(n // 4, device=dev) + 0.5
    dst = torch.empty_like(src)
    copy_ms = time_ms(lambda: dst.copy_(src))
    copy_gbs = 2 * n / (copy_ms * 1e6)
    del src, dst
    rows = [("ceiling", "torch d2d copy (read+write)", f"MiB={n >> 20}", copy_ms, copy_gbs,
             "GB/s", -1.0)]

    hkv, hq, d = 8, 64, 128
    batch = 8 if args.quick else 64
    max_ctx = 4096 if args.quick else 32768
    ctx = 1024
    while ctx <= max_ctx:
        for b in ([batch] if ctx < max_ctx else [batch, 1]):
            q = torch.randn(b, hq, 1, d, device=dev, dtype=torch.bfloat16)
            k = torch.randn(b, hkv, ctx, d, device=dev, dtype=torch.bfloat16)
            v = torch.randn(b, hkv, ctx, d, device=dev, dtype=torch.bfloat16)
            ms = time_ms(lambda: sdpa(q, k, v, False))
            gbs = (2 * b * hkv * ctx * d * 2 + 2 * b * hq * d * 2) / (ms * 1e6)
            rows.append(("decode", "torch sdpa bf16 GQA8:1", f"B={b},ctx={ctx // 1024}k", ms,
                         gbs, "GB/s", 100 * gbs / copy_gbs))
            del q, k, v
        ctx *= 2

    phq, phkv = 32, 8
    for t in ([1024] if args.quick else [4096, 8192, 16384]):
        q = torch.randn(1, phq, t, d, device=dev, dtype=torch.bfloat16)
        k = torch.randn(1, phkv, t, d, device=dev, dtype=torch.bfloat16)
        v = torch.randn(1, phkv, t, d, device=dev, dtype=torch.bfloat16)
        ms = time_ms(lambda: sdpa(q, k, v, True), warmup=2)
        tflops = 4 * phq * d * (t * (t + 1) / 2) / (ms * 1e9)
        rows.append(("prefill", "torch sdpa causal bf16", f"Hq={phq},Hkv={phkv},T={t // 1024}k",
                     ms, tflops, "TFLOP/s", -1.0))
        del q, k, v

    print(f"{'group':9} {'case':30} {'shape':24} {'median':>12} {'rate':>9} {'unit':7} ceil%")
    for g, c, s, ms, rate, unit, pct in rows:
        pcts = f"{pct:.0f}%" if pct >= 0 else "-"
        print(f"{g:9} {c:30} {s:24} {ms:9.4f} ms {rate:9.1f} {unit:7} {pcts}")
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("group,case,shape,median_ms,rate,unit,pct_of_copy\n")
            for g, c, s, ms, rate, unit, pct in rows:
                f.write(f'{g},{c},"{s}",{ms:.5f},{rate:.2f},{unit},{pct:.1f}\n')
    return 0


if __name__ == "__main__":
    sys.exit(main())
