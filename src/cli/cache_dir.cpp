#include "cli/cache_dir.hpp"

#include "core/error.hpp"

namespace hcwarm::cli {
namespace fs = std::filesystem;

void add_cache_dir_option(CLI::App* cmd, std::string& dir) {
  cmd->add_option("--cache-dir", dir, "Kernel cache directory (default: HCWARM_CACHE_DIR, else ~/.cache/hcwarm)");
}

std::optional<fs::path> effective_cache_dir(const CliContext& ctx, const std::string& dir) {
  if (!dir.empty()) return fs::path(dir);
  return ctx.env.cache_dir;
}

fs::path existing_cache_dir(const CliContext& ctx, const std::string& dir) {
  const auto p = effective_cache_dir(ctx, dir);
  HCWARM_CHECK_ARG(p.has_value(),
                   "no cache directory: HCWARM_CACHE_DIR is empty (disk cache disabled); pass --cache-dir DIR");
  std::error_code ec;
  const fs::file_status st = fs::status(*p, ec);
  HCWARM_CHECK_ARG(fs::exists(st), "cache directory {} does not exist{}", p->string(),
                   dir.empty() ? " (nothing has been cached there yet; --cache-dir DIR to name another)" : "");
  HCWARM_CHECK_ARG(fs::is_directory(st), "cache directory {} is not a directory", p->string());
  return *p;
}

jit::JitOptions jit_options(const CliContext& ctx, const std::string& dir) {
  jit::JitOptions o = jit::JitOptions::from_env(ctx.env);
  o.cache_dir = effective_cache_dir(ctx, dir);
  return o;
}

}  // namespace hcwarm::cli
