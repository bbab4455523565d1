// The one-control sensitivity suite of M5.1 0x09 "Worked One-Control Sensitivity Suite".
//
// Document kind "kvconform.ledger_sensitivity/1" (docs/ledger-format.md): a base case
// (geometry incl. query heads, live requests with committed lengths T_i and materialized
// copies c_i, and its expected ledger) and sweeps that each restate the whole case with
// exactly one control changed. Controls: "num_cache_layers", "num_query_heads",
// "kv_heads_per_rank", "head_dim", "bytes_per_scalar" (b_K and b_V together),
// "requests/<id>/committed_tokens", "requests/<id>/copies" and "concurrency" (requests
// added or removed). Every ledger (beta, logical, materialized, rectangular, phantom) is
// recomputed with ComputeRaggedLedger; query heads never enter beta, so a query-head sweep
// leaves every byte ledger invariant.
//
// Gating: schema (INPUT_*) stops; a base with impossible geometry or zero copies/lengths
// stops; a sweep whose own case is impossible is reported and not diffed; the control diff
// and the expected ledgers are checked per sweep.
#ifndef KVCONFORM_REFERENCE_LEDGER_SENSITIVITY_H_
#define KVCONFORM_REFERENCE_LEDGER_SENSITIVITY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "reference/base/strict_json.h"
#include "reference/ledger/kv_bytes.h"
#include "reference/validate/violation.h"

namespace kvc {

inline constexpr const char* kLedgerSensitivityKind = "kvconform.ledger_sensitivity/1";

struct SensitivityRequest {
  std::string id;
  uint64_t committed = 0;  // T_i
  uint64_t copies = 0;     // c_i
};

struct SensitivityCase {
  CacheGeometry geometry;
  uint64_t query_heads = 0;  // H_q: validated against H_kv,local, never part of beta
  std::vector<SensitivityRequest> requests;
};

// The controls that differ between `base` and `sweep` (names as in the file comment), in
// a fixed order. Exactly one entry means a legal one-control sweep.
std::vector<std::string> ChangedControls(const SensitivityCase& base, const SensitivityCase& sweep);

// Every violation of the sensitivity-suite contract, in check order.
Violations ValidateLedgerSensitivity(const Json& doc);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_LEDGER_SENSITIVITY_H_
