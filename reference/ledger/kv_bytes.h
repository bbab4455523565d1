// Per-token K/V bytes from a cache ABI and the ragged logical-ledger sensitivity terms.
//
// M5.1 0x02 "Deriving One Token From The Cache ABI" and 0x09 "Deriving The Sensitivity
// Surface": B_token = L_cache * H_kv_local * d_h * (b_K + b_V); B_logical = B_token *
// sum T_i; B_materialized = B_token * sum c_i T_i; B_rectangular = B_token * N * max T_i
// (N: the requests with T_i > 0, which own committed cache state); B_phantom = B_rectangular -
// B_logical. All arithmetic is overflow-checked.
#ifndef KVCONFORM_REFERENCE_LEDGER_KV_BYTES_H_
#define KVCONFORM_REFERENCE_LEDGER_KV_BYTES_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "reference/base/status.h"
#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc {

struct CacheGeometry {
  uint64_t layers = 0;          // L_cache: cache-producing layers
  uint64_t kv_heads_local = 0;  // H_kv,local: K/V heads owned by this shard
  uint64_t head_dim = 0;        // d_h
  uint64_t k_bytes = 0;         // b_K: bytes per K scalar
  uint64_t v_bytes = 0;         // b_V: bytes per V scalar
};

// B_token; InvalidArgument when any extent or width is zero, OutOfRange on overflow.
StatusOr<uint64_t> BytesPerToken(const CacheGeometry& g);

struct RaggedLedger {
  uint64_t bytes_per_token = 0;
  uint64_t logical = 0;
  uint64_t materialized = 0;
  uint64_t rectangular = 0;
  uint64_t phantom = 0;
};

// `lengths` are committed lengths T_i; `copies` are materialized copy counts c_i (same
// size as lengths, each >= 1) or empty for one copy each.
StatusOr<RaggedLedger> ComputeRaggedLedger(const CacheGeometry& g, std::span<const uint64_t> lengths,
                                           std::span<const uint64_t> copies);

// Bytes per scalar for a dtype name (kKnownDtypeNames; torch spellings like "torch.bfloat16"
// too); nullopt if unknown. A name is a K/V payload element's: a representation with scales or
// other metadata (fp8 with per-block scales, nvfp4) is another cache ABI (M5.1 0x02).
std::optional<uint64_t> DtypeBytes(std::string_view name);
// The names DtypeBytes knows, as messages and docs list them.
inline constexpr const char* kKnownDtypeNames =
    "float64 double fp64 F64, float32 float fp32 F32, float16 half fp16 F16, bfloat16 bf16 BF16 "
    "(8, 4, 2, 2 bytes); float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz fp8 fp8_e4m3 "
    "fp8_e5m2 int8 uint8 (1 byte)";

// The full_kv cache geometry of a Hugging Face config.json: L_cache = num_hidden_layers minus
// num_kv_shared_layers (layers reusing another layer's K/V produce no rows), num_key_value_heads
// or num_attention_heads, head_dim or hidden_size / num_attention_heads, torch_dtype or
// `dtype_override`. A config whose cache is not full K/V rows of one d_h is refused, naming the
// field (M5.1 0x02: latent or quantized state needs a different cache ABI, not a correction):
// kv_lora_rank (latent/MLA), kv_cache_dtype or quantization_config.{kv_cache_dtype,
// kv_cache_scheme, kv_cache_quant_algo} (quantized K/V), a v_head_dim other than the K head dim.
// A composite (multimodal) config whose top level has no num_hidden_layers is read from its
// text_config object (the language model's config), with the dtype from there or else from the
// top level; a quantized-cache declaration at either level is refused.
// Errors name the missing or inconsistent field (text_config.<field> for a nested one).
// Messages about the config name it `source` ("<source>: missing field ..."); a refusal of
// `dtype_override` names the --dtype flag instead.
StatusOr<CacheGeometry> GeometryFromHfConfig(const Json& config,
                                             std::string_view dtype_override = "",
                                             std::string_view source = "config.json");

// Reads the compact cache-ABI binding shared by the ledger-family documents (byte trajectory,
// service trace): member "cache_abi" of `top` = {cache_family: "full_kv", num_cache_layers,
// kv_heads_per_rank, head_dim, key_bytes_per_scalar, value_bytes_per_scalar}. Fills `g` with
// what was readable and records INPUT_* violations through `top`'s sink; returns the object
// (null when absent or not an object).
const Json* ReadCacheAbiBinding(FieldReader& top, Violations* out, CacheGeometry* g);

// `kvconform.kv_bytes/1` (docs/ledger-format.md): the payload-size worked numbers of M5.1 0x02
// ("Numeric Scale Check: GQA Versus MHA", the ragged [5, 2] rectangle) as data. The document
// binds a cache ABI (ReadCacheAbiBinding), optionally its query heads per rank (H_q,local: a
// K/V head serves a group of query heads, so H_kv,local divides it, and H_q never enters
// B_token), committed lengths T_i and optional copy counts c_i, and declares bytes_per_token
// and the expected logical, materialized, rectangular and phantom bytes; the validator
// recomputes them (ComputeRaggedLedger). Codes: INPUT_* (form), LEDGER_ABI_INVALID (a zero
// extent, or H_kv,local not dividing H_q,local), LEDGER_TOKEN_COEFFICIENT_DRIFT (B_token),
// LEDGER_EXPECTED_DRIFT (an expected ledger), INPUT_ARITHMETIC_OVERFLOW.
inline constexpr const char* kKvBytesKind = "kvconform.kv_bytes/1";
Violations ValidateKvBytes(const Json& doc);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_LEDGER_KV_BYTES_H_
