// Status: the names of its codes and its one-line rendering.
#include "reference/base/status.h"

#include <gtest/gtest.h>

namespace kvc {
namespace {

// StatusCodeName: each kind's own name (CLI output and logs name the kind by it).
TEST(Status, EveryCodeHasItsOwnName) {
  EXPECT_EQ(StatusCodeName(StatusCode::kOk), "OK");
  EXPECT_EQ(StatusCodeName(StatusCode::kInvalidArgument), "InvalidArgument");
  EXPECT_EQ(StatusCodeName(StatusCode::kParseError), "ParseError");
  EXPECT_EQ(StatusCodeName(StatusCode::kIoError), "IoError");
  EXPECT_EQ(StatusCodeName(StatusCode::kOutOfRange), "OutOfRange");
  EXPECT_EQ(StatusCodeName(StatusCode::kFailedPrecondition), "FailedPrecondition");
  EXPECT_EQ(StatusCodeName(StatusCode::kContractViolation), "ContractViolation");
  EXPECT_EQ(StatusCodeName(StatusCode::kUnavailable), "Unavailable");
  EXPECT_EQ(StatusCodeName(StatusCode::kDeadlineExceeded), "DeadlineExceeded");
  EXPECT_EQ(StatusCodeName(StatusCode::kInternal), "Internal");
  EXPECT_EQ(StatusCodeName(StatusCode::kResourceExhausted), "ResourceExhausted");
}

// ToString: "OK" for success.
TEST(Status, OkRendersAsOk) { EXPECT_EQ(Status().ToString(), "OK"); }

// ToString: "StatusKind: message" when no registry code is attached.
TEST(Status, RendersKindAndMessage) {
  EXPECT_EQ(OutOfRange("too big").ToString(), "OutOfRange: too big");
}

// ToString: a contract violation is named by its registry code, not its kind.
TEST(Status, ViolationRendersItsRegistryCode) {
  const Status s = ViolationStatus(ErrorCode::INPUT_FIELD_MISSING, "no \"kind\"");
  EXPECT_EQ(s.code(), StatusCode::kContractViolation);
  EXPECT_EQ(s.error(), ErrorCode::INPUT_FIELD_MISSING);
  EXPECT_EQ(s.ToString(), "INPUT_FIELD_MISSING: no \"kind\"");
}

}  // namespace
}  // namespace kvc
