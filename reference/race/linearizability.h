// Linearizability checking of recorded histories against a sequential model (Wing-Gong/Lowe).
//
// The checker is generic over a sequential model M (see the SequentialModel concept): it
// partitions the history by HistoryOp::partition (independent objects, checked separately:
// linearizability is local, Herlihy & Wing), and searches each partition for a total order
// that respects real time (an op that returned before another was invoked comes first) and in
// which every op with a known outcome returns exactly what the model returns. An op with an
// unknown outcome may take effect at any point after its invocation, or never.
// The search is Lowe's just-in-time linearization with a cache of visited
// (linearized set, model state) pairs, so the model state must be hashable and comparable.
// Verdict: linearizable / not linearizable (with a minimal witness: the longest linearizable
// prefix, the op that cannot be placed after it, and the model state before that op) / unknown
// when the time budget ran out. Thread safety: CheckHistory is reentrant; M must be const-safe.
#ifndef KVCONFORM_REFERENCE_RACE_LINEARIZABILITY_H_
#define KVCONFORM_REFERENCE_RACE_LINEARIZABILITY_H_

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "reference/base/checked_math.h"
#include "reference/base/status.h"
#include "reference/race/history.h"

namespace kvc::race {

// A sequential specification. Op is the model's compiled form of one HistoryOp.
//  * Compile: validates the op's name/args/result shape (kParseError naming the line on bad
//    input) and precomputes whatever Step needs.
//  * Initial: the state of a fresh partition.
//  * Step: applies the op to `s`; returns whether the model's result equals the recorded one.
//    With known == false (unknown outcome) the result is not compared; Step applies the op's
//    effect (if the model admits it) and returns true.
//  * Hash/Equal/Describe: for the visited-state cache and the witness.
template <class M>
concept SequentialModel = requires(const M m, const HistoryOp& h, typename M::State s,
                                   const typename M::Op& op, const std::string& partition) {
  { m.Compile(h) } -> std::same_as<StatusOr<typename M::Op>>;
  { m.Initial(partition) } -> std::same_as<typename M::State>;
  { m.Step(s, op, true) } -> std::same_as<bool>;
  { m.Hash(s) } -> std::same_as<uint64_t>;
  { m.Equal(s, s) } -> std::same_as<bool>;
  { m.Describe(s) } -> std::same_as<std::string>;
};

// An optional fast path for models whose state is expensive to copy. Work is a mutable state
// that the search changes in place (copied only for sparse checkpoints):
//  * InitialWork: the state of a fresh partition (equal to Initial).
//  * Apply: like Step, but on one mutable state; when it returns false `w` may have changed
//    (the search restores it from a checkpoint by replaying the linearized ops).
//  * ReadOnly: Apply never changes `w` for this op (no restore needed when it fails).
//  * Digest: a 64-bit digest of `w` (equal states should digest equal). The fast search caches
//    (linearized set, digest) pairs; a digest collision can only prune a path wrongly, so the
//    checker confirms every "not linearizable" of the fast search with the exact search.
template <class M>
concept InPlaceModel = SequentialModel<M> &&
    requires(const M m, typename M::Work w, const typename M::Op& op, const std::string& p) {
  { m.InitialWork(p) } -> std::same_as<typename M::Work>;
  { m.Apply(w, op, true) } -> std::same_as<bool>;
  { m.ReadOnly(op) } -> std::same_as<bool>;
  { m.Digest(w) } -> std::same_as<uint64_t>;
};

enum class Verdict : uint8_t { kLinearizable, kNotLinearizable, kUnknown };
std::string_view VerdictName(Verdict v);  // "linearizable" | "not_linearizable" | "unknown"

struct Witness {
  std::string partition;
  std::vector<uint64_t> prefix;   // op ids of the longest linearizable prefix, in order
  uint64_t stuck_op = 0;          // the op that cannot be placed after that prefix
  std::string state_before;       // model state after the prefix (M::Describe)
  // What the sequential model returns for the stuck op from that state (M::Expect, where the
  // model has one; empty otherwise): the result the history's differs from (probe 69: a
  // witness showed only what the store returned).
  std::string expected;
};

struct CheckOptions {
  bool partition = true;                     // false: one search over the whole history
  std::chrono::milliseconds budget{10'000};  // wall-clock budget for the whole check
  unsigned workers = 0;                      // partitions searched in parallel (0: all cores)
  // InPlaceModel only: search with in-place states and a digest cache first (fast), and
  // confirm a "not linearizable" with the exact search (full states in the cache). false: the
  // exact search only.
  bool in_place = true;
};

struct CheckResult {
  Verdict verdict = Verdict::kLinearizable;
  size_t partitions = 0;
  size_t unknown_outcomes = 0;          // ops whose outcome is unknown
  uint64_t states_explored = 0;         // search steps over all partitions
  std::optional<Witness> witness;       // when not linearizable
  std::string unknown_partition;        // when the budget ran out: the partition being searched
  // With kUnknown: the exact search's kept states passed kSearchMemoryCapBytes (else the time
  // budget ran out).
  bool unknown_memory = false;
};

// The memory the exact search may spend on the states it keeps (its visited cache is cleared
// past it; its stack, which it cannot drop, ends the search as unknown past it).
inline constexpr size_t kSearchMemoryCapBytes = size_t{4} << 30;

namespace internal {

inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// One partition's search. ops: pointers into the history; compiled in the same order.
// kUnknown with *memory_cap_hit set when the states the search must keep to backtrack (its
// stack, one state per linearized op that can change it) pass kSearchMemoryCapBytes: a long
// lineage's states grow with it, so a depth-N path holds O(N^2) bytes (probe 87: a 32,000-op
// sequential history took 14.6 GB before its time budget ran out).
template <SequentialModel M>
Verdict SearchPartition(const M& model, const std::string& partition,
                        const std::vector<const HistoryOp*>& ops,
                        const std::vector<typename M::Op>& compiled,
                        std::chrono::steady_clock::time_point deadline, uint64_t* steps,
                        std::optional<Witness>* witness, bool* memory_cap_hit) {
  using State = typename M::State;
  const size_t n = ops.size();
  // Events: call(i) at invoke_ns, ret(i) at return_ns or +inf. Calls sort before returns at
  // equal times (concurrent), which is the permissive reading of a tie.
  struct Event {
    int64_t t;
    bool is_ret;
    uint32_t op;
  };
  std::vector<Event> ev;
  ev.reserve(2 * n);
  size_t known_total = 0;
  for (size_t i = 0; i < n; ++i) {
    ev.push_back({ops[i]->invoke_ns, false, static_cast<uint32_t>(i)});
    ev.push_back({ops[i]->return_ns ? *ops[i]->return_ns : std::numeric_limits<int64_t>::max(),
                  true, static_cast<uint32_t>(i)});
    if (ops[i]->outcome != Outcome::kUnknown) ++known_total;
  }
  std::stable_sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) {
    if (a.t != b.t) return a.t < b.t;
    return !a.is_ret && b.is_ret;
  });
  // Doubly linked list over events; node 0 is the head sentinel, events are 1..2n.
  const size_t m = ev.size() + 1;
  std::vector<uint32_t> next(m + 1), prev(m + 1);
  std::vector<uint32_t> call_node(n), ret_node(n);
  for (size_t k = 0; k < m; ++k) {
    next[k] = static_cast<uint32_t>(k + 1);
    prev[k + 1] = static_cast<uint32_t>(k);
  }
  const uint32_t kEnd = static_cast<uint32_t>(m);
  for (size_t k = 0; k < ev.size(); ++k) {
    (ev[k].is_ret ? ret_node : call_node)[ev[k].op] = static_cast<uint32_t>(k + 1);
  }
  auto unlink = [&](uint32_t node) {
    next[prev[node]] = next[node];
    prev[next[node]] = prev[node];
  };
  auto relink = [&](uint32_t node) {
    next[prev[node]] = node;
    prev[next[node]] = node;
  };
  const size_t words = (n + 63) / 64;
  std::vector<uint64_t> lin(words, 0);
  struct Key {
    std::vector<uint64_t> bits;
    State state;
  };
  std::unordered_multimap<uint64_t, Key> cache;
  // The cache only prunes re-visits; dropping it is always sound. Cap its memory (bit sets of
  // huge unpartitioned histories are large, and a model's states may be large private copies:
  // a model with StateBytes() charges each entry its state too; probe 66: uncharged KvModel
  // states took 10.7 GB within a 60 s budget) by starting over when it grows past the cap.
  constexpr size_t kCacheCapBytes = kSearchMemoryCapBytes;
  size_t cache_bytes = 0;
  size_t stack_bytes = 0;       // the states the stack alone holds (StateBytes; 0 without it)
  size_t last_entry_bytes = 0;  // the state bytes of the last cache_insert's state
  auto bits_hash = [&]() {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (uint64_t w : lin) h = Mix64(h ^ w) + 0x9e3779b97f4a7c15ull;
    return h;
  };
  auto cache_insert = [&](const State& s) {
    uint64_t h = Mix64(bits_hash() ^ model.Hash(s));
    auto range = cache.equal_range(h);
    for (auto it = range.first; it != range.second; ++it)
      if (it->second.bits == lin && model.Equal(it->second.state, s)) return false;
    size_t entry = words * sizeof(uint64_t) + 64;
    last_entry_bytes = 0;
    if constexpr (requires { model.StateBytes(s); }) last_entry_bytes = model.StateBytes(s);
    entry += last_entry_bytes;
    cache_bytes += entry;
    if (cache_bytes > kCacheCapBytes) {
      cache.clear();
      cache_bytes = 0;
    }
    cache.emplace(h, Key{lin, s});
    return true;
  };
  struct Frame {
    uint32_t op;
    State before;
    size_t bytes;  // what `before` holds beyond the frame below's state (0: shares it)
  };
  std::vector<Frame> stack;
  State state = model.Initial(partition);
  size_t state_bytes = 0;  // what `state` holds beyond the top frame's state
  size_t known_done = 0;
  size_t best_depth = 0;
  bool have_best = false;
  std::vector<uint32_t> best_prefix;  // the witness, described once at the end
  uint32_t best_stuck = 0;
  std::optional<State> best_state;
  // A read-only op linearized where it applies is never tried later instead: it changes no
  // state, and every op that returned before its call is linearized already (the scan stops at
  // the first return not linearized), so any linearization that places it later is one with it
  // here. Backtracking over it therefore backtracks further (probe 87: K concurrent correct
  // reads beside one impossible one were tried in 2^K subsets; a 28-op history stayed unknown).
  // SearchPartitionInPlace applies the same rule, so both explore in the same order.
  auto committed = [&](uint32_t op) {
    if constexpr (requires { model.ReadOnly(compiled[op]); })
      return model.ReadOnly(compiled[op]);
    else
      return false;
  };
  uint32_t node = next[0];
  uint64_t local_steps = 0;
  while (true) {
    if (known_done == known_total) {
      *steps += local_steps;
      return Verdict::kLinearizable;
    }
    if ((++local_steps & 1023) == 0 && std::chrono::steady_clock::now() > deadline) {
      *steps += local_steps;
      return Verdict::kUnknown;
    }
    if (node == kEnd) {
      // Only unknown-outcome returns can be passed without linearizing their op, so the end is
      // reached with known ops left only after a committed op's backtrack (`committed`): back
      // one more op.
      if (stack.empty()) break;
      Frame f = std::move(stack.back());
      stack.pop_back();
      state = std::move(f.before);
      stack_bytes -= f.bytes;
      state_bytes = f.bytes;
      lin[f.op / 64] &= ~(1ull << (f.op % 64));
      if (ops[f.op]->outcome != Outcome::kUnknown) --known_done;
      relink(ret_node[f.op]);
      relink(call_node[f.op]);
      node = committed(f.op) ? kEnd : next[call_node[f.op]];
      continue;
    }
    const Event& e = ev[node - 1];
    if (!e.is_ret) {
      State candidate = state;
      bool known = ops[e.op]->outcome != Outcome::kUnknown;
      bool ok = model.Step(candidate, compiled[e.op], known);
      if (ok) {
        lin[e.op / 64] |= 1ull << (e.op % 64);
        if (cache_insert(candidate)) {
          // A read-only op's state is its predecessor's (Step shares it): no bytes of its own.
          const bool shares = committed(e.op);
          stack.push_back({e.op, std::move(state), state_bytes});
          stack_bytes += state_bytes;
          state = std::move(candidate);
          state_bytes = shares ? 0 : last_entry_bytes;
          if (stack_bytes > kSearchMemoryCapBytes) {
            *memory_cap_hit = true;
            *steps += local_steps;
            return Verdict::kUnknown;
          }
          if (known) ++known_done;
          unlink(call_node[e.op]);
          unlink(ret_node[e.op]);
          node = next[0];
          continue;
        }
        lin[e.op / 64] &= ~(1ull << (e.op % 64));
      }
      node = next[node];
      continue;
    }
    // A return whose call is not linearized yet.
    if (ops[e.op]->outcome == Outcome::kUnknown) {
      node = next[node];  // it never returned; nothing forces it before the end
      continue;
    }
    if (!have_best || stack.size() > best_depth) {
      have_best = true;
      best_depth = stack.size();
      best_prefix.clear();
      for (const Frame& f : stack) best_prefix.push_back(f.op);
      best_stuck = e.op;
      best_state = state;
    }
    if (stack.empty()) break;
    Frame f = std::move(stack.back());
    stack.pop_back();
    state = std::move(f.before);
    stack_bytes -= f.bytes;
    state_bytes = f.bytes;
    lin[f.op / 64] &= ~(1ull << (f.op % 64));
    if (ops[f.op]->outcome != Outcome::kUnknown) --known_done;
    relink(ret_node[f.op]);
    relink(call_node[f.op]);
    node = committed(f.op) ? kEnd : next[call_node[f.op]];
  }
  *steps += local_steps;
  if (have_best) {
    Witness w;
    w.partition = partition;
    for (uint32_t i : best_prefix) w.prefix.push_back(ops[i]->id);
    w.stuck_op = ops[best_stuck]->id;
    w.state_before = model.Describe(*best_state);
    if constexpr (requires { model.Expect(*best_state, compiled[best_stuck]); })
      w.expected = model.Expect(*best_state, compiled[best_stuck]);
    *witness = std::move(w);
  }
  return Verdict::kNotLinearizable;
}

// Events of one partition in time order: call(i) at invoke_ns, ret(i) at return_ns or +inf.
// Calls sort before returns at equal times (concurrent), the permissive reading of a tie. A
// doubly linked list over them (node 0 is the head sentinel, events are nodes 1..2n) lets the
// search unlink a linearized op's call and return and relink them on backtracking.
struct EventList {
  struct Event {
    int64_t t;
    bool is_ret;
    uint32_t op;
  };
  std::vector<Event> ev;
  std::vector<uint32_t> next, prev, call_node, ret_node;
  uint32_t end = 0;
  size_t known_total = 0;

