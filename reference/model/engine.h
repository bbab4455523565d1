// The reference engine: a LlamaModel whose per-request K/V cache goes through the contract's
// lifecycle object (reference/lifecycle/kv_object) and a physical KvStorage per handle.
//
// Every model call is one append transaction (M5.1 0x01 "Prefill And Decode Use The Same
// Append Interface"): BeginAppend on the handle's current snapshot, the forward pass stages
// each layer's K/V rows into the storage's staged interval and records StageLayer for that
// layer, then Publish (all-layer compare-and-publish). Only a non-replayed receipt commits the
// staged rows in the storage; any failure cancels the transaction and drops them. A later call
// therefore sees exactly the published snapshot's [0, T) rows.
//
// Output/cache frontier (0x03), kept by reference/frontier's FrontierState (one copy of the
// rules): Prefill() creates it with the prompt length and reports prefill publications;
// Emit() records a selected output token as the unprocessed frontier; Decode() processes
// exactly that token (an append of one row, checked by FrontierState::CheckAppend) and returns the
// logits that select the next output; RepairFrontier() processes it and discards the logits.
// After a stop the frontier token is emitted but not committed (committed = P + E - 1).
//
// Fork/Truncate/Release/Finish go through the KvObject first, then act on the storage (paged
// forks share blocks copy-on-write). Reorder applies one permutation to coupled live rows
// (lifecycle/reorder) and moves each row's cache handle with it.
// Ownership: the Engine borrows the model (must outlive it) and owns the KvObject and storages.
// Thread safety: none (one engine per thread).
#ifndef KVCONFORM_REFERENCE_MODEL_ENGINE_H_
#define KVCONFORM_REFERENCE_MODEL_ENGINE_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "reference/frontier/frontier.h"
#include "reference/lifecycle/kv_object/kv_object.h"
#include "reference/lifecycle/reorder/reorder.h"
#include "reference/model/llama.h"

namespace kvc::model {

struct EngineOptions {
  ComputeMode mode = ComputeMode::kDeterministic;
  bool paged = false;        // paged layout (else contiguous)
  uint64_t block_size = 16;  // paged block size in positions (>= 1)
};

// The emission rule every engine applies (CPU here, CUDA in kernels/): `token` must be
// non-negative, and it is recorded on the request's frontier `*fs` (created empty when absent)
// only when FrontierState::Emit accepts it; on error `*fs` is unchanged.
Status EmitOnFrontier(const std::string& handle, int64_t token,
                      std::optional<frontier::FrontierState>* fs);

class Engine {
 public:
  Engine(const LlamaModel& model, EngineOptions opts);

  const EngineOptions& options() const { return opts_; }

  // Test/trace hook: runs inside every model call after layer `layer` staged its rows and
  // the transaction recorded them, before the layer's attention; a non-OK status fails the
  // call (the transaction is cancelled and the staged rows dropped).
  using LayerObserver =
      std::function<Status(const std::string& handle, uint64_t layer, const KvStorage& storage)>;
  void set_layer_observer(LayerObserver o) { observer_ = std::move(o); }
  const lifecycle::KvObject& kv_object() const { return kv_; }

  // A new empty request handle (generation 0, T = 0).
  Status NewRequest(const std::string& handle);

  // One append transaction of `tokens` at [T, T + n); `logits` receives [1, V] (last row) or
  // [n, V] (all_rows). Token/position errors are reported before any transaction opens.
  // A raw append has no frontier purpose, so the request's frontier stops being tracked
  // (FrontierState::Untrack); use Prefill/Decode/RepairFrontier for tracked calls.
  Status Append(const std::string& handle, std::span<const int64_t> tokens, bool all_rows,
                std::vector<float>* logits);
  // One batched model call: each item is its own append transaction on its own handle (all
  // distinct); the rows of all items share the projections (ragged batch, see ForwardBatch).
  // Every transaction is opened before the call and published after it; a failure before
  // publication cancels all of them. A publication that fails affects only its own item; the
  // first error is returned after every item was settled.
  struct AppendItem {
    std::string handle;
    std::span<const int64_t> tokens;
    bool all_rows = false;
    std::vector<float>* logits = nullptr;
    // The item is a request's whole prompt (a tracked prefill on an empty handle); otherwise
    // it is a raw append.
    bool whole_prompt = false;
  };
  Status AppendBatch(std::span<const AppendItem> items);

  // Prefill of `prompt` in appends of `chunk` tokens (0 = one append); logits of the last row.
  Status Prefill(const std::string& handle, std::span<const int64_t> prompt, uint64_t chunk,
                 std::vector<float>* logits);

