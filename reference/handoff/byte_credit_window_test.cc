// The byte-credit window (M5.6 0x06B): 0 <= B_inflight <= C_credit, credit for a positive
// byte count.
#include "reference/handoff/byte_credit_window.h"

#include <gtest/gtest.h>

namespace kvc::handoff {
namespace {

// A mutation audit of the handoff state machines (2026-12-05, helper 96: 110 single-point
// mutants of reference/handoff/; 30 survived reference_tests, conformance_tests and the suite,
// 23 of them real gaps). Each test below fails under the mutant its comment names.
// Mutation audit 2026-12-05 (M63, ByteCreditWindow::Release: the over-release check dropped): 0 <=
// B_inflight (0x06B); a return of more credit than is in flight is refused and changes nothing (the
// mutant wrapped).
TEST(ByteCreditWindowTest, CreditIsNeverReturnedBelowZero) {
  ByteCreditWindow w(1024);
  ASSERT_TRUE(w.Acquire(512).ok());
  EXPECT_FALSE(w.Release(513).ok());
  EXPECT_EQ(w.in_flight(), 512u);
  ASSERT_TRUE(w.Release(512).ok());
  EXPECT_FALSE(w.Release(1).ok());
  EXPECT_EQ(w.in_flight(), 0u);
}

// Mutation audit 2026-12-05 (M62, ByteCreditWindow::Acquire: the zero-byte check dropped): an
// acquisition is for a positive byte count.
TEST(ByteCreditWindowTest, AZeroByteCreditAcquisitionIsRefused) {
  ByteCreditWindow w(1024);
  EXPECT_FALSE(w.Acquire(0).ok());
  EXPECT_EQ(w.high_water(), 0u);
}

}  // namespace
}  // namespace kvc::handoff
