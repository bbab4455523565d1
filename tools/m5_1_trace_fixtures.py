#!/usr/bin/env python3
"""Writes the M5.1 kvconform.trace/1 fixtures and their one-field invalid fixtures.

Regenerate: python3 tools/m5_1_trace_fixtures.py   (from the repository root)

The traces transcribe the seed's worked histories event by event (M5.1 0x01 two-layer decode and
worked synthetic lifecycle trace, 0x03/0x09 ordinary stop + repair and speculative correction,
0x07 Loop 8 failure/retry/fork/release). Every number a trace *claims* (result snapshots,
committed lengths, handle generations, resident bytes) is the seed's number; `kvconform check`
recomputes each one from the state machines, so a wrong number here fails the valid-fixture suite.
Each invalid fixture is one RFC 6902 operation on a trace (pointer /N is line N+1) and names the
single code the checker must raise.
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = "M5.1"
ABI = {"id": "abi-loop2-gqa-fp16", "num_layers": 2, "position_stage": "post_rope",
       "bytes_per_token": 64}  # L=2, H_kv=2, d_h=4, fp16 K and V: 2*2*4*(2+2) = 64 B/token


def header(sources, description, extra=None):
    h = {"kind": "kvconform.trace/1", "schema_version": 1,
         "producer": {"name": "tools/m5_1_trace_fixtures.py", "revision": "1"},
         "cache_abi": ABI,
         "sources": [{"source_instance": i, "source_component": c,
                      "clock_domain": i + ".monotonic"} for i, c in sources],
         "audit": "complete"}
    h.update(extra or {})
    h["description"] = description
    h["regenerate"] = "python3 tools/m5_1_trace_fixtures.py"
    return h


class Trace:
    def __init__(self, sources, description, extra_header=None):
        self.lines = [header(sources, description, extra_header)]
        self.seq = {}
        self.labels = {}

    def ev(self, label, source, event_type, payload, request=None, gen=None, op=None,
           base=None, result=None, outcome=None):
        comp = {s["source_instance"]: s["source_component"] for s in self.lines[0]["sources"]}[source]
        n = self.seq.get(source, 0)
        self.seq[source] = n + 1
        e = {"event_id": f"{source}:{n}", "trace_id": "trace-1", "source_instance": source,
             "source_component": comp, "local_sequence": n,
             "monotonic_ns": 1_000_000 + 1000 * n + len(self.lines), "event_type": event_type}
        if request is not None:
            e["request_id"] = request
            e["handle_generation"] = gen
        e["operation_id"] = op
        e["base_snapshot"] = base
        e["result_snapshot"] = result
        if outcome is not None:
            e["outcome"] = outcome
        e["payload"] = payload
        if label:
            assert label not in self.labels, label
            self.labels[label] = len(self.lines)
        self.lines.append(e)
        return e

    def idx(self, label):
        return self.labels[label]

    def write(self, rel):
        path = os.path.join(ROOT, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            for line in self.lines:
                f.write(json.dumps(line, separators=(",", ":")) + "\n")


def append_payload(start, end, purpose, **kw):
    p = {"idempotency_key": kw.pop("key", None), "interval": [start, end],
         "cache_position": [start, end], "mask_key_length": end,
         "position_stage": "post_rope", "purpose": purpose}
    if p["idempotency_key"] is None:
        del p["idempotency_key"]
    p.update(kw)
    return p


INVALID = []


def invalid(concept, case, base_rel, description, seed_ref, patch, code):
    INVALID.append((concept, case, base_rel, description, seed_ref, patch, code))


def write_invalid():
    for concept, case, base_rel, description, seed_ref, patch, code in INVALID:
        d = os.path.join(ROOT, "invalid_fixtures/m5_1", concept)
        os.makedirs(d, exist_ok=True)
        base = os.path.relpath(os.path.join(ROOT, base_rel), d)
        doc = {"kind": "kvconform.invalid_fixture/1", "case": f"m5_1/{concept}/{case}",
               "description": description, "seed_ref": seed_ref, "base": base,
               "patch": [patch], "expected_code": code}
        with open(os.path.join(d, case + ".json"), "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")


def rep(path, value):
    return {"op": "replace", "path": path, "value": value}


# The framework release M5.1 0x01 ("Pinned Framework Source Contract") pins its source-to-tensor
# order to; the two-layer decode trace is that order's worked example (probe 91: the seed's pin
# appeared nowhere in the kit).
TRANSFORMERS_PIN = {
    "name": "huggingface/transformers", "release": "v4.57.0",
    "commit": "8ac2b916b042b1f78b75c9eb941c0f5d2cdd8e10",
    "files": [
        {"path": "src/transformers/cache_utils.py",
         "sha256": "f4e11caf14c75bdefa5e3003b93ef0e8b97fb6103375705ad944b0b344d7da8a"},
        {"path": "src/transformers/models/llama/modeling_llama.py",
         "sha256": "31bf660a663259134324bc65da4e155951dc89c5ca46471d2325a9938e859e26"},
    ]}


# ---------------------------------------------------------------- two-layer decode (0x01)
def two_layer_decode():
    rel = "fixtures/m5_1/lifecycle/two_layer_decode.jsonl"
    t = Trace([("engine-0", "semantic")],
              "M5.1 0x01 Worked Two-Layer Decode Trace and 'Prefill And Decode Use The Same Append "
              "Interface': T_past=0/T_new=4 prefill then T_past=4/T_new=1 decode through the same "
              "staged all-layer append; 64 pending bytes for the decode row (B=1, L=2, H_kv=2, "
              "d_h=4, fp16).", {"runtime_pin": TRANSFORMERS_PIN})
    R = "req-decode"
    t.ev("alloc", "engine-0", "request_allocate", {"prompt_length": 4}, R, 0, result=0)
    t.ev("p_start", "engine-0", "append_start",
         append_payload(0, 4, "prefill", pending_payload_bytes=256), R, 0, op="prefill", base=0)
    # staged_payload_bytes: one layer's K and V rows, B_layer_append = rows * 2 * 4 * (2 + 2)
    # (the seed's 32 bytes for the decode row; 128 for the 4 prompt rows).
    for l in range(2):
        t.ev(f"p_l{l}", "engine-0", "append_stage_layer",
             {"layer": l, "interval": [0, 4], "staged_payload_bytes": 128}, R, 0, op="prefill")
    t.ev("p_pub", "engine-0", "append_publish", {"committed_length": 4}, R, 0, op="prefill",
         base=0, result=1)
    t.ev("emit0", "engine-0", "output_emit", {"output_index": 0, "token": 42}, R, 0, base=1)
    t.ev("d_start", "engine-0", "append_start",
         append_payload(4, 5, "decode", input_token=42, pending_payload_bytes=64), R, 0,
         op="decode", base=1)
    t.ev("d_l0", "engine-0", "append_stage_layer",
         {"layer": 0, "interval": [4, 5], "staged_payload_bytes": 32}, R, 0, op="decode")
    t.ev("read_mid", "engine-0", "read", {"committed_length": 4, "layer_lengths": [4, 4]}, R, 0,
         base=1)
    t.ev("d_l1", "engine-0", "append_stage_layer",
         {"layer": 1, "interval": [4, 5], "staged_payload_bytes": 32}, R, 0, op="decode")
    t.ev("d_pub", "engine-0", "append_publish", {"committed_length": 5}, R, 0, op="decode",
         base=1, result=2)
    t.write(rel)
    s = "M5.1 0x01 Deriving The All-Layer Publication Invariant"
    c = "lifecycle"
    invalid(c, "decode_layer_incomplete", rel,
            "Layer 1 stages K but not V for the decode row; publication would expose a partial "
            "all-layer state.", s, {"op": "add", "path": f"/{t.idx('d_l1')}/payload/v", "value": False},
            "LIFECYCLE_LAYER_INCOMPLETE")
    invalid(c, "decode_layer_duplicate", rel,
            "The second stage of the decode row names layer 0 again (duplicate layer, layer 1 "
            "missing).", s, rep(f"/{t.idx('d_l1')}/payload/layer", 0), "LIFECYCLE_LAYER_DUPLICATE")
    invalid(c, "decode_layer_out_of_range", rel,
            "A stage names layer 2 of a two-layer cache ABI.", s,
            rep(f"/{t.idx('d_l1')}/payload/layer", 2), "LIFECYCLE_LAYER_OUT_OF_RANGE")
    invalid(c, "decode_layer_interval_mismatch", rel,
            "Layer 1 stages rows [5,6) for a transaction over [4,5).", s,
            rep(f"/{t.idx('d_l1')}/payload/interval", [5, 6]), "LIFECYCLE_LAYER_INTERVAL_MISMATCH")
    invalid(c, "decode_append_hole", rel,
            "The decode interval starts at 5 while the committed length is 4 (a hole).", s,
            rep(f"/{t.idx('d_start')}/payload/interval", [5, 6]), "LIFECYCLE_APPEND_HOLE")
    m = "M5.1 0x01 Cache Position, Attention Mask, And Append Ordering"
    invalid(c, "decode_cache_position_mismatch", rel,
            "cache_position [3,4) for the interval [4,5).", m,
            rep(f"/{t.idx('d_start')}/payload/cache_position", [3, 4]),
            "LIFECYCLE_POSITION_MISMATCH")
    invalid(c, "decode_mask_only_new_rows", rel,
            "The key-side mask covers only T_new = 1 instead of T_past + T_new = 5.", m,
            rep(f"/{t.idx('d_start')}/payload/mask_key_length", 1), "LIFECYCLE_MASK_LENGTH_MISMATCH")
    invalid(c, "decode_unterminated", rel,
            "The decode's publication is missing: the trace ends with the transaction open "
            "(0x07: each operation ends with exactly one publish or failure).", s,
            {"op": "remove", "path": f"/{t.idx('d_pub')}"}, "TRACE_OPERATION_UNTERMINATED")
    invalid(c, "decode_pre_rope_keys", rel,
            "Keys staged before RoPE under an ABI that stores post-RoPE keys.",
            "M5.1 0x01 One-Layer Tensor Trace, Then The Full Layer Chain",
            rep(f"/{t.idx('d_start')}/payload/position_stage", "pre_rope"),
            "LIFECYCLE_POSITION_STAGE_MISMATCH")
    invalid(c, "decode_cache_abi_drift", rel,
            "The decode transaction names another cache ABI.", s,
            {"op": "add", "path": f"/{t.idx('d_start')}/payload/cache_abi", "value": "abi-other"},
            "LIFECYCLE_CACHE_ABI_MISMATCH")
    invalid(c, "decode_pending_bytes_drift", rel,
            "The decode row claims 128 pending bytes; one row of the Loop 2 ABI is 64.",
            "M5.1 0x01 Worked Two-Layer Decode Trace",
            rep(f"/{t.idx('d_start')}/payload/pending_payload_bytes", 128), "TRACE_SNAPSHOT_MISMATCH")
    invalid(c, "decode_layer_bytes_count_all_layers", rel,
            "Layer 0's stage of the decode row claims 64 staged bytes, the all-layer figure; one "
            "layer's K and V rows are B_layer_append = 1 * 1 * 2 * 4 * (2 + 2) = 32 bytes.",
            "M5.1 0x01 Worked Two-Layer Decode Trace",
            rep(f"/{t.idx('d_l0')}/payload/staged_payload_bytes", 64), "TRACE_SNAPSHOT_MISMATCH")
    invalid(c, "partial_publication_visible", rel,
            "A reader between the layer-0 and layer-1 stages observes length 5: a partial "
            "publication became visible.", s, rep(f"/{t.idx('read_mid')}/payload/committed_length", 5),
            "TRACE_SNAPSHOT_MISMATCH")
    invalid(c, "torn_read", rel,
            "A reader between the layer-0 and layer-1 stages sees layer 0 at 5 rows and layer 1 "
            "at 4: a torn read of a partial publication (probe 72: a trace could not state it).",
            s, rep(f"/{t.idx('read_mid')}/payload/layer_lengths", [5, 4]), "LIFECYCLE_TORN_READ")
    invalid(c, "prompt_overrun", rel,
            "The request is allocated with a 3-token prompt, yet its prefill commits 4 prompt "
            "rows.", "M5.1 0x05 Phase Is A Projection, Not A Second Cache Truth",
            rep(f"/{t.idx('alloc')}/payload/prompt_length", 3), "SERVICE_PHASE_PROMPT_OVERRUN")
    invalid(c, "decode_empty_append", rel,
            "The decode transaction covers the empty interval [4,4).", s,
            rep(f"/{t.idx('d_start')}/payload/interval", [4, 4]), "LIFECYCLE_APPEND_EMPTY")
    # Outcomes (docs/trace-format.md "Outcomes"): each event type admits a fixed set; these
    # passed before 2026-12-03 (a stage "failure" was replayed as a success) or raised a second
    # code for the same root cause.
    o = "M5.1 0x07 Event Contracts At The Semantic Boundary"
    # (case, description, event label, outcome written on it)
    for case, description, label, outcome in [
        ("decode_layer_outcome_failure",
         "Layer 1's stage of the decode row is reported with outcome \"failure\": a stage "
         "succeeds or is refused; a failed append is append_failure (it was replayed as a "
         "success).", "d_l1", "failure"),
        ("decode_layer_reported_rejected",
         "Layer 1's legal stage is reported rejected. Pins the gating of an outcome the replay "
         "contradicts: the publication used to raise LIFECYCLE_LAYER_INCOMPLETE too.", "d_l1",
         "rejected"),
        ("decode_first_publish_replayed",
         "The decode row's first publication is reported as a replayed receipt. Pins that it is "
         "still replayed as the publication it was: FRONTIER_OUTPUT_BEFORE_LOGITS used to follow "
         "on the next output.", "d_pub", "replayed"),
        ("decode_start_replayed",
         "The decode transaction's first append_start is reported as replayed: only a retry "
         "replays.", "d_start", "replayed"),
        ("decode_emit_rejected",
         "The first output is reported rejected: recording an output is not an operation that "
         "can be refused (it was ignored).", "emit0", "rejected"),
    ]:
        invalid(c, case, rel, description, o,
                {"op": "add", "path": f"/{t.idx(label)}/outcome", "value": outcome},
                "TRACE_OUTCOME_INVALID")
    invalid(c, "decode_layer_generation_drift", rel,
            "Layer 1's stage names handle generation 1 of a generation-0 request. Pins the gating "
            "of the generation fence: the publication used to raise LIFECYCLE_LAYER_INCOMPLETE "
            "too.", "M5.1 0x07 Worked Failure, Retry, Fork, And Release Trace",
            rep(f"/{t.idx('d_l1')}/handle_generation", 1), "TRACE_HANDLE_GENERATION_MISMATCH")
    # Gating (docs/trace-format.md "Gating"): one-field mutations of events that later events
    # depend on; each raised two to eight codes before the checker gated dropped events.
    # (case, description, seed section, event label, member path, value, code)
    x, t_fmt = "M5.1 0x01 Deriving The All-Layer Publication Invariant", "kvconform.trace/1"
    for case, description, ref, label, path, value, code in [
        ("prefill_pre_rope_keys",
         "The prefill append stages keys before RoPE under an ABI that stores post-RoPE keys. Pins "
         "the gating of a refused append: the request's later events (output from snapshot 1, "
         "the decode append, the read) used to be judged against the snapshot the refused "
         "prefill never produced.",
         "M5.1 0x01 One-Layer Tensor Trace, Then The Full Layer Chain", "p_start",
         "payload/position_stage", "pre_rope", "LIFECYCLE_POSITION_STAGE_MISMATCH"),
        ("prefill_layer_interval_mismatch",
         "Layer 0 of the prefill stages [0,3) of the interval [0,4). Pins the gating of a refused "
         "stage: the publication and the request's later events used to raise five more codes.",
         x, "p_l0", "payload/interval", [0, 3], "LIFECYCLE_LAYER_INTERVAL_MISMATCH"),
        ("prefill_layer_not_integer",
         "Layer 0 of the prefill is named by the string \"0\". Pins the gating of an unreadable "
         "payload: the dropped stage used to leave the publication LIFECYCLE_LAYER_INCOMPLETE and "
         "the request's later events mismatched.",
         t_fmt, "p_l0", "payload/layer", "0", "INPUT_FIELD_TYPE"),
        ("prefill_event_type_misspelled",
         "The prefill's append_start is spelled 'append_strat'. Pins the gating of an unknown "
         "event type: the next line used to raise TRACE_SEQUENCE_GAP and the operation's layers "
         "LIFECYCLE_TXN_UNKNOWN.",
         t_fmt, "p_start", "event_type", "append_strat", "TRACE_EVENT_TYPE_UNKNOWN"),
        ("first_output_index_negative",
         "The first output's index is -1. Pins the gating of an unreadable payload: the decode "
         "append that followed used to raise FRONTIER_CACHE_OVERCOMMIT for the output the "
         "checker never saw.",
         t_fmt, "emit0", "payload/output_index", -1, "INPUT_VALUE_OUT_OF_RANGE"),
        ("prefill_pending_bytes_drift",
         "The prefill's append_start reports 257 pending payload bytes for 4 rows x 64 B/token. "
         "Pins the gating of an append the checker drops after admitting it: the request's later "
         "events used to be judged against the snapshot the dropped prefill never produced.",
         x, "p_start", "payload/pending_payload_bytes", 257, "TRACE_SNAPSHOT_MISMATCH"),
    ]:
        invalid(c, case, rel, description, ref, rep(f"/{t.idx(label)}/{path}", value), code)


# ---------------------------------------------------------------- synthetic lifecycle (0x01)
def synthetic_lifecycle():
    rel = "fixtures/m5_1/lifecycle/synthetic_lifecycle.jsonl"
    t = Trace([("engine-0", "semantic"), ("alloc-0", "allocator")],
              "M5.1 0x01 Worked Synthetic Lifecycle Trace: txn-win/txn-lose on generation 1, "
              "retry receipt, fork into A and B, coupled reorder, truncate A to 3, cancel B with "
              "a partially staged transaction, and the slot-17 ABA race failing on generation.")
    E = "engine-0"
    H = "H"
    t.ev("alloc", E, "request_allocate", {"prompt_length": 4}, H, 0, result=0)
    t.ev(None, E, "append_start", append_payload(0, 4, "prefill"), H, 0, op="prefill", base=0)
    for l in range(2):
        t.ev(None, E, "append_stage_layer", {"layer": l, "interval": [0, 4]}, H, 0, op="prefill")
    t.ev("prefill_pub", E, "append_publish", {"committed_length": 4}, H, 0, op="prefill", base=0,
         result=1)
    t.ev(None, E, "output_emit", {"output_index": 0, "token": 100}, H, 0, base=1)
    # 1. Two transactions capture generation 1 (snapshot 1).
    t.ev("win_start", E, "append_start",
         append_payload(4, 5, "decode", key="k-win", input_token=100), H, 0, op="txn-win", base=1)
    t.ev("lose_start", E, "append_start",
         append_payload(4, 5, "decode", key="k-lose", input_token=100), H, 0, op="txn-lose", base=1)
    t.ev(None, E, "append_stage_layer", {"layer": 0, "interval": [4, 5]}, H, 0, op="txn-win")
    t.ev("read_mid", E, "read", {"committed_length": 4}, H, 0, base=1)
    t.ev(None, E, "append_stage_layer", {"layer": 1, "interval": [4, 5]}, H, 0, op="txn-win")
    t.ev("win_pub", E, "append_publish", {"committed_length": 5}, H, 0, op="txn-win", base=1,
         result=2)
    # 2. Retry of txn-win returns its generation-2 receipt; txn-lose is stale.
    t.ev("win_retry", E, "append_start",
         append_payload(4, 5, "decode", key="k-win", input_token=100), H, 0, op="txn-win", base=1)
    t.ev("win_replay", E, "append_publish", {}, H, 0, op="txn-win", base=1, result=2,
         outcome="replayed")
    t.ev(None, E, "append_stage_layer", {"layer": 0, "interval": [4, 5]}, H, 0, op="txn-lose")
    t.ev(None, E, "append_stage_layer", {"layer": 1, "interval": [4, 5]}, H, 0, op="txn-lose")
    t.ev("lose_pub", E, "append_publish", {}, H, 0, op="txn-lose",
         base=1, outcome="rejected")
    # 3. Fork into A and B at 5; coupled reorder; A truncates to 3; B cancels (after step 4's
    # partially staged transaction).
    t.ev("fork", E, "fork", {"prefix_length": 5, "children": [{"request_id": "A"},
                                                               {"request_id": "B"}]},
         H, 0, base=2, result=0)
    rows = [{"request_id": "A", "token_state": "beam-a", "next_position": 5,
             "sampler_state": "rng-a"},
            {"request_id": "B", "token_state": "beam-b", "next_position": 5,
             "sampler_state": "rng-b"}]
    t.ev("reorder", E, "reorder", {"rows_before": rows, "parent_index": [1, 0],
                                   "rows_after": [rows[1], rows[0]]})
    t.ev("truncate_a", E, "truncate", {"new_length": 3}, "A", 0, base=0, result=1)
    t.ev("release_a_refused", E, "release", {}, "A", 0, base=1, outcome="rejected")
    # 4. Child B stages one layer; cancellation aborts it; late completion/publication rejected.
    t.ev(None, E, "output_emit", {"output_index": 1, "token": 201}, "B", 0, base=0)
    t.ev("b_start", E, "append_start", append_payload(5, 6, "decode", input_token=201), "B", 0,
         op="b-txn", base=0)
    t.ev("b_stage", E, "append_stage_layer", {"layer": 0, "interval": [5, 6]}, "B", 0, op="b-txn")
    t.ev("cancel_b", E, "cancel_request", {}, "B", 0, base=0, result=0)
    t.ev("b_late_stage", E, "append_stage_layer", {"layer": 1, "interval": [5, 6]}, "B", 0,
         op="b-txn", outcome="rejected")
    t.ev("b_late_pub", E, "append_publish", {}, "B", 0, op="b-txn", base=0, outcome="rejected")
    # 5. A prepared parent append; finish (generation 3) and release (generation 4) win; slot 17,
    # observed under H at generation 2, is observed under J; the delayed publication fails on
    # generation, not address. (The trace's snapshot numbers are 0x07 versions: finish keeps
    # version 2 and release makes 3; generations 3 and 4 are KvObject's, kv_object_test.cc.)
    t.ev(None, E, "output_emit", {"output_index": 1, "token": 102}, H, 0, base=2)
    t.ev("x_start", E, "append_start", append_payload(5, 6, "decode", input_token=102), H, 0,
         op="x-delayed", base=2)
    t.ev(None, E, "append_stage_layer", {"layer": 0, "interval": [5, 6]}, H, 0, op="x-delayed")
    t.ev(None, E, "append_stage_layer", {"layer": 1, "interval": [5, 6]}, H, 0, op="x-delayed")
    # The allocator shows H at generation 2 (observed after the generation-2 receipt) holding
    # slot 17, the address x-delayed writes into, so that J's slot 17 below is the seed's A-B-A
    # shape, not just a late publication (probe 30: the trace never showed H at slot 17).
    t.ev("slot17_h", "alloc-0", "allocator_observation",
         {"caused_by_event_id": t.lines[t.idx("win_replay")]["event_id"], "blocks": 1, "slots": 8,
          "used_slots": 5, "slot_ids": [17]}, H, 0)
    t.ev("finish_h", E, "finish", {"committed_length": 5, "emitted_outputs": 2}, H, 0, base=2,
         result=2)
    t.ev("release_h", E, "release", {"committed_length": 0, "result_handle_generation": 1}, H, 0,
         base=2, result=3)
    t.ev("alloc_j", E, "request_allocate", {"prompt_length": 8}, "J", 0, result=0)
    t.ev("slot17", "alloc-0", "allocator_observation",
         {"caused_by_event_id": t.lines[t.idx("alloc_j")]["event_id"], "blocks": 1, "slots": 1,
          "used_slots": 0, "slot_ids": [17]}, "J", 0)
    t.ev("x_pub", E, "append_publish", {}, H, 0, op="x-delayed", base=2, outcome="rejected")
    t.ev("read_released", E, "read", {"committed_length": 0}, H, 0, outcome="rejected")
    t.write(rel)

    s = "M5.1 0x01 Worked Synthetic Lifecycle Trace"
    c = "lifecycle"
    invalid(c, "stale_base", rel, "The delayed parent append reads snapshot 1 although 2 is live.",
            s, rep(f"/{t.idx('x_start')}/base_snapshot", 1), "LIFECYCLE_STALE_BASE")
    invalid(c, "unknown_snapshot", rel, "The delayed parent append names snapshot 9, never published.",
            s, rep(f"/{t.idx('x_start')}/base_snapshot", 9), "LIFECYCLE_UNKNOWN_SNAPSHOT")
    invalid(c, "append_hole", rel,
            "The delayed parent append's interval starts at 6, leaving position 5 empty.", s,
            rep(f"/{t.idx('x_start')}/payload/interval", [6, 7]), "LIFECYCLE_APPEND_HOLE")
    invalid(c, "reorder_not_bijective", rel,
            "Beam reorder selects parent 1 twice: selection plus fork, not a reorder.", s,
            rep(f"/{t.idx('reorder')}/payload/parent_index", [1, 1]),
            "LIFECYCLE_REORDER_NOT_BIJECTIVE")
    invalid(c, "reorder_split_sampler_state", rel,
            "After the swap, row 0 carries B's cache but A's sampler state.", s,
            rep(f"/{t.idx('reorder')}/payload/rows_after/0/sampler_state", "rng-a"),
            "LIFECYCLE_REORDER_SPLIT_STATE")
    invalid(c, "reorder_split_cache_handle", rel,
            "After the swap, row 1 carries A's token state but B's cache handle.", s,
            rep(f"/{t.idx('reorder')}/payload/rows_after/1/request_id", "B"),
            "LIFECYCLE_REORDER_SPLIT_STATE")
    invalid(c, "reorder_split_token_state", rel,
            "After the swap, row 0 carries B's cache, position and sampler but A's token state.",
            s, rep(f"/{t.idx('reorder')}/payload/rows_after/0/token_state", "beam-a"),
            "LIFECYCLE_REORDER_SPLIT_STATE")
    invalid(c, "reorder_split_next_position", rel,
            "After the swap, row 1's next position does not move with its row (6, not A's 5).", s,
            rep(f"/{t.idx('reorder')}/payload/rows_after/1/next_position", 6),
            "LIFECYCLE_REORDER_SPLIT_STATE")
    invalid(c, "fork_beyond_prefix", rel, "The fork claims prefix 6 of a length-5 parent.", s,
            rep(f"/{t.idx('fork')}/payload/prefix_length", 6), "LIFECYCLE_FORK_BEYOND_PREFIX")
    invalid(c, "truncate_growth", rel, "Child A 'truncates' to 6, beyond its committed 5.", s,
            rep(f"/{t.idx('truncate_a')}/payload/new_length", 6), "LIFECYCLE_TRUNCATE_GROWTH")
    invalid(c, "release_before_finish", rel,
            "The runtime's refused release of live child A (neither finished nor cancelled) is "
            "reported as a success.", s,
            rep(f"/{t.idx('release_a_refused')}/outcome", "success"), "LIFECYCLE_RELEASE_LIVE")
    invalid(c, "retry_key_changed", rel,
            "The retry of txn-win re-sends it under another idempotency key.", s,
            rep(f"/{t.idx('win_retry')}/payload/idempotency_key", "k-other"),
            "LIFECYCLE_RETRY_CONFLICT")
    invalid(c, "retry_interval_changed", rel,
            "The retry of txn-win re-sends it with a wider interval.", s,
            rep(f"/{t.idx('win_retry')}/payload/interval", [4, 6]), "LIFECYCLE_RETRY_CONFLICT")
    invalid(c, "retry_base_changed", rel,
            "The retry of txn-win re-sends it on base snapshot 2 instead of the base it read: the "
            "seed's conflict names a changed key, interval or base.", s,
            rep(f"/{t.idx('win_retry')}/base_snapshot", 2), "LIFECYCLE_RETRY_CONFLICT")
    invalid(c, "retry_purpose_changed", rel,
            "The retry of txn-win re-sends the decode as a repair: the fingerprint matches, the "
            "call does not (a retry re-sends the same call; it used to pass).", s,
            rep(f"/{t.idx('win_retry')}/payload/purpose", "repair"), "LIFECYCLE_RETRY_CONFLICT")
    invalid(c, "retry_mask_length_changed", rel,
            "The retry of txn-win re-sends it with a key-side mask of 6 instead of T_past + T_new = 5: "
            "the fingerprint matches, the position binding does not (a retry used to pass).", s,
            rep(f"/{t.idx('win_retry')}/payload/mask_key_length", 6),
            "LIFECYCLE_MASK_LENGTH_MISMATCH")
    invalid(c, "retry_input_token_changed", rel,
            "The retry of txn-win (after its publication) claims input token 101; the original "
            "processed 100: a retry re-sends the same call (the fingerprint does not cover "
            "tokens, so it used to pass).", s,
            rep(f"/{t.idx('win_retry')}/payload/input_token", 101), "FRONTIER_TOKEN_MISMATCH")
    invalid(c, "retry_advances_generation", rel,
            "The retry of txn-win is reported as a new publication instead of the original "
            "receipt.", s, rep(f"/{t.idx('win_replay')}/outcome", "success"), "TRACE_OUTCOME_INVALID")
    invalid(c, "stale_publication_accepted", rel,
            "txn-lose's publication on the stale generation 1 is reported as a success.", s,
            rep(f"/{t.idx('lose_pub')}/outcome", "success"), "LIFECYCLE_STALE_BASE")
    invalid(c, "lost_publication_base_drift", rel,
            "txn-lose's refused publication names base snapshot 2 instead of the snapshot 1 its "
            "append_start read: a publish closes its own transaction, whatever the outcome (a "
            "refused publish's base used to go unchecked).", s,
            rep(f"/{t.idx('lose_pub')}/base_snapshot", 2), "TRACE_SNAPSHOT_MISMATCH")
    invalid(c, "refused_release_base_ahead", rel,
            "A's refused release names base snapshot 2; A has reached only snapshot 1. A refused "
            "operation may name a stale base, never one the handle has not reached (it used to "
            "pass, since the refusal was expected either way).", s,
            rep(f"/{t.idx('release_a_refused')}/base_snapshot", 2), "TRACE_SNAPSHOT_MISMATCH")
    invalid(c, "late_redelivery_after_release", rel,
            "H's request_allocate is delivered again at the end of the trace, long after H's "
            "release: the checker no longer holds H's events (memory follows live handles), so "
            "the redelivery is a sequence regression, and it is not replayed (it used to raise "
            "LIFECYCLE_HANDLE_EXISTS too).", "M5.1 0x07 Runtime Observability Failure Lab",
            {"op": "add", "path": "/-", "value": t.lines[t.idx("alloc")]},
            "TRACE_SEQUENCE_REGRESSION")
    invalid(c, "stage_names_other_request", rel,
            "Child B's stage of b-txn names request A: an operation's events name the request "
            "whose append_start opened it (it passed: the stage was judged by its operation id).",
            "M5.1 0x07 Event Contracts At The Semantic Boundary",
            rep(f"/{t.idx('b_stage')}/request_id", "A"), "TRACE_OPERATION_REQUEST_MISMATCH")
    invalid(c, "reorder_reported_rejected", rel,
            "The beam reorder is reported rejected although its rows are judged as applied: a "
            "reorder's only outcome is success (it was ignored).",
            "M5.1 0x07 Event Contracts At The Semantic Boundary",
            {"op": "add", "path": f"/{t.idx('reorder')}/outcome", "value": "rejected"},
            "TRACE_OUTCOME_INVALID")
    invalid(c, "late_layer_completion", rel,
            "Child B's late layer-1 completion after cancellation is accepted.", s,
            rep(f"/{t.idx('b_late_stage')}/outcome", "success"), "LIFECYCLE_LATE_COMPLETION")
    invalid(c, "late_publication", rel,
            "Child B's aborted transaction is reported as published.", s,
            rep(f"/{t.idx('b_late_pub')}/outcome", "success"), "LIFECYCLE_LATE_COMPLETION")
    invalid(c, "aba_slot17_publication", rel,
            "The delayed parent append publishes after finish and release (slot 17 reused by J): "
            "it must fail on generation, not address.",
            "M5.1 0x01 Why Generation Fencing Prevents The ABA Mistake",
            rep(f"/{t.idx('x_pub')}/outcome", "success"), "LIFECYCLE_STALE_BASE")
    invalid(c, "released_handle_read", rel, "A read of released H succeeds.", s,
            rep(f"/{t.idx('read_released')}/outcome", "success"), "LIFECYCLE_HANDLE_RELEASED")
    invalid(c, "orphan_publication", rel,
            "The retry's receipt names operation txn-ghost, which no append_start opened: a "
            "publish with no start.", "M5.1 0x07 Runtime Observability Failure Lab",
            rep(f"/{t.idx('win_replay')}/operation_id", "txn-ghost"), "LIFECYCLE_TXN_UNKNOWN")
    invalid(c, "fork_alias", rel,
            "The fork lists child A a second time: two children alias one handle instead of "
            "owning independent snapshots.", s,
            {"op": "add", "path": f"/{t.idx('fork')}/payload/children/-", "value": {"request_id": "A"}},
            "LIFECYCLE_FORK_ALIAS")
    invalid(c, "fork_children_unreadable", rel,
            "The fork names its children by a string instead of an array. Pins the gating of a fork "
            "whose children cannot be read: A's and B's events used to raise "
            "LIFECYCLE_UNKNOWN_HANDLE as well.", s,
            rep(f"/{t.idx('fork')}/payload/children", "A"), "INPUT_FIELD_TYPE")
    invalid(c, "fork_child_generation", rel, "Fork child A claims handle generation 1.", s,
            {"op": "add", "path": f"/{t.idx('fork')}/payload/children/0/handle_generation",
             "value": 1}, "TRACE_SNAPSHOT_MISMATCH")
    last = t.lines[t.idx("read_released")]
    invalid("frontier", "emit_after_truncate_into_prompt", rel,
            "Child A, truncated to 3 rows (one row into H's 4-row prompt), emits output 0 at the "
            "end of the trace without prefilling the prompt's last row again: no publication has "
            "produced the logits output 0 is selected from (it passed: a truncate into the "
            "prompt stopped the frontier checks).",
            "M5.1 0x01 Fork, Reorder, And Truncate Are Different Operations",
            {"op": "add", "path": "/-", "value": {
                "event_id": f"{E}:{last['local_sequence'] + 1}", "trace_id": "trace-1",
                "source_instance": E, "source_component": "semantic",
                "local_sequence": last["local_sequence"] + 1,
                "monotonic_ns": last["monotonic_ns"] + 1000, "event_type": "output_emit",
                "request_id": "A", "handle_generation": 0, "operation_id": None,
                "base_snapshot": 1, "result_snapshot": None,
                "payload": {"output_index": 0, "token": 300}}},
            "FRONTIER_OUTPUT_BEFORE_LOGITS")


# ---------------------------------------------------------------- ordinary stop + repair (0x03/0x09)
def ordinary_stop_repair():
    rel = "fixtures/m5_1/frontier/ordinary_stop_repair.jsonl"
    t = Trace([("engine-0", "semantic"), ("frontend-0", "semantic")],
              "M5.1 0x03 'Output Progress And Cache Progress Are Different Counters' (P=4, G=3) and "
              "0x09 'Final Output And Cache State Are Different Frontiers': ordinary stop leaves "
              "O = G_in + 1 = 3 and K_c = S + G_in = 6; the repair append processes y2, publishes "
              "one row per layer (K_c = 7) and discards its logits.")
    E, F, R = "engine-0", "frontend-0", "req-stop"
    t.ev("alloc", E, "request_allocate", {"prompt_length": 4}, R, 0, result=0)
    t.ev(None, E, "append_start", append_payload(0, 4, "prefill"), R, 0, op="prefill", base=0)
    for l in range(2):
        t.ev(None, E, "append_stage_layer", {"layer": l, "interval": [0, 4]}, R, 0, op="prefill")
    t.ev(None, E, "append_publish", {"committed_length": 4}, R, 0, op="prefill", base=0, result=1)
    toks = [501, 502, 503]
    t.ev("emit0", F, "output_emit", {"output_index": 0, "token": toks[0]}, R, 0, base=1)
    for g in (1, 2):
        T = 3 + g
        t.ev(f"dec{g}_start", E, "append_start",
             append_payload(T, T + 1, "decode", input_token=toks[g - 1]), R, 0, op=f"decode-{g}",
             base=g)
        for l in range(2):
            t.ev(None, E, "append_stage_layer", {"layer": l, "interval": [T, T + 1]}, R, 0,
                 op=f"decode-{g}")
        t.ev(f"dec{g}_pub", E, "append_publish", {"committed_length": T + 1}, R, 0,
             op=f"decode-{g}", base=g, result=g + 1)
        t.ev(f"emit{g}", F, "output_emit", {"output_index": g, "token": toks[g]}, R, 0, base=g + 1)
    t.ev("finish", E, "finish", {"committed_length": 6, "emitted_outputs": 3}, R, 0, base=3,
         result=3)
    t.ev("repair_start", E, "append_start",
         append_payload(6, 7, "repair", input_token=toks[2]), R, 0, op="repair", base=3)
    for l in range(2):
        t.ev(f"repair_l{l}", E, "append_stage_layer", {"layer": l, "interval": [6, 7]}, R, 0,
             op="repair")
    t.ev("repair_pub", E, "append_publish", {"committed_length": 7}, R, 0, op="repair", base=3,
         result=4)
    t.write(rel)
    s = "M5.1 0x09 Final Output And Cache State Are Different Frontiers"
    c = "frontier"
    invalid(c, "finish_cache_equals_outputs", rel,
            "finish claims K_c = S + O = 7 without the repair call: invented state.", s,
            rep(f"/{t.idx('finish')}/payload/committed_length", 7), "FRONTIER_CACHE_OVERCOMMIT")
    invalid(c, "repair_emits_output", rel,
            "The repair call's logits are emitted as a fourth user token.", s,
            {"op": "add", "path": "/-", "value": {
                "event_id": "frontend-0:3", "trace_id": "trace-1", "source_instance": "frontend-0",
                "source_component": "semantic", "local_sequence": 3, "monotonic_ns": 1_100_000,
                "event_type": "output_emit", "request_id": "req-stop", "handle_generation": 0,
                "operation_id": None, "base_snapshot": 4, "result_snapshot": None,
                "payload": {"output_index": 3, "token": 504, "from": "repair_logits"}}},
            "FRONTIER_REPAIR_EMITS_OUTPUT")
    invalid(c, "decode_after_finish", rel,
            "The append after finish is labelled a decode: a finished request takes no further "
            "decode (only the repair of its final token).", s,
            rep(f"/{t.idx('repair_start')}/payload/purpose", "decode"), "LIFECYCLE_HANDLE_TERMINAL")
    invalid(c, "repair_wrong_token", rel,
            "The repair processes y1 instead of the unprocessed frontier token y2.", s,
            rep(f"/{t.idx('repair_start')}/payload/input_token", toks[1]), "FRONTIER_TOKEN_MISMATCH")
    o = "M5.1 0x03 Output Progress And Cache Progress Are Different Counters"
    invalid(c, "decode_wrong_token", rel,
            "decode-2 processes y0 instead of the frontier token y1.", o,
            rep(f"/{t.idx('dec2_start')}/payload/input_token", toks[0]), "FRONTIER_TOKEN_MISMATCH")
    invalid(c, "output_before_logits", rel,
            "decode-2 is labelled a repair: its logits are discarded, so y2 is emitted with no "
            "target logits selected for it.",
            "M5.1 0x05 Phase Is A Projection, Not A Second Cache Truth",
            rep(f"/{t.idx('dec2_start')}/payload/purpose", "repair"), "FRONTIER_OUTPUT_BEFORE_LOGITS")
    invalid(c, "output_index_gap", rel, "The second output is numbered 2.",
            "M5.1 0x05 Phase Is A Projection, Not A Second Cache Truth",
            rep(f"/{t.idx('emit1')}/payload/output_index", 2), "FRONTIER_OUTPUT_INDEX_GAP")
    invalid(c, "finish_output_count_drift", rel, "finish reports 4 emitted outputs.", o,
            rep(f"/{t.idx('finish')}/payload/emitted_outputs", 4), "TRACE_SNAPSHOT_MISMATCH")
    invalid(c, "output_snapshot_drift", rel,
            "y1 claims to be selected from snapshot 1 although decode-1 published snapshot 2.", o,
            rep(f"/{t.idx('emit1')}/base_snapshot", 1), "TRACE_SNAPSHOT_MISMATCH")
    # Gating: the first output breaches the frontier; the decode append after it must not
    # raise a second code.
    invalid(c, "prompt_longer_than_prefill", rel,
            "The request declares a 5-token prompt; the prefill covers 4 rows. Pins the gating of an output breach: the decode append after the first output used to raise SERVICE_PHASE_DECODE_BEFORE_PREFILL as well.",
            "M5.1 0x05 Phase Is A Projection, Not A Second Cache Truth",
            rep(f"/{t.idx('alloc')}/payload/prompt_length", 5), "FRONTIER_OUTPUT_BEFORE_LOGITS")


# ---------------------------------------------------------------- speculative correction (0x03/0x09)
def speculative():
    rel = "fixtures/m5_1/frontier/speculative_correction.jsonl"
    t = Trace([("engine-0", "semantic")],
              "M5.1 0x03 'Boundary Consumed By Speculative Correction' and 0x09 'Rejected Suffixes "
              "Stop At The Commit Frontier': base cache 100, drafts [d0..d3], d0 and d1 accepted, "
              "correction c2 emitted: +3 outputs, +2 rows (K = 102); the correction's own target "
              "append brings K to 103.")
    E, R = "engine-0", "req-spec"
    t.ev(None, E, "request_allocate", {"prompt_length": 99}, R, 0, result=0)
    t.ev(None, E, "append_start", append_payload(0, 99, "prefill"), R, 0, op="prefill", base=0)
    for l in range(2):
        t.ev(None, E, "append_stage_layer", {"layer": l, "interval": [0, 99]}, R, 0, op="prefill")
    t.ev(None, E, "append_publish", {"committed_length": 99}, R, 0, op="prefill", base=0, result=1)
    t.ev(None, E, "output_emit", {"output_index": 0, "token": 700}, R, 0, base=1)
    t.ev(None, E, "append_start", append_payload(99, 100, "decode", input_token=700), R, 0,
         op="decode-0", base=1)
    for l in range(2):
        t.ev(None, E, "append_stage_layer", {"layer": l, "interval": [99, 100]}, R, 0, op="decode-0")
    t.ev("base100", E, "append_publish", {"committed_length": 100}, R, 0, op="decode-0", base=1,
         result=2)
    drafts = [801, 802, 803, 804]
    t.ev("verify", E, "append_start",
         append_payload(100, 102, "verify", draft_tokens=drafts, accepted_count=2), R, 0,
         op="verify", base=2)
    for l in range(2):
        t.ev(None, E, "append_stage_layer", {"layer": l, "interval": [100, 102]}, R, 0, op="verify")
    t.ev("verify_pub", E, "append_publish", {"committed_length": 102}, R, 0, op="verify", base=2,
         result=3)
    t.ev("emit_d0", E, "output_emit", {"output_index": 1, "token": drafts[0]}, R, 0, base=3)
    t.ev("emit_d1", E, "output_emit", {"output_index": 2, "token": drafts[1]}, R, 0, base=3)
    t.ev("emit_c2", E, "output_emit", {"output_index": 3, "token": 902}, R, 0, base=3)
    t.ev("repair", E, "append_start", append_payload(102, 103, "repair", input_token=902), R, 0,
         op="correction", base=3)
    for l in range(2):
        t.ev(None, E, "append_stage_layer", {"layer": l, "interval": [102, 103]}, R, 0,
             op="correction")
    t.ev("repair_pub", E, "append_publish", {"committed_length": 103}, R, 0, op="correction",
         base=3, result=4)
    t.write(rel)
    s = "M5.1 0x09 Rejected Suffixes Stop At The Commit Frontier"
    c = "frontier"
    invalid(c, "rejected_draft_row_committed", rel,
            "Only d0 is accepted, yet verification commits two rows: the rejected d1 row crosses "
            "the commit frontier.", s,
            rep(f"/{t.idx('verify')}/payload/accepted_count", 1), "FRONTIER_REJECTED_ROW_COMMITTED")
    invalid(c, "decode_without_frontier", rel,
            "The verification call is labelled an ordinary decode although no emitted token is "
            "unprocessed: it would commit rows for tokens never emitted.",
            "M5.1 0x03 Output Progress And Cache Progress Are Different Counters",
            rep(f"/{t.idx('verify')}/payload/purpose", "decode"), "FRONTIER_CACHE_OVERCOMMIT")
    invalid(c, "rejected_row_relabelled_as_correction", rel,
            "The correction's K/V is the row computed for rejected draft d2.", s,
            {"op": "add", "path": f"/{t.idx('repair')}/payload/reused_draft_index", "value": 2},
            "FRONTIER_REJECTED_ROW_RELABELED")
    invalid(c, "accepted_exceeds_draft", rel, "Five drafts accepted out of four.",
            "M5.1 0x03 Boundary Consumed By Speculative Correction",
            rep(f"/{t.idx('verify')}/payload/accepted_count", 5), "FRONTIER_ACCEPTED_EXCEEDS_DRAFT")
    invalid(c, "accepted_output_token_swapped", rel,
            "The second accepted output is not the committed draft d1.", s,
            rep(f"/{t.idx('emit_d1')}/payload/token", 803), "FRONTIER_TOKEN_MISMATCH")
    invalid(c, "verify_cache_counter_drift", rel,
            "The verification publication reports K = 103 (the correction counted as committed).", s,
            rep(f"/{t.idx('verify_pub')}/payload/committed_length", 103), "TRACE_SNAPSHOT_MISMATCH")


# ---------------------------------------------------------------- verification through the frontier (0x03/0x09)
def speculative_frontier_verify():
    rel = "fixtures/m5_1/frontier/speculative_frontier_verify.jsonl"
    t = Trace([("engine-0", "semantic")],
              "M5.1 0x03 'Boundary Consumed By Speculative Correction' (a correction or bonus "
              "token must pass through a valid target append path) and 0x09 'Rejected Suffixes "
              "Stop At The Commit Frontier': after prefill (T=4) and y0, one target verification "
              "call processes the unprocessed frontier token y0 with drafts [d0,d1,d2]; d0 is "
              "accepted, so exactly 1 + 1 = 2 rows cross the commit frontier (T=6) and the "
              "correction c1 is emitted as the new frontier.")
    E, R = "engine-0", "req-verify"
    t.ev(None, E, "request_allocate", {"prompt_length": 4}, R, 0, result=0)
    t.ev(None, E, "append_start", append_payload(0, 4, "prefill"), R, 0, op="prefill", base=0)
    for l in range(2):
        t.ev(None, E, "append_stage_layer", {"layer": l, "interval": [0, 4]}, R, 0, op="prefill")
    t.ev(None, E, "append_publish", {"committed_length": 4}, R, 0, op="prefill", base=0, result=1)
    t.ev(None, E, "output_emit", {"output_index": 0, "token": 600}, R, 0, base=1)
    drafts = [601, 602, 603]
    t.ev("verify", E, "append_start",
         append_payload(4, 6, "verify", input_token=600, draft_tokens=drafts, accepted_count=1,
                        pending_payload_bytes=128), R, 0, op="verify", base=1)
    for l in range(2):
        t.ev(None, E, "append_stage_layer", {"layer": l, "interval": [4, 6]}, R, 0, op="verify")
    t.ev(None, E, "append_publish", {"committed_length": 6}, R, 0, op="verify", base=1, result=2)
    t.ev(None, E, "output_emit", {"output_index": 1, "token": drafts[0]}, R, 0, base=2)
    t.ev(None, E, "output_emit", {"output_index": 2, "token": 612}, R, 0, base=2)
    t.ev(None, E, "finish", {"committed_length": 6, "emitted_outputs": 3}, R, 0, base=2, result=2)
    t.ev(None, E, "release", {"committed_length": 0, "result_handle_generation": 1}, R, 0, base=2,
         result=3)
    t.write(rel)
    c = "frontier"
    invalid(c, "multi_row_decode_overcommit", rel,
            "The two-row call is labelled an ordinary decode: a decode processes exactly the one "
            "frontier token, so the second row is a token that was never emitted.",
            "M5.1 0x03 Output Progress And Cache Progress Are Different Counters",
            rep(f"/{t.idx('verify')}/payload/purpose", "decode"), "FRONTIER_CACHE_OVERCOMMIT")
    invalid(c, "repair_row_count", rel,
            "The two-row call is labelled a repair: a repair publishes exactly one row per layer "
            "(the frontier token's).", "M5.1 0x09 Final Output And Cache State Are Different Frontiers",
            rep(f"/{t.idx('verify')}/payload/purpose", "repair"), "FRONTIER_REPAIR_ROW_COUNT")


# ---------------------------------------------------------------- cancellation before the first output (0x01/0x05)
def cancel_before_first_output():
    rel = "fixtures/m5_1/lifecycle/cancel_before_first_output.jsonl"
    t = Trace([("engine-0", "semantic")],
              "M5.1 0x01 'Cancellation, Retry, And Release Races' with the 0x05 partial-prefill "
              "publication: a 4-token prompt publishes its first chunk [0,2) (snapshot 1), the "
              "client cancels before any output (CANCELLED keeps snapshot 1, T=2), and release "
              "fences generation 1 (snapshot 2, T=0).")
    E, R = "engine-0", "req-cancel"
    t.ev(None, E, "request_allocate", {"prompt_length": 4}, R, 0, result=0)
    t.ev(None, E, "append_start", append_payload(0, 2, "prefill", pending_payload_bytes=128), R, 0,
         op="chunk-1", base=0)
    for l in range(2):
        t.ev(None, E, "append_stage_layer", {"layer": l, "interval": [0, 2]}, R, 0, op="chunk-1")
    t.ev(None, E, "append_publish", {"committed_length": 2}, R, 0, op="chunk-1", base=0, result=1)
    t.ev(None, E, "read", {"committed_length": 2}, R, 0, base=1)
    t.ev("cancel", E, "cancel_request", {}, R, 0, base=1, result=1)
    t.ev(None, E, "release", {"committed_length": 0, "result_handle_generation": 1}, R, 0, base=1,
         result=2)
    t.write(rel)
    invalid("lifecycle", "early_finish", rel,
            "The cancellation is reported as a finish: a request finishes before its prompt is "
            "processed and before any output was selected.",
            "M5.1 0x05 Phase Is A Projection, Not A Second Cache Truth",
            rep(f"/{t.idx('cancel')}/event_type", "finish"), "SERVICE_PHASE_EARLY_FINISH")


# ---------------------------------------------------------------- Loop 8 observability (0x07)
# The runtime the 0x07 mapping is pinned to ("Pinning One Runtime Before Mapping It").
RUNTIME_PIN = {
    "name": "vllm", "release": "v0.23.0", "commit": "0fc695fc6d1d82e9a5ac6835ac8e4e1c83703665",
    "checked_on": "2026-07-27",
    "files": [{"path": p, "sha256": d} for p, d in [
        ("vllm/v1/request.py", "4b97f41fc0ea474149f78d52a44ce89c16a9921c0641c48ad2573bdb8b7f71a4"),
        ("vllm/v1/engine/__init__.py",
         "6eb1175dd76d5099dd4b6297d12c682f13ca42e297968983bc433894c1b82245"),
        ("vllm/v1/core/sched/scheduler.py",
         "9ae1491f57a6294e32416b93ef2ea68107fa0d65c3a4d7f745f1261012f735e9"),
        ("vllm/v1/core/kv_cache_manager.py",
         "a69aa08062714b40b149648bbec031a42d22e422fbf9543cd10fbd12d2496edb"),
        ("vllm/v1/metrics/loggers.py",
         "ce2a0535d2b2b69e4368f34b692dac081be764e8d0eadab4f791b1afdcf43df4"),
        ("vllm/tracing/utils.py", "2463b04ccfa8fc97d5cdb423accf50bb601c422322e72e241ccc0b1b2610305d"),
        ("docs/design/metrics.md", "5d5b8bab2b6d1e36a9ade2ed5974011dddbf7695dee4a59b9113870fd8339d72"),
    ]]}
# Bounded metric families ("Audit Stream, Traces, Metrics, And Logs"): the seed's append-outcome
# counter, an attempts/failures pair (the denominator beside the error count), running and KV-usage
# gauges, and a TTFT histogram. No identity label.
BOUNDED = ["model_name", "engine"]
METRICS = [
    {"name": "cache_append_outcomes_total", "type": "counter",
     "labels": BOUNDED + ["event_type", "outcome"]},
    {"name": "cache_append_attempts_total", "type": "counter", "labels": BOUNDED},
    {"name": "cache_append_failures_total", "type": "counter", "labels": BOUNDED,
     "counts": "failures", "denominator": "cache_append_attempts_total"},
    {"name": "num_requests_running", "type": "gauge", "labels": BOUNDED},
    {"name": "kv_cache_usage_ratio", "type": "gauge", "labels": BOUNDED},
    {"name": "time_to_first_token_seconds", "type": "histogram", "labels": BOUNDED},
]
LOOP8_HEADER = {
    "runtime_pin": RUNTIME_PIN, "metrics": METRICS, "trace_identity": "required",
    "expected_final_states": [
        {"request_id": "R", "handle_generation": 8, "snapshot": 3, "committed_length": 0,
         "phase": "RELEASED"},
        {"request_id": "R.branch", "handle_generation": 1, "snapshot": 2, "committed_length": 0,
         "phase": "RELEASED"}]}

# The categories of M5.1 0x07 "Executable Runtime And Observability Contract" ("Thirty-four
# one-field mutations cover ..."), in the seed's order; every Loop 8 invalid fixture belongs to one.
LOOP8_CATEGORIES = [
    "schema and source drift", "sampled audit", "metric-cardinality leaks", "duplicate event IDs",
    "missing trace identity", "source/component mismatch", "local sequence gaps",
    "clock regression", "stale generations", "bad append bases and intervals",
    "orphan publication", "failure mutation", "fork aliasing", "growing truncate",
    "wrong finish/release state", "allocator overflow", "bad causal observations",
    "negative residency", "expected-result drift"]
LOOP8_CASES = {  # case -> category
    "schema_version_drift": "schema and source drift",
    "unknown_event_type": "schema and source drift",
    "runtime_pin_short_commit": "schema and source drift",
    "runtime_pin_bad_digest": "schema and source drift",
    "sampled_audit": "sampled audit",
    "metric_label_request_id": "metric-cardinality leaks",
    "metric_failures_without_attempts": "metric-cardinality leaks",
    "duplicate_event_id": "duplicate event IDs",
    "missing_event_id": "missing trace identity",
    "missing_trace_id": "missing trace identity",
    "source_component_mismatch": "source/component mismatch",
    "allocator_in_semantic_event": "source/component mismatch",
    "local_sequence_gap": "local sequence gaps",
    "clock_regression": "clock regression",
    "stale_handle_generation": "stale generations",
    "fork_stale_base": "stale generations",
    "bad_append_base": "bad append bases and intervals",
    "bad_append_interval": "bad append bases and intervals",
    "orphan_publication": "orphan publication",
    "failure_advances_snapshot": "failure mutation",
    "fork_alias": "fork aliasing",
    "growing_truncate": "growing truncate",
    "release_before_finish": "wrong finish/release state",
    "finish_cache_overclaim": "wrong finish/release state",
    "release_generation_drift": "wrong finish/release state",
    "allocator_overflow": "allocator overflow",
    "free_caused_by_finish": "bad causal observations",
    "unknown_cause": "bad causal observations",
    "negative_residency": "negative residency",
    "resident_after_release": "negative residency",
    "residency_drift": "expected-result drift",
    "publish_result_drift": "expected-result drift",
    "publish_length_drift": "expected-result drift",
    "child_truncate_result_drift": "expected-result drift",
    "expected_final_state_drift": "expected-result drift",
}


def loop8():
    rel = "fixtures/m5_1/observability/loop8_failure_retry_fork_release.jsonl"
    t = Trace([("engine-0", "semantic"), ("worker-0", "semantic"), ("alloc-0", "allocator"),
               ("res-0", "residency")],
              "M5.1 0x07 Worked Failure, Retry, Fork, And Release Trace: request R at handle "
              "generation 7, engine seq 0..13 exactly as the seed lists them (per-layer staging "
              "comes from the worker source), plus the three allocator and three residency "
              "observations caused by the parent's publications and release (64 B/token). The "
              "header binds the pinned runtime of 'Pinning One Runtime Before Mapping It', the "
              "bounded metric families of 'Audit Stream, Traces, Metrics, And Logs', required "
              "trace identity, and the seed's final states (R: generation 8, snapshot 3, T=0; "
              "R.branch: generation 1, snapshot 2, T=0).",
              extra_header=LOOP8_HEADER)
    E, W, A, S = "engine-0", "worker-0", "alloc-0", "res-0"
    R, C = "R", "R.branch"

    def stage(op, iv, layers=(0, 1)):
        for l in layers:
            t.ev(None, W, "append_stage_layer", {"layer": l, "interval": iv}, R, 7, op=op)

    t.ev("s0", E, "request_allocate", {"prompt_length": 4}, R, 7, result=0)
    t.ev("s1", E, "append_start", append_payload(0, 4, "prefill"), R, 7, op="prefill-1", base=0)
    stage("prefill-1", [0, 4])
    t.ev("s2", E, "append_publish", {"committed_length": 4}, R, 7, op="prefill-1", base=0, result=1)
    ev = lambda k: t.lines[t.idx(k)]["event_id"]
    t.ev("a0", A, "allocator_observation",
         {"caused_by_event_id": ev("s2"), "blocks": 2, "slots": 8, "used_slots": 4}, R, 7)
    t.ev("r0", S, "residency_observation",
         {"caused_by_event_id": ev("s2"), "tier": "gpu", "resident_payload_bytes": 256}, R, 7)
    t.ev("s3", E, "output_emit", {"output_index": 0, "token": 11}, R, 7, base=1)
    t.ev("s4", E, "append_start", append_payload(4, 5, "decode", input_token=11), R, 7,
         op="decode-1", base=1)
    stage("decode-1", [4, 5], layers=(0,))
    t.ev("s5", E, "append_failure", {"reason": "worker lost"}, R, 7, op="decode-1", base=1,
         outcome="failure")
    t.ev("s6", E, "append_start", append_payload(4, 5, "decode", input_token=11), R, 7,
         op="decode-2", base=1)
    stage("decode-2", [4, 5])
    t.ev("s7", E, "append_publish", {"committed_length": 5}, R, 7, op="decode-2", base=1, result=2)
    t.ev("a1", A, "allocator_observation",
         {"caused_by_event_id": ev("s7"), "blocks": 2, "slots": 8, "used_slots": 5}, R, 7)
    t.ev("r1", S, "residency_observation",
         {"caused_by_event_id": ev("s7"), "tier": "gpu", "resident_payload_bytes": 320}, R, 7)
    t.ev("s8", E, "fork", {"prefix_length": 5, "children": [{"request_id": C,
                                                            "handle_generation": 0}]},
         R, 7, base=2, result=0)
    t.ev("s9", E, "truncate", {"new_length": 3}, C, 0, base=0, result=1)
    t.ev("s10", E, "finish", {"committed_length": 5, "emitted_outputs": 1}, R, 7, base=2, result=2)
    t.ev("s11", E, "release", {"committed_length": 0, "result_handle_generation": 8}, R, 7,
         base=2, result=3)
    t.ev("a2", A, "allocator_observation",
         {"caused_by_event_id": ev("s11"), "blocks": 0, "slots": 0, "used_slots": 0}, R, 7)
    t.ev("r2", S, "residency_observation",
         {"caused_by_event_id": ev("s11"), "tier": "gpu", "resident_payload_bytes": 0}, R, 7)
    t.ev("s12", E, "finish", {"committed_length": 3}, C, 0, base=1, result=1)
    t.ev("s13", E, "release", {"committed_length": 0, "result_handle_generation": 1}, C, 0,
         base=1, result=2)
    t.write(rel)
    assert [t.lines[t.idx(f"s{i}")]["local_sequence"] for i in range(14)] == list(range(14))

    s = "M5.1 0x07 Worked Failure, Retry, Fork, And Release Trace"
    c = "observability"
    invalid(c, "schema_version_drift", rel, "The header declares trace schema version 2.",
            "kvconform.trace/1", rep("/0/schema_version", 2), "TRACE_HEADER_INVALID")
    invalid(c, "sampled_audit", rel, "The header declares a sampled audit stream.",
            "M5.1 0x07 Audit Stream, Traces, Metrics, And Logs", rep("/0/audit", "sampled"),
            "TRACE_HEADER_INVALID")
    invalid(c, "duplicate_event_id", rel,
            "decode-1's start reuses the event_id of the output emit with different content.",
            "M5.1 0x07 Deriving A Mutation Event From The Transition",
            rep(f"/{t.idx('s4')}/event_id", ev("s3")), "TRACE_EVENT_ID_CONFLICT")
    invalid(c, "missing_event_id", rel, "An observation lacks its event_id.",
            "M5.1 0x07 Deriving A Mutation Event From The Transition",
            {"op": "remove", "path": f"/{t.idx('r0')}/event_id"}, "INPUT_FIELD_MISSING")
    invalid(c, "source_component_mismatch", rel,
            "The allocator's release observation claims the residency component.",
            "M5.1 0x07 Five State Planes, One Causal History",
            rep(f"/{t.idx('a2')}/source_component", "residency"), "TRACE_SOURCE_UNDECLARED")
    invalid(c, "local_sequence_gap", rel, "The engine's last event skips sequence 13.",
            "M5.1 0x07 Deriving A Mutation Event From The Transition",
            rep(f"/{t.idx('s13')}/local_sequence", 14), "TRACE_SEQUENCE_GAP")
    invalid(c, "clock_regression", rel, "The engine's last event is timestamped before seq 12.",
            "M5.1 0x07 Deriving A Mutation Event From The Transition",
            rep(f"/{t.idx('s13')}/monotonic_ns", 5), "TRACE_CLOCK_REGRESSION")
    invalid(c, "stale_handle_generation", rel,
            "The child's release targets handle generation 1 before it was fenced.", s,
            rep(f"/{t.idx('s13')}/handle_generation", 1), "TRACE_HANDLE_GENERATION_MISMATCH")
    invalid(c, "bad_append_base", rel, "decode-1 claims base snapshot 0 although s1 is live.", s,
            rep(f"/{t.idx('s4')}/base_snapshot", 0), "LIFECYCLE_STALE_BASE")
    invalid(c, "bad_append_interval", rel, "decode-1 appends [5,6) at T = 4.", s,
            rep(f"/{t.idx('s4')}/payload/interval", [5, 6]), "LIFECYCLE_APPEND_HOLE")
    invalid(c, "failure_advances_snapshot", rel,
            "The failure of decode-1 names result snapshot 2.", s,
            rep(f"/{t.idx('s5')}/result_snapshot", 2), "TRACE_OUTCOME_INVALID")
    invalid(c, "publish_result_drift", rel, "decode-2's publication names snapshot 3.", s,
            rep(f"/{t.idx('s7')}/result_snapshot", 3), "TRACE_SNAPSHOT_MISMATCH")
    invalid(c, "publish_length_drift", rel, "decode-2's publication reports T = 6.", s,
            rep(f"/{t.idx('s7')}/payload/committed_length", 6), "TRACE_SNAPSHOT_MISMATCH")
    invalid(c, "release_generation_drift", rel, "The parent release fences generation 7, not 8.",
            s, rep(f"/{t.idx('s11')}/payload/result_handle_generation", 7), "TRACE_SNAPSHOT_MISMATCH")
    invalid(c, "child_truncate_result_drift", rel, "The child truncate reports snapshot 2.", s,
            rep(f"/{t.idx('s9')}/result_snapshot", 2), "TRACE_SNAPSHOT_MISMATCH")
    # Probe 70 (mutation adequacy): dropping the fork's expected-base check passed every suite.
    invalid(c, "fork_stale_base", rel,
            "The fork names base snapshot 1 although decode-2 published s2.", s,
            rep(f"/{t.idx('s8')}/base_snapshot", 1), "LIFECYCLE_STALE_BASE")
    invalid(c, "allocator_overflow", rel, "9 used slots in 8 allocated slots.",
            "M5.1 0x07 Five State Planes, One Causal History",
            rep(f"/{t.idx('a1')}/payload/used_slots", 9), "TRACE_OBSERVATION_INCONSISTENT")
    invalid(c, "free_caused_by_finish", rel,
            "The physical-free observation is caused by finish rather than release.",
            "M5.1 0x07 Runtime Observability Failure Lab",
            rep(f"/{t.idx('a2')}/payload/caused_by_event_id", ev("s10")), "TRACE_CAUSE_WRONG_EVENT")
    invalid(c, "unknown_cause", rel, "A residency observation names an event that never happened.",
            "M5.1 0x07 Event Contracts At The Semantic Boundary",
            rep(f"/{t.idx('r1')}/payload/caused_by_event_id", "engine-0:99"), "TRACE_CAUSE_UNKNOWN")
    invalid(c, "negative_residency", rel, "Resident payload bytes of -64.",
            "M5.1 0x07 Five State Planes, One Causal History",
            rep(f"/{t.idx('r1')}/payload/resident_payload_bytes", -64), "INPUT_VALUE_OUT_OF_RANGE")
    invalid(c, "residency_drift", rel, "384 resident bytes for 5 committed rows of 64 B.",
            "M5.1 0x07 Five State Planes, One Causal History",
            rep(f"/{t.idx('r1')}/payload/resident_payload_bytes", 384),
            "TRACE_OBSERVATION_INCONSISTENT")
    invalid(c, "resident_after_release", rel, "320 bytes still resident after release.",
            "M5.1 0x07 Five State Planes, One Causal History",
            rep(f"/{t.idx('r2')}/payload/resident_payload_bytes", 320),
            "TRACE_OBSERVATION_INCONSISTENT")
    invalid(c, "allocator_in_semantic_event", rel,
            "decode-2's publication carries allocated_blocks: allocator plane collapsed into the "
            "semantic event.", "M5.1 0x07 Event Contracts At The Semantic Boundary",
            {"op": "add", "path": f"/{t.idx('s7')}/payload/allocated_blocks", "value": 2},
            "TRACE_PLANE_MIXED")
    invalid(c, "unknown_event_type", rel, "The first allocator observation is spelled 'allocator_obs'.",
            "kvconform.trace/1", rep(f"/{t.idx('a0')}/event_type", "allocator_obs"),
            "TRACE_EVENT_TYPE_UNKNOWN")
    p = "M5.1 0x07 Pinning One Runtime Before Mapping It"
    invalid(c, "runtime_pin_short_commit", rel,
            "The runtime pin names the short commit 0fc695f instead of the full commit id.", p,
            rep("/0/runtime_pin/commit", "0fc695f"), "TRACE_RUNTIME_PIN_INVALID")
    invalid(c, "runtime_pin_bad_digest", rel,
            "The scheduler.py digest lost its last hex digit (63 digits: not a SHA-256).", p,
            rep("/0/runtime_pin/files/2/sha256", RUNTIME_PIN["files"][2]["sha256"][:-1]),
            "TRACE_RUNTIME_PIN_INVALID")
    m = "M5.1 0x07 Audit Stream, Traces, Metrics, And Logs"
    invalid(c, "metric_label_request_id", rel,
            "cache_append_outcomes_total is labelled by request_id: series grow with traffic.", m,
            {"op": "add", "path": "/0/metrics/0/labels/-", "value": "request_id"},
            "TRACE_METRIC_LABEL_UNBOUNDED")
    invalid(c, "metric_failures_without_attempts", rel,
            "The failure counter no longer names its attempts counter: no failure ratio exists.",
            m, {"op": "remove", "path": "/0/metrics/2/denominator"},
            "TRACE_METRIC_DENOMINATOR_MISSING")
    invalid(c, "missing_trace_id", rel,
            "decode-2's start carries no trace_id although the header requires trace identity.",
            "M5.1 0x07 Deriving A Mutation Event From The Transition",
            {"op": "remove", "path": f"/{t.idx('s6')}/trace_id"}, "TRACE_IDENTITY_MISSING")
    invalid(c, "orphan_publication", rel,
            "A publication of decode-3, which no append_start opened, is appended to the engine "
            "stream (seq 14): a publish with no start.", "M5.1 0x07 Runtime Observability Failure Lab",
            {"op": "add", "path": "/-", "value": {
                "event_id": "engine-0:14", "trace_id": "trace-1", "source_instance": E,
                "source_component": "semantic", "local_sequence": 14,
                "monotonic_ns": t.lines[t.idx("s13")]["monotonic_ns"] + 1000,
                "event_type": "append_publish", "request_id": R, "handle_generation": 7,
                "operation_id": "decode-3", "base_snapshot": 2, "result_snapshot": 3,
                "payload": {"committed_length": 6}}},
            "LIFECYCLE_TXN_UNKNOWN")
    invalid(c, "fork_alias", rel,
            "The fork lists R.branch twice: two children alias one handle.", s,
            {"op": "add", "path": f"/{t.idx('s8')}/payload/children/-",
             "value": {"request_id": C, "handle_generation": 0}}, "LIFECYCLE_FORK_ALIAS")
    invalid(c, "growing_truncate", rel, "The child 'truncates' from T=5 to T=6.", s,
            rep(f"/{t.idx('s9')}/payload/new_length", 6), "LIFECYCLE_TRUNCATE_GROWTH")
    invalid(c, "release_before_finish", rel,
            "The child's finish is recorded as a read: the child is released while DECODE_READY.",
            s, rep(f"/{t.idx('s12')}/event_type", "read"), "LIFECYCLE_RELEASE_LIVE")
    invalid(c, "finish_cache_overclaim", rel,
            "The parent's finish reports T=6 although only 5 rows were published.", s,
            rep(f"/{t.idx('s10')}/payload/committed_length", 6), "FRONTIER_CACHE_OVERCOMMIT")
    invalid(c, "expected_final_state_drift", rel,
            "The expected final state of R.branch names snapshot 3; its release created 2.",
            "M5.1 0x07 Executable Runtime And Observability Contract",
            rep("/0/expected_final_states/1/snapshot", 3), "TRACE_EXPECTED_RESULT_MISMATCH")
    cases = [case for concept, case, base, *_ in INVALID if concept == c and base == rel]
    assert sorted(cases) == sorted(LOOP8_CASES), set(cases) ^ set(LOOP8_CASES)
    assert len(cases) == 35, len(cases)
    assert sorted(set(LOOP8_CASES.values())) == sorted(LOOP8_CATEGORIES)
    return t


def loop8_allocator_model(t):
    """The Loop 8 trace with an explicit allocator conversion model in its header.

    M5.1 0x07 calls the allocator and semantic planes compatible, not equal, and says a drift
    monitor needs an explicit conversion model before it can compare them. The seed's allocator
    facts (2 blocks, 8 slots, 4 then 5 used, then 0/0/0) satisfy the model "4 slots per block,
    used slots = committed rows"; this variant declares it, so the counts are compared."""
    rel = "fixtures/m5_1/observability/loop8_allocator_model.jsonl"
    v = Trace([], "")
    v.lines = json.loads(json.dumps(t.lines))
    v.labels = dict(t.labels)
    v.lines[0]["allocator_model"] = {"slots_per_block": 4, "used_slots": "committed_rows"}
    v.lines[0]["description"] = (
        "The M5.1 0x07 Loop 8 trace (loop8_failure_retry_fork_release.jsonl) with an explicit "
        "allocator conversion model: 4 slots per block, used slots = committed rows. The seed's "
        "allocator facts satisfy it; the one-field mutations of its counts are then violations.")
    # The header's keys in the order header() writes them: the model before the free text.
    v.lines[0] = {k: v.lines[0][k] for k in
                  [k for k in v.lines[0] if k not in ("description", "regenerate")] +
                  ["description", "regenerate"]}
    v.write(rel)
    s = "M5.1 0x07 Five State Planes, One Causal History"
    c = "observability"
    invalid(c, "allocator_model_slots_drift", rel,
            "After decode-2's publication the allocator reports 12 slots in 2 blocks; the "
            "declared model has 4 slots per block.", s,
            rep(f"/{v.idx('a1')}/payload/slots", 12), "TRACE_OBSERVATION_INCONSISTENT")
    invalid(c, "allocator_model_used_drift", rel,
            "After decode-2's publication the allocator reports 4 used slots; the declared "
            "model counts committed rows, and R has 5.", s,
            rep(f"/{v.idx('a1')}/payload/used_slots", 4), "TRACE_OBSERVATION_INCONSISTENT")
    invalid(c, "allocator_model_used_after_release", rel,
            "After the parent's release the allocator still reports 2 blocks, 8 slots and 5 used "
            "slots. The blocks may be a delayed free (release: 'immediate device free is a "
            "separate observation'), but the declared model counts committed rows, and the "
            "released handle has none.", "M5.1 0x07 Event Contracts At The Semantic Boundary",
            rep(f"/{v.idx('a2')}/payload",
                {"caused_by_event_id": v.lines[v.idx("s11")]["event_id"], "blocks": 2,
                 "slots": 8, "used_slots": 5}), "TRACE_OBSERVATION_INCONSISTENT")
    invalid(c, "allocator_model_zero_slots_per_block", rel,
            "The header's allocator model declares blocks of 0 slots.", "kvconform.trace/1",
            rep("/0/allocator_model/slots_per_block", 0), "INPUT_VALUE_OUT_OF_RANGE")
    invalid(c, "observation_outcome_rejected", rel,
            "The allocator's observation after decode-2's publication carries outcome "
            "\"rejected\": an observation reports what its plane holds and has no outcome (it "
            "was ignored).", "M5.1 0x07 Five State Planes, One Causal History",
            {"op": "add", "path": f"/{v.idx('a1')}/outcome", "value": "rejected"},
            "TRACE_OUTCOME_INVALID")
    # Not an allocator mutation, and not one of the seed's 34 (loop8()): this trace carries it
    # so that the Loop 8 set stays the seed's.
    invalid(c, "failure_base_drift", rel,
            "The failure of decode-1 names base snapshot 2; decode-1 started on s1, whose base "
            "a failure leaves visible. A failure closes its own transaction: its base is the "
            "start's (it used to go unchecked).",
            "M5.1 0x07 Event Contracts At The Semantic Boundary",
            rep(f"/{v.idx('s5')}/base_snapshot", 2), "TRACE_SNAPSHOT_MISMATCH")
    # The format's end record (docs/trace-format.md "End record"), not a seed mutation: a
    # stream cut between two lines, lines lost before the record, a line after it.
    f = "kvconform.trace/1"
    end = "kvconform.trace_end/1"
    invalid(c, "end_record_required_missing", rel,
            "The header requires an end record (end_record: true) and the trace ends without one: "
            "a stream cut between two lines reads as a shorter trace otherwise.", f,
            {"op": "add", "path": "/0/end_record", "value": True}, "TRACE_END_MISSING")
    invalid(c, "end_record_count_drift", rel,
            f"The end record counts {len(v.lines)} event lines; the trace holds "
            f"{len(v.lines) - 1} between its header and the record (a line lost on the way).", f,
            {"op": "add", "path": "/-", "value": {"kind": end, "events": len(v.lines)}},
            "TRACE_END_MISMATCH")
    last = len(v.lines) - 1  # the index of the last line (the release's residency observation)
    invalid(c, "end_record_not_last", rel,
            "An end record (counting the lines before it) precedes the last observation: the "
            "line after it is not replayed.", f,
            {"op": "add", "path": f"/{last}", "value": {"kind": end, "events": last - 1}},
            "TRACE_END_MISMATCH")


def main():
    two_layer_decode()
    synthetic_lifecycle()
    ordinary_stop_repair()
    speculative()
    speculative_frontier_verify()
    cancel_before_first_output()
    loop8_allocator_model(loop8())
    write_invalid()
    print(f"wrote 8 traces and {len(INVALID)} invalid fixtures", file=sys.stderr)


if __name__ == "__main__":
    main()
