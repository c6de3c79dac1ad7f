// decode_npy_f32 on arbitrary bytes: an accepted array must match its shape and
// survive an encode/decode round trip bit for bit.
#include <cstring>

#include "core/npy.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hcwarm;
  fuzz::expect_only(ErrorKind::InvalidArgument, [&] {
    const HostTensor<float> t = decode_npy_f32(fuzz::as_text(data, size), "fuzz.npy");
    HCWARM_FUZZ_CHECK(static_cast<int64_t>(t.vec().size()) == shape_numel(t.shape()));
    const HostTensor<float> back = decode_npy_f32(encode_npy_f32(t), "roundtrip.npy");
    HCWARM_FUZZ_CHECK(back.shape() == t.shape());
    HCWARM_FUZZ_CHECK(t.numel() == 0 || std::memcmp(back.data(), t.data(), t.vec().size() * sizeof(float)) == 0);
  });
  return 0;
}
