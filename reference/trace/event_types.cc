// The kvconform.trace/1 event-type table and the handler of each event type.
#include <simdjson.h>

#include <cstring>
#include <mutex>

#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"
#include "reference/frontier/frontier.h"
#include "reference/lifecycle/reorder/reorder.h"
#include "reference/trace/checker.h"
#include "reference/trace/element_readers.h"

namespace kvc::trace {

void NoSnapshotProduced(TraceChecker& c, const Event& e) {
  if (e.result_snapshot)
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/result_snapshot",
             std::string(e.event_type) + " claims result snapshot " +
                 std::to_string(*e.result_snapshot) +
                 "; it produces no snapshot (result_snapshot must be null or absent)");
}

namespace {

using lifecycle::BaseRef;
using lifecycle::KvObject;
using lifecycle::Phase;
using lifecycle::Snapshot;

// Cold: numbers are formatted only into violation messages.
[[gnu::cold]] std::string U(uint64_t v) { return std::to_string(v); }

// An event naming a request that was never allocated or forked. Reported `rejected`, it is the
// refusal the contract expects (as for a read). Otherwise it is reported and dropped (gating):
// it took effect on a request the replay does not have, so that request id's later events, its
// allocation included (an event emitted before its request_allocate), are not replayed (one
// root cause, one code).
uint64_t Reported(TraceChecker& c);
void RefusalNamesNoResult(TraceChecker& c, const Event& e, uint64_t reported);

[[gnu::cold]] void UnknownHandle(TraceChecker& c, const Event& e) {
  if (KeyEquals(e.outcome, "rejected")) {
    // The refusal conforms (there is no such request); as any expected refusal of a
    // request-level transition it changed no snapshot and names no result (probe 26: a result
    // claim passed here).
    // Its expected base is judged as on a request that exists (CheckRefusedBaseReached): a
    // request never created has reached no snapshot, so any base is one it has not reached
    // (probe 27: any base passed here, while a refused read naming one did not). append_start
    // is not judged: its base is required, so a refusal of it must name one.
    const std::string_view t = e.event_type;
    if (t == "truncate" || t == "cancel_request" || t == "finish" || t == "release" ||
        t == "fork") {
      // (Not a request whose tombstone the window may have forgotten: probe 32, it was judged
      // as never created after 4,096 other releases.)
      if (e.base_snapshot && !c.MayBeForgotten(*e.request_id))
        c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/base_snapshot",
                 std::string(t) + " names base snapshot " + U(*e.base_snapshot) + "; request " +
                     base::QuoteClipped(*e.request_id) +
                     " was never created, so it has reached no snapshot (a refused operation "
                     "may name a stale base, not one the request never had)");
      RefusalNamesNoResult(c, e, Reported(c));
    }
    return;
  }
  c.Report(ErrorCode::LIFECYCLE_UNKNOWN_HANDLE, c.LinePtr() + "/request_id",
           std::string(e.event_type) + " names request " + base::QuoteClipped(*e.request_id) +
               ", which no earlier request_allocate or fork created (its later events, "
               "allocation included, are not replayed)");
  c.DropEvent(e);
}

// The live snapshot of the event's request, or nullopt after reporting why not.
std::optional<Snapshot> Current(TraceChecker& c, const Event& e) {
  const lifecycle::HandleRecord* h = c.FindHandle(*e.request_id);
  if (!h) {
    UnknownHandle(c, e);
    return std::nullopt;
  }
  return h->current;
}

// Current() without the copy: the live snapshot, valid until the next KvObject mutation (use
// Current() when the pre-mutation state is needed after the operation).
const Snapshot* CurrentRef(TraceChecker& c, const Event& e) {
  const lifecycle::HandleRecord* h = c.FindHandle(*e.request_id);
  if (!h) {
    UnknownHandle(c, e);
    return nullptr;
  }
  return &h->current;
}

// The CAS base an event's base_snapshot (a version) denotes on `s`; nullopt when absent.
std::optional<BaseRef> Expected(const Event& e, const Snapshot& s) {
  if (!e.base_snapshot) return std::nullopt;
  return TraceChecker::BaseForVersion(s, *e.base_snapshot);
}

// `s` with the leading `from` of its message (the lifecycle operation's name) replaced by `to`
// (the event's name for it), so that a message names the event the trace holds.
Status Renamed(Status s, std::string_view from, const std::string& to) {
  if (s.ok() || !s.message().starts_with(from)) return s;
  return Status(s.code(), to + s.message().substr(from.size()), s.error());
}

// A refused operation may name a stale base (the reason it was refused), but not a snapshot
// the handle has not reached: no caller can have read it. (A successful operation with such a
// base is refused by the lifecycle object itself.) The event is still replayed.
void CheckRefusedBaseReached(TraceChecker& c, const Event& e, const Snapshot& s) {
  if (KeyEquals(e.outcome, "rejected") && e.base_snapshot && *e.base_snapshot > s.version)
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/base_snapshot",
             std::string(e.event_type) + " names base snapshot " + U(*e.base_snapshot) +
                 "; request " + base::QuoteClipped(*e.request_id) + " has reached only snapshot " +
                 U(s.version) + " (a refused operation may name a stale base, not a later one)");
}

// The refusals a wrong operation label explains: the named operation's own interval, layers,
// state or base, which the named request's event need not fit. Not a layer beyond the ABI, a
// cache ABI, or another rule the event breaks whatever its operation (probe 80).
bool ExplainedByTheLabel(ErrorCode code) {
  switch (code) {
    case ErrorCode::LIFECYCLE_LAYER_INTERVAL_MISMATCH:
    case ErrorCode::LIFECYCLE_LAYER_DUPLICATE:
    case ErrorCode::LIFECYCLE_LAYER_INCOMPLETE:
    case ErrorCode::LIFECYCLE_LATE_COMPLETION:
    case ErrorCode::LIFECYCLE_TXN_FINAL:
    case ErrorCode::LIFECYCLE_STALE_BASE:
    case ErrorCode::LIFECYCLE_UNKNOWN_SNAPSHOT:
    case ErrorCode::LIFECYCLE_APPEND_HOLE:
      return true;
    default:
      return false;
  }
}

// An event of an append operation (a stage, publication, failure or cancel_txn) names the
// request whose append_start opened the operation: another known request is
// TRACE_OPERATION_REQUEST_MISMATCH, an unknown one LIFECYCLE_UNKNOWN_HANDLE. The event is still
// replayed (the operation id names the transaction); which of its two labels is wrong is unknown,
// so when the operation refuses it (the operation id was the wrong one: the event was the named
// request's own), a refusal the label explains is the same root cause: not reported again
// (ExplainedByTheLabel), only gated. True when reported.
bool CheckOperationRequest(TraceChecker& c, const Event& e) {
  // The checker's record of an open operation (memoized across its events) names its request;
  // a published one is found through its transaction.
  const TraceChecker::Op* op = c.FindOp(*e.operation_id);
  if (op && SameBytes(op->request_id, *e.request_id)) return false;
  const base::IdString* owner_of = c.OperationOwner(*e.operation_id);
  if (!owner_of || SameBytes(*owner_of, *e.request_id)) return false;
  const std::string owner = owner_of->str();
  if (!c.FindHandle(*e.request_id))
    c.Report(ErrorCode::LIFECYCLE_UNKNOWN_HANDLE, c.LinePtr() + "/request_id",
             std::string(e.event_type) + " names request " + base::QuoteClipped(*e.request_id) +
                 ", which was never allocated or forked; operation " +
                 base::QuoteClipped(*e.operation_id) + " belongs to " + base::QuoteClipped(owner));
  else
    c.Report(ErrorCode::TRACE_OPERATION_REQUEST_MISMATCH, c.LinePtr() + "/request_id",
             std::string(e.event_type) + " names request " + base::QuoteClipped(*e.request_id) +
                 "; operation " + base::QuoteClipped(*e.operation_id) + " was opened by " +
                 base::QuoteClipped(owner));
  return true;
}

// The base an event of an append operation names (a stage, a publication of any outcome, a
// failure, a cancel_txn) must be the one its append_start read: the event acts on that
// transaction, whatever its outcome. The event is still replayed.
// Once the operation's records are gone (released with its handle), the base is compared with
// the released handle's version: a late completion may name the base it read, never a snapshot
// the handle had not reached.
void CheckOperationBase(TraceChecker& c, const Event& e) {
  if (!e.base_snapshot) return;
  if (const std::optional<uint64_t> base = c.OpBaseVersion(*e.operation_id, e.handle_generation)) {
    if (*e.base_snapshot != *base)
      c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/base_snapshot",
               std::string(e.event_type) + " names base snapshot " + U(*e.base_snapshot) +
                   "; its append_start read snapshot " + U(*base));
    return;
  }
  if (!e.request_id) return;
  const lifecycle::HandleRecord* h = c.FindHandle(*e.request_id);
  if (!h) return;
  // A released handle's version is its release's result, which no append_start read.
  const Snapshot& s = h->current;
  const bool released = s.phase == Phase::kReleased;
  // An earlier incarnation's late completion (a recycled id): its versions are not this one's.
  // (Release fences the handle generation: a released record carries the next one.)
  if (e.handle_generation && *e.handle_generation != s.incarnation &&
      !(released && *e.handle_generation + 1 == s.incarnation))
    return;
  // A live incarnation keeps the transaction record of every operation it opened: an operation
  // it does not know is one it never opened (LIFECYCLE_TXN_UNKNOWN, one code), not a late
  // completion (probe 22: a failure record of a forgotten earlier incarnation's operation,
  // labelled with the re-allocated id's generation, also raised this code).
  const lifecycle::AppendTxn* t = c.kv().FindTxn(*e.operation_id);
  if (!released && !t) return;
  // A transaction of an earlier incarnation than the handle's (kept by the receipt window),
  // labelled with this incarnation's generation: its versions are not this one's either (probe
  // 29: a refused publication of such an operation naming the base it read was compared with the
  // re-allocated handle's versions and failed, while a wrong base passed).
  if (t && t->incarnation != (released ? s.incarnation - 1 : s.incarnation)) return;
  const uint64_t last_readable = released && s.version > 0 ? s.version - 1 : s.version;
  if (*e.base_snapshot > last_readable)
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/base_snapshot",
             std::string(e.event_type) + " names base snapshot " + U(*e.base_snapshot) +
                 "; request " + base::QuoteClipped(*e.request_id) + " " +
                 (released ? "was released at snapshot " + U(s.version) + ", after snapshot " +
                                 U(last_readable)
                           : "has reached only snapshot " + U(s.version)) +
                 " (its operation's records are gone; a late completion names the base its "
                 "append_start read)");
}

// After a successful mutation: result_snapshot and committed_length claims must match.
void CheckResult(TraceChecker& c, const Event& e, const Snapshot& after,
                 std::optional<uint64_t> claimed_length, bool frontier_claim = false) {
  if (e.result_snapshot && *e.result_snapshot != after.version)
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/result_snapshot",
             std::string(e.event_type) + " reports result snapshot " + U(*e.result_snapshot) +
                 "; the replayed snapshot version is " + U(after.version));
  if (claimed_length && *claimed_length != after.committed_length) {
    bool over = frontier_claim && *claimed_length > after.committed_length;
    c.Report(over ? ErrorCode::FRONTIER_CACHE_OVERCOMMIT : ErrorCode::TRACE_SNAPSHOT_MISMATCH,
             c.LinePtr() + "/payload/committed_length",
             std::string(e.event_type) + " reports committed length " + U(*claimed_length) +
                 "; the replayed all-layer committed length is " + U(after.committed_length) +
                 (over ? " (no cache-producing call processed the extra token)" : ""));
  }
}

