#pragma once
// A JIT artifact holding several cubins: a CUDA source split into "parts"
// (independent kernels) that NVRTC compiles as separate programs, in parallel,
// so that one specialization's compile takes about as long as its slowest
// kernel instead of the sum. The CUDA module loader loads each image.
//
// The spec carries the count (KernelSource::parts, 1..8) and the source guards
// each part with `#if !defined(HCWARM_PART) || HCWARM_PART == i`; NVRTC
// compiles it N times with -DHCWARM_PART=i (or once, without the macro, into
// one plain cubin when the cores are busy with other compiles).
//
// Layout: "HCWCUBS1", u32 count, u32 0, count x u64 sizes, then the images,
// each at an offset that is a multiple of 8 (little-endian, as the host).
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace hcwarm::jit {

std::vector<std::byte> pack_cubin_set(const std::vector<std::vector<std::byte>>& cubins);

// The images of a set (views into `artifact`), or nullopt when `artifact` is
// not a set (a plain cubin). A set whose sizes overrun it throws
// ErrorKind::Internal (the artifact was checksummed: that is a bug).
std::optional<std::vector<std::span<const std::byte>>> unpack_cubin_set(std::span<const std::byte> artifact);

}  // namespace hcwarm::jit
