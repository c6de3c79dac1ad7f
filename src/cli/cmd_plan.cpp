// placeholder until the plan command lands
#include "cli/commands.hpp"
namespace hcwarm::cli {
void register_plan(CLI::App& app, CliContext&) { app.add_subcommand("plan", "Show the split buckets"); }
}
