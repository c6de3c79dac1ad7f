// The fused sublayer boundary (hc_pre input Post: hc_post of one sublayer, then
// hc_pre of the next on the stored bf16 new residual) on the CPU: against the
// float64 reference at DeepSeek V4 widths, against the unfused pair, in place,
// at every split count, its keys, and bad input.
#include <gtest/gtest.h>

#include <cstring>

#include "common/jit_fixtures.hpp"
#include "backends/cpu/mhc_pre_cpu.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_post_op.hpp"
#include "mhc/hc_post_pre.hpp"
#include "post_pre_check.hpp"

namespace hcwarm::test {
namespace {

using mhc::Backend;
using mhc::HcPreInput;
using mhc::HcPreOp;
using mhc::Variant;

// The CPU stores the new residual from the reference's own double sum: bit for bit.
constexpr int64_t kCpuResidualUlps = 0;

bool same_bits(const HostTensor<bf16>& a, const HostTensor<bf16>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.numel() * sizeof(bf16)) == 0;
}

void expect_same_boundary(const mhc::HcPostPreResult& a, const mhc::HcPostPreResult& b, const std::string& what) {
  EXPECT_TRUE(same_bits(a.new_residual, b.new_residual)) << what << ": new_residual";
  EXPECT_TRUE(same_bits(a.pre.y, b.pre.y)) << what << ": y";
  EXPECT_EQ(std::memcmp(a.pre.post.data(), b.pre.post.data(), a.pre.post.numel() * sizeof(float)), 0) << what;
  EXPECT_EQ(std::memcmp(a.pre.comb.data(), b.pre.comb.data(), a.pre.comb.numel() * sizeof(float)), 0) << what;
}

TEST(HcPostPre, ReferenceIsThePostStepRoundedThenThePreStep) {
  const PostPreCase c = make_post_pre_case(3, 64, 11);
  const auto r = post_pre_reference(c, true);
  // One element by hand: new_residual[t, j, d] = bf16(post[t, j] x[t, d] + sum_i comb[t, i, j] residual[t, i, d]).
  const int64_t t = 2, j = 1, d = 17, D = 64, hc = 4;
  double want = static_cast<double>(c.prev_post[t * hc + j]) * c.x[t * D + d].to_float();
  for (int64_t i = 0; i < hc; ++i) {
    want += static_cast<double>(c.prev_comb[(t * hc + i) * hc + j]) * c.pre.residual[(t * hc + i) * D + d].to_float();
  }
  EXPECT_EQ(r.new_residual[(t * hc + j) * D + d], bf16::from_float(static_cast<float>(want)));
  EXPECT_TRUE(same_bits(r.new_residual, mhc::hc_post_reference(c.x, c.pre.residual, c.prev_post, c.prev_comb)));
  const auto pre = reference_of(next_inputs(c, r.new_residual), true);
  EXPECT_TRUE(same_bits(r.pre.y, pre.y)) << "the pre step runs on the rounded new residual";

  // A mismatched input names itself and both shapes.
  const auto throws_naming = [&](auto&& call, const std::string& needle) {
    try {
      call();
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("(3, 4, 64)"), std::string::npos) << e.message();
    }
  };
  const HostTensor<bf16> bad_x({3, 32});
  const HostTensor<float> bad_post({3, 3}), bad_comb({3, 4, 3});
  throws_naming([&] { mhc::hc_post_pre_reference(bad_x, c.pre.residual, c.prev_post, c.prev_comb, c.pre.fn,
                                                 c.pre.scale, c.pre.base, nullptr, {}); },
                "x must have shape (3, 64)");
  throws_naming([&] { mhc::hc_post_pre_reference(c.x, c.pre.residual, bad_post, c.prev_comb, c.pre.fn, c.pre.scale,
                                                 c.pre.base, nullptr, {}); },
                "prev_post must have shape (3, 4)");
  throws_naming([&] { mhc::hc_post_pre_reference(c.x, c.pre.residual, c.prev_post, bad_comb, c.pre.fn, c.pre.scale,
                                                 c.pre.base, nullptr, {}); },
                "prev_comb must have shape (3, 4, 4)");
}

