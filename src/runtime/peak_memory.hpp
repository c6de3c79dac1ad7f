#pragma once
// The peak memory of a stretch of start-up work (a prewarm) above the usage at
// its start. On the CPU backend the process's resident set: the device's buffers
// are host memory there, and the build's and the loads' own memory counts too.
// Elsewhere (CUDA) the device's own allocation peak (Device::reset_peak / memory_stats).
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>

#include "core/device.hpp"

namespace hcwarm::runtime {

// This process's resident set and its high-water mark (VmHWM), in bytes; 0 when unreadable.
size_t resident_bytes();
size_t resident_high_water_bytes();

class PeakMemoryProbe {
 public:
  // Starts measuring: on the CPU a sampling thread (1 ms), elsewhere a reset of the device's peak.
  explicit PeakMemoryProbe(Device& device);
  ~PeakMemoryProbe();
  PeakMemoryProbe(const PeakMemoryProbe&) = delete;
  PeakMemoryProbe& operator=(const PeakMemoryProbe&) = delete;

  // The peak above the start, in bytes; stops measuring (later calls return the same).
  size_t finish();

 private:
  void sample_until_stopped();
  void stop();

  Device& device_;
  bool host_ = false;
  size_t base_ = 0;
  size_t high_water_at_start_ = 0;
  size_t peak_ = 0;
  bool finished_ = false;
  size_t result_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread sampler_;
};

}  // namespace hcwarm::runtime
