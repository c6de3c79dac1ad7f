#pragma once
// Progress of JitRuntime::build(), as events for the caller to show (the CLI
// draws a bar or prints lines); the library itself only logs them at debug level.
#include <functional>
#include <optional>
#include <string>

#include "jit/kernel_spec.hpp"

namespace hcwarm::jit {

enum class ArtifactSource { Compiled, Disk, Memory };
const char* to_string(ArtifactSource s);

struct BuildProgressEvent {
  int done = 0;   // keys finished, this one included; 0: the build is starting
  int total = 0;  // keys this build handles
  std::string description;               // the kernel ("" when starting)
  std::string key;                       // its key ("" when starting)
  std::optional<ArtifactSource> source;  // where it came from; nullopt: it failed (or starting)
  double seconds = 0;                    // this key's wall time
  double elapsed_s = 0;                  // since the build started
};

// Called once when a build starts (done == 0) and once per key it finishes, from
// the build's threads but one call at a time, with done counting up.
using BuildProgressFn = std::function<void(const BuildProgressEvent&)>;

// "compiled", "disk", "memory" or "failed".
const char* outcome_name(const BuildProgressEvent& e);
// "jit build [3/40] compiled mhc_pre(num_splits=4, ...) (0.31 s)"; "" for the start event.
std::string format_progress_line(const BuildProgressEvent& e);

}  // namespace hcwarm::jit
