// libFuzzer target: a kvconform.trace/1 checker replay of arbitrary bytes, three ways, compared.
//
// The input is a trace (JSON Lines). It is checked (1) line by line through the general readers
// (CheckerOptions::fast_readers = false), (2) line by line through the one-pass readers and
// (3) in padded batches of 16 lines, the path `kvconform check` takes (CheckTraceFile). All three
// must report the same violations (line, code, pointer, message, event and request) in the same
// order; a difference aborts with both renderings. Crashes, hangs, leaks and undefined behaviour
// are the sanitizers' to report. The released-request window and the pruning cadence are small
// (4 and 2) so that short inputs reach the forgetting paths.
// Build: tools/fuzz-check.sh (Clang, -DKVCONFORM_FUZZ=ON). Not part of CI.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "reference/errors/error_codes.h"
#include "reference/trace/checker.h"

namespace {

using kvc::trace::CheckerOptions;
using kvc::trace::TraceChecker;

enum class Path { kGeneral, kFast, kBatched };

CheckerOptions Options(Path p) {
  CheckerOptions opt;
  opt.released_window = 4;
  opt.prune_every_releases = 2;
  opt.fast_readers = p != Path::kGeneral;
  return opt;
}

std::string Render(const TraceChecker& c) {
  std::string out;
  const auto& v = c.violations();
  for (size_t i = 0; i < v.size(); ++i)
    out += std::to_string(v[i].line) + " " + std::string(kvc::ErrorCodeName(v[i].code)) + " " +
           v[i].pointer + " [" + c.contexts()[i].event_id + "|" + c.contexts()[i].request_id +
           "] " + v[i].message + "\n";
  return out;
}

std::string Run(std::string_view text, Path p) {
  TraceChecker c("fuzz.jsonl", Options(p));
  // Every line as its own padded copy (the batched path parses in place, like the block reader).
  std::vector<std::string> padded;
  std::vector<std::string_view> lines;
  size_t at = 0;
  bool mid_line = false;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) {
      mid_line = true;
      break;
    }
    lines.push_back(text.substr(at, nl - at));  // a '\r' stays, as CheckTraceFile keeps it
    at = nl + 1;
  }
  if (p == Path::kBatched) {
    padded.reserve(lines.size());
    std::vector<std::string_view> views;
    for (std::string_view l : lines) {
      padded.emplace_back(l);
      padded.back().append(simdjson::SIMDJSON_PADDING, ' ');
      views.emplace_back(padded.back().data(), l.size());
    }
    for (size_t i = 0; i < views.size(); i += TraceChecker::kMaxBatch) {
      const size_t n = std::min(TraceChecker::kMaxBatch, views.size() - i);
      c.FeedPaddedBatch(views.data() + i, n, static_cast<uint32_t>(i + 1));
    }
  } else {
    for (size_t i = 0; i < lines.size(); ++i) c.Feed(lines[i], static_cast<uint32_t>(i + 1));
  }
  c.Finish(mid_line);
  return Render(c);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (size_t{1} << 20)) return -1;  // not added to the corpus
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string general = Run(text, Path::kGeneral);
  const std::string fast = Run(text, Path::kFast);
  const std::string batched = Run(text, Path::kBatched);
  if (general != fast || fast != batched) {
    std::fprintf(stderr,
                 "trace_check_fuzzer: the readers disagree\n--- general readers\n%s--- one-pass "
                 "readers\n%s--- batched (kvconform check's path)\n%s",
                 general.c_str(), fast.c_str(), batched.c_str());
    std::abort();
  }
  return 0;
}
