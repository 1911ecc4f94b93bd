#pragma once
// Reusable, uninitialised work buffers, so that no repetition pays for allocation or page faults
// after the warm-up.

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace ddlsim::kernels {

class Scratch {
 public:
  // Buffer number `slot` with room for at least `count` floats; contents are whatever was left there.
  std::span<float> floats(std::size_t slot, std::size_t count) {
    if (slot >= blocks_.size()) blocks_.resize(slot + 1);
    Block& block = blocks_[slot];
    if (block.size < count) {
      block.data = std::make_unique_for_overwrite<float[]>(count);
      block.size = count;
    }
    return {block.data.get(), count};
  }

 private:
  struct Block {
    std::unique_ptr<float[]> data;
    std::size_t size = 0;
  };
  std::vector<Block> blocks_;
};

}  // namespace ddlsim::kernels
