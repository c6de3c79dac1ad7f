#include "cli/commands.hpp"

#include "cli/bench_serve.hpp"

namespace hcwarm::cli {

void register_all(CLI::App& app, CliContext& ctx) {
  register_plan(app, ctx);
  register_op(app, ctx);
  register_cache(app, ctx);
  register_cache_build(app.get_subcommand("cache"), ctx);
  register_cache_export(app.get_subcommand("cache"), ctx);
  register_cache_import(app.get_subcommand("cache"), ctx);
  register_cache_check(app.get_subcommand("cache"), ctx);
  register_warm(app, ctx);
  register_replay(app, ctx);
  register_demo(app, ctx);
  register_bench(app, ctx);
  register_bench_serve(app.get_subcommand("bench"), ctx);
  register_bench_cold_start(app.get_subcommand("bench"), ctx);
  register_info(app, ctx);
}

}  // namespace hcwarm::cli
