#!/usr/bin/env bash
# End-to-end checks of build/bin/kvconform: exit codes, formats and calculator outputs.
# Run by ctest (cli_end_to_end) from the source root with KVCONFORM=path/to/kvconform.
set -u
K=${KVCONFORM:-build/bin/kvconform}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
check() {  # check NAME EXPECTED_RC CMD... ; output in $T/out
  local name=$1 want=$2; shift 2
  "$@" >"$T/out" 2>&1
  local rc=$?
  if [ "$rc" -eq "$want" ]; then pass=$((pass+1)); else
    fail=$((fail+1)); echo "FAIL $name: exit $rc, expected $want"; sed 's/^/    /' "$T/out" | head -20; fi
}
expect_out() {  # expect_out NAME GREP_PATTERN
  if grep -qE -- "$2" "$T/out"; then pass=$((pass+1)); else
    fail=$((fail+1)); echo "FAIL $1: output lacks /$2/"; sed 's/^/    /' "$T/out" | head -20; fi
}
expect_lines() {  # expect_lines NAME N: the output has exactly N lines
  local n; n=$(wc -l <"$T/out")
  if [ "$n" -eq "$2" ]; then pass=$((pass+1)); else
    fail=$((fail+1)); echo "FAIL $1: $n output lines, expected $2"; sed 's/^/    /' "$T/out" | head -20; fi
}
json_set() {  # json_set SRC DST KEY=VALUE: DST is SRC with KEY (dotted: a.b) set to Python VALUE
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); k,v=sys.argv[3].split('=',1); ks=k.split('.'); o=d
for x in ks[:-1]: o=o[x]
o[ks[-1]]=eval(v); json.dump(d,open(sys.argv[2],'w'))" "$1" "$2" "$3"
}

M=fixtures/m5_1/manifest/request_cache_manifest.json
check validate_ok 0 "$K" validate "$M"
check validate_all_fixtures 0 "$K" validate fixtures/*
check validate_all_invalid 1 "$K" validate invalid_fixtures/*
for f in invalid_fixtures/m5_1/manifest/*.json; do
  code=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["expected_code"])' "$f")
  check "invalid:$f" 1 "$K" validate --format json "$f"
  expect_out "invalid-code:$f" "\"code\": \"$code\""
done
# Probe 48: a data directory inside a walked tree was skipped without the documented note, and
# one named alone validated nothing with exit 0; an invalid fixture's JSON line did not say
# whether its code was raised.
mkdir -p "$T/tree/models" "$T/tree/_data" && cp "$M" "$T/tree/"
check validate_tree_skips_data 0 "$K" validate "$T/tree"; expect_out validate_tree_skips_data_msg '_data: data directory, not cases; skipped'
check validate_only_data_dir 2 "$K" validate "$T/tree/models"; expect_out validate_only_data_dir_msg 'nothing to validate'
# Probe 65: an argument that gives nothing to validate is an error row in every format (JUnit was
# all green and the JSON files listed nothing, beside exit 2).
mkdir -p "$T/emptydir"
check validate_empty_dir_junit 2 "$K" validate --format junit "$M" "$T/emptydir"; expect_out validate_empty_dir_junit_msg 'tests="2" failures="0" errors="1"'
check validate_empty_dir_json 2 "$K" validate --format json "$M" "$T/emptydir"; expect_out validate_empty_dir_json_msg '"error": "IoError: .*emptydir: no .json/.jsonl files"'
check validate_json_expected_raised 1 "$K" validate --format json invalid_fixtures/m5_1/manifest/zero_layers.json; expect_out validate_json_expected_raised_msg '"expected_code_raised": true'
check validate_junit 1 "$K" validate --format junit invalid_fixtures/m5_1/manifest/zero_layers.json
expect_out validate_junit_failure '<failure message="MANIFEST_SCHEMA_ZERO_EXTENT"'

# A directory entry with a document's name that is no document (a link to nothing, a FIFO) is an
# error naming it, in validate, fixture materialize and suite (the CLI doc audit of 2026-12-07:
# skipped silently; a FIFO is never opened, so nothing waits for a writer).
mkdir -p "$T/walk/sub" "$T/walkroot/fixtures"; cp "$M" "$T/walk/a.json"; cp "$M" "$T/walkroot/fixtures/a.json"
ln -sf /nonexistent "$T/walk/gone.json"; ln -sf /nonexistent "$T/walkroot/fixtures/gone.json"; mkfifo "$T/walk/sub/pipe.json"
check walk_validate_unlisted 2 timeout 60 "$K" validate "$T/walk"
expect_out walk_validate_dangling 'IoError: .*walk/gone.json: a link to nothing'; expect_out walk_validate_fifo 'IoError: .*walk/sub/pipe.json: not a regular file'
expect_out walk_validate_still_validates 'walk/a.json: OK'
check walk_materialize_unlisted 2 timeout 60 "$K" fixture materialize "$T/walk" --out-dir "$T/walkout"; expect_out walk_materialize_dangling 'walk/gone.json: a link to nothing'
check walk_suite_unlisted 1 timeout 60 "$K" suite --root "$T/walkroot"; expect_out walk_suite_dangling '^FAIL fixtures/gone: IoError: .*gone.json: a link to nothing'

# `fixture materialize`: every invalid fixture's document, written out, raises exactly the code
# its line names when validated as a document of its own (so a vendor's validator can run it).
check materialize_all 0 "$K" fixture materialize invalid_fixtures --out-dir "$T/mat"
cp "$T/out" "$T/mat.tsv"
check materialize_count 0 test "$(wc -l <"$T/mat.tsv")" -eq "$(git ls-files 'invalid_fixtures/*.json' | wc -l)"
"$K" validate --format json "$T/mat" >"$T/mat.json" 2>&1
check materialize_documents_raise_their_codes 0 python3 -c '
import json, sys
want = {}
for line in open(sys.argv[1]):
    out, code, fixture = line.rstrip("\n").split("\t")
    want[out] = code
got = {f["path"]: sorted({v["code"] for v in f.get("violations", [])}) for f in json.load(open(sys.argv[2]))["files"]}
bad = [(f, want[f], got.get(f)) for f in want if got.get(f) != [want[f]]]
for b in bad[:10]: print("document %s: expected only %s, raised %s" % b)
sys.exit(1 if bad or len(got) != len(want) else 0)' "$T/mat.tsv" "$T/mat.json"
check materialize_one_to_stdout 0 "$K" fixture materialize invalid_fixtures/m5_1/manifest/zero_layers.json
expect_out materialize_one_to_stdout_patched '"num_cache_layers":0'
check materialize_valid_fixture 2 "$K" fixture materialize "$M"; expect_out materialize_valid_fixture_msg 'not an invalid fixture \(kvconform.invalid_fixture/1\): its kind is "kvconform.request_cache_manifest/1"'
# A document that names no kind says what stands there (a kind 5 printed as kind "").
printf '{"kind": 5}' >"$T/kind5.json"; printf '{"case": "x"}' >"$T/nokind.json"; printf '[1]' >"$T/arr.json"
check materialize_kind_not_a_string 2 "$K" fixture materialize "$T/kind5.json"; expect_out materialize_kind_not_a_string_msg 'kind5.json: not an invalid fixture .*: its "kind" is a number$'
check materialize_no_kind 2 "$K" fixture materialize "$T/nokind.json"; expect_out materialize_no_kind_msg 'nokind.json: not an invalid fixture .*: it has no "kind" member$'
check materialize_not_an_object 2 "$K" fixture materialize "$T/arr.json"; expect_out materialize_not_an_object_msg 'arr.json: not an invalid fixture .*: it is a JSON array$'
check materialize_trace 2 "$K" fixture materialize fixtures/race/history.jsonl; expect_out materialize_trace_msg 'a JSON Lines document, not an invalid fixture'
check materialize_two_to_stdout 2 "$K" fixture materialize invalid_fixtures/m5_1/manifest/zero_layers.json invalid_fixtures/m5_1/manifest/zero_layers.json
expect_out materialize_two_to_stdout_msg 'give --out-dir'
printf '{"kind": "kvconform.invalid_fixture/1", "case": "x", "seed_ref": "s", "base": "nope.json", "patch": [{"op": "remove", "path": "/a"}], "expected_code": "INPUT_FIELD_UNKNOWN"}' >"$T/nobase.json"
check materialize_missing_base 2 "$K" fixture materialize "$T/nobase.json"; expect_out materialize_missing_base_msg 'INPUT_FIXTURE_MALFORMED.*nobase.json: base: .*nope.json'
mkdir -p "$T/clash/a" "$T/clash/a_b"
sed "s|\"base\": \"[^\"]*\"|\"base\": \"$PWD/$M\"|" invalid_fixtures/m5_1/manifest/zero_layers.json >"$T/clash/a/b_c.json"
cp "$T/clash/a/b_c.json" "$T/clash/a_b/c.json"
check materialize_name_clash 2 "$K" fixture materialize "$T/clash/a/b_c.json" "$T/clash/a_b/c.json" --out-dir "$T/clashout"
expect_out materialize_name_clash_msg 'is already taken by'
check materialize_only_valid_dir 2 "$K" fixture materialize fixtures/m5_1/manifest; expect_out materialize_only_valid_dir_msg 'no invalid fixture among the files given'

# Bad input: exit 2 with file, line and column.
printf '' >"$T/empty.json";               check empty 2 "$K" validate "$T/empty.json"; expect_out empty_msg 'empty.json:1:1: input is empty'
printf '{"a": 1,\n "a": 2}' >"$T/dup.json"; check dup 2 "$K" validate "$T/dup.json";     expect_out dup_msg 'dup.json:2:2: duplicate key'
printf '{"a": \xff}' >"$T/bin.json";       check nonutf8 2 "$K" validate "$T/bin.json"
printf '"\xc3"' >"$T/utf.json";             check badutf8 2 "$K" validate "$T/utf.json";     expect_out badutf8_msg 'UTF-8'
python3 -c 'print("["*100000)' >"$T/deep.json"; check deep 2 "$K" validate "$T/deep.json"; expect_out deep_msg 'nesting deeper'
printf '{"kind": "x"' >"$T/trunc.json";    check truncated 2 "$K" validate "$T/trunc.json"; expect_out trunc_msg 'trunc.json:1:13: unexpected end of input'
check missing_file 2 "$K" validate "$T/nope.json"; expect_out missing_msg 'cannot open'
printf '{"kind": "kvconform.nope/1"}' >"$T/kind.json"; check unknown_kind 1 "$K" validate "$T/kind.json"; expect_out kind_msg INPUT_UNKNOWN_KIND
check usage_no_args 2 "$K" validate
check usage_bad_format 2 "$K" validate --format xml "$M"

# Calculators reproduce the seed.
check kvbytes 0 "$K" calc kv-bytes --layers 2 --kv-heads 2 --head-dim 4 --k-bytes 2 --v-bytes 2 --lengths 5,3 --copies 1,2 --format json
for kv in '"bytes_per_token": 64' '"logical": 512' '"materialized": 704' '"rectangular": 640' '"phantom": 128'; do expect_out "kvbytes $kv" "$kv"; done
printf '{"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"hidden_size":4096,"torch_dtype":"bfloat16"}' >"$T/config.json"
check kvbytes_hf 0 "$K" calc kv-bytes --hf-config "$T/config.json" --format json; expect_out kvbytes_hf_131072 '"bytes_per_token": 131072'
# A latent (MLA) cache printed a full-K/V B_token (1,228,800 B/token for DeepSeek-V2); it needs a
# different cache ABI and is refused, naming the field (probe 17, finding 01).
printf '{"num_hidden_layers":60,"num_attention_heads":128,"num_key_value_heads":128,"hidden_size":5120,"kv_lora_rank":512,"qk_rope_head_dim":64,"v_head_dim":128,"torch_dtype":"bfloat16"}' >"$T/mla.json"
check kvbytes_hf_latent 2 "$K" calc kv-bytes --hf-config "$T/mla.json" --lengths 4096
expect_out kvbytes_hf_latent_msg 'field kv_lora_rank \(512\) declares a latent'
# The config is named once, by its path (it was "PATH: config.json: field ...").
expect_out kvbytes_hf_names_file_once '^kvconform calc: [^ ]*/mla\.json: field kv_lora_rank'
# A composite (multimodal) config keeps its language model in text_config (shaped like Gemma 3
# 4B's); it was refused as missing num_hidden_layers.
printf '{"architectures":["Gemma3ForConditionalGeneration"],"torch_dtype":"bfloat16","text_config":{"num_hidden_layers":34,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"hidden_size":2560},"vision_config":{"num_hidden_layers":27}}' >"$T/composite.json"
check kvbytes_hf_text_config 0 "$K" calc kv-bytes --hf-config "$T/composite.json" --format json
expect_out kvbytes_hf_text_config_139264 '"bytes_per_token": 139264'
# A geometry flag beside --hf-config was silently ignored; the two sources exclude each other.
check kvbytes_hf_and_flag 2 "$K" calc kv-bytes --hf-config "$T/config.json" --layers 2; expect_out kvbytes_hf_and_flag_msg 'excludes --hf-config'
# --dtype beside explicit geometry was ignored (exit 0, the --k-bytes width): probe 99.
check kvbytes_dtype_without_hf 2 "$K" calc kv-bytes --layers 2 --kv-heads 2 --head-dim 4 --k-bytes 2 --v-bytes 2 --dtype fp8; expect_out kvbytes_dtype_without_hf_msg 'applies to --hf-config only'
check kvbytes_negative 2 "$K" calc kv-bytes --layers -2 --kv-heads 2 --head-dim 4 --k-bytes 2 --v-bytes 2
check kvbytes_overflow 2 "$K" calc kv-bytes --layers 4294967296 --kv-heads 4294967296 --head-dim 4096 --k-bytes 2 --v-bytes 2
expect_out kvbytes_overflow_msg 'overflows'
# An empty list element was dropped ("5,,2" read as 5,2, shifting the lengths against their
# copies): probe 17, finding 07.
G4="--layers 2 --kv-heads 2 --head-dim 4 --k-bytes 2 --v-bytes 2"
# shellcheck disable=SC2086
check kvbytes_empty_length 2 "$K" calc kv-bytes $G4 --lengths 5,,2 --copies 1,2
expect_out kvbytes_empty_length_msg 'empty --lengths element 2 in "5,,2"'
# shellcheck disable=SC2086
check kvbytes_leading_empty 2 "$K" calc kv-bytes $G4 --lengths ,5
# shellcheck disable=SC2086
check kvbytes_empty_copy 2 "$K" calc kv-bytes $G4 --lengths 5,2 --copies 1,,2
expect_out kvbytes_empty_copy_msg 'empty --copies element 2'
# "--lengths=" (an empty value) took the next argument as the list: "--copies" was "element 1",
# or "5,3" after it was read as the lengths (probe 19). Any option given an empty value is refused.
# shellcheck disable=SC2086
check kvbytes_empty_option_value 2 "$K" calc kv-bytes $G4 --lengths= --copies 1
expect_out kvbytes_empty_option_value_msg 'option --lengths= has an empty value; expected --lengths=VALUE or --lengths VALUE'
# shellcheck disable=SC2086
check kvbytes_empty_option_value_before_list 2 "$K" calc kv-bytes $G4 --lengths= 5,3
# An invalid fixture whose patched document conforms fails its case; the text line says so, not
# "OK" (probe 33: only the JSON report did). Its exit code is validate's: 0, the document conforms.
printf '{"kind": "kvconform.invalid_fixture/1", "case": "t/accepted", "description": "d", "seed_ref": "M5.1 0x02", "base": "%s", "patch": [{"op": "replace", "path": "/description", "value": "x"}], "expected_code": "LEDGER_EXPECTED_DRIFT"}\n' \
  "$PWD/fixtures/m5_1/ledger/two_request_trajectory.json" >"$T/accepted_invalid.json"
