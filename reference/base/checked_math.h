// Overflow-checked arithmetic on sizes that come from untrusted input.
//
// Every function returns std::nullopt instead of wrapping (SaturatingDeadline saturates);
// callers turn that into a Status or a violation naming the field. Header-only, no state,
// thread-safe.
#ifndef KVCONFORM_REFERENCE_BASE_CHECKED_MATH_H_
#define KVCONFORM_REFERENCE_BASE_CHECKED_MATH_H_

#include <chrono>
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

// num / den correctly rounded to the nearest double (ties to even), for den > 0. Converting
// each operand to double first rounds operands above 2^53 and then the quotient again: off by
// an ulp for large ledgers (probe 38: 16554018676113625 / 320852967645). Long division: the
// quotient's leading 54 bits and a sticky bit.
inline double ExactRatio(uint64_t num, uint64_t den) {
  if (num == 0 || den == 0) return 0.0;  // (den == 0 is the caller's to refuse)
  const uint64_t q = num / den;
  unsigned __int128 r = num % den;
  uint64_t m = 0;  // the leading significant bits, most significant first
  int n = 0;       // how many bits m holds
  int lead = 0;    // the binary exponent of m's leading bit
  bool sticky = false;
  if (q != 0) {
    const int qbits = 64 - __builtin_clzll(q);
    lead = qbits - 1;
    if (qbits > 54) {
      m = q >> (qbits - 54);
      sticky = (q & ((uint64_t{1} << (qbits - 54)) - 1)) != 0 || r != 0;
      n = 54;
    } else {
      m = q;
      n = qbits;
    }
  }
  for (int pos = 1; n < 54; ++pos) {  // fractional bits 2^-pos
    r <<= 1;
    const bool bit = r >= den;
    if (bit) r -= den;
    if (n == 0 && !bit) continue;  // leading zeros of a quotient below 1
    if (n == 0) lead = -pos;
    m = m << 1 | static_cast<uint64_t>(bit);
    ++n;
  }
  if (q == 0 || 64 - __builtin_clzll(q) <= 54) sticky = r != 0;
  const bool guard = (m & 1) != 0;
  m >>= 1;  // 53 bits
  if (guard && (sticky || (m & 1) != 0)) ++m;
  if (m == (uint64_t{1} << 53)) {
    m >>= 1;
    ++lead;
  }
  return __builtin_ldexp(static_cast<double>(m), lead - 52);
}

// The steady-clock instant `budget` after `start`, saturating at the clock's last instant: a
// budget beyond the clock's range (an "infinite" one from the command line, or
// milliseconds::max()) never runs out. start + budget would convert the budget to the clock's
// nanoseconds first, a signed overflow past ~292 years (undefined behaviour; UBSan caught
// `fuzz check --budget inf`, whose 10^15 ms wrapped). A budget <= 0 has run out at `start`.
inline std::chrono::steady_clock::time_point SaturatingDeadline(
    std::chrono::steady_clock::time_point start, std::chrono::milliseconds budget) {
  using Clock = std::chrono::steady_clock;
  if (budget.count() <= 0) return start;
  const Clock::duration since = start.time_since_epoch();
  // The room before the clock's last instant (all of it from an instant before the epoch).
  const Clock::duration room =
      since.count() >= 0 ? Clock::duration::max() - since : Clock::duration::max();
  // Whole milliseconds of room: a budget below it converts and adds without overflow.
  if (budget >= std::chrono::duration_cast<std::chrono::milliseconds>(room))
    return Clock::time_point::max();
  return start + std::chrono::duration_cast<Clock::duration>(budget);
}

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_BASE_CHECKED_MATH_H_
