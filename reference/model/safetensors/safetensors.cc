// Strict safetensors validation, memory mapping and dtype conversion.
#include "reference/model/safetensors/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include "reference/base/checked_math.h"
#include "reference/base/strict_json.h"
#include "reference/base/text_forms.h"

namespace kvc::model {
namespace {

Status HeaderError(const std::string& src, const std::string& what) {
  return ViolationStatus(ErrorCode::MODEL_SAFETENSORS_HEADER_INVALID, src + ": " + what);
}
Status OffsetsError(const std::string& src, const std::string& what) {
  return ViolationStatus(ErrorCode::MODEL_SAFETENSORS_OFFSETS_INVALID, src + ": " + what);
}

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::kF32, "F32", 4},        {DType::kF16, "F16", 2},        {DType::kBF16, "BF16", 2},
    {DType::kF64, "F64", 8},        {DType::kI64, "I64", 8},        {DType::kU64, "U64", 8},
    {DType::kI32, "I32", 4},        {DType::kU32, "U32", 4},        {DType::kI16, "I16", 2},
    {DType::kU16, "U16", 2},        {DType::kI8, "I8", 1},          {DType::kU8, "U8", 1},
    {DType::kBool, "BOOL", 1},      {DType::kF8E4M3, "F8_E4M3", 1}, {DType::kF8E5M2, "F8_E5M2", 1},
    {DType::kF8E8M0, "F8_E8M0", 1}, {DType::kC64, "C64", 8},
};

bool ParseDType(std::string_view s, DType* out) {
  for (const DTypeInfo& d : kDTypes)
    if (d.name == s) {
      *out = d.dtype;
      return true;
    }
  return false;
}

// A non-negative JSON integer, or nullopt.
std::optional<uint64_t> AsU64(const Json& j) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer() && j.get<int64_t>() >= 0)
    return static_cast<uint64_t>(j.get<int64_t>());
  return std::nullopt;
}

}  // namespace

std::string_view DTypeName(DType d) {
  for (const DTypeInfo& i : kDTypes)
    if (i.dtype == d) return i.name;
  return "?";
}

size_t DTypeSize(DType d) {
  for (const DTypeInfo& i : kDTypes)
    if (i.dtype == d) return i.size;
  return 1;
}

bool IsWeightDType(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }

uint64_t TensorView::numel() const {
  uint64_t n = 1;
  for (uint64_t s : shape) n *= s;  // validated not to overflow at Open()
  return n;
}