check invalid_fixture_accepted 0 "$K" validate "$T/accepted_invalid.json"
expect_out invalid_fixture_accepted_msg 'invalid fixture, expects LEDGER_EXPECTED_DRIFT -> expected LEDGER_EXPECTED_DRIFT but the mutated document was accepted'
# A service metric beyond 64 bits (the byte-time of a Llama-8B-like request held 40 s in ns) is
# input the calculator cannot compute: exit 2, as for the other calculators (probe 33: exit 1).
cat >"$T/bytetime_overflow.json" <<'JSONEOF'
{"kind": "kvconform.service_trace/1", "cache_abi": {"cache_family": "full_kv", "num_cache_layers": 32, "kv_heads_per_rank": 8, "head_dim": 128, "key_bytes_per_scalar": 2, "value_bytes_per_scalar": 2}, "cache_abi_sha256": "a9a25234f20e5466ba6a36e7eeea9df346db65ec8bc8ac8e1b60ec4b98c60e5b", "bytes_per_token": 131072, "time_unit": "ns", "window": 41000000000, "slo": {"ttft_limit": 2000000000, "tbt_limit": 100000000}, "tpot_convention": "mean_inter_output_gap_undefined_for_one_output", "requests": [{"request_id": "R", "handle_generation": 1, "prompt_tokens": 4096, "outputs": ["y0"]}], "events": [{"t": 0, "request": "R", "op": "arrive"}, {"t": 0, "request": "R", "op": "prefill_begin", "rows": 4096}, {"t": 0, "request": "R", "op": "prefill_publish", "rows": 4096}, {"t": 1000000000, "request": "R", "op": "emit", "output_index": 0, "token": "y0"}, {"t": 1000000000, "request": "R", "op": "finish"}, {"t": 41000000000, "request": "R", "op": "release"}]}
JSONEOF
check service_metrics_overflow 2 "$K" calc service-metrics "$T/bytetime_overflow.json"
expect_out service_metrics_overflow_msg 'logical KV byte-time overflows 64 bits'
# An empty value given as its own argument is refused too (probe 38: suite --filter '' ran every
# case, --root '' used the default root).
check suite_empty_filter 2 "$K" suite --filter ""
expect_out suite_empty_filter_msg 'option --filter "" has an empty value'
check gen_trace_empty_out 2 "$K" gen-trace --events 1 -o ""
expect_out gen_trace_empty_out_msg 'option -o "" has an empty value; expected -o VALUE'
# Under --format json a usage error the argument parser finds is {"verdict": "error", "error": ...}
# on standard output too, as every later error is (the CLI doc audit of 2026-12-07: nothing there).
json_usage_error() {  # json_usage_error NAME ARGS...: exit 2, standard output one JSON error
  local name=$1; shift
  "$K" "$@" >"$T/stdout.json" 2>/dev/null; local rc=$?
  check "$name" 0 python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); rc = int(sys.argv[2])
sys.exit(0 if rc == 2 and d["verdict"] == "error" and d["error"] else "exit %d, %r" % (rc, d))' "$T/stdout.json" "$rc"
}
# An unknown command is named, with the commands there (the CLI doc audit of 2026-12-07: "A
# subcommand is required").
check unknown_command 2 "$K" bogus; expect_out unknown_command_msg '^kvconform: unknown command "bogus"; expected one of: validate, calc, '
check unknown_calc_command 2 "$K" calc bogus; expect_out unknown_calc_command_msg '^kvconform calc: unknown command "bogus"; expected one of: kv-bytes, saved-work, layer-stream, service-metrics$'
json_usage_error json_usage_unknown_command calc bogus --format json
json_usage_error json_usage_saved_work calc saved-work --prompt x --outputs 1 --format json
json_usage_error json_usage_kv_bytes calc kv-bytes --layers 1 --hf-config a.json --format json
json_usage_error json_usage_parity parity --model fixtures/models/gqa2 --prompt-ids 1 --max-new-tokens 0 --format=json
json_usage_error json_usage_service_metrics calc service-metrics --format json
json_usage_error json_usage_handoff_replay handoff replay --format json
json_usage_error json_usage_empty_value check --format json --max-line-bytes "" x.jsonl
# A file that cannot be written is exit 2 (the CLI doc audit of 2026-12-07: -o /dev/full exited 0).
if [ -w /dev/full ]; then
  check gen_trace_unwritable_out 2 "$K" gen-trace --events 100000 -o /dev/full; expect_out gen_trace_unwritable_out_msg '/dev/full: write failed'
fi
# The parser's messages escape what they quote from the command line (probe 38: an ESC sequence
# and a forged line reached stderr).
check parse_error_escaped 2 "$K" calc service-metrics a.json $'evil\e[2J\nFAKE: OK'
expect_lines parse_error_escaped_lines 2
if grep -q $'\e' "$T/out"; then fail=$((fail+1)); echo "FAIL parse_error_escaped_esc: an ESC byte reached the output"; else pass=$((pass+1)); fi
# A filter that matches nothing is named (probe 38: only the directory was).
check suite_filter_no_match 2 "$K" suite --filter zzzznomatch
expect_out suite_filter_no_match_msg 'no cases found under .* whose name contains --filter "zzzznomatch"'
# An invalid fixture whose base is an invalid fixture (itself) is malformed, never a pass (probe 38:
# suite passed a fixture naming itself as its base and expecting INPUT_UNKNOWN_KIND).
mkdir -p "$T/selfroot/invalid_fixtures/x" "$T/selfroot/fixtures"
printf '{"kind": "kvconform.invalid_fixture/1", "case": "x/self", "description": "d", "seed_ref": "s", "base": "self.json", "patch": [{"op": "replace", "path": "/description", "value": "e"}], "expected_code": "INPUT_UNKNOWN_KIND"}\n' >"$T/selfroot/invalid_fixtures/x/self.json"
check suite_self_based_invalid_fixture 1 "$K" suite --root "$T/selfroot"
expect_out suite_self_based_invalid_fixture_msg 'base self.json is an invalid fixture'
# Probe 56: a file's directory is its role. A conforming document under invalid_fixtures/ passed
# as a valid case (a test that cannot fail), an invalid fixture under fixtures/ passed too, a
# `case` naming another path was listed under one name and found under none, and a filter equal
# to a case's name also selected longer names.
mkdir -p "$T/roleroot/invalid_fixtures/m" "$T/roleroot/fixtures/m"
cp fixtures/m5_1/manifest/request_cache_manifest.json "$T/roleroot/invalid_fixtures/m/doc.json"
check suite_document_under_invalid_fixtures 1 "$K" suite --root "$T/roleroot" -v; expect_out suite_document_under_invalid_fixtures_msg 'a file under invalid_fixtures/ is an invalid fixture'
rm "$T/roleroot/invalid_fixtures/m/doc.json"
cp fixtures/m5_1/manifest/request_cache_manifest.json "$T/roleroot/fixtures/m/base.json"
printf '{"kind": "kvconform.invalid_fixture/1", "case": "m/elsewhere", "description": "d", "seed_ref": "s", "base": "../../fixtures/m/base.json", "patch": [{"op": "replace", "path": "/cache_schema/num_cache_layers", "value": 0}], "expected_code": "MANIFEST_SCHEMA_ZERO_EXTENT"}\n' >"$T/roleroot/invalid_fixtures/m/zero.json"
check suite_case_not_its_path 1 "$K" suite --root "$T/roleroot" -v; expect_out suite_case_not_its_path_msg 'case "m/elsewhere" is not this file.s path'
cp "$T/roleroot/invalid_fixtures/m/zero.json" "$T/roleroot/fixtures/m/zero.json"
check suite_invalid_fixture_under_fixtures 1 "$K" suite --root "$T/roleroot" -v; expect_out suite_invalid_fixture_under_fixtures_msg 'an invalid fixture belongs under invalid_fixtures/'
# Probe 56: the recorded-logits tolerance was read from the data judged (1e9 passed a logit off
# by 5).
mkdir -p "$T/hfroot/fixtures/models" && cp -r fixtures/models/mha "$T/hfroot/fixtures/models/"
python3 -c "import json,sys; p=sys.argv[1]; d=json.load(open(p)); d['tolerance']=1e9; d['logits'][0][0]+=5; json.dump(d,open(p,'w'))" "$T/hfroot/fixtures/models/mha/hf_logits.json"
check suite_hf_tolerance_bound 1 "$K" suite --root "$T/hfroot" --filter hf_logits -v; expect_out suite_hf_tolerance_bound_msg "field 'tolerance': expected a number in \(0, 1e-4\]"
# Probe 56: a valid race history passed on its form alone; it must be linearizable.
mkdir -p "$T/raceroot/fixtures/race" && cp fixtures/race/history.jsonl "$T/raceroot/fixtures/race/"
python3 -c "import json,sys; p=sys.argv[1]; L=open(p).read().splitlines(); o=json.loads(L[1]); o['result']['generation']=5; o['result']['length']=7; L[1]=json.dumps(o); open(p,'w').write(chr(10).join(L)+chr(10))" "$T/raceroot/fixtures/race/history.jsonl"
check suite_race_history_not_linearizable 1 "$K" suite --root "$T/raceroot" -v; expect_out suite_race_history_not_linearizable_msg 'RACE_NOT_LINEARIZABLE: .*the history is not linearizable'
check suite_exact_name_filter 0 "$K" suite --filter fixtures/m5_6/handoff/transfer_protocol -v
grep -c '^PASS' "$T/out" >"$T/count"; mv "$T/count" "$T/out"; expect_out suite_exact_name_filter_one '^1$'
# A case name as the reports print it selects the case (a probe 56 leftover: a file name with a tab
# was printed "\x09", which as --filter selected nothing, and JUnit wrote the tab as a space).
mkdir -p "$T/tabroot/fixtures/m" && cp fixtures/m5_1/manifest/request_cache_manifest.json "$T/tabroot/fixtures/m/a$(printf '\t')b.json"
check suite_printed_name_filter 0 "$K" suite --root "$T/tabroot" --filter 'fixtures/m/a\x09b' -v; expect_out suite_printed_name_filter_msg '^PASS fixtures/m/a\\x09b$'
check suite_printed_name_junit 0 "$K" suite --root "$T/tabroot" --format junit; expect_out suite_printed_name_junit_msg 'name="fixtures/m/a\\x09b"'
# Probe 84 (a CI integrator's read of the machine formats). A printed name selects its case alone,
# beside a file literally named as that printed name (both were selected).
cp fixtures/m5_1/manifest/request_cache_manifest.json "$T/tabroot/fixtures/m/a\\x09b.json"
check suite_printed_name_first 0 "$K" suite --root "$T/tabroot" --filter 'fixtures/m/a\x09b' -v
grep -c '^PASS' "$T/out" >"$T/count"; mv "$T/count" "$T/out"; expect_out suite_printed_name_first_one '^1$'
check suite_literal_name_printed 0 "$K" suite --root "$T/tabroot" --filter 'fixtures/m/a\\x09b' -v; expect_out suite_literal_name_printed_msg '^PASS fixtures/m/a\\\\x09b$'
rm "$T/tabroot/fixtures/m/a\\x09b.json"
# U+FFFE in a name is escaped (XML 1.0 has no such character), so the JUnit name selects the case.
mkdir -p "$T/fffe/fixtures/m" && cp fixtures/m5_1/manifest/request_cache_manifest.json "$T/fffe/fixtures/m/v$(printf '\xef\xbf\xbe').json"
check suite_fffe_junit 0 "$K" suite --root "$T/fffe" --format junit; expect_out suite_fffe_junit_name 'name="fixtures/m/v\\xEF\\xBF\\xBE"'
check suite_fffe_filter 0 "$K" suite --root "$T/fffe" --filter 'fixtures/m/v\xEF\xBF\xBE' -v; expect_out suite_fffe_filter_msg '^PASS fixtures/m/v\\xEF\\xBF\\xBE$'
# A section named by a document's kind is escaped: a kind with newlines forged a PASS verdict.
mkdir -p "$T/forge/fixtures/x"
printf '{"kind": "k\\ntotal 9 0 9 0\\nverdict: PASS\\n"}\n' >"$T/forge/fixtures/x/k.json"
check suite_kind_forges_no_line 1 "$K" suite --root "$T/forge"
if grep -q '^verdict: PASS' "$T/out"; then fail=$((fail+1)); echo "FAIL suite_kind_forges_no_line_msg: a forged verdict line"; sed 's/^/    /' "$T/out"; else pass=$((pass+1)); fi
expect_out suite_kind_forges_escaped '^k\\x0Atotal 9 0 9 0\\x0Averdict: PASS\\x0A '
# No case is an error in every format (the JSON verdict said pass, the JUnit report had no error).
mkdir -p "$T/emptyroot"
check suite_no_cases_json 2 "$K" suite --root "$T/emptyroot" --format json
"$K" suite --root "$T/emptyroot" --format json 2>/dev/null >"$T/nocases.json"
check suite_no_cases_json_verdict 0 python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["verdict"] == "error" and "no cases found" in d["error"] else 1)' "$T/nocases.json"
check suite_no_cases_junit 2 "$K" suite --root "$T/emptyroot" --format junit; expect_out suite_no_cases_junit_error 'tests="1" failures="0" errors="1"'; expect_out suite_no_cases_junit_msg '<error message="InvalidArgument: no cases found under '
# A file under invalid_fixtures/ that cannot be parsed counts as an invalid case (it was counted
# as a valid one).
mkdir -p "$T/badinv/invalid_fixtures/x" && printf '{"kind": \n' >"$T/badinv/invalid_fixtures/x/bad.json"
check suite_unparsed_invalid_fixture 1 "$K" suite --root "$T/badinv"; expect_out suite_unparsed_invalid_fixture_row '^unknown +0 +1 +0 +1$'
# A long id is cut at the start of a UTF-8 sequence (an emoji was cut after its first byte).
python3 -c '
import json, sys
src = [l for l in open("fixtures/m5_1/lifecycle/cancel_before_first_output.jsonl")]
e = json.loads(src[2]); e["request_id"] = "a" + "\U0001F600" * 5000
sys.stdout.write(src[0] + src[1] + json.dumps(e, ensure_ascii=False) + "\n" + "".join(src[3:]))' >"$T/emoji.jsonl"
check check_clip_utf8 1 "$K" check "$T/emoji.jsonl" --format json
"$K" check "$T/emoji.jsonl" --format json >"$T/emoji.json" 2>/dev/null
check check_clip_utf8_json 0 python3 -c 'import json,sys; d=json.load(open(sys.argv[1], encoding="utf-8")); s=json.dumps(d, ensure_ascii=False); sys.exit(1 if "\ufffd" in s or not d["violations"] else 0)' "$T/emoji.json"
# JSON errors carry the message unescaped (parity escaped it twice: \\x01), and the calculators
# write one under --format json (nothing was written).
"$K" parity --model "$T/nope$(printf '\001')" --prompt-ids 1 --max-new-tokens 1 --format json >"$T/parity_err.json" 2>/dev/null
check parity_json_error_unescaped 0 python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["verdict"] == "error" and "nope\u0001:" in d["error"] else 1)' "$T/parity_err.json"
for args in "kv-bytes --hf-config $T/nope.json" "saved-work --prompt 18446744073709551615 --outputs 18446744073709551615" "layer-stream --ready 25,50 --transfer 10"; do
  # shellcheck disable=SC2086
  "$K" calc $args --format json >"$T/calc_err.json" 2>/dev/null
  check "calc_json_error ${args%% *}" 0 python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["verdict"] == "error" and d["error"] else 1)' "$T/calc_err.json"
