// StableStringMap: a string-keyed hash map laid out for the cache, with stable element addresses.
#ifndef KVCONFORM_REFERENCE_BASE_STABLE_STRING_MAP_H_
#define KVCONFORM_REFERENCE_BASE_STABLE_STRING_MAP_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "reference/base/id_string.h"
#include "reference/base/string_hash.h"

namespace kvc::base {

// A map from an id (IdString) to V with the part of std::unordered_map's interface the id maps use
// (KvObject's handles and transactions, the trace checker's per-request state), laid out so
// that a lookup costs one read of a flat index plus one read of the element.
//
// Layout:
//  * The index is a power-of-two array of 64-bit slots, at most half full: upper 32 bits the
//    key's hash tag (the upper half of Hash's 64-bit value), lower 32 bits the element's node
//    number + 1 (0 = empty slot). A key's home slot is tag & (capacity - 1); collisions probe
//    linearly; erasure shifts the following entries of the run back (no tombstones). Growth
//    doubles the index and re-places slots from their tags alone: it never reads an element.
//  * Elements (std::pair<const IdString, V>, "nodes": a key of up to IdString::kInline bytes
//    is held in its node) live in chunks of 8, 16, 32, ...
//    nodes (chunk c holds node numbers [8(2^c - 1), 8(2^(c+1) - 1))); an erased node's number
//    goes on a free stack (a vector beside the chunks, not threaded through the dead node: an
//    insertion then writes the reused node without first reading it, a cache miss when the
//    node was erased long before) and is reused first.
//
// Contract:
//  * Address stability: a reference or pointer to an element stays valid until that element is
//    erased (or the map is cleared, assigned to or destroyed); inserting or erasing other
//    elements, growth, swap and move construction never move an element (after a swap or a
//    move it belongs to the other map). An iterator stays valid under the same conditions
//    except swap and move, since it also refers to its map; it holds its element's address
//    (iterators compare by it; end() holds none).
//  * Iteration visits elements in node order: deterministic for a given sequence of operations
//    (it does not depend on the hash), but not insertion order once nodes have been reused.
//    Its cost is proportional to the highest node number in use since the last clear().
//  * emplace(key, args...) behaves as try_emplace: the value is constructed from args only
//    when the key is absent. Keys compare by bytes (SameBytes).
//  * Copies compact the node numbers (a copy iterates in the source's order); operator==
//    compares contents regardless of order (V needs operator==).
//  * At most 2^32 - 1 elements (node numbers are 32-bit); inserting more throws
//    std::length_error, like a std container past max_size().
// Thread safety: none (like std::unordered_map: concurrent const use is safe).
template <typename V, typename Hash = StringHash>
class StableStringMap {
 public:
  using key_type = IdString;
  using mapped_type = V;
  using value_type = std::pair<const IdString, V>;
  using size_type = size_t;

  template <bool Const>
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = StableStringMap::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<Const, const value_type*, value_type*>;
    using reference = std::conditional_t<Const, const value_type&, value_type&>;

    Iter() = default;
    // iterator -> const_iterator.
    operator Iter<true>() const  // NOLINT(google-explicit-constructor)
        requires(!Const) {
      return Iter<true>(map_, node_, element_);
    }
    reference operator*() const { return *element_; }
    pointer operator->() const { return element_; }
    Iter& operator++() {
      *this = Iter(map_, map_->NextLive(node_ + 1));
      return *this;
    }
    Iter operator++(int) {
      Iter old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const Iter& a, const Iter& b) { return a.element_ == b.element_; }

   private:
    friend class StableStringMap;
    template <bool>
    friend class Iter;
    using MapPtr = std::conditional_t<Const, const StableStringMap*, StableStringMap*>;
    // Node `node` (live) or map->used_ (end()).
    Iter(MapPtr map, uint32_t node)
        : Iter(map, node, node < map->used_ ? map->Node(node) : nullptr) {}
    Iter(MapPtr map, uint32_t node, pointer element) : map_(map), element_(element), node_(node) {}
    MapPtr map_ = nullptr;
    pointer element_ = nullptr;  // nullptr for end()
    uint32_t node_ = 0;          // node number; map_->used_ for end()
  };
  using iterator = Iter<false>;
  using const_iterator = Iter<true>;