StatusOr<SafetensorsFile> SafetensorsFile::FromBytes(const std::byte* bytes, uint64_t size,
                                                     const std::string& src) {
  if (size < 8) {
    return ViolationStatus(ErrorCode::MODEL_SAFETENSORS_SIZE_MISMATCH,
                           src + ": file is " + std::to_string(size) +
                               " bytes, shorter than the 8-byte header size field");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  if (n == 0) return HeaderError(src, "header size is 0; expected a JSON object");
  if (n > kMaxHeaderBytes) {
    return HeaderError(src, "header size " + std::to_string(n) + " exceeds the limit of " +
                                std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (n > size - 8) {
    return ViolationStatus(ErrorCode::MODEL_SAFETENSORS_SIZE_MISMATCH,
                           src + ": header size " + std::to_string(n) +
                               " runs past the end of the " + std::to_string(size) +
                               "-byte file (truncated)");
  }
  std::string_view header(reinterpret_cast<const char*>(bytes + 8), n);
  auto parsed = ParseJsonStrict(header, src + " (header)");
  if (!parsed.ok()) return HeaderError(src, parsed.status().message());
  const Json& root = parsed->value;
  if (!root.is_object()) return HeaderError(src, "header is not a JSON object");

  const uint64_t data_size = size - 8 - n;
  SafetensorsFile f;
  f.path_ = src;
  struct Span {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return HeaderError(src, "__metadata__ is not an object");
      for (const auto& [k, v] : entry.items())
        if (!v.is_string())
          return HeaderError(src, "__metadata__." + base::Clipped(k) + " is not a string");
      continue;
    }
    const std::string where = "tensor " + base::SingleQuoteClipped(name);
    if (name.empty()) return HeaderError(src, "a tensor has an empty name");
    if (!entry.is_object()) return HeaderError(src, where + " is not an object");
    for (const auto& [k, v] : entry.items())
      if (k != "dtype" && k != "shape" && k != "data_offsets")
        return HeaderError(src, where + " has unknown field " + base::SingleQuoteClipped(k));
    if (!entry.contains("dtype") || !entry["dtype"].is_string())
      return HeaderError(src, where + " field 'dtype': expected a string");
    if (!entry.contains("shape") || !entry["shape"].is_array())
      return HeaderError(src, where + " field 'shape': expected an array of integers");
    if (!entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2)
      return HeaderError(src, where + " field 'data_offsets': expected [begin, end]");
    TensorView t;
    t.name = name;
    const std::string dt = entry["dtype"].get<std::string>();
    if (!ParseDType(dt, &t.dtype)) {
      return ViolationStatus(
          ErrorCode::MODEL_SAFETENSORS_DTYPE_UNKNOWN,
          src + ": " + where + " field 'dtype': " + base::SingleQuoteClipped(dt) +
              " is not a safetensors dtype this reader knows (F32, F16, BF16, F64, I64, U64, "
              "I32, U32, I16, U16, I8, U8, BOOL, F8_E4M3, F8_E5M2, F8_E8M0, C64)");
    }
    uint64_t numel = 1;
    for (size_t i = 0; i < entry["shape"].size(); ++i) {
      auto d = AsU64(entry["shape"][i]);
      if (!d)
        return HeaderError(src, where + " field 'shape[" + std::to_string(i) +
                                    "]': expected a non-negative integer");
      auto p = CheckedMul(numel, *d);
      if (!p) return OffsetsError(src, where + " field 'shape': element count overflows 64 bits");
      numel = *p;
      t.shape.push_back(*d);
    }
    auto b = AsU64(entry["data_offsets"][0]);
    auto e = AsU64(entry["data_offsets"][1]);
    if (!b || !e)
      return HeaderError(src, where + " field 'data_offsets': expected non-negative integers");
    if (*e < *b) return OffsetsError(src, where + " field 'data_offsets': end < begin");
    if (*e > data_size) {
      return ViolationStatus(ErrorCode::MODEL_SAFETENSORS_SIZE_MISMATCH,
                             src + ": " + where + " field 'data_offsets': end " +
                                 std::to_string(*e) + " is past the data section of " +
                                 std::to_string(data_size) + " bytes (file truncated?)");
    }
    auto nbytes = CheckedMul(numel, DTypeSize(t.dtype));
    if (!nbytes || *nbytes != *e - *b) {
      return OffsetsError(src, where + " field 'data_offsets': span " + std::to_string(*e - *b) +
                                   " bytes differs from shape product * " + dt + " size" +
                                   (nbytes ? " = " + std::to_string(*nbytes) : " (overflow)"));
    }
    t.nbytes = *nbytes;
    t.data = bytes + 8 + n + *b;
    spans.push_back({*b, *e, name});
    f.tensors_.emplace(name, std::move(t));
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  for (const auto& s : spans) {
    if (s.begin < at)
      return OffsetsError(src, "tensor " + base::SingleQuoteClipped(s.name) +
                                   " field 'data_offsets': overlaps the previous tensor");
    if (s.begin > at)
      return OffsetsError(src, "tensor " + base::SingleQuoteClipped(s.name) +
                                   " field 'data_offsets': leaves a gap of " +
                                   std::to_string(s.begin - at) + " bytes before it");
    at = s.end;
  }
  if (at != data_size) {
    return ViolationStatus(ErrorCode::MODEL_SAFETENSORS_SIZE_MISMATCH,
                           src + ": data section is " + std::to_string(data_size) +
                               " bytes but the tensors cover " + std::to_string(at) +
                               " (file truncated or has trailing bytes)");
  }
  return f;
}

StatusOr<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  // Judged before open(): opening a FIFO blocks until a writer comes (probe 35: a FIFO at
  // model.safetensors hung the command before the regular-file check below).
  struct stat pre {};
  if (::stat(path.c_str(), &pre) == 0 && !S_ISREG(pre.st_mode))
    return IoError(path + ": not a regular file");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return IoError(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError(path + ": not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  void* map = nullptr;
  if (size > 0) {
    map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      // Out of address space or memory (a limit such as ulimit -v below the file's size) is no
      // verdict on the file (probe 64: it read as an unreadable checkpoint, exit 2).
      if (err == ENOMEM)
        return ResourceExhausted(path + ": cannot map its " + std::to_string(size) +
                                 " bytes: " + std::strerror(err) +
                                 " (a limit such as ulimit -v, or the machine's memory; no "
                                 "verdict on the checkpoint)");
      return IoError(path + ": cannot mmap: " + std::strerror(err));
    }
  }
  ::close(fd);
  static const std::byte kEmpty{};
  auto f = FromBytes(map ? static_cast<const std::byte*>(map) : &kEmpty, size, path);
  if (!f.ok()) {
    if (map) ::munmap(map, size);
    return f.status();
  }
  f->map_ = map;
  f->map_size_ = size;
  return f;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept
    : path_(std::move(o.path_)),
      map_(o.map_),
      map_size_(o.map_size_),
      tensors_(std::move(o.tensors_)) {
  o.map_ = nullptr;
  o.map_size_ = 0;
}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, map_size_);
    path_ = std::move(o.path_);
    map_ = o.map_;
    map_size_ = o.map_size_;
    tensors_ = std::move(o.tensors_);
    o.map_ = nullptr;
    o.map_size_ = 0;
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, map_size_);
}

const TensorView* SafetensorsFile::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

float BFloat16ToFloat(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t FloatToBFloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return 0x7fc0;
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

uint16_t FloatToHalf(float f) {
  // Round-to-nearest-even through double arithmetic; adequate for generator weights.
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  float a = std::fabs(f);
  if (std::isnan(f)) return 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;
  if (a < std::ldexp(1.0f, -14)) {  // subnormal: units of 2^-24
    long m = std::lrint(std::ldexp(static_cast<double>(a), 24));
    return static_cast<uint16_t>(sign | m);
  }
  int e;
  double fr = std::frexp(static_cast<double>(a), &e);  // a = fr * 2^e, fr in [0.5, 1)
  long m = std::lrint(std::ldexp(fr, 11));             // 11 significant bits
  if (m == 2048) {
    m = 1024;
    ++e;
  }
  const int exp = e - 1 + 15;
  if (exp >= 31) return sign | 0x7c00;
  return static_cast<uint16_t>(sign | (exp << 10) | (m & 0x3ff));
}

std::vector<float> ToFloat32(const TensorView& t) {
  if (!IsWeightDType(t.dtype)) return {};
  const uint64_t n = t.numel();
  std::vector<float> out(n);
  if (n == 0) return out;
  if (t.dtype == DType::kF32) {
    std::memcpy(out.data(), t.data, n * 4);
    return out;
  }
  for (uint64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, t.data + 2 * i, 2);
    out[i] = t.dtype == DType::kF16 ? HalfToFloat(h) : BFloat16ToFloat(h);
  }
  return out;
}

std::string SerializeSafetensors(const std::vector<TensorToWrite>& tensors) {
  Json header = Json::object();
  uint64_t at = 0;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", std::string(DTypeName(t.dtype))},
                      {"shape", Json(t.shape)},
                      {"data_offsets", Json::array({at, at + t.bytes.size()})}};
    at += t.bytes.size();
  }
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');
  std::string out(8, '\0');
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += h;
  for (const auto& t : tensors)
    out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return out;
}

}  // namespace kvc::model
