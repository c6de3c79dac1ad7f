#include "jit/progress.hpp"
#include "core/logging.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

namespace hcwarm::jit {

BuildProgress::BuildProgress(int total, bool enabled)
    : total_(total), bar_(enabled && total > 0 && ::isatty(STDERR_FILENO) == 1), lines_(enabled && total > 0 && !bar_) {
  if (bar_) {
    ticker_ = std::thread([this] {
      std::unique_lock lock(mu_);
      while (!stop_) {
        draw_locked(false);
        cv_.wait_for(lock, std::chrono::milliseconds(250));
      }
    });
  }
}

BuildProgress::~BuildProgress() { finish(); }

void BuildProgress::done(const std::string& description, const std::string& what, double seconds) {
  std::lock_guard lock(mu_);
  ++finished_;
  if (what == "compiled") ++compiled_;
  else if (what == "disk") ++disk_;
  else if (what == "memory") ++memory_;
  else ++failed_;
  last_ = description;
  if (lines_) {
    log::info("jit build [{}/{}] {} {} ({:.2f} s)", finished_, total_, what, description, seconds);
  } else if (bar_) {
    draw_locked(false);
  }
}

void BuildProgress::draw_locked(bool final) {
  if (!bar_) return;
  winsize ws{};
  int cols = 100;
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) cols = ws.ws_col;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  constexpr int kWidth = 24;
  const int filled = total_ > 0 ? finished_ * kWidth / total_ : kWidth;
  std::string line = fmt::format("jit [{}{}] {}/{}  compiled {} disk {} memory {}{}  {:.1f}s  {}",
                                 std::string(filled, '#'), std::string(kWidth - filled, '-'), finished_, total_,
                                 compiled_, disk_, memory_, failed_ ? fmt::format(" FAILED {}", failed_) : "", secs,
                                 final ? std::string() : last_);
  if (static_cast<int>(line.size()) > cols - 1) line.resize(cols - 1);
  std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
  std::fflush(stderr);
}

void BuildProgress::finish() {
  {
    std::lock_guard lock(mu_);
    if (finished_drawn_) return;
    finished_drawn_ = true;
    stop_ = true;
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  std::lock_guard lock(mu_);
  draw_locked(true);
}

}  // namespace hcwarm::jit
