// The race driver protocol client: runs an external runtime's driver as a child process and
// exchanges JSON Lines over its stdin/stdout (docs/driver-protocol.md).
//
// The kit sends a hello, then one "op" line per operation (several may be outstanding, one per
// worker thread); the driver answers each op with one "result" line, in the order it received
// them. Every wait is bounded: a reader thread polls the driver's stdout with a timeout, and a
// worker waits at most `timeout` for its answer. A driver that exits, hangs, answers garbage or
// answers out of order is reported with RACE_DRIVER_CRASHED / _TIMEOUT / _PROTOCOL; operations
// it never answered get unknown outcomes (they may or may not have taken effect), and no further
// operations are sent. The destructor closes the driver's stdin, waits briefly, then kills it.
// Thread safety: Call() and Health() are safe from any number of threads.
#ifndef KVCONFORM_REFERENCE_RACE_DRIVER_H_
#define KVCONFORM_REFERENCE_RACE_DRIVER_H_

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "reference/race/program.h"

namespace kvc::race {

inline constexpr std::string_view kDriverProtocol = "kvconform.race_driver/1";

class DriverTarget : public RaceTarget {
 public:
  // Starts `command` with /bin/sh -c and completes the hello exchange within `timeout`.
  static StatusOr<std::unique_ptr<DriverTarget>> Start(const std::string& command,
                                                       lifecycle::CacheAbi abi,
                                                       std::chrono::milliseconds timeout);
  ~DriverTarget() override;

  OpResult Call(uint32_t thread, const std::string& partition, const KvOp& op) override;
  Status Health() override;
  Json HistoryHeader() const override;

 private:
  DriverTarget(lifecycle::CacheAbi abi, std::chrono::milliseconds timeout)
      : abi_(std::move(abi)), timeout_(timeout) {}
  void ReaderLoop();
  void HandleLine(const std::string& line);  // with mu_ held
  void Fail(Status s);                       // with mu_ held
  bool WriteLine(const std::string& line);   // takes write_mu_
  // Writes all of `buf` to the driver's stdin (non-blocking) with write_mu_ held, waiting for
  // room at most `timeout_`, and not at all once the reader has failed.
  enum class WriteResult { kOk, kClosed, kTimedOut, kFailed };
  WriteResult WriteAll(const std::string& buf);

  const lifecycle::CacheAbi abi_;
  const std::chrono::milliseconds timeout_;
  std::string command_;
  pid_t pid_ = -1;
  int to_driver_ = -1, from_driver_ = -1;
  std::thread reader_;
  std::mutex write_mu_;  // one line at a time to the driver
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_.
  bool stop_ = false;
  std::optional<Json> hello_;
  std::string digests_ = "opaque";
  uint64_t next_id_ = 0;
  std::deque<std::pair<uint64_t, KvOpKind>> outstanding_;  // ids sent (and their ops), in order
  std::map<uint64_t, OpResult> answers_;         // answered, not yet collected
  Status failure_;
};

}  // namespace kvc::race

#endif  // KVCONFORM_REFERENCE_RACE_DRIVER_H_
