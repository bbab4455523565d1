// The decode directory of M5.6 0x06D/0x10: the one place a transferred cache becomes
// visible to decode, published atomically under the request's current generation.
//
// Per request it keeps the current (newest reserved) generation and at most one published
// handle. Rules (0x10 publish_transfer):
//   - a reservation must carry a generation newer than the request's current one (a
//     reroute supersedes older attempts); older or equal -> HANDOFF_STALE_GENERATION;
//   - publication succeeds only for the current generation with no newer handle published;
//   - re-publishing the same transfer_id with the same content digest is idempotent and
//     returns the original handle; the same transfer_id with another digest is
//     HANDOFF_DUPLICATE_CORRUPTION; anything else under a non-current generation is stale.
// TODO(lifecycle): once branch `lifecycle` lands its all-layer compare-and-publish API,
// publication goes through it (expected base -> successor); this type then keeps only the
// M5.6 generation fence. Not thread-safe; callers serialize (one logical directory lock).
#ifndef KVCONFORM_REFERENCE_HANDOFF_DECODE_DIRECTORY_H_
#define KVCONFORM_REFERENCE_HANDOFF_DECODE_DIRECTORY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "reference/base/status.h"

namespace kvc::handoff {

// What decode may be admitted from: the published, complete destination cache.
struct PublishedHandle {
  std::string request_id;
  uint64_t generation = 0;
  std::string transfer_id;
  std::string content_digest;  // digest over the expected chunk checksums
  uint64_t handle_id = 0;      // directory-assigned, never reused
  bool operator==(const PublishedHandle&) const = default;
};

struct PublishResult {
  PublishedHandle handle;
  bool idempotent_replay = false;  // true when this transfer_id was already published
};

class DecodeDirectory {
 public:
  // Declares `generation` as the request's current attempt (reservation before transfer).
  Status ReserveGeneration(const std::string& request_id, uint64_t generation);
  // Seeds a request's current generation (a checker loading an observed directory).
  void SetCurrentGeneration(const std::string& request_id, uint64_t generation);

  StatusOr<PublishResult> PublishIfGenerationCurrent(const std::string& request_id, uint64_t generation,
                                                     const std::string& transfer_id,
                                                     const std::string& content_digest);

  std::optional<uint64_t> CurrentGeneration(const std::string& request_id) const;
  const PublishedHandle* Lookup(const std::string& request_id) const;
  // Number of successful (non-idempotent) publications, for property tests.
  uint64_t publications() const { return publications_; }

 private:
  struct Entry {
    uint64_t current_generation = 0;
    std::optional<PublishedHandle> published;
  };
  std::map<std::string, Entry> entries_;
  uint64_t next_handle_id_ = 1;
  uint64_t publications_ = 0;
};

}  // namespace kvc::handoff

#endif  // KVCONFORM_REFERENCE_HANDOFF_DECODE_DIRECTORY_H_
