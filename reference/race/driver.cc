// The race driver protocol client: child process, bounded waits, FIFO answer matching.
#include "reference/race/driver.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "reference/base/text_forms.h"

extern char** environ;

namespace kvc::race {

namespace {
constexpr size_t kMaxLine = 1 << 20;
Status DriverError(ErrorCode e, std::string m) { return ViolationStatus(e, "driver: " + m); }
}  // namespace

StatusOr<std::unique_ptr<DriverTarget>> DriverTarget::Start(const std::string& command,
                                                            lifecycle::CacheAbi abi,
                                                            std::chrono::milliseconds timeout) {
  signal(SIGPIPE, SIG_IGN);  // a dead driver must surface as a write error, not kill the kit
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Unavailable(std::string("pipe: ") + strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return Unavailable(std::string("pipe: ") + strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  // Its own process group, so the destructor can end the driver and anything it started.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid;
  int rc = posix_spawn(&pid, "/bin/sh", &fa, &attr, const_cast<char**>(argv), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    return Unavailable("cannot start driver '" + command + "': " + strerror(rc));
  }
  std::unique_ptr<DriverTarget> d(new DriverTarget(std::move(abi), timeout));
  d->command_ = command;
  d->pid_ = pid;
  d->to_driver_ = in[1];
  // Writes never block: a driver that stops reading its input is a bounded wait like any other
  // (probe 34: a blocked write hung the kit forever, past --driver-timeout-ms).
  fcntl(d->to_driver_, F_SETFL, fcntl(d->to_driver_, F_GETFL) | O_NONBLOCK);
  d->from_driver_ = out[0];
  d->reader_ = std::thread([p = d.get()] { p->ReaderLoop(); });
  Json hello = {{"type", "hello"},
                {"protocol", kDriverProtocol},
                {"cache_abi", d->abi_.id},
                {"num_layers", d->abi_.num_layers},
                {"position_stage", d->abi_.position_stage}};
  if (!d->WriteLine(hello.dump())) {
    std::lock_guard<std::mutex> lock(d->mu_);
    d->Fail(DriverError(ErrorCode::RACE_DRIVER_CRASHED, "'" + command + "' closed its stdin before the hello"));
  }
  std::unique_lock<std::mutex> lock(d->mu_);
  d->cv_.wait_for(lock, timeout, [&] { return d->hello_.has_value() || !d->failure_.ok(); });
  if (!d->failure_.ok()) return d->failure_;
  if (!d->hello_) {
    d->Fail(DriverError(ErrorCode::RACE_DRIVER_TIMEOUT,
                        "'" + command + "' did not answer the hello within " +
                            std::to_string(timeout.count()) + " ms"));
    return d->failure_;
  }
  return d;
}

DriverTarget::~DriverTarget() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  if (to_driver_ >= 0) close(to_driver_);  // EOF: the driver should exit
  if (reader_.joinable()) reader_.join();
  if (from_driver_ >= 0) close(from_driver_);
  if (pid_ > 0) {
    // Up to ~0.5 s for a clean exit. The child is not reaped until the end (WNOWAIT), so its
    // process group id stays ours while we signal it.
    for (int i = 0; i < 50; ++i) {
      siginfo_t info{};
      if (waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(-pid_, SIGKILL);  // the driver's own process group (started by us, by id)
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

bool DriverTarget::WriteLine(const std::string& line) {
  std::lock_guard<std::mutex> lock(write_mu_);
  return WriteAll(line + "\n") == WriteResult::kOk;
}

DriverTarget::WriteResult DriverTarget::WriteAll(const std::string& buf) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  size_t off = 0;
  while (off < buf.size()) {
    ssize_t n = write(to_driver_, buf.data() + off, buf.size() - off);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // The pipe is full: wait for room in slices, giving up at the deadline or once the
      // reader has failed (the driver is then done for).
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!failure_.ok()) return WriteResult::kFailed;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return WriteResult::kTimedOut;
      pollfd p{to_driver_, POLLOUT, 0};
      poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
      continue;
    }
    return WriteResult::kClosed;
  }
  return WriteResult::kOk;
}

void DriverTarget::Fail(Status s) {
  if (failure_.ok()) failure_ = std::move(s);
  cv_.notify_all();
}

void DriverTarget::ReaderLoop() {
  std::string buf;
  char chunk[65536];
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_ || !failure_.ok()) return;
    }
    pollfd p{from_driver_, POLLIN, 0};
    int r = poll(&p, 1, 100);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      // The driver may have exited while a process it started holds its output open: the exit
      // is a crash, not a wait for an answer that cannot come (probe 63: reported as a timeout
      // after --driver-timeout-ms, without the exit status). Not reaped (WNOWAIT).
      siginfo_t info{};
      if (waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!stop_ && failure_.ok())
          Fail(DriverError(ErrorCode::RACE_DRIVER_CRASHED,
                           "'" + command_ + "' " +
                               (info.si_code == CLD_EXITED
                                    ? "exited with status " + std::to_string(info.si_status)
                                    : "was killed by signal " + std::to_string(info.si_status)) +
                               " with " + std::to_string(outstanding_.size()) +
                               " operation(s) outstanding (its output is still held open by a "
                               "process it started)"));
        return;
      }
      continue;
    }
    ssize_t n = read(from_driver_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (n <= 0) {
      std::string how = "closed its output";
      for (int i = 0; i < 20; ++i) {  // give the exit status ~0.2 s to appear (not reaped)
        siginfo_t info{};
        if (waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_) {
          how = info.si_code == CLD_EXITED ? "exited with status " + std::to_string(info.si_status)
                                           : "was killed by signal " + std::to_string(info.si_status);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (!stop_)
        Fail(DriverError(ErrorCode::RACE_DRIVER_CRASHED,
                         "'" + command_ + "' " + how + " with " +
                             std::to_string(outstanding_.size()) + " operation(s) outstanding"));
      return;
    }
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos && failure_.ok()) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      HandleLine(line);
    }
    if (buf.size() > kMaxLine)
      Fail(DriverError(ErrorCode::RACE_DRIVER_PROTOCOL, "an output line exceeds 1 MiB"));
  }
}

