#include "cli/strict_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <system_error>
#include <utility>

#include "core/bounded_text.hpp"
#include "core/json_util.hpp"
#include "core/limits.hpp"

namespace hcwarm::cli {
namespace {

// Checks a value for digits (signed: with an optional leading '-'; strtoull would
// take "-1" for 2^64 - 1) and drops leading zeros, which strtoll(base 0) reads as octal.
// Refuses a value past the 64-bit range, which strtoll/strtoull would saturate to
// the type's bound (CLI11 refuses a narrower type's overflow itself).
std::string strict_decimal(std::string& value, bool is_signed) {
  const size_t digits_at = is_signed && !value.empty() && value[0] == '-' ? 1 : 0;
  const bool ok = value.size() > digits_at &&
                  std::all_of(value.begin() + static_cast<std::ptrdiff_t>(digits_at), value.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
  if (!ok) {
    return fmt::format("{} is not a {}decimal integer (digits only{})", quoted_excerpt(value),
                       is_signed ? "" : "non-negative ", is_signed ? ", a '-' before them at most" : "");
  }
  const size_t first = value.find_first_not_of('0', digits_at);
  std::string plain = value;
  if (first == std::string::npos) {
    plain = "0";
  } else {
    plain.erase(digits_at, first - digits_at);
  }
  const char* end = plain.data() + plain.size();
  int64_t i64 = 0;
  uint64_t u64 = 0;
  const std::from_chars_result r =
      is_signed ? std::from_chars(plain.data(), end, i64) : std::from_chars(plain.data(), end, u64);
  if (r.ec != std::errc{} || r.ptr != end) {
    return fmt::format("{} is out of range (a {}64-bit integer)", quoted_excerpt(value), is_signed ? "" : "non-negative ");
  }
  value = std::move(plain);
  return {};
}

// The type name's first word, "INT" or "UINT" for an integer option ("" for a flag).
std::string base_type(const CLI::Option& o) {
  if (o.get_type_size_max() == 0) return {};
  const std::string t = o.get_type_name();
  return t.substr(0, t.find(':'));
}

void walk(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    const std::string t = base_type(*o);
    if (t != "INT" && t != "UINT") continue;
    const bool is_signed = t == "INT";
    // No description, so the help's type stays as it is; first of the option's
    // validators, and one that may rewrite the value.
    o->transform(CLI::Validator([is_signed](std::string& v) { return strict_decimal(v, is_signed); }, "",
                                "strict-decimal"));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) walk(*sub);
}

}  // namespace

void strict_integer_options(CLI::App& app) { walk(app); }

std::string bounded_failure_message(const CLI::App* app, const CLI::Error& e) {
  std::string text = clip_middle(e.what(), limits::kMaxParseMessageHead, limits::kMaxParseMessageTail) + "\n";
  if (app != nullptr && app->get_help_ptr() != nullptr) {
    text += "Run with " + app->get_help_ptr()->get_name() + " for more information.\n";
  }
  return text;
}

void check_arguments(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (static_cast<size_t>(std::count(a.begin(), a.end(), '[')) > limits::kMaxArgBrackets) {
      throw CLI::ValidationError(fmt::format("argument {}", i),
                                 fmt::format("{} nests more than {} '[' (a list is \"1,2,3\" or \"[1,2,3]\")",
                                             quoted_excerpt(a), limits::kMaxArgBrackets));
    }
  }
}

}  // namespace hcwarm::cli
