// Race program generation and the concurrent runner.
#include "reference/race/program.h"

#include <algorithm>
#include <latch>
#include <map>
#include <mutex>
#include <thread>

namespace kvc::race {

namespace {

struct VTxn {
  std::string name, handle;
  uint32_t staged = 0;
  bool published = false;
};
struct VGroup {
  std::string name;
  size_t size = 0;
};
struct VLineage {
  std::string root;
  std::vector<std::string> handles;
  std::vector<VTxn> txns;
  std::vector<VGroup> groups;
  uint32_t forks = 0;
};

// Operation weights (out of the sum); tuned so every lifecycle rule is exercised often.
struct Weighted {
  KvOpKind kind;
  int weight;
};
constexpr Weighted kWeights[] = {
    {KvOpKind::kRead, 12},          {KvOpKind::kBeginAppend, 9},  {KvOpKind::kStageLayer, 16},
    {KvOpKind::kPublish, 12},       {KvOpKind::kCancelTxn, 3},    {KvOpKind::kCancelRequest, 2},
    {KvOpKind::kFork, 4},           {KvOpKind::kReorder, 4},      {KvOpKind::kReadRow, 8},
    {KvOpKind::kTruncate, 4},       {KvOpKind::kFinish, 2},       {KvOpKind::kRelease, 3},
};

}  // namespace

Program GenerateProgram(const ProgramShape& shape, uint64_t seed) {
  Program p;
  p.shape = shape;
  p.seed = seed;
  std::mt19937_64 rng(seed);
  auto uni = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
  auto chance = [&](int pct) { return static_cast<int>(uni(100)) < pct; };
  const uint32_t threads = std::max<uint32_t>(1, shape.threads);
  const uint32_t lineages = std::max<uint32_t>(1, shape.lineages);
  std::vector<VLineage> ls(lineages);
  for (uint32_t i = 0; i < lineages; ++i) {
    ls[i].root = "h" + std::to_string(i);
    ls[i].handles.push_back(ls[i].root);
    ProgOp a;
    a.kind = KvOpKind::kAllocate;
    a.lineage = a.handle = ls[i].root;
    p.prologue.push_back(a);
  }
  int total = 0;
  for (const auto& w : kWeights) total += w.weight;
  auto fork_op = [&](VLineage& l, const std::string& parent, uint32_t thread) {
    ProgOp op;
    op.kind = KvOpKind::kFork;
    op.thread = thread;
    op.lineage = l.root;
    op.handle = parent;
    op.group = l.root + ".g" + std::to_string(l.forks);
    size_t kids = 2 + uni(2);
    for (size_t j = 0; j < kids; ++j)
      op.children.push_back(l.root + ".f" + std::to_string(l.forks) + ".c" + std::to_string(j));
    ++l.forks;
    l.handles.insert(l.handles.end(), op.children.begin(), op.children.end());
    l.groups.push_back({op.group, kids});
    return op;
  };
  for (uint32_t n = 0; n < shape.ops; ++n) {
    VLineage& l = ls[uni(lineages)];
    if (n + 2 * shape.layers + 6 <= shape.ops && chance(3)) {
      // The slot-reuse ABA scenario of M5.1 0x01 ("Why Generation Fencing Prevents The ABA
      // Mistake", slot 17), issued in order by one worker: a transaction is prepared on a fresh
      // child, the child is finished and released (its slot is freed), a new fork takes the
      // freed slot, and only then does the transaction's publication arrive. The correct store
      // rejects it on generation; a store that addresses by slot lands it on the new occupant.
      const uint32_t t = static_cast<uint32_t>(uni(threads));
      const std::string parent = l.handles[uni(l.handles.size())];
      std::vector<ProgOp> m;
      m.push_back(fork_op(l, parent, t));
      const std::string child = m.back().children[0];
      VTxn txn{l.root + ".t" + std::to_string(l.txns.size()), child, shape.layers, true};
      l.txns.push_back(txn);
      ProgOp op;
      op.thread = t;
      op.lineage = l.root;
      op.kind = KvOpKind::kBeginAppend;
      op.txn = txn.name;
      op.handle = child;
      op.count = 1 + uni(3);
      m.push_back(op);
      for (uint32_t layer = 0; layer < shape.layers; ++layer) {
        ProgOp st;
        st.thread = t;
        st.lineage = l.root;
        st.kind = KvOpKind::kStageLayer;
        st.txn = txn.name;
        st.layer = layer;
        m.push_back(st);
      }
      for (KvOpKind k : {KvOpKind::kFinish, KvOpKind::kRelease}) {
        ProgOp e;
        e.thread = t;
        e.lineage = l.root;
        e.kind = k;
        e.handle = child;
        m.push_back(e);
      }
      m.push_back(fork_op(l, parent, t));
      ProgOp pub;
      pub.thread = t;
      pub.lineage = l.root;
      pub.kind = KvOpKind::kPublish;
      pub.txn = txn.name;
      m.push_back(pub);
      n += static_cast<uint32_t>(m.size()) - 1;
      for (auto& x : m) p.script.push_back(std::move(x));
      continue;
    }
    ProgOp op;
    op.thread = static_cast<uint32_t>(uni(threads));
    op.lineage = l.root;
    int pick = static_cast<int>(uni(total));
    for (const auto& w : kWeights) {
      if (pick < w.weight) {
        op.kind = w.kind;
        break;
      }
      pick -= w.weight;
    }
    auto any_handle = [&] { return l.handles[uni(l.handles.size())]; };
    // Fall back to simpler ops when the lineage has nothing to act on yet.
    if ((op.kind == KvOpKind::kStageLayer || op.kind == KvOpKind::kPublish ||
         op.kind == KvOpKind::kCancelTxn) && l.txns.empty())
      op.kind = KvOpKind::kBeginAppend;
    if ((op.kind == KvOpKind::kReorder || op.kind == KvOpKind::kReadRow) && l.groups.empty())
      op.kind = KvOpKind::kFork;
    switch (op.kind) {
      case KvOpKind::kBeginAppend: {
        VTxn t{l.root + ".t" + std::to_string(l.txns.size()), any_handle()};
        op.txn = t.name;
        op.handle = t.handle;
        op.count = 1 + uni(3);
        l.txns.push_back(t);
        break;
      }
      case KvOpKind::kStageLayer: {
        std::vector<size_t> open;
        for (size_t i = 0; i < l.txns.size(); ++i)
          if (l.txns[i].staged < shape.layers) open.push_back(i);
        VTxn& t = open.empty() ? l.txns[uni(l.txns.size())] : l.txns[open[uni(open.size())]];
        op.txn = t.name;
        op.layer = t.staged < shape.layers ? t.staged++ : static_cast<uint32_t>(uni(shape.layers));
        break;
      }
      case KvOpKind::kPublish: {
        std::vector<size_t> ready, done;
        for (size_t i = 0; i < l.txns.size(); ++i) {
          if (l.txns[i].published) done.push_back(i);
          else if (l.txns[i].staged >= shape.layers) ready.push_back(i);
        }
        size_t i;
        if (!done.empty() && chance(20)) i = done[uni(done.size())];          // retry
        else if (!ready.empty() && chance(85)) i = ready[uni(ready.size())];  // first publish
        else i = uni(l.txns.size());                                          // maybe premature
        l.txns[i].published = true;
        op.txn = l.txns[i].name;
        break;
      }
      case KvOpKind::kCancelTxn:
        op.txn = l.txns[uni(l.txns.size())].name;
        break;
      case KvOpKind::kFork: {
        const uint32_t thread = op.thread;
        op = fork_op(l, any_handle(), thread);
        op.delta = chance(70) ? 0 : chance(66) ? -1 : 1;
        break;
      }
      case KvOpKind::kReorder: {
        const VGroup& g = l.groups[uni(l.groups.size())];
        op.group = g.name;
        for (uint64_t i = 0; i < g.size; ++i) op.perm.push_back(i);
        std::shuffle(op.perm.begin(), op.perm.end(), rng);
        if (chance(10) && g.size > 1) op.perm[0] = op.perm[1];  // selection, not a reorder
        break;
      }
      case KvOpKind::kReadRow: {
        const VGroup& g = l.groups[uni(l.groups.size())];
        op.group = g.name;
        op.row = uni(g.size + (chance(5) ? 1 : 0));
        break;
      }
      case KvOpKind::kTruncate:
        op.handle = any_handle();
        op.delta = chance(50) ? -1 : chance(40) ? 0 : chance(50) ? -2 : 1;
        break;
      default:
        op.handle = any_handle();
        break;
    }
    p.script.push_back(std::move(op));
  }
  return p;
}

namespace {

// The scripts with one chunk removed, chunk sizes halving from n/2 down to 1, each chunk at
// every multiple of its size (delta debugging's order: O(n) candidates per size, O(n log n) in
// all, lazily; rc::shrink::removeChunks tries every start offset, O(n^2), too many when each
// passing candidate costs K runs).
class HalvingChunkRemovals {
 public:
  explicit HalvingChunkRemovals(std::vector<ProgOp> script)
      : s_(std::make_shared<const std::vector<ProgOp>>(std::move(script))),
        chunk_(std::max<size_t>(1, s_->size() / 2)) {}
  rc::Maybe<std::vector<ProgOp>> operator()() {
    if (s_->empty() || chunk_ == 0) return rc::Nothing;
    if (at_ >= s_->size()) {
      chunk_ /= 2;
      at_ = 0;
      if (chunk_ == 0) return rc::Nothing;
    }
    const size_t end = std::min(s_->size(), at_ + chunk_);
    std::vector<ProgOp> out(s_->begin(), s_->begin() + static_cast<ptrdiff_t>(at_));
    out.insert(out.end(), s_->begin() + static_cast<ptrdiff_t>(end), s_->end());
    at_ += chunk_;
    return out;
  }

