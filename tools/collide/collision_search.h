// A parallel collision search with distinguished points (van Oorschot and Wiener, "Parallel
// Collision Search with Cryptanalytic Applications", J. Cryptology 1999), for the test vectors
// that need two inputs of one of our 64-bit digests to collide (tools/collide/digest_collide.cc).
//
// The searched function maps `bits`-bit values to `bits`-bit values (results are masked). Walks
// z, f(z), f(f(z)), ... end at a distinguished point (its low `dp_bits` bits zero); two walks
// that reach the same distinguished point from different starts merged, and re-walking them
// from their starts finds the two inputs a != b with f(a) == f(b). `accept` decides whether a
// collision is the one wanted (a claw between two functions selected by an input bit, say);
// rejected ones are counted and the search goes on. Expected work for the first collision:
// about sqrt(pi * 2^bits / 2) evaluations.
//
// Deterministic for one thread (the walks' starts come from `seed`); with more threads the
// walks are the same but which collision is found first may differ. Thread safety: the
// function objects are called from `threads` threads at once and must be thread-safe.
#ifndef KVCONFORM_TOOLS_COLLIDE_COLLISION_SEARCH_H_
#define KVCONFORM_TOOLS_COLLIDE_COLLISION_SEARCH_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

#include "reference/race/fuzzer.h"

namespace kvc::collide {

// Evaluates f on `n` inputs at once (n <= kLanes): out[i] = f(in[i]). A batch lets an
// implementation interleave independent hash chains.
inline constexpr size_t kLanes = 8;
using BatchFunction = std::function<void(const uint64_t* in, uint64_t* out, size_t n)>;
// Whether the collision f(a) == f(b), a != b, is wanted.
using AcceptFunction = std::function<bool(uint64_t a, uint64_t b)>;

struct SearchOptions {
  unsigned bits = 64;            // width of the function's domain and range, 8..64
  unsigned dp_bits = 20;         // a point is distinguished when its low dp_bits bits are zero
  unsigned threads = 1;          // walkers (each advances kLanes walks)
  uint64_t seed = 1;             // the walks' starts
  uint64_t max_evaluations = 0;  // give up after this many (0: no limit)
};

struct Collision {
  uint64_t a = 0, b = 0;  // a != b, f(a) == f(b), accept(a, b)
  uint64_t value = 0;     // f(a)
};

struct SearchStats {
  uint64_t evaluations = 0;    // calls of f (one per input), walks and re-walks together
  uint64_t distinguished = 0;  // distinguished points stored
  uint64_t rejected = 0;       // collisions found and not accepted (each counted once)
  uint64_t abandoned = 0;      // walks that reached 20 x 2^dp_bits steps (a cycle) and restarted
};

// Finds one accepted collision, or nullopt once max_evaluations is spent. `stats` (optional)
// receives the counts.
std::optional<Collision> FindCollision(const BatchFunction& f, const AcceptFunction& accept,
                                       const SearchOptions& options, SearchStats* stats = nullptr);

// The walks' start points come from the race fuzzer's SplitMix64 (Steele, Lea and Flood).
using race::SplitMix64;

}  // namespace kvc::collide

#endif  // KVCONFORM_TOOLS_COLLIDE_COLLISION_SEARCH_H_
