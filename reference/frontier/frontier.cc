// Output/cache frontier rules; see frontier.h.
#include "reference/frontier/frontier.h"

#include <algorithm>
#include <string>

namespace kvc::frontier {
namespace {

// Cold: only violations build messages (the compiler moves those paths out of the hot code).
[[gnu::cold]] std::string U(uint64_t v) { return std::to_string(v); }
[[gnu::cold]] Status V(ErrorCode e, std::string m) { return ViolationStatus(e, std::move(m)); }

}  // namespace

// A call whose rows are taken from draft row `i` of the last verification (AppendCall::
// reused_draft_index) instead of being computed for the token it processes.
[[gnu::cold]] static Status ReusedDraftRow(const AppendCall& c, uint64_t last_drafts,
                                           uint64_t last_accepted) {
  const uint64_t i = *c.reused_draft_index;
  const char* purpose = c.purpose == AppendPurpose::kRepair   ? "repair"
                        : c.purpose == AppendPurpose::kDecode ? "decode"
                        : c.purpose == AppendPurpose::kVerify ? "verification"
                                                              : "prefill";
  const std::string what =
      i >= last_drafts
          ? "draft " + U(i) + ", which the last verification did not have (it verified " +
                U(last_drafts) + " drafts)"
      : i < last_accepted
          ? "draft " + U(i) + " (an accepted draft already committed at its own position)"
          : "draft " + U(i) + " (a rejected draft conditioned on a different token)";
  return V(ErrorCode::FRONTIER_REJECTED_ROW_RELABELED,
           std::string(purpose) + " reuses the row of " + what +
               " as the row of the token it processes; its K/V must be computed by a target "
               "call");
}

OutputTokens::Segment::~Segment() {
  std::shared_ptr<const Segment> p = std::move(prev);
  // While this was the last owner of p, take p's predecessor before p is freed, so freeing p
  // frees nothing further (single-threaded: see OutputTokens).
  while (p && p.use_count() == 1) p = std::move(p->prev);
}

const OutputTokens::Segment* OutputTokens::Containing(const Segment* seg, size_t i) {
  // Starts decrease strictly towards the root, so jumping while the target is still above i
  // never passes the segment sought.
  while (seg->start > i) seg = seg->jump && seg->jump->start > i ? seg->jump : seg->prev.get();
  return seg;
}

size_t OutputTokens::hops_to(size_t i) const {
  size_t hops = 0;
  if (i >= shared_n_) return hops;
  for (const Segment* seg = shared_.get(); seg->start > i; ++hops)
    seg = seg->jump && seg->jump->start > i ? seg->jump : seg->prev.get();
  return hops;
}

uint64_t OutputTokens::at(size_t i) const {
  if (i >= shared_n_) return tail_[i - shared_n_];
  const Segment* seg = Containing(shared_.get(), i);
  return seg->tokens[i - seg->start];
}

void OutputTokens::Shrink(size_t n) {
  if (n >= shared_n_) {
    tail_.resize(n - shared_n_);
    return;
  }
  tail_.clear();
  shared_n_ = n;
  // The segment holding token n - 1 becomes the newest; those after it hold nothing visible.
  if (n == 0)
    shared_.reset();
  else
    shared_ = Containing(shared_.get(), n - 1)->shared_from_this();
}

void OutputTokens::Freeze() {
  if (tail_.empty()) return;
  auto seg = std::make_shared<Segment>();
  seg->prev = shared_;
  seg->start = shared_n_;
  seg->tokens = std::move(tail_);
  tail_ = {};
  if (const Segment* p = seg->prev.get()) {
    // Myers' skew-binary jumps: to the jump's jump when the two jumps below span equal depths.
    seg->depth = p->depth + 1;
    const Segment* j = p->jump;
    seg->jump = j && j->jump && p->depth - j->depth == j->depth - j->jump->depth ? j->jump : p;
  }
  shared_n_ += seg->tokens.size();
  shared_ = std::move(seg);
}

bool operator==(const OutputTokens& a, const OutputTokens& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a.at(i) != b.at(i)) return false;
  return true;
}

