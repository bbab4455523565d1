// K/V byte coefficients and the ragged sensitivity ledger; see kv_bytes.h.
#include "reference/ledger/kv_bytes.h"

#include <algorithm>
#include <string>
#include <vector>

#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"

namespace kvc {

StatusOr<uint64_t> BytesPerToken(const CacheGeometry& g) {
  if (g.layers == 0 || g.kv_heads_local == 0 || g.head_dim == 0)
    return InvalidArgument("layers, kv heads and head dim must all be positive");
  if (g.k_bytes == 0 || g.v_bytes == 0)
    return InvalidArgument("K and V bytes per scalar must be positive");
  auto width = CheckedAdd(g.k_bytes, g.v_bytes);
  if (!width) return OutOfRange("b_K + b_V overflows 64 bits");
  auto b = CheckedProduct({g.layers, g.kv_heads_local, g.head_dim, *width});
  if (!b) return OutOfRange("L * H_kv * d_h * (b_K + b_V) overflows 64 bits");
  return *b;
}

StatusOr<RaggedLedger> ComputeRaggedLedger(const CacheGeometry& g, std::span<const uint64_t> lengths,
                                           std::span<const uint64_t> copies) {
  if (!copies.empty() && copies.size() != lengths.size())
    return InvalidArgument("--copies must list one count per length (" +
                           std::to_string(lengths.size()) + " lengths, " +
                           std::to_string(copies.size()) + " copies)");
  RaggedLedger r;
  KVC_ASSIGN_OR_RETURN(r.bytes_per_token, BytesPerToken(g));
  uint64_t sum_t = 0, sum_ct = 0, max_t = 0;
  // N counts the requests that own committed cache state (M5.1 0x02: "N(tau) state-owning
  // requests", A_KV): a length of 0 owns none and pads nothing (probe 33: it widened the
  // rectangle by a row).
  uint64_t owning = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] > 0) ++owning;
    uint64_t c = copies.empty() ? 1 : copies[i];
    if (c == 0) return InvalidArgument("copy count of request " + std::to_string(i) + " is zero");
    auto st = CheckedAdd(sum_t, lengths[i]);
    auto ct = CheckedMul(c, lengths[i]);
    if (!st || !ct) return OutOfRange("token sums overflow 64 bits");
    auto sct = CheckedAdd(sum_ct, *ct);
    if (!sct) return OutOfRange("token sums overflow 64 bits");
    sum_t = *st;
    sum_ct = *sct;
    max_t = std::max(max_t, lengths[i]);
  }
  auto logical = CheckedMul(r.bytes_per_token, sum_t);
  auto mat = CheckedMul(r.bytes_per_token, sum_ct);
  auto rect = CheckedProduct({r.bytes_per_token, owning, max_t});
  if (!logical || !mat || !rect) return OutOfRange("byte ledger overflows 64 bits");
  r.logical = *logical;
  r.materialized = *mat;
  r.rectangular = *rect;
  r.phantom = *rect - *logical;  // N * max >= sum, so no underflow
  return r;
}

namespace {

// Said where a refused config marks hybrid or linear-attention layers (probe 98), not of
// cross-attention layers, which hold another modality's K/V (probe 99).
constexpr const char* kRecurrentStateNote =
    " (the per-request state of state-space or linear-attention layers is another cache ABI, not "
    "counted)";

}  // namespace

std::optional<uint64_t> DtypeBytes(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  if (name == "float64" || name == "double" || name == "fp64" || name == "F64") return 8;
  if (name == "float32" || name == "float" || name == "fp32" || name == "F32") return 4;
  if (name == "float16" || name == "half" || name == "fp16" || name == "F16") return 2;
  if (name == "bfloat16" || name == "bf16" || name == "BF16") return 2;
  if (name == "float8_e4m3fn" || name == "float8_e5m2" || name == "float8_e4m3fnuz" ||
      name == "float8_e5m2fnuz" || name == "fp8" || name == "fp8_e4m3" || name == "fp8_e5m2")
    return 1;
  if (name == "int8" || name == "uint8") return 1;
  return std::nullopt;
}

