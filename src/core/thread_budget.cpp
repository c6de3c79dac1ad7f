#include "core/thread_budget.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace hcwarm {

ThreadBudget::ThreadBudget(int capacity) : capacity_(capacity) {
  HCWARM_ASSERT(capacity >= 0, "thread budget of {}", capacity);
}

ThreadBudget::Lease ThreadBudget::acquire(int at_least, int at_most) {
  HCWARM_ASSERT(at_least >= 1 && at_least <= capacity_ && at_most >= at_least,
                "cannot take {}..{} of a thread budget of {}", at_least, at_most, capacity_);
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return capacity_ - used_ >= at_least; });
  const int n = std::min(at_most, capacity_ - used_);
  used_ += n;
  peak_ = std::max(peak_, used_);
  return Lease(this, n);
}

ThreadBudget::Lease ThreadBudget::try_acquire(int n) {
  if (n <= 0) return {};
  std::lock_guard lock(mu_);
  if (capacity_ - used_ < n) return {};
  used_ += n;
  peak_ = std::max(peak_, used_);
  return Lease(this, n);
}

int ThreadBudget::in_use() const {
  std::lock_guard lock(mu_);
  return used_;
}

int ThreadBudget::peak() const {
  std::lock_guard lock(mu_);
  return peak_;
}

void ThreadBudget::give_back(int n) {
  {
    std::lock_guard lock(mu_);
    used_ -= n;
  }
  cv_.notify_all();
}

ThreadBudget::Lease::Lease(Lease&& o) noexcept {
  std::lock_guard lock(o.mu_);
  budget_ = o.budget_;
  count_ = o.count_;
  o.count_ = 0;
}

ThreadBudget::Lease& ThreadBudget::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    release(count());
    std::scoped_lock lock(mu_, o.mu_);
    budget_ = o.budget_;
    count_ = o.count_;
    o.count_ = 0;
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
  count_ -= n;
  budget_->give_back(n);
}

}  // namespace hcwarm
