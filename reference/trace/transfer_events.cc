// Transfer-plane event handlers: replay M5.6 handoffs of a trace through handoff::TransferTxn.
#include "reference/trace/transfer_events.h"

#include <simdjson.h>

#include <algorithm>
#include <deque>
#include <iterator>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "reference/base/canonical_json.h"
#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"
#include "reference/handoff/byte_credit_window.h"
#include "reference/handoff/decode_directory.h"
#include "reference/handoff/transfer_txn.h"
#include "reference/trace/checker.h"

namespace kvc::trace {
namespace {

using handoff::ByteCreditWindow;
using handoff::DecodeDirectory;
using handoff::DestinationBlockPool;
using handoff::PublishedHandle;
using handoff::TransferIdentity;
using handoff::TransferPlan;
using handoff::TransferTxn;
using handoff::TxnState;

constexpr std::string_view kSlot = "m5_6.transfer";

std::string U(uint64_t v) { return std::to_string(v); }

// A destination worker: its byte-credit window and its block pool (0x06B).
struct Destination {
  Destination(uint64_t credit, uint64_t blocks) : credits(credit), pool(blocks) {}
  ByteCreditWindow credits;
  DestinationBlockPool pool;
  // False once a transfer that may hold credits here was gated (GateTransfer, or a plan not
  // replayed): the runtime's window may still hold what the replay returned (or never took), so
  // its in_flight_bytes claims are no longer compared, and a credit it refuses is not judged.
  bool window_known = true;
  // The same for blocks: false once a transfer that may hold blocks here (unpublished or
  // decode-owned) is no longer followed; a reservation the runtime refuses is then not judged.
  bool pool_known = true;
  // The highest destination_worker_epoch a validation at this worker accepted, and its line:
  // a worker epoch only advances (M5.6 0x01A: a stale completion "can have a valid checksum and
  // still fail the ... worker-epoch fence"), so a later validation expecting an older epoch is
  // refused (probe 24: epoch 19, then 18, passed).
  std::optional<uint64_t> validated_epoch;
  uint32_t validated_epoch_line = 0;
};

// A transfer in state `st` is still under way: neither PUBLISHED nor ABORTED (both terminal).
bool Unfinished(TxnState st) { return st != TxnState::kPublished && st != TxnState::kAborted; }

// One planned transfer. What it keeps once finished (PUBLISHED or ABORTED: TransferState::
// Finished) is what the verdicts on its late events need: the plan (a re-plan is compared with
// it, a retried chunk event with its manifest), the settled transaction (TransferTxn::Settle),
// the published handle and the summary; it is kept for a window of finished transfers
// (TransferState::finished), then forgotten.
struct Transfer {
  std::string destination;
  std::string request_id;
  std::optional<TransferTxn> txn;  // borrows *destinations[destination] and the directory
  uint32_t plan_line = 0;
  std::string plan_event_id;  // while open: Finish reports an unterminated transfer with it
  // Each chunk's first accepted receive: its line and checksum (what validation compares);
  // while open.
  std::map<std::string, std::pair<uint32_t, std::string>, std::less<>> received;
  TransferReplaySummary summary;
  bool counted_open = false;        // counted in its request's RequestReady::open_transfers
  bool opened_destination = false;  // its transfer_reserve opened "<request>@g<generation>"
};

// What a plan states, field by field, in order (OnPlan): a re-plan that repeats every fact is
// an idempotent retry; the first fact that differs is named.
std::vector<std::pair<std::string, std::string>> PlanFacts(const TransferPlan& plan,
                                                           const std::string& destination) {
  std::vector<std::pair<std::string, std::string>> facts = {
      {"identity.tenant", plan.identity.tenant},
      {"identity.request_id", plan.identity.request_id},
      {"identity.generation", U(plan.identity.generation)},
      {"identity.attempt", U(plan.identity.attempt)},
      {"identity.source_worker_epoch", U(plan.identity.source_worker_epoch)},
      {"identity.destination_worker_epoch", U(plan.identity.destination_worker_epoch)},
      {"identity.reservation_id", plan.identity.reservation_id},
      {"destination", destination},
      {"visible_prefix_handle", plan.visible_prefix_handle},
      {"tensor_abi_sha256", plan.tensor_abi_sha256},
      {"token_start", U(plan.token_start)},
      {"token_count", U(plan.token_count)},
      {"bytes_per_token_layer", U(plan.bytes_per_token_layer)},
      {"reserved_blocks", U(plan.reserved_blocks)},
      {"chunks (count)", U(plan.chunks.size())}};
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const handoff::ChunkSpec& ch = plan.chunks[i];
    facts.push_back({"chunks/" + U(i), ch.chunk_id + " layer " + U(ch.layer) + " tokens " +
                                           U(ch.token_start) + "+" + U(ch.token_count) + " bytes " +
                                           U(ch.bytes) + " checksum " + ch.checksum});
  }
  return facts;
}

// The K/V-ready tokens of one (request, layer): disjoint intervals [start, end) keyed by start,
// none adjacent to another (AddReady merges overlapping and adjacent kv_ready intervals), each
// with the latest line of the kv_ready events it was merged from. A chunk's coverage is then one
// lookup (FirstNotReady), whatever order the slices were announced in.
struct ReadySpan {
  uint64_t end = 0;
  uint32_t line = 0;
};
using ReadyCover = std::map<uint64_t, ReadySpan>;

// Adds [start, end) declared at `line` (not before the lines already in `cover`). Amortized
// O(log n): each interval is inserted once and erased at most once.
void AddReady(ReadyCover& cover, uint64_t start, uint64_t end, uint32_t line) {
  if (start >= end) return;  // an empty interval makes no token ready
  auto it = cover.upper_bound(start);
  if (it != cover.begin() && std::prev(it)->second.end >= start) --it;  // overlaps or touches
  // Every interval from `it` on that starts at or before `end` overlaps or touches [start, end).
  while (it != cover.end() && it->first <= end) {
    start = std::min(start, it->first);
    end = std::max(end, it->second.end);
    line = std::max(line, it->second.line);
    it = cover.erase(it);
  }
  cover.emplace_hint(it, start, ReadySpan{end, line});
}

// The first token at or after `from` that `cover` does not hold (`from` itself when it is not
// ready), and in *line the line of the interval that holds [from, that token) (0 when none).
uint64_t FirstNotReady(const ReadyCover& cover, uint64_t from, uint32_t* line) {
  *line = 0;
  auto it = cover.upper_bound(from);
  if (it == cover.begin()) return from;
  --it;  // the last interval starting at or before `from`
  if (it->second.end <= from) return from;
  *line = it->second.line;
  return it->second.end;  // the merged intervals are not adjacent: this token is not ready
}

// What the transfer plane keeps per request: its K/V readiness (kv_ready) and how many of its
// planned transfers are open (neither PUBLISHED nor ABORTED). Bounded: see TransferState::idle.
struct RequestReady {
  std::map<uint64_t, ReadyCover> layers;  // by layer
  std::optional<uint64_t> last_ready_ns;  // the latest monotonic_ns of its kv_ready events
  uint64_t open_transfers = 0;
  bool idle = false;  // in TransferState::idle (open_transfers == 0 and readiness is known)
  std::list<std::string>::iterator idle_pos;
};

// Per-checker replay state of the transfer plane.
class TransferState final : public CheckerExtension {
 public:
  TransferState(const lifecycle::CacheAbi& abi, size_t idle_window)
      : directory(abi), idle_window(std::max<size_t>(idle_window, 1)) {}

  void Finish(TraceChecker& c) override {
    std::vector<const std::pair<const std::string, Transfer>*> open;
    for (const auto& kv : transfers)
      if (kv.second.txn && !c.IsPoisoned("transfer:" + kv.first) &&
          !c.IsPoisoned("request:" + kv.second.request_id) && Unfinished(kv.second.txn->state()))
        open.push_back(&kv);
    std::sort(open.begin(), open.end(),
              [](auto* a, auto* b) { return a->second.plan_line < b->second.plan_line; });
    for (auto* o : open)
      c.ReportAt(o->second.plan_line, {o->second.plan_event_id, o->second.request_id},
                 ErrorCode::TRACE_OPERATION_UNTERMINATED, "/" + U(o->second.plan_line - 1),
                 "transfer " + base::QuoteClipped(o->first) + " ends the trace in state " +
                     std::string(handoff::TxnStateName(o->second.txn->state())) +
                     "; a handoff ends PUBLISHED or ABORTED (0x06A)");
  }