void NoResultAllowed(TraceChecker& c, const Event& e) {
  if (e.result_snapshot)
    c.Report(ErrorCode::TRACE_OUTCOME_INVALID, c.LinePtr() + "/result_snapshot",
             std::string(e.event_type) + " carries result snapshot " + U(*e.result_snapshot) +
                 "; an event with outcome " + base::QuoteClipped(e.outcome) +
                 " leaves its base snapshot visible and names no result");
}

// reorder and the allocator/residency observations name no snapshot (trace-format.md, "What to
// write in base_snapshot / result_snapshot": null and null): a claim on them is checked like any
// other and has no value that is right (since 2026-12-04, probe 23: any number passed). The event
// is still replayed.
void NoSnapshotClaims(TraceChecker& c, const Event& e) {
  if (!e.base_snapshot && !e.result_snapshot) return;
  const bool base = e.base_snapshot.has_value();
  c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH,
           c.LinePtr() + (base ? "/base_snapshot" : "/result_snapshot"),
           std::string(e.event_type) + " claims " + (base ? "base" : "result") + " snapshot " +
               U(base ? *e.base_snapshot : *e.result_snapshot) + "; it " +
               (e.event_type == "reorder" ? "names no request's snapshot"
                                          : "observes another plane and names no snapshot") +
               " (base_snapshot and result_snapshot must be null or absent)");
}

// Violations recorded so far (kept and omitted): compared around Apply to tell a refusal the
// contract expects (nothing reported) from one it does not.
uint64_t Reported(TraceChecker& c) { return c.violations().size() + c.omitted_violations(); }

// A refusal the contract expects changes no snapshot: a result_snapshot on it is
// TRACE_OUTCOME_INVALID, as on a refused publication (since 2026-12-04, probe 23: a refused
// release or truncate claiming any result passed). `reported` is Reported(c) before the
// operation was tried; a refusal that raised a code is not judged again.
void RefusalNamesNoResult(TraceChecker& c, const Event& e, uint64_t reported) {
  if (KeyEquals(e.outcome, "rejected") && e.result_snapshot && Reported(c) == reported)
    c.Report(ErrorCode::TRACE_OUTCOME_INVALID, c.LinePtr() + "/result_snapshot",
             std::string(e.event_type) +
                 " was refused (outcome \"rejected\") yet claims result "
                 "snapshot " +
                 U(*e.result_snapshot) +
                 "; a refused operation changes no snapshot and names no result");
}

// Gating: a refused request-level transition (truncate, cancel_request, finish, release) leaves
// the request in a state the runtime did not report, so its later events are not replayed.
void RefuseRequest(TraceChecker& c, const Event& e) {
  if (!KeyEquals(e.outcome, "rejected")) c.Poison("request:" + std::string(*e.request_id));
}

void OnAllocate(TraceChecker& c, const Event& e, ObjReader& p) {
  auto prompt = p.Uint("prompt_length");
  auto lineage = p.OptStr("lineage_id");
  if (!prompt || !p.clean()) return;
  if (e.result_snapshot && *e.result_snapshot != 0)
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/result_snapshot",
             "request_allocate establishes snapshot 0, not " + U(*e.result_snapshot));
  bool ok = c.Apply(e, [&](KvObject& kv) {
    return kv.Allocate(*e.request_id, lineage ? std::string_view(*lineage) : *e.request_id, *e.handle_generation)
        .status();
  });
  if (ok)
    c.NewRequest(std::string(*e.request_id), *prompt, *e.handle_generation);
  else if (!KeyEquals(e.outcome, "rejected"))
    c.Poison("request:" + std::string(*e.request_id));
}

std::string_view PurposeName(frontier::AppendPurpose p) {
  switch (p) {
    case frontier::AppendPurpose::kDecode:
      return "decode";
    case frontier::AppendPurpose::kRepair:
      return "repair";
    case frontier::AppendPurpose::kVerify:
      return "verify";
    case frontier::AppendPurpose::kPrefill:
      break;
  }
  return "prefill";
}

frontier::AppendPurpose PurposeOf(std::string_view s) {
  if (s == "decode") return frontier::AppendPurpose::kDecode;
  if (s == "repair") return frontier::AppendPurpose::kRepair;
  if (s == "verify") return frontier::AppendPurpose::kVerify;
  return frontier::AppendPurpose::kPrefill;
}

// The decoded payload of append_start (views into the event's JSON or the general reader's
// strings; valid during the handler).
struct AppendStartArgs {
  std::optional<std::string_view> key, abi;
  std::pair<uint64_t, uint64_t> interval, pos;
  uint64_t mask = 0;
  std::string_view stage, purpose;
  std::optional<uint64_t> input, accepted, reused, pending;
  const std::vector<uint64_t>* drafts = nullptr;
};

// A wrong byte claim of `request`: true when it is the request's first (the caller reports it),
// false after that (one root cause, one code; Request::byte_claims_followed). A request the
// checker does not know has each reported.
bool FirstWrongByteClaim(TraceChecker& c, std::string_view request) {
  TraceChecker::Request* req = c.FindRequest(request);
  if (!req) return true;
  const bool followed = req->byte_claims_followed;
  req->byte_claims_followed = false;
  return followed;
}

// Replays append_start; `a` is null when the payload was unusable (already reported).
void ApplyAppendStart(TraceChecker& c, const Event& e, const AppendStartArgs* a) {
  NoSnapshotProduced(c, e);
  if (!e.base_snapshot) {
    c.Report(ErrorCode::INPUT_FIELD_MISSING, c.LinePtr() + "/base_snapshot",
             "append_start names the base snapshot it read");
    return c.DropEvent(e);  // the transaction it opened is unknown: its later events are gated
  }
  if (!a) {
    c.PoisonOp(*e.operation_id);
    return;
  }
  if (a->purpose == "verify" && (!a->drafts || !a->accepted)) {
    // (Before 2026-12-03 a missing accepted_count was read as 0 accepted drafts.)
    c.Report(ErrorCode::INPUT_FIELD_MISSING,
             c.LinePtr() + "/payload/" + (a->drafts ? "accepted_count" : "draft_tokens"),
             "a verify append states the drafts it verifies (draft_tokens) and how many it "
             "accepts (accepted_count)");
    return c.DropEvent(e);
  }
  // A refusal the contract expects (reported `rejected`: of an unknown request, one the output
  // frontier or the lifecycle object refuses) opens nothing and gates nothing: the operation
  // stays unknown, so its later events are judged as events of an operation never opened, and
  // a later start of its id is a first start (since 2026-12-04: such a refusal gated its
  // operation, one poisoned id per refusal without a violation, and the gate hid the stages and
  // publication of a later start of the id; test
  // TraceCheckerTest.RegressionRefusedAppendStartsGateNothing). Any other failure below reports
  // and drops the event (DropEvent gates the operation).
  const Snapshot* cur = CurrentRef(c, e);
  if (!cur) return;
  CheckRefusedBaseReached(c, e, *cur);
  // Views of the event (valid for the handler): BeginAppend copies what its record keeps.
  lifecycle::BeginAppendView r;
  r.txn_id = *e.operation_id;
  r.idempotency_key = a->key ? *a->key : *e.operation_id;
  r.handle_id = *e.request_id;
  r.cache_abi = a->abi ? *a->abi : std::string_view(c.kv().abi().id);
  r.interval = {a->interval.first, a->interval.second - a->interval.first};
  r.cache_position_start = a->pos.first;
  r.cache_position_count = a->pos.second - a->pos.first;
  r.mask_key_length = a->mask;
  r.position_stage = a->stage;
  r.repair = a->purpose == "repair";
  // A retry re-sends the original base: reuse it so the fingerprint compares like for like.
  const lifecycle::AppendTxn* prior = c.kv().FindTxn(r.txn_id);
  const std::optional<uint64_t> prior_base =
      prior ? c.OpBaseVersion(r.txn_id, e.handle_generation) : std::nullopt;
  if (prior && prior_base && *prior_base == *e.base_snapshot)
    r.base = prior->request.base;
  else
    r.base = TraceChecker::BaseForVersion(*cur, *e.base_snapshot);
  frontier::AppendCall call;
  call.purpose = PurposeOf(a->purpose);
  call.rows = r.interval.count;
  call.input_token = a->input;
  if (a->drafts) call.draft_tokens = *a->drafts;
  call.accepted = a->accepted.value_or(0);
  call.reused_draft_index = a->reused;
  const bool retry = prior != nullptr;
  if (!retry && KeyEquals(e.outcome, "replayed")) {
    // Bounded memory: a released request's receipts are kept for a window of releases
    // (CheckerOptions::receipt_window), so after it the checker cannot tell the two apart.
    const bool released = cur->phase == lifecycle::Phase::kReleased;
    c.Report(
        ErrorCode::TRACE_OUTCOME_INVALID, c.LinePtr() + "/outcome",
        "append_start reports a replayed receipt, but operation " +
            base::QuoteClipped(*e.operation_id) + " was never started (only a retry replays)" +
            (released ? "; or it is an append of request " + base::QuoteClipped(*e.request_id) +
                            ", released more than " + U(c.options().receipt_window) +
                            " releases ago, whose receipts are no longer kept "
                            "(docs/trace-format.md \"Memory\")"
                      : std::string()));
    return c.DropEvent(e);
  }
  TraceChecker::Request* req = c.FindRequest(*e.request_id);
  // A retry stating another token than its original's: judged once the lifecycle object has
  // admitted the retry (a re-sent id with another fingerprint is a conflict, one code; probe 68:
  // an id reused for the next decode step also raised FRONTIER_TOKEN_MISMATCH). Holds the
  // original's token (none: nullopt inside).
  std::optional<std::optional<uint64_t>> token_mismatch;
  if (retry && req) {
    // A retry re-sends the same call. What the original was is known for an operation still
    // open and for the request's latest publication (the M5.1 0x01 fingerprint covers neither
    // the purpose nor the token):
    // - its purpose is the original's (a decode re-stated as a verification would otherwise
    //   escape the frontier);
    // - a token it claims is the one the original processed; not once a frontier breach of
    //   the request has been reported (one code);
    // - drafts, an accepted count or a reused draft row it states are the original's (since
    //   2026-12-03: before, a verification retried with other drafts or another accepted count
    //   passed, and the original's were kept).
    // (Another request's operation is not this request's original: the lifecycle object's
    // fingerprint conflict names the handle and interval that differ; probe 29: the message
    // named the purpose.)
    const TraceChecker::Op* op = c.FindOp(r.txn_id);
    if (op && !SameBytes(op->request_id, *e.request_id)) op = nullptr;
    const frontier::AppendCall* orig = op ? &op->call
                                       : req->last_published_op == r.txn_id
                                           ? &req->last_published_call
                                           : nullptr;
    if (orig) {
      auto conflict = [&](const char* field, const std::string& what) {
        c.Report(ErrorCode::LIFECYCLE_RETRY_CONFLICT, c.LinePtr() + "/payload/" + field,
                 "the retry of operation " + base::QuoteClipped(r.txn_id) + " " + what +
                     " (a retry re-sends the same call)");
        c.DropEvent(e);
      };
      auto list = [](const std::vector<uint64_t>& v) { return base::ClippedList(v, ","); };
      auto index = [](const std::optional<uint64_t>& i) {
        return i ? "row " + U(*i) : std::string("none");
      };
      if (orig->purpose != call.purpose)
        return conflict("purpose", "is a " + std::string(a->purpose) + "; the original was a " +
                                       std::string(PurposeName(orig->purpose)));
      if (a->drafts && *a->drafts != orig->draft_tokens)
        return conflict("draft_tokens", "verifies drafts " + list(*a->drafts) +
                                            "; the original verified " + list(orig->draft_tokens));
      if (a->accepted && *a->accepted != orig->accepted)
        return conflict(
            "accepted_count",
            "accepts " + U(*a->accepted) + " drafts; the original accepted " + U(orig->accepted));
      if (a->reused && a->reused != orig->reused_draft_index)
        return conflict("reused_draft_index", "reuses draft row " + U(*a->reused) +
                                                  "; the original reused " +
                                                  index(orig->reused_draft_index));
      const bool followed = req->frontier.tracked() ||
                            (req->frontier_followed_at_release && cur->phase == Phase::kReleased);
      if (a->input && followed && orig->input_token != a->input) token_mismatch = orig->input_token;
    }
  }
  // A refusal the output frontier requires (a token that is not the frontier token, a decode
  // before the prompt is complete, nothing to repair, more rows than the accepted drafts) is
  // the contract's refusal too: nothing is opened or reported, as for a refusal of the
  // lifecycle object (before 2026-12-03 only the lifecycle object was asked, and such a
  // refusal raised TRACE_OUTCOME_INVALID).
  // A request whose frontier is no longer followed (a breach was reported) cannot have such a
  // refusal judged: it conforms, and the request is not gated (since 2026-12-04, probe 16: it was
  // TRACE_OUTCOME_INVALID, "the contract admits it", a second code for the breach, and the gate
  // hid the request's later violations).
  if (!retry && KeyEquals(e.outcome, "rejected") && req &&
      (!req->frontier.tracked() || !req->frontier.CheckAppend(call).ok()))
    return;
  if (!c.Apply(e, [&](KvObject& kv) { return kv.BeginAppend(r).status(); }))
    return;  // refused as reported, or reported and dropped by Apply
  if (token_mismatch)
    c.Report(ErrorCode::FRONTIER_TOKEN_MISMATCH, c.LinePtr() + "/payload/input_token",
             "the retry of operation " + base::QuoteClipped(r.txn_id) + " processes token " +
                 U(*a->input) + "; the original " +
                 (*token_mismatch ? "processed token " + U(**token_mismatch)
                                  : std::string("processed none")));
  // The output frontier judges an append the lifecycle object admitted (one refused by the
  // lifecycle, e.g. for an interval its positions do not match, raised its code above and is
  // gated: one field wrong, one code). A breach is reported once: the request's frontier is no
  // longer followed; the transaction stays open in the lifecycle object.
  if (!retry && !KeyEquals(e.outcome, "rejected") && req) {
    Status fs = req->frontier.CheckAppend(call);
    if (!fs.ok()) {
      c.ReportStatus(fs, c.LinePtr() + "/payload");
      req->frontier.Untrack();
    }
  }
  if (a->pending) {  // a retry's claim too (since 2026-12-03)
    // The staged payload of [T, T+delta) is delta * B_token bytes across all layers (0x01).
    // A wrong claim is reported once per request and gates nothing (Request::
    // byte_claims_followed).
    auto want = CheckedMul(r.interval.count, c.bytes_per_token());
    if ((!want || *a->pending != *want) && FirstWrongByteClaim(c, *e.request_id)) {
      if (!want)  // no uint64 holds d * B_token, so no claim matches it (probe 28)
        c.Report(ErrorCode::INPUT_ARITHMETIC_OVERFLOW,
                 c.LinePtr() + "/payload/pending_payload_bytes",
                 "pending payload " + U(*a->pending) + " bytes; " + U(r.interval.count) +
                     " rows x " + U(c.bytes_per_token()) + " B/token overflows 64 bits");
      else
        c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/payload/pending_payload_bytes",
                 "pending payload " + U(*a->pending) + " bytes; " + U(r.interval.count) +
                     " rows x " + U(c.bytes_per_token()) + " B/token = " + U(*want) +
                     " (the request's later byte claims are not compared)");
    }
  }
  if (!retry) {
    if (req) req->op_ids.emplace_back(r.txn_id);
    TraceChecker::Op& op = c.NewOp(r.txn_id);
    op.request_id = *e.request_id;
    op.call = std::move(call);
    op.base_version = *e.base_snapshot;
    op.start_line = e.line;
    op.start_event_id = e.event_id;
  }
}

