// TraceChecker: header, envelope and audit-stream rules; event handlers are in event_types.cc.
#include "reference/trace/checker.h"

#include <poll.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>

#include "reference/base/canonical_json.h"
#include "reference/base/strict_json.h"
#include "reference/base/text_forms.h"
#include "reference/lifecycle/snapshot/snapshot.h"
#include "reference/trace/element_readers.h"
#include "reference/trace/transfer_events.h"

namespace kvc::trace {

namespace {
// MayBeForgotten's filter: 4 MiB, 4 probes (double hashing of LineHash). It errs only towards
// not judging, with a rate that grows with the ids forgotten: ~0.02% at 1M, ~1% at 3M, ~23% at
// 10M (since 2026-12-06, probe 86: 128 KiB and 2 probes, 12% at 300k and 77% at 1M).
constexpr uint64_t kForgottenBloomBits = uint64_t{1} << 25;
constexpr int kForgottenBloomProbes = 4;
uint64_t ForgottenBloomBit(uint64_t h, int i) {
  return (h + static_cast<uint64_t>(i) * ((h >> 32) | 1)) % kForgottenBloomBits;
}
}  // namespace
namespace dom = simdjson::dom;

bool IsPlaneComponent(std::string_view component) {
  for (Plane p : {Plane::kSemantic, Plane::kAllocator, Plane::kResidency, Plane::kTransfer})
    if (component == PlaneComponent(p)) return true;
  return false;
}

std::string_view PlaneComponent(Plane p) {
  switch (p) {
    case Plane::kSemantic: return "semantic";
    case Plane::kAllocator: return "allocator";
    case Plane::kResidency: return "residency";
    case Plane::kTransfer: return "transfer";
  }
  return "?";
}

// ---------------------------------------------------------------- ObjReader

struct ObjReader::Impl {
  static constexpr size_t kMax = 32;  // no object of the format has more members
  // Member i: its key, a cheap tag of the key (KeyTag) compared before the bytes, its value.
  std::string_view keys[kMax];
  uint64_t tags[kMax];
  dom::element values[kMax];
  bool used[kMax];
  size_t n = 0;
  size_t overflow = 0;
  size_t duplicates = 0;  // repeated keys seen (the first is reported)
  uint64_t bloom = 0;  // bit BloomBit(tag) of every member: most misses are decided here
  mutable size_t cursor = 0;  // where the next lookup starts: one past the last member found
  // Index of `key` among the members, or kMax. Equal keys have equal tags, so comparing tags
  // first only skips byte comparisons that would fail. Readers mostly ask in document order,
  // so the scan starts after the previous hit and wraps around.
  static uint64_t BloomBit(uint64_t tag) { return uint64_t{1} << ((tag * 0x9E3779B97F4A7C15ull) >> 58); }
  size_t IndexOf(std::string_view key, uint64_t tag) const {
    if (!(bloom & BloomBit(tag))) return kMax;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = cursor + k < n ? cursor + k : cursor + k - n;
      if (tags[i] == tag && keys[i] == key) {
        cursor = i + 1;
        return i;
      }
    }
    return kMax;
  }
};

