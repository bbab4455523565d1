#!/usr/bin/env python3
"""One-field mutation sweep of the trace fixtures: how many codes does each mutation raise?

Usage: tools/gating_sweep.py [KVCONFORM] [--list] [--none] [--check]
  KVCONFORM: the kvconform binary (default build/bin/kvconform).
  --list: print every mutation that raises more than one violation.
  --none: print every mutation that raises none (the ones a reader should sort by kind).
  --check: exit 1 unless no mutation but a rename (RENAMES) raises more than one distinct
           code, the mutations raising none are exactly the deletions of OPTIONAL_CLAIMS, the
           changes of FREE_TEXT / HEADER_FREE_TEXT and the KNOWN_SILENT list (each with its
           reason), and every mutation got a verdict; ctest runs this as trace_gating_sweep.

For every event of every trace fixture (fixtures/m5_1/**/*.jsonl, fixtures/m5_6/trace/*.jsonl)
it checks, with the trace checker (`kvconform validate --format json`, many traces per process),
the trace with one change: the event_type misspelled; base_snapshot / result_snapshot /
handle_generation + 1; the source_component changed or the source_instance renamed
(SOURCE_VERDICTS); the outcome set to each other value; the request_id or operation_id
renamed; each envelope member retyped or (unless null) deleted; each payload member deleted,
retyped, or (for integers) + 1; every integer or string inside the payload (nested ones
included) and inside the header + 1 or with "x" appended, and the header's B_token doubled
(a multiple of num_layers still, which + 1 is not where num_layers > 1); each header member and
array element
retyped and each header member deleted (the header's changes are named at line 1). And each
event delivered
again, unchanged, after the next event (it must be deduplicated) and at the end of the trace
(deduplicated, or, older than the source window and forgotten with its released request, one
TRACE_SEQUENCE_REGRESSION). And each pair of adjacent events emitted in the other order (their
local_sequence and monotonic_ns exchanged when they share a source): the pair may commute
(no violation), else it must raise one distinct code. And each event left out, its source's
later events renumbered (a runtime that never emitted it): nothing (an observation, a read, a
stage of a transaction that never publishes), or one distinct code. It prints how many
mutations raised 0, 1, 2, ... violations. docs/trace-format.md "Gating" promises one code per
root cause: a mutation (other than a rename) raising several distinct codes is a gating gap.
Deterministic (no randomness); about 20,100 traces (19,064 mutations, 519 swaps, 535
omissions on 2026-12-05) plus each event's redeliveries, ~25-40 s. With --check it is a CI
test; --list prints the summary and every mutation raising more than one violation.
"""
import collections
import copy
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Mutations that raise no violation by design (--check fails on any other silent mutation: a
# blind spot of the checker, to fix or to list here with its reason).
# 1. Deleting an optional claim: the checker compares a claim only where the event makes one.
OPTIONAL_CLAIMS = {
    ("append_publish", "committed_length"), ("finish", "committed_length"),
    ("finish", "emitted_outputs"), ("release", "committed_length"),
    ("release", "result_handle_generation"), ("append_start", "pending_payload_bytes"),
    ("append_stage_layer", "staged_payload_bytes"),
    ("append_failure", "reason"), ("cancel_txn", "reason"), ("allocator_observation", "slot_ids"),
    ("chunk_receive", "in_flight_bytes"), ("transfer_publish", "committed_length"),
    ("transfer_publish", "cache_handle_id"), ("read", "layer_lengths"),
}
# 2. One-field changes the contract leaves free at that event: (fixture, line, mutation) -> why.
NO_MODEL = ("no allocator_model in the header: allocator counts are compared with the semantic "
            "plane only through a declared conversion model (M5.1 0x07)")
NEVER_PUBLISHED = ("the layer is staged by a transaction that never publishes (cancelled, "
                   "failed or refused), and no other stage of it names the new layer")
LAST_TOKEN = "the last output token: no later append processes it"
UNREACHED_PROMPT = ("the request never completes its prompt (cancelled, or never appended), so "
                    "no frontier rule reads the prompt length")
SHORTER_TRUNCATE = "still a shortening truncate: new_length <= the committed length (0x02)"
LOOSE_CAPACITY = "a destination capacity the trace never reaches"
L = "fixtures/m5_1/lifecycle/"
O = "fixtures/m5_1/observability/"
T = "fixtures/m5_6/trace/"
KNOWN_SILENT = {
    ("fixtures/m5_1/frontier/speculative_frontier_verify.jsonl", 13, "payload.token+1"): LAST_TOKEN,
    (L + "doc_example_two_requests.jsonl", 30, "payload.token+1"): LAST_TOKEN,
    (L + "cancel_before_first_output.jsonl", 2, "payload.prompt_length+1"): UNREACHED_PROMPT,
    (L + "doc_example_two_requests.jsonl", 11, "payload.prompt_length+1"): UNREACHED_PROMPT,
    (L + "synthetic_lifecycle.jsonl", 36, "payload.prompt_length+1"): UNREACHED_PROMPT,
    (L + "doc_example_two_requests.jsonl", 13, "payload.layer+1"): NEVER_PUBLISHED,
    (L + "doc_example_two_requests.jsonl", 16, "payload.layer+1"): NEVER_PUBLISHED,
    (L + "synthetic_lifecycle.jsonl", 25, "payload.layer+1"): NEVER_PUBLISHED,
    (L + "synthetic_lifecycle.jsonl", 27, "payload.layer+1"): NEVER_PUBLISHED,
    (O + "loop8_allocator_model.jsonl", 11, "payload.layer+1"): NEVER_PUBLISHED,
    (O + "loop8_failure_retry_fork_release.jsonl", 11, "payload.layer+1"): NEVER_PUBLISHED,
    (L + "doc_example_two_requests.jsonl", 23, "payload.new_length+1"): SHORTER_TRUNCATE,
    (L + "synthetic_lifecycle.jsonl", 21, "payload.new_length+1"): SHORTER_TRUNCATE,
    (L + "synthetic_lifecycle.jsonl", 9, "payload.idempotency_key:del"):
        "the key defaults to the operation id, and txn-lose is never retried",
    (L + "synthetic_lifecycle.jsonl", 14, "payload.input_token:del"):
        "a retry may leave out its claims (the token is compared where the retry states one)",
    (L + "synthetic_lifecycle.jsonl", 39, "payload.committed_length+1"):
        "a refused read (of a released handle) observes nothing; its length is not compared",
    (T + "transfer_protocol.jsonl", 47, "payload.generation+1"):
        "a refused decode admission (before publication) is refused for any generation",
    (T + "superseded_publication_admits_no_decode.jsonl", 81, "payload.generation+1"):
        "the superseded generation-6 handle admits no decode, whatever generation it names",
    (T + "released_handle_admits_no_decode.jsonl", 46, "payload.generation+1"):
        "the released generation-6 handle admits no decode, whatever generation it names",
    (T + "suffix_onto_warm_destination.jsonl", 4, "payload.reserved_blocks+1"):
        "an over-reservation (8 of the pool's 8 blocks): slack, not a violation",
}
REFUSED_EITHER_WAY = ("an event reported \"rejected\" that the changed envelope still makes "
                      "refused (an unknown operation or request, or the recycled generation of a "
                      "released handle)")
SAME_EFFECT = ("\"cancelled\" and \"failure\" both close the transaction without a result: "
               "the event type admits either")
KNOWN_SILENT.update({
    (L + "doc_example_two_requests.jsonl", 14, "outcome:cancelled"): SAME_EFFECT,
    (O + "loop8_allocator_model.jsonl", 12, "outcome:cancelled"): SAME_EFFECT,
    (O + "loop8_failure_retry_fork_release.jsonl", 12, "outcome:cancelled"): SAME_EFFECT,
    (L + "synthetic_lifecycle.jsonl", 14, "outcome:replayed"):
        "the retry of txn-win may report the original receipt as replayed (or as a success)",
    (L + "synthetic_lifecycle.jsonl", 27, "operation_id:other"): REFUSED_EITHER_WAY,
    (L + "synthetic_lifecycle.jsonl", 28, "operation_id:other"): REFUSED_EITHER_WAY,
    (L + "synthetic_lifecycle.jsonl", 38, "handle_generation+1"): REFUSED_EITHER_WAY,
    (L + "synthetic_lifecycle.jsonl", 39, "handle_generation+1"): REFUSED_EITHER_WAY,
    (L + "synthetic_lifecycle.jsonl", 39, "request_id:other"): REFUSED_EITHER_WAY,
})
for _f, _line in ((L + "doc_example_two_requests.jsonl", 7), (L + "synthetic_lifecycle.jsonl", 33),
                  (L + "synthetic_lifecycle.jsonl", 37),
                  (O + "loop8_failure_retry_fork_release.jsonl", 7),
                  (O + "loop8_failure_retry_fork_release.jsonl", 17)):
    for _m in ("blocks", "slots", "used_slots"):
        KNOWN_SILENT[(_f, _line, f"payload.{_m}+1")] = NO_MODEL
ZERO_BYTE = "a zero-byte handoff moves no chunk: nothing in it is sized by"
KNOWN_SILENT.update({
    (T + "zero_byte_warm_handoff.jsonl", 4, "payload.bytes_per_token_layer+1"):
        ZERO_BYTE + " bytes per token and layer",
    (T + "zero_byte_warm_handoff.jsonl", 4, "payload.reserved_blocks+1"):
        "a reservation of 1 of the pool's 8 blocks for no rows: slack, not a violation",
    (T + "zero_byte_warm_handoff.jsonl", 1, "header.cache_abi.bytes_per_token*2"):
        ZERO_BYTE + " B_token (and plans state their own bytes_per_token_layer)",
})
for _f in ("suffix_onto_warm_destination.jsonl", "superseded_attempt_late_publish.jsonl",
           "superseded_publication_admits_no_decode.jsonl", "transfer_protocol.jsonl",
           "zero_byte_warm_handoff.jsonl", "decode_release_frees_the_pool.jsonl",
           "released_handle_admits_no_decode.jsonl"):
    for _m in ("credit_capacity_bytes", "pool_blocks"):
        KNOWN_SILENT[(T + _f, 2, f"payload.{_m}+1")] = LOOSE_CAPACITY


# 3. Nested members and strings (the "+1" / ":x" changes of scalar_mutations).
COVERED = "a readiness interval that still covers every chunk the plan sends of that layer"
UNSENT = ("the plan of an attempt superseded or aborted before any chunk of it moves: no later "
          "event names its chunks, and its identity fence is compared only at transfer_validate "
          "(M5.6 0x06D), which it never reaches")
DRAFT = "a draft token the verification rejects: only accepted drafts become cache or output rows"
BYTES = ("no event of the trace makes a byte claim (`pending_payload_bytes`, allocator or "
         "residency bytes), so B_token is compared with nothing")
PLAN_BYTES = ("M5.6 plans state their own `bytes_per_token_layer`; the header's B_token is "
              "not compared with them (docs/trace-format.md \"The header\")")
ABI_ID = ("no event of the trace states a cache ABI (append_start's `cache_abi` is optional), so "
          "the header's id is compared with nothing")
KNOWN_SILENT.update({
    (L + "synthetic_lifecycle.jsonl", 9, "payload.idempotency_key:x"):
        "the key of txn-lose, which is never retried",
    (L + "synthetic_lifecycle.jsonl", 27, "payload.interval.0+1"): REFUSED_EITHER_WAY,
    (L + "synthetic_lifecycle.jsonl", 27, "payload.interval.1+1"): REFUSED_EITHER_WAY,
    (L + "synthetic_lifecycle.jsonl", 33, "payload.slot_ids.0+1"): NO_MODEL,
    (L + "synthetic_lifecycle.jsonl", 37, "payload.slot_ids.0+1"): NO_MODEL,
    (T + "transfer_protocol.jsonl", 13, "payload.chunk_id:x"):
        "a refused late completion of the superseded attempt is refused for any chunk",
})
for _f, _line, _drafts in (("speculative_correction.jsonl", 12, (2, 3)),
                           ("speculative_frontier_verify.jsonl", 8, (1, 2))):
    for _i in _drafts:
        KNOWN_SILENT[("fixtures/m5_1/frontier/" + _f, _line, f"payload.draft_tokens.{_i}+1")] = DRAFT
for _line in (6, 11, 16, 21):  # the warm destination holds [0, 4): the chunks send [4, 32)
    for _end in (0, 1):
        KNOWN_SILENT[(T + "suffix_onto_warm_destination.jsonl", _line,
                      f"payload.interval.{_end}+1")] = COVERED
for _f, _lines in (("superseded_attempt_late_publish.jsonl", (5, 6, 7, 8)),
                   ("superseded_publication_admits_no_decode.jsonl", (3, 4, 5, 6)),
                   ("decode_release_frees_the_pool.jsonl", (3, 4, 5, 6)),
                   ("released_handle_admits_no_decode.jsonl", (3, 4, 5, 6)),
                   ("transfer_protocol.jsonl", (8, 16, 26, 36))):
    for _line in _lines:
        KNOWN_SILENT[(T + _f, _line, "payload.interval.1+1")] = COVERED
for _f, _line, _gen in (("superseded_attempt_late_publish.jsonl", 42, True),
                        ("transfer_protocol.jsonl", 3, False)):
    for _i in range(8):
        KNOWN_SILENT[(T + _f, _line, f"payload.chunks.{_i}.chunk_id:x")] = UNSENT
    # (Not the tenant, nor the first attempt's number: the request's other attempt is compared
    # with them, since 2026-12-05.)
    for _m in ("destination_worker_epoch+1", "source_worker_epoch+1", "reservation_id:x") + (
            ("generation+1", "attempt+1") if _gen else ()):
        KNOWN_SILENT[(T + _f, _line, "payload.identity." + _m)] = UNSENT
for _f in ("frontier/ordinary_stop_repair", "frontier/speculative_correction",
           "frontier/speculative_frontier_verify", "lifecycle/cancel_before_first_output",
           "lifecycle/doc_example_two_requests", "lifecycle/synthetic_lifecycle",
           "lifecycle/two_layer_decode", "observability/loop8_allocator_model",
           "observability/loop8_failure_retry_fork_release"):
    KNOWN_SILENT[(f"fixtures/m5_1/{_f}.jsonl", 1, "header.cache_abi.id:x")] = ABI_ID
# B_token doubled (its + 1 trips the header's multiple-of-num_layers rule, so it pins nothing).
for _f in ("frontier/ordinary_stop_repair", "frontier/speculative_correction",
           "lifecycle/synthetic_lifecycle"):
    KNOWN_SILENT[(f"fixtures/m5_1/{_f}.jsonl", 1, "header.cache_abi.bytes_per_token*2")] = BYTES
for _f in ("suffix_onto_warm_destination", "superseded_attempt_late_publish",
           "superseded_publication_admits_no_decode", "transfer_protocol",
           "decode_release_frees_the_pool", "released_handle_admits_no_decode"):
    KNOWN_SILENT[(f"{T}{_f}.jsonl", 1, "header.cache_abi.bytes_per_token*2")] = PLAN_BYTES

# 4. Free text, which the contract does not interpret: any change is silent. Payload members
# (event type, member) and header members (path, array indices as N).
FREE_TEXT = {("append_failure", "reason"), ("cancel_txn", "reason"), ("transfer_abort", "reason"),
             ("residency_observation", "tier")}
HEADER_FREE_TEXT = {"producer.name", "producer.revision", "description", "regenerate",
                    "sources.N.clock_domain", "metrics.N.name", "metrics.N.labels.N",
                    "runtime_pin.name", "runtime_pin.release", "runtime_pin.files.N.path"}
# Header members a trace may leave out (docs/trace-format.md "The header"): deleting them is
# silent.
HEADER_OPTIONAL = {"description", "regenerate", "sources.N.clock_domain", "expected_final_states",
                   "metrics", "runtime_pin", "runtime_pin.checked_on", "trace_identity",
                   "allocator_model", "allocator_model.used_slots"}


# 5. Envelope members an event may leave out (docs/trace-format.md "What to write in
# base_snapshot / result_snapshot" and "Transfer plane"): deleting them is silent.
TRANSFER_OPS = ("chunk_credit_acquire", "chunk_send", "chunk_receive", "chunk_device_visible",
                "transfer_reserve", "transfer_validate", "transfer_publish", "transfer_abort",
                "decode_admit", "source_release_ack", "decode_release")
OPTIONAL_ENVELOPE = (
    {(t, "base_snapshot") for t in ("append_stage_layer", "append_publish", "append_failure",
                                    "cancel_txn", "output_emit", "read", "fork", "truncate",
                                    "cancel_request", "finish", "release")} |
    {(t, "result_snapshot") for t in ("request_allocate", "append_publish", "fork", "truncate",
                                      "cancel_request", "finish", "release")} |
    {(t, "handle_generation") for t in ("allocator_observation", "residency_observation")} |
    {(t, "request_id") for t in TRANSFER_OPS})


def allowed_silent(event_type, name):
    """A deletion of an optional claim (OPTIONAL_CLAIMS, OPTIONAL_ENVELOPE; `trace_id` unless
    the header requires it, which the sweep does not know, so always), or a change of free
    text."""
    if name.startswith("envelope.") and name.endswith(":del"):
        member = name[len("envelope."):-len(":del")]
        return member == "trace_id" or (event_type, member) in OPTIONAL_ENVELOPE
    if name.startswith("payload.") and name.endswith(":del"):
        return (event_type, name[len("payload."):-len(":del")]) in OPTIONAL_CLAIMS
    if name.startswith("payload.") and name.endswith(":x"):
        return (event_type, name[len("payload."):-len(":x")]) in FREE_TEXT
    for suffix, allowed in ((":x", HEADER_FREE_TEXT), (":del", HEADER_OPTIONAL)):
        if name.startswith("header.") and name.endswith(suffix):
            path = name[len("header."):-len(suffix)].split(".")
            return ".".join("N" if p.isdigit() else p for p in path) in allowed
    return False


# The verdicts a redelivered event may get. Right after the next event it is within its source's
# window and must be recognized byte for byte. At the end of the trace it may be older than the
# window and belong to a request whose events the checker no longer holds (memory follows live
# handles): then it is a sequence regression, and not replayed (docs/trace-format.md).
# A copy whose bytes differ (its monotonic_ns restamped) right after the next event: the same
# event (id and number) with other bytes, one TRACE_EVENT_ID_CONFLICT; the copy is not replayed.
REDELIVERIES = {
    "redeliver:next": [[]],
    "redeliver:end": [[], ["TRACE_SEQUENCE_REGRESSION"]],
    "redeliver-changed:next": [["TRACE_EVENT_ID_CONFLICT"]],
}


def exact(found, listed, unlisted_why, stale_why):
    """Prints a FAIL line for each of `found` not in `listed` and each of `listed` not found
    ((fixture, line, mutation) triples); returns how many."""
    for rel, line, name in sorted(found - listed):
        print(f"FAIL {rel}:{line} {name}: {unlisted_why}")
    for rel, line, name in sorted(listed - found):
        print(f"FAIL {rel}:{line} {name}: {stale_why}")
    return len(found ^ listed)


def write(path, lines):
    with open(path, "w") as f:
        f.write("".join(json.dumps(l, separators=(",", ":")) + "\n" for l in lines))


def check_many(binary, paths):
    """{path: [code, ...]} of `kvconform validate --format json` over `paths` (the same trace
    checker as `kvconform check`; one process for many traces, since a CUDA build's start-up
    alone is ~0.1 s). A path missing from the answer got no verdict."""
    out = {}
    for at in range(0, len(paths), 400):
        chunk = paths[at:at + 400]
        r = subprocess.run([binary, "validate", "--format", "json"] + chunk,
                           capture_output=True, text=True)
        try:
            for doc in json.loads(r.stdout)["files"]:
                out[doc["path"]] = [v["code"] for v in doc.get("violations", [])]
        except (json.JSONDecodeError, KeyError, TypeError):
            pass  # reported by the caller as no verdict
    return out


# The distinct codes an event's source mutation may raise. Another component than the header
# declares for the source: the event is dropped (one code). A source the header does not declare:
# reported once and adopted, and the declared source it was taken from then has a hole in its
# sequence (a true gap; nothing tells the checker which source the event came from).
SOURCE_VERDICTS = {
    "source_component:other": [{"TRACE_SOURCE_UNDECLARED"}],
    # Another declared source's name, of another plane (the event keeps its own component): one
    # code, the event replayed and not numbered in that source, whose name it took; the hole its
    # own source shows is not a gap (since 2026-12-06, probe 83).
    "source_instance:other_plane": [{"TRACE_SOURCE_UNDECLARED"}],
    "source_instance:other": [{"TRACE_SOURCE_UNDECLARED"},
                              {"TRACE_SOURCE_UNDECLARED", "TRACE_SEQUENCE_GAP"}],
}

OUTCOMES = ("success", "replayed", "rejected", "failure", "cancelled")
# Renaming an event's request or operation to one no event names, or making its request
# unreadable: checked for silence only. For the request or operation it was renamed from, the
# event is lost, and their later events may each raise a code (no gating can know which request
# the event meant; an event with an operation gates that operation's request).
RENAMES = ("request_id:other", "operation_id:other", "envelope.request_id:type",
           "envelope.request_id:del")
# An event and the next one emitted in the other order (named at the first one's line). Many
# pairs commute (two layers' stages, two requests' events), so a swap may raise nothing; one that
# does not commute must raise one distinct code (the later events of what it broke are gated).
SWAP = "swap:next"
# An event left out, its source's later events renumbered (named at its line). Leaving out an
# observation, a read or a stage of a transaction that never publishes may raise nothing; any
# other omission must raise one distinct code (the later events that needed it are gated).
OMIT = "omit"


def source_of(event):
    """The (source_instance, source_component) that numbers `event`."""
    return event.get("source_instance"), event.get("source_component")


def members(value, path=()):
    """(path, value) of every member and array element inside `value`, depth first."""
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for k, v in items:
        yield path + (k,), v
        yield from members(v, path + (k,))


def parent(root, path):
    """The object or array holding the member or element at `path` of `root`."""
    for k in path[:-1]:
        root = root[k]
    return root


def header_shape_mutations(header):
    """(name, function of the header) retyping every member and array element of the header
    and deleting every member (":type", ":del")."""
    out = []
    for path, v in members(header):
        retyped = 7 if isinstance(v, (str, dict, list)) else [] if v is None else "x"
        name = "header." + ".".join(map(str, path))
        out.append((name + ":type",
                    lambda h, p=path, r=retyped: parent(h, p).__setitem__(p[-1], r)))
        if not isinstance(path[-1], int):
            out.append((name + ":del", lambda h, p=path: parent(h, p).pop(p[-1])))
    return out


def header_scale_mutations(header):
    """(name, function of the header) doubling the ABI's bytes_per_token: still a multiple of
    num_layers, so only an event that makes a byte claim can tell (its + 1 trips the header's
    own multiple rule where num_layers > 1)."""
    abi = header.get("cache_abi")
    if not isinstance(abi, dict) or isinstance(abi.get("bytes_per_token"), bool) or \
            not isinstance(abi.get("bytes_per_token"), int):
        return []
    return [("header.cache_abi.bytes_per_token*2",
             lambda h: h["cache_abi"].__setitem__("bytes_per_token",
                                                  2 * h["cache_abi"]["bytes_per_token"]))]


def scalar_mutations(prefix, root, skip_top_ints):
    """(name, function of the event) changing each integer (+ 1) or string ("x" appended)
    inside `root` (the event's member `prefix`, or the whole line when prefix is "header")."""
    out = []
    for path, v in members(root):
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            continue
        if skip_top_ints and len(path) == 1 and isinstance(v, int):
            continue  # payload.<member>+1 is already a mutation
        delta = 1 if isinstance(v, int) else "x"
        name = prefix + "." + ".".join(map(str, path)) + ("+1" if delta == 1 else ":x")

        def apply(r, p=path, d=delta):
            parent(r, p)[p[-1]] += d
        out.append((name, apply if prefix == "header" else
                    (lambda e, a=apply, m=prefix: a(e[m]))))
    return out


def mutations(event):
    """(name, function applying the change to a copy of the event) for one event."""
    out = [("event_type", lambda e: e.__setitem__("event_type", "bogus_type"))]
    for field in ("base_snapshot", "result_snapshot", "handle_generation"):
        if isinstance(event.get(field), int):
            out.append((field + "+1", lambda e, f=field: e.__setitem__(f, e[f] + 1)))
    for outcome in OUTCOMES:
        if outcome != (event.get("outcome") or "success"):
            out.append(("outcome:" + outcome, lambda e, o=outcome: e.__setitem__("outcome", o)))
    if isinstance(event.get("source_component"), str):
        other = "semantic" if event["source_component"] == "allocator" else "allocator"
        out.append(("source_component:other",
                    lambda e, o=other: e.__setitem__("source_component", o)))
    if isinstance(event.get("source_instance"), str):
        out.append(("source_instance:other",
                    lambda e: e.__setitem__("source_instance", e["source_instance"] + "-other")))
    for field in ("request_id", "operation_id"):
        if isinstance(event.get(field), str):
            out.append((field + ":other",
                        lambda e, f=field: e.__setitem__(f, "renamed-" + e[f])))
    # Each envelope member retyped, and deleted where it is not null (a null member and an absent
    # one mean the same).
    for k, v in event.items():
        if k == "payload":
            continue
        retyped = 7 if isinstance(v, str) else [] if v is None else "x"  # never a valid type
        out.append(("envelope." + k + ":type", lambda e, k=k, r=retyped: e.__setitem__(k, r)))
        if v is not None:
            out.append(("envelope." + k + ":del", lambda e, k=k: e.pop(k)))
    payload = event.get("payload")
    if isinstance(payload, dict):
        for k, v in payload.items():
            retyped = 7 if isinstance(v, str) else "x"
            out.append(("payload." + k + ":type",
                        lambda e, k=k, r=retyped: e["payload"].__setitem__(k, r)))
            out.append(("payload." + k + ":del", lambda e, k=k: e["payload"].pop(k)))
            if isinstance(v, int) and not isinstance(v, bool):
                out.append(("payload." + k + "+1",
                            lambda e, k=k: e["payload"].__setitem__(k, e["payload"][k] + 1)))
        # Every other integer and string of the payload, nested ones included.
        out += scalar_mutations("payload", payload, True)
    return out


def main():
    args = [a for a in sys.argv[1:] if a not in ("--list", "--none", "--check")]
    binary = args[0] if args else os.path.join(ROOT, "build/bin/kvconform")
    if not os.access(binary, os.X_OK):
        sys.exit(f"gating_sweep: {binary} not found (build first, or pass the binary)")
    files = sorted(glob.glob(os.path.join(ROOT, "fixtures/m5_1/**/*.jsonl"), recursive=True) +
                   glob.glob(os.path.join(ROOT, "fixtures/m5_6/trace/*.jsonl")))
    counts = collections.Counter()
    several = []
    silent = []
    misjudged = []  # redeliveries with a verdict REDELIVERIES does not allow
    # SWAP / OMIT -> {distinct codes raised: cases}
    order_counts = {SWAP: collections.Counter(), OMIT: collections.Counter()}
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            with open(f) as fh:
                lines = [json.loads(l) for l in fh]
            rel = os.path.relpath(f, ROOT)
            base = os.path.join(tmp, "base.jsonl")
            write(base, lines)
            if check_many(binary, [base]).get(base) != []:
                print(f"{rel}: the unmutated fixture does not pass; skipped")
                continue
            cases = []  # (path, line, event type, mutation name)

            def add(trace, i, name):
                """Writes `trace` as the case `name` of the event on lines[i]."""
                path = os.path.join(tmp, f"m{len(cases):05d}.jsonl")
                write(path, trace)
                cases.append((path, i + 1, lines[i].get("event_type"), name))

            declared = [src for src in lines[0].get("sources", []) if isinstance(src, dict)]
            for i in range(1, len(lines)):
                for name, apply in mutations(lines[i]):
                    mutated = copy.deepcopy(lines)
                    apply(mutated[i])
                    add(mutated, i, name)
                # The event under the name of each declared source of another plane that has sent
                # an event before it (a source with none yet starts its numbering at it: a
                # misdeclared header cannot be told from a relabel there).
                for src in declared:
                    if (src.get("source_component") != lines[i].get("source_component") and
                            any(l.get("source_instance") == src.get("source_instance")
                                for l in lines[1:i])):
                        mutated = copy.deepcopy(lines)
                        mutated[i]["source_instance"] = src.get("source_instance")
                        add(mutated, i, "source_instance:other_plane")
            # The header: each integer and string changed, each member and element retyped, each
            # member deleted (named at line 1).
            for name, apply in (scalar_mutations("header", lines[0], False) +
                                header_shape_mutations(lines[0]) +
                                header_scale_mutations(lines[0])):
                mutated = copy.deepcopy(lines)
                apply(mutated[0])
                add(mutated, 0, name)
            # Redeliveries: each event delivered again, unchanged, after the next event and at the
            # end of the trace (M5.1 0x07: duplicates are deduplicated, not replayed twice).
            for i in range(1, len(lines)):
                for name, at in (("redeliver:next", min(i + 2, len(lines))),
                                 ("redeliver:end", len(lines))):
                    add(lines[:at] + [lines[i]] + lines[at:], i, name)
                if isinstance(lines[i].get("monotonic_ns"), int):
                    at = min(i + 2, len(lines))
                    changed = dict(lines[i], monotonic_ns=lines[i]["monotonic_ns"] + 1)
                    add(lines[:at] + [changed] + lines[at:], i, "redeliver-changed:next")
            # Emission order: each pair of adjacent events in the other order, numbered in the new
            # order where they share a source (a pair from two sources keeps its numbers).
            for i in range(1, len(lines) - 1):
                a, b = copy.deepcopy(lines[i]), copy.deepcopy(lines[i + 1])
                if source_of(a) == source_of(b):
                    for k in ("local_sequence", "monotonic_ns"):
                        if k in a and k in b:
                            a[k], b[k] = b[k], a[k]
                add(lines[:i] + [b, a] + lines[i + 2:], i, SWAP)
            # Omission: each event left out, numbered as if it had never been emitted.
            for i in range(1, len(lines)):
                rest = copy.deepcopy(lines[i + 1:])
                for e in rest:
                    if (source_of(e) == source_of(lines[i]) and
                            isinstance(e.get("local_sequence"), int)):
                        e["local_sequence"] -= 1
                add(lines[:i] + rest, i, OMIT)
            verdicts = check_many(binary, [c[0] for c in cases])
            for path, line, event_type, name in cases:
                codes = verdicts.get(path)
                os.remove(path)
                if name in (SWAP, OMIT):
                    if codes is None:
                        print(f"{rel} line {line} {name}: no JSON verdict")
                        counts["no verdict"] += 1
                    else:
                        order_counts[name][len(set(codes))] += 1
                        if len(set(codes)) > 1:
                            several.append((rel, line, event_type, name, codes))
                    continue
                if name in REDELIVERIES:
                    if codes is None or codes not in REDELIVERIES[name]:
                        misjudged.append((rel, line, name, codes))
                    continue
                if name in SOURCE_VERDICTS:
                    if codes is None or set(codes) not in SOURCE_VERDICTS[name]:
                        misjudged.append((rel, line, name, codes))
                    continue
                if codes is None:
                    print(f"{rel} line {line} {name}: no JSON verdict")
                    counts["no verdict"] += 1
                    continue
                counts[len(codes)] += 1
                if not codes:
                    silent.append((rel, line, event_type, name))
                if len(codes) > 1:
                    several.append((rel, line, event_type, name, codes))
    print("violations raised -> mutations:",
          ", ".join(f"{k}: {counts[k]}" for k in sorted(counts, key=str)))
    for name, what in ((SWAP, "adjacent pairs swapped"), (OMIT, "events left out")):
        print(f"distinct codes raised -> {what}:",
              ", ".join(f"{k}: {order_counts[name][k]}" for k in sorted(order_counts[name])))
    print(f"{len(several)} mutations raise more than one violation"
          + ("" if "--list" in sys.argv else " (--list prints them)"))
    if "--list" in sys.argv:
        for rel, line, event_type, name, codes in several:
            print(f"  {rel}:{line} {event_type} {name}: {' '.join(codes)}")
    if "--check" in sys.argv:
        distinct = {(rel, line, name) for rel, line, _, name, codes in several
                    if len(set(codes)) > 1 and name not in RENAMES}
        failures = exact(distinct, set(), "several distinct codes (a gating gap)", "")
        quiet = {(rel, line, name) for rel, line, event_type, name in silent
                 if not allowed_silent(event_type, name)}
        failures += exact(quiet, set(KNOWN_SILENT),
                          "raises no violation (a blind spot of the checker, or a change the "
                          "contract leaves free: list it in KNOWN_SILENT with why)",
                          "listed in KNOWN_SILENT but now raises a violation (remove it from "
                          "the list)")
        for rel, line, name, codes in misjudged:
            why = (f"expected one of {REDELIVERIES[name]}" if name in REDELIVERIES else
                   f"expected one of {[sorted(v) for v in SOURCE_VERDICTS.get(name, [])]}")
            print(f"FAIL {rel}:{line} {name}: {codes} ({why})")
        if counts["no verdict"]:
            print(f"FAIL {counts['no verdict']} mutations got no JSON verdict")
        if failures or misjudged or counts["no verdict"]:
            sys.exit(1)
        print(f"gating sweep: every redelivery deduplicated or (late) one sequence regression, "
              f"every changed redelivery one TRACE_EVENT_ID_CONFLICT; "
              f"every source mutation as SOURCE_VERDICTS allows; "
              f"at most one distinct code per mutation but a rename; {len(silent)} silent mutations, "
              f"each an optional claim deleted, a change of free text or one of the "
              f"{len(KNOWN_SILENT)} listed with its reason")
    if "--none" in sys.argv:
        print(f"{len(silent)} mutations raise no violation")
        for rel, line, event_type, name in silent:
            print(f"  {rel}:{line} {event_type} {name}")


if __name__ == "__main__":
    main()
