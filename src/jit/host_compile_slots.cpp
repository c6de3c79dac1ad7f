#include "jit/host_compile_slots.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/logging.hpp"

namespace hcwarm::jit {

HostCompileSlots::HostCompileSlots(std::filesystem::path dir, int count, double timeout_s)
    : dir_(std::move(dir)), count_(count), timeout_s_(timeout_s),
      next_(static_cast<int>(::getpid() % std::max(1, count))), mine_(static_cast<size_t>(std::max(0, count)), false) {
  HCWARM_CHECK_ARG(count >= 1, "host compile slots: count must be >= 1, got {}", count);
}

std::string HostCompileSlots::holders() const {
  std::vector<std::string> seen;
  for (int i = 0; i < count_; ++i) {
    std::string h = fsu::lock_holder(dir_ / slot_file_name(i));
    if (std::find(seen.begin(), seen.end(), h) == seen.end()) seen.push_back(std::move(h));
  }
  std::string out;
  for (const auto& h : seen) out += (out.empty() ? "" : "; ") + h;
  return out;
}

void HostCompileSlots::waiting(double seconds) {
  if (timeout_s_ > 0 && seconds >= timeout_s_) {
    HCWARM_THROW(ErrorKind::Timeout,
                 "gave up after {:.0f} s waiting for a host compile slot in {}: all {} are held, by {}; "
                 "HCWARM_LOCK_TIMEOUT_S sets the limit",
                 seconds, dir_.string(), count_, holders());
  }
  if (seconds == 0) wait_logged_ = false;  // a new wait: log it again once it lasts
  if (seconds >= fsu::kLogWaitAfterSeconds && !wait_logged_.exchange(true)) {
    log::info("jit: waiting for a host compile slot in {}: all {} are held, by {}", dir_.string(), count_, holders());
  }
}

std::string HostCompileSlots::slot_file_name(int i) { return fmt::format("compile-slot-{}.lock", i); }

int HostCompileSlots::try_take(int n) {
  std::lock_guard lock(mu_);
  if (unusable_) return n;
  int got = 0;
  for (int tried = 0; tried < count_ && got < n; ++tried) {
    const int i = (next_ + tried) % count_;
    if (mine_[static_cast<size_t>(i)]) continue;
    fsu::FileLock l;
    try {
      l = fsu::FileLock::try_acquire(dir_ / slot_file_name(i));
    } catch (const Error& e) {
      // A slot file this process cannot open (another user's, in a shared cache):
      // the slots then bound nothing rather than stop every compile.
      log::warn("jit: host compile slots in {} are unusable ({}); compile threads are bounded per process only",
                dir_.string(), e.message());
      unusable_ = true;
      return n;
    }
    if (!l.owns()) continue;
    mine_[static_cast<size_t>(i)] = true;
    held_.push_back(std::move(l));
    held_index_.push_back(i);
    ++got;
  }
  next_ = (next_ + 1) % count_;
  return got;
}

void HostCompileSlots::give_back(int n) {
  std::lock_guard lock(mu_);
  for (; n > 0 && !held_.empty(); --n) {
    mine_[static_cast<size_t>(held_index_.back())] = false;
    held_index_.pop_back();
    held_.pop_back();  // its destructor unlocks
  }
}

int HostCompileSlots::held() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(held_.size());
}

}  // namespace hcwarm::jit