// DeepSeek V4 Flash and Pro widths, token counts across the buckets of 132 SMs
// (T 1-64: the most splits, 65: the next, 300: 26, 2048: 4), both kernel variants.
TEST(HcPostPre, CpuMatchesTheReferenceAtDsv4Widths) {
  CpuDevice dev;
  jit::JitRuntime jit(memory_only_jit());
  for (const int hidden : {4096, 7168}) {
    HcPreOp spec(Backend::Cpu, {4, hidden}, {}, 132, &jit, dev, Variant::Specialized);
    HcPreOp generic(Backend::Cpu, {4, hidden}, {}, 132, nullptr, dev, Variant::Generic);
    spec.set_tiered(false);
    for (const int64_t T : {int64_t{1}, int64_t{37}, int64_t{64}, int64_t{65}, int64_t{300}, int64_t{2048}}) {
      const PostPreCase c = make_post_pre_case(T, hidden, 100 + T);
      // Without the norm once (each norm flag is a compile of its own): it changes the finish stage alone.
      for (const bool norm : {true, false}) {
        if (!norm && (T != 37 || hidden != 4096)) continue;
        const auto ref = post_pre_reference(c, norm);
        for (HcPreOp* op : {&spec, &generic}) {
          const std::string what = std::string(to_string(op->variant())) + " D=" + std::to_string(hidden) +
                                   " T=" + std::to_string(T) + (norm ? " norm" : "");
          expect_post_pre_close(run_post_pre(*op, dev, c, norm), ref, c, kCpuResidualUlps, what);
        }
      }
    }
  }
}

// Fused against hc_post then hc_pre: the same stored new residual (one post step,
// cpu/mhc_post.hpp), and y / post / comb equal up to the f32 summation order of
// the GEMM (the boundary partitions K by hidden position, hc_pre by column), so
// held to hc_pre's tolerances against the unfused outputs.
TEST(HcPostPre, FusedEqualsHcPostThenHcPre) {
  CpuDevice dev;
  jit::JitRuntime jit(memory_only_jit());
  const int hidden = 1024;  // K 4096: T 3 and 130 share the 16-split bucket (two compiles: residual and post)
  auto pool = std::make_shared<ThreadPool>(2);
  mhc::HcPostOp post_op({4, hidden}, dev, nullptr, "", pool);
  for (const Variant v : {Variant::Specialized, Variant::Generic}) {
    HcPreOp op(Backend::Cpu, {4, hidden}, {}, 132, &jit, dev, v);
    op.set_tiered(false);
    for (const int64_t T : {int64_t{3}, int64_t{130}}) {
      const PostPreCase c = make_post_pre_case(T, hidden, 7 + T);
      const std::string what = std::string(to_string(v)) + " T=" + std::to_string(T);
      // The unfused pair, on the device as a serving engine would run it.
      const size_t res_bytes = c.pre.residual.numel() * sizeof(bf16);
      DeviceBuffer x(dev, c.x.numel() * sizeof(bf16)), res(dev, res_bytes), out(dev, res_bytes);
      DeviceBuffer pp(dev, c.prev_post.numel() * sizeof(float)), pc(dev, c.prev_comb.numel() * sizeof(float));
      dev.copy_from_host(x.get(), c.x.data(), c.x.numel() * sizeof(bf16));
      dev.copy_from_host(res.get(), c.pre.residual.data(), res_bytes);
      dev.copy_from_host(pp.get(), c.prev_post.data(), c.prev_post.numel() * sizeof(float));
      dev.copy_from_host(pc.get(), c.prev_comb.data(), c.prev_comb.numel() * sizeof(float));
      post_op.run(T, x.as<bf16>(), res.as<bf16>(), pp.as<float>(), pc.as<float>(), out.as<bf16>());
      dev.synchronize();
      HostTensor<bf16> next(c.pre.residual.shape());
      dev.copy_to_host(next.data(), out.get(), res_bytes);
      const HcPreInputs next_in = next_inputs(c, next);
      const auto unfused = run_op(op, dev, next_in, true);

      const auto fused = run_post_pre(op, dev, c, true);
      EXPECT_TRUE(same_bits(fused.new_residual, next)) << what << ": new residual differs from hc_post's";
      EXPECT_TRUE(same_bits(next, mhc::hc_post_reference(c.x, c.pre.residual, c.prev_post, c.prev_comb)))
          << what << ": the CPU hc_post stores the reference's bits";
      expect_close(compare(fused.pre, unfused, next_in), what + " fused vs unfused");
    }
  }
}