done
# A successful service-metrics or handoff replay JSON report says its verdict too.
"$K" calc service-metrics fixtures/m5_1/service/ab_worked_trace.json --format json >"$T/sm.json"
check service_metrics_json_verdict 0 python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["verdict"] == "pass" else 1)' "$T/sm.json"
"$K" handoff replay fixtures/m5_6/handoff/transfer_protocol.json --format json >"$T/hr.json"
check handoff_replay_json_verdict 0 python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["verdict"] == "pass" else 1)' "$T/hr.json"
# A patch from 448 to 448.0 changes the document (the strict reader refuses the second): it is
# judged, not "leaves the base unchanged" (probe 38).
printf '{"kind": "kvconform.invalid_fixture/1", "case": "x/f", "description": "d", "seed_ref": "s", "base": "%s", "patch": [{"op": "replace", "path": "/expected/logical", "value": 448.0}], "expected_code": "INPUT_VALUE_OUT_OF_RANGE"}\n' \
  "$PWD/fixtures/m5_1/ledger/ragged_rectangle.json" >"$T/float_patch.json"
check invalid_fixture_float_patch 1 "$K" validate "$T/float_patch.json"
expect_out invalid_fixture_float_patch_msg 'expects INPUT_VALUE_OUT_OF_RANGE -> raised exactly that code'
# An option kvconform does not have, given an empty value, is reported as unknown (probe 25: as
# an empty value of an option that does not exist).
# shellcheck disable=SC2086
check unknown_option_empty_value 2 "$K" calc kv-bytes $G4 --bogus=
expect_out unknown_option_empty_value_msg 'not expected: --bogus='
# shellcheck disable=SC2086
check kvbytes_bad_length 2 "$K" calc kv-bytes $G4 --lengths 5,x
expect_out kvbytes_bad_length_msg '--lengths element 2 "x" is not an unsigned integer'
# shellcheck disable=SC2086
check kvbytes_repeated_lengths 0 "$K" calc kv-bytes $G4 --lengths 5 --lengths 3 --copies 1,2
expect_out kvbytes_repeated_lengths_logical '^logical: 512$'
check savedwork 0 "$K" calc saved-work --prompt 2048 --outputs 128 --format json
for kv in '"rows_no_cache": 270272' '"rows_cache": 2175' '"rows_saved": 268097' '"pairs_no_cache": 285562176' '"pairs_cache": 2366400' '"pairs_saved": 283195776' '"row_reduction": 124.26'; do expect_out "savedwork $kv" "$kv"; done
check savedwork_max 0 "$K" calc saved-work --prompt 1048576 --outputs 1048576 --format json
check savedwork_overflow 2 "$K" calc saved-work --prompt 8589934592 --outputs 1; expect_out savedwork_overflow_msg 'exceeds 64 bits'
check savedwork_huge 2 "$K" calc saved-work --prompt 99999999999999999999999 --outputs 1
# P + G was printed wrapped to 64 bits ("P + G = 0 is too large"): probe 17, finding 06.
check savedwork_wrapped_sum 2 "$K" calc saved-work --prompt 18446744073709551615 --outputs 1
expect_out savedwork_wrapped_sum_msg 'P \+ G = 18446744073709551616 is too large'

# kvconform check (docs/trace-format.md "Exit codes and output"): 0 conforms, 1 violations,
# 2 unreadable file.
TR=fixtures/m5_1/lifecycle/synthetic_lifecycle.jsonl
# audit "partial" is refused for what it is, like "sampled" (probe 41: its message listed
# "sampled" as an accepted value).
sed '1s/"audit": *"complete"/"audit": "partial"/' "$TR" >"$T/partial.jsonl"
check check_audit_partial 1 "$K" check "$T/partial.jsonl"
expect_out check_audit_partial_msg 'TRACE_HEADER_INVALID at .*a partial trace is not a complete mutation journal'
check check_valid 0 "$K" check --format json "$TR"; expect_out check_valid_verdict '"verdict": "pass"'
# An invalid fixture materialized from its patch: line 7 (event index 6) gets an unknown type.
python3 -c 'import json,sys
ls=[json.loads(l) for l in open(sys.argv[1])]; ls[6]["event_type"]="allocator_obs"
open(sys.argv[2],"w").write("".join(json.dumps(l)+"\n" for l in ls))' \
  fixtures/m5_1/observability/loop8_failure_retry_fork_release.jsonl "$T/unknown_type.jsonl"
check check_invalid 1 "$K" check --format json "$T/unknown_type.jsonl"
expect_out check_invalid_verdict '"verdict": "fail"'
expect_out check_invalid_code '"code": "TRACE_EVENT_TYPE_UNKNOWN"'
expect_out check_invalid_line '"line": 7,'
# Cut in the middle of line 5: TRACE_TRUNCATED on line 5, exit 1.
{ head -n 4 "$TR"; sed -n 5p "$TR" | head -c 40; } >"$T/cut.jsonl"
check check_truncated 1 "$K" check "$T/cut.jsonl"; expect_out check_truncated_code 'cut.jsonl:5: TRACE_TRUNCATED'
# A line longer than --max-line-bytes is read through, not held: one TRACE_LINE_TOO_LONG naming
# its event, exit 1, from a file and from standard input; the default limit replays it (line 5
# padded with 3 MiB of JSON whitespace spans several of the reader's blocks); limit 0 is refused.
python3 -c '
import sys
ls=open(sys.argv[1]).read().split("\n"); ls[4]=ls[4][:-1]+" "*(3<<20)+"}"
open(sys.argv[2],"w").write("\n".join(ls))' "$TR" "$T/long_line.jsonl"
check check_long_line 1 "$K" check "$T/long_line.jsonl" --max-line-bytes 100000
expect_out check_long_line_code 'long_line.jsonl:5: TRACE_LINE_TOO_LONG event [^ ]+ .*is 314[0-9]+ bytes long, more than the checker.s limit of 100000'
expect_out check_long_line_one '1 violations\)'
check check_long_line_stdin 1 sh -c "\"$K\" check - --max-line-bytes 100000 <\"$T/long_line.jsonl\""
expect_out check_long_line_stdin_code '^-:5: TRACE_LINE_TOO_LONG'
check check_long_line_default 0 "$K" check "$T/long_line.jsonl"
check check_long_line_zero 2 "$K" check "$T/long_line.jsonl" --max-line-bytes 0
# Ends after append_start (line 3) and one staged layer: the open transaction is reported there.
head -n 4 "$TR" >"$T/midtxn.jsonl"
check check_mid_txn 1 "$K" check "$T/midtxn.jsonl"; expect_out check_mid_txn_code 'midtxn.jsonl:3: TRACE_OPERATION_UNTERMINATED'
check check_missing 2 "$K" check "$T/nope.jsonl"; expect_out check_missing_msg 'cannot open'
check check_directory 2 "$K" check "$T"; expect_out check_directory_msg 'read error: Is a directory'
# "-" reads the trace from standard input (a runtime piping its trace), in both modes.
check check_stdin 0 bash -c '"$1" check - <"$2"' _ "$K" "$TR"; expect_out check_stdin_pass '^-: pass \('
check check_stdin_invalid 1 bash -c '"$1" check - <"$2"' _ "$K" "$T/unknown_type.jsonl"
expect_out check_stdin_invalid_code '^-:7: TRACE_EVENT_TYPE_UNKNOWN'
check check_stdin_parse_only 0 bash -c '"$1" check --parse-only - <"$2"' _ "$K" "$TR"
expect_out check_stdin_parse_only_lines "^-: parsed $(wc -l <"$TR") lines"
# A byte-order mark before the header is named as such.
{ printf '\xef\xbb\xbf'; cat "$TR"; } >"$T/bom.jsonl"
check check_bom 1 "$K" check "$T/bom.jsonl"; expect_out check_bom_msg 'bom.jsonl:1: TRACE_HEADER_INVALID .*byte-order mark'
# The benchmark's ceiling names its parser and the kernel simdjson chose (its throughput depends on it).
check check_parse_only 0 "$K" check --parse-only "$TR"
expect_out check_parse_only_parser "parsed $(wc -l <"$TR") lines \(simdjson [0-9.]+, [a-z0-9_]+ kernel; (mimalloc [0-9.]+|glibc malloc)\)"
check check_missing_json 2 "$K" check --format json "$T/nope.jsonl"; expect_out check_missing_verdict '"verdict": "error"'
# A file name that is not UTF-8 (file names are bytes): the JSON and JUnit reports stay UTF-8
# (U+FFFD in its place), not an internal error (regression: exit 3, nlohmann type_error 316).
B=$(printf 'bad\xff.jsonl')
cp "$T/unknown_type.jsonl" "$T/$B"
check check_json_nonutf8_name 1 "$K" check --format json "$T/$B"
cp "$T/out" "$T/report.json"
check check_json_nonutf8_parses 0 python3 -c 'import json,sys; d=json.load(open(sys.argv[1], encoding="utf-8")); assert d["file"].endswith("bad\ufffd.jsonl"), d["file"]' "$T/report.json"
"$K" check --format junit "$T/$B" >"$T/junit.xml" 2>/dev/null
check check_junit_nonutf8_parses 0 python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$T/junit.xml"
check check_junit 1 "$K" check --format junit "$T/unknown_type.jsonl"
expect_out check_junit_failure '<failure message="TRACE_EVENT_TYPE_UNKNOWN'
expect_out check_junit_body_line '>line 7: TRACE_EVENT_TYPE_UNKNOWN at &apos;/6/event_type&apos;'
# A trace string quoted in a message with characters XML 1.0 cannot carry (C0 controls, U+FFFE):
# the JUnit report stays well-formed and the text report writes no raw control byte
# (regression: a vendor's cold read found both, 2026-12-03).
sed 's/"event_type": "allocator_obs"/"event_type": "x\\u0001\\u001b\\ufffe"/' "$T/unknown_type.jsonl" >"$T/nasty.jsonl"
"$K" check --format junit "$T/nasty.jsonl" >"$T/nasty.xml" 2>/dev/null
check check_junit_controls_parse 0 python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$T/nasty.xml"
check check_text_controls 1 "$K" check "$T/nasty.jsonl"
expect_out check_text_controls_escaped 'event_type "x\\x01\\x1B'
# Text reports write every string quoted from the input, file names and IoError text included,
# through one escape (docs/cli.md "Text output"): a control, a C1 control, U+2028/U+2029 and a
# byte of no UTF-8 sequence as \xNN per byte, a backslash as \\, so one violation is one line and
# no trace string or file name can forge another line (regression: probe 6, 2026-12-04).
sed 's/"event_type": "allocator_obs"/"event_type": "c1\\u0085\\u009b[31m ls\\u2028\\u2029 bs\\\\x0A"/' "$T/unknown_type.jsonl" >"$T/c1.jsonl"
check check_text_c1 1 "$K" check "$T/c1.jsonl"; expect_lines check_text_c1_one_line 2
expect_out check_text_c1_escaped 'event_type "c1\\xC2\\x85\\xC2\\x9B\[31m ls\\xE2\\x80\\xA8\\xE2\\x80\\xA9 bs\\\\x0A"'
# File names: a passing trace named "a<newline>fake.jsonl: pass (...).jsonl" gives one verdict line.
N="a
fake.jsonl: pass (35 events, 0 violations).jsonl"
cp "$TR" "$T/$N"
check check_text_file_name 0 "$K" check "$T/$N"; expect_lines check_text_file_name_one_line 1
expect_out check_text_file_name_escaped '/a\\x0Afake\.jsonl: pass \(35 events, 0 violations\)\.jsonl: pass \('
check check_text_missing_file_name 2 "$K" check "$T/nope
fake.jsonl"; expect_lines check_text_missing_file_name_one_line 1; expect_out check_text_missing_file_name_msg 'nope\\x0Afake\.jsonl: cannot open'
# validate's text report too: an event_type that quotes a newline and "other file: OK" is one line.
sed 's/"event_type": "allocator_obs"/"event_type": "x\\n\\u001b[2K\\rspoof.jsonl: OK (kvconform.trace\/1)"/' "$T/unknown_type.jsonl" >"$T/spoof.jsonl"
check validate_text_newline 1 "$K" validate "$T/spoof.jsonl"; expect_lines validate_text_newline_one_line 1
expect_out validate_text_newline_escaped "spoof.jsonl:7: TRACE_EVENT_TYPE_UNKNOWN at '/6/event_type': event_type \"x\\\\x0A\\\\x1B\[2K\\\\x0Dspoof.jsonl: OK"
check validate_text_file_name 0 "$K" validate "$T/$N"; expect_lines validate_text_file_name_one_line 1
# JUnit: one <failure> body line per violation, quoted strings escaped as in text.
for cmd in check validate; do
  "$K" $cmd --format junit "$T/spoof.jsonl" >"$T/spoof.xml" 2>/dev/null
  check "${cmd}_junit_newline_one_body_line" 0 python3 -c 'import sys, xml.dom.minidom as m
