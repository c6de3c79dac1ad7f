// The loopback all-gather behind `bench cold-start --hosts` (runtime/exchange_hub.hpp):
// every rank gets every payload in rank order; a rank that stops mid-exchange or
// never sends fails the others with an error naming it, within the bound.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.hpp"
#include "runtime/exchange_hub.hpp"

namespace hcwarm::runtime {
namespace {

using Clock = std::chrono::steady_clock;

struct Outcome {
  std::vector<std::string> all;
  std::string error;
  double seconds = 0;
};

Outcome timed_gather(int port, int rank, const std::string& mine, double timeout_s) {
  Outcome o;
  const auto t0 = Clock::now();
  try {
    o.all = hub_gather(port, rank, mine, timeout_s);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Timeout) << e.message();
    o.error = e.message();
  }
  o.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return o;
}

TEST(ExchangeHub, EveryRankGetsEveryPayloadInRankOrder) {
  ExchangeHub hub(3, 30);
  std::vector<Outcome> out(3);
  std::vector<std::thread> ts;
  // Rank 2's payload is large (several socket buffers), rank 1's empty.
  const std::vector<std::string> payloads{"zero", "", std::string(5 << 20, 'x') + "end"};
  for (int r = 2; r >= 0; --r) {
    ts.emplace_back([&, r] { out[static_cast<size_t>(r)] = timed_gather(hub.port(), r, payloads[r], 30); });
  }
  for (auto& t : ts) t.join();
  for (const Outcome& o : out) {
    ASSERT_EQ(o.error, "");
    EXPECT_EQ(o.all, payloads);
  }
}

TEST(ExchangeHub, ARankThatStopsMidExchangeFailsTheOthersNamingIt) {
  const double timeout_s = 30;
  ExchangeHub hub(3, timeout_s);
  std::vector<Outcome> out(3);
  std::thread t0([&] { out[0] = timed_gather(hub.port(), 0, "zero", timeout_s); });
  std::thread t2([&] { out[2] = timed_gather(hub.port(), 2, "two", timeout_s); });
  {  // Rank 1 announces a payload of 1000 bytes, sends 10 and stops.
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(hub.port()));
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    std::string frame = "HCX1";
    const uint32_t rank = 1;
    const uint64_t len = 1000;
    frame.append(reinterpret_cast<const char*>(&rank), 4).append(reinterpret_cast<const char*>(&len), 8);
    frame += std::string(10, 'y');
    ASSERT_EQ(::send(fd, frame.data(), frame.size(), 0), static_cast<ssize_t>(frame.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::close(fd);
  }
  t0.join();
  t2.join();
  for (const Outcome& o : {out[0], out[2]}) {
    EXPECT_NE(o.error.find("rank 1 closed its connection before its kernels arrived"), std::string::npos) << o.error;
    EXPECT_LT(o.seconds, timeout_s);  // at once, not at the bound
  }
}

TEST(ExchangeHub, RanksThatNeverSendTimeOutNamingThemWithinTheBound) {
  const double timeout_s = 1;
  ExchangeHub hub(4, timeout_s);
  std::vector<Outcome> out(2);
  std::thread t0([&] { out[0] = timed_gather(hub.port(), 0, "zero", timeout_s); });
  std::thread t2([&] { out[1] = timed_gather(hub.port(), 2, "two", timeout_s); });
  t0.join();
  t2.join();
  for (const Outcome& o : out) {
    EXPECT_NE(o.error.find("ranks 1, 3 sent no kernels within 1 s"), std::string::npos) << o.error;
    EXPECT_LT(o.seconds, timeout_s + kHubGraceS);  // the hub's answer, before the rank's own timeout
  }
}

TEST(ExchangeHub, BadArgumentsAndAnAbsentHubAreNamed) {
  EXPECT_THROW(ExchangeHub(0, 1), Error);
  EXPECT_THROW(ExchangeHub(2, 0), Error);
  int port = 0;
  {
    ExchangeHub gone(1, 1);
    port = gone.port();
  }
  try {
    hub_gather(port, 0, "x", 1);
    ADD_FAILURE() << "reached a hub that is gone";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unavailable);
    EXPECT_NE(e.message().find("cannot reach the exchange hub"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace hcwarm::runtime
