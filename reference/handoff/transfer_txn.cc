// TransferTxn: the request and chunk state machines of the M5.6 handoff transaction.
#include "reference/handoff/transfer_txn.h"

#include <algorithm>
#include <map>
#include <set>

#include "reference/base/canonical_json.h"
#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"

namespace kvc::handoff {
namespace {

Status Breach(ErrorCode c, std::string m) { return ViolationStatus(c, std::move(m)); }

}  // namespace

std::string_view TxnStateName(TxnState s) {
  switch (s) {
    case TxnState::kPlanned:
      return "PLANNED";
    case TxnState::kReserved:
      return "RESERVED";
    case TxnState::kTransferring:
      return "TRANSFERRING";
    case TxnState::kValidated:
      return "VALIDATED";
    case TxnState::kPublished:
      return "PUBLISHED";
    case TxnState::kAborted:
      return "ABORTED";
  }
  return "?";
}

std::string_view ChunkStateName(ChunkState s) {
  switch (s) {
    case ChunkState::kDeclared:
      return "DECLARED";
    case ChunkState::kCreditAcquired:
      return "CREDIT_ACQUIRED";
    case ChunkState::kSent:
      return "SENT";
    case ChunkState::kReceived:
      return "RECEIVED";
    case ChunkState::kDeviceVisible:
      return "DEVICE_VISIBLE";
  }
  return "?";
}

std::string TransferIdProblem(std::string_view transfer_id) {
  if (transfer_id.empty()) return "the transfer id is empty; a transfer id is a non-empty string";
  if (DecodeDirectory::IsReservedTransferId(transfer_id))
    return "transfer id " + base::QuoteClipped(transfer_id) + " starts with \"" +
           std::string(DecodeDirectory::kPrefixTxnPrefix) +
           "\", reserved for the transactions that publish visible prefixes";
  return "";
}

std::vector<PlanIssue> CheckPlan(const TransferPlan& plan) {
  std::vector<PlanIssue> out;
  if (std::string why = TransferIdProblem(plan.transfer_id); !why.empty()) {
    out.push_back({ErrorCode::INPUT_VALUE_INVALID, -1, std::move(why), "transfer_id"});
    return out;
  }
  // 2 * H_kv * d_h * b has no zero factor; a plan of zero-byte rows would move nothing.
  if (plan.bytes_per_token_layer == 0) {
    out.push_back({ErrorCode::INPUT_VALUE_OUT_OF_RANGE, -1,
                   "bytes_per_token_layer (2 * H_kv * d_h * b) is at least 1",
                   "bytes_per_token_layer"});
    return out;
  }
  auto end = CheckedAdd(plan.token_start, plan.token_count);
  if (!end) {
    out.push_back({ErrorCode::INPUT_ARITHMETIC_OVERFLOW, -1,
                   "token_start " + std::to_string(plan.token_start) + " + token_count " +
                       std::to_string(plan.token_count) + " overflows 64 bits",
                   "token_count"});
    return out;
  }
  std::set<std::string> ids;
  bool sizes_ok = true;
  const size_t issues_before_sizes = out.size();
  size_t size_issues = 0;
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const ChunkSpec& c = plan.chunks[i];
    if (!ids.insert(c.chunk_id).second)
      out.push_back({ErrorCode::HANDOFF_CHUNK_ID_DUPLICATE, static_cast<int64_t>(i),
                     "chunk id " + base::QuoteClipped(c.chunk_id) + " is declared twice"});
    auto want = CheckedMul(c.token_count, plan.bytes_per_token_layer);
    if (want && *want == c.bytes) continue;
    sizes_ok = false;
    ++size_issues;
    if (!want)
      out.push_back({ErrorCode::INPUT_ARITHMETIC_OVERFLOW, static_cast<int64_t>(i),
                     "token_count * bytes_per_token_layer overflows 64 bits"});
    else
      out.push_back({ErrorCode::HANDOFF_CHUNK_BYTES_MISMATCH, static_cast<int64_t>(i),
                     "chunk " + base::QuoteClipped(c.chunk_id) + " declares " +
                         std::to_string(c.bytes) + " B but " + std::to_string(c.token_count) +
                         " tokens * " + std::to_string(plan.bytes_per_token_layer) +
                         " B (2 * H_kv * d_h * b) = " + std::to_string(*want) + " B"});
  }
  // A cold destination's transfer starts at token 0: a plan starting elsewhere without a visible
  // prefix is that one code, not also one per chunk lying outside its shifted interval (probe
  // 49: token_start 8 raised five codes). (A plan of no tokens without a prefix is judged
  // below: it has nothing to publish.)
  if (plan.token_start != 0 && plan.visible_prefix_handle.empty() && plan.token_count > 0) {
    out.push_back({ErrorCode::HANDOFF_COVERAGE_MISMATCH, -1,
                   "token_start is " + std::to_string(plan.token_start) +
                       " but the plan names no visible prefix: a cold destination holds no "
                       "tokens (V_D is empty), so the transfer set X = U \\ V_D starts at token 0",
                   "token_start"});
    return out;
  }
  // No chunk's bytes agree with bytes_per_token_layer (two or more chunks, and no chunk id
  // repeated): the plan's one factor is the one field wrong, reported once there rather than at
  // every chunk (probe 51: eight codes for one bytes_per_token_layer).
  if (plan.chunks.size() >= 2 && size_issues == plan.chunks.size() &&
      out.size() - issues_before_sizes == size_issues) {
    const ErrorCode code = out.back().code;
    out.resize(issues_before_sizes);
    out.push_back({code, -1,
                   "no chunk's bytes equal its token_count x bytes_per_token_layer (" +
                       std::to_string(plan.bytes_per_token_layer) +
                       " B = 2 * H_kv * d_h * b): the plan's row size is not its chunks' (chunk " +
                       base::QuoteClipped(plan.chunks[0].chunk_id) + " declares " +
                       std::to_string(plan.chunks[0].bytes) + " B for " +
                       std::to_string(plan.chunks[0].token_count) + " tokens)",
                   "bytes_per_token_layer"});
    return out;
  }
  // Coverage: per layer, the chunk intervals must tile [token_start, token_start + token_count).
  // Judged only when every chunk's bytes agree with its token_count: a chunk whose two sizes
  // disagree has no trustworthy interval (a wrong token_count would otherwise raise a coverage
  // code too: one wrong field, one code).
  if (!sizes_ok) return out;
  std::map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> per_layer;
  // Chunks lying outside the plan's tokens, per layer: the same ones in every layer are one
  // plan-level mistake (below).
  std::map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> outside;
  const size_t issues_before_chunks = out.size();
  bool other_chunk_issue = false;
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const ChunkSpec& c = plan.chunks[i];
    auto c_end = CheckedAdd(c.token_start, c.token_count);
    if (c.layer >= plan.num_layers || c.token_count == 0 || !c_end ||
        c.token_start < plan.token_start || *c_end > *end) {
      if (c.layer >= plan.num_layers || c.token_count == 0 || !c_end)
        other_chunk_issue = true;
      else
        outside[c.layer].push_back({c.token_start, c.token_count});
      const std::string what =
          c.token_count == 0 ? " is empty (token_count 0); a chunk carries at least one token"
          : c.layer >= plan.num_layers
              ? " names layer " + std::to_string(c.layer) + "; the plan has layers [0," +
                    std::to_string(plan.num_layers) + ")"
              : " (tokens " + std::to_string(c.token_start) + "+" + std::to_string(c.token_count) +
                    ") lies outside the plan's tokens [" + std::to_string(plan.token_start) + "," +
                    std::to_string(*end) + ")";
      out.push_back({ErrorCode::HANDOFF_COVERAGE_MISMATCH, static_cast<int64_t>(i),
                     "chunk " + base::QuoteClipped(c.chunk_id) + " (layer " +
                         std::to_string(c.layer) + ")" + what});
      continue;
    }
    per_layer[c.layer].push_back({c.token_start, *c_end});
  }
  // Every layer's chunks lying outside the plan's tokens alike (two or more layers, each with
  // chunks, no other chunk issue): the plan's token_start or token_count is the one field wrong,
  // reported once there rather than at every chunk (since 2026-12-06, probe 85: a warm plan's
  // token_start 4 -> 0 raised eight codes, one per chunk).
  if (!other_chunk_issue && outside.size() >= 2 && outside.size() == plan.num_layers &&
      std::all_of(outside.begin(), outside.end(),
                  [&](const auto& kv) { return kv.second == outside.begin()->second; })) {
    // The field blamed: token_start when the chunks start before it, or when a layer's chunks
    // span token_count tokens from elsewhere (the interval shifted); else token_count.
    const auto& first = outside.begin()->second;
    uint64_t lo = UINT64_MAX, hi = 0;  // the outside chunks' span, for the message
    for (const auto& [start, count] : first) {
      lo = std::min(lo, start);
      hi = std::max(hi, start + count);  // chunk ends were checked above (CheckedAdd)
    }
    uint64_t layer_lo = UINT64_MAX, layer_hi = 0;  // the first layer's chunks, all of them
    for (const ChunkSpec& c : plan.chunks)
      if (c.layer == outside.begin()->first) {
        layer_lo = std::min(layer_lo, c.token_start);
        layer_hi = std::max(layer_hi, c.token_start + c.token_count);
      }
    const bool start_wrong = lo < plan.token_start || (layer_lo != plan.token_start &&
                                                       layer_hi - layer_lo == plan.token_count);
    const char* field = start_wrong ? "token_start" : "token_count";
    out.resize(issues_before_chunks);
    out.push_back({ErrorCode::HANDOFF_COVERAGE_MISMATCH, -1,
                   "in every layer (" + std::to_string(outside.size()) +
                       ") the chunks at tokens [" + std::to_string(lo) + "," + std::to_string(hi) +
                       ") lie outside the plan's tokens [" + std::to_string(plan.token_start) +
                       "," + std::to_string(*end) + "): the plan's " + field +
                       " is not its chunks'",
                   field});
    return out;
  }
  if (plan.token_count == 0 && plan.visible_prefix_handle.empty())
    out.push_back({ErrorCode::HANDOFF_COVERAGE_MISMATCH, -1,
                   "a plan of no tokens without a visible prefix has nothing to publish (a "
                   "zero-byte handoff names the destination's prefix that holds every token)",
                   "visible_prefix_handle"});
  bool bounds_ok = out.empty() || out.back().code != ErrorCode::HANDOFF_COVERAGE_MISMATCH;
  // A plan of no tokens has nothing to cover (its chunks, if any, were judged above).
  if (bounds_ok && plan.token_count > 0) {
    // Layers without any chunk: named one by one up to a few, then counted (num_layers comes
    // from untrusted input; nothing here is sized by it).
    constexpr uint64_t kNamedGaps = 8;
    const uint64_t uncovered = plan.num_layers - per_layer.size();  // keys are < num_layers
    uint64_t named = 0;
    for (uint64_t l = 0; l < plan.num_layers && named < std::min(uncovered, kNamedGaps); ++l) {
      if (per_layer.count(l)) continue;
      ++named;
      out.push_back({ErrorCode::HANDOFF_COVERAGE_MISMATCH, -1,
                     "layer " + std::to_string(l) + " is not covered exactly once: gap at tokens [" +
                         std::to_string(plan.token_start) + "," + std::to_string(*end) + ")"});
    }
    if (uncovered > named)
      out.push_back({ErrorCode::HANDOFF_COVERAGE_MISMATCH, -1,
                     std::to_string(uncovered - named) + " more of " +
                         std::to_string(plan.num_layers) + " layers have no chunk at all"});
    // The same problem in every layer (two or more) is one plan-level mistake, e.g. a
    // token_count one above what the chunks cover: reported once (probe 51: once per layer).
    std::vector<std::string> problems;
    for (auto& [l, iv] : per_layer) {
      std::sort(iv.begin(), iv.end());
      uint64_t at = plan.token_start;
      std::string problem;
      for (auto [s, e] : iv) {
        if (s != at) {
          problem = s < at ? "overlap at token " + std::to_string(s)
                           : "gap at tokens [" + std::to_string(at) + "," + std::to_string(s) + ")";
          break;
        }
        at = e;
      }
      if (problem.empty() && at != *end)
        problem = "gap at tokens [" + std::to_string(at) + "," + std::to_string(*end) + ")";
      problems.push_back(problem);
    }
    const bool same_everywhere =
        per_layer.size() >= 2 && uncovered == 0 && !problems.front().empty() &&
        std::all_of(problems.begin(), problems.end(),
                    [&](const std::string& x) { return x == problems[0]; });
    if (same_everywhere) {
      out.push_back({ErrorCode::HANDOFF_COVERAGE_MISMATCH, -1,
                     "every layer (" + std::to_string(per_layer.size()) +
                         ") is not covered exactly once, alike: " + problems[0] + " (the plan's [" +
                         std::to_string(plan.token_start) + "," + std::to_string(*end) +
                         ") is not what its chunks cover)",
                     "token_count"});
    } else {
      size_t k = 0;
      for (const auto& [l, iv] : per_layer) {
        if (!problems[k].empty())
          out.push_back(
              {ErrorCode::HANDOFF_COVERAGE_MISMATCH, -1,
               "layer " + std::to_string(l) + " is not covered exactly once: " + problems[k]});
        ++k;
      }
    }
  }
  // The destination reservation "protects capacity for the complete prompt K/V" (M5.6 0x06B):
  // its size is in the runtime's own block unit, which the plan does not state, so only an
  // empty reservation for tokens to move is decidable (since 2026-12-04, probe 24: it passed).
  if (out.empty() && plan.token_count > 0 && plan.reserved_blocks == 0)
    out.push_back({ErrorCode::HANDOFF_RESERVATION_TOO_SMALL, -1,
                   "reserved_blocks is 0, but the plan moves " + std::to_string(plan.token_count) +
                       " tokens into the destination: a reservation of no blocks holds none of "
                       "their K/V",
                   "reserved_blocks"});
  return out;
}

