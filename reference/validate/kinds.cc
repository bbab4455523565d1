// The kind table: one row per validated document kind.
#include "reference/validate/kinds.h"

#include "reference/manifest/manifest.h"
#include "reference/trace/checker.h"

namespace kvc {
namespace {

const KindEntry kKinds[] = {
    {kManifestKind, "request/cache manifest", "M5.1 0x01", &ValidateManifest, nullptr},
    {trace::kTraceKind, "runtime mutation trace", "M5.1 0x01/0x03/0x05/0x07",  nullptr,
     &trace::ValidateTraceJsonl},
};

}  // namespace

std::span<const KindEntry> AllKinds() { return kKinds; }

const KindEntry* FindKind(std::string_view kind) {
  for (const auto& k : kKinds)
    if (k.kind == kind) return &k;
  return nullptr;
}

}  // namespace kvc
