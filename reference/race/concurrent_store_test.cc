// Tests of the concurrent store: the seed's worked synthetic lifecycle trace, and concurrency.
#include "reference/race/concurrent_store.h"

#include <gtest/gtest.h>

#include <thread>

#include "reference/race/fuzzer.h"
#include "reference/race/linearizability.h"

namespace kvc::race {
namespace {

// Records every call as it runs so the sequential walk is also a checked history.
class Recorded {
 public:
  explicit Recorded(ConcurrentStore& s) : s_(s), rec_(KvModel(s.abi(), false).Header()) {}
  OpResult Do(const KvOp& op, const std::string& lineage = "H") {
    uint64_t id = rec_.Invoke(0, lineage, std::string(KvOpName(op.kind)), KvOpArgs(op));
    OpResult r = s_.Execute(lineage, op);
    rec_.Complete(id, r.outcome, r.result);
    return r;
  }
  History Take() { return rec_.Take(); }

 private:
  ConcurrentStore& s_;
  HistoryRecorder rec_;
};

KvOp Op(KvOpKind k) {
  KvOp o;
  o.kind = k;
  return o;
}
KvOp OnHandle(KvOpKind k, std::string h) {
  KvOp o = Op(k);
  o.handle = std::move(h);
  return o;
}
KvOp OnTxn(KvOpKind k, std::string t) {
  KvOp o = Op(k);
  o.txn = std::move(t);
  return o;
}
KvOp Begin(std::string txn, std::string handle, const Json& snap, uint64_t count) {
  KvOp o = OnHandle(KvOpKind::kBeginAppend, std::move(handle));
  o.txn = txn;
  o.key = "key:" + txn;
  o.base_generation = snap.at("generation").get<uint64_t>();
  o.base_digest = *lifecycle::ParseDigestHex(snap.at("digest").get<std::string>());
  o.start = snap.at("length").get<uint64_t>();
  o.count = count;
  return o;
}
KvOp Stage(std::string txn, uint32_t layer, uint64_t start, uint64_t count) {
  KvOp o = OnTxn(KvOpKind::kStageLayer, std::move(txn));
  o.layer = layer;
  o.start = start;
  o.count = count;
  return o;
}
std::string Code(const OpResult& r) {
  return r.outcome == Outcome::kError ? r.result.at("code").get<std::string>() : "OK";
}

// M5.1 0x01 "Worked Synthetic Lifecycle Trace", steps 1-5, through the concurrent store.
TEST(ConcurrentStore, WorkedSyntheticLifecycleTrace) {
  ConcurrentStore store(RaceAbi(2));
  Recorded s(store);
  ASSERT_EQ(Code(s.Do(OnHandle(KvOpKind::kAllocate, "H"))), "OK");
  // The Loop 2 snapshot: generation 1, committed length 4.
  Json g0 = s.Do(OnHandle(KvOpKind::kRead, "H")).result;
  ASSERT_EQ(Code(s.Do(Begin("prefill", "H", g0, 4))), "OK");
  ASSERT_EQ(Code(s.Do(Stage("prefill", 0, 0, 4))), "OK");
  ASSERT_EQ(Code(s.Do(Stage("prefill", 1, 0, 4))), "OK");
  ASSERT_EQ(Code(s.Do(OnTxn(KvOpKind::kPublish, "prefill"))), "OK");
  Json g1 = s.Do(OnHandle(KvOpKind::kRead, "H")).result;
  EXPECT_EQ(g1["generation"], 1);
  EXPECT_EQ(g1["layers"], Json({4, 4}));
  // 1. Two transactions capture generation 1; txn-win stages layer 0; a read still sees [4,4].
  ASSERT_EQ(Code(s.Do(Begin("txn-win", "H", g1, 1))), "OK");
  ASSERT_EQ(Code(s.Do(Begin("txn-lose", "H", g1, 1))), "OK");
  ASSERT_EQ(Code(s.Do(Stage("txn-win", 0, 4, 1))), "OK");
  EXPECT_EQ(s.Do(OnHandle(KvOpKind::kRead, "H")).result["layers"], Json({4, 4}));
  EXPECT_EQ(Code(s.Do(OnTxn(KvOpKind::kPublish, "txn-win"))), "LIFECYCLE_LAYER_INCOMPLETE");
  ASSERT_EQ(Code(s.Do(Stage("txn-win", 1, 4, 1))), "OK");
  OpResult won = s.Do(OnTxn(KvOpKind::kPublish, "txn-win"));
  ASSERT_EQ(Code(won), "OK");
  EXPECT_EQ(won.result["generation"], 2);
  Json g2 = s.Do(OnHandle(KvOpKind::kRead, "H")).result;
  EXPECT_EQ(g2["layers"], Json({5, 5}));
  // 2. The retry returns the generation-2 receipt; the competitor is rejected as stale.
  OpResult retry = s.Do(OnTxn(KvOpKind::kPublish, "txn-win"));
  EXPECT_EQ(retry.result["generation"], 2);
  EXPECT_EQ(retry.result["replayed"], true);
  ASSERT_EQ(Code(s.Do(Stage("txn-lose", 0, 4, 1))), "OK");
  ASSERT_EQ(Code(s.Do(Stage("txn-lose", 1, 4, 1))), "OK");
  EXPECT_EQ(Code(s.Do(OnTxn(KvOpKind::kPublish, "txn-lose"))), "LIFECYCLE_STALE_BASE");
  // 3. Fork into A and B; reorder swaps their coupled rows; A truncates to 3; B cancels.
  KvOp fork = OnHandle(KvOpKind::kFork, "H");
  fork.length = 5;
  fork.children = {"A", "B"};
  fork.group = "beam";
  OpResult kids = s.Do(fork);
  ASSERT_EQ(Code(kids), "OK");
  EXPECT_EQ(kids.result["children"][0]["generation"], 0);
  EXPECT_EQ(kids.result["children"][1]["length"], 5);
  KvOp swap = Op(KvOpKind::kReorder);
  swap.group = "beam";
  swap.perm = {1, 0};
  ASSERT_EQ(Code(s.Do(swap)), "OK");
  KvOp row0 = Op(KvOpKind::kReadRow);
  row0.group = "beam";
  Json r0 = s.Do(row0).result;
  EXPECT_EQ(r0["handle"], "B");
  EXPECT_EQ(r0["sampler"], "rng:B");  // sampler moved with the cache handle
  Json b0 = s.Do(OnHandle(KvOpKind::kRead, "B")).result;
  KvOp trunc = OnHandle(KvOpKind::kTruncate, "A");
  trunc.length = 3;
  EXPECT_EQ(s.Do(trunc).result["layers"], Json());  // truncate returns the snapshot only
  EXPECT_EQ(s.Do(OnHandle(KvOpKind::kRead, "A")).result["layers"], Json({3, 3}));
  // 4. A partially staged child-B transaction is aborted by the cancellation; its late layer
  //    completion and publication are rejected.
  ASSERT_EQ(Code(s.Do(Begin("txn-b", "B", b0, 1))), "OK");
  ASSERT_EQ(Code(s.Do(Stage("txn-b", 0, 5, 1))), "OK");
  ASSERT_EQ(Code(s.Do(OnHandle(KvOpKind::kCancelRequest, "B"))), "OK");
  EXPECT_EQ(Code(s.Do(Stage("txn-b", 1, 5, 1))), "LIFECYCLE_LATE_COMPLETION");
  EXPECT_EQ(Code(s.Do(OnTxn(KvOpKind::kPublish, "txn-b"))), "LIFECYCLE_LATE_COMPLETION");
  // 5. A parent append is fully prepared; finish and release advance the parent to 3 and 4;
  //    the delayed append fails on generation.
  ASSERT_EQ(Code(s.Do(Begin("txn-late", "H", g2, 1))), "OK");
  ASSERT_EQ(Code(s.Do(Stage("txn-late", 0, 5, 1))), "OK");
  ASSERT_EQ(Code(s.Do(Stage("txn-late", 1, 5, 1))), "OK");
  EXPECT_EQ(s.Do(OnHandle(KvOpKind::kFinish, "H")).result["generation"], 3);
  EXPECT_EQ(s.Do(OnHandle(KvOpKind::kRelease, "H")).result["generation"], 4);
  EXPECT_EQ(Code(s.Do(OnTxn(KvOpKind::kPublish, "txn-late"))), "LIFECYCLE_STALE_BASE");
  EXPECT_EQ(Code(s.Do(OnHandle(KvOpKind::kRead, "H"))), "LIFECYCLE_HANDLE_RELEASED");
  // The whole walk is a legal sequential history of the model.
  History h = s.Take();
  auto model = KvModel::FromHeader(h.header);
  ASSERT_TRUE(model.ok());
  auto v = CheckHistory(*model, h);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->verdict, Verdict::kLinearizable);
}

// Opaque digests: a begin_append may name only a base digest the runtime reported. One it never
// reported (here the model's own digest of the allocation, "63ce68b09a2cdef5") was used raw
// before the translation, so a runtime that accepted it passed (probe 44); the reported one
// ("aaaaaaaaaaaaaaaa") passes.
TEST(KvModel, OpaqueDigestBaseNeverReportedIsNotLinearizable) {
  auto history = [](const std::string& base) {
    return std::string(
               "{\"kind\": \"kvconform.race_history/1\", \"model\": \"kv_lineage/1\", "
               "\"cache_abi\": \"race-abi-L2\", \"num_layers\": 2, \"position_stage\": "
               "\"post_rope\", \"digests\": \"opaque\"}\n"
               "{\"id\": 0, \"thread\": 0, \"partition\": \"h0\", \"op\": \"allocate\", "
               "\"args\": {\"handle\": \"h0\"}, \"invoke_ns\": 10, \"return_ns\": 20, "
               "\"outcome\": \"ok\", \"result\": {\"handle\": \"h0\", \"generation\": 0, "
               "\"version\": 0, \"length\": 0, \"phase\": \"DECODE_READY\", \"digest\": "
               "\"aaaaaaaaaaaaaaaa\"}}\n"
               "{\"id\": 1, \"thread\": 0, \"partition\": \"h0\", \"op\": \"begin_append\", "
               "\"args\": {\"txn\": \"h0.t0\", \"key\": \"k\", \"handle\": \"h0\", "
               "\"base_generation\": 0, \"base_digest\": \"") +
           base +
           "\", \"start\": 0, \"count\": 1}, \"invoke_ns\": 30, \"return_ns\": 35, "
           "\"outcome\": \"ok\", \"result\": {\"txn\": \"h0.t0\", \"state\": \"OPEN\"}}\n"
           "{\"end\": true, \"ops\": 2}\n";
  };
  for (const auto& [base, want] : {std::pair{"aaaaaaaaaaaaaaaa", Verdict::kLinearizable},
                                   {"63ce68b09a2cdef5", Verdict::kNotLinearizable},
                                   {"bbbbbbbbbbbbbbbb", Verdict::kNotLinearizable}}) {
    auto h = ParseHistoryJsonl(history(base), "opaque.jsonl");
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    auto model = KvModel::FromHeader(h->header);
    ASSERT_TRUE(model.ok());
    auto v = CheckHistory(*model, *h);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->verdict, want) << "base digest " << base;
  }
}

