// Contiguous and paged (copy-on-write) K/V row storage.
#include "reference/model/kv_storage/kv_storage.h"

#include <algorithm>
#include <cstring>

namespace kvc::model {
namespace {

class ContiguousKvStorage final : public KvStorage {
 public:
  explicit ContiguousKvStorage(KvShape s) : shape_(s), k_(s.layers), v_(s.layers) {}
  std::string layout() const override { return "contiguous"; }
  KvShape shape() const override { return shape_; }
  uint64_t committed_length() const override { return committed_; }
  uint64_t staged_count() const override { return staged_; }

  Status Stage(uint64_t count) override {
    if (released_) return FailedPrecondition("contiguous storage: stage after release");
    if (staged_) return FailedPrecondition("contiguous storage: an interval is already staged");
    const uint64_t need = (committed_ + count) * shape_.row;
    for (uint64_t l = 0; l < shape_.layers; ++l) {
      if (k_[l].size() < need) {
        k_[l].resize(std::max<uint64_t>(need, 2 * k_[l].size()));
        v_[l].resize(k_[l].size());
      }
    }
    staged_ = count;
    return Status::Ok();
  }
  void WriteRow(uint64_t layer, uint64_t pos, const float* k, const float* v) override {
    std::memcpy(&k_[layer][pos * shape_.row], k, shape_.row * sizeof(float));
    std::memcpy(&v_[layer][pos * shape_.row], v, shape_.row * sizeof(float));
  }
  const float* KeyRow(uint64_t layer, uint64_t pos) const override {
    return &k_[layer][pos * shape_.row];
  }
  const float* ValueRow(uint64_t layer, uint64_t pos) const override {
    return &v_[layer][pos * shape_.row];
  }
  void Commit() override {
    committed_ += staged_;
    staged_ = 0;
  }
  void Abort() override { staged_ = 0; }

  StatusOr<std::unique_ptr<KvStorage>> Fork(uint64_t prefix) const override {
    if (released_ || prefix > committed_)
      return FailedPrecondition("contiguous storage: fork past the committed prefix");
    auto c = std::make_unique<ContiguousKvStorage>(shape_);
    for (uint64_t l = 0; l < shape_.layers; ++l) {
      c->k_[l].assign(k_[l].begin(), k_[l].begin() + prefix * shape_.row);
      c->v_[l].assign(v_[l].begin(), v_[l].begin() + prefix * shape_.row);
    }
    c->committed_ = prefix;
    return std::unique_ptr<KvStorage>(std::move(c));
  }
  Status Truncate(uint64_t length) override {
    if (released_ || staged_ || length > committed_)
      return FailedPrecondition(
          "contiguous storage: truncate needs length <= committed and no staged rows");
    committed_ = length;
    return Status::Ok();
  }
  void Release() override {
    for (auto& x : k_) std::vector<float>().swap(x);
    for (auto& x : v_) std::vector<float>().swap(x);
    committed_ = staged_ = 0;
    released_ = true;
  }
  bool released() const override { return released_; }
  uint64_t ResidentBytes() const override {
    return released_ ? 0 : 2 * shape_.layers * committed_ * shape_.row * sizeof(float);
  }

 private:
  KvShape shape_;
  std::vector<std::vector<float>> k_, v_;  // [L][capacity * row]
  uint64_t committed_ = 0, staged_ = 0;
  bool released_ = false;
};

// One block: every layer's K and V rows for block_size consecutive positions,
// laid out [L][block_size][row] for K, then the same for V.
struct Block {
  std::vector<float> data;
};

class PagedKvStorage final : public KvStorage {
 public:
  PagedKvStorage(KvShape s, uint64_t bs) : shape_(s), bs_(bs) {}
  std::string layout() const override { return "paged(block_size=" + std::to_string(bs_) + ")"; }
  KvShape shape() const override { return shape_; }
  uint64_t committed_length() const override { return committed_; }
  uint64_t staged_count() const override { return staged_; }

