#include "model/standin/swiglu_mlp.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/standin/swiglu_cpu.hpp"
#include "common/test_util.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "model/safetensors.hpp"

namespace hcwarm::model {
namespace {

HostTensor<bf16> random_x(int64_t T, int D, uint64_t seed) {
  HostTensor<bf16> x({T, D});
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  for (auto& v : x.vec()) v = bf16::from_float(n01(rng));
  return x;
}

// The MLP in double, with the same bf16 rounding of the intermediate.
std::vector<double> reference(const SwigluWeights& w, const HostTensor<bf16>& x) {
  const int64_t T = x.dim(0), D = w.hidden, F = w.width;
  std::vector<double> out(static_cast<size_t>(T * D));
  std::vector<double> h(static_cast<size_t>(F));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t f = 0; f < F; ++f) {
      double g = 0, u = 0;
      for (int64_t d = 0; d < D; ++d) {
        g += double(w.gate[f * D + d].to_float()) * x[t * D + d].to_float();
        u += double(w.up[f * D + d].to_float()) * x[t * D + d].to_float();
      }
      h[f] = round_to_bf16(static_cast<float>(g / (1 + std::exp(-g)) * u));
    }
    for (int64_t d = 0; d < D; ++d) {
      double o = 0;
      for (int64_t f = 0; f < F; ++f) o += double(w.down[d * F + f].to_float()) * h[f];
      out[t * D + d] = o;
    }
  }
  return out;
}

HostTensor<bf16> run(Sublayer& mlp, const HostTensor<bf16>& x) {
  CpuDevice dev;
  HostTensor<bf16> out({x.dim(0), x.dim(1)});
  mlp.forward(x.data(), out.data(), x.dim(0), dev);
  return out;
}

class FakeGpu final : public Device {
 public:
  DeviceKind kind() const override { return DeviceKind::Cuda; }
  std::string name() const override { return "fake-gpu"; }
  void copy_from_host(void*, const void*, size_t) override {}
  void copy_to_host(void*, const void*, size_t) override {}
  void fill_zero(void*, size_t) override {}
  void synchronize() override {}

 protected:
  void* do_allocate(size_t) override { return nullptr; }
  void do_deallocate(void*) noexcept override {}
};

TEST(SwigluMlpTest, MatchesDoubleReference) {
  // Widths that are and are not multiples of the 8-wide vectors; token counts
  // around the 4-token blocks and the 16-token pool chunks.
  for (auto [D, F] : {std::pair{64, 48}, std::pair{36, 20}, std::pair{7, 3}}) {
    auto mlp = SwigluMlp::cpu(SwigluWeights::random(D, F, 11), 3);
    for (int64_t T : {1, 3, 4, 5, 17, 40}) {
      const auto x = random_x(T, D, static_cast<uint64_t>(T * 100 + D));
      const auto out = run(*mlp, x);
      const auto ref = reference(mlp->weights(), x);
      for (int64_t i = 0; i < T * D; ++i) {
        ASSERT_NEAR(out[i].to_float(), ref[i], 1e-2 * std::abs(ref[i]) + 2e-3)
            << "D=" << D << " F=" << F << " T=" << T << " i=" << i;
      }
    }
  }
}

TEST(SwigluMlpTest, ThreadCountDoesNotChangeBits) {
  const auto w = SwigluWeights::random(96, 40, 5);
  auto one = SwigluMlp::cpu(w, 1);
  auto four = SwigluMlp::cpu(w, 4);
  const auto x = random_x(53, 96, 9);
  EXPECT_EQ(run(*one, x).vec(), run(*four, x).vec());
}

TEST(SwigluMlpTest, SharedPoolAndWeightsAcrossSublayers) {
  auto pool = std::make_shared<ThreadPool>(2);
  auto w = std::make_shared<const SwigluWeights>(SwigluWeights::random(32, 16, 1));
  SwigluMlp attn(w, cpu::make_cpu_swiglu_backend(w, pool));
  SwigluMlp ffn(w, cpu::make_cpu_swiglu_backend(w, pool));
  const auto x = random_x(20, 32, 2);
  EXPECT_EQ(run(attn, x).vec(), run(ffn, x).vec());
  EXPECT_EQ(attn.describe(), "swiglu_mlp(hidden=32, width=16, backend=cpu)");
  EXPECT_EQ(attn.hidden_size(), 32);
  EXPECT_EQ(attn.width(), 16);
}

TEST(SwigluMlpTest, RandomInitIsSeededAndScaled) {
  const auto a = SwigluWeights::random(256, 64, 7);
  EXPECT_EQ(a.gate.vec(), SwigluWeights::random(256, 64, 7).gate.vec());
  EXPECT_NE(a.gate.vec(), SwigluWeights::random(256, 64, 8).gate.vec());
  // Unit-variance input gives outputs of order one: activations neither vanish nor blow up.
  auto mlp = SwigluMlp::cpu(a, 2);
  const auto out = run(*mlp, random_x(32, 256, 3));
  double ss = 0;
  for (const auto& v : out.vec()) ss += double(v.to_float()) * v.to_float();
  const double rms = std::sqrt(ss / static_cast<double>(out.numel()));
  EXPECT_GT(rms, 0.1);
  EXPECT_LT(rms, 3.0);
}

TEST(SwigluMlpTest, SafetensorsRoundTrip) {
  test::TempDir dir;
  const auto w = SwigluWeights::random(24, 8, 3);
  SafetensorsWriter writer;
  save_swiglu_weights(w, writer, "model.layers.0.mlp.");
  writer.write(dir / "mlp.safetensors");
  const auto file = SafetensorsFile::open(dir / "mlp.safetensors");
  const auto back = load_swiglu_weights(file, "model.layers.0.mlp.", 24, 8);
  EXPECT_EQ(back.gate.vec(), w.gate.vec());
  EXPECT_EQ(back.up.vec(), w.up.vec());
  EXPECT_EQ(back.down.vec(), w.down.vec());
  try {
    load_swiglu_weights(file, "model.layers.0.mlp.", 24, 16);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("'model.layers.0.mlp.gate_proj.weight' has shape (8, 24), expected (16, 24)"),
              std::string::npos)
        << e.message();
  }
  EXPECT_THROW(load_swiglu_weights(file, "model.layers.1.mlp.", 24, 8), Error);
}

TEST(SwigluMlpTest, EdgeCasesAndMisuse) {
  auto mlp = SwigluMlp::cpu(SwigluWeights::random(16, 8, 1), 2);
  CpuDevice cpu;
  mlp->forward(nullptr, nullptr, 0, cpu);  // T = 0: nothing to do
  EXPECT_THROW(mlp->forward(nullptr, nullptr, -1, cpu), Error);
  FakeGpu gpu;
  try {
    mlp->forward(nullptr, nullptr, 1, gpu);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("cannot run on device 'fake-gpu'"), std::string::npos) << e.message();
  }
  EXPECT_THROW(SwigluWeights::random(0, 8, 1), Error);
  SwigluWeights bad = SwigluWeights::random(16, 8, 1);
  bad.down = HostTensor<bf16>({8, 16});
  EXPECT_THROW(SwigluMlp::cpu(bad, 1), Error);
}

}  // namespace
}  // namespace hcwarm::model