  StableStringMap() = default;
  StableStringMap(const StableStringMap& o) : hash_(o.hash_) {
    reserve(o.size_);
    for (const value_type& kv : o) try_emplace(kv.first, kv.second);
  }
  StableStringMap(StableStringMap&& o) noexcept { swap(o); }
  StableStringMap& operator=(const StableStringMap& o) {
    if (this != &o) {
      StableStringMap copy(o);
      swap(copy);
    }
    return *this;
  }
  StableStringMap& operator=(StableStringMap&& o) noexcept {
    if (this != &o) {
      StableStringMap old(std::move(o));
      swap(old);
    }
    return *this;
  }
  ~StableStringMap() { DestroyAll(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  iterator begin() { return iterator(this, NextLive(0)); }
  iterator end() { return iterator(this, used_, nullptr); }
  const_iterator begin() const { return const_iterator(this, NextLive(0)); }
  const_iterator end() const { return const_iterator(this, used_, nullptr); }

  iterator find(std::string_view key) {
    const Found f = FindSlot(key, HashOf(key));
    return f.element ? iterator(this, NodeOfSlot(slots_[f.slot]), f.element) : end();
  }
  const_iterator find(std::string_view key) const {
    const Found f = FindSlot(key, HashOf(key));
    return f.element ? const_iterator(this, NodeOfSlot(slots_[f.slot]), f.element) : end();
  }
  size_t count(std::string_view key) const { return contains(key) ? 1 : 0; }
  // A hint, no effect on the contents: starts loading the element `key` probably names (the
  // first whose hash tag matches) into the cache, so that a following batch of lookups of cold
  // elements overlaps their misses instead of taking them one after another.
  void Prefetch(std::string_view key) const {
    if (size_ == 0) return;
    const uint32_t tag = TagOf(HashOf(key));
    for (size_t i = tag & mask_;; i = (i + 1) & mask_) {
      const uint64_t s = slots_[i];
      if (s == 0) return;
      if (static_cast<uint32_t>(s >> 32) != tag) continue;
      const char* p = reinterpret_cast<const char*>(Node(NodeOfSlot(s)));
      for (size_t off = 0; off < sizeof(value_type); off += 64) PrefetchLine(p + off);
      return;
    }
  }
  // A hint too: starts loading the index slot `key` hashes to (the first step of Prefetch, with
  // no load of its own), for a batch whose Prefetch calls follow.
  void PrefetchSlot(std::string_view key) const {
    if (size_ == 0) return;
    PrefetchLine(&slots_[TagOf(HashOf(key)) & mask_]);
  }
  bool contains(std::string_view key) const {
    return FindSlot(key, HashOf(key)).element != nullptr;
  }

  // Inserts (key, V(args...)) unless `key` is present; returns the element and whether it was
  // inserted. `key` is anything IdString and std::string_view are constructible from; it
  // may refer to an element of this map.
  template <typename K, typename... Args>
  std::pair<iterator, bool> try_emplace(K&& key, Args&&... args) {
    const std::string_view k(key);
    const uint64_t h = HashOf(k);
    if (const Found f = FindSlot(k, h); f.element)
      return {iterator(this, NodeOfSlot(slots_[f.slot]), f.element), false};
    // Reserve everything first (growth, a chunk, a bitmap word, the free stack's room), so that a
    // throwing allocation or constructor leaves the map as it was.
    if ((size_ + 1) * 2 > slots_.size()) Rehash(slots_.empty() ? kMinSlots : slots_.size() * 2);
    const bool reuse = !free_.empty();
    const uint32_t n = reuse ? free_.back() : used_;
    if (!reuse) {
      if (used_ == kMaxNodes) throw std::length_error("StableStringMap: too many elements");
      if (ChunkOf(n) == chunks_.size())
        chunks_.push_back(std::make_unique_for_overwrite<Cell[]>(ChunkSize(chunks_.size())));
      if (n / 64 == live_.size()) live_.push_back(0);
      // Room for every node number on the free stack, so that erasure never allocates.
      if (free_.capacity() < size_t{used_} + 1)
        free_.reserve(std::max<size_t>(16, 2 * size_t{used_}));
    }
    ::new (static_cast<void*>(CellOf(n).bytes))
        value_type(std::piecewise_construct, std::forward_as_tuple(std::forward<K>(key)),
                   std::forward_as_tuple(std::forward<Args>(args)...));
    // Commit (nothing below allocates or throws).
    if (reuse)
      free_.pop_back();
    else
      ++used_;
    live_[n / 64] |= uint64_t{1} << (n % 64);
    const size_t mask = mask_;
    size_t i = TagOf(h) & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = uint64_t{TagOf(h)} << 32 | (uint64_t{n} + 1);
    ++size_;
    return {iterator(this, n, Node(n)), true};
  }
  template <typename K, typename... Args>
  std::pair<iterator, bool> emplace(K&& key, Args&&... args) {
    return try_emplace(std::forward<K>(key), std::forward<Args>(args)...);
  }
  template <typename K, typename M>
  std::pair<iterator, bool> insert_or_assign(K&& key, M&& value) {
    auto r = try_emplace(std::forward<K>(key), std::forward<M>(value));
    if (!r.second) r.first->second = std::forward<M>(value);  // not consumed by try_emplace
    return r;
  }
  template <typename K>
  V& operator[](K&& key) {
    return try_emplace(std::forward<K>(key)).first->second;
  }

  // Erases the element at `pos` (a valid, dereferenceable iterator); returns the iterator to
  // the next element in iteration order.
  iterator erase(iterator pos) {
    const uint32_t n = pos.node_;
    const uint64_t h = HashOf(Node(n)->first);
    const uint64_t slot = uint64_t{TagOf(h)} << 32 | (uint64_t{n} + 1);
    const size_t mask = mask_;
    size_t i = TagOf(h) & mask;
    while (slots_[i] != slot) i = (i + 1) & mask;  // present: the element is live
    EraseSlot(i);
    return iterator(this, NextLive(n + 1));
  }
  size_t erase(std::string_view key) {
    const Found f = FindSlot(key, HashOf(key));
    if (!f.element) return 0;
    EraseSlot(f.slot);
    return 1;
  }
  // Destroys every element and releases all memory (index and chunks).
  void clear() {
    StableStringMap empty;
    swap(empty);
  }
  // Grows the index so that `n` elements fit without another growth.
  void reserve(size_t n) {
    const size_t want = std::bit_ceil(std::max<size_t>(kMinSlots, n * 2));
    if (want > slots_.size()) Rehash(want);
  }
  void swap(StableStringMap& o) noexcept {
    using std::swap;
    swap(hash_, o.hash_);
    slots_.swap(o.slots_);
    chunks_.swap(o.chunks_);
    live_.swap(o.live_);
    free_.swap(o.free_);
    swap(used_, o.used_);
    swap(mask_, o.mask_);
    swap(size_, o.size_);
  }
  friend void swap(StableStringMap& a, StableStringMap& b) noexcept { a.swap(b); }

  // Same keys with equal values, in any order.
  friend bool operator==(const StableStringMap& a, const StableStringMap& b) {
    if (a.size_ != b.size_) return false;
    for (const value_type& kv : a) {
      auto it = b.find(kv.first);
      if (it == b.end() || !(it->second == kv.second)) return false;
    }
    return true;
  }

 private:
  static_assert(sizeof(size_t) == 8, "the index uses 64-bit hashes");
  static constexpr size_t kMinSlots = 8;
  static constexpr unsigned kFirstChunkLog = 3;  // the first chunk holds 8 nodes
  static constexpr uint64_t kFirstChunkSize = uint64_t{1} << kFirstChunkLog;
  static constexpr uint32_t kMaxNodes = UINT32_MAX;  // node number + 1 must fit 32 bits
  // Raw storage of one node: a value_type while live, else unused bytes (its number is on
  // free_).
  struct Cell {
    alignas(value_type) unsigned char bytes[sizeof(value_type)];
  };

  uint64_t HashOf(std::string_view key) const { return static_cast<uint64_t>(hash_(key)); }
  // Starts loading the cache line holding `p` (Prefetch and PrefetchSlot's one instruction).
  static void PrefetchLine(const void* p) {
#if defined(__x86_64__)
    // (__builtin_prefetch has no side effect, so GCC drops a lookup loop that only feeds it.)
    asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
    __builtin_prefetch(p);
#endif
  }
  static uint32_t TagOf(uint64_t h) { return static_cast<uint32_t>(h >> 32); }
  static uint32_t NodeOfSlot(uint64_t slot) { return static_cast<uint32_t>(slot) - 1; }
  // Node n lives in chunk c = floor(log2(n + 8)) - 3, at offset n + 8 - 2^(c+3): chunk c holds
  // the 2^(c+3) node numbers [2^(c+3) - 8, 2^(c+4) - 8).
  static unsigned TopBit(uint32_t n) {
    return static_cast<unsigned>(std::bit_width(uint64_t{n} + kFirstChunkSize)) - 1;
  }
  static size_t ChunkOf(uint32_t n) { return TopBit(n) - kFirstChunkLog; }
  static uint64_t ChunkSize(size_t c) { return kFirstChunkSize << c; }
  Cell& CellOf(uint32_t n) const {
    const unsigned top = TopBit(n);
    return chunks_[top - kFirstChunkLog][uint64_t{n} + kFirstChunkSize - (uint64_t{1} << top)];
  }
  // The live element of node `n`.
  value_type* Node(uint32_t n) const {
    return std::launder(reinterpret_cast<value_type*>(CellOf(n).bytes));
  }
  // The first live node number >= `from`, or used_ when none.
  uint32_t NextLive(uint32_t from) const {
    size_t w = from / 64;
    if (w >= live_.size()) return used_;
    uint64_t bits = live_[w] & (~uint64_t{0} << (from % 64));
    while (bits == 0) {
      if (++w == live_.size()) return used_;
      bits = live_[w];
    }
    return static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits)));
  }

  // The slot holding `key` (hash `h`) and its element; element == nullptr when absent.
  // Terminates: the index is at most half full.
  struct Found {
    size_t slot = 0;
    value_type* element = nullptr;
  };
  Found FindSlot(std::string_view key, uint64_t h) const {
    if (size_ == 0) return {};
    const size_t mask = mask_;
    const uint32_t tag = TagOf(h);
    for (size_t i = tag & mask;; i = (i + 1) & mask) {
      const uint64_t s = slots_[i];
      if (s == 0) return {};
      if (static_cast<uint32_t>(s >> 32) != tag) continue;
      value_type* e = Node(NodeOfSlot(s));
      if (SameBytes(e->first, key)) return {i, e};
    }
  }

  // A new index of `capacity` (a power of two > 2 * size_) slots; reads only the old index.
  void Rehash(size_t capacity) {
    std::vector<uint64_t> next(capacity, 0);
    const size_t mask = capacity - 1;
    for (const uint64_t s : slots_) {
      if (s == 0) continue;
      size_t i = (s >> 32) & mask;
      while (next[i] != 0) i = (i + 1) & mask;
      next[i] = s;
    }
    slots_.swap(next);
    mask_ = mask;
  }

  // Removes the entry of slot `i` and destroys its element (backward-shift deletion).
  void EraseSlot(size_t i) {
    const uint32_t n = NodeOfSlot(slots_[i]);
    const size_t mask = mask_;
    size_t hole = i;
    for (size_t j = (i + 1) & mask; slots_[j] != 0; j = (j + 1) & mask) {
      const size_t home = (slots_[j] >> 32) & mask;
      // The entry at j may fill the hole when the hole lies on its probe path [home, j]: its
      // distance from home is at least the hole's distance back from j.
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = 0;
    Node(n)->~value_type();
    free_.push_back(n);  // within capacity (reserved by try_emplace): no allocation
    live_[n / 64] &= ~(uint64_t{1} << (n % 64));
    --size_;
  }

  void DestroyAll() {
    for (uint32_t n = NextLive(0); n < used_; n = NextLive(n + 1)) Node(n)->~value_type();
  }

  [[no_unique_address]] Hash hash_;
  std::vector<uint64_t> slots_;                  // the index; empty or a power of two
  size_t mask_ = 0;                              // slots_.size() - 1 once not empty
  std::vector<std::unique_ptr<Cell[]>> chunks_;  // chunk c holds ChunkSize(c) nodes
  std::vector<uint64_t> live_;                   // bit n: node n holds an element
  std::vector<uint32_t> free_;                   // erased node numbers, the last reused first
  uint32_t used_ = 0;                            // node numbers [0, used_) were handed out
  size_t size_ = 0;
};

}  // namespace kvc::base

#endif  // KVCONFORM_REFERENCE_BASE_STABLE_STRING_MAP_H_