// new_residual == residual: every element is read before it is written, so the
// in-place call equals the out-of-place one bit for bit (threads split hidden positions).
TEST(HcPostPre, InPlaceEqualsOutOfPlace) {
  CpuDevice dev;
  jit::JitRuntime jit(memory_only_jit());
  for (const Backend b : {Backend::Cpu, Backend::Reference}) {
    for (const Variant v : {Variant::Specialized, Variant::Generic}) {
      if (b == Backend::Reference && v == Variant::Generic) continue;
      HcPreOp op(b, {4, 256}, {}, 132, b == Backend::Cpu ? &jit : nullptr, dev, v);
      op.set_tiered(false);
      for (const int64_t T : {int64_t{5}, int64_t{130}}) {
        const PostPreCase c = make_post_pre_case(T, 256, 50 + T);
        const std::string what = std::string(to_string(b)) + " " + to_string(v) + " T=" + std::to_string(T);
        if (b == Backend::Cpu && v == Variant::Specialized && T == 5) {
          EXPECT_FALSE(op.specialized_loaded(T, true, HcPreInput::Post)) << what;  // T 5 and 130: one bucket (4 splits)
        }
        const auto apart = run_post_pre(op, dev, c, true);
        const auto in_place = run_post_pre(op, dev, c, true, /*in_place=*/true);
        expect_same_boundary(in_place, apart, what);
        expect_post_pre_close(apart, post_pre_reference(c, true), c, kCpuResidualUlps, what);
        if (b == Backend::Cpu && v == Variant::Specialized) {
          EXPECT_TRUE(op.specialized_loaded(T, true, HcPreInput::Post)) << what;
          EXPECT_FALSE(op.specialized_loaded(T, true, HcPreInput::Residual)) << what << ": keys are per input";
        }
      }
    }
  }
}

// Any split count partitions the hidden positions: more splits than lane groups
// (D 256: 16 groups) leave some splits empty, and every element is still stored once.
TEST(HcPostPre, EverySplitCountStoresEveryElementOnce) {
  CpuDevice dev;
  HcPreOp op(Backend::Cpu, {4, 256}, {}, 132, nullptr, dev, Variant::Generic);
  const PostPreCase c = make_post_pre_case(9, 256, 3);
  const auto ref = post_pre_reference(c, false);
  for (const int s : {1, 3, 7, 16, 17, 64, 112}) {
    expect_post_pre_close(run_post_pre(op, dev, c, false, /*in_place=*/true, s), ref, c, kCpuResidualUlps,
                          "num_splits " + std::to_string(s));
  }
}

TEST(HcPostPre, MissingOrOverlappingPointersAreNamedAndNothingIsWritten) {
  CpuDevice dev;
  HcPreOp op(Backend::Cpu, {4, 64}, {}, 132, nullptr, dev, Variant::Generic);
  const PostPreCase c = make_post_pre_case(2, 64, 4);
  HostTensor<bf16> res = c.pre.residual, out({2, 4, 64}), y({2, 64});
  std::vector<float> post(8, -1.0f), comb(32, -1.0f);
  for (auto& v : out.vec()) v = bf16::from_bits(0x1234);
  for (auto& v : y.vec()) v = bf16::from_bits(0x1234);
  auto args = [&] {
    mhc::HcPreArgs a;
    a.num_tokens = 2;
    a.input = HcPreInput::Post;
    a.x = c.x.data();
    a.residual = res.data();
    a.prev_post = c.prev_post.data();
    a.prev_comb = c.prev_comb.data();
    a.new_residual = out.data();
    a.fn = c.pre.fn.data();
    a.scale = c.pre.scale.data();
    a.base = c.pre.base.data();
    a.y = y.data();
    a.post = post.data();
    a.comb = comb.data();
    return a;
  };
  const auto refused = [&](mhc::HcPreArgs a, const std::string& needle) {
    try {
      op.run(a);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
    }
    for (const auto v : out.vec()) ASSERT_EQ(v.bits, 0x1234) << needle;
    for (const auto v : y.vec()) ASSERT_EQ(v.bits, 0x1234) << needle;
    EXPECT_TRUE(same_bits(res, c.pre.residual)) << needle;
    for (const float v : post) ASSERT_EQ(v, -1.0f) << needle;
  };
  auto a = args();
  a.x = nullptr;
  refused(a, "x is null");
  a = args();
  a.prev_post = nullptr;
  refused(a, "prev_post is null");
  a = args();
  a.prev_comb = nullptr;
  refused(a, "prev_comb is null");
  a = args();
  a.new_residual = nullptr;
  refused(a, "new_residual is null");
  a = args();
  a.y = nullptr;
  refused(a, "y is null");
  a = args();
  a.new_residual = res.data() + 64;  // one stream further: overlaps without being the residual
  refused(a, "overlaps residual");
  // The host runner checks shapes first, naming the tensor.
  EXPECT_THROW(mhc::run_hc_post_pre_host(op, dev, HostTensor<bf16>({2, 32}), c.pre.residual, c.prev_post, c.prev_comb,
                                         c.pre.fn, c.pre.scale, c.pre.base, nullptr),
               Error);
}

