#pragma once
// Bounds for JSON that comes from users' files (config.json, JSONL traces,
// safetensors headers): a nesting limit checked before parsing, since a deeply
// nested value overflows the stack in the recursive dump/destroy, and short
// excerpts for error messages.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace hcwarm {

inline constexpr int kMaxJsonDepth = 64;
inline constexpr size_t kMaxJsonExcerpt = 200;  // characters of input an error message quotes

// The byte offset where text first nests deeper than max_depth (brackets outside
// strings), or nullopt. A linear scan that allocates nothing.
std::optional<size_t> json_too_deep_at(std::string_view text, int max_depth = kMaxJsonDepth);

// nlohmann::json::parse after the depth check; throws ErrorKind::InvalidArgument
// "<source>: ..." for too deep or invalid JSON, quoting at most kMaxJsonExcerpt characters.
nlohmann::json parse_json_bounded(std::string_view text, const std::string& source);

// The parser's message without its "[json.exception.parse_error.101] " prefix, cut
// to kMaxJsonExcerpt characters: what a user reads after the file name.
std::string json_error_text(const nlohmann::json::exception& e);

// At most kMaxJsonExcerpt characters of s, "..." marking a cut.
std::string excerpt(std::string_view s);
// v.dump(), cut to at most kMaxJsonExcerpt characters.
std::string json_excerpt(const nlohmann::json& v);
// s in double quotes, cut to at most kMaxJsonExcerpt bytes (never inside a UTF-8
// sequence), with quotes, backslashes, control bytes and bytes that are not valid
// UTF-8 escaped (\", \\, \n, \xc0): what fmt's {:?} prints, for input strings. Not
// {:?} itself: Debian's libspdlog carries a copy of fmt's escaping writer that
// aborts on invalid UTF-8, and it is the one in use wherever libhcwarm is dlopen'ed.
std::string quoted_excerpt(std::string_view s);

}  // namespace hcwarm
