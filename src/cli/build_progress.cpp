#include "cli/build_progress.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

#include "core/logging.hpp"

namespace hcwarm::cli {

namespace {
constexpr auto kNoteEvery = std::chrono::seconds(10);
}  // namespace

BuildProgressDisplay::BuildProgressDisplay(bool enabled)
    : enabled_(enabled), bar_(enabled && ::isatty(STDERR_FILENO) == 1) {}

BuildProgressDisplay::~BuildProgressDisplay() {
  stop_ticker();
  std::lock_guard lock(mu_);
  if (drawing_) draw_locked(true);
}

jit::BuildProgressFn BuildProgressDisplay::callback() {
  if (!enabled_) return {};
  return [this](const jit::BuildProgressEvent& e) { on_event(e); };
}

void BuildProgressDisplay::on_event(const jit::BuildProgressEvent& e) {
  if (e.done == 0) {  // a build starts: fresh counts, and a ticker that keeps the clock moving
    stop_ticker();
    std::lock_guard lock(mu_);
    start_ = last_note_ = std::chrono::steady_clock::now();
    total_ = e.total;
    done_ = compiled_ = disk_ = memory_ = failed_ = 0;
    last_.clear();
    if (bar_) {
      stop_ = false;
      drawing_ = true;
      draw_locked(false);
      ticker_ = std::thread([this] {
        std::unique_lock l(mu_);
        while (!stop_) {
          cv_.wait_for(l, std::chrono::milliseconds(250));
          if (!stop_) draw_locked(false);
        }
      });
    }
    return;
  }
  bool last = false;
  {
    std::lock_guard lock(mu_);
    done_ = e.done;
    if (!e.source) ++failed_;
    else if (*e.source == jit::ArtifactSource::Compiled) ++compiled_;
    else if (*e.source == jit::ArtifactSource::Disk) ++disk_;
    else ++memory_;
    last_ = e.description;
    if (!bar_) {
      // A log, not a terminal: each key at debug; at info a line per kNoteEvery of
      // a long build (a warm start from the cache logs none; its summary follows).
      log::debug("{}", jit::format_progress_line(e));
      const auto now = std::chrono::steady_clock::now();
      if (e.done < e.total && now - last_note_ >= kNoteEvery) {
        last_note_ = now;
        log::info("jit build: {}/{} keys in {:.0f} s (compiled {}, disk {}, memory {}{}), now {}", done_, total_,
                  std::chrono::duration<double>(now - start_).count(), compiled_, disk_, memory_,
                  failed_ ? fmt::format(", FAILED {}", failed_) : "", last_);
      }
      return;
    }
    last = e.done >= e.total;
    if (!last) draw_locked(false);
  }
  if (last) {
    stop_ticker();
    std::lock_guard lock(mu_);
    draw_locked(true);
  }
}

void BuildProgressDisplay::stop_ticker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void BuildProgressDisplay::draw_locked(bool final) {
  winsize ws{};
  int cols = 100;
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) cols = ws.ws_col;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  constexpr int kWidth = 24;
  const int filled = total_ > 0 ? done_ * kWidth / total_ : kWidth;
  std::string line = fmt::format("jit [{}{}] {}/{}  compiled {} disk {} memory {}{}  {:.1f}s  {}",
                                 std::string(filled, '#'), std::string(kWidth - filled, '-'), done_, total_,
                                 compiled_, disk_, memory_, failed_ ? fmt::format(" FAILED {}", failed_) : "", secs,
                                 final ? std::string() : last_);
  if (static_cast<int>(line.size()) > cols - 1) line.resize(cols - 1);
  std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
  std::fflush(stderr);
  drawing_ = !final;
}

}  // namespace hcwarm::cli