// The kernels themselves refuse a boundary call without its pointers (and an
// unknown input), writing nothing: the library's checks are not the only guard.
TEST(HcPostPre, KernelsRefuseAPostCallWithoutItsPointers) {
  const PostPreCase c = make_post_pre_case(2, 64, 9);
  std::vector<uint16_t> y(2 * 64, 0x1234), out(2 * 4 * 64, 0x1234);
  std::vector<float> post(8), comb(32), partials(2 * 2 * hcwarm_mhc::kPartialStride);
  hcwarm_mhc_pre_params p{};
  p.num_tokens = 2;
  p.residual = reinterpret_cast<const unsigned short*>(c.pre.residual.data());
  p.fn = c.pre.fn.data();
  p.scale = c.pre.scale.data();
  p.base = c.pre.base.data();
  p.y = y.data();
  p.post = post.data();
  p.comb = comb.data();
  p.partials = partials.data();
  p.num_splits = 2;
  p.num_parts = 2;
  p.hc_mult = 4;
  p.hidden = 64;
  p.sinkhorn_iters = 20;
  p.input = hcwarm_mhc::kInputPost;
  p.post_x = reinterpret_cast<const unsigned short*>(c.x.data());
  p.prev_post = c.prev_post.data();
  p.prev_comb = c.prev_comb.data();
  p.residual_out = out.data();
  ThreadPool pool(1);
  const auto kernels = cpu::mhc_pre_generic_host_kernels(4, false);
  for (int missing = 0; missing < 4; ++missing) {
    hcwarm_mhc_pre_params q = p;
    if (missing == 0) q.post_x = nullptr;
    if (missing == 1) q.prev_post = nullptr;
    if (missing == 2) q.prev_comb = nullptr;
    if (missing == 3) q.residual_out = nullptr;
    EXPECT_EQ(cpu::launch_mhc_pre_host(kernels, q, pool), hcwarm_mhc::kBadArgument) << missing;
  }
  for (const uint16_t v : y) ASSERT_EQ(v, 0x1234);
  for (const uint16_t v : out) ASSERT_EQ(v, 0x1234);
  EXPECT_EQ(cpu::launch_mhc_pre_host(kernels, p, pool), hcwarm_mhc::kOk) << "complete, the same call runs";
}

