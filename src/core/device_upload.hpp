#pragma once
// A host tensor copied into a new buffer on a device: how weights reach the GPU.
#include "core/device.hpp"
#include "core/tensor.hpp"

namespace hcwarm {

template <class T>
DeviceBuffer upload_to_device(const HostTensor<T>& t, Device& device) {
  DeviceBuffer b(device, static_cast<size_t>(t.numel()) * sizeof(T));
  device.copy_from_host(b.get(), t.data(), b.bytes());
  return b;
}

}  // namespace hcwarm
