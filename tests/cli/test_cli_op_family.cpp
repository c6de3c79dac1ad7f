// `hcwarm op hc-post-pre`, `op hc-head` and `op hc-pre` from the first layer's
// embedding: outputs against the float64 reference read back from the same
// files, refusals that name the file and both shapes, all-or-nothing output.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/head_check.hpp"
#include "backends/post_pre_check.hpp"
#include "cli/cli_fixtures.hpp"

namespace hcwarm {
namespace {

namespace fs = std::filesystem;
using test::bf16_as_f32;

HostTensor<bf16> read_bf16(const fs::path& p) {
  const HostTensor<float> f = read_npy_f32(p);
  HostTensor<bf16> out(f.shape());
  for (int64_t i = 0; i < f.numel(); ++i) out[i] = bf16::from_float(f[i]);
  return out;
}

bool same_bits(const HostTensor<bf16>& a, const HostTensor<bf16>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.numel() * sizeof(bf16)) == 0;
}

// The case's files for `op hc-post-pre --model small_model(...)` (hc 4, D 64).
test::PostPreCase write_post_pre_inputs(const fs::path& in, int64_t tokens, bool with_norm, uint64_t seed = 21) {
  fs::create_directories(in);
  test::PostPreCase c = test::make_post_pre_case(tokens, 64, seed);
  write_npy_f32(in / "x.npy", bf16_as_f32(c.x));
  write_npy_f32(in / "residual.npy", bf16_as_f32(c.pre.residual));
  write_npy_f32(in / "prev_post.npy", c.prev_post);
  write_npy_f32(in / "prev_comb.npy", c.prev_comb);
  write_npy_f32(in / "fn.npy", c.pre.fn);
  write_npy_f32(in / "scale.npy", c.pre.scale);
  write_npy_f32(in / "base.npy", c.pre.base);
  if (with_norm) write_npy_f32(in / "norm_weight.npy", bf16_as_f32(c.pre.norm_weight));
  return c;
}

test::HcHeadInputs write_head_inputs(const fs::path& in, int64_t tokens, uint64_t seed = 31) {
  fs::create_directories(in);
  test::HcHeadInputs h = test::random_hc_head_inputs(tokens, 4, 64, seed);
  write_npy_f32(in / "residual.npy", bf16_as_f32(h.residual));
  write_npy_f32(in / "head_fn.npy", h.fn);
  write_npy_f32(in / "head_scale.npy", h.scale);
  write_npy_f32(in / "head_base.npy", h.base);
  return h;
}

mhc::HcPostPreResult read_post_pre_outputs(const fs::path& out) {
  return {read_bf16(out / "new_residual.npy"),
          {read_bf16(out / "y.npy"), read_npy_f32(out / "post.npy"), read_npy_f32(out / "comb.npy"), false}};
}

TEST(CliOp, HcPostPreMatchesTheReferenceOnEveryBackend) {
  TempDir dir;
  const auto model = small_model(dir);
  for (const bool norm : {true, false}) {
    const fs::path in = dir / (norm ? "in-norm" : "in");
    const test::PostPreCase c = write_post_pre_inputs(in, 5, norm);
    const auto ref = test::post_pre_reference(c, norm);
    for (const std::string backend : {"reference", "cpu"}) {
      const fs::path out = dir / ("out-" + backend + (norm ? "-norm" : ""));
      const auto r = run_cli({"op", "hc-post-pre", "--model", model, "--in", in.string(), "--out", out.string(),
                              "--backend", backend, "--cache-dir", (dir / "cache").string()});
      ASSERT_EQ(r.exit_code, 0) << backend << ": " << r.err;
      EXPECT_NE(r.out.find("hc-post-pre: T=5 hc=4 D=64"), std::string::npos) << r.out;
      mhc::HcPostPreResult got = read_post_pre_outputs(out);
      got.pre.norm_fused = norm;
      if (backend == "reference") {
        EXPECT_TRUE(same_bits(got.new_residual, ref.new_residual));
        EXPECT_TRUE(same_bits(got.pre.y, ref.pre.y));
        EXPECT_EQ(std::memcmp(got.pre.comb.data(), ref.pre.comb.data(), ref.pre.comb.numel() * sizeof(float)), 0);
      } else {
        test::expect_post_pre_close(got, ref, c, 0, backend);
      }
    }
  }
}

TEST(CliOp, HcHeadMatchesTheReference) {
  TempDir dir;
  const auto model = small_model(dir);
  const test::HcHeadInputs h = write_head_inputs(dir / "in", 6);
  for (const std::string backend : {"reference", "cpu"}) {
    const fs::path out = dir / ("out-" + backend);
    const auto r = run_cli({"op", "hc-head", "--model", model, "--in", (dir / "in").string(), "--out", out.string(),
                            "--backend", backend});
    ASSERT_EQ(r.exit_code, 0) << backend << ": " << r.err;
    const HostTensor<bf16> y = read_bf16(out / "y.npy");
    ASSERT_EQ(y.shape(), Shape({6, 64}));
    if (backend == "reference") {
      EXPECT_TRUE(same_bits(y, mhc::hc_head_reference(h.residual, h.fn, h.scale, h.base, {})));
    } else {
      test::expect_head_close(test::compare_head(y, h), backend);
    }
  }
}

// A (T, D) residual.npy is the first layer's embedding: the same outputs as hc-pre on its hc copies.
TEST(CliOp, HcPreTakesTheEmbeddingAsATwoDimensionalResidual) {
  TempDir dir;
  const auto model = small_model(dir);
  write_hc_pre_inputs(dir / "copies", 4, true);
  fs::create_directories(dir / "embed");
  for (const char* f : {"fn.npy", "scale.npy", "base.npy", "norm_weight.npy"}) {
    fs::copy_file(dir / "copies" / f, dir / "embed" / f);
  }
  const HostTensor<bf16> e = read_bf16(dir / "copies" / "residual.npy");  // (4, 4, 64): stream 0 becomes the embedding
  HostTensor<bf16> embed({4, 64});
  for (int64_t t = 0; t < 4; ++t) std::copy_n(e.data() + t * 4 * 64, 64, embed.data() + t * 64);
  write_npy_f32(dir / "embed" / "residual.npy", bf16_as_f32(embed));
  write_npy_f32(dir / "copies" / "residual.npy", bf16_as_f32(mhc::broadcast_streams(embed, 4)));
  for (const std::string backend : {"reference", "cpu"}) {
    for (const char* kind : {"embed", "copies"}) {
      const auto r = run_cli({"op", "hc-pre", "--model", model, "--in", (dir / kind).string(), "--out",
                              (dir / ("out-" + backend + "-" + kind)).string(), "--backend", backend, "--cache-dir",
                              (dir / "cache").string()});
      ASSERT_EQ(r.exit_code, 0) << backend << " " << kind << ": " << r.err;
      EXPECT_NE(r.out.find(std::string("input=") + (std::string(kind) == "embed" ? "embed" : "residual")),
                std::string::npos)
          << r.out;
    }
    for (const char* f : {"y.npy", "post.npy", "comb.npy"}) {
      EXPECT_EQ(test::read_file(dir / ("out-" + backend + "-embed") / f),
                test::read_file(dir / ("out-" + backend + "-copies") / f))
          << backend << " " << f;
    }
  }
}

struct Spoil {
  std::string name;
  std::function<void(const fs::path&)> spoil;
  std::vector<std::string> needles;  // all in the message
};

void expect_refused(const std::string& op, const std::vector<Spoil>& cases,
                    const std::function<void(const fs::path&)>& write, const std::vector<std::string>& outputs) {
  TempDir dir;
  const auto model = small_model(dir);
  for (const auto& c : cases) {
    const fs::path in = dir / ("in-" + std::to_string(&c - cases.data()));
    const fs::path out = dir / ("out-" + std::to_string(&c - cases.data()));
    write(in);
    c.spoil(in);
    const auto r = run_cli({"op", op, "--model", model, "--in", in.string(), "--out", out.string(), "--backend",
                            "cpu", "--cache-dir", (dir / "cache").string()});
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err;
    for (const auto& n : c.needles) EXPECT_NE(r.err.find(n), std::string::npos) << c.name << ": " << r.err;
    for (const auto& f : outputs) EXPECT_FALSE(fs::exists(out / f)) << c.name << ": " << f;
  }
}

TEST(CliOp, HcPostPreRefusesBadInputNamingTheFileAndWritesNothing) {
  const std::vector<Spoil> cases{
      {"x rows", [](auto& in) { write_npy_f32(in / "x.npy", HostTensor<float>({4, 64})); },
       {"x.npy", "(4, 64)", "(3, 64)", "(3, 4, 64)"}},
      {"prev_post", [](auto& in) { write_npy_f32(in / "prev_post.npy", HostTensor<float>({3, 3})); },
       {"prev_post.npy", "(3, 3)", "(3, 4)"}},
      {"prev_comb", [](auto& in) { write_npy_f32(in / "prev_comb.npy", HostTensor<float>({3, 4})); },
       {"prev_comb.npy", "(3, 4)", "(3, 4, 4)"}},
      {"missing prev_comb", [](auto& in) { fs::remove(in / "prev_comb.npy"); }, {"prev_comb.npy"}},
      {"embedding residual", [](auto& in) { write_npy_f32(in / "residual.npy", HostTensor<float>({3, 64})); },
       {"residual.npy", "(T, hc, D)", "(3, 64)"}},
      {"model width", [](auto& in) { write_npy_f32(in / "residual.npy", HostTensor<float>({3, 4, 32})); },
       {"residual.npy", "does not match model"}},
      {"fn", [](auto& in) { write_npy_f32(in / "fn.npy", HostTensor<float>({24, 64})); }, {"fn must have shape"}},
  };
  expect_refused("hc-post-pre", cases, [](const fs::path& in) { write_post_pre_inputs(in, 3, true); },
                 {"new_residual.npy", "y.npy", "post.npy", "comb.npy"});
}

TEST(CliOp, HcHeadRefusesBadInputNamingTheFileAndWritesNothing) {
  const std::vector<Spoil> cases{
      {"head_fn", [](auto& in) { write_npy_f32(in / "head_fn.npy", HostTensor<float>({24, 256})); },
       {"head_fn.npy", "(24, 256)", "(4, 256)", "(3, 4, 64)"}},
      {"head_scale", [](auto& in) { write_npy_f32(in / "head_scale.npy", HostTensor<float>({3})); },
       {"head_scale.npy", "(3,)", "(1,)"}},
      {"missing head_base", [](auto& in) { fs::remove(in / "head_base.npy"); }, {"head_base.npy"}},
  };
  expect_refused("hc-head", cases, [](const fs::path& in) { write_head_inputs(in, 3); }, {"y.npy"});
}

TEST(CliOp, HcPreRefusesAResidualOfOtherRank) {
  const std::vector<Spoil> cases{
      {"rank 4", [](auto& in) { write_npy_f32(in / "residual.npy", HostTensor<float>({3, 4, 64, 1})); },
       {"residual.npy", "(T, D)", "(3, 4, 64, 1)"}},
      {"embedding width", [](auto& in) { write_npy_f32(in / "residual.npy", HostTensor<float>({3, 32})); },
       {"residual.npy", "does not match model"}},
  };
  expect_refused("hc-pre", cases, [](const fs::path& in) { write_hc_pre_inputs(in, 3, true); },
                 {"y.npy", "post.npy", "comb.npy"});
}

TEST(CliOp, HelpNamesEveryFileOfEachOp) {
  const auto post_pre = run_cli({"op", "hc-post-pre", "--help"});
  EXPECT_EQ(post_pre.exit_code, 0);
  for (const char* f : {"x.npy", "residual.npy", "prev_post.npy", "prev_comb.npy", "fn.npy", "norm_weight.npy",
                        "new_residual.npy", "y.npy", "comb.npy"}) {
    EXPECT_NE(post_pre.out.find(f), std::string::npos) << f << "\n" << post_pre.out;
  }
  const auto head = run_cli({"op", "hc-head", "--help"});
  EXPECT_EQ(head.exit_code, 0);
  for (const char* f : {"residual.npy", "head_fn.npy", "head_scale.npy", "head_base.npy", "y.npy"}) {
    EXPECT_NE(head.out.find(f), std::string::npos) << f << "\n" << head.out;
  }
  EXPECT_NE(run_cli({"op", "hc-pre", "--help"}).out.find("(T, D)"), std::string::npos);
  EXPECT_EQ(run_cli({"op", "hc-head", "--num-sms", "8", "--in", "a", "--out", "b"}).exit_code, 2)
      << "hc-head has no split buckets: --num-sms is an unknown option";
}

}  // namespace
}  // namespace hcwarm
