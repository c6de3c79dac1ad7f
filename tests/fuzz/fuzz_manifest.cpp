// Manifest::parse (a disk-cache entry's manifest.json) on arbitrary text: an
// accepted manifest must serialize and parse back to the same JSON.
#include "fuzz_util.hpp"
#include "jit/disk_cache.hpp"
#include "jit/sha256.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hcwarm;
  fuzz::expect_only(ErrorKind::InvalidArgument, [&] {
    const auto m = jit::Manifest::parse(fuzz::as_text(data, size));
    HCWARM_FUZZ_CHECK(jit::is_sha256_hex(m.key) && !m.files.empty());
    const std::string text = m.to_json();
    HCWARM_FUZZ_CHECK(jit::Manifest::parse(text).to_json() == text);
  });
  return 0;
}
