#include "runtime/exchange_hub.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "core/error.hpp"

namespace hcwarm::runtime {
namespace {

// A rank's frame: magic, rank, payload length (this host's byte order: loopback only), payload.
constexpr char kMagic[4] = {'H', 'C', 'X', '1'};
constexpr size_t kFrameHeader = 4 + 4 + 8;
// The hub's answer: status (0: every payload follows; 1: an error message follows), length, body.
constexpr size_t kReplyHeader = 1 + 8;

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int ms_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

template <typename T>
void append(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
T read_at(const std::string& in, size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  return v;
}

// Sends all of `data` before `deadline`; false when the peer is gone or the time is up.
bool send_all(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      const int left = ms_until(deadline);
      if (left == 0 || ::poll(&p, 1, left) <= 0) return false;
      continue;
    }
    return false;
  }
  return true;
}

std::string reply(uint8_t status, const std::string& body) {
  std::string out;
  append(out, status);
  append(out, static_cast<uint64_t>(body.size()));
  return out + body;
}

struct Conn {
  UniqueFd fd;
  std::string in;
  int rank = -1;  // once its frame header arrived
  bool done = false;
};

}  // namespace

ExchangeHub::ExchangeHub(int world, double timeout_s) : world_(world), timeout_s_(timeout_s) {
  HCWARM_CHECK_ARG(world >= 1, "exchange hub: world size {} is not positive", world);
  HCWARM_CHECK_ARG(timeout_s > 0, "exchange hub: timeout {} s is not positive", timeout_s);
  listen_fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  HCWARM_CHECK_SYS(listen_fd_.get(), "exchange hub: socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  HCWARM_CHECK_SYS(::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), "exchange hub: bind");
  HCWARM_CHECK_SYS(::listen(listen_fd_.get(), world + 16), "exchange hub: listen");
  socklen_t len = sizeof addr;
  HCWARM_CHECK_SYS(::getsockname(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len), "exchange hub: getsockname");
  port_ = ntohs(addr.sin_port);
  int p[2];
  HCWARM_CHECK_SYS(::pipe2(p, O_CLOEXEC), "exchange hub: pipe");
  stop_read_ = UniqueFd(p[0]);
  stop_write_ = UniqueFd(p[1]);
  thread_ = std::thread([this] { serve(); });
}

ExchangeHub::~ExchangeHub() {
  const char c = 0;
  [[maybe_unused]] const ssize_t n = ::write(stop_write_.get(), &c, 1);
  if (thread_.joinable()) thread_.join();
}

void ExchangeHub::serve() {
  std::vector<Conn> conns;
  std::vector<std::optional<std::string>> payloads(static_cast<size_t>(world_));
  int received = 0;
  int first_rank = -1;
  std::optional<Clock::time_point> deadline;  // timeout_s after the first payload

  // Answers every connection, then the gather is over.
  auto finish = [&](uint8_t status, const std::string& body) {
    const std::string r = reply(status, body);
    const auto send_deadline = after(timeout_s_);
    for (Conn& c : conns) send_all(c.fd.get(), r, send_deadline);
  };
  auto missing = [&] {
    std::vector<int> m;
    for (int r = 0; r < world_; ++r) {
      if (!payloads[static_cast<size_t>(r)]) m.push_back(r);
    }
    return fmt::format("{}", fmt::join(m, ", "));
  };

  for (;;) {
    std::vector<pollfd> fds{{stop_read_.get(), POLLIN, 0}, {listen_fd_.get(), POLLIN, 0}};
    for (const Conn& c : conns) fds.push_back({c.fd.get(), static_cast<short>(c.done ? 0 : POLLIN), 0});
    const int wait = deadline ? ms_until(*deadline) : -1;
    const int ready = ::poll(fds.data(), fds.size(), wait);
    if (ready < 0 && errno == EINTR) continue;
    if (fds[0].revents != 0) {
      finish(1, "the exchange hub stopped before every rank sent its kernels (missing ranks: " + missing() + ")");
      return;
    }
    if (ready == 0 && deadline && Clock::now() >= *deadline) {
      finish(1, fmt::format("ranks {} sent no kernels within {} s (HCWARM_GROUP_TIMEOUT_S) of rank {}'s: stopped, "
                            "or still compiling",
                            missing(), timeout_s_, first_rank));
      return;
    }
    if (fds[1].revents & POLLIN) {
      const int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) conns.emplace_back().fd = UniqueFd(fd);
    }
    for (size_t i = 0; i < conns.size(); ++i) {
      Conn& c = conns[i];
      const short ev = fds.size() > i + 2 ? fds[i + 2].revents : 0;
      if (c.done || ev == 0) continue;
      char buf[1 << 16];
      const ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) {
        finish(1, c.rank >= 0 ? fmt::format("rank {} closed its connection before its kernels arrived: it stopped "
                                            "(missing ranks: {})",
                                            c.rank, missing())
                              : fmt::format("a rank closed its connection before saying which it was (missing ranks: {})",
                                            missing()));
        return;
      }
      c.in.append(buf, static_cast<size_t>(n));
      if (c.in.size() < kFrameHeader) continue;
      if (c.rank < 0) {
        const int rank = static_cast<int>(read_at<uint32_t>(c.in, 4));
        if (std::memcmp(c.in.data(), kMagic, 4) != 0 || rank < 0 || rank >= world_ ||
            payloads[static_cast<size_t>(rank)]) {
          finish(1, fmt::format("a connection sent no valid frame for a rank in [0, {}) not yet seen", world_));
          return;
        }
        c.rank = rank;
      }
      const uint64_t len = read_at<uint64_t>(c.in, 8);
      if (c.in.size() < kFrameHeader + len) continue;
      payloads[static_cast<size_t>(c.rank)] = c.in.substr(kFrameHeader, len);
      c.in.clear();
      c.in.shrink_to_fit();
      c.done = true;
      if (++received == 1) {
        first_rank = c.rank;
        deadline = after(timeout_s_);
      }
      if (received == world_) {
        std::string body;
        append(body, static_cast<uint32_t>(world_));
        for (const auto& p : payloads) {
          append(body, static_cast<uint64_t>(p->size()));
          body += *p;
        }
        finish(0, body);
        return;
      }
    }
  }
}

