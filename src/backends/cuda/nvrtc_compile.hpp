#pragma once
// A direct NVRTC compile (dlopen'ed libnvrtc) of one generated translation unit
// with the embedded kernel headers, to a cubin for an explicit arch. The JIT
// runtime has its own cached compiler; this one serves the backends' tests, the
// benchmark's compile-time column and machines where the JIT is not wired in.
#include <cstddef>
#include <string>
#include <vector>

namespace hcwarm::cuda {

struct NvrtcResult {
  std::vector<std::byte> cubin;
  std::string log;
  double seconds = 0;
};

// Throws ErrorKind::Unavailable without libnvrtc, ErrorKind::Compile (with the
// log) when the source does not compile. `library_path` overrides the dlopen name.
NvrtcResult nvrtc_compile(const std::string& source, const std::string& arch, const std::string& library_path = {},
                          const std::vector<std::string>& extra_options = {});

bool nvrtc_available(const std::string& library_path = {});

}  // namespace hcwarm::cuda