TEST(HcPostPre, KeysCarryInputPostOnePerBucket) {
  for (const Backend b : {Backend::Cpu, Backend::Cuda}) {
    const auto res = mhc::hc_pre_kernel_spec(b, {4, 4096}, 1, true);
    const auto emb = mhc::hc_pre_kernel_spec(b, {4, 4096}, 1, true, {}, HcPreInput::Embed);
    const auto post = mhc::hc_pre_kernel_spec(b, {4, 4096}, 1, true, {}, HcPreInput::Post);
    EXPECT_EQ(post.param("input"), "post");
    EXPECT_EQ(post.param("one_pass"), "") << "the boundary never takes the one-pass kernel";
    EXPECT_EQ(post.family, "mhc_pre");
    EXPECT_NE(post.describe(), res.describe());
    EXPECT_NE(post.describe(), emb.describe());
  }
  const auto cpu_post = mhc::hc_pre_kernel_spec(Backend::Cpu, {4, 4096}, 4, true, {}, HcPreInput::Post);
  EXPECT_NE(cpu_post.source.find(", 4, 4096, true, hcwarm_mhc::kInputPost>"), std::string::npos) << cpu_post.source;
  const auto specs = mhc::hc_pre_planned_specs(Backend::Cpu, {4, 7168}, 132, 16384, true, {}, HcPreInput::Post);
  EXPECT_EQ(specs.size(), mhc::hc_pre_planned_specs(Backend::Cpu, {4, 7168}, 132, 16384, true).size());
  for (const auto& s : specs) EXPECT_EQ(s.param("input"), "post");
  EXPECT_THROW(cpu::mhc_pre_cpu_source(4, 4, 4096, true, hcwarm_mhc::kInputRuntime), Error)
      << "a specialization has one input kind";
  for (const HcPreInput i : {HcPreInput::Residual, HcPreInput::Embed, HcPreInput::Post}) {
    EXPECT_EQ(mhc::parse_hc_pre_input(mhc::to_string(i)), i);
  }
  EXPECT_EQ(mhc::parse_hc_pre_input(""), HcPreInput::Residual) << "residual keys carry no input param";
  EXPECT_THROW(mhc::parse_hc_pre_input("posts"), Error);
}

TEST(HcPostPre, CudaFusesTheDecodeBucketsAndPlansOnlyThem) {
  // The buckets of the split cap fuse: at hidden 4096 on 132 SMs T <= 128 (64
  // splits for one and two tiles), at 7168 T <= 64 (112 splits, then 66); beyond,
  // hc_post + hc_pre. At least one tile whatever the SMs; the CPU always fuses.
  const mhc::MhcDims flash{4, 4096}, pro{4, 7168};
  EXPECT_TRUE(mhc::boundary_fuses(Backend::Cuda, flash, 132, 1));
  EXPECT_TRUE(mhc::boundary_fuses(Backend::Cuda, flash, 132, 128));
  EXPECT_FALSE(mhc::boundary_fuses(Backend::Cuda, flash, 132, 129));
  EXPECT_TRUE(mhc::boundary_fuses(Backend::Cuda, pro, 132, 64));
  EXPECT_FALSE(mhc::boundary_fuses(Backend::Cuda, pro, 132, 65));
  EXPECT_EQ(mhc::fused_boundary_max_tokens(Backend::Cuda, flash, 148), 128);
  EXPECT_EQ(mhc::fused_boundary_max_tokens(Backend::Cuda, pro, 148), 64);
  EXPECT_EQ(mhc::fused_boundary_max_tokens(Backend::Cuda, pro, 16), 64) << "fewer SMs than the cap: one tile";
  EXPECT_EQ(mhc::fused_boundary_max_tokens(Backend::Cuda, {4, 64}, 132), 64) << "a cap of 1 split: one tile";
  EXPECT_TRUE(mhc::boundary_fuses(Backend::Cpu, pro, 132, 16384));
  for (const int hidden : {4096, 7168}) {
    const mhc::MhcDims d{4, hidden};
    const auto post = mhc::hc_pre_planned_specs(Backend::Cuda, d, 132, 16384, true, {}, HcPreInput::Post);
    // The plan of the fused buckets is the plan of T in [1, 128]: what run_hc_post_pre fuses at.
    const auto decode = mhc::hc_pre_planned_specs(Backend::Cuda, d, 132, 128, true, {}, HcPreInput::Post);
    ASSERT_EQ(post.size(), decode.size()) << hidden;
    for (size_t i = 0; i < post.size(); ++i) EXPECT_EQ(post[i].describe(), decode[i].describe());
    // K 16384 caps both tiles at 64 splits; K 28672 has 112 and 66: one split class either way.
    EXPECT_EQ(post.size(), 1u) << hidden;
    EXPECT_EQ(post[0].param("splits"), "22+") << hidden;
  }
}

}  // namespace
}  // namespace hcwarm::test
