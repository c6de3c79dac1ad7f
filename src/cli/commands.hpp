#pragma once
// Registration of the subcommands (one cmd_*.cpp each). main() owns the
// context; every subcommand's callback reads and writes it, nothing global.
#include <CLI/CLI.hpp>

#include "core/env_config.hpp"

namespace hcwarm::cli {

struct CliContext {
  EnvConfig env;      // parsed once, before any subcommand runs
  int exit_code = 0;  // a subcommand that finished but must fail sets it (e.g. `cache verify`)
};

void register_all(CLI::App& app, CliContext& ctx);

// One per subcommand file.
void register_plan(CLI::App& app, CliContext& ctx);
void register_op(CLI::App& app, CliContext& ctx);
void register_cache(CLI::App& app, CliContext& ctx);
void register_cache_build(CLI::App* cache, CliContext& ctx);  // `cache build`, under `cache`
void register_cache_export(CLI::App* cache, CliContext& ctx);  // `cache export | import | check`, under `cache`
void register_cache_import(CLI::App* cache, CliContext& ctx);
void register_cache_check(CLI::App* cache, CliContext& ctx);
void register_warm(CLI::App& app, CliContext& ctx);
void register_replay(CLI::App& app, CliContext& ctx);
void register_demo(CLI::App& app, CliContext& ctx);
void register_bench(CLI::App& app, CliContext& ctx);
void register_bench_cold_start(CLI::App* bench, CliContext& ctx);  // `bench cold-start`, under `bench`
void register_info(CLI::App& app, CliContext& ctx);

}  // namespace hcwarm::cli
