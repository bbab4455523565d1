// libFuzzer target: a kvconform.trace/1 checker replay of arbitrary bytes, three ways, compared.
//
// The input is a trace (JSON Lines). It is checked (1) line by line through the general readers
// (CheckerOptions::fast_readers = false), (2) line by line through the one-pass readers and
// (3) in padded batches of 16 lines, the path `kvconform check` takes (CheckTraceFile). All three
// must report the same violations (line, code, pointer, message, event and request) in the same
// order; a difference aborts with all three renderings. Crashes, hangs, leaks and undefined
// behaviour are the sanitizers' to report. The released-request window and the pruning cadence
// are small (4 and 2) so that short inputs reach the forgetting paths, and so is the line limit
// (4 KiB), so that they reach the overlong-line path (FeedOverlongLine, its naming).
// Build: tools/fuzz-check.sh (Clang, -DKVCONFORM_FUZZ=ON). CI replays its seeds
// (fuzz_seed_replay).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "reference/testutil/testutil.h"
#include "reference/trace/checker.h"

namespace {

using kvc::trace::CheckerOptions;
using kvc::trace::TraceChecker;

enum class Path { kGeneral, kFast, kBatched };

CheckerOptions Options(Path p) {
  CheckerOptions opt;
  opt.released_window = 4;
  opt.receipt_window = 2;
  opt.max_line_bytes = 4096;
  opt.fast_readers = p != Path::kGeneral;
  // The batched path prefetches cold records whenever the event order asks for it, whatever
  // the number of live requests (a hint: it must change nothing).
  if (p == Path::kBatched) opt.prefetch_from_live_requests = 0;
  return opt;
}

std::string Run(std::string_view text, Path p) {
  TraceChecker c("fuzz.jsonl", Options(p));
  if (p != Path::kBatched) {
    kvc::trace::FeedTraceText(&c, text);
    return kvc::test::RenderTraceViolations(c.violations(), c.contexts());
  }
  // Every line as its own padded copy: the batched path parses in place, like the block reader
  // (a '\r' stays part of its line, as CheckTraceFile keeps it).
  std::vector<std::string> padded;
  std::vector<std::string_view> views;
  size_t at = 0;
  bool mid_line = false;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) {
      mid_line = true;
      break;
    }
    padded.emplace_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  for (std::string& l : padded) {
    const size_t n = l.size();
    l.append(simdjson::SIMDJSON_PADDING, ' ');
    views.emplace_back(l.data(), n);  // `padded` no longer grows: its strings stay put
  }
  // Runs of lines within the limit go in batches; a longer line is fed as the block reader
  // feeds it.
  const uint64_t limit = c.options().max_line_bytes;
  for (size_t i = 0; i < views.size();) {
    if (views[i].size() > limit) {
      c.FeedOverlongLine(static_cast<uint32_t>(i + 1), views[i].size(), views[i]);
      ++i;
      continue;
    }
    size_t n = 0;
    while (n < TraceChecker::kMaxBatch && i + n < views.size() && views[i + n].size() <= limit) ++n;
    c.FeedPaddedBatch(views.data() + i, n, static_cast<uint32_t>(i + 1));
    i += n;
  }
  // The cut line's CR bytes are named, as the block reader names them (cut_line_has_cr).
  c.Finish(mid_line, mid_line && text.substr(at).find('\r') != std::string_view::npos);
  return kvc::test::RenderTraceViolations(c.violations(), c.contexts());
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