  DecodeDirectory directory;
  // Address-stable: transactions borrow the window and the pool.
  std::map<std::string, std::unique_ptr<Destination>, std::less<>> destinations;
  // The destinations destination_prefix declared a prefix at (prefix handle -> destination ->
  // line); "" for a declaration that named none (any destination's). The same prefix may be
  // cached at several destinations (probe 40: only the last one was kept, and a warm plan to
  // the first failed).
  std::map<std::string, std::map<std::string, uint32_t, std::less<>>, std::less<>>
      prefix_destination;
  std::map<std::string, Transfer, std::less<>> transfers;
  // Per request: readiness and open transfers. A request with an open transfer keeps its
  // record; one without (never planned, or every transfer PUBLISHED or ABORTED) keeps its
  // readiness while it is among the last `idle_window` such requests (`idle`, least recently
  // announced or closed first), then it is forgotten: memory follows live transfers, not the
  // trace's length (docs/trace-format.md "Memory").
  std::map<std::string, RequestReady, std::less<>> requests;
  std::list<std::string> idle;
  const size_t idle_window;
  // The finished (PUBLISHED or ABORTED) transfers still kept, in the order they finished: the
  // last idle_window (released_window) of them; an older one is forgotten (Forget), so memory
  // follows open transfers plus the window, not the trace's length (docs/trace-format.md
  // "Memory"). A transfer's state changes only on its own events, and PUBLISHED and ABORTED are
  // terminal, so the order, and every verdict, depends on the trace alone.
  std::deque<std::map<std::string, Transfer, std::less<>>::iterator> finished;
  // A request's kept transfers (open, or finished within the window): gating the request gates
  // them (GateTransfersOfRequest), and the request's generation fence in the directory is
  // forgotten with the last of them. Beside the ids, what OnPlan's identity rules compare a new
  // attempt with, indexed so that a plan conforming to them costs O(log k) for k kept attempts
  // (probe 60: a scan of every kept attempt per plan made 20,000 open attempts of one request
  // take 30 s, and a retrying request 450 us per plan); a plan they may refuse is judged by the
  // scan in OnPlan, which names the offending attempt.
  struct KeptAttempts {
    std::set<std::string, std::less<>> ids;
    // Every kept attempt's tenant: OnPlan admits a plan only with the kept attempts' tenant.
    std::string tenant;
    std::multiset<uint64_t> attempts;
    std::multimap<std::string, std::string, std::less<>> by_reservation;  // -> transfer id
    // Prompt ends (token_start + token_count): of every kept attempt, and of those not
    // PUBLISHED (open or aborted) with their transfer ids.
    std::multiset<uint64_t> prompt_ends;
    std::multimap<uint64_t, std::string> unpublished_prompt_ends;
  };
  std::map<std::string, KeptAttempts, std::less<>> kept_per_request;
  uint64_t forgotten = 0;  // transfers forgotten so far (an unknown one may be one of them)

  // A transfer record was added for `request`, planned as `plan` (which passed CheckPlan, so
  // its prompt end fits 64 bits).
  void Kept(const std::string& request, const std::string& transfer_id, const TransferPlan& plan) {
    KeptAttempts& k = kept_per_request[request];
    if (k.ids.empty()) k.tenant = plan.identity.tenant;
    k.ids.insert(transfer_id);
    k.attempts.insert(plan.identity.attempt);
    k.by_reservation.emplace(plan.identity.reservation_id, transfer_id);
    k.prompt_ends.insert(plan.token_start + plan.token_count);
    k.unpublished_prompt_ends.emplace(plan.token_start + plan.token_count, transfer_id);
  }

  // Records kv_ready of [start, end) of `layer` for `request` at `line`.
  void AddKvReady(const std::string& request, uint64_t layer, uint64_t start, uint64_t end,
                  uint32_t line, uint64_t ns) {
    RequestReady& r = requests[request];
    if (start < end) AddReady(r.layers[layer], start, end, line);
    r.last_ready_ns = std::max(r.last_ready_ns.value_or(0), ns);
    if (r.open_transfers == 0) MakeIdle(request, r);  // the most recent idle request now
  }

  // After an event of transfer `id`: counts it open or closed for its request. Only an event of
  // the transfer changes its state (its handlers and GateTransfer), and PUBLISHED and ABORTED
  // are terminal, so a transfer is counted open from its plan until it ends.
  void SyncOpen(std::string_view id) {
    auto it = transfers.find(id);
    if (it == transfers.end() || !it->second.txn) return;
    Transfer& t = it->second;
    const TxnState st = t.txn->state();
    const bool open = Unfinished(st);
    if (open == t.counted_open) return;
    t.counted_open = open;
    RequestReady& r = requests[t.request_id];
    if (open) {
      if (r.open_transfers++ == 0 && r.idle) {
        idle.erase(r.idle_pos);
        r.idle = false;
      }
    } else {
      if (--r.open_transfers == 0) MakeIdle(t.request_id, r);
      Finished(it);
    }
  }

 private:
  // Transfer `it` has just finished: it keeps what the verdicts on its late events need
  // (Transfer), and the oldest finished transfers beyond the window are forgotten.
  void Finished(std::map<std::string, Transfer, std::less<>>::iterator it) {
    Transfer& t = it->second;
    if (t.txn->state() == TxnState::kPublished)
      if (auto k = kept_per_request.find(t.request_id); k != kept_per_request.end())
        EraseEntry(k->second.unpublished_prompt_ends,
                   t.txn->plan().token_start + t.txn->plan().token_count, it->first);
    t.txn->Settle();
    t.received.clear();
    t.plan_event_id = std::string();
    finished.push_back(it);
    while (finished.size() > idle_window) {
      Forget(finished.front());
      finished.pop_front();
    }
  }

  // Forgets finished transfer `it`: its record, the destination handle its reservation opened
  // (with the lifecycle records on it) and, when no other transfer of its request is kept, the
  // request's generation fence and published handle. A later event naming it is then judged
  // as naming an unknown transfer (FindTransfer), and a plan reusing its id plans a new one.
  void Forget(std::map<std::string, Transfer, std::less<>>::iterator it) {
    Transfer& t = it->second;
    // A publication not yet released holds decode-owned blocks until its decode_release, which
    // will now name an unknown transfer: the replay frees them, and the destination's pool
    // refusals are no longer judged (probe 12: they stayed taken for the rest of the trace, and
    // the next reservation raised a second code; traces that record no decode_release keep
    // their publications' blocks until they are forgotten).
    if (t.txn->state() == TxnState::kPublished && !t.txn->decode_released()) {
      (void)t.txn->ReleaseDecode(t.txn->plan().identity.generation);
      destinations.at(t.destination)->pool_known = false;
    }
    // The directory's records are its own (not replayed elsewhere); failing to drop one only
    // keeps it.
    if (t.opened_destination)
      (void)directory.ForgetDestination(t.request_id, t.txn->plan().identity.generation, it->first);
    if (auto k = kept_per_request.find(t.request_id); k != kept_per_request.end()) {
      // O(log k) (probe 14: a vector's find and erase made a request of many transfers
      // quadratic).
      KeptAttempts& kept = k->second;
      const TransferPlan& plan = t.txn->plan();
      kept.ids.erase(it->first);
      if (auto a = kept.attempts.find(plan.identity.attempt); a != kept.attempts.end())
        kept.attempts.erase(a);
      EraseEntry(kept.by_reservation, plan.identity.reservation_id, it->first);
      const uint64_t end = plan.token_start + plan.token_count;
      if (auto p = kept.prompt_ends.find(end); p != kept.prompt_ends.end())
        kept.prompt_ends.erase(p);
      EraseEntry(kept.unpublished_prompt_ends, end, it->first);
      if (kept.ids.empty()) {
        directory.ForgetRequest(t.request_id);
        kept_per_request.erase(k);
      }
    }
    transfers.erase(it);
    ++forgotten;
  }

  // Erases the entry (key, id) of `m`, one of the few under `key`.
  template <typename M, typename K>
  static void EraseEntry(M& m, const K& key, const std::string& id) {
    for (auto [b, e] = m.equal_range(key); b != e; ++b)
      if (b->second == id) {
        m.erase(b);
        return;
      }
  }