void OnAppendStart(TraceChecker& c, const Event& e, ObjReader& p) {
  auto key = p.OptStr("idempotency_key");
  auto interval = p.Range("interval");
  auto pos = p.Range("cache_position");
  auto mask = p.Uint("mask_key_length");
  auto stage = p.Str("position_stage");
  auto abi = p.OptStr("cache_abi");
  auto purpose = p.Enum("purpose", {"prefill", "decode", "repair", "verify"});
  auto input = p.OptUint("input_token");
  auto drafts = p.UintArray("draft_tokens", true);
  auto accepted = p.OptUint("accepted_count");
  auto reused = p.OptUint("reused_draft_index");
  auto pending = p.OptUint("pending_payload_bytes");
  if (!p.clean() || !interval || !pos || !mask || !stage || !purpose)
    return ApplyAppendStart(c, e, nullptr);
  AppendStartArgs a;
  if (key) a.key = *key;
  if (abi) a.abi = *abi;
  a.interval = *interval;
  a.pos = *pos;
  a.mask = *mask;
  a.stage = *stage;
  a.purpose = *purpose;
  a.input = input;
  a.accepted = accepted;
  a.reused = reused;
  a.pending = pending;
  if (drafts) a.drafts = &*drafts;
  ApplyAppendStart(c, e, &a);
}

struct StageLayerArgs {
  uint64_t layer = 0;
  std::pair<uint64_t, uint64_t> interval;
  std::optional<bool> k, v;
  std::optional<std::string_view> abi;
  std::optional<uint64_t> staged;  // staged_payload_bytes: this layer's K and V bytes
};

void ApplyStageLayer(TraceChecker& c, const Event& e, const StageLayerArgs& a) {
  if (c.IsPoisonedOp(*e.operation_id)) return;
  NoSnapshotProduced(c, e);
  // Mislabelled: the base is compared with an operation the event may not belong to (one code).
  const bool mislabelled = CheckOperationRequest(c, e);
  if (!mislabelled) CheckOperationBase(c, e);
  const lifecycle::Interval interval{a.interval.first, a.interval.second - a.interval.first};
  const bool staged = c.Apply(
      e,
      [&](KvObject& kv) {
        return kv
            .StageLayer(*e.operation_id, static_cast<uint32_t>(a.layer), interval,
                        a.k.value_or(true), a.v.value_or(true), a.abi.value_or(std::string_view()))
            .status();
      },
      nullptr, mislabelled ? ExplainedByTheLabel : nullptr);
  // One layer's staged K and V rows are rows * B_token / L bytes (M5.1 0x01 "B_layer_append":
  // 1 * 1 * 2 * 4 * (2 + 2) = 32 bytes for the worked decode row, B_all_layers_append = 64).
  // Compared as staged * L = rows * B_token (exact, overflow-checked; B_token is a multiple of L,
  // the header's rule); not for a stage of K or V alone (the header's B_token does not split b_K
  // from b_V).
  if (!staged || !a.staged || !a.k.value_or(true) || !a.v.value_or(true)) return;
  const uint64_t layers = c.kv().abi().num_layers;
  const auto claimed = CheckedMul(*a.staged, layers);
  const auto want = CheckedMul(interval.count, c.bytes_per_token());
  if (claimed && want && *claimed == *want) return;
  // A wrong claim is reported once per request and gates nothing (Request::byte_claims_followed):
  // the stage is the replay's. The request is its operation's (a mislabelled stage's own
  // request_id was judged above).
  const TraceChecker::Op* op = c.FindOp(*e.operation_id);
  if (!FirstWrongByteClaim(c, op ? std::string_view(op->request_id) : *e.request_id)) return;
  if (!claimed || !want)
    c.Report(ErrorCode::INPUT_ARITHMETIC_OVERFLOW, c.LinePtr() + "/payload/staged_payload_bytes",
             "staged payload " + U(*a.staged) + " bytes x " + U(layers) + " layers or " +
                 U(interval.count) + " rows x " + U(c.bytes_per_token()) +
                 " B/token overflows 64 bits");
  else
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/payload/staged_payload_bytes",
             "staged payload " + U(*a.staged) + " bytes for layer " + U(a.layer) + "; " +
                 U(interval.count) + " rows x " + U(c.bytes_per_token()) + " B/token / " +
                 U(layers) + " layers = " + U(*want / layers) +
                 " (one layer's K and V rows; the all-layer figure is pending_payload_bytes; the "
                 "request's later byte claims are not compared)");
}

void OnStageLayer(TraceChecker& c, const Event& e, ObjReader& p) {
  auto layer = p.Uint("layer", UINT32_MAX);
  auto interval = p.Range("interval");
  auto k = p.OptBool("k");
  auto v = p.OptBool("v");
  auto abi = p.OptStr("cache_abi");
  auto staged = p.OptUint("staged_payload_bytes");
  if (!p.clean() || !layer || !interval) return;
  StageLayerArgs a;
  a.layer = *layer;
  a.interval = *interval;
  a.k = k;
  a.v = v;
  if (abi) a.abi = *abi;
  a.staged = staged;
  ApplyStageLayer(c, e, a);
}

// Records `line` as the closing record of operation `op_id` (an append_failure, a cancel_txn or a
// refused publication) unless it has one already or the checker keeps no record of it.
void MarkClosed(TraceChecker& c, std::string_view op_id, uint32_t line) {
  if (TraceChecker::Op* op = c.FindOp(op_id); op && op->closed_line == 0) op->closed_line = line;
}

// A failure record (append_failure, cancel_txn) of an operation opened on another
// incarnation of its handle id than the one the event names (an old operation labelled with a
// re-allocated id's generation): the ABA case, TRACE_HANDLE_GENERATION_MISMATCH alone (probes
// 21, 22). Not for the tombstone's generation of an id released and not allocated again, which
// the generation fence admits for a late record. (A refused publication of such an operation is
// the runtime refusing a stale completion, which conforms: TraceCheckerTest.
// RegressionALateCompletionOfAReleasedIncarnationIsStale.) True when reported.
bool RecordOfAnotherIncarnation(TraceChecker& c, const Event& e) {
  const lifecycle::AppendTxn* t = c.kv().FindTxn(*e.operation_id);
  if (!t || !e.handle_generation || t->incarnation == *e.handle_generation ||
      !SameBytes(t->request.handle_id, *e.request_id))
    return false;
  const lifecycle::HandleRecord* h = c.FindHandle(*e.request_id);
  if (h && h->current.phase == Phase::kReleased && h->current.incarnation == *e.handle_generation)
    return false;
  c.Report(ErrorCode::TRACE_HANDLE_GENERATION_MISMATCH, c.LinePtr() + "/handle_generation",
           std::string(e.event_type) + " names handle_generation " + U(*e.handle_generation) +
               "; operation " + base::QuoteClipped(*e.operation_id) +
               " was opened on handle generation " + U(t->incarnation) + " of " +
               base::QuoteClipped(*e.request_id));
  return true;
}

