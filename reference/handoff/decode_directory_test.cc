// Tests of suffix transfer onto a warm destination: DecodeDirectory::PublishVisiblePrefix and
// OpenDestinationOnto, driven through TransferTxn (transfer set X = U \ V_D, M5.6 0x01A, 0x06).
#include "reference/handoff/decode_directory.h"

#include <gtest/gtest.h>

#include "reference/base/canonical_json.h"
#include "reference/handoff/transfer_txn.h"

namespace kvc::handoff {
namespace {

lifecycle::CacheAbi Abi() { return {Sha256Hex("abi"), 2, "post_rope"}; }

// Two layers, tokens [start, start + count) in one chunk per layer; 64 B per token-layer.
TransferPlan SuffixPlan(uint64_t start, uint64_t count, std::string prefix_handle) {
  TransferPlan p;
  p.transfer_id = "x7";
  p.identity = {"tenant-a", "req-1", 7, 1, 11, 19, "resv-1"};
  p.tensor_abi_sha256 = Sha256Hex("abi");
  p.num_layers = 2;
  p.token_start = start;
  p.token_count = count;
  p.bytes_per_token_layer = 64;
  p.reserved_blocks = 2;
  for (uint64_t l = 0; l < 2; ++l)
    p.chunks.push_back({"L" + std::to_string(l), l, start, count, count * 64,
                        Sha256Hex("chunk" + std::to_string(l))});
  p.visible_prefix_handle = std::move(prefix_handle);
  return p;
}

struct Rig {
  ByteCreditWindow credits{4096};
  DestinationBlockPool pool{8};
  DecodeDirectory directory{Abi()};
};

void DeliverAll(TransferTxn& t) {
  for (const auto& c : t.plan().chunks) {
    ASSERT_TRUE(t.AcquireCredit(c.chunk_id).ok());
    ASSERT_TRUE(t.Send(c.chunk_id, 1, 0).ok());
    ASSERT_TRUE(t.Receive(c.chunk_id, c.checksum).ok());
    ASSERT_TRUE(t.MarkDeviceVisible(c.chunk_id).ok());
  }
}

// The seed's eight-block prompt with D already seeing b0 (4 tokens per block): only
// b1..b7 = tokens [4, 32) move, and publication makes the complete [0, 32) visible.
TEST(WarmDestination, SuffixTransferPublishesExactlyTheMissingInterval) {
  Rig r;
  ASSERT_TRUE(r.directory.PublishVisiblePrefix("prefix:b0", 4).ok());
  auto t = TransferTxn::Create(SuffixPlan(4, 28, "prefix:b0"), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_TRUE(t->Reserve().ok());
  uint64_t moved = 0;
  for (const auto& c : t->plan().chunks) moved += c.bytes;
  EXPECT_EQ(moved, 2u * 28u * 64u);  // |X| tokens only, every layer
  DeliverAll(*t);
  ASSERT_TRUE(t->Validate(t->plan().identity, Sha256Hex("abi")).ok());
  auto h = t->Publish();
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->cache_snapshot.committed_length, 32u);
  auto snap = r.directory.cache().Read(h->cache_handle_id);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->committed_length, 32u);
  // The visible prefix itself is untouched (the attempt forked it).
  auto prefix = r.directory.cache().Read("prefix:b0");
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(prefix->committed_length, 4u);
  EXPECT_TRUE(t->AdmitDecode(*h).ok());
}

// Coverage is checked against X: a transfer that starts before or after the visible prefix
// ends is refused at reservation and returns its blocks.
TEST(WarmDestination, TransferSetMustStartWhereTheVisiblePrefixEnds) {
  for (uint64_t start : {0u, 3u, 5u}) {
    Rig r;
    ASSERT_TRUE(r.directory.PublishVisiblePrefix("prefix:b0", 4).ok());
    auto t = TransferTxn::Create(SuffixPlan(start, 32 - start, "prefix:b0"), &r.credits, &r.pool,
                                 &r.directory);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->Reserve().error(), ErrorCode::HANDOFF_COVERAGE_MISMATCH) << start;
    EXPECT_EQ(r.pool.unpublished(), 0u);
    EXPECT_EQ(t->state(), TxnState::kPlanned);
  }
}

// Without a visible prefix a suffix is refused at its plan: a cold destination holds nothing, so
// X = U \ V_D starts at token 0 (before 2026-12-04 the plan was accepted and its reservation
// refused as LIFECYCLE_APPEND_HOLE, one event after the root cause). A visible prefix that does
// not exist is an unknown handle at the reservation (prefixes may be declared after the plan).
TEST(WarmDestination, ColdSuffixIsRefusedAtItsPlanAndUnknownPrefixAtItsReservation) {
  Rig r;
  auto cold = TransferTxn::Create(SuffixPlan(4, 28, ""), &r.credits, &r.pool, &r.directory);
  EXPECT_EQ(cold.status().error(), ErrorCode::HANDOFF_COVERAGE_MISMATCH);
  Rig r2;
  auto missing =
      TransferTxn::Create(SuffixPlan(4, 28, "prefix:none"), &r2.credits, &r2.pool, &r2.directory);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->Reserve().error(), ErrorCode::LIFECYCLE_UNKNOWN_HANDLE);
}

