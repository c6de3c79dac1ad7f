#include "model/model_config.hpp"

#include "core/limits.hpp"

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"

namespace hcwarm::model {
namespace {

using nlohmann::json;

constexpr const char* kArchMain = "DeepseekV4ForCausalLM";
constexpr const char* kArchNextN = "DeepseekV4ForCausalLMNextN";

ModelConfig dsv4_base(const char* name, int hidden, int layers) {
  ModelConfig c;
  c.name = name;
  c.architecture = Architecture::DeepseekV4ForCausalLM;
  c.hidden_size = hidden;
  c.hc_mult = 4;
  c.hc_sinkhorn_iters = 20;
  c.hc_eps = 1e-6;
  c.rms_norm_eps = 1e-6;
  c.num_hidden_layers = layers;
  c.num_nextn_predict_layers = 1;
  c.sliding_window = 128;
  return c;
}

// Reads config[field] as T; the error names the file, the field and what was wrong.
class FieldReader {
 public:
  // defaulted: where each fallback used is recorded as "field=value".
  FieldReader(const json& root, const std::string& source, std::vector<std::string>& defaulted)
      : root_(root), source_(source), defaulted_(defaulted) {}

  const json* find(const char* field) const {
    auto it = root_.find(field);
    return it == root_.end() || it->is_null() ? nullptr : &*it;
  }
  [[noreturn]] void fail(const char* field, const std::string& what) const {
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: field \"{}\" {}", source_, field, what);
  }
  int64_t integer(const char* field, std::optional<int64_t> fallback = std::nullopt) const {
    const json* v = find(field);
    if (v == nullptr) {
      if (!fallback) fail(field, "is missing");
      defaulted_.push_back(fmt::format("{}={}", field, *fallback));
      return *fallback;
    }
    if (!v->is_number_integer()) fail(field, fmt::format("must be an integer, got {}", json_excerpt(*v)));
    return v->get<int64_t>();
  }
  double number(const char* field, double fallback) const {
    const json* v = find(field);
    if (v == nullptr) {
      defaulted_.push_back(fmt::format("{}={}", field, fallback));
      return fallback;
    }
    if (!v->is_number()) fail(field, fmt::format("must be a number, got {}", json_excerpt(*v)));
    return v->get<double>();
  }

 private:
  const json& root_;
  const std::string& source_;
  std::vector<std::string>& defaulted_;
};

int to_int(const FieldReader& r, const char* field, int64_t v) {
  if (v < INT32_MIN || v > INT32_MAX) r.fail(field, fmt::format("is out of range: {}", v));
  return static_cast<int>(v);
}

}  // namespace

const char* to_string(Architecture a) {
  return a == Architecture::DeepseekV4ForCausalLM ? kArchMain : kArchNextN;
}

mhc::MhcConstants ModelConfig::mhc_constants() const {
  mhc::MhcConstants k;
  k.sinkhorn_iters = hc_sinkhorn_iters;
  k.hc_eps = static_cast<float>(hc_eps);
  k.rms_eps = static_cast<float>(rms_norm_eps);
  k.norm_eps = static_cast<float>(rms_norm_eps);
  return k;
}

std::string defaulted_fields_note(const ModelConfig& config) {
  if (config.defaulted_fields.empty()) return {};
  return fmt::format("defaults used for fields the config left out: {}", fmt::join(config.defaulted_fields, ", "));
}

std::vector<std::string> preset_names() { return {"dsv4-flash", "dsv4-pro"}; }

std::optional<ModelConfig> preset(const std::string& name) {
  if (name == "dsv4-flash") return dsv4_base("dsv4-flash", 4096, 43);
  if (name == "dsv4-pro") return dsv4_base("dsv4-pro", 7168, 61);
  return std::nullopt;
}

