// EventIndex: one request's indexed semantic events by event id (event_index.h).
#include "reference/trace/event_index.h"

#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

namespace kvc::trace {

std::string_view RejectedTypeName(std::string_view type) {
  static std::mutex mu;
  // Never destroyed: the views handed out stay valid to the end of the process.
  static auto* const names = new std::set<std::string, std::less<>>;
  const std::string name = "rejected " + std::string(type);
  std::lock_guard<std::mutex> lock(mu);
  return *names->insert(name).first;
}

void EventIndex::Append(std::string_view id, uint64_t id_hash, const EventInfo& info) {
  if (id.size() > UINT32_MAX) throw std::length_error("EventIndex: event id of 4 GiB or more");
  if (entries_.size() >= UINT32_MAX) throw std::length_error("EventIndex: 2^32 - 1 entries");
  Entry& e = entries_.emplace_back();
  e.info = info;
  e.id_hash = id_hash;
  e.id_len = static_cast<uint32_t>(id.size());
  if (id.size() <= kInlineId) {
    if (!id.empty()) std::memcpy(e.id_bytes, id.data(), id.size());
  } else {
    const uint64_t offset = long_ids_.size();
    long_ids_.append(id);
    std::memcpy(e.id_bytes, &offset, sizeof offset);
  }
  const auto [a, b] = BloomBits(id_hash);
  bloom_[a >> 6] |= uint64_t{1} << (a & 63);
  bloom_[b >> 6] |= uint64_t{1} << (b & 63);
}

bool EventIndex::Insert(std::string_view id, uint64_t id_hash, const EventInfo& info) {
  if (Find(id, id_hash)) return false;  // Find asks the Bloom filter first
  Append(id, id_hash, info);
  return true;
}

void EventIndex::CatchUp() const {
  const size_t n = entries_.size();
  if (indexed_ == n) return;
  if (2 * n > slots_.size()) {  // grow to at most half full, then place every entry again
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    slots_.assign(cap, 0);
    indexed_ = 0;
  }
  const size_t mask = slots_.size() - 1;
  for (; indexed_ < n; ++indexed_) {
    size_t s = entries_[indexed_].id_hash & mask;
    while (slots_[s] != 0) s = (s + 1) & mask;
    slots_[s] = static_cast<uint32_t>(indexed_ + 1);
  }
}

const EventInfo* EventIndex::Find(std::string_view id, uint64_t id_hash) const {
  if (!MayHave(id_hash)) return nullptr;
  CatchUp();
  if (slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t s = id_hash & mask; slots_[s] != 0; s = (s + 1) & mask) {
    const Entry& e = entries_[slots_[s] - 1];
    if (e.id_hash == id_hash && IdOf(e) == id) return &e.info;
  }
  return nullptr;
}

}  // namespace kvc::trace