  // `r` (of `request`, no open transfer) becomes the most recent idle request: forgotten at
  // once when no kv_ready named it, else the oldest idle requests beyond the window are.
  void MakeIdle(const std::string& request, RequestReady& r) {
    if (!r.last_ready_ns) {
      if (r.idle) idle.erase(r.idle_pos);
      requests.erase(request);
      return;
    }
    if (r.idle) {
      idle.splice(idle.end(), idle, r.idle_pos);
    } else {
      r.idle_pos = idle.insert(idle.end(), request);
      r.idle = true;
    }
    while (idle.size() > idle_window) {
      requests.erase(idle.front());
      idle.pop_front();
    }
  }
};

TransferState& State(TraceChecker& c) {
  if (CheckerExtension* x = c.extension(kSlot)) return static_cast<TransferState&>(*x);
  return static_cast<TransferState&>(
      c.SetExtension(std::string(kSlot),
                     std::make_unique<TransferState>(c.kv().abi(), c.options().released_window)));
}

// The request the event names, or nullopt after reporting its absence.
std::optional<std::string> RequestOf(TraceChecker& c, const Event& e) {
  if (e.request_id) return std::string(*e.request_id);
  c.Report(ErrorCode::INPUT_FIELD_MISSING, c.LinePtr() + "/request_id",
           std::string(e.event_type) + " names the request whose K/V it moves");
  return std::nullopt;
}

// Gates `request` (when named): a plan that was not replayed, a transfer the replay never planned,
// a reservation or validation the replay does not follow leaves the request's generation fence
// and pool reservation unknown (the runtime's destination may hold an attempt the replay does
// not), so the request's later events, its other attempts included, are not judged on it.
void GateRequest(TraceChecker& c, std::optional<std::string_view> request) {
  if (request) c.Poison("request:" + std::string(*request));
}

// True when the event reports `rejected` and the protocol refuses it too: the refusal the
// contract expects, which changes nothing and gates nothing.
bool RefusedAsReported(const Event& e, const Status& s) {
  return KeyEquals(e.outcome, "rejected") && !s.ok();
}

// The runtime's window and pool at `destination` may hold credits and blocks the replay does
// not (a transfer it no longer follows): its in_flight_bytes claims there are no longer
// compared, and its refusals of credits and reservations there are not judged.
void LoseHoldings(TransferState& s, std::string_view destination) {
  if (auto d = s.destinations.find(destination); d != s.destinations.end())
    d->second->window_known = d->second->pool_known = false;
}
// The same for the pool alone: a transfer no longer followed that holds blocks but no credits
// (a publication's decode-owned blocks), so the window stays exactly known.
void LosePool(TransferState& s, std::string_view destination) {
  if (auto d = s.destinations.find(destination); d != s.destinations.end())
    d->second->pool_known = false;
}

}  // namespace

// Gates transfer `id`: its later events are not replayed. What it holds at its destination
// (credits in flight, unpublished or decode-owned blocks), now or later, is then unknown: the
// replay returns what it holds (Abort; ReleaseDecode for a publication), so no other transfer is
// refused because of it, and the destination's window and pool stop being judged against the
// runtime's (LoseHoldings, LosePool: one root cause, one code; a transfer sharing the window or
// the pool would otherwise raise a code of its own).
void GateTransfer(TraceChecker& c, std::string_view id) {
  c.Poison("transfer:" + std::string(id));
  TransferState& s = State(c);
  auto it = s.transfers.find(id);
  if (it == s.transfers.end() || !it->second.txn) return;
  TransferTxn& txn = *it->second.txn;
  const TxnState st = txn.state();
  if (st == TxnState::kAborted) return;
  if (st == TxnState::kPublished) {
    // Its decode_release will not be replayed, so when the runtime's pool gets the decode-owned
    // blocks back is unknown: the replay frees them now, so that no later reservation is refused
    // because of them, and the pool's refusals are no longer judged (since 2026-12-04: with
    // decode_release, a gated publication kept its blocks, and the next reservation raised a second
    // code, HANDOFF_RESERVATION_TOO_SMALL).
    if (!txn.decode_released()) {
      (void)txn.ReleaseDecode(txn.plan().identity.generation);
      LosePool(s, it->second.destination);  // a publication holds no credits (probe 12)
    }
    return;
  }
  // A planned transfer holds nothing yet, but the runtime's may go on to reserve and acquire; a
  // reserved or transferring one holds blocks, and credits unless every chunk is DEVICE_VISIBLE
  // (a credit is acquired only for a DECLARED chunk): then, as for a validated one, the window
  // stays judged (probes 13 and 14: gating such a transfer stopped the window's checks too).
  if (st != TxnState::kPlanned && txn.credit_held() == 0 && txn.all_device_visible())
    LosePool(s, it->second.destination);
  else
    LoseHoldings(s, it->second.destination);
  const bool planned = st == TxnState::kPlanned;
  (void)txn.Abort("gated: the replay does not follow this transfer");
  // Now ABORTED: it enters the window of finished transfers (probes 13 and 14: gated outside its
  // own handler, or while PLANNED, it stayed counted open, and its record was kept to the end).
  s.SyncOpen(id);
  if (!planned) return;
  // Whether the runtime reserved it is unknown, so the request's generation fence is too: the
  // request's other attempts are not judged on it (GateRequest; since 2026-12-04: a transfer
  // whose reservation was lost was gated at its first chunk event, and the superseded attempt's
  // refused admission then raised TRACE_OUTCOME_INVALID, a second code for one lost event).
  GateRequest(c, it->second.request_id);
}

bool RequestHasTransfers(const TraceChecker& c, std::string_view request) {
  const CheckerExtension* x = c.extension(kSlot);
  if (!x) return false;
  const auto& s = static_cast<const TransferState&>(*x);
  return s.kept_per_request.find(request) != s.kept_per_request.end();
}

void GateTransfersOfRequest(TraceChecker& c, std::string_view request) {
  CheckerExtension* x = c.extension(kSlot);
  if (!x) return;
  TransferState& s = static_cast<TransferState&>(*x);
  auto k = s.kept_per_request.find(request);
  if (k == s.kept_per_request.end()) return;
  // A copy: gating may finish a transfer and forget older ones (TransferState::Forget).
  const std::vector<std::string> ids(k->second.ids.begin(), k->second.ids.end());
  for (const std::string& id : ids)
    if (!c.IsPoisoned("transfer:" + id)) GateTransfer(c, id);
}

