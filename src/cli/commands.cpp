#include "cli/commands.hpp"

namespace hcwarm::cli {

void register_all(CLI::App& app, CliContext& ctx) {
  register_plan(app, ctx);
  register_op(app, ctx);
  register_cache(app, ctx);
}

}  // namespace hcwarm::cli
