#include "plexus/layout.hpp"

#include <algorithm>
#include <string>

#include "plexus/error.hpp"

namespace plexus {

BlockSizes::BlockSizes(std::vector<int> sizes) : sizes_(std::move(sizes)) {
  offsets_.assign(1, 0);
  offsets_.reserve(sizes_.size() + 1);
  for (std::size_t b = 0; b < sizes_.size(); ++b) {
    if (sizes_[b] <= 0)
      throw InputError("BlockSizes", "block " + std::to_string(b) + " has size " + std::to_string(sizes_[b]) +
                                         "; block sizes must be positive");
    offsets_.push_back(offsets_.back() + sizes_[b]);
  }
}

BlockSizes BlockSizes::uniform(int count, int size) {
  if (count < 0) throw InputError("BlockSizes::uniform", "negative block count");
  return BlockSizes(std::vector<int>(static_cast<std::size_t>(count), size));
}

BlockSizes BlockSizes::covering(std::int64_t n, int size) {
  if (size <= 0) throw InputError("BlockSizes::covering", "block size must be positive");
  std::vector<int> s;
  for (std::int64_t done = 0; done < n; done += size) s.push_back(static_cast<int>(std::min<std::int64_t>(size, n - done)));
  return BlockSizes(std::move(s));
}

BlockSizes BlockSizes::cyclic(int count, const std::vector<int>& pattern) {
  if (pattern.empty()) throw InputError("BlockSizes::cyclic", "empty block size pattern");
  std::vector<int> s(static_cast<std::size_t>(count));
  for (int b = 0; b < count; ++b) s[b] = pattern[static_cast<std::size_t>(b) % pattern.size()];
  return BlockSizes(std::move(s));
}

int BlockSizes::max_size() const { return sizes_.empty() ? 0 : *std::max_element(sizes_.begin(), sizes_.end()); }

int BlockSizes::block_of(std::int64_t i) const {
  if (i < 0 || i >= total()) throw Error("BlockSizes::block_of", "index " + std::to_string(i) + " out of range");
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), i);
  return static_cast<int>(it - offsets_.begin()) - 1;
}

}  // namespace plexus
