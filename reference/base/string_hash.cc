// The id maps' per-process hash keys (string_hash.h).
#include "reference/base/string_hash.h"

#include <cerrno>
#include <cstdlib>
#include <random>

namespace kvc::base {
namespace {

// splitmix64: spreads a seed over a well-mixed 64-bit word.
uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

HashKeys HashKeysFromSeed(uint64_t seed) {
  HashKeys keys;
  // Odd multipliers: a product with an odd key keeps every bit of the other operand.
  keys.k0 = SplitMix(seed) | 1;
  keys.k1 = SplitMix(seed) | 1;
  return keys;
}

HashKeys MakeHashKeys() {
  uint64_t seed = 0;
  bool fixed = false;
  if (const char* env = std::getenv("KVCONFORM_HASH_SEED"); env && *env) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(env, &end, 10);
    // Digits only: strtoull would also skip blanks and take a sign (" -5" wrapped to 2^64 - 5).
    if (errno == 0 && end && *end == '\0' && *env >= '0' && *env <= '9') {
      seed = v;
      fixed = true;
    }
  }
  if (!fixed) {
    std::random_device rd;
    seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  return HashKeysFromSeed(seed);
}

}  // namespace kvc::base