namespace {

// The live transfer an event names; nullptr (after reporting, unless gated) when none.
Transfer* FindTransfer(TraceChecker& c, TransferState& s, const Event& e) {
  const std::string id(*e.operation_id);
  if (c.IsPoisoned("transfer:" + id)) return nullptr;  // its root cause is already reported
  auto it = s.transfers.find(id);
  if (it == s.transfers.end() || !it->second.txn) {
    // Reported even when the event is reported rejected: a refused late completion must still
    // name the (abandoned) transfer it belongs to (M5.6 0x06E; invalid fixture
    // m5_6/trace/transfer_unknown). Unless rejected, it took effect on a transfer the replay
    // does not have, so it is gated: the transfer's later events, its plan included (an event
    // emitted before its transfer_plan), are not replayed.
    // A finished transfer is kept for a window of further finished transfers (Forget): once
    // any was forgotten, this one may be one of them.
    const bool gate = !KeyEquals(e.outcome, "rejected");
    c.Report(ErrorCode::HANDOFF_TRANSFER_UNKNOWN, c.LinePtr() + "/operation_id",
             std::string(e.event_type) + " names transfer " + base::QuoteClipped(id) +
                 ", which no earlier transfer_plan declared" +
                 (s.forgotten > 0 ? "; or it finished (PUBLISHED or ABORTED) before the last " +
                                        U(s.idle_window) +
                                        " finished transfers, and its record is no longer "
                                        "kept (docs/trace-format.md \"Memory\")"
                                  : std::string()) +
                 (gate ? " (its later events, plan included, are not replayed)" : ""));
    if (gate) {
      c.Poison("transfer:" + id);
      GateRequest(c, e.request_id);
    }
    return nullptr;
  }
  Transfer& t = it->second;
  // A transfer of a gated request is not followed either (its later events may leave the
  // request out, so the request's gate alone does not stop them; since 2026-12-03: before, a
  // refused kv_ready's request was gated and the transfer's next chunk_send without a
  // request_id broke the producer gate, a second code).
  // The request's own gate, not the wildcard one of requests not yet created (request:*): this
  // transfer's request exists (probe 12: the wildcard of a dropped event without a request
  // skipped a planned transfer's later events that left their request out, and not those that
  // named it).
  if (!e.request_id && c.IsPoisoned("request:" + t.request_id)) {
    GateTransfer(c, id);
    return nullptr;
  }
  // An event that misnames its transfer's request or generation is not replayed, and what it
  // did to the transfer is unknown: the transfer and its request are gated (GateRequest).
  auto drop = [&] {
    GateTransfer(c, id);
    GateRequest(c, t.request_id);
    GateRequest(c, e.request_id);  // the request it names (probe 13: left ungated)
  };
  if (e.request_id && *e.request_id != t.request_id) {
    c.Report(ErrorCode::HANDOFF_TRACE_IDENTITY_MISMATCH, c.LinePtr() + "/request_id",
             std::string(e.event_type) + " names request " + base::QuoteClipped(*e.request_id) +
                 "; transfer " + base::QuoteClipped(id) + " moves request " +
                 base::QuoteClipped(t.request_id));
    drop();
    return nullptr;
  }
  if (e.handle_generation && *e.handle_generation != t.txn->plan().identity.generation) {
    c.Report(ErrorCode::HANDOFF_TRACE_IDENTITY_MISMATCH, c.LinePtr() + "/handle_generation",
             std::string(e.event_type) + " carries generation " + U(*e.handle_generation) +
                 "; transfer " + base::QuoteClipped(id) + " belongs to generation " +
                 U(t.txn->plan().identity.generation));
    drop();
    return nullptr;
  }
  return &t;
}

// Judges one TransferTxn operation's status under the event's outcome: "rejected" must be
// refused by the protocol too (a refused operation changes nothing), anything else must be
// accepted. A breach is reported once and gates the transfer's later events.
// Whether `e` is a destination-side step (a receive, a device copy, the validation or the
// publication) of a transfer whose generation a newer reservation of its request superseded: the
// destination may refuse it at the generation fence (M5.6 0x01A: a stale completion "can have a
// valid checksum and still fail the generation ... fence"), as well as run it to its stale
// publication (the replay's model).
bool FencedAsSuperseded(TraceChecker& c, const Event& e) {
  if (!e.operation_id || !(KeyEquals(e.event_type, "chunk_receive") ||
                           KeyEquals(e.event_type, "chunk_device_visible") ||
                           KeyEquals(e.event_type, "transfer_validate") ||
                           KeyEquals(e.event_type, "transfer_publish")))
    return false;
  TransferState& st = State(c);
  auto it = st.transfers.find(*e.operation_id);
  if (it == st.transfers.end() || !it->second.txn) return false;
  const std::optional<uint64_t> current = st.directory.CurrentGeneration(it->second.request_id);
  return current && it->second.txn->plan().identity.generation < *current;
}

bool Judge(TraceChecker& c, const Event& e, const Status& s, std::string_view context = {}) {
  if (KeyEquals(e.outcome, "rejected")) {
    if (!s.ok()) return false;
    // A superseded attempt's step refused at the generation fence: admitted, nothing changes
    // (probe 40: it was TRACE_OUTCOME_INVALID; the runtime then aborts the attempt).
    if (FencedAsSuperseded(c, e)) return false;
    c.Report(ErrorCode::TRACE_OUTCOME_INVALID, c.LinePtr() + "/outcome",
             std::string(e.event_type) +
                 " reported \"rejected\", but the M5.6 transaction admits it on the "
                 "replayed state (the runtime refused a legal operation or the trace "
                 "lost an event)");
    GateTransfer(c, *e.operation_id);
    return false;
  }
  if (s.ok()) return true;
  Status r = s;
  if (!context.empty()) r = Status(s.code(), s.message() + " " + std::string(context), s.error());
  c.ReportStatus(r, c.LinePtr());
  GateTransfer(c, *e.operation_id);
  return false;
}

// The credit window's in-flight bytes a runtime may report after a chunk event.
void CheckInFlight(TraceChecker& c, const Event& e, Destination& d,
                   std::optional<uint64_t> observed, uint64_t chunk_bytes) {
  if (!observed || !d.window_known || *observed == d.credits.in_flight()) return;
  const bool early = KeyEquals(e.event_type, "chunk_receive") && d.credits.in_flight() >= chunk_bytes &&
                     *observed == d.credits.in_flight() - chunk_bytes;
  c.Report(
      early ? ErrorCode::HANDOFF_CREDIT_RETURNED_EARLY : ErrorCode::TRACE_OBSERVATION_INCONSISTENT,
      c.LinePtr() + "/payload/in_flight_bytes",
      std::string(e.event_type) + " reports " + U(*observed) + " B in flight; the credit window holds " +
          U(d.credits.in_flight()) + " B" +
          (early ? " (this chunk's " + U(chunk_bytes) +
                       " B were returned at receive; credit returns at DEVICE_VISIBLE)"
                 : ""));
  GateTransfer(c, *e.operation_id);
  // The claim shows the runtime's window is not the replay's, whatever the transfer still holds
  // (probe 31: after its last chunk, the next transfer's claim raised the same difference).
  d.window_known = false;
}

void ReadIdentity(ObjReader& r, TransferIdentity* id) {
  id->tenant = r.Str("tenant").value_or("");
  id->request_id = r.Str("request_id").value_or("");
  id->generation = r.Uint("generation").value_or(0);
  id->attempt = r.Uint("attempt").value_or(0);
  id->source_worker_epoch = r.Uint("source_worker_epoch").value_or(0);
  id->destination_worker_epoch = r.Uint("destination_worker_epoch").value_or(0);
  id->reservation_id = r.Str("reservation_id").value_or("");
  r.RejectUnknown();
}

// ---------------------------------------------------------------- handlers

// Gates of declarations that were dropped: a plan naming an undeclared destination, or
// extending a visible prefix that was not published, is not replayed (its code would repeat the
// dropped declaration's). The key is the gate's prefix and the name; a declaration whose name is
// unreadable gates every name (the prefix and "*").
constexpr std::string_view kDestinationGate = "destination:";
constexpr std::string_view kPrefixGate = "destination_prefix:";

void GateName(TraceChecker& c, std::string_view gate, std::string_view name) {
  c.Poison(std::string(gate) + std::string(name));
}
bool IsNameGated(TraceChecker& c, std::string_view gate, std::string_view name) {
  return c.IsPoisoned(std::string(gate) + std::string(name)) ||
         c.IsPoisoned(std::string(gate) + "*");
}

// The gate of a dropped declaration that names itself in its payload's `member`.
void GateDeclaration(TraceChecker& c, const simdjson::dom::element& payload,
                     std::string_view member, std::string_view gate, bool sure) {
  std::string_view name;
  if (!payload.at_key(member).get(name))
    GateName(c, gate, name);
  else if (sure)
    GateName(c, gate, "*");
}
void GateDestination(TraceChecker& c, const simdjson::dom::element& payload, bool sure) {
  GateDeclaration(c, payload, "destination", kDestinationGate, sure);
}
void GateDestinationPrefix(TraceChecker& c, const simdjson::dom::element& payload, bool sure) {
  GateDeclaration(c, payload, "prefix_handle", kPrefixGate, sure);
}

// A transfer_plan the checker drops or skips (its request gated) is not replayed, but the
// runtime's transfer may go on to take credits and blocks at the destination its payload names:
// that destination's window and pool are no longer judged on the runtime's refusals (probe 14:
// a plan dropped by the core left them judged, and a legitimate refusal raised a second code).
void GatePlan(TraceChecker& c, const simdjson::dom::element& payload, bool /*sure*/) {
  std::string_view dest;
  if (payload.is_object() && !payload["destination"].get_string().get(dest))
    LoseHoldings(State(c), dest);
}

void OnDestination(TraceChecker& c, const Event& e, ObjReader& p) {
  auto name = p.Str("destination");
  auto credit = p.Uint("credit_capacity_bytes");
  auto blocks = p.Uint("pool_blocks");
  if (!p.clean() || !name || !credit || !blocks) return;  // dropped: the checker gates it
  TransferState& s = State(c);
  if (s.destinations.count(*name)) {
    c.Report(ErrorCode::INPUT_VALUE_INVALID, c.LinePtr() + "/payload/destination",
             "destination " + base::QuoteClipped(*name) + " is declared twice");
    return;
  }
  s.destinations.emplace(*name, std::make_unique<Destination>(*credit, *blocks));
}

// The destination already holds exact visible state V_D = [0, committed_length) (a prefix
// cache entry) under `prefix_handle`; a warm transfer extends it by X = U \ V_D only.
void OnDestinationPrefix(TraceChecker& c, const Event& e, ObjReader& p) {
  auto handle = p.Str("prefix_handle");
  auto length = p.Uint("committed_length");
  auto destination = p.OptStr("destination");
  if (!p.clean() || !handle || !length) return;  // dropped: the checker gates it
  if (handoff::DecodeDirectory::IsAttemptHandleName(*handle)) {
    c.Report(ErrorCode::INPUT_VALUE_INVALID, c.LinePtr() + "/payload/prefix_handle",
             "prefix_handle " + base::QuoteClipped(*handle) +
                 " has the form <request_id>@g<generation>, reserved for the directory's "
                 "attempt handles (a prefix of that name would be some request's destination "
                 "handle); name it otherwise");
    return GateName(c, kPrefixGate, *handle);
  }
  Status s = State(c).directory.PublishVisiblePrefix(*handle, *length);
  if (!s.ok()) {
    c.ReportStatus(s, c.LinePtr() + "/payload");
    return GateName(c, kPrefixGate, *handle);
  }
  State(c).prefix_destination[*handle].emplace(destination ? *destination : "", e.line);
}

void OnKvReady(TraceChecker& c, const Event& e, ObjReader& p) {
  auto layer = p.Uint("layer");
  auto interval = p.Range("interval", ErrorCode::HANDOFF_TRACE_INTERVAL_INVALID);
  if (!p.clean() || !layer || !interval) return;
  auto req = RequestOf(c, e);
  if (!req) return;
  if (*layer >= c.kv().abi().num_layers) {
    c.Report(ErrorCode::HANDOFF_TRACE_INTERVAL_INVALID, c.LinePtr() + "/payload/layer",
             "kv_ready names layer " + U(*layer) + "; the trace's cache ABI has " +
                 U(c.kv().abi().num_layers) + " layers");
    // The request's readiness is no longer the producer's: its later events are gated.
    return c.DropEvent(e);
  }
  State(c).AddKvReady(*req, *layer, interval->first, interval->second, e.line, e.monotonic_ns);
}

// Whether `plan` may break one of OnPlan's identity rules against `kept`, its request's kept
// attempts: false only when it breaks none (every kept attempt shares one tenant; the rules
// compare the attempt number with the highest kept, the reservation with the live attempts
// holding it, the prompt end with every kept end and with the unpublished ones'). O(log k).
bool MayBreakIdentityRules(const TransferState& s, const TransferState::KeptAttempts& kept,
                           const TransferPlan& plan) {
  if (kept.ids.empty()) return false;
  if (plan.identity.tenant != kept.tenant) return true;
  if (!kept.attempts.empty() && plan.identity.attempt <= *kept.attempts.rbegin()) return true;
  for (auto [b, e] = kept.by_reservation.equal_range(plan.identity.reservation_id); b != e; ++b) {
    auto o = s.transfers.find(b->second);
    if (o == s.transfers.end() || !o->second.txn) continue;
    if (Unfinished(o->second.txn->state())) return true;
  }
  const std::optional<uint64_t> end = CheckedAdd(plan.token_start, plan.token_count);
  if (!end) return false;  // judged by CheckPlan, not by these rules
  if (!kept.prompt_ends.empty() && *kept.prompt_ends.rbegin() > *end) return true;
  return !kept.unpublished_prompt_ends.empty() &&
         kept.unpublished_prompt_ends.begin()->first < *end;
}

void OnPlan(TraceChecker& c, const Event& e, ObjReader& p) {
  TransferPlan plan;
  plan.transfer_id = *e.operation_id;
  auto dest = p.Str("destination");
  if (auto id = p.Object("identity")) ReadIdentity(*id, &plan.identity);
  auto abi = p.Str("tensor_abi_sha256");
  auto start = p.Uint("token_start");
  auto count = p.Uint("token_count");
  auto bptl = p.Uint("bytes_per_token_layer");
  auto blocks = p.Uint("reserved_blocks");
  auto prefix = p.OptStr("visible_prefix_handle");
  p.ObjectArray("chunks", [&](ObjReader& r) {
    handoff::ChunkSpec ch;
    ch.chunk_id = r.Str("chunk_id").value_or("");
    ch.layer = r.Uint("layer").value_or(0);
    ch.token_start = r.Uint("token_start").value_or(0);
    ch.token_count = r.Uint("token_count").value_or(0);
    ch.bytes = r.Uint("bytes").value_or(0);
    ch.checksum = r.Str("checksum").value_or("");
    plan.chunks.push_back(std::move(ch));
  });
  const std::string gate = "transfer:" + plan.transfer_id;
  if (c.IsPoisoned(gate)) {                   // gated: an earlier event of the transfer was dropped
    if (dest) LoseHoldings(State(c), *dest);  // the runtime's transfer may take credits, blocks
    return;
  }
  // A plan that is not replayed gates its transfer and its request (GateRequest): the one its
  // event names and the one its identity names. The runtime's transfer may go on to take
  // credits at its destination, whose window the replay then no longer knows (GateTransfer).
  auto drop = [&] {
    // GateTransfer first: a re-plan of a live transfer returns what it holds (probe 15: marked
    // gated before its request was, the request's gate skipped it, and it kept its credits).
    GateTransfer(c, plan.transfer_id);
    GateRequest(c, e.request_id);
    if (!plan.identity.request_id.empty()) GateRequest(c, plan.identity.request_id);
    if (dest) LoseHoldings(State(c), *dest);
  };
  if (!p.clean() || !dest || !abi || !start || !count || !bptl || !blocks) return drop();
  // The transfer id keys every later event of the transfer (and the destination's append
  // transaction): an empty or reserved one is refused here, at its root, not at the
  // reservation's append.
  if (std::string why = handoff::TransferIdProblem(plan.transfer_id); !why.empty()) {
    c.Report(ErrorCode::INPUT_VALUE_INVALID, c.LinePtr() + "/operation_id",
             "transfer_plan (operation_id): " + why);
    return drop();
  }
  auto req = RequestOf(c, e);
  if (!req) return drop();
  if (plan.identity.request_id != *req) {
    c.Report(
        ErrorCode::HANDOFF_TRACE_IDENTITY_MISMATCH, c.LinePtr() + "/payload/identity/request_id",
        "transfer_plan identity names request " + base::QuoteClipped(plan.identity.request_id) +
            "; the event names " + base::QuoteClipped(*req));
    return drop();
  }
  if (e.handle_generation && *e.handle_generation != plan.identity.generation) {
    c.Report(ErrorCode::HANDOFF_TRACE_IDENTITY_MISMATCH, c.LinePtr() + "/handle_generation",
             "transfer_plan carries generation " + U(*e.handle_generation) +
                 "; its identity fence names generation " + U(plan.identity.generation));
    return drop();
  }
  plan.tensor_abi_sha256 = *abi;
  plan.num_layers = c.kv().abi().num_layers;
  plan.token_start = *start;
  plan.token_count = *count;
  plan.bytes_per_token_layer = *bptl;
  plan.reserved_blocks = *blocks;
  plan.visible_prefix_handle = prefix.value_or("");
  bool digests_ok = true;
  auto fmt = [&](const std::string& ptr, const std::string& v) {
    if (IsSha256Hex(v)) return;
    digests_ok = false;
    c.Report(ErrorCode::HANDOFF_DIGEST_MALFORMED, c.LinePtr() + "/payload" + ptr,
             "expected a 64-character lowercase hex SHA-256, got " + base::QuoteClipped(v));
  };
  fmt("/tensor_abi_sha256", plan.tensor_abi_sha256);
  for (size_t i = 0; i < plan.chunks.size(); ++i)
    fmt("/chunks/" + U(i) + "/checksum", plan.chunks[i].checksum);
  if (!digests_ok) return drop();
  TransferState& s = State(c);
  // Everything the plan states: an identical re-plan is an idempotent retry, any other is
  // corruption (geometry and request included: a re-plan is not a way to change them). The
  // first plan's facts are rebuilt from the plan its transaction keeps (not stored twice).
  if (auto it = s.transfers.find(plan.transfer_id); it != s.transfers.end()) {
    const auto facts = PlanFacts(plan, *dest);
    const auto first = PlanFacts(it->second.txn->plan(), it->second.destination);
    std::string differ;
    for (size_t i = 0; i < facts.size() && differ.empty(); ++i)
      if (i >= first.size() || facts[i] != first[i]) differ = facts[i].first;
    if (differ.empty()) return;  // an identical re-plan is an idempotent retry
    c.Report(ErrorCode::HANDOFF_DUPLICATE_CORRUPTION, c.LinePtr() + "/operation_id",
             "transfer " + base::QuoteClipped(plan.transfer_id) +
                 " is planned again with another " + differ + " (first planned at line " +
                 U(it->second.plan_line) + "); a re-plan must repeat its plan exactly");
    // Which plan the runtime follows is unknown: the transfer's later events are not replayed
    // (probe 15: a renamed chunk's events then raised HANDOFF_CHUNK_UNKNOWN, a second code).
    GateTransfer(c, plan.transfer_id);
    return;
  }
  // The immutable part of the identity fence across the request's attempts (M5.6 0x01A: the
  // fence is (tenant, request, generation, attempt, source epoch, destination epoch,
  // reservation), and request identity cannot change): the tenant is every kept attempt's,
  // attempts are numbered upward, and a live attempt's reservation is its own (probe 31: a
  // changed tenant, an attempt numbered below the last and two live attempts under one
  // reservation passed).
  if (auto k = s.kept_per_request.find(*req);
      k != s.kept_per_request.end() &&
      (!c.options().transfer_identity_index || MayBreakIdentityRules(s, k->second, plan))) {
    for (const std::string& other_id : k->second.ids) {
      auto o = s.transfers.find(other_id);
      if (o == s.transfers.end() || !o->second.txn) continue;
      const handoff::TransferIdentity& was = o->second.txn->plan().identity;
      const TxnState st = o->second.txn->state();
      const bool live = Unfinished(st);
      std::string field, why;
      if (was.tenant != plan.identity.tenant) {
        field = "identity/tenant";
        why = "tenant " + base::QuoteClipped(plan.identity.tenant) + "; its attempt " +
              U(was.attempt) + " was of tenant " + base::QuoteClipped(was.tenant) +
              " (a request's identity does not change)";
      } else if (plan.identity.attempt <= was.attempt) {
        field = "identity/attempt";
        why = "attempt " + U(plan.identity.attempt) + "; transfer " + base::QuoteClipped(other_id) +
              " was already attempt " + U(was.attempt) + " (attempts are numbered upward)";
      } else if (live && was.reservation_id == plan.identity.reservation_id) {
        field = "identity/reservation_id";
        why = "reservation " + base::QuoteClipped(plan.identity.reservation_id) +
              ", which live transfer " + base::QuoteClipped(other_id) +
              " holds (each attempt reserves under its own id)";
      } else {
        // The prompt interval (M5.6 0x01A: the manifest binds the prompt digest and token
        // interval). A reroute (a new attempt after one that did not publish) hands off the same
        // prompt (probe 31 finding 4d: a reroute moving [0, 8) of a 16-token prompt published
        // and was admitted). After a publication a later transfer may extend it (a warm
        // continuation), never shrink it: decode needs the complete K/V the request already
        // published (M5.6 0x10; probe 40: [0, 8) after [0, 16)). The kept plan passed
        // CheckPlan, so its end fits 64 bits; this one's is judged there.
        const handoff::TransferPlan& wp = o->second.txn->plan();
        const std::optional<uint64_t> end = CheckedAdd(plan.token_start, plan.token_count);
        const uint64_t was_end = wp.token_start + wp.token_count;
        const bool published = st == TxnState::kPublished;
        if (end && (published ? *end < was_end : *end != was_end)) {
          field = "token_count";
          why = "the prompt [0, " + U(*end) + ") (token_start " + U(plan.token_start) +
                " + token_count " + U(plan.token_count) + "); its attempt " + U(was.attempt) +
                (published ? " published [0, " + U(was_end) +
                                 ") (a later transfer may extend the published prompt, not "
                                 "shrink it)"
                           : ", which did not publish, covered [0, " + U(was_end) +
                                 ") (a reroute hands off the same prompt)");
        }
      }
      if (field.empty()) continue;
      c.Report(ErrorCode::HANDOFF_IDENTITY_MISMATCH, c.LinePtr() + "/payload/" + field,
               "transfer_plan of request " + base::QuoteClipped(*req) + " names " + why +
                   " (transfer " + base::QuoteClipped(other_id) + " was planned at line " +
                   U(o->second.plan_line) + ")");
      return drop();
    }
  }
  if (!plan.visible_prefix_handle.empty() &&
      IsNameGated(c, kPrefixGate, plan.visible_prefix_handle))
    return drop();  // the prefix it extends was dropped and reported
  // A warm plan extends a prefix its own destination holds (M5.6 0x01A: V_D is the state
  // visible to destination D; 0x06: a cache hit elsewhere does not make D warm; probe 31
  // finding 5: a plan to decode-1 extended decode-0's prefix and was admitted).
  if (auto pd = s.prefix_destination.find(plan.visible_prefix_handle);
      !plan.visible_prefix_handle.empty() && pd != s.prefix_destination.end() &&
      !pd->second.count(*dest) && !pd->second.count("")) {
    const auto& [holder, line] = *pd->second.begin();
    c.Report(ErrorCode::HANDOFF_COVERAGE_MISMATCH, c.LinePtr() + "/payload/visible_prefix_handle",
             "transfer_plan to destination " + base::QuoteClipped(*dest) + " extends prefix " +
                 base::QuoteClipped(plan.visible_prefix_handle) + ", which destination " +
                 base::QuoteClipped(holder) +
                 (pd->second.size() > 1 ? " (and " + U(pd->second.size() - 1) + " other(s))"
                                        : std::string()) +
                 " holds (destination_prefix at line " + U(line) +
                 "): only a prefix visible at the plan's destination makes it warm");
    return drop();
  }
  auto d = s.destinations.find(*dest);
  if (d == s.destinations.end()) {
    if (IsNameGated(c, kDestinationGate, *dest))
      return drop();  // its declaration was dropped and reported
    c.Report(ErrorCode::HANDOFF_TRANSFER_UNKNOWN, c.LinePtr() + "/payload/destination",
             "transfer_plan names destination " + base::QuoteClipped(*dest) +
                 ", which no earlier transfer_destination declared");
    return drop();
  }
  bool plan_ok = true;
  for (const auto& issue : handoff::CheckPlan(plan)) {
    plan_ok = false;
    c.Report(issue.code,
             c.LinePtr() + "/payload/" +
                 (!issue.field.empty()     ? issue.field
                  : issue.chunk_index >= 0 ? "chunks/" + U(static_cast<uint64_t>(issue.chunk_index))
                                           : std::string("chunks")),
             issue.message);
  }
  if (!plan_ok) return drop();
  Transfer t;
  t.destination = *dest;
  t.request_id = *req;
  t.plan_line = e.line;
  t.plan_event_id = e.event_id;
  for (const auto& ch : plan.chunks) t.summary.logical_bytes += ch.bytes;  // CheckPlan bounds each
  auto txn =
      TransferTxn::Create(std::move(plan), &d->second->credits, &d->second->pool, &s.directory);
  if (!txn.ok()) {
    c.ReportStatus(txn.status(), c.LinePtr() + "/payload/chunks");
    return drop();
  }
  t.txn.emplace(std::move(*txn));
  s.Kept(t.request_id, std::string(*e.operation_id), t.txn->plan());
  s.transfers.emplace(*e.operation_id, std::move(t));
}

void OnReserve(TraceChecker& c, const Event& e, ObjReader& p) {
  if (!p.clean()) return;
  TransferState& s = State(c);
  Transfer* t = FindTransfer(c, s, e);
  if (!t) return;
  // A reservation the runtime refused where the pool is no longer known is not judged (the
  // runtime's pool may hold a gated transfer's blocks); nothing is reserved.
  if (KeyEquals(e.outcome, "rejected") && !s.destinations.at(t->destination)->pool_known) return;
  const Status st = t->txn->Reserve();
  if (st.ok()) t->opened_destination = true;
  // A reservation the replay does not follow (a violation, or a refusal it would admit) leaves
  // the request's fence and pool share unknown.
  if (!Judge(c, e, st) && !RefusedAsReported(e, st)) GateRequest(c, t->request_id);
}

void OnCreditAcquire(TraceChecker& c, const Event& e, ObjReader& p) {
  auto chunk = p.Str("chunk_id");
  auto in_flight = p.OptUint("in_flight_bytes");
  if (!p.clean() || !chunk) return;
  TransferState& s = State(c);
  Transfer* t = FindTransfer(c, s, e);
  if (!t) return;
  // A credit the runtime refused where the window is no longer known is not judged (the
  // runtime's window may hold a gated transfer's credits); nothing is acquired.
  if (KeyEquals(e.outcome, "rejected") && !s.destinations.at(t->destination)->window_known) return;
  if (!Judge(c, e, t->txn->AcquireCredit(*chunk))) return;
  const handoff::ChunkSpec* spec = t->txn->FindSpec(*chunk);
  CheckInFlight(c, e, *s.destinations.at(t->destination), in_flight, spec ? spec->bytes : 0);
}

void OnSend(TraceChecker& c, const Event& e, ObjReader& p) {
  auto chunk = p.Str("chunk_id");
  if (!p.clean() || !chunk) return;
  TransferState& s = State(c);
  Transfer* t = FindTransfer(c, s, e);
  if (!t) return;
  // Producer gate in trace order: the send follows kv_ready events of the chunk's layer whose
  // intervals together cover its token interval (a chunked prefill announces each slice it
  // produced). Times handed to the transaction are trace line numbers.
  uint64_t ready_at = UINT64_MAX;
  uint64_t uncovered = 0;  // the first token no earlier kv_ready covers
  const RequestReady* known = nullptr;
  if (auto r = s.requests.find(t->request_id); r != s.requests.end()) known = &r->second;
  const handoff::ChunkSpec* spec = t->txn->FindSpec(*chunk);
  if (spec) {
    const uint64_t end = spec->token_start + spec->token_count;  // CheckPlan bounded it
    uint64_t at = spec->token_start;
    uint32_t latest = 0;
    if (known)
      if (auto l = known->layers.find(spec->layer); l != known->layers.end())
        at = FirstNotReady(l->second, at, &latest);
    // Only earlier kv_ready events are known here, so a send fails the gate only when they do
    // not cover its chunk: it is then ready "after" this line.
    ready_at = at >= end ? latest : uint64_t{e.line} + 1;
    uncovered = at;
  }
  Status st = t->txn->Send(*chunk, e.line, ready_at == UINT64_MAX ? 0 : ready_at);
  if (st.error() == ErrorCode::HANDOFF_PRODUCER_GATE && spec)  // said in trace terms
    st = Status(st.code(),
                "chunk " + base::QuoteClipped(*chunk) + " is sent at line " + U(e.line) +
                    ", but the earlier kv_ready events of request " +
                    base::QuoteClipped(t->request_id) + " do not cover layer " + U(spec->layer) +
                    " tokens [" + U(spec->token_start) + "," +
                    U(spec->token_start + spec->token_count) + ") (token " + U(uncovered) +
                    " is not yet ready; the producer gate is judged in trace order" +
                    (known && known->last_ready_ns
                         ? std::string(")")
                         : "; no kv_ready of the request is known: none came before, or they "
                           "came while the request had no open transfer and were forgotten after " +
                               U(s.idle_window) +
                               " other such requests' readiness, docs/trace-format.md \"Memory\")"),
                st.error());
  Judge(c, e, st);
}

void OnReceive(TraceChecker& c, const Event& e, ObjReader& p) {
  auto chunk = p.Str("chunk_id");
  auto checksum = p.Str("checksum");
  auto in_flight = p.OptUint("in_flight_bytes");
  if (!p.clean() || !chunk || !checksum) return;
  TransferState& s = State(c);
  Transfer* t = FindTransfer(c, s, e);
  if (!t) return;
  if (!IsSha256Hex(*checksum)) {
    c.Report(ErrorCode::HANDOFF_DIGEST_MALFORMED, c.LinePtr() + "/payload/checksum",
             "expected a 64-character lowercase hex SHA-256, got " + base::QuoteClipped(*checksum));
    return GateTransfer(c, *e.operation_id);
  }
  if (!Judge(c, e, t->txn->Receive(*chunk, *checksum))) return;
  t->received.try_emplace(*chunk, e.line, *checksum);
  const handoff::ChunkSpec* spec = t->txn->FindSpec(*chunk);
  CheckInFlight(c, e, *s.destinations.at(t->destination), in_flight, spec ? spec->bytes : 0);
}

void OnDeviceVisible(TraceChecker& c, const Event& e, ObjReader& p) {
  auto chunk = p.Str("chunk_id");
  auto in_flight = p.OptUint("in_flight_bytes");
  if (!p.clean() || !chunk) return;
  TransferState& s = State(c);
  Transfer* t = FindTransfer(c, s, e);
  if (!t || !Judge(c, e, t->txn->MarkDeviceVisible(*chunk))) return;
  if (t->txn->all_device_visible() && !t->summary.all_device_visible_ns)
    t->summary.all_device_visible_ns = e.monotonic_ns;
  const handoff::ChunkSpec* spec = t->txn->FindSpec(*chunk);
  CheckInFlight(c, e, *s.destinations.at(t->destination), in_flight, spec ? spec->bytes : 0);
}

// The destination worker's epoch only advances: a transfer step (`what`: "validated",
// "publishes") under an older epoch than one a validation at the destination accepted is stale
// (M5.6 0x01A: a stale completion "can have a valid checksum and still fail the ... worker-epoch
// fence"). OK otherwise.
Status StaleEpoch(const Destination& dest, const Transfer& t, std::string_view transfer_id,
                  std::string_view what, uint64_t epoch) {
  if (!dest.validated_epoch || epoch >= *dest.validated_epoch) return Status();
  return ViolationStatus(ErrorCode::HANDOFF_IDENTITY_MISMATCH,
                         "transfer " + std::string(transfer_id) + " " + std::string(what) +
                             " under epoch " + U(epoch) + " of destination " +
                             base::QuoteClipped(t.destination) + ", which validated under epoch " +
                             U(*dest.validated_epoch) + " at line " + U(dest.validated_epoch_line) +
                             " (a worker epoch only advances)");
}

void OnValidate(TraceChecker& c, const Event& e, ObjReader& p) {
  TransferIdentity expected;
  if (auto id = p.Object("expected_identity")) ReadIdentity(*id, &expected);
  if (!p.clean()) return;
  TransferState& s = State(c);
  Transfer* t = FindTransfer(c, s, e);
  // The destination expects the trace's cache ABI (header cache_abi.id).
  if (!t) return;
  // The destination worker's epoch only advances: a validation expecting an older epoch than
  // one this worker validated under is refused (probe 24 S2), before the transaction is asked
  // (which would move it to VALIDATED).
  Destination& dest = *s.destinations.at(t->destination);
  Status st = StaleEpoch(dest, *t, *e.operation_id, "validated", expected.destination_worker_epoch);
  if (st.ok()) st = t->txn->Validate(expected, c.kv().abi().id);
  if (st.ok() && !KeyEquals(e.outcome, "rejected") &&
      (!dest.validated_epoch || expected.destination_worker_epoch > *dest.validated_epoch)) {
    dest.validated_epoch = expected.destination_worker_epoch;
    dest.validated_epoch_line = e.line;
  }
  // Where the refused fact came from: the receive whose bytes differ, or the two ABI claims.
  std::string context;
  if (st.error() == ErrorCode::HANDOFF_CHECKSUM_MISMATCH) {
    for (const auto& ch : t->txn->plan().chunks)
      if (auto r = t->received.find(ch.chunk_id);
          r != t->received.end() && r->second.second != ch.checksum) {
        context = "(chunk " + base::QuoteClipped(ch.chunk_id) + " was received at line " +
                  U(r->second.first) + "; the manifest is the transfer_plan at line " +
                  U(t->plan_line) + ")";
        break;
      }
  } else if (st.error() == ErrorCode::HANDOFF_ABI_MISMATCH) {
    context = "(the transfer's ABI is payload.tensor_abi_sha256 of the transfer_plan at line " +
              U(t->plan_line) +
              "; the destination's is the trace header's cache_abi.id, which every event of "
              "the trace is bound to)";
  }
  if (Judge(c, e, st, context))
    t->summary.validated_ns = e.monotonic_ns;
  else if (st.error() == ErrorCode::HANDOFF_IDENTITY_MISMATCH && !RefusedAsReported(e, st))
    GateRequest(c, t->request_id);  // the plan's identity, and the fence it reserved, were wrong
}

void OnPublish(TraceChecker& c, const Event& e, ObjReader& p) {
  auto handle_id = p.OptStr("cache_handle_id");
  auto length = p.OptUint("committed_length");
  if (!p.clean()) return;
  TransferState& s = State(c);
  Transfer* t = FindTransfer(c, s, e);
  if (!t) return;
  // The worker-epoch fence holds at publication too: after the destination validated another
  // transfer under a newer epoch, this one's completion is stale (M5.6 0x01A: a stale
  // completion "can have a valid checksum and still fail the ... worker-epoch fence"; probe 40:
  // the fence was checked at validation only, so the stale transfer published and its refusal
  // was TRACE_OUTCOME_INVALID).
  if (const Status stale =
          StaleEpoch(*s.destinations.at(t->destination), *t, *e.operation_id, "publishes",
                     t->txn->plan().identity.destination_worker_epoch);
      !stale.ok()) {
    if (!Judge(c, e, stale) && !KeyEquals(e.outcome, "rejected")) LosePool(s, t->destination);
    return;
  }
  auto h = t->txn->Publish();
  if (!Judge(c, e, h.status())) {
    // A publication the runtime reports done that the replay refused (and aborted, returning its
    // blocks): the runtime's pool holds them decode-owned, so the pool is no longer judged
    // (probe 31: another request's correct refusal of a reservation was TRACE_OUTCOME_INVALID).
    if (!h.ok() && !KeyEquals(e.outcome, "rejected")) LosePool(s, t->destination);
    return;
  }
  if (!t->summary.published_ns) t->summary.published_ns = e.monotonic_ns;
  t->summary.published_committed_length = h->cache_snapshot.committed_length;
  if (handle_id && *handle_id != h->cache_handle_id)
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/payload/cache_handle_id",
             "transfer_publish names destination handle " + base::QuoteClipped(*handle_id) +
                 "; the directory published " + base::QuoteClipped(h->cache_handle_id));
  else if (length && *length != h->cache_snapshot.committed_length)
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/payload/committed_length",
             "transfer_publish reports committed length " + U(*length) +
                 "; the published all-layer destination snapshot has " +
                 U(h->cache_snapshot.committed_length));
  else if (e.result_snapshot && *e.result_snapshot != h->cache_snapshot.version)
    c.Report(ErrorCode::TRACE_SNAPSHOT_MISMATCH, c.LinePtr() + "/result_snapshot",
             "transfer_publish reports snapshot " + U(*e.result_snapshot) +
                 "; the published destination snapshot is version " + U(h->cache_snapshot.version));
}

