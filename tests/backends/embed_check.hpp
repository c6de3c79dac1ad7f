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
  StagedHcPre s = stage_hc_pre(device, c.copies, c.embed.dim(0), norm);
  const DeviceBuffer e = upload(device, c.embed.data(), c.embed.numel() * sizeof(bf16));
  s.args.residual = e.as<bf16>();
  s.args.input = mhc::HcPreInput::Embed;
  op.run(s.args);
  device.synchronize();
  return s.read_back(device);
}

inline void expect_same(const mhc::HcPreResult& a, const mhc::HcPreResult& b, const std::string& what) {
  EXPECT_EQ(std::memcmp(a.y.data(), b.y.data(), a.y.numel() * sizeof(bf16)), 0) << what << ": y";
  EXPECT_EQ(std::memcmp(a.post.data(), b.post.data(), a.post.numel() * sizeof(float)), 0) << what << ": post";
  EXPECT_EQ(std::memcmp(a.comb.data(), b.comb.data(), a.comb.numel() * sizeof(float)), 0) << what << ": comb";
}

}  // namespace hcwarm::test