// A decode with no emitted token unprocessed (FRONTIER_CACHE_OVERCOMMIT). The message says what
// the token it names is: an emitted output whose row is already committed (an accepted draft,
// or a token decoded twice), or none emitted (since 2026-12-04: before, always "a token that
// was never emitted", also for an accepted draft already committed: probe 9).
[[gnu::cold]] Status FrontierState::DecodeWithoutFrontier(const AppendCall& c) const {
  // Only the last kLookBack outputs are searched: a refused decode can be repeated on a long
  // request, and a full scan per event was O(outputs) each (probe 10: 100k refused decodes on
  // a 100k-output request took 27 s).
  constexpr uint64_t kLookBack = 64;
  std::optional<uint64_t> index;
  const uint64_t n = outputs_.size();
  if (c.input_token)
    for (uint64_t j = n; j-- > 0 && n - j <= kLookBack;)
      if (outputs_.at(j) == *c.input_token) {
        index = j;
        break;
      }
  // After a truncate the token may be one of the outputs it rolled back, which are emitted again
  // before their rows are computed again; and an output is emitted before the decode that
  // processes it (probe 83: "never emitted" read wrong in both cases).
  if (!index) {
    std::string what = n > kLookBack ? "is none of the last " + U(kLookBack) + " outputs emitted"
                       : rolled_back_ > 0
                           ? "is none of the outputs the request's rows keep (" + U(rolled_back_) +
                                 " rolled back by truncation are emitted again before a decode "
                                 "processes them)"
                           : std::string("was never emitted");
    return V(ErrorCode::FRONTIER_CACHE_OVERCOMMIT,
             "decode append with an empty output frontier: it would commit a row for a token "
             "that " +
                 what + "; an output_emit comes before the decode that processes its token");
  }
  const uint64_t next = outputs_.size();
  std::string then;
  if (!expected_tokens_.empty())
    then = "; the last verification's accepted drafts are still to be emitted (next: token " +
           U(expected_tokens_.front()) + " as output " + U(next) +
           "), then an output from its logits";
  else if (ready_outputs_ > 0)
    then = "; output " + U(next) + " is selected from the last publication's logits first";
  return V(ErrorCode::FRONTIER_CACHE_OVERCOMMIT,
           "decode append processes token " + U(*c.input_token) + " (output " + U(*index) +
               "), whose row is already committed: no emitted token is unprocessed, so it "
               "would commit a second row for it" +
               then);
}

