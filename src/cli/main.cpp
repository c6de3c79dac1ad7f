// hcwarm: the command-line tool. Each subcommand lives in its own cmd_*.cpp and
// registers itself here; errors become messages and exit codes in one place.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <new>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/strict_options.hpp"
#include "core/bounded_text.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/logging.hpp"

namespace {

constexpr const char* kExamples =
    "\nExamples:\n"
    "  hcwarm demo                                          the main job, on the embedded default model\n"
    "  hcwarm info                                          GPU, compilers, cache and settings of this machine\n"
    "  hcwarm plan --model dsv4-pro --num-sms 132 --chunked-prefill-size 16384\n"
    "  hcwarm cache build --model dsv4-pro --num-sms 132 --arch sm_90a --cache-dir bundle/\n"
    "  HCWARM_CACHE_DIR=bundle/ hcwarm warm --model dsv4-pro --json\n"
    "  hcwarm replay --trace azure.csv --model dsv4-pro --report latency.svg\n"
    "`hcwarm COMMAND --help` for each command's options and defaults.\n"
    "Environment: HCWARM_CACHE_DIR, HCWARM_STRICT_WARMUP, HCWARM_MHC_PREWARM, HCWARM_JOBS, ...\n"
    "  (`hcwarm info` shows them all, README.md says what they do)\n"
    "Exit codes: 0 ok, 1 failure, 2 bad input (the message names the file, line or field).";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "hcwarm: JIT-compiled DeepSeek V4 mHC kernels that never stall serving on a compile.\n"
      "Plans the split buckets, prewarms them at start-up from a persistent kernel cache,\n"
      "and reports any compile that still happens after the server is ready."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("hcwarm ") + HCWARM_VERSION);
  hcwarm::cli::CliContext ctx;
  try {
    ctx.env = hcwarm::EnvConfig::from_environment();
    hcwarm::init_logging(ctx.env);
    spdlog::set_default_logger(hcwarm::shared_logger());  // the CLI's own messages share the library's stream
    hcwarm::cli::register_all(app, ctx);
    hcwarm::cli::strict_integer_options(app);
    app.failure_message(hcwarm::cli::bounded_failure_message);
    // After the subcommands: CLI11 copies a parent's footer into each subcommand
    // created after it, and these examples belong to the top-level help only.
    app.footer(kExamples);
    hcwarm::cli::check_arguments(argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const hcwarm::Error& e) {
    std::fflush(stdout);
    // Bounded both: a message may quote input, a log is a compiler's output.
    namespace limits = hcwarm::limits;
    std::cerr << "hcwarm: error: " << hcwarm::clip_middle(e.message(), limits::kMaxMessageHead, limits::kMaxMessageTail)
              << "\n";
    if (!e.log().empty()) {
      std::cerr << "---- log ----\n"
                << hcwarm::clip_middle(e.log(), limits::kMaxEchoedLogHead, limits::kMaxEchoedLogTail)
                << "\n-------------\n";
    }
    spdlog::debug("raised at {}:{}", e.file(), e.line());
    // 2 for bad input only (a file, an option, a field); builds, timeouts, I/O: 1.
    return e.kind() == hcwarm::ErrorKind::InvalidArgument ? 2 : 1;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::cerr << "hcwarm: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    // Every expected failure is an hcwarm::Error; anything else is a bug, said as one.
    std::fflush(stdout);
    std::cerr << "hcwarm: error: unexpected internal failure (a bug in hcwarm, please report it): "
              << hcwarm::clip_middle(e.what(), hcwarm::limits::kMaxMessageHead, hcwarm::limits::kMaxMessageTail)
              << "\n";
    return 1;
  }
  return ctx.exit_code;
}
