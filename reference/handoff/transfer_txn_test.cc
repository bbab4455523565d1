// Unit tests of the transfer transaction, chunk states, credits and the decode directory.
#include "reference/handoff/transfer_txn.h"

#include <gtest/gtest.h>

#include "reference/base/canonical_json.h"

namespace kvc::handoff {
namespace {

// Two layers x two 4-token chunks; 2*H_kv*d_h*b = 128 B per token-layer -> 512 B chunks.
TransferPlan TwoLayerPlan(uint64_t generation = 7, std::string transfer_id = "x7") {
  TransferPlan p;
  p.transfer_id = transfer_id;
  p.identity = {"tenant-a", "req-1", generation, 1, 11, 19, "resv-1"};
  p.tensor_abi_sha256 = Sha256Hex("abi");
  p.num_layers = 2;
  p.token_start = 0;
  p.token_count = 8;
  p.bytes_per_token_layer = 128;
  p.reserved_blocks = 2;
  for (uint64_t l = 0; l < 2; ++l)
    for (uint64_t h = 0; h < 2; ++h) {
      std::string id = "c" + std::to_string(2 * l + h);
      p.chunks.push_back({id, l, 4 * h, 4, 512, Sha256Hex(transfer_id + id)});
    }
  return p;
}

lifecycle::CacheAbi Abi() { return {Sha256Hex("abi"), 2, "post_rope"}; }

struct Rig {
  ByteCreditWindow credits{1024};
  DestinationBlockPool pool{4};
  DecodeDirectory directory{Abi()};
};

void Deliver(TransferTxn& t, const ChunkSpec& c) {
  ASSERT_TRUE(t.AcquireCredit(c.chunk_id).ok());
  ASSERT_TRUE(t.Send(c.chunk_id, 10, 0).ok());
  ASSERT_TRUE(t.Receive(c.chunk_id, c.checksum).ok());
  ASSERT_TRUE(t.MarkDeviceVisible(c.chunk_id).ok());
}

// Delivers every chunk of a reserved `t`, validates it against its own plan (a failure is
// reported) and publishes it.
StatusOr<PublishedHandle> DeliverAndPublish(TransferTxn& t) {
  for (const auto& c : t.plan().chunks) Deliver(t, c);
  const Status v = t.Validate(t.plan().identity, t.plan().tensor_abi_sha256);
  if (!v.ok()) {
    ADD_FAILURE() << "validation: " << v.ToString();
    return v;
  }
  return t.Publish();
}

TEST(TransferTxn, HappyPathValidatePublishAdmitRelease) {
  Rig r;
  auto t = TransferTxn::Create(TwoLayerPlan(), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_TRUE(t->Reserve().ok());
  EXPECT_EQ(r.pool.unpublished(), 2u);
  for (const auto& c : t->plan().chunks) Deliver(*t, c);
  EXPECT_EQ(r.credits.in_flight(), 0u);
  ASSERT_TRUE(t->Validate(t->plan().identity, t->plan().tensor_abi_sha256).ok());
  auto h = t->Publish();
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(r.pool.decode_owned(), 2u);
  EXPECT_EQ(r.pool.unpublished(), 0u);
  // Decode reads the lifecycle handle: every layer at [0, 8), published in one step.
  auto snap = r.directory.cache().Read(h->cache_handle_id);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->committed_length, 8u);
  EXPECT_EQ(snap->generation, 1u);
  // Source release before decode admission is refused; after it, accepted.
  EXPECT_EQ(t->AcknowledgeSourceRelease(7).error(), ErrorCode::HANDOFF_SOURCE_RELEASE_EARLY);
  ASSERT_TRUE(t->AdmitDecode(*h).ok());
  EXPECT_EQ(t->AcknowledgeSourceRelease(6).error(), ErrorCode::HANDOFF_SOURCE_RELEASE_EARLY);
  EXPECT_TRUE(t->AcknowledgeSourceRelease(7).ok());
  EXPECT_EQ(t->Abort("late").error(), ErrorCode::HANDOFF_ABORT_PUBLISHED);
}

TEST(TransferTxn, CreditReturnsAtDeviceVisibleNotAtReceive) {
  Rig r;
  auto t = TransferTxn::Create(TwoLayerPlan(), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  ASSERT_TRUE(t->AcquireCredit("c0").ok());
  ASSERT_TRUE(t->AcquireCredit("c1").ok());
  EXPECT_EQ(t->AcquireCredit("c2").error(), ErrorCode::HANDOFF_CREDIT_WINDOW_EXCEEDED);
  EXPECT_EQ(t->chunk_state("c2"), ChunkState::kDeclared);  // refused acquisition changes nothing
  ASSERT_TRUE(t->Send("c0", 5, 5).ok());
  ASSERT_TRUE(t->Receive("c0", t->plan().chunks[0].checksum).ok());
  EXPECT_EQ(r.credits.in_flight(), 1024u) << "receive must not return credit";
  EXPECT_EQ(t->AcquireCredit("c2").error(), ErrorCode::HANDOFF_CREDIT_WINDOW_EXCEEDED);
  ASSERT_TRUE(t->MarkDeviceVisible("c0").ok());
  EXPECT_EQ(r.credits.in_flight(), 512u);
  EXPECT_TRUE(t->AcquireCredit("c2").ok());
}

TEST(TransferTxn, GatesAndIllegalChunkTransitions) {
  Rig r;
  auto t = TransferTxn::Create(TwoLayerPlan(), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->AcquireCredit("c0").error(),
            ErrorCode::HANDOFF_TXN_TRANSITION_INVALID);  // not reserved
  ASSERT_TRUE(t->Reserve().ok());
  EXPECT_EQ(t->Send("c0", 10, 0).error(), ErrorCode::HANDOFF_SEND_WITHOUT_CREDIT);
  ASSERT_TRUE(t->AcquireCredit("c0").ok());
  EXPECT_EQ(t->Send("c0", 9, 10).error(), ErrorCode::HANDOFF_PRODUCER_GATE);
  EXPECT_EQ(t->Receive("c0", t->plan().chunks[0].checksum).error(),
            ErrorCode::HANDOFF_CHUNK_TRANSITION_INVALID);
  ASSERT_TRUE(t->Send("c0", 10, 10).ok());
  EXPECT_EQ(t->MarkDeviceVisible("c0").error(), ErrorCode::HANDOFF_VISIBLE_BEFORE_RECEIVE);
  EXPECT_EQ(t->AcquireCredit("zz").error(), ErrorCode::HANDOFF_CHUNK_UNKNOWN);
  EXPECT_EQ(t->Validate(t->plan().identity, t->plan().tensor_abi_sha256).error(),
            ErrorCode::HANDOFF_CONSUMER_GATE);
  EXPECT_EQ(t->Publish().status().error(), ErrorCode::HANDOFF_PUBLISH_BEFORE_VALIDATE);
  EXPECT_EQ(r.directory.publications(), 0u);
}

TEST(TransferTxn, RetriesAreIdempotentAndDifferentBytesAreCorruption) {
  Rig r;
  auto t = TransferTxn::Create(TwoLayerPlan(), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  const auto& c = t->plan().chunks[0];
  Deliver(*t, c);
  EXPECT_TRUE(t->Send(c.chunk_id, 11, 0).ok());
  EXPECT_TRUE(t->Receive(c.chunk_id, c.checksum).ok());
  EXPECT_TRUE(t->MarkDeviceVisible(c.chunk_id).ok());
  EXPECT_EQ(t->retries(), 3u);
  EXPECT_EQ(r.credits.in_flight(), 0u) << "a retried DEVICE_VISIBLE must not return credit twice";
  EXPECT_EQ(t->Receive(c.chunk_id, Sha256Hex("other")).error(),
            ErrorCode::HANDOFF_DUPLICATE_CORRUPTION);
}

TEST(TransferTxn, ValidationChecksIdentityAbiAndChecksums) {
  Rig r;
  auto plan = TwoLayerPlan();
  auto t = TransferTxn::Create(plan, &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    ChunkSpec c = plan.chunks[i];
    if (i == 3) c.checksum = Sha256Hex("corrupt");
    Deliver(*t, c);
  }
  TransferIdentity other = plan.identity;
  other.destination_worker_epoch = 18;
  EXPECT_EQ(t->Validate(other, plan.tensor_abi_sha256).error(),
            ErrorCode::HANDOFF_IDENTITY_MISMATCH);
  EXPECT_EQ(t->Validate(plan.identity, Sha256Hex("x")).error(), ErrorCode::HANDOFF_ABI_MISMATCH);
  EXPECT_EQ(t->Validate(plan.identity, plan.tensor_abi_sha256).error(),
            ErrorCode::HANDOFF_CHECKSUM_MISMATCH);
  EXPECT_EQ(t->state(), TxnState::kTransferring);
}

TEST(TransferTxn, AbortFencesLateCompletionsAndReturnsEverything) {
  Rig r;
  auto t = TransferTxn::Create(TwoLayerPlan(), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  const auto& c0 = t->plan().chunks[0];
  ASSERT_TRUE(t->AcquireCredit("c0").ok());
  ASSERT_TRUE(t->Send("c0", 1, 0).ok());
  ASSERT_TRUE(t->AcquireCredit("c1").ok());
  ASSERT_TRUE(t->Abort("mid-transfer failure").ok());
  EXPECT_EQ(r.credits.in_flight(), 0u);
  EXPECT_EQ(r.pool.unpublished(), 0u);
  EXPECT_EQ(r.pool.free_blocks(), 4u);
  EXPECT_EQ(t->Receive("c0", c0.checksum).error(), ErrorCode::HANDOFF_LATE_COMPLETION);
  EXPECT_EQ(t->MarkDeviceVisible("c0").error(), ErrorCode::HANDOFF_LATE_COMPLETION);
  EXPECT_EQ(r.credits.in_flight(), 0u);
  EXPECT_TRUE(t->Abort("again").ok());
}

TEST(TransferTxn, RerouteSupersedesAndLateOldAttemptNeverReplacesNewer) {
  Rig r;
  auto old_txn = TransferTxn::Create(TwoLayerPlan(7, "x7"), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(old_txn.ok());
  ASSERT_TRUE(old_txn->Reserve().ok());
  for (const auto& c : old_txn->plan().chunks) Deliver(*old_txn, c);
  // Reroute: a newer attempt under generation 8 reserves before the old one validates.
  auto new_txn = TransferTxn::Create(TwoLayerPlan(8, "x8"), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(new_txn.ok());
  ASSERT_TRUE(new_txn->Reserve().ok());
  ASSERT_TRUE(old_txn->Validate(old_txn->plan().identity, old_txn->plan().tensor_abi_sha256).ok());
  EXPECT_EQ(old_txn->Publish().status().error(), ErrorCode::HANDOFF_STALE_GENERATION);
  EXPECT_EQ(old_txn->state(), TxnState::kAborted);
  auto h = DeliverAndPublish(*new_txn);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(r.directory.Lookup("req-1")->generation, 8u);
  // A third, older attempt can no longer even reserve.
  auto older = TransferTxn::Create(TwoLayerPlan(6, "x6"), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(older.ok());
  EXPECT_EQ(older->Reserve().error(), ErrorCode::HANDOFF_STALE_GENERATION);
  EXPECT_EQ(r.pool.unpublished(), 0u);
  EXPECT_EQ(r.pool.decode_owned(), 2u);
}

TEST(DecodeDirectory, RepublishingSameTransferIsIdempotentOtherBytesAreCorruption) {
  DecodeDirectory d(Abi());
  ASSERT_TRUE(d.ReserveGeneration("r", 3).ok());
  ASSERT_TRUE(d.OpenDestination("r", 3, "x", 0, 4).ok());
  // Publication goes through the lifecycle object: an incomplete append cannot publish.
  EXPECT_EQ(d.PublishIfGenerationCurrent("r", 3, "x", "digest-a").status().error(),
            ErrorCode::LIFECYCLE_LAYER_INCOMPLETE);
  ASSERT_TRUE(d.StageLayer("x", 0, 0, 4).ok());
  ASSERT_TRUE(d.StageLayer("x", 1, 0, 4).ok());
  auto a = d.PublishIfGenerationCurrent("r", 3, "x", "digest-a");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->handle.cache_handle_id, "r@g3");
  EXPECT_EQ(a->handle.cache_snapshot.committed_length, 4u);
  EXPECT_EQ(d.cache().Read("r@g3")->committed_length, 4u);
  auto again = d.PublishIfGenerationCurrent("r", 3, "x", "digest-a");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->idempotent_replay);
  EXPECT_EQ(again->handle, a->handle);
  EXPECT_EQ(d.PublishIfGenerationCurrent("r", 3, "x", "digest-b").status().error(),
            ErrorCode::HANDOFF_DUPLICATE_CORRUPTION);
  EXPECT_EQ(d.PublishIfGenerationCurrent("r", 3, "y", "digest-a").status().error(),
            ErrorCode::HANDOFF_STALE_GENERATION);
  EXPECT_EQ(d.publications(), 1u);
}

TEST(DecodeDirectory, SuffixOntoEmptyDestinationIsAnAppendHole) {
  DecodeDirectory d(Abi());
  ASSERT_TRUE(d.ReserveGeneration("r", 1).ok());
  EXPECT_EQ(d.OpenDestination("r", 1, "x", 4, 4).error(), ErrorCode::LIFECYCLE_APPEND_HOLE);
}

TEST(CheckPlan, ReportsDuplicateIdsBytesAndCoverage) {
  auto p = TwoLayerPlan();
  EXPECT_TRUE(CheckPlan(p).empty());
  auto dup = p;
  dup.chunks[1].chunk_id = "c0";
  EXPECT_EQ(CheckPlan(dup).at(0).code, ErrorCode::HANDOFF_CHUNK_ID_DUPLICATE);
  auto gap = p;
  gap.chunks.pop_back();
  EXPECT_EQ(CheckPlan(gap).at(0).code, ErrorCode::HANDOFF_COVERAGE_MISMATCH);
  auto huge = p;
  huge.bytes_per_token_layer = uint64_t{1} << 62;
  EXPECT_EQ(CheckPlan(huge).at(0).code, ErrorCode::INPUT_ARITHMETIC_OVERFLOW);
  // Regression (nested-field sweep, 2026-12-03): a chunk's token_count + 1 raised the bytes code
  // and a coverage code (its interval overlaps the next chunk's). Coverage is judged only over
  // chunks whose two sizes agree; a wrong start alone is a coverage issue.
  auto longer = p;
  longer.chunks[0].token_count += 1;
  ASSERT_EQ(CheckPlan(longer).size(), 1u);
  EXPECT_EQ(CheckPlan(longer).at(0).code, ErrorCode::HANDOFF_CHUNK_BYTES_MISMATCH);
  auto shifted = p;
  shifted.chunks[0].token_start += 1;
  ASSERT_FALSE(CheckPlan(shifted).empty());
  for (const auto& issue : CheckPlan(shifted))
    EXPECT_EQ(issue.code, ErrorCode::HANDOFF_COVERAGE_MISMATCH);
  ByteCreditWindow small(256);
  DestinationBlockPool pool(4);
  DecodeDirectory dir(Abi());
  EXPECT_EQ(TransferTxn::Create(p, &small, &pool, &dir).status().error(),
            ErrorCode::HANDOFF_CREDIT_WINDOW_TOO_SMALL);
}

// Regression: a plan declaring 2^53 layers made CheckPlan create one map entry per layer and ran
// the validator out of memory (found by HandoffProperties.ValidatorsSurviveRandomOneFieldMutations).
TEST(CheckPlan, RegressionHugeLayerCountIsReportedNotAllocated) {
  auto p = TwoLayerPlan();
  p.num_layers = uint64_t{1} << 53;
  auto issues = CheckPlan(p);
  ASSERT_EQ(issues.size(), 9u);  // layers 2..9 named, the rest counted
  for (const auto& i : issues) EXPECT_EQ(i.code, ErrorCode::HANDOFF_COVERAGE_MISMATCH);
  EXPECT_NE(issues.front().message.find("layer 2 "), std::string::npos);
  EXPECT_NE(issues.back().message.find("9007199254740982 more of 9007199254740992 layers"),
            std::string::npos);
}

// Regressions from an adversarial probe of the transfer plane (2026-12-04).

// A zero-byte handoff (M5.6 0x06: X = U \ V_D is empty; "a zero-byte handoff therefore does not
// imply zero handoff latency") was refused twice: a coverage gap "at tokens [4,4)" per layer and
// "a transfer plan has no chunks". It needs no chunk; it is reserved, validated and published,
// and the published handle is the fork of the visible prefix.
TEST(TransferTxn, RegressionAZeroByteHandoffOntoAWarmDestinationPublishesThePrefixFork) {
  Rig r;
  ASSERT_TRUE(r.directory.PublishVisiblePrefix("P", 8).ok());
  TransferPlan p = TwoLayerPlan();
  p.chunks.clear();
  p.token_start = 8;
  p.token_count = 0;
  p.reserved_blocks = 0;
  p.visible_prefix_handle = "P";
  EXPECT_TRUE(CheckPlan(p).empty());
  auto t = TransferTxn::Create(p, &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_TRUE(t->Reserve().ok());
  ASSERT_TRUE(t->Validate(p.identity, p.tensor_abi_sha256).ok());
  auto h = t->Publish();
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->cache_handle_id, "req-1@g7");
  EXPECT_EQ(h->cache_snapshot.committed_length, 8u);
  EXPECT_EQ(r.directory.cache().Read("req-1@g7")->committed_length, 8u);
  EXPECT_EQ(r.directory.publications(), 1u);
  // Without a visible prefix there is nothing to publish: one issue, at the prefix.
  TransferPlan cold = p;
  cold.visible_prefix_handle.clear();
  const auto issues = CheckPlan(cold);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].code, ErrorCode::HANDOFF_COVERAGE_MISMATCH);
  EXPECT_EQ(issues[0].field, "visible_prefix_handle");
}

// An aborted zero-byte attempt leaves nothing behind and a later one may publish.
TEST(TransferTxn, RegressionAnAbortedZeroByteAttemptReleasesItsDestination) {
  Rig r;
  ASSERT_TRUE(r.directory.PublishVisiblePrefix("P", 8).ok());
  TransferPlan p = TwoLayerPlan(7, "x7");
  p.chunks.clear();
  p.token_start = 8;
  p.token_count = 0;
  p.visible_prefix_handle = "P";
  auto t = TransferTxn::Create(p, &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  ASSERT_TRUE(t->Abort("reroute").ok());
  EXPECT_EQ(r.pool.unpublished(), 0u);
  TransferPlan next = p;
  next.transfer_id = "x8";
  next.identity.generation = 8;
  auto u = TransferTxn::Create(next, &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(u.ok());
  ASSERT_TRUE(u->Reserve().ok());
  ASSERT_TRUE(u->Validate(next.identity, next.tensor_abi_sha256).ok());
  ASSERT_TRUE(u->Publish().ok());
}

// One wrong size, one issue, at the member at fault: bytes_per_token_layer 0 passed the plan
// (its zero-byte chunks were refused later, at the credit acquisition), a token_start near 2^64
// raised two coverage issues ("tokens [18446744073709551614,?)"), and an empty chunk was said
// to lie outside the plan.
TEST(CheckPlan, RegressionEachWrongSizeIsOneIssueAtItsMember) {
  auto zero = TwoLayerPlan();
  zero.bytes_per_token_layer = 0;
  for (auto& c : zero.chunks) c.bytes = 0;
  auto issues = CheckPlan(zero);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].code, ErrorCode::INPUT_VALUE_OUT_OF_RANGE);
  EXPECT_EQ(issues[0].field, "bytes_per_token_layer");
  auto far = TwoLayerPlan();
  far.token_start = UINT64_MAX - 1;
  issues = CheckPlan(far);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].code, ErrorCode::INPUT_ARITHMETIC_OVERFLOW);
  EXPECT_EQ(issues[0].field, "token_count");
  auto empty = TwoLayerPlan();
  empty.chunks.push_back({"c4", 1, 8, 0, 0, Sha256Hex("c4")});
  issues = CheckPlan(empty);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].code, ErrorCode::HANDOFF_COVERAGE_MISMATCH);
  EXPECT_EQ(issues[0].chunk_index, 4);
  EXPECT_NE(issues[0].message.find("is empty (token_count 0)"), std::string::npos)
      << issues[0].message;
}