  explicit EventList(const std::vector<const HistoryOp*>& ops) {
    const size_t n = ops.size();
    ev.reserve(2 * n);
    for (size_t i = 0; i < n; ++i) {
      ev.push_back({ops[i]->invoke_ns, false, static_cast<uint32_t>(i)});
      ev.push_back({ops[i]->return_ns ? *ops[i]->return_ns : std::numeric_limits<int64_t>::max(),
                    true, static_cast<uint32_t>(i)});
      if (ops[i]->outcome != Outcome::kUnknown) ++known_total;
    }
    std::stable_sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) {
      if (a.t != b.t) return a.t < b.t;
      return !a.is_ret && b.is_ret;
    });
    const size_t m = ev.size() + 1;
    next.resize(m + 1);
    prev.resize(m + 1);
    call_node.resize(n);
    ret_node.resize(n);
    for (size_t k = 0; k < m; ++k) {
      next[k] = static_cast<uint32_t>(k + 1);
      prev[k + 1] = static_cast<uint32_t>(k);
    }
    end = static_cast<uint32_t>(m);
    for (size_t k = 0; k < ev.size(); ++k)
      (ev[k].is_ret ? ret_node : call_node)[ev[k].op] = static_cast<uint32_t>(k + 1);
  }
  void Unlink(uint32_t op) {
    for (uint32_t node : {call_node[op], ret_node[op]}) {
      next[prev[node]] = next[node];
      prev[next[node]] = prev[node];
    }
  }
  void Relink(uint32_t op) {  // reverse order of Unlink
    for (uint32_t node : {ret_node[op], call_node[op]}) {
      next[prev[node]] = node;
      prev[next[node]] = node;
    }
  }
};

