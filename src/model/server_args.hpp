#pragma once
// The serving engine's arguments that hcwarm's planning depends on, parsed and
// normalised once. Data-parallel attention divides chunked_prefill_size by
// dp_size here, and nowhere else.
#include <cstdint>
#include <optional>
#include <string>

namespace hcwarm::model {

struct ServerArgsInput {
  std::optional<int64_t> chunked_prefill_size;  // unset: from device memory
  int dp_size = 1;
  bool enable_dp_attention = false;
  std::optional<int> num_sms;                   // unset: the device's, else HCWARM_NUM_SMS, else 132
  std::optional<double> device_memory_gb;       // what the device reports, when there is one
  std::optional<int> device_num_sms;            // what the device reports, when there is one
};

struct ServerArgs {
  // Per data-parallel rank, already divided when DP attention is on. <= 0 means
  // "unset" to warmup, which then plans for 8192.
  int64_t chunked_prefill_size = 8192;
  int dp_size = 1;
  bool enable_dp_attention = false;
  int num_sms = 132;
  std::string num_sms_source;  // "--num-sms", "device", "HCWARM_NUM_SMS", "default"

  // max_num_tokens for warmup: chunked_prefill_size, or 8192 when <= 0.
  int64_t max_num_tokens() const { return chunked_prefill_size > 0 ? chunked_prefill_size : 8192; }

  // Validates and normalises; logs a warning stating the new value when DP
  // attention divides chunked_prefill_size. env_num_sms is HCWARM_NUM_SMS.
  static ServerArgs process(const ServerArgsInput& in, std::optional<int> env_num_sms);
};

// 8192 under 160 GB of device memory, 16384 above (upstream's default).
int64_t default_chunked_prefill_size(std::optional<double> device_memory_gb);

}  // namespace hcwarm::model