// Regression (probe 79): with opaque digests the bijection between the runtime's digests and the
// model's is per lineage. Two lineages reporting one runtime digest (a digest of content, say)
// were linearizable partitioned and not as one search (--no-partition): one map for the whole
// history. Both modes agree now; within a lineage two snapshots of one digest still fail.
TEST(KvModel, RegressionOpaqueDigestsMapPerLineageInBothSearchModes) {
  const std::string header =
      "{\"kind\": \"kvconform.race_history/1\", \"model\": \"kv_lineage/1\", "
      "\"cache_abi\": \"abi\", \"num_layers\": 2, \"digests\": \"opaque\"}\n";
  auto allocate = [](int id, const std::string& h, const std::string& partition) {
    return "{\"id\": " + std::to_string(id) + ", \"thread\": " + std::to_string(id) +
           ", \"partition\": \"" + partition +
           "\", \"op\": \"allocate\", \"args\": {\"handle\": \"" + h +
           "\"}, \"invoke_ns\": 0, \"return_ns\": 10, \"outcome\": \"ok\", \"result\": "
           "{\"handle\": \"" +
           h +
           "\", \"generation\": 0, \"version\": 0, \"length\": 0, "
           "\"phase\": \"DECODE_READY\", \"digest\": \"00000000d0000000\"}}\n";
  };
  const std::string begin_on_h1 =
      "{\"id\": 2, \"thread\": 1, \"partition\": \"h1\", \"op\": \"begin_append\", \"args\": "
      "{\"txn\": \"h1.t0\", \"key\": \"k\", \"handle\": \"h1\", \"base_generation\": 0, "
      "\"base_digest\": \"00000000d0000000\", \"start\": 0, \"count\": 1}, \"invoke_ns\": 100, "
      "\"return_ns\": 110, \"outcome\": \"ok\", \"result\": {\"txn\": \"h1.t0\", \"state\": "
      "\"OPEN\"}}\n";
  // `line` reporting the runtime digest `digest` instead.
  auto with_digest = [](std::string line, const std::string& digest) {
    return line.replace(line.find("00000000d0000000"), 16, digest);
  };
  const std::string two_lineages = header + allocate(0, "h0", "h0") + allocate(1, "h1", "h1");
  const std::string one_lineage = header + allocate(0, "h0", "h0") +
                                  "{\"id\": 1, \"thread\": 1, \"partition\": \"h0\", \"op\": "
                                  "\"fork\", \"args\": {\"handle\": \"h0\", \"prefix\": 0, "
                                  "\"children\": [\"c\"], \"group\": \"g\"}, \"invoke_ns\": 20, "
                                  "\"return_ns\": 30, \"outcome\": \"ok\", \"result\": "
                                  "{\"children\": [{\"handle\": \"c\", \"generation\": 0, "
                                  "\"version\": 0, \"length\": 0, \"phase\": \"DECODE_READY\", "
                                  "\"digest\": \"00000000d0000000\"}]}}\n";
  for (const auto& [text, want] :
       {std::pair{two_lineages + "{\"end\": true, \"ops\": 2}\n", Verdict::kLinearizable},
        {two_lineages + begin_on_h1 + "{\"end\": true, \"ops\": 3}\n", Verdict::kLinearizable},
        {one_lineage + "{\"end\": true, \"ops\": 2}\n", Verdict::kNotLinearizable},
        // The control: the child at a digest of its own.
        {std::string(one_lineage).replace(one_lineage.rfind("d0000000"), 8, "d0000001") +
             "{\"end\": true, \"ops\": 2}\n",
         Verdict::kLinearizable},
        // Mutation audit 4: a lineage and its digest are told apart however their bytes run on
        // (partition "p" reporting digest "0d" and partition "p0" digest "d" both read "p0d").
        {header + with_digest(allocate(0, "h0", "p"), "0d") +
             with_digest(allocate(1, "h1", "p0"), "d") + "{\"end\": true, \"ops\": 2}\n",
         Verdict::kLinearizable}}) {
    auto h = ParseHistoryJsonl(text, "opaque.jsonl");
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    auto model = KvModel::FromHeader(h->header);
    ASSERT_TRUE(model.ok());
    for (const bool partition : {true, false}) {
      CheckOptions o;
      o.partition = partition;
      auto v = CheckHistory(*model, *h, o);
      ASSERT_TRUE(v.ok());
      EXPECT_EQ(v->verdict, want) << "partition " << partition << "\n" << text;
    }
  }
}

