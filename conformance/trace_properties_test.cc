// Differential properties of the streaming trace checker (kvconform.trace/1, M5.1 0x07) on
// randomly mutated fixture traces: `kvconform check`'s path (a file read in blocks, lines parsed
// in batches, the one-pass envelope and payload readers, the lookup memos) must report exactly
// what the general readers report when fed line by line, and every report must be well formed.
// The mutations are hostile one-step edits of a fixture: lines dropped, duplicated, swapped,
// cut or replaced by garbage; members set to values of every JSON type (huge, negative,
// fractional, empty, long), removed, repeated, added or reordered. One mutated trace in four
// is also checked with every request and operation id lengthened past std::string's inline
// buffer (LengthenIds): the violations' lines, codes and pointers must not change.
//
// Reproduce: the seed is printed when the suite starts; rerun with
//   RC_PARAMS="seed=<seed>" build/bin/conformance_tests --gtest_filter='TraceProperties.*'
// RapidCheck prints a RC_PARAMS="reproduce=<string>" line at exit for a failing case, shrunk;
// replay it alone with --gtest_filter='TraceProperties.<Test>'.
// More cases: RC_PARAMS="max_success=2000".
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "conformance/rapidcheck_reproduce.h"
#include "reference/errors/error_codes.h"
#include "reference/testutil/testutil.h"
#include "reference/trace/checker.h"

