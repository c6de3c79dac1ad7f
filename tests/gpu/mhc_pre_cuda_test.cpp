// CUDA backend of mHC pre against the double-precision reference. Label `gpu`;
// every test skips cleanly on a machine without a CUDA device.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "cuda_fixture.hpp"
#include "graph_capture.hpp"

namespace hcwarm::test {
namespace {

using mhc::Backend;
using mhc::HcPreOp;
using mhc::Variant;

// The device and the JIT runtime: tests/gpu/cuda_fixture.hpp.
class MhcPreCuda : public CudaTest {};

mhc::MhcDims dims_of(int hidden) { return mhc::MhcDims{4, hidden}; }

// One call of `op` on T random tokens (norm on) on a stream and workspace of the caller's, eager
// and then replayed twice from a CUDA graph: the replay must give the eager call's bits.
void expect_graph_replay_gives_eager_bits(cuda::CudaDevice& device, HcPreOp& op, int hidden, int64_t T,
                                          uint64_t seed) {
  const TestStream owned_stream(device);
  ASSERT_NE(owned_stream.get(), nullptr);
  const auto in = random_hc_pre_inputs(T, 4, hidden, seed, 1.0f);
  DeviceBuffer ws(device, op.workspace_bytes(T));
  const mhc::LaunchContext launch{owned_stream.get(), ws.get(), ws.bytes()};
  StagedHcPre s = stage_hc_pre(device, in, T, true);
  const DeviceBuffer res = test::upload(device, in.residual.data(), in.residual.numel() * sizeof(bf16));
  s.args.residual = res.as<bf16>();
  op.run(s.args, launch);
  ASSERT_EQ(device.driver().cuStreamSynchronize(owned_stream.get()), cuda::CUDA_SUCCESS);
  const mhc::HcPreResult eager = s.read_back(device);
  for (DeviceBuffer* out : {&s.y, &s.post, &s.comb}) device.fill_zero(out->get(), out->bytes());
  device.synchronize();
  ASSERT_TRUE(capture_and_replay(device, owned_stream.get(), [&] { op.run(s.args, launch); }, 2));
  EXPECT_EQ(differing_values(s.read_back(device), eager), 0) << "graph replay of D=" << hidden << " T=" << T;
}

// Every split count of dsv4-flash/pro on 132 and 148 SMs, specialized (NVRTC) kernels.
TEST_F(MhcPreCuda, SpecializedEverySplitCount) {
  for (int hidden : {4096, 7168}) {
    HcPreOp op(Backend::Cuda, dims_of(hidden), {}, 132, jit_, *device_);
    const auto splits = dsv4_split_counts(hidden);
    std::vector<jit::KernelSpec> specs;
    for (int s : splits) {
      for (bool norm : {false, true}) specs.push_back(op.kernel_spec(s, norm));
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto rep = jit_->build(specs);
    std::printf("[nvrtc] D=%d: %d keys compiled in %.2f s wall (%d failed)\n", hidden, rep.compiled,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), rep.failed);
    ASSERT_EQ(rep.failed, 0) << (rep.errors.empty() ? "" : rep.errors.front());
    Comparison all;
    int i = 0;
    for (int s : splits) {
      const int64_t T = s >= 16 ? 3 : 70;
      const bool norm = (i++ % 2) == 0;
      const auto in = random_hc_pre_inputs(T, 4, hidden, 2000 + s, 1.0f);
      const auto c = check_against_reference(run_op(op, *device_, in, norm, s), in, norm);
      expect_close(c, fmt::format("D={} splits={} T={} norm={}", hidden, s, T, norm));
      all.merge(c);
    }
    report(fmt::format("cuda specialized D={} ({} splits)", hidden, splits.size()), all);
  }
}

TEST_F(MhcPreCuda, GenericEverySplitCount) {
  for (int hidden : {4096, 7168}) {
    HcPreOp op(Backend::Cuda, dims_of(hidden), {}, 132, nullptr, *device_, Variant::Generic);
    Comparison all;
    int i = 0;
    for (int s : dsv4_split_counts(hidden)) {
      const int64_t T = s >= 16 ? 2 : 67;
      const bool norm = (i++ % 2) == 1;
      const auto in = random_hc_pre_inputs(T, 4, hidden, 3000 + s, 1.0f);
      const auto c = check_against_reference(run_op(op, *device_, in, norm, s), in, norm);
      expect_close(c, fmt::format("generic D={} splits={} T={} norm={}", hidden, s, T, norm));
      all.merge(c);
    }
    report(fmt::format("cuda generic D={}", hidden), all);
  }
}

// Dispatch through the split policy at the token counts of the issue (incl. bucket edges).
TEST_F(MhcPreCuda, DispatchTokenCounts) {
  const int hidden = 7168;
  HcPreOp op(Backend::Cuda, dims_of(hidden), {}, device_->num_sms(), jit_, *device_);
  std::vector<int64_t> counts{1, 2, 63, 64, 65, 127, 128, 129, 192, 193, 512, 513, 4097};
  Comparison all;
  for (int64_t T : counts) {
    const bool norm = T != 4097 ? true : true;
    for (bool n : {false, true}) {
      if (T == 4097 && !n) continue;  // one large case
      const auto in = random_hc_pre_inputs(T, 4, hidden, 17 * T + n, 1.0f);
      const auto c = check_against_reference(run_op(op, *device_, in, n), in, n);
      expect_close(c, fmt::format("T={} norm={} splits={}", T, n, op.num_splits(T)));
      all.merge(c);
      (void)norm;
    }
  }
  report("cuda specialized dispatch D=7168", all);
}

// Hidden 4096 on either side of the one-pass bound (cuda::one_pass_max_splits:
// 14 splits, from 513 tokens on 132 SMs): the split-K pair at 512, the one-pass
// kernel from 513, both matching the reference.
TEST_F(MhcPreCuda, DispatchAroundTheOnePassBoundAtHidden4096) {
  const int hidden = 4096;
  HcPreOp op(Backend::Cuda, dims_of(hidden), {}, 132, jit_, *device_);
  Comparison all;
  for (int64_t T : {512, 513, 700, 1023}) {
    const auto in = random_hc_pre_inputs(T, 4, hidden, 31 * T, 1.0f);
    const auto c = check_against_reference(run_op(op, *device_, in, true), in, true);
    const int splits = op.num_splits(T);
    EXPECT_EQ(mhc::hc_pre_kernel_splits(Backend::Cuda, dims_of(hidden), splits, {}), T > 512 ? 1 : splits) << T;
    expect_close(c, fmt::format("D=4096 T={} splits={}", T, splits));
    all.merge(c);
  }
  report("cuda dispatch around the one-pass bound D=4096", all);
}

// The one-wave pair (hcwarm_mhc::cuda_one_wave: hidden 4096, 129-512 tokens): against the
// float64 reference; against its class's pair (a device with it off, HCWARM_MHC_ONE_WAVE=0),
// from which two thirds of the parts change only the f32 summation order (y within 3 ulps in at
// most 1e-4 of its values, cancellation cases aside as against the reference; post and comb
// within 1e-6); the generic fatbin's pair with the same bits; replayed from a CUDA graph with
// the eager call's bits.
TEST_F(MhcPreCuda, OneWavePairAtHidden4096) {
  const int hidden = 4096;
  HcPreOp op(Backend::Cuda, dims_of(hidden), {}, 132, jit_, *device_);
  // The plan's rule (HcPreLaunchPlan.OneWavePairAtHidden4096From129To512Tokens): not in the
  // portable forms, nor where an SM holds one of its partial blocks (cc 12).
  if (!op.launch_plan(256, true).one_wave) GTEST_SKIP() << "this device's kernels run no one-wave pair";
  EnvConfig env = EnvConfig::from_environment();
  env.mhc_one_wave = false;
  cuda::CudaDevice classic(0, env);
  HcPreOp class_op(Backend::Cuda, dims_of(hidden), {}, 132, jit_, classic);
  Comparison all;
  for (const int64_t T : {129, 200, 256, 300, 384, 448, 512}) {
    const bool norm = T != 300 && T != 200;
    const std::string where = fmt::format("D=4096 T={} norm={}", T, norm);
    ASSERT_TRUE(op.launch_plan(T, norm).one_wave) << where;
    ASSERT_FALSE(class_op.launch_plan(T, norm).one_wave) << where;
    const auto in = random_hc_pre_inputs(T, 4, hidden, 4100 + T, 1.0f);
    const mhc::HcPreResult got = run_op(op, *device_, in, norm);
    const Comparison c = check_against_reference(got, in, norm);
    expect_close(c, "one-wave " + where);
    all.merge(c);
    // Against the class pair's outputs, with the reference comparison's cancellation allowance:
    // where the streams' sum cancels, a different f32 summation order moves y by many ulps.
    const mhc::HcPreResult theirs = run_op(class_op, classic, in, norm);
    const Comparison vs = compare(got, theirs, in);
    EXPECT_EQ(vs.non_finite, 0) << where;
    EXPECT_LE(vs.max_ulp, 3) << where;
    EXPECT_LE(vs.y_values - vs.y_exact, vs.y_values / 10000) << where;
    EXPECT_LE(vs.post_max_rel, 1e-6) << where;
    EXPECT_LE(vs.comb_max_rel, 1e-6) << where;
    std::printf("[one-wave] %s: y %lld of %lld differ from the class pair's (%lld cancellation cases, else <= %lld "
                "ulp), post %.2g comb %.2g\n",
                where.c_str(), static_cast<long long>(vs.y_values - vs.y_exact), static_cast<long long>(vs.y_values),
                static_cast<long long>(vs.cancellation), static_cast<long long>(vs.max_ulp), vs.post_max_rel,
                vs.comb_max_rel);
  }
  report("cuda one-wave pair D=4096", all);

  // The generic fatbin's one-wave pair (the width read at run time): the specialized one's bits.
  HcPreOp gen(Backend::Cuda, dims_of(hidden), {}, 132, nullptr, *device_, Variant::Generic);
  for (const int64_t T : {129, 256, 512}) {
    ASSERT_TRUE(gen.launch_plan(T, true).one_wave) << T;
    const auto in = random_hc_pre_inputs(T, 4, hidden, 4700 + T, 1.0f);
    EXPECT_EQ(differing_values(run_op(gen, *device_, in, true), run_op(op, *device_, in, true)), 0) << "generic T=" << T;
  }

  // Graph replay: the same kernels, the caller's stream and workspace.
  expect_graph_replay_gives_eager_bits(*device_, op, hidden, 384, 4500);
}

// Twice the parts where the class's grid is coarse (hcwarm_mhc::cuda_residual_parts: hidden 4096
// up to 64 tokens, 7168 from 65 to 128 on 132 SMs): specialized and generic kernels against the
// float64 reference (more parts change only the f32 summation order over K), and graph replay
// with the eager call's bits.
TEST_F(MhcPreCuda, TwiceThePartsWhereTheGridIsCoarse) {
  Comparison all;
  const std::vector<std::pair<int, int64_t>> cases = {{4096, 1}, {4096, 37}, {4096, 64}, {7168, 65}, {7168, 100}, {7168, 128}};
  for (const auto& [hidden, T] : cases) {
    for (const Variant variant : {Variant::Specialized, Variant::Generic}) {
      HcPreOp op(Backend::Cuda, dims_of(hidden), {}, 132, variant == Variant::Specialized ? jit_ : nullptr, *device_, variant);
      const bool norm = T != 37 && T != 100;
      const std::string where = fmt::format("D={} T={} norm={} {}", hidden, T, norm, mhc::to_string(variant));
      const mhc::HcPreLaunchPlan plan = op.launch_plan(T, norm);
      ASSERT_EQ(plan.split_parts, 2 * cuda::cuda_num_parts(plan.kernel_splits)) << where;
      const auto in = random_hc_pre_inputs(T, 4, hidden, 5100 + T + hidden, 1.0f);
      const Comparison c = check_against_reference(run_op(op, *device_, in, norm), in, norm);
      expect_close(c, "twice the parts " + where);
      all.merge(c);
    }
  }
  report("cuda twice the parts", all);

  // Graph replay: the same kernels, the caller's stream and workspace.
  HcPreOp op(Backend::Cuda, dims_of(7168), {}, 132, jit_, *device_);
  expect_graph_replay_gives_eager_bits(*device_, op, 7168, 100, 5300);
}

// The deep partial at hidden 7168 up to 128 tokens (hcwarm_mhc::cuda_deep_partial): the class's
// parts and arithmetic, only more residual chunks in flight, so the class partial's bits (the
// portable forms' plans keep the class partial on the same parts), specialized and generic
// alike; against the float64 reference too, and graph replay. From 129 to 192 tokens (the class's
// partial) the finish runs in y and comb blocks (hcwarm_mhc::cuda_split_finish).
TEST_F(MhcPreCuda, DeepPartialAtHidden7168GivesTheClassPartialsBits) {
  const int hidden = 7168;
  HcPreOp op(Backend::Cuda, dims_of(hidden), {}, 132, jit_, *device_);
  if (!op.launch_plan(64, true).deep_partial) GTEST_SKIP() << "this device's kernels run no deep partial";
  EnvConfig env = EnvConfig::from_environment();
  env.cuda_portable = true;
  cuda::CudaDevice plain(0, env);
  HcPreOp class_op(Backend::Cuda, dims_of(hidden), {}, 132, jit_, plain);
  HcPreOp gen(Backend::Cuda, dims_of(hidden), {}, 132, nullptr, *device_, Variant::Generic);
  HcPreOp gen_class(Backend::Cuda, dims_of(hidden), {}, 132, nullptr, plain, Variant::Generic);
  Comparison all;
  for (const int64_t T : {1, 8, 64, 65, 100, 128, 129, 160, 192}) {
    const bool norm = T != 8 && T != 100 && T != 160;
    const std::string where = fmt::format("D=7168 T={} norm={}", T, norm);
    const mhc::HcPreLaunchPlan plan = op.launch_plan(T, norm);
    ASSERT_EQ(plan.deep_partial, T <= 128) << where;
    ASSERT_FALSE(class_op.launch_plan(T, norm).deep_partial) << where;
    ASSERT_EQ(class_op.launch_plan(T, norm).split_parts, plan.split_parts) << where;
    ASSERT_EQ(gen.launch_plan(T, norm).deep_partial, T <= 128) << where;
    const auto in = random_hc_pre_inputs(T, 4, hidden, 7100 + T, 1.0f);
    const mhc::HcPreResult got = run_op(op, *device_, in, norm);
    const Comparison c = check_against_reference(got, in, norm);
    expect_close(c, "deep partial " + where);
    all.merge(c);
    EXPECT_EQ(differing_values(got, run_op(class_op, plain, in, norm)), 0) << "the class partial's bits, " << where;
    const mhc::HcPreResult generic = run_op(gen, *device_, in, norm);
    expect_close(check_against_reference(generic, in, norm), "generic deep partial " + where);
    EXPECT_EQ(differing_values(generic, run_op(gen_class, plain, in, norm)), 0) << "the generic class partial's bits, "
                                                                                 << where;
  }
  report("cuda deep partial D=7168", all);

  // Graph replay: the same kernels, the caller's stream and workspace.
  expect_graph_replay_gives_eager_bits(*device_, op, hidden, 100, 7300);
  expect_graph_replay_gives_eager_bits(*device_, op, hidden, 192, 7400);
}

TEST_F(MhcPreCuda, LargeMagnitudeResidual) {
  Comparison all;
  for (int hidden : {4096, 7168}) {
    HcPreOp op(Backend::Cuda, dims_of(hidden), {}, 132, jit_, *device_);
    for (bool norm : {false, true}) {
      const auto in = random_hc_pre_inputs(33, 4, hidden, 77 + hidden + norm, 1000.0f);
      const auto c = check_against_reference(run_op(op, *device_, in, norm), in, norm);
      expect_close(c, fmt::format("N(0,1000) D={} norm={}", hidden, norm));
      all.merge(c);
    }
  }
  report("cuda residual ~ N(0,1000)", all);
}

// num_splits == 1: the one-pass kernel (default) and the two-kernel path, specialized and generic.
TEST_F(MhcPreCuda, OnePassLargeT) {
  struct Case {
    int hidden;
    int64_t T;
    bool norm;
    Variant variant;
    bool one_pass;
  };
  Comparison one, two;
  for (const Case& k : {Case{7168, 4225, true, Variant::Specialized, true}, Case{4096, 9001, false, Variant::Specialized, true},
                        Case{7168, 4300, true, Variant::Generic, true}, Case{7168, 4300, true, Variant::Specialized, false},
                        Case{4096, 4500, false, Variant::Generic, false}}) {
    HcPreOp op(Backend::Cuda, dims_of(k.hidden), {}, 132, k.variant == Variant::Generic ? nullptr : jit_, *device_,
               k.variant);
    op.set_cuda_one_pass(k.one_pass);
    ASSERT_EQ(op.num_splits(k.T), 1);
    const auto in = random_hc_pre_inputs(k.T, 4, k.hidden, 900 + k.T, 1.0f);
    const auto c = check_against_reference(run_op(op, *device_, in, k.norm), in, k.norm);
    expect_close(c, fmt::format("{} D={} T={} one_pass={}", mhc::to_string(k.variant), k.hidden, k.T, k.one_pass));
    (k.one_pass ? one : two).merge(c);
  }
  // Forced onto num_splits 1, with and without the norm: T = 1 (one token of
  // one 128-token chunk), 37 (a part-filled first half-chunk) and 1000 (a
  // part-filled last chunk).
  HcPreOp op(Backend::Cuda, dims_of(7168), {}, 132, jit_, *device_);
  op.set_cuda_one_pass(true);
  for (int64_t T : {1, 37, 1000}) {
    for (bool norm : {true, false}) {
      const auto in = random_hc_pre_inputs(T, 4, 7168, 950 + T, 1.0f);
      const auto c = check_against_reference(run_op(op, *device_, in, norm, 1), in, norm);
      expect_close(c, fmt::format("one-pass forced T={} norm={}", T, norm));
      one.merge(c);
    }
  }
  report("cuda num_splits=1 one-pass", one);
  report("cuda num_splits=1 two-pass", two);
}

// Where the one-pass kernel does not run (option off, portable forms), the generic
// pair of the buckets of at most 4 splits finishes with the streaming form
// (hcwarm_mhc::kCudaAnyStreamingClass): the specialized classes' bits, width at run time.
TEST_F(MhcPreCuda, GenericStreamingFinishGivesTheSpecializedBits) {
  for (const int hidden : {4096, 7168}) {
    HcPreOp spec(Backend::Cuda, dims_of(hidden), {}, 132, jit_, *device_, Variant::Specialized);
    HcPreOp gen(Backend::Cuda, dims_of(hidden), {}, 132, nullptr, *device_, Variant::Generic);
    spec.set_cuda_one_pass(false);
    gen.set_cuda_one_pass(false);
    for (const int s : {1, 2, 3, 4}) {
      const bool norm = s % 2 == 1;
      const auto in = random_hc_pre_inputs(300 + s, 4, hidden, 7000 + s, 1.0f);
      EXPECT_EQ(differing_values(run_op(gen, *device_, in, norm, s), run_op(spec, *device_, in, norm, s)), 0)
          << "D=" << hidden << " splits=" << s << (norm ? " norm" : "");
    }
  }
}

// Below hidden 7168 the generic finish of a residual stream runs one block a token from 98 to
// 128 tokens (hcwarm_mhc::kCudaGenericFinishSplitTokens), where the specialized finish still runs
// a y and a comb block per token: the same arithmetic, so the specialized bits on both sides of
// that edge, within the reference's tolerances, and the eager bits from a graph.
TEST_F(MhcPreCuda, GenericFinishInOneBlockATokenGivesTheSpecializedBits) {
  HcPreOp spec(Backend::Cuda, dims_of(4096), {}, 132, jit_, *device_, Variant::Specialized);
  HcPreOp gen(Backend::Cuda, dims_of(4096), {}, 132, nullptr, *device_, Variant::Generic);
  for (const int64_t T : {97, 98, 128}) {
    for (const bool norm : {false, true}) {
      const auto in = random_hc_pre_inputs(T, 4, 4096, 7100 + T, 1.0f);
      const mhc::HcPreResult g = run_op(gen, *device_, in, norm, 64);
      expect_close(check_against_reference(g, in, norm), fmt::format("generic T={} norm={}", T, norm));
      EXPECT_EQ(differing_values(g, run_op(spec, *device_, in, norm, 64)), 0) << "T=" << T << (norm ? " norm" : "");
    }
  }
  expect_graph_replay_gives_eager_bits(*device_, gen, 4096, 128, 7300);
}

// The split pair's partial is a programmatic dependent of the kernel before the call: calls
// queued back to back (each partial after the previous call's finish, which lets it start at
// its own start) give one call's bits, reading fn after the wait (default) and before it
// (HCWARM_MHC_EARLY_FN=1, a device of its own here), in the decode and mid-T buckets.
TEST_F(MhcPreCuda, BackToBackCallsGiveOneCallsBitsWithFnReadEarlyOrNot) {
  EnvConfig env = EnvConfig::from_environment();
  env.mhc_early_fn = true;
  cuda::CudaDevice early(0, env);
  if (!early.early_fn()) GTEST_SKIP() << "the portable kernel forms launch no programmatic dependents";
  for (const int hidden : {4096, 7168}) {
    for (const Variant v : {Variant::Specialized, Variant::Generic}) {
      HcPreOp once(Backend::Cuda, dims_of(hidden), {}, 132, jit_, *device_, v);
      for (const int64_t T : {int64_t{1}, int64_t{64}, int64_t{300}}) {
        const bool norm = T != 64;
        const auto in = random_hc_pre_inputs(T, 4, hidden, 9100 + T, 1.0f);
        const mhc::HcPreResult want = run_op(once, *device_, in, norm);
        for (cuda::CudaDevice* dev : {device_, &early}) {
          HcPreOp op(Backend::Cuda, dims_of(hidden), {}, 132, jit_, *dev, v);
          StagedHcPre st = stage_hc_pre(*dev, in, T, norm);
          const DeviceBuffer res = test::upload(*dev, in.residual.data(), in.residual.numel() * sizeof(bf16));
          st.args.residual = res.as<bf16>();
          for (int i = 0; i < 4; ++i) op.run(st.args);  // no synchronization between the calls
          dev->synchronize();
          EXPECT_EQ(differing_values(st.read_back(*dev), want), 0)
              << mhc::to_string(v) << " D=" << hidden << " T=" << T << (dev == &early ? " fn early" : "");
        }
      }
    }
  }
}

// By default a call may follow the kernel that writes its fn. Here that kernel is the finish of a
// call whose comb is the first writer_T * 16 values of fn: it lets the next call's partial start at
// its own start, so everything that partial does before its wait (fn's first chunks pulled into L2)
// overlaps the write. The call must give the bits of the same call made once the writer is done,
// and those must differ from the bits of fn before the write (so a stale read would show).
TEST_F(MhcPreCuda, FnWrittenByTheKernelBeforeTheCallIsReadAfterTheWrite) {
  if (device_->early_fn()) GTEST_SKIP() << "HCWARM_MHC_EARLY_FN=1: fn's first chunk is read before the wait";
  for (const int hidden : {4096, 7168}) {
    const int64_t writer_T = hidden == 4096 ? 512 : 384;  // the split pair's largest T at this width
    const auto win = random_hc_pre_inputs(writer_T, 4, hidden, 9300 + hidden, 1.0f);
    for (const Variant v : {Variant::Specialized, Variant::Generic}) {
      HcPreOp op(Backend::Cuda, dims_of(hidden), {}, 132, jit_, *device_, v);
      StagedHcPre writer = stage_hc_pre(*device_, win, writer_T, true);
      const DeviceBuffer wres = test::upload(*device_, win.residual.data(), win.residual.numel() * sizeof(bf16));
      writer.args.residual = wres.as<bf16>();
      for (const int64_t T : {int64_t{1}, int64_t{64}}) {
        const auto in = random_hc_pre_inputs(T, 4, hidden, 9400 + T, 1.0f);
        StagedHcPre st = stage_hc_pre(*device_, in, T, true);
        const DeviceBuffer res = test::upload(*device_, in.residual.data(), in.residual.numel() * sizeof(bf16));
        st.args.residual = res.as<bf16>();
        writer.args.comb = st.fn.as<float>();
        op.run(st.args);
        device_->synchronize();
        const mhc::HcPreResult before = st.read_back(*device_);
        op.run(writer.args);
        op.run(st.args);  // no synchronization between the writer and the call
        device_->synchronize();
        const mhc::HcPreResult raced = st.read_back(*device_);
        op.run(st.args);
        device_->synchronize();
        const mhc::HcPreResult settled = st.read_back(*device_);
        const std::string what = fmt::format("{} D={} T={}", mhc::to_string(v), hidden, T);
        EXPECT_EQ(differing_values(raced, settled), 0) << what;
        EXPECT_GT(differing_values(before, settled), 0) << what << ": the writer left fn's values as they were";
      }
    }
  }
}

// The other scalar part (IEEE reciprocals; the default has branch-free fast
// ones): every split count (D 7168), the one-pass kernel, and the generic
// fatbin's precise kernels (set_cuda_fast_finish picks them too).
TEST_F(MhcPreCuda, PreciseFinish) {
  Comparison all;
  HcPreOp op(Backend::Cuda, dims_of(7168), {}, 132, jit_, *device_);
  op.set_cuda_fast_finish(false);
  int i = 0;
  for (int s : dsv4_split_counts(7168)) {
    const int64_t T = s >= 16 ? 3 : 70;
    const bool norm = (i++ % 2) == 0;
    const auto in = random_hc_pre_inputs(T, 4, 7168, 4000 + s, 1.0f);
    const auto c = check_against_reference(run_op(op, *device_, in, norm, s), in, norm);
    expect_close(c, fmt::format("precise finish splits={} T={} norm={}", s, T, norm));
    all.merge(c);
  }
  op.set_cuda_one_pass(true);
  const auto in = random_hc_pre_inputs(4300, 4, 7168, 4300, 1000.0f);
  const auto c = check_against_reference(run_op(op, *device_, in, true), in, true);
  expect_close(c, "precise finish one-pass T=4300 N(0,1000)");
  all.merge(c);
  // The generic fatbin's precise kernels (finish and one-pass, norm on and off).
  HcPreOp gen(Backend::Cuda, dims_of(7168), {}, 132, nullptr, *device_, Variant::Generic);
  gen.set_cuda_fast_finish(false);
  for (const int s : {64, 8, 1}) {
    for (const bool norm : {true, false}) {
      const int64_t T = s == 1 ? 2500 : 5;
      const auto gin = random_hc_pre_inputs(T, 4, 7168, 5000 + s + norm, 1000.0f);
      const auto g = check_against_reference(run_op(gen, *device_, gin, norm, s), gin, norm);
      expect_close(g, fmt::format("precise finish generic splits={} T={} norm={}", s, T, norm));
      all.merge(g);
    }
  }
  report("cuda precise finish D=7168", all);
}

// set_cuda_fast_finish picks the generic kernels' reciprocal form, not only
// the specialized ones': both forms meet the reference tolerances, so only
// bits tell them apart. The generic one-pass kernel is the specialized
// template with the width read at run time, and its outputs equal the
// specialization's bit for bit in each form; the two forms differ from
// each other in post and comb (N(0, 1000) residual, norm on and off).
TEST_F(MhcPreCuda, GenericKernelsFollowTheReciprocalForm) {
  HCWARM_SKIP_IF_PORTABLE(*device_);
  const int D = 7168;
  const int64_t T = 2500;
  for (const bool norm : {true, false}) {
    const auto in = random_hc_pre_inputs(T, 4, D, 6100 + norm, 1000.0f);
    auto run = [&](Variant variant, bool fast) {
      HcPreOp op(Backend::Cuda, dims_of(D), {}, 132, variant == Variant::Generic ? nullptr : jit_, *device_, variant);
      op.set_cuda_one_pass(true);
      op.set_cuda_fast_finish(fast);
      return run_op(op, *device_, in, norm, 1);
    };
    const auto gen_fast = run(Variant::Generic, true), gen_precise = run(Variant::Generic, false);
    const auto spec_fast = run(Variant::Specialized, true), spec_precise = run(Variant::Specialized, false);
    const std::string what = fmt::format("one-pass T={} norm={}", T, norm);
    EXPECT_GT(differing_values(spec_fast, spec_precise), 0) << what << ": the two specialized forms gave the same bits";
    EXPECT_GT(differing_values(gen_fast, gen_precise), 0) << what << ": set_cuda_fast_finish left the generic kernel as it was";
    EXPECT_EQ(differing_values(gen_precise, spec_precise), 0) << what << ": generic precise against specialized precise";
    EXPECT_EQ(differing_values(gen_fast, spec_fast), 0) << what << ": generic fast against specialized fast";
  }
}

// Every CUDA kernel moves 16 bytes at a time: a residual 2 bytes off (a bf16
// view at an odd offset) is refused before anything runs, naming it, and y is
// left as it was; the same buffers aligned run.
TEST_F(MhcPreCuda, MisalignedResidualIsRefused) {
  const int D = 7168;
  const int64_t T = 4300;  // num_splits 1: the one-pass kernel by default
  HcPreOp op(Backend::Cuda, dims_of(D), {}, 132, jit_, *device_);
  ASSERT_EQ(op.num_splits(T), 1);
  const auto in = random_hc_pre_inputs(T, 4, D, 77, 1.0f);
  const size_t res_bytes = in.residual.numel() * sizeof(bf16), y_bytes = static_cast<size_t>(T) * D * sizeof(bf16);
  DeviceBuffer res(*device_, res_bytes + 16), fn(*device_, in.fn.numel() * sizeof(float)), scale(*device_, 64),
      base(*device_, 256), y(*device_, y_bytes), post(*device_, T * 16), comb(*device_, T * 64);
  device_->copy_from_host(fn.get(), in.fn.data(), in.fn.numel() * sizeof(float));
  device_->copy_from_host(scale.get(), in.scale.data(), in.scale.numel() * sizeof(float));
  device_->copy_from_host(base.get(), in.base.data(), in.base.numel() * sizeof(float));
  const std::vector<unsigned char> poison(y_bytes, 0xff);
  device_->copy_from_host(y.get(), poison.data(), y_bytes);
  mhc::HcPreArgs a;
  a.num_tokens = T;
  a.residual = reinterpret_cast<const bf16*>(res.as<unsigned char>() + 2);
  a.fn = fn.as<float>();
  a.scale = scale.as<float>();
  a.base = base.as<float>();
  a.y = y.as<bf16>();
  a.post = post.as<float>();
  a.comb = comb.as<float>();
  device_->copy_from_host(res.as<unsigned char>() + 2, in.residual.data(), res_bytes);
  try {
    op.run(a);
    FAIL() << "a residual 2 bytes off 16-byte alignment was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find("residual"), std::string::npos) << e.message();
  }
  device_->synchronize();
  std::vector<unsigned char> after(y_bytes);
  device_->copy_to_host(after.data(), y.get(), y_bytes);
  EXPECT_EQ(after, poison) << "y was written";
  device_->copy_from_host(res.get(), in.residual.data(), res_bytes);
  a.residual = res.as<bf16>();
  EXPECT_NO_THROW(op.run(a));
  device_->synchronize();
}

TEST_F(MhcPreCuda, ZeroTokensIsANoOp) {
  HcPreOp op(Backend::Cuda, dims_of(7168), {}, 132, jit_, *device_);
  mhc::HcPreArgs a;
  EXPECT_NO_THROW(op.run(a));
  device_->synchronize();
}

}  // namespace
}  // namespace hcwarm::test