namespace {

// The length, first and last byte of a key: distinct for most distinct keys of the format.
uint64_t KeyTag(std::string_view k) {
  if (k.empty()) return 0;
  return k.size() | uint64_t{static_cast<unsigned char>(k.front())} << 32 |
         uint64_t{static_cast<unsigned char>(k.back())} << 40;
}

uint64_t Mum(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

// 32 bytes per step in two independent lanes (16 bytes each through a 128-bit multiply-fold,
// the mixing of wyhash), then 16-byte steps and the tail.
uint64_t LineHash(std::string_view s) {
  constexpr uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull,
                     k2 = 0x8ebc6af09c88c6e3ull, k3 = 0x589965cc75374cc3ull;
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = k0 ^ n;
  if (n >= 32) {
    uint64_t g = k3 ^ n;
    for (; n >= 32; p += 32, n -= 32) {
      h = Mum(Load64(p) ^ k1, Load64(p + 8) ^ h);
      g = Mum(Load64(p + 16) ^ k2, Load64(p + 24) ^ g);
    }
    h = Mum(h ^ k3, g ^ k1);
  }
  for (; n >= 16; p += 16, n -= 16) h = Mum(Load64(p) ^ k1, Load64(p + 8) ^ h);
  // The last 0-15 bytes, by fixed-size loads (no library call): the 16 bytes that end the input
  // when it has them (overlapping bytes already hashed; the length is mixed in below), else
  // overlapping loads within the input.
  uint64_t a = 0, b = 0;
  if (n) {
    const char* end = p + n;
    if (s.size() >= 16) {
      a = Load64(end - 16);
      b = Load64(end - 8);
    } else if (n >= 8) {
      a = Load64(p);
      b = Load64(end - 8);
    } else if (n >= 4) {
      uint32_t x, y;
      std::memcpy(&x, p, 4);
      std::memcpy(&y, end - 4, 4);
      a = x;
      b = y;
    } else {
      a = uint64_t{static_cast<unsigned char>(p[0])} << 16 |
          uint64_t{static_cast<unsigned char>(p[n / 2])} << 8 | static_cast<unsigned char>(p[n - 1]);
    }
  }
  return Mum(Mum(a ^ k1, b ^ h) ^ k2, s.size() ^ k1);
}

namespace {

// Keys that belong to the allocator/residency planes; inside a semantic event they mean the
// planes were collapsed.
constexpr std::string_view kPlaneKeys[] = {
    "allocated_blocks",       "blocks", "slots",         "used_slots", "allocated_slots",
    "resident_payload_bytes", "tier",   "physical_slot", "block_ids",  "slot_ids",
    "caused_by_event_id"};

std::string_view TypeName(const dom::element& e) {
  switch (e.type()) {
    case dom::element_type::ARRAY: return "array";
    case dom::element_type::OBJECT: return "object";
    case dom::element_type::INT64:
    case dom::element_type::UINT64:
    case dom::element_type::DOUBLE: return "number";
    case dom::element_type::STRING: return "string";
    case dom::element_type::BOOL: return "boolean";
    case dom::element_type::NULL_VALUE: return "null";
  }
  return "?";
}

}  // namespace

ObjReader::ObjReader(const dom::object& obj, std::string pointer, TraceChecker* c)
    : impl_(TakeImpl()), pointer_(std::move(pointer)), c_(c) {
  Index(obj);
}

ObjReader::ObjReader(const dom::object& obj, TraceChecker* c, std::string_view line_suffix)
    : impl_(TakeImpl()), pointer_built_(false), line_suffix_(line_suffix), c_(c) {
  Index(obj);
}

const std::string& ObjReader::pointer() const {
  if (!pointer_built_) {
    pointer_ = c_->LinePtr();
    pointer_ += line_suffix_;
    pointer_built_ = true;
  }
  return pointer_;
}

void ObjReader::Index(const dom::object& obj) {
  Impl& m = *impl_;
  for (auto field : obj) {
    const uint64_t tag = KeyTag(field.key);
    if (m.IndexOf(field.key, tag) != Impl::kMax) {
      // One code per object: its first repeated key (probe 43: a line repeating a key 400,000
      // times raised 400,000 codes).
      if (m.duplicates++ != 0) continue;
      // On line 1 the line is the header: a duplicate there is a header the checker refuses.
      // At its top level and in cache_abi that stops the replay (ReadHeader); in the other
      // members (producer, sources, bindings, allocator_model) the first stands and the replay
      // goes on (probe 28: the message said "not replayed" there too).
      const bool header = c_->line() == 1;
      const std::string& at = pointer();
      const bool stops = at == "/0" || at == "/0/cache_abi";
      Bad(header ? ErrorCode::TRACE_HEADER_INVALID : ErrorCode::TRACE_LINE_MALFORMED, field.key,
          "duplicate object key " + base::QuoteClipped(field.key) +
              (!header ? ""
               : stops ? " in the header; the trace is not replayed"
                       : " in the header (the first stands)") +
              " (later repeated keys of this object are not reported)");
      continue;
    }
    if (m.n == Impl::kMax) {
      if (m.overflow++ == 0)
        Bad(ErrorCode::INPUT_FIELD_UNKNOWN, field.key,
            "object has more than " + std::to_string(Impl::kMax) +
                " members (no object of the format has as many; the members from this one on "
                "are not read or reported)");
      continue;
    }
    m.keys[m.n] = field.key;
    m.tags[m.n] = tag;
    m.values[m.n] = field.value;
    m.used[m.n] = false;
    m.bloom |= Impl::BloomBit(tag);
    ++m.n;
  }
}

// Impl is ~1.5 KB: readers are created twice per event, so released ones are kept for reuse
// (a few per thread; a reader never outlives its thread).
namespace {
constexpr size_t kSpareImpls = 8;
}  // namespace

std::vector<std::unique_ptr<ObjReader::Impl>>& ObjReader::SpareImpls() {
  thread_local std::vector<std::unique_ptr<Impl>> spare;
  return spare;
}

std::unique_ptr<ObjReader::Impl> ObjReader::TakeImpl() {
  auto& spare = SpareImpls();
  if (spare.empty()) return std::make_unique<Impl>();
  std::unique_ptr<Impl> m = std::move(spare.back());
  spare.pop_back();
  m->n = m->overflow = m->duplicates = m->cursor = 0;
  m->bloom = 0;
  return m;
}

ObjReader::~ObjReader() {
  auto& spare = SpareImpls();
  if (impl_ && spare.size() < kSpareImpls) spare.push_back(std::move(impl_));
}

std::string ObjReader::Ptr(std::string_view key) const {
  return pointer() + "/" + JsonPointerEscape(key);
}

void ObjReader::Bad(ErrorCode code, std::string_view key, std::string msg) {
  MarkUnclean();
  c_->Report(code, Ptr(key), std::move(msg));
}

void ObjReader::MarkUnclean() {
  for (ObjReader* r = this; r; r = r->parent_) r->clean_ = false;
}

bool ObjReader::Has(std::string_view key) const {
  return impl_->IndexOf(key, KeyTag(key)) != Impl::kMax;
}

void ObjReader::Allow(std::string_view key) {
  if (size_t i = impl_->IndexOf(key, KeyTag(key)); i != Impl::kMax) impl_->used[i] = true;
}

const dom::element* ObjReader::Get(std::string_view key, bool required) {
  if (size_t i = impl_->IndexOf(key, KeyTag(key)); i != Impl::kMax) {
    impl_->used[i] = true;
    return &impl_->values[i];
  }
  // (Past the member limit an unread member may be the one asked for: the overflow, already
  // reported, is the one code; probe 43: the field was also "absent".)
  if (required && impl_->overflow == 0)
    Bad(ErrorCode::INPUT_FIELD_MISSING, key,
        "required field " + base::QuoteClipped(key) + " is absent");
  return nullptr;
}

std::optional<std::string> ObjReader::Str(std::string_view key) {
  const dom::element* e = Get(key, true);
  if (!e) return std::nullopt;
  if (!e->is_string()) {
    Bad(ErrorCode::INPUT_FIELD_TYPE, key, "expected a string, found " + std::string(TypeName(*e)));
    return std::nullopt;
  }
  return std::string(std::string_view(*e));
}

std::optional<std::string> ObjReader::OptStr(std::string_view key) {
  const dom::element* e = Get(key, false);
  if (!e || e->is_null()) return std::nullopt;
  if (!e->is_string()) {
    Bad(ErrorCode::INPUT_FIELD_TYPE, key,
        "expected a string or null, found " + std::string(TypeName(*e)));
    return std::nullopt;
  }
  return std::string(std::string_view(*e));
}

std::optional<std::string> ObjReader::NonEmptyStr(std::string_view key, bool optional) {
  auto s = optional ? OptStr(key) : Str(key);
  if (s && s->empty()) {
    Bad(ErrorCode::INPUT_VALUE_INVALID, key,
        "an empty string names nothing; " + std::string(key) + " is a non-empty string");
    return std::nullopt;
  }
  return s;
}

namespace {

// Reads an unsigned integer element; `why` receives the problem.
std::optional<uint64_t> ElementUint(const dom::element& e, ErrorCode* code, std::string* why) {
  if (e.type() == dom::element_type::UINT64) return uint64_t(e);
  if (e.type() == dom::element_type::INT64) {
    int64_t v = int64_t(e);
    if (v >= 0) return static_cast<uint64_t>(v);
    *code = ErrorCode::INPUT_VALUE_OUT_OF_RANGE;
    *why = "expected a non-negative integer, found " + std::to_string(v);
    return std::nullopt;
  }
  if (e.type() == dom::element_type::DOUBLE) {
    *code = ErrorCode::INPUT_VALUE_OUT_OF_RANGE;
    *why = "expected an integer, found a fractional or exponent number";
    return std::nullopt;
  }
  *code = ErrorCode::INPUT_FIELD_TYPE;
  *why = "expected an unsigned integer, found " + std::string(TypeName(e));
  return std::nullopt;
}
}  // namespace

std::optional<uint64_t> ObjReader::Uint(std::string_view key, uint64_t max) {
  const dom::element* e = Get(key, true);
  if (!e) return std::nullopt;
  uint64_t v;
  if (!ElementAsUint(*e, &v)) {
    ErrorCode code{};
    std::string why;
    ElementUint(*e, &code, &why);
    Bad(code, key, why);
    return std::nullopt;
  }
  if (v > max) {
    Bad(ErrorCode::INPUT_VALUE_OUT_OF_RANGE, key,
        std::to_string(v) + " exceeds the bound " + std::to_string(max));
    return std::nullopt;
  }
  return v;
}

std::optional<uint64_t> ObjReader::OptUint(std::string_view key, uint64_t max) {
  const dom::element* e = Get(key, false);
  if (!e || e->is_null()) return std::nullopt;
  uint64_t v;
  if (!ElementAsUint(*e, &v)) {
    ErrorCode code{};
    std::string why;
    ElementUint(*e, &code, &why);
    Bad(code, key, why);
    return std::nullopt;
  }
  if (v > max) {
    Bad(ErrorCode::INPUT_VALUE_OUT_OF_RANGE, key,
        std::to_string(v) + " exceeds the bound " + std::to_string(max));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> ObjReader::OptBool(std::string_view key) {
  const dom::element* e = Get(key, false);
  // null is absent, as for every optional member (probe 23: "k": null was INPUT_FIELD_TYPE).
  if (!e || e->is_null()) return std::nullopt;
  if (!e->is_bool()) {
    Bad(ErrorCode::INPUT_FIELD_TYPE, key, "expected a boolean, found " + std::string(TypeName(*e)));
    return std::nullopt;
  }
  return bool(*e);
}

std::optional<std::string> ObjReader::Enum(std::string_view key,
                                           std::initializer_list<std::string_view> allowed,
                                           bool optional) {
  auto s = optional ? OptStr(key) : Str(key);
  if (!s) return std::nullopt;
  for (auto a : allowed)
    if (*s == a) return s;
  std::string list;
  for (auto a : allowed) {
    if (!list.empty()) list += '|';
    list += a;
  }
  Bad(ErrorCode::INPUT_VALUE_INVALID, key, base::QuoteClipped(*s) + " is not one of " + list);
  return std::nullopt;
}

std::optional<std::pair<uint64_t, uint64_t>> ObjReader::Range(std::string_view key,
                                                              ErrorCode reversed) {
  const dom::element* e = Get(key, true);
  if (!e) return std::nullopt;
  dom::array arr;
  dom::element items[2];
  size_t count = 0;
  if (!e->get_array().get(arr))
    for (dom::element x : arr)
      if (count++ < 2) items[count - 1] = x;
  if (count != 2) {
    Bad(ErrorCode::INPUT_FIELD_TYPE, key, "expected [start, end) as a two-element array");
    return std::nullopt;
  }
  uint64_t v[2];
  for (size_t i = 0; i < 2; ++i) {
    if (ElementAsUint(items[i], &v[i])) continue;
    ErrorCode code{};
    std::string why;
    ElementUint(items[i], &code, &why);
    Bad(code, key, why);
    return std::nullopt;
  }
  if (v[0] > v[1]) {
    Bad(reversed, key,
        "interval [" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ") has start > end");
    return std::nullopt;
  }
  return std::make_pair(v[0], v[1]);
}

std::optional<std::vector<uint64_t>> ObjReader::UintArray(std::string_view key, bool optional) {
  const dom::element* e = Get(key, !optional);
  if (!e) return std::nullopt;
  dom::array arr;
  if (e->get_array().get(arr)) {
    Bad(ErrorCode::INPUT_FIELD_TYPE, key, "expected an array of unsigned integers");
    return std::nullopt;
  }
  std::vector<uint64_t> out;
  for (dom::element x : arr) {
    ErrorCode code{};
    std::string why;
    auto v = ElementUint(x, &code, &why);
    if (!v) {
      Bad(code, key, why);
      return std::nullopt;
    }
    out.push_back(*v);
  }
  return out;
}

bool ObjReader::IsNull(std::string_view key) const {
  const size_t i = impl_->IndexOf(key, KeyTag(key));
  return i != Impl::kMax && impl_->values[i].is_null();
}

bool ObjReader::ObjectArray(std::string_view key, const std::function<void(ObjReader&)>& fn,
                            bool errors_mark_parent) {
  const dom::element* e = Get(key, true);
  if (!e) return false;
  dom::array arr;
  if (e->get_array().get(arr)) {
    Bad(ErrorCode::INPUT_FIELD_TYPE, key, "expected an array of objects");
    return false;
  }
  size_t i = 0;
  bool ok = true;
  for (dom::element x : arr) {
    dom::object o;
    std::string p = Ptr(key) + "/" + std::to_string(i++);
    if (x.get_object().get(o)) {
      if (errors_mark_parent) MarkUnclean();
      c_->Report(ErrorCode::INPUT_FIELD_TYPE, p, "expected an object");
      ok = false;
      continue;
    }
    ObjReader r(o, p, c_);
    if (errors_mark_parent) r.parent_ = this;
    fn(r);
    r.RejectUnknown();
    if (!r.clean()) ok = false;
  }
  return ok;
}

std::unique_ptr<ObjReader> ObjReader::Object(std::string_view key, bool errors_mark_parent) {
  const dom::element* e = Get(key, true);
  if (!e) return nullptr;
  dom::object o;
  if (e->get_object().get(o)) {
    Bad(ErrorCode::INPUT_FIELD_TYPE, key, "expected an object, found " + std::string(TypeName(*e)));
    return nullptr;
  }
  auto r = std::make_unique<ObjReader>(o, Ptr(key), c_);
  if (errors_mark_parent) r->parent_ = this;  // a bad nested member: this payload is unusable
  return r;
}

void ObjReader::RejectUnknown(bool semantic_plane) {
  // The observation fields of a semantic event are one mistake (the planes collapsed into it):
  // one TRACE_PLANE_MIXED at the first, naming all (probe 41: one code per field, five on one
  // line; slot_ids and caused_by_event_id were INPUT_FIELD_UNKNOWN).
  std::string_view first_plane;
  std::string plane_names;
  for (size_t i = 0; i < impl_->n; ++i) {
    if (impl_->used[i]) continue;
    std::string_view k = impl_->keys[i];
    bool plane = false;
    if (semantic_plane)
      for (auto pk : kPlaneKeys) plane |= (pk == k);
    if (plane) {
      if (first_plane.empty()) first_plane = k;
      plane_names += (plane_names.empty() ? "\"" : ", \"") + std::string(k) + "\"";
    } else {
      Bad(ErrorCode::INPUT_FIELD_UNKNOWN, k,
          "field " + base::QuoteClipped(k) + " is not defined here");
    }
  }
  if (!first_plane.empty()) {
    const bool one = plane_names.find(',') == std::string::npos;
    Bad(ErrorCode::TRACE_PLANE_MIXED, first_plane,
        std::string(one ? "allocator/residency field " : "allocator/residency fields ") +
            plane_names + " inside a semantic event; emit " + (one ? "it" : "them") +
            " as an allocator_observation or residency_observation with caused_by_event_id");
  }
}

// ---------------------------------------------------------------- TraceChecker

// The M5.6 transfer-plane rows join the table before any trace is checked (EventTypes() and
// FindEventType() serve them from then on). Registration is idempotent and thread-safe.
[[maybe_unused]] const bool kTransferEventsRegistered = RegisterTransferEventTypes().ok();

struct TraceChecker::Parser {
  dom::parser parser;
  std::vector<char> buf;
};

TraceChecker::TraceChecker(std::string source, CheckerOptions opt)
    : source_(std::move(source)), opt_(opt), parser_(std::make_unique<Parser>()) {}

TraceChecker::~TraceChecker() = default;

const std::string& TraceChecker::LinePtr() const {
  if (line_ptr_line_ != line_) {
    line_ptr_ = "/" + std::to_string(line_ ? line_ - 1 : 0);
    line_ptr_line_ = line_;
  }
  return line_ptr_;
}

void TraceChecker::Report(ErrorCode code, std::string pointer, std::string message) {
  if (line_ > 1) replay_violated_ = true;
  if (opt_.max_violations != 0 && violations_.size() >= opt_.max_violations) {
    ++omitted_;
    return;
  }
  // A listed violation keeps at most a few KiB, whatever the ids it quotes: the report is
  // bounded by --max-violations times that, not by the trace's id lengths (probe 47: 20,000
  // events naming 10 KB request ids held 525 MB, 1.7 GB with --format json).
  violations_.push_back(ForReport({code, std::move(pointer), std::move(message), line_}));
  // Materialized on the first report of the event; a context installed by the caller meanwhile
  // (a report about another line) is used as it is.
  if (context_is_event_ && current_.event_id.empty() && current_.request_id.empty()) {
    current_.event_id = event_.event_id;
    current_.request_id = event_.request_id.value_or("");
    context_is_event_ = false;
  }
  contexts_.push_back({Clip(current_.event_id, kMaxReportedIdBytes),
                       Clip(current_.request_id, kMaxReportedIdBytes)});
}

void TraceChecker::ReportStatus(const Status& s, std::string pointer) {
  Report(s.error() == ErrorCode::kNone ? ErrorCode::INPUT_VALUE_INVALID : s.error(),
         std::move(pointer), s.message());
}

TraceChecker::Request* TraceChecker::FindRequest(std::string_view id) {
  // One event looks its request up several times: the last hit is remembered (map nodes are
  // stable until erased; every erase clears the memo).
  if (last_request_ && SameBytes(last_request_->first, id)) return &last_request_->second;
  ++request_memo_misses_;
  auto it = requests_.find(id);
  if (it == requests_.end()) return nullptr;
  last_request_ = &*it;
  return &it->second;
}

const lifecycle::HandleRecord* TraceChecker::FindHandle(std::string_view id) {
  // A record is stored under its snapshot's handle_id (Allocate, Fork), so the memo's key is
  // current.handle_id.
  if (handle_memo_ && handle_memo_erasures_ == kv_->handle_erasures() &&
      SameBytes(handle_memo_->current.handle_id, id))
    return handle_memo_;
  const lifecycle::HandleRecord* h = kv_->Find(id);
  if (h) {
    handle_memo_ = h;
    handle_memo_erasures_ = kv_->handle_erasures();
  }
  return h;
}

TraceChecker::Request& TraceChecker::NewRequest(const std::string& id, uint64_t prompt_length,
                                                uint64_t generation) {
  Request& r = requests_[id];
  // The earlier incarnation's operations go with it, open ones too: the seed's ABA case refuses
  // the late completion of an operation left open at release after the id was allocated again
  // (M5.1 0x07 synthetic lifecycle, slot 17), so it is not judged unterminated here.
  for (const auto& op : r.op_ids) EraseOpOf(op, id);
  const uint64_t first = std::min(r.first_generation, generation);
  std::set<uint64_t> retired = std::move(r.retired);
  // Allocated again: the generations between the released incarnation's tombstone (its
  // generation + 1) and this one never had an incarnation (probe 32 finding 05: a refused event
  // aimed at one conformed as a stale completion of an incarnation that existed).
  std::vector<std::pair<uint64_t, uint64_t>> gaps = std::move(r.generation_gaps);
  if (r.first_generation != UINT64_MAX && r.generation < UINT64_MAX &&
      generation > r.generation + 1) {
    if (gaps.size() == Request::kMaxGenerationGaps) gaps.erase(gaps.begin());
    gaps.emplace_back(r.generation + 1, generation);
  }
  // An id allocated again keeps the terminal events (finish, cancel_request, release) of its
  // last released incarnation: a delayed free observed after the re-allocation names its
  // release (since 2026-12-04: it was TRACE_CAUSE_UNKNOWN and gated the new incarnation; probe
  // 16). Only that incarnation's, so an id recycled many times keeps at most three.
  EventIndex terminal = std::move(r.events);
  std::optional<uint64_t> released;
  terminal.ForEach([&](std::string_view, const EventInfo& info) {
    if (info.type == "release") released = std::max(released.value_or(0), info.handle_generation);
  });
  terminal.KeepIf([&](std::string_view, const EventInfo& info) {
    return released && info.handle_generation == *released &&
           (info.type == "release" || info.type == "finish" || info.type == "cancel_request");
  });
  r = Request{};
  r.events = std::move(terminal);
  r.frontier = frontier::FrontierState(prompt_length);
  r.first_generation = first;
  r.generation = generation;
  r.generation_gaps = std::move(gaps);
  r.retired = std::move(retired);
  return r;
}

TraceChecker::Op* TraceChecker::FindOp(std::string_view id) {
  // The events of one append (start, every layer, publication) name the same operation: the
  // last hit is remembered (nodes are stable until erased; every erase clears the memo).
  if (last_op_ && SameBytes(last_op_->first, id)) return &last_op_->second;
  auto it = ops_.find(id);
  if (it == ops_.end()) return nullptr;
  last_op_ = &*it;
  return &it->second;
}
TraceChecker::Op& TraceChecker::NewOp(std::string_view id) {
  auto it = ops_.try_emplace(id).first;
  last_op_ = &*it;
  it->second = Op{};  // a first start of a reused id starts a fresh record (probe 22)
  return it->second;
}

std::optional<uint64_t> TraceChecker::OpBaseVersion(std::string_view id,
                                                    std::optional<uint64_t> named_incarnation) {
  if (const Op* op = FindOp(id)) return op->base_version;
  const lifecycle::AppendTxn* t = kv_->FindTxn(id);
  if (!t || t->state != lifecycle::TxnState::kPublished || t->result.version == 0)
    return std::nullopt;
  // The receipt's own incarnation, live or just released (a release advances the handle
  // generation by one; M5.1 0x01: an old receipt is still returned after release), not a later
  // incarnation of a recycled id.
  const lifecycle::HandleRecord* h = FindHandle(t->request.handle_id);
  if (!h) return std::nullopt;
  const uint64_t released = h->current.phase == lifecycle::Phase::kReleased ? 1 : 0;
  if (h->current.incarnation != t->result.incarnation + released &&
      named_incarnation != t->result.incarnation)
    return std::nullopt;
  return t->result.version - 1;
}

void TraceChecker::DropPublishedOp(std::string_view id) {
  auto it = ops_.find(id);
  if (it == ops_.end()) return;
  last_op_ = nullptr;
  if (Request* r = FindRequest(it->second.request_id)) {
    auto& ids = r->op_ids;
    for (size_t i = ids.size(); i-- > 0;)
      if (SameBytes(ids[i], id)) {
        ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
  }
  ops_.erase(it);
}
void TraceChecker::EraseOpOf(std::string_view id, std::string_view request) {
  // An id the receipt window let another request start again is that request's now (probe 22).
  if (const Op* op = FindOp(id); op && SameBytes(op->request_id, request)) EraseOp(id);
}

void TraceChecker::EraseOp(std::string_view id) {
  if (auto it = ops_.find(id); it != ops_.end()) {
    last_op_ = nullptr;
    ops_.erase(it);
  }
}

size_t TraceChecker::transaction_records() const { return kv_ ? kv_->txn_count() : 0; }

size_t TraceChecker::source_windows() const {
  size_t n = 0;
  for (const auto& [id, src] : sources_) n += src.recent != nullptr;
  return n;
}

bool TraceChecker::RecentlyHeldEvent(std::string_view event_id) const {
  const uint64_t h = LineHash(event_id);
  for (const auto& [name, src] : sources_) {
    const SourceState::RecentWindow* w = src.recent.get();
    if (!w || w->count[h & 255] == 0) continue;
    for (size_t i = 0; i < w->n; ++i)
      if (w->id[i] == h) return true;
  }
  return false;
}

bool TraceChecker::IsRetryOfKeptReceipt(const Event& e) const {
  if (!KeyEquals(e.outcome, "replayed") || !e.operation_id || !e.request_id ||
      !e.handle_generation || !kv_ ||
      !(KeyEquals(e.event_type, "append_start") || KeyEquals(e.event_type, "append_publish")))
    return false;
  const lifecycle::AppendTxn* txn = kv_->FindTxn(*e.operation_id);
  return txn && txn->request.handle_id == *e.request_id && txn->incarnation == *e.handle_generation;
}

bool TraceChecker::NamesAnotherRequestsOperation(const Event& e) {
  if (!e.operation_id || !e.request_id || !e.handle_generation || !kv_ ||
      !(KeyEquals(e.event_type, "append_stage_layer") ||
        KeyEquals(e.event_type, "append_publish") || KeyEquals(e.event_type, "append_failure") ||
        KeyEquals(e.event_type, "cancel_txn")))
    return false;
  const base::IdString* owner = OperationOwner(*e.operation_id);
  if (!owner || SameBytes(*owner, *e.request_id)) return false;
  const lifecycle::HandleRecord* h = FindHandle(*owner);
  return h && h->current.incarnation == *e.handle_generation;
}

const base::IdString* TraceChecker::OperationOwner(std::string_view op_id) {
  const Op* op = FindOp(op_id);
  const lifecycle::AppendTxn* t = kv_ ? kv_->FindTxn(op_id) : nullptr;
  return t ? &t->request.handle_id : op ? &op->request_id : nullptr;
}

bool TraceChecker::IsPoisoned(std::string_view id) const {
  return !poisoned_.empty() && poisoned_.find(id) != poisoned_.end();
}
namespace {
// What one gate costs (an estimate, an upper one): its key's bytes, its node (the key's IdString
// and the line: 56 bytes) and its index slots (8 bytes each, the index at most half full).
size_t GateCost(std::string_view key) { return key.size() + 96; }
}  // namespace

void TraceChecker::Poison(const std::string& id) {
  if (auto it = poisoned_.find(id); it != poisoned_.end()) {
    it->second = line_;
    return;
  }
  // Within the budget only (CheckerOptions::gate_bytes); the gate's side effects below hold
  // either way.
  if (gate_bytes_ + GateCost(id) <= opt_.gate_bytes) {
    poisoned_.try_emplace(id, line_);
    gate_bytes_ += GateCost(id);
  } else {
    ++gates_not_kept_;
  }
  // A gated request's transfers are gated with it, their holdings returned at once (probe 13:
  // they gave them back only at their own next event, never when the dropped event was their
  // last, and the next transfer at the destination raised a second code).
  // (For every request id, "" and "*" included: probe 14. The wildcard gate of requests not yet
  // created shares the key of a request named "*"; no other request has transfers under it.)
  constexpr std::string_view kRequest = "request:";
  if (id.size() >= kRequest.size() && id.compare(0, kRequest.size(), kRequest) == 0)
    GateTransfersOfRequest(*this, std::string_view(id).substr(kRequest.size()));
}
bool TraceChecker::LiftGateForNewIncarnation(const Event& e) {
  // A refused allocation creates nothing: the gated incarnation stays as it is (probe 19).
  if (KeyEquals(e.outcome, "rejected")) return false;
  const std::string key = "request:" + std::string(*e.request_id);
  auto gate = poisoned_.find(key);
  if (gate == poisoned_.end() || !e.handle_generation) return false;
  const lifecycle::HandleRecord* h = FindHandle(*e.request_id);
  if (!h) return false;  // the gated incarnation's generation is unknown: stays gated
  if (RequestHasTransfers(*this, *e.request_id)) return false;  // probe 20
  const bool released = h->current.phase == lifecycle::Phase::kReleased;
  if (released ? *e.handle_generation < h->current.incarnation
               : *e.handle_generation <= h->current.incarnation)
    return false;
  // The runtime released the gated incarnation (its release, if traced, was not replayed): the
  // replay retires it the same way, cancelled and released, so the new one starts afresh. Its
  // late events (an observation naming its release, a retry) stay skipped (probe 19).
  // (A released handle's incarnation is its tombstone's, one past the gated one: probe 21.)
  const uint64_t gated = released ? h->current.incarnation - 1 : h->current.incarnation;
  if (!released && !RetireLive(*e.request_id)) return false;
  std::set<uint64_t>& retired = requests_[std::string(*e.request_id)].retired;
  retired.insert(gated);
  if (retired.size() > Request::kMaxRetired) retired.erase(retired.begin());
  gate_bytes_ -= std::min(gate_bytes_, GateCost(gate->first));
  poisoned_.erase(gate);
  return true;
}
bool TraceChecker::RetireLive(std::string_view request_id) {
  const lifecycle::HandleRecord* h = FindHandle(request_id);
  if (!h) return false;
  if (h->current.phase == lifecycle::Phase::kDecodeReady && !kv_->CancelRequest(request_id).ok())
    return false;
  auto tomb = kv_->Release(request_id);
  if (!tomb.ok()) return false;
  NoteReleased(std::string(request_id), tomb->incarnation);
  return true;
}
void TraceChecker::RetireGated(const Event& e) {
  if (KeyEquals(e.outcome, "rejected") || !e.request_id || !e.handle_generation) return;
  const lifecycle::HandleRecord* h = FindHandle(*e.request_id);
  // The live incarnation the gate holds, and no transfer of it (they stay gated with it).
  if (!h || h->current.phase == lifecycle::Phase::kReleased ||
      h->current.incarnation != *e.handle_generation || RequestHasTransfers(*this, *e.request_id))
    return;
  if (!RetireLive(*e.request_id)) return;
  if (Request* r = FindRequest(*e.request_id)) r->gate_retired_at_release = true;
}
bool TraceChecker::IsPoisonedOp(std::string_view op_id) const {
  return !poisoned_.empty() && IsPoisoned("op:" + std::string(op_id));
}
void TraceChecker::PoisonOp(std::string_view op_id) { Poison("op:" + std::string(op_id)); }
bool TraceChecker::IsGatedRequest(std::string_view id) {
  if (poisoned_.empty()) return false;
  return IsPoisoned("request:" + std::string(id)) ||
         (!FindRequest(id) && IsPoisoned("request:*"));
}
void TraceChecker::DropEvent(const Event& e, const dom::element* payload) {
  const EventTypeSpec* spec = FindEventType(e.event_type);
  // An event of a transfer type names a transfer: an append operation of the same name is
  // another thing (since 2026-12-05: a dropped transfer_plan named "prefill" gated the append
  // "prefill" of another request and hid its violation).
  const bool transfer_type = spec && spec->plane == Plane::kTransfer;
  if (e.operation_id) {
    if (!transfer_type) PoisonOp(*e.operation_id);
    // The transfer plane gates its transfers under their own key and returns what they hold
    // (transfer_events.cc; probe 12: poisoning the key alone left a dropped event's transfer
    // holding its blocks and credits, and the next transfer there raised a second code). A
    // transfer event is known by its type's plane or by the component it claims (probe 13: a
    // transfer_abort claiming another component kept its transfer's holdings).
    if (SameBytes(e.source_component, "transfer") || transfer_type)
      GateTransfer(*this, *e.operation_id);
  }
  if (e.request_id) Poison("request:" + std::string(*e.request_id));
  GateOperationRequest(e.operation_id ? *e.operation_id : std::string_view(),
                       !e.request_id && (!spec || spec->needs_request), transfer_type);
  if (payload) GatePayloadNames(e.event_type, *payload);
}
void TraceChecker::GateOperationRequest(std::string_view operation_id, bool request_unknown,
                                        bool transfer_only) {
  if (!operation_id.empty()) {
    if (const Op* op = transfer_only ? nullptr : FindOp(operation_id))
      return Poison("request:" + op->request_id);
    if (auto transfer = TransferRequest(*this, operation_id)) return Poison("request:" + *transfer);
    // (A transfer's under its own key: an append operation's next event of that name is not
    // its next event.)
    std::string key =
        transfer_only ? "transfer:" + std::string(operation_id) : std::string(operation_id);
    if (!dropped_ops_.count(key)) {
      if (gate_bytes_ + GateCost(key) <= opt_.gate_bytes) {
        gate_bytes_ += GateCost(key);
        dropped_ops_.insert(std::move(key));
      } else {
        ++gates_not_kept_;
      }
    }
  }
  if (request_unknown) Poison("request:*");
}
void TraceChecker::GatePayloadNames(std::string_view event_type, const dom::element& payload) {
  if (const EventTypeSpec* spec = FindEventType(event_type)) {
    if (spec->gate) spec->gate(*this, payload, true);
  } else {
    for (const EventTypeSpec& row : EventTypes())  // what the unknown type meant is unknown
      if (row.gate) row.gate(*this, payload, false);
  }
}

const TraceChecker::EventInfo* TraceChecker::FindCause(std::string_view request,
                                                        std::string_view event_id) const {
  auto r = requests_.find(request);
  if (r == requests_.end()) return nullptr;
  return r->second.events.Find(event_id, LineHash(event_id));
}

void TraceChecker::IndexUnder(std::string_view request, const Event& e, const EventInfo& info) {
  if (Request* r = FindRequest(request)) r->events.Insert(e.event_id, LineHash(e.event_id), info);
}

lifecycle::BaseRef TraceChecker::BaseForVersion(const lifecycle::Snapshot& s, uint64_t version) {
  if (version == s.version) return s.base();
  if (version < s.version) return {s.generation == 0 ? 0 : s.generation - 1, 0};  // stale
  return {s.generation == UINT64_MAX ? UINT64_MAX : s.generation + 1, 0};          // unknown
}

namespace {

// The member of a semantic event that a lifecycle refusal is about (appended to the event's
// pointer, so a report names the field), or "" where the event as a whole is.
[[gnu::cold]] std::string_view RefusedMember(ErrorCode code, std::string_view event_type) {
  switch (code) {
    case ErrorCode::LIFECYCLE_UNKNOWN_HANDLE:
    case ErrorCode::LIFECYCLE_HANDLE_TERMINAL:
    case ErrorCode::LIFECYCLE_HANDLE_RELEASED:
    case ErrorCode::LIFECYCLE_RELEASE_LIVE:
      return "/request_id";
    case ErrorCode::LIFECYCLE_HANDLE_EXISTS:
      return event_type == "fork" ? "/payload/children" : "/request_id";
    case ErrorCode::LIFECYCLE_STALE_BASE:
    case ErrorCode::LIFECYCLE_UNKNOWN_SNAPSHOT:
      return "/base_snapshot";
    case ErrorCode::LIFECYCLE_CACHE_ABI_MISMATCH:
      return "/payload/cache_abi";
    case ErrorCode::LIFECYCLE_APPEND_HOLE:
    case ErrorCode::LIFECYCLE_APPEND_EMPTY:
    case ErrorCode::LIFECYCLE_LAYER_INTERVAL_MISMATCH:
      return "/payload/interval";
    case ErrorCode::LIFECYCLE_POSITION_MISMATCH:
      return "/payload/cache_position";
    case ErrorCode::LIFECYCLE_MASK_LENGTH_MISMATCH:
      return "/payload/mask_key_length";
    case ErrorCode::LIFECYCLE_POSITION_STAGE_MISMATCH:
      return "/payload/position_stage";
    case ErrorCode::LIFECYCLE_LAYER_OUT_OF_RANGE:
    case ErrorCode::LIFECYCLE_LAYER_DUPLICATE:
      return "/payload/layer";
    case ErrorCode::LIFECYCLE_TXN_UNKNOWN:
    case ErrorCode::LIFECYCLE_LATE_COMPLETION:
    case ErrorCode::LIFECYCLE_TXN_FINAL:
    case ErrorCode::LIFECYCLE_RETRY_CONFLICT:
    case ErrorCode::LIFECYCLE_LAYER_INCOMPLETE:
      return "/operation_id";
    case ErrorCode::LIFECYCLE_FORK_BEYOND_PREFIX:
      return "/payload/prefix_length";
    case ErrorCode::LIFECYCLE_FORK_ALIAS:
      return "/payload/children";
    case ErrorCode::LIFECYCLE_TRUNCATE_GROWTH:
      return "/payload/new_length";
    default:
      return "";
  }
}

}  // namespace

bool TraceChecker::Apply(const Event& e, OpRef op, const std::vector<std::string>* more_handles,
                         bool (*explained)(ErrorCode)) {
  if (KeyEquals(e.outcome, "rejected")) {
    // Tried on the live object and undone if the contract admits it (Save/Restore cost the
    // records the operation can touch, not the object).
    std::vector<std::string_view> handles, txns;
    if (e.request_id) handles.push_back(*e.request_id);
    if (more_handles) handles.insert(handles.end(), more_handles->begin(), more_handles->end());
    if (e.operation_id) txns.push_back(*e.operation_id);
    // An append transaction's own steps change no other transaction of the request: its open
    // set is not copied (probe 86: N - 1 refused publications among N open appends took N^2).
    const bool named_txns_only =
        !more_handles && e.operation_id &&
        (KeyEquals(e.event_type, "append_start") || KeyEquals(e.event_type, "append_publish") ||
         KeyEquals(e.event_type, "append_stage_layer") ||
         KeyEquals(e.event_type, "append_failure") || KeyEquals(e.event_type, "cancel_txn"));
    lifecycle::KvObject::Saved saved = kv_->Save(handles, txns, named_txns_only);
    Status s = op(*kv_);
    if (s.ok() && explained) {  // admitted by an operation the event may not belong to
      kv_->Restore(std::move(saved));
      DropEvent(e);
      return false;
    }
    if (s.ok()) {
      kv_->Restore(std::move(saved));
      Report(ErrorCode::TRACE_OUTCOME_INVALID, LinePtr() + "/outcome",
             std::string(e.event_type) + " reported \"rejected\", but the contract admits it on the replayed "
             "state (the runtime refused a legal operation or the trace lost an event)");
      // Gating: whether the runtime applied it is unknown, so its operation and request are
      // not replayed further (one root cause, one code).
      DropEvent(e);
      return false;
    }
    return false;  // the refusal's own effects stay (a REJECTED transaction)
  }
  Status s = op(*kv_);
  if (!s.ok() && explained && explained(s.error())) {
    DropEvent(e);  // gated: one root cause, reported by the caller
    return false;
  }
  if (!s.ok()) {
    // The lifecycle object speaks of its own generations and digests; the trace names versions.
    if ((s.error() == ErrorCode::LIFECYCLE_UNKNOWN_SNAPSHOT ||
         s.error() == ErrorCode::LIFECYCLE_STALE_BASE) &&
        e.base_snapshot && e.request_id)
      if (const lifecycle::HandleRecord* h = FindHandle(*e.request_id)) {
        const lifecycle::AppendTxn* t = e.operation_id ? kv_->FindTxn(*e.operation_id) : nullptr;
        if (t && h->current.phase != lifecycle::Phase::kReleased &&
            t->incarnation != h->current.incarnation) {
          // A transaction of an earlier, released incarnation of a recycled id (the ABA case):
          // its base belongs to that incarnation, whose generations all precede the live one's
          // (M5.1 0x01: "The generation namespace must itself be non-reused"), so the
          // compare-and-publish fails on generation. The lifecycle object compares digests
          // only and saw an unknown snapshot; its message compared versions of two
          // incarnations (since 2026-12-04: "no such snapshot was ever published ... (the
          // event names base snapshot 2; request "A" is at snapshot 2)", probe 9).
          const Op* op = FindOp(*e.operation_id);  // the base its append_start read
          s = Status(s.code(),
                     std::string(e.event_type) + " " + base::QuoteClipped(*e.operation_id) +
                         " on " + base::QuoteClipped(*e.request_id) +
                         ": its transaction was opened on handle generation " +
                         std::to_string(t->incarnation) + " of " +
                         base::QuoteClipped(*e.request_id) + " (base snapshot " +
                         std::to_string(op ? op->base_version : *e.base_snapshot) +
                         "), which was released; the id now names handle generation " +
                         std::to_string(h->current.incarnation) + ", at snapshot " +
                         std::to_string(h->current.version) +
                         (e.handle_generation && *e.handle_generation != t->incarnation
                              ? " (the event names handle generation " +
                                    std::to_string(*e.handle_generation) + ")"
                              : std::string()) +
                         ". The base generation is older than the live generation: a late "
                         "completion of a released incarnation fails on generation, not address",
                     ErrorCode::LIFECYCLE_STALE_BASE);
          ReportStatus(s, LinePtr() + std::string(RefusedMember(s.error(), e.event_type)));
          DropEvent(e);
          return false;
        }
        // The same version in another state: finish or cancel_request changed the snapshot
        // (its phase) after the operation's base was read, so its compare-and-publish fails.
        const bool same_version = *e.base_snapshot == h->current.version &&
                                  h->current.phase != lifecycle::Phase::kDecodeReady;
        // In the trace's terms (versions), not the lifecycle object's (its internal publication
        // generations, and a digest it does not know for a version never published: probe 23).
        const std::string head =
            std::string(e.event_type) + " on " + base::QuoteClipped(*e.request_id) +
            ": the event names base snapshot " + std::to_string(*e.base_snapshot) + "; request " +
            base::QuoteClipped(*e.request_id) + " is at snapshot " +
            std::to_string(h->current.version);
        std::string why;
        if (s.error() == ErrorCode::LIFECYCLE_UNKNOWN_SNAPSHOT)
          why = ", and its handle generation " + std::to_string(h->current.incarnation) +
                " never published snapshot " + std::to_string(*e.base_snapshot);
        else if (same_version)
          why = ", now " + std::string(lifecycle::PhaseName(h->current.phase)) +
                ": the stop changed the snapshot this operation was opened on, so it cannot "
                "publish on it; open it after the stop, or publish it before";
        else
          why =
              ": the operation read an older snapshot than the live one (a stale base, M5.1 "
              "0x01)";
        s = Status(s.code(), head + why, s.error());
      }
    // A re-sent operation on another base: the lifecycle object names its stand-in for the
    // trace's version (the generation below or above the live one), so the message also names
    // both versions (probe 68: "base generation 1" on both sides of a retry naming 0 and 1).
    if (s.error() == ErrorCode::LIFECYCLE_RETRY_CONFLICT && e.base_snapshot && e.operation_id) {
      std::optional<uint64_t> was = OpBaseVersion(*e.operation_id, e.handle_generation);
      if (was && *was != *e.base_snapshot)
        s = Status(s.code(),
                   s.message() + " [in the trace's versions: this event names base snapshot " +
                       std::to_string(*e.base_snapshot) +
                       "; the original was opened on base "
                       "snapshot " +
                       std::to_string(*was) + "]",
                   s.error());
    }
    ReportStatus(s, LinePtr() + std::string(RefusedMember(s.error(), e.event_type)));
    // Gating: the root cause is reported once; later events of the operation and of its
    // request are not replayed (the runtime went on from a state the replay does not have).
    DropEvent(e);
    return false;
  }
  return true;
}

CheckerExtension* TraceChecker::extension(std::string_view key) const {
  for (const auto& [k, ext] : extensions_)
    if (k == key) return ext.get();
  return nullptr;
}

CheckerExtension& TraceChecker::SetExtension(std::string key,
                                             std::unique_ptr<CheckerExtension> ext) {
  for (auto& [k, slot] : extensions_)
    if (k == key) return *(slot = std::move(ext));
  extensions_.emplace_back(std::move(key), std::move(ext));
  return *extensions_.back().second;
}

void TraceChecker::ReportAt(uint32_t line, Context context, ErrorCode code, std::string pointer,
                            std::string message) {
  const uint32_t saved_line = line_;
  const bool saved_lazy = context_is_event_;
  Context saved = std::move(current_);
  line_ = line;
  current_ = std::move(context);
  context_is_event_ = false;  // the installed context is used as it is
  Report(code, std::move(pointer), std::move(message));
  line_ = saved_line;
  current_ = std::move(saved);
  context_is_event_ = saved_lazy;
}

bool TraceChecker::MayBeForgotten(std::string_view request_id) const {
  if (forgotten_bloom_.empty()) return false;
  const uint64_t h = LineHash(request_id);
  for (int i = 0; i < kForgottenBloomProbes; ++i) {
    const uint64_t bit = ForgottenBloomBit(h, i);
    if (!(forgotten_bloom_[bit / 64] >> (bit % 64) & 1)) return false;
  }
  return true;
}

void TraceChecker::NoteReleased(const std::string& request_id, uint64_t tombstone_generation) {
  released_.emplace_back(request_id, tombstone_generation);
  // Only the same tombstone: a re-allocated id is live again, and one released again since has
  // a newer entry in the window (generations grow with every release).
  auto still_released = [&](const std::string& id, uint64_t generation) {
    const lifecycle::HandleRecord* h = kv_->Find(id);
    return h && h->current.phase == lifecycle::Phase::kReleased &&
           h->current.incarnation == generation;
  };
  // The incarnation released receipt_window releases ago forgets its receipts (counted from
  // its own release, so the verdict on a late retry never depends on unrelated releases before
  // it), whether or not its id has been allocated again since: the later incarnations' records
  // stay, so a recycled id holds the receipts of the window's incarnations only (since
  // 2026-12-04: before, an id allocated again within the window kept every incarnation's
  // records, and a pool of recycled ids grew with the trace's length).
  if (released_.size() > opt_.receipt_window) {
    const auto& [id, generation] = released_[released_.size() - 1 - opt_.receipt_window];
    (void)kv_->ForgetFinalTxnsOf(id, generation);
  }
  while (released_.size() > std::max<size_t>(opt_.released_window, 1)) {
    auto [id, generation] = std::move(released_.front());
    released_.pop_front();
    if (!still_released(id, generation)) {
      // Allocated again since: the tombstone is gone, and so are the released incarnation's
      // open transactions (they can never publish).
      (void)kv_->ForgetTxnsOf(id, generation);
      continue;
    }
    // A request listed in expected_final_states keeps its final snapshot for the end's check
    // (since 2026-12-06, probe 86: every listed request released more than released_window
    // releases before the end was "never allocated or forked"). Bounded by the header's list.
    if (!binding_.expected_final_states.empty()) {
      if (expected_ids_.empty())
        for (const auto& s : binding_.expected_final_states) expected_ids_.insert(s.request_id);
      if (expected_ids_.count(id))
        if (const lifecycle::HandleRecord* h = kv_->Find(id)) forgotten_expected_[id] = h->current;
    }
    if (kv_->ForgetReleased(id).ok()) {
      // A gated incarnation retired at its release (RetireGated) is forgotten like any other,
      // its gate with it.
      if (auto r = requests_.find(id); r != requests_.end() && r->second.gate_retired_at_release)
        if (auto gate = poisoned_.find("request:" + id); gate != poisoned_.end()) {
          gate_bytes_ -= std::min(gate_bytes_, GateCost(gate->first));
          poisoned_.erase(gate);
        }
      if (forgotten_bloom_.empty()) forgotten_bloom_.assign(kForgottenBloomBits / 64, 0);
      const uint64_t h = LineHash(id);
      for (int i = 0; i < kForgottenBloomProbes; ++i) {
        const uint64_t bit = ForgottenBloomBit(h, i);
        forgotten_bloom_[bit / 64] |= uint64_t{1} << (bit % 64);
      }
      last_request_ = nullptr;
      if (auto r = requests_.find(id); r != requests_.end())
        for (const auto& op : r->second.op_ids) EraseOpOf(op, id);  // kept past the release
      requests_.erase(id);
    }
  }
}

void TraceChecker::Feed(std::string_view line, uint32_t line_no) {
  Parser& p = *parser_;
  p.buf.resize(line.size() + simdjson::SIMDJSON_PADDING);
  if (!line.empty()) std::memcpy(p.buf.data(), line.data(), line.size());
  FeedPadded(std::string_view(p.buf.data(), line.size()), line_no);
}

void TraceChecker::FeedPadded(std::string_view line, uint32_t line_no) {
  dom::element root;
  const simdjson::error_code err = (line_no > 1 && !header_ok_)
                                       ? simdjson::SUCCESS  // not parsed: the replay stops
                                       : parser_->parser.parse(line.data(), line.size(), false).get(root);
  ReplayLine(line, line_no, err, root);
}

void TraceChecker::FeedPaddedBatch(const std::string_view* lines, size_t n,
                                   uint32_t first_line_no) {
  while (batch_parsers_.size() < std::min(n, kMaxBatch))
    batch_parsers_.push_back(std::make_unique<Parser>());
  for (size_t start = 0; start < n; start += kMaxBatch) {
    const size_t m = std::min(n - start, kMaxBatch);
    dom::element roots[kMaxBatch];
    simdjson::error_code errs[kMaxBatch];
    for (size_t i = 0; i < m; ++i) {
      const std::string_view line = lines[start + i];
      errs[i] = line.size() > kMaxBatchLine
                    ? simdjson::CAPACITY  // not parsed here; replayed through FeedPadded below
                    : batch_parsers_[i]->parser.parse(line.data(), line.size(), false).get(roots[i]);
    }
    // Most events of the last batch named another request than the event before, and the
    // live requests' records do not all fit the cache: this batch's records are cold.
    const size_t live =
        requests_.size() > released_.size() ? requests_.size() - released_.size() : 0;
    if (request_memo_misses_ * 4 >= m * 3 && live >= opt_.prefetch_from_live_requests) {
      bool parsed[kMaxBatch];
      for (size_t i = 0; i < m; ++i) parsed[i] = errs[i] == simdjson::SUCCESS;
      PrefetchBatchRecords(roots, parsed, m);
      ++prefetched_batches_;
    }
    request_memo_misses_ = 0;
    for (size_t i = 0; i < m; ++i) {
      const uint32_t line_no = first_line_no + static_cast<uint32_t>(start + i);
      if (lines[start + i].size() > kMaxBatchLine)
        FeedPadded(lines[start + i], line_no);
      else
        ReplayLine(lines[start + i], line_no, errs[i], roots[i]);
    }
  }
}

void TraceChecker::PrefetchBatchRecords(const dom::element* roots, const bool* parsed,
                                        size_t m) const {
  // Two passes, so that the misses overlap: the index slots the lines' ids hash to, then (those
  // slots now loading) the records they point at. Only a line's first request_id and
  // operation_id strings are read; whatever the line holds, nothing is judged here.
  std::string_view request[kMaxBatch], operation[kMaxBatch];
  for (size_t i = 0; i < m; ++i) {
    dom::object obj;
    if (!parsed[i] || roots[i].get_object().get(obj) != simdjson::SUCCESS) continue;
    for (dom::key_value_pair f : obj) {
      std::string_view v;
      if (request[i].empty() && KeyEquals(f.key, "request_id") &&
          f.value.get_string().get(v) == simdjson::SUCCESS) {
        request[i] = v;
        requests_.PrefetchSlot(v);
        kv_->PrefetchHandleSlot(v);
      } else if (operation[i].empty() && KeyEquals(f.key, "operation_id") &&
                 f.value.get_string().get(v) == simdjson::SUCCESS) {
        operation[i] = v;
        ops_.PrefetchSlot(v);
        kv_->PrefetchTxnSlot(v);
      }
    }
  }
  for (size_t i = 0; i < m; ++i) {
    if (!request[i].empty()) {
      requests_.Prefetch(request[i]);
      kv_->PrefetchHandle(request[i]);
    }
    if (!operation[i].empty()) {
      ops_.Prefetch(operation[i]);
      kv_->PrefetchTxn(operation[i]);
    }
  }
}

bool TraceChecker::StartLine(uint32_t line_no, bool empty) {
  line_ = line_no;
  current_.event_id.clear();
  current_.request_id.clear();
  context_is_event_ = false;
  if (line_no == 1) header_seen_ = true;
  if (line_no > 1 && !header_ok_) return false;  // an unusable header stops the replay
  if (end_line_ != 0) {  // the end record ended the trace: later lines are counted, not replayed
    if (after_end_lines_++ == 0) after_end_first_ = line_no;
    after_end_last_ = line_no;
    after_end_empty_ += empty;
    return false;
  }
  return true;
}

namespace {
// The value of `key` in `text`, the first bytes of a JSON object, when it is a top-level member
// whose value is a string without escapes that ends within `text`; "" otherwise. Strings are
// skipped whole, so a key or brace inside one is not read as structure.
std::string TopLevelPlainString(std::string_view text, std::string_view key) {
  size_t depth = 0;
  bool expect_key = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '{' || ch == '[') {
      ++depth;
      expect_key = ch == '{' && depth == 1;
    } else if (ch == '}' || ch == ']') {
      if (depth == 0) return "";
      --depth;
    } else if (ch == ',') {
      expect_key = depth == 1;
    } else if (ch == '"') {
      size_t end = i + 1;  // the closing quote
      while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
      if (end >= text.size()) return "";
      const std::string_view str = text.substr(i + 1, end - i - 1);
      const bool is_key = expect_key;
      expect_key = false;
      i = end;
      if (!is_key || str != key) continue;
      size_t v = i + 1;
      while (v < text.size() && (text[v] == ' ' || text[v] == '\t' || text[v] == '\r' ||
                                 text[v] == '\n' || text[v] == ':'))
        ++v;
      if (v >= text.size() || text[v] != '"') return "";
      const size_t close = text.find('"', v + 1);
      if (close == std::string_view::npos) return "";
      const std::string_view value = text.substr(v + 1, close - v - 1);
      if (value.find('\\') != std::string_view::npos) return "";
      return std::string(value);
    }
  }
  return "";
}
}  // namespace

void TraceChecker::FeedOverlongLine(uint32_t line_no, uint64_t bytes, std::string_view prefix) {
  if (!StartLine(line_no, /*empty=*/false)) return;
  prefix = prefix.substr(0, kOverlongPrefixBytes);
  if (line_no > 1) {
    last_line_unread_ = true;
    NoteUnnumberedDrop({});  // an event whose source and number are unknown may be lost here
    current_ = {TopLevelPlainString(prefix, "event_id"), TopLevelPlainString(prefix, "request_id")};
  }
  Report(line_no == 1 ? ErrorCode::TRACE_HEADER_INVALID : ErrorCode::TRACE_LINE_TOO_LONG, LinePtr(),
         "the line is " + std::to_string(bytes) + " bytes long, more than the checker's limit of " +
             std::to_string(opt_.max_line_bytes) + " (--max-line-bytes): not held or parsed" +
             (line_no == 1 ? std::string(" (the header is unusable: no event is replayed)")
                           : std::string(" (the line is not replayed)")));
  if (line_no > 1 && !current_.request_id.empty()) Poison("request:" + current_.request_id);
}

void TraceChecker::ReplayLine(std::string_view line, uint32_t line_no, int err_code,
                              const dom::element& root) {
  const auto err = static_cast<simdjson::error_code>(err_code);
  if (!StartLine(line_no, line.empty())) return;
  last_line_unread_ = line_no > 1 && (line.empty() || err || !root.is_object());
  if (last_line_unread_)
    NoteUnnumberedDrop({});  // an event whose source and number are unknown may be lost here
  if (line.empty() || err) {
    const bool byte_order_mark = line.substr(0, 3) == "\xEF\xBB\xBF";
    if (!line.empty() && !byte_order_mark &&
        ReportUnparsedLine(line, line_no, err == simdjson::DEPTH_ERROR))
      return;
    // After a byte-order mark, an event whose ids are readable is named and its request gated,
    // as for the other lines that are read but not replayed (since 2026-12-06, probe 77: its
    // request's next event raised a code of its own, LIFECYCLE_LAYER_INCOMPLETE at a publish).
    if (byte_order_mark && line_no > 1) NameUnreplayedEvent(line.substr(3), JsonLimits().max_depth);
    Report(line_no == 1 ? ErrorCode::TRACE_HEADER_INVALID : ErrorCode::TRACE_LINE_MALFORMED,
           LinePtr(),
           (line.empty() ? std::string("empty line; expected one JSON object")
            : byte_order_mark
                ? std::string("starts with a UTF-8 byte-order mark (EF BB BF); a JSON Lines "
                              "trace has none (the line is not replayed)")
                : std::string("not JSON: ") + simdjson::error_message(err)));
    if (byte_order_mark && line_no > 1 && !current_.request_id.empty())
      Poison("request:" + current_.request_id);
    return;
  }
  if (!root.is_object()) {
    Report(line_no == 1 ? ErrorCode::TRACE_HEADER_INVALID : ErrorCode::TRACE_LINE_MALFORMED,
           LinePtr(), "expected one JSON object per line");
    return;
  }
  if (line_no == 1) {
    ReadHeader(root);
    return;
  }
  ReadEvent(line, root);
}

// The cold path of a line simdjson refused: the strict reader (reference/base/strict_json.h)
// says where and why. Valid JSON that simdjson cannot hold is a number beyond 64 bits, which no
// field of the format admits: INPUT_VALUE_OUT_OF_RANGE at its member, and the request the line
// names (when readable) is gated, since the event is not replayed. False when the strict
// reader finds nothing to add (the caller reports simdjson's own error).
namespace {

// The 0-based offsets of the \\uXXXX escapes in `line`'s strings that are lone UTF-16 surrogates
// (a high one not followed by a low one, or a low one alone). RFC 8259's grammar admits them;
// no Unicode text holds them, so simdjson and the strict reader refuse the line.
std::vector<size_t> LoneSurrogateEscapes(std::string_view line) {
  auto hex4 = [&](size_t i, unsigned* v) {
    if (i + 4 > line.size()) return false;
    *v = 0;
    for (size_t k = i; k < i + 4; ++k) {
      const char ch = line[k];
      const int d = ch >= '0' && ch <= '9'   ? ch - '0'
                    : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                    : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                             : -1;
      if (d < 0) return false;
      *v = *v * 16 + static_cast<unsigned>(d);
    }
    return true;
  };
  std::vector<size_t> lone;
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (!in_string) {
      in_string = line[i] == '"';
      continue;
    }
    if (line[i] == '"') {
      in_string = false;
    } else if (line[i] == '\\' && i + 1 < line.size()) {
      unsigned cp = 0;
      if (line[i + 1] != 'u' || !hex4(i + 2, &cp)) {
        ++i;  // a one-character escape
        continue;
      }
      unsigned lo = 0;
      if (cp >= 0xD800 && cp <= 0xDBFF && i + 7 < line.size() && line[i + 6] == '\\' &&
          line[i + 7] == 'u' && hex4(i + 8, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
        i += 11;  // a surrogate pair
      } else {
        if (cp >= 0xD800 && cp <= 0xDFFF) lone.push_back(i);
        i += 5;
      }
    }
  }
  return lone;
}

// The 0-based offsets of the bytes in `line`'s strings that are not UTF-8 (RFC 3629: a byte that
// starts no well-formed sequence, or a sequence cut short, overlong, a surrogate or beyond
// U+10FFFF; each byte of such a sequence is listed), and its raw control bytes (below 0x20,
// which JSON requires escaped). Bytes outside strings are not listed (the line is not JSON there
// whatever they are).
std::vector<size_t> NonUtf8StringBytes(std::string_view line) {
  auto at = [&](size_t i) { return i < line.size() ? static_cast<unsigned char>(line[i]) : 0u; };
  auto cont = [&](size_t i) { return (at(i) & 0xC0u) == 0x80u; };
  std::vector<size_t> bad;
  bool in_string = false;
  for (size_t i = 0; i < line.size();) {
    const unsigned b = at(i);
    if (b < 0x80) {
      // A raw control byte in a string is flagged too: JSON requires it escaped, and the line is
      // read again with it as '?' like a byte that is not UTF-8 (since 2026-12-06, probe 86: it
      // was "not JSON", naming nothing, and its request's next event raised a second code).
      if (in_string && b < 0x20) bad.push_back(i);
      if (b == '"') in_string = !in_string;
      i += (in_string && b == '\\') ? 2 : 1;  // an escaped character is ASCII or an escape
      continue;
    }
    // The length of the well-formed sequence starting at i, or 0 (RFC 3629's table).
    size_t n = 0;
    if (b >= 0xC2 && b <= 0xDF) {
      n = cont(i + 1) ? 2 : 0;
    } else if (b >= 0xE0 && b <= 0xEF) {
      const unsigned lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
      n = at(i + 1) >= lo && at(i + 1) <= hi && cont(i + 2) ? 3 : 0;
    } else if (b >= 0xF0 && b <= 0xF4) {
      const unsigned lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
      n = at(i + 1) >= lo && at(i + 1) <= hi && cont(i + 2) && cont(i + 3) ? 4 : 0;
    }
    if (n == 0) {
      if (in_string) bad.push_back(i);
      n = 1;  // the next byte starts a sequence of its own (or is flagged in turn)
    }
    i += n;
  }
  return bad;
}

}  // namespace

bool TraceChecker::NameUnreplayedEvent(std::string_view text, size_t max_depth) {
  JsonLimits limits;
  limits.max_depth = max_depth;
  StatusOr<ParsedJson> parsed = ParseJsonStrict(text, "", /*record_locations=*/false, limits);
  if (!parsed.ok() || !parsed->value.is_object()) return false;
  auto id_of = [&](const char* member) {
    auto m = parsed->value.find(member);
    return m != parsed->value.end() && m->is_string() ? m->get<std::string>() : std::string();
  };
  current_ = {id_of("event_id"), id_of("request_id")};
  context_is_event_ = false;
  return true;
}

bool TraceChecker::ReportUnparsedLine(std::string_view line, uint32_t line_no, bool too_deep) {
  const std::string at = source_ + ":" + std::to_string(line_no) + ":";
  const ErrorCode malformed =
      line_no == 1 ? ErrorCode::TRACE_HEADER_INVALID : ErrorCode::TRACE_LINE_MALFORMED;
  if (too_deep) {
    // Nesting beyond the parser's limit: valid JSON, though no object of the format nests more
    // than a few levels. Read again with a deeper (still bounded: the reader recurses) limit, so
    // that the event and its request are named and the request gated (since 2026-12-05, probe
    // 28: the strict reader's own 128-level limit was named, at its column, and the request's
    // next event raised a code of its own).
    const bool named = line_no > 1 && NameUnreplayedEvent(line, 2 * parser_->parser.max_depth());
    Report(malformed, LinePtr(),
           at + " nests deeper than " + std::to_string(parser_->parser.max_depth()) +
               " levels of arrays and objects, the parser's limit (no member of the format nests "
               "more than a few) " +
               (line_no == 1 ? "(the header is unusable: no event is replayed)"
                             : "(the line is not replayed)"));
    if (named && !current_.request_id.empty()) Poison("request:" + current_.request_id);
    return true;
  }
  const ErrorCode out_of_range =
      line_no == 1 ? ErrorCode::TRACE_HEADER_INVALID : ErrorCode::INPUT_VALUE_OUT_OF_RANGE;
  // In the header such a number leaves the whole header unusable, wherever it stands (probe
  // 28: the message said only "the line is not replayed").
  const std::string only_64_bits =
      std::string(
          "every integer of the format is a uint64 (at most 18446744073709551615) or an "
          "int64 ") +
      (line_no == 1 ? "(the header is unusable: no event is replayed)"
                    : "(the line is not replayed)");
  std::string copy(line);
  // A lone surrogate escape: the line is JSON by RFC 8259's grammar, with a string no UTF-8
  // text can hold. It is read again with each replaced by \\ufffd (as long), so that the event
  // is reported once and its request gated, as for a number beyond 64 bits (since 2026-12-04,
  // probe 23: "not JSON", and the next event of its request raised a second code).
  const std::vector<size_t> lone = LoneSurrogateEscapes(line);
  for (size_t at_escape : lone) copy.replace(at_escape, 6, "\\ufffd");
  // So is a raw byte that is not UTF-8 inside a string, read again as '?' (as long; since
  // 2026-12-05, probe 23 finding 01c: "not JSON", naming nothing, and the next event of its
  // request raised a code of its own).
  const std::vector<size_t> raw = NonUtf8StringBytes(line);
  for (size_t b : raw) copy[b] = '?';
  // Both kinds, in line order (the copy keeps the line's offsets).
  std::vector<size_t> unreadable = lone;
  unreadable.insert(unreadable.end(), raw.begin(), raw.end());
  std::sort(unreadable.begin(), unreadable.end());
  // Read within the parser's twice depth limit (as a line too deep above), and a repeated key
  // read as its first value (simdjson admits it; the event readers report it): what is reported
  // is the escape, byte or number (probe 32: a line also deeper than 128 levels, or also
  // holding a repeated key, was "not JSON" at that, naming nothing, and its request cascaded).
  JsonLimits reread;
  reread.max_depth = 2 * parser_->parser.max_depth();
  reread.first_of_duplicates = true;
  StatusOr<ParsedJson> parsed = ParseJsonStrict(copy, "", /*record_locations=*/true, reread);
  // Where the copy's replacements end and how much longer each made it (for columns).
  std::vector<std::pair<size_t, ptrdiff_t>> grown;
  constexpr std::string_view kBig = "18446744073709551616";
  // The column in the line as written of a column of the copy: less what the replacements
  // before it added.
  auto original_column = [&](size_t column) {
    ptrdiff_t c = static_cast<ptrdiff_t>(column);
    for (const auto& [copy_end, added] : grown)
      if (copy_end < column) c -= added;
    return c;
  };
  // At most this many such numbers are replaced (each pass reads the line again); a line with
  // more is reported by its first one's column alone.
  constexpr int kMaxPasses = 16;
  size_t first_column = 0;
  for (int pass = 0; !parsed.ok() && parsed.status().message().find(
                                         "out of the range of a double") != std::string::npos;
       ++pass) {
    // Valid JSON too (RFC 8259 bounds no number): read it again with that number replaced by
    // one the strict reader keeps (2^64, as a double), so the search below names its member;
    // each pass replaces the next such number.
    const std::string m = parsed.status().message();
    const size_t column = std::strtoull(m.c_str() + std::min<size_t>(3, m.size()), nullptr, 10);
    if (column < 1 || column > copy.size()) break;
    if (pass == 0) first_column = column;
    if (pass == kMaxPasses) {
      Report(out_of_range, LinePtr(),
             at + std::to_string(first_column) + ": more than " + std::to_string(kMaxPasses) +
                 " numbers beyond 64 bits, the first at this column; " + only_64_bits);
      return true;
    }
    size_t end = column - 1;
    while (end < copy.size() && std::strchr("+-.0123456789eE", copy[end]) != nullptr) ++end;
    const size_t len = end - (column - 1);
    if (len == 0) break;
    copy.replace(column - 1, len, kBig);
    grown.emplace_back(column - 1 + kBig.size(),
                       static_cast<ptrdiff_t>(kBig.size()) - static_cast<ptrdiff_t>(len));
    parsed = ParseJsonStrict(copy, "", /*record_locations=*/true, reread);
  }
  if (!parsed.ok()) {
    // "<source>:1:<column>: what": the line is one line, so only the column is news (in the
    // line as written).
    std::string what = parsed.status().message();
    if (what.rfind(":1:", 0) != 0) return false;
    char* after = nullptr;
    const size_t column = std::strtoull(what.c_str() + 3, &after, 10);
    if (!grown.empty() && after && *after == ':')
      what = ":1:" + std::to_string(original_column(column)) + after;
    Report(malformed, LinePtr(), at + what.substr(3) + " (not JSON)");
    return true;
  }
  // Whether a lone escape or a byte not UTF-8 lies in the string value at `pointer` (the copy
  // keeps the line's offsets): an id holding one is unreadable, so what it names is unknown
  // (probe 26: a request_id or a fork child's id with one gated nothing, and its next event
  // raised a code).
  auto inside = [&](const std::string& pointer) {
    auto pos = parsed->locations.find(pointer);
    if (pos == parsed->locations.end() || pos->second.column == 0) return false;
    const size_t b = pos->second.column - 1;
    if (b >= line.size() || line[b] != '"') return false;
    size_t end = b + 1;
    while (end < line.size() && line[end] != '"') end += line[end] == '\\' ? 2 : 1;
    return std::any_of(unreadable.begin(), unreadable.end(),
                       [&](size_t at) { return at > b && at < end; });
  };
  // An event's violation names the event and its request where their ids are readable (probe
  // 28: a number beyond 64 bits named neither).
  if (line_no > 1 && parsed->value.is_object()) {
    auto id_of = [&](const char* member) {
      auto m = parsed->value.find(member);
      return m != parsed->value.end() && m->is_string() && !inside(std::string("/") + member)
                 ? m->get<std::string>()
                 : std::string();
    };
    current_ = {id_of("event_id"), id_of("request_id")};
    context_is_event_ = false;
  }
  auto gate_request = [&] {
    if (line_no > 1 && parsed->value.is_object()) {
      auto r = parsed->value.find("request_id");
      if (r != parsed->value.end() && r->is_string()) Poison("request:" + r->get<std::string>());
    }
  };
  if (!unreadable.empty()) {
    const size_t first = unreadable.front();
    const bool escape = !lone.empty() && lone.front() == first;
    static constexpr char kHex[] = "0123456789ABCDEF";
    const unsigned byte = static_cast<unsigned char>(line[first]);
    Report(malformed, LinePtr(),
           at + std::to_string(first + 1) + ": " +
               (escape ? "\"" + std::string(line.substr(first, 6)) +
                             "\" is a lone UTF-16 surrogate escape"
                       : std::string("byte 0x") + kHex[byte >> 4] + kHex[byte & 15] +
                             (byte < 0x20 ? " in a string is a control character JSON requires "
                                            "escaped (\\u00XX)"
                                          : " in a string is not UTF-8")) +
               (unreadable.size() > 1 ? " (and " + std::to_string(unreadable.size() - 1) + " more)"
                                      : "") +
               (escape ? ": JSON's grammar admits it, but it encodes no Unicode character, and"
                       : ":") +
               " a trace's strings are UTF-8 text " +
               (line_no == 1 ? "(the header is read with U+FFFD for an escape, '?' for a byte)"
                             : "(the line is not replayed)"));
    if (line_no == 1) {
      // The header is read from the repaired copy: a free-text member holding such an escape
      // (producer.name, description) does not stop the replay (probe 27: nothing was checked).
      // What the header keeps is copied out of this document.
      const simdjson::padded_string padded(copy);
      dom::parser header_parser;
      dom::element header;
      const size_t before = violations_.size();
      if (!header_parser.parse(padded).get(header) && header.is_object()) ReadHeader(header);
      // What the repaired text itself breaks is the byte's doing, already reported: a member
      // whose value holds the byte (an enum then names no value), a member name holding it (an
      // unknown member), and a member missing beside a damaged name (probe 32: one root cause
      // raised two or three codes). Facts the repair leaves intact are still judged.
      auto damaged_name = [&](std::string_view name) {
        return name.find('?') != std::string_view::npos;
      };
      auto caused_by_repair = [&](const Violation& x) {
        const std::string& lp = LinePtr();
        if (x.pointer.rfind(lp, 0) != 0) return false;
        const std::string path = x.pointer.substr(lp.size());
        if (path.empty()) return false;
        if (inside(path)) return true;
        const size_t slash = path.rfind('/');
        if (damaged_name(std::string_view(path).substr(slash + 1))) return true;
        if (x.code != ErrorCode::INPUT_FIELD_MISSING) return false;
        const Json* parent = &parsed->value;
        if (slash > 0) {
          try {
            parent = &parsed->value.at(Json::json_pointer(path.substr(0, slash)));
          } catch (...) {
            return false;
          }
        }
        if (!parent->is_object()) return false;
        for (auto it = parent->begin(); it != parent->end(); ++it)
          if (damaged_name(it.key())) return true;
        return false;
      };
      size_t kept = before;
      for (size_t i = before; i < violations_.size(); ++i) {
        if (caused_by_repair(violations_[i])) continue;
        // (Not onto itself: a self-move assignment emptied every kept violation's pointer and
        // message; probe 43.)
        if (kept != i) {
          violations_[kept] = std::move(violations_[i]);
          contexts_[kept] = std::move(contexts_[i]);
        }
        ++kept;
      }
      violations_.resize(kept);
      contexts_.resize(kept);
      return true;
    }
    if (!parsed->value.is_object()) return true;
    const Json& v = parsed->value;
    if (inside("/request_id")) {
      // As for an envelope whose request cannot be read (ReadEnvelope): the operation's request
      // is gated, else every request not yet created.
      std::string op;
      if (auto o = v.find("operation_id");
          o != v.end() && o->is_string() && !inside("/operation_id"))
        op = o->get<std::string>();
      if (!op.empty()) PoisonOp(op);
      GateOperationRequest(op, /*request_unknown=*/true);
    } else {
      gate_request();
    }
    if (auto pl = v.find("payload"); pl != v.end() && pl->is_object())
      if (auto kids = pl->find("children"); kids != pl->end() && kids->is_array())
        for (size_t i = 0; i < kids->size(); ++i)
          if (inside("/payload/children/" + std::to_string(i) + "/request_id")) {
            Poison("request:*");  // a child whose id cannot be read: whichever it was
            break;
          }
    return true;
  }
  // The first number beyond 64 bits, depth first (the strict reader keeps it as a double; a
  // double at -2^63 stands for a number below it, since simdjson holds -2^63 itself).
  std::string found;
  std::function<bool(const Json&, const std::string&)> find = [&](const Json& j,
                                                                  const std::string& ptr) {
    if (j.is_number_float()) {
      const double v = j.get<double>();
      if (v >= 18446744073709551616.0 || v <= -9223372036854775808.0) {
        found = ptr;
        return true;
      }
    } else if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it)
        if (find(it.value(), ptr + "/" + JsonPointerEscape(it.key()))) return true;
    } else if (j.is_array()) {
      for (size_t i = 0; i < j.size(); ++i)
        if (find(j[i], ptr + "/" + std::to_string(i))) return true;
    }
    return false;
  };
  if (!find(parsed->value, "")) return false;
  const auto pos = parsed->locations.find(found);
  Report(out_of_range, LinePtr() + found,
         at +
             (pos != parsed->locations.end()
                  ? std::to_string(original_column(pos->second.column)) + ":"
                  : "") +
             " " + found + " is a number beyond 64 bits; " + only_64_bits);
  gate_request();
  return true;
}

void TraceChecker::ReadHeader(const dom::element& root) {
  dom::object obj = root.get_object().value_unsafe();
  ObjReader h(obj, "/0", this);
  auto kind = h.Str("kind");
  if (!kind || *kind != kTraceKind) {
    if (kind)
      Report(ErrorCode::TRACE_HEADER_INVALID, "/0/kind",
             "line 1 declares kind " + base::QuoteClipped(*kind) + "; expected \"" + kTraceKind +
                 "\"");
    return;
  }
  auto version = h.Uint("schema_version");
  if (version && *version != kTraceSchemaVersion) {
    Report(ErrorCode::TRACE_HEADER_INVALID, "/0/schema_version",
           "schema_version " + std::to_string(*version) + " is not supported (this checker reads " +
               std::to_string(kTraceSchemaVersion) + ")");
    return;
  }
  if (auto prod = h.Object("producer", /*errors_mark_parent=*/false)) {
    prod->NonEmptyStr("name");
    prod->NonEmptyStr("revision");
    prod->RejectUnknown();
  }
  lifecycle::CacheAbi abi;
  bool abi_ok = false;  // an unusable cache ABI leaves nothing to replay against
  if (auto a = h.Object("cache_abi", /*errors_mark_parent=*/false)) {
    abi.id = a->Str("id").value_or("");
    abi.num_layers = static_cast<uint32_t>(a->Uint("num_layers", 1u << 20).value_or(0));
    abi.position_stage = a->Enum("position_stage", {"post_rope", "pre_rope"}).value_or("");
    bytes_per_token_ = a->Uint("bytes_per_token", uint64_t{1} << 40).value_or(0);
    if (a->clean() && abi.num_layers == 0)
      Report(ErrorCode::INPUT_VALUE_OUT_OF_RANGE, "/0/cache_abi/num_layers",
             "a cache ABI has at least one cache-producing layer");
    // B_token = L * H_kv * d_h * (b_K + b_V) (M5.1 0x02) has no zero factor, and each of the
    // L cache-producing layers stores at least one byte of a token (probe 30: 1 byte for 2
    // layers passed; a sub-byte dtype still stores H_kv * d_h * (b_K + b_V) >= 1 per layer).
    // Every layer stores the same whole bytes of a token (H_kv * d_h * (b_K + b_V)), so
    // B_token is a multiple of L (probe 91: 64 B over 3 layers passed, and each layer's staged
    // payload was then reported at every stage as a fraction).
    const bool bytes_ok =
        !a->clean() || abi.num_layers == 0 ||
        (bytes_per_token_ >= abi.num_layers && bytes_per_token_ % abi.num_layers == 0);
    if (!bytes_ok)
      Report(ErrorCode::INPUT_VALUE_OUT_OF_RANGE, "/0/cache_abi/bytes_per_token",
             "bytes_per_token " + std::to_string(bytes_per_token_) +
                 (bytes_per_token_ < abi.num_layers ? " is below num_layers "
                                                    : " is not a multiple of num_layers ") +
                 std::to_string(abi.num_layers) +
                 ": every cache-producing layer stores the same whole bytes of K/V per token, at "
                 "least one (B_token = L * H_kv * d_h * (b_K + b_V))");
    a->RejectUnknown();
    abi_ok = a->clean() && bytes_ok;
  }
  // An optional member that is null is the same as an absent one (trace-format.md "Event
  // envelope"; probe 47: a null bindings, allocator_model or residency_model stopped the replay).
  auto present = [&h](std::string_view key) {
    if (!h.Has(key)) return false;
    if (!h.IsNull(key)) return true;
    h.Allow(key);
    return false;
  };
  if (present("bindings")) {
    if (auto b = h.Object("bindings", /*errors_mark_parent=*/false)) {
      // The pins are digests, and the ABI the trace binds to is the one its cache_abi names
      // (probe 94: a malformed pin, and a cache_abi_sha256 other than cache_abi.id, passed).
      // Reported on line 1; the replay goes on under cache_abi.
      const auto manifest_pin = b->OptStr("manifest_sha256");
      b->OptStr("runtime");
      const auto abi_pin = b->OptStr("cache_abi_sha256");
      b->RejectUnknown();
      for (const auto& [key, pin] :
           {std::pair{"manifest_sha256", manifest_pin}, std::pair{"cache_abi_sha256", abi_pin}})
        if (pin && !IsSha256Hex(*pin))
          Report(ErrorCode::INPUT_VALUE_INVALID, std::string("/0/bindings/") + key,
                 "expected a 64-character lowercase hex SHA-256, got " + base::QuoteClipped(*pin));
      // (Compared only where cache_abi.id is itself a digest, in either case: an id that is a
      // label names the ABI the pin digests, which the trace cannot check; probe 95.)
      std::string id_lower = abi.id;
      for (char& ch : id_lower)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (abi_pin && IsSha256Hex(*abi_pin) && abi_ok && IsSha256Hex(id_lower) &&
          *abi_pin != id_lower)
        Report(ErrorCode::LIFECYCLE_CACHE_ABI_MISMATCH, "/0/bindings/cache_abi_sha256",
               "the trace binds to cache ABI " + std::string(*abi_pin) +
                   " but its cache_abi.id is the digest " + base::QuoteClipped(abi.id) +
                   ": the events are bound to cache_abi, so the pin names the same ABI");
    }
  }
  if (present("allocator_model")) {
    if (auto m = h.Object("allocator_model", /*errors_mark_parent=*/false)) {
      auto per_block = m->Uint("slots_per_block", uint64_t{1} << 32);
      auto used = m->Enum("used_slots", {"committed_rows"}, true);
      if (per_block && *per_block == 0)
        Report(ErrorCode::INPUT_VALUE_OUT_OF_RANGE, "/0/allocator_model/slots_per_block",
               "an allocator block holds at least one slot");
      else if (per_block)
        allocator_slots_per_block_ = *per_block;
      allocator_used_committed_ = used.has_value();
      m->RejectUnknown();
    }
  }
  if (present("end_record"))
    if (auto required = h.OptBool("end_record")) end_required_ = *required;
  // An unreadable residency model is reported and the replay goes on with residency bytes not
  // compared, as under "tiered" (probe 100: it stopped the replay, leaving every request
  // unjudged, where a bad allocator_model is reported and the replay goes on): it is read by a
  // reader of its own, whose report does not make the header unusable.
  if (present("residency_model")) {
    h.Allow("residency_model");
    ObjReader r(obj, "/0", this);
    const auto model = r.Enum("residency_model", {"one_copy", "tiered"}, /*optional=*/true);
    residency_one_copy_ = model && *model == "one_copy";
  }
  // A bad member of a sources entry is reported and the replay goes on (probe 47: it stopped
  // the replay): an entry whose instance or component cannot be read declares nothing, and
  // that source's events are then its undeclared events.
  size_t readable_entries = 0;
  h.ObjectArray(
      "sources",
      [&](ObjReader& s) {
        // An empty name declares nothing (reported): as an unreadable one.
        auto inst = s.NonEmptyStr("source_instance");
        auto comp = s.Enum("source_component", {"semantic", "allocator", "residency", "transfer"});
        s.OptStr("clock_domain");
        if (inst) ++readable_entries;
        if (inst && !comp && !sources_.count(*inst)) {
          // Declared with a component that cannot be read (reported): its events are judged by
          // the component each states, as an adopted source's, without a second code.
          SourceState& src = sources_[*inst];
          src.component_contradicted = true;
          src.adopted = true;
        }
        if (inst && comp) {
          // A second declaration is reported and ignored: the first stands (one code, not one
          // per event of the source for a component the second one changed).
          if (sources_.count(*inst))
            Report(ErrorCode::INPUT_VALUE_INVALID, s.pointer(),
                   "source_instance " + base::QuoteClipped(*inst) +
                       " declared twice (the first declaration stands)");
          else
            sources_[*inst].component = *comp;
        }
      },
      /*errors_mark_parent=*/false);
  if (dom::array entries; !obj["sources"].get(entries) && entries.size() > readable_entries)
    unreadable_source_entries_ = entries.size() - readable_entries;
  // "sampled" and "partial" are named so that their refusal says why (probe 41: "partial" was
  // "not one of complete|sampled", listing a value that is refused too).
  auto sampling = h.Enum("audit", {"complete", "sampled", "partial"});
  if (sampling && *sampling != "complete")
    Report(ErrorCode::TRACE_HEADER_INVALID, "/0/audit",
           "a " + *sampling +
               " trace is not a complete mutation journal: absence of an event proves nothing, "
               "so it cannot be replayed (M5.1 0x07); only audit \"complete\" is checked");
  h.OptStr("description");
  h.OptStr("regenerate");
  for (auto key : kRuntimeBindingKeys) h.Allow(key);  // runtime_binding.h reads them
  for (auto& v : ReadRuntimeBinding(obj, &binding_)) Report(v.code, v.pointer, v.message);
  h.RejectUnknown();
  if (!h.clean() || !abi_ok || abi.num_layers == 0 || !sampling || *sampling != "complete")
    return;
  kv_ = std::make_unique<lifecycle::KvObject>(abi);
  header_ok_ = true;
}

TraceChecker::SourceState* TraceChecker::CheckSource(Event& e, const EventTypeSpec& spec,
                                                     bool* unnumbered) {
  if (last_source_ == nullptr || !SameBytes(last_source_name_, e.source_instance)) {
    auto it = sources_.find(e.source_instance);
    if (it == sources_.end()) {
      // The header is incomplete. Reported once per source: the source is then adopted and its
      // events are replayed (a misspelled or missing declaration raises one code, not one per
      // event plus the replay's cascade).
      // At most kMaxUndeclaredSources such sources, so that memory stays bounded; beyond them,
      // and for a component that names no plane, each event is reported and not replayed.
      const bool adopt =
          undeclared_sources_ < kMaxUndeclaredSources && IsPlaneComponent(e.source_component);
      // An adopted source has no declaration: its events are judged by the component each
      // states (this first one too, which is dropped, without a second code, when that is not
      // its type's plane: probe 26).
      const bool own_plane = SameBytes(e.source_component, PlaneComponent(spec.plane));
      // A header entry whose instance could not be read (reported there) may be this source:
      // it is adopted without a second code.
      const bool entry_unreadable = adopt && unreadable_source_entries_ > 0;
      if (entry_unreadable) {
        --unreadable_source_entries_;
      } else {
        Report(
            ErrorCode::TRACE_SOURCE_UNDECLARED, LinePtr() + "/source_instance",
            "source_instance " + base::QuoteClipped(e.source_instance) +
                " is not declared in the header" +
                (adopt ? " (its events are replayed by the component each states; this is "
                         "reported once)"
                       : "") +
                (own_plane
                     ? ""
                     : "; this event's source_component " + base::QuoteClipped(e.source_component) +
                           " is not its type's plane (" + std::string(PlaneComponent(spec.plane)) +
                           "): it is not replayed"));
        // Its source may be a declared one misnamed: its number may then be the hole that
        // source shows next, which is not also a gap (one root cause, one code; probe 45).
        ++unattributed_drops_;
      }
      if (!adopt) return nullptr;
      ++undeclared_sources_;
      it = sources_.try_emplace(std::string(e.source_instance)).first;
      it->second.component = std::string(e.source_component);
      it->second.component_contradicted = true;
      it->second.adopted = true;
      last_source_name_ = it->first;
      last_source_ = &it->second;
      return own_plane ? last_source_ : nullptr;
    }
    last_source_name_ = it->first;  // map keys are stable: sources are never erased
    last_source_ = &it->second;
  }
  SourceState& s = *last_source_;
  if (SameBytes(e.source_component, s.component)) [[likely]] {
    if (SameBytes(e.source_component, PlaneComponent(spec.plane))) {
      s.declared_plane_seen = true;
      return &s;
    }
  } else if (SameBytes(e.source_component, PlaneComponent(spec.plane))) {
    // The event agrees with its type's plane and the header does not. While the source has
    // sent no event of its declared component, one declaration is wrong: it is reported once,
    // and the source's events are judged by the component each states (since 2026-12-04, probe
    // 23: every event of the source was reported and dropped, so nothing of its plane was
    // judged). Once it has, the event is another source's under this source's name (a
    // relabel): reported, and replayed by its component without being numbered in this source,
    // whose sequence it is not part of; the hole its own source then shows is not also a gap
    // (since 2026-12-06, probe 83: a residency observation relabelled with the semantic
    // source's name raised a regression there and a gap in the residency source, 2-4 codes for
    // one field).
    if (s.declared_plane_seen) {
      Report(ErrorCode::TRACE_SOURCE_UNDECLARED, LinePtr() + "/source_instance",
             "event " + std::string(e.event_type) + " from source_component " +
                 base::QuoteClipped(e.source_component) +
                 " (its type's plane) names source_instance " +
                 base::QuoteClipped(e.source_instance) + ", which the header declares " +
                 base::QuoteClipped(s.component) +
                 " and which has sent events of that component: another "
                 "source's event under this name? It is replayed by its component, not numbered "
                 "in " +
                 base::QuoteClipped(e.source_instance));
      *unnumbered = true;
      ++unattributed_drops_;
      return &s;
    }
    if (!s.component_contradicted)
      Report(ErrorCode::TRACE_SOURCE_UNDECLARED, LinePtr() + "/source_component",
             "event " + std::string(e.event_type) + " from source_component " +
                 base::QuoteClipped(e.source_component) +
                 " (its type's plane); the header declares " + base::QuoteClipped(s.component) +
                 " for " + base::QuoteClipped(e.source_instance) +
                 " (its events are replayed by the component each states; this is reported "
                 "once)");
    s.component_contradicted = true;
    return &s;
  }
  Report(ErrorCode::TRACE_SOURCE_UNDECLARED, LinePtr() + "/source_component",
         "event " + std::string(e.event_type) + " from source_component " +
             base::QuoteClipped(e.source_component) + "; " +
             (s.adopted ? "source " + base::QuoteClipped(e.source_instance) +
                              " is not declared in the header, and"
                        : "the header declares " + base::QuoteClipped(s.component) + " for " +
                              base::QuoteClipped(e.source_instance) + " and") +
             " the event type belongs to the " + std::string(PlaneComponent(spec.plane)) +
             " plane (the event is not replayed)");
  return nullptr;
}

uint8_t OutcomeBitOf(std::string_view o) {
  if (KeyEquals(o, "success")) return kOutcomeSuccess;
  if (KeyEquals(o, "rejected")) return kOutcomeRejected;
  if (KeyEquals(o, "replayed")) return kOutcomeReplayed;
  if (KeyEquals(o, "failure")) return kOutcomeFailure;
  if (KeyEquals(o, "cancelled")) return kOutcomeCancelled;
  return 0;
}

namespace {

// "success or rejected (a failed append is recorded as append_failure)": the outcomes `spec`
// admits, for a TRACE_OUTCOME_INVALID message.
std::string OutcomesText(const EventTypeSpec& spec) {
  std::vector<std::string_view> names;
  for (const auto& [bit, name] :
       {std::pair{kOutcomeSuccess, "success"}, {kOutcomeReplayed, "replayed"}, {kOutcomeRejected, "rejected"},
        {kOutcomeFailure, "failure"}, {kOutcomeCancelled, "cancelled"}})
    if (spec.outcomes & bit) names.push_back(name);
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += std::string(i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i]);
  if (spec.outcomes == kOutcomeSuccess) return text + " (it states what is)";
  if (!(spec.outcomes & kOutcomeSuccess)) return text;  // append_failure
  return text + (spec.plane == Plane::kTransfer ? " (a failed handoff is recorded as transfer_abort)"
                                                : " (a failed append is recorded as append_failure)");
}

// The envelope members of M5.1 0x07 RuntimeMutationEvent, as bits of ReadEnvelopeFast's mask.
// (local_sequence and monotonic_ns are not adjacent: copying two adjacent num[] values out to
// the event's two adjacent members compiled to one 16-byte load of two 8-byte stores, a
// store-forwarding stall per event.)
enum EnvKey : int {
  kEnvEventId,
  kEnvSourceInstance,
  kEnvSourceComponent,
  kEnvLocalSequence,
  kEnvEventType,
  kEnvMonotonicNs,
  kEnvTraceId,
  kEnvObservedWallTime,
  kEnvRequestId,
  kEnvHandleGeneration,
  kEnvOperationId,
  kEnvBaseSnapshot,
  kEnvResultSnapshot,
  kEnvOutcome,
  kEnvPayload,
  kEnvKeys
};

// `k` equals the literal `lit`; `k.size()` is already known to be N - 1 (a constant-size
// comparison the compiler inlines, instead of a memcmp call).
template <size_t N>
bool Is(std::string_view k, const char (&lit)[N]) {
  return KeyEquals(k, lit);
}

// The EnvKey of an envelope member name, or -1 when the name is not an envelope member.
int EnvKeyIndex(std::string_view k) {
  switch (k.size()) {
    case 7:
      return Is(k, "outcome") ? kEnvOutcome : Is(k, "payload") ? kEnvPayload : -1;
    case 8:
      return Is(k, "event_id") ? kEnvEventId : Is(k, "trace_id") ? kEnvTraceId : -1;
    case 10:
      return Is(k, "event_type") ? kEnvEventType : Is(k, "request_id") ? kEnvRequestId : -1;
    case 12:
      return Is(k, "monotonic_ns") ? kEnvMonotonicNs : Is(k, "operation_id") ? kEnvOperationId : -1;
    case 13:
      return Is(k, "base_snapshot") ? kEnvBaseSnapshot : -1;
    case 14:
      return Is(k, "local_sequence") ? kEnvLocalSequence : -1;
    case 15:
      return Is(k, "source_instance")   ? kEnvSourceInstance
             : Is(k, "result_snapshot") ? kEnvResultSnapshot
                                        : -1;
    case 16:
      return Is(k, "source_component") ? kEnvSourceComponent : -1;
    case 17:
      return Is(k, "handle_generation") ? kEnvHandleGeneration : -1;
    case 18:
      return Is(k, "observed_wall_time") ? kEnvObservedWallTime : -1;
    default:
      return -1;
  }
}

}  // namespace

