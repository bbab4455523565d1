// Parallel collision search with distinguished points (see collision_search.h).
#include "tools/collide/collision_search.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kvc::collide {

namespace {

// Where a walk that ended at a distinguished point started, and its number of steps.
struct Trail {
  uint64_t start = 0;
  uint64_t length = 0;
};

class Search {
 public:
  Search(const BatchFunction& f, const AcceptFunction& accept, const SearchOptions& o)
      : f_(f),
        accept_(accept),
        o_(o),
        mask_(o.bits >= 64 ? ~0ull : (1ull << o.bits) - 1),
        dp_mask_((1ull << o.dp_bits) - 1),
        max_length_(20ull << o.dp_bits) {}

  std::optional<Collision> Run(SearchStats* stats) {
    std::vector<std::thread> walkers;
    for (unsigned t = 1; t < o_.threads; ++t) walkers.emplace_back([this, t] { Walk(t); });
    Walk(0);
    for (std::thread& w : walkers) w.join();
    if (stats) {
      stats->evaluations = evaluations_.load();
      stats->distinguished = table_.size();
      stats->rejected = rejected_.size();
      stats->abandoned = abandoned_.load();
    }
    return result_;
  }

 private:
  uint64_t One(uint64_t x) {
    uint64_t y;
    f_(&x, &y, 1);
    evaluations_.fetch_add(1, std::memory_order_relaxed);
    return y & mask_;
  }

  // The two walks from `a` (n steps) and `b` (m steps) reach the same point: the first step
  // where they meet, or nullopt when one start lies on the other's walk (no collision).
  std::optional<Collision> Locate(uint64_t a, uint64_t n, uint64_t b, uint64_t m) {
    for (; n > m; --n) a = One(a);
    for (; m > n; --m) b = One(b);
    if (a == b) return std::nullopt;
    for (uint64_t i = 0; i < n && !done_.load(std::memory_order_relaxed); ++i) {
      const uint64_t fa = One(a), fb = One(b);
      if (fa == fb) return Collision{a, b, fa};
      a = fa;
      b = fb;
    }
    return std::nullopt;
  }

  // A walk reached distinguished point `dp`: store it, or find the collision with the walk
  // stored there. True when the search is over.
  bool Distinguished(uint64_t dp, const Trail& mine) {
    Trail other;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto [it, inserted] = table_.try_emplace(dp, mine);
      if (inserted || it->second.start == mine.start) return false;
      other = it->second;
    }
    std::optional<Collision> c = Locate(mine.start, mine.length, other.start, other.length);
    if (!c) return false;
    std::lock_guard<std::mutex> lock(mu_);
    if (done_.load()) return true;
    if (!accept_(c->a, c->b)) {
      rejected_.insert(std::minmax(c->a, c->b));
      return false;
    }
    result_ = c;
    done_.store(true);
    return true;
  }

  void Walk(unsigned thread) {
    uint64_t next = SplitMix64(o_.seed) + (static_cast<uint64_t>(thread) << 40);
    uint64_t cur[kLanes], out[kLanes];
    Trail trail[kLanes];
    auto restart = [&](size_t l) {
      trail[l] = {SplitMix64(next++) & mask_, 0};
      cur[l] = trail[l].start;
    };
    for (size_t l = 0; l < kLanes; ++l) restart(l);
    while (!done_.load(std::memory_order_relaxed)) {
      if (o_.max_evaluations != 0 &&
          evaluations_.load(std::memory_order_relaxed) >= o_.max_evaluations)
        return;
      f_(cur, out, kLanes);
      evaluations_.fetch_add(kLanes, std::memory_order_relaxed);
      for (size_t l = 0; l < kLanes; ++l) {
        cur[l] = out[l] & mask_;
        ++trail[l].length;
        if ((cur[l] & dp_mask_) == 0) {
          if (Distinguished(cur[l], trail[l])) return;
          restart(l);
        } else if (trail[l].length >= max_length_) {
          abandoned_.fetch_add(1, std::memory_order_relaxed);
          restart(l);
        }
      }
    }
  }

  const BatchFunction& f_;
  const AcceptFunction& accept_;
  const SearchOptions o_;
  const uint64_t mask_, dp_mask_, max_length_;
  std::atomic<uint64_t> evaluations_{0}, abandoned_{0};
  std::atomic<bool> done_{false};
  std::mutex mu_;  // guards table_, rejected_, result_
  std::unordered_map<uint64_t, Trail> table_;
  std::set<std::pair<uint64_t, uint64_t>> rejected_;
  std::optional<Collision> result_;
};

}  // namespace

std::optional<Collision> FindCollision(const BatchFunction& f, const AcceptFunction& accept,
                                       const SearchOptions& options, SearchStats* stats) {
  SearchOptions o = options;
  o.bits = std::clamp(o.bits, 8u, 64u);
  o.dp_bits = std::min(o.dp_bits, o.bits / 2);
  o.threads = std::max(o.threads, 1u);
  Search s(f, accept, o);
  return s.Run(stats);
}

}  // namespace kvc::collide