Status FrontierState::CheckAppend(const AppendCall& c) const {
  if (!tracked_) return Status::Ok();
  // Any purpose but repair: a reused draft row is a relabel too (before 2026-12-03 only a
  // repair's was judged; a decode's was ignored).
  if (c.reused_draft_index && c.purpose != AppendPurpose::kRepair)
    return ReusedDraftRow(c, last_draft_count_, last_accepted_);
  switch (c.purpose) {
    case AppendPurpose::kPrefill: {
      if (c.input_token)
        return V(ErrorCode::FRONTIER_TOKEN_MISMATCH,
                 "prefill names input token " + U(*c.input_token) +
                     "; a prefill processes prompt rows, not a generated token (input_token is "
                     "absent on prefill)");
      // A call of no row processes no prompt row (probe 70: admitted, as a 0-row decode was
      // before probe 54; the lifecycle also refuses it, LIFECYCLE_APPEND_EMPTY).
      if (c.rows == 0)
        return V(ErrorCode::FRONTIER_CACHE_COUNT_MISMATCH,
                 "prefill commits 0 rows; a prefill processes at least one prompt row");
      if (c.rows > prompt_length_ - prompt_rows_)
        return V(ErrorCode::SERVICE_PHASE_PROMPT_OVERRUN,
                 "prefill of " + U(c.rows) + " rows with only " +
                     U(prompt_length_ - prompt_rows_) + " of " + U(prompt_length_) +
                     " prompt rows remaining");
      return Status::Ok();
    }
    case AppendPurpose::kDecode: {
      if (!prompt_complete())
        return V(ErrorCode::SERVICE_PHASE_DECODE_BEFORE_PREFILL,
                 "decode append while " + U(prompt_length_ - prompt_rows_) +
                     " prompt rows are unprocessed");
      if (!frontier_token_) return DecodeWithoutFrontier(c);
      if (c.input_token != frontier_token_)
        return V(ErrorCode::FRONTIER_TOKEN_MISMATCH,
                 "decode processes token " + (c.input_token ? U(*c.input_token) : "(none)") +
                     ", the unprocessed frontier token is " + U(*frontier_token_));
      if (c.rows > 1)
        return V(ErrorCode::FRONTIER_CACHE_OVERCOMMIT,
                 "ordinary decode commits " + U(c.rows) +
                     " rows; exactly one emitted token (the frontier) is unprocessed");
      // A call of no row processes nothing: the frontier stays (probe 54:
      // without a lifecycle beside it, as in the saved-work oracle, 0 rows let an output run
      // two ahead; the lifecycle also refuses it, LIFECYCLE_APPEND_EMPTY).
      if (c.rows == 0)
        return V(ErrorCode::FRONTIER_CACHE_COUNT_MISMATCH,
                 "ordinary decode commits 0 rows; it processes the frontier token (one row)");
      return Status::Ok();
    }
    case AppendPurpose::kRepair: {
      if (!frontier_token_)
        return V(ErrorCode::FRONTIER_NOTHING_TO_REPAIR,
                 "repair append with an empty output frontier (K_c already covers every "
                 "emitted token)");
      if (c.input_token != frontier_token_)
        return V(ErrorCode::FRONTIER_TOKEN_MISMATCH,
                 "repair processes token " + (c.input_token ? U(*c.input_token) : "(none)") +
                     ", the unprocessed frontier token is " + U(*frontier_token_));
      if (c.reused_draft_index) return ReusedDraftRow(c, last_draft_count_, last_accepted_);
      if (c.rows != 1)
        return V(ErrorCode::FRONTIER_REPAIR_ROW_COUNT,
                 "repair publishes " + U(c.rows) + " rows per layer; it processes exactly the one "
                 "frontier token");
      return Status::Ok();
    }
    case AppendPurpose::kVerify: {
      if (!prompt_complete())
        return V(ErrorCode::SERVICE_PHASE_DECODE_BEFORE_PREFILL,
                 "verification while prompt rows are unprocessed");
      if (c.accepted > c.draft_tokens.size())
        return V(ErrorCode::FRONTIER_ACCEPTED_EXCEEDS_DRAFT,
                 U(c.accepted) + " accepted of " + U(c.draft_tokens.size()) + " draft tokens");
      if (frontier_token_ && c.input_token != frontier_token_)
        return V(ErrorCode::FRONTIER_TOKEN_MISMATCH,
                 "verification processes token " +
                     (c.input_token ? U(*c.input_token) : "(none)") +
                     ", the unprocessed frontier token is " + U(*frontier_token_));
      // With no emitted token unprocessed, the call processes only drafts (since 2026-12-03:
      // before, a verification could claim an already processed token).
      if (!frontier_token_ && c.input_token)
        return V(ErrorCode::FRONTIER_TOKEN_MISMATCH,
                 "verification processes token " + U(*c.input_token) +
                     ", but no emitted token is unprocessed (its rows are the drafts')");
      // Its first accepted draft is then judged on the last publication's logits, which must
      // still be ready: a repair's are discarded (since 2026-12-03: before, a verification after
      // a repair selected an output from the repair's logits).
      if (!frontier_token_ && c.accepted > 0 && ready_outputs_ == 0)
        return V(ErrorCode::FRONTIER_OUTPUT_BEFORE_LOGITS,
                 "verification accepts " + U(c.accepted) +
                     " drafts with no emitted token to process and no target logits ready (the "
                     "last publication's were discarded or used): its first draft would be "
                     "accepted without target logits");
      uint64_t want = (frontier_token_ ? 1 : 0) + c.accepted;
      if (c.rows > want)
        return V(ErrorCode::FRONTIER_REJECTED_ROW_COMMITTED,
                 "verification commits " + U(c.rows) + " rows; only " + U(want) + " (" +
                     (frontier_token_
                          ? "the frontier token's row + " + U(c.accepted) + " accepted drafts"
                          : U(c.accepted) + " accepted drafts; no emitted token is unprocessed") +
                     ") may cross the commit frontier");
      if (c.rows < want)
        return V(ErrorCode::FRONTIER_CACHE_COUNT_MISMATCH,
                 "verification commits " + U(c.rows) + " rows; accepted drafts need " + U(want));
      // A verification of no row runs no target call, so it makes no logits ready (probe 54:
      // after a repair, whose logits are discarded, one let an output be emitted).
      if (c.rows == 0)
        return V(ErrorCode::FRONTIER_CACHE_COUNT_MISMATCH,
                 "verification commits 0 rows: no target call processes a token, so none of its "
                 "logits exist");
      return Status::Ok();
    }
  }
  return Status::Ok();
}