bool TraceChecker::ReadEnvelopeFast(const dom::object& obj, Event& e, dom::element* payload,
                                    bool* has_payload) {
  // Member values by EnvKey, read only where `present` has the member's bit (left
  // uninitialized: default-constructed string_views compiled to a zero-fill per event).
  struct Str {
    const char* p;
    size_t n;
    std::string_view view() const { return {p, n}; }
  };
  Str str[kEnvKeys];
  uint64_t num[kEnvKeys];
  uint32_t seen = 0;     // members present
  uint32_t present = 0;  // members present and not null
  for (dom::key_value_pair field : obj) {
    const int i = EnvKeyIndex(field.key);
    if (i < 0 || (seen >> i & 1u)) return false;  // unknown or duplicate member
    seen |= 1u << i;
    const dom::element& v = field.value;
    const dom::element_type t = v.type();
    if (t == dom::element_type::NULL_VALUE) {
      if (i == kEnvPayload) return false;  // the general reader reports it
      continue;
    }
    present |= 1u << i;
    switch (i) {
      case kEnvEventId:
      case kEnvSourceInstance:
      case kEnvSourceComponent:
      case kEnvEventType:
      case kEnvTraceId:
      case kEnvObservedWallTime:
      case kEnvRequestId:
      case kEnvOperationId:
      case kEnvOutcome:
        if (t != dom::element_type::STRING) return false;
        {
          const std::string_view sv = v.get_string().value_unsafe();
          // An empty id or name: the general reader reports it (trace_id "" is no identity,
          // observed_wall_time is not read; an empty type, component or outcome reads the same
          // in both readers).
          if (sv.empty() && i != kEnvTraceId && i != kEnvObservedWallTime) [[unlikely]]
            return false;
          str[i] = {sv.data(), sv.size()};
        }
        break;
      case kEnvLocalSequence:
      case kEnvMonotonicNs:
      case kEnvHandleGeneration:
      case kEnvBaseSnapshot:
      case kEnvResultSnapshot:
        if (!ElementAsUint(v, &num[i])) return false;
        break;
      default:  // kEnvPayload: any value here; the payload is checked after dispatch
        *payload = v;
        break;
    }
  }
  // Required members must be present and not null (null is a type error for them).
  constexpr uint32_t kRequired = 1u << kEnvEventId | 1u << kEnvSourceInstance |
                                 1u << kEnvSourceComponent | 1u << kEnvLocalSequence |
                                 1u << kEnvMonotonicNs | 1u << kEnvEventType;
  if ((present & kRequired) != kRequired) return false;
  auto has = [&](int i) { return (present >> i & 1u) != 0; };
  std::string_view outcome = "success";
  if (has(kEnvOutcome)) {
    outcome = str[kEnvOutcome].view();
    if (!KeyEquals(outcome, "success") && !KeyEquals(outcome, "replayed") &&
        !KeyEquals(outcome, "rejected") && !KeyEquals(outcome, "failure") &&
        !KeyEquals(outcome, "cancelled"))
      return false;
  }
  // Conforming: fill the event exactly as the general reader would (views into the line).
  e.event_id = str[kEnvEventId].view();
  e.source_instance = str[kEnvSourceInstance].view();
  e.source_component = str[kEnvSourceComponent].view();
  e.local_sequence = num[kEnvLocalSequence];
  e.monotonic_ns = num[kEnvMonotonicNs];
  e.event_type = str[kEnvEventType].view();
  // Each optional is set in place (a temporary optional copied in costs a store-forwarding
  // stall per member).
  // (`value` is only read when the member is present.)
  auto set = [&](auto& o, int i, const auto& value) {
    if (!has(i)) {
      o.reset();
    } else if constexpr (std::is_same_v<std::decay_t<decltype(value)>, Str>) {
      o = value.view();
    } else {
      o = value;
    }
  };
  set(e.request_id, kEnvRequestId, str[kEnvRequestId]);
  set(e.operation_id, kEnvOperationId, str[kEnvOperationId]);
  set(e.handle_generation, kEnvHandleGeneration, num[kEnvHandleGeneration]);
  set(e.base_snapshot, kEnvBaseSnapshot, num[kEnvBaseSnapshot]);
  set(e.result_snapshot, kEnvResultSnapshot, num[kEnvResultSnapshot]);
  e.outcome = outcome;
  e.has_trace_id = has(kEnvTraceId) && str[kEnvTraceId].n != 0;
  *has_payload = has(kEnvPayload);
  context_is_event_ = (&e == &event_);  // Report() takes the context from event_
  return true;
}