// The fast search (InPlaceModel): the same just-in-time linearization as SearchPartition, on
// one mutable state. A checkpoint (a copy of the state before the op) is kept at sparse depths
// (checkpoint_at); after a failed Apply or a backtrack, the next Apply first restores the state
// from the nearest checkpoint below and replays the linearized ops above it (Apply is
// deterministic).
// The visited cache holds (Zobrist hash of the linearized set, Digest(state)) pairs.
// Returns kLinearizable (a linearization was found: always exact), kNotLinearizable (no
// linearization was found) or kUnknown (deadline). A "not linearizable" may be wrong after a
// digest collision, which can only prune a path wrongly: when the search pruned no path (a
// history without concurrency never revisits a set of linearized ops) it explored every path,
// exactly as SearchPartition would, in the same order; then *exact is set and *witness is the
// one SearchPartition would give (the state described is rebuilt by replaying its prefix, for
// a model with ToState). Otherwise the caller confirms the verdict with SearchPartition (probe
// 87: a 32,000-op sequential history with one wrong result was confirmed by the exact search,
// whose states grow quadratically with the depth, and stayed undecided).
template <InPlaceModel M>
Verdict SearchPartitionInPlace(const M& model, const std::string& partition,
                               const std::vector<const HistoryOp*>& ops,
                               const std::vector<typename M::Op>& compiled,
                               std::chrono::steady_clock::time_point deadline, uint64_t* steps,
                               std::optional<Witness>* witness, bool* exact) {
  using Work = typename M::Work;
  *exact = false;
  // Checkpoints every 64 linearized ops up to depth 4096, then 64 per doubling of the depth: the
  // state grows with the depth in a long lineage, so evenly spaced copies held O(N^2) bytes
  // (probe 87: 935 MB for a 64,000-op history), and a restore replays at most about depth / 64
  // ops. (Probe 89: 8 per doubling past depth 512 cut the steps per second of deep concurrent
  // lineages 4-6 times, each failed step replaying up to depth / 8 ops.)
  auto checkpoint_at = [](size_t depth) {
    if (depth == 0) return false;
    const size_t every = depth < 4096 ? 64 : std::bit_floor(depth / 64);
    return depth % every == 0;
  };
  uint64_t pruned = 0;
  bool have_best = false;
  std::vector<uint32_t> best_prefix;
  uint32_t best_stuck = 0;
  const size_t n = ops.size();
  EventList el(ops);
  std::vector<uint64_t> zobrist(n);
  for (size_t i = 0; i < n; ++i) zobrist[i] = Mix64(0x9e3779b97f4a7c15ull * (i + 1));
  struct PairHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& p) const {
      return static_cast<size_t>(Mix64(p.first ^ Mix64(p.second)));
    }
  };
  std::unordered_set<std::pair<uint64_t, uint64_t>, PairHash> cache;
  struct Frame {
    uint32_t op;
    std::optional<Work> before;  // a checkpoint: the state before `op`
  };
  std::vector<Frame> stack;
  Work w = model.InitialWork(partition);
  uint64_t lin_hash = 0;
  size_t known_done = 0;
  // Restores `w` to the state after every op on the stack. A replayed op that no longer
  // applies would mean a nondeterministic model: the fast search then gives up and the exact
  // search decides (replay_broken).
  bool replay_broken = false;
  auto restore = [&] {
    size_t c = stack.size();
    while (c > 0 && !stack[c - 1].before) --c;
    w = c > 0 ? *stack[c - 1].before : model.InitialWork(partition);
    for (size_t i = c > 0 ? c - 1 : 0; i < stack.size(); ++i) {
      uint32_t op = stack[i].op;
      if (!model.Apply(w, compiled[op], ops[op]->outcome != Outcome::kUnknown)) replay_broken = true;
    }
  };
  // `w` is restored only when an op is next applied to it: a backtrack through many frames
  // without a checkpoint (a history without concurrency unwinds its whole stack after a wrong
  // result) costs no replay per frame.
  bool stale = false;
  uint32_t node = el.next[0];
  uint64_t local_steps = 0;
  Verdict verdict = Verdict::kNotLinearizable;
  while (!replay_broken) {
    if (known_done == el.known_total) {
      verdict = Verdict::kLinearizable;
      break;
    }
    if ((++local_steps & 1023) == 0 && std::chrono::steady_clock::now() > deadline) {
      verdict = Verdict::kUnknown;
      break;
    }
    bool backtrack = node == el.end;
    if (!backtrack) {
      const auto& e = el.ev[node - 1];
      if (!e.is_ret) {
        const auto& c = compiled[e.op];
        const bool known = ops[e.op]->outcome != Outcome::kUnknown;
        const bool read_only = model.ReadOnly(c);
        if (stale) {
          restore();
          stale = false;
          if (replay_broken) break;
        }
        std::optional<Work> before;
        if (!read_only && checkpoint_at(stack.size())) before = w;
        const bool applied = model.Apply(w, c, known);
        if (applied && cache.insert({lin_hash ^ zobrist[e.op], model.Digest(w)}).second) {
          stack.push_back({e.op, std::move(before)});
          lin_hash ^= zobrist[e.op];
          if (known) ++known_done;
          el.Unlink(e.op);
          node = el.next[0];
          continue;
        }
        if (applied) ++pruned;
        if (!read_only) {
          if (before)
            w = std::move(*before);
          else
            stale = true;
        }
        node = el.next[node];
        continue;
      }
      // A return whose call is not linearized yet: an unknown outcome never returned, so
      // nothing forces it before the end; a known one forces a backtrack.
      if (ops[e.op]->outcome == Outcome::kUnknown) {
        node = el.next[node];
        continue;
      }
      if (!have_best || stack.size() > best_prefix.size()) {  // as SearchPartition's witness
        have_best = true;
        best_prefix.clear();
        for (const Frame& f : stack) best_prefix.push_back(f.op);
        best_stuck = e.op;
      }
      backtrack = true;
    }
    if (stack.empty()) break;
    Frame f = std::move(stack.back());
    stack.pop_back();
    lin_hash ^= zobrist[f.op];
    if (ops[f.op]->outcome != Outcome::kUnknown) --known_done;
    if (f.before) {
      w = std::move(*f.before);
      stale = false;
    } else if (!model.ReadOnly(compiled[f.op])) {
      stale = true;  // (a read-only op left `w` as it was)
    }
    el.Relink(f.op);
    // A read-only op is committed where it applied (SearchPartition's `committed`).
    node = model.ReadOnly(compiled[f.op]) ? el.end : el.next[el.call_node[f.op]];
  }
  *steps += local_steps;
  if constexpr (requires(Work x) { model.ToState(std::move(x)); }) {
    if (verdict == Verdict::kNotLinearizable && !replay_broken && pruned == 0 && have_best) {
      Work at = model.InitialWork(partition);
      bool replayed = true;
      for (uint32_t op : best_prefix)
        replayed = replayed && model.Apply(at, compiled[op], ops[op]->outcome != Outcome::kUnknown);
      if (replayed) {
        const auto state = model.ToState(std::move(at));
        Witness wit;
        wit.partition = partition;
        for (uint32_t i : best_prefix) wit.prefix.push_back(ops[i]->id);
        wit.stuck_op = ops[best_stuck]->id;
        wit.state_before = model.Describe(state);
        if constexpr (requires { model.Expect(state, compiled[best_stuck]); })
          wit.expected = model.Expect(state, compiled[best_stuck]);
        *witness = std::move(wit);
        *exact = true;
      }
    }
  }
  return verdict;
}

}  // namespace internal

