// JitRuntime's construction and teardown, its options from the environment, and
// the warmup/serving phase.
#include "jit/jit_runtime.hpp"

#include <filesystem>

#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "jit/jit_runtime_state.hpp"

namespace hcwarm::jit {
namespace fs = std::filesystem;

namespace {
constexpr EnumName<Phase> kPhaseNames[] = {{Phase::Warmup, "warmup"}, {Phase::Serving, "serving"}};
}  // namespace

const char* to_string(Phase p) { return enum_name(kPhaseNames, p); }

JitOptions JitOptions::from_env(const EnvConfig& env) {
  JitOptions o;
  o.cache_dir = env.cache_dir;
  o.cache_max_bytes = env.cache_max_bytes;
  o.cache_trust = CacheTrust::from_env(env);
  o.strict_warmup = env.strict_warmup;
  o.allow_compile = env.jit_compile;
  o.jobs = env.compile_jobs;
  o.host_compile_slots = env.host_compile_slots;
  o.tiered = env.tiered;
  o.lock_timeout_s = env.lock_timeout_s;
  o.compile_timeout_s = env.compile_timeout_s;
  o.host_cxx = env.host_cxx;
  o.nvrtc_library = env.nvrtc_library;
  o.cuda_home = env.cuda_home;
  return o;
}

JitRuntime::JitRuntime(JitOptions opts)
    : opts_(std::move(opts)),
      budget_(opts_.compile_budget ? opts_.compile_budget
                                   : std::make_shared<ThreadBudget>(opts_.jobs > 0 ? opts_.jobs : hardware_threads())) {
  HCWARM_CHECK_ARG(budget_->capacity() >= 1, "a JIT runtime needs a compile budget of at least one thread, not {}",
                   budget_->capacity());
  loaders_[TargetKind::Host] = make_host_module_loader();
  if (opts_.cache_dir && !opts_.cache_dir->empty()) {
    // Absolute now, so that a later chdir cannot move the cache.
    std::error_code ec;
    fs::path root = fs::absolute(*opts_.cache_dir, ec);
    disk_ = std::make_unique<DiskCache>(ec ? *opts_.cache_dir : root, opts_.cache_trust);
    if (opts_.test_hook) disk_->set_test_hook(opts_.test_hook);
    disk_enabled_ = true;
  }
}

JitRuntime::~JitRuntime() {
  std::unique_ptr<BackgroundCompiler> bg;
  {
    std::lock_guard lock(background_mu_);
    bg = std::move(background_);
  }
  if (bg) bg->stop();  // queued compiles are dropped; the one running finishes first
}

void JitRuntime::mark_ready() { ready_ = true; }

}  // namespace hcwarm::jit