// Appends staged per layer from different threads while readers watch: every read must see all
// layers at one committed length (the store never exposes a mix).
TEST(ConcurrentStore, ReadersNeverSeeMixedLayers) {
  ConcurrentStore store(RaceAbi(4));
  ASSERT_EQ(store.Execute("H", OnHandle(KvOpKind::kAllocate, "H")).outcome, Outcome::kOk);
  std::atomic<bool> done{false};
  std::atomic<int> mixed{0}, reads{0};
  std::thread reader([&] {
    while (!done) {
      OpResult r = store.Execute("H", OnHandle(KvOpKind::kRead, "H"));
      ++reads;
      for (const auto& l : r.result["layers"])
        if (l != r.result["length"]) ++mixed;
    }
  });
  for (int n = 0; n < 200; ++n) {
    Json snap = store.Execute("H", OnHandle(KvOpKind::kRead, "H")).result;
    std::string txn = "t" + std::to_string(n);
    ASSERT_EQ(store.Execute("H", Begin(txn, "H", snap, 1)).outcome, Outcome::kOk);
    std::vector<std::thread> stagers;
    for (uint32_t layer = 0; layer < 4; ++layer)
      stagers.emplace_back([&, layer] {
        store.Execute("H", Stage(txn, layer, snap["length"].get<uint64_t>(), 1));
      });
    for (auto& t : stagers) t.join();
    ASSERT_EQ(Code(store.Execute("H", OnTxn(KvOpKind::kPublish, txn))), "OK");
  }
  done = true;
  reader.join();
  EXPECT_EQ(mixed, 0);
  EXPECT_GT(reads, 0);
  EXPECT_EQ(store.Execute("H", OnHandle(KvOpKind::kRead, "H")).result["length"], 200);
}