b=m.parse(sys.argv[1]).getElementsByTagName("failure")[0].firstChild.data
assert b.endswith("\n") and b.count("\n")==1 and "x\\x0A\\x1B[2K\\x0Dspoof.jsonl" in b, repr(b)' "$T/spoof.xml"
done
# gen-trace (the benchmark's input) writes traces that check passes, with short and with
# runtime-length ids; releases and replacement requests included (4 requests, 3 decode steps).
for ids in short runtime; do
  check "gen_trace_$ids" 0 "$K" gen-trace --events 400 --requests 4 --layers 3 --decode 3 --ids "$ids" -o "$T/gen_$ids.jsonl"
  check "gen_trace_${ids}_checks" 0 "$K" check "$T/gen_$ids.jsonl"; expect_out "gen_trace_${ids}_pass" 'pass \([0-9]+ events, 0 violations\)'
done
head -n 2 "$T/gen_runtime.jsonl" >"$T/out"; expect_out gen_trace_regenerate '"regenerate":"kvconform gen-trace .*--ids runtime --order request"'
expect_out gen_trace_runtime_ids '"request_id":"cmpl-[0-9a-f]{32}-0"'
expect_out gen_trace_runtime_abi '"id":"[0-9a-f]{64}"'
check gen_trace_bad_ids 2 "$K" gen-trace --ids long; expect_out gen_trace_bad_ids_msg "--ids: long not in \{short,runtime\}"
# --order step: one engine iteration phase by phase (every append_start, then each layer of every
# request, ...): the trace passes, names every option in its regenerate line, and its first
# iteration's append_start events (lines 6-9, after the four allocations) name four requests.
check gen_trace_step 0 "$K" gen-trace --events 400 --requests 4 --layers 3 --decode 3 --ids runtime --order step -o "$T/gen_step.jsonl"
check gen_trace_step_checks 0 "$K" check "$T/gen_step.jsonl"; expect_out gen_trace_step_pass 'pass \([0-9]+ events, 0 violations\)'
head -n 1 "$T/gen_step.jsonl" >"$T/out"; expect_out gen_trace_step_regenerate '"regenerate":"kvconform gen-trace .*--ids runtime --order step"'
sed -n 6,9p "$T/gen_step.jsonl" | grep -o '"request_id":"[^"]*","handle_generation":0,"operation_id":"[^"]*","event_type":"append_start"' | sort -u | wc -l >"$T/out"
expect_out gen_trace_step_batch '^4$'
# Probe 52: above 64 layers the header kept bytes_per_token 64 (below num_layers: refused).
check gen_trace_80_layers 0 "$K" gen-trace --events 1000 --requests 2 --layers 80 -o "$T/gen_80.jsonl"
check gen_trace_80_layers_checks 0 "$K" check "$T/gen_80.jsonl"; expect_out gen_trace_80_layers_pass 'pass \([0-9]+ events, 0 violations\)'
check gen_trace_bad_order 2 "$K" gen-trace --order random; expect_out gen_trace_bad_order_msg "--order: random not in \{request,step\}"
# --mix lifecycle: failed and cancelled appends retried, replayed publications, truncated fork
# children, cancelled requests, reads, speculative verifications, reorders and allocator/residency
# observations, every one of the 16 event types, in traces that check passes for three seeds; a one-field mutation of each kind of event
# the mix adds fails with exactly its code (so the mix's events are judged, not skipped).
for seed in 1 2 3; do
  check "gen_trace_lifecycle_$seed" 0 "$K" gen-trace --events 3000 --requests 5 --layers 3 --decode 6 --ids runtime --mix lifecycle --seed "$seed" -o "$T/life_$seed.jsonl"
  check "gen_trace_lifecycle_${seed}_checks" 0 "$K" check "$T/life_$seed.jsonl"; expect_out "gen_trace_lifecycle_${seed}_pass" 'pass \([0-9]+ events, 0 violations\)'
  tail -n +2 "$T/life_$seed.jsonl" | grep -o '"event_type":"[a-z_]*"' | sort -u | wc -l >"$T/out"; expect_out "gen_trace_lifecycle_${seed}_types" '^16$'
done
head -n 1 "$T/life_2.jsonl" >"$T/out"; expect_out gen_trace_lifecycle_regenerate '"regenerate":"kvconform gen-trace .*--order request --mix lifecycle --seed 2"'
check gen_trace_lifecycle_step 2 "$K" gen-trace --mix lifecycle --order step; expect_out gen_trace_lifecycle_step_msg '--mix lifecycle writes --order request only'
# --arrivals staggered: each request's decode steps drawn from [0, 2 * --decode], so requests
# finish at spread times (the finishes name more than one emitted_outputs count) and a slot's
# replacement allocates while the others decode; every order and mix passes.
for args in "--order request" "--order step" "--mix lifecycle --seed 3"; do
  name=$(echo "$args" | tr -c 'a-z0-9\n' _)
  check "gen_trace_staggered$name" 0 "$K" gen-trace --events 3000 --requests 5 --layers 3 --decode 6 --arrivals staggered $args -o "$T/stag.jsonl"
  check "gen_trace_staggered${name}_checks" 0 "$K" check "$T/stag.jsonl"; expect_out "gen_trace_staggered${name}_pass" 'pass \([0-9]+ events, 0 violations\)'
  grep -o '"event_type":"finish","base_snapshot":[0-9]*,"result_snapshot":[0-9]*,"payload":{"committed_length":[0-9]*,"emitted_outputs":[0-9]*' "$T/stag.jsonl" | sed 's/.*emitted_outputs"://' | sort -u | wc -l >"$T/out"
  expect_out "gen_trace_staggered${name}_lengths" '^([3-9]|[1-9][0-9]+)$'
  head -n 1 "$T/stag.jsonl" >"$T/out"; expect_out "gen_trace_staggered${name}_regenerate" '"regenerate":"kvconform gen-trace .* --arrivals staggered"'
done
# --end-record: the header requires the end record and the trace ends with it (counting every
# event line); the trace passes, and without its last line it is TRACE_END_MISSING.
check gen_trace_end_record 0 "$K" gen-trace --events 3000 --requests 5 --layers 3 --decode 6 --mix lifecycle --end-record -o "$T/gen_end.jsonl"
check gen_trace_end_record_checks 0 "$K" check "$T/gen_end.jsonl"; expect_out gen_trace_end_record_pass 'pass \([0-9]+ events, 0 violations\)'
tail -n 1 "$T/gen_end.jsonl" >"$T/out"; expect_out gen_trace_end_record_last "^\{\"kind\":\"kvconform.trace_end/1\",\"events\":$(($(wc -l <"$T/gen_end.jsonl") - 2))\}$"
head -n 1 "$T/gen_end.jsonl" >"$T/out"; expect_out gen_trace_end_record_header '"end_record":true,.*--end-record"\}$'
head -n -1 "$T/gen_end.jsonl" >"$T/gen_end_cut.jsonl"
check gen_trace_end_record_cut 1 "$K" check "$T/gen_end_cut.jsonl"; expect_out gen_trace_end_record_cut_code 'TRACE_END_MISSING'
check gen_trace_bad_arrivals 2 "$K" gen-trace --arrivals late; expect_out gen_trace_bad_arrivals_msg "--arrivals: late not in \{together,staggered\}"
cat >"$T/mut.py" <<'PY'
import json, sys
# mut.py IN OUT EVENT_TYPE FIELD DELTA [OUTCOME]: adds DELTA to the payload's FIELD (a top-level
# field for /FIELD; a dotted path such as rows_after.0.next_position reaches into the payload's
# arrays and objects) of the first event of EVENT_TYPE (and OUTCOME) that has it.
src, dst, etype, field, delta = sys.argv[1:6]
outcome = sys.argv[6] if len(sys.argv) > 6 else None
lines = open(src).read().splitlines()
for i, line in enumerate(lines[1:], 1):
    e = json.loads(line)
    if e["event_type"] != etype or (outcome and e.get("outcome") != outcome):
        continue
    o = e if field.startswith("/") else e["payload"]
    *path, k = field.lstrip("/").split(".")
    for step in path:
        o = o[int(step)] if isinstance(o, list) and int(step) < len(o) else {} if isinstance(o, list) else o.get(step, {})
    if isinstance(o, list):
        k = int(k)
        if k >= len(o):
            continue
    elif k not in o:
        continue
    o[k] += int(delta)
    lines[i] = json.dumps(e, separators=(",", ":"))
    break
else:
    sys.exit("no such event")
open(dst, "w").write("\n".join(lines) + "\n")
PY
while read -r name code etype field delta outcome; do
  check "gen_trace_lifecycle_mut_$name" 1 sh -c 'python3 "$1" "$2" "$3" "$4" "$5" "$6" $7 && "$8" check "$3" --format json' _ "$T/mut.py" "$T/life_2.jsonl" "$T/mut.jsonl" "$etype" "$field" "$delta" "$outcome" "$K"
  expect_out "gen_trace_lifecycle_mut_${name}_code" "\"code\": \"$code\""
  n=$(grep -c '"code": ' "$T/out"); echo "$n" >"$T/out"; expect_out "gen_trace_lifecycle_mut_${name}_one" '^1$'
done <<'MUT'
replayed_receipt TRACE_SNAPSHOT_MISMATCH append_publish /result_snapshot 1 replayed
allocator_used_slots TRACE_OBSERVATION_INCONSISTENT allocator_observation used_slots 1
residency_bytes TRACE_OBSERVATION_INCONSISTENT residency_observation resident_payload_bytes 64
truncate_grows LIFECYCLE_TRUNCATE_GROWTH truncate new_length 1000
decode_token FRONTIER_TOKEN_MISMATCH append_start input_token 1
fork_beyond_prefix LIFECYCLE_FORK_BEYOND_PREFIX fork prefix_length 1
cancel_request_stale LIFECYCLE_STALE_BASE cancel_request /base_snapshot -1
failure_base TRACE_SNAPSHOT_MISMATCH append_failure /base_snapshot 1
cancel_txn_base TRACE_SNAPSHOT_MISMATCH cancel_txn /base_snapshot 1
read_length TRACE_SNAPSHOT_MISMATCH read committed_length 1
read_torn LIFECYCLE_TORN_READ read layer_lengths.0 1
verify_accepted FRONTIER_CACHE_COUNT_MISMATCH append_start accepted_count 1
reorder_position LIFECYCLE_REORDER_SPLIT_STATE reorder rows_after.0.next_position 1
MUT
# Probe 76: the JSON report writes its violations one at a time (it built the whole document
# first, 4-5 times their memory); the bytes are the document's: re-serialized, they are equal.
python3 "$T/mut.py" "$T/life_2.jsonl" "$T/mut1.jsonl" read committed_length 1 &&
  python3 "$T/mut.py" "$T/mut1.jsonl" "$T/mut2.jsonl" truncate new_length 1000
check check_json_streamed 1 "$K" check "$T/mut2.jsonl" --format json
cp "$T/out" "$T/report.json"
check check_json_streamed_bytes 0 python3 -c 'import json,sys; t=open(sys.argv[1]).read(); d=json.loads(t); assert len(d["violations"]) == 2, d; assert json.dumps(d, indent=2, sort_keys=True, ensure_ascii=False) + "\n" == t' "$T/report.json"
# Probe 79: a hangup ends `check -` (exit 128 + 1). UCX, linked for pd-run, caught SIGHUP as its
# debug signal: the check ignored it and its interrupted read turned a valid stream into exit 2.
check check_sighup 129 bash -c '"$0" check - < <(sleep 5) >/dev/null 2>&1 & p=$!; sleep 1; kill -HUP $p; wait $p' "$K"
# ... and under nohup (SIGHUP ignored) the check goes on to its verdict (an empty stream: exit 1).
check check_sighup_nohup 1 bash -c 'trap "" HUP; "$0" check - < <(sleep 2) >/dev/null 2>&1 & p=$!; sleep 1; kill -HUP $p; wait $p' "$K"
# ... and where UCX took no signal (UCX_DEBUG_SIGNO=0) nothing is given back: UCX warned about it
# on standard output, before every report (probe 81).
check check_ucx_debug_signo_off 0 env UCX_DEBUG_SIGNO=0 "$K" --version; expect_lines check_ucx_debug_signo_off_quiet 1
# Probe 79: a file with CR-only line ends reads as one cut line; the report says why.
printf '{"kind":"kvconform.trace/1"}\r{"a":1}\r' >"$T/cr_only.jsonl"
check check_cr_only 1 "$K" check "$T/cr_only.jsonl"; expect_out check_cr_only_hint 'TRACE_TRUNCATED .*the cut line holds CR bytes: lines end with LF or CRLF'
# Probe 72: the release windows (the stale-work lifetime the check assumes) are options.
W=reference/trace/testdata/semantic/probe72_a_generation_reused_10_releases_after_its_release.jsonl
check released_window_default 1 "$K" check "$W"; expect_out released_window_default_code 'LIFECYCLE_HANDLE_EXISTS'
check released_window_short 0 "$K" check "$W" --released-window 8
R=reference/trace/testdata/semantic/probe72_a_receipt_replayed_65_releases_after_its_release.jsonl
check receipt_window_default 1 "$K" check "$R"; expect_out receipt_window_default_code 'TRACE_OUTCOME_INVALID'
check receipt_window_long 0 "$K" check "$R" --receipt-window 100
check released_window_zero 2 "$K" check "$R" --released-window 0
check receipt_window_huge 2 "$K" check "$R" --receipt-window 16777217
# The transfer-plan benchmark input (docs/trace-format.md, transfer plane): a plan of 2,000
# one-token chunks, each delivered, then 500 re-sent receives after publication, passes.
D=$(cd "$(dirname "$0")" && pwd)
check gen_transfer_plan 0 python3 "$D/gen_transfer_plan_trace.py" 2000 "$T/plan.jsonl" 500
check gen_transfer_plan_checks 0 "$K" check "$T/plan.jsonl"; expect_out gen_transfer_plan_pass 'pass \(8511 events, 0 violations\)'