 private:
  std::shared_ptr<const std::vector<ProgOp>> s_;
  size_t chunk_;
  size_t at_ = 0;
};

}  // namespace

rc::Seq<Program> ShrinkProgram(const Program& p) {
  std::vector<std::string> lineages;
  for (const ProgOp& op : p.script)
    if (std::find(lineages.begin(), lineages.end(), op.lineage) == lineages.end())
      lineages.push_back(op.lineage);
  std::vector<Program> alone;
  if (lineages.size() > 1) {
    for (const std::string& l : lineages) {
      Program q = p;
      std::erase_if(q.script, [&](const ProgOp& op) { return op.lineage != l; });
      std::erase_if(q.prologue, [&](const ProgOp& op) { return op.lineage != l; });
      alone.push_back(std::move(q));
    }
  }
  auto with_script = [p](std::vector<ProgOp> script) {
    Program q = p;
    q.script = std::move(script);
    return q;
  };
  std::vector<size_t> off_zero;
  for (size_t i = 0; i < p.script.size(); ++i)
    if (p.script[i].thread != 0) off_zero.push_back(i);
  auto to_zero = [p](size_t i) {
    Program q = p;
    q.script[i].thread = 0;
    return q;
  };
  return rc::seq::concat(rc::seq::fromContainer(std::move(alone)),
                         rc::seq::map(rc::Seq<std::vector<ProgOp>>(HalvingChunkRemovals(p.script)),
                                      with_script),
                         rc::seq::map(rc::seq::fromContainer(std::move(off_zero)), to_zero));
}

void showValue(const Program& p, std::ostream& os) { os << ProgramToText(p); }

rc::Gen<Program> GenFixedProgram(Program p) {
  return rc::Gen<Program>([p](const rc::Random&, int) {
    return rc::shrinkable::shrinkRecur(p, &ShrinkProgram);
  });
}

rc::Gen<Program> GenProgram(const ProgramShape& shape) {
  return rc::Gen<Program>([shape](const rc::Random& random, int) {
    rc::Random r = random;
    return rc::shrinkable::shrinkRecur(GenerateProgram(shape, r.next()), &ShrinkProgram);
  });
}

std::string ProgramToText(const Program& p) {
  std::string out;
  auto line = [&](const ProgOp& op, const std::string& who) {
    out += who + " " + std::string(KvOpName(op.kind));
    switch (op.kind) {
      case KvOpKind::kBeginAppend:
        out += " " + op.txn + " on " + op.handle + " +" + std::to_string(op.count);
        break;
      case KvOpKind::kStageLayer:
        out += " " + op.txn + " layer " + std::to_string(op.layer);
        break;
      case KvOpKind::kPublish:
      case KvOpKind::kCancelTxn:
        out += " " + op.txn;
        break;
      case KvOpKind::kFork: {
        out += " " + op.handle + " at T" + (op.delta >= 0 ? "+" : "") + std::to_string(op.delta) +
               " -> " + op.group + " [";
        for (size_t i = 0; i < op.children.size(); ++i) out += (i ? "," : "") + op.children[i];
        out += "]";
        break;
      }
      case KvOpKind::kReorder: {
        out += " " + op.group + " [";
        for (size_t i = 0; i < op.perm.size(); ++i) out += (i ? "," : "") + std::to_string(op.perm[i]);
        out += "]";
        break;
      }
      case KvOpKind::kReadRow:
        out += " " + op.group + " row " + std::to_string(op.row);
        break;
      case KvOpKind::kTruncate:
        out += " " + op.handle + " to T" + (op.delta >= 0 ? "+" : "") + std::to_string(op.delta);
        break;
      default:
        out += " " + op.handle;
    }
    out += "\n";
  };
  for (const auto& op : p.prologue) line(op, "pre");
  for (const auto& op : p.script) line(op, "T" + std::to_string(op.thread));
  return out;
}

namespace {

thread_local std::mt19937_64* tl_pause_rng = nullptr;

// The latest observations of the run, shared by all workers.
class Knowledge {
 public:
  struct Seen {
    uint64_t generation = 0, digest = 0, length = 0;
  };
  Seen Handle(const std::string& h) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = handles_.find(h);
    return it == handles_.end() ? Seen{} : it->second;
  }
  std::pair<uint64_t, uint64_t> Txn(const std::string& t) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = txns_.find(t);
    return it == txns_.end() ? std::pair<uint64_t, uint64_t>{0, 1} : it->second;
  }
  void SetTxn(const std::string& t, uint64_t start, uint64_t count) {
    std::lock_guard<std::mutex> lock(mu_);
    txns_[t] = {start, count};
  }
  void Observe(const Json& j) {
    if (!j.is_object()) return;
    if (auto c = j.find("children"); c != j.end() && c->is_array())
      for (const auto& s : *c) Observe(s);
    auto h = j.find("handle"), g = j.find("generation"), d = j.find("digest"), l = j.find("length");
    if (h == j.end() || g == j.end() || d == j.end() || l == j.end()) return;
    if (!h->is_string() || !g->is_number_unsigned() || !d->is_string() || !l->is_number_unsigned())
      return;
    auto digest = lifecycle::ParseDigestHex(d->get<std::string>());
    if (!digest) return;
    std::lock_guard<std::mutex> lock(mu_);
    Seen& s = handles_[h->get<std::string>()];
    if (g->get<uint64_t>() < s.generation) return;
    s = {g->get<uint64_t>(), *digest, l->get<uint64_t>()};
  }