// Probe 51: a plan-level mistake was reported at every chunk or layer it touched: a wrong
// bytes_per_token_layer once per chunk, a token_count one too many once per layer. Each is one
// issue at the plan's member now; a mistake of one chunk stays at that chunk.
TEST(CheckPlan, RegressionAPlanLevelMistakeIsOneIssue) {
  auto factor = TwoLayerPlan();
  factor.bytes_per_token_layer += 1;
  auto issues = CheckPlan(factor);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].code, ErrorCode::HANDOFF_CHUNK_BYTES_MISMATCH);
  EXPECT_EQ(issues[0].field, "bytes_per_token_layer");
  auto count = TwoLayerPlan();
  count.token_count += 1;
  issues = CheckPlan(count);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].code, ErrorCode::HANDOFF_COVERAGE_MISMATCH);
  EXPECT_EQ(issues[0].field, "token_count");
  auto one = TwoLayerPlan();
  one.chunks[1].bytes += 1;
  issues = CheckPlan(one);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].chunk_index, 1);
  // Probe 85: every layer's chunks lying outside the plan's tokens alike was one issue per chunk.
  // A warm plan whose token_start moved (the chunks cover [4, 12), the plan says [0, 8)) ...
  auto shifted = TwoLayerPlan();
  shifted.visible_prefix_handle = "prefix";
  for (auto& c : shifted.chunks) c.token_start += 4;
  issues = CheckPlan(shifted);
  ASSERT_EQ(issues.size(), 1u) << issues[0].message;
  EXPECT_EQ(issues[0].code, ErrorCode::HANDOFF_COVERAGE_MISMATCH);
  EXPECT_EQ(issues[0].field, "token_start");
  EXPECT_EQ(issues[0].chunk_index, -1);
  // ... and a token_count one chunk short (each layer's last chunk lies beyond it).
  auto short_count = TwoLayerPlan();
  short_count.token_count = 4;
  issues = CheckPlan(short_count);
  ASSERT_EQ(issues.size(), 1u) << issues[0].message;
  EXPECT_EQ(issues[0].field, "token_count");
  // One layer's chunk outside is that chunk's issue.
  auto one_outside = TwoLayerPlan();
  one_outside.chunks[3].token_start = 8;
  issues = CheckPlan(one_outside);
  ASSERT_FALSE(issues.empty());
  EXPECT_EQ(issues[0].chunk_index, 3);
}

