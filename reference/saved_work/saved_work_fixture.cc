// ValidateSavedWorkFixture: the work-ledger part (and the frontier part's entry point).
#include "reference/saved_work/saved_work_fixture.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <tuple>

#include "reference/saved_work/saved_work.h"
#include "reference/saved_work/saved_work_frontier.h"

namespace kvc {
namespace {

struct Declared {
  uint64_t no_cache = 0, cache = 0, saved = 0;
  double reduction = 0;
};

std::string TwoDecimals(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}

// Whether `declared` is n / d rounded to two decimals: a multiple of 0.01 within half a
// hundredth of n / d (on a tie, such as 33/8 = 4.125, either neighbour is a rounding of it).
// Compared in integers: |100 n - q d| <= d / 2.
bool RoundsTo(double declared, uint64_t n, uint64_t d, bool* two_decimals_out = nullptr) {
  const double hundredths = declared * 100;
  const bool two_decimals = std::abs(hundredths - std::nearbyint(hundredths)) < 1e-6 &&
                            hundredths >= 0 && hundredths < 1e18;
  if (two_decimals_out) *two_decimals_out = two_decimals;
  const __int128 q = two_decimals ? static_cast<__int128>(std::llround(hundredths)) : 0;
  const __int128 off = static_cast<__int128>(n) * 100 - q * static_cast<__int128>(d);
  return two_decimals && d != 0 && 2 * (off < 0 ? -off : off) <= static_cast<__int128>(d);
}

bool SameLedger(const Declared& rows, const Declared& pairs, const SavedWork& w) {
  return rows.no_cache == w.rows_no_cache && rows.cache == w.rows_cache &&
         rows.saved == w.rows_saved && pairs.no_cache == w.pairs_no_cache &&
         pairs.cache == w.pairs_cache && pairs.saved == w.pairs_saved &&
         RoundsTo(rows.reduction, w.rows_no_cache, w.rows_cache) &&
         RoundsTo(pairs.reduction, w.pairs_no_cache, w.pairs_cache);
}

}  // namespace

void ValidateWorkLedger(const Json& ledger, const std::string& pointer, Violations* out) {
  size_t before = out->size();
  FieldReader r(&ledger, pointer, out);
  uint64_t p = r.Uint("prompt_tokens").value_or(0);
  uint64_t g = r.Uint("output_tokens").value_or(0);
  Declared rows, pairs;
  for (auto [key, d] : {std::pair{"rows_per_layer", &rows}, std::pair{"pairs_per_layer_query_head", &pairs}}) {
    FieldReader s(r.Object(key), r.Ptr(key), out);
    if (!s.valid()) continue;
    // Counts are read exactly up to 2^64 - 1, as the calculator prints them (P = 2^20, G = 2^15
    // has 1.9 x 10^16 uncached pairs; probe 92: refused beyond 2^53). P and G keep the 2^53
    // bound (SAVED_WORK_INPUT_INVALID below where a ledger does not fit 64 bits).
    if (auto x = s.Uint("no_cache", 0, UINT64_MAX)) d->no_cache = *x;
    if (auto x = s.Uint("cache", 0, UINT64_MAX)) d->cache = *x;
    if (auto x = s.Uint("saved", 0, UINT64_MAX)) d->saved = *x;
    if (auto x = s.Number("reduction")) d->reduction = *x;
    s.RejectUnknownFields();
  }
  r.RejectUnknownFields();
  if (out->size() != before) return;
  // A stop trace has a prompt and at least one output (M5.1 0x03): named here by the member,
  // not by the calculator's flag.
  if (p == 0 || g == 0) {
    Add(out, ErrorCode::SAVED_WORK_INPUT_INVALID,
        pointer + (p == 0 ? "/prompt_tokens" : "/output_tokens"),
        p == 0 ? "prompt_tokens P must be at least 1" : "output_tokens G must be at least 1");
    return;
  }
  auto w = ComputeSavedWork(p, g);
  if (!w.ok()) {
    Add(out, ErrorCode::SAVED_WORK_INPUT_INVALID, pointer, std::string(w.status().message()));
    return;
  }
  const std::string rp = pointer + "/rows_per_layer", pp = pointer + "/pairs_per_layer_query_head";
  auto num = [](uint64_t x) { return std::to_string(x); };
  // Root cause first: every declared figure is the ledger of another P with this G (or another G
  // with this P; P + G - 1 = the declared cached rows names it). Then the one declared input
  // disagrees with all six counts, and is the one violation (probe 92: prompt_tokens 2049 beside
  // the P = 2048 ledger raised 7 violations of 5 codes, among them an invented first-prefill
  // saving and dropped historical reads that the document never claimed).
  if (!SameLedger(rows, pairs, *w) && rows.cache < UINT64_MAX) {
    for (const bool prompt_side : {true, false}) {
      const uint64_t kept = prompt_side ? g : p, declared = prompt_side ? p : g;
      if (rows.cache + 1 <= kept || rows.cache + 1 - kept == declared) continue;
      const uint64_t other = rows.cache + 1 - kept;
      auto alt = prompt_side ? ComputeSavedWork(other, g) : ComputeSavedWork(p, other);
      if (!alt.ok() || !SameLedger(rows, pairs, *alt)) continue;
      const char* name = prompt_side ? "prompt_tokens" : "output_tokens";
      Add(out, ErrorCode::SAVED_WORK_ROW_SUM_DRIFT, pointer + "/" + name,
          std::string("every declared row and pair figure is the ledger of ") +
              (prompt_side ? "P" : "G") + " = " + num(other) + ", not of the declared " + name +
              " " + num(declared) + " (P = " + num(p) + ", G = " + num(g) +
              " gives sum(g=0..G-1)(P+g) = " + num(w->rows_no_cache) +
              " uncached and P + G - 1 = " + num(w->rows_cache) +
              " cached rows): the declared input and its ledger disagree");
      return;
    }
  }
  // A row (pair) figure below its cached closed form claims a specific saving; when the no-cache
  // sum itself drifts, the ledger was derived from other inputs or another formula, and its
  // cached figure is drift like the rest, not that claim (probe 92).
  const bool rows_sum_holds = rows.no_cache == w->rows_no_cache;
  const bool pairs_sum_holds = pairs.no_cache == w->pairs_no_cache;
  // Rows: the cached path keeps the whole first prefill (P rows) plus G-1 one-row decodes.
  if (rows.no_cache != w->rows_no_cache)
    Add(out, ErrorCode::SAVED_WORK_ROW_SUM_DRIFT, rp + "/no_cache",
        "sum(g=0..G-1)(P+g) = " + num(w->rows_no_cache) + ", declared " + num(rows.no_cache));
  if (rows.cache < w->rows_cache && rows_sum_holds)
    Add(out, ErrorCode::SAVED_WORK_FIRST_PREFILL_SAVING_INVENTED, rp + "/cache",
        "the cached path still runs the P-row prefill and G-1 decodes: P + G - 1 = " + num(w->rows_cache) +
            ", declared " + num(rows.cache));
  else if (rows.cache != w->rows_cache)
    Add(out, ErrorCode::SAVED_WORK_ROW_SUM_DRIFT, rp + "/cache",
        "P + G - 1 = " + num(w->rows_cache) + ", declared " + num(rows.cache));
  if (rows.saved > w->rows_saved && rows_sum_holds)
    Add(out, ErrorCode::SAVED_WORK_FIRST_PREFILL_SAVING_INVENTED, rp + "/saved",
        "(G-1)P + (G-1)(G-2)/2 = " + num(w->rows_saved) + " rows can be saved, declared " + num(rows.saved));
  else if (rows.saved != w->rows_saved)
    Add(out, ErrorCode::SAVED_WORK_ROW_SUM_DRIFT, rp + "/saved",
        "(G-1)P + (G-1)(G-2)/2 = " + num(w->rows_saved) + ", declared " + num(rows.saved));
  // Pairs: every decode query still scores its whole visible history.
  if (pairs.no_cache != w->pairs_no_cache)
    Add(out, ErrorCode::SAVED_WORK_PAIR_DRIFT, pp + "/no_cache",
        "sum(g)(P+g)(P+g+1)/2 = " + num(w->pairs_no_cache) + ", declared " + num(pairs.no_cache));
  if (pairs.cache < w->pairs_cache && pairs_sum_holds)
    Add(out, ErrorCode::SAVED_WORK_HISTORICAL_READS_DROPPED, pp + "/cache",
        "P(P+1)/2 + sum(j=1..G-1)(P+j) = " + num(w->pairs_cache) + ": each decode query still reads every visible key; declared " +
            num(pairs.cache));
  else if (pairs.cache != w->pairs_cache)
    Add(out, ErrorCode::SAVED_WORK_PAIR_DRIFT, pp + "/cache",
        "P(P+1)/2 + sum(j=1..G-1)(P+j) = " + num(w->pairs_cache) + ", declared " + num(pairs.cache));
  if (pairs.saved > w->pairs_saved && pairs_sum_holds)
    Add(out, ErrorCode::SAVED_WORK_HISTORICAL_READS_DROPPED, pp + "/saved",
        "only " + num(w->pairs_saved) + " old-query pairs are not re-executed, declared " + num(pairs.saved));
  else if (pairs.saved != w->pairs_saved)
    Add(out, ErrorCode::SAVED_WORK_PAIR_DRIFT, pp + "/saved",
        "no-cache minus cache pairs = " + num(w->pairs_saved) + ", declared " + num(pairs.saved));
  // A reduction is the exact ratio n / d rounded to two decimals (RoundsTo). One that rounds the
  // declared figures' ratio while those figures drift follows them: their drift is the finding.
  for (auto [ptr, declared, n, d, dn, dd] :
       {std::tuple{rp, rows.reduction, w->rows_no_cache, w->rows_cache, rows.no_cache, rows.cache},
        std::tuple{pp, pairs.reduction, w->pairs_no_cache, w->pairs_cache, pairs.no_cache,
                   pairs.cache}}) {
    bool two_decimals = false;
    if (RoundsTo(declared, n, d, &two_decimals)) continue;
    if ((dn != n || dd != d) && RoundsTo(declared, dn, dd)) continue;
    Add(out, ErrorCode::SAVED_WORK_REDUCTION_DRIFT, ptr + "/reduction",
        "no-cache / cache = " + num(n) + " / " + num(d) + " = " +
            TwoDecimals(static_cast<double>(n) / static_cast<double>(d)) +
            "x rounded to two decimals, declared " + Json(declared).dump() + "x" +
            (two_decimals   ? ""
             : declared < 0 ? " (a reduction is never negative)"
                            : " (not a multiple of 0.01)"));
  }
}

Violations ValidateSavedWorkFixture(const Json& doc) {
  Violations v;
  FieldReader top(&doc, "", &v);
  top.Enum("kind", {kSavedWorkKind});
  top.OptString("description");
  top.OptString("seed_ref");
  const Json* ledger = top.Object("work_ledger");
  const Json* frontier = top.Object("frontier");
  top.RejectUnknownFields();
  if (!v.empty()) return v;
  ValidateWorkLedger(*ledger, "/work_ledger", &v);
  ValidateSavedWorkFrontier(*frontier, "/frontier", &v);
  return v;
}

}  // namespace kvc
