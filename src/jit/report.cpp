#include "jit/report.hpp"

#include <fmt/format.h>

namespace hcwarm::jit {

nlohmann::json to_json(const CompileStats& s) {
  return {{"compiled", s.compiled},
          {"loaded_from_disk", s.loaded_from_disk},
          {"memory_hits", s.memory_hits},
          {"compiles_after_ready", s.compiles_after_ready},
          {"compile_seconds", s.compile_seconds},
          {"failed", s.failed},
          {"events_dropped", s.events_dropped},
          {"waited_for_compile", s.waited_for_compile},
          {"compile_wait_s", s.compile_wait_s},
          {"served_by_generic", s.served_by_generic},
          {"background_compiled", s.background_compiled},
          {"background_failed", s.background_failed},
          {"background_compiles_after_ready", s.background_compiles_after_ready}};
}

nlohmann::json to_json(const CompileEvent& e) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : e.params) params[k] = v;
  return {{"key", e.key},         {"family", e.family},          {"description", e.description},
          {"params", params},     {"phase", to_string(e.phase)}, {"source", to_string(e.source)},
          {"seconds", e.seconds}};
}

nlohmann::json to_json(const BuildCounts& c) {
  return {{"keys", c.keys},
          {"compiled", c.compiled},
          {"loaded_from_disk", c.loaded_from_disk},
          {"memory_hits", c.memory_hits}};
}

nlohmann::json to_json(const BuildReport& r) {
  nlohmann::json j = to_json(static_cast<const BuildCounts&>(r));
  j.update({{"failed", r.failed}, {"seconds", r.seconds}, {"errors", r.errors}});
  return j;
}

std::string format_sources(const BuildCounts& c) {
  return fmt::format("{} compiled, {} from disk, {} from memory", c.compiled, c.loaded_from_disk, c.memory_hits);
}

std::string format_build_report(const BuildReport& r) {
  std::string s =
      fmt::format("{} keys in {:.2f} s: {}, {} failed", r.keys, r.seconds, format_sources(r), r.failed);
  for (const auto& e : r.errors) s += "\n  error: " + e;
  return s;
}

}  // namespace hcwarm::jit