// The claims a publication's event makes (its outcome, base, result snapshot and committed
// length) against the receipt the lifecycle object returned: a first publication's result, or
// the original receipt of a replayed one.
void JudgePublicationClaims(TraceChecker& c, const Event& e, const KvObject::Published& receipt,
                            std::optional<uint64_t> len) {
  // A wrong outcome is reported and the publication replayed as what it was (the lifecycle
  // object has published or replayed it): later events are judged on that (one code).
  if (receipt.replayed != (KeyEquals(e.outcome, "replayed")))
    c.Report(ErrorCode::TRACE_OUTCOME_INVALID, c.LinePtr() + "/outcome",
             receipt.replayed
                 ? "append_publish reports a new publication, but operation " +
                       base::QuoteClipped(*e.operation_id) +
                       " was already published: a retry returns the original receipt and must "
                       "not advance the generation again"
                 : "append_publish reports a replayed receipt for a first publication");
  CheckOperationBase(c, e);
  if (!receipt.replayed) return CheckResult(c, e, receipt.txn->result, len);
  if (e.result_snapshot && *e.result_snapshot != receipt.txn->result.version)
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/result_snapshot",
             "replayed receipt names snapshot " + U(*e.result_snapshot) +
                 "; the original publication created " + U(receipt.txn->result.version));
  // The receipt is the original's: its committed length too (since 2026-12-03).
  else if (len && *len != receipt.txn->result.committed_length)
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/payload/committed_length",
             "replayed receipt reports committed length " + U(*len) +
                 "; the original publication committed " + U(receipt.txn->result.committed_length));
}

void ApplyPublish(TraceChecker& c, const Event& e, std::optional<uint64_t> len) {
  if (c.IsPoisonedOp(*e.operation_id)) return;
  const bool mislabelled = CheckOperationRequest(c, e);
  const bool refused = KeyEquals(e.outcome, "rejected");
  // The receipt of an operation another incarnation published, labelled with this one's
  // generation: the ABA case, as for a failure record (probe 29: a replayed receipt labelled
  // with the re-allocated id's generation passed). (An unpublished one fails on its generation
  // in the lifecycle object, LIFECYCLE_STALE_BASE; refused, either is the runtime refusing a
  // stale completion, which conforms.)
  // (Asked of a replayed receipt only: a first publication, the hot path, pays no lookup; a
  // second one reported `success` raises its own code below.)
  if (KeyEquals(e.outcome, "replayed")) {
    const lifecycle::AppendTxn* t = c.kv().FindTxn(*e.operation_id);
    if (t && t->state == lifecycle::TxnState::kPublished && RecordOfAnotherIncarnation(c, e))
      return;
    // A receipt replayed for a transaction still missing layers: there is no receipt, and the
    // claim is the outcome's, one code (probe 72: the lifecycle's LIFECYCLE_LAYER_INCOMPLETE
    // came first; with every layer staged it was TRACE_OUTCOME_INVALID, below).
    if (t && t->state == lifecycle::TxnState::kOpen) {
      c.Report(ErrorCode::TRACE_OUTCOME_INVALID, c.LinePtr() + "/outcome",
               "append_publish reports a replayed receipt, but operation " +
                   base::QuoteClipped(*e.operation_id) +
                   " was never published (it is OPEN, layers still missing): only a retry "
                   "of a publication replays");
      return c.DropEvent(e);
    }
  }
  // (A published one is checked below, after its outcome; a mislabelled one is not: one code.)
  if (refused && !mislabelled) CheckOperationBase(c, e);
  // A publication the output frontier forbids on the outputs emitted since its start (the
  // re-check below) is refused by the contract too: reported rejected, it conforms and changes
  // nothing (probe 21: it was TRACE_OUTCOME_INVALID, "the contract admits it").
  if (refused) {
    const TraceChecker::Op* op = c.FindOp(*e.operation_id);
    const lifecycle::AppendTxn* t = c.kv().FindTxn(*e.operation_id);
    TraceChecker::Request* req = op ? c.FindRequest(op->request_id) : nullptr;
    // (Only a publication the lifecycle object would admit: its base still the handle's; a lost
    // compare-and-publish is the lifecycle's refusal, judged below.)
    const lifecycle::HandleRecord* h = req ? c.FindHandle(op->request_id) : nullptr;
    if (h && t && t->state == lifecycle::TxnState::kPrepared &&
        t->request.base.generation == h->current.generation && req->frontier.tracked() &&
        !req->frontier.CheckAppend(op->call).ok()) {
      // Like a lost compare-and-publish it closes its transaction and is the append's closing
      // record, and it creates no snapshot (probe 22).
      NoResultAllowed(c, e);
      (void)c.kv().CancelTxn(*e.operation_id);
      MarkClosed(c, *e.operation_id, e.line);
      return;
    }
  }
  KvObject::Published receipt;  // the published transaction, not a copy of its receipt
  bool ok = c.Apply(
      e,
      [&](KvObject& kv) {
        auto r = kv.PublishTxn(*e.operation_id);
        if (r.ok()) receipt = *r;
        return r.status();
      },
      nullptr, mislabelled ? ExplainedByTheLabel : nullptr);
  // A lost compare-and-publish creates no snapshot. (When the contract admits the publication,
  // Apply reported the outcome and gated the operation: its result claim is then not judged.)
  if (refused && !c.IsPoisonedOp(*e.operation_id)) {
    NoResultAllowed(c, e);
    // A refused publication of a final transaction (REJECTED by a lost compare-and-publish, or
    // ABORTED by cancel_request) is the append's one closing record when it has none yet: a
    // failure record after it is a second (since 2026-12-04, probes 18 and 20).
    // (A kept operation whose transaction the receipt window forgot was final: probe 21.)
    const lifecycle::AppendTxn* t = c.kv().FindTxn(*e.operation_id);
    if (!t || t->state == lifecycle::TxnState::kRejected ||
        t->state == lifecycle::TxnState::kAborted) {
      MarkClosed(c, *e.operation_id, e.line);
    } else if (const TraceChecker::Op* op = c.FindOp(*e.operation_id)) {
      // A late completion of a transaction left open at its request's release, refused by the
      // runtime: its closing record (since 2026-12-05, probe 43: open transactions are kept past
      // the release, and one without a record by the end of the trace is unterminated).
      const lifecycle::HandleRecord* h = c.FindHandle(op->request_id);
      if (h && (h->current.phase == Phase::kReleased || h->current.incarnation != t->incarnation))
        MarkClosed(c, *e.operation_id, e.line);
    }
  }
  if (!ok || !receipt.txn) return;
  // Mislabelled: the operation published (or replayed) it; its claims are compared with an
  // operation the event may not belong to (probe 81: a replay of the named operation's receipt
  // raised three codes), so they are not judged (one code).
  if (!mislabelled) JudgePublicationClaims(c, e, receipt, len);
  if (receipt.replayed) return;
  if (TraceChecker::Op* op = c.FindOp(*e.operation_id)) {
    if (TraceChecker::Request* req = c.FindRequest(op->request_id)) {
      // The frontier judged the call at its start; outputs emitted since may have used the
      // logits its first draft needs, or left a token unprocessed its rows do not cover: it is
      // judged again on the frontier it publishes onto (since 2026-12-04, probe 18: a
      // verification published after the correction of the previous one was emitted passed, its
      // draft row taking the correction's place).
      if (Status fs = req->frontier.CheckAppend(op->call); !fs.ok()) {
        c.ReportStatus(Status(fs.code(),
                              "at its publication, after the outputs emitted since its start: " +
                                  std::string(fs.message()),
                              fs.error()),
                       c.LinePtr() + "/operation_id");
        req->frontier.Untrack();
      }
      req->frontier.ApplyPublished(op->call);
      req->last_published_op = *e.operation_id;
      req->last_published_call = std::move(op->call);  // the Op is dropped next
    }
    // A retry still finds its base through OpBaseVersion (from the published transaction).
    c.DropPublishedOp(*e.operation_id);
  }
}

void OnPublish(TraceChecker& c, const Event& e, ObjReader& p) {
  auto len = p.OptUint("committed_length");
  if (!p.clean()) return;
  ApplyPublish(c, e, len);
}

void OnFailure(TraceChecker& c, const Event& e, ObjReader& p) {
  p.OptStr("reason");
  if (!p.clean() || c.IsPoisonedOp(*e.operation_id)) return;
  if (RecordOfAnotherIncarnation(c, e)) return;
  NoResultAllowed(c, e);
  const bool mislabelled = CheckOperationRequest(c, e);
  if (!mislabelled) CheckOperationBase(c, e);
  TraceChecker::Op* op = c.FindOp(*e.operation_id);
  if (op && op->closed_line != 0) {
    // M5.1 0x07: the audit validator "pairs starts with exactly one publish or failure"; a
    // second failure record terminates nothing. Reported refused, it conforms (since
    // 2026-12-04, probe 16: a second record passed, and a refused one was TRACE_OUTCOME_INVALID).
    if (KeyEquals(e.outcome, "rejected")) return;
    c.Report(ErrorCode::TRACE_OUTCOME_INVALID, c.LinePtr() + "/operation_id",
             std::string(e.event_type) + " of operation " + base::QuoteClipped(*e.operation_id) +
                 ", which line " + U(op->closed_line) +
                 " already closed: an append has exactly one publication or failure record (a "
                 "repeated cancel that changes nothing is reported rejected)");
    return;
  }
  // An aborted operation kept past its request's release whose transaction record the
  // receipt window has forgotten: its first record is accepted as is (probe 20: it was
  // LIFECYCLE_TXN_UNKNOWN after 64 other releases).
  if (op && !c.kv().FindTxn(*e.operation_id)) {
    if (!KeyEquals(e.outcome, "rejected")) MarkClosed(c, *e.operation_id, e.line);
    return;
  }
  // A transaction already final (ABORTED by cancel_request, or REJECTED) has no transition left
  // (M5.1 0x01): a failure record of it changes nothing, so the runtime may refuse it; refused,
  // it is the append's record as a refused publication is (probe 29: it was TRACE_OUTCOME_INVALID,
  // "the contract admits it", also after the request's release).
  if (KeyEquals(e.outcome, "rejected"))
    if (const lifecycle::AppendTxn* t = c.kv().FindTxn(*e.operation_id);
        t &&
        (t->state == lifecycle::TxnState::kAborted || t->state == lifecycle::TxnState::kRejected)) {
      MarkClosed(c, *e.operation_id, e.line);
      return;
    }
  const bool closed = c.Apply(
      e,
      [&](KvObject& kv) {
        // The library names its call; the message names the trace's event (cancel_txn or
        // append_failure, which both close the transaction).
        return Renamed(kv.CancelTxn(*e.operation_id),
                       "cancel_txn:", std::string(e.event_type) + ":");
      },
      nullptr, mislabelled ? ExplainedByTheLabel : nullptr);
  if (closed)
    MarkClosed(c, *e.operation_id, e.line);  // (Apply may have erased records: looked up again)
}

