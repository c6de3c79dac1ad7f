#pragma once
// Continuous batching with chunked prefill on a simulated clock. Each step
// builds one batch: one token per decoding request, then prefill chunks up to
// the token budget (chunked_prefill_size). The clock advances by what the
// forward callback reports, or jumps to the next arrival when nothing runs.
// No wall clock and no randomness: a trace and a callback give one schedule.
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "sim/trace.hpp"

namespace hcwarm::sim {

struct SchedulerConfig {
  int64_t chunked_prefill_size = 8192;  // token budget of one forward (> 0)
  int64_t max_running_requests = 256;   // admitted requests, prefilling or decoding (> 0)
  // true: decode tokens and prefill chunks share a batch (mixed chunked prefill).
  // false: a step with waiting prefill work runs prefill only, as engines do by default.
  bool mix_decode_with_prefill = true;
  // Stop after this many forwards (a cap for tests and quick runs).
  std::optional<int64_t> max_forwards;
};

struct BatchEntry {
  int64_t request_id = 0;
  int64_t num_tokens = 0;   // 1 for a decode step
  int64_t start_pos = 0;    // tokens of the request already in its KV cache
  bool is_prefill = false;
};

struct Batch {
  int64_t index = 0;            // 0-based forward number
  double time_s = 0.0;          // simulated clock when the forward starts
  std::vector<BatchEntry> entries;  // decode entries first, then prefill chunks
  int64_t num_tokens = 0;       // sum of entries' tokens: the forward's T
  int64_t decode_tokens = 0;
  int64_t prefill_tokens = 0;
};

// Returns the forward's duration in seconds (>= 0, finite).
using ForwardFn = std::function<double(const Batch&)>;

struct RequestTiming {
  int64_t id = 0;
  double arrival_s = 0.0;
  int64_t output_tokens = 0;    // the request's, so that a time per output token needs nothing else
  double first_token_s = -1.0;  // end of the forward that finished its prefill
  double finish_s = -1.0;       // end of its last forward; -1 if the run stopped first
};

struct ReplayResult {
  int64_t forwards = 0;
  double end_time_s = 0.0;       // simulated clock after the last forward
  double busy_s = 0.0;           // sum of forward durations
  int64_t completed_requests = 0;
  int64_t prefill_tokens = 0;
  int64_t decode_tokens = 0;
  std::vector<RequestTiming> requests;  // in the order of the input
};

class Scheduler {
 public:
  // Requests need prompt_tokens >= 1, output_tokens >= 0, finite arrival_s >= 0;
  // ids need not be sorted or dense but must be unique.
  Scheduler(SchedulerConfig config, std::vector<Request> requests);

  // Builds the next batch, jumping the clock to the next arrival when idle;
  // nullopt when every request is done (or max_forwards was reached).
  std::optional<Batch> next_batch();
  // Applies a finished batch: advances the clock and the requests' progress.
  void complete(const Batch& batch, double seconds);

  // next_batch / forward / complete until done.
  ReplayResult run(const ForwardFn& forward);

  bool done() const;
  double now() const { return now_; }
  int64_t forwards() const { return forwards_; }
  const SchedulerConfig& config() const { return config_; }
  ReplayResult result() const;

 private:
  struct State {
    Request req;
    int64_t prefilled = 0;          // prompt tokens in the KV cache
    int64_t decode_left = 0;        // decode forwards still to run
    RequestTiming timing;
  };

  void admit_arrivals();

  SchedulerConfig config_;
  std::vector<State> states_;         // sorted by (arrival_s, input position)
  std::vector<size_t> input_pos_;     // states_[i] came from requests[input_pos_[i]]
  size_t next_arrival_ = 0;           // first state not yet arrived
  std::deque<size_t> waiting_;        // arrived, not admitted (FIFO)
  std::vector<size_t> running_;       // admitted, in admission order
  std::vector<size_t> in_flight_states_;  // states_ index of each entry of the batch handed out
  double now_ = 0.0;
  int64_t forwards_ = 0;
  int64_t completed_ = 0;
  double busy_s_ = 0.0;
  int64_t prefill_tokens_ = 0;
  int64_t decode_tokens_ = 0;
  bool in_flight_ = false;            // a batch was handed out and not completed
};

}  // namespace hcwarm::sim
