// The streaming checker of kvconform.trace/1 traces (docs/trace-format.md).
//
// TraceChecker replays one trace, line by line, through the reference state machines: the
// lifecycle KvObject (reference/lifecycle/), the per-request output/cache FrontierState
// (reference/frontier/) and the audit-stream rules of M5.1 0x07 (source-local sequence and
// clocks, event-id identity, causal observations, plane separation). It reports every violation
// with its registry code, line, event_id and request, in trace order.
//
// Streaming: Feed()/FeedPadded() take one line at a time, FeedPaddedBatch() a few consecutive
// lines (CheckTraceFile reads 1 MiB blocks and parses batches of 16 lines in place). Memory follows
// live handles: per-request event indexes and operation records are dropped at release (keeping the
// terminal events), final transaction records of released handles are forgotten
// CheckerOptions::receipt_window releases after their release, and only the last
// CheckerOptions::released_window released requests keep a tombstone (older ones are forgotten:
// events naming them see an unknown request). Per source: a 32-event window for duplicate delivery.
// What grows with the number of violations is the report (and the poisoned ids of gating).
// docs/trace-format.md "Memory" states the bound. Hot path: a conforming envelope is read in one
// pass (ReadEnvelopeFast); anything unusual goes through the general ObjReader, which produces
// every message. Handlers read payloads through ObjReader (unchanged interface for rows added with
// RegisterEventType); the hot event types also have a one-pass payload reader (EventTypeSpec::fast)
// that replays through the same code. Event-type dispatch is table-driven (EventTypeSpec); later
// parts of the kit (M5.6 transfer events) add rows with RegisterEventType() before checking starts.
// Thread safety: none; one checker per trace.
#ifndef KVCONFORM_REFERENCE_TRACE_CHECKER_H_
#define KVCONFORM_REFERENCE_TRACE_CHECKER_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "reference/base/stable_string_map.h"
#include "reference/base/status.h"
#include "reference/base/text_forms.h"
#include "reference/frontier/frontier.h"
#include "reference/lifecycle/kv_object/kv_object.h"
#include "reference/trace/event_index.h"
#include "reference/trace/runtime_binding.h"
#include "reference/validate/violation.h"

namespace simdjson::dom {
class element;
class object;
}  // namespace simdjson::dom

namespace kvc::trace {

// What one listed violation keeps of a quoted id: a pointer's limit (its pointer and message are
// clipped by ForReport, violation.h, as validate's are).
inline constexpr size_t kMaxReportedIdBytes = kMaxReportedPointerBytes;

// `s` for a message, cut to its first `max` bytes and its length when longer (an id quoted from
// the trace: probe 41, a 2 MB caused_by_event_id made a 2 MB report line). The cut is moved back
// to the start of a UTF-8 sequence (at most 3 bytes), so a well-formed string stays well-formed
// (probe 84: an emoji cut after its first byte read as invalid UTF-8 in every report;
// base::Clipped).
inline std::string Clip(std::string_view s, size_t max = 128) { return base::Clipped(s, max); }

// Byte equality of `k` and the literal `lit` without a library call: fixed-size, possibly
// overlapping 4- and 8-byte loads (the hot path compares every member name this way).
template <size_t N>
inline bool KeyEquals(std::string_view k, const char (&lit)[N]) {
  constexpr size_t n = N - 1;
  if (k.size() != n) return false;
  const char* p = k.data();
  auto eq = [&](size_t off, size_t w) {
    uint64_t a = 0, b = 0;
    std::memcpy(&a, p + off, w);
    std::memcpy(&b, lit + off, w);
    return a == b;
  };
  if constexpr (n == 0) {
    return true;
  } else if constexpr (n < 4) {
    return std::memcmp(p, lit, n) == 0;
  } else if constexpr (n <= 8) {
    return eq(0, 4) && eq(n - 4, 4);
  } else if constexpr (n <= 16) {
    return eq(0, 8) && eq(n - 8, 8);
  } else if constexpr (n <= 24) {
    return eq(0, 8) && eq(8, 8) && eq(n - 8, 8);
  } else {
    return std::memcmp(p, lit, n) == 0;
  }
}

// The byte comparisons and the id-map equality of lifecycle (kv_object.h), shared.
using lifecycle::SameBytes;
using lifecycle::StringEq;

inline constexpr const char* kTraceKind = "kvconform.trace/1";
// The kind of the optional end record, the trace's last line (trace-format.md "End record").
inline constexpr const char* kTraceEndKind = "kvconform.trace_end/1";
inline constexpr uint64_t kTraceSchemaVersion = 1;

// Which state plane an event type belongs to (M5.1 0x07 "Five State Planes").
enum class Plane : uint8_t { kSemantic, kAllocator, kResidency, kTransfer };
std::string_view PlaneComponent(Plane p);  // "semantic", "allocator", "residency", "transfer"
bool IsPlaneComponent(std::string_view component);  // one of PlaneComponent's names

class TraceChecker;
class ObjReader;

// Per-checker state of an extension that registers event types (the M5.6 transfer plane keeps
// its transactions here). Owned by the checker (created by the extension's handlers on first
// use through TraceChecker::SetExtension, destroyed with the checker); not thread-safe.
class CheckerExtension {
 public:
  virtual ~CheckerExtension() = default;
  // End of trace, when the header was usable: report what the extension left unterminated
  // (with TraceChecker::ReportAt).
  virtual void Finish(TraceChecker& c) = 0;
};

// A fast 64-bit hash of bytes (duplicate-delivery identity of lines and event ids; not
// cryptographic, not stable across kvconform versions).
uint64_t LineHash(std::string_view bytes);

// The envelope of one event (RuntimeMutationEvent of M5.1 0x07), read before dispatch.
// Lifetime: the string members view the bytes of the event's own line as parsed (or the
// checker's copies of them when the general reader read the envelope) and are valid while the
// event is replayed, i.e. until the checker reads the next line. A handler that keeps a name
// beyond its event copies it (std::string).
struct Event {
  uint32_t line = 0;
  std::string_view event_id;
  std::string_view source_instance;
  std::string_view source_component;
  uint64_t local_sequence = 0;
  uint64_t monotonic_ns = 0;
  std::optional<std::string_view> request_id;
  std::optional<uint64_t> handle_generation;
  std::optional<std::string_view> operation_id;
  std::string_view event_type;
  std::optional<uint64_t> base_snapshot;
  std::optional<uint64_t> result_snapshot;
  std::string_view outcome = "success";  // "success" when absent/null
  bool has_trace_id = false;  // a non-empty trace_id member is present
  // The event's line as read (its duplicate-delivery identity), valid like the views above.
  std::string_view text;
  // LineHash(text), computed on first use: only events that enter the request's event index, or
  // meet an indexed event with their id, need it.
  uint64_t content_hash() const {
    if (!content_hash_known_) {
      content_hash_ = LineHash(text);
      content_hash_known_ = true;
    }
    return content_hash_;
  }
  // Sets `text` and forgets the hash of the previous line.
  void SetText(std::string_view t) {
    text = t;
    content_hash_known_ = false;
  }

