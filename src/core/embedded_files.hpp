#pragma once
// A file compiled into the library (see cmake/EmbedFiles.cmake).
#include <span>
#include <string_view>

namespace hcwarm {
struct EmbeddedFile {
  std::string_view path;     // relative to the embedded tree's root, e.g. "cuda/mhc_pre.cuh"
  std::string_view content;  // exact bytes
};
}  // namespace hcwarm
