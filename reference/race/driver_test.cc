// Tests of the race driver protocol client: its hello exchange and unasked results
// (docs/driver-protocol.md).
#include "reference/race/driver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "reference/race/fuzzer.h"
#include "reference/testutil/testutil.h"

namespace kvc::race {
namespace {

// A driver that prints `lines` and then reads its input until the kit closes it, copying it to
// `sink`.
StatusOr<std::unique_ptr<DriverTarget>> Scripted(const std::string& lines,
                                                 const std::string& sink = "/dev/null") {
  std::string command = "printf '%s\\n' '";
  command += lines;
  command += "'; cat >'" + sink + "'";
  return DriverTarget::Start(command, RaceAbi(2), std::chrono::milliseconds(5000));
}

// A hello line: the protocol, then `tail` (more members and the closing brace).
std::string Hello(const std::string& tail) {
  std::string h = R"({"type":"hello","protocol":"kvconform.race_driver/1")";
  h += tail;
  return h;
}

// The hello's digests mode is opaque (the default) or checked, and the history header says
// which.
TEST(DriverTarget, HelloDeclaresTheDigestsMode) {
  auto opaque = Scripted(Hello("}"));
  ASSERT_TRUE(opaque.ok()) << opaque.status().ToString();
  EXPECT_EQ((*opaque)->HistoryHeader()["digests"], "opaque");
  auto checked = Scripted(Hello(R"(,"digests":"checked"})"));
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  EXPECT_EQ((*checked)->HistoryHeader()["digests"], "checked");
  auto bad = Scripted(Hello(R"(,"digests":"maybe"})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().error(), ErrorCode::RACE_DRIVER_PROTOCOL);
}

// The first protocol failure of a scripted driver: from Start() when the line arrives before
// Start() returns, else from Health() once the reader has read it (polled for up to 5 s).
Status FirstFailure(const StatusOr<std::unique_ptr<DriverTarget>>& target) {
  Status failure = target.status();
  for (int i = 0; i < 500 && failure.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    failure = (*target)->Health();
  }
  return failure;
}

// A result the kit never asked for (nothing outstanding) is a protocol failure, never a read
// of an empty queue.
TEST(DriverTarget, ResultWithNothingOutstandingIsAProtocolFailure) {
  const Status failure = FirstFailure(
      Scripted(Hello("}") + "\n" + R"({"type":"result","id":0,"outcome":"ok","result":{}})"));
  ASSERT_FALSE(failure.ok());
  EXPECT_EQ(failure.error(), ErrorCode::RACE_DRIVER_PROTOCOL);
  EXPECT_NE(failure.message().find("while no operation is outstanding"), std::string::npos)
      << failure.message();
}

// A driver says hello once: a second hello is a protocol failure.
TEST(DriverTarget, SecondHelloIsAProtocolFailure) {
  const Status failure = FirstFailure(Scripted(Hello("}") + "\n" + Hello("}")));
  ASSERT_FALSE(failure.ok());
  EXPECT_EQ(failure.error(), ErrorCode::RACE_DRIVER_PROTOCOL);
  EXPECT_NE(failure.message().find("a second hello"), std::string::npos) << failure.message();
}

// Regression: a driver's unknown member name or message type was quoted whole, so a 100 KB
// name made a 100 KB failure (2026-12-07); the name is clipped at 80 bytes and the line at 200,
// each counted.
TEST(DriverTarget, RegressionALongNameInADriverLineIsClipped) {
  const std::string name(100000, 'k');
  for (const std::string& lines :
       {Hello(R"(,")" + name + R"(":1})"), R"({"type":")" + name + R"("})",
        Hello("}") + "\n" + R"({"type":"result",")" + name + R"(":1})"}) {
    const Status failure = FirstFailure(Scripted(lines));
    ASSERT_FALSE(failure.ok());
    EXPECT_EQ(failure.error(), ErrorCode::RACE_DRIVER_PROTOCOL);
    EXPECT_LT(failure.message().size(), 600u) << failure.message().substr(0, 200);
    EXPECT_NE(failure.message().find("(100000 bytes)"), std::string::npos)
        << failure.message().substr(0, 300);
  }
}

// After a failure for good nothing more is sent to the driver (it could not take effect): the
// call is unknown at once. The driver reads the first op, answers it with a second hello (a
// protocol failure) and copies whatever else it receives to a file, which stays empty (the
// kit's hello is read first).
TEST(DriverTarget, NothingIsSentAfterAFailure) {
  test::TempDir dir;
  const std::string sink = dir / "received";
  const std::string command = "printf '%s\\n' '" + Hello("}") +
                              "'; read -r kit_hello; read -r first; printf '%s\\n' '" + Hello("}") +
                              "'; cat >'" + sink + "'";
  auto target = DriverTarget::Start(command, RaceAbi(2), std::chrono::milliseconds(5000));
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  KvOp op;
  op.kind = KvOpKind::kAllocate;
  op.handle = "H";
  EXPECT_EQ((*target)->Call(0, "H", op).outcome, Outcome::kUnknown);  // answered by a breach
  ASSERT_EQ((*target)->Health().error(), ErrorCode::RACE_DRIVER_PROTOCOL);
  EXPECT_EQ((*target)->Call(0, "H", op).outcome, Outcome::kUnknown);  // never sent
  target->reset();  // closes the driver's input and waits for it: the copy is complete
  std::ifstream in(sink);
  const std::string received((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  EXPECT_EQ(received, "");
}
}  // namespace
}  // namespace kvc::race
