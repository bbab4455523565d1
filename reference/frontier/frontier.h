// The output/cache frontier of one request (M5.1 0x03 "Output Progress And Cache Progress Are
// Different Counters", "Boundary Consumed By Speculative Correction"; 0x09 "Final Output And
// Cache State Are Different Frontiers", "Rejected Suffixes Stop At The Commit Frontier").
//
// Counters that must not alias:
//   prompt_rows      prompt rows committed so far (P_1 + ... + P_c; <= P)
//   emitted          O: output tokens selected and returned
//   processed        G_in: generated tokens that passed through a cache-producing call
//   committed        K_c = prompt_rows + processed (the lifecycle object's committed length)
// An emitted token may be at most one position ahead of committed K/V (the output frontier).
// Ordinary stop: O = G_in + 1, K_c = S + G_in. Repair: one more row, logits discarded.
// Speculative verification: only accepted draft rows are committed; the correction token is
// emitted unprocessed and needs its own target append.
// Value type; thread safety: none. Token ids are opaque integers.
#ifndef KVCONFORM_REFERENCE_FRONTIER_FRONTIER_H_
#define KVCONFORM_REFERENCE_FRONTIER_FRONTIER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "reference/base/status.h"

namespace kvc::frontier {

// Why a model call appends rows (the trace's append_start "purpose").
enum class AppendPurpose : uint8_t { kPrefill, kDecode, kRepair, kVerify };

// One cache-producing call, described before it is published.
struct AppendCall {
  AppendPurpose purpose = AppendPurpose::kPrefill;
  uint64_t rows = 0;                     // rows the call commits (interval count)
  std::optional<uint64_t> input_token;   // decode/repair/verify: the frontier token it processes
  std::vector<uint64_t> draft_tokens;    // verify: candidates verified by the target call
  uint64_t accepted = 0;                 // verify: accepted draft prefix length
  // repair: the K/V rows are taken from draft row `reused_draft_index` of the last verification
  // instead of being computed for the frontier token: a relabel, always refused (a rejected
  // row relabelled as the correction is FRONTIER_REJECTED_ROW_RELABELED, and an accepted
  // draft's row is already committed at its own position; probe 54: this comment said an
  // accepted draft with the same token was legal).
  std::optional<uint64_t> reused_draft_index;
};

// The emitted output tokens of one request, in order. Copies share what was frozen: Freeze()
// moves the owned tail into an immutable segment that the copies then share (a chain of
// segments, newest first), so that the K children of one fork hold the parent's O outputs
// once, not K times (since 2026-12-04: each child copied them, 8 x O x K bytes for one fork
// line: probe 8). at() walks the chain: O(segments), one per Freeze() with outputs since the
// last; push_back and size are O(1). Value type; thread safety: none (copies share immutable
// segments only).
class OutputTokens {
 public:
  size_t size() const { return shared_n_ + tail_.size(); }
  bool empty() const { return size() == 0; }
  uint64_t at(size_t i) const;  // i < size()
  uint64_t back() const { return at(size() - 1); }
  void push_back(uint64_t token) { tail_.push_back(token); }
  // Keeps the first n tokens (n <= size()).
  void Shrink(size_t n);
  void clear() { Shrink(0); }
  // Makes the tokens so far shareable by copies (no-op when nothing was pushed since).
  void Freeze();
  // Tokens this copy holds alone (pushed since the last Freeze); for memory tests.
  size_t unshared() const { return tail_.size(); }
  // Segments visited to find token i (i < size()); for tests of the O(log segments) lookup.
  size_t hops_to(size_t i) const;
  // The same token sequence.
  friend bool operator==(const OutputTokens& a, const OutputTokens& b);

