#include "jit/cubin_set.hpp"

#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "jit/kernel_spec.hpp"

namespace hcwarm::jit {
namespace {

constexpr char kMagic[8] = {'H', 'C', 'W', 'C', 'U', 'B', 'S', '1'};

size_t align8(size_t n) { return (n + 7) & ~size_t{7}; }

}  // namespace

std::vector<std::byte> pack_cubin_set(const std::vector<std::vector<std::byte>>& cubins) {
  size_t size = sizeof(kMagic) + 8 + 8 * cubins.size();
  for (const auto& c : cubins) size = align8(size) + c.size();
  std::vector<std::byte> out(size);
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  const uint32_t header[2] = {static_cast<uint32_t>(cubins.size()), 0};
  std::memcpy(out.data() + sizeof(kMagic), header, sizeof(header));
  size_t pos = sizeof(kMagic) + sizeof(header) + 8 * cubins.size();
  for (size_t i = 0; i < cubins.size(); ++i) {
    const uint64_t n = cubins[i].size();
    std::memcpy(out.data() + sizeof(kMagic) + sizeof(header) + 8 * i, &n, sizeof(n));
    pos = align8(pos);
    if (n > 0) std::memcpy(out.data() + pos, cubins[i].data(), n);
    pos += n;
  }
  return out;
}

std::optional<std::vector<std::span<const std::byte>>> unpack_cubin_set(std::span<const std::byte> artifact) {
  if (artifact.size() < sizeof(kMagic) || std::memcmp(artifact.data(), kMagic, sizeof(kMagic)) != 0) {
    return std::nullopt;
  }
  uint32_t header[2] = {0, 0};
  HCWARM_ASSERT(artifact.size() >= sizeof(kMagic) + sizeof(header), "cubin set of {} bytes has no header",
                artifact.size());
  std::memcpy(header, artifact.data() + sizeof(kMagic), sizeof(header));
  const size_t count = header[0];
  const size_t table = sizeof(kMagic) + sizeof(header);
  HCWARM_ASSERT(count >= 1 && count <= kMaxSourceParts && artifact.size() >= table + 8 * count,
                "cubin set of {} bytes declares {} images", artifact.size(), count);
  std::vector<std::span<const std::byte>> images;
  size_t pos = table + 8 * count;
  for (size_t i = 0; i < count; ++i) {
    uint64_t n = 0;
    std::memcpy(&n, artifact.data() + table + 8 * i, sizeof(n));
    pos = align8(pos);
    HCWARM_ASSERT(pos <= artifact.size() && n <= artifact.size() - pos, "cubin set image {} ({} bytes) overruns {} bytes",
                  i, n, artifact.size());
    images.push_back(artifact.subspan(pos, n));
    pos += n;
  }
  HCWARM_ASSERT(pos == artifact.size(), "cubin set has {} trailing bytes", artifact.size() - pos);
  return images;
}

}  // namespace hcwarm::jit
