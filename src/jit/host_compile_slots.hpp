#pragma once
// Compile slots shared by every process of a host that uses one kernel cache:
// `count` lock files in the cache's version directory, each held (flock) by the
// thread that compiles in it. Ranks starting together then run at most `count`
// compile threads between them, and a rank whose peers are done may use them
// all for its last kernels (its NVRTC parts), which a fixed per-process share
// (hardware threads / local world size) would leave idle.
#include <filesystem>
#include <mutex>
#include <vector>

#include "core/thread_budget.hpp"
#include "jit/fs_util.hpp"

namespace hcwarm::jit {

class HostCompileSlots final : public SlotGate {
 public:
  // dir must exist and be the cache's (trusted); count >= 1.
  HostCompileSlots(std::filesystem::path dir, int count);

  int try_take(int n) override;
  void give_back(int n) override;

  int count() const { return count_; }
  int held() const;
  static std::string slot_file_name(int i);  // "compile-slot-<i>.lock"

 private:
  std::filesystem::path dir_;
  int count_;
  mutable std::mutex mu_;
  int next_;  // where the next search starts: processes spread over the slots
  std::vector<fsu::FileLock> held_;
  std::vector<bool> mine_;  // per slot: held by this object (flock would refuse it anyway)
  std::vector<int> held_index_;
  bool unusable_ = false;  // a slot file could not be opened: every request is granted
};

}  // namespace hcwarm::jit
