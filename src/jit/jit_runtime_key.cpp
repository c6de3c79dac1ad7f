// JitRuntime's key resolution: the compiler of a spec's target (and its disk
// cache namespace), and the spec's key, memoized by the spec's text.
#include "jit/jit_runtime.hpp"

#include <cctype>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "jit/header_deps.hpp"
#include "jit/jit_runtime_state.hpp"
#include "jit/sha256.hpp"

namespace hcwarm::jit {
namespace fs = std::filesystem;

namespace {

// "host-12.2.0-3fa9c1d2e4b5": kind, the first version number in the identity, and
// a digest of the whole identity (so every compiler build gets its own namespace).
std::string namespace_name(const Compiler& c) {
  const std::string id = c.identity();
  std::string ver = "unknown";
  // The first "N.N" or "N.N.N" in the identity.
  for (size_t i = 0; i < id.size(); ++i) {
    auto digits = [&](size_t j) {
      while (j < id.size() && std::isdigit(static_cast<unsigned char>(id[j]))) ++j;
      return j;
    };
    if (!std::isdigit(static_cast<unsigned char>(id[i])) || (i > 0 && std::isdigit(static_cast<unsigned char>(id[i - 1])))) {
      continue;
    }
    size_t j = digits(i);
    if (j + 1 >= id.size() || id[j] != '.' || !std::isdigit(static_cast<unsigned char>(id[j + 1]))) continue;
    j = digits(j + 1);
    if (j + 1 < id.size() && id[j] == '.' && std::isdigit(static_cast<unsigned char>(id[j + 1]))) j = digits(j + 1);
    ver = id.substr(i, j - i);
    break;
  }
  return fmt::format("{}-{}-{}", c.kind() == TargetKind::Cuda ? "nvrtc" : "host", ver, sha256_hex(id).substr(0, 12));
}

}  // namespace

std::shared_ptr<JitRuntime::CompilerSlot> JitRuntime::compiler_slot(TargetKind kind, const std::string& arch) const {
  std::lock_guard lock(compilers_mu_);
  auto& slot = compilers_[{kind, arch}];
  if (!slot) {
    slot = std::make_shared<CompilerSlot>();
    try {
      if (kind == TargetKind::Host) {
        slot->compiler = std::make_shared<HostCompiler>(opts_.host_cxx, arch, opts_.host_flags, opts_.compile_timeout_s);
      } else {
        slot->compiler = std::make_shared<NvrtcCompiler>(arch, opts_.nvrtc_library, opts_.nvrtc_flags,
                                                         opts_.nvrtc_include_dirs, opts_.cuda_home, budget_);
      }
      slot->ns = namespace_name(*slot->compiler);
    } catch (...) {
      slot->error = std::current_exception();
    }
  }
  if (slot->error) std::rethrow_exception(slot->error);
  return slot;
}

const Compiler& JitRuntime::compiler_for(const KernelSpec& spec) const {
  return *compiler_slot(spec.target, spec.arch)->compiler;
}

std::shared_ptr<const JitRuntime::Resolved> JitRuntime::resolve(const KernelSpec& spec) const {
  std::string id;
  id.reserve(spec.source.size() + spec.family.size() + spec.arch.size() + 64);
  id += spec.target == TargetKind::Host ? 'h' : 'c';
  for (const std::string* part : {&spec.family, &spec.arch, &spec.source}) {
    id += std::to_string(part->size());
    id += ':';
    id += *part;
  }
  for (const auto& [k, v] : spec.params) {
    id += std::to_string(k.size()) + ":" + k + std::to_string(v.size()) + ":" + v;
  }
  id += '|';
  id += std::to_string(spec.parts);
  for (const KernelEntry& e : spec.entries) {
    id += fmt::format("|{}:{}:{}{}:{}", e.part, e.expression.size(), e.expression, e.symbol.size(), e.symbol);
  }
  {
    std::lock_guard lock(memo_mu_);
    if (auto it = memo_.find(id); it != memo_.end()) return it->second;
  }
  auto r = std::make_shared<const Resolved>(resolve_uncached(spec));
  std::lock_guard lock(memo_mu_);
  if (memo_.size() >= kMaxMemo) memo_.clear();
  memo_.emplace(std::move(id), r);
  return r;
}

JitRuntime::Resolved JitRuntime::resolve_uncached(const KernelSpec& spec) const {
  HCWARM_CHECK_ARG(!spec.family.empty(), "kernel spec without a family");
  HCWARM_CHECK_ARG(spec.target == TargetKind::Host || !spec.arch.empty(),
                   "CUDA kernel spec {} has no architecture (e.g. sm_90a)", spec.describe());
  Resolved r;
  r.cs = compiler_slot(spec.target, spec.arch);
  const Compiler& c = *r.cs->compiler;
  r.headers = included_headers(spec.source, opts_.headers);
  Sha256 h;
  h.field("hcwarm-kernel-key", "1");
  h.field("kind", to_string(spec.target));
  h.field("family", spec.family);
  for (const auto& [k, v] : spec.params) h.field("param", k, v);
  h.field("source", spec.source);
  h.field("parts", std::to_string(spec.parts));
  // The kernels NVRTC instantiates: the text alone does not name them.
  for (const KernelEntry& e : spec.entries) {
    h.field("entry", std::to_string(e.part), e.expression);
    h.field("entry-symbol", e.symbol);
  }
  for (const auto& f : r.headers) {
    h.field("header", fs::path(std::string(f.path)).lexically_normal().generic_string(), f.content);
  }
  h.field("compiler", c.identity());
  for (const auto& f : c.flags()) h.field("flag", f);
  h.field("target", c.target());
  r.key = h.hex();
  return r;
}

std::string JitRuntime::key(const KernelSpec& spec) const { return resolve(spec)->key; }
std::string JitRuntime::cache_namespace(const KernelSpec& spec) const { return resolve(spec)->cs->ns; }

}  // namespace hcwarm::jit