bool TraceChecker::ReadEnvelope(const dom::object& obj, Event& e, dom::element* payload,
                                bool* has_payload) {
  // What the reader reports names the event and its request when their members are readable
  // strings (the first of a repeated member), whatever else is wrong (probe 28: every envelope
  // violation named neither).
  current_ = {};
  context_is_event_ = false;
  // One pass: the ids (the first of a repeated member) and a `kind` member.
  bool id_seen = false, request_seen = false;
  bool has_kind = false;
  dom::element kind_value;  // a view into the document, valid with it
  for (dom::key_value_pair field : obj) {
    if (field.key == "kind" && !has_kind) {
      has_kind = true;
      kind_value = field.value;
    }
    const bool id = field.key == "event_id", request = field.key == "request_id";
    if ((id && id_seen) || (request && request_seen) || !(id || request)) continue;
    (id ? id_seen : request_seen) = true;
    if (field.value.is_string())
      (id ? current_.event_id : current_.request_id) = field.value.get_string().value_unsafe();
  }
  // A second header (two traces concatenated, a header repeated): one code, not one per
  // envelope member it lacks and per header member it has (probe 28: 12 violations). (An event
  // holding a `kind` member besides its event_id is an event with an unknown member, read
  // below; probe 32: it was taken for a header, its request neither named nor gated.)
  if (has_kind && !id_seen) {
    current_ = {};  // a header names no event or request
    std::string_view kind;
    const bool is_text = kind_value.get_string().get(kind) == simdjson::SUCCESS;
    if (is_text && kind.substr(0, 20) == "kvconform.trace_end/")
      Report(ErrorCode::TRACE_LINE_MALFORMED, LinePtr() + "/kind",
             "an end record of kind " + base::QuoteClipped(kind) + "; this checker reads " +
                 kTraceEndKind + "; the line is not replayed");
    else
      Report(ErrorCode::TRACE_LINE_MALFORMED, LinePtr() + "/kind",
             "a header" + (is_text ? " (kind " + base::QuoteClipped(kind) + ")" : std::string()) +
                 " on line " + std::to_string(line_) +
                 ": only line 1 is the header, every later line is an event (two traces "
                 "concatenated?); the line is not replayed");
    NoteUnnumberedDrop({});
    const uint32_t line = e.line;
    const std::string_view line_text = e.text;
    e = Event{};  // as for any dropped envelope: no view of an earlier line survives
    e.line = line;
    e.SetText(line_text);
    return false;
  }
  ObjReader env(obj, LinePtr(), this);
  // An empty event_id, source_instance, request_id or operation_id names nothing: reported
  // (INPUT_VALUE_INVALID) and dropped like an unreadable one, gated as below (probe 88: an empty
  // event_id or source_instance passed; an empty request_id was a request named "", and the
  // request the event meant raised a second code).
  auto id = env.NonEmptyStr("event_id");
  auto inst = env.NonEmptyStr("source_instance");
  auto comp = env.Str("source_component");
  auto seq = env.Uint("local_sequence");
  auto ns = env.Uint("monotonic_ns");
  auto type = env.Str("event_type");
  auto trace_id = env.OptStr("trace_id");
  env.OptStr("observed_wall_time");
  // A reorder's envelope names no request or operation: its reader reports one given (any
  // value, "" too) and replays the reorder (probe 90: "" dropped it, and its rows went unjudged).
  const bool reorder = type && *type == "reorder";
  auto request_id =
      reorder ? env.OptStr("request_id") : env.NonEmptyStr("request_id", /*optional=*/true);
  e.handle_generation = env.OptUint("handle_generation");
  auto operation_id =
      reorder ? env.OptStr("operation_id") : env.NonEmptyStr("operation_id", /*optional=*/true);
  e.base_snapshot = env.OptUint("base_snapshot");
  e.result_snapshot = env.OptUint("result_snapshot");
  auto outcome = env.Enum("outcome", {"success", "replayed", "rejected", "failure", "cancelled"}, true);
  const dom::element* payload_el = env.Get("payload", false);
  env.RejectUnknown(true);
  current_ = {id.value_or(""), request_id.value_or("")};
  if (!id || !inst || !comp || !seq || !ns || !type || !env.clean()) {
    // The event is dropped, but its place in its source's sequence is known: the next event
    // of the source must not also raise TRACE_SEQUENCE_GAP for it (one root cause, one code).
    if (inst && seq)
      NoteDroppedEvent(*inst, *seq);
    else
      NoteUnnumberedDrop(inst ? *inst : std::string_view());
    // What it did to its operation and request is unknown (gating, as DropEvent; without a
    // readable component the operation may be a transfer, and without a readable type any row's
    // names may be what it created).
    const EventTypeSpec* dropped = type ? FindEventType(*type) : nullptr;
    const bool transfer_type = dropped && dropped->plane == Plane::kTransfer;
    if (operation_id) {
      if (!transfer_type) PoisonOp(*operation_id);  // a transfer type names a transfer (DropEvent)
      // GateTransfer returns what the transfer holds (probe 13: poisoning its key alone kept it).
      if (!comp || *comp == "transfer" || transfer_type) GateTransfer(*this, *operation_id);
    }
    if (request_id) Poison("request:" + *request_id);
    // A request_id given more than once names any of its values: each is gated (probe 32: only
    // the first was, and the other's later events raised codes of their own).
    bool first_request = true;
    for (dom::key_value_pair field : obj) {
      if (field.key != "request_id") continue;
      std::string_view other;
      if (!first_request && field.value.get_string().get(other) == simdjson::SUCCESS)
        Poison("request:" + std::string(other));
      first_request = false;
    }
    const dom::element* named = env.Get("request_id", false);
    GateOperationRequest(operation_id ? *operation_id : std::string_view(),
                         !request_id && named && !named->is_null(),  // named, unreadable
                         transfer_type);
    if (payload_el) GatePayloadNames(type.value_or(""), *payload_el);
    const uint32_t line = e.line;
    const std::string_view text = e.text;
    e = Event{};  // no view of an earlier line survives a dropped event
    e.line = line;
    e.SetText(text);
    return false;
  }
  // The event views the copies (the general reader's strings die with it).
  std::string* copy = envelope_copies_;
  auto keep = [&](std::string&& s) -> std::string_view { return *copy++ = std::move(s); };
  e.has_trace_id = trace_id && !trace_id->empty();
  e.event_id = keep(std::move(*id));
  e.source_instance = keep(std::move(*inst));
  e.source_component = keep(std::move(*comp));
  e.local_sequence = *seq;
  e.monotonic_ns = *ns;
  e.event_type = keep(std::move(*type));
  e.request_id.reset();
  if (request_id) e.request_id = keep(std::move(*request_id));
  e.operation_id.reset();
  if (operation_id) e.operation_id = keep(std::move(*operation_id));
  e.outcome = outcome ? keep(std::move(*outcome)) : std::string_view("success");
  *has_payload = payload_el != nullptr;
  if (payload_el) *payload = *payload_el;
  context_is_event_ = false;
  return true;
}

