// Capability signing (HMAC-SHA256) and the ordered authorization gates of M5.6 0x0FE.
#include "reference/handoff/capability.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "reference/base/canonical_json.h"
#include "reference/base/checked_math.h"
#include "reference/base/strict_json.h"
#include "reference/base/text_forms.h"

namespace kvc::handoff {
namespace {

Status Deny(ErrorCode c, std::string m) {
  return ViolationStatus(c, "transfer denied: " + std::move(m));
}

std::optional<std::string> HexToBytes(const std::string& hex) {
  if (hex.size() % 2) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    auto nib = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    int hi = nib(hex[i]), lo = nib(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

StatusOr<std::string> HmacRaw(const std::string& key, const std::string& data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &len))
    return Internal("HMAC-SHA256 failed");
  return std::string(reinterpret_cast<char*>(mac), len);
}

}  // namespace

Json CapabilitySignedFields(const Capability& c) {
  return {{"issuer", c.issuer},
          {"key_id", c.key_id},
          {"tenant", c.tenant},
          {"source", c.source},
          {"destination", c.destination},
          {"transfer_id", c.transfer_id},
          {"generation", c.generation},
          {"route_epoch", c.route_epoch},
          {"cache_abi_sha256", c.cache_abi_sha256},
          {"direction", c.direction},
          {"allowed_regions", c.allowed_regions},
          {"max_bytes", c.max_bytes},
          {"expires_at_s", c.expires_at_s},
          {"nonce", c.nonce}};
}

StatusOr<std::string> CapabilityPayload(const Capability& c) {
  return CanonicalJson(CapabilitySignedFields(c));
}

StatusOr<std::string> SignCapability(const Capability& c, const std::string& key) {
  KVC_ASSIGN_OR_RETURN(std::string payload, CapabilityPayload(c));
  KVC_ASSIGN_OR_RETURN(std::string mac, HmacRaw(key, payload));
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : mac) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  return hex;
}

Status AuthorizeTransfer(const TransferRequest& r, const Capability& c,
                         const AuthorizationContext& ctx) {
  // 1. Signature: unknown key, malformed or wrong MAC all deny identically (no oracle).
  std::optional<std::string> key = ctx.keys ? ctx.keys(c.key_id) : std::nullopt;
  auto given = HexToBytes(c.signature_hex);
  bool sig_ok = false;
  if (key && given) {
    KVC_ASSIGN_OR_RETURN(std::string payload, CapabilityPayload(c));
    KVC_ASSIGN_OR_RETURN(std::string want, HmacRaw(*key, payload));
    sig_ok =
        given->size() == want.size() && CRYPTO_memcmp(given->data(), want.data(), want.size()) == 0;
  }
  if (!sig_ok)
    return Deny(
        ErrorCode::HANDOFF_CAPABILITY_SIGNATURE_INVALID,
        "capability signature does not verify under key id " + base::QuoteClipped(c.key_id));
  if (!ctx.trusted_issuers.count(c.issuer))
    return Deny(ErrorCode::HANDOFF_CAPABILITY_ISSUER_UNTRUSTED,
                "issuer " + base::QuoteClipped(c.issuer) + " is not a trusted control plane");
  if (c.expires_at_s <= ctx.now_s || c.expires_at_s - ctx.now_s > ctx.max_ttl_s)
    return Deny(ErrorCode::HANDOFF_CAPABILITY_EXPIRED,
                "capability expires at " + std::to_string(c.expires_at_s) + " s; now " +
                    std::to_string(ctx.now_s) +
                    " s requires 0 < expires_at - now <= " + std::to_string(ctx.max_ttl_s) + " s");
  const char* field = c.tenant != r.tenant              ? "tenant"
                      : c.source != r.prefill_owner     ? "source"
                      : c.destination != r.decode_owner ? "destination"
                      : c.transfer_id != r.transfer_id  ? "transfer_id"
                      : c.generation != r.generation    ? "generation"
                                                        : nullptr;
  if (field)
    return Deny(ErrorCode::HANDOFF_CAPABILITY_IDENTITY_MISMATCH,
                std::string("capability and request differ in ") + field);
  if (c.route_epoch != ctx.current_route_epoch)
    return Deny(ErrorCode::HANDOFF_CAPABILITY_EPOCH_STALE,
                "capability route epoch " + std::to_string(c.route_epoch) +
                    " is not the current epoch " + std::to_string(ctx.current_route_epoch));
  if (c.cache_abi_sha256 != r.cache_abi_sha256)
    return Deny(ErrorCode::HANDOFF_CAPABILITY_ABI_MISMATCH,
                "capability cache ABI differs from the request's");
  if (c.direction != r.direction)
    return Deny(
        ErrorCode::HANDOFF_CAPABILITY_DIRECTION_MISMATCH,
        "capability direction " + c.direction + " differs from the request's " + r.direction);
  std::set<std::string> allowed(c.allowed_regions.begin(), c.allowed_regions.end());
  for (const auto& region : r.regions)
    if (!allowed.count(region))
      return Deny(ErrorCode::HANDOFF_CAPABILITY_REGION_DENIED,
                  "region " + base::QuoteClipped(region) + " is not in the capability");
  if (r.bytes == 0 || r.bytes > c.max_bytes)
    return Deny(ErrorCode::HANDOFF_CAPABILITY_BYTES_EXCEEDED,
                "requested " + std::to_string(r.bytes) +
                    " B; the capability allows 0 < bytes <= " + std::to_string(c.max_bytes));
  if (c.nonce.size() != r.nonce.size() ||
      CRYPTO_memcmp(c.nonce.data(), r.nonce.data(), c.nonce.size()) != 0)
    return Deny(ErrorCode::HANDOFF_CAPABILITY_NONCE_MISMATCH,
                "the request nonce is not the capability nonce");
  if (!ctx.nonces || !ctx.nonces->ConsumeOnce(c.nonce))
    return Deny(ErrorCode::HANDOFF_CAPABILITY_NONCE_REPLAYED,
                "the capability nonce was already consumed");
  return Status();
}

CapabilityGrant GrantOf(const Capability& c) {
  return {{c.allowed_regions.begin(), c.allowed_regions.end()}, c.max_bytes, 0};
}

Status AuthorizeWrite(CapabilityGrant* grant, const std::string& region, uint64_t bytes) {
  if (!grant->regions.count(region))
    return Deny(ErrorCode::HANDOFF_CAPABILITY_REGION_DENIED,
                "write to region " + base::QuoteClipped(region) +
                    " outside the capability's allowed regions");
  const auto total = CheckedAdd(grant->accepted, bytes);
  if (!total || *total > grant->max_bytes)
    return Deny(ErrorCode::HANDOFF_CAPABILITY_BYTES_EXCEEDED,
                "a " + std::to_string(bytes) + " B write after " + std::to_string(grant->accepted) +
                    " B exceeds the capability's bound of " + std::to_string(grant->max_bytes) +
                    " B");
  grant->accepted = *total;
  return Status();
}

std::optional<std::string> SyntheticTestKey(const std::string& key_id) {
  if (key_id != "kvconform-test-key-1") return std::nullopt;
  unsigned char d[SHA256_DIGEST_LENGTH];
  static const std::string seed = "kvconform synthetic capability test key 1";
  SHA256(reinterpret_cast<const unsigned char*>(seed.data()), seed.size(), d);
  return std::string(reinterpret_cast<char*>(d), sizeof d);
}

}  // namespace kvc::handoff
