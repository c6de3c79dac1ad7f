#include "sim/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

#include "core/error.hpp"

namespace hcwarm::sim {

Scheduler::Scheduler(SchedulerConfig config, std::vector<Request> requests) : config_(config) {
  HCWARM_CHECK_ARG(config_.chunked_prefill_size > 0, "scheduler: chunked_prefill_size must be > 0, got {}",
                   config_.chunked_prefill_size);
  HCWARM_CHECK_ARG(config_.max_running_requests > 0, "scheduler: max_running_requests must be > 0, got {}",
                   config_.max_running_requests);
  std::unordered_set<int64_t> ids;
  for (const Request& r : requests) {
    HCWARM_CHECK_ARG(std::isfinite(r.arrival_s) && r.arrival_s >= 0,
                     "scheduler: request {} has arrival_s {}, need a finite value >= 0", r.id, r.arrival_s);
    HCWARM_CHECK_ARG(r.prompt_tokens >= 1, "scheduler: request {} has prompt_tokens {}, need >= 1", r.id,
                     r.prompt_tokens);
    HCWARM_CHECK_ARG(r.output_tokens >= 0, "scheduler: request {} has output_tokens {}, need >= 0", r.id,
                     r.output_tokens);
    HCWARM_CHECK_ARG(ids.insert(r.id).second, "scheduler: request id {} appears twice", r.id);
  }

  // Arrival order, ties by input position, so equal timestamps keep file order.
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].arrival_s < requests[b].arrival_s; });
  states_.reserve(order.size());
  for (size_t pos : order) {
    State s;
    s.req = requests[pos];
    s.timing.id = s.req.id;
    s.timing.arrival_s = s.req.arrival_s;
    s.timing.output_tokens = s.req.output_tokens;
    states_.push_back(s);
    input_pos_.push_back(pos);
  }
}

bool Scheduler::done() const { return completed_ == static_cast<int64_t>(states_.size()); }

void Scheduler::admit_arrivals() {
  while (next_arrival_ < states_.size() && states_[next_arrival_].req.arrival_s <= now_) {
    waiting_.push_back(next_arrival_++);
  }
}

std::optional<Batch> Scheduler::next_batch() {
  HCWARM_ASSERT(!in_flight_, "scheduler: next_batch() called before complete() of forward {}", forwards_ - 1);
  if (done() || (config_.max_forwards && forwards_ >= *config_.max_forwards)) return std::nullopt;

  admit_arrivals();
  if (running_.empty() && waiting_.empty()) {
    // Idle: nothing to run until the next request arrives.
    HCWARM_ASSERT(next_arrival_ < states_.size(), "scheduler: not done but no request left to arrive");
    now_ = std::max(now_, states_[next_arrival_].req.arrival_s);
    admit_arrivals();
  }

  Batch batch;
  batch.index = forwards_;
  batch.time_s = now_;
  in_flight_states_.clear();
  int64_t budget = config_.chunked_prefill_size;
  auto add = [&](size_t si, int64_t tokens, bool prefill) {
    const State& s = states_[si];
    const int64_t pos = prefill ? s.prefilled : s.req.prompt_tokens + (s.req.output_tokens - 1 - s.decode_left);
    batch.entries.push_back({s.req.id, tokens, pos, prefill});
    in_flight_states_.push_back(si);
    batch.num_tokens += tokens;
    (prefill ? batch.prefill_tokens : batch.decode_tokens) += tokens;
    budget -= tokens;
  };

  bool prefill_pending = !waiting_.empty() && static_cast<int64_t>(running_.size()) < config_.max_running_requests;
  for (size_t si : running_) prefill_pending |= states_[si].prefilled < states_[si].req.prompt_tokens;
  const bool run_decode = config_.mix_decode_with_prefill || !prefill_pending;
  const bool run_prefill = config_.mix_decode_with_prefill || prefill_pending;

  if (run_decode) {
    for (size_t si : running_) {
      if (budget == 0) break;
      if (states_[si].prefilled == states_[si].req.prompt_tokens) add(si, 1, false);
    }
  }
  if (run_prefill) {
    // The chunked (partially prefilled) request continues before new ones are admitted.
    for (size_t si : running_) {
      if (budget == 0) break;
      const State& s = states_[si];
      if (s.prefilled < s.req.prompt_tokens) add(si, std::min(s.req.prompt_tokens - s.prefilled, budget), true);
    }
    while (budget > 0 && !waiting_.empty() &&
           static_cast<int64_t>(running_.size()) < config_.max_running_requests) {
      const size_t si = waiting_.front();
      waiting_.pop_front();
      running_.push_back(si);
      add(si, std::min(states_[si].req.prompt_tokens, budget), true);
    }
  }
  HCWARM_ASSERT(batch.num_tokens > 0, "scheduler: empty batch at forward {} with {} running, {} waiting", forwards_,
                running_.size(), waiting_.size());
  in_flight_ = true;
  return batch;
}

void Scheduler::complete(const Batch& batch, double seconds) {
  HCWARM_ASSERT(in_flight_ && batch.index == forwards_ && batch.entries.size() == in_flight_states_.size(),
                "scheduler: complete() of forward {} does not match the batch handed out ({})", batch.index,
                forwards_);
  HCWARM_CHECK_ARG(std::isfinite(seconds) && seconds >= 0,
                   "scheduler: forward {} reported {} seconds, need a finite value >= 0", batch.index, seconds);
  in_flight_ = false;
  ++forwards_;
  now_ += seconds;
  busy_s_ += seconds;
  prefill_tokens_ += batch.prefill_tokens;
  decode_tokens_ += batch.decode_tokens;

  bool any_finished = false;
  for (size_t e = 0; e < batch.entries.size(); ++e) {
    State& s = states_[in_flight_states_[e]];
    const BatchEntry& entry = batch.entries[e];
    if (entry.is_prefill) {
      s.prefilled += entry.num_tokens;
      if (s.prefilled < s.req.prompt_tokens) continue;
      // The forward that ends the prefill yields the first output token.
      s.timing.first_token_s = now_;
      s.decode_left = std::max<int64_t>(0, s.req.output_tokens - 1);
    } else {
      --s.decode_left;
    }
    if (s.decode_left == 0) {
      s.timing.finish_s = now_;
      ++completed_;
      any_finished = true;
    }
  }
  if (any_finished) {
    std::erase_if(running_, [&](size_t si) { return states_[si].timing.finish_s >= 0; });
  }
}

ReplayResult Scheduler::run(const ForwardFn& forward) {
  while (auto batch = next_batch()) complete(*batch, forward(*batch));
  return result();
}

ReplayResult Scheduler::result() const {
  ReplayResult r;
  r.forwards = forwards_;
  r.end_time_s = now_;
  r.busy_s = busy_s_;
  r.completed_requests = completed_;
  r.prefill_tokens = prefill_tokens_;
  r.decode_tokens = decode_tokens_;
  r.requests.resize(states_.size());
  for (size_t i = 0; i < states_.size(); ++i) r.requests[input_pos_[i]] = states_[i].timing;
  return r;
}

}  // namespace hcwarm::sim