StatusOr<CacheGeometry> GeometryFromHfConfig(const Json& config, std::string_view dtype_override,
                                             std::string_view source) {
  // What each message about the config starts with.
  const std::string at = std::string(source) + ": ";
  if (!config.is_object()) return InvalidArgument(at + "expected a JSON object");
  // A composite (multimodal) config keeps its language model's config, whose layers produce
  // the K/V cache, in text_config (transformers' Gemma3Config, Llama4Config, LlavaConfig, ...):
  // the geometry is read there when the top level declares no layers of its own.
  auto present = [](const Json& obj, const char* key) {
    auto it = obj.find(key);
    return it != obj.end() && !it->is_null();
  };
  const Json* text_config = nullptr;  // the text_config object, when there is one
  if (auto t = config.find("text_config"); t != config.end() && t->is_object()) {
    text_config = &*t;
  } else if (t != config.end() && !t->is_null()) {
    // Not taken as absent (until 2026-12-07 an array there was "missing field
    // num_hidden_layers").
    return InvalidArgument(at + "field text_config is " +
                           base::JsonTypeWithArticle(t->type_name()) +
                           ", expected an object (a composite config's text model)");
  }
  const Json* text = !present(config, "num_hidden_layers") && text_config ? text_config : &config;
  const Json& c = *text;
  const bool nested = text != &config;
  // A field of `level` (the top level or text_config) as messages name it.
  auto name_at = [&](const Json* level, const std::string& key) {
    return (level == &config ? std::string() : std::string("text_config.")) + key;
  };
  auto name = [&](const char* key) { return name_at(text, key); };
  auto get_pos = [&](const char* key) -> StatusOr<uint64_t> {
    auto it = c.find(key);
    if (it == c.end()) return InvalidArgument(at + "missing field " + name(key));
    // (An unsigned value beyond 2^63 - 1 is too large, not "not positive": probe 35.)
    if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t{INT64_MAX})
      return InvalidArgument(at + "field " + name(key) + " is too large (" +
                             base::ClippedJsonText(it->dump()) + " > 2^63 - 1)");
    if (!it->is_number_integer() || it->get<int64_t>() <= 0)
      return InvalidArgument(at + "field " + name(key) + " must be a positive integer, got " +
                             base::ClippedJsonText(it->dump()));
    return it->get<uint64_t>();
  };
  // A member of the geometry's level, else of the other one (a composite config may declare
  // it beside its text_config or inside it).
  // Two values that differ are refused rather than one picked (probe 27).
  const Json* other_level = nested ? &config : text_config;
  std::string either_name;  // the field either() found, as messages name it
  auto either = [&](const char* key) -> StatusOr<const Json*> {
    const Json* found = nullptr;
    for (const Json* level : {text, other_level}) {
      if (!level || !present(*level, key)) continue;
      if (found && *found != (*level)[key])
        return InvalidArgument(
            at + "fields " + either_name + " (" + base::ClippedJsonText(found->dump()) + ") and " +
            name_at(level, key) + " (" + base::ClippedJsonText((*level)[key].dump()) + ") differ");
      if (!found) {
        found = &(*level)[key];
        either_name = name_at(level, key);
      }
    }
    return found;
  };

  // A cache that is not full K/V rows of one d_h is another ABI, whichever level declares it
  // (the top level, or text_config whether or not the geometry is read there).
  std::vector<const Json*> levels = {&config};
  if (text_config) levels.push_back(text_config);
  for (const Json* level : levels) {
    const std::string prefix = name_at(level, "");
    // A latent (MLA) cache stores a compressed per-token latent, not K/V rows of [H_kv, d_h]:
    // M5.1 0x02 gives it a different cache ABI, not a correction factor after this one.
    if (present(*level, "kv_lora_rank"))
      return InvalidArgument(at + "field " + prefix + "kv_lora_rank (" +
                             base::ClippedJsonText((*level)["kv_lora_rank"].dump()) +
                             ") declares a latent (MLA) cache; its bytes per token need a "
                             "different cache ABI than L_cache * H_kv * d_h * (b_K + b_V) (M5.1 "
                             "0x02), which kv-bytes does not compute");
    // Quantized K/V (a KV-cache dtype or scheme of its own, with its scales) is likewise
    // another ABI.
    if (present(*level, "kv_cache_dtype"))
      return InvalidArgument(at + "field " + prefix + "kv_cache_dtype (" +
                             base::ClippedJsonText((*level)["kv_cache_dtype"].dump()) +
                             ") declares a quantized K/V cache; it needs a different cache ABI "
                             "(M5.1 0x02), which kv-bytes does not compute");
    if (auto q = level->find("quantization_config"); q != level->end() && q->is_object()) {
      for (const char* key : {"kv_cache_dtype", "kv_cache_scheme", "kv_cache_quant_algo"})
        if (present(*q, key))
          return InvalidArgument(at + "field " + prefix + "quantization_config." + key + " (" +
                                 base::ClippedJsonText((*q)[key].dump()) +
                                 ") declares a quantized K/V cache; it needs a different cache "
                                 "ABI (M5.1 0x02), which kv-bytes does not compute");
    }
    // Layers of more than one K/V shape, or attention layers that store no row per token
    // (cross-attention to another modality's states, state-space or linear-attention layers):
    // L_cache * H_kv * d_h is not one product over the layers (probe 25: Llama 3.2 Vision's
    // cross-attention layers and Gemma 4's global layers were counted as ordinary layers).
    // (probe 27: hybrid and linear-attention models mark such layers under further names, and in
    // layer_types; a value that declares nothing, empty, false or 0, is no declaration.)
    for (const char* key :
         {"cross_attention_layers", "global_head_dim", "num_global_key_value_heads",
          "attention_k_eq_v", "attn_layer_indices", "layers_block_type", "hybrid_override_pattern",
          "full_attn_idxs", "linear_attn_config", "attn_layer_period", "attn_layer_offset",
          "use_cla", "cla_share_factor", "full_attention_interval", "block_types",
          "attn_type_list"}) {
      if (!present(*level, key)) continue;
      const Json& v = (*level)[key];
      if (((v.is_array() || v.is_object()) && v.empty()) ||
          (v.is_string() && v.get_ref<const std::string&>().empty()) ||
          (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v.get<double>() == 0))
        continue;
      // (The recurrent-state note only where the key marks hybrid or linear-attention layers:
      // probe 99, it was also said of cross-attention layers.)
      const std::string_view k(key);
      const bool hybrid = k == "attn_layer_indices" || k == "layers_block_type" ||
                          k == "hybrid_override_pattern" || k == "full_attn_idxs" ||
                          k == "linear_attn_config" || k == "attn_layer_period" ||
                          k == "attn_layer_offset" || k == "full_attention_interval" ||
                          k == "block_types" || k == "attn_type_list";
      return InvalidArgument(
          at + "field " + prefix + key + " (" + base::ClippedJsonText(v.dump()) +
          ") declares layers whose K/V is not one row of one shape per token; kv-bytes computes "
          "L_cache * H_kv * d_h * (b_K + b_V) for identical layers only (M5.1 0x02): pass the "
          "geometry of the cache-producing layers as flags" +
          (hybrid ? kRecurrentStateNote : ""));
    }
  }
  // layer_types may name full, sliding-window or chunked attention layers (one K/V row of one
  // shape per token each: the window changes how many rows are kept, not B_token); any other
  // kind (linear attention, state-space, convolution) stores no such row.
  for (const Json* level : levels)
    if (auto lt = level->find("layer_types"); lt != level->end() && lt->is_array())
      for (const Json& kind : *lt)
        if (!kind.is_string() || (kind != "full_attention" && kind != "sliding_attention" &&
                                  kind != "chunked_attention"))
          return InvalidArgument(
              at + "field " + name_at(level, "") + "layer_types holds " +
              base::ClippedJsonText(kind.dump()) +
              ", a layer without one K/V row of the full-attention shape per token; kv-bytes "
              "computes L_cache * H_kv * d_h * (b_K + b_V) for attention layers only (M5.1 0x02): "
              "pass the geometry of the cache-producing layers as flags" +
              (kind.is_string() &&
                       kind.get_ref<const std::string&>().find("cross") == std::string::npos
                   ? kRecurrentStateNote
                   : ""));
  CacheGeometry g;
  KVC_ASSIGN_OR_RETURN(g.layers, get_pos("num_hidden_layers"));
  // L_cache counts cache-producing layers: a layer that reuses another layer's K/V
  // (num_kv_shared_layers, cross-layer sharing) produces no rows of its own.
  KVC_ASSIGN_OR_RETURN(const Json* shared_member, either("num_kv_shared_layers"));
  if (shared_member) {
    const Json& shared = *shared_member;
    if (!shared.is_number_integer() || shared.get<int64_t>() < 0 ||
        shared.get<uint64_t>() >= g.layers)
      return InvalidArgument(at + "field " + either_name + " must be an integer in 0.." +
                             std::to_string(g.layers - 1) +
                             " (fewer than num_hidden_layers), got " +
                             base::ClippedJsonText(shared.dump()));
    g.layers -= shared.get<uint64_t>();
  }
  KVC_ASSIGN_OR_RETURN(uint64_t heads, get_pos("num_attention_heads"));
  // A nested text_config leaves out members equal to its own model type's defaults (Gemma 3's
  // head_dim 256, Mistral's 8 K/V heads), which are not the full-attention defaults below: a
  // missing one is refused there, not guessed (probe 25: Gemma 3 12B printed head_dim 240).
  for (const char* key : {"num_key_value_heads", "head_dim"})
    if (nested && !present(c, key))
      return InvalidArgument(
          at + "missing field text_config." + std::string(key) +
          ": a composite config's text_config omits members equal to its model type's defaults "
          "(model_type " +
          // text_config's own model_type, else the composite's (until 2026-12-07 "unnamed"
          // beside a top-level "gemma3").
          (c.contains("model_type") ? base::ClippedJsonText(c["model_type"].dump())
           : config.contains("model_type")
               ? base::ClippedJsonText(config["model_type"].dump()) + " at the top level"
               : std::string("unnamed")) +
          "), which kv-bytes does not know; pass the geometry as flags");
  // The K/V head count, as transformers reads it: num_key_value_heads; Falcon's num_kv_heads
  // under new_decoder_architecture, and one shared K/V head under multi_query (Falcon-7B,
  // GPT-BigCode); ChatGLM's multi_query_group_num under multi_query_attention; else every
  // attention head (probe 35: Falcon-7B printed 71 K/V heads, 71 times its cache).
  auto flag = [&](const char* key) {
    return present(c, key) && c[key].is_boolean() && c[key].get<bool>();
  };
  if (present(c, "num_key_value_heads")) {
    KVC_ASSIGN_OR_RETURN(g.kv_heads_local, get_pos("num_key_value_heads"));
  } else if (flag("new_decoder_architecture") && present(c, "num_kv_heads")) {
    KVC_ASSIGN_OR_RETURN(g.kv_heads_local, get_pos("num_kv_heads"));
  } else if (flag("multi_query")) {
    g.kv_heads_local = 1;
  } else if (flag("multi_query_attention") && present(c, "multi_query_group_num")) {
    KVC_ASSIGN_OR_RETURN(g.kv_heads_local, get_pos("multi_query_group_num"));
  } else if (present(c, "num_kv_heads") || present(c, "multi_query_group_num")) {
    return InvalidArgument(
        at + "field " +
        name(present(c, "num_kv_heads") ? "num_kv_heads" : "multi_query_group_num") +
        " is set without the flag that makes the model use it (new_decoder_architecture, "
        "multi_query_attention): the K/V head count is not known; pass the geometry as flags");
  } else {
    g.kv_heads_local = heads;
  }
  if (heads % g.kv_heads_local != 0)
    return InvalidArgument(at + name("num_attention_heads") + " (" + std::to_string(heads) +
                           ") is not a multiple of " + name("num_key_value_heads") + " (" +
                           std::to_string(g.kv_heads_local) + ")");
  if (present(c, "head_dim")) {
    KVC_ASSIGN_OR_RETURN(g.head_dim, get_pos("head_dim"));
  } else {
    KVC_ASSIGN_OR_RETURN(uint64_t hidden, get_pos("hidden_size"));
    if (hidden % heads != 0)
      return InvalidArgument(at + name("hidden_size") +
                             " is not a multiple of num_attention_heads and head_dim is absent");
    g.head_dim = hidden / heads;
  }
  // One d_h serves K and V rows in this ABI; a V head of another width is another ABI.
  KVC_ASSIGN_OR_RETURN(const Json* v_member, either("v_head_dim"));
  if (v_member) {
    if (!v_member->is_number_integer() || v_member->get<int64_t>() <= 0)
      return InvalidArgument(at + "field " + either_name + " must be a positive integer, got " +
                             base::ClippedJsonText(v_member->dump()));
    const uint64_t v_head_dim = v_member->get<uint64_t>();
    if (v_head_dim != g.head_dim)
      return InvalidArgument(at + "field " + either_name + " (" + std::to_string(v_head_dim) +
                             ") differs from the K head dim " + std::to_string(g.head_dim) +
                             "; the full_kv cache ABI has one d_h for K and V rows (M5.1 0x02)");
  }
  // The K/V dtype: the language model's, else the whole model's (composite configs often
  // declare it at the top level only).
  // torch_dtype and dtype (its newer name) at one level must agree: which one the weights use
  // is not known otherwise (probe 35: float32 beside bfloat16 took the first silently).
  std::string dtype(dtype_override);
  for (const Json* level : {text, &config}) {
    if (!dtype.empty()) break;
    auto t = level->find("torch_dtype"), d = level->find("dtype");
    // A dtype of another JSON type names no dtype, and is not taken as absent (until 2026-12-07
    // "torch_dtype": 5 was "no torch_dtype"); null is absent, as transformers writes it.
    for (auto [it, key] : {std::pair{t, "torch_dtype"}, std::pair{d, "dtype"}})
      if (it != level->end() && !it->is_string() && !it->is_null())
        return InvalidArgument(at + "field " + name_at(level, key) + " is " +
                               base::JsonTypeWithArticle(it->type_name()) +
                               ", not a dtype name (known: " + std::string(kKnownDtypeNames) +
                               "); pass --dtype to name the K/V dtype");
    const bool has_t = t != level->end() && t->is_string(),
               has_d = d != level->end() && d->is_string();
    if (has_t && has_d && DtypeBytes(t->get<std::string>()) != DtypeBytes(d->get<std::string>()))
      return InvalidArgument(at + "fields " + name_at(level, "torch_dtype") + " (" +
                             base::ClippedJsonText(t->dump()) + ") and " + name_at(level, "dtype") +
                             " (" + base::ClippedJsonText(d->dump()) +
                             ") disagree; pass --dtype to name the K/V dtype");
    if (has_t)
      dtype = t->get<std::string>();
    else if (has_d)
      dtype = d->get<std::string>();
  }
  if (dtype.empty())
    return InvalidArgument(at + "no torch_dtype; pass --dtype to name the K/V dtype");
  auto b = DtypeBytes(dtype);
  if (!b)
    return InvalidArgument((dtype_override.empty() ? at : std::string("--dtype: ")) +
                           "unknown dtype " + base::QuoteClipped(dtype) +
                           " (known: " + std::string(kKnownDtypeNames) + ")");
  g.k_bytes = g.v_bytes = *b;
  return g;
}