void ApplyOutput(TraceChecker& c, const Event& e, uint64_t index, uint64_t token,
                 bool from_repair) {
  NoSnapshotProduced(c, e);
  const Snapshot* cur = CurrentRef(c, e);
  if (!cur) return;
  if (!cur->readable()) {
    c.Report(ErrorCode::LIFECYCLE_HANDLE_RELEASED, c.LinePtr() + "/request_id",
             "output_emit on released request " + base::QuoteClipped(*e.request_id));
    return;
  }

  // Gating (one root cause, one code):
  // - the frontier judges the output first; an output it refuses (e.g. one emitted before the
  //   publication that produced its logits) raises the frontier's code alone, not also one
  //   for its snapshot claim;
  // - an output whose snapshot claim alone is wrong leaves the runtime's frontier unknown: the
  //   request's frontier checks stop there, as after a frontier breach;
  // - either way, a claim naming a snapshot the handle has not reached shows a publication the
  //   replay lacks (lost, or emitted later): the request is gated.
  TraceChecker::Request* req = c.FindRequest(*e.request_id);
  const Status s = req ? req->frontier.Emit(index, token, from_repair) : Status();
  if (!s.ok())
    c.ReportStatus(s, c.LinePtr() + "/payload");
  else if ((cur->phase == Phase::kFinished || cur->phase == Phase::kCancelled) && req &&
           req->frontier.tracked())
    // Stop is final (M5.1 0x05 FINISHED_RETAINED), and a cancelled request does no new work
    // (since 2026-12-03: before, an output after a finish that left O = G_in passed). An output
    // the frontier refuses there (after a repair: its logits are discarded) raised its code;
    // after a finish whose output count the trace did not match (the frontier is no longer
    // followed: this output may be the one it counted), outputs are not judged.
    c.Report(ErrorCode::LIFECYCLE_HANDLE_TERMINAL, c.LinePtr() + "/request_id",
             "output_emit on " + std::string(PhaseName(cur->phase)) + " request " +
                 base::QuoteClipped(*e.request_id) + ": its outputs ended at the " +
                 (cur->phase == Phase::kFinished ? "finish (stop is final)" : "cancel"));
  else if (e.base_snapshot && *e.base_snapshot != cur->version)
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/base_snapshot",
             "output selected from snapshot " + U(*e.base_snapshot) + "; the live snapshot is " +
                 U(cur->version));
  else
    return;
  if (req) req->frontier.Untrack();  // one breach raises one code (as for appends)
  // A claim naming an unreached snapshot always raised one of the two codes above.
  if (e.base_snapshot && *e.base_snapshot > cur->version) c.DropEvent(e);
}

void OnOutput(TraceChecker& c, const Event& e, ObjReader& p) {
  auto index = p.Uint("output_index");
  auto token = p.Uint("token");
  auto from = p.Enum("from", {"target_logits", "repair_logits"}, true);
  if (!p.clean() || !index || !token) return;
  ApplyOutput(c, e, *index, *token, from.value_or("") == "repair_logits");
}

// Why a read that observed `seen` rows of a snapshot of `live.committed_length` rows is wrong, as
// far as the replay knows (since 2026-12-04: before, every mismatch said "(pending rows are not
// readable)", after a truncate or a fork parent's growth too: probe 9).
[[gnu::cold]] std::string ReadMismatchReason(TraceChecker& c, std::string_view request,
                                             uint64_t seen, const Snapshot& live) {
  const uint64_t k = live.committed_length;
  if (seen < k)
    return " (readers resolve the whole all-layer snapshot: rows [" + U(seen) + ", " + U(k) +
           ") are committed)";
  const lifecycle::HandleRecord* h = c.FindHandle(request);
  if (h)
    for (const base::IdString& id : h->open_txns)
      if (const lifecycle::AppendTxn* t = c.kv().FindTxn(id))
        if (t->request.interval.start == k && seen - k <= t->request.interval.count)
          return " (rows [" + U(k) + ", " + U(seen) + ") are pending in operation " +
                 base::QuoteClipped(id) + ", not published: pending rows are not readable)";
  if (const TraceChecker::Request* req = c.FindRequest(request); req && req->truncated_from >= seen)
    return " (a truncate shortened the snapshot from " + U(req->truncated_from) + " to " +
           U(req->truncated_to) + " rows: the truncated suffix is unreachable)";
  if (h && !h->parent_id.empty())
    if (const lifecycle::HandleRecord* parent = c.FindHandle(h->parent_id);
        parent && parent->current.committed_length >= seen)
      return " (the fork parent " + base::QuoteClipped(h->parent_id) + " has " +
             U(parent->current.committed_length) +
             " rows; a child's snapshot is its own, from its prefix, and does not follow the "
             "parent's later appends)";
  return " (no publication committed rows beyond " + U(k) + ")";
}

void OnRead(TraceChecker& c, const Event& e, ObjReader& p) {
  auto len = p.Uint("committed_length");
  // The length the reader saw in each cache-producing layer (optional): every layer at one
  // length, the all-layer snapshot's (M5.1 0x01: "neither legal read can see layer 0 at
  // T_g+Delta and layer L-1 at T_g"; probe 72: a torn read could not be written).
  auto layers = p.UintArray("layer_lengths", true);
  if (!p.clean() || !len) return;
  auto r = c.kv().Read(*e.request_id);
  if (KeyEquals(e.outcome, "rejected")) {
    if (r.ok())
      c.Report(ErrorCode::TRACE_OUTCOME_INVALID, c.LinePtr() + "/outcome",
               "read reported \"rejected\", but request " + base::QuoteClipped(*e.request_id) +
                   " is readable");
    else if (const lifecycle::HandleRecord* h = c.FindHandle(*e.request_id))
      CheckRefusedBaseReached(c, e, h->current);  // as any refusal (probe 23: any base passed)
    else if (e.base_snapshot && !c.MayBeForgotten(*e.request_id))
      // a request never created has reached no snapshot (probe 26); one whose tombstone the
      // window may have forgotten is not judged (probe 32)
      c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/base_snapshot",
               "read names base snapshot " + U(*e.base_snapshot) + "; request " +
                   base::QuoteClipped(*e.request_id) +
                   " was never created, so it has reached no snapshot (a refused read names "
                   "none)");
    return;
  }
  if (!r.ok()) return c.ReportStatus(r.status(), c.LinePtr() + "/request_id");
  if (layers) {
    const uint64_t n = c.kv().abi().num_layers;
    if (layers->size() != n)
      return c.Report(
          ErrorCode::INPUT_VALUE_INVALID, c.LinePtr() + "/payload/layer_lengths",
          "expected one length per cache-producing layer (" + U(n) + "), got " + U(layers->size()));
    for (size_t i = 1; i < layers->size(); ++i)
      if ((*layers)[i] != (*layers)[0]) {
        c.Report(ErrorCode::LIFECYCLE_TORN_READ, c.LinePtr() + "/payload/layer_lengths/" + U(i),
                 "the reader saw layer 0 at length " + U((*layers)[0]) + " and layer " + U(i) +
                     " at " + U((*layers)[i]) +
                     ": a partial publication was visible (a snapshot publishes every layer's "
                     "rows together; readers see S_g or S_(g+1), never a mix)");
        // The runtime's state is not the replay's (gating: one root cause, one code).
        return c.Poison("request:" + std::string(*e.request_id));
      }
    if ((*layers)[0] != *len)
      return c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/payload/layer_lengths",
                      "the layers' common length " + U((*layers)[0]) +
                          " is not the committed_length " + U(*len) + " the read reports");
  }
  if (e.base_snapshot && *e.base_snapshot != r->version) {
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/base_snapshot",
             "read reports snapshot " + U(*e.base_snapshot) + "; readers resolve snapshot " +
                 U(r->version));
    // The length it read is that other snapshot's (not judged as well). A snapshot the handle
    // has not reached shows a publication the replay lacks: the request is gated.
    if (*e.base_snapshot > r->version) c.DropEvent(e);
    return;
  }
  if (*len != r->committed_length) {
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/payload/committed_length",
             "read observed committed length " + U(*len) + "; the all-layer snapshot has " +
                 U(r->committed_length) + ReadMismatchReason(c, *e.request_id, *len, *r));
    // The runtime's committed length is not the replay's (a lost publication, a fork prefix or
    // truncate length misreported): the request's next append would raise a second code, so it
    // is gated (since 2026-12-04, probe 16: LIFECYCLE_APPEND_HOLE followed).
    c.Poison("request:" + std::string(*e.request_id));
  }
}

// A fork that is not replayed creates no children: the requests its payload names are gated.
// A dropped fork whose children cannot all be read gates every request not yet created
// ("request:*": their events do not raise LIFECYCLE_UNKNOWN_HANDLE after the fork's code).
void GateFork(TraceChecker& c, const simdjson::dom::element& payload, bool sure) {
  simdjson::dom::array children;
  if (payload.at_key("children").get(children)) {
    if (sure) c.Poison("request:*");
    return;
  }
  for (simdjson::dom::element child : children) {
    std::string_view id;
    if (!child.at_key("request_id").get(id))
      c.Poison("request:" + std::string(id));
    else if (sure)
      c.Poison("request:*");
  }
}

// One entry of a fork's `children`.
struct ForkChild {
  std::string id;
  uint64_t generation = 0;
  std::optional<uint64_t> prompt_length;  // a prompt of its own (a prefix-cache hit)
};

// A fork that is not replayed (its parent does not exist here, or its payload is refused)
// creates no children: those the runtime created are gated.
void DropFork(TraceChecker& c, const Event& e, const std::vector<ForkChild>& kids) {
  if (!KeyEquals(e.outcome, "rejected"))
    for (const auto& k : kids)
      if (!c.kv().Find(k.id)) c.Poison("request:" + k.id);
}

void OnFork(TraceChecker& c, const Event& e, ObjReader& p) {
  auto prefix = p.Uint("prefix_length");
  std::vector<ForkChild> kids;
  p.ObjectArray("children", [&](ObjReader& k) {
    auto id = k.Str("request_id");
    auto gen = k.OptUint("handle_generation");
    auto prompt = k.OptUint("prompt_length");
    if (id) kids.push_back({*id, gen.value_or(0), prompt});
  });
  if (!p.clean() || !prefix) return;
  // A child with a prompt of its own (a prefix-cache hit) shares rows of that prompt only.
  for (size_t i = 0; i < kids.size(); ++i)
    if (kids[i].prompt_length && *kids[i].prompt_length < *prefix) {
      c.Report(ErrorCode::INPUT_VALUE_OUT_OF_RANGE,
               c.LinePtr() + "/payload/children/" + U(i) + "/prompt_length",
               "child \"" + kids[i].id + "\" has a prompt of " + U(*kids[i].prompt_length) +
                   " rows but shares a prefix of " + U(*prefix) +
                   " (a prefix-cache hit shares rows of the child's own prompt: prefix_length <= "
                   "prompt_length)");
      return DropFork(c, e, kids);
    }
  auto cur = Current(c, e);
  if (!cur) return DropFork(c, e, kids);
  // (A child id the object already holds is LIFECYCLE_HANDLE_EXISTS below, whatever generation
  // the event names: one root cause, one code; probe 39: both codes were raised.)
  for (size_t i = 0; i < kids.size(); ++i)
    if (kids[i].generation != 0 && !c.kv().Find(kids[i].id)) {
      c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH,
               c.LinePtr() + "/payload/children/" + U(i) + "/handle_generation",
               "a fork child starts at handle generation 0, not " + U(kids[i].generation));
      // The runtime's child is another incarnation than the replay's: the child's later events
      // (naming that generation) are not judged again (gating: one root cause, one code).
      c.Poison("request:" + kids[i].id);
    }
  // (A refused fork names no result at all: RefusalNamesNoResult below.)
  if (!KeyEquals(e.outcome, "rejected") && e.result_snapshot && *e.result_snapshot != 0)
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/result_snapshot",
             "fork children start at snapshot 0, not " + U(*e.result_snapshot));
  std::vector<std::string> ids;
  for (const auto& k : kids) ids.push_back(k.id);
  CheckRefusedBaseReached(c, e, *cur);
  auto expected = Expected(e, *cur);
  const uint64_t reported = Reported(c);
  const bool names_held_child =
      std::any_of(ids.begin(), ids.end(), [&](const std::string& id) { return c.kv().Find(id); });
  bool ok = c.Apply(
      e, [&](KvObject& kv) { return kv.Fork(*e.request_id, *prefix, ids, expected).status(); },
      &ids);
  if (!ok) {
    // Children the replay did not create are gated. Where the runtime reports the fork took
    // effect, so are those it names that exist here (a tombstone, a live request): the
    // runtime's state of them is its fork's, not the replay's (since 2026-12-03: before, the
    // next append of a child named onto a released id raised LIFECYCLE_HANDLE_RELEASED too).
    // A refusal the contract expects (nothing reported) creates no children and gates nothing:
    // later events naming them are judged as events of requests never created (since
    // 2026-12-04, probe 18: such a refusal gated the ids it named, so a request later
    // allocated under one went unjudged). After one it does not expect (reported), whether the
    // runtime forked is unknown: the children are gated.
    const bool expected_refusal = KeyEquals(e.outcome, "rejected") && Reported(c) == reported;
    if (expected_refusal) return RefusalNamesNoResult(c, e, reported);
    for (const auto& id : ids) c.Poison("request:" + id);
    // A fork naming no children (refused: "fork: no children") created whichever the runtime
    // meant to create: as for children that cannot be read, every request not yet created is
    // gated (probe 23: the child's first event raised LIFECYCLE_UNKNOWN_HANDLE too).
    // So does one reported a success that names a child id already held (refused: "child
    // handle exists"): the runtime cannot have created a request that exists, so the children
    // it did create are unknown (probe 45: the first event of the child the runtime meant
    // raised LIFECYCLE_UNKNOWN_HANDLE after LIFECYCLE_HANDLE_EXISTS).
    if (ids.empty() || (names_held_child && !KeyEquals(e.outcome, "rejected")))
      c.Poison("request:*");
    return;
  }
  TraceChecker::Request* parent = c.FindRequest(*e.request_id);
  if (parent) parent->frontier.ShareOutputs();  // the children share its outputs, not copy them
  for (const ForkChild& k : kids) {
    const std::string& id = k.id;
    TraceChecker::Request& child = c.NewRequest(id, 0, 0);
    if (k.prompt_length) {
      // Its own prompt, the first prefix_length rows of it shared: no outputs, no logits yet.
      child.frontier = frontier::FrontierState(*k.prompt_length, *prefix);
    } else if (parent) {
      // The child's outputs are the parent's up to its prefix (a shorter prefix rolls back).
      child.frontier = parent->frontier;
      child.frontier.Truncate(*prefix);
    } else {
      child.frontier.Untrack();
    }
    // The fork created the child's storage (the exact prefix, at handle generation 0).
    c.IndexUnder(id, e, TraceChecker::EventInfo{"fork", e.content_hash(), *prefix, 0});
  }
}