 private:
  mutable uint64_t content_hash_ = 0;
  mutable bool content_hash_known_ = false;
};

// The outcomes an event may carry (Event::outcome; an absent outcome is "success"), as bits of
// EventTypeSpec::outcomes.
enum OutcomeBit : uint8_t {
  kOutcomeSuccess = 1,
  kOutcomeReplayed = 2,
  kOutcomeRejected = 4,
  kOutcomeFailure = 8,
  kOutcomeCancelled = 16,
};
inline constexpr uint8_t kSuccessOrRejected = kOutcomeSuccess | kOutcomeRejected;
// The bit of an outcome string (0 for none of the five).
uint8_t OutcomeBitOf(std::string_view outcome);

// One row of the dispatch table.
struct EventTypeSpec {
  std::string_view name;
  Plane plane;
  bool needs_request;    // request_id + handle_generation required
  bool needs_operation;  // operation_id required
  bool indexed;          // may be named by an observation's caused_by_event_id
  // Replays the event; `payload` reads the event's payload object (the handler must read
  // every field it allows, then the checker rejects the rest).
  void (*handle)(TraceChecker& c, const Event& e, ObjReader& payload);
  // Optional one-pass reader of a conforming payload (the hot path): replays the event and
  // returns true, or returns false having reported and changed nothing (anything unusual), and
  // the checker then runs `handle`. Both must replay through the same code.
  bool (*fast)(TraceChecker& c, const Event& e, const simdjson::dom::object& payload) = nullptr;
  // Optional: what a dropped event of this type would have created and later events name (a
  // fork's children, a transfer destination) is gated through TraceChecker::Poison, so those
  // events are not reported again (docs/trace-format.md "Gating"). `sure` is false when the
  // dropped event's type is unknown and every row's gate is tried: a row then gates only the
  // names it can read from `payload`.
  void (*gate)(TraceChecker& c, const simdjson::dom::element& payload, bool sure) = nullptr;
  // The outcomes the type admits (OutcomeBit). Any other is TRACE_OUTCOME_INVALID and the event
  // is dropped before its handler runs (what it did is unknown).
  uint8_t outcomes = kSuccessOrRejected;
};

// The built-in table plus registered rows. RegisterEventType fails on a duplicate name.
const std::vector<EventTypeSpec>& EventTypes();
Status RegisterEventType(const EventTypeSpec& spec);
const EventTypeSpec* FindEventType(std::string_view name);

// Reads one JSON object from a simdjson DOM, reporting INPUT_* violations (with the checker's
// current line) for missing, mistyped, out-of-range and unknown members and duplicate keys.
class ObjReader {
 public:
  ObjReader(const simdjson::dom::object& obj, std::string pointer, TraceChecker* c);
  // The reader of a member of the current line's event: its pointer is c->LinePtr() +
  // `line_suffix` (a literal, e.g. "/payload"), built only when a report or pointer() needs it.
  ObjReader(const simdjson::dom::object& obj, TraceChecker* c, std::string_view line_suffix);
  ~ObjReader();
  ObjReader(const ObjReader&) = delete;
  ObjReader& operator=(const ObjReader&) = delete;

  const std::string& pointer() const;
  std::string Ptr(std::string_view key) const;
  bool Has(std::string_view key) const;
  // True when nothing was reported through this reader or a reader of one of its nested objects
  // (Object, ObjectArray: since 2026-12-04, probe 13, a mistyped member of a nested identity left
  // the payload clean, so it was replayed with a default value and raised a second code).
  bool clean() const { return clean_; }

  std::optional<std::string> Str(std::string_view key);
  std::optional<std::string> OptStr(std::string_view key);  // absent or null -> nullopt
  // Str (OptStr when `optional`), and an empty string is INPUT_VALUE_INVALID (-> nullopt): an
  // identity or provenance string names something (probe 88: "" passed as an event_id).
  std::optional<std::string> NonEmptyStr(std::string_view key, bool optional = false);
  std::optional<uint64_t> Uint(std::string_view key, uint64_t max = UINT64_MAX);
  std::optional<uint64_t> OptUint(std::string_view key, uint64_t max = UINT64_MAX);
  std::optional<bool> OptBool(std::string_view key);  // absent or null -> nullopt
  std::optional<std::string> Enum(std::string_view key, std::initializer_list<std::string_view> allowed,
                                  bool optional = false);
  // [start, end) as a two-element array with start <= end.
  // [start, end) with start <= end; a reversed interval is `reversed` (INPUT_VALUE_OUT_OF_RANGE
  // unless the event's plane registers its own code for it).
  std::optional<std::pair<uint64_t, uint64_t>> Range(
      std::string_view key, ErrorCode reversed = ErrorCode::INPUT_VALUE_OUT_OF_RANGE);
  std::optional<std::vector<uint64_t>> UintArray(std::string_view key, bool optional);
  // Present and null (an optional member that is null is the same as an absent one).
  bool IsNull(std::string_view key) const;
  // Array of objects: calls fn(reader) for each element. With `errors_mark_parent` (payloads), a
  // bad element makes this reader unclean too; the header's informational arrays pass false
  // (as Object).
  bool ObjectArray(std::string_view key, const std::function<void(ObjReader&)>& fn,
                   bool errors_mark_parent = true);
  // The reader of an object member. With `errors_mark_parent` (payloads), a bad member of it makes
  // this reader unclean too; the header's informational objects pass false: their errors are
  // reported and the replay goes on (probe 14: propagating them stopped the whole replay).
  std::unique_ptr<ObjReader> Object(std::string_view key, bool errors_mark_parent = true);
  void Allow(std::string_view key);
  // Reports keys never read/allowed (INPUT_FIELD_UNKNOWN). `plane_keys` are reported as
  // TRACE_PLANE_MIXED instead (allocator/residency facts inside a semantic event).
  void RejectUnknown(bool semantic_plane = false);

