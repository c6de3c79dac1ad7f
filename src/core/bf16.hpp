#pragma once
// bfloat16 storage type for host code: conversions round to nearest even, as
// PyTorch's float->bf16 cast does, and keep NaN a NaN.
#include <bit>
#include <cstdint>
#include <cstring>

namespace hcwarm {

struct bf16 {
  uint16_t bits = 0;

  static constexpr bf16 from_bits(uint16_t b) { return bf16{b}; }
  static bf16 from_float(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{static_cast<uint16_t>((u >> 16) | 0x0040u)};
    const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
    return bf16{static_cast<uint16_t>((u + rounding) >> 16)};
  }
  float to_float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
  explicit operator float() const { return to_float(); }
  friend bool operator==(bf16 a, bf16 b) { return a.bits == b.bits; }
};

inline float round_to_bf16(float f) { return bf16::from_float(f).to_float(); }

// Distance in units in the last place between two finite bf16 values
// (same-sign ordering of the bit patterns; +0 and -0 are 0 apart).
inline int64_t bf16_ulp_distance(bf16 a, bf16 b) {
  auto ordered = [](uint16_t bits) -> int64_t {
    return (bits & 0x8000u) ? -static_cast<int64_t>(bits & 0x7fffu) : static_cast<int64_t>(bits);
  };
  const int64_t d = ordered(a.bits) - ordered(b.bits);
  return d < 0 ? -d : d;
}

}  // namespace hcwarm
