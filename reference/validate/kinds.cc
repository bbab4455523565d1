// The kind table: one row per validated document kind.
#include "reference/validate/kinds.h"

#include "reference/handoff/handoff_manifest.h"
#include "reference/handoff/runtime_release.h"
#include "reference/handoff/transfer_protocol.h"
#include "reference/handoff/transfer_trace.h"
#include "reference/ledger/byte_trajectory.h"
#include "reference/ledger/kv_bytes.h"
#include "reference/ledger/sensitivity.h"
#include "reference/manifest/manifest.h"
#include "reference/race/history.h"
#include "reference/saved_work/saved_work_fixture.h"
#include "reference/service/service_trace.h"
#include "reference/trace/checker.h"

namespace kvc {
namespace {

const KindEntry kKinds[] = {
    {kManifestKind, "request/cache manifest", "M5.1 0x01", &ValidateManifest, nullptr},
    {kByteTrajectoryKind, "byte trajectory", "M5.1 0x02", &ValidateByteTrajectory, nullptr},
    {kKvBytesKind, "K/V byte sizes", "M5.1 0x02", &ValidateKvBytes, nullptr},
    {kLedgerSensitivityKind, "ledger sensitivity suite", "M5.1 0x09", &ValidateLedgerSensitivity,
     nullptr},
    {handoff::kHandoffManifestKind, "handoff manifest", "M5.6 0x01A",
     &handoff::ValidateHandoffManifest, nullptr},
    {handoff::kTransferProtocolKind, "transfer protocol timeline", "M5.6 0x06",
     &handoff::ValidateTransferProtocol, nullptr},
    {handoff::kTransferTraceKind, "transfer trace", "M5.6 0x0F", &handoff::ValidateTransferTrace,
     nullptr},
    {handoff::kRuntimeReleaseKind, "runtime release manifest", "M5.6 0x0FE-0x0FH",
     &handoff::ValidateRuntimeRelease, nullptr},
    {kServiceTraceKind, "service trace", "M5.1 0x05", &ValidateServiceTrace, nullptr},
    {kSavedWorkKind, "saved-work ledger and frontier", "M5.1 0x03", &ValidateSavedWorkFixture,
     nullptr},
    {trace::kTraceKind, "runtime mutation trace", "M5.1 0x01/0x03/0x05/0x07", nullptr,
     &trace::ValidateTraceJsonl},
    {race::kHistoryKind, "race history", "M5.1 0x01 Cancellation, Retry, And Release Races",
     nullptr, &race::ValidateHistoryJsonl},
};

}  // namespace

std::span<const KindEntry> AllKinds() { return kKinds; }

std::string KindOf(const Json& doc) {
  if (doc.is_object()) {
    auto it = doc.find("kind");
    if (it != doc.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

const KindEntry* FindKind(std::string_view kind) {
  for (const auto& k : kKinds)
    if (k.kind == kind) return &k;
  return nullptr;
}

}  // namespace kvc