// Applies one snapshot-returning KvObject operation through the checker (outcome matching
// and violation reporting are Apply's); on success `*after` holds the resulting snapshot.
template <typename Op>
bool ApplySnapshotOp(TraceChecker& c, const Event& e, std::optional<Snapshot>* after, Op op) {
  return c.Apply(e, [&](KvObject& kv) {
    StatusOr<Snapshot> r = op(kv);
    if (r.ok()) *after = *r;
    return r.status();
  });
}

void OnTruncate(TraceChecker& c, const Event& e, ObjReader& p) {
  auto len = p.Uint("new_length");
  if (!p.clean() || !len) return;
  auto cur = Current(c, e);
  if (!cur) return;
  CheckRefusedBaseReached(c, e, *cur);
  auto expected = Expected(e, *cur);
  std::optional<Snapshot> after;
  const uint64_t reported = Reported(c);
  bool ok = ApplySnapshotOp(
      c, e, &after, [&](KvObject& kv) { return kv.Truncate(*e.request_id, *len, expected); });
  if (!ok) {
    RefusalNamesNoResult(c, e, reported);
    return RefuseRequest(c, e);
  }
  if (!after) return;
  CheckResult(c, e, *after, std::nullopt);
  // Outputs roll back with the rows their logits came from (frontier.h, FrontierState::Truncate).
  if (TraceChecker::Request* req = c.FindRequest(*e.request_id)) {
    req->frontier.Truncate(*len);
    if (cur->committed_length > *len) {
      req->truncated_from = cur->committed_length;
      req->truncated_to = *len;
    }
  }
}

void OnReorder(TraceChecker& c, const Event& e, ObjReader& p) {
  std::vector<lifecycle::LiveSequenceRow> before, after;
  auto read_rows = [&](const char* key, std::vector<lifecycle::LiveSequenceRow>* out) {
    p.ObjectArray(key, [&](ObjReader& r) {
      lifecycle::LiveSequenceRow row;
      row.cache_handle = r.Str("request_id").value_or("");
      row.token_state = r.Str("token_state").value_or("");
      row.next_position = r.Uint("next_position").value_or(0);
      row.sampler_state = r.Str("sampler_state").value_or("");
      out->push_back(row);
    });
  };
  read_rows("rows_before", &before);
  auto index = p.UintArray("parent_index", false);
  read_rows("rows_after", &after);
  if (!p.clean() || !index) return;
  for (const auto& row : before)
    if (c.IsGatedRequest(row.cache_handle)) return;
  NoSnapshotClaims(c, e);  // after the gate, as an observation's (probe 26)
  // Nor does its envelope name a request or operation: its rows name the requests it permutes
  // (probe 47: a never-allocated request, a generation and an operation id there passed).
  if (e.request_id || e.handle_generation || e.operation_id) {
    const char* member = e.request_id          ? "/request_id"
                         : e.handle_generation ? "/handle_generation"
                                               : "/operation_id";
    c.Report(ErrorCode::INPUT_VALUE_INVALID, c.LinePtr() + member,
             std::string("a reorder's envelope names no request, generation or operation: its "
                         "rows name the requests it permutes (") +
                 (member + 1) + " must be null or absent)");
  }
  bool position_mismatch = false;
  for (size_t i = 0; i < before.size(); ++i) {
    auto r = c.kv().Read(before[i].cache_handle);
    if (!r.ok())
      return c.ReportStatus(Renamed(r.status(), "read:", "reorder row " + U(i) + ":"),
                            c.LinePtr() + "/payload/rows_before/" + U(i));
    if (r->phase != Phase::kDecodeReady)
      return c.Report(ErrorCode::LIFECYCLE_HANDLE_TERMINAL,
                      c.LinePtr() + "/payload/rows_before/" + U(i),
                      "reorder row " + U(i) + " holds " + std::string(PhaseName(r->phase)) +
                          " handle \"" + before[i].cache_handle +
                          "\": a reorder permutes live sequences, each of which takes its "
                          "next row at next_position; a finished or cancelled request takes "
                          "none (no later append may begin), so it has left the rows being "
                          "reordered");
    if (before[i].next_position == r->committed_length) continue;
    if (!position_mismatch)  // one code for the event
      c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH,
               c.LinePtr() + "/payload/rows_before/" + U(i) + "/next_position",
               "row " + U(i) + " next_position " + U(before[i].next_position) + "; handle \"" +
                   before[i].cache_handle + "\" has committed length " + U(r->committed_length));
    position_mismatch = true;
    // Another position than the replay's shows rows the replay lacks or has beyond the
    // runtime's (a lost publication, a fork prefix or truncate length misreported): that row's
    // request is gated, as for a claim naming a snapshot the handle has not reached (since
    // 2026-12-03, for a position beyond; since 2026-12-04 below too, as for a read: before, its
    // later events raised codes too).
    c.Poison("request:" + before[i].cache_handle);
  }
  if (position_mismatch) return;
  Status s = lifecycle::CheckCoupledReorder(before, *index, after);
  if (!s.ok()) c.ReportStatus(s, c.LinePtr() + "/payload");
}

void OnCancelRequest(TraceChecker& c, const Event& e, ObjReader& p) {
  if (!p.clean()) return;
  const Snapshot* cur = CurrentRef(c, e);
  if (!cur) return;
  CheckRefusedBaseReached(c, e, *cur);
  auto expected = Expected(e, *cur);
  std::optional<Snapshot> after;
  const uint64_t reported = Reported(c);
  bool ok = ApplySnapshotOp(
      c, e, &after, [&](KvObject& kv) { return kv.CancelRequest(*e.request_id, expected); });
  if (!ok) {
    RefusalNamesNoResult(c, e, reported);
    return RefuseRequest(c, e);
  }
  if (after) CheckResult(c, e, *after, std::nullopt);
}

void OnFinish(TraceChecker& c, const Event& e, ObjReader& p) {
  auto len = p.OptUint("committed_length");
  auto outputs = p.OptUint("emitted_outputs");
  if (!p.clean()) return;
  const Snapshot* cur = CurrentRef(c, e);
  if (!cur) return;
  TraceChecker::Request* req = c.FindRequest(*e.request_id);
  // An unfollowed frontier cannot judge a refused finish either (as for appends above).
  if (req && !req->frontier.tracked() && cur->phase == Phase::kDecodeReady &&
      KeyEquals(e.outcome, "rejected")) {
    RefusalNamesNoResult(c, e, Reported(c));
    return CheckRefusedBaseReached(c, e, *cur);
  }
  if (req && req->frontier.tracked() && cur->phase == Phase::kDecodeReady) {
    Status fs = req->frontier.CheckFinish();
    if (!fs.ok() && KeyEquals(e.outcome, "rejected")) {
      // The contract refuses the early finish too: nothing changes, nothing is reported.
      RefusalNamesNoResult(c, e, Reported(c));
      return CheckRefusedBaseReached(c, e, *cur);
    }
    if (!fs.ok()) {
      // As for appends: the lifecycle object judges the finish on its own rules and the
      // request's output frontier is no longer followed, so an early finish raises one code.
      c.ReportStatus(fs, c.LinePtr());
      req->frontier.Untrack();
    }
  }
  CheckRefusedBaseReached(c, e, *cur);
  auto expected = Expected(e, *cur);
  std::optional<Snapshot> after;
  const uint64_t reported = Reported(c);
  bool ok = ApplySnapshotOp(c, e, &after,
                            [&](KvObject& kv) { return kv.Finish(*e.request_id, expected); });
  if (!ok) {
    RefusalNamesNoResult(c, e, reported);
    return RefuseRequest(c, e);
  }
  if (!after) return;
  CheckResult(c, e, *after, len, /*frontier_claim=*/true);
  if (outputs && req && req->frontier.tracked() && *outputs != req->frontier.emitted()) {
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/payload/emitted_outputs",
             "finish reports " + U(*outputs) + " emitted outputs; the trace emitted " +
                 U(req->frontier.emitted()) +
                 (req->frontier.rolled_back()
                      ? " that remain (" + U(req->frontier.rolled_back()) +
                            " more were rolled back by a truncate or a fork's shorter prefix "
                            "with the rows their logits came from)"
                      : std::string()));
    // The runtime's output frontier is not the replay's (an output lost or invented): the
    // request's frontier checks stop here (the repair append that follows is not judged).
    req->frontier.Untrack();
  }
}

void OnRelease(TraceChecker& c, const Event& e, ObjReader& p) {
  auto len = p.OptUint("committed_length");
  auto next_gen = p.OptUint("result_handle_generation");
  if (!p.clean()) return;
  const Snapshot* cur = CurrentRef(c, e);
  if (!cur) return;
  CheckRefusedBaseReached(c, e, *cur);
  auto expected = Expected(e, *cur);
  std::optional<Snapshot> after;
  const uint64_t reported = Reported(c);
  bool ok = ApplySnapshotOp(c, e, &after,
                            [&](KvObject& kv) { return kv.Release(*e.request_id, expected); });
  if (!ok) {
    RefusalNamesNoResult(c, e, reported);
    return RefuseRequest(c, e);
  }
  if (!after) return;
  CheckResult(c, e, *after, len);
  if (next_gen && *next_gen != after->incarnation)
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/payload/result_handle_generation",
             "release fences handle generation " + U(after->incarnation) + ", not " + U(*next_gen));
  c.NoteReleased(std::string(*e.request_id), after->incarnation);
}