 private:
  friend class TraceChecker;  // reads the envelope's payload element once
  struct Impl;
  static std::unique_ptr<Impl> TakeImpl();  // a reset Impl, reused when one is spare
  static std::vector<std::unique_ptr<Impl>>& SpareImpls();
  const simdjson::dom::element* Get(std::string_view key, bool required);
  [[gnu::cold]] void Bad(ErrorCode code, std::string_view key, std::string msg);
  void MarkUnclean();  // this reader and the readers it is nested in
  void Index(const simdjson::dom::object& obj);
  std::unique_ptr<Impl> impl_;
  mutable std::string pointer_;
  mutable bool pointer_built_ = true;
  std::string_view line_suffix_;  // when !pointer_built_: pointer_ is LinePtr() + line_suffix_
  TraceChecker* c_;
  ObjReader* parent_ = nullptr;  // the reader of the enclosing object (Object, ObjectArray)
  bool clean_ = true;
};

struct CheckerOptions {
  // 0: every violation is kept. Otherwise the first max_violations are kept and the rest only
  // counted (TraceChecker::omitted_violations()): the report's memory is bounded on a trace
  // that is wrong on every line (10 million bad lines are ~3.4 GB of violations).
  uint64_t max_violations = 0;
  // A released request's final transaction records (the receipts a late retry gets back, M5.1
  // 0x01) are kept until this many further requests have been released, then forgotten
  // (KvObject::ForgetFinalTxnsOf; a retry after that is judged as never started). Counted from
  // the request's own release, so a verdict never depends on unrelated releases before it;
  // per incarnation: an id allocated again keeps only the receipts of its incarnations
  // released within the window. See docs/trace-format.md "Memory".
  size_t receipt_window = 64;
  // Released requests remembered (tombstone, terminal events); the oldest beyond this many
  // releases is forgotten (KvObject::ForgetReleased), see docs/trace-format.md "Memory".
  // The transfer plane uses this window twice (transfer_events.cc): it keeps the kv_ready
  // readiness of this many requests without an open transfer, and the records of the last this
  // many finished (PUBLISHED or ABORTED) transfers; an older finished transfer is forgotten
  // with its destination handle (and its request's generation fence once no transfer of the
  // request is kept), so a later event naming it is HANDOFF_TRANSFER_UNKNOWN. At least 1.
  size_t released_window = 4096;
  // The memory the gates may hold (their keys, about 100 B each beside the id): gates follow
  // violations, each root cause gating its request or operation, so a trace of many broken
  // requests (events of requests never allocated, a recording started mid-flight) would grow
  // them with its length (probe 43). Past the budget a new gate is not kept: the later events
  // of that root cause are replayed and may raise more codes (counted past max_violations),
  // and gates_not_kept() counts them. docs/trace-format.md "Memory".
  size_t gate_bytes = size_t{64} << 20;
  // The longest line replayed, in bytes without its '\n' (1 to kMaxLineBytesLimit). A longer
  // line is read through but not held or parsed: TRACE_LINE_TOO_LONG (FeedOverlongLine), so a
  // line's memory (about 22 times its length while parsed, docs/trace-format.md "File") stays
  // bounded whatever the input. The default holds any event and a header that lists the
  // expected final states of some 300,000 requests.
  uint64_t max_line_bytes = uint64_t{64} << 20;
  // Use the one-pass envelope reader (ReadEnvelopeFast) and payload readers
  // (EventTypeSpec::fast) where a type has one. false reads every envelope and payload with the
  // general reader (tests compare the two paths with it).
  bool fast_readers = true;
  // Judge a transfer_plan's identity rules against its request's kept attempts through their
  // index (transfer_events.cc MayBreakIdentityRules), scanning them only when a rule may be
  // broken. false scans them at every plan (tests compare the two paths with it).
  bool transfer_identity_index = true;
  // A hint, no effect on any result: when most events of a batch named another request than
  // the event before (a continuous-batching engine's order, `gen-trace --order step`) and at
  // least this many requests are live, the next batch's request, handle and operation records
  // are loaded into the cache before it is replayed, so that their misses overlap
  // (FeedPaddedBatch). Below the threshold the records are likely cached and the pass only
  // costs time (measured: docs/trace-check-performance.md, thirty-seventh round). 0: whenever the
  // order asks for it; SIZE_MAX: never (tests compare the two).
  size_t prefetch_from_live_requests = 4096;
};

class TraceChecker {
 public:
  explicit TraceChecker(std::string source, CheckerOptions opt = {});
  ~TraceChecker();

  // Feeds one line without its '\n'. `line_no` is 1-based; line 1 must be the header.
  void Feed(std::string_view line, uint32_t line_no);
  // Feed() without the copy: `line` must be followed by at least simdjson::SIMDJSON_PADDING (64)
  // readable bytes (their content does not matter), as CheckTraceFile's block buffer is.
  void FeedPadded(std::string_view line, uint32_t line_no);
  // FeedPadded() of `n` consecutive lines numbered first_line_no, first_line_no + 1, ...: the
  // same violations in the same order, but every line is parsed before the first is replayed
  // (the parser's code and the replay's code each stay in the instruction cache across the
  // batch). Each line must stay readable, with its padding, until the call returns; at most
  // kMaxBatch lines of at most kMaxBatchLine bytes each (longer lines go through FeedPadded).
  static constexpr size_t kMaxBatch = 16;
  static constexpr size_t kMaxBatchLine = size_t{64} << 10;
  void FeedPaddedBatch(const std::string_view* lines, size_t n, uint32_t first_line_no);
  // A line of `bytes` bytes, more than CheckerOptions::max_line_bytes, that was not held:
  // TRACE_LINE_TOO_LONG, the line not replayed (the header: none is). `prefix` is its first
  // bytes; of them the first kOverlongPrefixBytes are read, and its event_id and request_id are
  // named when they are plain top-level strings there, its request gated as for any line not
  // replayed. A reader that does not hold the line keeps that many of its bytes.
  static constexpr size_t kOverlongPrefixBytes = size_t{64} << 10;
  void FeedOverlongLine(uint32_t line_no, uint64_t bytes, std::string_view prefix);
  // Ends the trace: `ended_mid_line` when the input's last line had no final newline (that
  // line must not be fed). Reports unterminated operations. Returns all violations.
  // `cut_line_has_cr`: the cut line holds a CR byte (its report says CR-only line ends are not
  // line ends).
  const Violations& Finish(bool ended_mid_line, bool cut_line_has_cr = false);