void FrontierState::ApplyPublished(const AppendCall& c) {
  if (!tracked_) return;
  switch (c.purpose) {
    case AppendPurpose::kPrefill:
      prompt_rows_ += std::min(c.rows, prompt_length_ - prompt_rows_);
      // The first output becomes ready only once every prompt row is committed.
      ready_outputs_ = (prompt_complete() && outputs_.empty()) ? 1 : 0;
      break;
    case AppendPurpose::kDecode:
      processed_ += c.rows;
      frontier_token_.reset();
      expected_tokens_.clear();
      ready_outputs_ = 1;
      break;
    case AppendPurpose::kRepair:
      processed_ += c.rows;
      frontier_token_.reset();
      expected_tokens_.clear();
      ready_outputs_ = 0;  // repair logits are discarded, not another output decision
      break;
    case AppendPurpose::kVerify:
      processed_ += c.rows;
      frontier_token_.reset();
      last_draft_count_ = c.draft_tokens.size();
      last_accepted_ = c.accepted;
      // Accepted drafts of an earlier verification not emitted yet keep their place: their rows
      // precede this call's, and output j's row is S + j (since 2026-12-04: before, this call's
      // drafts replaced them, so its first draft was expected at the earlier draft's index;
      // probe 16).
      expected_tokens_.append(c.draft_tokens.begin(),
                              c.draft_tokens.begin() + static_cast<long>(c.accepted));
      // The queued accepted drafts, then the correction / bonus token from this call's logits.
      ready_outputs_ = expected_tokens_.size() + 1;
      break;
  }
}

Status FrontierState::Emit(uint64_t output_index, uint64_t token, bool from_repair_logits) {
  if (!tracked_) return Status::Ok();
  // The emit is applied even when it breaks a rule, so one bad event raises one code and the
  // rest of the trace is judged against the runtime's own output stream.
  Status verdict;
  if (output_index != outputs_.size())
    verdict =
        V(ErrorCode::FRONTIER_OUTPUT_INDEX_GAP,
          "output index " + U(output_index) + ", expected the next index " + U(outputs_.size()) +
              (rolled_back_ > 0 && output_index > outputs_.size()
                   ? " (" + U(rolled_back_) +
                         " outputs were rolled back by truncation: numbering goes on from "
                         "the outputs the kept rows hold)"
               : output_index < outputs_.size()
                   ? " (output " + U(output_index) +
                         " is already held by this handle: emitted on it, or inherited with "
                         "a fork's prefix, which holds the parent's outputs up to "
                         "prefix_length - S)"
                   : std::string()));
  else if (from_repair_logits)
    verdict = V(ErrorCode::FRONTIER_REPAIR_EMITS_OUTPUT,
                "output " + U(output_index) + " taken from a repair call's logits, which are "
                "discarded (a repair is not another output decision)");
  else if (ready_outputs_ == 0)
    verdict = V(ErrorCode::FRONTIER_OUTPUT_BEFORE_LOGITS,
                "output " + U(output_index) +
                    " emitted while no publication has produced target logits for it" +
                    (prompt_complete() ? std::string()
                                       : " (" + U(prompt_rows_) + " of " + U(prompt_length_) +
                                             " prompt rows committed: output 0 needs the whole "
                                             "prompt)"));
  if (ready_outputs_ > 0) --ready_outputs_;
  outputs_.push_back(token);
  if (!expected_tokens_.empty()) {
    uint64_t want = expected_tokens_.front();
    expected_tokens_.pop_front();
    if (token != want && verdict.ok())
      verdict = V(ErrorCode::FRONTIER_TOKEN_MISMATCH,
                  "output " + U(output_index) + " is token " + U(token) +
                      ", but the committed accepted draft at this position is " + U(want));
    return verdict;  // an accepted draft: its row is already committed
  }
  frontier_token_ = token;
  return verdict;
}

