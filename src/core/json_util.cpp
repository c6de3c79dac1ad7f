#include "core/json_util.hpp"

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

std::string json_excerpt(const nlohmann::json& v) {
  // replace: a string of invalid UTF-8 must not turn an error message into another exception.
  return excerpt(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace hcwarm
