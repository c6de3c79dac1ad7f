#pragma once
#include <span>

#include "core/embedded_files.hpp"

namespace hcwarm::kernels {
// The kernel headers under src/kernels, as compiled into the library.
std::span<const EmbeddedFile> embedded_files();
}  // namespace hcwarm::kernels