void OnDecodeAdmit(TraceChecker& c, const Event& e, ObjReader& p) {
  auto generation = p.Uint("generation");
  if (!p.clean() || !generation) return;
  TransferState& s = State(c);
  Transfer* t = FindTransfer(c, s, e);
  if (!t) return;
  // Decode is admitted from the directory's handle for (request, the generation named here).
  const std::optional<PublishedHandle>& published = t->txn->published();
  PublishedHandle want = published.value_or(PublishedHandle{});
  want.request_id = t->request_id;
  want.generation = *generation;
  if (!published) want.transfer_id = *e.operation_id;
  Judge(c, e, t->txn->AdmitDecode(want));
}

void OnSourceRelease(TraceChecker& c, const Event& e, ObjReader& p) {
  auto generation = p.Uint("generation");
  if (!p.clean() || !generation) return;
  TransferState& s = State(c);
  if (Transfer* t = FindTransfer(c, s, e))
    Judge(c, e, t->txn->AcknowledgeSourceRelease(*generation));
}

// The decode side released the published cache (its M5.1 lifecycle finished with it): the
// directory releases the handle, and the reserved blocks return to the destination's pool.
void OnDecodeRelease(TraceChecker& c, const Event& e, ObjReader& p) {
  auto generation = p.Uint("generation");
  if (!p.clean() || !generation) return;
  TransferState& s = State(c);
  Transfer* t = FindTransfer(c, s, e);
  if (!t) return;
  const Status st = t->txn->ReleaseDecode(*generation);
  // A breach gates the transfer, which frees what its publication holds (GateTransfer). A release
  // the runtime reports refused but the replay performed leaves the runtime's pool holding blocks
  // the replay's does not: its refusals there are no longer judged.
  if (!Judge(c, e, st) && st.ok()) LosePool(s, t->destination);
}