  const Violations& violations() const { return violations_; }
  // Violations found beyond CheckerOptions::max_violations: counted, not kept.
  uint64_t omitted_violations() const { return omitted_; }
  // Parallel to violations(): the event and request each violation was found on ("" if none).
  struct Context {
    std::string event_id;
    std::string request_id;
  };
  const std::vector<Context>& contexts() const { return contexts_; }
  uint64_t events() const { return events_; }  // event lines read (not the end record)
  // Events whose payload the one-pass reader of their type replayed (the rest went through
  // ObjReader).
  uint64_t fast_payloads() const { return fast_payloads_; }
  bool header_ok() const { return header_ok_; }
  // A source's duplicate window keeps lines of up to this many bytes whole and longer ones as
  // their LineHash (SourceState).
  static constexpr size_t kWindowLineLimit = 4096;

  // ---- For event handlers (table rows). ----
  using EventInfo = trace::EventInfo;
  struct Request {
    frontier::FrontierState frontier{0};
    // This incarnation's events that observations may name as a cause (allocate, publish,
    // fork, truncate, finish, release, cancel_request); cleared at release but for the
    // terminal events (event_index.h).
    EventIndex events;
    std::vector<base::IdString> op_ids;  // append operations started on this incarnation
    // The latest published append operation and its call: a retry of it (the usual retry, of
    // a lost acknowledgement) must re-send the same call (its Op is gone).
    base::IdString last_published_op;
    frontier::AppendCall last_published_call;
    // The output frontier was still followed (no breach reported) when the request was
    // released (release stops following it): a retry after the release is judged on its token
    // as before it (probe 29: a changed input_token passed after release).
    bool frontier_followed_at_release = false;
    // The byte claims of this incarnation's appends (pending_payload_bytes,
    // staged_payload_bytes) are compared: the first wrong one is reported and clears this, so a
    // wrong B_token is one code per request, and the replay goes on (the rows are the replay's;
    // until 2026-12-07 the wrong claim dropped its event and gated the request, hiding its
    // later violations: the doc audit's D3).
    bool byte_claims_followed = true;
    // The lowest handle generation this request id has had here (kept across re-allocation):
    // an event aimed at a generation below it names an incarnation that never existed.
    uint64_t first_generation = UINT64_MAX;
    // The handle generation this incarnation was allocated at.
    uint64_t generation = 0;
    // The generations no incarnation of this id ever had above first_generation: [lo, hi) when
    // a released id was allocated again past its tombstone's generation (kept across
    // re-allocation; the last kMaxGenerationGaps, an older gap is forgotten). An event aimed at
    // one names an incarnation that never existed, as one below first_generation does.
    static constexpr size_t kMaxGenerationGaps = 16;
    std::vector<std::pair<uint64_t, uint64_t>> generation_gaps;
    // `g` was never the generation of an incarnation of this id (below first_generation, or in
    // a gap). Generations above the live one are the caller's to judge.
    bool NeverHad(uint64_t g) const {
      if (g < first_generation) return true;
      for (const auto& [lo, hi] : generation_gaps)
        if (g >= lo && g < hi) return true;
      return false;
    }
    // The handle generations of gated incarnations that a later allocation retired
    // (LiftGateForNewIncarnation; kept across re-allocation): their late semantic and
    // observation events are skipped, as the gate skipped them, without a code. One per lift
    // (each follows a reported violation); the last kMaxRetired (an older one is forgotten, and
    // its late events are judged: probe 60, one id gated and re-allocated 1,000,000 times grew
    // by 24 MB).
    static constexpr size_t kMaxRetired = 16;
    std::set<uint64_t> retired;
    // The observers (source_instance, line) that saw this incarnation's storage freed after its
    // release (0 resident bytes, or an all-zero allocator observation, naming the release): a
    // later observation of the same source cannot see the rows held again (within a source,
    // lines follow local_sequence; probe 41: bytes reappeared after the free and passed).
    // Source -> line: one lookup per observation (probe 60: a list scanned per observation made
    // 160,000 observer sources take 32 s).
    std::map<std::string, uint32_t, std::less<>> freed_by;
    // The latest truncate that removed rows: the committed length before and after it (0, 0
    // before any); a read's mismatch message names it.
    uint64_t truncated_from = 0;
    uint64_t truncated_to = 0;
    // This incarnation was gated and retired at its skipped release (RetireGated): forgetting
    // its tombstone lifts its gate.
    bool gate_retired_at_release = false;
  };
  struct Op {
    base::IdString request_id;
    frontier::AppendCall call;
    uint64_t base_version = 0;
    uint32_t start_line = 0;
    base::IdString start_event_id;
    // The line of the record that closed the operation: an append_failure, a cancel_txn or a
    // publication refused as a lost compare-and-publish (0: none yet).
    uint32_t closed_line = 0;
  };

