// parse_safetensors_header on arbitrary bytes: every accepted tensor must lie
// inside the data section with exactly its shape's bytes; they are all read, so
// a bad offset shows up as an out-of-bounds read under AddressSanitizer.
#include <span>

#include "fuzz_util.hpp"
#include "model/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hcwarm;
  fuzz::expect_only(ErrorKind::InvalidArgument, [&] {
    const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
    const auto h = model::parse_safetensors_header(file, "fuzz.safetensors");
    HCWARM_FUZZ_CHECK(h.data_offset >= 8 && h.data_offset <= size);
    const uint64_t data_size = size - h.data_offset;
    unsigned sum = 0;
    for (const auto& [name, t] : h.tensors) {
      HCWARM_FUZZ_CHECK(t.name == name && t.begin <= t.end && t.end <= data_size);
      uint64_t bytes = model::dtype_size(t.dtype);
      for (int64_t d : t.shape) bytes *= static_cast<uint64_t>(d);  // parse_safetensors_header rejected any overflow
      HCWARM_FUZZ_CHECK(bytes == t.end - t.begin);
      for (uint64_t i = t.begin; i < t.end; ++i) sum += static_cast<unsigned>(file[h.data_offset + i]);
    }
    volatile unsigned sink = sum;  // keeps the reads
    (void)sink;
  });
  return 0;
}