// Mutation audit 4: chunks outside the plan's tokens are one plan-level issue only when they say
// so unambiguously: two or more layers, every layer's chunks alike, no other chunk issue.
// Otherwise each chunk outside is its own issue (chunk_index set), as before probe 85.
TEST(CheckPlan, RegressionChunksOutsideThePlanAreOnePlanIssueOnlyWhenEveryLayerAgrees) {
  auto describe = [](const std::vector<PlanIssue>& issues) {
    std::string out = std::to_string(issues.size()) + " issues";
    for (const PlanIssue& i : issues)
      out += "; " + std::to_string(i.chunk_index) + ": " + i.message;
    return out;
  };
  // Reported at the chunks: some issue names a chunk, none is the plan-level "every layer" one.
  auto per_chunk = [](const std::vector<PlanIssue>& issues) {
    bool chunk = false;
    for (const PlanIssue& i : issues) {
      if (i.message.find("in every layer") != std::string::npos) return false;
      chunk |= i.chunk_index >= 0;
    }
    return chunk;
  };
  // Every layer shifted alike, but another chunk is wrong too (a layer the plan lacks).
  auto other = TwoLayerPlan();
  other.visible_prefix_handle = "prefix";
  for (auto& c : other.chunks) c.token_start += 4;
  other.chunks.push_back({"c4", 2, 4, 4, 512, Sha256Hex("x7c4")});
  auto issues = CheckPlan(other);
  EXPECT_TRUE(per_chunk(issues)) << describe(issues);
  EXPECT_GE(issues.size(), 2u);
  // One layer: nothing tells its chunks from the plan's tokens.
  auto one_layer = TwoLayerPlan();
  one_layer.num_layers = 1;
  one_layer.reserved_blocks = 1;
  one_layer.visible_prefix_handle = "prefix";
  std::erase_if(one_layer.chunks, [](const ChunkSpec& c) { return c.layer != 0; });
  for (auto& c : one_layer.chunks) c.token_start += 4;
  issues = CheckPlan(one_layer);
  EXPECT_TRUE(per_chunk(issues)) << describe(issues);
  // Three layers, two of them shifted alike: the third agrees with the plan.
  auto two_of_three = TwoLayerPlan();
  two_of_three.num_layers = 3;
  two_of_three.reserved_blocks = 3;
  two_of_three.visible_prefix_handle = "prefix";
  for (auto& c : two_of_three.chunks) c.token_start += 4;
  for (uint64_t h = 0; h < 2; ++h) {
    const std::string id = "c" + std::to_string(4 + h);
    two_of_three.chunks.push_back({id, 2, 4 * h, 4, 512, Sha256Hex("x7" + id)});
  }
  issues = CheckPlan(two_of_three);
  EXPECT_TRUE(per_chunk(issues)) << describe(issues);
  // Both layers outside, but not alike (layer 0 moved by 4 tokens, layer 1 by 8).
  auto unlike = TwoLayerPlan();
  unlike.visible_prefix_handle = "prefix";
  for (auto& c : unlike.chunks) c.token_start += c.layer == 0 ? 4 : 8;
  issues = CheckPlan(unlike);
  EXPECT_TRUE(per_chunk(issues)) << describe(issues);
  // The field blamed when they do agree: token_start when the chunks start before it, even where
  // their span is not token_count (the plan [2, 12) over chunks [0, 8))...
  auto before = TwoLayerPlan();
  before.visible_prefix_handle = "prefix";
  before.token_start = 2;
  before.token_count = 10;
  issues = CheckPlan(before);
  ASSERT_EQ(issues.size(), 1u) << describe(issues);
  EXPECT_EQ(issues[0].field, "token_start") << describe(issues);
  // ... and token_count when they start within the plan but a layer's chunks span other than
  // token_count tokens (the plan [0, 8) over chunks [4, 8) and [8, 16)).
  auto beyond = TwoLayerPlan();
  beyond.visible_prefix_handle = "prefix";
  for (auto& c : beyond.chunks) {
    c.token_start += 4;
    if (c.token_start == 8) {
      c.token_count = 8;
      c.bytes = 8 * beyond.bytes_per_token_layer;
    }
  }
  issues = CheckPlan(beyond);
  ASSERT_EQ(issues.size(), 1u) << describe(issues);
  EXPECT_EQ(issues[0].field, "token_count") << describe(issues);
}

