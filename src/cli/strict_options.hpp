#pragma once
// Command-line values read one way only. CLI11 reads integers with strtoll(base 0),
// so "0x10" is 16, "010" is 8, "+5" and " 5" are 5, and an empty value leaves an
// optional unset, and a value past the 64-bit range saturates; hcwarm takes plain
// decimal digits (an optional leading '-') within range and refuses the rest naming
// the option. Its parse errors quote a bounded excerpt.
#include <CLI/CLI.hpp>

#include <string>

namespace hcwarm::cli {

// Adds the strict decimal check to every integer option of app and its subcommands
// (call after every option is registered).
void strict_integer_options(CLI::App& app);

// Refuses (CLI::ValidationError, exit 2) an argument with more than
// limits::kMaxArgBrackets '[', before CLI11 parses anything.
void check_arguments(int argc, const char* const* argv);

// CLI11's error message (which may hold a whole option value) cut in the middle to
// limits::kMaxParseMessage{Head,Tail} bytes; for App::failure_message.
std::string bounded_failure_message(const CLI::App* app, const CLI::Error& e);

}  // namespace hcwarm::cli