// The checker rejects a read that shows layer 0 at T+1 and layer 1 at T (a hand-built history).
TEST(KvModel, MixedLayerReadIsNotLinearizable) {
  KvModel model(RaceAbi(2), false);
  ConcurrentStore store(RaceAbi(2));
  Recorded s(store);
  s.Do(OnHandle(KvOpKind::kAllocate, "H"));
  History h = s.Take();
  Json snap = h.ops[0].result;
  HistoryOp read;
  read.id = 1;
  read.partition = "H";
  read.op = "read";
  read.args = {{"handle", "H"}};
  read.invoke_ns = h.ops[0].return_ns.value() + 10;
  read.return_ns = read.invoke_ns + 10;
  read.outcome = Outcome::kOk;
  read.result = snap;
  read.result["layers"] = {1, 0};
  h.ops.push_back(read);
  auto v = CheckHistory(model, h);
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->verdict, Verdict::kNotLinearizable);
  EXPECT_EQ(v->witness->stuck_op, 1u);
  EXPECT_EQ(v->witness->prefix, std::vector<uint64_t>{0});
  h.ops.back().result["layers"] = {0, 0};
  EXPECT_EQ(CheckHistory(model, h)->verdict, Verdict::kLinearizable);
}

// M5.1 0x01 "Why Generation Fencing Prevents The ABA Mistake" (slot 17): a transaction is
// prepared on child A (slot 1), A is finished and released (slot 1 freed), a new fork puts C
// into slot 1, then A's delayed publication arrives. The correct store rejects it on
// generation; the no_generation_fence mutant addresses by slot and lands it on C, which the
// checker finds not linearizable.
History SlotReuseAba(Mutant m, OpResult* late, Json* c_after) {
  ConcurrentStore store(RaceAbi(2), m);
  Recorded s(store);
  EXPECT_EQ(Code(s.Do(OnHandle(KvOpKind::kAllocate, "H"))), "OK");  // slot 0
  KvOp fork = OnHandle(KvOpKind::kFork, "H");
  fork.children = {"A", "B"};  // slots 1, 2
  fork.group = "g0";
  EXPECT_EQ(Code(s.Do(fork)), "OK");
  Json a = s.Do(OnHandle(KvOpKind::kRead, "A")).result;
  EXPECT_EQ(Code(s.Do(Begin("late", "A", a, 2))), "OK");
  EXPECT_EQ(Code(s.Do(Stage("late", 0, 0, 2))), "OK");
  EXPECT_EQ(Code(s.Do(Stage("late", 1, 0, 2))), "OK");
  EXPECT_EQ(Code(s.Do(OnHandle(KvOpKind::kFinish, "A"))), "OK");
  EXPECT_EQ(Code(s.Do(OnHandle(KvOpKind::kRelease, "A"))), "OK");  // slot 1 is free
  fork.children = {"C", "D"};  // C reuses slot 1
  fork.group = "g1";
  EXPECT_EQ(Code(s.Do(fork)), "OK");
  *late = s.Do(OnTxn(KvOpKind::kPublish, "late"));
  *c_after = s.Do(OnHandle(KvOpKind::kRead, "C")).result;
  return s.Take();
}