void OnAbort(TraceChecker& c, const Event& e, ObjReader& p) {
  auto reason = p.Str("reason");
  if (!p.clean() || !reason) return;
  TransferState& s = State(c);
  if (Transfer* t = FindTransfer(c, s, e)) Judge(c, e, t->txn->Abort(*reason));
}

// Runs `Handle` on an event of a transfer, then counts the transfer open or closed for its
// request (TransferState::SyncOpen).
template <void (*Handle)(TraceChecker&, const Event&, ObjReader&)>
void Tracked(TraceChecker& c, const Event& e, ObjReader& p) {
  Handle(c, e, p);
  if (e.operation_id)
    if (CheckerExtension* x = c.extension(kSlot))
      static_cast<TransferState&>(*x).SyncOpen(*e.operation_id);
}

// A transfer event other than transfer_publish produces no snapshot: a result_snapshot on it has
// no right value, as on the semantic plane's appends (NoSnapshotProduced; since 2026-12-06,
// probe 85: any number passed on transfer_validate and the others).
template <void (*Handle)(TraceChecker&, const Event&, ObjReader&)>
void NoResult(TraceChecker& c, const Event& e, ObjReader& p) {
  Handle(c, e, p);
  NoSnapshotProduced(c, e);
}

constexpr EventTypeSpec kRows[] = {
    // Declarations (a destination, a prefix it holds, the producer's readiness, a plan) state
    // what is: success is their only outcome. A failed handoff is recorded as transfer_abort.
    {"transfer_destination", Plane::kTransfer, false, false, false, &NoResult<&OnDestination>,
     nullptr, &GateDestination, kOutcomeSuccess},
    {"destination_prefix", Plane::kTransfer, false, false, false, &NoResult<&OnDestinationPrefix>,
     nullptr, &GateDestinationPrefix, kOutcomeSuccess},
    {"kv_ready", Plane::kTransfer, false, false, false, &NoResult<&OnKvReady>, nullptr, nullptr,
     kOutcomeSuccess},
    {"transfer_plan", Plane::kTransfer, false, true, false, &NoResult<&Tracked<&OnPlan>>, nullptr,
     &GatePlan, kOutcomeSuccess},
    {"transfer_reserve", Plane::kTransfer, false, true, false, &NoResult<&Tracked<&OnReserve>>},
    {"chunk_credit_acquire", Plane::kTransfer, false, true, false,
     &NoResult<&Tracked<&OnCreditAcquire>>},
    {"chunk_send", Plane::kTransfer, false, true, false, &NoResult<&Tracked<&OnSend>>},
    {"chunk_receive", Plane::kTransfer, false, true, false, &NoResult<&Tracked<&OnReceive>>},
    {"chunk_device_visible", Plane::kTransfer, false, true, false,
     &NoResult<&Tracked<&OnDeviceVisible>>},
    {"transfer_validate", Plane::kTransfer, false, true, false, &NoResult<&Tracked<&OnValidate>>},
    {"transfer_publish", Plane::kTransfer, false, true, false, &Tracked<&OnPublish>},
    {"decode_admit", Plane::kTransfer, false, true, false, &NoResult<&Tracked<&OnDecodeAdmit>>},
    {"source_release_ack", Plane::kTransfer, false, true, false,
     &NoResult<&Tracked<&OnSourceRelease>>},
    {"decode_release", Plane::kTransfer, false, true, false, &NoResult<&Tracked<&OnDecodeRelease>>},
    {"transfer_abort", Plane::kTransfer, false, true, false, &NoResult<&Tracked<&OnAbort>>},
};

}  // namespace