# Race fuzzing CLI: shards and merge, re-checking recorded histories, truncated input, a mutant.
check fuzz_shard0 0 "$K" fuzz races --programs 3 --ops 40 --seed 5 --quiet --shard 0/2 --report "$T/s0.json" --history-out "$T/h_ok.jsonl"
check fuzz_shard1 0 "$K" fuzz races --programs 3 --ops 40 --seed 5 --quiet --shard 1/2 --report "$T/s1.json"
# Probe 65: a report that cannot be written is exit 2 before the campaign (it was exit 0, no report).
check fuzz_report_unwritable 2 "$K" fuzz races --programs 1 --ops 5 --quiet --report "$T/nodir/s.json"; expect_out fuzz_report_unwritable_msg '\-\-report: IoError: .*nodir/s.json: cannot open for writing'
check fuzz_report_is_dir 2 "$K" fuzz races --programs 1 --ops 5 --quiet --report "$T"
# Probe 65: arguments quoted in fuzz races and gen-trace errors are escaped (a raw ESC reached the
# terminal).
check fuzz_mutant_escaped 2 "$K" fuzz races --mutant "$(printf 'a\033[31m')" --programs 1; expect_out fuzz_mutant_escaped_msg "unknown mutant 'a\\\\x1B\\[31m'"
check gen_trace_out_escaped 2 "$K" gen-trace --events 10 -o "$T/nodir/$(printf 'a\033b')"; expect_out gen_trace_out_escaped_msg 'cannot open .*nodir/a\\x1Bb'
if grep -q "$(printf '\033')" "$T/out"; then fail=$((fail+1)); echo "FAIL gen_trace_out_raw_esc"; else pass=$((pass+1)); fi
check fuzz_merge 0 "$K" fuzz merge "$T/s0.json" "$T/s1.json"; expect_out fuzz_merge_msg 'merged 2 of 2 shard'
check fuzz_merge_missing 2 "$K" fuzz merge "$T/s0.json"; expect_out fuzz_merge_missing_msg 'missing shard'
# Probe 34: a relabelled shard index, a wrapped shard count and an unknown verdict merged as a
# complete, passing campaign; sizes and budgets beyond their ranges crashed or ran out at once.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['shard']=[7,2]; json.dump(d,open(sys.argv[2],'w'))" "$T/s1.json" "$T/s_idx7.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['shard']=[0,4294967297]; json.dump(d,open(sys.argv[2],'w'))" "$T/s0.json" "$T/s_wrap.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['verdict']='not-linearizable'; json.dump(d,open(sys.argv[2],'w'))" "$T/s1.json" "$T/s_verdict.json"
check fuzz_merge_shard_beyond_count 2 "$K" fuzz merge "$T/s0.json" "$T/s_idx7.json"; expect_out fuzz_merge_shard_beyond_count_msg 'shard: expected \[I, N\] with 0 <= I < N < 2\^32, got \[7,2\]'
check fuzz_merge_shard_count_wraps 2 "$K" fuzz merge "$T/s_wrap.json"
check fuzz_merge_unknown_verdict 2 "$K" fuzz merge "$T/s0.json" "$T/s_verdict.json"; expect_out fuzz_merge_unknown_verdict_msg 'verdict: expected linearizable, not_linearizable or error'
# A shard or verdict of another JSON shape is named as such (the CLI doc audit of 2026-12-07: "expected
# a kvconform.race_campaign/1 report").
for c in "shard=[-1,2]:shard: expected \[I, N\] .*, got \[-1,2\]" "shard=[0.0,2]:shard: expected \[I, N\] .*, got \[0\.0,2\]" \
         "verdict=5:verdict: expected linearizable, not_linearizable or error, got 5"; do
  json_set "$T/s1.json" "$T/s_shape.json" "${c%%:*}"
  check "fuzz_merge_shape:${c%%:*}" 2 "$K" fuzz merge "$T/s0.json" "$T/s_shape.json"; expect_out "fuzz_merge_shape_msg:${c%%:*}" "s_shape.json: ${c#*:}\$"
done
# Type sweep 2026-12-07: a kind that is not a string was an internal error (exit 3).
for v in 5 None "[]"; do
  json_set "$T/s1.json" "$T/s_kind.json" "kind=$v"
  check "fuzz_merge_kind_not_a_string:$v" 2 "$K" fuzz merge "$T/s0.json" "$T/s_kind.json"
  expect_out "fuzz_merge_kind_not_a_string_msg:$v" 's_kind.json: expected a kvconform.race_campaign/1 report'
done
# Probe 44: a shard report whose figures are not a shard's (it ran none of its share, counts
# that wrap or are negative, a passing verdict beside a failure, an unknown member) merged.
for c in "programs_run=0" "programs_run=3" "histories=-5" "ops=18446744073709551615" "failure={'x':1}" \
         "error='RACE_DRIVER_CRASHED: boom'" "seconds='nan'" "bogus=1"; do
  json_set "$T/s1.json" "$T/s_bad.json" "$c"
  check "fuzz_merge_bad_report:$c" 2 "$K" fuzz merge "$T/s0.json" "$T/s_bad.json"
done
expect_out fuzz_merge_bad_report_msg 'unknown member "bogus"'
# 2026-12-07: a 10 KB member name was quoted whole; a shard without its shape, mutant or target,
# or with a shape member renamed, merged when every shard agreed (or read as "parameters
# differ"); a failure's members were not checked, and merge prints the failure.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['bogus'+'y'*10000]=1; json.dump(d,open(sys.argv[2],'w'))" "$T/s1.json" "$T/s_long.json"
check fuzz_merge_long_member 2 "$K" fuzz merge "$T/s0.json" "$T/s_long.json"; expect_out fuzz_merge_long_member_msg 'unknown member "bogusy+\.\.\." \(10005 bytes\)$'
for c in "shape.handles" "target" "mutant" "shape"; do
  for s in 0 1; do
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); k=sys.argv[3].split('.'); o=d[k[0]] if len(k)>1 else d; o.pop(k[-1]) if len(k)==1 else o.update({k[-1]+'z': o.pop(k[-1])}); json.dump(d,open(sys.argv[2],'w'))" "$T/s$s.json" "$T/s_param$s.json" "$c"
  done
  check "fuzz_merge_params:$c" 2 "$K" fuzz merge "$T/s_param0.json" "$T/s_param1.json"
  expect_out "fuzz_merge_params_msg:$c" "s_param0.json: ${c%%.*}: expected"
done
check fuzz_merge_failing_report 1 "$K" fuzz races --mutant finish_as_release --programs 20 --ops 40 --seed 1 --quiet --shrink-time 2 --report "$T/f.json"
check fuzz_merge_failure 1 "$K" fuzz merge "$T/f.json"; expect_out fuzz_merge_failure_msg '^NOT LINEARIZABLE: \{"failure":\{"program_index":0,'
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['failure']['note']='x'*10000; json.dump(d,open(sys.argv[2],'w'))" "$T/f.json" "$T/f_member.json"
check fuzz_merge_failure_member 2 "$K" fuzz merge "$T/f_member.json"; expect_out fuzz_merge_failure_member_msg 'failure: expected \{"program_index", '
# Mutation audit 5 (2026-12-07): each member check of a shard's parameters and failure is pinned
# by a one-field change that every shard agrees on (one disagreeing shard reads as "parameters
# differ" without the check): a shape with a fifth member or a negative count, an empty or
# non-string mutant or target, a failure member of the wrong type or a negative time.
for c in "shape.extra=1" "shape.threads=-1" "mutant=''" "target=''" "mutant=5"; do
  for s in 0 1; do
    json_set "$T/s$s.json" "$T/s_agree$s.json" "$c"
  done
  check "fuzz_merge_agreed_params:$c" 2 "$K" fuzz merge "$T/s_agree0.json" "$T/s_agree1.json"
  expect_out "fuzz_merge_agreed_params_msg:$c" "s_agree0.json: ${c%%[.=]*}: expected"
done
for c in "program_index='0'" "program_seed=1.5" "shrunk_ops=-2" "shrunk_program=5" "seconds_to_detection=-1" "shrink_seconds='x'"; do
  json_set "$T/f.json" "$T/f_type.json" "failure.$c"
  check "fuzz_merge_failure_type:$c" 2 "$K" fuzz merge "$T/f_type.json"
  expect_out "fuzz_merge_failure_type_msg:$c" 'f_type.json: failure: expected \{"program_index", '
done
# A target's error is printed clipped at the report limit of a message, with its length.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['verdict']='error'; d['error']='RACE_DRIVER_CRASHED: '+'x'*10000; json.dump(d,open(sys.argv[2],'w'))" "$T/s1.json" "$T/s_longerr.json"
check fuzz_merge_long_error 1 "$K" fuzz merge "$T/s0.json" "$T/s_longerr.json"
expect_out fuzz_merge_long_error_msg '^TARGET FAILED: .*s_longerr.json: RACE_DRIVER_CRASHED: x+\.\.\. \(10021 bytes\)$'
check fuzz_merge_long_error_bounded 0 test "$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$T/out")" -le 4400
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['programs_run']=0; d['histories']=0; json.dump(d,open(sys.argv[2],'w'))" "$T/s1.json" "$T/s_none.json"
check fuzz_merge_shard_ran_nothing 2 "$K" fuzz merge "$T/s0.json" "$T/s_none.json"; expect_out fuzz_merge_shard_ran_nothing_msg "programs_run 0: the shard's share of the campaign is 1 program"
check fuzz_races_start_wraps 2 "$K" fuzz races --start 18446744073709551615 --programs 1 --quiet; expect_out fuzz_races_start_wraps_msg 'start \+ programs must not exceed 2\^64 - 1'
check fuzz_races_start_last 2 "$K" fuzz races --start 18446744073709551615 --quiet
# A --time below a millisecond was 0 ms, which reads as no limit, so the campaign never stopped
# (the CLI doc audit of 2026-12-07): it is rounded up, and the campaign stops after a program.
check fuzz_races_sub_millisecond_time 0 timeout 60 "$K" fuzz races --time 0.0005 --ops 20 --quiet; expect_out fuzz_races_sub_millisecond_time_msg '^programs 1, '
check fuzz_races_driver_timeout_zero 2 "$K" fuzz races --driver-timeout-ms 0 --programs 1 --quiet --driver true; expect_out fuzz_races_driver_timeout_zero_msg 'driver-timeout-ms: expected a wait in \[1, 3600000\] ms, got 0'
check fuzz_races_shrink_reruns_zero 2 "$K" fuzz races --shrink-reruns 0 --programs 1 --quiet
check fuzz_races_threads_bound 2 "$K" fuzz races --threads 100000 --programs 1 --ops 10 --quiet
check fuzz_races_handles_bound 2 "$K" fuzz races --handles 4294967295 --programs 1 --ops 10 --quiet
check fuzz_races_programs_zero 2 "$K" fuzz races --programs 0 --ops 10 --quiet
check fuzz_races_repeat_zero 2 "$K" fuzz races --repeat 0 --programs 1 --ops 10 --quiet
check fuzz_check_ok 0 "$K" fuzz check "$T/h_ok.jsonl"; expect_out fuzz_check_ok_msg 'linearizable'
check fuzz_check_budget_inf 0 "$K" fuzz check --budget inf "$T/h_ok.jsonl"; expect_out fuzz_check_budget_inf_msg ': linearizable'
check fuzz_check_budget_zero 2 "$K" fuzz check --budget 0 "$T/h_ok.jsonl"
head -c 300 "$T/h_ok.jsonl" >"$T/h_trunc.jsonl"
check fuzz_check_truncated 2 "$K" fuzz check "$T/h_trunc.jsonl"; expect_out fuzz_check_trunc_msg 'RACE_HISTORY_TRUNCATED( at [^ ]*)?: .*h_trunc.jsonl:2: the last line is cut off'
check fuzz_check_missing 2 "$K" fuzz check "$T/nope.jsonl"
# Probe 87: a history is read once, under the documents' 256 MiB cap (it was read whole without
# one: /dev/zero grew until the kernel stopped it); an invalid fixture's base must be a regular
# file (a FIFO base no process wrote blocked validate's open for ever).
check fuzz_check_dev_zero 2 timeout 60 "$K" fuzz check /dev/zero; expect_out fuzz_check_dev_zero_msg 'file is larger than 268435456 bytes'
mkdir -p "$T/fifo_fx" && mkfifo "$T/fifo_fx/fifo"
printf '%s' '{"kind":"kvconform.invalid_fixture/1","case":"x/fifo","description":"d","seed_ref":"M5.1 0x01","base":"fifo","patch":[{"op":"replace","path":"/description","value":"e"}],"expected_code":"MANIFEST_SCHEMA_ZERO_EXTENT"}' >"$T/fifo_fx/fifo.json"
check validate_fifo_base 2 timeout 60 "$K" validate "$T/fifo_fx/fifo.json"; expect_out validate_fifo_base_msg 'INPUT_FIXTURE_MALFORMED: .*base: .*fifo is not a regular file'
# Each violation names its field (probe 44: "h.jsonl:2: required field is missing").
sed -E '2s/,"thread":[0-9]+//' "$T/h_ok.jsonl" >"$T/h_nothread.jsonl"
check fuzz_check_names_field 2 "$K" fuzz check "$T/h_nothread.jsonl"; expect_out fuzz_check_names_field_msg "INPUT_FIELD_MISSING at '/1/thread'"
check fuzz_mutant 1 "$K" fuzz races --mutant finish_as_release --programs 20 --ops 40 --seed 1 --quiet --shrink-time 2 --history-out "$T/h_bad.jsonl"
check fuzz_check_bad 1 "$K" fuzz check "$T/h_bad.jsonl"; expect_out fuzz_check_bad_msg 'cannot place'
# A line that is not JSON names its file and line once, then the column (the CLI doc audit of
# 2026-12-07: "h.jsonl:6: h.jsonl:6:1:7: ..." read as line 1 of line 6).
{ head -5 fixtures/race/history.jsonl; echo '{"a": ]'; } >"$T/h_notjson.jsonl"
check history_not_json_location 1 "$K" validate "$T/h_notjson.jsonl"; expect_out history_not_json_location_msg "h_notjson.jsonl:6: RACE_HISTORY_LINE_MALFORMED at '/5': [^ ]*h_notjson.jsonl:6: column 7: unexpected '\]'"
# Probe 69: the printed reproducer runs as printed: the binary as invoked, a driver command with
# quotes of its own kept one word, the driver timeout kept; the witness says what the model
# returns for the op it cannot place.
DRV="$(cd "$(dirname "$0")/.." && pwd)/adapters/drivers/python_store_driver.py"
# The stale publication needs two appends opened on one base before either publishes, a race the
# threads may lose, and how often they lose it depends on the program: of seed 1's programs 0-5
# on one handle, program 1 shows it in 1 run of 2 or 3 (40 runs each, five times: 1-4 runs to
# detection; 1-5 with four busy loops on these 2 cores), programs 2 and 4 never in 200 runs.
# So these checks run program 1 alone, up to 200 times (regression: with programs 0-39 run 3
# times each, a clean-clone CI run on 2026-12-06 found a rarer program, and its printed
# reproducer, 500 runs of that program, found nothing).
check fuzz_driver_repro 1 "$K" fuzz races --driver "exec sh -c 'exec python3 $DRV --bug stale-publish'" --driver-timeout-ms 4000 --start 1 --programs 1 --repeat 200 --ops 60 --seed 1 --handles 1 --no-shrink --quiet
expect_out fuzz_driver_repro_model 'the sequential model returns, after that prefix: (ok|error) \{'
sed -n 's/^  reproduce: //p' "$T/out" >"$T/repro.sh"
expect_out fuzz_driver_repro_timeout "reproduce: $K fuzz races .* --driver 'exec sh -c '.*'exec python3 .*stale-publish'.*' --driver-timeout-ms 4000$"
check fuzz_driver_repro_runs 1 bash -c "$(cat "$T/repro.sh") --no-shrink --quiet"; expect_out fuzz_driver_repro_runs_msg 'NOT LINEARIZABLE'
# Probe 74: a backslash in the driver command is printed once (ShellQuote doubled it).
check fuzz_driver_repro_backslash 1 "$K" fuzz races --driver "exec python3 $DRV --bug stale-publish # a\\b" --start 1 --programs 1 --repeat 200 --ops 60 --seed 1 --handles 1 --no-shrink --quiet
expect_out fuzz_driver_repro_backslash_once "--driver '[^']*stale-publish # a\\\\b' --driver-timeout-ms"

