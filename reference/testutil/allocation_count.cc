// test::AllocationCount and the counting global operator new it reads (see testutil.h).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "reference/testutil/testutil.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KVC_SANITIZER_OWNS_NEW 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KVC_SANITIZER_OWNS_NEW 1
#endif
#endif

namespace {
// Per thread: a test counts its own thread's allocations, not another thread's.
thread_local bool counting = false;
thread_local uint64_t news = 0;
thread_local uint64_t deletes = 0;
}  // namespace

namespace kvc::test {

AllocationCount::AllocationCount() {
  news = 0;
  deletes = 0;
  counting = true;
}
AllocationCount::~AllocationCount() { counting = false; }
uint64_t AllocationCount::count() const { return news; }
uint64_t AllocationCount::frees() const { return deletes; }

#ifdef KVC_SANITIZER_OWNS_NEW
bool AllocationCount::available() { return false; }
#else
bool AllocationCount::available() { return true; }
#endif

}  // namespace kvc::test

#ifndef KVC_SANITIZER_OWNS_NEW
namespace {
void* Allocate(std::size_t n) {
  if (counting) ++news;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* AllocateAligned(std::size_t n, std::align_val_t al) {
  if (counting) ++news;
  const std::size_t a = static_cast<std::size_t>(al);
  // aligned_alloc wants a size that is a multiple of the alignment.
  if (void* p = std::aligned_alloc(a, n == 0 ? a : (n + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* AllocateOrNull(std::size_t n) noexcept {
  try {
    return Allocate(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void Free(void* p) noexcept {
  if (counting && p != nullptr) ++deletes;
  std::free(p);
}
}  // namespace

// The replaceable global allocation functions ([new.delete]), every form, so that each is
// counted once whichever the library's defaults call.
void* operator new(std::size_t n) { return Allocate(n); }
void* operator new[](std::size_t n) { return Allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return AllocateOrNull(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return AllocateOrNull(n); }
void* operator new(std::size_t n, std::align_val_t a) { return AllocateAligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return AllocateAligned(n, a); }
void operator delete(void* p) noexcept { Free(p); }
void operator delete[](void* p) noexcept { Free(p); }
void operator delete(void* p, std::size_t) noexcept { Free(p); }
void operator delete[](void* p, std::size_t) noexcept { Free(p); }
void operator delete(void* p, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { Free(p); }
#endif  // KVC_SANITIZER_OWNS_NEW
