#!/usr/bin/env python3
"""Writes one conforming kvconform.trace/1 transfer of C one-token chunks (benchmark input).

Usage: python3 tools/gen_transfer_plan_trace.py CHUNKS OUT [RESENDS]

The transfer plane of fixtures/m5_6/trace/transfer_protocol.jsonl (its header, four layers,
128 B per token-layer, a 2 KiB credit window) scaled up: a plan of CHUNKS chunks (CHUNKS / 4
tokens per layer, one chunk per token and layer), each chunk acquired, sent, received and made
DEVICE_VISIBLE in turn, then validation, publication and decode admission; then RESENDS
re-receives of published chunks with their bytes (idempotent retries judged against the settled
plan), then the source release. `kvconform check OUT` must pass. Used for the per-chunk cost
figures of docs/trace-format.md (transfer plane): e.g.
  python3 tools/gen_transfer_plan_trace.py 100000 /tmp/plan.jsonl 100000
  /usr/bin/time -f "%e s %M kB" build/bin/kvconform check /tmp/plan.jsonl
"""
import hashlib
import json
import os
import sys


def main():
    if len(sys.argv) not in (3, 4) or not sys.argv[1].isdigit():
        sys.exit(__doc__)
    chunks_wanted = int(sys.argv[1])
    resends = int(sys.argv[3]) if len(sys.argv) == 4 else 0
    tokens = max(1, chunks_wanted // 4)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "fixtures/m5_6/trace/transfer_protocol.jsonl")) as f:
        header = json.loads(f.readline())
    header["description"] = ("tools/gen_transfer_plan_trace.py %s: one transfer of %d one-token "
                             "chunks" % (" ".join(sys.argv[1:2] + sys.argv[3:]), 4 * tokens))
    seq = {"router-0": 0, "prefill-0": 0, "decode-0": 0}
    clock = [0]
    out = open(sys.argv[2], "w")
    dump = lambda obj: out.write(json.dumps(obj, separators=(",", ":")) + "\n")
    dump(header)

    def event(source, event_type, request, op, payload):
        n = seq[source]
        seq[source] += 1
        clock[0] += 1000
        dump({"event_id": "%s:%d" % (source, n), "source_instance": source,
              "source_component": "transfer", "local_sequence": n, "monotonic_ns": clock[0],
              "event_type": event_type, "request_id": request, "operation_id": op,
              "payload": payload})

    identity = {"tenant": "t", "request_id": "r", "generation": 1, "attempt": 1,
                "source_worker_epoch": 1, "destination_worker_epoch": 1, "reservation_id": "rv"}
    plan = [{"chunk_id": "c%d_%d" % (layer, t), "layer": layer, "token_start": t,
             "token_count": 1, "bytes": 128,
             "checksum": hashlib.sha256(b"%d:%d" % (layer, t)).hexdigest()}
            for layer in range(4) for t in range(tokens)]
    event("decode-0", "transfer_destination", None, None,
          {"destination": "decode-0", "credit_capacity_bytes": 2048, "pool_blocks": 8})
    event("router-0", "transfer_plan", "r", "x",
          {"destination": "decode-0", "identity": identity,
           "tensor_abi_sha256": header["cache_abi"]["id"], "token_start": 0,
           "token_count": tokens, "bytes_per_token_layer": 128, "reserved_blocks": 4,
           "chunks": plan})
    event("decode-0", "transfer_reserve", "r", "x", {})
    for layer in range(4):
        event("prefill-0", "kv_ready", "r", None, {"layer": layer, "interval": [0, tokens]})
    for c in plan:
        event("prefill-0", "chunk_credit_acquire", "r", "x", {"chunk_id": c["chunk_id"]})
        event("prefill-0", "chunk_send", "r", "x", {"chunk_id": c["chunk_id"]})
        event("decode-0", "chunk_receive", "r", "x",
              {"chunk_id": c["chunk_id"], "checksum": c["checksum"]})
        event("decode-0", "chunk_device_visible", "r", "x", {"chunk_id": c["chunk_id"]})
    event("decode-0", "transfer_validate", "r", "x", {"expected_identity": identity})
    event("decode-0", "transfer_publish", "r", "x",
          {"cache_handle_id": "r@g1", "committed_length": tokens})
    event("decode-0", "decode_admit", "r", "x", {"generation": 1})
    for i in range(resends):
        c = plan[(i * 7919) % len(plan)]
        event("decode-0", "chunk_receive", "r", "x",
              {"chunk_id": c["chunk_id"], "checksum": c["checksum"]})
    event("prefill-0", "source_release_ack", "r", "x", {"generation": 1})


if __name__ == "__main__":
    main()
