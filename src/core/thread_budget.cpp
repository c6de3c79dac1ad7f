#include "core/thread_budget.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "core/error.hpp"

namespace hcwarm {
namespace {
// How long a waiter sleeps between looks at a full gate: slots free up when a
// compile ends (tens of milliseconds at least), and the gate cannot notify.
constexpr auto kGatePollMin = std::chrono::milliseconds(1);
constexpr auto kGatePollMax = std::chrono::milliseconds(20);
}  // namespace

ThreadBudget::ThreadBudget(int capacity) : capacity_(capacity) {
  HCWARM_ASSERT(capacity >= 0, "thread budget of {}", capacity);
}

ThreadBudget::Taken ThreadBudget::take(std::unique_lock<std::mutex>& lock, int n, int need) {
  used_ += n;  // held here while the gate is asked, outside the lock
  const std::shared_ptr<SlotGate> gate = gate_;
  int got = n;
  if (gate) {
    lock.unlock();
    got = gate->try_take(n);
    if (got < need) {
      gate->give_back(got);
      got = 0;
    }
    lock.lock();
  }
  used_ -= n - got;
  if (got > 0) peak_ = std::max(peak_, used_);
  if (got < n) cv_.notify_all();
  return {got, gate ? got : 0};
}

ThreadBudget::Lease ThreadBudget::acquire(int at_least, int at_most) {
  std::unique_lock lock(mu_);
  HCWARM_ASSERT(at_least >= 1 && at_least <= capacity_ && at_most >= at_least,
                "cannot take {}..{} of a thread budget of {}", at_least, at_most, capacity_);
  auto poll = kGatePollMin;
  std::optional<std::chrono::steady_clock::time_point> gate_wait_since;
  for (;;) {
    cv_.wait(lock, [&] { return capacity_ - used_ >= at_least; });
    const Taken t = take(lock, std::min(at_most, capacity_ - used_), at_least);
    if (t.slots > 0) return Lease(this, t.slots, t.gated);
    const std::shared_ptr<SlotGate> gate = gate_;
    lock.unlock();  // the gate is full: another process holds the host's slots
    const auto now = std::chrono::steady_clock::now();
    if (!gate_wait_since) gate_wait_since = now;
    if (gate) gate->waiting(std::chrono::duration<double>(now - *gate_wait_since).count());
    std::this_thread::sleep_for(poll);
    poll = std::min(poll * 2, kGatePollMax);
    lock.lock();
  }
}

ThreadBudget::Lease ThreadBudget::try_acquire(int n) {
  if (n <= 0) return {};
  std::unique_lock lock(mu_);
  if (capacity_ - used_ < n) return {};
  const Taken t = take(lock, n, n);
  return t.slots > 0 ? Lease(this, t.slots, t.gated) : Lease();
}

void ThreadBudget::attach_gate(std::shared_ptr<SlotGate> gate, int capacity) {
  {
    std::lock_guard lock(mu_);
    gate_ = std::move(gate);
    capacity_ = std::max(capacity_, capacity);
  }
  cv_.notify_all();
}

bool ThreadBudget::gated() const {
  std::lock_guard lock(mu_);
  return gate_ != nullptr;
}

int ThreadBudget::capacity() const {
  std::lock_guard lock(mu_);
  return capacity_;
}

int ThreadBudget::in_use() const {
  std::lock_guard lock(mu_);
  return used_;
}

int ThreadBudget::peak() const {
  std::lock_guard lock(mu_);
  return peak_;
}

void ThreadBudget::give_back(int n, int gated) {
  std::shared_ptr<SlotGate> gate;
  {
    std::lock_guard lock(mu_);
    used_ -= n;
    gate = gate_;
  }
  if (gated > 0 && gate) gate->give_back(gated);
  cv_.notify_all();
}

ThreadBudget::Lease::Lease(Lease&& o) noexcept {
  std::lock_guard lock(o.mu_);
  budget_ = o.budget_;
  count_ = o.count_;
  gated_ = o.gated_;
  o.count_ = 0;
  o.gated_ = 0;
}

ThreadBudget::Lease& ThreadBudget::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    release(count());
    std::scoped_lock lock(mu_, o.mu_);
    budget_ = o.budget_;
    count_ = o.count_;
    gated_ = o.gated_;
    o.count_ = 0;
    o.gated_ = 0;
  }
  return *this;
}

int ThreadBudget::Lease::count() const {
  std::lock_guard lock(mu_);
  return count_;
}

void ThreadBudget::Lease::release(int n) {
  std::lock_guard lock(mu_);
  n = std::min(n, count_);
  if (n <= 0 || budget_ == nullptr) return;
  // Ungated slots (taken before the gate was attached) go first.
  const int gated = std::max(0, n - (count_ - gated_));
  count_ -= n;
  gated_ -= gated;
  budget_->give_back(n, gated);
}

}  // namespace hcwarm
