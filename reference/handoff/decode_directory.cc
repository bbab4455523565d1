// DecodeDirectory: generation-fenced, idempotent publication of complete handoffs.
#include "reference/handoff/decode_directory.h"

namespace kvc::handoff {

Status DecodeDirectory::ReserveGeneration(const std::string& request_id, uint64_t generation) {
  auto it = entries_.find(request_id);
  if (it != entries_.end() && generation <= it->second.current_generation)
    return ViolationStatus(ErrorCode::HANDOFF_STALE_GENERATION,
                           "request " + request_id + " is at generation " +
                               std::to_string(it->second.current_generation) +
                               "; a new attempt must use a newer generation, got " + std::to_string(generation));
  entries_[request_id].current_generation = generation;
  return Status();
}

void DecodeDirectory::SetCurrentGeneration(const std::string& request_id, uint64_t generation) {
  entries_[request_id].current_generation = generation;
}

StatusOr<PublishResult> DecodeDirectory::PublishIfGenerationCurrent(const std::string& request_id,
                                                                    uint64_t generation,
                                                                    const std::string& transfer_id,
                                                                    const std::string& content_digest) {
  auto it = entries_.find(request_id);
  if (it == entries_.end())
    return ViolationStatus(ErrorCode::HANDOFF_STALE_GENERATION,
                           "request " + request_id + " has no reserved generation to publish under");
  Entry& e = it->second;
  if (e.published && e.published->transfer_id == transfer_id) {
    if (e.published->content_digest != content_digest || e.published->generation != generation)
      return ViolationStatus(ErrorCode::HANDOFF_DUPLICATE_CORRUPTION,
                             "transfer " + transfer_id + " was already published with other content or generation");
    return PublishResult{*e.published, true};
  }
  if (generation != e.current_generation || (e.published && e.published->generation >= generation))
    return ViolationStatus(ErrorCode::HANDOFF_STALE_GENERATION,
                           "publication of transfer " + transfer_id + " under generation " +
                               std::to_string(generation) + " but request " + request_id +
                               " is at generation " + std::to_string(e.current_generation));
  e.published = PublishedHandle{request_id, generation, transfer_id, content_digest, next_handle_id_++};
  ++publications_;
  return PublishResult{*e.published, false};
}

std::optional<uint64_t> DecodeDirectory::CurrentGeneration(const std::string& request_id) const {
  auto it = entries_.find(request_id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.current_generation;
}

const PublishedHandle* DecodeDirectory::Lookup(const std::string& request_id) const {
  auto it = entries_.find(request_id);
  if (it == entries_.end() || !it->second.published) return nullptr;
  return &*it->second.published;
}

}  // namespace kvc::handoff