check suite 0 "$K" suite; expect_out suite_verdict 'verdict: PASS'
check suite_filter 0 "$K" suite --filter zero_layers --format json; expect_out suite_filter_case 'zero_layers'
# A report that cannot be written is no verdict: exit 2 and the reason on standard error, whatever
# the verdict (regression: `check ... >/dev/full` exited 0, probe 6).
if [ -w /dev/full ]; then
  for c in "check --format json $TR" "check $T/unknown_type.jsonl" "validate $M" "validate --format junit $M" \
           "suite --filter zero_layers" "calc saved-work --prompt 2048 --outputs 128" "errors"; do
    check "report_unwritable:$c" 2 bash -c '"$1" $2 >/dev/full' _ "$K" "$c"
    expect_out "report_unwritable_msg:$c" '^kvconform: cannot write the report to standard output: No space left on device$'
  done
fi
# A non-blocking standard input (a parent that set O_NONBLOCK on the pipe) is waited on, not a
# read error (regression: "-: read error: Resource temporarily unavailable", exit 2, probe 6).
cat >"$T/nonblock.py" <<'PYEOF'
import fcntl, os, subprocess, sys, time
r, w = os.pipe()
fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_NONBLOCK)
p = subprocess.Popen(["timeout", "60", sys.argv[1], "check", "-"], stdin=r)
os.close(r)
for line in open(sys.argv[2], "rb").read().splitlines(keepends=True):
    os.write(w, line)
    time.sleep(0.02)
os.close(w)
sys.exit(p.wait())
PYEOF
check check_stdin_nonblocking 0 python3 "$T/nonblock.py" "$K" "$TR"; expect_out check_stdin_nonblocking_pass '^-: pass '
# --max-violations: the first N listed, the rest counted; the verdict and exit code unchanged
# (an adversarial probe: 10 million bad lines kept 3.4 GB of violations).
{ head -n 1 "$TR"; for i in 1 2 3 4 5 6 7; do echo "x$i"; done; } >"$T/seven_bad.jsonl"
check max_violations_text 1 "$K" check --max-violations 3 "$T/seven_bad.jsonl"
expect_lines max_violations_text_lines 5
expect_out max_violations_text_more ': 4 more violations not listed \(--max-violations 3\)$'
expect_out max_violations_text_total ': fail \([0-9]+ events, 7 violations\)$'
check max_violations_json 1 "$K" check --max-violations 3 --format json "$T/seven_bad.jsonl"
if python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(not (len(j["violations"]) == 3 and j["violations_omitted"] == 4))' "$T/out"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL max_violations_json_counts"; fi
check max_violations_junit 1 "$K" check --max-violations 3 --format junit "$T/seven_bad.jsonl"
expect_out max_violations_junit_more '^4 more violations not listed \(--max-violations 3\)$'
check max_violations_unlimited 1 "$K" check --max-violations 0 "$T/seven_bad.jsonl"; expect_lines max_violations_unlimited_lines 8
# Unsigned options take decimal digits only, within 64 bits (probe 28: CLI11 read 010 as octal and
# 0x10 as hex, and took an empty value and numbers beyond 2^64 - 1); leading zeros are dropped.
check max_violations_leading_zero 1 "$K" check --max-violations 03 "$T/seven_bad.jsonl"
expect_out max_violations_leading_zero_decimal ': 4 more violations not listed \(--max-violations 3\)$'
for bad in "" 0x10 1e3 " 5" 18446744073709551616 99999999999999999999999; do
  check "max_violations_refused_[$bad]" 2 "$K" check --max-violations "$bad" "$T/seven_bad.jsonl"
done
check max_violations_max 1 "$K" check --max-violations 18446744073709551615 "$T/seven_bad.jsonl"
# Memory exhaustion is one line on standard error and exit 3, whichever allocator serves malloc
# (mimalloc's operator new aborted with SIGABRT, exit 134). The limit is the process's address
# space after start-up (measured on a header-only check) plus 16 MB, less than a 10,000-request
# check needs (~36 MB more). Not under ASan, which reserves terabytes of address space
# (tools/asan_build.sh).
source "$(dirname "$0")/asan_build.sh"
if asan_build "$K"; then echo "skip out_of_memory: an ASan build"; else
  "$K" gen-trace --events 200000 --requests 10000 --layers 2 -o "$T/oom.jsonl" >/dev/null 2>&1
  mkfifo "$T/oom.fifo"
  OPENBLAS_NUM_THREADS=1 "$K" check - <"$T/oom.fifo" >/dev/null 2>&1 & oom_pid=$!
  exec 7>"$T/oom.fifo"; head -1 "$T/oom.jsonl" >&7; sleep 1
  oom_base=$(awk '/^VmPeak/{print $2}' "/proc/$oom_pid/status")
  exec 7>&-; wait "$oom_pid"
  oom_limited=(env OPENBLAS_NUM_THREADS=1 bash -c 'ulimit -v "$0" && exec "$@"' "$((oom_base + 16000))")
  check out_of_memory 3 "${oom_limited[@]}" "$K" check "$T/oom.jsonl"
  expect_out out_of_memory_msg '^kvconform: out of memory: .*no verdict$'; expect_lines out_of_memory_lines 1
  check out_of_memory_json 3 "${oom_limited[@]}" "$K" check --format json "$T/oom.jsonl"
  expect_lines out_of_memory_json_lines 1
  # Probe 18: fork children copied their parent's accepted drafts (2,000 children x 20,000
  # drafts: ~640 MB); they share them now, so the check fits in the same 16 MB beyond start-up.
  python3 - "$T/fork_drafts.jsonl" <<'PY'
import json, sys
n, kids = 20000, 2000
ev = [{"kind": "kvconform.trace/1", "schema_version": 1,
       "producer": {"name": "cli_test", "revision": "1"},
       "cache_abi": {"id": "abi", "num_layers": 1, "position_stage": "post_rope",
                     "bytes_per_token": 64},
       "sources": [{"source_instance": "rt", "source_component": "semantic"}],
       "audit": "complete"}]
def e(t, p, op=None, base=None, res=None):
    s = len(ev) - 1
    ev.append({"event_id": "rt:%d" % s, "source_instance": "rt", "source_component": "semantic",
               "local_sequence": s, "monotonic_ns": 1000 * (s + 1), "request_id": "A",
               "handle_generation": 0, "operation_id": op, "event_type": t,
               "base_snapshot": base, "result_snapshot": res, "payload": p})
def call(a, b, purpose, **k):
    return dict({"interval": [a, b], "cache_position": [a, b], "mask_key_length": b,
                 "position_stage": "post_rope", "purpose": purpose}, **k)
e("request_allocate", {"prompt_length": 1}, res=0)
e("append_start", call(0, 1, "prefill"), op="p", base=0)
e("append_stage_layer", {"layer": 0, "interval": [0, 1]}, op="p")
e("append_publish", {"committed_length": 1}, op="p", base=0, res=1)
e("output_emit", {"output_index": 0, "token": 11})
e("append_start", call(1, n + 2, "verify", input_token=11, draft_tokens=list(range(1000, 1000 + n)),
                       accepted_count=n), op="v", base=1)
e("append_stage_layer", {"layer": 0, "interval": [1, n + 2]}, op="v")
e("append_publish", {"committed_length": n + 2}, op="v", base=1, res=2)
e("fork", {"prefix_length": n + 2, "children": [{"request_id": "C%d" % k} for k in range(kids)]})
with open(sys.argv[1], "w") as f:
    f.writelines(json.dumps(x, separators=(",", ":")) + "\n" for x in ev)
PY
  check fork_children_share_drafts 0 "${oom_limited[@]}" "$K" check "$T/fork_drafts.jsonl"
fi
check errors_md 0 "$K" errors --format markdown
if diff -q "$T/out" docs/error-codes.md >/dev/null; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL docs/error-codes.md stale"; fi

# M5.6 handoff: layer-stream calculator (0x08I) and the handoff invalid fixtures.
check layerstream 0 "$K" calc layer-stream --ready 25,50,75,100 --transfer 10,10,10,10 --format json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["per_layer_visible"]==[35,60,85,110] and d["request_level_complete"]==140 and d["exposed_after_prefill"]==10 else 1)' "$T/out" \
  && pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL layerstream values"; cat "$T/out"; }