const Json* ReadCacheAbiBinding(FieldReader& top, Violations* out, CacheGeometry* g) {
  const Json* abi_obj = top.Object("cache_abi");
  FieldReader abi(abi_obj, top.Ptr("cache_abi"), out);
  abi.Enum("cache_family", {"full_kv"});
  if (auto x = abi.Uint("num_cache_layers")) g->layers = *x;
  if (auto x = abi.Uint("kv_heads_per_rank")) g->kv_heads_local = *x;
  if (auto x = abi.Uint("head_dim")) g->head_dim = *x;
  if (auto x = abi.Uint("key_bytes_per_scalar", 0, 64)) g->k_bytes = *x;
  if (auto x = abi.Uint("value_bytes_per_scalar", 0, 64)) g->v_bytes = *x;
  abi.RejectUnknownFields();
  return abi_obj;
}

Violations ValidateKvBytes(const Json& doc) {
  Violations v;
  FieldReader top(&doc, "", &v);
  top.Enum("kind", {kKvBytesKind});
  top.OptString("description");
  top.OptString("seed_ref");
  CacheGeometry g;
  ReadCacheAbiBinding(top, &v, &g);
  const std::optional<uint64_t> query_heads = top.OptUint("query_heads_per_rank");
  std::vector<uint64_t> lengths, copies;
  if (const Json* a = top.Array("committed_lengths"))
    if (auto x = FieldReader::UintArray(*a, "/committed_lengths", &v)) lengths = *x;
  if (const Json* a = top.OptArray("copies"))
    if (auto x = FieldReader::UintArray(*a, "/copies", &v)) copies = *x;
  const std::optional<uint64_t> declared_bpt =
      top.Uint("bytes_per_token", 0, UINT64_MAX);  // as its ledgers (probe 78)
  FieldReader ex(top.Object("expected"), "/expected", &v);
  const std::optional<uint64_t> logical = ex.Uint("logical", 0, UINT64_MAX);
  const std::optional<uint64_t> materialized = ex.Uint("materialized", 0, UINT64_MAX);
  const std::optional<uint64_t> rectangular = ex.Uint("rectangular", 0, UINT64_MAX);
  const std::optional<uint64_t> phantom = ex.Uint("phantom", 0, UINT64_MAX);
  ex.RejectUnknownFields();
  top.RejectUnknownFields();
  if (!v.empty()) return v;  // the form first: nothing is compared on a document misread

  bool abi_ok = true;
  for (auto [key, value] :
       {std::pair{"num_cache_layers", g.layers}, std::pair{"kv_heads_per_rank", g.kv_heads_local},
        std::pair{"head_dim", g.head_dim}, std::pair{"key_bytes_per_scalar", g.k_bytes},
        std::pair{"value_bytes_per_scalar", g.v_bytes}}) {
    if (value != 0) continue;
    Add(&v, ErrorCode::LEDGER_ABI_INVALID, std::string("/cache_abi/") + key,
        "expected a positive value, got 0");
    abi_ok = false;
  }
  if (query_heads &&
      (*query_heads == 0 || (g.kv_heads_local != 0 && *query_heads % g.kv_heads_local != 0))) {
    Add(&v, ErrorCode::LEDGER_ABI_INVALID, "/query_heads_per_rank",
        "H_q,local " + std::to_string(*query_heads) + " is not a positive multiple of H_kv,local " +
            std::to_string(g.kv_heads_local) +
            " (each K/V head serves a whole group of query heads)");
    abi_ok = false;
  }
  if (!copies.empty() && copies.size() != lengths.size()) {
    Add(&v, ErrorCode::INPUT_VALUE_INVALID, "/copies",
        "expected one copy count per committed length (" + std::to_string(lengths.size()) +
            " lengths, " + std::to_string(copies.size()) + " copies)");
    return v;
  }
  for (size_t i = 0; i < copies.size(); ++i)
    if (copies[i] == 0) {
      Add(&v, ErrorCode::INPUT_VALUE_OUT_OF_RANGE, "/copies/" + std::to_string(i),
          "expected a copy count >= 1, got 0");
      return v;
    }
  if (!abi_ok) return v;
  // An ABI whose coefficient overflows is the ABI's fault, reported where the byte trajectory
  // reports it (probe 91: it was reported at /committed_lengths).
  if (auto bpt = BytesPerToken(g); !bpt.ok()) {
    Add(&v, ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "/cache_abi",
        std::string(bpt.status().message()));
    return v;
  }
  auto r = ComputeRaggedLedger(g, lengths, copies);
  if (!r.ok()) {
    Add(&v, ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "/committed_lengths",
        std::string(r.status().message()));
    return v;
  }
  if (*declared_bpt != r->bytes_per_token) {
    std::string hint;
    if (query_heads && *query_heads != g.kv_heads_local) {
      const auto with_query_heads =
          BytesPerToken({g.layers, *query_heads, g.head_dim, g.k_bytes, g.v_bytes});
      if (with_query_heads.ok() && *with_query_heads == *declared_bpt)
        hint =
            " (that is H_q,local in place of H_kv,local: the cache stores K/V heads, not "
            "query heads)";
    }
    Add(&v, ErrorCode::LEDGER_TOKEN_COEFFICIENT_DRIFT, "/bytes_per_token",
        "L_cache * H_kv,local * d_h * (b_K + b_V) = " + std::to_string(g.layers) + " * " +
            std::to_string(g.kv_heads_local) + " * " + std::to_string(g.head_dim) + " * (" +
            std::to_string(g.k_bytes) + " + " + std::to_string(g.v_bytes) +
            ") = " + std::to_string(r->bytes_per_token) + " B/token, declared " +
            std::to_string(*declared_bpt) + hint);
  }
  auto compare = [&](const char* name, uint64_t declared, uint64_t derived, const char* rule) {
    if (declared == derived) return;
    Add(&v, ErrorCode::LEDGER_EXPECTED_DRIFT, std::string("/expected/") + name,
        std::string(name) + " recomputes to " + std::to_string(derived) + " B (" + rule +
            "), declared " + std::to_string(declared));
  };
  compare("logical", *logical, r->logical, "B_token * sum T_i");
  compare("materialized", *materialized, r->materialized, "B_token * sum c_i T_i");
  compare("rectangular", *rectangular, r->rectangular,
          "B_token * N * max T_i, N the requests with T_i > 0");
  compare("phantom", *phantom, r->phantom, "rectangular - logical");
  return v;
}

}  // namespace kvc