  // Records `token` as emitted (FrontierState::Emit; the state is unchanged on error, e.g.
  // FRONTIER_OUTPUT_BEFORE_LOGITS when no publication produced logits for it).
  Status Emit(const std::string& handle, int64_t token);
  // Processes the frontier token (must equal `token`, else FRONTIER_TOKEN_MISMATCH) through an
  // append and returns the logits that choose the next output.
  Status Decode(const std::string& handle, int64_t token, std::vector<float>* logits);
  // Decode of several requests in one batched call (each its own transaction).
  struct DecodeItem {
    std::string handle;
    int64_t token = 0;
    std::vector<float>* logits = nullptr;
  };
  Status DecodeBatch(std::span<const DecodeItem> items);
  // Processes the frontier token and discards the logits (FRONTIER_NOTHING_TO_REPAIR if none).
  Status RepairFrontier(const std::string& handle);
  std::optional<int64_t> frontier(const std::string& handle) const;
  // The request's frontier counters (nullptr before its first tracked call).
  const frontier::FrontierState* frontier_state(const std::string& handle) const;

  // Decode admission from a published transfer (M5.6 0x06D: "admit decode only from the
  // published handle"). Recreates `published` (a destination decode directory's all-layer
  // publication) in this engine's lifecycle object through the same lifecycle operations the
  // directory used, with the transferred rows as the payload of that one append transaction,
  // and succeeds only when the resulting snapshot equals `published` in every field (handle,
  // lineage, incarnation, generation, version, T, digest, phase): the engine then holds the
  // published handle itself, and every later Decode() is an ordinary append transaction whose
  // base is the published snapshot (generation fence included).
  //  - cold destination (`warm_prefix` empty): Allocate(published.handle_id,
  //    published.lineage_id, published.incarnation), then one append of [0, T);
  //  - warm destination: `warm_prefix` names a request of this engine holding V_D = [0, N)
  //    (N < T), published at the directory under the same handle id by one append of [0, N);
  //    the handle is its exact Fork at N and the append covers only X = [N, T).
  // `rows(layer, pos, &k, &v)` yields the K and V rows (each model kv_shape().row floats,
  // borrowed until it returns again) of every imported position. Afterwards the request's
  // frontier is that of a completed prefill of T prompt tokens, so Emit(first token) and
  // Decode() continue exactly as after Prefill(). On error the import transaction is cancelled
  // and its rows dropped; a handle that was already created is cancelled and released.
  using ImportRows =
      std::function<Status(uint64_t layer, uint64_t pos, const float** k, const float** v)>;
  Status AdoptPublished(const lifecycle::Snapshot& published, const ImportRows& rows,
                        const std::string& warm_prefix = "");

  // Lifecycle operations on real K/V rows.
  Status Fork(const std::string& parent, uint64_t prefix, const std::vector<std::string>& children);
  Status Truncate(const std::string& handle, uint64_t length);
  Status Finish(const std::string& handle);
  // CANCELLED (open transactions aborted); the emitted frontier is dropped.
  Status Cancel(const std::string& handle);
  Status Release(const std::string& handle);  // from FINISHED or CANCELLED
  // rows_after[i] = rows[parent_index[i]]; checked to be a coupled permutation.
  StatusOr<std::vector<lifecycle::LiveSequenceRow>> Reorder(
      const std::vector<lifecycle::LiveSequenceRow>& rows,
      const std::vector<uint64_t>& parent_index);

  StatusOr<lifecycle::Snapshot> Read(const std::string& handle) const { return kv_.Read(handle); }
  // The handle's physical storage (nullptr for unknown handles).
  const KvStorage* storage(const std::string& handle) const;

 private:
  struct Request {
    std::unique_ptr<KvStorage> storage;
    std::optional<frontier::FrontierState> fs;  // absent until the first tracked call
  };
  std::unique_ptr<KvStorage> NewStorage() const;
  StatusOr<Request*> Get(const std::string& handle);
  // The batch core; calls[i] (when set) is item i's frontier purpose, checked before and
  // applied after publication; an unset call untracks the request's frontier.
  Status RunBatch(std::span<const AppendItem> items,
                  const std::vector<std::optional<frontier::AppendCall>>& calls);
  frontier::FrontierState& Fs(Request* r);  // creates an empty-prompt state when absent

  const LlamaModel& model_;
  EngineOptions opts_;
  lifecycle::KvObject kv_;
  std::map<std::string, Request> requests_;
  uint64_t next_txn_ = 0;
  LayerObserver observer_;
};

// The cache ABI id the engine registers for a configuration (layers, H_kv, d_h, post-RoPE fp32).
std::string EngineCacheAbiId(const LlamaConfig& c);

// Index of the largest logit (the first on ties): greedy selection.
int64_t Argmax(std::span<const float> logits);
// The greedy token of `logits` (Argmax), or MODEL_LOGITS_NONFINITE when a logit is NaN or
// infinite: no token can be selected from them (probe 46: finite weights whose products
// overflowed float32 gave NaN logits, Argmax chose token 0, and generate exited 0). `step`
// (the output index) is for the message.
StatusOr<int64_t> GreedyToken(std::span<const float> logits, uint64_t step);

}  // namespace kvc::model

#endif  // KVCONFORM_REFERENCE_MODEL_ENGINE_H_
