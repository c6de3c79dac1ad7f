#include "jit/header_deps.hpp"

#include <filesystem>
#include <map>
#include <set>

namespace hcwarm::jit {

std::vector<std::string> scan_includes(std::string_view text, bool& computed, std::vector<bool>* quoted) {
  std::vector<std::string> out;
  size_t pos = 0;
  auto skip_ws = [&](size_t i) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    return i;
  };
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    size_t i = skip_ws(pos);
    if (i < eol && text[i] == '#') {
      i = skip_ws(i + 1);
      constexpr std::string_view kInclude = "include";
      if (text.substr(i, kInclude.size()) == kInclude) {
        i = skip_ws(i + kInclude.size());
        if (i < eol && (text[i] == '"' || text[i] == '<')) {
          const char close = text[i] == '"' ? '"' : '>';
          const size_t end = text.find(close, i + 1);
          if (end != std::string_view::npos && end < eol) {
            out.emplace_back(text.substr(i + 1, end - i - 1));
            if (quoted) quoted->push_back(close == '"');
          } else {
            computed = true;
          }
        } else {
          computed = true;  // #include MACRO (or #include_next): cannot be resolved here
        }
      }
    }
    pos = eol + 1;
  }
  return out;
}

std::vector<EmbeddedFile> included_headers(std::string_view source, std::span<const EmbeddedFile> headers) {
  std::map<std::string, EmbeddedFile> by_path;
  for (const auto& h : headers) {
    by_path[std::filesystem::path(std::string(h.path)).lexically_normal().generic_string()] = h;
  }
  bool computed = false;
  std::set<std::string> seen;
  std::vector<std::pair<std::string, std::string_view>> work{{"", source}};  // (path of file, text)
  while (!work.empty() && !computed) {
    auto [from, text] = work.back();
    work.pop_back();
    std::vector<bool> quoted;
    const auto names = scan_includes(text, computed, &quoted);
    const std::filesystem::path dir = std::filesystem::path(from).parent_path();
    for (size_t i = 0; i < names.size(); ++i) {
      std::vector<std::string> cands;
      if (quoted[i] && !from.empty()) cands.push_back((dir / names[i]).lexically_normal().generic_string());
      cands.push_back(std::filesystem::path(names[i]).lexically_normal().generic_string());
      for (const auto& c : cands) {
        auto it = by_path.find(c);
        if (it == by_path.end()) continue;
        if (seen.insert(c).second) work.emplace_back(c, it->second.content);
        break;
      }
    }
  }
  std::vector<EmbeddedFile> out;
  if (computed) {
    for (auto& [p, h] : by_path) out.push_back(h);
    return out;
  }
  for (const auto& p : seen) out.push_back(by_path.at(p));
  return out;
}

}  // namespace hcwarm::jit
