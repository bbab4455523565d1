// The shared test utility; see testutil.h.
#include "reference/testutil/testutil.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <system_error>

namespace kvc::test {

std::string SourcePath(const std::string& relative) {
  const char* env = std::getenv("KVCONFORM_SOURCE_DIR");
  std::string path = env && *env ? env : KVCONFORM_SOURCE_DIR;  // appended in place
  path += '/';
  path += relative;
  return path;
}

TempDir::TempDir() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  path_ = std::filesystem::temp_directory_path() /
          ("kvc_test_" + std::to_string(::getpid()) + "_" +
           (info ? std::string(info->test_suite_name()) + "." + info->name() : "none"));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;  // a destructor reports nothing
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::Write(const std::string& name, const std::string& text) const {
  const std::filesystem::path p = path_ / name;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

Json LoadJson(const std::string& relative) {
  auto parsed = ReadJsonFileStrict(SourcePath(relative));
  if (!parsed.ok()) {
    ADD_FAILURE() << parsed.status().ToString();
    return nullptr;
  }
  return parsed->value;
}

std::vector<std::string> SourceLines(const std::string& relative) {
  std::ifstream in(SourcePath(relative));
  if (!in) ADD_FAILURE() << "cannot read " << SourcePath(relative);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

Violations CheckSourceTrace(const std::string& relative, const trace::CheckerOptions& options) {
  trace::TraceChecker c(relative, options);
  const std::vector<std::string> lines = SourceLines(relative);
  for (size_t i = 0; i < lines.size(); ++i) c.Feed(lines[i], static_cast<uint32_t>(i + 1));
  return c.Finish(false);
}

std::vector<std::string> CodeNames(const Violations& v) {
  std::vector<std::string> out;
  for (const auto& x : v) {
    std::string n(ErrorCodeName(x.code));
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::vector<std::string> AllCodeNames(const Violations& v) {
  std::vector<std::string> out;
  for (const auto& x : v) out.emplace_back(ErrorCodeName(x.code));
  return out;
}

::testing::AssertionResult OnlyViolationAt(const Violations& v, const std::string& code,
                                           const std::string& pointer) {
  // One violation, not one distinct code: CodeNames folds a repeated code (a rule judged twice).
  if (v.size() != 1 || ErrorCodeName(v.front().code) != code)
    return ::testing::AssertionFailure() << "expected exactly one " << code << ", got\n"
                                         << Describe(v);
  if (v.front().pointer != pointer)
    return ::testing::AssertionFailure()
           << code << " at \"" << v.front().pointer << "\", expected at \"" << pointer << "\"";
  return ::testing::AssertionSuccess();
}

std::string Describe(const Violations& v) {
  std::string out;
  for (const auto& x : v)
    out += std::string(ErrorCodeName(x.code)) + "@" + x.pointer + ": " + x.message + "\n";
  return out.empty() ? "(no violations)" : out;
}

uint64_t AnnounceSeed(uint64_t seed) {
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name =
      t ? std::string(t->test_suite_name()) + "." + t->name() : std::string("(no test)");
  std::printf("%s seed=%llu (reproduce: build/bin/reference_tests --gtest_filter=%s)\n",
              name.c_str(), static_cast<unsigned long long>(seed), name.c_str());
  return seed;
}

std::string RenderTraceViolations(const Violations& v,
                                  const std::vector<trace::TraceChecker::Context>& contexts) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i)
    out += std::to_string(v[i].line) + " " + std::string(ErrorCodeName(v[i].code)) + " " +
           v[i].pointer + " [" + contexts[i].event_id + "|" + contexts[i].request_id + "] " +
           v[i].message + "\n";
  return out;
}

}  // namespace kvc::test
