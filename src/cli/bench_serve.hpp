#pragma once
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"

namespace hcwarm::cli {
// Adds `serve` under the `bench` command.
void register_bench_serve(CLI::App* bench, CliContext& ctx);
}  // namespace hcwarm::cli
