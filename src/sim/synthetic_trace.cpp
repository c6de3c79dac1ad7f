// The seeded synthetic workload generator and its configuration.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/limits.hpp"
#include "sim/trace.hpp"

namespace hcwarm::sim {
namespace {

// Uniform in [0, 1) from the top 53 bits: mt19937_64's output is fixed by the
// standard, so this (unlike std::uniform_real_distribution) is the same everywhere.
class Draws {
 public:
  explicit Draws(uint64_t seed) : rng_(seed) {}
  double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  // In (0, 1]: safe under log().
  double uniform_open() { return 1.0 - uniform(); }
  double exponential(double rate) { return -std::log(uniform_open()) / rate; }
  double standard_normal() {  // Box-Muller, one value per call (two draws, always)
    const double u1 = uniform_open();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  // Geometric on {1, 2, ...} with the given mean (>= 1).
  double geometric(double mean) {
    const double p = 1.0 / mean;
    if (p >= 1.0) return 1.0;
    return 1.0 + std::floor(std::log(uniform_open()) / std::log1p(-p));
  }
  double pareto(double scale, double alpha) { return scale / std::pow(uniform_open(), 1.0 / alpha); }

 private:
  std::mt19937_64 rng_;
};

int64_t clamp_round(double v, int64_t lo, int64_t hi) {
  if (!(v < static_cast<double>(hi))) return hi;  // also catches inf
  return std::clamp(static_cast<int64_t>(std::llround(v)), lo, hi);
}

}  // namespace

void SyntheticTraceConfig::validate() const {
  HCWARM_CHECK_ARG(num_requests >= 1 && num_requests <= limits::kMaxRequests,
                   "synthetic trace: num_requests must be in [1, {}], got {}", limits::kMaxRequests, num_requests);
  HCWARM_CHECK_ARG(max_prompt_tokens <= limits::kMaxRequestTokens,
                   "synthetic trace: max_prompt_tokens must be <= {}, got {}", limits::kMaxRequestTokens,
                   max_prompt_tokens);
  HCWARM_CHECK_ARG(arrival_rate_per_s >= limits::kMinArrivalRatePerS && std::isfinite(arrival_rate_per_s),
                   "synthetic trace: arrival_rate_per_s must be >= {}, got {}", limits::kMinArrivalRatePerS,
                   arrival_rate_per_s);
  HCWARM_CHECK_ARG(min_prompt_tokens >= 1 && max_prompt_tokens >= min_prompt_tokens,
                   "synthetic trace: need 1 <= min_prompt_tokens <= max_prompt_tokens, got {} and {}",
                   min_prompt_tokens, max_prompt_tokens);
  HCWARM_CHECK_ARG(prompt_median > 0 && prompt_median <= static_cast<double>(limits::kMaxRequestTokens),
                   "synthetic trace: prompt_median must be in (0, {}], got {}", limits::kMaxRequestTokens,
                   prompt_median);
  HCWARM_CHECK_ARG(prompt_sigma >= 0 && std::isfinite(prompt_sigma),
                   "synthetic trace: prompt_sigma must be >= 0, got {}", prompt_sigma);
  HCWARM_CHECK_ARG(output_mean >= 1 && output_mean <= static_cast<double>(limits::kMaxRequestTokens),
                   "synthetic trace: output_mean must be in [1, {}], got {}", limits::kMaxRequestTokens, output_mean);
  HCWARM_CHECK_ARG(output_tail_fraction >= 0 && output_tail_fraction <= 1,
                   "synthetic trace: output_tail_fraction must be in [0, 1], got {}", output_tail_fraction);
  HCWARM_CHECK_ARG(output_tail_min >= 1 && output_tail_min <= static_cast<double>(limits::kMaxRequestTokens),
                   "synthetic trace: output_tail_min must be in [1, {}], got {}", limits::kMaxRequestTokens,
                   output_tail_min);
  HCWARM_CHECK_ARG(output_tail_alpha > 0 && std::isfinite(output_tail_alpha),
                   "synthetic trace: output_tail_alpha must be > 0, got {}", output_tail_alpha);
  HCWARM_CHECK_ARG(max_output_tokens >= 1 && max_output_tokens <= limits::kMaxRequestTokens,
                   "synthetic trace: max_output_tokens must be in [1, {}], got {}", limits::kMaxRequestTokens,
                   max_output_tokens);
}

nlohmann::json SyntheticTraceConfig::to_json() const {
  return {{"seed", seed},
          {"num_requests", num_requests},
          {"arrival_rate_per_s", arrival_rate_per_s},
          {"prompt_median", prompt_median},
          {"prompt_sigma", prompt_sigma},
          {"min_prompt_tokens", min_prompt_tokens},
          {"max_prompt_tokens", max_prompt_tokens},
          {"output_mean", output_mean},
          {"output_tail_fraction", output_tail_fraction},
          {"output_tail_min", output_tail_min},
          {"output_tail_alpha", output_tail_alpha},
          {"max_output_tokens", max_output_tokens}};
}

SyntheticTraceConfig SyntheticTraceConfig::from_json(const nlohmann::json& j, const std::string& source) {
  HCWARM_CHECK_ARG(j.is_object(), "{}: synthetic trace config must be a JSON object", source);
  SyntheticTraceConfig c;
  for (const auto& item : j.items()) {
    // References, not a structured binding: clang before 16 cannot capture bindings in a lambda.
    const std::string& key = item.key();
    const nlohmann::json& v = item.value();
    HCWARM_CHECK_ARG(v.is_number(), "{}: synthetic trace key '{}' must be a number, got {}", source, excerpt(key),
                     json_excerpt(v));
    const bool integral = v.is_number_integer();
    auto as_int = [&]() -> int64_t {
      HCWARM_CHECK_ARG(integral, "{}: synthetic trace key '{}' must be an integer, got {}", source, excerpt(key),
                       json_excerpt(v));
      return v.get<int64_t>();
    };
    if (key == "seed") {
      HCWARM_CHECK_ARG(v.is_number_unsigned() || (integral && v.get<int64_t>() >= 0),
                       "{}: synthetic trace seed must be a non-negative integer, got {}", source, json_excerpt(v));
      c.seed = v.get<uint64_t>();
    } else if (key == "num_requests") c.num_requests = as_int();
    else if (key == "arrival_rate_per_s") c.arrival_rate_per_s = v.get<double>();
    else if (key == "prompt_median") c.prompt_median = v.get<double>();
    else if (key == "prompt_sigma") c.prompt_sigma = v.get<double>();
    else if (key == "min_prompt_tokens") c.min_prompt_tokens = as_int();
    else if (key == "max_prompt_tokens") c.max_prompt_tokens = as_int();
    else if (key == "output_mean") c.output_mean = v.get<double>();
    else if (key == "output_tail_fraction") c.output_tail_fraction = v.get<double>();
    else if (key == "output_tail_min") c.output_tail_min = v.get<double>();
    else if (key == "output_tail_alpha") c.output_tail_alpha = v.get<double>();
    else if (key == "max_output_tokens") c.max_output_tokens = as_int();
    else HCWARM_THROW(ErrorKind::InvalidArgument, "{}: unknown synthetic trace key '{}'", source, excerpt(key));
  }
  c.validate();
  return c;
}

SyntheticTraceConfig builtin_demo_trace_config() {
  // Small enough that two CPU replays of a few dsv4-flash layers fit in the
  // demo's minute, yet long-tailed enough to meet many split buckets.
  SyntheticTraceConfig c;
  c.seed = 20250501;
  c.num_requests = 48;
  c.arrival_rate_per_s = 8.0;
  c.prompt_median = 256;
  c.prompt_sigma = 1.1;
  c.min_prompt_tokens = 16;
  c.max_prompt_tokens = 8192;
  c.output_mean = 40;
  c.output_tail_fraction = 0.1;
  c.output_tail_min = 128;
  c.output_tail_alpha = 1.3;
  c.max_output_tokens = 1024;
  return c;
}

std::vector<Request> synthetic_trace(const SyntheticTraceConfig& config) {
  config.validate();
  Draws draws(config.seed);
  std::vector<Request> reqs;
  reqs.reserve(static_cast<size_t>(config.num_requests));
  double t = 0.0;
  for (int64_t i = 0; i < config.num_requests; ++i) {
    // Fixed draw order per request, so one field's knobs never shift another's stream.
    if (i > 0) t += draws.exponential(config.arrival_rate_per_s);
    const double z = draws.standard_normal();
    const double tail_pick = draws.uniform();
    const double out_draw = tail_pick < config.output_tail_fraction
                                ? draws.pareto(config.output_tail_min, config.output_tail_alpha)
                                : draws.geometric(config.output_mean);
    Request r;
    r.id = i;
    r.arrival_s = t;
    r.prompt_tokens = clamp_round(config.prompt_median * std::exp(config.prompt_sigma * z),
                                  config.min_prompt_tokens, config.max_prompt_tokens);
    r.output_tokens = clamp_round(out_draw, 1, config.max_output_tokens);
    reqs.push_back(r);
  }
  return reqs;
}

}  // namespace hcwarm::sim
