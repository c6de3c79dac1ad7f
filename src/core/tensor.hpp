#pragma once
// A host tensor: a shape and a contiguous row-major buffer. Enough for the CLI,
// the reference math and the tests; device data lives in DeviceBuffer.
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace hcwarm {

using Shape = std::vector<int64_t>;

inline int64_t shape_numel(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

std::string shape_string(const Shape& shape);  // "(2, 4, 4096)"

template <class T>
class HostTensor {
 public:
  HostTensor() = default;
  explicit HostTensor(Shape shape) : shape_(std::move(shape)), data_(checked_numel(shape_)) {}
  HostTensor(Shape shape, std::vector<T> data) : shape_(std::move(shape)), data_(std::move(data)) {
    HCWARM_CHECK_ARG(data_.size() == checked_numel(shape_),
                     "tensor data holds {} values, shape {} needs {}", data_.size(),
                     shape_string(shape_), shape_numel(shape_));
  }

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_.at(static_cast<size_t>(i)); }
  int64_t numel() const { return static_cast<int64_t>(data_.size()); }
  bool empty() const { return data_.empty(); }

  T* data() { return data_.data(); }
  const T* data() const { return data_.data(); }
  std::span<T> span() { return data_; }
  std::span<const T> span() const { return data_; }
  T& operator[](int64_t i) { return data_[static_cast<size_t>(i)]; }
  const T& operator[](int64_t i) const { return data_[static_cast<size_t>(i)]; }
  std::vector<T>& vec() { return data_; }
  const std::vector<T>& vec() const { return data_; }

 private:
  static size_t checked_numel(const Shape& shape) {
    for (int64_t d : shape) HCWARM_CHECK_ARG(d >= 0, "negative dimension in shape {}", shape_string(shape));
    return static_cast<size_t>(shape_numel(shape));
  }

  Shape shape_;
  std::vector<T> data_;
};

}  // namespace hcwarm
