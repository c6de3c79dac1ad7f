// The fused sublayer boundary on CUDA (hc_pre with input Post, "hc_post_pre"):
// the new residual within 1 bf16 ulp of the float64 post step and bit-equal to
// CUDA hc_post's, the pre step on it against the float64 reference, for the
// specialized and the generic kernels, at every split count of dsv4-flash/pro,
// in place (new residual over the previous one), and under CUDA-graph replay.
// Label `gpu`: every test skips without a CUDA device.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "cuda_fixture.hpp"
#include "graph_capture.hpp"

namespace hcwarm::test {
namespace {

using mhc::Backend;
using mhc::HcPreInput;
using mhc::HcPreOp;
using mhc::Variant;

class HcPostPreCuda : public CudaTest {
 protected:
  // Every split count's specializations (both norms) in one parallel build.
  void build_all(const HcPreOp& op, const std::set<int>& splits) {
    std::vector<jit::KernelSpec> specs;
    for (int s : splits) {
      for (bool norm : {false, true}) specs.push_back(op.kernel_spec(s, norm, HcPreInput::Post));
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto rep = jit_->build(specs);
    std::printf("[nvrtc] post input D=%d: %d keys compiled in %.2f s wall (%d failed)\n", op.dims().hidden,
                rep.compiled, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                rep.failed);
    ASSERT_EQ(rep.failed, 0) << (rep.errors.empty() ? "" : rep.errors.front());
  }
};

// The token counts of the brief through the split policy (T = 8192: num_splits
// 1, which with input Post takes the two kernels, never the one-pass kernel).
TEST_F(HcPostPreCuda, MatchesTheReference) {
  for (const int hidden : {4096, 7168}) {
    HcPreOp spec(Backend::Cuda, {4, hidden}, {}, 132, jit_, *device_);
    HcPreOp gen(Backend::Cuda, {4, hidden}, {}, 132, nullptr, *device_, Variant::Generic);
    Comparison all_spec, all_gen;
    for (const int64_t T : {int64_t{1}, int64_t{37}, int64_t{64}, int64_t{65}, int64_t{300}, int64_t{2048},
                            int64_t{8192}}) {
      const bool norm = T % 2 == 0;
      const std::string what = fmt::format("D={} T={} splits={} norm={}", hidden, T, spec.num_splits(T), norm);
      const PostPreCase c = make_post_pre_case(T, hidden, 31 * T + hidden);
      const PostPreResult s = run_post_pre(spec, *device_, c, norm);
      const PostPreResult g = run_post_pre(gen, *device_, c, norm);
      expect_close(compare_new_residual(s.new_residual, c), "specialized " + what);
      EXPECT_TRUE(same_bits(s.new_residual, run_cuda_hc_post(*device_, jit_, c)))
          << what << ": the fused new residual differs from CUDA hc_post's";
      EXPECT_TRUE(same_bits(g.new_residual, s.new_residual)) << what << ": generic and specialized new residuals differ";
      // One float64 reference for both (their new residuals are the same bits).
      const HcPreInputs next = pre_step_inputs(s.new_residual, c);
      const mhc::HcPreResult ref = reference_of(next, norm);
      const Comparison cs = compare(s.pre, ref, next);
      expect_close(cs, "specialized " + what);
      all_spec.merge(cs);
      const Comparison cg = compare(g.pre, ref, next);
      expect_close(cg, "generic " + what);
      all_gen.merge(cg);
    }
    report(fmt::format("cuda post-pre specialized D={}", hidden), all_spec);
    report(fmt::format("cuda post-pre generic D={}", hidden), all_gen);
  }
}

// Every split count of dsv4-flash/pro (132 and 148 SMs), forced: each one's
// K-parts split the hidden positions differently.
TEST_F(HcPostPreCuda, SpecializedEverySplitCount) {
  for (const int hidden : {4096, 7168}) {
    HcPreOp op(Backend::Cuda, {4, hidden}, {}, 132, jit_, *device_);
    const auto splits = dsv4_split_counts(hidden);
    build_all(op, splits);
    Comparison all;
    int i = 0;
    for (const int s : splits) {
      const int64_t T = s >= 16 ? 3 : 70;
      const bool norm = (i++ % 2) == 0;
      const std::string what = fmt::format("D={} splits={} T={} norm={}", hidden, s, T, norm);
      const PostPreCase c = make_post_pre_case(T, hidden, 5000 + s);
      const PostPreResult got = run_post_pre(op, *device_, c, norm, s);
      expect_close(compare_new_residual(got.new_residual, c), what);
      const Comparison cmp = check_pre_step(got, c, norm);
      expect_close(cmp, what);
      all.merge(cmp);
    }
    report(fmt::format("cuda post-pre specialized D={} ({} splits)", hidden, splits.size()), all);
  }
}

TEST_F(HcPostPreCuda, GenericEverySplitCount) {
  for (const int hidden : {4096, 7168}) {
    HcPreOp op(Backend::Cuda, {4, hidden}, {}, 132, nullptr, *device_, Variant::Generic);
    Comparison all;
    int i = 0;
    for (const int s : dsv4_split_counts(hidden)) {
      const int64_t T = s >= 16 ? 2 : 67;
      const bool norm = (i++ % 2) == 1;
      const std::string what = fmt::format("generic D={} splits={} T={} norm={}", hidden, s, T, norm);
      const PostPreCase c = make_post_pre_case(T, hidden, 6000 + s);
      const PostPreResult got = run_post_pre(op, *device_, c, norm, s);
      expect_close(compare_new_residual(got.new_residual, c), what);
      const Comparison cmp = check_pre_step(got, c, norm);
      expect_close(cmp, what);
      all.merge(cmp);
    }
    report(fmt::format("cuda post-pre generic D={}", hidden), all);
  }
}

// new_residual == residual: every element is read before it is overwritten,
// so the results equal the out-of-place call's bit for bit.
TEST_F(HcPostPreCuda, InPlaceEqualsOutOfPlace) {
  for (const Variant v : {Variant::Specialized, Variant::Generic}) {
    HcPreOp op(Backend::Cuda, {4, 7168}, {}, 132, v == Variant::Generic ? nullptr : jit_, *device_, v);
    for (const int64_t T : {int64_t{5}, int64_t{300}, int64_t{4500}}) {
      const std::string what = fmt::format("{} T={}", mhc::to_string(v), T);
      const PostPreCase c = make_post_pre_case(T, 7168, 700 + T);
      const PostPreResult out = run_post_pre(op, *device_, c, true);
      const PostPreResult in = run_post_pre(op, *device_, c, true, 0, /*in_place=*/true);
      EXPECT_TRUE(same_bits(in.new_residual, out.new_residual)) << what << ": new residual";
      EXPECT_TRUE(same_bits(in.pre, out.pre)) << what << ": y, post or comb";
    }
  }
}

// Captured on the caller's stream (with its workspace) and replayed: the same
// bits as the eager call.
TEST_F(HcPostPreCuda, GraphReplayEqualsEager) {
  const auto& d = device_->driver();
  const TestStream owned_stream(*device_);
  const cuda::CUstream stream = owned_stream.get();
  ASSERT_NE(stream, nullptr);
  HcPreOp op(Backend::Cuda, {4, 4096}, {}, 132, jit_, *device_);
  for (const int64_t T : {int64_t{1}, int64_t{300}, int64_t{9000}}) {
    const PostPreCase c = make_post_pre_case(T, 4096, 900 + T);
    op.load(op.num_splits(T), true, HcPreInput::Post);  // nothing may compile inside capture
    DeviceBuffer ws(*device_, std::max<size_t>(op.workspace_bytes(T), 16));
    const mhc::LaunchContext launch{stream, ws.get(), ws.bytes()};
    PostPreBuffers b = upload_post_pre(*device_, c, false);
    op.run(post_pre_args(b, true), launch);
    ASSERT_EQ(d.cuStreamSynchronize(stream), cuda::CUDA_SUCCESS);
    const PostPreResult eager = download_post_pre(*device_, b, true);
    for (DeviceBuffer* out : {&b.out, &b.y, &b.post, &b.comb}) device_->fill_zero(out->get(), out->bytes());
    device_->synchronize();

    ASSERT_TRUE(capture_and_replay(*device_, stream, [&] { op.run(post_pre_args(b, true), launch); })) << "T=" << T;
    const PostPreResult replayed = download_post_pre(*device_, b, true);
    EXPECT_TRUE(same_bits(replayed.new_residual, eager.new_residual)) << "T=" << T;
    EXPECT_TRUE(same_bits(replayed.pre, eager.pre)) << "T=" << T;
  }
}

// The kernels move 16 bytes at a time: a Post pointer 2 bytes (x, new_residual)
// or 4 bytes (prev_post, prev_comb) off is refused before anything runs, naming it.
TEST_F(HcPostPreCuda, MisalignedPostPointersAreRefused) {
  const int64_t T = 40;
  HcPreOp op(Backend::Cuda, {4, 4096}, {}, 132, nullptr, *device_, Variant::Generic);
  const PostPreCase c = make_post_pre_case(T, 4096, 41);
  PostPreBuffers b = upload_post_pre(*device_, c, false);
  DeviceBuffer spare(*device_, c.pre.residual.numel() * sizeof(bf16) + 64);
  struct Bad {
    const char* name;
    void (*shift)(mhc::HcPreArgs&, unsigned char*);
  };
  const Bad cases[] = {
      {"x", [](mhc::HcPreArgs& a, unsigned char* s) { a.x = reinterpret_cast<const bf16*>(s + 2); }},
      {"prev_post", [](mhc::HcPreArgs& a, unsigned char* s) { a.prev_post = reinterpret_cast<const float*>(s + 4); }},
      {"prev_comb", [](mhc::HcPreArgs& a, unsigned char* s) { a.prev_comb = reinterpret_cast<const float*>(s + 4); }},
      {"new_residual", [](mhc::HcPreArgs& a, unsigned char* s) { a.new_residual = reinterpret_cast<bf16*>(s + 2); }},
  };
  for (const Bad& k : cases) {
    mhc::HcPreArgs a = post_pre_args(b, true);
    k.shift(a, spare.as<unsigned char>());
    try {
      op.run(a);
      ADD_FAILURE() << k.name << " off 16-byte alignment was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << k.name;
      EXPECT_NE(e.message().find(std::string(k.name) + " is not 16-byte aligned"), std::string::npos) << e.message();
    }
  }
  device_->synchronize();
  const PostPreResult after = download_post_pre(*device_, b, true);
  for (int64_t i = 0; i < after.pre.y.numel(); ++i) ASSERT_EQ(after.pre.y[i].bits, 0xffff) << "y was written";
}

}  // namespace
}  // namespace hcwarm::test
