#include "core/json_util.hpp"

#include <cstdint>
#include <cstdio>

#include "core/error.hpp"

namespace hcwarm {

std::optional<size_t> json_too_deep_at(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

nlohmann::json parse_json_bounded(std::string_view text, const std::string& source) {
  if (const auto at = json_too_deep_at(text)) {
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: JSON nested deeper than {} levels (at byte {})", source,
                 kMaxJsonDepth, *at);
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // parse_error or out_of_range (a number too large); the message quotes the last token, which may be long.
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: not valid JSON: {}", source, json_error_text(e));
  }
}

std::string json_error_text(const nlohmann::json::exception& e) {
  std::string_view s = e.what();
  if (s.starts_with("[json.exception.")) {
    const size_t close = s.find("] ");
    if (close != std::string_view::npos) s.remove_prefix(close + 2);
  }
  return excerpt(s);
}

std::string excerpt(std::string_view s) {
  if (s.size() <= kMaxJsonExcerpt) return std::string(s);
  return std::string(s.substr(0, kMaxJsonExcerpt - 3)) + "...";
}

namespace {

// The length of the valid UTF-8 sequence starting at s[i] (1 for ASCII), or 0 when there is none.
size_t utf8_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  uint32_t cp = n == 1 ? c : c & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
  constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

}  // namespace

std::string quoted_excerpt(std::string_view s) {
  constexpr size_t kBody = kMaxJsonExcerpt - 3;  // room for "..."
  std::string body;
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = utf8_length(s, i);
    char esc[8] = {};
    std::string_view piece;
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = static_cast<char>(c);
      piece = {esc, 2};
    } else if (c == '\n' || c == '\r' || c == '\t') {
      piece = c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
    } else if (n == 0 || c < 0x20 || c == 0x7f) {
      std::snprintf(esc, sizeof esc, "\\x%02x", c);
      piece = {esc, 4};
    } else {
      piece = s.substr(i, n);
    }
    if (body.size() + piece.size() > kBody) break;
    body += piece;
    i += n == 0 ? 1 : n;
  }
  return "\"" + body + (i < s.size() ? "...\"" : "\"");
}

std::string json_excerpt(const nlohmann::json& v) {
  // replace: a string of invalid UTF-8 must not turn an error message into another exception.
  return excerpt(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace hcwarm
