// Strict safetensors validation: valid round trip and every malformed-header class.
#include "reference/model/safetensors/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "reference/testutil/testutil.h"

namespace kvc::model {
namespace {

std::vector<std::byte> Bytes(const std::string& s) {
  std::vector<std::byte> b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
  return b;
}

// A file image with a hand-written header and `data_bytes` zero bytes of data.
std::string Image(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + std::string(data_bytes, '\0');
}

ErrorCode CodeOf(const std::string& image) {
  auto b = Bytes(image);
  auto f = SafetensorsFile::FromBytes(b.data(), b.size(), "t.safetensors");
  EXPECT_FALSE(f.ok());
  if (f.ok()) return ErrorCode::kNone;
  EXPECT_NE(f.status().message().find("t.safetensors"), std::string::npos) << f.status().message();
  return f.status().error();
}

TEST(Safetensors, RoundTripAndConversion) {
  TensorToWrite a{"a", DType::kF32, {2, 2}, {}};
  const float av[4] = {1.5f, -2.0f, 0.25f, 3.0f};
  a.bytes.resize(16);
  std::memcpy(a.bytes.data(), av, 16);
  TensorToWrite b{"b", DType::kBF16, {3}, {}};
  TensorToWrite h{"h", DType::kF16, {3}, {}};
  const float bv[3] = {1.0f, -0.5f, 3.140625f};
  for (float v : bv) {
    uint16_t x = FloatToBFloat16(v), y = FloatToHalf(v);
    b.bytes.push_back(std::byte(x & 0xff));
    b.bytes.push_back(std::byte(x >> 8));
    h.bytes.push_back(std::byte(y & 0xff));
    h.bytes.push_back(std::byte(y >> 8));
  }
  auto img = Bytes(SerializeSafetensors({a, b, h}));
  auto f = SafetensorsFile::FromBytes(img.data(), img.size(), "rt");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(ToFloat32(*f->Find("a")), std::vector<float>(av, av + 4));
  EXPECT_EQ(ToFloat32(*f->Find("b")), std::vector<float>(bv, bv + 3));
  EXPECT_EQ(ToFloat32(*f->Find("h")), std::vector<float>(bv, bv + 3));
  EXPECT_EQ(f->Find("b")->shape, (std::vector<uint64_t>{3}));
}

TEST(Safetensors, HalfAndBfloatEdgeValues) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(BFloat16ToFloat(0xbf80), -1.0f);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie rounds to even
}

TEST(Safetensors, RejectsMalformedFiles) {
  const std::string ok = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  {
    auto b = Bytes(Image(ok, 8));
    EXPECT_TRUE(SafetensorsFile::FromBytes(b.data(), b.size(), "t").ok());
  }
  EXPECT_EQ(CodeOf("abc"), ErrorCode::MODEL_SAFETENSORS_SIZE_MISMATCH);  // < 8 bytes
  EXPECT_EQ(CodeOf(Image(ok, 8).substr(0, 20)),
            ErrorCode::MODEL_SAFETENSORS_SIZE_MISMATCH);                        // truncated header
  EXPECT_EQ(CodeOf(Image(ok, 4)), ErrorCode::MODEL_SAFETENSORS_SIZE_MISMATCH);  // data truncated
  EXPECT_EQ(CodeOf(Image(ok, 9)), ErrorCode::MODEL_SAFETENSORS_SIZE_MISMATCH);  // trailing byte
  std::string huge(8, '\xff');
  EXPECT_EQ(CodeOf(huge + "{}"), ErrorCode::MODEL_SAFETENSORS_HEADER_INVALID);   // size limit
  EXPECT_EQ(CodeOf(Image("", 0)), ErrorCode::MODEL_SAFETENSORS_HEADER_INVALID);  // size 0
  EXPECT_EQ(CodeOf(Image("[1,2]", 0)), ErrorCode::MODEL_SAFETENSORS_HEADER_INVALID);
  EXPECT_EQ(CodeOf(Image("{\"x\":", 0)), ErrorCode::MODEL_SAFETENSORS_HEADER_INVALID);
  EXPECT_EQ(CodeOf(Image(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"x":{}})", 8)),
            ErrorCode::MODEL_SAFETENSORS_HEADER_INVALID);  // duplicate key (strict reader)
  EXPECT_EQ(CodeOf(Image(R"({"x":{"dtype":"I9","shape":[2],"data_offsets":[0,8]}})", 8)),
            ErrorCode::MODEL_SAFETENSORS_DTYPE_UNKNOWN);
  EXPECT_EQ(CodeOf(Image(R"({"x":{"dtype":"F4","shape":[16],"data_offsets":[0,8]}})", 8)),
            ErrorCode::MODEL_SAFETENSORS_DTYPE_UNKNOWN);  // sub-byte dtypes are not read
  // Every whole-byte safetensors dtype is read with its element size (probe 64: I64 refused the
  // file); a span that does not match it is still refused.
  for (const char* h : {R"({"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
                        R"({"x":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})",
                        R"({"x":{"dtype":"BOOL","shape":[2,4],"data_offsets":[0,8]}})",
                        R"({"x":{"dtype":"F8_E8M0","shape":[8],"data_offsets":[0,8]}})",
                        R"({"x":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})"}) {
    auto b = Bytes(Image(h, 8));
    auto f = SafetensorsFile::FromBytes(b.data(), b.size(), "t.safetensors");
    ASSERT_TRUE(f.ok()) << h << ": " << f.status().ToString();
    EXPECT_FALSE(IsWeightDType(f->Find("x")->dtype)) << h;
    EXPECT_TRUE(ToFloat32(*f->Find("x")).empty());
  }
  EXPECT_EQ(CodeOf(Image(R"({"x":{"dtype":"I64","shape":[2],"data_offsets":[0,8]}})", 8)),
            ErrorCode::MODEL_SAFETENSORS_OFFSETS_INVALID);
  EXPECT_EQ(CodeOf(Image(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)),
            ErrorCode::MODEL_SAFETENSORS_OFFSETS_INVALID);  // span != numel * size
  EXPECT_EQ(CodeOf(Image(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8)),
            ErrorCode::MODEL_SAFETENSORS_HEADER_INVALID);
  EXPECT_EQ(
      CodeOf(Image(
          R"({"x":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}})", 8)),
      ErrorCode::MODEL_SAFETENSORS_OFFSETS_INVALID);  // shape product overflow
  EXPECT_EQ(CodeOf(Image(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)),
            ErrorCode::MODEL_SAFETENSORS_OFFSETS_INVALID);  // end < begin
  EXPECT_EQ(CodeOf(Image(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                         12)),
            ErrorCode::MODEL_SAFETENSORS_OFFSETS_INVALID);  // overlap
  EXPECT_EQ(CodeOf(Image(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12)),
            ErrorCode::MODEL_SAFETENSORS_OFFSETS_INVALID);  // gap at the start
  EXPECT_EQ(CodeOf(Image(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1}})", 8)),
            ErrorCode::MODEL_SAFETENSORS_HEADER_INVALID);
  EXPECT_EQ(CodeOf(Image(R"({"x":{"dtype":"F32","shape":[2]}})", 8)),
            ErrorCode::MODEL_SAFETENSORS_HEADER_INVALID);
  EXPECT_EQ(CodeOf(Image(R"({"__metadata__":{"a":1}})", 0)),
            ErrorCode::MODEL_SAFETENSORS_HEADER_INVALID);
}

