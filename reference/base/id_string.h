// IdString: an identifier value that holds ids of up to 47 bytes inside the object itself.
#ifndef KVCONFORM_REFERENCE_BASE_ID_STRING_H_
#define KVCONFORM_REFERENCE_BASE_ID_STRING_H_

#include <compare>
#include <cstddef>
#include <cstring>
#include <ostream>
#include <string>
#include <string_view>

namespace kvc::base {

// The string type of the ids the lifecycle records and the trace checker keep (request,
// handle, lineage, transaction and operation ids, and the id maps' keys).
//
// Why not std::string: it holds at most 15 bytes inline, and runtimes' ids are longer (vLLM's
// request ids "cmpl-<32 hex>-0" are 38 bytes, an operation id "<request id>.t<k>" more). Every
// record keeping a copy of such an id then allocates, and every comparison with it reads
// another cache line. An IdString holds up to kInline (47) bytes in its own 48 bytes, so an id
// of that length is copied without allocating and read where its record is; a longer one goes
// on the heap, as std::string's does.
//
// Contract: a value (copies are deep and independent), compared by bytes (==, <=> with another
// IdString or any std::string_view). It converts implicitly to std::string_view; the view is
// valid until the IdString is assigned to, moved from or destroyed. A moved-from IdString is
// empty (a self-move leaves the value). Thread safety: like std::string (concurrent const use is
// safe).
class IdString {
 public:
  // Ids of up to this many bytes are held inline.
  static constexpr size_t kInline = 47;

  IdString() noexcept { SetInlineSize(0); }
  // Implicit, as std::string is from a C string: a record's id field can be set from a view.
  IdString(std::string_view s) { Init(s); }               // NOLINT(runtime/explicit)
  IdString(const std::string& s) { Init(s); }             // NOLINT(runtime/explicit)
  IdString(const char* s) { Init(std::string_view(s)); }  // NOLINT(runtime/explicit)
  IdString(const IdString& o) { Init(o.view()); }
  IdString(IdString&& o) noexcept {
    std::memcpy(bytes_, o.bytes_, sizeof(bytes_));  // takes o's heap block, if any
    o.SetInlineSize(0);
  }
  IdString& operator=(const IdString& o) {
    if (this != &o) *this = IdString(o.view());
    return *this;
  }
  IdString& operator=(IdString&& o) noexcept {
    if (this != &o) {
      Free();
      std::memcpy(bytes_, o.bytes_, sizeof(bytes_));
      o.SetInlineSize(0);
    }
    return *this;
  }
  // `s` may view this IdString's own bytes: the new value is built before the old is freed.
  IdString& operator=(std::string_view s) { return *this = IdString(s); }
  IdString& operator=(const std::string& s) { return *this = IdString(std::string_view(s)); }
  IdString& operator=(const char* s) { return *this = IdString(std::string_view(s)); }
  ~IdString() { Free(); }

  const char* data() const noexcept { return on_heap() ? HeapPtr() : bytes_; }
  size_t size() const noexcept { return on_heap() ? HeapSize() : InlineSize(); }
  bool empty() const noexcept { return size() == 0; }
  std::string_view view() const noexcept { return {data(), size()}; }
  operator std::string_view() const noexcept { return view(); }  // NOLINT(runtime/explicit)
  std::string str() const { return std::string(view()); }
  void clear() noexcept {
    Free();
    SetInlineSize(0);
  }
  // Whether the bytes are on the heap (longer than kInline); for tests and memory accounting.
  bool on_heap() const noexcept { return static_cast<unsigned char>(bytes_[kInline]) == kOnHeap; }

  friend bool operator==(const IdString& a, const IdString& b) noexcept {
    return a.view() == b.view();
  }
  friend bool operator==(const IdString& a, std::string_view b) noexcept { return a.view() == b; }
  friend bool operator==(const IdString& a, const std::string& b) noexcept {
    return a.view() == std::string_view(b);
  }
  friend bool operator==(const IdString& a, const char* b) noexcept {
    return a.view() == std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const IdString& a, const IdString& b) noexcept {
    return a.view() <=> b.view();
  }
  friend std::strong_ordering operator<=>(const IdString& a, std::string_view b) noexcept {
    return a.view() <=> b;
  }
  friend std::ostream& operator<<(std::ostream& os, const IdString& s) { return os << s.view(); }

 private:
  // bytes_[kInline] is the tag: the inline size (0..kInline) or kOnHeap. Inline, the id is
  // bytes_[0, size). On the heap, bytes_[0, 8) hold the block's address and bytes_[8, 16) the
  // size (memcpy'd: no union member is read that was not written).
  static constexpr unsigned char kOnHeap = 0xff;
  static_assert(kInline < kOnHeap);

  void Init(std::string_view s) {
    if (s.size() <= kInline) {
      if (!s.empty()) std::memcpy(bytes_, s.data(), s.size());
      SetInlineSize(s.size());
      return;
    }
    char* p = new char[s.size()];
    std::memcpy(p, s.data(), s.size());
    const size_t n = s.size();
    std::memcpy(bytes_, &p, sizeof(p));
    std::memcpy(bytes_ + sizeof(p), &n, sizeof(n));
    bytes_[kInline] = static_cast<char>(kOnHeap);
  }
  void Free() noexcept {
    if (on_heap()) delete[] HeapPtr();
  }
  void SetInlineSize(size_t n) noexcept { bytes_[kInline] = static_cast<char>(n); }
  size_t InlineSize() const noexcept { return static_cast<unsigned char>(bytes_[kInline]); }
  char* HeapPtr() const noexcept {
    char* p;
    std::memcpy(&p, bytes_, sizeof(p));
    return p;
  }
  size_t HeapSize() const noexcept {
    size_t n;
    std::memcpy(&n, bytes_ + sizeof(char*), sizeof(n));
    return n;
  }

  alignas(8) char bytes_[kInline + 1];
};
static_assert(sizeof(IdString) == 48);

inline std::string operator+(const std::string& a, const IdString& b) {
  std::string r = a;
  r.append(b.view());
  return r;
}
inline std::string operator+(const IdString& a, std::string_view b) {
  std::string r = a.str();
  r.append(b);
  return r;
}
inline std::string operator+(const char* a, const IdString& b) {
  std::string r = a;
  r.append(b.view());
  return r;
}

}  // namespace kvc::base

#endif  // KVCONFORM_REFERENCE_BASE_ID_STRING_H_