std::string PlanContentDigest(const TransferPlan& plan) {
  std::string acc = plan.transfer_id + "\n" + plan.tensor_abi_sha256 + "\n";
  for (const auto& c : plan.chunks) acc += c.chunk_id + "=" + c.checksum + "\n";
  return Sha256Hex(acc);
}

TransferTxn::TransferTxn(TransferPlan plan, ByteCreditWindow* credits, DestinationBlockPool* pool,
                         DecodeDirectory* directory)
    : plan_(std::move(plan)), credits_(credits), pool_(pool), directory_(directory) {
  const auto& chunks = plan_.chunks;
  by_id_.resize(chunks.size());
  chunks_.resize(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    by_id_[i] = i;
    chunks_[i].index = i;
    ++layer_pending_[chunks[i].layer];
  }
  // CheckPlan made the ids unique, so the order is total.
  std::sort(by_id_.begin(), by_id_.end(),
            [&](size_t a, size_t b) { return chunks[a].chunk_id < chunks[b].chunk_id; });
}

std::optional<size_t> TransferTxn::IndexOf(std::string_view chunk_id) const {
  auto it =
      std::lower_bound(by_id_.begin(), by_id_.end(), chunk_id, [&](size_t i, std::string_view id) {
        return std::string_view(plan_.chunks[i].chunk_id) < id;
      });
  if (it == by_id_.end() || plan_.chunks[*it].chunk_id != chunk_id) return std::nullopt;
  return *it;
}

