// External parity: comparing the engine with logits recorded from Hugging Face Transformers.
//
// tools/record_hf_logits.py writes fixtures/models/<name>/hf_logits.json:
//   {"kind": "kvconform.hf_logits/1", "description", "provenance": {transformers, torch,
//    python, seed, shape, config, attn_implementation}, "prompt_ids": [..],
//    "tokens": [G greedy ids], "logits": [G][V] fp32 values, "tolerance": 1e-4}
// CompareWithHfLogits runs the engine (deterministic mode, contiguous cache, greedy) on the
// same prompt and passes when every step's max |diff| <= tolerance and the tokens agree.
// Thread-compatible.
#ifndef KVCONFORM_REFERENCE_MODEL_HF_LOGITS_H_
#define KVCONFORM_REFERENCE_MODEL_HF_LOGITS_H_

#include <string>
#include <vector>

#include "reference/model/llama.h"

namespace kvc::model {

struct HfLogitsComparison {
  double max_abs = 0;
  double tolerance = 0;
  bool tokens_agree = false;
  bool passed = false;
  std::vector<int64_t> engine_tokens, hf_tokens;
  std::string detail;
};

// Errors: IoError/ParseError for an unreadable file, InvalidArgument naming the field for a
// malformed one (V mismatch, missing field, ...).
StatusOr<HfLogitsComparison> CompareWithHfLogits(const LlamaModel& model, const std::string& path);

}  // namespace kvc::model

#endif  // KVCONFORM_REFERENCE_MODEL_HF_LOGITS_H_