void DriverTarget::HandleLine(const std::string& line) {
  auto garbage = [&](const std::string& what) {
    // What the driver wrote is clipped (the line to 200 bytes, a name in `what` to 80): a line may
    // be up to 1 MiB.
    Fail(DriverError(ErrorCode::RACE_DRIVER_PROTOCOL,
                     base::Clipped(what, 1024) + " in line: " + base::Clipped(line, 200)));
  };
  auto parsed = ParseJsonStrict(line, "driver");
  if (!parsed.ok()) return garbage("not JSON (" + parsed.status().message() + ")");
  const Json& j = parsed->value;
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    return garbage("expected an object with a string \"type\"");
  const std::string type = j["type"];
  // The members each message has, and no others (probe 44: unknown members of a hello or a
  // result line passed while one inside `result` was refused; a hello whose protocol was a
  // number threw out of the reader thread and aborted the kit).
  auto unknown_member = [&](std::initializer_list<std::string_view> known) -> std::string {
    for (const auto& [key, value] : j.items())
      if (std::find(known.begin(), known.end(), key) == known.end()) return key;
    return "";
  };
  auto string_member = [&](const char* key) -> std::optional<std::string> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  if (type == "hello") {
    if (hello_) return garbage("a second hello");
    if (std::string k = unknown_member({"type", "protocol", "digests"}); !k.empty())
      return garbage("hello: unknown member " + base::QuoteClipped(k) +
                     " (type, protocol, digests)");
    if (string_member("protocol") != std::string(kDriverProtocol))
      return garbage("hello: protocol must be \"" + std::string(kDriverProtocol) + "\"");
    const std::string d =
        j.contains("digests") ? string_member("digests").value_or("") : std::string("opaque");
    if (d != "opaque" && d != "checked") return garbage("hello: digests must be opaque|checked");
    digests_ = d;
    hello_ = j;
    cv_.notify_all();
    return;
  }
  if (type != "result") return garbage("unknown type " + base::QuoteClipped(type));
  if (!hello_) return garbage("a result before the hello");
  if (std::string k = unknown_member({"type", "id", "outcome", "result"}); !k.empty())
    return garbage("result: unknown member " + base::QuoteClipped(k) +
                   " (type, id, outcome, result)");
  auto id = j.find("id");
  if (id == j.end() || !id->is_number_unsigned())
    return garbage("result: id must be an unsigned integer below 2^64 (the op's id)");
  if (outstanding_.empty())
    return garbage("result for id " + std::to_string(id->get<uint64_t>()) +
                   " while no operation is outstanding");
  if (id->get<uint64_t>() != outstanding_.front().first)
    return garbage("out of order: expected the result for id " +
                   std::to_string(outstanding_.front().first) + ", got id " +
                   std::to_string(id->get<uint64_t>()));
  const std::string outcome = string_member("outcome").value_or("");
  auto res = j.find("result");
  if ((outcome != "ok" && outcome != "error") || res == j.end() || !res->is_object())
    return garbage("result: expected outcome ok|error and an object result");
  // The op's result form, as a recorded history's is read (probe 34: an unknown member and an
  // unregistered code were taken for a linearizability failure).
  const KvOpKind kind = outstanding_.front().second;
  if (std::string shape = ResultShapeError(kind, outcome == "ok", *res); !shape.empty())
    return garbage("result of the wrong shape for op " + std::to_string(id->get<uint64_t>()) +
                   " (" + std::string(KvOpName(kind)) + ", outcome " + outcome + "): " + shape);
  outstanding_.pop_front();
  answers_[id->get<uint64_t>()] = {outcome == "ok" ? Outcome::kOk : Outcome::kError, *res};
  cv_.notify_all();
}

