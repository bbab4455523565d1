// Saved-work frontier replay over frontier::FrontierState; see saved_work_frontier.h.
#include "reference/saved_work/saved_work_frontier.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "reference/base/text_forms.h"
#include "reference/frontier/frontier.h"

namespace kvc {
namespace {

using frontier::AppendCall;
using frontier::AppendPurpose;
using frontier::FrontierState;

// An AppendCall with every member named (the struct has members without initializers).
frontier::AppendCall MakeCall(frontier::AppendPurpose purpose, uint64_t rows,
                              std::optional<uint64_t> input_token = std::nullopt) {
  frontier::AppendCall c;
  c.purpose = purpose;
  c.rows = rows;
  c.input_token = input_token;
  return c;
}

// A token list as a message names it: clipped past 16 tokens (a document may declare thousands).
std::string List(const std::vector<uint64_t>& xs) { return base::ClippedList(xs); }

std::vector<uint64_t> FrontierList(const FrontierState& f) {
  if (auto t = f.frontier_token()) return {*t};
  return {};
}

// One declared model call: purpose, inputs, rows, emitted outputs, logits disposition.
struct Call {
  std::string ptr, purpose;
  std::vector<uint64_t> inputs, emits, drafts;
  uint64_t rows = 0, accepted = 0;
  std::optional<uint64_t> reused_draft_index;
  std::string logits;  // repair only: "discarded" is the contract
  const Json* expected = nullptr;
};

// Token ids (and the lists of them) are opaque integers up to 2^53, the bound of the kit's other
// integers and of the trace format's tokens: the frontier holds them in 64 bits (they were capped
// at 2^32 - 1, undocumented, while a trace accepted 2^40; probe 92).
std::vector<uint64_t> Uints(FieldReader& r, std::string_view key, Violations* v) {
  const Json* a = r.Array(key);
  if (!a) return {};
  return FieldReader::UintArray(*a, r.Ptr(key), v).value_or(std::vector<uint64_t>{});
}

// Reads a call object; `kind` is "model" (prefill/decode), "repair" or "verify".
Call ReadCall(const Json& obj, const std::string& ptr, std::string_view kind, Violations* v) {
  Call c;
  c.ptr = ptr;
  FieldReader r(&obj, ptr, v);
  if (kind == "model") {
    if (auto s = r.Enum("purpose", {"prefill", "decode"})) c.purpose = *s;
    c.inputs = Uints(r, "inputs", v);
    c.rows = c.inputs.size();
  } else if (kind == "repair") {
    c.purpose = "repair";
    c.inputs = Uints(r, "inputs", v);
    if (auto x = r.Uint("rows")) c.rows = *x;
    if (auto s = r.Enum("logits", {"discarded", "returned"})) c.logits = *s;
    if (r.Has("reused_draft_index")) c.reused_draft_index = r.Uint("reused_draft_index");
    else r.Allow({"reused_draft_index"});
  } else {
    c.purpose = "verify";
    c.drafts = Uints(r, "draft_tokens", v);
    if (auto x = r.Uint("accepted")) c.accepted = *x;
    if (auto x = r.Uint("rows")) c.rows = *x;
  }
  c.emits = Uints(r, "emits", v);
  c.expected = r.Object("expected");
  FieldReader e(c.expected, ptr + "/expected", v);
  e.Uint("committed");
  e.Uint("emitted");
  Uints(e, "frontier", v);
  e.RejectUnknownFields();
  r.RejectUnknownFields();
  return c;
}

// Replays one call through `f`; false after recording the first violation.
bool Replay(const Call& c, FrontierState& f, Violations* v) {
  auto fail = [&](const Status& s, const std::string& field) {
    Add(v, s.error() == ErrorCode::kNone ? ErrorCode::INPUT_VALUE_INVALID : s.error(), c.ptr + field,
        c.purpose + " call: " + std::string(s.message()));
    return false;
  };
  AppendCall a;
  a.rows = c.rows;
  if (c.purpose == "prefill") {
    a.purpose = AppendPurpose::kPrefill;
  } else if (c.purpose == "decode") {
    a.purpose = AppendPurpose::kDecode;
    if (!c.inputs.empty()) a.input_token = c.inputs.front();
  } else if (c.purpose == "repair") {
    a.purpose = AppendPurpose::kRepair;
    if (!c.inputs.empty()) a.input_token = c.inputs.front();
    a.reused_draft_index = c.reused_draft_index;
  } else {
    a.purpose = AppendPurpose::kVerify;
    a.input_token = f.frontier_token();
    a.draft_tokens = c.drafts;
    a.accepted = c.accepted;
  }
  if (c.purpose != "verify" && c.purpose != "prefill" && c.inputs.size() != 1)
    return fail(ViolationStatus(ErrorCode::FRONTIER_TOKEN_MISMATCH,
                                "expected exactly the one frontier token as input, got " + List(c.inputs)),
                "/inputs");
  if (Status s = f.CheckAppend(a); !s.ok()) {
    ErrorCode e = s.error();
    bool rows = e == ErrorCode::FRONTIER_REPAIR_ROW_COUNT || e == ErrorCode::FRONTIER_REJECTED_ROW_COMMITTED ||
                e == ErrorCode::FRONTIER_CACHE_COUNT_MISMATCH || e == ErrorCode::SERVICE_PHASE_PROMPT_OVERRUN;
    return fail(s, e == ErrorCode::FRONTIER_REJECTED_ROW_RELABELED ? "/reused_draft_index"
                   : e == ErrorCode::FRONTIER_ACCEPTED_EXCEEDS_DRAFT ? "/accepted"
                   : rows                                            ? "/rows"
                                                                     : "/inputs");
  }
  if (c.purpose == "repair" && c.logits != "discarded") {
    Add(v, ErrorCode::SAVED_WORK_REPAIR_LOGITS_NOT_DISCARDED, c.ptr + "/logits",
        "the repair call's logits are \"" + c.logits + "\"; closing the frontier discards them");
    return false;
  }
  f.ApplyPublished(a);
  for (size_t i = 0; i < c.emits.size(); ++i)
    if (Status s = f.Emit(f.emitted(), c.emits[i], c.purpose == "repair"); !s.ok())
      return fail(s, "/emits/" + std::to_string(i));
  return true;
}

// One member of a declared state that differs from the replay.
struct Diff {
  ErrorCode code = ErrorCode::kNone;
  std::string member, message;  // member: "/committed", ...
};

// Compares a declared {committed, emitted, frontier} with the replayed state, and `more`
// differences the caller found in the same declared state (the stop's returned tokens and
// logical length): one violation, at the first member that differs, whose message names every
// member that does (one emit left out moves both the output progress and the frontier: probe 92
// saw two drifts for it). False when the declaration drifts: the caller replays no later call
// against it, since each later call's findings would follow from this one (probe 92: a decode
// that emitted nothing drifted, then the next decode had no frontier token to process,
// FRONTIER_CACHE_OVERCOMMIT).
bool CheckCounters(const Json& ex, const std::string& ptr, const FrontierState& f,
                   uint64_t emitted_base, Violations* v, std::vector<Diff> more = {}) {
  std::vector<Diff> diffs;
  const uint64_t committed = ex["committed"].get<uint64_t>();
  if (committed > f.committed())
    diffs.push_back({ErrorCode::FRONTIER_CACHE_OVERCOMMIT, "/committed",
                     "declared " + std::to_string(committed) +
                         " committed rows, but cache-producing calls processed only " +
                         std::to_string(f.committed()) +
                         " (the final emitted token has no K/V row until an append processes it)"});
  else if (committed != f.committed())
    diffs.push_back({ErrorCode::SAVED_WORK_FRONTIER_DRIFT, "/committed",
                     "replayed committed length is " + std::to_string(f.committed()) +
                         ", declared " + std::to_string(committed)});
  const uint64_t emitted = ex["emitted"].get<uint64_t>();
  if (emitted != f.emitted() - emitted_base)
    diffs.push_back({ErrorCode::SAVED_WORK_FRONTIER_DRIFT, "/emitted",
                     "replayed output progress is " + std::to_string(f.emitted() - emitted_base) +
                         ", declared " + std::to_string(emitted)});
  const std::vector<uint64_t> declared = ex["frontier"].get<std::vector<uint64_t>>();
  if (declared != FrontierList(f))
    diffs.push_back(
        {ErrorCode::SAVED_WORK_FRONTIER_DRIFT, "/frontier",
         "replayed output frontier is " + List(FrontierList(f)) + ", declared " + List(declared)});
  diffs.insert(diffs.end(), more.begin(), more.end());
  if (diffs.empty()) return true;
  std::string message = diffs[0].message;
  for (size_t i = 1; i < diffs.size(); ++i)
    message += "; also " + diffs[i].member.substr(1) + ": " + diffs[i].message;
  Add(v, diffs[0].code, ptr + diffs[0].member, message);
  return false;
}

}  // namespace

void ValidateSavedWorkFrontier(const Json& frontier_obj, const std::string& pointer, Violations* out) {
  size_t before = out->size();
  FieldReader top(&frontier_obj, pointer, out);
  // Stop trace: prompt, calls, stop summary, optional repair.
  FieldReader st(top.Object("stop_trace"), pointer + "/stop_trace", out);
  std::vector<uint64_t> prompt = Uints(st, "prompt_tokens", out);
  std::vector<Call> calls;
  if (const Json* arr = st.Array("calls"))
    for (size_t i = 0; i < arr->size(); ++i)
      calls.push_back(ReadCall((*arr)[i], st.Ptr("calls") + "/" + std::to_string(i), "model", out));
  const Json* stop = st.Object("stop");
  FieldReader sr(stop, st.Ptr("stop"), out);
  std::vector<uint64_t> returned = Uints(sr, "returned_tokens", out);
  uint64_t logical_length = sr.Uint("logical_length").value_or(0);
  sr.Uint("committed");
  sr.Uint("emitted");
  Uints(sr, "frontier", out);
  sr.RejectUnknownFields();
  std::optional<Call> repair;
  if (const Json* r = st.OptObject("repair")) repair = ReadCall(*r, st.Ptr("repair"), "repair", out);
  st.RejectUnknownFields();
  // Speculative handoff: base length, verification, correction repair.
  FieldReader sp(top.Object("speculative"), pointer + "/speculative", out);
  uint64_t base = sp.Uint("base_committed", 1).value_or(1);
  std::optional<Call> verify, correction;
  if (const Json* x = sp.Object("verify")) verify = ReadCall(*x, sp.Ptr("verify"), "verify", out);
  if (const Json* x = sp.Object("correction_repair"))
    correction = ReadCall(*x, sp.Ptr("correction_repair"), "repair", out);
  sp.RejectUnknownFields();
  top.RejectUnknownFields();
  if (out->size() != before) return;
  // "Prefill processes the prompt and selects the first output token" (M5.1 0x03): a stop trace
  // without a prompt has no logits for its first output (the work ledger refuses P = 0 alike).
  if (prompt.empty()) {
    Add(out, ErrorCode::SAVED_WORK_INPUT_INVALID, st.Ptr("prompt_tokens"),
        "a stop trace has a prompt of at least one token");
    return;
  }

  // Ordinary stop trace. Prefill inputs are the prompt.
  FrontierState f(prompt.size());
  bool ok = true;
  for (const Call& c : calls) {
    // Prefill inputs must be the next prompt rows (an overrun is the frontier's to report).
    size_t start = f.prompt_rows();
    if (c.purpose == "prefill" && c.inputs.size() <= prompt.size() - start &&
        !std::equal(c.inputs.begin(), c.inputs.end(), prompt.begin() + static_cast<long>(start))) {
      Add(out, ErrorCode::SAVED_WORK_FRONTIER_DRIFT, c.ptr + "/inputs",
          "prefill inputs " + List(c.inputs) + " are not the next prompt rows of " + List(prompt));
      ok = false;
      break;
    }
    if (!(ok = Replay(c, f, out))) break;
    if (!(ok = CheckCounters(*c.expected, c.ptr + "/expected", f, 0, out))) break;
  }
  // A stop follows an output selection ("after stopping immediately after the final selection:
  // committed cache length = P + E - 1", M5.1 0x03): the frontier's finish rule, as the service
  // and trace checkers judge a finish (probe 92: a stop with no call, or after a prefill of half
  // the prompt, passed). A refused stop has no summary to compare and nothing to repair.
  const std::string p = st.Ptr("stop");
  if (ok) {
    if (Status s = f.CheckFinish(); !s.ok()) {
      Add(out, s.error(), p, "stop: " + std::string(s.message()));
      ok = false;
    }
  }
  if (ok) {
    std::vector<uint64_t> logical = prompt;
    for (const Call& c : calls) logical.insert(logical.end(), c.emits.begin(), c.emits.end());
    std::vector<Diff> more;
    if (returned != logical)
      more.push_back({ErrorCode::SAVED_WORK_FRONTIER_DRIFT, "/returned_tokens",
                      "the prompt plus emitted outputs are " + List(logical) + ", declared " +
                          List(returned)});
    if (logical_length != logical.size())
      more.push_back({ErrorCode::SAVED_WORK_FRONTIER_DRIFT, "/logical_length",
                      "logical token count P + E = " + std::to_string(logical.size()) +
                          ", declared " + std::to_string(logical_length)});
    // The stop summary is one declared state: a call left out moves its counters, its tokens and
    // its length at once, and the repair declared after it then processes the wrong token.
    if (CheckCounters(*stop, p, f, 0, out, std::move(more)) && repair && Replay(*repair, f, out))
      CheckCounters(*repair->expected, repair->ptr + "/expected", f, 0, out);
  }

  // Speculative handoff from a base of `base` committed rows and no unprocessed frontier.
  FrontierState s(base);
  s.ApplyPublished(MakeCall(AppendPurpose::kPrefill, base));
  if (verify && Replay(*verify, s, out) &&
      CheckCounters(*verify->expected, verify->ptr + "/expected", s, 0, out)) {
    uint64_t after_verify = s.emitted();
    if (correction && Replay(*correction, s, out))
      CheckCounters(*correction->expected, correction->ptr + "/expected", s, after_verify, out);
  }
}

}  // namespace kvc