 private:
  std::mutex mu_;
  std::map<std::string, Seen> handles_;
  std::map<std::string, std::pair<uint64_t, uint64_t>> txns_;
};

uint64_t Floor0(uint64_t len, int64_t delta) {
  if (delta < 0 && static_cast<uint64_t>(-delta) > len) return 0;
  return delta < 0 ? len - static_cast<uint64_t>(-delta) : len + static_cast<uint64_t>(delta);
}

KvOp Resolve(const ProgOp& p, Knowledge& k) {
  KvOp op;
  op.kind = p.kind;
  op.handle = p.handle;
  op.txn = p.txn;
  op.group = p.group;
  op.layer = p.layer;
  op.children = p.children;
  op.perm = p.perm;
  op.row = p.row;
  switch (p.kind) {
    case KvOpKind::kBeginAppend: {
      Knowledge::Seen s = k.Handle(p.handle);
      op.key = "key:" + p.txn;
      op.base_generation = s.generation;
      op.base_digest = s.digest;
      op.start = s.length;
      op.count = p.count;
      k.SetTxn(p.txn, op.start, op.count);
      break;
    }
    case KvOpKind::kStageLayer: {
      auto [start, count] = k.Txn(p.txn);
      op.start = start;
      op.count = count;
      break;
    }
    case KvOpKind::kFork:
    case KvOpKind::kTruncate:
      op.length = Floor0(k.Handle(p.handle).length, p.delta);
      break;
    default:
      break;
  }
  return op;
}

