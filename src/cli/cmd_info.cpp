// hcwarm info: what hcwarm finds on this machine — the CUDA device, NVRTC, the
// host compiler, the kernel cache and its compiler namespaces — and the
// effective configuration (every HCWARM_* variable, default or set).
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "backends/cuda/mhc_pre_cuda.hpp"
#include "cli/byte_units.hpp"
#include "cli/cache_dir.hpp"
#include "cli/commands.hpp"
#include "cli/env_listing.hpp"
#include "cli/info_probe.hpp"
#include "cli/json_output.hpp"
#include "jit/cuda_targets.hpp"

namespace hcwarm::cli {
namespace {

struct InfoOptions {
  std::string cache_dir;
  bool json = false;
};

struct Facts {
  GpuFacts gpu;
  CompilerFacts nvrtc, host;
  CacheFacts cache;
  std::vector<EnvSetting> config;
};

Facts gather(const CliContext& ctx, const InfoOptions& o) {
  Facts f;
  f.gpu = probe_gpu(ctx.env);
  // NVRTC's identity does not depend on the target; probe for this GPU's, else the usual bundle's.
  f.nvrtc = probe_nvrtc(ctx.env, f.gpu.arch.empty() ? "sm_90a" : f.gpu.arch);
  f.host = probe_host_compiler(ctx.env);
  f.cache = probe_cache(effective_cache_dir(ctx, o.cache_dir), ctx.env, f.host, f.nvrtc);
  f.config = env_settings(ctx.env);
  return f;
}

nlohmann::json or_null(const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); }

nlohmann::json compiler_json(const CompilerFacts& c, const char* location_key) {
  return {{"available", c.error.empty()}, {location_key, or_null(c.location)}, {"identity", or_null(c.identity)},
          {"target", or_null(c.target)},  {"error", or_null(c.error)}};
}

nlohmann::json to_json(const Facts& f) {
  nlohmann::json j;
  j["hcwarm_version"] = HCWARM_VERSION;
  if (f.gpu.unavailable.empty()) {
    j["gpu"] = {{"name", f.gpu.name},
                {"num_sms", f.gpu.num_sms},
                {"compute_capability", fmt::format("{}.{}", f.gpu.cc_major, f.gpu.cc_minor)},
                {"arch", f.gpu.arch},
                {"memory_gb", f.gpu.memory_gb},
                {"device_count", f.gpu.device_count},
                {"driver_version", f.gpu.driver_version},
                {"driver_library", f.gpu.driver_library},
                {"support", jit::describe_gpu_support(f.gpu.cc_major, f.gpu.cc_minor)},
                {"kernel_forms", f.gpu.portable ? "portable" : "native"}};
  } else {
    j["gpu"] = nullptr;
  }
  j["gpu_unavailable"] = or_null(f.gpu.unavailable);
  j["nvrtc"] = compiler_json(f.nvrtc, "library");
  j["nvrtc"]["version"] = or_null(f.nvrtc.version);
  j["nvrtc"]["skipped"] = nlohmann::json::array();
  for (const auto& [candidate, reason] : f.nvrtc.skipped) {
    j["nvrtc"]["skipped"].push_back({{"candidate", candidate}, {"reason", reason}});
  }
  j["host_compiler"] = compiler_json(f.host, "command");
  j["generic_cuda_kernels"] = cuda::generic_kernels_built();
  j["generic_cuda_targets"] = cuda::generic_kernel_targets();
  const CacheFacts& c = f.cache;
  nlohmann::json ns = nlohmann::json::array();
  for (const auto& n : c.namespaces) {
    ns.push_back({{"version", n.version}, {"namespace", n.ns}, {"entries", n.entries}, {"bytes", n.bytes},
                  {"compiler", or_null(n.compiler)}});
  }
  j["cache"] = {{"dir", c.dir ? nlohmann::json(c.dir->string()) : nlohmann::json()},
                {"exists", c.exists},
                {"usable", c.usable},
                {"writable", c.writable},
                {"reason", or_null(c.reason)},
                {"namespaces", ns}};
  for (const auto& e : f.config) j["config"][e.name] = {{"value", e.value}, {"set", e.set}, {"note", or_null(e.note)}};
  return j;
}

void print_text(std::ostream& os, const Facts& f) {
  os << fmt::format("hcwarm {}\n", HCWARM_VERSION);
  const GpuFacts& g = f.gpu;
  if (!g.unavailable.empty()) {
    os << fmt::format("GPU: none ({}); the cpu backend runs, plans assume 132 SMs unless told\n", g.unavailable);
  } else {
    os << fmt::format("GPU: {}: {} SMs, compute capability {}.{} ({}), {:.1f} GB; {} device{}\n", g.name, g.num_sms,
                      g.cc_major, g.cc_minor, g.arch, g.memory_gb, g.device_count, g.device_count == 1 ? "" : "s");
    os << fmt::format("CUDA driver: {} ({})\n", g.driver_version, g.driver_library);
    os << fmt::format("GPU support: {}\n", jit::describe_gpu_support(g.cc_major, g.cc_minor));
    os << fmt::format("kernel forms: {}\n",
                      g.portable ? "portable (the split-K pair at every T, the cluster-free head, no PDL)"
                                 : "native (the one-pass kernel where the plan takes it, the cluster head, PDL)");
  }
  if (f.nvrtc.error.empty()) {
    os << fmt::format("NVRTC: {} at {} (identity in keys: {})\n", f.nvrtc.version, f.nvrtc.location,
                      f.nvrtc.identity);
    for (const auto& [candidate, reason] : f.nvrtc.skipped) {
      os << fmt::format("  skipped before it: {}: {}\n", candidate, reason);
    }
  } else {
    os << fmt::format("NVRTC: unavailable: {} (the cuda backend cannot compile kernels)\n", f.nvrtc.error);
  }
  os << (cuda::generic_kernels_built()
             ? fmt::format("generic CUDA kernels: built in ({}, compute_90 PTX): tiered execution serves them while "
                           "a specialization compiles\n",
                           cuda::generic_kernel_targets())
             : "generic CUDA kernels: none (built without nvcc): on CUDA tiered execution is off, and a kernel "
               "prewarm did not load compiles in the call's path\n");
  if (f.host.error.empty()) {
    os << fmt::format("host compiler: {} = {}, target {}\n", f.host.location, f.host.identity, f.host.target);
  } else {
    os << fmt::format("host compiler: {} unavailable: {} (the cpu backend cannot compile kernels)\n", f.host.location,
                      f.host.error);
  }
  const CacheFacts& c = f.cache;
  if (!c.dir) {
    os << fmt::format("kernel cache: none: {}\n", c.reason);
  } else {
    const std::string state = !c.usable ? "not usable" : (c.writable ? "usable, writable" : "usable, not writable");
    os << fmt::format("kernel cache: {}: {}{}\n", c.dir->string(), state,
                      c.reason.empty() ? "" : " (" + c.reason + ")");
    for (const auto& n : c.namespaces) {
      const std::string by = n.compiler.empty()     ? std::string("another compiler's: not loaded here")
                             : n.compiler == "host" ? std::string("this machine's host compiler")
                                                    : std::string("this machine's NVRTC");
      os << fmt::format("  v{}/{}: {} entr{}, {} ({})\n", n.version, n.ns, n.entries, n.entries == 1 ? "y" : "ies",
                        human_bytes(n.bytes), by);
    }
  }
  os << "configuration (README.md, Configuration):\n";
  for (const auto& e : f.config) {
    os << fmt::format("  {}={} ({}{})\n", e.name, e.value, e.set ? "set" : "default",
                      e.note.empty() ? "" : ": " + e.note);
  }
}

}  // namespace

void register_info(CLI::App& app, CliContext& ctx) {
  auto o = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand("info", "Show the GPU, compilers, kernel cache and settings hcwarm finds here");
  cmd->footer(
      "The CUDA device (name, SMs, compute capability, architecture, driver), NVRTC (path, version, and each\n"
      "place its search looked at first with why it was skipped) and the host compiler (path and identity, or\n"
      "why unavailable), the kernel cache (usable, writable, its compiler namespaces) and every\n"
      "HCWARM_* setting in effect, default or set. Needs no GPU.");
  add_cache_dir_option(cmd, o->cache_dir);
  add_json_flag(cmd, o->json);
  cmd->callback([&ctx, o] {
    const Facts f = gather(ctx, *o);
    if (o->json) {
      print_json(std::cout, to_json(f));
    } else {
      print_text(std::cout, f);
    }
  });
}

}  // namespace hcwarm::cli
