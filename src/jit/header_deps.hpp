#pragma once
// Which of the embedded kernel headers a translation unit includes, recursively:
// the set whose full text goes into the kernel key and into the compiler's
// private include dir (so no header the compiler sees is left out of the key).
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/embedded_files.hpp"

namespace hcwarm::jit {

// The headers `source` reaches through #include, sorted by path, de-duplicated
// (the last file of a path wins). Quoted includes resolve relative to the
// including header's directory first, then to the root; <...> to the root.
// Includes inside #if branches count (conservative). An include that is not a
// literal name (#include MACRO) makes every header count.
// Names that match no header (system headers) are ignored: the compiler's
// identity stands for them.
std::vector<EmbeddedFile> included_headers(std::string_view source, std::span<const EmbeddedFile> headers);

// The include names written in one file, in order; `computed` is set when an
// #include is not a literal "name" or <name>.
std::vector<std::string> scan_includes(std::string_view text, bool& computed, std::vector<bool>* quoted = nullptr);

}  // namespace hcwarm::jit
