#pragma once
// Seconds elapsed on the steady clock, for the reports that time their own steps.
#include <chrono>

namespace hcwarm {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace hcwarm