// Probe 10 (2026-12-04): every chunk event scanned the whole plan (the layer-complete check in
// MarkDeviceVisible, a settled transaction's chunk lookup, the trace checker's all-visible
// check), so a plan of C chunks cost C^2: 10,000 chunks took 15.8 s in `kvconform check`.
// With 300,000 chunks that scan is ~10^11 steps (far beyond the test timeout); the indexed
// lookups and per-layer counts replay it in O(C log C).
// Regression (probe 24, S1): a plan that moves tokens with reserved_blocks 0 passed; the
// reservation's size is otherwise undecidable (the runtime's block unit is not stated), but an
// empty one holds none of the K/V. A zero-byte plan (no tokens to move) may reserve nothing.
TEST(CheckPlan, RegressionAnEmptyReservationForTokensToMove) {
  TransferPlan p = TwoLayerPlan();
  ASSERT_TRUE(CheckPlan(p).empty());
  p.reserved_blocks = 0;
  const auto issues = CheckPlan(p);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].code, ErrorCode::HANDOFF_RESERVATION_TOO_SMALL);
  EXPECT_EQ(issues[0].field, "reserved_blocks");
  TransferPlan zero_byte = p;
  zero_byte.token_start = zero_byte.token_start + zero_byte.token_count;
  zero_byte.token_count = 0;
  zero_byte.chunks.clear();
  zero_byte.visible_prefix_handle = "prefix";
  EXPECT_TRUE(CheckPlan(zero_byte).empty());
}