check layerstream_mismatch 2 "$K" calc layer-stream --ready 25,50 --transfer 10; expect_out layerstream_mismatch_msg 'one ready time and one transfer'
check layerstream_unordered 2 "$K" calc layer-stream --ready 50,25 --transfer 10,10
check layerstream_negative 2 "$K" calc layer-stream --ready -5 --transfer 10
# Probe 51: an empty element was dropped, computing a schedule for one layer fewer.
check layerstream_empty_element 2 "$K" calc layer-stream --ready 1,,2 --transfer 1,1; expect_out layerstream_empty_element_msg 'empty --ready element 2 in "1,,2"'
check layerstream_trailing_comma 2 "$K" calc layer-stream --ready 1,2 --transfer 1,1,
check layerstream_overflow 2 "$K" calc layer-stream --ready 18446744073709551615 --transfer 1; expect_out layerstream_overflow_msg 'overflow'
check handoff_replay 0 "$K" handoff replay fixtures/m5_6/handoff/transfer_protocol.json --format json
for kv in '"last_layer_ready_ms": 86' '"all_device_visible_ms": 116' '"validated_ms": 118' '"published_ms": 120' '"max_inflight_bytes": 2048'; do expect_out "replay $kv" "$kv"; done
check handoff_replay_aborted 0 "$K" handoff replay fixtures/m5_6/handoff/transfer_protocol_aborted.json --format json
for kv in '"final_state": "ABORTED"' '"credits_in_flight_at_end": 0' '"unpublished_blocks_at_end": 0'; do expect_out "replay-aborted $kv" "$kv"; done
check handoff_trace 0 "$K" handoff replay fixtures/m5_6/runtime/transfer_trace.json --format json
for kv in '"wall_us": 220' '"overlapped_us": 74' '"exposed_us": 60' '"retries": 1' '"transferred_bytes": 8388608'; do expect_out "trace $kv" "$kv"; done
check handoff_replay_wrong_kind 2 "$K" handoff replay fixtures/m5_6/handoff/handoff_manifest.json
expect_out handoff_replay_wrong_kind_msg 'document: its kind is "kvconform.handoff_manifest/1"$'
# A kind that is not a string is named as such (the CLI doc audit of 2026-12-07: kind "").
check handoff_replay_kind_not_a_string 2 "$K" handoff replay "$T/kind5.json"; expect_out handoff_replay_kind_not_a_string_msg 'kind5.json: not a .* document: its "kind" is a number$'
# Probe 65: with --format json, a failed replay or calculation still writes one JSON document (it
# wrote nothing on standard output).
check handoff_replay_wrong_kind_json 2 "$K" handoff replay fixtures/m5_6/handoff/handoff_manifest.json --format json; expect_out handoff_replay_wrong_kind_json_msg '"verdict": "error"'
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["events"][5]["end_us"]=1; json.dump(d,open(sys.argv[2],"w"))' fixtures/m5_6/runtime/transfer_trace.json "$T/trace_bad.json"
check handoff_replay_fail_json 1 "$K" handoff replay "$T/trace_bad.json" --format json; expect_out handoff_replay_fail_json_msg '"code": "HANDOFF_TRACE_INTERVAL_INVALID"'
# A 10 KB chunk id is reported within the report limits (4096 bytes of a message, violation.h),
# in both formats; its lines were 10 KB long (2026-12-07). Since the same day the transfer
# transaction's own message quotes the id clipped at 80 bytes and counted.
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["events"][1]["chunk"]+="x"*10000; json.dump(d,open(sys.argv[2],"w"))' fixtures/m5_6/handoff/transfer_protocol.json "$T/hr_long.json"
check handoff_replay_long_id 1 "$K" handoff replay "$T/hr_long.json"; expect_out handoff_replay_long_id_msg 'HANDOFF_CHUNK_UNKNOWN .*: chunk "c0x+\.\.\." \(10002 bytes\) is not in transfer xfer-req-42-g7.s manifest$'
cp "$T/out" "$T/hr_long.text"
check handoff_replay_long_id_json 1 "$K" handoff replay "$T/hr_long.json" --format json
cp "$T/out" "$T/hr_long.jsonout"
check handoff_replay_long_id_lines 0 python3 -c 'import sys; sys.exit(0 if all(0 < max(map(len, open(f))) < 4400 for f in sys.argv[1:]) else 1)' "$T/hr_long.text" "$T/hr_long.jsonout"
# The text report's violations are on standard output (probe 84: standard error), and the JSON
# report has nothing before it.
"$K" handoff replay "$T/trace_bad.json" >"$T/hr_text.out" 2>/dev/null
check handoff_replay_text_stdout 0 grep -q 'HANDOFF_TRACE_INTERVAL_INVALID' "$T/hr_text.out"
"$K" handoff replay "$T/trace_bad.json" --format json >"$T/hr_fail.json" 2>/dev/null
check handoff_replay_fail_json_alone 0 python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/hr_fail.json"
# A timeline that stops mid-transfer is its violation under replay too (it printed figures, exit 0).
"$K" fixture materialize invalid_fixtures/m5_6/handoff/protocol_stops_mid_transfer.json >"$T/unterminated.json"
check handoff_replay_unterminated 1 "$K" handoff replay "$T/unterminated.json"; expect_out handoff_replay_unterminated_msg 'TRACE_OPERATION_UNTERMINATED at ./events.: the timeline ends with transfer'
# A 10 KB transfer id there is quoted clipped and counted (it was quoted whole, 2026-12-07).
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["transfer_id"]+="x"*10000; json.dump(d,open(sys.argv[2],"w"))' "$T/unterminated.json" "$T/unterminated_long.json"
check handoff_replay_unterminated_long_id 1 "$K" handoff replay "$T/unterminated_long.json"; expect_out handoff_replay_unterminated_long_id_msg 'the timeline ends with transfer "xfer-req-42-g7x+\.\.\." \(10014 bytes\) in state TRANSFERRING'
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("expected_metrics"); d["ab"]=1; json.dump(d,open(sys.argv[2],"w"))' fixtures/m5_1/service/ab_worked_trace.json "$T/svc_bad.json"
check service_metrics_fail_json 1 "$K" calc service-metrics --format json "$T/svc_bad.json"; expect_out service_metrics_fail_json_msg '"code": "INPUT_FIELD_UNKNOWN"'
expect_out service_metrics_fail_json_verdict '"verdict": "fail"'
for f in invalid_fixtures/m5_6/*/*.json; do
  code=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["expected_code"])' "$f")
  check "invalid:$f" 1 "$K" validate --format json "$f"
  expect_out "invalid-code:$f" "\"code\": \"$code\""
done

# Race histories as a document kind: the valid fixture, every invalid fixture with its code, and
# a cut-off history named by file and line.
check validate_race_history 0 "$K" validate fixtures/race/history.jsonl
for f in invalid_fixtures/race/*.json; do
  code=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["expected_code"])' "$f")
  check "invalid:$f" 1 "$K" validate --format json "$f"
  expect_out "invalid-code:$f" "\"code\": \"$code\""
done
head -c -40 fixtures/race/history.jsonl >"$T/race_cut.jsonl"
check validate_race_cut 1 "$K" validate "$T/race_cut.jsonl"; expect_out validate_race_cut_msg 'RACE_HISTORY_TRUNCATED'
check fuzz_check_race_cut 2 "$K" fuzz check "$T/race_cut.jsonl"; expect_out fuzz_check_race_cut_msg 'RACE_HISTORY_TRUNCATED( at [^ ]*)?: .*race_cut.jsonl:43: the last line is cut off'
check fuzz_aba_slot_reuse 1 "$K" fuzz races --mutant no_generation_fence --programs 50 --ops 60 --seed 1 --quiet --shrink-time 3 --shrink-reruns 2
expect_out fuzz_aba_shrunk 'shrunk program \(RapidCheck, seed'

# M5.1 0x05 A/B worked trace: metrics recomputed from the events with the expected block removed.
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("expected_metrics"); json.dump(d,open(sys.argv[2],"w"))' \
  fixtures/m5_1/service/ab_worked_trace.json "$T/ab.json"
check service_metrics_ab 0 "$K" calc service-metrics --format json "$T/ab.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["requests"]; a=d["aggregate"]
ok=(r["A"]["ttft"],r["B"]["ttft"],r["A"]["tpot"]["num"],r["A"]["tpot"]["den"],r["B"]["tpot"],a["request_goodput_per_s"]["num"],a["request_goodput_per_s"]["den"],a["kv_byte_time"])==(14,13,28,3,None,10,1,14080)
sys.exit(0 if ok else 1)' "$T/out" && pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL service_metrics_ab_values"; head -40 "$T/out"; }
# A request id is quoted escaped in the text report (it was written raw: a newline in an id forged
# a line, an escape sequence reached the terminal).
python3 -c 'import json,sys
def ren(x):
    if isinstance(x,dict): return {k:ren(v) for k,v in x.items()}
    if isinstance(x,list): return [ren(v) for v in x]
    return "B\n\x1b[2Krequest X" if x=="B" else x
d=ren(json.load(open(sys.argv[1]))); d.pop("expected_metrics"); json.dump(d,open(sys.argv[2],"w"))' \
  fixtures/m5_1/service/ab_worked_trace.json "$T/ab_spoof.json"
check service_metrics_text_escaped 0 "$K" calc service-metrics "$T/ab_spoof.json"; expect_lines service_metrics_text_escaped_lines 3
expect_out service_metrics_text_escaped_id '^request B\\x0A\\x1B\[2Krequest X: outputs 1,'
check service_metrics_partial 0 "$K" calc service-metrics fixtures/m5_1/service/partial_prefill_trace.json
expect_out service_metrics_partial_ttft 'request A: outputs 4, TTFT 7 ms'
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["events"][3]["t"]=0; json.dump(d,open(sys.argv[2],"w"))' \
  fixtures/m5_1/service/ab_worked_trace.json "$T/ab_bad.json"
check service_metrics_unreplayable 1 "$K" calc service-metrics "$T/ab_bad.json"
check service_metrics_missing 2 "$K" calc service-metrics "$T/none.json"
# A trace cut before A's release is not closed: its metrics are not printed (exit 0 before).
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("expected_metrics")
d["events"]=[e for e in d["events"] if not (e.get("request")=="A" and e.get("op")=="release")]; json.dump(d,open(sys.argv[2],"w"))' \
  fixtures/m5_1/service/ab_worked_trace.json "$T/ab_open.json"
check service_metrics_open 1 "$K" calc service-metrics "$T/ab_open.json"; expect_out service_metrics_open_msg 'SERVICE_TERMINAL_STATE_OPEN at ./requests/0.: request A ends in FINISHED_RETAINED'
# Unsigned options refuse a negative value (CLI11 read -1 as 2^64 - 1: gen-trace ran forever).
check negative_unsigned_option 2 "$K" calc saved-work --prompt -1 --outputs 1; expect_out negative_unsigned_msg '--prompt: expected a non-negative decimal integer, got -1'
check negative_list_element 2 "$K" calc layer-stream --ready 0 --transfer -1; expect_out negative_list_element_msg '--transfer element 1 "-1" is not an unsigned integer'
check gen_trace_events_bound 2 timeout 10 "$K" gen-trace --events -1 -o "$T/never.jsonl"
# Nothing to validate is not a pass; a .jsonl whose first line is not JSON cannot be read (exit 2,
# file:line:column), as for a .json file (both were exit 0 and exit 1 "no kind" before).
mkdir -p "$T/no_docs"; : >"$T/empty.jsonl"; printf '{"kind":"kvconform.trace/1",' >"$T/cut_header.jsonl"
check validate_empty_dir 2 "$K" validate "$T/no_docs"
check validate_empty_jsonl 2 "$K" validate "$T/empty.jsonl"; expect_out validate_empty_jsonl_msg 'empty.jsonl:1:1: empty file'
check validate_cut_header 2 "$K" validate "$T/cut_header.jsonl"; expect_out validate_cut_header_msg 'cut_header.jsonl:1:29: unexpected end of input'

# Every bundled kvconform.trace/1 fixture is valid against the published JSON Schema.
# tools/setup.sh installs python3-jsonschema for the system python; prefer a python that has it.
PY=python3; python3 -c 'import jsonschema' 2>/dev/null || { [ -x /usr/bin/python3 ] && PY=/usr/bin/python3; }
"$PY" tools/trace_schema_check.py >"$T/out" 2>&1; rc=$?
have_schema=1; [ "$rc" -eq 77 ] && have_schema=0  # python3-jsonschema is missing (SKIP)
if [ "$rc" -eq 77 ]; then cat "$T/out"; elif [ "$rc" -eq 0 ]; then pass=$((pass+1)); else
  fail=$((fail+1)); echo "FAIL trace_schema_fixtures: exit $rc"; sed 's/^/    /' "$T/out" | head -20; fi
# The schema tool reports a malformed line as file:line (no traceback) and goes on with the next
# file; like the checker it rejects 1.0 as an integer, duplicate keys and a non-trace file named
# explicitly, and splits lines on "\n" only (a raw U+2028 inside a string is JSON).
if [ "$rc" -ne 77 ]; then
  no_traceback() { if grep -q Traceback "$T/out"; then fail=$((fail+1)); echo "FAIL $1: traceback"; sed 's/^/    /' "$T/out" | head -20; else pass=$((pass+1)); fi; }
  F=fixtures/m5_1/lifecycle/doc_example_two_requests.jsonl
  { cat "$F"; echo; } >"$T/blank.jsonl"; printf '{"kind":' >"$T/trunc.jsonl"
  check schema_blank_line 1 "$PY" tools/trace_schema_check.py "$T/blank.jsonl" "$T/trunc.jsonl" "$F"
  expect_out schema_blank_line_msg 'blank.jsonl:37: \$: blank line'; expect_out schema_next_file 'trunc.jsonl:1: \$: expected a kvconform.trace/1 header object: not JSON'
  expect_out schema_all_files '^3 traces checked'; no_traceback schema_blank_line_no_traceback
  sed '2s/"local_sequence":1,/"local_sequence":1.0,/' "$F" >"$T/float.jsonl"
  check schema_float_integer 1 "$PY" tools/trace_schema_check.py "$T/float.jsonl"; expect_out schema_float_integer_msg 'float.jsonl:2: \$\.local_sequence: expected an integer literal, found 1\.0'
  check schema_explicit_non_trace 1 "$PY" tools/trace_schema_check.py fixtures/race/history.jsonl; expect_out schema_explicit_non_trace_msg 'history.jsonl:1: \$\.kind: expected "kvconform.trace/1"'
  sed "1s/\"description\":\"/&$(printf '\342\200\250')/" "$F" >"$T/u2028.jsonl"  # raw U+2028 inside a string
  check schema_u2028_in_string 0 "$PY" tools/trace_schema_check.py "$T/u2028.jsonl"
  sed '2s/"request_id":"A",/"request_id":"A","request_id":"A",/' "$F" >"$T/dupkey.jsonl"
  check schema_duplicate_key 1 "$PY" tools/trace_schema_check.py "$T/dupkey.jsonl"; expect_out schema_duplicate_key_msg 'dupkey.jsonl:2: \$: duplicate object key "request_id"'
  # Probe 68: the schema admitted what the checker refuses on a reorder (a request_id, a
  # snapshot number) and on an observation (a snapshot number): both refuse them now.
  S=fixtures/m5_1/lifecycle/synthetic_lifecycle.jsonl
  sed '20s/"operation_id":null,"base_snapshot":null/"request_id":"A","operation_id":null,"base_snapshot":null/' "$S" >"$T/reorder_req.jsonl"
  sed '20s/"base_snapshot":null/"base_snapshot":1/' "$S" >"$T/reorder_base.jsonl"
  sed '7s/"base_snapshot":null/"base_snapshot":1/' "$F" >"$T/obs_base.jsonl"
  for c in "reorder_req:20:request_id:INPUT_VALUE_INVALID" "reorder_base:20:base_snapshot:TRACE_SNAPSHOT_MISMATCH" "obs_base:7:base_snapshot:TRACE_SNAPSHOT_MISMATCH"; do
    IFS=: read -r n l m code <<<"$c"
    check "schema_$n" 1 "$PY" tools/trace_schema_check.py "$T/$n.jsonl"; expect_out "schema_${n}_msg" "$n.jsonl:$l: \\\$\\.$m: .* is not of type 'null'"
    check "check_$n" 1 "$K" check "$T/$n.jsonl"; expect_out "check_${n}_code" "$n.jsonl:$l: $code"
  done
  # The doc audit of 2026-12-07 (D4): the schema admitted an empty tier and an empty abort reason
  # that the checker refuses, and named another code than the checker's for a reversed readiness
  # interval. The schema tool and the checker now agree, each at its line.
  X=fixtures/m5_6/trace/transfer_protocol.jsonl
  sed '8s/"tier":"hbm"/"tier":""/' "$F" >"$T/tier_empty.jsonl"
  sed '7s/"reason":"[^"]*"/"reason":""/' "$X" >"$T/abort_reason_empty.jsonl"
  sed '8s/"interval":\[0,16\]/"interval":[16,0]/' "$X" >"$T/kv_ready_reversed.jsonl"
  for c in "tier_empty:8:tier:non-empty:INPUT_VALUE_INVALID" "abort_reason_empty:7:reason:non-empty:INPUT_VALUE_INVALID" \
           "kv_ready_reversed:8:interval:HANDOFF_TRACE_INTERVAL_INVALID:HANDOFF_TRACE_INTERVAL_INVALID"; do
    IFS=: read -r n l m says code <<<"$c"
    check "schema_$n" 1 "$PY" tools/trace_schema_check.py "$T/$n.jsonl"; expect_out "schema_${n}_msg" "$n.jsonl:$l: \\\$\\.payload\\.$m: .*$says"
    check "check_$n" 1 "$K" check "$T/$n.jsonl"; expect_out "check_${n}_code" "$n.jsonl:$l: $code"
  done
  E='{"request_id":"A","handle_generation":1,"snapshot":4,"committed_length":0,"phase":"RELEASED"}'
  sed "1s/}\$/,\"expected_final_states\":[$E,$E]}/" "$F" >"$T/twice.jsonl"  # one request, two ends
  check schema_final_state_twice 1 "$PY" tools/trace_schema_check.py "$T/twice.jsonl"; expect_out schema_final_state_twice_msg 'twice.jsonl:1: \$\.expected_final_states\[1\]\.request_id: request_id "A" listed twice'
  check check_final_state_twice 1 "$K" check "$T/twice.jsonl"; expect_out check_final_state_twice_msg 'fail \(35 events, 1 violations\)'; expect_out check_final_state_twice_code 'INPUT_VALUE_INVALID at ./0/expected_final_states/1/request_id'
fi
# The end record (trace-format.md "End record"): the checker and the schema tool agree, code and
# line, on a record that counts the lines before it, one that miscounts, a line after it, a header
# that requires one the trace lacks, a count beyond 64 bits (its range code alone), a record then
# a cut line (the cut alone), an event line carrying a stray kind (an event), a CRLF record; a
# stream cut between two lines through `check -` is reported.
F=fixtures/m5_1/lifecycle/doc_example_two_requests.jsonl  # 35 events
sed '1s/}$/,"end_record":true}/' "$F" >"$T/end_required.jsonl"
{ cat "$T/end_required.jsonl"; echo '{"kind":"kvconform.trace_end/1","events":35}'; } >"$T/end_ok.jsonl"
{ cat "$T/end_required.jsonl"; printf '{"kind":"kvconform.trace_end/1","events":35}\r\n'; } >"$T/end_crlf.jsonl"
{ cat "$F"; echo '{"kind":"kvconform.trace_end/1","events":34}'; } >"$T/end_count.jsonl"
{ cat "$T/end_ok.jsonl"; sed -n 2p "$F"; } >"$T/end_after.jsonl"
{ cat "$T/end_required.jsonl"; echo '{"kind":"kvconform.trace_end/1","events":18446744073709551616}'; } >"$T/end_2p64.jsonl"
{ cat "$T/end_ok.jsonl"; printf '{"event_id":"e'; } >"$T/end_then_cut.jsonl"
sed '12s/}$/,"kind":"kvconform.trace_end\/1"}/' "$T/end_ok.jsonl" >"$T/end_stray_kind.jsonl"
for n in end_ok end_crlf; do
  check "check_$n" 0 "$K" check "$T/$n.jsonl"; expect_out "check_${n}_msg" 'pass \(35 events, 0 violations\)'
  [ "$have_schema" -eq 1 ] && check "schema_$n" 0 "$PY" tools/trace_schema_check.py "$T/$n.jsonl"
done
for c in "end_count:37:TRACE_END_MISMATCH" "end_after:38:TRACE_END_MISMATCH" "end_required:37:TRACE_END_MISSING" \
         "end_2p64:37:INPUT_VALUE_OUT_OF_RANGE" "end_then_cut:38:TRACE_TRUNCATED" "end_stray_kind:12:INPUT_FIELD_UNKNOWN"; do
  IFS=: read -r n l code <<<"$c"
  check "check_$n" 1 "$K" check "$T/$n.jsonl"; expect_out "check_${n}_code" "$n.jsonl:$l: $code"; expect_out "check_${n}_one" 'fail \([0-9]+ events, 1 violations\)'
  if [ "$have_schema" -eq 1 ]; then
    check "schema_$n" 1 "$PY" tools/trace_schema_check.py "$T/$n.jsonl"
    # A TRACE_* code is named once, at its line; a range or field code is the schema's own.
    case $code in TRACE_*) want=1; expect_out "schema_${n}_msg" "$n.jsonl:$l: .*kvconform check: $code" ;;
                  *) want=0; expect_out "schema_${n}_line" "$n.jsonl:$l: " ;; esac
    grep -c "kvconform check:" "$T/out" >"$T/out.n"; mv "$T/out.n" "$T/out"; expect_out "schema_${n}_one_code" "^$want\$"
  fi
done
head -n 30 "$T/end_ok.jsonl" | "$K" check - >"$T/out" 2>&1; rc_cut=$?
if [ "$rc_cut" -eq 1 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL check_end_cut_stream: exit $rc_cut, expected 1"; fi
expect_out check_end_cut_stream_code '^-:31: TRACE_END_MISSING .*after 29 event lines'

# Mutation audit of tools/kvconform (2026-12-05): each check below pins a documented behaviour of
# the CLI's own code that a single-point mutant changed while every other check still passed.
# validate --format json: an invalid fixture's "expected_code", each violation's "seed_ref" and,
# for a JSON Lines document, its "line" (docs/cli.md, validate's JSON shape).
check audit_validate_json_expected_code 1 "$K" validate --format json invalid_fixtures/m5_1/manifest/zero_layers.json
expect_out audit_validate_json_expected_code_msg '"expected_code": "MANIFEST_SCHEMA_ZERO_EXTENT"'
expect_out audit_validate_json_seed_ref '"seed_ref": "M5.1 0x02 '
check audit_validate_json_line 1 "$K" validate --format json "$T/unknown_type.jsonl"; expect_out audit_validate_json_line_msg '"line": 7,'
# validate's text line for a conforming file names its kind: "file: OK (kind)".
check audit_validate_text_ok_kind 0 "$K" validate "$M"; expect_out audit_validate_text_ok_kind_msg 'request_cache_manifest\.json: OK \(kvconform\.request_cache_manifest/1\)$'
# An unreadable file beside a violating one: the verdict is "error" and the exit code 2, not 1.
check audit_validate_error_beats_violation 2 "$K" validate invalid_fixtures/m5_1/manifest/zero_layers.json "$T/nope.json"
check audit_validate_error_beats_violation_json 2 "$K" validate --format json invalid_fixtures/m5_1/manifest/zero_layers.json "$T/nope.json"
cp "$T/out" "$T/report.json"
check audit_validate_error_beats_violation_verdict 0 python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["verdict"] == "error", d["verdict"]' "$T/report.json"
# After "--" an argument is positional: "--format=" there is a file name, not an empty option value.
check audit_empty_value_after_separator 2 "$K" validate -- "--format="; expect_out audit_empty_value_after_separator_msg '^IoError: --format=: cannot open'
# check's reports: the text line names the event and request; the JSON violation carries
# event_id, request_id and section (docs/trace-format.md "Exit codes and output").
check audit_check_text_context 1 "$K" check "$T/unknown_type.jsonl"
expect_out audit_check_text_context_msg 'unknown_type\.jsonl:7: TRACE_EVENT_TYPE_UNKNOWN event alloc-0:0 request R at '
check audit_check_json_context 1 "$K" check --format json "$T/unknown_type.jsonl"
for kv in '"event_id": "alloc-0:0"' '"request_id": "R"' '"section": "kvconform.trace/1"'; do expect_out "audit_check_json_context $kv" "$kv"; done
# An unreadable trace: --parse-only exits 2 (not 1), and the JUnit report has an <error> row.
check audit_check_parse_only_missing 2 "$K" check --parse-only "$T/nope.jsonl"
check audit_check_junit_missing 2 "$K" check --format junit "$T/nope.jsonl"; expect_out audit_check_junit_missing_msg '<error message="IoError: .*nope\.jsonl: cannot open'
# The JUnit failure message is the first violation's code (two codes: line 7's, then line 27's).
{ cat "$T/unknown_type.jsonl"; echo x; } >"$T/two_codes.jsonl"
check audit_check_junit_first_code 1 "$K" check --format junit "$T/two_codes.jsonl"; expect_out audit_check_junit_first_code_msg '<failure message="TRACE_EVENT_TYPE_UNKNOWN">'
# Printable: DEL and a byte of no UTF-8 sequence are written \xNN (docs/cli.md "Text output").
check audit_text_del_and_bad_byte 2 "$K" check "$T/nope$(printf '\177\377').jsonl"; expect_out audit_text_del_and_bad_byte_msg 'nope\\x7F\\xFF\.jsonl: cannot open'
# Leading zeros of an unsigned option are dropped: 010 is ten, not octal 8 (probe 28).
check audit_unsigned_leading_zero 0 "$K" calc saved-work --prompt 010 --outputs 1 --format json; expect_out audit_unsigned_leading_zero_ten '"prompt": 10,'
check audit_savedwork_pair_reduction 0 "$K" calc saved-work --prompt 2048 --outputs 128 --format json; expect_out audit_savedwork_pair_reduction_msg '"pair_reduction": 120\.67'
# layer-stream: every field, in JSON and in the text format (key: value lines).
check audit_layerstream_json 0 "$K" calc layer-stream --ready 25,50,75,100 --transfer 10,10,10,10 --format json
cp "$T/out" "$T/report.json"
check audit_layerstream_json_values 0 python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert (d["per_layer_complete"], d["total_transfer"], d["hidden_transfer"]) == (110, 40, 30), d' "$T/report.json"
check audit_layerstream_text 0 "$K" calc layer-stream --ready 25,50,75,100 --transfer 10,10,10,10; expect_out audit_layerstream_text_msg '^per_layer_visible: \[35,60,85,110\]$'
# errors: the JSON registry's domain, and the text format's "NAME  meaning" lines.
check audit_errors_json 0 "$K" errors --format json
cp "$T/out" "$T/report.json"
check audit_errors_json_domain 0 python3 -c 'import json,sys; d={e["code"]: e for e in json.load(open(sys.argv[1]))}; assert d["INPUT_FIELD_MISSING"]["domain"] == "input", d["INPUT_FIELD_MISSING"]' "$T/report.json"
check audit_errors_text 0 "$K" errors; expect_out audit_errors_text_msg '^INPUT_FIELD_MISSING  a required field is absent$'
# manifest seal: --in-place rewrites the file (nothing on standard output) with what seal prints;
# a document it cannot seal is exit 2.
cp "$M" "$T/seal.json"; "$K" manifest seal "$M" >"$T/sealed.json" 2>/dev/null
check audit_manifest_seal_in_place 0 "$K" manifest seal --in-place "$T/seal.json"; expect_lines audit_manifest_seal_in_place_quiet 0
check audit_manifest_seal_in_place_file 0 cmp "$T/seal.json" "$T/sealed.json"
echo '{}' >"$T/not_manifest.json"; check audit_manifest_seal_refused 2 "$K" manifest seal "$T/not_manifest.json"
# A rewrite that cannot be written (here a file-size limit of 1 KiB, the write failing with EFBIG)
# is exit 2 and leaves the file as it was and no temporary file (before 2026-12-05 the file was
# rewritten with no check of the write: a failed write exited 0).
mkdir -p "$T/seal_dir"; cp "$M" "$T/seal_dir/blocked.json"
check manifest_seal_in_place_write_failure 2 bash -c 'trap "" XFSZ; ulimit -f 1; exec "$@"' _ "$K" manifest seal --in-place "$T/seal_dir/blocked.json"
expect_out manifest_seal_in_place_write_failure_msg 'cannot rewrite the file in place'
check manifest_seal_in_place_write_failure_unchanged 0 cmp "$M" "$T/seal_dir/blocked.json"
check manifest_seal_in_place_write_failure_no_temporary 0 test "$(ls "$T/seal_dir")" = blocked.json
# The temporary file is a new one with the file's permissions: a file named FILE.tmp is left alone
# (the CLI doc audit of 2026-12-07: FILE.tmp was overwritten, and an empty directory of that name
# removed on failure).
cp "$M" "$T/seal_dir/mode.json"; chmod 640 "$T/seal_dir/mode.json"; echo keep >"$T/seal_dir/mode.json.tmp"
check manifest_seal_in_place_own_temporary 0 "$K" manifest seal --in-place "$T/seal_dir/mode.json"
check manifest_seal_in_place_keeps_tmp_named_file 0 test "$(cat "$T/seal_dir/mode.json.tmp")" = keep
check manifest_seal_in_place_keeps_mode 0 test "$(stat -c %a "$T/seal_dir/mode.json")" = 640
# service-metrics: the text report's SLO verdict, and one JSON document for an unreadable file.
check audit_service_metrics_slo 0 "$K" calc service-metrics fixtures/m5_1/service/partial_prefill_trace.json; expect_out audit_service_metrics_slo_msg ', SLO-valid yes, KV byte-time 5504 byte-ms$'
check audit_service_metrics_missing_json 2 "$K" calc service-metrics --format json "$T/none.json"; expect_out audit_service_metrics_missing_json_msg '"verdict": "error"'
# handoff replay: the protocol timeline's retries and logical bytes, the trace's work.
check audit_handoff_replay_protocol 0 "$K" handoff replay fixtures/m5_6/handoff/transfer_protocol.json --format json
for kv in '"retries": 1' '"logical_bytes": 8192'; do expect_out "audit_handoff_replay_protocol $kv" "$kv"; done
check audit_handoff_replay_trace 0 "$K" handoff replay fixtures/m5_6/runtime/transfer_trace.json --format json; expect_out audit_handoff_replay_trace_work '"work_us": 284'
# suite --format json: a failing run's verdict, and its summary row (an invalid case, failed).
check audit_suite_json_fail 1 "$K" suite --root "$T/selfroot" --format json
cp "$T/out" "$T/report.json"
check audit_suite_json_fail_summary 0 python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["verdict"] == "fail" and d["summary"] == [{"section": "unknown", "valid_cases": 0, "invalid_cases": 1, "passed": 0, "failed": 1}], d' "$T/report.json"
# suite: two files of one case name (a.json, a.jsonl) fail both; no case at all is "ERROR (no cases)".
mkdir -p "$T/duproot/fixtures/m" && cp "$M" "$T/duproot/fixtures/m/a.json" && cp "$TR" "$T/duproot/fixtures/m/a.jsonl"
check audit_suite_duplicate_name 1 "$K" suite --root "$T/duproot"; expect_out audit_suite_duplicate_name_msg 'a\.jsonl: another case has the name fixtures/m/a'
check audit_suite_no_cases 2 "$K" suite --filter zzzznomatch; expect_out audit_suite_no_cases_verdict '^verdict: ERROR \(no cases\)$'

# A prompt id of 19 digits is refused as usage (exit 2; "decimal digits, below 10^18"), not read
# past int64 (an internal error, exit 3).
check audit_prompt_id_19_digits 2 "$K" generate --model fixtures/models/mqa --prompt-ids 9999999999999999999 --max-new-tokens 1
expect_out audit_prompt_id_19_digits_msg "element 1 '9999999999999999999' is not a token id \(decimal digits, below 10\^18\)"
# pd-worker --first-attempt is 1..2^24 - 2 (a tag holds 24 bits; two attempts): 2^24 - 1 is usage.
check audit_first_attempt_bound 2 timeout 30 "$K" pd-worker --role prefill --bootstrap 127.0.0.1:1 --model fixtures/models/mqa --prompt-ids 1,2 --first-attempt 16777215
expect_out audit_first_attempt_bound_msg '--first-attempt: 16777215; expected 1\.\.16777214'
# A document's unknown kind is the JUnit classname: a control character in it is not written raw
# (XML 1.0 cannot carry it; the report must stay well-formed).
printf '{"kind": "kvconform.x\\u0001y/1"}' >"$T/ctl_kind.json"
"$K" validate --format junit "$T/ctl_kind.json" >"$T/ctl_kind.xml" 2>/dev/null
check audit_junit_classname_control 0 python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$T/ctl_kind.xml"
# --filter matches a part of the printed name too, not only the whole of it ("a\x09" selects
# fixtures/m/a<TAB>b).
check audit_suite_printed_name_part 0 "$K" suite --root "$T/tabroot" --filter 'a\x09' -v; expect_out audit_suite_printed_name_part_msg '^PASS fixtures/m/a\\x09b$'
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
