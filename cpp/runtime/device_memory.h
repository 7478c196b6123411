#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tinytpu {

// A buffer in the model's device memory. Views made by view() share the storage, so tinygrad's
// _offset sub-buffers alias their base as on real hardware; storage is freed with its last view.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t size) : storage_(std::make_shared<std::vector<uint8_t>>(size)), size_(size) {}
  DeviceBuffer view(size_t offset, size_t size) const {
    if (offset > size_ || size > size_ - offset)  // offset + size could wrap
      throw std::out_of_range("view of " + std::to_string(size) + " bytes at offset " +
                              std::to_string(offset) + " outside a device buffer of " +
                              std::to_string(size_) + " bytes");
    DeviceBuffer v(*this);
    v.offset_ += offset;
    v.size_ = size;
    return v;
  }
  uint8_t* data() { return storage_->data() + offset_; }
  const uint8_t* data() const { return storage_->data() + offset_; }
  size_t size() const { return size_; }

 private:
  std::shared_ptr<std::vector<uint8_t>> storage_;
  size_t offset_ = 0, size_ = 0;
};

}  // namespace tinytpu
