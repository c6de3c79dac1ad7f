#pragma once
// Shared by tests/backends (CPU) and tests/gpu (CUDA): hc_pre of the first
// layer from an embedding, beside hc_pre on the embedding's hc copies.
#include <gtest/gtest.h>

#include <cstring>

#include "mhc_check.hpp"

namespace hcwarm::test {

// An embedding and the inputs of hc_pre on its hc copies.
struct EmbedCase {
  HostTensor<bf16> embed;
  HcPreInputs copies;
};

inline EmbedCase make_case(int64_t T, int hidden, uint64_t seed) {
  HcPreInputs in = random_hc_pre_inputs(T, 4, hidden, seed);
  HostTensor<bf16> embed({T, hidden});
  std::copy_n(in.residual.data(), embed.numel(), embed.data());  // N(0, 1) bf16 values
  in.residual = mhc::broadcast_streams(embed, 4);
  return {std::move(embed), std::move(in)};
}

// hc_pre from the embedding on `device` (outputs poisoned first).
inline mhc::HcPreResult run_embed(mhc::HcPreOp& op, Device& device, const EmbedCase& c, bool norm) {
  const int64_t T = c.embed.dim(0), D = c.embed.dim(1);
  const int hc = 4;
  auto upload = [&](const void* src, size_t bytes) {
    DeviceBuffer b(device, std::max<size_t>(bytes, 16));
    device.copy_from_host(b.get(), src, bytes);
    return b;
  };
  DeviceBuffer e = upload(c.embed.data(), c.embed.numel() * sizeof(bf16));
  DeviceBuffer fn = upload(c.copies.fn.data(), c.copies.fn.numel() * sizeof(float));
  DeviceBuffer scale = upload(c.copies.scale.data(), 3 * sizeof(float));
  DeviceBuffer base = upload(c.copies.base.data(), c.copies.base.numel() * sizeof(float));
  DeviceBuffer w = upload(c.copies.norm_weight.data(), D * sizeof(bf16));
  std::vector<unsigned char> poison(static_cast<size_t>(T * D * 2 + T * hc * hc * 4 + 16), 0xff);
  DeviceBuffer y = upload(poison.data(), T * D * sizeof(bf16));
  DeviceBuffer post = upload(poison.data(), T * hc * sizeof(float));
  DeviceBuffer comb = upload(poison.data(), T * hc * hc * sizeof(float));
  mhc::HcPreArgs a;
  a.num_tokens = T;
  a.residual = e.as<bf16>();
  a.fn = fn.as<float>();
  a.scale = scale.as<float>();
  a.base = base.as<float>();
  a.norm_weight = norm ? w.as<bf16>() : nullptr;
  a.y = y.as<bf16>();
  a.post = post.as<float>();
  a.comb = comb.as<float>();
  a.input = mhc::HcPreInput::Embed;
  op.run(a);
  device.synchronize();
  mhc::HcPreResult r{HostTensor<bf16>({T, D}), HostTensor<float>({T, hc}), HostTensor<float>({T, hc, hc}), norm};
  device.copy_to_host(r.y.data(), y.get(), T * D * sizeof(bf16));
  device.copy_to_host(r.post.data(), post.get(), T * hc * sizeof(float));
  device.copy_to_host(r.comb.data(), comb.get(), T * hc * hc * sizeof(float));
  return r;
}

inline void expect_same(const mhc::HcPreResult& a, const mhc::HcPreResult& b, const std::string& what) {
  EXPECT_EQ(std::memcmp(a.y.data(), b.y.data(), a.y.numel() * sizeof(bf16)), 0) << what << ": y";
  EXPECT_EQ(std::memcmp(a.post.data(), b.post.data(), a.post.numel() * sizeof(float)), 0) << what << ": post";
  EXPECT_EQ(std::memcmp(a.comb.data(), b.comb.data(), a.comb.numel() * sizeof(float)), 0) << what << ": comb";
}

}  // namespace hcwarm::test