// Checks `h` against `model`. Returns a Status (kParseError) when an op does not compile.
// Partitions are independent searches run on `workers` threads; the first partition that is
// not linearizable (or runs out of budget) stops the others. The verdict does not depend on the
// number of workers; with several failing partitions, which one the witness names may vary.
template <SequentialModel M>
StatusOr<CheckResult> CheckHistory(const M& model, const History& h, const CheckOptions& opt = {}) {
  const auto deadline = SaturatingDeadline(std::chrono::steady_clock::now(), opt.budget);
  CheckResult r;
  std::map<std::string, std::vector<const HistoryOp*>> by_name;
  for (const HistoryOp& op : h.ops) {
    by_name[opt.partition ? op.partition : std::string("*")].push_back(&op);
    if (op.outcome == Outcome::kUnknown) ++r.unknown_outcomes;
  }
  r.partitions = by_name.size();
  struct Part {
    const std::string* name;
    const std::vector<const HistoryOp*>* ops;
    std::vector<typename M::Op> compiled;
    Verdict verdict = Verdict::kLinearizable;
    std::optional<Witness> witness;
    uint64_t steps = 0;
    bool done = false;
    bool memory_cap_hit = false;
  };
  std::vector<Part> parts;
  parts.reserve(by_name.size());
  for (const auto& [name, ops] : by_name)
    parts.push_back({&name, &ops, {}, {}, {}, 0, false, false});
  unsigned workers = opt.workers ? opt.workers : std::max(1u, std::thread::hardware_concurrency());
  workers = static_cast<unsigned>(std::min<size_t>(workers, parts.size()));
  // Compile everything first, partitions in parallel; the error reported is the one of the
  // first partition (by name) that has one, at its first op in history order: deterministic.
  {
    std::vector<Status> errors(parts.size());
    std::atomic<size_t> next_part{0};
    auto compile = [&] {
      for (size_t i; (i = next_part++) < parts.size();) {
        Part& p = parts[i];
        p.compiled.reserve(p.ops->size());
        for (const HistoryOp* op : *p.ops) {
          auto c = model.Compile(*op);
          if (!c.ok()) {
            errors[i] = c.status();
            break;
          }
          p.compiled.push_back(std::move(*c));
        }
      }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < workers; ++w) pool.emplace_back(compile);
    compile();
    for (auto& t : pool) t.join();
    for (Status& e : errors)
      if (!e.ok()) return e;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto work = [&] {
    for (size_t i; !stop && (i = next++) < parts.size();) {
      Part& p = parts[i];
      p.verdict = Verdict::kNotLinearizable;
      bool exact = false;
      if constexpr (InPlaceModel<M>) {
        if (opt.in_place)
          p.verdict = internal::SearchPartitionInPlace(model, *p.name, *p.ops, p.compiled, deadline,
                                                       &p.steps, &p.witness, &exact);
      }
      // None found yet, and the fast search may have pruned a path wrongly: the exact search
      // decides.
      if (p.verdict == Verdict::kNotLinearizable && !exact)
        p.verdict = internal::SearchPartition(model, *p.name, *p.ops, p.compiled, deadline,
                                              &p.steps, &p.witness, &p.memory_cap_hit);
      p.compiled.clear();
      p.compiled.shrink_to_fit();
      p.done = true;
      if (p.verdict != Verdict::kLinearizable) stop = true;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (Part& p : parts) {
    r.states_explored += p.steps;
    if (!p.done || r.verdict == Verdict::kNotLinearizable) continue;
    if (p.verdict == Verdict::kNotLinearizable) {
      r.verdict = p.verdict;
      r.witness = std::move(p.witness);
    } else if (p.verdict == Verdict::kUnknown && r.verdict == Verdict::kLinearizable) {
      r.verdict = p.verdict;
      r.unknown_partition = *p.name;
      r.unknown_memory = p.memory_cap_hit;
    }
  }
  return r;
}

}  // namespace kvc::race

#endif  // KVCONFORM_REFERENCE_RACE_LINEARIZABILITY_H_