TEST(TransferTxn, RegressionAPlanOfManyChunksIsNotQuadratic) {
  constexpr uint64_t kPerLayer = 150'000;
  TransferPlan p;
  p.transfer_id = "big";
  p.identity = {"tenant-a", "req-1", 7, 1, 11, 19, "resv-1"};
  p.tensor_abi_sha256 = Sha256Hex("abi");
  p.num_layers = 2;
  p.token_count = kPerLayer;
  p.bytes_per_token_layer = 1;
  p.reserved_blocks = 1;
  for (uint64_t i = 0; i < kPerLayer; ++i)  // interleaved layers, one token per chunk
    for (uint64_t l = 0; l < 2; ++l) {
      const std::string id = std::to_string(l) + ":" + std::to_string(i);
      p.chunks.push_back({id, l, i, 1, 1, "k" + id});
    }
  Rig r;
  auto t = TransferTxn::Create(std::move(p), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_TRUE(t->Reserve().ok());
  const auto& chunks = t->plan().chunks;
  for (size_t i = 0; i + 1 < chunks.size(); ++i) Deliver(*t, chunks[i]);
  EXPECT_FALSE(t->all_device_visible());  // the last chunk (layer 1) is still DECLARED
  EXPECT_EQ(t->chunk_state(chunks.back().chunk_id), ChunkState::kDeclared);
  Deliver(*t, chunks.back());
  EXPECT_TRUE(t->all_device_visible());
  ASSERT_TRUE(t->Validate(t->plan().identity, t->plan().tensor_abi_sha256).ok());
  auto h = t->Publish();  // every layer was staged, once, by its last visible chunk
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(r.directory.cache().Read(h->cache_handle_id)->committed_length, kPerLayer);
  t->Settle();
  for (const auto& c : chunks) {  // retries of a settled transaction, judged against the plan
    ASSERT_TRUE(t->Send(c.chunk_id, 10, 0).ok());
    ASSERT_TRUE(t->Receive(c.chunk_id, c.checksum).ok());
  }
  EXPECT_EQ(t->retries(), 2 * chunks.size());
  EXPECT_EQ(t->chunk_state("1:149999"), ChunkState::kDeviceVisible);
  EXPECT_EQ(t->FindSpec("1:149999"), &chunks.back());
  EXPECT_EQ(t->chunk_state("2:0"), std::nullopt);
  EXPECT_EQ(t->Send("2:0", 10, 0).error(), ErrorCode::HANDOFF_CHUNK_UNKNOWN);
}

// Probe 11 (2026-12-04): a published generation's handle admitted decode after a newer generation
// of the request was reserved or published. Only the current publication admits decode (0x06D).
TEST(TransferTxn, RegressionASupersededPublicationAdmitsNoDecode) {
  Rig r;
  ByteCreditWindow credits{1024};
  DestinationBlockPool pool{4};
  auto old = TransferTxn::Create(TwoLayerPlan(7, "x7"), &r.credits, &r.pool, &r.directory);
  auto next = TransferTxn::Create(TwoLayerPlan(8, "x8"), &credits, &pool, &r.directory);
  ASSERT_TRUE(old.ok() && next.ok());
  ASSERT_TRUE(old->Reserve().ok());
  auto h7 = DeliverAndPublish(*old);
  ASSERT_TRUE(h7.ok()) << h7.status().ToString();
  ASSERT_TRUE(next->Reserve().ok());  // the reroute: generation 8 is now current
  EXPECT_EQ(old->AdmitDecode(*h7).error(), ErrorCode::HANDOFF_DECODE_ADMIT_UNPUBLISHED);
  auto h8 = DeliverAndPublish(*next);
  ASSERT_TRUE(h8.ok()) << h8.status().ToString();
  const Status late = old->AdmitDecode(*h7);
  EXPECT_EQ(late.error(), ErrorCode::HANDOFF_DECODE_ADMIT_UNPUBLISHED);
  EXPECT_NE(late.message().find("req-1@g8"), std::string::npos) << late.message();
  EXPECT_FALSE(old->decode_admitted());
  EXPECT_TRUE(next->AdmitDecode(*h8).ok());
}

// Probe 11 (2026-12-04): decode-owned blocks never went back to the destination pool. The decode
// side's release (M5.6 0x06B: "until the ordinary M5.1/M5.3 lifecycle releases them") returns
// them, releases the directory's handle and withdraws the publication; once, PUBLISHED only,
// under the plan's generation.
TEST(TransferTxn, RegressionDecodeReleaseReturnsTheBlocksToThePool) {
  Rig r;
  DestinationBlockPool pool{2};  // exactly one reservation
  auto first = TransferTxn::Create(TwoLayerPlan(7, "x7"), &r.credits, &pool, &r.directory);
  auto second = TransferTxn::Create(TwoLayerPlan(8, "x8"), &r.credits, &pool, &r.directory);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->ReleaseDecode(7).error(), ErrorCode::HANDOFF_DECODE_RELEASE_INVALID)
      << "PLANNED: nothing published";
  ASSERT_TRUE(first->Reserve().ok());
  auto h7 = DeliverAndPublish(*first);
  ASSERT_TRUE(h7.ok()) << h7.status().ToString();
  ASSERT_TRUE(first->AdmitDecode(*h7).ok());
  EXPECT_EQ(pool.decode_owned(), 2u);
  EXPECT_EQ(second->Reserve().error(), ErrorCode::HANDOFF_RESERVATION_TOO_SMALL)
      << "the published blocks are still decode-owned";
  EXPECT_EQ(first->ReleaseDecode(8).error(), ErrorCode::HANDOFF_DECODE_RELEASE_INVALID)
      << "another generation";
  EXPECT_EQ(pool.decode_owned(), 2u) << "a refused release changes nothing";
  ASSERT_TRUE(first->ReleaseDecode(7).ok());
  EXPECT_TRUE(first->decode_released());
  EXPECT_EQ(pool.decode_owned(), 0u);
  EXPECT_EQ(pool.free_blocks(), 2u);
  EXPECT_EQ(r.directory.Lookup("req-1"), nullptr) << "the publication is withdrawn";
  const lifecycle::HandleRecord* rec = r.directory.cache().Find(h7->cache_handle_id);
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->current.phase, lifecycle::Phase::kReleased);
  EXPECT_EQ(first->ReleaseDecode(7).error(), ErrorCode::HANDOFF_DECODE_RELEASE_INVALID)
      << "released twice";
  EXPECT_EQ(first->AdmitDecode(*h7).error(), ErrorCode::HANDOFF_DECODE_ADMIT_UNPUBLISHED);
  auto again = first->Publish();
  ASSERT_TRUE(again.ok()) << "a retried publication stays idempotent";
  EXPECT_EQ(*again, *h7);
  EXPECT_EQ(pool.decode_owned(), 0u) << "and publishes nothing more";
  // The freed blocks take the next attempt.
  ASSERT_TRUE(second->Reserve().ok());
  EXPECT_EQ(pool.unpublished(), 2u);
}

