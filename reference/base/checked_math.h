// Overflow-checked arithmetic on sizes that come from untrusted input.
//
// Every function returns std::nullopt instead of wrapping; callers turn that into a
// Status or a violation naming the field. Header-only, no state, thread-safe.
#ifndef KVCONFORM_REFERENCE_BASE_CHECKED_MATH_H_
#define KVCONFORM_REFERENCE_BASE_CHECKED_MATH_H_

#include <cstdint>
#include <initializer_list>
#include <optional>

namespace kvc {

inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<uint64_t> CheckedSub(uint64_t a, uint64_t b) {
  if (b > a) return std::nullopt;
  return a - b;
}
inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
// Product of all factors, or nullopt if any intermediate product overflows.
inline std::optional<uint64_t> CheckedProduct(std::initializer_list<uint64_t> factors) {
  uint64_t r = 1;
  for (uint64_t f : factors) {
    auto p = CheckedMul(r, f);
    if (!p) return std::nullopt;
    r = *p;
  }
  return r;
}
// Narrow a 128-bit intermediate to 64 bits.
inline std::optional<uint64_t> Narrow(unsigned __int128 v) {
  if (v > static_cast<unsigned __int128>(UINT64_MAX)) return std::nullopt;
  return static_cast<uint64_t>(v);
}

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_BASE_CHECKED_MATH_H_