  lifecycle::KvObject& kv() { return *kv_; }
  // Transaction records the lifecycle object holds (live requests' and the receipt windows';
  // docs/trace-format.md "Memory"); for memory-bound tests.
  size_t transaction_records() const;
  // Sources holding a duplicate-delivery window (those that sent a kept event); for memory-bound
  // tests.
  size_t source_windows() const;
  // Batches whose records PrefetchBatchRecords loaded
  // (CheckerOptions::prefetch_from_live_requests); for tests.
  uint64_t prefetched_batches() const { return prefetched_batches_; }
  // Whether an event with this id is among the last events of some source's duplicate window
  // (SourceState::kRecent per source; a hash match): the trace holds it, recently. A cold-path
  // question (an observation naming a cause its request does not keep).
  bool RecentlyHeldEvent(std::string_view event_id) const;
  uint64_t bytes_per_token() const { return bytes_per_token_; }
  const CheckerOptions& options() const { return opt_; }
  // The header's optional conversion model between the allocator and semantic planes (M5.1
  // 0x07 "Five State Planes": compatible, not equal, until a model is declared). 0 / false when
  // the header declares none.
  uint64_t allocator_slots_per_block() const { return allocator_slots_per_block_; }
  bool allocator_used_slots_are_committed_rows() const { return allocator_used_committed_; }
  // The header's residency_model: "one_copy" (the default, M5.1 0x07's Loop 8 observer: each
  // observation sees the request's whole committed payload, one copy, in its tier) or
  // "tiered" (tiers may split the payload or hold copies: bytes are not compared with rows).
  bool residency_is_one_copy() const { return residency_one_copy_; }
  // Records a violation at the current line.
  // Report, ReportStatus and ReportAt are cold: a conforming trace never calls them, and the
  // compiler moves the paths that build their messages out of the hot code.
  [[gnu::cold]] void Report(ErrorCode code, std::string pointer, std::string message);
  // Reports a failed Status: its registry code, or INPUT_VALUE_INVALID for plain errors.
  [[gnu::cold]] void ReportStatus(const Status& s, std::string pointer);
  Request* FindRequest(std::string_view id);
  // kv().Find(id) with a one-entry memo (an event looks its handle up several times); the
  // same pointer validity as KvObject::Find.
  const lifecycle::HandleRecord* FindHandle(std::string_view id);
  // A fresh Request for a new incarnation of `id` (allocated at `generation`, or a fork child
  // at 0); what the id's earlier incarnation kept is dropped but its first generation.
  Request& NewRequest(const std::string& id, uint64_t prompt_length, uint64_t generation);
  Op* FindOp(std::string_view id);
  Op& NewOp(std::string_view id);
  void EraseOp(std::string_view id);
  // EraseOp(id) when the operation is `request`'s (an id may have been started again by
  // another request once the first one's records were forgotten).
  void EraseOpOf(std::string_view id, std::string_view request);
  // The snapshot version append operation `id` started on (its append_start's base_snapshot),
  // nullopt when unknown. From the op record while the operation has one; the record of a
  // published operation is dropped at publication (DropPublishedOp: memory per append), and
  // its base is then the version its publication replaced, result.version - 1
  // (compare-and-publish admits only the snapshot the operation began on, and an append
  // advances the version by one), for a publication of the live incarnation of its request
  // (the records of a released incarnation were dropped at release, as before), or for an
  // event that names the publication's own incarnation (`named_incarnation`: a retry of a kept
  // receipt after the id was allocated again, IsRetryOfKeptReceipt).
  std::optional<uint64_t> OpBaseVersion(std::string_view id,
                                        std::optional<uint64_t> named_incarnation = std::nullopt);
  // After the first publication of `id`: drops its op record and its entry in op_ids.
  void DropPublishedOp(std::string_view id);
  // Gates are keyed by kind: "op:" + an operation id (IsPoisonedOp, PoisonOp), "request:" + a
  // request id, "transfer:" + a transfer id, and the transfer plane's declaration gates. Ids from
  // the trace never name a gate of another kind (an operation id "request:B" gates operation
  // "request:B", not request B).
  bool IsPoisoned(std::string_view key) const;
  bool IsPoisonedOp(std::string_view op_id) const;
  // How many gates are set (memory: gates follow violations, docs/trace-format.md "Memory").
  size_t poisoned_count() const { return poisoned_.size(); }
  // Operations of dropped events whose next event names the request to gate (within the gates'
  // budget); for memory-bound tests.
  size_t dropped_operations() const { return dropped_ops_.size(); }
  // Gates not kept because CheckerOptions::gate_bytes was spent.
  uint64_t gates_not_kept() const { return gates_not_kept_; }
  // `e` retries (outcome replayed) an append_start or append_publish whose transaction record,
  // opened on the incarnation `e` names, is still kept: M5.1 0x01 "an old receipt can still be
  // returned after the live handle has advanced or been released", so the handle generation
  // fence lets it through to its handler even after the id was allocated again.
  bool IsRetryOfKeptReceipt(const Event& e) const;
  // `e` is a later event of an append operation (a stage, publication, failure or cancel_txn)
  // that names another request than the one whose append_start opened the operation, while its
  // handle_generation is the opener's live one: the request_id is the one field wrong, so the
  // generation fence lets it through to TRACE_OPERATION_REQUEST_MISMATCH (probe 45: the fence
  // blamed the correct handle_generation).
  bool NamesAnotherRequestsOperation(const Event& e);
  // The request that opened append operation `op_id`: its transaction's handle, or, for an
  // operation kept past its request's release whose transaction the receipt window forgot,
  // the operation's record (probe 21); nullptr when neither is known. Valid until the next
  // event.
  const base::IdString* OperationOwner(std::string_view op_id);
  // Whether the events of request `id` are gated: the request was gated, or it does not exist and
  // a dropped fork whose children could not be read may have been meant to create it.
  bool IsGatedRequest(std::string_view id);
  // A request_allocate `e` of a gated request (its own gate, not the wildcard) that names a
  // later handle generation than the gated incarnation's, and that the runtime did not refuse:
  // that incarnation is retired in the replay (cancelled and released) and the gate lifted, so
  // the new incarnation is judged afresh (a gate is a fact about one incarnation's unknown
  // state). Not for a request the transfer plane keeps transfers of (its fence and holdings
  // there stay unknown). False, changing nothing, otherwise.
  bool LiftGateForNewIncarnation(const Event& e);
  // The skipped `release` (not refused) of a gated request's live incarnation: the runtime freed
  // it, so the replay retires it as LiftGateForNewIncarnation does (cancelled, released, in the
  // released window), so that its records are forgotten with the window, its gate with them;
  // until then its later events stay skipped (probe 76: gated requests whose release was
  // skipped were never freed, 1.75 KB each, 290 MB for 160,000 of them).
  void RetireGated(const Event& e);
  // Retires the live (not released) incarnation of `request_id` in the replay: cancelled if
  // still DECODE_READY, released, entered in the released window. False, changing nothing the
  // lifecycle object refused, when it cannot.
  bool RetireLive(std::string_view request_id);
  void Poison(const std::string& key);
  void PoisonOp(std::string_view op_id);
  // Gating of an event that is not replayed although the runtime reports it took effect (its
  // type, envelope or payload is unusable, or the contract refuses it): the checker's state of
  // its operation and of its request is no longer the runtime's, so the later events of both
  // are not replayed (one root cause, one code; docs/trace-format.md "Gating").
  // `payload`, when given, is the event's payload: what it names and would have created is
  // gated too (EventTypeSpec::gate: a fork's children, a transfer destination).
  void DropEvent(const Event& e, const simdjson::dom::element* payload = nullptr);
  // Gates what a dropped event of operation `operation_id` may have changed of the operation's
  // request: that request when the replay knows the operation (an append's, or a transfer's: an
  // event misnaming it, or naming none readably); else the request the operation's next event
  // names (dropped_ops_). `request_unknown` (the event needs a request and names none readably)
  // also gates every request not created yet ("request:*": one it may have created).
  // `transfer_only`: the dropped event is of the transfer plane, so `operation_id` names a
  // transfer, never an append operation of the same name (since 2026-12-05, a carried finding: a
  // dropped transfer_plan named "prefill" gated the append "prefill" of another request).
  void GateOperationRequest(std::string_view operation_id, bool request_unknown,
                            bool transfer_only = false);
  // The EventTypeSpec::gate of `event_type` on `payload`; for an unknown type, every row's gate
  // with sure = false.
  void GatePayloadNames(std::string_view event_type, const simdjson::dom::element& payload);
  // Looks up an earlier semantic event by id within `request` (nullptr when unknown).
  const EventInfo* FindCause(std::string_view request, std::string_view event_id) const;
  // Indexes event `e` (already indexed under the request it names) under another request it
  // created too, with that request's state after it: a fork under each child, so that the
  // child's allocator and residency observations may name the fork as their cause.
  void IndexUnder(std::string_view request, const Event& e, const EventInfo& info);
  // Maps a trace snapshot version to a BaseRef for compare-and-publish on `s`.
  static lifecycle::BaseRef BaseForVersion(const lifecycle::Snapshot& s, uint64_t version);
  // Runs `op` on the object under the event's outcome: "rejected" must fail (else
  // TRACE_OUTCOME_INVALID, state unchanged), anything else must succeed (else its code).
  // Returns true when the operation took effect.
  // `op` is called (at most once) during Apply only. It may touch only the event's request
  // handle, `more_handles` (a fork's children) and the event's operation (KvObject::Save).
  // `explained` (may be null): the codes of refusals that a violation the caller already reported
  // explains (an event labelled with another request's operation: a refusal by that operation of
  // what was the named request's own event). Such a refusal, and a "rejected" outcome that
  // operation would admit, are gated as usual but not reported; any other code is (probe 80).
  class OpRef {
   public:
    template <typename F>
    OpRef(F&& f)  // NOLINT(google-explicit-constructor): lambdas convert implicitly
        : obj_(&f), call_([](void* o, lifecycle::KvObject& kv) {
            return (*static_cast<std::remove_reference_t<F>*>(o))(kv);
          }) {}
    Status operator()(lifecycle::KvObject& kv) const { return call_(obj_, kv); }