const ChunkSpec* TransferTxn::FindSpec(std::string_view chunk_id) const {
  auto i = IndexOf(chunk_id);
  return i ? &plan_.chunks[*i] : nullptr;
}

StatusOr<TransferTxn> TransferTxn::Create(TransferPlan plan, ByteCreditWindow* credits,
                                          DestinationBlockPool* pool, DecodeDirectory* directory) {
  if (!credits || !pool || !directory)
    return InvalidArgument("TransferTxn needs a credit window, pool and directory");
  auto issues = CheckPlan(plan);
  if (!issues.empty()) return ViolationStatus(issues.front().code, issues.front().message);
  // (A plan of tokens without chunks fails CheckPlan's coverage; one of no tokens has none.)
  for (const auto& c : plan.chunks)
    if (c.bytes > credits->capacity())
      return ViolationStatus(ErrorCode::HANDOFF_CREDIT_WINDOW_TOO_SMALL,
                             "chunk " + base::QuoteClipped(c.chunk_id) + " has " +
                                 std::to_string(c.bytes) + " B but the credit window holds only " +
                                 std::to_string(credits->capacity()) + " B");
  return TransferTxn(std::move(plan), credits, pool, directory);
}

StatusOr<TransferTxn::Chunk*> TransferTxn::Find(std::string_view chunk_id) {
  const std::optional<size_t> i = IndexOf(chunk_id);
  if (!i)
    return Breach(ErrorCode::HANDOFF_CHUNK_UNKNOWN,
                  "chunk " + base::QuoteClipped(chunk_id) + " is not in transfer " +
                      base::Clipped(plan_.transfer_id) + "'s manifest");
  if (settled_) {
    // Only a PUBLISHED transaction gets here (an ABORTED one fences every completion first):
    // each of its chunks is DEVICE_VISIBLE with the checksum the manifest expects.
    settled_chunk_ = {*i, ChunkState::kDeviceVisible, false, plan_.chunks[*i].checksum};
    return &settled_chunk_;
  }
  return &chunks_[*i];
}

