// Signed, region- and byte-bounded transfer capabilities (M5.6 0x0FE).
//
// A capability binds issuer, tenant, source and destination workers, transfer id and
// attempt generation, route epoch, cache ABI digest, direction, allowed regions, byte
// bound, expiry and nonce. Its signature is HMAC-SHA256 (OpenSSL) over the RFC 8785
// canonical JSON of every bound field, keyed by key_id. AuthorizeTransfer applies the
// seed's authorize_transfer in order and denies with the first failing gate's code:
// signature (constant-time CRYPTO_memcmp), trusted issuer, 0 < expires_at - now <= TTL,
// identity equalities, current route epoch, equal cache ABI, direction, region inclusion
// R_request subset-of R_capability, 0 < bytes <= max_bytes, nonce equality, then single-use
// nonce consumption. Key bytes are never placed in a Status message or log line.
// Pure functions except NonceStore (not thread-safe; a real control plane consumes
// nonces atomically in its replay store, which this local store does not claim to be).
#ifndef KVCONFORM_REFERENCE_HANDOFF_CAPABILITY_H_
#define KVCONFORM_REFERENCE_HANDOFF_CAPABILITY_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/base/strict_json.h"

namespace kvc::handoff {

struct Capability {
  std::string issuer, key_id, tenant, source, destination, transfer_id;
  uint64_t generation = 0, route_epoch = 0;
  std::string cache_abi_sha256, direction;  // direction: "push" | "pull"
  std::vector<std::string> allowed_regions;
  uint64_t max_bytes = 0, expires_at_s = 0;
  std::string nonce;
  std::string signature_hex;  // HMAC-SHA256 over CapabilityPayload, lowercase hex
};

struct TransferRequest {
  std::string tenant, prefill_owner, decode_owner, transfer_id;
  uint64_t generation = 0;
  std::string cache_abi_sha256, direction;
  std::vector<std::string> regions;
  uint64_t bytes = 0;
  std::string nonce;
};

// Consumes each nonce at most once.
class NonceStore {
 public:
  bool ConsumeOnce(const std::string& nonce) { return consumed_.insert(nonce).second; }

 private:
  std::set<std::string> consumed_;
};

// Returns the key bytes for key_id, or nullopt when unknown. Callers own key storage.
using KeyLookup = std::function<std::optional<std::string>(const std::string& key_id)>;

struct AuthorizationContext {
  uint64_t now_s = 0;
  uint64_t max_ttl_s = 0;
  uint64_t current_route_epoch = 0;
  std::set<std::string> trusted_issuers;
  KeyLookup keys;
  NonceStore* nonces = nullptr;  // borrowed; must outlive the call
};

// Every field but the signature, as JSON members (the wire form adds "signature").
Json CapabilitySignedFields(const Capability& c);
// The canonical bytes that are signed: CanonicalJson(CapabilitySignedFields(c)).
StatusOr<std::string> CapabilityPayload(const Capability& c);
// Lowercase-hex HMAC-SHA256 of CapabilityPayload under `key`.
StatusOr<std::string> SignCapability(const Capability& c, const std::string& key);
// OK (allow exactly the requested regions) or a HANDOFF_CAPABILITY_* denial.
Status AuthorizeTransfer(const TransferRequest& request, const Capability& capability,
                         const AuthorizationContext& ctx);

// What an authorized capability lets the destination accept, write by write (the per-chunk gate
// of a real transfer): only its allowed regions, and at most max_bytes in all.
struct CapabilityGrant {
  std::set<std::string> regions;
  uint64_t max_bytes = 0;
  uint64_t accepted = 0;  // bytes accepted so far under this grant
};
// The grant of a capability that AuthorizeTransfer allowed.
CapabilityGrant GrantOf(const Capability& c);
// One write of `bytes` into `region`: HANDOFF_CAPABILITY_REGION_DENIED when the region is not
// granted, HANDOFF_CAPABILITY_BYTES_EXCEEDED when accepted + bytes would pass max_bytes (or
// overflow); otherwise the write is accepted and counted. Unchanged on denial.
Status AuthorizeWrite(CapabilityGrant* grant, const std::string& region, uint64_t bytes);

// The synthetic test keyring used by fixtures: key_id "kvconform-test-key-1" ->
// SHA-256("kvconform synthetic capability test key 1") (32 raw bytes). Never a real key.
std::optional<std::string> SyntheticTestKey(const std::string& key_id);

}  // namespace kvc::handoff

#endif  // KVCONFORM_REFERENCE_HANDOFF_CAPABILITY_H_
