// Hashing and byte equality of short strings (ids, names): the key functions of the id maps.
#ifndef KVCONFORM_REFERENCE_BASE_STRING_HASH_H_
#define KVCONFORM_REFERENCE_BASE_STRING_HASH_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace kvc::base {

// The 128-bit product of x and y folded to 64 bits (low half xor high half).
inline uint64_t MulFold(uint64_t x, uint64_t y) {
  const unsigned __int128 r = static_cast<unsigned __int128>(x) * y;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

// The id maps' hash keys: this process's own, drawn once (std::random_device) at first use,
// or derived from KVCONFORM_HASH_SEED (a decimal uint64, digits only) when that is set (to repeat a
// run's hashing exactly, e.g. for a benchmark). Secret keys keep ids crafted from a trace to
// collide from colliding here (probe 63: with fixed public constants, 8,000 request ids of 816
// bytes all hashed to 0 and a check of 72,000 events took 4.5 s, quadratic in the ids). Nothing the
// kit outputs depends on them (StringHash). Thread-safe (a function-local static).
struct HashKeys {
  uint64_t k0;
  uint64_t k1;
};
HashKeys MakeHashKeys();                   // string_hash.cc
HashKeys HashKeysFromSeed(uint64_t seed);  // the keys KVCONFORM_HASH_SEED=seed gives
inline const HashKeys& ProcessHashKeys() {
  static const HashKeys keys = MakeHashKeys();
  return keys;
}

// StringHash of more than 16 bytes: 16 bytes per multiply-fold, the state chained through the
// second operand, the last round reading the last 16 bytes (overlapping the one before).
// Runtime ids are often this long (vLLM's "cmpl-<32 hex>-0", SHA-256 cache ABI ids).
inline uint64_t StringHashLong(const char* p, size_t n, const HashKeys& keys) {  // n > 16
  const uint64_t k0 = keys.k0, k1 = keys.k1;
  auto load = [p](size_t off) {
    uint64_t x;
    std::memcpy(&x, p + off, 8);
    return x;
  };
  uint64_t h = n * k1;  // the length spread over the word (a plain xor collides across lengths)
  for (size_t i = 0; i + 16 < n; i += 16) h = MulFold(load(i) ^ k0, load(i + 8) ^ h);
  return MulFold(load(n - 16) ^ k0, load(n - 8) ^ h);
}

// StringHash under explicit keys (tests; the maps use ProcessHashKeys()): an id of up to 16
// bytes is one or two 8-byte loads and a 128-bit multiply-fold, a longer one StringHashLong;
// both 32-bit halves of the result are mixed (StableStringMap uses the upper half).
inline uint64_t KeyedStringHash(std::string_view s, const HashKeys& keys) {
  const uint64_t k0 = keys.k0, k1 = keys.k1;
  const size_t n = s.size();
  const char* p = s.data();
  uint64_t a = 0, b = 0;
  if (n >= 8) {
    if (n > 16) return StringHashLong(p, n, keys);
    std::memcpy(&a, p, 8);
    std::memcpy(&b, p + n - 8, 8);
  } else if (n >= 4) {
    uint32_t x, y;
    std::memcpy(&x, p, 4);
    std::memcpy(&y, p + n - 4, 4);
    a = x;
    b = y;
  } else if (n > 0) {
    a = static_cast<unsigned char>(p[0]) | static_cast<unsigned char>(p[n / 2]) << 8 |
        static_cast<uint64_t>(static_cast<unsigned char>(p[n - 1])) << 16;
  }
  // The length enters spread over the word: xor-ed in plainly, it cancelled data bits, so
  // that e.g. "q" and "rq" collided (StringHash.EveryByteChangesTheHash).
  return MulFold(a ^ (n + 1) * k0, b ^ k1);
}

// Transparent string hash of the id maps (KvObject's, the trace checker's): KeyedStringHash
// under ProcessHashKeys(), so not stable across processes (or versions); nothing may depend on
// it beyond one process (StableStringMap iterates in node order, not hash order, so no output
// does).
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return KeyedStringHash(s, ProcessHashKeys()); }
};

// Byte equality of two short strings (ids, names): 8-byte loads, the last one overlapping, and
// two overlapping 4-byte loads below 8 bytes.
inline bool SameBytesLong(const char* p, const char* q, size_t n) {  // n > 16
  auto eq = [&](size_t off) {
    uint64_t x, y;
    std::memcpy(&x, p + off, 8);
    std::memcpy(&y, q + off, 8);
    return x == y;
  };
  for (size_t i = 0; i + 8 < n; i += 8)
    if (!eq(i)) return false;
  return eq(n - 8);
}

inline bool SameBytes(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  const char* p = a.data();
  const char* q = b.data();
  auto eq = [&](size_t off, auto word) {
    decltype(word) x, y;
    std::memcpy(&x, p + off, sizeof x);
    std::memcpy(&y, q + off, sizeof y);
    return x == y;
  };
  if (n >= 8) return n <= 16 ? eq(0, uint64_t{}) && eq(n - 8, uint64_t{}) : SameBytesLong(p, q, n);
  if (n >= 4) return eq(0, uint32_t{}) && eq(n - 4, uint32_t{});
  for (size_t i = 0; i < n; ++i)
    if (p[i] != q[i]) return false;
  return true;
}

// Transparent key equality (pairs with StringHash): SameBytes, no library call.
struct StringEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return SameBytes(a, b); }
};

}  // namespace kvc::base

#endif  // KVCONFORM_REFERENCE_BASE_STRING_HASH_H_
