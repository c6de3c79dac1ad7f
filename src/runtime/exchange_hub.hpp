#pragma once
// A process group for the kernel exchange (jit/kernel_exchange.hpp) without a
// framework: one process runs the hub on a loopback port, every rank sends its
// payload there and gets every rank's back (an all-gather through a star).
// `hcwarm bench cold-start --hosts` simulates hosts with it; engines use their
// torch.distributed group instead (the Python package).
//
// Bounded: the hub answers every waiting rank with an error naming the ranks it
// is missing when one closes its connection without sending (it stopped) or
// when they have not all sent within timeout_s of the first; a rank waits at
// most timeout_s + kHubGraceS for the answer. Loopback only: the hub binds
// 127.0.0.1 and takes a rank's payload only once.
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "core/unique_fd.hpp"

namespace hcwarm::runtime {

// What a rank waits beyond timeout_s for the hub's answer, so that the hub's
// error (naming the missing ranks) arrives before the rank's own timeout.
inline constexpr double kHubGraceS = 5.0;

class ExchangeHub {
 public:
  // Listens on 127.0.0.1 (an ephemeral port) for `world` ranks and serves one
  // all-gather in a thread of its own. Throws System when it cannot listen.
  ExchangeHub(int world, double timeout_s);
  ~ExchangeHub();  // stops serving (ranks still waiting get an error) and joins
  ExchangeHub(const ExchangeHub&) = delete;
  ExchangeHub& operator=(const ExchangeHub&) = delete;

  int port() const { return port_; }

 private:
  void serve();

  int world_;
  double timeout_s_;
  UniqueFd listen_fd_;
  UniqueFd stop_read_, stop_write_;  // the destructor's wake-up
  int port_ = 0;
  std::thread thread_;
};

// Rank `rank`'s side of the hub's all-gather: every rank's payload, in rank
// order. Throws Timeout naming the wait when no answer comes within
// timeout_s + kHubGraceS, Unavailable when the hub cannot be reached, and
// Timeout with the hub's message when the hub gave up on a rank.
std::vector<std::string> hub_gather(int port, int rank, const std::string& mine, double timeout_s);

}  // namespace hcwarm::runtime