Status TransferTxn::RejectIfFenced(std::string_view what) const {
  if (state_ == TxnState::kAborted)
    return Breach(ErrorCode::HANDOFF_LATE_COMPLETION,
                  std::string(what) + " for transfer " + base::Clipped(plan_.transfer_id) +
                      " after it was aborted (" + abort_reason_ + ")");
  return Status();
}

std::optional<ChunkState> TransferTxn::chunk_state(std::string_view chunk_id) const {
  const std::optional<size_t> i = IndexOf(chunk_id);
  if (!i) return std::nullopt;
  if (settled_)
    return state_ == TxnState::kPublished ? std::optional(ChunkState::kDeviceVisible)
                                          : std::nullopt;
  return chunks_[*i].state;
}

uint64_t TransferTxn::credit_held() const {
  uint64_t sum = 0;
  for (const auto& c : chunks_)
    if (c.credit_held) sum += plan_.chunks[c.index].bytes;
  return sum;
}

Status TransferTxn::Reserve() {
  if (state_ != TxnState::kPlanned)
    return Breach(ErrorCode::HANDOFF_TXN_TRANSITION_INVALID,
                  "reserve requires PLANNED, transfer " + base::Clipped(plan_.transfer_id) +
                      " is " + std::string(TxnStateName(state_)));
  KVC_RETURN_IF_ERROR(pool_->Reserve(plan_.reserved_blocks));
  auto unreserve = [&](Status s) {
    Status r = pool_->ReleaseUnpublished(plan_.reserved_blocks);
    return r.ok() ? s : r;
  };
  // A refused reservation changes nothing (the class contract), the request's generation fence
  // included: it is put back when opening the destination fails (since 2026-12-04, probe 15: the
  // generation stayed reserved, so the request's publication counted as superseded and its
  // decode admission was refused).
  const std::optional<uint64_t> previous = directory_->CurrentGeneration(plan_.identity.request_id);
  if (Status s =
          directory_->ReserveGeneration(plan_.identity.request_id, plan_.identity.generation);
      !s.ok())
    return unreserve(s);
  auto unreserve_all = [&](Status s) {
    if (previous)
      directory_->SetCurrentGeneration(plan_.identity.request_id, *previous);
    else
      directory_->ForgetRequest(plan_.identity.request_id);
    return unreserve(s);
  };
  if (Status s = plan_.visible_prefix_handle.empty()
                     ? directory_->OpenDestination(plan_.identity.request_id,
                                                   plan_.identity.generation, plan_.transfer_id,
                                                   plan_.token_start, plan_.token_count)
                     : directory_->OpenDestinationOnto(
                           plan_.identity.request_id, plan_.identity.generation,
                           plan_.transfer_id, plan_.token_start, plan_.token_count,
                           plan_.visible_prefix_handle);
      !s.ok())
    return unreserve_all(s);
  blocks_reserved_ = true;
  destination_open_ = true;
  state_ = TxnState::kReserved;
  return Status();
}