OpResult DriverTarget::Call(uint32_t thread, const std::string& partition, const KvOp& op) {
  OpResult unknown{Outcome::kUnknown, nullptr};
  uint64_t id;
  std::string line;
  {
    // Assign the id and queue it under mu_ and the write lock, so send order == id order.
    std::lock_guard<std::mutex> wlock(write_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!failure_.ok()) return unknown;  // never sent: it cannot take effect either
      id = next_id_++;
      outstanding_.emplace_back(id, op.kind);
    }
    line = Json{{"type", "op"},         {"id", id},
                {"thread", thread},     {"partition", partition},
                {"op", KvOpName(op.kind)}, {"args", KvOpArgs(op)}}
               .dump() + "\n";
    const WriteResult w = WriteAll(line);
    if (w != WriteResult::kOk) {
      std::lock_guard<std::mutex> lock(mu_);
      if (w == WriteResult::kClosed)
        Fail(DriverError(ErrorCode::RACE_DRIVER_CRASHED,
                         "'" + command_ + "' closed its input (op " + std::to_string(id) + ")"));
      else if (w == WriteResult::kTimedOut)
        Fail(DriverError(ErrorCode::RACE_DRIVER_TIMEOUT,
                         "'" + command_ + "' stopped reading its input: op " + std::to_string(id) +
                             " (" + std::string(KvOpName(op.kind)) +
                             ") could not be written within " + std::to_string(timeout_.count()) +
                             " ms"));
      return unknown;
    }
  }
  std::unique_lock<std::mutex> lock(mu_);
  bool answered = cv_.wait_for(lock, timeout_, [&] {
    return answers_.count(id) > 0 || !failure_.ok();
  });
  auto it = answers_.find(id);
  if (it != answers_.end()) {
    OpResult r = std::move(it->second);
    answers_.erase(it);
    return r;
  }
  if (!answered)
    Fail(DriverError(ErrorCode::RACE_DRIVER_TIMEOUT,
                     "'" + command_ + "' did not answer op " + std::to_string(id) + " (" +
                         std::string(KvOpName(op.kind)) + ") within " +
                         std::to_string(timeout_.count()) + " ms"));
  return unknown;
}

Status DriverTarget::Health() {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

Json DriverTarget::HistoryHeader() const {
  Json h = KvModel(abi_, digests_ == "opaque").Header();
  h["target"] = "driver";
  h["driver"] = command_;
  return h;
}

}  // namespace kvc::race
