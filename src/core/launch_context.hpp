#pragma once
// Where one op call runs when the caller says so: an engine's stream and scratch
// memory from its own allocator. Unset / null: the device's own stream and the
// op's own buffer (which grows, synchronizing, outside graph capture only, and
// serves one stream at a time: callers on several streams pass their own).
#include <cstddef>
#include <optional>

namespace hcwarm {

struct LaunchContext {
  // A CUstream on the op's device (CUDA only); a null one is CUDA's legacy default
  // stream (what PyTorch's default stream is). Unset: the device's own stream.
  std::optional<void*> stream;
  void* workspace = nullptr;  // device memory of at least the op's workspace_bytes(T), 16-byte aligned
  size_t workspace_bytes = 0;
};

}  // namespace hcwarm