// Regression: a header's tensor names, member names and dtypes were quoted whole, so a 10 KB
// name made a 10 KB message (2026-12-07); each is clipped at 80 bytes and counted.
TEST(Safetensors, RegressionALongNameIsClippedInTheRefusal) {
  const std::string name(10000, 'n');
  for (const std::string& header :
       {R"({")" + name + R"(":{"dtype":"I9","shape":[2],"data_offsets":[0,8]}})",
        R"({"x":{"dtype":")" + name + R"(","shape":[2],"data_offsets":[0,8]}})",
        R"({"x":{")" + name + R"(":1,"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
        R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},")" + name +
            R"(":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
        R"({"__metadata__":{")" + name + R"(":1}})"}) {
    auto b = Bytes(Image(header, 16));
    auto f = SafetensorsFile::FromBytes(b.data(), b.size(), "t.safetensors");
    ASSERT_FALSE(f.ok());
    EXPECT_LT(f.status().message().size(), 600u) << f.status().message().substr(0, 200);
    EXPECT_NE(f.status().message().find("(10000 bytes)"), std::string::npos)
        << f.status().message().substr(0, 200);
  }
}

TEST(Safetensors, OpenNamesMissingFile) {
  auto f = SafetensorsFile::Open("/nonexistent/model.safetensors");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kIoError);
  EXPECT_NE(f.status().message().find("/nonexistent/model.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace kvc::model

namespace kvc::model {
namespace {

// Property: any byte mutation or truncation of a valid file is either accepted with every
// tensor inside the image, or rejected with a Status; never a crash. Prints its seed.
TEST(Safetensors, MutatedImagesNeverCrash) {
  const uint64_t seed = test::AnnounceSeed(20261129);
  TensorToWrite a{"model.norm.weight", DType::kF32, {4}, std::vector<std::byte>(16, std::byte{1})};
  TensorToWrite b{"lm_head.weight", DType::kBF16, {2, 3}, std::vector<std::byte>(12, std::byte{2})};
  const std::string base = SerializeSafetensors({a, b});
  uint64_t s = seed;
  auto next = [&s] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return s >> 33;
  };
  int accepted = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string img = base;
    const int edits = 1 + static_cast<int>(next() % 3);
    for (int e = 0; e < edits; ++e) {
      const uint64_t op = next() % 4, pos = next() % img.size();
      if (op == 0)
        img[pos] = static_cast<char>(next() & 0xff);
      else if (op == 1)
        img.resize(pos);
      else if (op == 2)
        img.insert(pos, 1, static_cast<char>("{}[],:\"0 9"[next() % 10]));
      else
        img[pos] = static_cast<char>(img[pos] ^ (1 << (next() % 8)));
      if (img.empty()) break;
    }
    auto bytes = Bytes(img);
    auto f = SafetensorsFile::FromBytes(bytes.data(), bytes.size(), "fuzz");
    if (!f.ok()) {
      EXPECT_NE(f.status().error(), ErrorCode::kNone) << f.status().ToString();
      continue;
    }
    ++accepted;
    for (const auto& [name, t] : f->tensors()) {
      ASSERT_GE(t.data, bytes.data());
      ASSERT_LE(t.data + t.nbytes, bytes.data() + bytes.size());
      ASSERT_EQ(ToFloat32(t).size(), t.numel());
    }
  }
  std::printf("accepted %d of 4000 mutated images\n", accepted);
}

}  // namespace
}  // namespace kvc::model
