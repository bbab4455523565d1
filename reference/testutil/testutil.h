// The shared test utility: source-tree paths, fixture loading, violation matchers and renderings.
#ifndef KVCONFORM_REFERENCE_TESTUTIL_TESTUTIL_H_
#define KVCONFORM_REFERENCE_TESTUTIL_TESTUTIL_H_

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "reference/base/strict_json.h"
#include "reference/trace/checker.h"
#include "reference/validate/violation.h"

namespace kvc::test {

// Absolute path of a file in the source tree (tests read fixtures from there): under the
// environment's KVCONFORM_SOURCE_DIR when set (a test binary carried to another machine, e.g. by
// tools/gpu-check.sh, finds the tree where it runs), else the tree it was configured from.
std::string SourcePath(const std::string& relative);

// A fresh directory under the system's temporary directory, named after the process and the
// running test, removed with everything in it when the object is destroyed. Not copyable.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // The path of `name` inside the directory (nothing is created).
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }
  // Writes `text` to `name` inside the directory (creating its parent directories); its path.
  std::string Write(const std::string& name, const std::string& text) const;

 private:
  std::filesystem::path path_;
};
// Parses a source-tree JSON file; fails the current test (and returns null) on error.
Json LoadJson(const std::string& relative);
// The lines of a source-tree text file (a JSON Lines trace: header first), without their "\n".
std::vector<std::string> SourceLines(const std::string& relative);
// The violations of the source-tree trace `relative` replayed through a TraceChecker with
// `options` (named by `relative`, lines numbered from 1), after Finish.
Violations CheckSourceTrace(const std::string& relative, const trace::CheckerOptions& options = {});
// The distinct code names of `v`, in first-seen order. A comparison of these does not see a
// code raised twice (several events breaking one rule is common in a multi-event trace); assert
// v.size() or use OnlyViolationAt where one violation is the point.
std::vector<std::string> CodeNames(const Violations& v);
// The code name of every violation of `v`, in order (a code raised twice appears twice).
std::vector<std::string> AllCodeNames(const Violations& v);
// Success when `v` is exactly one violation, of `code` at `pointer`; the failure message lists
// `v` (ASSERT_TRUE(OnlyViolationAt(v, "CODE", "/pointer"))).
::testing::AssertionResult OnlyViolationAt(const Violations& v, const std::string& code,
                                           const std::string& pointer);
// "CODE@pointer: message" lines, for assertion messages.
std::string Describe(const Violations& v);
// Prints "<Suite>.<Test> seed=<seed> (reproduce: build/bin/reference_tests
// --gtest_filter=<Suite>.<Test>)" for the running test and returns `seed` (seeded property
// tests announce their seed this way).
uint64_t AnnounceSeed(uint64_t seed);
// One line per violation: "<line> <CODE> <pointer> [<event_id>|<request_id>] <message>";
// `contexts` is parallel to `v` (TraceChecker::contexts()). Equal renderings, equal reports.
std::string RenderTraceViolations(const Violations& v,
                                  const std::vector<trace::TraceChecker::Context>& contexts);

// Counts the global operator new calls (every form) made on the calling thread while it lives,
// for tests that pin "this never allocates", and the operator delete calls of non-null
// pointers, for tests that pin "every block is freed" (count() == frees() for a scope that
// allocates and frees its own blocks: a block allocated before counting began counts when
// freed). Not nestable. The counting operator new is
// defined in allocation_count.cc and replaces the global one in every binary that links this
// utility (it counts only while an AllocationCount lives on the thread: a thread-local flag,
// then malloc); it is left out under AddressSanitizer and ThreadSanitizer, whose runtimes
// supply their own: there available() is false and the test should GTEST_SKIP().
class AllocationCount {
 public:
  AllocationCount();
  ~AllocationCount();
  AllocationCount(const AllocationCount&) = delete;
  AllocationCount& operator=(const AllocationCount&) = delete;
  static bool available();
  uint64_t count() const;  // operator new calls
  uint64_t frees() const;  // operator delete calls of non-null pointers
};

// In a RapidCheck property: a value uniform in [lo, hi) at every test size (gen::inRange alone
// scales with size, which would make early cases degenerate); still shrinks toward lo.
template <typename T>
T Uniform(T lo, T hi) {
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

// Appends the RFC 6901 pointer of `j` (`at`) and of every value inside it, in document order,
// to `out` (the mutation sites of the property suites). J: Json or nlohmann::ordered_json.
template <typename J>
void CollectPointers(const J& j, const std::string& at, std::vector<std::string>* out) {
  out->push_back(at);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it)
      CollectPointers(it.value(), at + "/" + JsonPointerEscape(it.key()), out);
  else if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) CollectPointers(j[i], at + "/" + std::to_string(i), out);
}

}  // namespace kvc::test

#endif  // KVCONFORM_REFERENCE_TESTUTIL_TESTUTIL_H_
