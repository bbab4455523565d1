// Property tests of the M5.6 handoff transaction under random chunk orders, duplicates,
// losses, delays, retries, reroutes and aborts (RapidCheck; failures shrink).
//
// Reproduce: the seed is printed when the suite starts; rerun with
//   RC_PARAMS="seed=<seed>" build/bin/conformance_tests --gtest_filter='HandoffProperties.*'
// RapidCheck prints a RC_PARAMS="reproduce=<string>" line at exit for a failing case; replay it
// alone with --gtest_filter='HandoffProperties.<Test>'.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <string_view>

#include "conformance/rapidcheck_reproduce.h"
#include "reference/base/canonical_json.h"
#include "reference/handoff/handoff_manifest.h"
#include "reference/handoff/transfer_txn.h"
#include "reference/testutil/testutil.h"
#include "reference/trace/checker.h"
#include "reference/validate/kinds.h"

namespace kvc::handoff {
namespace {

constexpr uint64_t kBytesPerTokenLayer = 64;

using test::CollectPointers;
using test::Uniform;
constexpr uint64_t kReservedBlocks = 2;

struct Geometry {
  uint64_t layers = 0;
  std::vector<std::vector<uint64_t>> chunk_tokens;  // per layer, tokens of each chunk
  std::vector<uint64_t> ready;                      // per layer K/V-ready time
};

TransferPlan MakePlan(const Geometry& g, uint64_t generation) {
  TransferPlan p;
  p.transfer_id = "xfer-g" + std::to_string(generation);
  p.identity = {
      "tenant", "req", generation, generation, 1, 1, "resv-" + std::to_string(generation)};
  p.tensor_abi_sha256 = Sha256Hex("abi");
  p.num_layers = g.layers;
  p.bytes_per_token_layer = kBytesPerTokenLayer;
  p.reserved_blocks = kReservedBlocks;
  uint64_t total = 0;
  for (uint64_t l = 0; l < g.layers; ++l) {
    uint64_t at = 0;
    for (uint64_t t : g.chunk_tokens[l]) {
      std::string id = "L" + std::to_string(l) + "@" + std::to_string(at);
      p.chunks.push_back({id, l, at, t, t * kBytesPerTokenLayer, Sha256Hex(p.transfer_id + id)});
      at += t;
    }
    total = at;
  }
  p.token_count = total;
  return p;
}

Geometry GenGeometry() {
  Geometry g;
  g.layers = Uniform<uint64_t>(1, 5);
  // Every layer shares one token interval, split differently per layer.
  uint64_t tokens = Uniform<uint64_t>(1, 9);
  uint64_t t = 0;
  for (uint64_t l = 0; l < g.layers; ++l) {
    std::vector<uint64_t> split;
    uint64_t left = tokens;
    while (left > 0) {
      uint64_t c = Uniform<uint64_t>(1, left + 1);
      split.push_back(c);
      left -= c;
    }
    g.chunk_tokens.push_back(split);
    t += Uniform<uint64_t>(0, 20);
    g.ready.push_back(t);
  }
  return g;
}

// Observable state, to prove refused operations and idempotent retries change nothing.
struct Snapshot {
  std::vector<int> chunk_states;
  int txn_state = 0;
  uint64_t in_flight = 0, unpublished = 0, decode_owned = 0, publications = 0, held = 0;
  bool operator==(const Snapshot&) const = default;
};

struct World {
  Geometry geo;
  ByteCreditWindow credits;
  DestinationBlockPool pool{64 * kReservedBlocks};
  DecodeDirectory directory;
  std::vector<TransferTxn> attempts;  // index = generation - 1; the last one is current
  uint64_t now = 0;
  uint64_t last_published_generation = 0;
  std::set<std::pair<size_t, std::string>>
      corrupted;  // (attempt index, chunk id) received with other bytes

