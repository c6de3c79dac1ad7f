#pragma once
// Text kept within a bound by its two ends: the first `head` and the last `tail`
// bytes, and a marker saying how many bytes between them were dropped. For what
// a child process writes (the first errors and the final summary matter) and for
// messages that may quote long input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hcwarm {

// Accepts any amount of text in pieces and holds at most head + 2 * tail bytes.
class HeadTailBuffer {
 public:
  HeadTailBuffer(size_t head, size_t tail) : head_max_(head), tail_max_(tail) {}
  void append(std::string_view piece);
  uint64_t total() const { return total_; }   // bytes appended
  uint64_t dropped() const;                   // of them, the ones between the head and the tail
  // head + "\n[... N bytes dropped ...]\n" + tail, or everything when nothing was
  // dropped. A cut never splits a UTF-8 sequence.
  std::string str() const;

 private:
  size_t head_max_, tail_max_;
  std::string head_, tail_;  // tail_ keeps up to 2 * tail_max_, trimmed in bulk
  uint64_t total_ = 0;
};

// `text` cut in the middle to head + tail bytes (HeadTailBuffer::str()).
std::string clip_middle(std::string_view text, size_t head, size_t tail);

}  // namespace hcwarm