void TraceChecker::NoteUnnumberedDrop(std::string_view source_instance) {
  auto it = source_instance.empty() ? sources_.end() : sources_.find(source_instance);
  if (it != sources_.end())
    ++it->second.unnumbered;
  else
    ++unattributed_drops_;
}

void TraceChecker::NoteDroppedEvent(std::string_view source_instance, uint64_t local_sequence) {
  auto it = sources_.find(source_instance);
  if (it == sources_.end()) return;
  SourceState& src = it->second;
  if (src.seen && local_sequence <= src.last_seq) return;  // the replay's own order stays
  src.seen = true;
  src.last_seq = local_sequence;
}

void TraceChecker::ReportIdOfAnotherSource(const Event& e, const SourceState& other,
                                           uint32_t other_line) {
  std::string_view name = "?";
  for (const auto& [key, state] : sources_)
    if (&state == &other) name = key;
  Report(ErrorCode::TRACE_EVENT_ID_CONFLICT, LinePtr() + "/event_id",
         "event_id " + base::QuoteClipped(e.event_id) +
             " already names a different event, of source " + base::QuoteClipped(name) +
             " on line " + std::to_string(other_line) + "; source " +
             base::QuoteClipped(e.source_instance) +
             " reuses it (a redelivery repeats its source: one id names one event)");
}