void RunOne(const ProgOp& p, uint32_t thread, RaceTarget& target, Knowledge& k,
            HistoryRecorder& rec) {
  KvOp op = Resolve(p, k);
  uint64_t id = rec.Invoke(thread, p.lineage, std::string(KvOpName(op.kind)), KvOpArgs(op));
  OpResult r = target.Call(thread, p.lineage, op);
  if (r.outcome == Outcome::kUnknown) {
    rec.CompleteUnknown(id);
    return;
  }
  rec.Complete(id, r.outcome, r.result);
  if (r.outcome == Outcome::kOk) k.Observe(r.result);
}

}  // namespace

void RacePause() {
  std::mt19937_64* rng = tl_pause_rng;
  if (!rng) return;
  uint64_t r = (*rng)() % 64;
  if (r < 20) {
    std::this_thread::yield();
  } else if (r < 23) {
    std::this_thread::sleep_for(std::chrono::microseconds(20 + (*rng)() % 80));
  }
}

History RunProgram(const Program& p, RaceTarget& target, uint64_t pause_seed) {
  Json header = target.HistoryHeader();
  header["program_seed"] = p.seed;
  header["threads"] = p.shape.threads;
  HistoryRecorder rec(std::move(header));
  Knowledge k;
  for (const ProgOp& op : p.prologue) RunOne(op, 0, target, k, rec);
  const uint32_t threads = std::max<uint32_t>(1, p.shape.threads);
  std::vector<std::vector<const ProgOp*>> parts(threads);
  for (const ProgOp& op : p.script) parts[op.thread % threads].push_back(&op);
  std::latch start(threads);
  std::vector<std::thread> workers;
  for (uint32_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(pause_seed * 0x9e3779b97f4a7c15ull + t + 1);
      tl_pause_rng = &rng;
      start.arrive_and_wait();
      for (const ProgOp* op : parts[t]) {
        RacePause();
        if (!target.Health().ok()) break;  // a dead driver: stop issuing work
        RunOne(*op, t, target, k, rec);
      }
      tl_pause_rng = nullptr;
    });
  }
  for (auto& w : workers) w.join();
  return rec.Take();
}

}  // namespace kvc::race