// Probe 15 (2026-12-04): a reservation refused while opening the destination (then a cold plan
// starting past token 0, which CheckPlan now refuses at the plan; here a transfer id that is
// already another attempt's append transaction) kept the request's new generation reserved and
// left an empty destination handle behind, so the request's publication counted as superseded
// and a later attempt under that generation found the handle. A refused reservation changes
// nothing.
TEST(TransferTxn, RegressionARefusedReservationChangesNothing) {
  Rig r;
  auto first = TransferTxn::Create(TwoLayerPlan(7, "x7"), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->Reserve().ok());
  auto h7 = DeliverAndPublish(*first);
  ASSERT_TRUE(h7.ok());
  const size_t handles = r.directory.cache().handle_count();
  // Generation 8 under generation 7's transfer id: the destination's append on the new handle
  // req-1@g8 is a different call under an existing transaction id.
  TransferPlan cold = TwoLayerPlan(8, "x7");
  auto refused = TransferTxn::Create(cold, &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(refused->Reserve().error(), ErrorCode::LIFECYCLE_RETRY_CONFLICT);
  EXPECT_EQ(r.directory.CurrentGeneration("req-1"), 7u) << "the fence is put back";
  EXPECT_EQ(r.directory.cache().handle_count(), handles) << "no empty handle left behind";
  EXPECT_EQ(r.pool.unpublished(), 0u);
  EXPECT_TRUE(first->AdmitDecode(*h7).ok()) << "generation 7 is still the current publication";
}

// A mutation audit of the handoff state machines (2026-12-05, helper 96: 110 single-point
// mutants of reference/handoff/; 30 survived reference_tests, conformance_tests and the suite,
// 23 of them real gaps). Each test below fails under the mutant its comment names.
// Mutation audit 2026-12-05 (M6, transfer_txn.cc CheckPlan: `s != at` -> `s > at`): a layer whose
// chunks overlap without leaving a gap is not "covered exactly once" (0x06D: complete layer/token
// coverage).
TEST(TransferTxnTest, OverlappingChunksWithoutAGapAreACoverageMismatch) {
  TransferPlan p = TwoLayerPlan();
  p.chunks.push_back({"c4", 0, 0, 4, 512, Sha256Hex("x7c4")});  // layer 0 tokens [0,4) again
  const auto issues = CheckPlan(p);
  ASSERT_FALSE(issues.empty());
  EXPECT_EQ(issues[0].code, ErrorCode::HANDOFF_COVERAGE_MISMATCH);
  Rig r;
  EXPECT_EQ(TransferTxn::Create(p, &r.credits, &r.pool, &r.directory).status().error(),
            ErrorCode::HANDOFF_COVERAGE_MISMATCH);
}

// Mutation audit 2026-12-05 (M3, CheckPlan: `c.layer >= num_layers` -> `>`): a chunk naming layer
// == num_layers, with the layer it displaces absent, passed the plan (the uncovered-layer count saw
// 2 layers with chunks).
TEST(TransferTxnTest, AChunkAtLayerNumLayersIsOutOfRange) {
  TransferPlan p = TwoLayerPlan();
  p.chunks[2].layer = 2;  // layer 1's chunks move to "layer 2" of a 2-layer plan
  p.chunks[3].layer = 2;
  const auto issues = CheckPlan(p);
  ASSERT_FALSE(issues.empty());
  EXPECT_EQ(issues[0].code, ErrorCode::HANDOFF_COVERAGE_MISMATCH);
  EXPECT_EQ(issues[0].chunk_index, 2);
}

// Mutation audit 2026-12-05 (M20, Send: RejectIfFenced dropped): a send after the abort is a late
// operation, refused; the mutant accepted it and moved the chunk to SENT after the transaction was
// ABORTED.
TEST(TransferTxnTest, SendAfterAbortIsALateCompletion) {
  Rig r;
  auto t = TransferTxn::Create(TwoLayerPlan(), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  ASSERT_TRUE(t->AcquireCredit("c0").ok());
  ASSERT_TRUE(t->Abort("route lost").ok());
  EXPECT_EQ(t->Send("c0", 10, 0).error(), ErrorCode::HANDOFF_LATE_COMPLETION);
  EXPECT_EQ(t->chunk_state("c0"), ChunkState::kCreditAcquired);
}

// Mutation audit 2026-12-05 (M13, AcquireCredit: RejectIfFenced dropped): an acquisition after
// abort is the late-completion code, not a transition code (the mutant answered
// HANDOFF_TXN_TRANSITION_INVALID).
TEST(TransferTxnTest, CreditAcquisitionAfterAbortIsALateCompletion) {
  Rig r;
  auto t = TransferTxn::Create(TwoLayerPlan(), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  ASSERT_TRUE(t->Abort("route lost").ok());
  EXPECT_EQ(t->AcquireCredit("c0").error(), ErrorCode::HANDOFF_LATE_COMPLETION);
  EXPECT_EQ(r.credits.in_flight(), 0u);
}

// Mutation audit 2026-12-05 (M11, Reserve: the PLANNED check dropped): a second reservation is an
// illegal request transition (the mutant reserved the pool again and answered
// HANDOFF_STALE_GENERATION).
TEST(TransferTxnTest, ReservingTwiceIsATransitionError) {
  Rig r;
  auto t = TransferTxn::Create(TwoLayerPlan(), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  EXPECT_EQ(t->Reserve().error(), ErrorCode::HANDOFF_TXN_TRANSITION_INVALID);
  EXPECT_EQ(t->state(), TxnState::kReserved);
  EXPECT_EQ(r.pool.unpublished(), 2u);
}

// Mutation audit 2026-12-05 (M34, Validate ignores source_worker_epoch): every member of the
// identity fence is checked; the existing test varies only destination_worker_epoch.
TEST(TransferTxnTest, ValidationChecksTheSourceWorkerEpoch) {
  Rig r;
  auto t = TransferTxn::Create(TwoLayerPlan(), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  for (const auto& c : t->plan().chunks) Deliver(*t, c);
  TransferIdentity other = t->plan().identity;
  other.source_worker_epoch += 1;
  const Status s = t->Validate(other, t->plan().tensor_abi_sha256);
  EXPECT_EQ(s.error(), ErrorCode::HANDOFF_IDENTITY_MISMATCH);
  EXPECT_EQ(t->state(), TxnState::kTransferring);
}

// Mutation audit 2026-12-05 (M57, Abort: the ABORTED early return dropped): a repeated abort is
// idempotent: it neither needs a reason again nor replaces the recorded one (0x06E records the
// terminal failure once).
TEST(TransferTxnTest, ARepeatedAbortIsIdempotent) {
  Rig r;
  auto t = TransferTxn::Create(TwoLayerPlan(), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  ASSERT_TRUE(t->Abort("decode worker lost").ok());
  EXPECT_TRUE(t->Abort("").ok()) << "a repeated abort changes nothing, reason or not";
  EXPECT_TRUE(t->Abort("second reason").ok());
  const Status late = t->Receive("c0", t->plan().chunks[0].checksum);
  EXPECT_EQ(late.error(), ErrorCode::HANDOFF_LATE_COMPLETION);
  EXPECT_NE(late.message().find("decode worker lost"), std::string::npos) << late.message();
}

// Mutation audit 2026-12-05 (M53, ReleaseHeld: CancelDestination skipped): abort cancels the
// attempt's destination append transaction (0x06E: cancel outstanding work, release unpublished
// destination state); the mutant left it OPEN in the destination's lifecycle object.
TEST(TransferTxnTest, AbortCancelsTheDestinationAppend) {
  Rig r;
  auto t = TransferTxn::Create(TwoLayerPlan(), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  const lifecycle::AppendTxn* open = r.directory.cache().FindTxn("x7");
  ASSERT_NE(open, nullptr);
  EXPECT_EQ(open->state, lifecycle::TxnState::kOpen);
  ASSERT_TRUE(t->Abort("route lost").ok());
  const lifecycle::AppendTxn* after = r.directory.cache().FindTxn("x7");
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->state, lifecycle::TxnState::kAborted);
}

// Mutation audit 2026-12-05 (M46, AdmitDecode: the directory's live-handle check dropped): once the
// decode side released the publication in the directory, its handle admits no decode (0x06D: admit
// only from the published handle); the mutant admitted it because the transaction object was not
// told.
TEST(TransferTxnTest, AHandleReleasedInTheDirectoryAdmitsNoDecode) {
  Rig r;
  auto t = TransferTxn::Create(TwoLayerPlan(), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  for (const auto& c : t->plan().chunks) Deliver(*t, c);
  ASSERT_TRUE(t->Validate(t->plan().identity, t->plan().tensor_abi_sha256).ok());
  auto h = t->Publish();
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(r.directory.ReleasePublished(*h).ok());
  ASSERT_EQ(r.directory.Lookup("req-1"), nullptr);
  EXPECT_EQ(t->AdmitDecode(*h).error(), ErrorCode::HANDOFF_DECODE_ADMIT_UNPUBLISHED);
  EXPECT_FALSE(t->decode_admitted());
}

// Mutation audit 2026-12-05 (M4, CheckPlan: `c.token_start < plan.token_start` dropped): a chunk
// starting before a warm plan's first token is reported at that chunk (the mutant still raised a
// coverage code, but at layer level, chunk_index -1: "overlap at token 4").
TEST(TransferTxnTest, AChunkBeforeTheWarmPlanStartIsReportedAtTheChunk) {
  TransferPlan p = TwoLayerPlan();
  p.visible_prefix_handle = "P";
  p.token_start = 8;
  for (auto& c : p.chunks) c.token_start += 8;
  ASSERT_TRUE(CheckPlan(p).empty());
  p.chunks[0].token_start = 4;  // layer 0: [4,8) [12,16)
  const auto issues = CheckPlan(p);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].code, ErrorCode::HANDOFF_COVERAGE_MISMATCH);
  EXPECT_EQ(issues[0].chunk_index, 0);
}

// Mutation audit 2026-12-05 (M5, CheckPlan: `*c_end > *end` -> `> *end + 1`): a chunk ending one
// token past the plan is reported at that chunk as outside the plan's tokens.
TEST(TransferTxnTest, AChunkEndingOnePastThePlanIsReportedAtTheChunk) {
  TransferPlan p = TwoLayerPlan();
  p.chunks[1].token_start = 5;  // layer 0: [0,4) [5,9) of a plan [0,8)
  const auto issues = CheckPlan(p);
  ASSERT_FALSE(issues.empty());
  EXPECT_EQ(issues[0].code, ErrorCode::HANDOFF_COVERAGE_MISMATCH);
  EXPECT_EQ(issues[0].chunk_index, 1);
}

// Mutation audit 2026-12-05 (M136, OpenDestinationOnto: a refused opening keeps its fork): the warm
// twin of probe 15's regression (RegressionARefusedReservationChangesNothing covers only the cold
// OpenDestination). Generation 8 reusing generation 7's transfer id is refused at the append, and
// the fork req-1@g8 of the visible prefix it created must go with it; the mutant left it behind.
TEST(TransferTxnTest, ARefusedWarmReservationLeavesNoForkBehind) {
  Rig r;
  ASSERT_TRUE(r.directory.PublishVisiblePrefix("P", 8).ok());
  auto warm = [](uint64_t generation) {
    TransferPlan p = TwoLayerPlan(generation, "x7");  // the same transfer id for both
    p.visible_prefix_handle = "P";
    p.token_start = 8;
    for (auto& c : p.chunks) c.token_start += 8;
    return p;
  };
  auto first = TransferTxn::Create(warm(7), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->Reserve().ok());
  for (const auto& c : first->plan().chunks) Deliver(*first, c);
  ASSERT_TRUE(first->Validate(first->plan().identity, first->plan().tensor_abi_sha256).ok());
  ASSERT_TRUE(first->Publish().ok());
  const size_t handles = r.directory.cache().handle_count();
  auto refused = TransferTxn::Create(warm(8), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->Reserve().error(), ErrorCode::LIFECYCLE_RETRY_CONFLICT);
  EXPECT_EQ(r.directory.cache().handle_count(), handles) << "no fork left behind";
  EXPECT_EQ(r.directory.cache().Find("req-1@g8"), nullptr);
  EXPECT_EQ(r.directory.CurrentGeneration("req-1"), 7u);
  EXPECT_EQ(r.pool.unpublished(), 0u);
}

// Regression: the transfer transaction and the decode directory quoted chunk, transfer and
// request ids and checksums whole, so a 10 KB id made a 10 KB status for a library caller (the
// CLI's reports clip at 4096 bytes since 2026-12-07). Each is clipped at 80 bytes and counted.
TEST(TransferTxn, RegressionALongIdIsClippedInEveryMessage) {
  const std::string long_id(10000, 'i');
  const auto bounded = [](const std::string& message) {
    EXPECT_LT(message.size(), 600u) << message.substr(0, 200);
    EXPECT_NE(message.find("(10000 bytes)"), std::string::npos) << message.substr(0, 200);
  };
  TransferPlan dup = TwoLayerPlan();
  dup.chunks[0].chunk_id = long_id;
  dup.chunks[1].chunk_id = long_id;
  ASSERT_FALSE(CheckPlan(dup).empty());
  EXPECT_EQ(CheckPlan(dup).at(0).code, ErrorCode::HANDOFF_CHUNK_ID_DUPLICATE);
  bounded(CheckPlan(dup).at(0).message);
  TransferPlan reserved = TwoLayerPlan(7, std::string(DecodeDirectory::kPrefixTxnPrefix) + long_id);
  ASSERT_FALSE(CheckPlan(reserved).empty());
  EXPECT_LT(CheckPlan(reserved).at(0).message.size(), 600u);
  EXPECT_NE(CheckPlan(reserved).at(0).message.find("(10015 bytes)"), std::string::npos);

  Rig r;
  TransferPlan p = TwoLayerPlan(7, long_id);
  p.chunks[0].chunk_id = long_id;
  auto t = TransferTxn::Create(p, &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok()) << t.status().ToString().substr(0, 200);
  ASSERT_TRUE(t->Reserve().ok());
  const Status unknown = t->AcquireCredit(std::string(10000, 'u'));
  EXPECT_EQ(unknown.error(), ErrorCode::HANDOFF_CHUNK_UNKNOWN);
  bounded(unknown.message());
  const Status early = t->Send(long_id, 10, 0);
  EXPECT_EQ(early.error(), ErrorCode::HANDOFF_SEND_WITHOUT_CREDIT);
  bounded(early.message());
  const Status publish = t->Publish().status();
  EXPECT_EQ(publish.error(), ErrorCode::HANDOFF_PUBLISH_BEFORE_VALIDATE);
  bounded(publish.message());

  DecodeDirectory d(Abi());
  ASSERT_TRUE(d.ReserveGeneration(long_id, 2).ok());
  const Status stale = d.ReserveGeneration(long_id, 1);
  EXPECT_EQ(stale.error(), ErrorCode::HANDOFF_STALE_GENERATION);
  bounded(stale.message());
}

}  // namespace
}  // namespace kvc::handoff
