// A strict, memory-mapped reader of the safetensors checkpoint format.
//
// Layout: an 8-byte little-endian header size N (at most kMaxHeaderBytes), N bytes of a
// JSON object mapping tensor names to {"dtype", "shape", "data_offsets": [begin, end)} plus
// an optional "__metadata__" object of strings, then the data section. Open() validates
// everything before any tensor is read: the JSON through the strict reader, every dtype
// known, shape product * dtype size == end - begin (checked arithmetic), the entries tile
// the data section exactly (sorted by begin: first at 0, each begins where the previous one
// ends, so no overlap and no gap) and the file is exactly 8 + N + data bytes long. Every
// error is a Status with a MODEL_SAFETENSORS_* code naming the file, the tensor and field.
//
// Ownership: a SafetensorsFile owns its mapping (move-only; unmapped on destruction).
// TensorView::data points into the mapping and lives as long as the file object.
// Thread safety: immutable after Open(); concurrent readers are safe.
#ifndef KVCONFORM_REFERENCE_MODEL_SAFETENSORS_SAFETENSORS_H_
#define KVCONFORM_REFERENCE_MODEL_SAFETENSORS_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "reference/base/status.h"

namespace kvc::model {

// The safetensors dtypes of whole bytes. A file may hold any of them (an int64 buffer, an fp8
// scale); a weight the engine uses must be IsWeightDType (probe 64: an unknown dtype on a
// tensor the model never reads refused the whole file). The sub-byte dtypes (F4, F6_*) are not
// read: a file holding one is MODEL_SAFETENSORS_DTYPE_UNKNOWN.
enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,  // the weight dtypes
  kF64,
  kI64,
  kU64,
  kI32,
  kU32,
  kI16,
  kU16,
  kI8,
  kU8,
  kBool,
  kF8E4M3,
  kF8E5M2,
  kF8E8M0,
  kC64,
};
std::string_view DTypeName(DType d);  // the file's name: "F32", "I64", "F8_E4M3", ...
size_t DTypeSize(DType d);            // bytes per element
bool IsWeightDType(DType d);          // F32, F16 or BF16: what ToFloat32 converts

inline constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // 100 MiB, the upstream limit

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;  // row-major; [] is a scalar
  const std::byte* data = nullptr;
  uint64_t nbytes = 0;
  uint64_t numel() const;
};

class SafetensorsFile {
 public:
  // Maps and validates `path`. Errors: IoError (cannot open/map) or a MODEL_SAFETENSORS_*
  // contract violation naming the file and, where there is one, the tensor and field.
  static StatusOr<SafetensorsFile> Open(const std::string& path);
  // Validates an in-memory image (used by Open and by tests); `bytes` must outlive the
  // returned object's views. `source` names the bytes in messages.
  static StatusOr<SafetensorsFile> FromBytes(const std::byte* bytes, uint64_t size,
                                             const std::string& source);

  SafetensorsFile(SafetensorsFile&& o) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& o) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const TensorView* Find(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;  // owned mmap region, or null for FromBytes
  size_t map_size_ = 0;
  std::map<std::string, TensorView> tensors_;
};

// Converts a tensor of a weight dtype (IsWeightDType: F32, F16, BF16) to fp32 (F16/BF16
// exactly widened). Precondition: IsWeightDType(t.dtype); another dtype gives an empty vector.
std::vector<float> ToFloat32(const TensorView& t);

// IEEE binary16 / bfloat16 bit patterns to float (exact) and float to them (round to
// nearest even), used by the loader and the test-model generator.
float HalfToFloat(uint16_t h);
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToBFloat16(float f);
uint16_t FloatToHalf(float f);

// Serializes tensors into the safetensors format (header padded with spaces to 8 bytes),
// tensors in the given order. Used by the generator and tests.
struct TensorToWrite {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;
  std::vector<std::byte> bytes;  // little-endian payload, numel * DTypeSize bytes
};
std::string SerializeSafetensors(const std::vector<TensorToWrite>& tensors);

}  // namespace kvc::model

#endif  // KVCONFORM_REFERENCE_MODEL_SAFETENSORS_SAFETENSORS_H_
