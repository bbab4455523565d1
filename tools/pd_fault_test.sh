#!/usr/bin/env bash
# Fault injection on the real two-process prefill-to-decode handoff (kvconform pd-run over UCX).
# Run by ctest (pd_fault_injection) from the source root with KVCONFORM=path/to/kvconform.
# Each case runs prefill and decode as two processes on the smallest fixture model and checks:
# the decode side never publishes a partial or wrong cache (identical output or a failure with
# its stable code), how it recovered, and that credits and destination blocks are back in their
# pools on both sides (the workers' counters).
set -u
K=${KVCONFORM:-build/bin/kvconform}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
MODEL=fixtures/models/mqa
# 12 prompt tokens, 4 per chunk: 3 chunks x 2 layers = 6 chunks of 256 B; a 512 B window.
BASE=(pd-run --model "$MODEL" --prompt-ids 3,14,15,92,65,35,89,79,32,38,46,26 --max-new-tokens 4
      --deterministic --chunk-tokens 4 --credit-bytes 512 --peer-timeout-ms 3000 --rto-ms 150
      --format json)

# case NAME EXPECTED_RC PYTHON_ASSERTIONS [extra pd-run args...]; `r` is the pd-run JSON.
case_() {
  local name=$1 want=$2 py=$3; shift 3
  local t0=$(date +%s.%N)
  "$K" "${BASE[@]}" "$@" >"$T/$name.json" 2>"$T/$name.err"
  local rc=$?
  local dt=$(python3 -c "import sys;print(f'{float(sys.argv[2])-float(sys.argv[1]):.2f}')" "$t0" "$(date +%s.%N)")
  if [ "$rc" -ne "$want" ]; then
    fail=$((fail+1)); echo "FAIL $name: exit $rc, expected $want (${dt}s)"
    grep -v '^ *[0-9]*,\?$' "$T/$name.json" | head -c 3000; tail -20 "$T/$name.err"; return
  fi
  if python3 - "$T/$name.json" <<PY
import json, sys
r = json.load(open(sys.argv[1]))
p, d = r.get("prefill", {}), r.get("decode", {})
def leak_free():
    assert r["leaks"]["decode_leak_free"] and r["leaks"]["prefill_credit_returned"], r["leaks"]
    if d:
        assert d["credit"]["in_flight_end"] == 0 and d["pool"]["unpublished"] == 0, (d["credit"], d["pool"])
        assert d["credit"]["high_water"] <= d["credit"]["capacity"], d["credit"]
    if p.get("credit"):
        assert p["credit"]["in_flight_end"] == 0, p["credit"]
        assert p["credit"]["high_water"] <= p["credit"]["capacity"], p["credit"]
def identical(source=True):
    assert r["verdict"] == "identical", r.get("reason")
    assert all(s["bit_identical"] for s in r["steps"]) and len(r["steps"]) == 4, r["steps"]
    k = r["kv_sha256"]
    assert k["colocated"] == k["published"] and len(k["colocated"]) == 64, k
    assert k["source"] == k["colocated"] or not source, k
    assert d["publications"] == 1, d["publications"]
    assert d["pool"]["decode_owned"] == 1 and d["pool"]["free"] == d["pool"]["capacity"] - 1, d["pool"]
    leak_free()
def failed(code):
    assert r["verdict"] == "failed" and r.get("code") == code, (r.get("code"), r.get("reason"))
    assert "published_kv_sha256" not in d, "a failed request published a cache"
    assert d.get("publications", 0) == 0 and d.get("pool", {}).get("decode_owned", 0) == 0, d.get("pool")
    leak_free()
$py
PY
  then pass=$((pass+1)); echo "ok   $name (${dt}s): $(python3 -c 'import json,sys;r=json.load(open(sys.argv[1]));print(r["verdict"], r.get("code",""), "| recovery:", r["recovery"])' "$T/$name.json")"
  else fail=$((fail+1)); echo "FAIL $name (${dt}s)"; grep -v '^ *[0-9]*,\?$' "$T/$name.json" | head -c 4000; echo; fi
}

