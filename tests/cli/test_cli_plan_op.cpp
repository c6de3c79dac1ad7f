#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_fixtures.hpp"
#include "common/test_util.hpp"
#include "core/npy.hpp"
#include "mhc/reference.hpp"

namespace hcwarm {
namespace {

TEST(CliPlan, ProOnH200ListsTheReferenceBuckets) {
  const auto r = run_cli({"plan", "--model", "dsv4-pro", "--num-sms", "132", "--chunked-prefill-size", "16384"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("22 split buckets"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("representatives: 16384, 4224, 2816, 2112, 1664, 1408, 1152, 1024, 896, 832, 768, 704, 640, "
                       "576, 512, 448, 384, 320, 256, 192, 128, 64"),
            std::string::npos)
      << r.out;
}

TEST(CliPlan, JsonHasTheDocumentedFields) {
  const auto r = run_cli({"plan", "--model", "dsv4-flash", "--num-sms", "148", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["hc_hidden_size"], 16384);
  EXPECT_EQ(j["num_sms"], 148);
  EXPECT_EQ(j["max_num_tokens"], 8192);
  ASSERT_TRUE(j["representatives"].is_array());
  ASSERT_EQ(j["buckets"].size(), j["representatives"].size());
  for (const auto& b : j["buckets"]) {
    for (const char* k : {"num_splits", "min_tokens", "max_tokens", "representative"}) EXPECT_TRUE(b.contains(k)) << k;
  }
}

TEST(CliPlan, DpAttentionPlanCoversPerRankTokens) {
  const auto r = run_cli({"plan", "--model", "dsv4-pro", "--dp-size", "2", "--enable-dp-attention",
                          "--chunked-prefill-size", "16384", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["max_num_tokens"], 8192);
  EXPECT_EQ(j["representatives"][0], 8192);
  EXPECT_NE(r.err.find("8192"), std::string::npos) << r.err;  // the warning states the new value
}

// Without a GPU, plan says in words which GPU it plans for and whose keys it lists.
TEST(CliPlan, WithoutAGpuSaysWhichGpuAndBackendItPlansFor) {
  const auto r = run_cli({"plan"}, {test::kNoGpu});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no GPU found"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("132 SMs (H200 default; --num-sms or HCWARM_NUM_SMS to change)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu backend"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--backend cuda"), std::string::npos) << r.out;  // how to list the GPU's keys instead

  const auto env = run_cli({"plan"}, {test::kNoGpu, "HCWARM_NUM_SMS=100"});
  ASSERT_EQ(env.exit_code, 0) << env.err;
  EXPECT_NE(env.out.find("100 SMs (HCWARM_NUM_SMS)"), std::string::npos) << env.out;
  const auto opt = run_cli({"plan", "--num-sms", "148", "--backend", "cuda"}, {test::kNoGpu});
  ASSERT_EQ(opt.exit_code, 0) << opt.err;
  EXPECT_NE(opt.out.find("148 SMs (--num-sms)"), std::string::npos) << opt.out;
  EXPECT_NE(opt.out.find("cuda backend (--backend)"), std::string::npos) << opt.out;
  const auto ref = run_cli({"plan", "--backend", "reference"}, {test::kNoGpu});
  EXPECT_NE(ref.out.find("the reference backend compiles no kernels"), std::string::npos) << ref.out;

  const auto j = nlohmann::json::parse(run_cli({"plan", "--json"}, {test::kNoGpu}).out);
  EXPECT_TRUE(j.contains("gpu") && j["gpu"].is_null()) << j.dump();
  EXPECT_EQ(j["num_sms"], 132);
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["backend_source"], "default without a GPU");
}

TEST(CliPlan, BadModelFileExitsTwoNamingFileAndField) {
  TempDir dir;
  test::write_file(dir / "config.json", R"({"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 64,
                                             "hc_mult": 0, "num_hidden_layers": 2})");
  const auto r = run_cli({"plan", "--model", (dir / "config.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("config.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hc_mult"), std::string::npos) << r.err;
  EXPECT_EQ(run_cli({"plan", "--model", "no-such-model"}).exit_code, 2);
  EXPECT_EQ(run_cli({"plan", "--num-sms", "0"}).exit_code, 2);
  EXPECT_EQ(run_cli({"plan", "--num-sms", "many"}).exit_code, 2);
}

TEST(CliOp, HcPreReferenceWritesOutputs) {
  TempDir dir;
  const auto model = small_model(dir);
  write_hc_pre_inputs(dir / "in", 5, true);
  const auto r = run_cli({"op", "hc-pre", "--model", model, "--in", (dir / "in").string(), "--out",
                          (dir / "out").string(), "--backend", "reference"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy_f32(dir / "out" / "y.npy").shape(), Shape({5, 64}));
  EXPECT_EQ(read_npy_f32(dir / "out" / "post.npy").shape(), Shape({5, 4}));
  EXPECT_EQ(read_npy_f32(dir / "out" / "comb.npy").shape(), Shape({5, 4, 4}));
}

TEST(CliOp, BadInputsExitTwoAndWriteNothing) {
  TempDir dir;
  const auto model = small_model(dir);
  struct Case {
    std::string name;
    std::function<void(const std::filesystem::path&)> spoil;
    std::string needle;
  };
  const std::vector<Case> cases{
      {"missing fn", [](auto& in) { std::filesystem::remove(in / "fn.npy"); }, "fn.npy"},
      {"wrong shape", [](auto& in) { write_npy_f32(in / "base.npy", HostTensor<float>({23})); }, "base"},
      {"wrong dtype",
       [](auto& in) {
         std::string b = encode_npy_f32(HostTensor<float>({3}));
         b.replace(b.find("<f4"), 3, "<f8");
         test::write_file(in / "scale.npy", b);
       },
       "scale.npy"},
      {"truncated",
       [](auto& in) {
         std::string b = test::read_file(in / "residual.npy");
         test::write_file(in / "residual.npy", b.substr(0, b.size() - 7));
       },
       "truncated"},
      {"not npy", [](auto& in) { test::write_file(in / "fn.npy", "garbage"); }, "not a .npy"},
      {"big endian",
       [](auto& in) {
         std::string b = test::read_file(in / "scale.npy");
         b.replace(b.find("<f4"), 3, ">f4");
         test::write_file(in / "scale.npy", b);
       },
       "big-endian"},
      {"fortran",
       [](auto& in) {
         std::string b = test::read_file(in / "fn.npy");
         b.replace(b.find("False"), 5, "True ");
         test::write_file(in / "fn.npy", b);
       },
       "Fortran"},
      {"model mismatch", [](auto& in) { write_npy_f32(in / "residual.npy", HostTensor<float>({2, 4, 32})); },
       "does not match model"},
  };
  for (const auto& c : cases) {
    const auto in = dir / ("in-" + std::to_string(&c - cases.data()));
    const auto out = dir / ("out-" + std::to_string(&c - cases.data()));
    write_hc_pre_inputs(in, 3, true);
    c.spoil(in);
    const auto r = run_cli({"op", "hc-pre", "--model", model, "--in", in.string(), "--out", out.string(),
                            "--backend", "reference"});
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.name << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(out / "y.npy")) << c.name;
    EXPECT_FALSE(std::filesystem::exists(out / "post.npy")) << c.name;
  }
  const auto r = run_cli({"op", "hc-pre", "--model", model, "--in", (dir / "none").string(), "--out",
                          (dir / "o").string()});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace hcwarm