// Allocator/residency observations: facts of other planes, tied to a semantic cause.
const TraceChecker::EventInfo* Cause(TraceChecker& c, const Event& e, ObjReader& p) {
  auto cause = p.Str("caused_by_event_id");
  if (!cause) return nullptr;
  if (!e.request_id) {
    c.Report(ErrorCode::INPUT_FIELD_MISSING, c.LinePtr() + "/request_id",
             std::string(e.event_type) + " names the request whose semantic event caused it");
    return nullptr;
  }
  const TraceChecker::EventInfo* info = c.FindCause(*e.request_id, *cause);
  const lifecycle::HandleRecord* h = info ? nullptr : c.FindHandle(*e.request_id);
  if (!info && h &&
      (h->current.phase == Phase::kReleased ||
       (e.handle_generation && *e.handle_generation < h->current.incarnation))) {
    // The request's events before its release are dropped with it (memory follows live
    // handles): the cause may be one of them, so nothing is known missing and the request is
    // not gated (since 2026-12-04: before, "no earlier event of request" although it may have
    // been its append_publish, and the request was gated: probe 9). So for an observation of
    // an earlier incarnation of an id allocated again (probe 16: it gated the live one).
    c.Report(ErrorCode::TRACE_CAUSE_UNKNOWN, c.LinePtr() + "/payload/caused_by_event_id",
             std::string(e.event_type) + " is caused by " + base::QuoteClipped(*cause) +
                 ", which is not among the events request " + base::QuoteClipped(*e.request_id) +
                 " keeps after its release (its finish, cancel_request and the release that "
                 "took effect; the others, refused events included, are dropped at the release): "
                 "an observation after the release names "
                 "the release (blocks the allocator still holds: a delayed free; none: the "
                 "free), or comes before it");
    return nullptr;
  }
  if (!info && c.RecentlyHeldEvent(*cause)) {
    // The trace holds the named event (one of the last events of a source), but not as a cause
    // of this request's observations: another kind of event (append_start, append_failure,
    // output_emit, a read, ...), or another request's. Nothing is known missing, so the request
    // is not gated (probe 41: TRACE_CAUSE_UNKNOWN gated it, hiding a later truncate growth).
    c.Report(ErrorCode::TRACE_CAUSE_WRONG_EVENT, c.LinePtr() + "/payload/caused_by_event_id",
             std::string(e.event_type) + " is caused by " + base::QuoteClipped(*cause) +
                 ", an event of this trace but not one that can cause request " +
                 base::QuoteClipped(*e.request_id) +
                 "'s observations (its request_allocate, append_publish, truncate, "
                 "cancel_request, finish or release, a fork of it, or the fork that created it: "
                 "not a fork that created another child)");
    return nullptr;
  }
  if (!info) {
    c.Report(ErrorCode::TRACE_CAUSE_UNKNOWN, c.LinePtr() + "/payload/caused_by_event_id",
             std::string(e.event_type) + " is caused by " + base::QuoteClipped(*cause) +
                 ", which is no earlier event of request " + base::QuoteClipped(*e.request_id) +
                 " that can cause an observation (request_allocate, append_publish, "
                 "truncate, cancel_request, finish or release, a fork of it or the fork that "
                 "created it; other events are not kept)");
    // Gating: the request had an event the trace does not hold (lost, or emitted later), so the
    // replay's state of it is not the runtime's: its later events are not replayed.
    c.DropEvent(e);
    return nullptr;
  }
  if (e.handle_generation && *e.handle_generation != info->handle_generation) {
    c.Report(ErrorCode::TRACE_HANDLE_GENERATION_MISMATCH, c.LinePtr() + "/handle_generation",
             std::string(e.event_type) + " names handle_generation " +
                 std::to_string(*e.handle_generation) + " but its cause " +
                 base::QuoteClipped(*cause) + " happened at handle_generation " +
                 std::to_string(info->handle_generation));
    return nullptr;
  }
  return info;
}

// The causes after which storage may be observed held: the mutations, the terminal decisions
// that retain the committed rows (finish, cancel_request: M5.1 0x07 "finish: make output
// terminal while ownership may remain; do not claim release or reclamation"), and release (an
// allocator's delayed free: "release: close logical ownership and fence the generation;
// immediate device free is a separate observation"; residency after release is 0, checked by
// OnResidency before this). Since 2026-12-04: before, held storage after finish, cancel_request
// or release was TRACE_CAUSE_WRONG_EVENT ("finish is not a physical free"; probe 9).
constexpr std::string_view kHeldCauses[] = {"request_allocate", "append_publish", "fork",
                                            "truncate",         "finish",         "cancel_request",
                                            "release"};

// `is_free`: the observation is judged as storage returned; `observes_none`: it reports none
// (for the message only: a residency of 0 bytes after a finish is judged as held storage).
bool CheckCauseKind(TraceChecker& c, const Event& e, const TraceChecker::EventInfo& info,
                    bool is_free, bool observes_none) {
  // Held storage follows a cause above; no storage (all zero) follows release, or
  // request_allocate (arrival creates no K/V, M5.1 0x02: an allocator that reserves nothing
  // until prefill reports nothing held). A free after finish or cancel_request is the seed's
  // "physical-free observation caused by finish rather than release".
  // A refused event changed nothing: the handle holds what it held (since 2026-12-04: a refused
  // release was taken as a free; probe 16).
  bool held_cause = info.rejected();
  for (auto m : kHeldCauses) held_cause |= (info.type == m);
  const bool ok = is_free ? info.type == "release" || info.type == "request_allocate" : held_cause;
  if (!ok) {
    std::string why =
        observes_none ? "no storage (all zero) follows release, request_allocate, or a truncate "
                        "or fork that leaves 0 rows"
                      : "held storage follows request_allocate, append_publish, fork, truncate, "
                        "finish, cancel_request or release";
    if (info.type == "finish" || info.type == "cancel_request")
      why += " (" + std::string(info.type) +
             " is not a physical free: the handle keeps its committed rows until release)";
    if (info.rejected())
      why += " (a refused event frees nothing: the handle keeps its " + U(info.committed_length) +
             " committed rows)";
    c.Report(ErrorCode::TRACE_CAUSE_WRONG_EVENT, c.LinePtr() + "/payload/caused_by_event_id",
             std::string(e.event_type) +
                 (observes_none ? " observes no storage" : " observes storage held") + " after " +
                 (info.type.front() == 'a' ? "an " : "a ") + std::string(info.type) + " event; " +
                 why);
    return false;
  }
  return true;
}

// The release free seen by `e`'s source (`freed`: this observation shows no storage after the
// release) is remembered for its request; an observation of storage held from a source that saw
// the free is TRACE_OBSERVATION_INCONSISTENT. Returns false after reporting.
bool CheckNotResurrected(TraceChecker& c, const Event& e, const TraceChecker::EventInfo& info,
                         bool freed, std::string_view pointer) {
  TraceChecker::Request* r = e.request_id ? c.FindRequest(*e.request_id) : nullptr;
  if (!r || (e.handle_generation && *e.handle_generation != r->generation)) return true;
  auto seen = r->freed_by.find(e.source_instance);
  if (freed) {
    if (info.type == "release" && seen == r->freed_by.end())
      r->freed_by.emplace(std::string(e.source_instance), e.line);
    return true;
  }
  if (seen == r->freed_by.end()) return true;
  c.Report(ErrorCode::TRACE_OBSERVATION_INCONSISTENT, c.LinePtr() + std::string(pointer),
           std::string(e.event_type) + " of source " + base::QuoteClipped(e.source_instance) +
               " sees request " + base::QuoteClipped(*e.request_id) +
               " holding storage after the same source observed its release free it at line " +
               U(seen->second) + " (a released handle's storage does not come back)");
  return false;
}

void OnAllocator(TraceChecker& c, const Event& e, ObjReader& p) {
  const TraceChecker::EventInfo* info = Cause(c, e, p);
  auto blocks = p.Uint("blocks");
  auto slots = p.Uint("slots");
  auto used = p.Uint("used_slots");
  auto slot_ids = p.UintArray("slot_ids", true);  // informative: physical slots observed
  if (p.clean()) NoSnapshotClaims(c, e);
  if (!p.clean() || !info || !blocks || !slots || !used) return;
  if (slot_ids && slot_ids->size() > *slots)
    return c.Report(ErrorCode::TRACE_OBSERVATION_INCONSISTENT, c.LinePtr() + "/payload/slot_ids",
                    U(slot_ids->size()) + " slot ids listed for " + U(*slots) + " slots");
  bool is_free = *blocks == 0 && *slots == 0 && *used == 0;
  // A truncate to 0 rows (or a fork of an empty prefix) leaves the handle holding nothing: an
  // allocator that frees its blocks then is judged as storage held, of 0 rows (the residency
  // plane's 0 bytes after it already is).
  const bool holds_no_rows = info->committed_length == 0 &&
                             (info->type == "truncate" || info->type == "fork" || info->rejected());
  if (!CheckCauseKind(c, e, *info, is_free && !holds_no_rows, is_free)) return;
  if (!CheckNotResurrected(c, e, *info, is_free, "/payload/blocks")) return;
  if (*used > *slots)
    c.Report(ErrorCode::TRACE_OBSERVATION_INCONSISTENT, c.LinePtr() + "/payload/used_slots",
             U(*used) + " used slots exceed " + U(*slots) + " allocated slots");
  else if ((*slots == 0) != (*blocks == 0))
    c.Report(ErrorCode::TRACE_OBSERVATION_INCONSISTENT, c.LinePtr() + "/payload/slots",
             U(*slots) + " slots in " + U(*blocks) + " blocks");
  else if (const uint64_t per_block = c.allocator_slots_per_block();
           per_block != 0 && CheckedMul(*blocks, per_block) != std::optional<uint64_t>(*slots))
    c.Report(ErrorCode::TRACE_OBSERVATION_INCONSISTENT, c.LinePtr() + "/payload/slots",
             U(*slots) + " slots in " + U(*blocks) + " blocks; the header's allocator_model has " +
                 U(per_block) + " slots per block");
  else if (c.allocator_used_slots_are_committed_rows() && *used != info->committed_length)
    c.Report(ErrorCode::TRACE_OBSERVATION_INCONSISTENT, c.LinePtr() + "/payload/used_slots",
             U(*used) + " used slots after " + std::string(info->type) + "; the header's " +
                 "allocator_model counts committed rows, and the handle has " +
                 U(info->committed_length));
}