TEST(ConcurrentStore, SlotReuseAbaIsFencedByGeneration) {
  OpResult late;
  Json c;
  History h = SlotReuseAba(Mutant::kNone, &late, &c);
  EXPECT_EQ(Code(late), "LIFECYCLE_STALE_BASE");
  EXPECT_EQ(c["length"], 0);
  KvModel model(RaceAbi(2), false);
  EXPECT_EQ(CheckHistory(model, h)->verdict, Verdict::kLinearizable);
}

TEST(ConcurrentStore, NoGenerationFenceLandsStaleWorkOnTheSlotsNewOccupant) {
  OpResult late;
  Json c;
  History h = SlotReuseAba(Mutant::kNoGenerationFence, &late, &c);
  ASSERT_EQ(Code(late), "OK");
  EXPECT_EQ(late.result["handle"], "C");  // A's rows landed on the new occupant of slot 1
  EXPECT_EQ(c["length"], 2);
  KvModel model(RaceAbi(2), false);
  auto v = CheckHistory(model, h);
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->verdict, Verdict::kNotLinearizable);
  EXPECT_EQ(h.ops[v->witness->stuck_op].op, "publish");
}

// The in-place fast search (digest cache, checkpoints and replay) and the exact search (full
// state copies) reach the same verdict on random store histories, correct and mutant.
TEST(Linearizability, InPlaceSearchAgreesWithExactSearch) {
  int failing = 0;
  for (const MutantInfo& m : AllMutants()) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      Program p = GenerateProgram({4, 2, 80, 2}, seed * 1000 + static_cast<uint64_t>(m.mutant));
      StoreTarget target(RaceAbi(2), m.mutant);
      History h = RunProgram(p, target, seed);
      KvModel model(RaceAbi(2), false);
      CheckOptions fast, exact;
      exact.in_place = false;
      auto a = CheckHistory(model, h, fast);
      auto b = CheckHistory(model, h, exact);
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(a->verdict, b->verdict) << m.name << " seed " << seed << "\n" << WriteHistoryJsonl(h);
      if (b->verdict == Verdict::kNotLinearizable) ++failing;
      for (bool partition : {true, false}) {
        fast.partition = exact.partition = partition;
        EXPECT_EQ(CheckHistory(model, h, fast)->verdict, CheckHistory(model, h, exact)->verdict);
      }
    }
  }
  EXPECT_GT(failing, 0);  // the comparison covered failing histories too
}

