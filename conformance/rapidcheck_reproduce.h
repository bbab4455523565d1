// The reproduce lines of conformance_tests' RapidCheck suites, one printer for every file.
#ifndef KVCONFORM_CONFORMANCE_RAPIDCHECK_REPRODUCE_H_
#define KVCONFORM_CONFORMANCE_RAPIDCHECK_REPRODUCE_H_

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace kvc::test {

// Prints, when one of `suites` starts, the run's RapidCheck seed and the command that reruns the
// suite under it; after a failed test of them, the command that replays its shrunk counterexample
// alone (RapidCheck prints the reproduce string itself when the binary exits). Lines start with
// "[tag] "; other suites print nothing here.
class RapidCheckReproducePrinter : public ::testing::EmptyTestEventListener {
 public:
  RapidCheckReproducePrinter(std::string tag, std::vector<std::string> suites)
      : tag_(std::move(tag)), suites_(std::move(suites)) {}
  void OnTestSuiteStart(const ::testing::TestSuite& suite) override {
    if (!Mine(suite.name())) return;
    const uint64_t seed = rc::detail::configuration().testParams.seed;
    std::cout << "[" << tag_ << "] " << suite.name() << ": RapidCheck seed=" << seed
              << "; rerun: RC_PARAMS=\"seed=" << seed
              << "\" build/bin/conformance_tests --gtest_filter='" << suite.name() << ".*'\n";
  }
  void OnTestEnd(const ::testing::TestInfo& test) override {
    if (!Mine(test.test_suite_name()) || !test.result()->Failed()) return;
    std::cout << "[" << tag_
              << "] replay the shrunk case: RC_PARAMS=\"reproduce=<the string RapidCheck prints "
                 "at exit>\" build/bin/conformance_tests --gtest_filter='"
              << test.test_suite_name() << "." << test.name() << "'\n";
  }

 private:
  bool Mine(const char* suite) const {
    return std::find(suites_.begin(), suites_.end(), suite) != suites_.end();
  }
  std::string tag_;
  std::vector<std::string> suites_;
};

// Appends a printer to GoogleTest's listeners (which own it); for a namespace-scope initializer.
inline bool RegisterRapidCheckReproducer(std::string tag, std::vector<std::string> suites) {
  ::testing::UnitTest::GetInstance()->listeners().Append(
      new RapidCheckReproducePrinter(std::move(tag), std::move(suites)));
  return true;
}

}  // namespace kvc::test

#endif  // KVCONFORM_CONFORMANCE_RAPIDCHECK_REPRODUCE_H_