   private:
    void* obj_;
    Status (*call_)(void*, lifecycle::KvObject&);
  };
  bool Apply(const Event& e, OpRef op, const std::vector<std::string>* more_handles = nullptr,
             bool (*explained)(ErrorCode) = nullptr);
  // After a successful release of `request_id` (its tombstone has handle generation
  // `tombstone_generation`): forgets the receipts of the request released receipt_window
  // releases ago and the whole request released released_window releases ago.
  void NoteReleased(const std::string& request_id, uint64_t tombstone_generation);
  // False when `request_id` is certainly not a request whose tombstone the released window has
  // forgotten (a Bloom filter of the forgotten ids, constant memory: true may be a false
  // positive, so a rule for "never created" must not judge on true).
  bool MayBeForgotten(std::string_view request_id) const;
  // Names in current_ the event and request of `text`, an event's JSON that is read but not
  // replayed (a line after its byte-order mark, a line nested past simdjson's limit), read
  // with nesting up to `max_depth`; true when it is an object (its ids named where they are
  // strings), false, current_ unchanged, otherwise.
  bool NameUnreplayedEvent(std::string_view text, size_t max_depth);
  // Reports a line simdjson refused with the strict reader's column and reason (a number
  // beyond 64 bits: INPUT_VALUE_OUT_OF_RANGE at its member); false when it adds nothing.
  // `too_deep`: simdjson refused it for nesting beyond its depth limit.
  bool ReportUnparsedLine(std::string_view line, uint32_t line_no, bool too_deep);
  uint32_t line() const { return line_; }
  // The extension slot named `key`, or nullptr before SetExtension(key, ...).
  CheckerExtension* extension(std::string_view key) const;
  // Installs (or replaces) the slot `key`; returns the installed state.
  CheckerExtension& SetExtension(std::string key, std::unique_ptr<CheckerExtension> ext);
  // Records a violation found at another line than the current one (end-of-trace findings).
  [[gnu::cold]] void ReportAt(uint32_t line, Context context, ErrorCode code, std::string pointer,
                std::string message);
  // "/<line-1>"; valid until the next Feed or Finish.
  const std::string& LinePtr() const;

 private:
  // Starts line `line_no`: its number, no event context yet. False when the line is not
  // replayed (after an unusable header, or after the end record, where it is counted).
  bool StartLine(uint32_t line_no, bool empty);
  // The replay of one parsed line (FeedPadded after its parse): `err` is the parse's error.
  void ReplayLine(std::string_view line, uint32_t line_no, int err,
                  const simdjson::dom::element& root);
  void ReadHeader(const simdjson::dom::element& root);
  // `line` is the event's line (its duplicate-delivery identity), `root` its parse.
  void ReadEvent(std::string_view line, const simdjson::dom::element& root);
  // The envelope of an event: ReadEnvelopeFast reads a conforming one in a single pass over its
  // members and returns false, having reported nothing, when any member is unknown, repeated,
  // missing or mistyped; ReadEnvelope (the general reader) then reports exactly what is wrong.
  // Both fill `e` completely and return whether the event can be replayed.
  bool ReadEnvelopeFast(const simdjson::dom::object& obj, Event& e, simdjson::dom::element* payload,
                        bool* has_payload);
  bool ReadEnvelope(const simdjson::dom::object& obj, Event& e, simdjson::dom::element* payload,
                    bool* has_payload);
  // When `obj` is an end record (its kind is kTraceEndKind and it has no event_id: as for a
  // second header, an event carrying a stray kind member is an event): reads it, checks its
  // count of the event lines before it, and returns true; otherwise false, having reported
  // nothing.
  bool ReadEndRecord(const simdjson::dom::object& obj);

  // An event whose envelope was reported and dropped still takes its place in its declared
  // source's local sequence (when it named one), so the next event is not also a gap.
  void NoteDroppedEvent(std::string_view source_instance, uint64_t local_sequence);
  // An event dropped without a usable local_sequence (counted for its source), or without a
  // usable source, or a line that is not an event object (counted for every source): the next
  // hole in a source's sequence no larger than what was dropped since its last event is theirs.
  void NoteUnnumberedDrop(std::string_view source_instance);

