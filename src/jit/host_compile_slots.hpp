#pragma once
// Compile slots shared by every process of a host that uses one kernel cache:
// `count` lock files in the cache's version directory, each held (flock) by the
// thread that compiles in it. Ranks starting together then run at most `count`
// compile threads between them, and a rank whose peers are done may use them
// all for its last kernels (its NVRTC parts), which a fixed per-process share
// (hardware threads / local world size) would leave idle.
// A holder writes its pid into the slot's file (as key locks do). A wait for a
// slot is bounded: a process stopped while holding slots (Ctrl-Z) must not stall
// every other warm on the cache, so after timeout_s (HCWARM_LOCK_TIMEOUT_S) the
// wait fails with ErrorKind::Timeout naming the holders, rather than compiling
// without a slot, which would break the bound the slots exist for. (Slot files
// that cannot be opened at all bound nothing: see unusable_.)
#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "core/thread_budget.hpp"
#include "jit/fs_util.hpp"

namespace hcwarm::jit {

class HostCompileSlots final : public SlotGate {
 public:
  // dir must exist and be the cache's (trusted); count >= 1; timeout_s > 0 bounds
  // a wait for a slot (0: no bound).
  HostCompileSlots(std::filesystem::path dir, int count, double timeout_s = 0);

  int try_take(int n) override;
  void give_back(int n) override;
  // Logs once per wait (info), after fsu::kLogWaitAfterSeconds, what it waits for;
  // past timeout_s throws ErrorKind::Timeout naming the directory and the holders.
  void waiting(double seconds) override;

  int count() const { return count_; }
  int held() const;
  static std::string slot_file_name(int i);  // "compile-slot-<i>.lock"

 private:
  // The distinct holders of the slots, as their files say ("pid P on HOST since T").
  std::string holders() const;

  std::filesystem::path dir_;
  int count_;
  double timeout_s_;
  std::atomic<bool> wait_logged_{false};
  mutable std::mutex mu_;
  int next_;  // where the next search starts: processes spread over the slots
  std::vector<fsu::FileLock> held_;
  std::vector<bool> mine_;  // per slot: held by this object (flock would refuse it anyway)
  std::vector<int> held_index_;
  bool unusable_ = false;  // a slot file could not be opened: every request is granted
};

}  // namespace hcwarm::jit