Status TransferTxn::AcquireCredit(std::string_view chunk_id) {
  KVC_RETURN_IF_ERROR(RejectIfFenced("credit acquisition"));
  if (state_ != TxnState::kReserved && state_ != TxnState::kTransferring)
    return Breach(ErrorCode::HANDOFF_TXN_TRANSITION_INVALID,
                  "credit acquisition requires RESERVED or TRANSFERRING, transfer is " +
                      std::string(TxnStateName(state_)));
  KVC_ASSIGN_OR_RETURN(Chunk * c, Find(chunk_id));
  if (c->state != ChunkState::kDeclared)
    return Breach(ErrorCode::HANDOFF_CHUNK_TRANSITION_INVALID,
                  "credit acquisition for chunk \"" + std::string(chunk_id) + "\" in state " +
                      std::string(ChunkStateName(c->state)) + " (expected DECLARED)");
  KVC_RETURN_IF_ERROR(credits_->Acquire(plan_.chunks[c->index].bytes));
  c->credit_held = true;
  c->state = ChunkState::kCreditAcquired;
  state_ = TxnState::kTransferring;
  return Status();
}

Status TransferTxn::Send(std::string_view chunk_id, uint64_t now, uint64_t kv_ready_time) {
  KVC_RETURN_IF_ERROR(RejectIfFenced("send"));
  KVC_ASSIGN_OR_RETURN(Chunk * c, Find(chunk_id));
  switch (c->state) {
    case ChunkState::kDeclared:
      return Breach(
          ErrorCode::HANDOFF_SEND_WITHOUT_CREDIT,
          "chunk " + base::QuoteClipped(chunk_id) + " sent before acquiring its byte credit");
    case ChunkState::kCreditAcquired:
      break;
    default:
      ++retries_;  // a retransmission of bytes already on their way: idempotent
      return Status();
  }
  if (now < kv_ready_time)
    return Breach(ErrorCode::HANDOFF_PRODUCER_GATE,
                  "chunk " + base::QuoteClipped(chunk_id) + " (layer " +
                      std::to_string(plan_.chunks[c->index].layer) + ") sent at " +
                      std::to_string(now) + " before its K/V was ready at " +
                      std::to_string(kv_ready_time));
  c->state = ChunkState::kSent;
  return Status();
}