case_ baseline_tcp 0 'identical(); assert r["recovery"] == "none needed"; t = r["transfer"]; assert t["published_payload_bytes"] == t["expected_bytes"] == 12 * t["bytes_per_token"] and d["decode_appends"] == 3 and d["decode_handle"]["generation"] == 1, (t, d.get("decode_handle")); assert d["capability"] == {"required": True, "authorized": 1, "denied": 0}, d["capability"]'
case_ baseline_shm 0 'identical()' --transport shm
case_ drop_chunk 0 'identical(); assert p["retransmits"] >= 1 and p["dropped"] == 1' --fault drop:2
case_ duplicate_chunk 0 'identical(); assert p["duplicates_sent"] == 1 and d["duplicates_absorbed"] >= 1 and d["txn_retries"] >= 1' --fault dup:1
case_ reorder_chunks 0 'identical()' --fault reorder
case_ delay_chunk 0 'identical(); assert p["attempts"][0]["outcome"] == "published"' --fault delay:0:100
case_ corrupt_chunk 0 'identical(); a = p["attempts"]; assert a[0]["outcome"] == "aborted" and a[0]["error"]["code"] == "HANDOFF_CHECKSUM_MISMATCH" and a[1]["outcome"] == "published" and d["published_generation"] == 2, a' --fault corrupt:3
case_ stale_generation_after_reroute 0 'identical(); a = {x["attempt"]: x for x in p["attempts"]}; assert a[2]["outcome"] == "published" and a[1]["error"]["code"] == "HANDOFF_STALE_GENERATION" and d["published_generation"] == 2 and d["late_completions_rejected"] >= 1, a' --fault stale-reroute
case_ credit_window_smaller_than_chunk 1 'failed("HANDOFF_CREDIT_WINDOW_TOO_SMALL")' --fault credit-window:128
case_ credit_exhausted_by_unacked_chunks 0 'identical(); assert p["credit_waits"] >= 1 and d["credit"]["high_water"] == d["credit"]["capacity"] == 512, (p["credit_waits"], d["credit"])' --fault credit-stall
case_ credit_never_returned 1 'failed("PD_CREDIT_STARVED"); assert p["retransmits"] >= 1' --fault credit-starve
case_ kill_decode_mid_transfer 0 'identical(); f = r["rerouted_from"]; assert f["workers"]["decode"] == "killed by signal 9" and f["prefill"]["outcome"] == "failed" and f["prefill"]["error"]["code"] == "PD_PEER_LOST" and f["prefill"]["credit"]["in_flight_end"] == 0 and f["prefill_credit_returned"], f; assert f["next_attempt"] == 2 and d["published_generation"] == 2 and p["attempts"][0]["attempt"] == 2 and "rerouted" in r["recovery"], (f["next_attempt"], d.get("published_generation"))' --fault kill-decode:3
case_ kill_decode_no_reroute 1 'assert r["verdict"] == "failed" and r["code"] in ("PD_PEER_LOST",), r.get("reason"); assert r["workers"]["decode"] == "killed by signal 9" and "rerouted_from" not in r; assert p["credit"]["in_flight_end"] == 0 and p["outcome"] == "failed"' --fault kill-decode:3 --no-reroute
case_ hang_decode_mid_transfer 1 'assert r["verdict"] == "failed" and r["code"] == "PD_CREDIT_STARVED", r.get("reason"); assert r["workers"]["decode"] == "killed by signal 9" and p["outcome"] == "failed" and p["credit"]["in_flight_end"] == 0' --fault hang-decode:3 --peer-timeout-ms 1000
# The prefill worker's wait for acknowledgements is bounded by --peer-timeout-ms even when the
# RTO is longer: no progress for one peer timeout is PD_PEER_TIMEOUT, before any retransmission.
case_ hang_decode_before_the_rto 1 'assert r["verdict"] == "failed" and r["code"] == "PD_PEER_TIMEOUT", (r.get("code"), r.get("reason")); assert p["retransmits"] == 0 and p["credit"]["in_flight_end"] == 0, (p["retransmits"], p["credit"])' --fault hang-decode:3 --peer-timeout-ms 1000 --rto-ms 60000
case_ kill_prefill_after_publication 0 'identical(source=False); assert r["workers"]["prefill"] == "killed by signal 9" and "peer_lost_after_publication" in d' --fault kill-prefill-after-publish
# Warm destination: D holds the first 5 prompt tokens itself; only X = U \ V_D (7 tokens) moves,
# published as a suffix append onto D's visible prefix, decoded from the published handle.
case_ warm_prefix_suffix 0 'identical(); t = r["transfer"]; assert t["warm_prefix_tokens"] == 5 and t["transfer_tokens"] == 7 and t["published_payload_bytes"] == t["sent_payload_bytes"] == t["expected_bytes"] == 7 * t["bytes_per_token"], t; assert d["warm_prefix"]["tokens"] == 5 and d["decode_appends"] == 3, d.get("warm_prefix")' --warm-prefix 5
# Probe 37: on shm P cannot see its peer die (it fails PD_CREDIT_STARVED); pd-run, which sees the
# decode worker killed, reroutes as on tcp.
case_ kill_decode_shm_reroutes 0 'identical(); f = r["rerouted_from"]; assert f["workers"]["decode"] == "killed by signal 9" and f["prefill"]["error"]["code"] in ("PD_CREDIT_STARVED", "PD_PEER_TIMEOUT"), f; assert d["published_generation"] == 2, d.get("published_generation")' --fault kill-decode:3 --transport shm
# Probe 71: with reroute disabled on shm the verdict's code said PD_CREDIT_STARVED (what the
# prefill worker saw) beside "decode worker killed by signal 9": the run knows the peer died.
case_ kill_decode_shm_no_reroute 1 'assert r["verdict"] == "failed" and r["code"] == "PD_PEER_LOST", (r.get("code"), r.get("reason")); assert "the prefill worker saw PD_" in r["reason"] and r["workers"]["decode"] == "killed by signal 9", r["reason"]' --fault kill-decode:3 --transport shm --no-reroute

