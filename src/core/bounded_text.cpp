#include "core/bounded_text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace hcwarm {
namespace {

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// s without a UTF-8 sequence its end cuts short.
std::string_view whole_sequences(std::string_view s) {
  size_t lead = s.size();
  for (size_t back = 0; back < 4 && lead > 0; ++back) {
    if (!continuation(s[--lead])) break;
  }
  if (lead == s.size()) return s;
  const auto c = static_cast<unsigned char>(s[lead]);
  const size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  return s.size() - lead < len ? s.substr(0, lead) : s;
}

}  // namespace

void HeadTailBuffer::append(std::string_view piece) {
  total_ += piece.size();
  const size_t to_head = std::min(piece.size(), head_max_ - head_.size());
  head_.append(piece.substr(0, to_head));
  piece.remove_prefix(to_head);
  if (piece.empty() || tail_max_ == 0) return;
  if (piece.size() >= tail_max_) {
    tail_.assign(piece.substr(piece.size() - tail_max_));
    return;
  }
  tail_.append(piece);
  // Trimming only past twice the bound keeps appends amortized O(1).
  if (tail_.size() > 2 * tail_max_) tail_.erase(0, tail_.size() - tail_max_);
}

uint64_t HeadTailBuffer::dropped() const {
  return total_ - head_.size() - std::min(tail_.size(), tail_max_);
}

std::string HeadTailBuffer::str() const {
  std::string_view tail(tail_);
  if (tail.size() > tail_max_) tail.remove_prefix(tail.size() - tail_max_);
  if (total_ == head_.size() + tail.size()) return head_ + std::string(tail);
  // Whole UTF-8 sequences only: the bytes cut off are counted as dropped.
  const std::string_view head = whole_sequences(head_);
  for (int i = 0; i < 3 && !tail.empty() && continuation(tail.front()); ++i) tail.remove_prefix(1);
  const uint64_t gone = total_ - head.size() - tail.size();
  return fmt::format("{}\n[... {} bytes dropped ...]\n{}", head, gone, tail);
}

std::string clip_middle(std::string_view text, size_t head, size_t tail) {
  if (text.size() <= head + tail) return std::string(text);
  HeadTailBuffer b(head, tail);
  b.append(text);
  return b.str();
}

}  // namespace hcwarm
