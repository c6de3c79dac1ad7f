#include "core/env_config.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <thread>

#include <pwd.h>

#include "core/error.hpp"
#include "core/json_util.hpp"

extern char** environ;

namespace hcwarm {
namespace {

int64_t parse_int(const std::string& name, const std::string& value, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const char* end = value.data() + value.size();
  auto [p, ec] = std::from_chars(value.data(), end, v);
  HCWARM_CHECK_ARG(ec == std::errc() && p == end && v >= lo && v <= hi,
                   "{}={} is not an integer in [{}, {}]", name, quoted_excerpt(value), lo, hi);
  return v;
}

bool parse_bool(const std::string& name, const std::string& value) {
  if (value == "1" || value == "true" || value == "on" || value == "yes") return true;
  if (value == "0" || value == "false" || value == "off" || value == "no") return false;
  HCWARM_THROW(ErrorKind::InvalidArgument, "{}={} is not a boolean (use 1 or 0)", name, quoted_excerpt(value));
}

// A user name or a decimal uid, as the password database knows it.
uint32_t user_id(const std::string& var, const std::string& name) {
  HCWARM_CHECK_ARG(!name.empty(), "{}=shared: names no user (shared:USER, a user name or uid)", var);
  if (std::all_of(name.begin(), name.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    return static_cast<uint32_t>(parse_int(var + "=shared:", name, 0, UINT32_MAX - 1));
  }
  std::vector<char> buf(16384);
  struct passwd pw {};
  struct passwd* found = nullptr;
  const int rc = ::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
  HCWARM_CHECK_ARG(rc == 0 && found != nullptr, "{}=shared:{} names no user on this host", var, quoted_excerpt(name));
  return static_cast<uint32_t>(found->pw_uid);
}

// VIRTUAL_ENV, CONDA_PREFIX and PYTHONPATH; nothing in them is an error.
template <class Get>
PythonEnv parse_python_env(const Get& get) {
  PythonEnv p;
  if (const std::string* v = get("VIRTUAL_ENV")) p.virtual_env = *v;
  if (const std::string* v = get("CONDA_PREFIX")) p.conda_prefix = *v;
  if (const std::string* v = get("PYTHONPATH")) {
    for (size_t at = 0; at <= v->size();) {
      const size_t end = std::min(v->find(':', at), v->size());
      if (end > at) p.python_path.emplace_back(v->substr(at, end - at));
      at = end + 1;
    }
  }
  return p;
}

constexpr const char* kPythonVars[] = {"VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH"};

bool is_python_var(const std::string& k) {
  for (const char* v : kPythonVars) {
    if (k == v) return true;
  }
  return false;
}

}  // namespace

const PythonEnv& PythonEnv::process() {
  static const PythonEnv env = [] {
    std::map<std::string, std::string> vars;
    for (const char* k : kPythonVars) {
      if (const char* v = std::getenv(k)) vars[k] = v;  // NOLINT(concurrency-mt-unsafe): read once
    }
    return parse_python_env([&](const char* k) -> const std::string* {
      auto it = vars.find(k);
      return it == vars.end() ? nullptr : &it->second;
    });
  }();
  return env;
}

int EnvConfig::compile_budget(int jobs, int local_world_size, int hardware_threads) {
  if (jobs > 0) return jobs;
  return std::max(1, std::max(1, hardware_threads) / std::max(1, local_world_size));
}

EnvConfig EnvConfig::from_map(const std::map<std::string, std::string>& vars, int hardware_threads) {
  EnvConfig c;
  auto get = [&](const char* k) -> const std::string* {
    auto it = vars.find(k);
    return it == vars.end() ? nullptr : &it->second;
  };
  if (const auto* v = get("HCWARM_CACHE_DIR")) {
    if (!v->empty()) c.cache_dir = std::filesystem::path(*v);
  } else if (const auto* x = get("XDG_CACHE_HOME"); x != nullptr && !x->empty()) {
    c.cache_dir = std::filesystem::path(*x) / "hcwarm";
  } else if (const auto* h = get("HOME"); h != nullptr && !h->empty()) {
    c.cache_dir = std::filesystem::path(*h) / ".cache" / "hcwarm";
  }
  if (const auto* v = get("HCWARM_CACHE_MAX_MB")) {
    c.cache_max_bytes = static_cast<uint64_t>(parse_int("HCWARM_CACHE_MAX_MB", *v, 1, int64_t{1} << 40)) << 20;
  }
  if (const auto* v = get("HCWARM_CACHE_TRUST")) {
    if (v->starts_with("shared:")) {
      c.cache_trust_owner = v->substr(7);
      c.cache_trust_owner_uid = user_id("HCWARM_CACHE_TRUST", c.cache_trust_owner);
      c.cache_trust_shared = true;
    } else {
      HCWARM_CHECK_ARG(*v == "owner" || *v == "shared",
                       "HCWARM_CACHE_TRUST={} is not one of owner, shared:USER, shared", quoted_excerpt(*v));
      c.cache_trust_shared = *v == "shared";
    }
  }
  if (const auto* v = get("HCWARM_BUNDLE_TRUSTED_KEYS"); v != nullptr && !v->empty()) {
    for (size_t at = 0;;) {
      const size_t end = std::min(v->find(':', at), v->size());
      HCWARM_CHECK_ARG(end > at, "HCWARM_BUNDLE_TRUSTED_KEYS={} has an empty path (the list is separated by ':')",
                       quoted_excerpt(*v));
      c.bundle_trusted_keys.emplace_back(v->substr(at, end - at));
      if (end == v->size()) break;
      at = end + 1;
    }
  }
  if (const auto* v = get("HCWARM_STRICT_WARMUP")) c.strict_warmup = parse_bool("HCWARM_STRICT_WARMUP", *v);
  if (const auto* v = get("HCWARM_MHC_PREWARM")) c.mhc_prewarm = parse_bool("HCWARM_MHC_PREWARM", *v);
  if (const auto* v = get("HCWARM_MHC_ONE_PASS")) c.mhc_one_pass = parse_bool("HCWARM_MHC_ONE_PASS", *v);
  if (const auto* v = get("HCWARM_MHC_EARLY_FN")) c.mhc_early_fn = parse_bool("HCWARM_MHC_EARLY_FN", *v);
  if (const auto* v = get("HCWARM_MHC_ONE_WAVE")) c.mhc_one_wave = parse_bool("HCWARM_MHC_ONE_WAVE", *v);
  if (const auto* v = get("HCWARM_CUDA_PORTABLE")) c.cuda_portable = parse_bool("HCWARM_CUDA_PORTABLE", *v);
  if (const auto* v = get("HCWARM_TORCH_CPP_OPS")) c.torch_cpp_ops = parse_bool("HCWARM_TORCH_CPP_OPS", *v);
  if (const auto* v = get("HCWARM_JIT")) {
    if (*v == "on" || *v == "1") {
      c.jit_compile = true;
    } else if (*v == "off" || *v == "0") {
      c.jit_compile = false;
    } else {
      HCWARM_THROW(ErrorKind::InvalidArgument, "HCWARM_JIT={} is not one of on, off", quoted_excerpt(*v));
    }
  }
  if (const auto* v = get("HCWARM_TIERED")) c.tiered = parse_bool("HCWARM_TIERED", *v);
  if (const auto* v = get("HCWARM_LOCK_TIMEOUT_S")) {
    c.lock_timeout_s = static_cast<int>(parse_int("HCWARM_LOCK_TIMEOUT_S", *v, 1, 86400));
  }
  if (const auto* v = get("HCWARM_COMPILE_TIMEOUT_S")) {
    c.compile_timeout_s = static_cast<int>(parse_int("HCWARM_COMPILE_TIMEOUT_S", *v, 1, 86400));
  }
  if (const auto* v = get("HCWARM_GROUP_TIMEOUT_S")) {
    c.group_timeout_s = static_cast<int>(parse_int("HCWARM_GROUP_TIMEOUT_S", *v, 1, 86400));
  }
  if (const auto* v = get("HCWARM_JOBS")) c.jobs = static_cast<int>(parse_int("HCWARM_JOBS", *v, 0, 1024));
  for (const char* k : {"HCWARM_LOCAL_WORLD_SIZE", "LOCAL_WORLD_SIZE"}) {
    if (const auto* v = get(k)) {
      c.local_world_size = static_cast<int>(parse_int(k, *v, 1, 65536));
      break;
    }
  }
  if (hardware_threads <= 0) hardware_threads = static_cast<int>(std::thread::hardware_concurrency());
  c.compile_jobs = compile_budget(c.jobs, c.local_world_size, hardware_threads);
  c.host_compile_slots = c.jobs > 0 ? 0 : std::max(1, hardware_threads);
  if (const auto* v = get("HCWARM_CXX"); v != nullptr && !v->empty()) c.host_cxx = *v;
  if (const auto* v = get("HCWARM_NUM_SMS")) c.num_sms = static_cast<int>(parse_int("HCWARM_NUM_SMS", *v, 1, 100000));
  if (const auto* v = get("HCWARM_LOG_LEVEL")) {
    static const char* kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
    bool ok = false;
    for (const char* l : kLevels) ok = ok || *v == l;
    HCWARM_CHECK_ARG(ok, "HCWARM_LOG_LEVEL={} is not one of trace, debug, info, warn, error, off",
                     quoted_excerpt(*v));
    c.log_level = *v;
  }
  if (const auto* v = get("HCWARM_CUDA_LIBRARY")) c.cuda_library = *v;
  if (const auto* v = get("HCWARM_NVRTC_LIBRARY")) c.nvrtc_library = *v;
  if (const auto* v = get("CUDA_HOME")) c.cuda_home = *v;
  c.python = parse_python_env(get);
  for (const auto& [k, v] : vars) {
    if (k.rfind("HCWARM_", 0) == 0 || k == "CUDA_HOME" || k == "LOCAL_WORLD_SIZE") c.given.push_back(k);
  }
  return c;
}

EnvConfig EnvConfig::from_environment() {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq);
    if (k.rfind("HCWARM_", 0) == 0 || k == "HOME" || k == "XDG_CACHE_HOME" || k == "CUDA_HOME" ||
        k == "LOCAL_WORLD_SIZE" || is_python_var(k)) {
      vars[k] = kv.substr(eq + 1);
    }
  }
  return from_map(vars);
}

}  // namespace hcwarm