# Probe 37: a warm decode worker whose prefix is another prompt's (same length) must not reuse it.
# The prefix handle names the prefix's identity: P's plan names a prefix D does not hold, so the
# transfer is refused and nothing is published (before: D decoded a mixed cache, both exit 0).
W="$T/warm_other"; mkdir -p "$W"
"$K" pd-worker --role decode --bootstrap 127.0.0.1:0 --port-file "$W/port" --result "$W/d.json" \
  --model "$MODEL" --prompt-ids 1,2,3,4,5,35,89,79,32,38,46,26 --warm-prefix 5 \
  --peer-timeout-ms 3000 >"$W/d.log" 2>&1 &
dpid=$!
for _ in $(seq 200); do [ -s "$W/port" ] && break; sleep 0.05; done
"$K" pd-worker --role prefill --bootstrap "127.0.0.1:$(cat "$W/port" 2>/dev/null)" --model "$MODEL" \
  --prompt-ids 3,14,15,92,65,35,89,79,32,38,46,26 --max-new-tokens 4 --chunk-tokens 4 \
  --warm-prefix 5 --peer-timeout-ms 3000 --result "$W/p.json" >"$W/p.log" 2>&1
prc=$?
wait $dpid; drc=$?
if [ $prc -eq 1 ] && [ $drc -eq 1 ] && python3 - "$W/d.json" "$W/p.json" <<'PY'
import json, sys
d, p = (json.load(open(f)) for f in sys.argv[1:3])
assert d["error"]["code"] == p["error"]["code"] == "LIFECYCLE_UNKNOWN_HANDLE", (d.get("error"), p.get("error"))
assert "never published" in d["error"]["message"] and "tokens" not in d and d.get("publications", 0) == 0, d
PY
then pass=$((pass+1)); echo "ok   warm_prefix_of_another_prompt"; else fail=$((fail+1)); echo "FAIL warm_prefix_of_another_prompt: prefill rc $prc, decode rc $drc"; cat "$W"/*.json "$W"/*.log | head -c 3000; fi

# Probe 37: an empty $KVCONFORM_PD_CAPABILITY_KEY is no key: pd-run still makes one, so the forged
# capability is refused (before: capabilities were off and the fault passed).
KVCONFORM_PD_CAPABILITY_KEY= case_ capability_forged_empty_env_key 1 'failed("HANDOFF_CAPABILITY_SIGNATURE_INVALID")' --fault cap-forged

# Capabilities (M5.6 0x0FE): pd-run gives both workers one random key; P signs a capability per
# attempt, D authorizes it before reserving and every chunk write against it. Each bad
# capability is refused with its code: nothing reserved or published, nothing leaked.
case_ capability_forged 1 'failed("HANDOFF_CAPABILITY_SIGNATURE_INVALID"); assert d["capability"] == {"required": True, "authorized": 0, "denied": 1}, d["capability"]' --fault cap-forged
case_ capability_expired 1 'failed("HANDOFF_CAPABILITY_EXPIRED"); assert d["capability"]["denied"] == 1' --fault cap-expired
case_ capability_replayed_nonce 1 'failed("HANDOFF_CAPABILITY_NONCE_REPLAYED"); a = p["attempts"]; assert a[0]["error"]["code"] == "HANDOFF_CHECKSUM_MISMATCH" and a[1]["error"]["code"] == "HANDOFF_CAPABILITY_NONCE_REPLAYED", a; assert d["capability"]["authorized"] == 1 and d["capability"]["denied"] == 1, d["capability"]' --fault cap-replay
case_ capability_region_outside 1 'failed("HANDOFF_CAPABILITY_REGION_DENIED"); assert "L0/t8+4" in r["reason"], r["reason"]' --fault cap-region:2
case_ capability_bytes_beyond_bound 1 'failed("HANDOFF_CAPABILITY_BYTES_EXCEEDED"); assert "1536" in r["reason"], r["reason"]' --fault cap-bytes

# Bad usage: exit 2 with a clear message.
"$K" "${BASE[@]}" --fault explode >"$T/out" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "expected none, drop:K" "$T/out"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL bad_fault: rc=$rc"; cat "$T/out"; fi
"$K" "${BASE[@]}" --warm-prefix 12 >"$T/out" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "must be below the prompt length 12" "$T/out"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL warm_prefix_whole_prompt: rc=$rc"; cat "$T/out"; fi
"$K" "${BASE[@]}" --transport rdma >"$T/out" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "expected tcp or shm" "$T/out"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL bad_transport: rc=$rc"; cat "$T/out"; fi

# Probe 37: flags the run cannot honour are bad usage (exit 2, naming the flag), not a protocol
# failure or a silent no-op.
usage() {  # usage NAME PATTERN ARGS...: exit 2 and PATTERN in the output
  local name=$1 pat=$2; shift 2
  "$@" >"$T/out" 2>&1; local rc=$?
  if [ $rc -eq 2 ] && grep -q -- "$pat" "$T/out"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name: rc=$rc"; cat "$T/out"; fi
}
usage fault_chunk_out_of_range "chunk 6 does not exist; the plan has chunks 0..5" "$K" "${BASE[@]}" --fault corrupt:6
usage fault_kill_after_all_chunks "has only 6" "$K" "${BASE[@]}" --fault kill-decode:7
usage peer_timeout_beyond_an_hour "--peer-timeout-ms: 18446744073709551615; expected 1..3600000" "$K" "${BASE[@]}" --peer-timeout-ms 18446744073709551615
usage rto_beyond_an_hour "--rto-ms: 10000000000000; expected" "$K" "${BASE[@]}" --rto-ms 10000000000000
usage fault_delay_beyond_an_hour "the delay must be at most 3600000 ms" "$K" "${BASE[@]}" --fault delay:0:3600001
usage max_new_tokens_past_positions "--max-new-tokens: 300; a prompt of 12 tokens leaves room for at most 245" "$K" pd-run --model "$MODEL" --prompt-ids 3,14,15,92,65,35,89,79,32,38,46,26 --max-new-tokens 300
usage first_attempt_past_tag "--first-attempt: 16777216; expected 1..16777214" "$K" pd-worker --role prefill --bootstrap 127.0.0.1:1 --model "$MODEL" --prompt-ids 1,2 --first-attempt 16777216
usage pd_bench_refuses_faults "faults are pd-run's" "$K" pd-bench --bytes 100000 --fault drop:1
usage pd_bench_bytes_bound "--bytes: 1000000000000; expected 1..17179869184" "$K" pd-bench --bytes 1000000000000
# Every option is judged before either baseline runs (a bad --mode waited out the peer timeout,
# and --checksum-only took any value).
usage pd_bench_mode "--mode: 'weird'; expected deterministic or fast" "$K" pd-bench --bytes 1024 --mode weird
usage pd_bench_checksum_only_transport "--transport: 'bogus'; expected tcp or shm" "$K" pd-bench --bytes 1024 --checksum-only --transport bogus
mkdir -p "$T/keydir"
usage capability_key_file_directory "--capability-key-file: $T/keydir: read failed: Is a directory" "$K" pd-bench --bytes 1024 --capability-key-file "$T/keydir"
usage pd_bench_raw_or_checksum_only "--raw excludes --checksum-only" "$K" pd-bench --bytes 1024 --raw --checksum-only
usage pd_bench_raw_window_below_a_message "--credit-bytes: 100 is smaller than one message of 32768 bytes" "$K" pd-bench --raw --credit-bytes 100 --chunk-bytes 65536 --bytes 1048576
usage bootstrap_host_name "host 'example.com' is not an IPv4 address or localhost" "$K" pd-worker --role decode --bootstrap example.com:80 --model "$MODEL"
# Probe 48: a worker without --bootstrap timed out on a hidden 127.0.0.1:0 (exit 1); --mode fast
# beside --deterministic ran deterministic.
usage worker_needs_bootstrap "--bootstrap is required" "$K" pd-worker --role prefill --model "$MODEL" --prompt-ids 1,2
usage deterministic_contradicts_fast "--deterministic and --mode fast contradict" "$K" pd-run --model "$MODEL" --prompt-ids 1,2 --mode fast --deterministic
# pd-bench reports what moved beside what was asked (the source rounds to whole token-layers).
"$K" pd-bench --bytes 1 >"$T/out" 2>&1; rc=$?
if [ $rc -eq 0 ] && python3 -c 'import json,sys; j=json.loads(open(sys.argv[1]).read()); assert j["requested_bytes"] == 1 and j["bytes"] == 131072 and j["message_bytes"] * j["chunks"] == j["bytes"], j' "$T/out"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL pd_bench_reports_what_moved: rc=$rc"; cat "$T/out"; fi
# A huge --chunk-tokens with a warm prefix is one chunk per layer (before: the chunk loop wrapped).
"$K" pd-run --model "$MODEL" --prompt-ids 3,14,15,92,65,35,89,79,32,38,46,26 --max-new-tokens 4 \
  --chunk-tokens 18446744073709551614 --warm-prefix 5 --credit-bytes 4096 --format json >"$T/out" 2>&1; rc=$?
if [ $rc -eq 0 ] && python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["verdict"] == "identical" and r["prefill"]["chunks"] == 2, r["prefill"].get("chunks")' "$T/out"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL warm_prefix_huge_chunk: rc=$rc"; head -c 2000 "$T/out"; fi

# Probe 37: a pd-run stopped by SIGTERM leaves no worker, key file or run directory behind.
before=$(ls -d /tmp/kvconform-pd-* 2>/dev/null | wc -l)
"$K" "${BASE[@]}" --fault delay:0:4000 >/dev/null 2>&1 &
rpid=$!
for _ in $(seq 100); do [ "$(pgrep -f -P $rpid pd-worker | wc -l)" -ge 2 ] && break; sleep 0.05; done
kids=$(pgrep -P $rpid | tr '\n' ' ')
kill -TERM $rpid; wait $rpid 2>/dev/null
sleep 0.5
left=0  # (a killed worker may stay a zombie until init reaps it: count the live ones)
for k in $kids; do case "$(ps -o stat= -p "$k" 2>/dev/null)" in ""|Z*) ;; *) left=$((left+1));; esac; done
after=$(ls -d /tmp/kvconform-pd-* 2>/dev/null | wc -l)
if [ -n "$kids" ] && [ $left -eq 0 ] && [ "$after" -le "$before" ]; then pass=$((pass+1)); echo "ok   sigterm_cleans_up"; else fail=$((fail+1)); echo "FAIL sigterm_cleans_up: workers [$kids] left $left, /tmp/kvconform-pd-* $before -> $after"; for k in $kids; do kill -9 "$k" 2>/dev/null; done; fi

echo "pd_fault_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
