// Command-line parsing with strict_integer_options on an App shaped like hcwarm's
// (integers of several widths and signedness, optionals, a list, a double, text, a
// flag, a subcommand), argv split from the input: at NUL bytes when there are any,
// else at newlines. Either CLI11 raises a ParseError whose message stays bounded, or
// every integer option given took plain decimal text whose exact value fits its type
// and is the value stored.
#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "cli/strict_options.hpp"
#include "core/limits.hpp"
#include "fuzz_util.hpp"

namespace {

using namespace hcwarm;

constexpr size_t kMaxArgs = 64;
// bounded_failure_message: head + tail, the "[... N bytes dropped ...]" marker and
// the "Run with --help" line.
constexpr size_t kMaxFailureBytes = limits::kMaxParseMessageHead + limits::kMaxParseMessageTail + 160;

bool plain_decimal(std::string_view s, bool is_signed) {
  if (is_signed && !s.empty() && s[0] == '-') s.remove_prefix(1);
  if (s.empty()) return false;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// get_name() is empty for a hidden option.
std::string label(const CLI::Option* o) {
  return o->get_lnames().empty() ? o->get_name(true) : "--" + o->get_lnames().front();
}

// The exact value of decimal text when it fits T (no saturation, no other base).
template <class T>
std::optional<T> exact_value(const std::string& s) {
  T v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Records each value an option's validators see before strict_decimal rewrites it,
// and checks the option after a successful parse.
class Checks {
 public:
  template <class T>
  void scalar(CLI::Option* o, const T& var) {
    add(o, std::is_signed_v<T>, [o, &var] {
      const std::vector<std::string> kept = o->reduced_results();
      HCWARM_FUZZ_CHECK(kept.size() == 1);
      check_value<T>(o, kept.back(), var);
    });
  }
  template <class T>
  void optional(CLI::Option* o, const std::optional<T>& var) {
    add(o, std::is_signed_v<T>, [o, &var] {
      const std::vector<std::string> kept = o->reduced_results();
      HCWARM_FUZZ_CHECK(kept.size() == 1 && var.has_value());
      check_value<T>(o, kept.back(), *var);
    });
  }
  template <class T>
  void list(CLI::Option* o, const std::vector<T>& var) {
    add(o, std::is_signed_v<T>, [o, &var] {
      const std::vector<std::string> kept = o->reduced_results();
      HCWARM_FUZZ_CHECK(kept.size() == var.size());
      for (size_t i = 0; i < kept.size(); ++i) check_value<T>(o, kept[i], var[i]);
    });
  }

  // After strict_integer_options: a transform goes in front of it, so it sees the raw text.
  void record() {
    for (Entry& e : entries_) {
      std::vector<std::string>* seen = &e.raw;
      e.opt->transform(CLI::Validator(
          [seen](std::string& v) {
            seen->push_back(v);
            return std::string();
          },
          "", "record-raw"));
    }
  }

  void after_parse() const {
    for (const Entry& e : entries_) {
      if (e.opt->count() == 0) continue;
      for (const std::string& raw : e.raw) {
        if (!plain_decimal(raw, e.is_signed)) fuzz::finding("non-decimal integer accepted", label(e.opt) + "=" + raw);
      }
      for (const std::string& r : e.opt->results()) {
        if (!plain_decimal(r, e.is_signed)) fuzz::finding("non-decimal integer kept", label(e.opt) + "=" + r);
      }
      e.check();
    }
  }

 private:
  struct Entry {
    CLI::Option* opt;
    bool is_signed;
    std::function<void()> check;
    std::vector<std::string> raw;
  };

  template <class T>
  static void check_value(const CLI::Option* o, const std::string& text, const T& stored) {
    const std::optional<T> v = exact_value<T>(text);
    if (!v) fuzz::finding("integer out of its type's range accepted", label(o) + "=" + text);
    if (*v != stored) fuzz::finding("stored integer differs from its text", label(o) + "=" + text);
  }

  void add(CLI::Option* o, bool is_signed, std::function<void()> check) {
    entries_.push_back({o, is_signed, std::move(check), {}});
  }

  std::vector<Entry> entries_;
};

struct Values {
  int layers = 0;
  int64_t child_start_ns = 0;
  uint64_t seed = 0;
  size_t max_bytes = 0;
  unsigned processes = 4;
  int16_t small = 0;
  std::optional<int> num_sms;
  std::optional<int64_t> chunked_prefill_size;
  std::vector<int> hidden{4096, 7168};
  std::vector<int64_t> tokens{1, 8};
  double min_seconds = 0.2;
  std::string model = "dsv4-flash";
  bool json = false;
  int repeat = 1;
  std::optional<int64_t> max_requests;
  uint64_t bench_seed = 0;
  std::vector<std::string> keys;
};

void parse(const std::vector<std::string>& args) {
  CLI::App app{"hcwarm: option values"};
  app.set_version_flag("--version", "hcwarm 0");
  app.require_subcommand(0, 1);
  Values v;
  Checks checks;

  checks.scalar(app.add_option("--layers", v.layers, "decoder layers")
                    ->check(CLI::Range(0, 1000))
                    ->capture_default_str(),
                v.layers);
  checks.scalar(app.add_option("--child-start-ns", v.child_start_ns)->group(""), v.child_start_ns);
  checks.scalar(app.add_option("--seed", v.seed, "seed")->capture_default_str(), v.seed);
  checks.scalar(app.add_option("--max-bytes", v.max_bytes, "bytes"), v.max_bytes);
  checks.scalar(app.add_option("-p,--processes", v.processes, "processes")->capture_default_str(), v.processes);
  checks.scalar(app.add_option("--small", v.small)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast), v.small);
  checks.optional(app.add_option("--num-sms", v.num_sms, "SMs"), v.num_sms);
  checks.optional(app.add_option("--chunked-prefill-size", v.chunked_prefill_size, "tokens"), v.chunked_prefill_size);
  checks.list(app.add_option("--hidden", v.hidden, "hidden sizes (comma separated)")
                  ->delimiter(',')
                  ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
                  ->capture_default_str(),
              v.hidden);
  checks.list(app.add_option("--tokens", v.tokens, "token counts")->delimiter(','), v.tokens);
  app.add_option("--min-seconds", v.min_seconds, "seconds")->capture_default_str();
  app.add_option("--model", v.model, "model")->capture_default_str();
  app.add_flag("--json", v.json, "JSON");

  CLI::App* sub = app.add_subcommand("bench", "a subcommand");
  checks.scalar(sub->add_option("--repeat", v.repeat, "pairs of runs")->capture_default_str(), v.repeat);
  checks.optional(sub->add_option("--max-requests", v.max_requests, "requests"), v.max_requests);
  sub->add_option("--trusted-key", v.keys, "keys");
  checks.scalar(sub->add_option("--seed", v.bench_seed, "seed"), v.bench_seed);

  hcwarm::cli::strict_integer_options(app);
  checks.record();
  app.failure_message(hcwarm::cli::bounded_failure_message);

  std::vector<const char*> argv{"hcwarm"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    const std::string message = hcwarm::cli::bounded_failure_message(&app, e);
    if (message.size() > kMaxFailureBytes) fuzz::finding("parse error message quotes too much", message);
    std::ostringstream out, err;
    app.exit(e, out, err);
    if (err.str().size() > kMaxFailureBytes) fuzz::finding("printed parse error quotes too much", err.str());
    return;
  } catch (const std::exception& e) {
    fuzz::finding("unexpected exception", e.what());
  } catch (...) {
    fuzz::finding("unexpected exception", "not a std::exception");
  }
  checks.after_parse();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = hcwarm::fuzz::as_text(data, size);
  const char sep = text.find('\0') != std::string_view::npos ? '\0' : '\n';
  std::vector<std::string> args;
  size_t at = 0;
  while (at < text.size() && args.size() < kMaxArgs) {
    const size_t end = std::min(text.find(sep, at), text.size());
    args.emplace_back(text.substr(at, end - at));
    at = end + 1;
  }
  parse(args);
  return 0;
}