void TraceChecker::ReadEvent(std::string_view line, const dom::element& root) {
  // Viewed in place, not copied out: a copy reloads the callee's two 8-byte stores as one
  // 16-byte load, a store-forwarding stall per event (perf: ~3% of a 2-layer check).
  const auto root_obj = root.get_object();
  const dom::object& obj = root_obj.value_unsafe();
  Event& e = event_;  // reused: its strings keep their capacity from event to event
  e.line = line_;
  e.SetText(line);
  dom::element payload_value;
  bool has_payload = false;
  // An event's envelope has no "kind" member, so the one-pass reader refuses an end record.
  const bool fast = opt_.fast_readers && ReadEnvelopeFast(obj, e, &payload_value, &has_payload);
  if (!fast && ReadEndRecord(obj)) return;
  ++events_;
  if (!fast && !ReadEnvelope(obj, e, &payload_value, &has_payload)) {
    last_line_unread_ = true;
    return;
  }
  if (binding_.trace_identity_required && !e.has_trace_id)
    Report(ErrorCode::TRACE_IDENTITY_MISSING, LinePtr() + "/trace_id",
           "the header requires trace identity (trace_identity: required); this event has none");
  const dom::element* payload_el = has_payload ? &payload_value : nullptr;

  // A small direct-mapped memo of the table (rows only grow before checking starts).
  const std::string_view type = e.event_type;
  const size_t slot = type.empty() ? 0
                                   : (type.size() * 31 + static_cast<unsigned char>(type.front()) +
                                      static_cast<unsigned char>(type.back())) %
                                         kTypeMemo;
  const EventTypeSpec* spec = type_memo_[slot];
  if (!spec || !SameBytes(spec->name, type)) {
    spec = FindEventType(type);
    if (spec) type_memo_[slot] = spec;
  }
  if (!spec) {
    Report(ErrorCode::TRACE_EVENT_TYPE_UNKNOWN, LinePtr() + "/event_type",
           "event_type " + base::QuoteClipped(e.event_type) + " is not defined by " + kTraceKind);
    // Not replayed, but it takes its place in its source's sequence, and what it did to its
    // operation and request is unknown (gating).
    NoteDroppedEvent(e.source_instance, e.local_sequence);
    DropEvent(e, payload_el);
    return;
  }
  bool unnumbered = false;
  SourceState* src_state = CheckSource(e, *spec, &unnumbered);
  if (!src_state) {
    // Dropped (reported): an event whose source or component the header contradicts takes its
    // place in its declared source's sequence, and its operation and request are gated.
    NoteDroppedEvent(e.source_instance, e.local_sequence);
    DropEvent(e, payload_el);
    return;
  }
  const uint64_t id_hash = LineHash(e.event_id);
  SourceState& src = *src_state;
  bool id_conflict = false;
  bool regressed = false;
  // Source-local order: duplicate delivery, gaps, regressions, clocks; skipped for an event
  // CheckSource found to be another source's (unnumbered). Inline: as a function of its own it
  // cost ~45 instructions per event in calls (callgrind, 2026-12-06).
  if (!unnumbered) {
    // Nearly always no recent event has this id: the window's bucket counts decide that, and
    // the exact pass runs only when the id's bucket is occupied.
    SourceState::RecentWindow* const w = src.recent.get();
    const bool maybe = w && w->count[id_hash & 255] != 0;
    for (size_t i = 0; maybe && i < w->n; ++i) {
      if (w->id[i] != id_hash) continue;
      if (w->seq[i] == e.local_sequence) {
        if (w->hashed[i] ? e.text.size() > kWindowLineLimit && w->hash[i] == e.content_hash()
                         : SameBytes(w->text[i], e.text))
          return;  // a byte-equivalent redelivery is deduplicated, not replayed twice
        // The same event (id and number) delivered again with other bytes: one code, and the
        // original stands (replaying the copy too would judge one event twice: a sequence
        // regression, a second publication).
        Report(ErrorCode::TRACE_EVENT_ID_CONFLICT, LinePtr() + "/event_id",
               "event_id " + base::QuoteClipped(e.event_id) + " at local_sequence " +
                   std::to_string(e.local_sequence) + " of source " +
                   base::QuoteClipped(e.source_instance) +
                   " was delivered before with other bytes; a redelivery must repeat the "
                   "original line byte for byte (re-serializing it changes its bytes); this copy "
                   "is not replayed");
        return;
      }
      id_conflict = true;
    }
    if (id_conflict) {
      Report(ErrorCode::TRACE_EVENT_ID_CONFLICT, LinePtr() + "/event_id",
             "event_id " + base::QuoteClipped(e.event_id) +
                 " already names a different event of source " +
                 base::QuoteClipped(e.source_instance));
    } else if (across_.count[AcrossWindow::Bucket(id_hash)] != 0) {
      // Another source's recent event with this id (the per-source window above holds this
      // source's): one code, and the event is replayed, as an id reused within its source.
      for (size_t i = 0; i < kRecentAcross; ++i) {
        const SourceState* other = across_.source[i];
        if (across_.id[i] != id_hash || other == nullptr || other == &src) continue;
        ReportIdOfAnotherSource(e, *other, across_.line[i]);
        id_conflict = true;
        break;
      }
    }
    regressed = src.seen && e.local_sequence <= src.last_seq;
    // A source that restarted its numbering (reported once, at the event that restarted it, which
    // was dropped) is followed from the next event that continues the new numbering.
    if (regressed && src.restarted && e.local_sequence == src.restart_seq + 1) {
      src.last_seq = src.restart_seq;
      src.last_ns = src.restart_ns;
      regressed = false;
    }
    src.restarted = false;
    // One event numbered too high raises a gap, and the next event, numbered right, then repeats
    // or undercuts its number; one numbered too low regresses, and the next then leaves a hole of
    // one. Either is one mis-numbered event: the second code is not raised (one root cause, one
    // code; the numbering continues from the event that was right).
    const bool misnumbered_high =
        regressed && src.gap_open && e.local_sequence == src.gap_expected + 1;
    const bool misnumbered_low =
        !regressed && src.regressed_prev && src.seen && e.local_sequence == src.last_seq + 2;
    src.gap_open = false;
    src.regressed_prev = false;
    if (misnumbered_high) {
      src.last_seq = e.local_sequence;
      src.last_ns = e.monotonic_ns;
    } else if (regressed) {
      // A number before the duplicate window: the message says what the checker cannot tell
      // apart (probe 68: a byte-identical late redelivery read as a plain regression).
      Report(ErrorCode::TRACE_SEQUENCE_REGRESSION, LinePtr() + "/local_sequence",
             "source " + base::QuoteClipped(e.source_instance) + " local_sequence " +
                 std::to_string(e.local_sequence) + " after " + std::to_string(src.last_seq) +
                 (src.last_seq - e.local_sequence >= SourceState::kRecent
                      ? " (older than the source's duplicate window of the last " +
                            std::to_string(SourceState::kRecent) +
                            " events: a late redelivery of an earlier event, which the window no "
                            "longer holds to compare, or an event numbered wrong)"
                      : std::string()));
      src.regressed_prev = true;
      // If the next event continues this number, the source restarted its numbering within the
      // window (a worker restarted early in its life): it is followed from here, as above.
      src.restarted = true;
      src.restart_seq = e.local_sequence;
      src.restart_ns = e.monotonic_ns;
    } else {
      // A hole no larger than the events dropped (and reported) without a usable number since
      // the source's last event is theirs: not also a gap (one root cause, one code).
      if (src.seen && e.local_sequence != src.last_seq + 1 && !misnumbered_low &&
          e.local_sequence - src.last_seq - 1 >
              src.unnumbered + (unattributed_drops_ - src.unattributed_seen)) {
        Report(ErrorCode::TRACE_SEQUENCE_GAP, LinePtr() + "/local_sequence",
               "source " + base::QuoteClipped(e.source_instance) + " local_sequence jumps from " +
                   std::to_string(src.last_seq) + " to " + std::to_string(e.local_sequence) +
                   " (an unexplained gap: the audit is incomplete, or this event is mis-numbered)");
        src.gap_open = true;
        src.gap_expected = src.last_seq + 1;
      }
      src.unnumbered = 0;
      src.unattributed_seen = unattributed_drops_;
      if (src.seen && e.monotonic_ns < src.last_ns)
        Report(ErrorCode::TRACE_CLOCK_REGRESSION, LinePtr() + "/monotonic_ns",
               "source " + base::QuoteClipped(e.source_instance) + " monotonic_ns " +
                   std::to_string(e.monotonic_ns) + " is before the previous " +
                   std::to_string(src.last_ns));
      src.seen = true;
      src.last_seq = e.local_sequence;
      // Judged against the previous event, not the source's highest clock: one wrong value (a
      // spike) is one regression, at the event after it, not one at every later event.
      src.last_ns = e.monotonic_ns;
    }
    // Every replayed event enters the windows, one whose id conflicts too: its own redelivery
    // is then deduplicated (the window's pass returns at the entry with its number, wherever it
    // sits), not replayed a second time with three more codes (probe 90).
    {
      const size_t across = across_.pos++ % kRecentAcross;
      --across_.count[AcrossWindow::Bucket(across_.id[across])];  // the overwritten one leaves
      across_.id[across] = id_hash;
      across_.source[across] = &src;
      across_.line[across] = e.line;
      ++across_.count[AcrossWindow::Bucket(id_hash)];
      if (!src.recent) src.recent = std::make_unique<SourceState::RecentWindow>();
      SourceState::RecentWindow& win = *src.recent;
      size_t slot;
      if (win.n < SourceState::kRecent) {
        slot = win.n++;
      } else {
        slot = win.pos++ % SourceState::kRecent;
        --win.count[win.id[slot] & 255];  // the overwritten event leaves the window
      }
      win.seq[slot] = e.local_sequence;
      win.id[slot] = id_hash;
      ++win.count[id_hash & 255];
      win.hashed[slot] = e.text.size() > kWindowLineLimit;
      if (win.hashed[slot]) {
        win.hash[slot] = e.content_hash();
        std::string().swap(win.text[slot]);
      } else {
        // resize + memcpy: the slot's capacity is reused; assign()'s general path (which allows
        // the source to alias the string) cost ~29 more instructions per event (callgrind).
        std::string& text = win.text[slot];
        text.resize(e.text.size());
        if (!e.text.empty()) std::memcpy(text.data(), e.text.data(), e.text.size());
      }
    }
  }

  // Envelope requirements of the event type.
  // Without them the event is dropped: what it did to its request or operation is unknown.
  if (spec->needs_request && (!e.request_id || !e.handle_generation)) {
    Report(ErrorCode::INPUT_FIELD_MISSING, LinePtr() + (e.request_id ? "/handle_generation" : "/request_id"),
           std::string(e.event_type) + " requires request_id and handle_generation");
    DropEvent(e, payload_el);
    return;
  }
  if (spec->needs_operation && !e.operation_id) {
    Report(ErrorCode::INPUT_FIELD_MISSING, LinePtr() + "/operation_id",
           std::string(e.event_type) + " requires operation_id");
    DropEvent(e, payload_el);
    return;
  }
  // Event-id identity within the request's live history.
  Request* req = e.request_id ? FindRequest(*e.request_id) : nullptr;
  if (req) {
    if (const EventInfo* known = req->events.Find(e.event_id, id_hash)) {  // Bloom filter first
      if (known->content_hash == e.content_hash()) return;  // duplicate delivery
      if (!id_conflict)
        Report(ErrorCode::TRACE_EVENT_ID_CONFLICT, LinePtr() + "/event_id",
               "event_id " + base::QuoteClipped(e.event_id) +
                   " already names a different event of request " +
                   base::QuoteClipped(*e.request_id));
    }
  }
  // An event whose local_sequence lies before its source's window and that is not a known
  // redelivery (the request index no longer holds it, e.g. after a release) is not replayed:
  // it may be a late copy of an event already replayed, which the checker can no longer
  // compare. Whether it is new is unknown, so its operation and request are gated. A regression
  // within the window (a number repeated or off by a few) is not a copy the window missed: the
  // event is replayed.
  if (regressed && src.last_seq - e.local_sequence >= SourceState::kRecent) {
    src.restarted = true;
    src.restart_seq = e.local_sequence;
    src.restart_ns = e.monotonic_ns;
    DropEvent(e, payload_el);
    return;
  }
  // The request of an operation whose dropped event the replay did not know is gated at the
  // operation's next event that names one (the dropped event may have named none, or another).
  if (!dropped_ops_.empty() && e.operation_id && e.request_id) {
    auto it = dropped_ops_.find(*e.operation_id);
    if (it == dropped_ops_.end() && spec->plane == Plane::kTransfer)
      it = dropped_ops_.find("transfer:" + std::string(*e.operation_id));
    if (it != dropped_ops_.end()) {
      Poison("request:" + std::string(*e.request_id));
      gate_bytes_ -= std::min(gate_bytes_, GateCost(*it));
      dropped_ops_.erase(it);
    }
  }
  // Events of a request whose creation was already reported are not replayed (gating).
  // (A semantic event other than an allocation may also name a child of a dropped fork.)
  // The wildcard gate of requests not yet created (a dropped fork or allocation whose ids are
  // unknown) covers their observations too (probe 26: an observation of a child of a fork naming
  // no children raised TRACE_CAUSE_UNKNOWN), not the transfer plane (probe 12).
  if (e.request_id && !poisoned_.empty() &&
      (spec->plane != Plane::kTransfer && !KeyEquals(e.event_type, "request_allocate")
           ? IsGatedRequest(*e.request_id)
           : IsPoisoned("request:" + std::string(*e.request_id))) &&
      !(spec->plane == Plane::kSemantic && KeyEquals(e.event_type, "request_allocate") &&
        LiftGateForNewIncarnation(e))) {
    // A fork of a gated request is not replayed, so its children do not exist here: they are
    // gated too (their events would otherwise name unknown handles).
    // (Not a fork the runtime reports refused: it created nothing; probe 19.)
    if (payload_el && spec->gate && !KeyEquals(e.outcome, "rejected"))
      spec->gate(*this, *payload_el, true);
    // A transfer's later events may leave out its request: they are gated through the transfer
    // (since 2026-12-03: before, a plan skipped here left its transfer unknown, so its next
    // event without a request_id raised HANDOFF_TRANSFER_UNKNOWN).
    if (spec->plane == Plane::kTransfer && e.operation_id) GateTransfer(*this, *e.operation_id);
    if (spec->plane == Plane::kSemantic && KeyEquals(e.event_type, "release")) RetireGated(e);
    return;
  }
  // Late events of a gated incarnation that a later allocation retired are skipped, as its gate
  // skipped them (its release was not replayed: judged, they would raise codes of their own).
  // Its own generation only, and not the transfer plane's events, whose handle_generation is
  // the transfer's generation (probe 20).
  // An observation claiming that generation while naming an event the replay holds (of the
  // live incarnation) is judged: Cause() reports the generation it misnames.
  if (req && !req->retired.empty() && e.handle_generation && spec->plane != Plane::kTransfer &&
      req->retired.count(*e.handle_generation) != 0) {
    std::string_view cause;
    const bool names_held_event = spec->plane != Plane::kSemantic && payload_el &&
                                  !payload_el->at_key("caused_by_event_id").get(cause) &&
                                  FindCause(*e.request_id, cause) != nullptr;
    if (!names_held_event) return;
  }
  // The handle generation fence: a semantic event must target the live incarnation.
  if (spec->plane == Plane::kSemantic && spec->needs_request && !KeyEquals(e.event_type, "request_allocate")) {
    const lifecycle::HandleRecord* h = FindHandle(*e.request_id);
    if (h && h->current.incarnation != *e.handle_generation &&
        !(h->current.phase == lifecycle::Phase::kReleased &&
          h->current.incarnation == *e.handle_generation + 1) &&
        !IsRetryOfKeptReceipt(e) && !NamesAnotherRequestsOperation(e)) {
      // Reported refused, an event aimed at an earlier incarnation that existed is the stale
      // completion the fence rejects (M5.1 0x07: "reject it with the generation fence"): it
      // conforms and is not replayed (since 2026-12-05, probe 30: the truthful label was
      // TRACE_HANDLE_GENERATION_MISMATCH, while the same refusal relabelled with the live
      // generation passed).
      if (KeyEquals(e.outcome, "rejected") && *e.handle_generation < h->current.incarnation &&
          !(req && req->NeverHad(*e.handle_generation)))
        return;
      Report(ErrorCode::TRACE_HANDLE_GENERATION_MISMATCH, LinePtr() + "/handle_generation",
             std::string(e.event_type) + " targets handle_generation " +
                 std::to_string(*e.handle_generation) + " of " + base::QuoteClipped(*e.request_id) +
                 "; the live handle generation is " + std::to_string(h->current.incarnation));
      // Not replayed. An event aimed at an earlier incarnation (a stale completion after the id
      // was recycled: the ABA case) leaves the live incarnation untouched and ungated. One aimed
      // at an incarnation that never existed (not yet, below the id's first generation, or in a
      // gap a re-allocation skipped) mislabels an event of the live one: its operation and
      // request are gated, as for any dropped event.
      if (*e.handle_generation > h->current.incarnation ||
          (req && req->NeverHad(*e.handle_generation)))
        DropEvent(e, payload_el);
      return;
    }
  }
  // Viewed in place (as `obj` above).
  const auto payload_obj = payload_el
                               ? payload_el->get_object()
                               : simdjson::simdjson_result<dom::object>(simdjson::INCORRECT_TYPE);
  const dom::object& pobj = payload_obj.value_unsafe();
  if (!payload_el || payload_obj.error()) {
    Report(payload_el ? ErrorCode::INPUT_FIELD_TYPE : ErrorCode::INPUT_FIELD_MISSING,
           LinePtr() + "/payload", "expected a payload object");
    DropEvent(e);
    return;
  }
  if (!(spec->outcomes & OutcomeBitOf(e.outcome))) {
    Report(ErrorCode::TRACE_OUTCOME_INVALID, LinePtr() + "/outcome",
           std::string(e.event_type) + " admits outcome " + OutcomesText(*spec) + ", not " +
               base::QuoteClipped(e.outcome));
    DropEvent(e, payload_el);
    return;
  }
  if (spec->fast && opt_.fast_readers && spec->fast(*this, e, pobj)) {
    ++fast_payloads_;
  } else {
    ObjReader payload(pobj, this, "/payload");
    spec->handle(*this, e, payload);
    // A handler replays nothing from a payload it could not read (unknown members aside,
    // which are reported below and ignored): the event is dropped.
    if (!payload.clean()) DropEvent(e, payload_el);
    payload.RejectUnknown(spec->plane == Plane::kSemantic);
  }
  // Index the event id for causal references and duplicate detection.
  if (e.request_id && spec->plane == Plane::kSemantic && spec->indexed) {
    if (Request* r = FindRequest(*e.request_id)) {
      const lifecycle::HandleRecord* h = FindHandle(*e.request_id);
      // A refused event is indexed as such: an observation naming it sees the handle unchanged.
      EventInfo info{KeyEquals(e.outcome, "rejected") ? RejectedTypeName(spec->name) : spec->name,
                     e.content_hash(), h ? h->current.committed_length : 0, *e.handle_generation};
      if (h && h->current.phase == lifecycle::Phase::kReleased && KeyEquals(e.event_type, "release")) {
        // Memory follows live handles: keep the terminal events (finish, cancel_request,
        // release; observations after release may name them) and drop the operations.
        r->events.KeepIf([](std::string_view, const EventInfo& info) {
          return info.type == "finish" || info.type == "cancel_request";
        });
        r->frontier_followed_at_release = r->frontier.tracked();
        r->frontier = frontier::FrontierState(0);
        r->frontier.Untrack();
        // The aborted or refused operations (a published one is already dropped) stay until the
        // tombstone is forgotten: the worker's own failure record may follow the release, and a
        // second record must still be told from the first (probes 19, 20: a second record after
        // the release passed). So do open ones: the release does not close them, their record
        // may still follow (a late completion refused, or the worker's failure record), and one
        // without any by the end of the trace is unterminated (since 2026-12-05, probe 43: they
        // were dropped here, and an append left open passed once its request was released).
        std::vector<base::IdString> kept;
        for (const auto& op : r->op_ids) {
          const lifecycle::AppendTxn* t = kv_->FindTxn(op);
          if (t && t->state != lifecycle::TxnState::kPublished)
            kept.push_back(op);
          else
            EraseOpOf(op, *e.request_id);
        }
        r->op_ids = std::move(kept);
      }
      r->events.Insert(e.event_id, id_hash, info);
    }
  }
}