void FrontierState::Truncate(uint64_t t) {
  if (!tracked_ || t >= committed()) return;
  if (t < prompt_length_) {
    // Into the prompt: every output, every processed row and every draft goes, and the request
    // is again one whose first t prompt rows are committed with no logits ready: output 0 needs
    // the prompt prefilled again (since 2026-12-04: before, tracking stopped here, so an output
    // emitted or a decode published over the missing prompt rows passed: probe 9).
    const bool had_outputs = !outputs_.empty();
    rolled_back_ += outputs_.size();
    outputs_.clear();
    prompt_rows_ = t;
    processed_ = 0;
    ready_outputs_ = 0;
    expected_tokens_.clear();
    frontier_token_.reset();
    last_draft_count_ = 0;
    last_accepted_ = 0;
    // Only a request that had selected outputs may finish before its next one (a request that
    // never emitted still needs one: review of b770f91).
    rolled_into_prompt_ = rolled_into_prompt_ || had_outputs;
    return;
  }
  const uint64_t kept = t - prompt_length_;
  if (!expected_tokens_.empty()) {
    // Accepted drafts committed but not yet emitted: the processed rows are the emitted
    // outputs' and then the drafts' (output j's row is S + j). Since 2026-12-04 (probe 16: the
    // frontier stopped being followed here, so any output, decode or finish claim passed).
    const uint64_t emitted = outputs_.size();
    if (processed_ != emitted + expected_tokens_.size()) {  // not reconcilable: stop following
      tracked_ = false;
      return;
    }
    if (kept >= emitted) {
      // Only draft rows go: as if the verification had accepted just the drafts kept. They are
      // still emitted in order, then one output from the last kept row's logits.
      expected_tokens_.keep_first(kept - emitted);
      processed_ = kept;
      ready_outputs_ = expected_tokens_.size() + 1;
      last_draft_count_ = 0;
      last_accepted_ = 0;
      return;
    }
    expected_tokens_.clear();  // every draft row goes, and emitted outputs after `kept` (below)
  }
  // At or above S the prompt was complete (K_c > t >= S) and every processed token was emitted
  // (no accepted draft awaits emission), so output t - S exists; checked all the same.
  if (kept >= outputs_.size()) {
    tracked_ = false;
    return;
  }
  ready_outputs_ = 0;  // the logits of the rows kept were consumed by the outputs kept
  last_draft_count_ = 0;
  last_accepted_ = 0;
  processed_ = kept;
  rolled_back_ += outputs_.size() - (kept + 1);
  outputs_.Shrink(kept + 1);
  frontier_token_ = outputs_.back();
}

Status FrontierState::CheckFinish() const {
  if (!tracked_) return Status::Ok();
  // A request rolled back into its prompt and not yet emitting again may finish: its outputs
  // were selected before the rollback (M5.1's Loop 8 trace finishes a branch truncated into
  // its prompt without prefilling it again).
  if (rolled_into_prompt_ && outputs_.empty()) return Status::Ok();
  if (!prompt_complete() || outputs_.empty())
    return V(ErrorCode::SERVICE_PHASE_EARLY_FINISH,
             "finish after " + U(outputs_.size()) + " outputs with " +
                 U(prompt_length_ - prompt_rows_) +
                 " prompt rows unprocessed; a finished request has selected at least one output");
  // At most every emitted token is processed (O >= G_in: the ordinary stop O = G_in + 1, or a
  // repair's O = G_in). More processed than emitted leaves committed rows for tokens the
  // request never returned, accepted drafts past a stop: M5.1 0x01 allows no K/V suffix to
  // stay visible without its outputs; truncate them before finishing (probe 54: it passed).
  if (processed_ > outputs_.size())
    return V(ErrorCode::FRONTIER_ROWS_PAST_OUTPUT,
             "finish after " + U(outputs_.size()) + " outputs with " + U(processed_) +
                 " generated tokens' rows committed: " + U(processed_ - outputs_.size()) +
                 " row(s) hold tokens never emitted (accepted drafts past the stop: truncate "
                 "them to the stop before finishing)");
  return Status::Ok();
}

}  // namespace kvc::frontier