Status TransferTxn::Receive(std::string_view chunk_id, std::string_view checksum) {
  KVC_RETURN_IF_ERROR(RejectIfFenced("receive completion"));
  KVC_ASSIGN_OR_RETURN(Chunk * c, Find(chunk_id));
  if (c->state == ChunkState::kReceived || c->state == ChunkState::kDeviceVisible) {
    if (c->observed_checksum != checksum)
      return Breach(ErrorCode::HANDOFF_DUPLICATE_CORRUPTION,
                    "chunk " + base::QuoteClipped(chunk_id) + " of transfer " +
                        base::Clipped(plan_.transfer_id) +
                        " delivered again with different bytes (checksum " +
                        base::Clipped(checksum) + " vs " + base::Clipped(c->observed_checksum) +
                        ")");
    ++retries_;
    return Status();
  }
  if (c->state != ChunkState::kSent)
    return Breach(ErrorCode::HANDOFF_CHUNK_TRANSITION_INVALID,
                  "chunk " + base::QuoteClipped(chunk_id) + " received in state " +
                      std::string(ChunkStateName(c->state)) + " (expected SENT)");
  c->observed_checksum = std::string(checksum);
  c->state = ChunkState::kReceived;
  return Status();
}

Status TransferTxn::MarkDeviceVisible(std::string_view chunk_id) {
  KVC_RETURN_IF_ERROR(RejectIfFenced("device-visible completion"));
  KVC_ASSIGN_OR_RETURN(Chunk * c, Find(chunk_id));
  if (c->state == ChunkState::kDeviceVisible) {
    ++retries_;
    return Status();
  }
  if (c->state != ChunkState::kReceived)
    return Breach(ErrorCode::HANDOFF_VISIBLE_BEFORE_RECEIVE,
                  "chunk " + base::QuoteClipped(chunk_id) + " marked DEVICE_VISIBLE in state " +
                      std::string(ChunkStateName(c->state)) + " (its bytes were not received)");
  // The last visible chunk of a layer completes that layer's K and V rows in the
  // destination's append transaction (staged, not readable until publication).
  const uint64_t layer = plan_.chunks[c->index].layer;
  uint64_t& pending = layer_pending_.at(layer);  // counts this chunk: it is not yet visible
  if (pending == 1)
    KVC_RETURN_IF_ERROR(
        directory_->StageLayer(plan_.transfer_id, layer, plan_.token_start, plan_.token_count));
  KVC_RETURN_IF_ERROR(credits_->Release(plan_.chunks[c->index].bytes));
  --pending;
  ++visible_chunks_;
  c->credit_held = false;
  c->state = ChunkState::kDeviceVisible;
  return Status();
}

Status TransferTxn::Validate(const TransferIdentity& expected,
                             std::string_view expected_abi_sha256) {
  // A plan of no chunks (a zero-byte warm handoff, M5.6 0x06) moves nothing: it validates
  // straight from RESERVED.
  const bool nothing_to_move = plan_.chunks.empty() && state_ == TxnState::kReserved;
  // After an abort every completion is a late one, a validation as a publication (probe 31: it
  // was HANDOFF_TXN_TRANSITION_INVALID).
  KVC_RETURN_IF_ERROR(RejectIfFenced("validation"));
  if (state_ != TxnState::kTransferring && !nothing_to_move)
    return Breach(
        ErrorCode::HANDOFF_TXN_TRANSITION_INVALID,
        "validate requires TRANSFERRING" +
            std::string(plan_.chunks.empty() ? " (or RESERVED for a plan of no chunks)" : "") +
            ", transfer " + base::Clipped(plan_.transfer_id) + " is " +
            std::string(TxnStateName(state_)));
  const TransferIdentity& id = plan_.identity;
  if (!(id == expected)) {
    std::string field = id.tenant != expected.tenant           ? "tenant"
                        : id.request_id != expected.request_id ? "request_id"
                        : id.generation != expected.generation ? "generation"
                        : id.attempt != expected.attempt       ? "attempt"
                        : id.source_worker_epoch != expected.source_worker_epoch
                            ? "source_worker_epoch"
                        : id.destination_worker_epoch != expected.destination_worker_epoch
                            ? "destination_worker_epoch"
                            : "reservation_id";
    return Breach(ErrorCode::HANDOFF_IDENTITY_MISMATCH,
                  "transfer " + base::Clipped(plan_.transfer_id) +
                      " identity fence differs from the reservation in " + field);
  }
  if (plan_.tensor_abi_sha256 != expected_abi_sha256)
    return Breach(ErrorCode::HANDOFF_ABI_MISMATCH,
                  "transfer tensor ABI " + base::Clipped(plan_.tensor_abi_sha256) +
                      " differs from the destination's " + base::Clipped(expected_abi_sha256));
  for (const auto& spec : plan_.chunks) {
    const Chunk& c = chunks_[&spec - plan_.chunks.data()];
    if (c.state != ChunkState::kDeviceVisible)
      return Breach(ErrorCode::HANDOFF_CONSUMER_GATE, "chunk " + base::QuoteClipped(spec.chunk_id) +
                                                          " is " +
                                                          std::string(ChunkStateName(c.state)) +
                                                          ", not DEVICE_VISIBLE, at validation");
  }
  for (const auto& spec : plan_.chunks) {
    const Chunk& c = chunks_[&spec - plan_.chunks.data()];
    if (c.observed_checksum != spec.checksum)
      return Breach(ErrorCode::HANDOFF_CHECKSUM_MISMATCH,
                    "chunk " + base::QuoteClipped(spec.chunk_id) + " received checksum " +
                        base::Clipped(c.observed_checksum) + ", manifest expects " +
                        base::Clipped(spec.checksum));
  }
  state_ = TxnState::kValidated;
  return Status();
}

