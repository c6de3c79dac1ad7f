#include "runtime/peak_memory.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace hcwarm::runtime {
namespace {

// The text of a small /proc file ("" when unreadable); one read, no allocation beyond the buffer.
size_t read_proc(const char* path, char* buf, size_t cap) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = ::read(fd, buf, cap - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  return static_cast<size_t>(n);
}

}  // namespace

size_t resident_bytes() {
  // statm: size resident shared ... in pages.
  char buf[256];
  if (read_proc("/proc/self/statm", buf, sizeof buf) == 0) return 0;
  char* p = buf;
  std::strtoull(p, &p, 10);
  const unsigned long long pages = std::strtoull(p, nullptr, 10);
  return static_cast<size_t>(pages) * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

size_t resident_high_water_bytes() {
  char buf[4096];
  if (read_proc("/proc/self/status", buf, sizeof buf) == 0) return 0;
  const char* line = std::strstr(buf, "VmHWM:");
  if (line == nullptr) return 0;
  return static_cast<size_t>(std::strtoull(line + 6, nullptr, 10)) * 1024;  // "VmHWM:   1234 kB"
}

PeakMemoryProbe::PeakMemoryProbe(Device& device) : device_(device), host_(device.kind() == DeviceKind::Cpu) {
  if (!host_) {
    device_.reset_peak();
    base_ = device_.memory_stats().current_bytes;
    return;
  }
  base_ = resident_bytes();
  high_water_at_start_ = resident_high_water_bytes();
  peak_ = base_;
  sampler_ = std::thread([this] { sample_until_stopped(); });
}

PeakMemoryProbe::~PeakMemoryProbe() { stop(); }

void PeakMemoryProbe::sample_until_stopped() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    const size_t now = resident_bytes();
    lock.lock();
    peak_ = std::max(peak_, now);
    cv_.wait_for(lock, std::chrono::milliseconds(1), [this] { return stop_; });
  }
}

void PeakMemoryProbe::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (sampler_.joinable()) sampler_.join();
}

size_t PeakMemoryProbe::finish() {
  if (finished_) return result_;
  finished_ = true;
  if (!host_) {
    const size_t peak = device_.memory_stats().peak_bytes;
    result_ = peak > base_ ? peak - base_ : 0;
    return result_;
  }
  stop();
  size_t peak = std::max(peak_, resident_bytes());
  // A high-water mark that rose during the stretch is its exact peak, even between samples.
  if (const size_t hwm = resident_high_water_bytes(); hwm > high_water_at_start_) peak = std::max(peak, hwm);
  result_ = peak > base_ ? peak - base_ : 0;
  return result_;
}

}  // namespace hcwarm::runtime