// FromHeader reads model, cache_abi (non-empty), num_layers in [1, 4096], position_stage
// (default post_rope) and digests; Header() writes back exactly what it read.
TEST(KvModel, FromHeaderReadsTheModelParameters) {
  const Json h = {{"model", "kv_lineage/1"},
                  {"cache_abi", "abi"},
                  {"num_layers", 4096u},
                  {"position_stage", "pre_rope"},
                  {"digests", "opaque"}};
  auto m = KvModel::FromHeader(h);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->Header(), h);
  Json plain = h;  // position_stage defaults to post_rope
  plain.erase("position_stage");
  EXPECT_EQ(KvModel::FromHeader(plain)->Header()["position_stage"], "post_rope");
  auto with = [&](const char* k, Json v) {
    Json x = h;
    x[k] = std::move(v);
    return KvModel::FromHeader(x).ok();
  };
  EXPECT_TRUE(with("digests", "checked"));
  EXPECT_FALSE(with("num_layers", 4097u));
  EXPECT_FALSE(with("num_layers", 0u));
  EXPECT_FALSE(with("cache_abi", ""));
}

// num_layers is any JSON integer in [1, 4096]: a header built in code holds a signed 2, a parsed
// file an unsigned one (the audit of 2026-12-05 found the signed one refused).
TEST(KvModel, FromHeaderTakesNumLayersSignedOrUnsigned) {
  Json h = {{"model", "kv_lineage/1"}, {"cache_abi", "abi"}, {"digests", "opaque"}};
  auto layers = [&](Json v) {
    h["num_layers"] = std::move(v);
    return KvModel::FromHeader(h);
  };
  auto signed_two = layers(2);
  ASSERT_TRUE(signed_two.ok()) << signed_two.status().ToString();
  EXPECT_EQ(signed_two->Header()["num_layers"], 2u);
  EXPECT_TRUE(layers(Json::parse("4096")).ok());
  for (Json bad :
       {Json(-1), Json(0), Json(4097), Json(2.0), Json("2"), Json::parse("18446744073709551615")}) {
    auto m = layers(bad);
    ASSERT_FALSE(m.ok()) << bad.dump();
    EXPECT_EQ(m.status().code(), StatusCode::kParseError) << bad.dump();
  }
}