 private:
  struct Segment : std::enable_shared_from_this<Segment> {
    Segment() = default;
    Segment(const Segment&) = delete;
    Segment& operator=(const Segment&) = delete;
    // Frees the chain behind it iteratively: a chain one segment per fork generation deep would
    // otherwise be freed by recursion, one stack frame per segment (a 700,000-deep fork chain
    // overflowed the stack: review of c5b9c87).
    ~Segment();
    // Tokens before `start`; mutable only so that ~Segment can unlink the chain.
    mutable std::shared_ptr<const Segment> prev;
    size_t start = 0;  // index of tokens[0]; strictly greater than prev's
    std::vector<uint64_t> tokens;
    // Skew-binary jump pointer (an ancestor, kept alive through prev) and the depth it needs:
    // finding the segment of an index is O(log segments), not a walk of the chain (probe 10:
    // rolling K children of a G-deep fork chain back cost K x G).
    size_t depth = 0;
    const Segment* jump = nullptr;
  };
  // The newest segment of the chain from `seg` whose start is <= i (i < the chain's end).
  static const Segment* Containing(const Segment* seg, size_t i);
  std::shared_ptr<const Segment> shared_;  // tokens [0, shared_n_) through the chain
  size_t shared_n_ = 0;                    // may end inside a segment (after Shrink)
  std::vector<uint64_t> tail_;             // tokens [shared_n_, size())
};

// A FIFO of tokens read from a moving front: pop_front is O(1), and nothing is allocated until
// tokens are assigned (a std::deque allocates ~600 B when constructed, once per request). Copies
// share the tokens (a fork's children copy their parent's frontier, and each copy of thousands
// of accepted drafts cost the whole list: probe 18): the storage only grows at its end, and a
// copy whose queue ends where the storage ends appends there in place, shared or not, so the
// copies made between its appends cost nothing (probe 63: each append of a parent forked since
// its last append copied its whole queue, so N forks with drafts pending held N^2 / 2 tokens).
// Equality compares the tokens still queued. Value type; copies share storage, so all copies of
// one queue are used from one thread.
class DraftQueue {
 public:
  bool empty() const { return pos_ == end_; }
  size_t size() const { return end_ - pos_; }
  uint64_t front() const { return (*v_)[pos_]; }  // !empty()
  void pop_front() {
    if (++pos_ == end_) clear();
  }
  void clear() {
    v_.reset();
    pos_ = end_ = 0;
  }
  template <typename It>
  void assign(It first, It last) {
    clear();
    append(first, last);
  }
  // Queues [first, last) after the tokens still queued. Amortized O(last - first) while the
  // storage ends where this copy's queue does (the copy appended last, or no copy appended
  // since it was made); else what remains is copied first.
  template <typename It>
  void append(It first, It last) {
    if (first == last) return;
    if (!v_ || end_ != v_->size()) {  // another copy appended past it, or it was cut
      auto own = std::make_shared<std::vector<uint64_t>>();
      if (v_)
        own->assign(v_->begin() + static_cast<std::ptrdiff_t>(pos_),
                    v_->begin() + static_cast<std::ptrdiff_t>(end_));
      v_ = std::move(own);
      pos_ = 0;
    } else if (v_.use_count() == 1 && pos_ >= end_ - pos_) {
      // The popped front is at least as long as what remains: dropped, so that a queue fed
      // while it is read holds what is queued, not every token it ever held (probe 61). Each
      // token is moved at most once per pop of an earlier one: amortized O(1).
      v_->erase(v_->begin(), v_->begin() + static_cast<std::ptrdiff_t>(pos_));
      end_ -= pos_;
      pos_ = 0;
    }
    v_->insert(v_->end(), first, last);
    end_ = v_->size();
  }
  // Tokens the queue's storage holds, popped ones and other copies' included, and the storage's
  // identity (memory tests: copies sharing one storage count it once).
  size_t held() const { return v_ ? v_->size() : 0; }
  const void* storage() const { return v_.get(); }
  // Keeps the first `n` tokens still queued (all of them when n >= size()).
  void keep_first(size_t n) {
    if (n < size()) end_ = pos_ + n;
    if (empty()) clear();
  }
  friend bool operator==(const DraftQueue& a, const DraftQueue& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if ((*a.v_)[a.pos_ + i] != (*b.v_)[b.pos_ + i]) return false;
    return true;
  }

 private:
  // The queued tokens are (*v_)[pos_, end_). Copies may share *v_: it is only appended to (by
  // the copy whose end_ is its size: the others' tokens stay as they were), or erased from while
  // no copy shares it.
  std::shared_ptr<std::vector<uint64_t>> v_;
  size_t pos_ = 0;
  size_t end_ = 0;
};

class FrontierState {
 public:
  explicit FrontierState(uint64_t prompt_length) : prompt_length_(prompt_length) {}
  // A request whose first `prompt_rows` prompt rows are already committed without a call of its
  // own (a prefix-cache hit: a fork child with a prompt of its own). No logits are ready and no
  // output is emitted. Requires prompt_rows <= prompt_length.
  FrontierState(uint64_t prompt_length, uint64_t prompt_rows)
      : prompt_length_(prompt_length), prompt_rows_(prompt_rows) {}

