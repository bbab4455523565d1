// The kind table: one row per validated document kind.
#include "reference/validate/kinds.h"

#include "reference/handoff/handoff_manifest.h"
#include "reference/handoff/runtime_release.h"
#include "reference/handoff/transfer_protocol.h"
#include "reference/handoff/transfer_trace.h"
#include "reference/manifest/manifest.h"
#include "reference/trace/checker.h"

namespace kvc {
namespace {

const KindEntry kKinds[] = {
    {kManifestKind, "request/cache manifest", "M5.1 0x01", &ValidateManifest, nullptr},
    {handoff::kHandoffManifestKind, "handoff manifest", "M5.6 0x01A", &handoff::ValidateHandoffManifest, nullptr},
    {handoff::kTransferProtocolKind, "transfer protocol timeline", "M5.6 0x06", &handoff::ValidateTransferProtocol,
     nullptr},
    {handoff::kTransferTraceKind, "transfer trace", "M5.6 0x0F", &handoff::ValidateTransferTrace, nullptr},
    {handoff::kRuntimeReleaseKind, "runtime release manifest", "M5.6 0x0FE-0x0FH", &handoff::ValidateRuntimeRelease,
     nullptr},
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
