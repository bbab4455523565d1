// The shared test utility; see testutil.h.
#include "reference/testutil/testutil.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kvc::test {

std::string SourcePath(const std::string& relative) {
  return std::string(KVCONFORM_SOURCE_DIR) + "/" + relative;
}

Json LoadJson(const std::string& relative) {
  auto parsed = ReadJsonFileStrict(SourcePath(relative));
  if (!parsed.ok()) {
    ADD_FAILURE() << parsed.status().ToString();
    return nullptr;
  }
  return parsed->value;
}

std::vector<std::string> CodeNames(const Violations& v) {
  std::vector<std::string> out;
  for (const auto& x : v) {
    std::string n(ErrorCodeName(x.code));
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::string Describe(const Violations& v) {
  std::string out;
  for (const auto& x : v)
    out += std::string(ErrorCodeName(x.code)) + "@" + x.pointer + ": " + x.message + "\n";
  return out.empty() ? "(no violations)" : out;
}

}  // namespace kvc::test
