// Closed forms for the saved-work row and causal-pair ledgers; see saved_work.h.
#include "reference/saved_work/saved_work.h"

#include <string>

#include "reference/base/checked_math.h"

namespace kvc {
namespace {

using u128 = unsigned __int128;

// sum_{s=1..n} s(s+1)/2 = n(n+1)(n+2)/6 (tetrahedral number). Requires n < 2^42.
u128 Tetrahedral(u128 n) { return n * (n + 1) * (n + 2) / 6; }

// The decimal digits of x.
std::string Decimal(u128 x) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(x % 10)));
    x /= 10;
  } while (x != 0);
  return s;
}

}  // namespace

StatusOr<SavedWork> ComputeSavedWork(uint64_t prompt, uint64_t outputs) {
  if (prompt == 0) return InvalidArgument("--prompt must be at least 1");
  if (outputs == 0) return InvalidArgument("--outputs must be at least 1");
  const u128 p = prompt, g = outputs;
  // The widest uncached call has P+G-1 rows; its causal triangle alone is ~(P+G)^2/2,
  // so P+G beyond 2^42 cannot fit any result in 64 bits and would overflow the cube below.
  if (p + g > (u128{1} << 42))
    return OutOfRange("P + G = " + Decimal(p + g) +
                      " is too large: the pair ledgers would overflow 64 bits");
  const u128 rows_no_cache = g * p + g * (g - 1) / 2;
  const u128 rows_cache = p + g - 1;
  const u128 pairs_no_cache = Tetrahedral(p + g - 1) - Tetrahedral(p - 1);
  const u128 pairs_cache = p * (p + 1) / 2 + (g - 1) * p + (g - 1) * g / 2;
  SavedWork w;
  w.prompt = prompt;
  w.outputs = outputs;
  auto a = Narrow(rows_no_cache), b = Narrow(rows_cache), c = Narrow(pairs_no_cache),
       d = Narrow(pairs_cache);
  if (!a || !b || !c || !d) return OutOfRange("a saved-work ledger exceeds 64 bits for these inputs");
  w.rows_no_cache = *a;
  w.rows_cache = *b;
  w.rows_saved = *a - *b;
  w.pairs_no_cache = *c;
  w.pairs_cache = *d;
  w.pairs_saved = *c - *d;
  w.row_reduction = ExactRatio(*a, *b);
  w.pair_reduction = ExactRatio(*c, *d);
  return w;
}

}  // namespace kvc
