#pragma once
// Model files and argument lists the CLI tests share.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "core/npy.hpp"

namespace hcwarm::test {

inline const std::string kTraces = std::string(HCWARM_SOURCE_DIR) + "/tests/data/traces/";

// hc 4, D 64: op tests run in milliseconds.
inline std::string small_model(const TempDir& dir) {
  write_file(dir / "config.json", R"({"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 64,
                                      "hc_mult": 4, "num_hidden_layers": 2, "sliding_window": 128})");
  return (dir / "config.json").string();
}

// bf16 tensors travel as float32 files holding bf16 values.
inline HostTensor<float> bf16_as_f32(const HostTensor<bf16>& t) {
  HostTensor<float> o(t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) o[i] = t[i].to_float();
  return o;
}

// The inputs of `op hc-pre --model small_model(...)` in directory `in`: residual.npy
// (tokens, 4, 64) as float32 holding bf16 values, fn, scale, base and, with_norm, norm_weight.
inline void write_hc_pre_inputs(const std::filesystem::path& in, int64_t tokens, bool with_norm, uint64_t seed = 11) {
  std::filesystem::create_directories(in);
  const auto x = random_hc_pre_inputs(tokens, 4, 64, seed);
  const auto f32 = bf16_as_f32;
  write_npy_f32(in / "residual.npy", f32(x.residual));
  write_npy_f32(in / "fn.npy", x.fn);
  write_npy_f32(in / "scale.npy", x.scale);
  write_npy_f32(in / "base.npy", x.base);
  if (with_norm) write_npy_f32(in / "norm_weight.npy", f32(x.norm_weight));
}

// The tiny hybrid model of the runtime tests: three buckets with 8 SMs and 320
// tokens, the CPU backend, and (unless with_cache_dir is false) a cache at dir/cache.
inline std::vector<std::string> tiny_model_args(const TempDir& dir, bool with_cache_dir = true) {
  write_file(dir / "config.json", R"({"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 256,
      "hc_mult": 4, "num_hidden_layers": 2, "sliding_window": 128})");
  std::vector<std::string> a{"--model", (dir / "config.json").string(), "--num-sms", "8", "--chunked-prefill-size",
                             "320", "--backend", "cpu", "--mlp-width", "8"};
  if (with_cache_dir) a.insert(a.end(), {"--cache-dir", (dir / "cache").string()});
  return a;
}

// Every file (its bytes) and directory ("dir") under p, by relative path: a snapshot to compare.
inline std::map<std::string, std::string> tree_snapshot(const std::filesystem::path& p) {
  std::map<std::string, std::string> out;
  if (!std::filesystem::exists(p)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
    out[e.path().lexically_relative(p).string()] = e.is_regular_file() ? read_file(e.path()) : "dir";
  }
  return out;
}

inline std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A machine without a GPU, whatever this one has.
inline const std::string kNoGpu = "HCWARM_CUDA_LIBRARY=/nonexistent/libcuda.so.1";

}  // namespace hcwarm::test

// The helpers every CLI test calls unqualified.
namespace hcwarm {
using test::cat;
using test::run_cli;
using test::small_model;
using test::TempDir;
using test::tiny_model_args;
using test::write_hc_pre_inputs;
}  // namespace hcwarm
