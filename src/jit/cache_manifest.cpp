#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "jit/disk_cache.hpp"
#include "jit/sha256.hpp"

namespace hcwarm::jit {

std::string Manifest::to_json() const {
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["key"] = key;
  j["hcwarm_version"] = hcwarm_version;
  j["namespace"] = ns;
  j["compiler"] = compiler;
  j["target"] = target;
  j["family"] = family;
  j["description"] = description;
  j["params"] = nlohmann::ordered_json::array();
  for (const auto& [k, v] : params) j["params"].push_back({k, v});
  j["files"] = nlohmann::ordered_json::array();
  for (const auto& f : files) j["files"].push_back({{"name", f.name}, {"size", f.size}, {"sha256", f.sha256}});
  j["created"] = created;
  return j.dump(2) + "\n";
}

Manifest Manifest::parse(std::string_view text) {
  // Depth-checked: a planted, deeply nested manifest must not overflow the stack.
  const nlohmann::json j = parse_json_bounded(text, "manifest.json");
  try {
    HCWARM_CHECK_ARG(j.is_object(), "not a JSON object");
    // Integers are checked as such: nlohmann's get<int> of a float out of range is undefined behaviour.
    const auto& format = j.at("format");
    HCWARM_CHECK_ARG(format.is_number_integer() && format.get<int64_t>() == kFormat, "format {} is not {}",
                     json_excerpt(format), kFormat);
    Manifest m;
    m.key = j.at("key").get<std::string>();
    HCWARM_CHECK_ARG(is_sha256_hex(m.key), "key {} is not a SHA-256", quoted_excerpt(m.key));
    m.hcwarm_version = j.at("hcwarm_version").get<std::string>();
    m.ns = j.at("namespace").get<std::string>();
    m.compiler = j.at("compiler").get<std::string>();
    m.target = j.at("target").get<std::string>();
    m.family = j.at("family").get<std::string>();
    m.description = j.at("description").get<std::string>();
    for (const auto& p : j.at("params")) m.params.emplace_back(p.at(0).get<std::string>(), p.at(1).get<std::string>());
    for (const auto& f : j.at("files")) {
      const auto& size = f.at("size");
      HCWARM_CHECK_ARG(size.is_number_unsigned(), "file size {} is not a non-negative integer", json_excerpt(size));
      ManifestFile mf{f.at("name").get<std::string>(), size.get<uint64_t>(), f.at("sha256").get<std::string>()};
      HCWARM_CHECK_ARG(is_sha256_hex(mf.sha256), "file {} has a bad sha256", excerpt(mf.name));
      m.files.push_back(std::move(mf));
    }
    HCWARM_CHECK_ARG(!m.files.empty(), "no files");
    if (j.contains("created")) m.created = j.at("created").get<std::string>();
    return m;
  } catch (const nlohmann::json::exception& e) {
    HCWARM_THROW(ErrorKind::InvalidArgument, "missing or mistyped field: {}", json_error_text(e));
  }
}

}  // namespace hcwarm::jit
