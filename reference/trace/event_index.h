// EventIndex: one request's indexed semantic events by event id, laid out so that adding one
// writes one cache line (the trace checker adds one per append publication).
//
// What it is for (M5.1 0x07): an allocator or residency observation names its semantic cause
// by caused_by_event_id (TraceChecker::FindCause), and a redelivery older than its source's
// duplicate window is still recognized by the request's indexed events (same id and bytes:
// a duplicate; same id, other bytes: an id conflict).
//
// Contract:
//  * Keys are event ids compared by bytes. Every call takes the key with its LineHash
//    (`id_hash`), which the caller has already computed (the checker hashes each event id
//    once); a wrong hash is a caller bug (the key is then not found).
//  * Insert appends one 64-byte entry (an id of up to kInlineId bytes inline, a longer one in a
//    byte buffer shared by the index's entries); nothing else is written unless a 512-bit Bloom
//    filter of the id hashes says the id may be present, in which case Insert first looks it up.
//  * Find answers from the Bloom filter alone for most absent ids. Otherwise it probes an
//    open-addressed table of entry numbers, which Find itself brings up to date with the
//    entries added since the last lookup (Insert never touches it): a lookup costs amortized
//    O(1) and a request that is never asked about costs no table at all.
//  * Entries keep their insertion order; KeepIf drops entries and releases the memory of the
//    dropped ones (the checker keeps only the terminal events of a released request).
//  * A pointer from Find is valid until the next Insert, KeepIf or Clear.
// Thread safety: none (Find updates the lazy table: not even concurrent const use is safe).
#ifndef KVCONFORM_REFERENCE_TRACE_EVENT_INDEX_H_
#define KVCONFORM_REFERENCE_TRACE_EVENT_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvc::trace {

// What an observation needs of the semantic event it names as its cause.
struct EventInfo {
  // The event type (views the dispatch table: static), or for an event the runtime reports
  // refused (outcome "rejected", which changed nothing) RejectedTypeName(type).
  std::string_view type;
  uint64_t content_hash = 0;       // LineHash of the event's line (duplicate delivery)
  uint64_t committed_length = 0;   // the handle's committed length after the event
  uint64_t handle_generation = 0;  // the event's handle_generation (it passed the fence)
  // The event was refused: the handle is as it was before it (a refused release frees nothing).
  bool rejected() const { return type.starts_with("rejected "); }
};

// "rejected <type>": the type an index entry records for a refused event of `type`, a string
// that lives as long as the process (so EventInfo stays one view). Thread-safe.
std::string_view RejectedTypeName(std::string_view type);

class EventIndex {
 public:
  // Ids of up to this many bytes are kept inside their entry.
  static constexpr size_t kInlineId = 12;

  // Adds `id` with `info` and returns true, or returns false (and changes nothing) when `id`
  // is already present. An id must be shorter than 4 GiB (every parsed trace line is:
  // simdjson's documents are); a longer one throws std::length_error, as a std container
  // does past max_size().
  bool Insert(std::string_view id, uint64_t id_hash, const EventInfo& info);
  // The entry of `id`, or nullptr.
  const EventInfo* Find(std::string_view id, uint64_t id_hash) const;
  // False when `id_hash` is certainly not the hash of a present id (the Bloom filter).
  bool MayHave(uint64_t id_hash) const {
    const auto [a, b] = BloomBits(id_hash);
    return (bloom_[a >> 6] >> (a & 63) & 1) && (bloom_[b >> 6] >> (b & 63) & 1);
  }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // Calls fn(id, info) for every entry, in insertion order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const Entry& e : entries_) fn(IdOf(e), e.info);
  }
  // Keeps the entries for which keep(id, info) is true, in their order; the memory of the
  // rest is released.
  template <typename Pred>
  void KeepIf(Pred&& keep) {
    EventIndex kept;
    for (const Entry& e : entries_)
      if (keep(IdOf(e), e.info)) kept.Append(IdOf(e), e.id_hash, e.info);
    *this = std::move(kept);
  }
  void Clear() { *this = EventIndex(); }

 private:
  struct Entry {
    EventInfo info;
    uint64_t id_hash = 0;
    uint32_t id_len = 0;
    // id_len <= kInlineId: the id's bytes. Longer: the first 8 bytes hold the offset of the
    // id's first byte in long_ids_ (a uint64_t, copied in and out with memcpy).
    char id_bytes[kInlineId];
  };
  static_assert(sizeof(Entry) == 64, "one entry, one cache line");

  // The two bits of the Bloom filter that `id_hash` sets, each in [0, 512).
  static std::pair<unsigned, unsigned> BloomBits(uint64_t id_hash) {
    return {static_cast<unsigned>(id_hash & 511), static_cast<unsigned>((id_hash >> 9) & 511)};
  }
  std::string_view IdOf(const Entry& e) const {
    if (e.id_len <= kInlineId) return std::string_view(e.id_bytes, e.id_len);
    uint64_t offset;
    std::memcpy(&offset, e.id_bytes, sizeof offset);
    return std::string_view(long_ids_.data() + offset, e.id_len);
  }
  // Insert without the presence check.
  void Append(std::string_view id, uint64_t id_hash, const EventInfo& info);
  // Adds entries [indexed_, size()) to the table, growing it to at most half full.
  void CatchUp() const;

  std::vector<Entry> entries_;
  std::string long_ids_;  // the bytes of the ids longer than kInlineId, back to back
  uint64_t bloom_[8] = {};
  // The lookup table: entry number + 1 per slot (0: empty), a power of two in size, linear
  // probing from id_hash & (size - 1). Covers entries [0, indexed_).
  mutable std::vector<uint32_t> slots_;
  mutable size_t indexed_ = 0;
};

}  // namespace kvc::trace

#endif  // KVCONFORM_REFERENCE_TRACE_EVENT_INDEX_H_
