#pragma once
// Block layout of a matrix: the sizes of its block rows and block columns (any mix of sizes).
#include <cstdint>
#include <vector>

namespace plexus {

class BlockSizes {
 public:
  BlockSizes() = default;
  explicit BlockSizes(std::vector<int> sizes);
  /// `count` blocks of `size` each.
  static BlockSizes uniform(int count, int size);
  /// Blocks of `size` covering `n` rows; the last one is smaller if size does not divide n.
  static BlockSizes covering(std::int64_t n, int size);
  /// The sizes of `pattern` repeated cyclically until `count` blocks.
  static BlockSizes cyclic(int count, const std::vector<int>& pattern);

  int count() const { return static_cast<int>(sizes_.size()); }
  int size(int b) const { return sizes_[b]; }
  std::int64_t offset(int b) const { return offsets_[b]; }  ///< first scalar row of block b
  std::int64_t total() const { return offsets_.back(); }    ///< scalar dimension
  int max_size() const;
  /// Block that contains scalar index i (binary search).
  int block_of(std::int64_t i) const;
  const std::vector<int>& sizes() const { return sizes_; }
  bool operator==(const BlockSizes& o) const { return sizes_ == o.sizes_; }

 private:
  std::vector<int> sizes_;
  std::vector<std::int64_t> offsets_{0};
};

struct BlockLayout {
  BlockSizes rows;
  BlockSizes cols;
  bool operator==(const BlockLayout& o) const { return rows == o.rows && cols == o.cols; }
};

}  // namespace plexus
