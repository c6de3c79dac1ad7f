#pragma once
// The parts of a DeepSeek V4 Hugging Face config.json that hcwarm uses, from a
// file or an embedded preset ("dsv4-flash", "dsv4-pro").
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mhc/mhc_types.hpp"

namespace hcwarm::model {

enum class Architecture { DeepseekV4ForCausalLM, DeepseekV4ForCausalLMNextN };
const char* to_string(Architecture a);

struct ModelConfig {
  std::string name;  // preset name or file path, for messages
  Architecture architecture = Architecture::DeepseekV4ForCausalLM;
  int hidden_size = 0;
  int hc_mult = 4;
  int hc_sinkhorn_iters = 20;
  double hc_eps = 1e-6;
  double rms_norm_eps = 1e-6;
  int num_hidden_layers = 0;
  int num_nextn_predict_layers = 0;
  std::optional<int> sliding_window;        // set: hybrid sliding-window attention
  std::vector<int> compress_ratios;         // per layer, when the config has them
  int intermediate_size = 0;                // informational; the shipped MLP's width is chosen separately
  // Fields with a documented default that the config left out, as "field=value"
  // in parse order (hc_sinkhorn_iters, hc_eps, rms_norm_eps, num_nextn_predict_layers,
  // sliding_window); empty for a preset. Reports show them so a default is never silent.
  std::vector<std::string> defaulted_fields;

  bool is_hybrid_swa() const { return sliding_window.has_value() && *sliding_window > 0; }
  int64_t hc_hidden_size() const { return int64_t{hc_mult} * hidden_size; }
  mhc::MhcDims mhc_dims() const { return {hc_mult, hidden_size}; }
  mhc::MhcConstants mhc_constants() const;
};

// For a warmup's log line: "" when the config defaulted nothing, else
// "defaults used for fields the config left out: field=value, ...".
std::string defaulted_fields_note(const ModelConfig& config);

// Preset names, in display order.
std::vector<std::string> preset_names();
// A preset by name, or nullopt.
std::optional<ModelConfig> preset(const std::string& name);

// Parses config.json text; `source` names the file in errors. Errors are
// ErrorKind::InvalidArgument naming the file and the field.
// Fields with a default that are absent are listed in defaulted_fields.
ModelConfig parse_model_config(const std::string& json_text, const std::string& source);
ModelConfig load_model_config_file(const std::filesystem::path& path);
// "dsv4-flash" / "dsv4-pro" / a path to config.json (or to a directory holding one).
ModelConfig resolve_model(const std::string& preset_or_path);

}  // namespace hcwarm::model