// Abort after a warm reservation drops the staged suffix and returns every block and credit;
// the prefix stays readable.
TEST(WarmDestination, AbortReturnsEverythingAndKeepsThePrefix) {
  Rig r;
  ASSERT_TRUE(r.directory.PublishVisiblePrefix("prefix:b0", 4).ok());
  auto t = TransferTxn::Create(SuffixPlan(4, 28, "prefix:b0"), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  ASSERT_TRUE(t->AcquireCredit("L0").ok());
  ASSERT_TRUE(t->Abort("decode worker lost").ok());
  EXPECT_EQ(r.credits.in_flight(), 0u);
  EXPECT_EQ(r.pool.unpublished(), 0u);
  EXPECT_EQ(r.directory.Lookup("req-1"), nullptr);
  EXPECT_EQ(r.directory.cache().Read("prefix:b0")->committed_length, 4u);
}

TEST(WarmDestination, VisiblePrefixIsIdempotentAndNeverResized) {
  Rig r;
  ASSERT_TRUE(r.directory.PublishVisiblePrefix("p", 4).ok());
  EXPECT_TRUE(r.directory.PublishVisiblePrefix("p", 4).ok());
  EXPECT_FALSE(r.directory.PublishVisiblePrefix("p", 8).ok());
  EXPECT_FALSE(r.directory.PublishVisiblePrefix("q", 0).ok());
}

// Probe 11 (2026-12-04): a prefix named "req-1@g7" was request req-1's generation-7 destination
// handle, so a cold plan from token 0 failed (LIFECYCLE_APPEND_HOLE) and one from token 4 passed.
// The attempt handles' name form is reserved; a cold plan from 0 then publishes.
TEST(WarmDestination, RegressionAPrefixNamedLikeAnAttemptHandleIsRefused) {
  for (const char* name : {"req-1@g7", "@g0", "a@g@g12"})
    EXPECT_TRUE(DecodeDirectory::IsAttemptHandleName(name)) << name;
  for (const char* name : {"req-1@g", "req-1@gx", "req-1@g7b", "g7", "req-1g7", ""})
    EXPECT_FALSE(DecodeDirectory::IsAttemptHandleName(name)) << name;
  Rig r;
  EXPECT_EQ(r.directory.PublishVisiblePrefix("req-1@g7", 4).code(), StatusCode::kInvalidArgument);
  auto t = TransferTxn::Create(SuffixPlan(0, 8, ""), &r.credits, &r.pool, &r.directory);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Reserve().ok());
  DeliverAll(*t);
  ASSERT_TRUE(t->Validate(t->plan().identity, Sha256Hex("abi")).ok());
  auto h = t->Publish();
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->cache_snapshot.committed_length, 8u);
}

// A mutation audit of the handoff state machines (2026-12-05, helper 96: 110 single-point
// mutants of reference/handoff/; 30 survived reference_tests, conformance_tests and the suite,
// 23 of them real gaps). Each test below fails under the mutant its comment names.
// Mutation audit 2026-12-05 (M80, PublishIfGenerationCurrent: the replay's generation check
// dropped): a transfer id published under generation 3 and presented again under generation 4 is
// not an idempotent retry (0x06A: only when the identity also matches); the mutant returned
// generation 3's handle as a successful replay for generation 4.
TEST(DecodeDirectoryTest, ATransferIdRepublishedUnderANewerGenerationIsNotAReplay) {
  DecodeDirectory d(Abi());
  ASSERT_TRUE(d.ReserveGeneration("r", 3).ok());
  ASSERT_TRUE(d.OpenDestination("r", 3, "x", 0, 4).ok());
  ASSERT_TRUE(d.StageLayer("x", 0, 0, 4).ok());
  ASSERT_TRUE(d.StageLayer("x", 1, 0, 4).ok());
  ASSERT_TRUE(d.PublishIfGenerationCurrent("r", 3, "x", "digest-a").ok());
  ASSERT_TRUE(d.ReserveGeneration("r", 4).ok());
  const auto again = d.PublishIfGenerationCurrent("r", 4, "x", "digest-a");
  EXPECT_EQ(again.status().error(), ErrorCode::HANDOFF_DUPLICATE_CORRUPTION);
  EXPECT_EQ(d.publications(), 1u);
}

// Mutation audit 2026-12-05 (M69, OpenDestinationOnto: the re-opened handle's length check
// dropped): a second opening of the same attempt handle after it grew past the prefix is a coverage
// mismatch at the directory (the mutant passed it to the lifecycle object, which answered with its
// own code).
TEST(DecodeDirectoryTest, AReopenedAttemptHandleMustStillEndWhereTheTransferStarts) {
  DecodeDirectory d(Abi());
  ASSERT_TRUE(d.PublishVisiblePrefix("P", 8).ok());
  ASSERT_TRUE(d.ReserveGeneration("r", 7).ok());
  ASSERT_TRUE(d.OpenDestinationOnto("r", 7, "a", 8, 4, "P").ok());
  ASSERT_TRUE(d.StageLayer("a", 0, 8, 4).ok());
  ASSERT_TRUE(d.StageLayer("a", 1, 8, 4).ok());
  ASSERT_TRUE(d.PublishIfGenerationCurrent("r", 7, "a", "digest-a").ok());  // r@g7 holds 12
  EXPECT_EQ(d.OpenDestinationOnto("r", 7, "b", 8, 4, "P").error(),
            ErrorCode::HANDOFF_COVERAGE_MISMATCH);
}

}  // namespace
}  // namespace kvc::handoff
