// The layer-stream recurrence reproduces M5.6 0x08I's worked numbers.
#include "reference/handoff/schedule.h"

#include <gtest/gtest.h>

namespace kvc::handoff {
namespace {

TEST(LayerStream, SeedExampleStreamsTo110VersusSerialized140) {
  auto s = ComputeLayerStream({25, 50, 75, 100}, {10, 10, 10, 10});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->per_layer_visible, (std::vector<uint64_t>{35, 60, 85, 110}));
  EXPECT_EQ(s->request_level_complete, 140u);
  EXPECT_EQ(s->exposed_after_prefill, 10u);
  EXPECT_EQ(s->hidden_transfer, 30u);
}

TEST(LayerStream, SlowLinkTailSerializesOnTheEngine) {
  // Transfers longer than the ready spacing queue behind each other: v_l follows v_(l-1).
  auto s = ComputeLayerStream({10, 20, 30}, {25, 25, 25});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->per_layer_visible, (std::vector<uint64_t>{35, 60, 85}));
  EXPECT_EQ(s->request_level_complete, 105u);
  EXPECT_EQ(s->exposed_after_prefill, 55u);
}

TEST(LayerStream, RejectsMalformedAndOverflowingInput) {
  EXPECT_EQ(ComputeLayerStream({}, {}).status().error(), ErrorCode::HANDOFF_SCHEDULE_INVALID);
  EXPECT_EQ(ComputeLayerStream({1, 2}, {1}).status().error(), ErrorCode::HANDOFF_SCHEDULE_INVALID);
  EXPECT_EQ(ComputeLayerStream({5, 4}, {1, 1}).status().error(),
            ErrorCode::HANDOFF_SCHEDULE_INVALID);
  EXPECT_EQ(ComputeLayerStream({UINT64_MAX}, {1}).status().error(),
            ErrorCode::INPUT_ARITHMETIC_OVERFLOW);
}

TEST(ExposedStall, IsClampedAtZero) {
  EXPECT_EQ(ExposedStall(220, 160), 60u);
  EXPECT_EQ(ExposedStall(100, 160), 0u);
}

}  // namespace
}  // namespace kvc::handoff