StatusOr<PublishedHandle> TransferTxn::Publish() {
  if (state_ == TxnState::kPublished && published_) {
    // A retry returns the original handle (M5.6 0x06D: publication "may be retried
    // idempotently; it must not create two owners or replace a newer generation"), also after
    // the decode side released it (it publishes nothing more), but not once a newer generation
    // superseded it: that retry is refused (since 2026-12-05, probe 31: it returned the handle,
    // so a refused retry was TRACE_OUTCOME_INVALID and a successful one passed).
    const std::optional<uint64_t> current =
        directory_->CurrentGeneration(plan_.identity.request_id);
    if (current && *current != plan_.identity.generation)
      return Breach(ErrorCode::HANDOFF_STALE_GENERATION,
                    "re-publication of transfer " + base::Clipped(plan_.transfer_id) +
                        " under generation " + std::to_string(plan_.identity.generation) +
                        ": generation " + std::to_string(*current) + " of request " +
                        base::Clipped(plan_.identity.request_id) + " superseded it");
    return *published_;  // idempotent
  }
  if (state_ != TxnState::kValidated) {
    if (state_ == TxnState::kAborted) return RejectIfFenced("publication");
    return Breach(ErrorCode::HANDOFF_PUBLISH_BEFORE_VALIDATE,
                  "publication of transfer " + base::Clipped(plan_.transfer_id) + " in state " +
                      std::string(TxnStateName(state_)) + " (expected VALIDATED)");
  }
  auto r =
      directory_->PublishIfGenerationCurrent(plan_.identity.request_id, plan_.identity.generation,
                                             plan_.transfer_id, PlanContentDigest(plan_));
  if (!r.ok()) {
    Status abort = Abort("publication rejected: " + r.status().message());
    if (!abort.ok()) return abort;
    return r.status();
  }
  if (r->idempotent_replay) {
    // Another txn object already published this transfer: our pending blocks are redundant.
    KVC_RETURN_IF_ERROR(pool_->ReleaseUnpublished(plan_.reserved_blocks));
  } else {
    KVC_RETURN_IF_ERROR(pool_->PublishToDecode(plan_.reserved_blocks));
    blocks_decode_owned_ = true;
  }
  blocks_reserved_ = false;
  destination_open_ = false;
  published_ = r->handle;
  state_ = TxnState::kPublished;
  return r->handle;
}

Status TransferTxn::AdmitDecode(const PublishedHandle& handle) {
  if (decode_released_)
    return Breach(ErrorCode::HANDOFF_DECODE_ADMIT_UNPUBLISHED,
                  "decode admission for request " + base::Clipped(handle.request_id) +
                      " generation " + std::to_string(handle.generation) + " from transfer " +
                      base::Clipped(plan_.transfer_id) +
                      "'s published handle, which the decode side already released");
  if (state_ != TxnState::kPublished || !published_ || !(handle == *published_))
    return Breach(ErrorCode::HANDOFF_DECODE_ADMIT_UNPUBLISHED,
                  "decode admission for request " + base::Clipped(handle.request_id) +
                      " generation " + std::to_string(handle.generation) +
                      " is not from transfer " + base::Clipped(plan_.transfer_id) +
                      "'s published handle (transfer is " + std::string(TxnStateName(state_)) +
                      ")");
  // Only the request's current publication admits decode (0x06D: "publish ... under the current
  // generation; admit decode only from that published handle"): a newer generation's
  // reservation or publication supersedes this one (since 2026-12-04: probe 11, a superseded
  // generation's handle was admitted after the newer one was published).
  const std::optional<uint64_t> current = directory_->CurrentGeneration(handle.request_id);
  const PublishedHandle* live = directory_->Lookup(handle.request_id);
  if ((current && *current != plan_.identity.generation) || !live || !(*live == *published_))
    return Breach(ErrorCode::HANDOFF_DECODE_ADMIT_UNPUBLISHED,
                  "decode admission for request " + base::Clipped(handle.request_id) +
                      " generation " + std::to_string(handle.generation) + " from transfer " +
                      base::Clipped(plan_.transfer_id) +
                      "'s handle, which is superseded: the request's current generation is " +
                      (current ? std::to_string(*current) : std::string("unknown")) +
                      (live && *live == *published_
                           // The newer generation reserved and did not publish (aborted, or
                           // still in flight): once reserved it supersedes this publication;
                           // decode waits for its publication (probe 40: the message named the
                           // admitted handle as the published one, without saying why).
                           ? ", reserved after this publication (which stays the last published "
                             "handle, " +
                                 live->cache_handle_id +
                                 "); a newer reservation supersedes it even if it never "
                                 "publishes"
                           : live ? " and its published handle is " + live->cache_handle_id +
                                        " (transfer " + live->transfer_id + ")"
                                  : std::string(" and it has no published handle")));
  decode_admitted_ = true;
  return Status();
}

