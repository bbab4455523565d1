// The shared test utility: source-tree paths, fixture loading and violation matchers.
#ifndef KVCONFORM_REFERENCE_TESTUTIL_TESTUTIL_H_
#define KVCONFORM_REFERENCE_TESTUTIL_TESTUTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc::test {

// Absolute path of a file in the source tree (tests read fixtures from there).
std::string SourcePath(const std::string& relative);
// Parses a source-tree JSON file; fails the current test (and returns null) on error.
Json LoadJson(const std::string& relative);
// The distinct code names of `v`, in first-seen order.
std::vector<std::string> CodeNames(const Violations& v);
// "CODE@pointer: message" lines, for assertion messages.
std::string Describe(const Violations& v);
// Prints "<Suite>.<Test> seed=<seed> (reproduce: build/bin/reference_tests
// --gtest_filter=<Suite>.<Test>)" for the running test and returns `seed` (seeded property
// tests announce their seed this way).
uint64_t AnnounceSeed(uint64_t seed);

}  // namespace kvc::test

#endif  // KVCONFORM_REFERENCE_TESTUTIL_TESTUTIL_H_
