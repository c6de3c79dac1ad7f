#pragma once
// JSON and text forms of the JIT runtime's counters, events and build reports,
// for `hcwarm` commands and warmup reports.
#include <nlohmann/json.hpp>
#include <string>

#include "jit/jit_runtime.hpp"

namespace hcwarm::jit {

nlohmann::json to_json(const CompileStats& s);
nlohmann::json to_json(const CompileEvent& e);
nlohmann::json to_json(const BuildCounts& c);  // keys, compiled, loaded_from_disk, memory_hits
nlohmann::json to_json(const BuildReport& r);  // the counts, failed, seconds, errors
// "3 compiled, 37 from disk, 0 from memory"
std::string format_sources(const BuildCounts& c);
// "40 keys in 12.3 s: 3 compiled, 37 from disk, 0 from memory, 0 failed" (+ one line per error).
std::string format_build_report(const BuildReport& r);

}  // namespace hcwarm::jit