Status RegisterTransferEventTypes() {
  static std::once_flag once;
  static Status result;
  std::call_once(once, [] {
    for (const EventTypeSpec& row : kRows) {
      Status s = RegisterEventType(row);
      if (!s.ok() && result.ok()) result = s;
    }
  });
  return result;
}

std::optional<std::string> TransferRequest(const TraceChecker& c, std::string_view transfer_id) {
  const auto* s = static_cast<const TransferState*>(c.extension(kSlot));
  if (!s) return std::nullopt;
  auto it = s->transfers.find(transfer_id);
  if (it == s->transfers.end()) return std::nullopt;
  return it->second.request_id;
}

std::optional<TransferReplaySummary> SummarizeTransfer(const TraceChecker& c,
                                                       std::string_view transfer_id) {
  const auto* s = static_cast<const TransferState*>(c.extension(kSlot));
  if (!s) return std::nullopt;
  auto it = s->transfers.find(transfer_id);
  if (it == s->transfers.end() || !it->second.txn) return std::nullopt;
  const Transfer& t = it->second;
  TransferReplaySummary out = t.summary;
  const Destination& d = *s->destinations.at(t.destination);
  out.state = std::string(handoff::TxnStateName(t.txn->state()));
  out.peak_in_flight_bytes = d.credits.high_water();
  out.credits_in_flight_at_end = d.credits.in_flight();
  out.unpublished_blocks_at_end = d.pool.unpublished();
  out.retries = t.txn->retries();
  // (kv_ready names only layers of the ABI, the plan's layers.)
  if (auto r = s->requests.find(t.request_id); r != s->requests.end())
    out.last_layer_ready_ns = r->second.last_ready_ns;
  return out;
}

TransferRecords TransferFootprint(const TraceChecker& c) {
  TransferRecords out;
  const auto* s = static_cast<const TransferState*>(c.extension(kSlot));
  if (!s) return out;
  out.transfers = s->transfers.size();
  out.finished = s->finished.size();
  out.forgotten = s->forgotten;
  out.directory_requests = s->directory.request_count();
  out.destination_handles = s->directory.cache().handle_count();
  out.destination_txns = s->directory.cache().txn_count();
  out.ready_requests = s->requests.size();
  for (const auto& [id, r] : s->requests)
    for (const auto& [layer, cover] : r.layers) out.ready_intervals += cover.size();
  return out;
}

}  // namespace kvc::trace