  Status Stage(uint64_t count) override {
    if (released_) return FailedPrecondition("paged storage: stage after release");
    if (staged_) return FailedPrecondition("paged storage: an interval is already staged");
    const uint64_t end = committed_ + count;
    const uint64_t first = committed_ / bs_;  // block of the first staged row
    const uint64_t blocks = (end + bs_ - 1) / bs_;
    // Copy-on-write: a block the staged rows will write into must be private.
    for (uint64_t b = first; b < std::min<uint64_t>(blocks, table_.size()); ++b) {
      if (table_[b].use_count() > 1) table_[b] = std::make_shared<Block>(*table_[b]);
    }
    while (table_.size() < blocks) {
      auto blk = std::make_shared<Block>();
      blk->data.assign(2 * shape_.layers * bs_ * shape_.row, 0.0f);
      table_.push_back(std::move(blk));
    }
    staged_ = count;
    return Status::Ok();
  }
  void WriteRow(uint64_t layer, uint64_t pos, const float* k, const float* v) override {
    Block& b = *table_[pos / bs_];
    std::memcpy(&b.data[Offset(layer, pos % bs_, false)], k, shape_.row * sizeof(float));
    std::memcpy(&b.data[Offset(layer, pos % bs_, true)], v, shape_.row * sizeof(float));
  }
  const float* KeyRow(uint64_t layer, uint64_t pos) const override {
    return &table_[pos / bs_]->data[Offset(layer, pos % bs_, false)];
  }
  const float* ValueRow(uint64_t layer, uint64_t pos) const override {
    return &table_[pos / bs_]->data[Offset(layer, pos % bs_, true)];
  }
  void Commit() override {
    committed_ += staged_;
    staged_ = 0;
    DropUnused();
  }
  void Abort() override {
    staged_ = 0;
    DropUnused();
  }

  StatusOr<std::unique_ptr<KvStorage>> Fork(uint64_t prefix) const override {
    if (released_ || prefix > committed_)
      return FailedPrecondition("paged storage: fork past the committed prefix");
    auto c = std::make_unique<PagedKvStorage>(shape_, bs_);
    const uint64_t blocks = (prefix + bs_ - 1) / bs_;
    c->table_.assign(table_.begin(), table_.begin() + blocks);  // shared, copy-on-write
    c->committed_ = prefix;
    return std::unique_ptr<KvStorage>(std::move(c));
  }
  Status Truncate(uint64_t length) override {
    if (released_ || staged_ || length > committed_)
      return FailedPrecondition(
          "paged storage: truncate needs length <= committed and no staged rows");
    committed_ = length;
    DropUnused();
    return Status::Ok();
  }
  void Release() override {
    table_.clear();
    committed_ = staged_ = 0;
    released_ = true;
  }
  bool released() const override { return released_; }
  uint64_t ResidentBytes() const override {
    return table_.size() * 2 * shape_.layers * bs_ * shape_.row * sizeof(float);
  }
  uint64_t shared_blocks() const {
    uint64_t n = 0;
    for (const auto& b : table_) n += b.use_count() > 1;
    return n;
  }

 private:
  uint64_t Offset(uint64_t layer, uint64_t slot, bool value) const {
    return ((value ? shape_.layers : 0) + layer) * bs_ * shape_.row + slot * shape_.row;
  }
  void DropUnused() { table_.resize((committed_ + staged_ + bs_ - 1) / bs_); }

  KvShape shape_;
  uint64_t bs_;
  std::vector<std::shared_ptr<Block>> table_;  // block table: position p lives in table_[p / bs_]
  uint64_t committed_ = 0, staged_ = 0;
  bool released_ = false;
};

}  // namespace

std::unique_ptr<KvStorage> NewContiguousKvStorage(KvShape shape) {
  return std::make_unique<ContiguousKvStorage>(shape);
}
std::unique_ptr<KvStorage> NewPagedKvStorage(KvShape shape, uint64_t block_size) {
  return std::make_unique<PagedKvStorage>(shape, block_size == 0 ? 1 : block_size);
}
uint64_t SharedBlockCount(const KvStorage& s) {
  auto* p = dynamic_cast<const PagedKvStorage*>(&s);
  return p ? p->shared_blocks() : 0;
}

}  // namespace kvc::model