namespace {
// "no lines", "line A" or "lines A-B" for the line numbers [a, b].
std::string LineRange(uint64_t a, uint64_t b) {
  if (a > b) return "no lines";
  if (a == b) return "line " + std::to_string(a);
  return "lines " + std::to_string(a) + "-" + std::to_string(b);
}
}  // namespace

bool TraceChecker::ReadEndRecord(const dom::object& obj) {
  std::string_view kind;
  if (obj["kind"].get(kind) || kind != kTraceEndKind || !obj["event_id"].error()) return false;
  end_line_ = line_;
  ObjReader r(obj, LinePtr(), this);
  r.Str("kind");
  const auto events = r.Uint("events", kMaxTraceLines);
  r.RejectUnknown();
  const uint64_t held = line_ - 2;  // lines 2 .. line_ - 1
  if (events && *events != held)
    Report(ErrorCode::TRACE_END_MISMATCH, LinePtr() + "/events",
           "the end record counts " + std::to_string(*events) + " event line" +
               (*events == 1 ? "" : "s") + "; the trace holds " + std::to_string(held) +
               " between its header and this record (" + LineRange(2, line_ - 1) +
               "): lines were lost or added on the way");
  return true;
}

const Violations& TraceChecker::Finish(bool ended_mid_line, bool cut_line_has_cr) {
  current_ = {};
  context_is_event_ = false;
  if (ended_mid_line) {
    ++line_;
    // (The report's line and the file name the place: the message does not repeat them;
    // probe 68.)
    Report(ErrorCode::TRACE_TRUNCATED, LinePtr(),
           std::string(line_ == 1 ? "the trace ends in the middle of its header line (no final "
                                    "newline); the header was not read"
                                  : "the trace ends in the middle of a line (no final newline); "
                                    "the partial event was not replayed") +
               (cut_line_has_cr ? " (the cut line holds CR bytes: lines end with LF or CRLF, "
                                  "never CR alone)"
                                : ""));
  }
  if (header_ok_ && after_end_lines_ != 0)
    ReportAt(after_end_first_, {}, ErrorCode::TRACE_END_MISMATCH,
             "/" + std::to_string(after_end_first_ - 1),
             std::to_string(after_end_lines_) + (after_end_lines_ == 1 ? " line (" : " lines (") +
                 LineRange(after_end_first_, after_end_last_) +
                 (after_end_lines_ == 1 ? ") follows" : ") follow") + " the end record of line " +
                 std::to_string(end_line_) + ", which ends the trace; not replayed" +
                 (after_end_empty_ == 0 ? std::string()
                  : after_end_empty_ == after_end_lines_
                      ? std::string(" (empty: a trace has no blank lines, its last included)")
                      : " (" + std::to_string(after_end_empty_) + " of them empty)"));
  // A stream cut between lines (a cut inside a line is TRACE_TRUNCATED above).
  if (header_ok_ && end_required_ && end_line_ == 0 && !ended_mid_line && !last_line_unread_) {
    ++line_;
    Report(ErrorCode::TRACE_END_MISSING, LinePtr(),
           "the header requires an end record (end_record: true) and the trace ends after " +
               std::to_string(line_ - 2) + " event line" + (line_ == 3 ? "" : "s") +
               " without one: the stream was cut between two lines");
  }
  // A cut header line is reported above (one root cause, one code).
  if (!header_seen_ && !(ended_mid_line && line_ == 1)) {
    line_ = 1;
    Report(ErrorCode::TRACE_HEADER_INVALID, "/0", "empty trace; expected a header line");
  }
  if (header_ok_) {
    std::vector<const std::pair<const base::IdString, Op>*> open;
    for (const auto& kv : ops_) {
      const lifecycle::AppendTxn* t = kv_->FindTxn(kv.first);
      // (closed_line: a record closed it without a transition, e.g. the refused late
      // completion of a transaction left open at its request's release.)
      if (t && !IsPoisonedOp(kv.first) && !IsPoisoned("request:" + kv.second.request_id) &&
          kv.second.closed_line == 0 &&
          (t->state == lifecycle::TxnState::kOpen || t->state == lifecycle::TxnState::kPrepared))
        open.push_back(&kv);
    }
    std::sort(open.begin(), open.end(),
              [](auto* a, auto* b) { return a->second.start_line < b->second.start_line; });
    for (auto* o : open) {
      line_ = o->second.start_line;
      current_ = {o->second.start_event_id.str(), o->second.request_id.str()};
      Report(ErrorCode::TRACE_OPERATION_UNTERMINATED, LinePtr(),
             "operation " + base::QuoteClipped(o->first) + " (event \"" + o->second.start_event_id +
                 "\", request \"" + o->second.request_id +
                 "\") has neither a publication nor a failure when the trace ends");
    }
    for (auto& [key, ext] : extensions_) ext->Finish(*this);
    // Expected final states judge a history the replay accepted; after a replay violation the
    // replayed state is not the runtime's, so the root cause alone is reported.
    const bool replay_clean = !replay_violated_;
    line_ = 1;
    current_ = {};
    if (replay_clean)
      for (auto& v : CheckExpectedFinalStates(binding_, *kv_, &forgotten_expected_))
        Report(v.code, v.pointer, v.message);
  }
  return violations_;
}

