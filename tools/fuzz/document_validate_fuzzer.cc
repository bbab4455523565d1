// libFuzzer target: `kvconform validate` of arbitrary bytes, for every registered document kind.
//
// The input is one document. It is read as `validate` reads it (reference/validate/kinds.h): a
// JSON document is parsed strictly and handed to the validator of the kind it declares; a text
// whose first line parses and declares a JSON Lines kind other than the trace's (the race
// history) goes to that kind's validator whole. The trace has its own target
// (trace_check_fuzzer.cc). Validators promise (violation.h) to return every violation in a
// deterministic order and never to throw, so the target aborts when one throws, when two runs on
// the same document differ, or when a violation has no registry code, no message, or a pointer
// that is not an RFC 6901 pointer. Crashes, hangs, leaks and undefined behaviour are the
// sanitizers' to report.
// Build: tools/fuzz-check.sh SECONDS document_validate (Clang, -DKVCONFORM_FUZZ=ON). CI replays
// its seeds (fuzz_seed_replay).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "reference/base/strict_json.h"
#include "reference/errors/error_codes.h"
#include "reference/trace/checker.h"
#include "reference/validate/kinds.h"
#include "reference/validate/violation.h"

namespace {

using kvc::Violations;

[[noreturn]] void Fail(const std::string& what, std::string_view kind) {
  std::fprintf(stderr, "document_validate_fuzzer: kind %.*s: %s\n", static_cast<int>(kind.size()),
               kind.data(), what.c_str());
  std::abort();
}

std::string Render(const Violations& v) {
  std::string out;
  for (const auto& x : v) {
    out += std::string(kvc::ErrorCodeName(x.code)) + " line " + std::to_string(x.line) + " at '" +
           x.pointer + "': " + x.message + "\n";
  }
  return out;
}

void CheckShape(const Violations& v, std::string_view kind) {
  for (const auto& x : v) {
    if (x.code == kvc::ErrorCode::kNone) Fail("a violation without a registry code", kind);
    if (kvc::FindErrorCode(x.code) == nullptr)
      Fail("a violation with an unregistered code " + Render({x}), kind);
    if (x.message.empty()) Fail("a violation without a message: " + Render({x}), kind);
    if (!x.pointer.empty() && x.pointer.front() != '/')
      Fail("a pointer that is not an RFC 6901 pointer: " + Render({x}), kind);
  }
}

template <typename F>
Violations Guarded(F&& f, std::string_view kind) {
  try {
    return f();
  } catch (const std::exception& e) {
    Fail(std::string("the validator threw: ") + e.what(), kind);
  } catch (...) {
    Fail("the validator threw a non-standard exception", kind);
  }
}

// Runs `validate` twice on one document of `kind` and judges what it reports.
template <typename F>
void Judge(F&& validate, std::string_view kind) {
  const Violations a = Guarded(validate, kind);
  const Violations b = Guarded(validate, kind);
  CheckShape(a, kind);
  if (Render(a) != Render(b)) Fail("two runs differ:\n" + Render(a) + "---\n" + Render(b), kind);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (size_t{1} << 20)) return -1;  // not added to the corpus
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // A JSON Lines document names its kind on its first line.
  const size_t nl = text.find('\n');
  if (nl != std::string_view::npos && nl + 1 < text.size()) {
    auto header = kvc::ParseJsonStrict(text.substr(0, nl), "fuzz.jsonl");
    const std::string kind = header.ok() ? kvc::KindOf(header->value) : "";
    const kvc::KindEntry* k = kvc::FindKind(kind);
    if (k && k->validate_jsonl && kind != std::string_view(kvc::trace::kTraceKind)) {
      Judge([&] { return k->validate_jsonl(text, "fuzz.jsonl"); }, kind);
      return 0;
    }
  }

  auto doc = kvc::ParseJsonStrict(text, "fuzz.json", /*record_locations=*/true);
  if (!doc.ok()) return 0;
  const std::string kind = kvc::KindOf(doc->value);
  const kvc::KindEntry* k = kvc::FindKind(kind);
  if (k && k->validate_json) Judge([&] { return k->validate_json(doc->value); }, kind);
  return 0;
}