Status TransferTxn::AcknowledgeSourceRelease(uint64_t generation) {
  if (state_ != TxnState::kPublished || !decode_admitted_ ||
      generation != plan_.identity.generation)
    return Breach(ErrorCode::HANDOFF_SOURCE_RELEASE_EARLY,
                  "source release of transfer " + base::Clipped(plan_.transfer_id) +
                      " under generation " + std::to_string(generation) +
                      " requires PUBLISHED + decode admitted under generation " +
                      std::to_string(plan_.identity.generation) + " (transfer is " +
                      std::string(TxnStateName(state_)) +
                      (decode_admitted_ ? ", admitted)" : ", not admitted)"));
  source_released_ = true;
  return Status();
}

Status TransferTxn::ReleaseDecode(uint64_t generation) {
  if (state_ != TxnState::kPublished || !published_ || decode_released_ ||
      generation != plan_.identity.generation)
    return Breach(
        ErrorCode::HANDOFF_DECODE_RELEASE_INVALID,
        "decode release of transfer " + base::Clipped(plan_.transfer_id) + " under generation " +
            std::to_string(generation) + " requires PUBLISHED under generation " +
            std::to_string(plan_.identity.generation) + ", once (transfer is " +
            std::string(TxnStateName(state_)) + (decode_released_ ? ", already released)" : ")"));
  KVC_RETURN_IF_ERROR(directory_->ReleasePublished(*published_));
  if (blocks_decode_owned_) {
    KVC_RETURN_IF_ERROR(pool_->ReleaseDecodeOwned(plan_.reserved_blocks));
    blocks_decode_owned_ = false;
  }
  decode_released_ = true;
  return Status();
}

Status TransferTxn::ReleaseHeld() {
  // Callbacks are fenced (state is ABORTED before this runs), so no chunk can still move.
  for (auto& c : chunks_) {
    if (!c.credit_held) continue;
    KVC_RETURN_IF_ERROR(credits_->Release(plan_.chunks[c.index].bytes));
    c.credit_held = false;
  }
  if (destination_open_) {
    KVC_RETURN_IF_ERROR(directory_->CancelDestination(plan_.transfer_id));
    destination_open_ = false;
  }
  if (blocks_reserved_) {
    KVC_RETURN_IF_ERROR(pool_->ReleaseUnpublished(plan_.reserved_blocks));
    blocks_reserved_ = false;
  }
  return Status();
}

void TransferTxn::Settle() {
  if (state_ != TxnState::kPublished && state_ != TxnState::kAborted) return;
  // Every credit was returned (PUBLISHED: at each chunk's DEVICE_VISIBLE; ABORTED: ReleaseHeld)
  // unless a return failed: then the chunks stay, so credit_held() still says what is held.
  if (credit_held() != 0) return;
  chunks_ = {};  // frees the storage (clear() would keep it)
  layer_pending_ = {};
  settled_ = true;
}

Status TransferTxn::Abort(std::string_view reason) {
  if (state_ == TxnState::kPublished)
    return Breach(ErrorCode::HANDOFF_ABORT_PUBLISHED,
                  "transfer " + base::Clipped(plan_.transfer_id) + " is already PUBLISHED");
  if (state_ == TxnState::kAborted) return Status();
  // 0x06E records every terminal failure with its reason (record_terminal_failure(..., reason));
  // an empty one records none (probe 73: it passed). (After the state's own refusals: an abort
  // of a published transfer is that breach, and a repeated abort stays idempotent; probe 74.)
  if (reason.empty())
    return Breach(ErrorCode::INPUT_VALUE_INVALID,
                  "abort of transfer " + base::Clipped(plan_.transfer_id) +
                      " names no reason (a terminal failure is recorded with its reason)");
  // 0x06E: cancel outstanding chunks and fence callbacks first (the state change below is
  // the fence: every later completion is rejected), then release credits and blocks.
  state_ = TxnState::kAborted;
  abort_reason_ = std::string(reason);
  return ReleaseHeld();
}

}  // namespace kvc::handoff
