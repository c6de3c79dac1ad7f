#include "cli/info_probe.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include "backends/cuda/cuda_device.hpp"
#include "core/error.hpp"
#include "jit/compiler.hpp"
#include "jit/disk_cache.hpp"
#include "jit/fs_util.hpp"

namespace hcwarm::cli {
namespace fs = std::filesystem;

namespace {

// The file a library name resolved to ("libnvrtc.so.13" -> its full path), once loaded.
std::string loaded_path(const std::string& name) {
  void* h = ::dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (h == nullptr) return name;
  std::string out = name;
  struct link_map* lm = nullptr;
  if (::dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != nullptr && lm->l_name != nullptr && *lm->l_name != '\0') {
    out = lm->l_name;
  }
  ::dlclose(h);
  return out;
}

}  // namespace

GpuFacts probe_gpu(const EnvConfig& env) {
  GpuFacts g;
  try {
    const auto driver = cuda::open_cuda_driver(env.cuda_library);
    g.driver_library = loaded_path(driver->path);
    int version = 0;
    if (driver->cuDriverGetVersion(&version) == cuda::CUDA_SUCCESS) {
      g.driver_version = fmt::format("{}.{}", version / 1000, version % 1000 / 10);
    }
    if (driver->cuDeviceGetCount(&g.device_count) != cuda::CUDA_SUCCESS || g.device_count == 0) {
      g.unavailable = fmt::format("the CUDA driver {} sees no device", driver->path);
      return g;
    }
    const cuda::CudaDevice dev(0, env);
    g.name = dev.name();
    g.num_sms = dev.num_sms();
    g.cc_major = dev.cc_major();
    g.cc_minor = dev.cc_minor();
    g.arch = dev.arch();
    g.portable = dev.portable();
    if (const auto info = cuda::query_device(0, env.cuda_library)) g.memory_gb = info->total_memory_gb;
  } catch (const Error& e) {
    g.unavailable = e.message();
  }
  return g;
}

CompilerFacts probe_nvrtc(const EnvConfig& env, const std::string& arch) {
  CompilerFacts c;
  c.target = arch;
  try {
    // The runtime's search, with this EnvConfig's Python environment.
    const jit::NvrtcCompiler nvrtc(arch, jit::NvrtcSearch::standard(env.nvrtc_library, env.cuda_home, env.python));
    c.location = loaded_path(nvrtc.library_path());
    c.identity = nvrtc.identity();
    c.version = fmt::format("{}.{}", nvrtc.major_version(), nvrtc.minor_version());
    for (const auto& s : nvrtc.skipped()) c.skipped.emplace_back(s.candidate, s.reason);
  } catch (const Error& e) {
    c.error = e.message();
  }
  return c;
}

CompilerFacts probe_host_compiler(const EnvConfig& env) {
  CompilerFacts c;
  c.location = env.host_cxx;
  try {
    const jit::HostCompiler cxx(env.host_cxx, {}, {}, env.compile_timeout_s);
    c.identity = cxx.identity();
    c.target = cxx.target();
  } catch (const Error& e) {
    c.error = e.message();
  }
  return c;
}

namespace {

// Which of this machine's compilers built an entry: its manifest names the compiler.
std::string built_by(const jit::CacheEntry& e, const CompilerFacts& host, const CompilerFacts& nvrtc) {
  try {
    const auto bytes = jit::fsu::read_file(e.dir / "manifest.json");
    if (!bytes) return {};
    const jit::Manifest m = jit::Manifest::parse(
        std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
    if (!host.identity.empty() && m.compiler == host.identity) return "host";
    if (!nvrtc.identity.empty() && m.compiler == nvrtc.identity) return "nvrtc";
  } catch (const Error&) {
    // An unreadable manifest names no compiler; `cache verify` says what is wrong with it.
  }
  return {};
}

// The first directory that exists on the way up from p.
fs::path existing_ancestor(fs::path p) {
  std::error_code ec;
  p = fs::absolute(p, ec);
  while (!p.empty() && !fs::exists(p, ec) && p != p.parent_path()) p = p.parent_path();
  return p;
}

}  // namespace

CacheFacts probe_cache(const std::optional<fs::path>& dir, const EnvConfig& env, const CompilerFacts& host,
                       const CompilerFacts& nvrtc) {
  CacheFacts c;
  c.dir = dir;
  if (!dir) {
    c.reason = "disk cache disabled (HCWARM_CACHE_DIR is empty): kernels are kept in memory only";
    return c;
  }
  std::error_code ec;
  c.exists = fs::exists(*dir, ec);
  if (!c.exists) {
    const fs::path up = existing_ancestor(*dir);
    if (auto why = jit::DiskCache(*dir, jit::CacheTrust::from_env(env)).untrusted()) {
      c.reason = "does not exist yet, and would not be used: " + *why;
      return c;
    }
    c.usable = true;
    c.writable = ::access(up.c_str(), W_OK | X_OK) == 0;
    c.reason = c.writable ? "does not exist yet; created on first use"
                          : fmt::format("does not exist and cannot be created: {} is not writable", up.string());
    return c;
  }
  struct stat st {};
  if (::stat(dir->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    c.reason = "not a directory";
    return c;
  }
  const jit::DiskCache cache(*dir, jit::CacheTrust::from_env(env));
  if (auto why = cache.not_a_cache()) {
    c.reason = *why;
    return c;
  }
  if (auto why = cache.untrusted()) {
    c.reason = *why + "; kernels are not loaded from it";
    return c;
  }
  c.usable = true;
  if (st.st_uid != ::geteuid()) {
    c.reason = "belongs to another user: kernels are loaded from it, never written";
  } else if (::access(dir->c_str(), W_OK | X_OK) != 0) {
    c.reason = "read-only: kernels are loaded from it, new ones stay in memory";
  } else {
    c.writable = true;
  }
  std::map<std::pair<std::string, std::string>, CacheNamespace> by_ns;
  std::vector<jit::CacheEntry> entries;
  try {
    entries = cache.list();
  } catch (const Error& e) {  // a layout maintenance refuses (a symlinked namespace): say so, list nothing
    c.reason = e.message();
  }
  for (const auto& e : entries) {
    CacheNamespace& n = by_ns[{e.version, e.ns}];
    if (n.entries++ == 0) {
      n.version = e.version;
      n.ns = e.ns;
      n.compiler = built_by(e, host, nvrtc);
    }
    n.bytes += e.bytes;
  }
  for (auto& [k, n] : by_ns) c.namespaces.push_back(std::move(n));
  return c;
}

}  // namespace hcwarm::cli