  // Checks `call` against the frontier before it begins (FRONTIER_*/SERVICE_PHASE_* codes).
  Status CheckAppend(const AppendCall& call) const;
  // Applies a published call (CheckAppend must have passed): counters advance; prefill and
  // decode/verify publications make target logits ready; repair discards its logits.
  void ApplyPublished(const AppendCall& call);
  // An output selected from ready logits. `from_repair_logits` marks a token taken from a
  // repair call's logits (FRONTIER_REPAIR_EMITS_OUTPUT).
  Status Emit(uint64_t output_index, uint64_t token, bool from_repair_logits = false);
  // SERVICE_PHASE_EARLY_FINISH before the first output or while prompt rows remain (not after
  // a rollback into the prompt, until the next output: see Truncate).
  Status CheckFinish() const;
  // Rollback to committed length `t` (a truncate, or a fork child's shorter prefix): the rows
  // [t, K_c) and every output selected from their logits are gone together (M5.1 0x01: output
  // ids rolled back while the K/V suffix stays visible, or the reverse, is not allowed). Output
  // j's K/V row is S + j (S = prompt_length), so for t >= S outputs 0..t-S remain and output
  // t-S is again the unprocessed frontier token. No-op for t >= committed(). A rollback into
  // the prompt (t < S) removes every output: t prompt rows committed, no logits ready, so
  // output 0 and any decode wait for the prompt's remaining rows (a finish before the next
  // output is not early: the request selected outputs before the rollback). A rollback at or
  // above S while accepted drafts of a verification are still to be emitted drops the drafts
  // whose rows go: when every emitted output keeps its row, as if the verification had
  // accepted only the drafts kept (they are emitted, then one output from the last kept row's
  // logits); otherwise every draft goes and the outputs roll back as above.
  void Truncate(uint64_t t);
  // Makes a copy of this state cost O(1) in its outputs (OutputTokens::Freeze): call before
  // copying it for fork children.
  void ShareOutputs() { outputs_.Freeze(); }
  // A state the frontier cannot follow (a reported breach, a count it cannot reconcile): the
  // tracker stops checking this request's output frontier.
  void Untrack() { tracked_ = false; }

  bool tracked() const { return tracked_; }
  uint64_t prompt_length() const { return prompt_length_; }
  uint64_t prompt_rows() const { return prompt_rows_; }
  uint64_t emitted() const { return outputs_.size(); }
  uint64_t processed() const { return processed_; }
  // Outputs removed by rollbacks (Truncate) so far: emitted() counts only those that remain.
  uint64_t rolled_back() const { return rolled_back_; }
  uint64_t committed() const { return prompt_rows_ + processed_; }
  // Emitted tokens not yet processed: 0 or 1 (the output frontier).
  uint64_t frontier_count() const { return frontier_token_ ? 1 : 0; }
  std::optional<uint64_t> frontier_token() const { return frontier_token_; }
  // Outputs that may still be emitted from the last publication's logits.
  uint64_t ready_outputs() const { return ready_outputs_; }
  bool prompt_complete() const { return prompt_rows_ == prompt_length_; }
  friend bool operator==(const FrontierState&, const FrontierState&) = default;

 private:
  Status DecodeWithoutFrontier(const AppendCall& c) const;  // cold: CheckAppend's message

  uint64_t prompt_length_;
  uint64_t prompt_rows_ = 0;
  // The emitted output tokens in order (O = outputs_.size()): a rollback finds its new frontier
  // token here. Grows with the request's outputs; dropped with the request; shared with fork
  // children through ShareOutputs().
  OutputTokens outputs_;
  uint64_t rolled_back_ = 0;
  bool rolled_into_prompt_ = false;  // a Truncate reached into the prompt after outputs
  uint64_t processed_ = 0;
  uint64_t ready_outputs_ = 0;
  // verify: accepted drafts to emit first, in order (each emit takes the front in O(1); erasing
  // a vector's front shifted every remaining draft, D^2 for one verification of D drafts:
  // probe 10). A verification published before the previous one's drafts are all emitted
  // queues its own after them (their rows come first).
  DraftQueue expected_tokens_;
  std::optional<uint64_t> frontier_token_;
  uint64_t last_draft_count_ = 0;  // last verification's candidates (a count: fork copies)
  uint64_t last_accepted_ = 0;
  bool tracked_ = true;
};

}  // namespace kvc::frontier

#endif  // KVCONFORM_REFERENCE_FRONTIER_FRONTIER_H_