namespace kvc::trace {
namespace {

using OJson = nlohmann::ordered_json;  // keeps member order: an untouched member stays in place

using test::CollectPointers;
using test::RenderTraceViolations;
using test::Uniform;

// Every kvconform.trace/1 fixture, as its lines (without '\n').
const std::vector<std::pair<std::string, std::vector<std::string>>>& FixtureTraces() {
  static const auto* traces = [] {
    auto* out = new std::vector<std::pair<std::string, std::vector<std::string>>>;
    std::vector<std::string> paths;
    for (const auto& f :
         std::filesystem::recursive_directory_iterator(test::SourcePath("fixtures")))
      if (f.is_regular_file() && f.path().extension() == ".jsonl") paths.push_back(f.path());
    std::sort(paths.begin(), paths.end());
    for (const auto& p : paths) {
      std::ifstream in(p);
      std::vector<std::string> lines;
      for (std::string l; std::getline(in, l);) lines.push_back(l);
      if (!lines.empty() && lines[0].find(kTraceKind) != std::string::npos)
        out->emplace_back(p, std::move(lines));
    }
    return out;
  }();
  return *traces;
}


// A hostile replacement for the value `v`, chosen for its type: the bounds and neighbours a
// reader must check (integers), other members' vocabularies (strings), the other JSON types.
OJson HostileValue(const OJson& v) {
  if (v.is_number_unsigned() || v.is_number_integer()) {
    const uint64_t u = v.is_number_unsigned() ? v.get<uint64_t>() : 0;
    switch (Uniform<int>(0, 10)) {
      case 0: return u + 1;
      case 1: return u == 0 ? OJson(-1) : OJson(u - 1);
      case 2: return 0;
      case 3: return -1;
      case 4: return uint64_t{UINT32_MAX};
      case 5: return uint64_t{UINT32_MAX} + 1;
      case 6: return UINT64_MAX;
      case 7: return 0.5;
      case 8: return std::to_string(u);
      default: return nullptr;
    }
  }
  if (v.is_string()) {
    static const char* kWords[] = {"", "rejected", "replayed", "success", "failure", "cancelled",
                                   "append_publish", "release", "semantic", "allocator",
                                   "decode", "repair", "pre_rope", "repair_logits"};
    switch (Uniform<int>(0, 5)) {
      case 0: return v.get<std::string>() + "x";
      case 1: return 7;
      case 2: return nullptr;
      case 3:  // longer than a batch line: that line takes FeedPadded's path
        return std::string(TraceChecker::kMaxBatchLine + 16, 'z');
      default: return kWords[Uniform<size_t>(0, std::size(kWords))];
    }
  }
  if (v.is_boolean()) {
    switch (Uniform<int>(0, 3)) {
      case 0: return !v.get<bool>();
      case 1: return 1;
      default: return nullptr;
    }
  }
  if (v.is_array()) {
    OJson a = v;
    switch (Uniform<int>(0, 5)) {
      case 0: return OJson::array();
      case 1:
        if (!a.empty()) a.erase(a.size() - 1);
        return a;
      case 2:
        a.push_back(a.empty() ? OJson(0) : a.back());
        return a;
      case 3:
        if (a.size() >= 2) std::swap(a[0], a[1]);
        return a;
      default: return OJson::object();
    }
  }
  switch (Uniform<int>(0, 4)) {  // an object, or null
    case 0: return OJson::object();
    case 1: return OJson::array();
    case 2: return 0;
    default: return nullptr;
  }
}

// One random edit of `lines` (index 0 is the header, edited rarely): most often one member's
// value, else a member removed, added, repeated or reordered, or a whole line dropped,
// duplicated, swapped, cut or replaced by garbage.
void Mutate(std::vector<std::string>* lines) {
  auto& ls = *lines;
  const size_t i = ls.size() > 1 && Uniform<int>(0, 20) != 0 ? Uniform<size_t>(1, ls.size()) : 0;
  const int how = Uniform<int>(0, 20);
  switch (how) {
    case 0:
      ls.erase(ls.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    case 1:
      ls.insert(ls.begin() + static_cast<std::ptrdiff_t>(i), ls[i]);  // a redelivery
      return;
    case 2:
      if (i + 1 < ls.size()) std::swap(ls[i], ls[i + 1]);
      return;
    case 3: {
      static const char* kGarbage[] = {"", "{not json", "[]", "null", "{}", "{\"event_id\":",
                                       "{\"a\":1}{\"b\":2}", "\"x\""};
      ls.insert(ls.begin() + static_cast<std::ptrdiff_t>(i),
                kGarbage[Uniform<size_t>(0, std::size(kGarbage))]);
      return;
    }
    case 4:
      ls[i] = ls[i].substr(0, Uniform<size_t>(0, ls[i].size() + 1));  // a cut line
      return;
    case 5: {  // repeat the line's first member (a duplicate key)
      const size_t comma = ls[i].find(',');
      if (!ls[i].empty() && ls[i][0] == '{' && comma != std::string::npos)
        ls[i].insert(comma + 1, ls[i].substr(1, comma));
      return;
    }
    case 6: {  // a number the parser cannot hold, or one it holds only as a double
      static const char* kNumbers[] = {"18446744073709551616", "-0", "1e2", "2.0", "-9"};
      const size_t colon = ls[i].find(":0");
      if (colon != std::string::npos)
        ls[i].replace(colon + 1, 1, kNumbers[Uniform<size_t>(0, std::size(kNumbers))]);
      return;
    }
    default:
      break;
  }
  // Edits of one member of the line's JSON.
  OJson j = OJson::parse(ls[i], nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;
  std::vector<std::string> ptrs;
  CollectPointers(j, "", &ptrs);
  const std::string ptr = ptrs[Uniform<size_t>(ptrs.size() > 1 ? 1 : 0, ptrs.size())];
  try {
    if (how <= 14) {  // its value
      if (!ptr.empty()) j[OJson::json_pointer(ptr)] = HostileValue(j[OJson::json_pointer(ptr)]);
    } else if (how <= 16) {  // removed
      if (!ptr.empty()) j = j.patch(OJson::array({{{"op", "remove"}, {"path", ptr}}}));
    } else if (how <= 18) {  // an unknown member, or an allocator fact inside a semantic object
      OJson& target = j[OJson::json_pointer(ptr)];
      if (target.is_object()) target[Uniform<int>(0, 2) ? "zz_unknown" : "blocks"] = 1;
    } else {  // the same members in another order (the one-pass readers expect none)
      OJson reordered = OJson::object();
      std::vector<std::string> keys;
      for (const auto& [k, v] : j.items()) keys.push_back(k);
      std::reverse(keys.begin(), keys.end());
      for (const auto& k : keys) reordered[k] = j[k];
      j = reordered;
    }
  } catch (const std::exception&) {
    RC_DISCARD("edit not applicable");
  }
  ls[i] = j.dump();
}

struct Run {
  Violations violations;
  std::vector<TraceChecker::Context> contexts;
};

// Line by line through Feed (the general readers when !fast), as ValidateTraceJsonl does.
Run FeedLines(const std::string& text, bool fast) {
  CheckerOptions opt;
  opt.fast_readers = fast;
  TraceChecker c("mutated.jsonl", opt);
  Run r{FeedTraceText(&c, text), c.contexts()};
  return r;
}

// `kvconform check`'s path: CheckTraceFile on a file.
Run CheckFile(const std::string& text) {
  static int n = 0;
  const std::string path = ::testing::TempDir() + "/trace_prop_" + std::to_string(getpid()) +
                           "_" + std::to_string(n++) + ".jsonl";  // unique across processes
  {
    std::ofstream out(path, std::ios::binary);
    out << text;
  }
  TraceChecker c("mutated.jsonl");
  const Status s = CheckTraceFile(path, &c);
  std::remove(path.c_str());
  RC_ASSERT(s.ok());
  return {c.violations(), c.contexts()};
}

std::string Render(const Run& r) { return RenderTraceViolations(r.violations, r.contexts); }

// Members whose string values are names from a closed set or declared by the header, not
// identities (kept as they are).
bool IsEnumMember(std::string_view key) {
  static const char* kEnums[] = {"event_type", "outcome",  "purpose", "position_stage",
                                 "tier",       "reason",   "source_component", "kind",
                                 "phase",      "plane",    "audit",
                                 // names the header declares (its strings are matched whole)
                                 "source_instance", "clock_domain"};
  for (const char* k : kEnums)
    if (key == k) return true;
  return false;
}

// The same trace with runtime-length identities: every occurrence of a request_id or
// operation_id of an envelope inside a string value of an event (outside the closed-set
// members) gets a 32-byte suffix, consistently, wherever it appears (payload references, names
// derived from an id such as "<request>@g7", idempotency keys), and so does a header string
// equal to one (the expected final states), so every equality between the trace's strings is
// kept. The edit is
// textual, token by token, so every other byte stays (a repeated member, a cut line, garbage).
std::string LengthenIds(const std::vector<std::string>& lines) {
  std::set<std::string> ids;
  for (size_t i = 1; i < lines.size(); ++i) {
    const OJson j = OJson::parse(lines[i], nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    for (const char* k : {"request_id", "operation_id"})
      if (auto it = j.find(k); it != j.end() && it->is_string() && !it->get<std::string>().empty())
        ids.insert(it->get<std::string>());
  }
  std::vector<std::string> by_length(ids.begin(), ids.end());
  std::sort(by_length.begin(), by_length.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  std::string text;
  for (const std::string& l : lines) {
    const bool header = &l == &lines[0];
    std::string out, key;
    size_t at = 0;
    while (at < l.size()) {
      if (l[at] != '"') {
        out += l[at++];
        continue;
      }
      size_t end = at + 1;  // the closing quote of this string token, if any
      bool escaped = false;
      while (end < l.size() && l[end] != '"') {
        if (l[end] == '\\') {
          escaped = true;
          ++end;
        }
        ++end;
      }
      if (end >= l.size()) {  // unterminated: the rest of the line as it is
        out += l.substr(at);
        break;
      }
      const std::string body = l.substr(at + 1, end - at - 1);
      size_t next = end + 1;
      while (next < l.size() && l[next] == ' ') ++next;
      const bool is_key = next < l.size() && l[next] == ':';
      if (is_key) key = body;
      out += '"';
      if (is_key || escaped || IsEnumMember(key)) {
        out += body;
      } else if (header) {  // the header names ids whole (its other strings are its own)
        out += body + (ids.count(body) ? "-0123456789abcdef0123456789abcdef" : "");
      } else {  // every occurrence of an id, longest id first
        for (size_t p = 0; p < body.size();) {
          const std::string* hit = nullptr;
          for (const std::string& id : by_length)
            if (body.compare(p, id.size(), id) == 0) {
              hit = &id;
              break;
            }
          if (!hit) {
            out += body[p++];
            continue;
          }
          out += *hit + "-0123456789abcdef0123456789abcdef";
          p += hit->size();
        }
      }
      out += '"';
      at = end + 1;
    }
    text += out + "\n";
  }
  return text;
}

// What an id's length must not change: each violation's line, code and pointer.
std::string Skeleton(const Run& r) {
  std::string out;
  for (const Violation& v : r.violations)
    out += std::to_string(v.line) + " " + std::string(ErrorCodeName(v.code)) + " " + v.pointer +
           "\n";
  return out;
}

// One mutated trace through the three paths.
void CheckOneMutatedTrace() {
  const auto& traces = FixtureTraces();
  RC_ASSERT(traces.size() >= 10u);  // the M5.1 and M5.6 trace fixtures
  const auto& [name, original] = traces[Uniform<size_t>(0, traces.size())];
  std::vector<std::string> lines = original;
  const int edits = Uniform<int>(1, 4);
  for (int k = 0; k < edits && !lines.empty(); ++k) Mutate(&lines);
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  if (Uniform<int>(0, 8) == 0 && !text.empty()) text.pop_back();  // no final newline

  const Run general = FeedLines(text, false);
  const Run fast = FeedLines(text, true);
  const Run file = CheckFile(text);
  RC_ASSERT(general.violations.size() == general.contexts.size());
  const uint32_t max_line = static_cast<uint32_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  for (const Violation& v : general.violations) {
    RC_ASSERT(FindErrorCode(v.code) != nullptr);  // a registered code, never kNone
    RC_ASSERT(!v.message.empty());
    RC_ASSERT(v.line >= 1u && v.line <= max_line);
  }
  const std::string want = Render(general);
  if (Render(fast) != want || Render(file) != want)
    RC_FAIL(name + ": the paths disagree\n--- general readers, line by line:\n" + want +
            "--- one-pass readers, line by line:\n" + Render(fast) +
            "--- CheckTraceFile (batched):\n" + Render(file));
  // Ids longer than std::string's inline buffer (the hash's long path, heap-held copies in
  // every record) give the same verdict: one trace in four (with its final newline, so that
  // the lines split back exactly).
  if (Uniform<int>(0, 4) == 0 && !text.empty() && text.back() == '\n') {
    std::vector<std::string> kept;
    for (size_t at = 0; at < text.size();) {
      const size_t nl = text.find('\n', at);
      kept.push_back(text.substr(at, nl - at));
      at = nl + 1;
    }
    const std::string long_text = LengthenIds(kept);
    if (long_text != text) {
      const Run long_ids = CheckFile(long_text);
      if (Skeleton(long_ids) != Skeleton(file))
        RC_FAIL(name + ": runtime-length ids change the verdict\n--- as mutated:\n" +
                Render(file) + "--- with long ids:\n" + Render(long_ids) + "--- trace:\n" +
                long_text);
    }
  }
}

// Thirty traces per case: ctest's default 100 cases then cover 3,000 mutated traces (about two
// seconds). Sensitivity, measured by planting bugs (5 runs each, every one failed): the
// stage payload's one-pass reader without the layer's 32-bit bound, and the one-pass envelope
// reader accepting a repeated member; for the long-id check, SameBytes comparing only the last
// 8 bytes of ids over 16 bytes (failed at once, on doc_example_two_requests).
RC_GTEST_PROP(TraceProperties, CheckPathAgreesWithTheGeneralReadersOnMutatedTraces, ()) {
  for (int k = 0; k < 30; ++k) CheckOneMutatedTrace();
}

// The seed and reproduce lines of this file's suites (conformance/rapidcheck_reproduce.h).
[[maybe_unused]] const bool kReproducer =
    test::RegisterRapidCheckReproducer("trace_properties", {"TraceProperties"});

}  // namespace
}  // namespace kvc::trace