ModelConfig parse_model_config(const std::string& json_text, const std::string& source) {
  const json root = parse_json_bounded(json_text, source);
  HCWARM_CHECK_ARG(root.is_object(), "{}: the top level must be a JSON object", source);
  ModelConfig c;
  c.name = source;
  FieldReader r(root, source, c.defaulted_fields);

  const json* arch = r.find("architectures");
  if (arch == nullptr) r.fail("architectures", "is missing");
  if (!arch->is_array() || arch->empty() || !(*arch)[0].is_string()) {
    r.fail("architectures", fmt::format("must be a non-empty array of strings, got {}", json_excerpt(*arch)));
  }
  const std::string a = (*arch)[0].get<std::string>();
  if (a == kArchMain) {
    c.architecture = Architecture::DeepseekV4ForCausalLM;
  } else if (a == kArchNextN) {
    c.architecture = Architecture::DeepseekV4ForCausalLMNextN;
  } else {
    r.fail("architectures", fmt::format("names an unknown architecture \"{}\" (expected {} or {})", excerpt(a), kArchMain,
                                        kArchNextN));
  }

  c.hidden_size = to_int(r, "hidden_size", r.integer("hidden_size"));
  if (c.hidden_size <= 0 || c.hidden_size > limits::kMaxHiddenSize) {
    r.fail("hidden_size", fmt::format("must be in [1, {}], got {}", limits::kMaxHiddenSize, c.hidden_size));
  }
  c.hc_mult = to_int(r, "hc_mult", r.integer("hc_mult"));
  if (c.hc_mult < 1 || c.hc_mult > limits::kMaxHcMult) {
    r.fail("hc_mult", fmt::format("must be in [1, {}], got {}", limits::kMaxHcMult, c.hc_mult));
  }
  c.num_hidden_layers = to_int(r, "num_hidden_layers", r.integer("num_hidden_layers"));
  if (c.num_hidden_layers < 1 || c.num_hidden_layers > limits::kMaxLayers) {
    r.fail("num_hidden_layers", fmt::format("must be in [1, {}], got {}", limits::kMaxLayers, c.num_hidden_layers));
  }
  c.hc_sinkhorn_iters = to_int(r, "hc_sinkhorn_iters", r.integer("hc_sinkhorn_iters", 20));
  if (c.hc_sinkhorn_iters < 1 || c.hc_sinkhorn_iters > limits::kMaxSinkhornIters) {
    r.fail("hc_sinkhorn_iters",
           fmt::format("must be in [1, {}], got {}", limits::kMaxSinkhornIters, c.hc_sinkhorn_iters));
  }
  c.hc_eps = r.number("hc_eps", 1e-6);
  if (!(c.hc_eps >= 0)) r.fail("hc_eps", fmt::format("must be >= 0, got {}", c.hc_eps));
  c.rms_norm_eps = r.number("rms_norm_eps", 1e-6);
  if (!(c.rms_norm_eps > 0)) r.fail("rms_norm_eps", fmt::format("must be > 0, got {}", c.rms_norm_eps));
  c.num_nextn_predict_layers = to_int(r, "num_nextn_predict_layers", r.integer("num_nextn_predict_layers", 0));
  if (c.num_nextn_predict_layers < 0) {
    r.fail("num_nextn_predict_layers", fmt::format("must be >= 0, got {}", c.num_nextn_predict_layers));
  }
  // Informational only (the shipped MLP's width is chosen separately): absent is not a default worth reporting.
  if (r.find("intermediate_size") != nullptr) {
    c.intermediate_size = to_int(r, "intermediate_size", r.integer("intermediate_size"));
  }
  if (r.find("sliding_window") == nullptr) {
    c.defaulted_fields.push_back("sliding_window=none");
  } else {
    const int sw = to_int(r, "sliding_window", r.integer("sliding_window"));
    if (sw < 0) r.fail("sliding_window", fmt::format("must be >= 0, got {}", sw));
    if (sw > 0) c.sliding_window = sw;
  }
  if (const json* cr = r.find("compress_ratios")) {
    if (!cr->is_array()) r.fail("compress_ratios", fmt::format("must be an array of integers, got {}", json_excerpt(*cr)));
    for (const json& v : *cr) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
        r.fail("compress_ratios", fmt::format("must hold integers in [0, {}], got {}", INT32_MAX, json_excerpt(v)));
      }
      c.compress_ratios.push_back(static_cast<int>(v.get<int64_t>()));
    }
  }
  return c;
}

ModelConfig load_model_config_file(const std::filesystem::path& path) {
  // A config.json is a few kilobytes; 16 MiB leaves room for any annotated one.
  return parse_model_config(read_input_file(path, "model config", 16u << 20), path.string());
}

ModelConfig resolve_model(const std::string& preset_or_path) {
  if (auto p = preset(preset_or_path)) return *p;
  std::filesystem::path path(preset_or_path);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) path /= "config.json";
  // input_present: a dangling link is a broken config (read, and named), not a preset name.
  HCWARM_CHECK_ARG(input_present(path),
                   "--model {} is neither a preset (dsv4-flash, dsv4-pro) nor an existing config.json",
                   quoted_excerpt(preset_or_path));
  return load_model_config_file(path);
}

}  // namespace hcwarm::model