  World(Geometry g, uint64_t capacity)
      : geo(std::move(g)),
        credits(capacity),
        directory(lifecycle::CacheAbi{Sha256Hex("abi"), static_cast<uint32_t>(geo.layers),
                                      "post_rope"}) {}

  Snapshot Snap(const TransferTxn& t) const {
    Snapshot s;
    for (const auto& c : t.plan().chunks)
      s.chunk_states.push_back(static_cast<int>(*t.chunk_state(c.chunk_id)));
    s.txn_state = static_cast<int>(t.state());
    s.in_flight = credits.in_flight();
    s.unpublished = pool.unpublished();
    s.decode_owned = pool.decode_owned();
    s.publications = directory.publications();
    s.held = t.credit_held();
    return s;
  }

  void CheckInvariants() const {
    RC_ASSERT(credits.in_flight() <= credits.capacity());
    uint64_t held = 0, unpublished = 0;
    for (const auto& a : attempts) {
      held += a.credit_held();
      if (a.state() == TxnState::kAborted) RC_ASSERT(a.credit_held() == 0u);
      if (a.state() == TxnState::kReserved || a.state() == TxnState::kTransferring ||
          a.state() == TxnState::kValidated)
        unpublished += kReservedBlocks;
    }
    RC_ASSERT(held == credits.in_flight());
    RC_ASSERT(unpublished == pool.unpublished());
    RC_ASSERT(pool.decode_owned() == kReservedBlocks * directory.publications());
  }
};

void Reroute(World& w) {
  uint64_t generation = w.attempts.size() + 1;
  auto t = TransferTxn::Create(MakePlan(w.geo, generation), &w.credits, &w.pool, &w.directory);
  RC_ASSERT(t.ok());
  RC_ASSERT(t->Reserve().ok());
  w.attempts.push_back(std::move(t).value());
}

// Sends `c`; a first send that succeeds must respect the producer gate.
Status CheckedSend(World& w, TransferTxn& a, const ChunkSpec& c) {
  bool first = a.chunk_state(c.chunk_id) == ChunkState::kCreditAcquired;
  Status s = a.Send(c.chunk_id, w.now, w.geo.ready[c.layer]);
  if (s.ok() && first) RC_ASSERT(w.now >= w.geo.ready[c.layer]);
  return s;
}

// Drives one operation on attempt `a`; returns its status. `op` selects the operation,
// `pick` the chunk, `corrupt` whether a delivery carries other bytes.
Status Drive(World& w, TransferTxn& a, int op, size_t pick, bool corrupt) {
  const auto& chunks = a.plan().chunks;
  const ChunkSpec& c = chunks[pick % chunks.size()];
  switch (op) {
    case 0: {  // the chunk's next step, as a well-behaved transport would take it
      auto st = a.chunk_state(c.chunk_id);
      if (st == ChunkState::kDeclared) return a.AcquireCredit(c.chunk_id);
      if (st == ChunkState::kCreditAcquired) return CheckedSend(w, a, c);
      if (st == ChunkState::kSent) return a.Receive(c.chunk_id, c.checksum);
      if (st == ChunkState::kReceived) return a.MarkDeviceVisible(c.chunk_id);
      return a.MarkDeviceVisible(c.chunk_id);  // duplicate visibility callback
    }
    case 1:
      return a.AcquireCredit(c.chunk_id);
    case 2:
      return CheckedSend(w, a, c);  // may be refused by the producer gate
    case 3:
      return a.Receive(c.chunk_id, corrupt ? Sha256Hex("corrupt") : c.checksum);
    case 4:
      return a.MarkDeviceVisible(c.chunk_id);
    case 5:
      return a.Validate(a.plan().identity, a.plan().tensor_abi_sha256);
    case 6: {
      bool all_visible = true;
      for (const auto& x : chunks)
        all_visible &= a.chunk_state(x.chunk_id) == ChunkState::kDeviceVisible;
      auto current = w.directory.CurrentGeneration("req");
      bool was_published = a.state() == TxnState::kPublished;
      uint64_t pubs_before = w.directory.publications();
      auto h = a.Publish();
      if (h.ok() && was_published) {
        // Idempotent re-publication: the original handle, no new directory entry.
        RC_ASSERT(w.directory.publications() == pubs_before);
        RC_ASSERT(h->transfer_id == a.plan().transfer_id);
      } else if (h.ok()) {
        RC_ASSERT(w.directory.publications() == pubs_before + 1);
        // Consumer gate and generation fence: publication only of a complete cache,
        // only under the current generation, never replacing a newer one.
        RC_ASSERT(all_visible);
        RC_ASSERT(current.has_value());
        RC_ASSERT(a.plan().identity.generation == *current);
        RC_ASSERT(h->generation >= w.last_published_generation);
        w.last_published_generation = h->generation;
        RC_ASSERT(w.directory.Lookup("req")->generation == h->generation);
        // The decode-visible cache is the lifecycle handle, every layer at the full interval.
        auto snap = w.directory.cache().Read(h->cache_handle_id);
        RC_ASSERT(snap.ok());
        RC_ASSERT(snap->committed_length == a.plan().token_count);
        Status admit = a.AdmitDecode(*h);
        RC_ASSERT(admit.ok());
      }
      return h.status();
    }
    case 7:
      return a.Abort("random abort");
    default:
      return a.AcknowledgeSourceRelease(a.plan().identity.generation);
  }
}

RC_GTEST_PROP(HandoffProperties, CreditsGatesFencesAndAbortsHoldUnderRandomSchedules, ()) {
  Geometry g = GenGeometry();
  uint64_t largest = 0;
  for (const auto& layer : g.chunk_tokens)
    for (uint64_t t : layer) largest = std::max(largest, t * kBytesPerTokenLayer);
  uint64_t capacity = largest * Uniform<uint64_t>(1, 4) + Uniform<uint64_t>(0, 64);
  World w(g, capacity);
  Reroute(w);
  const int steps = Uniform<int>(1, 800);
  for (int i = 0; i < steps; ++i) {
    int kind = Uniform<int>(0, 100);
    if (kind <
        1) {  // reroute: a newer attempt supersedes; the old one keeps running (late completions)
      if (w.attempts.size() < 60) Reroute(w);
      continue;
    }
    if (kind < 6) {  // delay: time passes; a lost message is simply one that is never driven
      w.now += Uniform<uint64_t>(1, 10);
      continue;
    }
    if (kind < 10) {  // validate and publish the current attempt, or late, a superseded one
      size_t which =
          Uniform<int>(0, 2) == 0 ? Uniform<size_t>(0, w.attempts.size()) : w.attempts.size() - 1;
      TransferTxn& cur = w.attempts[which];
      Status v = Drive(w, cur, 5, 0, false);
      if (v.ok()) {
        (void)Drive(w, cur, 6, 0, false);
      } else if (v.error() == ErrorCode::HANDOFF_CHECKSUM_MISMATCH &&
                 which == w.attempts.size() - 1 && w.attempts.size() < 60) {
        // Corrupt bytes: abort and retry under a newer generation.
        RC_ASSERT(cur.Abort("checksum mismatch").ok());
        Reroute(w);
      }
      w.CheckInvariants();
      continue;
    }
    // Mostly the current attempt; sometimes a superseded one (late completions).
    size_t idx = w.attempts.size() - 1;
    if (kind < 20) idx = Uniform<size_t>(0, w.attempts.size());
    TransferTxn& a = w.attempts[idx];
    int op = kind < 70 && idx == w.attempts.size() - 1 ? 0 : Uniform<int>(kind < 20 ? 0 : 1, 9);
    if (op == 7 && Uniform<int>(0, 10) != 0) op = 0;  // aborts are rarer than other faults
    size_t pick = Uniform<size_t>(0, 64);
    bool corrupt = Uniform<int>(0, 10) == 0;
    Snapshot before = w.Snap(a);
    Status s = Drive(w, a, op, pick, corrupt);
    const ChunkSpec& picked = a.plan().chunks[pick % a.plan().chunks.size()];
    if (s.ok() && op == 3 && corrupt) w.corrupted.insert({idx, picked.chunk_id});
    Snapshot after = w.Snap(a);
    bool publish_or_abort = op == 6 || op == 7;  // a stale publication aborts by design
    if (!s.ok() && !publish_or_abort) RC_ASSERT(before == after);
    if (op == 0 && s.error() == ErrorCode::HANDOFF_CREDIT_WINDOW_EXCEEDED) {
      // A well-behaved transport then completes in-flight work, which holds credit.
      for (size_t i = 0; i < a.plan().chunks.size(); ++i) {
        auto st = a.chunk_state(a.plan().chunks[i].chunk_id);
        if (st != ChunkState::kDeclared && st != ChunkState::kDeviceVisible) {
          (void)Drive(w, a, 0, i, false);  // may wait on the producer gate
          break;
        }
      }
    }
    if (s.ok() && (op == 3 || op == 4 || op == 0) && !corrupt) {
      // A retried completion of what just succeeded is an idempotent no-op.
      const ChunkSpec& c = a.plan().chunks[pick % a.plan().chunks.size()];
      auto st = a.chunk_state(c.chunk_id);
      if (st == ChunkState::kReceived || st == ChunkState::kDeviceVisible) {
        Snapshot once = w.Snap(a);
        bool bad = w.corrupted.count({idx, c.chunk_id}) > 0;
        RC_ASSERT(a.Receive(c.chunk_id, bad ? Sha256Hex("corrupt") : c.checksum).ok());
        if (st == ChunkState::kDeviceVisible) RC_ASSERT(a.MarkDeviceVisible(c.chunk_id).ok());
        RC_ASSERT(a.Send(c.chunk_id, w.now, 0).ok());
        RC_ASSERT(w.Snap(a) == once);
      }
    }
    w.CheckInvariants();
    // Recovery: an aborted current attempt is retried under a newer generation.
    if (op == 7 && idx == w.attempts.size() - 1 && w.attempts.size() < 60) Reroute(w);
  }
  // Every abort returns all credits and unpublished blocks.
  for (auto& a : w.attempts)
    if (a.state() != TxnState::kPublished) RC_ASSERT(a.Abort("teardown").ok());
  RC_ASSERT(w.credits.in_flight() == 0u);
  RC_ASSERT(w.pool.unpublished() == 0u);
  RC_ASSERT(w.pool.decode_owned() == kReservedBlocks * w.directory.publications());
  RC_TAG(w.directory.publications() > 0 ? "published" : "not published");
}

// A well-behaved transport delivering chunks in any order, with duplicates, always ends
// published, with the peak in-flight bytes within the window.
RC_GTEST_PROP(HandoffProperties, AnyLegalDeliveryOrderPublishes, ()) {
  Geometry g = GenGeometry();
  uint64_t largest = 0;
  for (const auto& layer : g.chunk_tokens)
    for (uint64_t t : layer) largest = std::max(largest, t * kBytesPerTokenLayer);
  World w(g, largest * Uniform<uint64_t>(1, 4));
  Reroute(w);
  TransferTxn& a = w.attempts.back();
  w.now = g.ready.back();  // every layer ready: the producer gate is open
  const auto& chunks = a.plan().chunks;
  for (int guard = 0; guard < 100000; ++guard) {
    std::vector<size_t> open;
    for (size_t i = 0; i < chunks.size(); ++i)
      if (a.chunk_state(chunks[i].chunk_id) != ChunkState::kDeviceVisible) open.push_back(i);
    if (open.empty()) break;
    size_t pick = open[Uniform<size_t>(0, open.size())];
    Status s = Drive(w, a, 0, pick, false);
    if (!s.ok()) {
      // The only legal refusal of a next step is a full credit window; the transport then
      // completes in-flight work, which holds credit and can always progress.
      RC_ASSERT(s.error() == ErrorCode::HANDOFF_CREDIT_WINDOW_EXCEEDED);
      for (size_t i : open)
        if (a.chunk_state(chunks[i].chunk_id) != ChunkState::kDeclared) {
          RC_ASSERT(Drive(w, a, 0, i, false).ok());
          break;
        }
    }
    if (Uniform<int>(0, 4) == 0) (void)Drive(w, a, 4, pick, false);  // duplicate callback
    w.CheckInvariants();
  }
  Status validated = a.Validate(a.plan().identity, a.plan().tensor_abi_sha256);
  RC_LOG() << validated.ToString() << "\n";
  RC_ASSERT(validated.ok());
  RC_ASSERT(Drive(w, a, 6, 0, false).ok());
  RC_ASSERT(a.AcknowledgeSourceRelease(a.plan().identity.generation).ok());
  RC_ASSERT(w.credits.high_water() <= w.credits.capacity());
  RC_ASSERT(w.credits.in_flight() == 0u);
}

// Suffix transfer onto a warm destination (0x01A, 0x06): the destination already holds an exact
// visible prefix V_D = [0, p); only X = U \ V_D = [p, p + n) moves, in any legal delivery order
// with duplicate callbacks, and publication makes exactly [0, p + n) visible on a fork of the
// prefix (the prefix itself unchanged). A plan that does not start where V_D ends is refused at
// reservation and holds nothing.
RC_GTEST_PROP(HandoffProperties, SuffixOntoWarmDestinationPublishesExactlyTheMissingInterval, ()) {
  const uint64_t layers = Uniform<uint64_t>(1, 5);
  const uint64_t p = Uniform<uint64_t>(1, 12);
  const uint64_t n = Uniform<uint64_t>(1, 12);
  const uint64_t start = Uniform<int>(0, 4) == 0 ? Uniform<uint64_t>(0, p + 3) : p;
  Geometry g;
  g.layers = layers;
  for (uint64_t l = 0; l < layers; ++l) {
    std::vector<uint64_t> split;
    for (uint64_t left = n; left > 0;) {
      uint64_t c = Uniform<uint64_t>(1, left + 1);
      split.push_back(c);
      left -= c;
    }
    g.chunk_tokens.push_back(split);
    g.ready.push_back(0);
  }
  TransferPlan plan = MakePlan(g, 1);
  plan.token_start = start;
  for (auto& c : plan.chunks) c.token_start += start;
  plan.visible_prefix_handle = "prefix";
  World w(g, n * kBytesPerTokenLayer);
  RC_ASSERT(w.directory.PublishVisiblePrefix("prefix", p).ok());
  auto txn = TransferTxn::Create(plan, &w.credits, &w.pool, &w.directory);
  RC_ASSERT(txn.ok());
  Status reserved = txn->Reserve();
  if (start != p) {
    RC_ASSERT(reserved.error() == ErrorCode::HANDOFF_COVERAGE_MISMATCH);
    RC_ASSERT(w.pool.unpublished() == 0u);
    RC_ASSERT(txn->state() == TxnState::kPlanned);
    RC_TAG("refused: transfer set does not start at |V_D|");
    return;
  }
  RC_ASSERT(reserved.ok());
  w.attempts.push_back(std::move(txn).value());
  TransferTxn& a = w.attempts.back();
  const auto& chunks = a.plan().chunks;
  uint64_t moved = 0;
  for (const auto& c : chunks) moved += c.bytes;
  RC_ASSERT(moved == n * layers * kBytesPerTokenLayer);  // the prefix never moves
  for (int guard = 0; guard < 100000; ++guard) {
    std::vector<size_t> open;
    for (size_t i = 0; i < chunks.size(); ++i)
      if (a.chunk_state(chunks[i].chunk_id) != ChunkState::kDeviceVisible) open.push_back(i);
    if (open.empty()) break;
    size_t pick = open[Uniform<size_t>(0, open.size())];
    Status st = Drive(w, a, 0, pick, false);
    if (!st.ok()) {
      RC_ASSERT(st.error() == ErrorCode::HANDOFF_CREDIT_WINDOW_EXCEEDED);
      for (size_t i : open)
        if (a.chunk_state(chunks[i].chunk_id) != ChunkState::kDeclared) {
          RC_ASSERT(Drive(w, a, 0, i, false).ok());
          break;
        }
    }
    if (Uniform<int>(0, 4) == 0) (void)Drive(w, a, 4, pick, false);  // duplicate callback
    w.CheckInvariants();
  }
  RC_ASSERT(a.Validate(a.plan().identity, a.plan().tensor_abi_sha256).ok());
  auto h = a.Publish();
  RC_ASSERT(h.ok());
  RC_ASSERT(h->cache_snapshot.committed_length == p + n);
  auto snap = w.directory.cache().Read(h->cache_handle_id);
  RC_ASSERT(snap.ok());
  RC_ASSERT(snap->committed_length == p + n);
  RC_ASSERT(w.directory.cache().Read("prefix")->committed_length == p);
  RC_ASSERT(w.credits.in_flight() == 0u);
  RC_TAG("published");
}

// The handoff manifest's expected chunk manifest (0x01A) over random prompts: U of n blocks, P
// reusing the prefix b0..b(r-1), D seeing the prefix b0..b(k-1), random geometry, and chunks
// tiling X = [k * B, n * B) per layer at random cut points. Such a manifest is valid; without
// one of its chunks it is a coverage gap, that code alone; and chunks cut from the compute set
// C_P = [r * B, n * B) instead are valid exactly when C_P = X (r = k): otherwise they omit what
// P reused and D lacks (r > k, 0x01A's b1,b2) or move what D already has (r < k).
RC_GTEST_PROP(HandoffProperties, ManifestChunksMustTileTheTransferSetNotTheComputeSet, ()) {
  static const Json kBase = test::LoadJson("fixtures/m5_6/handoff/handoff_manifest.json");
  const uint64_t n = Uniform<uint64_t>(1, 13), r = Uniform<uint64_t>(0, n + 1),
                 k = Uniform<uint64_t>(0, n + 1);
  const uint64_t layers = Uniform<uint64_t>(1, 5), block = Uniform<uint64_t>(1, 9),
                 heads = Uniform<uint64_t>(1, 3), dim = 8 * Uniform<uint64_t>(1, 3);
  const uint64_t row = 2 * heads * dim * 2;  // bfloat16
  const uint64_t bpb = block * layers * row;
  Json m = kBase;
  Json& abi = m["tensor_abi"];
  abi["num_layers"] = layers;
  abi["kv_heads"] = heads;
  abi["head_dim"] = dim;
  abi["tokens_per_block"] = block;
  abi["partition"]["kv_heads_total"] = heads;
  m["tensor_abi_sha256"] = *TensorAbiSha256(abi);
  Json u = Json::array(), reused = Json::array(), visible = Json::array(), compute = Json::array(),
       transfer = Json::array();
  for (uint64_t i = 0; i < n; ++i) {
    const std::string b = "b" + std::to_string(i);
    u.push_back(b);
    (i < r ? reused : compute).push_back(b);
    (i < k ? visible : transfer).push_back(b);
  }
  m["blocks"] = Json{
      {"universe", u},          {"reusable_at_prefill", reused}, {"visible_at_decode", visible},
      {"compute_set", compute}, {"source_state_set", u},         {"transfer_set", transfer}};
  m["input"]["token_count"] = n * block;
  m["destination_reservation"]["blocks"] = n;
  m["logical_ledger"] = Json{{"compute_blocks", n - r},
                             {"transfer_blocks", n - k},
                             {"bytes_per_block", bpb},
                             {"transfer_logical_bytes", (n - k) * bpb}};
  Json& phys = m["physical_ledger"];
  phys["logical_payload_bytes"] = (n - k) * bpb;
  phys["total_bytes"] = (n - k) * bpb + phys["padding_bytes"].get<uint64_t>() +
                        phys["descriptor_bytes"].get<uint64_t>() +
                        phys["checksum_bytes"].get<uint64_t>() +
                        phys["retry_bytes"].get<uint64_t>() + phys["framing_bytes"].get<uint64_t>();
  // Chunks tiling [from * B, n * B) on every layer at random cut points.
  auto tile = [&](uint64_t from) {
    Json chunks = Json::array();
    for (uint64_t l = 0; l < layers; ++l)
      for (uint64_t at = from * block; at < n * block;) {
        const uint64_t len = Uniform<uint64_t>(1, n * block - at + 1);
        const std::string id = "L" + std::to_string(l) + "@" + std::to_string(at);
        chunks.push_back(Json{{"chunk_id", id},
                              {"layer", l},
                              {"token_start", at},
                              {"token_count", len},
                              {"bytes", len * row},
                              {"checksum", Sha256Hex(id)}});
        at += len;
      }
    return chunks;
  };
  m["transfer"]["expected_chunks"] = tile(k);
  const Violations ok = ValidateHandoffManifest(m);
  RC_ASSERT(ok.empty());
  if (!m["transfer"]["expected_chunks"].empty()) {
    Json gap = m;
    Json& cs = gap["transfer"]["expected_chunks"];
    cs.erase(Uniform<size_t>(0, cs.size()));
    RC_ASSERT(test::CodeNames(ValidateHandoffManifest(gap)) ==
              std::vector<std::string>{"HANDOFF_COVERAGE_MISMATCH"});
  }
  Json from_compute = m;
  from_compute["transfer"]["expected_chunks"] = tile(r);
  const Violations v = ValidateHandoffManifest(from_compute);
  if (r == k) {
    RC_ASSERT(v.empty());
  } else {
    RC_ASSERT(test::CodeNames(v) == std::vector<std::string>{"HANDOFF_COVERAGE_MISMATCH"});
  }
  RC_TAG(r == k  ? "compute set is X"
         : r > k ? "compute set omits reused blocks"
                 : "compute set reaches into V_D");
}

// Hostile one-field mutations of every M5.6 fixture: the validators never crash or throw,
// and are deterministic (the same document yields the same violations).
RC_GTEST_PROP(HandoffProperties, ValidatorsSurviveRandomOneFieldMutations, ()) {
  static const char* kFixtures[] = {"fixtures/m5_6/handoff/handoff_manifest.json",
                                    "fixtures/m5_6/handoff/transfer_protocol.json",
                                    "fixtures/m5_6/runtime/transfer_trace.json",
                                    "fixtures/m5_6/runtime/transfer_trace_recopy.json",
                                    "fixtures/m5_6/runtime/runtime_release.json"};
  static const std::vector<Json> kDocs = [] {
    std::vector<Json> docs;
    for (const char* f : kFixtures) docs.push_back(test::LoadJson(f));
    return docs;
  }();
  const Json& base = kDocs[Uniform<size_t>(0, kDocs.size())];
  RC_ASSERT(base.is_object());
  std::vector<std::string> ptrs;
  CollectPointers(base, "", &ptrs);
  std::string ptr = ptrs[Uniform<size_t>(1, ptrs.size())];
  const Json values[] = {-1,
                         0,
                         1,
                         uint64_t{1} << 53,
                         (uint64_t{1} << 53) + 1,
                         UINT64_MAX,
                         1e300,
                         0.5,
                         "",
                         "x",
                         std::string(64, 'f'),
                         nullptr,
                         true,
                         Json::array(),
                         Json::object(),
                         Json::array({1, 2})};
  Json doc = base;
  int how = Uniform<int>(0, 3);
  try {
    if (how == 0) doc[Json::json_pointer(ptr)] = values[Uniform<size_t>(0, std::size(values))];
    if (how == 1) doc = doc.patch(Json::array({{{"op", "remove"}, {"path", ptr}}}));
    if (how == 2 && doc[Json::json_pointer(ptr)].is_object())
      doc[Json::json_pointer(ptr)]["unexpected"] = 1;
  } catch (const std::exception&) {
    RC_DISCARD("mutation not applicable");
  }
  const KindEntry* kind = FindKind(base["kind"].get<std::string>());
  RC_ASSERT(kind != nullptr);
  Violations a = kind->validate_json(doc);
  Violations b = kind->validate_json(doc);
  RC_ASSERT(test::Describe(a) == test::Describe(b));
  RC_TAG(a.empty() ? "accepted" : "rejected");
}

// The seed and reproduce lines of this file's suites (conformance/rapidcheck_reproduce.h).
[[maybe_unused]] const bool kReproducer =
    test::RegisterRapidCheckReproducer("handoff_properties", {"HandoffProperties"});

}  // namespace
}  // namespace kvc::handoff

