#include "model/server_args.hpp"
#include "core/logging.hpp"

#include "core/limits.hpp"

#include <spdlog/spdlog.h>

#include "core/env_config.hpp"
#include "core/error.hpp"

namespace hcwarm::model {

int64_t default_chunked_prefill_size(std::optional<double> device_memory_gb) {
  return device_memory_gb && *device_memory_gb >= 160.0 ? 16384 : 8192;
}

ServerArgs ServerArgs::process(const ServerArgsInput& in, std::optional<int> env_num_sms) {
  HCWARM_CHECK_ARG(in.dp_size >= 1, "--dp-size must be >= 1, got {}", in.dp_size);
  ServerArgs a;
  a.dp_size = in.dp_size;
  a.enable_dp_attention = in.enable_dp_attention;
  a.chunked_prefill_size = in.chunked_prefill_size.value_or(default_chunked_prefill_size(in.device_memory_gb));
  HCWARM_CHECK_ARG(a.chunked_prefill_size <= limits::kMaxTokens, "--chunked-prefill-size {} is above the limit {}",
                   a.chunked_prefill_size, limits::kMaxTokens);

  // The one place DP attention divides the prefill budget: everything
  // downstream (warmup, the scheduler) reads the per-rank value as is.
  if (a.enable_dp_attention && a.dp_size > 1 && a.chunked_prefill_size > 0) {
    const int64_t per_rank = a.chunked_prefill_size / a.dp_size;
    HCWARM_CHECK_ARG(per_rank >= 1, "--chunked-prefill-size {} is smaller than --dp-size {}", a.chunked_prefill_size,
                     a.dp_size);
    log::warn("DP attention is on: chunked_prefill_size {} / dp_size {} = {} tokens per rank", a.chunked_prefill_size,
                 a.dp_size, per_rank);
    a.chunked_prefill_size = per_rank;
  }

  if (in.num_sms) {
    HCWARM_CHECK_ARG(*in.num_sms > 0, "--num-sms must be > 0, got {}", *in.num_sms);
    a.num_sms = *in.num_sms;
    a.num_sms_source = "--num-sms";
  } else if (in.device_num_sms) {
    a.num_sms = *in.device_num_sms;
    a.num_sms_source = "device";
  } else if (env_num_sms) {
    a.num_sms = *env_num_sms;
    a.num_sms_source = "HCWARM_NUM_SMS";
  } else {
    a.num_sms = kDefaultNumSms;
    a.num_sms_source = "default (H200)";
  }
  return a;
}

}  // namespace hcwarm::model