// An operation with an unknown outcome may have taken effect: a later read may see it.
TEST(KvModel, UnknownOutcomeMayTakeEffect) {
  ConcurrentStore store(RaceAbi(2));
  Recorded s(store);
  s.Do(OnHandle(KvOpKind::kAllocate, "H"));
  s.Do(OnHandle(KvOpKind::kRead, "H"));
  History h = s.Take();
  h.ops[0].outcome = Outcome::kUnknown;
  h.ops[0].return_ns.reset();
  h.ops[0].result = nullptr;
  auto v = CheckHistory(KvModel(RaceAbi(2), false), h);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->verdict, Verdict::kLinearizable);
}

// Opaque digests: runtime digests and model snapshots correspond one to one, across results
// and within one result.
TEST(KvModel, OpaqueDigestsAreABijection) {
  ConcurrentStore store(RaceAbi(2));
  Recorded s(store);
  s.Do(OnHandle(KvOpKind::kAllocate, "H"));
  s.Do(OnHandle(KvOpKind::kRead, "H"));
  KvOp fork = OnHandle(KvOpKind::kFork, "H");
  fork.children = {"A", "B"};
  fork.group = "g";
  s.Do(fork);
  History checked = s.Take();
  // The runtime's digest of a model digest: a consistent renaming.
  auto runtime = [](const Json& d) {
    return lifecycle::DigestHex(*lifecycle::ParseDigestHex(d.get<std::string>()) ^
                                0x1111111111111111ull);
  };
  History h = checked;
  h.header["digests"] = "opaque";
  h.ops[0].result["digest"] = runtime(h.ops[0].result["digest"]);
  h.ops[1].result["digest"] = runtime(h.ops[1].result["digest"]);
  for (auto& c : h.ops[2].result["children"]) c["digest"] = runtime(c["digest"]);
  auto verdict = [](const History& x) {
    auto model = KvModel::FromHeader(x.header);
    EXPECT_TRUE(model.ok());
    return CheckHistory(*model, x)->verdict;
  };
  ASSERT_EQ(verdict(h), Verdict::kLinearizable);
  History two_names = h;  // one model snapshot (H after allocate), two runtime digests
  two_names.ops[1].result["digest"] = "aaaaaaaaaaaaaaaa";
  EXPECT_EQ(verdict(two_names), Verdict::kNotLinearizable);
  History reused = h;  // child A reported under the digest of H's snapshot
  reused.ops[2].result["children"][0]["digest"] = h.ops[0].result["digest"];
  EXPECT_EQ(verdict(reused), Verdict::kNotLinearizable);
  History shared = h;  // both children (two snapshots) under one new runtime digest
  for (auto& c : shared.ops[2].result["children"]) c["digest"] = "bbbbbbbbbbbbbbbb";
  EXPECT_EQ(verdict(shared), Verdict::kNotLinearizable);
}

