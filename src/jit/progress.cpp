#include "jit/progress.hpp"

#include <fmt/format.h>

#include "core/enum_names.hpp"

namespace hcwarm::jit {
namespace {
constexpr EnumName<ArtifactSource> kSourceNames[] = {
    {ArtifactSource::Compiled, "compiled"}, {ArtifactSource::Disk, "disk"}, {ArtifactSource::Memory, "memory"}};
}  // namespace

const char* to_string(ArtifactSource s) { return enum_name(kSourceNames, s); }

const char* outcome_name(const BuildProgressEvent& e) { return e.source ? to_string(*e.source) : "failed"; }

std::string format_progress_line(const BuildProgressEvent& e) {
  if (e.done == 0) return {};
  return fmt::format("jit build [{}/{}] {} {} ({:.2f} s)", e.done, e.total, outcome_name(e), e.description,
                     e.seconds);
}

}  // namespace hcwarm::jit
