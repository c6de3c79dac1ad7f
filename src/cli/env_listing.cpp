#include "cli/env_listing.hpp"

#include <algorithm>
#include <thread>

#include "jit/cache_trust.hpp"

namespace hcwarm::cli {

std::vector<EnvSetting> env_settings(const EnvConfig& env) {
  auto b = [](bool v) { return std::string(v ? "1" : "0"); };
  auto given = [&](const char* name) { return std::find(env.given.begin(), env.given.end(), name) != env.given.end(); };
  std::string trusted_keys;
  for (const auto& k : env.bundle_trusted_keys) {
    if (!trusted_keys.empty()) trusted_keys += ':';
    trusted_keys += k.string();
  }
  std::vector<EnvSetting> s{
      {"HCWARM_CACHE_DIR", env.cache_dir ? env.cache_dir->string() : "", false,
       env.cache_dir ? "" : "empty: the disk cache is disabled"},
      {"HCWARM_CACHE_MAX_MB", std::to_string(env.cache_max_bytes >> 20), false, ""},
      {"HCWARM_CACHE_TRUST", jit::CacheTrust::from_env(env).describe(), false, ""},
      {"HCWARM_BUNDLE_TRUSTED_KEYS", trusted_keys, false,
       env.bundle_trusted_keys.empty() ? "none: `cache import` takes unsigned bundles" : ""},
      {"HCWARM_STRICT_WARMUP", b(env.strict_warmup), false, ""},
      {"HCWARM_MHC_PREWARM", b(env.mhc_prewarm), false, ""},
      {"HCWARM_MHC_ONE_PASS", b(env.mhc_one_pass), false, ""},
      {"HCWARM_MHC_EARLY_FN", b(env.mhc_early_fn), false, ""},
      {"HCWARM_MHC_ONE_WAVE", b(env.mhc_one_wave), false, ""},
      {"HCWARM_CUDA_PORTABLE", b(env.cuda_portable), false, ""},
      {"HCWARM_TORCH_CPP_OPS", b(env.torch_cpp_ops), false, ""},
      {"HCWARM_JIT", env.jit_compile ? "on" : "off", false, ""},
      {"HCWARM_TIERED", b(env.tiered), false, ""},
      {"HCWARM_LOCK_TIMEOUT_S", std::to_string(env.lock_timeout_s), false, ""},
      {"HCWARM_COMPILE_TIMEOUT_S", std::to_string(env.compile_timeout_s), false, ""},
      {"HCWARM_GROUP_TIMEOUT_S", env.group_timeout_s ? std::to_string(*env.group_timeout_s) : "", false,
       env.group_timeout_s ? "" : "the process group's own timeout (bench cold-start --hosts: 600)"},
      {"HCWARM_JOBS", std::to_string(env.jobs), false,
       env.jobs == 0 ? std::to_string(env.compile_jobs) + ": hardware threads (" +
                           std::to_string(std::thread::hardware_concurrency()) + ") / local world size (" +
                           std::to_string(env.local_world_size) + ")"
                     : ""},
      {"HCWARM_LOCAL_WORLD_SIZE", given("HCWARM_LOCAL_WORLD_SIZE") ? std::to_string(env.local_world_size) : "",
       false,
       given("HCWARM_LOCAL_WORLD_SIZE") ? ""
       : given("LOCAL_WORLD_SIZE")      ? std::to_string(env.local_world_size) + " from LOCAL_WORLD_SIZE (torchrun)"
                                        : "1 (LOCAL_WORLD_SIZE, torchrun's, is not set either)"},
      {"HCWARM_CXX", env.host_cxx, false, ""},
      {"HCWARM_NUM_SMS", env.num_sms ? std::to_string(*env.num_sms) : "", false,
       env.num_sms ? "" : "132 (an H200's) when there is no GPU"},
      {"HCWARM_LOG_LEVEL", env.log_level, false, ""},
      {"HCWARM_CUDA_LIBRARY", env.cuda_library, false, env.cuda_library.empty() ? "search libcuda.so.1" : ""},
      {"HCWARM_NVRTC_LIBRARY", env.nvrtc_library, false,
       env.nvrtc_library.empty() ? "search $CUDA_HOME/lib64, /usr/local/cuda/lib64, NVIDIA's pip wheels in "
                                   "site-packages, the loader's path (libnvrtc.so.13, .so.12, .so; 12.4 or newer)"
                                 : "only this file"},
      {"CUDA_HOME", env.cuda_home, false, ""},
  };
  // The values are EnvConfig's, and so is the list of the variables that were given.
  for (auto& e : s) e.set = given(e.name.c_str());
  return s;
}

}  // namespace hcwarm::cli