  struct SourceState {
    std::string component;
    // An event of this source stated another component than the header's, the one its type's
    // plane has: reported once (CheckSource), after which the source's events are judged by the
    // component each states.
    bool component_contradicted = false;
    // An event stating the source's declared component (its type's plane) was numbered here;
    // after that an event stating another plane under this name is another source's (a relabel).
    bool declared_plane_seen = false;
    // Not declared in the header: adopted at its first event (CheckSource).
    bool adopted = false;
    bool seen = false;
    uint64_t last_seq = 0;
    uint64_t last_ns = 0;
    // The last kRecent events (seq, event-id hash, content) for duplicate-delivery and id-reuse
    // detection; slots [0, n) are filled, pos is the next to overwrite. The content is the
    // line's bytes (a redelivery is recognized by byte equality; copying a line costs less than
    // hashing it), or for a line over kWindowLineLimit bytes its LineHash (hashed), so the
    // window holds at most kRecent * kWindowLineLimit bytes of lines.
    static constexpr size_t kRecent = 32;
    struct RecentWindow {
      uint64_t seq[kRecent];
      uint64_t id[kRecent];
      std::string text[kRecent];
      uint64_t hash[kRecent];
      bool hashed[kRecent];
      // How many of the window's events have an id hash in each bucket (id_hash & 255).
      uint8_t count[256] = {};
      size_t n = 0;
      size_t pos = 0;
    };
    // Allocated at the source's first kept event (~2.4 KB): a header may declare many sources
    // that never send one (since 2026-12-04; before, every declared source held a window).
    std::unique_ptr<RecentWindow> recent;
    // Events of this source dropped without a usable number since its last event, and the
    // checker's unattributed_drops_ at its last event (NoteUnnumberedDrop).
    uint64_t unnumbered = 0;
    uint64_t unattributed_seen = 0;
    // The last event regressed before the window and was dropped: if the next one continues its
    // number (restart_seq + 1), the source restarted its numbering and is followed from there.
    bool restarted = false;
    uint64_t restart_seq = 0;
    uint64_t restart_ns = 0;
    // One mis-numbered event is one fault: the previous event of the source raised a gap (the
    // number it should have had: gap_expected) or a regression, judged with the next event.
    bool gap_open = false;
    uint64_t gap_expected = 0;
    bool regressed_prev = false;
  };
  // The declared source of `e`, checked against its component and the event type's plane;
  // nullptr after reporting TRACE_SOURCE_UNDECLARED. Sets *unnumbered when the event is
  // replayed but is not one of the source's numbered events (another source's event under this
  // source's name: its number is not judged against this source's).
  SourceState* CheckSource(Event& e, const EventTypeSpec& spec, bool* unnumbered);
  // Reports TRACE_EVENT_ID_CONFLICT for `e`, whose id the event of source `other` on line
  // `other_line` holds (the cross-source window, across_). Cold.
  [[gnu::cold]] void ReportIdOfAnotherSource(const Event& e, const SourceState& other,
                                             uint32_t other_line);

