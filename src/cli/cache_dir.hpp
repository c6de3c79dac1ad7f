#pragma once
// The kernel cache directory of a command: --cache-dir, else HCWARM_CACHE_DIR,
// else ~/.cache/hcwarm; and the JIT options that cache it there.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <optional>
#include <string>

#include "cli/commands.hpp"
#include "jit/jit_runtime.hpp"

namespace hcwarm::cli {

// --cache-dir DIR into dir ("" = the default).
void add_cache_dir_option(CLI::App* cmd, std::string& dir);

// The directory in effect; nullopt when the disk cache is disabled (HCWARM_CACHE_DIR="").
std::optional<std::filesystem::path> effective_cache_dir(const CliContext& ctx, const std::string& dir);

// For commands that inspect a cache: the directory in effect, which must exist
// and be a directory (InvalidArgument naming it otherwise).
std::filesystem::path existing_cache_dir(const CliContext& ctx, const std::string& dir);

// The environment's JIT options with the cache directory in effect.
jit::JitOptions jit_options(const CliContext& ctx, const std::string& dir);

}  // namespace hcwarm::cli