std::vector<std::string> hub_gather(int port, int rank, const std::string& mine, double timeout_s) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  HCWARM_CHECK_SYS(fd.get(), "kernel exchange: socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    HCWARM_THROW(ErrorKind::Unavailable, "kernel exchange: rank {} cannot reach the exchange hub on port {}: {}", rank,
                 port, errno_string(errno));
  }
  const auto deadline = after(timeout_s + kHubGraceS);
  std::string frame(kMagic, 4);
  append(frame, static_cast<uint32_t>(rank));
  append(frame, static_cast<uint64_t>(mine.size()));
  frame += mine;
  const std::string timed_out =
      fmt::format("kernel exchange: rank {} got no answer from the exchange hub within {} s (HCWARM_GROUP_TIMEOUT_S)",
                  rank, timeout_s + kHubGraceS);
  if (!send_all(fd.get(), frame, deadline)) HCWARM_THROW(ErrorKind::Timeout, "{} while sending", timed_out);
  frame = std::string();

  std::string in;
  size_t want = kReplyHeader;
  for (;;) {
    if (in.size() >= kReplyHeader) want = kReplyHeader + read_at<uint64_t>(in, 1);
    if (in.size() >= want) break;
    pollfd p{fd.get(), POLLIN, 0};
    const int left = ms_until(deadline);
    if (left == 0 || ::poll(&p, 1, left) == 0) HCWARM_THROW(ErrorKind::Timeout, "{}", timed_out);
    char buf[1 << 16];
    const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      HCWARM_THROW(ErrorKind::Timeout, "kernel exchange: rank {}: the exchange hub closed the connection unanswered",
                   rank);
    }
    in.append(buf, static_cast<size_t>(n));
  }
  const std::string body = in.substr(kReplyHeader, want - kReplyHeader);
  if (read_at<uint8_t>(in, 0) != 0) HCWARM_THROW(ErrorKind::Timeout, "kernel exchange: rank {}: {}", rank, body);
  std::vector<std::string> all;
  size_t at = 4;
  const uint32_t count = read_at<uint32_t>(body, 0);
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t n = read_at<uint64_t>(body, at);
    all.push_back(body.substr(at + 8, n));
    at += 8 + n;
  }
  return all;
}

}  // namespace hcwarm::runtime
