#pragma once
// Model files and argument lists the CLI tests share.
#include <string>
#include <vector>

#include "common/test_util.hpp"

namespace hcwarm::test {

inline const std::string kTraces = std::string(HCWARM_SOURCE_DIR) + "/tests/data/traces/";

// hc 4, D 64: op tests run in milliseconds.
inline std::string small_model(const TempDir& dir) {
  write_file(dir / "config.json", R"({"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 64,
                                      "hc_mult": 4, "num_hidden_layers": 2, "sliding_window": 128})");
  return (dir / "config.json").string();
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

inline std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A machine without a GPU, whatever this one has.
inline const std::string kNoGpu = "HCWARM_CUDA_LIBRARY=/nonexistent/libcuda.so.1";

}  // namespace hcwarm::test
