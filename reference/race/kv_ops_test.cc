// Tests of the race operation encoding: argument parsing, result forms and named entities.
#include "reference/race/kv_ops.h"

#include <gtest/gtest.h>

namespace kvc::race {
namespace {

Json Snapshot(const std::string& handle) {
  return {{"handle", handle}, {"generation", 0},         {"version", 0},
          {"length", 0},      {"phase", "DECODE_READY"}, {"digest", "63ce68b09a2cdef5"}};
}

Json BeginArgs() {
  return {{"txn", "t"},
          {"key", "k"},
          {"handle", "h"},
          {"base_generation", 0},
          {"base_digest", "63ce68b09a2cdef5"},
          {"start", 0},
          {"count", 1}};
}

void ExpectInvalid(const std::string& op, const Json& args, const std::string& needle) {
  auto r = ParseKvOp(op, args);
  ASSERT_FALSE(r.ok()) << op << " " << args.dump() << " was accepted";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

// Integer arguments are non-negative; a negative one is refused, not wrapped to 2^64 - n.
TEST(KvOps, ParseRejectsNegativeIntegers) {
  ASSERT_TRUE(ParseKvOp("begin_append", BeginArgs()).ok());
  Json a = BeginArgs();
  a["start"] = -1;
  ExpectInvalid("begin_append", a, "args.start: expected a non-negative integer");
  ExpectInvalid("reorder", {{"group", "g"}, {"perm", {1, -1}}}, "args.perm");
}

// Ids (handle, txn, key, group, children) are non-empty strings.
TEST(KvOps, ParseRejectsEmptyIds) {
  ExpectInvalid("allocate", {{"handle", ""}}, "args.handle: expected a non-empty string");
  Json a = BeginArgs();
  a["key"] = "";
  ExpectInvalid("begin_append", a, "args.key");
}

// A stage_layer's layer fits 32 bits (it is not truncated to another layer).
TEST(KvOps, ParseRejectsLayerBeyond32Bits) {
  Json a = {{"txn", "t"}, {"layer", 4294967295ull}, {"start", 0}, {"count", 1}};
  ASSERT_TRUE(ParseKvOp("stage_layer", a).ok());
  a["layer"] = 4294967296ull;
  ExpectInvalid("stage_layer", a, "args.layer: expected a value < 2^32");
}

// Exactly the op's members (probe 79: an unknown args member was ignored, so a runtime's own
// field, a repair flag or an expected base, say, passed unread).
TEST(KvOps, ParseRejectsUnknownArgsMembers) {
  ExpectInvalid("read", {{"handle", "h0"}, {"extra", 1}},
                "args.extra: unknown member of read (its members: handle)");
  Json a = BeginArgs();
  a["repair"] = true;
  ExpectInvalid("begin_append", a, "args.repair: unknown member of begin_append");
  ExpectInvalid("publish", {{"txn", "t"}, {"handle", "h"}},
                "args.handle: unknown member of publish");
}

// A fork creates at least one child.
TEST(KvOps, ParseRejectsForkWithoutChildren) {
  Json a = {{"handle", "h"}, {"prefix", 0}, {"children", {"c"}}, {"group", "g"}};
  ASSERT_TRUE(ParseKvOp("fork", a).ok());
  a["children"] = Json::array();
  ExpectInvalid("fork", a, "args.children: expected a non-empty array");
}

// A snapshot result has exactly its members: a string handle, a phase by name and a digest of
// exactly 16 lowercase hex digits.
TEST(KvOps, SnapshotResultHasExactlyItsMembers) {
  EXPECT_EQ(ResultShapeError(KvOpKind::kAllocate, true, Snapshot("h")), "");
  auto with = [](const char* member, Json value) {
    Json s = Snapshot("h");
    if (value.is_discarded())
      s.erase(member);
    else
      s[member] = std::move(value);
    return ResultShapeError(KvOpKind::kAllocate, true, s);
  };
  EXPECT_NE(with("digest", "63ce68b09a2cdef51"), "");  // 17 digits
  EXPECT_NE(with("phase", "SOMEWHERE"), "");
  EXPECT_NE(with("handle", 7), "");
  EXPECT_NE(with("version", Json(Json::value_t::discarded)), "");
  // The refused value is named clipped (2026-12-07: a 10 KB phase was quoted whole).
  EXPECT_EQ(with("phase", std::string(10000, 'p')),
            "result.phase: unexpected value \"" + std::string(80, 'p') + "...\" (10000 bytes)");
}

// Each op's ok result has its members' types: a transaction state by name, unsigned layer
// rows, a boolean replayed flag, snapshots for a fork's children.
TEST(KvOps, ResultMembersHaveTheirTypes) {
  EXPECT_EQ(ResultShapeError(KvOpKind::kStageLayer, true, {{"state", "PREPARED"}}), "");
  EXPECT_NE(ResultShapeError(KvOpKind::kStageLayer, true, {{"state", "DONE"}}), "");
  Json read = Snapshot("h");
  read["layers"] = {0, 0};
  EXPECT_EQ(ResultShapeError(KvOpKind::kRead, true, read), "");
  read["layers"] = {0, "0"};
  EXPECT_NE(ResultShapeError(KvOpKind::kRead, true, read), "");
  Json receipt = {{"handle", "h"},
                  {"generation", 1},
                  {"length", 1},
                  {"digest", "63ce68b09a2cdef5"},
                  {"replayed", false}};
  EXPECT_EQ(ResultShapeError(KvOpKind::kPublish, true, receipt), "");
  receipt["replayed"] = 0;
  EXPECT_NE(ResultShapeError(KvOpKind::kPublish, true, receipt), "");
  Json kids = {{"children", {Snapshot("a"), Snapshot("b")}}};
  EXPECT_EQ(ResultShapeError(KvOpKind::kFork, true, kids), "");
  kids["children"][1].erase("digest");
  EXPECT_NE(ResultShapeError(KvOpKind::kFork, true, kids), "");
}

// An error result is exactly {"code": a registry name or STATUS_*}.
TEST(KvOps, ErrorResultNamesARegisteredCode) {
  EXPECT_EQ(ResultShapeError(KvOpKind::kPublish, false, {{"code", "LIFECYCLE_STALE_BASE"}}), "");
  EXPECT_EQ(ResultShapeError(KvOpKind::kPublish, false, {{"code", "STATUS_INTERNAL"}}), "");
  EXPECT_NE(ResultShapeError(KvOpKind::kPublish, false, {{"code", "NOT_A_CODE"}}), "");
}

// A fork names its parent, its children and its group; a transaction op names its txn.
TEST(KvOps, NamedEntitiesOfAForkAndABeginAppend) {
  auto fork =
      ParseKvOp("fork", {{"handle", "h"}, {"prefix", 0}, {"children", {"a", "b"}}, {"group", "g"}});
  ASSERT_TRUE(fork.ok());
  EXPECT_EQ(NamedEntities(*fork),
            (std::vector<std::string>{"handle:h", "handle:a", "handle:b", "group:g"}));
  auto begin = ParseKvOp("begin_append", BeginArgs());
  ASSERT_TRUE(begin.ok());
  EXPECT_EQ(NamedEntities(*begin), (std::vector<std::string>{"handle:h", "txn:t"}));
}

// Row i of a fork's group couples child i's token, cache handle, the prefix as its next
// position, and its sampler state.
TEST(KvOps, ForkGroupRowsCoupleEachChild) {
  auto fork =
      ParseKvOp("fork", {{"handle", "h"}, {"prefix", 3}, {"children", {"a", "b"}}, {"group", "g"}});
  ASSERT_TRUE(fork.ok());
  auto rows = ForkGroupRows(*fork);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(RowJson(rows[1]),
            (Json{{"token", "tok:b"}, {"handle", "b"}, {"position", 3}, {"sampler", "rng:b"}}));
}

// A begin_append's binding is derived from its interval: cache_position [start, start+count),
// mask key length start+count.
TEST(KvOps, BeginRequestDerivesTheBindingFromTheInterval) {
  Json a = BeginArgs();
  a["start"] = 4;
  a["count"] = 2;
  auto op = ParseKvOp("begin_append", a);
  ASSERT_TRUE(op.ok());
  lifecycle::CacheAbi abi;
  abi.id = "abi";
  abi.num_layers = 2;
  lifecycle::BeginAppendRequest r = BeginRequest(*op, abi);
  EXPECT_EQ(r.binding.cache_position_start, 4u);
  EXPECT_EQ(r.binding.cache_position_count, 2u);
  EXPECT_EQ(r.binding.mask_key_length, 6u);
  EXPECT_EQ(r.binding.position_stage, abi.position_stage);
}

}  // namespace
}  // namespace kvc::race