// A fork into a beam group that exists is rejected, and the group keeps its rows.
TEST(ConcurrentStore, ForkIntoAnExistingGroupIsRejected) {
  ConcurrentStore store(RaceAbi(2));
  ASSERT_EQ(Code(store.Execute("H", OnHandle(KvOpKind::kAllocate, "H"))), "OK");
  KvOp fork = OnHandle(KvOpKind::kFork, "H");
  fork.children = {"A", "B"};
  fork.group = "g";
  ASSERT_EQ(Code(store.Execute("H", fork)), "OK");
  fork.children = {"C", "D"};
  EXPECT_EQ(Code(store.Execute("H", fork)), "RACE_GROUP_UNKNOWN");
  KvOp row = Op(KvOpKind::kReadRow);
  row.group = "g";
  EXPECT_EQ(store.Execute("H", row).result["handle"], "A");
}

// cancel_txn of a transaction that does not exist is rejected.
TEST(ConcurrentStore, CancelOfAnUnknownTxnIsRejected) {
  ConcurrentStore store(RaceAbi(2));
  ASSERT_EQ(Code(store.Execute("H", OnHandle(KvOpKind::kAllocate, "H"))), "OK");
  EXPECT_EQ(store.Execute("H", OnTxn(KvOpKind::kCancelTxn, "nope")).outcome, Outcome::kError);
}

// A witness names what the sequential model returns for the stuck op from the state before it.
TEST(KvModel, WitnessShowsWhatTheModelReturns) {
  ConcurrentStore store(RaceAbi(2));
  Recorded s(store);
  s.Do(OnHandle(KvOpKind::kAllocate, "H"));
  s.Do(OnHandle(KvOpKind::kRead, "H"));
  History h = s.Take();
  Json right = h.ops[1].result;
  h.ops[1].result["layers"] = {1, 0};
  auto v = CheckHistory(KvModel(RaceAbi(2), false), h);
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->verdict, Verdict::kNotLinearizable);
  EXPECT_EQ(v->witness->expected, "ok " + right.dump());
}

// A step that does not match the recorded result leaves no trace in the state the search
// continues from (the fast search restores it): an allocation recorded as failing, concurrent
// with a read that saw the handle, is not linearizable (nothing allocated the handle).
TEST(KvModel, FailedStepLeavesNoTrace) {
  ConcurrentStore store(RaceAbi(2));
  Recorded s(store);
  s.Do(OnHandle(KvOpKind::kAllocate, "H"));
  s.Do(OnHandle(KvOpKind::kRead, "H"));
  ASSERT_EQ(s.Do(OnHandle(KvOpKind::kAllocate, "H")).outcome, Outcome::kError);
  History all = s.Take();
  History h;
  h.header = all.header;
  h.ops = {all.ops[2], all.ops[1]};  // the failed allocation [0, 100], the read [10, 90]
  h.ops[0].id = 0;
  h.ops[0].invoke_ns = 0;
  h.ops[0].return_ns = 100;
  h.ops[1].id = 1;
  h.ops[1].invoke_ns = 10;
  h.ops[1].return_ns = 90;
  for (bool in_place : {true, false}) {
    CheckOptions opt;
    opt.in_place = in_place;
    auto v = CheckHistory(KvModel(RaceAbi(2), false), h, opt);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->verdict, Verdict::kNotLinearizable) << "in_place " << in_place;
  }
}

}  // namespace
}  // namespace kvc::race