void OnResidency(TraceChecker& c, const Event& e, ObjReader& p) {
  const TraceChecker::EventInfo* info = Cause(c, e, p);
  p.NonEmptyStr("tier");  // a tier names a part of the partition (probe 100: "" passed)
  auto bytes = p.Uint("resident_payload_bytes");
  if (p.clean()) NoSnapshotClaims(c, e);
  if (!p.clean() || !info || !bytes) return;
  // Nothing resident after a finish or cancel_request that retained rows is a free caused by
  // the stop (judged as one: TRACE_CAUSE_WRONG_EVENT), not a byte count; so is nothing resident
  // after a refused event of a handle that holds rows.
  // Under `tiered` one observation is one tier's share: 0 bytes in a tier after a finish is a
  // swap to another tier as much as a free, so it is judged as storage held (probe 41: a swap
  // to host after finish was TRACE_CAUSE_WRONG_EVENT; the allocator plane still judges a free).
  const bool is_free =
      *bytes == 0 &&
      (info->type == "release" ||
       ((info->type == "finish" || info->type == "cancel_request" || info->rejected()) &&
        info->committed_length > 0 && c.residency_is_one_copy()));
  if (info->type == "release" && *bytes != 0) {
    c.Report(ErrorCode::TRACE_OBSERVATION_INCONSISTENT,
             c.LinePtr() + "/payload/resident_payload_bytes",
             U(*bytes) + " payload bytes resident after release; the released handle owns none");
    return;
  }
  if (!CheckCauseKind(c, e, *info, is_free, *bytes == 0)) return;
  if (!CheckNotResurrected(c, e, *info, *bytes == 0 && info->type == "release",
                           "/payload/resident_payload_bytes"))
    return;
  if (info->type == "release") return;
  // Planes are compatible, not equal, without a conversion model (M5.1 0x07): a tiered
  // residency may split the payload over tiers or hold copies of it.
  if (!c.residency_is_one_copy()) return;
  // committed rows and B_token come from the trace: the product is checked, never wrapped.
  std::optional<uint64_t> want = CheckedMul(info->committed_length, c.bytes_per_token());
  if (!want)
    return c.Report(ErrorCode::TRACE_OBSERVATION_INCONSISTENT,
                    c.LinePtr() + "/payload/resident_payload_bytes",
                    U(info->committed_length) + " committed rows x " + U(c.bytes_per_token()) +
                        " B/token exceeds 2^64 - 1 bytes; no residency can match it");
  // Not gated, unlike a read that disagrees: the residency plane is another plane's witness (a
  // runtime whose header misdeclares its residency model would otherwise have every request's
  // semantic events go unjudged), so a misreported length the semantic plane then meets raises
  // its own code there too.
  if (*bytes != *want)
    c.Report(ErrorCode::TRACE_OBSERVATION_INCONSISTENT,
             c.LinePtr() + "/payload/resident_payload_bytes",
             U(*bytes) + " resident payload bytes after " + std::string(info->type) + "; " +
                 U(info->committed_length) + " committed rows x " + U(c.bytes_per_token()) +
                 " B/token = " + U(*want));
}

// ---------------------------------------------------------------- one-pass payload readers
//
// The hot event types (append_start, append_stage_layer, append_publish, output_emit) also have
// a one-pass reader of their payload (EventTypeSpec::fast). It decodes a conforming payload in a
// single walk over its members and returns false, having reported and changed nothing, when any
// member is unknown, repeated, null, mistyped or out of bounds; the checker then runs the
// general handler, whose ObjReader reports exactly what is wrong. Only decoding exists twice:
// both paths replay through the same Apply* function above.

namespace dom = simdjson::dom;

bool FastStr(const dom::element& v, std::string_view* out) {
  if (v.type() != dom::element_type::STRING) return false;
  *out = v.get_string().value_unsafe();
  return true;
}

// [start, end) with start <= end, exactly two unsigned integers. (dom::array::size() is the
// element count the parse stored with the array, exact below 2^24.)
bool FastRange(const dom::element& v, std::pair<uint64_t, uint64_t>* out) {
  uint64_t x0, x1;
  dom::array arr;
  if (v.get_array().get(arr) || arr.size() != 2) return false;
  auto it = arr.begin();
  if (!ElementAsUint(*it, &x0)) return false;
  ++it;
  if (!ElementAsUint(*it, &x1) || x0 > x1) return false;
  *out = {x0, x1};
  return true;
}

// Marks member `bit` as seen; false when it was already (a duplicate key).
bool Once(uint32_t* seen, int bit) {
  if (*seen >> bit & 1u) return false;
  *seen |= 1u << bit;
  return true;
}

bool FastAppendStart(TraceChecker& c, const Event& e, const dom::object& obj) {
  AppendStartArgs a;
  uint32_t seen = 0;
  uint64_t u;
  std::string_view sv;
  for (dom::key_value_pair f : obj) {
    const std::string_view k = f.key;
    const dom::element& v = f.value;
    if (KeyEquals(k, "interval")) {
      if (!Once(&seen, 0) || !FastRange(v, &a.interval)) return false;
    } else if (KeyEquals(k, "cache_position")) {
      if (!Once(&seen, 1) || !FastRange(v, &a.pos)) return false;
    } else if (KeyEquals(k, "mask_key_length")) {
      if (!Once(&seen, 2) || !ElementAsUint(v, &a.mask)) return false;
    } else if (KeyEquals(k, "position_stage")) {
      if (!Once(&seen, 3) || !FastStr(v, &a.stage)) return false;
    } else if (KeyEquals(k, "purpose")) {
      if (!Once(&seen, 4) || !FastStr(v, &a.purpose)) return false;
      if (a.purpose != "prefill" && a.purpose != "decode" && a.purpose != "repair" &&
          a.purpose != "verify")
        return false;
    } else if (KeyEquals(k, "input_token")) {
      if (!Once(&seen, 5) || !ElementAsUint(v, &u)) return false;
      a.input = u;
    } else if (KeyEquals(k, "idempotency_key")) {
      if (!Once(&seen, 6) || !FastStr(v, &sv)) return false;
      a.key = sv;
    } else if (KeyEquals(k, "cache_abi")) {
      if (!Once(&seen, 7) || !FastStr(v, &sv)) return false;
      a.abi = sv;
    } else if (KeyEquals(k, "accepted_count")) {
      if (!Once(&seen, 8) || !ElementAsUint(v, &u)) return false;
      a.accepted = u;
    } else if (KeyEquals(k, "reused_draft_index")) {
      if (!Once(&seen, 9) || !ElementAsUint(v, &u)) return false;
      a.reused = u;
    } else if (KeyEquals(k, "pending_payload_bytes")) {
      if (!Once(&seen, 10) || !ElementAsUint(v, &u)) return false;
      a.pending = u;
    } else {
      return false;  // draft_tokens and anything unknown: the general reader
    }
  }
  if ((seen & 0x1fu) != 0x1fu) return false;  // interval .. purpose are required
  ApplyAppendStart(c, e, &a);
  return true;
}

bool FastStageLayer(TraceChecker& c, const Event& e, const dom::object& obj) {
  StageLayerArgs a;
  uint32_t seen = 0;
  std::string_view sv;
  for (dom::key_value_pair f : obj) {
    const std::string_view k = f.key;
    const dom::element& v = f.value;
    if (KeyEquals(k, "layer")) {
      if (!Once(&seen, 0) || !ElementAsUint(v, &a.layer) || a.layer > UINT32_MAX) return false;
    } else if (KeyEquals(k, "interval")) {
      if (!Once(&seen, 1) || !FastRange(v, &a.interval)) return false;
    } else if (KeyEquals(k, "k") || KeyEquals(k, "v")) {
      if (!Once(&seen, k[0] == 'k' ? 2 : 3) || v.type() != dom::element_type::BOOL) return false;
      (k[0] == 'k' ? a.k : a.v) = v.get_bool().value_unsafe();
    } else if (KeyEquals(k, "cache_abi")) {
      if (!Once(&seen, 4) || !FastStr(v, &sv)) return false;
      a.abi = sv;
    } else if (KeyEquals(k, "staged_payload_bytes")) {
      uint64_t u;
      if (!Once(&seen, 5) || !ElementAsUint(v, &u)) return false;
      a.staged = u;
    } else {
      return false;
    }
  }
  if ((seen & 0x3u) != 0x3u) return false;
  ApplyStageLayer(c, e, a);
  return true;
}

bool FastPublish(TraceChecker& c, const Event& e, const dom::object& obj) {
  std::optional<uint64_t> len;
  for (dom::key_value_pair f : obj) {
    uint64_t u;
    if (!KeyEquals(f.key, "committed_length") || len || !ElementAsUint(f.value, &u)) return false;
    len = u;
  }
  ApplyPublish(c, e, len);
  return true;
}

bool FastOutput(TraceChecker& c, const Event& e, const dom::object& obj) {
  uint64_t index = 0, token = 0;
  bool from_repair = false;
  uint32_t seen = 0;
  std::string_view sv;
  for (dom::key_value_pair f : obj) {
    const std::string_view k = f.key;
    const dom::element& v = f.value;
    if (KeyEquals(k, "output_index")) {
      if (!Once(&seen, 0) || !ElementAsUint(v, &index)) return false;
    } else if (KeyEquals(k, "token")) {
      if (!Once(&seen, 1) || !ElementAsUint(v, &token)) return false;
    } else if (KeyEquals(k, "from")) {
      if (!Once(&seen, 2) || !FastStr(v, &sv)) return false;
      if (sv != "target_logits" && sv != "repair_logits") return false;
      from_repair = sv == "repair_logits";
    } else {
      return false;
    }
  }
  if ((seen & 0x3u) != 0x3u) return false;
  ApplyOutput(c, e, index, token, from_repair);
  return true;
}

std::vector<EventTypeSpec>& Table() {
  static std::vector<EventTypeSpec> t = {
      {"request_allocate", Plane::kSemantic, true, false, true, &OnAllocate},
      // A retried append_start may report the original receipt ("replayed"; ApplyAppendStart
      // refuses it on a first start).
      {"append_start", Plane::kSemantic, true, true, false, &OnAppendStart, &FastAppendStart,
       nullptr, kSuccessOrRejected | kOutcomeReplayed},
      {"append_stage_layer", Plane::kSemantic, true, true, false, &OnStageLayer, &FastStageLayer},
      {"append_publish", Plane::kSemantic, true, true, true, &OnPublish, &FastPublish, nullptr,
       kSuccessOrRejected | kOutcomeReplayed},
      // A failed append is recorded as append_failure, never as a failed publish or start.
      {"append_failure", Plane::kSemantic, true, true, false, &OnFailure, nullptr, nullptr,
       kOutcomeFailure | kOutcomeCancelled},
      {"cancel_txn", Plane::kSemantic, true, true, false, &OnFailure, nullptr, nullptr,
       kSuccessOrRejected | kOutcomeCancelled},
      // Recording an output is not an operation that can be refused.
      {"output_emit", Plane::kSemantic, true, false, false, &OnOutput, &FastOutput, nullptr,
       kOutcomeSuccess},
      {"read", Plane::kSemantic, true, false, false, &OnRead},
      {"fork", Plane::kSemantic, true, false, true, &OnFork, nullptr, &GateFork},
      {"truncate", Plane::kSemantic, true, false, true, &OnTruncate},
      // The replay judges the permutation a reorder applied; a refused one applied none.
      {"reorder", Plane::kSemantic, false, false, false, &OnReorder, nullptr, nullptr,
       kOutcomeSuccess},
      {"cancel_request", Plane::kSemantic, true, false, true, &OnCancelRequest},
      {"finish", Plane::kSemantic, true, false, true, &OnFinish},
      {"release", Plane::kSemantic, true, false, true, &OnRelease},
      // Observations report what a plane holds; they have no outcome.
      {"allocator_observation", Plane::kAllocator, false, false, false, &OnAllocator, nullptr,
       nullptr, kOutcomeSuccess},
      {"residency_observation", Plane::kResidency, false, false, false, &OnResidency, nullptr,
       nullptr, kOutcomeSuccess},
  };
  return t;
}

}  // namespace

const std::vector<EventTypeSpec>& EventTypes() { return Table(); }

Status RegisterEventType(const EventTypeSpec& spec) {
  if (FindEventType(spec.name))
    return InvalidArgument("event type " + base::QuoteClipped(spec.name) +
                           " is already registered");
  Table().push_back(spec);
  return Status::Ok();
}

const EventTypeSpec* FindEventType(std::string_view name) {
  for (const auto& s : Table())
    if (SameBytes(s.name, name)) return &s;
  return nullptr;
}

}  // namespace kvc::trace