namespace kvc::handoff {
namespace {

// Hostile one-field mutations of the transfer-plane traces: the trace checker never crashes
// or throws on them, and is deterministic (the same bytes yield the same violations).
RC_GTEST_PROP(HandoffProperties, TraceCheckerSurvivesRandomTransferEventMutations, ()) {
  static const std::vector<std::vector<Json>> kTraces = [] {
    std::vector<std::vector<Json>> out;
    for (const char* f : {"fixtures/m5_6/trace/transfer_protocol.jsonl",
                          "fixtures/m5_6/trace/suffix_onto_warm_destination.jsonl",
                          "fixtures/m5_6/trace/superseded_attempt_late_publish.jsonl",
                          "fixtures/m5_6/trace/superseded_publication_admits_no_decode.jsonl"}) {
      std::ifstream in(test::SourcePath(f));
      std::vector<Json> lines;
      for (std::string l; std::getline(in, l);) lines.push_back(Json::parse(l));
      out.push_back(std::move(lines));
    }
    return out;
  }();
  std::vector<Json> lines = kTraces[Uniform<size_t>(0, kTraces.size())];
  RC_ASSERT(lines.size() > 1u);
  const size_t at = Uniform<size_t>(1, lines.size());
  std::vector<std::string> ptrs;
  CollectPointers(lines[at], "", &ptrs);
  const std::string ptr = ptrs[Uniform<size_t>(1, ptrs.size())];
  const Json values[] = {-1, 0, 1, 6, UINT64_MAX, 0.5, "", "c7", "xfer-req-42-g6",
                         std::string(64, 'f'), nullptr, true, Json::array(), Json::object()};
  try {
    if (Uniform<int>(0, 2) == 0)
      lines[at][Json::json_pointer(ptr)] = values[Uniform<size_t>(0, std::size(values))];
    else
      lines[at] = lines[at].patch(Json::array({{{"op", "remove"}, {"path", ptr}}}));
  } catch (const std::exception&) {
    RC_DISCARD("mutation not applicable");
  }
  std::string text;
  for (const auto& l : lines) text += l.dump() + "\n";
  Violations a = trace::ValidateTraceJsonl(text, "mutated.jsonl");
  Violations b = trace::ValidateTraceJsonl(text, "mutated.jsonl");
  RC_ASSERT(test::Describe(a) == test::Describe(b));
  RC_TAG(a.empty() ? "accepted" : "rejected");
}

}  // namespace
}  // namespace kvc::handoff