const Violations& FeedTraceText(TraceChecker* c, std::string_view text) {
  size_t start = 0;
  uint32_t line = 0;
  bool mid_line = false;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    if (!AdvanceLineNumber(line, 1, &line)) {
      c->ReportAt(line, {}, ErrorCode::INPUT_VALUE_INVALID, "",
                  "the trace has more than " + std::to_string(kMaxTraceLines) +
                      " lines; the rest is not checked");
      break;
    }
    if (nl == std::string_view::npos) {
      mid_line = true;
      break;
    }
    if (nl - start > c->options().max_line_bytes)  // as CheckTraceFile reads it
      c->FeedOverlongLine(line, nl - start, text.substr(start, nl - start));
    else
      c->Feed(text.substr(start, nl - start), line);
    start = nl + 1;
  }
  // (As CheckTraceFile: the cut line's CR bytes are named; probe 90.)
  return c->Finish(mid_line, mid_line && text.find('\r', start) != std::string_view::npos);
}

Violations ValidateTraceJsonl(std::string_view text, std::string_view source) {
  TraceChecker c{std::string(source)};
  return FeedTraceText(&c, text);
}

bool AdvanceLineNumber(uint32_t line, size_t n, uint32_t* after) {
  if (n > kMaxTraceLines - line) return false;
  *after = line + static_cast<uint32_t>(n);
  return true;
}

namespace {

// Reads a file in large blocks and hands out its '\n'-terminated lines in place. Every line
// handed out is followed by at least SIMDJSON_PADDING readable bytes of the buffer, which is
// what simdjson's in-place parse needs, so no line is copied. A line is valid until the next
// call of Next(). A line longer than `max_line` bytes is not held: it is read through and
// handed out as kOverlong, its length and first bytes kept (overlong_bytes(),
// overlong_prefix()). Memory: one buffer of max(1 MiB, the longest line held), at most about
// 2 x max_line.
class BlockLineReader {
 public:
  enum class Got { kLine, kOverlong, kEnd };
  BlockLineReader(FILE* f, uint64_t max_line)
      : f_(f), max_line_(max_line), buf_(kBlock + simdjson::SIMDJSON_PADDING) {}

  // The next line: kLine with *line (without its '\n'), kOverlong for a line longer than
  // max_line (read through to its '\n'), kEnd at end of input or on a read error. A line longer
  // than max_line that the input cuts (no '\n' before its end) is not kOverlong: the input
  // ends mid-line (ended_mid_line()).
  Got Next(std::string_view* line) {
    for (;;) {
      const char* b = buf_.data() + begin_;
      if (const void* nl = std::memchr(b, '\n', end_ - begin_)) {
        const size_t len = static_cast<size_t>(static_cast<const char*>(nl) - b);
        if (len > max_line_) return SkipOverlong(len + 1);
        *line = std::string_view(b, len);
        begin_ += len + 1;
        return Got::kLine;
      }
      if (eof_) return Got::kEnd;
      const size_t rest = end_ - begin_;
      if (rest > max_line_) return SkipOverlong(rest);
      std::memmove(buf_.data(), b, rest);
      begin_ = 0;
      end_ = rest;
      if (end_ == capacity())  // a line longer than the buffer: grow it
        buf_.resize(2 * capacity() + simdjson::SIMDJSON_PADDING);
      end_ += Fill(buf_.data() + end_, capacity() - end_);
    }
  }
  // Up to `max` next complete lines (as Next()); all of them stay valid, with their padding,
  // until the next call of Next() or NextBatch(). Returns how many (0 at end of input, and 0
  // with *overlong set when the next line was kOverlong). The buffer is refilled only when it
  // holds no complete line, so a batch may be shorter than `max` before the end.
  size_t NextBatch(std::string_view* lines, size_t max, bool* overlong) {
    *overlong = false;
    size_t n = 0;
    if (max == 0) return 0;
    const Got got = Next(&lines[n]);
    if (got != Got::kLine) {
      *overlong = got == Got::kOverlong;
      return 0;
    }
    for (++n; n < max; ++n) {
      const char* b = buf_.data() + begin_;
      const void* nl = std::memchr(b, '\n', end_ - begin_);
      if (!nl) break;  // the rest needs a refill, which would move the lines handed out
      const size_t len = static_cast<size_t>(static_cast<const char*>(nl) - b);
      if (len > max_line_) break;  // the next call reads it through
      lines[n] = std::string_view(b, len);
      begin_ += len + 1;
    }
    return n;
  }
  // True when the input ended with bytes after the last '\n' (valid after Next() is kEnd).
  bool ended_mid_line() const { return begin_ < end_ || cut_overlong_; }
  // Those bytes hold a CR (a file with CR-only line ends reads as one cut line).
  bool cut_line_has_cr() const {
    return cut_overlong_cr_ ||
           (begin_ < end_ && std::memchr(buf_.data() + begin_, '\r', end_ - begin_) != nullptr);
  }
  // The errno of the read that failed, or 0 when the input ended without an error.
  int read_errno() const { return read_errno_; }
  // After kOverlong: the line's length in bytes (without its '\n'), and its first bytes.
  uint64_t overlong_bytes() const { return overlong_bytes_; }
  std::string_view overlong_prefix() const { return overlong_prefix_; }

 private:
  // Reads up to `n` bytes into `dst`; 0 at end of input (eof_ set, and read_errno_ on a read
  // error). Waits on a non-blocking pipe with nothing yet, and retries a read a signal cut.
  size_t Fill(char* dst, size_t n) {
    for (;;) {
      const size_t got = std::fread(dst, 1, n, f_);
      if (got != 0) return got;
      if (std::ferror(f_) && (errno == EAGAIN || errno == EWOULDBLOCK) && WaitReadable()) {
        std::clearerr(f_);  // a non-blocking pipe with nothing yet: wait for its writer
        continue;
      }
      if (std::ferror(f_) && errno == EINTR) {
        std::clearerr(f_);  // a signal that a handler caught: not an end of the input (probe 79)
        continue;
      }
      eof_ = true;
      if (std::ferror(f_)) read_errno_ = errno;
      return 0;
    }
  }
  // The line at begin_ is longer than max_line_; `held` of its bytes are in the buffer (its
  // '\n' the last of them when it was found). Keeps its prefix, reads it through to its '\n'
  // and leaves the buffer at the next line. kOverlong, or kEnd when the input ends first.
  Got SkipOverlong(size_t held) {
    const char* b = buf_.data() + begin_;
    const bool complete = b[held - 1] == '\n';
    overlong_bytes_ = held - (complete ? 1 : 0);
    overlong_prefix_.assign(b,
                            std::min<size_t>(overlong_bytes_, TraceChecker::kOverlongPrefixBytes));
    bool cr = std::memchr(b, '\r', held) != nullptr;
    if (complete) {
      begin_ += held;
      return Got::kOverlong;
    }
    begin_ = end_ = 0;
    for (;;) {
      const size_t n = Fill(buf_.data(), capacity());
      if (n == 0) {
        cut_overlong_ = true;  // the input ends inside it: a cut line, reported as such
        cut_overlong_cr_ = cr;
        return Got::kEnd;
      }
      const void* nl = std::memchr(buf_.data(), '\n', n);
      const size_t part = nl ? static_cast<size_t>(static_cast<const char*>(nl) - buf_.data()) : n;
      if (overlong_prefix_.size() <
          TraceChecker::kOverlongPrefixBytes)  // its first bytes, however reads split
        overlong_prefix_.append(buf_.data(), std::min(part, TraceChecker::kOverlongPrefixBytes -
                                                                overlong_prefix_.size()));
      if (nl) {
        overlong_bytes_ += part;
        begin_ = part + 1;
        end_ = n;
        return Got::kOverlong;
      }
      overlong_bytes_ += n;
      cr = cr || std::memchr(buf_.data(), '\r', n) != nullptr;
    }
  }
  // Blocks until f_'s descriptor is readable (or hung up); false when it cannot wait.
  bool WaitReadable() {
    pollfd p{fileno(f_), POLLIN, 0};
    for (;;) {
      if (::poll(&p, 1, -1) >= 0) return true;
      if (errno != EINTR) return false;
    }
  }
  static constexpr size_t kBlock = size_t{1} << 20;
  size_t capacity() const { return buf_.size() - simdjson::SIMDJSON_PADDING; }
  FILE* f_;
  const uint64_t max_line_;
  std::vector<char> buf_;
  size_t begin_ = 0;  // first byte not yet handed out
  size_t end_ = 0;    // one past the last byte read
  bool eof_ = false;
  int read_errno_ = 0;
  uint64_t overlong_bytes_ = 0;
  std::string overlong_prefix_;
  bool cut_overlong_ = false, cut_overlong_cr_ = false;
};


// The trace's stream: standard input for "-", else the file opened for reading.
StatusOr<FILE*> OpenTrace(const std::string& path) {
  if (path == "-") return stdin;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return IoError(path + ": cannot open: " + std::strerror(errno));
  return f;
}

// Closes what OpenTrace opened; IoError (with the system's reason) when `reader` met a read
// error.
Status CloseTrace(const std::string& path, FILE* f, const BlockLineReader& reader) {
  if (f != stdin) std::fclose(f);
  if (reader.read_errno() != 0)
    return IoError(path + ": read error: " + std::strerror(reader.read_errno()));
  return Status::Ok();
}

}  // namespace

Status ParseOnlyFile(const std::string& path, uint64_t* lines, uint64_t max_line_bytes) {
  KVC_ASSIGN_OR_RETURN(FILE * f, OpenTrace(path));
  dom::parser parser;
  BlockLineReader reader(f, max_line_bytes);
  std::string_view line;
  uint64_t count = 0, members = 0;
  for (BlockLineReader::Got got; (got = reader.Next(&line)) != BlockLineReader::Got::kEnd;) {
    ++count;
    if (got == BlockLineReader::Got::kOverlong) continue;  // counted, not parsed
    dom::element root;
    if (!parser.parse(line.data(), line.size(), false).get(root)) {
      dom::object o;
      if (!root.get_object().get(o)) members += o.size();
    }
  }
  if (reader.ended_mid_line()) ++count;  // counted like getline did, not parsed
  KVC_RETURN_IF_ERROR(CloseTrace(path, f, reader));
  *lines = count + (members == UINT64_MAX ? 1 : 0);  // keep `members` observable
  return Status::Ok();
}

std::string ParserDescription() {
#define KVC_STRINGIFY2(x) #x
#define KVC_STRINGIFY(x) KVC_STRINGIFY2(x)
  return std::string("simdjson " KVC_STRINGIFY(SIMDJSON_VERSION) ", ") +
         std::string(simdjson::get_active_implementation()->name()) + " kernel";
#undef KVC_STRINGIFY
#undef KVC_STRINGIFY2
}

Status CheckTraceFile(const std::string& path, TraceChecker* checker) {
  KVC_ASSIGN_OR_RETURN(FILE * f, OpenTrace(path));
  BlockLineReader reader(f, checker->options().max_line_bytes);
  std::string_view lines[TraceChecker::kMaxBatch];
  uint32_t line = 0;
  for (;;) {
    bool overlong = false;
    const size_t n = reader.NextBatch(lines, TraceChecker::kMaxBatch, &overlong);
    if (n == 0 && !overlong) break;
    uint32_t last = 0;
    if (!AdvanceLineNumber(line, overlong ? 1 : n, &last)) {
      (void)CloseTrace(path, f, reader);
      return OutOfRange(path + ": more than " + std::to_string(kMaxTraceLines) +
                        " lines (violations name 32-bit line numbers); split the trace");
    }
    if (overlong)
      checker->FeedOverlongLine(last, reader.overlong_bytes(), reader.overlong_prefix());
    else
      checker->FeedPaddedBatch(lines, n, line + 1);
    line = last;
  }
  const bool mid_line = reader.ended_mid_line();
  const bool cut_has_cr = reader.cut_line_has_cr();
  KVC_RETURN_IF_ERROR(CloseTrace(path, f, reader));
  if (mid_line && line == kMaxTraceLines)  // the cut last line would be line 2^32
    return OutOfRange(path + ": more than " + std::to_string(kMaxTraceLines) +
                      " lines (violations name 32-bit line numbers); split the trace");
  checker->Finish(mid_line, cut_has_cr);
  return Status::Ok();
}

}  // namespace kvc::trace