  std::string source_;
  CheckerOptions opt_;
  struct Parser;
  std::unique_ptr<Parser> parser_;
  // FeedPaddedBatch's parsers (one document per line of a batch), created on first use.
  std::vector<std::unique_ptr<Parser>> batch_parsers_;
  std::unique_ptr<lifecycle::KvObject> kv_;
  uint64_t bytes_per_token_ = 0;
  uint64_t allocator_slots_per_block_ = 0;
  bool allocator_used_committed_ = false;
  bool residency_one_copy_ = true;
  bool header_ok_ = false;
  bool header_seen_ = false;
  // The end record (trace-format.md "End record"): the header requires one (end_record: true);
  // the line that held it (0 before); lines after it, the first of them (not replayed).
  bool end_required_ = false;
  uint32_t end_line_ = 0;
  uint32_t after_end_first_ = 0, after_end_last_ = 0;
  uint64_t after_end_lines_ = 0, after_end_empty_ = 0;
  // The last line fed could not be read as an event or an end record (not JSON, not an object,
  // an unreadable envelope): a missing end record is not reported beside it (that line may be the
  // record, and it fails the trace already).
  bool last_line_unread_ = false;
  uint32_t line_ = 0;
  mutable std::string line_ptr_;     // LinePtr() of line_ptr_line_
  mutable uint32_t line_ptr_line_ = UINT32_MAX;
  uint64_t events_ = 0;
  uint64_t unattributed_drops_ = 0;  // NoteUnnumberedDrop without a source
  // Operations of dropped events that the replay did not know (GateOperationRequest):
  // the request their next event names is gated (the dropped event may have named no request,
  // or another one: a creating event whose request was misnamed). Gates, within the gates'
  // budget (CheckerOptions::gate_bytes; probe 60: 400,000 dropped events naming unknown
  // operations of 1 KB ids held 490 MB beyond it).
  std::set<std::string, std::less<>> dropped_ops_;
  uint64_t fast_payloads_ = 0;
  // The last released_window releases, oldest first: request id and tombstone generation.
  std::deque<std::pair<std::string, uint64_t>> released_;
  // MayBeForgotten's filter: 2^20 bits, two per forgotten id (LineHash); empty until the first
  // tombstone is forgotten.
  std::vector<uint64_t> forgotten_bloom_;
  Violations violations_;
  uint64_t omitted_ = 0;
  bool replay_violated_ = false;  // a violation at an event line (line > 1), kept or not
  std::vector<Context> contexts_;
  Context current_;
  Event event_;  // the event being replayed
  // The general envelope reader's copies of the event's strings (event_ views them): event_id,
  // source_instance, source_component, event_type, request_id, operation_id, outcome.
  std::string envelope_copies_[7];
  // While true and current_ is empty, Report() first fills current_ from event_ (so that events
  // without violations copy no context strings). Code that installs another context in
  // current_ for one report and restores it afterwards keeps working unchanged.
  bool context_is_event_ = false;
  // The id maps: element addresses are stable until the element is erased (FindRequest's memo
  // and last_source_name_ rely on it).
  template <typename T>
  using Map = base::StableStringMap<T>;
  Map<SourceState> sources_;
  // The event ids of the last kRecentAcross numbered, kept events of all sources together (their
  // LineHash, source and line), for an id reused by another source (M5.1 0x07: "different
  // content under one ID is corruption"; a byte-identical redelivery repeats its source_instance,
  // so an id that another source's event holds is always a conflict). A hash match is an id
  // match, as in the per-source windows. A ring: slot pos % kRecentAcross is overwritten next;
  // an unused slot has source nullptr (and id 0, counted in bucket 0). Fixed size: ~5.4 KB.
  static constexpr size_t kRecentAcross = 64;
  struct AcrossWindow {
    // 4096 buckets: an event's bucket holds one of the 64 ids 1.6% of the time, so the exact
    // pass over the ring nearly never runs (with 256 it ran for a quarter of the events, +1.2%
    // instructions per check; callgrind 2026-12-07).
    static constexpr size_t kBuckets = 4096;
    static size_t Bucket(uint64_t id) { return (id >> 16) & (kBuckets - 1); }
    uint64_t id[kRecentAcross] = {};
    const SourceState* source[kRecentAcross] = {};
    uint32_t line[kRecentAcross] = {};
    // How many slots hold an id hash in each bucket; the unused slots are bucket 0's.
    uint8_t count[kBuckets] = {kRecentAcross};
    size_t pos = 0;
  };
  AcrossWindow across_;
  // Sources adopted without a header declaration (CheckSource), at most kMaxUndeclaredSources.
  static constexpr size_t kMaxUndeclaredSources = 64;
  size_t undeclared_sources_ = 0;
  // Entries of the header's sources whose source_instance could not be read (reported there):
  // as many undeclared sources are then adopted without a second code, each taken for one of
  // them (probe 47's gating sweep: one bad entry raised TRACE_SOURCE_UNDECLARED too).
  size_t unreadable_source_entries_ = 0;
  SourceState* last_source_ = nullptr;  // the last event's source (most traces have few)
  std::string_view last_source_name_;   // its key in sources_
  Map<Request> requests_;
  std::pair<const base::IdString, Request>* last_request_ = nullptr;  // FindRequest's memo
  // FindRequest's memo misses since the last batch began: one per event that names another
  // request than the lookup before it (FeedPaddedBatch's prefetch signal).
  uint64_t request_memo_misses_ = 0;
  uint64_t prefetched_batches_ = 0;
  // Starts loading the records the parsed lines `roots` name into the cache (`parsed[i]`: root
  // i is a document): a hint (CheckerOptions::prefetch_from_live_requests).
  void PrefetchBatchRecords(const simdjson::dom::element* roots, const bool* parsed,
                            size_t m) const;
  const lifecycle::HandleRecord* handle_memo_ = nullptr;           // FindHandle's memo, valid
  uint64_t handle_memo_erasures_ = 0;                              // while erasures match
  // Rows FindEventType returned, by a hash of the name (rows are only added before checking
  // starts and the table is a vector: RegisterEventType during a check would invalidate them,
  // which its contract excludes).
  static constexpr size_t kTypeMemo = 64;
  const EventTypeSpec* type_memo_[kTypeMemo] = {};
  Map<Op> ops_;
  std::pair<const base::IdString, Op>* last_op_ = nullptr;  // FindOp's memo (cleared by erasure)
  Map<uint32_t> poisoned_;
  size_t gate_bytes_ = 0;  // what poisoned_'s keys cost (GateCost), within opt_.gate_bytes
  uint64_t gates_not_kept_ = 0;
  RuntimeBinding binding_;  // optional header rules (runtime_binding.h)
  // The ids binding_.expected_final_states lists (built at the first forgotten tombstone), and
  // the final snapshots of those forgotten since: bounded by the header's list.
  std::unordered_set<std::string> expected_ids_;
  std::unordered_map<std::string, lifecycle::Snapshot> forgotten_expected_;
  std::vector<std::pair<std::string, std::unique_ptr<CheckerExtension>>> extensions_;
};

// An unsigned integer element (UINT64, or INT64 >= 0): what ObjReader::Uint accepts without a
// bound, and what the one-pass readers accept.
// ElementAsUint (an unsigned integer element: UINT64, or INT64 >= 0) is in element_readers.h.

// Feeds a whole JSON Lines text to `c` line by line through Feed() (a trailing '\r' stays part
// of its line, as in CheckTraceFile) and ends it with Finish(), reporting a last line without
// '\n' as cut off. Returns c->violations().
const Violations& FeedTraceText(TraceChecker* c, std::string_view text);

// Checks a whole JSON Lines text (the kinds-table entry for kvconform.trace/1).
Violations ValidateTraceJsonl(std::string_view text, std::string_view source);

// The parse-only ceiling for benchmarks: DOM-parses every line of `path` ("-": standard input)
// with simdjson (the parser the checker uses), in place from the same block reader, and
// touches nothing else;
// `lines` receives the number of lines read (a line longer than `max_line_bytes` is counted,
// not parsed, as the check reads it).
Status ParseOnlyFile(const std::string& path, uint64_t* lines,
                     uint64_t max_line_bytes = CheckerOptions{}.max_line_bytes);

// The parser both sides of the benchmark use, as "simdjson VERSION, KERNEL kernel": the library
// version it was compiled against and the kernel its runtime dispatch chose on this CPU
// (icelake: AVX-512, haswell: AVX2, ...; SIMDJSON_FORCE_IMPLEMENTATION overrides the choice).
// Parse-only throughput, and with it the ratio target, depends on the kernel.
std::string ParserDescription();

// Streams a file ("-": standard input) through a checker: 1 MiB blocks (grown to the longest
// line up to the checker's max_line_bytes), lines parsed in place in batches through
// FeedPaddedBatch, a longer line read through and fed to FeedOverlongLine. IoError when
// unreadable, OutOfRange past kMaxTraceLines lines.
Status CheckTraceFile(const std::string& path, TraceChecker* checker);

// Line numbers are 32-bit (Violation::line, the JSON Pointers' line index): a trace has at most
// this many lines.
inline constexpr uint32_t kMaxTraceLines = UINT32_MAX;
// The largest CheckerOptions::max_line_bytes: simdjson parses documents of fewer than 4 GiB.
inline constexpr uint64_t kMaxLineBytesLimit = UINT32_MAX - 64;
// Sets *after to `line` + n and returns true, or returns false (and leaves *after) when that
// would pass kMaxTraceLines.
bool AdvanceLineNumber(uint32_t line, size_t n, uint32_t* after);

// For an event that produces no snapshot (append_start, append_stage_layer, output_emit, and
// every transfer event but transfer_publish): a result_snapshot on it is a claim the replay
// contradicts, TRACE_SNAPSHOT_MISMATCH (the event is still replayed). A read's result_snapshot
// is ignored (the Loop 8 mutation that relabels a finish as a read keeps one code).
// (event_types.cc)
void NoSnapshotProduced(TraceChecker& c, const Event& e);

}  // namespace kvc::trace

#endif  // KVCONFORM_REFERENCE_TRACE_CHECKER_H_
